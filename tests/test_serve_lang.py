"""The page of ``wikigr serve`` in Russian and English: the language chosen from the browser's
``Accept-Language`` (or the page's switch, a cookie) on the server, the string tables, and the
page and its script reading every word from them. Real uvicorn on a loopback port, httpx.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any

import httpx
import pytest

from tests.test_serve import TOKEN, running
from wikigr.serve.app import create_app
from wikigr.serve.http import STATIC
from wikigr.serve.pagelang import LANG_COOKIE, LANGUAGES, accepted_language

TABLES = {lang: json.loads((STATIC / "i18n" / f"{lang}.json").read_text("utf-8")) for lang in LANGUAGES}
PLURALS = {"en": {"one", "other"}, "ru": {"one", "few", "many", "other"}}  # CLDR's categories
CYRILLIC = re.compile("[\u0400-\u04ff]")


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with running(create_app([])) as served:
        yield served


# -- the choice of language ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "lang"),
    [
        ("ru", "ru"),
        ("RU", "ru"),
        ("ru-RU", "ru"),
        ("ru-RU,ru;q=0.9,en-US;q=0.8,en;q=0.7", "ru"),  # what a Russian Chrome sends
        ("en-US,en;q=0.9,ru;q=0.8", "en"),
        ("de-DE,de;q=0.9,ru;q=0.5", "ru"),  # the first language the page has
        ("en;q=0.1, ru;q=0.2", "ru"),  # the higher weight, not the first
        ("ru ; q=0.8 , en ; q=0.3", "ru"),  # spaces around the parts
        ("en;q=0.5, ru;q=0.5", "en"),  # a tie: the order of the header
        ("ru;q=0.500, en;q=0.499", "ru"),
        ("ru;q=0", "en"),  # not acceptable
        ("ru;q=0, en;q=0", "en"),  # nothing acceptable: the default
        ("*", "en"),
        ("ru;q=0.5, *;q=0.9", "en"),  # any other language is preferred: the default
        ("en;q=0, *", "ru"),  # not English, anything else
        ("de, fr-CH, ja", "en"),  # none of the page's
        (None, "en"),
        ("", "en"),
        ("garbage;;;", "en"),
        ("ru;q=2", "en"),  # a weight over 1 is not one: the item is skipped
        ("ru;q=0.1234", "en"),  # at most three decimals
        ("ru;q=abc, en", "en"),
        ("ru;level=1", "en"),  # a parameter Accept-Language does not have
        ("ru_RU", "en"),  # not a language tag
        ("русский", "en"),
        ("ru-", "en"),
        ("x" * 100_000 + ",ru", "en"),  # read up to its cap only
        ("fr," * 1000 + "ru", "en"),
        ("ru\x00", "en"),
    ],
)
def test_accept_language(header: str | None, lang: str) -> None:
    assert accepted_language(header) == lang


def _page(url: str, **headers: str) -> httpx.Response:
    response = httpx.get(url + "/", headers=headers)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    return response


def test_accept_language_ru_serves_the_russian_page(url: str) -> None:
    page = _page(url, **{"Accept-Language": "ru-RU,ru;q=0.9,en;q=0.8"})
    assert page.text.startswith('<!doctype html>\n<html lang="ru">')
    for key in ("form.ask", "form.question_placeholder", "answer.heading", "tabs.trace", "page.skip"):
        assert TABLES["ru"][key] in page.text and TABLES["en"][key] not in page.text
    strings = json.loads(_inline_strings(page.text))  # the table app.js reads, in the page
    assert strings == TABLES["ru"]
    # the headers the page had, and one more: the page differs by the language asked for
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY" and page.headers["cache-control"] == "no-cache"
    assert {v.strip().lower() for v in page.headers["vary"].split(",")} >= {"accept-language", "cookie"}


@pytest.mark.parametrize("header", [None, "en", "en-GB", "de", "*", "garbage;;;", "ru;q=7", "x" * 5000])
def test_english_for_english_absent_or_garbage(url: str, header: str | None) -> None:
    page = _page(url, **({"Accept-Language": header} if header is not None else {}))
    assert page.text.startswith('<!doctype html>\n<html lang="en">')
    assert TABLES["en"]["form.ask"] in page.text
    assert not CYRILLIC.search(" ".join(_translated_text(page.text)))
    assert json.loads(_inline_strings(page.text)) == TABLES["en"]


def test_the_switch_cookie_wins_over_the_header(url: str) -> None:
    page = _page(url, **{"Accept-Language": "en", "Cookie": f"{LANG_COOKIE}=ru"})
    assert '<html lang="ru">' in page.text
    page = _page(url, **{"Accept-Language": "ru", "Cookie": f"other=1; {LANG_COOKIE}=en"})
    assert '<html lang="en">' in page.text
    page = _page(url, **{"Accept-Language": "ru", "Cookie": f"{LANG_COOKIE}=xx"})  # not a language: ignored
    assert '<html lang="ru">' in page.text


def test_no_english_is_left_in_the_russian_page(url: str) -> None:
    page = _page(url, **{"Accept-Language": "ru"}).text
    english = {v for v in TABLES["en"].values() if isinstance(v, str)} - {
        v for v in TABLES["ru"].values() if isinstance(v, str)
    }
    words = _translated_text(page)
    assert words  # the page's text, its placeholders and labels
    for text in words:
        assert text not in english, text
        assert CYRILLIC.search(text) or text in {"wikigr", "5"}, text


def test_the_sign_in_page_words(url: str) -> None:
    """The sign-in page, served before the token, comes in the reader's language from its first
    paint: its words are the table's, by key."""
    with running(create_app([], token=TOKEN, loopback=False)) as guarded:
        for lang, headers in (
            ("ru", {"Accept-Language": "ru-RU,ru;q=0.9"}),
            ("en", {"Accept-Language": "ru", "Cookie": f"{LANG_COOKIE}=en"}),  # the switch wins
            ("en", {}),
        ):
            login = httpx.get(guarded + "/", headers=headers)
            assert login.status_code == 401 and login.headers["content-language"] == lang
            assert "accept-language" in login.headers["vary"].lower()
            assert f'<html lang="{lang}">' in login.text and "{{" not in login.text
            found = _keyed_text(login.text)
            assert found and all(TABLES[lang][key] == text for key, text in found.items()), found
            assert {k for k in TABLES[lang] if k.startswith(("login.", "lang."))} == set(found)
        assert "<code>wikigr serve --token</code>" in httpx.get(guarded + "/").text


