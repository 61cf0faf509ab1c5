"""The query worker: a process that keeps the answering stack loaded (the model, the open packs),
so that ``wikigr query`` answers in a fraction of its start-up. docs/agent.md, "The query worker".

Without Claude (no ``ANTHROPIC_API_KEY``), ``wikigr query`` first asks the worker of its setting
(:func:`ask`). There is none the first time: the command then answers itself, as it always did, and
starts one in the background (:func:`start`), which the next questions reach. A worker:

- listens on ``$WIKIGR_HOME/run/query-KEY.sock``, in a folder only its user may enter (0700), and
  answers only its own user (the peer's credentials are checked). KEY is a digest of what an
  answer depends on besides the question: this Python, wikigr's code (its files' sizes and times)
  and the environment variables that wikigr, the model libraries and Python read; a change to any
  of them is another worker;
- answers one question at a time, in the asker's working folder, from agents kept open as the
  servers keep them (:class:`~wikigr.agent_cache.AgentCache`: an updated pack is reopened);
- exits after ``WIKIGR_WORKER_IDLE`` seconds without a question (default 600), or once its code
  changed on disk. Whatever goes wrong with it, the command answers itself.

``WIKIGR_WORKER=off`` (or ``0``) turns the worker off: each ``wikigr query`` then answers alone.

This module imports nothing heavy: :func:`ask` runs before anything else is loaded.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import struct
import sys
import time
from pathlib import Path
from typing import Any

from wikigr.home import wikigr_home

IDLE_SECONDS = 600.0  # a worker exits after this long without a question (WIKIGR_WORKER_IDLE)
CHECK_SECONDS = 30.0  # how often an idle worker looks at the clock and at its code
MAX_MESSAGE = 64 * 1024 * 1024  # bytes of a request or a reply read at most
MAX_SOCKET_PATH = 100  # AF_UNIX paths hold 108 bytes; a longer home: no worker
OFF = frozenset({"0", "off", "no", "false"})
# What an answer depends on besides the question: wikigr's settings, the model libraries', Python's.
ENV_PREFIXES = (
    "WIKIGR_",
    "ANTHROPIC_",
    "HF_",
    "HUGGINGFACE_",
    "TRANSFORMERS_",
    "SENTENCE_TRANSFORMERS_",
    "TORCH",
    "OMP_",
    "MKL_",
    "ORT_",
    "PYTHON",
    "XDG_",
    "LANG",
    "LC_",
)
ENV_NAMES = ("HOME", "TMPDIR")
ENV_IGNORED = ("WIKIGR_WORKER", "WIKIGR_WORKER_IDLE")


def enabled() -> bool:
    """Whether ``wikigr query`` goes through a worker: not with Claude (its key stays in the
    asking process), not when ``WIKIGR_WORKER`` is off, and only where Unix sockets exist."""
    if os.environ.get("WIKIGR_WORKER", "").strip().lower() in OFF:
        return False
    if os.environ.get("ANTHROPIC_API_KEY", "").strip():
        return False
    return hasattr(socket, "AF_UNIX") and hasattr(os, "getuid")


def code_stamp() -> str:
    """A digest of wikigr's files (names, sizes, modification times): a changed file changes it."""
    root = Path(__file__).parent
    digest = hashlib.sha256()
    for folder, folders, files in os.walk(root):
        folders[:] = sorted(f for f in folders if f != "__pycache__")
        for name in sorted(files):
            with contextlib.suppress(OSError):
                stat = os.stat(os.path.join(folder, name))
                digest.update(f"{folder}/{name}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def worker_key() -> str:
    """The digest that names the worker of this process's setting (see the module's docstring)."""
    digest = hashlib.sha256()
    digest.update(f"{sys.executable}\n{sys.version}\n{code_stamp()}\n".encode())
    for name in sorted(os.environ):
        if name in ENV_IGNORED or not (name.startswith(ENV_PREFIXES) or name in ENV_NAMES):
            continue
        digest.update(f"{name}={os.environ[name]}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()[:24]


def socket_path() -> Path | None:
    """Where the worker of this setting listens; None where it cannot (a home too long for a
    Unix socket's path)."""
    path = wikigr_home() / "run" / f"query-{worker_key()}.sock"
    return path if len(os.fsencode(path)) <= MAX_SOCKET_PATH else None


# -- the asking side ---------------------------------------------------------------------------------


def ask(request: dict[str, Any], path: Path | None) -> dict[str, Any] | None:
    """The worker's reply to ``request`` (``{"result": ...}`` or ``{"error": ..., "exit_code": n}``),
    or None when no worker answers it (the caller then answers itself)."""
    if path is None:
        return None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        try:
            conn.connect(str(path))
            conn.sendall(json.dumps(request).encode() + b"\n")
            conn.shutdown(socket.SHUT_WR)
            data = _read(conn)
        except OSError:  # none listens, or it went away: answered here
            return None
    try:
        reply = json.loads(data) if data else None
    except ValueError:
        return None
    return reply if isinstance(reply, dict) and ("result" in reply or "error" in reply) else None


def start(path: Path | None) -> None:
    """Start the worker of this setting in the background, unless one runs or is starting (it
    holds a lock on ``query-KEY.lock`` for its life)."""
    if path is None or _locked(path.with_suffix(".lock")):
        return
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parent.parent)  # this very code, wherever it is
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    with contextlib.suppress(OSError):
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.posix_spawn(  # not a child to wait for, in a session of its own (a Ctrl-C is not its)
            sys.executable,
            [sys.executable, "-m", "wikigr.worker", str(path)],
            env,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                (
                    os.POSIX_SPAWN_OPEN,
                    2,
                    str(path.with_suffix(".log")),
                    os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                    0o600,
                ),
            ],
            setsid=True,
        )


