"""Write a pack's definitions (:mod:`wikigr.pack.definitions`): every API its chunks define,
embedded as "name: what it does" with the pack's embedder, at build time.

A build embeds them while it writes the rest of the pack (:func:`definitions_meanwhile`): the
entity graph's spaCy and LadybugDB's bulk copy run on one core, and the embedder, on a session of
one thread (:func:`wikigr.embed.one_thread`), has the other."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path

import numpy as np

from wikigr.build.background import in_thread, wait_for
from wikigr.embed import Embedder, one_thread
from wikigr.pack.definitions import DEFINITIONS_DIR, MAX_DEFINITIONS, MAX_FIELD, write_definitions
from wikigr.retrieval.page_index import definition_texts

Defined = tuple[list[tuple[str, str]], np.ndarray]  # (chunk id, name) of each, and its vector


def embedded_definitions(chunk_ids: Sequence[str], texts: Sequence[str], embedder: Embedder) -> Defined:
    """The definitions of the chunks (``chunk_ids`` and their ``texts``), at most
    :data:`MAX_DEFINITIONS`, and their vectors (each distinct text embedded once)."""
    entries: list[tuple[str, str]] = []
    shown: list[str] = []
    for chunk_id, text in zip(chunk_ids, texts, strict=True):
        if len(chunk_id) > MAX_FIELD:
            continue
        for name, embedded in definition_texts(text):
            if 0 < len(name) <= MAX_FIELD and len(entries) < MAX_DEFINITIONS:
                entries.append((chunk_id, name))
                shown.append(embedded)
    unique = list(dict.fromkeys(shown))  # "keys(): Return a new view of the dictionary's keys." once
    found = embedder.embed(unique) if unique else np.zeros((0, embedder.dimension), np.float32)
    row = {text: n for n, text in enumerate(unique)}
    return entries, found[[row[text] for text in shown]] if shown else found


def build_definitions(pack: Path, chunk_ids: Sequence[str], texts: Sequence[str], embedder: Embedder) -> int:
    """Write ``pack``'s definitions from its chunks; the number written (0: an empty table, which
    says none was found)."""
    entries, vectors = embedded_definitions(chunk_ids, texts, embedder)
    write_definitions(pack / DEFINITIONS_DIR, entries, vectors)
    return len(entries)


def definitions_meanwhile(
    chunk_ids: Sequence[str], texts: Sequence[str], embedder: Embedder
) -> Future[Defined]:
    """:func:`embedded_definitions` in a thread of its own, started now, with ``embedder`` on a
    session of one thread: the work beside it has the other core; :func:`write_when_done` writes
    them."""
    return in_thread(
        lambda: embedded_definitions(chunk_ids, texts, one_thread(embedder)), "wikigr-definitions"
    )


def write_when_done(pack: Path, future: Future[Defined]) -> int:
    """Wait for the definitions :func:`definitions_meanwhile` embeds (a Ctrl-C seen at once), write
    them into ``pack``; the number written."""
    entries, vectors = wait_for(future)
    write_definitions(pack / DEFINITIONS_DIR, entries, vectors)
    return len(entries)
