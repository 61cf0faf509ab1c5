"""What a document format is to wikigr: its media types, its file extensions, its part of the
Accept header, how its bytes are recognised, and its parse function (see :mod:`wikigr.sources.formats`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Protocol
from urllib.parse import unquote, urlsplit

from wikigr.documents import Document

__all__ = ["Format", "ParseFn", "url_extension"]


class ParseFn(Protocol):
    """Parse one fetched source of the format. ``media`` is its media type as fetched (one of the
    format's ``media_types`` or ``aliases``), ``charset`` the declared one (None when not declared),
    ``url`` the source's final URL. Raises :class:`~wikigr.errors.SourceError` for content it cannot
    read or that holds no text."""

    def __call__(self, content: bytes, charset: str | None, url: str, media: str) -> Document: ...


@dataclass(frozen=True)
class Format:
    """One document format: adding a format is one module that defines one of these, registered
    with :func:`wikigr.sources.formats.register` (the built-ins are listed in that package)."""

    name: str
    #: The media types it parses, kept as they are (its own type first).
    media_types: tuple[str, ...]
    parse: ParseFn
    #: File extension (lower case, with the dot) -> the media type a file or URL ending so is.
    extensions: Mapping[str, str] = field(default_factory=dict)
    #: The extensions picked up when a folder is expanded into its document files, in order.
    walked: tuple[str, ...] = ()
    #: Its part of the HTTP Accept header, e.g. ``"text/markdown;q=0.9"`` ("" for none).
    accept: str = ""
    #: Other names servers give its type, read as its own type (``text/x-markdown``).
    aliases: tuple[str, ...] = ()
    #: What its files start with: sniffed before any other test of a body without a type.
    magic: tuple[bytes, ...] = ()
    #: A looser test of a body's first KiB, tried (in registration order) after every ``magic``.
    sniff: Callable[[bytes], bool] | None = None
    #: A server's ``text/plain`` loses to a URL ending in one of its extensions for its own type
    #: (servers send ``README.md`` and ``page.html`` files as text/plain).
    over_plain_text: bool = False

    @property
    def media_type(self) -> str:
        """Its own media type (the first of ``media_types``)."""
        return self.media_types[0]


def url_extension(url: str) -> str:
    """The extension of a URL's last path segment, lower case with its dot (``""`` when none)."""
    return PurePosixPath(unquote(urlsplit(url).path)).suffix.lower()
