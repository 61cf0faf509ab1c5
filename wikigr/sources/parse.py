"""Parse a fetched source into a Document with the format its media type names (HTML, Markdown,
plain text, PDF: :mod:`wikigr.sources.formats`)."""

from __future__ import annotations

from wikigr.documents import Document, FetchResult
from wikigr.errors import SourceError
from wikigr.sources.formats import format_for, guess_content_type, markdown, sniff_content_type, text

__all__ = ["parse"]


def parse(result: FetchResult) -> Document:
    """Parse a successful fetch. Raises SourceError for a failed fetch, an unsupported type,
    binary data under a text type, or content with no text (an empty page, a PDF without a text
    layer)."""
    if not result.ok:
        raise SourceError(f"cannot parse a failed fetch: {result.error}")
    url = result.final_url or result.url
    media = result.content_type.split(";")[0].strip().lower()
    if media == text.FORMAT.media_type and guess_content_type(url) == markdown.FORMAT.media_type:
        media = markdown.FORMAT.media_type  # a README.md kept as text/plain is Markdown
    if not media:
        media = sniff_content_type(result.content)
        if not media:
            raise SourceError("unsupported content type (binary data)")
    fmt = format_for(media)
    if fmt is None:
        raise SourceError(f"unsupported content type {media}")
    return fmt.parse(result.content, result.charset, url, media)
