"""OpenML packs travel like document packs: export, install, skill registration."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from wikigr.cli import run
from wikigr.pack.pack import open_pack


def test_export_install_and_skill_of_an_openml_pack(openml_pack: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    archive = tmp_path / "o.tar.gz"
    assert run(["pack", "export", str(openml_pack), "-o", str(archive)]) == 0
    skills = tmp_path / "skills"
    assert run(["pack", "install", str(archive), "--skills-dir", str(skills)]) == 0
    installed = open_pack(open_pack(openml_pack).name)
    assert installed.manifest.source_kind == "openml"
    text = (skills / installed.name / "SKILL.md").read_text()
    front = yaml.safe_load(re.match(r"---\n(.*?)\n---\n", text, re.S).group(1))  # type: ignore[union-attr]
    assert front["name"] == installed.name and "OpenML" in front["description"]
    assert "wikigr cypher" in text
    capsys.readouterr()
    assert run(["pack", "list", "--json"]) == 0
    assert '"runs"' in capsys.readouterr().out
