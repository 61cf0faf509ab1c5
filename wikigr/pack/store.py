"""The one module that talks to LadybugDB. Nothing else in wikigr imports the driver.

The store is a single file (``pack.db``) holding the graph and the vectors:

- node tables ``Article``, ``Section``, ``Chunk``, ``Entity``, ``Fact``, ``Category``;
- rel tables ``HAS_SECTION`` (Article→Section), ``HAS_CHUNK`` (Section→Chunk), ``LINKS_TO``
  (Article→Article), ``IN_CATEGORY`` (Article→Category), ``HAS_ENTITY`` (Chunk→Entity),
  ``HAS_FACT`` (Chunk→Fact), ``ENTITY_RELATION`` (Entity→Entity).

Vector search is exact cosine similarity in Cypher (``array_cosine_similarity``) unless the VECTOR
extension can be loaded from the local extension directory and the pack has an HNSW index; wikigr
never installs (downloads) an extension. :attr:`Store.vector_path` says which path runs.

An OpenML pack (``kind="openml"``) holds a Kimball star instead (docs/openml.md): the fact table
``Run``, the dimensions ``Algorithm``, ``Dataset``, ``Task`` and ``Date``, the outrigger
``AlgorithmFamily``, and the rel tables ``USED_ALGORITHM``, ``ON_DATASET``, ``FOR_TASK``,
``RUN_ON_DATE``, ``PART_OF_TASK`` (Dataset→Task) and ``BELONGS_TO_FAMILY`` (Algorithm→AlgorithmFamily).
:meth:`Store.read_query` runs user Cypher behind a read-only guard (:func:`check_read_only`).
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ladybug
import numpy as np

from wikigr.errors import StoreError, UsageError
from wikigr.pack.kind import pack_kind, store_kind
from wikigr.pack.manifest import GraphStats

if TYPE_CHECKING:  # pyarrow is only needed to write a store, not to query one
    import pyarrow as pa

CHUNK_INDEX = "chunk_embedding_idx"

#: The kind of pack a store holds: a registered kind's name (wikigr.pack.kind).
StoreKind = str


# -- the read-only guard for user Cypher ------------------------------------------------------

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


def files_state(path: Path) -> tuple[list[int] | None, list[int] | None]:
    """The state of a store's file and of its write-ahead log (:func:`wikigr.home.file_identity`):
    a read-only store whose files no longer have the state they had when it was opened (a
    ``pack update`` swapped the folder, a build wrote in place) is not what its path now holds."""
    from wikigr.home import file_identity

    return file_identity(path), file_identity(path.with_name(path.name + ".wal"))


MIN_QUERY_BUFFER_POOL = 1 << 30


def query_buffer_pool_size(path: Path) -> int:
    """The buffer pool for answering questions from the store at ``path``: 1 GiB, or 8 times the
    store's size when that is more, or LadybugDB's default (0) when that is more than it gives.

    Opening a database with the default pool (~80% of the machine's memory) costs ~20 ms more,
    spent setting up a pool that the retrieval stages' queries (bounded by the store's size) never
    fill. User Cypher (``wikigr cypher``, OpenML tools) keeps the default."""
    try:
        size = sum(p.stat().st_size for p in (path, path.with_name(path.name + ".wal")) if p.exists())
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (OSError, ValueError, AttributeError):
        return 0
    wanted = max(MIN_QUERY_BUFFER_POOL, 8 * size)
    return wanted if wanted < 0.8 * memory else 0


@dataclass(frozen=True)
class ChunkHit:
    """A chunk found by search, with what a citation needs."""

    chunk_id: str
    score: float
    text: str
    article_id: str
    article_title: str
    url: str
    section_id: str
    section_title: str
    anchor: str


_FIRST_OPEN = threading.Lock()
_native_loaded = False


def _open_database(path: Path, read_only: bool, buffer_pool_size: int) -> Any:
    """``ladybug.Database``. LadybugDB loads its native module on the first open, and two threads
    doing that at once make one of them fail: the first open in a process is serialised."""
    global _native_loaded
    if _native_loaded:
        return ladybug.Database(str(path), read_only=read_only, buffer_pool_size=buffer_pool_size)
    with _FIRST_OPEN:
        db = ladybug.Database(str(path), read_only=read_only, buffer_pool_size=buffer_pool_size)
        _native_loaded = True
        return db


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


#: What LadybugDB (0.22) says of a file shorter than its header records: "Cannot read checkpoint:
#: catalog page range starts at 184 and spans 2 pages, outside the database file with 1 pages"
#: (or "header expects N database pages, but the file has M pages"), then "The database may be
#: checkpointing; please retry later."
_SHORT_FILE = re.compile(r"Cannot read checkpoint: .*(outside the database file|but the file has)")
SHORT_FILE_WATCH = 0.5  # seconds a short file is watched for a writer before it is called damaged


def _cannot_open(path: Path, state: Any, exc: BaseException) -> str:
    """The one line for a store that would not open (``state``: its :func:`files_state` before).

    A file shorter than its header records is what another process checkpointing it leaves for a
    moment (``pack graph`` rewrites a store in place; readers may open it meanwhile), and LadybugDB
    says to retry; but it is also what a truncated copy or download is, which no retry mends.
    So the files are watched a moment: a writer changes them, a damaged file stays as it was."""
    message = _one_line(exc)
    if _SHORT_FILE.search(message):
        time.sleep(SHORT_FILE_WATCH)
        if files_state(path) == state:
            return (
                f"cannot open the pack's database ({path.name} is damaged: the file is shorter than "
                f"its header records): {path}"
            )
    return f"cannot open store {path}: {message}"


def vectors_to_arrow(vectors: np.ndarray) -> pa.FixedSizeListArray:
    """A (n, dim) float32 matrix as an Arrow fixed-size-list column (what FLOAT[dim] loads from)."""
    import pyarrow as pa

    matrix = np.ascontiguousarray(vectors, dtype=np.float32)
    n, dim = matrix.shape if matrix.ndim == 2 else (0, 0)
    return pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), dim or 1)[:n]


class Store:
    """A pack's LadybugDB database. Open it with :meth:`create` or :meth:`open`; close it after use."""

    def __init__(self, path: Path, db: Any, read_only: bool, kind: StoreKind = "documents") -> None:
        self.path = path
        self.read_only = read_only
        self.kind: StoreKind = kind
        self._db = db
        self._conn: Any = ladybug.Connection(db)
        self.opened_state: Any = None  # the files' state when opened (see files_state)
        self.vector_path = "exact"
        if self._load_vector_extension() and self._has_chunk_index():
            self.vector_path = "hnsw"

    # -- opening -----------------------------------------------------------------------------

    @classmethod
    def create(cls, path: Path, dim: int, kind: StoreKind = "documents") -> Store:
        """Create a new, empty store with the wikigr schema of ``kind`` at ``path`` (which must not
        exist): the kind's tables (:meth:`wikigr.pack.kind.PackKind.ddl`): the document graph, or
        the OpenML star (``kind="openml"``)."""
        if path.exists():
            raise StoreError(f"store already exists: {path}")
        try:
            db = ladybug.Database(str(path))
        except RuntimeError as exc:
            raise StoreError(f"cannot create store {path}: {_one_line(exc)}") from exc
        store = cls(path, db, read_only=False, kind=kind)
        for ddl in pack_kind(kind).ddl(dim):
            store._run(ddl)
        return store

    @classmethod
    def open(
        cls, path: Path, read_only: bool = True, kind: StoreKind | None = None, buffer_pool_size: int = 0
    ) -> Store:
        """Open an existing store; read-only unless asked otherwise. ``kind`` is the schema it
        must have (None: whichever it has). ``buffer_pool_size``: bytes of memory the database
        may use (0: LadybugDB's default, ~80% of the machine's; see :func:`query_buffer_pool_size`)."""
        if not path.is_file():
            raise StoreError(f"store not found: {path}")
        state = files_state(path)
        try:
            db = _open_database(path, read_only, buffer_pool_size)
        except (RuntimeError, ValueError, MemoryError) as exc:  # a damaged file raises any
            raise StoreError(_cannot_open(path, state, exc)) from exc
        store = cls(path, db, read_only=read_only)
        store.opened_state = state
        tables = store.tables()
        store.kind = store_kind(tables) if kind is None else kind
        missing = [t for t in pack_kind(store.kind).tables if t not in tables]
        if missing:
            store.close()
            raise StoreError(f"store {path} lacks tables: {', '.join(missing)}")
        return store

    @property
    def members(self) -> list[Store]:
        """The stores whose files hold what this one reads: itself (a pack in shards: its shards')."""
        return [self]

    def close(self) -> None:
        """Checkpoint (when writable) and release the database."""
        if self._db is None:
            return
        if not self.read_only:
            with suppress(RuntimeError):
                self._conn.execute("CHECKPOINT")
        self._conn.close()
        self._db.close()
        self._db = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- low level -----------------------------------------------------------------------------

    def _run(self, query: str, params: dict[str, Any] | None = None) -> Any:
        try:
            return self._conn.execute(query, params or {})
        except RuntimeError as exc:
            raise StoreError(f"store query failed: {_one_line(exc)}") from exc

    def rows(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        """Run a Cypher query and return all rows."""
        result = self._run(query, params)
        try:
            rows: list[list[Any]] = result.get_all()
        except (RuntimeError, UnicodeDecodeError) as exc:  # a damaged store's strings
            raise StoreError(f"store query failed: {_one_line(exc)}") from exc
        return rows

    def tables(self) -> list[str]:
        return [row[1] for row in self.rows("CALL show_tables() RETURN *")]

    def _load_vector_extension(self) -> bool:
        # LOAD only: an extension that is not already installed locally is never downloaded.
        try:
            self._conn.execute("LOAD EXTENSION VECTOR")
        except RuntimeError:
            return False
        return True

    def _has_chunk_index(self) -> bool:
        try:
            indexes = self._conn.execute("CALL show_indexes() RETURN *").get_all()
        except RuntimeError:
            return False
        return any(CHUNK_INDEX in [str(v) for v in row] for row in indexes)

    # -- writing -------------------------------------------------------------------------------

    def copy(self, table: str, data: pa.Table) -> None:
        """Bulk-load an Arrow table into a node or rel table (``COPY ... FROM``)."""
        if data.num_rows == 0:
            return
        if table not in pack_kind(self.kind).tables:
            raise StoreError(f"unknown table {table}")
        arrow_input = data  # noqa: F841  (scanned by name by COPY below)
        self._run(f"COPY {table} FROM arrow_input")

    def build_vector_index(self) -> str:
        """Create the HNSW index when the VECTOR extension is available; return the path in use."""
        if self._load_vector_extension():
            self._run(f"CALL CREATE_VECTOR_INDEX('Chunk', '{CHUNK_INDEX}', 'embedding', metric := 'cosine')")
            self.vector_path = "hnsw"
        return self.vector_path

    def checkpoint(self) -> None:
        self._run("CHECKPOINT")

    # -- reading -------------------------------------------------------------------------------

    def count(self, table: str) -> int:
        kind = pack_kind(self.kind)
        if table in kind.node_tables:
            return int(self.rows(f"MATCH (n:{table}) RETURN count(n)")[0][0])
        if table in kind.rel_tables:
            return int(self.rows(f"MATCH ()-[r:{table}]->() RETURN count(r)")[0][0])
        raise StoreError(f"unknown table {table}")

    def stats(self) -> dict[str, int]:
        """Every count of the manifest's :class:`GraphStats`: those the store's kind counts (its
        tables' rows), 0 for the others (another kind's)."""
        counted = pack_kind(self.kind).stats
        return {f.name: self.count(counted[f.name]) if f.name in counted else 0 for f in fields(GraphStats)}

    def verify(self) -> None:
        """Read every value of every table, and every relationship's ends, once (aggregates, so
        nothing is held in memory: ~0.3 s for 10,000 articles). A store damaged anywhere in its
        data — a bad export or disk, checksums that match the damage — fails here with the
        :class:`StoreError` a query touching the damage would raise, instead of in a query later.
        """
        for name, kind in self.rows("CALL show_tables() RETURN name, type"):
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(name)):
                raise StoreError(f"store {self.path} has a table with an invalid name: {name!r}")
            node = str(kind).upper() == "NODE"
            reads = ["count(*)"] if node else ["count(*)", "sum(offset(id(a)))", "sum(offset(id(b)))"]
            for column, type_name in self.rows(f"CALL table_info('{name}') RETURN name, type"):
                value = f"n.`{str(column).replace('`', '')}`"
                type_name = str(type_name)
                if re.fullmatch(r"(FLOAT|DOUBLE)\[\d+\]", type_name):
                    reads.append(f"sum(list_sum({value}))")
                elif type_name == "STRING":
                    reads.append(f"sum(size(lower({value})))")  # lower() refuses invalid UTF-8
                elif type_name in ("INT64", "INT32", "DOUBLE", "FLOAT"):
                    reads.append(f"sum({value})")
                else:
                    reads.append(f"sum(size(lower(CAST({value} AS STRING))))")
            pattern = f"(n:{name})" if node else f"(a)-[n:{name}]->(b)"
            try:
                self.rows(f"MATCH {pattern} RETURN {', '.join(reads)}")
            except StoreError as exc:
                raise StoreError(f"store {self.path} is damaged (table {name}): {exc.message}") from exc

    def arrow(self, query: str, params: dict[str, Any] | None = None) -> pa.Table:
        """Run a Cypher query and return the result as an Arrow table (fast for many rows)."""
        result = self._run(query, params)
        try:
            table: pa.Table = result.get_as_arrow(chunk_size=-1)
        except (RuntimeError, UnicodeDecodeError) as exc:
            raise StoreError(f"store query failed: {_one_line(exc)}") from exc
        return table

    def read_query(
        self, query: str, params: dict[str, Any] | None = None, max_rows: int = 1000, timeout_ms: int = 10_000
    ) -> tuple[list[str], list[list[Any]], bool]:
        """Run user Cypher behind :func:`check_read_only`: ``(columns, rows, truncated)``.

        At most ``max_rows`` rows are returned (``truncated`` says there were more); the query is
        interrupted after ``timeout_ms``.
        """
        check_read_only(query)
        self._conn.set_query_timeout(int(timeout_ms))
        try:
            try:
                result = self._conn.execute(query, params or {})
            except RuntimeError as exc:
                message = _one_line(exc)
                if message.startswith(("Parser exception", "Binder exception", "Catalog exception")):
                    raise UsageError(f"bad Cypher: {message}") from exc
                if message == "Interrupted.":
                    raise StoreError(f"the query was interrupted after {timeout_ms / 1000:g}s") from exc
                raise StoreError(f"store query failed: {message}") from exc
            columns = [str(c) for c in result.get_column_names()]
            rows: list[list[Any]] = []
            truncated = False
            while result.has_next():
                if len(rows) >= max_rows:
                    truncated = True
                    break
                rows.append(result.get_next())
        except (RuntimeError, UnicodeDecodeError) as exc:
            raise StoreError(f"store query failed: {_one_line(exc)}") from exc
        finally:
            self._conn.set_query_timeout(0)
        return columns, rows, truncated

    def search_chunks(self, query_vector: Sequence[float], k: int) -> list[ChunkHit]:
        """The top ``k`` chunks by cosine similarity to ``query_vector``, best first."""
        return self.chunk_details(self.nearest_chunks(query_vector, k))

    def nearest_chunks(self, query_vector: Sequence[float], k: int) -> dict[str, float]:
        """The ids of the top ``k`` chunks by cosine similarity to ``query_vector`` with their
        similarity, best first (:meth:`chunk_details` gives their citations)."""
        vector = [float(x) for x in query_vector]
        if self.vector_path == "hnsw":
            top = self.rows(
                f"CALL QUERY_VECTOR_INDEX('Chunk', '{CHUNK_INDEX}', $q, $k) RETURN node.id, 1.0 - distance",
                {"q": vector, "k": int(k)},
            )
        else:
            # Rank on (id, score) only: carrying whole nodes through ORDER BY is several times slower.
            top = self.rows(
                "MATCH (c:Chunk) RETURN c.id, array_cosine_similarity(c.embedding, $q) AS score "
                "ORDER BY score DESC LIMIT $k",
                {"q": vector, "k": int(k)},
            )
        return dict(sorted(((row[0], float(row[1])) for row in top), key=lambda pair: (-pair[1], pair[0])))

    def chunk_details(self, scores: dict[str, float]) -> list[ChunkHit]:
        """Citations for the chunks in ``scores`` (id -> score), best score first."""
        if not scores:
            return []
        # Three primary-key lookups (UNWIND): the path pattern with `WHERE c.id IN $ids` scans
        # every chunk, 4-6 ms at 10,000 chunks against about 1.5 ms.
        chunks = self._chunks_by_id(list(scores), "c.text, c.section_id, c.article_id")
        sections = {
            r[0]: r
            for r in self.rows(
                "UNWIND $ids AS i MATCH (s:Section {id: i}) RETURN s.id, s.article_id, s.title, s.anchor",
                {"ids": list({r[2] for r in chunks})},
            )
        }
        articles = {
            r[0]: r
            for r in self.rows(
                "UNWIND $ids AS i MATCH (a:Article {id: i}) RETURN a.id, a.title, a.url",
                {"ids": list({r[3] for r in chunks})},
            )
        }
        hits = []
        for chunk_id, text, section_id, article_id in chunks:
            section, article = sections.get(section_id), articles.get(article_id)
            if section is None or article is None or section[1] != article_id:
                continue  # a chunk outside the Article -> Section -> Chunk tree is not cited
            hits.append(
                ChunkHit(
                    chunk_id=chunk_id,
                    score=scores[chunk_id],
                    text=text,
                    article_id=article_id,
                    article_title=article[1],
                    url=article[2],
                    section_id=section_id,
                    section_title=section[2],
                    anchor=section[3] or "",
                )
            )
        return sorted(hits, key=lambda h: (-h.score, h.chunk_id))

    def chunk_similarities(self, chunk_ids: list[str], query_vector: Sequence[float]) -> dict[str, float]:
        """Cosine similarity of each of ``chunk_ids`` to ``query_vector``."""
        rows = self._chunks_by_id(
            chunk_ids, "array_cosine_similarity(c.embedding, $q)", {"q": [float(x) for x in query_vector]}
        )
        return {r[0]: float(r[1]) for r in rows}

    def chunk_vectors(self, chunk_ids: list[str]) -> dict[str, np.ndarray]:
        rows = self._chunks_by_id(chunk_ids, "c.embedding")
        return {r[0]: np.asarray(r[1], dtype=np.float32) for r in rows}

    def chunk_texts(self, chunk_ids: list[str]) -> dict[str, str]:
        """The text of each of the given chunks (id -> text)."""
        return {str(r[0]): str(r[1]) for r in self._chunks_by_id(chunk_ids, "c.text")}

    def _chunks_by_id(
        self, chunk_ids: list[str], expression: str, params: dict[str, Any] | None = None
    ) -> list[list[Any]]:
        """``(id, expression)`` of the given chunks, found by one primary-key lookup each (UNWIND):
        a scan with a list test (``WHERE c.id IN $ids``) is several times slower at 10,000 chunks."""
        return self.rows(
            f"UNWIND $ids AS i MATCH (c:Chunk {{id: i}}) RETURN c.id, {expression}",
            {"ids": chunk_ids, **(params or {})},
        )

    def article_degrees(self, article_ids: list[str], within: bool = True) -> dict[str, int]:
        """LINKS_TO degree (in + out) of each article; ``within``: counting only links among them."""
        if within:
            rows = self.rows(
                "MATCH (a:Article)-[:LINKS_TO]-(b:Article) WHERE a.id IN $ids AND b.id IN $ids "
                "RETURN a.id, count(DISTINCT b)",
                {"ids": article_ids},
            )
        else:
            rows = self.rows(
                "MATCH (a:Article)-[:LINKS_TO]-(b:Article) WHERE a.id IN $ids RETURN a.id, count(DISTINCT b)",
                {"ids": article_ids},
            )
        degrees = dict.fromkeys(article_ids, 0)
        degrees.update({r[0]: int(r[1]) for r in rows})
        return degrees

    def linked_articles(self, article_ids: list[str]) -> list[str]:
        """Articles linked to or from any of ``article_ids`` (the given ones excluded), most links first."""
        rows = self.rows(
            "MATCH (a:Article)-[r:LINKS_TO]-(b:Article) WHERE a.id IN $ids AND NOT b.id IN $ids "
            "RETURN b.id, count(r) AS n ORDER BY n DESC, b.id",
            {"ids": article_ids},
        )
        return [r[0] for r in rows]

    def best_chunk_per_article(self, article_ids: list[str], query_vector: Sequence[float]) -> list[ChunkHit]:
        """For each article, its chunk most similar to ``query_vector``."""
        rows = self.rows(
            "MATCH (c:Chunk) WHERE c.article_id IN $ids "
            "RETURN c.article_id, c.id, array_cosine_similarity(c.embedding, $q) AS score",
            {"ids": article_ids, "q": [float(x) for x in query_vector]},
        )
        best: dict[str, tuple[str, float]] = {}
        for article_id, chunk_id, score in rows:
            if article_id not in best or score > best[article_id][1]:
                best[article_id] = (chunk_id, float(score))
        return self.chunk_details({chunk_id: score for chunk_id, score in best.values()})

    # -- the entity graph ----------------------------------------------------------------------

    def link_anchors(self, source: str | None = None) -> list[tuple[str, str, str]]:
        """Every stored link text (of the article ``source``, or of all): (source article id,
        target article id, "FRAGMENT\\tTEXT"). Empty for a store written before link texts were kept."""
        if not self._has_column("LINKS_TO", "anchors"):
            return []
        where = "WHERE a.id = $id " if source is not None else ""
        rows = self.rows(
            f"MATCH (a:Article)-[r:LINKS_TO]->(b:Article) {where}RETURN a.id, b.id, r.anchors",
            {"id": source} if source is not None else None,
        )
        return [(a, b, anchor) for a, b, anchors in rows for anchor in anchors or []]

    def chunk_matrix(self) -> tuple[list[str], list[str], np.ndarray]:
        """Every chunk's id, article id and embedding: ``(ids, article ids, matrix)``, the embeddings
        as one (n, dim) float32 matrix (through Arrow: no per-row Python lists), row i for ids[i].
        A chunk without an embedding raises :class:`StoreError`."""
        table = self.arrow("MATCH (c:Chunk) RETURN c.id, c.article_id, c.embedding")
        ids = [str(v) for v in table.column(0).to_pylist()]
        articles = [str(v) for v in table.column(1).to_pylist()]
        column = table.column(2).combine_chunks()
        if column.null_count:
            raise StoreError(f"{column.null_count} chunks have no embedding")
        import pyarrow  # loaded by the query already

        if isinstance(column, pyarrow.FixedSizeListArray):  # FLOAT[dim]: its values, no pyarrow.compute
            start, size = column.offset * column.type.list_size, len(column) * column.type.list_size
            values = column.values.to_numpy(zero_copy_only=False)[start : start + size]
        else:  # ListArray.flatten imports pyarrow.compute (80 ms on a fresh process)
            values = column.flatten().to_numpy(zero_copy_only=False)
        flat = np.asarray(values, dtype=np.float32)
        if len(ids) and flat.size % len(ids):
            raise StoreError("chunk embeddings of different lengths")
        return ids, articles, flat.reshape(len(ids), flat.size // len(ids) if ids else 0)

    def article_urls(self) -> dict[str, str]:
        """Every article's id -> its cited URL."""
        return {str(r[0]): str(r[1] or r[0]) for r in self.rows("MATCH (a:Article) RETURN a.id, a.url")}

    def article_in_degrees(self) -> dict[str, int]:
        """For each article that other articles link to: how many of them do (LINKS_TO, self-links
        not counted)."""
        rows = self.rows(
            "MATCH (a:Article)-[:LINKS_TO]->(b:Article) WHERE a.id <> b.id RETURN b.id, count(DISTINCT a)"
        )
        return {str(r[0]): int(r[1]) for r in rows}

    def chunk_places(self) -> list[tuple[str, str, str]]:
        """Every chunk as (article id, its section's anchor, text), in chunk id order (the order
        of :meth:`graph_inputs`)."""
        rows = self.rows(
            "MATCH (s:Section)-[:HAS_CHUNK]->(c:Chunk) RETURN c.article_id, s.anchor, c.text ORDER BY c.id"
        )
        return [(r[0], r[1] or "", r[2]) for r in rows]

    def graph_inputs(self) -> list[tuple[str, str, str, list[float]]]:
        """Every chunk as (id, article title, text, embedding), in id order: what the graph build reads."""
        rows = self.rows(
            "MATCH (a:Article)-[:HAS_SECTION]->(s:Section)-[:HAS_CHUNK]->(c:Chunk) "
            "RETURN c.id, a.title, c.text, c.embedding ORDER BY c.id"
        )
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    def clear_graph(self, dim: int) -> None:
        """Delete every entity and fact (and so their edges). A store written before entities had
        vectors gets the ``Entity.embedding`` column (FLOAT[dim]) here."""
        self._run("MATCH (e:Entity) DETACH DELETE e")
        self._run("MATCH (f:Fact) DETACH DELETE f")
        if not self._has_column("Entity", "embedding"):
            self._run(f"ALTER TABLE Entity ADD embedding FLOAT[{dim}]")

    def _has_column(self, table: str, column: str) -> bool:
        return any(row[1] == column for row in self.rows(f"CALL table_info('{table}') RETURN *"))

    @property
    def has_entities(self) -> bool:
        """Whether the store holds an entity graph."""
        return bool(self.rows("MATCH (e:Entity) RETURN e.id LIMIT 1"))

    @property
    def has_entity_vectors(self) -> bool:
        """Whether the store has the ``Entity.embedding`` column (stores written before it do not)."""
        return self._has_column("Entity", "embedding")

    def nearest_entity(self, query_vector: Sequence[float]) -> tuple[str, float] | None:
        """The entity whose name vector is nearest to ``query_vector`` (exact cosine), with the
        similarity; None when no entity has a vector."""
        rows = self.rows(
            "MATCH (e:Entity) WHERE e.embedding IS NOT NULL "
            "RETURN e.id, array_cosine_similarity(e.embedding, $q) AS score ORDER BY score DESC LIMIT 1",
            {"q": [float(x) for x in query_vector]},
        )
        return (rows[0][0], float(rows[0][1])) if rows else None

    def sample_vectors(self, n: int) -> np.ndarray:
        """The embeddings of up to ``n`` chunks spread evenly over the pack (in id order)."""
        ids = self.chunk_ids()
        picked = ids[:: max(1, len(ids) // n)][:n] if ids else []
        vectors = self.chunk_vectors(picked)
        return np.asarray([vectors[i] for i in picked if i in vectors], dtype=np.float32)

    def chunk_ids(self) -> list[str]:
        """Every chunk id, in id order."""
        return [r[0] for r in self.rows("MATCH (c:Chunk) RETURN c.id ORDER BY c.id")]

    def _columns(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        """A query's result as columns (through Arrow: several times faster than rows for big results)."""
        table = self._run(query, params).get_as_arrow()
        return [table.column(i).to_pylist() for i in range(table.num_columns)]

    def chunk_articles(self) -> list[tuple[str, str, str]]:
        """Every chunk as (chunk id, article id, article title)."""
        # Rows, not Arrow columns: a fresh query process then needs no pyarrow (an import of ~0.1 s).
        rows = self.rows(
            "MATCH (a:Article)-[:HAS_SECTION]->(:Section)-[:HAS_CHUNK]->(c:Chunk) RETURN c.id, a.id, a.title"
        )
        return [(r[0], r[1], r[2]) for r in rows]

    def entities(self) -> list[tuple[str, str]]:
        """Every entity as (id, type), in id order."""
        ids, types = self._columns("MATCH (e:Entity) RETURN e.id, e.type ORDER BY e.id")
        return list(zip(ids, types, strict=True))

    def entity_mentions(self) -> list[tuple[str, str]]:
        """Every HAS_ENTITY edge as (chunk id, entity id)."""
        chunks, entities = self._columns("MATCH (c:Chunk)-[:HAS_ENTITY]->(e:Entity) RETURN c.id, e.id")
        return list(zip(chunks, entities, strict=True))

    def entity_relations(self, skip_types: Sequence[str] = ()) -> list[tuple[str, str, str, float]]:
        """Every ENTITY_RELATION edge as (from, to, type, weight), but those of ``skip_types``."""
        columns = self._columns(
            "MATCH (a:Entity)-[r:ENTITY_RELATION]->(b:Entity) WHERE NOT r.type IN $skip "
            "RETURN a.id, b.id, r.type, r.weight",
            {"skip": list(skip_types)},
        )
        return [(a, b, t, float(w)) for a, b, t, w in zip(*columns, strict=True)]

    def entity_names(self, entity_ids: list[str]) -> dict[str, str]:
        rows = self.rows("MATCH (e:Entity) WHERE e.id IN $ids RETURN e.id, e.name", {"ids": entity_ids})
        return {r[0]: r[1] for r in rows}

    def entity_details(self, entity_ids: list[str]) -> dict[str, tuple[str, str]]:
        """Each entity's (name, type), by id (ids that are not entities are left out)."""
        rows = self._entities_by_id(entity_ids, "e.name, e.type")
        return {r[0]: (r[1], r[2] or "") for r in rows}

    def _entities_by_id(self, entity_ids: list[str], expression: str) -> list[list[Any]]:
        """``(id, expression)`` of the given entities, one primary-key lookup each."""
        return self.rows(
            f"UNWIND $ids AS i MATCH (e:Entity {{id: i}}) RETURN e.id, {expression}", {"ids": entity_ids}
        )

    def chunk_entities(self, chunk_ids: list[str], per_chunk: int) -> list[tuple[str, str]]:
        """The entities each of ``chunk_ids`` mentions, at most ``per_chunk`` each, the rarest in
        the pack first: (chunk id, entity id)."""
        rows = self.rows(
            "UNWIND $ids AS i MATCH (c:Chunk {id: i})-[:HAS_ENTITY]->(e:Entity) "
            "WITH c, e MATCH (e)<-[:HAS_ENTITY]-(x:Chunk) WITH c.id AS chunk, e.id AS entity, count(x) AS df "
            "RETURN chunk, entity ORDER BY chunk, df, entity",
            {"ids": chunk_ids},
        )
        kept: dict[str, int] = {}
        found: list[tuple[str, str]] = []
        for chunk, entity in rows:
            if kept.get(chunk, 0) < per_chunk:
                kept[chunk] = kept.get(chunk, 0) + 1
                found.append((chunk, entity))
        return found

    def entity_edges(self, entity_ids: list[str], limit: int) -> list[tuple[str, str, str, float]]:
        """Up to ``limit`` ENTITY_RELATION edges touching ``entity_ids`` (either end): (from, to,
        type, weight); named relations before co-occurrences, heavier first."""
        edges: set[tuple[str, str, str, float]] = set()
        for pattern in (
            "(a:Entity {id: i})-[r:ENTITY_RELATION]->(b:Entity)",
            "(a:Entity)-[r:ENTITY_RELATION]->(b:Entity {id: i})",
        ):
            rows = self.rows(
                f"UNWIND $ids AS i MATCH {pattern} RETURN a.id, b.id, r.type, r.weight", {"ids": entity_ids}
            )
            edges.update((r[0], r[1], r[2] or "", float(r[3] or 0.0)) for r in rows)
        ranked = sorted(edges, key=lambda e: (e[2] == "CO_OCCURS", -e[3], e[0], e[1], e[2]))
        return ranked[:limit]

    def entity_chunks(self, entity_id: str, limit: int) -> list[str]:
        """Up to ``limit`` chunks that mention the entity, in id order."""
        rows = self.rows(
            "MATCH (c:Chunk)-[:HAS_ENTITY]->(e:Entity {id: $id}) RETURN c.id ORDER BY c.id LIMIT $limit",
            {"id": entity_id, "limit": int(limit)},
        )
        return [r[0] for r in rows]

    def article_edges(self, article_ids: list[str], limit: int) -> list[tuple[str, str, int]]:
        """Up to ``limit`` LINKS_TO edges touching ``article_ids`` (either end), most used first:
        (from, to, count). Self-links are left out."""
        rows = self.rows(
            "MATCH (a:Article)-[r:LINKS_TO]->(b:Article) "
            "WHERE (a.id IN $ids OR b.id IN $ids) AND a.id <> b.id "
            "RETURN a.id, b.id, r.count ORDER BY r.count DESC, a.id, b.id LIMIT $limit",
            {"ids": article_ids, "limit": int(limit)},
        )
        return [(r[0], r[1], int(r[2] or 1)) for r in rows]

    def article_titles(self, article_ids: list[str]) -> dict[str, tuple[str, str]]:
        """Each article's (title, cited URL), by id."""
        rows = self.rows(
            "UNWIND $ids AS i MATCH (a:Article {id: i}) RETURN a.id, a.title, a.url", {"ids": article_ids}
        )
        return {r[0]: (r[1] or r[0], r[2] or r[0]) for r in rows}

    def chunk_facts(self, chunk_ids: list[str]) -> list[tuple[str, str, str, str, str]]:
        """The facts stated in these chunks as (chunk id, subject, predicate, object, sentence)."""
        rows = self.rows(
            "MATCH (c:Chunk)-[:HAS_FACT]->(f:Fact) WHERE c.id IN $ids "
            "RETURN c.id, f.subject, f.predicate, f.object, f.text",
            {"ids": chunk_ids},
        )
        return [(r[0], r[1], r[2], r[3], r[4]) for r in rows]

    def entity_paths(
        self, chunk_ids: list[str], hops: int, max_df: int, limit: int
    ) -> list[tuple[str, str, str, int]]:
        """Chunks reached from ``chunk_ids`` through shared entities (Chunk→Entity←Chunk), up to
        ``hops`` such steps, skipping entities mentioned by more than ``max_df`` chunks:
        (start chunk, entity id, reached chunk, hop)."""
        found: list[tuple[str, str, str, int]] = []
        frontier = {c: c for c in chunk_ids}  # reached chunk -> the start chunk it came from
        seen = set(chunk_ids)
        for hop in range(1, hops + 1):
            if not frontier:
                break
            rows = self.rows(
                "MATCH (a:Chunk)-[:HAS_ENTITY]->(e:Entity)<-[:HAS_ENTITY]-(b:Chunk) WHERE a.id IN $ids "
                "WITH a, e, b MATCH (e)<-[:HAS_ENTITY]-(x:Chunk) WITH a, e, b, count(x) AS df "
                "WHERE df <= $max_df AND a.id <> b.id "
                "RETURN a.id, e.id, b.id, df ORDER BY df, b.id LIMIT $limit",
                {"ids": list(frontier), "max_df": int(max_df), "limit": int(limit)},
            )
            nxt: dict[str, str] = {}
            for a, e, b, _ in rows:
                if b in seen:
                    continue
                found.append((frontier[a], e, b, hop))
                seen.add(b)
                nxt[b] = frontier[a]
            frontier = nxt
        return found


@contextmanager
def open_store(path: Path, read_only: bool = True, kind: StoreKind | None = None) -> Iterator[Store]:
    """``with open_store(path) as store:`` — opened and always closed."""
    store = Store.open(path, read_only=read_only, kind=kind)
    try:
        yield store
    finally:
        store.close()
