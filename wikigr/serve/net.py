"""Where ``wikigr serve`` listens and who may connect: loopback addresses, the token, the socket.

Nothing here loads the web stack: the command checks its settings before starlette and uvicorn
are imported.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from pathlib import Path

from wikigr.errors import UsageError, WikigrError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8700
MIN_TOKEN_CHARS = 16


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (or ``localhost``): only this machine can connect."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_token(token: str | None, host: str) -> None:
    """A token is needed to listen beyond loopback; one given must be long enough to guess."""
    if token is None:
        if not is_loopback(host):
            raise UsageError(
                f"listening on {host} lets other machines connect: give a token (--token or --token-file) "
                "that every request must then carry"
            )
        return
    if not token or any(c.isspace() for c in token):
        raise UsageError("the token is empty or contains spaces")
    if len(token) < MIN_TOKEN_CHARS:
        raise UsageError(f"the token must have at least {MIN_TOKEN_CHARS} characters")


def read_token_file(path: Path) -> str:
    """The token in a file (its first line, stripped)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise UsageError(f"no token file {path}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the token file {path}: {exc}") from exc
    lines = text.strip().splitlines()
    return lines[0].strip() if lines else ""


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (port 0: a free one), or a one-line error."""
    if not 0 <= port <= 65535:
        raise UsageError(f"the port must be from 0 to 65535, not {port}")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UsageError(f"cannot listen on {host}: {exc.strerror}") from exc
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise WikigrError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


# A Host header (RFC 9110, 7.2): a name or an IPv4 address, or an IPv6 address in brackets, then
# an optional port of ASCII digits. Nothing else: no user part (``127.0.0.1:8700@evil.example``),
# no spaces, no second colon, no other digits (``\\d`` would take ``١``).
_HOST = re.compile(r"(?P<name>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::[0-9]{1,5})?")


def host_name(host: str) -> str | None:
    """The name in a ``Host`` header, without its port (``[::1]`` of ``[::1]:8700``), or None when
    the header is not ``host[:port]`` as HTTP spells it."""
    match = _HOST.fullmatch(host)
    return match["name"] if match else None
