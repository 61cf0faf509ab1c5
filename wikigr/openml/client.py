"""A small client of OpenML's REST API (JSON): GET with retries, bounded concurrency and an
on-disk response cache, listings read page by page, and the helpers that read OpenML's JSON values.

- Paging: listings are read ``limit``/``offset`` page by page until a short page or OpenML's
  "No results" (HTTP 412 with ``{"error": {"code": ..., "message": "No results"}}``).
- Bounded concurrency: at most ``workers`` requests at a time (a thread pool).
- Retries with exponential backoff on 429, 5xx, timeouts, connection errors and bodies that are
  cut short or are not JSON; other 4xx fail at once (a 412 or 404 for one entity is noted and the
  build goes on without its details).
- An on-disk response cache (one JSON file per request path, written atomically): a build that
  was interrupted picks up where it stopped; the cache lives in the build's ``.NAME.partial``.

The fetch of a star from these responses is :mod:`wikigr.openml.fetch`. The library never prints.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from wikigr import __version__, schema
from wikigr.errors import WikigrError

__all__ = [
    "API",
    "DEFAULT_URL",
    "OpenMLClient",
    "OpenMLError",
    "ResponseCache",
    "as_float",
    "as_int",
    "as_list",
    "as_text",
    "error_fields",
    "paged",
]

DEFAULT_URL = "https://www.openml.org"
API = "/api/v1/json"
NO_RESULTS = "no results"
MAX_BODY = 256 * 1024 * 1024


class OpenMLError(WikigrError):
    """OpenML answered with an error (``code`` and ``message`` from its error JSON or XML), or
    stayed unreachable through the retries (``status`` None, or 429 / 5xx)."""

    def __init__(
        self,
        message: str,
        status: int | None = None,
        code: str | None = None,
        detail: str = "",
        *,
        resumable: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.detail = detail  # OpenML's own message ("Unknown study")
        # Whether running the build again may get further: a failure of the network or the
        # server, not an answer that the request itself is wrong (an unknown study, a 404).
        self.resumable = (
            resumable if resumable is not None else status is None or status == 429 or status >= 500
        )


def error_fields(content: bytes) -> tuple[str | None, str]:
    """``(code, message)`` of an OpenML error body: the JSON API's ``{"error": {"code", "message"}}``
    or the XML API's ``<oml:error><oml:code/><oml:message/></oml:error>`` (some errors come as
    XML even from the JSON API)."""
    try:
        data = schema.parse_json(content)
    except schema.JSONError:
        data = None
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        code = error.get("code")
        return (str(code) if code is not None else None), str(error.get("message") or "")
    import xml.etree.ElementTree as ET  # only for an error body

    try:
        root = ET.fromstring(content)
    except ET.ParseError:
        return None, ""
    if root.tag.rsplit("}", 1)[-1] != "error":
        return None, ""
    fields = {child.tag.rsplit("}", 1)[-1]: (child.text or "").strip() for child in root}
    return fields.get("code") or None, fields.get("message", "")


# -- the HTTP client -------------------------------------------------------------------------------


class ResponseCache:
    """One JSON file per request URL; a "No results" answer is cached too."""

    def __init__(self, root: Path | None) -> None:
        self.root = root
        if root is not None:
            root.mkdir(parents=True, exist_ok=True)

    def _file(self, path: str) -> Path:
        assert self.root is not None
        return self.root / (hashlib.sha256(path.encode("utf-8")).hexdigest()[:40] + ".json")

    def get(self, path: str) -> tuple[bool, Any]:
        if self.root is None:
            return False, None
        try:
            entry = schema.parse_json(self._file(path).read_bytes())
        except (OSError, ValueError):  # ValueError: schema.JSONError too
            return False, None
        if not isinstance(entry, dict) or entry.get("path") != path:
            return False, None
        return True, entry.get("body")

    def put(self, path: str, body: Any) -> None:
        if self.root is None:
            return
        target = self._file(path)
        tmp = target.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps({"path": path, "body": body}), encoding="utf-8")
        os.replace(tmp, target)


class OpenMLClient:
    """GET JSON from OpenML's REST API with retries, backoff and the response cache."""

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        *,
        cache_dir: Path | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.5,
        workers: int = 4,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.retries = retries
        self.backoff = backoff
        self.workers = max(1, workers)
        self.cache = ResponseCache(cache_dir)
        self.requests = 0
        self.cached = 0
        self._sleep = sleep
        self._lock = threading.Lock()
        self._http = httpx.Client(
            timeout=timeout,
            headers={"User-Agent": f"wikigr/{__version__}", "Accept": "application/json"},
            follow_redirects=True,
            limits=httpx.Limits(max_connections=self.workers),
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> OpenMLClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, path: str) -> Any:
        """The JSON at ``API + path``; None for OpenML's "No results". Raises OpenMLError."""
        url = f"{self.base_url}{API}{path}"
        hit, body = self.cache.get(url)
        if hit:
            with self._lock:
                self.cached += 1
            return body
        attempt = 0
        while True:
            attempt += 1
            with self._lock:
                self.requests += 1
            failure, retry_after = self._attempt(url)
            if failure is None:
                body = retry_after  # the parsed JSON (or None for "No results")
                self.cache.put(url, body)
                return body
            if isinstance(failure, OpenMLError) or attempt > self.retries:
                if isinstance(failure, OpenMLError):
                    raise failure
                raise OpenMLError(f"OpenML request failed after {attempt} attempts: {url}: {failure}")
            wait = retry_after if isinstance(retry_after, float) else self.backoff * 2 ** (attempt - 1)
            self._sleep(min(wait, 60.0) * (1.0 - 0.25 * random.random()))

    def _attempt(self, url: str) -> tuple[OpenMLError | str | None, Any]:
        """``(None, json)`` on success; ``(message, retry_after)`` to retry; ``(OpenMLError, None)``
        to give up at once."""
        try:
            response = self._http.get(url)
            content = response.content
        except httpx.TimeoutException:
            return "timed out", None
        except httpx.HTTPError as exc:  # connection errors, bodies cut short
            return f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}", None
        status = response.status_code
        if len(content) > MAX_BODY:
            return OpenMLError(f"OpenML response too large: {url}", status), None
        data: Any = None
        parsed = True
        try:
            data = schema.parse_json(content) if content else None
        except schema.JSONError:
            parsed = False
        if status == 200:
            if not parsed or data is None:
                return "the response is not JSON (cut short?)", None
            return None, data
        code, message = error_fields(content)
        if status == 412 and message.strip().lower() == NO_RESULTS:
            return None, None
        if status == 429 or status >= 500:
            after = response.headers.get("retry-after")
            try:
                wait = float(after) if after is not None else None
            except ValueError:
                wait = None
            return f"HTTP {status}", wait
        detail = f" (code {code}: {message})" if message else ""
        return OpenMLError(f"OpenML answered HTTP {status}{detail} for {url}", status, code, message), None

    def get_many(self, paths: Sequence[str], on_done: Callable[[], None] | None = None) -> list[Any]:
        """GET several paths, at most ``workers`` at a time; results in order (errors raised)."""
        return self._map(self.get, paths, on_done)

    def get_or_error(self, paths: Sequence[str], on_done: Callable[[], None] | None = None) -> list[Any]:
        """Like :meth:`get_many`, but a permanent error for one path is returned, not raised."""

        def get(path: str) -> Any:
            try:
                return self.get(path)
            except OpenMLError as exc:
                if exc.status in (404, 412):
                    return exc
                raise

        return self._map(get, paths, on_done)

    def _map(
        self, get: Callable[[str], Any], paths: Sequence[str], on_done: Callable[[], None] | None
    ) -> list[Any]:
        def one(path: str) -> Any:
            try:
                return get(path)
            finally:
                if on_done is not None:
                    on_done()

        if len(paths) <= 1 or self.workers == 1:
            return [one(p) for p in paths]
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            return list(pool.map(one, paths))


