"""The CTC beam-search decoder against brute-force references: every frame labelling of a tiny
vocabulary over a few frames, scored with the decoder's formula (emissions + sil_score per silence
frame + lm_weight * LM + word_score per word), grouped into the hypotheses the decoder keeps apart
(one per LM history), best path per group."""

from __future__ import annotations

import inspect
import itertools
import math

import numpy as np
import pytest

import ember
from emberaudio.models.decoder import (
    CTCDecoder,
    CTCDecoderLM,
    CTCDecoderLMState,
    CTCHypothesis,
    ctc_decoder,
    ctc_greedy_decoder,
)

TOKENS = ["-", "|", "a", "b", "c"]
BLANK, SIL = 0, 1
LEXICON = [("a", "a |"), ("ab", "a b |"), ("ba", "b a |"), ("c", "c |"), ("cab", "c a b |"), ("bb", "b b |")]
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


def _arpa_table(text):
    """n-gram tuple -> (log10 prob, log10 backoff), read from ARPA text."""
    table, order = {}, 0
    for line in text.splitlines():
        if line.startswith("\\") and line.endswith("-grams:"):
            order = int(line[1])
        elif order and line.strip() and not line.startswith("\\"):
            fields = line.split("\t")
            table[tuple(fields[1].split())] = (float(fields[0]), float(fields[2]) if len(fields) > 2 else 0.0)
    return table


def _arpa_sentence_score(table, words, order=3):
    """log10 P(words </s> | <s>) with back-off; words missing from the model score as <unk>."""
    vocab = {k[0] for k in table if len(k) == 1}
    seq = ["<s>"] + [w if w in vocab else "<unk>" for w in words] + ["</s>"]
    total = 0.0
    for i in range(1, len(seq)):
        context = tuple(seq[max(0, i - order + 1): i])
        penalty = 0.0
        while (*context, seq[i]) not in table:
            penalty += table.get(context, (0.0, 0.0))[1]
            context = context[1:]
        total += table[(*context, seq[i])][0] + penalty
    return total


def _groups(path):
    """The new tokens of a frame labelling: CTC's reading after the search's initial silence step
    (silence frames right after it repeat it, so they are not new)."""
    full = [k for k, _ in itertools.groupby([SIL, *path])]
    return tuple(k for k in full[1:] if k != BLANK)


def _reported(path):
    """The tokens and timesteps a hypothesis with this best path reports."""
    full = [SIL, *path, SIL]
    tokens = [k for k, _ in itertools.groupby(full) if k != BLANK]
    steps = [i for i, k in enumerate(full) if k != BLANK and (i == 0 or k != full[i - 1])]
    return tokens, steps


def _brute_force(emissions, key_and_extra, sil_score=0.0, log_add=False):
    """{key: (score, best path)} over all labellings; key_and_extra(path) -> (key, extra score) or
    None when the labelling is not a hypothesis."""
    T, N = emissions.shape
    best, total = {}, {}
    for path in itertools.product(range(N), repeat=T):
        ke = key_and_extra(path)
        if ke is None:
            continue
        key, extra = ke
        score = float(sum(float(emissions[t, k]) for t, k in enumerate(path))) + sil_score * path.count(SIL) + extra
        if key not in best or score > best[key][0]:
            best[key] = (score, path)
        total[key] = np.logaddexp(total.get(key, -np.inf), score)
    if log_add:
        return {k: (total[k], best[k][1]) for k in best}
    return best


def _emissions(rng, T, scale=2.0):
    return (rng.standard_normal((T, len(TOKENS))) * scale).astype(np.float32)


def _decode(decoder, em):
    return decoder(ember.from_numpy(np.ascontiguousarray(em[None])))[0]


@pytest.fixture
def lexicon_file(tmp_path):
    path = tmp_path / "lexicon.txt"
    path.write_text("".join(f"{w} {s}\n" for w, s in LEXICON))
    return str(path)


@pytest.fixture
def arpa_file(tmp_path):
    path = tmp_path / "lm.arpa"
    path.write_text(ARPA)
    return str(path)


