"""Claude's wire: ``POST {base}/v1/messages`` on the standard library alone (``http.client``,
``ssl``, ``json``). A question asked with a key set imports these, a few hundredths of a second,
instead of the ``anthropic`` SDK, seconds of CPU (its pydantic models are built at import).

:class:`Wire` sends one request on a connection of its own and reads the reply: its status,
headers and body bytes; or, for a streamed request, the server-sent events put together into the
message JSON a plain call returns, each piece of text handed to ``on_text`` as it arrives.

Every step ends by the answer's deadline: connecting gets at most the connect timeout and the time
left, sending and each read from the socket at most the read timeout and the time left. So a
server that trickles its headers or body a byte a second is cut at the deadline.

What it reads of the environment, as httpx did under the SDK: the proxies (``HTTPS_PROXY``,
``HTTP_PROXY``, ``ALL_PROXY``, the lower-case names first, and ``NO_PROXY``): an http:// proxy,
through a CONNECT tunnel for https; loopback never goes through one. The CA certificates: the
system's (``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` set them) and certifi's bundle when certifi is
installed.

Failures: :class:`TransportError` before the reply is whole, named as httpx named them
(``ConnectError``, ``ReadTimeout``, ``RemoteProtocolError``...), so the messages users see stay
the same; :class:`StreamBroken` when a stream breaks off after its HTTP 200.
"""

from __future__ import annotations

import http.client
import io
import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from wikigr import __version__, schema

if TYPE_CHECKING:
    import ssl

__all__ = [
    "API_VERSION",
    "DEFAULT_BASE_URL",
    "ConnectError",
    "ConnectTimeout",
    "Proxy",
    "ReadError",
    "ReadTimeout",
    "RemoteProtocolError",
    "Response",
    "StreamBroken",
    "TimeoutException",
    "TransportError",
    "Wire",
    "WriteError",
    "WriteTimeout",
    "proxy_for",
]

API_VERSION = "2023-06-01"
DEFAULT_BASE_URL = "https://api.anthropic.com"
_CHUNK = 64 * 1024


# -- failures ----------------------------------------------------------------------------------


class TransportError(Exception):
    """The exchange failed before the whole reply was read."""


class ConnectError(TransportError):
    """Connecting failed: the name, a refusal, TLS, or the proxy's tunnel."""


class WriteError(TransportError):
    """Sending the request failed."""


class ReadError(TransportError):
    """Reading the reply failed (the connection was reset, say)."""


class RemoteProtocolError(TransportError):
    """The server broke the protocol: it closed the connection early or sent what is not HTTP
    (or not server-sent events)."""


class TimeoutException(TransportError):
    """A step ran out of time: its timeout, or the answer's deadline."""


class ConnectTimeout(TimeoutException):
    pass


class WriteTimeout(TimeoutException):
    pass


class ReadTimeout(TimeoutException):
    pass


class StreamBroken(Exception):
    """A streamed reply broke off after its HTTP 200: an ``error`` event (``body``, its data as
    JSON, or its text) or the connection (``failure``)."""

    def __init__(self, body: object = None, failure: TransportError | None = None) -> None:
        super().__init__(str(failure) if failure is not None else str(body))
        self.body = body
        self.failure = failure


# -- replies -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Response:
    """What the server answered: for a stream, the message put together from its events."""

    status: int
    reason: str
    headers: dict[str, str]  # names lower-cased
    body: bytes

    def error_body(self) -> object:
        """The body as an error is read: its JSON when it parses, else its text (stripped)."""
        text = self.body.decode("utf-8", "replace").strip()
        try:
            return json.loads(text)
        except (ValueError, RecursionError):
            return text


def _time_left(timeout: float, deadline: float | None) -> float:
    """Seconds the next step may wait: ``timeout``, or less when the deadline comes first."""
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the reply ran past the answer's time budget")
    return min(timeout, left)


class _Reader(io.RawIOBase):
    """The socket as a file whose every read waits at most ``limit()`` seconds."""

    def __init__(self, sock: socket.socket, limit: Callable[[], float]) -> None:
        self._sock = sock
        self._limit = limit

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self._sock.settimeout(self._limit())
        return self._sock.recv_into(buffer)


class _Reply(http.client.HTTPResponse):
    """An HTTP response read through :class:`_Reader`: the time left bounds each read, of the
    status line and headers as of the body, not only the wait for the next byte."""

    def __init__(self, sock: socket.socket, limit: Callable[[], float]) -> None:
        super().__init__(sock, method="POST")
        self.fp.close()  # the socket's own file object, whose reads have one fixed timeout
        self.fp = io.BufferedReader(_Reader(sock, limit))


