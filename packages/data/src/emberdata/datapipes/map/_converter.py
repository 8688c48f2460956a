"""Conversions between the two kinds of pipe: ``to_iter_datapipe`` and ``to_map_datapipe``."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from emberdata.datapipes._base import IterDataPipe, MapDataPipe
from emberdata.datapipes.iter._grouping import _check_callable


class MapToIterConverter(IterDataPipe[Any]):
    """Yields ``datapipe[i]`` for ``i`` in ``indices`` (default ``range(len(datapipe))``)
    (functional name of MapDataPipe: ``to_iter_datapipe``).

    >>> from emberdata.datapipes.map import SequenceWrapper
    >>> list(SequenceWrapper("abc").to_iter_datapipe())
    ['a', 'b', 'c']
    """

    def __init__(self, datapipe: MapDataPipe[Any], indices: Sequence[Any] | None = None) -> None:
        if not isinstance(datapipe, MapDataPipe):
            raise TypeError(
                f"MapToIterConverter expected a MapDataPipe, but got {type(datapipe).__name__}"
            )
        self.datapipe = datapipe
        self.indices = None if indices is None else list(indices)

    def __iter__(self) -> Iterator[Any]:
        indices = range(len(self.datapipe)) if self.indices is None else self.indices
        for i in indices:
            yield self.datapipe[i]

    def __len__(self) -> int:
        return len(self.datapipe) if self.indices is None else len(self.indices)


class IterToMapConverter(MapDataPipe[Any]):
    """A MapDataPipe of the ``(key, value)`` pairs of an IterDataPipe (functional name of
    IterDataPipe: ``to_map_datapipe``). ``key_value_fn(item)`` gives the pair (default: the
    item is one). The source is read once, at the first lookup; a repeated key warns and the
    later value wins.

    >>> from emberdata.datapipes.iter import IterableWrapper
    >>> dp = IterableWrapper(["a1", "b2"]).to_map_datapipe(lambda s: (s[0], int(s[1])))
    >>> dp["b"], len(dp)
    (2, 2)
    """

    def __init__(
        self,
        datapipe: IterDataPipe[Any],
        key_value_fn: Callable[[Any], tuple[Any, Any]] | None = None,
    ) -> None:
        if not isinstance(datapipe, IterDataPipe):
            raise TypeError(
                f"IterToMapConverter expected an IterDataPipe, but got {type(datapipe).__name__}"
            )
        if key_value_fn is not None:
            _check_callable(self, "key_value_fn", key_value_fn)
        self.datapipe = datapipe
        self.key_value_fn = key_value_fn
        self._map: dict[Any, Any] | None = None

    def _load(self) -> dict[Any, Any]:
        if self._map is None:
            loaded: dict[Any, Any] = {}
            for item in self.datapipe:
                pair = item if self.key_value_fn is None else self.key_value_fn(item)
                if not isinstance(pair, Sequence) or isinstance(pair, (str, bytes)) or len(
                    pair
                ) != 2:
                    raise TypeError(
                        f"{type(self).__name__} needs (key, value) pairs, but got {pair!r}; pass "
                        "a key_value_fn"
                    )
                key, value = pair
                if key in loaded:
                    warnings.warn(f"Found duplicate key {key!r}; the later value wins",
                                  stacklevel=3)
                loaded[key] = value
            self._map = loaded
        return self._map

    def __getitem__(self, key: Any) -> Any:
        try:
            return self._load()[key]
        except KeyError:
            raise KeyError(f"{type(self).__name__}: key {key!r} not found") from None

    def __len__(self) -> int:
        return len(self._load())

    def __iter__(self) -> Iterator[Any]:
        return iter(self._load())

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_map"] = None  # reloaded where it is used
        return state


MapDataPipe.register_datapipe_as_function("to_iter_datapipe", MapToIterConverter)
IterDataPipe.register_datapipe_as_function("to_map_datapipe", IterToMapConverter)
