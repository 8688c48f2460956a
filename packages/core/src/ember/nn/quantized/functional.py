"""ember.nn.quantized.functional: the older name of ember.ao.nn.quantized.functional."""

from ...ao.nn.quantized.functional import *  # noqa: F403
from ...ao.nn.quantized.functional import __all__  # noqa: F401
