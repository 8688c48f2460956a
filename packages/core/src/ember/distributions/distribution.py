"""The Distribution base class (torch.distributions.Distribution).

Shapes: a sample has shape `sample_shape + batch_shape + event_shape`. `batch_shape` indexes
independent distributions of possibly different parameters; `event_shape` is the shape of one draw
(() for scalar distributions, (k,) for a Categorical's one-hot or a k-dim MultivariateNormal).
`log_prob` reduces over the event dimensions and returns `sample_shape + batch_shape`.
"""

from __future__ import annotations

import warnings

import ember

from . import constraints
from .utils import lazy_property

__all__ = ["Distribution"]


def _shape(shape) -> tuple:
    if isinstance(shape, ember.Tensor):
        raise TypeError("a shape must be a tuple of ints, not a Tensor")
    return tuple(int(s) for s in shape)  # a bare int raises TypeError, as torch.Size(5) does


def _format_param(value) -> str:
    """As PyTorch's repr shows a parameter: the number for a 0-d tensor, the tensor for one element,
    else the shape."""
    if value.dim() == 0:
        return str(value.item())
    return str(value) if value.numel() == 1 else str(tuple(value.shape))


class Distribution:
    """Base of all probability distributions."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__  # as PyTorch: validation is on unless Python runs with -O

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turns argument and sample validation on or off for distributions built afterwards
        without an explicit `validate_args`."""
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args: bool | None = None) -> None:
        self._batch_shape = _shape(batch_shape)
        self._event_shape = _shape(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                              f"`arg_constraints = {{}}` or initialize the distribution with `validate_args=False` "
                              f"to turn off validation.", stacklevel=2)
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue  # a constraint on other parameters cannot be checked on its own
                if param not in self.__dict__ and isinstance(getattr(type(self), param), lazy_property):
                    continue  # derived from the given parameterization (logits from probs): not built yet
                value = getattr(self, param)
                valid = constraint.check(value)
                if not valid.all():
                    raise ValueError(f"Expected parameter {param} ({type(value).__name__} of shape "
                                     f"{tuple(value.shape)}) of distribution {self!r} to satisfy the constraint "
                                     f"{constraint!r}, but found invalid values:\n{value}")
        super().__init__()

    def expand(self, batch_shape, _instance=None):
        """A view of this distribution with its batch dimensions expanded to `batch_shape`
        (parameters are expanded, not copied)."""
        raise NotImplementedError

    @property
    def batch_shape(self) -> tuple:
        return self._batch_shape

    @property
    def event_shape(self) -> tuple:
        return self._event_shape

    @property
    def arg_constraints(self) -> dict:
        """Each parameter's name and the constraint its values must satisfy."""
        raise NotImplementedError

    @property
    def support(self):
        """The constraint a sample satisfies."""
        raise NotImplementedError

    @property
    def mean(self):
        raise NotImplementedError

    @property
    def mode(self):
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=()):
        """Draws `sample_shape` samples (no gradient flows to the parameters)."""
        with ember.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        """Draws `sample_shape` reparameterized samples: differentiable in the parameters."""
        raise NotImplementedError

    def sample_n(self, n: int):
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning, stacklevel=2)
        return self.sample((n,))

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        return ember.exp(self.entropy())

    def _extended_shape(self, sample_shape=()) -> tuple:
        """sample_shape + batch_shape + event_shape."""
        return _shape(sample_shape) + self._batch_shape + self._event_shape

    def _validate_sample(self, value) -> None:
        """Raises ValueError unless `value` is a tensor that broadcasts against batch_shape +
        event_shape and lies in the support."""
        if not isinstance(value, ember.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = value.dim() - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != self._event_shape:
            raise ValueError(f"The right-most size of value must match event_shape: {tuple(value.shape)} vs "
                             f"{self._event_shape}.")
        actual_shape = tuple(value.shape)
        expected_shape = self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual_shape), reversed(expected_shape), strict=False):  # right-aligned
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {actual_shape} vs "
                                 f"{expected_shape}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample validation. Please "
                          f"initialize the distribution with `validate_args=False` to turn off validation.",
                          stacklevel=3)
            return
        valid = support.check(value)
        if not valid.all():
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to be "
                             f"within the support ({support!r}) of the distribution {self!r}, but found invalid "
                             f"values:\n{value}")

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                                      f"__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self) -> str:
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(f"{p}: {_format_param(self.__dict__[p])}" for p in names)
        return f"{self.__class__.__name__}({args})"
