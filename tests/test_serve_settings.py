"""The Settings view's routes (wikigr/serve/settings.py) over real HTTP: a pack's kg_config.json
read, changed (and used by the next answer), refused when the validator refuses it; Claude's
configuration (never the key); the caches of $WIKIGR_HOME/cache/ listed and cleared."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.test_serve import QUESTION, running
from wikigr.serve.app import create_app


@pytest.fixture
def pack(built_pack: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "fixture"
    shutil.copytree(built_pack, copy)
    return copy


@pytest.fixture
def api(pack: Path) -> Iterator[httpx.Client]:
    with running(create_app([pack])) as url, httpx.Client(base_url=url + "/api/v1", timeout=600) as client:
        yield client


def _one_line_error(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    data = response.json()
    assert set(data) == {"error"} and "\n" not in data["error"]
    return str(data["error"])


def test_a_saved_config_is_used_by_the_next_answer(api: httpx.Client, pack: Path) -> None:
    shown = api.get("/packs/fixture/config").json()
    assert shown["pack"] == "fixture" and shown["effective"]["profile"] == "auto"
    assert shown["embedder"]["dimension"] > 0 and "baseline" in shown["profiles"]
    first = api.post("/query", json={"pack": "fixture", "question": QUESTION}).json()
    assert first["profile"] == "auto"  # the agent is open now, with the pack's default profile

    saved = api.put("/packs/fixture/config", json={**shown["config"], "profile": "baseline", "top_k": 3})
    assert saved.status_code == 200, saved.text
    assert saved.json()["effective"]["profile"] == "baseline" and saved.json()["effective"]["top_k"] == 3
    on_disk = json.loads((pack / "kg_config.json").read_text())
    assert on_disk["profile"] == "baseline" and on_disk["top_k"] == 3
    assert not [p.name for p in pack.iterdir() if p.name.endswith(".tmp")]  # no temporary file left

    after = api.post("/query", json={"pack": "fixture", "question": QUESTION}).json()
    assert after["profile"] == "baseline"  # the open agent was refreshed
    assert after["trace"]["stages"][0]["stage"] == "vector"
    info = api.get("/packs/fixture").json()
    assert info["profile"] == "baseline"


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"profile": "auto", "colour": "blue"}, "kg_config.json: colour: unknown field"),
        ({"profile": "nope"}, "kg_config.json: profile: unknown profile 'nope'"),
        ({"top_k": 0}, "kg_config.json: top_k must be a positive integer"),
        ({"stages": {"gate": {"bogus": 1}}}, "kg_config.json: stages.gate.bogus: unknown field"),
    ],
)
def test_a_config_the_validator_refuses_is_a_400_and_the_file_is_unchanged(
    api: httpx.Client, pack: Path, config: dict[str, object], message: str
) -> None:
    path = pack / "kg_config.json"
    before = path.read_bytes() if path.exists() else None
    error = _one_line_error(api.put("/packs/fixture/config", json=config), 400)
    assert error.startswith(message), error
    assert (path.read_bytes() if path.exists() else None) == before


def test_the_validator_says_the_same_of_the_file(pack: Path) -> None:
    """What the route refuses, ``pack validate`` refuses with the same line."""
    from wikigr.validate import validate_pack

    (pack / "kg_config.json").write_text(json.dumps({"profile": "auto", "colour": "blue"}))
    report = validate_pack(pack)
    failed = [c for c in report.checks if not c.ok]
    assert [c.name for c in failed] == ["kg_config"] and failed[0].detail.endswith("colour: unknown field")


@pytest.mark.own_engine_caches  # lists and clears the home's caches
def test_claude_and_the_caches_listed_and_cleared(api: httpx.Client, wikigr_home: Path) -> None:
    api.post("/query", json={"pack": "fixture", "question": QUESTION})  # fills the caches
    pages = wikigr_home / "cache" / "pages"
    (wikigr_home / "cache" / "e5").mkdir(parents=True, exist_ok=True)
    (wikigr_home / "cache" / "e5" / "model.bin").write_bytes(b"x" * 1000)
    settings = api.get("/settings").json()
    assert settings["claude"] is False and settings["model"] and "key" not in json.dumps(settings).lower()
    caches = {c["name"]: c for c in settings["caches"]}
    assert caches["e5"] == {"name": "e5", "files": 1, "bytes": 1000}
    assert pages.is_dir() and caches["pages"]["files"] >= 1 and caches["pages"]["bytes"] > 0

    cleared = api.delete("/caches/pages")
    assert cleared.status_code == 200, cleared.text
    assert cleared.json()["cleared"]["files"] == caches["pages"]["files"]
    assert not pages.exists() and (wikigr_home / "cache" / "e5" / "model.bin").exists()
    assert "pages" not in {c["name"] for c in api.get("/settings").json()["caches"]}
    assert api.post("/query", json={"pack": "fixture", "question": QUESTION}).status_code == 200

    for name in ("nope", "..", "%2e%2e", "e5%2fmodel.bin"):
        response = api.delete(f"/caches/{name}")
        assert response.status_code == 404, (name, response.text)
    assert (wikigr_home / "cache" / "e5" / "model.bin").exists()


def test_claude_configured_is_said_but_never_its_key(pack: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-value-1234")
    monkeypatch.setenv("WIKIGR_MODEL", "claude-test-model")
    with running(create_app([pack])) as url:
        response = httpx.get(url + "/api/v1/settings")
        config = httpx.get(url + "/api/v1/packs/fixture/config")
    assert response.json()["claude"] is True and response.json()["model"] == "claude-test-model"
    assert response.json()["model_from"] == "WIKIGR_MODEL"
    assert config.json()["effective"]["model"] == "claude-test-model"
    assert "sk-ant" not in response.text and "sk-ant" not in config.text
