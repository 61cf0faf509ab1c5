"""The kind of a Russian question (wikigr/question.py): the router reads the same cues in Russian
as in English — counting, enumerating, comparing, a relative clause."""

from __future__ import annotations

import pytest

from wikigr.question import Question, classify


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("Сколько участников в обществе?", "aggregate"),  # how many
        ("Показать количество столбцов и строк терминала", "aggregate"),  # the number of
        ("Просуммировать значения в первом столбце файла", "aggregate"),  # sum
        ("Перечислите все уровни логирования", "global"),  # list all
        ("Вывести список всех установленных пакетов", "global"),  # list ... (a verb, then "list")
        ("Список доверенных ключей", "global"),
        ("Какие бывают виды сокетов?", "global"),  # what types are there
        ("Сравнить два каталога рекурсивно", "relation"),  # compare
        ("В чём разница между списком и кортежем?", "relation"),  # the difference between
        (
            "Кто был первым президентом ассоциации, которая издаёт журнал о сетях и сокетах?",
            "multi_hop",
        ),  # a relative clause in a long question
        ("Как установить таймаут сокета?", "simple"),
        ("Показать все файлы в каталоге", "simple"),  # "all" alone is no cue, as in English
        ("Добавить ключ в список доверенных ключей", "simple"),  # a list named, not asked for
        ("Вычислить контрольную сумму файла", "simple"),  # a checksum is no sum
    ],
)
def test_the_kind_of_a_russian_question(question: str, kind: str) -> None:
    assert classify(question)[0] == kind
    assert Question(question).kind == kind


@pytest.mark.parametrize(
    ("english", "russian"),
    [
        ("How many members does the society have?", "Сколько участников в обществе?"),
        ("List all the logging levels", "Перечислите все уровни логирования"),
        ("Compare files, ignoring white spaces", "Сравнить файлы, игнорируя пробелы"),
        ("How do I set a socket timeout?", "Как установить таймаут сокета?"),
    ],
)
def test_twins_are_of_one_kind(english: str, russian: str) -> None:
    assert classify(russian)[0] == classify(english)[0]
