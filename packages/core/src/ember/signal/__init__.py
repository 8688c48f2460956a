"""Signal processing (torch.signal): window functions in ember.signal.windows."""

from . import windows

__all__ = ["windows"]
