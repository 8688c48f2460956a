"""Every built-in op of Ember, declared once.

Each `Op` gives the schema (PyTorch's syntax and argument names), whether it is also a Tensor
method and has an in-place `name_` variant, and the hints the op database tests it with.
`native/codegen/gen_ops.py` turns this list into the C++ declarations (ember/ops.h), the
registry entries (ember.ops.aten.<name>), the Python bindings, the type stubs and the op
database records. The C++ function bodies live per family in native/src/ops/<family>/.

Test hints (`test=`):
  family   how samples are made: "unary", "binary", "reduction", "compare", "none" (tested by hand)
  ref      NumPy reference, evaluated in float64: an expression over `np` (a, b are the inputs)
  dtypes   "float" | "numeric" | "integral" | "bool_int" | "all": the dtypes sampled
  domain   (lo, hi) for unary samples
  complex  also sampled with complex inputs; for an op with a pointwise kernel (`kernel=`), also
           whether its entry point and kernel accept complex tensors (the one place that says so)

Pointwise kernels (`kernel=`): an op computed by a unary or binary pointwise kernel of its own
names how its entry point (src/ops/pointwise/pointwise.cpp) computes. gen_ops.py turns these
declarations into the X-macro lists EMBER_FORALL_UNARY_OPS / EMBER_FORALL_BINARY_OPS
(ember/pointwise_ops.h), which give the UnaryOp / BinaryOp enums (CamelCase of the name), the
names errors use, the complex support the entry points and CPU kernels check, and the entry
points themselves. Forms:
  "float"       computed in floating point: integer and bool inputs become the default dtype
  "same"        computed in the inputs' (promoted) dtype
  "float_only"  binary: floating inputs only (NotImplementedError for integers)
  "integral"    integer and bool inputs only
  "predicate"   unary: a bool result (isnan, logical_not)
  "compare"     binary: a bool result (eq, logical_and)
`hand_written=True`: the entry point is written by hand (extra arguments or checks); its facts
still come from the list. `variants`: extra kernel entries of the op (enum names; real inputs
only, named as the op in errors), such as div's rounding modes.

Autocast (`autocast=`): what `ember.autocast("cpu")` does to the op's floating inputs, as
PyTorch's CPU lists: "lower_precision_fp" runs it in the autocast dtype (bfloat16 or float16),
"fp32" in float32, "promote" in the widest input dtype; None leaves the inputs as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Op:
    schema: str
    method: bool = True
    inplace: bool = False
    test: dict = field(default_factory=dict)
    # autocast policy (Note [autocast] in ember/autocast.h): "lower_precision_fp", "fp32", "promote"
    autocast: str | None = None
    # pointwise kernel form (see the module docstring); None: no pointwise kernel of its own
    kernel: str | None = None
    hand_written: bool = False
    variants: tuple[str, ...] = ()
    # quantized tensors (Note [quantized tensors] in ember/quantizer.h): True, the op takes them
    # itself; "<kernel>", they go to ember::quantized::<kernel> (src/ops/quantization/
    # quantized_kernels.cpp); False, the op raises NotImplementedError for one
    quantized: bool | str = False

    @property
    def name(self) -> str:
        return self.schema.split("(", 1)[0].split("::")[-1]


def unary(name: str, ref: str, domain=(-3.0, 3.0), dtypes="float", complex=False, inplace=True,
          kernel: str | None = None, hand_written=False, quantized: bool | str = False) -> Op:
    return Op(f"{name}(Tensor self, *, Tensor? out=None) -> Tensor", inplace=inplace,
              test={"family": "unary", "ref": ref, "domain": domain, "dtypes": dtypes, "complex": complex},
              kernel=kernel, hand_written=hand_written, quantized=quantized)


def binary(name: str, ref: str, dtypes="numeric", complex=False, inplace=True, family="binary",
           kernel: str | None = None, hand_written=False) -> Op:
    return Op(f"{name}(Tensor self, Tensor other, *, Tensor? out=None) -> Tensor", inplace=inplace,
              test={"family": family, "ref": ref, "dtypes": dtypes, "complex": complex},
              kernel=kernel, hand_written=hand_written)


def special(name: str, ref: str, domain=(-3.0, 3.0)) -> Op:
    """An ember.special function of one tensor (a float kernel in src/backend/cpu/special_math.cpp)."""
    return Op(f"special_{name}(Tensor self, *, Tensor? out=None) -> Tensor", method=False, kernel="float",
              test={"family": "unary", "ref": ref, "domain": domain, "dtypes": "float", "complex": False})


def special_binary(name: str, ref: str, domain=(-3.0, 3.0), other_domain=None) -> Op:
    """An ember.special function of two tensors; `other_domain`: where the second input is drawn."""
    return Op(f"special_{name}(Tensor self, Tensor other, *, Tensor? out=None) -> Tensor", method=False,
              kernel="float", test={"family": "binary", "ref": ref, "domain": domain, "dtypes": "float",
                                    "complex": False, "other_domain": other_domain or domain})


_POLYNOMIALS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
                "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
                "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p")
_SPECIAL_NONDIFFERENTIABLE = ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
                              "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
                              "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0",
                              "airy_ai", *_POLYNOMIALS)


def reduction(name: str, ref: str, dtypes="numeric", extra: str = "", dim: str = "int[1]? dim=None",
              autocast: str | None = None, quantized: bool | str = False) -> Op:
    return Op(f"{name}(Tensor self, {dim}, bool keepdim=False{extra}) -> Tensor",
              test={"family": "reduction", "ref": ref, "dtypes": dtypes}, autocast=autocast, quantized=quantized)


OPS: list[Op] = [
    # ---- views and shapes (src/ops/views) -------------------------------------------------
    Op("view(Tensor self, int[] size) -> Tensor", test={"family": "none"}, quantized=True),
    Op("reshape(Tensor self, int[] shape) -> Tensor", test={"family": "none"}, quantized=True),
    Op("flatten(Tensor self, int start_dim=0, int end_dim=-1) -> Tensor", test={"family": "none"}, quantized=True),
    Op("unflatten(Tensor self, int dim, int[] sizes) -> Tensor", test={"family": "none"}, quantized=True),
    Op("permute(Tensor self, int[] dims) -> Tensor", test={"family": "none"}, quantized=True),
    Op("transpose(Tensor self, int dim0, int dim1) -> Tensor", test={"family": "none"}, quantized=True),
    Op("t(Tensor self) -> Tensor", test={"family": "none"}, quantized=True),
    Op("expand(Tensor self, int[] size) -> Tensor", test={"family": "none"}, quantized=True),
    Op("broadcast_to(Tensor self, int[] size) -> Tensor", test={"family": "none"}, quantized=True),
    Op("squeeze(Tensor self, int[]? dim=None) -> Tensor", test={"family": "none"}, quantized=True),
    Op("unsqueeze(Tensor self, int dim) -> Tensor", test={"family": "none"}, quantized=True),
    Op("narrow(Tensor self, int dim, int start, int length) -> Tensor", test={"family": "none"}, quantized=True),
    Op("select(Tensor self, int dim, int index) -> Tensor", test={"family": "none"}, quantized=True),
    Op("slice(Tensor self, int dim=0, int? start=None, int? end=None, int step=1) -> Tensor",
       method=False, test={"family": "none"}, quantized=True),
    Op("unfold(Tensor self, int dimension, int size, int step) -> Tensor", test={"family": "none"}),
    Op("diagonal(Tensor self, int offset=0, int dim1=0, int dim2=1) -> Tensor", test={"family": "none"}),
    Op("movedim(Tensor self, int[] source, int[] destination) -> Tensor", test={"family": "none"}, quantized=True),
    Op("unbind(Tensor self, int dim=0) -> Tensor[]", test={"family": "none"}, quantized=True),
    Op("split(Tensor self, int[] split_size_or_sections, int dim=0) -> Tensor[]", test={"family": "none"}, quantized=True),
    Op("chunk(Tensor self, int chunks, int dim=0) -> Tensor[]", test={"family": "none"}, quantized=True),
    Op("as_strided(Tensor self, int[] size, int[] stride, int? storage_offset=None) -> Tensor",
       test={"family": "none"}, quantized=True),
    Op("detach(Tensor self) -> Tensor", test={"family": "none"}, quantized=True),
    Op("clone(Tensor self) -> Tensor", test={"family": "none"}, quantized=True),
    Op("contiguous(Tensor self) -> Tensor", test={"family": "none"}, quantized=True),
    # ember.contiguous_format / channels_last / channels_last_3d as 0 / 1 / 2 (Note [memory formats])
    Op("to_memory_format(Tensor self, int memory_format, bool copy=False) -> Tensor", method=False,
       test={"family": "none"}),
    Op("to_dtype(Tensor self, ScalarType dtype, bool copy=False) -> Tensor", method=False, test={"family": "none"}),
    Op("copy_(Tensor self, Tensor src) -> Tensor", test={"family": "none"}),
    # ---- creation (src/ops/creation) -------------------------------------------------------
    Op("zeros(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor", method=False,
       test={"family": "none"}),
    Op("ones(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor", method=False,
       test={"family": "none"}),
    Op("full(int[] size, Scalar fill_value, *, ScalarType? dtype=None, Device? device=None) -> Tensor",
       method=False, test={"family": "none"}),
    Op("arange(Scalar start, Scalar? end=None, Scalar step=1, *, ScalarType? dtype=None, Device? device=None)"
       " -> Tensor", method=False, test={"family": "none"}),
    Op("linspace(Scalar start, Scalar end, int steps, *, ScalarType? dtype=None, Device? device=None) -> Tensor",
       method=False, test={"family": "none"}),
    Op("eye(int n, int? m=None, *, ScalarType? dtype=None, Device? device=None) -> Tensor", method=False,
       test={"family": "none"}),
    Op("zeros_like(Tensor self, *, ScalarType? dtype=None) -> Tensor", method=False, test={"family": "none"}),
    Op("ones_like(Tensor self, *, ScalarType? dtype=None) -> Tensor", method=False, test={"family": "none"}),
    Op("full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None) -> Tensor", method=False,
       test={"family": "none"}),
    Op("empty_like(Tensor self, *, ScalarType? dtype=None) -> Tensor", method=False, test={"family": "none"}),
    Op("fill_(Tensor self, Scalar value) -> Tensor", test={"family": "none"}),
    Op("zero_(Tensor self) -> Tensor", test={"family": "none"}),
    # ---- indexing (src/ops/indexing, kernel in backend/cpu/index_kernels.cpp) ------------------
    Op("gather(Tensor self, int dim, Tensor index) -> Tensor", test={"family": "none"}),
    Op("take_along_dim(Tensor self, Tensor indices, int? dim=None) -> Tensor", test={"family": "none"}),
    Op("scatter(Tensor self, int dim, Tensor index, Tensor src) -> Tensor", test={"family": "none"}),
    Op("scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor", test={"family": "none"}),
    Op("scatter_reduce(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True)"
       " -> Tensor", test={"family": "none"}),
    Op("index_select(Tensor self, int dim, Tensor index) -> Tensor", test={"family": "none"}),
    Op("index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor",
       test={"family": "none"}),
    Op("index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor", test={"family": "none"},
       autocast="promote"),
    Op("index_fill(Tensor self, int dim, Tensor index, Scalar value) -> Tensor", test={"family": "none"}),
    Op("masked_fill(Tensor self, Tensor mask, Scalar value) -> Tensor", test={"family": "none"}),
    Op("masked_select(Tensor self, Tensor mask) -> Tensor", test={"family": "none"}),
    Op("nonzero(Tensor self) -> Tensor", test={"family": "none"}),
    Op("take(Tensor self, Tensor index) -> Tensor", test={"family": "none"}),
    # advanced indexing (src/ops/indexing/advanced.cpp): x[i, j] and x[i, j] = v
    Op("index(Tensor self, Tensor?[] indices) -> Tensor", method=False, test={"family": "none"}),
    Op("index_put_(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor",
       test={"family": "none"}),
    Op("index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor",
       test={"family": "none"}),
    Op("masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor", test={"family": "none"}),
    # ---- sorting and selection (src/ops/sorting, kernel in backend/cpu/sort_kernels.cpp) --------
    Op("sort(Tensor self, int dim=-1, bool descending=False, *, bool stable=False) -> (Tensor, Tensor)",
       test={"family": "none"}),
    Op("argsort(Tensor self, int dim=-1, bool descending=False, *, bool stable=False) -> Tensor",
       test={"family": "none"}),
    Op("msort(Tensor self) -> Tensor", test={"family": "none"}),
    Op("topk(Tensor self, int k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor, Tensor)",
       test={"family": "none"}),
    Op("kthvalue(Tensor self, int k, int dim=-1, bool keepdim=False) -> (Tensor, Tensor)", test={"family": "none"}),
    Op("median(Tensor self, int dim, bool keepdim=False) -> (Tensor, Tensor)", test={"family": "none"}),
    Op("searchsorted(Tensor sorted_sequence, Tensor self, *, bool out_int32=False, bool right=False) -> Tensor",
       method=False, test={"family": "none"}),
    Op("bucketize(Tensor self, Tensor boundaries, *, bool out_int32=False, bool right=False) -> Tensor",
       method=False, test={"family": "none"}),
    Op("unique(Tensor self, bool sorted=True, bool return_inverse=False, bool return_counts=False)"
       " -> (Tensor, Tensor, Tensor)", method=False, test={"family": "none"}),
    Op("unique_consecutive(Tensor self, bool return_inverse=False, bool return_counts=False)"
       " -> (Tensor, Tensor, Tensor)", method=False, test={"family": "none"}),
    Op("unique_dim(Tensor self, int dim, bool sorted=True, bool return_inverse=False, bool return_counts=False)"
       " -> (Tensor, Tensor, Tensor)", method=False, test={"family": "none"}),
    Op("unique_dim_consecutive(Tensor self, int dim, bool return_inverse=False, bool return_counts=False)"
       " -> (Tensor, Tensor, Tensor)", method=False, test={"family": "none"}),
    Op("nanmedian(Tensor self, int dim, bool keepdim=False) -> (Tensor, Tensor)", test={"family": "none"}),
    Op("mode(Tensor self, int dim=-1, bool keepdim=False) -> (Tensor, Tensor)", test={"family": "none"}),
    Op("norm(Tensor self, Scalar p=2, int[1]? dim=None, bool keepdim=False) -> Tensor", test={"family": "none"}),
    # ---- randomness (src/ops/random; Philox, Note [reproducible randomness]) -----------------
    Op("rand(int[] size, *, Generator? generator=None, ScalarType? dtype=None, Device? device=None) -> Tensor",
       method=False, test={"family": "none"}),
    Op("randn(int[] size, *, Generator? generator=None, ScalarType? dtype=None, Device? device=None) -> Tensor",
       method=False, test={"family": "none"}),
    Op("randint(int low, int high, int[] size, *, Generator? generator=None, ScalarType? dtype=None, "
       "Device? device=None) -> Tensor", method=False, test={"family": "none"}),
    Op("randperm(int n, *, Generator? generator=None, ScalarType? dtype=None, Device? device=None) -> Tensor",
       method=False, test={"family": "none"}),
    Op("normal(float mean, float std, int[] size, *, Generator? generator=None, ScalarType? dtype=None, "
       "Device? device=None) -> Tensor", method=False, test={"family": "none"}),
    Op("uniform_(Tensor self, float from=0.0, float to=1.0, *, Generator? generator=None) -> Tensor",
       test={"family": "none"}),
    Op("normal_(Tensor self, float mean=0.0, float std=1.0, *, Generator? generator=None) -> Tensor",
       test={"family": "none"}),
    Op("bernoulli(Tensor self, *, Generator? generator=None) -> Tensor", test={"family": "none"}),
    Op("poisson(Tensor self, Generator? generator=None) -> Tensor", method=False, test={"family": "none"}),
    Op("binomial(Tensor count, Tensor prob, Generator? generator=None) -> Tensor", method=False,
       test={"family": "none"}),
    Op("bernoulli_(Tensor self, float p=0.5, *, Generator? generator=None) -> Tensor", test={"family": "none"}),
    Op("multinomial(Tensor self, int num_samples, bool replacement=False, *, Generator? generator=None) -> Tensor",
       test={"family": "none"}),
    # ---- pointwise binary (src/ops/pointwise, kernels in backend/cpu/binary_kernels.cpp) -----------
    Op("add(Tensor self, Tensor other, *, Scalar alpha=1, Tensor? out=None) -> Tensor", inplace=True,
       test={"family": "binary", "ref": "a + b", "dtypes": "numeric", "complex": True},
       kernel="same", hand_written=True),
    Op("sub(Tensor self, Tensor other, *, Scalar alpha=1, Tensor? out=None) -> Tensor", inplace=True,
       test={"family": "binary", "ref": "a - b", "dtypes": "numeric", "complex": True},
       kernel="same", hand_written=True),
    binary("mul", "a * b", complex=True, kernel="same"),
    Op("div(Tensor self, Tensor other, *, str? rounding_mode=None, Tensor? out=None) -> Tensor", inplace=True,
       test={"family": "binary", "ref": "a / b", "dtypes": "float", "complex": True, "nonzero_rhs": True},
       kernel="float", hand_written=True, variants=("DivTrunc", "DivFloor")),  # rounding_mode, floor_divide
    binary("true_divide", "a / b", dtypes="float"),
    binary("floor_divide", "np.floor_divide(a, b)", dtypes="float"),
    binary("remainder", "np.remainder(a, b)", dtypes="float", kernel="same"),
    binary("fmod", "np.fmod(a, b)", dtypes="float", kernel="same"),
    binary("pow", "np.power(a, b)", dtypes="float", complex=False, kernel="same", hand_written=True),
    binary("atan2", "np.arctan2(a, b)", dtypes="float", kernel="float"),
    binary("hypot", "np.hypot(a, b)", dtypes="float", kernel="float_only"),
    binary("maximum", "np.maximum(a, b)", kernel="same"),
    binary("minimum", "np.minimum(a, b)", kernel="same"),
    binary("fmax", "np.fmax(a, b)", dtypes="float", kernel="same"),
    binary("fmin", "np.fmin(a, b)", dtypes="float", kernel="same"),
    binary("bitwise_and", "np.bitwise_and(a, b)", dtypes="bool_int", kernel="integral"),
    binary("bitwise_or", "np.bitwise_or(a, b)", dtypes="bool_int", kernel="integral"),
    binary("bitwise_xor", "np.bitwise_xor(a, b)", dtypes="bool_int", kernel="integral"),
    binary("logical_and", "np.logical_and(a, b)", dtypes="all", family="compare", complex=True, kernel="compare"),
    binary("logical_or", "np.logical_or(a, b)", dtypes="all", family="compare", complex=True, kernel="compare"),
    binary("logical_xor", "np.logical_xor(a, b)", dtypes="all", family="compare", complex=True, kernel="compare"),
    binary("eq", "a == b", dtypes="all", family="compare", complex=True, kernel="compare"),
    binary("ne", "a != b", dtypes="all", family="compare", complex=True, kernel="compare"),
    binary("lt", "a < b", family="compare", kernel="compare"),
    binary("le", "a <= b", family="compare", kernel="compare"),
    binary("gt", "a > b", family="compare", kernel="compare"),
    binary("ge", "a >= b", family="compare", kernel="compare"),
    # ---- pointwise unary (kernels in backend/cpu/unary_kernels.cpp) --------------------------------
    unary("neg", "-a", dtypes="numeric", complex=True, kernel="same", hand_written=True),
    unary("abs", "np.abs(a)", dtypes="numeric", complex=True, kernel="same", hand_written=True),
    unary("sign", "np.sign(a)", dtypes="numeric", kernel="same"),
    unary("exp", "np.exp(a)", complex=True, kernel="float"),
    unary("exp2", "np.exp2(a)", kernel="float"),
    unary("expm1", "np.expm1(a)", kernel="float"),
    unary("log", "np.log(a)", domain=(0.01, 10.0), complex=True, kernel="float"),
    unary("log2", "np.log2(a)", domain=(0.01, 10.0), kernel="float"),
    unary("log10", "np.log10(a)", domain=(0.01, 10.0), kernel="float"),
    unary("log1p", "np.log1p(a)", domain=(-0.9, 10.0), kernel="float"),
    unary("sqrt", "np.sqrt(a)", domain=(0.0, 10.0), complex=True, kernel="float"),
    unary("rsqrt", "1 / np.sqrt(a)", domain=(0.01, 10.0), kernel="float"),
    unary("reciprocal", "1 / a", domain=(0.1, 10.0), complex=True, kernel="float"),
    unary("sin", "np.sin(a)", complex=True, kernel="float"),
    unary("cos", "np.cos(a)", complex=True, kernel="float"),
    unary("tan", "np.tan(a)", domain=(-1.4, 1.4), complex=True, kernel="float"),
    unary("asin", "np.arcsin(a)", domain=(-0.99, 0.99), kernel="float"),
    unary("acos", "np.arccos(a)", domain=(-0.99, 0.99), kernel="float"),
    unary("atan", "np.arctan(a)", kernel="float"),
    unary("sinh", "np.sinh(a)", complex=True, kernel="float"),
    unary("cosh", "np.cosh(a)", complex=True, kernel="float"),
    unary("tanh", "np.tanh(a)", complex=True, kernel="float", quantized="tanh"),
    unary("asinh", "np.arcsinh(a)", kernel="float"),
    unary("acosh", "np.arccosh(a)", domain=(1.01, 10.0), kernel="float"),
    unary("atanh", "np.arctanh(a)", domain=(-0.99, 0.99), kernel="float"),
    unary("sigmoid", "1 / (1 + np.exp(-a))", kernel="float", quantized="sigmoid"),
    unary("erf", "np.vectorize(math.erf, otypes=[float])(a)", kernel="float"),
    unary("erfc", "np.vectorize(math.erfc, otypes=[float])(a)", kernel="float"),
    unary("lgamma", "np.vectorize(lambda v: v if math.isnan(v) else math.inf if math.isinf(v) or "
          "(v <= 0 and v == math.floor(v)) else math.lgamma(v), otypes=[float])(a)", domain=(0.1, 10.0),
          kernel="float"),
    # erfinv_ref / digamma_ref: float64 references written independently in test_opdb.py
    unary("erfinv", "erfinv_ref(a)", domain=(-0.999, 0.999), kernel="float"),
    unary("digamma", "digamma_ref(a)", domain=(-4.0, 8.0), kernel="float"),
    # modified Bessel functions of the first kind (ember.special); tested by hand against a
    # float64 series in tests/test_special_bessel.py
    Op("i0(Tensor self, *, Tensor? out=None) -> Tensor", inplace=True, test={"family": "none"}),
    Op("special_i0e(Tensor self, *, Tensor? out=None) -> Tensor", method=False, test={"family": "none"}),
    Op("special_i1(Tensor self, *, Tensor? out=None) -> Tensor", method=False, test={"family": "none"}),
    Op("special_i1e(Tensor self, *, Tensor? out=None) -> Tensor", method=False, test={"family": "none"}),
    # the rest of ember.special (scalar kernels in src/backend/cpu/special_math.cpp, Note [special
    # functions]); the refs are float64 functions written independently in tests/special_refs.py
    special("entr", "entr_ref(a)", domain=(-0.5, 4.0)),
    special("erfcx", "erfcx_ref(a)", domain=(-4.0, 30.0)),
    special("ndtr", "ndtr_ref(a)", domain=(-10.0, 6.0)),
    special("ndtri", "ndtri_ref(a)", domain=(0.0, 1.0)),
    special("log_ndtr", "log_ndtr_ref(a)", domain=(-30.0, 8.0)),
    special_binary("xlog1py", "xlog1py_ref(a, b)", other_domain=(-0.9, 5.0)),
    special_binary("zeta", "zeta_ref(a, b)", domain=(1.0, 8.0), other_domain=(-4.0, 6.0)),
    special("bessel_j0", "bessel_j_ref(0, a)", domain=(-40.0, 40.0)),
    special("bessel_j1", "bessel_j_ref(1, a)", domain=(-40.0, 40.0)),
    special("bessel_y0", "bessel_y_ref(0, a)", domain=(0.0, 40.0)),
    special("bessel_y1", "bessel_y_ref(1, a)", domain=(0.0, 40.0)),
    special("modified_bessel_i0", "bessel_i_ref(0, a)", domain=(-40.0, 40.0)),
    special("modified_bessel_i1", "bessel_i_ref(1, a)", domain=(-40.0, 40.0)),
    special("modified_bessel_k0", "bessel_k_ref(0, a, False)", domain=(0.0, 12.0)),
    special("modified_bessel_k1", "bessel_k_ref(1, a, False)", domain=(0.0, 12.0)),
    special("scaled_modified_bessel_k0", "bessel_k_ref(0, a, True)", domain=(0.0, 12.0)),
    special("scaled_modified_bessel_k1", "bessel_k_ref(1, a, True)", domain=(0.0, 12.0)),
    special("spherical_bessel_j0", "spherical_j0_ref(a)", domain=(-20.0, 20.0)),
    special("airy_ai", "airy_ai_ref(a)", domain=(-20.0, 8.0)),
    *[special_binary(name, f"polynomial_ref({name!r}, a, b)",
                     domain=(0.0, 1.0) if name.startswith("shifted") else (-1.2, 1.2), other_domain=(-2.0, 30.0))
      for name in _POLYNOMIALS],
    unary("floor", "np.floor(a)", dtypes="numeric", kernel="same"),
    unary("ceil", "np.ceil(a)", dtypes="numeric", kernel="same"),
    unary("trunc", "np.trunc(a)", dtypes="numeric", kernel="same"),
    Op("round(Tensor self, *, int decimals=0, Tensor? out=None) -> Tensor", inplace=True,
       test={"family": "unary", "ref": "np.round(a)", "dtypes": "numeric"}, kernel="same", hand_written=True),
    unary("frac", "a - np.trunc(a)", kernel="float"),
    unary("relu", "np.maximum(a, 0)", dtypes="numeric", kernel="same", quantized="relu"),
    unary("bitwise_not", "np.invert(a)", dtypes="bool_int", kernel="integral"),
    Op("logical_not(Tensor self, *, Tensor? out=None) -> Tensor", inplace=True, kernel="predicate",
       test={"family": "unary", "ref": "np.logical_not(a)", "dtypes": "all", "domain": (-2.0, 2.0),
             "complex": True}),
    Op("isnan(Tensor self) -> Tensor", kernel="predicate", hand_written=True,  # no out=
       test={"family": "unary", "ref": "np.isnan(a)", "dtypes": "float", "domain": (-3.0, 3.0), "complex": True}),
    Op("isinf(Tensor self) -> Tensor", kernel="predicate", hand_written=True,  # no out=
       test={"family": "unary", "ref": "np.isinf(a)", "dtypes": "float", "domain": (-3.0, 3.0), "complex": True}),
    Op("isfinite(Tensor self) -> Tensor", kernel="predicate", hand_written=True,  # no out=
       test={"family": "unary", "ref": "np.isfinite(a)", "dtypes": "float", "domain": (-3.0, 3.0), "complex": True}),
    Op("clamp(Tensor self, Scalar? min=None, Scalar? max=None, *, Tensor? out=None) -> Tensor", inplace=True,
       test={"family": "none"}),
    Op("where(Tensor condition, Tensor self, Tensor other) -> Tensor", method=False, test={"family": "none"}),
    # ---- composites: activations and friends (src/ops/composite/activations.cpp) --------------
    Op("relu6(Tensor self) -> Tensor", test={"family": "unary", "ref": "np.clip(a, 0, 6)", "dtypes": "float",
                                            "domain": (-8.0, 8.0)}, quantized="relu6"),
    Op("hardtanh(Tensor self, float min_val=-1.0, float max_val=1.0) -> Tensor",
       test={"family": "unary", "ref": "np.clip(a, -1, 1)", "dtypes": "float"}, quantized="hardtanh"),
    Op("leaky_relu(Tensor self, float negative_slope=0.01) -> Tensor",
       test={"family": "unary", "ref": "np.where(a > 0, a, a * 0.01)", "dtypes": "float"}),
    Op("elu(Tensor self, float alpha=1.0, float scale=1.0, float input_scale=1.0) -> Tensor",
       test={"family": "unary", "ref": "np.where(a > 0, a, np.expm1(a))", "dtypes": "float"}),
    Op("selu(Tensor self) -> Tensor",
       test={"family": "unary", "dtypes": "float",
             "ref": "1.0507009873554805 * np.where(a > 0, a, 1.6732632423543772 * np.expm1(a))"}),
    Op("celu(Tensor self, float alpha=1.0) -> Tensor",
       test={"family": "unary", "ref": "np.where(a > 0, a, np.expm1(a))", "dtypes": "float"}),
    Op("silu(Tensor self) -> Tensor", test={"family": "unary", "ref": "a / (1 + np.exp(-a))", "dtypes": "float"}),
    Op("softplus(Tensor self, float beta=1.0, float threshold=20.0) -> Tensor",
       test={"family": "unary", "ref": "np.where(a > 20, a, np.log1p(np.exp(a)))", "dtypes": "float"}),
    Op("mish(Tensor self) -> Tensor",
       test={"family": "unary", "ref": "a * np.tanh(np.where(a > 20, a, np.log1p(np.exp(a))))", "dtypes": "float"}),
    Op("gelu(Tensor self, *, str approximate='none') -> Tensor",
       test={"family": "unary", "dtypes": "float",
             "ref": "0.5 * a * (1 + np.vectorize(math.erf, otypes=[float])(a / np.sqrt(2)))"}),
    # their backward passes as one kernel each (src/ops/activation; Note [fused activations])
    Op("gelu_backward(Tensor grad_output, Tensor self, *, str approximate='none') -> Tensor", method=False,
       test={"family": "none"}),
    Op("silu_backward(Tensor grad_output, Tensor self) -> Tensor", method=False, test={"family": "none"}),
    Op("mish_backward(Tensor grad_output, Tensor self) -> Tensor", method=False, test={"family": "none"}),
    Op("softplus_backward(Tensor grad_output, Tensor self, float beta, float threshold) -> Tensor", method=False,
       test={"family": "none"}),
    Op("hardswish_backward(Tensor grad_output, Tensor self) -> Tensor", method=False, test={"family": "none"}),
    Op("hardsigmoid_backward(Tensor grad_output, Tensor self) -> Tensor", method=False, test={"family": "none"}),
    Op("hardswish(Tensor self) -> Tensor",
       test={"family": "unary", "ref": "a * np.clip(a + 3, 0, 6) / 6", "dtypes": "float", "domain": (-5.0, 5.0)}),
    Op("hardsigmoid(Tensor self) -> Tensor",
       test={"family": "unary", "ref": "np.clip(a + 3, 0, 6) / 6", "dtypes": "float", "domain": (-5.0, 5.0)}),
    Op("logsigmoid(Tensor self) -> Tensor", test={"family": "unary", "ref": "-np.logaddexp(0, -a)", "dtypes": "float"}),
    Op("softsign(Tensor self) -> Tensor", test={"family": "unary", "ref": "a / (1 + np.abs(a))", "dtypes": "float"}),
    Op("tanhshrink(Tensor self) -> Tensor", test={"family": "unary", "ref": "a - np.tanh(a)", "dtypes": "float"}),
    Op("threshold(Tensor self, Scalar threshold, Scalar value) -> Tensor", test={"family": "none"}),
    Op("logit(Tensor self, float? eps=None) -> Tensor",
       test={"family": "unary", "ref": "np.log(a / (1 - a))", "dtypes": "float", "domain": (0.05, 0.95)}),
    Op("nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor",
       test={"family": "none"}),
    Op("heaviside(Tensor self, Tensor values) -> Tensor",
       test={"family": "binary", "ref": "np.heaviside(a, b)", "dtypes": "float"}),
    Op("lerp(Tensor self, Tensor end, Tensor weight) -> Tensor", test={"family": "none"}),
    Op("addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor", test={"family": "none"}),
    Op("addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor", test={"family": "none"}),
    # ---- softmax and the fused normalizations (src/ops/normalization, kernels in
    # backend/cpu/normalization_kernels.cpp; Note [normalization kernels]) -------------------------
    Op("softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", test={"family": "none"}),
    Op("log_softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", test={"family": "none"}),
    Op("_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor",
       method=False, test={"family": "none"}),
    Op("_log_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor",
       method=False, test={"family": "none"}),
    # ---- losses (src/ops/loss): cross_entropy is log_softmax then nll_loss_forward, as in PyTorch;
    # reduction 0 none, 1 mean, 2 sum (Note [nll layouts])
    Op("nll_loss_forward(Tensor self, Tensor target, Tensor? weight, int reduction, int ignore_index)"
       " -> (Tensor, Tensor)", method=False, test={"family": "none"}),
    Op("nll_loss_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight, int reduction, "
       "int ignore_index, Tensor total_weight) -> Tensor", method=False, test={"family": "none"}),
    Op("native_layer_norm(Tensor input, int[] normalized_shape, Tensor? weight, Tensor? bias, float eps)"
       " -> (Tensor, Tensor, Tensor)", method=False, test={"family": "none"}),
    Op("native_layer_norm_backward(Tensor grad_out, Tensor input, int[] normalized_shape, Tensor mean, Tensor rstd, "
       "Tensor? weight, Tensor? bias, bool input_grad=True, bool weight_grad=True, bool bias_grad=True)"
       " -> (Tensor, Tensor, Tensor)", method=False, test={"family": "none"}),
    Op("_fused_rms_norm(Tensor input, int[] normalized_shape, Tensor? weight, float eps) -> (Tensor, Tensor)",
       method=False, test={"family": "none"}),
    Op("_fused_rms_norm_backward(Tensor grad_out, Tensor input, int[] normalized_shape, Tensor rstd, Tensor? weight, "
       "bool input_grad=True, bool weight_grad=True) -> (Tensor, Tensor)", method=False, test={"family": "none"}),
    Op("native_group_norm(Tensor input, Tensor? weight, Tensor? bias, int N, int C, int HxW, int group, float eps)"
       " -> (Tensor, Tensor, Tensor)", method=False, test={"family": "none"}),
    Op("native_group_norm_backward(Tensor grad_out, Tensor input, Tensor mean, Tensor rstd, Tensor? weight, int N, "
       "int C, int HxW, int group, bool input_grad=True, bool weight_grad=True, bool bias_grad=True)"
       " -> (Tensor, Tensor, Tensor)", method=False, test={"family": "none"}),
    Op("native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, "
       "bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)", method=False, test={"family": "none"}),
    Op("native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, Tensor? running_mean, "
       "Tensor? running_var, Tensor? save_mean, Tensor? save_invstd, bool train, float eps, bool input_grad=True, "
       "bool weight_grad=True, bool bias_grad=True) -> (Tensor, Tensor, Tensor)", method=False,
       test={"family": "none"}),
    # ---- convolution (src/ops/convolution, kernels in backend/cpu/conv_kernels.cpp; Note [convolution
    # kernels]): PyTorch's aten::convolution behind conv1d/2d/3d and conv_transpose1d/2d/3d ------------
    Op("convolution(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, int[] dilation, "
       "bool transposed, int[] output_padding, int groups) -> Tensor", method=False, test={"family": "none"},
       autocast="lower_precision_fp"),
    Op("convolution_backward(Tensor grad_output, Tensor input, Tensor weight, int[] stride, int[] padding, "
       "int[] dilation, bool transposed, int[] output_padding, int groups, bool input_grad=True, "
       "bool weight_grad=True, bool bias_grad=True) -> (Tensor, Tensor, Tensor)", method=False,
       test={"family": "none"}),
    # ---- multi-tensor optimizer steps (src/ops/optim, kernels in backend/cpu/optim_kernels.cpp;
    # Note [fused optimizers]): ember.optim's foreach/fused paths, in place, returning the params ------
    Op("_fused_sgd_(Tensor[] params, Tensor[] grads, Tensor[] momentum_buffers, *, float weight_decay, "
       "float momentum, float lr, float dampening, bool nesterov, bool maximize, bool is_first_step) -> Tensor[]",
       method=False, test={"family": "none"}),
    Op("_fused_adam_(Tensor[] params, Tensor[] grads, Tensor[] exp_avgs, Tensor[] exp_avg_sqs, "
       "Tensor[] max_exp_avg_sqs, Tensor[] state_steps, *, float lr, float beta1, float beta2, float weight_decay, "
       "float eps, bool amsgrad, bool maximize, bool decoupled_weight_decay=False) -> Tensor[]", method=False,
       test={"family": "none"}),
    Op("_fused_adagrad_(Tensor[] params, Tensor[] grads, Tensor[] state_sums, Tensor[] state_steps, *, float lr, "
       "float lr_decay, float weight_decay, float eps, bool maximize) -> Tensor[]", method=False,
       test={"family": "none"}),
    Op("_fused_rmsprop_(Tensor[] params, Tensor[] grads, Tensor[] square_avgs, Tensor[] grad_avgs, "
       "Tensor[] momentum_buffers, Tensor[] state_steps, *, float lr, float alpha, float eps, float weight_decay, "
       "float momentum, bool centered, bool maximize) -> Tensor[]", method=False, test={"family": "none"}),
    # ---- pooling over the trailing len(kernel_size) dims (src/ops/pooling, kernels in
    # backend/cpu/pool_kernels.cpp; Note [pooling kernels]) -------------------------------------------
    Op("max_pool_with_indices(Tensor self, int[] kernel_size, int[] stride, int[] padding, int[] dilation, "
       "bool ceil_mode) -> (Tensor, Tensor)", method=False, test={"family": "none"}, quantized="max_pool_with_indices"),
    Op("max_pool_with_indices_backward(Tensor grad_output, Tensor self, Tensor indices, int spatial_dims) -> Tensor",
       method=False, test={"family": "none"}),
    Op("adaptive_max_pool(Tensor self, int[] output_size) -> (Tensor, Tensor)", method=False, test={"family": "none"},
       quantized="adaptive_max_pool"),
    Op("avg_pool(Tensor self, int[] kernel_size, int[] stride, int[] padding, bool ceil_mode, bool count_include_pad, "
       "int? divisor_override) -> Tensor", method=False, test={"family": "none"}, quantized="avg_pool"),
    Op("avg_pool_backward(Tensor grad_output, Tensor self, int[] kernel_size, int[] stride, int[] padding, "
       "bool ceil_mode, bool count_include_pad, int? divisor_override) -> Tensor", method=False,
       test={"family": "none"}),
    Op("adaptive_avg_pool(Tensor self, int[] output_size) -> Tensor", method=False, test={"family": "none"},
       quantized="adaptive_avg_pool"),
    Op("adaptive_avg_pool_backward(Tensor grad_output, Tensor self, int[] output_size) -> Tensor", method=False,
       test={"family": "none"}),
    # ---- complex numbers (src/ops/composite/complex.cpp) --------------------------------------------
    Op("view_as_real(Tensor self) -> Tensor", method=False, test={"family": "none"}),
    Op("view_as_complex(Tensor self) -> Tensor", method=False, test={"family": "none"},
       autocast="fp32"),
    Op("real(Tensor self) -> Tensor", method=False, test={"family": "none"}),
    Op("imag(Tensor self) -> Tensor", method=False, test={"family": "none"}),
    Op("conj(Tensor self) -> Tensor", test={"family": "none"}),
    Op("conj_physical(Tensor self) -> Tensor", test={"family": "none"}),
    Op("complex(Tensor real, Tensor imag) -> Tensor", method=False, test={"family": "none"}),
    Op("polar(Tensor abs, Tensor angle) -> Tensor", method=False, test={"family": "none"},
       autocast="fp32"),
    Op("angle(Tensor self) -> Tensor",
       # PyTorch's rule for reals is x < 0 ? pi : 0 (so angle(-0.0) == 0, unlike NumPy's atan2)
       test={"family": "unary", "dtypes": "float", "complex": True,
             "ref": "np.angle(a) if np.iscomplexobj(a) else np.where(np.isnan(a), a, np.where(a < 0, np.pi, 0.0))"}),
    Op("sgn(Tensor self) -> Tensor",
       test={"family": "unary", "dtypes": "float", "complex": True,
             "ref": "np.where(a == 0, 0, a / np.where(a == 0, 1, np.abs(a))) if np.iscomplexobj(a) else np.sign(a)"}),
    # ---- more math composed from existing ops (src/ops/composite/math.cpp) ----------------------
    unary("square", "a * a", dtypes="numeric", complex=True),
    unary("deg2rad", "np.deg2rad(a.astype(np.float64))", dtypes="numeric"),
    unary("rad2deg", "np.rad2deg(a.astype(np.float64))", dtypes="numeric"),
    unary("sinc", "np.sinc(a)"),
    Op("signbit(Tensor self, *, Tensor? out=None) -> Tensor", test={"family": "none"}),
    binary("logaddexp", "np.logaddexp(a, b)", dtypes="float"),
    binary("logaddexp2", "np.logaddexp2(a, b)", dtypes="float"),
    binary("xlogy", "np.where((a == 0) & ~np.isnan(b), 0.0, a * np.log(b))", dtypes="float"),
    binary("copysign", "np.copysign(a, b)", dtypes="float"),
    binary("gcd", "np.gcd(a, b)", dtypes="integral"),
    # |a / gcd * b| with the product wrapping in the dtype, as PyTorch (np.lcm wraps before the abs).
    binary("lcm", "np.abs((a // np.where(np.gcd(a, b) == 0, 1, np.gcd(a, b))) * b)", dtypes="integral"),
    Op("bitwise_left_shift(Tensor self, Tensor other, *, Tensor? out=None) -> Tensor", inplace=True,
       test={"family": "none"}),
    Op("bitwise_right_shift(Tensor self, Tensor other, *, Tensor? out=None) -> Tensor", inplace=True,
       test={"family": "none"}),
    Op("trace(Tensor self) -> Tensor", test={"family": "none"},
       autocast="fp32"),
    Op("diag(Tensor self, int diagonal=0) -> Tensor", test={"family": "none"}),
    Op("diag_embed(Tensor self, int offset=0, int dim1=-2, int dim2=-1) -> Tensor", test={"family": "none"}),
    Op("diagflat(Tensor self, int offset=0) -> Tensor", test={"family": "none"}),
    # ---- joining and shapes (src/ops/composite/joining.cpp) -------------------------------------
    Op("cat(Tensor[] tensors, int dim=0) -> Tensor", test={"family": "none"},
       autocast="promote", quantized="cat"),
    Op("stack(Tensor[] tensors, int dim=0) -> Tensor", test={"family": "none"},
       autocast="promote", quantized="stack"),
    Op("hstack(Tensor[] tensors) -> Tensor", test={"family": "none"}),
    Op("vstack(Tensor[] tensors) -> Tensor", test={"family": "none"}),
    Op("dstack(Tensor[] tensors) -> Tensor", test={"family": "none"}),
    Op("atleast_1d(Tensor self) -> Tensor", method=False, test={"family": "none"}),
    Op("atleast_2d(Tensor self) -> Tensor", method=False, test={"family": "none"}),
    Op("atleast_3d(Tensor self) -> Tensor", method=False, test={"family": "none"}),
    Op("tril(Tensor self, int diagonal=0) -> Tensor", test={"family": "none"}),
    Op("triu(Tensor self, int diagonal=0) -> Tensor", test={"family": "none"}),
    Op("repeat(Tensor self, int[] repeats) -> Tensor", test={"family": "none"}, quantized="repeat"),
    Op("tile(Tensor self, int[] dims) -> Tensor", test={"family": "none"}),
    Op("roll(Tensor self, int[1] shifts, int[1] dims=[]) -> Tensor", test={"family": "none"}),
    Op("broadcast_tensors(Tensor[] tensors) -> Tensor[]", test={"family": "none"}),
    Op("flip(Tensor self, int[] dims) -> Tensor", test={"family": "none"}, quantized="flip"),
    Op("fliplr(Tensor self) -> Tensor", test={"family": "none"}),
    Op("flipud(Tensor self) -> Tensor", test={"family": "none"}),
    Op("rot90(Tensor self, int k=1, int[] dims=[0, 1]) -> Tensor", test={"family": "none"}),
    Op("tensor_split(Tensor self, int[] indices, int dim=0) -> Tensor[]", test={"family": "none"}),
    Op("repeat_interleave(Tensor self, Tensor repeats, int? dim=None) -> Tensor", test={"family": "none"}),
    Op("diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None) -> Tensor",
       test={"family": "none"}),
    Op("narrow_copy(Tensor self, int dim, int start, int length) -> Tensor", test={"family": "none"}),
    Op("logspace(Scalar start, Scalar end, int steps, float base=10.0, *, ScalarType? dtype=None, "
       "Device? device=None) -> Tensor", method=False, test={"family": "none"}),
    Op("tril_indices(int row, int col, int offset=0, *, ScalarType? dtype=None, Device? device=None) -> Tensor",
       method=False, test={"family": "none"}),
    Op("triu_indices(int row, int col, int offset=0, *, ScalarType? dtype=None, Device? device=None) -> Tensor",
       method=False, test={"family": "none"}),
    Op("bincount(Tensor self, Tensor? weights=None, int minlength=0) -> Tensor", test={"family": "none"}),
    Op("histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0) -> Tensor", test={"family": "none"}),
    Op("meshgrid(Tensor[] tensors, *, str indexing='ij') -> Tensor[]", test={"family": "none"}),
    # ---- matrix products (src/ops/linalg/matmul.cpp, kernel in backend/cpu/gemm_kernels.cpp) --------
    Op("mm(Tensor self, Tensor mat2, *, Tensor? out=None) -> Tensor", test={"family": "none"},
       autocast="lower_precision_fp"),
    Op("bmm(Tensor self, Tensor mat2, *, Tensor? out=None) -> Tensor", test={"family": "none"},
       autocast="lower_precision_fp"),
    Op("matmul(Tensor self, Tensor other, *, Tensor? out=None) -> Tensor", test={"family": "none"},
       autocast="lower_precision_fp"),
    Op("mv(Tensor self, Tensor vec, *, Tensor? out=None) -> Tensor", test={"family": "none"}),
    Op("dot(Tensor self, Tensor tensor, *, Tensor? out=None) -> Tensor", test={"family": "none"}),
    Op("vdot(Tensor self, Tensor other, *, Tensor? out=None) -> Tensor", test={"family": "none"}),
    Op("outer(Tensor self, Tensor vec2) -> Tensor", test={"family": "none"}),
    Op("addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1, Tensor? out=None) -> Tensor",
       test={"family": "none"},
       autocast="lower_precision_fp"),
    Op("addmv(Tensor self, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1, Tensor? out=None) -> Tensor",
       test={"family": "none"}),
    Op("baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1, Tensor? out=None) "
       "-> Tensor", test={"family": "none"},
       autocast="lower_precision_fp"),
    Op("addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1, Tensor? out=None) "
       "-> Tensor", test={"family": "none"},
       autocast="lower_precision_fp"),
    # ---- linear algebra (src/ops/linalg/linalg.cpp, kernels in backend/cpu/linalg_kernels.cpp) -------
    Op("linalg_solve(Tensor A, Tensor B, *, bool left=True) -> Tensor", method=False, test={"family": "none"},
       autocast="fp32"),
    Op("linalg_inv(Tensor A) -> Tensor", method=False, test={"family": "none"},
       autocast="fp32"),
    Op("linalg_det(Tensor A) -> Tensor", method=False, test={"family": "none"}),
    Op("linalg_slogdet(Tensor A) -> (Tensor, Tensor)", method=False, test={"family": "none"}),
    Op("linalg_cholesky(Tensor A, *, bool upper=False) -> Tensor", method=False, test={"family": "none"},
       autocast="fp32"),
    Op("linalg_cholesky_ex(Tensor A, *, bool upper=False, bool check_errors=False) -> (Tensor, Tensor)", method=False,
       test={"family": "none"},
       autocast="fp32"),
    Op("linalg_solve_triangular(Tensor A, Tensor B, *, bool upper, bool left=True, bool unitriangular=False) -> Tensor",
       method=False, test={"family": "none"},
       autocast="fp32"),
    # ---- quantized tensors (src/ops/quantization/quantized.cpp; Note [quantized tensors] in
    # ember/quantizer.h). Quantized tensors never require grad: none of these has a derivative.
    *[Op(s, method=False, test={"family": "none"}, quantized=True) for s in (
        "quantize_per_tensor(Tensor self, float scale, int zero_point, ScalarType dtype) -> Tensor",
        "quantize_per_channel(Tensor self, Tensor scales, Tensor zero_points, int axis, ScalarType dtype) -> Tensor",
        "quantize_per_tensor_dynamic(Tensor self, ScalarType dtype, bool reduce_range) -> Tensor",
        # dtype: Ember's keyword for the sub-byte dtypes, whose integers are one code per uint8
        "_make_per_tensor_quantized_tensor(Tensor self, float scale, int zero_point, *, ScalarType? dtype=None) "
        "-> Tensor",
        "_make_per_channel_quantized_tensor(Tensor self, Tensor scale, Tensor zero_point, int axis, *, "
        "ScalarType? dtype=None) -> Tensor",
    )],
    # the kernels behind ember.ao.nn.quantized (src/ops/quantization/quantized_kernels.cpp; Note
    # [integer GEMM through float BLAS]): quint8 activations, qint8 weights, quint8 results
    *[Op(s, method=False, test={"family": "none"}, quantized=True) for s in (
        "_quantized_linear(Tensor input, Tensor weight, Tensor? bias, float scale, int zero_point, bool relu=False) "
        "-> Tensor",
        "_quantized_linear_dynamic(Tensor input, Tensor weight, Tensor? bias, bool reduce_range=True, bool relu=False) "
        "-> Tensor",
        "_quantized_conv(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, int[] dilation, "
        "int groups, float scale, int zero_point, bool relu=False) -> Tensor",
        "_quantized_add(Tensor self, Tensor other, float scale, int zero_point, bool relu=False) -> Tensor",
        "_quantized_mul(Tensor self, Tensor other, float scale, int zero_point, bool relu=False) -> Tensor",
        "_quantized_cat(Tensor[] tensors, int dim, float scale, int zero_point) -> Tensor",
        # Note [quantized embedding bags]: a quint8 / quint4x2 / quint2x4 table quantized per row, float32 bags
        "_quantized_embedding_bag(Tensor weight, Tensor indices, Tensor offsets, Tensor? per_sample_weights=None, "
        "bool include_last_offset=False) -> Tensor",
    )],
    Op("dequantize(Tensor self) -> Tensor", test={"family": "none"}, quantized=True),
    Op("int_repr(Tensor self) -> Tensor", test={"family": "none"}, quantized=True),
    # ---- fake quantization (src/ops/quantization/fake_quantize.cpp; Note [fake quant arithmetic]).
    # The *_cachemask ops also return where the value was inside the range (their derivative's
    # mask); fake_quantize_per_*_affine compose them (src/autograd/fake_quantize_composites.cpp).
    *[Op(s, method=False, test={"family": "none"}) for s in (
        "fake_quantize_per_tensor_affine_cachemask(Tensor self, float scale, int zero_point, int quant_min, "
        "int quant_max) -> (Tensor, Tensor)",
        "fake_quantize_per_channel_affine_cachemask(Tensor self, Tensor scale, Tensor zero_point, int axis, "
        "int quant_min, int quant_max) -> (Tensor, Tensor)",
        "fake_quantize_per_tensor_affine(Tensor self, float scale, int zero_point, int quant_min, int quant_max) "
        "-> Tensor",
        "fake_quantize_per_channel_affine(Tensor self, Tensor scale, Tensor zero_point, int axis, int quant_min, "
        "int quant_max) -> Tensor",
        # LSQ: gradients to scale and zero_point too
        "_fake_quantize_learnable_per_tensor_affine(Tensor self, Tensor scale, Tensor zero_point, int quant_min, "
        "int quant_max, float grad_factor=1.0) -> Tensor",
        "_fake_quantize_learnable_per_channel_affine(Tensor self, Tensor scale, Tensor zero_point, int axis, "
        "int quant_min, int quant_max, float grad_factor=1.0) -> Tensor",
        # their elementwise local derivatives (to self, scale, zero_point), which the formulas reduce
        "_fake_quantize_learnable_local_grads(Tensor self, Tensor scale, Tensor zero_point, int axis, int quant_min, "
        "int quant_max, bool per_channel) -> (Tensor, Tensor, Tensor)",
    )],
    # ---- fused transformer inference (src/ops/transformer/fused.cpp; no derivative: eval only) --------
    Op("_packed_attention(Tensor query, Tensor key, Tensor value, Tensor query_offsets, Tensor key_offsets, "
       "int num_heads, float scale) -> Tensor", method=False, test={"family": "none"}),
    Op("_add_layer_norm(Tensor input, Tensor? residual, Tensor weight, Tensor bias, float eps) -> Tensor",
       method=False, test={"family": "none"}),
    # ---- discrete Fourier transforms (src/ops/fft, kernel in backend/cpu/fft_kernels.cpp); PyTorch's
    # _fft_c2c/_fft_r2c/_fft_c2r under ember.fft. normalization: 0 none, 1 by sqrt(n), 2 by n
    Op("fft_c2c(Tensor self, int[] dim, int normalization, bool forward) -> Tensor", method=False,
       test={"family": "none"},
       autocast="fp32"),
    Op("fft_r2c(Tensor self, int[] dim, int normalization, bool onesided) -> Tensor", method=False,
       test={"family": "none"},
       autocast="fp32"),
    Op("fft_c2r(Tensor self, int[] dim, int normalization, int last_dim_size) -> Tensor", method=False,
       test={"family": "none"},
       autocast="fp32"),
    # stft / istft of ember.stft / ember.istft (src/ops/fft/stft.cpp; the wrappers resolve defaults)
    Op("_stft(Tensor self, int n_fft, int hop_length, int win_length, Tensor? window, bool center, str pad_mode, "
       "bool normalized, bool onesided) -> Tensor", method=False, test={"family": "none"},
       autocast="fp32"),
    Op("_istft(Tensor self, int n_fft, int hop_length, int win_length, Tensor? window, bool center, bool normalized, "
       "bool onesided, int? length, bool return_complex) -> Tensor", method=False, test={"family": "none"}),
    # ---- embeddings (src/ops/embedding, kernels in backend/cpu/embedding_kernels.cpp): PyTorch's aten
    # names behind F.embedding / F.embedding_bag. mode: 0 sum, 1 mean, 2 max; padding_idx -1 is none;
    # _embedding_bag returns (output, max_indices) (Note [embedding bags])
    Op("embedding(Tensor weight, Tensor indices, int padding_idx=-1, bool scale_grad_by_freq=False, "
       "bool sparse=False) -> Tensor", method=False, test={"family": "none"}),
    Op("embedding_dense_backward(Tensor grad_output, Tensor indices, int num_weights, int padding_idx, "
       "bool scale_grad_by_freq) -> Tensor", method=False, test={"family": "none"}),
    Op("embedding_renorm_(Tensor self, Tensor indices, float max_norm, float norm_type) -> Tensor", method=False,
       test={"family": "none"}),
    Op("_embedding_bag(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq=False, int mode=0, "
       "bool sparse=False, Tensor? per_sample_weights=None, bool include_last_offset=False, int padding_idx=-1) "
       "-> (Tensor, Tensor)", method=False, test={"family": "none"}),
    Op("_embedding_bag_backward(Tensor grad_output, Tensor indices, Tensor offsets, Tensor max_indices, "
       "int num_weights, bool scale_grad_by_freq, int mode, Tensor? per_sample_weights, bool include_last_offset, "
       "int padding_idx) -> Tensor", method=False, test={"family": "none"}),
    Op("_embedding_bag_per_sample_weights_backward(Tensor grad_output, Tensor weight, Tensor indices, "
       "Tensor offsets, int mode, bool include_last_offset, int padding_idx) -> Tensor", method=False,
       test={"family": "none"}),
    # ---- decompositions (src/ops/linalg/decompositions.cpp, kernels in backend/cpu/decomposition_kernels.cpp)
    Op("linalg_svd(Tensor A, bool full_matrices=True) -> (Tensor, Tensor, Tensor)", method=False,
       test={"family": "none"},
       autocast="fp32"),
    Op("linalg_svdvals(Tensor A) -> Tensor", method=False, test={"family": "none"},
       autocast="fp32"),
    Op("linalg_eigh(Tensor A, str UPLO='L') -> (Tensor, Tensor)", method=False, test={"family": "none"},
       autocast="fp32"),
    Op("linalg_eigvalsh(Tensor A, str UPLO='L') -> Tensor", method=False, test={"family": "none"},
       autocast="fp32"),
    Op("linalg_qr(Tensor A, str mode='reduced') -> (Tensor, Tensor)", method=False, test={"family": "none"},
       autocast="fp32"),
    Op("linalg_householder_product(Tensor A, Tensor tau) -> Tensor", method=False, test={"family": "none"},
       autocast="fp32"),
    Op("linalg_lu_factor_ex(Tensor A, *, bool pivot=True, bool check_errors=False) -> (Tensor, Tensor, Tensor)",
       method=False, test={"family": "none"}),
    Op("linalg_lu_factor(Tensor A, *, bool pivot=True) -> (Tensor, Tensor)", method=False, test={"family": "none"}),
    Op("linalg_lu(Tensor A, *, bool pivot=True) -> (Tensor, Tensor, Tensor)", method=False, test={"family": "none"}),
    Op("linalg_lu_solve(Tensor LU, Tensor pivots, Tensor B, *, bool left=True, bool adjoint=False) -> Tensor",
       method=False, test={"family": "none"},
       autocast="fp32"),
    # LDL^T (LDL^H) with Bunch-Kaufman pivoting, LAPACK's sytrf / hetrf; no derivative, as in PyTorch
    Op("linalg_ldl_factor_ex(Tensor A, *, bool hermitian=False, bool check_errors=False) -> (Tensor, Tensor, Tensor)",
       method=False, test={"family": "none"}),
    Op("linalg_ldl_factor(Tensor A, *, bool hermitian=False) -> (Tensor, Tensor)", method=False,
       test={"family": "none"}),
    Op("linalg_ldl_solve(Tensor LD, Tensor pivots, Tensor B, *, bool hermitian=False) -> Tensor", method=False,
       test={"family": "none"}),
    Op("linalg_eig(Tensor A) -> (Tensor, Tensor)", method=False, test={"family": "none"},
       autocast="fp32"),
    Op("linalg_eigvals(Tensor A) -> Tensor", method=False, test={"family": "none"},
       autocast="fp32"),
    # ---- reductions (src/ops/reduction, kernels in backend/cpu/reduce_kernels.cpp) ------------------
    reduction("sum", "np.sum(a, axis=dim, keepdims=keepdim)", dtypes="all", extra=", *, ScalarType? dtype=None"),
    reduction("prod", "np.prod(a, axis=dim, keepdims=keepdim)", extra=", *, ScalarType? dtype=None",
              autocast="fp32"),
    reduction("mean", "np.mean(a, axis=dim, keepdims=keepdim)", dtypes="float", extra=", *, ScalarType? dtype=None",
              quantized="mean"),
    reduction("amax", "np.amax(a, axis=dim, keepdims=keepdim)", dim="int[1] dim=[]"),
    reduction("amin", "np.amin(a, axis=dim, keepdims=keepdim)", dim="int[1] dim=[]"),
    reduction("all", "np.all(a, axis=dim, keepdims=keepdim)", dtypes="all"),
    reduction("any", "np.any(a, axis=dim, keepdims=keepdim)", dtypes="all"),
    reduction("logsumexp", "np.log(np.sum(np.exp(a), axis=dim, keepdims=keepdim))", dtypes="float",
              dim="int[1] dim"),
    Op("argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
       test={"family": "reduction", "ref": "np.argmax(a, axis=dim, keepdims=keepdim)", "dtypes": "numeric",
             "single_dim": True}),
    Op("argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
       test={"family": "reduction", "ref": "np.argmin(a, axis=dim, keepdims=keepdim)", "dtypes": "numeric",
             "single_dim": True}),
    reduction("nansum", "np.nansum(a, axis=dim, keepdims=keepdim)", dtypes="float",
              extra=", *, ScalarType? dtype=None"),
    reduction("nanmean", "np.nanmean(a, axis=dim, keepdims=keepdim)", dtypes="float",
              extra=", *, ScalarType? dtype=None"),
    Op("count_nonzero(Tensor self, int[1]? dim=None) -> Tensor", test={"family": "none"}),
    Op("cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", test={"family": "none"}),
    Op("cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", test={"family": "none"}),
    Op("cummax(Tensor self, int dim) -> (Tensor, Tensor)", test={"family": "none"}),
    Op("cummin(Tensor self, int dim) -> (Tensor, Tensor)", test={"family": "none"}),
    Op("logcumsumexp(Tensor self, int dim) -> Tensor", test={"family": "none"}),
    Op("var(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor",
       test={"family": "reduction", "ref": "np.var(a, axis=dim, keepdims=keepdim, ddof=1)", "dtypes": "float"}),
    Op("std(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor",
       test={"family": "reduction", "ref": "np.std(a, axis=dim, keepdims=keepdim, ddof=1)", "dtypes": "float"}),
    # ---- FBGEMM's recommendation kernels (src/ops/fbgemm/): fbgemm_gpu's schemas, reached as
    # ember.ops.fbgemm.<name> only (tests/test_fbgemm_*.py check them by hand)
    Op("fbgemm::asynchronous_complete_cumsum(Tensor t_in) -> Tensor", method=False, test={"family": "none"}),
    # sparse-feature helpers (src/ops/fbgemm/sparse.cpp): index bookkeeping, no gradients
    *[Op(f"fbgemm::{s}", method=False, test={"family": "none"}) for s in (
        "permute_2D_sparse_data(Tensor permute, Tensor lengths, Tensor values, Tensor? weights=None, "
        "int? permuted_lengths_sum=None) -> (Tensor, Tensor, Tensor?)",
        "permute_1D_sparse_data(Tensor permute, Tensor lengths, Tensor values, Tensor? weights=None, "
        "int? permuted_lengths_sum=None) -> (Tensor, Tensor, Tensor?)",
        "bucketize_sparse_features(Tensor lengths, Tensor indices, bool bucketize_pos, int my_size, "
        "Tensor? weights=None) -> (Tensor, Tensor, Tensor?, Tensor?)",
        "offsets_range(Tensor offsets, int range_size) -> Tensor",
    )],
    # table-batched embeddings (src/ops/fbgemm/tbe.cpp, Note [table-batched embeddings]): Ember's
    # lookup and fused-optimizer backward behind ember.tbe, and FBGEMM's bounds_check_indices
    Op("fbgemm::tbe_forward(Tensor weights, Tensor weights_offsets, Tensor D_offsets, Tensor rows_per_feature, "
       "Tensor hash_size_cumsum, Tensor indices, Tensor offsets, int pooling_mode=0, Tensor? per_sample_weights=None, "
       "Tensor? batch_size_per_feature_per_rank=None, int output_dtype=0) -> Tensor", method=False,
       test={"family": "none"}),
    Op("fbgemm::tbe_backward(Tensor grad_output, Tensor weights, Tensor weights_offsets, Tensor D_offsets, "
       "Tensor rows_per_feature, Tensor hash_size_cumsum, Tensor indices, Tensor offsets, int pooling_mode, "
       "Tensor? per_sample_weights, Tensor? batch_size_per_feature_per_rank, int optimizer, Tensor? momentum1=None, "
       "Tensor? momentum2=None, float learning_rate=0.01, float eps=1e-8, float beta1=0.9, float beta2=0.999, "
       "float weight_decay=0.0, int weight_decay_mode=0, int iter=0) -> Tensor", method=False,
       test={"family": "none"}),
    Op("fbgemm::tbe_per_sample_weights_backward(Tensor grad_output, Tensor weights, Tensor weights_offsets, "
       "Tensor D_offsets, Tensor rows_per_feature, Tensor hash_size_cumsum, Tensor indices, Tensor offsets, "
       "int pooling_mode, Tensor? batch_size_per_feature_per_rank=None) -> Tensor", method=False,
       test={"family": "none"}),
    # FBGEMM's CPU lookup ops (its schemas) over the same kernels; row counts from hash_size_cumsum
    Op("fbgemm::split_embedding_codegen_forward_cpu(Tensor weights, Tensor weights_offsets, Tensor D_offsets, "
       "int total_D, Tensor hash_size_cumsum, Tensor indices, Tensor offsets, int pooling_mode, Tensor indice_weights, "
       "int output_dtype) -> Tensor", method=False, test={"family": "none"}),
    Op("fbgemm::split_embedding_nobag_codegen_forward_cpu(Tensor weights, Tensor weights_offsets, int D, "
       "Tensor hash_size_cumsum, Tensor indices, Tensor offsets, int output_dtype) -> Tensor", method=False,
       test={"family": "none"}),
    Op("fbgemm::split_embedding_codegen_grad_indice_weights_cpu(Tensor grad_output, Tensor weights, "
       "Tensor weights_offsets, Tensor D_offsets, Tensor indices, Tensor offsets, Tensor feature_requires_grad) "
       "-> Tensor", method=False, test={"family": "none"}),
    Op("fbgemm::bounds_check_indices(Tensor rows_per_table, Tensor indices, Tensor offsets, int bounds_check_mode, "
       "Tensor warning, Tensor? weights=None, Tensor? B_offsets=None, int max_B=-1, Tensor? b_t_map=None, "
       "int info_B_num_bits=-1, int info_B_mask=-1, int bounds_check_version=1, bool prefetch_pipeline=False) -> ()",
       method=False, test={"family": "none"}),
    # ---- jagged tensors (src/ops/fbgemm/jagged.cpp, kernels in backend/cpu/jagged_kernels.cpp) and row
    # gathers (src/ops/fbgemm/index_select.cpp). The *_forward / *_backward ops carry the derivatives;
    # the ops returning (values, offsets) are composites over them (NONDIFFERENTIABLE below).
    *[Op(f"fbgemm::{s}", method=False, test={"family": "none"}) for s in (
        "jagged_to_padded_dense_forward(Tensor values, Tensor[] offsets, int[] max_lengths, "
        "float padding_value=0.0) -> Tensor",
        "jagged_to_padded_dense_backward(Tensor grad_output, Tensor[] offsets, int total_L) -> Tensor",
        "jagged_to_padded_dense(Tensor values, Tensor[] offsets, int[] max_lengths, float padding_value=0.0) -> Tensor",
        "dense_to_jagged_forward(Tensor dense, Tensor[] offsets, int? total_L=None) -> Tensor",
        "dense_to_jagged(Tensor dense, Tensor[] x_offsets, int? total_L=None) -> (Tensor, Tensor[])",
        "jagged_1d_to_dense(Tensor values, Tensor offsets, int max_sequence_length, int padding_value) -> Tensor",
        "jagged_2d_to_dense(Tensor values, Tensor offsets, int max_sequence_length) -> Tensor",
        "jagged_dense_elementwise_add(Tensor x_values, Tensor[] x_offsets, Tensor y) -> Tensor",
        "jagged_dense_elementwise_add_jagged_output(Tensor x_values, Tensor[] x_offsets, Tensor y) "
        "-> (Tensor, Tensor[])",
        "jagged_dense_dense_elementwise_add_jagged_output(Tensor x_values, Tensor[] x_offsets, Tensor y_0, "
        "Tensor y_1) -> (Tensor, Tensor[])",
        "jagged_dense_elementwise_mul(Tensor x_values, Tensor[] x_offsets, Tensor y) -> (Tensor, Tensor[])",
        "jagged_dense_bmm_forward(Tensor x_values, Tensor x_offsets, Tensor y, int max_L) -> Tensor",
        "jagged_dense_bmm(Tensor x_values, Tensor x_offsets, Tensor y, int max_L) -> (Tensor, Tensor)",
        "jagged_jagged_bmm_forward(Tensor x_values, Tensor y_values, Tensor x_offsets, int max_L) -> Tensor",
        "jagged_jagged_bmm(Tensor x_values, Tensor y_values, Tensor x_offsets, int max_L) -> Tensor",
        "batched_dense_vec_jagged_2d_mul(Tensor v, Tensor a_values, Tensor a_offsets) -> Tensor",
        "batched_dense_vec_jagged_2d_mul_backward(Tensor grad_output, Tensor v, Tensor a_values, Tensor a_offsets) "
        "-> (Tensor, Tensor)",
        "jagged_softmax_forward(Tensor values, Tensor x_offsets, int max_L) -> Tensor",
        "jagged_softmax(Tensor values, Tensor x_offsets, int max_L) -> (Tensor, Tensor)",
        "jagged_softmax_backward(Tensor grad_output, Tensor output, Tensor x_offsets, int max_L) -> Tensor",
        # SymInt? is int?; bool? is bool=False (the registry boxes no optional bool; CPU ignores the hint)
        "index_select_dim0(Tensor input, Tensor indices, int? consecutive_range_start=0, "
        "int? consecutive_range_length=0, bool skip_indices_sorting_fwd=False) -> Tensor",
        "index_select_dim0_backward(Tensor grad_output, Tensor indices, int num_rows) -> Tensor",
        "group_index_select_dim0(Tensor[] input_group, Tensor[] indices_group) -> Tensor[]",
        "permute102_baddbmm_permute102(Tensor bias, Tensor A, Tensor B) -> Tensor",
    )],
    # row-wise quantized tables and the inference TBE (src/ops/fbgemm/quantize.cpp, int_nbit_tbe.cpp)
    *[Op(f"fbgemm::{schema}", method=False, test={"family": "none"}) for schema in (
        "FloatToFused8BitRowwiseQuantized(Tensor t) -> Tensor",
        "FloatOrHalfToFused8BitRowwiseQuantized(Tensor t) -> Tensor",
        "Fused8BitRowwiseQuantizedToFloat(Tensor input) -> Tensor",
        "Fused8BitRowwiseQuantizedToFloatOrHalf(Tensor input, int output_dtype=0, bool scale_bias_last=True, "
        "bool quant_padding_float_type=True) -> Tensor",
        "FloatToFusedNBitRowwiseQuantizedSBHalf(Tensor input, int bit_rate) -> Tensor",
        "FloatOrHalfToFusedNBitRowwiseQuantizedSBHalf(Tensor input, int bit_rate) -> Tensor",
        "FusedNBitRowwiseQuantizedSBHalfToFloat(Tensor input, int bit_rate) -> Tensor",
        "FusedNBitRowwiseQuantizedSBHalfToFloatOrHalf(Tensor input, int bit_rate, int output_dtype=0, "
        "bool scale_bias_last=True) -> Tensor",
        "FloatToHFP8Quantized(Tensor input, int ebits, int exponent_bias, float max_pos) -> Tensor",
        "HFP8QuantizedToFloat(Tensor input, int ebits, int exponent_bias) -> Tensor",
        "int_nbit_split_embedding_codegen_lookup_function(Tensor dev_weights, Tensor uvm_weights, "
        "Tensor weights_placements, Tensor weights_offsets, Tensor weights_tys, Tensor D_offsets, int total_D, "
        "int max_int2_D, int max_int4_D, int max_int8_D, int max_float16_D, int max_float32_D, Tensor indices, "
        "Tensor offsets, int pooling_mode, Tensor? indice_weights, int output_dtype=1, "
        "Tensor? lxu_cache_weights=None, Tensor? lxu_cache_locations=None, int? row_alignment=None, "
        "int? max_float8_D=0, int? fp8_exponent_bits=-1, int? fp8_exponent_bias=-1) -> Tensor",
        # Ember's own: the same lookup checked against each table's real row count, with a
        # BoundsCheckMode (FATAL raises; WARNING/IGNORE repair and count repairs into `warning`)
        "int_nbit_split_embedding_bounds_checked_lookup(Tensor dev_weights, Tensor weights_offsets, "
        "Tensor weights_tys, Tensor D_offsets, int total_D, Tensor rows_per_table, Tensor indices, Tensor offsets, "
        "int pooling_mode, Tensor? indice_weights, int output_dtype, int row_alignment, int fp8_exponent_bits, "
        "int fp8_exponent_bias, int bounds_check_mode, Tensor warning) -> Tensor",
    )],
]


# ---- derivatives -------------------------------------------------------------------------------
# Reverse-mode formulas, per op and differentiable input: C++ expressions over `grad`, the op's
# arguments, `result` and `<input>_sizes`, evaluated in ember::autograd with the helpers of
# native/src/autograd/formulas.h (docs/dev/autograd.md). Complex inputs follow PyTorch's
# conjugate Wirtinger convention (hence the conj()). The engine sums broadcast gradients back to
# each input's shape and casts them to its dtype. An op with a floating result that is missing
# here raises "the derivative for '<op>' is not implemented" when backward reaches it.
_N = "std::nullopt"
_ONE = "Scalar(int64_t(1))"


def _mul(a: str, b: str) -> str:
    return f"mul({a}, {b}, {_N})"


def _div(a: str, b: str) -> str:
    return f"div({a}, {b}, {_N}, {_N})"


def _add(a: str, b: str) -> str:
    return f"add({a}, {b}, {_ONE}, {_N})"


def _sub(a: str, b: str) -> str:
    return f"sub({a}, {b}, {_ONE}, {_N})"


def _sq(a: str) -> str:
    return _mul(a, a)


def _neg(a: str) -> str:
    return f"neg({a}, {_N})"


def _sqrt(a: str) -> str:
    return f"sqrt({a}, {_N})"


def _chain(expr: str) -> str:
    """grad * conj(d result / d self) for a unary op."""
    return _mul("grad", f"conj({expr})")


# Forward mode: each op's "result" entry is its JVP, the tangent of the result. "auto_linear": the
# op applied to the inputs' tangents (ops linear in their differentiable inputs);
# "auto_element_wise": derived from the VJPs above, for ops whose VJP is elementwise in grad;
# otherwise a formula over `<input>_t` (an input's tangent, zeros when it has none), the arguments
# and `result`.
_LINEAR = "auto_linear"
_ELEMENTWISE = "auto_element_wise"


def _reduction_jvp(local: str) -> str:
    """A real reduction over `dim`: sum(conj(d result / d self) * self_t), where the local
    derivative is the VJP of ones (ONES)."""
    return f"reduction_jvp({local.replace('ONES', f'ones_like(result, {_N})')}, self_t, dim, keepdim)"


_SELF_SIZES = "reshape(grad, self_sizes)"
_SAFE_SELF = f"where(eq(self, num(0.0), {_N}), num(1.0), self)"
DERIVATIVES: dict[str, dict[str, str]] = {
    # views and copies
    "view": {"result": _LINEAR, "self": _SELF_SIZES}, "reshape": {"result": _LINEAR, "self": _SELF_SIZES}, "flatten": {"result": _LINEAR, "self": _SELF_SIZES},
    "unflatten": {"result": _LINEAR, "self": _SELF_SIZES}, "squeeze": {"result": _LINEAR, "self": _SELF_SIZES}, "unsqueeze": {"result": _LINEAR, "self": _SELF_SIZES},
    "permute": {"result": _LINEAR, "self": "permute(grad, inverse_permutation(dims))"},
    "transpose": {"result": _LINEAR, "self": "transpose(grad, dim0, dim1)"}, "t": {"result": _LINEAR, "self": "t(grad)"},
    "movedim": {"result": _LINEAR, "self": "movedim(grad, destination, source)"},
    "expand": {"result": _LINEAR, "self": "grad"}, "broadcast_to": {"result": _LINEAR, "self": "grad"},
    "select": {"result": _LINEAR, "self": "select_backward(grad, self_sizes, dim, index)"},
    "slice": {"result": _LINEAR, "self": "slice_backward(grad, self_sizes, dim, start, step)"},
    "narrow": {"result": _LINEAR, "self": "slice_backward(grad, self_sizes, dim, start, 1)"},
    "to_dtype": {"result": _LINEAR, "self": "grad"}, "clone": {"result": _LINEAR, "self": "grad"}, "contiguous": {"result": _LINEAR, "self": "grad"},
    "to_memory_format": {"result": _LINEAR, "self": "grad"},
    "copy_": {"result": "src_t", "self": "zeros_of(grad)", "src": "grad"},
    "fill_": {"result": "zeros_of(self_t)", "self": "zeros_of(grad)"}, "zero_": {"result": "zeros_of(self_t)", "self": "zeros_of(grad)"},
    # indexing
    "index_select": {"result": _LINEAR, "self": "index_select_backward(grad, self_sizes, dim, index)"},
    "gather": {"result": _LINEAR, "self": "gather_backward(grad, self_sizes, dim, index)"},
    "index_add": {"result": _LINEAR, "self": "grad", "source": "scale(index_select(grad, dim, index), alpha)"},
    "masked_fill": {"result": "masked_fill(self_t, mask, Scalar(0.0))", "self": "masked_fill(grad, mask, Scalar(0.0))"},
    "index": {"result": _LINEAR, "self": "index_put(zeros(self_sizes, grad.dtype(), grad.device()), indices, grad, true)"},
    "index_put": {"result": _LINEAR, "self": "accumulate ? grad : index_put(grad, indices, num(0.0), false)",
                  "values": "index(grad, indices)"},
    "index_put_": {"result": _LINEAR, "self": "accumulate ? grad : index_put(grad, indices, num(0.0), false)",
                   "values": "index(grad, indices)"},
    "where": {"result": _LINEAR, "self": "mask_backward(grad, condition)", "other": "mask_backward(grad, logical_not(condition, " + _N + "))"},
    # arithmetic
    "add": {"result": _LINEAR, "self": "grad", "other": "scale(grad, alpha)"},
    "sub": {"result": _LINEAR, "self": "grad", "other": "neg(scale(grad, alpha), " + _N + ")"},
    "mul": {"result": _ELEMENTWISE, "self": _mul("grad", "conj(other)"), "other": _mul("grad", "conj(self)")},
    "div": {"result": _ELEMENTWISE, "self": f"rounding_mode ? zeros_of(grad) : {_div('grad', 'conj(other)')}",
            "other": f"rounding_mode ? zeros_of(grad) : neg({_mul('grad', 'conj(' + _div(_div('self', 'other'), 'other') + ')')}, {_N})"},
    "true_divide": {"result": _ELEMENTWISE, "self": _div("grad", "conj(other)"),
                    "other": f"neg({_mul('grad', 'conj(' + _div(_div('self', 'other'), 'other') + ')')}, {_N})"},
    "pow": {"result": _ELEMENTWISE, "self": "pow_self_backward(grad, self, other)", "other": "pow_other_backward(grad, self, other, result)"},
    # more math (src/ops/composite/math.cpp)
    "square": {"result": _ELEMENTWISE, "self": _chain(_mul("num(2.0)", "self"))},
    "deg2rad": {"result": _ELEMENTWISE, "self": _mul("grad", "num(0.017453292519943295)")},
    "rad2deg": {"result": _ELEMENTWISE, "self": _mul("grad", "num(57.29577951308232)")},
    "sinc": {"result": _ELEMENTWISE, "self": _chain(f"where(eq(self, num(0.0), {_N}), zeros_like(self, {_N}), "
                                                   + _div(_sub(f"cos({_mul('self', 'num(3.141592653589793)')}, {_N})", "result"), "self") + ")")},
    "logaddexp": {"result": _ELEMENTWISE, "self": _mul("grad", f"sigmoid({_sub('self', 'other')}, {_N})"),
                  "other": _mul("grad", f"sigmoid({_sub('other', 'self')}, {_N})")},
    "logaddexp2": {"result": _ELEMENTWISE, "self": _mul("grad", f"sigmoid({_mul(_sub('self', 'other'), 'num(0.6931471805599453)')}, {_N})"),
                   "other": _mul("grad", f"sigmoid({_mul(_sub('other', 'self'), 'num(0.6931471805599453)')}, {_N})")},
    "xlogy": {"result": _ELEMENTWISE,
              "self": f"masked_fill(xlogy(grad, other, {_N}), logical_and(eq(self, num(0.0), {_N}), le(other, num(0.0), {_N}), {_N}), Scalar(0.0))",
              "other": _div(_mul("grad", "self"), "other")},
    "copysign": {"result": _ELEMENTWISE, "self": _mul("grad", f"masked_fill({_div('result', 'self')}, eq(self, num(0.0), {_N}), Scalar(0.0))"),
                 "other": "zeros_like(other, std::nullopt)"},
    "trace": {"result": _LINEAR, "self": "diagonal_backward(expand(grad, IntList{std::min(self_sizes[0], self_sizes[1])}), self_sizes, 0, 0, 1)"},
    "diag": {"result": _LINEAR, "self": "self_sizes.size() == 1 ? ember::diagonal(grad, diagonal, 0, 1) : diagonal_backward(grad, self_sizes, diagonal, 0, 1)"},
    "diag_embed": {"result": _LINEAR, "self": "ember::diagonal(grad, offset, dim1, dim2)"},
    "diagflat": {"result": _LINEAR, "self": "reshape(ember::diagonal(grad, offset, 0, 1), self_sizes)"},
    "atan2": {"result": _ELEMENTWISE, "self": _mul("grad", _div("other", _add(_sq("self"), _sq("other")))),
              "other": _mul("grad", _div(f"neg(self, {_N})", _add(_sq("self"), _sq("other"))))},
    "hypot": {"result": _ELEMENTWISE, "self": _mul("grad", _div("self", "result")), "other": _mul("grad", _div("other", "result"))},
    "maximum": {"result": _ELEMENTWISE, "self": "pick_backward(grad, self, other, true, true)",
                "other": "pick_backward(grad, self, other, false, true)"},
    "minimum": {"result": _ELEMENTWISE, "self": "pick_backward(grad, self, other, true, false)",
                "other": "pick_backward(grad, self, other, false, false)"},
    "neg": {"result": _LINEAR, "self": f"neg(grad, {_N})"},
    "abs": {"result": _ELEMENTWISE, "self": _mul("grad", "sgn(self)")},
    "exp": {"result": _ELEMENTWISE, "self": _chain("result")},
    "exp2": {"result": _ELEMENTWISE, "self": _chain(_mul("result", "num(0.69314718055994530942)"))},
    "expm1": {"result": _ELEMENTWISE, "self": _chain(_add("result", "num(1.0)"))},
    "log": {"result": _ELEMENTWISE, "self": _div("grad", "conj(self)")},
    "log2": {"result": _ELEMENTWISE, "self": _div("grad", f"conj({_mul('self', 'num(0.69314718055994530942)')})")},
    "log10": {"result": _ELEMENTWISE, "self": _div("grad", f"conj({_mul('self', 'num(2.30258509299404568402)')})")},
    "log1p": {"result": _ELEMENTWISE, "self": _div("grad", f"conj({_add('self', 'num(1.0)')})")},
    "sqrt": {"result": _ELEMENTWISE, "self": _div("grad", f"conj({_mul('num(2.0)', 'result')})")},
    "rsqrt": {"result": _ELEMENTWISE, "self": _chain(_mul("num(-0.5)", _mul("result", _sq("result"))))},
    "reciprocal": {"result": _ELEMENTWISE, "self": f"neg({_chain(_sq('result'))}, {_N})"},
    "sin": {"result": _ELEMENTWISE, "self": _chain(f"cos(self, {_N})")},
    "cos": {"result": _ELEMENTWISE, "self": f"neg({_chain(f'sin(self, {_N})')}, {_N})"},
    "tan": {"result": _ELEMENTWISE, "self": _chain(_add("num(1.0)", _sq("result")))},
    "asin": {"result": _ELEMENTWISE, "self": _div("grad", f"sqrt({_sub('num(1.0)', _sq('self'))}, {_N})")},
    "acos": {"result": _ELEMENTWISE, "self": _neg(_div("grad", _sqrt(_sub("num(1.0)", _sq("self")))))},
    "atan": {"result": _ELEMENTWISE, "self": _div("grad", _add("num(1.0)", _sq("self")))},
    "sinh": {"result": _ELEMENTWISE, "self": _chain(f"cosh(self, {_N})")},
    "cosh": {"result": _ELEMENTWISE, "self": _chain(f"sinh(self, {_N})")},
    "tanh": {"result": _ELEMENTWISE, "self": _chain(_sub("num(1.0)", _sq("result")))},
    "asinh": {"result": _ELEMENTWISE, "self": _div("grad", f"sqrt({_add(_sq('self'), 'num(1.0)')}, {_N})")},
    "acosh": {"result": _ELEMENTWISE, "self": _div("grad", f"sqrt({_sub(_sq('self'), 'num(1.0)')}, {_N})")},
    "atanh": {"result": _ELEMENTWISE, "self": _div("grad", _sub("num(1.0)", _sq("self")))},
    "sigmoid": {"result": _ELEMENTWISE, "self": _chain(_mul("result", _sub("num(1.0)", "result")))},
    "erf": {"result": _ELEMENTWISE, "self": _mul("grad", _mul("num(1.12837916709551257390)", f"exp(neg({_sq('self')}, {_N}), {_N})"))},
    "erfc": {"result": _ELEMENTWISE, "self": _mul("grad", _mul("num(-1.12837916709551257390)", f"exp(neg({_sq('self')}, {_N}), {_N})"))},
    "erfinv": {"result": _ELEMENTWISE, "self": _mul("grad", _mul("num(0.88622692545275801365)", f"exp({_sq('result')}, {_N})"))},
    "lgamma": {"result": _ELEMENTWISE, "self": _mul("grad", f"digamma(self, {_N})")},
    # (x at 0 replaced by 1 where it divides, so the branch where() drops has no 0/0 to leak into a
    # double backward)
    # I0' = I1; (e^-|x| I0)' = i1e - sgn(x) i0e; I1' = I0 - I1 / x (1/2 at 0);
    # (e^-|x| I1)' = i0e - i1e (sgn(x) + 1 / x) (1/2 at 0)
    "i0": {"result": _ELEMENTWISE, "self": _mul("grad", f"special_i1(self, {_N})")},
    "special_i0e": {"result": _ELEMENTWISE, "self": _mul("grad", _sub(f"special_i1e(self, {_N})", _mul(f"sign(self, {_N})", "result")))},
    "special_i1": {"result": _ELEMENTWISE, "self": _mul("grad", f"where(eq(self, num(0.0), {_N}), num(0.5), "
                                                          + _sub(f"i0(self, {_N})", _div("result", _SAFE_SELF)) + ")")},
    "special_i1e": {"result": _ELEMENTWISE, "self": _mul("grad", f"where(eq(self, num(0.0), {_N}), num(0.5), "
                                                           + _sub(f"special_i0e(self, {_N})", _mul("result", _add(f"sign(self, {_N})", _div("num(1.0)", _SAFE_SELF)))) + ")")},
    # ember.special (PyTorch's formulas; zeta is differentiable in q (`other`) only, as there)
    "special_entr": {"result": _ELEMENTWISE, "self": _mul("grad", _neg(_add("num(1.0)", f"log(self, {_N})")))},
    "special_erfcx": {"result": _ELEMENTWISE,
                      "self": _mul("grad", _sub(_mul("num(2.0)", _mul("self", "result")), "num(1.12837916709551257390)"))},
    "special_ndtr": {"result": _ELEMENTWISE,
                     "self": _mul("grad", _mul("num(0.39894228040143267794)", f"exp({_mul('num(-0.5)', _sq('self'))}, {_N})"))},
    "special_ndtri": {"result": _ELEMENTWISE,
                      "self": _mul("grad", _mul("num(2.50662827463100050242)", f"exp({_mul('num(0.5)', _sq('result'))}, {_N})"))},
    "special_log_ndtr": {"result": _ELEMENTWISE,
                         "self": _mul("grad", _mul("num(0.39894228040143267794)",
                                                   f"exp(neg({_add('result', _mul('num(0.5)', _sq('self')))}, {_N}), {_N})"))},
    "special_xlog1py": {"result": _ELEMENTWISE,
                        "self": f"masked_fill(special_xlog1py(grad, other, {_N}), logical_and(eq(self, num(0.0), {_N}), "
                                f"le(other, num(-1.0), {_N}), {_N}), Scalar(0.0))",
                        "other": _div(_mul("grad", "self"), _add("other", "num(1.0)"))},
    "special_zeta": {"result": _ELEMENTWISE,
                     "self": "[]() -> Tensor { throw NotImplementedError(\"[special_zeta] the derivative for 'self' is "
                             "not implemented\"); }()",
                     "other": _mul("grad", _mul(_neg("self"), f"special_zeta({_add('self', 'num(1.0)')}, other, {_N})"))},
    "floor": {"result": _ELEMENTWISE, "self": "zeros_of(grad)"}, "ceil": {"result": _ELEMENTWISE, "self": "zeros_of(grad)"}, "trunc": {"result": _ELEMENTWISE, "self": "zeros_of(grad)"},
    "round": {"result": _ELEMENTWISE, "self": "zeros_of(grad)"}, "sign": {"result": _ELEMENTWISE, "self": "zeros_of(grad)"}, "frac": {"result": _ELEMENTWISE, "self": "grad"},
    "relu": {"result": _ELEMENTWISE, "self": f"mask_backward(grad, gt(result, num(0.0), {_N}))"},
    "clamp": {"result": _ELEMENTWISE, "self": "clamp_backward(grad, self, min, max)"},
    "conj": {"result": _LINEAR, "self": "conj(grad)"},
    "silu": {"result": _ELEMENTWISE, "self": "silu_grad(grad, self)"},
    "leaky_relu": {"result": _ELEMENTWISE, "self": f"where(gt(self, num(0.0), {_N}), grad, {_mul('grad', 'num(negative_slope)')})"},
    "hardtanh": {"result": _ELEMENTWISE, "self": f"mask_backward(grad, logical_and(gt(self, num(min_val), {_N}), lt(self, num(max_val), {_N}), {_N}))"},
    "relu6": {"result": _ELEMENTWISE, "self": f"mask_backward(grad, logical_and(gt(self, num(0.0), {_N}), lt(self, num(6.0), {_N}), {_N}))"},
    "threshold": {"result": _ELEMENTWISE, "self": f"mask_backward(grad, gt(self, num(threshold), {_N}))"},
    "softplus": {"result": _ELEMENTWISE, "self": "softplus_grad(grad, self, beta, threshold)"},
    "logsigmoid": {"result": _ELEMENTWISE, "self": _mul("grad", f"sigmoid(neg(self, {_N}), {_N})")},
    "softsign": {"result": _ELEMENTWISE, "self": _div("grad", _sq(_add("num(1.0)", f"abs(self, {_N})")))},
    "tanhshrink": {"result": _ELEMENTWISE, "self": _mul("grad", _sq(f"tanh(self, {_N})"))},
    "hardsigmoid": {"result": _ELEMENTWISE, "self": "hardsigmoid_grad(grad, self)"},
    "hardswish": {"result": _ELEMENTWISE, "self": "hardswish_grad(grad, self)"},
    "elu": {"result": _ELEMENTWISE, "self": "elu_backward(grad, self, result, alpha, scale, input_scale)"},
    "selu": {"result": _ELEMENTWISE, "self": "elu_backward(grad, self, result, 1.6732632423543772, 1.0507009873554805, 1.0)"},
    "celu": {"result": _ELEMENTWISE, "self": "elu_backward(grad, self, result, alpha, 1.0, 1.0 / alpha)"},
    "mish": {"result": _ELEMENTWISE, "self": "mish_grad(grad, self)"},
    "gelu": {"result": _ELEMENTWISE, "self": "gelu_grad(grad, self, approximate)"},
    "logit": {"result": _ELEMENTWISE, "self": "logit_backward(grad, self, eps)"},
    "nan_to_num": {"result": _ELEMENTWISE, "self": "mask_backward(grad, isfinite(self))"},
    "lerp": {"result": _ELEMENTWISE, "self": _mul("grad", f"conj({_sub('num(1.0)', 'weight')})"), "end": _mul("grad", "conj(weight)"),
             "weight": _mul("grad", f"conj({_sub('end', 'self')})")},
    "addcmul": {"result": _ELEMENTWISE, "self": "grad", "tensor1": "scale(" + _mul("grad", "conj(tensor2)") + ", value)",
                "tensor2": "scale(" + _mul("grad", "conj(tensor1)") + ", value)"},
    "addcdiv": {"result": _ELEMENTWISE, "self": "grad", "tensor1": "scale(" + _div("grad", "conj(tensor2)") + ", value)",
                "tensor2": "scale(" + _neg(_mul("grad", f"conj({_div('tensor1', _sq('tensor2'))})")) + ", value)"},
    "remainder": {"result": _ELEMENTWISE, "self": "grad", "other": _neg(_mul("grad", f"floor({_div('self', 'other')}, {_N})"))},
    "fmod": {"result": _ELEMENTWISE, "self": "grad", "other": _neg(_mul("grad", f"trunc({_div('self', 'other')}, {_N})"))},
    "real": {"result": _LINEAR, "self": "grad"},
    "tril": {"result": _LINEAR, "self": "tril(grad, diagonal)"}, "triu": {"result": _LINEAR, "self": "triu(grad, diagonal)"},
    "flip": {"result": _LINEAR, "self": "flip(grad, dims)"},
    "atleast_1d": {"result": _LINEAR, "self": _SELF_SIZES}, "atleast_2d": {"result": _LINEAR, "self": _SELF_SIZES}, "atleast_3d": {"result": _LINEAR, "self": _SELF_SIZES},
    "narrow_copy": {"result": _LINEAR, "self": "slice_backward(grad, self_sizes, dim, start, 1)"},
    "scatter": {"result": _LINEAR, "self": "scatter(grad, dim, index, zeros_shaped(index.sizes(), grad))",
                "src": "gather(grad, dim, index)"},
    "scatter_add": {"result": _LINEAR, "self": "grad", "src": "gather(grad, dim, index)"},
    "index_copy": {"result": _LINEAR, "self": "index_fill(grad, dim, index, Scalar(0.0))", "source": "index_select(grad, dim, index)"},
    "index_fill": {"result": "index_fill(self_t, dim, index, Scalar(0.0))", "self": "index_fill(grad, dim, index, Scalar(0.0))"},
    # joining and splitting (Tensor[] inputs and outputs)
    "cat": {"result": _LINEAR, "tensors": "cat_backward(grad, tensors_sizes, dim)"},
    "stack": {"result": _LINEAR, "tensors": "unbind(grad, dim)"},
    "split": {"result": _LINEAR, "self": "cat(grads, dim)"}, "chunk": {"result": _LINEAR, "self": "cat(grads, dim)"},
    "tensor_split": {"result": _LINEAR, "self": "cat(grads, dim)"}, "unbind": {"result": _LINEAR, "self": "stack(grads, dim)"},
    # reductions
    "var": {"result": _reduction_jvp("var_backward(ONES, self, dim, correction, keepdim)"), "self": "var_backward(grad, self, dim, correction, keepdim)"},
    "std": {"result": _reduction_jvp(_div("var_backward(ONES, self, dim, correction, keepdim)", "sum_backward(" + _mul("num(2.0)", "result") + ", self_sizes, dim, keepdim)")), "self": _div("var_backward(grad, self, dim, correction, keepdim)",
                         "sum_backward(" + _mul("num(2.0)", "result") + ", self_sizes, dim, keepdim)")},
    "norm": {"result": _reduction_jvp("norm_backward(ONES, self, result, p, dim, keepdim)"), "self": "norm_backward(grad, self, result, p, dim, keepdim)"},
    "sum": {"result": _LINEAR, "self": "sum_backward(grad, self_sizes, dim, keepdim)"},
    "mean": {"result": _LINEAR, "self": "mean_backward(grad, self_sizes, dim, keepdim)"},
    "amax": {"result": _reduction_jvp("extreme_backward(ONES, self, result, dim, keepdim)"), "self": "extreme_backward(grad, self, result, dim, keepdim)"},
    "amin": {"result": _reduction_jvp("extreme_backward(ONES, self, result, dim, keepdim)"), "self": "extreme_backward(grad, self, result, dim, keepdim)"},
    "logsumexp": {"result": _reduction_jvp("logsumexp_backward(ONES, self, result, dim, keepdim)"), "self": "logsumexp_backward(grad, self, result, dim, keepdim)"},
    "softmax": {"result": _mul("result", _sub("self_t", f"sum({_mul('result', 'self_t')}, IntList{{dim}}, true, {_N})")), "self": "softmax_backward(grad, result, dim)"},
    "log_softmax": {"result": _sub("self_t", f"sum({_mul(f'exp(result, {_N})', 'self_t')}, IntList{{dim}}, true, {_N})"), "self": "log_softmax_backward(grad, result, dim)"},
    "cumsum": {"result": _LINEAR, "self": "cumsum_backward(grad, dim)"},
    "prod": {"self": "prod_backward(grad, self, dim, keepdim)",
             "result": _reduction_jvp("prod_backward(ONES, self, dim, keepdim)")},
    "nansum": {"self": "mask_backward(sum_backward(grad, self_sizes, dim, keepdim), nan_kept(self))",
               "result": "sum(masked_fill(self_t, isnan(self), Scalar(0.0)), dim, keepdim, dtype)"},
    "nanmean": {"self": "nanmean_backward(grad, self, dim, keepdim)", "result": "nanmean_jvp(self_t, self, dim, keepdim)"},
    "cumprod": {"self": "cumprod_backward(grad, self, result, dim)", "result": "cumprod_jvp(self_t, self, result, dim)"},
    "logcumsumexp": {"self": "logcumsumexp_backward(grad, self, result, dim)",
                     "result": "logcumsumexp_jvp(self_t, self, result, dim)"},
    # views and shapes (helpers in native/src/autograd/formulas_select.h)
    "unfold": {"self": "unfold_backward(grad, self_sizes, dimension, size, step)", "result": _LINEAR},
    "diagonal": {"self": "diagonal_backward(grad, self_sizes, offset, dim1, dim2)", "result": _LINEAR},
    "as_strided": {"self": "as_strided_backward(grad, self, size, stride, storage_offset)",
                   "result": "as_strided_jvp(self_t, self, size, stride, storage_offset)"},
    "repeat": {"self": "repeat_backward(grad, self_sizes, repeats)", "result": _LINEAR},
    "tile": {"self": "tile_backward(grad, self_sizes, dims)", "result": _LINEAR},
    "roll": {"self": "roll(grad, negated(shifts), dims)", "result": _LINEAR},
    "fliplr": {"self": "fliplr(grad)", "result": _LINEAR}, "flipud": {"self": "flipud(grad)", "result": _LINEAR},
    "rot90": {"self": "rot90(grad, -k, dims)", "result": _LINEAR},
    "repeat_interleave": {"self": "repeat_interleave_backward(grad, self_sizes, repeats, dim)", "result": _LINEAR},
    "diff": {"self": "diff_backward(grad, n, dim, self, prepend, append, 0)",
             "prepend": "diff_backward(grad, n, dim, self, prepend, append, 1)",
             "append": "diff_backward(grad, n, dim, self, prepend, append, 2)", "result": _LINEAR},
    "hstack": {"tensors": "stack_like_backward(grad, tensors_sizes, 1)", "result": _LINEAR},
    "vstack": {"tensors": "stack_like_backward(grad, tensors_sizes, 2)", "result": _LINEAR},
    "dstack": {"tensors": "stack_like_backward(grad, tensors_sizes, 3)", "result": _LINEAR},
    "broadcast_tensors": {"tensors": "grads", "result": _LINEAR},  # the engine sums each back to its input
    "meshgrid": {"tensors": "meshgrid_backward(grads, tensors_sizes, indexing)", "result": _LINEAR},
    # selection
    "take": {"self": "take_backward(grad, self_sizes, index)", "result": _LINEAR},
    "take_along_dim": {"self": "take_along_dim_backward(grad, self_sizes, indices, dim)", "result": _LINEAR},
    "masked_select": {"self": "masked_select_backward(grad, self, mask)", "result": _LINEAR},
    "masked_scatter": {"self": "masked_fill(grad, mask, Scalar(0.0))",
                       "source": "masked_scatter_source_backward(grad, mask, source_sizes)", "result": _LINEAR},
    "scatter_reduce": {"self": "scatter_reduce_self_backward(grad, self, dim, index, src, reduce, include_self, result)",
                       "src": "scatter_reduce_src_backward(grad, self, dim, index, src, reduce, include_self, result)",
                       "result": "scatter_reduce_jvp(self_t, src_t, self, dim, index, src, reduce, include_self, result)"},
    # (values, indices) ops: the values came from self at the indices (result1)
    "sort": {"self": "select_values_backward(grad, self_sizes, dim, result1, true)",
             "result": "select_values_jvp(self_t, dim, result1, true)"},
    "topk": {"self": "select_values_backward(grad, self_sizes, dim, result1, true)",
             "result": "select_values_jvp(self_t, dim, result1, true)"},
    "msort": {"self": "select_values_backward(grad, self_sizes, 0, sort_indices(self, 0), true)",
              "result": "select_values_jvp(self_t, 0, sort_indices(self, 0), true)"},
    "cummax": {"self": "select_values_backward(grad, self_sizes, dim, result1, true)",
               "result": "select_values_jvp(self_t, dim, result1, true)"},
    "cummin": {"self": "select_values_backward(grad, self_sizes, dim, result1, true)",
               "result": "select_values_jvp(self_t, dim, result1, true)"},
    **{name: {"self": "select_values_backward(grad, self_sizes, dim, result1, keepdim)",
              "result": "select_values_jvp(self_t, dim, result1, keepdim)"}
       for name in ("kthvalue", "median", "nanmedian", "mode")},
    # elementwise
    "floor_divide": {"self": "zeros_of(grad)", "other": "zeros_of(grad)", "result": _ELEMENTWISE},
    "fmax": {"self": "fpick_backward(grad, self, other, true, true)",
             "other": "fpick_backward(grad, self, other, false, true)", "result": _ELEMENTWISE},
    "fmin": {"self": "fpick_backward(grad, self, other, true, false)",
             "other": "fpick_backward(grad, self, other, false, false)", "result": _ELEMENTWISE},
    "digamma": {"self": _mul("grad", "trigamma(self)"), "result": _ELEMENTWISE},
    "heaviside": {"self": "zeros_of(grad)", "values": f"mask_backward(grad, eq(self, num(0.0), {_N}))",
                  "result": _ELEMENTWISE},
    # complex numbers
    "view_as_real": {"self": "view_as_complex(contiguous(grad))", "result": _LINEAR},
    "view_as_complex": {"self": "view_as_real(grad)", "result": "view_as_complex(contiguous(self_t))"},
    "imag": {"self": "complex(zeros_of(grad), grad)", "result": _LINEAR},
    "conj_physical": {"self": "conj(grad)", "result": _LINEAR},
    "complex": {"real": "real(grad)", "imag": "imag(grad)", "result": _LINEAR},
    "polar": {"abs": _mul("grad", f"conj(polar(ones_like(abs, {_N}), angle))"),
              "angle": _mul("grad", f"conj({_mul('result', 'imag_unit()')})"), "result": _ELEMENTWISE},
    "angle": {"self": "angle_backward(grad, self)", "result": _ELEMENTWISE},
    "sgn": {"self": "sgn_backward(grad, self, result)", "result": "sgn_jvp(self_t, self, result)"},
    # fused normalizations (helpers in native/src/autograd/formulas_norm.h; Note [grouped derivatives])
    # both are linear in their differentiable argument: each one's gradient is the other
    "nll_loss_forward": {
        "self": "nll_loss_backward(grad, self, target, weight, reduction, ignore_index, result1)",
        "result": "{std::get<0>(nll_loss_forward(self_t, target, weight, reduction, ignore_index)), Tensor()}"},
    "nll_loss_backward": {
        "grad_output": "std::get<0>(nll_loss_forward(grad, target, weight, reduction, ignore_index))",
        "result": "nll_loss_backward(grad_output_t, self, target, weight, reduction, ignore_index, total_weight)"},
    "native_layer_norm": {
        "input, weight, bias": "layer_norm_grads(grads, input, normalized_shape, weight, bias, result1, result2, eps, "
                               "output_mask)",
        "result": "{layer_norm_jvp(input, input_t, weight.value_or(Tensor()), weight_t, bias_t, result1, result2, "
                  "normalized_shape), "
                  "Tensor(), Tensor()}"},
    "_fused_rms_norm": {
        "input, weight": "rms_norm_grads(grads, input, normalized_shape, weight, result1, eps, output_mask)",
        "result": "{rms_norm_jvp(input, input_t, weight.value_or(Tensor()), weight_t, result1, normalized_shape), "
                  "Tensor()}"},
    "native_group_norm": {
        "input, weight, bias": "group_norm_grads(grads, input, weight, result1, result2, N, C, HxW, group, eps, "
                               "output_mask)",
        "result": "{group_norm_jvp(input, input_t, weight.value_or(Tensor()), weight_t, bias_t, result1, result2, N, "
                  "group), Tensor(), "
                  "Tensor()}"},
    "native_batch_norm": {
        "input, weight, bias": "batch_norm_grads(grads, input, weight, running_mean, running_var, result1, result2, "
                               "training, eps, output_mask)",
        "result": "{batch_norm_jvp(input, input_t, weight.value_or(Tensor()), weight_t, bias_t, "
                  "running_mean.value_or(Tensor()), running_var.value_or(Tensor()), result1, "
                  "result2, training, eps), Tensor(), Tensor()}"},
    "convolution": {  # helpers in native/src/autograd/formulas_conv.h
        "input, weight, bias": "convolution_grads(grads, input, weight, bias, stride, padding, "
                               "dilation, transposed, output_padding, groups, output_mask)",
        "result": "convolution_jvp(input, input_t, weight, weight_t, bias_t, stride, padding, dilation, transposed, "
                  "output_padding, groups)"},
    # pooling: the backward ops are linear in grad_output, so their own derivative is the forward pooling
    "max_pool_with_indices": {"self": "max_pool_with_indices_backward(grad, self, result1, kernel_size.size())",
                              "result": "{pool_gather(self_t, result1, kernel_size.size()), Tensor()}"},
    "adaptive_max_pool": {"self": "max_pool_with_indices_backward(grad, self, result1, output_size.size())",
                          "result": "{pool_gather(self_t, result1, output_size.size()), Tensor()}"},
    "max_pool_with_indices_backward": {"grad_output": "pool_gather(grad, indices, spatial_dims)", "result": _LINEAR},
    "avg_pool": {"self": "avg_pool_backward(grad, self, kernel_size, stride, padding, ceil_mode, count_include_pad, "
                         "divisor_override)", "result": _LINEAR},
    "avg_pool_backward": {"grad_output": "avg_pool(grad, kernel_size, stride, padding, ceil_mode, count_include_pad, "
                                         "divisor_override)", "result": _LINEAR},
    "adaptive_avg_pool": {"self": "adaptive_avg_pool_backward(grad, self, output_size)", "result": _LINEAR},
    "adaptive_avg_pool_backward": {"grad_output": "adaptive_avg_pool(grad, output_size)", "result": _LINEAR},
    # matrix products (helpers in native/src/autograd/formulas_linalg.h)
    "mm": {"self": "mm(grad, mH(mat2))", "mat2": "mm(mH(self), grad)",
           "result": "product_tangent(self, self_t, mat2, mat2_t, [](const Tensor& a, const Tensor& b) { return mm(a, b); })"},
    "bmm": {"self": "bmm(grad, mH(mat2))", "mat2": "bmm(mH(self), grad)",
            "result": "product_tangent(self, self_t, mat2, mat2_t, [](const Tensor& a, const Tensor& b) { return bmm(a, b); })"},
    "matmul": {"self": "matmul_backward(grad, self, other, true)", "other": "matmul_backward(grad, self, other, false)",
               "result": "matmul_tangent(self, self_t, other, other_t)"},
    "mv": {"self": "outer(grad, conj(vec))", "vec": "mv(mH(self), grad)",
           "result": "product_tangent(self, self_t, vec, vec_t, [](const Tensor& a, const Tensor& b) { return mv(a, b); })"},
    "dot": {"self": _mul("grad", "conj(tensor)"), "tensor": _mul("grad", "conj(self)"),
            "result": "product_tangent(self, self_t, tensor, tensor_t, [](const Tensor& a, const Tensor& b) { return dot(a, b); })"},
    "vdot": {"self": _mul("conj(grad)", "other"), "other": _mul("grad", "self"),
             "result": "product_tangent(self, self_t, other, other_t, [](const Tensor& a, const Tensor& b) { return vdot(a, b); })"},
    "outer": {"self": "mv(grad, conj(vec2))", "vec2": "mv(transpose(grad, 0, 1), conj(self))",
              "result": "product_tangent(self, self_t, vec2, vec2_t, [](const Tensor& a, const Tensor& b) { return outer(a, b); })"},
    "addmm": {"self": "scale(grad, beta)", "mat1": "scale(mm(grad, mH(mat2)), alpha)", "mat2": "scale(mm(mH(mat1), grad), alpha)",
              "result": "add_tangents(self_t.defined() ? scale(self_t, beta) : Tensor(), product_tangent(mat1, mat1_t, mat2, mat2_t, "
                        "[&](const Tensor& a, const Tensor& b) { return scale(mm(a, b), alpha); }))"},
    "addmv": {"self": "scale(grad, beta)", "mat": "scale(outer(grad, conj(vec)), alpha)", "vec": "scale(mv(mH(mat), grad), alpha)",
              "result": "add_tangents(self_t.defined() ? scale(self_t, beta) : Tensor(), product_tangent(mat, mat_t, vec, vec_t, "
                        "[&](const Tensor& a, const Tensor& b) { return scale(mv(a, b), alpha); }))"},
    "baddbmm": {"self": "scale(grad, beta)", "batch1": "scale(bmm(grad, mH(batch2)), alpha)",
                "batch2": "scale(bmm(mH(batch1), grad), alpha)",
                "result": "add_tangents(self_t.defined() ? scale(self_t, beta) : Tensor(), product_tangent(batch1, batch1_t, batch2, "
                          "batch2_t, [&](const Tensor& a, const Tensor& b) { return scale(bmm(a, b), alpha); }))"},
    "linalg_solve": {"A": "solve_backward_A(grad, A, B, result, left)", "B": "linalg_solve(mH(A), grad, left)",
                     "result": "solve_tangent(A, A_t, B, B_t, result, left)"},
    "linalg_inv": {"A": "neg(matmul(mH(result), matmul(grad, mH(result))))",
                   "result": "neg(matmul(result, matmul(A_t, result)))"},
    "linalg_det": {"A": "det_backward(grad, A, result)", "result": "det_tangent(A, A_t, result)"},
    "linalg_slogdet": {"A": "slogdet_backward(grads, A, result0)", "result": "{slogdet_sign_tangent(A, A_t, result0), slogdet_logabsdet_tangent(A, A_t)}"},
    "linalg_cholesky": {"A": "cholesky_backward(grad, result, upper)", "result": "cholesky_tangent(A_t, result, upper)"},
    "linalg_cholesky_ex": {"A": "cholesky_backward(grad, result0, upper)", "result": "cholesky_tangent(A_t, result0, upper)"},
    "linalg_solve_triangular": {"A": "solve_triangular_grad_A(grad, A, result, upper, left, unitriangular)",
                                "B": "solve_triangular_grad_B(grad, A, upper, left, unitriangular)",
                                "result": "solve_triangular_tangent(A, A_t, B_t, result, upper, left, unitriangular)"},
    # Fourier transforms (helpers in native/src/autograd/formulas_fft.h): each is linear, so its
    # VJP is the adjoint transform with the same scaling and its JVP the transform of the tangent
    "fft_c2c": {"self": "fft_c2c(grad, dim, normalization, !forward)", "result": _LINEAR},
    "fft_r2c": {"self": "fft_r2c_backward(grad, dim, normalization, onesided, self_sizes)", "result": _LINEAR},
    "fft_c2r": {"self": "fft_c2r_backward(grad, dim, normalization)", "result": _LINEAR},
    "_stft": {"self": "stft_backward_self(grad, self, n_fft, hop_length, win_length, window, center, pad_mode, normalized, onesided)",
              "window": "stft_backward_window(grad, self, n_fft, hop_length, win_length, window, center, pad_mode, normalized, "
                        "onesided)",
              "result": "stft_jvp(self_t, window_t, self, window, n_fft, hop_length, win_length, center, pad_mode, normalized, "
                        "onesided)"},
    "_istft": {"self": "istft_backward_self(grad, self, n_fft, hop_length, win_length, window, center, normalized, onesided, "
                       "length, return_complex)",
               "window": "istft_backward_window(grad, self, n_fft, hop_length, win_length, window, center, normalized, "
                         "onesided, length, return_complex)",
               "result": "istft_jvp(self_t, window_t, self, window, n_fft, hop_length, win_length, center, normalized, "
                         "onesided, length, return_complex)"},
    # embeddings (helpers in native/src/autograd/formulas_embedding.h): linear in the table and in
    # per_sample_weights, so each VJP/JVP is one of the same ops
    "embedding": {"weight": "embedding_dense_backward(grad, indices, weight_sizes[0], padding_idx, scale_grad_by_freq)",
                  "result": _LINEAR},
    "embedding_dense_backward": {"grad_output": "embedding_double_backward(grad, indices, padding_idx, scale_grad_by_freq)",
                                 "result": _LINEAR},
    "_embedding_bag": {
        "weight": "_embedding_bag_backward(grad, indices, offsets, result1, weight_sizes[0], scale_grad_by_freq, mode, "
                  "optional_tensor(per_sample_weights), include_last_offset, padding_idx)",
        "per_sample_weights": "_embedding_bag_per_sample_weights_backward(grad, weight, indices, offsets, mode, "
                              "include_last_offset, padding_idx)",
        "result": "embedding_bag_jvp(weight_t, per_sample_weights_t, weight, indices, offsets, mode, per_sample_weights, "
                  "include_last_offset, padding_idx, result1)"},
    "_embedding_bag_backward": {
        "grad_output": "embedding_bag_backward_grad(grad, indices, offsets, max_indices, scale_grad_by_freq, mode, "
                       "per_sample_weights, include_last_offset, padding_idx)",
        "per_sample_weights": "embedding_bag_backward_weights(grad, grad_output, indices, offsets, scale_grad_by_freq, mode, "
                              "include_last_offset, padding_idx)",
        "result": "add_tangents(_embedding_bag_backward(grad_output_t, indices, offsets, max_indices, num_weights, "
                  "scale_grad_by_freq, mode, per_sample_weights, include_last_offset, padding_idx), per_sample_weights ? "
                  "_embedding_bag_backward(grad_output, indices, offsets, max_indices, num_weights, scale_grad_by_freq, "
                  "mode, per_sample_weights_t, include_last_offset, padding_idx) : Tensor())"},
    # (max_indices is not read in sum mode: indices stands in for it)
    "_embedding_bag_per_sample_weights_backward": {
        "grad_output": "std::get<0>(_embedding_bag(weight, indices, offsets, false, 0, false, optional_tensor(grad), "
                       "include_last_offset, padding_idx))",
        "weight": "_embedding_bag_backward(grad_output, indices, offsets, indices, weight_sizes[0], false, 0, "
                  "optional_tensor(grad), include_last_offset, padding_idx)",
        "result": "add_tangents(_embedding_bag_per_sample_weights_backward(grad_output_t, weight, indices, offsets, mode, "
                  "include_last_offset, padding_idx), _embedding_bag_per_sample_weights_backward(grad_output, weight_t, "
                  "indices, offsets, mode, include_last_offset, padding_idx))"},
    # decompositions (helpers in native/src/autograd/formulas_linalg.h)
    "linalg_svd": {"A": "svd_backward(grads, result0, result1, result2, full_matrices)",
                   "result": "{svd_tangents(A, A_t, result0, result1, result2, full_matrices)}"},
    "linalg_svdvals": {"A": "svdvals_backward(grad, A)", "result": "svdvals_tangent(A, A_t)"},
    "linalg_eigh": {"A": "eigh_backward(grads, result0, result1)", "result": "{eigh_tangents(A_t, result0, result1)}"},
    "linalg_eigvalsh": {"A": "eigvalsh_backward(grad, A, UPLO)", "result": "eigvalsh_tangent(A, A_t, UPLO)"},
    "linalg_qr": {"A": "qr_backward(grads, result0, result1, mode)", "result": "{qr_tangents(A_t, result0, result1, mode)}"},
    "linalg_householder_product": {"A": "householder_product_grads(grad, A, tau).at(0)",
                                   "tau": "householder_product_grads(grad, A, tau).at(1)",
                                   "result": "householder_product_tangent(A, A_t, tau, tau_t)"},
    "linalg_lu_factor_ex": {"A": "lu_factor_backward(grads.at(0), result0, result1)",
                            "result": "{lu_factor_tangent(A_t, result0, result1), Tensor(), Tensor()}"},
    "linalg_lu_factor": {"A": "lu_factor_backward(grads.at(0), result0, result1)",
                         "result": "{lu_factor_tangent(A_t, result0, result1), Tensor()}"},
    "linalg_lu": {"A": "lu_backward(grads, result0, result1, result2)", "result": "{lu_tangents(A_t, result0, result1, result2)}"},
    "linalg_lu_solve": {"LU": "lu_solve_grad_LU(grad, LU, pivots, result, left, adjoint)",
                        "B": "linalg_lu_solve(LU, pivots, grad, left, !adjoint)",
                        "result": "lu_solve_tangent(LU, LU_t, pivots, B_t, result, left, adjoint)"},
    "linalg_eig": {"A": "eig_backward(grads, result0, result1)", "result": "{eig_tangents(A_t, result0, result1)}"},
    "linalg_eigvals": {"A": "eigvals_backward(grad, A)", "result": "eigvals_tangent(A, A_t)"},
    "addbmm": {"self": "scale(grad, beta)", "batch1": "scale(bmm(addbmm_grad_per_batch(grad, batch1), mH(batch2)), alpha)",
               "batch2": "scale(bmm(mH(batch1), addbmm_grad_per_batch(grad, batch1)), alpha)",
               "result": "add_tangents(self_t.defined() ? scale(self_t, beta) : Tensor(), product_tangent(batch1, batch1_t, batch2, "
                         "batch2_t, [&](const Tensor& a, const Tensor& b) { return scale(sum(bmm(a, b), IntList{0}), alpha); }))"},
    # jagged tensors (helpers in native/src/autograd/formulas_fbgemm.h): padding is a constant, so a
    # tangent is padded with zeros; rows past a max length are dropped, so they get zero gradient
    **{name: {"values": "jagged_to_padded_dense_backward(grad, offsets, values_sizes[0])",
              "result": "jagged_to_padded_dense_forward(values_t, offsets, max_lengths, 0.0)"}
       for name in ("jagged_to_padded_dense_forward", "jagged_to_padded_dense")},
    "jagged_to_padded_dense_backward": {
        "grad_output": "jagged_to_padded_dense_forward(grad, offsets, jagged_max_lengths(grad_output_sizes, offsets), 0.0)",
        "result": _LINEAR},
    "dense_to_jagged_forward": {
        "dense": "jagged_to_padded_dense_forward(grad, offsets, jagged_max_lengths(dense_sizes, offsets), 0.0)",
        "result": _LINEAR},
    "jagged_1d_to_dense": {"values": "jagged_to_padded_dense_backward(grad, {offsets}, values_sizes[0])",
                           "result": "jagged_1d_to_dense(values_t, offsets, max_sequence_length, 0)"},
    "jagged_2d_to_dense": {"values": "jagged_to_padded_dense_backward(grad, {offsets}, values_sizes[0])",
                           "result": _LINEAR},
    "jagged_dense_elementwise_add": {"x_values": "dense_to_jagged_forward(grad, x_offsets, x_values_sizes[0])",
                                     "y": "grad", "result": _LINEAR},
    "jagged_dense_bmm_forward": {
        "x_values": "jagged_dense_bmm_forward(grad, x_offsets, transpose(y, 1, 2), max_L)",
        "y": "jagged_jagged_bmm_forward(x_values, grad, x_offsets, max_L)",
        "result": "product_tangent(x_values, x_values_t, y, y_t, [&](const Tensor& a, const Tensor& b) { "
                  "return jagged_dense_bmm_forward(a, x_offsets, b, max_L); })"},
    **{name: {"x_values": "jagged_dense_bmm_forward(y_values, x_offsets, transpose(grad, 1, 2), max_L)",
              "y_values": "jagged_dense_bmm_forward(x_values, x_offsets, grad, max_L)",
              "result": "product_tangent(x_values, x_values_t, y_values, y_values_t, [&](const Tensor& a, "
                        "const Tensor& b) { return jagged_jagged_bmm_forward(a, b, x_offsets, max_L); })"}
       for name in ("jagged_jagged_bmm_forward", "jagged_jagged_bmm")},
    "batched_dense_vec_jagged_2d_mul": {
        "v": "std::get<0>(batched_dense_vec_jagged_2d_mul_backward(grad, v, a_values, a_offsets))",
        "a_values": "std::get<1>(batched_dense_vec_jagged_2d_mul_backward(grad, v, a_values, a_offsets))",
        "result": "product_tangent(v, v_t, a_values, a_values_t, [&](const Tensor& a, const Tensor& b) { "
                  "return batched_dense_vec_jagged_2d_mul(a, b, a_offsets); })"},
    # softmax's Jacobian is symmetric: its JVP is its VJP applied to the tangent
    "jagged_softmax_forward": {"values": "jagged_softmax_backward(grad, result, x_offsets, max_L)",
                               "result": "jagged_softmax_backward(values_t, result, x_offsets, max_L)"},
    # fake quantization: the straight-through estimator (mask) and LSQ (helpers in formulas.h)
    **{name: {"self": "mask_backward(grad, result1)", "result": "mask_backward(self_t, result1)"}
       for name in ("fake_quantize_per_tensor_affine_cachemask", "fake_quantize_per_channel_affine_cachemask")},
    **{f"_fake_quantize_learnable_per_{kind}_affine": {
        **{arg: f"fake_quant_learnable_vjp(grad, self, scale, zero_point, {axis}, quant_min, quant_max, grad_factor, "
                f"{per_channel}, {i})" for i, arg in enumerate(("self", "scale", "zero_point"))},
        "result": f"fake_quant_learnable_jvp(self_t, scale_t, zero_point_t, self, scale, zero_point, {axis}, quant_min, "
                  f"quant_max, grad_factor, {per_channel})"}
       for kind, axis, per_channel in (("tensor", "0", "false"), ("channel", "axis", "true"))},
    "index_select_dim0": {"input": "index_select_dim0_backward(grad, indices, input_sizes[0])", "result": _LINEAR},
    "index_select_dim0_backward": {"grad_output": "index_select_dim0(grad, indices, 0, 0, false)",
                                   "result": _LINEAR},
}

# Ops whose floating results carry no gradient (PyTorch's non-differentiable outputs).
# The fused backward ops' own results carry no gradient: when a graph of a backward pass is
# recorded (create_graph), the derivative formulas compose differentiable ops instead.
NONDIFFERENTIABLE = {"gelu_backward", "silu_backward", "mish_backward", "softplus_backward",
                     "hardswish_backward", "hardsigmoid_backward",
                     "_softmax_backward_data", "_log_softmax_backward_data", "native_layer_norm_backward",
                     "_fused_rms_norm_backward", "native_group_norm_backward", "native_batch_norm_backward",
                     "convolution_backward", "_fused_sgd_", "_fused_adam_", "_fused_adagrad_", "_fused_rmsprop_",
                     "detach", "zeros_like", "ones_like", "full_like", "empty_like", "uniform_", "normal_",
                     # fake quantization: the composites call the *_cachemask autograd ops; the local
                     # derivatives are the formulas' data
                     "fake_quantize_per_tensor_affine", "fake_quantize_per_channel_affine",
                     # quantized tensors: dequantize of a float tensor is a float32 copy with no history, as in PyTorch
                     "quantize_per_tensor", "quantize_per_channel", "quantize_per_tensor_dynamic", "dequantize",
                     "_make_per_tensor_quantized_tensor", "_make_per_channel_quantized_tensor", "_quantized_linear",
                     "_quantized_linear_dynamic", "_quantized_conv", "_quantized_add", "_quantized_mul", "_quantized_cat",
                     "_quantized_embedding_bag",
                     "_fake_quantize_learnable_local_grads",
                     "bernoulli", "bernoulli_", "multinomial", "poisson", "histc", "bincount",
                     # fbgemm composites: their bodies call the ember::autograd:: ops below, which record
                     # the graph, so their own wrappers pass through (Note [jagged composites])
                     "dense_to_jagged", "jagged_dense_elementwise_add_jagged_output",
                     "jagged_dense_dense_elementwise_add_jagged_output", "jagged_dense_elementwise_mul",
                     "jagged_dense_bmm", "jagged_softmax", "group_index_select_dim0",
                     "permute102_baddbmm_permute102",
                     # fused fbgemm backward kernels (first-order gradients only)
                     "jagged_softmax_backward", "batched_dense_vec_jagged_2d_mul_backward",
                     # ember.special functions PyTorch gives no derivative (their results never require grad)
                     *(f"special_{name}" for name in _SPECIAL_NONDIFFERENTIABLE)}
# (integer and bool results need no entry: signbit, gcd, lcm and the shifts have no floating output)

# vmap batching rules (native/codegen/gen_batching.py says what each kind means). An op with
# tensor arguments and no rule here runs as a loop over the batch inside vmap, with a one-time
# performance warning (Note [fallback] in native/src/vmap/vmap.cpp).
_DIM = {"dim": "dim"}
BATCHING = {
    **{op.schema.split("(")[0]: "pointwise" for op in OPS if op.test.get("family") in ("unary", "binary", "compare")},
    **{name: "pointwise" for name in (
        "clamp", "where", "threshold", "nan_to_num", "lerp", "addcmul", "addcdiv", "view_as_real", "view_as_complex",
        "real", "imag", "conj", "conj_physical", "complex", "polar", "detach", "clone", "contiguous", "to_dtype",
        "copy_", "zeros_like", "ones_like", "full_like", "empty_like", "fill_", "zero_",
        "gelu_backward", "silu_backward", "mish_backward", "softplus_backward", "hardswish_backward",
        "hardsigmoid_backward", "signbit", "bitwise_left_shift", "bitwise_right_shift", "i0", "special_i0e", "special_i1", "special_i1e")},
    # shapes and views
    "view": {"size": "shape"}, "reshape": {"shape": "shape"},
    "flatten": {"start_dim": "dim", "end_dim": "dim"}, "unflatten": _DIM,
    "permute": {"dims": "permutation"}, "transpose": {"dim0": "dim", "dim1": "dim"}, "t": "t",
    "expand": "expand", "broadcast_to": "broadcast_to",
    "squeeze": {"dim": "squeeze"}, "unsqueeze": {"dim": "new_dim"},
    "movedim": {"source": "dims", "destination": "dims"},
    "diagonal": {"dim1": "dim", "dim2": "dim"}, "unfold": {"dimension": "dim"}, "flip": {"dims": "dims"},
    **{name: _DIM for name in ("narrow", "select", "slice", "narrow_copy", "unbind", "split", "chunk",
                               "tensor_split")},
    "tril": {"min_rank": 2}, "triu": {"min_rank": 2},
    # one index shared by the batch
    "index_select": _DIM, "index_fill": _DIM, "index_add": "index_add", "index_copy": "index_add",
    "cat": "cat", "stack": "stack",
    # matrix products: the batch broadcasts through matmul
    **{name: "matmul" for name in ("mm", "bmm", "matmul", "mv", "dot")},
    # indices batched like the data
    "gather": "gather", "scatter": "scatter", "scatter_add": "scatter", "scatter_reduce": "scatter",
    "take_along_dim": "take_along_dim", "masked_fill": "masked_fill",
    "repeat": "repeat", "tile": "tile", "roll": "roll", "fliplr": "fliplr", "flipud": "flipud",
    # along one dim
    **{name: _DIM for name in ("softmax", "log_softmax", "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp",
                               "sort", "argsort", "topk", "kthvalue", "median", "nanmedian", "mode")},
    # reductions
    **{name: {"dim": "reduce_dims"} for name in ("sum", "prod", "mean", "amax", "amin", "all", "any", "logsumexp",
                                                  "nansum", "nanmean", "count_nonzero", "var", "std", "norm")},
    "argmax": {"dim": "dim?"}, "argmin": {"dim": "dim?"},
    # Fourier transforms: the batch is one more untransformed dim
    **{name: {"dim": "dims"} for name in ("fft_c2c", "fft_r2c", "fft_c2r")},
    # fake quantization with unbatched qparams: elementwise, the channel axis past the batch
    **{name: {} for name in ("fake_quantize_per_tensor_affine_cachemask", "fake_quantize_per_tensor_affine",
                             "_fake_quantize_learnable_per_tensor_affine")},
    **{name: {"axis": "dim"} for name in ("fake_quantize_per_channel_affine_cachemask",
                                           "fake_quantize_per_channel_affine",
                                           "_fake_quantize_learnable_per_channel_affine")},
    # random numbers follow vmap's randomness argument
    **{name: "random_factory" for name in ("rand", "randn", "randint", "normal")},
    **{name: "random" for name in ("randperm", "uniform_", "normal_", "bernoulli", "bernoulli_", "multinomial",
                                          "poisson", "binomial")},
}
