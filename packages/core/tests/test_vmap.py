"""ember.func.vmap: every batching rule against a Python loop over the batch (float64, on
contiguous, transposed, broadcast, 0-dim and zero-size examples), the loop fallback and its
warning, in_dims/out_dims, nesting, randomness, chunk_size, transforms inside and around vmap,
and the errors PyTorch raises."""

import json
import pathlib
import warnings

import numpy as np
import pytest

import ember
from ember.func import grad, jacfwd, jacrev, jvp, vmap

RECORDS = {r["name"]: r for r in json.loads((pathlib.Path(ember.__file__).parent / "opdb.json").read_text())}
RNG = np.random.default_rng(5)


def t(a):
    return ember.tensor(np.asarray(a, dtype=np.float64))


def rand(*shape, lo=-2.0, hi=2.0):
    return t(RNG.uniform(lo, hi, size=shape))


def n(x):
    return np.asarray(x.detach().numpy())


def loop(f, *args, in_dims=0):
    """The reference: f on each batch element, stacked."""
    dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args)
    size = next(a.shape[d] for a, d in zip(args, dims, strict=True) if d is not None)
    outs = [f(*[a if d is None else a.select(d, i) for a, d in zip(args, dims, strict=True)]) for i in range(size)]
    if isinstance(outs[0], (tuple, list)):
        return tuple(np.stack([n(o[k]) for o in outs]) for k in range(len(outs[0])))
    return np.stack([n(o) for o in outs])


