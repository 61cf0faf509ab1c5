"""HTML and XHTML (the parser itself is :mod:`wikigr.sources.html_parser`)."""

from __future__ import annotations

import dataclasses

from wikigr.documents import Document
from wikigr.sources.decode import decode_text
from wikigr.sources.formats.base import Format
from wikigr.sources.html_parser import parse_html

__all__ = ["FORMAT"]


def _parse(content: bytes, charset: str | None, url: str, media: str) -> Document:
    document = parse_html(decode_text(content, charset, html=True), url)
    if media != "text/html":  # XHTML keeps its own type
        document = dataclasses.replace(document, content_type=media)
    return document


def _sniff(head: bytes) -> bool:
    """An HTML page without a type: a doctype, an <html>, <head> or <body> up front, or an <html>."""
    lowered = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return lowered.startswith((b"<!doctype html", b"<html", b"<head", b"<body")) or b"<html" in lowered


FORMAT = Format(
    name="html",
    media_types=("text/html", "application/xhtml+xml"),
    parse=_parse,
    extensions={".html": "text/html", ".htm": "text/html", ".xhtml": "application/xhtml+xml"},
    walked=(".html", ".htm"),
    accept="text/html,application/xhtml+xml",
    sniff=_sniff,
    over_plain_text=True,
)
