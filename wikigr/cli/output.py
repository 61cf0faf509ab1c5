"""Consoles and shared output helpers for the CLI.

``out`` and ``err`` are rich consoles made on first use, so that a command that prints plain JSON
(``wikigr query ... --json``) never imports rich."""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from rich.console import Console


@functools.cache
def console(stderr: bool = False) -> Console:
    """The rich console of stdout (or stderr), made once."""
    from rich.console import Console

    made = Console(stderr=stderr, soft_wrap=True)
    if not made.is_terminal and made.width < 160:
        made.width = 160  # piped or captured: tables keep their columns
    return made


class _LazyConsole:
    """Stands for :func:`console` until an attribute is used (``out.print(...)``)."""

    def __init__(self, stderr: bool) -> None:
        self._stderr = stderr

    def __getattr__(self, name: str) -> Any:
        return getattr(console(self._stderr), name)


out = cast("Console", _LazyConsole(stderr=False))
err = cast("Console", _LazyConsole(stderr=True))


def print_json(data: Any) -> None:
    """Plain JSON on stdout (no rich markup), one document."""
    print(json.dumps(data, indent=2, ensure_ascii=False, default=str))
