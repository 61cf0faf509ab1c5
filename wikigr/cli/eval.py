"""``wikigr eval PACK``, ``wikigr eval import`` and ``wikigr eval generate``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from wikigr.cli.output import err, out, print_json
from wikigr.errors import UsageError


class _RunByDefault(TyperGroup):
    """`wikigr eval PACK ...` runs an evaluation; `import` and `generate` are subcommands. Its
    help shows the run's argument and options too (they are the options of `wikigr eval PACK`),
    then the subcommands."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return list(super().parse_args(ctx, args))

    def format_help(self, ctx: Any, formatter: Any) -> None:
        ctx.meta[_HELP] = True
        try:
            super().format_help(ctx, formatter)
        finally:
            ctx.meta[_HELP] = False

    def get_params(self, ctx: Any) -> list[Any]:
        params = list(super().get_params(ctx))
        if ctx.meta.get(_HELP):  # only while the help is drawn: the group itself parses none
            params = [*self.commands["run"].params, *params]
        return params

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        if ctx.meta.get(_HELP):
            return ["PACK", "[OPTIONS]", "|", "COMMAND", "[ARGS]..."]
        return list(super().collect_usage_pieces(ctx))


_HELP = "wikigr.eval.help"


app = typer.Typer(
    cls=_RunByDefault,
    # Help text is rich markup (typer's rich mode): "\\[" keeps a bracket that is not a tag.
    help="Evaluate a pack: retrieval recall@k, hit@k, MRR, answer EM/F1, judges. "
    "Run as `wikigr eval PACK \\[options]`.",
    no_args_is_help=True,
)


def _ks(text: str) -> tuple[int, ...]:
    try:
        ks = tuple(sorted({int(k) for k in text.split(",") if k.strip()}))
    except ValueError as exc:
        raise UsageError(f"--k expects comma-separated integers, got {text!r}") from exc
    if not ks or ks[0] < 1:
        raise UsageError("--k values must be at least 1")
    return ks


@app.command("run")
def run(
    pack: Annotated[str, typer.Argument(help="Pack name or path.")],
    questions: Annotated[
        Path | None,
        typer.Option("--questions", help="A questions.jsonl (default: the pack's eval/questions.jsonl)."),
    ] = None,
    profile: Annotated[str | None, typer.Option("--profile", "-p", help="The profile to evaluate.")] = None,
    all_profiles: Annotated[bool, typer.Option("--all-profiles", help="Evaluate every profile.")] = False,
    k: Annotated[str, typer.Option("--k", help="Cut-offs for recall@k / hit@k.")] = "1,2,5,10",
    judge: Annotated[str, typer.Option("--judge", help="none, offline or claude.")] = "none",
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N questions.")] = None,
    fresh: Annotated[bool, typer.Option("--fresh", help="Ignore an interrupted run's progress.")] = False,
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", help="Seconds Claude may take per answer and per judgement (default 30)."),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
) -> None:
    """Run the pack's questions through a profile (or all) and score retrieval and answers."""
    from wikigr.eval.runner import EvalOptions, evaluate

    if judge not in ("none", "offline", "claude"):
        raise UsageError(f"--judge must be none, offline or claude, not {judge!r}")
    if all_profiles and profile:
        raise UsageError("give --profile or --all-profiles, not both")
    options = EvalOptions(
        profiles=[profile] if profile else [],
        all_profiles=all_profiles,
        ks=_ks(k),
        judge=judge,  # type: ignore[arg-type]  # checked above
        limit=limit,
        questions=questions,
        fresh=fresh,
        timeout=timeout,
    )
    from wikigr.cli.progress import ProgressBars

    bars = ProgressBars(enabled=err.is_terminal and not json_out)
    with bars:
        reports = evaluate(pack, options, on_progress=bars)
    if json_out:
        for note in reports.notes:
            err.print(f"Note: {note}", markup=False, highlight=False)
        print_json(
            [
                {
                    "profile": r.profile,
                    "results_file": str(r.results_file),
                    "resumed": r.resumed,
                    "summary": r.summary,
                }
                for r in reports
            ]
        )
        return
    from rich.table import Table

    ks = _ks(k)
    columns = [f"R@{x}" for x in ks] + ["MRR", "EM", "F1", "judge", "p50 ms", "p95 ms", "tokens"]
    table = Table("profile", "questions", *columns)
    for report in reports:
        s = report.summary

        def pct(value: Any) -> str:
            return "-" if value is None else f"{100 * value:.1f}"

        row = [pct(s[f"recall@{x}"]) for x in ks]
        row += [pct(s["mrr"]), pct(s["exact_match"]), pct(s["f1"]), pct(s["judge_accuracy"])]
        row += [
            f"{s['latency_p50_ms']:.0f}",
            f"{s['latency_p95_ms']:.0f}",
            str(s["input_tokens"] + s["output_tokens"]),
        ]
        table.add_row(report.profile, f"{s['retrieval_scored']}/{s['questions']}", *row)
    out.print(table)
    for report in reports:
        s = report.summary
        notes = []
        if s["gold_not_in_pack"]:
            notes.append(f"{s['gold_not_in_pack']} question(s) have gold sources that are not in the pack")
        if s["no_gold"]:
            notes.append(f"{s['no_gold']} without gold sources (answers only)")
        if report.resumed:
            notes.append(f"resumed {report.resumed} question(s) from an interrupted run")
        suffix = f" ({'; '.join(notes)})" if notes else ""
        out.print(f"{report.profile}: {report.results_file}{suffix}", markup=False)
    for note in reports.notes:
        out.print(f"Note: {note}", markup=False, highlight=False)


