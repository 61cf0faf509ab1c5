"""PDF via its text layer (pypdf, imported when a PDF is parsed)."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from wikigr.documents import Document, Section
from wikigr.errors import SourceError
from wikigr.sources.formats.base import Format
from wikigr.sources.parsing import LinkCollector, file_name, one_line, tidy_blank_lines, truncate

__all__ = ["FORMAT", "parse_pdf"]

_TITLE_LIMIT = 120  # characters of a title from the metadata or the first line


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


def _parse(content: bytes, charset: str | None, url: str, media: str) -> Document:
    return parse_pdf(content, url)


FORMAT = Format(
    name="pdf",
    media_types=("application/pdf",),
    parse=_parse,
    extensions={".pdf": "application/pdf"},
    walked=(".pdf",),
    accept="application/pdf;q=0.8",
    magic=(b"%PDF-",),
)
