"""View and shape ops against NumPy; views share storage and the version counter."""

import numpy as np
import pytest

import ember

A = np.arange(24.0).reshape(2, 3, 4)


def shares(view: ember.Tensor, base: ember.Tensor) -> bool:
    lo = base.data_ptr()
    return lo <= view.data_ptr() < lo + base.nbytes or view.numel() == 0


CASES = [
    ("view", lambda t: t.view(6, 4), lambda a: a.reshape(6, 4)),
    ("view -1", lambda t: t.view(-1, 2), lambda a: a.reshape(-1, 2)),
    ("reshape", lambda t: t.reshape(4, -1), lambda a: a.reshape(4, -1)),
    ("flatten", lambda t: t.flatten(1), lambda a: a.reshape(2, 12)),
    ("unflatten", lambda t: t.unflatten(2, (2, 2)), lambda a: a.reshape(2, 3, 2, 2)),
    ("permute", lambda t: t.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),
    ("transpose", lambda t: t.transpose(0, 2), lambda a: a.swapaxes(0, 2)),
    ("mT", lambda t: t.mT, lambda a: a.swapaxes(-1, -2)),
    ("expand", lambda t: t[:, :1].expand(2, 3, 4), lambda a: np.broadcast_to(a[:, :1], (2, 3, 4))),
    ("expand new dim", lambda t: t.expand(5, 2, 3, 4), lambda a: np.broadcast_to(a, (5, 2, 3, 4))),
    ("squeeze", lambda t: t[:, :1].squeeze(), lambda a: a[:, :1].squeeze()),
    ("squeeze dim", lambda t: t[:, :1].squeeze(1), lambda a: a[:, :1].squeeze(1)),
    ("unsqueeze", lambda t: t.unsqueeze(-1), lambda a: a[..., None]),
    ("narrow", lambda t: t.narrow(2, 1, 2), lambda a: a[:, :, 1:3]),
    ("select", lambda t: t.select(1, -1), lambda a: a[:, -1]),
    ("slice step", lambda t: t[:, ::2, 1::3], lambda a: a[:, ::2, 1::3]),
    ("index mix", lambda t: t[1, None, ..., 2], lambda a: a[1, None, ..., 2]),
    ("unfold", lambda t: t.unfold(2, 2, 1), lambda a: np.lib.stride_tricks.sliding_window_view(a, 2, axis=2)),
    ("diagonal", lambda t: t.diagonal(0, 1, 2), lambda a: np.diagonal(a, 0, 1, 2)),
    ("diagonal offset", lambda t: t.diagonal(1, 1, 2), lambda a: np.diagonal(a, 1, 1, 2)),
    ("diagonal negative", lambda t: t.diagonal(-1, 1, 2), lambda a: np.diagonal(a, -1, 1, 2)),
    ("movedim", lambda t: t.movedim(0, -1), lambda a: np.moveaxis(a, 0, -1)),
    ("movedim lists", lambda t: t.movedim([0, 1], [2, 0]), lambda a: np.moveaxis(a, [0, 1], [2, 0])),
    ("T", lambda t: t.T, lambda a: a.T),
    ("as_strided", lambda t: t.as_strided((3, 3), (1, 2), 1), lambda a: np.lib.stride_tricks.as_strided(
        a.reshape(-1)[1:], (3, 3), (8, 16))),
]


@pytest.mark.parametrize("name, ours, theirs", CASES, ids=[c[0] for c in CASES])
def test_views_match_numpy_and_share_storage(name, ours, theirs):
    t = ember.tensor(A)
    out = ours(t)
    np.testing.assert_array_equal(out.numpy(), theirs(A))
    assert shares(out, t)


def test_views_see_writes_and_share_the_version_counter():
    t = ember.zeros(3, 4)
    v = t.t()[1:]
    v[0, 0] = 5.0
    assert t[0, 1].item() == 5.0
    assert v._version == t._version > 0


def test_view_needs_compatible_strides_reshape_copies():
    t = ember.tensor(A).permute(2, 0, 1)
    with pytest.raises(RuntimeError, match=r"view size is not compatible .* Use \.reshape\(\.\.\.\) instead"):
        t.view(-1)
    r = t.reshape(-1)
    np.testing.assert_array_equal(r.numpy(), A.transpose(2, 0, 1).reshape(-1))
    assert r.is_contiguous()


