"""deform_conv2d / DeformConv2d against a float64 NumPy reference (a direct sum over taps with
zero-padded bilinear samples); gradients for input, offset, mask, weight and bias by gradcheck."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from embervision import ops


def sample(img, y, x):
    """Bilinear sample, each corner outside the image reading 0, zero a full pixel outside."""
    h, w = img.shape
    if y <= -1 or y >= h or x <= -1 or x >= w:
        return 0.0
    y0, x0 = math.floor(y), math.floor(x)
    ly, lx = y - y0, x - x0

    def at(i, j):
        return img[i, j] if 0 <= i < h and 0 <= j < w else 0.0

    return ((1 - ly) * (1 - lx) * at(y0, x0) + (1 - ly) * lx * at(y0, x0 + 1)
            + ly * (1 - lx) * at(y0 + 1, x0) + ly * lx * at(y0 + 1, x0 + 1))


def deform_conv2d_ref(x, offset, weight, bias, stride, padding, dilation, mask):
    b_, c_in, _, _ = x.shape
    c_out, per_group, kh, kw = weight.shape
    groups = c_in // per_group
    kk = kh * kw
    offset_groups = offset.shape[1] // (2 * kk)
    out_h, out_w = offset.shape[2:]
    out = np.zeros((b_, c_out, out_h, out_w))
    for b in range(b_):
        for oh in range(out_h):
            for ow in range(out_w):
                # the sampled values of every (channel, tap) at this output position
                vals = np.zeros((c_in, kh, kw))
                for c in range(c_in):
                    g = c // (c_in // offset_groups)
                    for i in range(kh):
                        for j in range(kw):
                            k = i * kw + j
                            y = oh * stride[0] - padding[0] + i * dilation[0] + offset[b, g * 2 * kk + 2 * k, oh, ow]
                            xx = ow * stride[1] - padding[1] + j * dilation[1] + offset[b, g * 2 * kk + 2 * k + 1, oh, ow]
                            m = 1.0 if mask is None else mask[b, g * kk + k, oh, ow]
                            vals[c, i, j] = m * sample(x[b, c], y, xx)
                for o in range(c_out):
                    g = o // (c_out // groups)
                    out[b, o, oh, ow] = (weight[o] * vals[g * per_group:(g + 1) * per_group]).sum()
                    out[b, o, oh, ow] += 0.0 if bias is None else bias[o]
    return out


def t(a, dtype=ember.float64):
    return ember.from_numpy(np.ascontiguousarray(a)).to(dtype)


def make(gen, b=2, c_in=4, c_out=6, hw=(6, 7), k=(3, 2), stride=(1, 2), padding=(1, 0), dilation=(1, 2),
         groups=2, offset_groups=2, spread=2.0):
    kh, kw = k
    out_h = (hw[0] + 2 * padding[0] - (dilation[0] * (kh - 1) + 1)) // stride[0] + 1
    out_w = (hw[1] + 2 * padding[1] - (dilation[1] * (kw - 1) + 1)) // stride[1] + 1
    x = gen.standard_normal((b, c_in, *hw))
    offset = gen.uniform(-spread, spread, (b, 2 * offset_groups * kh * kw, out_h, out_w))
    mask = gen.uniform(0, 1, (b, offset_groups * kh * kw, out_h, out_w))
    weight = gen.standard_normal((c_out, c_in // groups, kh, kw))
    bias = gen.standard_normal(c_out)
    return x, offset, weight, bias, mask, dict(stride=stride, padding=padding, dilation=dilation)


@pytest.mark.parametrize("dtype", [ember.float64, ember.float32])
@pytest.mark.parametrize("use_mask,use_bias", [(True, True), (False, True), (True, False)])
@pytest.mark.parametrize("groups,offset_groups", [(1, 1), (2, 2), (2, 1), (1, 4)])
def test_forward_matches_reference(dtype, use_mask, use_bias, groups, offset_groups):
    gen = np.random.default_rng(groups * 10 + offset_groups)
    x, offset, weight, bias, mask, kw = make(gen, groups=groups, offset_groups=offset_groups)
    mask = mask if use_mask else None
    bias = bias if use_bias else None
    cast = [None if a is None else t(a, dtype) for a in (x, offset, weight, bias, mask)]
    out = ops.deform_conv2d(cast[0], cast[1], cast[2], cast[3], mask=cast[4], **kw)
    exp = deform_conv2d_ref(*[None if a is None else a.numpy().astype(np.float64) for a in cast[:4]],
                            kw["stride"], kw["padding"], kw["dilation"],
                            None if cast[4] is None else cast[4].numpy().astype(np.float64))
    tol = 1e-12 if dtype == ember.float64 else 1e-4
    assert out.dtype == dtype
    np.testing.assert_allclose(out.numpy(), exp, rtol=tol, atol=tol)


def test_zero_offsets_and_unit_mask_give_a_plain_convolution():
    gen = np.random.default_rng(2)
    x, offset, weight, bias, mask, kw = make(gen, groups=2, offset_groups=1)
    out = ops.deform_conv2d(t(x), t(np.zeros_like(offset)), t(weight), t(bias), mask=t(np.ones_like(mask)), **kw)
    plain = ember.nn.functional.conv2d(t(x), t(weight), t(bias), stride=kw["stride"], padding=kw["padding"],
                                       dilation=kw["dilation"], groups=2)
    np.testing.assert_allclose(out.numpy(), plain.numpy(), atol=1e-12)


def test_non_contiguous_inputs():
    gen = np.random.default_rng(3)
    x, offset, weight, bias, mask, kw = make(gen)
    xt = t(x.transpose(0, 1, 3, 2)).transpose(2, 3)
    wt = t(weight.transpose(1, 0, 2, 3)).transpose(0, 1)
    mt = t(np.concatenate([mask, mask], axis=3))[..., :mask.shape[3]]
    assert not (xt.is_contiguous() or wt.is_contiguous() or mt.is_contiguous())
    out = ops.deform_conv2d(xt, t(offset), wt, t(bias), mask=mt, **kw)
    np.testing.assert_allclose(out.numpy(), deform_conv2d_ref(x, offset, weight, bias, kw["stride"], kw["padding"],
                                                              kw["dilation"], mask), atol=1e-12)


@pytest.mark.parametrize("use_mask", [True, False])
@pytest.mark.parametrize("groups,offset_groups", [(1, 1), (2, 2)])
def test_gradcheck(use_mask, groups, offset_groups):
    gen = np.random.default_rng(4 + groups)
    x, offset, weight, bias, mask, kw = make(gen, b=1, c_in=2, c_out=2, hw=(4, 4), k=(2, 2), stride=(1, 1),
                                             padding=(1, 0), dilation=(1, 1), groups=groups,
                                             offset_groups=offset_groups, spread=1.3)
    inputs = [t(a).requires_grad_() for a in (x, offset, weight, bias)]
    if use_mask:
        inputs.append(t(mask).requires_grad_())

    def fn(x, offset, weight, bias, mask=None):
        return ops.deform_conv2d(x, offset, weight, bias, mask=mask, **kw)

    assert ember.autograd.gradcheck(fn, tuple(inputs))


def test_backward_of_an_input_alone_and_zero_batch():
    gen = np.random.default_rng(6)
    x, offset, weight, bias, mask, kw = make(gen)
    xt = t(x).requires_grad_()
    ops.deform_conv2d(xt, t(offset), t(weight), t(bias), mask=t(mask), **kw).sum().backward()
    assert xt.grad is not None and tuple(xt.grad.shape) == x.shape
    empty = ember.zeros((0, 4, 6, 7), dtype=ember.float64, requires_grad=True)
    off = ember.zeros((0, offset.shape[1], *offset.shape[2:]), dtype=ember.float64, requires_grad=True)
    out = ops.deform_conv2d(empty, off, t(weight), t(bias), **kw)
    assert tuple(out.shape) == (0, 6, *offset.shape[2:])
    out.sum().backward()
    assert tuple(empty.grad.shape) == (0, 4, 6, 7) and tuple(off.grad.shape) == tuple(off.shape)


def test_threads_do_not_change_results():
    # Large enough (16 channels, 3x3 taps, 8x8 outputs, two images) for the kernels to split the work.
    gen = np.random.default_rng(9)
    x, offset, weight, bias, mask, kw = make(gen, c_in=16, c_out=4, hw=(8, 8), k=(3, 3), stride=(1, 1),
                                             padding=(1, 1), dilation=(1, 1), groups=1, offset_groups=4)
    inputs = [t(a).requires_grad_() for a in (x, offset, weight, bias, mask)]
    before = ember.get_num_threads()
    results = []
    try:
        for threads in (1, 3):
            ember.set_num_threads(threads)
            for a in inputs:
                a.grad = None
            out = ops.deform_conv2d(*inputs[:4], mask=inputs[4], **kw)
            (out * out).sum().backward()
            results.append([out.detach().clone()] + [a.grad.clone() for a in inputs])
    finally:
        ember.set_num_threads(before)
    for one, three in zip(*results, strict=True):
        assert ember.allclose(one, three, rtol=1e-12, atol=1e-12)


def test_module():
    ember.manual_seed(0)
    layer = ops.DeformConv2d(4, 6, (3, 2), stride=(1, 2), padding=(1, 0), dilation=(1, 2), groups=2).double()
    assert tuple(layer.weight.shape) == (6, 2, 3, 2) and tuple(layer.bias.shape) == (6,)
    assert repr(layer) == "DeformConv2d(4, 6, kernel_size=(3, 2), stride=(1, 2), padding=(1, 0), dilation=(1, 2), groups=2)"
    assert repr(ops.DeformConv2d(2, 2, 3, bias=False)) == "DeformConv2d(2, 2, kernel_size=(3, 3), stride=(1, 1), bias=False)"
    gen = np.random.default_rng(7)
    x, offset, _, _, mask, kw = make(gen)
    out = layer(t(x), t(offset), t(mask))
    exp = deform_conv2d_ref(x, offset, layer.weight.detach().numpy(), layer.bias.detach().numpy(), kw["stride"],
                            kw["padding"], kw["dilation"], mask)
    np.testing.assert_allclose(out.detach().numpy(), exp, atol=1e-12)
    out.sum().backward()
    assert layer.weight.grad is not None and layer.bias.grad is not None
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        ops.DeformConv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        ops.DeformConv2d(4, 3, 3, groups=2)


def test_bad_inputs():
    gen = np.random.default_rng(8)
    x, offset, weight, bias, mask, kw = make(gen)
    x, offset, weight, bias, mask = map(t, (x, offset, weight, bias, mask))
    with pytest.raises(RuntimeError, match=r"\[deform_conv2d\] expected offset.shape\[1\] to be a positive multiple "
                                           r"of 2 \* weight.shape\[2\] \* weight.shape\[3\] = 12, but got 10"):
        ops.deform_conv2d(x, offset[:, :10], weight, bias, **kw)
    with pytest.raises(RuntimeError, match=r"\[deform_conv2d\] expected offset of shape \[2, 24, 6, 3\], but got "
                                           r"\(2, 24, 5, 3\)"):
        ops.deform_conv2d(x, offset[:, :, :5], weight, bias, **kw)
    with pytest.raises(RuntimeError, match=r"\[deform_conv2d\] expected mask of shape \[2, 12, 6, 3\], but got"):
        ops.deform_conv2d(x, offset, weight, bias, mask=mask[:, :6], **kw)
    with pytest.raises(RuntimeError, match=r"\[deform_conv2d\] expected the input channels \(4\) to be a multiple "
                                           r"of weight.shape\[1\] \(3\)"):
        ops.deform_conv2d(x, offset, ember.zeros((6, 3, 3, 2), dtype=ember.float64), bias, **kw)
    with pytest.raises(RuntimeError, match=r"\[deform_conv2d\] expected the input channels \(4\) to be a multiple "
                                           r"of the offset groups \(3\)"):
        ops.deform_conv2d(x, ember.zeros((2, 36, 6, 3), dtype=ember.float64), weight, bias, **kw)
    with pytest.raises(RuntimeError, match=r"\[deform_conv2d\] expected the output channels \(5\) to be a multiple "
                                           r"of the weight groups \(2\)"):
        ops.deform_conv2d(x, offset, weight[:5], None, **kw)
    with pytest.raises(RuntimeError, match=r"\[deform_conv2d\] expected bias of shape \[6\], but got \(5,\)"):
        ops.deform_conv2d(x, offset, weight, bias[:5], **kw)
    with pytest.raises(TypeError, match=r"\[deform_conv2d\] expected weight of the input's dtype ember.float64, "
                                        r"but got ember.float32"):
        ops.deform_conv2d(x, offset, weight.float(), bias, **kw)
    with pytest.raises(TypeError, match=r"\[deform_conv2d\] expected input of dtype float32 or float64"):
        ops.deform_conv2d(x.long(), offset, weight, bias, **kw)
    with pytest.raises(ValueError, match=r"\[deform_conv2d\] expected positive stride and dilation"):
        ops.deform_conv2d(x, offset, weight, bias, stride=0)
    with pytest.raises(ValueError, match=r"\[deform_conv2d\] expected input to have 4 dimensions, but got shape "
                                         r"\(4, 6, 7\)"):
        ops.deform_conv2d(x[0], offset, weight, bias, **kw)
    with pytest.raises(RuntimeError, match=r"\[deform_conv2d\] expected the kernel \(3x2, dilation \(9, 9\)\) to fit"):
        ops.deform_conv2d(x, offset, weight, bias, dilation=9)
