"""``wikigr pack ...``: create, list, info, validate."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer

from wikigr.cli.output import err, out, print_json, printable, styled
from wikigr.errors import UsageError
from wikigr.pack.pack import open_pack, pack_rows, packs_home, resolve_pack_path

app = typer.Typer(
    help="Build, list, inspect, validate, share and update knowledge packs.", no_args_is_help=True
)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")]
QuietOpt = Annotated[
    bool,
    typer.Option(
        "--quiet", "-q", help="No progress on stderr (bars on a terminal, else a line every few seconds)."
    ),
]


@app.command("create")
def create(
    name: Annotated[
        str, typer.Argument(help="Pack name: lowercase letters, digits, single hyphens (e.g. my-docs).")
    ],
    urls: Annotated[
        Path | None,
        typer.Option(
            "--urls",
            help="A urls.txt file: one URL, file or folder per line (a relative path: from the "
            "file's folder), # comments.",
        ),
    ] = None,
    url: Annotated[
        list[str] | None,
        typer.Option("--url", help="A URL, file URL, local file or folder (repeatable)."),
    ] = None,
    corpus: Annotated[
        Path | None,
        typer.Option("--corpus", help="A JSON passage corpus: [{title, text}] or {title: text}."),
    ] = None,
    crawl: Annotated[
        list[str] | None,
        typer.Option(
            "--crawl",
            metavar="URL",
            help="Crawl from this page (repeatable): its links within its folder, and the site's "
            "sitemaps, breadth first; robots.txt honoured (docs/crawl.md).",
        ),
    ] = None,
    max_pages: Annotated[
        int, typer.Option("--max-pages", min=1, help="At most this many pages crawled.")
    ] = 1000,
    depth: Annotated[
        int, typer.Option("--depth", min=0, help="Links followed at most this deep from a seed.")
    ] = 5,
    include: Annotated[
        list[str] | None,
        typer.Option(
            "--include",
            metavar="PATTERN",
            help="Crawl these URLs too: a URL prefix, or a pattern with * (repeatable).",
        ),
    ] = None,
    exclude: Annotated[
        list[str] | None,
        typer.Option(
            "--exclude",
            metavar="PATTERN",
            help="Never crawl these URLs: a prefix or a pattern with * (repeatable).",
        ),
    ] = None,
    delay: Annotated[
        float, typer.Option("--delay", min=0.0, max=3600.0, help="Seconds between two requests to one site.")
    ] = 0.0,
    output: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Where to write the pack (default: the packs home)."),
    ] = None,
    description: Annotated[str, typer.Option(help="One-line description of the pack.")] = "",
    workers: Annotated[int, typer.Option(min=1, max=64, help="Concurrent fetches.")] = 8,
    timeout: Annotated[float, typer.Option(min=0.1, help="Per-request timeout, seconds.")] = 20.0,
    retries: Annotated[int, typer.Option(min=0, max=10, help="Retries on 429/5xx/timeouts.")] = 3,
    max_mb: Annotated[float, typer.Option("--max-mb", min=0.001, help="Size cap per document, MiB.")] = 10.0,
    fresh: Annotated[
        bool, typer.Option("--fresh", help="Ignore what an interrupted build left; start over.")
    ] = False,
    public_url: Annotated[
        list[str] | None,
        typer.Option(
            "--public-url",
            metavar="LOCAL=PUBLIC",
            help="Cite pages fetched under the LOCAL prefix (e.g. a local mirror) under PUBLIC.",
        ),
    ] = None,
    openml: Annotated[
        bool,
        typer.Option("--openml", help="Build from OpenML's REST API: --study, --tasks or --max-datasets."),
    ] = False,
    study: Annotated[int | None, typer.Option("--study", min=1, help="OpenML study (or suite) id.")] = None,
    tasks: Annotated[str | None, typer.Option("--tasks", help="OpenML task ids, e.g. 3,31,37.")] = None,
    max_datasets: Annotated[
        int | None, typer.Option("--max-datasets", min=1, help="At most this many datasets (tasks).")
    ] = None,
    max_runs_per_dataset: Annotated[
        int | None, typer.Option("--max-runs-per-dataset", min=1, help="At most this many runs per dataset.")
    ] = None,
    openml_url: Annotated[
        str, typer.Option("--openml-url", help="OpenML server or mirror (default https://www.openml.org).")
    ] = "https://www.openml.org",
    openml_export: Annotated[
        list[Path] | None,
        typer.Option("--openml-export", help="An OpenML result export, CSV or ARFF (repeatable)."),
    ] = None,
    openml_qualities: Annotated[
        list[Path] | None,
        typer.Option(
            "--openml-qualities", help="Dataset qualities (meta-features), CSV or ARFF (repeatable)."
        ),
    ] = None,
    measure: Annotated[
        str | None, typer.Option("--measure", help="OpenML evaluation measure (default predictive_accuracy).")
    ] = None,
    licence: Annotated[
        str, typer.Option("--licence", help="Licence of the OpenML data, noted in the pack.")
    ] = "",
    no_graph: Annotated[
        bool, typer.Option("--no-graph", help="Skip the entity graph (entities, facts, relations).")
    ] = False,
    graph_beta: Annotated[
        float,
        typer.Option(
            "--graph-beta", min=0.0, max=1.0, help="Share of chunks (skeleton) that get the full extraction."
        ),
    ] = 0.25,
    embedder: Annotated[
        str | None,
        typer.Option(
            "--embedder",
            metavar="NAME",
            help="Embedding model: all-MiniLM-L6-v2-int8 (built in, English), multilingual (built in, "
            "~100 languages), st:MODEL (sentence-transformers: a Hugging Face name or a local folder; "
            "the models extra) or onnx:FOLDER (model.onnx + tokenizer.json). Default: $WIKIGR_EMBEDDER, "
            "else by the documents' languages: English ones, all-MiniLM-L6-v2-int8; others, multilingual "
            "(docs/languages.md).",
        ),
    ] = None,
    ray: Annotated[
        bool,
        typer.Option(
            "--ray",
            help="Fetch, parse, chunk, embed and extract on Ray: $RAY_ADDRESS's cluster, else a local "
            "Ray on all cores (needs the ray extra; docs/scale.md).",
        ),
    ] = False,
    shards: Annotated[
        int,
        typer.Option("--shards", min=1, max=1024, help="Write the pack in N stores, queried as one pack."),
    ] = 1,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Build a pack from document URLs (http(s), file URLs, local folders), or from OpenML results
    (--openml-export FILE: offline exports; see docs/openml.md)."""
    api_options = study is not None or tasks is not None or max_datasets or max_runs_per_dataset
    if api_options and not openml:
        raise UsageError("--study, --tasks, --max-datasets and --max-runs-per-dataset go with --openml")
    if openml or openml_export or openml_qualities:
        if openml and (openml_export or openml_qualities):
            raise UsageError("give --openml (the REST API) or --openml-export (files), not both")
        if urls is not None or url or corpus is not None or crawl:
            raise UsageError(
                "OpenML packs are built from OpenML only, not with --urls/--url/--crawl/--corpus"
            )
        if ray or shards != 1:
            raise UsageError("--ray and --shards are for document packs, not OpenML packs")
        from wikigr.cli.openml import create_openml_pack

        api = None
        if openml:
            from wikigr.openml.fetch import ApiSelection, parse_task_ids

            api = ApiSelection(
                base_url=openml_url,
                study=study,
                tasks=parse_task_ids(tasks) if tasks is not None else [],
                max_datasets=max_datasets,
                max_runs_per_dataset=max_runs_per_dataset,
                measure=measure or "predictive_accuracy",
                workers=min(workers, 16),
                timeout=timeout,
                retries=retries,
            )
        create_openml_pack(
            name,
            api=api,
            exports=openml_export or [],
            qualities=openml_qualities or [],
            out_dir=output,
            description=description,
            measure=measure,
            licence=licence,
            fresh=fresh,
            json_out=json_out,
            quiet=quiet,
            embedder=embedder,
        )
        return
    if measure is not None or licence:
        raise UsageError("--measure and --licence are for OpenML packs (--openml-export, --openml)")
    from wikigr.build import BuildOptions, build_pack  # not on the query path
    from wikigr.cli.progress import ProgressBars
    from wikigr.sources.fetch import FetchOptions
    from wikigr.sources.urls import load_url_list, normalize_source

    sources: list[str] = []
    url_list: str | None = None
    if urls is not None:
        if not urls.exists():
            raise UsageError(f"no such file: {urls}")
        listed = load_url_list(urls)
        sources.extend(listed.sources)
        url_list = listed.text
    sources.extend(normalize_source(u) for u in url or [])
    if not sources and corpus is None and not crawl:
        raise UsageError("give --urls FILE, --url URL, --crawl URL or --corpus FILE")
    if not crawl and (include or exclude):
        raise UsageError("--include and --exclude go with --crawl")
    if url and urls is not None:
        url_list = None  # the pack's urls.txt then lists every source
    rewrites: list[tuple[str, str]] = []
    for item in public_url or []:
        local, sep, public = item.partition("=")
        if not sep or not local or not public:
            raise UsageError(f"--public-url expects LOCAL=PUBLIC, got {item!r}")
        rewrites.append((local, public))
    options = BuildOptions(
        description=description,
        public_urls=rewrites,
        fetch=FetchOptions(
            workers=workers, timeout=timeout, retries=retries, max_bytes=int(max_mb * 1024 * 1024)
        ),
        fresh=fresh,
        graph=not no_graph,
    )
    if crawl:
        from wikigr.sources.crawl import CrawlOptions

        options.crawl = CrawlOptions(
            tuple(crawl), max_pages, depth, tuple(include or ()), tuple(exclude or ()), delay
        )
    if embedder is not None:
        options.embedder, options.embedder_chosen = embedder, True
    options.graph_options.beta = graph_beta
    if ray:
        from wikigr.build.ray import RayOptions, require_ray

        require_ray()  # before anything is read or fetched: a one-line error without the extra
        options.ray = RayOptions()
    llm = None
    if not no_graph:
        from wikigr.llm import AnthropicLLM

        llm = AnthropicLLM.from_env()  # None without ANTHROPIC_API_KEY: zero LLM calls
        options.llm = llm
    bars = ProgressBars(enabled=not json_out, quiet=quiet)

    def note(text: str) -> None:  # above the progress bars, as the build makes its choice
        err.print(text, markup=False, highlight=False)

    try:
        with bars:
            report = build_pack(
                name,
                sources,
                out=output,
                options=options,
                on_progress=bars,
                url_list=url_list,
                corpus=corpus,
                shards=shards,
                on_note=note,
            )
    finally:
        if llm is not None:
            llm.close()
    manifest = report.manifest
    if json_out:
        print_json(
            {
                "path": str(report.path),
                "name": manifest.name,
                "stats": asdict(manifest.stats),
                "embedder": manifest.embedder.name,
                "languages": manifest.languages,
                "notes": report.notes,
                "shards": [asdict(shard) for shard in manifest.shards],
                "failed": [{"url": u, "error": e} for u, e in report.failed],
                "resumed": report.resumed,
                "fetched": report.fetched,
                "chunks_embedded": report.chunks_embedded,
                "seconds": {k: round(v, 3) for k, v in report.seconds.items()},
                "graph": report.graph.to_json() if report.graph else None,
                "crawl": report.crawl.to_json() if report.crawl else None,
            }
        )
        return
    stats = manifest.stats
    out.print(
        styled("Built pack [bold]{}[/] at {}: ", manifest.name, report.path),
        f"{stats.articles} articles, {stats.sections} sections, {stats.chunks} chunks, {stats.links} links "
        f"in {report.seconds['total']:.1f}s"
        + (f" (resumed {report.resumed} documents)" if report.resumed else "")
        + (f" in {len(manifest.shards)} shards" if manifest.shards else ""),
        sep="",
    )
    if set(manifest.languages) - {"en"}:  # an English pack's output is as it was
        from wikigr.info import language_summary

        out.print(
            f"Languages: {language_summary(manifest.languages)}; embedder {manifest.embedder.name}",
            markup=False,
        )
    if report.graph is not None:
        g = report.graph
        out.print(
            f"Entity graph: {g.entities} entities, {g.facts} facts, {g.relations} relations; "
            f"skeleton {g.skeleton_chunks} chunks by {g.extractor}; "
            f"LLM calls {g.llm_calls} ({g.input_tokens} in / {g.output_tokens} out tokens)",
            markup=False,
        )
        if g.note:
            err.print(f"note: {g.note}", markup=False, highlight=False)
    if report.crawl is not None:
        counts = report.crawl.counts()
        why = ", ".join(f"{n} {reason}" for reason, n in sorted(report.crawl.skipped_counts.items()))
        out.print(
            f"Crawl: {counts['fetched']} pages fetched ({counts['restored']} from the interrupted crawl), "
            f"{counts['failed']} failed, {counts['skipped']} skipped" + (f": {why}" if why else ""),
            markup=False,
        )
    if report.failed:
        out.print(styled("[yellow]{} source(s) failed:[/]", len(report.failed)))
        for failed_url, error in report.failed:
            out.print(f"  {failed_url}: {error}", markup=False)