@contextmanager
def _failures(timeout: type[TimeoutException], other: type[TransportError]) -> Iterator[None]:
    """The standard library's exceptions of one step as :class:`TransportError`."""
    try:
        yield
    except TimeoutError as exc:
        raise timeout(str(exc) or "timed out") from exc
    except http.client.IncompleteRead as exc:
        received = len(exc.partial)
        expected = f", expected {received + exc.expected}" if exc.expected is not None else ""
        raise RemoteProtocolError(
            f"peer closed connection without sending complete message body (received {received} "
            f"bytes{expected})"
        ) from exc
    except http.client.RemoteDisconnected as exc:
        raise RemoteProtocolError("Server disconnected without sending a response.") from exc
    except http.client.HTTPException as exc:
        raise RemoteProtocolError(f"{type(exc).__name__}: {exc}") from exc
    except OSError as exc:
        raise other(str(exc) or type(exc).__name__) from exc


# -- proxies -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Proxy:
    """An http:// proxy: where it listens and the header that logs in to it, if it needs one."""

    host: str
    port: int
    headers: dict[str, str] = field(default_factory=dict)


def _env_proxy(name: str) -> tuple[str, str] | None:
    """(the variable, its value) of ``name`` (``https``...): the lower-case name first, as curl and
    httpx read them; the upper-case HTTP_PROXY is not read under CGI (REQUEST_METHOD set)."""
    lower = f"{name}_proxy"
    upper = lower.upper()
    if lower in os.environ:
        value, var = os.environ[lower], lower
    elif upper in os.environ and not (name == "http" and "REQUEST_METHOD" in os.environ):
        value, var = os.environ[upper], upper
    else:
        return None
    return (var, value.strip()) if value.strip() else None


def _loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.endswith(".localhost") or host.startswith("127.")


def _bypassed(host: str) -> bool:
    """Whether ``NO_PROXY`` names ``host``: ``*``, the host itself, or a domain it is in
    (``example.com`` covers example.com and its subdomains, ``.example.com`` only its subdomains)."""
    found = _env_proxy("no")
    for entry in found[1].lower().split(",") if found else []:
        entry = entry.strip().split("://", 1)[-1]
        if entry == "*":
            return True
        if entry.startswith("["):  # [::1] or [::1]:port
            entry = entry[1 : entry.find("]")]
        elif entry.count(":") == 1:  # host:port
            entry = entry.split(":", 1)[0]
        entry = entry.removeprefix("*")
        if entry and (host == entry or host.endswith(entry if entry.startswith(".") else "." + entry)):
            return True
    return False


def proxy_for(scheme: str, host: str) -> Proxy | None:
    """The proxy the environment sets for ``scheme``://``host``, or None. ValueError when the
    setting is not an http:// proxy."""
    host = host.lower()
    found = _env_proxy(scheme) or _env_proxy("all")
    if found is None or _loopback(host) or _bypassed(host):
        return None
    var, value = found
    parts = urlsplit(value if "://" in value else "http://" + value)
    try:
        port = parts.port
    except ValueError:
        port = -1
    if parts.scheme != "http" or not parts.hostname or port == -1:
        raise ValueError(f"{var} must name an http:// proxy (host:port), not {value!r}")
    headers = {}
    if parts.username is not None:
        import base64

        login = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        headers["Proxy-Authorization"] = "Basic " + base64.b64encode(login).decode("ascii")
    return Proxy(parts.hostname, port or 80, headers)


# -- the wire ----------------------------------------------------------------------------------


