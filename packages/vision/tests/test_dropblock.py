"""embervision.ops.drop_block2d / drop_block3d and their modules against a float64 NumPy reference.

The Bernoulli seed map is made observable by replaying the global generator: drop_block's first
draw is ``empty(N, C, *valid).bernoulli_(gamma)``, so re-seeding and drawing the same tensor gives
the same seeds. The reference then grows each seed into a block by direct indexing (no padding or
pooling) and applies the paper's rescaling independently of the implementation.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck
from embervision import ops
from embervision.ops import DropBlock2d, DropBlock3d, drop_block2d, drop_block3d

DROP = {2: drop_block2d, 3: drop_block3d}


def _gamma(p, block_size, sizes):
    valid = np.prod([s - block_size + 1 for s in sizes])
    return p * np.prod(sizes) / (block_size ** len(sizes) * valid)


def _seeds(seed, shape, p, block_size, dtype):
    """The seed map drop_block draws after ember.manual_seed(seed), as a float64 array."""
    n, c, *sizes = shape
    block_size = min(block_size, *sizes)
    ember.manual_seed(seed)
    valid = [s - block_size + 1 for s in sizes]
    draw = ember.empty([n, c, *valid], dtype=dtype).bernoulli_(float(_gamma(p, block_size, sizes)))
    return draw.numpy().astype(np.float64), block_size


def _blocks(seeds, block_size, sizes):
    """1 where some seed's block covers the element: a seed at valid index a covers a..a+k-1."""
    dropped = np.zeros(seeds.shape[:2] + tuple(sizes))
    for idx in np.argwhere(seeds):
        n, c, *corner = idx
        region = tuple(slice(a, a + block_size) for a in corner)
        dropped[(n, c, *region)] = 1.0
    return dropped


def _reference(x, dropped, eps):
    keep = 1.0 - dropped
    return x * keep * (keep.size / (eps + keep.sum()))


def _run(dims, x, p, block_size, seed, **kwargs):
    ember.manual_seed(seed)
    return DROP[dims](x, p, block_size, **kwargs)


@pytest.mark.parametrize("dims,shape,p,block_size", [
    (2, (2, 3, 11, 9), 0.3, 3),
    (2, (1, 2, 8, 13), 0.5, 5),
    (2, (2, 2, 6, 7), 0.2, 1),
    (3, (2, 2, 6, 7, 5), 0.3, 3),
    (3, (1, 3, 5, 5, 5), 0.6, 1),
])
def test_matches_float64_reference(dims, shape, p, block_size):
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal(shape)
    for seed in range(3):
        out = _run(dims, ember.from_numpy(x_np), p, block_size, seed)
        seeds, k = _seeds(seed, shape, p, block_size, ember.float64)
        expected = _reference(x_np, _blocks(seeds, k, shape[2:]), 1e-6)
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-12)


def test_float32_and_custom_eps():
    rng = np.random.default_rng(1)
    x_np = rng.standard_normal((2, 3, 9, 10)).astype(np.float32)
    out = _run(2, ember.from_numpy(x_np), 0.4, 3, seed=5, eps=0.5)
    assert out.dtype == ember.float32
    seeds, k = _seeds(5, x_np.shape, 0.4, 3, ember.float32)
    expected = _reference(x_np.astype(np.float64), _blocks(seeds, k, x_np.shape[2:]), 0.5)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dims", [2, 3])
def test_non_contiguous_input(dims):
    rng = np.random.default_rng(2)
    shape = (2, 3) + (7,) * dims
    base = rng.standard_normal(shape[::-1])
    x = ember.from_numpy(base).permute(*reversed(range(dims + 2)))  # a transposed view
    assert not x.is_contiguous()
    out = _run(dims, x, 0.3, 3, seed=11)
    seeds, k = _seeds(11, shape, 0.3, 3, ember.float64)
    expected = _reference(base.transpose(*reversed(range(dims + 2))), _blocks(seeds, k, shape[2:]), 1e-6)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dims,block_size", [(2, 3), (2, 5), (3, 3)])
