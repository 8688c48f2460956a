"""ember.utils (torch.utils): input pipelines (data)."""

from . import data

__all__ = ["data"]
