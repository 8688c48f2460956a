"""Ember: tensors, dtypes, devices and ops in a PyTorch-shaped C++ runtime."""

from __future__ import annotations

import builtins
import os as _os

from . import _blas  # noqa: F401 - OpenBLAS is loaded before _C needs it (Note [BLAS provider])

# isort: split
from . import _tensor_methods

# Tensor's operators, indexing and conversions, before any submodule's code runs
# (ember/_tensor_methods.py attaches every Python-defined Tensor method).
_tensor_methods.install_protocols()

# isort: split
# serialization also makes Tensors pickle as checkpoint records
from . import (  # noqa: E402, F401 - func: ember.func, as torch.func
    _C,
    _ops,
    autograd,
    fft,
    func,
    hub,
    linalg,
    nn,
    optim,
    overrides,
    profiler,
    serialization,
    utils,
)
from ._C import (  # noqa: E402
    Tensor,
    bfloat16,
    bits1x8,
    bits2x4,
    bits4x2,
    bits8,
    bits16,
    bool,  # noqa: A004 - ember.bool, as torch.bool
    complex32,
    complex64,
    complex128,
    device,
    dtype,
    float8_e4m3fn,
    float8_e4m3fnuz,
    float8_e5m2,
    float8_e5m2fnuz,
    float16,
    float32,
    float64,
    from_dlpack,
    from_numpy,
    get_default_dtype,
    get_float32_matmul_precision,
    get_num_threads,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    set_default_dtype,
    set_float32_matmul_precision,
    set_num_threads,
    uint8,
)
from ._checkpoint import load, save  # noqa: E402
from ._info import finfo, iinfo  # noqa: E402
from ._products import chain_matmul, einsum, inner, kron, tensordot  # noqa: E402
from ._spectral import (  # noqa: E402
    bartlett_window,
    blackman_window,
    hamming_window,
    hann_window,
    istft,
    kaiser_window,
    stft,
)
from ._tensor import as_tensor, empty, is_conj, resolve_conj, set_printoptions, tensor  # noqa: E402
from .autograd import (  # noqa: E402
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)

# torch exports these nn.functional distances at the top level too
from .nn.functional import cdist, cosine_similarity, pairwise_distance, pdist  # noqa: E402


def _export_generated_ops() -> list[str]:
    """Every aten op declared in native/ops/declarations.py becomes ember.<name> (as torch.<name>);
    the fbgemm:: ones stay under ember.ops.fbgemm, as in PyTorch with fbgemm_gpu. The generated
    bindings list the names (opdb.json is the op-database tests' data, not the package's)."""
    names = list(_C._generated_op_names())
    for name in names:
        globals()[name] = getattr(_C, name)
    return names


_GENERATED_OPS = _export_generated_ops()


from ._overloads import (  # noqa: E402 - they replace generated entries of the same name
    aminmax,
    cross,
    cummax,
    cummin,
    kthvalue,
    matrix_exp,
    matrix_power,
    max,  # noqa: A004
    median,
    min,  # noqa: A004
    mode,
    nanmedian,
    norm,
    pow,  # noqa: A004
    return_types,
    sort,
    std_mean,
    tensor_split,
    topk,
    unique,
    unique_consecutive,
    var_mean,
    where,
)

concat = cat  # noqa: F821 - exported from the generated ops above
clip = clamp  # noqa: F821 - PyTorch's alias


def broadcast_shapes(*shapes: object) -> _C.Size:
    """The shape the given shapes broadcast to (RuntimeError if they do not), as torch.broadcast_shapes."""
    import builtins

    views = []
    for shape in shapes:
        dims = [shape] if isinstance(shape, builtins.int) else list(shape)
        # An empty placeholder of each shape, as stride-0 views: nothing is allocated per element.
        views.append(_C._empty([0 if d == 0 else 1 for d in dims], float32, device("cpu")).expand(dims))
    return _C.broadcast_tensors(views)[0].shape if views else _C.Size()


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    """Views of the tensors expanded to their common broadcast shape."""
    return tuple(_C.broadcast_tensors(list(tensors)))


def meshgrid(*tensors: object, indexing: str = "ij") -> tuple[Tensor, ...]:
    """Coordinate grids, as torch.meshgrid (tensors as varargs or one sequence)."""
    seq = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors
    return tuple(_C.meshgrid(list(seq), indexing=indexing))


Generator = _C.Generator
default_generator = _C.default_generator


