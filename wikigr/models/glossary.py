"""A glossary of the words of computing documentation between Russian and English, written for
wikigr: each line gives Russian words (a word's usual forms: the Snowball stemmer does not bring
every form to one stem) and the English words they are said as.

A question asked in one language on documents in the other is read in the documents' words
(wikigr/retrieval/across.py). The multilingual model finds most of those words by meaning alone,
but not the everyday words of computing that Russian says in its own words: on its own it reads
"ветка" as *gate* and "каталог" as *map*. Its words found here are read as the glossary says
(*branch*, *directory*); the others are still looked up by meaning.

Only single words; a line's English words are all said for each of its Russian words, and each
English word is read back as the first Russian word of every line that says it.
"""

from __future__ import annotations

RU_EN = """
файл файла файлы файлов: file files
каталог каталога каталоги директория директории папка папки: directory directories folder
путь пути: path
ветка ветки ветку ветвь: branch branches
коммит коммита коммиты: commit
зафиксировать фиксировать фиксация: commit
репозиторий репозитория: repository repo
удалённый удалённая удалённую удаленный удалённого удалённые: remote
локальный локальная локальную локальные: local
удалить удаляет удаление удалять: delete remove
создать создаёт создание создавать: create new
новый новая новое новую: new
изменить изменяет изменение изменения: change modify changes
переименовать переименование: rename move
копировать скопировать копия копирование: copy
переместить перемещение: move
показать показывает отобразить отображение отображать: show display
вывести выводит вывод выводить напечатать печать печатать: print output display
список списка списки перечислить: list
строка строки строку строк: line lines string
столбец столбца столбцы столбцов колонка колонки: column columns field
поле поля: field
символ символа символы символов: character characters
слово слова слов: word words
число числа чисел: number numbers
размер размера: size
пользователь пользователя пользователи пользователей: user users
группа группы группу: group
владелец владельца: owner
права разрешения разрешение доступ: permissions mode access
процесс процесса процессы процессов: process processes
сигнал сигнала: signal
память памяти: memory
диск диска диски: disk
раздел раздела разделы: partition section
устройство устройства: device
сеть сети сетевой сетевые: network
соединение соединения подключение подключиться подключения: connection connect
порт порта порты: port
адрес адреса: address
сервер сервера: server
хост хоста: host hostname
пакет пакета пакеты пакетов: package packages
установить установка устанавливать: install set
обновить обновление обновления: update upgrade
версия версии: version
архив архива архивы: archive
сжать сжатие сжимать: compress
распаковать распаковка извлечь извлечение: extract unpack decompress
закодировать кодировать кодирование: encode
декодировать декодирование: decode
шифровать зашифровать шифрование: encrypt
расшифровать: decrypt
ключ ключа ключи: key keys
подпись подписи подписать: signature sign
пароль пароля: password
сообщение сообщения: message
ошибка ошибки ошибок ошибку ошибкой: error errors
журнал журнала лог логи: log
история истории: history
время времени: time
дата даты дату: date
текущий текущая текущую текущего: current
запустить запуск запускать выполнить выполнение исполнить: run execute start
остановить остановка: stop
завершить завершение убить: kill terminate exit
команда команды команду команд: command
сценарий скрипт скрипта: script
оболочка оболочки: shell
сессия сессии сеанс: session
интерактивный интерактивная интерактивную интерактивном: interactive
редактор редактора: editor
редактировать: edit
терминал терминала: terminal
переменная переменной переменные окружения окружение: variable environment
шаблон шаблона образец: pattern template
поиск искать найти найдите: search find
заменить замена: replace substitute
сравнить сравнение: compare diff
различия разница отличия: differences diff
объединить объединение слияние слить: merge join concatenate
разделить разбить: split
отсортировать сортировать сортировка: sort
уникальный уникальные: unique
подсчитать посчитать количество считать: count
сумма суммировать просуммировать: sum total
первый первые первую: first head
последний последние: last tail
начало начале: beginning start head
конец конце: end
рекурсивно рекурсивный: recursively recursive
скрытый скрытые: hidden
содержимое содержимого: contents
вход входные ввод стандартный: input stdin standard
выход выходные: output
стандартного: standard
буфер буферизации: buffer buffering
ссылка ссылку символическая: link symbolic
дерево дерева: tree
кодировка: encoding
формат формате: format
справка справку помощь документация: help documentation manual
опция опции параметр параметры аргумент аргументы: option options argument
подробный подробно подробные: verbose
тихий: quiet
цвет цвета цветной: color colour
отладка отладки: debug
проверить проверка: check verify test
сравнить: compare
загрузить скачать загрузка: download fetch
отправить отправка: send push upload
получить получение: get fetch retrieve receive
применить применение: apply
патч патча: patch
индекс индекса проиндексированные: index staged
метка тег тега: tag label
слияние: merge
конфликт: conflict
клонировать клонирование: clone
статус состояние: status state
автор автора авторство: author authorship
диапазон: range
вкладка: tab
окно окна: window
экран экрана: screen
изображение картинка: image
скорость: speed rate
таймаут тайм-аут: timeout
интерфейс: interface
маршрут маршрута: route
правило правила: rule rules
служба службы сервис: service
демон: daemon
система системы системный системная: system
ядро ядра: kernel
модуль модуля: module
библиотека библиотеки: library
контейнер контейнера: container
образ образа: image
том тома: volume
кластер кластера: cluster
узел узла: node
задача задачи задание: job task
расписание: schedule
планировщик: scheduler
приоритет: priority
фон фоновом фоновый: background
передний: foreground
монтировать смонтировать: mount
размонтировать: unmount
форматировать: format
свободное свободного: free
занятое использование использовать: usage use used
блок блока блоки: block
байт байтов: bytes
шестнадцатеричный: hexadecimal hex
двоичный бинарный: binary
текстовый текст текста: text
запись записать записывать: write
чтение прочитать читать: read
добавить добавление дописать: add append
вставить: insert
пустой пустая пустым: empty
указанный указанная указанную указанного определённый определённую заданный: given specified specific
существующий существующую: existing
игнорировать: ignore
исключить исключая: exclude
включить включая: include enable
отключить выключить: disable
разрешить: allow
запретить: deny prevent
удержать удерживать: hold
заблокировать блокировка: lock
сравнение: comparison
кэш кэша: cache
очистить очистка: clear clean
временный временные: temporary
резервная копия бэкап: backup
восстановить: restore
синхронизировать: sync synchronize
ссылки: links
цель: target
источник: source
назначение: destination
имя имени: name
расширение: extension
тип типа типов: type types
атрибут атрибуты: attributes
метаданные: metadata
отметка: timestamp
обратный обратном: reverse
порядок порядке: order
регистр регистра: case
нижний: lower
верхний: upper
пробел пробелы пробелами: space whitespace
табуляция табуляции: tab
разделитель разделителем разделённом: delimiter separator separated
перенос: newline
кавычки: quotes
escape-последовательности экранирование: escape escapes
ответ: answer reply
запрос запроса: request query
заголовок заголовки: header headers
тело: body
метод: method
прокси: proxy
сертификат: certificate
безопасный: secure
удалённо: remotely
переключиться переключить переключение: switch checkout
информация информацию информации сведения: information info
умолчанию: default
автоматически автоматический: automatically automatic
подкаталог подкаталоги подкаталогов: subdirectory subdirectories
удобочитаемом удобочитаемый удобочитаемых: human-readable readable
инициализировать инициализация: initialize init
значение значения значений: value values
вычислить вычисление: compute calculate
контрольная контрольную контрольные контрольных: checksum
данные данных: data
режим режиме: mode
сохранить сохранение сохранив: save keep
передать передача: pass
массив массива: array
конфигурация конфигурации конфигурационные: configuration config
дополнительный дополнительные: additional extra
отсутствующий отсутствующие отсутствующих: missing
итоговый итоговую итогового итог: total resulting
запись записи: entry record
убрать: remove
исходный исходные исходных: source original
определить: determine detect
родительский родительские: parent
единица единицах единицы: unit units
код кода кодом: code
выйти: exit quit
повтор повторения повторений повторяющиеся: repeated duplicate
вариант вариантов: option alternative
сбросить сброс: reset
отслеживаемые отслеживаемый: tracked
неотслеживаемые неотслеживаемый: untracked
хеш хэш: hash
отменить отмена: undo cancel revert
открыть: open
объект объекта объектов: object objects
элемент элементы: element item
длина длины: length
таблица таблицу: table
ширина ширину: width
подтверждение: confirmation confirm
перезапись перезаписью перезаписать: overwrite
промежуточные промежуточный: intermediate
перенаправление перенаправлениям: redirect redirects
клиентский: client
приватный: private
привязать: bind
набор: set
глубина глубину: depth
уровень уровней: level
порог: threshold
специальный специальных: special
возврат возврата: return
программа программе: program
приглашение приглашением приглашения: prompt
диагностика диагностики: diagnostics
ноль нулевой нулевое: zero null
оригинальный оригинальной: original
смотреть смотри: see view
пропустить пропуская: skip
ограничить ограниченную: limit
доверенный доверенных: trusted
установленные установленный установленных: installed
зависимость зависимости: dependency dependencies
каждый каждую каждой каждого: each every
несколько нескольких: several multiple
вместо: instead
подготовить: prepare
сокет сокета сокеты сокетов сокету: socket sockets
исключение исключения исключений исключением: exception exceptions error
словарь словаря словари словарей словарём словарем: dict dictionary mapping
кортеж кортежа кортежи кортежей: tuple tuples
множество множества множеств: set sets
функция функции функций функцию: function functions
класс класса классы классов: class classes
экземпляр экземпляра экземпляры: instance instances
свойство свойства: property attribute
поток потока потоки потоков: thread threads stream
многопоточность многопоточный потокобезопасный: threading thread
очередь очереди очередей: queue queues
регулярное регулярного регулярные регулярных регулярным: regular regex
выражение выражения выражений: expression expressions
итератор итератора итераторы: iterator iterators
генератор генератора генераторы: generator generators
декоратор декоратора декораторы: decorator decorators
асинхронный асинхронная асинхронно асинхронных: asynchronous async asyncio
корутина корутины корутину сопрограмма сопрограммы: coroutine coroutines
событие события событий: event events
цикл цикла циклы циклом: loop
итерация итерации перебрать перебор перебирать: iterate iteration loop
срез среза срезы: slice slicing
глубокая глубокую глубокий: deep
поверхностная поверхностную: shallow
закрыть закрывает закрытие: close
логирование логировать логгер журналирование: logging logger log
подпроцесс подпроцесса: subprocess process
юникод юникода: unicode
целое целого целые целых: integer int
дробное дробного дробь дроби: float fraction
округлить округление: round rounding
случайное случайный случайного случайные: random
сериализовать сериализация сериализации: serialize serialization dump
десериализовать разобрать разбор: parse deserialize load
часовой: time zone timezone
пояс пояса: zone timezone
встречается встречаются вхождение вхождения: occurs occurrence count
дубликаты дубликатов дубликат: duplicates duplicate
вложенный вложенные вложенных: nested
аннотация аннотации: annotation annotations type hints
тест теста тесты тестов: test tests unittest
построчно: line lines
рабочий рабочая рабочего рабочую: working work
узнать узнает: get find
соединить соединяет: join connect
сгенерировать генерировать генерация: generate
преобразовать преобразование конвертировать конвертация: convert conversion
существует существуют существование: exists exist
"""

GLOSSARIES: dict[tuple[str, str], str] = {("ru", "en"): RU_EN}
"""(language, language) -> its lines: "words of the one: words of the other"."""


def entries(source: str, target: str) -> list[tuple[list[str], list[str]]]:
    """The glossary between ``source`` and ``target`` (language codes), in either direction, as
    (words in ``source``, words in ``target``) per line; empty without one."""
    forward = GLOSSARIES.get((source, target))
    text = forward if forward is not None else GLOSSARIES.get((target, source), "")
    found = []
    for line in text.strip().splitlines():
        one, _, other = line.partition(":")
        pair = (one.split(), other.split())
        found.append(pair if forward is not None else (pair[1], pair[0][:1]))
    return found
