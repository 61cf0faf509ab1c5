"""Keyword (BM25) search over a pack's chunks, stored as plain files in the pack's ``bm25/`` folder.

The index is built with `bm25s <https://github.com/xhluca/bm25s>`_ (method ``lucene``) and saved in
its format, next to two wikigr files::

    bm25/
      wikigr_keyword.json     format_version, k1, b, tokenizer settings, document/vocabulary counts
      chunk_ids.json          JSON list of chunk ids; position i is bm25s document i
      params.index.json       bm25s parameters
      vocab.index.json        bm25s vocabulary: token -> column
      data.csc.index.npy      float32 BM25 weight of each (token, document) pair, by column
      indices.csc.index.npy   int32 document of each weight
      indptr.csc.index.npy    int64 column offsets (vocabulary size + 1)

A pack may come from anyone, so loading never executes code: JSON is parsed with :mod:`json`, the
``.npy`` headers are checked (1-D, exact dtype, exact file size) before the arrays are memory-mapped
with ``allow_pickle=False``, every file has a size cap, and the arrays are checked for consistency.
Any problem is an :class:`~wikigr.errors.InvalidPackError`. Queries are scored straight from the
memory-mapped arrays (the sum of the query tokens' precomputed weights, as bm25s does), so loading an
index does not import bm25s.

Tokens: see :mod:`wikigr.pack.analyze` (English as wikigr always read it; a chunk in another
language with its own stemmer and stopwords, given at build time; a query in its own language).
``wikigr_keyword.json`` records the analysis, and a query reads it from there.

An empty corpus (or one without a single token) is accepted: it writes an index that returns nothing.
"""

from __future__ import annotations

import json
import math
import shutil
import uuid
from collections.abc import Sequence
from pathlib import Path
from tokenize import TokenError
from typing import Any

import numpy as np
import numpy.typing as npt

from wikigr.errors import InvalidPackError
from wikigr.pack.analyze import Analysis, AnalysisError, Analyzer, default_stopwords, fold, runs, tokenize

__all__ = [
    "KEYWORD_DIR",
    "KeywordIndex",
    "KeywordUnion",
    "build_keyword_index",
    "default_stopwords",
    "fold",
    "tokenize",
]

KEYWORD_DIR = "bm25"
"""The index's folder inside a pack: ``build_keyword_index(pack / KEYWORD_DIR, ...)``."""

FORMAT_VERSION = 1
META_FILE = "wikigr_keyword.json"
CHUNK_IDS_FILE = "chunk_ids.json"
PARAMS_FILE = "params.index.json"
VOCAB_FILE = "vocab.index.json"
DATA_FILE = "data.csc.index.npy"
INDICES_FILE = "indices.csc.index.npy"
INDPTR_FILE = "indptr.csc.index.npy"

MAX_META_BYTES = 1024 * 1024
MAX_PARAMS_BYTES = 64 * 1024
MAX_CHUNK_IDS_BYTES = 512 * 1024 * 1024
MAX_VOCAB_BYTES = 512 * 1024 * 1024
MAX_ARRAY_BYTES = 8 * 1024 * 1024 * 1024

METHOD = "lucene"

_DATA_DTYPE = np.dtype(np.float32)
_INDEX_DTYPE = np.dtype(np.int32)
_INDPTR_DTYPE = np.dtype(np.int64)

# What numpy's header parser may raise on a malformed header (it is ast-based: it never runs code).
_NPY_ERRORS = (OSError, ValueError, SyntaxError, EOFError, TypeError, KeyError, IndexError, TokenError)


# --------------------------------------------------------------------------------------------
# Building


