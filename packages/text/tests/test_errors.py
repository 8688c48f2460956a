"""Bad input gives a clear Python exception, never a crash: invalid UTF-8, malformed vocab,
encoder and merges files, wrong argument types. The fuzz tests feed random bytes."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from embertext import _C
from embertext.transforms import BERTTokenizer, CLIPTokenizer, GPT2BPETokenizer


@pytest.fixture
def bert(tiny_vocab_path):
    return BERTTokenizer(tiny_vocab_path)


@pytest.fixture
def gpt2(gpt2_files):
    enc, bpe, *_ = gpt2_files
    return GPT2BPETokenizer(enc, bpe)


# -- text input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "start", "reason"),
    [
        (b"ok \xff", 3, "invalid start byte"),
        (b"\x80abc", 0, "unexpected continuation byte"),
        (b"ab\xe4\xb8", 2, "unexpected end of data"),
        (b"\xc0\xaf", 0, "overlong encoding"),
        (b"x\xed\xa0\x80", 1, "encoded surrogate"),
        (b"\xf4\x90\x80\x80", 0, "code point above U+10FFFF"),
        (b"\xe4x\xad", 0, "invalid continuation byte"),
    ],
)
@pytest.mark.parametrize("kind", ["bert", "gpt2"])
def test_invalid_utf8_raises_unicode_decode_error(request, kind, data, start, reason):
    tok = request.getfixturevalue(kind)
    with pytest.raises(UnicodeDecodeError) as info:
        tok(data)
    assert info.value.encoding == "utf-8"
    assert info.value.start == start
    assert info.value.reason == reason
    assert info.value.object == data
    with pytest.raises(UnicodeDecodeError, match=re.escape(reason)):
        tok(["fine", data])  # in a batch too, reported with the bad text itself


def test_lone_surrogates_in_str_raise_unicode_encode_error(bert, gpt2):
    for tok in (bert, gpt2):
        with pytest.raises(UnicodeEncodeError, match="surrogates not allowed"):
            tok("abc\ud800")
        with pytest.raises(UnicodeEncodeError, match="surrogates not allowed"):
            tok(["ok", "\udfff"])


@pytest.mark.parametrize("bad", [3, None, 1.5, {"a": 1}, object()])
def test_wrong_input_types(bert, bad):
    with pytest.raises(TypeError, match="BERTTokenizer expects a str or a list of str"):
        bert(bad)


def test_wrong_item_types_in_a_batch(bert):
    with pytest.raises(TypeError, match="expected str or bytes, but got int"):
        bert(["ok", 3])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=64))
def test_fuzz_random_bytes(bert, gpt2, data):
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as expected:
        for tok in (bert, gpt2):
            with pytest.raises(UnicodeDecodeError) as info:
                tok(data)
            assert info.value.start == expected.start  # the first bad byte, as Python's codec says
        return
    for tok in (bert, gpt2):
        assert tok(data) == tok(text)


# -- vocab.txt ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "has no tokens"),
        (b"\n\n", "has no tokens"),
        (b"[UNK]\n\nhello\n", "line 2 is empty: every line must hold one token"),
        (b"[UNK]\nhel\xfflo\n", "line 2 is not valid UTF-8"),
        (b"hello\nworld\n", "the vocabulary has no unknown token '[UNK]'"),
        (b"[UNK]\nhello\nhello\n", "token 'hello' appears twice (IDs 1 and 2)"),
    ],
)
def test_malformed_vocab_files(tmp_path, content, message):
    path = tmp_path / "vocab.txt"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=re.escape(message)) as info:
        BERTTokenizer(path)
    assert str(path) in str(info.value)


def test_vocab_file_details(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"\xef\xbb\xbf[UNK]\r\nhello  \r\nworld\n\n\n")  # BOM, CRLF, trailing blanks: fine
    tok = BERTTokenizer(path, return_tokens=True)
    assert tok.vocab_size == 3
    assert tok("hello world") == ["hello", "world"]


def test_missing_files_and_urls(tmp_path, gpt2_files):
    enc, bpe, *_ = gpt2_files
    with pytest.raises(FileNotFoundError):
        BERTTokenizer(tmp_path / "missing.txt")
    with pytest.raises(FileNotFoundError):
        GPT2BPETokenizer(enc, tmp_path / "missing.bpe")
    with pytest.raises(ValueError, match="is a URL; embertext reads local files only"):
        BERTTokenizer("https://example.com/vocab.txt")
    with pytest.raises(TypeError, match="vocab file must be a path"):
        BERTTokenizer(42)


def test_bad_arguments(tiny_vocab_path):
    with pytest.raises(TypeError, match="do_lower_case must be a bool"):
        BERTTokenizer(tiny_vocab_path, do_lower_case="yes")
    with pytest.raises(TypeError, match="never_split must be a list of tokens"):
        BERTTokenizer(tiny_vocab_path, never_split="[CLS]")
    with pytest.raises(ValueError, match="num_threads must be at least 1"):
        BERTTokenizer(tiny_vocab_path, num_threads=0)
    with pytest.raises(ValueError, match="max_input_chars_per_word must be positive"):
        BERTTokenizer(tiny_vocab_path, max_input_chars_per_word=0)
    with pytest.raises(ValueError, match="no unknown token '<unk>'"):
        BERTTokenizer(tiny_vocab_path, unk_token="<unk>")


# -- encoder.json and vocab.bpe -------------------------------------------------------------------


def _byte_encoder() -> dict[str, int]:
    table = _C.byte_to_unicode()
    return {table[b]: b for b in range(256)}


@pytest.mark.parametrize(
    ("encoder_text", "message"),
    [
        ("[1, 2]", "line 1 column 1: the file must hold one JSON object"),
        ('{"a": -1}', "token IDs must not be negative"),
        ('{"a": 1.5}', "token IDs must be integers"),
        ('{"a": "1"}', "expected an integer token ID"),
        ('{"a": 1,}', "line 1 column 9: expected a string key"),
        ('{"a": 1', "expected ',' or '}' after a value"),
        ('{"a\\ud800": 1}', "unpaired surrogate escape"),
        ('{"a": 99999999999}', "token ID too large"),
        ('{"a": 1}\n{"b": 2}', "line 2 column 1: unexpected data after the object"),
        ('{"a": 1, "b": 1}', "token ID 1 is used by both 'a' and 'b'"),
        ('{"a": 1, "a": 2}', "token 'a' appears twice"),
        ('{"a": 1}', "byte-level BPE needs all 256 byte symbols"),
    ],
)
def test_malformed_encoder_json(tmp_path, encoder_text, message):
    (tmp_path / "e.json").write_text(encoder_text, encoding="utf-8")
    (tmp_path / "m.bpe").write_text("#version: 0.2\n")
    with pytest.raises(ValueError, match=re.escape(message)) as info:
        GPT2BPETokenizer(tmp_path / "e.json", tmp_path / "m.bpe")
    assert "e.json" in str(info.value)


@pytest.mark.parametrize(
    ("merges_text", "message"),
    [
        ("#version: 0.2\na b c\n", "line 2: expected two tokens separated by one space, got 'a b c'"),
        ("a\n", "line 1: expected two tokens separated by one space"),
        ("a  b\n", "expected two tokens separated by one space"),
        ("a b\n\nb c\n", "line 2 is empty: every line must hold one merge"),
        ("a \xff\n", None),
        ("h e\n", "merge 1 ('h' 'e'): token 'he' is not in the vocabulary"),
    ],
)
def test_malformed_merges(tmp_path, merges_text, message):
    (tmp_path / "e.json").write_text(json.dumps(_byte_encoder()), encoding="utf-8")
    if message is None:  # bytes that are not UTF-8
        (tmp_path / "m.bpe").write_bytes(b"a \xff\n")
        message = "line 1 is not valid UTF-8"
    else:
        (tmp_path / "m.bpe").write_text(merges_text, encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(message)) as info:
        GPT2BPETokenizer(tmp_path / "e.json", tmp_path / "m.bpe")
    assert "m.bpe" in str(info.value)


def test_merges_tolerate_crlf_and_trailing_blank_lines(tmp_path):
    encoder = _byte_encoder()
    encoder["he"] = 256
    (tmp_path / "e.json").write_text(json.dumps(encoder), encoding="utf-8")
    (tmp_path / "m.bpe").write_bytes(b"#version: 0.2\r\nh e\r\n\r\n\n")
    tok = GPT2BPETokenizer(tmp_path / "e.json", tmp_path / "m.bpe", return_tokens=True)
    assert tok("hehe") == ["he", "he"]


def test_clip_needs_its_special_tokens(tmp_path):
    (tmp_path / "merges.txt").write_text("#version: 0.2\n")
    encoder = {**_byte_encoder(), **{v + "</w>": 256 + b for v, b in _byte_encoder().items()}}
    (tmp_path / "e.json").write_text(json.dumps(encoder))
    with pytest.raises(ValueError, match="token '<\\|startoftext\\|>' is not in the vocabulary"):
        CLIPTokenizer(tmp_path / "merges.txt", encoder_json_path=tmp_path / "e.json")
    with pytest.raises(ValueError, match="num_merges must not be negative"):
        CLIPTokenizer(tmp_path / "merges.txt", num_merges=-1)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=200))
def test_fuzz_encoder_json_bytes(data):
    """Random bytes as encoder.json: parsed or a ValueError, never a crash."""
    try:
        pairs = _C.parse_encoder_json(data, "fuzz.json")
    except ValueError as error:
        assert "fuzz.json" in str(error)
    else:
        assert all(isinstance(t, str) and isinstance(i, int) and i >= 0 for t, i in pairs)


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(
        alphabet=st.sampled_from(list('{}[]":,.-+eE0123456789 \n\\/ubnrtfa\u00e9"\x00')), max_size=60
    )
)
def test_fuzz_json_like_text(text):
    try:
        pairs = _C.parse_encoder_json(text.encode("utf-8", "surrogatepass"), "fuzz.json")
    except ValueError as error:
        assert "fuzz.json line" in str(error)
    else:
        expected = json.loads(text)  # whatever we accept, Python's json reads the same way
        assert dict(pairs) == expected


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=200))
def test_fuzz_merges_and_vocab_bytes(data):
    for parse in (_C.parse_merges, _C.parse_vocab):
        try:
            parse(data, "fuzz")
        except ValueError as error:
            assert str(error).startswith("fuzz")


@settings(max_examples=100, deadline=None)
@given(lines=st.lists(st.text(alphabet=st.sampled_from(list("ab# \u00e9\t")), max_size=6), max_size=8))
def test_fuzz_merges_against_the_encoder(lines):
    """Arbitrary merges lines with a byte-level encoder: a tokenizer or a ValueError."""
    encoder = _byte_encoder()
    encoder.update({"ab": 256, "ba": 257})
    data = "\n".join(lines).encode()
    try:
        merges = _C.parse_merges(data, "m.bpe")
        tok = _C.GPT2BPETokenizer(list(encoder.items()), merges)
    except ValueError as error:
        assert "m.bpe" in str(error) or "merge" in str(error)
    else:
        assert tok.decode(tok.encode("abba é")) == "abba é"
