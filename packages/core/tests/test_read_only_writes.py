"""Every entry point that writes into a caller's tensor refuses the memory of a read-only NumPy
array (Note [read-only storage]) with one exception type and message, and writes nothing.

The entry points are enumerated, not listed by hand: every op of the op database (ember/opdb.json)
with `out=`, with an in-place `Tensor.<name>_` or whose name ends in `_`; every `Tensor` method
ending in `_`; every Python function of ember, ember.linalg, ember.fft, ember.special and
ember.nn.functional taking `out`; every `nn.functional` function taking `inplace`; every
`nn.init` function; every `ember.optim` optimizer in each of its step implementations. Pointwise
ops get their arguments from their op-database family; the others need a row in CASES below, and
test_every_entry_point_has_a_case fails for a new one until it has one (or a reason in
NOT_WRITES). Each case is first run on a writable destination, so its arguments are known to be
valid and the refusal is about the memory alone.
"""

from __future__ import annotations

import inspect
import json
import pathlib
import types
from datetime import timedelta

import numpy as np
import pytest

import ember
import ember.distributed as dist
import ember.nn.functional as F
import ember.nn.init as init
from ember import optim

READ_ONLY_MESSAGE = ("[in-place] expected a writable tensor, but this one shares the memory of a read-only NumPy "
                     "array (from_numpy); copy it first (tensor.clone()) or pass a writable array")
RECORDS = json.loads((pathlib.Path(ember.__file__).parent / "opdb.json").read_text())
BY_NAME = {r["name"]: r for r in RECORDS if r["namespace"] == "aten"}
AUTO_FAMILIES = {"unary", "binary", "compare"}
# The destination dtype per op-database dtype group: one its ops all accept.
GROUP_DTYPE = {"float": np.float32, "numeric": np.float32, "integral": np.int32, "bool_int": np.int32,
               "all": np.float32}
FUNCTION_MODULES = [ember, ember.linalg, ember.fft, ember.special, F]

# Methods ending in `_` that write no tensor memory.
NOT_WRITES = {
    "detach_": "detaches from the graph; the data is untouched",
    "requires_grad_": "sets a flag",
    "share_memory_": "moves the storage into shared memory, values unchanged (read-only memory is refused "
                     "with its own message: test_shared_memory.py)",
    # a sparse COO tensor's in-place resizing: a dense tensor refuses it (NotImplementedError)
    **{name: "resizes a sparse tensor; a dense one raises NotImplementedError" for name in (
        "resize_as_sparse_", "sparse_resize_", "sparse_resize_and_clear_")},
    # in-place view ops: they change the tensor's shape, strides or storage, never an element
    **{name: "changes the view; the data is untouched" for name in (
        "as_strided_", "resize_", "resize_as_", "set_", "squeeze_", "swapaxes_", "swapdims_", "t_", "transpose_",
        "unsqueeze_")},
}


def ones(*shape, dtype=ember.float32):
    return ember.ones(*shape, dtype=dtype)


def idx(values):
    return ember.tensor(values, dtype=ember.int64)


def mask(*shape):
    return ember.ones(*shape, dtype=ember.bool)


SPD = ember.eye(3) * 2  # symmetric positive definite, so every linalg function is defined on it