def stop(path: Path | None) -> bool:
    """Ask the worker at ``path`` to exit; whether one was there."""
    reply = ask({"op": "stop"}, path)
    return reply is not None


def _locked(lock: Path) -> bool:
    import fcntl

    try:
        fd = os.open(lock, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def _read(conn: socket.socket) -> bytes:
    chunks, size = [], 0
    while chunk := conn.recv(1 << 16):
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_MESSAGE:
            raise OSError("message too large")
    return b"".join(chunks)


# -- the worker ----------------------------------------------------------------------------------------


def serve(path: Path, idle: float = IDLE_SECONDS) -> None:
    """Be the worker at ``path`` until idle for ``idle`` seconds, stopped, or its code changed;
    return at once if another worker holds the place."""
    import fcntl

    os.chdir("/")  # no folder of the asker's held open
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.parent.stat().st_mode & 0o077 or path.parent.stat().st_uid != os.getuid():
        raise SystemExit(f"{path.parent} is open to other users: no worker")
    lock = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another worker of this setting runs, or is starting
    stamp = code_stamp()
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # a worker that died left it: the lock is ours
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_mask = os.umask(0o177)
    try:
        listener.bind(str(path))
    finally:
        os.umask(old_mask)
    listener.listen(64)
    listener.settimeout(min(idle, CHECK_SECONDS))
    inode = path.stat().st_ino
    from wikigr.agent_cache import AgentCache

    cache = AgentCache()
    served = 0
    last = time.monotonic()
    try:
        with contextlib.suppress(Exception):  # the model, before the first question; its to report
            from wikigr.embed import get_embedder

            get_embedder()
        while True:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                if time.monotonic() - last >= idle or code_stamp() != stamp:
                    return
                continue
            with conn:
                conn.settimeout(None)
                op = _handle(conn, cache, served)
                if op == "stop":
                    return
                served += op == "query"
            last = time.monotonic()
    finally:
        with contextlib.suppress(OSError):
            if path.stat().st_ino == inode:
                path.unlink()
        listener.close()
        cache.close()
        os.close(lock)


def _handle(conn: socket.socket, cache: Any, served: int) -> str:
    """Answer one request; the op it was."""
    if not _same_user(conn):
        return "refused"
    try:
        request = json.loads(_read(conn))
    except (OSError, ValueError):
        return "bad"
    if not isinstance(request, dict):
        return "bad"
    op = request.get("op")
    if op == "stop":
        reply: dict[str, Any] = {"result": {"stopped": os.getpid()}}
    elif op == "status":
        reply = {"result": {"pid": os.getpid(), "agents": len(cache), "served": served}}
    elif op == "query":
        reply = _query(request, cache)
    else:
        reply = {"error": f"unknown op {op!r}", "exit_code": 1}
    with contextlib.suppress(OSError):  # the asker went away (a Ctrl-C): nobody to tell
        conn.sendall(json.dumps(reply, ensure_ascii=False).encode())
    return str(op)


def _query(request: dict[str, Any], cache: Any) -> dict[str, Any]:
    from wikigr.errors import WikigrError
    from wikigr.packset import pack_refs

    args = request.get("args")
    if not isinstance(args, dict):
        return {"error": "no args", "exit_code": 1}
    try:
        os.chdir(str(request.get("cwd") or "/"))
        refs = pack_refs(args["pack"])
        with cache.use(
            refs, args.get("profile"), "query", args.get("enable") or (), args.get("disable") or ()
        ) as agent:
            result = agent.query(args["question"], top_k=args.get("top_k"))
        return {"result": result.to_json()}
    except WikigrError as exc:
        return {"error": exc.message, "exit_code": exc.exit_code}
    except Exception:  # noqa: BLE001 - the asker answers itself, and reports it as it would
        return {"retry": True}
    finally:
        os.chdir("/")


def _same_user(conn: socket.socket) -> bool:
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:  # not Linux: the folder's permissions are the guard
        return True
    creds = conn.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return bool(uid == os.getuid())


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m wikigr.worker SOCKET_PATH", file=sys.stderr)
        return 2
    raw = os.environ.get("WIKIGR_WORKER_IDLE", "").strip()
    try:
        idle = float(raw) if raw else IDLE_SECONDS
    except ValueError:
        idle = IDLE_SECONDS
    serve(Path(argv[0]), idle=max(1.0, idle))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
