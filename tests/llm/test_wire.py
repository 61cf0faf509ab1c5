"""wikigr's own Messages API client (wikigr.llm.wire) on what the SDK's httpx did for it: the base
URL (a path prefix kept), https with the system's and certifi's CA certificates, proxies from the
environment (a forwarding proxy for http, a CONNECT tunnel for https, NO_PROXY, never for
loopback), and server-sent events however the bytes are cut. Real servers on 127.0.0.1: the fake
Messages API (over TLS too, with a certificate made here by the openssl command) and a small proxy."""

from __future__ import annotations

import base64
import contextlib
import shutil
import socket
import socketserver
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.fakeclaude import FakeClaude, Reply, make_llm
from tests.httpserver import closed_port_url
from wikigr.errors import UsageError
from wikigr.llm import AnthropicLLM, LLMRequestError, LLMUnavailableError
from wikigr.llm.wire import Proxy, proxy_for

ASK = [{"role": "user", "content": "Capital of France?"}]
PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "REQUEST_METHOD")


@pytest.fixture(autouse=True)
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine's own proxy settings play no part."""
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


# -- the base URL ------------------------------------------------------------------------------


def test_a_path_prefix_of_the_base_url_is_kept(fake_claude: FakeClaude) -> None:
    fake_claude.script("never sent")
    with make_llm(fake_claude, base_url=fake_claude.base_url + "/gateway/", max_retries=0) as llm:
        assert llm.base_url == fake_claude.base_url + "/gateway"
        with pytest.raises(LLMRequestError, match="HTTP 404 not_found_error"):
            llm.complete("", ASK)
    assert fake_claude.last.path == "/gateway/v1/messages"


def test_anthropic_base_url_is_read_when_no_url_is_given(
    fake_claude: FakeClaude, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_claude.base_url)
    fake_claude.script("Paris.")
    with AnthropicLLM(fake_claude.api_key) as llm:
        assert llm.complete("", ASK).text == "Paris."


@pytest.mark.parametrize("url", ["api.anthropic.com", "ftp://api.anthropic.com", "http://host:port"])
def test_a_base_url_that_is_not_http_is_a_usage_error(url: str) -> None:
    with pytest.raises(UsageError) as caught:
        AnthropicLLM("sk-ant-test", base_url=url)
    assert str(caught.value) == f"ANTHROPIC_BASE_URL must be an http:// or https:// URL, not {url!r}"


def test_a_key_no_header_can_carry_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"^ANTHROPIC_API_KEY holds characters no HTTP header can carry$"):
        AnthropicLLM("sk-ant-\u00e9t\u00e9\n", base_url="http://127.0.0.1:9")


# -- TLS ---------------------------------------------------------------------------------------

TLS_HOST = "claude.test"


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for claude.test, localhost and 127.0.0.1: (cert, key)."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2"),
            *("-keyout", str(key), "-out", str(cert), "-subj", f"/CN={TLS_HOST}"),
            *("-addext", f"subjectAltName=DNS:{TLS_HOST},DNS:localhost,IP:127.0.0.1"),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


class TLSHandler(FakeClaude.handler):  # type: ignore[misc,valid-type]
    """The fake's handler, on a connection wrapped in TLS before it is read."""

    context: ClassVar[ssl.SSLContext]

    def setup(self) -> None:
        self.request = self.context.wrap_socket(self.request, server_side=True)
        super().setup()

    def finish(self) -> None:
        super().finish()
        self.request.close()  # the server closes the plain socket, which the TLS one replaced


class TLSFakeClaude(FakeClaude):
    """The fake Messages API over TLS."""

    handler = TLSHandler

    @property
    def https_url(self) -> str:
        return f"https://localhost:{self.port}"


@pytest.fixture
def tls_fake(certificate: tuple[Path, Path]) -> Iterator[TLSFakeClaude]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    TLSHandler.context = context
    with TLSFakeClaude() as fake:
        yield fake


