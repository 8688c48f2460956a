"""Parity with flashlight-text's decoders (which torchaudio's ctc_decoder wraps) on random
emissions: the same hypotheses, words and scores. Runs where flashlight-text is installed."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ember
from emberaudio.models.decoder import CTCDecoderLM, CTCDecoderLMState, ctc_decoder

fl = pytest.importorskip("flashlight.lib.text.decoder")

TOKENS = ["-", "|", "a", "b", "c"]
N = len(TOKENS)
LEXICON = [("a", "a |"), ("ab", "a b |"), ("ba", "b a |"), ("c", "c |"), ("cab", "c a b |"), ("bb", "b b |"),
           ("ab", "a b b |")]
WORDS = list(dict.fromkeys(w for w, _ in LEXICON)) + ["<unk>"]


def _bigram(base):
    class Bigram(base):
        def __init__(self, table, state_type):
            base.__init__(self)
            self.table, self.state_type, self.last = table, state_type, {}

        def start(self, start_with_nothing):
            state = self.state_type()
            self.last[state] = -1
            return state

        def score(self, state, idx):
            child = state.child(idx)
            self.last[child] = idx
            return child, self.table[(self.last[state], idx)]

        def finish(self, state):
            return self.score(state, -2)

    return Bigram


def _summary(results, words=None):
    out = []
    for score, tokens, ws in results:
        out.append((round(score, 3), tuple(k for k, _ in itertools.groupby(tokens) if k != 0),
                    tuple(words[w] for w in ws if w >= 0) if words else ()))
    return out


def _fl_results(decoder, em):
    em = np.ascontiguousarray(em, dtype=np.float32)
    return [(r.score, list(r.tokens), list(r.words)) for r in decoder.decode(em.ctypes.data, em.shape[0], N)]


def _ours(decoder, em):
    hyps = decoder(ember.from_numpy(np.ascontiguousarray(em[None], dtype=np.float32)))[0]
    return [(round(h.score, 3), tuple(h.tokens.tolist()), tuple(h.words)) for h in hyps]


def _compare(theirs, ours):
    assert [x[0] for x in theirs] == pytest.approx([x[0] for x in ours], abs=2e-3)
    if theirs:
        assert theirs[0][1:] == ours[0][1:]


@pytest.mark.parametrize("seed", range(40))
def test_lexicon_free(seed):
    rng = np.random.default_rng(seed)
    em = rng.standard_normal((int(rng.integers(0, 7)), N)).astype(np.float32)
    beam, thr = int(rng.integers(1, 20)), float(rng.choice([1, 5, 50]))
    log_add, sil = bool(rng.integers(2)), float(rng.choice([0, -0.5, 1]))
    use_lm = seed % 2 == 1
    table = {(p, w): float(rng.uniform(-3, 0)) for p in range(-2, N) for w in range(-2, N)}
    opts = fl.LexiconFreeDecoderOptions(beam_size=beam, beam_size_token=N, beam_threshold=thr, lm_weight=1.5,
                                        sil_score=sil, log_add=log_add, criterion_type=fl.CriterionType.CTC)
    fl_lm = _bigram(fl.LM)(table, fl.LMState) if use_lm else fl.ZeroLM()
    theirs = _summary(_fl_results(fl.LexiconFreeDecoder(opts, fl_lm, 1, 0, []), em))
    ours = _ours(ctc_decoder(None, TOKENS, lm=_bigram(CTCDecoderLM)(table, CTCDecoderLMState) if use_lm else None,
                             nbest=1000, beam_size=beam, beam_threshold=thr, lm_weight=1.5, sil_score=sil,
                             log_add=log_add), em)
    _compare(theirs, ours)


@pytest.mark.parametrize("seed", range(60))
def test_lexicon(seed, tmp_path):
    rng = np.random.default_rng(seed)
    (tmp_path / "lexicon.txt").write_text("".join(f"{w} {s}\n" for w, s in LEXICON))
    em = (rng.standard_normal((int(rng.integers(0, 8)), N)) * 2).astype(np.float32)
    beam, thr, log_add = int(rng.integers(1, 30)), float(rng.choice([2, 10, 50])), bool(rng.integers(2))
    sil, ws = float(rng.choice([0, -0.5, 1])), float(rng.choice([0, -1, 1.5]))
    unk, lmw = float(rng.choice([-np.inf, -2.0])), float(rng.choice([0, 0.5, 2]))
    use_lm = seed % 2 == 1
    table = {(p, w): float(rng.uniform(-3, 0)) for p in range(-2, len(WORDS)) for w in range(-2, len(WORDS))}
    fl_lm = _bigram(fl.LM)(table, fl.LMState) if use_lm else fl.ZeroLM()
    trie = fl.Trie(N, 1)
    start = fl_lm.start(False)
    for w, s in LEXICON:
        trie.insert([TOKENS.index(t) for t in s.split()], WORDS.index(w), fl_lm.score(start, WORDS.index(w))[1])
    trie.smear(fl.SmearingMode.MAX)
    opts = fl.LexiconDecoderOptions(beam_size=beam, beam_size_token=N, beam_threshold=thr, lm_weight=lmw,
                                    word_score=ws, unk_score=unk, sil_score=sil, log_add=log_add,
                                    criterion_type=fl.CriterionType.CTC)
    decoder = fl.LexiconDecoder(opts, trie, fl_lm, 1, 0, WORDS.index("<unk>"), [], False)
    theirs = _summary(_fl_results(decoder, em), WORDS)
    ours = _ours(ctc_decoder(str(tmp_path / "lexicon.txt"), TOKENS,
                             lm=_bigram(CTCDecoderLM)(table, CTCDecoderLMState) if use_lm else None, nbest=1000,
                             beam_size=beam, beam_threshold=thr, lm_weight=lmw, word_score=ws, unk_score=unk,
                             sil_score=sil, log_add=log_add), em)
    _compare(theirs, ours)


ARPA = """\\data\\
ngram 1=7
ngram 2=6
ngram 3=2