# -- the tables and the code that reads them ---------------------------------------------------


def test_the_tables_have_the_same_keys_and_placeholders() -> None:
    en, ru = TABLES["en"], TABLES["ru"]
    assert list(en) == list(ru)
    for key in en:
        assert re.fullmatch(r"[a-z]+(\.[a-z_]+)+", key), key
        assert type(en[key]) is type(ru[key]), key
        forms = {lang: TABLES[lang][key] for lang in LANGUAGES}
        for lang, value in forms.items():
            if isinstance(value, dict):  # a plural: the language's categories, each with {n}
                assert set(value) == PLURALS[lang], (lang, key)
                assert all("{n}" in form for form in value.values()), (lang, key)
        names = {
            lang: {frozenset(re.findall(r"\{(\w+)\}", f)) for f in _forms(value)}
            for lang, value in forms.items()
        }
        assert names["en"] == names["ru"] and len(names["en"]) == 1, key  # the same {names}


def test_the_script_uses_only_keys_of_the_tables_and_every_key_is_used() -> None:
    script = page_scripts()
    calls = re.findall(r"(?<!function )(?<![\w.])(?:t|plural)\(\s*([^,)]*)", script)
    assert calls and all(re.fullmatch(r'"[a-z_.]+"', c) for c in calls), calls  # literal keys only
    used = {c.strip('"') for c in calls}
    page = (STATIC / "index.html").read_text("utf-8")
    in_page = set(re.findall(r"\{\{([a-z_.]+)\}\}", page)) - {"lang", "strings"}  # the server's own
    in_login = set(_keyed_text((STATIC / "login.html").read_text("utf-8")))
    for table in TABLES.values():
        assert used <= set(table), used - set(table)
        assert in_page <= set(table), in_page - set(table)
        assert all(isinstance(table[k], str) for k in in_page | in_login)
        assert not set(table) - used - in_page - in_login, set(table) - used - in_page - in_login


