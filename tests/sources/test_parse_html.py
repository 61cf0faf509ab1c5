from __future__ import annotations

import pytest

from tests.httpserver import LocalServer
from wikigr.documents import Document, FetchResult
from wikigr.errors import SourceError
from wikigr.sources.fetch import FetchOptions, fetch_all
from wikigr.sources.parse import parse

URL = "https://docs.example.org/guide/page.html"


def parse_html(html: str, url: str = URL, content_type: str = "text/html") -> Document:
    return parse(
        FetchResult(
            url=url,
            final_url=url,
            content=html.encode("utf-8"),
            content_type=content_type,
            charset="utf-8",
            fetched_at="2024-01-01T00:00:00Z",
        )
    )


BLOG = """<!DOCTYPE html>
<html><head><title>  Sockets   guide | Example </title>
<style>.x { color: red }</style><script>var tracking = "SCRIPT";</script></head>
<body>
<header class="site"><a href="/">SITEHEADER</a><h1>Example Docs</h1></header>
<nav><ul><li><a href="/nav-only.html">NAVLINK</a></li></ul></nav>
<div role="navigation">ROLENAV</div>
<main>
  <article>
    <header><h1 id="sockets">Sockets</h1><p class="byline">By Ann</p></header>
    <p>A socket is an <em>endpoint</em> for
       sending and receiving data.</p>
    <p>See <a href="../api/socket.html#socket.create_connection">the API</a> and
       <a href="https://other.example.com/x?y=1#frag">elsewhere</a>,
       <a href="mailto:ann@example.org">mail</a>, <a href="javascript:void(0)">js</a>,
       <a href="#local">here</a> and <a href="../api/socket.html">the API again</a>.</p>
    <aside>ASIDE</aside>
    <h2 id="creating">Creating sockets</h2>
    <ul><li>TCP</li><li>UDP<ul><li>datagrams</li></ul></li></ul>
    <ol start="3"><li>third</li><li>fourth</li></ol>
    <pre>import socket

def connect(host):
    s = socket.socket()   # three spaces
    s.connect((host, 80))</pre>
    <h3>Options<span aria-hidden="true">HIDDEN</span></h3>
    <p>Line one<br>line two</p>
    <table><tr><th>Name</th><th>Value</th></tr><tr><td>timeout</td><td>None</td></tr></table>
    <form><input name="q"><button>SEARCH</button></form>
    <noscript>NOSCRIPT</noscript>
    <svg><text>SVGTEXT</text></svg>
  </article>
</main>
<footer>FOOTER <a href="/legal.html">legal</a></footer>
<script>document.write("SCRIPT2")</script>
</body></html>"""


def all_text(document: Document) -> str:
    return "\n".join(f"{s.title}\n{s.text}" for s in document.sections)


def test_main_content_only() -> None:
    document = parse_html(BLOG)
    text = all_text(document)
    for noise in [
        "SITEHEADER",
        "Example Docs",
        "NAVLINK",
        "ROLENAV",
        "ASIDE",
        "SEARCH",
        "NOSCRIPT",
        "SVGTEXT",
        "FOOTER",
        "SCRIPT",
        "color: red",
        "HIDDEN",
    ]:
        assert noise not in text, noise
    assert "By Ann" in text  # the article's own <header> is content


def test_title_and_sections() -> None:
    document = parse_html(BLOG)
    assert document.title == "Sockets guide | Example"
    assert document.url == URL
    assert document.content_type == "text/html"
    assert [(s.title, s.level, s.anchor) for s in document.sections] == [
        ("Sockets", 1, "sockets"),
        ("Creating sockets", 2, "creating"),
        ("Options", 3, ""),
    ]
    first = document.sections[0].text
    assert first.startswith("By Ann\n\nA socket is an endpoint for sending and receiving data.\n\n")


def test_lists_pre_breaks_and_tables() -> None:
    creating = parse_html(BLOG).sections[1].text
    assert "- TCP\n- UDP\n  - datagrams\n\n3. third\n4. fourth" in creating
    code = (
        "```\nimport socket\n\ndef connect(host):\n"
        "    s = socket.socket()   # three spaces\n    s.connect((host, 80))\n```"
    )
    assert code in creating
    options = parse_html(BLOG).sections[2].text
    assert options == "Line one\nline two\n\nName | Value\ntimeout | None"


def test_a_table_row_keeps_its_empty_cells() -> None:
    """Every cell but a row's first is set apart with " | ", an empty one too: a row whose first
    cell is empty still has as many cells as the others (it was read as cut by a chunk's start)."""
    html = (
        "<html><body><main><h1>T</h1><table><tr><th>Op</th><th>Result</th><th>Notes</th></tr>"
        "<tr><td></td><td>continued</td><td>(2)</td></tr><tr><td>x + y</td><td>sum</td><td></td></tr>"
        "</table></main></body></html>"
    )
    assert parse_html(html).sections[0].text == "Op | Result | Notes\n| continued | (2)\nx + y | sum |"


def test_links_resolved_deduplicated_without_fragments() -> None:
    assert parse_html(BLOG).links == [
        "https://docs.example.org/api/socket.html",
        "https://other.example.com/x?y=1",
    ]


def test_base_href_is_honoured() -> None:
    html = (
        '<html><head><base href="https://cdn.example.net/v2/"></head>'
        '<body><p><a href="a.html">a</a></p></body></html>'
    )
    assert parse_html(html).links == ["https://cdn.example.net/v2/a.html"]


