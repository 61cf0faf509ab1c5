"""A site to crawl, served for real on loopback: :class:`Site` records when each request arrived
and can listen on another loopback address (127.0.0.2: "elsewhere", a second host on Linux
without any setup)."""

from __future__ import annotations

import threading
import time
from collections import Counter

from tests.httpserver import LocalServer, Request


def page(title: str, text: str, *links: str, head: str = "") -> str:
    """An HTML page with a title, a paragraph and links (each ``href`` or ``href" rel="...``)."""
    anchors = "".join(f'<li><a href="{link}">{link}</a></li>' for link in links)
    return (
        f"<html><head><title>{title}</title>{head}</head><body><h1>{title}</h1><p>{text}</p>"
        f"<ul>{anchors}</ul></body></html>"
    )


class Site(LocalServer):
    """A :class:`LocalServer` on ``host`` that keeps the arrival time of every request."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        super().__init__()
        self.host = host
        self.arrivals: list[tuple[float, str]] = []  # (time.monotonic(), path?query)
        self._arrived = threading.Condition()

    def _record(self, request: Request) -> None:
        super()._record(request)
        target = request.path + (f"?{request.query}" if request.query else "")
        with self._arrived:
            self.arrivals.append((time.monotonic(), target))
            self._arrived.notify_all()

    def asked(self) -> Counter[str]:
        """How many times each path (with its query string) was requested."""
        with self._arrived:
            return Counter(target for _, target in self.arrivals)

    def wait_for(self, count: int, prefix: str = "/", timeout: float = 600.0) -> bool:
        """Wait until ``count`` requests of paths under ``prefix`` arrived (False: timed out)."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while sum(1 for _, t in self.arrivals if t.startswith(prefix)) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._arrived.wait(left)
        return True