@app.command("list")
def list_(json_out: JsonOpt = False) -> None:
    """List the packs in the packs home ($WIKIGR_HOME/packs)."""
    rows = pack_rows()
    if json_out:
        print_json({"home": str(packs_home()), "packs": rows})
        return
    if not rows:
        out.print(f"No packs in {packs_home()}.", markup=False)
        return
    from rich.table import Table

    table = Table("name", "kind", "size", "created", "description")
    for row in rows:
        if row["ok"]:
            cells = [row["name"], row["source_kind"], row["size"], row["created_at"], row["description"]]
            table.add_row(*(printable(c) for c in cells))
        else:
            table.add_row(
                printable(row["name"]), "-", "-", "-", styled("[red]broken: {}[/]", printable(row["error"]))
            )
    out.print(table)


@app.command("info")
def info(
    pack: Annotated[str, typer.Argument(help="Pack name or path.")],
    json_out: JsonOpt = False,
) -> None:
    """Show a pack's manifest, graph statistics and vector search path (a pack in shards: the
    statistics summed over its shards)."""
    from wikigr.info import pack_info
    from wikigr.pack.kind import pack_kind
    from wikigr.pack.union import open_pack_store

    opened = open_pack(pack)
    with open_pack_store(opened) as store:
        data = pack_info(opened, store)
    if json_out:
        print_json(data)
        return
    from rich.table import Table

    m = opened.manifest
    kind = pack_kind(m.source_kind)
    stats, vector_path = data["store_stats"], data["vector_search"]
    table = Table(show_header=False, box=None)
    rows = [
        ("name", m.name),
        ("path", data["path"]),
        ("description", m.description),
        ("created", m.created_at),
        ("format / schema", f"{m.format_version} / {m.schema_version}"),
        ("source kind", m.source_kind),
        ("embedder", f"{m.embedder.name} ({m.embedder.dimension}-d, {m.embedder.backend})"),
        ("embedder digest", m.embedder.digest or "not recorded (built before wikigr recorded it)"),
        ("vector search", "HNSW index" if vector_path == "hnsw" else "exact cosine (no VECTOR extension)"),
        *_language_rows(data),
        *_definition_rows(data),
        *kind.info_counts(stats),  # what the pack's kind counts: the document graph, the OpenML star
        ("sources", f"{sum(1 for s in m.sources if s.status == 'ok')} ok of {len(m.sources)}"),
        *kind.info_notes(m),
    ]
    if m.shards:
        rows.append(("shards", f"{len(m.shards)} (the statistics above are their sums)"))
    for key, value in rows:
        table.add_row(styled("[bold]{}[/]", key), printable(value))
    out.print(table)