@pytest.mark.parametrize("T", [0, 1, 3, 5])
@pytest.mark.parametrize("log_add", [False, True])
@pytest.mark.parametrize("sil_score", [0.0, -0.7])
def test_lexicon_free_without_lm(T, log_add, sil_score):
    rng = np.random.default_rng(T * 10 + int(log_add))
    em = _emissions(rng, T)
    ref = _brute_force(em, lambda p: (_groups(p), 0.0), sil_score, log_add)
    decoder = ctc_decoder(None, TOKENS, nbest=1000, beam_size=1000, beam_threshold=1e9, sil_score=sil_score,
                          log_add=log_add)
    hyps = _decode(decoder, em)
    ranked = sorted(ref.items(), key=lambda kv: -kv[1][0])
    assert len(hyps) == len(ranked)
    np.testing.assert_allclose([h.score for h in hyps], [s for _, (s, _) in ranked], rtol=1e-5, atol=1e-5)
    assert all(isinstance(h, CTCHypothesis) and h.words == [] for h in hyps)
    if not log_add:  # with log-add the reported path is the best one of each merge, not a global argmax
        tokens, steps = _reported(ranked[0][1][1])
        assert hyps[0].tokens.tolist() == tokens and hyps[0].timesteps.tolist() == steps
        assert hyps[0].tokens.dtype == ember.int64 and hyps[0].timesteps.dtype == ember.int32


def _lexicon_key(path, lexicon, lm_score_of, word_score, lm_weight):
    """The words a labelling spells (None unless it is whole lexicon words separated by silence),
    and their LM and word scores."""
    spelled = "".join(TOKENS[k] for k in _groups(path))
    if spelled and not spelled.endswith("|"):
        return None  # ends inside a word
    spellings = {s.replace(" ", ""): w for w, s in lexicon}
    words = []
    for chunk in spelled.split("|")[:-1]:
        if chunk == "":
            continue  # silence between words
        if chunk + "|" not in spellings:
            return None
        words.append(spellings[chunk + "|"])
    return tuple(words), lm_weight * lm_score_of(words) + word_score * len(words)


@pytest.mark.parametrize("seed", range(4))
def test_lexicon_with_arpa_lm(seed, lexicon_file, arpa_file):
    rng = np.random.default_rng(seed)
    em = _emissions(rng, 6)
    table = _arpa_table(ARPA)
    lm_weight, word_score = [(2.0, 0.0), (0.5, -1.0), (1.0, 1.5), (3.0, 0.3)][seed]
    ref = _brute_force(em, lambda p: _lexicon_key(p, LEXICON, lambda w: _arpa_sentence_score(table, w),
                                                  word_score, lm_weight))
    decoder = ctc_decoder(lexicon_file, TOKENS, lm=arpa_file, nbest=1000, beam_size=1000, beam_threshold=1e9,
                          lm_weight=lm_weight, word_score=word_score)
    hyps = _decode(decoder, em)
    ranked = sorted(ref.items(), key=lambda kv: -kv[1][0])
    assert len(ranked) > 5
    assert [tuple(h.words) for h in hyps] == [k for k, _ in ranked]
    np.testing.assert_allclose([h.score for h in hyps], [s for _, (s, _) in ranked], rtol=1e-5, atol=1e-4)
    tokens, steps = _reported(ranked[0][1][1])
    assert hyps[0].tokens.tolist() == tokens and hyps[0].timesteps.tolist() == steps
    assert decoder.idxs_to_tokens(hyps[0].tokens) == [TOKENS[k] for k in tokens]


class _BigramLM(CTCDecoderLM):
    """A table-driven bigram model over word (or token) indices; -1 is the sentence start."""

    def __init__(self, table):
        self.table = table
        self.last = {}

    def start(self, start_with_nothing):
        state = CTCDecoderLMState()
        self.last[state] = -1
        return state

    def score(self, state, usr_token_idx):
        child = state.child(usr_token_idx)
        self.last[child] = usr_token_idx
        return child, self.table[(self.last[state], usr_token_idx)]

    def finish(self, state):
        return self.score(state, len(TOKENS))


def _bigram_total(table, seq, end):
    prev, total = -1, 0.0
    for w in [*seq, end]:
        total += table[(prev, w)]
        prev = w
    return total


