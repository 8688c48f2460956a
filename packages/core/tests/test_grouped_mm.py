"""F.grouped_mm, F.scaled_mm, F.scaled_grouped_mm and the ScalingType / SwizzleType enums (PyTorch
2.13) against float64 NumPy references: every layout of grouped_mm with contiguous, transposed and
strided operands, empty groups, zero sizes and low precision; its gradients (float64 gradcheck of
the implementation, since the public function takes float32/bfloat16/float16 only as PyTorch does,
and float32 gradients against NumPy); the float8 products with TensorWise and RowWise scales; and
PyTorch's errors, with Ember's checks of offs. (The results and gradients were also compared with
PyTorch 2.13's on random inputs: float32 to 3e-7 relative, bfloat16/float16 within one rounding.)"""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck
from ember.nn import _grouped_mm as impl
from ember.nn.functional import ScalingType, SwizzleType

RNG = np.random.default_rng(18)
F8 = [ember.float8_e4m3fn, ember.float8_e5m2]


def _t(a, dtype=None, grad=False):
    t = ember.from_numpy(np.ascontiguousarray(a))
    if dtype is not None:
        t = t.to(dtype)
    return t.requires_grad_() if grad else t


def _np(t):
    return t.detach().to(ember.float64).numpy()


def _offs(ends):
    return ember.tensor(ends, dtype=ember.int32)


def _bounds(ends):
    return list(zip([0, *ends][:-1], ends, strict=True))


def ref_grouped(a, b, ends):
    """grouped_mm in float64 NumPy; what lies past ends[-1] is zero."""
    if ends is None:
        return a @ b
    if a.ndim == 2 and b.ndim == 2:
        return np.stack([a[:, s:e] @ b[s:e] for s, e in _bounds(ends)]).reshape(len(ends), a.shape[0], b.shape[1])
    if a.ndim == 2:
        out = np.zeros((a.shape[0], b.shape[2]))
        for g, (s, e) in enumerate(_bounds(ends)):
            out[s:e] = a[s:e] @ b[g]
        return out
    out = np.zeros((a.shape[1], b.shape[1]))
    for g, (s, e) in enumerate(_bounds(ends)):
        out[:, s:e] = a[g] @ b[:, s:e]
    return out


def ref_grouped_grads(a, b, ends, gout):
    """d(sum(gout * grouped_mm(a, b)))/d(a, b) in float64 NumPy."""
    ga, gb = np.zeros_like(a), np.zeros_like(b)
    if ends is None:
        return gout @ np.swapaxes(b, -1, -2), np.swapaxes(a, -1, -2) @ gout
    for g, (s, e) in enumerate(_bounds(ends)):
        if a.ndim == 2 and b.ndim == 2:
            ga[:, s:e] += gout[g] @ b[s:e].T
            gb[s:e] += a[:, s:e].T @ gout[g]
        elif a.ndim == 2:
            ga[s:e] += gout[s:e] @ b[g].T
            gb[g] += a[s:e].T @ gout[s:e]
        else:
            ga[g] += gout[:, s:e] @ b[:, s:e].T
            gb[:, s:e] += a[g].T @ gout[:, s:e]
    return ga, gb


# Shapes per layout: (mat_a shape, mat_b shape, offs); the offs include an empty group, a group at
# 0 and (for the 2-D operands) a tail past offs[-1].
LAYOUTS = {
    "2d3d": ((11, 5), (4, 5, 6), [3, 3, 7, 9]),
    "3d2d": ((4, 6, 5), (5, 13), [0, 4, 4, 10]),
    "2d2d": ((6, 12), (12, 7), [2, 2, 8, 11]),
    "3d3d": ((3, 6, 5), (3, 5, 7), None),
}


def _operand(shape, layout_kind):
    """A float64 array and its ember tensor laid out contiguously, transposed (last two dims
    swapped in memory) or strided (every other element of a wider buffer)."""
    x = RNG.standard_normal(shape)
    if layout_kind == "contiguous":
        return x, _t(x, ember.float32)
    if layout_kind == "transposed":
        return x, _t(np.swapaxes(x, -1, -2), ember.float32).transpose(-2, -1)
    wide = np.zeros((*shape[:-1], 2 * shape[-1]))
    wide[..., ::2] = x
    return x, _t(wide, ember.float32)[..., ::2]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("kind_a", ["contiguous", "transposed", "strided"])
