"""A pack folder of items and their vectors (``lexicon/``, ``definitions/``): a JSON list beside a
``.npy`` matrix, one row per item, written as a whole and read as the data it is — no pickles,
sizes capped before anything is parsed, dtype, shape and values checked."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Items:
    """What a folder's JSON list holds: ``what`` the folder is ("lexicon"), its file, at most how
    many items (``noun``: "words") and bytes, and whether one item is as it should be."""

    what: str
    file: str
    noun: str
    max_items: int
    max_bytes: int
    valid: Callable[[Any], bool]


def read_vectors_folder(folder: Path, items: Items, dimension: int) -> tuple[list[Any], np.ndarray] | None:
    """(the items as parsed JSON, their vectors) of ``folder``, or None when it does not exist. An
    :class:`InvalidPackError` names what is wrong: a link or a missing file, files over their caps,
    JSON that does not parse or is not a list of valid items, vectors that are not float32 (number
    of items, ``dimension``) or not all finite."""
    if not folder.exists() and not folder.is_symlink():
        return None
    where = f"corrupt {items.what} {folder}"
    if folder.is_symlink() or not folder.is_dir():
        raise InvalidPackError(f"{where}: not a folder")
    items_path, vectors_path = folder / items.file, folder / VECTORS_FILE
    for file in (items_path, vectors_path):
        if file.is_symlink() or not file.is_file():
            raise InvalidPackError(f"{where}: {file.name} is missing or not a file")
    if items_path.stat().st_size > items.max_bytes:
        raise InvalidPackError(f"{where}: {items.file} is larger than {items.max_bytes} bytes")
    try:
        found = json.loads(items_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InvalidPackError(f"{where}: {items.file}: {exc}") from None
    if not isinstance(found, list) or len(found) > items.max_items or not all(map(items.valid, found)):
        raise InvalidPackError(
            f"{where}: {items.file} is not a list of at most {items.max_items} {items.noun}"
        )
    if vectors_path.stat().st_size > 4 * dimension * items.max_items + 4096:
        raise InvalidPackError(f"{where}: {VECTORS_FILE} is larger than {items.max_items} vectors")
    try:
        vectors = np.load(vectors_path, allow_pickle=False)
    except (OSError, ValueError, SyntaxError, EOFError) as exc:
        raise InvalidPackError(f"{where}: {VECTORS_FILE}: {exc}") from None
    if vectors.dtype != np.float32 or vectors.shape != (len(found), dimension):
        raise InvalidPackError(
            f"{where}: {VECTORS_FILE} holds {vectors.dtype} {vectors.shape}, "
            f"not float32 ({len(found)}, {dimension})"
        )
    if not bool(np.isfinite(vectors).all()):
        raise InvalidPackError(f"{where}: {VECTORS_FILE} holds non-finite values")
    return found, vectors
