"""Fetch sources: http(s) with bounded concurrency, retries and caps; file URLs from disk.

``fetch_all`` never raises for one URL's failure: it returns a FetchResult whose ``error`` is a
short one-line reason.
"""

from __future__ import annotations

import contextlib
import email.utils
import errno
import mimetypes
import os
import socket
import stat
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from wikigr import __version__
from wikigr.documents import FetchResult
from wikigr.errors import UsageError
from wikigr.sources.formats import (
    accept_header,
    format_for,
    guess_content_type,
    own_type,
    sniff_content_type,
    type_over_plain_text,
)
from wikigr.sources.parsing import one_line
from wikigr.sources.urls import file_url_to_path, normalize_url, special_file
from wikigr.threads import completed, join

__all__ = [
    "FetchOptions",
    "Request",
    "default_user_agent",
    "fetch_all",
    "fetch_one",
    "make_client",
]

MIB = 1024 * 1024

# Types a server sends when it does not know better; the URL's extension is trusted over them.
_GENERIC_TYPES = frozenset({"", "application/octet-stream", "binary/octet-stream", "application/x-download"})

_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


def default_user_agent() -> str:
    """``wikigr/<version> (+https://github.com/wikigr/wikigr)``."""
    return f"wikigr/{__version__} (+https://github.com/wikigr/wikigr)"


@dataclass(frozen=True)
class FetchOptions:
    """How to fetch. Defaults suit real sites; tests shrink timeouts and backoff."""

    workers: int = 8
    timeout: float = 20.0  # seconds, for each whole attempt: connect, headers and body
    max_bytes: int = 10 * MIB
    retries: int = 3  # extra attempts after the first, on 429, 5xx, timeouts, connection errors
    backoff_base: float = 0.5  # seconds; attempt n waits backoff_base * 2**n
    retry_after_cap: float = 30.0  # longest Retry-After wait honoured, seconds
    max_redirects: int = 10
    user_agent: str = field(default_factory=default_user_agent)

    def __post_init__(self) -> None:
        # These values come straight from command-line options: a bad one is a usage error.
        if self.workers < 1:
            raise UsageError(f"workers must be at least 1, not {self.workers}")
        if not self.timeout > 0:
            raise UsageError(f"timeout must be positive, not {self.timeout:g}")
        if self.max_bytes < 1:
            raise UsageError(f"the size cap must be positive, not {self.max_bytes}")
        if self.retries < 0:
            raise UsageError(f"retries must not be negative, not {self.retries}")
        if self.max_redirects < 0:
            raise UsageError(f"max_redirects must not be negative, not {self.max_redirects}")
        if self.backoff_base < 0 or self.retry_after_cap < 0:
            raise UsageError("backoff_base and retry_after_cap must not be negative")


# --------------------------------------------------------------------------------------------
# Small helpers


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _format_seconds(seconds: float) -> str:
    return f"{seconds:g}s"


def _format_size(n: int) -> str:
    if n % MIB == 0:
        return f"{n // MIB} MiB"
    if n % 1024 == 0:
        return f"{n // 1024} KiB"
    return f"{n} bytes"


def _too_large(options: FetchOptions) -> str:
    return f"larger than {_format_size(options.max_bytes)} cap"


