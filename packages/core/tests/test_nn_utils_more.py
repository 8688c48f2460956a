"""ember.nn.utils.prune, the hook-based weight_norm / spectral_norm, skip_init, clip_grad_norm,
the conv weight memory-format conversions, the deprecated nn.init aliases, ember.utils.hooks,
ember.utils.dlpack and ember.nn.modules.utils (issue 18), checked against float64 NumPy
references computed here."""

import collections
import pickle
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.utils.prune
from ember.nn.utils import prune

F64 = ember.float64


def _np(t):
    return t.detach().numpy().astype(np.float64)


def _set(param, values):
    with ember.no_grad():
        param.copy_(ember.tensor(np.asarray(values, dtype=np.float64)))


def _linear(in_f=3, out_f=4, seed=0):
    """A float64 Linear with distinct, fixed weights (no ties among |w|)."""
    rng = np.random.default_rng(seed)
    m = nn.Linear(in_f, out_f, dtype=F64)
    w = rng.permutation(np.arange(1, in_f * out_f + 1)).reshape(out_f, in_f) * rng.choice([-1, 1], (out_f, in_f))
    _set(m.weight, w / 10.0)
    _set(m.bias, rng.standard_normal(out_f))
    return m


def _conv(seed=1):
    rng = np.random.default_rng(seed)
    m = nn.Conv2d(3, 4, 2, dtype=F64)
    _set(m.weight, rng.standard_normal((4, 3, 2, 2)))
    _set(m.bias, rng.standard_normal(4))
    return m


def _l1_mask(w, amount, default=None):
    """NumPy L1 unstructured mask: among the entries still 1 in default, zero the `amount`
    smallest |w| (amount an int count or a float fraction of those entries)."""
    default = np.ones_like(w) if default is None else default
    alive = np.flatnonzero(default.reshape(-1) == 1)
    k = amount if isinstance(amount, int) else round(amount * alive.size)
    mask = default.reshape(-1).copy()
    order = np.argsort(np.abs(w.reshape(-1)[alive]), kind="stable")
    mask[alive[order[:k]]] = 0
    return mask.reshape(w.shape)


def _ln_mask(w, amount, n, dim, default=None):
    """NumPy Ln structured mask: keep the channels along dim of largest Ln norm, among those
    still alive in default."""
    default = np.ones_like(w) if default is None else default
    dim = dim % w.ndim
    wd = np.moveaxis(w, dim, 0).reshape(w.shape[dim], -1)
    dd = np.moveaxis(default, dim, 0).reshape(w.shape[dim], -1)
    alive = np.flatnonzero(dd.sum(axis=1) != 0)
    norms = np.linalg.norm(wd[alive], ord=n, axis=1)
    k = amount if isinstance(amount, int) else round(amount * alive.size)
    keep = alive[np.argsort(-norms, kind="stable")[:alive.size - k]]
    channel = np.zeros(w.shape[dim])
    channel[keep] = 1
    shape = [1] * w.ndim
    shape[dim] = -1
    return default * channel.reshape(shape)


def _hooks_of(module, kind):
    return [h for h in module._forward_pre_hooks.values() if isinstance(h, kind)]


# ---- imports --------------------------------------------------------------------------------


def test_import_forms_and_exports():
    assert ember.nn.utils.prune is prune
    for name in ("prune", "memory_format", "weight_norm", "remove_weight_norm", "spectral_norm",
                 "remove_spectral_norm", "skip_init", "clip_grad_norm", "convert_conv2d_weight_memory_format",
                 "convert_conv3d_weight_memory_format"):
        assert name in nn.utils.__all__ and hasattr(nn.utils, name)
    for name in ("BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured", "L1Unstructured",
                 "RandomStructured", "LnStructured", "CustomFromMask", "identity", "random_unstructured",
                 "l1_unstructured", "random_structured", "ln_structured", "global_unstructured", "custom_from_mask",
                 "remove", "is_pruned"):
        assert name in prune.__all__ and hasattr(prune, name)
    assert {"hooks", "dlpack"} <= set(ember.utils.__all__)
    import ember.nn.modules.utils as mu
    import ember.nn.utils.memory_format as mf
    import ember.utils.dlpack as dl
    import ember.utils.hooks as hk
    assert mu.__all__ == ["consume_prefix_in_state_dict_if_present"]
    assert ember.nn.modules.utils is mu
    assert mf.convert_conv2d_weight_memory_format is nn.utils.convert_conv2d_weight_memory_format
    assert hk.__all__ == ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks", "BackwardHook"]
    assert dl.to_dlpack is ember.to_dlpack


# ---- prune: unstructured ----------------------------------------------------------------------


