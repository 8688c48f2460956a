"""float16 / bfloat16 inputs to the matrix products and nn.functional: accepted, computed with a
float32 accumulator and rounded once, so results stay within PyTorch's tolerances of the float64
result on the same (already rounded) inputs. Linear algebra rejects them, as PyTorch's CPU
backend does."""

import numpy as np
import pytest

import ember
from ember.nn import functional as F

RNG = np.random.default_rng(11)
# Per dtype: (rtol, atol) on values of order 1, PyTorch's default rtol with an atol for sums.
TOLERANCES = {ember.float16: (1e-3, 2e-3), ember.bfloat16: (1.6e-2, 2e-2)}


def _normal(*shape):
    return RNG.normal(size=shape)


def _labels(n, classes):
    return ember.tensor(RNG.integers(0, classes, size=n))


# name -> (function of the floating inputs, the inputs as float64 arrays)
CASES = {
    "matmul": (lambda a, b: a @ b, [_normal(3, 64), _normal(64, 5)]),
    "bmm": (ember.bmm, [_normal(2, 3, 32), _normal(2, 32, 4)]),
    "addmm": (lambda c, a, b: ember.addmm(c, a, b, beta=0.5, alpha=2.0), [_normal(3, 4), _normal(3, 16),
                                                                          _normal(16, 4)]),
    "mv": (ember.mv, [_normal(4, 50), _normal(50)]),
    "dot": (ember.dot, [_normal(300), _normal(300)]),
    "einsum": (lambda a, b: ember.einsum("bij,bjk->bik", a, b), [_normal(2, 3, 8), _normal(2, 8, 3)]),
    "linear": (F.linear, [_normal(5, 20), _normal(7, 20), _normal(7)]),
    "conv1d": (lambda x, w: F.conv1d(x, w, padding=1), [_normal(2, 3, 10), _normal(4, 3, 3)]),
    "conv2d": (lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1), [_normal(2, 3, 8, 8), _normal(4, 3, 3, 3),
                                                                       _normal(4)]),
    "max_pool2d": (lambda x: F.max_pool2d(x, 2), [_normal(2, 3, 6, 6)]),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 3, stride=2, padding=1), [_normal(2, 3, 7, 7)]),
    "batch_norm": (lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), [_normal(8, 3, 4), _normal(3),
                                                                                     _normal(3)]),
    "softmax": (lambda x: F.softmax(x, dim=-1), [_normal(4, 100)]),
    "log_softmax": (lambda x: F.log_softmax(x, dim=1), [_normal(4, 100)]),
    "gelu": (F.gelu, [_normal(50)]),
    "silu": (F.silu, [_normal(50)]),
    "cosine_similarity": (F.cosine_similarity, [_normal(6, 40), _normal(6, 40)]),
    "pairwise_distance": (F.pairwise_distance, [_normal(6, 40), _normal(6, 40)]),
    "cross_entropy": (lambda x: F.cross_entropy(x, _CE_TARGET, label_smoothing=0.1), [_normal(16, 5)]),
    "nll_loss": (lambda x: F.nll_loss(F.log_softmax(x, 1), _CE_TARGET), [_normal(16, 5)]),
    "mse_loss": (F.mse_loss, [_normal(64), _normal(64)]),
    "smooth_l1_loss": (F.smooth_l1_loss, [_normal(64), _normal(64)]),
    "bce_with_logits": (lambda x, t: F.binary_cross_entropy_with_logits(x, ember.sigmoid(t)),
                        [_normal(64), _normal(64)]),
    "kl_div": (lambda x, t: F.kl_div(F.log_softmax(x, 1), F.softmax(t, 1), reduction="batchmean"),
               [_normal(4, 10), _normal(4, 10)]),
}
_CE_TARGET = _labels(16, 5)


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_reduced_precision_matches_float64_on_rounded_inputs(name, dtype):
    fn, arrays = CASES[name]
    low = [ember.tensor(a).to(dtype) for a in arrays]
    high = [t.to(ember.float64) for t in low]  # the same rounded values, widened exactly
    out, expected = fn(*low), fn(*high)
    assert out.dtype == dtype
    rtol, atol = TOLERANCES[dtype]
    scale = max(1.0, float(expected.abs().max()))
    np.testing.assert_allclose(out.to(ember.float64).numpy(), expected.numpy(), rtol=rtol, atol=atol * scale)


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16], ids=["float16", "bfloat16"])
def test_long_reductions_accumulate_in_float32(dtype):
    # 4096 ones: a float16 accumulator would stop at 2048, a bfloat16 one at 256.
    ones = ember.ones(4096, dtype=dtype)
    assert float(ones.sum()) == 4096 and float(ones @ ones) == 4096
    assert float(F.linear(ones.reshape(1, -1), ones.reshape(1, -1))) == 4096


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16], ids=["float16", "bfloat16"])
def test_reduced_precision_gradients_flow(dtype):
    x = ember.tensor(_normal(4, 8)).to(dtype).requires_grad_()
    w = ember.tensor(_normal(3, 8)).to(dtype).requires_grad_()
    F.cross_entropy(F.linear(x, w), _labels(4, 3)).backward()
    assert x.grad.dtype == dtype and w.grad.dtype == dtype
    x64, w64 = x.detach().to(ember.float64).requires_grad_(), w.detach().to(ember.float64).requires_grad_()
    target = _labels(4, 3)
    x.grad = w.grad = None
    F.cross_entropy(F.linear(x, w), target).backward()
    F.cross_entropy(F.linear(x64, w64), target).backward()
    rtol, atol = TOLERANCES[dtype]
    np.testing.assert_allclose(w.grad.to(ember.float64).numpy(), w64.grad.numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16], ids=["float16", "bfloat16"])
def test_linear_algebra_rejects_reduced_precision_like_pytorch_cpu(dtype):
    a = ember.eye(3, dtype=dtype)
    LA = ember.linalg
    name = str(dtype).split(".")[-1]
    for fn in (LA.det, LA.inv, LA.cholesky, LA.svd, LA.svdvals, LA.eigh, LA.qr, LA.lu_factor, LA.eig, LA.eigvals):
        with pytest.raises(RuntimeError, match=rf"\[linalg\.\w+\] Low precision dtypes not supported. Got {name}"):
            fn(a)
