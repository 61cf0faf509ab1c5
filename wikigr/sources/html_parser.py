"""HTML to sections: main-content extraction, heading split, readable text, links."""

from __future__ import annotations

import re
from urllib.parse import urljoin

from selectolax.lexbor import LexborHTMLParser, LexborNode

from wikigr.documents import CELLS, Document, Section
from wikigr.errors import SourceError
from wikigr.sources.parsing import LinkCollector, collapse_whitespace, fence

__all__ = ["parse_html"]

_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}

_DROP_TAGS = frozenset(
    {
        "nav",
        "footer",
        "aside",
        "script",
        "style",
        "noscript",
        "form",
        "svg",
        "template",
        "iframe",
        "button",
        "select",
        "textarea",
        "input",
        "object",
        "embed",
        "canvas",
        "audio",
        "video",
        "map",
        "head",
        "title",
        "meta",
        "link",
        "dialog",
    }
)
_DROP_CLASSES = frozenset({"sphinxsidebar", "related", "headerlink", "linenos"})
_DROP_ROLES = frozenset({"navigation", "search", "banner", "contentinfo"})

_BLOCK_TAGS = frozenset(
    {
        "address",
        "article",
        "blockquote",
        "body",
        "caption",
        "center",
        "dd",
        "details",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "header",
        "hgroup",
        "html",
        "legend",
        "main",
        "p",
        "section",
        "summary",
        "table",
        "tbody",
        "tfoot",
        "thead",
    }
)
# Elements whose <header> is the document's own (kept), not the site's banner (dropped).
_ARTICLE_TAGS = frozenset({"article", "main"})
_CONTENT_SELECTORS = ("main", "article", "[role=main]", "div.body", "div[role=main]")

_BR = "\x1e"  # stands for <br> in the inline buffer until the buffer is flushed
_MAX_DEPTH = 250  # element nesting walked recursively; deeper subtrees become flat text

# Elements nested deeper than this are dropped (their text is kept, in their parent) before the
# page reaches the parser, as Chromium's HTML parser caps its tree at 512 levels: lexbor takes
# quadratic time on 100,000 nested tags, and no real page nests this deep.
MAX_NESTING = 512
# Elements that never nest: void ones, and those whose end tag is optional (a new <p>, <li>, <td>
# closes the open one), so a page of unclosed <p>s is not taken for a deep one.
_VOID_TAGS = "area base br col embed hr img input link meta param source track wbr keygen"
_OPTIONAL_END_TAGS = "p li dt dd option optgroup tr td th thead tbody tfoot caption colgroup rb rt rp"
_OPTIONAL_END_TAGS += " html head body"
_FLAT_TAGS = frozenset(_VOID_TAGS.split() + _OPTIONAL_END_TAGS.split())
_MARKUP = re.compile(
    r"<!--.*?(?:-->|\Z)"  # a comment
    r"|<(?:script|style|textarea|title|xmp|noscript|iframe|noembed|noframes)\b.*?(?:</[a-z]+\s*>|\Z)"
    r"|<(/?)([a-z][^\s/>]*)[^>]*?(/?)>",
    re.IGNORECASE | re.DOTALL,
)

# Consecutive blocks of one list ("li:<n>") or table rows are joined line by line.
_TIGHT_KINDS = ("li:", "row")


def _attr(node: LexborNode, name: str) -> str:
    value = node.attributes.get(name)
    return value.strip() if value else ""


def _classes(node: LexborNode) -> set[str]:
    return set(_attr(node, "class").split())


def _is_noise(node: LexborNode) -> bool:
    """Elements that are never content: navigation, chrome, scripts, hidden elements."""
    tag = node.tag or ""
    if tag in _DROP_TAGS:
        return True
    attrs = node.attributes
    if not attrs:
        return False
    if _attr(node, "role").lower() in _DROP_ROLES:
        return True
    if _attr(node, "aria-hidden").lower() == "true":
        return True
    if "hidden" in attrs:
        return True
    return bool(_classes(node) & _DROP_CLASSES)


_PERMALINK_MARKS = frozenset({"", "¶", "§", "#", "🔗", "link"})


def _is_permalink_mark(node: LexborNode) -> bool:
    return node.text(deep=True, strip=True) in _PERMALINK_MARKS


def _has_text(node: LexborNode) -> bool:
    return bool(node.text(deep=True, strip=True))


def _content_root(tree: LexborHTMLParser) -> LexborNode | None:
    for selector in _CONTENT_SELECTORS:
        nodes = tree.css(selector)
        if not nodes:
            continue
        if selector == "article" and len(nodes) > 1:
            continue  # a listing of several articles: keep the whole page
        for node in nodes:
            if _has_text(node):
                return node
    return tree.body if tree.body is not None else tree.root


