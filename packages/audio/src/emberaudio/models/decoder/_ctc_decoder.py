"""The CTC beam-search decoder (``ctc_decoder``, ``CTCDecoder``, ``CTCHypothesis``), custom language
models (``CTCDecoderLM``, ``CTCDecoderLMState``) and ``ctc_greedy_decoder``.

The search runs in emberaudio._C (see csrc/C/ctc_decoder.cpp). ARPA language models are parsed
and scored natively (no GIL, batch items in parallel); binary KenLM models are scored through the
``kenlm`` Python package, as a Python LM. LM scores are log10 probabilities, as KenLM gives them.
"""

from __future__ import annotations

import itertools
import os
from typing import NamedTuple

import numpy as np

import ember

from ... import _native

__all__ = ["CTCDecoder", "CTCDecoderLM", "CTCDecoderLMState", "CTCHypothesis", "ctc_decoder",
           "ctc_greedy_decoder"]


class CTCHypothesis(NamedTuple):
    """One decoding result.

    tokens: token indices (repeats collapsed, blanks dropped; with the silence token the search
    starts and ends on). words: the words, with a lexicon (else empty). score: the total score.
    timesteps: the step at which each token starts; step 0 is the search's start, so frame f is
    step f + 1 (as torchaudio's).
    """

    tokens: ember.Tensor
    words: list[str]
    score: float
    timesteps: ember.Tensor


class CTCDecoderLMState:
    """A state of a custom language model. ``child(i)`` returns the same state object for the same
    index every time: the decoder merges hypotheses whose LM states are the same object."""

    def __init__(self) -> None:
        self._children: dict[int, CTCDecoderLMState] = {}

    @property
    def children(self) -> dict[int, CTCDecoderLMState]:
        """The child states made so far, by index."""
        return self._children

    def child(self, usr_index: int) -> CTCDecoderLMState:
        """The child state for ``usr_index``, made (of this state's class) on first use."""
        state = self._children.get(usr_index)
        if state is None:
            state = self._children[usr_index] = type(self)()
        return state

    def compare(self, other_state: CTCDecoderLMState) -> int:
        """0 for the same state, else -1 or 1 (an order by identity)."""
        if self is other_state:
            return 0
        return -1 if id(self) < id(other_state) else 1


class CTCDecoderLM:
    """Base class of custom language models: override ``start``, ``score`` and ``finish``.
    Word indices are the decoder's (lexicon order; token indices without a lexicon)."""

    def start(self, start_with_nothing: bool) -> CTCDecoderLMState:
        raise NotImplementedError("CTCDecoderLM subclasses must implement start(start_with_nothing)")

    def score(self, state: CTCDecoderLMState, usr_token_idx: int) -> tuple[CTCDecoderLMState, float]:
        raise NotImplementedError("CTCDecoderLM subclasses must implement score(state, usr_token_idx)")

    def finish(self, state: CTCDecoderLMState) -> tuple[CTCDecoderLMState, float]:
        raise NotImplementedError("CTCDecoderLM subclasses must implement finish(state)")


class _KenLMState(CTCDecoderLMState):
    __slots__ = ("ken", "scores")


class _KenLMBinary(CTCDecoderLM):
    """A KenLM model file (binary or ARPA) scored through the ``kenlm`` Python package."""

    def __init__(self, path: str, words: list[str]):
        try:
            import kenlm
        except ImportError as error:
            raise ImportError(f"the language model {path} is not an ARPA file; scoring a binary KenLM model "
                              f"needs the kenlm package: pip install 'emberaudio[kenlm]'") from error
        self._kenlm = kenlm
        self._model = kenlm.Model(path)
        self._words = words

    def start(self, start_with_nothing: bool) -> CTCDecoderLMState:
        state = _KenLMState()
        state.ken, state.scores = self._kenlm.State(), {}
        if start_with_nothing:
            self._model.NullContextWrite(state.ken)
        else:
            self._model.BeginSentenceWrite(state.ken)
        return state

    def _advance(self, state, key: int, word: str):
        child = state.child(key)
        if key not in state.scores:
            child.ken, child.scores = self._kenlm.State(), {}
            state.scores[key] = self._model.BaseScore(state.ken, word, child.ken)
        return child, state.scores[key]

    def score(self, state, usr_token_idx: int):
        return self._advance(state, usr_token_idx, self._words[usr_token_idx])

    def finish(self, state):
        return self._advance(state, -1, "</s>")