# -- OpenML's JSON ---------------------------------------------------------------------------------


def as_list(value: Any) -> list[Any]:
    """OpenML's JSON gives a single element as an object and several as a list."""
    if value is None or value == "":
        return []
    return value if isinstance(value, list) else [value]


def as_int(value: Any) -> int | None:
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(number) if number == int(number) else None


def as_float(value: Any) -> float | None:
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number == number and abs(number) != float("inf") else None


def as_text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def paged(client: OpenMLClient, base: str, page_size: int, cap: int | None = None) -> list[dict[str, Any]]:
    """Every evaluation of a listing ``base`` (without limit/offset), page by page."""
    found: list[dict[str, Any]] = []
    offset = 0
    while cap is None or len(found) < cap:
        limit = page_size if cap is None else min(page_size, cap - len(found))
        body = client.get(f"{base}/limit/{limit}/offset/{offset}")
        if body is None:  # "No results": past the end
            break
        container = body.get("evaluations") if isinstance(body, dict) else None
        items = as_list(container.get("evaluation") if isinstance(container, dict) else None)
        if not isinstance(container, dict):
            raise OpenMLError(f"OpenML evaluation listing {base}: unexpected JSON (no 'evaluations')")
        found.extend(i for i in items if isinstance(i, dict))
        if len(items) < limit:
            break
        offset += limit
    return found
