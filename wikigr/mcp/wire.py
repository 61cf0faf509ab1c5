"""JSON-RPC 2.0 over stdio, one message a line: what a line is, and the lines written back.

Standard library only. A line is read as bytes and sorted (:func:`read_line`) into a request, a
notification, a message that needs no reply (a client's response), or the error reply it gets
(JSON-RPC 2.0): bytes that are not UTF-8 or not JSON a parse error (-32700, id null); JSON that
is not a request (``[]``, ``null``, an object as ``id``) an invalid request (-32600, id null
unless the request's id can be read); a request holding a lone surrogate such as ``"\\udcff"``
(not Unicode text) invalid params (-32602). Which lines those are is what the MCP SDK's reader
(pydantic) accepted, so a client sees what it saw before.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO

from wikigr import schema

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
CONNECTION_CLOSED = -32000
UNSUPPORTED_PROTOCOL_VERSION = -32022

# The JSON parser of the SDK's reader (pydantic's) refuses nesting deeper than this; json reads
# deeper, and such a line that is a request is answered as an invalid request.
MAX_DEPTH = 200

RequestId = int | str


@dataclass(frozen=True)
class Request:
    id: RequestId
    method: str
    params: dict[str, Any] | None
    has_params: bool


@dataclass(frozen=True)
class Notification:
    method: str
    params: dict[str, Any] | None


@dataclass(frozen=True)
class Reply:
    """The error a line gets instead of being served."""

    message: dict[str, Any]


Line = Request | Notification | Reply | None  # None: nothing to do (a client's response, a blank)


def error(request_id: RequestId | None, code: int, message: str, data: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": body}


def result(request_id: RequestId, value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


def read_line(raw: bytes) -> Line:
    """What the line ``raw`` is (see the module's docstring)."""
    if not raw.strip():
        return None  # a blank line is no message
    message = _served(raw)
    if message is not None:
        return message
    reply = _reply_to(raw)
    return None if reply is None else Reply(reply)


def _served(raw: bytes) -> Request | Notification | None:
    """The request or notification the SDK's reader took ``raw`` for (a client's response: a
    Notification of no method is never made; None), or None when it refused the line."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if text.startswith("\ufeff"):
        return None  # its parser takes no byte-order mark
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or _depth(message) > MAX_DEPTH:
        return None
    if not schema.is_unicode(message):
        return None  # its parser refuses a lone surrogate
    method, params = message.get("method"), message.get("params")
    if not isinstance(method, str) or not (params is None or isinstance(params, dict)):
        return None
    if "id" not in message:
        return Notification(method, params)
    request_id = message["id"]
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return None  # read as a notification by the SDK: answered as an invalid request here
    return Request(request_id, method, params, "params" in message)


def _depth(value: Any) -> int:
    """How deeply ``value`` nests lists and objects that hold something (a scalar, ``[]`` or
    ``{}``: 0), as the SDK's parser counts its recursion."""
    depth, level = 0, [value]
    while level := [node for node in level if isinstance(node, dict | list) and node]:
        depth += 1
        level = [item for node in level for item in (node.values() if isinstance(node, dict) else node)]
    return depth


def _reply_to(raw: bytes) -> dict[str, Any] | None:
    """The error reply to a line the SDK's reader refused, or None for a notification or a
    response, to which no reply is due."""
    try:
        message = schema.parse_json(schema.decode_utf8(raw))
    except schema.JSONError as exc:  # not UTF-8, not JSON, a number too long, nested too deeply
        text = str(exc) if str(exc).startswith("not UTF-8") else "not JSON"
        return error(None, PARSE_ERROR, f"Error: the message is {text}")
    if isinstance(message, dict):
        if "method" in message and "id" not in message:
            return None  # a notification
        if "method" not in message and "id" in message and ("result" in message or "error" in message):
            return None  # a response
    request_id = message.get("id") if isinstance(message, dict) else None
    readable = isinstance(request_id, int | str) and not isinstance(request_id, bool)
    if not readable or not schema.is_unicode(request_id):
        request_id = None  # JSON-RPC: null when the id cannot be made out
    if not schema.is_unicode(message):
        return error(
            request_id,
            INVALID_PARAMS,
            "Error: the request holds a lone surrogate (such as \\udcff), which is not Unicode text",
        )
    return error(request_id, INVALID_REQUEST, "Error: not a valid JSON-RPC request")


def encode(message: dict[str, Any]) -> str:
    """A message as one line of JSON; a float that is not finite is null (as the SDK wrote it:
    JSON has no NaN), a value JSON does not know its text."""
    try:
        return json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
    except ValueError:  # a NaN or an infinity
        return encode(_finite(message))


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


class Writer:
    """Whole lines to stdout, one message each, under a lock (the reader and the worker write)."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        data = encode(message).encode("utf-8") + b"\n"
        with self._lock:
            try:
                self._stream.write(data)
                self._stream.flush()
            except (BrokenPipeError, ValueError):  # the client went away: nobody reads
                pass


def claim_stdin() -> tuple[BinaryIO, Callable[[], None]]:
    """stdin's bytes from a private copy of fd 0, fd 0 itself pointed at the null device (a child
    process reads EOF, not the protocol), and the function that points it back; stdin's own
    buffer when fd 0 cannot be copied."""
    try:
        private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        return sys.stdin.buffer, lambda: None
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)

    def restore() -> None:
        os.dup2(private, 0)
        os.close(private)

    return os.fdopen(private, "rb", closefd=False), restore
