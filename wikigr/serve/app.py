"""The ASGI application of ``wikigr serve``: the REST API under ``/api/v1`` and the web page.

Built on Starlette (run by uvicorn, wikigr/serve/__init__.py). Every route that touches a pack
runs its blocking work (the store, the model, Claude) in a worker thread, so requests do not
block one another; open agents are kept in an :class:`~wikigr.agent_cache.AgentCache`, whose
per-agent locks let calls on different packs run at once while calls on one agent take turns.

Errors are JSON ``{"error": "one line"}``: 4xx for what the CLI calls usage errors (exit 2), 5xx
for runtime failures (exit 1). See docs/serve.md for the routes and the security model.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hmac
import json
import logging
import os
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers, MutableHeaders
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from wikigr import __version__, schema
from wikigr.agent import AgentResult, KnowledgeGraphAgent
from wikigr.agent_cache import AgentCache
from wikigr.errors import PackNotFoundError, UsageError, WikigrError
from wikigr.pack.manifest import now_iso
from wikigr.pack.pack import RESULTS_DIR, open_pack
from wikigr.packset import PackSet
from wikigr.retrieval.pipeline import run_stages
from wikigr.retrieval.profiles import DEFAULT_PROFILE, PROFILES
from wikigr.serve import is_loopback
from wikigr.serve.graph import neighbourhood
from wikigr.serve.openapi import document
from wikigr.serve.packs import ServedPacks

log = logging.getLogger("wikigr.serve")

API = "/api/v1"
STATIC = Path(__file__).parent / "static"
MAX_BODY_BYTES = 64 * 1024
MAX_DRAIN_BYTES = 16 * 1024 * 1024  # of a refused body, read and dropped so the client hears why
MAX_QUESTION_CHARS = 4000
MAX_TOP_K = 100
MAX_STAGE_SWITCHES = 32
MAX_TRACES = 200
MAX_GRAPH_IDS = 50
MAX_RESULTS_FILE_BYTES = 64 * 1024 * 1024
MAX_EVAL_FILES = 512  # results files' summaries kept in memory
TOKEN_COOKIE = "wikigr_token"
PUBLIC_PATHS = frozenset({"/login", "/static/login.js", "/static/app.css"})  # reachable without a token
SECURITY_HEADERS = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "content-security-policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
    "form-action 'self'",
}


class ApiError(Exception):
    """A refusal with its HTTP status (what is not a :class:`WikigrError`: size, media type...)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def status_of(exc: WikigrError) -> int:
    """The HTTP status of an error: 4xx where the CLI exits 2, 5xx where it exits 1."""
    from wikigr.llm import LLMError

    if isinstance(exc, PackNotFoundError):
        return 404
    if isinstance(exc, UsageError):
        return 400
    if isinstance(exc, LLMError):
        return 502  # Claude, upstream of us, failed
    return 500


