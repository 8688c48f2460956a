"""ember.quasirandom.SobolEngine: the published first points, the stratification that defines a
Sobol' sequence (checked for every dimension of a draw), an independent construction of each point
from its Gray code, the engine's state operations and its errors. Bit-for-bit parity with
torch.quasirandom is checked in test_random_parity.py (the scrambled engines draw from the
generator)."""

import numpy as np
import pytest

import ember
from ember.quasirandom import SobolEngine


def test_first_points_of_the_first_two_dimensions_are_the_published_ones():
    got = SobolEngine(2).draw(8, dtype=ember.float64).numpy()
    want = [[0, 0], [0.5, 0.5], [0.75, 0.25], [0.25, 0.75],
            [0.375, 0.375], [0.875, 0.875], [0.625, 0.125], [0.125, 0.625]]
    np.testing.assert_array_equal(got, np.array(want))


def _strata_counts(points: np.ndarray, m: int) -> np.ndarray:
    """For each dimension, how many points fall in each of the 2^m intervals [k/2^m, (k+1)/2^m)."""
    cells = np.floor(points * 2**m).astype(np.int64)
    return np.stack([np.bincount(cells[:, d], minlength=2**m) for d in range(points.shape[1])])


@pytest.mark.parametrize("scramble", [False, True])
def test_every_dimension_has_one_point_per_dyadic_interval(scramble):
    """The first 2^m points of each coordinate of a Sobol' sequence (scrambled or not) put exactly
    one point in each interval of length 2^-m; this checks all 21,201 dimensions' direction numbers."""
    engine = SobolEngine(SobolEngine.MAXDIM, scramble=scramble, seed=11)
    points = engine.draw_base2(8, dtype=ember.float64).numpy()
    assert points.shape == (256, SobolEngine.MAXDIM)
    assert ((points >= 0) & (points < 1)).all()
    assert (_strata_counts(points, 8) == 1).all()


def test_the_first_two_dimensions_form_a_net():
    """Dimensions 1 and 2 form a (0, m, 2)-net: every dyadic box of area 2^-m holds one point."""
    points = SobolEngine(2).draw_base2(10, dtype=ember.float64).numpy()
    for a in range(11):
        cells = np.floor(points[:, 0] * 2**a).astype(np.int64) * 2 ** (10 - a) + np.floor(
            points[:, 1] * 2 ** (10 - a)).astype(np.int64)
        assert np.bincount(cells, minlength=2**10).max() == 1


def _gray_code_points(state: np.ndarray, shift: np.ndarray, count: int) -> np.ndarray:
    """Point i is the shift XOR the direction numbers of the set bits of i's Gray code, i ^ (i >> 1):
    computed directly for each i, not by the engine's running XOR."""
    out = np.empty((count, state.shape[0]), np.int64)
    for i in range(count):
        g, x, bit = i ^ (i >> 1), shift.copy(), 0
        while g:
            if g & 1:
                x ^= state[:, bit]
            g >>= 1
            bit += 1
        out[i] = x
    return out


@pytest.mark.parametrize("scramble", [False, True])
def test_points_equal_their_gray_code_construction(scramble):
    engine = SobolEngine(40, scramble=scramble, seed=5)
    want = _gray_code_points(engine.sobolstate.numpy(), engine.shift.numpy(), 300) / 2.0**30
    got = np.concatenate([engine.draw(1, dtype=ember.float64).numpy(), engine.draw(99, dtype=ember.float64).numpy(),
                          engine.fast_forward(50).draw(150, dtype=ember.float64).numpy()])
    # As in PyTorch, the first point (the shift) is computed in the default dtype at construction,
    # float32 here, and only converted to the dtype it is drawn in.
    np.testing.assert_array_equal(got[0], (want[0] * 2.0**30).astype(np.float32) * np.float32(2.0**-30))
    np.testing.assert_array_equal(got[1:100], want[1:100])
    np.testing.assert_array_equal(got[100:], want[150:300])
    # float32 points are the integers rounded to float32, then scaled by 2^-30
    f32 = SobolEngine(40, scramble=scramble, seed=5).draw(300).numpy()
    assert f32.dtype == np.float32
    np.testing.assert_array_equal(f32, (want * 2.0**30).astype(np.float32) * np.float32(2.0**-30))


def test_state_operations():
    engine = SobolEngine(5, scramble=True, seed=2)
    first = engine.draw(16)
    engine.reset()
    assert engine.num_generated == 0
    np.testing.assert_array_equal(engine.draw(16).numpy(), first.numpy())
    engine.reset().fast_forward(3)
    np.testing.assert_array_equal(engine.draw(4).numpy(), first.numpy()[3:7])
    out = ember.empty(0)
    res = engine.reset().draw(4, out=out)
    assert res is out and tuple(out.shape) == (4, 5)
    np.testing.assert_array_equal(out.numpy(), first.numpy()[:4])
    assert engine.draw(0).shape == (0, 5)
    assert repr(engine) == "SobolEngine(dimension=5, scramble=True, seed=2)"
    assert repr(SobolEngine(3)) == "SobolEngine(dimension=3)"


def test_scrambling_follows_its_seed_or_the_default_generator():
    a = SobolEngine(6, scramble=True, seed=1).draw(8).numpy()
    np.testing.assert_array_equal(SobolEngine(6, scramble=True, seed=1).draw(8).numpy(), a)
    assert not np.array_equal(SobolEngine(6, scramble=True, seed=2).draw(8).numpy(), a)
    ember.manual_seed(3)
    b = SobolEngine(6, scramble=True).draw(8).numpy()
    c = SobolEngine(6, scramble=True).draw(8).numpy()  # the generator moved on
    assert not np.array_equal(b, c)
    ember.manual_seed(3)
    np.testing.assert_array_equal(SobolEngine(6, scramble=True).draw(8).numpy(), b)
    assert ember.quasirandom.SobolEngine is SobolEngine


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(ValueError, match=r"Supported range of dimensionality for SobolEngine is \[1, 21201\]"):
        SobolEngine(0)
    with pytest.raises(ValueError, match=r"\[1, 21201\]"):
        SobolEngine(21202)
    with pytest.raises(TypeError, match="dimension must be an int, but got str"):
        SobolEngine("3")
    engine = SobolEngine(3)
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        engine.draw(-1)
    with pytest.raises(NotImplementedError, match="float32 or float64, but got ember.float16"):
        engine.draw(2, dtype=ember.float16)
    with pytest.raises(ValueError, match="fast_forward: n must be non-negative, but got -2"):
        engine.fast_forward(-2)
    engine.draw(3)
    with pytest.raises(ValueError, match=r"require n to be a power of 2. 3 points have been previously generated"):
        engine.draw_base2(2)
