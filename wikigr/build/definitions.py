"""Write a pack's definitions (:mod:`wikigr.pack.definitions`): every API its chunks define,
embedded as "name: what it does" with the pack's embedder, at build time."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from wikigr.embed import Embedder
from wikigr.pack.definitions import DEFINITIONS_DIR, MAX_DEFINITIONS, MAX_FIELD, write_definitions
from wikigr.retrieval.page_index import definition_texts


def build_definitions(pack: Path, chunk_ids: Sequence[str], texts: Sequence[str], embedder: Embedder) -> int:
    """Write ``pack``'s definitions from its chunks (``chunk_ids`` and their ``texts``), at most
    :data:`MAX_DEFINITIONS`; the number written (0: an empty table, which says none was found)."""
    entries: list[tuple[str, str]] = []
    embedded: list[str] = []
    for chunk_id, text in zip(chunk_ids, texts, strict=True):
        if len(chunk_id) > MAX_FIELD:
            continue
        for name, shown in definition_texts(text):
            if 0 < len(name) <= MAX_FIELD and len(entries) < MAX_DEFINITIONS:
                entries.append((chunk_id, name))
                embedded.append(shown)
    unique = list(dict.fromkeys(embedded))  # "keys(): Return a new view of the dictionary's keys." once
    found = embedder.embed(unique) if unique else np.zeros((0, embedder.dimension), np.float32)
    row = {text: n for n, text in enumerate(unique)}
    vectors = found[[row[text] for text in embedded]] if embedded else found
    write_definitions(pack / DEFINITIONS_DIR, entries, vectors)
    return len(entries)
