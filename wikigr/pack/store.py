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
:meth:`Store.read_query` runs user Cypher behind a read-only guard (wikigr.pack.cypher).

Here: opening, writing and raw queries; the reads a question makes are written as Cypher in
wikigr.pack.queries (:class:`~wikigr.pack.queries.StoreQueries`, which :class:`Store` extends);
what readers are typed against is wikigr.pack.reader's :class:`~wikigr.pack.reader.PackStore`.
"""

from __future__ import annotations

import os
import pickle
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ladybug
import numpy as np

from wikigr.errors import StoreError, UsageError
from wikigr.home import files_state
from wikigr.pack.cypher import MEMORY_REFUSAL, QueryLimitError, bounded_query, check_read_only
from wikigr.pack.kind import pack_kind, store_kind
from wikigr.pack.manifest import GraphStats
from wikigr.pack.queries import CHUNK_INDEX, StoreQueries

if TYPE_CHECKING:  # pyarrow is only needed to write a store, not to query one
    import pyarrow as pa

#: The kind of pack a store holds: a registered kind's name (wikigr.pack.kind).
StoreKind = str


MIN_QUERY_BUFFER_POOL = 1 << 30


def query_buffer_pool_size(path: Path) -> int:
    """The buffer pool for answering questions from the store at ``path``: 1 GiB, or 8 times the
    store's size when that is more, or LadybugDB's default (0) when that is more than it gives.

    Opening a database with the default pool (~80% of the machine's memory) costs ~20 ms more,
    spent setting up a pool that the retrieval stages' queries (bounded by the store's size) never
    fill. User Cypher (``wikigr cypher``, OpenML tools) runs in a child process with its own
    bounded pool (:func:`wikigr.pack.cypher.bounded_query`)."""
    try:
        size = sum(p.stat().st_size for p in (path, path.with_name(path.name + ".wal")) if p.exists())
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (OSError, ValueError, AttributeError):
        return 0
    wanted = max(MIN_QUERY_BUFFER_POOL, 8 * size)
    return wanted if wanted < 0.8 * memory else 0


_FIRST_OPEN = threading.Lock()
_native_loaded = False


def _open_database(path: Path, read_only: bool, buffer_pool_size: int, max_db_size: int | None = None) -> Any:
    """``ladybug.Database``. LadybugDB loads its native module on the first open, and two threads
    doing that at once make one of them fail: the first open in a process is serialised.
    ``max_db_size``: the address space LadybugDB reserves (None: its default, 8 TiB)."""
    global _native_loaded
    if _native_loaded:
        return ladybug.Database(
            str(path), read_only=read_only, buffer_pool_size=buffer_pool_size, max_db_size=max_db_size
        )
    with _FIRST_OPEN:
        db = ladybug.Database(
            str(path), read_only=read_only, buffer_pool_size=buffer_pool_size, max_db_size=max_db_size
        )
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


class Store(StoreQueries):
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
        cls,
        path: Path,
        read_only: bool = True,
        kind: StoreKind | None = None,
        buffer_pool_size: int = 0,
        max_db_size: int | None = None,
    ) -> Store:
        """Open an existing store; read-only unless asked otherwise. ``kind`` is the schema it
        must have (None: whichever it has). ``buffer_pool_size``: bytes of memory the database
        may use (0: LadybugDB's default, ~80% of the machine's; see :func:`query_buffer_pool_size`).
        ``max_db_size``: the address space it reserves (None: 8 TiB; user Cypher's child sets it)."""
        if not path.is_file():
            raise StoreError(f"store not found: {path}")
        state = files_state(path)
        try:
            db = _open_database(path, read_only, buffer_pool_size, max_db_size)
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

    def one_store(self) -> Store:
        """This store (the database raw Cypher runs on)."""
        return self

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

    def clear_graph(self, dim: int) -> None:
        """Delete every entity and fact (and so their edges). A store written before entities had
        vectors gets the ``Entity.embedding`` column (FLOAT[dim]) here."""
        self._run("MATCH (e:Entity) DETACH DELETE e")
        self._run("MATCH (f:Fact) DETACH DELETE f")
        if not self.has_column("Entity", "embedding"):
            self._run(f"ALTER TABLE Entity ADD embedding FLOAT[{dim}]")

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
        """Run user Cypher behind :func:`check_read_only`: ``(columns, rows, truncated)``, in a child
        process under a memory cap (:func:`wikigr.pack.cypher.bounded_query`).

        At most ``max_rows`` rows and :data:`~wikigr.pack.cypher.MAX_RESULT_BYTES` are returned
        (``truncated`` says there were more); the query is interrupted after ``timeout_ms``.
        """
        return bounded_query(self.path, self.kind, query, params, max_rows=max_rows, timeout_ms=timeout_ms)

    def read_query_here(
        self, query: str, params: dict[str, Any] | None, max_rows: int, max_bytes: int, timeout_ms: int
    ) -> tuple[list[str], list[list[Any]], bool]:
        """:meth:`read_query` in this process, without a memory cap: what the child runs. Rows are
        read until ``max_rows`` rows or ``max_bytes`` bytes (pickled) are in."""
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
                    raise QueryLimitError(f"the query was stopped after {timeout_ms / 1000:g} s") from exc
                raise _user_query_error(message) from exc
            columns = [str(c) for c in result.get_column_names()]
            rows: list[list[Any]] = []
            size, truncated = 0, False
            while result.has_next():
                if len(rows) >= max_rows or size > max_bytes:
                    truncated = True
                    break
                row = result.get_next()
                size += len(pickle.dumps(row, protocol=pickle.HIGHEST_PROTOCOL))
                rows.append(row)
            if size > max_bytes:
                truncated = True
                while rows and size > max_bytes:
                    size -= len(pickle.dumps(rows.pop(), protocol=pickle.HIGHEST_PROTOCOL))
        except MemoryError as exc:
            raise QueryLimitError(MEMORY_REFUSAL) from exc
        except (RuntimeError, UnicodeDecodeError) as exc:
            raise _user_query_error(_one_line(exc)) from exc
        finally:
            self._conn.set_query_timeout(0)
        return columns, rows, truncated


def _user_query_error(message: str) -> StoreError:
    """A failed user query's error: the memory cap's when LadybugDB ran out of memory."""
    if "bad_alloc" in message or "Unable to allocate memory" in message or "Mmap for size" in message:
        return QueryLimitError(MEMORY_REFUSAL)
    if message == "Interrupted.":
        return QueryLimitError("the query was stopped: interrupted")
    return StoreError(f"store query failed: {message}")


@contextmanager
def open_store(path: Path, read_only: bool = True, kind: StoreKind | None = None) -> Iterator[Store]:
    """``with open_store(path) as store:`` — opened and always closed."""
    store = Store.open(path, read_only=read_only, kind=kind)
    try:
        yield store
    finally:
        store.close()
