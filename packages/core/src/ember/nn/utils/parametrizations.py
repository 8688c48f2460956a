"""ember.nn.utils.parametrizations (torch.nn.utils.parametrizations): weight_norm and
spectral_norm written as parametrizations (see parametrize.py)."""

from __future__ import annotations

from ... import _C
from ...autograd.grad_mode import no_grad
from ..modules.module import Module
from . import parametrize

__all__ = ["weight_norm", "spectral_norm"]


def _norm_except_dim(v, dim: int):
    """The 2-norm of v over every dim but `dim` (all dims when dim is None), kept broadcastable."""
    if dim is None:
        return _C.sqrt(_C.sum(v * v))
    others = [d for d in range(v.dim()) if d != dim]
    return _C.sqrt(_C.sum(v * v, others, True)) if others else _C.abs(v)


class _WeightNorm(Module):
    """weight = g * v / ||v||, the norm taken over every dim but `dim`: direction v and
    magnitude g are learnt separately (Salimans & Kingma, 2016)."""

    def __init__(self, dim: int | None = 0):
        super().__init__()
        self.dim = dim

    def _dim(self, v):
        if self.dim is None:
            return None
        return self.dim + v.dim() if self.dim < 0 else self.dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / _norm_except_dim(weight_v, self._dim(weight_v)))

    def right_inverse(self, weight):
        return _norm_except_dim(weight, self._dim(weight)), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Splits module.<name> into parametrizations.<name>.original0 (magnitude g) and original1
    (direction v)."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
                                 unexpected_keys, error_msgs):
        # a checkpoint of nn.utils.weight_norm holds <name>_g / <name>_v: the same magnitude and
        # direction under the parametrization's names (PyTorch's hook)
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module.register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


class _SpectralNorm(Module):
    """weight / sigma, sigma the largest singular value of the weight seen as a matrix (`dim`
    first, the rest flattened), estimated by power iteration: n_power_iterations steps per forward
    in training mode, the vectors u and v kept as buffers between calls (Miyato et al., 2018)."""

    def __init__(self, weight, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12):
        super().__init__()
        ndim = weight.dim()
        if not -ndim <= dim < max(ndim, 1):
            raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim % ndim if ndim else 0
        self.eps = eps
        self.n_power_iterations = n_power_iterations
        if ndim > 1:
            matrix = self._as_matrix(weight)
            h, w = matrix.shape
            u = _C.randn([h], dtype=weight.dtype)
            v = _C.randn([w], dtype=weight.dtype)
            self.register_buffer("_u", self._normalized(u))
            self.register_buffer("_v", self._normalized(v))
            self._power_iterations(matrix, 15)  # start from a good estimate

    def _normalized(self, x):
        return x / _C.clamp(_C.sqrt(_C.sum(x * _C.conj(x)).real if x.is_complex() else _C.sum(x * x)), self.eps)

    def _as_matrix(self, weight):
        if self.dim != 0:
            weight = _C.movedim(weight, self.dim, 0)
        return weight.reshape([weight.shape[0], -1])

    def _power_iterations(self, matrix, steps: int) -> None:
        with no_grad():
            for _ in range(steps):
                self._u.copy_(self._normalized(_C.mv(matrix, self._v)))
                self._v.copy_(self._normalized(_C.mv(matrix.mH, self._u)))

    def forward(self, weight):
        if weight.dim() == 1:
            return weight / _C.clamp(_C.sqrt(_C.sum(weight * weight)), self.eps)
        matrix = self._as_matrix(weight)
        if self.training:
            self._power_iterations(matrix.detach(), self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()  # the graph must not see later in-place updates
        sigma = _C.vdot(u, _C.mv(matrix, v))
        return weight / sigma

    def right_inverse(self, value):
        return value  # the stored weight is taken as it is; its normalised form is computed on read


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:
    """Divides module.<name> by its spectral norm on every read. dim defaults to 1 for the
    transposed convolutions (their output channels are dim 1) and 0 otherwise."""
    weight = getattr(module, name, None)
    if not isinstance(weight, _C.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if type(module).__name__.startswith("ConvTranspose") else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
