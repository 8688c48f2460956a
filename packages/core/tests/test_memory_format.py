"""Memory formats (ember._memory_format, Note [memory formats] in native/src/core/tensor.cpp):
channels_last layouts, the factories and conversions that take memory_format=, and the layers
that keep a channels-last input channels last, each against the row-major computation."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck

RNG = np.random.default_rng(5)


def _t(a, grad=False):
    t = ember.from_numpy(np.ascontiguousarray(a))
    return t.requires_grad_() if grad else t


def cl(a, grad=False):
    """A channels-last copy of a 4-d array (5-d: channels_last_3d) as a tensor."""
    fmt = ember.channels_last if a.ndim == 4 else ember.channels_last_3d
    t = _t(a).contiguous(memory_format=fmt)
    return t.requires_grad_() if grad else t


def nhwc_strides(shape):
    n, c, *spatial = shape
    strides, s = {1: 1}, c
    for d in range(len(shape) - 1, 1, -1):
        strides[d], s = s, s * shape[d]
    strides[0] = s
    return tuple(strides[d] for d in range(len(shape)))


def test_formats_are_singletons_with_reprs_and_type_checks():
    assert repr(ember.channels_last) == "ember.channels_last"
    assert repr(ember.channels_last_3d) == "ember.channels_last_3d"
    assert isinstance(ember.channels_last, ember.memory_format)
    assert pickle.loads(pickle.dumps(ember.channels_last)) is ember.channels_last
    with pytest.raises(TypeError, match="contiguous\\(\\): argument 'memory_format' must be ember.memory_format, "
                                        "not int"):
        ember.ones(2, 3, 4, 5).contiguous(memory_format=1)
    with pytest.raises(TypeError, match="is_contiguous\\(\\): argument 'memory_format' must be"):
        ember.ones(2, 3, 4, 5).is_contiguous(memory_format="channels_last")


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (1, 7, 1, 3), (3, 2, 5, 1, 4)])
def test_contiguous_lays_out_channels_last_and_keeps_values(shape):
    a = RNG.standard_normal(shape)
    fmt = ember.channels_last if len(shape) == 4 else ember.channels_last_3d
    x = _t(a)
    y = x.contiguous(memory_format=fmt)
    assert y.stride() == nhwc_strides(shape)
    assert y.is_contiguous(memory_format=fmt) and not y.is_contiguous()
    assert x.is_contiguous() and not x.is_contiguous(memory_format=fmt)
    np.testing.assert_array_equal(y.numpy(), a)
    assert y.contiguous(memory_format=fmt) is y  # already laid out: no copy
    back = y.contiguous()
    assert back.is_contiguous() and back.stride() == x.stride()
    np.testing.assert_array_equal(back.numpy(), a)
    # a non-contiguous source (a channel slice) and preserve_format, which keeps y's layout
    z = _t(np.repeat(a, 2, axis=1))[:, ::2].contiguous(memory_format=fmt)
    np.testing.assert_array_equal(z.numpy(), a)
    assert y.contiguous(memory_format=ember.preserve_format) is y
    assert y.is_contiguous(memory_format=ember.preserve_format)


def test_ambiguous_shapes_and_zero_size():
    # one channel, or a 1x1 image: both layouts hold the same bytes, and both checks say so
    for shape in [(2, 1, 4, 5), (2, 3, 1, 1)]:
        x = ember.ones(*shape)
        assert x.is_contiguous() and x.is_contiguous(memory_format=ember.channels_last)
    z = ember.ones(0, 3, 4, 5).contiguous(memory_format=ember.channels_last)
    assert z.shape == (0, 3, 4, 5) and z.is_contiguous(memory_format=ember.channels_last)


def test_rank_errors():
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        ember.ones(2, 3, 4).contiguous(memory_format=ember.channels_last)
    with pytest.raises(RuntimeError, match="required rank 5 tensor to use channels_last_3d format"):
        ember.ones(2, 3, 4, 5).contiguous(memory_format=ember.channels_last_3d)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        ember.empty(2, 3, memory_format=ember.channels_last)
    assert not ember.ones(2, 3, 4).is_contiguous(memory_format=ember.channels_last)


def test_gradient_through_the_layout_change():
    x = _t(RNG.standard_normal((2, 3, 2, 3)), True)
    assert gradcheck(lambda t: t.contiguous(memory_format=ember.channels_last) * 2.0, (x,))
    assert gradcheck(lambda t: ember.clone(t, memory_format=ember.channels_last).sin(), (x,))
    # the op under both (0 row-major, 1 channels last; copy=True copies even when laid out)
    for code, copy in ((1, False), (1, True), (0, True)):
        assert gradcheck(lambda t, c=code, k=copy: ember._C.to_memory_format(t, c, k).exp(), (x,),
                         check_forward_ad=True)
    with pytest.raises(ValueError, match=r"expected a memory format code in \[0, 2\], but got 7"):
        ember._C.to_memory_format(x, 7, False)


def test_factories_clone_and_to_keep_or_take_the_layout():
    a = RNG.standard_normal((2, 3, 4, 5))
    y = cl(a)
    want = nhwc_strides(a.shape)
    for made in (ember.clone(y), y.clone(), ember.empty_like(y), ember.zeros_like(y), ember.ones_like(y),
                 ember.full_like(y, 2.0), ember.rand_like(y), ember.randn_like(y), y.to(ember.float32),
                 y.to(ember.float64), y + 1, ember.relu(y), y * y):
        assert made.stride() == want
    np.testing.assert_array_equal(y.clone().numpy(), a)
    assert y.clone() is not y
    assert ember.clone(y, memory_format=ember.contiguous_format).is_contiguous()
    assert ember.zeros_like(y, memory_format=ember.contiguous_format).is_contiguous()
    np.testing.assert_array_equal(y.to(ember.float32).numpy(), a.astype(np.float32))
    x = _t(a)
    assert x.to(memory_format=ember.channels_last).stride() == want
    assert x.to(ember.float32, memory_format=ember.channels_last).stride() == want
    assert y.to(memory_format=ember.channels_last) is y
    e = ember.empty(2, 3, 4, 5, memory_format=ember.channels_last)
    assert e.stride() == want and e.dtype == ember.float32


def test_convolution_keeps_channels_last_and_equals_row_major():
    a, w, b = RNG.standard_normal((2, 3, 9, 8)), RNG.standard_normal((4, 3, 3, 3)), RNG.standard_normal(4)
    gy = RNG.standard_normal((2, 4, 5, 4))
    ref_x, ref_w = _t(a, True), _t(w, True)
    ref = F.conv2d(ref_x, ref_w, _t(b), stride=2, padding=1)
    ref.backward(_t(gy))
    for x, wt in [(cl(a, True), _t(w, True)), (_t(a, True), cl(w, True)), (cl(a, True), cl(w, True))]:
        y = F.conv2d(x, wt, _t(b), stride=2, padding=1)
        assert y.is_contiguous(memory_format=ember.channels_last) and not y.is_contiguous()
        np.testing.assert_allclose(y.detach().numpy(), ref.detach().numpy(), rtol=1e-12, atol=1e-12)
        y.backward(_t(gy))
        np.testing.assert_allclose(x.grad.numpy(), ref_x.grad.numpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(wt.grad.numpy(), ref_w.grad.numpy(), rtol=1e-12, atol=1e-12)
        # .grad takes its leaf's layout, as PyTorch's gradient layout contract has it
        assert x.grad.stride() == x.stride() and wt.grad.stride() == wt.stride()
    xs = cl(RNG.standard_normal((1, 2, 4, 5)), True)
    ws = _t(RNG.standard_normal((3, 2, 2, 2)), True)
    assert gradcheck(lambda x, w: F.conv2d(x, w, padding=1), (xs, ws))


CHANNELS_LAST_CONVS = [  # (input shape, weight shape, stride, padding, dilation): Note [channels-last convolution]
    ((2, 5, 7, 6), (4, 5, 1, 1), 1, 0, 1),  # 1x1: the input is the rows
    ((2, 5, 7, 6), (4, 5, 1, 1), 2, 0, 1),  # strided 1x1
    ((1, 3, 11, 9), (6, 3, 3, 3), 1, 1, 1),  # adjacent taps, edges padded
    ((2, 4, 10, 13), (3, 4, 5, 3), (3, 2), (2, 0), (1, 2)),  # dilated columns: tap by tap
    ((1, 64, 40, 40), (8, 64, 3, 3), 1, 1, 1),  # 576-long rows: several position blocks
]


@pytest.mark.parametrize("case", CHANNELS_LAST_CONVS, ids=lambda c: f"k{c[1][2:]}-s{c[2]}-d{c[4]}")
def test_channels_last_convolution_equals_row_major(case):
    shape, wshape, stride, padding, dilation = case
    a, w, b = RNG.standard_normal(shape), RNG.standard_normal(wshape), RNG.standard_normal(wshape[0])
    want = F.conv2d(_t(a), _t(w), _t(b), stride, padding, dilation)
    for dtype, tol in ((np.float64, 1e-11), (np.float32, 1e-4)):
        for bias in (_t(b.astype(dtype)), None):
            got = F.conv2d(cl(a.astype(dtype)), cl(w.astype(dtype)), bias, stride, padding, dilation)
            assert got.is_contiguous(memory_format=ember.channels_last)
            expect = want.numpy() - (0 if bias is not None else b.reshape(1, -1, 1, 1))
            np.testing.assert_allclose(got.numpy(), expect, rtol=tol, atol=tol)


def test_conv3d_keeps_channels_last_3d():
    a, w = RNG.standard_normal((2, 3, 4, 5, 6)), RNG.standard_normal((2, 3, 2, 2, 2))
    for kwargs in ({}, {"padding": 1, "stride": (1, 2, 1)}):
        y = F.conv3d(cl(a), _t(w), **kwargs)
        assert y.is_contiguous(memory_format=ember.channels_last_3d) and not y.is_contiguous()
        np.testing.assert_allclose(y.numpy(), F.conv3d(_t(a), _t(w), **kwargs).numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("pool", [
    lambda x: F.max_pool2d(x, 2),
    lambda x: F.max_pool2d(x, 3, stride=2, padding=1, return_indices=True)[1],
    lambda x: F.avg_pool2d(x, 2, stride=1),
    lambda x: F.adaptive_avg_pool2d(x, (3, 2)),
    lambda x: F.adaptive_max_pool2d(x, 2),
    lambda x: F.batch_norm(x, None, None, _t(np.arange(1.0, 4.0)), _t(np.arange(3.0)), training=True),
    lambda x: F.batch_norm(x, _t(np.zeros(3)), _t(np.ones(3)), _t(np.arange(1.0, 4.0)), None, training=False),
    lambda x: F.group_norm(x, 3),
    lambda x: F.hardswish(x) + F.silu(x),
    lambda x: F.leaky_relu(x) + F.elu(x) + ember.where(x > 0, x, 0.5),
    lambda x: F.pad(x, (1, 2, 0, 1)) + 0,
    lambda x: F.pad(x, (1, 1, 2, 0), mode="reflect"),
    lambda x: ember.cat([x, x * 2], 1),
    lambda x: F.interpolate(x, scale_factor=2),
    lambda x: F.interpolate(x, size=(5, 9), mode="bilinear"),
], ids=["max_pool", "max_pool_indices", "avg_pool", "adaptive_avg_pool", "adaptive_max_pool", "batch_norm_train",
        "batch_norm_eval", "group_norm", "pointwise", "where", "pad", "pad_reflect", "cat", "interpolate_nearest", "interpolate_bilinear"])
def test_layers_keep_channels_last(pool):
    a = RNG.standard_normal((2, 3, 7, 6))
    want = pool(_t(a))
    got = pool(cl(a))
    assert got.is_contiguous(memory_format=ember.channels_last) and not got.is_contiguous()
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
    if got.dtype == ember.float64:  # and its gradient takes the input's layout
        x = cl(a, True)
        pool(x).sum().backward()
        assert x.grad.is_contiguous(memory_format=ember.channels_last)
        ref = _t(a, True)
        pool(ref).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), ref.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_cat_is_channels_last_only_when_every_part_is():
    a = RNG.standard_normal((2, 3, 4, 5))
    assert ember.cat([cl(a), cl(a)], 0).is_contiguous(memory_format=ember.channels_last)
    mixed = ember.cat([cl(a), _t(a)], 1)
    assert mixed.is_contiguous()
    np.testing.assert_array_equal(mixed.numpy(), np.concatenate([a, a], 1))


def test_model_to_channels_last_trains_like_the_row_major_model():
    ember.manual_seed(0)

    def net():
        return ember.nn.Sequential(ember.nn.Conv2d(3, 4, 3, padding=1), ember.nn.BatchNorm2d(4), ember.nn.ReLU(),
                                   ember.nn.MaxPool2d(2), ember.nn.Conv2d(4, 2, 1), ember.nn.AdaptiveAvgPool2d(1),
                                   ember.nn.Flatten(), ember.nn.Linear(2, 2)).double()
    a, b = net(), net()
    b.load_state_dict(a.state_dict())
    assert b.to(memory_format=ember.channels_last) is b
    conv = b[0]
    assert conv.weight.is_contiguous(memory_format=ember.channels_last) and not conv.weight.is_contiguous()
    assert conv.bias.is_contiguous() and b[7].weight.is_contiguous()
    x = RNG.standard_normal((4, 3, 8, 8))
    opt_a, opt_b = ember.optim.SGD(a.parameters(), lr=0.1), ember.optim.SGD(b.parameters(), lr=0.1)
    for _ in range(3):
        for model, opt, inp in ((a, opt_a, _t(x)), (b, opt_b, cl(x))):
            opt.zero_grad()
            model(inp).square().sum().backward()
            opt.step()
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        np.testing.assert_allclose(pb.detach().numpy(), pa.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert conv.weight.is_contiguous(memory_format=ember.channels_last)  # the optimizer wrote in place
    with pytest.raises(TypeError, match="to\\(\\): argument 'memory_format' must be ember.memory_format"):
        b.to(memory_format="channels_last")
