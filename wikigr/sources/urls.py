"""Source lists: read urls.txt, validate and normalise sources and URLs (a folder's walk into its
document files is :mod:`wikigr.sources.folders`)."""

from __future__ import annotations

import os
import re
import stat
import string
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from wikigr.errors import UsageError, shown
from wikigr.home import expand_user

__all__ = [
    "UrlList",
    "file_url_to_path",
    "load_url_list",
    "normalize_source",
    "normalize_url",
    "read_url_list",
    "special_file",
    "validate_url",
]

_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_TRAILING_COMMENT_RE = re.compile(r"\s#.*$")
_DOMAIN_LIKE_RE = re.compile(r"^(localhost|[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+)(:\d+)?(/|$)")
_PERCENT_RE = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _normalize_percent(text: str) -> str:
    """RFC 3986 6.2.2.1-2: upper-case percent-escapes; decode the ones of unreserved characters."""

    def fix(m: re.Match[str]) -> str:
        char = chr(int(m.group(1), 16))
        return char if char in _UNRESERVED else "%" + m.group(1).upper()

    return _PERCENT_RE.sub(fix, text)


def remove_dot_segments(path: str) -> str:
    """RFC 3986 5.2.4 for an absolute path: ``/a/./b/../c`` -> ``/a/c`` (``..`` stops at the root)."""
    segments = path.split("/")
    out: list[str] = []
    for segment in segments[1:]:
        if segment == "..":
            if out:
                out.pop()
        elif segment != ".":
            out.append(segment)
    if segments[-1] in (".", ".."):
        out.append("")  # "/a/b/.." is the folder "/a/"
    return "/" + "/".join(out)


def normalize_url(url: str) -> str:
    """The identity of an http(s) or file URL: two spellings of one address give the same string.

    RFC 3986 section 6 normalisation: lower-case scheme and host, the scheme's default port
    dropped, percent-escapes upper-cased (and decoded for unreserved characters), dot segments
    removed, ``/`` for an empty path, the fragment dropped. File URLs become
    ``file:///absolute/path`` with their ``.`` and ``..`` resolved. Anything else (another scheme,
    a URL that does not parse) is returned without its fragment but otherwise unchanged.
    """
    try:
        parts = urlsplit(url.strip())
        scheme = parts.scheme.lower()
        if scheme == "file":
            if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
                return str(urlunsplit(parts._replace(fragment="")))
            return Path(remove_dot_segments(unquote(parts.path))).as_uri()
        if scheme not in _DEFAULT_PORTS:
            return str(urlunsplit(parts._replace(fragment="")))
        port = parts.port
        host = (parts.hostname or "").lower()
    except ValueError:
        return url.split("#", 1)[0]
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    netloc = host if port in (None, _DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    if "@" in parts.netloc:
        netloc = parts.netloc.rsplit("@", 1)[0] + "@" + netloc
    path = remove_dot_segments(_normalize_percent(parts.path or "/"))
    return str(urlunsplit((scheme, netloc, path, _normalize_percent(parts.query), "")))


def _short(s: str, limit: int = 80) -> str:
    """A value quoted for an error message, cut to ``limit`` characters."""
    return repr(shown(s, limit))


def _check_url(s: str) -> str:
    """Validate one http(s) or file URL and return its normal form; raise UsageError."""
    if not s:
        raise UsageError("empty URL")
    if any(ch.isspace() for ch in s) or any(ord(ch) < 32 or ord(ch) == 127 for ch in s):
        raise UsageError(f"URL contains whitespace or control characters: {_short(s)}")
    m = _SCHEME_RE.match(s)
    if m is None:
        raise UsageError(f"not a URL: {_short(s)}")
    scheme = m.group(1).lower()
    if scheme not in ("http", "https", "file"):
        raise UsageError(f"unsupported URL scheme {scheme!r}: {_short(s)}")
    try:
        parts = urlsplit(s)
        port = parts.port  # raises ValueError for a bad port
    except ValueError as exc:
        raise UsageError(f"malformed URL ({exc}): {_short(s)}") from None
    if scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise UsageError(f"file URL with a remote host: {_short(s)}")
        if not parts.path.startswith("/"):
            raise UsageError(f"file URL without an absolute path: {_short(s)}")
        path = Path(unquote(parts.path))
        return path.as_uri()
    if not parts.hostname:
        raise UsageError(f"URL has no host: {_short(s)}")
    if parts.username is not None or parts.password is not None:
        raise UsageError(f"URL with credentials is not supported: {_short(s)}")
    host = parts.hostname.lower()
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    netloc = host if port is None else f"{host}:{port}"
    return str(urlunsplit((scheme, netloc, parts.path or "/", parts.query, "")))


def special_file(mode: int) -> str | None:
    """What a file of ``mode`` (``st_mode``) is when it is neither a regular file nor a folder:
    "a FIFO", "a device", "a socket"; None for a regular file or a folder. Reading such a file
    may block forever (a FIFO nobody writes to) or never end (/dev/zero): it is never a source,
    as rsync skips a non-regular file."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def validate_url(url: str) -> str:
    """Validate an http(s) or file URL and return it normalised.

    Normal form: lower-case scheme and host, ``/`` for an empty path, fragment dropped; file URLs
    as ``file:///absolute/path`` with percent-encoding. Raises UsageError for anything else.
    """
    return _check_url(url.strip())


def _resolve_source(s: str, base: Path | None) -> tuple[str, bool]:
    """:func:`normalize_source`'s decision: the normalised URL, and whether ``s`` was a local path."""
    text = s.strip()
    if not text:
        raise UsageError("empty source")
    m = _SCHEME_RE.match(text)
    # "C:" style drive letters are not URL schemes; everything else with a scheme is a URL.
    if m is not None and not (len(m.group(1)) == 1 and os.name == "nt"):
        return _check_url(text), False
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in text):
        raise UsageError(f"path contains control characters: {_short(text)}")
    path = expand_user(Path(text))
    if base is not None and not path.is_absolute():
        path = base / path
    try:
        exists = path.exists()
    except (OSError, ValueError):  # a name too long for the file system, an embedded NUL
        exists = False
    if not exists:
        hint = ""
        if _DOMAIN_LIKE_RE.match(text) and not text.startswith(("./", "../")):
            hint = f" (did you mean https://{text}?)"
        raise UsageError(f"not a URL or an existing path: {_short(text)}{hint}")
    try:
        special = special_file(path.stat().st_mode)
    except (OSError, ValueError):
        special = None  # a broken link, no permission: the fetcher reports it
    if special is not None:
        raise UsageError(f"not a regular file ({special}): {text!r}")
    return path.resolve().as_uri(), True


