"""Crawl a site from seed URLs (:class:`Crawler`): the pages of a pack found by following links."""

from wikigr.sources.crawl.crawler import Crawler
from wikigr.sources.crawl.options import CrawlOptions
from wikigr.sources.crawl.state import CrawlFile, CrawlReport, Page, crawl_of, kept_pages

__all__ = ["CrawlFile", "CrawlOptions", "CrawlReport", "Crawler", "Page", "crawl_of", "kept_pages"]