class _Walker:
    """Walks the content root and accumulates sections, blocks and links."""

    def __init__(self, links: LinkCollector) -> None:
        self.links = links
        self.sections: list[Section] = []
        self.title = ""
        self.level = 0
        self.anchor = ""
        self.blocks: list[tuple[str, str]] = []  # (kind, text)
        self.inline: list[str] = []
        self.list_stack: list[list[int] | None] = []  # a counter for <ol>, None for <ul>
        self.list_serial = 0  # numbers top-level lists, so that two lists are not run together
        self.marker: str | None = None  # pending "- " / "1. " for the next block of an <li>
        self.continuation = ""  # indent of the lines of an <li> after its marker
        self.cell_depth = 0
        self.row_cells: list[int] = []  # cells so far of each open <tr> (a table may hold a table)
        self.article_depth = 0
        self.first_h1 = ""

    # -- text accumulation -------------------------------------------------------------------

    def flush(self, kind: str = "para") -> None:
        raw = "".join(self.inline)
        self.inline.clear()
        lines = [collapse_whitespace(part) for part in raw.split(_BR)]
        text = "\n".join(line for line in lines if line)
        if not text:
            return
        if self.marker is not None:
            text = self.marker + text.replace("\n", "\n" + self.continuation)
            self.marker = None
            kind = f"li:{self.list_serial}"
        elif self.continuation:
            text = self.continuation + text.replace("\n", "\n" + self.continuation)
            kind = f"li:{self.list_serial}"
        self.blocks.append((kind, text))

    def section_text(self) -> str:
        parts: list[str] = []
        previous = ""
        for kind, text in self.blocks:
            if parts:
                tight = kind == previous and kind.startswith(_TIGHT_KINDS)
                parts.append("\n" if tight else "\n\n")
            parts.append(text)
            previous = kind
        return "".join(parts)

    def finish_section(self) -> None:
        self.flush()
        text = self.section_text()
        if text or self.title:
            self.sections.append(Section(self.title, self.level, text, self.anchor))
        self.blocks = []

    # -- traversal ---------------------------------------------------------------------------

    def walk(self, node: LexborNode, depth: int = 0) -> None:
        for child in node.iter(include_text=True):
            if child.is_text_node:
                self.inline.append((child.text_content or "").replace(_BR, " "))
            elif child.is_element_node:
                self.element(child, depth + 1)

    def element(self, node: LexborNode, depth: int) -> None:
        tag = node.tag or ""
        if _is_noise(node):
            return
        if tag == "header" and self.article_depth == 0:
            return  # the site's banner, not the article's own header
        if depth > _MAX_DEPTH:
            self.inline.append(" " + node.text(deep=True) + " ")
            return
        if tag == "a":
            href = node.attributes.get("href")
            if href and href.strip().startswith("#") and _is_permalink_mark(node):
                return  # a heading's permalink: ¶ in Sphinx, § in rustdoc, # elsewhere
            self.links.add(href, node.text(deep=True))
            self.walk(node, depth)
        elif tag in _HEADINGS:
            self.heading(node, _HEADINGS[tag], depth)
        elif tag == "pre":
            self.pre(node)
        elif tag == "br":
            self.inline.append(_BR)
        elif tag == "hr":
            self.flush()
        elif tag in ("img", "picture"):
            return
        elif tag in ("ul", "ol", "menu"):
            self.list(node, depth, ordered=tag == "ol")
        elif tag == "li":
            self.item(node, depth)
        elif tag == "tr":
            self.flush()
            self.row_cells.append(0)
            self.walk(node, depth)
            self.row_cells.pop()
            self.flush("row")
        elif tag in ("td", "th"):
            # CELLS before every cell but a row's first, an empty one too: "| continued | (2)"
            if self.row_cells[-1] if self.row_cells else "".join(self.inline).strip():
                self.inline.append(CELLS)
            if self.row_cells:
                self.row_cells[-1] += 1
            self.cell_depth += 1
            self.walk(node, depth)
            self.cell_depth -= 1
        elif tag in _BLOCK_TAGS:
            article = tag in _ARTICLE_TAGS or _attr(node, "role").lower() == "main"
            if self.cell_depth:
                self.inline.append(" ")
                self.walk(node, depth)
                self.inline.append(" ")
                return
            self.article_depth += article
            self.flush()
            self.walk(node, depth)
            self.flush()
            self.article_depth -= article
        else:
            self.walk(node, depth)

    def list(self, node: LexborNode, depth: int, *, ordered: bool) -> None:
        self.flush()
        start = _attr(node, "start")
        counter = int(start) if ordered and start.lstrip("-").isdigit() else 1
        if not self.list_stack:
            self.list_serial += 1
        self.list_stack.append([counter] if ordered else None)
        self.walk(node, depth)
        self.flush()
        self.list_stack.pop()

    def item(self, node: LexborNode, depth: int) -> None:
        self.flush()
        indent = "  " * max(0, len(self.list_stack) - 1)
        top = self.list_stack[-1] if self.list_stack else None
        if top is not None:
            bullet = f"{top[0]}. "
            top[0] += 1
        else:
            bullet = "- "
        saved_continuation = self.continuation
        self.marker = indent + bullet
        self.continuation = " " * len(self.marker)
        self.walk(node, depth)
        self.flush()
        self.marker = None
        self.continuation = saved_continuation

    def heading(self, node: LexborNode, level: int, depth: int) -> None:
        self.flush()
        saved_inline, saved_marker = self.inline, self.marker
        self.inline, self.marker = [], None
        self.cell_depth += 1  # block elements inside a heading stay inline
        self.walk(node, depth)
        self.cell_depth -= 1
        text = collapse_whitespace("".join(self.inline).replace(_BR, " "))
        self.inline, self.marker = saved_inline, saved_marker
        if not text:
            return
        if level == 1 and not self.first_h1:
            self.first_h1 = text
        self.finish_section()
        self.title, self.level, self.anchor = text, level, _anchor(node)

    def pre(self, node: LexborNode) -> None:
        self.flush()
        code = _raw_text(node).strip("\n")
        if code.strip():
            self.blocks.append(("pre", fence(code)))