def _definition_rows(data: dict[str, Any]) -> list[tuple[str, str]]:
    """``pack info``'s row on the APIs the pack's documents define (none without definitions)."""
    found = data.get("definitions")
    if found is None:
        return []
    return [("definitions", f"{found} APIs, for how-to questions" if isinstance(found, int) else str(found))]


def _language_rows(data: dict[str, Any]) -> list[tuple[str, str]]:
    """``pack info``'s rows on a pack's languages and how each one's words are analysed (none
    for a kind without passages, which :func:`wikigr.info.pack_info` describes without them)."""
    if "language_summary" not in data:
        return []
    lines = [
        f"{a['name']}: keywords {a['keyword']}, entities {a['entities'] or 'none (graph skipped)'}"
        for a in data["analyzers"]
    ]
    lexicon = data.get("lexicon")
    if isinstance(lexicon, int):
        lines.append(f"lexicon: {lexicon} words, for questions in other languages")
    elif lexicon is not None:
        lines.append(f"lexicon: {lexicon}")
    return [
        ("languages", data["language_summary"]),
        *(("analyzers" if i == 0 else "", line) for i, line in enumerate(lines)),
    ]


@app.command("validate")
def validate(
    pack: Annotated[str, typer.Argument(help="Pack path (or name).")],
    json_out: JsonOpt = False,
) -> None:
    """Check a pack folder: manifest, files, store, statistics, embedder. Exit 1 when invalid."""
    from wikigr.validate import validate_pack

    path = resolve_pack_path(pack)
    report = validate_pack(path)
    if json_out:
        print_json(report.to_json())
    else:
        for check in report.checks:
            mark = styled("[green]ok[/]  " if check.ok else "[red]FAIL[/]")
            out.print(mark, printable(f"{check.name}" + (f": {check.detail}" if check.detail else "")))
        out.print(f"{path}: {'valid' if report.ok else 'INVALID'}", markup=False)
    if not report.ok:
        first = next(c for c in report.checks if not c.ok)
        if json_out:
            raise typer.Exit(1)
        raise _Invalid(f"invalid pack {path}: {first.name}: {first.detail}")


