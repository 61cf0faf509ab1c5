"""Progress on stderr, fed by the library's progress events: rich bars on a terminal, plain lines
when stderr is a pipe or a log file, nothing with ``--quiet``.

The plain lines are rate-limited as curl's and wget's meters are on a file: a phase's line is
printed at most every ``every`` seconds (the first one ``every`` seconds after the command
started, so a quick command prints none), its end when it printed before, and, while a phase sends
no event (a long graph extraction), its state again every ``heartbeat`` seconds so that a log
shows the command is alive::

    wikigr: fetch 12/40 (4s)
    wikigr: embed 310/1024 (12s)
"""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import ClassVar

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from wikigr.cli.output import console
from wikigr.progress import ProgressEvent


class ProgressLines:
    """Plain progress lines on stderr (see the module's docstring)."""

    def __init__(self, labels: dict[str, str], every: float = 2.0, heartbeat: float = 10.0) -> None:
        self.labels = labels
        self.every = every
        self.heartbeat = heartbeat
        self.stream = console(stderr=True)
        self.started = time.monotonic()
        self.last_line = self.started  # when a line was printed last (none yet: the start)
        self.printed: set[str] = set()  # the phases that printed a line
        self.current: ProgressEvent | None = None
        self.phase_started: dict[str, float] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    def __enter__(self) -> ProgressLines:
        self.thread = threading.Thread(target=self._beat, name="wikigr-progress", daemon=True)
        self.thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        with self.lock:  # a line being printed is finished first; none after this
            self.stop.set()

    def _line(self, event: ProgressEvent, now: float) -> None:
        label = self.labels.get(event.stage, event.stage)
        count = f"{event.done}/{event.total}" if event.total else str(event.done)
        seconds = now - self.phase_started.get(event.stage, self.started)
        detail = f" {event.detail}" if event.detail else ""
        self.stream.print(
            f"wikigr: {label} {count}{detail} ({seconds:.0f}s)", markup=False, highlight=False, soft_wrap=True
        )
        self.last_line = now
        self.printed.add(event.stage)

    def __call__(self, event: ProgressEvent) -> None:
        now = time.monotonic()
        with self.lock:
            self.phase_started.setdefault(event.stage, now)
            self.current = event
            finished = event.total > 0 and event.done >= event.total
            if (finished and event.stage in self.printed) or now - self.last_line >= self.every:
                self._line(event, now)

    def _beat(self) -> None:
        while not self.stop.wait(min(self.every, self.heartbeat) / 2):
            now = time.monotonic()
            with self.lock:
                event = self.current
                if self.stop.is_set() or event is None or now - self.last_line < self.heartbeat:
                    continue
                if event.total > 0 and event.done >= event.total:
                    continue  # a phase that ended: the next one says when it starts
                self._line(event, now)


class ProgressBars:
    """The progress of a command on stderr: bars on a terminal, plain lines otherwise (see the
    module's docstring), nothing when not ``enabled`` (``--json``) or ``quiet`` (``--quiet``).
    Use it as a context manager around the work, and as its progress callback."""

    LABELS: ClassVar[dict[str, str]] = {
        "fetch": "fetch",
        "embed": "embed",
        "write": "write store",
        "read": "read chunks",
        "graph": "entity graph",
    }

    def __init__(self, enabled: bool, quiet: bool = False) -> None:
        terminal = console(stderr=True).is_terminal
        self.lines = ProgressLines(self.LABELS) if enabled and not quiet and not terminal else None
        self.progress = Progress(
            TextColumn("{task.description:<12}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console(stderr=True),
            disable=not (enabled and not quiet and terminal),
            transient=False,
        )
        self.tasks: dict[str, TaskID] = {}

    def __enter__(self) -> ProgressBars:
        if self.lines is not None:
            self.lines.__enter__()
        self.progress.__enter__()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.progress.__exit__(kind, exc, tb)
        if self.lines is not None:
            self.lines.__exit__(kind, exc, tb)

    def __call__(self, event: ProgressEvent) -> None:
        if event.total == 0 and event.done == 0:
            return  # nothing to do in this phase (a corpus fetches nothing): no bar stuck at 0/?
        if self.lines is not None:
            self.lines(event)
            return
        if event.stage not in self.tasks:
            label = self.LABELS.get(event.stage, event.stage)
            self.tasks[event.stage] = self.progress.add_task(label, total=event.total or None)
        self.progress.update(self.tasks[event.stage], completed=event.done, total=event.total or None)
