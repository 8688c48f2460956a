"""ember.autocast on CPU (issue 18, item 3): the per-op policies declared in declarations.py
(lower precision, float32, promote), gradients back to float32 leaves, nesting, the decorator,
the weight-cast cache, thread locality, GradScaler and a training step, and the API's warnings
and errors. References are float64 NumPy computed on the inputs rounded to the autocast dtype."""

import threading

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn

BF16_TOL = {"rtol": 2e-2, "atol": 2e-2}


def _np(t):
    return t.detach().to(ember.float32).numpy().astype(np.float64)


def _rounded(t, dtype):
    """t's values as the autocast dtype holds them, in float64."""
    return _np(t.detach().to(dtype))


def _to_dtype_count(fn):
    with ember.profiler.profile() as prof:
        fn()
    return [e.name for e in prof.events()].count("to_dtype")


@pytest.fixture(autouse=True)
def _no_leftover_state():
    yield
    assert not ember.is_autocast_cpu_enabled()
    assert ember._C._autocast_cache_size() == 0


# ---- lower-precision ops -------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [ember.bfloat16, ember.float16])
def test_lower_precision_ops_run_in_the_autocast_dtype(dtype):
    ember.manual_seed(0)
    x, w, b = ember.randn(3, 4), ember.randn(5, 4), ember.randn(5)
    a3, b3 = ember.randn(2, 3, 4), ember.randn(2, 4, 5)
    img, k = ember.randn(1, 2, 6, 6), ember.randn(3, 2, 3, 3)
    sig, k1 = ember.randn(1, 2, 8), ember.randn(3, 2, 3)
    calls = {
        "mm": lambda: ember.mm(x, w.t()),
        "matmul": lambda: x @ w.t(),
        "bmm": lambda: ember.bmm(a3, b3),
        "addmm": lambda: ember.addmm(b, x, w.t()),
        "baddbmm": lambda: ember.baddbmm(ember.zeros(2, 3, 5), a3, b3),
        "addbmm": lambda: ember.addbmm(ember.zeros(3, 5), a3, b3),
        "linear": lambda: F.linear(x, w, b),
        "conv1d": lambda: F.conv1d(sig, k1, padding=1),
        "conv2d": lambda: F.conv2d(img, k),
        "conv_transpose2d": lambda: F.conv_transpose2d(img, k.transpose(0, 1)),
        "vecdot": lambda: ember.linalg.vecdot(x, x),
        "sdpa": lambda: F.scaled_dot_product_attention(a3, a3, a3),
        "prelu": lambda: F.prelu(x, ember.tensor([0.25])),
    }
    with ember.autocast("cpu", dtype=dtype):
        assert ember.is_autocast_cpu_enabled() and ember.get_autocast_cpu_dtype() == dtype
        inside = {name: fn() for name, fn in calls.items()}
    outside = {name: fn() for name, fn in calls.items()}
    for name in calls:
        assert inside[name].dtype == dtype, name
        assert outside[name].dtype == ember.float32, name


def test_matmul_linear_conv_match_a_reference_on_rounded_inputs():
    ember.manual_seed(1)
    bf = ember.bfloat16
    x, w, b = ember.randn(6, 4), ember.randn(5, 4), ember.randn(5)
    xt = ember.randn(4, 6).t()  # non-contiguous
    batched = ember.randn(2, 3, 4)  # broadcast against w.t()
    sig, k1 = ember.randn(2, 2, 7), ember.randn(3, 2, 3)
    with ember.autocast("cpu"):
        lin = F.linear(x, w, b)
        lin_nc = F.linear(xt, w, b)
        mat = ember.matmul(batched, w.t())
        empty = ember.mm(ember.randn(0, 4), w.t())
        conv = F.conv1d(sig, k1)
    ref_lin = _rounded(x, bf) @ _rounded(w, bf).T + _rounded(b, bf)
    np.testing.assert_allclose(_np(lin), ref_lin, **BF16_TOL)
    np.testing.assert_allclose(_np(lin_nc), _rounded(xt, bf) @ _rounded(w, bf).T + _rounded(b, bf), **BF16_TOL)
    np.testing.assert_allclose(_np(mat), _rounded(batched, bf) @ _rounded(w, bf).T, **BF16_TOL)
    assert empty.shape == (0, 5) and empty.dtype == bf
    s, k = _rounded(sig, bf), _rounded(k1, bf)
    ref_conv = np.stack([[sum(np.correlate(s[n, c], k[o, c], mode="valid") for c in range(2)) for o in range(3)]
                         for n in range(2)])
    np.testing.assert_allclose(_np(conv), ref_conv, **BF16_TOL)


