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


def set_(self: _C.Tensor, source: object = None, *args: object, **kwargs: object) -> _C.Tensor:
    """self becomes a view of source's memory (its shape and strides), or an empty tensor with no
    source (torch.Tensor.set_). Storage objects and explicit offsets are not supported: Ember
    tensors have no separate storage objects."""
    from . import empty

    if args or kwargs or (source is not None and not isinstance(source, _C.Tensor)):
        raise NotImplementedError("set_(): Ember has no storage objects; only set_() and set_(tensor) are supported")
    if self.requires_grad:
        raise RuntimeError("set_ is not allowed on a Tensor created from .data or .detach() that requires grad")
    if source is not None and source.dtype != self.dtype:
        raise RuntimeError(f"Could not set tensor of type {source.dtype} to a tensor of type {self.dtype}")
    self.data = source if source is not None else empty([0], dtype=self.dtype, device=self.device)
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

_FUNCTIONS = ["typename", "set_default_tensor_type", "to_dlpack", "grid_sampler", "grid_sampler_2d",
              "grid_sampler_3d", "affine_grid_generator", "rnn_tanh_cell", "rnn_relu_cell", "lstm_cell", "gru_cell",
              "resize_as_"]


def namespace() -> dict[str, object]:
    return {name: globals()[name] for name in _FUNCTIONS}


METHODS = ["resize_", "resize_as_", "set_", "is_set_to", "module_load"]


def install_tensor_methods() -> None:
    for name in METHODS:
        if not hasattr(_C.Tensor, name):
            setattr(_C.Tensor, name, globals()[name])
    if not hasattr(_C.Tensor, "is_meta"):
        _C.Tensor.is_meta = property(is_meta)  # an attribute in PyTorch, as is_cuda
