"""Criteo and MovieLens readers on tmp_path files against plain-Python parsing, Batch collation,
splits, RandomRecDataset and the Criteo-format generator."""

from __future__ import annotations

import math
import pickle
import random

import numpy as np
import pytest

import ember

pytest.importorskip("emberdata", reason="the readers are emberdata DataPipes")

from emberdata.datapipes.iter import IterableWrapper, IterDataPipe  # noqa: E402
from emberrec.datasets.criteo import (
    DEFAULT_CAT_NAMES,
    DEFAULT_INT_NAMES,
    criteo_batches,
    criteo_kaggle,
    criteo_terabyte,
    rows_to_batch,
)
from emberrec.datasets.movielens import movielens_20m, movielens_25m
from emberrec.datasets.random import RandomRecDataset
from emberrec.datasets.synthetic import generate_criteo_tsv
from emberrec.datasets.utils import Batch, idx_split_train_val, rand_split_train_val


def random_criteo_lines(rng: random.Random, n: int, label: bool = True) -> list[str]:
    lines = []
    for _ in range(n):
        fields = [str(rng.randint(0, 1))] if label else []
        fields += ["" if rng.random() < 0.2 else str(rng.randint(-3, 10**6)) for _ in range(13)]
        fields += ["" if rng.random() < 0.2 else f"{rng.getrandbits(32):08x}" for _ in range(26)]
        lines.append("\t".join(fields))
    return lines


def parse_plainly(line: str) -> dict:
    fields = line.split("\t")
    names = (["label"] if len(fields) == 40 else []) + DEFAULT_INT_NAMES + DEFAULT_CAT_NAMES
    row = {}
    for name, value in zip(names, fields, strict=True):
        row[name] = value if name.startswith("cat_") else int(value or 0)
    return row


def write(path, lines: list[str]) -> str:
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


def test_criteo_rows_match_plain_parsing(tmp_path):
    rng = random.Random(0)
    lines = random_criteo_lines(rng, 50)
    pipe = criteo_kaggle(write(tmp_path / "train.txt", lines))
    assert isinstance(pipe, IterDataPipe)
    assert list(pipe) == [parse_plainly(line) for line in lines]
    assert list(pipe) == [parse_plainly(line) for line in lines]  # a second pass reads the file again

    test_lines = random_criteo_lines(rng, 5, label=False)  # Kaggle's test.txt: no label column
    rows = list(criteo_kaggle(write(tmp_path / "test.txt", test_lines)))
    assert rows == [parse_plainly(line) for line in test_lines] and "label" not in rows[0]

    raw = list(criteo_kaggle(str(tmp_path / "train.txt"), row_mapper=None))
    assert raw == [line.split("\t") for line in lines]
    # Pipes pickle (DataLoader worker processes receive them so).
    assert list(pickle.loads(pickle.dumps(criteo_batches(pipe, 8))))[0].labels.tolist() == [
        parse_plainly(line)["label"] for line in lines[:8]]


def test_criteo_terabyte_reads_files_in_order(tmp_path):
    rng = random.Random(1)
    day0, day1 = random_criteo_lines(rng, 7), random_criteo_lines(rng, 4)
    paths = [write(tmp_path / "day_0.tsv", day0), write(tmp_path / "day_1.tsv", day1)]
    assert list(criteo_terabyte(paths)) == [parse_plainly(line) for line in day0 + day1]


@pytest.mark.parametrize("bad, message", [
    (lambda f: f[:12], "expected 40 or 39 columns, got 12"),
    (lambda f: f + ["x"], "expected 40 or 39 columns, got 41"),
    (lambda f: f[:3] + ["12a"] + f[4:], "column int_2: expected an integer, got '12a'"),
    (lambda f: ["yes"] + f[1:], "column label: expected an integer, got 'yes'"),
    (lambda f: f[:20] + ["zz11"] + f[21:], "column cat_6: expected a hex string, got 'zz11'"),
])
def test_criteo_bad_rows_name_file_and_line(tmp_path, bad, message):
    lines = random_criteo_lines(random.Random(2), 3)
    lines[1] = "\t".join(bad(lines[1].split("\t")))
    good = write(tmp_path / "day_0.tsv", random_criteo_lines(random.Random(3), 2))
    path = write(tmp_path / "day_1.tsv", lines)
    pipe = criteo_terabyte([good, path])
    with pytest.raises(ValueError, match=f"day_1.tsv, line 2: {message}"):
        list(pipe)


