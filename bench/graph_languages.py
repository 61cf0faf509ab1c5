"""The entity graph's offline extractors per language: prints a table and writes
bench/results/graph_languages.json.

natasha (Russian) and spaCy (English) each read the same man pages in their language: the Russian
man pages of ../shared/data/multilingual/man_ru and the English pages of the same commands from
man_en, cut into pieces of at most ``--chars`` characters at blank lines (about a chunk). Per
extractor: the load (first use in this process, the imports included), then chunks/s and
characters/s over the pieces (wall clock and CPU), and the entities and facts found.

    uv run python bench/graph_languages.py [--data ../shared/data/multilingual] [--chars 1000]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from _common import header, write_results

from wikigr.graph.build import Extractor

ROOT = Path(__file__).resolve().parent.parent


def pieces(folder: Path, names: list[str], limit: int) -> list[str]:
    """The pages' paragraphs, joined up to ``limit`` characters a piece."""
    out: list[str] = []
    for name in names:
        current = ""
        for paragraph in (folder / name).read_text().split("\n\n"):
            if current and len(current) + len(paragraph) > limit:
                out.append(current)
                current = ""
            current = f"{current}\n\n{paragraph}" if current else paragraph
        if current:
            out.append(current)
    return out


def measure(make: Any, texts: list[str]) -> dict[str, Any]:
    start = time.perf_counter()
    extractor: Extractor = make()
    loaded = time.perf_counter() - start
    wall, cpu = time.perf_counter(), time.process_time()
    found = extractor.extract(texts)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    chars = sum(map(len, texts))
    return {
        "load_seconds": round(loaded, 2),
        "chunks": len(texts),
        "chars": chars,
        "seconds": round(wall, 2),
        "cpu_seconds": round(cpu, 2),
        "chunks_per_s": round(len(texts) / wall, 1),
        "chars_per_s": round(chars / wall),
        "chars_per_cpu_s": round(chars / cpu),
        "entities": sum(len(f.mentions) for f in found),
        "facts": sum(len(f.facts) for f in found),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "multilingual")
    parser.add_argument("--chars", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "graph_languages.json")
    args = parser.parse_args()
    names = sorted(p.name for p in (args.data / "man_ru").glob("*.md"))
    results: dict[str, Any] = {**header(with_time=True), "pages": names, "piece_chars": args.chars}

    def natasha() -> Extractor:
        from wikigr.graph.russian import NatashaExtractor

        return NatashaExtractor()

    def spacy() -> Extractor:
        from wikigr.graph.extract import SpacyExtractor

        return SpacyExtractor()

    results["natasha_ru"] = measure(natasha, pieces(args.data / "man_ru", names, args.chars))
    results["spacy_en"] = measure(spacy, pieces(args.data / "man_en", names, args.chars))
    columns = ("load s", "chunks", "chunks/s", "chars/s", "entities", "facts")
    print(f"{'extractor':<12} " + " ".join(f"{c:>9}" for c in columns))
    for arm in ("natasha_ru", "spacy_en"):
        r = results[arm]
        row = (r["load_seconds"], r["chunks"], r["chunks_per_s"], r["chars_per_s"], r["entities"], r["facts"])
        print(f"{arm:<12} " + " ".join(f"{v:>9}" for v in row))
    write_results(results, args.out)


if __name__ == "__main__":
    main()
