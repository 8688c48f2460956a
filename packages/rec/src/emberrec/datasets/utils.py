"""What the dataset readers share (TorchRec's ``torchrec.datasets.utils``): the ``Batch`` a
recommendation model trains on, train/validation splits, and a delimited-file reader that knows
the file and line of every row, so a bad row is reported where it is."""

from __future__ import annotations

import csv
import random
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Any

from emberdata.datapipes.iter import IterDataPipe
from emberrec.datasets.batch import Batch as Batch  # TorchRec's path to it


def safe_cast(val: Any, dest_type: Callable[[Any], Any], default: Any) -> Any:
    """``dest_type(val)``, or ``default`` when that raises ValueError (TorchRec's helper)."""
    try:
        return dest_type(val)
    except ValueError:
        return default


class ReadRows(IterDataPipe[tuple[str, int, list[str]]]):
    """Reads delimited text files and yields ``(path, line_number, fields)`` per row (lines from 1).

    ``skip_first_line`` drops a header. Files open lazily, one at a time, and close once read.
    """

    def __init__(self, paths: Iterable[str], *, delimiter: str = "\t", skip_first_line: bool = False,
                 encoding: str = "utf-8", **fmtparams: Any) -> None:
        self.paths = paths
        self.delimiter = delimiter
        self.skip_first_line = skip_first_line
        self.encoding = encoding
        self.fmtparams = fmtparams

    def __iter__(self) -> Iterator[tuple[str, int, list[str]]]:
        for path in self.paths:
            if not isinstance(path, str):
                raise TypeError(f"expected a str path, got {type(path).__name__}")
            with open(path, encoding=self.encoding, newline="") as stream:
                reader = csv.reader(stream, delimiter=self.delimiter, **self.fmtparams)
                if self.skip_first_line:
                    next(reader, None)
                for row in reader:
                    if row:  # a blank line (a trailing newline) is no row
                        yield path, reader.line_num, row


def _map_row(row_mapper: Callable[[list[str]], Any] | None, num_columns: tuple[int, ...],
             item: tuple[str, int, list[str]]) -> Any:
    path, line, row = item
    if len(row) not in num_columns:
        expected = " or ".join(str(n) for n in num_columns)
        raise ValueError(f"{path}, line {line}: expected {expected} columns, got {len(row)}")
    if row_mapper is None:
        return row
    try:
        return row_mapper(row)
    except ValueError as error:
        raise ValueError(f"{path}, line {line}: {error}") from error


def map_rows(rows: IterDataPipe[tuple[str, int, list[str]]], row_mapper: Callable[[list[str]], Any] | None,
             num_columns: tuple[int, ...]) -> IterDataPipe[Any]:
    """Checks each row's column count and applies ``row_mapper``; any ValueError names the file and line."""
    # A partial of a module function, not a closure: the pipe stays picklable for worker processes.
    return rows.map(partial(_map_row, row_mapper, num_columns))


class _IdxFilter(IterDataPipe[Any]):
    def __init__(self, datapipe: IterDataPipe[Any], filter_fn: Callable[[int], bool]) -> None:
        self.datapipe = datapipe
        self.filter_fn = filter_fn

    def __iter__(self) -> Iterator[Any]:
        for idx, data in enumerate(self.datapipe):
            if self.filter_fn(idx):
                yield data


def _default_key_fn(idx: int) -> int:
    return idx


def train_filter(key_fn: Callable[[int], int], train_perc: float, decimal_places: int, idx: int) -> bool:
    return (key_fn(idx) % 10**decimal_places) < round(train_perc * 10**decimal_places)


def val_filter(key_fn: Callable[[int], int], train_perc: float, decimal_places: int, idx: int) -> bool:
    return not train_filter(key_fn, train_perc, decimal_places, idx)


def idx_split_train_val(datapipe: IterDataPipe[Any], train_perc: float, decimal_places: int = 2,
                        key_fn: Callable[[int], int] = _default_key_fn) -> tuple[IterDataPipe[Any], IterDataPipe[Any]]:
    """Splits by item index: item ``i`` is in train when ``key_fn(i) % 10**decimal_places`` is below
    ``train_perc * 10**decimal_places``; the two pipes are disjoint and cover the source."""
    if not 0.0 < train_perc < 1.0:
        raise ValueError(f"train_perc must be in range (0.0, 1.0), got {train_perc}")
    return (_IdxFilter(datapipe, partial(train_filter, key_fn, train_perc, decimal_places)),
            _IdxFilter(datapipe, partial(val_filter, key_fn, train_perc, decimal_places)))


class _RandFilter(IterDataPipe[Any]):
    def __init__(self, datapipe: IterDataPipe[Any], filter_fn: Callable[[random.Random], bool],
                 rand_gen: random.Random) -> None:
        self.datapipe = datapipe
        self.filter_fn = filter_fn
        self.rand_gen = rand_gen
        self.rand_gen_init_state = rand_gen.getstate()

    def __iter__(self) -> Iterator[Any]:
        # Both halves replay the same draws, so they stay complementary on every pass.
        self.rand_gen.setstate(self.rand_gen_init_state)
        for data in self.datapipe:
            if self.filter_fn(self.rand_gen):
                yield data


def _rand_train_filter_fn(train_perc: float, rand_gen: random.Random) -> bool:
    return rand_gen.random() < train_perc


def _rand_val_filter_fn(train_perc: float, rand_gen: random.Random) -> bool:
    return not _rand_train_filter_fn(train_perc, rand_gen)


def rand_split_train_val(datapipe: IterDataPipe[Any], train_perc: float,
                         random_seed: int = 0) -> tuple[IterDataPipe[Any], IterDataPipe[Any]]:
    """Splits by a seeded uniform draw per item: disjoint train and validation pipes, the same on
    every pass for the same ``random_seed``."""
    if not 0.0 < train_perc < 1.0:
        raise ValueError(f"train_perc must be in range (0.0, 1.0), got {train_perc}")
    return (_RandFilter(datapipe, partial(_rand_train_filter_fn, train_perc), random.Random(random_seed)),
            _RandFilter(datapipe, partial(_rand_val_filter_fn, train_perc), random.Random(random_seed)))