def build_keyword_index(
    folder: Path,
    chunk_ids: list[str],
    texts: list[str],
    k1: float = 1.2,
    b: float = 0.75,
    languages: Sequence[str] | None = None,
) -> None:
    """Index ``texts`` (chunk ``chunk_ids[i]`` has text ``texts[i]``) and save the index in ``folder``.

    ``languages[i]`` is chunk i's document language (``wikigr.lang`` codes, ``und`` allowed): a
    chunk in a language with a Snowball stemmer is analysed in that language
    (:mod:`wikigr.pack.analyze`); None (or only English) gives the English index wikigr always
    wrote, byte for byte.

    ``folder`` (normally ``pack / KEYWORD_DIR``) is created, or replaced as a whole if it exists:
    the index is written to a sibling temporary folder first, so a failed build leaves no half index.
    An empty corpus is allowed and gives an index whose searches return nothing. Raises
    :class:`ValueError` for mismatched lengths, duplicate ids, or out-of-range ``k1``/``b``.
    """
    if len(chunk_ids) != len(texts):
        raise ValueError(f"{len(chunk_ids)} chunk ids but {len(texts)} texts")
    if len(set(chunk_ids)) != len(chunk_ids):
        raise ValueError("chunk ids must be unique")
    if not all(isinstance(c, str) for c in chunk_ids) or not all(isinstance(t, str) for t in texts):
        raise ValueError("chunk ids and texts must be strings")
    if isinstance(k1, bool) or not isinstance(k1, int | float) or not math.isfinite(k1) or k1 < 0:
        raise ValueError(f"k1 must be a finite number >= 0, not {k1!r}")
    if isinstance(b, bool) or not isinstance(b, int | float) or not math.isfinite(b) or not 0 <= b <= 1:
        raise ValueError(f"b must be between 0 and 1, not {b!r}")
    if languages is not None and (
        len(languages) != len(texts) or not all(isinstance(code, str) for code in languages)
    ):
        raise ValueError(f"languages must be {len(texts)} language codes, one per text")
    k1, b = float(k1), float(b)

    import bm25s  # type: ignore[import-untyped]  # only builds need it

    analysis = Analysis.for_chunks(languages)
    vocab: dict[str, int] = {}  # first-seen order, so the files are reproducible
    # per analyzer, a run of word characters -> its tokens' columns (runs repeat)
    known: dict[int, dict[str, list[int]]] = {}

    def run_ids(run: str, analyzer: Analyzer, seen: dict[str, list[int]]) -> list[int]:
        ids = seen.get(run)
        if ids is None:
            ids = seen[run] = [vocab.setdefault(t, len(vocab)) for t in analyzer.run_tokens(run)]
        return ids

    corpus_ids = []
    for n, text in enumerate(texts):
        analyzer = analysis.for_language(languages[n] if languages is not None else None)
        seen = known.setdefault(id(analyzer), {})
        corpus_ids.append([i for run in runs(text) for i in run_ids(run, analyzer, seen)])

    retriever = bm25s.BM25(k1=k1, b=b, method=METHOD, backend="numpy", csc_backend="numpy")
    if vocab:
        retriever.index((corpus_ids, vocab), create_empty_token=False, show_progress=False)
    else:  # bm25s cannot index a corpus without tokens: write the same files, empty
        retriever.scores = {
            "data": np.zeros(0, dtype=_DATA_DTYPE),
            "indices": np.zeros(0, dtype=_INDEX_DTYPE),
            "indptr": np.zeros(1, dtype=_INDPTR_DTYPE),
            "num_docs": len(texts),
        }
        retriever.vocab_dict = {}
        retriever.nonoccurrence_array = None

    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise NotADirectoryError(f"{folder} exists and is not a folder")
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.with_name(f".{folder.name}.tmp-{uuid.uuid4().hex}")
    tmp.mkdir()
    try:
        retriever.save(tmp, show_progress=False)
        # bm25s may pick other dtypes in another version; the reader accepts exactly these.
        for name, array, dtype in (
            (DATA_FILE, retriever.scores["data"], _DATA_DTYPE),
            (INDICES_FILE, retriever.scores["indices"], _INDEX_DTYPE),
            (INDPTR_FILE, retriever.scores["indptr"], _INDPTR_DTYPE),
        ):
            if np.asarray(array).dtype != dtype:
                np.save(tmp / name, np.ascontiguousarray(array, dtype=dtype), allow_pickle=False)
        _write_json(tmp / CHUNK_IDS_FILE, list(chunk_ids))
        _write_json(
            tmp / META_FILE,
            {
                "format_version": FORMAT_VERSION,
                "method": METHOD,
                "k1": k1,
                "b": b,
                "num_documents": len(texts),
                "vocabulary_size": len(vocab),
                "tokenizer": analysis.settings(),
                "bm25s_version": str(getattr(bm25s, "__version__", "")),
            },
        )
        if folder.exists():
            old = folder.with_name(f".{folder.name}.old-{uuid.uuid4().hex}")
            folder.rename(old)
            tmp.rename(folder)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


