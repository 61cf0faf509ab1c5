"""The format seam: a document format is one registered Format, and parse dispatch, the fetch's
types and Accept header, and a folder's walk all follow the registry (wikigr/sources/formats)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.httpserver import LocalServer
from wikigr.agent import query_pack
from wikigr.build import build_pack
from wikigr.documents import Document, FetchResult, Section
from wikigr.errors import SourceError, UsageError
from wikigr.pack.store import Store
from wikigr.sources import formats
from wikigr.sources.formats import Format
from wikigr.sources.parse import parse

RECIPE_TYPE = "text/x-recipe"

LENTIL_SOUP = """Recipe: Lentil soup
[Ingredients]
Red lentils, one onion, two carrots, ground cumin and a litre of vegetable stock.
[Method]
Soften the onion in olive oil, add the carrots and the lentils, cover with the stock and simmer
for twenty-five minutes, until the lentils fall apart.
"""

FLATBREAD = """Recipe: Flatbread
[Ingredients]
Flour, yoghurt, a pinch of salt and baking powder.
[Method]
Knead a soft dough, rest it for ten minutes, roll it thin and cook it in a dry pan.
"""


def parse_recipe(content: bytes, charset: str | None, url: str, media: str) -> Document:
    """A recipe card: ``Recipe: title``, then ``[Heading]`` lines over their text."""
    lines = content.decode(charset or "utf-8").splitlines()
    if not lines or not lines[0].startswith("Recipe: "):
        raise SourceError("not a recipe card")
    sections: list[Section] = []
    heading, body = "", []
    for line in [*lines[1:], "[]"]:
        if line.startswith("[") and line.endswith("]"):
            if heading or body:
                sections.append(Section(heading, 1 if heading else 0, " ".join(body)))
            heading, body = line[1:-1], []
        elif line.strip():
            body.append(line.strip())
    title = lines[0].removeprefix("Recipe: ")
    return Document(url=url, title=title, sections=sections, links=[], content_type=media)


RECIPE = Format(
    name="recipe",
    media_types=(RECIPE_TYPE,),
    parse=parse_recipe,
    extensions={".recipe": RECIPE_TYPE},
    walked=(".recipe",),
    accept=f"{RECIPE_TYPE};q=0.7",
    magic=(b"Recipe: ",),
)


@pytest.fixture
def recipe_format() -> Iterator[Format]:
    formats.register(RECIPE)
    try:
        yield RECIPE
    finally:
        formats.unregister(RECIPE.name)


def test_the_built_in_formats_give_the_accept_header_and_the_walked_extensions() -> None:
    assert [f.name for f in formats.registered()] == ["html", "markdown", "text", "pdf"]
    assert formats.accept_header() == (
        "text/html,application/xhtml+xml,text/markdown;q=0.9,text/plain;q=0.8,application/pdf;q=0.8,*/*;q=0.1"
    )
    assert formats.walked_extensions() == (".html", ".htm", ".md", ".markdown", ".txt", ".pdf")


def test_a_format_clashing_with_another_is_refused() -> None:
    clash = Format(
        name="notes", media_types=("text/x-notes",), parse=parse_recipe, extensions={".md": "text/x-notes"}
    )
    with pytest.raises(ValueError, match=r"\.md is already 'markdown'"):
        formats.register(clash)
    with pytest.raises(ValueError, match="no format 'notes'"):
        formats.unregister("notes")
    assert formats.format_for("text/x-notes") is None


def test_a_registered_format_is_parsed_fetched_walked_and_built_into_a_pack(
    recipe_format: Format, tmp_path: Path, server: LocalServer
) -> None:
    folder = tmp_path / "cards"
    folder.mkdir()
    (folder / "lentil-soup.recipe").write_text(LENTIL_SOUP, encoding="utf-8")
    card_url = server.add("/cards/flatbread", FLATBREAD, content_type=RECIPE_TYPE)

    # Parse dispatch: by the declared type, and by the magic of a body that has none.
    fetched = FetchResult(card_url, card_url, FLATBREAD.encode(), "", None, "2024-01-01T00:00:00Z")
    assert parse(fetched).title == "Flatbread"

    out = tmp_path / "recipes"
    report = build_pack("recipes", [folder.as_uri(), card_url], out=out)
    assert report.failed == []
    assert server.requests[0].headers["accept"].endswith(f",{RECIPE_TYPE};q=0.7,*/*;q=0.1")
    with Store.open(out / "pack.db") as store:
        articles = store.rows("MATCH (a:Article) RETURN a.title, a.content_type ORDER BY a.title")
        sections = store.rows("MATCH (s:Section) RETURN s.title ORDER BY s.title")
    assert articles == [["Flatbread", RECIPE_TYPE], ["Lentil soup", RECIPE_TYPE]]
    assert sorted({s[0] for s in sections}) == ["Ingredients", "Method"]
    result = query_pack(out, "How long do the lentils simmer?", top_k=2)
    assert (result.sources[0].title, result.sources[0].section) == ("Lentil soup", "Method")
    assert "twenty-five minutes" in result.answer


def test_without_the_format_its_files_are_not_documents(tmp_path: Path) -> None:
    folder = tmp_path / "cards"
    folder.mkdir()
    (folder / "lentil-soup.recipe").write_text(LENTIL_SOUP, encoding="utf-8")
    with pytest.raises(
        UsageError, match=r"holds no document files \(\.html, \.htm, \.md, \.markdown, \.txt, \.pdf\)"
    ):
        build_pack("recipes", [folder.as_uri()], out=tmp_path / "recipes")
    card = FetchResult("file:///x", "file:///x", LENTIL_SOUP.encode(), RECIPE_TYPE, None, "")
    with pytest.raises(SourceError, match=f"unsupported content type {RECIPE_TYPE}"):
        parse(card)
