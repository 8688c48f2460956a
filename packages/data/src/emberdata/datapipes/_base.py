"""IterDataPipe and MapDataPipe, and the registration of functional forms
(torch.utils.data.datapipes).

Both bases are ember datasets: an IterDataPipe is an ``ember.utils.data.IterableDataset``, a
MapDataPipe an ``ember.utils.data.Dataset``, so ``DataLoader`` takes either (see Note [DataLoader
pipeline protocol] in ``emberdata.datapipes._loader``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from ember.utils.data import Dataset, IterableDataset

T_co = TypeVar("T_co", covariant=True)

__all__ = ["DataChunk", "IterDataPipe", "MapDataPipe", "functional_datapipe"]


class _ArgumentError(ValueError, AssertionError):
    """A bad argument value where torchdata used ``assert``.

    torchdata validates some arguments with ``assert`` (an AssertionError that ``python -O``
    removes); emberdata always checks and raises ValueError, which also subclasses
    AssertionError so code written against torchdata keeps catching it.
    """


class DataChunk(list):  # type: ignore[type-arg]
    """A batch: a list that Batcher-like pipes yield (``torch.utils.data.DataChunk``)."""

    def as_str(self, indent: str = "") -> str:
        return indent + "[" + ", ".join(str(item) for item in self) + "]"

    def raw_iterator(self) -> Iterator[Any]:
        yield from self


def _is_datapipe(value: object) -> bool:
    return isinstance(value, (IterDataPipe, MapDataPipe))


class _DataPipeBase:
    """What both kinds of pipe share: the functional registry, reset, graph edges, errors."""

    functions: ClassVar[dict[str, Callable[..., Any]]]

    def __getattr__(self, attribute_name: str) -> Any:
        # Only reached for names that are not real attributes; dunders never resolve here, so
        # pickle and copy see ordinary objects.
        registry = type(self)._registry()
        if not attribute_name.startswith("__") and attribute_name in registry:
            registered = registry[attribute_name]
            function = functools.partial(registered, self)
            functools.update_wrapper(function, registered, assigned=("__doc__",))
            return function
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{attribute_name}'")

    @classmethod
    def _registry(cls) -> dict[str, Callable[..., Any]]:
        raise NotImplementedError

    def __dir__(self) -> Iterable[str]:
        return [*super().__dir__(), *type(self)._registry()]

    def __repr__(self) -> str:
        return type(self).__qualname__

    def reset(self) -> None:
        """Drop per-epoch state (buffers, positions); called when a new epoch starts."""

    def source_datapipes(self) -> tuple[Any, ...]:
        """The pipes this pipe reads from, in attribute order, without duplicates.

        The default finds attributes that hold a DataPipe, or a tuple or list of them; override
        it when sources are held some other way.
        """
        found: dict[int, Any] = {}
        for value in vars(self).values():
            if _is_datapipe(value):
                found.setdefault(id(value), value)
            elif isinstance(value, (tuple, list)) and value and all(map(_is_datapipe, value)):
                for v in value:
                    found.setdefault(id(v), v)
        return tuple(found.values())

    def _source_len(self, source: Any) -> int:
        try:
            return len(source)
        except TypeError as error:
            raise TypeError(f"{type(self).__name__} instance doesn't have valid length") from error

    def __len__(self) -> int:
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")

    @classmethod
    def register_function(cls, function_name: str, function: Callable[..., Any]) -> None:
        cls._registry()[function_name] = function

    @classmethod
    def register_datapipe_as_function(
        cls, function_name: str, cls_to_register: Callable[..., Any]
    ) -> None:
        """Make ``dp.<function_name>(*args, **kwargs)`` build ``cls_to_register(dp, ...)``."""
        registry = cls._registry()
        if function_name in registry:
            raise ValueError(
                f"Unable to add DataPipe function name {function_name} as it is already taken"
            )

        def class_function(source_dp: Any, *args: Any, **kwargs: Any) -> Any:
            return cls_to_register(source_dp, *args, **kwargs)

        functools.update_wrapper(class_function, cls_to_register, assigned=("__doc__",))
        class_function.__name__ = function_name
        registry[function_name] = class_function


class IterDataPipe(_DataPipeBase, IterableDataset, Generic[T_co]):
    """An iterable stage of a data pipeline.

    Subclasses implement ``__iter__`` (and ``__len__`` where the length is known). Classes
    decorated with :func:`functional_datapipe` are also reachable as methods of every
    IterDataPipe: ``dp.map(fn)`` is ``Mapper(dp, fn)``.

    ``source_datapipes()`` lists the pipes a pipe reads from; the graph utilities in
    :mod:`emberdata.datapipes.utils` walk it to apply sharding and seeds.
    """

    functions: ClassVar[dict[str, Callable[..., Any]]] = {}

    @classmethod
    def _registry(cls) -> dict[str, Callable[..., Any]]:
        return IterDataPipe.functions

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __getitem__(self, index: Any) -> Any:
        raise TypeError(f"'{type(self).__name__}' object is not subscriptable (an IterDataPipe)")

    # The DataLoader's side of Note [DataLoader pipeline protocol]; kept in _loader.py.
    def _dataloader_shuffle(self, shuffle: bool) -> IterDataPipe[Any]:
        from emberdata.datapipes._loader import dataloader_shuffle

        return dataloader_shuffle(self, shuffle)

    def _dataloader_start_epoch(
        self, seed: int, worker_id: int, num_workers: int, batch_size: int | None
    ) -> None:
        from emberdata.datapipes._loader import dataloader_start_epoch

        dataloader_start_epoch(self, seed, worker_id, num_workers, batch_size)

    if TYPE_CHECKING:
        # Static signatures of the most used functional forms (the runtime goes through
        # __getattr__ and the registry).
        def map(
            self, fn: Callable[[Any], Any], input_col: Any = None, output_col: Any = None
        ) -> IterDataPipe[Any]: ...
        def filter(
            self, filter_fn: Callable[[Any], bool], input_col: Any = None
        ) -> IterDataPipe[T_co]: ...
        def batch(
            self, batch_size: int, drop_last: bool = False, wrapper_class: type = DataChunk
        ) -> IterDataPipe[list[T_co]]: ...
        def header(self, limit: int | None = 10) -> IterDataPipe[T_co]: ...
        def enumerate(self, starting_index: int = 0) -> IterDataPipe[tuple[int, T_co]]: ...
        def zip(self, *datapipes: IterDataPipe[Any]) -> IterDataPipe[tuple[Any, ...]]: ...
        def concat(self, *datapipes: IterDataPipe[Any]) -> IterDataPipe[Any]: ...
        def cycle(self, count: int | None = None) -> IterDataPipe[T_co]: ...
        def shuffle(
            self, *, buffer_size: int = 10000, unbatch_level: int = 0
        ) -> IterDataPipe[T_co]: ...
        def sharding_filter(self, sharding_group_filter: Any = None) -> IterDataPipe[T_co]: ...


class MapDataPipe(_DataPipeBase, Dataset, Generic[T_co]):
    """A map-style stage: ``dp[key]`` gives a sample. Subclasses implement ``__getitem__`` and
    usually ``__len__``. Functional forms registered for MapDataPipe (``dp.map(fn)``,
    ``dp.batch(n)``, ...) are separate from the IterDataPipe ones."""

    functions: ClassVar[dict[str, Callable[..., Any]]] = {}

    @classmethod
    def _registry(cls) -> dict[str, Callable[..., Any]]:
        return MapDataPipe.functions

    def __getitem__(self, index: Any) -> T_co:
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __iter__(self) -> Iterator[T_co]:
        # Indices 0 .. len-1; a MapDataPipe without a length iterates until IndexError.
        try:
            n = len(self)
        except TypeError:
            i = 0
            while True:
                try:
                    yield self[i]
                except IndexError:
                    return
                i += 1
        else:
            for i in range(n):
                yield self[i]


_D = TypeVar("_D", bound=type)


class functional_datapipe:
    """Class decorator registering a DataPipe under a functional name: an IterDataPipe class
    becomes a method of every IterDataPipe, a MapDataPipe class of every MapDataPipe.

    >>> @functional_datapipe("double")
    ... class Doubler(IterDataPipe):
    ...     def __init__(self, source_datapipe):
    ...         self.source_datapipe = source_datapipe
    ...     def __iter__(self):
    ...         for x in self.source_datapipe:
    ...             yield 2 * x
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, cls: _D) -> _D:
        if isinstance(cls, type) and issubclass(cls, IterDataPipe):
            IterDataPipe.register_datapipe_as_function(self.name, cls)
        elif isinstance(cls, type) and issubclass(cls, MapDataPipe):
            MapDataPipe.register_datapipe_as_function(self.name, cls)
        else:
            raise TypeError(
                "`functional_datapipe` can only decorate IterDataPipe or MapDataPipe, but got "
                f"{cls!r}"
            )
        return cls
