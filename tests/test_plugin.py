"""The repository as a Claude Code plugin and marketplace, checked with Claude Code's real CLI.

The CLI is the npm package @anthropic-ai/claude-code (`.ci/run` installs it when missing); its
`plugin validate`, `plugin marketplace add`, `plugin install` and `mcp list`/`mcp get` work offline.
Each test runs it with HOME in a temporary folder. The plugin's MCP server is started by the
health check through `uv run` (offline, from uv's cache) exactly as Claude Code starts it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from wikigr.skill import MAX_DESCRIPTION, parse_front_matter, render_plugin_skill

ROOT = Path(__file__).resolve().parent.parent
# uv's cache, asked at import: the tests run with HOME in a temporary folder
UV = shutil.which("uv")
UV_CACHE = subprocess.run([UV, "cache", "dir"], capture_output=True, text=True).stdout.strip() if UV else ""
CLAUDE = os.environ.get("WIKIGR_CLAUDE_CLI") or shutil.which("claude")
needs_claude = pytest.mark.skipif(
    CLAUDE is None or not UV,
    reason="Claude Code's CLI is not installed (npm install -g @anthropic-ai/claude-code; .ci/run does)",
)
# What is not part of the plugin a user installs from a clone
IGNORED = shutil.ignore_patterns(
    ".git", ".venv", "work", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", "*.pyc"
)


def test_the_plugin_files_are_current() -> None:
    """skills/wikigr/SKILL.md and the manifests' versions are what scripts/plugin.py writes."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "plugin.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    text = (ROOT / "skills" / "wikigr" / "SKILL.md").read_text(encoding="utf-8")
    assert text == render_plugin_skill()
    front = parse_front_matter(text)
    assert front["name"] == "wikigr"  # the folder's name, as Claude Code expects
    assert len(front["description"]) <= MAX_DESCRIPTION
    assert not re.search(r"[<>]", front["description"])
    for words in ("knowledge pack", "documentation", "cite", "all"):
        assert words in front["description"]
    server = json.loads((ROOT / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]["wikigr"]
    assert server["command"] == "uv" and server["args"][-2:] == ["wikigr", "mcp"]
    assert "${CLAUDE_PLUGIN_ROOT}" in server["args"]


def test_the_per_pack_skill_says_the_same_about_several_packs_and_citing(built_pack: Path) -> None:
    from wikigr.skill import HOW_TO_CITE, SEVERAL_PACKS

    pack_skill = (built_pack / "skill.md").read_text(encoding="utf-8")
    plugin_skill = render_plugin_skill()
    for shared in (SEVERAL_PACKS, HOW_TO_CITE):
        assert shared in pack_skill and shared in plugin_skill


def claude(home: Path, *args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    assert CLAUDE is not None
    env = {
        **os.environ,
        "HOME": str(home),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "UV_OFFLINE": "1",  # the server's environment comes from uv's cache, never the network
        "UV_CACHE_DIR": UV_CACHE,  # the real cache: HOME is a temporary folder here
        "MCP_TIMEOUT": "600000",  # the first start builds the server's environment (ms; a busy machine)
        "WIKIGR_HOME": str(home / ".wikigr"),
        "ANTHROPIC_API_KEY": "",
    }
    return subprocess.run([CLAUDE, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)


@pytest.fixture(scope="module")
def plugin_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository as a user's clone has it (no virtual environment, no built benchmark data)."""
    copy = tmp_path_factory.mktemp("plugin") / "wikigr"
    shutil.copytree(ROOT, copy, ignore=IGNORED)
    return copy


@needs_claude
def test_claude_validates_the_plugin_and_the_marketplace(plugin_copy: Path, tmp_path: Path) -> None:
    for target in (plugin_copy, plugin_copy / ".claude-plugin" / "plugin.json"):
        done = claude(tmp_path, "plugin", "validate", "--strict", str(target), cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Validation passed" in done.stdout


@needs_claude
def test_install_from_the_marketplace_and_the_server_connects(plugin_copy: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    shutil.copytree(ROOT / "packs" / "pydocs", home / ".wikigr" / "packs" / "pydocs")
    done = claude(home, "plugin", "marketplace", "add", str(plugin_copy), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    done = claude(home, "plugin", "install", "wikigr@wikigr", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    installed = json.loads((home / ".claude" / "plugins" / "installed_plugins.json").read_text())
    [entry] = installed["plugins"]["wikigr@wikigr"]
    root = Path(entry["installPath"])
    assert (root / "skills" / "wikigr" / "SKILL.md").read_text() == render_plugin_skill()
    done = claude(home, "mcp", "list", cwd=tmp_path, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("plugin:wikigr:wikigr"))
    assert "wikigr mcp" in line and "Connected" in line, done.stdout
    done = claude(home, "mcp", "get", "plugin:wikigr:wikigr", cwd=tmp_path, timeout=900)
    assert "Connected" in done.stdout, done.stdout + done.stderr
