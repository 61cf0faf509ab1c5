"""A pack's archive downloaded for ``pack install URL``: the URL checked first (http(s) only), the
download capped in bytes and in time, whatever the server sends."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from wikigr.errors import ShareError, UsageError, one_line
from wikigr.progress import ProgressCallback, ProgressEvent
from wikigr.share.files import human
from wikigr.share.intake import InstallLimits


def check_url(text: str) -> str:
    """``text`` as an http(s) URL to download, or a :class:`UsageError` saying why not."""
    import httpx

    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - parsing the port raises on a bad one
        httpx.URL(text)
    except (ValueError, httpx.InvalidURL) as exc:
        raise UsageError(f"invalid URL {text!r}: {one_line(exc)}") from exc
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise UsageError(f"refusing {text}: only http(s) URLs can be installed, not {scheme}:")
    if not parts.hostname:
        raise UsageError(f"invalid URL {text!r}: no host")
    return text


def download(url: str, dest: Path, limits: InstallLimits, progress: ProgressCallback) -> None:
    """Download ``url`` into ``dest`` within ``limits.timeout`` seconds in all (like curl's
    ``--max-time``): the transfer runs in a worker thread and this one stops it at the deadline,
    whatever the server sends (a body or headers trickled a byte at a time included)."""
    deadline = time.monotonic() + limits.timeout
    events: queue.SimpleQueue[ProgressEvent] = queue.SimpleQueue()
    outcome: list[BaseException | None] = []
    stop = threading.Event()

    def work() -> None:
        try:
            _fetch(url, dest, limits, events.put, stop)
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            outcome.append(exc)

    worker = threading.Thread(target=work, name="wikigr-download", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(max(0.0, min(0.1, deadline - time.monotonic())))
            while not events.empty():
                progress(events.get())
            if worker.is_alive() and time.monotonic() >= deadline:
                raise ShareError(f"cannot download {url}: timed out after {limits.timeout:g}s")
    finally:
        stop.set()  # a worker still reading gives up at its next read
    while not events.empty():
        progress(events.get())
    error = outcome[0] if outcome else ShareError(f"cannot download {url}: the download stopped")
    if error is not None:
        raise error


def _fetch(
    url: str,
    dest: Path,
    limits: InstallLimits,
    report: Callable[[ProgressEvent], None],
    stop: threading.Event,
) -> None:
    import httpx

    from wikigr.sources.fetch import default_user_agent  # loads httpx too: only for a URL install

    cap = limits.max_download_bytes
    timeout = httpx.Timeout(min(limits.timeout, 60.0))  # per connect or read; the deadline is the caller's
    headers = {"User-Agent": default_user_agent(), "Accept-Encoding": "identity"}
    try:
        with (
            httpx.Client(timeout=timeout, follow_redirects=True, max_redirects=5, headers=headers) as client,
            client.stream("GET", url) as response,
        ):
            if response.url.scheme not in ("http", "https"):
                raise ShareError(f"refusing {url}: redirected to a non-http(s) URL")
            if response.status_code != 200:
                raise ShareError(f"cannot download {url}: HTTP {response.status_code}")
            declared = response.headers.get("content-length")
            if declared and declared.isdigit() and int(declared) > cap:
                raise ShareError(f"refusing {url}: {human(int(declared))}, over the cap of {human(cap)}")
            size = 0
            total = int(declared) if declared and declared.isdigit() else 0
            with dest.open("wb") as f:
                for block in response.iter_bytes():  # as each read arrives, not 1 MiB at a time
                    if stop.is_set():
                        return
                    size += len(block)
                    if size > cap:
                        raise ShareError(f"refusing {url}: larger than the cap of {human(cap)}")
                    f.write(block)
                    report(ProgressEvent("download", size, total))
    except httpx.TimeoutException as exc:
        raise ShareError(f"cannot download {url}: timed out after {min(limits.timeout, 60.0):g}s") from exc
    except httpx.HTTPError as exc:
        raise ShareError(f"cannot download {url}: {one_line(exc)}") from exc
