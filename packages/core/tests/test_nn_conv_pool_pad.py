"""Transposed convolutions, unfold/fold, max pooling with indices, adaptive and Lp pooling,
max_unpool, F.pad and their layers (Conv*, ConvTranspose*, pooling and padding modules):
values against float64 NumPy references written here, gradients by gradcheck, reprs and
state-dict keys as PyTorch's, and argument errors."""

import itertools

import numpy as np
import pytest

import ember
from ember import nn
from ember.autograd import gradcheck
from ember.nn import functional as F

RNG = np.random.default_rng(11)


def _t(a, grad=False):
    t = ember.from_numpy(np.ascontiguousarray(a))
    return t.requires_grad_() if grad else t


def _noncontig(a):
    """The same values as `a`, as a transposed (non-contiguous) ember view."""
    t = _t(np.ascontiguousarray(np.swapaxes(a, -1, -2))).transpose(-1, -2)
    assert not t.is_contiguous()
    return t


# ---- references -------------------------------------------------------------------------------

def _ref_conv_transpose(x, w, stride, padding, output_padding, groups, dilation):
    """Every input element scatters its kernel, scaled, into the output (the definition)."""
    batch, cin = x.shape[:2]
    per_out, kernel = w.shape[1], w.shape[2:]
    full = [(size - 1) * s + d * (k - 1) + 1 + op for size, s, d, k, op in
            zip(x.shape[2:], stride, dilation, kernel, output_padding, strict=True)]
    y = np.zeros([batch, per_out * groups] + full)
    per_in = cin // groups
    for c in range(cin):
        g = c // per_in
        for pos in itertools.product(*[range(s) for s in x.shape[2:]]):
            for tap in itertools.product(*[range(k) for k in kernel]):
                at = tuple(p * s + t * d for p, s, t, d in zip(pos, stride, tap, dilation, strict=True))
                y[(slice(None), slice(g * per_out, (g + 1) * per_out)) + at] += \
                    x[(slice(None), c) + pos][:, None] * w[(c, slice(None)) + tap][None]
    out = [f - 2 * p for f, p in zip(full, padding, strict=True)]
    return y[(slice(None), slice(None)) + tuple(slice(p, p + o) for p, o in zip(padding, out, strict=True))]


