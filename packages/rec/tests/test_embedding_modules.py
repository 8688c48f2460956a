"""EmbeddingBagCollection and EmbeddingCollection against a float64 per-table, per-bag loop."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from emberrec import (
    DataType,
    EmbeddingBagCollection,
    EmbeddingBagConfig,
    EmbeddingCollection,
    EmbeddingConfig,
    KeyedJaggedTensor,
    PoolingType,
)

TABLES = [
    EmbeddingBagConfig(num_embeddings=7, embedding_dim=3, name="t0", feature_names=["f0"]),
    EmbeddingBagConfig(num_embeddings=5, embedding_dim=4, name="t1", feature_names=["f1", "f2"],
                       pooling=PoolingType.MEAN),
]


def random_kjt(rng, keys, rows_per_key, stride, weighted, max_len=4, variable=None):
    lengths, values = [], []
    for key in keys:
        for _ in range(variable[key] if variable else stride):
            n = int(rng.integers(0, max_len + 1))
            lengths.append(n)
            values += rng.integers(0, rows_per_key[key], n).tolist()
    weights = ember.tensor(rng.uniform(0.5, 2, len(values))) if weighted else None
    return KeyedJaggedTensor.from_lengths_sync(
        keys, ember.tensor(values, dtype=ember.int64), ember.tensor(lengths, dtype=ember.int64), weights,
        stride_per_key_per_rank=[[variable[k]] for k in keys] if variable else None)


def pooled_reference(weight, jt, mode, weights=None):
    """[B, D] float64: each bag's rows (scaled by weights) summed, or averaged."""
    w = weight.astype(np.float64)
    out = np.zeros((len(jt.lengths().tolist()), w.shape[1]))
    ids = jt.values().tolist()
    per = weights if weights is not None else np.ones(len(ids))
    start = 0
    for b, n in enumerate(jt.lengths().tolist()):
        for j in range(start, start + n):
            out[b] += per[j] * w[ids[j]]
        if mode == PoolingType.MEAN and n:
            out[b] /= n
        start += n
    return out


def float64_ebc(tables, is_weighted=False):
    # Weighted features pool by SUM only (as torch's embedding_bag).
    tables = [EmbeddingBagConfig(**{**c.__dict__, **({"pooling": PoolingType.SUM} if is_weighted else {})})
              for c in tables]
    ebc = EmbeddingBagCollection(tables, is_weighted=is_weighted)
    return ebc.to(ember.float64)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 5), st.booleans(), st.integers(0, 2**16))
def test_ebc_forward_and_backward_equal_the_per_table_loop(stride, weighted, seed):
    rng = np.random.default_rng(seed)
    ebc = float64_ebc(TABLES, is_weighted=weighted)
    tables = ebc.embedding_bag_configs()
    kjt = random_kjt(rng, ["f2", "f0", "f1"], {"f0": 7, "f1": 5, "f2": 5}, stride, weighted)
    if weighted:
        kjt = kjt.to("cpu", dtype=ember.float64)
    kt = ebc(kjt)
    assert kt.keys() == ["f0", "f1", "f2"] and kt.length_per_key() == [3, 4, 4]
    assert kt.offset_per_key() == [0, 3, 7, 11]
    upstream = rng.standard_normal((stride, 11))
    want_grad = {name: np.zeros(bag.weight.shape) for name, bag in ebc.embedding_bags.items()}
    for config in tables:
        weight = ebc.embedding_bags[config.name].weight.detach().numpy()
        for feature in config.feature_names:
            jt = kjt[feature]
            w = jt.weights().numpy() if weighted else None
            np.testing.assert_allclose(kt[feature].detach().numpy(), pooled_reference(weight, jt, config.pooling, w),
                                       rtol=1e-12, atol=1e-12)
            # Gradient of <upstream, pooled> w.r.t. the table: each bag's upstream row, scaled.
            g = upstream[:, kt.offset_per_key()[kt.keys().index(feature)]:][:, :config.embedding_dim]
            ids, start = jt.values().tolist(), 0
            for b, n in enumerate(jt.lengths().tolist()):
                for j in range(start, start + n):
                    scale = (w[j] if weighted else 1.0) / (n if config.pooling == PoolingType.MEAN else 1)
                    want_grad[config.name][ids[j]] += scale * g[b]
                start += n
    (kt.values() * ember.tensor(upstream)).sum().backward()
    for name, bag in ebc.embedding_bags.items():
        np.testing.assert_allclose(bag.weight.grad.numpy(), want_grad[name], rtol=1e-12, atol=1e-12)