def test_https_with_a_certificate_the_system_trusts(
    tls_fake: TLSFakeClaude, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    tls_fake.script("Paris [1].")
    with make_llm(tls_fake, base_url=tls_fake.https_url) as llm:
        assert llm.complete("", ASK).text == "Paris [1]."
    assert tls_fake.last.headers["host"] == f"localhost:{tls_fake.port}"


def test_a_certificate_nobody_trusts_is_a_one_line_connection_failure(tls_fake: TLSFakeClaude) -> None:
    tls_fake.script("never read")
    with (
        make_llm(tls_fake, base_url=tls_fake.https_url, max_retries=1) as llm,
        pytest.raises(LLMUnavailableError) as caught,
    ):
        llm.complete("", ASK)
    message = str(caught.value)
    assert message.startswith(
        f"Claude API unavailable after 2 attempts: connection to {tls_fake.https_url} failed "
        "(ConnectError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed"
    )
    assert "\n" not in message and tls_fake.requests == []


# -- proxies -----------------------------------------------------------------------------------


class ForwardingProxy(socketserver.ThreadingTCPServer):
    """An HTTP proxy on 127.0.0.1 that sends every request on to ``upstream`` (a port on
    127.0.0.1), whatever host it names: an absolute-URI request rewritten to its path, a CONNECT
    as a tunnel. With ``login`` set, a request without that Proxy-Authorization gets a 407."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, upstream: int, login: str | None = None) -> None:
        super().__init__(("127.0.0.1", 0), ProxyHandler)
        self.upstream = upstream
        self.login = login
        self.seen: list[tuple[str, dict[str, str]]] = []  # (request line, headers lower-cased)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that hang up are expected."""


class ProxyHandler(socketserver.BaseRequestHandler):
    server: ForwardingProxy

    def handle(self) -> None:
        client: socket.socket = self.request
        head = b""
        while b"\r\n\r\n" not in head:
            data = client.recv(65536)
            if not data:
                return
            head += data
        head, rest = head.split(b"\r\n\r\n", 1)
        line, *fields = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (f.partition(":") for f in fields)}
        self.server.seen.append((line, headers))
        if self.server.login is not None and headers.get("proxy-authorization") != self.server.login:
            client.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
            return
        with socket.create_connection(("127.0.0.1", self.server.upstream)) as upstream:
            method, target, version = line.split(" ")
            if method == "CONNECT":
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                path = "/" + target.split("://", 1)[1].split("/", 1)[1]
                kept = [f for f in fields if not f.lower().startswith("proxy-authorization")]
                upstream.sendall("\r\n".join([f"{method} {path} {version}", *kept]).encode() + b"\r\n\r\n")
            upstream.sendall(rest)
            onward = threading.Thread(target=_pipe, args=(client, upstream), daemon=True)
            onward.start()
            _pipe(upstream, client)
            with contextlib.suppress(OSError):
                client.shutdown(socket.SHUT_RDWR)  # ends the other direction's wait too
            onward.join(timeout=5)


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        pass


