"""ember.masked (torch.masked): the masked reductions and normalizations, and the MaskedTensor
prototype.

Each reduction computes its plain counterpart over the elements where `mask` is True: the others
are replaced by the operation's identity first (0 for sum, 1 for prod, -inf for amax and
logsumexp, +inf for amin, ...), so gradients reach the unmasked elements only. `mask` broadcasts
to the input (any dtype, read as bool); None means every element. `dtype` casts the input first.
Where nothing is left to reduce the result is the identity (sum 0, amax -inf) or NaN (mean, var,
median, softmax), as in PyTorch. A MaskedTensor input brings its own mask (and-ed with `mask`
where both are given; PyTorch ignores `mask` then) and gives a plain tensor.

`MaskedTensor` (built by `masked_tensor` or `as_masked_tensor`) is a data tensor with a bool mask
of the same shape that carries PyTorch's supported operators; see ember.masked._tensor."""

from __future__ import annotations

import functools

import ember

from . import _reductions
from ._tensor import MaskedTensor, as_masked_tensor, is_masked_tensor, masked_tensor

__all__ = ["sum", "prod", "amax", "amin", "argmax", "argmin", "mean", "median", "norm", "var", "std",
           "logsumexp", "logaddexp", "cumsum", "cumprod", "softmax", "log_softmax", "softmin", "normalize",
           "MaskedTensor", "masked_tensor", "as_masked_tensor", "is_masked_tensor", "maskedtensor"]


def _and(mask, extra):
    """A MaskedTensor's mask, narrowed by an explicitly given one."""
    if extra is None:
        return mask
    extra = extra if isinstance(extra, ember.Tensor) else ember.tensor(extra)
    return mask & extra.to(mask.device).to(ember.bool)


def _taking_masked(fn):
    """fn, also accepting a MaskedTensor input (its data, under its mask)."""
    @functools.wraps(fn)
    def wrapper(input, *args, mask=None, **kwargs):  # noqa: A002 - PyTorch's argument name
        if isinstance(input, MaskedTensor):
            input, mask = input._data, _and(input._mask, mask)  # noqa: A001
        return fn(input, *args, mask=mask, **kwargs)

    return wrapper


sum = _taking_masked(_reductions.sum)  # noqa: A001
prod = _taking_masked(_reductions.prod)
amax = _taking_masked(_reductions.amax)
amin = _taking_masked(_reductions.amin)
argmax = _taking_masked(_reductions.argmax)
argmin = _taking_masked(_reductions.argmin)
mean = _taking_masked(_reductions.mean)
median = _taking_masked(_reductions.median)
norm = _taking_masked(_reductions.norm)
var = _taking_masked(_reductions.var)
std = _taking_masked(_reductions.std)
logsumexp = _taking_masked(_reductions.logsumexp)
cumsum = _taking_masked(_reductions.cumsum)
cumprod = _taking_masked(_reductions.cumprod)
softmax = _taking_masked(_reductions.softmax)
log_softmax = _taking_masked(_reductions.log_softmax)
softmin = _taking_masked(_reductions.softmin)
normalize = _taking_masked(_reductions.normalize)


@functools.wraps(_reductions.logaddexp)
def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):  # noqa: A002
    if isinstance(input, MaskedTensor):
        input, input_mask = input._data, _and(input._mask, input_mask)  # noqa: A001
    if isinstance(other, MaskedTensor):
        other, other_mask = other._data, _and(other._mask, other_mask)
    return _reductions.logaddexp(input, other, dtype=dtype, input_mask=input_mask, other_mask=other_mask)


from . import maskedtensor  # noqa: E402 - torch.masked.maskedtensor
