"""Audio transforms as ``ember.nn.Module``s, in the shape of ``torchaudio.transforms``."""

from ._rnnt import RNNTLoss

__all__ = ["RNNTLoss"]
