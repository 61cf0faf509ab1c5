from __future__ import annotations

import itertools
import re

import pytest

from wikigr.documents import Section
from wikigr.sources.chunk import chunk_sections, count_words


def sentence(n: int, words: int = 12) -> str:
    return " ".join(f"s{n}w{i}" for i in range(words - 1)) + f" s{n}end."


def paragraph(start: int, sentences: int, words: int = 12) -> str:
    return " ".join(sentence(start + i, words) for i in range(sentences))


def test_small_section_is_one_chunk_without_its_title() -> None:
    chunks = chunk_sections([Section("Intro", 1, "Hello world.\n\nSecond paragraph.")])
    assert [(c.section_index, c.index, c.text) for c in chunks] == [
        (0, 0, "Hello world.\n\nSecond paragraph.")
    ]
    assert "Intro" not in chunks[0].text


def test_empty_sections_are_skipped_but_indices_kept() -> None:
    sections = [
        Section("A", 1, ""),
        Section("B", 2, "  \n\n "),
        Section("C", 2, "Real text."),
    ]
    chunks = chunk_sections(sections)
    assert [(c.section_index, c.index) for c in chunks] == [(2, 0)]


def test_chunks_respect_the_cap_and_pack_paragraphs() -> None:
    paragraphs = [paragraph(10 * p, 3) for p in range(10)]  # 36 words each
    text = "\n\n".join(paragraphs)
    chunks = chunk_sections([Section("S", 1, text)], max_words=100, overlap_words=0)
    assert all(count_words(c.text) <= 100 for c in chunks)
    # Two whole paragraphs (72 words) fit; a third would pass 100: split on paragraph bounds.
    assert chunks[0].text == "\n\n".join(paragraphs[:2])
    assert [c.index for c in chunks] == list(range(len(chunks)))
    joined = "\n\n".join(c.text for c in chunks)
    assert joined == text  # nothing lost, nothing repeated without overlap


def test_overlap_carries_the_tail_of_the_previous_chunk() -> None:
    text = "\n\n".join(paragraph(10 * p, 3) for p in range(6))
    chunks = chunk_sections([Section("S", 1, text)], max_words=100, overlap_words=10)
    assert len(chunks) >= 3
    for previous, current in itertools.pairwise(chunks):
        tail = previous.text.split()[-10:]
        assert current.text.split()[:10] == tail
        assert count_words(current.text) <= 100
    # Every sentence of the source appears in some chunk.
    for word in re.findall(r"s\d+end\.", text):
        assert any(word in c.text for c in chunks)


def test_overlap_does_not_cross_sections() -> None:
    sections = [Section("A", 1, paragraph(0, 20)), Section("B", 1, "Fresh start here.")]
    chunks = chunk_sections(sections, max_words=50, overlap_words=10)
    b_chunks = [c for c in chunks if c.section_index == 1]
    assert [c.text for c in b_chunks] == ["Fresh start here."]


def test_long_paragraph_is_split_on_sentences() -> None:
    text = paragraph(0, 20, words=10)  # one 200-word paragraph, sentences of 10 words
    chunks = chunk_sections([Section("S", 1, text)], max_words=45, overlap_words=0)
    assert all(count_words(c.text) <= 45 for c in chunks)
    assert all(c.text.endswith(".") for c in chunks)  # cuts fall between sentences
    assert " ".join(c.text for c in chunks) == text


def test_a_sentence_longer_than_the_cap_is_cut_into_windows() -> None:
    text = " ".join(f"w{i}" for i in range(250))
    chunks = chunk_sections([Section("S", 1, text)], max_words=100, overlap_words=20)
    assert all(count_words(c.text) <= 100 for c in chunks)
    assert chunks[0].text.split() == [f"w{i}" for i in range(80)]
    assert chunks[1].text.split() == [f"w{i}" for i in range(60, 160)]
    assert chunks[-1].text.split()[-1] == "w249"


def test_code_block_is_never_split_below_three_times_the_cap() -> None:
    code_lines = [f"value_{i} = compute({i}, other_{i})" for i in range(60)]  # 240 words
    code = "```\n" + "\n".join(code_lines) + "\n```"
    text = paragraph(0, 3) + "\n\n" + code + "\n\n" + paragraph(5, 3)
    chunks = chunk_sections([Section("S", 1, text)], max_words=100, overlap_words=10)
    with_code = [c for c in chunks if "```" in c.text]
    assert len(with_code) == 1
    assert with_code[0].text == code  # intact, alone, with no overlap glued in front
    assert count_words(with_code[0].text) > 100
    assert all(count_words(c.text) <= 100 for c in chunks if c is not with_code[0])


def test_code_block_with_blank_lines_stays_one_unit() -> None:
    code = "```\ndef f():\n\n    return 1\n\n\ndef g():\n    return 2\n```"
    chunks = chunk_sections([Section("S", 1, "Before.\n\n" + code + "\n\nAfter.")], max_words=200)
    assert chunks[0].text == "Before.\n\n" + code + "\n\nAfter."


def test_huge_code_block_is_split_on_lines_and_refenced() -> None:
    code_lines = [f"call_{i}(a, b, c, d)" for i in range(200)]  # 800 words > 3 x 100
    code = "````\n" + "\n".join(code_lines) + "\n````"
    chunks = chunk_sections([Section("S", 1, code)], max_words=100, overlap_words=10)
    assert len(chunks) == 9  # 98 words of code per chunk, plus the two fence lines
    recovered: list[str] = []
    for chunk in chunks:
        lines = chunk.text.split("\n")
        assert lines[0] == "````" and lines[-1] == "````"
        assert count_words(chunk.text) <= 100
        recovered.extend(lines[1:-1])
    assert recovered == code_lines  # whole lines, in order, none lost or repeated


def test_cjk_text_is_counted_per_character() -> None:
    text = "東京は日本の首都です。" * 40  # 440 characters, no spaces
    chunks = chunk_sections([Section("S", 1, text)], max_words=100, overlap_words=0)
    assert len(chunks) >= 5
    assert all(count_words(c.text) <= 100 for c in chunks)
    assert "".join(c.text for c in chunks) == text


def test_list_paragraph_is_split_on_lines() -> None:
    items = [f"- item {i} " + " ".join(["word"] * 8) for i in range(30)]  # 30 lines of 11 words
    chunks = chunk_sections([Section("S", 1, "\n".join(items))], max_words=50, overlap_words=0)
    assert all(count_words(c.text) <= 50 for c in chunks)
    assert all(line.startswith("- item") for c in chunks for line in c.text.split("\n"))
    assert "\n".join(c.text for c in chunks) == "\n".join(items)


@pytest.mark.parametrize(("max_words", "overlap"), [(0, 0), (10, 10), (10, -1)])
def test_bad_parameters(max_words: int, overlap: int) -> None:
    with pytest.raises(ValueError):
        chunk_sections([Section("S", 1, "x")], max_words=max_words, overlap_words=overlap)
