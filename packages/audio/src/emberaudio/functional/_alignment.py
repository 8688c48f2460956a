"""CTC forced alignment: ``forced_align`` (native Viterbi in emberaudio._C), ``merge_tokens`` and
the ``TokenSpan`` it returns."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import ember

from .. import _native

__all__ = ["TokenSpan", "forced_align", "merge_tokens"]


def _lengths_value(lengths: ember.Tensor | None, name: str, default: int) -> int:
    if lengths is None:
        return default
    if not isinstance(lengths, ember.Tensor):
        raise TypeError(f"{name} must be an ember.Tensor or None, got {type(lengths).__name__}")
    if lengths.dtype not in (ember.int32, ember.int64):
        raise RuntimeError(f"{name} must be int32 or int64 type, got {lengths.dtype}")
    if lengths.ndim != 1:
        raise RuntimeError(f"{name} must be 1-D, got shape {tuple(lengths.shape)}")
    if lengths.shape[0] != 1:
        raise RuntimeError(f"The batch dimension for {name} must be 1 at the current version.")
    return int(lengths.numpy()[0])


def forced_align(log_probs: ember.Tensor, targets: ember.Tensor, input_lengths: ember.Tensor | None = None,
                 target_lengths: ember.Tensor | None = None,
                 blank: int = 0) -> tuple[ember.Tensor, ember.Tensor]:
    """The most likely CTC alignment of ``targets`` to ``log_probs``, as
    ``torchaudio.functional.forced_align``.

    Args:
        log_probs: (1, T, C) float32/float64 log-probabilities (CPU).
        targets: (1, L) int32/int64 labels, without blank.
        input_lengths: (1,) valid frames (default: T); must equal T.
        target_lengths: (1,) valid labels (default: L); must equal L.
        blank: the blank class.

    Returns:
        (alignments (1, T) of targets' dtype: the label at each frame, blanks included;
        scores (1, T) of log_probs' dtype: each frame's log-probability of that label).
    """
    if not isinstance(log_probs, ember.Tensor) or not isinstance(targets, ember.Tensor):
        raise TypeError("log_probs and targets must be ember.Tensor")
    if log_probs.device.type != "cpu" or targets.device.type != "cpu":
        raise RuntimeError("log_probs and targets must be CPU tensors")
    if log_probs.dtype not in (ember.float32, ember.float64):
        raise RuntimeError(f"log_probs must be float32 or float64 type, got {log_probs.dtype}")
    if targets.dtype not in (ember.int32, ember.int64):
        raise RuntimeError(f"targets must be int32 or int64 type, got {targets.dtype}")
    if log_probs.ndim != 3:
        raise RuntimeError("log_probs must be 3-D (batch_size, input length, num classes)")
    if targets.ndim != 2:
        raise RuntimeError("targets must be 2-D (batch_size, target length,)")
    if log_probs.shape[0] != 1 or targets.shape[0] != 1:
        raise RuntimeError("The batch dimension for log_probs must be 1 at the current version.")
    num_frames, num_targets = log_probs.shape[1], targets.shape[1]
    if _lengths_value(input_lengths, "input_lengths", num_frames) != num_frames:
        raise RuntimeError("input length mismatch: input_lengths[0] must equal log_probs.shape[1]")
    if _lengths_value(target_lengths, "target_lengths", num_targets) != num_targets:
        raise RuntimeError("target length mismatch: target_lengths[0] must equal targets.shape[1]")
    lp = np.ascontiguousarray(log_probs.detach().numpy()[0])
    tg = np.ascontiguousarray(targets.numpy()[0], dtype=np.int64)
    if (tg == blank).any():
        raise ValueError(f"targets Tensor shouldn't contain blank index. Found {tg.tolist()}.")
    native = _native.load("_C")
    kernel = native.forced_align_f32 if lp.dtype == np.float32 else native.forced_align_f64
    path = kernel(lp, tg, int(blank))
    scores = lp[np.arange(num_frames), path]
    alignments = ember.from_numpy(path.astype(targets.numpy().dtype)[None])
    return alignments, ember.from_numpy(np.ascontiguousarray(scores)[None])


@dataclass
class TokenSpan:
    """A token's time span in an alignment: frames [start, end) and the mean score over them."""

    token: int
    start: int
    end: int
    score: float

    def __len__(self) -> int:
        return self.end - self.start


def merge_tokens(tokens: ember.Tensor, scores: ember.Tensor, blank: int = 0) -> list[TokenSpan]:
    """Groups an alignment's repeated labels into ``TokenSpan``s, dropping blanks, as
    ``torchaudio.functional.merge_tokens``.

    Args:
        tokens: (T,) frame labels (e.g. ``forced_align``'s alignments[0]).
        scores: (T,) frame scores; a span's score is their mean over the span.
        blank: the blank label.
    """
    if tokens.ndim != 1 or scores.ndim != 1:
        raise ValueError("`tokens` and `scores` must be 1D Tensor.")
    if len(tokens) != len(scores):
        raise ValueError("`tokens` and `scores` must be the same length.")
    tk = tokens.numpy().astype(np.int64)
    sc = scores.detach().numpy().astype(np.float64)
    # Span boundaries: every frame whose label differs from the previous one, and the end.
    bounds = np.flatnonzero(np.diff(tk, prepend=-1, append=-1) != 0).tolist()
    return [TokenSpan(token=int(tk[s]), start=s, end=e, score=float(sc[s:e].mean()))
            for s, e in zip(bounds[:-1], bounds[1:], strict=True) if tk[s] != blank]
