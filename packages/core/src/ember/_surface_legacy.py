"""PyTorch names older scripts reach (issue 18, item 1), composed in Python from declared ops:
Tensor.resize_ / resize_as_ / set_ / module_load / is_meta / is_set_to, typename,
set_default_tensor_type, to_dlpack, the ATen forms affine_grid_generator, grid_sampler and the
RNN cells (rnn_tanh_cell, rnn_relu_cell, lstm_cell, gru_cell), and the modules ember.version
(torch.version) and ember.random (torch.random)."""

from __future__ import annotations

import builtins
import contextlib
import sys
import types

from . import _C
from ._composites_py import _tensor_arg
from .nn._conv import conv_tbc  # noqa: F401 - ember.conv_tbc (namespace())

# ---- resize_ and friends --------------------------------------------------------------------------


def resize_(self: _C.Tensor, *sizes: object, memory_format: object = None) -> _C.Tensor:
    """Give self the shape `sizes`, row-major, in place (torch.Tensor.resize_): the elements it
    keeps are its first ones in row-major order; new elements are uninitialized. Refused for a
    tensor that requires grad, as PyTorch."""
    from . import empty
    from ._surface import _check_format, _int_list

    if memory_format is not None:
        _check_format(memory_format, "resize_")
    shape = _int_list(sizes[0] if len(sizes) == 1 and not isinstance(sizes[0], builtins.int) else sizes)
    if builtins.any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension {builtins.min(shape)}: {shape}")
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    count = 1
    for s in shape:
        count *= s
    if tuple(shape) == tuple(self.shape):
        return self
    if count <= self.numel() and self.is_contiguous():
        self.data = self.reshape(-1)[:count].view(shape)  # the same memory, as PyTorch keeps its storage
        return self
    grown = empty(shape, dtype=self.dtype, device=self.device)
    keep = builtins.min(count, self.numel())
    if keep:
        grown.reshape(-1)[:keep].copy_(self.reshape(-1)[:keep])
    self.data = grown
    return self


def resize_as_(self: _C.Tensor, the_template: _C.Tensor, *, memory_format: object = None) -> _C.Tensor:
    return resize_(self, list(_tensor_arg(the_template, "resize_as_", "the_template", 2).shape),
                   memory_format=memory_format)


def set_(self: _C.Tensor, source: object = None, storage_offset: object = None, size: object = None,
         stride: object = None) -> _C.Tensor:
    """self becomes a view (torch.Tensor.set_): of source, a tensor (its shape and strides) or a
    storage object (all of it, 1-d); with storage_offset and size (and stride, contiguous when
    omitted), of that part of the tensor's or storage's memory; with no source, an empty tensor.
    A view past the storage's end raises: Ember does not grow storages as PyTorch does."""
    from . import empty, storage

    geometry = (storage_offset, size, stride) != (None, None, None)
    if source is None and geometry:
        raise TypeError("set_(): storage_offset, size and stride need a source (a tensor or a storage)")
    if source is not None and not isinstance(source, _C.Tensor) and not storage.is_storage(source):
        raise TypeError(f"set_(): expected source to be a Tensor or a storage, but got {type(source).__name__}")
    if self.requires_grad:
        raise RuntimeError("set_ is not allowed on a Tensor created from .data or .detach() that requires grad")
    if isinstance(source, _C.Tensor) and source.dtype != self.dtype:
        raise RuntimeError(f"Could not set tensor of type {source.dtype} to a tensor of type {self.dtype}")
    if source is None:
        self.data = empty([0], dtype=self.dtype, device=self.device)
    elif isinstance(source, _C.Tensor) and not geometry:
        self.data = source
    else:
        self.data = storage.tensor_over(source, self.dtype, storage_offset, size, stride)
    return self


def is_set_to(self: _C.Tensor, tensor: _C.Tensor) -> builtins.bool:
    """Whether self and tensor view the same memory with the same shape and strides."""
    return (self.data_ptr() == _tensor_arg(tensor, "is_set_to", "tensor").data_ptr()
            and tuple(self.shape) == tuple(tensor.shape) and tuple(self.stride()) == tuple(tensor.stride())
            and self.dtype == tensor.dtype)


