"""ember.nn.utils: stateless.functional_call (the rest of torch.nn.utils is not built yet)."""

from . import stateless

__all__ = ["stateless"]
