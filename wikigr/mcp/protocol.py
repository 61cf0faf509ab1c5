"""What each MCP request is answered, as the MCP SDK's server answered it (tests/fixtures/
mcp_wire.json): the handshake, the versions, the 2026-07-28 per-request envelope, the methods, and
the shape of a result.

A connection's first request decides its era. A request carrying the 2026-07-28 envelope
(``params._meta`` naming the protocol version) opens a modern connection: each request carries
its own envelope, ``server/discover`` replaces the handshake, results name their kind
(``resultType``) and the server (``_meta``). Anything else opens a handshake connection:
``initialize`` gets the version the client asks for when it is one of
:data:`HANDSHAKE_VERSIONS`, else the latest of them, and requests other than ``ping`` wait for it
(or for ``notifications/initialized``).

wikigr serves tools only: the prompt and resource lists are empty, a prompt or a resource asked
for is unknown, and a ``subscriptions/listen`` stream is acknowledged but has nothing to send.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from wikigr import __version__
from wikigr.errors import WikigrError
from wikigr.mcp.catalogue import INSTRUCTIONS, SERVER_NAME, TOOLS
from wikigr.mcp.wire import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
    Notification,
    Request,
    RequestId,
    error,
    result,
)

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_VERSIONS = ("2026-07-28",)
LATEST_HANDSHAKE = HANDSHAKE_VERSIONS[-1]

VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_KEY = "io.modelcontextprotocol/subscriptionId"

SERVER_INFO = {"name": SERVER_NAME, "version": __version__}
INVALID_PARAMS_MESSAGE = "Invalid request parameters"

# The methods the spec defines in each era (another is unknown: -32601, even if served in the
# other), and those served here (a known method not served is -32601 too).
_BOTH = {"completion/complete", "prompts/get", "prompts/list", "resources/list", "resources/read"}
_BOTH |= {"resources/templates/list", "tools/call", "tools/list"}
HANDSHAKE_METHODS = frozenset(
    _BOTH | {"initialize", "logging/setLevel", "ping", "resources/subscribe", "resources/unsubscribe"}
)
MODERN_METHODS = frozenset(_BOTH | {"server/discover", "subscriptions/listen"})
NOT_SERVED = frozenset(
    {"completion/complete", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}
)
LISTS = {  # the lists served, empty
    "prompts/list": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
}
CACHEABLE = frozenset({*LISTS, "tools/list", "server/discover"})  # 2026-07-28: ttlMs, cacheScope


@dataclass(frozen=True)
class Era:
    """How results are shaped on a connection: its protocol version."""

    version: str

    @property
    def modern(self) -> bool:
        return self.version in MODERN_VERSIONS

    def capabilities(self) -> dict[str, Any]:
        changes = self.modern  # 2026-07-28: changes are announced on subscriptions/listen
        return {
            "prompts": {"listChanged": changes},
            "resources": {"subscribe": changes, "listChanged": changes},
            "tools": {"listChanged": changes},
        }

    def result(self, request: Request, value: dict[str, Any]) -> dict[str, Any]:
        if self.modern:
            if request.method in CACHEABLE:
                value = {"ttlMs": 0, "cacheScope": "private", **value}
            value = {**value, "resultType": "complete", "_meta": {SERVER_INFO_KEY: dict(SERVER_INFO)}}
        return result(request.id, value)

    def tool_result(
        self, request: Request, data: dict[str, Any] | None, failure: str | None
    ) -> dict[str, Any]:
        """A ``tools/call`` answer: the data as JSON text and as structured content, or the
        one-line error with ``isError``."""
        if failure is not None:
            return self.result(request, {"content": [_text(failure)], "isError": True})
        text = pretty_json(data)
        return self.result(request, {"content": [_text(text)], "structuredContent": data, "isError": False})


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


_SMALL = re.compile(r"(-?)(\d)(?:\.(\d+))?e-0?(\d+)")


def pretty_json(data: Any) -> str:
    """``data`` as the text of a tool's result, as the SDK wrote it (pydantic's JSON, indented by
    2): ``json.dumps``, but a float under 1e-4 as pydantic spells it (``0.00005``, ``1e-7``; Python:
    ``5e-05``, ``1e-07``)."""
    marks: dict[str, str] = {}

    def marked(value: Any) -> Any:
        if isinstance(value, float) and (match := _SMALL.fullmatch(repr(value))):
            sign, first, rest, exponent = match[1], match[2], match[3] or "", int(match[4])
            mark = f"{uuid.uuid4().hex}"
            marks[f'"{mark}"'] = (
                f"{sign}0.0000{first}{rest}"
                if exponent == 5
                else f"{sign}{first}{'.' + rest if rest else ''}e-{exponent}"
            )
            return mark
        if isinstance(value, dict):
            return {k: marked(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [marked(v) for v in value]
        return value

    text = json.dumps(marked(data), indent=2, ensure_ascii=False, default=str)
    for mark, number in marks.items():
        text = text.replace(mark, number)
    return text


@dataclass(frozen=True)
class ToolCall:
    """A ``tools/call`` to run in the worker."""

    name: str
    arguments: dict[str, Any]
    era: Era


@dataclass(frozen=True)
class Listening:
    """A ``subscriptions/listen`` stream opened: its acknowledgement is written, the request stays
    open (wikigr's tools never change, so nothing follows) until cancelled or the end."""

    acknowledgement: dict[str, Any]


Outcome = dict[str, Any] | ToolCall | Listening


def tool_error_text(tool: str, exc: Exception) -> str:
    """The one line a failed call is answered with: ours as the CLI says it; a crash by the
    tool's name only (its details stay on this side, as with the SDK)."""
    if isinstance(exc, WikigrError):
        return f"Error: {exc.message}"
    return f"Error executing tool {tool}"


def connection_closed(request_id: RequestId) -> dict[str, Any]:
    """The answer of a request left open when the client closes the connection."""
    return error(request_id, CONNECTION_CLOSED, "Connection closed")


@dataclass
class State:
    """A connection's era, handshake and open ``subscriptions/listen`` streams."""

    era: Era | None = None  # None until the first request decides
    initialized: bool = False  # the handshake's notification came
    accepted: bool = False  # initialize was answered
    listening: list[RequestId] = field(default_factory=list)

    def notified(self, note: Notification) -> None:
        if note.method == "notifications/initialized":
            self.initialized = True
        elif note.method == "notifications/cancelled":
            cancelled = (note.params or {}).get("requestId")
            self.listening = [r for r in self.listening if r != cancelled or isinstance(cancelled, bool)]

    def answer(self, request: Request) -> Outcome:
        """The reply to ``request``, the tool call to run for it, or the stream it opens."""
        if self.era is None:
            opens_modern = request.method != "initialize" and _enveloped(request.params)
            self.era = Era(MODERN_VERSIONS[-1] if opens_modern else LATEST_HANDSHAKE)
        if self.era.modern:
            return self._modern(request)
        return self._handshake(request)

    # -- the handshake era ---------------------------------------------------------------------

    def _handshake(self, request: Request) -> Outcome:
        assert self.era is not None
        if request.method != "initialize" and _enveloped(request.params):
            return error(
                request.id,
                INVALID_REQUEST,
                "this connection serves the handshake protocol era; requests carrying the "
                "2026-07-28 envelope are not accepted on it",
            )
        refused = _refusal(request, HANDSHAKE_METHODS)
        if refused is not None:
            return refused
        if request.method == "initialize":
            params = request.params or {}
            asked = params.get("protocolVersion")
            version = asked if isinstance(asked, str) and asked in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE
            self.era, self.accepted = Era(version), True
            value = {
                "protocolVersion": version,
                "capabilities": self.era.capabilities(),
                "serverInfo": SERVER_INFO,
                "instructions": INSTRUCTIONS,
            }
            return result(request.id, value)
        if not (self.accepted or self.initialized) and request.method != "ping":
            return error(request.id, INVALID_PARAMS, INVALID_PARAMS_MESSAGE, "")
        return self._serve(request)

    # -- the 2026-07-28 era ----------------------------------------------------------------------

    def _modern(self, request: Request) -> Outcome:
        if request.method == "initialize":
            asked = (request.params or {}).get("protocolVersion")
            data: dict[str, Any] = {"supported": list(MODERN_VERSIONS)}
            if isinstance(asked, str):
                data["requested"] = asked
            return error(
                request.id,
                UNSUPPORTED_PROTOCOL_VERSION,
                "connection is serving the 2026-07-28 protocol; the initialize handshake is not accepted",
                data,
            )
        refused = _envelope_refusal(request) or _refusal(request, MODERN_METHODS)
        if refused is not None:
            return refused
        return self._serve(request)

    # -- the methods -----------------------------------------------------------------------------

    def _serve(self, request: Request) -> Outcome:
        assert self.era is not None
        era, params, method = self.era, request.params or {}, request.method
        if method == "tools/call":
            return ToolCall(str(params["name"]), dict(params.get("arguments") or {}), era)
        if method == "ping":
            return era.result(request, {})
        if method == "tools/list":
            return era.result(request, {"tools": [tool.listing() for tool in TOOLS.values()]})
        if method in LISTS:
            return era.result(request, {LISTS[method]: []})
        if method == "server/discover":
            value = {"supportedVersions": list(MODERN_VERSIONS), "capabilities": era.capabilities()}
            return era.result(request, {**value, "instructions": INSTRUCTIONS})
        if method == "subscriptions/listen":
            self.listening.append(request.id)
            return Listening(_acknowledgement(request.id, params["notifications"]))
        if method == "prompts/get":  # a failure of the SDK's prompt lookup: said apart from errors
            if era.modern:
                return error(request.id, INTERNAL_ERROR, "Internal server error")
            return error(request.id, 0, f"Unknown prompt: {params['name']}")
        if method == "resources/read":
            uri = params["uri"]
            return error(request.id, INVALID_PARAMS, f"Unknown resource: {uri}", {"uri": uri})
        return error(request.id, METHOD_NOT_FOUND, "Method not found", method)


def _acknowledgement(request_id: RequestId, asked: dict[str, Any]) -> dict[str, Any]:
    """The notification that opens a ``subscriptions/listen`` stream: the kinds of notification
    asked for (every kind is honoured; none ever comes)."""
    honoured: dict[str, Any] = {
        key: True
        for key in ("toolsListChanged", "promptsListChanged", "resourcesListChanged")
        if _flag(asked.get(key))
    }
    if asked.get("resourceSubscriptions"):
        honoured["resourceSubscriptions"] = asked["resourceSubscriptions"]
    params = {"_meta": {SUBSCRIPTION_KEY: request_id}, "notifications": honoured}
    return {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": params}


_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})


