"""``wikigr serve``: a REST API (``/api/v1``) and a web page over the packs, in one process.

from wikigr.serve import serve
serve(["packs/pydocs"], port=8700)   # until Ctrl-C; the packs home when no pack is given

The application is :func:`wikigr.serve.app.create_app` (Starlette); uvicorn runs it. Nothing here
is imported by ``wikigr query``: the web stack loads only when a server starts.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from wikigr.serve.net import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    check_token,
    is_loopback,
    listen,
    read_token_file,
    url_of,
)

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "check_token",
    "is_loopback",
    "listen",
    "read_token_file",
    "serve",
    "url_of",
]


def serve(
    packs: Sequence[str | Path] = (),
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token: str | None = None,
    on_ready: Callable[[str], None] | None = None,
    read_only: bool = False,
) -> None:
    """Serve the packs named, else the packs home; return after Ctrl-C or SIGTERM (requests in
    progress are finished first). ``on_ready(url)`` is called once the socket listens.
    ``read_only``: refuse every write (build, update, remove...) with 403."""
    check_token(token, host)
    import uvicorn

    from wikigr.serve.app import create_app

    app = create_app(packs, token=token, loopback=is_loopback(host), read_only=read_only)
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
