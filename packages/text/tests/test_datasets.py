"""Datasets over tiny files written in each dataset's real layout (archives, members, headers,
delimiters), read through emberdata pipes; hashes checked against the tiny files' digests."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import json
import pickle
import tarfile
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("emberdata", reason="the datasets are emberdata DataPipes")

from embertext import datasets  # noqa: E402
from embertext.datasets import _datasets  # noqa: E402
from embertext.datasets._common import Member  # noqa: E402


def _zip(path: Path, members: dict[str, str]) -> None:
    with zipfile.ZipFile(path, "w") as z:
        for name, text in members.items():
            z.writestr(name, text)


def _tar(path: Path, members: dict[str, str]) -> None:
    with tarfile.open(path, "w:gz") as t:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))


@pytest.fixture
def trust(monkeypatch):
    """Make the registry expect the digests of the tiny files a test wrote (the real digests
    stay in place for every file the test did not write)."""

    def trust_files(name: str, directory: Path) -> None:
        sources = dict(_datasets.SOURCES[name])
        for split, source in sources.items():
            download = source.archive if isinstance(source, Member) else source
            path = directory / download.name
            if path.exists():
                digest = hashlib.new(download.hash_type, path.read_bytes()).hexdigest()
                fresh = dataclasses.replace(download, digest=digest)
                sources[split] = dataclasses.replace(source, archive=fresh) if isinstance(source, Member) else fresh
        monkeypatch.setitem(_datasets.SOURCES, name, sources)

    return trust_files


def _rows(pipe) -> list:
    return list(pipe)


# -- GLUE -----------------------------------------------------------------------------------------


def test_cola(tmp_path, trust):
    d = tmp_path / "CoLA"
    d.mkdir()
    tsv = "gj04\t1\t\tOur friends won't buy this analysis.\nclc95\t0\t*\tThey drank the pub.\nbad row\n"
    _zip(d / "cola_public_1.1.zip", {f"cola_public/raw/{f}": tsv for f in
                                     ("in_domain_train.tsv", "in_domain_dev.tsv", "out_of_domain_dev.tsv")})
    trust("CoLA", d)
    train, dev, test = datasets.CoLA(root=tmp_path)
    assert _rows(train) == [("gj04", 1, "Our friends won't buy this analysis."), ("clc95", 0, "They drank the pub.")]
    assert len(_rows(test)) == 2


def test_sst2(tmp_path, trust):
    d = tmp_path / "SST2"
    d.mkdir()
    _zip(d / "SST-2.zip", {
        "SST-2/train.tsv": "sentence\tlabel\nhide new secretions \t0\na \"gorgeous\" film \t1\n",
        "SST-2/dev.tsv": "sentence\tlabel\nit 's a charming journey . \t1\n",
        "SST-2/test.tsv": "index\tsentence\n0\tuneasy mishmash of styles \n",
    })
    trust("SST2", d)
    assert _rows(datasets.SST2(root=tmp_path, split="train")) == [("hide new secretions", 0), ('a "gorgeous" film', 1)]
    assert _rows(datasets.SST2(root=tmp_path, split="test")) == [("uneasy mishmash of styles",)]


def test_mrpc(tmp_path, trust):
    d = tmp_path / "MRPC"
    d.mkdir()
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    (d / "msr_paraphrase_train.txt").write_text(header + '1\t702876\t702977\tHe said "no".\tHe refused.\n')
    (d / "msr_paraphrase_test.txt").write_text(header + "0\t1\t2\tA b.\tC d.\n")
    trust("MRPC", d)
    train, test = datasets.MRPC(root=tmp_path)
    assert _rows(train) == [(1, 'He said "no".', "He refused.")]
    assert _rows(test) == [(0, "A b.", "C d.")]


def test_qqp(tmp_path, trust):
    d = tmp_path / "QQP"
    d.mkdir()
    (d / "quora_duplicate_questions.tsv").write_text(
        "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n0\t1\t2\tHow?\tWhy?\t0\n1\t3\t4\tA?\tA!\t1\n")
    trust("QQP", d)
    assert _rows(datasets.QQP(root=tmp_path)) == [(0, "How?", "Why?"), (1, "A?", "A!")]


def test_stsb(tmp_path, trust):
    d = tmp_path / "STSB"
    d.mkdir()
    rows = "main-captions\tMSRvid\t2012test\t0001\t5.000\tA plane is taking off.\tAn air plane is taking off.\n"
    _tar(d / "Stsbenchmark.tar.gz", {f"stsbenchmark/sts-{s}.csv": rows for s in ("train", "dev", "test")})
    trust("STSB", d)
    assert _rows(datasets.STSB(root=tmp_path, split="dev")) == [
        (1, 5.0, "A plane is taking off.", "An air plane is taking off.")]


def test_mnli(tmp_path, trust):
    d = tmp_path / "MNLI"
    d.mkdir()
    header = "gold_label\ts1_binary_parse\ts2_binary_parse\ts1_parse\ts2_parse\tsentence1\tsentence2\n"
    body = ("neutral\t(x)\t(y)\t(X)\t(Y)\tConceptually cream skimming.\tProduct and geography.\n"
            "-\t(x)\t(y)\t(X)\t(Y)\tNo gold label.\tSkipped.\n"
            "contradiction\t(x)\t(y)\t(X)\t(Y)\tA \"quoted\" one.\tB.\n")
    _zip(d / "multinli_1.0.zip", {f"multinli_1.0/multinli_1.0_{s}.txt": header + body
                                  for s in ("train", "dev_matched", "dev_mismatched")})
    trust("MNLI", d)
    assert _rows(datasets.MNLI(root=tmp_path, split="dev_mismatched")) == [
        (1, "Conceptually cream skimming.", "Product and geography."), (2, 'A "quoted" one.', "B.")]


@pytest.mark.parametrize("name", ["QNLI", "RTE", "WNLI"])
def test_pair_tasks(tmp_path, trust, name):
    d = tmp_path / name
    d.mkdir()
    label = "1" if name == "WNLI" else "not_entailment"
    _zip(d / f"{'QNLIv2' if name == 'QNLI' else name}.zip", {
        f"{name}/train.tsv": f"index\tsentence1\tsentence2\tlabel\n0\tFirst one.\tSecond one.\t{label}\n",
        f"{name}/dev.tsv": "index\tsentence1\tsentence2\tlabel\n",
        f"{name}/test.tsv": "index\tsentence1\tsentence2\n0\tTest a.\tTest b.\n",
    })
    trust(name, d)
    train, dev, test = getattr(datasets, name)(root=tmp_path)
    assert _rows(train) == [(1, "First one.", "Second one.")]
    assert _rows(dev) == []
    assert _rows(test) == [("Test a.", "Test b.")]  # no labels in test rows


# -- classification -------------------------------------------------------------------------------


def test_ag_news(tmp_path, trust):
    d = tmp_path / "AG_NEWS"
    d.mkdir()
    (d / "train.csv").write_text('"3","Wall St. Bears","Short-sellers, Wall Street\'s dwindling band"\n'
                                 '"4","Title",""\n')
    (d / "test.csv").write_text('"1","a","b"\n')
    trust("AG_NEWS", d)
    train, test = datasets.AG_NEWS(root=tmp_path, split=("train", "test"))
    assert _rows(train) == [(3, "Wall St. Bears Short-sellers, Wall Street's dwindling band"), (4, "Title ")]
    assert _rows(test) == [(1, "a b")]


@pytest.mark.parametrize(
    ("name", "folder"),
    [("YelpReviewPolarity", "yelp_review_polarity_csv"), ("YelpReviewFull", "yelp_review_full_csv"),
     ("AmazonReviewPolarity", "amazon_review_polarity_csv"), ("AmazonReviewFull", "amazon_review_full_csv"),
     ("DBpedia", "dbpedia_csv"), ("SogouNews", "sogou_news_csv"), ("YahooAnswers", "yahoo_answers_csv")],
)
def test_csv_archives(tmp_path, trust, name, folder):
    d = tmp_path / name
    d.mkdir()
    _tar(d / f"{folder}.tar.gz", {
        f"{folder}/train.csv": '"2","Great ""place""","multi\nline"\n"1","bad",""\n',
        f"{folder}/test.csv": '"5","x"\n',
        f"{folder}/readme.txt": "not data",
    })
    trust(name, d)
    train, test = getattr(datasets, name)(root=tmp_path)
    assert _rows(train) == [(2, 'Great "place" multi\nline'), (1, "bad ")]
    assert _rows(test) == [(5, "x")]


