"""Beam search for RNN-T models, as torchaudio.models.RNNTBeamSearch.

A ``Hypothesis`` is the tuple ``(tokens, predictor_out, state, score)``: the token ids (starting
with the blank that seeded the search), the predictor's output after the last token, the
predictor's state, and the log-probability of the hypothesis summed over the alignments the
search kept.

The search is the transducer beam search of Graves (2012) as torchaudio runs it. Per frame,
"A" hypotheses (still emitting in this frame) are extended: appending blank moves one into the
"B" set (done with this frame; equal token sequences merge by log-add-exp), appending a token
keeps it in A when it beats the ``beam_width``-th best B score. At most ``step_max_tokens``
tokens are emitted per frame; then B is cut to the ``beam_width`` best by ``hypo_sort_key``
(default: score / (tokens + 1)).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

import ember
from ember import nn

from .rnnt import RNNT

__all__ = ["Hypothesis", "RNNTBeamSearch"]

Hypothesis = tuple[list[int], ember.Tensor, list[list[ember.Tensor]], float]


def _tokens(h: Hypothesis) -> list[int]:
    return h[0]


def _score(h: Hypothesis) -> float:
    return h[3]


def _key(h: Hypothesis) -> tuple[int, ...]:
    return tuple(h[0])


def _default_hypo_sort_key(h: Hypothesis) -> float:
    return _score(h) / (len(_tokens(h)) + 1)


def _batch_state(hypos: Sequence[Hypothesis]) -> list[list[ember.Tensor]]:
    # Per layer, per component: concatenate the hypotheses' (1, ...) tensors along the batch.
    first = hypos[0][2]
    return [[ember.cat([h[2][i][j] for h in hypos]) for j in range(len(first[i]))]
            for i in range(len(first))]


def _slice_state(state: list[list[ember.Tensor]], i: int) -> list[list[ember.Tensor]]:
    return [[t[i:i + 1] for t in layer] for layer in state]


def _logaddexp(a: float, b: float) -> float:
    if a == -math.inf:
        return b
    if b == -math.inf:
        return a
    m = max(a, b)
    return m + math.log(math.exp(a - m) + math.exp(b - m))


class RNNTBeamSearch(nn.Module):
    r"""Beam search decoder for an :class:`RNNT` model.

    Args:
        model (RNNT): the model.
        blank (int): index of the blank token.
        temperature (float): divides the joint output before the log-softmax. (Default: 1.0)
        hypo_sort_key (callable or None): ranks hypotheses; None ranks by score divided by
            (number of tokens + 1). (Default: None)
        step_max_tokens (int): most tokens emitted per frame. (Default: 100)
    """

    def __init__(self, model: RNNT, blank: int, temperature: float = 1.0,
                 hypo_sort_key: Callable[[Hypothesis], float] | None = None,
                 step_max_tokens: int = 100) -> None:
        super().__init__()
        if temperature <= 0:
            raise ValueError(f"temperature must be positive, got {temperature}")
        if step_max_tokens < 1:
            raise ValueError(f"step_max_tokens must be at least 1, got {step_max_tokens}")
        self.model = model
        self.blank = blank
        self.temperature = temperature
        self.hypo_sort_key = _default_hypo_sort_key if hypo_sort_key is None else hypo_sort_key
        self.step_max_tokens = step_max_tokens

    def _initial_hypos(self, device) -> list[Hypothesis]:
        out, _, state = self.model.predict(ember.tensor([[self.blank]], device=device),
                                           ember.tensor([1], device=device), None)
        return [([self.blank], out[0].detach(), state, 0.0)]

    def _log_probs(self, enc_frame: ember.Tensor, hypos: list[Hypothesis]) -> np.ndarray:
        # (len(hypos), num_symbols) log-probabilities of the next symbol, as float64 NumPy.
        pred = ember.stack([h[1] for h in hypos], dim=0)
        n = len(hypos)
        joint, _, _ = self.model.join(enc_frame, ember.tensor([1], device=pred.device), pred,
                                      ember.tensor([1] * n, device=pred.device))
        logp = nn.functional.log_softmax(joint / self.temperature, dim=3)[:, 0, 0]
        return logp.detach().to(ember.float64).cpu().numpy()

    def _extend(self, bases: list[Hypothesis], tokens: list[int], scores: list[float],
                device) -> list[Hypothesis]:
        # One predictor step for all extended hypotheses at once.
        out, _, state = self.model.predict(ember.tensor([[t] for t in tokens], device=device),
                                           ember.tensor([1] * len(bases), device=device),
                                           _batch_state(bases))
        return [(_tokens(h) + [tokens[i]], out[i].detach(), _slice_state(state, i), scores[i])
                for i, h in enumerate(bases)]

    def _search(self, enc_out: ember.Tensor, hypos: list[Hypothesis] | None,
                beam_width: int) -> list[Hypothesis]:
        device = enc_out.device
        b_hypos = self._initial_hypos(device) if hypos is None else list(hypos)
        for t in range(enc_out.shape[1]):
            frame = enc_out[:, t:t + 1]
            a_hypos, b_hypos = b_hypos, []
            b_index: dict[tuple[int, ...], int] = {}
            emitted = 0
            while a_hypos:
                logp = self._log_probs(frame, a_hypos)
                blank_col = logp[:, self.blank]
                for i, h in enumerate(a_hypos):
                    score = _score(h) + float(blank_col[i])
                    k = _key(h)
                    if k in b_index:  # same tokens reached by another alignment: merge
                        j = b_index[k]
                        score = _logaddexp(_score(b_hypos[j]), score)
                        b_hypos[j] = (h[0], h[1], h[2], score)
                    else:
                        b_index[k] = len(b_hypos)
                        b_hypos.append((h[0], h[1], h[2], score))
                if emitted == self.step_max_tokens:
                    break
                # Best token extensions over all A hypotheses (blank excluded).
                scores = np.array([_score(h) for h in a_hypos])[:, None] + logp
                scores[:, self.blank] = -np.inf
                flat = scores.reshape(-1)
                k = min(beam_width, flat.size)
                best = np.argsort(-flat, kind="stable")[:k]
                b_scores = sorted(_score(h) for h in b_hypos)
                threshold = b_scores[-beam_width] if len(b_scores) >= beam_width else -math.inf
                chosen = [i for i in best if flat[i] > threshold and flat[i] > -math.inf]
                if not chosen:
                    break
                V = scores.shape[1]
                a_hypos = self._extend([a_hypos[i // V] for i in chosen], [int(i % V) for i in chosen],
                                       [float(flat[i]) for i in chosen], device)
                emitted += 1
            ranks = np.array([self.hypo_sort_key(h) for h in b_hypos])
            order = np.argsort(-ranks, kind="stable")[:beam_width]
            b_hypos = [b_hypos[i] for i in order]
        return b_hypos

    def _check(self, input: ember.Tensor, length: ember.Tensor, beam_width: int):
        if not isinstance(input, ember.Tensor) or not (
                input.dim() == 2 or (input.dim() == 3 and input.shape[0] == 1)):
            raise ValueError("input must be of shape (T, D) or (1, T, D)")
        if not isinstance(length, ember.Tensor) or tuple(length.shape) not in ((), (1,)):
            raise ValueError("length must be of shape () or (1,)")
        if not isinstance(beam_width, int) or beam_width < 1:
            raise ValueError(f"beam_width must be a positive int, got {beam_width!r}")
        if input.dim() == 2:
            input = input.unsqueeze(0)
        return input, length.reshape(1)

    def forward(self, input: ember.Tensor, length: ember.Tensor, beam_width: int) -> list[Hypothesis]:
        r"""Beam search over a whole utterance.

        Args:
            input (Tensor): (T, D) or (1, T, D) frames (followed by the right context).
            length (Tensor): () or (1,) valid frames.
            beam_width (int): beam size.

        Returns:
            List[Hypothesis]: the best ``beam_width`` hypotheses, best first.
        """
        input, length = self._check(input, length, beam_width)
        enc_out, _ = self.model.transcribe(input, length)
        return self._search(enc_out, None, beam_width)

    def infer(self, input: ember.Tensor, length: ember.Tensor, beam_width: int,
              state: list[list[ember.Tensor]] | None = None,
              hypothesis=None) -> tuple[list[Hypothesis], list[list[ember.Tensor]]]:
        r"""Beam search over one streaming chunk (segment plus right context).

        Args:
            input (Tensor): (T, D) or (1, T, D) frames of the chunk.
            length (Tensor): () or (1,) valid frames.
            beam_width (int): beam size.
            state (list of lists of Tensor or None): transcriber state from the previous call.
            hypothesis (list of Hypothesis, Hypothesis or None): the hypotheses returned by the
                previous call (the whole list continues the beam; a single hypothesis, as in
                torchaudio before 2.0, seeds it alone).

        Returns:
            (List[Hypothesis], List[List[Tensor]]): best hypotheses and the transcriber state.
        """
        input, length = self._check(input, length, beam_width)
        if hypothesis is not None:
            if isinstance(hypothesis, tuple):
                hypothesis = [hypothesis]
            if not isinstance(hypothesis, list) or not hypothesis or not all(
                    isinstance(h, tuple) and len(h) == 4 for h in hypothesis):
                raise TypeError("hypothesis must be a Hypothesis or a non-empty list of them")
        enc_out, _, state = self.model.transcribe_streaming(input, length, state)
        return self._search(enc_out, hypothesis, beam_width), state
