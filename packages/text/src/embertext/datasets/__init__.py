"""embertext.datasets: torchtext's datasets as emberdata DataPipes over local files.

Each function takes ``root`` (default ``~/.embertext/cache``; files are looked for under
``root/<DATASET_NAME>/``, torchtext's cache layout) and ``split`` (one name gives one pipe, a
tuple a tuple of pipes), checks the downloaded file's digest, and returns pipes ending in a
shuffle (off until DataLoader(shuffle=True) turns it on) and a sharding filter, so they work
with DataLoader workers. ``NUM_LINES`` gives the rows of each split of the real files.
Ember does not download: see Note [dataset files] in _common.py.
"""

from embertext.datasets._datasets import (
    AG_NEWS,
    IMDB,
    IWSLT2016,
    IWSLT2017,
    MNLI,
    MRPC,
    NUM_LINES,
    QNLI,
    QQP,
    RTE,
    SST2,
    STSB,
    UDPOS,
    WNLI,
    AmazonReviewFull,
    AmazonReviewPolarity,
    CoLA,
    CoNLL2000Chunking,
    DBpedia,
    EnWik9,
    Multi30k,
    PennTreebank,
    SogouNews,
    SQuAD1,
    SQuAD2,
    WikiText2,
    WikiText103,
    YahooAnswers,
    YelpReviewFull,
    YelpReviewPolarity,
)

DATASETS = {
    f.__name__: f
    for f in (AG_NEWS, AmazonReviewFull, AmazonReviewPolarity, CoLA, CoNLL2000Chunking, DBpedia, EnWik9, IMDB,
              IWSLT2016, IWSLT2017,
              MNLI, MRPC, Multi30k, PennTreebank, QNLI, QQP, RTE, SogouNews, SQuAD1, SQuAD2, SST2, STSB, UDPOS,
              WikiText103, WikiText2, WNLI, YahooAnswers, YelpReviewFull, YelpReviewPolarity)
}

__all__ = ["DATASETS", "NUM_LINES", *DATASETS]