def test_imdb_archive_and_extracted(tmp_path, trust):
    d = tmp_path / "IMDB"
    d.mkdir()
    _tar(d / "aclImdb_v1.tar.gz", {
        "aclImdb/train/pos/0_9.txt": "Bromwell High is a cartoon comedy.<br /><br />Great.\n",
        "aclImdb/train/neg/1_2.txt": "Story of a man.",
        "aclImdb/train/unsup/2_0.txt": "unlabelled: skipped",
        "aclImdb/train/urls_pos.txt": "http://x",
        "aclImdb/test/pos/3_10.txt": "Test review.",
        "aclImdb/imdb.vocab": "the\n",
    })
    trust("IMDB", d)
    train, test = datasets.IMDB(root=tmp_path)
    expected = [(1, "Story of a man."), (2, "Bromwell High is a cartoon comedy.<br /><br />Great.")]
    assert sorted(_rows(train)) == expected
    assert _rows(test) == [(2, "Test review.")]
    with tarfile.open(d / "aclImdb_v1.tar.gz") as t:
        t.extractall(d, filter="data")
    (d / "aclImdb_v1.tar.gz").unlink()
    assert sorted(_rows(datasets.IMDB(root=tmp_path, split="train"))) == expected


# -- language modelling ---------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "folder"), [("WikiText2", "wikitext-2"), ("WikiText103", "wikitext-103")])
def test_wikitext(tmp_path, trust, name, folder):
    d = tmp_path / name
    d.mkdir()
    text = " \n = Valkyria Chronicles III = \n \n Senjō no Valkyria 3 : <unk> Chronicles \n"
    _zip(d / f"{folder}-v1.zip", {f"{folder}/wiki.{s}.tokens": text for s in ("train", "valid", "test")})
    trust(name, d)
    assert _rows(getattr(datasets, name)(root=tmp_path, split="valid")) == [
        " \n", " = Valkyria Chronicles III = \n", " \n", " Senjō no Valkyria 3 : <unk> Chronicles \n"]


