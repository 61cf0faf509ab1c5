"""Several packs answered as one: ``wikigr query pydocs,rustdocs "..."`` or ``wikigr query all "..."``.

from wikigr.packset import open_agent
with open_agent("pydocs,notes") as agent:   # a PackSet; one name gives a KnowledgeGraphAgent
    result = agent.query("How do I read a file line by line?")
[(s.pack, s.title) for s in result.sources]

How a question runs over a set of packs:

1. **Embed once per embedder.** Packs built with the same embedder share the question's vector.
2. **Probe.** Each pack's best cosine similarity to the question is the pack's *relevance*: one
   vector search per pack, in parallel, as deep as the pack's ``vector`` stage searches, so that
   the stage reuses it when the pack is searched (QueryState.nearest). Cosines of one embedder are
   comparable across packs: the same model scores the same question against every passage.
   Cosines of different embedders are not (each model has its own baseline similarity between
   unrelated texts), so when the set mixes embedders, each pack's cosines are first standardised
   against its embedder's background (the mean and spread of the cosine between passages of the
   packs using that embedder) and put on the scale of the set's first embedder.
3. **Retrieve where it can matter.** A pack whose relevance is more than ``step × (k - 1)`` below
   the best pack's cannot reach the merged top k (see 4), so it is not searched further; of the
   rest, at most ``max_packs`` (the most relevant) run their own profile, in parallel, each as it
   would alone (its kg_config.json, its graph, its stages).
4. **Merge on one scale.** A pack's own scores (fusion, PageRank, ...) are not comparable with
   another pack's, but its order is its best judgement. The passage at rank ``r`` (0-based) of a
   pack with relevance ``R`` gets the merged score ``R - step × r``: the most relevant pack leads,
   and a pack ``d`` below it interleaves from rank ``d / step`` on. Every source names its pack.
5. **Answer once.** The most relevant pack's ``synthesize`` stage answers over the merged passages
   (Claude, or the extractive answer), citing across packs.

OpenML packs answer with tools over their runs, not with passages. In a set, one answers alone
the questions it claims (:meth:`wikigr.pack.kind.PackKind.claim`: a measure, its runs, its
algorithms or datasets: wikigr.openml.claim), the one that claims it most if several do, and the
packs of passages are not searched; any other question leaves it out. The trace's ``packs`` says
which packs were left out and why (``left_out``), and ``wikigr query`` prints it. A set of only
OpenML packs is refused.

A pack in shards (wikigr.pack.shards: ``pack create --shards N``) is one pack here: one agent over
the union of its shards' stores (wikigr.pack.union), which runs the pack's profile once over the
whole pack — its vector search fans out to the shards, its entity graph is the shards' graphs put
together.
"""

from __future__ import annotations

import contextlib
import io
import math
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from wikigr.agent import AgentResult, KnowledgeGraphAgent
from wikigr.errors import PackNotFoundError, UsageError
from wikigr.home import expand_user, prune, store_cache_file, write_atomic
from wikigr.pack.kind import pack_kind
from wikigr.pack.pack import Pack, is_folder, list_packs, open_pack
from wikigr.retrieval.pipeline import run_stages
from wikigr.retrieval.stage import Candidate, QueryState

if TYPE_CHECKING:
    from wikigr.llm import LLM
    from wikigr.pack.reader import PackStore

ALL = "all"  # every installed pack; reserved as a pack name
STEP = 0.02  # merged-score step per rank, in cosine units (bench/packs.py chooses it)
MAX_PACKS = 4  # packs that run their full profile for one question
BACKGROUND_SAMPLE = 256  # passages per pack for an embedder's background similarity
BACKGROUND_CACHE_FORMAT = 1
BACKGROUND_CACHE_KEEP = 64  # packs whose sample is kept (~400 KB each at 384-d)
MAX_BACKGROUND_BYTES = BACKGROUND_SAMPLE * 4096 * 4 + 1024  # up to 4,096-d


