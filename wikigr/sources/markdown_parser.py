"""Markdown to sections: ATX (and simple setext) headings outside fenced code, plain-ish text."""

from __future__ import annotations

import re

from wikigr.documents import CELLS, Document, Section
from wikigr.errors import SourceError
from wikigr.sources.parsing import LinkCollector, collapse_whitespace, fence, file_name

__all__ = ["parse_markdown"]

_FENCE_OPEN_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_ATX_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT_RE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_HR_RE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_LIST_ITEM_RE = re.compile(r"^(\s*)([-*+]|\d{1,9}[.)])(\s+)(.*)$")
_TABLE_ROW_RE = re.compile(r"^\s*\|")
# Possessive (*+): "\s*\|?\s*" backtracked over every split of a line's indent (a list nested
# 1,000 deep took a minute, 3,000 deep hours).
_TABLE_RULE_RE = re.compile(r"^\s*+\|?\s*+:?-{3,}+:?\s*+(?:\|\s*+:?-{3,}+:?\s*+)*+\|?\s*+$")
_QUOTE_RE = re.compile(r"^\s{0,3}>\s?")
_REF_DEF_RE = re.compile(r"^ {0,3}\[([^\]]+)\]:\s*<?(\S+?)>?(?:\s+[\"'(].*[\"')])?\s*$")
_HEADING_ID_RE = re.compile(r"\s*\{#([A-Za-z0-9_:.-]+)\}\s*$")
_INDENTED_RE = re.compile(r"^(?: {4}|\t)")

# Inline patterns use bounded repetition so that pathological lines cannot backtrack for minutes.
_CODE_SPAN_RE = re.compile(r"(`{1,10})([^`\n]{1,2000}?)\1(?!`)")
_LINK_TAIL = r"\(\s{0,20}+<?([^)\s>]{0,2000}+)>?(?:\s{1,20}[\"'(][^)\n]{0,300}[\"')])?\s{0,20}\)"
_IMAGE_RE = re.compile(r"!\[([^\]\n]{0,500}+)\]" + _LINK_TAIL)
_INLINE_MARK_RE = re.compile(r"[`*]")
_CODE_LINK_RE = re.compile(r"\[([^\]\n`]{0,200}`[^\]\n]{0,300}+)\]" + _LINK_TAIL)  # [`os.path` docs](url)
_LINK_RE = re.compile(r"\[([^\]\n]{0,500}+)\]" + _LINK_TAIL)
_REF_LINK_RE = re.compile(r"\[([^\]\n]{1,500}+)\]\[[^\]\n]{0,500}+\]")
_AUTOLINK_RE = re.compile(r"<((?:https?|file)://[^>\s]{1,2000})>")
_HTML_HREF_RE = re.compile(r"""<a\s[^>]{0,500}?href\s*=\s*["']([^"']{1,2000})["']""", re.I)
_HTML_TAG_RE = re.compile(r"</?[A-Za-z][A-Za-z0-9-]{0,30}(?:\s[^<>]{0,1000})?/?>")
_BOLD_RE = re.compile(r"(\*\*|__)(?=\S)([^\n]{1,500}?)(?<=\S)\1")
_STRIKE_RE = re.compile(r"~~(?=\S)([^\n]{1,500}?)(?<=\S)~~")
_EM_STAR_RE = re.compile(r"(?<![\w*\\])\*(?=[^\s*])([^\n]{1,300}?)(?<=[^\s*])\*(?![\w*])")
_EM_UNDER_RE = re.compile(r"(?<![\w\\])_(?=[^\s_])([^\n]{1,300}?)(?<=[^\s_])_(?!\w)")
_ESCAPE_RE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~])")


