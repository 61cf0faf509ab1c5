"""Regressions of issue 14, items 1-6 and 18 (the pack-format heading): installs that lost a
pack, validation that passed what queries refuse, names, archive members written before they
were refused, hangs and stale staging folders, downloads past their deadline. Every hostile
input is built here, small (sizes are declared, or the caps configured, not written out)."""

from __future__ import annotations

import copy
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.test_cli import assert_one_error, cli
from tests.httpserver import LocalServer, Reply
from tests.test_share import (
    Member,
    edit_manifest,
    file_member,
    packs_home_entries,
    read_members,
    write_archive,
)
from wikigr.errors import ShareError, WikigrError
from wikigr.share import InstallLimits, clean_stale_staging, export_pack, install_pack
from wikigr.share.install import staging_folder

GIB = 1024**3


@pytest.fixture(scope="module")
def archive(built_pack: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("export") / "fixture.tar.gz"
    export_pack(built_pack, out)
    return out


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def damage_store(store: bytes) -> bytes:
    """A store damaged in the middle, as a bad disk or a bad export leaves it: the bytes of one
    article title become invalid UTF-8. The store still opens and counts right; reading the
    title fails."""
    damaged = bytearray(store)
    starts = [m.start() for m in re.finditer(re.escape(b"Sockets guide"), store)]
    assert starts, "the fixture's store holds the title"
    for start in starts:
        damaged[start] = 0xFF
    assert starts[0] > 8192 and starts[-1] < len(store) - 8192  # past the header, before the catalogue
    return bytes(damaged)


def with_files(members: list[Member], changes: dict[str, bytes]) -> list[Member]:
    """``members`` with the data of some files changed and the manifest's checksums and sizes
    recomputed to match them (what a careful attacker, or a bad exporter, produces)."""
    out: list[Member] = []
    for info, data in members:
        rel = info.name.partition("/")[2]
        if rel in changes:
            info = copy.copy(info)
            data = changes[rel]
            info.size = len(data)
        out.append((info, data))

    def fix(manifest: dict[str, object]) -> None:
        files = manifest["files"]
        sizes = manifest["sizes"]
        assert isinstance(files, dict) and isinstance(sizes, dict)
        for rel, data in changes.items():
            files[rel] = hashlib.sha256(data).hexdigest()
            sizes[rel] = len(data)

    return edit_manifest(out, fix)


# -- 1. a damaged store never replaces a good installed pack ---------------------------------------


@pytest.mark.parametrize("kind", ["archive", "folder"])
def test_force_install_of_a_damaged_store_keeps_the_installed_pack(
    kind: str,
    capsys: pytest.CaptureFixture[str],
    archive: Path,
    built_pack: Path,
    tmp_path: Path,
    wikigr_home: Path,
) -> None:
    install_pack(archive, register_skill=False)
    installed = wikigr_home / "packs" / "fixture"
    before = sha256(installed / "pack.db")
    damaged = damage_store((built_pack / "pack.db").read_bytes())
    if kind == "archive":
        source = write_archive(
            tmp_path / "bad.tar.gz", with_files(read_members(archive), {"pack.db": damaged})
        )
    else:
        source = tmp_path / "fixture"
        shutil.copytree(built_pack, source)
        (source / "pack.db").write_bytes(damaged)

    code, _, err = cli(capsys, "pack", "install", str(source), "--force", "--no-skill")
    assert code == 1, err
    assert_one_error(err, "refusing the pack: invalid store")
    assert "damaged" in err and "Invalid UTF-8" in err
    # The good pack is still there, whole, and answers.
    assert sha256(installed / "pack.db") == before
    code, out, err = cli(capsys, "query", "fixture", "socket timeout", "--json", "--profile", "baseline")
    assert code == 0, err
    assert json.loads(out)["sources"][0]["title"] == "Sockets guide"
    assert packs_home_entries(wikigr_home) == ["fixture"]  # no staging folder left


def test_a_query_on_a_damaged_store_is_one_clean_error(
    capsys: pytest.CaptureFixture[str], built_pack: Path, tmp_path: Path
) -> None:
    pack = tmp_path / "fixture"
    shutil.copytree(built_pack, pack)
    (pack / "pack.db").write_bytes(damage_store((pack / "pack.db").read_bytes()))
    code, _, err = cli(capsys, "query", str(pack), "Sockets guide", "--profile", "baseline")
    assert code == 1
    assert_one_error(err, "store query failed")
    assert "internal error" not in err


# A store damaged in its catalogue (the table schemas, read when the database opens): LadybugDB
# does not check it, and some damage crashes the library (a segmentation fault) or hangs it while
# opening. The recipe: invert one byte at an offset into the catalogue's pages (the store's header
# says where they are). These offsets were found on this fixture's store (ladybug 0.22) by inverting
# every 64th byte of the catalogue, each store opened in a child process; the tests try them in
# order and, should none do it any more (another library version), every 64th byte again.
CATALOGUE_CRASHES = (1408, 1600, 2496)  # SIGSEGV while opening (1408, 1600) or reading (2496)
CATALOGUE_HANGS = (1664, 2048, 4160)  # still running after 5 s of CPU (opening takes well under 1 s)
PAGE = 4096
HANG_CPU_SECONDS = 5
# The probe: a child process opens and reads the store with HANG_CPU_SECONDS of CPU after its
# imports; past them the kernel stops it (SIGXCPU), however busy the machine (a hang spins).
OPEN_AND_READ = (
    "import resource, sys\n"
    "from pathlib import Path\n"
    "from wikigr.pack.store import Store\n"
    "used = resource.getrusage(resource.RUSAGE_SELF)\n"
    f"cap = int(used.ru_utime + used.ru_stime) + {HANG_CPU_SECONDS}\n"
    "resource.setrlimit(resource.RLIMIT_CPU, (cap, cap + 5))\n"
    "Store.open(Path(sys.argv[1])).verify()\n"
)


def _catalogue(store: bytes) -> range:
    """The byte range of the store's catalogue, from its header: after the magic ``LBUG`` and the
    storage version (8 bytes), the catalogue's first page and page count (two uint32)."""
    assert store[:4] == b"LBUG", "not a LadybugDB single-file store"
    first, pages = int.from_bytes(store[12:16], "little"), int.from_bytes(store[16:20], "little")
    assert first > 0 and pages > 0 and (first + pages) * PAGE <= len(store)
    return range(first * PAGE, (first + pages) * PAGE)


def _damaged_catalogue(store: Path, want: str, tmp_path: Path) -> Path:
    """A copy of ``store`` with one catalogue byte inverted that makes the database library
    ``want`` ("crash": killed by a signal; "hang": not done in HANG_CPU_SECONDS of CPU) on opening
    and reading it, tried in a real child process."""
    data = store.read_bytes()
    catalogue = _catalogue(data)
    known = CATALOGUE_CRASHES if want == "crash" else CATALOGUE_HANGS
    tried: list[int] = []
    for offset in [*known, *(o for o in range(0, len(catalogue), 64) if o not in known)]:
        damaged = bytearray(data)
        damaged[catalogue.start + offset] ^= 0xFF
        target = tmp_path / f"probe-{offset}" / "pack.db"
        target.parent.mkdir()
        target.write_bytes(bytes(damaged))
        try:
            done = subprocess.run(
                [sys.executable, "-c", OPEN_AND_READ, str(target)], capture_output=True, timeout=600
            )
        except subprocess.TimeoutExpired:  # a hang that does not spin
            if want == "hang":
                return target
        else:
            hung = done.returncode == -signal.SIGXCPU
            crashed = done.returncode < 0 and not hung
            if (want == "hang" and hung) or (want == "crash" and crashed):
                return target
        tried.append(offset)
        shutil.rmtree(target.parent)
    raise AssertionError(f"no catalogue byte makes the database library {want} (tried {tried})")


def test_a_store_that_crashes_the_database_library_is_one_clean_error(
    archive: Path, built_pack: Path, tmp_path: Path, wikigr_home: Path
) -> None:
    damaged = _damaged_catalogue(built_pack / "pack.db", "crash", tmp_path)
    pack = tmp_path / "fixture"
    shutil.copytree(built_pack, pack)
    shutil.copyfile(damaged, pack / "pack.db")

    done = _run_wikigr(["pack", "validate", str(pack)], wikigr_home)  # died of SIGSEGV
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert_one_error(done.stderr, "invalid pack")
    assert "store: the database library crashed (SIG" in done.stderr and "the store is damaged" in done.stderr

    install_pack(archive, register_skill=False)
    installed = wikigr_home / "packs" / "fixture"
    before = sha256(installed / "pack.db")
    done = _run_wikigr(["pack", "install", str(pack), "--force", "--no-skill"], wikigr_home)
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert_one_error(done.stderr, "refusing the pack: invalid store: the database library crashed (SIG")
    assert sha256(installed / "pack.db") == before  # the installed pack is untouched, and answers
    assert packs_home_entries(wikigr_home) == ["fixture"]
    done = _run_wikigr(["query", "fixture", "socket timeout", "--json", "--profile", "baseline"], wikigr_home)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["sources"][0]["title"] == "Sockets guide"


def test_a_store_that_hangs_the_database_library_is_stopped_at_the_timeout(
    built_pack: Path, tmp_path: Path, wikigr_home: Path
) -> None:
    from wikigr.validate import validate_pack

    damaged = _damaged_catalogue(built_pack / "pack.db", "hang", tmp_path)
    pack = tmp_path / "fixture"
    shutil.copytree(built_pack, pack)
    shutil.copyfile(damaged, pack / "pack.db")
    start = time.monotonic()
    report = validate_pack(pack, timeout=3)
    assert time.monotonic() - start < 30
    assert not report.ok
    failed = [c for c in report.checks if not c.ok]
    assert [c.name for c in failed] == ["store"]
    assert failed[0].detail.startswith("opening and querying the store did not finish within 3 s (stopped)")
    assert "\n" not in failed[0].detail


def test_the_store_checks_time_limit_is_wikigr_validate_timeout(
    built_pack: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child's limit is generous by default (a busy machine loading an st: model is slow, not
    hung) and $WIKIGR_VALIDATE_TIMEOUT sets it; a value that is no number of seconds is a usage error."""
    damaged = _damaged_catalogue(built_pack / "pack.db", "hang", tmp_path)
    pack = tmp_path / "fixture"
    shutil.copytree(built_pack, pack)
    shutil.copyfile(damaged, pack / "pack.db")
    monkeypatch.setenv("WIKIGR_VALIDATE_TIMEOUT", "2.5")
    start = time.monotonic()
    code, _, err = cli(capsys, "pack", "validate", str(pack))
    assert time.monotonic() - start < 60
    assert code == 1
    assert_one_error(err, "store: opening and querying the store did not finish within 2.5 s (stopped)")
    for bad in ("soon", "0", "-1", "nan", "inf"):
        monkeypatch.setenv("WIKIGR_VALIDATE_TIMEOUT", bad)
        code, _, err = cli(capsys, "pack", "validate", str(built_pack))
        assert code == 2, bad
        assert_one_error(err, f"WIKIGR_VALIDATE_TIMEOUT must be a positive number of seconds, not {bad!r}")
    monkeypatch.delenv("WIKIGR_VALIDATE_TIMEOUT")
    from wikigr.validate.checks import check_timeout

    assert check_timeout(built_pack) >= 600


# -- 2. validate checks what the agent loads, with the agent's code ------------------------------


def _config(data: object) -> bytes:
    return json.dumps(data).encode()


# case -> (file, its bad content, what validate and install say, what the agent says)
BAD_PACKS: dict[str, tuple[str, bytes, str, str]] = {
    "unknown-key": ("kg_config.json", _config({"profil": "auto"}), "profil: unknown field", ""),
    "unknown-profile": ("kg_config.json", _config({"profile": "fastest"}), "unknown profile 'fastest'", ""),
    "negative-top-k": ("kg_config.json", _config({"top_k": -1}), "top_k must be a positive integer", ""),
    "unknown-stage-option": (
        "kg_config.json",
        _config({"stages": {"gate": {"treshold": 0.3}}}),
        "treshold: unknown field",
        "",
    ),
    "deeply-nested-config": ("kg_config.json", b"[" * 100_000, "nested too deeply", ""),
    "damaged-store": ("pack.db", b"", "Invalid UTF-8", "store query failed"),
}


@pytest.mark.parametrize("case", list(BAD_PACKS))
def test_validate_and_install_refuse_what_the_agent_refuses(
    case: str, capsys: pytest.CaptureFixture[str], built_pack: Path, tmp_path: Path, wikigr_home: Path
) -> None:
    from wikigr.agent import KnowledgeGraphAgent

    pack = tmp_path / "fixture"
    shutil.copytree(built_pack, pack)
    rel, data, expected, agent_says = BAD_PACKS[case]
    if case == "damaged-store":
        data = damage_store((pack / "pack.db").read_bytes())
    (pack / rel).write_bytes(data)

    # The agent refuses the pack (on opening it, or on its first question)...
    with (
        pytest.raises(WikigrError, match=re.escape(agent_says or expected)),
        KnowledgeGraphAgent(pack, llm=None) as agent,
    ):
        agent.query("Sockets guide")
    # ...so validate says invalid, exit 1, naming the reason...
    code, out, err = cli(capsys, "pack", "validate", str(pack))
    assert code == 1, out
    assert_one_error(err, f"invalid pack {pack}")
    assert expected in err
    # ...and install refuses it, leaving nothing behind.
    code, _, err = cli(capsys, "pack", "install", str(pack), "--no-skill")
    assert code == 1
    assert_one_error(err, "refusing the pack")
    assert expected in err
    assert packs_home_entries(wikigr_home) == []


def test_validate_answers_a_question_with_the_agent(
    capsys: pytest.CaptureFixture[str], built_pack: Path
) -> None:
    code, out, err = cli(capsys, "pack", "validate", str(built_pack), "--json")
    assert code == 0, err
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert checks["store"]["ok"] and "every table read" in checks["store"]["detail"]
    assert checks["query"]["ok"] and "answered with" in checks["query"]["detail"]


# -- 3. one name rule ------------------------------------------------------------------------------


def test_the_name_rule() -> None:
    from wikigr.pack.manifest import check_name

    for good in ("pydocs", "mixed-10k", "a", "3d", "a" * 64):
        assert check_name(good) == good
    for bad, suggestion in [
        ("pydocs\n", "pydocs"),
        ("my_pack.v2", "my-pack-v2"),
        ("PyDocs", "pydocs"),
        ("-a", "a"),
        ("a-", "a"),
        ("a--b", "a-b"),
        ("a" * 65, "a" * 64),
        ("../x", "x"),
        ("", None),
        ("__", None),
    ]:
        with pytest.raises(ValueError, match="invalid pack name") as raised:
            check_name(bad)
        message = str(raised.value)
        assert "\n" not in message
        assert (f"try {suggestion!r}" in message) if suggestion else "try" not in message


@pytest.mark.parametrize(
    ("name", "hint"), [("nl\n", "invalid pack name 'nl\\n'"), ("my_pack.v2", "'my-pack-v2'")]
)
def test_pack_create_refuses_a_bad_name(
    name: str, hint: str, capsys: pytest.CaptureFixture[str], wikigr_home: Path
) -> None:
    from tests.conftest import DOCS

    code, _, err = cli(capsys, "pack", "create", name, "--url", str(DOCS))
    assert code == 2
    assert_one_error(err, hint)
    assert packs_home_entries(wikigr_home) == []


@pytest.mark.parametrize("kind", ["archive", "folder"])
def test_install_refuses_a_bad_manifest_name(
    kind: str,
    capsys: pytest.CaptureFixture[str],
    archive: Path,
    built_pack: Path,
    tmp_path: Path,
    wikigr_home: Path,
) -> None:
    def rename(manifest: dict[str, object]) -> None:
        manifest["name"] = "fixture\n"

    if kind == "archive":
        source = write_archive(tmp_path / "nl.tar.gz", edit_manifest(read_members(archive), rename))
    else:
        source = tmp_path / "nl"
        shutil.copytree(built_pack, source)
        manifest = json.loads((source / "manifest.json").read_text())
        rename(manifest)
        (source / "manifest.json").write_text(json.dumps(manifest))
    skills = tmp_path / "skills"
    code, _, err = cli(capsys, "pack", "install", str(source), "--skills-dir", str(skills))
    assert code == 1
    assert_one_error(err, "invalid pack name 'fixture\\n'")
    assert packs_home_entries(wikigr_home) == []
    assert not skills.exists()


def test_an_installed_pack_its_skill_folder_and_skill_name_match(archive: Path, tmp_path: Path) -> None:
    from wikigr.skill import parse_front_matter

    report = install_pack(archive, skills_dir=tmp_path / "skills")
    assert report.skill is not None
    assert (
        report.path.name == report.skill.parent.name == parse_front_matter(report.skill.read_text())["name"]
    )


# -- 4. archive members are checked against the manifest before their data is read ----------------


def test_a_member_larger_than_the_manifest_says_is_refused_from_its_header(
    archive: Path, tmp_path: Path, wikigr_home: Path
) -> None:
    members = read_members(archive)
    cut = next(i for i, (m, _) in enumerate(members) if m.name == "fixture/pack.db")
    bomb = tarfile.TarInfo("fixture/pack.db")
    bomb.size = 6 * GIB  # under the per-file cap; only the header is written: no data follows
    path = write_archive(tmp_path / "bomb.tar.gz", [*members[:cut], (bomb, None)])
    start = time.monotonic()
    with pytest.raises(ShareError, match=r"pack\.db is 6,442,450,944 bytes but the manifest says [\d,]+$"):
        install_pack(path, register_skill=False)
    assert time.monotonic() - start < 30  # not the 6 GiB read (a busy machine adds seconds)
    assert packs_home_entries(wikigr_home) == []


def _zeros_archive(
    path: Path, members: list[Member], name: str, size: int, declared: int | None = None
) -> Path:
    """``members`` then a member ``name`` of ``size`` zero bytes, written as a real gzip stream
    (a tar bomb: ``size`` bytes compress to a thousandth of that). Its header says ``declared``
    bytes (default ``size``): when more, the archive ends early, as a cut-off bomb would."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
        head = buffer.tell()
    # The zero member's header, then its data streamed into the compressor, then the end blocks.
    info = tarfile.TarInfo(name)
    info.size = size if declared is None else declared
    header = info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")
    compressor = zlib.compressobj(1, zlib.DEFLATED, 31)
    with path.open("wb") as out:
        out.write(compressor.compress(buffer.getvalue()[:head] + header))
        zeros = bytes(1024 * 1024)
        for _ in range(size // len(zeros)):
            out.write(compressor.compress(zeros))
        out.write(compressor.compress(bytes(2 * tarfile.BLOCKSIZE)))
        out.write(compressor.flush())
    return path


@pytest.mark.parametrize(
    ("name", "declared", "expected"),
    [
        ("fixture/pack.db", None, "pack.db is 67,108,864 bytes but the manifest says"),
        # 6 GiB declared, 64 MiB sent: refused from the header, not when the data runs out.
        ("fixture/zeros.bin", 6 * GIB, "zeros.bin is present but not listed in the manifest"),
    ],
)
def test_a_tar_bomb_is_refused_before_its_data_is_written(
    name: str, declared: int | None, expected: str, archive: Path, tmp_path: Path, wikigr_home: Path
) -> None:
    members = [(m, d) for m, d in read_members(archive) if m.name != "fixture/pack.db"]
    path = _zeros_archive(tmp_path / "zeros.tar.gz", members, name, 64 * 1024 * 1024, declared)
    assert path.stat().st_size < 1024 * 1024
    with pytest.raises(ShareError, match=expected):
        install_pack(path, register_skill=False)
    assert packs_home_entries(wikigr_home) == []


def test_a_manifest_declaring_more_than_the_cap_is_refused_before_any_file(
    archive: Path, tmp_path: Path, wikigr_home: Path
) -> None:
    def inflate(manifest: dict[str, object]) -> None:
        sizes = manifest["sizes"]
        assert isinstance(sizes, dict)
        sizes["pack.db"] = 7 * GIB

    members = edit_manifest(read_members(archive), inflate)
    path = write_archive(tmp_path / "declared.tar.gz", members[:2])  # nothing after the manifest
    with pytest.raises(ShareError, match=re.escape("its manifest declares 7.0 GiB, over the cap of 1.0 GiB")):
        install_pack(path, register_skill=False, limits=InstallLimits(max_total_bytes=GIB))

    def enormous(manifest: dict[str, object]) -> None:
        sizes = manifest["sizes"]
        assert isinstance(sizes, dict)
        sizes["pack.db"] = 1024**5  # a pebibyte: under this cap, over any free disk space

    members = edit_manifest(read_members(archive), enormous)
    path = write_archive(tmp_path / "enormous.tar.gz", members[:2])
    limits = InstallLimits(max_member_bytes=2 * 1024**5, max_total_bytes=2 * 1024**5)
    with pytest.raises(ShareError, match=r"it needs 1024\.0 TiB; the disk of .*/packs has .* free"):
        install_pack(path, register_skill=False, limits=limits)
    assert packs_home_entries(wikigr_home) == []


def test_an_archive_without_sizes_or_with_files_before_its_manifest_is_refused(
    archive: Path, tmp_path: Path
) -> None:
    def drop_sizes(manifest: dict[str, object]) -> None:
        del manifest["sizes"]

    path = write_archive(tmp_path / "nosizes.tar.gz", edit_manifest(read_members(archive), drop_sizes))
    with pytest.raises(ShareError, match="does not list the size of every file"):
        install_pack(path, register_skill=False)
    members = read_members(archive)
    path = write_archive(
        tmp_path / "late.tar.gz", [members[0], file_member("fixture/urls.txt", b"x"), *members[1:]]
    )
    with pytest.raises(ShareError, match=re.escape("its first file is urls.txt, not manifest.json")):
        install_pack(path, register_skill=False)


def _sparse_member(name: str, realsize: int) -> Member:
    """A PAX (GNU 1.0) sparse member: a 512-byte map and 512 bytes of data standing for a file
    of ``realsize`` bytes, mostly holes."""
    info = tarfile.TarInfo(name)
    info.pax_headers = {
        "GNU.sparse.major": "1",
        "GNU.sparse.minor": "0",
        "GNU.sparse.name": name,
        "GNU.sparse.realsize": str(realsize),
    }
    sparse_map = b"1\n" + f"{realsize - 512}\n512\n".encode()
    data = sparse_map.ljust(512, b"\0") + b"x" * 512
    info.size = len(data)
    return info, data


def test_sparse_members_are_refused(archive: Path, tmp_path: Path, wikigr_home: Path) -> None:
    members = read_members(archive)
    path = write_archive(
        tmp_path / "sparse.tar.gz", [*members[:2], _sparse_member("fixture/pack.db", 7 * GIB)]
    )
    with tarfile.open(path) as tar:  # tarfile itself would expand it to 7 GiB
        assert tar.getmember("fixture/pack.db").issparse()
    with pytest.raises(ShareError, match=re.escape("'fixture/pack.db' is a sparse file")):
        install_pack(path, register_skill=False)

    old_style = tarfile.TarInfo("fixture/pack.db")  # the old GNU sparse type
    old_style.type = tarfile.GNUTYPE_SPARSE
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for info, data in members[:2]:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
        tar.addfile(old_style)
    path = tmp_path / "gnu-sparse.tar.gz"
    path.write_bytes(gzip.compress(buffer.getvalue()))
    with pytest.raises(ShareError, match=re.escape("'fixture/pack.db' is a sparse file")):
        install_pack(path, register_skill=False)
    assert packs_home_entries(wikigr_home) == []


# -- 5. deep nesting, FIFOs, killed installs, hard links ------------------------------------------


def test_a_deeply_nested_manifest_is_one_clean_error(
    capsys: pytest.CaptureFixture[str], archive: Path, built_pack: Path, tmp_path: Path
) -> None:
    pack = tmp_path / "nested"
    shutil.copytree(built_pack, pack)
    (pack / "manifest.json").write_bytes(b"[" * 100_000)
    for args in (
        ["pack", "install", str(pack)],
        ["pack", "validate", str(pack)],
        ["pack", "info", str(pack)],
    ):
        code, _, err = cli(capsys, *args)
        assert code == 1, args
        assert_one_error(err, "nested too deeply")
    members = read_members(archive)
    nested = file_member("fixture/manifest.json", b"[" * 100_000)
    path = write_archive(tmp_path / "nested.tar.gz", [members[0], nested, *members[2:]])
    code, _, err = cli(capsys, "pack", "install", str(path))
    assert code == 1
    assert_one_error(err, "nested too deeply")


def _run_wikigr(args: list[str], home: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``python -m wikigr ARGS`` in a child process; ``timeout`` only catches a hang (the child
    imports its stacks first, which takes long on a busy machine)."""
    env = {**os.environ, "WIKIGR_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "wikigr", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def test_a_fifo_as_the_source_is_refused_without_blocking(tmp_path: Path, wikigr_home: Path) -> None:
    fifo = tmp_path / "pack.tar.gz"
    os.mkfifo(fifo)
    done = _run_wikigr(["pack", "install", str(fifo)], wikigr_home)  # hung before
    assert done.returncode == 1, done.stderr
    assert_one_error(done.stderr, "not a regular file or a folder")
    assert packs_home_entries(wikigr_home) == []


def _trickle(request: object) -> Reply:
    def body() -> Iterator[bytes]:
        for _ in range(1200):  # one byte every half second, for ten minutes at most
            yield b"\x1f"
            time.sleep(0.5)

    return Reply(body=body(), content_type="application/gzip", content_length=False)


def test_a_killed_install_leaves_a_staging_folder_the_next_install_removes(
    archive: Path, server: LocalServer, wikigr_home: Path
) -> None:
    url = server.route("/slow.tar.gz", _trickle)
    env = {**os.environ, "WIKIGR_HOME": str(wikigr_home)}
    process = subprocess.Popen(
        [sys.executable, "-m", "wikigr", "pack", "install", url],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    packs = wikigr_home / "packs"
    try:
        deadline = time.monotonic() + 600  # the child imports its stacks first: slow on a busy machine
        while not any(p.is_dir() for p in packs.glob(".install-*")) and time.monotonic() < deadline:
            assert process.poll() is None, "the install ended before it began downloading"
            time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGKILL)  # no cleanup can run
        process.wait(timeout=10)
    stale = [p for p in packs.glob(".install-*") if p.is_dir()]
    assert len(stale) == 1

    with staging_folder(packs) as live:  # the next install starts by removing stale folders
        assert not stale[0].exists()
        # An install in progress holds its staging lock: a cleanup leaves its folder alone.
        killed = packs / ".install-feedface0000"
        killed.mkdir()
        assert clean_stale_staging(packs) == [killed]
        assert live.is_dir()
    (packs / ".install-deadbeef0000").mkdir()
    install_pack(archive, register_skill=False)
    assert packs_home_entries(wikigr_home) == ["fixture"]
    assert not list(packs.glob(".install-*"))


def test_a_folder_install_refuses_a_hard_link(
    capsys: pytest.CaptureFixture[str], built_pack: Path, tmp_path: Path, wikigr_home: Path
) -> None:
    pack = tmp_path / "fixture"
    shutil.copytree(built_pack, pack)
    os.link(pack / "urls.txt", tmp_path / "another-name")
    code, _, err = cli(capsys, "pack", "install", str(pack))
    assert code == 1
    assert_one_error(err, "urls.txt: a hard link")
    assert packs_home_entries(wikigr_home) == []


# -- 6. the download deadline holds; a malformed URL is a usage error -----------------------------


def test_a_trickling_body_stops_at_the_deadline(server: LocalServer, wikigr_home: Path) -> None:
    url = server.route("/trickle.tar.gz", _trickle)
    start = time.monotonic()
    with pytest.raises(ShareError, match="timed out after 1s"):
        install_pack(url, limits=InstallLimits(timeout=1.0), register_skill=False)
    assert time.monotonic() - start < 30  # the trickle goes on for ten minutes
    # The command line, in a process of its own (before: still running after 700 s).
    done = _run_wikigr(["pack", "install", url, "--timeout", "1"], wikigr_home)
    assert done.returncode == 1
    assert_one_error(done.stderr, "timed out after 1s")
    assert packs_home_entries(wikigr_home) == []


def test_trickling_headers_stop_at_the_deadline(wikigr_home: Path) -> None:
    """A server that never finishes its headers: no read ever times out, the deadline does."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            connection.sendall(b"HTTP/1.1 200 OK\r\n")
            for _ in range(3000):  # 10 min at most: a client that does not give up fails, not hangs
                if stop.is_set():
                    return
                try:
                    connection.sendall(b"X")
                except OSError:
                    return
                time.sleep(0.2)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/p.tar.gz"
    start = time.monotonic()
    try:
        with pytest.raises(ShareError, match="timed out after 1s"):
            install_pack(url, limits=InstallLimits(timeout=1.0), register_skill=False)
        assert time.monotonic() - start < 30  # the headers trickle for ten minutes
    finally:
        stop.set()
        listener.close()
    assert packs_home_entries(wikigr_home) == []


@pytest.mark.parametrize("url", ["http://[::1", "http://[::1]:99999/p.tar.gz", "https:///p.tar.gz"])
def test_a_malformed_url_is_a_usage_error(
    url: str, capsys: pytest.CaptureFixture[str], wikigr_home: Path
) -> None:
    code, _, err = cli(capsys, "pack", "install", url)
    assert code == 2
    assert_one_error(err, "invalid URL")
    assert packs_home_entries(wikigr_home) == []


# -- 18. docs/pack-format.md names the store's schema version -------------------------------------


def test_pack_format_names_the_current_schema_versions() -> None:
    from wikigr.documents_kind import SCHEMA_VERSION
    from wikigr.openml.kind import OPENML_SCHEMA_VERSION

    text = (Path(__file__).parents[1] / "docs" / "pack-format.md").read_text(encoding="utf-8")
    heading = re.search(r"^## The store \(`pack.db`, schema version (\d+)\)", text, re.M)
    assert heading and int(heading.group(1)) == SCHEMA_VERSION
    assert f"OpenML pack's store has schema version {OPENML_SCHEMA_VERSION}" in text


def test_what_a_manifest_says_is_quoted_short_and_its_numbers_bounded(
    capsys: pytest.CaptureFixture[str], archive: Path, tmp_path: Path, wikigr_home: Path
) -> None:
    def huge_name(manifest: dict[str, object]) -> None:
        manifest["name"] = "a" * 1_000_000

    path = write_archive(tmp_path / "name.tar.gz", edit_manifest(read_members(archive), huge_name))
    code, _, err = cli(capsys, "pack", "install", str(path))
    assert code == 1 and len(err) < 1200  # not the million characters of the name
    assert_one_error(err, "invalid pack name 'aaaa")
    members = read_members(archive)
    info, data = members[1]
    assert info.name == "fixture/manifest.json" and data is not None
    # json refuses to read an integer of more than 4300 digits
    text = re.sub(r'"format_version": *\d+', '"format_version": ' + "9" * 5000, data.decode(), count=1)
    path = write_archive(
        tmp_path / "number.tar.gz", [members[0], file_member(info.name, text.encode()), *members[2:]]
    )
    code, _, err = cli(capsys, "pack", "install", str(path))
    assert code == 1
    assert_one_error(err, "corrupt manifest")
    assert "a number too long" in err and "internal error" not in err
    assert packs_home_entries(wikigr_home) == []


def test_a_packs_text_cannot_drive_the_terminal(
    capsys: pytest.CaptureFixture[str], archive: Path, tmp_path: Path, wikigr_home: Path
) -> None:
    def escape(manifest: dict[str, object]) -> None:
        manifest["description"] = "line1\nline2\x1b[31m\x00\x9b2J \x07end"

    path = write_archive(tmp_path / "esc.tar.gz", edit_manifest(read_members(archive), escape))
    code, _, err = cli(capsys, "pack", "install", str(path))
    assert code == 0, err
    for args in (["pack", "list"], ["pack", "info", "fixture"]):
        code, out, _ = cli(capsys, *args)
        assert code == 0 and "line2[31m" in out and "end" in out
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", out), args


@pytest.mark.parametrize("args", [["query", "{}", "x"], ["pack", "info", "{}"], ["pack", "install", "{}"]])
def test_a_name_too_long_for_the_file_system_is_a_usage_error(
    args: list[str], capsys: pytest.CaptureFixture[str], wikigr_home: Path
) -> None:
    name = "a" * 300
    code, _, err = cli(capsys, *(a.replace("{}", name) for a in args))
    assert code == 2
    assert_one_error(err, "aaaa")
    assert "internal error" not in err and len(err) < 400