@pytest.mark.parametrize("seed", range(3))
def test_lexicon_free_with_python_lm(seed):
    rng = np.random.default_rng(100 + seed)
    em = _emissions(rng, 5)
    table = {(p, w): float(rng.uniform(-3, 0)) for p in range(-1, len(TOKENS) + 1) for w in range(len(TOKENS) + 1)}
    lm_weight = [2.0, 0.5, 1.0][seed]
    ref = _brute_force(em, lambda p: (_groups(p), lm_weight * _bigram_total(table, _groups(p), len(TOKENS))))
    decoder = ctc_decoder(None, TOKENS, lm=_BigramLM(table), nbest=5, beam_size=1000, beam_threshold=1e9,
                          lm_weight=lm_weight)
    hyps = _decode(decoder, em)
    ranked = sorted(ref.items(), key=lambda kv: -kv[1][0])[:5]
    assert len(hyps) == 5  # nbest
    np.testing.assert_allclose([h.score for h in hyps], [s for _, (s, _) in ranked], rtol=1e-5, atol=1e-5)
    assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
    for h, (_, (_, path)) in zip(hyps, ranked, strict=True):
        assert h.tokens.tolist() == _reported(path)[0]


def test_lexicon_with_python_lm_scores_words(lexicon_file):
    rng = np.random.default_rng(7)
    em = _emissions(rng, 6)
    words = [w for w, _ in LEXICON]
    table = {(p, w): float(rng.uniform(-2, 0)) for p in range(-1, len(TOKENS) + 1)
             for w in [*range(len(words) + 1), len(TOKENS)]}
    ref = _brute_force(em, lambda p: _lexicon_key(
        p, LEXICON, lambda ws: _bigram_total(table, [words.index(w) for w in ws], len(TOKENS)), 0.0, 1.0))
    decoder = ctc_decoder(lexicon_file, TOKENS, lm=_BigramLM(table), nbest=3, beam_size=1000,
                          beam_threshold=1e9, lm_weight=1.0)
    hyps = _decode(decoder, em)
    ranked = sorted(ref.items(), key=lambda kv: -kv[1][0])[:3]
    assert [tuple(h.words) for h in hyps] == [k for k, _ in ranked]
    np.testing.assert_allclose([h.score for h in hyps], [s for _, (s, _) in ranked], rtol=1e-5, atol=1e-4)


def test_arpa_scores_match_kenlm(arpa_file, lexicon_file):
    kenlm = pytest.importorskip("kenlm")
    from emberaudio import _native
    from emberaudio.models.decoder._ctc_decoder import _KenLMBinary

    words = [w for w, _ in LEXICON] + ["zz", "<unk>"]
    native = _native.load("_C").ArpaLM(arpa_file, words)
    model = kenlm.Model(arpa_file)
    for n in range(4):
        for seq in itertools.product(range(len(words)), repeat=n):
            state, ref = kenlm.State(), []
            model.BeginSentenceWrite(state)
            for w in [words[i] for i in seq] + ["</s>"]:
                out = kenlm.State()
                ref.append(model.BaseScore(state, w, out))
                state = out
            np.testing.assert_allclose(native.score_words(list(seq)), ref, atol=1e-6)
    # The same search scored through the kenlm package (the path binary models take).
    em = _emissions(np.random.default_rng(3), 6)
    a = _decode(ctc_decoder(lexicon_file, TOKENS, lm=arpa_file, nbest=4), em)
    b = _decode(ctc_decoder(lexicon_file, TOKENS, lm=_KenLMBinary(arpa_file, [w for w, _ in LEXICON] + ["<unk>"]),
                            nbest=4), em)
    assert [h.words for h in a] == [h.words for h in b]
    np.testing.assert_allclose([h.score for h in a], [h.score for h in b], rtol=1e-6)


