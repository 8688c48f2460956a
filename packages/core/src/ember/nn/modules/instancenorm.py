"""PyTorch's module for the instance norms (nn.modules.instancenorm), where pickles of whole
models name them; Ember defines them in normalization.py beside the other norms."""

from .normalization import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]

for _cls in (InstanceNorm1d, InstanceNorm2d, InstanceNorm3d):
    _cls.__module__ = __name__
