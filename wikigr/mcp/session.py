"""One MCP connection over stdio: the reader (the calling thread), the worker that runs tool calls,
and the warm-up that imports the answering stack meanwhile.

The reader answers at once what needs no pack (``initialize``, ``ping``, ``tools/list``, errors),
so ``ping`` is answered while a tool call runs. Tool calls go to one worker thread, in the order
they came, so one store connection is never used by two threads. The worker's first call waits
for the warm-up (started once the first request is answered), never races it. A call the client
cancels is not answered, and not run if it has not started. When the client closes stdin, the
calls not answered yet are dropped unanswered (as the SDK's server dropped them).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO, Protocol

from wikigr.errors import WikigrError
from wikigr.mcp import protocol
from wikigr.mcp.catalogue import TOOLS, ArgumentsError, check_arguments
from wikigr.mcp.wire import Notification, Reply, Request, RequestId, Writer, read_line

log = logging.getLogger("wikigr.mcp")


class ToolRunner(Protocol):
    """What runs the tools (wikigr.mcp_server.Tools), once the warm-up has made it."""

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]: ...

    def close(self) -> None: ...


class WarmUp:
    """The answering stack, made in a thread: :meth:`start` begins, :meth:`get` waits for it."""

    def __init__(self, make: Callable[[], ToolRunner]) -> None:
        self._make = make
        self._done = threading.Event()
        self._runner: ToolRunner | None = None
        self._failure: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="mcp-warm-up", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        try:
            self._runner = self._make()
        except BaseException as exc:  # noqa: BLE001 - reported to each call that needs it
            self._failure = exc
        finally:
            self._done.set()

    def get(self) -> ToolRunner:
        self.start()
        self._done.wait()
        if self._runner is None:
            failure = f"{type(self._failure).__name__}: {self._failure}"
            raise WikigrError(f"the answering stack did not load: {failure}")
        return self._runner

    def close(self) -> None:
        """Close what the warm-up made; one still importing is left to the process's exit (a
        daemon thread: a client that connects and leaves does not wait for it)."""
        if self._done.is_set() and self._runner is not None:
            self._runner.close()


@dataclass(frozen=True)
class _Call:
    request: Request
    tool: str
    arguments: dict[str, Any]
    era: protocol.Era


class Session:
    """Serve one client, reading its lines until EOF (:meth:`run`) and writing to ``writer``."""

    def __init__(self, writer: Writer, warm_up: WarmUp) -> None:
        self.writer = writer
        self.warm_up = warm_up
        self.state = protocol.State()
        self._calls: queue.Queue[_Call | None] = queue.Queue()
        self._pending: set[RequestId] = set()  # the tool calls queued or running
        self._given_up: set[RequestId] = set()  # those of them not to answer (cancelled, or the end)
        self._running = False
        self._guard = threading.Lock()  # the three above
        self._worker = threading.Thread(target=self._work, name="mcp-worker", daemon=True)

    def run(self, lines: BinaryIO) -> bool:
        """Serve until EOF; whether the worker is idle then (no call still running, so what the
        calls use may be closed)."""
        self._worker.start()
        for raw in iter(lines.readline, b""):
            self.take(raw)
        for request_id in reversed(self.state.listening):  # streams left open: ended
            self.writer.send(protocol.connection_closed(request_id))
        with self._guard:
            self._given_up |= self._pending
            idle = not self._running
        self._calls.put(None)
        if idle:
            self._worker.join()
        return idle

    def take(self, raw: bytes) -> None:
        """Read one line and answer it (or queue its tool call)."""
        line = read_line(raw)
        if isinstance(line, Reply):
            self.writer.send(line.message)
        elif isinstance(line, Notification):
            self._notified(line)
        elif isinstance(line, Request):
            self._requested(line)

    def _notified(self, note: Notification) -> None:
        if note.method == "notifications/cancelled":
            request_id = (note.params or {}).get("requestId")
            with self._guard:
                if request_id in self._pending and not isinstance(request_id, bool):
                    self._given_up.add(request_id)
        self.state.notified(note)

    def _requested(self, request: Request) -> None:
        outcome = self.state.answer(request)
        if isinstance(outcome, protocol.ToolCall):
            self._queue_call(request, outcome)
        elif isinstance(outcome, protocol.Listening):
            self.writer.send(outcome.acknowledgement)
        else:
            self.writer.send(outcome)
        self.warm_up.start()  # after the first reply, which does not wait for it

    def _queue_call(self, request: Request, call: protocol.ToolCall) -> None:
        tool = TOOLS.get(call.name)
        if tool is None:
            self._answer(request, call.era, failure=f"Error: Unknown tool: {call.name}")
            return
        try:
            arguments = check_arguments(tool, call.arguments)
        except ArgumentsError as exc:
            self._answer(request, call.era, failure=str(exc))
            return
        with self._guard:
            self._pending.add(request.id)
            self._given_up.discard(request.id)
        self._calls.put(_Call(request, tool.name, arguments, call.era))

    def _work(self) -> None:
        while (call := self._calls.get()) is not None:
            try:
                self._run(call)
            except Exception as exc:  # noqa: BLE001 - a reply that cannot be written: the next call
                log.error("answering %s failed: %s: %s", call.tool, type(exc).__name__, exc)
            finally:
                with self._guard:
                    self._running = False
                    self._pending.discard(call.request.id)
                    self._given_up.discard(call.request.id)

    def _run(self, call: _Call) -> None:
        with self._guard:
            if call.request.id in self._given_up:  # cancelled before it ran: not run, not answered
                return
            self._running = True
        try:
            data = self.warm_up.get().call(call.tool, call.arguments)
        except Exception as exc:  # noqa: BLE001 - the client reads one line
            if not isinstance(exc, WikigrError):  # a crash: its details on stderr only
                log.error("%s failed: %s: %s", call.tool, type(exc).__name__, exc)
            self._answer(call.request, call.era, failure=protocol.tool_error_text(call.tool, exc))
        else:
            self._answer(call.request, call.era, data=data)

    def _answer(
        self,
        request: Request,
        era: protocol.Era,
        data: dict[str, Any] | None = None,
        failure: str | None = None,
    ) -> None:
        with self._guard:
            if request.id in self._given_up:  # the client cancelled it: no answer is due
                return
        self.writer.send(era.tool_result(request, data, failure))
