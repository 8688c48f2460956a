"""Adapters: functions DataLoader2 applies to the pipeline once, at construction
(``torchdata.dataloader2.adapter``)."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from emberdata.datapipes.utils import apply_shuffle_settings, list_dps, traverse_dps

__all__ = ["Adapter", "CacheTimeout", "Shuffle"]


class Adapter:
    """A callable from a DataPipe graph to a DataPipe graph."""

    @abstractmethod
    def __call__(self, datapipe: Any) -> Any: ...


class Shuffle(Adapter):
    """Turns every Shuffler of the graph on (``enable=True``) or off; with ``enable=True`` and
    no Shuffler, one is appended (with a warning).

    >>> from emberdata.datapipes.iter import IterableWrapper
    >>> dp = Shuffle(False)(IterableWrapper(range(4)).shuffle())
    >>> list(dp)
    [0, 1, 2, 3]
    """

    def __init__(self, enable: bool = True) -> None:
        self.enable = enable

    def __call__(self, datapipe: Any) -> Any:
        return apply_shuffle_settings(datapipe, shuffle=self.enable)


class CacheTimeout(Adapter):
    """Sets how long the pipes of the graph that wait on something outside the pipeline may
    wait, in seconds: every pipe with a ``timeout`` it reads while waiting (HttpReader,
    OnlineReader). torchdata's CacheTimeout sets the wait of its on-disk cache, which emberdata
    does not have; the adapter is the same kind of knob, applied to the waits emberdata has."""

    def __init__(self, timeout: float | None = None) -> None:
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0
        ):
            raise ValueError(f"CacheTimeout expected a positive timeout or None, got {timeout!r}")
        self.timeout = timeout

    def __call__(self, datapipe: Any) -> Any:
        for dp in list_dps(traverse_dps(datapipe)):
            if getattr(type(dp), "_waits_with_timeout", False):
                dp.timeout = self.timeout
        return datapipe
