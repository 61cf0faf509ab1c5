"""Questions asked across languages on a ``multilingual`` pack (issue 38): a Russian question on
English pages is read by the multilingual half of the vectors (wikigr/models/use.py), and
``page_score`` weighs each page as a whole (its mean chunk vector). The e5 embedder of older packs
moves such a question to the documents' language by its calibration (wikigr/models/e5_languages.py).
Real models, offline; the pages are made here."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from tests.test_embed_e5 import e5_cache, onnx_e5  # noqa: F401  (fixtures)
from tests.test_embed_multilingual import multilingual, use_cache  # noqa: F401  (fixtures)
from wikigr.agent import AgentResult, KnowledgeGraphAgent
from wikigr.build import build_pack
from wikigr.build.options import BuildOptions
from wikigr.embed import get_embedder
from wikigr.models import e5, use
from wikigr.models.e5_languages import SENTENCES
from wikigr.retrieval.page_index import PageIndex

# Twins that are not among the calibration's sentences.
TWINS = [
    ("Задать имя хоста компьютера", "Set the hostname of the computer"),
    ("Распаковать архив в текущий каталог", "Extract an archive into the current directory"),
    ("Завершить процесс по его идентификатору", "Kill a process by its identifier"),
]
UNRELATED_RUSSIAN = ["Испечь хлеб в духовке", "Полить помидоры в теплице утром", "Купить билет на поезд"]
PAGES = {
    "hostnamectl.md": "# hostnamectl(1)\n\n## Name\n\nhostnamectl - Control the system hostname\n\n"
    "## Description\n\nhostnamectl may be used to query and change the system hostname and related "
    "settings. The static hostname is stored in /etc/hostname.\n\n## Commands\n\nhostname [NAME]: if no "
    "argument is given, print the system hostname. If an optional argument NAME is provided, the "
    "command changes the system hostname to NAME.\n",
    "tar.md": "# tar(1)\n\n## Name\n\ntar - an archiving utility\n\n## Description\n\nGNU tar saves many "
    "files together into a single tape or disk archive, and can restore individual files from the "
    "archive.\n\n## Options\n\n-x, --extract: extract files from an archive. -C, --directory=DIR: change "
    "to DIR before performing any operations.\n",
    "kill.md": "# kill(1)\n\n## Name\n\nkill - send a signal to a process\n\n## Description\n\nThe command "
    "kill sends the specified signal to the specified processes or process groups. If no signal is "
    "specified, the TERM signal is sent.\n\n## Arguments\n\npid: each pid can be a process identifier, "
    "or -1 for every process the user may signal.\n",
    "df.md": "# df(1)\n\n## Name\n\ndf - report file system space usage\n\n## Description\n\ndf displays "
    "the amount of space available on the file system containing each file name argument.\n\n"
    "## Options\n\n-h, --human-readable: print sizes in powers of 1024 (e.g., 1023M).\n",
}


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray((a * b).sum(axis=1))


def test_every_calibrated_language_says_the_english_sentences() -> None:
    assert "en" in SENTENCES and "ru" in SENTENCES
    for code, sentences in SENTENCES.items():
        assert len(sentences) == len(SENTENCES["en"]), code
        assert all(s.strip() for s in sentences) and len(set(sentences)) == len(sentences), code
    assert not {ru for ru, _ in TWINS} & set(SENTENCES["ru"])


def test_a_russian_question_moved_to_english_is_nearer_its_english_twin(onnx_e5: e5.E5Onnx) -> None:  # noqa: F811
    russian = onnx_e5.embed_queries([ru for ru, _ in TWINS])
    english = onnx_e5.embed([en for _, en in TWINS])  # as the passages of an English pack
    others = onnx_e5.embed(UNRELATED_RUSSIAN)
    moved = onnx_e5.move_queries(russian, "ru", "en")
    assert np.allclose(np.linalg.norm(moved, axis=1), 1.0, atol=1e-5)

    def margin(questions: np.ndarray) -> np.ndarray:
        """How much nearer its English twin a question is than any Russian text on another subject."""
        return _cosines(questions, english) - (questions @ others.T).max(axis=1)

    assert (margin(moved) > margin(russian) + 0.01).all()  # the language counts less, the meaning more
    # the same language, or one the calibration does not know: as they are
    assert onnx_e5.move_queries(russian, "ru", "ru") is russian
    assert onnx_e5.move_queries(russian, "de", "en") is russian


def _save(path: Path, matrix: np.ndarray) -> None:
    buffer = io.BytesIO()
    np.save(buffer, matrix)
    path.write_bytes(buffer.getvalue())


def test_the_language_means_are_kept_beside_the_model(onnx_e5: e5.E5Onnx) -> None:  # noqa: F811
    vectors = onnx_e5.embed_queries([ru for ru, _ in TWINS])
    expected = onnx_e5.move_queries(vectors, "ru", "en")
    kept = list(e5.cache_folder(onnx_e5.digest).glob("languages-*.npy"))
    assert [p.name for p in kept] == [f"languages-{e5.LanguageMeans.KEY}.npy"]
    languages = sorted(SENTENCES)
    assert np.load(kept[0]).shape == (len(languages), e5.DIMENSION)
    # a new process reads the means kept (here: ones of our own, to see them used) ...
    means = np.zeros((len(languages), e5.DIMENSION), np.float32)
    means[languages.index("ru"), 0], means[languages.index("en"), 1] = 0.5, 0.5
    _save(kept[0], means)
    shifted = vectors - means[languages.index("ru")] + e5.TARGET_SHARE * means[languages.index("en")]
    shifted /= np.linalg.norm(shifted, axis=1, keepdims=True)
    assert np.allclose(e5.load().move_queries(vectors, "ru", "en"), shifted, atol=1e-6)
    # ... and embeds them again when the file is not theirs
    _save(kept[0], np.ones((1, 3), np.float32))
    assert np.allclose(e5.load().move_queries(vectors, "ru", "en"), expected, atol=1e-5)
    assert np.load(kept[0]).shape == (len(languages), e5.DIMENSION)


def build_multilingual(tmp_path: Path, pages: dict[str, str]) -> Path:
    """A pack of ``pages`` (file name -> Markdown) built with the multilingual embedder."""
    docs = tmp_path / "man"
    docs.mkdir()
    for name, text in pages.items():
        (docs / name).write_text(text, encoding="utf-8")
    build_pack("man", [docs.as_uri()], out=tmp_path / "pack", options=BuildOptions(embedder="multilingual"))
    return tmp_path / "pack"


@pytest.fixture
def man_pages(multilingual: None, tmp_path: Path) -> Path:  # noqa: F811
    return build_multilingual(tmp_path, PAGES)


def _detail(result: AgentResult, stage: str) -> dict[str, object]:
    return next(dict(s.get("detail", {})) for s in result.trace["stages"] if s["stage"] == stage)


def _page_score(result: AgentResult) -> dict[str, object]:
    router = _detail(result, "router")
    stages = [s for attempt in router["attempts"] for s in attempt["stages"]]  # type: ignore[attr-defined]
    return next(dict(s.get("detail", {})) for s in stages if s["stage"] == "page_score")


def test_a_russian_question_on_english_pages_finds_its_page(man_pages: Path) -> None:
    with KnowledgeGraphAgent(man_pages, llm=None) as agent:
        results = {ru: agent.query(ru) for ru, _ in TWINS}
        english = agent.query(TWINS[0][1])
    for (question, _), page in zip(TWINS, ["hostnamectl", "tar", "kill"], strict=True):
        result = results[question]
        assert result.sources[0].url.rsplit("/", 1)[-1].startswith(page), question
        across = _detail(result, "router")["across"]
        assert across == "the question is in Russian and the pack in English: matched by meaning"
        assert _page_score(result)["page_vector"] == 2.0
    assert "across" not in _detail(english, "router")
    assert english.sources[0].url.rsplit("/", 1)[-1].startswith("hostnamectl")
    unmoved = {"router": {"move_across": False}, "page_score": {"page_vector_across": 0.0}}
    with KnowledgeGraphAgent(man_pages, llm=None, options=unmoved) as agent:
        before = agent.query(TWINS[0][0])
    assert _detail(before, "router")["across"] == (
        "the question is in Russian and the pack in English: matched by meaning"
    )
    assert "page_vector" not in _page_score(before)


def test_a_russian_question_on_mostly_english_pages_is_asked_across(
    multilingual: None,  # noqa: F811
    tmp_path: Path,
) -> None:
    """A few Russian pages among English ones leave a Russian question across languages: read in
    the documents' words and matched by meaning, not keyword-searched in Russian (which finds the
    Russian pages alone); the Russian page is still found, by meaning."""
    russian = (
        "# Сокеты\n\n## Таймауты\n\nЧтобы задать таймаут сокета, вызовите settimeout с числом "
        "секунд. Если за это время ответа нет, операция завершается исключением timeout.\n"
    )
    pack = build_multilingual(tmp_path, {**PAGES, "sockets-ru.md": russian})
    with KnowledgeGraphAgent(pack, llm=None) as agent:
        assert agent.pack.manifest.language_codes()[:2] == ["en", "ru"]
        results = {ru: agent.query(ru) for ru, _ in TWINS}
        sockets = agent.query("Как задать таймаут сокета?")
    for (question, _), page in zip(TWINS, ["hostnamectl", "tar", "kill"], strict=True):
        result = results[question]
        assert result.sources[0].url.rsplit("/", 1)[-1].startswith(page), question
        assert _detail(result, "router")["across"] == (
            "the question is in Russian and most of the pack in English: matched by meaning"
        )
        assert _page_score(result)["page_vector"] == 2.0
    pages = list(dict.fromkeys(s.url.rsplit("/", 1)[-1].split("#")[0] for s in sockets.sources))
    assert "sockets-ru.md" in pages[:3], pages  # the Russian page among the first, by meaning


def test_page_means_are_the_unit_mean_of_each_pages_chunk_vectors(man_pages: Path) -> None:
    with KnowledgeGraphAgent(man_pages, llm=None) as agent:
        index = PageIndex.of(agent.new_state("tar").ctx)
    assert index.page_means.shape == (len(index.pages), use.DIMENSION) and len(index.pages) == len(PAGES)
    for page in range(len(index.pages)):
        mean = index.matrix[index.chunk_page == page].mean(axis=0)
        assert np.allclose(index.page_means[page], mean / np.linalg.norm(mean), atol=1e-5)


def test_an_english_question_on_english_pages_ranks_as_on_the_built_in_models_pack(
    man_pages: Path, tmp_path: Path
) -> None:
    """An English question on the English pages of a ``multilingual`` pack is compared by the
    built-in model's half alone: the same pages first as on the built-in model's pack;
    a ``page_vector`` set in the options still weighs the pages' means."""
    docs = tmp_path / "builtin-docs"
    docs.mkdir()
    for name, text in PAGES.items():
        (docs / name).write_text(text, encoding="utf-8")
    build_pack("man", [docs.as_uri()], out=tmp_path / "builtin", options=BuildOptions())
    for _, english in TWINS:
        with KnowledgeGraphAgent(man_pages, llm=None) as agent:
            result = agent.query(english)
        with KnowledgeGraphAgent(tmp_path / "builtin", llm=None) as agent:
            builtin = agent.query(english)
        assert builtin.trace["embedder"] == "all-MiniLM-L6-v2-int8" and result.trace["embedder"] == use.NAME
        pages = [
            list(dict.fromkeys(s.url.rsplit("/", 1)[-1].split("#")[0] for s in r.sources))
            for r in (result, builtin)
        ]
        assert pages[0][:2] == pages[1][:2], english
        assert "page_vector" not in _page_score(result) and "across" not in _detail(result, "router")
        # thresholds read the built-in model's own cosine (the stored one is over sqrt(2))
        assert abs(result.confidence - builtin.confidence) < 1e-3, english
    with KnowledgeGraphAgent(man_pages, llm=None, options={"page_score": {"page_vector": 0.5}}) as agent:
        assert _page_score(agent.query(TWINS[1][1]))["page_vector"] == 0.5


