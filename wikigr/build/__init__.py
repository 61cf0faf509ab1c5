"""Building packs from documents: create (:func:`build_pack`), update (:func:`update_pack`).

``options`` (what a build is asked), ``prepare`` (each source fetched, parsed, chunked, embedded),
``cache`` (the resume cache), ``rows`` and ``write`` (the store, manifest and support files),
``pipeline`` (``build_pack``), ``update`` (``update_pack``), ``shards`` (a pack in shards) and
``ray`` (the per-document work on a Ray cluster). Every write of a pack folder goes through
wikigr.pack.transaction.
"""

from wikigr.build.options import BuildOptions, BuildReport
from wikigr.build.pipeline import build_pack
from wikigr.build.update import UpdateReport, update_pack

__all__ = ["BuildOptions", "BuildReport", "UpdateReport", "build_pack", "update_pack"]
