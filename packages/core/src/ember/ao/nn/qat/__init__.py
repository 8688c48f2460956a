"""ember.ao.nn.qat (torch.ao.nn.qat): float modules whose weight passes through a qconfig's weight
fake quantizer on every forward."""

from .modules import Conv1d, Conv2d, Conv3d, Linear

__all__ = ["Conv1d", "Conv2d", "Conv3d", "Linear"]