# name -> (destination shape, destination NumPy dtype, call(dest)). Keys: an op-database or Tensor
# method name as is ("index_add_"), "out:<module>.<name>" for `out=` of a Python function,
# "inplace:<name>" for nn.functional, "init:<name>", "optim:<class>[:<variant>]".
CASES = {
    # op-database ops outside the pointwise families
    "out:ember.addbmm": ((3, 4), np.float32, lambda o: ember.addbmm(ones(3, 4), ones(2, 3, 2), ones(2, 2, 4), out=o)),
    "out:ember.addmm": ((3, 4), np.float32, lambda o: ember.addmm(ones(3, 4), ones(3, 2), ones(2, 4), out=o)),
    "out:ember.addmv": ((3,), np.float32, lambda o: ember.addmv(ones(3), ones(3, 2), ones(2), out=o)),
    "out:ember.baddbmm": ((2, 3, 4), np.float32,
                          lambda o: ember.baddbmm(ones(2, 3, 4), ones(2, 3, 2), ones(2, 2, 4), out=o)),
    "out:ember.bmm": ((2, 3, 4), np.float32, lambda o: ember.bmm(ones(2, 3, 2), ones(2, 2, 4), out=o)),
    "out:ember.clamp": ((3, 4), np.float32, lambda o: ember.clamp(ones(3, 4), 0, 1, out=o)),
    "out:ember.dot": ((), np.float32, lambda o: ember.dot(ones(3), ones(3), out=o)),
    "out:ember.vdot": ((), np.float32, lambda o: ember.vdot(ones(3), ones(3), out=o)),
    "out:ember.matmul": ((3, 4), np.float32, lambda o: ember.matmul(ones(3, 2), ones(2, 4), out=o)),
    "out:ember.mm": ((3, 4), np.float32, lambda o: ember.mm(ones(3, 2), ones(2, 4), out=o)),
    "out:ember.mv": ((3,), np.float32, lambda o: ember.mv(ones(3, 2), ones(2), out=o)),
    "out:ember.i0": ((3,), np.float32, lambda o: ember.i0(ones(3), out=o)),
    "out:ember.special_i0e": ((3,), np.float32, lambda o: ember.special.i0e(ones(3), out=o)),
    "out:ember.special_i1": ((3,), np.float32, lambda o: ember.special.i1(ones(3), out=o)),
    "out:ember.special_i1e": ((3,), np.float32, lambda o: ember.special.i1e(ones(3), out=o)),
    # ember.special's Python functions of two arguments and its aliases with out=
    **{f"out:ember.special.{name}": ((3,), np.float32, (lambda fn: lambda o: fn(ones(3) * 2, ones(3), out=o))(
        getattr(ember.special, name))) for name in (
        "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
        "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
        "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
        "legendre_polynomial_p", "xlog1py", "xlogy", "zeta", "gammainc", "gammaincc")},
    "out:ember.special.logit": ((3,), np.float32, lambda o: ember.special.logit(ones(3) * 0.5, out=o)),
    "out:ember.special.logsumexp": ((3,), np.float32, lambda o: ember.special.logsumexp(ones(3, 2), 1, out=o)),
    "out:ember.special.multigammaln": ((3,), np.float32, lambda o: ember.special.multigammaln(ones(3) * 3, 2, out=o)),
    "out:ember.special.polygamma": ((3,), np.float32, lambda o: ember.special.polygamma(1, ones(3), out=o)),
    "out:ember.signbit": ((3,), np.bool_, lambda o: ember.signbit(ones(3), out=o)),
    "out:ember.bitwise_left_shift": ((3,), np.int32,
                                     lambda o: ember.bitwise_left_shift(ones(3, dtype=ember.int32), 1, out=o)),
    "out:ember.bitwise_right_shift": ((3,), np.int32,
                                      lambda o: ember.bitwise_right_shift(ones(3, dtype=ember.int32), 1, out=o)),
    # in-place methods and `_` ops
    "clamp_": ((3,), np.float32, lambda t: t.clamp_(0, 1)),
    "clip_": ((3,), np.float32, lambda t: t.clip_(0, 1)),
    "clamp_max_": ((3,), np.float32, lambda t: t.clamp_max_(1)),
    "clamp_min_": ((3,), np.float32, lambda t: t.clamp_min_(0)),
    "i0_": ((3,), np.float32, lambda t: t.i0_()),
    "bitwise_left_shift_": ((3,), np.int32, lambda t: t.bitwise_left_shift_(1)),
    "bitwise_right_shift_": ((3,), np.int32, lambda t: t.bitwise_right_shift_(1)),
    "addbmm_": ((3, 4), np.float32, lambda t: t.addbmm_(ones(2, 3, 2), ones(2, 2, 4))),
    "addmm_": ((3, 4), np.float32, lambda t: t.addmm_(ones(3, 2), ones(2, 4))),
    "baddbmm_": ((2, 3, 4), np.float32, lambda t: t.baddbmm_(ones(2, 3, 2), ones(2, 2, 4))),
    "addcdiv_": ((3,), np.float32, lambda t: t.addcdiv_(ones(3), ones(3))),
    "addcmul_": ((3,), np.float32, lambda t: t.addcmul_(ones(3), ones(3))),
    "copy_": ((3,), np.float32, lambda t: t.copy_(ones(3))),
    "fill_": ((3,), np.float32, lambda t: t.fill_(2)),
    "zero_": ((3,), np.float32, lambda t: t.zero_()),
    "fill_diagonal_": ((3, 3), np.float32, lambda t: t.fill_diagonal_(2)),
    "cumsum_": ((3,), np.float32, lambda t: t.cumsum_(0)),
    "cumprod_": ((3,), np.float32, lambda t: t.cumprod_(0)),
    "index_put_": ((3,), np.float32, lambda t: t.index_put_((idx([0]),), ones(1))),
    "index_add_": ((3, 2), np.float32, lambda t: t.index_add_(0, idx([0, 2]), ones(2, 2))),
    "index_copy_": ((3, 2), np.float32, lambda t: t.index_copy_(0, idx([0, 2]), ones(2, 2))),
    "index_fill_": ((3, 2), np.float32, lambda t: t.index_fill_(0, idx([0, 2]), 2.0)),
    "masked_fill_": ((3,), np.float32, lambda t: t.masked_fill_(mask(3), 2.0)),
    "masked_scatter_": ((3,), np.float32, lambda t: t.masked_scatter_(mask(3), ones(3))),
    "scatter_": ((2, 3), np.float32, lambda t: t.scatter_(0, idx([[0, 1, 0]]), ones(1, 3))),
    "scatter_add_": ((2, 3), np.float32, lambda t: t.scatter_add_(0, idx([[0, 1, 0]]), ones(1, 3))),
    "scatter_reduce_": ((2, 3), np.float32, lambda t: t.scatter_reduce_(0, idx([[0, 1, 0]]), ones(1, 3), "amax")),
    "pow_": ((3,), np.float32, lambda t: t.pow_(2)),
    "float_power_": ((3,), np.float64, lambda t: t.float_power_(2)),
    "relu_": ((3,), np.float32, lambda t: t.relu_()),
    "uniform_": ((3,), np.float32, lambda t: t.uniform_()),
    "normal_": ((3,), np.float32, lambda t: t.normal_()),
    "bernoulli_": ((3,), np.float32, lambda t: t.bernoulli_(0.5)),
    "cauchy_": ((3,), np.float32, lambda t: t.cauchy_()),
    "exponential_": ((3,), np.float32, lambda t: t.exponential_()),
    "geometric_": ((3,), np.float32, lambda t: t.geometric_(0.5)),
    "log_normal_": ((3,), np.float32, lambda t: t.log_normal_()),
    "random_": ((3,), np.float32, lambda t: t.random_(0, 4)),
    "embedding_renorm_": ((3, 2), np.float32, lambda t: ember.embedding_renorm_(t, idx([0]), 0.5, 2.0)),
    "_fused_sgd_": ((3,), np.float32, lambda p: ember._C._fused_sgd_(
        [p], [ones(3)], [], weight_decay=0.0, momentum=0.0, lr=0.1, dampening=0.0, nesterov=False,
        maximize=False, is_first_step=False)),
    "_fused_adam_": ((3,), np.float32, lambda p: ember._C._fused_adam_(
        [p], [ones(3)], [ember.zeros(3)], [ember.zeros(3)], [], [ember.zeros(())], lr=0.1, beta1=0.9,
        beta2=0.999, weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)),
    "_fused_adagrad_": ((3,), np.float32, lambda p: ember._C._fused_adagrad_(
        [p], [ones(3)], [ember.zeros(3)], [ember.zeros(())], lr=0.1, lr_decay=0.0, weight_decay=0.0, eps=1e-10,
        maximize=False)),
    "_fused_rmsprop_": ((3,), np.float32, lambda p: ember._C._fused_rmsprop_(
        [p], [ones(3)], [ember.zeros(3)], [], [], [ember.zeros(())], lr=0.1, alpha=0.99, eps=1e-8,
        weight_decay=0.0, momentum=0.0, centered=False, maximize=False)),
    # Python functions with out=
    "out:ember.chain_matmul": ((3, 3), np.float32, lambda o: ember.chain_matmul(ones(3, 3), ones(3, 3), out=o)),
    "out:ember.cross": ((2, 3), np.float32, lambda o: ember.cross(ones(2, 3), ones(2, 3), out=o)),
    "out:ember.matrix_power": ((3, 3), np.float32, lambda o: ember.matrix_power(ones(3, 3), 2, out=o)),
    "out:ember.pow": ((3,), np.float32, lambda o: ember.pow(ones(3), 2, out=o)),
    "out:ember.tensordot": ((3, 3), np.float32, lambda o: ember.tensordot(ones(3, 3), ones(3, 3), dims=1, out=o)),
    "out:ember.linalg.cholesky": ((3, 3), np.float32, lambda o: ember.linalg.cholesky(SPD, out=o)),
    "out:ember.linalg.cond": ((), np.float32, lambda o: ember.linalg.cond(SPD, out=o)),
    "out:ember.linalg.cross": ((2, 3), np.float32, lambda o: ember.linalg.cross(ones(2, 3), ones(2, 3), out=o)),
    "out:ember.linalg.det": ((), np.float32, lambda o: ember.linalg.det(SPD, out=o)),
    "out:ember.linalg.eigvals": ((3,), np.complex64, lambda o: ember.linalg.eigvals(SPD, out=o)),
    "out:ember.linalg.eigvalsh": ((3,), np.float32, lambda o: ember.linalg.eigvalsh(SPD, out=o)),
    "out:ember.linalg.householder_product": (
        (3, 3), np.float32, lambda o: ember.linalg.householder_product(SPD, ones(3) * 0.5, out=o)),
    "out:ember.linalg.inv": ((3, 3), np.float32, lambda o: ember.linalg.inv(SPD, out=o)),
    "out:ember.linalg.ldl_solve": ((3, 1), np.float32, lambda o: ember.linalg.ldl_solve(
        *ember.linalg.ldl_factor(SPD), ones(3, 1), out=o)),
    "out:ember.linalg.lu_solve": ((3, 1), np.float32, lambda o: ember.linalg.lu_solve(
        *ember.linalg.lu_factor(SPD), ones(3, 1), out=o)),
    "out:ember.linalg.matmul": ((3, 3), np.float32, lambda o: ember.linalg.matmul(ones(3, 3), ones(3, 3), out=o)),
    "out:ember.linalg.matrix_norm": ((), np.float32, lambda o: ember.linalg.matrix_norm(SPD, out=o)),
    "out:ember.linalg.matrix_power": ((3, 3), np.float32, lambda o: ember.linalg.matrix_power(SPD, 2, out=o)),
    "out:ember.linalg.matrix_rank": ((), np.int64, lambda o: ember.linalg.matrix_rank(SPD, out=o)),
    "out:ember.linalg.multi_dot": ((3, 3), np.float32,
                                   lambda o: ember.linalg.multi_dot([ones(3, 3), ones(3, 3)], out=o)),
    "out:ember.linalg.norm": ((), np.float32, lambda o: ember.linalg.norm(SPD, out=o)),
    "out:ember.linalg.pinv": ((3, 3), np.float32, lambda o: ember.linalg.pinv(SPD, out=o)),
    "out:ember.linalg.solve": ((3,), np.float32, lambda o: ember.linalg.solve(SPD, ones(3), out=o)),
    "out:ember.linalg.solve_triangular": ((3, 1), np.float32, lambda o: ember.linalg.solve_triangular(
        SPD, ones(3, 1), upper=True, out=o)),
    "out:ember.linalg.svdvals": ((3,), np.float32, lambda o: ember.linalg.svdvals(SPD, out=o)),
    "out:ember.linalg.vecdot": ((), np.float32, lambda o: ember.linalg.vecdot(ones(3), ones(3), out=o)),
    "out:ember.linalg.vector_norm": ((), np.float32, lambda o: ember.linalg.vector_norm(ones(3), out=o)),
    "out:ember.nn.functional.normalize": ((3, 3), np.float32, lambda o: F.normalize(ones(3, 3), out=o)),
}


