"""Turn fetched bytes into text: declared charset, <meta> prescan, BOM, UTF-8, then detection."""

from __future__ import annotations

import codecs
import re

from wikigr.errors import SourceError

__all__ = ["binary_reason", "decode_bytes", "decode_text", "meta_charset"]

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

_META_CHARSET_RE = re.compile(rb"""<meta\s[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
_XML_ENCODING_RE = re.compile(rb"""^\s*<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9_.:-]+)""", re.I)
_PRESCAN_BYTES = 4096

# Labels whose WHATWG decoder is a superset: decode with the superset, as browsers do.
_SUPERSETS: dict[str, str] = {
    "ascii": "cp1252",
    "iso8859-1": "cp1252",
    "iso8859-9": "cp1254",
    "shift_jis": "cp932",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "euc_kr": "cp949",
    "big5": "big5hkscs",
}
_EXTRA_ALIASES: dict[str, str] = {
    "x-sjis": "cp932",
    "windows-31j": "cp932",
    "ms_kanji": "cp932",
    "x-user-defined": "cp1252",
}

# Single-byte encodings for Latin script. When detection lands on one of these for text that is
# not UTF-8, windows-1252 (what browsers assume for Western pages) is the better bet: short
# Western European text is routinely misdetected as a Baltic or Central European code page.
_LATIN_FAMILY = frozenset(
    {
        "cp1250",
        "cp1252",
        "cp1254",
        "cp1257",
        "cp1258",
        "cp437",
        "cp775",
        "cp850",
        "cp852",
        "cp857",
        "cp858",
        "cp860",
        "cp861",
        "cp863",
        "cp865",
        "iso8859-1",
        "iso8859-2",
        "iso8859-3",
        "iso8859-4",
        "iso8859-9",
        "iso8859-10",
        "iso8859-13",
        "iso8859-14",
        "iso8859-15",
        "iso8859-16",
        "latin-1",
        "mac-roman",
        "mac-latin2",
        "mac-iceland",
        "mac-turkish",
    }
)

_SINGLE_BYTE_PREFIXES = ("cp", "iso8859", "mac-", "koi8", "latin", "windows", "tis")


def _codec_name(label: str) -> str | None:
    """Python's codec for a charset label (WHATWG supersets applied); None when unknown."""
    label = label.strip().strip("'\"").lower()
    if not label:
        return None
    if label in _EXTRA_ALIASES:
        return _EXTRA_ALIASES[label]
    try:
        name = codecs.lookup(label).name
    except LookupError:
        return None
    return _SUPERSETS.get(name, name)


def _is_single_byte(codec: str) -> bool:
    return codec.startswith(_SINGLE_BYTE_PREFIXES) and codec not in ("cp932", "cp949", "cp950")


def meta_charset(content: bytes) -> str | None:
    """The charset named by a ``<meta charset>``, ``<meta http-equiv>`` or XML declaration in
    the first 4 KiB of an HTML document (the label as written), or None."""
    head = content[:_PRESCAN_BYTES]
    m = _XML_ENCODING_RE.search(head) or _META_CHARSET_RE.search(head)
    if m is None:
        return None
    return m.group(1).decode("ascii", errors="ignore") or None


def _bom(content: bytes) -> tuple[str, int] | None:
    for bom, encoding in _BOMS:
        if content.startswith(bom):
            return encoding, len(bom)
    return None


def _has_non_ascii(content: bytes) -> bool:
    return any(b >= 0x80 for b in content)


def _try_decode(content: bytes, codec: str) -> str | None:
    try:
        return content.decode(codec)
    except (UnicodeDecodeError, LookupError):
        return None


