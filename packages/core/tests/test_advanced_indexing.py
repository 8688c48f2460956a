"""Advanced indexing (several tensor indices, mixed with ints/slices/None/Ellipsis), index_put_
with accumulate and masked_scatter, against NumPy.

PyTorch applies ints, slices, None and Ellipsis first (a view) and only then the tensor
indices; `reference_index` does the same with NumPy, so an int between two tensor indices does
not separate them (x[:, i, 0, j] keeps the broadcast dims in place, as in PyTorch)."""

import numpy as np
import pytest

import ember

RNG = np.random.default_rng(11)


def reference_view(a, items):
    """NumPy version of the first step: (view, [per-dim index arrays or slice(None)])."""
    consumed = sum(0 if i is None or i is Ellipsis or isinstance(i, bool) else
                   (i.ndim if isinstance(i, np.ndarray) and i.dtype == bool else 1) for i in items)
    out, dim, picked = a, 0, []
    for item in items:
        if item is Ellipsis:
            dim += a.ndim - consumed
        elif item is None:
            out = np.expand_dims(out, dim)
            dim += 1
        elif isinstance(item, bool):
            out = np.expand_dims(out, dim)
            picked.append((dim, np.arange(int(item))))
            dim += 1
        elif isinstance(item, slice):
            out = out[(slice(None),) * dim + (item,)]
            dim += 1
        elif isinstance(item, int):
            out = out[(slice(None),) * dim + (item,)]  # a view, so assignments reach `a`
        else:
            picked.append((dim, item))
            dim += item.ndim if item.dtype == bool else 1
    full = []
    at = 0
    for d, arr in picked:
        full += [slice(None)] * (d - at) + [arr]
        at = d + (arr.ndim if arr.dtype == bool else 1)
    return out, tuple(full)


def reference_index(a, items):
    view, full = reference_view(a, items)
    return view[full] if full else view


def to_ember(items):
    return tuple(ember.tensor(i) if isinstance(i, np.ndarray) else i for i in items)


ROWS = np.array([0, 2, -1])
COLS = np.array([1, 3, 0])
COL = np.array([[0], [2]])
CASES = {
    "one": (ROWS,),
    "two adjacent": (ROWS, COLS),
    "broadcast pair": (COL, np.array([1, 3, 2])),
    "slice then two": (slice(None), COLS, np.array([4, 0, 2])),
    "split by slice": (ROWS, slice(1, None, 2), np.array([4, 0, 2])),
    "split by int (stays adjacent)": (ROWS, 0, np.array([1, 0, 1])),
    "ellipsis then last": (Ellipsis, np.array([[0, 4], [1, 1]])),
    "none before": (None, ROWS, slice(None), COLS[:1]),
    "int first": (1, COLS, np.array([2, 2, 2])),
    "mask": (np.array([True, False, True]),),
    "2-d mask": (np.arange(12).reshape(3, 4) % 3 == 0,),
    "mask after slice": (slice(None), np.array([True, True, False, True])),
    "mask and index": (np.array([True, False, True]), slice(None), np.array([0, 2])),
    "python bool": (True, 1),
    "empty index": (np.array([], dtype=np.int64),),
    "0-dim index": (np.array(2), slice(None), np.array(1)),
}


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped"])
def test_getitem_matches_reference(name, layout):
    base = RNG.standard_normal((3, 4, 5))
    x = ember.tensor(base)
    if layout == "transposed":  # same logical values, non-contiguous strides
        x = ember.tensor(np.ascontiguousarray(base.transpose(2, 1, 0))).permute(2, 1, 0)
    elif layout == "stepped":
        x = ember.tensor(np.repeat(base, 2, axis=2))[:, :, ::2]
    items = CASES[name]
    got = x[to_ember(items)]
    want = reference_index(base, items)
    assert tuple(got.shape) == want.shape
    np.testing.assert_array_equal(got.numpy(), want)


