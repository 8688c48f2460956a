"""GPT2BPETokenizer and CLIPTokenizer against the plain-Python references, with files trained in
the test."""

from __future__ import annotations

import json
import pickle

import _reference as ref
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from embertext import _C
from embertext.transforms import CLIPTokenizer, GPT2BPETokenizer


def test_gpt2_matches_reference_on_mixed_text(gpt2_files):
    enc, bpe, encoder, merges = gpt2_files
    tok = GPT2BPETokenizer(enc, bpe)
    lines = ref.mixed_corpus(seed=21, lines=300)
    assert tok(lines) == [ref.gpt2_encode(line, encoder, merges) for line in lines]


def test_gpt2_torchtext_interface(gpt2_files):
    enc, bpe, encoder, merges = gpt2_files
    ids = GPT2BPETokenizer(enc, bpe)("hello world")
    assert all(isinstance(i, int) for i in ids)
    assert GPT2BPETokenizer(enc, bpe, str_ids=True)("hello world") == [str(i) for i in ids]
    tokens = GPT2BPETokenizer(enc, bpe, return_tokens=True)("hello world")
    assert [encoder[t] for t in tokens] == ids
    assert "".join(tokens) == "helloĠworld"  # byte symbols: the space is "Ġ", part of " world"


@pytest.mark.parametrize(
    "text",
    ["", " ", "   ", "a  b", "a \n b", "it's", "IT'S", "'s", "x''s", "  hello", "hello  ", "\t\tx", "1,234.5",
     "über-cool!!", "中文 한국어", "😀😀 😀", "a\u00a0b", " \u3000x", "'ll've'", "e\u0301", "\u0085x"],
)
def test_gpt2_pretokenizer_edge_cases(gpt2_files, text):
    enc, bpe, encoder, merges = gpt2_files
    assert GPT2BPETokenizer(enc, bpe)(text) == ref.gpt2_encode(text, encoder, merges)


def test_gpt2_decode_round_trips(gpt2_files):
    enc, bpe, *_ = gpt2_files
    tok = GPT2BPETokenizer(enc, bpe)
    for line in ref.mixed_corpus(seed=5, lines=50):
        assert tok.decode(tok(line)) == line
    assert tok.decode([str(i) for i in tok("hello")]) == "hello"  # TorchText's string IDs
    with pytest.raises(ValueError, match="token ID 999999 is not in the vocabulary"):
        tok.decode([999999])


def test_gpt2_special_tokens(gpt2_files):
    enc, bpe, encoder, merges = gpt2_files
    tok = GPT2BPETokenizer(enc, bpe)
    assert tok.add_special_tokens({"eos_token": "<|endoftext|>"}) == 0  # already in encoder.json
    assert tok.add_special_tokens({"additional_special_tokens": ["<pad>", "[SEP]"]}) == 2
    text = "hello<|endoftext|> world<pad>[SEP]"
    assert tok(text) == ref.gpt2_encode(text, {**encoder, "<pad>": len(encoder), "[SEP]": len(encoder) + 1},
                                        merges, specials=("<|endoftext|>", "<pad>", "[SEP]"))
    assert tok.decode(tok(text)) == text
    with pytest.raises(ValueError, match="Key 'foo_token' is not in the special token list"):
        tok.add_special_tokens({"foo_token": "x"})
    with pytest.raises(ValueError, match="special tokens must be non-empty strings"):
        tok.add_special_tokens({"additional_special_tokens": [""]})
    again = pickle.loads(pickle.dumps(tok))  # special tokens survive pickling
    assert again(text) == tok(text)


def test_gpt2_long_words_use_the_same_merges(gpt2_files):
    enc, bpe, encoder, merges = gpt2_files
    tok = GPT2BPETokenizer(enc, bpe)
    for text in ["the" * 200, "9" * 1000, "ab" * 5000, " quick" * 100]:
        assert tok(text) == ref.gpt2_encode(text, encoder, merges)


