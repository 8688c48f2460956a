"""BERTTokenizer: torchtext's interface, BERT's rules, and agreement with a plain-Python
reference on generated text."""

from __future__ import annotations

import pickle

import _reference as ref
import pytest
from conftest import TINY_VOCAB
from hypothesis import given, settings
from hypothesis import strategies as st

from embertext.transforms import BERTTokenizer

IDS = {t: i for i, t in enumerate(TINY_VOCAB)}


def test_ids_are_ints_by_default(tiny_vocab_path):
    tok = BERTTokenizer(tiny_vocab_path)
    assert tok("Hello, World!") == [IDS["hello"], IDS[","], IDS["world"], IDS["!"]]


def test_str_ids_gives_torchtexts_strings(tiny_vocab_path):
    tok = BERTTokenizer(tiny_vocab_path, str_ids=True)
    assert tok("hello world") == [str(IDS["hello"]), str(IDS["world"])]
    assert tok(["hello", "world"]) == [[str(IDS["hello"])], [str(IDS["world"])]]


def test_return_tokens_and_batches(tiny_vocab_path):
    tok = BERTTokenizer(tiny_vocab_path, return_tokens=True)
    assert tok("Unaffable café!") == ["un", "##aff", "##able", "cafe", "!"]
    assert tok(["hello", "", "a bx"]) == [["hello"], [], ["a", "[UNK]"]]
    assert tok(("hello",)) == [["hello"]]


def test_wordpiece_rules(tiny_vocab_path):
    tok = BERTTokenizer(tiny_vocab_path, return_tokens=True)
    assert tok("abc") == ["a", "##b", "##c"]
    assert tok("abx") == ["[UNK]"]  # one unmatched rest makes the whole word unknown
    assert tok("a" + "b" * 99) == ["a"] + ["##b"] * 99  # 100 characters: still WordPieced
    assert tok("a" + "b" * 100) == ["[UNK]"]  # 101: over max_input_chars_per_word
    long_tok = BERTTokenizer(tiny_vocab_path, return_tokens=True, max_input_chars_per_word=3)
    assert long_tok("abc abcb") == ["a", "##b", "##c", "[UNK]"]


def test_basic_tokenizer_rules(tiny_vocab_path):
    tok = BERTTokenizer(tiny_vocab_path, return_tokens=True)
    assert tok("中文") == ["中", "文"]  # CJK ideographs are single-character words
    assert tok("Naïve") == ["naive"]  # NFD + mark removal when lower-casing
    assert tok("hel\x00lo\u200b \ufffd") == ["hello"]  # NUL, format chars and U+FFFD vanish
    assert tok("hello\u3000world\u00a0!") == ["hello", "world", "!"]  # Unicode whitespace splits
    assert tok("ΟΔΟΣ") == ["οδοσ"]  # lower-cased character by character: no final sigma


def test_case_and_accent_options(tiny_vocab_path):
    cased = BERTTokenizer(tiny_vocab_path, do_lower_case=False, return_tokens=True)
    assert cased("Hello hello") == ["[UNK]", "hello"]
    keep_accents = BERTTokenizer(tiny_vocab_path, strip_accents=False, return_tokens=True)
    assert keep_accents("café cafe") == ["[UNK]", "cafe"]
    strip_cased = BERTTokenizer(tiny_vocab_path, do_lower_case=False, strip_accents=True, return_tokens=True)
    assert strip_cased("cafe\u0301") == ["cafe"]
    # İ lower-cases to i + U+0307 when accents are kept, and to i when they are stripped.
    assert keep_accents("İ") == ["i", "##̇"]
    assert BERTTokenizer(tiny_vocab_path, return_tokens=True)("İ") == ["i"]


