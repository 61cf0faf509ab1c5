"""The evaluation results of a served pack (``GET /api/v1/packs/{pack}/eval``): the runs recorded
in its ``eval/results/``, summarised without their per-question rows."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from wikigr.pack.pack import RESULTS_DIR, open_pack

MAX_RESULTS_FILE_BYTES = 64 * 1024 * 1024
MAX_EVAL_FILES = 512  # results files' summaries kept in memory


class EvalRuns:
    """Summaries of results files, each kept in memory while the file is unchanged."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, int, int], dict[str, Any] | None] = {}
        self._lock = threading.Lock()

    def summary(self, name: str, folder: Path) -> dict[str, Any]:
        """The evaluations of the pack in ``folder`` (served as ``name``): its questions, the runs
        recorded in its results folder (oldest first), the latest of each profile."""
        pack = open_pack(folder)
        folder = pack.path / RESULTS_DIR
        runs: list[dict[str, Any]] = []
        skipped: list[str] = []
        files = sorted(folder.iterdir()) if folder.is_dir() else []
        for path in files:
            if path.name.startswith(".") or path.suffix != ".json" or path.is_symlink() or not path.is_file():
                continue
            run = self.run(path)
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

    def run(self, path: Path) -> dict[str, Any] | None:
        """A results file's summary (without its per-question rows); None when unreadable."""
        stat = path.stat()
        key = (str(path), stat.st_mtime_ns, stat.st_size)
        with self._lock:
            if key in self._cache:
                return self._cache[key]
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
        with self._lock:
            if len(self._cache) >= MAX_EVAL_FILES:
                self._cache.clear()
            self._cache[key] = run
        return run
