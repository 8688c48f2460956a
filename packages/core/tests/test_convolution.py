"""The native convolution (aten::convolution, native/src/ops/convolution): regular and transposed,
1-d to 3-d, stride/padding/dilation/groups, against a float64 NumPy reference written as plain
loops; gradients by gradcheck in both modes and gradgradcheck (the composed formulas); the one-pass
backward equals the composed one; bad geometry raises PyTorch's errors."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(11)


def _t(a, grad=False):
    t = ember.from_numpy(np.ascontiguousarray(a))
    return t.requires_grad_() if grad else t


def conv_ref(x, w, b, stride, padding, dilation, groups):
    """Cross-correlation in float64, one output element at a time."""
    n = x.ndim - 2
    N, C = x.shape[:2]
    out_ch, Cg = w.shape[:2]
    k = w.shape[2:]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    out_size = [(xp.shape[2 + i] - dilation[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(n)]
    y = np.zeros((N, out_ch, *out_size))
    og = out_ch // groups
    for o in range(out_ch):
        g = o // og
        for pos in itertools.product(*[range(s) for s in out_size]):
            window = xp[(slice(None), slice(g * Cg, (g + 1) * Cg)) + tuple(
                slice(pos[i] * stride[i], pos[i] * stride[i] + dilation[i] * (k[i] - 1) + 1, dilation[i])
                for i in range(n))]
            y[(slice(None), o) + pos] = (window * w[o]).reshape(N, -1).sum(1)
    if b is not None:
        y += b.reshape((1, out_ch) + (1,) * n)
    return y


def conv_transpose_ref(x, w, b, stride, padding, output_padding, dilation, groups):
    """The adjoint: each input element scatters weight-scaled taps into the output."""
    n = x.ndim - 2
    N, C = x.shape[:2]
    cg, og = C // groups, w.shape[1]
    k = w.shape[2:]
    full = [(x.shape[2 + i] - 1) * stride[i] + dilation[i] * (k[i] - 1) + 1 + output_padding[i] for i in range(n)]
    y = np.zeros((N, og * groups, *full))
    for c in range(C):
        g = c // cg
        for pos in itertools.product(*[range(s) for s in x.shape[2:]]):
            for tap in itertools.product(*[range(s) for s in k]):
                at = tuple(pos[i] * stride[i] + tap[i] * dilation[i] for i in range(n))
                y[(slice(None), slice(g * og, (g + 1) * og)) + at] += x[(slice(None), c) + pos][:, None] * \
                    w[(c, slice(None)) + tap][None, :]
    crop = tuple(slice(padding[i], full[i] - padding[i]) for i in range(n))
    y = y[(slice(None), slice(None)) + crop]
    if b is not None:
        y += b.reshape((1, -1) + (1,) * n)
    return y


CASES = [  # (spatial, kernel, stride, padding, dilation, groups, C, O)
    ((9,), (3,), (1,), (1,), (1,), 1, 4, 6),
    ((11,), (4,), (2,), (2,), (2,), 2, 4, 6),
    ((7, 8), (3, 3), (1, 1), (1, 1), (1, 1), 1, 3, 5),
    ((9, 7), (3, 2), (2, 1), (1, 0), (1, 2), 1, 2, 4),
    ((8, 8), (1, 1), (1, 1), (0, 0), (1, 1), 1, 6, 3),
    ((8, 9), (1, 1), (2, 2), (0, 0), (1, 1), 3, 6, 3),
    ((6, 6), (3, 3), (1, 1), (1, 1), (1, 1), 4, 4, 4),  # depthwise
    ((5, 6, 4), (2, 3, 2), (1, 2, 1), (1, 1, 0), (1, 1, 2), 1, 2, 3),
    # horizontal strides whose taps overlap: the columns come from split phases (Note [column phases])
    ((16, 18), (7, 7), (2, 2), (3, 3), (1, 1), 1, 3, 4),
    ((9, 20), (5, 5), (1, 3), (2, 1), (1, 2), 2, 4, 6),
    ((30,), (7,), (2,), (3,), (1,), 1, 2, 3),
    ((4, 6, 14), (2, 3, 5), (1, 1, 2), (0, 1, 2), (1, 1, 1), 1, 2, 3),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{len(c[0])}d-k{c[1]}-s{c[2]}-g{c[5]}")
def test_convolution_matches_reference(case):
    spatial, k, s, p, d, g, C, out_ch = case
    x = RNG.standard_normal((2, C, *spatial))
    w = RNG.standard_normal((out_ch, C // g, *k))
    b = RNG.standard_normal(out_ch)
    want = conv_ref(x, w, b, s, p, d, g)
    got = ember.convolution(_t(x), _t(w), _t(b), list(s), list(p), list(d), False, [0] * len(s), g)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-11, atol=1e-11)
    f = getattr(F, f"conv{len(s)}d")
    got32 = f(_t(x.astype(np.float32)), _t(w.astype(np.float32)), _t(b.astype(np.float32)), s, p, d, g)
    np.testing.assert_allclose(got32.numpy(), want, rtol=1e-4, atol=1e-4)
    # a strided (channel-sliced) input and weight
    xs = _t(np.repeat(x, 2, axis=1))[:, ::2]
    assert not xs.is_contiguous()
    np.testing.assert_allclose(f(xs, _t(w), None, s, p, d, g).numpy(), conv_ref(x, w, None, s, p, d, g),
                               rtol=1e-11, atol=1e-11)


DEPTHWISE = [  # one input and one output channel per group (Note [depthwise convolution])
    ((7, 7), (5, 5), (1, 1), (2, 2), (1, 1), 6, 6, 6),
    ((9, 8), (3, 3), (2, 2), (1, 1), (1, 1), 5, 5, 5),
    ((10, 9), (3, 2), (2, 3), (3, 0), (2, 1), 3, 3, 3),  # dilation; padding past the kernel's reach
    ((13,), (4,), (3,), (2,), (1,), 4, 4, 4),
    ((4, 5, 6), (2, 3, 3), (1, 2, 1), (1, 1, 1), (1, 1, 2), 2, 2, 2),
    ((3, 3), (3, 3), (1, 1), (0, 0), (1, 1), 4, 4, 4),  # one output position
    # more channels than a vector's lanes (a partial last block), rows of 21 (8 + 8 + 4 + 1 positions)
    ((12, 21), (3, 3), (1, 1), (1, 1), (1, 1), 19, 19, 19),
    ((15, 30), (5, 5), (2, 2), (2, 2), (1, 2), 17, 17, 17),  # stride, dilation and padding together
    ((60, 70), (3, 3), (1, 1), (1, 1), (1, 1), 9, 9, 9),  # tall enough for several input tiles
    # wider rows: stride 2 with dilation, 37 positions (4 x 8 + 5), and 1-d
    ((20, 50), (3, 3), (2, 2), (1, 1), (2, 2), 3, 3, 3),
    ((5, 39), (3, 3), (1, 1), (0, 0), (1, 1), 2, 2, 2),
    ((100,), (5,), (2,), (2,), (1,), 3, 3, 3),
]


@pytest.mark.parametrize("case", DEPTHWISE, ids=lambda c: f"{len(c[0])}d-k{c[1]}-s{c[2]}-p{c[3]}-d{c[4]}")
def test_depthwise_convolution_matches_reference(case):
    spatial, k, s, p, d, g, C, out_ch = case
    x = RNG.standard_normal((3, C, *spatial))
    w = RNG.standard_normal((out_ch, 1, *k))
    b = RNG.standard_normal(out_ch)
    f = getattr(F, f"conv{len(s)}d")
    for bias in (b, None):
        want = conv_ref(x, w, bias, s, p, d, g)
        got = f(_t(x), _t(w), None if bias is None else _t(bias), s, p, d, g)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    got32 = f(_t(x.astype(np.float32)), _t(w.astype(np.float32)), _t(b.astype(np.float32)), s, p, d, g)
    np.testing.assert_allclose(got32.numpy(), conv_ref(x, w, b, s, p, d, g), rtol=1e-5, atol=1e-5)
    xs = _t(np.repeat(x, 2, axis=1))[:, ::2]  # a channel-strided input
    np.testing.assert_allclose(f(xs, _t(w), None, s, p, d, g).numpy(), conv_ref(x, w, None, s, p, d, g),
                               rtol=1e-12, atol=1e-12)
    assert f(_t(x[:0]), _t(w), None, s, p, d, g).shape[0] == 0  # an empty batch


@pytest.mark.parametrize("case", CASES[:4] + CASES[6:], ids=lambda c: f"{len(c[0])}d-k{c[1]}-s{c[2]}-g{c[5]}")
def test_transposed_convolution_matches_reference(case):
    spatial, k, s, p, d, g, C, out_ch = case
    op = [min(si, di) - 1 for si, di in zip(s, d, strict=True)]
    x = RNG.standard_normal((2, C, *spatial))
    w = RNG.standard_normal((C, out_ch // g, *k))
    b = RNG.standard_normal(out_ch // g * g)
    want = conv_transpose_ref(x, w, b, s, p, op, d, g)
    got = ember.convolution(_t(x), _t(w), _t(b), list(s), list(p), list(d), True, op, g)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-11, atol=1e-11)
    f = getattr(F, f"conv_transpose{len(s)}d")
    np.testing.assert_allclose(f(_t(x), _t(w), _t(b), s, p, op, g, d).numpy(), want, rtol=1e-11, atol=1e-11)


def test_convolution_zero_size_and_reduced_precision():
    w = _t(RNG.standard_normal((4, 3, 3, 3)))
    out = F.conv2d(ember.zeros(0, 3, 8, 8, dtype=ember.float64), w, padding=1)
    assert out.shape == (0, 4, 8, 8)
    x = RNG.standard_normal((1, 3, 6, 6)).astype(np.float32)
    for dtype in (ember.float16, ember.bfloat16):
        got = F.conv2d(_t(x).to(dtype), _t(np.asarray(w.numpy(), np.float32)).to(dtype), padding=1)
        assert got.dtype == dtype
        want = conv_ref(x.astype(np.float64), w.numpy(), None, (1, 1), (1, 1), (1, 1), 1)
        np.testing.assert_allclose(got.to(ember.float32).numpy(), want, rtol=5e-2, atol=1e-1)
    # unbatched input, 'same' padding with an even kernel (the extra column goes right)
    x1 = RNG.standard_normal((3, 7, 7))
    w2 = RNG.standard_normal((2, 3, 2, 2))
    got = F.conv2d(_t(x1), _t(w2), padding="same")
    want = conv_ref(np.pad(x1[None], [(0, 0), (0, 0), (0, 1), (0, 1)]), w2, None, (1, 1), (0, 0), (1, 1), 1)[0]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("groups,stride,dilation", [(1, 1, 1), (2, 2, 1), (1, 2, 2)])
def test_convolution_gradients(transposed, groups, stride, dilation):
    x = _t(RNG.standard_normal((2, 4, 5, 4)), True)
    wshape = (4, 2 // groups * groups // groups, 3, 2) if transposed else (2 * groups, 4 // groups, 3, 2)
    w = _t(RNG.standard_normal(wshape), True)
    out_channels = wshape[1] * groups if transposed else wshape[0]
    b = _t(RNG.standard_normal(out_channels), True)
    op = [stride - 1, 0] if transposed and stride > 1 else [0, 0]

    def f(a, ww, bb):
        return ember.convolution(a, ww, bb, [stride, 1], [1, 0], [dilation, 1], transposed, op, groups)

    assert gradcheck(f, (x, w, b), check_forward_ad=True)
    assert gradgradcheck(f, (x, w, b))
    g = _t(RNG.standard_normal(tuple(f(x, w, b).shape)))
    fused = ember.autograd.grad(f(x, w, b), (x, w, b), g)
    composed = ember.autograd.grad(f(x, w, b), (x, w, b), g, create_graph=True)
    for a, c in zip(fused, composed, strict=True):
        np.testing.assert_allclose(a.numpy(), c.detach().numpy(), rtol=1e-10, atol=1e-11)


def test_conv1d_and_conv3d_gradients():
    x1, w1 = _t(RNG.standard_normal((2, 2, 7)), True), _t(RNG.standard_normal((3, 2, 3)), True)
    assert gradcheck(lambda a, b: F.conv1d(a, b, stride=2, padding=1), (x1, w1), check_forward_ad=True)
    x3, w3 = _t(RNG.standard_normal((1, 2, 3, 4, 3)), True), _t(RNG.standard_normal((2, 1, 2, 2, 2)), True)
    assert gradcheck(lambda a, b: F.conv3d(a, b, padding=1, groups=2), (x3, w3), check_forward_ad=True)


def test_strided_stem_over_several_column_blocks_and_its_weight_gradient():
    # A 7x7 stride-2 stem on 256x256: 147 column rows, so each image's 16384 output positions span
    # several column blocks, all cut from one split of the image into column phases.
    x, w = RNG.standard_normal((2, 3, 256, 256)), RNG.standard_normal((5, 3, 7, 7))
    gy = RNG.standard_normal((2, 5, 128, 128))
    windows = np.lib.stride_tricks.sliding_window_view(np.pad(x, [(0, 0), (0, 0), (3, 3), (3, 3)]), (7, 7),
                                                       axis=(2, 3))[:, :, ::2, ::2]
    want_y = np.einsum("ncijhw,ochw->noij", windows, w)
    want_gw = np.einsum("noij,ncijhw->ochw", gy, windows)
    for dtype, tol in ((np.float64, 1e-10), (np.float32, 2e-3)):
        xe, we = _t(x.astype(dtype), True), _t(w.astype(dtype), True)
        y = F.conv2d(xe, we, stride=2, padding=3)
        np.testing.assert_allclose(y.detach().numpy(), want_y, rtol=tol, atol=tol)
        y.backward(_t(gy.astype(dtype)))
        np.testing.assert_allclose(we.grad.numpy(), want_gw, rtol=tol, atol=tol * 10)


SHIFTED = [  # (spatial, kernel, padding, dilation, groups, C, O): unit stride, 32+ channels per group
    ((40, 60), (3, 3), (1, 1), (1, 1), 1, 32, 5),  # several blocks of positions
    ((36, 50), (3, 3), (2, 2), (2, 2), 2, 64, 6),  # dilation, two groups
    ((30, 70), (3, 5), (0, 0), (1, 1), 1, 33, 4),  # no padding: the padded copy is the image
    ((300,), (5,), (2,), (1,), 1, 32, 3),
    ((4, 30, 30), (2, 3, 3), (0, 1, 1), (1, 1, 1), 1, 32, 3),
    # float32 takes Note [direct shifted taps] also for 16 channels and 14x14 images; 20 and 9
    # outputs leave the last register block of output channels partial at every vector width
    ((14, 14), (3, 3), (1, 1), (1, 1), 1, 16, 20),
    ((28, 28), (3, 3), (1, 1), (1, 1), 4, 64, 36),
]


def check_against_windowed_reference(x, w, b, stride, padding, dilation, groups):
    """The convolution against float64 einsum over its windows: with bias, on a channel-strided
    input, in float32 at one and two threads (the same bits), and on an empty batch. Returns the
    reference."""
    n, C, out_ch = x.ndim - 2, x.shape[1], w.shape[0]
    k = w.shape[2:]
    reach = tuple(dilation[i] * (k[i] - 1) + 1 for i in range(n))
    xp = np.pad(x, [(0, 0), (0, 0)] + [(q, q) for q in padding])
    windows = np.lib.stride_tricks.sliding_window_view(xp, reach, axis=tuple(range(2, 2 + n)))
    windows = windows[(slice(None), slice(None)) + tuple(slice(None, None, si) for si in stride)
                      + tuple(slice(None, None, di) for di in dilation)]  # [N, C, *out, *k]
    letters = "uvw"[:n], "hij"[:n]
    want = np.concatenate([
        np.einsum(f"nc{letters[0]}{letters[1]},oc{letters[1]}->no{letters[0]}",
                  windows[:, gi * (C // groups):(gi + 1) * (C // groups)],
                  w[gi * (out_ch // groups):(gi + 1) * (out_ch // groups)])
        for gi in range(groups)], axis=1) + b.reshape((1, out_ch) + (1,) * n)
    f = getattr(F, f"conv{n}d")
    args = (stride, padding, dilation, groups)
    np.testing.assert_allclose(f(_t(x), _t(w), _t(b), *args).numpy(), want, rtol=1e-11, atol=1e-11)
    xs = _t(np.repeat(x, 2, axis=1))[:, ::2]
    np.testing.assert_allclose(f(xs, _t(w), None, *args).numpy(), want - b.reshape((1, out_ch) + (1,) * n),
                               rtol=1e-11, atol=1e-11)
    before = ember.get_num_threads()
    try:
        results = []
        for threads in (1, 2):
            ember.set_num_threads(threads)
            results.append(f(_t(x.astype(np.float32)), _t(w.astype(np.float32)), _t(b.astype(np.float32)),
                             *args).numpy())
    finally:
        ember.set_num_threads(before)
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_allclose(results[0], want, rtol=1e-3, atol=1e-3)
    assert f(_t(x[:0]), _t(w), _t(b), *args).shape == (0, out_ch, *want.shape[2:])  # an empty batch
    return want


@pytest.mark.parametrize("case", SHIFTED, ids=lambda c: f"{len(c[0])}d-k{c[1]}-p{c[2]}-d{c[3]}-g{c[4]}")
def test_shifted_taps_match_reference(case):
    # Note [shifted taps]: one GEMM per tap out of a padded copy of the image, positions past each
    # output row computed and dropped.
    spatial, k, p, d, g, C, out_ch = case
    x, w = RNG.standard_normal((3, C, *spatial)), RNG.standard_normal((out_ch, C // g, *k))
    check_against_windowed_reference(x, w, RNG.standard_normal(out_ch), (1,) * len(spatial), p, d, g)


def test_avx2_build_of_the_direct_shifted_taps_matches_reference():
    # Note [direct shifted taps] has a register block of its own per vector width; on an AVX-512
    # machine the AVX2 build runs only when asked for.
    if ember._C._cpu_capability() != "avx512":
        pytest.skip("the tests above already ran this machine's build")
    code = (f"import sys; sys.path.insert(0, {os.path.dirname(__file__)!r})\n"
            "import ember, test_convolution as t\n"
            "assert ember._C._cpu_capability() == 'avx2'\n"
            "for case in t.SHIFTED:\n"
            "    t.test_shifted_taps_match_reference(case)\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, EMBER_CPU_CAPABILITY="avx2"),
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("ok")


DIRECT = [  # (spatial, kernel, stride, padding, groups, C, O): few input channels per group, 8+ outputs
    ((40, 90), (7, 7), (2, 2), (3, 3), 1, 3, 10),  # an RGB stem; 10 outputs: a partial register block
    ((33, 70), (3, 3), (2, 2), (1, 1), 1, 3, 16),
    ((24, 50), (3, 3), (1, 1), (1, 1), 2, 8, 18),  # two groups of 4 channels, unit stride
    ((20, 75), (5, 3), (3, 2), (2, 0), 1, 2, 9),  # different strides, no horizontal padding
    ((17, 110), (4, 4), (1, 3), (0, 2), 1, 1, 8),  # stride 3 with padding 2: phases start mid-way
    ((150, 70), (7, 7), (2, 2), (3, 3), 1, 3, 8),  # 75 output rows: several bands, the last partial
    ((1000,), (10,), (5,), (0,), 1, 1, 12),  # 1-d, as a waveform's first layer
]


@pytest.mark.parametrize("case", DIRECT, ids=lambda c: f"{len(c[0])}d-k{c[1]}-s{c[2]}-p{c[3]}-g{c[4]}")
def test_few_channel_direct_convolution_matches_reference(case):
    # Note [few-channel direct convolution]: a padded, phase-split copy of each band of rows and
    # register blocks of output channels x output columns, including the partial last vector of
    # each row; the bias is added into the output.
    spatial, k, st, p, g, C, out_ch = case
    x, w = RNG.standard_normal((3, C, *spatial)), RNG.standard_normal((out_ch, C // g, *k))
    want = check_against_windowed_reference(x, w, RNG.standard_normal(out_ch), st, p, (1,) * len(spatial), g)
    assert want.shape[-1] >= 33  # wide enough for the direct path at every vector width


def test_few_channel_direct_convolution_gradients():
    # The forward of a direct-path convolution (3 channels, 8 outputs, 35 output columns) under
    # gradcheck; the backward is the GEMM one.
    x, w = _t(RNG.standard_normal((1, 3, 5, 70)), True), _t(RNG.standard_normal((8, 3, 3, 3)), True)
    b = _t(RNG.standard_normal(8), True)
    assert gradcheck(lambda a, c, d: F.conv2d(a, c, d, stride=2, padding=1), (x, w, b), check_forward_ad=True)


@pytest.mark.parametrize("channels_last", [False, True])
def test_whole_image_tasks_give_the_same_bits_at_any_thread_count(channels_last):
    # Note [whole-image tasks]: with at least two images per thread a task computes all of an image's
    # column blocks (one split into column phases), with fewer each block is its own task. Six
    # images of a multi-block 7x7 stride-2 stem, at one and two threads: the same bits, and the
    # float64 result.
    x, w = RNG.standard_normal((6, 3, 160, 160)), RNG.standard_normal((4, 3, 7, 7))
    windows = np.lib.stride_tricks.sliding_window_view(np.pad(x, [(0, 0), (0, 0), (3, 3), (3, 3)]), (7, 7),
                                                       axis=(2, 3))[:, :, ::2, ::2]
    want = np.einsum("ncijhw,ochw->noij", windows, w)
    xe, we = _t(x.astype(np.float32)), _t(w.astype(np.float32))
    if channels_last:
        xe = xe.contiguous(memory_format=ember.channels_last)
    before = ember.get_num_threads()
    try:
        results = []
        for threads in (1, 2):
            ember.set_num_threads(threads)
            results.append(F.conv2d(xe, we, stride=2, padding=3).contiguous().numpy())
    finally:
        ember.set_num_threads(before)
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_allclose(results[1], want, rtol=2e-3, atol=2e-3)


def test_conv_layers_train():
    ember.manual_seed(0)
    net = ember.nn.Sequential(ember.nn.Conv2d(1, 4, 3, padding=1), ember.nn.ReLU(), ember.nn.Conv2d(4, 1, 3, padding=1))
    x = ember.randn(8, 1, 6, 6)
    target = x * 0.5
    opt = ember.optim.Adam(net.parameters(), lr=0.01)
    first = None
    for _ in range(60):
        opt.zero_grad()
        loss = ((net(x) - target) ** 2).mean()
        loss.backward()
        opt.step()
        first = first if first is not None else loss.item()
    assert loss.item() < 0.2 * first


def test_convolution_rejects_bad_geometry():
    x, w = ember.ones(1, 3, 5, 5), ember.ones(4, 3, 3, 3)
    with pytest.raises(RuntimeError, match="non-positive stride is not supported"):
        F.conv2d(x, w, stride=0)
    with pytest.raises(RuntimeError, match="negative padding is not supported"):
        ember.convolution(x, w, None, [1], [-1], [1], False, [0], 1)
    with pytest.raises(RuntimeError, match="dilation should be greater than zero"):
        F.conv2d(x, w, dilation=0)
    with pytest.raises(RuntimeError, match=r"expected input\[1, 2, 5, 5\] to have 3 channels, but got 2 channels"):
        F.conv2d(ember.ones(1, 2, 5, 5), w)
    with pytest.raises(RuntimeError, match=r"Kernel size: \(3 x 3\). Kernel size can't be greater than actual input"):
        F.conv2d(ember.ones(1, 3, 2, 2), w)
    with pytest.raises(RuntimeError, match="output padding must be smaller than either stride or dilation"):
        ember.convolution(x, ember.ones(3, 2, 3, 3), None, [1], [0], [1], True, [1], 1)
    with pytest.raises(RuntimeError, match="expected bias to be 1-dimensional with 4 elements"):
        F.conv2d(x, w, ember.ones(3))
    with pytest.raises(RuntimeError, match=r"Input type \(float64\) and weight type \(float32\) should be the same"):
        F.conv2d(x.double(), w)
    with pytest.raises(NotImplementedError, match="not implemented for 'int64'"):
        F.conv2d(x.long(), w.long())