@pytest.mark.parametrize("kind_b", ["contiguous", "transposed", "strided"])
def test_layouts_match_reference(layout, kind_a, kind_b):
    shape_a, shape_b, ends = LAYOUTS[layout]
    a, ea = _operand(shape_a, kind_a)
    b, eb = _operand(shape_b, kind_b)
    assert kind_a == "contiguous" or not ea.is_contiguous()
    out = F.grouped_mm(ea, eb, offs=None if ends is None else _offs(ends))
    expected = ref_grouped(a.astype(np.float32).astype(np.float64), b.astype(np.float32).astype(np.float64), ends)
    assert out.dtype == ember.float32 and tuple(out.shape) == expected.shape
    np.testing.assert_allclose(_np(out), expected, rtol=1e-5, atol=1e-5)


def test_rows_and_columns_past_the_last_offset_are_zero():
    a, b = _t(RNG.standard_normal((8, 3)), ember.float32), _t(RNG.standard_normal((2, 3, 4)), ember.float32)
    out = _np(F.grouped_mm(a, b, offs=_offs([2, 5])))
    assert (out[5:] == 0).all() and (out[:5] != 0).all()
    a3, b2 = _t(RNG.standard_normal((2, 4, 3)), ember.float32), _t(RNG.standard_normal((3, 9)), ember.float32)
    out = _np(F.grouped_mm(a3, b2, offs=_offs([3, 6])))
    assert (out[:, 6:] == 0).all() and (out[:, :6] != 0).all()


def test_empty_groups():
    a, b = RNG.standard_normal((6, 4)), RNG.standard_normal((4, 4, 3))
    ends = [0, 0, 6, 6]  # groups 0, 1 and 3 are empty
    out = F.grouped_mm(_t(a, ember.float32), _t(b, ember.float32), offs=_offs(ends))
    np.testing.assert_allclose(_np(out), a @ b[2], rtol=1e-5, atol=1e-5)
    # 2d x 2d: an empty K group gives a zero matrix
    a, b = RNG.standard_normal((3, 5)), RNG.standard_normal((5, 2))
    out = _np(F.grouped_mm(_t(a, ember.float32), _t(b, ember.float32), offs=_offs([2, 2, 5])))
    assert (out[1] == 0).all()
    np.testing.assert_allclose(out[2], a[:, 2:] @ b[2:], rtol=1e-5, atol=1e-6)


def test_all_groups_empty_still_differentiable():
    a, b = ember.randn(5, 3, requires_grad=True), ember.randn(2, 3, 4, requires_grad=True)
    out = F.grouped_mm(a, b, offs=_offs([0, 0]))
    assert out.requires_grad and float(out.abs().max()) == 0
    out.sum().backward()
    assert float(a.grad.abs().max()) == 0 and float(b.grad.abs().max()) == 0


@pytest.mark.parametrize("shape_a,shape_b,ends,shape_out", [
    ((0, 4), (3, 4, 5), [0, 0, 0], (0, 5)),          # no rows
    ((6, 4), (3, 4, 0), [1, 2, 6], (6, 0)),          # N = 0
    ((6, 0), (3, 0, 5), [1, 2, 6], (6, 5)),          # K = 0: zeros
    ((6, 4), (0, 4, 5), [], (6, 5)),                 # no groups: all rows past offs[-1]
    ((2, 0, 4), (4, 7), [3, 7], (0, 7)),             # 3d x 2d, M = 0
    ((3, 4), (4, 2), [], (0, 3, 2)),                 # 2d x 2d, no groups
    ((3, 0), (0, 2), [0, 0], (2, 3, 2)),             # 2d x 2d, K = 0
    ((0, 3, 4), (0, 4, 2), None, (0, 3, 2)),         # 3d x 3d, no batch
])
def test_zero_sizes(shape_a, shape_b, ends, shape_out):
    out = F.grouped_mm(ember.ones(*shape_a), ember.ones(*shape_b), offs=None if ends is None else _offs(ends))
    assert tuple(out.shape) == shape_out
    assert out.numel() == 0 or float(out.abs().max()) == 0