def manual_seed(seed: int) -> Generator:
    """Seeds the default generator (as torch.manual_seed) and returns it."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Seeds the default generator from a non-deterministic source and returns the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """The default generator's state as a uint8 tensor: mt19937's 5056 bytes in PyTorch's layout, so
    torch.set_rng_state accepts it and ember.set_rng_state accepts torch.get_rng_state()'s."""
    return default_generator.get_state()


def set_rng_state(new_state: Tensor) -> None:
    default_generator.set_state(new_state)


def randint(*args: object, generator: Generator | None = None, dtype: dtype | None = None,
            device: object = None) -> Tensor:
    """ember.randint(high, size) or ember.randint(low, high, size), as torch.randint."""
    if len(args) == 2:
        low, (high, size) = 0, args
    elif len(args) == 3:
        low, high, size = args
    else:
        raise TypeError(f"randint() takes (high, size) or (low, high, size), but got {len(args)} positional arguments")
    return _C.randint(low, high, size, generator=generator, dtype=dtype, device=device)


def _sized(fn):
    def call(*size: object, generator: Generator | None = None, dtype: dtype | None = None,
             device: object = None) -> Tensor:
        return fn(size[0] if len(size) == 1 else list(size), generator=generator, dtype=dtype, device=device)
    call.__name__ = fn.__name__
    call.__doc__ = f"ember.{fn.__name__}(2, 3) or ember.{fn.__name__}((2, 3)), as torch.{fn.__name__}."
    return call


rand = _sized(_C.rand)
randn = _sized(_C.randn)


def zeros(*size: object, dtype: dtype | None = None, device: object = None) -> Tensor:
    """ember.zeros(2, 3) or ember.zeros((2, 3)), as torch.zeros."""
    return _C.zeros(size[0] if len(size) == 1 else list(size), dtype=dtype, device=device)


def ones(*size: object, dtype: dtype | None = None, device: object = None) -> Tensor:
    """ember.ones(2, 3) or ember.ones((2, 3)), as torch.ones."""
    return _C.ones(size[0] if len(size) == 1 else list(size), dtype=dtype, device=device)



def _with_requires_grad(fn):
    """Factories take requires_grad=, as torch's do: the new tensor is a leaf that requires grad."""
    def factory(*args: object, requires_grad: builtins.bool = False, **kwargs: object) -> Tensor:
        out = fn(*args, **kwargs)
        return out.requires_grad_() if requires_grad else out
    factory.__name__ = fn.__name__
    factory.__doc__ = fn.__doc__
    return factory


for _name in ("zeros", "ones", "empty", "full", "rand", "randn", "arange", "linspace", "logspace", "eye",
              "zeros_like", "ones_like", "full_like", "empty_like", "normal"):
    globals()[_name] = _with_requires_grad(globals()[_name])

# PyTorch's size= keyword on the factories; aliases, predicates and legacy tensor types
# (ember/_names.py, ember/_legacy.py).
from . import _composites_py, _legacy, _names  # noqa: E402

for _name in ("zeros", "ones", "empty", "full", "rand", "randn"):
    globals()[_name] = _names.size_keyword(globals()[_name])
randint = _names.size_keyword(randint, first=2)
globals().update(_names.alias_table())
globals().update({_name: getattr(_names, _name) for _name in _names.NAMES})
globals().update(_legacy.TYPED)
# Functions and methods composed in Python from declared ops (ember/_composites_py.py).
globals().update({_name: getattr(_composites_py, _name) for _name in _composites_py.NAMES})
# Constants, memory formats, in-place and ATen-signature functional forms, legacy linear algebra
# (ember/_surface.py); the *_like factories take memory_format=.
from . import _surface, _surface_extra, _surface_legacy, _surface_more  # noqa: E402

globals().update(_surface.namespace())
globals().update(_surface_more.namespace())
globals().update(_surface_extra.namespace())  # segment_reduce, embedding_bag, set_flush_denormal
globals().update(_surface_legacy.namespace())
globals().update(_surface_legacy.install_modules())  # ember.version, ember.random
for _name in ("empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like", "randint_like"):
    globals()[_name] = _surface.with_memory_format(globals()[_name])
# Storage objects: UntypedStorage, TypedStorage, the legacy FloatStorage & co. (ember/storage.py).
from . import storage  # noqa: E402
from .storage import TypedStorage, UntypedStorage, from_file, is_storage  # noqa: E402

