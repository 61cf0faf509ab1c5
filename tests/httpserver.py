"""A real HTTP server on 127.0.0.1 for tests: static routes, canned misbehaviours, a directory.

Usage::

    with LocalServer() as server:
        server.add("/page.html", b"<h1>Hi</h1>")
        server.redirect("/old", "/page.html")
        url = server.url("/old")
        ...
        assert server.hits("/page.html") == 1

or as a pytest fixture (see ``tests/sources/conftest.py``)::

    @pytest.fixture
    def server() -> Iterator[LocalServer]:
        with LocalServer() as s:
            yield s

Routes can be added at any time, also after the server started. A path with no route is served
from ``root`` (a real directory tree) when one is given, else 404. The server speaks HTTP/1.0:
one request per connection, so a body without Content-Length simply ends when the socket closes.
"""

from __future__ import annotations

import mimetypes
import socket
import threading
import traceback
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Self
from urllib.parse import unquote, urlsplit

__all__ = ["LocalServer", "LoopbackServer", "QuietServer", "Reply", "Request", "closed_port_url"]

_CHUNK = 64 * 1024


@dataclass(frozen=True)
class Request:
    """What a handler sees of a request."""

    method: str
    path: str  # without the query string
    query: str
    headers: dict[str, str]
    hit: int  # 1 for the first request to this path, 2 for the second...


@dataclass
class Reply:
    """What the server sends back.

    ``body`` is bytes, or an iterable of byte chunks (streamed, for huge bodies). ``delay`` is
    how long to wait before sending anything (a slow server). ``content_length``: True sends the
    real length (bytes body only), False sends none, an int sends that number (it may lie).
    """

    status: int = 200
    body: bytes | Iterable[bytes] = b""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str | None = "text/html; charset=utf-8"
    delay: float = 0.0
    content_length: bool | int = True


Handler = Callable[[Request], Reply]


