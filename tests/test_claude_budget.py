"""The one time budget of an answer (``--timeout``, ``WIKIGR_TIMEOUT``) also bounds the router's
Claude classification and the Claude judge of ``wikigr eval``: wikigr's own Claude client against
a fake Messages API on 127.0.0.1 that accepts a request and answers too late."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fakeclaude import FakeClaude, Reply
from wikigr.cli import run

QUESTION = "How do I set a socket timeout?"


@pytest.fixture
def pack(built_pack: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "fixture"
    shutil.copytree(built_pack, copy)
    rows = [
        {"id": "q1", "question": QUESTION, "ground_truth": "settimeout"},
        {"id": "q2", "question": "How do I parse JSON?", "ground_truth": "json.loads(s)"},
    ]
    (copy / "eval" / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return copy


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = run(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def router_entry(data: dict[str, object]) -> dict[str, object]:
    stages = data["trace"]["stages"]  # type: ignore[index]
    return next(s for s in stages if s["stage"] == "router")  # type: ignore[no-any-return]


def test_a_hanging_classification_falls_back_to_the_rules_within_a_share_of_the_budget(
    pack: Path, claude_env: FakeClaude, capsys: pytest.CaptureFixture[str]
) -> None:
    claude_env.script(*[Reply.slow(60)] * 8)  # every request accepted, none answered in time
    start = time.monotonic()
    code, out, err = cli(
        capsys, "query", str(pack), QUESTION, "--profile", "routed", "--fallback", "--json", "--timeout", "3"
    )
    elapsed = time.monotonic() - start
    assert code == 0, err
    data = json.loads(out)
    # The answer kept its budget: Claude's replies would take a minute each. Retrieval and the
    # fallback come on top of it, and take seconds on a busy machine.
    assert data["trace"]["total_ms"] < 3000 + 15000 and elapsed < 3 + 30
    router = router_entry(data)
    why = router["detail"]["why"]  # type: ignore[index]
    assert "(Claude failed: no answer from Claude within the time budget" in why
    assert router["detail"]["kind"] in ("simple", "relation", "multi_hop", "global", "aggregate")  # type: ignore[index]
    assert router["ms"] < 1000 + 500  # a third of the 3 s, not all of it  # type: ignore[operator]
    # the answer was still asked for, in what was left of the budget, then fell back
    assert len(claude_env.messages_requests) >= 2
    assert data["trace"]["answer_mode"] == "extractive"
    assert err.startswith("Warning: Claude failed: no answer from Claude within the time budget of 3s")


def test_a_stuck_classification_leaves_the_answer_its_time(
    pack: Path, claude_env: FakeClaude, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only the classification hangs: the rules classify and Claude still answers in time."""
    claude_env.script(Reply.slow(60), Reply.text("Call settimeout(value) on the socket [1]."))
    code, out, err = cli(
        capsys, "query", str(pack), QUESTION, "--profile", "routed", "--json", "--timeout", "3"
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["answer"] == "Call settimeout(value) on the socket [1]."
    assert data["trace"]["answer_mode"] != "extractive"
    assert "Claude failed" in router_entry(data)["detail"]["why"]  # type: ignore[index]


JUDGE_OK = '{"grounding": 5, "reasoning": 5, "completeness": 5, "rationale": "right"}'


def test_a_hanging_claude_judge_fails_cleanly_within_its_budget_and_the_eval_resumes(
    pack: Path, claude_env: FakeClaude, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each judged answer has the budget; a judge that never answers ends the eval with one line
    within it, keeping the questions judged so far for the rerun."""
    judged: list[float] = []

    def judge_hangs_on_the_second(body: dict[str, Any]) -> Reply:
        if "You grade an answer" not in str(body.get("system")):
            return Reply.text("Use settimeout [1].")
        judged.append(time.monotonic())
        return Reply.text(JUDGE_OK) if len(judged) == 1 else Reply.slow(60)

    claude_env.respond_with(judge_hangs_on_the_second)
    code, _, err = cli(capsys, "eval", str(pack), "--judge", "claude", "--timeout", "2")
    ended = time.monotonic()
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(
        "Error: the Claude judge failed on question q2: no answer from Claude within the time budget of 2s"
    )
    assert "run the same command again to resume" in lines[0]
    assert len(judged) == 2 and ended - judged[1] < 2 + 15  # the judgement kept its budget, not 60 s

    answered = len([r for r in claude_env.messages_requests if "You grade" not in r.system])
    claude_env.respond_with(
        lambda body: Reply.text(JUDGE_OK if "You grade" in str(body.get("system")) else "x [1]")
    )
    code, out, err = cli(capsys, "eval", str(pack), "--judge", "claude", "--timeout", "2", "--json")
    assert code == 0, err
    again = len([r for r in claude_env.messages_requests if "You grade" not in r.system]) - answered
    assert again == 1  # q1 came from the progress kept; only q2 was answered again
    [report] = json.loads(out)
    assert report["resumed"] == 1 and report["summary"]["judge_accuracy"] == 1.0


def test_eval_timeout_is_checked(
    pack: Path, claude_env: FakeClaude, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli(capsys, "eval", str(pack), "--judge", "claude", "--timeout", "0")
    assert code == 2 and err.startswith("Error: the timeout must be a positive number of seconds")
