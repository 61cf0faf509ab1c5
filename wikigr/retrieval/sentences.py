"""Split passages into the units a short answer is made of: sentences, list items, labels, code.

Passages come from documentation (blocks separated by blank lines, signature lines such as
``socket.settimeout(value)`` standing alone before their description, list items, fenced code)
and from Wikipedia-like articles (plain paragraphs). A sentence ends at ``. ! ? …`` (after any
closing quote or bracket) followed by white space and a capital, a digit or an opening quote —
but not after an abbreviation ("e.g.", "Dr."), an initial ("G. Stanley Hall") or inside an
identifier or a number (``socket.settimeout()``, ``3.11``), which have no space after the dot.
A paragraph in Cyrillic (a third of its letters at least) is split by ``razdel`` (natasha's
rule-based segmenter), which knows Russian abbreviations («т. е.», «и т. д.», «см.», «г.»),
initials («А. С. Пушкин») and «» quotes.

A *label* is a short line without final punctuation: a signature (``class dict(**kwargs)``) or a
heading. A code-like label is attached to the sentence that follows it, so that the answer says
what the sentence describes (``socket.settimeout(value): Set a timeout on ...``). A passage that
starts in the middle of a sentence (a chunk's overlap) marks its first unit as a ``fragment``.
A table's row (the parsers join its cells with " | ", a row a line) is an item that reads "first
cell: the others" (``s.count(x): total number of occurrences of x in s``); the first row goes when
it names the columns (see :func:`_table`). The sentence that points at a table — "... in the
following table." up to ``MAX_TABLE_GAP`` sentences before its rows, or one ending with ":" right
before them — carries them (:attr:`Unit.rows`), and is quoted with them (:attr:`Unit.shown`).
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass

from wikigr.documents import CELLS
from wikigr.retrieval.api_names import called_name

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
    introduces: bool = False  # ends with ":" before code, rows or the passage's end ("d.ctime() is
    # equivalent to:"), or with "table" before rows
    rows: tuple[str, ...] = ()  # the rows of the table it points at ("... in the following table.")
    rows_cut: bool = False  # ... which run to the passage's end (more may follow in the next one)
    table: int = -1  # the passage's table it belongs to (a row, a long row's next sentence); -1: none
    owner: str = ""  # the signature of the definition it goes on describing, past its first sentence
    # ("os.environ" for "This mapping is captured the first time ..."), if any

    @property
    def row(self) -> bool:
        """Whether it is a table's row."""
        return self.table >= 0 and self.kind == ITEM

    @property
    def words(self) -> int:
        return len(self.shown.split())

    @functools.cached_property
    def owner_name(self) -> str:
        """How a quote names the definition it goes on describing ("os.environ",
        "subprocess.run()"); "" without one, or when its signature shows no name."""
        return called_name(self.owner) if self.owner else ""

    @property
    def shown(self) -> str:
        """What a quote of it shows: its text, and the rows of the table it points at, if any
        ("The numeric values of logging levels are given in the following table: CRITICAL: 50;
        ERROR: 40; ..."): rows apart with "; ", or " · " when a row's cells are ("'b': signed
        char; int; 1 · 'B': ..."), ending with "…" when the passage's end may have cut them."""
        if not self.rows:
            return self.text
        rows = [row.rstrip(".") for row in self.rows]
        apart = " · " if any("; " in row for row in rows) else "; "
        return f"{self.text.rstrip().rstrip('.:')}: {apart.join(rows)}{' …' if self.rows_cut else '.'}"

    @property
    def readable(self) -> bool:
        """Whether the unit reads as a sentence on its own: not one that says nothing without the
        code it introduces ("Another way to create the same list is:", "d.ctime() is
        equivalent to:")."""
        if self.fragment and len(self.text.split()) < SCRAP_WORDS:  # "… or socket's handle."
            return False
        return bool(self.rows) or not (self.introduces and _last_word(self.text) in POINTING)


SCRAP_WORDS = 4  # the end of a sentence cut by the passage's start, shorter than this, says nothing

POINTING = frozenset(
    """to is are was be as like this these it them follows following below example examples usage
    code idiom recipe snippet session equivalent becomes here thus so table""".split()  # noqa: SIM905
)  # the last word of a sentence that points at the code (or the table) after it


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


_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
_LATIN = re.compile(r"[A-Za-z]")


def _cyrillic(text: str) -> bool:
    """Whether ``text`` is Cyrillic prose: at least a third of its letters, Latin identifiers and
    all ("Вызовите socket.settimeout(5.0)."), are Cyrillic."""
    if text.isascii():
        return False
    cyrillic = len(_CYRILLIC.findall(text))
    return cyrillic > 0 and 2 * cyrillic >= len(_LATIN.findall(text))


