"""LKJCholesky(dim, concentration): the LKJ distribution on Cholesky factors of correlation matrices
(torch.distributions.LKJCholesky)."""

from __future__ import annotations

import math

import ember

from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import _diag_embed, broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """L with L L^T ~ LKJ(concentration) (density ∝ det(R)^(η-1)), a dim x dim lower Cholesky factor of
    a correlation matrix. Sampled by the onion method (Lewandowski, Kurowicka & Joe, 2009): row i is
    sqrt(y_i) times a uniform direction in its first i coordinates, y_i ~ Beta, and a positive diagonal
    that makes the row unit length. log_prob is the density of L itself (with the Jacobian of L -> R)."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration=1.0, validate_args=None) -> None:
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        # Row i (i >= 1) of L has i free coordinates: its squared length is y_i ~ Beta(i/2, β_i), with
        # β_1 = η + (d-2)/2 decreasing by 1/2 per row. (PyTorch 2.13 uses i - 1/2 as the first concentration,
        # which for dim >= 3 gives samples that are not LKJ-distributed: too strongly correlated.)
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        rows = ember.arange(self.dim, dtype=self.concentration.dtype, device=self.concentration.device)
        beta_conc1 = rows.clamp(min=1) / 2
        beta_conc0 = marginal_conc.unsqueeze(-1) - 0.5 * (rows - 1).clamp(min=0)
        self._beta = Beta(beta_conc1, beta_conc0)  # row 0 has no off-diagonal part: its draw is unused
        super().__init__(tuple(self.concentration.shape), (dim, dim), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = tuple(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        super(LKJCholesky, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=()):
        with ember.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u_normal = ember.randn(self._extended_shape(sample_shape), dtype=y.dtype, device=y.device).tril(-1)
            norm = u_normal.pow(2).sum(-1, keepdim=True).sqrt()
            # row 0 is all zeros (norm 0): leave it zero rather than 0/0
            u_hypersphere = u_normal / ember.where(norm > 0, norm, ember.ones_like(norm))
            w = y.sqrt() * u_hypersphere
            tiny = ember.finfo(w.dtype).tiny
            diag = (1 - w.pow(2).sum(-1)).clamp(min=tiny).sqrt()
            return w + _diag_embed(diag)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        # Only the diagonal matters: det(R) = Π L_ii^2, and the Jacobian of L -> R is Π L_ii^(dim - i).
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = ember.arange(2, self.dim + 1, dtype=self.concentration.dtype, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = (order * diag_elems.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        normalize = 0.5 * dm1 * math.log(math.pi) + ember.mvlgamma(alpha - 0.5, p=dm1) - ember.lgamma(alpha) * dm1
        return unnormalized - normalize
