"""Pipes that apply a function: Mapper, Filter, FlatMapper, Collator."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from emberdata.datapipes._base import IterDataPipe, functional_datapipe
from emberdata.datapipes.iter._grouping import _check_callable

T = TypeVar("T")


def _check_input_col(owner: object, fn: Callable[..., Any], input_col: Any) -> None:
    """``fn`` must accept one positional argument per column of ``input_col``."""
    wanted = len(input_col) if isinstance(input_col, (list, tuple)) else 1
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins without a signature: let the call decide
        return
    positional = [
        p for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if any(p.kind is p.VAR_POSITIONAL for p in signature.parameters.values()):
        return
    required = [p for p in positional if p.default is p.empty]
    if not len(required) <= wanted <= len(positional):
        raise ValueError(
            f"{type(owner).__name__}: the function {getattr(fn, '__name__', fn)!r} takes "
            f"{len(positional)} positional parameters ({len(required)} required), but "
            f"input_col={input_col!r} passes {wanted}"
        )


def _columns(data: Any, input_col: Any) -> tuple[Any, ...]:
    if isinstance(input_col, (list, tuple)):
        return tuple(data[col] for col in input_col)
    return (data[input_col],)


@functional_datapipe("map")
class Mapper(IterDataPipe[Any]):
    """Applies ``fn`` to every item (functional name: ``map``).

    Args:
        datapipe: the source
        fn: the function
        input_col: apply ``fn`` to ``item[input_col]`` instead of the item; a list or tuple of
            columns passes one argument per column
        output_col: where the result goes: by default it replaces ``input_col`` (the first of
            several input columns, the others are removed); ``-1`` appends it. Only with
            ``input_col``.

    A list or dict item is copied before a column is replaced, so the source's items never
    change (torchdata changes them in place); tuples come back as tuples.

    >>> list(IterableWrapper(range(4)).map(lambda x: x * 10))
    [0, 10, 20, 30]
    >>> list(IterableWrapper([(1, 2), (3, 4)]).map(lambda x: -x, input_col=1))
    [(1, -2), (3, -4)]
    """

    def __init__(
        self,
        datapipe: IterDataPipe[Any],
        fn: Callable[..., Any],
        input_col: Any = None,
        output_col: Any = None,
    ) -> None:
        _check_callable(self, "fn", fn)
        if input_col is None and output_col is not None:
            raise ValueError("`output_col` must be None when `input_col` is None.")
        if isinstance(output_col, (list, tuple)):
            if len(output_col) != 1:
                raise ValueError("`output_col` must be a single-element list or tuple")
            output_col = output_col[0]
        if input_col is not None:
            _check_input_col(self, fn, input_col)
        self.datapipe = datapipe
        self.fn = fn
        self.input_col = input_col
        self.output_col = output_col

    def _apply(self, data: Any) -> Any:
        result = self.fn(*_columns(data, self.input_col))
        is_tuple = isinstance(data, tuple)
        data = list(data) if is_tuple else (data.copy() if hasattr(data, "copy") else data)
        if self.output_col is None:
            if isinstance(self.input_col, (list, tuple)):
                data[self.input_col[0]] = result
                for col in sorted(self.input_col[1:], reverse=True):
                    del data[col]
            else:
                data[self.input_col] = result
        elif self.output_col == -1 and isinstance(data, list):
            data.append(result)
        else:
            data[self.output_col] = result
        return tuple(data) if is_tuple else data

    def __iter__(self) -> Iterator[Any]:
        if self.input_col is None:
            return map(self.fn, self.datapipe)  # the loop runs in C
        return map(self._apply, self.datapipe)

    def __len__(self) -> int:
        return self._source_len(self.datapipe)


@functional_datapipe("filter")
class Filter(IterDataPipe[T]):
    """Keeps the items for which ``filter_fn`` returns True (functional name: ``filter``).

    ``filter_fn`` gets ``item[input_col]`` (one argument per column for a list of columns)
    when ``input_col`` is given. It must return a ``bool``; anything else raises ValueError.
    The output has no length.

    >>> list(IterableWrapper(range(6)).filter(lambda x: x % 2 == 0))
    [0, 2, 4]
    """

    def __init__(
        self, datapipe: IterDataPipe[T], filter_fn: Callable[..., bool], input_col: Any = None
    ) -> None:
        _check_callable(self, "filter_fn", filter_fn)
        if input_col is not None:
            _check_input_col(self, filter_fn, input_col)
        self.datapipe = datapipe
        self.filter_fn = filter_fn
        self.input_col = input_col

    def __iter__(self) -> Iterator[T]:
        filter_fn, input_col = self.filter_fn, self.input_col
        for item in self.datapipe:
            if input_col is None:
                condition = filter_fn(item)
            else:
                condition = filter_fn(*_columns(item, input_col))
            if condition is True:
                yield item
            elif condition is not False:
                raise ValueError(
                    f"Boolean output is required for `filter_fn` of {type(self).__name__}, "
                    f"but got {type(condition).__name__} ({condition!r})"
                )


def _identity(x: T) -> T:
    return x


@functional_datapipe("flatmap")
class FlatMapper(IterDataPipe[Any]):
    """Applies ``fn`` to every item and yields the items of the iterable it returns
    (functional name: ``flatmap``); without ``fn`` it flattens one level.

    >>> list(IterableWrapper(["ab", "c"]).flatmap(list))
    ['a', 'b', 'c']
    """

    def __init__(
        self,
        datapipe: IterDataPipe[Any],
        fn: Callable[..., Iterable[Any]] | None = None,
        input_col: Any = None,
    ) -> None:
        fn = _identity if fn is None else fn
        _check_callable(self, "fn", fn)
        if input_col is not None:
            _check_input_col(self, fn, input_col)
        self.datapipe = datapipe
        self.fn = fn
        self.input_col = input_col

    def __iter__(self) -> Iterator[Any]:
        for item in self.datapipe:
            if self.input_col is None:
                yield from self.fn(item)
            else:
                yield from self.fn(*_columns(item, self.input_col))


def _default_collate(batch: Any) -> Any:
    from ember.utils.data import default_collate

    return default_collate(batch)


class _ColumnCollate:
    """``{key: fn}`` collation: the batch's ``key`` column goes through ``fn``; other keys are
    collated with default_collate."""

    def __init__(self, conversion: dict[Any, Callable[[list[Any]], Any]]) -> None:
        for key, fn in conversion.items():
            if not callable(fn):
                raise TypeError(
                    f"Collator expected a callable for column {key!r}, but got "
                    f"{type(fn).__name__}"
                )
        self.conversion = conversion

    def __call__(self, batch: list[dict[Any, Any]]) -> dict[Any, Any]:
        if not batch or not all(isinstance(sample, dict) for sample in batch):
            raise TypeError("Collator with a dict conversion expects a non-empty batch of dicts")
        return {
            key: self.conversion.get(key, _default_collate)([sample[key] for sample in batch])
            for key in batch[0]
        }


@functional_datapipe("collate")
class Collator(Mapper):
    """Turns each batch into a collated batch (functional name: ``collate``).

    Args:
        datapipe: a pipe of batches (lists of samples)
        conversion: the collate function, :func:`ember.utils.data.default_collate` by default,
            or a ``{key: fn}`` dict for batches of dicts (each column through its own
            function, the rest through default_collate)
        collate_fn: a collate function; takes precedence over ``conversion``

    >>> list(IterableWrapper(range(4)).batch(2).collate(collate_fn=sum))
    [1, 5]
    """

    def __init__(
        self,
        datapipe: IterDataPipe[Any],
        conversion: Callable[..., Any] | dict[Any, Callable[..., Any]] | None = _default_collate,
        collate_fn: Callable[..., Any] | None = None,
    ) -> None:
        if collate_fn is not None:
            fn = collate_fn
        elif isinstance(conversion, dict):
            fn = _ColumnCollate(conversion)
        elif callable(conversion):
            fn = conversion
        else:
            raise TypeError(
                "Collator expected a callable or dict `conversion`, or a `collate_fn`, but got "
                f"conversion={conversion!r}"
            )
        super().__init__(datapipe, fn)