def pack_refs(ref: str | Path | Sequence[str | Path]) -> list[str]:
    """The packs a reference names: one pack (a name or a path), a comma-separated list, a list,
    or ``all`` (every pack in the packs home). Duplicates are dropped, the order kept."""
    if isinstance(ref, str | Path):
        text = str(ref)
        if text.strip() == ALL:
            found = [item for item in list_packs() if isinstance(item, Pack)]
            if not found:
                raise PackNotFoundError("no pack is installed, so 'all' names none (see `wikigr pack list`)")
            return [str(pack.path) for pack in found]
        refs: list[str] = [text] if "," not in text or is_folder(expand_user(Path(text))) else text.split(",")
    else:
        refs = [str(r) for r in ref]
    names = [r.strip() for r in refs]
    if not any(names):
        raise PackNotFoundError("no pack given")
    if ALL in names and len(names) > 1:
        raise UsageError("'all' already names every pack; give it alone")
    if ALL in names:
        return pack_refs(ALL)
    seen: dict[str, None] = {}
    for name in names:
        if not name:
            raise UsageError(f"an empty pack name in '{','.join(refs)}'")
        seen.setdefault(name, None)
    return list(seen)


def open_agent(ref: str | Path | Sequence[str | Path], **kwargs: Any) -> KnowledgeGraphAgent | PackSet:
    """An agent over the packs ``ref`` names: a :class:`KnowledgeGraphAgent` for one pack (in one
    store or in shards; so ``all`` with one pack installed is that pack alone), else a
    :class:`PackSet`. ``kwargs`` are the agent's."""
    refs = pack_refs(ref)
    if len(refs) == 1:
        return KnowledgeGraphAgent(open_pack(refs[0]), **kwargs)
    return PackSet.open(refs, **kwargs)


def background_sample(store: PackStore, dimension: int) -> np.ndarray:
    """The pack's sample for its embedder's background (:meth:`PackStore.sample_vectors`), kept in
    ``$WIKIGR_HOME/cache/background/`` under the store's digest: a fresh ``query all`` over packs
    of several embedders reads a few hundred vectors per pack instead of querying every store
    (the store's ids, then a lookup per sampled passage). The file is checked as any input:
    one float32 matrix of at most the sample's rows and ``dimension`` columns, finite; anything
    else and the store is read."""
    path = store_cache_file(store, "background", f"wikigr background sample {BACKGROUND_CACHE_FORMAT}")
    if path is not None:
        with contextlib.suppress(OSError, ValueError, EOFError):
            if path.stat().st_size <= MAX_BACKGROUND_BYTES:
                with path.open("rb") as f:
                    cached = np.load(f, allow_pickle=False)
                if (
                    isinstance(cached, np.ndarray)
                    and cached.dtype == np.float32
                    and cached.ndim == 2
                    and cached.shape[1] == dimension
                    and len(cached) <= BACKGROUND_SAMPLE
                    and bool(np.isfinite(cached).all())
                ):
                    return cached
    vectors = store.sample_vectors(BACKGROUND_SAMPLE)
    if path is not None and vectors.ndim == 2:
        buffer = io.BytesIO()
        np.save(buffer, np.ascontiguousarray(vectors, dtype=np.float32), allow_pickle=False)
        with contextlib.suppress(OSError):  # a cache that cannot be written only costs time
            write_atomic(path, buffer.getvalue())
            prune(path.parent, BACKGROUND_CACHE_KEEP)
    return vectors


def cosine_spread(vectors: np.ndarray) -> tuple[float, float]:
    """Mean and standard deviation of the cosine over every pair of ``vectors`` (rows); (0, 1) for
    fewer than three. From the sum ``S`` and the second moment ``M = U^T U`` of the unit vectors
    ``U``, not from the n x n matrix of cosines: the pairs' cosines sum to ``|S|^2`` and their
    squares to ``|M|_F^2``, less the n pairs of a vector with itself."""
    n = len(vectors)
    if n < 3:
        return 0.0, 1.0
    unit = vectors.astype(np.float64)
    unit /= np.maximum(np.linalg.norm(unit, axis=1, keepdims=True), 1e-12)
    self_dots = np.einsum("ij,ij->i", unit, unit)
    total = unit.sum(axis=0)
    pairs = n * (n - 1)  # ordered: each unordered pair twice, as in both sums
    mean = (float(total @ total) - float(self_dots.sum())) / pairs
    moment = unit.T @ unit
    mean_square = (float(np.sum(moment * moment)) - float(np.sum(self_dots**2))) / pairs
    return mean, max(math.sqrt(max(mean_square - mean * mean, 0.0)), 1e-6)


@dataclass
class _Probe:
    agent: KnowledgeGraphAgent
    state: QueryState  # the pack's query state, holding the question's vector and nearest chunks
    raw: float = -1.0  # the best cosine of the pack's passages with the question
    relevance: float = -1.0  # on the set's common scale