def test_ebc_with_a_variable_batch_per_key_expands_through_inverse_indices():
    rng = np.random.default_rng(1)
    ebc = float64_ebc(TABLES)
    keys = ["f0", "f1", "f2"]
    kjt = random_kjt(rng, keys, {"f0": 7, "f1": 5, "f2": 5}, None, False, variable={"f0": 2, "f1": 3, "f2": 1})
    inverse = ember.tensor([[0, 1, 1, 0], [2, 0, 1, 2], [0, 0, 0, 0]])
    vbe = KeyedJaggedTensor.from_lengths_sync(keys, kjt.values(), kjt.lengths(),
                                              stride_per_key_per_rank=[[2], [3], [1]],
                                              inverse_indices=(keys, inverse))
    kt = ebc(vbe)
    assert kt.values().shape == (4, 11)
    for i, (config, feature) in enumerate([(TABLES[0], "f0"), (TABLES[1], "f1"), (TABLES[1], "f2")]):
        weight = ebc.embedding_bags[config.name].weight.detach().numpy()
        per_key = pooled_reference(weight, vbe[feature], config.pooling)
        np.testing.assert_allclose(kt[feature].detach().numpy(), per_key[inverse[i].tolist()], rtol=1e-12)
    with pytest.raises(ValueError, match="variable batch per key needs inverse_indices"):
        ebc(KeyedJaggedTensor.from_lengths_sync(keys, kjt.values(), kjt.lengths(),
                                                stride_per_key_per_rank=[[2], [3], [1]]))


def test_ebc_empty_bags_pool_to_zero_and_state_dict_names_match_torchrec():
    ebc = EmbeddingBagCollection(TABLES)
    assert sorted(ebc.state_dict()) == ["embedding_bags.t0.weight", "embedding_bags.t1.weight"]
    kjt = KeyedJaggedTensor.from_lengths_sync(["f0", "f1", "f2"], ember.empty(0, dtype=ember.int64),
                                              ember.zeros(6, dtype=ember.int64))
    assert ember.equal(ebc(kjt).values(), ember.zeros(2, 11))
    bound = TABLES[0].get_weight_init_max()
    assert float(ebc.embedding_bags["t0"].weight.abs().max()) <= bound


