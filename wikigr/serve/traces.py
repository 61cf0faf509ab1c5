"""The traces of ``wikigr serve``: the last answers, kept in memory by id (``GET
/api/v1/traces``)."""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from typing import Any

from wikigr.pack.manifest import now_iso

MAX_TRACES = 200


class Traces:
    """The last :data:`MAX_TRACES` answers, by id, in memory."""

    def __init__(self, keep: int = MAX_TRACES) -> None:
        self.keep = keep
        self._items: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, kind: str, request: dict[str, Any], response: dict[str, Any], elapsed_ms: float) -> str:
        trace_id = secrets.token_hex(8)
        record = {
            "trace_id": trace_id,
            "created": now_iso(),
            "kind": kind,
            "request": request,
            "elapsed_ms": round(elapsed_ms, 2),
            "response": response,
        }
        with self._lock:
            self._items[trace_id] = record
            while len(self._items) > self.keep:
                self._items.popitem(last=False)
        return trace_id

    def get(self, trace_id: str) -> dict[str, Any] | None:
        with self._lock:
            return self._items.get(trace_id)

    def recent(self) -> list[dict[str, Any]]:
        with self._lock:
            items = list(self._items.values())
        return [
            {
                "trace_id": r["trace_id"],
                "created": r["created"],
                "kind": r["kind"],
                "pack": r["request"]["pack"],
                "question": r["request"]["question"],
                "elapsed_ms": r["elapsed_ms"],
            }
            for r in reversed(items)
        ]

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)
