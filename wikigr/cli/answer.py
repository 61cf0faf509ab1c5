"""What ``wikigr query`` does, without typer: :func:`answer`, and :func:`fast_query`, the parser of
a plain ``wikigr query PACK QUESTION [options]`` that lets :func:`wikigr.cli.run` skip typer for it
(see wikigr/cli/__init__.py). The options are those of the typer command in wikigr/cli/query.py; a
test checks that the two agree."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from typing import Any

from wikigr.cli.output import err, out, print_json, printable, styled
from wikigr.cli.plain import plain_args


def answer(
    pack: str,
    question: str,
    profile: str | None = None,
    enable: list[str] | None = None,
    disable: list[str] | None = None,
    top_k: int | None = None,
    model: str | None = None,
    fallback: bool = False,
    trace: bool = False,
    json_out: bool = False,
    timeout: float | None = None,
    passages: bool = False,
) -> None:
    """Answer a question from a pack, citing the passages it used (the body of ``wikigr query``):
    the answer, then the sources as ``[n] title › section  URL`` (with ``passages``, each followed
    by its whole passage; when several packs answered, each source starts with its pack's name),
    then the packs of a set that were left out, and why.

    ``top_k`` None: the pack's (kg_config.json), else 5. When no stage answers (``--disable
    synthesize``), the text output says so in place of the answer; the JSON has ``answer`` ""
    and ``trace.answer_mode`` "none"."""
    from wikigr.errors import UsageError

    if not question.strip():
        raise UsageError("the question is empty")
    asked = {"pack": pack, "question": question, "profile": profile, "enable": enable, "disable": disable}
    data = _answered(asked, top_k, model, fallback, timeout)
    trace_data: dict[str, Any] = data["trace"]
    for entry in trace_data["stages"]:  # synthesize, or the router when the OpenML tools answered
        detail: dict[str, Any] = entry.get("detail") or {}
        why = str(detail.get("why", ""))
        if why.startswith("Claude failed"):
            then = detail.get("fallback", "the answer below is extractive")
            err.print(f"Warning: {why}; {then}.", markup=False, highlight=False)
    for line in _notices(trace_data["stages"]):
        err.print(line, markup=False, highlight=False)
    if json_out:
        print_json(data)
    else:
        if trace_data.get("answer_mode") == "none":
            out.print(f"No answer: {_why_no_answer(disable)}; the sources are the passages retrieved.")
        else:
            out.print(printable(data["answer"]), highlight=False)
        out.print()
        out.print(styled("[bold]Sources[/]"))
        several = "packs" in trace_data  # several packs answered: name each source's
        for n, source in enumerate(data["sources"], 1):
            title, section = source["title"], source["section"]
            where = f"{title} › {section}" if section not in ("", title) else title
            related = " (related)" if source["related"] else ""
            pack_name = f"{source['pack']}: " if several else ""
            line = printable(f"[{n}] {pack_name}{where}{related}  {source['url']}")
            out.print(line, markup=False, highlight=False)
            if passages:
                out.print(printable(source["text"].strip()) + "\n", markup=False, highlight=False)
        for entry in trace_data.get("packs", []):  # packs of the set left out, and why
            if entry.get("left_out"):
                line = printable(f"Not searched: {entry['pack']} ({entry['why']})")
                out.print(line, markup=False, highlight=False)
    if trace:
        from rich.table import Table

        table = Table("stage", "ms", "in", "out", "top scores", "note", title=f"profile {data['profile']}")
        for entry, name in _trace_rows(trace_data["stages"]):
            skipped = entry.get("skipped")
            detail = entry.get("detail") or {}
            note = (
                f"skipped: {skipped}"
                if skipped
                else ", ".join(f"{key}={value}" for key, value in detail.items())
            )
            scores = ", ".join(f"{s:.3f}" for s in entry["top_scores"])
            table.add_row(
                name,
                f"{entry['ms']:.1f}",
                str(entry["in"]),
                str(entry["out"]),
                scores,
                printable(note),
            )
        err.print(table)
        usage = trace_data.get("usage")
        if usage:
            err.print(
                f"Claude: {usage['calls']} call(s), {usage['input_tokens']} in / "
                f"{usage['output_tokens']} out tokens, ~${usage['cost_usd']:.4f}",
                markup=False,
            )


def _answered(
    asked: dict[str, Any], top_k: int | None, model: str | None, fallback: bool, timeout: float | None
) -> dict[str, Any]:
    """The answer to ``asked`` (pack, question, profile, enable, disable) as its JSON
    (``AgentResult.to_json``): the query worker's when one answers (wikigr/worker.py: no Claude,
    no --model or --timeout, which only Claude reads), else from an agent opened here — and then a
    worker starts for the next question."""
    import os

    from wikigr import worker

    path = worker.socket_path() if worker.enabled() and model is None and timeout is None else None
    if path is not None:
        reply = worker.ask({"op": "query", "cwd": os.getcwd(), "args": {**asked, "top_k": top_k}}, path)
        if reply is not None and "error" in reply:
            from wikigr.errors import WikigrError

            failure = WikigrError(str(reply["error"]))
            failure.exit_code = int(reply.get("exit_code", 1))
            raise failure
        if reply is not None:
            result: dict[str, Any] = reply["result"]
            return result
    _load_model_meanwhile()
    from wikigr.packset import open_agent

    with open_agent(
        asked["pack"],
        profile=asked["profile"],
        enable=asked["enable"],
        disable=asked["disable"],
        model=model,
        top_k=top_k,
        fallback=fallback,
        timeout=timeout,
    ) as agent:
        answered = agent.query(asked["question"]).to_json()
    worker.start(path)
    return answered


def _trace_rows(stages: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str]]:
    """The rows of the trace table: each stage, and after a router's row the stages each of its
    attempts ran (``└ vector (hybrid)``); the router's note lists its attempts without them."""
    rows: list[tuple[dict[str, Any], str]] = []
    for entry in stages:
        detail = entry.get("detail") or {}
        attempts = detail.get("attempts") if isinstance(detail, dict) else None
        if not isinstance(attempts, list) or not any(isinstance(a, dict) and "stages" in a for a in attempts):
            rows.append((entry, entry["stage"]))
            continue
        short = [{k: v for k, v in a.items() if k != "stages"} for a in attempts]
        rows.append(({**entry, "detail": {**detail, "attempts": short}}, entry["stage"]))
        for attempt in attempts:
            for inner in attempt.get("stages", []):
                rows.append((inner, f"  └ {inner['stage']} ({attempt.get('strategy', '')})"))
    return rows


