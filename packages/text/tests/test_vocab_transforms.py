"""Vocab, vocab factories, transforms and get_tokenizer; all of them inside emberdata pipes and
DataLoader worker processes."""

from __future__ import annotations

import pickle
from collections import OrderedDict

import pytest

import ember
from embertext import functional as F
from embertext.data.utils import get_tokenizer, ngrams_iterator
from embertext.transforms import (
    AddToken,
    BERTTokenizer,
    LabelToIndex,
    PadTransform,
    RegexTokenizer,
    Sequential,
    StrToIntTransform,
    ToTensor,
    Truncate,
    VocabTransform,
)
from embertext.vocab import Vocab, build_vocab_from_iterator, vocab

# -- Vocab ----------------------------------------------------------------------------------------


def test_vocab_from_ordered_dict():
    v = vocab(OrderedDict([("a", 3), ("b", 1), ("c", 2)]), min_freq=2, specials=["<unk>", "<pad>"])
    assert v.get_itos() == ["<unk>", "<pad>", "a", "c"]
    assert v.get_stoi() == {"<unk>": 0, "<pad>": 1, "a": 2, "c": 3}
    last = vocab(OrderedDict([("a", 1), ("<unk>", 5)]), specials=["<unk>"], special_first=False)
    assert last.get_itos() == ["a", "<unk>"]


def test_build_vocab_from_iterator_orders_by_frequency_then_token():
    data = [["b", "a", "c"], ["a", "c", "d"], ["a", "x"]]
    v = build_vocab_from_iterator(data, specials=["<unk>"])
    assert v.get_itos() == ["<unk>", "a", "c", "b", "d", "x"]
    assert build_vocab_from_iterator(data, min_freq=2).get_itos() == ["a", "c"]
    assert build_vocab_from_iterator(data, specials=["<unk>", "<pad>"], max_tokens=4).get_itos() == [
        "<unk>", "<pad>", "a", "c"]
    assert build_vocab_from_iterator(iter(data), specials=["<unk>"], special_first=False).get_itos()[-1] == "<unk>"


def test_lookups_and_default_index():
    v = Vocab(["<unk>", "hello", "world"])
    assert len(v) == 3 and "hello" in v and "nope" not in v and 3 not in v
    assert v["world"] == 2
    assert v(["hello", "world"]) == [1, 2]
    assert v.lookup_indices(["world", "hello"]) == [2, 1]
    assert v.lookup_token(1) == "hello"
    assert v.lookup_tokens([2, 0]) == ["world", "<unk>"]
    with pytest.raises(RuntimeError, match="Token 'nope' not found and default index is not set"):
        v["nope"]
    with pytest.raises(RuntimeError, match="Token 'nope' not found"):
        v.lookup_indices(["hello", "nope"])
    v.set_default_index(0)
    assert v.get_default_index() == 0
    assert v.lookup_indices(["hello", "nope"]) == [1, 0]
    v.set_default_index(None)
    with pytest.raises(RuntimeError, match="default index is not set"):
        v["nope"]


def test_editing_a_vocab():
    v = Vocab(["a", "b"])
    v.insert_token("z", 1)
    assert v.get_itos() == ["a", "z", "b"] and v["b"] == 2
    v.append_token("c")
    assert v["c"] == 3
    with pytest.raises(RuntimeError, match="Token 'a' already exists in the Vocab with index: 0"):
        v.append_token("a")
    with pytest.raises(RuntimeError, match="Specified index 9 is out of bounds for vocab of size 4"):
        v.insert_token("q", 9)
    with pytest.raises(RuntimeError, match="Specified index 4 is out of bounds"):
        v.lookup_token(4)