def test_every_dropped_element_lies_in_a_whole_dropped_block(dims, block_size):
    """Without replaying the generator: each zero of the output belongs to some block_size-sided
    square (cube) that is zero throughout, and the kept elements all carry one common scale."""
    sizes = (12,) * dims
    ember.manual_seed(3)
    out = drop_block2d(ember.ones(2, 4, *sizes), 0.25, block_size) if dims == 2 else \
        drop_block3d(ember.ones(2, 4, *sizes), 0.25, block_size)
    out = out.numpy()
    dropped = out == 0
    assert dropped.any() and not dropped.all()
    kept = out[~dropped]
    np.testing.assert_allclose(kept, kept[0], rtol=1e-6)
    np.testing.assert_allclose(kept[0], out.size / (1e-6 + kept.size), rtol=1e-5)
    covered = np.zeros_like(dropped)
    corners = itertools.product(*(range(s - block_size + 1) for s in sizes))
    for corner in corners:
        region = (slice(None), slice(None), *(slice(a, a + block_size) for a in corner))
        whole = dropped[region].reshape(2, 4, -1).all(-1)  # (N, C): is this block fully dropped?
        covered[region] |= whole.reshape(2, 4, *(1,) * dims)
    assert np.array_equal(covered, dropped)


def test_dropped_fraction_matches_the_seed_rate():
    """Statistics with a fixed seed: element (i, j) survives only when none of the seeds whose
    block covers it fired, P = (1 - gamma)^count(i, j); averaged over many channels."""
    p, k, size = 0.3, 3, 10
    ember.manual_seed(4)
    out = drop_block2d(ember.ones(8, 500, size, size), p, k).numpy()
    gamma = _gamma(p, k, (size, size))
    cover = np.array([min(i, size - k) - max(0, i - k + 1) + 1 for i in range(size)])
    expected_kept = ((1 - gamma) ** np.outer(cover, cover)).mean()
    observed_kept = (out != 0).mean()
    # 4000 maps of 100 correlated elements: the standard error is well under 0.005.
    assert abs(observed_kept - expected_kept) < 0.01
    assert abs(out.mean() - 1.0) < 1e-4  # the rescaling keeps the mean exactly (up to eps)


@pytest.mark.parametrize("dims", [2, 3])
def test_identity_cases(dims):
    x = ember.randn(2, 3, *(5,) * dims)
    fn = DROP[dims]
    assert fn(x, 0.5, 3, training=False) is x
    assert fn(x, 0.0, 3) is x
    module = (DropBlock2d if dims == 2 else DropBlock3d)(0.5, 3)
    module.eval()
    assert module(x) is x
    module.train()
    ember.manual_seed(0)
    assert not np.array_equal(module(ember.ones(2, 3, *(9,) * dims)).numpy(), np.ones((2, 3) + (9,) * dims))


@pytest.mark.parametrize("dims", [2, 3])
def test_p_one_with_a_block_as_large_as_the_map_drops_everything(dims):
    # block_size is clipped to the map, gamma becomes p = 1: every element is dropped and the
    # rescaling divides by eps alone.
    out = DROP[dims](ember.randn(2, 3, *(5,) * dims), 1.0, 50)
    assert np.array_equal(out.numpy(), np.zeros((2, 3) + (5,) * dims))


def test_block_size_is_clipped_to_the_smallest_side():
    x_np = np.random.default_rng(6).standard_normal((1, 2, 5, 7))
    out = _run(2, ember.from_numpy(x_np), 0.5, 9, seed=2)
    seeds, k = _seeds(2, x_np.shape, 0.5, 9, ember.float64)
    assert k == 5 and seeds.shape == (1, 2, 1, 3)
    np.testing.assert_allclose(out.numpy(), _reference(x_np, _blocks(seeds, k, (5, 7)), 1e-6), rtol=1e-12)


@pytest.mark.parametrize("dims", [2, 3])
def test_inplace(dims):
    x_np = np.random.default_rng(7).standard_normal((2, 2) + (6,) * dims)
    expected = _run(dims, ember.from_numpy(x_np.copy()), 0.4, 3, seed=9).numpy()
    x = ember.from_numpy(x_np.copy())
    out = _run(dims, x, 0.4, 3, seed=9, inplace=True)
    assert out is x
    np.testing.assert_array_equal(x.numpy(), expected)
    module = (DropBlock2d if dims == 2 else DropBlock3d)(0.4, 3, inplace=True)
    y = ember.from_numpy(x_np.copy())
    ember.manual_seed(9)
    assert module(y) is y
    np.testing.assert_array_equal(y.numpy(), expected)
    # Not in place: the input is left alone.
    z = ember.from_numpy(x_np.copy())
    _run(dims, z, 0.4, 3, seed=9)
    np.testing.assert_array_equal(z.numpy(), x_np)


