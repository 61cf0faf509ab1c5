"""What a build is asked to do (:class:`BuildOptions`) and what it did (:class:`BuildReport`)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wikigr.embed import DEFAULT_EMBEDDER, default_embedder_name
from wikigr.graph.build import GraphOptions, GraphReport
from wikigr.pack.manifest import Manifest
from wikigr.sources.crawl import CrawlOptions, CrawlReport
from wikigr.sources.fetch import FetchOptions

if TYPE_CHECKING:
    from wikigr.build.ray import RayOptions


@dataclass
class BuildOptions:
    description: str = ""
    embedder: str = field(default_factory=default_embedder_name)
    # Whether ``embedder`` was chosen (``--embedder``), even if it names the built-in model; see
    # :meth:`chosen_embedder` for what else counts as a choice.
    embedder_chosen: bool = False
    fetch: FetchOptions = field(default_factory=FetchOptions)
    max_words: int = 200
    overlap_words: int = 30
    fresh: bool = False  # ignore the cache of an interrupted build
    # Cite documents under public URLs: (prefix fetched from, prefix to cite), e.g. a local mirror.
    public_urls: list[tuple[str, str]] = field(default_factory=list)
    graph: bool = True  # build the entity graph (wikigr/graph)
    graph_options: GraphOptions = field(default_factory=GraphOptions)
    llm: Any = None  # an LLM for the skeleton's extraction (None: offline, zero LLM calls)
    # Run the per-document work (fetch, parse, chunk, embed, names) and the graph's extraction on
    # Ray (wikigr.build.ray); None: in this process.
    ray: RayOptions | None = None
    # Crawl from seed URLs (wikigr.sources.crawl), besides the sources listed; None: no crawl.
    crawl: CrawlOptions | None = None

    def chosen_embedder(self) -> str | None:
        """The embedder the user chose (``embedder_chosen``, ``$WIKIGR_EMBEDDER``, or another
        than the built-in model), or None: the build then chooses by the documents' languages
        (wikigr.build.languages.choose_embedder)."""
        if self.embedder_chosen or os.environ.get("WIKIGR_EMBEDDER") or self.embedder != DEFAULT_EMBEDDER:
            return self.embedder
        return None

    def public_url(self, url: str) -> str:
        for local, public in self.public_urls:
            if url.startswith(local):
                return public + url[len(local) :]
        return url


@dataclass
class BuildReport:
    path: Path
    manifest: Manifest
    failed: list[tuple[str, str]]  # (url, error)
    resumed: int  # documents taken from an interrupted build's cache
    fetched: int  # documents fetched in this run
    chunks_embedded: int  # chunks embedded in this run
    seconds: dict[str, float]  # fetch, embed, write, total
    graph: GraphReport | None = None  # what the entity graph build did (None: skipped)
    crawl: CrawlReport | None = None  # what the crawl did (None: no crawl)
    notes: list[str] = field(default_factory=list)  # one-line notes on the build's choices (its embedder)