def test_batch_lengths_threads_and_streaming(lexicon_file, arpa_file):
    rng = np.random.default_rng(11)
    em = (rng.standard_normal((5, 7, len(TOKENS))) * 2).astype(np.float32)
    lengths = [7, 3, 0, 5, 6]
    decoder = ctc_decoder(lexicon_file, TOKENS, lm=arpa_file, nbest=3, beam_size=8)
    batch = decoder(ember.from_numpy(em), ember.tensor(lengths))
    for b, n in enumerate(lengths):
        single = _decode(decoder, em[b, :n])
        assert [(h.tokens.tolist(), h.words, h.score, h.timesteps.tolist()) for h in batch[b]] == \
               [(h.tokens.tolist(), h.words, h.score, h.timesteps.tolist()) for h in single]
    decoder.decode_begin()
    for chunk in (em[0, :2], em[0, 2:3], em[0, 3:]):
        decoder.decode_step(ember.from_numpy(np.ascontiguousarray(chunk)))
    decoder.decode_end()
    streamed = decoder.get_final_hypothesis()
    assert [(h.words, h.score) for h in streamed] == [(h.words, h.score) for h in batch[0]]
    # No frames: the search's start and end silence only.
    assert batch[2][0].tokens.tolist() == [SIL] and batch[2][0].timesteps.tolist() == [0]


def test_non_contiguous_emissions_and_token_file(tmp_path):
    rng = np.random.default_rng(12)
    em = _emissions(rng, 4)
    (tmp_path / "tokens.txt").write_text("\n".join(TOKENS) + "\n")
    decoder = ctc_decoder(None, str(tmp_path / "tokens.txt"), nbest=3)
    view = ember.from_numpy(np.ascontiguousarray(em.T[None])).transpose(1, 2)
    assert not view.is_contiguous()
    got, ref = decoder(view)[0], _decode(decoder, em)
    assert [(h.tokens.tolist(), h.score) for h in got] == [(h.tokens.tolist(), h.score) for h in ref]


def test_beam_size_token_and_threshold_prune():
    rng = np.random.default_rng(13)
    em = _emissions(rng, 5)
    full = _decode(ctc_decoder(None, TOKENS, nbest=1000, beam_size=1000, beam_threshold=1e9), em)
    narrow = _decode(ctc_decoder(None, TOKENS, nbest=1000, beam_size=1000, beam_threshold=1e9,
                                 beam_size_token=2), em)
    # With two tokens per frame, only each frame's two best classes can appear.
    top2 = np.argsort(-em, axis=1)[:, :2]
    for h in narrow:
        assert set(h.tokens.tolist()) <= set(top2.ravel().tolist()) | {SIL}
    assert len(narrow) < len(full)
    tight = _decode(ctc_decoder(None, TOKENS, nbest=1000, beam_size=3, beam_threshold=1e9), em)
    assert len(tight) <= 3 and tight[0].score <= full[0].score + 1e-9
    assert tight[0].score == pytest.approx(full[0].score, abs=1e-5) or len(tight) == 3


def test_word_and_unk_scores_shift_the_result(lexicon_file):
    rng = np.random.default_rng(14)
    em = _emissions(rng, 6)
    base = _decode(ctc_decoder(lexicon_file, TOKENS, nbest=1), em)[0]
    shifted = _decode(ctc_decoder(lexicon_file, TOKENS, nbest=1, word_score=1.5), em)[0]
    assert shifted.score >= base.score + 1.5 * len(base.words) - 1e-5
    # A finite unk_score lets prefixes outside the lexicon end as <unk>.
    em_unk = np.full((3, len(TOKENS)), -10.0, dtype=np.float32)
    em_unk[0, TOKENS.index("c")] = em_unk[1, TOKENS.index("a")] = em_unk[2, SIL] = 0.0  # spells "c a |"
    no_unk = _decode(ctc_decoder(lexicon_file, TOKENS), em_unk)[0]
    with_unk = _decode(ctc_decoder(lexicon_file, TOKENS, unk_score=-1.0), em_unk)[0]
    assert "<unk>" not in no_unk.words and with_unk.words == ["<unk>"]