def _probe_depth(agent: KnowledgeGraphAgent) -> int:
    """How many nearest chunks the probe fetches from a pack: as many as its vector stage asks for,
    so that the stage reuses the probe's search instead of scanning the pack again."""
    from wikigr.retrieval.stages.vector import VectorOptions

    options = agent.context.options.get("vector")
    return options.candidates if isinstance(options, VectorOptions) else VectorOptions().candidates


def passage_packs(refs: Sequence[str | Path]) -> tuple[list[Pack], dict[str, str]]:
    """The packs ``refs`` name, opened (manifests only, duplicates dropped), and those left out of a
    set with why: a kind of pack without passages (OpenML's: tools over its runs) answers alone."""
    chosen, alone = _split(refs)
    return chosen, {pack.name: _left_out(pack) for pack in alone}


def _split(refs: Sequence[str | Path]) -> tuple[list[Pack], list[Pack]]:
    """The packs ``refs`` name, opened (duplicates dropped): those of passages, and the others."""
    opened: dict[Path, Pack] = {}
    for ref in refs:
        pack = open_pack(ref)
        opened.setdefault(pack.path, pack)
    chosen = [p for p in opened.values() if pack_kind(p.manifest.source_kind).passages]
    alone = [p for p in opened.values() if not pack_kind(p.manifest.source_kind).passages]
    if not chosen:
        names = sorted(pack.name for pack in alone)
        plural = pack_kind(alone[0].manifest.source_kind).plural
        raise UsageError(f"{plural} answer one at a time: ask {', '.join(names)} separately")
    return chosen, alone


def _left_out(pack: Pack, asked: bool = False) -> str:
    """Why a pack without passages is not searched (``asked``: it did not claim the question)."""
    kind = pack_kind(pack.manifest.source_kind)
    claimed = ", and did not claim the question" if asked else ""
    return f"{kind.label} answers with {kind.answers_with}, not passages{claimed}: ask it alone"


