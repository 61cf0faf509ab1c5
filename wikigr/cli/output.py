"""Consoles and shared output helpers for the CLI.

``out`` and ``err`` are rich consoles made on first use, so that a command that prints plain JSON
(``wikigr query ... --json``) never imports rich. They print text verbatim: rich's markup
(``[bold]``) and emoji codes (``:x:``) are off, so data (a pack's titles, a passage holding
``root:x:0:0``) is never restyled or rewritten; a message that wants style says so with
:func:`styled`."""

from __future__ import annotations

import functools
import json
import re
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text


# C0 (but tab and newline), DEL, C1, and the bidirectional overrides that reorder what is shown
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: object) -> str:
    """``text`` without the control characters a terminal would obey: what a pack from someone
    else holds (its description, its titles, its passages) must not recolour the terminal, move
    its cursor or set its title (ESC, CSI); tabs and newlines stay."""
    return _CONTROL.sub("", str(text))


@functools.cache
def console(stderr: bool = False) -> Console:
    """The rich console of stdout (or stderr), made once."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            """rich's own exits with 1; the CLI's entry point ends the command (quietly, 0)."""
            self.quiet = True
            raise BrokenPipeError

    made = _Console(stderr=stderr, soft_wrap=True, markup=False, emoji=False)
    if not made.is_terminal and made.width < 160:
        made.width = 160  # piped or captured: tables keep their columns
    return made


def styled(markup: str, *values: object) -> Text:
    """``markup`` (rich markup, with ``{}`` fields) with ``values`` put in verbatim:
    ``styled("Built pack [bold]{}[/]", name)`` makes the name bold, whatever it holds."""
    from rich.markup import escape
    from rich.text import Text

    return Text.from_markup(markup.format(*(escape(str(v)) for v in values)), emoji=False)


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