@app.command("import")
def import_(
    pack: Annotated[str, typer.Argument(help="Pack name or path.")],
    source: Annotated[Path, typer.Argument(help="A data set file (JSON or JSONL).")],
    fmt: Annotated[str, typer.Option("--format", help="musique, hotpotqa, 2wiki or conala.")],
    replace: Annotated[
        bool, typer.Option("--replace", help="Replace the pack's questions instead of adding.")
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
) -> None:
    """Import gold-labelled questions into the pack's eval/questions.jsonl."""
    from wikigr.eval.questions import import_questions, load_questions, write_questions
    from wikigr.pack import pack as layout
    from wikigr.pack.pack import open_pack

    opened = open_pack(pack)
    target = opened.path / layout.QUESTIONS_FILE
    existing = [] if replace or not target.is_file() else load_questions(target)
    imported = import_questions(source, fmt)
    known = {q.id for q in existing}
    added = [q for q in imported if q.id not in known]
    write_questions(target, existing + added)
    if json_out:
        print_json(
            {
                "added": len(added),
                "skipped_existing": len(imported) - len(added),
                "total": len(existing) + len(added),
            }
        )
    else:
        out.print(
            f"Added {len(added)} question(s) to {target} ({len(existing) + len(added)} in all).", markup=False
        )


@app.command("generate")
def generate(
    pack: Annotated[str, typer.Argument(help="Pack name or path.")],
    n: Annotated[int, typer.Option("--n", min=1, max=1000, help="Questions to generate.")] = 50,
    seed: Annotated[int, typer.Option("--seed", help="Seed for sampling sections.")] = 0,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
) -> None:
    """With Claude: questions drawn from sampled sections, appended to eval/questions.jsonl."""
    from wikigr.eval.generate import generate_questions

    report = generate_questions(pack, n=n, seed=seed)
    if json_out:
        print_json(report)
    else:
        out.print(
            f"Added {report['added']} question(s) ({report['duplicates']} duplicates dropped, "
            f"{report['failed']} unusable replies) to {report['path']}; "
            f"Claude: {report['usage']['calls']} call(s), {report['usage']['input_tokens']} in / "
            f"{report['usage']['output_tokens']} out tokens.",
            markup=False,
        )