class _Invalid(UsageError):
    exit_code = 1


@app.command("graph")
def graph(
    pack: Annotated[str, typer.Argument(help="Pack path (or name).")],
    beta: Annotated[
        float, typer.Option("--beta", min=0.0, max=1.0, help="Share of chunks that get the full extraction.")
    ] = 0.25,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """(Re)build a pack's entity graph from the chunks it holds (nothing fetched or re-embedded)."""
    from wikigr.cli.progress import ProgressBars
    from wikigr.graph.build import GraphOptions
    from wikigr.graph.pack import rebuild_graph
    from wikigr.llm import AnthropicLLM

    path = resolve_pack_path(pack)
    open_pack(path)  # a pack, or a one-line error
    llm = AnthropicLLM.from_env()  # None without ANTHROPIC_API_KEY: zero LLM calls
    try:
        with ProgressBars(enabled=not json_out, quiet=quiet) as bars:
            report = rebuild_graph(path, GraphOptions(beta=beta), llm, on_progress=bars)
    finally:
        if llm is not None:
            llm.close()
    if json_out:
        print_json(report.to_json())
        return
    out.print(
        f"Entity graph of {path}: {report.entities} entities, {report.facts} facts, "
        f"{report.relations} relations; skeleton {report.skeleton_chunks} chunks by {report.extractor}; "
        f"LLM calls {report.llm_calls} ({report.input_tokens} in / {report.output_tokens} out tokens)",
        markup=False,
    )
    if report.note:
        err.print(f"note: {report.note}", markup=False, highlight=False)
