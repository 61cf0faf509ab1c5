"""Every CLI command is documented in the README and answers --help."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer

from wikigr.cli import app, run

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def commands(typer_app: typer.Typer, prefix: str = "wikigr") -> list[str]:
    found = []
    for info in typer_app.registered_commands:
        name = info.name or (info.callback.__name__ if info.callback else "")
        found.append(f"{prefix} {name}")
    for group in typer_app.registered_groups:
        assert group.typer_instance is not None
        found += commands(group.typer_instance, f"{prefix} {group.name}")
    return found


ALL = [c.replace("wikigr eval run", "wikigr eval") for c in commands(app)]


def test_there_are_commands() -> None:
    assert {"wikigr query", "wikigr pack create", "wikigr eval", "wikigr mcp"} <= set(ALL)


@pytest.mark.parametrize("command", ALL)
def test_command_is_in_the_readme_reference(command: str) -> None:
    assert f"`{command} " in README or f"`{command}`" in README


@pytest.mark.parametrize("command", ALL)
def test_command_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run([*command.split()[1:], "--help"]) == 0
    assert "Usage" in capsys.readouterr().out
