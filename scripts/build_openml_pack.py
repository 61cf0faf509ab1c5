"""Build the example OpenML pack `packs/amlb2019` from the 2019 AutoML benchmark results.

The runs are `amlb2019_runs.csv` in ../shared/data/openml (6,442 runs of ten AutoML frameworks
and baselines on 49 OpenML tasks; MIT licence, the AutoML Benchmark, github.com/openml/automlbenchmark).
The export names datasets but not their OpenML data ids, so no quality file joins it: the
dataset size and class-balance buckets stay "unknown" in this pack. Run:

    uv run python scripts/build_openml_pack.py [--data ../shared/data/openml] [--out packs/amlb2019]

The manifest then lists every file's checksum (scripts/pack_checksums.py), as an exported archive's
does: `wikigr pack install packs/amlb2019` checks them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pack_checksums import list_checksums  # noqa: E402

from wikigr.openml.build import OpenMLBuildOptions, build_openml_pack  # noqa: E402

LICENCE = """The run results in this pack come from the AutoML Benchmark (2019 runs),
https://github.com/openml/automlbenchmark, under the MIT License:

MIT License

Copyright (c) 2018 OpenML

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""

QUESTIONS = [
    "Which algorithm family has the highest median accuracy on classification tasks?",
    "Which AutoML framework has the lowest median log-loss?",
    "Compare TPOT and autosklearn on credit-g by AUC",
    "Which dataset is the hardest?",
    "How many runs are there on Airlines?",
    "Which framework is the fastest?",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "openml")
    parser.add_argument("--out", type=Path, default=ROOT / "packs" / "amlb2019")
    args = parser.parse_args()
    export = args.data / "amlb2019_runs.csv"
    if not export.is_file():
        sys.exit(f"no export at {export} (give --data)")
    report = build_openml_pack(
        "amlb2019",
        exports=[export],
        out=args.out,
        options=OpenMLBuildOptions(
            description=(
                "The 2019 AutoML benchmark on OpenML: 6,442 runs of AutoML frameworks (auto-sklearn, "
                "H2O AutoML, TPOT, Auto-WEKA, OBOE) and baselines on 49 OpenML classification tasks "
                "(44 datasets)"
            ),
            licence="MIT (AutoML Benchmark, https://github.com/openml/automlbenchmark)",
        ),
    )
    (report.path / "LICENSE.txt").write_text(LICENCE, encoding="utf-8")
    questions = report.path / "eval" / "questions.jsonl"
    questions.write_text(
        "".join(json.dumps({"id": f"q{i}", "question": q}) + "\n" for i, q in enumerate(QUESTIONS, 1)),
        encoding="utf-8",
    )
    listed = list_checksums(report.path)
    stats = report.manifest.stats
    print(
        f"{report.path}: {stats.runs} runs, {stats.algorithms} algorithms, {stats.datasets} datasets; "
        f"{listed} checksums listed"
    )


if __name__ == "__main__":
    main()