def _ref_unfold(x, kernel, dilation, padding, stride):
    x = np.pad(x, ((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2))
    batch, channels, height, width = x.shape
    oh = (height - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    ow = (width - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1
    cols = np.zeros((batch, channels * kernel[0] * kernel[1], oh * ow))
    for c, i, j, bi, bj in itertools.product(range(channels), range(kernel[0]), range(kernel[1]), range(oh),
                                             range(ow)):
        cols[:, (c * kernel[0] + i) * kernel[1] + j, bi * ow + bj] = \
            x[:, c, bi * stride[0] + i * dilation[0], bj * stride[1] + j * dilation[1]]
    return cols


def _adaptive_bounds(size, out):
    return [((i * size) // out, -((-(i + 1) * size) // out)) for i in range(out)]


def _ref_adaptive(x, out, reduce):
    n = len(out)
    y = np.zeros(x.shape[:-n] + tuple(out))
    for pos in itertools.product(*[range(o) for o in out]):
        box = tuple(slice(*_adaptive_bounds(x.shape[x.ndim - n + i], out[i])[p]) for i, p in enumerate(pos))
        region = x[(Ellipsis,) + box]
        y[(Ellipsis,) + pos] = reduce(region.reshape(region.shape[:-n] + (-1,)), axis=-1)
    return y


# ---- transposed convolution ---------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("stride,padding,output_padding,groups,dilation", [
    (1, 0, 0, 1, 1), (2, 1, 1, 2, 1), (3, 2, 0, 1, 1), (1, 0, 0, 1, 2), (2, 0, 1, 2, 2)])
def test_conv_transpose_matches_the_scatter_definition(n, stride, padding, output_padding, groups, dilation):
    size = {1: 5, 2: 4, 3: 3}[n]
    x = RNG.normal(size=[2, 4] + [size] * n)
    w = RNG.normal(size=[4, 3] + [2 if n == 3 else 3] * n)
    b = RNG.normal(size=3 * groups)
    args = [(v,) * n for v in (stride, padding, output_padding)]
    conv = getattr(F, f"conv_transpose{n}d")
    got = conv(_t(x), _t(w), _t(b), *args, groups, (dilation,) * n).numpy()
    want = _ref_conv_transpose(x, w, *args, groups, (dilation,) * n) + b.reshape([1, -1] + [1] * n)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_conv_transpose_gradients_unbatched_and_noncontiguous():
    x, w, b = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(2, 2, 2, 3)), RNG.normal(size=2)
    assert gradcheck(lambda a, k, c: F.conv_transpose2d(a, k, c, stride=(2, 1), padding=(0, 1), output_padding=(1, 0)),
                     (_t(x, True), _t(w, True), _t(b, True)))
    got = F.conv_transpose2d(_noncontig(x), _t(w), stride=2)
    np.testing.assert_allclose(got.numpy(), _ref_conv_transpose(x[None], w, (2, 2), (0, 0), (0, 0), 1, (1, 1))[0],
                               rtol=1e-12, atol=1e-12)
    empty = F.conv_transpose1d(_t(np.zeros((0, 2, 5))), _t(RNG.normal(size=(2, 3, 3))))
    assert tuple(empty.shape) == (0, 3, 7)


def test_conv_transpose_errors():
    x, w = _t(RNG.normal(size=(1, 2, 4))), _t(RNG.normal(size=(2, 3, 3)))
    with pytest.raises(RuntimeError, match="output padding must be smaller than either stride or dilation"):
        F.conv_transpose1d(x, w, stride=2, output_padding=2)
    with pytest.raises(RuntimeError, match="expected input.* to have 3 channels"):
        F.conv_transpose1d(_t(RNG.normal(size=(1, 3, 4))), _t(RNG.normal(size=(3, 1, 2))), groups=2)
    with pytest.raises(RuntimeError, match="weight must be 3-D"):
        F.conv_transpose1d(x, _t(RNG.normal(size=(2, 3))))


# ---- unfold / fold ----------------------------------------------------------------------------

def test_unfold_matches_im2col_and_fold_is_its_adjoint():
    x = RNG.normal(size=(2, 3, 7, 6))
    geometry = dict(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
    cols = F.unfold(_t(x), **geometry)
    np.testing.assert_allclose(cols.numpy(), _ref_unfold(x, (2, 3), (1, 2), (1, 1), (2, 1)), rtol=0, atol=0)
    c = RNG.normal(size=tuple(cols.shape))
    image = F.fold(_t(c), (7, 6), **geometry)
    assert np.isclose((cols.numpy() * c).sum(), (x * image.numpy()).sum(), rtol=1e-12)  # <unfold x, c> = <x, fold c>
    # without overlap fold inverts unfold exactly; unbatched forms drop the batch dim
    x1 = RNG.normal(size=(3, 4, 6))
    np.testing.assert_array_equal(F.fold(F.unfold(_t(x1), 2, stride=2), (4, 6), 2, stride=2).numpy(), x1)
    np.testing.assert_array_equal(F.unfold(_noncontig(x1), 2).numpy(), _ref_unfold(x1[None], (2, 2), (1, 1), (0, 0),
                                                                                   (1, 1))[0])
    assert gradcheck(lambda a: F.unfold(a, (2, 2), padding=1, stride=2), (_t(RNG.normal(size=(1, 2, 3, 3)), True),))
    assert gradcheck(lambda a: F.fold(a, (3, 4), (2, 2), dilation=(1, 2)), (_t(RNG.normal(size=(1, 8, 4)), True),))


def test_unfold_fold_errors():
    with pytest.raises(NotImplementedError, match="Only 3D or 4D input"):
        F.unfold(_t(np.zeros((2, 3))), 2)
    with pytest.raises(RuntimeError, match="divisible by the product of kernel_size"):
        F.fold(_t(np.zeros((1, 5, 4))), (3, 3), 2)
    with pytest.raises(RuntimeError, match="calculated number of sliding blocks 2 \\* 2 = 4, but got input.size\\(2\\)=3"):
        F.fold(_t(np.zeros((1, 4, 3))), (3, 3), 2)


# ---- max pooling with indices, adaptive and Lp pooling, unpooling ----------------------------

def test_max_pool_indices_point_at_the_max_and_the_gradient_goes_to_the_first_max():
    x = RNG.normal(size=(2, 3, 7, 6))
    out, idx = F.max_pool2d(_t(x), 3, 2, 1, ceil_mode=True, return_indices=True)
    assert idx.dtype == ember.int64
    picked = np.take_along_axis(x.reshape(2, 3, -1), idx.numpy().reshape(2, 3, -1), 2).reshape(out.shape)
    np.testing.assert_array_equal(picked, out.numpy())
    ties = _t(np.zeros((1, 1, 2, 2)), True)  # all equal: PyTorch sends the gradient to the first
    F.max_pool2d(ties, 2).sum().backward()
    np.testing.assert_array_equal(ties.grad.numpy(), [[[[1, 0], [0, 0]]]])
    out1, idx1 = F.max_pool1d(_noncontig(x[0]), 2, return_indices=True)
    np.testing.assert_array_equal(out1.numpy(), x[0].reshape(3, 7, 3, 2).max(-1))
    np.testing.assert_array_equal(idx1.numpy(), 2 * np.arange(3) + x[0].reshape(3, 7, 3, 2).argmax(-1))
    assert gradcheck(lambda a: F.max_pool3d(a, 2, padding=1), (_t(RNG.normal(size=(1, 1, 3, 3, 2)), True),))
    empty, empty_idx = F.max_pool2d(_t(np.zeros((0, 2, 4, 4))), 2, return_indices=True)
    assert tuple(empty.shape) == tuple(empty_idx.shape) == (0, 2, 2, 2)
    assert np.isnan(F.max_pool1d(_t(np.array([[1.0, np.nan, 0.5, 2.0]])), 2).numpy()[0, 0])  # NaN propagates


@pytest.mark.parametrize("n", [1, 2, 3])
def test_adaptive_pooling_matches_the_reference(n):
    x = RNG.normal(size=[2, 3] + [7, 5, 4][:n])
    for out in [(3, 4, 2), (7, 5, 4), (1, 1, 1), (5, 3, 3)]:
        out = out[:n]
        avg = getattr(F, f"adaptive_avg_pool{n}d")(_t(x), out)
        np.testing.assert_allclose(avg.numpy(), _ref_adaptive(x, out, np.mean), rtol=1e-12, atol=1e-14)
        peak, idx = getattr(F, f"adaptive_max_pool{n}d")(_t(x), out, return_indices=True)
        np.testing.assert_array_equal(peak.numpy(), _ref_adaptive(x, out, np.max))
        picked = np.take_along_axis(x.reshape(2, 3, -1), idx.numpy().reshape(2, 3, -1), 2).reshape(peak.shape)
        np.testing.assert_array_equal(picked, peak.numpy())


def test_adaptive_pooling_none_sizes_unbatched_gradients_and_errors():
    x = RNG.normal(size=(3, 7, 5))
    assert tuple(F.adaptive_avg_pool2d(_t(x), (None, 2)).shape) == (3, 7, 2)
    np.testing.assert_allclose(F.adaptive_avg_pool2d(_noncontig(x), 3).numpy(), _ref_adaptive(x, (3, 3), np.mean),
                               rtol=1e-12)
    assert tuple(F.adaptive_max_pool2d(_t(np.zeros((0, 2, 4, 4))), 2).shape) == (0, 2, 2, 2)
    t = _t(RNG.normal(size=(1, 2, 5, 4)), True)
    assert gradcheck(lambda a: F.adaptive_avg_pool2d(a, (3, 3)), (t,))
    assert gradcheck(lambda a: F.adaptive_max_pool2d(a, (2, 3)), (t,))
    with pytest.raises(RuntimeError, match="non-zero size for non-batch dimensions"):
        F.adaptive_avg_pool2d(_t(np.zeros((1, 2, 0, 3))), 2)
    with pytest.raises(RuntimeError, match="greater than or equal to 0"):
        F.adaptive_max_pool1d(_t(np.zeros((1, 2, 3))), -1)
    with pytest.raises(RuntimeError, match="output_size must be an int or a tuple of 2 ints"):
        F.adaptive_avg_pool2d(_t(np.zeros((1, 2, 3, 3))), (1, 2, 3))


def test_lp_pool_and_max_unpool():
    x = np.abs(RNG.normal(size=(2, 3, 6, 4))) + 0.1
    got = F.lp_pool2d(_t(x), 3, (2, 2))
    want = (x.reshape(2, 3, 3, 2, 2, 2) ** 3).sum((3, 5)) ** (1 / 3)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(F.lp_pool1d(_t(x[0]), 2, 2).numpy(),
                               np.sqrt((x[0].reshape(3, 6, 2, 2) ** 2).sum(-1)), rtol=1e-12)
    assert gradcheck(lambda a: F.lp_pool2d(a, 2.0, 2, stride=1), (_t(x[:1, :1, :3, :3], True),))
    out, idx = F.max_pool2d(_t(x), 2, return_indices=True)
    restored = F.max_unpool2d(out, idx, 2, output_size=(6, 4)).numpy()
    mask = restored != 0
    np.testing.assert_array_equal(restored[mask], x[mask])
    assert mask.sum() == out.numel()
    assert tuple(F.max_unpool2d(out, idx, 2, output_size=[2, 3, 7, 5]).shape) == (2, 3, 7, 5)
    assert gradcheck(lambda a: F.max_unpool1d(a, ember.tensor([[[1, 2]]]), 2), (_t(RNG.normal(size=(1, 1, 2)), True),))
    with pytest.raises(ValueError, match="invalid output_size"):
        F.max_unpool2d(out, idx, 2, output_size=(9, 4))
    with pytest.raises(RuntimeError, match="Found an invalid max index: 99"):
        F.max_unpool1d(_t(np.ones((1, 1, 2))), ember.tensor([[[0, 99]]]), 2)
    with pytest.raises(RuntimeError, match="Expected shape of indices to be same as that of the input"):
        F.max_unpool1d(_t(np.ones((1, 1, 2))), ember.tensor([[[0]]]), 2)


# ---- pad ----------------------------------------------------------------------------------------

_NUMPY_MODE = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("dims", [1, 2, 3])
def test_pad_modes_match_numpy(mode, dims):
    x = RNG.normal(size=[2, 3, 5, 4, 3][:2 + dims])
    widths = [(2, 1), (0, 3), (1, 2)][:dims]
    flat = [w for pair in reversed(widths) for w in pair]
    want = np.pad(x, [(0, 0), (0, 0)] + widths, mode=_NUMPY_MODE[mode])
    np.testing.assert_array_equal(F.pad(_t(x), flat, mode=mode).numpy(), want)
    np.testing.assert_array_equal(F.pad(_t(x[0]), flat, mode=mode).numpy(), want[0])  # unbatched
    assert gradcheck(lambda a: F.pad(a, flat, mode=mode), (_t(x[:1, :1], True),))


def test_pad_constant_negative_noncontiguous_and_zero_size():
    x = RNG.normal(size=(2, 3, 4))
    got = F.pad(_noncontig(x), (1, -1, -1, 2), value=7.0).numpy()
    want = np.pad(x[:, 1:, :3], ((0, 0), (0, 2), (1, 0)), constant_values=7.0)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(F.pad(_t(x), (0, 0, 0, 0, 1, 1)).numpy(), np.pad(x, ((1, 1), (0, 0), (0, 0))))
    assert tuple(F.pad(_t(np.zeros((0, 3))), (2, 2)).shape) == (0, 7)
    assert gradcheck(lambda a: F.pad(a, (2, -1), value=1.5), (_t(x, True),))


def test_pad_errors():
    x = _t(np.zeros((1, 2, 3)))
    with pytest.raises(ValueError, match="Padding length must be divisible by 2"):
        F.pad(x, (1, 2, 3))
    with pytest.raises(ValueError, match="Padding length should be less than or equal to two times"):
        F.pad(x, (1,) * 8)
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode wrap"):
        F.pad(x, (1, 1), mode="wrap")
    with pytest.raises(RuntimeError, match="Padding size should be less than the corresponding input dimension"):
        F.pad(x, (3, 0), mode="reflect")
    with pytest.raises(RuntimeError, match="wrapping around more than once"):
        F.pad(x, (4, 0), mode="circular")
    with pytest.raises(ValueError, match="doesn't take in value argument"):
        F.pad(x, (1, 1), mode="replicate", value=2.0)
    with pytest.raises(RuntimeError, match="negative output size"):
        F.pad(x, (-2, -2))


# ---- layers -------------------------------------------------------------------------------------

def test_conv_layers_padding_modes_same_and_reprs():
    ember.manual_seed(0)
    x = RNG.normal(size=(2, 3, 6, 5))
    for mode in ("reflect", "replicate", "circular"):
        conv = nn.Conv2d(3, 4, 3, padding=(1, 2), padding_mode=mode).double()
        padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (2, 2)), mode=_NUMPY_MODE[mode])
        want = F.conv2d(_t(padded), conv.weight, conv.bias).detach().numpy()
        np.testing.assert_allclose(conv(_t(x)).detach().numpy(), want, rtol=1e-12)
    same = nn.Conv1d(3, 2, 4, padding="same", dilation=2, padding_mode="reflect").double()
    assert tuple(same(_t(x[:, :, 0])).shape) == (2, 2, 5)
    assert repr(nn.Conv2d(1, 8, 3, padding=1)) == "Conv2d(1, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))"
    assert repr(nn.Conv1d(4, 4, 3, groups=2, bias=False, padding="same", padding_mode="circular")) == \
        "Conv1d(4, 4, kernel_size=(3,), stride=(1,), padding=same, groups=2, bias=False, padding_mode=circular)"
    assert repr(nn.ConvTranspose3d(4, 2, 3, stride=2, output_padding=1, dilation=2)) == \
        ("ConvTranspose3d(4, 2, kernel_size=(3, 3, 3), stride=(2, 2, 2), dilation=(2, 2, 2), "
         "output_padding=(1, 1, 1))")
    layer = nn.ConvTranspose2d(4, 6, 3, groups=2)
    assert sorted(layer.state_dict()) == ["bias", "weight"]
    assert tuple(layer.weight.shape) == (4, 3, 3, 3)
    bound = 1 / np.sqrt(3 * 9)
    assert np.abs(layer.bias.detach().numpy()).max() <= bound


def test_conv_transpose_output_size_and_layer_gradients():
    up = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1).double()
    x = _t(RNG.normal(size=(1, 2, 4, 4)))
    assert tuple(up(x).shape) == (1, 3, 7, 7)
    assert tuple(up(x, output_size=[8, 8]).shape) == (1, 3, 8, 8)
    assert tuple(up(x, output_size=(1, 3, 8, 7)).shape) == (1, 3, 8, 7)
    with pytest.raises(ValueError, match="valid sizes range from 7 to 8"):
        up(x, output_size=(9, 9))
    conv = nn.Conv3d(2, 2, 2, stride=(1, 2, 1)).double()
    out = conv(_t(RNG.normal(size=(1, 2, 3, 4, 3))))
    out.sum().backward()
    assert conv.weight.grad is not None and tuple(conv.bias.grad.shape) == (2,)


