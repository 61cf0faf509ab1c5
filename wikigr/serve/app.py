"""The ASGI application of ``wikigr serve``: the REST API under ``/api/v1`` and the web page.

Built on Starlette (run by uvicorn, wikigr/serve/__init__.py). Every route that touches a pack
runs its blocking work (the store, the model, Claude) in a worker thread, so requests do not
block one another; open agents are kept in an :class:`~wikigr.agent_cache.AgentCache`, whose
per-agent locks let calls on different packs run at once while calls on one agent take turns.

The answering stack (wikigr.agent, the retrieval, the model: work.py) is not imported before the
server answers: a thread loads it once the first answer is sent (:class:`Loader`), so the health
route answers as soon as the server runs, and a route that needs a pack waits for the load.

Errors are JSON ``{"error": "one line"}``: 4xx for what the CLI calls usage errors (exit 2), 5xx
for runtime failures (exit 1). See docs/serve.md for the routes and the security model.

Here: the routes and the application; beside it, by job: requests and error replies (http.py),
the checks of a question (ask.py), the blocking work (work.py), answers (answers.py), traces
(traces.py), evaluation results (evals.py), the host, token and origin guard (guard.py), the socket
and loopback checks (net.py), builds from the page (builds.py) and the jobs they run in (jobs.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from wikigr import __version__
from wikigr.errors import UsageError, WikigrError
from wikigr.llm.config import llm_available
from wikigr.retrieval.profiles import DEFAULT_PROFILE, PROFILES
from wikigr.retrieval.stage import builtin_stages
from wikigr.serve import builds, compare, settings
from wikigr.serve.ask import MAX_QUESTION_CHARS, parse_ask
from wikigr.serve.evals import EvalRuns
from wikigr.serve.graph import graph_ask
from wikigr.serve.guard import TOKEN_COOKIE, Guard
from wikigr.serve.http import (
    STATIC,
    ApiError,
    error_json,
    guarded,
    internal_error,
    read_json,
    status_of,
)
from wikigr.serve.jobs import Jobs
from wikigr.serve.openapi import document
from wikigr.serve.packs import ServedPacks
from wikigr.serve.pagelang import PAGE_HEADERS, index_page, page_language
from wikigr.serve.traces import Traces

if TYPE_CHECKING:
    from wikigr.agent_cache import AgentCache
    from wikigr.serve.work import Work

API = "/api/v1"


class Loader:
    """The answering stack (:class:`wikigr.serve.work.Work`), imported and made in a thread:
    :meth:`start` begins (after the server's first answer), :meth:`get` waits for it (a worker
    thread does, for the routes that need a pack)."""

    def __init__(self, packs: ServedPacks, traces: Traces) -> None:
        self._packs, self._traces = packs, traces
        self._work: Work | None = None
        self._failure: BaseException | None = None
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._load, name="serve-load", daemon=True)
                self._thread.start()

    def _load(self) -> None:
        try:
            from wikigr.serve.work import Work

            self._work = Work(self._packs, self._traces)
        except BaseException as exc:  # noqa: BLE001 - each request that needs it says why
            self._failure = exc
        finally:
            self._done.set()
        with contextlib.suppress(Exception):  # the first query's model, meanwhile (its to report)
            from wikigr.embed import get_embedder

            get_embedder()

    def get(self) -> Work:
        self.start()
        self._done.wait()
        if self._work is None:
            failure = f"{type(self._failure).__name__}: {self._failure}"
            raise WikigrError(f"the answering stack did not load: {failure}")
        return self._work

    @property
    def loaded(self) -> Work | None:
        return self._work if self._done.is_set() else None

    def close(self) -> None:
        if self._thread is not None:
            self._done.wait()
        if self._work is not None:
            self._work.close()


class Server:
    """What the routes share: the packs served, the open agents (once loaded), the traces."""

    def __init__(self, packs: ServedPacks, read_only: bool = False) -> None:
        self.packs = packs
        self.read_only = read_only  # writes are refused (guard.py); the page shows no write controls
        self.traces = Traces()
        self.started = time.monotonic()
        self.evals = EvalRuns()
        self.loader = Loader(packs, self.traces)
        self.jobs = Jobs(packs.redact)  # builds and comparisons started from the page (jobs.py)
        self._tasks: set[asyncio.Future[None]] = set()

    @property
    def cache(self) -> AgentCache:
        """The open agents (waits for the answering stack)."""
        return self.loader.get().cache

    async def work(self) -> Work:
        """The answering stack, waited for in a worker thread (not on the event loop)."""
        return await run_in_threadpool(self.loader.get)

    def _eval(self, name: str) -> dict[str, Any]:
        return self.evals.summary(name, self.packs.path(name))

    # -- routes ----------------------------------------------------------------------------------

    async def health(self, request: Request) -> Response:
        names = await run_in_threadpool(self.packs.names)
        work = self.loader.loaded
        return JSONResponse(
            {
                "status": "ok",
                "version": __version__,
                "packs": len(names),
                "claude": llm_available(),
                "open_agents": len(work.cache) if work is not None else 0,
                "traces": len(self.traces),
                "uptime_s": round(time.monotonic() - self.started, 1),
                "read_only": self.read_only,
            }
        )

    async def openapi(self, request: Request) -> Response:
        return JSONResponse(document(__version__, MAX_QUESTION_CHARS))

    async def profiles(self, request: Request) -> Response:
        return JSONResponse(
            {
                "default": DEFAULT_PROFILE,
                "profiles": PROFILES,
                "stages": {name: cls.summary for name, cls in sorted(builtin_stages().items())},
            }
        )

    async def list_packs(self, request: Request) -> Response:
        rows = await run_in_threadpool(self.packs.rows)
        return JSONResponse({"packs": rows})

    async def pack_info(self, request: Request) -> Response:
        work = await self.work()
        return JSONResponse(await run_in_threadpool(work.info, request.path_params["pack"]))

    async def pack_eval(self, request: Request) -> Response:
        return JSONResponse(await run_in_threadpool(self._eval, request.path_params["pack"]))

    async def pack_graph(self, request: Request) -> Response:
        ask = graph_ask(request.query_params.multi_items())
        work = await self.work()
        data = await run_in_threadpool(work.graph, request.path_params["pack"], ask)
        return JSONResponse(data)

    async def query(self, request: Request) -> Response:
        data = await read_json(request)
        work = await self.work()
        ask = parse_ask(data, self.packs, "question")
        return JSONResponse(await run_in_threadpool(work.query, ask))

    async def query_stream(self, request: Request) -> Response:
        data = await read_json(request)
        stack = await self.work()
        ask = parse_ask(data, self.packs, "question")
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, dict[str, Any]] | None] = asyncio.Queue()

        def emit(event: str, data: dict[str, Any] | None) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed (the server stopped): no reader
                loop.call_soon_threadsafe(queue.put_nowait, None if data is None else (event, data))

        def work() -> None:
            try:
                stack.query_streamed(ask, emit)
            except WikigrError as exc:
                emit("error", {"error": self.packs.redact(exc.message), "status": status_of(exc)})
            except Exception as exc:  # noqa: BLE001 - reported as an error event of one line
                emit("error", {"error": self.packs.redact(internal_error(exc)), "status": 500})
            finally:
                emit("end", None)

        task = asyncio.ensure_future(run_in_threadpool(work))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        first = await queue.get()
        if first is None or first[0] == "error":  # nothing was sent yet: a plain JSON error
            data = first[1] if first is not None else {"error": "no answer", "status": 500}
            return error_json(int(str(data["status"])), str(data["error"]))

        async def events() -> AsyncIterator[str]:
            item: tuple[str, dict[str, Any]] | None = first
            while item is not None:
                event, data = item
                yield f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"
                item = await queue.get()

        headers = {"cache-control": "no-store", "x-accel-buffering": "no"}
        return StreamingResponse(events(), media_type="text/event-stream", headers=headers)

    async def search(self, request: Request) -> Response:
        if request.method == "GET":
            params = request.query_params
            unknown = sorted(set(params) - {"pack", "q", "top_k", "profile"})
            if unknown:
                raise UsageError(f"unknown parameter '{unknown[0]}' (pack, q, top_k, profile)")
            data: dict[str, Any] = {"pack": params.get("pack", ""), "query": params.get("q", "")}
            if "pack" not in params:
                del data["pack"]
            for key in ("top_k", "profile"):
                if key in params:
                    data[key] = params[key]
        else:
            data = await read_json(request)
        work = await self.work()
        ask = parse_ask(data, self.packs, "query")
        return JSONResponse(await run_in_threadpool(work.search, ask))

    async def trace(self, request: Request) -> Response:
        record = self.traces.get(request.path_params["trace_id"])
        if record is None:
            raise ApiError(404, f"no trace '{request.path_params['trace_id'][:40]}' (only the last "
                           f"{self.traces.keep} are kept, in memory)")  # fmt: skip
        return JSONResponse(record)

    async def recent_traces(self, request: Request) -> Response:
        return JSONResponse({"traces": self.traces.recent()})

    async def index(self, request: Request) -> Response:
        lang = page_language(request)
        return HTMLResponse(index_page(lang), headers={**PAGE_HEADERS, "content-language": lang})


# -- the application ------------------------------------------------------------------------------


def create_app(
    packs: Sequence[str | Path] = (),
    token: str | None = None,
    loopback: bool = True,
    read_only: bool = False,
) -> Starlette:
    """The application serving ``packs`` (default: the packs home). ``token``: the bearer token
    every request must carry (None: none); ``loopback``: the server listens on a loopback address
    only, so requests must name it (``localhost`` or a loopback address) as their Host;
    ``read_only``: every write (a build, an update, a removal...) is refused with 403."""
    server = Server(ServedPacks(packs), read_only)

    async def login(request: Request) -> Response:
        data = await read_json(request)
        given = data.get("token")
        if token is None:
            return Response(status_code=204)
        if not isinstance(given, str) or not hmac.compare_digest(given.encode(), token.encode()):
            raise ApiError(401, "wrong token")
        response = Response(status_code=204)
        response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="strict", path="/")
        return response

    async def not_found(request: Request, exc: Exception) -> Response:
        if isinstance(exc, HTTPException):
            if exc.status_code == 404:
                return error_json(404, f"no route {request.url.path[:200]} (see {API}/openapi.json)")
            return error_json(exc.status_code, str(exc.detail))
        return error_json(500, internal_error(exc))

    def endpoint(
        handler: Callable[[Request], Awaitable[Response]],
    ) -> Callable[[Request], Awaitable[Response]]:
        answer = guarded(handler, server.packs.redact)

        async def answered(request: Request) -> Response:
            response = await answer(request)
            if response.background is None:  # once it is sent: the answering stack loads
                response.background = BackgroundTask(server.loader.start)
            return response

        return answered

    routes = [
        Route("/", endpoint(server.index), methods=["GET"]),
        Route("/login", endpoint(login), methods=["POST"]),
        Route(f"{API}/health", endpoint(server.health), methods=["GET"]),
        Route(f"{API}/openapi.json", endpoint(server.openapi), methods=["GET"]),
        Route(f"{API}/profiles", endpoint(server.profiles), methods=["GET"]),
        Route(f"{API}/packs", endpoint(server.list_packs), methods=["GET"]),
        Route(f"{API}/packs/{{pack}}", endpoint(server.pack_info), methods=["GET"]),
        Route(f"{API}/packs/{{pack}}/eval", endpoint(server.pack_eval), methods=["GET"]),
        Route(f"{API}/packs/{{pack}}/graph", endpoint(server.pack_graph), methods=["GET"]),
        Route(f"{API}/query", endpoint(server.query), methods=["POST"]),
        Route(f"{API}/query/stream", endpoint(server.query_stream), methods=["POST"]),
        Route(f"{API}/search", endpoint(server.search), methods=["GET", "POST"]),
        Route(f"{API}/traces", endpoint(server.recent_traces), methods=["GET"]),
        Route(f"{API}/traces/{{trace_id}}", endpoint(server.trace), methods=["GET"]),
        Route(f"{API}/jobs", endpoint(server.jobs.list_route), methods=["GET"]),
        Route(f"{API}/jobs/{{job}}", endpoint(server.jobs.job_route), methods=["GET"]),
        Route(f"{API}/jobs/{{job}}/events", endpoint(server.jobs.events_route), methods=["GET"]),
        Route(f"{API}/jobs/{{job}}/cancel", endpoint(server.jobs.cancel_route), methods=["POST"]),
        *compare.routes(server, endpoint),  # the Compare view (compare.py)
        *settings.routes(server, endpoint),  # the Settings view (settings.py)
        *builds.routes(server, endpoint),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            server.jobs.cancel_all()
            await run_in_threadpool(server.loader.close)

    app = Starlette(
        routes=routes,
        exception_handlers={HTTPException: not_found},
        lifespan=lifespan,
    )
    app.state.server = server
    app.add_middleware(Guard, token=token, loopback=loopback, read_only=read_only)
    return app
