"""User Cypher: the read-only guard (``wikigr cypher``, the OpenML tools, :meth:`Store.read_query`),
its bounds, and a query run on a pack, in one store or in shards (:func:`read_pack_query`).

:func:`check_read_only` refuses a query that could change anything before it runs; the store is
also opened read-only, so the database refuses writes this check would miss.

A read can still ask for any amount of memory (a cartesian product, ``UNWIND range(1, 10^9)``,
``repeat()``), so :func:`bounded_query` runs it in a child process (``python -m
wikigr.pack.cypher_child``) whose address space is capped (``RLIMIT_AS``), with a bounded buffer
pool, LadybugDB's query timeout, and at most ``max_rows`` rows and :data:`MAX_RESULT_BYTES` read
back: "refused: the query used more than N MiB" or "the query was stopped after N s", one line.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import re
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wikigr.errors import StoreError, UsageError

if TYPE_CHECKING:
    from wikigr.pack.pack import Pack

#: Clauses that write, load, install, attach or change the session: refused in user Cypher.
WRITE_KEYWORDS = frozenset(
    {
        "CREATE", "MERGE", "SET", "DELETE", "DETACH", "REMOVE", "DROP", "ALTER", "COPY", "LOAD",
        "INSTALL", "UNINSTALL", "ATTACH", "USE", "EXPORT", "IMPORT", "CHECKPOINT", "BEGIN",
        "COMMIT", "ROLLBACK", "TRANSACTION", "FOREACH", "MACRO", "SEQUENCE", "NEXTVAL",
        "UPDATE", "INSERT", "TRUNCATE",
    }
)  # fmt: skip
#: The table functions ``CALL`` may run: catalogue reads only.
READ_CALLS = frozenset(
    {"SHOW_TABLES", "TABLE_INFO", "SHOW_CONNECTION", "SHOW_INDEXES", "SHOW_FUNCTIONS", "DB_VERSION"}
)
MAX_QUERY_CHARS = 20_000
MEMORY_MIB = 1024  #: the memory user Cypher may use, beyond what its process starts with
POOL_SHARE = 2  #: the buffer pool is MEMORY_MIB / POOL_SHARE of it
MAX_RESULT_BYTES = 64 * 1024 * 1024  #: rows (pickled) read back from a query, at most
CHILD_SLACK_SECONDS = 120.0  #: the child's start and store opening on a loaded machine
MEMORY_REFUSAL = "refused: the query used more memory than user Cypher may"  # the child's marker


class QueryLimitError(StoreError):
    """User Cypher went past its memory or time cap (one line; exit 1)."""


def _allowed(module: str, name: str) -> bool:
    return (module, name) in {
        ("datetime", "date"), ("datetime", "datetime"), ("datetime", "timedelta"), ("datetime", "timezone"),
        ("decimal", "Decimal"), ("uuid", "UUID"), ("builtins", "set"), ("builtins", "frozenset"),
        ("builtins", "complex"), ("builtins", "bytearray"), ("_codecs", "encode"),
    }  # fmt: skip


class _ValuesUnpickler(pickle.Unpickler):
    """Reads the child's reply: plain values only, never a class or function of another kind."""

    def find_class(self, module: str, name: str) -> Any:
        if not _allowed(module, name):
            raise StoreError(f"the query's child process sent a {module}.{name}: refused")
        return super().find_class(module, name)


