"""Packs in other languages (issue 38): Russian and English questions over English man pages.

Prints tables and writes bench/results/multilingual.json (merged: each part replaces its own key).

Data: ../shared/data/multilingual (README there): 263 English man pages, served from 127.0.0.1 and
cited under https://man.local/; 580 Russian and 582 English questions, twins (tldr-pages'
descriptions of the same 139 commands). The questions are split by command, commands in sorted
order: the first half chooses rules (dev), the second half is reported (held-out).

Parts (`--part`, default all):
- ``build``: the same pages built twice by the console script (`wikigr pack create`), each in a new
  WIKIGR_HOME (no embedding cache): the built-in model and ``--embedder multilingual``. Wall and CPU
  time of each, and their ratio (target: multilingual ≤ 1.5× the built-in model). The multilingual
  model's one-time set-up on a machine (writing its ONNX file) is done first and timed apart.
- ``recall``: page R@1/5/10 and MRR (retrieval only, no LLM: the sources of ``KnowledgeGraphAgent
  .query`` with the default profile) of both question sets on both packs, dev and held-out.
  Targets (held-out): Russian on the multilingual pack R@5 ≥ 80 and ≥ 0.9× the English twins' R@5 on
  the same pack; the English twins on the multilingual pack within 3 points of the built-in pack.
  The arm ``before`` (keys ``PACK/PROFILE+before/ru``) answers the Russian questions as wikigr did
  before a question asked across languages was moved to the documents' language and pages were
  weighed as a whole and its words read through the pack's lexicon (:data:`ARMS`: the router's
  ``move_across``, page_score's ``page_vector_across``, ``keyword_across`` and ``reading_across``
  off); the arm ``vectors`` has ``keyword_across`` and ``reading_across`` off (the lexicon unused:
  wikigr before the lexicon); the arm ``unread`` has only ``reading_across`` off (the question's
  reading searched by keyword but not added to its vector: wikigr before that).
  English questions on these English packs are not across languages, and the arms change nothing
  for them.
- ``mixed``: a pack of mostly English pages with a few Russian ones (:func:`mixed`): the English
  man pages with the Russian ones of man_ru in place of their English twins. Both question sets,
  split by the language of the question's page (``ru/english_pages``: Russian questions whose page
  is English). A Russian question there is asked across languages as on the English pack (its
  language is not that of most of the pack's documents).
- ``startup``: a fresh `wikigr query PACK QUESTION --json` (a Russian question) on each pack,
  alternating (p50 of --runs; bytecode precompiled), as shipped (``worker``: the query worker
  answers after the first question) and each process alone (``alone``: WIKIGR_WORKER=off);
  target: multilingual within 0.2 s of the built-in model.

    uv run python bench/multilingual.py [--part build|recall|mixed|startup] [--work DIR] [--runs 9]
                                        [--profiles auto,baseline] [--arms ,vectors,before,unread]
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _common import header, load

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from build_query import compile_bytecode, fresh_env, fresh_query_seconds, summary  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "multilingual"
PUBLIC = "https://man.local/"
OUT = ROOT / "bench" / "results" / "multilingual.json"
PACKS = {"builtin": None, "multilingual": "multilingual"}  # pack -> --embedder
KS = (1, 5, 10)
# Stage options of each arm of the recall part, by its name ("": the defaults).
ARMS: dict[str, dict[str, dict[str, Any]]] = {
    "": {},
    "before": {
        "router": {"move_across": False},
        "page_score": {"page_vector_across": 0.0, "keyword_across": 0.0, "reading_across": 0.0},
    },
    "vectors": {"page_score": {"keyword_across": 0.0, "reading_across": 0.0}},
    "unread": {"page_score": {"reading_across": 0.0}},
}


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def serve(folder: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    handler = functools.partial(_Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def lexicon_size(pack: Path) -> int | None:
    """The words of the pack's lexicon (None: it has none), embedded during the build."""
    words = pack / "lexicon" / "words.json"
    return len(json.loads(words.read_text(encoding="utf-8"))) if words.is_file() else None