def test_float64_and_integer_inputs_are_never_cast():
    a = ember.randn(3, 3, dtype=ember.float64)
    i = ember.arange(9).reshape(3, 3)
    with ember.autocast("cpu"):
        assert ember.mm(a, a).dtype == ember.float64
        assert ember.mm(i, i).dtype == ember.int64
        # ops without a policy keep their inputs' dtypes
        assert ember.relu(ember.randn(3)).dtype == ember.float32
        assert ember.relu(ember.randn(3).to(ember.bfloat16)).dtype == ember.bfloat16


def test_mixed_input_dtypes_are_unified():
    x = ember.randn(3, 4).to(ember.bfloat16)
    w = ember.randn(4, 2)
    with ember.autocast("cpu"):
        out = ember.mm(x, w)
    assert out.dtype == ember.bfloat16
    np.testing.assert_allclose(_np(out), _np(x) @ _rounded(w, ember.bfloat16), **BF16_TOL)


def test_out_argument_is_not_cast():
    x, w = ember.randn(3, 4), ember.randn(4, 2)
    out = ember.empty(3, 2)
    with ember.autocast("cpu"):
        ember.mm(x, w, out=out)
    assert out.dtype == ember.float32
    np.testing.assert_allclose(_np(out), _np(x) @ _np(w), rtol=1e-5, atol=1e-5)


def test_registry_calls_are_cast_too():
    x, w = ember.randn(3, 4), ember.randn(4, 2)
    with ember.autocast("cpu"):
        assert ember.ops.aten.mm(x, w).dtype == ember.bfloat16
    assert ember.ops.aten.mm(x, w).dtype == ember.float32


def test_composites_are_not_cast_twice():
    x, w, b = ember.randn(3, 4), ember.randn(5, 4), ember.randn(5)
    with ember.autocast("cpu", cache_enabled=False):
        # F.linear casts its three inputs once; the matmul and add inside it cast nothing more
        assert _to_dtype_count(lambda: F.linear(x, w, b)) == 3
        # already bfloat16: nothing to cast
        xb = x.to(ember.bfloat16)
        assert _to_dtype_count(lambda: ember.mm(xb, xb.t())) == 0


# ---- float32 ops ---------------------------------------------------------------------------------

