"""Names of torch's public surface added for issue 18, item 1: ember.Size, the warn-always and
inter-op thread switches, ember.types, ember.torch_version, ember.signal.windows, ember.nn.grad,
nn.UninitializedBuffer / factory_kwargs / common_types, and the whole-sequence RNN functions
ember.lstm / gru / rnn_tanh / rnn_relu. References are float64 NumPy written here."""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck

W = ember.signal.windows


# ---- ember.Size ----

def test_size_is_a_tuple_with_numel_repr_and_slicing():
    s = ember.Size([2, 3, 4])
    assert isinstance(s, tuple) and s == (2, 3, 4) and hash(s) == hash((2, 3, 4))
    assert repr(s) == "ember.Size([2, 3, 4])" and str(s) == repr(s)
    assert s.numel() == 24 and ember.Size().numel() == 1 and ember.Size([3, 0]).numel() == 0
    assert type(s[1:]) is ember.Size and s[1:] == (3, 4) and s[::-1] == (4, 3, 2)
    assert type(s[0]) is int and s[-1] == 4
    assert type(s + (5,)) is ember.Size and s + (5,) == (2, 3, 4, 5)
    assert type((1,) + s) is ember.Size and (1,) + s == (1, 2, 3, 4)
    assert type(s * 2) is ember.Size and 2 * s == (2, 3, 4, 2, 3, 4)
    assert s.count(3) == 1 and s.index(4) == 2


def test_size_takes_anything_with_index():
    s = ember.Size([np.int64(3), ember.tensor(4), True])
    assert s == (3, 4, 1) and all(type(v) is int for v in s)
    assert ember.Size(iter([5, 6])) == (5, 6)
    restored = pickle.loads(pickle.dumps(ember.Size([7, 8])))
    assert type(restored) is ember.Size and restored == (7, 8)


@pytest.mark.parametrize("bad, kind", [([2.0], "float"), ("ab", "str"), ([1, None], "NoneType")])
def test_size_refuses_non_ints(bad, kind):
    item = 1 if kind == "NoneType" else 0
    with pytest.raises(TypeError, match=rf"ember.Size\(\) takes an iterable of 'int' \(item {item} is '{kind}'\)"):
        ember.Size(bad)


def test_tensor_shape_and_size_are_sizes():
    x = ember.zeros(2, 3, 4)
    for shape in (x.shape, x.size(), x[:, ::2].shape, x.T.size(), ember.zeros(()).shape, ember.zeros(0, 5).shape):
        assert type(shape) is ember.Size
    assert x.shape.numel() == 24 == x.size().numel() and ember.zeros(()).shape.numel() == 1
    assert x.shape == (2, 3, 4) and x.shape[1:] == (3, 4) and type(x.shape[1:]) is ember.Size
    assert ember.zeros(0, 5).shape.numel() == 0 and x.shape[-1] == 4 and type(x.size(0)) is int
    assert type(ember.broadcast_shapes((2, 1), (3,))) is ember.Size and ember.broadcast_shapes() == ()
    assert type(ember.broadcast_shapes()) is ember.Size


def test_a_size_argument_is_a_shape_in_the_legacy_constructors():
    # As torch.Tensor(torch.Size([2, 3])): a Size is a shape, a tuple or a list is data.
    assert ember.Tensor(ember.Size([2, 3])).shape == (2, 3)
    assert ember.LongTensor(ember.zeros(4, 1).shape).shape == (4, 1)
    assert ember.Tensor((2, 3)).shape == (2,) and ember.Tensor([2, 3]).tolist() == [2.0, 3.0]
    with pytest.raises(RuntimeError, match="negative dimension"):
        ember.Tensor(ember.Size([2, -1]))


def test_size_subclass_and_copy():
    class Shape(ember.Size):
        pass

    s = Shape([2, 3])
    assert type(s) is Shape and s == (2, 3) and s.numel() == 6 and repr(s) == "ember.Size([2, 3])"
    import copy
    for c in (copy.copy(ember.Size([4])), copy.deepcopy(ember.Size([4]))):
        assert type(c) is ember.Size and c == (4,)


