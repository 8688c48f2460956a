"""ember.nn.qat: the older name of ember.ao.nn.qat (torch.nn.qat)."""

from ...ao.nn.qat import *  # noqa: F403
from ...ao.nn.qat import __all__  # noqa: F401
