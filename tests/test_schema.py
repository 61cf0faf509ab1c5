"""Strict loading of JSON into dataclasses (manifest, options)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import pytest

from wikigr import schema


@dataclass
class Inner:
    n: int
    ratio: float = 1.0


@dataclass
class Outer:
    name: str
    kind: Literal["a", "b"]
    inner: Inner
    items: list[Inner] = field(default_factory=list)
    note: str | None = None
    flags: dict[str, bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("name must not be empty")


def test_loads_nested_values() -> None:
    data = {
        "name": "x",
        "kind": "b",
        "inner": {"n": 2, "ratio": 3},
        "items": [{"n": 1}],
        "flags": {"f": True},
    }
    loaded = schema.load(Outer, data)
    assert loaded == Outer("x", "b", Inner(2, 3.0), [Inner(1)], None, {"f": True})
    assert isinstance(loaded.inner.ratio, float)
    assert schema.dump(loaded)["items"] == [{"n": 1, "ratio": 1.0}]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"name": "x", "kind": "a", "inner": {"n": 1}, "typo": 1}, "typo: unknown field"),
        ({"name": "x", "kind": "a"}, "inner: missing"),
        ({"name": "x", "kind": "c", "inner": {"n": 1}}, "kind: must be one of 'a', 'b'"),
        ({"name": "x", "kind": "a", "inner": {"n": True}}, "inner.n: must be an integer"),
        ({"name": "x", "kind": "a", "inner": {"n": "1"}}, "inner.n: must be an integer"),
        ({"name": "x", "kind": "a", "inner": {"n": 1, "ratio": float("inf")}}, "ratio: must be a finite"),
        ({"name": "x", "kind": "a", "inner": {"n": 1, "ratio": float("nan")}}, "ratio: must be a finite"),
        (
            {"name": "x", "kind": "a", "inner": {"n": 1}, "items": [{"n": 1}, {"m": 2}]},
            "items[1].m: unknown field",
        ),
        ({"name": "x", "kind": "a", "inner": {"n": 1}, "note": 5}, "note"),
        ({"name": "", "kind": "a", "inner": {"n": 1}}, "name must not be empty"),
        ([1, 2], "must be an object"),
    ],
)
def test_rejects_what_does_not_fit(data: object, message: str) -> None:
    with pytest.raises(schema.SchemaError, match=message.replace("[", r"\[").replace("]", r"\]")):
        schema.load(Outer, data)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("{oops", "not JSON (Expecting property name enclosed in double quotes at character 1)"),
        ('["open', "not JSON (Unterminated string starting at character 1)"),  # json's message ends "at"
        (b'{"a": "\xff"}', "not UTF-8 (invalid start byte at byte 7)"),
        ("1" * 5000, "a number too long"),
        ("[" * 100_000, "nested too deeply"),
    ],
)
def test_untrusted_json_is_refused_in_one_line(text: str | bytes, said: str) -> None:
    """json.loads refuses in four ways, a plain ValueError and a RecursionError among them: each
    is one JSONError saying which."""
    with pytest.raises(schema.JSONError) as caught:
        schema.parse_json(text)
    assert str(caught.value) == said
    assert schema.parse_json('{"a": [1, 2]}') == {"a": [1, 2]}


def test_json_lines_end_at_line_ends_only() -> None:
    assert schema.json_lines('{"a": "x\u2028y\u0085z"}\r\n{"b": 1}\r{"c": 2}\n') == [
        '{"a": "x\u2028y\u0085z"}',
        '{"b": 1}',
        '{"c": 2}',
        "",
    ]


def test_a_lone_surrogate_is_no_unicode_text() -> None:
    assert schema.is_unicode({"q": ["caf\u00e9", 3]}) and schema.is_unicode("x")
    assert not schema.is_unicode({"q": ["\udcff"]}) and not schema.is_unicode("\ud800")
