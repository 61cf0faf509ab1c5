"""`wikigr serve` speed: prints a table and writes bench/results/serve.json.

The server is the console script `.venv/bin/wikigr serve packs/pydocs --port 0` in its own process
(no ANTHROPIC_API_KEY: answers are extractive, so the timings are retrieval only; a new
WIKIGR_HOME). After a warm-up (the pack opened, the caches filled):

1. Warm latency: --queries questions (bench/build_query.py's, in turn), one at a time, through
   `POST /api/v1/query` with the default profile (auto) and one keep-alive HTTP client: p50 / p95 of
   the client's wall time, and of the server's own pipeline time (trace.total_ms). Target: p50 of
   the wall time <= 50 ms.
2. Throughput: --clients concurrent clients (threads, each with its own connection) asking
   questions in a loop for --seconds: answers per second, errors. Target: >= 20 answers/s with 8
   clients, no error.
3. The page: headless Chromium (Debian's, through its chromedriver) loads `/?pack=pydocs`; once
   the page says it is ready, the question is put in its field and Enter pressed (typing it key by
   key through the driver would time the driver); the time from the start of the navigation to
   the answer on the page, on the page's own clock (performance.now(), marks the page sets), the
   driver's commands in between included; --page-runs times, each in a new browser (no cache).
   Target: <= 1.5 s. Skipped (said so in the JSON) when Chromium is not installed.
4. The load average (os.getloadavg) at the start and the end, and the machine's core count: the
   machine may be shared, timings are noisy.

    uv run python bench/serve.py [--queries 100] [--clients 8] [--seconds 15] [--page-runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from _common import header, load

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from build_query import QUESTIONS  # noqa: E402

PACK = ROOT / "packs" / "pydocs"
TARGETS = {"p50_ms": 50.0, "answers_per_s": 20.0, "page_to_answer_s": 1.5}


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def start_server(home: Path) -> tuple[subprocess.Popen[str], str]:
    script = Path(sys.executable).with_name("wikigr")
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "PYTHONDONTWRITEBYTECODE")}
    env.update({"WIKIGR_HOME": str(home), "PYTHONUNBUFFERED": "1"})
    proc = subprocess.Popen(
        [str(script), "serve", str(PACK), "--port", "0"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    if " at http://" not in line:
        proc.kill()
        raise SystemExit(f"the server did not start: {line}{proc.stderr.read()}")
    return proc, line.split(" at ", 1)[1].split("/ ", 1)[0]


def ask(client: httpx.Client, question: str) -> tuple[float, dict[str, Any]]:
    start = time.perf_counter()
    response = client.post("/api/v1/query", json={"pack": "pydocs", "question": question})
    wall = (time.perf_counter() - start) * 1000
    response.raise_for_status()
    return wall, response.json()


def latency(url: str, queries: int) -> dict[str, Any]:
    walls: list[float] = []
    server: list[float] = []
    with httpx.Client(base_url=url, timeout=60) as client:
        for question in QUESTIONS[:5]:
            ask(client, question)  # warm-up
        for n in range(queries):
            wall, data = ask(client, QUESTIONS[n % len(QUESTIONS)])
            walls.append(wall)
            server.append(float(data["trace"]["total_ms"]))
    return {
        "queries": queries,
        "profile": "auto (the pack's default)",
        "answers": "extractive (no API key): retrieval only",
        "wall_p50_ms": round(statistics.median(walls), 2),
        "wall_p95_ms": round(pct(walls, 95), 2),
        "server_pipeline_p50_ms": round(statistics.median(server), 2),
        "http_overhead_p50_ms": round(
            statistics.median(w - s for w, s in zip(walls, server, strict=True)), 2
        ),
        "target_wall_p50_ms": TARGETS["p50_ms"],
        "met": statistics.median(walls) <= TARGETS["p50_ms"],
    }


def throughput(url: str, clients: int, seconds: float) -> dict[str, Any]:
    done: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    stop = time.perf_counter() + seconds

    def run(offset: int) -> None:
        n = offset
        with httpx.Client(base_url=url, timeout=60) as client:
            while time.perf_counter() < stop:
                try:
                    wall, _ = ask(client, QUESTIONS[n % len(QUESTIONS)])
                except Exception as exc:  # noqa: BLE001 - counted and reported
                    with lock:
                        errors.append(f"{type(exc).__name__}: {exc}")
                else:
                    with lock:
                        done.append(wall)
                n += 1

    start = time.perf_counter()
    threads = [threading.Thread(target=run, args=(i * 3,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    rate = len(done) / elapsed
    return {
        "clients": clients,
        "seconds": round(elapsed, 2),
        "answers": len(done),
        "answers_per_s": round(rate, 2),
        "errors": len(errors),
        "first_errors": errors[:3],
        "wall_p50_ms": round(statistics.median(done), 2) if done else None,
        "wall_p95_ms": round(pct(done, 95), 2) if done else None,
        "target_answers_per_s": TARGETS["answers_per_s"],
        "met": rate >= TARGETS["answers_per_s"] and not errors,
    }


def page(url: str, runs: int) -> dict[str, Any]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if chromium is None or driver_path is None:
        return {"skipped": "no Chromium: apt-get install -y chromium chromium-driver"}
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    to_answer: list[float] = []
    to_ready: list[float] = []
    wall: list[float] = []
    question = QUESTIONS[0]
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as profile:
            options = Options()
            options.binary_location = chromium
            for argument in (
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--window-size=1366,900",
                f"--user-data-dir={profile}",
                "--no-first-run",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-component-update",
            ):
                options.add_argument(argument)
            browser = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
            try:
                start = time.perf_counter()
                browser.get(f"{url}/?pack=pydocs")
                WebDriverWait(browser, 60, poll_frequency=0.01).until(
                    lambda d: d.execute_script("return document.body.dataset.ready") == "yes"
                )
                # The question is put in at once and sent with Enter (typing it key by key through
                # the driver would time the driver).
                browser.execute_script("document.getElementById('question').value = arguments[0]", question)
                browser.find_element(By.ID, "question").send_keys(Keys.ENTER)
                WebDriverWait(browser, 60, poll_frequency=0.01).until(
                    lambda d: d.execute_script("return document.body.dataset.answered")
                )
                wall.append(time.perf_counter() - start)
                marks = browser.execute_script(
                    "return [document.body.dataset.readyMs, document.body.dataset.answeredMs]"
                )
                to_ready.append(int(marks[0]) / 1000)  # both since the navigation began (the page's clock)
                to_answer.append(int(marks[1]) / 1000)
                assert browser.find_elements(By.CSS_SELECTOR, "#sources > li")
            finally:
                browser.quit()
    return {
        "runs": runs,
        "what": "a new headless Chromium loads /?pack=pydocs; once the page is ready the question is "
        "put in the field and Enter pressed; from the start of the navigation to the answer on the page "
        "(the page's own clock, performance.now())",
        "navigation_to_answer_p50_s": round(statistics.median(to_answer), 3),
        "navigation_to_answer_max_s": round(max(to_answer), 3),
        "navigation_to_ready_p50_s": round(statistics.median(to_ready), 3),
        "driver_wall_p50_s": round(statistics.median(wall), 3),
        "target_s": TARGETS["page_to_answer_s"],
        "met": statistics.median(to_answer) <= TARGETS["page_to_answer_s"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description="wikigr serve: latency, throughput, page to answer")
    parser.add_argument("--queries", type=int, default=100, help="sequential warm queries")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients")
    parser.add_argument("--seconds", type=float, default=15.0, help="duration of the throughput run")
    parser.add_argument("--page-runs", type=int, default=5, help="page loads in headless Chromium")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "serve.json")
    args = parser.parse_args()
    results: dict[str, Any] = {
        **header("cores", with_time=True),
        "pack": str(PACK.relative_to(ROOT)),
        "method": "the console script .venv/bin/wikigr serve in its own process on 127.0.0.1, no "
        "ANTHROPIC_API_KEY (retrieval only, extractive answers), a new WIKIGR_HOME; clients are httpx "
        "in this process",
    }
    with tempfile.TemporaryDirectory() as home:
        proc, url = start_server(Path(home))
        try:
            results["latency"] = latency(url, args.queries)
            results["throughput"] = throughput(url, args.clients, args.seconds)
            results["page"] = page(url, args.page_runs)
        finally:
            proc.terminate()
            proc.wait(30)
    results["load_average_at_end"] = load()
    lat, thr, pg = results["latency"], results["throughput"], results["page"]
    rows = [
        ("warm query p50, wall (ms)", lat["wall_p50_ms"], "<= 50", lat["met"]),
        ("warm query p95, wall (ms)", lat["wall_p95_ms"], "", ""),
        ("  server pipeline p50 (ms)", lat["server_pipeline_p50_ms"], "", ""),
        (f"throughput, {thr['clients']} clients (answers/s)", thr["answers_per_s"], ">= 20", thr["met"]),
        ("  errors", thr["errors"], "0", ""),
    ]
    if "skipped" not in pg:
        rows.append(("page load to answer p50 (s)", pg["navigation_to_answer_p50_s"], "<= 1.5", pg["met"]))
    print(
        f"load average at start {results['load_average_at_start']}, at end {results['load_average_at_end']}"
    )
    for name, value, target, met in rows:
        print(f"{name:<42} {value!s:>10} {target:>8}  {met}")
    if "skipped" in pg:
        print(f"page: skipped ({pg['skipped']})")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