globals().update(storage._LEGACY_CLASSES)
_tensor_methods.install()  # every other Python-defined Tensor method, now that their families are imported

__version__: str = _C.__version__


def _threads_from_environment() -> None:
    # As PyTorch, whose OpenMP runtime reads it: OMP_NUM_THREADS (a positive integer, or a list
    # "4,2" whose first entry counts) sets the intra-op threads at import. Scripts run with
    # OMP_NUM_THREADS=1 on a shared machine would otherwise spin up one thread per core.
    # Anything else keeps the default (every hardware thread), as libgomp ignores a bad value.
    first = _os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if first.isdecimal() and int(first) > 0:
        set_num_threads(int(first))


_threads_from_environment()

# PyTorch's aliases.
half = float16
float = float32  # noqa: A001
double = float64
chalf = complex32
cfloat = complex64
cdouble = complex128
short = int16
int = int32  # noqa: A001
long = int64

ops = _ops.ops

_PACKAGE_DIR = _os.path.dirname(_os.path.abspath(__file__))

#: Pass as CMAKE_PREFIX_PATH so that CMake's find_package(Ember) finds the installed core
#: (the role of torch.utils.cmake_prefix_path).
cmake_prefix_path: str = _os.path.join(_PACKAGE_DIR, "share", "cmake")


def get_include() -> str:
    """The directory holding Ember's C++ headers (``#include <ember/ember.h>``)."""
    return _os.path.join(_PACKAGE_DIR, "include")


def get_lib() -> str:
    """The directory holding ``libember``."""
    return _os.path.join(_PACKAGE_DIR, "lib")


def result_type(tensor1: object, tensor2: object) -> dtype:
    """The dtype PyTorch's promotion rules give an op on these operands (tensors or numbers)."""
    return _C.result_type([tensor1, tensor2])


def _dtype_by_name(name: str) -> dtype:
    for d in _C._all_dtypes:
        if repr(d) == "ember." + name:
            return d
    raise ValueError(f"[dtype] expected a dtype name such as 'float32', but got {name!r}")


vmap = func.vmap  # torch.vmap

dtype.__module__ = "ember"
device.__module__ = "ember"

__all__ = [
    "Tensor", "dtype", "device", "tensor", "as_tensor", "from_numpy", "from_dlpack", "empty", "ops", "set_printoptions", "serialization",
    "is_conj", "resolve_conj", "autograd", "vmap", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode",
    "is_inference_mode_enabled",
    "Generator", "default_generator", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
    "max", "min", "aminmax", "var_mean", "std_mean", "return_types", "sort", "topk", "kthvalue", "median", "nanmedian", "mode", "pow",
    "cummax", "cummin", "tensor_split", "unique", "unique_consecutive", "where", "norm", "cross", "matrix_exp",
    "matrix_power",
    "finfo", "iinfo", "concat", "clip", "broadcast_shapes", "broadcast_tensors", "meshgrid", "zeros", "ones",
    "cmake_prefix_path", "get_include", "get_lib", "__version__", "result_type", "promote_types",
    "get_default_dtype", "set_default_dtype", "get_num_threads", "set_num_threads", "set_float32_matmul_precision",
    "get_float32_matmul_precision", "einsum", "tensordot", "kron", "inner", "chain_matmul", "linalg", "nn",
    "fft", "stft", "istft", "hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window",
    "save", "load", "hub", "optim", "profiler", "utils", "cdist", "pdist", "cosine_similarity", "pairwise_distance",
    *_GENERATED_OPS, *_names.alias_table(), *_names.NAMES, *_composites_py.NAMES,
    *_legacy.TYPED, *_surface.namespace(), *_surface_more.namespace(), *_surface_legacy.namespace(),
    "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
    "float64", "complex32", "complex64", "complex128", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
    "bits8", "bits16", "bits1x8", "bits2x4", "bits4x2",
]

# Device namespaces that answer truthfully on a CPU-only build, the eager ember.compile, determinism
# switches, and probability distributions (issue 18, items 2 and 4).
from . import accelerator, amp, backends, cpu, cuda, distributions, special, testing  # noqa: E402
from ._compile import compile  # noqa: A004, E402
from ._determinism import (  # noqa: E402
    are_deterministic_algorithms_enabled,
    get_deterministic_debug_mode,
    is_deterministic_algorithms_warn_only_enabled,
    set_deterministic_debug_mode,
    use_deterministic_algorithms,
)
from ._streams import Event, Stream, get_device_module  # noqa: E402
from .amp import autocast  # noqa: E402
from .amp.autocast_mode import (  # noqa: E402
    autocast_decrement_nesting,
    autocast_increment_nesting,
    clear_autocast_cache,
    get_autocast_cpu_dtype,
    get_autocast_dtype,
    get_autocast_gpu_dtype,
    is_autocast_cache_enabled,
    is_autocast_cpu_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_cpu_dtype,
    set_autocast_cpu_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
    set_autocast_gpu_dtype,
)

