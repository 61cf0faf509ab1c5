"""The guard of ``wikigr serve``: what a request may not do is refused before any route sees
it (a Host that is not this server's on loopback, a missing token), and every response gets the
security headers (docs/serve.md, "Security")."""

from __future__ import annotations

import hmac

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import FileResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from wikigr.serve.http import STATIC, error_json
from wikigr.serve.net import host_name, is_loopback

TOKEN_COOKIE = "wikigr_token"
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
    ``Authorization: Bearer TOKEN``, or the cookie the page's sign-in sets (``POST /login``)."""

    def __init__(self, app: ASGIApp, token: str | None, loopback: bool) -> None:
        self.app = app
        self.token = token.encode() if token else None
        self.loopback = loopback

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
                refusal = FileResponse(STATIC / "login.html", status_code=401)
            else:
                refusal = error_json(
                    401,
                    "this server needs its token: send Authorization: Bearer TOKEN",
                    headers={"www-authenticate": "Bearer"},
                )
        if refusal is not None:
            await refusal(scope, receive, secured)
            return
        await self.app(scope, receive, secured)


def _cookie(header: str, name: str) -> str | None:
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None
