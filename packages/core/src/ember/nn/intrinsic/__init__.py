"""ember.nn.intrinsic: the older name of ember.ao.nn.intrinsic (torch.nn.intrinsic)."""

from ...ao.nn.intrinsic import *  # noqa: F403
from ...ao.nn.intrinsic import __all__, quantized  # noqa: F401
from . import qat  # noqa: F401 - the legacy torch.nn.intrinsic.qat
