"""Split sections into chunks small enough to embed.

all-MiniLM-L6-v2 truncates at 256 word pieces, so a chunk holds at most ~200 words. Sections are
split on paragraphs first, then lines, then sentences, then (as a last resort) word windows, and
the pieces are packed greedily. Consecutive chunks of a section overlap by a few words. Fenced
code blocks are kept whole unless one alone is more than three times the cap.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wikigr.documents import Chunk, Section

__all__ = ["chunk_sections", "count_words"]

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\uff66-\uff9f"
# A "word": one CJK character (each is at least one word piece), or a run of other non-space.
_TOKEN_RE = re.compile(rf"[{_CJK}]|[^\s{_CJK}]+")
_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*(?=\S)")
_CODE_SPLIT_FACTOR = 3


def count_words(text: str) -> int:
    """Words as the chunker counts them (CJK characters count one each)."""
    return len(_TOKEN_RE.findall(text))


@dataclass(frozen=True)
class _Unit:
    text: str
    words: int
    sep: str  # what joins it to the piece before it, when that piece directly precedes it
    code: bool = False


def _blocks(text: str) -> list[tuple[str, bool]]:
    """Paragraphs and fenced code blocks, in order: (text, is_code)."""
    blocks: list[tuple[str, bool]] = []
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph and "".join(paragraph).strip():
            blocks.append(("\n".join(paragraph).strip("\n"), False))
        paragraph.clear()

    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        opening = _FENCE_RE.match(line)
        if opening is not None:
            flush()
            marker = opening.group(1)
            closing = re.compile(rf"^ {{0,3}}{re.escape(marker[0])}{{{len(marker)},}}\s*$")
            end = i + 1
            while end < len(lines) and not closing.match(lines[end]):
                end += 1
            code_lines = lines[i : end + 1]
            if end >= len(lines):  # unclosed: close it so that every chunk stays well formed
                code_lines.append(marker)
            blocks.append(("\n".join(code_lines), True))
            i = end + 1
            continue
        if line.strip():
            paragraph.append(line)
        else:
            flush()
        i += 1
    flush()
    return blocks


def _gap(text: str) -> str:
    """How two pieces cut apart at ``text`` (the characters between them) are joined again."""
    return " " if text else ""


def _windows(text: str, max_words: int, sep: str) -> list[_Unit]:
    """Cut text into runs of at most max_words words, keeping its own spacing."""
    spans = [m.span() for m in _TOKEN_RE.finditer(text)]
    units: list[_Unit] = []
    for start in range(0, len(spans), max_words):
        piece = spans[start : start + max_words]
        joiner = sep if start == 0 else _gap(text[spans[start - 1][1] : piece[0][0]])
        units.append(_Unit(text[piece[0][0] : piece[-1][1]], len(piece), joiner))
    return units


def _sentences(text: str, max_words: int, sep: str) -> list[_Unit]:
    units: list[_Unit] = []
    joiner = sep
    position = 0
    cuts = [(m.start(), m.end()) for m in _SENTENCE_END_RE.finditer(text)] + [(len(text), len(text))]
    for start, end in cuts:
        sentence = text[position:start].strip()
        if sentence:
            words = count_words(sentence)
            if words <= max_words:
                units.append(_Unit(sentence, words, joiner))
            else:
                units.extend(_windows(sentence, max_words, joiner))
            joiner = _gap(text[start:end])
        position = end
    return units


def _prose_units(block: str, max_words: int) -> list[_Unit]:
    words = count_words(block)
    if words <= max_words:
        return [_Unit(block, words, "\n\n")]
    units: list[_Unit] = []
    for line in block.split("\n"):
        if not line.strip():
            continue
        sep = "\n\n" if not units else "\n"
        words = count_words(line)
        if words <= max_words:
            units.append(_Unit(line, words, sep))
        else:
            units.extend(_sentences(line.strip(), max_words, sep))
    return units


def _code_units(block: str, max_words: int) -> list[_Unit]:
    words = count_words(block)
    if words <= _CODE_SPLIT_FACTOR * max_words:
        return [_Unit(block, words, "\n\n", code=True)]
    lines = block.split("\n")
    opening, closing, body = lines[0], lines[-1], lines[1:-1]
    budget = max(1, max_words - count_words(opening) - count_words(closing))
    pieces: list[list[str]] = []
    current: list[str] = []
    current_words = 0
    for line in body:
        parts = [line]
        if count_words(line) > budget:  # a single monster line (minified code): cut it into windows
            parts = [unit.text for unit in _windows(line, budget, "")]
        for part in parts:
            part_words = count_words(part)
            if current and current_words + part_words > budget:
                pieces.append(current)
                current, current_words = [], 0
            current.append(part)
            current_words += part_words
    if current:
        pieces.append(current)
    units: list[_Unit] = []
    for piece in pieces:
        text = "\n".join([opening, *piece, closing])
        units.append(_Unit(text, count_words(text), "\n\n", code=True))
    return units


def _overlap(previous: list[_Unit], wanted: int) -> _Unit | None:
    """The last ``wanted`` words of the previous chunk's trailing prose (never code)."""
    if wanted <= 0 or not previous or previous[-1].code:
        return None
    tail: list[_Unit] = []
    words = 0
    for unit in reversed(previous):
        if unit.code or words >= wanted:
            break
        tail.insert(0, unit)
        words += unit.words
    text = _render(tail)
    spans = [m.span() for m in _TOKEN_RE.finditer(text)]
    if not spans:
        return None
    keep = spans[-wanted:]
    return _Unit(text[keep[0][0] :].strip(), len(keep), "\n\n")


def _render(units: list[_Unit]) -> str:
    parts: list[str] = []
    for unit in units:
        if parts:
            parts.append(unit.sep)
        parts.append(unit.text)
    return "".join(parts).strip("\n")


def chunk_sections(sections: list[Section], max_words: int = 200, overlap_words: int = 30) -> list[Chunk]:
    """Chunks of at most ``max_words`` words (a code block kept whole may be larger, up to 3x)
    for every non-empty section, in order. Within a section, each chunk after the first starts
    with the last ``overlap_words`` words of the chunk before (prose only). Chunk text does not
    include the section title."""
    if max_words < 1:
        raise ValueError("max_words must be at least 1")
    if not 0 <= overlap_words < max_words:
        raise ValueError("overlap_words must be at least 0 and less than max_words")
    # Prose is cut into pieces small enough that the overlap always fits in front of one.
    piece_cap = max_words - overlap_words
    chunks: list[Chunk] = []
    for section_index, section in enumerate(sections):
        units: list[_Unit] = []
        for block, is_code in _blocks(section.text):
            if is_code:
                units.extend(_code_units(block, max_words))
            else:
                units.extend(_prose_units(block, piece_cap))
        if not units:
            continue
        texts: list[str] = []
        current: list[_Unit] = []
        current_words = 0
        for unit in units:
            if current and current_words + unit.words > max_words:
                texts.append(_render(current))
                carried = _overlap(current, min(overlap_words, max_words - unit.words))
                current = [carried] if carried is not None else []
                current_words = carried.words if carried is not None else 0
            current.append(unit)
            current_words += unit.words
        texts.append(_render(current))
        chunks.extend(
            Chunk(section_index=section_index, index=i, text=text)
            for i, text in enumerate(t for t in texts if t.strip())
        )
    return chunks
