"""FBGEMM's row gathers and permute102_baddbmm_permute102 (ember.ops.fbgemm.*): NumPy references,
gradients, bad inputs and parity with fbgemm_gpu 1.8 (run_fbgemm)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from ember.autograd import gradcheck

F = ember.ops.fbgemm
rng = np.random.default_rng(1)


def T(a):
    return ember.from_numpy(np.ascontiguousarray(a))


def scatter_ref(grad, idx, rows):
    out = np.zeros((rows, *grad.shape[1:]))
    np.add.at(out, idx, grad)
    return out


@pytest.mark.parametrize("idtype", [np.int32, np.int64])
@pytest.mark.parametrize("contig", [True, False])
def test_index_select_dim0(idtype, contig):
    x = rng.standard_normal((7, 5))
    idx = np.array([6, 0, 3, 3, 0, 2], idtype)
    xt = T(x) if contig else T(np.ascontiguousarray(x.T)).t()
    it = T(idx) if contig else T(np.repeat(idx, 2))[::2]
    np.testing.assert_array_equal(F.index_select_dim0(xt, it).numpy(), x[idx])
    np.testing.assert_array_equal(F.index_select_dim0(xt, it, 0, 0, True).numpy(), x[idx])
    g = rng.standard_normal((6, 5))
    np.testing.assert_allclose(F.index_select_dim0_backward(T(g), it, 7).numpy(), scatter_ref(g, idx, 7),
                               rtol=1e-12, atol=1e-12)


def test_index_select_dim0_shapes_and_dtypes():
    x = np.arange(24, dtype=np.int64).reshape(4, 3, 2)
    np.testing.assert_array_equal(F.index_select_dim0(T(x), T(np.array([1, 1]))).numpy(), x[[1, 1]])
    assert F.index_select_dim0(T(x), T(np.array([], np.int64))).shape == (0, 3, 2)
    assert F.index_select_dim0(T(np.zeros((0, 3))), T(np.array([], np.int64))).shape == (0, 3)
    for dt in (ember.float16, ember.bfloat16, ember.float32):
        xt = T(rng.standard_normal((5, 3))).to(dt)
        out = F.index_select_dim0(xt, T(np.array([4, 0])))
        assert out.dtype == dt
        np.testing.assert_array_equal(out.to(ember.float64).numpy(), xt.to(ember.float64).numpy()[[4, 0]])
        g = F.index_select_dim0_backward(T(np.ones((3, 3))).to(dt), T(np.array([1, 1, 4])), 5)
        assert g.dtype == dt and g.to(ember.float64).numpy()[1].tolist() == [2, 2, 2]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.integers(1, 40), n=st.integers(0, 600), D=st.integers(1, 9), i32=st.booleans())
def test_property_gather_and_segment_sums(rows, n, D, i32):
    x = rng.standard_normal((rows, D))
    idx = rng.integers(0, rows, n).astype(np.int32 if i32 else np.int64)
    np.testing.assert_array_equal(F.index_select_dim0(T(x), T(idx)).numpy(), x[idx])
    g = rng.standard_normal((n, D))
    np.testing.assert_allclose(F.index_select_dim0_backward(T(g), T(idx), rows).numpy(), scatter_ref(g, idx, rows),
                               rtol=1e-10, atol=1e-10)


def test_large_table_segment_sums_use_the_radix_path():
    rows = 5000
    idx = rng.integers(0, rows, 20000)
    g = rng.standard_normal((20000, 4))
    np.testing.assert_allclose(F.index_select_dim0_backward(T(g), T(idx), rows).numpy(), scatter_ref(g, idx, rows),
                               rtol=1e-10, atol=1e-10)


def test_gradcheck():
    x = T(rng.standard_normal((5, 3))).requires_grad_()
    idx = T(np.array([4, 1, 1, 0]))
    kw = {"check_forward_ad": True}
    assert gradcheck(lambda x: ember.ops.fbgemm.index_select_dim0(x, idx), (x,), **kw)
    g = T(rng.standard_normal((4, 3))).requires_grad_()
    assert gradcheck(lambda g: ember.ops.fbgemm.index_select_dim0_backward(g, idx, 5), (g,), **kw)
    y = T(rng.standard_normal((3, 2))).requires_grad_()
    idx2 = T(np.array([2, 2], np.int32))
    assert gradcheck(lambda x, y: ember.ops.fbgemm.group_index_select_dim0([x, y], [idx, idx2]), (x, y), **kw)
    bias = T(rng.standard_normal((2, 4))).requires_grad_()
    A = T(rng.standard_normal((3, 2, 5))).requires_grad_()
    B = T(rng.standard_normal((2, 5, 4))).requires_grad_()
    assert gradcheck(lambda b, a, m: ember.ops.fbgemm.permute102_baddbmm_permute102(b, a, m), (bias, A, B), **kw)


def test_group_index_select_dim0():
    xs = [rng.standard_normal((4, 2)), rng.standard_normal((6,))]
    idx = [np.array([3, 0]), np.array([5, 5, 1], np.int32)]
    out = F.group_index_select_dim0([T(a) for a in xs], [T(i) for i in idx])
    for o, a, i in zip(out, xs, idx, strict=True):
        np.testing.assert_array_equal(o.numpy(), a[i])
    assert F.group_index_select_dim0([], []) == []


@pytest.mark.parametrize("dtype", [ember.float32, ember.float16])
def test_permute102_baddbmm_permute102(dtype):
    bias = rng.standard_normal((3, 4))
    A = rng.standard_normal((5, 3, 6))
    B = rng.standard_normal((3, 6, 4))
    ref = np.einsum("mbk,bkn->mbn", A, B) + bias[None]
    out = F.permute102_baddbmm_permute102(T(bias).to(dtype), T(A).to(dtype), T(B).to(dtype))
    assert out.dtype == dtype and out.shape == (5, 3, 4)
    tol = 1e-5 if dtype == ember.float32 else 3e-2
    np.testing.assert_allclose(out.to(ember.float64).numpy(), ref, rtol=tol, atol=tol * 10)


def test_bad_inputs():
    x = T(np.zeros((4, 2)))
    with pytest.raises(IndexError, match=r"\[index_select_dim0\] expected every index in \[0, 4\), but got 4 at "
                                         r"position 1"):
        F.index_select_dim0(x, T(np.array([0, 4])))
    with pytest.raises(IndexError, match=r"\[index_select_dim0\] expected every index in \[0, 4\), but got -1"):
        F.index_select_dim0(x, T(np.array([-1], np.int32)))
    with pytest.raises(TypeError, match=r"\[index_select_dim0\] expected indices of dtype int32 or int64, but got "
                                        r"float32"):
        F.index_select_dim0(x, T(np.array([0.0], np.float32)))
    with pytest.raises(ValueError, match=r"\[index_select_dim0\] expected 1-D indices, but got shape \[1, 1\]"):
        F.index_select_dim0(x, T(np.array([[0]])))
    with pytest.raises(ValueError, match=r"\[index_select_dim0\] expected an input of at least 1 dim, but got 0-D"):
        F.index_select_dim0(ember.tensor(1.0), T(np.array([0])))
    with pytest.raises(IndexError, match=r"\[index_select_dim0_backward\] expected every index in \[0, 2\)"):
        F.index_select_dim0_backward(x, T(np.array([0, 1, 2, 3])), 2)
    with pytest.raises(ValueError, match=r"\[index_select_dim0_backward\] expected grad_output with one row per "
                                         r"index \(3\)"):
        F.index_select_dim0_backward(x, T(np.array([0, 1, 2])), 4)
    with pytest.raises(ValueError, match=r"\[index_select_dim0_backward\] expected num_rows >= 0, but got -1"):
        F.index_select_dim0_backward(x, T(np.array([0])), -1)
    with pytest.raises(TypeError, match=r"\[index_select_dim0_backward\] expected grad_output of a floating dtype"):
        F.index_select_dim0_backward(T(np.zeros((1, 2), np.int64)), T(np.array([0])), 4)
    with pytest.raises(ValueError, match=r"\[group_index_select_dim0\] expected as many index tensors as inputs "
                                         r"\(1\), but got 2"):
        F.group_index_select_dim0([x], [T(np.array([0])), T(np.array([0]))])
    with pytest.raises(IndexError, match=r"\[index_select_dim0\] expected every index in \[0, 4\)"):
        F.group_index_select_dim0([x], [T(np.array([7]))])
    with pytest.raises(ValueError, match=r"\[permute102_baddbmm_permute102\] expected A \(m, B, k\), B \(B, k, n\) "
                                         r"and bias \(B, n\)"):
        F.permute102_baddbmm_permute102(T(np.zeros((3, 4))), T(np.zeros((5, 2, 6))), T(np.zeros((3, 6, 4))))
    with pytest.raises(TypeError, match=r"\[permute102_baddbmm_permute102\] expected A, B and bias of one dtype"):
        F.permute102_baddbmm_permute102(T(np.zeros((3, 4))), T(np.zeros((5, 3, 6), np.float32)),
                                        T(np.zeros((3, 6, 4))))


def test_parity_with_fbgemm(run_fbgemm):
    x = rng.standard_normal((50, 8)).astype(np.float32)
    idx = rng.integers(0, 50, 30)
    bias = rng.standard_normal((3, 4)).astype(np.float32)
    A = rng.standard_normal((5, 3, 6)).astype(np.float32)
    B = rng.standard_normal((3, 6, 4)).astype(np.float32)
    g = rng.standard_normal((30, 8)).astype(np.float32)
    out = run_fbgemm('''
        t = {k: torch.from_numpy(a) for k, a in inputs.items()}
        x = t["x"].clone().requires_grad_()
        y = torch.ops.fbgemm.index_select_dim0(x, t["idx"])
        y.backward(t["g"])
        result["y"] = y.detach().numpy()
        result["gx"] = x.grad.numpy()
        ys = torch.ops.fbgemm.group_index_select_dim0([t["x"], t["A"].reshape(15, 6)], [t["idx"], t["idx"][:4] % 15])
        result["g0"], result["g1"] = ys[0].numpy(), ys[1].numpy()
        result["p"] = torch.ops.fbgemm.permute102_baddbmm_permute102(t["bias"], t["A"], t["B"]).numpy()
    ''', x=x, idx=idx, bias=bias, A=A, B=B, g=g)
    xt = T(x).requires_grad_()
    y = F.index_select_dim0(xt, T(idx))
    y.backward(T(g))
    np.testing.assert_array_equal(y.detach().numpy(), out["y"])
    np.testing.assert_allclose(xt.grad.numpy(), out["gx"], rtol=1e-6, atol=1e-6)
    ys = F.group_index_select_dim0([T(x), T(A).reshape(15, 6)], [T(idx), T(idx[:4] % 15)])
    np.testing.assert_array_equal(ys[0].numpy(), out["g0"])
    np.testing.assert_array_equal(ys[1].numpy(), out["g1"])
    np.testing.assert_allclose(F.permute102_baddbmm_permute102(T(bias), T(A), T(B)).numpy(), out["p"], rtol=1e-5,
                               atol=1e-5)


def test_segment_sums_do_not_depend_on_the_thread_count():
    idx = T(rng.integers(0, 300, 50000))
    g = T(rng.standard_normal((50000, 16)).astype(np.float32))
    before = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        one = F.index_select_dim0_backward(g, idx, 300).numpy()
        ember.set_num_threads(max(2, before))
        many = F.index_select_dim0_backward(g, idx, 300).numpy()
    finally:
        ember.set_num_threads(before)
    np.testing.assert_array_equal(one, many)