def _clean_inline(text: str, links: LinkCollector | None) -> str:
    """Markdown inline markup to plain text; links are recorded. Code spans are kept verbatim
    (without their backticks)."""

    # A link whose text holds a code span first: splitting at code spans would cut it in two.
    def code_link(m: re.Match[str]) -> str:
        if text[max(0, m.start() - 1) : m.start()] == "!":
            return m.group(0)
        if links is not None:
            links.add(m.group(2), _INLINE_MARK_RE.sub("", m.group(1)))
        return m.group(1)

    text = _CODE_LINK_RE.sub(code_link, text)
    out: list[str] = []
    position = 0
    for m in _CODE_SPAN_RE.finditer(text):
        out.append(_clean_prose(text[position : m.start()], links))
        out.append(m.group(2).strip() if m.group(2).strip() else m.group(2))
        position = m.end()
    out.append(_clean_prose(text[position:], links))
    return "".join(out)


def _clean_prose(text: str, links: LinkCollector | None) -> str:
    if not text:
        return text
    if links is not None:
        for m in _LINK_RE.finditer(text):
            if text[max(0, m.start() - 1) : m.start()] != "!":
                links.add(m.group(2), _INLINE_MARK_RE.sub("", m.group(1)))
        for m in _AUTOLINK_RE.finditer(text):
            links.add(m.group(1))
        for m in _HTML_HREF_RE.finditer(text):
            links.add(m.group(1))
    text = _IMAGE_RE.sub(lambda m: m.group(1), text)
    text = _LINK_RE.sub(lambda m: m.group(1), text)
    text = _REF_LINK_RE.sub(lambda m: m.group(1), text)
    text = _AUTOLINK_RE.sub(lambda m: m.group(1), text)
    text = _HTML_TAG_RE.sub("", text)
    text = _BOLD_RE.sub(lambda m: m.group(2), text)
    text = _STRIKE_RE.sub(lambda m: m.group(1), text)
    text = _EM_STAR_RE.sub(lambda m: m.group(1), text)
    text = _EM_UNDER_RE.sub(lambda m: m.group(1), text)
    return _ESCAPE_RE.sub(lambda m: m.group(1), text)


def _slug(text: str) -> str:
    """GitHub-style heading anchor: lower case, punctuation dropped, spaces to hyphens."""
    lowered = text.strip().lower()
    kept = "".join(ch for ch in lowered if ch.isalnum() or ch in " -_")
    return kept.replace(" ", "-")


class _MarkdownBuilder:
    def __init__(self, links: LinkCollector) -> None:
        self.links = links
        self.sections: list[Section] = []
        self.title = ""
        self.level = 0
        self.anchor = ""
        self.blocks: list[str] = []
        self.paragraph: list[str] = []
        self.last_was_list = False
        self.first_heading = ""
        self.slugs: dict[str, int] = {}

    def flush_paragraph(self) -> None:
        if not self.paragraph:
            return
        lines: list[str] = []
        is_list = False
        for raw in self.paragraph:
            quote = _QUOTE_RE.match(raw)
            line = raw[quote.end() :] if quote else raw
            if _TABLE_RULE_RE.match(line) and "-" in line:
                continue
            item = _LIST_ITEM_RE.match(line)
            if item is not None:
                indent, marker, _, rest = item.groups()
                bullet = "-" if marker in "-*+" else marker
                lines.append(f"{indent}{bullet} {_clean_inline(rest.strip(), self.links)}")
                is_list = True
            elif _TABLE_ROW_RE.match(line):
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                lines.append(CELLS.join(_clean_inline(c, self.links) for c in cells))
            elif lines and line.strip():
                lines[-1] = f"{lines[-1]} {_clean_inline(line.strip(), self.links)}"
            elif line.strip():
                lines.append(_clean_inline(line.strip(), self.links))
        text = "\n".join(lines).strip("\n")
        if text.strip():
            self.blocks.append(text)
        self.last_was_list = is_list
        self.paragraph = []

    def finish_section(self) -> None:
        self.flush_paragraph()
        text = "\n\n".join(self.blocks)
        if text or self.title:
            self.sections.append(Section(self.title, self.level, text, self.anchor))
        self.blocks = []

    def heading(self, level: int, raw: str) -> None:
        self.flush_paragraph()
        explicit = _HEADING_ID_RE.search(raw)
        if explicit is not None:
            raw = raw[: explicit.start()]
        text = collapse_whitespace(_clean_inline(raw, self.links))
        if not text:
            return
        self.finish_section()
        if explicit is not None:
            anchor = explicit.group(1)
        else:
            base = _slug(text)
            count = self.slugs.get(base, 0)
            self.slugs[base] = count + 1
            anchor = base if count == 0 else f"{base}-{count}"
        if not self.first_heading:
            self.first_heading = text
        self.title, self.level, self.anchor = text, level, anchor
        self.last_was_list = False

    def code(self, lines: list[str]) -> None:
        self.flush_paragraph()
        code = "\n".join(lines).strip("\n")
        if code.strip():
            self.blocks.append(fence(code))
        self.last_was_list = False


