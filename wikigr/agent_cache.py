"""Open agents kept for the life of a server process (``wikigr mcp``, ``wikigr serve``).

An agent is opened once per pack folder and settings (profile, stage switches, mode) and reused;
when the pack is updated or replaced on disk, or its ``kg_config.json`` changes (the page's
Settings save one), the next use reopens it. One store connection must
never be used by two threads at once, so each agent has a lock: :meth:`AgentCache.use` holds the
locks of the agents a call needs, so calls on different packs run at once and calls on one agent
take turns. (The MCP server serialises every call instead, under :attr:`AgentCache.lock`.)

Modes: ``"query"`` answers (Claude when ``ANTHROPIC_API_KEY`` is set); ``"search"`` retrieves
only: no synthesis, no few-shot examples or rephrasings, never Claude.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from wikigr.agent import KnowledgeGraphAgent
from wikigr.pack.files import CONFIG_FILE, MANIFEST_FILE
from wikigr.pack.pack import Pack, open_pack
from wikigr.packset import PackSet, pack_refs, passage_packs

SEARCH_DROPS = frozenset({"synthesize", "few_shot", "multi_query"})  # what a search agent leaves out
MAX_AGENTS = 16  # open agents kept; the least recently used idle one is closed beyond

Key = tuple[str, str | None, str, tuple[str, ...], tuple[str, ...]]
Stamp = tuple[int, ...]


@dataclass
class _Entry:
    stamp: Stamp
    agent: KnowledgeGraphAgent
    lock: threading.Lock = field(default_factory=threading.Lock)
    closed: bool = False
    used: float = field(default_factory=time.monotonic)


class AgentCache:
    """Open agents by (pack folder, profile, mode, enabled and disabled stages)."""

    def __init__(self, max_agents: int = MAX_AGENTS) -> None:
        self.max_agents = max_agents
        self.lock = threading.Lock()  # for callers that serialise every call (the MCP server)
        self._agents: dict[Key, _Entry] = {}
        self._guard = threading.Lock()  # the table
        self._opening = threading.Lock()  # one agent opens at a time (no pack is opened twice)

    @staticmethod
    def _stamp(path: Path) -> Stamp:
        """What tells the state an agent was opened on from another: the folder (a swap), its
        manifest (an update), its ``kg_config.json`` (the profile, top-k and options it answers
        with; none is a state too)."""
        folder = os.stat(path)
        manifest = os.stat(path / MANIFEST_FILE)
        try:
            config = os.stat(path / CONFIG_FILE)
            settings = (config.st_ino, config.st_mtime_ns, config.st_size)
        except FileNotFoundError:
            settings = (0, 0, -1)
        return (folder.st_ino, manifest.st_ino, manifest.st_mtime_ns, *settings)

    # -- without per-agent locks: the caller serialises (the MCP server holds ``lock``) --------

    def get(
        self,
        ref: str | Sequence[str],
        profile: str | None,
        mode: str,
        enable: Sequence[str] = (),
        disable: Sequence[str] = (),
    ) -> KnowledgeGraphAgent | PackSet:
        """The agent of one pack, or a set over the packs ``ref`` names (a list, a,b or all)."""
        refs = pack_refs(ref)
        if len(refs) == 1:  # in one store or in shards
            return self.one(refs[0], profile, mode, enable, disable)
        packs, left_out = passage_packs(refs)
        agents = [self._entry(pack, profile, mode, enable, disable).agent for pack in packs]
        return PackSet(agents, left_out=left_out, profile=profile)

    def one(
        self,
        ref: str,
        profile: str | None,
        mode: str,
        enable: Sequence[str] = (),
        disable: Sequence[str] = (),
    ) -> KnowledgeGraphAgent:
        return self._entry(open_pack(ref), profile, mode, enable, disable).agent

    # -- with per-agent locks --------------------------------------------------------------------

    @contextmanager
    def use(
        self,
        refs: Sequence[str],
        profile: str | None,
        mode: str,
        enable: Sequence[str] = (),
        disable: Sequence[str] = (),
    ) -> Iterator[KnowledgeGraphAgent | PackSet]:
        """The agent of one pack (or a set over several, OpenML packs left out), with the lock of
        every agent it uses held until the block ends."""
        while True:
            left_out: dict[str, str] = {}
            if len(refs) == 1:
                packs = [open_pack(refs[0])]
            else:
                packs, left_out = passage_packs(refs)
            entries = [self._entry(pack, profile, mode, enable, disable) for pack in packs]
            with ExitStack() as held:
                for entry in sorted({id(e): e for e in entries}.values(), key=id):  # one order: no deadlock
                    held.enter_context(entry.lock)
                if any(entry.closed for entry in entries):  # replaced or evicted meanwhile: again
                    continue
                now = time.monotonic()
                for entry in entries:
                    entry.used = now
                if len(entries) == 1 and len(refs) == 1:
                    yield entries[0].agent
                else:
                    yield PackSet([e.agent for e in entries], left_out=left_out, profile=profile)
                return

    # -- the table ---------------------------------------------------------------------------------

    def _entry(
        self, pack: Pack, profile: str | None, mode: str, enable: Sequence[str], disable: Sequence[str]
    ) -> _Entry:
        key: Key = (str(pack.path), profile, mode, tuple(sorted(set(enable))), tuple(sorted(set(disable))))
        stamp = self._stamp(pack.path)
        with self._guard:
            entry = self._agents.get(key)
            if entry is not None and entry.stamp == stamp:
                return entry
        with self._opening:
            with self._guard:
                entry = self._agents.get(key)
                if entry is not None and entry.stamp == stamp:  # another thread opened it meanwhile
                    return entry
                stale = self._agents.pop(key, None)
            if stale is not None:
                self._retire(stale)
            entry = _Entry(stamp, self._open(pack, profile, mode, enable, disable))
            with self._guard:
                self._agents[key] = entry
                idle = sorted(
                    (e for e in self._agents.values() if e is not entry and not e.lock.locked()),
                    key=lambda e: e.used,
                )
                evicted = idle[: max(0, len(self._agents) - self.max_agents)]
                for key_of in [k for k, e in self._agents.items() if any(e is x for x in evicted)]:
                    del self._agents[key_of]
            for old in evicted:
                self._retire(old)
            return entry

    @staticmethod
    def _open(
        pack: Pack, profile: str | None, mode: str, enable: Sequence[str], disable: Sequence[str]
    ) -> KnowledgeGraphAgent:
        if mode == "search":
            agent = KnowledgeGraphAgent(
                pack, profile=profile, enable=list(enable), disable=list(disable), llm=None
            )
            agent.stages = [s for s in agent.stages if s.name not in SEARCH_DROPS]
            return agent
        return KnowledgeGraphAgent(pack, profile=profile, enable=list(enable), disable=list(disable))

    @staticmethod
    def _retire(entry: _Entry) -> None:
        """Close an agent once no call uses it."""
        with entry.lock:
            entry.closed = True
            entry.agent.close()

    def __len__(self) -> int:
        with self._guard:
            return len(self._agents)

    def close(self) -> None:
        with self._guard:
            entries = list(self._agents.values())
            self._agents.clear()
        for entry in entries:
            self._retire(entry)
