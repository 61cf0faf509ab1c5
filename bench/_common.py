"""What every bench script writes about where and when it ran (docs/benchmarks.md: honest numbers).

from _common import header, load      # bench/ is on sys.path when a script runs from it

results = {**header(), ...}           # wikigr, machine, date, load_average_at_start
results["load_average_at_end"] = load()
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from wikigr import __version__


def load() -> list[float]:
    """The machine's load average (1, 5, 15 minutes), rounded: the machine is shared, so every
    figure is read with the load it was measured under."""
    return [round(x, 2) for x in os.getloadavg()]


def machine(cores_key: str = "cpus") -> dict[str, Any]:
    """The machine: its core count (under ``cores_key``, the name each result file has used),
    Python version and platform."""
    return {cores_key: os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()}


def header(cores_key: str = "cpus", with_time: bool = False, date: bool = True) -> dict[str, Any]:
    """The start of a result file: ``wikigr`` (version), ``machine``, ``date`` (with the time of
    day when ``with_time``; none when not ``date``) and ``load_average_at_start``."""
    found: dict[str, Any] = {"wikigr": __version__, "machine": machine(cores_key)}
    if date:
        found["date"] = time.strftime("%Y-%m-%d %H:%M" if with_time else "%Y-%m-%d")
    found["load_average_at_start"] = load()
    return found


def write_results(result: dict[str, Any], out: Path) -> None:
    """End a result file: the load average at the end, then the JSON written to ``out``."""
    result["load_average_at_end"] = load()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")


def shares(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The number of ``rows`` and, for each of their true-or-false keys, the share (%) true."""
    n = len(rows)
    flags = [k for k, v in rows[0].items() if isinstance(v, bool)] if rows else []
    return {"questions": n, **{f"{k}_%": round(100 * sum(r[k] for r in rows) / n, 1) for k in flags}}


def halves(rows: list[Any], summarize: Callable[[list[Any]], dict[str, Any]]) -> dict[str, Any]:
    """``summarize`` over the first half of ``rows``, the second half and all of them: a rule
    chosen on one half is read on the other (docs/benchmarks.md: honest numbers)."""
    half = len(rows) // 2
    first, second = rows[:half], rows[half:]
    return {"first_half": summarize(first), "second_half": summarize(second), "all": summarize(rows)}


def packs_at(root: Path, names: str) -> Iterator[tuple[str, Path]]:
    """(name, folder) of each comma-separated pack ``names`` under ``root`` that holds a pack;
    the others are said skipped on stderr."""
    for name in names.split(","):
        pack = root / name
        if (pack / "manifest.json").is_file():
            yield name, pack
        else:
            print(f"skipped {name}: no pack there", file=sys.stderr)


def arms_report(
    name: str,
    asked: list[dict[str, Any]],
    arms: dict[str, Any],
    run: Callable[[Any], list[Any]],
    summarize: Callable[[list[Any]], dict[str, Any]],
) -> dict[str, Any]:
    """A pack's report over generated questions: their count, five examples, and per arm (its
    options given to ``run``) the halves of ``summarize``, each printed as it comes."""
    report: dict[str, Any] = {"questions": len(asked), "examples": [q["question"] for q in asked[:5]]}
    for arm, options in arms.items():
        report[arm] = halves(run(options), summarize)
        for part in ("first_half", "second_half", "all"):
            print(f"{name:24s} {arm:10s} {part:12s} {json.dumps(report[arm][part])}", flush=True)
    return report
