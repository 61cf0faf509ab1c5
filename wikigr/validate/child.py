"""The child process of ``pack validate`` (:mod:`wikigr.validate.checks`): the checks that open a
pack's store, which a damaged store can make the database library crash or hang on.

    python -m wikigr.validate.child PATH [--query]

prints one line, ``wikigr-checks: `` and the checks as JSON; exit 0 when the checks ran (whatever
they found). Only the parent reads it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from wikigr.validate import checks


def main(argv: list[str]) -> int:
    if not argv or any(arg.startswith("-") and arg != "--query" for arg in argv):
        print("usage: python -m wikigr.validate.child PATH [--query]", file=sys.stderr)
        return 2
    checks.IN_CHILD = True  # a pack in shards: its shards' checks run here too
    path = Path(next(arg for arg in argv if arg != "--query"))
    found = checks.database_checks(path, query="--query" in argv)
    rows = [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in found]
    print(checks.REPORT_PREFIX + json.dumps(rows), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
