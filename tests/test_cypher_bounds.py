"""User Cypher is read-only, and bounded: it runs in a child process under a memory cap (RLIMIT_AS
and a bounded buffer pool), a time cap (LadybugDB's query timeout) and caps on the rows and bytes
read back. Each hostile query below grew past 4 GiB of memory before; now it ends with one line
("refused: the query used more than N MiB" / "the query was stopped after N s") or a cut result,
and the processes' peak memory stays under PEAK_CAP."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from wikigr.pack.cypher import MAX_RESULT_BYTES, MEMORY_MIB, QueryLimitError, bounded_query

PEAK_CAP_KIB = 2 * 1024 * 1024  # 2 GiB: the largest process of a `wikigr cypher`, its child included
REFUSAL = f"Error: refused: the query used more than {MEMORY_MIB} MiB"

# Measures the peak memory (ru_maxrss, KiB) of a command and of every process it waited for.
PEAK = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
    "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
    "print(done.returncode, peak, file=sys.stderr)\n"
    "sys.stdout.write(done.stdout + '\\x00' + done.stderr)\n"
)


def _cypher(pack: Path, query: str, *flags: str) -> tuple[int, str, str, int]:
    """``wikigr cypher PACK QUERY`` in a real process: (exit code, stdout, stderr, peak KiB)."""
    done = subprocess.run(
        [sys.executable, "-c", PEAK, sys.executable, "-m", "wikigr", "cypher", str(pack), query, *flags],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=900,  # the queries stop themselves far sooner: this only catches a hang
    )
    code, peak = (int(v) for v in done.stderr.split()[-2:])
    out, err = done.stdout.split("\x00", 1)
    return code, out, err, peak


HOSTILE = {
    "cartesian-collecting-text": (
        "MATCH (a:Chunk), (b:Chunk) UNWIND range(1, 20000) AS i RETURN collect(a.text + b.text)"
    ),
    "unwind-a-billion": "UNWIND range(1, 1000000000) AS x RETURN x",
    "huge-string-repeat": "UNWIND range(1, 100000) AS i RETURN repeat('x', 100000000)",
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_user_cypher_is_refused_at_its_memory_cap(case: str, built_pack: Path) -> None:
    code, out, err, peak = _cypher(built_pack, HOSTILE[case])
    assert code == 1, out
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines == [REFUSAL], err
    assert peak < PEAK_CAP_KIB, f"peak {peak} KiB"


def test_a_wide_cartesian_is_cut_at_the_rows_and_bytes_caps(built_pack: Path) -> None:
    query = "UNWIND range(1, 100000) AS i MATCH (a:Chunk), (b:Chunk) RETURN i, a.text, b.text, a.embedding, b"
    code, out, err, peak = _cypher(built_pack, query, "--max-rows", "100000", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["truncated"] is True
    assert 0 < result["row_count"] < 100_000  # the byte cap cut it first
    assert len(out) < 4 * MAX_RESULT_BYTES
    assert peak < PEAK_CAP_KIB, f"peak {peak} KiB"
    code, out, err, peak = _cypher(built_pack, query)  # the table says where it was cut
    assert code == 0, err
    assert "1000 row(s) (truncated at 1000 rows or 64 MiB; use --max-rows or a narrower query)" in out


def test_user_cypher_is_stopped_at_its_time_cap(built_pack: Path) -> None:
    slow = (
        "UNWIND range(1, 20000) AS i UNWIND range(1, 20000) AS j "
        "WITH i, j WHERE (i * j) % 1000003 = 7 RETURN count(*)"
    )
    with pytest.raises(QueryLimitError, match=r"^the query was stopped after 0.5 s$"):
        bounded_query(built_pack / "pack.db", None, slow, timeout_ms=500)


def test_the_bounded_child_still_answers_and_refuses_as_before(built_pack: Path) -> None:
    from wikigr.errors import UsageError

    columns, rows, truncated = bounded_query(
        built_pack / "pack.db", None, "MATCH (c:Chunk) RETURN c.id, 1.5, [1, 2]"
    )
    [[chunks]] = bounded_query(built_pack / "pack.db", None, "MATCH (c:Chunk) RETURN count(c)")[1]
    assert len(columns) == 3 and len(rows) == chunks > 0 and not truncated
    assert rows[0][1:] == [1.5, [1, 2]]
    with pytest.raises(UsageError, match="bad Cypher"):
        bounded_query(built_pack / "pack.db", None, "MATCH (c:Nope) RETURN c")
    with pytest.raises(UsageError, match="read-only"):
        bounded_query(built_pack / "pack.db", None, "MATCH (c:Chunk) DELETE c")


def test_the_childs_reply_keeps_ladybugs_value_types(built_pack: Path) -> None:
    import datetime
    import decimal
    import uuid

    query = (
        "RETURN date('2020-01-02'), timestamp('2020-01-02 03:04:05'), interval('3 days'), "
        "gen_random_uuid(), BLOB('ab'), CAST(1.5 AS DECIMAL(5,2)), "
        "CAST('2020-01-02 03:04:05+02' AS TIMESTAMP_TZ), map([1], ['a'])"
    )
    [row] = bounded_query(built_pack / "pack.db", None, query)[1]
    kinds = [datetime.date, datetime.datetime, datetime.timedelta, uuid.UUID, bytes, decimal.Decimal]
    assert [type(v) for v in row[:6]] == kinds
    assert row[6].tzinfo == datetime.UTC and row[7] == {1: "a"}
