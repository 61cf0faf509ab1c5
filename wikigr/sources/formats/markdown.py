"""Markdown (the parser itself is :mod:`wikigr.sources.markdown_parser`)."""

from __future__ import annotations

from wikigr.documents import Document
from wikigr.sources.decode import decode_text
from wikigr.sources.formats.base import Format
from wikigr.sources.markdown_parser import parse_markdown

__all__ = ["FORMAT"]


def _parse(content: bytes, charset: str | None, url: str, media: str) -> Document:
    return parse_markdown(decode_text(content, charset), url)


FORMAT = Format(
    name="markdown",
    media_types=("text/markdown",),
    aliases=("text/x-markdown",),
    parse=_parse,
    extensions={".md": "text/markdown", ".markdown": "text/markdown", ".mdown": "text/markdown"},
    walked=(".md", ".markdown"),
    accept="text/markdown;q=0.9",
    over_plain_text=True,
)
