"""The op database: every op declared in native/ops/declarations.py, from its generated record
(ember/opdb.json in the installed wheel), checked against a float64 NumPy reference.

Samples per op and dtype: contiguous, transposed, stepped, expanded (stride 0), broadcast,
zero-size, 0-dim, and extreme values (inf, nan, -0.0, large, subnormal) for floating dtypes.
"""

from __future__ import annotations

import importlib.util
import json
import math
import pathlib
import warnings
import zlib

import numpy as np
import pytest

import ember

RECORDS = json.loads((pathlib.Path(ember.__file__).parent / "opdb.json").read_text())
# ember.special's float64 references (tests/special_refs.py, loaded by path: tests are no package)
_SPEC = importlib.util.spec_from_file_location("special_refs", pathlib.Path(__file__).with_name("special_refs.py"))
special_refs = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(special_refs)
TESTED_FAMILIES = {"unary", "binary", "compare", "reduction"}

DTYPE_GROUPS = {
    "float": ["float32", "float64", "float16", "bfloat16"],
    "numeric": ["float32", "float64", "float16", "int32", "int64", "uint8"],
    "integral": ["int32", "int64", "uint8", "int8", "int16"],
    "bool_int": ["bool", "int32", "int64", "uint8"],
    "all": ["float32", "float64", "int64", "int32", "bool", "float16"],
}
TOLERANCE = {"float32": 2e-6, "float64": 1e-12, "float16": 2e-3, "bfloat16": 1.6e-2, "complex64": 2e-6,
             "complex128": 1e-12}
EXTREMES = [np.inf, -np.inf, np.nan, -0.0, 0.0, 1e30, -1e30, 1e-40, -1e-40, 3.0, -2.5]


def _erfinv_scalar(y: float) -> float:
    """erfinv by bisection on math.erf / math.erfc (the tail), to float64 resolution."""
    if math.isnan(y) or abs(y) > 1:
        return math.nan
    if abs(y) == 1:
        return math.copysign(math.inf, y)
    if y == 0:
        return y
    a, lo, hi = abs(y), 0.0, 6.0
    for _ in range(200):
        mid = (lo + hi) / 2
        below = math.erf(mid) < a if a <= 0.5 else math.erfc(mid) > 1 - a
        lo, hi = (mid, hi) if below else (lo, mid)
    return math.copysign((lo + hi) / 2, y)


def _digamma_scalar(x: float) -> float:
    """digamma by reflection, the recurrence psi(x) = psi(x+1) - 1/x up to 40 (the kernel stops at
    10) and eight asymptotic terms (the kernel uses seven)."""
    if x == 0:
        return math.copysign(math.inf, -x)
    if math.isnan(x) or x == -math.inf or (x < 0 and x == math.floor(x)):
        return math.nan
    if x == math.inf:
        return math.inf
    if x < 0.5:
        return _digamma_scalar(1 - x) - math.pi / math.tan(math.pi * x)
    shift = 0.0
    while x < 40:
        shift -= 1 / x
        x += 1
    bernoulli = [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510]
    z = 1 / (x * x)
    tail = sum(b / (2 * (k + 1)) * z ** (k + 1) for k, b in enumerate(bernoulli))
    return shift + math.log(x) - 1 / (2 * x) - tail


def erfinv_ref(a):
    return np.vectorize(_erfinv_scalar, otypes=[float])(a)


def digamma_ref(a):
    return np.vectorize(_digamma_scalar, otypes=[float])(a)


def to_numpy(t: ember.Tensor) -> np.ndarray:
    if t.dtype in (ember.bfloat16,):
        t = t.to(ember.float32)
    return t.numpy()


def make(values: np.ndarray, dtype: str) -> ember.Tensor:
    """An ember tensor of `dtype` holding `values` (rounded to that dtype)."""
    if dtype == "bfloat16":
        return ember.tensor(values.astype(np.float32), dtype=ember.bfloat16)
    return ember.from_numpy(np.ascontiguousarray(values.astype(dtype)))


