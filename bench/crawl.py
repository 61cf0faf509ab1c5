"""A pack crawled from one seed against the same pages built from a URL list (issue 36's targets).

Debian's python3.11-doc HTML (/usr/share/doc/python3.11/html) is served on 127.0.0.1 by a
threading HTTP server that counts every request. Three parts, each in its own section of the JSON:

- ``build``: the pack `bench/docqa.py --whole` builds from its URL list (every page of library/,
  reference/, tutorial/, howto/), and the pack crawled from the docs' ``index.html`` with
  ``--exclude`` for the folders and top-level pages that list leaves out, built one after the
  other in this process with the same options (entity graph included, cited at
  docs.python.org). Reported: wall time of each (the crawl's includes its fetching), their ratio
  (target <= 1.15), and their CPU time and its ratio (the machine is shared: a change of load
  between the two builds moves the wall-time ratio, not the CPU one), the share of the list's
  pages the crawled pack holds (target >= 99%), pages outside the served tree (target 0), and
  `bench/docqa.py` run on both packs (its arms' R@1/5/10 must agree within 0.5).
- ``resume``: a crawl (no build) stopped half-way, then run again on its state folder: the
  server's request count per page (target: no page requested twice).
- ``polite``: a crawl of 8 pages from a server whose robots.txt says ``Crawl-delay: 1``: the
  smallest gap between two requests the server saw (target >= 1 s).

    uv run python bench/crawl.py [--part build|resume|polite|all]

Writes bench/results/crawl.json (a part run alone replaces its own section).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import itertools
import json
import resource
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _common import header, load

from wikigr.build import BuildOptions, build_pack
from wikigr.sources.crawl import Crawler, CrawlOptions
from wikigr.sources.fetch import FetchOptions

ROOT = Path(__file__).resolve().parent.parent
DOCS = Path("/usr/share/doc/python3.11/html")
PUBLIC = "https://docs.python.org/3.11/"
WORK = ROOT / "bench" / "work"
OUT = ROOT / "bench" / "results" / "crawl.json"
WHOLE_DIRS = ("library", "reference", "tutorial", "howto")


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Serves the docs; records each request's path and arrival time on the server."""

    robots = ""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.server.seen.append((time.monotonic(), self.path))  # type: ignore[attr-defined]
        if self.path == "/robots.txt" and self.robots:
            body = self.robots.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()


@contextlib.contextmanager
def serve(docs: Path, robots: str = "") -> Iterator[tuple[str, list[tuple[float, str]]]]:
    handler = type("Handler", (_Handler,), {"robots": robots})
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(docs))
    )
    server.seen = []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", server.seen  # type: ignore[attr-defined]
    finally:
        server.shutdown()


def cpu() -> float:
    """CPU seconds of this process so far (user and system, all its threads)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def whole_pages(docs: Path) -> list[str]:
    return sorted(str(p.relative_to(docs)) for d in WHOLE_DIRS for p in (docs / d).glob("*.html"))


def left_out(docs: Path, base: str) -> list[str]:
    """The --exclude prefixes that leave out what the URL list does: the other folders, and the
    top-level pages but the seed."""
    folders = [f"{base}{p.name}/" for p in sorted(docs.iterdir()) if p.is_dir() and p.name not in WHOLE_DIRS]
    pages = [f"{base}{p.name}" for p in sorted(docs.glob("*.html")) if p.name != "index.html"]
    return folders + pages


def docqa(pack: Path, out: Path) -> dict[str, Any]:
    """bench/docqa.py on ``pack``: each arm's R@k over all questions."""
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "docqa.py"),
            "--pack",
            str(pack),
            "--profiles",
            "auto",
            "--out",
            str(out),
        ],
        check=True,
    )
    data = json.loads(out.read_text())
    return {arm["arm"].strip(): arm["all"] for arm in data["arms"]}


