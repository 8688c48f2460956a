"""ember.nn.utils.spectral_norm (torch.nn.utils.spectral_norm): the hook-based spectral
normalization (ember.nn.utils.parametrizations.spectral_norm is the newer form).

module.<name> moves to the parameter <name>_orig; the buffers <name>_u and <name>_v hold the
power-iteration vectors (left and right singular vector estimates of the weight seen as a
matrix, `dim` first and the rest flattened). A forward pre-hook sets the plain attribute
<name> = <name>_orig / sigma, sigma = u . (W v); in training mode it first runs
n_power_iterations steps (v = normalize(W^T u), then u = normalize(W v)) in place on the buffers.
As in PyTorch, u and v start as normalized random draws, with no iteration before the first
forward."""

from __future__ import annotations

from typing import Any, TypeVar

from ... import _C
from ...autograd.grad_mode import no_grad
from ...linalg import multi_dot, pinv
from .._normalization import normalize
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module
from ..parameter import Parameter, UninitializedParameter
from ._pre_hooks import pop_reparametrization

__all__ = ["SpectralNorm", "SpectralNormLoadStateDictPreHook", "SpectralNormStateDictHook", "spectral_norm",
           "remove_spectral_norm"]

T_module = TypeVar("T_module", bound=Module)


class SpectralNorm:
    """The forward pre-hook of spectral_norm for one tensor name."""

    # version 1: <name> is no longer in the state dict (only <name>_orig, _u, _v); a version-0
    # checkpoint gets its <name>_v solved from the stored <name> on load
    _version: int = 1
    name: str
    dim: int
    n_power_iterations: int
    eps: float

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        """weight as a matrix: dim `dim` as rows, every other dim flattened into the columns."""
        mat = weight
        if self.dim != 0:
            mat = mat.permute(self.dim, *[d for d in range(mat.dim()) if d != self.dim])
        return mat.reshape([mat.shape[0], -1])

    def compute_weight(self, module: Module, do_power_iteration: bool):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(normalize(_C.mv(mat.t(), u), dim=0, eps=self.eps))
                    u.copy_(normalize(_C.mv(mat, v), dim=0, eps=self.eps))
                # the graph below must not see the buffers' later in-place updates
                u = u.clone()
                v = v.clone()
        sigma = _C.dot(u, _C.mv(mat, v))
        return weight / sigma

    def remove(self, module: Module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    def _solve_v_and_rescale(self, weight_mat, u, target_sigma):
        """A v with u . (W v) == target_sigma: v = pinv(W^T W) W^T u, rescaled."""
        v = multi_dot([pinv(weight_mat.t().mm(weight_mat)), weight_mat.t(), u.unsqueeze(1)]).squeeze(1)
        return v.mul_(target_sigma / _C.dot(u, _C.mv(weight_mat, v)))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int, eps: float) -> SpectralNorm:
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `SpectralNorm` can't have uninitialized parameters. Make sure to "
                             "run the dummy forward before applying spectral normalization")
        with no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            u = normalize(_C.zeros([h], dtype=weight.dtype, device=weight.device).normal_(0, 1), dim=0, eps=fn.eps)
            v = normalize(_C.zeros([w], dtype=weight.dtype, device=weight.device).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.data)  # a plain tensor until the first forward
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        module._register_state_dict_hook(SpectralNormStateDictHook(fn))
        module.register_load_state_dict_pre_hook(_WithoutModule(SpectralNormLoadStateDictPreHook(fn)))
        return fn


class _WithoutModule:
    """Adapts a load_state_dict pre-hook that does not take the module (PyTorch's
    _register_load_state_dict_pre_hook form) to Ember's registration, which passes it."""

    def __init__(self, hook) -> None:
        self.hook = hook

    def __call__(self, module, *args) -> None:
        self.hook(*args)


class SpectralNormLoadStateDictPreHook:
    """Upgrades a version-0 checkpoint (<name>, <name>_orig, <name>_u without <name>_v) on load."""

    def __init__(self, fn) -> None:
        self.fn = fn

    def __call__(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs) -> None:
        fn = self.fn
        version = local_metadata.get("spectral_norm", {}).get(fn.name + ".version", None)
        if version is not None and version >= 1:
            return
        weight_key = prefix + fn.name
        if version is None and all(weight_key + s in state_dict for s in ("_orig", "_u", "_v")) \
                and weight_key not in state_dict:
            return  # already the current layout, written without metadata
        has_missing_keys = False
        for suffix in ("_orig", "", "_u"):
            key = weight_key + suffix
            if key not in state_dict:
                has_missing_keys = True
                if strict:
                    missing_keys.append(key)
        if has_missing_keys:
            return
        with no_grad():
            weight_orig = state_dict[weight_key + "_orig"]
            weight = state_dict.pop(weight_key)
            sigma = (weight_orig / weight).mean()
            weight_mat = fn.reshape_weight_to_matrix(weight_orig)
            u = state_dict[weight_key + "_u"]
            state_dict[weight_key + "_v"] = fn._solve_v_and_rescale(weight_mat, u, sigma)


class SpectralNormStateDictHook:
    """Records spectral_norm's layout version in the state dict's metadata."""

    def __init__(self, fn) -> None:
        self.fn = fn

    def __call__(self, module, state_dict, prefix, local_metadata) -> None:
        if "spectral_norm" not in local_metadata:
            local_metadata["spectral_norm"] = {}
        key = self.fn.name + ".version"
        if key in local_metadata["spectral_norm"]:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
        local_metadata["spectral_norm"][key] = self.fn._version


def spectral_norm(module: T_module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> T_module:
    """Divide module.<name> by its spectral norm, estimated by power iteration, before every
    forward. dim defaults to 1 for the transposed convolutions and 0 otherwise."""
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: T_module, name: str = "weight") -> T_module:
    """Fold the spectral normalization of module.<name> back into a plain parameter <name>."""
    if not pop_reparametrization(module, SpectralNorm, name, lambda hook: hook.name):
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    for k, hook in module._state_dict_hooks.items():
        if isinstance(hook, SpectralNormStateDictHook) and hook.fn.name == name:
            del module._state_dict_hooks[k]
            break
    for k, hook in module._load_state_dict_pre_hooks.items():
        if isinstance(hook, _WithoutModule) and isinstance(hook.hook, SpectralNormLoadStateDictPreHook) \
                and hook.hook.fn.name == name:
            del module._load_state_dict_pre_hooks[k]
            break
    return module
