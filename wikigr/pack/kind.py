"""The kinds of pack: the one seam for what differs between them.

A pack's kind is its manifest's ``source_kind``: ``documents`` (documents or a passage corpus,
:mod:`wikigr.documents_kind`) or ``openml`` (a Kimball star of OpenML runs,
:mod:`wikigr.openml.kind`). Each kind is one :class:`PackKind` object that says what differs: its
store's tables and what they count, its schema version, its line in ``pack list`` and ``pack info``,
its skill, whether it can be updated, whether it holds passages (an entity graph, a place in a set
of packs) or is answered by a strategy of its own. Code outside a kind's package asks the object
(:func:`pack_kind`) and never branches on the kind's name.

The built-in kinds are named here by module path and imported on first use (as entry points are):
naming a kind costs nothing until a pack of it is read, and this module, on the ground floor,
imports nothing above it. A kind's module registers its object (:func:`register_kind`) when it is
imported; a plugin does the same. Adding a kind is one module and one registration.
"""

from __future__ import annotations

import importlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from wikigr.errors import InvalidPackError, UsageError

if TYPE_CHECKING:
    from wikigr.pack.manifest import Manifest
    from wikigr.pack.store import Store

#: The kind of a store whose tables name none (Store.open without a kind), and of Store.create.
DEFAULT_KIND = "documents"
#: The built-in kinds: name -> the module that registers it when imported.
BUILT_IN: dict[str, str] = {"documents": "wikigr.documents_kind", "openml": "wikigr.openml.kind"}
#: Every kind registered so far, by name (the built-in ones once imported).
KINDS: dict[str, PackKind] = {}


@dataclass(frozen=True)
class KindStrategy:
    """How the router answers a kind whose packs hold no passages: the stages run once on the query
    itself (there is nothing to score or escalate to), whatever the policy."""

    name: str  # the strategy's name in the router's trace
    stages: tuple[str, ...]  # the retrieval stages that answer, in order
    why: str  # the trace's ``strategy_why``
    shape: str  # how the trace describes such a pack


class PackKind:
    """What a kind of pack is, for everything that does not belong to the kind's own package.
    Subclass it, set the class attributes, and register an instance (:func:`register_kind`)."""

    name: ClassVar[str]  # the manifest's source_kind
    schema_version: ClassVar[int]  # the newest store schema this wikigr reads for the kind
    node_tables: ClassVar[tuple[str, ...]]
    rel_tables: ClassVar[tuple[str, ...]]
    #: The table that tells the kind's store from another kind's (a store opened without a kind).
    marker_table: ClassVar[str]
    #: What :meth:`wikigr.pack.store.Store.stats` counts: a stats key (a GraphStats field) -> its table.
    stats: ClassVar[Mapping[str, str]]
    label: ClassVar[str]  # how a message names one such pack: "an OpenML pack"
    plural: ClassVar[str]  # and several: "OpenML packs"
    #: Whether the packs hold passages (articles cut into chunks, the passage graph): the
    #: retrieval stages, a set of packs, ``eval generate`` and the skill's digest read them.
    passages: ClassVar[bool] = True
    #: Whether ``pack graph`` builds an entity graph over the packs' chunks.
    entity_graph: ClassVar[bool] = False
    #: What answers a kind without passages, for a message ("tools over its runs").
    answers_with: ClassVar[str] = "passages"
    #: The router's strategy for the kind (None: the router's policies over passages).
    strategy: ClassVar[KindStrategy | None] = None
    #: The ``kg_config.json`` a new pack of the kind gets (the user's own is kept on a rebuild).
    default_config: ClassVar[Mapping[str, object]] = {"profile": "auto"}

    @property
    def tables(self) -> tuple[str, ...]:
        """Every table of the kind's store: its node tables, then its rel tables."""
        return self.node_tables + self.rel_tables

    def ddl(self, dim: int) -> list[str]:
        """The statements that create the kind's empty store, vectors of ``dim`` floats."""
        raise NotImplementedError

    def size(self, manifest: Manifest) -> str:
        """The pack's size in ``pack list`` ("1,204 articles, 5,310 chunks")."""
        raise NotImplementedError

    def info_counts(self, stats: Mapping[str, int]) -> list[tuple[str, str]]:
        """The lines of ``pack info`` that count what the pack holds (``stats``: its store's
        :meth:`~wikigr.pack.store.Store.stats`), as (label, value)."""
        return [(key, str(stats[key])) for key in self.stats]

    def info_notes(self, manifest: Manifest) -> list[tuple[str, str]]:
        """The kind's lines of ``pack info`` after the sources line (none by default)."""
        return []

    def skill(self, manifest: Manifest, store: Store, query_ref: str | None = None) -> str:
        """The pack's ``SKILL.md`` text (see :mod:`wikigr.skill`)."""
        raise NotImplementedError

    def claim(self, question: str, store: Store) -> tuple[float, str] | None:
        """Whether ``question``, asked of a set of packs, is meant for this kind's pack (its
        ``store``): how strongly and why ("names the algorithm TPOT"), or None. A kind without
        passages answers, alone, the questions it claims in a set (wikigr.packset); the others it
        leaves to the packs of passages. None by default."""
        return None

    def picture(
        self,
        store: Store,
        manifest: Manifest,
        answer: Mapping[str, Any] | None,
        member: str | None,
        measure: str | None,
        limit: int,
    ) -> dict[str, Any]:
        """The graph the page draws of a pack without passages (one of passages is drawn around
        its passages, wikigr.serve.graph): ``{"nodes": [{id, kind, label, ...}], "edges":
        [{source, target, kind, ...}], "truncated", ...}`` with at most ``limit`` nodes, of what
        ``answer`` (an answer's JSON with its trace) drew on, of a ``member``'s neighbours (an id
        of a node of the picture; ``measure``: what their numbers are of, for a kind that has
        measures), or of the store itself (neither). A kind that draws nothing refuses."""
        raise UsageError(f"{self.label} has no graph to explore")

    def update_refusal(self, manifest: Manifest) -> str | None:
        """Why ``pack update`` cannot update the pack (the whole message), or None when it can.
        A kind cannot be updated unless it says so."""
        return self.refusal(self.name)

    @staticmethod
    def refusal(what: str) -> str:
        """The message refusing to update a pack that is ``what``."""
        return f"update is not supported for this pack kind ({what}): rebuild it with `wikigr pack create`"


def register_kind(kind: PackKind) -> PackKind:
    """Register ``kind`` under its name (replacing a kind of that name); return it."""
    KINDS[kind.name] = kind
    return kind


def kind_names() -> list[str]:
    """The names of the known kinds: the built-in ones, then those registered since."""
    return list(dict.fromkeys([*BUILT_IN, *KINDS]))


def pack_kind(name: str) -> PackKind:
    """The kind called ``name``, its module imported on first use; an unknown name is an
    :class:`InvalidPackError`."""
    if name not in KINDS and name in BUILT_IN:
        importlib.import_module(BUILT_IN[name])
    kind = KINDS.get(name)
    if kind is None:
        raise InvalidPackError(f"unknown pack kind {name!r} (known: {', '.join(kind_names())})")
    return kind


def store_kind(tables: Collection[str]) -> str:
    """The kind of a store holding ``tables``: the first known kind whose marker table is among
    them (:data:`DEFAULT_KIND` when none is)."""
    return next((name for name in kind_names() if pack_kind(name).marker_table in tables), DEFAULT_KIND)
