"""sentence-transformers as an optional backend (the ``models`` extra: sentence-transformers + torch).

- :class:`SentenceTransformerEmbedder`: the embedder of a pack built with ``--embedder st:MODEL``
  (a query runs its ONNX export instead where it has one: wikigr/models/st_export.py).
- :func:`load_cross_encoder`: the model of the cross_encoder stage.

MODEL is a local folder (a model saved by sentence-transformers, or a Hugging Face model folder) or
a Hugging Face model name. An embedder's name is looked up in the Hugging Face cache first, without
the network; only a name that is not there is downloaded, as sentence-transformers does (with
``HF_HUB_OFFLINE=1`` it is not, and loading fails with a one-line error): the user asked for that
model. A cross-encoder is never downloaded: it is read from its folder or the Hugging Face cache,
and one that is not there is said at once, with the command that fetches it.

Nothing here runs on the default path: sentence_transformers, and with it torch (10-20 s to import
cold), is imported only when such a model is loaded.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import socket
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from wikigr.errors import EmbedderUnavailableError, UsageError
from wikigr.home import expand_user
from wikigr.models.st_export import model_folder

PREFIX = "st:"
BACKEND = "sentence-transformers"
INSTALL_HINT = "install the models extra: uv sync --extra models (or pip install 'wikigr[models]')"

_CROSS_ENCODERS: dict[str, Any] = {}
_LOCK = threading.Lock()


def installed() -> bool:
    """Whether sentence-transformers can be imported (asked without importing it)."""
    try:
        return importlib.util.find_spec("sentence_transformers") is not None
    except (ImportError, ValueError):
        return False


def require(what: str) -> None:
    if not installed():
        raise EmbedderUnavailableError(
            f"{what} needs sentence-transformers, which is not installed: {INSTALL_HINT}"
        )


def resolve(model: str) -> str:
    """``model`` as it is loaded and recorded: a local folder as an absolute path, a Hugging Face
    name as it is. A path (``/...``, ``./...``, ``~/...``) that is not a folder is refused."""
    model = model.strip()
    if not model:
        raise UsageError("st: needs a model: st:NAME (a Hugging Face model name) or st:FOLDER")
    path = expand_user(Path(model))
    if path.is_dir():
        return str(path.resolve())
    if model.startswith(("/", ".", "~")) or "\\" in model or model.count("/") > 1:
        raise EmbedderUnavailableError(f"no such model folder: {path}")
    return model


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """transformers without its per-load progress bar and load report (warnings still show)."""
    try:
        hf_logging: Any = importlib.import_module("transformers.utils.logging")
    except ImportError:
        yield
        return
    verbosity = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def _hub_unreachable() -> str | None:
    """Why the Hugging Face hub cannot be reached, or None when it answers (or a proxy or
    HF_HUB_OFFLINE decides). One connection: offline, huggingface_hub would retry every file for
    half a minute each before it gave up."""
    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return None
    if os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0"):
        return None  # huggingface_hub fails at once
    endpoint = urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host = endpoint.hostname or "huggingface.co"
    try:
        socket.create_connection(
            (host, endpoint.port or (80 if endpoint.scheme == "http" else 443)), 10
        ).close()
    except OSError as exc:
        return f"{host} cannot be reached ({_reason(exc)})"
    return None


def _load(cls: Any, model: str, what: str, **kwargs: Any) -> Any:
    """``cls(model)`` (SentenceTransformer or CrossEncoder): a local folder, else a name from the
    Hugging Face cache, else a name downloaded; a failure is one line."""
    with _quiet():
        if Path(model).is_absolute():
            try:
                return cls(model, local_files_only=True, **kwargs)
            except Exception as exc:  # transformers raises OSError, ValueError, KeyError...
                raise EmbedderUnavailableError(f"cannot load {what} from {model}: {_reason(exc)}") from exc
        try:
            return cls(model, local_files_only=True, **kwargs)  # from the cache: no network
        except Exception:  # noqa: BLE001  (not in the cache: download it below)
            pass
        failed = f"cannot load {what}: {model!r} is not a local folder, not in the Hugging Face cache, "
        unreachable = _hub_unreachable()
        if unreachable:
            raise EmbedderUnavailableError(f"{failed}and could not be downloaded: {unreachable}")
        try:
            return cls(model, **kwargs)
        except Exception as exc:
            offline = os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0")
            note = " (HF_HUB_OFFLINE is set)" if offline else ""
            raise EmbedderUnavailableError(
                f"{failed}and could not be downloaded{note}: {_reason(exc)}"
            ) from exc


def weights_digest(module: Any) -> str:
    """sha256 over a torch module's tensors (name, dtype, shape and values, in state_dict order):
    the same for the same weights, whatever the files they were loaded from."""
    digest = hashlib.sha256()
    for key, tensor in module.state_dict().items():
        value = tensor.detach().cpu().contiguous()
        try:
            array = value.numpy()
        except TypeError:  # bfloat16 has no numpy type: float32 holds it exactly
            array = value.float().numpy()
        digest.update(f"{key} {array.dtype} {tuple(array.shape)}\n".encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


class SentenceTransformerEmbedder:
    """A sentence-transformers model as a pack's embedder: unit vectors, the model's own maximum
    sequence length, pooling and device."""

    backend = BACKEND

    def __init__(self, model: str, batch_size: int = 32) -> None:
        require(f"embedder {PREFIX}{model}")
        model = resolve(model)
        self.name = PREFIX + model
        self.model = model
        self.batch_size = batch_size
        from sentence_transformers import SentenceTransformer

        self.st_model = _load(SentenceTransformer, model, f"embedder {self.name}")
        dimension = (
            getattr(self.st_model, "get_embedding_dimension", None)
            or self.st_model.get_sentence_embedding_dimension  # older sentence-transformers
        )
        self.dimension = int(dimension() or self.embed(["dimension"]).shape[1])
        self.digest = weights_digest(self.st_model)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Passages (and anything else but the questions), with the model's "document" prompt if
        it has one."""
        return self._encode("encode_document", texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Questions, with the model's "query" prompt if it has one (e5, bge...)."""
        return self._encode("encode_query", texts)

    def _encode(self, method: str, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, getattr(self, "dimension", 0)), np.float32)
        encode = getattr(self.st_model, method, None) or self.st_model.encode  # older: no prompts
        vectors = encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


