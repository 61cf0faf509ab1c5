"""Helpers shared by the parsers: whitespace and line tidying, code fences, file names, and the
links (and link anchors) a parsed page points to."""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

from wikigr.sources.urls import normalize_url

_LINK_SCHEMES = ("http", "https", "file")
_BACKTICK_RUN_RE = re.compile(r"^[ \t]*(`{3,})", re.M)
_BLANK_RUNS_RE = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")


def collapse_whitespace(text: str) -> str:
    """All runs of whitespace (newlines included) become one space; ends stripped."""
    return " ".join(text.split())


def one_line(text: str, limit: int = 160) -> str:
    line = collapse_whitespace(text)
    return line if len(line) <= limit else line[: limit - 1] + "…"


def truncate(text: str, limit: int = 120) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    return text[:limit].rstrip()


def fence(code: str) -> str:
    """Wrap a code block in ``` lines (longer fences when the code itself holds ```)."""
    longest = max((len(m.group(1)) for m in _BACKTICK_RUN_RE.finditer(code)), default=0)
    marker = "`" * max(3, longest + 1)
    return f"{marker}\n{code}\n{marker}"


def tidy_blank_lines(text: str) -> str:
    """Strip trailing spaces on every line, collapse runs of blank lines, strip the ends."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return _BLANK_RUNS_RE.sub("\n\n", "\n".join(lines)).strip("\n")


def file_name(url: str) -> str:
    """The last path segment of a URL, percent-decoded (``""`` when there is none)."""
    return PurePosixPath(unquote(urlsplit(url).path)).name


MAX_ANCHOR_WORDS = 8


class LinkCollector:
    """Absolute, fragment-free, deduplicated http(s)/file links, in order of appearance; and the
    anchors: (absolute URL with its fragment, the link's text) for links to other pages whose text
    is a short name (what the entity graph turns into link entities)."""

    def __init__(self, base_url: str, page_url: str) -> None:
        self.base_url = base_url
        self._self = normalize_url(page_url)
        self._seen: set[str] = set()
        self.links: list[str] = []
        self.anchors: list[tuple[str, str]] = []
        self._anchors_seen: set[tuple[str, str]] = set()

    def add(self, href: str | None, text: str = "") -> None:
        if href is None:
            return
        href = href.strip()
        if not href or href.startswith("#"):
            return
        try:
            joined, fragment = urldefrag(urljoin(self.base_url, href))
            scheme = urlsplit(joined).scheme.lower()
        except ValueError:
            return
        absolute = normalize_url(joined)  # the identity articles are stored under
        full = f"{absolute}#{fragment}" if fragment else absolute
        if scheme not in _LINK_SCHEMES or absolute == self._self:
            return
        if absolute not in self._seen:
            self._seen.add(absolute)
            self.links.append(absolute)
        text = " ".join(text.split())
        if text and len(text.split()) <= MAX_ANCHOR_WORDS and any(c.isalpha() for c in text):
            anchor = (full, text)
            if anchor not in self._anchors_seen:
                self._anchors_seen.add(anchor)
                self.anchors.append(anchor)
