"""``st:`` models exported to ONNX, so that a query on an ``st:`` pack runs without torch.

When an ``st:`` model is loaded with sentence-transformers (a build, or the first use of a pack
whose model has no export on this machine), :func:`export` exports its whole forward once: the
Transformer, then the Pooling, Dense and Normalize modules the model has, from ``input_ids`` and
``attention_mask`` (and ``token_type_ids`` where the tokenizer gives them) to the sentence
embedding, with dynamic batch and sequence axes (torch's TorchScript exporter, no onnx package
needed). The tokenizer is saved beside it as ``tokenizer.json``, from the fast tokenizer
sentence-transformers loaded (its normaliser holds the lower-casing, if any). Before it is kept,
the export embeds probe texts (short, longer than the model's maximum sequence, Unicode) on
onnxruntime, as documents and as questions with the model's prompts, and must give
sentence-transformers' vectors (max abs difference <= 1e-4, or every cosine >= 0.99999).

It is kept in ``$WIKIGR_HOME/cache/st-onnx/KEY/``: KEY is a sha256 over the names and sha256 of the
model folder's files (:func:`wikigr.home.file_digest` remembers each against its identity, so a
query stats them), so other weights under the same name are another entry. ``export.json``
records the export: the weights' digest the pack was built with, the dimension, the maximum
sequence length, the prompts and the sha256 of each file; :func:`find` checks them all before
anything is loaded, and a damaged entry is removed (the next use exports again).

A model the export does not cover keeps torch, and ``export.json`` says why (``status`` "torch",
``reason``): custom model code, an input module that is not a plain text Transformer (a Router, a
multimodal processor, query expansion, per-task lengths), a module other than Transformer,
Pooling, Dense and Normalize, pooling that leaves the prompt out, or an export whose vectors do
not match.

This module imports neither torch nor sentence-transformers: :func:`export` imports torch when it
runs, :func:`find` needs only the files (and huggingface_hub's constants, for a model name).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import shutil
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from wikigr import schema
from wikigr.home import cache_dir, file_digest, prune

FORMAT = 1  # of the export and of export.json: another format is another key
FOLDER = "st-onnx"
KEEP = 4  # exports kept (the model's size each: ~90 MB for MiniLM)
RECORD = "export.json"
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
OPSET = 17
MAX_ABS_DIFF = 1e-4
MIN_COSINE = 0.99999
MODULES = ("Transformer", "Pooling", "Dense", "Normalize")  # sentence-transformers' own, exported

_LOCK = threading.Lock()


@dataclass(frozen=True)
class ExportRecord:
    """``export.json``: what was exported, or why the model keeps torch."""

    format: int
    status: Literal["onnx", "torch"]
    reason: str = ""  # why torch
    weights_digest: str = ""  # the st: embedder's digest (wikigr.models.st.weights_digest)
    dimension: int = 0
    max_tokens: int = 0
    query_prompt: str = ""
    document_prompt: str = ""
    files: dict[str, str] = field(default_factory=dict)  # file name -> sha256
    max_abs_diff: float = 0.0  # of the probes, against sentence-transformers
    versions: dict[str, str] = field(default_factory=dict)  # torch, sentence-transformers, ...


@dataclass(frozen=True)
class Export:
    """An entry of the cache: its folder and its record."""

    folder: Path
    record: ExportRecord

    @property
    def model_file(self) -> Path:
        return self.folder / MODEL_FILE

    @property
    def tokenizer_file(self) -> Path:
        return self.folder / TOKENIZER_FILE


class Embeds(Protocol):
    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...


class TorchModel(Embeds, Protocol):
    """What :func:`export` needs of wikigr.models.st.SentenceTransformerEmbedder."""

    model: str
    digest: str
    dimension: int
    st_model: Any


class Refused(Exception):
    """The model keeps torch; the message says why."""


def model_folder(model: str) -> Path | None:
    """The folder sentence-transformers loads ``model`` from, found without the network: a local
    folder (an absolute path, as wikigr.models.st.resolve gives it), or a Hugging Face name's
    snapshot in the Hugging Face cache; None when it is not on this machine."""
    path = Path(model)
    if path.is_absolute():
        return path if path.is_dir() else None
    return hub_snapshot(model)


def hub_snapshot(name: str) -> Path | None:
    """The snapshot of Hugging Face model ``name`` in the Hugging Face cache that its ``main``
    revision points at (``HF_HUB_CACHE/models--ORG--NAME/refs/main`` -> ``snapshots/COMMIT``, as
    huggingface_hub lays the cache out), if it holds the model's ``config.json`` or
    ``modules.json``; None otherwise. Only huggingface_hub's constants are imported (where the
    cache is): its download code costs most of a second to import, and nothing is fetched."""
    if importlib.util.find_spec("huggingface_hub") is None:
        return None
    from huggingface_hub import constants

    repo = Path(constants.HF_HUB_CACHE) / ("models--" + name.replace("/", "--"))
    try:
        commit = (repo / "refs" / "main").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    snapshot = repo / "snapshots" / commit
    if not commit.isalnum() or not any((snapshot / f).is_file() for f in ("config.json", "modules.json")):
        return None
    return snapshot


def folder_key(folder: Path) -> str:
    """The cache key of a model folder: sha256 over each file's path in the folder and sha256
    (hidden files and folders left out), and the export format."""
    digest = hashlib.sha256(f"wikigr st-onnx {FORMAT}\n".encode())
    files = sorted(
        p for p in folder.rglob("*") if not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )
    for path in files:
        if path.is_file():
            digest.update(f"{path.relative_to(folder).as_posix()} {file_digest(path)}\n".encode())
    return digest.hexdigest()[:40]


def _entry(model: str) -> Path | None:
    folder = model_folder(model)
    if folder is None:
        return None
    try:
        return cache_dir(FOLDER, folder_key(folder))
    except OSError:
        return None


def _read(entry: Path) -> ExportRecord:
    """The entry's record, checked: a record that is not this format's, or a file whose sha256 is
    not the recorded one, raises ValueError."""
    record = schema.load(ExportRecord, schema.parse_json((entry / RECORD).read_bytes()))
    if record.format != FORMAT:
        raise ValueError(f"format {record.format}")
    if record.status == "onnx":
        if {MODEL_FILE, TOKENIZER_FILE} - set(record.files) or not record.weights_digest:
            raise ValueError("incomplete record")
        for name, sha256 in record.files.items():
            if Path(name).name != name or name.startswith(".") or file_digest(entry / name) != sha256:
                raise ValueError(f"{name} is not the file exported")
    return record


def find(model: str) -> Export | None:
    """The export of ``model`` kept on this machine, checked; None when there is none (a damaged
    one is removed, and exported again by the next :func:`export`)."""
    entry = _entry(model)
    if entry is None or not entry.is_dir():
        return None
    try:
        return Export(entry, _read(entry))
    except (OSError, ValueError):
        discard(entry)
        return None


def discard(entry: Path) -> None:
    shutil.rmtree(entry, ignore_errors=True)


def unsupported(st_model: Any) -> str | None:
    """Why the export does not cover ``st_model`` (a SentenceTransformer), or None."""
    modules = list(st_model)
    for module in modules:
        kind = type(module)
        if kind.__name__ not in MODULES or not kind.__module__.startswith("sentence_transformers."):
            return f"it has a {kind.__module__}.{kind.__name__} module (exported: {', '.join(MODULES)})"
    if not modules or type(modules[0]).__name__ != "Transformer":
        return "its first module is not a Transformer"
    first = modules[0]
    auto_model = getattr(first, "auto_model", None)
    if auto_model is None or not type(auto_model).__module__.startswith("transformers.models."):
        return f"its model runs custom code ({type(auto_model).__module__})"
    modalities = list(getattr(first, "modality_config", None) or {"text": None})
    tokenizer = getattr(first, "tokenizer", None)
    processor = getattr(first, "processor", tokenizer)
    if modalities != ["text"] or processor is not tokenizer:
        return f"its Transformer takes {', '.join(map(str, modalities))} (exported: text alone)"
    if tokenizer is None or not getattr(tokenizer, "is_fast", False):
        return "its tokenizer is not a fast (tokenizers) tokenizer"
    for option in ("query_expansion", "query_length", "document_length"):
        if getattr(first, option, None) is not None:
            return f"its Transformer sets {option}"
    if any(not getattr(m, "include_prompt", True) for m in modules) and getattr(st_model, "prompts", None):
        return "its pooling leaves the prompt out"
    return None


def prompts(st_model: Any) -> tuple[str, str]:
    """The prompts sentence-transformers puts before a question (``encode_query``) and before a
    document (``encode_document``): the model's "query" prompt, and its first of "document",
    "passage" and "corpus", else its default prompt."""
    known = dict(getattr(st_model, "prompts", None) or {})
    default_name = getattr(st_model, "default_prompt_name", None)
    default = known.get(default_name, "") if default_name else ""
    query = known.get("query", default)
    document = next((known[n] for n in ("document", "passage", "corpus") if n in known), default)
    return query or "", document or ""


def probes(max_tokens: int) -> list[str]:
    """Texts the export must embed as sentence-transformers does: short ones, one well past the
    maximum sequence length (truncated), Unicode, spaces and case, an empty one."""
    sentences = (
        f"Sentence {i}: the quick brown fox jumps over the lazy dog." for i in range(max_tokens // 4 + 8)
    )
    long_text = " ".join(sentences)  # ~3 tokens per maximum token
    return [
        "How do I set a socket timeout?",
        "socket.settimeout(value) sets a timeout on blocking socket operations.",
        "a",
        long_text,
        "Ünïcödé, 数字 and emoji 🎉 in one line — naïve café, Ωμέγα",
        "  Spaces around,\tTABS\tand\nnew lines; UPPER and MiXeD case  ",
        "",
    ]


def compare(expected: np.ndarray, got: np.ndarray) -> tuple[float, float]:
    """Max abs difference and least cosine between two sets of vectors of the same shape."""
    diff = float(np.abs(expected - got).max()) if expected.size else 0.0
    norms = np.linalg.norm(expected, axis=1) * np.linalg.norm(got, axis=1)
    cosines = np.einsum("ij,ij->i", expected, got) / np.clip(norms, 1e-12, None)
    return diff, float(cosines.min()) if len(cosines) else 1.0


def verify(reference: Embeds, exported: Embeds, texts: list[str]) -> float:
    """The largest difference between the export's vectors and sentence-transformers' on
    ``texts``, as documents and as questions; raises :class:`Refused` past the tolerance."""
    worst = 0.0
    for method in ("embed", "embed_queries"):
        expected = np.asarray(getattr(reference, method)(texts), np.float32)
        got = np.asarray(getattr(exported, method)(texts), np.float32)
        if expected.shape != got.shape:
            raise Refused(f"its ONNX export gives vectors of shape {got.shape}, not {expected.shape}")
        diff, cosine = compare(expected, got)
        if diff > MAX_ABS_DIFF and cosine < MIN_COSINE:
            raise Refused(
                f"its ONNX export does not give sentence-transformers' vectors ({method}: max abs "
                f"difference {diff:.2g}, least cosine {cosine:.6f})"
            )
        worst = max(worst, diff)
    return worst


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in ("torch", "transformers", "sentence-transformers", "onnxruntime", "tokenizers"):
        with contextlib.suppress(PackageNotFoundError):
            found[name] = version(name)
    return found


@contextlib.contextmanager
def _without_onnx_package() -> Iterator[None]:
    """torch's TorchScript exporter writes the graph itself, then imports the onnx package only to
    add onnxscript functions (custom operators) to it; a sentence-transformers model has none, so
    without the onnx package that step is left out (the model bytes are written as they are)."""
    utils: Any = None
    if importlib.util.find_spec("onnx") is None:
        with contextlib.suppress(ImportError):
            from torch.onnx._internal.torchscript_exporter import (  # noqa: TID251  (exporting)
                onnx_proto_utils as utils,
            )
    original = getattr(utils, "_add_onnxscript_fn", None)
    if original is None:
        yield
        return
    utils._add_onnxscript_fn = lambda model_bytes, custom_opsets: model_bytes
    try:
        yield
    finally:
        utils._add_onnxscript_fn = original


def _export_graph(st_model: Any, folder: Path) -> int:
    """Write ``model.onnx`` and ``tokenizer.json`` of ``st_model`` into ``folder``; the maximum
    sequence length."""
    import warnings

    import torch  # noqa: TID251  (only when exporting, as wikigr/models/st.py loads the model)
    from tokenizers import Tokenizer

    transformer = next(iter(st_model))
    tokenizer = transformer.tokenizer
    max_tokens = transformer.max_seq_length
    if not isinstance(max_tokens, int) or not 0 < max_tokens <= 1_000_000:
        raise Refused(f"its maximum sequence length is {max_tokens!r}")
    if tokenizer.pad_token_id is None:
        raise Refused("its tokenizer has no padding token")
    backend = Tokenizer.from_str(tokenizer.backend_tokenizer.to_str())
    backend.no_truncation()  # the embedder truncates at max_tokens
    side = "left" if getattr(tokenizer, "padding_side", "right") == "left" else "right"
    backend.enable_padding(direction=side, pad_id=tokenizer.pad_token_id, pad_token=tokenizer.pad_token)
    backend.save(str(folder / TOKENIZER_FILE))

    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in tokenizer.model_input_names]
    if names[:2] != ["input_ids", "attention_mask"]:
        raise Refused(f"its tokenizer gives {', '.join(tokenizer.model_input_names)}")
    texts = ["a short text", "a longer text, so that the batch is padded"]
    sample = tokenizer(texts, padding=True, return_tensors="pt")
    device = next(st_model.parameters()).device
    inputs = tuple(sample[n].to(device) for n in names)

    class Whole(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = st_model

        def forward(self, *tensors: Any) -> Any:
            return self.model(dict(zip(names, tensors, strict=True)))["sentence_embedding"]

    axes = {n: {0: "batch", 1: "sequence"} for n in names} | {"sentence_embedding": {0: "batch"}}
    was_training = st_model.training
    st_model.eval()
    try:
        with warnings.catch_warnings(), torch.no_grad(), _without_onnx_package():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                Whole(),
                inputs,
                str(folder / MODEL_FILE),
                input_names=names,
                output_names=["sentence_embedding"],
                dynamic_axes=axes,
                opset_version=OPSET,
                dynamo=False,
            )
    finally:
        st_model.train(was_training)
    return max_tokens


def export(torch_model: TorchModel, open_export: Callable[[Export], Embeds]) -> Export | None:
    """Export ``torch_model`` (an st: embedder on sentence-transformers) to this machine's cache,
    verified with ``open_export`` (the embedder that runs an export at query time), or record why
    it keeps torch. The entry, or None when the model folder is not on this machine or the cache
    cannot be written (nothing is kept: the model keeps torch in this process)."""
    with _LOCK:
        entry = _entry(torch_model.model)
        if entry is None:
            return None
        tmp = entry.with_name(f".{entry.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            record = _exported(torch_model, tmp, open_export)
            (tmp / RECORD).write_text(json.dumps(asdict(record), indent=1) + "\n", encoding="utf-8")
            if entry.exists():  # another process's, or one find() did not read: this one replaces it
                discard(entry)
            os.rename(tmp, entry)
            prune(entry.parent, KEEP)
            return Export(entry, _read(entry))
        except (OSError, ValueError):
            return None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def _exported(torch_model: TorchModel, tmp: Path, open_export: Callable[[Export], Embeds]) -> ExportRecord:
    """Export into ``tmp`` and verify; the record (status "torch" and why, when it fails)."""
    record = ExportRecord(format=FORMAT, status="torch", versions=_versions())
    try:
        why = unsupported(torch_model.st_model)
        if why:
            raise Refused(why)
        max_tokens = _export_graph(torch_model.st_model, tmp)
        query_prompt, document_prompt = prompts(torch_model.st_model)
        files = {name: file_digest(tmp / name) for name in sorted(os.listdir(tmp))}
        staged = Export(
            tmp,
            replace(
                record,
                status="onnx",
                weights_digest=torch_model.digest,
                dimension=torch_model.dimension,
                max_tokens=max_tokens,
                query_prompt=query_prompt,
                document_prompt=document_prompt,
                files=files,
            ),
        )
        worst = verify(torch_model, open_export(staged), probes(max_tokens))
        return replace(staged.record, max_abs_diff=worst)
    except Refused as exc:
        reason = str(exc)
    except Exception as exc:  # noqa: BLE001  (torch's exporter and onnxruntime raise anything)
        reason = f"the ONNX export failed: {_reason(exc)}"
    for name in os.listdir(tmp):
        (tmp / name).unlink()
    return replace(record, reason=reason)
