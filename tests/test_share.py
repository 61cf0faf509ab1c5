"""Sharing: export, install (archive, folder, URL), remove, skills — and every refusal of an
untrusted archive, each built here with crafted tar members."""

from __future__ import annotations

import copy
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.test_cli import assert_one_error, cli
from tests.httpserver import LocalServer
from wikigr.share import InstallLimits, export_pack, install_pack
from wikigr.skill import MAX_DESCRIPTION, parse_front_matter

Member = tuple[tarfile.TarInfo, bytes | None]


@pytest.fixture(scope="module")
def archive(built_pack: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("export") / "fixture.tar.gz"
    export_pack(built_pack, out)
    return out


def read_members(path: Path) -> list[Member]:
    with tarfile.open(path) as tar:
        members: list[Member] = []
        for m in tar.getmembers():
            f = tar.extractfile(m) if m.isfile() else None
            members.append((m, f.read() if f else None))
        return members


def write_archive(path: Path, members: list[Member]) -> Path:
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def file_member(name: str, data: bytes) -> Member:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def special_member(name: str, kind: bytes, linkname: str = "") -> Member:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    return info, None


def edit_manifest(members: list[Member], edit: Callable[[dict[str, object]], None]) -> list[Member]:
    out: list[Member] = []
    for info, data in members:
        if info.name.endswith("/manifest.json") and data is not None:
            manifest = json.loads(data)
            edit(manifest)
            data = json.dumps(manifest).encode()
            info = copy.copy(info)
            info.size = len(data)
        out.append((info, data))
    return out


def replace_data(members: list[Member], suffix: str, data: bytes) -> list[Member]:
    out: list[Member] = []
    for info, old in members:
        if info.name.endswith(suffix):
            info = copy.copy(info)
            info.size = len(data)
            old = data
        out.append((info, old))
    return out


def flip_a_byte(members: list[Member], suffix: str) -> list[Member]:
    """The member's data with its first byte changed: same size, another sha256."""
    out: list[Member] = []
    for info, data in members:
        if info.name.endswith(suffix) and data:
            data = bytes([data[0] ^ 1]) + data[1:]
        out.append((info, data))
    return out


def packs_home_entries(home: Path) -> list[str]:
    packs = home / "packs"
    return sorted(p.name for p in packs.iterdir() if not p.name.endswith(".lock")) if packs.exists() else []


# -- the happy path -------------------------------------------------------------------------------


def test_export_install_query_remove(
    capsys: pytest.CaptureFixture[str], built_pack: Path, tmp_path: Path, wikigr_home: Path
) -> None:
    out = tmp_path / "fixture.tar.gz"
    code, stdout, err = cli(capsys, "pack", "export", str(built_pack), "-o", str(out), "--json")
    assert code == 0, err
    assert json.loads(stdout)["name"] == "fixture"

    skills = tmp_path / "skills"
    code, stdout, err = cli(capsys, "pack", "install", str(out), "--skills-dir", str(skills), "--json")
    assert code == 0, err
    report = json.loads(stdout)
    assert report["kind"] == "archive" and report["checksums_verified"] and not report["replaced"]
    assert Path(report["path"]) == wikigr_home / "packs" / "fixture"
    skill_file = skills / "fixture" / "SKILL.md"
    assert report["skill"] == str(skill_file)
    front = parse_front_matter(skill_file.read_text())
    assert front["name"] == "fixture"
    assert 0 < len(front["description"]) <= MAX_DESCRIPTION
    assert "Sockets guide" in front["description"] and "Use this skill" in front["description"]
    body = skill_file.read_text()
    assert 'wikigr query fixture "' in body and "sources[n-1]" in body and "low_confidence" in body

    code, stdout, _ = cli(capsys, "pack", "list", "--json")
    assert [p["name"] for p in json.loads(stdout)["packs"]] == ["fixture"]
    code, stdout, _ = cli(capsys, "query", "fixture", "socket timeout", "--json", "--profile", "baseline")
    assert code == 0 and json.loads(stdout)["sources"][0]["section"] == "Timeouts"

    code, _, err = cli(capsys, "pack", "install", str(out), "--skills-dir", str(skills))
    assert code == 1
    assert_one_error(err, "already installed")
    code, stdout, err = cli(capsys, "pack", "install", str(out), "--skills-dir", str(skills), "--force")
    assert code == 0 and "Replaced pack fixture" in stdout, err

    code, stdout, err = cli(capsys, "pack", "remove", "fixture", "--skills-dir", str(skills), "--json")
    assert code == 0, err
    removed = json.loads(stdout)
    assert removed["path"] and removed["skill"] == str(skill_file)
    assert not (wikigr_home / "packs" / "fixture").exists() and not (skills / "fixture").exists()
    assert packs_home_entries(wikigr_home) == []

    code, _, err = cli(capsys, "pack", "remove", "fixture", "--skills-dir", str(skills))
    assert code == 2
    assert_one_error(err, "unknown pack 'fixture'")


def test_install_registers_in_home_claude_skills_by_default(
    archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    report = install_pack(archive)
    assert report.skill == tmp_path / ".claude" / "skills" / "fixture" / "SKILL.md"
    assert report.skill.is_file()


def test_archive_manifest_lists_every_file(archive: Path) -> None:
    members = read_members(archive)
    names = [m.name for m, _ in members]
    assert all(n == "fixture" or n.startswith("fixture/") for n in names)
    manifest = json.loads(next(d for m, d in members if m.name == "fixture/manifest.json") or b"")
    files = {m.name.removeprefix("fixture/"): d for m, d in members if m.isfile()}
    files.pop("manifest.json")
    assert set(manifest["files"]) == set(files)
    for rel, data in files.items():
        assert manifest["files"][rel] == hashlib.sha256(data or b"").hexdigest(), rel
    assert all(m.uid == 0 and m.mode in (0o644, 0o755) for m, _ in members)


def test_export_leaves_out_junk(built_pack: Path, tmp_path: Path) -> None:
    pack = tmp_path / "fixture"
    shutil.copytree(built_pack, pack)
    (pack / "x.lock").write_text("")
    (pack / "cache").mkdir()
    (pack / "cache" / "doc.json").write_text("{}")
    (pack / "__pycache__").mkdir()
    (pack / "__pycache__" / "m.pyc").write_bytes(b"\0")
    (pack / "notes.txt.tmp").write_text("")
    out = tmp_path / "out.tar.gz"
    export_pack(pack, out)
    names = {m.name for m, _ in read_members(out)}
    assert not any(s in n for n in names for s in ("lock", "cache", "pycache", ".tmp"))
    assert "fixture/pack.db" in names


def test_export_refuses_a_symlink_in_the_pack(
    capsys: pytest.CaptureFixture[str], built_pack: Path, tmp_path: Path
) -> None:
    pack = tmp_path / "fixture"
    shutil.copytree(built_pack, pack)
    (pack / "eval" / "secret").symlink_to("/etc/hostname")
    code, _, err = cli(capsys, "pack", "export", str(pack), "-o", str(tmp_path / "o.tar.gz"))
    assert code == 1
    assert_one_error(err, "symbolic link")
    assert not (tmp_path / "o.tar.gz").exists()


def test_export_folds_a_pending_write_ahead_log(built_pack: Path, tmp_path: Path) -> None:
    pack = tmp_path / "fixture"
    shutil.copytree(built_pack, pack)
    # A writer that died without a checkpoint leaves pack.db.wal behind.
    script = (
        "import os, sys, ladybug\n"
        "c = ladybug.Connection(ladybug.Database(sys.argv[1]))\n"
        "c.execute('MATCH (a:Article) SET a.word_count = 4242')\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", script, str(pack / "pack.db")], check=True, timeout=600)
    assert (pack / "pack.db.wal").exists()
    out = tmp_path / "out.tar.gz"
    report = export_pack(pack, out)
    assert report.checkpointed and not (pack / "pack.db.wal").exists()
    assert not any(m.name.endswith(".wal") for m, _ in read_members(out))
    installed = install_pack(out, register_skill=False)
    from wikigr.pack.store import Store

    with Store.open(installed.path / "pack.db") as store:
        assert store.rows("MATCH (a:Article) RETURN DISTINCT a.word_count") == [[4242]]


# -- refusals of crafted archives -----------------------------------------------------------------


def _newer(m: dict[str, object]) -> None:
    m["format_version"] = 99


def _no_embedder(m: dict[str, object]) -> None:
    del m["embedder"]


def _no_files(m: dict[str, object]) -> None:
    m["files"] = {}


def _two_tops(members: list[Member]) -> list[Member]:
    return [*members, file_member("other/readme.txt", b"hi")]


def _huge(members: list[Member]) -> list[Member]:
    info = tarfile.TarInfo("fixture/big")
    info.size = 100 * 1024**3  # a header only: the bytes never follow
    return [*members[:3], (info, None)]


CRAFTED: dict[str, tuple[Callable[[list[Member]], list[Member]], str]] = {
    "absolute-path": (lambda ms: [*ms, file_member("/tmp/evil.txt", b"x")], "absolute path or '..'"),
    "dot-dot": (lambda ms: [*ms, file_member("fixture/../../evil.txt", b"x")], "absolute path or '..'"),
    "symlink": (
        lambda ms: [*ms, special_member("fixture/link", tarfile.SYMTYPE, "/etc/passwd")],
        "symbolic link",
    ),
    "hardlink": (
        lambda ms: [*ms, special_member("fixture/hard", tarfile.LNKTYPE, "fixture/urls.txt")],
        "hard link",
    ),
    "device": (lambda ms: [*ms, special_member("fixture/dev", tarfile.CHRTYPE)], "device file"),
    "fifo": (lambda ms: [*ms, special_member("fixture/pipe", tarfile.FIFOTYPE)], "FIFO"),
    "newer-format": (lambda ms: edit_manifest(ms, _newer), "upgrade wikigr"),
    "missing-field": (lambda ms: edit_manifest(ms, _no_embedder), "embedder: missing"),
    "no-checksums": (lambda ms: edit_manifest(ms, _no_files), "lists no file checksums"),
    "checksum-mismatch": (lambda ms: flip_a_byte(ms, "/urls.txt"), "checksum mismatch for urls.txt"),
    "size-differs-from-manifest": (
        lambda ms: replace_data(ms, "/urls.txt", b"https://evil.example/\n"),
        "urls.txt is 22 bytes but the manifest says",
    ),
    "unlisted-file": (
        lambda ms: [*ms, file_member("fixture/extra.sh", b"rm -rf ~\n")],
        "extra.sh is present but not listed",
    ),
    "listed-but-missing": (
        lambda ms: [(m, d) for m, d in ms if not m.name.endswith("kg_config.json")],
        "kg_config.json is listed in the manifest but missing",
    ),
    "two-top-folders": (_two_tops, "not in one top folder"),
    "duplicate-member": (lambda ms: [*ms, ms[-1]], "appears twice"),
    "huge-declared-size": (_huge, "over the cap"),
    "write-ahead-log": (lambda ms: [*ms, file_member("fixture/pack.db.wal", b"\0" * 64)], "write-ahead log"),
}


@pytest.mark.parametrize("case", list(CRAFTED))
def test_install_refuses_crafted_archive(
    case: str, capsys: pytest.CaptureFixture[str], archive: Path, tmp_path: Path, wikigr_home: Path
) -> None:
    craft, expected = CRAFTED[case]
    bad = write_archive(tmp_path / f"{case}.tar.gz", craft(read_members(archive)))
    code, _, err = cli(capsys, "pack", "install", str(bad), "--skills-dir", str(tmp_path / "skills"))
    assert code == 1, err
    assert_one_error(err, expected)
    assert packs_home_entries(wikigr_home) == []  # nothing installed, nothing left behind
    assert not (tmp_path / "skills").exists()
    assert not Path("/tmp/evil.txt").exists()


def test_manifest_is_checked_before_the_rest_is_unpacked(
    capsys: pytest.CaptureFixture[str], archive: Path, tmp_path: Path
) -> None:
    members = edit_manifest(read_members(archive)[:2], _newer)
    cut = tarfile.TarInfo("fixture/pack.db")
    cut.size = 1024 * 1024  # declared, never sent: reading it would fail
    bad = write_archive(tmp_path / "early.tar.gz", [*members, (cut, None)])
    code, _, err = cli(capsys, "pack", "install", str(bad))
    assert code == 1
    assert_one_error(err, "upgrade wikigr")

    install_pack(archive, register_skill=False)
    rest = [*read_members(archive)[:2], (cut, None)]
    code, _, err = cli(capsys, "pack", "install", str(write_archive(tmp_path / "again.tar.gz", rest)))
    assert code == 1
    assert_one_error(err, "already installed")


def test_install_refuses_over_the_total_cap(
    capsys: pytest.CaptureFixture[str], archive: Path, tmp_path: Path, wikigr_home: Path
) -> None:
    members = read_members(archive)[:2]  # the top folder and the manifest
    members += [file_member(f"fixture/blob{i}.bin", os.urandom(400 * 1024)) for i in range(3)]
    bad = write_archive(tmp_path / "total.tar.gz", members)
    code, _, err = cli(capsys, "pack", "install", str(bad), "--max-mb", "1")
    assert code == 1
    assert_one_error(err, "its manifest declares 1.8 MiB, over the cap of 1.0 MiB")
    assert packs_home_entries(wikigr_home) == []


def test_tar_bomb_of_many_members_is_refused_early(archive: Path, tmp_path: Path, wikigr_home: Path) -> None:
    bomb = tmp_path / "bomb.tar.gz"
    with tarfile.open(bomb, "w:gz") as tar:
        for info, data in read_members(archive)[:2]:  # the top folder and the manifest
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
        for i in range(5000):  # folders: a manifest does not list them
            folder = tarfile.TarInfo(f"fixture/f{i}")
            folder.type = tarfile.DIRTYPE
            tar.addfile(folder)
    from wikigr.errors import ShareError

    with pytest.raises(ShareError, match="more than 100 files and folders"):
        install_pack(bomb, limits=InstallLimits(max_members=100), register_skill=False)
    assert packs_home_entries(wikigr_home) == []


def test_a_huge_pax_header_is_refused_by_the_stream_cap(tmp_path: Path, wikigr_home: Path) -> None:
    info = tarfile.TarInfo("fixture/notes.txt")
    info.pax_headers = {"comment": "x" * (40 * 1024 * 1024)}  # read into memory by tarfile, if let
    bomb = write_archive(tmp_path / "pax.tar.gz", [(info, None)])
    from wikigr.errors import ShareError

    limits = InstallLimits(max_members=10, max_total_bytes=1024 * 1024)
    with pytest.raises(ShareError, match="expands to more than"):
        install_pack(bomb, limits=limits, register_skill=False)
    assert packs_home_entries(wikigr_home) == []


def test_install_refuses_what_is_not_an_archive(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, wikigr_home: Path
) -> None:
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(os.urandom(4096))
    code, _, err = cli(capsys, "pack", "install", str(junk))
    assert code == 1
    assert_one_error(err, "not a .tar.gz archive")
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(b"\x1f\x8b" + os.urandom(100))
    code, _, err = cli(capsys, "pack", "install", str(truncated))
    assert code == 1
    assert_one_error(err, "not a readable .tar.gz archive")
    code, _, err = cli(capsys, "pack", "install", str(tmp_path / "nothing.tar.gz"))
    assert code == 2
    assert_one_error(err, "no such archive or pack folder")
    assert packs_home_entries(wikigr_home) == []


# -- folders ------------------------------------------------------------------------------------


def test_folder_install_copies_and_checks(
    capsys: pytest.CaptureFixture[str], built_pack: Path, tmp_path: Path, wikigr_home: Path
) -> None:
    code, stdout, err = cli(capsys, "pack", "install", str(built_pack), "--no-skill", "--json")
    assert code == 0, err
    report = json.loads(stdout)
    assert report["kind"] == "folder" and report["skill"] is None
    installed = wikigr_home / "packs" / "fixture"
    assert (installed / "pack.db").is_file() and not (installed / "pack.db").is_symlink()
    assert built_pack.exists()  # copied, not moved

    pack = tmp_path / "linked"
    shutil.copytree(built_pack, pack)
    (pack / "urls.txt").unlink()
    (pack / "urls.txt").symlink_to("/etc/hostname")
    code, _, err = cli(capsys, "pack", "install", str(pack), "--force")
    assert code == 1
    assert_one_error(err, "urls.txt: a symbolic link")

    fifo = tmp_path / "fifo"
    shutil.copytree(built_pack, fifo)
    os.mkfifo(fifo / "eval" / "pipe")
    code, _, err = cli(capsys, "pack", "install", str(fifo), "--force")
    assert code == 1
    assert_one_error(err, "not a regular file")

    tampered = tmp_path / "tampered"
    shutil.copytree(built_pack, tampered)
    (tampered / "manifest.json").write_text(
        (tampered / "manifest.json").read_text().replace('"articles": 4', '"articles": 5')
    )
    code, _, err = cli(capsys, "pack", "install", str(tampered), "--force")
    assert code == 1
    assert_one_error(err, "invalid stats")
    assert sorted(p.name for p in (wikigr_home / "packs").iterdir() if not p.name.endswith(".lock")) == [
        "fixture"
    ]


# -- URLs ---------------------------------------------------------------------------------------


def test_url_install(
    capsys: pytest.CaptureFixture[str], archive: Path, server: LocalServer, tmp_path: Path
) -> None:
    url = server.add("/packs/fixture.tar.gz", archive.read_bytes(), content_type="application/gzip")
    code, stdout, err = cli(capsys, "pack", "install", url, "--skills-dir", str(tmp_path), "--json")
    assert code == 0, err
    assert json.loads(stdout)["kind"] == "url"


@pytest.mark.parametrize(
    ("setup", "extra", "code", "expected"),
    [
        (lambda s: "ftp://127.0.0.1/p.tar.gz", (), 2, "only http(s) URLs"),
        (lambda s: "file:///etc/passwd", (), 2, "only http(s) URLs"),
        (lambda s: s.url("/missing.tar.gz"), (), 1, "HTTP 404"),
        (lambda s: s.huge("/huge.tar.gz", 3 * 1024 * 1024), ("--max-mb", "1"), 1, "over the cap"),
        (
            lambda s: s.huge("/chunked.tar.gz", 3 * 1024 * 1024, content_length=False),
            ("--max-mb", "1"),
            1,
            "larger than the cap",
        ),
        (lambda s: s.slow("/slow.tar.gz", 3.0), ("--timeout", "0.3"), 1, "timed out"),
    ],
    ids=["ftp", "file", "404", "too-large", "too-large-no-length", "slow"],
)
def test_url_install_refusals(
    setup: Callable[[LocalServer], str],
    extra: tuple[str, ...],
    code: int,
    expected: str,
    capsys: pytest.CaptureFixture[str],
    server: LocalServer,
    wikigr_home: Path,
) -> None:
    got, _, err = cli(capsys, "pack", "install", setup(server), *extra)
    assert got == code, err
    assert_one_error(err, expected)
    assert packs_home_entries(wikigr_home) == []


# -- remove ---------------------------------------------------------------------------------------


def test_remove_leaves_a_skill_it_did_not_write(
    capsys: pytest.CaptureFixture[str], archive: Path, tmp_path: Path
) -> None:
    skills = tmp_path / "skills"
    install_pack(archive, skills_dir=skills)
    (skills / "fixture" / "SKILL.md").write_text("---\nname: fixture\ndescription: mine\n---\nmine\n")
    code, stdout, err = cli(capsys, "pack", "remove", "fixture", "--skills-dir", str(skills))
    assert code == 0
    assert "Removed pack fixture" in stdout and "not written by wikigr" in err
    assert (skills / "fixture" / "SKILL.md").read_text().endswith("mine\n")


def test_help_of_the_new_commands(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("export", "install", "update", "remove"):
        code, out, _ = cli(capsys, "pack", command, "--help")
        assert code == 0 and "Usage" in out, command


def test_remove_takes_a_name_not_a_path(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = cli(capsys, "pack", "remove", "../etc")
    assert code == 2
    assert_one_error(err, "'../etc' is a path, not a pack name: pack remove takes the name of an installed")


def test_export_and_install_usage_errors(
    capsys: pytest.CaptureFixture[str], built_pack: Path, tmp_path: Path, wikigr_home: Path
) -> None:
    code, _, err = cli(capsys, "pack", "export", "nope", "-o", str(tmp_path / "x.tar.gz"))
    assert code == 2
    assert_one_error(err, "unknown pack 'nope'")
    code, _, err = cli(capsys, "pack", "export", str(built_pack), "-o", str(tmp_path))
    assert code == 2
    assert_one_error(err, "is a folder")
    code, _, err = cli(capsys, "pack", "export", str(built_pack), "-o", str(built_pack / "self.tar.gz"))
    assert code == 2
    assert_one_error(err, "inside the pack")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("hi")
    code, _, err = cli(capsys, "pack", "install", str(empty))
    assert code == 1
    assert_one_error(err, "has no manifest.json")
    assert packs_home_entries(wikigr_home) == []
