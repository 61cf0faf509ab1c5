"""The Settings view of ``wikigr serve``: a pack's ``kg_config.json`` read and written, whether
Claude is configured (never its key) and which model answers, and the caches under
``$WIKIGR_HOME/cache/`` with their sizes, each of which can be cleared.

A saved ``kg_config.json`` is checked first by the loader queries and ``wikigr pack validate`` use
(:func:`wikigr.retrieval.profiles.load_pack_config`: unknown keys, profiles, stage options), then
written beside the pack's other files atomically (a temporary file, fsync, rename) under the
pack's lock, so a build of the pack does not run meanwhile. The open agents of the pack answer
with it from the next question on (:class:`wikigr.agent_cache.AgentCache` reopens an agent whose
``kg_config.json`` changed).

Routes: ``GET /api/v1/settings``, ``GET``/``PUT /api/v1/packs/{pack}/config``,
``DELETE /api/v1/caches/{cache}``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from wikigr.errors import BuildError, InvalidPackError, UsageError
from wikigr.home import cache_dir
from wikigr.llm.config import DEFAULT_MODEL, ENV_MODEL, env, llm_available
from wikigr.pack import pack as layout
from wikigr.pack.pack import MAX_CONFIG_BYTES, open_pack, read_config
from wikigr.pack.transaction import pack_lock
from wikigr.retrieval.profiles import DEFAULT_PROFILE, PROFILES, load_pack_config, profile_applies
from wikigr.serve.http import ApiError, read_json
from wikigr.serve.packs import NAME

if TYPE_CHECKING:
    from wikigr.serve.app import Server

API = "/api/v1"
DEFAULT_TOP_K = 5  # the agent's when kg_config.json sets none

Handler = Callable[[Request], Awaitable[Response]]


def routes(server: Server, endpoint: Callable[[Handler], Handler]) -> list[Route]:
    settings = Settings(server)
    config = f"{API}/packs/{{pack}}/config"
    return [
        Route(f"{API}/settings", endpoint(settings.general), methods=["GET"]),
        Route(config, endpoint(settings.config), methods=["GET"]),
        Route(config, endpoint(settings.save), methods=["PUT"]),
        Route(f"{API}/caches/{{cache}}", endpoint(settings.clear), methods=["DELETE"]),
    ]


# -- the caches ---------------------------------------------------------------------------------


def caches() -> list[dict[str, Any]]:
    """Each entry of ``$WIKIGR_HOME/cache/`` (a folder, or a file such as ``digests.json``): its
    name, files and bytes (symbolic links counted, not followed)."""
    root = cache_dir()
    found = []
    with contextlib.suppress(OSError):
        for entry in sorted(root.iterdir()):
            if entry.name.startswith("."):
                continue
            files = size = 0
            if entry.is_dir() and not entry.is_symlink():
                for folder, _, names in os.walk(entry):
                    for name in names:
                        with contextlib.suppress(OSError):
                            size += os.lstat(os.path.join(folder, name)).st_size
                            files += 1
            else:
                with contextlib.suppress(OSError):
                    size, files = entry.lstat().st_size, 1
            found.append({"name": entry.name, "files": files, "bytes": size})
    return found


def clear_cache(name: str) -> dict[str, Any]:
    """Remove the cache ``name`` (an entry :func:`caches` lists, by its name: never a path)."""
    listed = {c["name"]: c for c in caches()}
    if not NAME.fullmatch(name) or name not in listed:
        known = ", ".join(listed) or "none"
        raise ApiError(404, f"no cache '{name[:40]}' (caches: {known})")
    entry = cache_dir(name)
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry, ignore_errors=True)
    else:
        entry.unlink(missing_ok=True)
    left = {c["name"]: c for c in caches()}.get(name, {"files": 0, "bytes": 0})
    return {"name": name, "cleared": listed[name], "left": {"files": left["files"], "bytes": left["bytes"]}}


# -- kg_config.json -----------------------------------------------------------------------------


def write_config(folder: Path, config: dict[str, Any]) -> None:
    """``kg_config.json`` of the pack in ``folder`` replaced atomically: a temporary file beside it,
    flushed to disk, renamed over it (and the folder synced), so a reader sees the old file or the
    new one; the pack's other files are not touched."""
    data = (json.dumps(config, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    if len(data) > MAX_CONFIG_BYTES:
        raise UsageError(f"kg_config.json would be larger than {MAX_CONFIG_BYTES} bytes")
    path = folder / layout.CONFIG_FILE
    tmp = folder / f".{layout.CONFIG_FILE}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # the rename itself to disk (not every file system can)
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


class Settings:
    """The routes of the Settings view."""

    def __init__(self, server: Server) -> None:
        self.server = server

    async def general(self, request: Request) -> Response:
        model = env(ENV_MODEL)
        return JSONResponse(
            {
                "claude": llm_available(),  # whether a key is set; the key itself is never sent
                "model": model or DEFAULT_MODEL,
                "model_from": ENV_MODEL if model else "default",
                "caches": await run_in_threadpool(caches),
            }
        )

    def _config(self, name: str) -> dict[str, Any]:
        pack = open_pack(self.server.packs.path(name))
        kind = pack.manifest.source_kind
        raw = read_config(pack.path)
        problem = None
        try:
            config = load_pack_config(raw, layout.CONFIG_FILE)
            profile, top_k, model = config.profile, config.top_k, config.model
        except InvalidPackError as exc:  # shown, so that it can be put right here
            problem, profile, top_k, model = exc.message, None, None, None
        embedder = pack.manifest.embedder
        return {
            "pack": name,
            "kind": kind,
            "config": raw,
            "exists": (pack.path / layout.CONFIG_FILE).is_file(),
            "problem": problem,
            "profiles": [p for p in PROFILES if profile_applies(p, kind)],
            "effective": {
                "profile": profile or DEFAULT_PROFILE,
                "top_k": top_k or DEFAULT_TOP_K,
                "model": env(ENV_MODEL) or model or DEFAULT_MODEL,  # as the agent chooses it
            },
            "embedder": {"name": embedder.name, "dimension": embedder.dimension, "backend": embedder.backend},
        }

    async def config(self, request: Request) -> Response:
        return JSONResponse(await run_in_threadpool(self._config, request.path_params["pack"]))

    def _save(self, name: str, config: dict[str, Any]) -> dict[str, Any]:
        folder = self.server.packs.path(name)
        kind = open_pack(folder).manifest.source_kind
        try:
            checked = load_pack_config(config, layout.CONFIG_FILE)
        except InvalidPackError as exc:  # what `wikigr pack validate` says of the file, as a 400
            raise UsageError(exc.message) from exc
        if checked.profile is not None and not profile_applies(checked.profile, kind):
            raise UsageError(
                f"{layout.CONFIG_FILE}: profile: {checked.profile} does not apply to {kind} packs"
            )
        try:
            with pack_lock(folder):
                write_config(folder, config)
        except BuildError as exc:
            raise ApiError(409, f"a build of pack {name} is running: save once it has ended") from exc
        return self._config(name)

    async def save(self, request: Request) -> Response:
        config = await read_json(request)
        return JSONResponse(await run_in_threadpool(self._save, request.path_params["pack"], config))

    async def clear(self, request: Request) -> Response:
        return JSONResponse(await run_in_threadpool(clear_cache, request.path_params["cache"]))