def test_vocab_argument_errors():
    with pytest.raises(TypeError, match="tokens must be str, but got int"):
        Vocab(["a"])[3]
    with pytest.raises(ValueError, match="min_freq must be at least 1"):
        build_vocab_from_iterator([["a"]], min_freq=0)
    with pytest.raises(ValueError, match="max_tokens \\(1\\) must be larger than the number of special tokens"):
        build_vocab_from_iterator([["a"]], specials=["<unk>"], max_tokens=1)
    with pytest.raises(TypeError, match="the iterator must yield lists of tokens, but it yielded a str"):
        build_vocab_from_iterator(["abc"])
    with pytest.raises(ValueError, match="specials has duplicates"):
        vocab(OrderedDict(), specials=["<unk>", "<unk>"])
    with pytest.raises(TypeError, match="ordered_dict must be a mapping"):
        vocab(["a"])
    with pytest.raises(ValueError, match="the default index must not be negative"):
        Vocab(["a"]).set_default_index(-1)


def test_vocab_pickles():
    v = build_vocab_from_iterator([["a", "b"]], specials=["<unk>"])
    v.set_default_index(0)
    again = pickle.loads(pickle.dumps(v))
    assert again.get_itos() == v.get_itos() and again["zzz"] == 0


# -- transforms -----------------------------------------------------------------------------------


def test_functional_forms():
    assert F.truncate([1, 2, 3], 2) == [1, 2]
    assert F.truncate([[1, 2, 3], [4]], 2) == [[1, 2], [4]]
    assert F.add_token([1, 2], 0) == [0, 1, 2]
    assert F.add_token([[1], [2, 3]], 9, begin=False) == [[1, 9], [2, 3, 9]]
    assert F.str_to_int(["1", "22"]) == [1, 22]
    assert F.str_to_int([["1"], ["2", "3"]]) == [[1], [2, 3]]
    t = F.to_tensor([[1, 2, 3], [4]], padding_value=0)
    assert t.dtype == ember.long and t.tolist() == [[1, 2, 3], [4, 0, 0]]
    assert F.to_tensor([5, 6], dtype=ember.int32).dtype == ember.int32
    with pytest.raises(ValueError, match="rows of lengths 1 to 3; pass padding_value"):
        F.to_tensor([[1, 2, 3], [4]])
    with pytest.raises(ValueError, match="max_seq_len must not be negative"):
        F.truncate([1], -1)
    with pytest.raises(ValueError, match="str_to_int: invalid literal"):
        F.str_to_int(["x"])


def test_transform_modules():
    v = Vocab(["<pad>", "<bos>", "a", "b"])
    assert VocabTransform(v)([["a", "b"], ["b"]]) == [[2, 3], [3]]
    assert VocabTransform(v)(["a"]) == [2]
    assert Truncate(1)([[1, 2], [3]]) == [[1], [3]]
    assert AddToken(1)([2, 3]) == [1, 2, 3]
    assert AddToken("<eos>", begin=False)(["a"]) == ["a", "<eos>"]
    assert StrToIntTransform()(["4"]) == [4]
    padded = PadTransform(max_length=5, pad_value=0)(ember.tensor([[1, 2], [3, 4]]))
    assert padded.tolist() == [[1, 2, 0, 0, 0], [3, 4, 0, 0, 0]]
    assert PadTransform(1, 0)(ember.tensor([1, 2])).tolist() == [1, 2]
    assert ToTensor(padding_value=0)([[2, 3], [3]]).tolist() == [[2, 3], [3, 0]]
    labels = LabelToIndex(["neg", "pos"])
    assert labels("pos") == 1 and labels(["pos", "neg"]) == [1, 0]
    assert LabelToIndex(["b", "a"], sort_names=True).label_names == ["a", "b"]
    with pytest.raises(TypeError, match="VocabTransform needs an embertext.vocab.Vocab"):
        VocabTransform({"a": 1})
    with pytest.raises(ValueError, match="label_names and label_path are mutually exclusive"):
        LabelToIndex(["a"], label_path="x")
    with pytest.raises(TypeError, match="PadTransform expects a Tensor"):
        PadTransform(3, 0)([1, 2])


def test_label_file(tmp_path):
    (tmp_path / "labels.txt").write_text("World\nSports\n\nBusiness\n")
    t = LabelToIndex(label_path=tmp_path / "labels.txt")
    assert t.label_names == ["World", "Sports", "Business"] and t("Business") == 2


