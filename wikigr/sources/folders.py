"""A folder as sources: the document files below it, by the extensions the formats walk."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

from wikigr.errors import UsageError
from wikigr.sources.formats import walked_extensions
from wikigr.sources.urls import file_url_to_path

__all__ = ["expand_sources"]


def _walk_documents(root: Path) -> list[Path]:
    """Every document file below ``root``: recursive, sorted, hidden files and folders skipped."""
    extensions = frozenset(walked_extensions())
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            if os.path.splitext(name)[1].lower() in extensions:
                found.append(Path(dirpath) / name)
    return found


def expand_sources(urls: list[str], *, strict: bool = False) -> list[str]:
    """Expand ``file://`` URLs of directories into the document files below them.

    A directory becomes every file below it whose extension a format walks (.html, .htm, .md,
    .markdown, .txt, .pdf: :func:`~wikigr.sources.formats.walked_extensions`), recursive, sorted
    by path, hidden folders and files skipped. Other URLs, including file URLs that do not exist,
    are kept as they are (the fetcher reports the error). Duplicates are removed, first occurrence
    kept. With ``strict`` (a build: the sources are the user's input now), a directory that holds
    no document file is a UsageError; without it (an update), it adds nothing.
    """
    out: list[str] = []
    seen: set[str] = set()

    def add(u: str) -> None:
        if u not in seen:
            seen.add(u)
            out.append(u)

    for url in urls:
        if urlsplit(url).scheme.lower() == "file":
            try:
                path = file_url_to_path(url)
            except UsageError:
                add(url)
                continue
            if path.is_dir():
                files = _walk_documents(path)
                if strict and not files:
                    walked = ", ".join(walked_extensions())
                    raise UsageError(f"the folder {path} holds no document files ({walked})")
                for file in files:
                    add(file.as_uri())
                continue
        add(url)
    return out