def test_int_between_tensor_indices_follows_pytorch_layout():
    x = ember.zeros(2, 3, 4, 5)
    # PyTorch selects the int first, so the two index tensors are adjacent: shape [2, 2, 4]
    assert tuple(x[:, [0, 1], 0, [1, 2]].shape) == (2, 2)
    assert tuple(x[:, [0, 1], :, [1, 2]].shape) == (2, 2, 4)
    assert tuple(x[[0, 1], :, [1, 2]].shape) == (2, 3, 5)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float16, ember.int64, ember.uint8, ember.bool,
                                   ember.complex128])
def test_getitem_every_dtype(dtype):
    base = RNG.integers(0, 2, (4, 3)).astype(np.float64)
    x = ember.tensor(base).to(dtype)
    want = base[[3, 0]][:, [2, 2]].astype(np.dtype(x.numpy().dtype))
    np.testing.assert_array_equal(x[[[3], [0]], [2, 2]].numpy(), want)
    assert x[[[3], [0]], [2, 2]].dtype == dtype


def test_zero_size_and_zero_dim():
    x = ember.zeros(0, 3)
    assert tuple(x[ember.tensor([], dtype=ember.int64)].shape) == (0, 3)
    assert tuple(x[:, [2, 0]].shape) == (0, 2)
    s = ember.tensor(7.5)
    assert s[None][[0, 0]].tolist() == [7.5, 7.5]
    assert s[True].tolist() == [7.5] and tuple(s[False].shape) == (0,)
    assert s[ember.tensor(True)].tolist() == [7.5]


@pytest.mark.parametrize("name", CASES)
def test_setitem_matches_reference(name):
    base = RNG.standard_normal((3, 4, 5))
    items = CASES[name]
    view_shape = reference_index(base, items).shape
    value = RNG.standard_normal(view_shape[-1:] if view_shape else ())  # broadcast along the rest
    want = base.copy()
    view, full = reference_view(want, items)
    if full:
        view[full] = value
    x = ember.tensor(base)
    x[to_ember(items)] = ember.tensor(value)
    np.testing.assert_array_equal(x.numpy(), want)
    y = ember.tensor(base)
    y[to_ember(items)] = 2.5  # a Python number fills
    want2 = base.copy()
    view, full = reference_view(want2, items)
    if full:
        view[full] = 2.5
    np.testing.assert_array_equal(y.numpy(), want2)