class _Dictionary:
    """Entries and their indices (the decoder's tokens or words)."""

    def __init__(self, entries: list[str]):
        self._entries = list(entries)
        self._index = {}
        for i, e in enumerate(self._entries):
            self._index.setdefault(e, i)

    def get_entry(self, idx: int) -> str:
        return self._entries[idx]

    def get_index(self, entry: str) -> int:
        if entry not in self._index:
            raise ValueError(f"unknown entry {entry!r}")
        return self._index[entry]

    def index_size(self) -> int:
        return len(self._entries)

    def __contains__(self, entry: str) -> bool:
        return entry in self._index


def _read_lines(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


def _load_lexicon(path: str) -> dict[str, list[list[str]]]:
    """word -> spellings, from lines ``word t o k |`` (file order kept)."""
    lexicon: dict[str, list[list[str]]] = {}
    for n, line in enumerate(_read_lines(path), 1):
        fields = line.split()
        if len(fields) < 2:
            raise ValueError(f"lexicon {path}, line {n}: expected a word and its spelling, got {line!r}")
        lexicon.setdefault(fields[0], []).append(fields[1:])
    return lexicon


def _is_arpa(path: str) -> bool:
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                return line.strip() == b"\\data\\"
    return False


class CTCDecoder:
    """The CTC beam-search decoder built by :func:`ctc_decoder`; call it on (B, T, N) emissions."""

    def __init__(self, nbest: int, lexicon: dict | None, word_dict: _Dictionary | None, tokens_dict: _Dictionary,
                 lm, options, blank_token: str, sil_token: str, unk_word: str):
        native = _native.load("_C")
        self.nbest = nbest
        self.word_dict = word_dict
        self.tokens_dict = tokens_dict
        for name, tok in (("blank_token", blank_token), ("sil_token", sil_token)):
            if tok not in tokens_dict:
                raise ValueError(f"{name} {tok!r} is not in the tokens")
        self.blank = tokens_dict.get_index(blank_token)
        self.silence = tokens_dict.get_index(sil_token)
        spellings = None
        unk = -1
        if lexicon is not None:
            unk = word_dict.get_index(unk_word)
            spellings = []
            for word, spells in lexicon.items():
                for spelling in spells:
                    unknown = [t for t in spelling if t not in tokens_dict]
                    if unknown:
                        raise ValueError(f"lexicon word {word!r} is spelled with unknown tokens {unknown}")
                    spellings.append((word_dict.get_index(word), [tokens_dict.get_index(t) for t in spelling]))
        if isinstance(lm, CTCDecoderLM):
            self._lm_object = lm  # kept alive with the decoder
            native_lm = native.PythonLM(lm)
        else:
            native_lm = lm
        self._native_lm = native_lm
        self._decoder = native.CTCBeamDecoder(options, native_lm, spellings, self.silence, self.blank, unk,
                                              tokens_dict.index_size())

    def _check(self, emissions: ember.Tensor, ndim: int) -> np.ndarray:
        if not isinstance(emissions, ember.Tensor):
            raise TypeError(f"emissions must be an ember.Tensor, got {type(emissions).__name__}")
        if emissions.dtype != ember.float32:
            raise ValueError("emissions must be float32.")
        if emissions.device.type != "cpu":
            raise RuntimeError("emissions must be a CPU tensor.")
        if emissions.ndim != ndim:
            raise RuntimeError(f"emissions must be {ndim}D. Found {tuple(emissions.shape)}")
        return np.ascontiguousarray(emissions.detach().numpy())

    def __call__(self, emissions: ember.Tensor, lengths: ember.Tensor | None = None) -> list[list[CTCHypothesis]]:
        """Decodes (B, T, N) float32 CPU emissions (log-probabilities or scores); ``lengths`` (B,)
        gives each item's valid frames. Returns, per item, up to ``nbest`` hypotheses, best first."""
        em = self._check(emissions, 3)
        B, T, _ = em.shape
        if lengths is None:
            lens = np.full(B, T, dtype=np.int64)
        else:
            if not isinstance(lengths, ember.Tensor):
                raise TypeError(f"lengths must be an ember.Tensor or None, got {type(lengths).__name__}")
            if lengths.device.type != "cpu":
                raise RuntimeError("lengths must be a CPU tensor.")
            if lengths.dtype not in (ember.int32, ember.int64):
                raise ValueError(f"lengths must be an integer tensor, got {lengths.dtype}")
            lens = np.ascontiguousarray(lengths.numpy(), dtype=np.int64)
        results = self._decoder.decode(em, lens)
        return [self._to_hypo(r[: self.nbest]) for r in results]

    def decode_begin(self) -> None:
        """Starts a streaming decode."""
        self._decoder.decode_begin()

    def decode_step(self, emissions: ember.Tensor) -> None:
        """Adds (T, N) float32 frames to the streaming decode."""
        self._decoder.decode_step(self._check(emissions, 2))

    def decode_end(self) -> None:
        """Finishes the streaming decode (scores sentence end)."""
        self._decoder.decode_end()

    def get_final_hypothesis(self) -> list[CTCHypothesis]:
        """The streaming decode's best ``nbest`` hypotheses."""
        return self._to_hypo(self._decoder.final_hypotheses()[: self.nbest])

    def idxs_to_tokens(self, idxs: ember.Tensor) -> list[str]:
        """Token strings of token indices."""
        return [self.tokens_dict.get_entry(int(i)) for i in np.asarray(idxs.numpy()).reshape(-1)]

    def _to_hypo(self, results) -> list[CTCHypothesis]:
        out = []
        for score, path, words in results:
            path = path.tolist()
            # One token per group of equal steps, blanks dropped; a token's timestep is where its
            # group starts.
            tokens = [k for k, _ in itertools.groupby(path) if k != self.blank]
            steps = [i for i, k in enumerate(path) if k != self.blank and (i == 0 or k != path[i - 1])]
            out.append(CTCHypothesis(
                tokens=ember.tensor(tokens, dtype=ember.int64),
                words=[self.word_dict.get_entry(w) for w in words.tolist() if w >= 0] if self.word_dict else [],
                score=float(score),
                timesteps=ember.tensor(steps, dtype=ember.int32)))
        return out


def ctc_decoder(lexicon: str | None, tokens: str | list[str], lm: str | CTCDecoderLM | None = None,
                lm_dict: str | None = None, nbest: int = 1, beam_size: int = 50, beam_size_token: int | None = None,
                beam_threshold: float = 50, lm_weight: float = 2, word_score: float = 0,
                unk_score: float = float("-inf"), sil_score: float = 0, log_add: bool = False,
                blank_token: str = "-", sil_token: str = "|", unk_word: str = "<unk>") -> CTCDecoder:
    """Builds a CTC beam-search decoder, as ``torchaudio.models.decoder.ctc_decoder``.

    Args:
        lexicon: a lexicon file (lines ``word t o k |``) to constrain the search to its words, or
            None for lexicon-free decoding.
        tokens: a file with one token per line, or the list of tokens (index = emission class).
        lm: None, a KenLM model file (ARPA, scored natively; or binary, through ``kenlm``), or a
            ``CTCDecoderLM``.
        lm_dict: a file of the LM's words, one per line (default: the lexicon's words; lexicon-free
            with a KenLM file: the tokens).
        nbest: hypotheses returned per item. beam_size: hypotheses kept per frame.
        beam_size_token: tokens tried per frame (default: all). beam_threshold: hypotheses scoring
            below the frame's best minus this are dropped.
        lm_weight, word_score, unk_score, sil_score: the score is the emissions' sum + lm_weight *
            LM score + word_score per word + unk_score per unknown word + sil_score per silence step.
        log_add: merge equal hypotheses by log-add instead of max.
        blank_token, sil_token, unk_word: the blank and silence tokens and the unknown word.
    """
    if nbest < 1:
        raise ValueError(f"nbest must be positive, got {nbest}")
    if beam_size < 1:
        raise ValueError(f"beam_size must be positive, got {beam_size}")
    if beam_size_token is not None and beam_size_token < 1:
        raise ValueError(f"beam_size_token must be positive, got {beam_size_token}")
    token_list = _read_lines(tokens) if isinstance(tokens, (str, os.PathLike)) else [str(t) for t in tokens]
    if not token_list:
        raise ValueError("tokens is empty")
    tokens_dict = _Dictionary(token_list)
    lexicon_map = _load_lexicon(os.fspath(lexicon)) if lexicon is not None else None

    word_dict = None
    if lm_dict is not None:
        word_dict = _Dictionary(_read_lines(lm_dict))
    elif lexicon_map is not None:
        word_dict = _Dictionary(list(lexicon_map))
    elif isinstance(lm, (str, os.PathLike)):
        word_dict = _Dictionary(token_list)  # lexicon-free: the LM scores tokens as words
    if lexicon_map is not None:
        missing = [w for w in lexicon_map if w not in word_dict]
        if missing:
            raise ValueError(f"lexicon words missing from lm_dict: {missing[:5]}")
        if unk_word not in word_dict:
            word_dict = _Dictionary([*word_dict._entries, unk_word])

    native = _native.load("_C")
    if isinstance(lm, (str, os.PathLike)):
        path = os.fspath(lm)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"language model file not found: {path}")
        words = word_dict._entries
        lm = native.ArpaLM(path, words) if _is_arpa(path) else _KenLMBinary(path, words)
    elif lm is None:
        lm = native.ZeroLM()
    elif not isinstance(lm, CTCDecoderLM):
        raise TypeError(f"lm must be None, a file path or a CTCDecoderLM, got {type(lm).__name__}")

    options = native.CTCDecoderOptions()
    options.beam_size = beam_size
    options.beam_size_token = beam_size_token if beam_size_token is not None else len(token_list)
    options.beam_threshold = beam_threshold
    options.lm_weight = lm_weight
    options.word_score = word_score
    options.unk_score = unk_score
    options.sil_score = sil_score
    options.log_add = log_add
    return CTCDecoder(nbest, lexicon_map, word_dict if lexicon_map is not None else None, tokens_dict, lm,
                      options, blank_token, sil_token, unk_word)


