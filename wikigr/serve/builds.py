"""Packs built, updated and removed from the page (the Build view; docs/serve.md, "Build").

Each is a job (wikigr/serve/jobs.py) of kind ``build`` keyed by the pack's name, so two of one
name are refused (409), and the library's lock on the pack folder refuses one that another
process runs. The work is the CLI's: :func:`wikigr.build.build_pack` (``pack create``),
:func:`wikigr.build.update_pack` (``pack update``) and :func:`wikigr.share.remove_pack`
(``pack remove``), with the CLI's default limits (fetch caps, page counts), its progress events
(wikigr.progress) streamed as the job's ``progress`` events, and its one-line errors.

A request never names a file of this machine: sources are http(s) URLs, and files come as
uploads (``POST /api/v1/uploads``, then ``PUT /api/v1/uploads/{upload}/{file}`` for each file),
kept in a staging folder of the server's temporary folder, within ``pack install``'s caps, and
removed once the build that takes them ends.

Cancelling a build stops it at its next progress event; the build is staged beside the pack and
swapped in only at its end (wikigr.pack.transaction), so a cancelled build leaves no pack (a
cancelled rebuild or update leaves the previous one), and its staging folder is removed too.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import tempfile
import threading
import unicodedata
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from wikigr.errors import BuildError, UsageError
from wikigr.pack import pack as layout
from wikigr.pack.manifest import check_name
from wikigr.pack.transaction import pack_lock, partial_path
from wikigr.progress import ProgressEvent
from wikigr.serve.http import ApiError, int_param, read_json
from wikigr.serve.jobs import Cancelled, Job

if TYPE_CHECKING:  # the build stack (fetch, crawl, formats) loads when the first build is asked
    from wikigr.serve.app import Server
    from wikigr.sources.crawl import CrawlOptions

API = "/api/v1"
KIND = "build"  # the jobs' kind: a build, an update and a removal of one name exclude each other
MAX_SOURCES = 1000  # URLs, or crawl seeds, in one build
MAX_URL_CHARS = 2048
MAX_PATTERNS = 50  # crawl --include or --exclude patterns
MAX_PAGES = 1000  # pack create --max-pages's default is the page's cap (a test checks they agree)
MAX_DEPTH = 20
MAX_DELAY = 60.0
MAX_DESCRIPTION = 300
MAX_DETAIL = 200  # characters of a progress event's detail (a URL)
MAX_UPLOADS = 100  # uploads waiting at once (each for a build)
FIELDS = (
    "name",
    "urls",
    "crawl",
    "max_pages",
    "depth",
    "include",
    "exclude",
    "delay",
    "description",
    "graph",
    "upload",
    "replace",
)
UPLOAD_PREFIX = "upload:"  # how a document uploaded from the page is cited


Endpoint = Callable[[Callable[[Request], Awaitable[Response]]], Callable[[Request], Awaitable[Response]]]


@dataclass
class Upload:
    """Files sent from the page for one build, in a folder of their own."""

    id: str
    folder: Path
    files: dict[str, int] = field(default_factory=dict)  # name: bytes (reserved while it arrives)
    arriving: set[str] = field(default_factory=set)  # the files being sent now
    taken: bool = False  # a build took it: no more files

    @property
    def size(self) -> int:
        return sum(self.files.values())


class Uploads:
    """The uploads of one server, under a temporary folder removed when the server ends.

    Caps: ``pack install``'s (:class:`~wikigr.share.intake.InstallLimits`: files in one upload,
    bytes in all the uploads waiting), a file at most the build's size cap per document (``pack
    create --max-mb``'s default), which a larger one would fail anyway, and at most
    :data:`MAX_UPLOADS` uploads waiting."""

    def __init__(self) -> None:
        from wikigr.share.intake import InstallLimits
        from wikigr.sources.fetch import FetchOptions

        limits = InstallLimits()
        self.max_files = limits.max_members
        self.max_total = limits.max_total_bytes
        self.max_file = min(limits.max_member_bytes, FetchOptions().max_bytes)
        self._root: Path | None = None
        self._items: dict[str, Upload] = {}
        self._lock = threading.Lock()

    def limits(self) -> dict[str, int]:
        return {
            "max_files": self.max_files,
            "max_file_bytes": self.max_file,
            "max_total_bytes": self.max_total,
        }

    def create(self) -> Upload:
        with self._lock:
            if len(self._items) >= MAX_UPLOADS:
                raise ApiError(409, f"{MAX_UPLOADS} uploads are waiting for their builds already")
            if self._root is None:
                self._root = Path(tempfile.mkdtemp(prefix="wikigr-uploads-"))
                weakref.finalize(self, shutil.rmtree, self._root, True)
            upload_id = secrets.token_hex(8)
            upload = Upload(upload_id, self._root / upload_id)
            upload.folder.mkdir()
            self._items[upload.id] = upload
            return upload

    def get(self, upload_id: str) -> Upload:
        with self._lock:
            upload = self._items.get(upload_id)
        if upload is None:
            raise ApiError(404, f"no upload '{upload_id[:40]}'")
        return upload

    def reserve(self, upload: Upload, name: str, declared: int | None) -> None:
        """Room for the file ``name`` in ``upload``, or the refusal (400, 409, 413)."""
        with self._lock:
            if upload.taken:
                raise ApiError(409, "a build took this upload already: start another")
            if name in upload.files:
                raise ApiError(409, f"the file '{name}' was uploaded already")
            if len(upload.files) >= self.max_files:
                raise ApiError(413, f"at most {self.max_files} files in one upload")
            if declared is not None and declared > self.max_file:
                raise ApiError(413, f"'{name}' is larger than the cap of {self.max_file:,} bytes per file")
            upload.files[name] = 0
            upload.arriving.add(name)

    def grow(self, upload: Upload, name: str, size: int) -> None:
        with self._lock:
            upload.files[name] = size
            if size > self.max_file:
                raise ApiError(413, f"'{name}' is larger than the cap of {self.max_file:,} bytes per file")
            if sum(item.size for item in self._items.values()) > self.max_total:
                raise ApiError(413, f"the uploads are larger than the cap of {self.max_total:,} bytes")

    def arrived(self, upload: Upload, name: str, whole: bool) -> None:
        """The file ``name`` was sent, all of it (``whole``) or not (then it is dropped)."""
        with self._lock:
            upload.arriving.discard(name)
            if not whole:
                upload.files.pop(name, None)
        if not whole:
            (upload.folder / name).unlink(missing_ok=True)

    def take(self, upload_id: str) -> Upload:
        """The upload for a build: no file is added to it after this."""
        upload = self.get(upload_id)
        with self._lock:
            if upload.taken:
                raise ApiError(409, "a build took this upload already: start another")
            if upload.arriving:
                raise ApiError(409, "files of this upload are still arriving: wait for them")
            if not upload.files:
                raise UsageError("the upload holds no file")
            upload.taken = True
        return upload

    def discard(self, upload_id: str) -> None:
        with self._lock:
            upload = self._items.pop(upload_id, None)
        if upload is not None:
            shutil.rmtree(upload.folder, ignore_errors=True)


def upload_name(name: str) -> str:
    """``name`` of an uploaded file if it is a plain file name of a document format the build
    reads (never a path: no separator, no leading dot, no control character), else a usage error."""
    from wikigr.sources.formats import walked_extensions

    shown = ascii(name[:80])[1:-1]
    extensions = walked_extensions()
    if (
        not name
        or len(name.encode("utf-8", "surrogatepass")) > 255
        or name.startswith((".", " "))
        or name != name.strip()
        or any(c in "/\\" or unicodedata.category(c).startswith("C") for c in name)
    ):
        raise UsageError(f"'{shown}' is not a file name")
    if not name.lower().endswith(extensions):
        raise UsageError(f"'{shown}' is not a document the build reads ({', '.join(extensions)})")
    return name


# -- what a build is asked -----------------------------------------------------------------------


@dataclass
class BuildAsk:
    name: str
    sources: list[str]
    crawl: CrawlOptions | None
    description: str
    graph: bool
    upload: str | None
    replace: bool


def _strings(value: object, label: str, limit: int) -> list[str]:
    """A list of strings, or one string of lines (blank lines and ``#`` comments skipped)."""
    if isinstance(value, str):
        items = [line.strip() for line in value.splitlines()]
        items = [line for line in items if line and not line.startswith("#")]
    elif isinstance(value, list) and all(isinstance(item, str) for item in value):
        items = [item.strip() for item in value if item.strip()]
    else:
        raise UsageError(f"{label} must be a list of strings, or lines of text")
    if len(items) > limit:
        raise UsageError(f"at most {limit} {label} in one build")
    if any(len(item) > MAX_URL_CHARS for item in items):
        raise UsageError(f"a line of {label} is longer than {MAX_URL_CHARS} characters")
    return items


def web_url(url: str, label: str) -> str:
    """``url`` if it is an http(s) URL (a page never names a file of the server), normalised."""
    from wikigr.sources.urls import normalize_source

    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        shown = ascii(url[:80])[1:-1]
        raise UsageError(f"{label} takes http(s) URLs, not '{shown}' (send files as an upload)")
    return normalize_source(url)


def parse_build(data: dict[str, Any]) -> BuildAsk:
    """The build a request asks for, checked as ``pack create`` checks its options."""
    from wikigr.sources.crawl import CrawlOptions

    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise UsageError(f"unknown field '{unknown[0][:40]}' ({', '.join(FIELDS)})")
    name = data.get("name")
    if not isinstance(name, str):
        raise UsageError("name must be the new pack's name")
    try:
        check_name(name)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    sources = [web_url(u, "urls") for u in _strings(data.get("urls", []), "urls", MAX_SOURCES)]
    seeds = [web_url(u, "crawl") for u in _strings(data.get("crawl", []), "crawl seeds", MAX_SOURCES)]
    include = _strings(data.get("include", []), "include patterns", MAX_PATTERNS)
    exclude = _strings(data.get("exclude", []), "exclude patterns", MAX_PATTERNS)
    crawl: CrawlOptions | None = None
    if seeds:
        delay = data.get("delay", 0)
        if isinstance(delay, bool) or not isinstance(delay, int | float) or not 0 <= delay <= MAX_DELAY:
            raise UsageError(f"delay must be a number of seconds from 0 to {MAX_DELAY:g}")
        crawl = CrawlOptions(
            tuple(seeds),
            int_param(data.get("max_pages", MAX_PAGES), "max_pages", 1, MAX_PAGES),
            int_param(data.get("depth", 5), "depth", 0, MAX_DEPTH),
            tuple(include),
            tuple(exclude),
            float(delay),
        )
    elif include or exclude:
        raise UsageError("--include and --exclude go with --crawl")
    description = data.get("description", "")
    if not isinstance(description, str) or len(description) > MAX_DESCRIPTION:
        raise UsageError(f"description must be a line of at most {MAX_DESCRIPTION} characters")
    graph, replace = data.get("graph", True), data.get("replace", False)
    if not isinstance(graph, bool) or not isinstance(replace, bool):
        raise UsageError("graph and replace must be true or false")
    upload = data.get("upload")
    if upload is not None and not isinstance(upload, str):
        raise UsageError("upload must be the id POST /api/v1/uploads gave")
    if not sources and not seeds and upload is None:
        raise UsageError("give URLs, a crawl seed or files to build the pack from")
    return BuildAsk(name, sources, crawl, " ".join(description.split()), graph, upload, replace)


# -- the work ------------------------------------------------------------------------------------


def discard_staging(target: Path) -> None:
    """Remove what a cancelled build or update staged beside ``target`` (its ``.NAME.partial``),
    under the pack's lock: unless another build holds it now (that one's staging is its own)."""
    with contextlib.suppress(BuildError), pack_lock(target):
        shutil.rmtree(partial_path(target), ignore_errors=True)


class Reporter:
    """The library's progress callback for a job: each event a ``progress`` event of the job
    (and a point where a cancelled job stops), with the folders of this machine not shown."""

    def __init__(self, job: Job, shown: Callable[[str], str]) -> None:
        self.job = job
        self.shown = shown

    def __call__(self, event: ProgressEvent) -> None:
        data = {
            "stage": event.stage,
            "done": event.done,
            "total": event.total,
            "detail": self.shown(event.detail)[:MAX_DETAIL],
        }
        try:
            self.job.emit("progress", data)
        except Cancelled:
            if event.stage == "write" and event.total and event.done >= event.total:
                return  # the pack is swapped in already: the build is done, not cancelled
            raise

    def note(self, text: str) -> None:
        self.job.emit("note", {"text": self.shown(text)})


class Builds:
    """The routes of the Build view over a :class:`~wikigr.serve.app.Server`."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self._uploads: Uploads | None = None

    @property
    def uploads(self) -> Uploads:
        if self._uploads is None:  # on the first upload (the caps read the fetch and install modules)
            self._uploads = Uploads()
        return self._uploads

    @property
    def home(self) -> Path:
        return layout.packs_home()

    def shown(self, text: str, upload: Upload | None = None) -> str:
        if upload is not None:
            text = text.replace(upload.folder.as_uri() + "/", UPLOAD_PREFIX)
        return self.server.packs.redact(text)

    async def refuse_busy(self, name: str, target: Path) -> None:
        """409 while a job of this server builds, updates or removes the pack ``name``, or another
        process builds it (the library's lock on its folder ``target``)."""
        self.server.jobs.refuse_running(KIND, name)
        await run_in_threadpool(self.check_free, target)

    def check_free(self, target: Path) -> None:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with pack_lock(target):
                pass
        except BuildError as exc:
            raise ApiError(409, self.shown(exc.message)) from exc

    # -- build ------------------------------------------------------------------------------------

    async def build(self, request: Request) -> Response:
        ask = parse_build(await read_json(request))
        target = self.home / ask.name
        fixed = self.server.packs.fixed
        if fixed is not None and fixed.get(ask.name, target) != target:
            raise ApiError(409, f"this server serves another pack named '{ask.name}': choose another name")
        if (target / layout.MANIFEST_FILE).is_file() and not ask.replace:
            raise ApiError(409, f"a pack named '{ask.name}' exists: update it, or rebuild it (replace)")
        await self.refuse_busy(ask.name, target)
        upload = self.uploads.take(ask.upload) if ask.upload is not None else None
        try:
            job = self.server.jobs.start(
                KIND, ask.name, f"build {ask.name}", lambda job: self.run_build(job, ask, upload)
            )
        except ApiError:
            if upload is not None:
                self.uploads.discard(upload.id)
            raise
        return JSONResponse(job.summary(), status_code=202)

    def run_build(self, job: Job, ask: BuildAsk, upload: Upload | None) -> dict[str, Any]:
        from wikigr.build import BuildOptions, build_pack  # the build stack: loaded when a build runs
        from wikigr.sources.fetch import FetchOptions

        target = self.home / ask.name
        sources = list(ask.sources)
        options = BuildOptions(description=ask.description, fetch=FetchOptions(), graph=ask.graph)
        options.crawl = ask.crawl
        if upload is not None:
            files = sorted(upload.files)
            sources += [(upload.folder / name).as_uri() for name in files]
            options.public_urls = [(upload.folder.as_uri() + "/", UPLOAD_PREFIX)]
        reporter = Reporter(job, lambda text: self.shown(text, upload))
        llm = None
        if ask.graph:
            from wikigr.llm import AnthropicLLM

            llm = options.llm = AnthropicLLM.from_env()  # None without ANTHROPIC_API_KEY, as the CLI
        try:
            report = build_pack(
                ask.name, sources, options=options, on_progress=reporter, on_note=reporter.note
            )
        except Cancelled:
            discard_staging(target)
            raise
        finally:
            if llm is not None:
                llm.close()
            if upload is not None:
                self.uploads.discard(upload.id)
        fixed = self.server.packs.fixed
        if fixed is not None and ask.name not in fixed:  # served from now on, beside the packs named
            self.server.packs.fixed = {**fixed, ask.name: report.path}
        stats = report.manifest.stats
        return {
            "pack": ask.name,
            "articles": stats.articles,
            "chunks": stats.chunks,
            "failed": [
                {"url": self.shown(u, upload), "error": self.shown(e, upload)} for u, e in report.failed[:50]
            ],
            "notes": [self.shown(note) for note in report.notes],
            "seconds": round(report.seconds.get("total", 0.0), 2),
        }

    # -- update, remove --------------------------------------------------------------------------

    async def update(self, request: Request) -> Response:
        name = request.path_params["pack"]
        path = self.server.packs.path(name)
        await self.refuse_busy(name, path)
        job = self.server.jobs.start(
            KIND, name, f"update {name}", lambda job: self.run_update(job, name, path)
        )
        return JSONResponse(job.summary(), status_code=202)

    def run_update(self, job: Job, name: str, path: Path) -> dict[str, Any]:
        from wikigr.build import BuildOptions, update_pack
        from wikigr.sources.fetch import FetchOptions

        reporter = Reporter(job, self.shown)
        try:
            report = update_pack(path, options=BuildOptions(fetch=FetchOptions()), on_progress=reporter)
        except Cancelled:
            discard_staging(path)
            raise
        stats = report.manifest.stats
        data = report.to_json()
        return {
            "pack": name,
            **data["counts"],
            "chunks_embedded": report.chunks_embedded,
            "chunks_reused": report.chunks_reused,
            "articles": stats.articles,
            "chunks": stats.chunks,
            "notes": [self.shown(note) for note in report.notes],
            "seconds": round(report.seconds.get("total", 0.0), 2),
        }

    async def remove(self, request: Request) -> Response:
        name = request.path_params["pack"]
        path = self.server.packs.path(name)
        if path.resolve() != (self.home / name).resolve():
            raise ApiError(
                409,
                f"'{name}' is served from a folder outside the packs home: "
                "the page removes packs of the packs home only",
            )
        await self.refuse_busy(name, path)
        job = self.server.jobs.start(KIND, name, f"remove {name}", lambda job: self.run_remove(job, name))
        return JSONResponse(job.summary(), status_code=202)

    def run_remove(self, job: Job, name: str) -> dict[str, Any]:
        from wikigr.share import remove_pack

        job.check()
        report = remove_pack(name)  # as `wikigr pack remove`: its Claude Code skill unregistered too
        fixed = self.server.packs.fixed
        if fixed is not None:
            self.server.packs.fixed = {k: v for k, v in fixed.items() if k != name}
        return {"pack": name, "removed": report.path is not None, "skill": report.skill is not None}

    # -- uploads ---------------------------------------------------------------------------------

    async def new_upload(self, request: Request) -> Response:
        upload = self.uploads.create()
        return JSONResponse({"upload": upload.id, **self.uploads.limits()}, status_code=201)

    async def put_file(self, request: Request) -> Response:
        upload = self.uploads.get(request.path_params["upload"])
        name = upload_name(request.path_params["file"])
        declared = request.headers.get("content-length", "")
        self.uploads.reserve(upload, name, int(declared) if declared.isdigit() else None)
        size, whole = 0, False
        try:
            with (upload.folder / name).open("xb") as out:
                async for chunk in request.stream():
                    size += len(chunk)
                    self.uploads.grow(upload, name, size)
                    out.write(chunk)
            whole = True
        finally:
            self.uploads.arrived(upload, name, whole)
        return JSONResponse({"file": name, "bytes": size}, status_code=201)

    async def drop_upload(self, request: Request) -> Response:
        upload = self.uploads.get(request.path_params["upload"])
        if upload.taken:
            raise ApiError(409, "a build took this upload: cancel the build instead")
        self.uploads.discard(upload.id)
        return Response(status_code=204)


def routes(server: Server, endpoint: Endpoint) -> list[Route]:
    """The Build view's routes (docs/serve.md, "Build")."""
    builds = Builds(server)
    return [
        Route(f"{API}/builds", endpoint(builds.build), methods=["POST"]),
        Route(f"{API}/packs/{{pack}}/update", endpoint(builds.update), methods=["POST"]),
        Route(f"{API}/packs/{{pack}}", endpoint(builds.remove), methods=["DELETE"]),
        Route(f"{API}/uploads", endpoint(builds.new_upload), methods=["POST"]),
        Route(f"{API}/uploads/{{upload}}", endpoint(builds.drop_upload), methods=["DELETE"]),
        Route(f"{API}/uploads/{{upload}}/{{file}}", endpoint(builds.put_file), methods=["PUT"]),
    ]