def _front_matter(lines: list[str]) -> tuple[int, str]:
    """(lines to skip, title) for a YAML front matter block at the top."""
    if not lines or lines[0].strip() != "---":
        return 0, ""
    for end in range(1, min(len(lines), 200)):
        if lines[end].strip() in ("---", "..."):
            title = ""
            for line in lines[1:end]:
                key, sep, value = line.partition(":")
                if sep and key.strip().lower() == "title":
                    title = value.strip().strip("'\"").strip()
            return end + 1, title
    return 0, ""


def parse_markdown(text: str, url: str) -> Document:
    """Parse decoded Markdown fetched from ``url``. Raises SourceError when it has no text."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    skip, front_title = _front_matter(lines)
    links = LinkCollector(url, url)
    md = _MarkdownBuilder(links)
    i = skip
    in_comment = False
    while i < len(lines):
        line = lines[i]
        i += 1
        if in_comment:
            if "-->" in line:
                in_comment = False
                line = line.split("-->", 1)[1]
                if not line.strip():
                    continue
            else:
                continue
        opening = _FENCE_OPEN_RE.match(line)
        if opening is not None and not (opening.group(1)[0] == "`" and "`" in opening.group(2)):
            marker = opening.group(1)
            indent = len(line) - len(line.lstrip(" "))
            closing = re.compile(rf"^ {{0,3}}{re.escape(marker[0])}{{{len(marker)},}}[ \t]*$")
            body: list[str] = []
            while i < len(lines) and not closing.match(lines[i]):
                body_line = lines[i]
                # Content indented like its opening fence loses that indentation.
                strip = min(indent, len(body_line) - len(body_line.lstrip(" ")))
                body.append(body_line[strip:])
                i += 1
            i += 1  # the closing fence (or the end of the document)
            md.code(body)
            continue
        if not line.strip():
            md.flush_paragraph()
            continue
        if "<!--" in line:
            before, _, after = line.partition("<!--")
            if "-->" in after:
                line = before + after.split("-->", 1)[1]
            else:
                line = before
                in_comment = True
            if not line.strip():
                continue
        if not md.paragraph and _INDENTED_RE.match(line) and not md.last_was_list:
            body = [line]
            while i < len(lines) and (not lines[i].strip() or _INDENTED_RE.match(lines[i])):
                body.append(lines[i])
                i += 1
            md.code([b[4:] if b.startswith("    ") else b.lstrip("\t") for b in body])
            continue
        atx = _ATX_RE.match(line)
        if atx is not None:
            md.heading(len(atx.group(1)), atx.group(2) or "")
            continue
        setext = _SETEXT_RE.match(line)
        if setext is not None and len(md.paragraph) == 1:
            candidate = md.paragraph[0]
            if not _LIST_ITEM_RE.match(candidate) and not _TABLE_ROW_RE.match(candidate):
                md.paragraph = []
                md.heading(1 if setext.group(1)[0] == "=" else 2, candidate.strip())
                continue
        if _HR_RE.match(line):
            md.flush_paragraph()
            continue
        ref = _REF_DEF_RE.match(line)
        if ref is not None and not md.paragraph:
            links.add(ref.group(2))
            continue
        md.paragraph.append(line)
    md.finish_section()

    sections = md.sections
    if not any(section.text.strip() for section in sections):
        raise SourceError("no text content")
    title = front_title or md.first_heading or file_name(url) or url
    return Document(
        url=url,
        title=title,
        sections=sections,
        links=links.links,
        content_type="text/markdown",
        anchors=links.anchors,
    )
