"""Parity with Hugging Face `tokenizers` (a peer, never a dependency): the same IDs for the same
files on a generated mixed corpus. Skipped when `tokenizers` is not installed; `nox -s
parity-text` installs it (and the MiniLM files) and runs this file."""

from __future__ import annotations

import os

import _reference as ref
import pytest

tokenizers = pytest.importorskip("tokenizers", reason="Hugging Face tokenizers is not installed")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from embertext.transforms import BERTTokenizer, GPT2BPETokenizer  # noqa: E402

SPECIALS = ["[CLS]", "[SEP]", "[MASK]", "[PAD]"]


def _corpus() -> list[str]:
    lines = ref.mixed_corpus(seed=2024, lines=3000)
    # Special tokens as whole words (both sides keep them whole), and a few bare edge cases.
    lines += [f"{s} hello {s}" for s in SPECIALS] + ["", " ", "\n\n", "\u3000", "a" * 300, "İİ ǅ ΣΑΣ"]
    return lines


def _hf_minilm(minilm_dir):
    hf = tokenizers.Tokenizer.from_file(str(minilm_dir / "tokenizer.json"))
    hf.no_truncation()  # the file pads and truncates to 128 for the model; compare whole texts
    hf.no_padding()
    return hf


def test_wordpiece_matches_hf_on_minilm_vocab(minilm_dir):
    hf = _hf_minilm(minilm_dir)
    ours = BERTTokenizer(minilm_dir / "vocab.txt", never_split=SPECIALS)
    lines = _corpus()
    expected = [e.ids for e in hf.encode_batch(lines, add_special_tokens=False)]
    got = ours(lines)
    mismatches = [(line, g, e) for line, g, e in zip(lines, got, expected, strict=True) if g != e]
    assert not mismatches, f"{len(mismatches)} of {len(lines)} lines differ; first: {mismatches[0]!r}"
    assert sum(map(len, got)) > 50_000  # the corpus is not trivially small
    for line in lines[:200]:
        assert ours(line) == hf.encode(line, add_special_tokens=False).ids


def test_wordpiece_tokens_match_hf(minilm_dir):
    hf = _hf_minilm(minilm_dir)
    ours = BERTTokenizer(minilm_dir / "vocab.txt", return_tokens=True)
    for line in ref.mixed_corpus(seed=99, lines=300):
        assert ours(line) == hf.encode(line, add_special_tokens=False).tokens


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("strip", [None, True, False])
def test_wordpiece_options_match_hf(minilm_dir, lower, strip):
    from tokenizers import models, normalizers, pre_tokenizers

    hf = tokenizers.Tokenizer(models.WordPiece.from_file(str(minilm_dir / "vocab.txt"), unk_token="[UNK]"))
    hf.normalizer = normalizers.BertNormalizer(lowercase=lower, strip_accents=strip)
    hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    ours = BERTTokenizer(minilm_dir / "vocab.txt", do_lower_case=lower, strip_accents=strip)
    lines = ref.mixed_corpus(seed=7 + lower + 2 * (strip or 0), lines=500)
    assert ours(lines) == [e.ids for e in hf.encode_batch(lines, add_special_tokens=False)]


def _hf_gpt2(enc, bpe):
    from tokenizers import decoders, models, pre_tokenizers

    hf = tokenizers.Tokenizer(models.BPE.from_file(str(enc), str(bpe)))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    hf.add_special_tokens(["<|endoftext|>"])
    return hf


def test_gpt2_bpe_matches_hf(gpt2_files):
    enc, bpe, *_ = gpt2_files
    hf = _hf_gpt2(enc, bpe)
    ours = GPT2BPETokenizer(enc, bpe)
    ours.add_special_tokens({"eos_token": "<|endoftext|>"})
    lines = _corpus() + ["hello<|endoftext|>world", "<|endoftext|> <|endoftext|>", "x  <|endoftext|>\n"]
    expected = [e.ids for e in hf.encode_batch(lines, add_special_tokens=False)]
    got = ours(lines)
    mismatches = [(line, g, e) for line, g, e in zip(lines, got, expected, strict=True) if g != e]
    assert not mismatches, f"{len(mismatches)} of {len(lines)} lines differ; first: {mismatches[0]!r}"
    for line in lines[:300]:
        assert ours.decode(ours(line)) == hf.decode(hf.encode(line).ids, skip_special_tokens=False)


def test_gpt2_bpe_tokens_match_hf(gpt2_files):
    enc, bpe, *_ = gpt2_files
    hf = _hf_gpt2(enc, bpe)
    ours = GPT2BPETokenizer(enc, bpe, return_tokens=True)
    for line in ref.mixed_corpus(seed=123, lines=300):
        assert ours(line) == hf.encode(line, add_special_tokens=False).tokens