def split_sentences(paragraph: str) -> list[str]:
    """The sentences of a paragraph of prose (line breaks are spaces)."""
    text = " ".join(paragraph.split())
    if _cyrillic(text):
        from razdel import sentenize  # Russian rules; imported by an answer that quotes Cyrillic

        return [found.text for found in sentenize(text) if found.text.strip()]
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


_NOTE_CELL = re.compile(r"(?:\(\d+\))+|\[\d+\]")  # "(1)", "(6)(7)": marks of the table's notes
_NOT_HEADING = re.compile(r"[\d()\[\]=%'\"`:*]")  # a cell holding these is data, not a column's name
_HEADING_WORDS = 5


def _cells(line: str) -> list[str]:
    """A row's cells: the parsers join them with " | ", so a row that ends with an empty cell ends
    with " |", empty cells in a row read " | | ", and one cut by a chunk's start may start with
    "| "."""
    line = line.strip()
    if line.endswith(" |") or line == "|":
        line += " "
    if line.startswith("| "):
        line = " " + line
    while " | | " in line:  # each bar its own separator: "sum of x and y | | " is 4 cells
        line = line.replace(" | | ", " |  | ")
    return [cell.strip() for cell in line.split(CELLS)]


def _celled(line: str) -> bool:
    stripped = line.strip()
    return (
        (CELLS in line or stripped.endswith(" |") or stripped.startswith("| "))
        and not _CODE_LINE.match(line)
        and not _ITEM.match(line)
    )


def _rows(lines: list[str]) -> list[bool]:
    """Which lines are a table's rows: lines holding cells (no code, no list item), two or more
    together."""
    celled = [_celled(line) for line in lines]
    return [
        here and ((n > 0 and celled[n - 1]) or (n + 1 < len(lines) and celled[n + 1]))
        for n, here in enumerate(celled)
    ]


def _heading(cells: list[str]) -> bool:
    """Whether a table's first row names its columns ("Operation | Result | Notes", "Python type |
    SQLite type"): short cells of words, no code, quotes or numbers."""
    named = [c for c in cells if c]
    return bool(named) and all(len(c.split()) <= _HEADING_WORDS and not _NOT_HEADING.search(c) for c in named)


def table_row(cells: list[str]) -> str:
    """A table's row as a line that reads: its first cell, then the others ("x in s | True if an
    item of s is equal to x, else False | (1)": "x in s: True if an item of s is equal to x,
    else False"), without the marks of the table's notes and empty cells."""
    first, *rest = cells
    rest = [c for c in rest if c and not _NOTE_CELL.fullmatch(c)]
    if not first:
        return "; ".join(rest)
    return f"{first}: {'; '.join(rest)}" if rest else first


def _table(lines: list[str]) -> list[tuple[str, str, bool]]:
    """The pieces of a table's rows (``lines``): an item per row that reads "first cell: the
    others" (a long one goes on in sentences), its first row left out when it names the columns.
    A row with more cells than most (a cell that holds " | " itself: "x | y") is kept as written;
    one with fewer, cut by the passage's start, is marked cut (True)."""
    rows = [_cells(line) for line in lines]
    counts: dict[int, int] = {}
    for cells in rows:
        counts[len(cells)] = counts.get(len(cells), 0) + 1
    usual = max(counts, key=lambda n: (counts[n], n))
    pieces: list[tuple[str, str, bool]] = []
    for n, (line, cells) in enumerate(zip(lines, rows, strict=True)):
        if n == 0 and len(cells) == usual and _heading(cells):
            continue
        if len(cells) > usual:
            pieces.append((ITEM, line.strip(), False))
            continue
        shown = table_row(cells)
        if not shown:
            continue
        head, *more = split_sentences(shown)
        pieces.append((ITEM, head, len(cells) < usual))
        pieces.extend((TEXT, sentence, False) for sentence in more)
    return pieces


_TABLE_AHEAD = re.compile(r"\b(?:following|next|below)\s+table\b|\btable\s+below\b", re.I)
MAX_TABLE_GAP = 3  # sentences between one that points at a table ahead and the table's first row


