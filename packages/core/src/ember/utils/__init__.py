"""ember.utils (torch.utils): input pipelines (data), timing (benchmark) and activation
checkpointing (checkpoint)."""

from . import benchmark, checkpoint, data

__all__ = ["benchmark", "checkpoint", "data"]
