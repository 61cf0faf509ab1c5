"""The tools of ``wikigr mcp`` as clients see them: names, descriptions, JSON schemas, and the check
of a call's arguments. Standard library only: ``tools/list`` is answered before the answering
stack is imported.

The schemas, the descriptions and the messages of an argument that does not fit are those the
MCP SDK's server (on pydantic) gave before this module replaced it, word for word
(tests/test_mcp_wire.py replays the recorded wire): a client sees the same tools.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

SERVER_NAME = "wikigr"
INSTRUCTIONS = (
    "Local knowledge packs built by wikigr. Call list_packs to see them, pack_info for what one "
    "covers, query_pack for an answer citing its sources ([n] is sources[n-1]; say so when "
    "low_confidence is true), search for the raw passages with their text. Their pack argument is "
    'a pack name, a list of names, or "all" for every pack; each source names its pack.'
)

# The kinds of argument the tools take (a Python annotation each, as the SDK read the signatures).
TEXT = "str"
PACKS = "str | list[str]"
OPTIONAL_TEXT = "str | None"
OPTIONAL_INT = "int | None"

_SCHEMAS: dict[str, dict[str, Any]] = {
    TEXT: {"type": "string"},
    PACKS: {"anyOf": [{"type": "string"}, {"items": {"type": "string"}, "type": "array"}]},
    OPTIONAL_TEXT: {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
    OPTIONAL_INT: {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
}


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    arguments: tuple[tuple[str, str], ...]  # (name, kind) in the signature's order

    @property
    def required(self) -> list[str]:
        return [name for name, kind in self.arguments if kind in (TEXT, PACKS)]

    def listing(self) -> dict[str, Any]:
        """The tool as ``tools/list`` gives it."""
        properties = {
            name: {**_SCHEMAS[kind], "title": name.replace("_", " ").title()} for name, kind in self.arguments
        }
        input_schema: dict[str, Any] = {"properties": properties}
        if self.required:
            input_schema["required"] = self.required
        input_schema |= {"title": f"{self.name}Arguments", "type": "object"}
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": input_schema,
            "outputSchema": {
                "additionalProperties": True,
                "title": f"{self.name}DictOutput",
                "type": "object",
            },
        }


def _described(text: str) -> str:
    """A description as the SDK sent it: the tool function's docstring, its later lines indented."""
    first, *rest = text.strip().splitlines()
    return "\n".join([first, *(f"        {line}" for line in rest)])


TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        Tool(
            "list_packs",
            "List the knowledge packs installed in the packs home ($WIKIGR_HOME/packs).",
            (),
        ),
        Tool(
            "pack_info",
            _described("""
What a pack is and covers: manifest (without the per-source list), statistics, the
article titles it holds (most linked first). ``pack`` is a pack name or a folder path.
"""),
            (("pack", TEXT),),
        ),
        Tool(
            "query_pack",
            _described("""
Answer a question from a pack, citing its sources: [n] in the answer is sources[n-1]
(title, section, url, pack, related, and the whole passage as text). ``top_k`` passages
are retrieved; related is true for a passage of a linked page added after them. ``pack``:
a name, a list of names (or "a,b"), or "all" for every pack; several packs are searched
together and their passages merged. Without Claude the answer is the passages' sentences
that answer the question (answer_mode "extractive"; "rules" on an OpenML pack).
``profile``: auto (default: picks the retrieval for the pack and the question), baseline
(fastest), balanced, max, graph (PageRank over the pack's entity graph) or routed
(escalates per question).
When low_confidence is true the pack has little grounded context for the question.
"""),
            (("pack", PACKS), ("question", TEXT), ("profile", OPTIONAL_TEXT), ("top_k", OPTIONAL_INT)),
        ),
        Tool(
            "search",
            _described("""
Retrieval only (no synthesis): the passages of a pack most relevant to ``query``, best
first, each with its text and citation (title, section, url, score, pack). ``pack``: a
name, a list of names, or "all".
"""),
            (("pack", PACKS), ("query", TEXT), ("top_k", OPTIONAL_INT), ("profile", OPTIONAL_TEXT)),
        ),
    )
}