def test_split_chunk_unbind():
    t = ember.tensor(A)
    for got, want in zip(t.split(2, dim=2), np.split(A, 2, axis=2), strict=True):
        np.testing.assert_array_equal(got.numpy(), want)
    parts = t.split([1, 3], dim=2)
    assert [p.shape for p in parts] == [(2, 3, 1), (2, 3, 3)]
    assert [c.shape for c in ember.arange(10).chunk(3)] == [(4,), (4,), (2,)]
    assert [u.tolist() for u in ember.tensor([[1, 2], [3, 4]]).unbind(1)] == [[1, 3], [2, 4]]
    assert [list(row.shape) for row in ember.tensor(A)] == [[3, 4], [3, 4]]


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda t: t.view(5, -1), RuntimeError, r"shape '\[5, -1\]' is invalid for input of size 24"),
        (lambda t: t.view(-1, -1), RuntimeError, r"only one dimension can be inferred"),
        (lambda t: t.permute(0, 0, 1), RuntimeError, r"repeated dim in permute"),
        (lambda t: t.permute(0, 1), RuntimeError, r"number of dims don't match in permute"),
        (lambda t: t.transpose(0, 3), IndexError, r"Dimension out of range \(expected to be in range of \[-3, 2\], but got 3\)"),
        (lambda t: t.expand(2, 5, 4), RuntimeError, r"The expanded size of the tensor \(5\) must match the existing size \(3\)"),
        (lambda t: t.select(0, 2), IndexError, r"index 2 is out of bounds for dimension 0 with size 2"),
        (lambda t: t[5], IndexError, r"index 5 is out of bounds for dimension 0 with size 2"),
        (lambda t: t[0, 0, 0, 0], IndexError, r"too many indices for tensor of dimension 3"),
        (lambda t: t[..., ...], IndexError, r"single ellipsis"),
        (lambda t: t[::-1], ValueError, r"step must be greater than zero"),
        (lambda t: t[1.5], TypeError, r"only integers, slices"),
        (lambda t: t.narrow(2, 3, 2), RuntimeError, r"start \(3\) \+ length \(2\) exceeds dimension size \(4\)"),
        (lambda t: t.unfold(2, 5, 1), RuntimeError, r"maximum size for tensor at dimension 2 is 4 but size is 5"),
        (lambda t: t.unfold(2, 2, 0), RuntimeError, r"step is 0 but must be > 0"),
        (lambda t: t.diagonal(0, 1, 1), RuntimeError, r"diagonal dimensions cannot be identical"),
        (lambda t: t.split([1, 1], 2), RuntimeError, r"split_with_sizes expects split_sizes to sum exactly to 4"),
        (lambda t: t.chunk(0), RuntimeError, r"chunk expects `chunks` to be greater than 0"),
        (lambda t: t.as_strided((10,), (3,), 0), RuntimeError, r"fit in its storage of 192 bytes"),
        (lambda t: t.t(), RuntimeError, r"t\(\) expects a tensor with <= 2 dimensions, but self is 3D"),
        (lambda t: t.movedim([0, 0], [1, 2]), RuntimeError, r"repeated dim in movedim"),
    ],
)
def test_bad_view_arguments(call, error, message):
    with pytest.raises(error, match=message):
        call(ember.tensor(A))


def test_zero_dim_and_zero_size_views():
    s = ember.tensor(3.0)
    assert s.unsqueeze(0).shape == (1,) and s.reshape(1, 1).shape == (1, 1) and s.flatten().shape == (1,)
    assert s.view(-1).tolist() == [3.0] and s.squeeze().shape == ()
    e = ember.zeros(0, 3)
    assert e.view(3, 0).shape == (3, 0) and e.t().shape == (3, 0) and e[:, 1].shape == (0,)
    with pytest.raises(IndexError, match=r"cannot be applied to a 0-dim tensor"):
        s.select(0, 0)


def test_setitem_broadcasts_and_casts():
    t = ember.zeros(2, 3, dtype=ember.int64)
    t[0] = ember.tensor([1.9, 2.9, 3.9])
    t[1, 1:] = 7
    t[:, 0] = ember.tensor([5])
    assert t.tolist() == [[5, 2, 3], [5, 7, 7]]


def test_movedim_of_a_zero_dim_tensor_is_itself():
    s = ember.tensor(3.0)
    assert s.movedim(0, -1).item() == 3.0 and s.movedim(0, -1).dim() == 0
    with pytest.raises(IndexError, match=r"Dimension out of range"):
        s.movedim(0, 2)
