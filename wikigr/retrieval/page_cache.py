"""What :class:`wikigr.retrieval.page_index.PageIndex` reads of a store (:class:`PageTables`),
kept in ``$WIKIGR_HOME/cache/pages/``: a fresh process reads two files instead of the store's every
chunk vector (through Arrow, which also costs pyarrow's import), its articles, in-links and link
texts, and every chunk's text for the definitions it shows.

The files are named after the sha256 of the store's files (:func:`wikigr.home.store_cache_file`: a
store written since, by ``pack update``, a rebuild or in place, gets another name and is read
again), the format and the code that derives the tables: ``KEY.npy`` holds the chunk vectors (read
as ``np.load`` reads an ``.npy`` file, no pickles) and ``KEY.json`` the rest. (An ``.npz`` of them
all took about 10 ms to read, most of it in zipfile; these two, about 3 ms at 2,000 chunks, ad hoc.) Each
file is written whole or not at all, and two processes write the same content under one key. On
read they are checked like any input: size caps, names, types, counts, indices within bounds,
finite vectors. Files that do not check out are not used: the tables are read from the store again
and the files written anew.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
from contextlib import suppress
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from wikigr.home import prune, store_cache_file, write_atomic

if TYPE_CHECKING:
    from wikigr.pack.reader import PackStore

PAGE_CACHE_FORMAT = 1
PAGE_CACHE_KEEP = 32  # files kept: the two of 16 packs
MAX_VECTORS_BYTES = 2 * 1024 * 1024 * 1024
MAX_TABLES_BYTES = 512 * 1024 * 1024
_CODE = ("page_cache.py", "page_index.py", "api_names.py")  # the code that derives the tables


@dataclass(eq=False)
class PageTables:
    """A store's chunks, pages, links and definitions, as :class:`PageIndex` reads them. Rows of
    ``matrix`` and ``chunk_page`` follow ``chunk_ids``; lists of lists are in CSR form (``*_indptr``
    holds where each one's items start in the next array, and where the last one ends)."""

    chunk_ids: list[str]
    pages: list[str]  # article ids, in the order of their first chunk
    urls: list[str]  # each page's cited URL
    chunk_page: np.ndarray  # int64: each chunk's page
    matrix: np.ndarray  # float32 (chunks, dimension): the chunk vectors
    in_degrees: np.ndarray  # int64: per page, how many other pages link to it
    target_page: np.ndarray  # int64: per link target (a page and a fragment in it), its page
    target_fragments: list[str]
    target_counts: np.ndarray  # int64: the links to each target
    parts: list[str]  # the name parts of the targets' fragments and link texts
    part_indptr: np.ndarray  # int64: part i names the targets part_rows[part_indptr[i]:part_indptr[i + 1]]
    part_rows: np.ndarray  # int64
    defining_rows: np.ndarray  # int64: the chunks that show definitions, ascending
    defining_indptr: np.ndarray  # int64: chunk defining_rows[i] shows definitions indptr[i]:indptr[i + 1]
    shown: list[str]  # per definition: the name its line shows
    described: list[str]  # per definition: the words that describe it (its line's name parts and
    # those of the first sentence after it), space-separated
    has_definitions: bool = True  # False: the definitions were not read (none are listed)


_LISTS = ("chunk_ids", "pages", "urls", "target_fragments", "parts", "shown", "described")
_INTEGERS = (
    "chunk_page",
    "in_degrees",
    "target_page",
    "target_counts",
    "part_indptr",
    "part_rows",
    "defining_rows",
    "defining_indptr",
)


def page_cache_file(store: PackStore) -> Path | None:
    """Where the tables of ``store`` are kept (``.npy`` and ``.json`` beside this path), or None:
    they cannot be, the store's files are not what was opened or cannot be read."""
    code = hashlib.sha256()
    here = Path(__file__).parent
    try:
        for name in _CODE:
            code.update((here / name).read_bytes())
    except OSError:
        return None
    path = store_cache_file(store, "pages", f"wikigr page tables {PAGE_CACHE_FORMAT}", code.hexdigest())
    return path.with_suffix("") if path is not None else None


def write_page_tables(path: Path, tables: PageTables) -> None:
    """Save ``tables`` beside ``path`` when they check out as they would on read; a cache that
    cannot be written only costs time."""
    if not tables.has_definitions or not _consistent(tables):
        return
    data: dict[str, Any] = {name: getattr(tables, name) for name in _LISTS}
    data.update({name: getattr(tables, name).tolist() for name in _INTEGERS})
    vectors = io.BytesIO()
    np.save(vectors, np.ascontiguousarray(tables.matrix, dtype=np.float32), allow_pickle=False)
    with suppress(OSError, UnicodeEncodeError):  # a string no UTF-8 can hold: not kept
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        write_atomic(path.with_suffix(".npy"), vectors.getvalue())
        write_atomic(path.with_suffix(".json"), text)
        prune(path.parent, PAGE_CACHE_KEEP)
    shutil.rmtree(path.parent.with_name("vectors"), ignore_errors=True)  # the chunk vectors alone, before


def read_page_tables(path: Path) -> PageTables | None:
    """The tables saved beside ``path``, or None: no files, or files that do not check out."""
    try:
        with path.with_suffix(".json").open("rb") as f:
            raw = f.read(MAX_TABLES_BYTES + 1)
        if len(raw) > MAX_TABLES_BYTES:
            return None
        data = json.loads(raw)
        vectors = path.with_suffix(".npy")
        if vectors.stat().st_size > MAX_VECTORS_BYTES:
            return None
        with vectors.open("rb") as f:  # what np.load does with an .npy file, and nothing else (no .npz)
            matrix = np.lib.format.read_array(f, allow_pickle=False)
    except (OSError, ValueError, EOFError, RecursionError):  # UnicodeDecodeError, JSONDecodeError
        return None
    if not isinstance(data, dict) or set(data) != {*_LISTS, *_INTEGERS} or not isinstance(matrix, np.ndarray):
        return None
    values: dict[str, Any] = {"matrix": matrix}
    for name in _LISTS:
        strings = data[name]
        if not isinstance(strings, list) or not set(map(type, strings)) <= {str}:
            return None
        values[name] = strings
    for name in _INTEGERS:
        integers = _integers(data[name])
        if integers is None:
            return None
        values[name] = integers
    tables = PageTables(**{f.name: values[f.name] for f in fields(PageTables) if f.name in values})
    return tables if _consistent(tables) else None


def writable(folder: Path) -> bool:
    """Whether files can be written in ``folder`` (made if need be): where they cannot, work done
    only to be kept is not done."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK)


def _integers(value: object) -> np.ndarray | None:
    """``value`` as an int64 array, if it is a list of integers (JSON numbers without a fraction)."""
    if not isinstance(value, list):
        return None
    if not value:
        return np.zeros(0, dtype=np.int64)
    try:
        array = np.asarray(value)
    except (ValueError, OverflowError):
        return None
    if array.dtype != np.int64 or array.ndim != 1:  # floats, booleans, strings, nested, too big
        return None
    return array


def _csr(indptr: np.ndarray, items: np.ndarray, rows: int, bound: int) -> bool:
    """Whether ``indptr`` splits ``items`` into ``rows`` runs, and every item is in [0, bound)."""
    if len(indptr) != rows + 1 or indptr[0] != 0 or indptr[-1] != len(items):
        return False
    if rows and bool((indptr[1:] < indptr[:-1]).any()):
        return False
    return not len(items) or (int(items.min()) >= 0 and int(items.max()) < bound)


def _consistent(t: PageTables) -> bool:
    """Whether the tables agree with each other: counts, and indices within bounds."""
    chunks, pages, targets, definitions = len(t.chunk_ids), len(t.pages), len(t.target_page), len(t.shown)
    if len(t.described) != definitions:
        return False
    matrix = t.matrix
    if matrix.dtype != np.float32 or matrix.ndim != 2 or matrix.shape[0] != chunks:
        return False
    if not bool(np.isfinite(matrix).all()):
        return False
    if len(set(t.pages)) != pages or len(t.urls) != pages or len(t.in_degrees) != pages:
        return False
    if len(t.target_fragments) != targets or len(t.target_counts) != targets:
        return False
    if (pages and int(t.in_degrees.min()) < 0) or (targets and int(t.target_counts.min()) < 1):
        return False
    defining = t.defining_rows
    if len(defining) > 1 and bool((defining[1:] <= defining[:-1]).any()):
        return False
    return (
        _csr(np.array([0, chunks]), t.chunk_page, 1, pages)
        and _csr(np.array([0, targets]), t.target_page, 1, pages)
        and _csr(np.array([0, len(defining)]), defining, 1, chunks)
        and _csr(t.part_indptr, t.part_rows, len(t.parts), targets)
        and _csr(t.defining_indptr, np.arange(definitions), len(defining), definitions)
    )


def cached_page_tables(store: PackStore) -> tuple[Path | None, PageTables | None]:
    """Where the tables of ``store`` are kept, and what is kept there (None: nothing usable)."""
    path = page_cache_file(store)
    return path, (read_page_tables(path) if path is not None else None)