def _notices(stages: list[dict[str, Any]]) -> list[str]:
    """One line for each stage the user configured that was skipped (its trace entry's detail has
    ``notice``: the cross_encoder with a model that is not here), once however many packs ran it."""
    lines = [
        printable(f"note: {entry['stage'].rsplit('/', 1)[-1]} skipped: {entry['skipped']}")
        for entry, _ in _trace_rows(stages)
        if entry.get("skipped") and (entry.get("detail") or {}).get("notice")
    ]
    return list(dict.fromkeys(lines))


def _why_no_answer(disable: list[str] | None) -> str:
    if "synthesize" in (disable or []):
        return "synthesize was disabled"
    return "no stage of the profile answers"


def _load_model_meanwhile() -> None:
    """Start loading the default embedder now, in a thread: onnxruntime builds the session without
    the GIL while this thread imports the rest (the agent then takes the model from the process
    cache, or waits for it). A pack with another embedder only makes this wasted work; a failure
    here is the agent's to report."""
    import threading

    def load() -> None:
        from wikigr.embed import DEFAULT_EMBEDDER, get_embedder

        with contextlib.suppress(Exception):
            get_embedder(DEFAULT_EMBEDDER)

    threading.Thread(target=load, name="wikigr-model", daemon=False).start()


# option -> parameter of answer(); flags take no value; MULTIPLE ones may repeat
OPTIONS = {
    "--profile": "profile",
    "-p": "profile",
    "--enable": "enable",
    "--disable": "disable",
    "--top-k": "top_k",
    "-k": "top_k",
    "--model": "model",
    "--timeout": "timeout",
}
FLAGS = {"--fallback": "fallback", "--trace": "trace", "--json": "json_out", "--passages": "passages"}
MULTIPLE = frozenset({"enable", "disable"})
TOP_K = range(1, 101)
_INT = re.compile(r"[1-9][0-9]{0,2}")
_SECONDS = re.compile(r"[0-9]{1,6}(\.[0-9]{1,6})?")


def fast_query(args: list[str]) -> Callable[[], None] | None:
    """For a plainly valid ``query PACK QUESTION [options]`` (long options as ``--name VALUE`` or
    ``--name=VALUE``, short ones as ``-p VALUE``, each at most once but ``--enable``/``--disable``;
    no value starting with ``-``; ``--top-k`` from 1 to 100), the call of :func:`answer` it asks
    for; None for anything else (typer then parses it, and reports what is wrong)."""
    if not args or args[0] != "query":
        return None
    parsed = plain_args(args[1:], OPTIONS, FLAGS, MULTIPLE)
    if parsed is None:
        return None
    positional, values = parsed
    if len(positional) != 2:
        return None
    if "top_k" in values:
        if not _INT.fullmatch(values["top_k"]) or int(values["top_k"]) not in TOP_K:
            return None
        values["top_k"] = int(values["top_k"])
    if "timeout" in values:
        if not _SECONDS.fullmatch(values["timeout"]) or float(values["timeout"]) <= 0:
            return None
        values["timeout"] = float(values["timeout"])
    pack, question = positional
    return lambda: answer(pack, question, **values)