def test_sequential_pipeline(tiny_vocab_path):
    pipeline = Sequential(
        BERTTokenizer(tiny_vocab_path),
        Truncate(3),
        AddToken(2, begin=True),
        AddToken(3, begin=False),
        ToTensor(padding_value=0),
    )
    out = pipeline(["hello world !", "hello"])
    assert out.tolist() == [[2, 5, 6, 7, 3], [2, 5, 3, 0, 0]]
    again = pickle.loads(pickle.dumps(pipeline))
    assert again(["hello world !", "hello"]).tolist() == out.tolist()


def test_regex_tokenizer():
    tok = RegexTokenizer([(r"[,._+ ]+", " ")])
    assert tok("Basic.Regex,Tokenization_for+a..Line,,of  Text") == [
        "Basic", "Regex", "Tokenization", "for", "a", "Line", "of", "Text"]
    quotes = RegexTokenizer([(r"\'", " '  "), (r"\"", "")])
    assert quotes('it\'s "fine"\tnow') == ["it", "'", "s", "fine\tnow"]  # only ' ' separates tokens
    assert pickle.loads(pickle.dumps(quotes))("a'b") == ["a", "'", "b"]
    with pytest.raises(ValueError, match=r"patterns_list\[0\]: invalid regex '\('"):
        RegexTokenizer([("(", " ")])
    with pytest.raises(ValueError, match=r"patterns_list\[0\] must be a \(pattern, replacement\) pair"):
        RegexTokenizer([("a",)])
    with pytest.raises(TypeError, match="RegexTokenizer expects a str"):
        tok(["a"])


def test_get_tokenizer():
    basic = get_tokenizer("basic_english")
    assert basic("You can now install TorchText using pip!") == [
        "you", "can", "now", "install", "torchtext", "using", "pip", "!"]
    assert basic('He said: "it\'s (fine)";<br />OK.') == ["he", "said", "it", "'", "s", "(", "fine", ")", "ok", "."]
    assert get_tokenizer(None)("a  b\tc") == ["a", "b", "c"]
    assert get_tokenizer(str.upper) is str.upper
    assert pickle.loads(pickle.dumps(basic))("A B") == ["a", "b"]
    with pytest.raises(ValueError, match="only available for English"):
        get_tokenizer("basic_english", language="de")
    with pytest.raises(ValueError, match="comes from spaCy"):
        get_tokenizer("spacy")
    with pytest.raises(ValueError, match="unknown tokenizer 'nope'"):
        get_tokenizer("nope")


def test_ngrams_iterator():
    assert list(ngrams_iterator(["here", "we", "are"], 2)) == ["here", "we", "are", "here we", "we are"]
    assert list(ngrams_iterator(["a", "b", "c"], 3))[-1] == "a b c"
    with pytest.raises(ValueError, match="ngrams must be a positive int"):
        list(ngrams_iterator(["a"], 0))


# -- inside emberdata pipes and DataLoader workers ---------------------------------------------


def _text_pipe(lines, tokenizer, vocab_transform):
    from emberdata.datapipes.iter import IterableWrapper

    return (
        IterableWrapper(list(enumerate(lines)))
        .sharding_filter()
        .map(lambda item: (item[0], tokenizer(item[1])))
        .map(lambda item: (item[0], vocab_transform(item[1])))
    )


def test_transforms_in_dataloader_workers(tiny_vocab_path):
    pytest.importorskip("emberdata", reason="the pipe is an emberdata DataPipe")
    from ember.utils.data import DataLoader

    lines = [f"hello world {'unaffable ' * (i % 4)}!" for i in range(40)]
    tokenizer = BERTTokenizer(tiny_vocab_path, return_tokens=True)
    v = build_vocab_from_iterator([tokenizer(line) for line in lines], specials=["<unk>"])
    v.set_default_index(0)
    pipe = _text_pipe(lines, tokenizer, VocabTransform(v))
    expected = {i: v(tokenizer(line)) for i, line in enumerate(lines)}
    loader = DataLoader(pipe, batch_size=None, num_workers=2)
    got = {}
    for index, ids in loader:
        got[int(index)] = [int(x) for x in ids]
    assert got == expected  # every line once, tokenized in a worker process
