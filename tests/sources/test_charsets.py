"""Decoding: pages in legacy encodings, served by the real local server, come out right."""

from __future__ import annotations

import pytest

from tests.httpserver import LocalServer
from wikigr.documents import Document, FetchResult
from wikigr.sources.decode import decode_bytes, meta_charset
from wikigr.sources.fetch import FetchOptions, fetch_all
from wikigr.sources.parse import parse

FRENCH = "Le café “crème” — naïve façade, déjà vu. Ça coûte 5 € à l’hôtel de la gare."
GERMAN = "Über die Straße gehen wir: „schön“ – oder nicht? Größe ist relativ, sagt Jürgen."
JAPANESE = "日本語のテキストです。これはシフトJISで書かれた文章です。東京は日本の首都です。"


def fetch_and_parse(server: LocalServer, path: str, body: bytes, content_type: str | None) -> Document:
    url = server.add(path, body, content_type=content_type)
    (result,) = fetch_all([url], FetchOptions(retries=0, timeout=60))
    assert result.ok, result.error
    return parse(result)


def page(text: str, head: str = "") -> str:
    return f"<html><head>{head}<title>T</title></head><body><main><p>{text}</p></main></body></html>"


def body_text(document: Document) -> str:
    return "\n".join(section.text for section in document.sections)


def test_iso_8859_1_declared_in_header(server: LocalServer) -> None:
    text = "Café crème brûlée, señor Müller. Ærø og Øresund."
    document = fetch_and_parse(
        server, "/latin1.html", page(text).encode("iso-8859-1"), "text/html; charset=ISO-8859-1"
    )
    assert body_text(document) == text


def test_charset_declared_only_in_meta(server: LocalServer) -> None:
    document = fetch_and_parse(
        server, "/meta.html", page(FRENCH, '<meta charset="windows-1252">').encode("cp1252"), "text/html"
    )
    assert body_text(document) == FRENCH


def test_charset_declared_in_http_equiv(server: LocalServer) -> None:
    head = '<meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1">'
    document = fetch_and_parse(server, "/equiv.html", page(GERMAN, head).encode("cp1252"), "text/html")
    assert body_text(document) == GERMAN


@pytest.mark.parametrize("where", ["header", "meta"])
def test_shift_jis(server: LocalServer, where: str) -> None:
    head = '<meta charset="Shift_JIS">' if where == "meta" else ""
    content_type = "text/html; charset=Shift_JIS" if where == "header" else "text/html"
    document = fetch_and_parse(
        server, f"/sjis-{where}.html", page(JAPANESE, head).encode("shift_jis"), content_type
    )
    assert body_text(document) == JAPANESE


def test_shift_jis_undeclared_is_detected() -> None:
    text = decode_bytes((JAPANESE * 3).encode("shift_jis"))
    assert text == JAPANESE * 3


@pytest.mark.parametrize("sample", [FRENCH, GERMAN, "Smart “quotes” and an em—dash… it’s café time."])
def test_windows_1252_undeclared(server: LocalServer, sample: str) -> None:
    document = fetch_and_parse(server, "/cp1252.html", page(sample).encode("cp1252"), "text/html")
    assert body_text(document) == sample


def test_wrong_declared_charset_falls_back(server: LocalServer) -> None:
    # The server claims UTF-8 but sends windows-1252 bytes.
    url = server.encoded("/liar.html", page(FRENCH), "cp1252", declared="utf-8")
    (result,) = fetch_all([url], FetchOptions(retries=0))
    assert result.charset == "utf-8"
    assert body_text(parse(result)) == FRENCH


def test_utf8_bytes_under_a_latin1_label_stay_utf8() -> None:
    assert decode_bytes(FRENCH.encode("utf-8"), "iso-8859-1", html=True) == FRENCH


def test_header_beats_meta() -> None:
    html = page(FRENCH, '<meta charset="utf-8">').encode("cp1252")
    assert FRENCH in decode_bytes(html, "windows-1252", html=True)


def test_byte_order_marks() -> None:
    assert decode_bytes("\ufeffhello wörld".encode("utf-16-le")) == "hello wörld"
    assert decode_bytes(b"\xef\xbb\xbfhello w\xc3\xb6rld", "iso-8859-1") == "hello wörld"


def test_markdown_and_text_with_declared_charset() -> None:
    result = FetchResult(
        url="http://127.0.0.1/notes.md",
        final_url="http://127.0.0.1/notes.md",
        content=f"# Notes\n\n{GERMAN}\n".encode("iso-8859-15", errors="replace"),
        content_type="text/markdown",
        charset="iso-8859-15",
        fetched_at="2024-01-01T00:00:00Z",
    )
    document = parse(result)
    assert document.title == "Notes"
    assert "Über die Straße" in document.sections[0].text


def test_meta_prescan() -> None:
    assert meta_charset(b'<html><head><meta charset="euc-jp">') == "euc-jp"
    assert meta_charset(b"<meta http-equiv=Content-Type content='text/html;charset=koi8-r'>") == "koi8-r"
    assert meta_charset(b'<?xml version="1.0" encoding="ISO-8859-2"?><html>') == "ISO-8859-2"
    assert meta_charset(b"<html><p>charset=utf-8 in prose</p>") is None