def test_greedy_decoder():
    rng = np.random.default_rng(15)
    em = rng.standard_normal((3, 6, 4)).astype(np.float32)
    em[0, 1] = em[0, 0]  # a repeated argmax
    out = ctc_greedy_decoder(ember.from_numpy(em), ember.tensor([6, 4, 0]), blank=0)
    for b, n in enumerate([6, 4, 0]):
        best = em[b, :n].argmax(-1).tolist()
        ref = [k for i, k in enumerate(best) if (i == 0 or k != best[i - 1]) and k != 0]
        assert out[b].tolist() == ref and out[b].dtype == ember.int64
    with pytest.raises(ValueError, match="emissions must be 3-D"):
        ctc_greedy_decoder(ember.from_numpy(em[0]))
    with pytest.raises(ValueError, match="lengths must hold 3 values"):
        ctc_greedy_decoder(ember.from_numpy(em), ember.tensor([7, 1, 1]))


def test_errors(tmp_path, lexicon_file):
    decoder = ctc_decoder(None, TOKENS)
    assert isinstance(decoder, CTCDecoder)
    em = ember.zeros(1, 3, len(TOKENS))
    with pytest.raises(ValueError, match="emissions must be float32"):
        decoder(em.to(ember.float64))
    with pytest.raises(RuntimeError, match="emissions must be 3D"):
        decoder(em[0])
    with pytest.raises(ValueError, match="emissions have 4 classes, but the decoder has 5 tokens"):
        decoder(ember.zeros(1, 3, 4))
    with pytest.raises(ValueError, match=r"lengths\[0\] = 4 is outside \[0, 3\]"):
        decoder(em, ember.tensor([4]))
    with pytest.raises(RuntimeError, match="emissions must be 2D"):
        decoder.decode_step(em)
    with pytest.raises(RuntimeError, match="decode_step called before decode_begin"):
        ctc_decoder(None, TOKENS).decode_step(em[0])
    bad = tmp_path / "bad_lexicon.txt"
    bad.write_text("hello h e l l o |\n")
    with pytest.raises(ValueError, match=r"lexicon word 'hello' is spelled with unknown tokens \['h', 'e', 'l', 'l', 'o'\]"):
        ctc_decoder(str(bad), TOKENS)
    with pytest.raises(ValueError, match="blank_token '_' is not in the tokens"):
        ctc_decoder(None, TOKENS, blank_token="_")
    with pytest.raises(TypeError, match="lm must be None, a file path or a CTCDecoderLM"):
        ctc_decoder(None, TOKENS, lm=3)
    with pytest.raises(FileNotFoundError, match="language model file not found"):
        ctc_decoder(lexicon_file, TOKENS, lm=str(tmp_path / "missing.arpa"))
    broken = tmp_path / "broken.arpa"
    broken.write_text("\\data\\\nngram 1=1\n\n\\1-grams:\n-1.0\ta\n\\end\\\n")
    with pytest.raises(ValueError, match="lacks <s> or </s>"):
        ctc_decoder(lexicon_file, TOKENS, lm=str(broken))
    with pytest.raises(ValueError, match="nbest must be positive"):
        ctc_decoder(None, TOKENS, nbest=0)

    class NoTuple(CTCDecoderLM):
        def start(self, start_with_nothing):
            return CTCDecoderLMState()

        def score(self, state, idx):
            return 0.0

        def finish(self, state):
            return state, 0.0

    with pytest.raises(TypeError, match=r"CTCDecoderLM.score must return a \(state, score\) tuple"):
        ctc_decoder(None, TOKENS, lm=NoTuple())(ember.zeros(1, 2, len(TOKENS)))
    with pytest.raises(NotImplementedError, match="must implement start"):
        ctc_decoder(None, TOKENS, lm=CTCDecoderLM())(ember.zeros(1, 2, len(TOKENS)))


def test_lm_state_children():
    state = CTCDecoderLMState()
    child = state.child(3)
    assert state.child(3) is child and state.children == {3: child}
    assert state.compare(state) == 0 and state.compare(child) in (-1, 1)


def test_factory_signature_is_torchaudios():
    params = inspect.signature(ctc_decoder).parameters
    assert list(params) == ["lexicon", "tokens", "lm", "lm_dict", "nbest", "beam_size", "beam_size_token",
                            "beam_threshold", "lm_weight", "word_score", "unk_score", "sil_score", "log_add",
                            "blank_token", "sil_token", "unk_word"]
    defaults = {k: p.default for k, p in params.items() if p.default is not inspect.Parameter.empty}
    assert defaults == {"lm": None, "lm_dict": None, "nbest": 1, "beam_size": 50, "beam_size_token": None,
                        "beam_threshold": 50, "lm_weight": 2, "word_score": 0, "unk_score": -math.inf,
                        "sil_score": 0, "log_add": False, "blank_token": "-", "sil_token": "|",
                        "unk_word": "<unk>"}


