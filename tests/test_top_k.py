"""`--top-k K` bounds the passages retrieved; the related pages that `multidoc` adds come after
them, marked as such in the text output ("(related)") and in the JSON (`"related": true`), and
`--help` says so (issue 35, item 18: `--top-k 3` returned six sources and nothing said why)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wikigr.cli import run

PYDOCS = Path(__file__).resolve().parent.parent / "packs" / "pydocs"
QUESTION = "How do I set a socket timeout?"


def _query(capsys: pytest.CaptureFixture[str], *args: str) -> dict:  # type: ignore[type-arg]
    assert run(["query", str(PYDOCS), QUESTION, "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


@pytest.mark.parametrize("profile", ["auto", "balanced"])
def test_k_passages_then_the_related_ones_marked(profile: str, capsys: pytest.CaptureFixture[str]) -> None:
    sources = _query(capsys, "--top-k", "3", "--profile", profile)["sources"]
    assert [s["related"] for s in sources[:3]] == [False] * 3
    related = sources[3:]
    assert related and all(s["related"] for s in related)  # this question's top pages link to others
    assert len(related) <= 3  # multidoc's max_added
    assert run(["query", str(PYDOCS), QUESTION, "--top-k", "3", "--profile", profile]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("[")]
    assert len(lines) == len(sources)
    assert ["(related)" in line for line in lines] == [s["related"] for s in sources]


def test_without_multidoc_k_is_the_number_of_sources(capsys: pytest.CaptureFixture[str]) -> None:
    sources = _query(capsys, "--top-k", "3", "--disable", "multidoc")["sources"]
    assert len(sources) == 3 and not any(s["related"] for s in sources)
    sources = _query(capsys, "--top-k", "3", "--profile", "baseline")["sources"]  # runs no multidoc
    assert len(sources) == 3 and not any(s["related"] for s in sources)


def test_the_help_says_related_pages_come_on_top_of_k(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["query", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert "Passages to retrieve" in text
    assert "marked (related)" in text