# names from the wider PyTorch surface (issue 18): Python composites writing through copy_/out=
CASES.update({
    "addmv_": ((3,), np.float32, lambda t: t.addmv_(ones(3, 2), ones(2))),
    "addr_": ((3, 2), np.float32, lambda t: t.addr_(ones(3), ones(2))),
    "apply_": ((3,), np.float32, lambda t: t.apply_(lambda v: v * 2)),
    "conj_physical_": ((3,), np.complex64, lambda t: t.conj_physical_()),
    "heaviside_": ((3,), np.float32, lambda t: t.heaviside_(ones(3))),
    "igamma_": ((3,), np.float32, lambda t: t.igamma_(ones(3))),
    "igammac_": ((3,), np.float32, lambda t: t.igammac_(ones(3))),
    "index_reduce_": ((3, 2), np.float32, lambda t: t.index_reduce_(0, idx([0, 2]), ones(2, 2), "prod")),
    "ldexp_": ((3,), np.float32, lambda t: t.ldexp_(ones(3))),
    "lerp_": ((3,), np.float32, lambda t: t.lerp_(ones(3), 0.5)),
    "logit_": ((3,), np.float32, lambda t: t.logit_()),
    "map_": ((3,), np.float32, lambda t: t.map_(ones(3), lambda a, b: a + b)),
    "map2_": ((3,), np.float32, lambda t: t.map2_(ones(3), ones(3), lambda a, b, c: a + b + c)),
    "mvlgamma_": ((3,), np.float32, lambda t: t.mvlgamma_(1)),
    "nan_to_num_": ((3,), np.float32, lambda t: t.nan_to_num_()),
    "nextafter_": ((3,), np.float32, lambda t: t.nextafter_(ones(3))),
    "polygamma_": ((3,), np.float32, lambda t: t.polygamma_(1)),
    "put_": ((3,), np.float32, lambda t: t.put_(idx([0]), ones(1))),
    "renorm_": ((3, 2), np.float32, lambda t: t.renorm_(2, 0, 1.0)),
    "sgn_": ((3,), np.float32, lambda t: t.sgn_()),
    "tril_": ((3, 3), np.float32, lambda t: t.tril_()),
    "triu_": ((3, 3), np.float32, lambda t: t.triu_()),
    "out:ember.addr": ((3, 2), np.float32, lambda o: ember.addr(ones(3, 2), ones(3), ones(2), out=o)),
    "out:ember.cholesky": ((3, 3), np.float32, lambda o: ember.cholesky(SPD, out=o)),
    "out:ember.cholesky_inverse": ((3, 3), np.float32,
                                   lambda o: ember.cholesky_inverse(ember.linalg.cholesky(SPD), out=o)),
    "out:ember.cholesky_solve": ((3, 1), np.float32,
                                 lambda o: ember.cholesky_solve(ones(3, 1), ember.linalg.cholesky(SPD), out=o)),
    "out:ember.column_stack": ((3, 2), np.float32, lambda o: ember.column_stack([ones(3), ones(3)], out=o)),
    "out:ember.geqrf": ((3, 3), np.float32, lambda o: ember.geqrf(SPD, out=(o, ember.empty(3)))),
    "out:ember.igamma": ((3,), np.float32, lambda o: ember.igamma(ones(3), ones(3), out=o)),
    "out:ember.igammac": ((3,), np.float32, lambda o: ember.igammac(ones(3), ones(3), out=o)),
    "out:ember.inverse": ((3, 3), np.float32, lambda o: ember.inverse(SPD, out=o)),
    "out:ember.isneginf": ((3,), np.bool_, lambda o: ember.isneginf(ones(3), out=o)),
    "out:ember.isposinf": ((3,), np.bool_, lambda o: ember.isposinf(ones(3), out=o)),
    "out:ember.ldexp": ((3,), np.float32, lambda o: ember.ldexp(ones(3), ones(3), out=o)),
    "out:ember.linalg.inv_ex": ((3, 3), np.float32, lambda o: ember.linalg.inv_ex(
        SPD, out=(o, ember.empty((), dtype=ember.int32)))),
    "out:ember.linalg.solve_ex": ((3,), np.float32, lambda o: ember.linalg.solve_ex(
        SPD, ones(3), out=(o, ember.empty((), dtype=ember.int32)))),
    "out:ember.linalg.tensorinv": ((3, 3), np.float32, lambda o: ember.linalg.tensorinv(SPD, ind=1, out=o)),
    "out:ember.linalg.tensorsolve": ((3,), np.float32, lambda o: ember.linalg.tensorsolve(SPD, ones(3), out=o)),
    "out:ember.lu": ((3, 3), np.float32, lambda o: ember.lu(SPD, out=(o, ember.empty(3, dtype=ember.int32)))),
    "out:ember.lu_solve": ((3, 1), np.float32, lambda o: ember.lu_solve(
        ones(3, 1), *ember.linalg.lu_factor(SPD), out=o)),
    "out:ember.mvlgamma": ((3,), np.float32, lambda o: ember.mvlgamma(ones(3) * 2, 1, out=o)),
    "out:ember.nextafter": ((3,), np.float32, lambda o: ember.nextafter(ones(3), ones(3), out=o)),
    "out:ember.orgqr": ((3, 3), np.float32, lambda o: ember.orgqr(*ember.geqrf(SPD), out=o)),
    "out:ember.ormqr": ((3, 3), np.float32, lambda o: ember.ormqr(*ember.geqrf(SPD), ones(3, 3), out=o)),
    "out:ember.polygamma": ((3,), np.float32, lambda o: ember.polygamma(1, ones(3), out=o)),
    "out:ember.qr": ((3, 3), np.float32, lambda o: ember.qr(SPD, out=(o, ember.empty(3, 3)))),
    "out:ember.renorm": ((3, 2), np.float32, lambda o: ember.renorm(ones(3, 2), 2, 0, 1.0, out=o)),
    "out:ember.svd": ((3, 3), np.float32, lambda o: ember.svd(SPD, out=(o, ember.empty(3), ember.empty(3, 3)))),
    "out:ember.triangular_solve": ((3, 1), np.float32, lambda o: ember.triangular_solve(
        ones(3, 1), SPD, out=(o, ember.empty(3, 3)))),
})


