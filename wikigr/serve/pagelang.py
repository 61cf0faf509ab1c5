"""The page's language: which of its languages a request gets (the switch's cookie, else
``Accept-Language``), its string tables (static/i18n/LANG.json), and the pages filled in it —
index.html, and the sign-in page that the guard serves before the token (so both are drawn in the
reader's language from the first paint)."""

from __future__ import annotations

import html
import json
import re
from typing import Any

from starlette.requests import HTTPConnection

from wikigr.serve.http import STATIC

LANGUAGES = ("en", "ru")  # the page's languages (static/i18n/LANG.json); the first is the default
LANG_COOKIE = "wikigr_lang"  # set by the page's switch; wins over Accept-Language
MAX_ACCEPT_LANGUAGE = 256  # characters of the header read: it is untrusted
PAGE_HEADERS = {"cache-control": "no-cache", "vary": "Accept-Language, Cookie"}
_RANGE = re.compile(r"([A-Za-z]{1,8})(?:-[A-Za-z0-9]{1,8})*|\*")  # RFC 4647, 2.1
_WEIGHT = re.compile(r"[qQ]=(0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?)")  # RFC 9110, 12.4.2
_PLACEHOLDER = re.compile(r"\{\{([a-z_.]+)\}\}")


def accepted_language(header: str | None) -> str:
    """The page's language for an ``Accept-Language`` header (RFC 9110, 12.5.4): of
    :data:`LANGUAGES`, the one of highest weight (the first named on a tie), ``*`` standing for
    every language the header does not name, weight 0 for none. An item that is not
    ``range[;q=weight]`` is skipped, and only the first :data:`MAX_ACCEPT_LANGUAGE` characters
    are read. When nothing fits: English."""
    weights: dict[str, tuple[float, int]] = {}  # language: its weight, where it was named
    named: set[str] = set()
    anything: tuple[float, int] | None = None
    for order, item in enumerate((header or "")[:MAX_ACCEPT_LANGUAGE].split(",")):
        tag, *params = (part.strip() for part in item.split(";"))
        found = _RANGE.fullmatch(tag)
        weight = _WEIGHT.fullmatch(params[0]) if len(params) == 1 else None
        if found is None or (params and weight is None):
            continue
        q = float(weight[1]) if weight else 1.0
        if tag == "*":
            anything = anything or (q, order)
            continue
        lang = found[1].lower()
        named.add(lang)
        if lang in LANGUAGES and q > weights.get(lang, (-1.0, 0))[0]:
            weights[lang] = (q, order)
    if anything is not None:
        weights.update({lang: anything for lang in LANGUAGES if lang not in named})
    ranked = sorted((-q, order, LANGUAGES.index(lang)) for lang, (q, order) in weights.items() if q > 0)
    return LANGUAGES[ranked[0][2]] if ranked else LANGUAGES[0]


def page_language(request: HTTPConnection) -> str:
    """The language the page is served in: the switch's choice (a cookie), else the browser's."""
    chosen = request.cookies.get(LANG_COOKIE)
    if chosen in LANGUAGES:
        return str(chosen)
    return accepted_language(request.headers.get("accept-language"))


def strings(lang: str) -> dict[str, Any]:
    """The page's string table in ``lang`` (one of :data:`LANGUAGES`): key → text, or a plural's
    texts by CLDR category."""
    table: dict[str, Any] = json.loads((STATIC / "i18n" / f"{lang}.json").read_text("utf-8"))
    return table


def index_page(lang: str) -> str:
    """index.html in ``lang``: each ``{{key}}`` its text, ``{{lang}}`` the language and
    ``{{strings}}`` the table for app.js (JSON in a data block, ``<`` escaped)."""
    table = strings(lang)
    inline = json.dumps(table, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e")
    return _filled("index.html", table, {"lang": lang, "strings": inline.replace("&", "\\u0026")})


def login_page(lang: str) -> str:
    """login.html in ``lang`` (the sign-in page, served before the token): each ``{{key}}`` its
    text, with `code` in the table shown as code."""
    table = strings(lang)

    def coded(key: str) -> str:
        parts = html.escape(table[key]).split("`")
        return "".join(f"<code>{part}</code>" if i % 2 else part for i, part in enumerate(parts))

    return _filled(
        "login.html",
        {k: coded(k) for k in table if k.startswith(("login.", "lang."))},
        {"lang": lang},
        raw=True,
    )


def _filled(page: str, texts: dict[str, Any], own: dict[str, str], raw: bool = False) -> str:
    def fill(match: re.Match[str]) -> str:
        key = match[1]
        if key in own:
            return own[key]
        return str(texts[key]) if raw else html.escape(texts[key])

    return _PLACEHOLDER.sub(fill, (STATIC / page).read_text("utf-8"))
