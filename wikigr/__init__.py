"""wikigr: local-first knowledge packs — build from document URLs, query, evaluate, share.

The public API is imported lazily, so ``import wikigr`` stays cheap for the query path.
"""

from __future__ import annotations

import ast
import functools
import threading
from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"  # the package version (pyproject.toml reads it from here)


def _one_parse_at_a_time() -> None:
    """``ast.parse`` serialised across the process's threads. CPython 3.11 and 3.12 keep the AST
    constructor's recursion depth in state all threads share: a parse that lets another thread run
    mid-way (a finalizer in Python during garbage collection) can make both fail with "SystemError:
    AST constructor recursion depth mismatch" (python/cpython#106905). numpy parses every .npy
    header with ``ast.literal_eval``, and wikigr opens and queries packs in threads (PackSet,
    ``wikigr serve``), so a query could fail at random. Only a lock is added: the results are the
    same."""
    parse = ast.parse
    if getattr(parse, "wikigr_serialised", False):
        return
    lock = threading.RLock()

    @functools.wraps(parse)
    def serialised(*args: Any, **kwargs: Any) -> Any:
        with lock:
            return parse(*args, **kwargs)

    serialised.wikigr_serialised = True  # type: ignore[attr-defined]
    ast.parse = serialised


_one_parse_at_a_time()

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