SPHINX = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>os — Miscellaneous interfaces — Python docs</title></head>
<body>
<div class="related" role="navigation"><ul><li><a href="genindex.html">index</a></li><li>RELATED</li></ul></div>
<div class="document">
  <div class="documentwrapper"><div class="bodywrapper">
    <div class="body" role="main">
      <section id="module-os">
        <h1><code>os</code> — Miscellaneous interfaces<a class="headerlink" href="#module-os" title="Link">¶</a></h1>
        <p>This module provides a portable way of using operating system dependent functionality.</p>
        <section id="process-parameters">
          <h2>Process Parameters<a class="headerlink" href="#process-parameters">¶</a></h2>
          <dl class="py function">
            <dt class="sig sig-object py" id="os.getpid"><span class="sig-name">getpid</span>()<a class="headerlink" href="#os.getpid">¶</a></dt>
            <dd><p>Return the current process id. See <a class="reference internal" href="sys.html#sys.exit">sys.exit</a>.</p></dd>
          </dl>
          <div class="highlight-python3 notranslate"><div class="highlight"><pre><span></span><span class="kn">import</span> <span class="nn">os</span>
<span class="n">pid</span> <span class="o">=</span> <span class="n">os</span><span class="o">.</span><span class="n">getpid</span><span class="p">()</span>
</pre></div></div>
        </section>
        <div class="section" id="files-and-directories">
          <h2>Files and Directories</h2>
          <p>Functions for files.</p>
        </div>
      </section>
    </div>
  </div></div>
  <div class="sphinxsidebar" role="navigation"><h3>Table of Contents</h3><ul><li>SIDEBAR</li></ul></div>
</div>
<div class="footer">© Copyright</div>
</body></html>"""  # noqa: E501


def test_sphinx_page() -> None:
    document = parse_html(SPHINX, "https://docs.python.org/3/library/os.html")
    assert document.title == "os — Miscellaneous interfaces"  # the <h1>, without the site suffix
    assert [(s.title, s.level, s.anchor) for s in document.sections] == [
        ("os — Miscellaneous interfaces", 1, "module-os"),
        ("Process Parameters", 2, "process-parameters"),
        ("Files and Directories", 2, "files-and-directories"),
    ]
    text = all_text(document)
    for noise in ["¶", "RELATED", "SIDEBAR", "Table of Contents", "Copyright"]:
        assert noise not in text
    params = document.sections[1].text
    assert params == (
        "getpid()\n\nReturn the current process id. See sys.exit.\n\n```\nimport os\npid = os.getpid()\n```"
    )
    assert document.links == ["https://docs.python.org/3/library/sys.html"]


def test_title_falls_back_to_h1_then_url() -> None:
    assert parse_html("<body><h1>Only Heading</h1><p>text</p></body>").title == "Only Heading"
    assert parse_html("<body><p>just text</p></body>").title == URL


def test_lead_section_before_first_heading() -> None:
    document = parse_html("<body><p>Intro words.</p><h2 id=a>A</h2><p>Body.</p></body>")
    assert [(s.title, s.level, s.text) for s in document.sections] == [
        ("", 0, "Intro words."),
        ("A", 2, "Body."),
    ]


@pytest.mark.parametrize(
    "html",
    [
        "",
        "<html><body></body></html>",
        "<html><body><nav>menu</nav><script>x()</script></body></html>",
        "<html><body><h1>Heading only</h1></body></html>",
    ],
)
def test_empty_pages_are_source_errors(html: str) -> None:
    with pytest.raises(SourceError, match="no text content"):
        parse_html(html)


def test_several_articles_keep_the_whole_listing() -> None:
    html = (
        "<body><article><h2>One</h2><p>first</p></article><article><h2>Two</h2><p>second</p></article></body>"
    )
    assert [s.text for s in parse_html(html).sections] == ["first", "second"]


def test_xhtml_content_type() -> None:
    document = parse_html("<html><body><p>x</p></body></html>", content_type="application/xhtml+xml")
    assert document.content_type == "application/xhtml+xml"


def test_failed_fetch_cannot_be_parsed() -> None:
    failed = FetchResult(URL, URL, b"", "", None, "2024-01-01T00:00:00Z", error="HTTP 404")
    with pytest.raises(SourceError, match="HTTP 404"):
        parse(failed)


def test_links_resolved_against_final_url_after_redirect(server: LocalServer) -> None:
    server.add("/docs/v2/page.html", '<p><a href="other.html#x">o</a></p>')
    start = server.redirect("/latest", "/docs/v2/page.html")
    (result,) = fetch_all([start], FetchOptions(retries=0))
    document = parse(result)
    assert document.url == server.url("/docs/v2/page.html")
    assert document.links == [server.url("/docs/v2/other.html")]


def test_permalink_marks_are_dropped_from_headings() -> None:
    html = (
        '<main><h2 id="ex"><a class="doc-anchor" href="#ex">§</a>Examples</h2><p>x</p>'
        '<h2 id="more">More <a href="#more">#</a></h2><p>See <a href="#ex">the examples</a>.</p></main>'
    )
    document = parse_html(html)
    assert [s.title for s in document.sections] == ["Examples", "More"]
    assert document.sections[1].text == "See the examples."


def test_site_suffix_in_title_gives_way_to_the_h1() -> None:
    doc = parse_html(
        "<html><head><title>socket — Networking — Python 3.11 documentation</title></head>"
        "<body><h1>socket — Networking</h1><p>Sockets.</p></body></html>"
    )
    assert doc.title == "socket — Networking"
    other = parse_html("<title>Release notes</title><h1>Version 2</h1><p>Changes.</p>")
    assert other.title == "Release notes"