def test_merge_order_on_handmade_merges(tmp_path):
    # Lowest rank first, leftmost among equals; a merge's result can merge again.
    symbols = ref.BYTE_CHARS
    encoder = {symbols[b]: b for b in range(256)}
    merges = [("a", "a"), ("aa", "a"), ("b", "aa")]
    for a, b in merges:
        encoder[a + b] = len(encoder)
    (tmp_path / "e.json").write_text(json.dumps(encoder))
    (tmp_path / "m.bpe").write_text("".join(f"{a} {b}\n" for a, b in merges))
    tok = GPT2BPETokenizer(tmp_path / "e.json", tmp_path / "m.bpe", return_tokens=True)
    assert tok("aaa") == ["aaa"]  # (a a) at 0, then (aa a)
    assert tok("aaaa") == ["aa", "aa"]  # (a a) at 0, (a a) at 2; no (aa aa) merge
    assert tok("baaa") == ["b", "aaa"]  # (aa a) ranks before (b aa)
    assert tok("baa") == ["baa"]


_merge_alphabet = st.sampled_from(list("abc"))


@settings(max_examples=200, deadline=None)
@given(
    merges=st.lists(st.tuples(st.text(_merge_alphabet, min_size=1, max_size=3),
                              st.text(_merge_alphabet, min_size=1, max_size=3)), max_size=12, unique=True),
    word=st.text(_merge_alphabet, max_size=150),
)
def test_short_and_long_merge_paths_agree(tmp_path_factory, merges, word):
    """Words over 64 symbols take the heap; both paths apply lowest rank, leftmost first."""
    encoder = {ref.BYTE_CHARS[b]: b for b in range(256)}
    usable = []
    for a, b in merges:  # keep merges whose parts exist, as a trained file would
        if a in encoder and b in encoder:
            encoder.setdefault(a + b, len(encoder))
            usable.append((a, b))
    native = _C.GPT2BPETokenizer(list(encoder.items()), usable)
    expected = _one_at_a_time(list(word), {m: r for r, m in enumerate(usable)})
    assert native.tokenize(word) == expected
    for chunk in (word[:64], word[:65]):
        assert native.tokenize(chunk) == _one_at_a_time(list(chunk), {m: r for r, m in enumerate(usable)})


def _one_at_a_time(word: list[str], ranks: dict) -> list[str]:
    """Hugging Face's rule, written plainly: merge the lowest-ranked pair, leftmost, once."""
    while True:
        best = None
        for i in range(len(word) - 1):
            r = ranks.get((word[i], word[i + 1]))
            if r is not None and (best is None or r < best[0]):
                best = (r, i)
        if best is None:
            return word
        i = best[1]
        word[i : i + 2] = [word[i] + word[i + 1]]


def test_clip_matches_reference(clip_merges):
    path, merges = clip_merges
    tok = CLIPTokenizer(path)
    encoder = {tok.id_to_token(i): i for i in range(tok.vocab_size)}
    lines = ref.mixed_corpus(seed=9, lines=200) + ["<|startoftext|>A photo of a CAT<|endoftext|>", "It'S", ""]
    assert tok(lines) == [ref.clip_encode(line, encoder, merges) for line in lines]


def test_clip_vocab_layout_and_num_merges(clip_merges):
    path, merges = clip_merges
    tok = CLIPTokenizer(path, return_tokens=True)
    assert tok.vocab_size == 512 + len(merges) + 2
    assert tok.id_to_token(0) == "!" and tok.id_to_token(256) == "!</w>"
    assert tok.token_to_id("<|endoftext|>") == tok.vocab_size - 1
    few = CLIPTokenizer(path, num_merges=10, return_tokens=True)
    assert few.vocab_size == 512 + 10 + 2
    assert all(len(t.replace("</w>", "")) <= 4 for t in few("a photo of the cat"))


def test_clip_with_encoder_json(clip_merges, tmp_path):
    path, merges = clip_merges
    built = CLIPTokenizer(path)
    encoder = {built.id_to_token(i): i for i in range(built.vocab_size)}
    (tmp_path / "enc.json").write_text(json.dumps(encoder))
    from_json = CLIPTokenizer(path, encoder_json_path=tmp_path / "enc.json")
    text = "A photo of a cat, 2 dogs!"
    assert from_json(text) == built(text)
    assert CLIPTokenizer(path, str_ids=True)(text) == [str(i) for i in built(text)]
    assert built.decode(built(text)).strip() == "a photo of a cat , 2 dogs !"
