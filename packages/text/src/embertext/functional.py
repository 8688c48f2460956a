"""Functional forms of the text transforms (torchtext.functional)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ember


def _is_batch(input: Any) -> bool:
    return isinstance(input, (list, tuple)) and len(input) > 0 and isinstance(input[0], (list, tuple))


def _check_sequence(input: Any, what: str) -> None:
    if not isinstance(input, (list, tuple)):
        raise TypeError(f"{what} expects a list (or a list of lists), but got {type(input).__name__}")


def to_tensor(input: Any, padding_value: int | None = None, dtype: ember.dtype = ember.long) -> ember.Tensor:
    """A list of IDs as a 1-D tensor, or a batch (list of lists) as a 2-D one padded at the end
    of each row with ``padding_value``. Rows of different lengths need a ``padding_value``."""
    _check_sequence(input, "to_tensor")
    if not _is_batch(input):
        return ember.tensor(list(input), dtype=dtype)
    lengths = [len(row) for row in input]
    width = max(lengths)
    if padding_value is None:
        if min(lengths) != width:
            raise ValueError(
                f"to_tensor got rows of lengths {min(lengths)} to {width}; pass padding_value to pad them"
            )
        return ember.tensor([list(row) for row in input], dtype=dtype)
    return ember.tensor([list(row) + [padding_value] * (width - len(row)) for row in input], dtype=dtype)


def truncate(input: Any, max_seq_len: int) -> Any:
    """Cut a sequence, or each sequence of a batch, to at most ``max_seq_len`` items."""
    _check_sequence(input, "truncate")
    if isinstance(max_seq_len, bool) or not isinstance(max_seq_len, int):
        raise TypeError(f"max_seq_len must be an int, but got {type(max_seq_len).__name__}")
    if max_seq_len < 0:
        raise ValueError(f"max_seq_len must not be negative, but got {max_seq_len}")
    if _is_batch(input):
        return [list(row[:max_seq_len]) for row in input]
    return list(input[:max_seq_len])


def add_token(input: Any, token_id: int | str, begin: bool = True) -> Any:
    """Put ``token_id`` at the start (or the end) of a sequence, or of each sequence of a batch."""
    _check_sequence(input, "add_token")
    if _is_batch(input):
        return [[token_id, *row] if begin else [*row, token_id] for row in input]
    return [token_id, *input] if begin else [*input, token_id]


def str_to_int(input: Sequence) -> Any:
    """String IDs (TorchText's tokenizer output) to ints, for a sequence or a batch."""
    _check_sequence(input, "str_to_int")
    try:
        if _is_batch(input):
            return [[int(x) for x in row] for row in input]
        return [int(x) for x in input]
    except ValueError as error:
        raise ValueError(f"str_to_int: {error}") from None
