"""``wikigr pack export|install|update|remove``: share packs and keep them current."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from wikigr.cli.output import err, out, print_json
from wikigr.cli.pack import QuietOpt

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")]
SkillsDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--skills-dir",
        help="Claude Code skills folder (default ~/.claude/skills; e.g. a project's .claude/skills).",
    ),
]


def register(app: typer.Typer) -> None:
    @app.command("export")
    def export(
        pack: Annotated[str, typer.Argument(help="Pack name or path.")],
        output: Annotated[Path, typer.Option("--out", "-o", help="The archive to write (NAME.tar.gz).")],
        json_out: JsonOpt = False,
    ) -> None:
        """Write a pack to a .tar.gz archive whose manifest lists a sha256 for every file."""
        from wikigr.share import export_pack

        report = export_pack(pack, output)
        if json_out:
            print_json(
                {
                    "path": str(report.path),
                    "name": report.name,
                    "files": report.files,
                    "bytes": report.bytes,
                    "checkpointed": report.checkpointed,
                }
            )
            return
        out.print(
            f"Exported pack {report.name} to {report.path} ({report.files} files, {report.bytes:,} bytes)",
            markup=False,
        )

    @app.command("install")
    def install(
        source: Annotated[str, typer.Argument(help="A .tar.gz archive, a pack folder, or an http(s) URL.")],
        force: Annotated[
            bool, typer.Option("--force", help="Replace an installed pack of that name.")
        ] = False,
        skills_dir: SkillsDirOpt = None,
        no_skill: Annotated[
            bool, typer.Option("--no-skill", help="Do not register the pack as a Claude Code skill.")
        ] = False,
        max_mb: Annotated[
            float, typer.Option("--max-mb", min=1, help="Cap on the download and on the unpacked size, MiB.")
        ] = 8192.0,
        timeout: Annotated[
            float, typer.Option(min=0.1, help="Deadline of a URL install's whole download, s.")
        ] = 600.0,
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
    ) -> None:
        """Install a pack into the packs home, checking it first; register its Claude Code skill."""
        from wikigr.cli.progress import ProgressBars
        from wikigr.share import InstallLimits, install_pack

        cap = int(max_mb * 1024 * 1024)
        limits = InstallLimits(
            max_member_bytes=cap, max_total_bytes=cap, max_download_bytes=cap, timeout=timeout
        )
        with ProgressBars(enabled=not json_out, quiet=quiet) as bars:
            report = install_pack(
                source,
                force=force,
                skills_dir=skills_dir,
                register_skill=not no_skill,
                limits=limits,
                on_progress=bars,
            )
        for warning in report.warnings:
            err.print(f"Warning: {warning}", markup=False, highlight=False)
        if json_out:
            print_json(
                {
                    "name": report.name,
                    "path": str(report.path),
                    "source": report.source,
                    "kind": report.kind,
                    "files": report.files,
                    "bytes": report.bytes,
                    "replaced": report.replaced,
                    "checksums_verified": report.checked,
                    "skill": str(report.skill) if report.skill else None,
                    "warnings": report.warnings,
                }
            )
            return
        verb = "Replaced" if report.replaced else "Installed"
        checks = "checksums verified" if report.checked else "no checksums listed"
        out.print(
            f"{verb} pack {report.name} at {report.path} ({report.files} files, {checks})", markup=False
        )
        if report.skill:
            out.print(f"Registered the Claude Code skill {report.skill}", markup=False)

    @app.command("remove")
    def remove(
        name: Annotated[str, typer.Argument(help="Name of an installed pack.")],
        skills_dir: SkillsDirOpt = None,
        keep_skill: Annotated[
            bool, typer.Option("--keep-skill", help="Leave its Claude Code skill registered.")
        ] = False,
        json_out: JsonOpt = False,
    ) -> None:
        """Remove a pack from the packs home and unregister its Claude Code skill."""
        from wikigr.share import remove_pack

        report = remove_pack(name, skills_dir=skills_dir, keep_skill=keep_skill)
        for warning in report.warnings:
            err.print(f"Warning: {warning}", markup=False, highlight=False)
        if json_out:
            print_json(
                {
                    "name": report.name,
                    "path": str(report.path) if report.path else None,
                    "skill": str(report.skill) if report.skill else None,
                    "warnings": report.warnings,
                }
            )
            return
        if report.path:
            out.print(f"Removed pack {report.name} ({report.path})", markup=False)
        if report.skill:
            out.print(f"Unregistered the skill {report.skill}", markup=False)

    @app.command("update")
    def update(
        pack: Annotated[str, typer.Argument(help="Pack name or path.")],
        urls: Annotated[
            Path | None,
            typer.Option("--urls", help="A new source list (default: the pack's urls.txt)."),
        ] = None,
        workers: Annotated[int, typer.Option(min=1, max=64, help="Concurrent fetches.")] = 8,
        timeout: Annotated[float, typer.Option(min=0.1, help="Per-request timeout, seconds.")] = 20.0,
        retries: Annotated[int, typer.Option(min=0, max=10, help="Retries on 429/5xx/timeouts.")] = 3,
        max_mb: Annotated[
            float, typer.Option("--max-mb", min=0.001, help="Size cap per document, MiB.")
        ] = 10.0,
        skills_dir: SkillsDirOpt = None,
        ray: Annotated[
            bool,
            typer.Option("--ray", help="Fetch, parse and embed on Ray (needs the ray extra; docs/scale.md)."),
        ] = False,
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
    ) -> None:
        """Re-fetch a pack's sources and embed only new and changed documents (atomic swap)."""
        from wikigr.build import BuildOptions, update_pack
        from wikigr.cli.progress import ProgressBars
        from wikigr.sources.fetch import FetchOptions

        options = BuildOptions(
            fetch=FetchOptions(
                workers=workers, timeout=timeout, retries=retries, max_bytes=int(max_mb * 1024 * 1024)
            )
        )
        if ray:
            from wikigr.build.ray import RayOptions, require_ray

            require_ray()
            options.ray = RayOptions()
        bars = ProgressBars(enabled=not json_out, quiet=quiet)
        with bars:
            report = update_pack(
                pack, urls_file=urls, options=options, on_progress=bars, skills_dir=skills_dir
            )
        if json_out:
            print_json(report.to_json())
            return
        stats = report.manifest.stats
        out.print(
            f"Updated pack {report.manifest.name}: {len(report.added)} added, {len(report.changed)} changed, "
            f"{len(report.removed)} removed, {len(report.unchanged)} unchanged; "
            f"{report.chunks_embedded} chunks embedded, {report.chunks_reused} reused; "
            f"{stats.articles} articles, {stats.chunks} chunks in {report.seconds['total']:.1f}s",
            markup=False,
        )
        for note in report.notes:
            err.print(note, markup=False, highlight=False)
        if report.skill:
            out.print(f"Refreshed the Claude Code skill {report.skill}", markup=False)
        for url, error in report.kept:
            out.print(f"  kept the previous version of {url}: {error}", markup=False)
        for url, error in report.failed:
            out.print(f"  failed: {url}: {error}", markup=False)
