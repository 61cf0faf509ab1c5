"""A pack folder of items and their vectors (``lexicon/``, ``definitions/``): a JSON list beside a
``.npy`` matrix, one row per item, written as a whole and read as the data it is — no pickles,
sizes capped before anything is parsed, dtype, shape and values checked."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from wikigr.errors import InvalidPackError

VECTORS_FILE = "vectors.npy"


def write_vectors_folder(folder: Path, items_file: str, items: list[Any], vectors: np.ndarray) -> None:
    """Save ``items`` (JSON) as ``folder/items_file`` and their ``vectors`` as ``folder/vectors.npy``;
    ``folder`` is created, or replaced as a whole (a sibling temporary folder first, so that a failed
    write leaves no half folder)."""
    if len(items) != len(vectors):
        raise ValueError(f"{len(items)} items but {len(vectors)} vectors")
    tmp = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        (tmp / items_file).write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
        np.save(tmp / VECTORS_FILE, np.ascontiguousarray(vectors, dtype=np.float32), allow_pickle=False)
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def read_vectors_folder(
    folder: Path, items_file: str, dimension: int, max_items: int, max_items_bytes: int, what: str
) -> tuple[Any, np.ndarray] | None:
    """(the items as parsed JSON, their vectors) of ``folder``, or None when it does not exist. An
    :class:`InvalidPackError` names ``what`` is wrong: a link or a missing file, files over their
    caps, JSON that does not parse, vectors that are not float32 (number of items, ``dimension``)
    or not all finite. The caller checks the items' own shape (:func:`damaged` for its error)."""
    if not folder.exists() and not folder.is_symlink():
        return None
    where = f"corrupt {what} {folder}"
    if folder.is_symlink() or not folder.is_dir():
        raise InvalidPackError(f"{where}: not a folder")
    items_path, vectors_path = folder / items_file, folder / VECTORS_FILE
    for file in (items_path, vectors_path):
        if file.is_symlink() or not file.is_file():
            raise InvalidPackError(f"{where}: {file.name} is missing or not a file")
    if items_path.stat().st_size > max_items_bytes:
        raise InvalidPackError(f"{where}: {items_file} is larger than {max_items_bytes} bytes")
    try:
        items = json.loads(items_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InvalidPackError(f"{where}: {items_file}: {exc}") from None
    if not isinstance(items, list) or len(items) > max_items:
        raise InvalidPackError(f"{where}: {items_file} is not a list of at most {max_items} items")
    if vectors_path.stat().st_size > 4 * dimension * max_items + 4096:
        raise InvalidPackError(f"{where}: {VECTORS_FILE} is larger than {max_items} vectors")
    try:
        vectors = np.load(vectors_path, allow_pickle=False)
    except (OSError, ValueError, SyntaxError, EOFError) as exc:
        raise InvalidPackError(f"{where}: {VECTORS_FILE}: {exc}") from None
    if vectors.dtype != np.float32 or vectors.shape != (len(items), dimension):
        raise InvalidPackError(
            f"{where}: {VECTORS_FILE} holds {vectors.dtype} {vectors.shape}, "
            f"not float32 ({len(items)}, {dimension})"
        )
    if not bool(np.isfinite(vectors).all()):
        raise InvalidPackError(f"{where}: {VECTORS_FILE} holds non-finite values")
    return items, vectors


def damaged(folder: Path, what: str, detail: str) -> InvalidPackError:
    """The error of a ``what`` folder whose items are not as they should be."""
    return InvalidPackError(f"corrupt {what} {folder}: {detail}")
