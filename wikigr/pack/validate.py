"""``pack validate``: check that a folder is a sound pack, without changing it.

It checks what the agent will load, with the agent's own code: the manifest, the files,
``kg_config.json`` (by the loader queries use), the eval questions, the embedder, the store (every
value of every table read once, so damage anywhere in it shows), and finally it opens the pack
with :class:`~wikigr.agent.KnowledgeGraphAgent` (read-only, no Claude) and answers a question.
``pack install`` refuses what this refuses.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from wikigr.embed import embedder_info
from wikigr.errors import WikigrError
from wikigr.pack import pack as layout
from wikigr.pack.manifest import Manifest, load_manifest
from wikigr.pack.store import Store

MAX_QUESTIONS_BYTES = 64 * 1024 * 1024


@dataclass
class Check:
    name: str
    ok: bool
    detail: str = ""


@dataclass
class ValidationReport:
    path: Path
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def add(self, name: str, ok: bool, detail: str = "") -> None:
        self.checks.append(Check(name, ok, detail))

    def to_json(self) -> dict[str, object]:
        return {
            "path": str(self.path),
            "ok": self.ok,
            "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in self.checks],
        }


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _check_questions(path: Path) -> str | None:
    if not path.is_file():
        return f"missing {layout.QUESTIONS_FILE}"
    if path.stat().st_size > MAX_QUESTIONS_BYTES:
        return "too large"
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 ({exc.reason} at byte {exc.start})"
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            return f"line {number}: not JSON ({exc.msg})"
        except RecursionError:
            return f"line {number}: nested too deeply"
        if not isinstance(row, dict) or not isinstance(row.get("question"), str):
            return f"line {number}: not an object with a 'question' string"
    return None


def _check_config(path: Path, report: ValidationReport) -> None:
    """``kg_config.json`` through the loader the agent uses: unknown keys, profiles, stage
    options and values out of range are refused as a query would refuse them."""
    from wikigr.retrieval.profiles import load_pack_config

    try:
        load_pack_config(layout.read_config(path), str(path / layout.CONFIG_FILE))
        report.add("kg_config", True)
    except WikigrError as exc:
        report.add("kg_config", False, exc.message)


def _check_store(path: Path, manifest: Manifest | None, report: ValidationReport) -> None:
    store_path = path / layout.STORE_FILE
    if store_path.is_symlink():
        report.add("store", False, f"{layout.STORE_FILE} is a symbolic link")
        return
    try:
        store = Store.open(store_path, read_only=True, kind=manifest.source_kind if manifest else None)
    except WikigrError as exc:
        report.add("store", False, exc.message)
        return
    try:
        stats = store.stats()
        store.verify()
        report.add("store", True, f"every table read; vector search: {store.vector_path}")
        if manifest is not None:
            recorded = asdict(manifest.stats)
            wrong = [k for k, v in recorded.items() if stats.get(k) != v]
            detail = ", ".join(f"{k}: manifest {recorded[k]}, store {stats.get(k)}" for k in wrong)
            report.add("stats", not wrong, detail)
            if manifest.stats.chunks:
                dim = store.rows("MATCH (c:Chunk) RETURN size(c.embedding) LIMIT 1")
                ok = bool(dim) and dim[0][0] == manifest.embedder.dimension
                report.add("embeddings", ok, "" if ok else "dimension differs from the manifest")
    except WikigrError as exc:
        report.add("store", False, exc.message)
    finally:
        store.close()


def _check_query(path: Path, manifest: Manifest, report: ValidationReport) -> None:
    """Open the pack as an agent does (read-only, no Claude) and answer one question."""
    from wikigr.packset import open_agent  # a pack in shards answers as a set of its shards

    question = manifest.description.strip() or manifest.name
    try:
        with open_agent(path, llm=None) as agent:
            result = agent.query(question[:500])
        report.add("query", True, f"answered with {len(result.sources)} sources (profile {result.profile})")
    except WikigrError as exc:
        report.add("query", False, exc.message)
    except Exception as exc:  # noqa: BLE001 - a pack no query can use is invalid, whatever the cause
        report.add("query", False, f"{type(exc).__name__}: {_one_line(exc)}")


def validate_pack(path: Path) -> ValidationReport:
    """Run every check; never raises for a broken pack (the report says what is wrong). The last
    one, answering a question with the agent, runs when every other check passed."""
    report = ValidationReport(path)
    manifest: Manifest | None = None
    try:
        manifest = load_manifest(path / layout.MANIFEST_FILE)
        report.add("manifest", True, f"format_version {manifest.format_version}")
    except WikigrError as exc:
        report.add("manifest", False, exc.message)

    for rel in (layout.URLS_FILE, layout.SKILL_FILE, layout.CONFIG_FILE, layout.RESULTS_DIR):
        target = path / rel
        if target.is_symlink():
            report.add(rel, False, "is a symbolic link")
        elif rel == layout.RESULTS_DIR and not target.exists():
            # An empty folder does not survive git or some archivers; `wikigr eval` creates it.
            report.add(rel, True, "absent (created by the first evaluation)")
        else:
            report.add(rel, target.exists(), "" if target.exists() else "missing")

    if (path / layout.CONFIG_FILE).is_file():
        _check_config(path, report)

    problem = _check_questions(path / layout.QUESTIONS_FILE)
    report.add("questions", problem is None, problem or "")

    if manifest is not None:
        try:
            info = embedder_info(manifest.embedder.name)
            same = info.dimension in (None, manifest.embedder.dimension)  # None: known once loaded
            report.add("embedder", same, info.name if same else "dimension differs")
        except WikigrError as exc:
            report.add("embedder", False, exc.message)

    if manifest is not None and manifest.shards:  # a pack in shards: each shard is a pack
        from wikigr.pack.shards import validate_shards

        validate_shards(path, manifest, report)
    else:
        _check_store(path, manifest, report)
    if manifest is not None and report.ok:
        _check_query(path, manifest, report)
    return report