def _detect(content: bytes) -> str:
    """Decode bytes that are not UTF-8 using charset-normalizer, biased to windows-1252."""
    from charset_normalizer import from_bytes

    best = from_bytes(content).best()
    if best is not None:
        name = _codec_name(best.encoding) or best.encoding
        if name in _LATIN_FAMILY:
            text = _try_decode(content, "cp1252")
            if text is not None:
                return text
        text = _try_decode(content, name)
        if text is not None:
            return text
        return str(best)
    text = _try_decode(content, "cp1252")
    if text is not None:
        return text
    return content.decode("utf-8", errors="replace")


def decode_bytes(content: bytes, declared: str | None = None, *, html: bool = False) -> str:
    """Decode a document's bytes to text.

    Order: a byte-order mark (it is decisive, as in browsers); the declared charset (HTTP
    header); for HTML the ``<meta>`` charset in the first 4 KiB; UTF-8; then detection with
    charset-normalizer (biased to windows-1252 for Latin text). A declared or meta charset that
    cannot decode the bytes is skipped; so is a declared single-byte charset when the bytes are
    valid UTF-8 with non-ASCII characters (a common server misconfiguration). ISO-8859-1 and
    ASCII are decoded as windows-1252, Shift_JIS as windows-31J, as browsers do.
    NUL characters are removed.
    """
    bom = _bom(content)
    if bom is not None:
        encoding, skip = bom
        return content[skip:].decode(encoding, errors="replace").replace("\x00", "")

    candidates: list[str] = []
    if declared:
        codec = _codec_name(declared)
        if codec is not None:
            candidates.append(codec)
    if html:
        label = meta_charset(content)
        if label is not None:
            codec = _codec_name(label)
            if codec is not None:
                if codec.startswith(("utf-16", "utf-32")):
                    codec = "utf-8"  # a document that can say so in ASCII is not UTF-16
                candidates.append(codec)

    utf8 = _try_decode(content, "utf-8")
    for codec in candidates:
        if utf8 is not None and _is_single_byte(codec) and _has_non_ascii(content):
            return utf8.replace("\x00", "")
        text = _try_decode(content, codec)
        if text is None and codec == "cp1252":
            text = _try_decode(content, "iso8859-1")
        if text is not None:
            return text.replace("\x00", "")
    if utf8 is not None:
        return utf8.replace("\x00", "")
    return _detect(content).replace("\x00", "")


# Binary content served under a text type (random bytes as text/html, a gzip body without its
# Content-Encoding), judged as git and file(1) judge it: git calls a file binary when its first
# 8000 bytes hold a NUL; file(1) when it holds bytes no text has (control characters other than
# tab, line and page breaks, escape). Decoding turns such bytes into control characters, or into
# U+FFFD where they are not valid in the encoding, so their share of the decoded text is the
# test: above 2% it is data (random bytes give 10-50%; real text next to none).
_NUL_WINDOW = 8000
_SAMPLE_CHARS = 65536
MAX_CONTROL_SHARE = 0.02
_CONTROL_RE = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f-\x9f\ufffd]")


def binary_reason(content: bytes, text: str = "") -> str | None:
    """Why ``content`` (decoded as ``text``, when given) is binary data rather than text, or None."""
    utf16 = content.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
    if not utf16 and b"\x00" in content[:_NUL_WINDOW]:
        return "binary content, not text (NUL bytes)"
    sample = text[:_SAMPLE_CHARS]
    odd = len(_CONTROL_RE.findall(sample))
    if sample and odd > MAX_CONTROL_SHARE * len(sample):
        share = 100 * odd / len(sample)
        return f"binary content, not text ({share:.0f}% control or undecodable characters)"
    return None


def decode_text(content: bytes, declared: str | None = None, *, html: bool = False) -> str:
    """:func:`decode_bytes` for a document: raises SourceError for binary data (see
    :func:`binary_reason`; the NUL test runs before decoding)."""
    reason = binary_reason(content)
    if reason is None:
        text = decode_bytes(content, declared, html=html)
        reason = binary_reason(content, text)
    if reason is not None:
        raise SourceError(reason)
    return text