def test_penn_treebank(tmp_path, trust):
    d = tmp_path / "PennTreebank"
    d.mkdir()
    for s in ("train", "valid", "test"):
        (d / f"ptb.{s}.txt").write_text(" aer banknote berlitz \n pierre <unk> N years old \n")
    trust("PennTreebank", d)
    assert _rows(datasets.PennTreebank(root=tmp_path, split="test")) == [
        "aer banknote berlitz", "pierre <unk> N years old"]


def test_enwik9(tmp_path, trust):
    d = tmp_path / "EnWik9"
    d.mkdir()
    _zip(d / "enwik9.zip", {"enwik9": "<mediawiki>\n  <page>\n"})
    trust("EnWik9", d)
    assert _rows(datasets.EnWik9(root=tmp_path)) == ["<mediawiki>", "  <page>"]


# -- question answering ---------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "version"), [("SQuAD1", "1.1"), ("SQuAD2", "2.0")])
def test_squad(tmp_path, trust, name, version):
    d = tmp_path / name
    d.mkdir()
    data = {"version": version, "data": [{"title": "T", "paragraphs": [{
        "context": "Architecturally, the school has a Catholic character.",
        "qas": [{"id": "1", "question": "What character?", "answers": [
            {"text": "Catholic", "answer_start": 34}, {"text": "a Catholic character", "answer_start": 32}]},
                {"id": "2", "question": "Unanswerable?", "answers": [], "is_impossible": True}]}]}]}
    for s in ("train", "dev"):
        (d / f"{s}-v{version}.json").write_text(json.dumps(data))
    trust(name, d)
    assert _rows(getattr(datasets, name)(root=tmp_path, split="dev")) == [
        ("Architecturally, the school has a Catholic character.", "What character?",
         ["Catholic", "a Catholic character"], [34, 32]),
        ("Architecturally, the school has a Catholic character.", "Unanswerable?", [""], [-1]),
    ]
    (d / f"dev-v{version}.json").write_text('{"data": [{"paragraphs": [{}]}]}')
    trust(name, d)
    with pytest.raises(ValueError, match="not in SQuAD's layout"):
        _rows(getattr(datasets, name)(root=tmp_path, split="dev"))


# -- translation and tagging ----------------------------------------------------------------------