# --------------------------------------------------------------------------------------------
# Loading (untrusted input)


def _read_json(path: Path, max_bytes: int) -> Any:
    try:
        with path.open("rb") as f:
            raw = f.read(max_bytes + 1)
    except FileNotFoundError:
        raise InvalidPackError(f"corrupt keyword index: {path.name} is missing in {path.parent}") from None
    except OSError as exc:
        raise InvalidPackError(f"cannot read keyword index file {path}: {exc}") from exc
    if len(raw) > max_bytes:
        raise InvalidPackError(f"corrupt keyword index: {path} is larger than {max_bytes} bytes")
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InvalidPackError(f"corrupt keyword index {path}: {exc}") from exc


def _open_array(path: Path, dtype: np.dtype[Any], length: int | None = None) -> npt.NDArray[Any]:
    """Memory-map a 1-D ``.npy`` file after checking its header and size; never unpickles."""
    try:
        size = path.stat().st_size
        if size > MAX_ARRAY_BYTES:
            raise InvalidPackError(f"corrupt keyword index: {path} is larger than {MAX_ARRAY_BYTES} bytes")
        with path.open("rb") as f:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, fortran_order, found = np.lib.format.read_array_header_1_0(f)
            elif version == (2, 0):
                shape, fortran_order, found = np.lib.format.read_array_header_2_0(f)
            else:
                raise InvalidPackError(f"corrupt keyword index: {path} has .npy version {version}")
            offset = f.tell()
    except FileNotFoundError:
        raise InvalidPackError(f"corrupt keyword index: {path.name} is missing in {path.parent}") from None
    except InvalidPackError:
        raise
    except _NPY_ERRORS as exc:
        raise InvalidPackError(f"corrupt keyword index {path}: {exc}") from exc
    if found != dtype or fortran_order or len(shape) != 1:
        raise InvalidPackError(
            f"corrupt keyword index {path}: expected a 1-D {dtype} array, found {found} {shape}"
        )
    if length is not None and shape[0] != length:
        raise InvalidPackError(f"corrupt keyword index {path}: {shape[0]} entries, expected {length}")
    if size != offset + shape[0] * dtype.itemsize:
        raise InvalidPackError(f"corrupt keyword index {path}: file size does not match its header")
    try:
        if shape[0] == 0:
            array = np.zeros(0, dtype=dtype)
        else:
            array = np.load(path, mmap_mode="r", allow_pickle=False)
    except _NPY_ERRORS as exc:
        raise InvalidPackError(f"corrupt keyword index {path}: {exc}") from exc
    if array.dtype != dtype or array.shape != shape:
        raise InvalidPackError(f"corrupt keyword index {path}: unexpected array")
    return array


def _int_field(meta: dict[str, Any], key: str, path: Path) -> int:
    value = meta.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidPackError(f"corrupt keyword index {path}: {key} must be a non-negative integer")
    return value


def _float_field(meta: dict[str, Any], key: str, path: Path) -> float:
    value = meta.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidPackError(f"corrupt keyword index {path}: {key} must be a number")
    return float(value)