@pytest.mark.parametrize("dtype,rtol", [(ember.bfloat16, 1e-2), (ember.float16, 2e-3)])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_low_precision(dtype, rtol, layout):
    shape_a, shape_b, ends = LAYOUTS[layout]
    ea = _t(RNG.standard_normal(shape_a), dtype)
    eb = _t(RNG.standard_normal(shape_b), dtype)
    out = F.grouped_mm(ea, eb, offs=None if ends is None else _offs(ends))
    assert out.dtype == dtype
    # the reference takes the rounded inputs: the only error left is the output's rounding
    expected = ref_grouped(_np(ea), _np(eb), ends)
    np.testing.assert_allclose(_np(out), expected, rtol=rtol, atol=rtol * np.abs(expected).max())


def test_out_dtype_and_bias():
    a, b = ember.randn(4, 3, dtype=ember.bfloat16), ember.randn(2, 3, 5, dtype=ember.bfloat16)
    assert F.grouped_mm(a, b, offs=_offs([1, 4]), out_dtype=ember.bfloat16).dtype == ember.bfloat16
    # PyTorch 2.13 supports neither another out_dtype nor bias yet (on any device)
    with pytest.raises(RuntimeError, match="Grouped gemm output dtype must match `mat_a` dtype"):
        F.grouped_mm(a, b, offs=_offs([1, 4]), out_dtype=ember.float32)
    with pytest.raises(RuntimeError, match="Bias not supported yet"):
        F.grouped_mm(a, b, offs=_offs([1, 4]), bias=ember.zeros(5, dtype=ember.bfloat16))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_gradcheck_float64_implementation(layout):
    # The public function refuses float64 as PyTorch's does; its implementation is dtype-blind,
    # so gradcheck it there, after the public checks.
    shape_a, shape_b, ends = LAYOUTS[layout]
    a = _t(RNG.standard_normal(shape_a), grad=True)
    b = _t(RNG.standard_normal(shape_b), grad=True)
    assert gradcheck(lambda x, y: impl._grouped_product(x, y, ends), (a, b))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("transposed", [False, True])
def test_float32_gradients_match_numpy(layout, transposed):
    shape_a, shape_b, ends = LAYOUTS[layout]
    kind = "transposed" if transposed else "contiguous"
    a, ea = _operand(shape_a, kind)
    b, eb = _operand(shape_b, kind)
    ea, eb = ea.detach().requires_grad_(), eb.detach().requires_grad_()
    out = F.grouped_mm(ea, eb, offs=None if ends is None else _offs(ends))
    gout = RNG.standard_normal(tuple(out.shape))
    out.backward(_t(gout, ember.float32))
    ga, gb = ref_grouped_grads(_np(ea), _np(eb), ends, gout.astype(np.float32).astype(np.float64))
    assert ea.grad.dtype == ember.float32 and tuple(ea.grad.shape) == shape_a
    np.testing.assert_allclose(_np(ea.grad), ga, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(eb.grad), gb, rtol=1e-5, atol=1e-5)


def test_bfloat16_gradients():
    shape_a, shape_b, ends = LAYOUTS["2d3d"]
    ea = _t(RNG.standard_normal(shape_a), ember.bfloat16, grad=True)
    eb = _t(RNG.standard_normal(shape_b), ember.bfloat16, grad=True)
    out = F.grouped_mm(ea, eb, offs=_offs(ends))
    gout = _t(RNG.standard_normal(tuple(out.shape)), ember.bfloat16)
    out.backward(gout)
    ga, gb = ref_grouped_grads(_np(ea), _np(eb), ends, _np(gout))
    assert ea.grad.dtype == eb.grad.dtype == ember.bfloat16
    np.testing.assert_allclose(_np(ea.grad), ga, rtol=2e-2, atol=2e-2 * np.abs(ga).max())
    np.testing.assert_allclose(_np(eb.grad), gb, rtol=2e-2, atol=2e-2 * np.abs(gb).max())
    assert (_np(ea.grad)[ends[-1]:] == 0).all()  # rows past offs[-1] reach no output