def _with(f, *args, **kwargs):
    """A call of `f` on the destination followed by `args` (bound now, not at the loop's end)."""
    return lambda t: f(t, *args, **kwargs)


def _out(f, *args):
    return lambda o: f(*args, out=o)


for _name in ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn"]:
    CASES[f"out:ember.fft.{_name}"] = ((2, 4), np.complex64, _out(getattr(ember.fft, _name), ones(2, 4)))
for _name in ["rfft", "rfft2", "rfftn", "ihfft", "ihfft2", "ihfftn"]:
    CASES[f"out:ember.fft.{_name}"] = ((2, 3), np.complex64, _out(getattr(ember.fft, _name), ones(2, 4)))
for _name in ["irfft", "irfft2", "irfftn", "hfft", "hfft2", "hfftn"]:
    CASES[f"out:ember.fft.{_name}"] = ((2, 4), np.float32,
                                        _out(getattr(ember.fft, _name), ones(2, 3, dtype=ember.complex64)))
for _name in ["relu", "relu6", "elu", "selu", "celu", "leaky_relu", "hardtanh", "hardsigmoid", "hardswish", "silu",
              "mish", "rrelu"]:
    CASES[f"inplace:{_name}"] = ((3, 4), np.float32, _with(getattr(F, _name), inplace=True))
