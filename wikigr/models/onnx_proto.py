"""The few ONNX protobuf messages a generated model needs, written by hand (no ``onnx`` package).

A model is a tree of messages; each message is bytes: fields of (number, wire type) keys followed by
a varint, a 4-byte float or a length-delimited payload. Field numbers are those of onnx.proto
(ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto, ValueInfoProto, TypeProto,
TensorShapeProto, OperatorSetIdProto). Repeated scalars are written unpacked, as proto2 does.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

import numpy as np

FLOAT, UINT8, INT8, INT32, INT64 = 1, 2, 3, 6, 7  # TensorProto.DataType
_DTYPES = {
    np.dtype(np.float32): FLOAT,
    np.dtype(np.uint8): UINT8,
    np.dtype(np.int8): INT8,
    np.dtype(np.int32): INT32,
}
_DTYPES[np.dtype(np.int64)] = INT64

# AttributeProto.AttributeType
_ATTR_FLOAT, _ATTR_INT, _ATTR_STRING, _ATTR_INTS = 1, 2, 3, 7

IR_VERSION = 8  # ONNX 1.10+: opset 17 with a contrib domain


def _varint(value: int) -> bytes:
    if value < 0:
        value += 1 << 64  # int64 as two's complement, ten bytes
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _int(field: int, value: int) -> bytes:
    return _key(field, 0) + _varint(value)


def _bytes(field: int, payload: bytes) -> bytes:
    return _key(field, 2) + _varint(len(payload)) + payload


def _str(field: int, text: str) -> bytes:
    return _bytes(field, text.encode("utf-8"))


def _float(field: int, value: float) -> bytes:
    return _key(field, 5) + struct.pack("<f", value)


def attribute(name: str, value: int | float | str | Sequence[int]) -> bytes:
    """An AttributeProto: an int, a float, a string or a list of ints."""
    body = _str(1, name)
    if isinstance(value, bool | int):
        body += _int(3, int(value)) + _int(20, _ATTR_INT)
    elif isinstance(value, float):
        body += _float(2, value) + _int(20, _ATTR_FLOAT)
    elif isinstance(value, str):
        body += _bytes(4, value.encode("utf-8")) + _int(20, _ATTR_STRING)
    else:
        body += b"".join(_int(8, int(v)) for v in value) + _int(20, _ATTR_INTS)
    return body


def node(
    op: str,
    inputs: Sequence[str],
    outputs: Sequence[str],
    name: str,
    domain: str = "",
    **attributes: int | float | str | Sequence[int],
) -> bytes:
    """A NodeProto (an empty input name is an optional input left out)."""
    body = b"".join(_str(1, i) for i in inputs) + b"".join(_str(2, o) for o in outputs)
    body += _str(3, name) + _str(4, op)
    body += b"".join(_bytes(5, attribute(k, v)) for k, v in attributes.items())
    if domain:
        body += _str(7, domain)
    return body


def tensor(name: str, array: np.ndarray) -> bytes:
    """A TensorProto with its values as raw little-endian bytes."""
    data = np.ascontiguousarray(array)
    dtype = _DTYPES[data.dtype]
    body = b"".join(_int(1, d) for d in data.shape) + _int(2, dtype) + _str(8, name)
    return body + _bytes(9, data.astype(data.dtype.newbyteorder("<"), copy=False).tobytes())


def value_info(name: str, elem_type: int, shape: Sequence[int | str]) -> bytes:
    """A ValueInfoProto: a graph input or output, its dimensions numbers or symbolic names."""
    dims = b"".join(_bytes(1, _int(1, d) if isinstance(d, int) else _str(2, d)) for d in shape)
    tensor_type = _int(1, elem_type) + _bytes(2, dims)
    return _str(1, name) + _bytes(2, _bytes(1, tensor_type))


def model(
    nodes: Iterable[bytes],
    initializers: Iterable[bytes],
    inputs: Iterable[bytes],
    outputs: Iterable[bytes],
    opsets: dict[str, int],
    name: str = "graph",
    producer: str = "wikigr",
) -> bytes:
    """A serialized ModelProto of one graph."""
    graph = b"".join(_bytes(1, n) for n in nodes) + _str(2, name)
    graph += b"".join(_bytes(5, t) for t in initializers)
    graph += b"".join(_bytes(11, i) for i in inputs) + b"".join(_bytes(12, o) for o in outputs)
    body = _int(1, IR_VERSION) + _str(2, producer)
    body += b"".join(_bytes(8, _str(1, domain) + _int(2, version)) for domain, version in opsets.items())
    return body + _bytes(7, graph)
