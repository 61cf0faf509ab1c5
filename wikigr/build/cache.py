"""The resume cache of a build: each prepared document, kept in the staging folder as it is done."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from wikigr import __version__, schema
from wikigr.build.options import BuildOptions
from wikigr.build.prepare import PreparedDocument, source_key
from wikigr.embed import Embedder

CACHE_FORMAT = 3  # 2: documents carry their link texts (anchors); 3: and their language


class BuildCache:
    """Per-document results of an interrupted build, kept in ``.NAME.partial/cache``."""

    FOLDER = "cache"  # in the staging folder (a scratch folder of the pack transaction)

    @classmethod
    def for_build(cls, root: Path, embedder: Embedder, options: BuildOptions) -> BuildCache:
        """The cache of a build or update in the folder ``root``: kept only while what it holds
        would be computed the same way (cache format, embedder, chunking, wikigr version)."""
        fingerprint = {
            "cache_format": CACHE_FORMAT,
            "embedder": embedder.name,
            "embedder_digest": embedder.digest,
            "max_words": options.max_words,
            "overlap_words": options.overlap_words,
            "wikigr": __version__,
        }
        return cls(root, fingerprint)

    @staticmethod
    def embedder_of(root: Path) -> str | None:
        """The embedder the cache in ``root`` was made for, if there is one."""
        try:
            name = schema.parse_json((root / "meta.json").read_bytes()).get("embedder")
        except (OSError, ValueError, AttributeError):  # ValueError: schema.JSONError too
            return None
        return name if isinstance(name, str) else None

    def __init__(self, root: Path, fingerprint: dict[str, Any]) -> None:
        self.root = root
        meta = root / "meta.json"
        if root.is_dir():
            try:
                same = schema.parse_json(meta.read_bytes()) == fingerprint
            except (OSError, ValueError):  # ValueError: schema.JSONError too
                same = False
            if not same:
                shutil.rmtree(root)
        root.mkdir(parents=True, exist_ok=True)
        meta.write_text(json.dumps(fingerprint), encoding="utf-8")

    def load(self, source: str) -> PreparedDocument | None:
        base = self.root / source_key(source)
        try:  # the build's own cache; a damaged entry is prepared again
            data = schema.parse_json(base.with_suffix(".json").read_bytes())
            vectors = np.load(base.with_suffix(".npy"))
            if not isinstance(data, dict) or data.get("source") != source:
                return None
            if len(vectors) != len(data.get("chunks", [])):
                return None
            prepared = PreparedDocument(**{k: v for k, v in data.items() if k != "embeddings"})
        except (OSError, ValueError, TypeError):  # ValueError: schema.JSONError too
            return None
        prepared.embeddings = vectors
        return prepared

    def save(self, item: PreparedDocument) -> None:
        base = self.root / source_key(item.source)
        assert item.embeddings is not None
        np.save(base.with_suffix(".tmp.npy"), item.embeddings)
        os.replace(base.with_suffix(".tmp.npy"), base.with_suffix(".npy"))
        data = {k: v for k, v in asdict(item).items() if k != "embeddings"}
        base.with_suffix(".tmp").write_text(json.dumps(data), encoding="utf-8")
        os.replace(base.with_suffix(".tmp"), base.with_suffix(".json"))
