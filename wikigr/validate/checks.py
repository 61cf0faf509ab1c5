"""``pack validate``: check that a folder is a sound pack, without changing it.

It checks what the agent will load, with the agent's own code: the manifest, the files,
``kg_config.json`` (by the loader queries use), the eval questions, the embedder, the store (every
value of every table read once, so damage anywhere in it shows), and finally it opens the pack
with :class:`~wikigr.agent.KnowledgeGraphAgent` (read-only, no Claude) and answers a question.
``pack install`` refuses what this refuses.

The checks that open the store (the store, its statistics, a pack's shards, the question) run in a
child process (``python -m wikigr.validate.child PATH``): a store damaged where the database library
does not check (its catalogue) can make the library crash (a segmentation fault) or hang while
opening it, and the child's death or its timeout becomes a failed ``store`` check, one line, instead
of the death of ``pack validate`` or ``pack install``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import wikigr
from wikigr import schema
from wikigr.embed import embedder_info
from wikigr.errors import InvalidPackError, WikigrError, one_line, seconds_setting
from wikigr.pack import pack as layout
from wikigr.pack.definitions import Definitions
from wikigr.pack.keyword import CHUNK_IDS_FILE, KEYWORD_DIR, KeywordIndex
from wikigr.pack.lexicon import Lexicon
from wikigr.pack.manifest import Manifest, load_manifest
from wikigr.pack.shards import SHARDS_DIR, shard_folder, store_digest, summed_stats
from wikigr.pack.store import Store
from wikigr.packset import open_agent  # a pack in shards answers as a set of its shards
from wikigr.retrieval.profiles import load_pack_config
from wikigr.sources.crawl import crawl_of

MAX_QUESTIONS_BYTES = 64 * 1024 * 1024
# The child's time for the store checks and the question, at the least: a hang of the database
# library never ends, while a busy machine loading an st: model's torch can take minutes.
CHECK_SECONDS = 600.0
CHECK_BYTES_PER_SECOND = 2 * 1024 * 1024  # and one second more per this many bytes of stores
TIMEOUT_ENV = "WIKIGR_VALIDATE_TIMEOUT"  # sets the child's time instead (seconds)
REPORT_PREFIX = "wikigr-checks: "  # the child's report line on its standard output
IN_CHILD = False  # set by wikigr.validate.child: the checks run here, not in another child


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
        _check_keyword(path, store, report)
        if manifest is not None:
            _check_vector_files(path, manifest, report)
    except WikigrError as exc:
        report.add("store", False, exc.message)
    finally:
        store.close()


def _check_keyword(path: Path, store: Store, report: ValidationReport) -> None:
    """The BM25 index, loaded by the code queries load it with (never unpickling), every vocabulary
    entry checked, and every chunk it names held by the store."""
    folder = path / KEYWORD_DIR
    if not folder.exists() and not folder.is_symlink():
        report.add("keyword_index", True, f"absent ({KEYWORD_DIR}/): queries skip keyword search")
        return
    if folder.is_symlink() or not folder.is_dir():
        report.add("keyword_index", False, f"{KEYWORD_DIR} is a symbolic link or not a folder")
        return
    odd = [p.name for p in folder.iterdir() if p.is_symlink() or not p.is_file()]
    if odd:
        report.add("keyword_index", False, f"{KEYWORD_DIR}/{odd[0]} is a symbolic link or not a file")
        return
    try:
        index = KeywordIndex.load(folder)
        index.verify()
    except InvalidPackError as exc:
        report.add("keyword_index", False, exc.message)
        return
    held = set(store.chunk_ids())
    unknown = [chunk for chunk in index.chunk_ids if chunk not in held]
    if unknown:
        detail = f"{KEYWORD_DIR}/{CHUNK_IDS_FILE} names {len(unknown)} chunks the store does not hold"
        report.add("keyword_index", False, f"{detail}, e.g. {unknown[0][:80]!r}")
    else:
        report.add("keyword_index", True, f"{len(index)} chunks indexed, all in the store")


def _check_vector_files(path: Path, manifest: Manifest, report: ValidationReport) -> None:
    """The pack's folders of vectors, when it has them, loaded as queries load them: the lexicon
    (questions in other languages) and the definitions (how-to questions)."""
    loaders: list[tuple[str, Callable[[Path, int], Lexicon | Definitions | None], str]] = [
        ("lexicon", Lexicon.load, "{} words for questions in other languages"),
        ("definitions", Definitions.load, "{} APIs defined, for how-to questions"),
    ]
    for name, load, says in loaders:
        try:
            found = load(path, manifest.embedder.dimension)
        except InvalidPackError as exc:
            report.add(name, False, exc.message)
            continue
        if found is not None:
            report.add(name, True, says.format(len(found.vectors)))


def _check_query(path: Path, manifest: Manifest, report: ValidationReport) -> None:
    """Open the pack as an agent does (read-only, no Claude) and answer one question."""
    question = manifest.description.strip() or manifest.name
    try:
        with open_agent(path, llm=None) as agent:
            result = agent.query(question[:500])
        report.add("query", True, f"answered with {len(result.sources)} sources (profile {result.profile})")
    except WikigrError as exc:
        report.add("query", False, exc.message)
    except Exception as exc:  # noqa: BLE001 - a pack no query can use is invalid, whatever the cause
        report.add("query", False, f"{type(exc).__name__}: {one_line(exc)}")


def database_checks(path: Path, query: bool) -> list[Check]:
    """The checks that open the store, in this process: the store (or each shard, as a pack of its
    own), then, when ``query`` is set and they passed, answering a question with the agent."""
    report = ValidationReport(path)
    try:
        manifest: Manifest | None = load_manifest(path / layout.MANIFEST_FILE)
    except WikigrError:
        manifest = None  # the parent reports it
    if manifest is not None and manifest.shards:  # a pack in shards: each shard is a pack
        validate_shards(path, manifest, report)
    else:
        _check_store(path, manifest, report)
    if query and manifest is not None and report.ok:
        _check_query(path, manifest, report)
    return report.checks


def check_timeout(path: Path) -> float:
    """The seconds the child may take: ``$WIKIGR_VALIDATE_TIMEOUT``, else CHECK_SECONDS and more
    for large stores (every value of every table is read)."""
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    if raw:
        return seconds_setting(TIMEOUT_ENV, raw)
    stores = [path / layout.STORE_FILE, *(path / SHARDS_DIR).glob(f"*/{layout.STORE_FILE}")]  # or its shards
    size = sum(store.stat().st_size for store in stores if store.is_file() and not store.is_symlink())
    return CHECK_SECONDS + size / CHECK_BYTES_PER_SECOND


def _isolated_checks(path: Path, query: bool, timeout: float | None) -> list[Check]:
    """:func:`database_checks` in a child process; its crash, hang or garbled answer is a failed
    ``store`` check."""
    seconds = check_timeout(path) if timeout is None else timeout
    command = [sys.executable, "-m", "wikigr.validate.child", str(path), *(["--query"] if query else [])]
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
        last = one_line(Exception(errors[-1])) if errors else "no report"
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
    if manifest is not None and manifest.crawl is not None:  # read as `pack update` reads it
        try:
            crawl, crawled = crawl_of(path, manifest)
            report.add(
                "crawl", True, f"{len(crawled.pages)} pages from {', '.join(crawl.seeds if crawl else ())}"
            )
        except WikigrError as exc:
            report.add("crawl", False, exc.message)

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


def validate_shards(path: Path, manifest: Manifest, report: ValidationReport) -> None:
    """The checks of a pack in shards: each shard is where the manifest says, its store has the
    recorded sha256, it is a valid pack itself (``validate_pack``), it has the pack's embedder, and
    the pack's statistics are the sum of the shards'."""
    if (path / layout.STORE_FILE).exists():
        report.add("shards", False, f"a pack in shards has no {layout.STORE_FILE} of its own")
    manifests: list[Manifest] = []
    for record in manifest.shards:
        where = f"shard {record.path}"
        try:
            folder = shard_folder(path, record)
        except InvalidPackError as exc:
            report.add(where, False, exc.message)
            continue
        inner = validate_pack(folder)
        if not inner.ok:
            first = next(c for c in inner.checks if not c.ok)
            report.add(where, False, f"{first.name}: {first.detail}")
            continue
        store = folder / layout.STORE_FILE
        if store_digest(store) != record.sha256.lower():
            report.add(where, False, f"checksum mismatch for {record.path}/{layout.STORE_FILE}")
            continue
        shard = load_manifest(folder / layout.MANIFEST_FILE)
        if shard.name != record.name or shard.embedder != manifest.embedder:
            report.add(where, False, "its name or embedder differs from the pack's manifest")
            continue
        if (shard.stats.articles, shard.stats.chunks) != (record.articles, record.chunks):
            report.add(where, False, "its articles or chunks differ from the pack's manifest")
            continue
        manifests.append(shard)
        report.add(where, True, f"{shard.stats.chunks} chunks, sha256 ok")
    if len(manifests) == len(manifest.shards):
        total, recorded = vars(summed_stats(manifests)), vars(manifest.stats)
        wrong = [k for k in recorded if total[k] != recorded[k]]
        detail = ", ".join(f"{k}: manifest {recorded[k]}, shards {total[k]}" for k in wrong)
        report.add("stats", not wrong, detail or f"summed over {len(manifests)} shards")