def test_criteo_batches_match_plain_collation(tmp_path):
    rng = random.Random(4)
    lines = random_criteo_lines(rng, 11)
    hashes = [rng.randint(1, 1000) for _ in range(26)]
    batches = list(criteo_batches(criteo_kaggle(write(tmp_path / "t.tsv", lines)), 4, hashes))
    assert [len(b.labels) for b in batches] == [4, 4, 3]
    rows = [parse_plainly(line) for line in lines]
    for start, batch in zip(range(0, 11, 4), batches, strict=True):
        chunk = rows[start:start + 4]
        assert isinstance(batch, Batch)
        assert batch.labels.dtype == ember.int64 and batch.labels.tolist() == [r["label"] for r in chunk]
        dense = [[math.log(max(r[n], 0) + 1) for n in DEFAULT_INT_NAMES] for r in chunk]
        assert batch.dense_features.dtype == ember.float32
        np.testing.assert_allclose(batch.dense_features.numpy(), np.array(dense), rtol=1e-6)
        kjt = batch.sparse_features
        assert kjt.keys() == DEFAULT_CAT_NAMES and kjt.stride() == len(chunk)
        assert kjt.lengths().tolist() == [1] * (26 * len(chunk))
        expected = [(int(r[n], 16) if r[n] else 0) % hashes[i] for i, n in enumerate(DEFAULT_CAT_NAMES) for r in chunk]
        assert kjt.values().tolist() == expected
    dropped = list(criteo_batches(criteo_kaggle(str(tmp_path / "t.tsv")), 4, hashes, drop_last=True))
    assert [len(b.labels) for b in dropped] == [4, 4]
    unhashed = rows_to_batch(rows[:2])
    assert unhashed.sparse_features.values().tolist() == [int(r[n], 16) if r[n] else 0
                                                           for n in DEFAULT_CAT_NAMES for r in rows[:2]]


def test_criteo_batches_reject_bad_arguments(tmp_path):
    pipe = criteo_kaggle(write(tmp_path / "t.tsv", random_criteo_lines(random.Random(5), 2)))
    with pytest.raises(ValueError, match="hashes must be 26 positive ints"):
        criteo_batches(pipe, 4, [10] * 25)
    with pytest.raises(ValueError, match="hashes must be 26 positive ints"):
        criteo_batches(pipe, 4, [0] * 26)
    with pytest.raises(ValueError, match="batch_size must be a positive int, got 0"):
        criteo_batches(pipe, 0)
    unlabelled = criteo_kaggle(write(tmp_path / "test.txt", random_criteo_lines(random.Random(6), 2, label=False)))
    with pytest.raises(ValueError, match="needs labelled rows"):
        list(criteo_batches(unlabelled, 4))
    with pytest.raises(ValueError, match="zero rows"):
        rows_to_batch([])


def test_batch_to_and_pin_memory(tmp_path):
    batch = next(iter(criteo_batches(criteo_kaggle(write(tmp_path / "t.tsv", random_criteo_lines(random.Random(7), 3))), 3)))
    moved = batch.to("cpu")
    assert moved is not batch and moved.labels.tolist() == batch.labels.tolist()
    assert moved.sparse_features.values().tolist() == batch.sparse_features.values().tolist()
    assert batch.pin_memory() is batch


def write_movielens(root, ratings: list[str], movies: list[str]) -> str:
    (root / "ratings.csv").write_text("userId,movieId,rating,timestamp\n" + "".join(r + "\n" for r in ratings))
    (root / "movies.csv").write_text("movieId,title,genres\n" + "".join(m + "\n" for m in movies))
    return str(root)


MOVIES = ['1,Toy Story (1995),Adventure|Animation', '2,"City of Lost Children, The (1995)",Drama|Sci-Fi']


def test_movielens_rows_match_plain_parsing(tmp_path):
    rng = random.Random(8)
    ratings = [f"{rng.randint(1, 99)},{rng.choice([1, 2])},{rng.randint(1, 10) / 2},{rng.randint(0, 2**31)}"
               for _ in range(20)]
    root = write_movielens(tmp_path, ratings, MOVIES)
    expected = []
    for line in ratings:
        user, movie, rating, stamp = line.split(",")
        expected.append({"userId": int(user), "movieId": int(movie), "rating": float(rating), "timestamp": int(stamp)})
    assert list(movielens_20m(root)) == expected
    assert list(movielens_25m(root)) == expected
    titles = {1: ("Toy Story (1995)", "Adventure|Animation"), 2: ("City of Lost Children, The (1995)", "Drama|Sci-Fi")}
    joined = list(movielens_20m(root, include_movies_data=True))
    assert joined == [{**row, "title": titles[row["movieId"]][0], "genres": titles[row["movieId"]][1]} for row in expected]


@pytest.mark.parametrize("ratings, movies, message", [
    (["1,1,4.0,5", "1,1,four,5"], MOVIES, r"ratings.csv, line 3: column rating: expected float, got 'four'"),
    (["1,1,4.0"], MOVIES, r"ratings.csv, line 2: expected 4 columns, got 3"),
    (["1,1,4.0,5", "1,1,4.0,5", "x,1,4.0,5"], MOVIES, r"ratings.csv, line 4: column userId: expected int, got 'x'"),
])
def test_movielens_bad_rows_name_file_and_line(tmp_path, ratings, movies, message):
    with pytest.raises(ValueError, match=message):
        list(movielens_20m(write_movielens(tmp_path, ratings, movies)))