class Wire:
    """``POST {base_url}/v1/messages`` with this key: one connection per request, closed after.

    ValueError when ``base_url`` is not an http:// or https:// URL, the key is not printable ASCII
    or the environment's proxy for the URL is not an http:// proxy."""

    def __init__(self, base_url: str, api_key: str) -> None:
        parts = urlsplit(base_url)
        try:
            port = parts.port
        except ValueError:
            port = -1
        if parts.scheme not in ("http", "https") or not parts.hostname or port == -1:
            raise ValueError(f"ANTHROPIC_BASE_URL must be an http:// or https:// URL, not {base_url!r}")
        if not (api_key.isascii() and api_key.isprintable()):
            raise ValueError("ANTHROPIC_API_KEY holds characters no HTTP header can carry")
        self.https = parts.scheme == "https"
        self.host = parts.hostname
        self.port = port or (443 if self.https else 80)
        self.path = parts.path.rstrip("/") + "/v1/messages"
        self.proxy = proxy_for(parts.scheme, self.host)
        self.headers = {
            "x-api-key": api_key,
            "anthropic-version": API_VERSION,
            "content-type": "application/json",
            "accept": "application/json",
            "user-agent": f"wikigr/{__version__}",
        }
        self._context: ssl.SSLContext | None = None

    def send(
        self,
        body: dict[str, Any],
        *,
        connect_timeout: float,
        read_timeout: float,
        deadline: float | None = None,
        on_text: Callable[[str], None] | None = None,
    ) -> Response:
        """Send ``body`` (JSON) and read the reply. With ``"stream": true`` in ``body`` and a 200
        of server-sent events, ``on_text`` gets each piece of text and the body returned is the
        message they make. Raises :class:`TransportError`, or :class:`StreamBroken`."""
        data = json.dumps(body).encode("utf-8")

        def limit() -> float:
            return _time_left(read_timeout, deadline)

        conn: http.client.HTTPConnection | None = None
        reply: _Reply | None = None
        try:
            with _failures(ConnectTimeout, ConnectError):
                conn = self._connection(_time_left(connect_timeout, deadline))
                conn.connect()
            sock = conn.sock
            with _failures(WriteTimeout, WriteError):
                sock.settimeout(limit())
                conn.request("POST", self._target(), data, self._request_headers())
            with _failures(ReadTimeout, ReadError):
                reply = _Reply(sock, limit)
                reply.begin()
            headers = {name.lower(): value for name, value in reply.getheaders()}
            streamed = headers.get("content-type", "").startswith("text/event-stream")
            if body.get("stream") is True and reply.status == 200 and streamed:
                content = _read_stream(reply, on_text)
            else:
                with _failures(ReadTimeout, ReadError):
                    content = reply.read()
            return Response(reply.status, reply.reason, headers, content)
        finally:
            if reply is not None:
                reply.close()
            if conn is not None:
                conn.close()  # a failed connect leaves no socket open either

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        """A connection, not yet open, to the server (or to the proxy, which tunnels to the
        server for https)."""
        host, port = (self.proxy.host, self.proxy.port) if self.proxy else (self.host, self.port)
        conn: http.client.HTTPConnection
        if self.https:
            conn = http.client.HTTPSConnection(host, port, timeout=timeout, context=self._ssl())
            if self.proxy is not None:
                conn.set_tunnel(self.host, self.port, headers=self.proxy.headers)
        else:
            conn = http.client.HTTPConnection(host, port, timeout=timeout)
        return conn

    def _target(self) -> str:
        """The request target: the path, or to an http proxy the whole URL."""
        if self.proxy is None or self.https:
            return self.path
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{self.path}"

    def _request_headers(self) -> dict[str, str]:
        if self.proxy is None or self.https:
            return self.headers
        return {**self.headers, **self.proxy.headers}

    def _ssl(self) -> ssl.SSLContext:
        """The system's CA certificates, and certifi's bundle when it is installed (made once)."""
        if self._context is None:
            import ssl

            context = ssl.create_default_context()
            try:
                import certifi
            except ImportError:
                pass
            else:
                context.load_verify_locations(certifi.where())
            self._context = context
        return self._context


# -- streams -----------------------------------------------------------------------------------


def _events(reply: http.client.HTTPResponse) -> Iterator[tuple[str, str]]:
    """(event, data) of each server-sent event, as it arrives. TransportError when reading fails."""
    name = ""
    data: list[str] = []
    pending = b""
    while True:
        with _failures(ReadTimeout, ReadError):
            chunk = reply.read1(_CHUNK)
        pending += chunk
        lines = pending.splitlines(keepends=True)
        pending = b""
        if chunk and lines and (lines[-1].endswith(b"\r") or not lines[-1].endswith(b"\n")):
            pending = lines.pop()  # an unfinished line, or a \r whose \n may come next
        for raw in lines:
            line = raw.rstrip(b"\r\n").decode("utf-8", "replace")
            if not line:
                if name or data:
                    yield name, "\n".join(data)
                name, data = "", []
            elif not line.startswith(":"):  # a comment
                key, _, value = line.partition(":")
                value = value.removeprefix(" ")
                if key == "event":
                    name = value
                elif key == "data":
                    data.append(value)
        if not chunk:
            if name or data:
                yield name, "\n".join(data)
            return


