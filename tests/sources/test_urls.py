from __future__ import annotations

from pathlib import Path

import pytest

from wikigr.errors import UsageError
from wikigr.sources.folders import expand_sources
from wikigr.sources.urls import normalize_source, read_url_list, validate_url


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# -- urls.txt ------------------------------------------------------------------------------------


def test_read_url_list_skips_comments_and_blank_lines(tmp_path: Path) -> None:
    urls = write(
        tmp_path / "urls.txt",
        "# docs to index\n"
        "\n"
        "https://docs.example.org/guide.html\n"
        "   \n"
        "  http://EXAMPLE.org/a  # trailing comment\n"
        "https://example.org/page#section\n"
        "file:///srv/docs/readme.md\n"
        "\t# indented comment\n",
    )
    assert read_url_list(urls) == [
        "https://docs.example.org/guide.html",
        "http://example.org/a",
        "https://example.org/page",  # a '#' inside a URL is its fragment, not a comment
        "file:///srv/docs/readme.md",
    ]


def test_read_url_list_accepts_a_utf8_bom(tmp_path: Path) -> None:
    path = tmp_path / "urls.txt"
    path.write_bytes(b"\xef\xbb\xbfhttps://example.org/\n")
    assert read_url_list(path) == ["https://example.org/"]


def test_bad_line_names_the_file_and_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "urls.txt", "# header\nhttps://example.org/\nfoo\n")
    with pytest.raises(UsageError) as info:
        read_url_list(Path("urls.txt"))
    assert str(info.value) == "urls.txt line 3: not a URL or an existing path: 'foo'"
    assert info.value.exit_code == 2


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("ftp://example.org/file.txt", "unsupported URL scheme 'ftp'"),
        ("http:///no-host", "URL has no host"),
        ("https://exa mple.org/", "whitespace"),
        ("http://example.org:99999/", "malformed URL"),
        ("mailto:someone@example.org", "unsupported URL scheme 'mailto'"),
        ("file://server/share/doc.md", "remote host"),
    ],
)
def test_bad_urls_are_usage_errors(tmp_path: Path, line: str, reason: str) -> None:
    path = write(tmp_path / "urls.txt", f"https://example.org/\n\n{line}\n")
    with pytest.raises(UsageError) as info:
        read_url_list(path)
    message = str(info.value)
    assert message.startswith(f"{path} line 3: ")
    assert reason in message
    assert "\n" not in message


def test_list_without_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "urls.txt", "# only comments\n\n   # and blanks\n")
    with pytest.raises(UsageError, match=r"^urls\.txt has no URLs$"):
        read_url_list(Path("urls.txt"))


def test_missing_list_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read"):
        read_url_list(tmp_path / "nope.txt")


def test_validate_url_normalises() -> None:
    assert validate_url("HTTPS://Docs.Example.ORG") == "https://docs.example.org/"
    assert validate_url("http://example.org:8080/a?b=1#frag") == "http://example.org:8080/a?b=1"
    assert validate_url("file:/tmp/a%20b.md") == "file:///tmp/a%20b.md"
    assert validate_url("file://localhost/tmp/x.md") == "file:///tmp/x.md"


# -- sources given on the command line -------------------------------------------------------


def test_normalize_source_turns_paths_into_file_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "docs" / "a b.md", "# A\n")
    assert normalize_source("docs") == (tmp_path / "docs").resolve().as_uri()
    assert normalize_source("./docs/a b.md") == (tmp_path / "docs" / "a b.md").resolve().as_uri()
    with pytest.raises(UsageError, match="not a URL or an existing path"):  # a typo is not a source
        normalize_source(str(tmp_path / "missing.md"))
    assert normalize_source((tmp_path / "missing.md").as_uri()) == (tmp_path / "missing.md").as_uri()
    monkeypatch.setenv("HOME", str(tmp_path))
    assert normalize_source("~/docs") == (tmp_path / "docs").resolve().as_uri()


def test_normalize_source_accepts_urls() -> None:
    assert normalize_source("  https://Example.org/x  ") == "https://example.org/x"
    assert normalize_source("file:///srv/docs") == "file:///srv/docs"


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("ftp://example.org/", "unsupported URL scheme"),
        ("https://", "no host"),
        ("http://exa mple.org", "whitespace"),
        ("example.org/docs", "did you mean https://example.org/docs"),
        ("not here at all", "not a URL or an existing path"),
        ("", "empty"),
        ("javascript:alert(1)", "unsupported URL scheme"),
    ],
)
def test_normalize_source_rejects(source: str, reason: str) -> None:
    with pytest.raises(UsageError, match=reason):
        normalize_source(source)


# -- directory expansion ---------------------------------------------------------------------


def test_expand_directory_recursively_sorted_skipping_hidden(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    for rel in [
        "b.md",
        "a.html",
        "sub/z.txt",
        "sub/deeper/paper.pdf",
        "sub/NOTES.MD",
        "c.htm",
        "d.markdown",
        ".hidden/secret.md",
        ".draft.md",
        "image.png",
        "script.py",
        "sub/_static/page.html",
    ]:
        write(root / rel, "x")
    expanded = expand_sources([root.as_uri()])
    names = [u.removeprefix(root.as_uri() + "/") for u in expanded]
    assert names == [
        "a.html",
        "b.md",
        "c.htm",
        "d.markdown",
        "sub/NOTES.MD",
        "sub/z.txt",
        "sub/_static/page.html",
        "sub/deeper/paper.pdf",
    ]
    assert all(u.startswith("file:///") for u in expanded)


def test_expand_keeps_order_urls_and_missing_files_and_deduplicates(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    write(root / "one.md", "1")
    write(root / "two.txt", "2")
    missing = (tmp_path / "gone.md").as_uri()
    urls = [
        "https://example.org/a",
        root.as_uri(),
        missing,
        (root / "one.md").as_uri(),  # already included by the directory
        "https://example.org/a",
        (tmp_path / "empty").as_uri(),
    ]
    (tmp_path / "empty").mkdir()
    assert expand_sources(urls) == [
        "https://example.org/a",
        (root / "one.md").as_uri(),
        (root / "two.txt").as_uri(),
        missing,
    ]
    with pytest.raises(UsageError, match=f"the folder {tmp_path / 'empty'} holds no document files"):
        expand_sources(urls, strict=True)  # a build's: the empty folder is the user's mistake


def test_expand_handles_percent_encoded_directory(tmp_path: Path) -> None:
    root = tmp_path / "my docs"
    write(root / "é.md", "x")
    assert expand_sources([root.as_uri()]) == [(root / "é.md").as_uri()]
