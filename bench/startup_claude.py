"""Fresh-process start-up of `wikigr query` with ANTHROPIC_API_KEY set: what a Claude Code skill
pays per question when Claude writes the answer (issue 37).

Prints a table and writes bench/results/startup_claude.json.

Method:
1. The fake Messages API of the tests (tests/fakeclaude.py) runs in this process on 127.0.0.1 and
   answers each request at once with a short cited answer (it cites the prompt's [n] markers).
2. Each run is a new process of the console script `.venv/bin/wikigr query packs/pydocs QUESTION
   --json` (not `uv run`: uv's own start-up would be timed too; questions from
   bench/build_query.py, in turn), with ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL pointing at the
   fake. Each bytecode mode and code has a new WIKIGR_HOME: its first run fills the caches and is
   reported apart (`first_run`).
3. Per run, every time read with time.monotonic() in this process (the fake's thread included):
   `to_request_s`, from Popen to the arrival of the first request at the fake (its body read);
   `answer_after_reply_s`, from the fake's last reply (its responder returned; the reply is written
   right after) to the process's stdout holding the whole JSON; `exit_after_reply_s`, to the
   process's exit; `total_s`, from Popen to exit. A run whose answer did not come from Claude
   (answer_mode not "claude") stops the bench.
4. Two bytecode modes. `cached`: the environment's site-packages and wikigr compiled first
   (compileall, as `pip install` does), PYTHONDONTWRITEBYTECODE and PYTHONPYCACHEPREFIX unset.
   `uncached`: PYTHONDONTWRITEBYTECODE=1 and PYTHONPYCACHEPREFIX at a new empty folder, so no .pyc
   is found (nor written): every process compiles every module it imports, as on a machine whose
   installer did not compile bytecode and whose Python may not write it.
5. `--code DIR` times another copy of the wikigr package as well (DIR/wikigr, e.g. `git archive
   COMMIT wikigr | tar -x -C DIR`), first on PYTHONPATH: its runs alternate with the current
   code's (A, B, B, A...), so both halves see the same machine load; both are reported.
6. Medians and p95 over --runs runs (at least 7 for a figure; default 9), the load average
   (os.getloadavg) at the start and the end, and the machine's core count.

    uv run python bench/startup_claude.py [--runs 9] [--code DIR] [--out PATH]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import header, load

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))
from build_query import BYTECODE_MODES, QUESTIONS, bytecode_env, compile_bytecode, fresh_env  # noqa: E402

from tests.fakeclaude import FAKE_API_KEY, FakeClaude, Reply, cite_all  # noqa: E402

EXAMPLE = ROOT / "packs" / "pydocs"


class Clock:
    """The fake's requests and replies of the current run, in time.monotonic()."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.arrivals: list[float] = []
        self.replies: list[float] = []

    def reset(self) -> None:
        with self.lock:
            self.arrivals, self.replies = [], []

    def respond(self, body: dict[str, Any]) -> Reply:
        arrived = time.monotonic()
        reply = cite_all(body)
        with self.lock:
            self.arrivals.append(arrived)
            self.replies.append(time.monotonic())
        return reply


def timed_run(question: str, env: dict[str, str], clock: Clock, errors: Path) -> dict[str, Any]:
    """One fresh `wikigr query packs/pydocs QUESTION --json`, timed against the fake's clock."""
    exe = Path(sys.executable).parent / "wikigr"
    clock.reset()
    with errors.open("w+b") as stderr:
        start = time.monotonic()
        proc = subprocess.Popen(
            [str(exe), "query", str(EXAMPLE), question, "--json"],
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=env,
        )
        assert proc.stdout is not None
        out, printed = b"", None
        while chunk := os.read(proc.stdout.fileno(), 65536):
            out += chunk
            if printed is None:
                try:
                    json.loads(out)
                except ValueError:
                    continue
                printed = time.monotonic()
        proc.stdout.close()
        code = proc.wait()
        exited = time.monotonic()
        stderr.seek(0)
        failure = stderr.read().decode("utf-8", "replace").strip()
    if code != 0 or printed is None:
        raise SystemExit(f"query failed (exit {code}): {failure}")
    mode = json.loads(out)["trace"]["answer_mode"]
    with clock.lock:
        arrivals, replies = list(clock.arrivals), list(clock.replies)
    if mode != "claude" or not arrivals:
        raise SystemExit(f"the answer did not come from Claude (answer_mode {mode!r}) for {question!r}")
    return {
        "to_request_s": arrivals[0] - start,
        "answer_after_reply_s": printed - replies[-1],
        "exit_after_reply_s": exited - replies[-1],
        "total_s": exited - start,
        "requests": len(arrivals),
    }


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {"runs": len(runs)}
    for key in ("to_request_s", "answer_after_reply_s", "exit_after_reply_s", "total_s"):
        values = [r[key] for r in runs]
        found[key] = {
            "p50": round(statistics.median(values), 3),
            "p95": round(float(np.percentile(np.array(values), 95)), 3),
            "min": round(min(values), 3),
            "max": round(max(values), 3),
        }
    found["requests_per_run"] = sorted({r["requests"] for r in runs})
    return found