def check(f, *args, in_dims=0, fallback_ok=False):
    """vmap(f) equals the loop; where the loop raises (f is invalid for the examples), vmap raises
    the same exception type."""
    try:
        want = loop(f, *args, in_dims=in_dims)
    except Exception as error:  # noqa: BLE001 - whatever the op raises, vmap must raise it too
        with pytest.raises(type(error)):
            vmap(f, in_dims=in_dims)(*args)
        return
    with warnings.catch_warnings():
        if not fallback_ok:
            warnings.filterwarnings("error", message="vmap: there is no batching rule")
        got = vmap(f, in_dims=in_dims)(*args)
    if isinstance(got, (tuple, list)):
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(n(g), w, rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_allclose(n(got), want, rtol=1e-12, atol=1e-12)


def batching(kind):
    return sorted(name for name, r in RECORDS.items() if r["batching"] == kind)


# --- rules against the loop ----------------------------------------------------------------------

@pytest.mark.parametrize("name", [o for o in batching("pointwise") if RECORDS[o].get("family") == "unary"])
def test_unary_rules(name):
    op = getattr(ember, name)
    lo = 0.1 if name in ("log", "log2", "log10", "sqrt", "rsqrt", "lgamma", "digamma", "acosh") else -0.9
    hi = 0.9 if name in ("asin", "acos", "atanh", "erfinv", "logit") else 2.0
    if name == "acosh":
        lo, hi = 1.1, 3.0
    x = rand(4, 3, lo=lo, hi=hi)
    if name in ("bitwise_not", "logical_not"):
        x = x.to(ember.int64)
    check(op, x)  # contiguous
    check(op, x.t(), in_dims=1)  # batch in dim 1 of a transposed (non-contiguous) tensor
    check(op, rand(5, lo=lo, hi=hi) if name not in ("bitwise_not", "logical_not") else t([1, 2]).to(ember.int64))


@pytest.mark.parametrize("name", [o for o in batching("pointwise") if RECORDS[o].get("family") in ("binary", "compare")])
def test_binary_rules_broadcast(name):
    op = getattr(ember, name)
    a, b = rand(4, 3, lo=0.5), rand(3, lo=0.5)
    if name.startswith("bitwise"):
        a, b = a.to(ember.int64), b.to(ember.int64)
    check(op, a, b, in_dims=(0, None))  # one batched, the other broadcast
    check(op, a, a.t().contiguous(), in_dims=(0, 1))  # both batched, in different dims
    check(op, a[:, 0], b, in_dims=(0, None))  # a batched 0-dim example against a vector
    check(op, a, a[:, :1], in_dims=(0, 0))  # logical [3] with logical [1]


def test_pointwise_scalar_example_keeps_logical_promotion():
    # float64 0-dim examples times a float32 vector: PyTorch gives float32 (the 0-dim ranks lower)
    x, v = rand(4), ember.ones(3, dtype=ember.float32)
    out = vmap(lambda a: a * v)(x)
    assert out.dtype == ember.float32
    np.testing.assert_allclose(n(out), n(x)[:, None] * np.ones(3), rtol=1e-6)


@pytest.mark.parametrize("f", [
    lambda x: x.sum(), lambda x: x.sum(0), lambda x: x.sum([0, 1], keepdim=True), lambda x: x.mean(-1),
    lambda x: x.amax(1), lambda x: x.amin(), lambda x: x.prod(0), lambda x: x.var(0), lambda x: x.std(),
    lambda x: ember.logsumexp(x, [1]), lambda x: x.norm(), lambda x: x.argmax(1), lambda x: x.argmin(0),
    lambda x: ember.softmax(x, 1), lambda x: ember.log_softmax(x, 0), lambda x: x.cumsum(1), lambda x: x.cumprod(0),
    lambda x: ember.cummax(x, 1), lambda x: ember.logcumsumexp(x, 0), lambda x: ember.sort(x, 1),
    lambda x: x.argsort(0), lambda x: ember.topk(x, 2, 1), lambda x: ember.kthvalue(x, 2, 0),
    lambda x: ember.median(x, 1), lambda x: ember.mode(x, 0), lambda x: x.all(1), lambda x: x.any(),
    lambda x: ember.count_nonzero(x, [0]), lambda x: ember.nansum(x, 1), lambda x: ember.nanmean(x),
])
def test_dim_rules(f):
    x = rand(5, 3, 4)
    check(f, x)
    check(f, x.permute(1, 0, 2), in_dims=1)


@pytest.mark.parametrize("f", [
    lambda x: x.view(12), lambda x: x.reshape(4, -1), lambda x: x.flatten(), lambda x: x.unflatten(1, (2, 2)),
    lambda x: x.permute(1, 0), lambda x: x.transpose(0, 1), lambda x: x.t(), lambda x: x.expand(2, 3, 4),
    lambda x: ember.broadcast_to(x[:1], (3, 4)), lambda x: x[:1].squeeze(), lambda x: x[:1].squeeze(0),
    lambda x: x.unsqueeze(-1), lambda x: x.narrow(1, 1, 2), lambda x: x.select(0, 2), lambda x: x[1:, ::2],
    lambda x: x.unfold(1, 2, 1), lambda x: x.diagonal(), lambda x: x.movedim(0, 1), lambda x: ember.unbind(x, 1),
    lambda x: ember.split(x, [1, 3], 1), lambda x: ember.chunk(x, 2, 0), lambda x: ember.tensor_split(x, [1], 1),
    lambda x: ember.tril(x), lambda x: ember.triu(x, 1), lambda x: ember.cat([x, x], 1),
    lambda x: ember.stack([x, x], 2), lambda x: x.flip(0), lambda x: x.clone(), lambda x: x.contiguous(),
    lambda x: x.detach(), lambda x: ember.zeros_like(x), lambda x: ember.full_like(x, 2.0),
    lambda x: ember.where(x > 0, x, 0.0), lambda x: x.clamp(-1, 1), lambda x: ember.lerp(x, x * 2, 0.25),
    lambda x: x.index_select(1, t([0, 2]).to(ember.int64)), lambda x: x.to(ember.float32),
])
def test_shape_and_view_rules(f):
    x = rand(6, 3, 4)
    check(f, x)
    check(f, x.permute(2, 1, 0), in_dims=2)


def test_cat_and_stack_with_an_unbatched_tensor():
    x, y = rand(4, 3), rand(3)
    check(lambda a, b: ember.cat([a, b]), x, y, in_dims=(0, None))
    check(lambda a, b: ember.stack([b, a], 0), x, y, in_dims=(0, None))
    check(lambda a: ember.stack([a, a * 2]), x[:, 0])  # 0-dim examples


def test_index_add_and_select_backward_rule():
    x, idx = rand(4, 5, 3), t([0, 2, 2]).to(ember.int64)
    src = rand(4, 3, 3)
    check(lambda a, s: a.index_add(0, idx, s), x, src)
    check(lambda s: ember.zeros(5, 3, dtype=ember.float64).index_add(0, idx, s), src)


def test_zero_size_examples_and_empty_batch():
    x = ember.zeros(4, 0, 3, dtype=ember.float64)
    assert vmap(lambda a: a.sum(1))(x).shape == (4, 0)
    assert vmap(ember.sin)(ember.zeros(0, 3, dtype=ember.float64)).shape == (0, 3)


def test_in_place_on_a_batched_tensor_writes_the_input():
    x = rand(4, 3)
    before = n(x).copy()
    out = vmap(lambda a: a.mul_(2))(x)
    np.testing.assert_allclose(n(x), 2 * before)
    np.testing.assert_allclose(n(out), 2 * before)


def test_index_and_repeat_rules():
    """gather / scatter family / take_along_dim / masked_fill with the indices batched, the data
    batched or both, and repeat / tile / roll / fliplr / flipud: each equals the loop and runs
    without the fallback."""
    x = rand(4, 3, 5)
    idx = t(RNG.integers(0, 3, size=(4, 2, 5))).to(ember.int64)
    one_idx = idx[0]
    src = rand(4, 2, 5)
    for dim in (0, -2):
        check(lambda a, i, d=dim: a.gather(d, i), x, idx)  # both batched
        check(lambda a, d=dim: a.gather(d, one_idx), x)  # the index shared
        check(lambda i, d=dim: x[0].gather(d, i), idx)  # only the index batched
        check(lambda a, i, s, d=dim: ember.scatter(a, d, i, s), x, idx, src)
        check(lambda a, i, s, d=dim: ember.scatter_add(a, d, i, s), x, idx, src)
        for reduce in ("sum", "prod", "mean", "amax", "amin"):
            check(lambda a, i, s, d=dim, r=reduce: ember.scatter_reduce(a, d, i, s, r, include_self=False), x, idx, src)
        check(lambda i, s, d=dim: ember.scatter_add(x[0], d, i, s), idx, src)  # self unbatched
        check(lambda a, i, d=dim: ember.take_along_dim(a, i, d), x, idx)
    check(lambda a, i: a.gather(1, i), x.transpose(0, 2), idx.transpose(0, 2), in_dims=2)  # non-contiguous
    check(lambda a, i: a.gather(0, i), rand(4, 0, 3), t(np.zeros((4, 0, 3))).to(ember.int64))  # zero-size
    mask = t(RNG.integers(0, 2, size=(4, 3, 5))).to(ember.bool)
    check(lambda a, m: a.masked_fill(m, -7.0), x, mask)
    check(lambda m: x[0].masked_fill(m, -7.0), mask)  # only the mask batched
    check(lambda a, m: a.masked_fill(m, 2.5), x, mask[:, 0])  # a mask of lower rank broadcasts
    check(lambda a: a.masked_fill(mask[0, 0], 1.0), rand(4, 5))
    check(lambda a: a.masked_fill(t(1.0).to(ember.bool), 3.0), rand(4))  # 0-dim examples
    for f in (lambda a: a.repeat(2, 1, 3), lambda a: a.repeat(2, 2, 1, 1), lambda a: a.tile((2,)),
              lambda a: a.tile((2, 1, 1, 2)), lambda a: ember.roll(a, 1), lambda a: ember.roll(a, (1, -2), (0, 2)),
              lambda a: ember.roll(a, 2, -1), ember.fliplr, ember.flipud):
        check(f, x)
        check(f, x.transpose(0, 1), in_dims=1)
    check(lambda a: a.repeat(3), rand(4))  # 0-dim examples
    check(lambda a: ember.roll(a, 1), rand(4))
    check(lambda a: a.tile((2,)), rand(4, 0))


# --- the fallback --------------------------------------------------------------------------------

def test_op_without_rule_loops_and_warns_once():
    x = rand(4, 5)
    with pytest.warns(UserWarning, match="no batching rule for ember op 'rot90'"):
        out = vmap(lambda a: ember.rot90(a.reshape(5, 1)))(x)
    np.testing.assert_allclose(n(out), loop(lambda a: ember.rot90(a.reshape(5, 1)), x))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # second time: no warning
        vmap(lambda a: ember.rot90(a.reshape(5, 1)))(x)


def test_fallback_with_batched_indices_and_in_place():
    x, idx = rand(4, 6), t([[0, 1], [2, 3], [4, 5], [5, 0]]).to(ember.int64)
    check(lambda a, i: a.gather(0, i), x, idx, fallback_ok=True)
    check(lambda a, i: ember.take_along_dim(a, i, 0), x, idx, fallback_ok=True)
    y = rand(4, 6)
    ref = n(y).copy()
    vmap(lambda a, i: a.index_put_([i], t(0.0)))(y, idx)  # in place, through the loop
    ref[np.arange(4)[:, None], n(idx).astype(int)] = 0.0
    np.testing.assert_allclose(n(y), ref)


def test_data_dependent_shapes_raise():
    x = t([[1.0, 0.0], [1.0, 1.0]])
    with pytest.raises(RuntimeError, match="different shapes for different batch elements"):
        vmap(ember.nonzero)(x)
    with pytest.raises(RuntimeError, match="reads a batched tensor's data"):
        vmap(lambda a: a.sum().item())(x)


# --- in_dims / out_dims / structure --------------------------------------------------------------

def test_in_dims_out_dims_and_pytrees():
    x, y = rand(3, 4), rand(4, 3)
    out = vmap(lambda p: p["a"] + p["b"][0], in_dims=({"a": 0, "b": (1,)},))({"a": x, "b": (y,)})
    np.testing.assert_allclose(n(out), n(x) + n(y).T)
    out = vmap(lambda a: (a, a.sum()), out_dims=(1, 0))(x)
    np.testing.assert_allclose(n(out[0]), n(x).T)
    np.testing.assert_allclose(n(out[1]), n(x).sum(1))
    out = vmap(lambda a, k: a * k, in_dims=(0, None))(x, 3.0)
    np.testing.assert_allclose(n(out), 3 * n(x))
    out = vmap(lambda a: (a, 7), out_dims=(0, None))(x)
    assert out[1] == 7
    c = rand(4)
    np.testing.assert_allclose(n(vmap(lambda a: c)(x)), np.broadcast_to(n(c), (3, 4)))  # unbatched output


def test_errors():
    x = rand(3, 4)
    with pytest.raises(ValueError, match="same size in the mapped dimension, got sizes \\[3, 4\\]"):
        vmap(lambda a, b: a + b)(x, x.t())
    with pytest.raises(ValueError, match="We cannot vmap over non-Tensor arguments"):
        vmap(lambda a, k: a)(x, 2)
    with pytest.raises(ValueError, match="expected in_dim to satisfy -2 <= in_dim < 2"):
        vmap(lambda a: a, in_dims=2)(x)
    with pytest.raises(ValueError, match="in_dims is not compatible with the structure of `inputs`"):
        vmap(lambda a, b: a, in_dims=(0,))(x, x)
    with pytest.raises(ValueError, match="expected `in_dims` to be int or a \\(potentially nested\\) tuple"):
        vmap(lambda a: a, in_dims=[0])(x)
    with pytest.raises(ValueError, match="at least one Tensor input must be mapped over"):
        vmap(lambda a: a, in_dims=None)(x)
    with pytest.raises(ValueError, match="got no inputs"):
        vmap(lambda: x)()
    with pytest.raises(ValueError, match="must only return Tensors"):
        vmap(lambda a: 3)(x)
    with pytest.raises(ValueError, match="can not return a BatchedTensor when out_dim is None"):
        vmap(lambda a: a, out_dims=None)(x)
    with pytest.raises(ValueError, match="chunk_size should be None or greater than 0"):
        vmap(lambda a: a, chunk_size=0)
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        vmap(lambda a: a, randomness="sometimes")
    with pytest.raises(NotImplementedError, match="vmap does not support out= arguments"):
        vmap(lambda a: ember.sin(a, out=ember.empty(4, dtype=ember.float64)))(x)
    with pytest.raises(RuntimeError, match="self is not batched while other arguments are"):
        vmap(lambda a: ember.zeros(4, dtype=ember.float64).add_(a))(x)
    assert ember._C._vmap_current_level() == 0  # errors leave no level behind


# --- nesting, chunks, randomness ------------------------------------------------------------------

def test_nested_vmap_equals_a_double_loop():
    x, y = rand(2, 3, 4), rand(4, 2)

    def f(a, b):
        return ember.sin(a) * b.sum() + a.softmax(0)

    out = vmap(vmap(f, in_dims=(0, None)), in_dims=(0, 1))(x, y)
    want = np.stack([np.stack([n(f(x[i, j], y[:, i])) for j in range(3)]) for i in range(2)])
    np.testing.assert_allclose(n(out), want, rtol=1e-12)
    outer = rand(3, 4)  # the inner function closes over a tensor batched by the outer vmap
    out = vmap(lambda o: vmap(lambda a: a * o)(x[0]))(outer)
    np.testing.assert_allclose(n(out), n(outer)[:, None, :] * n(x[0])[None], rtol=1e-12)


def test_chunk_size_gives_the_same_result():
    x = rand(10, 3)
    f = lambda a: (ember.exp(a) * a.sum(), a.amax())  # noqa: E731
    full = vmap(f)(x)
    for chunk in (1, 3, 10, 20):
        got = vmap(f, chunk_size=chunk)(x)
        for g, w in zip(got, full, strict=True):
            np.testing.assert_allclose(n(g), n(w))


def test_randomness():
    x = ember.zeros(5, 3, dtype=ember.float64)
    with pytest.raises(RuntimeError, match="called random operation while in randomness error mode"):
        vmap(lambda a: a + ember.rand(3, dtype=ember.float64))(x)
    with pytest.raises(RuntimeError, match="called random operation while in randomness error mode"):
        vmap(lambda a: ember.bernoulli(a + 0.5))(x)
    for f in (lambda a: a + ember.rand(3, dtype=ember.float64), lambda a: ember.bernoulli(a + 0.5),
              lambda a: ember.randperm(3) + a, lambda a: a.clone().uniform_()):
        diff = n(vmap(f, randomness="different")(x))
        assert len({tuple(r) for r in diff}) > 1
        same = n(vmap(f, randomness="same")(x))
        assert all((r == same[0]).all() for r in same)
        chunked = n(vmap(f, randomness="same", chunk_size=2)(x))
        assert all((r == chunked[0]).all() for r in chunked)
    with pytest.raises(RuntimeError, match="Cannot ask for different inplace randomness on an unbatched tensor"):
        vmap(lambda a: ember.zeros(3).uniform_() + a, randomness="different")(x)
    nested = n(vmap(vmap(lambda a: a + ember.rand(()), randomness="different"), randomness="different")(x))
    assert len(set(nested.ravel())) == nested.size


# --- with the autograd transforms ---------------------------------------------------------------

def mlp(params, x):
    """A two-layer perceptron written with broadcasting (Ember has no matmul yet)."""
    w1, b1, w2, b2 = params
    h = ember.tanh((x.unsqueeze(-1) * w1).sum(0) + b1)
    return (h.unsqueeze(-1) * w2).sum(0) + b2


def test_per_sample_gradients_of_an_mlp_equal_a_loop():
    params = (rand(4, 8), rand(8), rand(8, 3), rand(3))
    xs, ys = rand(6, 4), rand(6, 3)

    def loss(p, x, y):
        return ((mlp(p, x) - y) ** 2).mean()

    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))(params, xs, ys)
    jac = vmap(jacrev(loss), in_dims=(None, 0, 0))(params, xs, ys)
    for i in range(6):
        one = grad(loss)(params, xs[i], ys[i])
        for got, got_j, want in zip(per_sample, jac, one, strict=True):
            np.testing.assert_allclose(n(got[i]), n(want), rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(n(got_j[i]), n(want), rtol=1e-10, atol=1e-12)
    # the Jacobian of the network's outputs per sample, by reverse and by forward mode
    jr = vmap(jacrev(mlp, argnums=1), in_dims=(None, 0))(params, xs)
    jf = vmap(jacfwd(mlp, argnums=1), in_dims=(None, 0))(params, xs)
    for i in range(6):
        np.testing.assert_allclose(n(jr[i]), n(jacrev(mlp, argnums=1)(params, xs[i])), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(n(jf), n(jr), rtol=1e-10, atol=1e-12)


def test_grad_through_vmap_and_gradcheck():
    x = rand(4, 3).requires_grad_()
    f = vmap(lambda a: (ember.sin(a) * a.sum()).sum())
    assert ember.autograd.gradcheck(lambda a: f(a), (x,), check_forward_ad=True)
    assert ember.autograd.gradgradcheck(lambda a: f(a), (x,))
    assert ember.autograd.gradcheck(lambda a: vmap(lambda r: r.softmax(0), in_dims=1, out_dims=1)(a), (x,))


def test_jvp_inside_vmap_and_jacobians_of_a_vmapped_function():
    x, v = rand(4, 3), rand(4, 3)
    f = lambda a: ember.exp(a) * a.sum()  # noqa: E731
    _, tangents = vmap(lambda a, b: jvp(f, (a,), (b,)))(x, v)
    want = np.stack([n(jvp(f, (x[i],), (v[i],))[1]) for i in range(4)])
    np.testing.assert_allclose(n(tangents), want, rtol=1e-12)
    # jacrev of a function that uses vmap inside (its graph outlives that vmap)
    g = lambda a: vmap(f)(a).sum(0)  # noqa: E731
    np.testing.assert_allclose(n(jacrev(g)(x)), n(jacfwd(g)(x)), rtol=1e-10, atol=1e-12)
    assert jacrev(jacrev(lambda a: (a ** 3).sum()))(x[0]).shape == (3, 3)


def test_weight_closed_over_gets_the_summed_gradient_after_vmap():
    # Note [gradients across vmap levels]: backward after vmap sums the batch for an unbatched weight
    w = rand(3).requires_grad_()
    x = rand(5, 3)
    vmap(lambda xi: (ember.sin(xi * w)).sum())(x).sum().backward()
    want = (np.cos(n(x) * n(w)) * n(x)).sum(0)
    np.testing.assert_allclose(n(w.grad), want, rtol=1e-12)
    # ... while inside vmap, backward is per example (per-sample gradients)
    per = vmap(lambda xi: grad(lambda v: ember.sin(xi * v).sum())(w.detach()))(x)
    np.testing.assert_allclose(n(per), np.cos(n(x) * n(w)) * n(x), rtol=1e-12)