def test_multi30k(tmp_path, trust):
    d = tmp_path / "Multi30k"
    d.mkdir()
    _tar(d / "validation.tar.gz", {"val.de": "Eine Gruppe von Männern.\nZwei Hunde.\n",
                                   "val.en": "A group of men.\nTwo dogs.\n"})
    trust("Multi30k", d)
    assert _rows(datasets.Multi30k(root=tmp_path, split="valid")) == [
        ("Eine Gruppe von Männern.", "A group of men."), ("Zwei Hunde.", "Two dogs.")]
    assert _rows(datasets.Multi30k(root=tmp_path, split="valid", language_pair=("en", "de")))[1] == (
        "Two dogs.", "Zwei Hunde.")
    with pytest.raises(ValueError, match="language_pair must be \\('de', 'en'\\) or \\('en', 'de'\\)"):
        datasets.Multi30k(root=tmp_path, split="valid", language_pair=("fr", "en"))


def test_conll2000(tmp_path, trust):
    d = tmp_path / "CoNLL2000Chunking"
    d.mkdir()
    text = "Confidence NN B-NP\nin IN B-PP\n\nChancellor NNP O\n"
    for s in ("train", "test"):
        (d / f"{s}.txt.gz").write_bytes(gzip.compress(text.encode()))
    trust("CoNLL2000Chunking", d)
    assert _rows(datasets.CoNLL2000Chunking(root=tmp_path, split="train")) == [
        [["Confidence", "in"], ["NN", "IN"], ["B-NP", "B-PP"]], [["Chancellor"], ["NNP"], ["O"]]]


def test_udpos(tmp_path, trust):
    d = tmp_path / "UDPOS"
    d.mkdir()
    text = "Al\tPROPN\tNNP\n-\tPUNCT\tHYPH\n\nWhat\tPRON\tWP\n\n"
    _zip(d / "en-ud-v2.zip", {f"en-ud-v2/en-ud-tag.v2.{s}.txt": text for s in ("train", "dev", "test")})
    trust("UDPOS", d)
    assert _rows(datasets.UDPOS(root=tmp_path, split="valid")) == [
        [["Al", "-"], ["PROPN", "PUNCT"], ["NNP", "HYPH"]], [["What"], ["PRON"], ["WP"]]]