def load_cross_encoder(model: str) -> tuple[str, Any]:
    """The CrossEncoder ``model`` (resolved as :func:`resolve` does), loaded once per process, and
    its name. It is read from its folder, or from the Hugging Face cache
    (wikigr.models.st_export.hub_snapshot): never downloaded, so a model that is not on this
    machine is refused at once. A model without a trained classification head (an embedding model,
    which sentence-transformers would give a random head) is refused."""
    require("the cross-encoder")
    model = resolve(model)
    with _LOCK:
        if model not in _CROSS_ENCODERS:
            folder = model_folder(model)
            if folder is None:
                raise EmbedderUnavailableError(
                    f"cross-encoder {model} is not on this machine (fetch it once with: hf download {model})"
                )
            from sentence_transformers import CrossEncoder

            encoder = _load(CrossEncoder, str(folder), f"cross-encoder {model}")
            config = getattr(getattr(encoder, "model", None), "config", None)
            architectures = list(getattr(config, "architectures", None) or [])
            if not any(a.endswith("ForSequenceClassification") for a in architectures):
                names = ", ".join(architectures) or "none"
                raise EmbedderUnavailableError(
                    f"{model} is not a cross-encoder: it has no trained classification head "
                    f"(architectures: {names})"
                )
            _CROSS_ENCODERS[model] = encoder
        return model, _CROSS_ENCODERS[model]
