"""``wikigr pack create NAME --openml ... | --openml-export FILE``: build an OpenML pack."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wikigr.cli.output import out, print_json, styled


def create_openml_pack(
    name: str,
    *,
    exports: list[Path],
    qualities: list[Path],
    out_dir: Path | None = None,
    description: str = "",
    measure: str | None = None,
    licence: str = "",
    fresh: bool = False,
    json_out: bool = False,
    quiet: bool = False,
    api: Any = None,
    embedder: str | None = None,
) -> None:
    from wikigr.cli.progress import ProgressBars
    from wikigr.openml.build import OpenMLBuildOptions, build_openml_pack
    from wikigr.pack.kind import pack_kind

    options = OpenMLBuildOptions(description=description, measure=measure, licence=licence, fresh=fresh)
    if embedder is not None:
        options.embedder = embedder
    bars = ProgressBars(enabled=not json_out, quiet=quiet)
    with bars:
        report = build_openml_pack(
            name,
            exports=exports,
            qualities=qualities,
            api=api,
            out=out_dir,
            options=options,
            on_progress=bars,
        )
    manifest = report.manifest
    stats = {k: getattr(manifest.stats, k) for k in pack_kind(manifest.source_kind).stats}
    record = manifest.openml
    assert record is not None
    if json_out:
        print_json(
            {
                "path": str(report.path),
                "name": manifest.name,
                "source_kind": manifest.source_kind,
                "stats": stats,
                "rows": record.rows,
                "malformed_rows": record.malformed_rows,
                "malformed_examples": record.malformed_examples,
                "notes": record.notes,
                "requests": report.requests,
                "cached_responses": report.cached,
                "seconds": {k: round(v, 3) for k, v in report.seconds.items()},
            }
        )
        return
    out.print(
        styled("Built OpenML pack [bold]{}[/] at {}: ", manifest.name, report.path),
        f"{stats['runs']} runs, {stats['algorithms']} algorithms ({stats['families']} families), "
        f"{stats['datasets']} datasets, "
        f"{stats['tasks']} tasks in {report.seconds['total']:.1f}s"
        + (f" ({report.cached} responses from the cache)" if report.cached else ""),
        sep="",
    )
    if record.malformed_rows:
        out.print(styled("[yellow]{} malformed row(s) not imported; first:[/]", record.malformed_rows))
        for example in record.malformed_examples:
            out.print(f"  {example}", markup=False)
    for note in record.notes:
        out.print(f"  note: {note}", markup=False, highlight=False)