CASES["inplace:threshold"] = ((3, 4), np.float32, _with(F.threshold, 0.5, 2.0, inplace=True))
for _name in ["dropout", "alpha_dropout", "feature_alpha_dropout"]:
    CASES[f"inplace:{_name}"] = ((3, 4), np.float32, _with(getattr(F, _name), 0.5, True, inplace=True))
CASES["inplace:dropout1d"] = ((2, 3, 4), np.float32, _with(F.dropout1d, 0.5, True, inplace=True))
CASES["inplace:dropout2d"] = ((2, 3, 4, 5), np.float32, _with(F.dropout2d, 0.5, True, inplace=True))
CASES["inplace:dropout3d"] = ((2, 3, 4, 5, 6), np.float32, _with(F.dropout3d, 0.5, True, inplace=True))
CASES["__setitem__"] = ((3,), np.float32, lambda t: t.__setitem__(slice(0, 2), 5.0))
# the sparse parts' copies (int64 indices, float32 values) of a 2x3 matrix with two entries
_SPARSE = ember.tensor([[1.0, 0.0, 2.0], [0.0, 0.0, 0.0]])
for _name, _form, _shape, _dtype in (
        ("crow_indices", "to_sparse_csr", (3,), np.int64), ("col_indices", "to_sparse_csr", (2,), np.int64),
        ("ccol_indices", "to_sparse_csc", (4,), np.int64), ("row_indices", "to_sparse_csc", (2,), np.int64),
        ("values", "to_sparse_csr", (2,), np.float32), ("indices", "to_sparse", (2, 2), np.int64)):
    CASES[f"out:ember.{_name}_copy"] = (_shape, _dtype, lambda o, n=_name, f=_form: getattr(ember, f"{n}_copy")(
        getattr(_SPARSE, f)(), out=o))