def test_a_russian_question_is_read_in_the_documents_words_without_the_english_model(man_pages: Path) -> None:
    """The glossary's English words take the lexicon's vectors, not the built-in model's: a Russian
    question on a ``multilingual`` pack loads USE alone (a fresh process starts faster)."""
    import wikigr.embed

    wikigr.embed._CACHE.pop(use.NAME, None)  # the build loaded both models
    with KnowledgeGraphAgent(man_pages, llm=None) as agent:
        result = agent.query(TWINS[1][0])
    embedder = get_embedder("multilingual")
    assert isinstance(embedder, use.Multilingual)
    read_as = _page_score(result)["read_as"]
    assert isinstance(read_as, list) and "archive" in read_as, read_as
    assert embedder._use is not None and embedder._minilm is None


@pytest.mark.usefixtures("multilingual")
def test_a_page_many_pages_link_to_does_not_outrank_the_page_a_question_across_asks_for(
    tmp_path: Path,
) -> None:
    """page_score fuses the pages a question across languages is read to (keyword search) by rank,
    last: the links' bonus (``centrality``) is in the pages' scores' own units. Added after the
    fusion, whose scores are a tenth of those, it put the index every page links to first, for
    every question (seen on the Python docs: os.html above socket.html for "Как установить таймаут
    сокета?")."""
    pages = dict(PAGES)
    names = [name.removesuffix(".md") for name in PAGES]
    index = ", ".join(f"[{name}]({name}.md)" for name in names)
    pages["commands.md"] = (
        f"# Commands\n\n## Index\n\nThe commands of this system, each on a page of its own: {index}. "
        "Each page says what the command does and which options it takes.\n"
    )
    for name in names:
        pages[f"{name}.md"] += "\n## See also\n\n[Commands](commands.md), the index of all commands.\n"
    pack = build_multilingual(tmp_path, pages)
    with KnowledgeGraphAgent(pack, llm=None) as agent:
        for (question, _), page in zip(TWINS, ["hostnamectl", "tar", "kill"], strict=True):
            detail = _page_score(agent.query(question))
            assert detail["authority"] == "yes" and detail["centrality"] == 5
            top = [str(url).rsplit("/", 1)[-1] for url in detail["top_pages"]]  # type: ignore[attr-defined]
            assert top[0] == f"{page}.md", (question, top)