def _flag(value: Any) -> bool:
    return value is True or value == 1 or (isinstance(value, str) and value.lower() in _TRUE)


def _is_flag(value: Any) -> bool:
    """Whether ``value`` reads as a true-or-false (or null), as pydantic reads a bool."""
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, int | float):
        return value in (0, 1)
    return isinstance(value, str) and value.lower() in _TRUE | _FALSE


def _enveloped(params: dict[str, Any] | None) -> bool:
    """Whether ``params._meta`` names the protocol version: the 2026-07-28 envelope."""
    meta = (params or {}).get("_meta")
    return isinstance(meta, dict) and VERSION_KEY in meta


def _envelope_refusal(request: Request) -> dict[str, Any] | None:
    """The error a 2026-07-28 request whose envelope is missing, incomplete or of another
    version gets, or None."""
    meta = (request.params or {}).get("_meta")
    if not isinstance(meta, dict):
        return error(
            request.id,
            INVALID_PARAMS,
            f"params._meta must be an object carrying the required {VERSION_KEY!r} and "
            f"{CAPABILITIES_KEY!r} envelope keys",
        )
    missing = [key for key in (VERSION_KEY, CAPABILITIES_KEY) if key not in meta]
    if missing:
        return error(
            request.id,
            INVALID_PARAMS,
            f"params._meta is missing the required envelope key(s): {', '.join(missing)}",
        )
    version = meta[VERSION_KEY]
    if not isinstance(version, str):
        return error(request.id, INVALID_PARAMS, "the protocol-version envelope value must be a string")
    if version not in MODERN_VERSIONS:
        data = {"supported": list(MODERN_VERSIONS), "requested": version}
        return error(request.id, UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version", data)
    return None


def _refusal(request: Request, methods: frozenset[str]) -> dict[str, Any] | None:
    """The error of a request of a method unknown in this era or not served (-32601), or of
    params that do not fit its method (-32602); None when it may be served."""
    if request.method not in methods:
        return error(request.id, METHOD_NOT_FOUND, "Method not found", request.method)
    if not _params_fit(request.method, request.params or {}):
        return error(request.id, INVALID_PARAMS, INVALID_PARAMS_MESSAGE, "")
    if request.method in NOT_SERVED:
        return error(request.id, METHOD_NOT_FOUND, "Method not found", request.method)
    return None


def _params_fit(method: str, params: dict[str, Any]) -> bool:
    """Whether ``params`` fit the spec's shape of ``method`` (the fields wikigr reads)."""

    def text(key: str, required: bool = True) -> bool:
        return isinstance(params.get(key), str) if required or key in params else True

    if not isinstance(params.get("_meta", {}), dict):
        return False
    if method == "tools/call":
        return text("name") and (params.get("arguments") is None or isinstance(params["arguments"], dict))
    if method in ("tools/list", *LISTS):
        return text("cursor", required=False)
    if method == "initialize":
        info = params.get("clientInfo")
        return (
            text("protocolVersion")
            and isinstance(params.get("capabilities"), dict)
            and isinstance(info, dict)
            and isinstance(info.get("name"), str)
            and isinstance(info.get("version"), str)
        )
    if method in ("resources/read", "resources/subscribe", "resources/unsubscribe"):
        return text("uri")
    if method == "prompts/get":
        return text("name")
    if method == "subscriptions/listen":
        asked = params.get("notifications")
        if not isinstance(asked, dict):
            return False
        flags = ("toolsListChanged", "promptsListChanged", "resourcesListChanged")
        uris = asked.get("resourceSubscriptions")
        return all(_is_flag(asked.get(key)) for key in flags) and (
            uris is None or (isinstance(uris, list) and all(isinstance(u, str) for u in uris))
        )
    return True