def build(work: Path, names: list[str]) -> dict[str, Any]:
    """Build both packs with the console script, each in a new WIKIGR_HOME; time them."""
    pages = sorted(p.name for p in (DATA / "man_en").glob("*.md"))
    server, base = serve(DATA / "man_en")
    exe = Path(sys.executable).parent / "wikigr"
    urls = work / "urls.txt"
    urls.write_text("".join(base + p + "\n" for p in pages), encoding="utf-8")
    found: dict[str, Any] = {"pages": len(pages)}
    try:
        for name in names:
            embedder = PACKS[name]
            target = work / name
            if target.exists():
                subprocess.run(["rm", "-rf", str(target)], check=True)
            env = {**fresh_env(), "WIKIGR_HOME": tempfile.mkdtemp(prefix=f"ml-{name}-", dir=work)}
            command = [str(exe), "pack", "create", f"man-{name}", "--urls", str(urls), "--out", str(target)]
            command += ["--public-url", f"{base}={PUBLIC}"]
            if embedder:
                command += ["--embedder", embedder]
            warm = 0.0
            if embedder:  # the model's one-time set-up (e5's ONNX file) is timed apart from the build
                start = time.perf_counter()
                code = f"from wikigr.embed import get_embedder; get_embedder({embedder!r})"
                subprocess.run([sys.executable, "-c", code], check=True, env=env)
                warm = time.perf_counter() - start
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            proc = subprocess.run(command, capture_output=True, text=True, env=env)
            wall = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if proc.returncode != 0:
                raise SystemExit(f"build {name} failed: {proc.stderr[-2000:]}")
            manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
            found[name] = {
                "command": " ".join(
                    ["wikigr pack create", f"man-{name}", "--urls URLS"]
                    + (["--embedder", embedder] if embedder else [])
                ),
                "wall_s": round(wall, 1),
                "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1),
                "model_setup_s": round(warm, 1),
                "embedder": manifest["embedder"]["name"],
                "chunks": manifest["stats"]["chunks"],
                "languages": manifest.get("languages", {}),
                "lexicon_words": lexicon_size(target),
                "load_after": load(),
            }
            print(
                f"{name}: {found[name]['wall_s']} s wall, {found[name]['cpu_s']} s CPU, "
                f"{found[name]['chunks']} chunks",
                file=sys.stderr,
            )
    finally:
        server.shutdown()
    if len(names) == len(PACKS):
        found["wall_ratio"] = round(found["multilingual"]["wall_s"] / found["builtin"]["wall_s"], 2)
        found["cpu_ratio"] = round(found["multilingual"]["cpu_s"] / found["builtin"]["cpu_s"], 2)
        found["target_ratio"] = 1.5
    return found


def questions(language: str) -> list[dict[str, Any]]:
    rows = [
        json.loads(line) for line in (DATA / f"questions_{language}.jsonl").read_text("utf-8").splitlines()
    ]
    return sorted(rows, key=lambda q: (q["command"], q["id"]))