# augmented assignment: op of `__i<op>__` -> (shape, dtype, call)
AUGMENTED = {op: ((3,), np.float32, lambda t, op=op: getattr(t, f"__i{op}__")(ones(3)))
             for op in ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow"]}
AUGMENTED.update({op: ((3,), np.int32, lambda t, op=op: getattr(t, f"__i{op}__")(ones(3, dtype=ember.int32)))
                  for op in ["and", "or", "xor", "lshift", "rshift"]})
AUGMENTED["matmul"] = ((3, 3), np.float32, lambda t: t.__imatmul__(ones(3, 3)))
INIT_ARGS = {"constant_": (2.0,), "sparse_": (0.5,)}
INIT_SHAPES = {"dirac_": (3, 3, 3)}


def _public_functions_with(parameter: str, modules) -> dict[str, types.FunctionType]:
    found = {}
    for module in modules:
        for name in dir(module):
            f = getattr(module, name)
            # a Python-level function is wrapped for __torch_function__ (ember.overrides)
            if name.startswith("_") or not isinstance(inspect.unwrap(f), types.FunctionType) or name == "write_out":
                continue
            try:
                if parameter in inspect.signature(f).parameters:
                    found[f"{module.__name__}.{name}"] = f
            except (TypeError, ValueError):
                continue
    return found


def _optimizers() -> list[type]:
    return [c for c in vars(optim).values()
            if inspect.isclass(c) and issubclass(c, optim.Optimizer) and c is not optim.Optimizer]


def _optimizer_case(cls: type, variant: str):
    def step(p):
        # SparseAdam takes only sparse gradients (embedding(sparse=True)'s); the others dense ones
        p.grad = ember.ones(p.shape).to_sparse() if cls is optim.SparseAdam else ember.ones(p.shape)
        kwargs = {"lr": 0.1}
        if variant != "default":
            kwargs[variant] = True
        opt = cls([p], **kwargs)
        if cls is optim.LBFGS:
            opt.step(lambda: (p * p).sum())
        else:
            opt.step()
    return ((2, 3) if cls is optim.Muon else (3,), np.float32, step)  # Muon takes matrices only


def _accepts(cls: type, variant: str) -> bool:
    return variant == "default" or variant in inspect.signature(cls.__init__).parameters


def _auto_case(record: dict, how: str):
    """Arguments for a pointwise op from its op-database family: `how` is "out" or "inplace"."""
    dtype = GROUP_DTYPE[record.get("dtypes", "float")]
    operand = ember.from_numpy(np.ones(3, dtype=dtype))
    f = getattr(ember, record["name"])
    n_inputs = 1 if record["family"] == "unary" else 2
    if how == "out":
        out_dtype = np.bool_ if record["family"] == "compare" else dtype
        return ((3,), out_dtype, lambda o: f(*[operand] * n_inputs, out=o))
    method = record["name"] + "_"
    return ((3,), dtype, lambda t: getattr(t, method)(*[operand] * (n_inputs - 1)))


def _record_of(name: str) -> dict | None:
    """The op-database record behind a public name, through aliases (ember.arccos is acos)."""
    if name in BY_NAME:
        return BY_NAME[name]
    f = getattr(ember, name, None)
    real = (getattr(f, "__doc__", "") or "").split("(", 1)[0].strip()
    return BY_NAME.get(real)


def entry_points() -> dict[str, tuple]:
    """Every writing entry point, enumerated, mapped to (shape, dtype, call) or None when it has
    no case yet."""
    found: dict[str, tuple | None] = {}
    for r in RECORDS:
        if r["namespace"] != "aten":
            continue
        if "out=" in r["schema"]:
            key = f"out:ember.{r['name']}"
            found[key] = _auto_case(r, "out") if r["family"] in AUTO_FAMILIES else CASES.get(key)
        if r["inplace"]:
            key = r["name"] + "_"
            found[key] = _auto_case(r, "inplace") if r["family"] in AUTO_FAMILIES else CASES.get(key)
        if r["name"].endswith("_"):
            found[r["name"]] = CASES.get(r["name"])
    for name in dir(ember.Tensor):
        if not name.endswith("_") or name.startswith("_") or name in NOT_WRITES or name in found:
            continue
        record = _record_of(name[:-1])
        if record is not None and record["family"] in AUTO_FAMILIES and record["inplace"]:
            found[name] = _auto_case(record, "inplace")
        else:
            found[name] = CASES.get(name)
    for name in dir(ember.Tensor):  # augmented assignment: t += x, t @= m, ...
        if name.startswith("__i") and name.endswith("__") and name[3:-2] in AUGMENTED:
            found[name] = AUGMENTED[name[3:-2]]
    found["__setitem__"] = CASES["__setitem__"]
    for key in _public_functions_with("out", FUNCTION_MODULES):
        found.setdefault(f"out:{key}", CASES.get(f"out:{key}"))
    for key in _public_functions_with("inplace", [F]):
        found[f"inplace:{key.rsplit('.', 1)[1]}"] = CASES.get(f"inplace:{key.rsplit('.', 1)[1]}")
    for name in dir(init):
        if name.endswith("_") and not name.startswith("_") and callable(getattr(init, name)):
            found[f"init:{name}"] = (INIT_SHAPES.get(name, (3, 4)), np.float32,
                                     _with(getattr(init, name), *INIT_ARGS.get(name, ())))
    for cls in _optimizers():
        for variant in ("default", "foreach", "fused"):
            if _accepts(cls, variant):
                found[f"optim:{cls.__name__}:{variant}"] = _optimizer_case(cls, variant)
    return found


ENTRY_POINTS = entry_points()


def test_every_entry_point_has_a_case():
    missing = sorted(k for k, v in ENTRY_POINTS.items() if v is None)
    assert not missing, f"writing entry points without a read-only case (add them to CASES): {missing}"
    # the enumeration reaches each kind of entry point
    for key in ["out:ember.add", "add_", "index_add_", "copy_", "_fused_adam_", "out:ember.linalg.inv",
                "out:ember.fft.rfft", "inplace:relu", "init:normal_", "optim:SGD:default", "optim:Adam:fused",
                "__iadd__", "__setitem__"]:
        assert key in ENTRY_POINTS


def _destination(shape, dtype, writable: bool):
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) % 3 + 1
    a = np.array(a.astype(dtype), order="C")  # (ascontiguousarray would make a 0-d array 1-d)
    a.flags.writeable = writable
    t = ember.from_numpy(a)
    return a, t


