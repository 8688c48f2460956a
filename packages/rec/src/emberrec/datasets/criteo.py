"""Criteo click logs (TorchRec's ``torchrec.datasets.criteo``) as emberdata pipes over local TSV files.

A row is ``label, int_0..int_12, cat_0..cat_25`` separated by tabs (40 columns; the Kaggle test
file has no label: 39). Integers may be empty (read as 0); categoricals are 32-bit hex strings
or empty. ``criteo_terabyte``/``criteo_kaggle`` yield one dict per row, as TorchRec's do;
``criteo_batches`` turns such rows into model-ready :class:`~emberrec.datasets.utils.Batch` es:

    dense_features  (B, 13) float32  log(max(x, 0) + 1)     (the DLRM reference's transform; TorchRec's
                                                             offline preprocessing shifts by the file's
                                                             minimum instead, which a stream cannot know)
    sparse_features KJT, keys cat_0..cat_25, one id per sample and feature:
                    int(hex, 16) % hashes[i]  (empty -> 0), lengths all 1
    labels          (B,) int64

Unlike TorchRec, which reads a malformed integer as 0, a row with a wrong column count or a
non-numeric integer or label, or a categorical that is not hex, raises ValueError naming the
file and line.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from typing import Any

import ember
from emberdata.datapipes.iter import IterDataPipe
from emberrec.datasets.utils import Batch, ReadRows, map_rows
from emberrec.sparse.jagged_tensor import KeyedJaggedTensor

INT_FEATURE_COUNT = 13
CAT_FEATURE_COUNT = 26
DAYS = 24
DEFAULT_LABEL_NAME = "label"
DEFAULT_INT_NAMES: list[str] = [f"int_{idx}" for idx in range(INT_FEATURE_COUNT)]
DEFAULT_CAT_NAMES: list[str] = [f"cat_{idx}" for idx in range(CAT_FEATURE_COUNT)]
DEFAULT_COLUMN_NAMES: list[str] = [DEFAULT_LABEL_NAME, *DEFAULT_INT_NAMES, *DEFAULT_CAT_NAMES]
_NUM_COLUMNS = (len(DEFAULT_COLUMN_NAMES), len(DEFAULT_COLUMN_NAMES) - 1)


def _int_or_zero(name: str, value: str) -> int:
    if value == "":
        return 0
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"column {name}: expected an integer, got {value!r}") from None


def _hex_or_empty(name: str, value: str) -> str:
    if value != "":
        try:
            int(value, 16)
        except ValueError:
            raise ValueError(f"column {name}: expected a hex string, got {value!r}") from None
    return value


def _default_row_mapper(example: list[str]) -> dict[str, int | str]:
    # Columns are named from the end, so a 39-column (unlabelled test) row gets no "label".
    names = DEFAULT_COLUMN_NAMES[len(DEFAULT_COLUMN_NAMES) - len(example):]
    row: dict[str, int | str] = {}
    for name, value in zip(names, example, strict=True):
        row[name] = _hex_or_empty(name, value) if name.startswith("cat_") else _int_or_zero(name, value)
    return row


class CriteoIterDataPipe(IterDataPipe[Any]):
    """Yields ``row_mapper(fields)`` for every row of the Criteo-format TSV files at ``paths``.

    With the default mapper a row is ``{"label": int, "int_0": int, ..., "cat_25": str}``;
    ``row_mapper=None`` yields the raw field lists (column count still checked).
    """

    def __init__(self, paths: Iterable[str], *,
                 row_mapper: Callable[[list[str]], Any] | None = _default_row_mapper, **open_kw: Any) -> None:
        self.paths = list(paths) if not isinstance(paths, str) else [paths]
        self.row_mapper = row_mapper
        self.open_kw = open_kw

    def __iter__(self) -> Iterator[Any]:
        rows = ReadRows(self.paths, delimiter="\t", **self.open_kw)
        yield from map_rows(rows, self.row_mapper, _NUM_COLUMNS)


def criteo_terabyte(paths: Iterable[str], *, row_mapper: Callable[[list[str]], Any] | None = _default_row_mapper,
                    **open_kw: Any) -> IterDataPipe[Any]:
    """The Criteo 1TB click logs: one pipe over the day files at ``paths`` (``day_0.tsv`` ...)."""
    return CriteoIterDataPipe(paths, row_mapper=row_mapper, **open_kw)


def criteo_kaggle(path: str, *, row_mapper: Callable[[list[str]], Any] | None = _default_row_mapper,
                  **open_kw: Any) -> IterDataPipe[Any]:
    """The Criteo Kaggle display-advertising file at ``path`` (``train.txt`` or ``test.txt``)."""
    return CriteoIterDataPipe((path,), row_mapper=row_mapper, **open_kw)


def _check_hashes(hashes: Sequence[int] | None, count: int) -> list[int] | None:
    if hashes is None:
        return None
    hashes = list(hashes)
    if len(hashes) != count or any(isinstance(h, bool) or not isinstance(h, int) or h <= 0 for h in hashes):
        raise ValueError(f"hashes must be {count} positive ints (one per categorical feature), got {hashes}")
    return hashes


def rows_to_batch(rows: Sequence[dict[str, Any]], hashes: Sequence[int] | None = None,
                  int_names: Sequence[str] = DEFAULT_INT_NAMES,
                  cat_names: Sequence[str] = DEFAULT_CAT_NAMES) -> Batch:
    """Collates row dicts (the default row mapper's) into one :class:`Batch` (see the module doc).

    ``hashes[i]`` bounds feature ``cat_names[i]``'s ids (the table's ``num_embeddings``); without
    it the raw 32-bit ids are kept.
    """
    hashes = _check_hashes(hashes, len(cat_names))
    if not rows:
        raise ValueError("cannot make a Batch of zero rows")
    if any(DEFAULT_LABEL_NAME not in row for row in rows):
        raise ValueError("a training Batch needs labelled rows; these rows have no 'label' column")
    dense = [[math.log(max(row[name], 0) + 1) for name in int_names] for row in rows]
    values = []
    for i, name in enumerate(cat_names):  # feature-major, as a KJT lays values out
        ids = [int(row[name], 16) if row[name] else 0 for row in rows]
        values.extend(ids if hashes is None else [v % hashes[i] for v in ids])
    sparse = KeyedJaggedTensor.from_lengths_sync(
        keys=list(cat_names),
        values=ember.tensor(values, dtype=ember.int64),
        lengths=ember.ones(len(cat_names) * len(rows), dtype=ember.int32),
    )
    return Batch(
        dense_features=ember.tensor(dense, dtype=ember.float32).reshape(len(rows), len(int_names)),
        sparse_features=sparse,
        labels=ember.tensor([row[DEFAULT_LABEL_NAME] for row in rows], dtype=ember.int64),
    )


def criteo_batches(datapipe: IterDataPipe[dict[str, Any]], batch_size: int, hashes: Sequence[int] | None = None,
                   *, drop_last: bool = False) -> IterDataPipe[Batch]:
    """Groups a pipe of Criteo row dicts into :class:`Batch` es of ``batch_size`` rows.

    >>> pipe = criteo_batches(criteo_kaggle("train.txt"), batch_size=1024, hashes=[100_000] * 26)  # doctest: +SKIP
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    hashes = _check_hashes(hashes, CAT_FEATURE_COUNT)
    return datapipe.batch(batch_size, drop_last=drop_last).map(partial(rows_to_batch, hashes=hashes))