def _split_content_type(header: str | None) -> tuple[str, str | None]:
    """``"text/html; charset=UTF-8"`` -> ``("text/html", "UTF-8")``."""
    if not header:
        return "", None
    parts = header.split(";")
    media = parts[0].strip().lower()
    charset: str | None = None
    for param in parts[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            value = value.strip().strip("'\"").strip()
            charset = value or None
    return media, charset


def _resolve_type(declared: str, url: str) -> str | None:
    """The media type to use, from the declared type and the URL; None when unsupported.

    An empty result means "decide by sniffing the body".
    """
    kept = own_type(declared)
    if kept is not None and kept != declared:  # an alias: text/x-markdown is text/markdown
        return kept
    if declared in _GENERIC_TYPES:
        return guess_content_type(url)  # "" -> sniff
    if declared == "text/plain" and (believed := type_over_plain_text(url)):
        return believed  # the URL's extension says Markdown or HTML
    return kept


def _retry_after(value: str | None, cap: float) -> float | None:
    if not value:
        return None
    value = value.strip()
    seconds: float | None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    if seconds != seconds:  # NaN
        return None
    return max(0.0, min(seconds, cap))


def _exception_chain(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _describe_connect_error(exc: BaseException) -> tuple[str, bool]:
    """(one-line reason, retryable) for a connection failure."""
    for link in _exception_chain(exc):
        if isinstance(link, socket.gaierror):
            temporary = link.errno == socket.EAI_AGAIN
            return "name not resolved", temporary
        if isinstance(link, ConnectionRefusedError):
            return "connection refused", True
        if isinstance(link, ConnectionResetError):
            return "connection reset", True
        if isinstance(link, OSError) and link.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH):
            return "network unreachable", True
    text = str(exc).lower()
    if "name or service not known" in text or "nodename nor servname" in text:
        return "name not resolved", False
    if "temporary failure in name resolution" in text:
        return "name not resolved", True
    if "refused" in text:
        return "connection refused", True
    detail = one_line(str(exc)) or exc.__class__.__name__
    return f"connection failed: {detail}", True


# --------------------------------------------------------------------------------------------
# One HTTP attempt


@dataclass(frozen=True)
class _Body:
    content: bytes
    content_type: str
    charset: str | None
    etag: str | None = None
    last_modified: str | None = None


@dataclass(frozen=True)
class _NotModified:
    pass


@dataclass(frozen=True)
class _Redirect:
    location: str
    status: int


@dataclass(frozen=True)
class _Failure:
    reason: str
    retryable: bool
    retry_after: float | None = None
    status: int = 0


_Outcome = _Body | _NotModified | _Redirect | _Failure


@dataclass(frozen=True)
class Request:
    """What one fetch asks beyond the URL. ``validators``: the ETag and Last-Modified a previous
    fetch gave (a conditional request: 304 is a result that says the source is as it was).
    ``raw``: any content type is taken (a robots.txt, a sitemap), not only documents.
    ``follow_redirects``: False gives a redirect back unfollowed: a result whose ``status`` is the
    3xx, ``final_url`` the target (absolute, normalised) and ``error`` "redirect to TARGET" (a
    crawler puts the target in its frontier, where scope, robots.txt and what it already fetched
    decide). ``retry_busy``: whether to retry a 429 or 503 here (a crawler retries them itself,
    later, slowing down)."""

    validators: tuple[str | None, str | None] = (None, None)
    raw: bool = False
    follow_redirects: bool = True
    retry_busy: bool = True


PLAIN = Request()


def _timed_out(options: FetchOptions) -> _Failure:
    return _Failure(f"timed out after {_format_seconds(options.timeout)}", True)


def _attempt(client: httpx.Client, url: str, options: FetchOptions, request: Request = PLAIN) -> _Outcome:
    """One GET of ``url`` within ``options.timeout`` in all: connecting, the headers and the body,
    like curl's ``--max-time`` and install's deadline (a server trickling its headers a byte at a
    time never trips a per-read timeout). The request runs in a worker thread that this one
    gives up on at the deadline; its socket is shut down, so the worker ends at once and the
    connection is not reused. Never raises."""
    outcome: list[_Outcome] = []
    sockets: list[socket.socket] = []
    stop = threading.Event()

    def trace(event: str, info: dict[str, Any]) -> None:
        if event == "connection.connect_tcp.complete" and info.get("return_value") is not None:
            sock = info["return_value"].get_extra_info("socket")
            if isinstance(sock, socket.socket):
                sockets.append(sock)

    def work() -> None:
        outcome.append(_attempt_until(client, url, options, stop, trace, request))

    worker = threading.Thread(target=work, name="wikigr-fetch-attempt", daemon=True)
    worker.start()
    join(worker, options.timeout)
    if outcome:
        return outcome[0]
    stop.set()
    for sock in sockets:  # a reused connection's socket is not known: that worker reads on
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
    return _timed_out(options)


def _attempt_until(
    client: httpx.Client,
    url: str,
    options: FetchOptions,
    stop: threading.Event,
    trace: Callable[[str, dict[str, Any]], None],
    request: Request = PLAIN,
) -> _Outcome:
    """One GET of ``url`` (see :func:`_attempt`), given up when ``stop`` is set."""
    started = time.monotonic()
    timed_out = _timed_out(options)
    etag, modified = request.validators
    headers = {"If-None-Match": etag} if etag else {}
    if modified:
        headers["If-Modified-Since"] = modified
    if request.raw:
        headers["Accept"] = "*/*"
    try:
        with client.stream("GET", url, headers=headers, extensions={"trace": trace}) as response:
            status = response.status_code
            if status == 304 and headers:
                return _NotModified()
            if status in _REDIRECT_STATUSES:
                location = response.headers.get("location")
                if not location:
                    return _Failure(f"HTTP {status} without a Location header", False)
                return _Redirect(location.strip(), status)
            if status >= 400:
                retryable = status == 429 or status >= 500
                wait = _retry_after(response.headers.get("retry-after"), options.retry_after_cap)
                return _Failure(f"HTTP {status}", retryable, wait, status)
            if not 200 <= status < 300:
                return _Failure(f"HTTP {status}", False, status=status)
            declared, charset = _split_content_type(response.headers.get("content-type"))
            raw = declared or "application/octet-stream"
            media = raw if request.raw else _resolve_type(declared, str(response.url))
            if media is None:
                return _Failure(f"unsupported content type {declared}", False)
            length = response.headers.get("content-length")
            if length is not None and length.strip().isdigit() and int(length) > options.max_bytes:
                return _Failure(_too_large(options), False)
            buffer = bytearray()
            for chunk in response.iter_bytes():
                buffer += chunk
                if len(buffer) > options.max_bytes:
                    return _Failure(_too_large(options), False)
                if stop.is_set() or time.monotonic() - started > options.timeout:
                    return timed_out
            content = bytes(buffer)
            validators = response.headers.get("etag"), response.headers.get("last-modified")
    except httpx.TimeoutException:
        return timed_out
    except httpx.ConnectError as exc:
        reason, retryable = _describe_connect_error(exc)
        return _Failure(reason, retryable)
    except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
        reason, retryable = _describe_connect_error(exc)
        if reason.startswith("connection failed"):
            reason = f"connection error: {one_line(str(exc)) or exc.__class__.__name__}"
        return _Failure(reason, retryable)
    except httpx.DecodingError:
        return _Failure("could not decode the response body", False)
    except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
        return _Failure(f"invalid URL: {one_line(str(exc))}", False)
    except httpx.HTTPError as exc:
        return _Failure(one_line(str(exc)) or exc.__class__.__name__, True)
    if not media:
        media = sniff_content_type(content)
        if not media:
            return _Failure(f"unsupported content type {declared or '(none, binary data)'}", False)
    return _Body(content, media, charset, *validators)


def _busy(outcome: _Outcome) -> bool:
    """A server that says it is busy or rate-limits (429, 503)."""
    return isinstance(outcome, _Failure) and outcome.status in (429, 503)


def _attempt_with_retries(
    client: httpx.Client,
    url: str,
    options: FetchOptions,
    sleep: Callable[[float], None],
    request: Request = PLAIN,
) -> _Outcome:
    outcome = _attempt(client, url, options, request)
    for attempt in range(options.retries):
        if not isinstance(outcome, _Failure) or not outcome.retryable:
            break
        if not request.retry_busy and _busy(outcome):
            break
        delay = outcome.retry_after
        if delay is None:
            delay = options.backoff_base * (2**attempt)
        sleep(delay)
        outcome = _attempt(client, url, options, request)
    return outcome


def _fetch_http(
    client: httpx.Client,
    url: str,
    options: FetchOptions,
    sleep: Callable[[float], None],
    request: Request = PLAIN,
) -> FetchResult:
    current = normalize_url(url)
    seen = {current}
    redirects = 0
    while True:
        outcome = _attempt_with_retries(client, current, options, sleep, request)
        if isinstance(outcome, _Body):
            return FetchResult(
                url=url,
                final_url=current,
                content=outcome.content,
                content_type=outcome.content_type,
                charset=outcome.charset,
                fetched_at=_now(),
                status=200,
                etag=outcome.etag,
                last_modified=outcome.last_modified,
            )
        if isinstance(outcome, _NotModified):  # no content: the source is as it was
            etag, modified = request.validators
            return FetchResult(url, current, b"", "", None, _now(), None, 304, etag, modified, True)
        if isinstance(outcome, _Failure):
            failed = _failed(url, current, outcome.reason)
            return replace(failed, status=outcome.status, retry_after=outcome.retry_after)
        target = normalize_url(urljoin(current, outcome.location))
        if urlsplit(target).scheme.lower() not in ("http", "https"):
            return _failed(url, current, "redirect to a non-http URL")
        if not request.follow_redirects:
            return replace(_failed(url, target, f"redirect to {target}"), status=outcome.status)
        if target in seen:
            return _failed(url, current, "redirect loop")
        redirects += 1
        if redirects > options.max_redirects:
            return _failed(url, current, "too many redirects")
        seen.add(target)
        current = target


def _failed(url: str, final_url: str, reason: str) -> FetchResult:
    return FetchResult(
        url=url,
        final_url=final_url,
        content=b"",
        content_type="",
        charset=None,
        fetched_at=_now(),
        error=reason,
    )


# --------------------------------------------------------------------------------------------
# Files


class _Refused(Exception):
    """A local file that is not read: a folder, a special file, one over the size cap."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _read_regular_file(path: Path, options: FetchOptions) -> bytes:
    """The bytes of the regular file at ``path``, at most the cap and one byte. A folder, FIFO,
    device or socket raises _Refused without being read: the file is opened without blocking (a
    FIFO nobody writes to) and checked again on the open descriptor (no swap between the check
    and the open)."""
    mode = path.stat().st_mode
    if stat.S_ISDIR(mode):
        raise _Refused("is a directory")
    special = special_file(mode)
    if special is not None:
        raise _Refused(f"not a regular file ({special})")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        status = os.fstat(fd)
        special = special_file(status.st_mode) or ("a folder" if stat.S_ISDIR(status.st_mode) else None)
        if special is not None:
            raise _Refused(f"not a regular file ({special})")
        if status.st_size > options.max_bytes:
            raise _Refused(_too_large(options))
        return handle.read(options.max_bytes + 1)


def _fetch_file(source: str, options: FetchOptions) -> FetchResult:
    url = normalize_url(source)  # the file's address with its "." and ".." resolved
    try:
        path = file_url_to_path(url)
    except UsageError as exc:
        return _failed(source, url, exc.message)
    try:
        content = _read_regular_file(path, options)
    except _Refused as exc:
        return _failed(source, url, exc.reason)
    except FileNotFoundError:
        return _failed(source, url, "file not found")
    except PermissionError:
        return _failed(source, url, "permission denied")
    except OSError as exc:
        return _failed(source, url, one_line(exc.strerror or str(exc)) or "cannot read file")
    if len(content) > options.max_bytes:
        return _failed(source, url, _too_large(options))
    media = guess_content_type(url)
    if not media:
        guessed, _ = mimetypes.guess_type(os.fspath(path))
        if guessed and not guessed.startswith("text/") and format_for(guessed) is None:
            return _failed(source, url, f"unsupported content type {guessed}")
        media = sniff_content_type(content)
        if not media:
            return _failed(source, url, "unsupported content type (binary data)")
    return FetchResult(
        url=source,
        final_url=url,
        content=content,
        content_type=media,
        charset=None,
        fetched_at=_now(),
    )


# --------------------------------------------------------------------------------------------
# Public API


def fetch_one(
    url: str,
    options: FetchOptions,
    client: httpx.Client | None = None,
    *,
    sleep: Callable[[float], None] = time.sleep,
    request: Request = PLAIN,
) -> FetchResult:
    """Fetch one URL. Never raises for a failure of the source: see ``FetchResult.error``."""
    scheme = urlsplit(url).scheme.lower()
    try:
        if scheme == "file":
            return _fetch_file(url, options)
        if scheme not in ("http", "https"):
            return _failed(url, url, f"unsupported URL scheme {scheme or '(none)'}")
        if client is None:
            with make_client(options) as own:
                return _fetch_http(own, url, options, sleep, request)
        return _fetch_http(client, url, options, sleep, request)
    except Exception as exc:  # noqa: BLE001 - one odd source must not sink the whole build
        return _failed(url, url, one_line(f"{exc.__class__.__name__}: {exc}"))


def make_client(options: FetchOptions) -> httpx.Client:
    return httpx.Client(
        follow_redirects=False,
        timeout=httpx.Timeout(options.timeout),
        headers={"User-Agent": options.user_agent, "Accept": accept_header()},
        limits=httpx.Limits(max_connections=options.workers, max_keepalive_connections=options.workers),
        # Proxies and CA bundles come from the environment, but loopback never goes via a proxy.
        mounts={"all://127.0.0.1": None, "all://localhost": None, "all://[::1]": None},
    )


def _close_when_done(futures: list[Future[FetchResult]], client: httpx.Client) -> None:
    wait(futures)
    client.close()


def fetch_all(
    urls: list[str],
    options: FetchOptions,
    on_progress: Callable[[FetchResult], None] | None = None,
) -> list[FetchResult]:
    """Fetch every URL with at most ``options.workers`` at a time; results in input order.

    ``on_progress`` is called once per URL as it finishes, in completion order, always from the
    calling thread. A failure of one URL never raises: its result has ``error`` set. Spellings of
    one address (``/p.html``, ``/./p.html``, ``/x/../p.html``: see ``normalize_url``) are fetched
    once; each gets the result under its own ``url``.
    """
    if not urls:
        return []
    spellings: dict[str, list[int]] = {}
    for i, url in enumerate(urls):
        spellings.setdefault(normalize_url(url), []).append(i)
    results: list[FetchResult | None] = [None] * len(urls)
    workers = min(options.workers, len(spellings))
    client = make_client(options)
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="wikigr-fetch")
    futures: dict[Future[FetchResult], list[int]] = {
        pool.submit(fetch_one, urls[where[0]], options, client): where for where in spellings.values()
    }
    try:
        for future in completed(list(futures)):
            fetched = future.result()
            for i in futures[future]:
                result = fetched if urls[i] == fetched.url else replace(fetched, url=urls[i])
                results[i] = result
                if on_progress is not None:
                    on_progress(result)
    except BaseException:
        # Interrupted (Ctrl-C) or on_progress raised: drop the queued fetches and do not wait for
        # the running ones, which may be blocked in a read for up to the timeout (a slow server).
        # Their results are not wanted; a daemon thread closes the client once they are done.
        pool.shutdown(wait=False, cancel_futures=True)
        threading.Thread(target=_close_when_done, args=(list(futures), client), daemon=True).start()
        raise
    pool.shutdown()
    client.close()
    return [r for r in results if r is not None]