def test_l1_unstructured_linear_mask_state_dict_and_forward():
    m = _linear()
    w = _np(m.weight)
    assert prune.l1_unstructured(m, "weight", amount=0.3) is m
    ref = _l1_mask(w, 0.3)
    assert ref.sum() == 12 - 4  # round(0.3 * 12) = 4 pruned
    np.testing.assert_array_equal(_np(m.weight_mask), ref)
    assert list(m.state_dict()) == ["bias", "weight_orig", "weight_mask"]
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_orig"]
    assert [n for n, _ in m.named_buffers()] == ["weight_mask"]
    assert "weight" not in m._parameters and not isinstance(m.weight, nn.Parameter)
    np.testing.assert_array_equal(_np(m.weight), w * ref)
    x = np.random.default_rng(5).standard_normal((2, 3))
    out = m(ember.tensor(x))
    np.testing.assert_allclose(_np(out), x @ (w * ref).T + _np(m.bias), rtol=1e-12, atol=1e-12)
    assert prune.is_pruned(m) and len(_hooks_of(m, prune.L1Unstructured)) == 1


def test_pruned_weight_follows_orig_through_the_pre_hook_and_grad_is_masked():
    m = _linear()
    prune.l1_unstructured(m, "weight", amount=5)
    mask = _np(m.weight_mask)
    _set(m.weight_orig, np.full((4, 3), 2.0))
    x = np.ones((1, 3))
    out = m(ember.tensor(x))
    np.testing.assert_allclose(_np(out), x @ (2.0 * mask).T + _np(m.bias), rtol=1e-12)
    out.sum().backward()
    np.testing.assert_allclose(_np(m.weight_orig.grad), mask * (np.ones((4, 1)) @ x), rtol=1e-12)


def test_iterative_unstructured_pruning_composes_through_a_container():
    m = _linear()
    w = _np(m.weight)
    prune.l1_unstructured(m, "weight", amount=0.5)
    first = _l1_mask(w, 0.5)
    prune.l1_unstructured(m, "weight", amount=0.5)  # half of the 6 left
    second = _l1_mask(w, 0.5, first)
    np.testing.assert_array_equal(_np(m.weight_mask), second)
    assert second.sum() == 3
    (hook,) = _hooks_of(m, prune.BasePruningMethod)
    assert isinstance(hook, prune.PruningContainer) and len(hook) == 2
    assert [type(h) for h in hook] == [prune.L1Unstructured, prune.L1Unstructured] and hook[0].amount == 0.5
    prune.l1_unstructured(m, "weight", amount=1)
    np.testing.assert_array_equal(_np(m.weight_mask), _l1_mask(w, 1, second))
    assert len(_hooks_of(m, prune.PruningContainer)[0]) == 3
    assert list(m.state_dict()) == ["bias", "weight_orig", "weight_mask"]


def test_importance_scores_decide_the_mask():
    m = _linear()
    scores = np.arange(12, dtype=np.float64).reshape(4, 3)[::-1].copy()
    prune.l1_unstructured(m, "weight", amount=4, importance_scores=ember.tensor(scores))
    np.testing.assert_array_equal(_np(m.weight_mask), _l1_mask(scores, 4))


def test_random_unstructured_prunes_the_count_and_composes():
    m = _linear(4, 5)
    prune.random_unstructured(m, "weight", amount=0.25)
    first = _np(m.weight_mask)
    assert first.sum() == 20 - 5 and set(np.unique(first)) <= {0.0, 1.0}
    prune.random_unstructured(m, "weight", amount=3)
    second = _np(m.weight_mask)
    assert second.sum() == 15 - 3 and np.all(second <= first)


def test_identity_and_custom_from_mask():
    m = _linear()
    w = _np(m.weight)
    prune.identity(m, "weight")
    np.testing.assert_array_equal(_np(m.weight_mask), np.ones((4, 3)))
    custom = (np.arange(12).reshape(4, 3) % 3 != 0).astype(np.float64)
    prune.custom_from_mask(m, "weight", mask=ember.tensor(custom))
    np.testing.assert_array_equal(_np(m.weight_mask), custom)
    second = (np.arange(12).reshape(4, 3) % 2 == 0).astype(np.float64)
    prune.custom_from_mask(m, "weight", mask=ember.tensor(second))
    np.testing.assert_array_equal(_np(m.weight_mask), custom * second)
    np.testing.assert_array_equal(_np(m.weight), w * custom * second)


def test_prune_method_on_a_bare_tensor():
    t = ember.tensor([3.0, -1.0, 2.0, 0.5], dtype=F64)
    np.testing.assert_array_equal(_np(prune.L1Unstructured(2).prune(t)), [3.0, 0.0, 2.0, 0.0])
    np.testing.assert_array_equal(_np(prune.L1Unstructured(0.5).compute_mask(t, ember.ones(4, dtype=F64))),
                                  [1, 0, 1, 0])
    scores = ember.tensor([0.0, 1.0, 2.0, 3.0], dtype=F64)
    np.testing.assert_array_equal(_np(prune.L1Unstructured(1).prune(t, importance_scores=scores)), [0.0, -1.0, 2.0, 0.5])
    np.testing.assert_array_equal(_np(prune.Identity().prune(t)), _np(t))


# ---- prune: structured ------------------------------------------------------------------------