def _tgz_bytes(members: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as t:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _iwslt_xml(sentences: list[str]) -> str:
    segs = "".join(f'<seg id="{i}"> {s} </seg>\n' for i, s in enumerate(sentences, 1))
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<mteval>\n<srcset setid="x">\n<doc docid="1">\n{segs}</doc>\n</srcset>\n</mteval>\n'


@pytest.mark.parametrize(("name", "outer", "inner", "year", "valid"), [
    ("IWSLT2016", "2016-01.tgz", "texts/de/en/de-en.tgz", 16, "tst2013"),
    ("IWSLT2017", "2017-01-trnmted.tgz", "texts/DeEnItNlRo/DeEnItNlRo/DeEnItNlRo-DeEnItNlRo.tgz", 17, "dev2010"),
])
def test_iwslt(tmp_path, trust, name, outer, inner, year, valid):
    d = tmp_path / name
    d.mkdir()
    folder = inner.rsplit("/", 1)[1][: -len(".tgz")]
    tags = {"de": "<url>http://x</url>\n<talkid>1</talkid>\n Guten Morgen. \nDanke.\n",
            "en": "<url>http://x</url>\n<talkid>1</talkid>\nGood morning.\n Thanks. \n"}
    members = {f"{folder}/train.tags.de-en.{lang}": text for lang, text in tags.items()}
    members.update({f"{folder}/IWSLT{year}.TED.{valid}.de-en.{lang}.xml": _iwslt_xml(sents)
                    for lang, sents in (("de", ["Hallo Welt.", "Ja."]), ("en", ["Hello world.", "Yes."]))})
    inner_bytes = _tgz_bytes(members)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as t:
        info = tarfile.TarInfo(f"{outer[: -len('.tgz')]}/{inner}")
        info.size = len(inner_bytes)
        t.addfile(info, io.BytesIO(inner_bytes))
    (d / outer).write_bytes(buffer.getvalue())
    trust(name, d)
    train = getattr(datasets, name)(root=tmp_path, split="train")
    assert _rows(train) == [("Guten Morgen.\n", "Good morning.\n"), ("Danke.\n", "Thanks.\n")]
    valid_pipe = getattr(datasets, name)(root=tmp_path, split="valid")
    assert _rows(valid_pipe) == [("Hallo Welt.\n", "Hello world.\n"), ("Ja.\n", "Yes.\n")]
    with pytest.raises(ValueError, match="target language 'xx' is not supported for 'de'"):
        getattr(datasets, name)(root=tmp_path, language_pair=("de", "xx"))


def test_iwslt2016_sets_that_do_not_exist(tmp_path):
    with pytest.raises(ValueError, match="test_set 'tst2014' does not exist for cs-en"):
        datasets.IWSLT2016(root=tmp_path, language_pair=("cs", "en"))


# -- files, hashes, splits, workers ---------------------------------------------------------------


def test_hash_mismatch_is_a_clear_error(tmp_path):
    d = tmp_path / "AG_NEWS"
    d.mkdir()
    (d / "train.csv").write_text('"1","tampered"\n')
    with pytest.raises(RuntimeError, match="The md5 hash .* does not match the expected b1a00f826fdfbd249f79597b59e1dc12"):
        datasets.AG_NEWS(root=tmp_path, split="train")
    assert _rows(datasets.AG_NEWS(root=tmp_path, split="train", verify_hash=False)) == [(1, "tampered")]


def test_extracted_members_need_no_archive(tmp_path):
    d = tmp_path / "SST2" / "SST-2"
    d.mkdir(parents=True)
    (d / "dev.tsv").write_text("sentence\tlabel\nfine \t1\n")
    assert _rows(datasets.SST2(root=tmp_path, split="dev")) == [("fine", 1)]


def test_missing_files_name_what_to_fetch(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"neither .*SST-2/train.tsv.* nor the archive .*SST-2.zip"):
        datasets.SST2(root=tmp_path, split="train")
    with pytest.raises(FileNotFoundError, match="Ember does not download; fetch https://raw.githubusercontent"):
        datasets.AG_NEWS(root=tmp_path, split="test")


def test_bad_splits(tmp_path):
    with pytest.raises(ValueError, match=r"SST2: 'valid' is not a split of this dataset; choose from \('train'"):
        datasets.SST2(root=tmp_path, split="valid")
    with pytest.raises(TypeError, match="split must be a str or a tuple of str"):
        datasets.SST2(root=tmp_path, split=3)


def test_unsafe_archive_members_are_refused(tmp_path, trust):
    from emberdata.datapipes.iter._archive import UnsafeArchiveError

    d = tmp_path / "SST2"
    d.mkdir()
    _zip(d / "SST-2.zip", {"../SST-2/train.tsv": "sentence\tlabel\nx\t1\n"})
    trust("SST2", d)
    with pytest.raises(UnsafeArchiveError, match="escape|\\.\\."):
        _rows(datasets.SST2(root=tmp_path, split="train"))


def test_num_lines_and_registry():
    assert datasets.NUM_LINES["CoLA"] == {"train": 8551, "dev": 527, "test": 516}
    assert datasets.NUM_LINES["SST2"] == {"train": 67349, "dev": 872, "test": 1821}
    assert datasets.NUM_LINES["IMDB"] == {"train": 25000, "test": 25000}
    assert len(datasets.DATASETS) == 29


def test_shuffle_sharding_and_workers(tmp_path, trust):
    from ember.utils.data import DataLoader

    d = tmp_path / "AG_NEWS"
    d.mkdir()
    (d / "train.csv").write_text("".join(f'"{i % 4 + 1}","title {i}","body"\n' for i in range(60)))
    trust("AG_NEWS", d)
    pipe = datasets.AG_NEWS(root=tmp_path, split="train")
    plain = _rows(pipe)
    assert [t for _, t in plain] == [f"title {i} body" for i in range(60)]  # shuffle is off by default
    again = pickle.loads(pickle.dumps(pipe))
    assert _rows(again) == plain
    import ember

    loader = DataLoader(pipe, batch_size=None, num_workers=2, shuffle=True,
                        generator=ember.Generator().manual_seed(0))
    got = [(int(label), text) for label, text in loader]
    assert sorted(got) == sorted(plain)  # each row once across the two workers
    assert got != plain  # and shuffled
