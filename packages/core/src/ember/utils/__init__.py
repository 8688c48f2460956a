"""ember.utils (torch.utils): input pipelines (data), timing (benchmark), activation
checkpointing (checkpoint), hook handles (hooks) and DLPack interchange (dlpack)."""

from . import benchmark, checkpoint, data, dlpack, hooks

__all__ = ["benchmark", "checkpoint", "data", "dlpack", "hooks"]
