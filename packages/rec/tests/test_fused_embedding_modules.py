"""FusedEmbeddingBagCollection: its fused update equals EmbeddingBagCollection + the same
ember.optim optimizer; checkpoints of tables and optimizer state round-trip."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from emberrec import EmbeddingBagCollection, EmbeddingBagConfig, KeyedJaggedTensor, PoolingType
from emberrec.modules.fused_embedding_modules import FusedEmbeddingBagCollection
from emberrec.optim import RowWiseAdagrad

TABLES = [
    EmbeddingBagConfig(num_embeddings=10, embedding_dim=4, name="t0", feature_names=["f0"]),
    EmbeddingBagConfig(num_embeddings=6, embedding_dim=8, name="t1", feature_names=["f1", "f2"],
                       pooling=PoolingType.MEAN),
    EmbeddingBagConfig(num_embeddings=5, embedding_dim=4, name="t2", feature_names=["f3"]),
]
KEYS = ["f3", "f0", "f1", "f2"]  # not the collection's order: the lookup permutes
ROWS = {"f0": 10, "f1": 6, "f2": 6, "f3": 5}


def batch(rng, stride=3, weighted=False):
    lengths = rng.integers(0, 4, stride * len(KEYS))
    values = np.concatenate([rng.integers(0, ROWS[k], lengths[i * stride:(i + 1) * stride].sum())
                             for i, k in enumerate(KEYS)])
    weights = ember.tensor(rng.uniform(0.5, 1.5, len(values)).astype(np.float32)) if weighted else None
    return KeyedJaggedTensor.from_lengths_sync(KEYS, ember.tensor(values), ember.tensor(lengths), weights)


def run_side_by_side(optimizer, kwargs, steps, tables=TABLES, weighted=False, looked_up=None):
    fused = FusedEmbeddingBagCollection(tables, optimizer, kwargs, is_weighted=weighted)
    dense = EmbeddingBagCollection(tables, is_weighted=weighted)
    dense.load_state_dict(fused.state_dict())
    initial = {k: v.clone() for k, v in fused.state_dict().items()}
    opt = optimizer(dense.parameters(), **kwargs)
    rng = np.random.default_rng(7)
    for _ in range(steps):
        kjt = batch(rng, weighted=weighted)
        if looked_up is not None:
            for t in tables:
                looked_up.setdefault(t.name, set()).update(v for f in t.feature_names for v in kjt[f].values().tolist())
        a, b = fused(kjt), dense(kjt)
        assert set(a.keys()) == set(b.keys())
        for key in b.keys():
            np.testing.assert_allclose(a[key].detach().numpy(), b[key].detach().numpy(), rtol=1e-5, atol=1e-6)
        upstream = rng.standard_normal(tuple(b.values().shape)).astype(np.float32)
        g = {k: ember.tensor(v) for k, v in zip(b.keys(), np.split(upstream, np.cumsum(b.length_per_key())[:-1], 1),
                                               strict=True)}
        sum((a[k] * g[k]).sum() for k in a.keys()).backward()
        opt.zero_grad()
        sum((b[k] * g[k]).sum() for k in b.keys()).backward()
        opt.step()
    return fused, dense, initial


@pytest.mark.parametrize("optimizer, kwargs, steps", [
    (ember.optim.SGD, {"lr": 0.1}, 4),
    (ember.optim.Adagrad, {"lr": 0.1, "eps": 1e-8}, 4),
    (RowWiseAdagrad, {"lr": 0.1, "eps": 1e-8}, 4),
    (ember.optim.Adam, {"lr": 0.05, "betas": (0.8, 0.9), "eps": 1e-6}, 1),
])
def test_fused_update_equals_the_dense_optimizer(optimizer, kwargs, steps):
    fused, dense, _ = run_side_by_side(optimizer, kwargs, steps)
    ours, theirs = fused.state_dict(), dense.state_dict()
    assert sorted(ours) == sorted(theirs) == ["embedding_bags.t0.weight", "embedding_bags.t1.weight",
                                              "embedding_bags.t2.weight"]
    for key in theirs:
        np.testing.assert_allclose(ours[key].numpy(), theirs[key].numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("optimizer, kwargs", [
    (RowWiseAdagrad, {"lr": 0.1, "eps": 1e-8, "weight_decay": 0.01}),
    (ember.optim.AdamW, {"lr": 0.05, "betas": (0.8, 0.9), "eps": 1e-6, "weight_decay": 0.01}),
])
def test_fused_update_with_decay_moves_the_rows_looked_up_only(optimizer, kwargs):
    # A dense optimizer decays every row (its gradient covers the whole table); the fused one
    # updates the rows a batch looked up, as sparse training does, and leaves the others.
    looked_up = {}
    fused, dense, initial = run_side_by_side(optimizer, kwargs, 1, looked_up=looked_up)
    ours, theirs = fused.state_dict(), dense.state_dict()
    for t in TABLES:
        key = f"embedding_bags.{t.name}.weight"
        rows = sorted(looked_up[t.name])
        others = sorted(set(range(t.num_embeddings)) - looked_up[t.name])
        np.testing.assert_allclose(ours[key].numpy()[rows], theirs[key].numpy()[rows], rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(ours[key].numpy()[others], initial[key].numpy()[others])


def test_weighted_fused_lookup():
    tables = [EmbeddingBagConfig(**{**t.__dict__, "pooling": PoolingType.SUM}) for t in TABLES]
    run_side_by_side(ember.optim.SGD, {"lr": 0.2}, 3, tables=tables, weighted=True)


def test_tables_are_not_parameters_and_features_come_grouped():
    fused = FusedEmbeddingBagCollection(TABLES, ember.optim.SGD, {"lr": 0.1})
    assert list(fused.parameters()) == []
    # SUM tables t0 and t2 share one TBE, MEAN table t1 has its own.
    assert fused(batch(np.random.default_rng(0))).keys() == ["f0", "f3", "f1", "f2"]


def test_rowwise_adagrad_against_numpy():
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal((4, 3))
    p = ember.nn.Parameter(ember.tensor(w0))
    opt = RowWiseAdagrad([p], lr=0.5, eps=1e-10, weight_decay=0.1)
    want, acc = w0.copy(), np.zeros(4)
    for _ in range(3):
        g = rng.standard_normal((4, 3))
        p.grad = ember.tensor(g)
        opt.step()
        g = g + 0.1 * want
        acc += (g * g).mean(1)
        want -= 0.5 * g / (np.sqrt(acc)[:, None] + 1e-10)
    np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-12)


def test_fused_optimizer_checkpoint_resumes_identically():
    kwargs = {"lr": 0.1, "eps": 1e-8}
    first = FusedEmbeddingBagCollection(TABLES, ember.optim.Adagrad, kwargs)
    rng = np.random.default_rng(11)
    for _ in range(2):
        first(batch(rng)).values().sum().backward()
    saved_model = {k: v.clone() for k, v in first.state_dict().items()}
    saved_optim = first.fused_optimizer().state_dict()
    assert sorted(saved_optim["state"]["embedding_bags.t1.weight"]) == ["t1.momentum1"]
    assert saved_optim["param_groups"][0]["params"] == ["embedding_bags.t0.weight", "embedding_bags.t2.weight"]
    saved_optim = {"state": {k: {n: t.clone() for n, t in s.items()} for k, s in saved_optim["state"].items()},
                   "param_groups": saved_optim["param_groups"]}
    second = FusedEmbeddingBagCollection(TABLES, ember.optim.Adagrad, kwargs)
    second.load_state_dict(saved_model)
    second.fused_optimizer().load_state_dict(saved_optim)
    probe = batch(rng)
    first(probe).values().sum().backward()
    second(probe).values().sum().backward()
    for key, value in first.state_dict().items():
        assert ember.equal(value, second.state_dict()[key]), key


def test_learning_rate_set_through_param_groups_reaches_the_kernels():
    fused = FusedEmbeddingBagCollection(TABLES[:1], ember.optim.SGD, {"lr": 0.1})
    optimizer = fused.fused_optimizer()
    for group in optimizer.param_groups:
        group["lr"] = 0.0
    optimizer.step()
    before = fused.state_dict()["embedding_bags.t0.weight"].clone()
    kjt = KeyedJaggedTensor.from_lengths_sync(["f0"], ember.tensor([1, 2]), ember.tensor([2]))
    fused(kjt).values().sum().backward()
    assert ember.equal(fused.state_dict()["embedding_bags.t0.weight"], before)


@pytest.mark.parametrize("optimizer, kwargs, message", [
    (ember.optim.SGD, {"lr": 0.1, "momentum": 0.9}, "momentum=0.9 is not supported"),
    (ember.optim.RMSprop, {"lr": 0.1}, "no fused kernel for optimizer RMSprop"),
    (ember.optim.Adagrad, {"lr": 0.1, "foo": 1}, "argument 'foo' is not supported"),
    (ember.optim.Adam, {"lr": 0.1, "weight_decay": 0.1}, "weight_decay=0.1 is not supported"),
])
def test_unsupported_optimizers_are_refused(optimizer, kwargs, message):
    with pytest.raises(ValueError, match=message):
        FusedEmbeddingBagCollection(TABLES, optimizer, kwargs)


def test_bad_inputs():
    fused = FusedEmbeddingBagCollection(TABLES, ember.optim.SGD, {"lr": 0.1})
    with pytest.raises(KeyError, match=r"lacks features \['f3'\]"):
        fused(KeyedJaggedTensor.from_lengths_sync(["f0", "f1", "f2"], ember.tensor([1]), ember.tensor([1, 0, 0])))
    too_big = KeyedJaggedTensor.from_lengths_sync(KEYS, ember.tensor([5]), ember.tensor([1, 0, 0, 0]))
    with pytest.raises(IndexError):
        fused(too_big)
    with pytest.raises(ValueError, match="pooled by SUM only"):
        FusedEmbeddingBagCollection(TABLES, ember.optim.SGD, {"lr": 0.1}, is_weighted=True)
    with pytest.raises(NotImplementedError, match="CPU only"):
        FusedEmbeddingBagCollection(TABLES, ember.optim.SGD, {"lr": 0.1}, device="cuda")
