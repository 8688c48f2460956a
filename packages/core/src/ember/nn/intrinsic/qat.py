"""ember.nn.intrinsic.qat: the older name of ember.ao.nn.intrinsic.qat (torch.nn.intrinsic.qat)."""

from ...ao.nn.intrinsic.qat import *  # noqa: F403
from ...ao.nn.intrinsic.qat import __all__  # noqa: F401