@pytest.mark.parametrize("dims", [2, 3])
def test_zero_size_batch_and_channels(dims):
    for shape in [(0, 3) + (5,) * dims, (2, 0) + (5,) * dims]:
        out = DROP[dims](ember.zeros(*shape), 0.5, 3)
        assert tuple(out.shape) == shape


@pytest.mark.parametrize("dims", [2, 3])
def test_gradcheck_with_the_mask_fixed_by_seeding(dims):
    x = ember.from_numpy(np.random.default_rng(8).standard_normal((2, 2) + (5,) * dims)).requires_grad_()

    def fn(t):
        ember.manual_seed(13)  # the same blocks on every evaluation
        return DROP[dims](t, 0.3, 3)

    assert gradcheck(fn, (x,))
    # The gradient is the kept mask times the common scale.
    out = fn(x)
    out.sum().backward()
    scale = out.detach().numpy() / x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), scale, rtol=1e-12)


def test_module_attributes_and_repr():
    m2 = DropBlock2d(0.1, 3)
    assert (m2.p, m2.block_size, m2.inplace, m2.eps) == (0.1, 3, False, 1e-6)
    assert repr(m2) == "DropBlock2d(p=0.1, block_size=3, inplace=False)"
    m3 = DropBlock3d(0.25, 5, inplace=True, eps=1e-3)
    assert (m3.p, m3.block_size, m3.inplace, m3.eps) == (0.25, 5, True, 1e-3)
    assert repr(m3) == "DropBlock3d(p=0.25, block_size=5, inplace=True)"
    assert isinstance(m3, DropBlock2d) and isinstance(m2, ember.nn.Module)


def test_exported_from_ops():
    for name in ("drop_block2d", "drop_block3d", "DropBlock2d", "DropBlock3d"):
        assert name in ops.__all__ and name in dir(ops)
    assert ops.drop_block2d is drop_block2d and ops.DropBlock3d is DropBlock3d


def test_rejects_bad_arguments():
    x4, x5 = ember.ones(1, 1, 4, 4), ember.ones(1, 1, 4, 4, 4)
    for fn, x in ((drop_block2d, x4), (drop_block3d, x5)):
        with pytest.raises(ValueError, match=r"^drop probability has to be between 0 and 1, but got 1.5\.$"):
            fn(x, 1.5, 3)
        with pytest.raises(ValueError, match=r"^drop probability has to be between 0 and 1, but got -0.1\.$"):
            fn(x, -0.1, 3, training=False)
    with pytest.raises(ValueError, match=r"^input should be 4 dimensional\. Got 5 dimensions\.$"):
        drop_block2d(x5, 0.1, 3)
    with pytest.raises(ValueError, match=r"^input should be 4 dimensional\. Got 0 dimensions\.$"):
        DropBlock2d(0.1, 3)(ember.tensor(1.0))
    with pytest.raises(ValueError, match=r"^input should be 5 dimensional\. Got 4 dimensions\.$"):
        DropBlock3d(0.1, 3)(x4)
    with pytest.raises(TypeError, match=r"^\[drop_block2d\] expected input to be a Tensor, but got list$"):
        drop_block2d([[[[1.0]]]], 0.1, 3)
    with pytest.raises(TypeError, match=r"^\[drop_block3d\] expected input to be a Tensor, but got ndarray$"):
        drop_block3d(np.ones((1, 1, 2, 2, 2)), 0.1, 3)
    # As in TorchVision, an even block grows the padded mask past the input and the product fails.
    with pytest.raises(RuntimeError, match="must match the size"):
        drop_block2d(ember.ones(1, 1, 6, 6), 0.3, 2)
    with pytest.raises(RuntimeError, match=r"^\[drop_block2d\] not implemented for bool input$"):
        drop_block2d(ember.ones(1, 1, 6, 6, dtype=ember.bool), 0.3, 3)


def test_integer_input_gives_a_float_result():
    # TorchVision's mask is then an integer tensor and its float rescaling promotes the product.
    x_np = np.arange(2 * 3 * 7 * 7).reshape(2, 3, 7, 7)
    out = _run(2, ember.from_numpy(x_np), 0.4, 3, seed=3)
    assert out.dtype == ember.get_default_dtype()
    seeds, k = _seeds(3, x_np.shape, 0.4, 3, ember.get_default_dtype())
    np.testing.assert_allclose(out.numpy(), _reference(x_np, _blocks(seeds, k, (7, 7)), 1e-6), rtol=1e-6)
    # In place, the float result cannot be written back into the integer input.
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        drop_block2d(ember.from_numpy(x_np), 0.4, 3, inplace=True)