def test_movielens_join_errors(tmp_path):
    root = write_movielens(tmp_path, ["1,1,4.0,5", "1,7,4.0,5"], MOVIES)
    with pytest.raises(ValueError, match=r"ratings.csv, line 3: movieId 7 is not in movies.csv"):
        list(movielens_20m(root, include_movies_data=True))
    root = write_movielens(tmp_path, ["1,1,4.0,5"], ["1,Toy Story (1995)"])
    with pytest.raises(ValueError, match=r"movies.csv, line 2: expected 3 columns, got 2"):
        list(movielens_20m(root, include_movies_data=True))


def test_splits_are_disjoint_and_cover():
    source = IterableWrapper(range(1000))
    train, val = idx_split_train_val(source, 0.9)
    train_items, val_items = list(train), list(val)
    assert sorted(train_items + val_items) == list(range(1000))
    assert val_items == [i for i in range(1000) if i % 100 >= 90]
    train, val = rand_split_train_val(source, 0.75, random_seed=3)
    first = list(train)
    assert first == list(train)  # the same draws on every pass
    assert sorted(first + list(val)) == list(range(1000))
    assert 650 < len(first) < 850
    with pytest.raises(ValueError, match=r"train_perc must be in range \(0.0, 1.0\), got 1.0"):
        idx_split_train_val(source, 1.0)
    with pytest.raises(ValueError, match="train_perc must be in range"):
        rand_split_train_val(source, 0.0)


def test_random_rec_dataset():
    dataset = RandomRecDataset(keys=["a", "b"], batch_size=6, hash_sizes=[5, 50], ids_per_features=[3, 1],
                               min_ids_per_features=[1, 0], num_dense=4, manual_seed=11, num_batches=5,
                               num_generated_batches=2)
    batches = list(dataset)
    assert len(batches) == len(dataset) == 5
    assert batches[2] is batches[0]  # two generated batches, cycled
    for batch in batches[:2]:
        kjt = batch.sparse_features
        assert kjt.keys() == ["a", "b"] and kjt.stride() == 6
        a, b = kjt["a"], kjt["b"]
        assert all(1 <= n <= 3 for n in a.lengths().tolist()) and all(0 <= n <= 1 for n in b.lengths().tolist())
        assert all(0 <= v < 5 for v in a.values().tolist()) and all(0 <= v < 50 for v in b.values().tolist())
        assert batch.dense_features.shape == (6, 4) and set(batch.labels.tolist()) <= {0, 1}
    again = list(RandomRecDataset(keys=["a", "b"], batch_size=6, hash_sizes=[5, 50], ids_per_features=[3, 1],
                                  min_ids_per_features=[1, 0], num_dense=4, manual_seed=11, num_batches=1))
    assert again[0].sparse_features.values().tolist() == batches[0].sparse_features.values().tolist()
    fresh = RandomRecDataset(keys=["a"], batch_size=2, num_batches=3, num_generated_batches=-1, manual_seed=0)
    drawn = list(fresh)
    assert len(drawn) == 3 and drawn[0] is not drawn[1]
    with pytest.raises(ValueError, match=r"length of hash_sizes \(1\) must be equal to the number of keys \(2\)"):
        RandomRecDataset(keys=["a", "b"], batch_size=2, hash_sizes=[5])
    with pytest.raises(ValueError, match=r"key 'a': need 0 <= min ids \(3\) <= ids \(2\)"):
        RandomRecDataset(keys=["a"], batch_size=2, ids_per_feature=2, min_ids_per_features=[3])


def rank_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    pos, neg = scores[labels == 1], scores[labels == 0]
    return float(((pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()) / (len(pos) * len(neg)))


def test_generated_criteo_file_is_readable_and_learnable(tmp_path):
    path = str(tmp_path / "synthetic.tsv")
    probability = generate_criteo_tsv(path, 3000, seed=5)
    rows = list(criteo_kaggle(path))
    assert len(rows) == len(probability) == 3000
    labels = np.array([row["label"] for row in rows])
    # Labels follow the planted probabilities: the rate matches, and the probabilities rank them.
    assert abs(labels.mean() - probability.mean()) < 0.03
    assert rank_auc(probability, labels) > 0.75
    # The informative columns take few values; the others many; some fields are missing.
    assert len({row["cat_0"] for row in rows}) <= 40 < len({row["cat_5"] for row in rows})
    assert any(row["cat_5"] == "" for row in rows) and all(row["cat_0"] for row in rows)
    # The same seed plants the same click model.
    again = generate_criteo_tsv(str(tmp_path / "again.tsv"), 3000, seed=5)
    np.testing.assert_array_equal(again, probability)
    unlabelled = generate_criteo_tsv(str(tmp_path / "test.txt"), 5, with_label=False)
    assert len(unlabelled) == 5 and all("label" not in row for row in criteo_kaggle(str(tmp_path / "test.txt")))
    with pytest.raises(ValueError, match="num_rows must be a positive int, got 0"):
        generate_criteo_tsv(path, 0)
    with pytest.raises(ValueError, match=r"informative_cats must be in \[0, 26\)"):
        generate_criteo_tsv(path, 10, informative_cats=(26,))
