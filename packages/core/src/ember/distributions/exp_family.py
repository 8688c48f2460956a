"""ExponentialFamily: densities p(x; θ) = exp(<t(x), θ> - F(θ) + k(x)) (torch.distributions.ExponentialFamily)."""

from __future__ import annotations

import ember

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Subclasses give the natural parameters θ (`_natural_params`), the log normalizer F
    (`_log_normalizer`) and the carrier measure's mean E[k(x)] (`_mean_carrier_measure`); entropy
    and same-family KL divergence then follow from F's gradient (a Bregman divergence), which
    autograd computes."""

    @property
    def _natural_params(self) -> tuple:
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        """H = F(θ) - <θ, ∇F(θ)> - E[k(x)]."""
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        with ember.enable_grad():
            lg_normal = self._log_normalizer(*nparams)
            gradients = ember.autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for np_, g in zip(nparams, gradients, strict=True):
            result = result - (np_ * g).reshape(self._batch_shape + (-1,)).sum(-1)
        return result