__all__ += ["autocast", "autocast_decrement_nesting", "autocast_increment_nesting", "clear_autocast_cache",
            "get_autocast_cpu_dtype", "get_autocast_dtype", "get_autocast_gpu_dtype", "is_autocast_cache_enabled",
            "is_autocast_cpu_enabled", "is_autocast_enabled", "set_autocast_cache_enabled", "set_autocast_cpu_dtype",
            "set_autocast_cpu_enabled", "set_autocast_dtype", "set_autocast_enabled", "set_autocast_gpu_dtype"]
__all__ += ["accelerator", "amp", "backends", "cpu", "cuda", "distributions", "special", "testing", "compile", "use_deterministic_algorithms",
            "Event", "Stream", "get_device_module",
            "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
            "set_deterministic_debug_mode", "get_deterministic_debug_mode"]


# Sparse COO/CSR tensors (issue 18, item 5).
from . import sparse  # noqa: E402
from .sparse import (  # noqa: E402
    ccol_indices_copy,
    col_indices_copy,
    crow_indices_copy,
    dsmm,
    hsmm,
    hspmm,
    indices_copy,
    layout,
    resize_as_sparse_,
    row_indices_copy,
    saddmm,
    smm,
    sparse_bsc,
    sparse_bsc_tensor,
    sparse_bsr,
    sparse_bsr_tensor,
    sparse_compressed_tensor,
    sparse_coo,
    sparse_coo_tensor,
    sparse_csc,
    sparse_csc_tensor,
    sparse_csr,
    sparse_csr_tensor,
    spmm,
    sspaddmm,
    strided,
    values_copy,
)
from .sparse._tensor import jagged  # noqa: E402 - the layout of ember.nested's jagged nested tensors

__all__ += ["sparse", "dsmm", "hsmm", "hspmm", "layout", "resize_as_sparse_", "saddmm", "smm", "sparse_coo", "sparse_coo_tensor", "sparse_csr",
            "sparse_csr_tensor", "spmm", "sspaddmm", "strided"]
# the compressed layouts CSC, BSR and BSC, their parts' copies (issue 18, item 5)
__all__ += ["sparse_csc", "sparse_bsr", "sparse_bsc", "sparse_csc_tensor", "sparse_bsr_tensor", "sparse_bsc_tensor",
            "sparse_compressed_tensor", "ccol_indices_copy", "col_indices_copy", "crow_indices_copy",
            "indices_copy", "row_indices_copy", "values_copy"]

# torch.Size, warn-always, the inter-op thread count, type aliases, the comparable version,
# signal windows and the whole-sequence RNN functions (issue 18, item 1).
from . import (  # noqa: E402
    library,  # noqa: F401 - ember.library, as torch.library
    quasirandom,  # noqa: F401 - ember.quasirandom, as torch.quasirandom
    signal,
    torch_version,
    types,
)
from ._C import Size  # noqa: E402
from ._rnn_functional import gru, lstm, rnn_relu, rnn_tanh  # noqa: E402
from ._runtime import (  # noqa: E402
    get_num_interop_threads,
    init_num_threads,
    is_warn_always_enabled,
    set_num_interop_threads,
    set_warn_always,
)

# torch.embedding with sparse=True gives a sparse gradient, which the native op cannot
from .nn._embedding import _embedding_op as embedding  # noqa: E402, F401 - replaces the generated entry

# torch.mm / matmul / addmm also take a sparse operand (sparse @ dense, dense @ sparse)
from .sparse import sparse_aware_addmm as addmm  # noqa: E402, F401 - replaces the generated entry
from .sparse import sparse_aware_matmul as matmul  # noqa: E402, F401 - replaces the generated entry
from .sparse import sparse_aware_mm as mm  # noqa: E402, F401 - replaces the generated entry