@pytest.fixture
def proxy_to(request: pytest.FixtureRequest) -> Iterator[Any]:
    """``proxy_to(port, login=None)``: a running ForwardingProxy to that port."""
    proxies: list[ForwardingProxy] = []

    def start(port: int, login: str | None = None) -> ForwardingProxy:
        proxy = ForwardingProxy(port, login)
        threading.Thread(target=proxy.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        proxies.append(proxy)
        return proxy

    yield start
    for proxy in proxies:
        proxy.shutdown()
        proxy.server_close()


def test_http_goes_through_the_http_proxy(
    fake_claude: FakeClaude, proxy_to: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = proxy_to(fake_claude.port)
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.setenv("HTTPS_PROXY", closed_port_url(""))  # not for an http URL
    fake_claude.script("Paris.")
    with make_llm(fake_claude, base_url="http://claude.test:8080") as llm:
        assert llm.complete("", ASK).text == "Paris."
    [(line, headers)] = proxy.seen
    assert line == "POST http://claude.test:8080/v1/messages HTTP/1.1"
    assert headers["host"] == "claude.test:8080" and "proxy-authorization" not in headers
    assert fake_claude.last.path == "/v1/messages"


def test_https_goes_through_a_connect_tunnel_that_logs_in(
    tls_fake: TLSFakeClaude,
    certificate: tuple[Path, Path],
    proxy_to: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    login = "Basic " + base64.b64encode(b"me:p@ss word").decode()
    proxy = proxy_to(tls_fake.port, login)
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    monkeypatch.setenv("https_proxy", proxy.url.replace("://", "://me:p%40ss%20word@"))
    monkeypatch.setenv("HTTPS_PROXY", closed_port_url(""))  # the lower-case name wins
    tls_fake.script("Paris [1].")
    with make_llm(tls_fake, base_url=f"https://{TLS_HOST}") as llm:
        assert llm.complete("", ASK).text == "Paris [1]."
    [(line, headers)] = proxy.seen
    assert line == f"CONNECT {TLS_HOST}:443 HTTP/1.0" and headers["proxy-authorization"] == login
    assert tls_fake.last.headers["host"] == TLS_HOST  # the TLS inside the tunnel is to claude.test


def test_a_proxy_that_refuses_the_login_is_a_connection_failure(
    proxy_to: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = proxy_to(9, "Basic right")  # refuses before it would connect anywhere
    monkeypatch.setenv("ALL_PROXY", proxy.url)
    with (
        AnthropicLLM("sk-ant-test", base_url=f"https://{TLS_HOST}", max_retries=0) as llm,
        pytest.raises(LLMUnavailableError) as caught,
    ):
        llm.complete("", ASK)
    assert str(caught.value) == (
        f"Claude API unavailable after 1 attempt: connection to https://{TLS_HOST} failed "
        "(ConnectError: Tunnel connection failed: 407 Proxy Authentication Required)"
    )


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_loopback_never_goes_through_a_proxy(
    fake_claude: FakeClaude, monkeypatch: pytest.MonkeyPatch, host: str
) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.setenv(name, closed_port_url(""))
    fake_claude.script("Paris.")
    with make_llm(fake_claude, base_url=f"http://{host}:{fake_claude.port}") as llm:
        assert llm.complete("", ASK).text == "Paris."


@pytest.mark.parametrize(
    ("no_proxy", "host", "proxied"),
    [
        ("", "api.anthropic.com", True),
        ("*", "api.anthropic.com", False),
        ("anthropic.com", "api.anthropic.com", False),
        ("anthropic.com", "anthropic.com", False),
        (".anthropic.com", "anthropic.com", True),
        (".anthropic.com", "api.anthropic.com", False),
        ("*.anthropic.com", "api.anthropic.com", False),
        ("other.org, API.Anthropic.com:443", "api.anthropic.com", False),
        ("http://api.anthropic.com", "api.anthropic.com", False),
        ("thropic.com", "api.anthropic.com", True),
        ("example.com,10.0.0.1", "10.0.0.1", False),
    ],
)
def test_no_proxy_is_read_as_httpx_read_it(
    monkeypatch: pytest.MonkeyPatch, no_proxy: str, host: str, proxied: bool
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "proxy.corp:3128")
    monkeypatch.setenv("NO_PROXY", no_proxy)
    expected = Proxy("proxy.corp", 3128) if proxied else None
    assert proxy_for("https", host) == expected


def test_which_proxy_variable_applies(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALL_PROXY", "http://all:1")
    assert proxy_for("https", "api.anthropic.com") == Proxy("all", 1)
    monkeypatch.setenv("HTTPS_PROXY", "http://upper:2")
    assert proxy_for("https", "api.anthropic.com") == Proxy("upper", 2)
    monkeypatch.setenv("https_proxy", "http://lower:3")
    assert proxy_for("https", "api.anthropic.com") == Proxy("lower", 3)
    assert proxy_for("http", "api.anthropic.com") == Proxy("all", 1)
    monkeypatch.setenv("HTTP_PROXY", "http://plain")
    assert proxy_for("http", "api.anthropic.com") == Proxy("plain", 80)
    monkeypatch.setenv("REQUEST_METHOD", "GET")  # CGI: HTTP_PROXY may be a request's header
    assert proxy_for("http", "api.anthropic.com") == Proxy("all", 1)


@pytest.mark.parametrize("value", ["socks5://127.0.0.1:1080", "https://proxy.corp:443", "http://proxy:x"])
def test_a_proxy_this_client_cannot_use_is_a_usage_error(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("ALL_PROXY", value)
    with pytest.raises(UsageError) as caught:
        AnthropicLLM("sk-ant-test", base_url="https://api.anthropic.com")
    assert str(caught.value) == f"ALL_PROXY must name an http:// proxy (host:port), not {value!r}"
    AnthropicLLM("sk-ant-test", base_url="http://127.0.0.1:9")  # loopback: no proxy to refuse


# -- server-sent events ------------------------------------------------------------------------

EVENTS = (
    b": a comment line\r\n"
    b"event: message_start\r\n"
    b'data:{"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": '
    b'"assistant", "model": "claude-x", "content": [], "stop_reason": null, '
    b'"usage": {"input_tokens": 5, "output_tokens": 1}}}\r\n\r\n'
    b"event: ping\r\ndata: {}\r\n\r\n"
    b'event: content_block_start\ndata: {"type": "content_block_start", "index": 0, '
    b'"content_block": {"type": "text", "text": ""}}\n\n'
    b"event: content_block_delta\r\n"
    b'data: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", '
    b'"text": "Caf\xc3\xa9 [1]\\n"}}\r\n\r\n'
    b'event: content_block_delta\rdata: {"type": "content_block_delta", "index": 0, '
    b'"delta": {"type": "text_delta", "text": "ok."}}\r\r'
    b'event: content_block_stop\ndata: {"type": "content_block_stop", "index": 0}\n\n'
    b'event: message_delta\ndata: {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, '
    b'"usage": {"output_tokens": 9}}\n\n'
    b'event: message_stop\ndata: {"type": "message_stop"}\n\n'
)


@pytest.mark.parametrize("pause", [0.0, 0.001], ids=["at-once", "byte-by-byte"])
def test_events_are_read_however_their_bytes_are_cut(fake_claude: FakeClaude, pause: float) -> None:
    """CRLF, CR and LF line ends, a comment, a field without its space, a UTF-8 character split
    between two reads: the same answer, piece by piece."""
    reply = Reply(body=EVENTS, content_type="text/event-stream")
    reply.pause = pause
    fake_claude.script(reply)
    pieces: list[str] = []
    with make_llm(fake_claude) as llm, llm.streaming(pieces.append):
        completion = llm.complete("", ASK)
    assert pieces == ["Café [1]\n", "ok."]
    assert completion.text == "Café [1]\nok." and completion.model == "claude-x"
    assert (completion.input_tokens, completion.output_tokens, completion.stop_reason) == (5, 9, "end_turn")


@pytest.mark.parametrize(
    ("events", "why"),
    [
        (
            EVENTS.replace(b'data:{"type": "message_start"', b"data:{oops"),
            "a message_start event that is not JSON",
        ),
        (EVENTS.split(b"event: message_stop")[0], "the stream ended before message_stop"),
        (
            EVENTS.replace(b'"index": 0, "delta"', b'"index": 3, "delta"', 1),
            "a malformed content_block_delta event",
        ),
    ],
    ids=["not-json", "no-stop", "bad-index"],
)
def test_a_stream_that_does_not_fit_is_retried_then_reported_in_one_line(
    fake_claude: FakeClaude, events: bytes, why: str
) -> None:
    fake_claude.script(*[Reply(body=events, content_type="text/event-stream")] * 2)
    with (
        make_llm(fake_claude, max_retries=1) as llm,
        llm.streaming(lambda piece: None),
        pytest.raises(LLMUnavailableError) as caught,
    ):
        llm.complete("", ASK)
    message = str(caught.value)
    assert message.startswith(
        "Claude API unavailable after 2 attempts: the stream broke off (RemoteProtocolError: " + why
    )
    assert "\n" not in message


def test_a_plain_reply_to_a_streamed_request_is_read_whole(fake_claude: FakeClaude) -> None:
    """A server (or a gateway) that answers a stream request with one JSON message."""
    fake_claude.script(
        Reply(
            body=b'{"type": "message", "content": [{"type": "text", "text": "Hi."}], '
            b'"usage": {"input_tokens": 1, "output_tokens": 1}}'
        )
    )
    pieces: list[str] = []
    with make_llm(fake_claude) as llm, llm.streaming(pieces.append):
        assert llm.complete("", ASK).text == "Hi."
    assert pieces == []
