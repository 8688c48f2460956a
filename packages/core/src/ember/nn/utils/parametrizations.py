"""ember.nn.utils.parametrizations (torch.nn.utils.parametrizations): orthogonal, weight_norm and
spectral_norm written as parametrizations (see parametrize.py)."""

from __future__ import annotations

from ... import _C
from ...autograd.grad_mode import no_grad
from ..modules.module import Module
from . import parametrize

__all__ = ["orthogonal", "weight_norm", "spectral_norm"]


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


# ---- orthogonal ----------------------------------------------------------------------------------

_ORTHOGONAL_MAPS = ("matrix_exp", "cayley", "householder")


def _orthogonal_factor(A):
    """The Q of A = QR, with each column's sign chosen so that R's diagonal is positive (which makes
    it unique, and Q equal to A when A's columns are already orthonormal)."""
    import ember

    reflectors, tau = ember.geqrf(A)
    Q = ember.linalg.householder_product(reflectors, tau)
    return Q * reflectors.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _is_orthogonal(Q) -> bool:
    import ember

    n, k = Q.size(-2), Q.size(-1)
    eye = ember.eye(k, dtype=Q.dtype)
    return bool(ember.allclose(Q.mH @ Q, eye, atol=10.0 * n * ember.finfo(Q.dtype).eps))


class _Orthogonal(Module):
    """weight = an orthogonal (unitary, for complex) matrix, or batch of them, made from an
    unconstrained one X. Wide matrices are handled as their transposes. The maps, for an n x k
    (n >= k) X:
      - matrix_exp / cayley: A = L - L^H, L the lower triangle of X padded to n x n, is
        skew-symmetric, so exp(A) and (I - A/2)^-1 (I + A/2) are orthogonal; the weight is their
        first k columns;
      - householder: X's strict lower triangle holds k Householder vectors (tau = 2 / (1 + |v|^2))
        whose product gives the columns; X's diagonal (kept at +-1) picks each column's sign.
    With use_trivialization (the default), the weight is `base @ map(X)`: assigning a weight stores
    it as the `base` buffer (completed to a square orthogonal matrix) and sets X to -I, which every
    map sends to the identity's first columns, so optimisation starts at the assigned weight
    (dynamic trivialization, Lezcano-Casado 2019)."""

    def __init__(self, weight, orthogonal_map: str, *, use_trivialization: bool = True) -> None:
        super().__init__()
        if weight.is_complex() and orthogonal_map == "householder":
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        import ember

        wide = X.size(-2) < X.size(-1)
        tall = X.mT if wide else X
        n, k = tall.size(-2), tall.size(-1)
        if self.orthogonal_map == "householder":
            vectors = tall.tril(-1)
            tau = 2.0 / (1.0 + (vectors * vectors).sum(-2))
            Q = ember.linalg.householder_product(vectors, tau)
            Q = Q * tall.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)  # signs: not differentiated
        else:
            lower = tall.tril()
            if n > k:
                lower = ember.cat([lower, ember.zeros(*lower.shape[:-1], n - k, dtype=lower.dtype)], -1)
            A = lower - lower.mH
            if self.orthogonal_map == "matrix_exp":
                Q = ember.matrix_exp(A)
            else:
                eye = ember.eye(n, dtype=A.dtype)
                Q = ember.linalg.solve(eye - A / 2, eye + A / 2)
            Q = Q[..., :k]
        base = getattr(self, "base", None)
        if base is not None:
            Q = base @ Q
        return Q.mT if wide else Q

    @no_grad()
    def right_inverse(self, Q):
        import ember

        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor of shape "
                             f"{Q.shape}.")
        wide = Q.size(-2) < Q.size(-1)
        tall = Q.mT if wide else Q
        n, k = tall.size(-2), tall.size(-1)
        if "base" not in self._buffers:
            if self.orthogonal_map != "householder":
                raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                          "parametrizations when use_trivialization=False.")
            # Householder vectors of Q's QR; the diagonal keeps the sign of each reflection used
            # (a reflection LAPACK skipped, tau = 0, contributes the opposite sign)
            reflectors, tau = ember.geqrf(tall)
            signs = reflectors.diagonal(dim1=-2, dim2=-1).sign()
            reflectors.diagonal(dim1=-2, dim2=-1).copy_(ember.where(tau == 0, -signs, signs))
            return reflectors.mT if wide else reflectors
        if n == k:
            self.base = tall.clone() if _is_orthogonal(tall) else _orthogonal_factor(tall)
        else:  # complete the columns to a square orthogonal matrix
            extra = ember.randn(*tall.shape[:-1], n - k, dtype=tall.dtype)
            self.base = _orthogonal_factor(ember.cat([tall, extra], -1))
        minus_eye = ember.zeros_like(Q)
        minus_eye.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return minus_eye


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Makes module.<name> (a matrix or batch of matrices) orthogonal, or unitary when complex, on
    every read (see _Orthogonal). orthogonal_map defaults to "matrix_exp" for square or complex
    weights and "householder" otherwise."""
    weight = getattr(module, name, None)
    if not isinstance(weight, _C.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.dim() < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.dim()} dimensions.")
    if orthogonal_map is None:
        square = weight.size(-2) == weight.size(-1)
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    if orthogonal_map not in _ORTHOGONAL_MAPS:
        raise ValueError(f'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: '
                         f"{orthogonal_map}")
    parametrize.register_parametrization(module, name, _Orthogonal(weight, orthogonal_map,
                                                                   use_trivialization=use_trivialization),
                                         unsafe=True)
    return module