def part_build(docs: Path) -> dict[str, Any]:
    result: dict[str, Any] = {"load_at_start": load()}
    pages = whole_pages(docs)
    with serve(docs) as (base, seen):
        listed, crawled = WORK / "crawl-listed", WORK / "crawl-site"
        options = {"public_urls": [(base, PUBLIC)]}
        t0, c0 = time.perf_counter(), cpu()
        build_pack("crawl-listed", [base + p for p in pages], out=listed, options=BuildOptions(**options))
        result["listed_seconds"] = round(time.perf_counter() - t0, 1)
        result["listed_cpu_seconds"] = round(cpu() - c0, 1)
        result["load_after_listed"] = load()
        excludes = tuple(left_out(docs, base))
        crawl = CrawlOptions((base + "index.html",), max_pages=2000, depth=10, exclude=excludes)
        seen.clear()
        t0, c0 = time.perf_counter(), cpu()
        report = build_pack("crawl-site", [], out=crawled, options=BuildOptions(**options, crawl=crawl))
        result["crawled_seconds"] = round(time.perf_counter() - t0, 1)
        result["crawled_cpu_seconds"] = round(cpu() - c0, 1)
        result["load_after_crawled"] = load()
        result["ratio"] = round(result["crawled_seconds"] / result["listed_seconds"], 3)
        # The machine is shared: the CPU time of this process (both builds run in it, the server's
        # threads too) does not count the other processes' load; the wall time does.
        result["cpu_ratio"] = round(result["crawled_cpu_seconds"] / result["listed_cpu_seconds"], 3)
        assert report.crawl is not None
        result["crawl"] = {k: v for k, v in report.crawl.to_json().items() if k != "skipped_pages"}
        result["crawl"]["excludes"] = len(excludes)
        found = {s.url.removeprefix(base) for s in report.manifest.sources if s.status == "ok"}
        result["pages_listed"] = len(pages)
        result["pages_crawled"] = len(found)
        result["listed_pages_crawled_%"] = round(100 * len(found & set(pages)) / len(pages), 2)
        result["missing"] = sorted(set(pages) - found)
        result["outside_the_tree"] = sorted(u for u in found if "://" in u)
        result["extra"] = sorted(found - set(pages))
        result["requests_during_crawl"] = len(seen)
    listed_arms = docqa(listed, WORK / "crawl-docqa-listed.json")
    crawled_arms = docqa(crawled, WORK / "crawl-docqa-site.json")
    diffs = {
        arm: {k: round(crawled_arms[arm][k] - v, 1) for k, v in listed_arms[arm].items()}
        for arm in listed_arms
        if arm in crawled_arms
    }
    result["docqa_listed"] = listed_arms
    result["docqa_crawled"] = crawled_arms
    result["docqa_largest_difference"] = max(abs(d) for row in diffs.values() for d in row.values())
    result["load_at_end"] = load()
    return result


def part_resume(docs: Path) -> dict[str, Any]:
    folder = WORK / "crawl-resume-state"
    import shutil

    shutil.rmtree(folder, ignore_errors=True)
    with serve(docs) as (base, seen):
        options = CrawlOptions((base + "library/index.html",), max_pages=200)
        first = Crawler(options, FetchOptions(), folder=folder)
        pages = first.run()
        got = [next(pages) for _ in range(100)]
        pages.close()  # as Ctrl-C does: the generator's cleanup runs
        half = len(seen)
        second = Crawler(options, FetchOptions(), folder=folder)
        rest = list(second.run())
        counts = Counter(path for _, path in seen if path != "/robots.txt" and path != "/sitemap.xml")
    return {
        "pages_before_the_stop": len(got),
        "requests_before_the_stop": half,
        "pages_after_resume": len(rest),
        "restored": second.report.restored,
        "pages_requested_twice": sorted(p for p, n in counts.items() if n > 1),
        "page_requests": sum(counts.values()),
        "distinct_pages_requested": len(counts),
    }


def part_polite(docs: Path) -> dict[str, Any]:
    with serve(docs, robots="User-agent: *\nCrawl-delay: 1\n") as (base, seen):
        options = CrawlOptions((base + "library/index.html",), max_pages=8)
        t0 = time.perf_counter()
        pages = list(Crawler(options, FetchOptions()).run())
        seconds = time.perf_counter() - t0
        times = [t for t, _ in seen]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    return {
        "pages": len(pages),
        "requests": len(times),
        "seconds": round(seconds, 2),
        "smallest_gap_s": round(min(gaps), 3) if gaps else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--part", choices=("build", "resume", "polite", "all"), default="all")
    parser.add_argument("--docs", type=Path, default=DOCS)
    args = parser.parse_args()
    if not (args.docs / "library" / "socket.html").is_file():
        print(f"Error: no Python docs at {args.docs}: apt-get install python3.11-doc", file=sys.stderr)
        return 1
    results: dict[str, Any] = json.loads(OUT.read_text()) if OUT.is_file() else {}
    results.update(header())
    parts = ("polite", "resume", "build") if args.part == "all" else (args.part,)
    for name in parts:
        found = {"polite": part_polite, "resume": part_resume, "build": part_build}[name](args.docs)
        print(name, json.dumps(found, indent=2), flush=True)
        results[name] = found
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