def test_setitem_writes_through_views_and_casts():
    x = ember.zeros(4, 6, dtype=ember.int32)
    x.t()[[1, 4], [0, 3]] = ember.tensor([1.9, -2.9])  # float values truncate into int32 like torch
    assert x[0, 1].item() == 1 and x[3, 4].item() == -2
    v = x._version
    x[[0], [0]] = 5
    assert x._version > v  # index_put_ counts as an in-place write
    # values that alias the destination are read before any write
    y = ember.tensor([1.0, 2.0, 3.0, 4.0])
    y[[1, 2, 3]] = y[:3]
    assert y.tolist() == [1.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize("dtype", [ember.float64, ember.int64, ember.complex128])
def test_index_put_accumulate_sums_duplicates(dtype):
    base = RNG.integers(-5, 5, (5, 3)).astype(np.float64)
    rows = np.array([0, 4, 0, 0, 2])
    vals = RNG.integers(-3, 3, (5, 3)).astype(np.float64)
    want = base.copy()
    np.add.at(want, rows, vals)
    x = ember.tensor(base).to(dtype)
    out = x.index_put_((ember.tensor(rows),), ember.tensor(vals).to(dtype), accumulate=True)
    assert out.data_ptr() == x.data_ptr()
    np.testing.assert_array_equal(x.numpy().real, want)
    # functional form leaves the input alone
    fresh = ember.tensor(base).to(dtype)
    res = ember.index_put(fresh, [ember.tensor(rows)], ember.tensor(vals).to(dtype), True)
    np.testing.assert_array_equal(res.numpy().real, want)
    np.testing.assert_array_equal(fresh.numpy().real, base)


def test_index_put_with_none_entries_and_broadcast_values():
    base = np.zeros((2, 3, 4))
    x = ember.tensor(base)
    values = ember.tensor([1.0, 2.0, 3.0, 4.0], dtype=ember.float64)
    x.index_put_([None, ember.tensor([0, 2])], values, accumulate=True)
    x.index_put_([None, ember.tensor([0, 2])], values, accumulate=True)
    base[:, [0, 2]] += 2 * np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(x.numpy(), base)


def test_index_put_nan_and_extremes():
    x = ember.zeros(3)
    x[[0, 1, 2]] = ember.tensor([float("nan"), float("inf"), -0.0])
    got = x.numpy()
    assert np.isnan(got[0]) and got[1] == np.inf and np.signbit(got[2])


@pytest.mark.parametrize("mask_shape", [(3, 4), (4,), (1, 4)])
def test_masked_scatter_matches_reference(mask_shape):
    base = RNG.standard_normal((3, 4))
    mask = RNG.integers(0, 2, mask_shape).astype(bool)
    source = RNG.standard_normal(20)
    full_mask = np.broadcast_to(mask, base.shape)
    want = base.copy()
    want[full_mask] = source[: full_mask.sum()]
    got = ember.masked_scatter(ember.tensor(base), ember.tensor(mask), ember.tensor(source))
    np.testing.assert_array_equal(got.numpy(), want)
    x = ember.tensor(base).t().contiguous().t()  # non-contiguous self
    x.masked_scatter_(ember.tensor(mask), ember.tensor(source).reshape(4, 5))
    np.testing.assert_array_equal(x.numpy(), want)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda x: x[[0, 3]], IndexError, r"index 3 is out of bounds for dimension 0 with size 3"),
        (lambda x: x[:, [0], [-6]], IndexError, r"index -6 is out of bounds for dimension 2 with size 5"),
        (lambda x: x[[0, 1], [0, 1, 2]], IndexError,
         r"shape mismatch: indexing tensors could not be broadcast together with shapes \[2\], \[3\]"),
        (lambda x: x[ember.tensor([True, False])], IndexError,
         r"The shape of the mask \[2\] at index 0 does not match the shape of the indexed tensor \[3, 4, 5\]"),
        (lambda x: x[[0], [0], [0], [0]], IndexError, r"too many indices for tensor of dimension 3"),
        (lambda x: x[ember.tensor([0.0])], IndexError, r"tensors used as indices must be long, int, byte or bool"),
        (lambda x: x["a"], TypeError, r"only integers, slices .* are valid indices, but got str"),
        (lambda x: x[..., ...], IndexError, r"an index can only have a single ellipsis"),
        (lambda x: x.index_put_([ember.tensor([0])], ember.ones(2, 2, 5)), RuntimeError,
         r"shape mismatch: value tensor of shape \[2, 2, 5\] cannot be broadcast to indexing result of shape \[1, 4, 5\]"),
        (lambda x: x.index_put_([ember.tensor([0])], ember.ones(1, dtype=ember.int64)), RuntimeError,
         r"Index put requires the source and destination dtypes match, got float32 for the destination and int64"),
        (lambda x: x.index_put_([None], ember.ones(1)), IndexError, r"expected at least one index tensor"),
        (lambda x: ember.index(x, [ember.tensor([[9]])]), IndexError, r"index 9 is out of bounds"),
        (lambda x: x.masked_scatter(x > 0, ember.ones(1)), RuntimeError,
         r"Number of elements of source < number of ones in mask"),
        (lambda x: x.masked_scatter(ember.ones(3, 4, 5), ember.ones(60)), RuntimeError, r"only supports boolean masks"),
        (lambda x: x.masked_scatter(x > 0, ember.ones(60, dtype=ember.float64)), RuntimeError,
         r"expected self and source to have same dtypes but got float32 and float64"),
    ],
)
def test_bad_advanced_indices(call, error, message):
    x = ember.arange(60, dtype=ember.float32).reshape(3, 4, 5) - 30
    with pytest.raises(error, match=message):
        call(x)
    np.testing.assert_array_equal(x.numpy(), np.arange(60, dtype=np.float32).reshape(3, 4, 5) - 30)