# ---- grouped_mm: PyTorch's errors, and Ember's checks of offs -----------------------------------

def _f32(*shape):
    return ember.zeros(*shape)


@pytest.mark.parametrize("call,exc,match", [
    (lambda: F.grouped_mm(_f32(4, 3).double(), _f32(2, 3, 5), offs=_offs([1, 4])), RuntimeError,
     "Expected mat_a to be Float32, BFloat16 or Float16 matrix, got ember.float64"),
    (lambda: F.grouped_mm(_f32(4, 3), _f32(2, 3, 5).int(), offs=_offs([1, 4])), RuntimeError,
     "Expected mat_b to be Float32, BFloat16 or Float16 matrix, got ember.int32"),
    (lambda: F.grouped_mm(_f32(4), _f32(2, 4, 5), offs=_offs([1, 4])), RuntimeError, "mat_a has to be 2 or 3d"),
    (lambda: F.grouped_mm(_f32(4, 3), _f32(1, 2, 3, 5), offs=_offs([1, 4])), RuntimeError,
     "mat_b has to be 2 or 3d"),
    (lambda: F.grouped_mm(_f32(4, 3), _f32(2, 4, 5), offs=_offs([1, 4])), RuntimeError,
     "contraction dimension of mat_a and mat_b must match"),
    (lambda: F.grouped_mm(_f32(2, 4, 3), _f32(2, 4, 5)), RuntimeError,
     "contraction dimension of mat_a and mat_b must match"),
    (lambda: F.grouped_mm(_f32(4, 3), _f32(2, 3, 5)), RuntimeError, "Have to provide offsets if there is a 2d matrix"),
    (lambda: F.grouped_mm(_f32(2, 4, 3), _f32(2, 3, 5), offs=_offs([1, 2])), RuntimeError,
     "no offset if both matrices are 3d"),
    (lambda: F.grouped_mm(_f32(4, 3), _f32(2, 3, 5), offs=ember.tensor([1, 4])), RuntimeError,
     "Offsets have to be int32"),
    (lambda: F.grouped_mm(_f32(4, 3), _f32(2, 3, 5), offs=ember.tensor([1.0, 4.0])), RuntimeError,
     "Offsets have to be int32"),
    (lambda: F.grouped_mm(_f32(4, 3), _f32(2, 3, 5), offs=_offs([[1, 4]])), RuntimeError, "offs has to be 1D"),
    (lambda: F.grouped_mm(_f32(4, 3), _f32(2, 3, 5), offs=_offs([1, 2, 4])), RuntimeError,
     "matrix batch sizes have to match"),
    (lambda: F.grouped_mm(_f32(3, 4, 3), _f32(3, 5), offs=_offs([1, 4])), RuntimeError,
     "matrix batch sizes have to match"),
    (lambda: F.grouped_mm(_f32(3, 4, 3), _f32(2, 3, 5)), RuntimeError, "batched dimension has to match"),
    (lambda: F.grouped_mm(_f32(4, 3), _f32(2, 3, 5).bfloat16(), offs=_offs([1, 4])), RuntimeError,
     "expected m1 and m2 to have the same dtype, but got: ember.float32 != ember.bfloat16"),
    # Ember checks the values of offs, which PyTorch reads unchecked
    (lambda: F.grouped_mm(_f32(4, 3), _f32(2, 3, 5), offs=_offs([3, 1])), RuntimeError,
     r"\[grouped_mm\] expected offs to be non-negative and non-decreasing, but got \[3, 1\]"),
    (lambda: F.grouped_mm(_f32(4, 3), _f32(2, 3, 5), offs=_offs([-1, 4])), RuntimeError,
     "non-negative and non-decreasing"),
    (lambda: F.grouped_mm(_f32(4, 3), _f32(2, 3, 5), offs=_offs([1, 5])), RuntimeError,
     r"\[grouped_mm\] expected offs\[-1\] <= 4 \(the size of mat_a's dim 0\), but got 5"),
    (lambda: F.grouped_mm(_f32(2, 4, 3), _f32(3, 6), offs=_offs([2, 7])), RuntimeError,
     r"offs\[-1\] <= 6 \(the size of mat_b's dim 1\)"),
    (lambda: F.grouped_mm(_f32(2, 6), _f32(4, 3), offs=_offs([2, 5])), RuntimeError,
     r"offs\[-1\] <= 4 \(the size of mat_b's dim 0\)"),
])
def test_grouped_mm_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_2d2d_reads_only_the_grouped_range():
    # As in PyTorch, 2d x 2d has no contraction check: only [0, offs[-1]) of K is read.
    a, b = RNG.standard_normal((3, 8)), RNG.standard_normal((4, 2))
    out = F.grouped_mm(_t(a, ember.float32), _t(b, ember.float32), offs=_offs([1, 4]))
    np.testing.assert_allclose(_np(out), ref_grouped(a[:, :4], b, [1, 4]), rtol=1e-5, atol=1e-6)


