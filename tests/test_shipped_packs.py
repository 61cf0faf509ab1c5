"""The packs shipped in packs/ are built at the current format and say so everywhere: manifest
format and store schema current, the embedder's digest recorded (and the built-in model's), every
file's checksum listed, `pack validate` clean, `pack install` checking the checksums without a
warning, and the README's sample answer the one the pack gives (issue 35, items 17 and 18)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from wikigr.build import BuildOptions, build_pack
from wikigr.cli import run
from wikigr.embed import get_embedder
from wikigr.eval.runner import EvalOptions, evaluate
from wikigr.graph.pack import rebuild_graph
from wikigr.pack.files import MANIFEST_FILE
from wikigr.pack.kind import pack_kind
from wikigr.pack.manifest import FORMAT_VERSION, load_manifest
from wikigr.pack.store import Store
from wikigr.share import export_pack, install_pack
from wikigr.share.files import pack_files, sha256_file
from wikigr.validate import validate_pack

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
SHIPPED = sorted(p for p in (ROOT / "packs").iterdir() if (p / MANIFEST_FILE).is_file())
SOCKET_QUESTION = "How do I set a socket timeout?"


def test_both_packs_are_shipped() -> None:
    assert [p.name for p in SHIPPED] == ["amlb2019", "pydocs"]


@pytest.mark.parametrize("folder", SHIPPED, ids=lambda p: p.name)
def test_a_shipped_pack_is_at_the_current_format(folder: Path) -> None:
    manifest = load_manifest(folder / MANIFEST_FILE)
    assert manifest.format_version == FORMAT_VERSION
    assert manifest.schema_version == pack_kind(manifest.source_kind).schema_version
    # the digest of the weights is recorded, and it is the built-in model's: queries check it
    assert manifest.embedder.digest == get_embedder(manifest.embedder.name).digest != ""


@pytest.mark.parametrize("folder", SHIPPED, ids=lambda p: p.name)
def test_a_shipped_pack_lists_the_checksum_of_every_file(folder: Path) -> None:
    manifest = load_manifest(folder / MANIFEST_FILE)
    _, files = pack_files(folder)
    shared = [rel for rel in files if rel != MANIFEST_FILE]
    assert sorted(manifest.files) == sorted(manifest.sizes) == shared
    for rel in shared:
        assert sha256_file(folder / rel) == (manifest.files[rel], manifest.sizes[rel]), rel


@pytest.mark.parametrize("folder", SHIPPED, ids=lambda p: p.name)
def test_a_shipped_pack_validates_and_installs_without_a_warning(
    folder: Path, wikigr_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = validate_pack(folder)
    assert report.ok and all(c.ok for c in report.checks), report.to_json()
    assert run(["pack", "info", str(folder)]) == 0
    assert "built before wikigr recorded it" not in capsys.readouterr().out  # its embedder's digest
    assert run(["pack", "install", str(folder), "--quiet", "--skills-dir", str(tmp_path / "skills")]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert captured.out.startswith(f"Installed pack {folder.name} at {wikigr_home / 'packs' / folder.name} (")
    assert "checksums verified" in captured.out and "no checksums listed" not in captured.out


@pytest.mark.parametrize("folder", SHIPPED, ids=lambda p: p.name)
def test_a_shipped_skill_names_the_pack_not_the_builders_path(folder: Path) -> None:
    skill = (folder / "skill.md").read_text(encoding="utf-8")
    assert f"wikigr query {folder.name} " in skill
    for local in (str(ROOT), "/work/", "/tmp/"):
        assert local not in skill


def _readme_block_after(marker: str) -> list[str]:
    """The lines of the README's code block that follows the one holding ``marker``."""
    text = README.read_text(encoding="utf-8")
    rest = text[text.index(marker) :]
    block = re.search(r"\n```\n.*?\n```\n(.*?)\n```\n", rest, re.S)
    assert block is not None
    return block.group(1).splitlines()


