"""The glossary between Russian and English (wikigr/models/glossary.py) in the reading of a
question asked in the other language (wikigr/retrieval/across.py ``read``): the words of computing
that the multilingual model alone reads wrong ("ветку" as *gate*) are read as the glossary says.
Real e5, offline; the pages are made here."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_embed_multilingual import multilingual, use_cache  # noqa: F401  (fixtures)
from tests.test_languages_across import _page_score, build_multilingual
from wikigr import lang
from wikigr.agent import KnowledgeGraphAgent
from wikigr.models.glossary import GLOSSARIES, entries
from wikigr.retrieval.across import read, said_as


def test_every_line_says_words_of_one_script_as_words_of_the_other() -> None:
    for (source, target), text in GLOSSARIES.items():
        lines = entries(source, target)
        assert len(lines) == len(text.strip().splitlines()) > 100
        for words, said in lines:
            assert words and said, (words, said)
            assert {lang.script(w) for w in words} == {lang.language_script(source)}, words
            assert {lang.script(w) for w in said} == {lang.language_script(target)}, said


def test_a_word_is_found_by_its_stem_and_with_yo_read_as_ye() -> None:
    assert "branch" in said_as("ветку", "ru", "en")
    assert "directory" in said_as("каталога", "ru", "en")
    assert said_as("удалённую", "ru", "en") == said_as("удаленную", "ru", "en") == ("remote",)
    assert said_as("помидор", "ru", "en") == ()
    assert said_as("branches", "en", "ru") == ("ветка",)  # the other way: a line's first word
    assert said_as("ветку", "ru", "de") == ()  # no glossary between those languages


PAGES = {
    "git-branch.md": "# git-branch(1)\n\n## Name\n\ngit-branch - List, create, or delete branches\n\n"
    "## Options\n\n-d, --delete: delete a branch. The branch must be fully merged in its upstream "
    "branch.\n\n-r, --remotes: list or delete (if used with -d) the remote-tracking branches.\n",
    "cp.md": "# cp(1)\n\n## Name\n\ncp - copy files and directories\n\n## Description\n\ncp copies "
    "each specified file to the destination. By default, it does not copy directories.\n\n## Options"
    "\n\n-r, -R, --recursive: copy directories and their contents recursively.\n",
    "gate.md": "# gate(1)\n\n## Name\n\ngate - open a gate to the network\n\n## Description\n\ngate "
    "gets vectors through the gate and removes those it does not need.\n",
}
RUSSIAN_PAGES = {
    "ветки.md": "# Ветки\n\nВетка хранит историю изменений. Чтобы удалить ветку, выполните git branch "
    "-d с именем ветки. Удалённые ветки показывает git branch -r, и удалить удалённую ветку можно "
    "так же.\n\nВетки сливаются командой git merge, когда работа в ветке закончена.\n",
    "файлы.md": "# Файлы\n\nФайл удаляют командой rm, а каталог с его содержимым удаляют рекурсивно: rm "
    "-r каталог. Скрытые файлы начинаются с точки.\n\nФайлы копируют командой cp, каталоги "
    "копируют рекурсивно.\n",
    "сеть.md": "# Сеть\n\nСетевые интерфейсы показывает команда ip. Адрес и маршрут задаются той же "
    "командой; порт сервера проверяют через ss.\n\nСоединение с удалённым сервером открывает ssh.\n",
}


@pytest.mark.usefixtures("multilingual")
def test_a_russian_word_the_model_reads_wrong_is_read_as_the_glossary_says(tmp_path: Path) -> None:
    pack = build_multilingual(tmp_path, PAGES)
    with KnowledgeGraphAgent(pack, llm=None) as agent:
        state = agent.new_state("Удалить удалённую ветку")
        lexicon = state.ctx.lexicon()
        assert lexicon is not None
        found = read(state, state.ctx.keyword_index(), lexicon)
        assert {"branch", "remote", "delete"} <= set(found.words)
        assert found.tokens["branch"] == 1.0
        result = agent.query("Удалить удалённую ветку")
    read_as = _page_score(result)["read_as"]
    assert isinstance(read_as, list) and "branch" in read_as and "gate" not in read_as  # the model: gate
    pages = list(dict.fromkeys(s.url.rsplit("/", 1)[-1].split("#")[0] for s in result.sources))
    assert pages.index("git-branch.md") < pages.index("gate.md")


@pytest.mark.usefixtures("multilingual")
def test_an_english_question_on_russian_pages_is_read_in_their_stemmed_words(tmp_path: Path) -> None:
    pack = build_multilingual(tmp_path, RUSSIAN_PAGES)
    with KnowledgeGraphAgent(pack, llm=None) as agent:
        state = agent.new_state("Delete a branch")
        assert state.across and state.pack_languages == ["ru"]
        lexicon = state.ctx.lexicon()
        assert lexicon is not None
        index = state.ctx.keyword_index()
        found = read(state, index, lexicon)
        assert "ветка" in found.words
        stemmed = index.tokens("ветка", "ru")
        assert stemmed != ["ветка"] and set(stemmed) <= set(found.tokens)  # as the index reads the pages
        result = agent.query("Delete a branch")
        # words the glossary does not hold are looked up in the lexicon, here of no words: no crash
        assert lexicon.words == [] and agent.query("Purchase tickets for the morning train").sources
    assert result.sources[0].url.rsplit("/", 1)[-1].startswith("%D0%B2")  # ветки.md


SOCKET_PAGES = {
    "socket.md": "# socket\n\n## Socket objects\n\nSockets are available on all modern Unix systems, "
    "Windows and MacOS, and probably on additional platforms as well.\n\n"
    "socket.settimeout(value): Set a timeout on blocking socket operations. The value argument can "
    "be a nonnegative number of seconds, or None.\n\nsocket.setblocking(flag): Set blocking or "
    "non-blocking mode of the socket.\n\nsocket.close(): Mark the socket closed. Sockets are closed "
    "automatically when they are garbage-collected.\n",
    "os.md": "# os\n\n## Interface to the scheduler\n\nThese functions control how a process is "
    "allocated CPU time by the operating system. They are only available on some Unix platforms.\n\n"
    "os.sched_yield(): Voluntarily relinquish the CPU.\n\nos.sched_getaffinity(pid): Return the set "
    "of CPUs the process is restricted to.\n",
    "time.md": "# time\n\n## Functions\n\ntime.sleep(secs): Suspend execution of the calling thread "
    "for the given number of seconds.\n\ntime.monotonic(): Return the value of a monotonic clock, in "
    "fractional seconds.\n",
}


@pytest.mark.usefixtures("multilingual")
def test_a_russian_how_to_question_is_answered_with_the_sentences_its_reading_names(tmp_path: Path) -> None:
    """The offline answer weighs the sentences by the question's words: a Russian question's are
    none of the English pages', so it weighs them by the words it is read as (socket, timeout)."""
    pack = build_multilingual(tmp_path, SOCKET_PAGES)
    with KnowledgeGraphAgent(pack, llm=None) as agent:
        state = agent.new_state("Как установить таймаут сокета?")
        lexicon = state.ctx.lexicon()
        assert lexicon is not None and state.across
        assert {"socket", "timeout"} <= set(read(state, state.ctx.keyword_index(), lexicon).words)
        answer = agent.query("Как установить таймаут сокета?").answer
    assert answer.startswith("socket.settimeout(value): Set a timeout on blocking socket operations"), answer
