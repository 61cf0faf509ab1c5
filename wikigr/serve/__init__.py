"""``wikigr serve``: a REST API (``/api/v1``) and a web page over the packs, in one process.

from wikigr.serve import serve
serve(["packs/pydocs"], port=8700)   # until Ctrl-C; the packs home when no pack is given

The application is :func:`wikigr.serve.app.create_app` (Starlette); uvicorn runs it. Nothing here
is imported by ``wikigr query``: the web stack loads only when a server starts.
"""

from __future__ import annotations

import ipaddress
import signal
import socket
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from wikigr.errors import UsageError, WikigrError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8700
MIN_TOKEN_CHARS = 16


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (or ``localhost``): only this machine can connect."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_token(token: str | None, host: str) -> None:
    """A token is needed to listen beyond loopback; one given must be long enough to guess."""
    if token is None:
        if not is_loopback(host):
            raise UsageError(
                f"listening on {host} lets other machines connect: give a token (--token or --token-file) "
                "that every request must then carry"
            )
        return
    if not token or any(c.isspace() for c in token):
        raise UsageError("the token is empty or contains spaces")
    if len(token) < MIN_TOKEN_CHARS:
        raise UsageError(f"the token must have at least {MIN_TOKEN_CHARS} characters")


def read_token_file(path: Path) -> str:
    """The token in a file (its first line, stripped)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise UsageError(f"no token file {path}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the token file {path}: {exc}") from exc
    lines = text.strip().splitlines()
    return lines[0].strip() if lines else ""


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (port 0: a free one), or a one-line error."""
    if not 0 <= port <= 65535:
        raise UsageError(f"the port must be from 0 to 65535, not {port}")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UsageError(f"cannot listen on {host}: {exc.strerror}") from exc
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise WikigrError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def serve(
    packs: Sequence[str | Path] = (),
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token: str | None = None,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve the packs named, else the packs home; return after Ctrl-C or SIGTERM (requests in
    progress are finished first). ``on_ready(url)`` is called once the socket listens."""
    check_token(token, host)
    import uvicorn

    from wikigr.serve.app import create_app

    app = create_app(packs, token=token, loopback=is_loopback(host))
    sock = listen(host, port)
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=5
    )
    server = uvicorn.Server(config)
    if on_ready is not None:
        on_ready(url_of(sock))
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _interrupt) if main else None
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn shut down gracefully, then passed the signal on: done
        pass
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        sock.close()


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM once uvicorn has shut down (it passes the signal on): stop as Ctrl-C does."""
    raise KeyboardInterrupt