@pytest.mark.parametrize("key", sorted(k for k, v in ENTRY_POINTS.items() if v is not None))
def test_read_only_destination_is_refused(key):
    shape, dtype, call = ENTRY_POINTS[key]
    _, writable = _destination(shape, dtype, True)
    if key.startswith("optim:"):
        writable = ember.nn.Parameter(writable)
    call(writable)  # the arguments are valid: a writable destination takes the write
    a, t = _destination(shape, dtype, False)
    before = a.copy()
    if key.startswith("optim:"):
        t = ember.nn.Parameter(t)
    with pytest.raises(RuntimeError) as info:
        call(t)
    assert str(info.value) == READ_ONLY_MESSAGE
    np.testing.assert_array_equal(a, before)


# ---- entry points outside the enumeration ------------------------------------------------------------

def _read_only(values, dtype):
    a = np.array(values, dtype=dtype)
    a.flags.writeable = False
    return a, ember.from_numpy(a)


@pytest.mark.parametrize("which", ["indices", "offsets", "warning", "weights"])
def test_bounds_check_indices_refuses_read_only_outputs(which):
    # FBGEMM repairs indices, offsets and per-sample weights in place and counts into warning.
    def args(read_only):
        made = {"indices": ([0, 5, 1], np.int64), "offsets": ([0, 2, 3], np.int64), "warning": ([0], np.int64),
                "weights": ([1.0, 1.0, 1.0], np.float32)}
        out = {k: ember.from_numpy(np.array(v, dtype=d)) for k, (v, d) in made.items()}
        if read_only:
            a, out[which] = _read_only(*made[which])
            return out, a
        return out, None

    rows = idx([4, 4])
    good, _ = args(False)
    ember.ops.fbgemm.bounds_check_indices(rows, good["indices"], good["offsets"], 1, good["warning"],
                                          good["weights"])
    assert good["indices"].tolist() == [0, 0, 1] and good["warning"].tolist() == [1]  # repaired, counted
    bad, a = args(True)
    before = a.copy()
    with pytest.raises(RuntimeError) as info:
        ember.ops.fbgemm.bounds_check_indices(rows, bad["indices"], bad["offsets"], 1, bad["warning"],
                                              bad["weights"])
    assert str(info.value) == READ_ONLY_MESSAGE
    np.testing.assert_array_equal(a, before)


