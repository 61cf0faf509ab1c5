"""wikigr: local-first knowledge packs — build from document URLs, query, evaluate, share.

The public API is imported lazily, so ``import wikigr`` stays cheap for the query path.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"  # the package version (pyproject.toml reads it from here)

_EXPORTS = {
    "build_pack": "wikigr.build",
    "BuildOptions": "wikigr.build",
    "BuildReport": "wikigr.build",
    "open_pack": "wikigr.pack.pack",
    "Pack": "wikigr.pack.pack",
    "validate_pack": "wikigr.validate",
    "query_pack": "wikigr.agent",
    "KnowledgeGraphAgent": "wikigr.agent",
    "AgentResult": "wikigr.agent",
    "WikigrError": "wikigr.errors",
    "export_pack": "wikigr.share",
    "install_pack": "wikigr.share",
    "remove_pack": "wikigr.share",
    "update_pack": "wikigr.build",
}

__all__ = [
    "AgentResult",
    "BuildOptions",
    "BuildReport",
    "KnowledgeGraphAgent",
    "Pack",
    "WikigrError",
    "__version__",
    "build_pack",
    "export_pack",
    "install_pack",
    "open_pack",
    "query_pack",
    "remove_pack",
    "update_pack",
    "validate_pack",
]

if TYPE_CHECKING:
    from wikigr.agent import AgentResult, KnowledgeGraphAgent, query_pack
    from wikigr.build import BuildOptions, BuildReport, build_pack, update_pack
    from wikigr.errors import WikigrError
    from wikigr.pack.pack import Pack, open_pack
    from wikigr.share import export_pack, install_pack, remove_pack
    from wikigr.validate import validate_pack


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'wikigr' has no attribute {name!r}")
