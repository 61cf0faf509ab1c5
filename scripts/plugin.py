"""Write the Claude Code plugin's generated files: ``skills/wikigr/SKILL.md`` (from
wikigr/skill.py) and the version in ``.claude-plugin/plugin.json`` and ``marketplace.json`` (from
wikigr/__init__.py). ``--check`` only says whether they are current (exit 1 if not).

    uv run python scripts/plugin.py [--check]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from wikigr import __version__
from wikigr.skill import render_plugin_skill

ROOT = Path(__file__).resolve().parent.parent


def expected() -> dict[Path, str]:
    files = {ROOT / "skills" / "wikigr" / "SKILL.md": render_plugin_skill()}
    plugin = json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text(encoding="utf-8"))
    plugin["version"] = __version__
    files[ROOT / ".claude-plugin" / "plugin.json"] = json.dumps(plugin, indent=2) + "\n"
    market = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text(encoding="utf-8"))
    market["metadata"]["version"] = __version__
    for entry in market["plugins"]:
        entry["version"] = __version__
    files[ROOT / ".claude-plugin" / "marketplace.json"] = json.dumps(market, indent=2) + "\n"
    return files


def main(argv: list[str]) -> int:
    stale = [p for p, text in expected().items() if not p.is_file() or p.read_text("utf-8") != text]
    if "--check" in argv:
        for path in stale:
            print(f"stale: {path.relative_to(ROOT)} (run: uv run python scripts/plugin.py)")
        return 1 if stale else 0
    for path, text in expected().items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    print("wrote " + ", ".join(str(p.relative_to(ROOT)) for p in expected()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
