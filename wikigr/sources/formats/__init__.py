"""The document formats wikigr reads, and everything the source side asks of them.

Each format is one module defining a :class:`~wikigr.sources.formats.base.Format`: its media types,
its file extensions, its part of the Accept header, how a body without a type is recognised, and
its parse function. Parse dispatch (:func:`wikigr.sources.parse.parse`), the types a fetch accepts
and guesses (:mod:`wikigr.sources.fetch`), its Accept header and the files a folder's walk picks up
(:mod:`wikigr.sources.folders`) all come from here. The built-in formats are :data:`BUILT_IN`;
adding one (DOCX, say) is a new module in this package and one entry in that tuple, or a call to
:func:`register` from outside.
"""

from __future__ import annotations

from wikigr.sources.formats import html, markdown, pdf, text
from wikigr.sources.formats.base import Format, ParseFn, url_extension

__all__ = [
    "BUILT_IN",
    "Format",
    "ParseFn",
    "accept_header",
    "format_for",
    "guess_content_type",
    "own_type",
    "register",
    "registered",
    "sniff_content_type",
    "type_over_plain_text",
    "unregister",
    "walked_extensions",
]

#: The formats every build reads, in the order they are tried and listed.
BUILT_IN: tuple[Format, ...] = (html.FORMAT, markdown.FORMAT, text.FORMAT, pdf.FORMAT)

PLAIN_TEXT = text.FORMAT.media_type  # what a body with no type and no NUL byte is taken for

_formats: list[Format] = list(BUILT_IN)


def registered() -> tuple[Format, ...]:
    """The formats read now: the built-ins, then those registered, in order."""
    return tuple(_formats)


def register(fmt: Format) -> None:
    """Read ``fmt`` from now on. Raises ValueError when its name, one of its types or one of its
    extensions is already another format's."""
    for other in _formats:
        taken = (
            {fmt.name} & {other.name}
            or {*fmt.media_types, *fmt.aliases} & {*other.media_types, *other.aliases}
            or set(fmt.extensions) & set(other.extensions)
        )
        if taken:
            raise ValueError(f"format {fmt.name!r}: {', '.join(sorted(taken))} is already {other.name!r}'s")
    _formats.append(fmt)


def unregister(name: str) -> None:
    """Stop reading the format ``name`` (a registered one, or a built-in). ValueError if unknown."""
    for i, fmt in enumerate(_formats):
        if fmt.name == name:
            del _formats[i]
            return
    raise ValueError(f"no format {name!r}")


def format_for(media: str) -> Format | None:
    """The format that parses ``media`` (one of its types or aliases), or None."""
    return next((f for f in _formats if media in f.media_types or media in f.aliases), None)


def own_type(media: str) -> str | None:
    """The type a source declared as ``media`` is kept under: ``media`` itself, a format's own type
    for one of its aliases (``text/x-markdown`` -> ``text/markdown``), None when no format reads it."""
    fmt = format_for(media)
    if fmt is None:
        return None
    return fmt.media_type if media in fmt.aliases else media


def guess_content_type(url: str) -> str:
    """The media type a URL's extension suggests (``""`` when none of ours)."""
    extension = url_extension(url)
    return next((f.extensions[extension] for f in _formats if extension in f.extensions), "")


def type_over_plain_text(url: str) -> str:
    """The type that a URL's extension makes a server's ``text/plain`` into (``""``: none), for
    the formats whose own type is believed over it (``README.md``, ``page.html``)."""
    guessed = guess_content_type(url)
    fmt = format_for(guessed) if guessed else None
    return guessed if fmt is not None and fmt.over_plain_text and guessed == fmt.media_type else ""


def sniff_content_type(content: bytes) -> str:
    """Guess a media type from the first bytes; ``""`` for binary content."""
    head = content[:1024]
    for fmt in _formats:
        if fmt.magic and head.startswith(fmt.magic):
            return fmt.media_type
    for fmt in _formats:
        if fmt.sniff is not None and fmt.sniff(head):
            return fmt.media_type
    if b"\x00" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return ""
    return PLAIN_TEXT


def accept_header() -> str:
    """The Accept header of a fetch: every format's part, then anything else at a low weight."""
    return ",".join([*(f.accept for f in _formats if f.accept), "*/*;q=0.1"])


def walked_extensions() -> tuple[str, ...]:
    """The file extensions a folder's walk picks up (compared case-insensitively), in order."""
    return tuple(extension for f in _formats for extension in f.walked)