def _raw_text(node: LexborNode, depth: int = 0) -> str:
    """The exact text below ``node`` (for <pre>): whitespace kept, noise such as line numbers
    dropped, <br> as a newline."""
    if depth > _MAX_DEPTH:
        return node.text(deep=True)
    parts: list[str] = []
    for child in node.iter(include_text=True):
        if child.is_text_node:
            parts.append(child.text_content or "")
        elif child.is_element_node:
            if _is_noise(child):
                continue
            if child.tag == "br":
                parts.append("\n")
            else:
                parts.append(_raw_text(child, depth + 1))
    return "".join(parts)


def _anchor(heading: LexborNode) -> str:
    """The fragment id of a heading: its own id, else its section's (Sphinx puts ids on
    ``<section id=...>`` / ``<div class="section" id=...>``), else an ``<a id|name>`` in it."""
    own = _attr(heading, "id")
    if own:
        return own
    parent = heading.parent
    if parent is not None and parent.tag in ("section", "div", "article") and _attr(parent, "id"):
        sibling = heading.prev
        first = True
        while sibling is not None:
            if sibling.is_element_node and (sibling.tag or "") in _HEADINGS:
                first = False
                break
            sibling = sibling.prev
        if first:
            return _attr(parent, "id")
    for a in heading.css("a[id], a[name]"):
        value = _attr(a, "id") or _attr(a, "name")
        if value:
            return value
    return ""


def cap_nesting(html: str, limit: int = MAX_NESTING) -> str:
    """``html`` with the tags nested deeper than ``limit`` taken out (their text stays): one pass
    over the tags, counting the elements that nest. The page comes back as it is when it nests
    no deeper than ``limit``."""
    depth = 0
    drops: list[tuple[int, int]] = []
    for match in _MARKUP.finditer(html):
        name = match.group(2)
        if name is None or match.group(3) or name.lower() in _FLAT_TAGS:
            continue  # a comment, raw text (a script), a self-closed or a non-nesting element
        if match.group(1):  # an end tag
            if depth > limit:
                drops.append(match.span())
            depth = max(0, depth - 1)
        else:
            depth += 1
            if depth > limit:
                drops.append(match.span())
    if not drops:
        return html
    parts: list[str] = []
    start = 0
    for begin, end in drops:
        parts.append(html[start:begin])
        start = end
    parts.append(html[start:])
    return " ".join(parts)


def parse_html(text: str, url: str) -> Document:
    """Parse decoded HTML fetched from ``url`` (the final URL). Raises SourceError when the page
    has no text content. Elements nested deeper than :data:`MAX_NESTING` are flattened into
    their parent (:func:`cap_nesting`)."""
    tree = LexborHTMLParser(cap_nesting(text))
    base = url
    base_node = tree.css_first("base[href]")
    if base_node is not None:
        href = _attr(base_node, "href")
        if href:
            try:
                base = urljoin(url, href)
            except ValueError:
                base = url
    links = LinkCollector(base, url)
    walker = _Walker(links)
    root = _content_root(tree)
    if root is None:
        raise SourceError("no text content")
    if root.tag in _ARTICLE_TAGS or _attr(root, "role").lower() == "main":
        walker.article_depth = 1
    walker.walk(root)
    walker.finish_section()

    sections = walker.sections
    if not any(section.text.strip() for section in sections):
        raise SourceError("no text content")
    head = tree.head
    title_node = head.css_first("title") if head is not None else None
    if title_node is None:
        title_node = tree.css_first("title")
    title = collapse_whitespace(title_node.text(deep=True)) if title_node is not None else ""
    h1 = walker.first_h1
    if h1 and title.startswith(h1) and title[len(h1) :].lstrip()[:1] in ("—", "–", "-", "|", "·", ":"):
        title = h1  # "<h1> — Site name" in <title>: the page's own heading is the better title
    if not title:
        title = h1
    if not title:
        first_h1 = tree.css_first("h1")
        title = collapse_whitespace(first_h1.text(deep=True)) if first_h1 is not None else ""
    return Document(
        url=url,
        title=title or url,
        sections=sections,
        links=links.links,
        content_type="text/html",
        anchors=links.anchors,
    )
