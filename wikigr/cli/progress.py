"""Rich progress bars (on stderr) fed by the library's progress events."""

from __future__ import annotations

from typing import ClassVar

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from wikigr.cli.output import console
from wikigr.progress import ProgressEvent


class ProgressBars:
    LABELS: ClassVar[dict[str, str]] = {"fetch": "fetch", "embed": "embed", "write": "write store"}

    def __init__(self, enabled: bool) -> None:
        self.progress = Progress(
            TextColumn("{task.description:<12}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console(stderr=True),
            disable=not enabled,
            transient=False,
        )
        self.tasks: dict[str, TaskID] = {}

    def __call__(self, event: ProgressEvent) -> None:
        if event.stage not in self.tasks:
            label = self.LABELS.get(event.stage, event.stage)
            self.tasks[event.stage] = self.progress.add_task(label, total=event.total or None)
        self.progress.update(self.tasks[event.stage], completed=event.done, total=event.total or None)
