"""``pack validate``'s child process, run as validate runs it (``python -m wikigr.validate.child``),
and the one-line form in which validate quotes an error from a library."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from wikigr.errors import one_line
from wikigr.validate import validate_pack
from wikigr.validate.checks import REPORT_PREFIX

USAGE = "usage: python -m wikigr.validate.child PATH [--query]"


def _child(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "wikigr.validate.child", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_child_reports_the_store_checks_validate_reports(built_pack: Path) -> None:
    done = _child(str(built_pack), "--query")
    assert done.returncode == 0, done.stderr
    [line] = [line for line in done.stdout.splitlines() if line.startswith(REPORT_PREFIX)]
    rows = json.loads(line[len(REPORT_PREFIX) :])
    names = ["store", "stats", "embeddings", "keyword_index", "definitions", "query"]
    assert [row["name"] for row in rows] == names
    assert all(row["ok"] for row in rows), rows
    # validate_pack runs this very child: its last checks are the child's report
    report = validate_pack(built_pack)
    assert report.ok
    assert [c.name for c in report.checks[-len(rows) :]] == [row["name"] for row in rows]


def test_without_query_the_child_opens_the_store_only(built_pack: Path) -> None:
    done = _child(str(built_pack))
    assert done.returncode == 0, done.stderr
    [line] = [line for line in done.stdout.splitlines() if line.startswith(REPORT_PREFIX)]
    assert "query" not in [row["name"] for row in json.loads(line[len(REPORT_PREFIX) :])]


@pytest.mark.parametrize("args", [(), ("--verbose", "pack"), ("-q",)])
def test_the_child_refuses_a_bad_command_line(args: tuple[str, ...]) -> None:
    done = _child(*args)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip() == USAGE


@pytest.mark.parametrize(
    ("error", "line"),
    [
        (ValueError("bad\n  value\tthere "), "bad value there"),
        (KeyError(), "KeyError"),  # no message: its type
        (OSError("   "), "OSError"),
    ],
)
def test_one_line_collapses_an_error_to_one_line(error: BaseException, line: str) -> None:
    assert one_line(error) == line