# ---- enums --------------------------------------------------------------------------------------

def test_enums():
    assert [(m.name, int(m)) for m in ScalingType] == [
        ("TensorWise", 0), ("RowWise", 1), ("BlockWise1x16", 2), ("BlockWise1x32", 3), ("BlockWise1x128", 4),
        ("BlockWise128x128", 5)]
    assert [(m.name, m.value) for m in SwizzleType] == [("NO_SWIZZLE", 0), ("SWIZZLE_32_4_4", 1)]
    assert ScalingType(1) is ScalingType.RowWise and ScalingType.RowWise == 1
    assert ScalingType.__members__["BlockWise1x32"] is ScalingType.BlockWise1x32
    assert F.ScalingType is ScalingType and F.SwizzleType is SwizzleType
    for name in ("grouped_mm", "scaled_mm", "scaled_grouped_mm", "ScalingType", "SwizzleType"):
        assert name in F.__all__


# ---- scaled_mm ----------------------------------------------------------------------------------

def _float8(shape, dtype, scale=3.0):
    """A float8 tensor and its exact values in float64."""
    t = _t(RNG.standard_normal(shape) * scale, ember.float32).to(dtype)
    return t, _np(t)


def _rounded(x, dtype):
    return _np(_t(x, ember.float64).to(dtype))


@pytest.mark.parametrize("fa,fb", [(F8[0], F8[0]), (F8[0], F8[1]), (F8[1], F8[1])])
@pytest.mark.parametrize("recipe", [ScalingType.TensorWise, ScalingType.RowWise])
@pytest.mark.parametrize("output_dtype,rtol", [(ember.float32, 1e-6), (ember.bfloat16, 8e-3), (ember.float16, 1e-3),
                                               (ember.float64, 1e-6)])
@pytest.mark.parametrize("with_bias", [False, True])
def test_scaled_mm_matches_reference(fa, fb, recipe, output_dtype, rtol, with_bias):
    m, k, n = 5, 24, 7
    a, a64 = _float8((m, k), fa)
    bt, bt64 = _float8((n, k), fb)  # mat_b column-major, as the float8 kernels take it
    if recipe == ScalingType.TensorWise:
        sa, sb = RNG.random(()) + 0.1, RNG.random(()) + 0.1
    else:
        sa, sb = RNG.random((m, 1)) + 0.1, RNG.random((1, n)) + 0.1
    sa, sb = _rounded(sa, ember.float32), _rounded(sb, ember.float32)
    bias = _t(RNG.standard_normal(n), ember.bfloat16) if with_bias else None
    out = F.scaled_mm(a, bt.t(), _t(sa, ember.float32), recipe, _t(sb, ember.float32), recipe, bias=bias,
                      output_dtype=output_dtype)
    expected = (a64 @ bt64.T) * sa * sb + (0 if bias is None else _np(bias))
    assert out.dtype == output_dtype and tuple(out.shape) == (m, n)
    np.testing.assert_allclose(_np(out), expected, rtol=rtol, atol=rtol * np.abs(expected).max())


