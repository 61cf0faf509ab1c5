"""Build the example pack `packs/pydocs` from a slice of the Python 3.11 documentation.

The pages come from Debian's `python3.11-doc` package (PSF licence, redistributable), served from
127.0.0.1 during the build so the real HTTP fetcher is used; citations point at the public
https://docs.python.org/3.11/ pages. Run:

    apt-get install python3.11-doc      # once
    uv run python scripts/build_example_pack.py

The manifest then lists every file's checksum (scripts/pack_checksums.py), as an exported archive's
does: `wikigr pack install packs/pydocs` checks them.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import sys
import threading
from pathlib import Path

from pack_checksums import list_checksums

from wikigr.build import BuildOptions, build_pack
from wikigr.skill import write_skill

ROOT = Path(__file__).resolve().parent.parent
DOCS = Path("/usr/share/doc/python3.11/html")
PUBLIC = "https://docs.python.org/3.11/"
# The pages are served on this port: a pack's ids (articles, sections, chunks) are made from the URLs
# it fetched, so every build on the same port gives the same ids (docs/serve.md quotes one).
PORT = 42717

TUTORIAL = [
    "appetite",
    "interpreter",
    "introduction",
    "controlflow",
    "datastructures",
    "modules",
    "inputoutput",
    "errors",
    "classes",
    "stdlib",
    "stdlib2",
    "venv",
    "whatnow",
    "floatingpoint",
]
LIBRARY = [
    "functions",
    "stdtypes",
    "datetime",
    "os",
    "os.path",
    "pathlib",
    "urllib.request",
    "webbrowser",
    "logging",
    "random",
    "re",
    "itertools",
    "functools",
    "struct",
    "subprocess",
    "json",
    "hashlib",
    "collections",
    "importlib",
    "math",
    "locale",
    "heapq",
    "operator",
    "zipfile",
    "sys",
    "http.client",
    "csv",
    "sqlite3",
    "pprint",
    "venv",
    "ast",
    "unicodedata",
    "socket",
    "platform",
    "argparse",
    "shutil",
    "io",
    "array",
    "string",
    "time",
    "exceptions",
    "typing",
    "unittest",
    "glob",
    "tempfile",
]

LICENSE_NOTE = """The documents in this pack are from the Python 3.11 documentation,
Copyright (c) 2001-2023 Python Software Foundation; All Rights Reserved.
Distributed under the PSF License Agreement: https://docs.python.org/3.11/license.html
(text taken from Debian's python3.11-doc package).
"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=Path, default=DOCS, help="the python3.11-doc HTML folder")
    parser.add_argument("--out", type=Path, default=ROOT / "packs" / "pydocs")
    parser.add_argument(
        "--port", type=int, default=PORT, help="serve the docs on this port (another changes every id)"
    )
    args = parser.parse_args()
    if not (args.docs / "library" / "socket.html").is_file():
        print(f"Error: no Python docs at {args.docs}: apt-get install python3.11-doc", file=sys.stderr)
        return 1
    handler = functools.partial(_Quiet, directory=str(args.docs))
    try:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), handler)
    except OSError as exc:
        print(f"Error: cannot serve on 127.0.0.1:{args.port}: {exc.strerror}; give --port", file=sys.stderr)
        return 1
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    pages = [f"tutorial/{p}.html" for p in TUTORIAL] + [f"library/{p}.html" for p in LIBRARY]
    try:
        report = build_pack(
            "pydocs",
            [base + p for p in pages],
            out=args.out,
            options=BuildOptions(
                description=(
                    "Python 3.11 documentation: the tutorial and core library reference pages "
                    "(built-in functions and types, os, pathlib, datetime, json, re, socket, "
                    "subprocess, logging, collections, itertools and more)"
                ),
                public_urls=[(base, PUBLIC)],
                fresh=True,
                graph=False,  # keeps the shipped pack small; `wikigr pack graph` adds it (docs/graph.md)
            ),
            url_list="".join(PUBLIC + p + "\n" for p in pages),
        )
    finally:
        server.shutdown()
    (args.out / "LICENSE.txt").write_text(LICENSE_NOTE, encoding="utf-8")
    # The skill names the pack by its name, as once installed (not by the builder's path to it).
    write_skill(args.out, report.manifest, args.out / "pack.db")
    listed = list_checksums(args.out)
    stats = report.manifest.stats
    print(
        f"built {report.path}: {stats.articles} articles, {stats.sections} sections, "
        f"{stats.chunks} chunks, {stats.links} links in {report.seconds['total']:.1f}s; "
        f"failed: {report.failed or 'none'}; {listed} checksums listed"
    )
    return 0 if not report.failed else 1


if __name__ == "__main__":
    sys.exit(main())
