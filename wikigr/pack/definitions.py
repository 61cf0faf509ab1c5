"""A pack's definitions: every API its documents define, and its vector, for how-to questions.

A documentation page defines APIs: a line that shows the name (``time.sleep(secs)``) and the
sentence after it that says what it does ("Suspend execution of the calling thread for the given
number of seconds."). The build embeds each as "name: sentence" with the pack's embedder
(``definitions/entries.json``: each one's chunk id and name; ``definitions/vectors.npy``). A how-to
question ("How do I pause my program for two seconds?") is then compared with every definition of
the pack — one matrix product, no model call — and the nearest lead its answer, although the
passage that holds ``time.sleep`` is not among the question's nearest passages (it holds a dozen
other functions of the module). What reads a page's definitions is the retrieval's
(:func:`wikigr.retrieval.page_index.definition_texts`); this module is the file format, read as
data: sizes capped, shape and values checked (:meth:`Definitions.load`, which ``pack validate``
runs).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from wikigr.pack.vectors import Items, read_vectors_folder, write_vectors_folder

DEFINITIONS_DIR = "definitions"
ENTRIES_FILE = "entries.json"
MAX_DEFINITIONS = 200_000  # 300 MB of 384-d vectors at most; the whole Python 3.11 docs define 11,644
MAX_ENTRIES_BYTES = 64 * 1024 * 1024
MAX_FIELD = 1000  # characters of a chunk id or a name


def _entry(item: object) -> bool:
    """Whether ``item`` is [chunk id, name]."""
    return (
        isinstance(item, list)
        and len(item) == 2
        and all(isinstance(f, str) and 0 < len(f) <= MAX_FIELD for f in item)
    )


ITEMS = Items(
    "definitions", ENTRIES_FILE, "[chunk id, name] entries", MAX_DEFINITIONS, MAX_ENTRIES_BYTES, _entry
)


def write_definitions(folder: Path, entries: list[tuple[str, str]], vectors: np.ndarray) -> None:
    """Save ``entries`` (chunk id, name) and their unit ``vectors`` as ``folder``, as a whole."""
    write_vectors_folder(folder, ENTRIES_FILE, [list(e) for e in entries], vectors)


@dataclass(frozen=True)
class Definitions:
    """Loaded definitions: ``entries[i]`` (its chunk id, its name) has the unit vector ``vectors[i]``."""

    entries: list[tuple[str, str]]
    vectors: np.ndarray

    @classmethod
    def load(cls, pack: Path, dimension: int) -> Definitions | None:
        """``pack``'s definitions (None if it has none), checked: an :class:`InvalidPackError` names
        what is wrong with ones that are damaged, too large, or not of the embedder's ``dimension``."""
        found = read_vectors_folder(pack / DEFINITIONS_DIR, ITEMS, dimension)
        if found is None:
            return None
        items, vectors = found
        return cls([(chunk, name) for chunk, name in items], vectors)

    @classmethod
    def joined(cls, parts: list[Definitions]) -> Definitions:
        """The definitions of several stores as one (a pack in shards: each shard has its own)."""
        if len(parts) == 1:
            return parts[0]
        entries = [entry for part in parts for entry in part.entries]
        return cls(entries, np.concatenate([part.vectors for part in parts]))

    @cached_property
    def qualified(self) -> float:
        """The share of the definitions whose name is qualified (``time.sleep``,
        ``HTTPConnection.set_debuglevel``): about two thirds of an API reference's (the Python docs),
        a few of a man page's, whose definition lines are its options and words."""
        return sum("." in name for _, name in self.entries) / len(self.entries) if self.entries else 0.0

    def cosines(self, vector: np.ndarray) -> np.ndarray:
        """Each definition's cosine to the unit ``vector``."""
        # einsum, not @: BLAS threads beside the ONNX embedder's thread pool make @ ~4x slower here
        out: np.ndarray = np.einsum("ij,j->i", self.vectors, np.asarray(vector, np.float32))
        return out

    def nearest(self, vector: np.ndarray, k: int) -> list[tuple[str, str, float]]:
        """The ``k`` definitions nearest to the unit ``vector``: (chunk id, name, cosine), best first."""
        if not self.entries or k <= 0:
            return []
        cosines = self.cosines(vector)
        k = min(k, len(self.entries))
        top = np.argpartition(-cosines, k - 1)[:k]
        top = top[np.argsort(-cosines[top], kind="stable")]
        return [(*self.entries[i], float(cosines[i])) for i in top.tolist()]
