"""The ``wikigr`` command: a thin typer adapter over the library. Only this package imports typer
and rich. Results go to stdout (``--json`` for machines); diagnostics and progress to stderr.

A plain ``wikigr query PACK QUESTION [options]`` (what a skill runs for every question) is parsed
without typer (:func:`wikigr.cli.answer.fast_query`): importing typer and building its parameter
validators costs ~0.15 s per process. Anything that parser does not accept as plainly valid
(``--help``, an unknown or repeated option, a bad value...) goes through typer, as every other
command does, so errors and help read the same.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from wikigr.errors import WikigrError, shown

if TYPE_CHECKING:
    import typer


#: The exit code of an interrupted command (Ctrl-C), as shells report a SIGINT death.
INTERRUPTED = 130


def _fail(message: str, code: int) -> int:
    from wikigr.cli.output import err, printable

    line = printable(" ".join(message.split()))  # it may quote a pack's text
    err.print(f"Error: {line}", markup=False, highlight=False, soft_wrap=True)
    return code


def _exit_code(code: int) -> int:
    """The one place an exit code leaves the CLI: an interruption says so (one line on stderr).
    A Ctrl-C once the command's pack is swapped in (while it reports what it did) ends it with 0,
    quietly: the write it would have stopped is done."""
    if code != INTERRUPTED:
        return code
    transaction = sys.modules.get("wikigr.pack.transaction")  # not loaded: no pack was written
    swapped = transaction is not None and transaction.last_write_swapped()
    return 0 if swapped else _fail("interrupted", INTERRUPTED)


def _check_text(args: list[str]) -> None:
    """Every argument must be text: bytes that are not UTF-8 (which Python keeps in argv as lone
    surrogates) are a usage error naming the argument (as clap, Rust's argument parser, does for
    text arguments), not a failure somewhere downstream."""
    from wikigr.errors import UsageError

    for arg in args:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            try:  # the bytes as given, \xff for an undecodable one
                shown = arg.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            except UnicodeEncodeError:  # a surrogate that stands for no byte (run() called directly)
                shown = arg.encode("utf-8", "backslashreplace").decode("utf-8")
            if len(shown) > 80:
                shown = shown[:79] + "…"
            raise UsageError(f"argument '{shown}' is not valid UTF-8 text") from None


def run(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code; every failure is one ``Error: ...`` line."""
    return _run_watched(list(sys.argv[1:] if argv is None else argv), restore_handler=True)


def _run_watched(args: list[str], restore_handler: bool) -> int:
    """:func:`_run` with Ctrl-C watched. A Ctrl-C can land at any bytecode, also after the command
    has returned (while the handler is being put back, before the process exits): from the
    command's return on, it only records that it came; one that lands before that is the
    interruption it is (exit 0 if the pack was already swapped in, 130 otherwise)."""
    restore = _watch_ctrl_c()
    try:
        try:
            return _run(args)
        finally:
            _CtrlC.done = True
            if restore_handler:
                restore()
    except KeyboardInterrupt:  # between the command's return and the line above
        return _exit_code(INTERRUPTED)


def _run(args: list[str]) -> int:
    if (transaction := sys.modules.get("wikigr.pack.transaction")) is not None:
        transaction.forget_last_write()  # of a command run before in this process
    try:
        _check_text(args)
        if args[:1] in (["mcp"], ["serve"]):  # a server as a client starts it: no typer
            from wikigr.cli.servers import fast_server

            server = fast_server(args)
            if server is not None:
                server()
                return 0
        from wikigr.cli.answer import fast_query

        query = fast_query(args)
        if query is None:
            return _run_app(args)
        query()
    except WikigrError as exc:
        if _CtrlC.seen:  # the failure is the Ctrl-C's doing
            return _exit_code(INTERRUPTED)
        return _fail(exc.message, exc.exit_code)
    except KeyboardInterrupt:
        return _exit_code(INTERRUPTED)
    except BrokenPipeError:
        return _output_closed()
    except OSError as exc:
        if exc.errno == errno.EPIPE:
            return _output_closed()
        if exc.errno != errno.ENAMETOOLONG or os.environ.get("WIKIGR_DEBUG"):
            return _internal(exc)
        name = f": {shown(exc.filename, 200)}" if exc.filename else ""
        return _fail(f"file name too long{name}", 2)
    except Exception as exc:  # noqa: BLE001 - one line, or the traceback with WIKIGR_DEBUG=1
        if _CtrlC.seen:
            return _exit_code(INTERRUPTED)
        return _internal(exc)
    return 0


class _CtrlC:
    """Whether a Ctrl-C reached this command (see :func:`_watch_ctrl_c`)."""

    seen = False
    #: The command has returned: a Ctrl-C from now on is recorded, not raised.
    done = False


