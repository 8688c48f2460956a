"""ember.utils (torch.utils): input pipelines (data) and timing (benchmark)."""

from . import benchmark, data

__all__ = ["benchmark", "data"]
