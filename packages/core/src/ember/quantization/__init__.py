"""ember.quantization: the older name of ember.ao.quantization (torch.quantization, which PyTorch
keeps for scripts written before torch.ao)."""

from ..ao.quantization import *  # noqa: F403
from ..ao.quantization import __all__  # noqa: F401
