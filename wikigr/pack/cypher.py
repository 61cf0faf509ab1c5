"""User Cypher: the read-only guard (``wikigr cypher``, the OpenML tools, :meth:`Store.read_query`)
and a query run on a pack, in one store or in shards (:func:`read_pack_query`).

:func:`check_read_only` refuses a query that could change anything before it runs; the store is
also opened read-only, so the database refuses writes this check would miss.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from wikigr.errors import UsageError

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
    counts, orders or limits is counted, ordered or limited per shard. At most ``max_rows`` rows in
    all."""
    check_read_only(query)
    records = pack.manifest.shards
    if not records:
        if shard is not None:
            raise UsageError(f"pack {pack.name} is in one store: --shard is for a pack in shards")
        with pack.open_store() as store:
            return QueryRows(*store.read_query(query, max_rows=max_rows))
    if shard is not None and not 0 <= shard < len(records):
        raise UsageError(
            f"--shard must be from 0 to {len(records) - 1}: pack {pack.name} is in {len(records)} shards"
        )
    picked = list(range(len(records))) if shard is None else [shard]
    shards = pack.shards()
    result = QueryRows(["shard"], [], False, [records[i].path for i in picked])
    for i in picked:
        with shards[i].open_store() as store:  # with max_rows rows in: only whether there are more
            columns, rows, truncated = store.read_query(query, max_rows=max_rows - len(result.rows))
        result.columns[1:] = columns
        result.rows += [[records[i].path, *row] for row in rows]
        result.truncated = result.truncated or truncated
    return result
