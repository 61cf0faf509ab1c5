"""Split passages into the units a short answer is made of: sentences, list items, labels, code.

Passages come from documentation (blocks separated by blank lines, signature lines such as
``socket.settimeout(value)`` standing alone before their description, list items, fenced code)
and from Wikipedia-like articles (plain paragraphs). A sentence ends at ``. ! ? …`` (after any
closing quote or bracket) followed by white space and a capital, a digit or an opening quote —
but not after an abbreviation ("e.g.", "Dr."), an initial ("G. Stanley Hall") or inside an
identifier or a number (``socket.settimeout()``, ``3.11``), which have no space after the dot.

A *label* is a short line without final punctuation: a signature (``class dict(**kwargs)``) or a
heading. A code-like label is attached to the sentence that follows it, so that the answer says
what the sentence describes (``socket.settimeout(value): Set a timeout on ...``). A passage that
starts in the middle of a sentence (a chunk's overlap) marks its first unit as a ``fragment``.
A table's row (the parsers join its cells with " | ", a row a line) is an item that reads "first
cell: the others" (``s.count(x): total number of occurrences of x in s``); its header goes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TEXT = "text"  # a sentence of prose
ITEM = "item"  # a list item
LABEL = "label"  # a signature or heading line, not attached to a sentence
CODE = "code"  # a fenced block or code lines

ABBREVIATIONS = frozenset(
    """
    e.g i.e etc cf vs viz al approx ca mr mrs ms dr prof st jr sr mt ft no nos vol vols fig figs
    gen col lt sgt capt cmdr rev hon inc ltd co corp dept univ est jan feb mar apr jun jul aug sep
    sept oct nov dec u.s u.k u.n a.m p.m ph.d b.a m.a op pp ed eds trans
    """.split()  # noqa: SIM905
)
_FENCE = re.compile(r"^\s*(```|~~~)")
_ITEM = re.compile(r"^\s*(?:[-*•+]|\d{1,3}[.)])\s+")
_CODE_LINE = re.compile(r"^(?:\s{4,}|\t|>>> |\.\.\. |\$ )")
# A candidate end of sentence: the punctuation (and closing marks), the space, and what follows.
_END = re.compile(r"([.!?…]+)([\"'”’)\]]*)(\s+)(?=[\"'“‘(\[]?[A-Z0-9À-ÖØ-Þ])")
_WORD_BEFORE = re.compile(r"(\S+)$")
_CITATION = re.compile(r"\s*\[\d+\]")
_SIGNATURE = re.compile(r"[\w.]+\(.*\)|^[\w]+(?:\.[\w]+)+$|^(?:class|exception|async|def)\s|^-{1,2}\w")


@dataclass
class Unit:
    """A piece of a passage that a short answer may quote."""

    text: str  # what is shown (a label attached to a sentence comes first: "label: sentence")
    kind: str  # TEXT, ITEM, LABEL or CODE
    index: int  # its position in the passage (0 = first)
    fragment: bool = False  # starts in the middle of a sentence
    label: str = ""  # the signature line shown before it ("str.join(iterable)"), if any
    introduces: bool = False  # ends with ":" before code ("d.ctime() is equivalent to:")

    @property
    def words(self) -> int:
        return len(self.text.split())

    @property
    def readable(self) -> bool:
        """Whether the unit reads as a sentence on its own: not one that says nothing without the
        code it introduces ("Another way to create the same list is:", "d.ctime() is
        equivalent to:")."""
        if self.fragment and self.words < SCRAP_WORDS:  # "… or socket's handle."
            return False
        return not (self.introduces and _last_word(self.text) in POINTING)


SCRAP_WORDS = 4  # the end of a sentence cut by the passage's start, shorter than this, says nothing

POINTING = frozenset(
    """to is are was be as like this these it them follows following below example examples usage
    code idiom recipe snippet session equivalent becomes here thus so""".split()  # noqa: SIM905
)  # the last word of a sentence that points at the code after it


def _last_word(text: str) -> str:
    words = re.findall(r"\w+", text)
    return words[-1].casefold() if words else ""


def _is_abbreviation(before: str) -> bool:
    """Whether the word ending at a dot (``before``, without the dot) is an abbreviation or an
    initial, after which a capital does not start a new sentence."""
    word = before.lstrip("(\"'“‘[").rstrip(".")
    if not word:
        return False
    if len(word) == 1 and word.isalpha():  # an initial: "G. Stanley Hall", "J. R. R. Tolkien"
        return True
    return word.casefold() in ABBREVIATIONS


def split_sentences(paragraph: str) -> list[str]:
    """The sentences of a paragraph of prose (line breaks are spaces)."""
    text = " ".join(paragraph.split())
    out: list[str] = []
    start = 0
    for match in _END.finditer(text):
        end = match.start(3)
        if match.group(1) == ".":
            before = _WORD_BEFORE.search(text, 0, match.start(1))
            if before and _is_abbreviation(before.group(1)):
                continue
        sentence = text[start:end].strip()
        if sentence:
            out.append(sentence)
        start = match.end(3)
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


def _blocks(text: str) -> list[tuple[str, list[str]]]:
    """Blocks of lines separated by blank lines; a fenced block (which may hold blank lines) is
    one block of kind CODE."""
    blocks: list[tuple[str, list[str]]] = []
    current: list[str] = []
    fence: list[str] | None = None
    for line in text.splitlines():
        if fence is not None:
            fence.append(line)
            if _FENCE.match(line):
                blocks.append((CODE, fence))
                fence = None
            continue
        if _FENCE.match(line):
            if current:
                blocks.append((TEXT, current))
                current = []
            fence = [line]
        elif line.strip():
            current.append(line)
        elif current:
            blocks.append((TEXT, current))
            current = []
    if fence is not None:
        blocks.append((CODE, fence))
    if current:
        blocks.append((TEXT, current))
    return blocks


LONG_SIGNATURE = 600  # characters: a definition line up to this long is a label however many words


def _is_label(line: str) -> bool:
    stripped = line.strip()
    if stripped.endswith((".", "!", "?", ":", ";", ",")) or _ITEM.match(stripped):
        return False
    return _short(stripped) or (len(stripped) <= LONG_SIGNATURE and bool(_CALL.fullmatch(stripped)))


# a long label is a call's signature, whole: "subprocess.run(args, *, stdin=None, ...)", not
# "Returns: the path of the file ..." (a line of prose without its stop)
_CALL = re.compile(r"(?:(?:class|exception|async|def)\s+)?[\w.]+\(.*\)(?:\s*->\s*[\w.\[\], |]+)?")


def _short(line: str) -> bool:
    return len(line.split()) <= 12 and len(line) <= 120


_SHOWN_PARAMETERS = 3


def _shown_label(label: str) -> str:
    """``label`` as shown before its sentence: a long signature with its first parameters only
    ("subprocess.run(args, *, stdin=None, …)"), so that the description is what is read."""
    opening = label.find("(")
    if _short(label) or opening < 0:
        return label
    depth, commas, quote = 0, 0, ""
    for n in range(opening, len(label)):
        char = label[n]
        if quote:  # inside a default's string: sep=','
            quote = "" if char == quote else quote
            continue
        if char in "'\"":
            quote = char
        depth += (char in "([{") - (char in ")]}")
        if char == "," and depth == 1:
            commas += 1
            if commas == _SHOWN_PARAMETERS:
                return f"{label[:n]}, …)"
    return label


def _code_like(label: str) -> bool:
    return bool(_SIGNATURE.search(label.strip()))


_CELLS = " | "  # how the parsers join a table's cells; a row is a line
_HEADER_CELL = re.compile(r"[A-Z][a-z]*(?: [A-Za-z][a-z]*){0,2}")  # "Operation", "Year Adopted"
_NOTE_CELL = re.compile(r"(?:\(\d+\))+|\[\d+\]")  # "(1)", "(6)(7)": marks of the table's notes


def _rows(lines: list[str]) -> list[bool]:
    """Which lines are a table's rows: lines holding cells, two or more together."""
    celled = [_CELLS in line for line in lines]
    return [
        here and ((n > 0 and celled[n - 1]) or (n + 1 < len(lines) and celled[n + 1]))
        for n, here in enumerate(celled)
    ]


def table_row(line: str) -> str:
    """A table's row as a line that reads: its first cell, then the others ("x in s | True if an
    item of s is equal to x, else False | (1)": "x in s: True if an item of s is equal to x,
    else False"), without the marks of the table's notes; "" for a header ("Operation | Result |
    Notes": capitalised words only)."""
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    cells = [c for c in cells if c and not _NOTE_CELL.fullmatch(c)]
    if not cells or all(_HEADER_CELL.fullmatch(c) for c in cells):
        return ""
    return f"{cells[0]}: {'; '.join(cells[1:])}" if len(cells) > 1 else cells[0]


def split_units(text: str) -> list[Unit]:
    """The units of a passage, in order (see the module's docstring)."""
    pieces: list[tuple[str, str]] = []  # (kind, text)
    for kind, lines in _blocks(text):
        if kind == CODE:
            pieces.append((CODE, "\n".join(lines)))
            continue
        paragraph: list[str] = []
        rows = _rows(lines)

        def flush(paragraph: list[str] = paragraph) -> None:
            if paragraph:
                joined = " ".join(line.strip() for line in paragraph)
                if len(paragraph) == 1 and _is_label(joined):
                    pieces.append((LABEL, joined))
                else:
                    pieces.extend((TEXT, s) for s in split_sentences(joined))
                paragraph.clear()

        in_item = False
        for line, row in zip(lines, rows, strict=True):
            continues = in_item and line[:1].isspace()
            in_item = False
            if row:  # a table's row: an item of its own, read as "first cell: the others"
                flush()
                shown = table_row(line)
                if shown:
                    pieces.append((ITEM, shown))
            elif _CODE_LINE.match(line) and not continues:
                flush()
                if pieces and pieces[-1][0] == CODE:
                    pieces[-1] = (CODE, pieces[-1][1] + "\n" + line)
                else:
                    pieces.append((CODE, line))
            elif _ITEM.match(line):
                flush()
                pieces.append((ITEM, _ITEM.sub("", line, count=1).strip()))
                in_item = True
            elif continues:  # an item's indented next line
                pieces[-1] = (ITEM, pieces[-1][1] + " " + line.strip())
                in_item = True
            else:
                paragraph.append(line)
        flush()
    units: list[Unit] = []
    label: str | None = None
    for kind, piece in pieces:
        if kind == LABEL and _code_like(piece):
            label = piece  # the nearest signature before a sentence describes it
            continue
        shown, attached = piece, ""
        if label is not None and kind in (TEXT, ITEM):
            shown, attached = f"{_shown_label(label)}: {piece}", label
        label = None
        if kind == CODE and units and units[-1].kind == TEXT and units[-1].text.rstrip().endswith(":"):
            units[-1].introduces = True
        units.append(Unit(shown, kind, len(units), label=attached))
    if units and units[0].kind in (TEXT, ITEM):
        first = units[0].text
        units[0].fragment = not (first[:1].isupper() or first[:1].isdigit() or first[:1] in "\"'“‘([`_")
    return units


def strip_citations(text: str) -> str:
    """``text`` without its ``[n]`` citations."""
    return _CITATION.sub("", text)
