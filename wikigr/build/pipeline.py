"""Build a pack from document URLs: fetch, parse, chunk, embed, write the store — atomically.

The pack is built in a hidden folder beside the target (``.NAME.partial``) and swapped in only at
the end (:func:`wikigr.pack.transaction.pack_transaction`), so an interrupted build (Ctrl-C, a
crash) leaves the previous pack untouched. Each document that was fetched, parsed and embedded is
cached in that folder as it completes; running the same build again resumes from the cache
instead of fetching and embedding those documents again.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from wikigr import lang
from wikigr.build.background import in_thread, wait_for
from wikigr.build.cache import BuildCache
from wikigr.build.languages import choose_embedder, fallback_note, language_counts
from wikigr.build.options import BuildOptions, BuildReport
from wikigr.build.prepare import (
    CORPUS_ALONE,
    PreparedDocument,
    embed_pending,
    fetch_sources,
    passage_url,
    prepare_fetched,
    prepare_passage,
    read_corpus,
)
from wikigr.build.ray import RayEmbedder, prepare_on_ray
from wikigr.build.shards import write_shards
from wikigr.build.write import (
    classify_sources,
    crawled_list,
    describe_documents,
    write_documents_pack,
    write_support_files,
)
from wikigr.embed import DEFAULT_EMBEDDER, Embedder, get_embedder
from wikigr.errors import BuildError, EmbedderUnavailableError, UsageError, WikigrError
from wikigr.graph.build import GraphReport, load_models
from wikigr.home import expand_user
from wikigr.pack import pack as layout
from wikigr.pack.shards import check_count
from wikigr.pack.transaction import check_target, pack_transaction
from wikigr.progress import ProgressCallback, ProgressEvent, no_progress
from wikigr.sources.crawl import Crawler, CrawlFile, CrawlReport, kept_pages
from wikigr.sources.folders import expand_sources


def build_pack(
    name: str,
    sources: Sequence[str],
    out: Path | None = None,
    options: BuildOptions | None = None,
    on_progress: ProgressCallback | None = None,
    url_list: str | None = None,
    corpus: Path | None = None,
    shards: int = 1,
    on_note: Callable[[str], None] | None = None,
) -> BuildReport:
    """Build (or rebuild) the pack ``name`` from ``sources`` (URLs, file URLs or directories) or
    from a passage ``corpus`` file (see :func:`read_corpus`).

    The pack lands at ``out`` (default: ``$WIKIGR_HOME/packs/NAME``). ``url_list`` is written as the
    pack's ``urls.txt`` (default: the sources, one per line). ``shards`` > 1 writes the pack in
    that many stores (wikigr.build.shards).

    The embedder is ``options``' when the user chose one (:meth:`BuildOptions.chosen_embedder`);
    else it is chosen once the documents are parsed, by their languages
    (wikigr.build.languages.choose_embedder), and the choice's one-line note, if any, is given to
    ``on_note`` as it is made (and kept in the report's ``notes``).
    """
    layout.check_new_name(name)
    options = options or BuildOptions()
    progress = on_progress or no_progress
    if shards != 1:
        check_count(shards)
    crawl = options.crawl
    if not sources and corpus is None and crawl is None:
        raise UsageError("no sources given")
    if (sources or crawl is not None) and corpus is not None:
        raise UsageError(CORPUS_ALONE)
    if crawl is not None and options.ray is not None:
        raise UsageError("--crawl does not run on Ray yet: crawl without --ray")
    passages = read_corpus(corpus) if corpus is not None else []
    # Folders are walked now, before anything is written: one without documents is a usage error.
    expanded = expand_sources(list(sources), strict=True)
    target = expand_user(out or layout.packs_home() / name).absolute()
    check_target(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    if options.ray is None:  # each document's language is detected here: the identifier loads meanwhile
        in_thread(lang.identifier, "wikigr-languages")  # a failure: raised again where it is used
    chosen = options.chosen_embedder()
    embedder = get_embedder(chosen or DEFAULT_EMBEDDER)  # chosen, or what an English pack is built with
    seconds: dict[str, float] = {}
    notes: list[str] = []

    crawled: CrawlReport | None = None
    with pack_transaction(target, fresh=options.fresh) as txn:
        partial = txn.partial
        scratch = txn.scratch(BuildCache.FOLDER)
        if chosen is None:  # embed as the interrupted build chose to, if it got that far
            embedder = _resumed_embedder(BuildCache.embedder_of(scratch), embedder)
            options = replace(options, embedder=embedder.name)  # what Ray's workers load
        cache = BuildCache.for_build(scratch, embedder, options)

        by_url = {passage_url(p[0]): p for p in passages}
        expanded += list(by_url)
        prepared: dict[str, PreparedDocument] = {}
        for source in expanded:
            cached = cache.load(source)
            if cached is not None:
                prepared[source] = cached
        resumed = len(prepared)
        pending: list[PreparedDocument] = []  # to embed here (a Ray build's are embedded on its workers)
        if options.ray is not None:  # the same work, document by document, on the cluster's workers
            to_fetch = [s for s in expanded if s not in prepared and s not in by_url]
            t0 = time.perf_counter()
            embedded = prepare_on_ray(
                [by_url[u] for u in by_url if u not in prepared], to_fetch, options, cache, prepared, progress
            )
            seconds["prepare"] = time.perf_counter() - t0
        else:
            for url in [u for u in by_url if u not in prepared]:
                item = prepare_passage(by_url[url], options)
                prepared[url] = item
                if item.error is None:
                    pending.append(item)
            t0 = time.perf_counter()
            fetched_by_crawl: list[str] = []
            if crawl is not None:  # first: a listed source the crawl finds is not fetched twice
                crawler = Crawler(crawl, options.fetch, folder=txn.scratch("crawl"), on_progress=progress)
                listed, n = set(expanded), len(expanded)
                with contextlib.closing(crawler.run()) as pages:
                    for result in pages:
                        if result.url in prepared:
                            continue  # taken from the cache
                        if result.url not in listed:
                            expanded.append(result.url)
                        cached = cache.load(result.url)
                        if cached is not None:
                            prepared[result.url] = cached
                            resumed += 1
                            continue
                        item = prepare_fetched(result, options)
                        prepared[result.url] = item
                        fetched_by_crawl.append(result.url)
                        if item.error is None:
                            pending.append(item)
                crawled = crawler.report
                expanded[n:] = crawled.in_order(expanded[n:])
            to_fetch = [s for s in expanded if s not in prepared]
            results = fetch_sources(to_fetch, options, progress)
            for result in results:
                item = prepare_fetched(result, options)
                prepared[result.url] = item
                if item.error is None:
                    pending.append(item)
            to_fetch += fetched_by_crawl
            seconds["fetch"] = time.perf_counter() - t0

        docs, records, aliases = classify_sources(expanded, prepared)
        failed = [
            (r.url, r.status) for r in records if r.status != "ok" and not r.status.startswith("duplicate")
        ]
        if not docs:
            first = f" (first: {failed[0][0]}: {failed[0][1]})" if failed else ""
            if not failed and crawled is not None and crawled.skipped:
                url, why = next(iter(crawled.skipped.items()))
                first = f" (the crawl skipped {url}: {why})"
            raise BuildError(f"no document could be fetched and parsed: {len(failed)} failed{first}")

        # The embedder, now that the documents' languages are known (wikigr.build.languages).
        languages = language_counts(d.language for d in docs)
        choice, note = choose_embedder(languages, chosen)
        if chosen is None and choice != embedder.name:
            try:
                switched = get_embedder(choice)
            except EmbedderUnavailableError as exc:  # the build's choice, not the user's: it goes on
                switched = get_embedder(DEFAULT_EMBEDDER)
                note = fallback_note(languages, str(exc))
            if switched.name != embedder.name:  # what was embedded already is embedded again
                embedder = switched
                options = replace(options, embedder=embedder.name)
                cache = BuildCache.for_build(scratch, embedder, options)  # the other model's cache: anew
                waiting = {id(item) for item in pending}
                pending += [d for d in prepared.values() if d.error is None and id(d) not in waiting]
        if note is not None:
            notes.append(note)
            if on_note is not None:
                on_note(note)
        # The entity graph's models load while the chunks are embedded (Claude needs none, Ray runs
        # spaCy on its workers).
        offline = options.llm is None and options.ray is None
        models = None
        if offline and options.graph and options.graph_options.full_extraction:
            models = in_thread(lambda: load_models(languages), "wikigr-models")
        if options.ray is None:
            t0 = time.perf_counter()
            embedded = embed_pending(pending, embedder, cache, progress)
            seconds["embed"] = time.perf_counter() - t0
        elif pending:  # what the workers left unembedded (parsed only) or embedded with the other model
            t0 = time.perf_counter()
            embedded = embed_pending(pending, RayEmbedder(options.ray, embedder), cache, progress)
            seconds["embed"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        if models is not None:
            wait_for(models)
        progress(ProgressEvent("write", 0, 1))
        graph_reports: list[GraphReport] = []
        description = options.description or describe_documents(docs, corpus.name if corpus else None)
        if shards > 1:
            manifest = write_shards(
                partial,
                name,
                docs,
                records,
                embedder,
                options,
                description,
                shards,
                graph_reports,
                aliases,
            )
        else:
            shutil.rmtree(partial / "shards", ignore_errors=True)  # of an interrupted build in shards
            manifest = write_documents_pack(
                partial,
                name,
                docs,
                records,
                embedder,
                options,
                description,
                graph_reports,
                aliases,
            )
        if crawl is not None and crawled is not None:
            manifest = replace(manifest, crawl=crawl.to_json())
            CrawlFile(list(sources), kept_pages(crawled)).dump(partial / layout.CRAWL_FILE, crawled)
        manifest.dump(partial / layout.MANIFEST_FILE)
        if url_list is None:
            url_list = "".join(f"{s}\n" for s in sources)
            if corpus is not None:
                url_list += f"# passages from the corpus {corpus.name} ({len(passages)} passages)\n"
        if crawl is not None:
            found = (
                [u for u in crawled.pages if u in prepared and prepared[u].error is None] if crawled else []
            )
            url_list += crawled_list(crawl, found)
        in_home = target == expand_user(layout.packs_home() / name).absolute()
        write_support_files(partial, manifest, url_list, None if in_home else str(target))
        txn.commit()
        progress(ProgressEvent("write", 1, 1))
        seconds["write"] = time.perf_counter() - t0
        seconds["total"] = time.perf_counter() - started

    return BuildReport(
        path=target,
        manifest=manifest,
        failed=failed,
        resumed=resumed,
        fetched=len(to_fetch),
        chunks_embedded=embedded,
        seconds=seconds,
        graph=graph_reports[0] if graph_reports else None,
        crawl=crawled,
        notes=notes,
    )


def _resumed_embedder(previous: str | None, default: Embedder) -> Embedder:
    """The embedder an interrupted build whose embedder was not chosen had chosen (by the name
    its cache records), so that what it embedded is kept; else ``default``."""
    if previous is None or previous == default.name:
        return default
    try:
        return get_embedder(previous)
    except WikigrError:  # not loadable here any more: its cache is dropped
        return default