def test_fp32_ops_take_lower_precision_inputs_and_compute_in_float32():
    ember.manual_seed(2)
    bf = ember.bfloat16
    a = (ember.rand(3, 3) + 0.5).to(bf)
    target_f = ember.randn(3, 3).to(bf)
    logits = ember.randn(4, 5).to(bf)
    labels = ember.tensor([0, 3, 1, 4])
    spd = ember.randn(3, 3)
    spd = (spd @ spd.t() + 3 * ember.eye(3)).to(bf)
    with ember.autocast("cpu"):
        results = {
            "prod": ember.prod(a),
            "trace": ember.trace(a),
            "mse_loss": F.mse_loss(a, target_f),
            "l1_loss": F.l1_loss(a, target_f),
            "cross_entropy": F.cross_entropy(logits, labels),
            "nll_loss": F.nll_loss(logits, labels),
            "inv": ember.linalg.inv(spd),
            "cholesky": ember.linalg.cholesky(spd),
            "cdist": F.cdist(a, target_f),
        }
    for name, r in results.items():
        assert r.dtype == ember.float32, name
    av, tv, lv, sv = _np(a), _np(target_f), _np(logits), _np(spd)
    tol = {"rtol": 1e-5, "atol": 1e-5}
    np.testing.assert_allclose(_np(results["prod"]), np.prod(av), **tol)
    np.testing.assert_allclose(_np(results["trace"]), np.trace(av), **tol)
    np.testing.assert_allclose(_np(results["mse_loss"]), np.mean((av - tv) ** 2), **tol)
    np.testing.assert_allclose(_np(results["l1_loss"]), np.mean(np.abs(av - tv)), **tol)
    logp = lv - np.log(np.exp(lv).sum(1, keepdims=True))
    np.testing.assert_allclose(_np(results["cross_entropy"]), -logp[np.arange(4), [0, 3, 1, 4]].mean(), **tol)
    np.testing.assert_allclose(_np(results["nll_loss"]), -lv[np.arange(4), [0, 3, 1, 4]].mean(), **tol)
    np.testing.assert_allclose(_np(results["inv"]), np.linalg.inv(sv), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_np(results["cholesky"]), np.linalg.cholesky(sv), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_np(results["cdist"]),
                               np.sqrt(((av[:, None, :] - tv[None, :, :]) ** 2).sum(-1)), rtol=1e-4, atol=1e-5)