def test_scaled_mm_defaults_and_forms():
    a, a64 = _float8((4, 16), F8[0])
    b, b64 = _float8((16, 8), F8[0])
    one = ember.tensor(1.0)
    assert F.scaled_mm(a, b, one, ScalingType.TensorWise, one, ScalingType.TensorWise).dtype == ember.bfloat16
    # output_dtype=None: mat_a's dtype, as PyTorch does
    out = F.scaled_mm(a, b, one, ScalingType.TensorWise, one, ScalingType.TensorWise, output_dtype=None)
    assert out.dtype == ember.float8_e4m3fn
    np.testing.assert_array_equal(_np(out), _rounded(a64 @ b64, ember.float8_e4m3fn))
    # scales and recipes as one-element lists, singletons of any rank, NO_SWIZZLE, fast accumulation, (1, 0)
    ref = _np(F.scaled_mm(a, b, one, ScalingType.TensorWise, one, ScalingType.TensorWise))
    for kwargs in ({"swizzle_a": SwizzleType.NO_SWIZZLE, "swizzle_b": [SwizzleType.NO_SWIZZLE]},
                   {"use_fast_accum": True}, {"contraction_dim": (1, 0)}, {"contraction_dim": [-1, -2]}):
        got = F.scaled_mm(a, b, [one.reshape(1, 1)], [ScalingType.TensorWise], one.reshape(1),
                          ScalingType.TensorWise, **kwargs)
        np.testing.assert_array_equal(_np(got), ref)


def test_scaled_mm_zero_sizes():
    a, b = ember.zeros(3, 0).to(F8[0]), ember.zeros(0, 4).to(F8[0])
    one = ember.tensor(1.0)
    out = F.scaled_mm(a, b, one, ScalingType.TensorWise, one, ScalingType.TensorWise, output_dtype=ember.float32)
    np.testing.assert_array_equal(_np(out), np.zeros((3, 4)))
    # Ember still adds the bias when K is 0 (PyTorch returns the zeros without it)
    out = F.scaled_mm(a, b, one, ScalingType.TensorWise, one, ScalingType.TensorWise, bias=ember.ones(4),
                      output_dtype=ember.float32)
    np.testing.assert_array_equal(_np(out), np.ones((3, 4)))
    out = F.scaled_mm(ember.zeros(0, 16).to(F8[0]), ember.zeros(16, 4).to(F8[0]), ember.zeros(0, 1),
                      ScalingType.RowWise, ember.ones(1, 4), ScalingType.RowWise)
    assert tuple(out.shape) == (0, 4)


def _scaled(a=None, b=None, sa=None, ra=ScalingType.TensorWise, sb=None, rb=ScalingType.TensorWise, **kw):
    a = ember.zeros(4, 16).to(F8[0]) if a is None else a
    b = ember.zeros(16, 8).to(F8[0]) if b is None else b
    return F.scaled_mm(a, b, ember.tensor(1.0) if sa is None else sa, ra, ember.tensor(1.0) if sb is None else sb,
                       rb, **kw)