def test_saved_size_loads_as_a_size(tmp_path):
    x = ember.zeros(2, 3)
    ember.save({"shape": x.shape, "empty": ember.Size()}, tmp_path / "s.pt")
    loaded = ember.load(tmp_path / "s.pt")  # weights_only: a Size is written as torch.Size
    assert type(loaded["shape"]) is ember.Size and loaded["shape"] == (2, 3) and loaded["empty"] == ()


def test_size_bad_operands():
    s = ember.Size([2, 3])
    with pytest.raises(TypeError, match=r"can only concatenate tuple \(not list\) to ember.Size"):
        s + [1]  # noqa: B018
    with pytest.raises(TypeError, match="can't multiply sequence by non-int of type 'float'"):
        s * 2.0  # noqa: B018
    with pytest.raises(TypeError, match="not iterable"):
        ember.Size(5)


# ---- process-wide switches ----

def test_warn_always_round_trip():
    before = ember.is_warn_always_enabled()
    try:
        ember.set_warn_always(True)
        assert ember.is_warn_always_enabled() is True
        ember.set_warn_always(False)
        assert ember.is_warn_always_enabled() is False
    finally:
        ember.set_warn_always(before)


def test_interop_threads_set_once_per_process():
    # A fresh interpreter: the count may be set only once per process.
    script = """
import os, ember
assert ember.get_num_interop_threads() == (os.cpu_count() or 1)
for bad, msg in ((0, "expects a positive integer"), ("a", "expects an int, but got str"),
                 (True, "expects an int, but got bool")):
    try:
        ember.set_num_interop_threads(bad)
    except RuntimeError as e:
        assert msg in str(e), e
    else:
        raise AssertionError(bad)
ember.set_num_interop_threads(3)
assert ember.get_num_interop_threads() == 3
try:
    ember.set_num_interop_threads(4)
except RuntimeError as e:
    assert "cannot set number of interop threads after parallel work has started or set_num_interop_threads " \\
        "called" in str(e)
else:
    raise AssertionError("second call accepted")
assert ember.get_num_interop_threads() == 3
assert ember.init_num_threads() is None
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_init_num_threads_keeps_the_count_on_a_new_thread():
    import threading

    seen = []
    thread = threading.Thread(target=lambda: (ember.init_num_threads(), seen.append(ember.get_num_threads())))
    thread.start()
    thread.join()
    assert seen == [ember.get_num_threads()]


# ---- ember.types and ember.torch_version ----

def test_types_aliases():
    assert ember.types.Size is ember.Size and ember.types.Tensor is ember.Tensor
    assert set(ember.types.Number.__args__) == {int, float, bool}
    assert ember.device in ember.types.Device.__args__ and type(None) in ember.types.Device.__args__
    assert ember.types._dtype is ember.dtype and ember.types._int is int


# PEP 440 order, written out by hand: each entry sorts strictly after the one before.
_ORDERED = ["0.9", "1.0.dev1", "1.0a1.dev1", "1.0a1", "1.0a2", "1.0b1", "1.0rc1", "1.0", "1.0+abc", "1.0+abc.5",
            "1.0.post1.dev0", "1.0.post1", "1.1", "1.10", "2!0.1"]


def test_torch_version_orders_as_pep440():
    V = ember.torch_version.TorchVersion
    for i, a in enumerate(_ORDERED):
        for j, b in enumerate(_ORDERED):
            assert (V(a) < b) == (i < j), (a, b)
            assert (V(a) == b) == (i == j), (a, b)
            assert (V(a) != b) == (i != j), (a, b)
            assert (V(a) >= b) == (i >= j), (a, b)
    assert V("1.0") == "1.0.0" and V("1.0.0") == (1, 0) and V("1.2.1") > (1, 2) and V("1.2") <= [1, 2]
    assert V("v1.0") == "1.0" and V("1.0-2") == "1.0.post2" and V("1.0c1") == "1.0rc1"


def test_torch_version_is_embers_version_and_a_string():
    assert isinstance(ember.__version__, ember.torch_version.TorchVersion) and isinstance(ember.__version__, str)
    assert ember.__version__ == ember.torch_version.__version__ == ember._C.__version__
    major, minor = (int(p) for p in ember._C.__version__.split(".")[:2])
    assert ember.__version__ >= (major, minor) and ember.__version__ < (major, minor + 1)
    assert ember.__version__.split(".")[0] == str(major)  # still a str
    # A text that is not a version compares as text, as PyTorch's does.
    assert ember.torch_version.TorchVersion("parrot") > "banana"


# ---- ember.signal.windows ----

def _span(M, sym):
    return M - 1 if sym or M == 1 else M


def _np_cosine_sum(M, a, sym):
    if M == 1:
        return np.ones(1)
    n = np.arange(M, dtype=np.float64)
    return sum((-1) ** i * c * np.cos(2 * np.pi * i * n / _span(M, sym)) for i, c in enumerate(a))


def _np_i0(x):
    # Power series of I0, enough terms for |x| <= 20 in float64.
    x = np.asarray(x, dtype=np.float64)
    term, total = np.ones_like(x), np.ones_like(x)
    for k in range(1, 80):
        term = term * (x / 2) ** 2 / k**2
        total = total + term
    return total


def _np_window(name, M, sym, **kw):
    n = np.arange(M, dtype=np.float64)
    if M == 0:
        return np.zeros(0)
    if name == "bartlett":
        return np.ones(1) if M == 1 else 1 - np.abs(2 * n / _span(M, sym) - 1)
    if name == "cosine":
        return np.sin(np.pi * (n + 0.5) / (_span(M, sym) + 1))
    if name == "exponential":
        center = kw.get("center")
        center = _span(M, sym) / 2 if center is None else center
        return np.exp(-np.abs(n - center) / kw.get("tau", 1.0))
    if name == "gaussian":
        return np.exp(-0.5 * ((n - _span(M, sym) / 2) / kw.get("std", 1.0)) ** 2)
    if name == "kaiser":
        if M == 1:
            return np.ones(1)
        beta = kw.get("beta", 12.0)
        r = 2 * n / _span(M, sym) - 1
        return _np_i0(beta * np.sqrt(np.clip(1 - r * r, 0, None))) / _np_i0(beta)
    coefficients = {"hann": [0.5, 0.5], "hamming": [0.54, 0.46], "blackman": [0.42, 0.5, 0.08],
                    "nuttall": [0.3635819, 0.4891775, 0.1365995, 0.0106411]}
    if name == "general_hamming":
        a = [kw.get("alpha", 0.54), 1 - kw.get("alpha", 0.54)]
    elif name == "general_cosine":
        a = kw["a"]
    else:
        a = coefficients[name]
    return _np_cosine_sum(M, a, sym)


_WINDOWS = [("bartlett", {}), ("blackman", {}), ("cosine", {}), ("exponential", {}), ("exponential", {"tau": 2.5}),
            ("gaussian", {}), ("gaussian", {"std": 0.7}), ("general_cosine", {"a": [0.5, 0.3, 0.2]}),
            ("general_cosine", {"a": (1.0, 2.0)}), ("general_hamming", {}), ("general_hamming", {"alpha": 0.6}),
            ("hamming", {}), ("hann", {}), ("kaiser", {}), ("kaiser", {"beta": 3.0}), ("kaiser", {"beta": 0.0}),
            ("nuttall", {})]


@pytest.mark.parametrize("name, kw", _WINDOWS)
@pytest.mark.parametrize("M", [0, 1, 2, 5, 8])
@pytest.mark.parametrize("sym", [True, False])
def test_windows_match_float64_formulas(name, kw, M, sym):
    got = getattr(W, name)(M, sym=sym, dtype=ember.float64, **kw)
    assert got.dtype == ember.float64 and tuple(got.shape) == (M,) and not got.requires_grad
    np.testing.assert_allclose(got.numpy(), _np_window(name, M, sym, **kw), rtol=1e-12, atol=1e-12)
    single = getattr(W, name)(M, sym=sym, dtype=ember.float32, **kw)
    assert single.dtype == ember.float32
    np.testing.assert_allclose(single.numpy(), _np_window(name, M, sym, **kw), rtol=1e-6, atol=1e-6)


def test_window_defaults_and_factory_arguments():
    assert W.hann(4).dtype == ember.get_default_dtype()
    np.testing.assert_allclose(W.hann(4, sym=False).numpy(), [0.0, 0.5, 1.0, 0.5], atol=1e-7)
    w = W.gaussian(3, requires_grad=True, device="cpu")
    assert w.requires_grad and w.device == ember.device("cpu")
    # A periodic exponential window may be centred anywhere.
    got = W.exponential(5, center=1.0, sym=False, dtype=ember.float64)
    np.testing.assert_allclose(got.numpy(), np.exp(-np.abs(np.arange(5.0) - 1.0)), rtol=1e-12)


@pytest.mark.parametrize("call, kind, message", [
    (lambda: W.gaussian(-1), ValueError, "gaussian requires non-negative window length, got M=-1"),
    (lambda: W.hann(3, dtype=ember.int32), ValueError, "hann expects float32 or float64 dtypes, got: ember.int32"),
    (lambda: W.kaiser(3, layout=ember.sparse_coo), ValueError,
     "kaiser is implemented for strided tensors only, got: ember.sparse_coo"),
    (lambda: W.gaussian(3, std=0), ValueError, "Standard deviation must be positive, got: 0 instead."),
    (lambda: W.exponential(3, tau=-1), ValueError, "Tau must be positive, got: -1 instead."),
    (lambda: W.exponential(3, center=1.0), ValueError, "Center must be None for symmetric windows"),
    (lambda: W.kaiser(3, beta=-1), ValueError, "beta must be non-negative, got: -1 instead."),
    (lambda: W.general_cosine(3, a=[]), ValueError, "Coefficients cannot be empty"),
    (lambda: W.general_cosine(3, a=1), TypeError, "Coefficients must be a list/tuple"),
    (lambda: W.bartlett(2.0), TypeError, "bartlett: M must be an int, got float"),
])
def test_window_errors(call, kind, message):
    with pytest.raises(kind, match="^" + message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.") + "$"):
        call()


# ---- ember.nn.grad ----

def _np_conv_and_grads(x, w, g, stride, padding, dilation, groups):
    """A direct loop convolution (any number of spatial dims) with its input and weight gradients
    for the upstream gradient g."""
    n_sp = x.ndim - 2
    out_shape = [(x.shape[2 + d] + 2 * padding[d] - dilation[d] * (w.shape[2 + d] - 1) - 1) // stride[d] + 1
                 for d in range(n_sp)]
    out = np.zeros((x.shape[0], w.shape[0], *out_shape))
    gx, gw = np.zeros_like(x), np.zeros_like(w)
    per_in, per_out = w.shape[1], w.shape[0] // groups
    for b in range(x.shape[0]):
        for oc in range(w.shape[0]):
            group = oc // per_out
            for o in np.ndindex(*out_shape):
                for ic in range(per_in):
                    c = group * per_in + ic
                    for k in np.ndindex(*w.shape[2:]):
                        pos = tuple(o[d] * stride[d] - padding[d] + k[d] * dilation[d] for d in range(n_sp))
                        if all(0 <= pos[d] < x.shape[2 + d] for d in range(n_sp)):
                            out[(b, oc, *o)] += x[(b, c, *pos)] * w[(oc, ic, *k)]
                            gx[(b, c, *pos)] += g[(b, oc, *o)] * w[(oc, ic, *k)]
                            gw[(oc, ic, *k)] += g[(b, oc, *o)] * x[(b, c, *pos)]
    return out, gx, gw


_CONV_CASES = [
    # n, input shape, weight shape, stride, padding, dilation, groups
    (1, (2, 4, 9), (6, 2, 3), 2, 1, 1, 2),
    (1, (0, 2, 5), (3, 2, 2), 1, 0, 1, 1),  # an empty batch
    (2, (2, 2, 6, 5), (3, 2, 3, 2), (2, 1), (1, 0), (1, 2), 1),
    (2, (1, 4, 5, 5), (4, 1, 2, 2), 1, 1, 1, 4),
    (3, (1, 2, 4, 3, 4), (2, 1, 2, 2, 1), (1, 2, 1), (0, 1, 1), 1, 2),
]


def _tuple(v, n):
    return (v,) * n if isinstance(v, int) else tuple(v)


@pytest.mark.parametrize("n, xs, ws, stride, padding, dilation, groups", _CONV_CASES)
@pytest.mark.parametrize("layout", ["contiguous", "non-contiguous"])
def test_conv_grads_match_loop_reference(n, xs, ws, stride, padding, dilation, groups, layout):
    rng = np.random.default_rng(n)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    args = [_tuple(v, n) for v in (stride, padding, dilation)]
    # The output's shape, then an upstream gradient of that shape, then the reference gradients.
    out_shape = [(xs[2 + d] + 2 * args[1][d] - args[2][d] * (ws[2 + d] - 1) - 1) // args[0][d] + 1 for d in range(n)]
    g = rng.standard_normal((xs[0], ws[0], *out_shape))
    _, gx, gw = _np_conv_and_grads(x, w, g, *args, groups)

    def as_ember(a):
        t = ember.tensor(a, dtype=ember.float64)
        if layout == "non-contiguous":  # the same values, every other element of a wider tensor
            t = ember.tensor(np.repeat(a, 2, axis=-1), dtype=ember.float64)[..., ::2]
            assert not t.is_contiguous() or a.size == 0 or a.shape[-1] == 1
        return t

    input_grad = getattr(ember.nn.grad, f"conv{n}d_input")
    weight_grad = getattr(ember.nn.grad, f"conv{n}d_weight")
    got_gx = input_grad(xs, as_ember(w), as_ember(g), stride, padding, dilation, groups)
    got_gw = weight_grad(as_ember(x), ws, as_ember(g), stride, padding, dilation, groups)
    assert tuple(got_gx.shape) == xs and tuple(got_gw.shape) == ws
    np.testing.assert_allclose(got_gx.numpy(), gx, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(got_gw.numpy(), gw, rtol=1e-10, atol=1e-10)
    # The functional name is the same module, as torch.nn.functional.grad.
    assert ember.nn.functional.grad is ember.nn.grad


def test_conv_grads_take_a_size():
    x = ember.randn(1, 2, 5, 4, dtype=ember.float64)
    w = ember.randn(3, 2, 2, 2, dtype=ember.float64)
    g = ember.randn(1, 3, 4, 3, dtype=ember.float64)
    a = ember.nn.grad.conv2d_input(ember.Size(x.shape), w, g)
    b = ember.nn.grad.conv2d_input(list(x.shape), w, g)
    assert ember.equal(a, b)


def test_conv_grads_gradcheck():
    ember.manual_seed(3)
    x = ember.randn(2, 2, 5, dtype=ember.float64, requires_grad=True)
    w = ember.randn(4, 1, 2, dtype=ember.float64, requires_grad=True)
    g = ember.randn(2, 4, 3, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda w_, g_: ember.nn.grad.conv1d_input((2, 2, 5), w_, g_, stride=2, padding=1, groups=2),
                     (w, g))
    assert gradcheck(lambda x_, g_: ember.nn.grad.conv1d_weight(x_, (4, 1, 2), g_, stride=2, padding=1, groups=2),
                     (x, g))
    x2 = ember.randn(1, 1, 4, 3, dtype=ember.float64, requires_grad=True)
    w2 = ember.randn(2, 1, 2, 2, dtype=ember.float64, requires_grad=True)
    g2 = ember.randn(1, 2, 3, 2, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda w_, g_: ember.nn.grad.conv2d_input((1, 1, 4, 3), w_, g_), (w2, g2))
    assert gradcheck(lambda x_, g_: ember.nn.grad.conv2d_weight(x_, (2, 1, 2, 2), g_), (x2, g2))


def test_conv_grads_errors():
    w = ember.randn(3, 2, 2, 2, dtype=ember.float64)
    with pytest.raises(RuntimeError, match=r"conv2d_input: grad_output has shape \[1, 3, 9, 9\], but the convolution's "
                                           r"output has shape \[1, 3, 4, 3\]"):
        ember.nn.grad.conv2d_input((1, 2, 5, 4), w, ember.zeros(1, 3, 9, 9, dtype=ember.float64))
    with pytest.raises(RuntimeError, match=r"expected input\[1, 4, 5, 4\] to have 2 channels, but got 4 channels"):
        ember.nn.grad.conv2d_input((1, 4, 5, 4), w, ember.zeros(1, 3, 4, 3, dtype=ember.float64))


# ---- nn.UninitializedBuffer, factory_kwargs, common_types ----

def test_uninitialized_buffer_registers_and_materializes():
    b = ember.nn.UninitializedBuffer(dtype=ember.float64)
    assert repr(b) == "<UninitializedBuffer>" and b.numel() == 0 and not b.requires_grad and b.persistent
    assert ember.nn.parameter.is_lazy(b)
    m = ember.nn.Module()
    m.stats = b
    m.hidden = ember.nn.UninitializedBuffer(persistent=False)
    assert set(dict(m.named_buffers())) == {"stats", "hidden"}
    assert set(m.state_dict()) == {"stats"}
    b.materialize((2, 3))
    assert type(b) is ember.nn.Buffer and tuple(b.shape) == (2, 3) and b.dtype == ember.float64
    assert not ember.nn.parameter.is_lazy(b) and m.stats is b
    grad_buffer = ember.nn.UninitializedBuffer(requires_grad=True)
    assert grad_buffer.requires_grad


def test_factory_kwargs():
    fk = ember.nn.factory_kwargs
    assert fk(None) == {} and fk({}) == {}
    assert fk({"dtype": ember.float64, "device": "cpu"}) == {"dtype": ember.float64, "device": "cpu"}
    assert fk({"factory_kwargs": {"dtype": ember.float16}, "device": "cpu"}) == {"dtype": ember.float16,
                                                                                  "device": "cpu"}
    with pytest.raises(TypeError, match=r"unexpected kwargs \{'colour'\}"):
        fk({"colour": 1, "dtype": ember.float32})
    with pytest.raises(TypeError, match="dtype specified twice, in \\*\\*kwargs and in factory_kwargs"):
        fk({"dtype": ember.float32, "factory_kwargs": {"dtype": ember.float64}})
    t = ember.empty(2, **fk({"dtype": ember.float64}))
    assert t.dtype == ember.float64


def test_common_types():
    ct = ember.nn.common_types
    assert set(ct._size_2_t.__args__) == {int, tuple[int, int]}
    assert tuple[int, ...] in ct._size_any_t.__args__
    assert set(ct._ratio_3_t.__args__) == {float, tuple[float, float, float]}


# ---- ember.lstm / gru / rnn_tanh / rnn_relu ----

def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def _np_cell(mode, x, h, c, w):
    """One time step in float64 NumPy, gates in PyTorch's order (i, f, g, o / r, z, n)."""
    b_ih = w.get("b_ih", 0.0)
    b_hh = w.get("b_hh", 0.0)
    gi, gh = x @ w["w_ih"].T + b_ih, h @ w["w_hh"].T + b_hh
    if mode == "LSTM":
        i, f, g, o = np.split(gi + gh, 4, axis=1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        h = _sigmoid(o) * np.tanh(c)
        return (h @ w["w_hr"].T if "w_hr" in w else h), c
    if mode == "GRU":
        ir, iz, in_ = np.split(gi, 3, axis=1)
        hr, hz, hn = np.split(gh, 3, axis=1)
        r, z = _sigmoid(ir + hr), _sigmoid(iz + hz)
        n = np.tanh(in_ + r * hn)
        return (1 - z) * n + z * h, None
    pre = gi + gh
    return (np.tanh(pre) if mode == "RNN_TANH" else np.maximum(pre, 0)), None


def _np_stack(mode, x, h0, c0, params, has_biases, num_layers, bidirectional, projections):
    """The stacked (bidirectional) recurrence over a time-major [T, B, F] input."""
    names = ["w_ih", "w_hh"] + (["b_ih", "b_hh"] if has_biases else []) + (["w_hr"] if projections else [])
    groups = [dict(zip(names, params[k:k + len(names)], strict=True)) for k in range(0, len(params), len(names))]
    dirs = 2 if bidirectional else 1
    layer_in, hs, cs = x, [], []
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            h, c = h0[k], (c0[k] if c0 is not None else None)
            seq = [None] * x.shape[0]
            for t in (range(x.shape[0] - 1, -1, -1) if d else range(x.shape[0])):
                h, c = _np_cell(mode, layer_in[t], h, c, groups[k])
                seq[t] = h
            outs.append(np.stack(seq))
            hs.append(h)
            cs.append(c)
        layer_in = np.concatenate(outs, axis=2)
    return layer_in, np.stack(hs), (np.stack(cs) if c0 is not None else None)


_RNN_CASES = [
    # mode, num_layers, bidirectional, bias, batch_first, proj_size
    ("LSTM", 1, False, True, False, 0),
    ("LSTM", 2, True, True, True, 0),
    ("LSTM", 2, True, False, False, 2),
    ("GRU", 2, True, True, False, 0),
    ("GRU", 1, False, False, True, 0),
    ("RNN_TANH", 2, False, True, False, 0),
    ("RNN_RELU", 1, True, True, True, 0),
]
_FUNCTIONS = {"LSTM": ember.lstm, "GRU": ember.gru, "RNN_TANH": ember.rnn_tanh, "RNN_RELU": ember.rnn_relu}


def _module(mode, num_layers, bidirectional, bias, batch_first, proj_size, input_size=3, hidden=4):
    kwargs = {"num_layers": num_layers, "bidirectional": bidirectional, "bias": bias, "batch_first": batch_first}
    if mode == "LSTM":
        return ember.nn.LSTM(input_size, hidden, proj_size=proj_size, **kwargs).double()
    if mode == "GRU":
        return ember.nn.GRU(input_size, hidden, **kwargs).double()
    return ember.nn.RNN(input_size, hidden, nonlinearity="tanh" if mode == "RNN_TANH" else "relu", **kwargs).double()


@pytest.mark.parametrize("mode, num_layers, bidirectional, bias, batch_first, proj_size", _RNN_CASES)
@pytest.mark.parametrize("batch", [2, 0])
def test_rnn_functions_match_numpy_and_modules(mode, num_layers, bidirectional, bias, batch_first, proj_size, batch):
    ember.manual_seed(7)
    module = _module(mode, num_layers, bidirectional, bias, batch_first, proj_size)
    dirs = 2 if bidirectional else 1
    real = proj_size or 4
    x = ember.randn(5, batch, 3, dtype=ember.float64)
    if batch_first:  # the batch-first input, itself a non-contiguous view of a time-major tensor
        x = x.transpose(0, 1)
    h0 = ember.randn(num_layers * dirs, batch, real, dtype=ember.float64)
    c0 = ember.randn(num_layers * dirs, batch, 4, dtype=ember.float64)
    hx = [h0, c0] if mode == "LSTM" else h0
    got = _FUNCTIONS[mode](x, hx, module._flat_weights, bias, num_layers, 0.0, False, bidirectional, batch_first)
    assert len(got) == (3 if mode == "LSTM" else 2)
    want = module(x, tuple(hx) if mode == "LSTM" else hx)
    want = (want[0], *want[1]) if mode == "LSTM" else want
    for a, b in zip(got, want, strict=True):
        assert ember.equal(a, b)
    x_np = x.numpy().swapaxes(0, 1) if batch_first else x.numpy()
    params = [p.detach().numpy() for p in module._flat_weights]
    out, h_n, c_n = _np_stack(mode, x_np, h0.numpy(), c0.numpy() if mode == "LSTM" else None, params, bias,
                              num_layers, bidirectional, proj_size > 0)
    np.testing.assert_allclose(got[0].detach().numpy(), out.swapaxes(0, 1) if batch_first else out,
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got[1].detach().numpy(), h_n, rtol=1e-10, atol=1e-12)
    if mode == "LSTM":
        np.testing.assert_allclose(got[2].detach().numpy(), c_n, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH", "RNN_RELU"])
def test_rnn_functions_packed_overload(mode):
    from ember.nn.utils.rnn import pack_padded_sequence

    ember.manual_seed(11)
    module = _module(mode, 2, True, True, False, 0)
    x = ember.randn(6, 3, 3, dtype=ember.float64)
    packed = pack_padded_sequence(x, [6, 4, 2])
    h0 = ember.randn(4, 3, 4, dtype=ember.float64)
    hx = (h0, ember.randn(4, 3, 4, dtype=ember.float64)) if mode == "LSTM" else h0
    got = _FUNCTIONS[mode](packed.data, packed.batch_sizes, hx, module._flat_weights, True, 2, 0.0, False, True)
    want_out, want_h = module(packed, hx)
    assert ember.equal(got[0], want_out.data)
    states = want_h if mode == "LSTM" else (want_h,)
    for a, b in zip(got[1:], states, strict=True):
        assert ember.equal(a, b)


def test_rnn_functions_gradcheck():
    ember.manual_seed(5)
    for mode in ("LSTM", "GRU", "RNN_TANH"):
        module = _module(mode, 1, True, True, False, 0, input_size=2, hidden=2)
        params = [p.detach().clone().requires_grad_(True) for p in module._flat_weights]
        x = ember.randn(3, 2, 2, dtype=ember.float64, requires_grad=True)
        h0 = ember.randn(2, 2, 2, dtype=ember.float64, requires_grad=True)
        c0 = ember.randn(2, 2, 2, dtype=ember.float64, requires_grad=True)

        def run(x_, h_, c_, *ps, mode=mode):
            hx = [h_, c_] if mode == "LSTM" else h_
            return _FUNCTIONS[mode](x_, hx, list(ps), True, 1, 0.0, False, True, False)

        assert gradcheck(run, (x, h0, c0, *params))


def test_rnn_functions_dropout_only_when_training():
    ember.manual_seed(2)
    module = _module("GRU", 2, False, True, False, 0)
    x = ember.randn(4, 2, 3, dtype=ember.float64)
    h0 = ember.zeros(2, 2, 4, dtype=ember.float64)
    off = ember.gru(x, h0, module._flat_weights, True, 2, 0.5, False, False, False)
    plain = ember.gru(x, h0, module._flat_weights, True, 2, 0.0, True, False, False)
    assert ember.equal(off[0], plain[0])  # train=False: no dropout
    on = ember.gru(x, h0, module._flat_weights, True, 2, 0.9, True, False, False)
    assert not ember.equal(on[0], plain[0])


def test_rnn_functions_errors():
    module = _module("LSTM", 2, False, True, False, 0)
    x, h = ember.randn(5, 2, 3, dtype=ember.float64), ember.zeros(2, 2, 4, dtype=ember.float64)
    ps = module._flat_weights
    with pytest.raises(RuntimeError, match=r"lstm: expected 8 weights \(2 layer\(s\) x 1 direction\(s\) x 4: "
                                           r"weight_ih, weight_hh, bias_ih, bias_hh\), but got 7"):
        ember.lstm(x, (h, h), ps[:-1], True, 2, 0.0, False, False, False)
    with pytest.raises(RuntimeError, match="lstm expects two hidden states"):
        ember.lstm(x, (h,), ps, True, 2, 0.0, False, False, False)
    with pytest.raises(RuntimeError, match=r"lstm: input must be 3-D \[seq, batch, features\]"):
        ember.lstm(x[0], (h, h), ps, True, 2, 0.0, False, False, False)
    with pytest.raises(RuntimeError, match=r"lstm: expected hidden state of shape \[2, 2, \*\], but got \[1, 2, 4\]"):
        ember.lstm(x, (h[:1], h[:1]), ps, True, 2, 0.0, False, False, False)
    with pytest.raises(RuntimeError, match=r"lstm: weight_ih of layer 0 has shape \[16, 3\], but the input of size 7 "
                                           r"and hidden size 4 need \[16, 7\]"):
        ember.lstm(ember.randn(5, 2, 7, dtype=ember.float64), (h, h), ps, True, 2, 0.0, False, False, False)
    with pytest.raises(RuntimeError, match=r"gru: batch_sizes must be non-increasing and sum to the data's 5 rows"):
        ember.gru(ember.randn(5, 3, dtype=ember.float64), ember.tensor([2, 3]), h, ps, True, 2, 0.0, False, False)
    with pytest.raises(TypeError, match=r"rnn_tanh\(input, hx, params, .*\): expected 9 arguments, got 4"):
        ember.rnn_tanh(x, h, ps, True)