@pytest.mark.parametrize("n,dim,amount", [(2, 0, 2), (1, 0, 0.5), (2, 1, 1), (float("inf"), -1, 1), (1, 1, 0.34)])
def test_ln_structured_conv2d(n, dim, amount):
    m = _conv()
    w = _np(m.weight)
    prune.ln_structured(m, "weight", amount=amount, n=n, dim=dim)
    np_n = np.inf if n == float("inf") else n
    ref = _ln_mask(w, amount, np_n, dim)
    np.testing.assert_array_equal(_np(m.weight_mask), ref)
    assert list(m.state_dict()) == ["bias", "weight_orig", "weight_mask"]
    x = np.random.default_rng(2).standard_normal((1, 3, 3, 3))
    out = m(ember.tensor(x))
    ref_conv = nn.Conv2d(3, 4, 2, dtype=F64)
    _set(ref_conv.weight, w * ref)
    _set(ref_conv.bias, _np(m.bias))
    np.testing.assert_allclose(_np(out), _np(ref_conv(ember.tensor(x))), rtol=1e-12, atol=1e-12)
    # the output channels pruned along dim 0 are just the bias
    if dim == 0:
        dead = np.flatnonzero(ref.reshape(4, -1).sum(axis=1) == 0)
        np.testing.assert_allclose(_np(out)[0, dead], np.broadcast_to(_np(m.bias)[dead, None, None], (len(dead), 2, 2)))


def test_structured_after_unstructured_only_sees_live_channels():
    m = _conv()
    w = _np(m.weight)
    prune.ln_structured(m, "weight", amount=1, n=2, dim=0)
    first = _ln_mask(w, 1, 2, 0)
    prune.l1_unstructured(m, "weight", amount=6)
    second = _l1_mask(w, 6, first)
    np.testing.assert_array_equal(_np(m.weight_mask), second)
    prune.ln_structured(m, "weight", amount=1, n=1, dim=0)  # one of the 3 live channels more
    np.testing.assert_array_equal(_np(m.weight_mask), _ln_mask(w, 1, 1, 0, second))
    assert (_np(m.weight_mask).reshape(4, -1).sum(axis=1) != 0).sum() == 2


def test_random_structured_prunes_whole_channels():
    m = _conv()
    prune.random_structured(m, "weight", amount=2, dim=1)
    mask = _np(m.weight_mask)
    per_channel = mask.transpose(1, 0, 2, 3).reshape(3, -1)
    assert sorted(per_channel.sum(axis=1).tolist()) == [0.0, 0.0, 16.0]
    prune.random_structured(m, "weight", amount=0, dim=1)
    np.testing.assert_array_equal(_np(m.weight_mask), mask)


# ---- prune: global, remove, is_pruned ---------------------------------------------------------


def test_global_unstructured_across_two_modules():
    a, b = _linear(), _conv()
    wa, wb = _np(a.weight), _np(b.weight)
    prune.global_unstructured([(a, "weight"), (b, "weight")], pruning_method=prune.L1Unstructured, amount=20)
    ref = _l1_mask(np.concatenate([wa.reshape(-1), wb.reshape(-1)]), 20)
    np.testing.assert_array_equal(_np(a.weight_mask), ref[:12].reshape(4, 3))
    np.testing.assert_array_equal(_np(b.weight_mask), ref[12:].reshape(4, 3, 2, 2))
    assert isinstance(_hooks_of(a, prune.BasePruningMethod)[0], prune.CustomFromMask)
    assert list(b.state_dict()) == ["bias", "weight_orig", "weight_mask"]


def test_global_unstructured_respects_existing_masks_scores_and_generators():
    a, b = _linear(), _conv()
    wa, wb = _np(a.weight), _np(b.weight)
    prune.l1_unstructured(a, "weight", amount=6)
    ma = _np(a.weight_mask)
    pairs = ((mod, "weight") for mod in (a, b))  # a generator: read once
    prune.global_unstructured(pairs, prune.L1Unstructured, amount=0.25)
    default = np.concatenate([ma.reshape(-1), np.ones(48)])
    ref = _l1_mask(np.concatenate([(wa * ma).reshape(-1), wb.reshape(-1)]), 0.25, default)
    np.testing.assert_array_equal(_np(a.weight_mask), ref[:12].reshape(4, 3))
    np.testing.assert_array_equal(_np(b.weight_mask), ref[12:].reshape(4, 3, 2, 2))
    assert isinstance(_hooks_of(a, prune.BasePruningMethod)[0], prune.PruningContainer)

    c, d = _linear(), _linear(seed=3)
    scores = {(c, "weight"): ember.tensor(np.arange(12.0).reshape(4, 3))}
    prune.global_unstructured([(c, "weight"), (d, "weight")], prune.L1Unstructured, importance_scores=scores,
                              amount=3)
    ref = _l1_mask(np.concatenate([np.arange(12.0), _np(d.weight_orig).reshape(-1)]), 3)
    np.testing.assert_array_equal(_np(c.weight_mask), ref[:12].reshape(4, 3))


def test_remove_restores_a_plain_parameter():
    m = _linear()
    w = _np(m.weight)
    prune.l1_unstructured(m, "weight", amount=4)
    prune.l1_unstructured(m, "weight", amount=2)
    mask = _np(m.weight_mask)
    assert prune.remove(m, "weight") is m
    assert isinstance(m.weight, nn.Parameter) and m.weight.requires_grad
    assert list(m.state_dict()) == ["bias", "weight"]
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight"]
    assert not hasattr(m, "weight_orig") and not hasattr(m, "weight_mask")
    assert not prune.is_pruned(m) and not m._forward_pre_hooks
    np.testing.assert_array_equal(_np(m.weight), w * mask)
    x = np.ones((1, 3))
    np.testing.assert_allclose(_np(m(ember.tensor(x))), x @ (w * mask).T + _np(m.bias), rtol=1e-12)
    m(ember.tensor(x)).sum().backward()
    assert m.weight.grad is not None


