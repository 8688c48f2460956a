"""docs/examples/audio_streaming_asr.py runs end to end (espeak-ng speech, a tiny Emformer RNN-T
streamed through StreamReader and RNNTBeamSearch.infer, a letter CTC model with the lexicon and
bigram-LM beam search) and learns; and its ARPA writer makes a normalized back-off model that
KenLM scores as the counts say."""

from __future__ import annotations

import collections
import importlib.util
import math
import shutil
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "examples" / "audio_streaming_asr.py"
needs_example = pytest.mark.skipif(not EXAMPLE.exists(),
                                   reason="the repository's docs/examples are not beside these tests")


def load_example():
    spec = importlib.util.spec_from_file_location("audio_streaming_asr", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SENTENCES = [["one", "two"], ["two", "three", "two"], ["go"], ["stop", "go"], ["one", "one", "two"], ["no"]]


def bigram_reference(sentences, discount, unk_mass):
    """log10 p(b | a) from the counts, straight from the definition (interpolated absolute
    discounting over maximum-likelihood unigrams)."""
    uni, bi = collections.Counter(), collections.Counter()
    for s in sentences:
        padded = ["<s>", *s, "</s>"]
        uni.update(padded[1:])
        bi.update(zip(padded, padded[1:], strict=False))
    total = sum(uni.values())
    p1 = {w: (1 - unk_mass) * c / total for w, c in uni.items()}
    p1["<unk>"] = unk_mass

    def prob(a, b):
        successors = {y: c for (x, y), c in bi.items() if x == a}
        if not successors:
            return p1[b]
        n = sum(successors.values())
        return max(successors.get(b, 0) - discount, 0) / n + discount * len(successors) / n * p1[b]

    return prob, sorted(p1)


@needs_example
def test_arpa_writer_is_normalized_and_kenlm_agrees(tmp_path):
    kenlm = pytest.importorskip("kenlm")
    example = load_example()
    path = tmp_path / "bigram.arpa"
    example.write_bigram_arpa(SENTENCES, path, discount=0.5, unk_mass=0.01)
    model = kenlm.Model(str(path))
    assert model.order == 2
    prob, predicted = bigram_reference(SENTENCES, 0.5, 0.01)  # every word but <s>
    contexts = ["<s>", "<unk>", "one", "two", "three", "go", "stop", "no"]
    for a in contexts:
        state = kenlm.State()
        if a == "<s>":
            model.BeginSentenceWrite(state)
        else:
            model.BaseScore(kenlm.State(), a, state)  # from the null context: the state holds a
        out = kenlm.State()
        probs = {b: 10 ** model.BaseScore(state, b, out) for b in predicted}
        assert math.isclose(sum(probs.values()), 1.0, abs_tol=1e-5), (a, sum(probs.values()))
        for b in predicted:
            assert math.isclose(probs[b], prob(a, b), rel_tol=1e-5), (a, b, probs[b], prob(a, b))
    # A whole sentence's score is the chain of bigrams.
    expected = sum(math.log10(prob(a, b)) for a, b in zip(["<s>", "two", "two"], ["two", "two", "</s>"], strict=True))
    assert math.isclose(model.score("two two", bos=True, eos=True), expected, rel_tol=1e-5)


@needs_example
@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="the example synthesizes its speech with espeak-ng")
def test_streaming_asr_example_learns(capsys):
    example = load_example()
    result = example.main(["--train", "160", "--test", "20", "--epochs", "14", "--ctc-epochs", "7", "--show", "2"])
    out = capsys.readouterr().out
    with capsys.disabled():
        print(result)
    assert out.count("partial:") >= 2 and "streaming 0000.wav" in out
    # The frames made from the stream as it arrives are those of the whole utterance.
    assert result["feature_mismatch"] < 1e-3
    # These small settings (half the data, fewer epochs) gave WERs of 0.49 (RNN-T, streamed),
    # 0.71 (CTC greedy) and 0.18 (CTC beam + LM); guessing words scores about 1.
    assert result["rnnt_streaming_wer"] < 0.7
    assert result["ctc_beam_wer"] < 0.4
    assert result["ctc_beam_wer"] <= result["ctc_greedy_wer"]
