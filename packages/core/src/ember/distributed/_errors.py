"""ember.distributed's exceptions, as torch.distributed's: all are RuntimeErrors."""

__all__ = ["DistError", "DistBackendError", "DistStoreError"]


class DistError(RuntimeError):
    """An error in ember.distributed."""


class DistBackendError(DistError):
    """A collective failed in the backend (Gloo): a timeout, or a peer that went away."""


class DistStoreError(DistError):
    """A key-value store operation failed or timed out."""