def _watch_ctrl_c() -> Callable[[], None]:
    """Python's SIGINT handler (a KeyboardInterrupt in the main thread), which also records that
    the Ctrl-C came. A Ctrl-C can come out of a library as another failure: during ``import
    onnxruntime`` its C code imports numpy, which prints the KeyboardInterrupt and fails with
    ``ImportError: import numpy failed`` (pybind11: "initialization failed"), no cause attached;
    the command then reported that error with exit 1 instead of the interruption it is."""
    import signal

    _CtrlC.seen = _CtrlC.done = False

    def on_sigint(signum: int, frame: object) -> None:
        _CtrlC.seen = True
        if not _CtrlC.done:
            signal.default_int_handler(signum, frame)  # type: ignore[arg-type]

    def restore() -> None:
        with contextlib.suppress(ValueError):
            if signal.getsignal(signal.SIGINT) is on_sigint:
                signal.signal(signal.SIGINT, signal.default_int_handler)

    with contextlib.suppress(ValueError):  # not the main thread (run() called from a thread)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, on_sigint)
    return restore


def _output_closed() -> int:
    """The reader of stdout went away (``wikigr query ... | head -1``): the command ends quietly
    with 0, as ``cat`` and ``git log`` do. stdout is pointed at the null device, so what is still
    buffered has somewhere to go at exit (no "Exception ignored ... BrokenPipeError")."""
    with contextlib.suppress(OSError, ValueError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    return 0


def _internal(exc: Exception) -> int:
    """A failure no check foresaw: one line (the traceback with WIKIGR_DEBUG=1)."""
    if os.environ.get("WIKIGR_DEBUG"):
        raise exc
    return _fail(
        f"internal error: {type(exc).__name__}: {shown(exc, 500)} (set WIKIGR_DEBUG=1 for details)", 1
    )


def _run_app(args: list[str]) -> int:
    """Run the typer application; its own exceptions become exit codes here, the others go up.

    Without standalone mode, typer *returns* the code of a ``typer.Exit`` (``raise typer.Exit(1)``
    in a command; Ctrl-C, which it turns into ``Exit(130)``) instead of raising it; a command that
    ends normally returns None."""
    import typer
    from typer._click.exceptions import NoArgsIsHelpError

    from wikigr.cli.typer_app import app

    try:
        returned = app(args=args, prog_name="wikigr", standalone_mode=False)
    except NoArgsIsHelpError as exc:
        print(exc.format_message())
        return 0
    except typer.Exit as exc:
        returned = exc.exit_code
    except typer.Abort:
        returned = INTERRUPTED
    except typer.TyperException as exc:  # usage errors (exit 2) and other click-style errors
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        return _fail(message, int(getattr(exc, "exit_code", 1)))
    code = returned if isinstance(returned, int) and not isinstance(returned, bool) else 0
    return _exit_code(code)


def main() -> None:
    # The handler stays (recording, no longer raising) until _exit_now puts "exit at once" in
    # its place: restored to Python's, a Ctrl-C in between was a KeyboardInterrupt out of main.
    code = _run_watched(sys.argv[1:], restore_handler=False)
    _exit_now(code, wait_for_threads=code != INTERRUPTED)


def _exit_at_once(code: int) -> None:
    """From here a Ctrl-C ends the process at once with ``code``: the command is done."""
    import signal

    def done(signum: int, frame: object) -> None:
        os._exit(code)

    with contextlib.suppress(ValueError):  # not the main thread (run() called from a thread)
        signal.signal(signal.SIGINT, done)


def _exit_now(code: int, wait_for_threads: bool = True) -> None:
    """End the process without tearing down the interpreter: the output is flushed, other threads
    are waited for and exit handlers run, as at a normal exit, but the objects still alive (the
    model's session, the tokenizer, the modules) are not freed one by one (~0.08 s; seconds with
    torch and a build's tables); the OS takes the memory back. Every command has closed its stores
    and swapped its pack in by then. After an interruption, without waiting for the other threads:
    a worker blocked in a network read (a fetch waiting on a slow server) would otherwise hold the
    exit until its timeout. By then the command has unwound (staging folders removed, the previous
    pack untouched); the workers only read.

    A Ctrl-C while exiting ends the process with ``code`` at once. (An interpreter's teardown runs
    with SIGINT's default action restored: a Ctrl-C then killed a finished ``pack update`` by the
    signal, with no word.)"""
    import atexit
    import threading

    _exit_at_once(code)

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # e.g. a closed pipe: nothing more can be said
            stream.flush()
    if wait_for_threads:
        for thread in threading.enumerate():
            if thread is not threading.current_thread() and not thread.daemon:
                thread.join()
    atexit._run_exitfuncs()
    os._exit(code)


def __getattr__(name: str) -> Any:
    if name == "app":  # the typer application, imported on first use
        from wikigr.cli.typer_app import app

        return app
    raise AttributeError(f"module 'wikigr.cli' has no attribute {name!r}")


if TYPE_CHECKING:
    app: typer.Typer
