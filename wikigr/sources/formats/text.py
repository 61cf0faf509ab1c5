"""Plain text: sections split on underlined headings (reStructuredText's style), else one section."""

from __future__ import annotations

import re

from wikigr.documents import Document, Section
from wikigr.errors import SourceError
from wikigr.sources.decode import decode_text
from wikigr.sources.formats.base import Format
from wikigr.sources.parsing import file_name, tidy_blank_lines, truncate

__all__ = ["FORMAT", "parse_text"]

_UNDERLINE_RE = re.compile(r"^(=+|-+|~+|\*+|\^+|#+|\++)$")
_TITLE_LIMIT = 120  # characters of a title drawn from the text


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


def _parse(content: bytes, charset: str | None, url: str, media: str) -> Document:
    return parse_text(decode_text(content, charset), url)


FORMAT = Format(
    name="text",
    media_types=("text/plain",),
    parse=_parse,
    extensions={".txt": "text/plain", ".text": "text/plain", ".rst": "text/plain"},
    walked=(".txt",),
    accept="text/plain;q=0.8",
)