def test_batch_norm_refuses_read_only_running_statistics():
    x = ember.arange(12, dtype=ember.float32).reshape(4, 3)
    for which in ("running_mean", "running_var"):
        a, ro = _read_only([0.0, 0.0, 0.0] if which == "running_mean" else [1.0, 1.0, 1.0], np.float32)
        stats = {"running_mean": ember.zeros(3), "running_var": ember.ones(3), which: ro}
        with pytest.raises(RuntimeError) as info:
            F.batch_norm(x, stats["running_mean"], stats["running_var"], training=True)
        assert str(info.value) == READ_ONLY_MESSAGE
        np.testing.assert_array_equal(a, ro.numpy())
        assert a.tolist() == ([0.0] * 3 if which == "running_mean" else [1.0] * 3)
    # evaluation only reads them
    _, rm = _read_only([0.0, 0.0, 0.0], np.float32)
    _, rv = _read_only([1.0, 1.0, 1.0], np.float32)
    np.testing.assert_allclose(F.batch_norm(x, rm, rv, training=False).numpy(),
                               x.numpy() / np.sqrt(1 + 1e-5), rtol=1e-6)


def test_tbe_fused_backward_refuses_read_only_tables():
    from ember.tbe import (
        ComputeDevice,
        EmbeddingLocation,
        EmbOptimType,
        SplitTableBatchedEmbeddingBagsCodegen,
    )
    tbe = SplitTableBatchedEmbeddingBagsCodegen([(4, 2, EmbeddingLocation.HOST, ComputeDevice.CPU)],
                                                optimizer=EmbOptimType.EXACT_SGD, learning_rate=0.1)
    a = np.ones(8, dtype=np.float32)
    a.flags.writeable = False
    with ember.no_grad():
        tbe.weights_host.data = ember.from_numpy(a)
    out = tbe(idx([0, 1]), idx([0, 2]))
    with pytest.raises(RuntimeError) as info:
        out.sum().backward()
    assert str(info.value) == READ_ONLY_MESSAGE
    np.testing.assert_array_equal(a, np.ones(8, dtype=np.float32))


def test_dlpack_export_of_read_only_memory_is_refused():
    # An unversioned DLPack capsule cannot say "read-only": NumPy refuses its own read-only
    # arrays the same way, so no consumer (ember.from_dlpack included) can write them.
    a, t = _read_only([1.0, 2.0], np.float32)
    for export in (lambda: t.__dlpack__(), lambda: ember.from_dlpack(t), lambda: np.from_dlpack(t)):
        with pytest.raises(BufferError, match=r"\[__dlpack__\] Cannot export a read-only tensor"):
            export()
    copied = ember.from_dlpack(t.__dlpack__(copy=True))  # a copy is writable
    copied.add_(1)
    assert copied.tolist() == [2.0, 3.0] and a.tolist() == [1.0, 2.0]
    assert np.from_dlpack(t.clone()).tolist() == [1.0, 2.0]


@pytest.fixture
def single_process_group():
    if not dist.is_gloo_available():
        pytest.skip("ember was built without Gloo")
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1, timeout=timedelta(seconds=10))
    yield
    dist.destroy_process_group()


@pytest.mark.parametrize("collective", [
    lambda t: dist.all_reduce(t),
    lambda t: dist.broadcast(t, 0),
    lambda t: dist.reduce(t, 0),
    lambda t: dist.scatter(t, [ember.ones(3)], 0),
    lambda t: dist.all_gather([t], ember.ones(3)),
    lambda t: dist.gather(ember.ones(3), [t], 0),
    lambda t: dist.all_gather_into_tensor(t, ember.ones(3)),
    lambda t: dist.reduce_scatter(t, [ember.ones(3)]),
    lambda t: dist.reduce_scatter_tensor(t, ember.ones(3)),
    lambda t: dist.all_to_all_single(t, ember.ones(3)),
    lambda t: dist.all_to_all([t], [ember.ones(3)]),
])
def test_collectives_refuse_read_only_outputs(single_process_group, collective):
    collective(ember.ones(3) * 2)  # valid on a writable tensor
    a, t = _read_only([5.0, 6.0, 7.0], np.float32)
    with pytest.raises(RuntimeError) as info:
        collective(t)
    assert str(info.value) == READ_ONLY_MESSAGE
    assert a.tolist() == [5.0, 6.0, 7.0]
