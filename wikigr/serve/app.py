"""The ASGI application of ``wikigr serve``: the REST API under ``/api/v1`` and the web page.

Built on Starlette (run by uvicorn, wikigr/serve/__init__.py). Every route that touches a pack
runs its blocking work (the store, the model, Claude) in a worker thread, so requests do not
block one another; open agents are kept in an :class:`~wikigr.agent_cache.AgentCache`, whose
per-agent locks let calls on different packs run at once while calls on one agent take turns.

Errors are JSON ``{"error": "one line"}``: 4xx for what the CLI calls usage errors (exit 2), 5xx
for runtime failures (exit 1). See docs/serve.md for the routes and the security model.

Here: the routes and the application; beside it, by job: requests and error replies (http.py),
the checks of a question (ask.py), answers and traces (answers.py), evaluation results
(evals.py), the host and token guard (guard.py), the socket and loopback checks (net.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from wikigr import __version__
from wikigr.agent_cache import AgentCache
from wikigr.errors import UsageError, WikigrError
from wikigr.info import agent_pack_info
from wikigr.llm import llm_available
from wikigr.packset import PackSet
from wikigr.retrieval.pipeline import run_stages
from wikigr.retrieval.profiles import DEFAULT_PROFILE, PROFILES
from wikigr.retrieval.stage import builtin_stages
from wikigr.serve.answers import Traces, answer_json, one_agent, set_fallback, streaming
from wikigr.serve.ask import MAX_QUESTION_CHARS, Ask, parse_ask
from wikigr.serve.evals import EvalRuns
from wikigr.serve.graph import neighbourhood
from wikigr.serve.guard import TOKEN_COOKIE, Guard
from wikigr.serve.http import (
    STATIC,
    ApiError,
    error_json,
    guarded,
    int_param,
    internal_error,
    read_json,
    status_of,
)
from wikigr.serve.openapi import document
from wikigr.serve.packs import ServedPacks

API = "/api/v1"
MAX_GRAPH_IDS = 50
MAX_FAILED_SOURCES = 50  # listed by a pack's info


class Server:
    """What the routes share: the packs served, the open agents, the traces."""

    def __init__(self, packs: ServedPacks) -> None:
        self.packs = packs
        self.cache = AgentCache()
        self.traces = Traces()
        self.started = time.monotonic()
        self.evals = EvalRuns()
        self._tasks: set[asyncio.Future[None]] = set()

    # -- blocking work (worker threads) ----------------------------------------------------------

    def _query(self, ask: Ask) -> dict[str, Any]:
        start = time.perf_counter()
        with self.cache.use(ask.refs, ask.profile, "query", ask.enable, ask.disable) as agent:
            set_fallback(agent, ask.fallback)
            result = agent.query(ask.text, top_k=ask.top_k)
        response = answer_json(result)
        response["trace_id"] = self.traces.add(
            "query", ask.record(), response, (time.perf_counter() - start) * 1000
        )
        return response

    def _query_streamed(self, ask: Ask, emit: Callable[[str, dict[str, Any]], None]) -> None:
        start = time.perf_counter()
        with self.cache.use(ask.refs, ask.profile, "query", ask.enable, ask.disable) as agent:
            set_fallback(agent, ask.fallback)
            if isinstance(agent, PackSet):
                with streaming(agent, emit):
                    result = agent.query(ask.text, top_k=ask.top_k)
            else:  # the sources as soon as they are known, then the answer as it is written
                state = agent.new_state(ask.text, ask.top_k)
                before = [s for s in agent.stages if s.name != "synthesize"]
                last = [s for s in agent.stages if s.name == "synthesize"]
                began = time.perf_counter()
                with agent.budget():
                    entries = run_stages(before, state)
                    found = agent.result(state, entries, (time.perf_counter() - began) * 1000)
                    emit("sources", {"sources": answer_json(found)["sources"]})
                    with streaming(agent, emit):
                        entries += run_stages(last, state)
                result = agent.result(state, entries, (time.perf_counter() - began) * 1000)
        response = answer_json(result)
        response["trace_id"] = self.traces.add(
            "query", ask.record(), response, (time.perf_counter() - start) * 1000
        )
        emit("result", response)

    def _search(self, ask: Ask) -> dict[str, Any]:
        start = time.perf_counter()
        with self.cache.use(ask.refs, ask.profile, "search", ask.enable, ask.disable) as agent:
            result = agent.query(ask.text, top_k=ask.top_k)
        response = {
            "query": result.question,
            "profile": result.profile,
            "confidence": round(result.confidence, 4),
            "low_confidence": result.low_confidence,
            "results": answer_json(result)["sources"],
            "trace": result.trace,
        }
        response["trace_id"] = self.traces.add(
            "search", ask.record(), response, (time.perf_counter() - start) * 1000
        )
        return response

    def _info(self, name: str) -> dict[str, Any]:
        path = self.packs.path(name)
        with self.cache.use([str(path)], None, "query") as agent:
            data = agent_pack_info(one_agent(agent), MAX_FAILED_SOURCES)
        data["name"] = name  # as requests name it (the folder's name in the packs home)
        del data["path"]  # a client gets names, not this machine's folders
        return data

    def _eval(self, name: str) -> dict[str, Any]:
        return self.evals.summary(name, self.packs.path(name))

    def _graph(self, name: str, chunks: list[str], entities: list[str], limit: int) -> dict[str, Any]:
        path = self.packs.path(name)
        with self.cache.use([str(path)], None, "query") as agent:
            data = neighbourhood(one_agent(agent).context.store, chunks, entities, limit)
        return {"pack": name, **data}

    # -- routes ----------------------------------------------------------------------------------

    async def health(self, request: Request) -> Response:
        names = await run_in_threadpool(self.packs.names)
        return JSONResponse(
            {
                "status": "ok",
                "version": __version__,
                "packs": len(names),
                "claude": llm_available(),
                "open_agents": len(self.cache),
                "traces": len(self.traces),
                "uptime_s": round(time.monotonic() - self.started, 1),
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
        return JSONResponse(await run_in_threadpool(self._info, request.path_params["pack"]))

    async def pack_eval(self, request: Request) -> Response:
        return JSONResponse(await run_in_threadpool(self._eval, request.path_params["pack"]))

    async def pack_graph(self, request: Request) -> Response:
        params = request.query_params
        unknown = sorted(set(params) - {"chunk", "entity", "limit"})
        if unknown:
            raise UsageError(f"unknown parameter '{unknown[0]}' (chunk, entity, limit)")
        chunks, entities = params.getlist("chunk"), params.getlist("entity")
        if len(chunks) + len(entities) > MAX_GRAPH_IDS:
            raise UsageError(f"at most {MAX_GRAPH_IDS} chunks and entities at once")
        limit = int_param(params.get("limit", "60"), "limit", 1, 200)
        data = await run_in_threadpool(self._graph, request.path_params["pack"], chunks, entities, limit)
        return JSONResponse(data)

    async def query(self, request: Request) -> Response:
        ask = parse_ask(await read_json(request), self.packs, "question")
        return JSONResponse(await run_in_threadpool(self._query, ask))

    async def query_stream(self, request: Request) -> Response:
        ask = parse_ask(await read_json(request), self.packs, "question")
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, dict[str, Any]] | None] = asyncio.Queue()

        def emit(event: str, data: dict[str, Any] | None) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed (the server stopped): no reader
                loop.call_soon_threadsafe(queue.put_nowait, None if data is None else (event, data))

        def work() -> None:
            try:
                self._query_streamed(ask, emit)
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
        ask = parse_ask(data, self.packs, "query")
        return JSONResponse(await run_in_threadpool(self._search, ask))

    async def trace(self, request: Request) -> Response:
        record = self.traces.get(request.path_params["trace_id"])
        if record is None:
            raise ApiError(404, f"no trace '{request.path_params['trace_id'][:40]}' (only the last "
                           f"{self.traces.keep} are kept, in memory)")  # fmt: skip
        return JSONResponse(record)

    async def recent_traces(self, request: Request) -> Response:
        return JSONResponse({"traces": self.traces.recent()})

    async def index(self, request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"cache-control": "no-cache"})


# -- the application ------------------------------------------------------------------------------


def create_app(
    packs: Sequence[str | Path] = (), token: str | None = None, loopback: bool = True
) -> Starlette:
    """The application serving ``packs`` (default: the packs home). ``token``: the bearer token
    every request must carry (None: none); ``loopback``: the server listens on a loopback address
    only, so requests must name it (``localhost`` or a loopback address) as their Host."""
    server = Server(ServedPacks(packs))

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
        return guarded(handler, server.packs.redact)

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
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await run_in_threadpool(server.cache.close)

    app = Starlette(
        routes=routes,
        exception_handlers={HTTPException: not_found},
        lifespan=lifespan,
    )
    app.state.server = server
    app.add_middleware(Guard, token=token, loopback=loopback)
    return app
