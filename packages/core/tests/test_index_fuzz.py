"""Fuzzing the index-taking ops with arbitrary index values (in range, negative, past the end,
huge): each call either equals the NumPy reference or raises PyTorch's IndexError/RuntimeError;
it never crashes, reads out of bounds (the sanitizer build catches that) or wraps silently.

Each test runs EMBER_FUZZ_EXAMPLES examples (default 100; `nox -s fuzz` runs thousands).
"""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
import ember.nn.functional as F

EXAMPLES = int(os.environ.get("EMBER_FUZZ_EXAMPLES", "100"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow])
INDEX = st.integers(min_value=-(2**40), max_value=2**40) | st.integers(min_value=-6, max_value=6)


@st.composite
def table_and_indices(draw, index_rank=1):
    shape = draw(st.lists(st.integers(0, 4), min_size=2, max_size=3))
    dim = draw(st.integers(0, len(shape) - 1))
    if index_rank == 1:
        index_shape = [draw(st.integers(0, 5))]
    else:  # gather/scatter: same rank as the input
        index_shape = [draw(st.integers(0, s)) if i != dim else draw(st.integers(0, 5))
                       for i, s in enumerate(shape)]
    n = int(np.prod(index_shape))
    values = draw(st.lists(INDEX, min_size=n, max_size=n))
    table = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) + 0.5
    return table, dim, np.array(values, dtype=np.int64).reshape(index_shape)


def _in_range(index, size):
    return bool(np.all((index >= 0) & (index < size)))


@FUZZ
@given(table_and_indices())
def test_index_select(case):
    table, dim, index = case
    try:
        got = ember.index_select(ember.tensor(table), dim, ember.tensor(index))
    except IndexError as e:
        assert not _in_range(index, table.shape[dim]), e
        assert "index out of range in self" in str(e)
        return
    assert _in_range(index, table.shape[dim])
    np.testing.assert_array_equal(got.numpy(), np.take(table, index, axis=dim))


@FUZZ
@given(table_and_indices(index_rank=2))
def test_gather_and_scatter_add(case):
    table, dim, index = case
    valid = _in_range(index, table.shape[dim])
    t, i = ember.tensor(table), ember.tensor(index)
    try:
        got = ember.gather(t, dim, i)
    except RuntimeError as e:
        assert not valid and "out of bounds" in str(e), e
    else:
        assert valid
        want = np.empty(index.shape)
        for pos in np.ndindex(*index.shape):  # out[pos] = table[pos with index[pos] at dim]
            source = list(pos)
            source[dim] = index[pos]
            want[pos] = table[tuple(source)]
        np.testing.assert_array_equal(got.numpy(), want)
    src = ember.ones(list(index.shape), dtype=ember.float64)
    try:
        out = ember.scatter_add(t, dim, i, src)
    except RuntimeError as e:
        assert not valid and "out of bounds" in str(e), e
    else:
        assert valid
        want = table.copy()
        for pos in np.ndindex(*index.shape):
            target = list(pos)
            target[dim] = index[pos]
            want[tuple(target)] += 1.0
        np.testing.assert_array_equal(out.numpy(), want)


@FUZZ
@given(table_and_indices())
def test_take_wraps_like_pytorch(case):
    table, _, index = case
    n = table.size
    try:
        got = ember.take(ember.tensor(table), ember.tensor(index))
    except (IndexError, RuntimeError) as e:
        assert not bool(np.all((index >= -n) & (index < n))), e
        return
    assert bool(np.all((index >= -n) & (index < n)))
    np.testing.assert_array_equal(got.numpy(), np.take(table.ravel(), index))


@FUZZ
@given(st.integers(1, 6), st.integers(0, 3), st.lists(INDEX, max_size=8))
def test_embedding_and_bag(rows, width, values):
    weight = np.arange(rows * width, dtype=np.float64).reshape(rows, width)
    index = np.array(values, dtype=np.int64)
    valid = _in_range(index, rows)
    try:
        got = F.embedding(ember.tensor(index), ember.tensor(weight))
    except IndexError as e:
        assert not valid and "index out of range in self" in str(e), e
    else:
        assert valid
        np.testing.assert_array_equal(got.numpy(), weight[index].reshape(len(values), width))
    offsets = ember.tensor([0], dtype=ember.int64)
    try:
        bag = F.embedding_bag(ember.tensor(index), ember.tensor(weight), offsets, mode="sum")
    except RuntimeError as e:
        assert not valid and "not in the valid range" in str(e), e
    else:
        assert valid
        np.testing.assert_allclose(bag.numpy(), weight[index].sum(axis=0, keepdims=True))


def test_embedding_bag_checks_indices_of_an_empty_width_table():
    """Found by the fuzzer: with zero columns nothing is read, but PyTorch still checks the index."""
    weight = ember.zeros(1, 0)
    with pytest.raises(RuntimeError, match=r"Index 0 of input takes value 1 which is not in the valid range \[0, 1\)"):
        F.embedding_bag(ember.tensor([1]), weight, ember.tensor([0]), mode="sum")
    assert F.embedding_bag(ember.tensor([0]), weight, ember.tensor([0]), mode="sum").shape == (1, 0)