def _check_meta(path: Path, meta: Any) -> tuple[int, int, float, float, Analysis]:
    if not isinstance(meta, dict):
        raise InvalidPackError(f"corrupt keyword index {path}: not a JSON object")
    version = meta.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise InvalidPackError(f"corrupt keyword index {path}: format_version must be an integer")
    if version > FORMAT_VERSION:
        raise InvalidPackError(
            f"keyword index format_version {version} is newer than this wikigr supports "
            f"({FORMAT_VERSION}): upgrade wikigr"
        )
    if version < 1:
        raise InvalidPackError(f"corrupt keyword index {path}: format_version {version}")
    if meta.get("method") != METHOD:
        raise InvalidPackError(f"corrupt keyword index {path}: method {meta.get('method')!r}")
    num_docs = _int_field(meta, "num_documents", path)
    vocab_size = _int_field(meta, "vocabulary_size", path)
    k1, b = _float_field(meta, "k1", path), _float_field(meta, "b", path)
    try:
        analysis = Analysis.from_settings(meta.get("tokenizer"))
    except AnalysisError as exc:
        message = str(exc)
        raise InvalidPackError(
            message if message.startswith("keyword index") else f"corrupt keyword index {path}: {message}"
        ) from None
    return num_docs, vocab_size, k1, b, analysis


