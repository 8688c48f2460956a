"""Random ops: reproducibility (seeds, generators, thread counts), distributions, errors."""

import numpy as np
import pytest

import ember


def test_same_seed_same_numbers_and_state_round_trip():
    ember.manual_seed(123)
    a = ember.rand(1000)
    state = ember.get_rng_state()
    b = ember.randn(1000)
    ember.manual_seed(123)
    assert ember.rand(1000).tolist() == a.tolist()
    ember.set_rng_state(state)
    assert ember.randn(1000).tolist() == b.tolist()
    assert ember.initial_seed() == 123
    assert ember.rand(3).tolist() != ember.rand(3).tolist()  # the offset advances


def test_generators_are_independent_of_each_other_and_of_threads():
    g1 = ember.Generator().manual_seed(5)
    g2 = ember.Generator().manual_seed(5)
    draws = []
    for threads in (1, 2):
        ember.set_num_threads(threads)
        draws.append(ember.randn(200_000, generator=g1 if threads == 1 else g2).numpy().tobytes())
    ember.set_num_threads(2)
    assert draws[0] == draws[1]
    ember.manual_seed(0)
    x = ember.rand(4, generator=ember.Generator().manual_seed(9))
    assert x.tolist() == ember.rand(4, generator=ember.Generator().manual_seed(9)).tolist()


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16, ember.bfloat16])
def test_uniform_and_normal_statistics(dtype):
    g = ember.Generator().manual_seed(1)
    u = ember.rand(200_000, generator=g, dtype=dtype).to(ember.float64).numpy()
    assert u.min() >= 0.0 and u.max() <= 1.0
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.005
    n = ember.randn(200_000, generator=g, dtype=dtype).to(ember.float64).numpy()
    assert abs(n.mean()) < 0.02 and abs(n.std() - 1.0) < 0.02
    m = ember.normal(3.0, 0.5, (100_000,), generator=g, dtype=dtype).to(ember.float64).numpy()
    assert abs(m.mean() - 3.0) < 0.02 and abs(m.std() - 0.5) < 0.02


def test_randint_randperm_bernoulli_multinomial():
    g = ember.Generator().manual_seed(2)
    r = ember.randint(-3, 4, (50_000,), generator=g).numpy()
    assert r.min() == -3 and r.max() == 3 and abs(r.mean()) < 0.05
    assert ember.randint(5, (2, 2)).dtype == ember.int64
    p = ember.randperm(100, generator=g).tolist()
    assert sorted(p) == list(range(100)) and p != list(range(100))
    assert ember.randperm(0).shape == (0,)
    b = ember.bernoulli(ember.full((100_000,), 0.25, dtype=ember.float64), generator=g).numpy()
    assert set(np.unique(b)) <= {0.0, 1.0} and abs(b.mean() - 0.25) < 0.01
    probs = ember.tensor([[0.0, 0.2, 0.8], [1.0, 0.0, 0.0]])
    draws = ember.multinomial(probs, 3000, replacement=True, generator=g).numpy()
    assert (draws[0] != 0).all() and abs((draws[0] == 2).mean() - 0.8) < 0.03 and (draws[1] == 0).all()
    no_repeat = ember.multinomial(ember.tensor([0.1, 0.2, 0.3, 0.4]), 4, generator=g).tolist()
    assert sorted(no_repeat) == [0, 1, 2, 3]


def test_in_place_draws_reach_non_contiguous_views():
    x = ember.zeros(3, 4)
    x.t().uniform_(2.0, 3.0)
    assert ((x >= 2.0) & (x < 3.0)).all()
    y = ember.zeros(10_000)
    y[::2].normal_(5.0, 1.0)
    arr = y.numpy()
    assert (arr[1::2] == 0).all() and abs(arr[::2].mean() - 5.0) < 0.05
    z = ember.zeros(10_000, dtype=ember.float64).bernoulli_(0.5)
    assert abs(z.mean().item() - 0.5) < 0.02


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: ember.rand(2, dtype=ember.int64), RuntimeError, r"\[rand\] expected a floating point dtype, but got int64"),
        (lambda: ember.randint(5, 5, (2,)), RuntimeError, r"random_ expects 'from' to be less than 'to', but got from=5 >= to=5"),
        (lambda: ember.randint(1, 2, 3, 4), TypeError, r"takes \(high, size\) or \(low, high, size\)"),
        (lambda: ember.normal(0.0, -1.0, (2,)), RuntimeError, r"normal expects std >= 0.0, but found std -1"),
        (lambda: ember.zeros(2).uniform_(1.0, 0.0), RuntimeError, r"expects to return a \[from, to\) range"),
        (lambda: ember.bernoulli(ember.tensor([1.5])), RuntimeError, r"Expected p_in >= 0 && p_in <= 1"),
        (lambda: ember.multinomial(ember.tensor([0.5, -0.1]), 1), RuntimeError, r"contains either `inf`, `nan` or element < 0"),
        (lambda: ember.multinomial(ember.tensor([0.0, 0.0]), 1), RuntimeError, r"sum of probabilities <= 0"),
        (lambda: ember.multinomial(ember.tensor([0.5, 0.5]), 3), RuntimeError, r"cannot sample n_sample > prob_dist.size\(-1\)"),
        (lambda: ember.randperm(-1), RuntimeError, r"n must be non-negative"),
        (lambda: ember.set_rng_state(ember.zeros(16)), TypeError, r"expected the RNG state as a uint8 tensor"),
        (lambda: ember.set_rng_state(ember.zeros(3, dtype=ember.uint8)), RuntimeError, r"RNG state of 5056 bytes"),
        (lambda: ember.Generator("cuda"), NotImplementedError, r"\[Generator\] not implemented for cuda"),
    ],
)
def test_bad_random_arguments(call, error, message):
    with pytest.raises(error, match=message):
        call()