def normalize_source(s: str, base: Path | None = None) -> str:
    """Accept an http(s) URL, a file URL or an existing local path; return a normalised URL.

    A local path (absolute, or relative to ``base``, default the working directory; ``~``
    expanded) becomes a ``file://`` URL with an absolute path; it must exist. A string that is
    neither a URL with a known scheme nor an existing path (``ht!tp://x``, a typo'd file name) is
    a usage error, as pip treats a requirement that is neither a valid name nor an existing path.
    Raises UsageError for other schemes, missing hosts, whitespace inside URLs and the like. (A
    ``file://`` URL need not exist: the fetcher reports it as a failed source.) The ``--url``
    option and every line of a ``--urls`` file (with ``base`` the file's folder) go through here.
    """
    return _resolve_source(s, base)[0]


@dataclass(frozen=True)
class UrlList:
    """A urls.txt as read: its sources, and its text with each local path written as the
    ``file://`` URL it stands for (so the list means the same read from any folder, as a pack's
    ``urls.txt`` is by ``pack update``); comments and blank lines are kept."""

    sources: list[str]
    text: str


def load_url_list(path: Path) -> UrlList:
    """Read a urls.txt: one source per line; blank lines and ``#`` comments allowed.

    A comment is a line whose first non-blank character is ``#``, or the rest of a line after
    whitespace followed by ``#`` (a ``#`` inside a URL starts its fragment, not a comment).
    A line takes what ``--url`` takes (see :func:`normalize_source`): an http(s) or file URL, or
    an existing local file or folder, a relative path being relative to the folder of the list.
    Raises UsageError naming the file and line for a bad line, and when the file cannot be read
    or holds no source.
    """
    try:
        special = special_file(path.stat().st_mode)
        if special is not None:
            raise UsageError(f"cannot read {path}: not a regular file ({special})")
        raw = path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or exc.__class__.__name__
        raise UsageError(f"cannot read {path}: {reason}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line_no = raw[: exc.start].count(b"\n") + 1
        raise UsageError(f"{path} line {line_no}: not valid UTF-8") from None
    urls: list[str] = []
    lines = text.splitlines()
    rewritten = False
    for index, line in enumerate(lines):
        entry = line.strip()
        if not entry or entry.startswith("#"):
            continue
        entry = _TRAILING_COMMENT_RE.sub("", entry).strip()
        if not entry:
            continue
        try:
            url, local = _resolve_source(entry, path.parent)
        except UsageError as exc:
            raise UsageError(f"{path} line {index + 1}: {exc.message}") from None
        urls.append(url)
        if local:
            lines[index] = line.replace(entry, url, 1)
            rewritten = True
    if not urls:
        raise UsageError(f"{path} has no URLs")
    return UrlList(urls, "".join(f"{line}\n" for line in lines) if rewritten else text)


def read_url_list(path: Path) -> list[str]:
    """The sources of a urls.txt (see :func:`load_url_list`), each validated and normalised."""
    return load_url_list(path).sources


def file_url_to_path(url: str) -> Path:
    """The local path of a ``file://`` URL (percent-decoded). Raises UsageError otherwise."""
    parts = urlsplit(url)
    if parts.scheme.lower() != "file":
        raise UsageError(f"not a file URL: {_short(url)}")
    if parts.netloc not in ("", "localhost"):
        raise UsageError(f"file URL with a remote host: {_short(url)}")
    return Path(unquote(parts.path))
