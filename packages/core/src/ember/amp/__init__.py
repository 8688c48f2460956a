"""ember.amp: mixed-precision training helpers (torch.amp)."""

from .grad_scaler import GradScaler, OptState

__all__ = ["GradScaler", "OptState"]
