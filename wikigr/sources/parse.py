"""Parse a fetched source into a Document: HTML, Markdown, plain text or PDF."""

from __future__ import annotations

import dataclasses
import io
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from wikigr.documents import Document, FetchResult, Section
from wikigr.errors import SourceError
from wikigr.sources._common import LinkCollector, file_name, one_line, tidy_blank_lines, truncate
from wikigr.sources.decode import decode_text
from wikigr.sources.fetch import guess_content_type, sniff_content_type
from wikigr.sources.html_parser import parse_html
from wikigr.sources.markdown_parser import parse_markdown

__all__ = ["parse", "parse_html", "parse_markdown", "parse_pdf", "parse_text"]

_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_MARKDOWN_TYPES = frozenset({"text/markdown", "text/x-markdown"})

_UNDERLINE_RE = re.compile(r"^(=+|-+|~+|\*+|\^+|#+|\++)$")
_TITLE_LIMIT = 120


def parse(result: FetchResult) -> Document:
    """Parse a successful fetch. Raises SourceError for a failed fetch, an unsupported type,
    binary data under a text type, or content with no text (an empty page, a PDF without a text
    layer)."""
    if not result.ok:
        raise SourceError(f"cannot parse a failed fetch: {result.error}")
    url = result.final_url or result.url
    media = result.content_type.split(";")[0].strip().lower()
    if media == "text/plain" and guess_content_type(url) in _MARKDOWN_TYPES:
        media = "text/markdown"
    if not media:
        media = sniff_content_type(result.content)
        if not media:
            raise SourceError("unsupported content type (binary data)")
    if media in _HTML_TYPES:
        text = decode_text(result.content, result.charset, html=True)
        document = parse_html(text, url)
        if media != "text/html":
            document = dataclasses.replace(document, content_type=media)
        return document
    if media in _MARKDOWN_TYPES:
        return parse_markdown(decode_text(result.content, result.charset), url)
    if media == "text/plain":
        return parse_text(decode_text(result.content, result.charset), url)
    if media == "application/pdf":
        return parse_pdf(result.content, url)
    raise SourceError(f"unsupported content type {media}")


# --------------------------------------------------------------------------------------------
# Plain text


def _is_underline(line: str, title: str) -> bool:
    stripped = line.strip()
    if not _UNDERLINE_RE.match(stripped) or len(stripped) < 3:
        return False
    return len(stripped) >= min(len(title.strip()), 3) and len(stripped) * 2 >= len(title.strip())


def parse_text(text: str, url: str) -> Document:
    """Plain text: sections split on underlined headings (``Title`` over ``=====``; the heading
    level follows the order in which underline styles first appear, as in reStructuredText),
    else one section. Title: the first non-empty line (at most 120 characters)."""
    text = tidy_blank_lines(text)
    if not text.strip():
        raise SourceError("no text content")
    lines = text.split("\n")
    first_line = next((line for line in lines if line.strip()), "")
    title = truncate(first_line, _TITLE_LIMIT) or file_name(url) or url

    styles: list[tuple[str, bool]] = []
    sections: list[Section] = []
    current_title, current_level = "", 0
    body: list[str] = []

    def finish() -> None:
        content = tidy_blank_lines("\n".join(body))
        if content or current_title:
            sections.append(Section(current_title, current_level, content))

    i = 0
    while i < len(lines):
        line = lines[i]
        heading = (
            i + 1 < len(lines)
            and line.strip()
            and not _UNDERLINE_RE.match(line.strip())
            and len(line.strip()) <= 200
            and _is_underline(lines[i + 1], line)
            and (i == 0 or not lines[i - 1].strip() or _is_underline(lines[i - 1], line))
        )
        if heading:
            overline = i > 0 and bool(lines[i - 1].strip())
            if overline and body and body[-1].strip() == lines[i - 1].strip():
                body.pop()
            style = (lines[i + 1].strip()[0], overline)
            if style not in styles:
                styles.append(style)
            finish()
            current_title = " ".join(line.split())
            current_level = min(styles.index(style) + 1, 6)
            body = []
            i += 2
            continue
        body.append(line)
        i += 1
    finish()
    if not any(section.text for section in sections):
        raise SourceError("no text content")
    return Document(url=url, title=title, sections=sections, links=[], content_type="text/plain")


# --------------------------------------------------------------------------------------------
# PDF


@contextmanager
def _quiet_pypdf() -> Iterator[None]:
    """pypdf logs warnings about malformed files; the library must not print them."""
    logger = logging.getLogger("pypdf")
    previous = logger.level
    logger.setLevel(logging.ERROR + 10)
    try:
        yield
    finally:
        logger.setLevel(previous)


def _pdf_title(reader: Any) -> str:
    try:
        metadata = reader.metadata
        raw = metadata.title if metadata is not None else None
    except Exception:  # noqa: BLE001 - pypdf raises many types for broken metadata
        return ""
    if not isinstance(raw, str):
        return ""
    title = " ".join(raw.split())
    for prefix in ("Microsoft Word - ", "Microsoft PowerPoint - "):
        if title.startswith(prefix):
            title = title[len(prefix) :]
    if title.lower() in ("", "untitled", "title") or title.lower().endswith(
        (".doc", ".docx", ".pdf", ".tex", ".dvi")
    ):
        return ""
    return truncate(title, _TITLE_LIMIT)


def _page_links(page: Any, links: LinkCollector) -> None:
    try:
        annotations = page.get("/Annots")
        if annotations is None:
            return
        for ref in annotations.get_object():
            annotation = ref.get_object()
            action = annotation.get("/A")
            if action is None:
                continue
            uri = action.get_object().get("/URI")
            if isinstance(uri, bytes):
                uri = uri.decode("latin-1")
            if isinstance(uri, str):
                links.add(uri)
    except Exception:  # noqa: BLE001 - a broken annotation only costs its link
        return


def parse_pdf(content: bytes, url: str) -> Document:
    """PDF via its text layer: one section per page with text ("Page 3", anchor ``page=3``,
    the PDF open parameter browsers understand). Title from the metadata, else the first line.
    Raises SourceError("no text layer") for a scanned PDF."""
    from pypdf import PdfReader

    links = LinkCollector(url, url)
    with _quiet_pypdf():
        try:
            reader = PdfReader(io.BytesIO(content))
            if reader.is_encrypted:
                try:
                    if not reader.decrypt(""):
                        raise SourceError("encrypted PDF")
                except SourceError:
                    raise
                except Exception:  # noqa: BLE001 - unsupported encryption algorithms and the like
                    raise SourceError("encrypted PDF") from None
            pages = list(reader.pages)
        except SourceError:
            raise
        except Exception as exc:  # noqa: BLE001 - pypdf raises many types for broken files
            raise SourceError(f"not a readable PDF: {one_line(str(exc)) or type(exc).__name__}") from None
        sections: list[Section] = []
        for number, page in enumerate(pages, start=1):
            try:
                raw = page.extract_text() or ""
            except Exception:  # noqa: BLE001 - one broken page must not lose the others
                raw = ""
            text = tidy_blank_lines(raw.replace("\x00", ""))
            _page_links(page, links)
            if text:
                sections.append(Section(f"Page {number}", 1, text, f"page={number}"))
        if not sections:
            raise SourceError("no text layer")
        title = _pdf_title(reader)
    if not title:
        first = next((line for line in sections[0].text.split("\n") if line.strip()), "")
        title = truncate(" ".join(first.split()), _TITLE_LIMIT)
    return Document(
        url=url,
        title=title or file_name(url) or url,
        sections=sections,
        links=links.links,
        content_type="application/pdf",
    )
