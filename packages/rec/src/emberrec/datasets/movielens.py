"""MovieLens 20M/25M (TorchRec's ``torchrec.datasets.movielens``) as emberdata pipes over the
local ``ratings.csv`` (``userId,movieId,rating,timestamp``) and, joined on ``movieId``,
``movies.csv`` (``movieId,title,genres``) of an unpacked release directory ``root``.

Unlike TorchRec, which reads a malformed number as 0, a row with a wrong column count or a
malformed number, or a rating of a movie missing from ``movies.csv``, raises ValueError naming
the file and line.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from emberdata.datapipes.iter import IterDataPipe
from emberrec.datasets.utils import ReadRows, map_rows

RATINGS_FILENAME = "ratings.csv"
MOVIES_FILENAME = "movies.csv"
DEFAULT_RATINGS_COLUMN_NAMES: list[str] = ["userId", "movieId", "rating", "timestamp"]
DEFAULT_MOVIES_COLUMN_NAMES: list[str] = ["movieId", "title", "genres"]
DEFAULT_COLUMN_NAMES: list[str] = DEFAULT_RATINGS_COLUMN_NAMES + DEFAULT_MOVIES_COLUMN_NAMES[1:]
_CASTERS: list[Callable[[str], Any]] = [int, int, float, int, str, str]


def _default_row_mapper(example: list[str]) -> dict[str, float | int | str]:
    row: dict[str, float | int | str] = {}
    for name, cast, value in zip(DEFAULT_COLUMN_NAMES, _CASTERS, example, strict=False):
        try:
            row[name] = cast(value)
        except ValueError:
            raise ValueError(f"column {name}: expected {cast.__name__}, got {value!r}") from None
    return row


def _movies_by_id(root: str) -> dict[str, list[str]]:
    movies = {}
    for path, line, row in ReadRows([os.path.join(root, MOVIES_FILENAME)], delimiter=",", skip_first_line=True):
        if len(row) != len(DEFAULT_MOVIES_COLUMN_NAMES):
            raise ValueError(f"{path}, line {line}: expected {len(DEFAULT_MOVIES_COLUMN_NAMES)} columns, got {len(row)}")
        movies[row[0]] = row[1:]
    return movies


class _JoinMovies(IterDataPipe[tuple[str, int, list[str]]]):
    """Appends ``title, genres`` to each rating row; movies.csv is read when iteration starts."""

    def __init__(self, ratings: IterDataPipe[tuple[str, int, list[str]]], root: str) -> None:
        self.ratings = ratings
        self.root = root

    def __iter__(self):
        movies = _movies_by_id(self.root)
        for path, line, row in self.ratings:
            if len(row) == len(DEFAULT_RATINGS_COLUMN_NAMES):
                if row[1] not in movies:
                    raise ValueError(f"{path}, line {line}: movieId {row[1]} is not in {MOVIES_FILENAME}")
                row = row + movies[row[1]]
            yield path, line, row  # a row of another width fails the column check after the join


def _movielens(root: str, *, include_movies_data: bool = False,
               row_mapper: Callable[[list[str]], Any] | None = _default_row_mapper, **open_kw: Any) -> IterDataPipe[Any]:
    rows: IterDataPipe[tuple[str, int, list[str]]] = ReadRows(
        [os.path.join(root, RATINGS_FILENAME)], delimiter=",", skip_first_line=True, **open_kw)
    width = len(DEFAULT_RATINGS_COLUMN_NAMES)
    if include_movies_data:
        rows = _JoinMovies(rows, root)
        width = len(DEFAULT_COLUMN_NAMES)
    return map_rows(rows, row_mapper, (width,))


def movielens_20m(root: str, *, include_movies_data: bool = False,
                  row_mapper: Callable[[list[str]], Any] | None = _default_row_mapper, **open_kw: Any) -> IterDataPipe[Any]:
    """MovieLens 20M (https://grouplens.org/datasets/movielens/20m/) from the directory ``root``.

    Yields ``{"userId": int, "movieId": int, "rating": float, "timestamp": int}`` per rating, plus
    ``"title"`` and ``"genres"`` with ``include_movies_data=True``.
    """
    return _movielens(root, include_movies_data=include_movies_data, row_mapper=row_mapper, **open_kw)


def movielens_25m(root: str, *, include_movies_data: bool = False,
                  row_mapper: Callable[[list[str]], Any] | None = _default_row_mapper, **open_kw: Any) -> IterDataPipe[Any]:
    """MovieLens 25M (https://grouplens.org/datasets/movielens/25m/); the same layout as 20M."""
    return _movielens(root, include_movies_data=include_movies_data, row_mapper=row_mapper, **open_kw)