class KeywordIndex:
    """A loaded keyword index: ``KeywordIndex.load(pack / KEYWORD_DIR).search("settimeout", 5)``."""

    def __init__(
        self,
        *,
        chunk_ids: list[str],
        vocab: dict[str, Any],
        data: npt.NDArray[np.float32],
        indices: npt.NDArray[np.int32],
        indptr: npt.NDArray[np.int64],
        analysis: Analysis,
        k1: float,
        b: float,
    ) -> None:
        self._chunk_ids = chunk_ids
        self._vocab = vocab
        self._data = data
        self._indices = indices
        self._indptr = indptr
        self.analysis = analysis
        self.k1 = k1
        self.b = b
        self._folded: frozenset[str] | None = None

    def unaccented(self) -> frozenset[str]:
        """The indexed tokens that are not plain ASCII, without their accents ("aschenbrodel" for
        "aschenbrödel"), made on first use."""
        if self._folded is None:
            self._folded = frozenset(fold(token) for token in self._vocab if not token.isascii())
        return self._folded

    @classmethod
    def load(cls, folder: Path) -> KeywordIndex:
        """Open the index saved in ``folder``; an :class:`InvalidPackError` if it is missing or corrupt."""
        folder = Path(folder)
        if not folder.is_dir():
            raise InvalidPackError(f"keyword index missing: {folder} is not a folder")
        meta_path = folder / META_FILE
        num_docs, vocab_size, k1, b, analysis = _check_meta(meta_path, _read_json(meta_path, MAX_META_BYTES))

        params_path = folder / PARAMS_FILE
        params = _read_json(params_path, MAX_PARAMS_BYTES)
        if not isinstance(params, dict):
            raise InvalidPackError(f"corrupt keyword index {params_path}: not a JSON object")
        expected = {"num_docs": num_docs, "k1": k1, "b": b, "method": METHOD, "idf_method": METHOD}
        for key, value in expected.items():
            if params.get(key) != value:
                raise InvalidPackError(
                    f"corrupt keyword index {params_path}: {key} does not match {META_FILE}"
                )

        ids_path = folder / CHUNK_IDS_FILE
        chunk_ids = _read_json(ids_path, MAX_CHUNK_IDS_BYTES)
        if not isinstance(chunk_ids, list) or not all(isinstance(c, str) for c in chunk_ids):
            raise InvalidPackError(f"corrupt keyword index {ids_path}: not a list of strings")
        if len(chunk_ids) != num_docs or len(set(chunk_ids)) != num_docs:
            raise InvalidPackError(
                f"corrupt keyword index {ids_path}: {len(set(chunk_ids))} distinct ids for {num_docs} rows"
            )

        vocab_path = folder / VOCAB_FILE
        vocab = _read_json(vocab_path, MAX_VOCAB_BYTES)
        if not isinstance(vocab, dict) or len(vocab) != vocab_size:
            raise InvalidPackError(f"corrupt keyword index {vocab_path}: expected {vocab_size} tokens")
        # Token ids are checked when a query looks them up (see _columns): it keeps loading fast.

        indptr = _open_array(folder / INDPTR_FILE, _INDPTR_DTYPE, vocab_size + 1)
        data = _open_array(folder / DATA_FILE, _DATA_DTYPE)
        indices = _open_array(folder / INDICES_FILE, _INDEX_DTYPE, len(data))
        where = f"corrupt keyword index {folder}"
        if indptr[0] != 0 or indptr[-1] != len(data) or np.any(indptr[1:] < indptr[:-1]):
            raise InvalidPackError(f"{where}: {INDPTR_FILE} is not a valid column index")
        if len(indices) and (int(indices.min()) < 0 or int(indices.max()) >= num_docs):
            raise InvalidPackError(f"{where}: {INDICES_FILE} refers to documents that do not exist")
        if len(data) and not bool(np.isfinite(data).all()):
            raise InvalidPackError(f"{where}: {DATA_FILE} holds non-finite scores")
        return cls(
            chunk_ids=chunk_ids,
            vocab=vocab,
            data=data,
            indices=indices,
            indptr=indptr,
            analysis=analysis,
            k1=k1,
            b=b,
        )

    def __len__(self) -> int:
        """The number of indexed chunks."""
        return len(self._chunk_ids)

    @property
    def chunk_ids(self) -> list[str]:
        """The indexed chunks' ids, in indexing order."""
        return list(self._chunk_ids)

    def verify(self) -> None:
        """Check every vocabulary entry (a query checks only its own tokens, to load fast): each is a
        column of the arrays, and no two tokens share one. ``pack validate`` calls it."""
        columns, seen = len(self._indptr) - 1, set()
        for token, column in self._vocab.items():
            if (
                isinstance(column, bool)
                or not isinstance(column, int)
                or not 0 <= column < columns
                or column in seen
            ):
                raise InvalidPackError(
                    f"corrupt keyword index: {VOCAB_FILE} has a bad entry for {token[:80]!r}"
                )
            seen.add(column)

    def tokens(self, text: str, language: str | None = None) -> list[str]:
        """The tokens of ``text`` as this index reads a text in ``language`` (None: English): the
        analysis the index recorded for that language, or its English one."""
        return self.analysis.tokens(text, language)

    def idf(self, tokens: Sequence[str]) -> dict[str, float]:
        """A smoothed inverse document frequency of each token, ``ln((N + 1) / (df + 1)) + 0.5``
        (a token the index never saw counts as the rarest)."""
        total = len(self)
        return {t: float(np.log((total + 1) / (self.document_frequency(t) + 1))) + 0.5 for t in tokens}

    def _columns(self, factors: dict[str, float]) -> list[tuple[int, float]]:
        """The index's column of each token it holds, with the token's factor."""
        columns = len(self._indptr) - 1
        found: list[tuple[int, float]] = []
        for token, factor in factors.items():
            column = self._vocab.get(token)
            if column is None:
                continue
            if isinstance(column, bool) or not isinstance(column, int) or not 0 <= column < columns:
                raise InvalidPackError(f"corrupt keyword index: bad vocabulary entry for {token!r}")
            found.append((column, factor))
        return found

    def document_frequency(self, token: str) -> int:
        """The number of indexed chunks that hold ``token`` (0 for a token not indexed)."""
        column = self._vocab.get(token)
        columns = len(self._indptr) - 1
        if isinstance(column, bool) or not isinstance(column, int) or not 0 <= column < columns:
            return 0
        return int(self._indptr[column + 1] - self._indptr[column])

    def search(self, query: str, k: int, language: str | None = None) -> list[tuple[str, float]]:
        """The ``k`` best chunks for ``query`` (in ``language``: see :meth:`tokens`) as
        ``(chunk id, BM25 score)``, best first.

        Only chunks with a positive score are returned, so a query without any indexed token gives
        ``[]``; ties are broken by indexing order. ``k`` may exceed the corpus; ``k == 0`` gives
        ``[]`` and a negative ``k`` is a :class:`ValueError`.
        """
        if isinstance(k, bool) or not isinstance(k, int):
            raise TypeError(f"k must be an integer, not {k!r}")
        if k < 0:
            raise ValueError(f"k must be >= 0, not {k}")
        if k == 0 or not len(self):
            return []
        return self._search(dict.fromkeys(self.tokens(query, language), 1.0), k)  # each token once

    def search_tokens(self, weights: dict[str, float], k: int) -> list[tuple[str, float]]:
        """Like :meth:`search`, for tokens already analysed, each with a weight (its BM25 weight in
        a chunk times it): a question read in the documents' words (wikigr/retrieval/across.py)."""
        return self._search(weights, k) if k > 0 and len(self) else []

    def _search(self, factors: dict[str, float], k: int) -> list[tuple[str, float]]:
        """The ``k`` best chunks by the sum of the tokens' BM25 weights, each weight times the
        token's factor (1: the index's own BM25)."""
        if not self._chunk_ids:
            return []
        scores = np.zeros(len(self._chunk_ids), dtype=np.float32)
        for column, factor in self._columns(factors):  # BM25: the sum of the precomputed weights
            start, end = int(self._indptr[column]), int(self._indptr[column + 1])
            weights = self._data[start:end]
            np.add.at(
                scores, self._indices[start:end], weights if factor == 1.0 else weights * np.float32(factor)
            )
        hits = np.flatnonzero(scores > 0)
        if hits.size > k:
            hits = hits[np.argpartition(-scores[hits], k - 1)[:k]]
        hits = hits[np.lexsort((hits, -scores[hits]))]
        return [(self._chunk_ids[i], float(scores[i])) for i in hits.tolist()]


