"""Audio functions in the shape of ``torchaudio.functional``."""

from ._alignment import TokenSpan, forced_align, merge_tokens
from ._rnnt import rnnt_loss

__all__ = ["TokenSpan", "forced_align", "merge_tokens", "rnnt_loss"]