def error_json(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": " ".join(message.split())}, status_code=status, headers=headers)


def _internal(exc: BaseException) -> str:
    if os.environ.get("WIKIGR_DEBUG"):
        log.exception("internal error")
    else:
        log.error("internal error: %s: %s", type(exc).__name__, exc)
    return f"internal error: {type(exc).__name__}: {exc}"


def endpoint(
    handler: Callable[[Request], Awaitable[Response]],
) -> Callable[[Request], Awaitable[Response]]:
    """Every failure of a route as a JSON error of one line, never a traceback."""

    @functools.wraps(handler)
    async def wrapped(request: Request) -> Response:
        try:
            return await handler(request)
        except ApiError as exc:
            return error_json(exc.status, exc.message)
        except WikigrError as exc:
            return error_json(status_of(exc), exc.message)
        except Exception as exc:  # noqa: BLE001 - reported as a 500 of one line
            return error_json(500, _internal(exc))

    return wrapped


# -- requests --------------------------------------------------------------------------------


async def read_json(request: Request) -> dict[str, Any]:
    """The request's JSON object, at most :data:`MAX_BODY_BYTES`."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/json":
        raise ApiError(415, "send the body as JSON with Content-Type: application/json")
    body = bytearray()
    too_big = False
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_DRAIN_BYTES:
        raise ApiError(413, f"the request body is larger than {MAX_BODY_BYTES} bytes")
    async for chunk in request.stream():
        if too_big:
            continue  # drained, so the client reads the answer instead of a reset connection
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            too_big = True
    if too_big:
        raise ApiError(413, f"the request body is larger than {MAX_BODY_BYTES} bytes")
    try:
        data = schema.parse_json(bytes(body))  # under 64 KiB, '[[[...' may still be nested too deeply
    except schema.JSONError as exc:
        raise UsageError(f"the body is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise UsageError("the body must be a JSON object")
    if not schema.is_unicode(data):  # the MCP server refuses a lone surrogate too
        raise UsageError("the body holds a lone surrogate (such as \\udcff), which is not valid UTF-8 text")
    return data


def _int(value: object, name: str, low: int, high: int) -> int:
    # ASCII digits only ('²' is a digit int() refuses), and not thousands of them (int() refuses
    # over 4300); anything else is refused with the same message
    text = value.strip() if isinstance(value, str) else ""
    if text.isascii() and text.isdigit() and len(text) <= 18:
        value = int(text)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise UsageError(f"{name} must be an integer from {low} to {high}")
    return value


@dataclass(frozen=True)
class Ask:
    """A question (or a search) as a request states it, checked."""

    names: str
    refs: list[str]
    text: str
    profile: str | None
    top_k: int | None  # None: the pack's (kg_config.json), else 5
    enable: list[str]
    disable: list[str]
    fallback: bool

    def record(self) -> dict[str, Any]:
        return {
            "pack": self.names,
            "question": self.text,
            "profile": self.profile,
            "top_k": self.top_k,
            "enable": self.enable,
            "disable": self.disable,
        }


def parse_ask(data: dict[str, Any], packs: ServedPacks, text_field: str) -> Ask:
    fields = {"pack", text_field, "profile", "top_k", "enable", "disable"}
    if text_field == "question":
        fields.add("fallback")
    unknown = sorted(set(data) - fields)
    if unknown:
        raise UsageError(f"unknown field '{unknown[0]}' (fields: {', '.join(sorted(fields))})")
    if "pack" not in data:
        raise UsageError("pack is required (a name, 'a,b', a list, or 'all')")
    text = data.get(text_field)
    if not isinstance(text, str):
        raise UsageError(f"{text_field} must be a string")
    text = text.strip()
    if not text:
        raise UsageError(f"the {text_field} is empty")
    if len(text) > MAX_QUESTION_CHARS:
        raise UsageError(f"the {text_field} is longer than {MAX_QUESTION_CHARS} characters")
    profile = data.get("profile")
    if profile is not None and not isinstance(profile, str):
        raise UsageError(f"profile must be a string (profiles: {', '.join(PROFILES)})")
    if profile is not None and profile not in PROFILES:
        raise UsageError(f"unknown profile '{profile[:40]}' (profiles: {', '.join(PROFILES)})")
    top_k = None if data.get("top_k") is None else _int(data["top_k"], "top_k", 1, MAX_TOP_K)
    switches: dict[str, list[str]] = {}
    for key in ("enable", "disable"):
        value = data.get(key) or []
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise UsageError(f"{key} must be a list of stage names")
        if len(value) > MAX_STAGE_SWITCHES:
            raise UsageError(f"{key}: at most {MAX_STAGE_SWITCHES} stages")
        from wikigr.retrieval.stage import stage_class

        for name in value:
            stage_class(name[:64])  # an unknown stage is a UsageError naming the known ones
        switches[key] = sorted(set(value))
    fallback = data.get("fallback", False)
    if not isinstance(fallback, bool):
        raise UsageError("fallback must be true or false")
    ref = data["pack"]
    refs = packs.resolve(ref)
    names = ",".join(ref) if isinstance(ref, list) else str(ref)
    return Ask(names, refs, text, profile, top_k, switches["enable"], switches["disable"], fallback)


# -- answers ---------------------------------------------------------------------------------


def answer_json(result: AgentResult) -> dict[str, Any]:
    """``wikigr query --json``'s JSON (sources with their text); each source also carries its chunk
    id and origin."""
    data = result.to_json()
    data["sources"] = [
        {**source.to_json(), "chunk_id": source.chunk_id, "origin": source.origin}
        for source in result.sources
    ]
    return data


class Traces:
    """The last :data:`MAX_TRACES` answers, by id, in memory."""

    def __init__(self, keep: int = MAX_TRACES) -> None:
        self.keep = keep
        self._items: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, kind: str, request: dict[str, Any], response: dict[str, Any], elapsed_ms: float) -> str:
        trace_id = secrets.token_hex(8)
        record = {
            "trace_id": trace_id,
            "created": now_iso(),
            "kind": kind,
            "request": request,
            "elapsed_ms": round(elapsed_ms, 2),
            "response": response,
        }
        with self._lock:
            self._items[trace_id] = record
            while len(self._items) > self.keep:
                self._items.popitem(last=False)
        return trace_id

    def get(self, trace_id: str) -> dict[str, Any] | None:
        with self._lock:
            return self._items.get(trace_id)

    def recent(self) -> list[dict[str, Any]]:
        with self._lock:
            items = list(self._items.values())
        return [
            {
                "trace_id": r["trace_id"],
                "created": r["created"],
                "kind": r["kind"],
                "pack": r["request"]["pack"],
                "question": r["request"]["question"],
                "elapsed_ms": r["elapsed_ms"],
            }
            for r in reversed(items)
        ]

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


@contextlib.contextmanager
def _streaming(agent: KnowledgeGraphAgent | PackSet, emit: Callable[[str, dict[str, Any]], None]) -> Any:
    """Stream what Claude writes for this thread's calls, for every Claude client of ``agent``."""
    agents = agent.agents if isinstance(agent, PackSet) else [agent]
    with contextlib.ExitStack() as stack:
        seen: set[int] = set()
        for one in agents:
            streaming = getattr(one.llm, "streaming", None)
            if streaming is not None and id(one.llm) not in seen:
                seen.add(id(one.llm))
                stack.enter_context(
                    streaming(lambda text: emit("delta", {"text": text}), lambda: emit("restart", {}))
                )
        yield


class Server:
    """What the routes share: the packs served, the open agents, the traces."""

    def __init__(self, packs: ServedPacks) -> None:
        self.packs = packs
        self.cache = AgentCache()
        self.traces = Traces()
        self.started = time.monotonic()
        self._eval_cache: dict[tuple[str, int, int], dict[str, Any] | None] = {}
        self._eval_lock = threading.Lock()
        self._tasks: set[asyncio.Future[None]] = set()

    # -- blocking work (worker threads) ----------------------------------------------------------

    def _query(self, ask: Ask) -> dict[str, Any]:
        start = time.perf_counter()
        with self.cache.use(ask.refs, ask.profile, "query", ask.enable, ask.disable) as agent:
            _set_fallback(agent, ask.fallback)
            result = agent.query(ask.text, top_k=ask.top_k)
        response = answer_json(result)
        response["trace_id"] = self.traces.add(
            "query", ask.record(), response, (time.perf_counter() - start) * 1000
        )
        return response

    def _query_streamed(self, ask: Ask, emit: Callable[[str, dict[str, Any]], None]) -> None:
        start = time.perf_counter()
        with self.cache.use(ask.refs, ask.profile, "query", ask.enable, ask.disable) as agent:
            _set_fallback(agent, ask.fallback)
            if isinstance(agent, PackSet):
                with _streaming(agent, emit):
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
                    with _streaming(agent, emit):
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
        from wikigr.skill import digest

        path = self.packs.path(name)
        with self.cache.use([str(path)], None, "query") as agent:
            agent = _one(agent)
            store = agent.context.store
            stats = store.stats()
            info = digest(store)
            manifest = agent.pack.manifest
            data = {k: v for k, v in manifest.to_dict().items() if k not in ("sources", "files")}
            data.update(
                {
                    "name": name,
                    "path": str(agent.pack.path),
                    "store_stats": stats,
                    "vector_search": store.vector_path,
                    "sources": {
                        "total": len(manifest.sources),
                        "ok": sum(1 for s in manifest.sources if s.status == "ok"),
                        "failed": [
                            {"url": s.url, "status": s.status} for s in manifest.sources if s.status != "ok"
                        ][:50],
                    },
                    "profile": agent.profile,
                    "stages": agent.stage_names,
                    "claude": agent.llm is not None,
                    "titles": info.titles,
                    "categories": info.categories,
                    "entity_graph": agent.context.has_entity_graph,
                }
            )
            return data

    def _graph(self, name: str, chunks: list[str], entities: list[str], limit: int) -> dict[str, Any]:
        path = self.packs.path(name)
        with self.cache.use([str(path)], None, "query") as agent:
            data = neighbourhood(_one(agent).context.store, chunks, entities, limit)
        return {"pack": name, **data}

    def _eval(self, name: str) -> dict[str, Any]:
        pack = open_pack(self.packs.path(name))
        folder = pack.path / RESULTS_DIR
        runs: list[dict[str, Any]] = []
        skipped: list[str] = []
        files = sorted(folder.iterdir()) if folder.is_dir() else []
        for path in files:
            if path.name.startswith(".") or path.suffix != ".json" or path.is_symlink() or not path.is_file():
                continue
            run = self._eval_run(path)
            if run is None:
                skipped.append(path.name)
            else:
                runs.append(run)
        runs.sort(key=lambda r: (str(r.get("date") or ""), r["file"]))
        latest = {run["profile"]: run for run in runs}  # the last of each profile wins
        scores = pack.manifest.eval_scores
        questions = pack.path / "eval" / "questions.jsonl"
        count = 0
        if questions.is_file():
            with questions.open("rb") as lines:
                count = sum(1 for line in lines if line.strip())
        return {
            "pack": name,
            "questions": count,
            "runs": runs,
            "latest": latest,
            "eval_scores": None if scores is None else pack.manifest.to_dict()["eval_scores"],
            "skipped": skipped,
        }

    def _eval_run(self, path: Path) -> dict[str, Any] | None:
        """A results file's summary (without its per-question rows); None when unreadable."""
        stat = path.stat()
        key = (str(path), stat.st_mtime_ns, stat.st_size)
        with self._eval_lock:
            if key in self._eval_cache:
                return self._eval_cache[key]
        run: dict[str, Any] | None = None
        if stat.st_size <= MAX_RESULTS_FILE_BYTES:
            try:
                data = json.loads(path.read_bytes())
            except (OSError, ValueError, RecursionError):
                data = None
            if isinstance(data, dict) and isinstance(data.get("summary"), dict):
                run = {
                    "file": path.name,
                    "profile": str(data.get("profile") or path.stem.split("-", 1)[-1]),
                    "date": data.get("date"),
                    "judge": data.get("judge"),
                    "stages": data.get("stages"),
                    "ks": data.get("ks"),
                    "summary": data["summary"],
                }
        with self._eval_lock:
            if len(self._eval_cache) >= MAX_EVAL_FILES:
                self._eval_cache.clear()
            self._eval_cache[key] = run
        return run

    # -- routes ----------------------------------------------------------------------------------

    async def health(self, request: Request) -> Response:
        from wikigr.llm import llm_available

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
        from wikigr.retrieval.stage import builtin_stages

        return JSONResponse(
            {
                "default": DEFAULT_PROFILE,
                "profiles": PROFILES,
                "stages": {name: cls.summary for name, cls in sorted(builtin_stages().items())},
            }
        )

    async def list_packs(self, request: Request) -> Response:
        rows = await run_in_threadpool(self.packs.rows)
        where = str(self.packs.home) if self.packs.fixed is None else None
        return JSONResponse({"home": where, "packs": rows})

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
        limit = _int(params.get("limit", "60"), "limit", 1, 200)
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
                emit("error", {"error": exc.message, "status": status_of(exc)})
            except Exception as exc:  # noqa: BLE001 - reported as an error event of one line
                emit("error", {"error": _internal(exc), "status": 500})
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


def _one(agent: KnowledgeGraphAgent | PackSet) -> KnowledgeGraphAgent:
    """The agent of the one pack a call named."""
    if isinstance(agent, PackSet):
        raise UsageError("name one pack here")
    return agent


def _set_fallback(agent: KnowledgeGraphAgent | PackSet, fallback: bool) -> None:
    """Whether a Claude failure answers extractively, for this call (the agents' locks are held)."""
    for one in agent.agents if isinstance(agent, PackSet) else [agent]:
        one.fallback = fallback


# -- the guard: host, token, headers -----------------------------------------------------------


class Guard:
    """Refuses what a request may not do before any route sees it, and adds security headers.

    On loopback, a request whose Host is not ``localhost`` or a loopback address (any of
    127.0.0.0/8 or ``[::1]``) is refused: a web page elsewhere cannot reach the
    server through DNS rebinding, which needs a name of its own. With a token, every request must carry it:
    ``Authorization: Bearer TOKEN``, or the cookie the page's sign-in sets (``POST /login``)."""

    def __init__(self, app: ASGIApp, token: str | None, loopback: bool) -> None:
        self.app = app
        self.token = token.encode() if token else None
        self.loopback = loopback

    def authorised(self, headers: Headers) -> bool:
        if self.token is None:
            return True
        scheme, _, given = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self.token):
            return True
        cookie = _cookie(headers.get("cookie", ""), TOKEN_COOKIE)
        return cookie is not None and hmac.compare_digest(cookie.encode(), self.token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    extra.setdefault(name, value)
            await send(message)

        refusal: Response | None = None
        if self.loopback:
            host = headers.get("host", "")
            if not is_loopback(_host_name(host)):
                refusal = error_json(
                    421, f"refused: Host '{host[:80]}' is not a loopback name of this server"
                )
        if refusal is None and not self.authorised(headers) and scope["path"] not in PUBLIC_PATHS:
            if scope["path"] == "/" and scope["method"] in ("GET", "HEAD"):
                refusal = FileResponse(STATIC / "login.html", status_code=401)
            else:
                refusal = error_json(
                    401,
                    "this server needs its token: send Authorization: Bearer TOKEN",
                    headers={"www-authenticate": "Bearer"},
                )
        if refusal is not None:
            await refusal(scope, receive, secured)
            return
        await self.app(scope, receive, secured)


def _host_name(host: str) -> str:
    """The name in a ``Host`` header, without its port: ``[::1]`` of ``[::1]:8700``."""
    if host.startswith("["):
        return host[: host.find("]") + 1]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _cookie(header: str, name: str) -> str | None:
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


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
        return error_json(500, _internal(exc))

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
