"""ember.nn.quantizable: the older name of ember.ao.nn.quantizable (torch.nn.quantizable)."""

from ...ao.nn.quantizable import *  # noqa: F403
from ...ao.nn.quantizable import __all__  # noqa: F401
