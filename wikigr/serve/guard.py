"""The guard of ``wikigr serve``: what a request may not do is refused before any route sees
it (a Host that is not this server's on loopback, a missing token, a write from another origin or
to a read-only server), and every response gets the security headers (docs/serve.md, "Security")."""

from __future__ import annotations

import hmac
from urllib.parse import urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import HTTPConnection
from starlette.responses import HTMLResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from wikigr.serve.http import error_json
from wikigr.serve.net import host_name, is_loopback
from wikigr.serve.pagelang import PAGE_HEADERS, login_page, page_language

TOKEN_COOKIE = "wikigr_token"
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})  # a write, unless a read POST below
READ_POSTS = frozenset({"/login", "/api/v1/query", "/api/v1/query/stream", "/api/v1/search"})
SAME_SITE = frozenset({"same-origin", "none"})  # Sec-Fetch-Site of the page itself, or typed by the user
READ_ONLY = "this server is read-only (wikigr serve --read-only)"
DEFAULT_PORTS = {"http": 80, "https": 443}
PUBLIC_PATHS = frozenset({"/login", "/static/login.js", "/static/app.css"})  # reachable without a token
SECURITY_HEADERS = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "content-security-policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
    "form-action 'self'",
}


class Guard:
    """Refuses what a request may not do before any route sees it, and adds security headers.

    On loopback, a request whose Host is not ``localhost`` or a loopback address (any of
    127.0.0.0/8 or ``[::1]``) is refused (421): a web page elsewhere cannot reach the
    server through DNS rebinding, which needs a name of its own. A Host header that is not
    ``host[:port]`` (the port ASCII digits, an IPv6 address in brackets), a missing or a repeated
    one, is a 400 (RFC 9112, 3.2). With a token, every request must carry it:
    ``Authorization: Bearer TOKEN``, or the cookie the page's sign-in sets (``POST /login``).

    A request of an unsafe method (POST, PUT, PATCH, DELETE) is refused (403) when a browser says
    it comes from another site: an ``Origin`` that is not this server's (the scheme and the
    request's Host), or a ``Sec-Fetch-Site`` other than ``same-origin`` or ``none``. A request
    with neither header is not a browser's cross-site request (curl, a script) and passes. With
    ``read_only``, every unsafe request but the reading POSTs (:data:`READ_POSTS`) is refused
    (403)."""

    def __init__(self, app: ASGIApp, token: str | None, loopback: bool, read_only: bool = False) -> None:
        self.app = app
        self.token = token.encode() if token else None
        self.loopback = loopback
        self.read_only = read_only

    def authorised(self, headers: Headers) -> bool:
        if self.token is None:
            return True
        scheme, _, given = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self.token):
            return True
        cookie = _cookie(headers.get("cookie", ""), TOKEN_COOKIE)
        return cookie is not None and hmac.compare_digest(cookie.encode(), self.token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    extra.setdefault(name, value)
            await send(message)

        refusal: Response | None = None
        if self.loopback:
            hosts = headers.getlist("host")
            name = host_name(hosts[0]) if len(hosts) == 1 else None
            shown = ascii(hosts[0][:80])[1:-1] if hosts else ""  # one line, whatever it holds
            if name is None:  # RFC 9112, 3.2: a missing, repeated or malformed Host is a 400
                refusal = error_json(400, f"refused: the Host header '{shown}' is not host[:port]")
            elif not is_loopback(name):
                refusal = error_json(421, f"refused: Host '{shown}' is not a loopback name of this server")
        if refusal is None and not self.authorised(headers) and scope["path"] not in PUBLIC_PATHS:
            if scope["path"] == "/" and scope["method"] in ("GET", "HEAD"):
                lang = page_language(HTTPConnection(scope))
                page_headers = {**PAGE_HEADERS, "content-language": lang}
                refusal = HTMLResponse(login_page(lang), status_code=401, headers=page_headers)
            else:
                refusal = error_json(
                    401,
                    "this server needs its token: send Authorization: Bearer TOKEN",
                    headers={"www-authenticate": "Bearer"},
                )
        if refusal is None and scope["method"] in UNSAFE_METHODS:
            refusal = self.write_refusal(scope, headers)
        if refusal is not None:
            await refusal(scope, receive, secured)
            return
        await self.app(scope, receive, secured)

    def write_refusal(self, scope: Scope, headers: Headers) -> Response | None:
        """The 403 of an unsafe request from another site, or of a write to a read-only server."""
        origin = headers.get("origin")
        fetch_site = headers.get("sec-fetch-site")
        if origin is not None and not same_origin(
            origin, scope.get("scheme", "http"), headers.get("host", "")
        ):
            shown = ascii(origin[:80])[1:-1]
            return error_json(403, f"refused: a write from another origin ({shown}) than this server's")
        if fetch_site is not None and fetch_site.strip().lower() not in SAME_SITE:
            shown = ascii(fetch_site[:40])[1:-1]
            return error_json(403, f"refused: a write from another site (Sec-Fetch-Site: {shown})")
        if self.read_only and scope["path"] not in READ_POSTS:
            return error_json(403, READ_ONLY)
        return None


def same_origin(origin: str, scheme: str, host: str) -> bool:
    """Whether the ``Origin`` header ``origin`` names the origin served: ``scheme`` and the Host
    header ``host`` (the default port of the scheme written or not). ``null`` (a sandboxed or
    privacy-sensitive context) is no origin of this server."""
    try:
        given = urlsplit(origin.strip())
        served = urlsplit(f"{scheme}://{host}")
        given_port = given.port or DEFAULT_PORTS.get(given.scheme.lower())
        served_port = served.port or DEFAULT_PORTS.get(scheme.lower())
    except ValueError:  # a port that is not one
        return False
    if given.path or given.query or given.fragment or given.username is not None or not given.hostname:
        return False
    return (given.scheme.lower(), given.hostname, given_port) == (
        scheme.lower(),
        served.hostname,
        served_port,
    )


def _cookie(header: str, name: str) -> str | None:
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None
