"""``pack validate``: check that a folder is a sound pack, without changing it.

It checks what the agent will load, with the agent's own code: the manifest, the files,
``kg_config.json`` (by the loader queries use), the eval questions, the embedder, the store (every
value of every table read once, so damage anywhere in it shows), and finally it opens the pack
with :class:`~wikigr.agent.KnowledgeGraphAgent` (read-only, no Claude) and answers a question.
``pack install`` refuses what this refuses.

The checks that open the store (the store, its statistics, a pack's shards, the question) run in a
child process (``python -m wikigr.pack.checker PATH``): a store damaged where the database library
does not check (its catalogue) can make the library crash (a segmentation fault) or hang while
opening it, and the child's death or its timeout becomes a failed ``store`` check, one line, instead
of the death of ``pack validate`` or ``pack install``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from wikigr import schema
from wikigr.embed import embedder_info
from wikigr.errors import WikigrError
from wikigr.pack import pack as layout
from wikigr.pack.manifest import Manifest, load_manifest
from wikigr.pack.store import Store

MAX_QUESTIONS_BYTES = 64 * 1024 * 1024
CHECK_SECONDS = 120.0  # the child's time for the store checks and the question, at the least
CHECK_BYTES_PER_SECOND = 2 * 1024 * 1024  # and one second more per this many bytes of stores
REPORT_PREFIX = "wikigr-checks: "  # the child's report line on its standard output
IN_CHILD = False  # set by wikigr.pack.checker: the checks run here, not in another child


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
        text = schema.decode_utf8(path.read_bytes())
    except schema.JSONError as exc:
        return str(exc)
    for number, line in enumerate(schema.json_lines(text), 1):
        if not line.strip():
            continue
        try:
            row = schema.parse_json(line)
        except schema.JSONError as exc:
            return f"line {number}: {exc}"
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


def database_checks(path: Path, query: bool) -> list[Check]:
    """The checks that open the store, in this process: the store (or each shard, as a pack of its
    own), then, when ``query`` is set and they passed, answering a question with the agent."""
    report = ValidationReport(path)
    try:
        manifest: Manifest | None = load_manifest(path / layout.MANIFEST_FILE)
    except WikigrError:
        manifest = None  # the parent reports it
    if manifest is not None and manifest.shards:  # a pack in shards: each shard is a pack
        from wikigr.build.shards import validate_shards

        validate_shards(path, manifest, report)
    else:
        _check_store(path, manifest, report)
    if query and manifest is not None and report.ok:
        _check_query(path, manifest, report)
    return report.checks


def check_timeout(path: Path) -> float:
    """The seconds the child may take: CHECK_SECONDS, and more for large stores (every value of
    every table is read)."""
    from wikigr.pack.shards import SHARDS_DIR

    stores = [path / layout.STORE_FILE, *(path / SHARDS_DIR).glob(f"*/{layout.STORE_FILE}")]  # or its shards
    size = sum(store.stat().st_size for store in stores if store.is_file() and not store.is_symlink())
    return CHECK_SECONDS + size / CHECK_BYTES_PER_SECOND


def _isolated_checks(path: Path, query: bool, timeout: float | None) -> list[Check]:
    """:func:`database_checks` in a child process; its crash, hang or garbled answer is a failed
    ``store`` check."""
    import wikigr

    seconds = check_timeout(path) if timeout is None else timeout
    command = [sys.executable, "-m", "wikigr.pack.checker", str(path), *(["--query"] if query else [])]
    package_root = str(Path(wikigr.__file__).resolve().parent.parent)  # even when not installed
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")])),
    }
    try:
        done = subprocess.run(
            command, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=seconds
        )
    except subprocess.TimeoutExpired:
        return [
            Check(
                "store",
                False,
                f"opening and querying the store did not finish within {seconds:g} s (stopped): "
                "a damaged store can make the database library hang",
            )
        ]
    if done.returncode < 0:
        try:
            name = signal.Signals(-done.returncode).name
        except ValueError:
            name = f"signal {-done.returncode}"
        return [
            Check(
                "store",
                False,
                f"the database library crashed ({name}) opening or querying the store: the store is damaged",
            )
        ]
    lines = [line for line in done.stdout.splitlines() if line.startswith(REPORT_PREFIX)]
    try:
        rows = schema.parse_json(lines[-1][len(REPORT_PREFIX) :])
        return [Check(str(r["name"]), bool(r["ok"]), str(r["detail"])) for r in rows]
    except (IndexError, TypeError, KeyError, ValueError):
        errors = [line for line in done.stderr.splitlines() if line.strip()]
        last = _one_line(Exception(errors[-1])) if errors else "no report"
        return [Check("store", False, f"the store check failed (exit {done.returncode}): {last[:300]}")]


def validate_pack(path: Path, timeout: float | None = None) -> ValidationReport:
    """Run every check; never raises for a broken pack (the report says what is wrong). The last
    one, answering a question with the agent, runs when every other check passed. The checks that
    open the store run in a child process, stopped after ``timeout`` seconds (default:
    :func:`check_timeout`)."""
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

    query = manifest is not None and report.ok  # the question, when every other check passes
    if IN_CHILD:  # a shard's checks, in the child of its pack's
        report.checks += database_checks(path, query)
    else:
        report.checks += _isolated_checks(path, query, timeout)
    return report
