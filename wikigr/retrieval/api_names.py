"""The APIs a text names, and the lines that show their definitions: ``str.join`` in "What does
str.join do?", ``functools.lru_cache`` in "@functools.lru_cache(maxsize=128, typed=False)". Used by
``page_score`` (the chunk that defines a named API) and the short answer (its sentence first)."""

from __future__ import annotations

import re

_API_NAME = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|[A-Za-z_]\w*(?=\(\)))")
_ADMONITIONS = frozenset(  # a box's heading line, not a definition
    "Note Notes Warning Warnings Tip Hint Important Caution Attention Danger Example Examples Todo".split()  # noqa: SIM905
)
_PROSE = re.compile(r"\s+[A-Za-z]")  # "startfile() returns ...": words after the call
_DEFINITION = re.compile(  # a line that shows a definition: "@functools.lru_cache(maxsize=128)"
    r"(?:@|(?:abstractmethod|async|await|class|classmethod|coroutine|exception|property|staticmethod)\s+)*"
    r"([A-Za-z_][\w.]*?)\s*(?:[(\[=:].*)?",
    re.S,
)


def api_names(text: str) -> list[str]:
    """The APIs ``text`` names: dotted names and calls (``os.path.join``, ``sorted()``: ``sorted``)."""
    return list(dict.fromkeys(m.group(1) for m in _API_NAME.finditer(text)))


def _name_and_rest(line: str) -> tuple[str, str]:
    """The name a definition line shows and what follows it ("" and "": none; see shown_name)."""
    line = line.strip()
    match = _DEFINITION.fullmatch(line)
    if not match or match.group(1) in _ADMONITIONS:
        return "", ""
    rest = line[match.end(1) :].lstrip()
    if rest.startswith("("):
        depth = 0
        for n, char in enumerate(rest):
            depth += (char == "(") - (char == ")")
            if depth == 0:
                if _PROSE.match(rest, n + 1):
                    return "", ""
                break
    return match.group(1), rest


def shown_name(line: str) -> str:
    """The name a definition line shows (``str.join`` of ``str.join(iterable)``, of
    ``@functools.lru_cache(maxsize=128)``, of ``class socket.socket(family=-1)``), or "": not
    the name that opens a sentence of prose ("startfile() returns as soon as ...": a word after
    the call's parentheses), nor a box's heading ("Note", "Warning")."""
    return _name_and_rest(line)[0]


def called_name(line: str) -> str:
    """How prose refers to what a definition line defines: its shown name, with "()" when the
    line gives parameters (``subprocess.run()``, ``os.environ``); "" as for :func:`shown_name`."""
    name, rest = _name_and_rest(line)
    return f"{name}()" if name and rest.startswith("(") else name


def ends_with(full: str, name: str) -> bool:
    """Whether ``name`` is ``full`` or its end in dotted parts (``socket.settimeout`` of
    ``socket.socket.settimeout``; not ``timeout``)."""
    return bool(name) and (full == name or full.endswith("." + name))


def same_api(shown: str, name: str) -> bool:
    """Whether two spellings name the same API: one is the other or its end
    (``socket.settimeout`` and ``socket.socket.settimeout``)."""
    return ends_with(shown, name) or ends_with(name, shown)
