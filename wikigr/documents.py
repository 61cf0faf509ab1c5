"""Plain data passed between the stages of a build: fetched sources, parsed documents, chunks."""

from __future__ import annotations

from dataclasses import dataclass, field

CELLS = " | "  # how the parsers join a table's cells in a section's text (a row is a line)


@dataclass(frozen=True)
class FetchResult:
    """One source after fetching. ``error`` is None when the fetch succeeded."""

    url: str
    final_url: str
    content: bytes
    content_type: str  # media type without parameters, e.g. "text/html"; "" when unknown
    charset: str | None  # declared charset (HTTP header), None when not declared
    fetched_at: str  # ISO 8601, UTC
    error: str | None = None
    status: int = 0  # the HTTP status of the last response (0: a file, or no response)
    etag: str | None = None  # validators for a conditional request next time
    last_modified: str | None = None
    not_modified: bool = False  # a conditional request answered 304: no content, the source is as it was
    retry_after: float | None = None  # seconds a 429 or 503 asked to wait (capped), when it said

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class Section:
    """A heading and the text below it (up to the next heading of any level)."""

    title: str  # "" for text before the first heading
    level: int  # 1..6; 0 for the lead section before any heading
    text: str  # plain text; code blocks kept intact, fenced with ``` lines
    anchor: str = ""  # fragment id of the heading when the source has one


@dataclass(frozen=True)
class Document:
    """A parsed source: its title, its sections in order, and the absolute URLs it links to."""

    url: str  # the final URL (after redirects); used as the article's identity
    title: str
    sections: list[Section]
    links: list[str] = field(default_factory=list)  # absolute, fragment stripped
    content_type: str = "text/html"
    anchors: list[tuple[str, str]] = field(default_factory=list)  # (absolute URL with fragment, link text)


@dataclass(frozen=True)
class Chunk:
    """A piece of a section small enough to embed (a few hundred tokens)."""

    section_index: int
    index: int  # position within the section
    text: str