def rounded(t: ember.Tensor) -> np.ndarray:
    """What the tensor holds, exactly, as float64 (or the integer/bool values)."""
    arr = to_numpy(t)
    return arr.astype(np.float64) if arr.dtype.kind == "f" else arr


def draw(rng, shape, dtype, domain=(-3.0, 3.0), small_ints=False):
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype in ("int32", "int64", "int8", "int16"):
        return rng.integers(-3 if small_ints else -50, 4 if small_ints else 50, shape)
    if dtype == "uint8":
        return rng.integers(0, 4 if small_ints else 100, shape)
    if small_ints:
        return rng.integers(-2, 3, shape).astype(np.float64)
    return rng.uniform(domain[0], domain[1], shape)


def layouts(base: ember.Tensor):
    """(name, tensor) views of one (4, 6) base tensor in the layouts the bar asks for."""
    yield "contiguous", base
    yield "transposed", base.t()
    yield "stepped", base[:, ::2]
    yield "expanded", base[:1].expand(3, 6)


def check(out: ember.Tensor, expected: np.ndarray, dtype: str, where: str) -> None:
    got = rounded(out)
    expected = np.asarray(expected)
    assert got.shape == expected.shape, f"{where}: shape {got.shape} != {expected.shape}"
    if got.dtype.kind in "biu" and expected.dtype.kind in "biu":
        np.testing.assert_array_equal(got, expected, err_msg=where)
        return
    tol = TOLERANCE.get(dtype, 1e-12) if got.dtype.kind in "fc" else 0
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(got.astype(expected.dtype) if got.dtype.kind == "b" else got,
                                   expected, rtol=tol, atol=tol, equal_nan=True, err_msg=where)


def reference(rec, **arrays):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return eval(rec["ref"], {"np": np, "math": math, "erfinv_ref": erfinv_ref, "digamma_ref": digamma_ref,  # the ref is declared data, not input
                                 **special_refs.REFS}, arrays)


def cases():
    for rec in RECORDS:
        if rec.get("family") not in TESTED_FAMILIES:
            continue
        for dtype in DTYPE_GROUPS[rec["dtypes"]]:
            yield pytest.param(rec, dtype, id=f"{rec['name']}-{dtype}")
        if rec.get("complex"):
            yield pytest.param(rec, "complex128", id=f"{rec['name']}-complex128")


def expected_result(rec, x, *others):
    """Reference on the exact input values; integers stay integers (as the op's semantics do)."""
    args = {"a": x}
    if others:
        args["b"] = others[0]
    return reference(rec, **args)


def cast_expected(expected, out: ember.Tensor):
    out_np = to_numpy(out)
    if out_np.dtype.kind in "biu":
        return np.asarray(expected).astype(out_np.dtype)
    if out_np.dtype.kind == "c":
        return np.asarray(expected).astype(np.complex128)
    # A reference computed in float64 is compared after rounding to the op's output dtype
    # (exp(100) is inf in float32), the same rounding the tensor went through.
    with np.errstate(all="ignore"):
        return np.asarray(expected, dtype=np.float64).astype(out_np.dtype).astype(np.float64) \
            if out_np.dtype != np.float64 else np.asarray(expected, dtype=np.float64)


def complex_draw(rng, shape):
    return rng.uniform(-2, 2, shape) + 1j * rng.uniform(-2, 2, shape)


