"""Bad input raises PyTorch's error, never a silent answer (issue 19, item 1).

Each probe asserts the exception type and message PyTorch 2.13 gives for the same call (read from
torch, never imported here): negative indices where PyTorch rejects them (Note [negative
indices]), integers to negative integer powers, Python numbers that do not fit an integer tensor
(Note [scalar range]), writes to a read-only NumPy array's memory (Note [read-only storage]) and
float8_e4m3fn's saturation.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.nn import functional as F


def x23():
    return ember.arange(6.0).reshape(2, 3)


def idx(values):
    return ember.tensor(values, dtype=ember.int64)


# ---- negative indices ----------------------------------------------------------------------------
# PyTorch rejects -1 in gather/scatter/index_select/index_add/index_copy/embedding(_bag); each op
# keeps its own PyTorch message and type.

GATHER_MSG = r"index -1 is out of bounds for dimension 1 with size 3"


@pytest.mark.parametrize("call, error, message", [
    (lambda: x23().index_select(0, idx([-1, 0])), IndexError, r"index out of range in self"),
    (lambda: x23().index_select(1, idx([-1])), IndexError, r"index out of range in self"),
    (lambda: ember.tensor(3.0).index_select(0, idx([-1])), IndexError, r"index out of range in self"),
    (lambda: x23().gather(1, idx([[-1], [0]])), RuntimeError, GATHER_MSG),
    (lambda: ember.tensor(3.0).gather(0, idx(-1)), RuntimeError,
     r"index -1 is out of bounds for dimension 0 with size 1"),
    (lambda: x23().scatter(1, idx([[-1], [0]]), ember.ones(2, 1)), RuntimeError, GATHER_MSG),
    (lambda: x23().scatter_(1, idx([[-1], [0]]), ember.ones(2, 1)), RuntimeError, GATHER_MSG),
    (lambda: x23().scatter_add(1, idx([[-1], [0]]), ember.ones(2, 1)), RuntimeError, GATHER_MSG),
    (lambda: x23().scatter_add_(1, idx([[-1], [0]]), ember.ones(2, 1)), RuntimeError, GATHER_MSG),
    (lambda: x23().scatter_reduce(1, idx([[-1], [0]]), ember.ones(2, 1), "sum"), RuntimeError, GATHER_MSG),
    (lambda: x23().scatter_reduce_(1, idx([[-1], [0]]), ember.ones(2, 1), "amax"), RuntimeError, GATHER_MSG),
    (lambda: x23().scatter_reduce(1, idx([[-1], [0]]), ember.ones(2, 1), "mean", include_self=False),
     RuntimeError, GATHER_MSG),
    (lambda: x23().index_add(0, idx([-1]), ember.ones(1, 3)), RuntimeError,
     r"index -1 is out of bounds for dimension 0 with size 2"),
    (lambda: x23().index_add_(0, idx([-1]), ember.ones(1, 3)), RuntimeError,
     r"index -1 is out of bounds for dimension 0 with size 2"),
    (lambda: x23().index_copy(0, idx([-1]), ember.ones(1, 3)), IndexError,
     r"index_copy_\(\): index -1 is out of bounds for dimension 0 with size 2"),
    (lambda: x23().index_copy_(0, idx([-1]), ember.ones(1, 3)), IndexError,
     r"index_copy_\(\): index -1 is out of bounds for dimension 0 with size 2"),
    (lambda: F.embedding(idx([-1]), ember.ones(4, 3)), IndexError, r"index out of range in self"),
    (lambda: F.embedding(idx([-1]), ember.ones(4, 3), padding_idx=-1), IndexError, r"index out of range in self"),
    (lambda: F.embedding_bag(idx([-1, 0]), ember.ones(4, 3), idx([0])), RuntimeError,
     r"Index 0 of input takes value -1 which is not in the valid range \[0, 4\)"),
    (lambda: F.embedding_bag(idx([[0, -1]]), ember.ones(4, 3), mode="max"), RuntimeError,
     r"Index 1 of input takes value -1 which is not in the valid range \[0, 4\)"),
    # without dim, take_along_dim is a gather of the flattened input: PyTorch rejects -1 there
    (lambda: ember.take_along_dim(x23(), idx([-1])), RuntimeError,
     r"index -1 is out of bounds for dimension 0 with size 6"),
])
def test_negative_index_raises_as_pytorch(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_rejected_negative_index_leaves_self_unchanged():
    x = x23()
    with pytest.raises(RuntimeError, match=GATHER_MSG):
        x.scatter_(1, idx([[0], [-1]]), ember.full((2, 1), 9.0))
    np.testing.assert_array_equal(x.numpy(), np.arange(6.0).reshape(2, 3))


def test_negative_index_wraps_where_pytorch_wraps():
    a = np.arange(6.0).reshape(2, 3)
    x = x23()
    np.testing.assert_array_equal(x[-1].numpy(), a[-1])
    np.testing.assert_array_equal(x[idx([-1])].numpy(), a[[-1]])
    np.testing.assert_array_equal(x.take(idx([-1, -6])).numpy(), [5.0, 0.0])
    np.testing.assert_array_equal(ember.take_along_dim(x, idx([[-1], [-3]]), 1).numpy(), [[2.0], [3.0]])
    np.testing.assert_array_equal(x.index_fill(0, idx([-1]), 5.0).numpy(), [[0, 1, 2], [5, 5, 5]])
    np.testing.assert_array_equal(ember.tensor(3.0).index_fill(0, idx([-1]), 1.0).numpy(), 1.0)
    y = x23()
    y.index_put_((idx([-1]),), ember.tensor(5.0))
    np.testing.assert_array_equal(y.numpy(), [[0, 1, 2], [5, 5, 5]])
    # F.embedding's padding_idx=-1 means the last row (PyTorch normalizes it); only an index of -1 raises
    w = ember.arange(12.0).reshape(4, 3)
    np.testing.assert_array_equal(F.embedding(idx([3]), w, padding_idx=-1).numpy(), [[9.0, 10.0, 11.0]])


def test_wrapping_ops_still_reject_out_of_range():
    with pytest.raises(IndexError, match=r"index 2 is out of bounds for dimension 0 with size 2"):
        x23().index_fill(0, idx([2]), 5.0)
    with pytest.raises(IndexError, match=r"index -3 is out of bounds for dimension 0 with size 2"):
        x23().index_fill(0, idx([-3]), 5.0)
    with pytest.raises(IndexError, match=r"out of range: tried to access index -7 on a tensor of 6 elements"):
        x23().take(idx([-7]))
    # PyTorch 2.13 reads some other element for 5 here without a word; Ember raises
    with pytest.raises(RuntimeError, match=r"index 5 is out of bounds for dimension 1 with size 3"):
        ember.take_along_dim(x23(), idx([[5], [0]]), 1)
    with pytest.raises(RuntimeError, match=r"index -4 is out of bounds for dimension 1 with size 3"):
        ember.take_along_dim(x23(), idx([[-4], [0]]), 1)


def test_take_along_dim_gradient_of_negative_index():
    x = x23().requires_grad_()
    ember.take_along_dim(x, idx([[-1], [-3]]), 1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0, 1], [1, 0, 0]])


def test_scatter_reduce_extremes_of_narrow_int_dtypes():
    # without self, amax starts from the dtype's lowest value (it was int64's, wrapped to 0)
    base = ember.zeros(2, dtype=ember.int8)
    out = base.scatter_reduce(0, idx([0, 0]), ember.tensor([-5, -7], dtype=ember.int8), "amax", include_self=False)
    np.testing.assert_array_equal(out.numpy(), [-5, 0])
    out = base.scatter_reduce(0, idx([1]), ember.tensor([100], dtype=ember.int8), "amin", include_self=False)
    np.testing.assert_array_equal(out.numpy(), [0, 100])


# ---- integer powers and Python numbers into integer tensors --------------------------------------

NEG_POW = r"Integers to negative integer powers are not allowed\."


@pytest.mark.parametrize("call", [
    lambda: ember.tensor([2, 0, -1]) ** -1,
    lambda: ember.tensor([1, 2], dtype=ember.int8) ** -1,
    lambda: ember.tensor([1]) ** -1,
    lambda: ember.tensor([True]) ** -1,
    lambda: ember.pow(ember.tensor([2]), -2),
    lambda: ember.tensor([2]).pow_(-2),
])
def test_integer_to_negative_integer_power_raises(call):
    with pytest.raises(RuntimeError, match=NEG_POW):
        call()


def test_integer_powers_pytorch_allows():
    x = ember.tensor([2, 0, -1])
    np.testing.assert_array_equal((x ** -1.0).numpy(), [0.5, np.inf, -1.0])
    np.testing.assert_array_equal((x ** 2).numpy(), [4, 0, 1])
    # as PyTorch, only a Python number is checked: a tensor of exponents truncates as C does
    np.testing.assert_array_equal((x ** ember.tensor([-1, 1, 1])).numpy(), [0, 0, -1])
    np.testing.assert_array_equal((2 ** ember.tensor([-1, 1])).numpy(), [0, 2])


def overflow(ctype):
    return rf"value cannot be converted to type {ctype} without overflow"


@pytest.mark.parametrize("call, ctype", [
    (lambda: ember.full((2,), 300, dtype=ember.uint8), "uint8_t"),
    (lambda: ember.full((2,), -256, dtype=ember.uint8), "uint8_t"),
    (lambda: ember.full((2,), -1.0, dtype=ember.uint8), "uint8_t"),
    (lambda: ember.full((2,), 255.5, dtype=ember.uint8), "uint8_t"),
    (lambda: ember.tensor([1, 2], dtype=ember.int8).fill_(1000), "int8_t"),
    (lambda: ember.tensor([1, 2], dtype=ember.int8).fill_(-129), "int8_t"),
    (lambda: ember.tensor([1, 2], dtype=ember.int8).fill_(1000.0), "int8_t"),
    (lambda: ember.full((2,), 40000, dtype=ember.int16), "int16_t"),
    (lambda: ember.full((2,), 1e10, dtype=ember.int32), "int"),
    (lambda: ember.full((2,), 2**40, dtype=ember.int32), "int"),
    (lambda: ember.full((2,), float("nan"), dtype=ember.int32), "int"),
    (lambda: ember.full((2,), float("inf"), dtype=ember.int32), "int"),
    (lambda: ember.full((2,), 1 + 1j, dtype=ember.int32), "int"),
    (lambda: ember.full((2,), 1e300, dtype=ember.int64), "int64_t"),
    (lambda: ember.full((2,), 1e300, dtype=ember.float32), "float"),
    (lambda: ember.full((2,), 70000, dtype=ember.float16), r"c10::Half"),
    (lambda: ember.full((2,), 1e39, dtype=ember.complex64), r"c10::complex<float>"),
    (lambda: ember.full_like(ember.zeros(2, dtype=ember.uint8), 300), "uint8_t"),
    (lambda: ember.zeros(2, dtype=ember.uint8).masked_fill(ember.tensor([True, False]), 300), "uint8_t"),
    (lambda: ember.zeros(2, dtype=ember.uint8).index_fill(0, idx([0]), 300), "uint8_t"),
    (lambda: ember.tensor([1, 2], dtype=ember.int8).add(ember.tensor([1, 2], dtype=ember.int8), alpha=1000),
     "int8_t"),
])
def test_python_number_that_does_not_fit_raises(call, ctype):
    with pytest.raises(RuntimeError, match=overflow(ctype)):
        call()


@pytest.mark.parametrize("call, name", [
    (lambda: ember.tensor([300], dtype=ember.uint8), "uint8"),
    (lambda: ember.tensor(300, dtype=ember.uint8), "uint8"),
    (lambda: ember.tensor([[1, 300]], dtype=ember.uint8), "uint8"),
    (lambda: ember.tensor([-256], dtype=ember.uint8), "uint8"),
    (lambda: ember.tensor([-0.5], dtype=ember.uint8), "uint8"),
    (lambda: ember.tensor([1000], dtype=ember.int8), "int8"),
    (lambda: ember.tensor([1e10], dtype=ember.int32), "int32"),
    (lambda: ember.tensor([float("nan")], dtype=ember.int32), "int32"),
    (lambda: ember.as_tensor([300], dtype=ember.uint8), "uint8"),
])
def test_tensor_from_python_numbers_checks_integer_range(call, name):
    with pytest.raises(RuntimeError, match=overflow(name)):
        call()


def test_tensor_from_python_numbers_that_pytorch_accepts():
    assert ember.tensor([-1], dtype=ember.uint8).tolist() == [255]
    assert ember.tensor([1.5], dtype=ember.int32).tolist() == [1]
    assert ember.tensor([1e300]).tolist() == [float("inf")]  # float dtypes are not checked
    assert ember.tensor(np.array([300]), dtype=ember.uint8).tolist() == [44]  # a NumPy array casts, as in PyTorch


def test_python_numbers_that_fit_or_wrap_as_pytorch():
    i8 = ember.tensor([1, 2], dtype=ember.int8)
    np.testing.assert_array_equal(i8.clone().fill_(127).numpy(), [127, 127])
    np.testing.assert_array_equal(i8.clone().fill_(-128).numpy(), [-128, -128])
    # an unsigned dtype also takes -max..-1 as integers, which wrap (PyTorch's rule)
    np.testing.assert_array_equal(ember.full((2,), -1, dtype=ember.uint8).numpy(), [255, 255])
    np.testing.assert_array_equal(ember.full((1,), 255.0, dtype=ember.uint8).numpy(), [255])
    np.testing.assert_array_equal(ember.full((1,), 2, dtype=ember.bool).numpy(), [True])
    assert ember.full((1,), float("inf"), dtype=ember.float32).item() == float("inf")
    assert ember.full((1,), 1e300, dtype=ember.bfloat16).float().item() == float("inf")
    assert np.isnan(ember.full((1,), float("nan"), dtype=ember.float16).float().item())
    # a number mixed into arithmetic is not checked, as in PyTorch: the result wraps
    np.testing.assert_array_equal((i8 + 1000).numpy(), [-23, -22])
    np.testing.assert_array_equal((i8 * 1000).numpy(), [-24, -48])


# ---- pooling and convolution geometry ---------------------------------------------------------------
# PyTorch's RuntimeError (its message; where PyTorch words one check differently for 1-d, 2-d and
# 3-d, Ember uses one of its wordings), never a ZeroDivisionError from Python arithmetic.

def img():
    return ember.ones(1, 2, 5, 5)


def w33():
    return ember.ones(3, 2, 3, 3)


@pytest.mark.parametrize("call, message", [
    (lambda: F.max_pool2d(img(), 2, stride=0), r"stride must be greater than zero, but got \[0, 0\]"),
    (lambda: F.max_pool1d(ember.ones(1, 2, 5), 0), r"kernel_size must be greater than zero, but got \[0\]"),
    (lambda: F.max_pool3d(ember.ones(1, 2, 4, 4, 4), -1), r"kernel_size must be greater than zero"),
    (lambda: F.max_pool2d(img(), 9), r"Given input size: \(2x5x5\). Calculated output size: \(2x0x0\). Output size "
                                     r"is too small"),
    (lambda: F.max_pool2d(img(), 2, padding=-1), r"pad must be non-negative, but got pad"),
    (lambda: F.max_pool2d(img(), 2, padding=2), r"pad should be at most half of effective kernel size, but got pad=2, "
                                                r"kernel_size=2 and dilation=1"),
    (lambda: F.max_pool2d(img(), 2, dilation=0), r"dilation must be greater than zero"),
    (lambda: F.avg_pool2d(img(), 2, stride=0), r"stride must be greater than zero"),
    (lambda: F.avg_pool1d(ember.ones(1, 2, 5), 2, stride=0), r"stride must be greater than zero"),
    (lambda: F.avg_pool3d(ember.ones(1, 2, 4, 4, 4), 2, padding=2), r"pad should be at most half of effective kernel"),
    (lambda: F.avg_pool2d(img(), 2, divisor_override=0), r"divisor must be not zero"),
    (lambda: F.lp_pool2d(img(), 2.0, 2, 0), r"stride must be greater than zero"),
    (lambda: F.adaptive_avg_pool2d(img(), -1), r"elements of output_size must be greater than or equal to 0"),
    (lambda: F.adaptive_max_pool2d(img(), (2, -1)), r"elements of output_size must be greater than or equal to 0"),
    (lambda: F.max_unpool2d(*F.max_pool2d(img(), 2, return_indices=True), 2, stride=0),
     r"kernel_size and strides should be greater than zero"),
    (lambda: F.max_unpool1d(*F.max_pool1d(ember.ones(1, 2, 4), 2, return_indices=True), 0),
     r"kernel_size and strides should be greater than zero"),
    (lambda: F.conv2d(img(), w33(), stride=0), r"non-positive stride is not supported"),
    (lambda: F.conv1d(ember.ones(1, 2, 5), ember.ones(3, 2, 3), stride=-1), r"non-positive stride is not supported"),
    (lambda: F.conv2d(img(), w33(), padding=-1), r"negative padding is not supported"),
    (lambda: F.conv2d(img(), w33(), dilation=0), r"dilation should be greater than zero, but got \[0, 0\]"),
    (lambda: F.conv2d(ember.ones(1, 2, 2, 2), w33()), r"Calculated padded input size per channel: \(2 x 2\). Kernel "
                                                      r"size: \(3 x 3\). Kernel size can't be greater than actual "
                                                      r"input size"),
    (lambda: F.conv2d(img(), w33(), groups=0), r"non-positive groups is not supported"),
    (lambda: F.conv_transpose2d(img(), ember.ones(2, 3, 3, 3), groups=0), r"non-positive groups is not supported"),
    (lambda: F.conv_transpose2d(img(), ember.ones(2, 3, 3, 3), stride=0), r"non-positive stride is not supported"),
    (lambda: F.conv_transpose2d(img(), ember.ones(2, 3, 3, 3), output_padding=1),
     r"output padding must be smaller than either stride or dilation"),
    (lambda: F.conv_transpose2d(img(), ember.ones(2, 3, 3, 3), padding=5),
     r"Given input size per channel: \(5 x 5\). Calculated output size per channel: \(-3 x -3\). Output size is "
     r"too small"),
    (lambda: F.unfold(img(), 2, stride=0), r"stride should be greater than zero, but got stride_height: 0 "
                                           r"stride_width: 0"),
    (lambda: F.unfold(img(), 0), r"kernel size should be greater than zero, but got kernel_height: 0 kernel_width: 0"),
    (lambda: F.unfold(img(), 2, padding=-1), r"padding should be non-negative, but got pad_height: -1 pad_width: -1"),
    (lambda: F.unfold(img(), 2, dilation=0), r"dilation should be greater than zero, but got dilation_height: 0 "
                                             r"dilation_width: 0"),
    (lambda: F.unfold(img(), 9), r"calculated shape of the array of sliding blocks as \(-3, -3\), but its components "
                                 r"must be at least one"),
    (lambda: F.fold(ember.ones(1, 8, 16), (5, 5), 2, stride=0), r"stride should be greater than zero"),
    (lambda: F.fold(ember.ones(1, 8, 16), (5, 5), 0), r"kernel size should be greater than zero"),
    (lambda: F.interpolate(img(), size=0), r"Input and output sizes should be greater than 0, but got input "
                                           r"\(H: 5, W: 5\) output \(H: 0, W: 0\)"),
    (lambda: F.interpolate(img(), scale_factor=-1.0), r"Input and output sizes should be greater than 0"),
    (lambda: F.pixel_shuffle(img(), 0), r"pixel_shuffle expects a positive upscale_factor, but got 0"),
    (lambda: img().unfold(2, 2, 0), r"step is 0 but must be > 0"),
    (lambda: F.conv2d(img(), w33(), stride=(1, 1, 1)), r"stride must be an int or a tuple of 2 ints"),
    (lambda: F.max_pool2d(img(), (2, 2, 2)), r"kernel_size must be an int or a tuple of 2 ints"),
])
def test_bad_geometry_raises_runtime_error(call, message):
    with pytest.raises(RuntimeError, match=message):
        call()


def test_lp_pool_norm_zero_is_a_value_error():
    # PyTorch raises ZeroDivisionError here; a geometry-like argument gets a ValueError instead
    with pytest.raises(ValueError, match=r"lp_pool2d: norm_type must be non-zero, but got 0"):
        F.lp_pool2d(img(), 0, 2)


# ---- read-only NumPy memory ----------------------------------------------------------------------

READ_ONLY = r"read-only NumPy array"


def read_only_tensor():
    a = np.arange(6.0)
    a.flags.writeable = False
    return a, ember.from_numpy(a)


@pytest.mark.parametrize("write", [
    lambda t: t.add_(1),
    lambda t: t.mul_(2),
    lambda t: t.fill_(0),
    lambda t: t.zero_(),
    lambda t: t.copy_(ember.ones(6, dtype=ember.float64)),
    lambda t: t.__setitem__(0, 1.0),
    lambda t: t.__setitem__(idx([0, 1]), 1.0),
    lambda t: t.index_put_((idx([0]),), ember.tensor(1.0, dtype=ember.float64)),
    lambda t: t.scatter_(0, idx([0]), ember.ones(1, dtype=ember.float64)),
    lambda t: t.clamp_(0, 1),
    lambda t: t.uniform_(),
    lambda t: t.__iadd__(1),
    lambda t: ember.add(ember.ones(6, dtype=ember.float64), 1, out=t),
    lambda t: t[1:].mul_(2),  # a view knows too
    lambda t: t.view(2, 3).t().relu_(),
    lambda t: t.detach().neg_(),
])
def test_writes_to_read_only_numpy_memory_raise(write):
    a, t = read_only_tensor()
    with pytest.raises(RuntimeError, match=READ_ONLY):
        write(t)
    np.testing.assert_array_equal(a, np.arange(6.0))


def test_read_only_tensor_reads_and_copies_freely():
    a, t = read_only_tensor()
    assert (t + 1).sum().item() == 21.0
    c = t.clone()
    c.add_(1)  # a copy is writable
    np.testing.assert_array_equal(c.numpy(), a + 1)
    assert not t.numpy().flags.writeable  # numpy() hands back a read-only array again
    w = np.arange(3.0)
    ember.from_numpy(w).add_(1)  # a writable array stays writable
    np.testing.assert_array_equal(w, [1.0, 2.0, 3.0])


def test_read_only_memmap(tmp_path):
    path = tmp_path / "m.bin"
    np.arange(4, dtype=np.float32).tofile(path)
    m = np.memmap(path, dtype=np.float32, mode="r")
    t = ember.from_numpy(m)
    assert t.sum().item() == 6.0
    with pytest.raises(RuntimeError, match=READ_ONLY):
        t.mul_(2)
    np.testing.assert_array_equal(np.fromfile(path, dtype=np.float32), [0, 1, 2, 3])


# ---- float8_e4m3fn ----------------------------------------------------------------------------------

def test_float8_e4m3fn_saturates_as_pytorch():
    values = [1000.0, 449.0, 464.0, 465.0, 480.0, float("inf"), -float("inf"), -1000.0, 448.0, 447.0, 2.0**-10,
              -0.0, 1e30, float("nan")]
    expected = [448.0, 448.0, 448.0, 448.0, 448.0, 448.0, -448.0, -448.0, 448.0, 448.0, 0.0, -0.0, 448.0]
    for src in (ember.float32, ember.float64, ember.float16, ember.bfloat16):
        got = ember.tensor(values, dtype=ember.float64).to(src).to(ember.float8_e4m3fn).to(ember.float64)
        np.testing.assert_array_equal(got.numpy()[:-1], expected)
        assert np.isnan(got.numpy()[-1])
    assert ember.tensor([1000, 100000]).to(ember.float8_e4m3fn).float().tolist() == [448.0, 448.0]
    # e5m2 has an infinity and keeps it
    e5 = ember.tensor([1000.0, float("inf"), 1e30, 100000.0]).to(ember.float8_e5m2).float().tolist()
    assert e5 == [1024.0, float("inf"), float("inf"), float("inf")]