class PackSet:
    """Several packs answering one question together (see the module's docstring). Open one with
    :meth:`open` (or :func:`open_agent`); the constructor takes agents already open, which it
    closes only when ``owns`` is set."""

    def __init__(
        self,
        agents: Sequence[KnowledgeGraphAgent],
        llm: LLM | None = None,
        left_out: dict[str, str] | None = None,
        top_k: int | None = None,
        profile: str | None = None,
        step: float = STEP,
        max_packs: int = MAX_PACKS,
        owns: bool = False,
        alone: Sequence[KnowledgeGraphAgent] = (),
    ) -> None:
        """``alone``: agents of packs without passages, each answering alone the questions its
        kind claims; ``left_out``: packs not opened, with why."""
        if not agents:
            raise UsageError("a pack set needs at least one pack")
        if top_k is not None and top_k < 1:
            raise UsageError("top_k must be at least 1")
        if max_packs < 1:
            raise UsageError("max_packs must be at least 1")
        self.agents = list(agents)
        self.llm = llm
        self.left_out = dict(left_out or {})
        self.alone = list(alone)
        self.top_k = top_k or 5
        self.profile = profile
        self.step = step
        self.max_packs = max_packs
        self._owns = owns
        self._background: dict[str, tuple[float, float]] = {}
        self._vectors: dict[str, np.ndarray] = {}

    @classmethod
    def open(
        cls,
        packs: Sequence[str | Path],
        profile: str | None = None,
        llm: LLM | Literal["auto"] | None = "auto",
        model: str | None = None,
        top_k: int | None = None,
        timeout: float | None = None,
        step: float = STEP,
        max_packs: int = MAX_PACKS,
        **kwargs: Any,
    ) -> PackSet:
        """Open the packs (in parallel) with one Claude client between them; ``kwargs`` are the
        agents' (enable, disable, options, fallback)."""
        if timeout is not None and not 0 < timeout < float("inf"):
            raise UsageError("the timeout must be a positive number of seconds")
        chosen, alone = _split(packs)
        if llm == "auto":
            from wikigr.llm import AnthropicLLM

            llm = AnthropicLLM.from_env(model, budget=timeout)

        def one(pack: Pack) -> KnowledgeGraphAgent:
            return KnowledgeGraphAgent(
                pack, profile=profile, llm=llm, model=model, top_k=top_k, timeout=timeout, **kwargs
            )

        opened: list[KnowledgeGraphAgent | None] = []
        errors: list[Exception] = []
        left_out: dict[str, str] = {}
        with ThreadPoolExecutor(max_workers=min(len(chosen) + len(alone), 8)) as pool:
            for pack, future in [(pack, pool.submit(one, pack)) for pack in chosen + alone]:
                try:
                    opened.append(future.result())
                except Exception as exc:  # noqa: BLE001 - close what opened, then raise the first
                    opened.append(None)
                    if isinstance(exc, UsageError) and pack in alone:  # --profile baseline, --enable vector
                        left_out[pack.name] = f"not opened: {exc}"
                    else:
                        errors.append(exc)
        if errors:
            for agent in opened:
                if agent is not None:
                    agent.close()
            close_llm = getattr(llm, "close", None)
            if close_llm is not None:
                close_llm()
            raise errors[0]
        agents = [a for a in opened[: len(chosen)] if a is not None]
        others = [a for a in opened[len(chosen) :] if a is not None]
        return cls(agents, llm, left_out, top_k, profile, step, max_packs, owns=True, alone=others)

    def close(self) -> None:
        if not self._owns:
            return
        for agent in self.agents + self.alone:
            agent.close()
        close_llm = getattr(self.llm, "close", None)
        if close_llm is not None:
            close_llm()

    def __enter__(self) -> PackSet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def name(self) -> str:
        return ",".join(agent.name for agent in self.agents)

    def background(self, embedder: str) -> tuple[float, float]:
        """Mean and spread of the cosine between passages of the set's packs built with
        ``embedder``: its baseline similarity between texts, whatever their topic."""
        if embedder not in self._background:
            packs = [a for a in self.agents if a.pack.manifest.embedder.name == embedder]

            def sample(agent: KnowledgeGraphAgent) -> np.ndarray:
                return background_sample(agent.context.store, agent.pack.manifest.embedder.dimension)

            with ThreadPoolExecutor(max_workers=min(len(packs), 8)) as pool:
                samples = [vectors for vectors in pool.map(sample, packs) if len(vectors)]
            matrix = np.concatenate(samples) if samples else np.zeros((0, 1), np.float32)
            self._background[embedder] = cosine_spread(matrix)
        return self._background[embedder]

    def _probe(self, question: str, k: int) -> list[_Probe]:
        vectors: dict[str, np.ndarray] = {}
        for agent in self.agents:  # one embedding per embedder
            name = agent.pack.manifest.embedder.name
            if name not in vectors:
                vectors[name] = agent.new_state(question, k).vector()

        def best(agent: KnowledgeGraphAgent) -> _Probe:
            state = agent.new_state(question, k, vector=vectors[agent.pack.manifest.embedder.name])
            nearest = state.nearest(_probe_depth(agent))  # the vector stage's search, done once
            return _Probe(agent, state, max(nearest.values(), default=-1.0))

        with ThreadPoolExecutor(max_workers=min(len(self.agents), 8)) as pool:
            probes = list(pool.map(best, self.agents))
        embedders = [agent.pack.manifest.embedder.name for agent in self.agents]
        if len(set(embedders)) == 1:
            for probe in probes:
                probe.relevance = probe.raw
        else:  # standardise each embedder's cosines, then use the first embedder's scale
            ref_mean, ref_spread = self.background(embedders[0])
            for probe in probes:
                mean, spread = self.background(probe.agent.pack.manifest.embedder.name)
                probe.relevance = ref_mean + ref_spread * (probe.raw - mean) / spread
        self._vectors = vectors
        return sorted(probes, key=lambda p: -p.relevance)

    def _why_not(self, probe: _Probe, reach: float) -> str:
        if probe.relevance < reach:
            return "too far below the most relevant pack to reach the top k"
        return f"only the {self.max_packs} most relevant packs are searched"

    def _claimed(self, question: str) -> tuple[KnowledgeGraphAgent, str] | None:
        """The pack without passages that claims ``question`` most, and why; None if none does."""
        best: tuple[float, KnowledgeGraphAgent, str] | None = None
        for agent in self.alone:
            store = agent.context.store.one_store()  # a pack without passages is one store
            found = pack_kind(agent.pack.manifest.source_kind).claim(question, store)
            if found is not None and (best is None or found[0] > best[0]):
                best = (found[0], agent, found[1])
        return None if best is None else (best[1], best[2])

    def _answer_alone(self, agent: KnowledgeGraphAgent, why: str, question: str, k: int) -> AgentResult:
        """The answer of the pack that claimed the question, and why in the trace's ``packs``."""
        result = agent.query(question, top_k=k)  # each source names its pack
        result.trace["packs"] = (
            [{"pack": agent.name, "searched": True, "why": f"the question {why}"}]
            + [
                {
                    "pack": other.name,
                    "searched": False,
                    "left_out": True,
                    "why": f"{agent.name} answers the question alone: it {why}",
                }
                for other in self.agents + [a for a in self.alone if a is not agent]
            ]
            + [
                {"pack": name, "searched": False, "left_out": True, "why": w}
                for name, w in self.left_out.items()
            ]
        )
        return result

    def query(self, question: str, top_k: int | None = None) -> AgentResult:
        question = question.strip()
        if not question:
            raise UsageError("the question is empty")
        k = top_k or self.top_k
        if k < 1:
            raise UsageError("top_k must be at least 1")
        claimed = self._claimed(question)
        if claimed is not None:
            return self._answer_alone(*claimed, question, k)
        start = time.perf_counter()
        probes = self._probe(question, k)
        probe_ms = (time.perf_counter() - start) * 1000
        best = probes[0].relevance
        reach = best - self.step * (k - 1)
        reachable = [p for p in probes if p.relevance >= reach]
        searched = reachable[: self.max_packs]

        def retrieve(probe: _Probe) -> tuple[QueryState, list[dict[str, Any]]]:
            agent, state = probe.agent, probe.state
            stages = [s for s in agent.stages if s.name != "synthesize"]
            with agent.budget():
                return state, run_stages(stages, state)

        with ThreadPoolExecutor(max_workers=min(len(searched), 8)) as pool:
            runs = list(pool.map(retrieve, searched))
        merged: list[tuple[Candidate, int]] = []  # with the index of the pack it comes from
        for index, (probe, (state, _)) in enumerate(zip(searched, runs, strict=True)):
            for rank, candidate in enumerate(state.candidates[: state.top_k]):
                candidate.pack = probe.agent.name
                candidate.scores["own"] = candidate.score
                candidate.score = probe.relevance - self.step * rank
                merged.append((candidate, index))
        merged.sort(key=lambda pair: (-pair[0].score, pair[1], pair[0].chunk_id))
        lead, (lead_state, _) = searched[0], runs[0]
        lead_vector = self._vectors[lead.agent.pack.manifest.embedder.name]
        state = lead.agent.new_state(question, max(k, lead_state.top_k), vector=lead_vector)
        state.candidates = [candidate for candidate, _ in merged]
        state.confidence = max(s.confidence for s, _ in runs)
        state.low_confidence = all(s.low_confidence for s, _ in runs)
        # what none of the packs searched mentions, in the lead's order
        state.absent = [w for w in lead_state.absent if all(w in s.absent for s, _ in runs)]
        state.packs = len(runs)
        state.examples = lead_state.examples
        if "router" in lead_state.notes:
            state.notes["router"] = lead_state.notes["router"]
        retrieval_ms = (time.perf_counter() - start) * 1000
        synthesize = [s for s in lead.agent.stages if s.name == "synthesize"]
        elapsed = time.perf_counter() - start
        lead_llm = lead.agent.llm  # the one synthesize calls (all the agents' when opened together)
        budget, within = getattr(lead_llm, "budget", None), getattr(lead_llm, "within", None)
        remaining = max(0.001, budget - elapsed) if isinstance(budget, int | float) else None
        with within(remaining) if within is not None else contextlib.nullcontext():
            final = run_stages(synthesize, state)
        total_ms = (time.perf_counter() - start) * 1000
        stages: list[dict[str, Any]] = [
            {
                "stage": "packs",
                "ms": round(probe_ms, 2),
                "in": len(self.agents),
                "out": len(searched),
                "top_scores": [round(p.relevance, 4) for p in probes[:3]],
                "detail": {"searched": [p.agent.name for p in searched]},
            }
        ]
        for probe, (_, entries) in zip(searched, runs, strict=True):
            stages += [{**entry, "stage": f"{probe.agent.name}/{entry['stage']}"} for entry in entries]
        stages += final
        result = lead.agent.result(state, stages, total_ms)
        result.profile = self.profile or "auto"
        result.trace["profile"] = result.profile
        result.trace["retrieval_ms"] = round(retrieval_ms, 2)
        result.trace["packs"] = [
            {"pack": p.agent.name, "relevance": round(p.relevance, 4), "searched": p in searched}
            | ({} if p in searched else {"why": self._why_not(p, reach)})
            for p in probes
        ]
        left_out = {agent.name: _left_out(agent.pack, asked=True) for agent in self.alone} | self.left_out
        result.trace["packs"] += [
            {"pack": name, "searched": False, "left_out": True, "why": why} for name, why in left_out.items()
        ]
        return result
