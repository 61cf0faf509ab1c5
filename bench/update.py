"""Incremental update speed: prints a table and writes bench/results/update.json.

Python documentation pages (Debian's python3.11-doc) are copied to a temporary folder and served
on 127.0.0.1, a pack is built from them, then:

1. ``update_pack`` with the source list unchanged (several runs): every page is re-fetched and
   re-parsed, nothing should be embedded, and the store is kept as it is (the JSON's
   ``seconds_beyond_fetch_median``: what the update costs beyond fetching and parsing);
2. an update after one page was edited, one added and one dropped from the list: only the new
   and changed chunks should be embedded;
3. for reference, the full build of the same pages (measured first, in the same run).

    apt-get install python3.11-doc      # once
    uv run python bench/update.py [--pages 59] [--runs 3]
"""

from __future__ import annotations

import argparse
import functools
import http.server
import os
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

from _common import header, write_results

from wikigr import __version__
from wikigr.build import BuildOptions, build_pack, update_pack

ROOT = Path(__file__).resolve().parent.parent
DOCS = Path("/usr/share/doc/python3.11/html")


class _Server(http.server.ThreadingHTTPServer):
    request_queue_size = 64  # the default backlog of 5 makes some of 8 parallel connects wait 1 s


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=59)  # as many as packs/pydocs
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "update.json")
    args = parser.parse_args()
    if not (DOCS / "library").is_dir():
        print(f"needs {DOCS}: apt-get install python3.11-doc")
        return 1

    work = Path(tempfile.mkdtemp(prefix="wikigr-update-bench-"))
    site = work / "site"
    (site / "library").mkdir(parents=True)
    library = sorted(p.name for p in (DOCS / "library").glob("*.html"))
    chosen = library[:: max(1, len(library) // (args.pages + 1))][: args.pages + 1]
    for name in chosen:
        shutil.copyfile(DOCS / "library" / name, site / "library" / name)
    extra, pages = chosen[-1], chosen[:-1]  # one page held back, added by the update
    handler = functools.partial(_Quiet, directory=str(site))
    server = _Server(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/library/"
    pack = work / "pack"
    urls = work / "urls.txt"
    urls.write_text("".join(base + p + "\n" for p in pages))
    results: dict[str, object] = {
        **header(date=False),
        "pages": len(pages),
    }
    try:
        build = build_pack(
            "updatebench", [base + p for p in pages], out=pack, options=BuildOptions(fresh=True)
        )
        results["full_build"] = {
            "articles": build.manifest.stats.articles,
            "chunks": build.manifest.stats.chunks,
            "chunks_embedded": build.chunks_embedded,
            "seconds": {k: round(v, 3) for k, v in build.seconds.items()},
        }
        (pack / "urls.txt").write_text(urls.read_text())

        runs = []
        for _ in range(args.runs):
            report = update_pack(pack)
            runs.append(report)
        totals = [r.seconds["total"] for r in runs]
        results["unchanged_update"] = {
            "runs": len(runs),
            "seconds_median": round(statistics.median(totals), 3),
            "seconds_each": [round(t, 3) for t in totals],
            "split_of_median_run": {
                k: round(v, 3)
                for k, v in sorted(runs, key=lambda r: r.seconds["total"])[len(runs) // 2].seconds.items()
            },
            # What an unchanged update costs beyond fetching (and parsing) its pages: the store is
            # kept as it is (store_kept), only the manifest and support files are written again.
            "seconds_beyond_fetch_median": round(
                statistics.median(r.seconds["total"] - r.seconds["fetch"] for r in runs), 3
            ),
            "store_kept": [r.store_kept for r in runs],
            "chunks_embedded": [r.chunks_embedded for r in runs],
            "chunks_reused": runs[-1].chunks_reused,
            "counts": runs[-1].to_json()["counts"],
        }

        edited = site / "library" / pages[0]
        html = edited.read_text(encoding="utf-8")
        marker = '<div class="body" role="main">'
        addition = (
            "<section id='wikigr-bench'><h2>Added by the update benchmark</h2>"
            "<p>This paragraph is new: the update must embed it and nothing else of this page "
            "that did not change.</p></section>"
        )
        edited.write_text(html.replace(marker, marker + addition, 1) if marker in html else html + addition)
        changed_urls = work / "changed.txt"
        changed_urls.write_text("".join(base + p + "\n" for p in [*pages[1:-1], pages[0], extra]))
        t0 = time.perf_counter()
        report = update_pack(pack, urls_file=changed_urls)
        wall = time.perf_counter() - t0
        results["changed_update"] = {
            "edit": f"1 page edited ({pages[0]}), 1 added ({extra}), 1 dropped ({pages[-1]})",
            "seconds": round(wall, 3),
            "split": {k: round(v, 3) for k, v in report.seconds.items()},
            "counts": report.to_json()["counts"],
            "chunks_embedded": report.chunks_embedded,
            "chunks_reused": report.chunks_reused,
            "chunks_after": report.manifest.stats.chunks,
        }
    finally:
        server.shutdown()
        shutil.rmtree(work, ignore_errors=True)

    full = results["full_build"]
    unchanged = results["unchanged_update"]
    changed = results["changed_update"]
    assert isinstance(full, dict) and isinstance(unchanged, dict) and isinstance(changed, dict)
    print(f"{len(pages)} pages, {full['chunks']} chunks (wikigr {__version__}, {os.cpu_count()} CPUs)")
    print(f"{'run':<28}{'seconds':>10}{'chunks embedded':>18}")
    print(f"{'full build':<28}{full['seconds']['total']:>10.2f}{full['chunks_embedded']:>18}")
    print(
        f"{'update, nothing changed':<28}{unchanged['seconds_median']:>10.2f}"
        f"{max(unchanged['chunks_embedded']):>18}"
    )
    print(f"{'  of which beyond the fetch':<28}{unchanged['seconds_beyond_fetch_median']:>10.2f}")
    print(f"{'update, 1 edit +1 -1 page':<28}{changed['seconds']:>10.2f}{changed['chunks_embedded']:>18}")
    write_results(results, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
