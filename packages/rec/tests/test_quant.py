"""The quantized EmbeddingBagCollection: its lookups equal a float64 loop over the dequantized
tables, stay within the quantization error of the float module, and its tables round-trip through
state_dict."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from emberrec import DataType, EmbeddingBagCollection, EmbeddingBagConfig, KeyedJaggedTensor, PoolingType
from emberrec.quant import EmbeddingBagCollection as QuantEmbeddingBagCollection
from emberrec.quant import quantize_embeddings

TABLES = [
    EmbeddingBagConfig(num_embeddings=12, embedding_dim=8, name="t0", feature_names=["f0"]),
    EmbeddingBagConfig(num_embeddings=9, embedding_dim=16, name="t1", feature_names=["f1", "f2"],
                       pooling=PoolingType.MEAN),
]
KEYS = ["f2", "f0", "f1"]
ROWS = {"f0": 12, "f1": 9, "f2": 9}


def batch(seed, stride=4, weighted=False):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 4, stride * len(KEYS))
    values = np.concatenate([rng.integers(0, ROWS[k], lengths[i * stride:(i + 1) * stride].sum())
                             for i, k in enumerate(KEYS)])
    weights = ember.tensor(rng.uniform(0.5, 1.5, len(values)).astype(np.float32)) if weighted else None
    return KeyedJaggedTensor.from_lengths_sync(KEYS, ember.tensor(values), ember.tensor(lengths), weights)


def dequantized(quantized, config):
    """The float64 rows the quantized module holds for one table."""
    state = quantized.state_dict()
    rows = state[f"embedding_bags.{config.name}.weight"]
    if config.data_type == DataType.FP32:
        return rows.numpy().view(np.float32).astype(np.float64)
    if config.data_type == DataType.FP16:
        return rows.numpy().view(np.float16).astype(np.float64)
    scale_bias = state[f"embedding_bags.{config.name}.weight_qscaleshift"].numpy().view(np.float16).astype(np.float64)
    bits = {DataType.INT8: 8, DataType.INT4: 4, DataType.INT2: 2}[config.data_type]
    codes = np.unpackbits(rows.numpy()[:, :, None], axis=2, bitorder="little").reshape(rows.shape[0], -1)
    codes = codes.reshape(rows.shape[0], -1, bits) @ (1 << np.arange(bits))
    return codes[:, :config.embedding_dim] * scale_bias[:, :1] + scale_bias[:, 1:]


def pooled(rows, jt, mode, weights=None):
    out = np.zeros((len(jt.lengths().tolist()), rows.shape[1]))
    ids, start = jt.values().tolist(), 0
    for b, n in enumerate(jt.lengths().tolist()):
        for j in range(start, start + n):
            out[b] += (1.0 if weights is None else weights[j]) * rows[ids[j]]
        if mode == PoolingType.MEAN and n:
            out[b] /= n
        start += n
    return out


@pytest.mark.parametrize("data_type, bound", [
    (DataType.FP32, 0.0), (DataType.FP16, 1e-3), (DataType.INT8, 4e-3), (DataType.INT4, 6e-2), (DataType.INT2, 0.3)])
def test_lookups_equal_the_dequantized_tables(data_type, bound):
    ember.manual_seed(0)
    float_ebc = EmbeddingBagCollection(TABLES)
    quantized = quantize_embeddings(float_ebc, data_type)
    assert isinstance(quantized, QuantEmbeddingBagCollection)
    kjt = batch(1)
    got, want = quantized(kjt), float_ebc(kjt)
    assert got.keys() == ["f0", "f1", "f2"] and got.values().dtype == ember.float32
    for config in quantized.embedding_bag_configs():
        rows = dequantized(quantized, config)
        for feature in config.feature_names:
            reference = pooled(rows, kjt[feature], config.pooling)
            np.testing.assert_allclose(got[feature].numpy(), reference, rtol=1e-5, atol=1e-5)
            # Within the quantization error of the float lookups (tables hold values in ±0.35).
            assert np.abs(got[feature].numpy() - want[feature].detach().numpy()).max() <= bound * 3 + 1e-7


def test_weighted_lookups_and_per_table_types():
    ember.manual_seed(1)
    tables = [EmbeddingBagConfig(**{**t.__dict__, "pooling": PoolingType.SUM}) for t in TABLES]
    float_ebc = EmbeddingBagCollection(tables, is_weighted=True)
    quantized = QuantEmbeddingBagCollection.from_float(float_ebc, DataType.INT4,
                                                       per_table_data_type={"t1": DataType.INT8})
    assert [c.data_type for c in quantized.embedding_bag_configs()] == [DataType.INT4, DataType.INT8]
    kjt = batch(2, weighted=True)
    got = quantized(kjt)
    for config in quantized.embedding_bag_configs():
        rows = dequantized(quantized, config)
        for feature in config.feature_names:
            jt = kjt[feature]
            np.testing.assert_allclose(got[feature].numpy(), pooled(rows, jt, PoolingType.SUM, jt.weights().numpy()),
                                       rtol=1e-5, atol=1e-5)


def test_state_dict_round_trip_and_half_output():
    float_ebc = EmbeddingBagCollection(TABLES)
    quantized = quantize_embeddings(float_ebc, DataType.INT8, output_dtype=ember.float16)
    fresh = QuantEmbeddingBagCollection(quantized.embedding_bag_configs(), output_dtype=ember.float16)
    fresh.load_state_dict(quantized.state_dict())
    kjt = batch(3)
    assert fresh(kjt).values().dtype == ember.float16
    assert ember.equal(fresh(kjt).values(), quantized(kjt).values())
    assert sorted(quantized.state_dict()) == ["embedding_bags.t0.weight", "embedding_bags.t0.weight_qscaleshift",
                                              "embedding_bags.t1.weight", "embedding_bags.t1.weight_qscaleshift"]


def test_quantize_embeddings_swaps_collections_inside_a_model():
    class Model(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.sparse = EmbeddingBagCollection(TABLES)
            self.dense = ember.nn.Linear(40, 1)

        def forward(self, kjt):
            return self.dense(self.sparse(kjt).values())

    model = Model()
    kjt = batch(4)
    want = model(kjt).detach().numpy()
    copy = quantize_embeddings(model, DataType.INT8, inplace=False)
    assert isinstance(model.sparse, EmbeddingBagCollection)
    assert isinstance(copy.sparse, QuantEmbeddingBagCollection)
    np.testing.assert_allclose(copy(kjt).detach().numpy(), want, atol=0.02)
    quantize_embeddings(model, ember.float16)
    assert isinstance(model.sparse, QuantEmbeddingBagCollection)


def test_bad_input():
    with pytest.raises(ValueError, match="cannot quantize embeddings to"):
        quantize_embeddings(EmbeddingBagCollection(TABLES), ember.int64)
    with pytest.raises(ValueError, match="stores FP32, FP16, INT8, INT4 or INT2 tables, not BF16"):
        QuantEmbeddingBagCollection([EmbeddingBagConfig(num_embeddings=2, embedding_dim=4, name="t",
                                                        data_type=DataType.BF16)])
    with pytest.raises(ValueError, match="per_table_data_type names tables the module does not have"):
        QuantEmbeddingBagCollection.from_float(EmbeddingBagCollection(TABLES), per_table_data_type={"zz": DataType.INT8})
    quantized = quantize_embeddings(EmbeddingBagCollection(TABLES), DataType.INT8)
    with pytest.raises(KeyError, match=r"lacks features \['f2'\]"):
        quantized(KeyedJaggedTensor.from_lengths_sync(["f0", "f1"], ember.tensor([1]), ember.tensor([1, 0])))
    with pytest.raises(TypeError, match="expected a KeyedJaggedTensor"):
        quantized(ember.tensor([1]))
    with pytest.raises(IndexError, match="12"):
        quantized(KeyedJaggedTensor.from_lengths_sync(KEYS, ember.tensor([12]), ember.tensor([0, 1, 0])))
