"""The child process of user Cypher (:func:`wikigr.pack.cypher.bounded_query`): one query on one
store under a memory cap.

    python -m wikigr.pack.cypher_child < REQUEST.json

The request (JSON on standard input) names the store, the query and the caps. The child caps its
own address space (``RLIMIT_AS``: what it uses when it starts, the address space LadybugDB reserves
for the store, and the memory cap), opens the store read-only with a bounded buffer pool, runs the
query with LadybugDB's timeout and writes one pickled reply on standard output: the columns, rows
and whether they were cut, or the error. Only the parent reads it.
"""

from __future__ import annotations

import json
import pickle
import resource
import sys
from pathlib import Path
from typing import Any

from wikigr.errors import UsageError, WikigrError
from wikigr.pack.cypher import MEMORY_REFUSAL, QueryLimitError
from wikigr.pack.store import Store

MAX_REQUEST_BYTES = 1024 * 1024


def _address_space() -> int:
    """The bytes of address space this process holds now (0 when unknown)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _reserve(path: Path) -> int:
    """The address space LadybugDB may reserve for the store: a power of two, at least 1 GiB and
    twice the store's files."""
    size = sum(p.stat().st_size for p in (path, path.with_name(path.name + ".wal")) if p.is_file())
    reserve = 1 << 30
    while reserve < 2 * size:
        reserve <<= 1
    return reserve


def run(request: dict[str, Any]) -> dict[str, Any]:
    path = Path(str(request["path"]))
    memory, pool = int(request["memory"]), int(request["pool"])
    try:
        reserve = _reserve(path)
    except OSError:
        reserve = 1 << 30  # Store.open says what is wrong with the file
    used = _address_space()
    if used:
        cap = used + reserve + memory
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    try:
        store = Store.open(
            path, read_only=True, kind=request["kind"], buffer_pool_size=pool, max_db_size=reserve
        )
        try:
            columns, rows, truncated = store.read_query_here(
                str(request["query"]),
                dict(request["params"]),
                max_rows=int(request["max_rows"]),
                max_bytes=int(request["max_bytes"]),
                timeout_ms=int(request["timeout_ms"]),
            )
        finally:
            store.close()
    except UsageError as exc:
        return {"error": "usage", "message": exc.message}
    except QueryLimitError as exc:
        return {"error": "limit", "message": exc.message}
    except MemoryError:
        return {"error": "limit", "message": MEMORY_REFUSAL}
    except WikigrError as exc:
        if "Mmap for size" in exc.message or "bad_alloc" in exc.message:  # the pool did not fit the cap
            return {"error": "limit", "message": MEMORY_REFUSAL}
        return {"error": "store", "message": exc.message}
    return {"columns": columns, "rows": rows, "truncated": truncated}


def main() -> int:
    request = json.loads(sys.stdin.buffer.read(MAX_REQUEST_BYTES))
    try:
        reply = pickle.dumps(run(request), protocol=pickle.HIGHEST_PROTOCOL)
    except MemoryError:
        reply = pickle.dumps({"error": "limit", "message": MEMORY_REFUSAL})
    sys.stdout.buffer.write(reply)
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
