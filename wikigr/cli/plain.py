"""The reading of a plainly valid command line without typer, shared by the fast paths of
``wikigr query`` (wikigr/cli/answer.py) and of the servers (wikigr/cli/servers.py): a command a
skill or a client starts is parsed here, so that it does not pay typer's import; anything this
does not read goes to typer, which parses it and reports what is wrong."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def plain_args(
    tokens: list[str],
    options: Mapping[str, str],
    flags: Mapping[str, str] | None = None,
    multiple: frozenset[str] = frozenset(),
) -> tuple[list[str], dict[str, Any]] | None:
    """The positional arguments of ``tokens`` and the values of their options (``options`` and
    ``flags`` map each spelling to its parameter): long options as ``--name VALUE`` or
    ``--name=VALUE``, short ones as ``-p VALUE``; each at most once unless its parameter is in
    ``multiple`` (a list of values then); no value starting with ``-``. None for anything else
    (``--help``, ``--``, ``-k5``, an unknown, repeated or valueless option)."""
    flags = flags or {}
    values: dict[str, Any] = {}
    positional: list[str] = []
    rest = iter(tokens)
    for token in rest:
        if not token.startswith("-"):
            positional.append(token)
            continue
        name, equals, inline = token.partition("=")
        value: str | bool | None
        if name in flags and not equals:
            key, value = flags[name], True
        elif name in options and (not equals or name.startswith("--")):
            key = options[name]
            value = inline if equals else next(rest, None)
            if value is None or value.startswith("-"):
                return None
        else:
            return None
        if key in multiple:
            values.setdefault(key, []).append(value)
        elif key in values:
            return None
        else:
            values[key] = value
    return positional, values
