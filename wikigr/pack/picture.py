"""A picture the page's Graph tab draws: nodes and edges, at most ``limit`` nodes (those added
first stay). The passage graph (wikigr/serve/graph.py) and a pack kind's own picture
(:meth:`wikigr.pack.kind.PackKind.picture`: the OpenML star) are both made with it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Picture:
    limit: int = 60
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    edges: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    truncated: bool = False

    def node(self, node_id: str, kind: str, **data: Any) -> bool:
        """Add a node unless the picture is full; a node there already gets the fields given that
        say something. Whether it is (now) in the picture."""
        if node_id in self.nodes:
            self.nodes[node_id].update({k: v for k, v in data.items() if v})
            return True
        if len(self.nodes) >= self.limit:
            self.truncated = True
            return False
        self.nodes[node_id] = {"id": node_id, "kind": kind, **data}
        return True

    def edge(self, source: str, target: str, kind: str, **data: Any) -> None:
        """An edge between two nodes of the picture (one of each kind between two nodes)."""
        if source in self.nodes and target in self.nodes and (source, target, kind) not in self.edges:
            self.edges[(source, target, kind)] = {"source": source, "target": target, "kind": kind, **data}

    def to_json(self, **extra: Any) -> dict[str, Any]:
        return {
            "nodes": list(self.nodes.values()),
            "edges": list(self.edges.values()),
            "truncated": self.truncated,
            **extra,
        }