def lucene_idf(documents: int, frequency: int) -> float:
    """BM25's inverse document frequency of a token in ``frequency`` of ``documents`` (``lucene``)."""
    return math.log(1 + (documents - frequency + 0.5) / (frequency + 0.5))


class KeywordUnion(KeywordIndex):
    """The keyword indexes of a pack's shards searched as one index of the whole pack.

    A shard's stored BM25 weight of a token in a passage is the token's idf in that shard times
    its term-frequency part; the union rescales each shard's weights to the token's idf over the
    whole pack (document frequencies summed over the shards), so that a word rare in one shard and
    common in the pack does not lift that shard's passages. (Length normalisation keeps each
    shard's average passage length: close to the pack's with shards of about equal size.)"""

    def __init__(self, parts: Sequence[KeywordIndex]) -> None:  # no super(): the parts hold the data
        if not parts:
            raise ValueError("a union needs at least one index")
        self.parts = list(parts)
        own: dict[str, tuple[str, Sequence[str]]] = {}
        for part in self.parts:  # a shard analyses the languages of its own chunks
            for code, analyzed in part.analysis.own.items():
                if own.setdefault(code, analyzed) != analyzed:
                    raise InvalidPackError(
                        f"the shards' keyword indexes analyse {code!r} differently: rebuild the pack"
                    )
        self.analysis = Analysis(self.parts[0].analysis.stopwords, own)
        self.k1, self.b = self.parts[0].k1, self.parts[0].b
        self._folded = None

    @classmethod
    def load_all(cls, folders: Sequence[Path]) -> KeywordUnion:
        return cls([KeywordIndex.load(folder) for folder in folders])

    def __len__(self) -> int:
        return sum(len(part) for part in self.parts)

    def document_frequency(self, token: str) -> int:
        return sum(part.document_frequency(token) for part in self.parts)

    def unaccented(self) -> frozenset[str]:
        if self._folded is None:
            self._folded = frozenset().union(*(part.unaccented() for part in self.parts))
        return self._folded

    def _search(self, factors: dict[str, float], k: int) -> list[tuple[str, float]]:
        total = len(self)
        pack_idf = {t: lucene_idf(total, self.document_frequency(t)) for t in factors}
        hits: list[tuple[str, float]] = []
        for part in self.parts:
            size, rescaled = len(part), {}
            for token, factor in factors.items():
                frequency = part.document_frequency(token)
                if frequency:
                    rescaled[token] = factor * pack_idf[token] / lucene_idf(size, frequency)
            hits += part._search(rescaled, k)
        return sorted(hits, key=lambda hit: -hit[1])[:k]  # stable: ties keep the shards' order