def _read_stream(reply: http.client.HTTPResponse, on_text: Callable[[str], None] | None) -> bytes:
    """The message a stream of events makes, as the JSON body of a plain reply."""
    message = _Message()
    try:
        for name, data in _events(reply):
            piece = message.add(name, data)
            if piece and on_text is not None:
                on_text(piece)
        if not message.stopped:
            raise RemoteProtocolError("the stream ended before message_stop")
        return message.body()
    except TransportError as err:
        raise StreamBroken(failure=err) from err


class _Message:
    """A message put together from its stream's events, as the Messages API sends it whole."""

    def __init__(self) -> None:
        self.message: dict[str, Any] | None = None
        self.inputs: dict[int, str] = {}  # a tool_use block's input JSON, by the block's index
        self.stopped = False

    def add(self, name: str, data: str) -> str | None:
        """Take one event in; returns the text it adds to the answer, if any. StreamBroken for an
        ``error`` event, RemoteProtocolError for an event that does not fit."""
        if not name or name == "ping" or not data.strip():
            return None
        try:
            event = schema.parse_json(data)
        except schema.JSONError as exc:
            if name == "error":
                raise StreamBroken(body=data.strip()) from exc
            raise RemoteProtocolError(f"a {name} event that is {exc}") from exc
        if name == "error" or (isinstance(event, dict) and event.get("type") == "error"):
            raise StreamBroken(body=event)
        try:
            return self._apply(event)
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise RemoteProtocolError(f"a malformed {name} event ({type(exc).__name__}: {exc})") from exc

    def _apply(self, event: dict[str, Any]) -> str | None:
        kind = event["type"]
        if kind == "message_start":
            self.message = {**event["message"], "content": list(event["message"].get("content") or [])}
            return None
        if kind == "message_stop":
            self.stopped = True
            return None
        if self.message is None:
            if kind in ("content_block_start", "content_block_delta", "content_block_stop", "message_delta"):
                raise RemoteProtocolError(f"a {kind} event before message_start")
            return None  # an event type this client does not know
        content: list[dict[str, Any]] = self.message["content"]
        if kind == "content_block_start":
            content.append(dict(event["content_block"]))
        elif kind == "content_block_delta":
            return self._delta(content[event["index"]], event["index"], event["delta"])
        elif kind == "content_block_stop":
            self._finish_input(content, event["index"])
        elif kind == "message_delta":
            self.message.update({k: v for k, v in event["delta"].items() if v is not None})
            usage = self.message.setdefault("usage", {})
            usage.update({k: v for k, v in (event.get("usage") or {}).items() if v is not None})
        return None

    def _delta(self, block: dict[str, Any], index: int, delta: dict[str, Any]) -> str | None:
        kind = delta["type"]
        if kind == "text_delta" and block["type"] == "text":
            block["text"] += delta["text"]
            return str(delta["text"])
        if kind == "input_json_delta":
            self.inputs[index] = self.inputs.get(index, "") + delta["partial_json"]
        elif kind == "citations_delta" and block["type"] == "text":
            block["citations"] = [*(block.get("citations") or []), delta["citation"]]
        elif kind == "thinking_delta" and block["type"] == "thinking":
            block["thinking"] += delta["thinking"]
        elif kind == "signature_delta" and block["type"] == "thinking":
            block["signature"] = delta["signature"]
        return None

    def _finish_input(self, content: list[dict[str, Any]], index: int) -> None:
        """A tool's input, whole: the JSON its partial_json pieces make."""
        text = self.inputs.pop(index, "")
        if text.strip():
            try:
                content[index]["input"] = schema.parse_json(text)
            except schema.JSONError as exc:
                raise RemoteProtocolError(f"a tool's input that is {exc}") from exc

    def body(self) -> bytes:
        """The message as JSON (fields without a value left out, as the SDK's message was)."""
        if self.message is None:
            raise RemoteProtocolError("a stream without message_start")
        for index in list(self.inputs):  # a block the stream did not stop
            self._finish_input(self.message["content"], index)
        message = {k: v for k, v in self.message.items() if v is not None}
        message["content"] = [
            {k: v for k, v in block.items() if v is not None} for block in self.message["content"]
        ]
        return json.dumps(message).encode("utf-8")