def ctc_greedy_decoder(emissions: ember.Tensor, lengths: ember.Tensor | None = None,
                       blank: int = 0) -> list[ember.Tensor]:
    """Best-path decoding: per item, the argmax class of each frame, repeats collapsed and blanks
    dropped (int64 token indices)."""
    if not isinstance(emissions, ember.Tensor):
        raise TypeError(f"emissions must be an ember.Tensor, got {type(emissions).__name__}")
    if emissions.ndim != 3:
        raise ValueError(f"emissions must be 3-D (batch, frames, classes), got shape {tuple(emissions.shape)}")
    em = emissions.detach().numpy()
    B, T, N = em.shape
    if not 0 <= blank < max(N, 1):
        raise ValueError(f"blank must be within [0, {N})")
    lens = np.full(B, T) if lengths is None else np.asarray(lengths.numpy()).reshape(-1)
    if lens.shape[0] != B or (lens < 0).any() or (lens > T).any():
        raise ValueError(f"lengths must hold {B} values within [0, {T}]")
    out = []
    for b in range(B):
        best = em[b, : int(lens[b])].argmax(-1) if N else np.zeros(0, dtype=np.int64)
        out.append(ember.tensor([k for k, _ in itertools.groupby(best.tolist()) if k != blank], dtype=ember.int64))
    return out


