"""GeneralizedPareto(loc, scale, concentration) (torch.distributions.GeneralizedPareto)."""

from __future__ import annotations

import math
from numbers import Number

import ember

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """Survival function (1 + ξ z)^(-1/ξ) for z = (x - loc) / scale (exp(-z) at ξ = 0), ξ = concentration.
    Support: [loc, ∞) for ξ >= 0, [loc, loc - scale/ξ] for ξ < 0."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None) -> None:
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        scalar = all(isinstance(v, Number) for v in (loc, scale, concentration))
        batch_shape = () if scalar else tuple(self.loc.shape)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(GeneralizedPareto, _instance)
        batch_shape = tuple(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        super(GeneralizedPareto, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _zero_and_safe_concentration(self):
        """Where ξ is (close to) 0, and ξ with those entries replaced by 1 so that the ξ != 0 branch stays finite."""
        eq_zero = ember.isclose(self.concentration, ember.zeros_like(self.concentration))
        return eq_zero, ember.where(eq_zero, ember.ones_like(self.concentration), self.concentration)

    def rsample(self, sample_shape=()):
        u = ember.rand(self._extended_shape(sample_shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        eq_zero, safe = self._zero_and_safe_concentration()
        y = 1 / safe + 1
        # ξ = -1 is the uniform case: the exponent y is 0 and the density constant
        nonzero = ember.where(y == 0, y, y * ember.log1p(safe * z))
        return -self.scale.log() - ember.where(eq_zero, z, nonzero)

    def log_survival_function(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        eq_zero, safe = self._zero_and_safe_concentration()
        return ember.where(eq_zero, -z, -ember.log1p(safe * z) / safe)

    def log_cdf(self, value):
        return ember.log1p(-ember.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return ember.exp(self.log_cdf(value))

    def icdf(self, value):
        eq_zero, safe = self._zero_and_safe_concentration()
        log_u = ember.log1p(-value)
        nonzero = self.loc + self.scale / safe * ember.expm1(-safe * log_u)
        return ember.where(eq_zero, self.loc - self.scale * log_u, nonzero)

    @property
    def mean(self):
        valid = self.concentration < 1  # infinite (NaN, as PyTorch) for ξ >= 1
        safe = ember.where(valid, self.concentration, ember.full_like(self.concentration, 0.5))
        return ember.where(valid, self.loc + self.scale / (1 - safe), ember.full_like(self.loc, math.nan))

    @property
    def variance(self):
        valid = self.concentration < 0.5
        safe = ember.where(valid, self.concentration, ember.full_like(self.concentration, 0.25))
        result = self.scale.pow(2) / ((1 - safe).pow(2) * (1 - 2 * safe))
        return ember.where(valid, result, ember.full_like(result, math.nan))

    @property
    def mode(self):
        return self.loc

    def entropy(self):
        return (ember.log(self.scale) + self.concentration + 1).expand(self._batch_shape)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        upper = ember.where(self.concentration < 0, self.loc - self.scale / self.concentration,
                            ember.full_like(self.loc, math.inf))
        return constraints.interval(self.loc, upper)
