"""Consoles and shared output helpers for the CLI."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)
for _console in (out, err):
    if not _console.is_terminal and _console.width < 160:
        _console.width = 160  # piped or captured: tables keep their columns


def print_json(data: Any) -> None:
    """Plain JSON on stdout (no rich markup), one document."""
    print(json.dumps(data, indent=2, ensure_ascii=False, default=str))
