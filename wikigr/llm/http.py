"""The HTTP client under the Anthropic SDK, bounded by the time budget of the answer being given."""

from __future__ import annotations

import threading
import time
from typing import Any

__all__ = ["budgeted_http_client"]


def budgeted_http_client(local: threading.local) -> Any:
    """The SDK's HTTP client (httpx2, an httpx) whose every connect, read and write ends by the
    deadline of the answer being given in this thread (``local.attempt_deadline``, None: no
    deadline). httpx's timeouts bound each read, not a whole reply: a server that sends a byte a
    second, of its headers or of its body, would otherwise hold an answer for ever. The deadline
    is read in the calling thread, which does its own network I/O (the client is synchronous)."""
    import anthropic
    import httpcore2

    def left(timeout: float | None, late: type[Exception]) -> float | None:
        end: float | None = getattr(local, "attempt_deadline", None)
        if end is None:
            return timeout
        remaining = end - time.monotonic()
        if remaining <= 0:
            raise late("the reply ran past the answer's time budget")
        return remaining if timeout is None else min(timeout, remaining)

    class Stream(httpcore2.NetworkStream):
        def __init__(self, inner: httpcore2.NetworkStream) -> None:
            self._inner = inner

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return self._inner.read(max_bytes, left(timeout, httpcore2.ReadTimeout))

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            self._inner.write(buffer, left(timeout, httpcore2.WriteTimeout))

        def close(self) -> None:
            self._inner.close()

        def start_tls(
            self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
        ) -> Stream:
            inner = self._inner.start_tls(
                ssl_context, server_hostname, left(timeout, httpcore2.ConnectTimeout)
            )
            return Stream(inner)

        def get_extra_info(self, info: str) -> Any:
            return self._inner.get_extra_info(info)

    class Backend(httpcore2.NetworkBackend):
        def __init__(self, inner: httpcore2.NetworkBackend) -> None:
            self._inner = inner

        def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,
            local_address: str | None = None,
            socket_options: Any = None,
        ) -> Stream:
            timeout = left(timeout, httpcore2.ConnectTimeout)
            return Stream(self._inner.connect_tcp(host, port, timeout, local_address, socket_options))

        def connect_unix_socket(
            self, path: str, timeout: float | None = None, socket_options: Any = None
        ) -> Stream:
            timeout = left(timeout, httpcore2.ConnectTimeout)
            return Stream(self._inner.connect_unix_socket(path, timeout, socket_options))

        def sleep(self, seconds: float) -> None:
            self._inner.sleep(seconds)

    client = anthropic.DefaultHttpxClient()
    # httpx2 takes no network backend: each transport's connection pool (proxies' too) gets ours
    wrapped = 0
    for transport in (client._transport, *client._mounts.values()):
        pool = getattr(transport, "_pool", None)
        if pool is not None and hasattr(pool, "_network_backend"):
            pool._network_backend = Backend(pool._network_backend)
            wrapped += 1
    if not hasattr(client._transport, "_pool") or not wrapped:  # httpx2 changed: no budget without it
        raise RuntimeError("wikigr cannot bound Claude's replies with this httpx2: its transport changed")
    return client
