"""Dirichlet(concentration) on the simplex (torch.distributions.Dirichlet)."""

from __future__ import annotations

import ember
import ember.nn.functional as F

from . import constraints
from ._samplers import standard_gamma
from .exp_family import ExponentialFamily
from .utils import _xlogy

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution: concentration of shape (..., K), samples on the K-simplex.
    rsample normalizes K reparameterized gamma draws, so gradients reach the concentration."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None) -> None:
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = tuple(concentration.shape[:-1]), tuple(concentration.shape[-1:])
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = tuple(batch_shape)
        new.concentration = self.concentration.expand(batch_shape + self.event_shape)
        super(Dirichlet, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        gammas = standard_gamma(self.concentration.expand(shape))
        finfo = ember.finfo(gammas.dtype)
        # As PyTorch's sampler: keep every coordinate strictly inside (0, 1) so log_prob stays finite.
        return (gammas / gammas.sum(-1, keepdim=True)).clamp(min=finfo.tiny, max=1 - finfo.eps)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (_xlogy(self.concentration - 1.0, value).sum(-1) + ember.lgamma(self.concentration.sum(-1))
                - ember.lgamma(self.concentration).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, keepdim=True)
        # Where every concentration is below 1 the density peaks at the vertex of the largest one.
        mask = (self.concentration < 1).all(-1, keepdim=True)
        vertex = F.one_hot(self.concentration.argmax(-1), concentrationm1.shape[-1]).to(mode.dtype)
        return ember.where(mask, vertex, mode)

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        k = self.concentration.shape[-1]
        a0 = self.concentration.sum(-1)
        return (ember.lgamma(self.concentration).sum(-1) - ember.lgamma(a0) - (k - a0) * ember.digamma(a0)
                - ((self.concentration - 1.0) * ember.digamma(self.concentration)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return ember.lgamma(x).sum(-1) - ember.lgamma(x.sum(-1))