TOKEN_ARPA = """\\data\\
ngram 1=6
ngram 2=3

\\1-grams:
-99\t<s>\t-0.3
-0.8\t</s>\t0
-0.5\t|\t-0.2
-0.6\ta\t-0.1
-0.9\tb\t-0.25
-1.3\tc\t0

\\2-grams:
-0.2\t<s> a
-0.3\ta b
-0.4\tb |

\\end\\
"""


def test_lexicon_free_with_arpa_over_tokens(tmp_path):
    # Without a lexicon, a KenLM model scores tokens as words ("-" is outside it: <unk>, absent here).
    path = tmp_path / "tokens.arpa"
    path.write_text(TOKEN_ARPA)
    table = _arpa_table(TOKEN_ARPA)
    rng = np.random.default_rng(21)
    em = _emissions(rng, 5)
    ref = _brute_force(em, lambda p: (_groups(p), 0.5 * _arpa_sentence_score(
        table, [TOKENS[k] for k in _groups(p)], order=2)))
    hyps = _decode(ctc_decoder(None, TOKENS, lm=str(path), lm_weight=0.5, nbest=4, beam_size=1000,
                               beam_threshold=1e9), em)
    ranked = sorted(ref.items(), key=lambda kv: -kv[1][0])[:4]
    np.testing.assert_allclose([h.score for h in hyps], [s for _, (s, _) in ranked], rtol=1e-5, atol=1e-4)
    assert hyps[0].tokens.tolist() == _reported(ranked[0][1][1])[0]


def test_lm_dict_only_renumbers_words(tmp_path, lexicon_file, arpa_file):
    words = tmp_path / "words.txt"
    words.write_text("\n".join(["zz", *reversed([w for w, _ in LEXICON]), "<unk>"]) + "\n")
    em = _emissions(np.random.default_rng(22), 6)
    plain = _decode(ctc_decoder(lexicon_file, TOKENS, lm=arpa_file, nbest=3), em)
    renumbered = _decode(ctc_decoder(lexicon_file, TOKENS, lm=arpa_file, lm_dict=str(words), nbest=3), em)
    assert [(h.words, h.score) for h in plain] == [(h.words, h.score) for h in renumbered]
    words.write_text("a\n")
    with pytest.raises(ValueError, match="lexicon words missing from lm_dict"):
        ctc_decoder(lexicon_file, TOKENS, lm=arpa_file, lm_dict=str(words))


def test_concurrent_calls_and_python_lm_batches(lexicon_file, arpa_file):
    import threading

    rng = np.random.default_rng(23)
    em = (rng.standard_normal((4, 6, len(TOKENS))) * 2).astype(np.float32)
    decoder = ctc_decoder(lexicon_file, TOKENS, lm=arpa_file, nbest=2)
    expected = [[(h.words, h.score) for h in hyps] for hyps in decoder(ember.from_numpy(em))]
    outputs = [None] * 4

    def work(i):  # the native search releases the GIL, so these calls overlap
        outputs[i] = [[(h.words, h.score) for h in hyps] for hyps in decoder(ember.from_numpy(em))]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outputs == [expected] * 4
    # A Python LM decodes batch items one after another, under the GIL.
    table = {(p, w): float(rng.uniform(-2, 0)) for p in range(-1, len(TOKENS) + 1) for w in range(len(TOKENS) + 1)}
    py_decoder = ctc_decoder(None, TOKENS, lm=_BigramLM(table), nbest=2)
    batch = py_decoder(ember.from_numpy(em))
    for b in range(4):
        assert [(h.tokens.tolist(), h.score) for h in batch[b]] == \
               [(h.tokens.tolist(), h.score) for h in _decode(py_decoder, em[b])]
    assert py_decoder(ember.zeros(0, 3, len(TOKENS))) == []