@pytest.mark.parametrize("call,exc,match", [
    (lambda: _scaled(a=ember.zeros(4, 16).bfloat16(), b=ember.zeros(16, 8).bfloat16()), ValueError,
     r"Invalid scaling configuration\.\n- For TensorWise scaling, a and b should be float8"),
    (lambda: _scaled(sa=ember.tensor(1.0).bfloat16()), ValueError, "Invalid scaling configuration"),
    (lambda: _scaled(sa=ember.tensor(1.0).double()), ValueError, "Invalid scaling configuration"),
    (lambda: _scaled(sa=ember.ones(4, 1), ra=ScalingType.RowWise), ValueError, "Invalid scaling configuration"),
    (lambda: _scaled(sa=[ember.tensor(1.0)] * 2, ra=[ScalingType.TensorWise] * 2), ValueError,
     "Invalid scaling configuration"),
    (lambda: _scaled(sa=ember.ones(4, 1), ra=ScalingType.BlockWise1x128, sb=ember.ones(1, 8),
                     rb=ScalingType.BlockWise1x128), ValueError, "Invalid scaling configuration"),
    (lambda: _scaled(sa=ember.ones(1, 1), ra=ScalingType.BlockWise128x128, sb=ember.ones(1, 1),
                     rb=ScalingType.BlockWise128x128), ValueError, "Invalid scaling configuration"),
    (lambda: _scaled(sa=ember.ones(2)), ValueError, "scale_a must have 1 Float element"),
    (lambda: _scaled(sb=ember.ones(2)), ValueError, "scale_b must have 1 Float element"),
    (lambda: _scaled(sa=ember.ones(5, 1), ra=ScalingType.RowWise, sb=ember.ones(1, 8), rb=ScalingType.RowWise),
     ValueError, r"scale_a must have shape \[4, 1\], got \[5, 1\]"),
    (lambda: _scaled(sa=ember.ones(1, 4), ra=ScalingType.RowWise, sb=ember.ones(1, 8), rb=ScalingType.RowWise),
     ValueError, r"scale_a must have shape \[4, 1\], got \[1, 4\]"),
    (lambda: _scaled(sa=ember.ones(4, 1), ra=ScalingType.RowWise, sb=ember.ones(1, 9), rb=ScalingType.RowWise),
     ValueError, "scale_b must have 8 Float elements, got 9"),
    (lambda: _scaled(sa=ember.ones(4, 1), ra=ScalingType.RowWise, sb=ember.ones(8, 1), rb=ScalingType.RowWise),
     ValueError, r"scale_b must have shape \[1, 8\], got \[8, 1\]"),
    (lambda: _scaled(swizzle_a=SwizzleType.SWIZZLE_32_4_4, swizzle_b=SwizzleType.SWIZZLE_32_4_4), ValueError,
     "CPU does not support swizzle."),
    (lambda: _scaled(swizzle_b=SwizzleType.SWIZZLE_32_4_4), ValueError, "CPU does not support swizzle."),
    (lambda: _scaled(bias=ember.ones(3)), ValueError, "Bias must be size 8 but got 3"),
    (lambda: _scaled(bias=ember.ones(4, 8)), ValueError, "Bias must be size 8 but got 32"),
    (lambda: _scaled(bias=ember.ones(8).double()), ValueError,
     "Bias must be Float32 or BFloat16 or Half, but got ember.float64"),
    (lambda: _scaled(a=ember.zeros(1, 4, 16).to(F8[0])), ValueError, "mat_a must be a matrix"),
    (lambda: _scaled(b=ember.zeros(16).to(F8[0])), ValueError, "mat_b must be a matrix"),
    (lambda: _scaled(b=ember.zeros(8, 16).to(F8[0])), ValueError,
     r"mat_a and mat_b shapes cannot be multiplied \(4x16 and 8x16\)"),
    (lambda: _scaled(contraction_dim=(1,)), ValueError, "contraction_dim must have exactly 2 elements"),
    (lambda: _scaled(contraction_dim=(1, 1)), ValueError,
     r"cannot be multiplied \(4x16 and 16x8\) with contraction dims mat_a: 1, mat_b: 1"),
    (lambda: _scaled(contraction_dim=(2, 0)), IndexError, r"Dimension out of range \(expected to be in range of"),
    (lambda: _scaled(a=ember.zeros(16, 4).to(F8[0]), contraction_dim=(0, 0)), NotImplementedError,
     r"contraction_dim \(0, 0\) is not implemented for cpu"),
])
def test_scaled_mm_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# ---- scaled_grouped_mm --------------------------------------------------------------------------

