"""Waiting on other threads from the main thread in slices, so that a Ctrl-C is seen at once.

A SIGINT the kernel hands to another thread than the main one (it may: on a busy machine it
did) does not wake a main thread blocked on a lock (``Future`` waits, ``Thread.join``); CPython
sees it only when the main thread next takes the interpreter's lock (bpo-40010). Waits of
:data:`POLL` seconds at a time see it within that time, instead of when the wait ends (a fetch
blocked for its whole timeout, a build that ran on to its end).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Any

#: The longest the main thread waits on other threads at a time, seconds.
POLL = 0.25


def completed(futures: list[Future[Any]]) -> Iterator[Future[Any]]:
    """``concurrent.futures.as_completed``, waiting in slices of :data:`POLL` seconds."""
    pending = set(futures)
    while pending:
        done, pending = wait(pending, timeout=POLL, return_when=FIRST_COMPLETED)
        yield from done


def join(thread: threading.Thread, timeout: float) -> None:
    """``thread.join(timeout)``, waiting in slices of :data:`POLL` seconds."""
    deadline = time.monotonic() + timeout
    while thread.is_alive() and (left := deadline - time.monotonic()) > 0:
        thread.join(min(left, POLL))