def test_conv_layer_argument_errors():
    with pytest.raises(ValueError, match="groups must be a positive integer"):
        nn.Conv2d(2, 2, 3, groups=0)
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 2, 3, groups=2)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        nn.Conv2d(2, 3, 3, groups=2)
    with pytest.raises(ValueError, match="Invalid padding string 'full'"):
        nn.Conv1d(1, 1, 3, padding="full")
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        nn.Conv1d(1, 1, 3, padding="same", stride=2)
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv1d(1, 1, 3, padding_mode="wrap")
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose1d'):
        nn.ConvTranspose1d(1, 1, 3, padding_mode="reflect")


def test_pooling_and_padding_layers():
    x = _t(RNG.normal(size=(2, 3, 6, 6)))
    pool = nn.MaxPool2d(2, return_indices=True)
    out, idx = pool(x)
    np.testing.assert_array_equal(nn.MaxUnpool2d(2)(out, idx).numpy() != 0, F.max_unpool2d(out, idx, 2).numpy() != 0)
    np.testing.assert_array_equal(nn.AvgPool2d(3, 1, 1, count_include_pad=False)(x).numpy(),
                                  F.avg_pool2d(x, 3, 1, 1, count_include_pad=False).numpy())
    np.testing.assert_array_equal(nn.AdaptiveMaxPool2d((2, None))(x).numpy(), F.adaptive_max_pool2d(x, (2, 6)).numpy())
    np.testing.assert_array_equal(nn.LPPool2d(2, 3, stride=3)(x).numpy(), F.lp_pool2d(x, 2.0, 3, 3).numpy())
    np.testing.assert_array_equal(nn.ReflectionPad2d((1, 0, 2, 1))(x).numpy(),
                                  np.pad(x.numpy(), ((0, 0), (0, 0), (2, 1), (1, 0)), mode="reflect"))
    np.testing.assert_array_equal(nn.ConstantPad1d(2, -1.0)(x).numpy(),
                                  np.pad(x.numpy(), ((0, 0), (0, 0), (0, 0), (2, 2)), constant_values=-1.0))
    assert [repr(m) for m in (nn.MaxPool2d(2), nn.AvgPool1d(3), nn.AvgPool2d(2, 1), nn.AdaptiveAvgPool2d((5, None)),
                              nn.AdaptiveMaxPool1d(3), nn.LPPool2d(2, 3), nn.MaxUnpool2d(2), nn.ZeroPad2d(1),
                              nn.ConstantPad3d((1, 2, 0, 0, 1, 1), 3.5), nn.ReplicationPad1d((0, 2)),
                              nn.CircularPad2d(1))] == [
        "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)",
        "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))",
        "AvgPool2d(kernel_size=2, stride=1, padding=0)",
        "AdaptiveAvgPool2d(output_size=(5, None))",
        "AdaptiveMaxPool1d(output_size=3)",
        "LPPool2d(norm_type=2, kernel_size=3, stride=None, ceil_mode=False)",
        "MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))",
        "ZeroPad2d((1, 1, 1, 1))",
        "ConstantPad3d(padding=(1, 2, 0, 0, 1, 1), value=3.5)",
        "ReplicationPad1d((0, 2))",
        "CircularPad2d((1, 1, 1, 1))"]
    with pytest.raises(ValueError, match="ReflectionPad2d expects padding as an int or a tuple of 4 ints"):
        nn.ReflectionPad2d((1, 2))