def _grouped_rowwise_case(layout):
    shape_a, shape_b, ends = LAYOUTS[layout]
    a, a64 = _float8(shape_a, F8[0])
    b, b64 = _float8(shape_b, F8[1])
    g = len(ends) if ends is not None else shape_a[0]
    m, n = shape_a[-2], shape_b[-1]
    if layout == "2d3d":
        sa, sb = RNG.random(m) + 0.1, RNG.random((g, n)) + 0.1
    elif layout == "3d2d":
        sa, sb = RNG.random((g, m)) + 0.1, RNG.random(n) + 0.1
    elif layout == "2d2d":
        sa, sb = RNG.random(g * m) + 0.1, RNG.random(g * n) + 0.1
    else:
        sa, sb = RNG.random((g, m)) + 0.1, RNG.random((g, n)) + 0.1
    sa, sb = _rounded(sa, ember.float32), _rounded(sb, ember.float32)
    # the reference: each group's product scaled by its row and column scales
    if layout == "2d3d":
        expected = ref_grouped(a64 * sa[:, None], b64 * sb[:, None, :], ends)
    elif layout == "3d2d":
        expected = ref_grouped(a64 * sa[:, :, None], b64 * sb, ends)
    elif layout == "2d2d":
        expected = ref_grouped(a64, b64, ends) * sa.reshape(g, m, 1) * sb.reshape(g, 1, n)
    else:
        expected = ref_grouped(a64 * sa[:, :, None], b64 * sb[:, None, :], ends)
    return a, b, sa, sb, ends, expected


@pytest.mark.parametrize("layout", LAYOUTS)
def test_scaled_grouped_mm_rowwise(layout):
    a, b, sa, sb, ends, expected = _grouped_rowwise_case(layout)
    out = F.scaled_grouped_mm(a, b, _t(sa, ember.float32), ScalingType.RowWise, _t(sb, ember.float32),
                              ScalingType.RowWise, offs=None if ends is None else _offs(ends))
    assert out.dtype == ember.bfloat16 and tuple(out.shape) == expected.shape
    np.testing.assert_allclose(_np(out), expected, rtol=8e-3, atol=8e-3 * np.abs(expected).max())


def _sgmm(sa=None, ra=ScalingType.RowWise, sb=None, rb=ScalingType.RowWise, a=None, **kw):
    a = ember.zeros(6, 16).to(F8[0]) if a is None else a
    b = ember.zeros(2, 16, 8).to(F8[0])
    sa = ember.ones(6) if sa is None else sa
    sb = ember.ones(2, 8) if sb is None else sb
    kw.setdefault("offs", _offs([2, 6]))
    return F.scaled_grouped_mm(a, b, sa, ra, sb, rb, **kw)


@pytest.mark.parametrize("call,exc,match", [
    (lambda: _sgmm(a=ember.zeros(6, 16).bfloat16()), ValueError, "Expected mat_a and mat_b to be float8"),
    (lambda: _sgmm(offs=None), RuntimeError, "Have to provide offsets if there is a 2d matrix"),
    (lambda: _sgmm(offs=ember.tensor([2, 6])), RuntimeError, "Offsets have to be int32"),
    (lambda: _sgmm(offs=_offs([2, 7])), RuntimeError, r"offs\[-1\] <= 6"),
    (lambda: _sgmm(bias=ember.zeros(8)), ValueError, "Bias not supported yet"),
    (lambda: _sgmm(output_dtype=ember.float32), ValueError, "Only bf16 high precision output types"),
    (lambda: _sgmm(sa=ember.tensor(1.0), ra=ScalingType.TensorWise, sb=ember.tensor(1.0),
                   rb=ScalingType.TensorWise), ValueError, "Invalid scaling configuration"),
    (lambda: _sgmm(ra=ScalingType.BlockWise1x32, rb=ScalingType.BlockWise1x32), NotImplementedError,
     r"BlockWise \(MX/NV\) recipes are not implemented for cpu"),
    (lambda: _sgmm(swizzle_a=SwizzleType.SWIZZLE_32_4_4), ValueError, "CPU does not support swizzle."),
    (lambda: _sgmm(sa=ember.ones(6, 1)), RuntimeError, "scale must be a 1D tensor, but got 2D, arg 0"),
    (lambda: _sgmm(sa=ember.ones(5)), RuntimeError, "scale must have the same length as mat for arg 0"),
    (lambda: _sgmm(sb=ember.ones(8)), RuntimeError, "scale must be a 2D tensor, but got 1D for arg 1"),
    (lambda: _sgmm(sb=ember.ones(3, 8)), RuntimeError, "scale must have the same batch dimension as mat for arg 1"),
    (lambda: _sgmm(sb=ember.ones(2, 9)), RuntimeError, "scale must have the same first dimension as mat for arg 1"),
])
def test_scaled_grouped_mm_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