def _point_at_tables(units: list[Unit]) -> None:
    """Give the sentence that points at a table the table's rows (:attr:`Unit.rows`): one that
    introduces the rows right after it ("The available modes are:"), or one that says "the
    following table" at most ``MAX_TABLE_GAP`` sentences before them; the first such sentence of
    a table only."""
    claimed: set[int] = set()
    for n, unit in enumerate(units):
        if unit.kind != TEXT or unit.table >= 0:
            continue
        if unit.introduces and n + 1 < len(units) and units[n + 1].row:
            start = n + 1
        elif _TABLE_AHEAD.search(unit.text):
            ahead = units[n + 1 : n + 2 + MAX_TABLE_GAP]
            start = next((m for m, u in enumerate(ahead, n + 1) if u.row or u.kind != TEXT), -1)
            if start < 0 or not units[start].row:
                continue
        else:
            continue
        table = units[start].table
        if table in claimed:
            continue
        claimed.add(table)
        of_table = [u for u in units[start:] if u.table == table]
        unit.rows = tuple(u.text for u in of_table if u.row)
        unit.rows_cut = of_table[-1] is units[-1]


def _heads(piece: str, following: tuple[str, str, bool, int] | None) -> bool:
    """Whether ``piece`` introduces the definitions that the ``following`` piece opens ("Instance
    methods:", "The following attributes are also available:"), rather than going on describing
    the one before."""
    return (
        piece.rstrip().endswith(":")
        and following is not None
        and following[0] == LABEL
        and _code_like(following[1])
    )


def split_units(text: str) -> list[Unit]:
    """The units of a passage, in order (see the module's docstring)."""
    pieces: list[tuple[str, str, bool, int]] = []  # (kind, text, a row cut at its start?, its table)
    tables = itertools.count()
    for kind, lines in _blocks(text):
        if kind == CODE:
            pieces.append((CODE, "\n".join(lines), False, -1))
            continue
        paragraph: list[str] = []
        table: list[str] = []
        rows = _rows(lines)

        def flush(paragraph: list[str] = paragraph, table: list[str] = table) -> None:
            if paragraph:
                joined = " ".join(line.strip() for line in paragraph)
                if len(paragraph) == 1 and _is_label(joined):
                    pieces.append((LABEL, joined, False, -1))
                else:
                    pieces.extend((TEXT, s, False, -1) for s in split_sentences(joined))
                paragraph.clear()
            if table:
                which = next(tables)
                pieces.extend((kind, piece, cut, which) for kind, piece, cut in _table(table))
                table.clear()

        in_item = False
        for line, row in zip(lines, rows, strict=True):
            continues = in_item and line[:1].isspace()
            in_item = False
            if row and not continues:  # a table's row: an item of its own (see _table)
                if paragraph:
                    flush()
                table.append(line)
                continue
            if table:
                flush()
            if _CODE_LINE.match(line) and not continues:
                flush()
                if pieces and pieces[-1][0] == CODE:
                    pieces[-1] = (CODE, pieces[-1][1] + "\n" + line, False, -1)
                else:
                    pieces.append((CODE, line, False, -1))
            elif _ITEM.match(line):
                flush()
                pieces.append((ITEM, _ITEM.sub("", line, count=1).strip(), False, -1))
                in_item = True
            elif continues:  # an item's indented next line
                pieces[-1] = (ITEM, pieces[-1][1] + " " + line.strip(), False, -1)
                in_item = True
            else:
                paragraph.append(line)
        flush()
    units: list[Unit] = []
    label: str | None = None
    scope = ""  # the last signature: the next ones describe it, up to the next signature
    for n, (kind, piece, cut, of_table) in enumerate(pieces):
        if kind == LABEL and _code_like(piece):
            label = scope = piece  # the nearest signature before a sentence describes it
            continue
        row = of_table >= 0 and kind == ITEM
        shown, attached, owner = piece, "", ""
        if label is not None and kind in (TEXT, ITEM) and not row:  # a row is no description
            shown, attached = f"{_shown_label(label)}: {piece}", label
        elif kind in (TEXT, ITEM) and not row:
            following = pieces[n + 1] if n + 1 < len(pieces) else None
            owner = "" if _heads(piece, following) else scope
        label = None
        before = units[-1] if units else None
        if before is not None and before.kind == TEXT and (kind == CODE or row):
            # "... is equivalent to:" before code; "... given in the following table." before rows
            ends = before.text.rstrip()
            before.introduces = (
                before.introduces or ends.endswith(":") or (row and _last_word(ends) == "table")
            )
        units.append(Unit(shown, kind, len(units), label=attached, fragment=cut, table=of_table, owner=owner))
    if units and units[-1].kind == TEXT and units[-1].text.rstrip().endswith(":"):
        units[-1].introduces = True  # what it introduces is cut by the passage's end
    _point_at_tables(units)
    if units and units[0].kind in (TEXT, ITEM) and not units[0].row:  # a row is cut only when short
        first = units[0].text
        units[0].fragment = not (first[:1].isupper() or first[:1].isdigit() or first[:1] in "\"'“‘«„([`_")
    return units


def strip_citations(text: str) -> str:
    """``text`` without its ``[n]`` citations."""
    return _CITATION.sub("", text)