def test_the_readme_sample_answer_is_the_shipped_packs(capsys: pytest.CaptureFixture[str]) -> None:
    sample = _readme_block_after(f'uv run wikigr query packs/pydocs "{SOCKET_QUESTION}"')
    assert sample[-1] == "..."  # the sources go on
    gap = sample.index("")
    answer, sources = sample[:gap], sample[gap + 1 : -1]
    assert run(["query", str(ROOT / "packs" / "pydocs"), SOCKET_QUESTION, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert " ".join(answer) == " ".join(result["answer"].split())
    assert sources[0] == "Sources"
    for n, (line, source) in enumerate(zip(sources[1:], result["sources"], strict=False), 1):
        assert line == f"[{n}] {source['title']} › {source['section']}  {source['url']}"
    assert len(sources) - 1 < len(result["sources"])


def test_the_readme_names_the_scripts_that_rebuild_the_shipped_packs() -> None:
    text = README.read_text(encoding="utf-8")
    line = next(line for line in text.splitlines() if "ebuilding the shipped packs" in line)
    section = text[text.index(line) :]
    for script in ("scripts/build_example_pack.py", "scripts/build_openml_pack.py"):
        assert f"uv run python {script}" in section[:2000]
        assert (ROOT / script).is_file()


def test_the_chunk_ids_the_docs_quote_are_in_the_shipped_pack() -> None:
    """The build serves the pages on a fixed port, so a rebuild keeps the ids the docs quote."""
    quoted = {
        found
        for doc in [README, *sorted((ROOT / "docs").glob("*.md"))]
        for found in re.findall(r"\b[0-9a-f]{16}:\d+:\d+\b", doc.read_text(encoding="utf-8"))
    }
    assert quoted  # docs/serve.md asks for the graph around one
    with Store.open(ROOT / "packs" / "pydocs" / "pack.db", read_only=True) as store:
        held = {row[0] for row in store.rows("MATCH (c:Chunk) RETURN c.id")}
    assert quoted <= held


def _documented_answer_modes() -> set[str]:
    """The answer_mode values the README's `wikigr query` row lists, in quotes."""
    row = next(line for line in README.read_text().splitlines() if line.startswith("| `wikigr query PACK"))
    listed = re.search(r"`answer_mode` is (.*?); `--trace`", row)
    assert listed is not None, "the row says what answer_mode is"
    return set(re.findall(r'"([^"]+)"', listed.group(1)))


def test_the_readme_lists_the_answer_modes_the_shipped_packs_give(capsys: pytest.CaptureFixture[str]) -> None:
    documented = _documented_answer_modes()
    got = {}
    for folder, question in (
        (ROOT / "packs" / "pydocs", SOCKET_QUESTION),
        (ROOT / "packs" / "amlb2019", "Which AutoML framework has the lowest median log-loss?"),
    ):
        assert run(["query", str(folder), question, "--json"]) == 0
        got[folder.name] = json.loads(capsys.readouterr().out)["answer_mode"]
    assert got == {"pydocs": "extractive", "amlb2019": "rules"}
    assert {"extractive", "claude", "none", "rules", "claude tools, composed answer"} <= documented
    assert {"rules (Claude called no tool)", "rules (Claude failed)"} <= documented


def _copy_of_an_installed_pack(tmp_path: Path) -> Path:
    """A copy of a pack installed from an archive: its manifest lists every file's checksum."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "alpha.md").write_text("# Alpha\n\nAlpha is the first letter. See [Beta](beta.md).\n")
    (docs / "beta.md").write_text("# Beta\n\nBeta is the second letter of the Greek alphabet.\n")
    build_pack("tiny", [docs.as_uri()], out=tmp_path / "tiny", options=BuildOptions(graph=False))
    export_pack(tmp_path / "tiny", tmp_path / "tiny.tar.gz")
    installed = install_pack(tmp_path / "tiny.tar.gz", register_skill=False)
    assert installed.checked and load_manifest(installed.path / MANIFEST_FILE).files
    copy = tmp_path / "copy"
    shutil.copytree(installed.path, copy)
    return copy


def _installs_unchecked(copy: Path) -> None:
    """The copy lists no checksum any more and installs from its folder without a warning."""
    manifest = load_manifest(copy / MANIFEST_FILE)
    assert manifest.files == {} and manifest.sizes == {}
    again = install_pack(copy, force=True, register_skill=False)
    assert not again.checked and again.warnings == []


def test_a_copy_given_an_entity_graph_installs_from_its_folder(tmp_path: Path, wikigr_home: Path) -> None:
    """`pack graph` rewrites the store: a manifest listing the old checksums (a shipped pack, an
    installed one) would have the copy refused at install ("pack.db is N bytes but the manifest
    says M"); the checksums are dropped, as `pack update` drops them."""
    copy = _copy_of_an_installed_pack(tmp_path)
    rebuild_graph(copy)
    _installs_unchecked(copy)


def test_a_copy_evaluated_installs_from_its_folder(tmp_path: Path, wikigr_home: Path) -> None:
    """`wikigr eval` writes eval/results/ and the manifest's scores: a pack listing checksums (a
    shipped or installed one) would have the copy refused at install ("present but not listed");
    the checksums are dropped, as `pack update` and `pack graph` drop them."""
    copy = _copy_of_an_installed_pack(tmp_path)
    question = {"id": "q1", "question": "Which letter is first?", "ground_truth": "Alpha"}
    (copy / "eval" / "questions.jsonl").write_text(json.dumps(question) + "\n")
    evaluate(copy, EvalOptions(profiles=["baseline"]))
    assert load_manifest(copy / MANIFEST_FILE).eval_scores
    _installs_unchecked(copy)
