"""ember.futures: the Future that ember.distributed's Work objects hand out (torch.futures.Future's API)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["Future", "collect_all", "wait_all"]


class Future:
    """A value that some thread will set: wait() blocks and returns it (or raises its error)."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._value: Any = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[Future], None]] = []

    def done(self) -> bool:
        return self._done.is_set()

    def wait(self) -> Any:
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value

    def value(self) -> Any:
        if not self.done():
            raise RuntimeError("Future.value() called before the future completed; use wait()")
        return self.wait()

    def set_result(self, result: Any) -> None:
        self._finish(result, None)

    def set_exception(self, result: BaseException) -> None:
        self._finish(None, result)

    def _finish(self, value: Any, error: BaseException | None) -> None:
        with self._lock:
            if self._done.is_set():
                raise RuntimeError("Future: a result was already set")
            self._value, self._error = value, error
            self._done.set()
            callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb(self)

    def add_done_callback(self, callback: Callable[[Future], None]) -> None:
        """Runs callback(self) once done (at once if it already is)."""
        with self._lock:
            if not self._done.is_set():
                self._callbacks.append(callback)
                return
        callback(self)

    def then(self, callback: Callable[[Future], Any]) -> Future:
        """A new Future holding callback(self)'s result (or the error it raised)."""
        chained = Future()

        def run(fut: Future) -> None:
            try:
                chained.set_result(callback(fut))
            except Exception as e:  # noqa: BLE001 - handed to whoever waits on `chained`
                chained.set_exception(e)

        self.add_done_callback(run)
        return chained


def collect_all(futures: list[Future]) -> Future:
    """A Future that completes with the list of `futures` once all of them have."""
    out = Future()
    remaining = [len(futures)]
    lock = threading.Lock()
    if not futures:
        out.set_result([])

    def one_done(_: Future) -> None:
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            out.set_result(list(futures))

    for f in futures:
        f.add_done_callback(one_done)
    return out


def wait_all(futures: list[Future]) -> list[Any]:
    """Waits for every future and returns their values (raising the first error)."""
    return [f.wait() for f in futures]
