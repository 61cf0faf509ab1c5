"""Which questions an OpenML pack claims in a set of packs (wikigr/openml/claim.py).

    uv run python bench/openml_claims.py        # -> bench/results/openml_claims.json

`wikigr query docs,amlb2019 "..."` (or `all`) sends a question to the OpenML pack alone when the
pack claims it; every other question goes to the document packs. This counts, with the vocabulary
of the example pack packs/amlb2019:

- the OpenML questions of bench/data/openml_routing.jsonl claimed, per labelled intent (the
  describe questions, "algorithms similar to random forest", are left to the documents by
  design: a set answers them from passages);
- the questions meant for documents claimed: the developer questions of bench/data (86),
  CoNaLa's over the Python docs (201), the English man-page questions (../shared/data/multilingual)
  and the multi-hop questions of HotpotQA and MuSiQue (100 each). A claim there sends a question
  away from the packs that answer it: it should be none.

The rules of claim.py were written looking at the routing questions, and at none of the others.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import header, load  # noqa: E402

from wikigr.openml.claim import claim  # noqa: E402
from wikigr.openml.names import load_vocabulary  # noqa: E402
from wikigr.pack.pack import open_pack  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "bench" / "results" / "openml_claims.json"


def documents_questions() -> dict[str, list[str]]:
    """The question sets meant for document packs, by name (those whose files are here)."""
    sets: dict[str, list[str]] = {}
    developer = []
    for name in ("developer_questions.json", "developer_questions_heldout.json"):
        data = json.loads((ROOT / "bench" / "data" / name).read_text())
        items = data if isinstance(data, list) else data.get("questions", [])
        developer += [item["question"] if isinstance(item, dict) else str(item) for item in items]
    sets["developer (bench/data)"] = developer
    conala = DATA / "docqa" / "conala_dev_python311doc.json"
    if conala.is_file():
        sets["CoNaLa (Python docs)"] = [q["nl"] for q in json.loads(conala.read_text())]
    man = DATA / "multilingual" / "questions_en.jsonl"
    if man.is_file():
        sets["man pages (English)"] = [
            json.loads(line)["question"] for line in man.read_text().splitlines() if line
        ]
    for name in ("hotpotqa", "musique"):
        path = DATA / "multihop" / f"{name}_train100" / f"{name}_train.json"
        if path.is_file():
            sets[f"{name} (multi-hop)"] = [q["question"] for q in json.loads(path.read_text())]
    return sets


def main() -> None:
    results: dict[str, Any] = header()
    with open_pack(ROOT / "packs" / "amlb2019").open_store() as store:
        vocab = load_vocabulary(store.rows)
    start = time.perf_counter()
    rows = [
        json.loads(line)
        for line in (ROOT / "bench" / "data" / "openml_routing.jsonl").read_text().splitlines()
    ]
    asked = Counter(r["intent"] for r in rows)
    claimed = Counter(r["intent"] for r in rows if claim(r["question"], vocab) is not None)
    results["openml_routing"] = {
        "questions": len(rows),
        "claimed": sum(claimed.values()),
        "per_intent": {intent: f"{claimed[intent]}/{n}" for intent, n in sorted(asked.items())},
        "not_claimed": [
            r["question"] for r in rows if r["intent"] != "describe" and claim(r["question"], vocab) is None
        ],
    }
    documents: dict[str, Any] = {}
    total = wrong = 0
    for name, questions in documents_questions().items():
        claims = [(q, claim(q, vocab)) for q in questions]
        bad = [{"question": q, "why": c[1]} for q, c in claims if c is not None]
        documents[name] = {"questions": len(questions), "claimed": len(bad), "examples": bad[:10]}
        total, wrong = total + len(questions), wrong + len(bad)
    results["documents"] = {"questions": total, "claimed": wrong, "sets": documents}
    calls = len(rows) * 2 + total
    results["ms_per_claim"] = round((time.perf_counter() - start) * 1000 / calls, 3)
    results["load_average_at_end"] = load()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
