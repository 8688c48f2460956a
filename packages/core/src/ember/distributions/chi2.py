"""Chi2(df) = Gamma(df / 2, 1 / 2) (torch.distributions.Chi2)."""

from __future__ import annotations

from numbers import Number

import ember

from . import constraints
from .gamma import Gamma

__all__ = ["Chi2"]


class Chi2(Gamma):
    """The chi-squared distribution with `df` degrees of freedom."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None) -> None:
        if isinstance(df, Number):
            df = ember.tensor(float(df), dtype=ember.get_default_dtype())
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Chi2, _instance)
        return super().expand(batch_shape, new)

    @property
    def df(self):
        return self.concentration * 2
