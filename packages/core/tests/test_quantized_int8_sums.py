"""The exact integer sums of the quantized linear and convolution (Note [int8 dot products] and
Note [int8 convolution] in native/): on a CPU with AVX-512 VNNI they come from uint8 x int8 dot
products; elsewhere, and on the AVX2 build (EMBER_CPU_CAPABILITY=avx2), from float GEMMs over the
centered integers (Note [integer GEMM through float BLAS]). Both must be exact: small operands whose
sums the requantization shows one for one are checked against NumPy's int64 sums, and a battery of
geometries must give the same bits on both paths. PyTorch's bits: test_quantized_torch_parity.py."""

import os
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.nn.functional as F

C = ember._C


def _has_vnni():
    try:
        with open("/proc/cpuinfo") as f:
            return "avx512_vnni" in f.read()
    except OSError:
        return False


def _weight(ints, zero_points=None):
    """qint8 weights with scale 1: per tensor (zero point 0), or per output channel with the given
    zero points."""
    t = ember.tensor(ints.astype(np.int8))
    if zero_points is None:
        return ember._make_per_tensor_quantized_tensor(t, 1.0, 0)
    n = ints.shape[0]
    return ember._make_per_channel_quantized_tensor(t, ember.ones(n, dtype=ember.float64),
                                                    ember.tensor(np.asarray(zero_points, np.int64)), 0)


def _input(ints, zero_point):
    return ember._make_per_tensor_quantized_tensor(ember.tensor(ints.astype(np.uint8)), 1.0, zero_point)


@pytest.mark.parametrize("k", [1, 7, 8, 37])
@pytest.mark.parametrize("weight_zero_points", [False, True])
def test_linear_sums_equal_numpy_int64(k, weight_zero_points):
    # scales 1 and output zero point 128: the output integers are 128 + the centered sums
    rng = np.random.default_rng(k)
    x_zp, n, m = 100, 19, 11
    x = rng.integers(x_zp - 1, x_zp + 2, size=(m, k))
    w = rng.integers(-2, 3, size=(n, k))
    w_zp = rng.integers(-1, 2, size=n) if weight_zero_points else np.zeros(n, np.int64)
    want = (x - x_zp) @ (w - w_zp[:, None]).T
    assert np.abs(want).max() < 128
    got = C._quantized_linear(_input(x, x_zp), _weight(w, w_zp if weight_zero_points else None), None, 1.0, 128)
    np.testing.assert_array_equal(got.int_repr().numpy().astype(np.int64), want + 128)


@pytest.mark.parametrize("case", [
    # (spatial, channels, outputs, kernel, stride, padding, dilation, groups)
    ((9, 8), 5, 19, (3, 3), (1, 1), (1, 1), (1, 1), 1),  # 5 channels: a partial quad
    ((10, 9), 6, 4, (3, 2), (2, 1), (2, 0), (1, 2), 2),
    ((13,), 4, 50, (5,), (3,), (2,), (1,), 1),  # 1-d, more outputs than one register block
    ((4, 5, 6), 3, 6, (2, 3, 3), (1, 2, 1), (1, 1, 0), (1, 1, 2), 3),  # 3-d, one channel per group
])
@pytest.mark.parametrize("weight_zero_points", [False, True])
def test_convolution_sums_equal_numpy_int64(case, weight_zero_points):
    spatial, c, o, k, s, p, d, g = case
    rng = np.random.default_rng(len(spatial) + c)
    x_zp = 90
    x = rng.integers(x_zp - 1, x_zp + 2, size=(2, c, *spatial))
    w = rng.integers(-1, 2, size=(o, c // g, *k))
    w_zp = rng.integers(-1, 2, size=o) if weight_zero_points else np.zeros(o, np.int64)
    # the reference: a float64 convolution of the centered integers (exact at these sizes)
    centered_w = (w - w_zp.reshape(-1, *[1] * (w.ndim - 1))).astype(np.float64)
    conv = getattr(F, f"conv{len(spatial)}d")
    want = conv(ember.tensor((x - x_zp).astype(np.float64)), ember.tensor(centered_w), None, s, p, d, g).numpy()
    want = np.rint(want).astype(np.int64)
    assert np.abs(want).max() < 128
    wq = _weight(w, w_zp if weight_zero_points else None)
    got = C._quantized_conv(_input(x, x_zp), wq, None, list(s), list(p), list(d), g, 1.0, 128, False)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.int_repr().numpy().astype(np.int64), want + 128)


def battery():
    """Results of the quantized linear, dynamic linear and convolution over many geometries, with
    realistic operands (full uint8 range, weights from float), as NumPy arrays by name."""
    rng = np.random.default_rng(5)
    out = {}
    for k in (3, 16, 45, 700):
        for per_channel in (False, True):
            xf = ember.tensor(rng.normal(size=(33, k)).astype(np.float32))
            wf = ember.tensor(rng.normal(size=(50, k)).astype(np.float32))
            b = ember.tensor(rng.normal(size=50).astype(np.float32))
            if per_channel:
                w = ember.quantize_per_channel(wf, ember.tensor(rng.uniform(0.01, 0.03, 50)),
                                               ember.tensor(rng.integers(-3, 4, 50)), 0, ember.qint8)
            else:
                w = ember.quantize_per_tensor(wf, 0.02, 0, ember.qint8)
            xq = ember.quantize_per_tensor(xf, 0.03, 110, ember.quint8)
            out[f"linear k{k} pc{per_channel}"] = C._quantized_linear(xq, w, b, 0.2, 70, False).int_repr().numpy()
            out[f"dynamic k{k} pc{per_channel}"] = C._quantized_linear_dynamic(xf, w, b, True).numpy()
    for spatial, c, o, kernel, s, p, d, g in [((20, 17), 16, 24, (3, 3), 1, 1, 1, 1),
                                             ((15, 16), 6, 9, (3, 3), 2, 1, 1, 3),
                                             ((31,), 5, 7, (4,), 1, 3, 2, 1),
                                             ((6, 7, 5), 8, 10, (3, 2, 3), 1, 1, 1, 2)]:
        x = ember.quantize_per_tensor(ember.tensor(rng.normal(size=(2, c, *spatial)).astype(np.float32)), 0.05,
                                      100, ember.quint8)
        wf = ember.tensor(rng.normal(size=(o, c // g, *kernel)).astype(np.float32))
        w = ember.quantize_per_channel(wf, ember.tensor(rng.uniform(0.01, 0.03, o)), ember.zeros(o, dtype=ember.int64),
                                       0, ember.qint8)
        b = ember.tensor(rng.normal(size=o).astype(np.float32))
        n = len(spatial)
        got = C._quantized_conv(x, w, b, [s] * n, [p] * n, [d] * n, g, 0.3, 60, False)
        out[f"conv {spatial} c{c} o{o} g{g}"] = got.int_repr().numpy()
    return out


def test_both_paths_give_the_same_bits(tmp_path):
    if not _has_vnni():
        pytest.skip("no AVX-512 VNNI here: the float path is the only one")
    here = battery()
    saved = tmp_path / "avx2.npz"
    code = (f"import sys; sys.path.insert(0, {os.path.dirname(__file__)!r})\n"
            "import numpy as np, ember, test_quantized_int8_sums as t\n"
            "assert ember._C._cpu_capability() == 'avx2'\n"
            f"np.savez({str(saved)!r}, **t.battery())\n")
    done = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, EMBER_CPU_CAPABILITY="avx2"),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    there = np.load(saved)
    assert sorted(there.files) == sorted(here)
    for name, value in here.items():
        np.testing.assert_array_equal(value, there[name], err_msg=name)