def test_ffts_and_stft_run_in_float32():
    ember.manual_seed(6)
    sig = ember.randn(2, 16).to(ember.bfloat16)
    window = ember.hann_window(8)
    with ember.autocast("cpu"):
        spectrum = ember.fft.rfft(sig)
        full = ember.fft.fft2(sig)
        spec = ember.stft(sig[0], 8, hop_length=4, window=window, return_complex=True)
        out = ember.zeros(2, 9, dtype=ember.complex64)
        ember.fft.rfft(sig.float(), out=out)  # out=: not cast, written in place
    assert spectrum.dtype == full.dtype == spec.dtype == ember.complex64
    s = _np(sig)
    np.testing.assert_allclose(spectrum.numpy(), np.fft.rfft(s), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(full.numpy(), np.fft.fft2(s), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out.numpy(), np.fft.rfft(s), rtol=1e-5, atol=1e-5)
    padded = np.pad(s[0], 4, mode="reflect")
    frames = np.stack([padded[i:i + 8] * window.numpy() for i in range(0, len(padded) - 7, 4)], axis=1)
    np.testing.assert_allclose(spec.numpy(), np.fft.rfft(frames, axis=0), rtol=1e-5, atol=1e-5)


def test_reflection_and_replication_pads_run_in_float32():
    x = ember.randn(1, 2, 5).to(ember.bfloat16)
    with ember.autocast("cpu"):
        reflected = F.pad(x, (2, 1), mode="reflect")
        replicated = F.pad(x, (1, 2), mode="replicate")
        constant = F.pad(x, (1, 1))
    assert reflected.dtype == replicated.dtype == ember.float32
    assert constant.dtype == ember.bfloat16
    np.testing.assert_array_equal(_np(reflected), np.pad(_np(x), ((0, 0), (0, 0), (2, 1)), mode="reflect"))
    np.testing.assert_array_equal(_np(replicated), np.pad(_np(x), ((0, 0), (0, 0), (1, 2)), mode="edge"))


def test_fp32_op_on_zero_size_and_0dim_inputs():
    with ember.autocast("cpu"):
        empty = ember.prod(ember.ones(0).to(ember.bfloat16))
        scalar = ember.prod(ember.tensor(3.0).to(ember.bfloat16))
    assert empty.dtype == scalar.dtype == ember.float32
    assert empty.item() == 1.0 and scalar.item() == 3.0


# ---- promote ops ---------------------------------------------------------------------------------

def test_promote_ops_use_the_widest_input_dtype():
    lo, hi = ember.randn(2, 3).to(ember.bfloat16), ember.randn(2, 3)
    with ember.autocast("cpu"):
        assert ember.cat([lo, hi]).dtype == ember.float32
        assert ember.stack([lo, hi]).dtype == ember.float32
        assert ember.cat([lo, lo]).dtype == ember.bfloat16
        copied = ember.index_copy(lo, 0, ember.tensor([1, 0]), hi)
        joined = ember.cat([lo, hi])
    assert copied.dtype == ember.float32
    np.testing.assert_allclose(_np(copied), _np(hi)[[1, 0]], rtol=0, atol=0)
    np.testing.assert_allclose(_np(joined), np.concatenate([_np(lo), _np(hi)]), rtol=0, atol=0)


# ---- autograd ------------------------------------------------------------------------------------

def test_gradients_reach_float32_leaves_as_float32():
    ember.manual_seed(3)
    x = ember.randn(6, 4)
    w = ember.randn(5, 4, requires_grad=True)
    b = ember.randn(5, requires_grad=True)
    with ember.autocast("cpu"):
        y = F.linear(x, w, b)
        assert y.dtype == ember.bfloat16 and y.requires_grad
    (y.float() * 2).sum().backward()
    assert w.grad.dtype == ember.float32 and b.grad.dtype == ember.float32
    # d/dw sum(2 * (x w^T + b)) = 2 * column sums of x (as rounded), d/db = 2 * rows
    np.testing.assert_allclose(_np(w.grad), np.tile(2 * _rounded(x, ember.bfloat16).sum(0), (5, 1)), **BF16_TOL)
    np.testing.assert_allclose(_np(b.grad), np.full(5, 12.0), **BF16_TOL)


def test_float64_gradcheck_passes_under_autocast():
    a = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    b = ember.randn(4, 2, dtype=ember.float64, requires_grad=True)
    with ember.autocast("cpu"):
        assert ember.autograd.gradcheck(ember.mm, (a, b))


# ---- regions -------------------------------------------------------------------------------------

def test_nesting_and_inner_disabled_region():
    x = ember.randn(2, 2)
    assert not ember.is_autocast_cpu_enabled()
    with ember.autocast("cpu"):
        assert ember.mm(x, x).dtype == ember.bfloat16
        with ember.autocast("cpu", enabled=False):
            assert not ember.is_autocast_cpu_enabled()
            assert ember.mm(x, x).dtype == ember.float32
        assert ember.mm(x, x).dtype == ember.bfloat16
        with ember.autocast("cpu", dtype=ember.float16):
            assert ember.mm(x, x).dtype == ember.float16
        assert ember.get_autocast_cpu_dtype() == ember.bfloat16
        # the counter: this region is depth 1
        assert ember.autocast_increment_nesting() == 2
        assert ember.autocast_decrement_nesting() == 1
    assert ember.mm(x, x).dtype == ember.float32
    with pytest.raises(RuntimeError, match="nesting depth is 0"):
        ember.autocast_decrement_nesting()


def test_decorator_form():
    @ember.autocast("cpu")
    def forward(a, b):
        assert ember.is_autocast_cpu_enabled()
        return a @ b

    x = ember.randn(2, 3)
    assert forward(x, x.t()).dtype == ember.bfloat16
    assert not ember.is_autocast_cpu_enabled()
    assert (x @ x.t()).dtype == ember.float32


def test_state_functions_and_aliases():
    assert ember.amp.autocast is ember.autocast
    assert issubclass(ember.cpu.amp.autocast, ember.autocast)
    assert ember.get_autocast_dtype("cpu") == ember.bfloat16 == ember.get_autocast_cpu_dtype()
    assert ember.get_autocast_dtype("cuda") == ember.float16
    ember.set_autocast_cpu_dtype(ember.float16)
    try:
        with ember.cpu.amp.autocast(dtype=ember.float16):
            assert ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype == ember.float16
        assert ember.get_autocast_cpu_dtype() == ember.float16
    finally:
        ember.set_autocast_cpu_dtype(ember.bfloat16)
    ember.set_autocast_cpu_enabled(True)
    try:
        assert ember.is_autocast_cpu_enabled() and ember.is_autocast_enabled("cpu")
        assert ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype == ember.bfloat16
    finally:
        ember.set_autocast_enabled("cpu", False)
    assert not ember.is_autocast_enabled()  # no device type: CUDA's switch, as PyTorch
    assert ember.is_autocast_cache_enabled()
    ember.set_autocast_cache_enabled(False)
    assert not ember.is_autocast_cache_enabled()
    ember.set_autocast_cache_enabled(True)
    assert ember.amp.is_autocast_available("cpu")


def test_cache_casts_a_weight_once_per_region():
    w = ember.randn(4, 4, requires_grad=True)
    x = ember.randn(3, 4)
    with ember.autocast("cpu"):
        # x (no grad) is cast by each call; w only by the first
        assert _to_dtype_count(lambda: (ember.mm(x, w), ember.mm(x, w))) == 3
        assert ember._C._autocast_cache_size() == 1
        with ember.autocast("cpu"):
            pass
        assert ember._C._autocast_cache_size() == 1  # an inner region's exit keeps it
        y = ember.mm(x, w) + ember.mm(x, w)
    assert ember._C._autocast_cache_size() == 0  # cleared when the outermost region exits
    y.float().sum().backward()
    np.testing.assert_allclose(_np(w.grad), np.tile(2 * _rounded(x, ember.bfloat16).sum(0)[:, None], (1, 4)),
                               **BF16_TOL)
    with ember.autocast("cpu", cache_enabled=False):
        assert _to_dtype_count(lambda: (ember.mm(x, w), ember.mm(x, w))) == 4
        assert ember._C._autocast_cache_size() == 0


def test_cache_skips_non_leaves_and_tensors_without_grad():
    w = ember.randn(4, 4, requires_grad=True)
    with ember.autocast("cpu"):
        ember.mm(ember.randn(2, 4), w * 2)  # a non-leaf
        ember.mm(ember.randn(2, 4), ember.randn(4, 4))
        assert ember._C._autocast_cache_size() == 0


def test_a_cast_made_without_grad_is_not_reused_with_grad():
    # PyTorch caches it, and a weight first used under no_grad then gets no gradient; Ember does not
    w = ember.randn(3, 3, requires_grad=True)
    x = ember.ones(2, 3)
    with ember.autocast("cpu"):
        with ember.no_grad():
            ember.mm(x, w)
        assert ember._C._autocast_cache_size() == 0
        y = ember.mm(x, w)
    y.float().sum().backward()
    np.testing.assert_allclose(_np(w.grad), np.full((3, 3), 2.0), rtol=0, atol=0)


def test_state_is_thread_local():
    seen = {}

    def other():
        seen["enabled"] = ember.is_autocast_cpu_enabled()
        seen["dtype"] = ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype

    with ember.autocast("cpu"):
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert ember.is_autocast_cpu_enabled()
    assert seen == {"enabled": False, "dtype": ember.float32}


# ---- training ------------------------------------------------------------------------------------

def _regression(seed):
    ember.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
    x = ember.randn(32, 4)
    y = x.sum(1, keepdim=True)
    return model, x, y


def test_mlp_training_under_autocast_lowers_the_loss():
    model, x, y = _regression(4)
    opt = ember.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for _ in range(20):
        opt.zero_grad()
        with ember.autocast("cpu"):
            out = model(x)
            assert out.dtype == ember.bfloat16
            loss = F.mse_loss(out, y)
            assert loss.dtype == ember.float32
        loss.backward()
        assert all(p.grad.dtype == ember.float32 for p in model.parameters())
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
    assert all(p.dtype == ember.float32 for p in model.parameters())


def test_grad_scaler_with_autocast():
    model, x, y = _regression(5)
    opt = ember.optim.SGD(model.parameters(), lr=0.05)
    scaler = ember.amp.GradScaler("cpu", init_scale=256.0)
    losses = []
    for _ in range(20):
        opt.zero_grad()
        with ember.autocast("cpu"):
            loss = F.mse_loss(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
    assert scaler.get_scale() > 0
    assert losses[-1] < 0.5 * losses[0]


def test_custom_fwd_and_bwd():
    seen = {}

    class Square(ember.autograd.Function):
        # cast_inputs: inside a region the forward gets float32 inputs and runs with autocast off
        @staticmethod
        @ember.amp.custom_fwd(device_type="cpu", cast_inputs=ember.float32)
        def forward(ctx, a):
            ctx.save_for_backward(a)
            seen["fwd"] = (a.dtype, ember.is_autocast_cpu_enabled())
            return a * a

        @staticmethod
        @ember.amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad):
            (a,) = ctx.saved_tensors
            seen["bwd"] = ember.is_autocast_cpu_enabled()
            return 2 * a * grad

    class Scaled(ember.autograd.Function):
        # no cast_inputs: the forward runs under the caller's state and the backward replays it
        @staticmethod
        @ember.amp.custom_fwd(device_type="cpu")
        def forward(ctx, a, w):
            ctx.save_for_backward(a, w)
            seen["scaled_fwd"] = ember.is_autocast_cpu_enabled()
            return ember.mm(a, w)

        @staticmethod
        @ember.amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad):
            a, w = ctx.saved_tensors
            seen["scaled_bwd"] = (ember.is_autocast_cpu_enabled(), ember.get_autocast_cpu_dtype())
            return None, ember.mm(a.t(), grad)

    a = ember.randn(3, 3)
    a_bf = a.to(ember.bfloat16)
    w = ember.randn(3, 3, requires_grad=True)
    x = ember.randn(3, requires_grad=True)
    with ember.autocast("cpu"):
        out = Square.apply(x.to(ember.bfloat16))
        prod = Scaled.apply(a_bf, w)
    assert seen["fwd"] == (ember.float32, False)
    assert out.dtype == ember.float32
    assert seen["scaled_fwd"] and prod.dtype == ember.bfloat16
    out.sum().backward()
    assert seen["bwd"] is False
    np.testing.assert_allclose(_np(x.grad), 2 * _rounded(x, ember.bfloat16), **BF16_TOL)
    prod.float().sum().backward()
    assert seen["scaled_bwd"] == (True, ember.bfloat16)
    assert w.grad.dtype == ember.float32
    np.testing.assert_allclose(_np(w.grad), np.tile(_np(a_bf).sum(0)[:, None], (1, 3)), **BF16_TOL)
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        ember.amp.custom_fwd(device_type=None)


