"""ember.nn.quantized.dynamic: the older name of ember.ao.nn.quantized.dynamic."""

from ...ao.nn.quantized.dynamic import *  # noqa: F403
from ...ao.nn.quantized.dynamic import __all__  # noqa: F401
