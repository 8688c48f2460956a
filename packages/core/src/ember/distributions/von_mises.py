"""VonMises(loc, concentration): the circular normal distribution (torch.distributions.VonMises)."""

from __future__ import annotations

import math

import ember

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property

__all__ = ["VonMises"]


def _log_i0(x):
    """log I0(x), through the exponentially scaled Bessel function so that large x stays finite."""
    return ember.log(ember.special.i0e(x)) + x


def _log_i1(x):
    return ember.log(ember.special.i1e(x)) + x


def _rejection_sample(loc, concentration, proposal_r, shape):
    """Best & Fisher (1979): a wrapped-Cauchy envelope, accepted elementwise until every entry is drawn."""
    # For κ > 1e12 the envelope's r - 1 ~ 1/(2κ) is lost to rounding and no proposal would be accepted;
    # there the von Mises is the normal N(0, 1/κ) to within O(1/κ). Entries that could never be drawn
    # (NaN κ or loc, κ <= 0 or infinite; reachable with validate_args=False) are NaN instead of looping.
    drawable = (ember.isfinite(concentration) & ember.isfinite(loc) & (concentration > 0)).expand(shape)
    huge = drawable & (concentration > 1e12).expand(shape)
    normal = ember.randn(shape, dtype=loc.dtype, device=loc.device) / concentration.sqrt()
    x = ember.where(huge, normal, ember.zeros(shape, dtype=loc.dtype, device=loc.device))
    x = ember.where(drawable, x, ember.full(shape, math.nan, dtype=loc.dtype, device=loc.device))
    done = ~drawable | huge
    while not bool(done.all()):
        u1, u2, u3 = ember.rand((3,) + tuple(shape), dtype=loc.dtype, device=loc.device).unbind(0)
        z = ember.cos(math.pi * u1)
        f = (1 + proposal_r * z) / (proposal_r + z)
        c = concentration * (proposal_r - f)
        accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
        x = ember.where(accept & ~done, (u3 - 0.5).sign() * f.acos(), x)
        done = done | accept
    return ember.remainder(x + math.pi + loc, 2 * math.pi) - math.pi  # wrapped into [-π, π)


class VonMises(Distribution):
    """Density exp(κ cos(x - loc)) / (2π I0(κ)) for κ = concentration. `mean` and `variance` are the
    circular ones: loc and 1 - I1(κ)/I0(κ). log_prob accepts any real value (the density is periodic)."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None) -> None:
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(tuple(self.loc.shape), (), validate_args=validate_args)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (self.concentration * ember.cos(value - self.loc) - math.log(2 * math.pi)
                - _log_i0(self.concentration))

    @lazy_property
    def _loc(self):
        return self.loc.to(ember.float64)

    @lazy_property
    def _concentration(self):
        return self.concentration.to(ember.float64)

    @lazy_property
    def _proposal_r(self):
        kappa = self._concentration
        tau = 1 + ember.hypot(ember.ones_like(kappa), 2 * kappa)  # sqrt(1 + 4κ²) without overflow for huge κ
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        r = (1 + rho.pow(2)) / (2 * rho)
        return ember.where(kappa < 1e-5, 1 / kappa + kappa, r)  # the closed form cancels for tiny κ

    def sample(self, sample_shape=()):
        # Always in float64: in float32 the acceptance test fails for small κ and the loop would not end.
        with ember.no_grad():
            shape = self._extended_shape(sample_shape)
            return _rejection_sample(self._loc, self._concentration, self._proposal_r, shape).to(self.loc.dtype)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(VonMises, _instance)
        batch_shape = tuple(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        super(VonMises, new).__init__(batch_shape, (), validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        return 1 - (_log_i1(self.concentration) - _log_i0(self.concentration)).exp()