def module_load(self: _C.Tensor, other: _C.Tensor, assign: builtins.bool = False) -> _C.Tensor:
    """How load_state_dict turns `other` into the value for self (torch.Tensor.module_load):
    other detached with assign=True, else other copied into self."""
    if assign:
        return other.detach()
    return self.copy_(other).detach()


def is_meta(self: _C.Tensor) -> builtins.bool:
    return self.device.type == "meta"


# ---- small top-level names ------------------------------------------------------------------------


def typename(obj: object) -> str:
    """A tensor's legacy type name ('ember.FloatTensor'), else the object's qualified type name."""
    if isinstance(obj, _C.Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qualname = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    if module in ("", "builtins", "__builtin__"):
        return qualname
    return f"{module}.{qualname}"


def set_default_tensor_type(t: object) -> None:
    """The legacy form of set_default_dtype: t is a tensor type (ember.DoubleTensor) or its name
    ('torch.DoubleTensor' / 'ember.DoubleTensor'); only floating types are accepted."""
    from . import _legacy, set_default_dtype

    name = t if isinstance(t, str) else getattr(t, "__name__", "")
    short = name.rsplit(".", 1)[-1]
    table = {"FloatTensor": _C.float32, "DoubleTensor": _C.float64, "HalfTensor": _C.float16,
             "BFloat16Tensor": _C.bfloat16}
    if short not in table:
        known = short in _legacy.TYPED
        raise TypeError("only floating-point types are supported as the default type" if known else
                        f"invalid type: '{name}'")
    set_default_dtype(table[short])


def to_dlpack(tensor: _C.Tensor) -> object:
    """A DLPack capsule of tensor (torch.utils.dlpack.to_dlpack / torch.to_dlpack)."""
    return _tensor_arg(tensor, "to_dlpack", "tensor").__dlpack__()


_INTERPOLATION = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


def grid_sampler(input: _C.Tensor, grid: _C.Tensor, interpolation_mode: builtins.int,  # noqa: A002
                 padding_mode: builtins.int, align_corners: builtins.bool) -> _C.Tensor:
    """ATen's grid_sampler: nn.functional.grid_sample with integer modes (interpolation 0
    bilinear, 1 nearest, 2 bicubic; padding 0 zeros, 1 border, 2 reflection)."""
    from .nn import functional as F

    if interpolation_mode not in _INTERPOLATION:
        raise RuntimeError(f"grid_sampler(): expected interpolation_mode to be Bilinear, Nearest or Bicubic, "
                           f"but got: '{interpolation_mode}'")
    if padding_mode not in _PADDING:
        raise RuntimeError(f"grid_sampler(): expected padding_mode to be Zeros, Border, or Reflection, but got: "
                           f"'{padding_mode}'")
    return F.grid_sample(input, grid, _INTERPOLATION[interpolation_mode], _PADDING[padding_mode], align_corners)


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):  # noqa: A002, ANN001, ANN201
    if input.dim() != 4:
        raise RuntimeError(f"grid_sampler_2d(): expected 4D input, but got input with sizes {list(input.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):  # noqa: A002, ANN001, ANN201
    if input.dim() != 5:
        raise RuntimeError(f"grid_sampler_3d(): expected 5D input, but got input with sizes {list(input.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def affine_grid_generator(theta: _C.Tensor, size: object, align_corners: builtins.bool) -> _C.Tensor:
    from .nn import functional as F

    return F.affine_grid(theta, list(size), align_corners)


# ---- RNN cells with ATen's signatures -------------------------------------------------------------


def _gates(input: _C.Tensor, hx: _C.Tensor, w_ih: _C.Tensor, w_hh: _C.Tensor, b_ih: object,  # noqa: A002
           b_hh: object) -> tuple[_C.Tensor, _C.Tensor]:
    from .nn import functional as F

    return F.linear(input, w_ih, b_ih), F.linear(hx, w_hh, b_hh)


def rnn_tanh_cell(input: _C.Tensor, hx: _C.Tensor, w_ih: _C.Tensor, w_hh: _C.Tensor,  # noqa: A002
                  b_ih: _C.Tensor | None = None, b_hh: _C.Tensor | None = None) -> _C.Tensor:
    """tanh(input W_ih^T + b_ih + hx W_hh^T + b_hh), one step of an Elman RNN."""
    a, b = _gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    return _C.tanh(_C.add(a, b))


def rnn_relu_cell(input: _C.Tensor, hx: _C.Tensor, w_ih: _C.Tensor, w_hh: _C.Tensor,  # noqa: A002
                  b_ih: _C.Tensor | None = None, b_hh: _C.Tensor | None = None) -> _C.Tensor:
    a, b = _gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    return _C.relu(_C.add(a, b))


def lstm_cell(input: _C.Tensor, hx: object, w_ih: _C.Tensor, w_hh: _C.Tensor,  # noqa: A002
              b_ih: _C.Tensor | None = None, b_hh: _C.Tensor | None = None) -> tuple[_C.Tensor, _C.Tensor]:
    """(h', c') of one LSTM step; hx is (h, c), the gates in PyTorch's order i, f, g, o."""
    if len(hx) != 2:
        raise RuntimeError(f"lstm_cell expects two hidden states, but got {len(hx)}")
    h, c = hx
    a, b = _gates(input, h, w_ih, w_hh, b_ih, b_hh)
    i, f, g, o = _C.add(a, b).chunk(4, -1)
    c_new = _C.add(_C.mul(_C.sigmoid(f), c), _C.mul(_C.sigmoid(i), _C.tanh(g)))
    return _C.mul(_C.sigmoid(o), _C.tanh(c_new)), c_new


def gru_cell(input: _C.Tensor, hx: _C.Tensor, w_ih: _C.Tensor, w_hh: _C.Tensor,  # noqa: A002
             b_ih: _C.Tensor | None = None, b_hh: _C.Tensor | None = None) -> _C.Tensor:
    """h' of one GRU step, the gates in PyTorch's order r, z, n (n's hidden part inside r *)."""
    a, b = _gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    a_r, a_z, a_n = a.chunk(3, -1)
    b_r, b_z, b_n = b.chunk(3, -1)
    r = _C.sigmoid(_C.add(a_r, b_r))
    z = _C.sigmoid(_C.add(a_z, b_z))
    n = _C.tanh(_C.add(a_n, _C.mul(r, b_n)))
    return (1 - z) * n + z * hx


# ---- Householder QR in LAPACK's compact form ------------------------------------------------------


def geqrf(input: _C.Tensor, *, out: object = None) -> tuple[_C.Tensor, _C.Tensor]:  # noqa: A002
    """(a, tau): the QR factorization in LAPACK geqrf's compact form (torch.geqrf). R is a's upper
    triangle; below the diagonal of column j lies the Householder vector v_j (with an implicit
    leading 1), and Q = H_1 ... H_k, H_j = I - tau_j v_j v_j^T. Real dtypes only."""
    from .linalg import vector_norm

    if _tensor_arg(input, "geqrf").dim() < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    if input.dtype.is_complex or not input.dtype.is_floating_point:
        raise NotImplementedError(f"geqrf: Ember supports real floating dtypes only, but got {input.dtype}")
    a = input.clone()
    m, n = a.shape[-2], a.shape[-1]
    taus = []
    for j in builtins.range(builtins.min(m, n)):
        alpha = a[..., j, j].clone()
        rest = a[..., j + 1:, j]
        norm_rest = vector_norm(rest, 2, dim=-1) if m - j > 1 else _C.zeros_like(alpha)
        trivial = _C.eq(norm_rest, 0)  # nothing below the diagonal: H_j = I
        # beta = -sign(alpha) * |(alpha, rest)|, sign(0) = +1, as LAPACK's dlarfg
        sign = _C.where(_C.ge(alpha, 0), 1.0, -1.0).to(a.dtype)
        beta = _C.mul(_C.neg(sign), _C.sqrt(_C.add(_C.mul(alpha, alpha), _C.mul(norm_rest, norm_rest))))
        safe_beta = _C.where(trivial, 1.0, beta).to(a.dtype)
        tau = _C.where(trivial, 0.0, _C.div(_C.sub(beta, alpha), safe_beta)).to(a.dtype)
        scale = _C.where(trivial, 0.0, _C.reciprocal(_C.where(trivial, 1.0, _C.sub(alpha, beta)).to(a.dtype)))
        v = _C.mul(rest, _C.unsqueeze(scale.to(a.dtype), -1))
        a[..., j, j] = _C.where(trivial, alpha, beta)
        if m - j > 1:
            a[..., j + 1:, j] = v
        if j + 1 < n:  # apply H_j to the columns on the right
            w = _C.cat([_C.ones_like(alpha).unsqueeze(-1), v], -1)  # (*, m - j)
            block = a[..., j:, j + 1:]
            proj = _C.matmul(_C.unsqueeze(w, -2), block)  # w^T block: (*, 1, n - j - 1)
            update = _C.mul(_C.matmul(_C.unsqueeze(w, -1), proj), _C.unsqueeze(_C.unsqueeze(tau, -1), -1))
            a[..., j:, j + 1:] = _C.sub(block, update)
        taus.append(tau)
    tau = _C.stack(taus, -1) if taus else _C.zeros(list(input.shape[:-2]) + [0], dtype=input.dtype)
    return _return_geqrf(a, tau, out)


def _return_geqrf(a: _C.Tensor, tau: _C.Tensor, out: object) -> tuple[_C.Tensor, _C.Tensor]:
    from ._composites_py import _return_type

    if out is not None:
        from ._args import write_out

        a, tau = write_out(a, out[0]), write_out(tau, out[1])
    return _return_type("geqrf", ("a", "tau"))(a, tau)


def orgqr(input: _C.Tensor, tau: _C.Tensor, *, out: _C.Tensor | None = None) -> _C.Tensor:  # noqa: A002
    """Q's first n columns from geqrf's (a, tau) (torch.orgqr, linalg.householder_product)."""
    from .linalg import householder_product

    result = householder_product(input, tau)
    if out is not None:
        from ._args import write_out

        return write_out(result, out)
    return result


def ormqr(input: _C.Tensor, tau: _C.Tensor, other: _C.Tensor, left: builtins.bool = True,  # noqa: A002
          transpose: builtins.bool = False, *, out: _C.Tensor | None = None) -> _C.Tensor:
    """other multiplied by the full m x m Q of geqrf's (input, tau), from the left (Q @ other) or
    the right (other @ Q), with Q^T when transpose (torch.ormqr)."""
    from .linalg import householder_product

    m = input.shape[-2]
    k = tau.shape[-1]
    if k > m:
        raise RuntimeError(f"torch.ormqr: tau.shape[-1] must be less than or equal to input.shape[-2], but got {k} > "
                           f"{m}")
    needed = other.shape[-2] if left else other.shape[-1]
    if needed != m:
        raise RuntimeError(f"torch.ormqr: other.shape[{-2 if left else -1}] must be equal to input.shape[-2]")
    # The m x m Q: the k reflectors, then m - k identity ones (tau 0) on zero columns.
    columns = input[..., :, :k]
    pad = m - k
    if pad:
        columns = _C.cat([columns, _C.zeros(list(columns.shape[:-1]) + [pad], dtype=input.dtype)], -1)
        tau = _C.cat([tau, _C.zeros(list(tau.shape[:-1]) + [pad], dtype=tau.dtype)], -1)
    q = householder_product(columns, tau)
    q = q.mT if transpose else q
    result = _C.matmul(q, other) if left else _C.matmul(other, q)
    if out is not None:
        from ._args import write_out

        return write_out(result, out)
    return result


# ---- randomized low-rank SVD and PCA --------------------------------------------------------------


def svd_lowrank(A: _C.Tensor, q: builtins.int | None = 6, niter: builtins.int = 2,  # noqa: N803
                M: _C.Tensor | None = None) -> tuple[_C.Tensor, _C.Tensor, _C.Tensor]:  # noqa: N803
    """(U, S, V) of a rank-q approximation of A - M by Halko et al.'s randomized range finder
    with niter power iterations (torch.svd_lowrank); A ~ U diag(S) V^T."""
    from . import randn
    from .linalg import qr, svd

    q = 6 if q is None else q
    matrix = A if M is None else _C.sub(A, M)
    m, n = matrix.shape[-2], matrix.shape[-1]
    if not 0 <= q <= builtins.min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={builtins.min(m, n)}")
    if niter < 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    probe = randn(list(matrix.shape[:-2]) + [n, q], dtype=matrix.dtype)
    basis = qr(_C.matmul(matrix, probe)).Q
    for _ in builtins.range(niter):  # power iterations sharpen the basis when the spectrum decays slowly
        basis = qr(_C.matmul(matrix.mH, basis)).Q
        basis = qr(_C.matmul(matrix, basis)).Q
    u, s, vh = svd(_C.matmul(basis.mH, matrix), full_matrices=False)
    return _C.matmul(basis, u), s, vh.mH


def pca_lowrank(A: _C.Tensor, q: builtins.int | None = None, center: builtins.bool = True,  # noqa: N803
                niter: builtins.int = 2) -> tuple[_C.Tensor, _C.Tensor, _C.Tensor]:
    """svd_lowrank of A with its column means removed (center=True): V holds the principal
    directions, S**2 / (m - 1) the variances they explain (torch.pca_lowrank)."""
    m, n = A.shape[-2], A.shape[-1]
    q = builtins.min(6, m, n) if q is None else q
    if not 0 <= q <= builtins.min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={builtins.min(m, n)}")
    if not center:
        return svd_lowrank(A, q, niter)
    return svd_lowrank(_C.sub(A, A.mean(-2, True)), q, niter)


# ---- ember.version and ember.random ---------------------------------------------------------------


def _version_module() -> types.ModuleType:
    module = types.ModuleType("ember.version", "Build information, as torch.version: Ember is a CPU build, so "
                                               "cuda and hip are None.")
    module.__version__ = _C.__version__
    module.cuda = None
    module.hip = None
    module.xpu = None
    module.debug = False
    module.git_version = "unknown"
    return module


@contextlib.contextmanager
def fork_rng(devices: object = None, enabled: builtins.bool = True, _caller: str = "fork_rng",
             _devices_kw: str = "devices", device_type: str = "cuda"):
    """Run a block with the default generator's state restored afterwards (torch.random.fork_rng);
    Ember has only the CPU generator, so `devices` has nothing to fork."""
    from . import get_rng_state, set_rng_state

    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


def _random_module() -> types.ModuleType:
    from . import default_generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state

    module = types.ModuleType("ember.random", "The default generator's controls (torch.random).")
    for name, value in (("manual_seed", manual_seed), ("seed", seed), ("initial_seed", initial_seed),
                        ("get_rng_state", get_rng_state), ("set_rng_state", set_rng_state),
                        ("fork_rng", fork_rng), ("default_generator", default_generator)):
        setattr(module, name, value)
    return module


def install_modules() -> dict[str, object]:
    """ember.version and ember.random, registered so `import ember.version` works too."""
    modules = {"version": _version_module(), "random": _random_module()}
    for name, module in modules.items():
        sys.modules[f"ember.{name}"] = module
    return modules


# ---- exports ------------------------------------------------------------------------------------

_FUNCTIONS = ["geqrf", "orgqr", "ormqr", "conv_tbc", "svd_lowrank", "pca_lowrank",
              "typename", "set_default_tensor_type", "to_dlpack", "grid_sampler", "grid_sampler_2d",
              "grid_sampler_3d", "affine_grid_generator", "rnn_tanh_cell", "rnn_relu_cell", "lstm_cell", "gru_cell",
              "resize_as_"]


def namespace() -> dict[str, object]:
    return {name: globals()[name] for name in _FUNCTIONS}


METHODS = ["resize_", "resize_as_", "set_", "is_set_to", "module_load", "geqrf", "orgqr", "ormqr"]


def tensor_methods() -> dict[str, object]:
    """The METHODS that Tensor lacks, is_meta, and the storage accessors (untyped_storage,
    storage, storage_type: ember/storage.py), for ember/_tensor_methods.py to attach."""
    from . import storage

    methods = {name: globals()[name] for name in METHODS if not hasattr(_C.Tensor, name)}
    methods.update(storage.tensor_methods())
    if not hasattr(_C.Tensor, "is_meta"):
        methods["is_meta"] = property(is_meta)  # an attribute in PyTorch, as is_cuda
    return methods