# ---- warnings and errors -------------------------------------------------------------------------

def test_cuda_without_cuda_warns_and_disables():
    if ember.cuda.is_available():
        pytest.skip("this build has CUDA")
    with pytest.warns(UserWarning, match="User provided device_type of 'cuda', but CUDA is not available. Disabling"):
        region = ember.autocast("cuda")
    with region:
        assert not ember.is_autocast_enabled("cuda")
        assert ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype == ember.float32


def test_cuda_amp_namespace():
    assert issubclass(ember.cuda.amp.autocast, ember.autocast)
    if ember.cuda.is_available():
        pytest.skip("this build has CUDA")
    with pytest.warns(UserWarning, match="CUDA is not available. Disabling"):
        region = ember.cuda.amp.autocast()
    assert region.fast_dtype == ember.float16 and not region._enabled


def test_unsupported_cpu_dtype_warns_and_disables():
    with pytest.warns(UserWarning, match="In CPU autocast, but the target dtype is not supported. Disabling autocast"):
        region = ember.autocast("cpu", dtype=ember.float64)
    with region:
        assert not ember.is_autocast_cpu_enabled()
        assert ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype == ember.float32


def test_bad_arguments_raise():
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'xpu'"):
        ember.autocast("xpu")
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        ember.autocast(ember.device("cpu"))
    with pytest.raises(TypeError, match="takes 1 or 2 arguments"):
        ember.set_autocast_enabled("cpu", True, 3)
    with pytest.raises(ValueError, match="expected device_type 'cpu' or 'cuda'"):
        ember._C._autocast_is_enabled("mps")
    with pytest.raises(ValueError, match="expected a policy"):
        ember._C._autocast_cast([ember.ones(1)], "fp64")
