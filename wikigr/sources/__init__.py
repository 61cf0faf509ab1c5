"""The source side of a build: list URLs, fetch them, parse them (by format), chunk them."""

from __future__ import annotations

from wikigr.sources.chunk import chunk_sections
from wikigr.sources.fetch import FetchOptions, fetch_all
from wikigr.sources.folders import expand_sources
from wikigr.sources.parse import parse
from wikigr.sources.urls import load_url_list, normalize_source, read_url_list

__all__ = [
    "FetchOptions",
    "chunk_sections",
    "expand_sources",
    "fetch_all",
    "load_url_list",
    "normalize_source",
    "parse",
    "read_url_list",
]