__version__ = torch_version.__version__  # noqa: F811 - the same text, comparable as a version
__all__ += ["Size", "signal", "gru", "lstm", "rnn_relu", "rnn_tanh", "get_num_interop_threads", "init_num_threads",
            "is_warn_always_enabled", "set_num_interop_threads", "set_warn_always", "torch_version", "types"]


def __getattr__(name: str):  # noqa: ANN202 - PEP 562
    # ember.distributed, ember.futures, ember.ao, ember.fx, ember.export, ember.jit and
    # ember.quantization (the older name of ember.ao.quantization) load on first use: most programs
    # never need them.
    if name in ("distributed", "futures", "ao", "fx", "export", "jit", "quantization"):
        import importlib
        return importlib.import_module(f"ember.{name}")
    if name == "Storage":  # torch.Storage follows the default dtype (FloatStorage, DoubleStorage, ...)
        return storage.default_storage_class()
    raise AttributeError(f"module 'ember' has no attribute {name!r}")


def __dir__() -> list[str]:  # the names loaded on first use are listed too, as dir(torch) lists them
    return sorted(set(globals()) | {"distributed", "futures", "ao", "fx", "export", "jit", "quantization", "Storage"})


__all__ += ["distributed", "futures", "ao", "fx", "export", "jit"]
__all__ += ["storage", "Storage", "TypedStorage", "UntypedStorage", "from_file", "is_storage", *storage._LEGACY_CLASSES]
__all__ += ["segment_reduce", "embedding_bag", "set_flush_denormal", "lobpcg"]

# torch.functional (the module of PyTorch's Python-level ops, re-exported), torch.masked's
# reductions, torch.GradScaler and the RuntimeError subclass a failed allocation raises
from . import functional, masked, nested  # noqa: E402, F401 - nested: torch.nested's strided nested tensors
from ._C import OutOfMemoryError  # noqa: E402
from .amp import GradScaler  # noqa: E402

__all__ += ["functional", "masked", "GradScaler", "OutOfMemoryError", "jagged"]


class FatalError(Exception):
    """torch.FatalError, PyTorch's exception for an error its C++ core cannot recover from. Ember's
    native errors arrive as Python's own types (RuntimeError, IndexError, ...), so Ember raises
    none; the class is here so that ported `except torch.FatalError` clauses resolve."""


__all__ += ["FatalError"]


def _assert(condition, message):  # noqa: ANN001, ANN202 - torch._assert's signature
    """torch._assert: raises AssertionError(message) unless ``condition`` holds, and, unlike an
    ``assert`` statement, is recorded by symbolic tracing when ``condition`` is a traced value."""
    if type(condition) is not Tensor and overrides.has_torch_function((condition,)):
        return overrides.handle_torch_function(_assert, (condition,), condition, message)
    if not condition:
        raise AssertionError(message)
    return None

# torch.fake_quantize_* and the qscheme constants (ember/_fake_quant.py); ember.ao loads on first use
from . import _fake_quant  # noqa: E402

globals().update({_name: getattr(_fake_quant, _name) for _name in _fake_quant.NAMES})
__all__ += [_name for _name in _fake_quant.NAMES if not _name.startswith("_")]
# quantized tensors' dtypes and Python-level functions (ember/_quantized.py; the ops are native)
from . import _quantized  # noqa: E402

globals().update(_quantized.NAMES)
__all__ += list(_quantized.NAMES)
from . import _quantized_functional  # noqa: E402

globals().update(_quantized_functional.NAMES)
__all__ += list(_quantized_functional.NAMES)

# ember.multiprocessing, imported here as torch imports torch.multiprocessing: it registers the
# reducers that send tensors to other processes through shared memory (ember/_shared_memory.py)
from . import multiprocessing  # noqa: E402, F401

# torch.sum(masked_tensor) & co.: the namespace functions PyTorch lets take a MaskedTensor
from .masked import _tensor as _masked_tensor  # noqa: E402

_wrapped: dict = {}  # aliases (cat, concat, concatenate) stay one function
for _name in _masked_tensor.NAMESPACE_FUNCTIONS:
    if _name in globals():
        _plain = globals()[_name]
        globals()[_name] = _wrapped.setdefault(id(_plain), _masked_tensor.masked_aware(_name, _plain))
del _name, _plain, _wrapped

from .overrides import DisableTorchFunction, DisableTorchFunctionSubclass  # noqa: E402, F401 - torch's names for them

# Last: the Python-level functions of ember, nn.functional, linalg, fft and special honour
# __torch_function__ as the native ops do (ember/overrides.py)
overrides._wrap_namespaces()