def rounded(run: dict[str, Any]) -> dict[str, Any]:
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in run.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description="fresh-process wikigr query with a Claude key")
    parser.add_argument("--runs", type=int, default=9, help="timed fresh processes per mode and code")
    parser.add_argument("--code", type=Path, help="a folder holding another wikigr/ package to time")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "startup_claude.json")
    args = parser.parse_args()
    if args.code and not (args.code / "wikigr" / "__init__.py").is_file():
        print(f"Error: {args.code} holds no wikigr/ package", file=sys.stderr)
        return 1
    results: dict[str, Any] = {
        **header("cores", with_time=True),
        "command": "wikigr query packs/pydocs QUESTION --json (the console script), a fresh process",
        "method": (
            "ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL at the fake Messages API in the bench process, "
            "which answers at once; times on time.monotonic() in the bench process: Popen -> the first "
            "request's arrival, the last reply -> the whole JSON on stdout, and -> exit; bytecode "
            "cached (compileall first), installed (PYTHONDONTWRITEBYTECODE=1, the environment compiled "
            "as the README's uv sync --compile-bytecode does, wikigr's own modules not: a copy "
            "without __pycache__) or uncached (PYTHONDONTWRITEBYTECODE=1, an empty "
            "PYTHONPYCACHEPREFIX); a new WIKIGR_HOME per mode and code, its first run apart"
        ),
        "targets": {"to_request_s_p50": 1.0, "answer_after_reply_s_p50": 0.2},
    }
    compile_bytecode()
    codes: dict[str, str] = {"current": str(ROOT)}
    if args.code:
        compileall.compile_dir(str(args.code / "wikigr"), quiet=2)
        codes["other"] = str(args.code.resolve())
        results["code"] = {"current": str(ROOT / "wikigr"), "other": f"{args.code}/wikigr (PYTHONPATH)"}
    clock = Clock()
    with FakeClaude(responder=clock.respond) as fake, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        base = {
            **fresh_env(),
            "ANTHROPIC_API_KEY": FAKE_API_KEY,
            "ANTHROPIC_BASE_URL": fake.base_url,
        }
        for name in ("ANTHROPIC_AUTH_TOKEN", "WIKIGR_MODEL", "WIKIGR_TIMEOUT"):
            base.pop(name, None)
        for mode in BYTECODE_MODES:
            envs = {}
            for code, folder in codes.items():
                env = {**base, "WIKIGR_HOME": str(work / f"home-{mode}-{code}")}
                envs[code] = bytecode_env(mode, env, Path(folder), work / f"{mode}-{code}")
            first = {
                code: rounded(timed_run(QUESTIONS[0], env, clock, work / "stderr"))
                for code, env in envs.items()
            }
            runs: dict[str, list[dict[str, Any]]] = {code: [] for code in codes}
            for i in range(args.runs):
                order = list(codes) if i % 2 == 0 else list(reversed(codes))
                for code in order:
                    question = QUESTIONS[i % len(QUESTIONS)]
                    runs[code].append(timed_run(question, envs[code], clock, work / "stderr"))
                print(f"{mode} run {i + 1}/{args.runs}", file=sys.stderr)
            results[mode] = {
                code: {
                    "first_run": first[code],
                    **summary(runs[code]),
                    "each_run": [rounded(r) for r in runs[code]],
                }
                for code in codes
            }
        if fake.errors:
            raise SystemExit("the fake's responder raised:\n" + "\n".join(fake.errors))
    results["load_average_at_end"] = load()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")

    print(
        f"\nload average {results['load_average_at_start']} -> {results['load_average_at_end']}, "
        f"{os.cpu_count()} cores"
    )
    for mode in BYTECODE_MODES:
        for code, r in results[mode].items():
            print(
                f"{mode:<9} {code:<8} to request p50 {r['to_request_s']['p50']} s "
                f"(p95 {r['to_request_s']['p95']}), answer after reply p50 "
                f"{r['answer_after_reply_s']['p50']} s (p95 {r['answer_after_reply_s']['p95']}), "
                f"total p50 {r['total_s']['p50']} s"
            )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
