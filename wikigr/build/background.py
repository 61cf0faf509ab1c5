"""Work a build runs in a thread beside its own: a model loaded while the chunks are embedded, the
definitions embedded while the store is written. The thread's result, or its exception, is kept in
a ``Future`` and handed to the build where it waits for it (:func:`wait_for`): nothing is printed
from the thread, nothing is lost."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

from wikigr.threads import completed

T = TypeVar("T")


def in_thread(work: Callable[[], T], name: str) -> Future[T]:
    """``work()`` in a thread of its own, started now; a daemon: an interrupted build does not
    wait for it."""
    future: Future[T] = Future()

    def run() -> None:
        if future.set_running_or_notify_cancel():
            try:
                future.set_result(work())
            except BaseException as exc:  # noqa: BLE001 - raised again by wait_for
                future.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return future


def wait_for(future: Future[T]) -> T:
    """The result of ``future``, waited for in slices (a Ctrl-C seen at once); its exception is
    raised here."""
    for _ in completed([future]):
        pass
    return future.result()