@pytest.mark.parametrize("rec, dtype", list(cases()))
def test_op_matches_reference(rec, dtype):
    rng = np.random.default_rng(zlib.crc32(f"{rec['name']}/{dtype}".encode()))  # hash() changes per process
    op = getattr(ember, rec["name"])
    family = rec["family"]
    domain = tuple(rec.get("domain", (-3.0, 3.0)))
    small = family == "compare"
    values = complex_draw(rng, (4, 6)) if dtype.startswith("complex") else draw(rng, (4, 6), dtype, domain, small)
    base = make(values, dtype)

    if family == "unary":
        for name, x in [*layouts(base), ("zero-size", base[:0]), ("0-dim", base[1, 2])]:
            out = op(x)
            check(out, cast_expected(expected_result(rec, rounded(x)), out), dtype, f"{rec['name']} {name}")
        if dtype in ("float32", "float64"):
            x = make(np.array(EXTREMES), dtype)
            out = op(x)
            check(out, cast_expected(expected_result(rec, rounded(x)), out), dtype, f"{rec['name']} extremes")
    elif family in ("binary", "compare"):
        if rec.get("nonzero_rhs") or rec["name"] in ("remainder", "fmod", "floor_divide"):
            other_values = np.where(np.abs(values) < 0.5, 1.5, values)[::-1].copy()
        else:
            other_domain = tuple(rec.get("other_domain") or domain)
            other_values = complex_draw(rng, (4, 6)) if dtype.startswith("complex") else \
                draw(rng, (4, 6), dtype, other_domain, small)
        other = make(other_values, dtype)
        pairs = [(n, x, y) for (n, x), (_, y) in zip(layouts(base), layouts(other), strict=True)]
        pairs += [("broadcast", base[:, :1], other[:1, :]), ("zero-size", base[:0], other[:0]),
                  ("0-dim", base[1, 2], other[0, 1]), ("0-dim with tensor", base[1, 2], other)]
        for name, x, y in pairs:
            out = op(x, y)
            check(out, cast_expected(expected_result(rec, rounded(x), rounded(y)), out), dtype,
                  f"{rec['name']} {name}")
        if dtype in ("float32", "float64"):
            x = make(np.array(EXTREMES), dtype)
            y = make(np.array(EXTREMES[::-1]), dtype)
            out = op(x, y)
            check(out, cast_expected(expected_result(rec, rounded(x), rounded(y)), out), dtype,
                  f"{rec['name']} extremes")
    else:  # reduction
        cube = make(draw(rng, (3, 4, 5), dtype, domain), dtype)
        dims = [0, -1, None] if rec.get("single_dim") else [None, 0, -1, (0, 2)]
        for name, x in [("contiguous", cube), ("transposed", cube.permute(2, 0, 1))]:
            for dim in dims:
                for keepdim in (False, True):
                    if dim is None and rec["name"] == "logsumexp":
                        continue
                    kwargs = {} if dim is None and rec["name"] in ("amax", "amin") else {"dim": dim}
                    out = op(x, keepdim=keepdim, **kwargs)
                    arr = rounded(x)
                    expected = reference(rec, a=arr.astype(np.float64) if arr.dtype.kind == "f" else arr,
                                         dim=dim, keepdim=keepdim)
                    check(out, cast_expected(expected, out), dtype, f"{rec['name']} {name} dim={dim} keepdim={keepdim}")
        if rec["name"] in ("sum", "prod", "all", "any"):
            empty = make(np.zeros((0, 4)), dtype)
            check(op(empty, dim=0), cast_expected(reference(rec, a=rounded(empty), dim=0, keepdim=False), op(empty, dim=0)),
                  dtype, f"{rec['name']} zero-size")
        zero_dim = cube[1, 2, 3]
        if rec["name"] not in ("logsumexp",):
            out = op(zero_dim)
            check(out, cast_expected(reference(rec, a=rounded(zero_dim), dim=None, keepdim=False), out), dtype,
                  f"{rec['name']} 0-dim")


def test_every_declared_op_is_exported_and_registered():
    names = {r["name"] for r in RECORDS}
    assert len(names) == len(RECORDS)
    for r in RECORDS:
        ns, name = r["namespace"], r["name"]
        assert getattr(getattr(ember.ops, ns), name).name == f"{ns}::{name}"
        # aten ops are also ember.<name>; FBGEMM's stay in their namespace, as with fbgemm_gpu
        assert callable(getattr(ember, name)) if ns == "aten" else not hasattr(ember, name), name


def test_records_cover_the_families():
    families = {r["name"]: r["family"] for r in RECORDS}
    assert sum(f in TESTED_FAMILIES for f in families.values()) >= 60
