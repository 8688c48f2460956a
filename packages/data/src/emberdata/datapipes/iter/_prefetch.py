"""Prefetcher: read ahead of the consumer in a background thread."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any, TypeVar

from emberdata.datapipes._base import IterDataPipe, functional_datapipe
from emberdata.datapipes.iter._grouping import _check_int

T = TypeVar("T")

_ITEM, _END, _ERROR = 0, 1, 2
_POLL = 0.05  # how often a blocked producer checks that the consumer is still there


@functional_datapipe("prefetch")
class Prefetcher(IterDataPipe[T]):
    """Reads up to ``buffer_size`` items ahead of the consumer in a background thread
    (functional name: ``prefetch``), so I/O or decoding upstream overlaps with work downstream.

    An exception upstream is raised to the consumer, with its original traceback, at the
    position where it happened. A consumer that stops early stops the thread.
    """

    def __init__(self, source_datapipe: IterDataPipe[T], buffer_size: int = 10) -> None:
        _check_int(self, "buffer_size", buffer_size, 1)
        self.source_datapipe = source_datapipe
        self.buffer_size = buffer_size

    def __iter__(self) -> Iterator[T]:
        buffer: queue.Queue[tuple[int, Any]] = queue.Queue(maxsize=self.buffer_size)
        stop = threading.Event()

        def put(message: tuple[int, Any]) -> bool:
            while not stop.is_set():
                try:
                    buffer.put(message, timeout=_POLL)
                    return True
                except queue.Full:
                    continue
            return False

        def produce() -> None:
            try:
                for item in self.source_datapipe:
                    if not put((_ITEM, item)):
                        return
                put((_END, None))
            except BaseException as error:  # noqa: BLE001 (handed to the consumer)
                put((_ERROR, error))

        thread = threading.Thread(target=produce, name="emberdata-prefetch", daemon=True)
        thread.start()
        try:
            while True:
                kind, value = buffer.get()
                if kind == _ITEM:
                    yield value
                elif kind == _END:
                    return
                else:
                    raise value
        finally:
            stop.set()
            thread.join(timeout=1.0)

    def __len__(self) -> int:
        return self._source_len(self.source_datapipe)