def closed_port_url(path: str = "/") -> str:
    """A URL on 127.0.0.1 at a port nobody listens on (connection refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}{path}"


class QuietServer(ThreadingHTTPServer):
    """A threading HTTP server that knows the test object it serves (``owner``)."""

    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    owner: Any

    def handle_error(self, request: object, client_address: object) -> None:
        """Clients that hang up early (timeouts, size caps) are expected: stay quiet."""


class LoopbackServer:
    """A server on 127.0.0.1 (a free port) in a background thread, as a context manager.
    Subclasses set ``handler``, whose ``self.server.owner`` is the subclass instance."""

    handler: ClassVar[type[BaseHTTPRequestHandler]]

    #: The loopback address it listens on (a subclass may take another: 127.0.0.2).
    host = "127.0.0.1"

    def __init__(self) -> None:
        self._stopping = threading.Event()
        self._server: QuietServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        if self._server is not None:
            return self
        self._stopping.clear()
        server = QuietServer((self.host, 0), self.handler)
        server.owner = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError(f"the {type(self).__name__} server is not running")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"


class _RequestHandler(BaseHTTPRequestHandler):
    server: QuietServer
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: object) -> None:
        """No logging to stderr."""

    def do_GET(self) -> None:
        self._respond(send_body=True)

    def do_HEAD(self) -> None:
        self._respond(send_body=False)

    def _respond(self, *, send_body: bool) -> None:
        owner = self.server.owner
        parts = urlsplit(self.path)
        path = unquote(parts.path)
        request = Request(
            method=self.command,
            path=path,
            query=parts.query,
            headers={k.lower(): v for k, v in self.headers.items()},
            hit=owner._count(path),
        )
        owner._record(request)
        handler = owner._handler_for(path)
        try:
            reply = handler(request) if handler is not None else owner._from_root(path)
        except Exception:  # noqa: BLE001 - a broken test handler becomes a visible 500
            owner.errors.append(traceback.format_exc())
            reply = Reply(status=500, body=b"handler error", content_type="text/plain")
        try:
            if reply.delay > 0 and owner._stopping.wait(reply.delay):
                return  # the server is shutting down
            self.send_response(reply.status)
            if reply.content_type is not None:
                self.send_header("Content-Type", reply.content_type)
            body = reply.body
            if isinstance(reply.content_length, int) and not isinstance(reply.content_length, bool):
                self.send_header("Content-Length", str(reply.content_length))
            elif reply.content_length is True and isinstance(body, bytes):
                self.send_header("Content-Length", str(len(body)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            if not send_body:
                return
            if isinstance(body, bytes):
                self.wfile.write(body)
            else:
                for chunk in body:
                    if owner._stopping.is_set():
                        return
                    self.wfile.write(chunk)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError):
            return  # the client gave up, as the test intended


class LocalServer(LoopbackServer):
    """A threaded HTTP server on 127.0.0.1 at a free port, serving routes and optionally a tree."""

    handler = _RequestHandler

    def __init__(self, root: Path | None = None) -> None:
        super().__init__()
        self.root = root
        self._routes: dict[str, Handler] = {}
        self._hits: Counter[str] = Counter()
        self._requests: list[Request] = []
        self._lock = threading.Lock()
        #: Tracebacks of route handlers that raised (each was answered with a 500).
        self.errors: list[str] = []

    # -- addresses -----------------------------------------------------------------------------

    def url(self, path: str = "/") -> str:
        if not path.startswith("/"):
            path = "/" + path
        return self.base_url + path

    # -- routes --------------------------------------------------------------------------------

    def route(self, path: str, handler: Handler) -> str:
        """Serve ``path`` with ``handler``; returns the path's URL."""
        with self._lock:
            self._routes[path] = handler
        return self.url(path)

    def add(
        self,
        path: str,
        body: bytes | str = b"",
        *,
        status: int = 200,
        content_type: str | None = "text/html; charset=utf-8",
        headers: dict[str, str] | None = None,
    ) -> str:
        """A static reply (str bodies are sent as UTF-8)."""
        data = body.encode("utf-8") if isinstance(body, str) else body
        reply = Reply(status=status, body=data, headers=dict(headers or {}), content_type=content_type)
        return self.route(path, lambda _request: reply)

    def encoded(
        self,
        path: str,
        text: str,
        encoding: str,
        *,
        declared: str | None = None,
        media_type: str = "text/html",
    ) -> str:
        """``text`` encoded in ``encoding``; the Content-Type names ``declared`` as its charset
        (which may differ from ``encoding``, to play a misconfigured server), or none when None."""
        content_type = f"{media_type}; charset={declared}" if declared else media_type
        return self.add(path, text.encode(encoding), content_type=content_type)

    def binary(
        self, path: str, data: bytes = b"\x89PNG\r\n\x1a\n\x00\x00", content_type: str = "image/png"
    ) -> str:
        """Bytes with a binary content type (a PNG signature by default)."""
        return self.add(path, data, content_type=content_type)

    def redirect(self, path: str, to: str, status: int = 302) -> str:
        """Redirect ``path`` to ``to`` (a path or an absolute URL)."""
        reply = Reply(status=status, headers={"Location": to}, content_type=None)
        return self.route(path, lambda _request: reply)

    def redirect_loop(self, a: str, b: str) -> str:
        """``a`` redirects to ``b`` and ``b`` back to ``a``; returns ``a``'s URL."""
        self.redirect(b, a)
        return self.redirect(a, b)

    def redirect_chain(self, prefix: str, length: int, final: str) -> str:
        """``prefix0`` -> ``prefix1`` -> ... -> ``final`` (``length`` redirects); returns the start."""
        for i in range(length):
            target = f"{prefix}{i + 1}" if i + 1 < length else final
            self.redirect(f"{prefix}{i}", target)
        return self.url(f"{prefix}0")

    def slow(self, path: str, delay: float, body: bytes | str = b"<p>late</p>") -> str:
        """Wait ``delay`` seconds before answering."""
        data = body.encode("utf-8") if isinstance(body, str) else body
        reply = Reply(body=data, delay=delay)
        return self.route(path, lambda _request: reply)

    def huge(
        self,
        path: str,
        size: int,
        *,
        content_length: bool = True,
        content_type: str = "text/html; charset=utf-8",
    ) -> str:
        """Stream ``size`` bytes of text, with or without a Content-Length header."""

        def chunks() -> Iterator[bytes]:
            sent = 0
            line = b"<p>" + b"x" * 1000 + b"</p>\n"
            block = (line * (_CHUNK // len(line) + 1))[:_CHUNK]
            while sent < size:
                piece = block[: min(_CHUNK, size - sent)]
                sent += len(piece)
                yield piece

        length: bool | int = size if content_length else False
        return self.route(
            path,
            lambda _request: Reply(body=chunks(), content_type=content_type, content_length=length),
        )

    def flaky(
        self,
        path: str,
        failures: int,
        *,
        status: int = 429,
        retry_after: str | None = None,
        then: Reply | None = None,
    ) -> str:
        """Answer ``status`` to the first ``failures`` requests, then ``then`` (200 by default)."""
        success = then if then is not None else Reply(body=b"<p>finally</p>")
        headers = {"Retry-After": retry_after} if retry_after is not None else {}

        def handler(request: Request) -> Reply:
            if request.hit <= failures:
                return Reply(status=status, body=b"try later", headers=headers, content_type="text/plain")
            return success

        return self.route(path, handler)

    def always(self, path: str, status: int = 500) -> str:
        """Answer ``status`` every time."""
        reply = Reply(status=status, body=b"broken", content_type="text/plain")
        return self.route(path, lambda _request: reply)

    # -- inspection ----------------------------------------------------------------------------

    def hits(self, path: str) -> int:
        """How many requests reached ``path``."""
        with self._lock:
            return self._hits[path]

    @property
    def requests(self) -> list[Request]:
        with self._lock:
            return list(self._requests)

    # -- internals -----------------------------------------------------------------------------

    def _count(self, path: str) -> int:
        with self._lock:
            self._hits[path] += 1
            return self._hits[path]

    def _record(self, request: Request) -> None:
        with self._lock:
            self._requests.append(request)

    def _handler_for(self, path: str) -> Handler | None:
        with self._lock:
            return self._routes.get(path)

    def _from_root(self, path: str) -> Reply:
        if self.root is None:
            return Reply(status=404, body=b"not found", content_type="text/plain")
        root = self.root.resolve()
        target = (root / path.lstrip("/")).resolve()
        if not target.is_relative_to(root):
            return Reply(status=403, body=b"forbidden", content_type="text/plain")
        if target.is_dir():
            target = target / "index.html"
        if not target.is_file():
            return Reply(status=404, body=b"not found", content_type="text/plain")
        guessed, _ = mimetypes.guess_type(target.name)
        if target.suffix.lower() in (".md", ".markdown"):
            guessed = "text/markdown"
        content_type = guessed or "application/octet-stream"
        if content_type.startswith("text/"):
            content_type += "; charset=utf-8"
        return Reply(body=target.read_bytes(), content_type=content_type)