def test_init_fn_and_ebc_trains_with_an_ember_optimizer():
    config = EmbeddingBagConfig(num_embeddings=4, embedding_dim=2, name="t", feature_names=["f"],
                                init_fn=lambda w: w.fill_(1.0))
    ebc = EmbeddingBagCollection([config])
    assert ember.equal(ebc.embedding_bags["t"].weight, ember.ones(4, 2))
    opt = ember.optim.SGD(ebc.parameters(), lr=0.5)
    kjt = KeyedJaggedTensor.from_lengths_sync(["f"], ember.tensor([3, 3]), ember.tensor([2]))
    ebc(kjt).values().sum().backward()
    opt.step()
    assert ebc.embedding_bags["t"].weight.tolist() == [[1, 1], [1, 1], [1, 1], [0, 0]]


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 4), st.booleans(), st.integers(0, 2**16))
def test_ec_returns_the_rows_of_every_index(stride, need_indices, seed):
    rng = np.random.default_rng(seed)
    tables = [EmbeddingConfig(num_embeddings=6, embedding_dim=3, name="a", feature_names=["x", "y"]),
              EmbeddingConfig(num_embeddings=4, embedding_dim=3, name="b", feature_names=["z"])]
    ec = EmbeddingCollection(tables, need_indices=need_indices).to(ember.float64)
    kjt = random_kjt(rng, ["z", "y", "x"], {"x": 6, "y": 6, "z": 4}, stride, False)
    out = ec(kjt)
    assert list(out) == ["x", "y", "z"]
    upstream = {}
    for table, feature in [("a", "x"), ("a", "y"), ("b", "z")]:
        weight = ec.embeddings[table].weight.detach().numpy()
        jt = out[feature]
        ids = kjt[feature].values().tolist()
        np.testing.assert_array_equal(jt.values().detach().numpy(), weight[ids].reshape(len(ids), 3))
        assert jt.lengths().tolist() == kjt[feature].lengths().tolist()
        assert (jt.weights_or_none() is not None) == need_indices
        upstream[feature] = rng.standard_normal((len(ids), 3))
    sum((out[f].values() * ember.tensor(g)).sum() for f, g in upstream.items()).backward()
    for table, features in [("a", ["x", "y"]), ("b", ["z"])]:
        want = np.zeros(ec.embeddings[table].weight.shape)
        for f in features:
            np.add.at(want, kjt[f].values().numpy(), upstream[f])
        np.testing.assert_allclose(ec.embeddings[table].weight.grad.numpy(), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("make, error, message", [
    (lambda: EmbeddingBagCollection([TABLES[0], TABLES[0]]), ValueError, "duplicate table name 't0'"),
    (lambda: EmbeddingBagCollection([TABLES[0], EmbeddingBagConfig(num_embeddings=2, embedding_dim=2, name="u",
                                                                   feature_names=["f0"])]),
     ValueError, "feature 'f0' is looked up in two tables"),
    (lambda: EmbeddingBagCollection([EmbeddingConfig(num_embeddings=2, embedding_dim=2, name="u")]), TypeError,
     "expected EmbeddingBagConfig tables"),
    (lambda: EmbeddingBagCollection([EmbeddingBagConfig(num_embeddings=2, embedding_dim=2, name="u",
                                                        data_type=DataType.INT8)]),
     ValueError, "quantized tables live in emberrec.quant"),
    (lambda: EmbeddingCollection([EmbeddingConfig(num_embeddings=2, embedding_dim=2, name="u"),
                                  EmbeddingConfig(num_embeddings=2, embedding_dim=3, name="v")]),
     ValueError, "same embedding_dim"),
    (lambda: EmbeddingBagCollection(TABLES, is_weighted=True), ValueError,
     "table 't1' pools by MEAN; weighted features"),
    (lambda: EmbeddingBagConfig(num_embeddings=0, embedding_dim=2, name="u"), ValueError,
     "num_embeddings must be a positive int"),
    (lambda: EmbeddingBagConfig(num_embeddings=2, embedding_dim=2, name="u", pooling=PoolingType.NONE), ValueError,
     "pooled by SUM or MEAN"),
])
def test_bad_configurations(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_bad_inputs():
    ebc = EmbeddingBagCollection(TABLES)
    kjt = KeyedJaggedTensor.from_lengths_sync(["f0", "f1"], ember.tensor([1, 2]), ember.tensor([1, 1]))
    with pytest.raises(KeyError, match=r"lacks features \['f2'\]"):
        ebc(kjt)
    with pytest.raises(TypeError, match="expected a KeyedJaggedTensor"):
        ebc({"f0": ember.tensor([1])})
    weighted = EmbeddingBagCollection([TABLES[0], EmbeddingBagConfig(num_embeddings=5, embedding_dim=4, name="t1",
                                                                     feature_names=["f1", "f2"])], is_weighted=True)
    full = KeyedJaggedTensor.from_lengths_sync(["f0", "f1", "f2"], ember.tensor([1, 2, 3]), ember.tensor([1, 1, 1]))
    with pytest.raises(ValueError, match="is weighted but the KeyedJaggedTensor has no weights"):
        weighted(full)
    out_of_range = KeyedJaggedTensor.from_lengths_sync(["f0", "f1", "f2"], ember.tensor([7, 0, 0]),
                                                       ember.tensor([1, 1, 1]))
    with pytest.raises(IndexError, match=r"feature 'f0' \(table 't0', 7 rows\).*value 7"):
        ebc(out_of_range)