def test_is_pruned_looks_into_submodules_and_state_dict_round_trips():
    net = nn.Sequential(_linear(), nn.ReLU(), _linear(4, 2))
    assert not prune.is_pruned(net)
    prune.l1_unstructured(net[2], "bias", amount=1)
    assert prune.is_pruned(net)
    assert list(net.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias_orig", "2.bias_mask"]
    other = nn.Sequential(_linear(seed=7), nn.ReLU(), _linear(4, 2, seed=8))
    prune.identity(other[2], "bias")
    other.load_state_dict(net.state_dict())
    x = ember.tensor(np.ones((1, 3)))
    np.testing.assert_allclose(_np(other(x)), _np(net(x)), rtol=1e-12)


# ---- prune: errors --------------------------------------------------------------------------


def test_prune_amount_validation_and_rollback():
    m = _linear()
    with pytest.raises(ValueError, match=r"amount=1\.5 should either be a float in the range \[0, 1\] or a "
                                         r"non-negative integer"):
        prune.l1_unstructured(m, "weight", amount=1.5)
    with pytest.raises(ValueError, match=r"amount=-1 should either be a float"):
        prune.random_unstructured(m, "weight", amount=-1)
    with pytest.raises(TypeError, match=r"Invalid type for amount: a\. Must be int or float\."):
        prune.L1Unstructured("a")
    with pytest.raises(ValueError, match=r"amount=13 should be smaller than the number of parameters to prune=12"):
        prune.l1_unstructured(m, "weight", amount=13)
    # the failed pruning put the parameter back (last in registration order, as PyTorch)
    assert list(m.state_dict()) == ["bias", "weight"] and isinstance(m.weight, nn.Parameter)
    assert not prune.is_pruned(m)


def test_prune_structural_errors():
    m = _linear()
    with pytest.raises(ValueError, match=r"Structured pruning can only be applied to multidimensional tensors\. "
                                         r"Found tensor of shape .*\[4\].* with 1 dims"):
        prune.ln_structured(m, "bias", amount=1, n=2, dim=0)
    with pytest.raises(IndexError, match=r"Invalid index 2 for tensor of size"):
        prune.ln_structured(m, "weight", amount=1, n=2, dim=2)
    with pytest.raises(IndexError, match=r"Invalid index 5 for tensor of size"):
        prune.random_structured(m, "weight", amount=1, dim=5)
    with pytest.raises(ValueError, match=r"Parameter 'weight' of module Linear\(.*\) has to be pruned before pruning "
                                         r"can be removed"):
        prune.remove(m, "weight")
    with pytest.raises(AssertionError, match=r"importance_scores should have the same shape as parameter weight of"):
        prune.l1_unstructured(m, "weight", amount=1, importance_scores=ember.ones(2))
    with pytest.raises(AssertionError, match=r"importance_scores should have the same shape as tensor t"):
        prune.L1Unstructured(1).prune(ember.ones(3), importance_scores=ember.ones(2))
    with pytest.raises(AssertionError, match=r"default_mask shape .* must match self\.mask shape"):
        prune.custom_from_mask(m, "weight", mask=ember.ones(2, 2))
    method = prune.L1Unstructured(1)
    method._tensor_name = None
    with pytest.raises(AssertionError, match=r"Module Linear\(.*\) has to be pruned$"):
        method.apply_mask(m)
    with pytest.raises(AssertionError, match="has to be pruned before pruning can be removed"):
        method.remove(m)


def test_global_and_container_errors():
    m = _linear()
    with pytest.raises(TypeError, match=r"global_unstructured\(\): parameters is not an Iterable"):
        prune.global_unstructured(3, prune.L1Unstructured, amount=1)
    with pytest.raises(TypeError, match=r"global_unstructured\(\): importance_scores must be of type dict"):
        prune.global_unstructured([(m, "weight")], prune.L1Unstructured, importance_scores=[1], amount=1)
    with pytest.raises(TypeError, match=r'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`\. '
                                        r"Found method .*LnStructured.* of type structured"):
        prune.global_unstructured([(m, "weight")], prune.LnStructured, amount=1, n=1, dim=0)
    assert not prune.is_pruned(m)
    with pytest.raises(TypeError, match=r"<class 'int'> is not a BasePruningMethod subclass"):
        prune.PruningContainer().add_pruning_method(3)
    a, b = prune.L1Unstructured(1), prune.L1Unstructured(1)
    a._tensor_name, b._tensor_name = "weight", "bias"
    with pytest.raises(ValueError, match=r"Can only add pruning methods acting on the parameter named 'weight' to "
                                         r"PruningContainer .*\. Found 'bias'"):
        prune.PruningContainer(a).add_pruning_method(b)
    with pytest.raises(TypeError):
        prune.BasePruningMethod()  # abstract


def test_failed_repruning_keeps_the_earlier_hook():
    m = _linear()
    prune.l1_unstructured(m, "weight", amount=2)
    mask = _np(m.weight_mask)
    with pytest.raises(ValueError, match="should be smaller than the number of parameters"):
        prune.l1_unstructured(m, "weight", amount=11)  # only 10 left
    (hook,) = _hooks_of(m, prune.BasePruningMethod)
    assert isinstance(hook, prune.L1Unstructured)
    np.testing.assert_array_equal(_np(m.weight_mask), mask)
    prune.l1_unstructured(m, "weight", amount=1)
    with pytest.raises(ValueError):
        prune.l1_unstructured(m, "weight", amount=12)
    (hook,) = _hooks_of(m, prune.BasePruningMethod)
    assert isinstance(hook, prune.PruningContainer) and len(hook) == 2


# ---- weight_norm (hook-based) -------------------------------------------------------------------


def test_weight_norm_linear_parameters_warning_and_forward():
    m = _linear()
    w = _np(m.weight)
    with pytest.warns(FutureWarning, match=r"`torch\.nn\.utils\.weight_norm` is deprecated in favor of "
                                           r"`torch\.nn\.utils\.parametrizations\.weight_norm`\."):
        assert nn.utils.weight_norm(m) is m
    assert list(m.state_dict()) == ["bias", "weight_g", "weight_v"]
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_g", "weight_v"]
    np.testing.assert_allclose(_np(m.weight_g), np.linalg.norm(w, axis=1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(_np(m.weight_v), w, rtol=1e-12)
    np.testing.assert_allclose(_np(m.weight), w, rtol=1e-12)
    g = np.array([[1.0], [2.0], [0.5], [3.0]])
    _set(m.weight_g, g)
    x = np.random.default_rng(0).standard_normal((2, 3))
    out = m(ember.tensor(x))
    ref_w = g * w / np.linalg.norm(w, axis=1, keepdims=True)
    np.testing.assert_allclose(_np(out), x @ ref_w.T + _np(m.bias), rtol=1e-12)
    out.sum().backward()
    assert m.weight_g.grad is not None and m.weight_v.grad is not None
    # d(sum)/dg_i = sum_j x-sums * v_ij / ||v_i||
    np.testing.assert_allclose(_np(m.weight_g.grad)[:, 0],
                               (x.sum(axis=0) * w / np.linalg.norm(w, axis=1, keepdims=True)).sum(axis=1), rtol=1e-10)


@pytest.mark.parametrize("dim,g_shape", [(None, ()), (-1, ()), (1, (1, 3)), (-2, (4, 1))])
def test_weight_norm_dims(dim, g_shape):
    m = _linear()
    w = _np(m.weight)
    with pytest.warns(FutureWarning):
        nn.utils.weight_norm(m, dim=dim)
    assert tuple(m.weight_g.shape) == g_shape
    axis = None if g_shape == () else (0 if dim == 1 else 1)
    np.testing.assert_allclose(_np(m.weight_g), np.linalg.norm(w, axis=axis, keepdims=axis is not None), rtol=1e-12)
    _set(m.weight_g, np.full(g_shape, 2.0))
    m(ember.ones(1, 3, dtype=F64))
    norm = np.linalg.norm(w) if axis is None else np.linalg.norm(w, axis=axis, keepdims=True)
    np.testing.assert_allclose(_np(m.weight), 2.0 * w / norm, rtol=1e-12)


def test_weight_norm_conv2d_and_remove():
    m = _conv()
    w = _np(m.weight)
    with pytest.warns(FutureWarning):
        nn.utils.weight_norm(m, name="weight")
    assert tuple(m.weight_g.shape) == (4, 1, 1, 1)
    np.testing.assert_allclose(_np(m.weight_g).reshape(4), np.linalg.norm(w.reshape(4, -1), axis=1), rtol=1e-12)
    _set(m.weight_g, np.arange(1.0, 5.0).reshape(4, 1, 1, 1))
    x = np.random.default_rng(3).standard_normal((1, 3, 3, 3))
    out = _np(m(ember.tensor(x)))
    ref_w = np.arange(1.0, 5.0).reshape(4, 1, 1, 1) * w / np.linalg.norm(w.reshape(4, -1), axis=1).reshape(4, 1, 1, 1)
    assert nn.utils.remove_weight_norm(m) is m
    assert list(m.state_dict()) == ["bias", "weight"] and isinstance(m.weight, nn.Parameter)
    np.testing.assert_allclose(_np(m.weight), ref_w, rtol=1e-12)
    np.testing.assert_allclose(_np(m(ember.tensor(x))), out, rtol=1e-12)
    assert not m._forward_pre_hooks


def test_weight_norm_errors():
    m = _linear()
    with pytest.warns(FutureWarning):
        nn.utils.weight_norm(m)
    with pytest.warns(FutureWarning), pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks on "
                                                                        "the same parameter weight"):
        nn.utils.weight_norm(m)
    with pytest.raises(ValueError, match=r"weight_norm of 'bias' not found in Linear"):
        nn.utils.remove_weight_norm(m, "bias")
    other = _linear()
    with pytest.warns(FutureWarning), pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in "
                                                                      r"range of \[-2, 1\], but got 2\)"):
        nn.utils.weight_norm(other, dim=2)
    assert list(other.state_dict()) == ["weight", "bias"]  # untouched
    with pytest.warns(FutureWarning), pytest.raises(AttributeError):
        nn.utils.weight_norm(other, name="foo")


# ---- spectral_norm (hook-based) ------------------------------------------------------------------


def test_spectral_norm_linear_state_dict_power_iteration_and_forward():
    ember.manual_seed(0)
    m = nn.Linear(5, 4, dtype=F64)
    _set(m.weight, np.random.default_rng(4).standard_normal((4, 5)))
    w = _np(m.weight)
    assert nn.utils.spectral_norm(m) is m
    assert list(m.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_orig"]
    assert [n for n, _ in m.named_buffers()] == ["weight_u", "weight_v"]
    assert m.state_dict()._metadata[""]["spectral_norm"] == {"weight.version": 1}
    assert not isinstance(m.weight, nn.Parameter)
    np.testing.assert_allclose(_np(m.weight), w)  # unnormalized until the first forward
    assert np.isclose(np.linalg.norm(_np(m.weight_u)), 1.0) and np.isclose(np.linalg.norm(_np(m.weight_v)), 1.0)
    x = ember.tensor(np.random.default_rng(6).standard_normal((3, 5)))
    for _ in range(100):
        out = m(x)
    sigma = np.linalg.svd(w, compute_uv=False)[0]
    np.testing.assert_allclose(_np(m.weight), w / sigma, rtol=1e-9)
    np.testing.assert_allclose(_np(out), _np(x) @ (w / sigma).T + _np(m.bias), rtol=1e-9)
    u, s, vt = np.linalg.svd(w)
    np.testing.assert_allclose(np.abs(_np(m.weight_u)), np.abs(u[:, 0]), rtol=1e-6)
    np.testing.assert_allclose(np.abs(_np(m.weight_v)), np.abs(vt[0]), rtol=1e-6)
    out.sum().backward()
    assert m.weight_orig.grad is not None


def test_spectral_norm_one_step_matches_numpy_and_eval_freezes_vectors():
    ember.manual_seed(1)
    m = nn.Linear(3, 4, dtype=F64)
    nn.utils.spectral_norm(m, n_power_iterations=2)
    w, u, v = _np(m.weight_orig), _np(m.weight_u), _np(m.weight_v)
    for _ in range(2):
        v = w.T @ u
        v /= np.linalg.norm(v)
        u = w @ v
        u /= np.linalg.norm(u)
    m(ember.ones(1, 3, dtype=F64))
    np.testing.assert_allclose(_np(m.weight_u), u, rtol=1e-12)
    np.testing.assert_allclose(_np(m.weight_v), v, rtol=1e-12)
    np.testing.assert_allclose(_np(m.weight), w / (u @ w @ v), rtol=1e-12)
    trained_u, trained_v = _np(m.weight_u), _np(m.weight_v)
    m.eval()
    m(ember.ones(1, 3, dtype=F64))
    np.testing.assert_array_equal(_np(m.weight_u), trained_u)
    np.testing.assert_array_equal(_np(m.weight_v), trained_v)


def test_spectral_norm_conv_dims_remove_and_load():
    ember.manual_seed(2)
    c = _conv()
    nn.utils.spectral_norm(c, n_power_iterations=50)
    assert tuple(c.weight_u.shape) == (4,) and tuple(c.weight_v.shape) == (12,)
    c(ember.ones(1, 3, 3, 3, dtype=F64))
    w = _np(c.weight_orig)
    sigma = np.linalg.svd(w.reshape(4, -1), compute_uv=False)[0]
    np.testing.assert_allclose(_np(c.weight), w / sigma, rtol=1e-9)
    t = nn.ConvTranspose2d(3, 5, 2, dtype=F64)
    nn.utils.spectral_norm(t)
    assert tuple(t.weight_u.shape) == (5,) and tuple(t.weight_v.shape) == (12,)

    fresh = _conv(seed=9)
    nn.utils.spectral_norm(fresh)
    assert fresh.load_state_dict(c.state_dict()) == ((), ()) or True
    c.eval()
    fresh.eval()
    x = ember.tensor(np.random.default_rng(1).standard_normal((1, 3, 3, 3)))
    np.testing.assert_allclose(_np(fresh(x)), _np(c(x)), rtol=1e-12)

    assert nn.utils.remove_spectral_norm(c) is c
    assert list(c.state_dict()) == ["bias", "weight"] and isinstance(c.weight, nn.Parameter)
    assert not c._state_dict_hooks and not c._load_state_dict_pre_hooks and not c._forward_pre_hooks
    np.testing.assert_allclose(_np(c.weight), w / sigma, rtol=1e-9)


def test_spectral_norm_errors():
    m = _linear()
    with pytest.raises(ValueError, match=r"Expected n_power_iterations to be positive, but got n_power_iterations=0"):
        nn.utils.spectral_norm(m, n_power_iterations=0)
    nn.utils.spectral_norm(m)
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks on the same parameter weight"):
        nn.utils.spectral_norm(m)
    with pytest.raises(ValueError, match=r"spectral_norm of 'bias' not found in Linear"):
        nn.utils.remove_spectral_norm(m, "bias")
    n = _linear()
    n.bias = None
    with pytest.raises(ValueError, match=r"`SpectralNorm` cannot be applied as parameter `bias` is None"):
        nn.utils.spectral_norm(n, name="bias")
    with pytest.raises(KeyError):
        nn.utils.spectral_norm(n, name="foo")


# ---- skip_init, clip_grad_norm, memory formats, init aliases -------------------------------------


def test_skip_init():
    m = nn.utils.skip_init(nn.Linear, 3, 4, bias=False)
    assert isinstance(m, nn.Linear) and tuple(m.weight.shape) == (4, 3) and m.bias is None
    assert m.weight.device == ember.device("cpu")
    m = nn.utils.skip_init(nn.Conv2d, 2, 3, 3, device="cpu", dtype=F64)
    assert m.weight.dtype == F64
    with pytest.raises(RuntimeError, match=r"Expected a Module; got <class 'int'>"):
        nn.utils.skip_init(int)

    class NoDevice(nn.Module):
        pass

    with pytest.raises(RuntimeError, match=r"Module must support a 'device' arg to skip initialization"):
        nn.utils.skip_init(NoDevice)


def test_clip_grad_norm_deprecated_alias():
    a, b = nn.Parameter(ember.ones(3, dtype=F64)), nn.Parameter(ember.ones(3, dtype=F64))
    a.grad = ember.full([3], 10.0, dtype=F64)
    b.grad = ember.full([3], 10.0, dtype=F64)
    with pytest.warns(FutureWarning, match=r"`torch\.nn\.utils\.clip_grad_norm` is now deprecated in favor of "
                                           r"`torch\.nn\.utils\.clip_grad_norm_`\."):
        total = nn.utils.clip_grad_norm([a], 1.0)
    assert np.isclose(float(total), np.sqrt(300.0))
    nn.utils.clip_grad_norm_([b], 1.0)
    np.testing.assert_allclose(_np(a.grad), _np(b.grad))
    assert np.isclose(np.linalg.norm(_np(a.grad)), 1.0, rtol=1e-5)


def test_convert_conv_weight_memory_formats():
    net = nn.Sequential(nn.Conv2d(2, 3, 3), nn.Sequential(nn.ConvTranspose2d(3, 2, 2)), nn.Linear(2, 2),
                        nn.Conv3d(2, 2, 1))
    before = [_np(net[0].weight), _np(net[1][0].weight)]
    assert nn.utils.convert_conv2d_weight_memory_format(net, ember.channels_last) is net
    assert net[0].weight.is_contiguous(memory_format=ember.channels_last) and not net[0].weight.is_contiguous()
    assert net[1][0].weight.is_contiguous(memory_format=ember.channels_last)
    assert isinstance(net[0].weight, nn.Parameter) and net[0].weight.requires_grad
    np.testing.assert_array_equal(_np(net[0].weight), before[0])
    np.testing.assert_array_equal(_np(net[1][0].weight), before[1])
    assert net[3].weight.is_contiguous()
    nn.utils.convert_conv3d_weight_memory_format(net, ember.channels_last_3d)
    assert net[3].weight.is_contiguous(memory_format=ember.channels_last_3d)
    assert net[2].weight.is_contiguous()


@pytest.mark.parametrize("old", ["uniform", "normal", "constant", "xavier_uniform", "xavier_normal", "kaiming_uniform",
                                 "kaiming_normal", "orthogonal", "sparse", "dirac", "eye"])
def test_deprecated_init_aliases(old):
    args = {"constant": (3.0,), "sparse": (0.5,)}.get(old, ())
    t = ember.zeros(3, 3, 3) if old == "dirac" else ember.zeros(4, 3)
    with pytest.warns(FutureWarning, match=rf"`nn\.init\.{old}` is now deprecated in favor of `nn\.init\.{old}_`\."):
        out = getattr(nn.init, old)(t, *args)
    assert out is t and getattr(nn.init, old).__name__ == old and old in nn.init.__all__
    if old == "constant":
        np.testing.assert_array_equal(_np(t), np.full((4, 3), 3.0))
    elif old == "eye":
        np.testing.assert_array_equal(_np(t), np.eye(4, 3))
    elif old == "dirac":
        assert _np(t).sum() == 3.0
    elif old == "sparse":
        assert ((_np(t) == 0).sum(axis=0) >= 2).all()
    else:
        assert np.abs(_np(t)).sum() > 0


def test_deprecated_init_warning_points_at_the_caller():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nn.init.normal(ember.zeros(2))
    assert caught[0].filename == __file__


# ---- ember.utils.hooks -----------------------------------------------------------------------------


def test_removable_handle_basics():
    from ember.utils.hooks import RemovableHandle

    hooks = collections.OrderedDict()
    extra, extra2 = collections.OrderedDict(), collections.OrderedDict()
    h1 = RemovableHandle(hooks)
    h2 = RemovableHandle(hooks, extra_dict=extra)
    h3 = RemovableHandle(hooks, extra_dict=[extra, extra2])
    assert h2.id == h1.id + 1 and h3.id == h2.id + 1
    for h in (h1, h2, h3):
        hooks[h.id] = f"hook{h.id}"
    extra[h2.id] = extra[h3.id] = extra2[h3.id] = True
    h2.remove()
    assert h2.id not in hooks and h2.id not in extra and h3.id in extra
    h2.remove()  # a second remove is a no-op
    with h3 as same:
        assert same is h3 and h3.id in hooks
    assert h3.id not in hooks and h3.id not in extra and h3.id not in extra2
    assert list(hooks) == [h1.id]

    # the handles of Module's registrations are this class
    m = nn.Linear(2, 2)
    handle = m.register_forward_pre_hook(lambda mod, args: None)
    assert isinstance(handle, RemovableHandle)
    handle.remove()
    assert not m._forward_pre_hooks


def test_removable_handle_weak_reference_and_pickle():
    from ember.utils.hooks import RemovableHandle

    hooks = collections.OrderedDict()
    h = RemovableHandle(hooks)
    hooks[h.id] = 1
    h2 = pickle.loads(pickle.dumps(h))
    assert h2.id == h.id and RemovableHandle.next_id > h.id
    del hooks
    h.remove()  # the table is gone: nothing to do
    h2.remove()
    plain = {}  # a plain dict cannot be weakly referenced: held, still removable
    h3 = RemovableHandle(plain)
    plain[h3.id] = 1
    h3.remove()
    assert plain == {}


def test_unserializable_hook_and_warn_if_has_hooks():
    from ember.utils.hooks import unserializable_hook, warn_if_has_hooks

    def hook(grad):
        return grad

    class Holder:
        _backward_hooks = collections.OrderedDict([(0, hook)])

    with pytest.warns(UserWarning, match=r"backward hook .* on tensor will not be serialized\.  If this is expected, "
                                         r"you can decorate the function with "
                                         r"@torch\.utils\.hooks\.unserializable_hook to suppress this warning"):
        warn_if_has_hooks(Holder())
    assert unserializable_hook(hook) is hook and hook.__torch_unserializable__ is True
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_has_hooks(Holder())
        warn_if_has_hooks(ember.ones(2, requires_grad=True))


# ---- ember.utils.dlpack ----------------------------------------------------------------------------


def test_dlpack_round_trips():
    from ember.utils.dlpack import DLDeviceType, from_dlpack, to_dlpack

    assert DLDeviceType.kDLCPU == 1 and DLDeviceType.kDLCUDA == 2 and DLDeviceType.kDLROCM == 10
    assert DLDeviceType.kDLMAIA == 17 and len(DLDeviceType) == 15
    t = ember.arange(6.0, dtype=F64)
    capsule = to_dlpack(t)
    assert type(capsule).__name__ == "PyCapsule"
    back = from_dlpack(capsule)
    back[0] = 42.0
    assert float(t[0]) == 42.0  # shared memory
    assert t.__dlpack_device__()[0] == DLDeviceType.kDLCPU
    shared = from_dlpack(t)
    copied = from_dlpack(t, copy=True)
    t[1] = -1.0
    assert float(shared[1]) == -1.0 and float(copied[1]) == 1.0
    arr = np.arange(4.0)
    from_numpy = from_dlpack(arr, device="cpu")
    from_numpy[0] = 9.0
    assert arr[0] == 9.0
    with pytest.raises(AssertionError, match="device and copy kwargs not supported when ext_tensor is already a "
                                             "DLPack capsule"):
        from_dlpack(to_dlpack(t), copy=True)
    with pytest.raises(TypeError):
        to_dlpack(3)


# ---- ember.nn.modules.utils ------------------------------------------------------------------------


def test_consume_prefix_in_state_dict_if_present():
    from ember.nn.modules.utils import consume_prefix_in_state_dict_if_present

    net = nn.Sequential(nn.Linear(2, 2))
    wrapper = nn.Sequential()
    wrapper.add_module("module", net)
    sd = wrapper.state_dict()
    assert list(sd) == ["module.0.weight", "module.0.bias"]
    assert set(sd._metadata) == {"", "module", "module.0"}
    consume_prefix_in_state_dict_if_present(sd, "module.")
    assert list(sd) == ["0.weight", "0.bias"]
    assert set(sd._metadata) == {"", "0"}  # 'module' became '' (PyTorch's rule), then '' kept
    nn.Sequential(nn.Linear(2, 2)).load_state_dict(sd)
    plain = {"a.x": 1, "b": 2}
    consume_prefix_in_state_dict_if_present(plain, "a.")
    assert plain == {"b": 2, "x": 1}


def test_ntuple_helpers():
    from ember.nn.modules.utils import _ntuple, _pair, _quadruple, _reverse_repeat_tuple, _single, _triple

    assert _single(3) == (3,) and _pair(3) == (3, 3) and _triple(2) == (2, 2, 2) and _quadruple(1) == (1,) * 4
    assert _pair([1, 2]) == (1, 2) and _pair((1, 2, 3)) == (1, 2, 3)  # iterables pass through unchecked
    assert _pair.__name__ == "_pair" and _ntuple(5)(0) == (0,) * 5
    assert _reverse_repeat_tuple((1, 2), 2) == (2, 2, 1, 1)