def split(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(dev, held-out): the first half of the commands in sorted order, and the second."""
    commands = sorted({q["command"] for q in rows})
    dev = set(commands[: len(commands) // 2])
    return [q for q in rows if q["command"] in dev], [q for q in rows if q["command"] not in dev]


def scores(ranks: list[int | None]) -> dict[str, float]:
    """R@k (%) and MRR over the rank (1-based; None: not in the sources) of each question's page."""
    n = len(ranks)
    found = {f"R@{k}": round(100 * sum(1 for r in ranks if r is not None and r <= k) / n, 1) for k in KS}
    found["MRR"] = round(sum(1 / r for r in ranks if r is not None) / n, 3)
    found["questions"] = n
    return found


def telling(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The questions whose words tell their command: not those asked word for word of several
    commands ("View documentation for the original command", of 32 held-out aliases; "Display
    help"), which no retrieval can tell apart (their R@5 is chance)."""
    asked: dict[str, set[str]] = {}
    for q in rows:
        asked.setdefault(q["question"], set()).add(q["command"])
    return [q for q in rows if len(asked[q["question"]]) == 1]


def page_rank(urls: list[str], gold: set[str]) -> int | None:
    pages = list(dict.fromkeys(u.split("#", 1)[0] for u in urls))
    for i, url in enumerate(pages, 1):
        if url in gold:
            return i
    return None


def recall(work: Path, names: list[str], profiles: list[str], arms: list[str]) -> dict[str, Any]:
    from wikigr.agent import KnowledgeGraphAgent

    sets = {language: questions(language) for language in ("ru", "en")}
    found: dict[str, Any] = {}
    for name in names:
        for profile in profiles:
            for arm in arms:
                options = ARMS[arm]
                with KnowledgeGraphAgent(
                    str(work / name), profile=profile, options=options, llm=None, top_k=10
                ) as agent:
                    for language, rows in sets.items():
                        if arm and language == "en":  # English on English packs: not across languages
                            continue
                        ranks: dict[str, int | None] = {}
                        latencies = []
                        for q in rows:
                            start = time.perf_counter()
                            result = agent.query(q["question"])
                            latencies.append(time.perf_counter() - start)
                            ranks[q["id"]] = page_rank(
                                [s.url for s in result.sources], set(q["gold_sources"])
                            )
                        dev, held = split(rows)
                        key = f"{name}/{profile}{'+' + arm if arm else ''}/{language}"
                        found[key] = {
                            "dev": scores([ranks[q["id"]] for q in dev]),
                            "held_out": scores([ranks[q["id"]] for q in held]),
                            "held_out_telling": scores([ranks[q["id"]] for q in telling(held)]),
                            "p50_ms": round(1000 * statistics.median(latencies), 1),
                        }
                        if options:
                            found[key]["options"] = options
                        print(
                            f"{key}: dev {found[key]['dev']} held-out {found[key]['held_out']}",
                            file=sys.stderr,
                        )
    checks: dict[str, Any] = {}
    for profile in profiles if len(names) == len(PACKS) else ():
        ru = found[f"multilingual/{profile}/ru"]["held_out"]["R@5"]
        en = found[f"multilingual/{profile}/en"]["held_out"]["R@5"]
        en_builtin = found[f"builtin/{profile}/en"]["held_out"]["R@5"]
        before = found.get(f"multilingual/{profile}+before/ru", {}).get("held_out", {}).get("R@5")
        checks[profile] = {
            "ru_on_multilingual_R@5": ru,
            "ru_on_multilingual_R@5_before": before,
            "ru_over_en_on_multilingual": round(ru / en, 3) if en else None,
            "en_multilingual_minus_builtin_R@5": round(en - en_builtin, 1),
            "targets": {"ru_R@5": 80, "ru_over_en": 0.9, "en_drop_at_most": 3},
        }
    found["held_out_checks"] = checks
    return found


def mixed(work: Path) -> dict[str, Any]:
    """A pack of mostly English pages with a few Russian ones: the English man pages with each of
    man_ru's pages in place of its English twin (same file name, so the questions' gold pages are
    the Russian ones for those commands), built by the console script without ``--embedder`` (the
    build chooses ``multilingual`` for the Russian pages). R@k of both question sets on it, dev and
    held-out, each split by the language of the question's page."""
    from wikigr.agent import KnowledgeGraphAgent

    pages = work / "mixed-pages"
    subprocess.run(["rm", "-rf", str(pages), str(work / "mixed")], check=True)
    pages.mkdir()
    russian = {p.name for p in (DATA / "man_ru").glob("*.md")}
    for folder in ("man_en", "man_ru"):
        for page in (DATA / folder).glob("*.md"):
            (pages / page.name).write_bytes(page.read_bytes())
    server, base = serve(pages)
    urls = work / "mixed-urls.txt"
    urls.write_text("".join(base + p.name + "\n" for p in sorted(pages.glob("*.md"))), encoding="utf-8")
    env = {**fresh_env(), "WIKIGR_HOME": tempfile.mkdtemp(prefix="ml-mixed-", dir=work)}
    command = [str(Path(sys.executable).parent / "wikigr"), "pack", "create", "man-mixed"]
    command += ["--urls", str(urls), "--out", str(work / "mixed"), "--public-url", f"{base}={PUBLIC}"]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, env=env)
    finally:
        server.shutdown()
    if proc.returncode != 0:
        raise SystemExit(f"build mixed failed: {proc.stderr[-2000:]}")
    manifest = json.loads((work / "mixed" / "manifest.json").read_text(encoding="utf-8"))
    found: dict[str, Any] = {
        "pages": len(list(pages.glob("*.md"))),
        "russian_pages": sorted(russian),
        "embedder": manifest["embedder"]["name"],
        "languages": manifest.get("languages", {}),
    }
    with KnowledgeGraphAgent(str(work / "mixed"), llm=None, top_k=10) as agent:
        for language in ("ru", "en"):
            rows = questions(language)
            ranks = {}
            for q in rows:
                sources = [s.url for s in agent.query(q["question"]).sources]
                ranks[q["id"]] = page_rank(sources, set(q["gold_sources"]))
            for half, part in zip(("dev", "held_out"), split(rows), strict=True):
                on_ru = [q for q in part if any(g.rsplit("/", 1)[-1] in russian for g in q["gold_sources"])]
                on_en = [q for q in part if q not in on_ru]
                for where, chosen in (("english_pages", on_en), ("russian_pages", on_ru)):
                    key = f"{language}/{where}"
                    found.setdefault(key, {})[half] = scores([ranks[q["id"]] for q in chosen])
                    print(f"mixed {key} {half}: {found[key][half]}", file=sys.stderr)
    return found


def startup(work: Path, runs: int) -> dict[str, Any]:
    compile_bytecode()
    home = tempfile.mkdtemp(prefix="ml-startup-", dir=work)
    question = "Показать все файлы в каталоге"
    found: dict[str, Any] = {"command": "wikigr query PACK QUESTION --json", "target_difference_s": 0.2}
    # As shipped (the query worker answers after the first question) and each process alone.
    for mode, worker in (("worker", "on"), ("alone", "off")):
        env = {**fresh_env(), "WIKIGR_HOME": home, "WIKIGR_WORKER": worker}
        for name in PACKS:  # the first query of each fills the caches (and starts the worker)
            fresh_query_seconds(work / name, question, env=env)
        times: dict[str, list[float]] = {name: [] for name in PACKS}
        for _ in range(runs):
            for name in PACKS:
                times[name].append(fresh_query_seconds(work / name, question, env=env))
        arm: dict[str, Any] = {name: summary(values) for name, values in times.items()}
        arm["p50_difference_s"] = round(arm["multilingual"]["p50_s"] - arm["builtin"]["p50_s"], 3)
        found[mode] = arm
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description="Russian and English questions over English man pages")
    parser.add_argument("--part", choices=["build", "recall", "mixed", "startup", "all"], default="all")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "wikigr-multilingual")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--profiles", default="auto")
    parser.add_argument("--arms", default=",".join(ARMS), help="recall arms (default: all)")
    parser.add_argument("--packs", default=",".join(PACKS), help="builtin,multilingual (default both)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    if not DATA.is_dir():
        raise SystemExit(f"no data at {DATA} (../shared/data/multilingual beside the project)")
    args.work.mkdir(parents=True, exist_ok=True)
    os.environ.pop("ANTHROPIC_API_KEY", None)
    result: dict[str, Any] = json.loads(args.out.read_text("utf-8")) if args.out.is_file() else {}
    parts = ["build", "recall", "mixed", "startup"] if args.part == "all" else [args.part]
    for part in parts:
        found = {**header(with_time=True)}
        if part == "build":
            found.update(build(args.work, args.packs.split(",")))
        elif part == "recall":
            found.update(
                recall(args.work, args.packs.split(","), args.profiles.split(","), args.arms.split(","))
            )
        elif part == "mixed":
            found.update(mixed(args.work))
        else:
            found.update(startup(args.work, args.runs))
        found["load_average_at_end"] = load()
        result[part] = found
        print(json.dumps({part: found}, indent=2, ensure_ascii=False))
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