\\1-grams:
-1.2\t<unk>\t0
-99\t<s>\t-0.5
-0.9\t</s>\t0
-0.7\ta\t-0.3
-0.8\tab\t-0.2
-1.1\tc\t-0.4
-1.0\tba\t-0.1

\\2-grams:
-0.3\t<s> a\t-0.2
-0.4\ta ab\t-0.1
-0.5\tab </s>
-0.6\tc a
-0.2\t<s> c\t-0.05
-0.45\tab c

\\3-grams:
-0.1\t<s> a ab
-0.15\ta ab c

\\end\\
"""


@pytest.mark.parametrize("seed", range(30))
def test_lexicon_with_kenlm(seed, tmp_path):
    # flashlight scores the ARPA file with KenLM; emberaudio parses and scores it natively.
    kenlm_module = pytest.importorskip("flashlight.lib.text.decoder.kenlm")
    from flashlight.lib.text.dictionary import Dictionary

    rng = np.random.default_rng(1000 + seed)
    (tmp_path / "lexicon.txt").write_text("".join(f"{w} {s}\n" for w, s in LEXICON))
    (tmp_path / "lm.arpa").write_text(ARPA)
    word_dict = Dictionary()
    for w in WORDS:
        word_dict.add_entry(w)
    fl_lm = kenlm_module.KenLM(str(tmp_path / "lm.arpa"), word_dict)
    trie = fl.Trie(N, 1)
    start = fl_lm.start(False)
    for w, s in LEXICON:
        trie.insert([TOKENS.index(t) for t in s.split()], WORDS.index(w), fl_lm.score(start, WORDS.index(w))[1])
    trie.smear(fl.SmearingMode.MAX)
    em = (rng.standard_normal((int(rng.integers(1, 9)), N)) * 2).astype(np.float32)
    beam, lmw, ws = int(rng.integers(1, 30)), float(rng.choice([0.5, 2])), float(rng.choice([0, -1, 1.5]))
    unk, log_add = float(rng.choice([-np.inf, -2.0])), bool(rng.integers(2))
    opts = fl.LexiconDecoderOptions(beam_size=beam, beam_size_token=N, beam_threshold=25, lm_weight=lmw,
                                    word_score=ws, unk_score=unk, sil_score=0, log_add=log_add,
                                    criterion_type=fl.CriterionType.CTC)
    decoder = fl.LexiconDecoder(opts, trie, fl_lm, 1, 0, WORDS.index("<unk>"), [], False)
    theirs = _summary(_fl_results(decoder, em), WORDS)
    ours = _ours(ctc_decoder(str(tmp_path / "lexicon.txt"), TOKENS, lm=str(tmp_path / "lm.arpa"), nbest=1000,
                             beam_size=beam, beam_threshold=25, lm_weight=lmw, word_score=ws, unk_score=unk,
                             log_add=log_add), em)
    _compare(theirs, ours)
