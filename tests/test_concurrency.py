"""Several readers of one pack at once, and readers during ``pack update`` (real processes)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import DOCS
from wikigr.agent import KnowledgeGraphAgent
from wikigr.build import build_pack, update_pack

HOLDER = """
import json, sys
from wikigr.agent import KnowledgeGraphAgent
agent = KnowledgeGraphAgent(sys.argv[1], llm=None)   # the default profile: vector + BM25 + graph
print("ready", flush=True)
for line in sys.stdin:
    result = agent.query(line.strip(), top_k=3)
    print(json.dumps([s.title for s in result.sources]), flush=True)
"""


def test_several_processes_query_one_pack_at_once(built_pack: Path) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "wikigr", "query", str(built_pack), question, "--json", "-k", "1"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for question in ("socket timeout", "json.loads", "tomatoes sunlight")
    ]
    titles = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        titles.append(json.loads(out)["sources"][0]["title"])
    assert titles == ["Sockets guide", "Working with JSON", "Growing tomatoes"]


def test_an_open_agent_keeps_answering_while_update_swaps_the_pack(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs)
    pack = tmp_path / "live"
    build_pack("live", [docs.as_uri()], out=pack)

    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(pack)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as holder:
        assert holder.stdin is not None and holder.stdout is not None

        def ask(question: str) -> list[str]:
            assert holder.stdin is not None and holder.stdout is not None
            holder.stdin.write(question + "\n")
            holder.stdin.flush()
            line = holder.stdout.readline()
            assert line, holder.stderr.read() if holder.stderr else ""
            titles: list[str] = json.loads(line)
            return titles

        try:
            assert holder.stdout.readline().strip() == "ready"
            assert ask("tomatoes sunlight stake the plants")[0] == "Growing tomatoes"

            (docs / "gardening.txt").unlink()
            (docs / "tea.md").write_text(
                "# Brewing tea\n\nSteep green tea leaves at 80 degrees for two minutes.\n"
            )
            report = update_pack(pack)
            assert report.removed and report.added and report.chunks_embedded >= 1

            # The open agent answers from the state it opened: the old store and its BM25 index.
            assert ask("tomatoes sunlight stake the plants")[0] == "Growing tomatoes"
            assert "Brewing tea" not in ask("steep green tea leaves")
            assert ask("How do I set a socket timeout?")[0] == "Sockets guide"
        finally:
            holder.stdin.close()
            holder.wait(timeout=600)
    assert holder.returncode == 0

    # A new reader sees the new state.
    with KnowledgeGraphAgent(pack, llm=None) as agent:
        assert agent.query("steep green tea leaves").sources[0].title == "Brewing tea"
        assert all(s.title != "Growing tomatoes" for s in agent.query("tomatoes sunlight").sources)


# Threads that read .npy headers (numpy parses them with ast.literal_eval) while a garbage
# collection runs a finalizer written in Python: the race of python/cpython#106905.
AST_RACE = """
import ast, gc, sys, threading
import wikigr  # noqa: F401
sys.setswitchinterval(1e-6)
gc.set_threshold(50, 5, 5)
errors = []
class Cycle:
    def __init__(self): self.me = self
    def __del__(self): sum(range(50))
def read_headers():
    try:
        for _ in range(20000):
            Cycle()
            ast.literal_eval("{'descr': '<f4', 'fortran_order': False, 'shape': (1000, 384), }")
    except SystemError as exc:
        errors.append(exc)
threads = [threading.Thread(target=read_headers) for _ in range(6)]
for t in threads: t.start()
for t in threads: t.join()
print(len(errors))
"""


def test_numpy_headers_read_in_threads_do_not_fail_on_pythons_ast_race() -> None:
    """Packs are opened and queried in threads (PackSet, wikigr serve), and every .npy header is
    parsed by ast: importing wikigr serialises ast.parse (wikigr/__init__.py), so the race that
    fails such parses now and then on CPython 3.11 does not (it does without wikigr)."""
    done = subprocess.run([sys.executable, "-c", AST_RACE], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.split() == ["0"], done.stderr[-1000:]