def test_the_script_writes_no_english_of_its_own() -> None:
    """Every word the script puts on the page comes from a table: no literal text in what it
    shows (text, labels, titles, placeholders, the status lines, errors)."""
    script = page_scripts()
    shown = re.findall(
        r'(?:\btext:|"aria-label":|\btitle:|\bplaceholder:|\b(?:s|\w+S)tatus\(|new Error\()'
        r'\s*("[^"]*"|`[^`]*`)',
        script,
    )
    assert shown  # the check finds the places it reads
    words = [re.sub(r"\$\{[^}]*\}", "", literal[1:-1]) for literal in shown]
    assert [w for w in words if re.search(r"[A-Za-z]{2,}", w) and w not in {"HTTP "}] == []


# -- helpers ---------------------------------------------------------------------------------


def page_scripts() -> str:
    """The page's scripts: app.js and each view's (build.js, compare.js, settings.js...)."""
    return "\n".join(p.read_text("utf-8") for p in sorted(STATIC.glob("*.js")) if p.name != "login.js")


def _forms(value: Any) -> list[str]:
    return list(value.values()) if isinstance(value, dict) else [value]


def _inline_strings(page: str) -> str:
    found = re.search(r'<script type="application/json" id="strings">(.*?)</script>', page, re.S)
    assert found, "the page holds no string table"
    return found[1]


class _Text(HTMLParser):
    """The words of a page a reader sees or hears: text (not in script or style), placeholders,
    labels and titles, except in an element marked as another language than the page's (the
    switch's names); and, for the page the server does not render, each ``data-i18n`` key's text
    (``code`` in backticks, as the table writes it) and each ``data-i18n-ATTR`` key's attribute."""

    VOID = frozenset({"meta", "link", "input", "br", "img"})

    def __init__(self) -> None:
        super().__init__()
        self.lang: str | None = None
        self.words: list[str] = []
        self.keyed: dict[str, str] = {}
        self._stack: list[tuple[str, bool, str | None]] = []  # tag, another language, data-i18n

    def _hidden(self) -> bool:
        return any(other for _, other, _ in self._stack)

    def _key(self) -> str | None:
        return next((key for _, _, key in reversed(self._stack) if key), None)

    def _keyed(self, text: str) -> None:
        key = self._key()
        if key:
            self.keyed[key] = self.keyed.get(key, "") + text

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        if tag == "html":
            self.lang = found.get("lang")
        other = tag in ("script", "style") or found.get("lang", self.lang) != self.lang
        for name in ("placeholder", "aria-label", "title", "alt"):
            if found.get(name) and not (other or self._hidden()):
                self.words.append(found[name].strip())
        for name, key in found.items():
            if name.startswith("data-i18n-"):
                self.keyed[key] = found[name.removeprefix("data-i18n-")]
        if tag == "code":
            self._keyed("`")
        if tag not in self.VOID:
            self._stack.append((tag, other, found.get("data-i18n")))

    def handle_endtag(self, tag: str) -> None:
        while self._stack:
            if self._stack.pop()[0] == tag:
                break
        if tag == "code":
            self._keyed("`")

    def handle_data(self, data: str) -> None:
        if self._hidden():
            return
        self._keyed(data)
        text = " ".join(data.split())
        if text:
            self.words.append(text)


def _translated_text(page: str) -> list[str]:
    parser = _Text()
    parser.feed(page)
    return parser.words


def _keyed_text(page: str) -> dict[str, str]:
    """``data-i18n`` key → the element's text (or attribute) in the page as written."""
    parser = _Text()
    parser.feed(page)
    return {key: " ".join(text.split()) for key, text in parser.keyed.items()}