class ArgumentsError(ValueError):
    """A call's arguments do not fit its tool: the one line a client reads."""


def check_arguments(tool: Tool, arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments of a call to ``tool`` as its function takes them, or
    :class:`ArgumentsError`: ``Error: invalid arguments for TOOL: ARG: WHY[; ...]``.

    As the SDK read them (pydantic's lax mode): an argument that is not text but is given as the
    JSON text of a list or an object is read as that JSON (clients send ``pack: '["a", "b"]'``);
    an integer may be given as a whole float or as the text of one; arguments the tool does not
    take are ignored."""
    checked: dict[str, Any] = {}
    problems: list[str] = []
    for name, kind in tool.arguments:
        if name not in arguments:
            if kind in (TEXT, PACKS):
                problems.append(f"{name}: Field required")
            else:
                checked[name] = None
            continue
        value = arguments[name]
        if kind != TEXT and isinstance(value, str):
            value = _json_container(value)
        value, errors = _CHECKS[kind](value)
        problems += [f"{name}{where}: {why}" for where, why in errors]
        checked[name] = value
    if problems:
        raise ArgumentsError(f"Error: invalid arguments for {tool.name}: {'; '.join(problems)}")
    return checked


def _json_container(text: str) -> Any:
    """``text`` read as JSON when it holds a list, an object, true, false or null; else ``text``."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return text
    if isinstance(value, str | int | float):  # a bool is an int here, as in the SDK
        return text
    return value


Problems = list[tuple[str, str]]  # (where within the argument, why)
NOT_TEXT = "Input should be a valid string"


def _text(value: Any) -> tuple[Any, Problems]:
    return (value, []) if isinstance(value, str) else (value, [("", NOT_TEXT)])


def _packs(value: Any) -> tuple[Any, Problems]:
    if isinstance(value, str):
        return value, []
    if not isinstance(value, list):
        return value, [(".str", NOT_TEXT), (".list[str]", "Input should be a valid list")]
    wrong = [(f".list[str].{i}", NOT_TEXT) for i, item in enumerate(value) if not isinstance(item, str)]
    return value, [(".str", NOT_TEXT), *wrong] if wrong else []


def _optional_text(value: Any) -> tuple[Any, Problems]:
    return (value, []) if value is None else _text(value)


# An integer as text, as pydantic reads one: Unicode white space around, a sign, ASCII digits
# with single underscores between them, and a fraction of zeros only ("3.0").
_INT_TEXT = re.compile(r"([+-]?)([0-9]+(?:_[0-9]+)*)(?:\.0+)?")
_WHITE_SPACE = "".join(map(chr, [*range(9, 14), 32, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B)]))
_WHITE_SPACE += "\u2028\u2029\u202f\u205f\u3000"  # Unicode's White_Space (not str.strip()'s)
MAX_INT_DIGITS = 4300
NOT_INT_TEXT = "Input should be a valid integer, unable to parse string as an integer"
TOO_LONG = "Unable to parse input string as an integer, exceeded maximum size"


def _optional_int(value: Any) -> tuple[Any, Problems]:
    if value is None or isinstance(value, int):
        return (value if value is None else int(value)), []  # a bool is 0 or 1
    if isinstance(value, float):
        if not math.isfinite(value):
            return value, [("", "Input should be a finite number")]
        if not value.is_integer():
            return value, [("", "Input should be a valid integer, got a number with a fractional part")]
        if not -(2.0**63) < value < 2.0**63:
            return value, [("", TOO_LONG)]
        return int(value), []
    if isinstance(value, str):
        match = _INT_TEXT.fullmatch(value.strip(_WHITE_SPACE))
        if match is None:
            return value, [("", NOT_INT_TEXT)]
        digits = match[2].replace("_", "").lstrip("0") or "0"
        if len(digits) > MAX_INT_DIGITS:
            return value, [("", TOO_LONG)]
        return int(match[1] + digits), []
    return value, [("", "Input should be a valid integer")]


_CHECKS = {TEXT: _text, PACKS: _packs, OPTIONAL_TEXT: _optional_text, OPTIONAL_INT: _optional_int}
