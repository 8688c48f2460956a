"""Criteo-format files with a planted, learnable signal, for tests and examples.

Real Criteo logs are not shipped; these files have their shape (tab-separated label, 13 integer
counts, 26 hex categoricals, empty fields) and a known click model:

    logit = bias + sum_{c in informative cats} effect_c[value] + dense_weight * z(log(int_0 + 1))
    label ~ Bernoulli(sigmoid(logit))

The informative categoricals draw from small vocabularies, each value with its own N(0, 1)
effect (times ``signal``); the other categoricals draw from large vocabularies and carry no
signal; ``int_0`` carries a dense effect; the other integers are noise. The true click
probability of every row is returned, so the best reachable AUC is known.
"""

from __future__ import annotations

import os

import numpy as np

from emberrec.datasets.criteo import CAT_FEATURE_COUNT, INT_FEATURE_COUNT


def generate_criteo_tsv(
    path: str | os.PathLike[str],
    num_rows: int,
    *,
    seed: int = 0,
    informative_cats: tuple[int, ...] = (0, 1, 2),
    informative_vocab: int = 40,
    noise_vocab: int = 100_000,
    signal: float = 1.0,
    dense_weight: float = 0.8,
    bias: float = -0.5,
    missing_rate: float = 0.05,
    with_label: bool = True,
) -> np.ndarray:
    """Writes ``num_rows`` Criteo rows to ``path``; returns their true click probabilities (float64).

    The same ``seed`` always plants the same effects, so files written with one seed and
    different ``num_rows`` share one click model; give a held-out file its own rows by reading a
    split of one file (``idx_split_train_val``) rather than a second seed.
    """
    if isinstance(num_rows, bool) or not isinstance(num_rows, int) or num_rows <= 0:
        raise ValueError(f"num_rows must be a positive int, got {num_rows!r}")
    if not all(0 <= c < CAT_FEATURE_COUNT for c in informative_cats):
        raise ValueError(f"informative_cats must be in [0, {CAT_FEATURE_COUNT}), got {informative_cats}")
    if not 0.0 <= missing_rate < 1.0:
        raise ValueError(f"missing_rate must be in [0, 1), got {missing_rate}")
    rng = np.random.default_rng(seed)
    # The click model: one 32-bit id and one effect per informative value.
    vocab_ids = {c: rng.choice(2**32, size=informative_vocab, replace=False) for c in informative_cats}
    effects = {c: signal * rng.standard_normal(informative_vocab) for c in informative_cats}

    ints = rng.poisson(rng.uniform(0.5, 50.0, size=INT_FEATURE_COUNT), size=(num_rows, INT_FEATURE_COUNT))
    ints[:, 0] = rng.geometric(0.05, size=num_rows)  # the informative count, spread over orders of magnitude
    cats = np.empty((num_rows, CAT_FEATURE_COUNT), dtype=np.int64)
    logit = np.full(num_rows, bias)
    for c in range(CAT_FEATURE_COUNT):
        if c in vocab_ids:
            picks = rng.integers(0, informative_vocab, size=num_rows)
            cats[:, c] = vocab_ids[c][picks]
            logit += effects[c][picks]
        else:
            cats[:, c] = rng.integers(0, noise_vocab, size=num_rows) * 2654435761 % 2**32
    dense_signal = np.log1p(ints[:, 0])
    logit += dense_weight * (dense_signal - dense_signal.mean()) / (dense_signal.std() + 1e-12)
    probability = 1.0 / (1.0 + np.exp(-logit))
    labels = (rng.random(num_rows) < probability).astype(np.int64)

    # Missing fields are empty strings, as in the real logs; never in the informative columns,
    # whose meaning would otherwise change.
    int_missing = rng.random((num_rows, INT_FEATURE_COUNT)) < missing_rate
    int_missing[:, 0] = False
    cat_missing = rng.random((num_rows, CAT_FEATURE_COUNT)) < missing_rate
    cat_missing[:, list(informative_cats)] = False
    with open(path, "w", encoding="utf-8") as out:
        for r in range(num_rows):
            fields = [str(labels[r])] if with_label else []
            fields += ["" if int_missing[r, i] else str(ints[r, i]) for i in range(INT_FEATURE_COUNT)]
            fields += ["" if cat_missing[r, c] else f"{cats[r, c]:08x}" for c in range(CAT_FEATURE_COUNT)]
            out.write("\t".join(fields) + "\n")
    return probability
