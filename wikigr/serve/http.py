"""Requests and error replies of ``wikigr serve``: a request's JSON body read within limits, and
every failure of a route as JSON ``{"error": "one line"}`` — 4xx for what the CLI calls usage
errors (exit 2), 5xx for runtime failures (exit 1)."""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from wikigr import schema
from wikigr.errors import PackNotFoundError, UsageError, WikigrError
from wikigr.llm.errors import LLMError

log = logging.getLogger("wikigr.serve")

STATIC = Path(__file__).parent / "static"
MAX_BODY_BYTES = 64 * 1024
MAX_DRAIN_BYTES = 16 * 1024 * 1024  # of a refused body, read and dropped so the client hears why


class ApiError(Exception):
    """A refusal with its HTTP status (what is not a :class:`WikigrError`: size, media type...)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def status_of(exc: WikigrError) -> int:
    """The HTTP status of an error: 4xx where the CLI exits 2, 5xx where it exits 1."""
    if isinstance(exc, PackNotFoundError):
        return 404
    if isinstance(exc, UsageError):
        return 400
    if isinstance(exc, LLMError):
        return 502  # Claude, upstream of us, failed
    return 500


def error_json(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": " ".join(message.split())}, status_code=status, headers=headers)


def internal_error(exc: BaseException) -> str:
    if os.environ.get("WIKIGR_DEBUG"):
        log.exception("internal error")
    else:
        log.error("internal error: %s: %s", type(exc).__name__, exc)
    return f"internal error: {type(exc).__name__}: {exc}"


def guarded(
    handler: Callable[[Request], Awaitable[Response]], redact: Callable[[str], str]
) -> Callable[[Request], Awaitable[Response]]:
    """Every failure of a route as a JSON error of one line, never a traceback, ``redact``-ed
    (the served packs' folders given as their names)."""

    @functools.wraps(handler)
    async def wrapped(request: Request) -> Response:
        try:
            return await handler(request)
        except ApiError as exc:
            return error_json(exc.status, redact(exc.message))
        except WikigrError as exc:
            return error_json(status_of(exc), redact(exc.message))
        except Exception as exc:  # noqa: BLE001 - reported as a 500 of one line
            return error_json(500, redact(internal_error(exc)))

    return wrapped


async def read_json(request: Request) -> dict[str, Any]:
    """The request's JSON object, at most :data:`MAX_BODY_BYTES`."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/json":
        raise ApiError(415, "send the body as JSON with Content-Type: application/json")
    body = bytearray()
    too_big = False
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_DRAIN_BYTES:
        raise ApiError(413, f"the request body is larger than {MAX_BODY_BYTES} bytes")
    async for chunk in request.stream():
        if too_big:
            continue  # drained, so the client reads the answer instead of a reset connection
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            too_big = True
    if too_big:
        raise ApiError(413, f"the request body is larger than {MAX_BODY_BYTES} bytes")
    try:
        data = schema.parse_json(bytes(body))  # under 64 KiB, '[[[...' may still be nested too deeply
    except schema.JSONError as exc:
        raise UsageError(f"the body is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise UsageError("the body must be a JSON object")
    if not schema.is_unicode(data):  # the MCP server refuses a lone surrogate too
        raise UsageError("the body holds a lone surrogate (such as \\udcff), which is not valid UTF-8 text")
    return data


def int_param(value: object, name: str, low: int, high: int) -> int:
    # ASCII digits only ('²' is a digit int() refuses), and not thousands of them (int() refuses
    # over 4300); anything else is refused with the same message
    text = value.strip() if isinstance(value, str) else ""
    if text.isascii() and text.isdigit() and len(text) <= 18:
        value = int(text)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise UsageError(f"{name} must be an integer from {low} to {high}")
    return value