def test_never_split(tiny_vocab_path):
    tok = BERTTokenizer(tiny_vocab_path, never_split=["[CLS]", "[SEP]"], return_tokens=True)
    assert tok("[CLS] hello [SEP]") == ["[CLS]", "hello", "[SEP]"]
    assert tok("[CLS]hello") == ["[UNK]", "[UNK]", "[UNK]", "hello"]  # only whole words are kept
    plain = BERTTokenizer(tiny_vocab_path, return_tokens=True)
    assert plain("[CLS]") == ["[UNK]", "[UNK]", "[UNK]"]  # '[', 'cls', ']' without never_split


def test_bytes_input(tiny_vocab_path):
    tok = BERTTokenizer(tiny_vocab_path)
    assert tok("café".encode()) == tok("café")


def test_vocab_helpers(tiny_vocab_path):
    tok = BERTTokenizer(tiny_vocab_path)
    assert tok.vocab_size == len(TINY_VOCAB)
    assert tok.id_to_token(5) == "hello"
    assert tok.token_to_id("world") == 6
    assert tok.token_to_id("nope") is None
    with pytest.raises(ValueError, match=r"token ID 99 is outside the vocabulary \[0, 30\)"):
        tok.id_to_token(99)


def test_pickles_without_its_file(tiny_vocab_path):
    tok = BERTTokenizer(tiny_vocab_path, do_lower_case=False, never_split=["[CLS]"])
    data = pickle.dumps(tok)
    tiny_vocab_path.unlink()
    again = pickle.loads(data)
    assert again("[CLS] Hello hello") == tok("[CLS] Hello hello")


def test_threads_give_the_same_result(tiny_vocab_path):
    texts = [f"hello world {i} unaffable, café" * (i % 7) for i in range(500)]
    one = BERTTokenizer(tiny_vocab_path, num_threads=1)(texts)
    two = BERTTokenizer(tiny_vocab_path, num_threads=2)(texts)
    assert one == two
    assert one == [BERTTokenizer(tiny_vocab_path)(t) for t in texts]


def test_encode_batch_arrays(tiny_vocab_path):
    tok = BERTTokenizer(tiny_vocab_path)
    ids, offsets = tok.encode_batch_arrays(["hello world", "", "!"])
    assert ids.tolist() == [5, 6, 7]
    assert offsets.tolist() == [0, 2, 2, 3]


def test_minilm_vocab_against_reference(minilm_dir):
    vocab_path = minilm_dir / "vocab.txt"
    vocab = {t: i for i, t in enumerate(vocab_path.read_text(encoding="utf-8").splitlines())}
    tok = BERTTokenizer(vocab_path)
    lines = ref.mixed_corpus(seed=3, lines=300)
    assert tok(lines) == [ref.bert_encode(line, vocab) for line in lines]


# -- property test: the C++ pipeline equals the whole-string Python reference ------------------

_alphabet = st.characters(
    min_codepoint=0, max_codepoint=0x2FFFF, blacklist_categories=("Cs", "Cn"),
)
_texts = st.text(alphabet=st.one_of(_alphabet, st.sampled_from(list(" \t\n,.!'中É\u0301\u0323ǅİΣ"))), max_size=40)


@pytest.mark.skipif(not ref.SAME_UNICODE, reason="this Python's Unicode differs from the tables'")
@settings(max_examples=400, deadline=None)
@given(text=_texts, lower=st.booleans(), strip=st.sampled_from([None, True, False]))
def test_matches_reference_pipeline(tiny_vocab_path_session, text, lower, strip):
    path, vocab = tiny_vocab_path_session
    tok = BERTTokenizer(path, do_lower_case=lower, strip_accents=strip, return_tokens=True)
    words = ref.bert_words(text, lower=lower, strip=strip)
    expected = [TINY_VOCAB[i] for w in words for i in ref.wordpiece(w, vocab)]
    assert tok(text) == expected, (text, words)


@pytest.fixture(scope="module")
def tiny_vocab_path_session(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(TINY_VOCAB) + "\n", encoding="utf-8")
    return path, IDS


def test_unicode_table_is_what_the_generator_writes():
    """The committed table is the generator's output for its Unicode version."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "native" / "tools" / "gen_unicode_tables.py"
    done = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "up to date" in done.stdout or "not compared" in done.stdout