def bounded_query(
    path: Path,
    kind: str | None,
    query: str,
    params: dict[str, Any] | None = None,
    max_rows: int = 1000,
    timeout_ms: int = 10_000,
    memory_mib: int = MEMORY_MIB,
    max_bytes: int = MAX_RESULT_BYTES,
) -> tuple[list[str], list[list[Any]], bool]:
    """User Cypher on the store at ``path`` in a child process, under a memory cap of
    ``memory_mib`` MiB and a time cap of ``timeout_ms``: ``(columns, rows, truncated)``, at most
    ``max_rows`` rows and ``max_bytes`` bytes of them (pickled)."""
    check_read_only(query)
    request = {
        "path": str(path), "kind": kind, "query": query, "params": params or {}, "max_rows": max_rows,
        "max_bytes": max(0, max_bytes), "timeout_ms": timeout_ms, "memory": memory_mib << 20,
        "pool": (memory_mib << 20) // POOL_SHARE,
    }  # fmt: skip
    try:
        payload = json.dumps(request).encode()
    except (TypeError, ValueError) as exc:
        raise UsageError(f"Cypher parameters must be JSON values: {exc}") from exc
    import wikigr  # the package root, for the child's PYTHONPATH (wikigr need not be installed)

    root = str(Path(wikigr.__file__).resolve().parent.parent)
    env = {
        **os.environ,
        "MALLOC_ARENA_MAX": "2",  # glibc reserves 64 MiB of address space per thread's arena otherwise
        "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
    }
    seconds = timeout_ms / 1000 + CHILD_SLACK_SECONDS
    try:
        done = subprocess.run(
            [sys.executable, "-m", "wikigr.pack.cypher_child"],
            input=payload, capture_output=True, timeout=seconds, env=env,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise QueryLimitError(f"the query was stopped after {seconds:g} s") from None
    refusal = f"refused: the query used more than {memory_mib} MiB"
    if done.returncode < 0:
        if -done.returncode in (signal.SIGABRT, signal.SIGKILL, signal.SIGSEGV, signal.SIGBUS):
            raise QueryLimitError(f"{refusal} (its process was stopped)")
        raise StoreError(f"the query's process died (signal {-done.returncode})")
    try:
        reply = _ValuesUnpickler(io.BytesIO(done.stdout)).load()
        error = reply.get("error")
    except (pickle.UnpicklingError, EOFError, AttributeError, ValueError, TypeError) as exc:
        last = (done.stderr.decode("utf-8", "replace").strip().splitlines() or ["no reply"])[-1]
        if "MemoryError" in last or "bad_alloc" in last:
            raise QueryLimitError(refusal) from exc
        raise StoreError(f"the query failed (exit {done.returncode}): {last[:300]}") from exc
    if error is not None:
        message = str(reply.get("message", ""))
        if error == "usage":
            raise UsageError(message)
        raise (
            QueryLimitError(refusal if message == MEMORY_REFUSAL else message)
            if error == "limit"
            else StoreError(message)
        )
    return list(reply["columns"]), list(reply["rows"]), bool(reply["truncated"])


_CYPHER_TOKEN = re.compile(
    r"""(?P<comment>//[^\n]*|/\*.*?\*/)"""
    r"""|(?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")"""
    r"""|(?P<quoted>`[^`]*`)"""
    r"""|(?P<word>[A-Za-z_][A-Za-z0-9_]*)"""
    r"""|(?P<other>\S)""",
    re.DOTALL,
)


def check_read_only(query: str) -> None:
    """Refuse Cypher that could change anything (a :class:`UsageError` naming the reason).

    Comments, string literals and back-quoted names are skipped; then any word in
    :data:`WRITE_KEYWORDS` is refused, ``CALL`` may only run a function in :data:`READ_CALLS`,
    and there is one statement. The store is also opened read-only, so the database refuses
    writes this check would miss.
    """
    if not query.strip():
        raise UsageError("the Cypher query is empty")
    if len(query) > MAX_QUERY_CHARS:
        raise UsageError(f"the Cypher query is longer than {MAX_QUERY_CHARS} characters")
    tokens: list[tuple[str, str]] = []
    for match in _CYPHER_TOKEN.finditer(query):
        kind = match.lastgroup or "other"
        if kind == "comment":
            continue
        if kind == "other" and match.group() in ("'", '"', "`"):
            raise UsageError("refused: unterminated quote in the Cypher query")
        tokens.append((kind, match.group()))
    for index, (kind, text) in enumerate(tokens):
        if kind == "other" and text == ";" and any(k != "other" or t != ";" for k, t in tokens[index:]):
            raise UsageError("refused: one Cypher statement at a time")
        if kind != "word":
            continue
        word = text.upper()
        if word in WRITE_KEYWORDS:
            raise UsageError(f"refused: {word} is not allowed (queries are read-only)")
        if word == "CALL":
            following = tokens[index + 1] if index + 1 < len(tokens) else ("", "")
            after = tokens[index + 2] if index + 2 < len(tokens) else ("", "")
            name = following[1].upper()
            if following[0] != "word" or name not in READ_CALLS or after[1] != "(":
                allowed = ", ".join(sorted(READ_CALLS))
                raise UsageError(f"refused: CALL {following[1]} (only {allowed} may be called)")


@dataclass
class QueryRows:
    """What user Cypher returned (:func:`read_pack_query`)."""

    columns: list[str]
    rows: list[list[Any]]
    truncated: bool  # there were more rows than asked for
    shards: list[str] = field(default_factory=list)  # the shards it ran on ([]: a pack in one store)


def read_pack_query(pack: Pack, query: str, max_rows: int = 1000, shard: int | None = None) -> QueryRows:
    """Run user Cypher on ``pack`` behind :func:`check_read_only` (refused before anything opens).

    A pack in one store answers as its store does (:meth:`Store.read_query`). A pack in shards has
    no one database: the query runs on each shard in turn (or on shard number ``shard`` only), and
    every row starts with a ``shard`` column naming the shard's folder (``shards/00``): what a query
    counts, orders or limits is counted, ordered or limited per shard. At most ``max_rows`` rows and
    :data:`MAX_RESULT_BYTES` in all."""
    check_read_only(query)
    records = pack.manifest.shards
    if not records:
        if shard is not None:
            raise UsageError(f"pack {pack.name} is in one store: --shard is for a pack in shards")
        return QueryRows(*bounded_query(pack.store_path, pack.manifest.source_kind, query, max_rows=max_rows))
    if shard is not None and not 0 <= shard < len(records):
        raise UsageError(
            f"--shard must be from 0 to {len(records) - 1}: pack {pack.name} is in {len(records)} shards"
        )
    picked = list(range(len(records))) if shard is None else [shard]
    shards = pack.shards()
    result = QueryRows(["shard"], [], False, [records[i].path for i in picked])
    used = 0  # bytes of rows in: MAX_RESULT_BYTES for the whole pack, not per shard
    for i in picked:
        one = shards[i]  # with max_rows rows (or bytes) in: only whether there are more
        columns, rows, truncated = bounded_query(
            one.store_path,
            one.manifest.source_kind,
            query,
            max_rows=max_rows - len(result.rows),
            max_bytes=MAX_RESULT_BYTES - used,
        )
        used += len(pickle.dumps(rows, protocol=pickle.HIGHEST_PROTOCOL))
        result.columns[1:] = columns
        result.rows += [[records[i].path, *row] for row in rows]
        if truncated:  # a cut shard: the rows stop there, as they would in one store
            result.truncated = True
            break
    return result
