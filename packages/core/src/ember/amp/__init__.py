"""ember.amp: mixed-precision training helpers (torch.amp): autocast regions and GradScaler."""

from .autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available
from .grad_scaler import GradScaler, OptState

__all__ = ["GradScaler", "OptState", "autocast", "custom_bwd", "custom_fwd", "is_autocast_available"]
