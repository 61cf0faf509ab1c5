"""Markdown, plain text and PDF parsing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.httpserver import LocalServer
from tests.sources.pdfgen import make_pdf
from wikigr.documents import Document, FetchResult
from wikigr.errors import SourceError
from wikigr.sources.fetch import FetchOptions, fetch_all
from wikigr.sources.parse import parse

MD_URL = "https://example.org/docs/guide.md"


def result(content: bytes, content_type: str, url: str = MD_URL) -> FetchResult:
    return FetchResult(url, url, content, content_type, None, "2024-01-01T00:00:00Z")


def parse_md(text: str, url: str = MD_URL) -> Document:
    return parse(result(text.encode("utf-8"), "text/markdown", url))


# -- Markdown --------------------------------------------------------------------------------

GUIDE = """---
layout: page
---
Intro before any heading.

# Getting **started**

Install it with [pip](https://pip.pypa.io/en/stable/#install) or read the
[changelog](../CHANGELOG.md#v1) and <https://example.com/auto>.

```python
# this is a comment, not a heading
def f():

    return 1  # blank line above is kept
```

## Options ##

* first *item*
* second item
  continues here
1. numbered

~~~
## not a heading either
~~~

### Setup {#custom-id}

Use `pip install **kwargs_pkg**` then ![diagram](img/d.png) [ref link][r].

[r]: ./reference.html "Reference"

## Options
Second options section.
"""


def test_markdown_sections_outside_fences() -> None:
    document = parse_md(GUIDE)
    assert document.title == "Getting started"
    assert document.content_type == "text/markdown"
    assert [(s.title, s.level, s.anchor) for s in document.sections] == [
        ("", 0, ""),
        ("Getting started", 1, "getting-started"),
        ("Options", 2, "options"),
        ("Setup", 3, "custom-id"),
        ("Options", 2, "options-1"),
    ]
    assert document.sections[0].text == "Intro before any heading."


def test_markdown_code_blocks_intact_and_inline_markup_removed() -> None:
    sections = parse_md(GUIDE).sections
    started = sections[1].text
    assert started.startswith(
        "Install it with pip or read the changelog and https://example.com/auto.\n\n```\n"
    )
    assert started.endswith(
        "```\n# this is a comment, not a heading\ndef f():\n\n    return 1  # blank line above is kept\n```"
    )
    assert sections[2].text == (
        "- first item\n- second item continues here\n1. numbered\n\n```\n## not a heading either\n```"
    )
    assert sections[3].text == "Use pip install **kwargs_pkg** then diagram ref link."


def test_markdown_links_resolved() -> None:
    assert parse_md(GUIDE).links == [
        "https://pip.pypa.io/en/stable/",
        "https://example.org/CHANGELOG.md",
        "https://example.com/auto",
        "https://example.org/docs/reference.html",
    ]


def test_markdown_title_falls_back_to_front_matter_then_file_name() -> None:
    assert parse_md("---\ntitle: 'From Front Matter'\n---\nText only.\n").title == "From Front Matter"
    assert parse_md("Text only, no heading.\n", "file:///srv/docs/notes%20v2.md").title == "notes v2.md"


def test_markdown_setext_headings_and_empty() -> None:
    document = parse_md("Title\n=====\n\nIntro.\n\nPart\n----\nBody.\n")
    assert [(s.title, s.level, s.text) for s in document.sections] == [
        ("Title", 1, "Intro."),
        ("Part", 2, "Body."),
    ]
    with pytest.raises(SourceError, match="no text content"):
        parse_md("# Just a heading\n\n<!-- a comment -->\n")


def test_markdown_served_as_text_plain_by_a_real_server(server: LocalServer) -> None:
    url = server.add("/docs/README.md", "# Readme\n\nSee [x](x.md).\n", content_type="text/plain")
    (fetched,) = fetch_all([url], FetchOptions(retries=0))
    document = parse(fetched)
    assert document.title == "Readme"
    assert document.links == [server.url("/docs/x.md")]


# -- plain text ------------------------------------------------------------------------------


def test_plain_text_single_section() -> None:
    text = "\n\n  Growing tomatoes  \n\nTomatoes need sun.\nWater them   deeply.\n\n\n\nStake the plants.\n"
    document = parse(result(text.encode(), "text/plain", "file:///srv/garden.txt"))
    assert document.title == "Growing tomatoes"
    assert document.content_type == "text/plain"
    assert [(s.title, s.level) for s in document.sections] == [("", 0)]
    assert document.sections[0].text == (
        "  Growing tomatoes\n\nTomatoes need sun.\nWater them   deeply.\n\nStake the plants."
    )


def test_plain_text_underlined_headings() -> None:
    text = (
        "Preamble line.\n\nInstall\n=======\nRun the installer.\n\n"
        "Linux\n-----\nUse apt.\n\nUsage\n=====\nRun it.\n"
    )
    document = parse(result(text.encode(), "text/plain", "file:///srv/readme.txt"))
    assert document.title == "Preamble line."
    assert [(s.title, s.level, s.text) for s in document.sections] == [
        ("", 0, "Preamble line."),
        ("Install", 1, "Run the installer."),
        ("Linux", 2, "Use apt."),
        ("Usage", 1, "Run it."),
    ]


def test_plain_text_title_truncated() -> None:
    line = "word " * 60
    document = parse(result(f"{line}\n\nbody\n".encode(), "text/plain", "file:///srv/long.txt"))
    assert len(document.title) <= 120
    assert line.startswith(document.title)


def test_plain_text_empty() -> None:
    with pytest.raises(SourceError, match="no text content"):
        parse(result(b" \n\n\t\n", "text/plain", "file:///srv/empty.txt"))


# -- PDF -------------------------------------------------------------------------------------


def test_pdf_with_text_layer_from_disk(tmp_path: Path) -> None:
    pdf = make_pdf(
        [
            ["Quarterly Report", "Revenue grew (a lot) in Q3."],
            [],
            ["Appendix: methods and data."],
        ],
        title="Q3 Report",
        links={0: "https://example.org/data.csv"},
    )
    path = tmp_path / "report.pdf"
    path.write_bytes(pdf)
    (fetched,) = fetch_all([path.as_uri()], FetchOptions())
    assert fetched.content_type == "application/pdf"
    document = parse(fetched)
    assert document.title == "Q3 Report"
    assert document.content_type == "application/pdf"
    assert [(s.title, s.level, s.anchor) for s in document.sections] == [
        ("Page 1", 1, "page=1"),
        ("Page 3", 1, "page=3"),
    ]
    assert document.sections[0].text == "Quarterly Report\nRevenue grew (a lot) in Q3."
    assert document.sections[1].text == "Appendix: methods and data."
    assert document.links == ["https://example.org/data.csv"]


def test_pdf_title_from_first_line_without_metadata() -> None:
    document = parse(result(make_pdf([["Design Notes", "Body."]]), "application/pdf", "https://x.org/n.pdf"))
    assert document.title == "Design Notes"


def test_pdf_without_text_layer() -> None:
    with pytest.raises(SourceError, match=r"^no text layer$"):
        parse(result(make_pdf([[], []]), "application/pdf", "https://x.org/scan.pdf"))


def test_broken_pdf() -> None:
    with pytest.raises(SourceError, match="not a readable PDF"):
        parse(result(b"%PDF-1.4\nthis is not really a pdf", "application/pdf", "https://x.org/b.pdf"))


def test_unsupported_type_and_sniffing() -> None:
    with pytest.raises(SourceError, match="unsupported content type image/png"):
        parse(result(b"\x89PNG", "image/png"))
    sniffed = parse(result(b"<html><body><p>Sniffed page.</p></body></html>", ""))
    assert sniffed.sections[0].text == "Sniffed page."
