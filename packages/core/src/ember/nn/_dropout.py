"""dropout, its feature forms and alpha dropout (torch.nn.functional)."""

from __future__ import annotations

from .. import _C
from ._functional_utils import _written_back

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]


# ---- dropout ----------------------------------------------------------------------------------------
# The mask is a Bernoulli(1 - p) draw from ember's generator; kept values are scaled by 1 / (1 - p) so
# the expectation is unchanged. The feature forms drop whole channels (one draw per [N, C]).

def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(input, p: float, feature_dims: int | None):
    """0/1 mask in input's dtype; feature_dims = number of spatial dims for the channel forms.
    Drawn as PyTorch draws its noise (an empty tensor's bernoulli_(1 - p)), so a seeded script
    drops the same units as under PyTorch."""
    if feature_dims is None:
        shape = list(input.shape)
    else:
        batched = input.dim() == feature_dims + 2
        if input.dim() not in (feature_dims + 1, feature_dims + 2):
            raise RuntimeError(f"dropout{feature_dims}d: Expected {feature_dims + 1}D or {feature_dims + 2}D input, "
                               f"but received a {input.dim()}D input")
        shape = list(input.shape[:2 if batched else 1]) + [1] * feature_dims
    return _C._empty(shape, input.dtype, input.device).bernoulli_(1.0 - p)


def _dropout(input, p, training, inplace, feature_dims):
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _written_back(input, inplace, _C.mul, 0.0)
    # input * (mask / (1 - p)), rounded as PyTorch rounds it (the mask is scaled first, in place)
    return _written_back(input, inplace, lambda x: x * _keep_mask(x, p, feature_dims).div_(1.0 - p))


def dropout(input, p=0.5, training=True, inplace=False):
    return _dropout(input, p, training, inplace, None)


def dropout1d(input, p=0.5, training=True, inplace=False):
    return _dropout(input, p, training, inplace, 1)


def dropout2d(input, p=0.5, training=True, inplace=False):
    return _dropout(input, p, training, inplace, 2)


def dropout3d(input, p=0.5, training=True, inplace=False):
    return _dropout(input, p, training, inplace, 3)


# SELU's saturation value -scale * alpha: dropped units are set to it, then an affine map restores
# zero mean and unit variance (Klambauer et al., 2017), as PyTorch's alpha dropout does.
_SELU_SATURATION = 1.7580993408473766


def _alpha_dropout(input, p, training, inplace, feature_dims):
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _written_back(input, inplace, _C.mul, 0.0)
    a = 1.0 / ((_SELU_SATURATION ** 2 * p + 1) * (1 - p)) ** 0.5
    mask = _keep_mask(input, p, feature_dims)
    b = (mask - 1.0) * (_SELU_SATURATION * a) + _SELU_SATURATION * a * p
    return _written_back(input, inplace, lambda x: x * (mask * a) + b)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _alpha_dropout(input, p, training, inplace, None)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    if input.dim() < 2:
        raise RuntimeError("feature_alpha_dropout: Expected at least 2D input")
    return _alpha_dropout(input, p, training, inplace, input.dim() - 2)
