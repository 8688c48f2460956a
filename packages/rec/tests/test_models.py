"""MLP, cross nets, feature processors, DLRM and the two-tower models against float64 NumPy
references; a short DLRM training run and a planted two-tower retrieval problem end to end."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

import ember
from emberrec import EmbeddingBagCollection, EmbeddingBagConfig, KeyedJaggedTensor
from emberrec.datasets.batch import Batch
from emberrec.models.dlrm import (
    DLRM,
    DLRM_DCN,
    DenseArch,
    DLRM_Projection,
    DLRMTrain,
    InteractionArch,
    InteractionDCNArch,
    InteractionProjectionArch,
    OverArch,
    SparseArch,
    choose,
)
from emberrec.models.two_tower import (
    TwoTower,
    TwoTowerRetrieval,
    TwoTowerTrainTask,
    convert_TwoTower_to_TwoTowerRetrieval,
    get_index,
)
from emberrec.modules.crossnet import CrossNet, LowRankCrossNet, LowRankMixtureCrossNet, VectorCrossNet
from emberrec.modules.feature_processor import PositionWeightedModule, PositionWeightedProcessor
from emberrec.modules.mlp import MLP, Perceptron


def f64(t: ember.Tensor) -> np.ndarray:
    return t.detach().numpy().astype(np.float64)


def relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def linear_ref(layer: ember.nn.Linear, x: np.ndarray) -> np.ndarray:
    out = x @ f64(layer.weight).T
    return out if layer.bias is None else out + f64(layer.bias)


def mlp_ref(mlp: MLP, x: np.ndarray, last_relu: bool = True) -> np.ndarray:
    layers = list(mlp._mlp)
    for i, perceptron in enumerate(layers):
        x = linear_ref(perceptron._linear, x)
        if last_relu or i < len(layers) - 1:
            x = relu(x)
    return x


def kjt_from_bags(keys: list[str], bags: dict[str, list[list[int]]]) -> KeyedJaggedTensor:
    values = [v for key in keys for bag in bags[key] for v in bag]
    lengths = [len(bag) for key in keys for bag in bags[key]]
    return KeyedJaggedTensor.from_lengths_sync(keys=keys, values=ember.tensor(values, dtype=ember.int64),
                                               lengths=ember.tensor(lengths, dtype=ember.int32))


# -- MLP ----------------------------------------------------------------------------------------


def test_perceptron_and_mlp_match_numpy():
    ember.manual_seed(0)
    x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    layer = Perceptron(5, 3)
    np.testing.assert_allclose(f64(layer(ember.from_numpy(x))), relu(linear_ref(layer._linear, x)), rtol=1e-5, atol=1e-6)

    mlp = MLP(5, [7, 3])
    np.testing.assert_allclose(f64(mlp(ember.from_numpy(x))), mlp_ref(mlp, x), rtol=1e-5, atol=1e-6)
    linear_last = MLP(5, [7, 3], activation_on_last=False)
    np.testing.assert_allclose(f64(linear_last(ember.from_numpy(x))), mlp_ref(linear_last, x, last_relu=False),
                               rtol=1e-5, atol=1e-6)

    sig = MLP(5, [2], activation="sigmoid")
    np.testing.assert_allclose(f64(sig(ember.from_numpy(x))), sigmoid(linear_ref(sig._mlp[0]._linear, x)),
                               rtol=1e-5, atol=1e-6)

    swish = MLP(5, [6], activation="swish_layernorm")
    h = linear_ref(swish._mlp[0]._linear, x)
    normed = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(f64(swish(ember.from_numpy(x))), h * sigmoid(normed), rtol=1e-4, atol=1e-5)

    per_layer = MLP(5, [4, 4], activation=ember.nn.ReLU)  # a Module class: one instance per layer
    assert per_layer._mlp[0]._activation_fn is not per_layer._mlp[1]._activation_fn


def test_mlp_rejects_bad_arguments():
    with pytest.raises(ValueError, match="activation names are 'relu', 'sigmoid' and 'swish_layernorm', got 'tanh'"):
        MLP(4, [3], activation="tanh")
    with pytest.raises(ValueError, match="at least one layer size"):
        MLP(4, [])
    with pytest.raises(ValueError, match="positive ints"):
        MLP(0, [3])
    with pytest.raises(TypeError, match="must be an nn.Module"):
        MLP(4, [3], activation=int)


# -- cross nets ---------------------------------------------------------------------------------


def crossnet_ref(net: ember.nn.Module, x: np.ndarray) -> np.ndarray:
    x0, xl = x, x
    if isinstance(net, CrossNet):
        for W, b in zip(net.kernels, net.bias, strict=True):
            xl = x0 * (xl @ f64(W).T + f64(b)[:, 0]) + xl
    elif isinstance(net, LowRankCrossNet):
        for U, V, b in zip(net.W_kernels, net.V_kernels, net.bias, strict=True):
            xl = x0 * ((xl @ f64(V).T) @ f64(U).T + f64(b)) + xl
    elif isinstance(net, VectorCrossNet):
        for w, b in zip(net.kernels, net.bias, strict=True):
            xl = x0 * (xl @ f64(w)) + f64(b)[:, 0] + xl
    else:  # LowRankMixtureCrossNet with relu
        for layer in range(net._num_layers):
            U, V, C = f64(net.U_kernels[layer]), f64(net.V_kernels[layer]), f64(net.C_kernels[layer])
            b = f64(net.bias[layer])[:, 0]
            experts = [x0 * (relu(relu(xl @ V[k].T) @ C[k].T) @ U[k].T + b) for k in range(net._num_experts)]
            if net.gates is None:
                xl = experts[0] + xl
            else:
                gates = np.stack([xl @ f64(g.weight)[0] for g in net.gates], 1)  # (B, K)
                gates = np.exp(gates - gates.max(1, keepdims=True))
                gates /= gates.sum(1, keepdims=True)
                xl = sum(gates[:, k:k + 1] * experts[k] for k in range(net._num_experts)) + xl
    return xl


@pytest.mark.parametrize("make", [
    lambda: CrossNet(6, 2),
    lambda: LowRankCrossNet(6, 3, low_rank=2),
    lambda: VectorCrossNet(6, 3),
    lambda: LowRankMixtureCrossNet(6, 2, num_experts=3, low_rank=2),
    lambda: LowRankMixtureCrossNet(6, 2, num_experts=1, low_rank=2),
], ids=["CrossNet", "LowRankCrossNet", "VectorCrossNet", "LowRankMixtureCrossNet-3", "LowRankMixtureCrossNet-1"])
def test_crossnets_match_numpy_and_train(make):
    ember.manual_seed(1)
    net = make()
    with ember.no_grad():  # non-zero biases, so the reference checks where they enter
        for b in net.bias:
            b.copy_(ember.randn(*b.shape) * 0.1)
    x = np.random.default_rng(1).standard_normal((5, 6)).astype(np.float32)
    out = net(ember.from_numpy(x))
    assert out.shape == (5, 6)
    np.testing.assert_allclose(f64(out), crossnet_ref(net, x.astype(np.float64)), rtol=1e-4, atol=1e-5)
    out.sum().backward()
    assert all(p.grad is not None and float(p.grad.abs().sum()) > 0 for p in net.parameters())


def test_crossnet_rejects_bad_sizes():
    with pytest.raises(ValueError, match="low_rank must be an int >= 1, got 0"):
        LowRankCrossNet(4, 2, low_rank=0)
    with pytest.raises(ValueError, match="num_layers must be an int >= 1"):
        CrossNet(4, 0)


# -- DLRM ---------------------------------------------------------------------------------------


def interaction_ref(dense: np.ndarray, sparse: np.ndarray) -> np.ndarray:
    combined = np.concatenate([dense[:, None, :], sparse], axis=1)  # (B, F + 1, D)
    n = combined.shape[1]
    pairs = [np.einsum("bd,bd->b", combined[:, i], combined[:, j]) for i in range(n) for j in range(i + 1, n)]
    return np.concatenate([dense, np.stack(pairs, 1)], axis=1)


def test_interaction_arch_matches_numpy():
    rng = np.random.default_rng(2)
    B, F, D = 3, 4, 5
    dense = rng.standard_normal((B, D)).astype(np.float32)
    sparse = rng.standard_normal((B, F, D)).astype(np.float32)
    out = InteractionArch(F)(ember.from_numpy(dense), ember.from_numpy(sparse))
    assert out.shape == (B, D + choose(F + 1, 2)) == (B, D + F + choose(F, 2))
    np.testing.assert_allclose(f64(out), interaction_ref(dense.astype(np.float64), sparse.astype(np.float64)),
                               rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=r"dense \(B, D\) and sparse \(B, F, D\) features, got \(3, 5\) and \(3, 4, 6\)"):
        InteractionArch(F)(ember.from_numpy(dense), ember.zeros(3, 4, 6))
    with pytest.raises(ValueError, match="built for 4 sparse features, got 2"):
        InteractionArch(F)(ember.from_numpy(dense), ember.zeros(3, 2, 5))


D = 4
BAGS = {  # three features over two tables (t1 serves f1 and f3), bags of 0 to 3 ids, batch 3
    "f1": [[1, 2], [], [9]],
    "f2": [[0], [3, 3, 4], [5]],
    "f3": [[7], [6], []],
}


def small_ebc(dims: tuple[int, int] = (D, D)) -> EmbeddingBagCollection:
    return EmbeddingBagCollection(tables=[
        EmbeddingBagConfig(name="t1", embedding_dim=dims[0], num_embeddings=10, feature_names=["f1", "f3"]),
        EmbeddingBagConfig(name="t2", embedding_dim=dims[1], num_embeddings=8, feature_names=["f2"]),
    ])


def pooled_ref(ebc: EmbeddingBagCollection, names: list[str]) -> np.ndarray:
    table_of = {f: c.name for c in ebc.embedding_bag_configs() for f in c.feature_names}
    out = []
    for name in names:
        weight = f64(ebc.embedding_bags[table_of[name]].weight)
        out.append([weight[bag].sum(0) if bag else np.zeros(weight.shape[1]) for bag in BAGS[name]])
    return np.asarray(out).transpose(1, 0, 2)  # (B, F, D)


def test_dlrm_forward_matches_numpy():
    ember.manual_seed(3)
    ebc = small_ebc()
    model = DLRM(ebc, dense_in_features=6, dense_arch_layer_sizes=[5, D], over_arch_layer_sizes=[7, 1])
    assert model.sparse_arch.sparse_feature_names == ["f1", "f3", "f2"]
    # The KJT's key order differs from the tables' feature order: SparseArch reorders.
    kjt = kjt_from_bags(["f2", "f1", "f3"], BAGS)
    x = np.random.default_rng(3).standard_normal((3, 6)).astype(np.float32)
    logits = model(ember.from_numpy(x), kjt)
    assert logits.shape == (3, 1)

    dense = mlp_ref(model.dense_arch.model, x.astype(np.float64))
    sparse = pooled_ref(ebc, ["f1", "f3", "f2"])
    np.testing.assert_allclose(f64(model.sparse_arch(kjt)), sparse, rtol=1e-6, atol=1e-7)
    inter = interaction_ref(dense, sparse)
    assert inter.shape[1] == D + 3 + choose(3, 2)
    over_mlp, over_linear = model.over_arch.model
    expected = linear_ref(over_linear, mlp_ref(over_mlp, inter))
    np.testing.assert_allclose(f64(logits), expected, rtol=1e-5, atol=1e-6)


def test_dlrm_gradients_reach_every_parameter():
    ember.manual_seed(4)
    ebc = small_ebc()
    model = DLRM(ebc, dense_in_features=6, dense_arch_layer_sizes=[5, D], over_arch_layer_sizes=[7, 1])
    with ember.no_grad():  # positive weights keep every ReLU open, so every gradient is non-zero
        for p in model.parameters():
            p.copy_(p.abs() + 0.01)
    logits = model(ember.rand(3, 6), kjt_from_bags(["f1", "f2", "f3"], BAGS))
    logits.sum().backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.shape == p.shape, name
        if "embedding_bags" not in name:
            assert float(p.grad.abs().sum()) > 0, name
    # Only the rows looked up get a gradient.
    t1_rows = np.abs(f64(ebc.embedding_bags["t1"].weight.grad)).sum(1) > 0
    assert sorted(np.flatnonzero(t1_rows).tolist()) == [1, 2, 6, 7, 9]
    t2_rows = np.abs(f64(ebc.embedding_bags["t2"].weight.grad)).sum(1) > 0
    assert sorted(np.flatnonzero(t2_rows).tolist()) == [0, 3, 4, 5]


def test_dlrm_rejects_bad_configurations():
    with pytest.raises(ValueError, match=r"same embedding_dim, got \{'t1': 4, 't2': 8\}"):
        DLRM(small_ebc((4, 8)), dense_in_features=6, dense_arch_layer_sizes=[5, 4], over_arch_layer_sizes=[7, 1])
    with pytest.raises(ValueError, match=r"dimension \(4\) and final dense arch layer size \(3\) must match"):
        DLRM(small_ebc(), dense_in_features=6, dense_arch_layer_sizes=[5, 3], over_arch_layer_sizes=[7, 1])
    with pytest.raises(ValueError, match="OverArch must have multiple layers"):
        DLRM(small_ebc(), dense_in_features=6, dense_arch_layer_sizes=[5, 4], over_arch_layer_sizes=[1])
    with pytest.raises(ValueError, match="at least one embedding bag table"):
        SparseArch(EmbeddingBagCollection(tables=[]))


def test_dlrm_dcn_interaction_is_the_cross_net():
    ember.manual_seed(5)
    model = DLRM_DCN(small_ebc(), dense_in_features=6, dense_arch_layer_sizes=[5, D], over_arch_layer_sizes=[7, 1],
                     dcn_num_layers=2, dcn_low_rank_dim=3)
    assert isinstance(model.inter_arch, InteractionDCNArch)
    assert model.over_arch.model[0]._mlp[0]._linear.in_features == (3 + 1) * D
    kjt = kjt_from_bags(["f1", "f2", "f3"], BAGS)
    dense = ember.rand(3, 6)
    assert model(dense, kjt).shape == (3, 1)
    embedded_dense = f64(model.dense_arch(dense))
    combined = np.concatenate([embedded_dense[:, None, :], f64(model.sparse_arch(kjt))], 1).reshape(3, -1)
    np.testing.assert_allclose(f64(model.inter_arch(model.dense_arch(dense), model.sparse_arch(kjt))),
                               crossnet_ref(model.inter_arch.crossnet, combined), rtol=1e-5, atol=1e-6)


def test_dlrm_projection_matches_numpy():
    ember.manual_seed(10)
    model = DLRM_Projection(small_ebc(), dense_in_features=6, dense_arch_layer_sizes=[5, D],
                            over_arch_layer_sizes=[7, 1], interaction_branch1_layer_sizes=[9, 3 * D],
                            interaction_branch2_layer_sizes=[9, 2 * D])
    assert isinstance(model.inter_arch, InteractionProjectionArch)
    kjt = kjt_from_bags(["f1", "f2", "f3"], BAGS)
    dense = ember.rand(3, 6)
    assert model(dense, kjt).shape == (3, 1)
    embedded_dense, sparse = model.dense_arch(dense), model.sparse_arch(kjt)
    x = f64(embedded_dense)
    flat = np.concatenate([x[:, None, :], f64(sparse)], 1).reshape(3, -1)
    y = mlp_ref(model.inter_arch.interaction_branch1.model, flat).reshape(3, 3, D)
    z = mlp_ref(model.inter_arch.interaction_branch2.model, flat).reshape(3, D, 2)
    expected = np.concatenate([x, (y @ z).reshape(3, -1)], 1)
    out = model.inter_arch(embedded_dense, sparse)
    assert out.shape == (3, D + 3 * 2)
    np.testing.assert_allclose(f64(out), expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match=r"interaction branch2 layer size \(6\) is not a multiple of embedding size \(4\)"):
        DLRM_Projection(small_ebc(), dense_in_features=6, dense_arch_layer_sizes=[5, D], over_arch_layer_sizes=[7, 1],
                        interaction_branch1_layer_sizes=[8], interaction_branch2_layer_sizes=[6])


def test_dense_and_over_arch_shapes():
    assert DenseArch(10, [15, 3])(ember.rand(20, 10)).shape == (20, 3)
    assert OverArch(10, [5, 1])(ember.rand(20, 10)).shape == (20, 1)


def test_dlrm_train_returns_bce_loss_and_detached_outputs():
    ember.manual_seed(6)
    model = DLRMTrain(DLRM(small_ebc(), dense_in_features=6, dense_arch_layer_sizes=[5, D], over_arch_layer_sizes=[7, 1]))
    batch = Batch(dense_features=ember.rand(3, 6), sparse_features=kjt_from_bags(["f1", "f2", "f3"], BAGS),
                  labels=ember.tensor([1, 0, 1]))
    loss, (loss_d, logits, labels) = model(batch)
    z, y = f64(logits), np.array([1.0, 0.0, 1.0])
    expected = np.mean(np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z))))
    assert math.isclose(float(loss), expected, rel_tol=1e-5)
    assert logits.shape == (3,) and not logits.requires_grad and not loss_d.requires_grad
    assert labels.tolist() == [1, 0, 1]
    loss.backward()


# -- feature processors -------------------------------------------------------------------------


def test_position_weighted_processor_weights_by_position():
    fp = PositionWeightedProcessor({"f1": 3, "f2": 3})
    with ember.no_grad():
        fp.position_weights["f1"].copy_(ember.tensor([1.0, 2.0, 3.0]))
        fp.position_weights["f2"].copy_(ember.tensor([10.0, 20.0, 30.0]))
    out = fp(kjt_from_bags(["f1", "f2", "f3"], BAGS))
    # Only the position-weighted features come back, in the input's key order.
    assert out.keys() == ["f1", "f2"]
    assert out.lengths().tolist() == [2, 0, 1, 1, 3, 1]
    assert out.values().tolist() == [1, 2, 9, 0, 3, 3, 4, 5]
    expected = [[1.0, 2.0], [1.0], [10.0], [10.0, 20.0, 30.0], [10.0]]
    assert out.weights().tolist() == [w for bag in expected for w in bag]
    out.weights().sum().backward()
    assert fp.position_weights["f1"].grad.tolist() == [2.0, 1.0, 0.0]
    assert fp.position_weights["f2"].grad.tolist() == [3.0, 1.0, 1.0]

    untouched = kjt_from_bags(["f3"], BAGS)
    assert fp(untouched) is untouched


def test_position_weighted_processor_feeds_a_weighted_ebc():
    ember.manual_seed(7)
    ebc = EmbeddingBagCollection(tables=[EmbeddingBagConfig(name="t", embedding_dim=3, num_embeddings=10,
                                                            feature_names=["f1"])], is_weighted=True)
    fp = PositionWeightedProcessor({"f1": 2})
    with ember.no_grad():
        fp.position_weights["f1"].copy_(ember.tensor([0.5, -2.0]))
    pooled = ebc(fp(kjt_from_bags(["f1"], BAGS)))["f1"]
    weight = f64(ebc.embedding_bags["t"].weight)
    expected = [0.5 * weight[1] - 2.0 * weight[2], np.zeros(3), 0.5 * weight[9]]
    np.testing.assert_allclose(f64(pooled), np.asarray(expected), rtol=1e-6, atol=1e-7)


def test_position_weighted_errors_and_module():
    with pytest.raises(ValueError, match=r"max_feature_lengths\['f1'\] must be a positive int, got 0"):
        PositionWeightedProcessor({"f1": 0})
    with pytest.raises(ValueError, match="feature 'f2' has a bag of 3 ids, longer than its max_feature_length 2"):
        PositionWeightedProcessor({"f2": 2})(kjt_from_bags(["f2"], BAGS))

    module = PositionWeightedModule({"f2": 3})
    features = kjt_from_bags(["f1", "f2"], BAGS).to_dict()
    out = module(features)
    assert out["f2"].weights().tolist() == [1.0, 1.0, 1.0, 1.0, 1.0]
    assert out["f1"].weights_or_none() is None  # not position-weighted: unchanged
    with pytest.raises(ValueError, match="position-weighted feature 'f2' is missing"):
        module({"f1": features["f1"]})


# -- DLRM training on a generated Criteo file ----------------------------------------------------


def rank_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Mann-Whitney AUC, ties counted half: the share of (positive, negative) pairs ordered right."""
    pos, neg = scores[labels == 1], scores[labels == 0]
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (len(pos) * len(neg)))


def test_dlrm_learns_a_generated_criteo_file(tmp_path):
    pytest.importorskip("emberdata", reason="the Criteo reader is an emberdata pipe")
    from emberrec.datasets.criteo import DEFAULT_CAT_NAMES, criteo_batches, criteo_kaggle
    from emberrec.datasets.synthetic import generate_criteo_tsv
    from emberrec.datasets.utils import idx_split_train_val

    ember.manual_seed(0)
    path = str(tmp_path / "criteo.tsv")
    generate_criteo_tsv(path, 6000, seed=0)
    hashes = [500] * 26
    train_rows, val_rows = idx_split_train_val(criteo_kaggle(path), 0.8)
    train_batches = list(criteo_batches(train_rows, 128, hashes))
    val_batch = next(iter(criteo_batches(val_rows, 10_000, hashes)))
    ebc = EmbeddingBagCollection(tables=[EmbeddingBagConfig(name=f"t_{n}", embedding_dim=8, num_embeddings=500,
                                                            feature_names=[n]) for n in DEFAULT_CAT_NAMES])
    model = DLRMTrain(DLRM(ebc, dense_in_features=13, dense_arch_layer_sizes=[16, 8], over_arch_layer_sizes=[16, 1]))
    opt = ember.optim.Adagrad(model.parameters(), lr=0.05)
    start = time.perf_counter()
    for batch in train_batches:
        opt.zero_grad()
        loss, _ = model(batch)
        loss.backward()
        opt.step()
    ms_per_step = 1000 * (time.perf_counter() - start) / len(train_batches)
    with ember.no_grad():
        _, (_, logits, labels) = model(val_batch)
    auc = rank_auc(f64(logits), labels.numpy())
    print(f"held-out AUC {auc:.3f} after {len(train_batches)} steps, {ms_per_step:.1f} ms per step")
    assert len(val_batch.labels) == 1200
    assert auc > 0.6


# -- two towers ---------------------------------------------------------------------------------


def two_tower_tables(num_users: int = 20, num_items: int = 10, dims: tuple[int, int] = (4, 4)):
    return [EmbeddingBagConfig(name="t_user", embedding_dim=dims[0], num_embeddings=num_users, feature_names=["user"]),
            EmbeddingBagConfig(name="t_item", embedding_dim=dims[1], num_embeddings=num_items, feature_names=["item"])]


def pair_batch(users: list[int], items: list[int], labels: list[int]) -> Batch:
    kjt = KeyedJaggedTensor.from_lengths_sync(keys=["user", "item"], values=ember.tensor(users + items),
                                              lengths=ember.ones(2 * len(users), dtype=ember.int32))
    return Batch(dense_features=ember.zeros(len(users), 0), sparse_features=kjt, labels=ember.tensor(labels))


def bce_ref(z: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z)))


def test_two_tower_towers_and_losses_match_numpy():
    ember.manual_seed(8)
    ebc = EmbeddingBagCollection(two_tower_tables())
    tower = TwoTower(ebc, layer_sizes=[5, 3])
    batch = pair_batch([0, 3, 7], [1, 1, 9], [1, 0, 1])
    query, candidate = tower(batch.sparse_features)
    users, items = f64(ebc.embedding_bags["t_user"].weight)[[0, 3, 7]], f64(ebc.embedding_bags["t_item"].weight)[[1, 1, 9]]
    np.testing.assert_allclose(f64(query), mlp_ref(tower.query_proj, users), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(f64(candidate), mlp_ref(tower.candidate_proj, items), rtol=1e-5, atol=1e-6)

    q, c, y = f64(query), f64(candidate), np.array([1.0, 0.0, 1.0])
    loss, (_, logits, _) = TwoTowerTrainTask(tower)(batch)
    np.testing.assert_allclose(f64(logits), (q * c).sum(1), rtol=1e-5, atol=1e-6)
    assert math.isclose(float(loss), bce_ref((q * c).sum(1), y).mean(), rel_tol=1e-5)

    loss, (_, logits, _) = TwoTowerTrainTask(tower, in_batch_negatives=True)(batch)
    all_logits = q @ c.T
    off = ~np.eye(3, dtype=bool)
    expected = bce_ref(np.diag(all_logits), y).mean() + bce_ref(all_logits[off], 0.0).mean()
    assert math.isclose(float(loss), expected, rel_tol=1e-5)
    np.testing.assert_allclose(f64(logits), np.diag(all_logits), rtol=1e-5, atol=1e-6)
    loss.backward()
    assert all(p.grad is not None for p in tower.parameters())


def test_two_tower_rejects_bad_tables():
    three = [*two_tower_tables(), EmbeddingBagConfig(name="t3", embedding_dim=4, num_embeddings=5, feature_names=["x"])]
    with pytest.raises(ValueError, match="two embedding tables \\(query, candidate\\), got 3"):
        TwoTower(EmbeddingBagCollection(three), [4])
    with pytest.raises(ValueError, match="same embedding_dim"):
        TwoTower(EmbeddingBagCollection(two_tower_tables(dims=(4, 8))), [4])


def test_get_index_validates_and_builds_ivfpq():
    faiss = pytest.importorskip("faiss", reason="retrieval indexes candidates with faiss-cpu")

    with pytest.raises(ValueError, match=r"embedding_dim \(10\) must be a multiple of num_subquantizers \(4\)"):
        get_index(10, num_centroids=4, num_probe=2, num_subquantizers=4, bits_per_code=8)
    with pytest.raises(ValueError, match=r"num_probe \(5\) must not exceed num_centroids \(4\)"):
        get_index(8, num_centroids=4, num_probe=5, num_subquantizers=4, bits_per_code=8)
    with pytest.raises(ValueError, match="metric must be 'l2' or 'inner_product'"):
        get_index(8, 4, 2, 4, 8, metric="cosine")
    with pytest.raises(ValueError, match="bits_per_code must be a positive int"):
        get_index(8, 4, 2, 4, 0)
    index = get_index(8, num_centroids=4, num_probe=3, num_subquantizers=2, bits_per_code=4)
    assert isinstance(index, faiss.IndexIVFPQ) and index.metric_type == faiss.METRIC_L2
    assert (index.d, index.nlist, index.nprobe, index.pq.M, index.pq.nbits) == (8, 4, 3, 2, 4)
    assert not index.is_trained
    assert get_index(8, 4, 3, 2, 4, metric="inner_product").metric_type == faiss.METRIC_INNER_PRODUCT


def test_retrieval_returns_the_exact_top_k_of_its_index():
    faiss = pytest.importorskip("faiss", reason="retrieval indexes candidates with faiss-cpu")

    ember.manual_seed(9)
    tables = two_tower_tables(num_users=6, num_items=12)
    index = faiss.IndexFlatIP(3)  # exact inner product: the plumbing can be checked exactly
    retrieval = TwoTowerRetrieval(index, EmbeddingBagCollection([tables[0]]), EmbeddingBagCollection([tables[1]]),
                                  layer_sizes=[3], k=4, activation_on_last=False)
    queries = KeyedJaggedTensor.from_lengths_sync(keys=["user"], values=ember.tensor([5, 0, 2]),
                                                  lengths=ember.ones(3, dtype=ember.int32))
    with pytest.raises(ValueError, match="the FAISS index is empty"):
        retrieval(queries)
    with ember.no_grad():
        items = retrieval.embed_candidates(ember.arange(12))
        index.add(items.numpy().astype(np.float32))
        scores, ids = retrieval.retrieve(queries)
        q = f64(retrieval.query_proj(retrieval.query_ebc(queries).values()))
    exact = q @ f64(items).T
    expected_ids = np.argsort(-exact, axis=1, kind="stable")[:, :4]
    assert ids.tolist() == expected_ids.tolist()
    np.testing.assert_allclose(f64(scores), np.take_along_axis(exact, expected_ids, 1), rtol=1e-5, atol=1e-6)
    assert retrieval(queries).shape == (3, 4)

    few = faiss.IndexFlatIP(3)  # fewer candidates than k: missing ids are -1, scored -inf, last
    few.add(f64(items)[:2].astype(np.float32))
    retrieval.faiss_index = few
    with ember.no_grad():
        scores, ids = retrieval.retrieve(queries)
    assert (ids[:, 2:] == -1).all() and np.isneginf(f64(scores)[:, 2:]).all()
    assert sorted(ids[0, :2].tolist()) == [0, 1]


def test_two_tower_retrieves_planted_items():
    """Train with in-batch negatives, index every item in an IVFPQ, recall@10 of planted items."""
    pytest.importorskip("faiss", reason="retrieval indexes candidates with faiss-cpu")
    rng = np.random.default_rng(0)
    ember.manual_seed(0)
    num_users, num_items, groups, k = 600, 300, 30, 10
    user_group = rng.integers(0, groups, num_users)
    items_of = [np.arange(g, num_items, groups) for g in range(groups)]
    tables = [EmbeddingBagConfig(name="t_user", embedding_dim=16, num_embeddings=num_users, feature_names=["user"]),
              EmbeddingBagConfig(name="t_item", embedding_dim=16, num_embeddings=num_items, feature_names=["item"])]
    task = TwoTowerTrainTask(TwoTower(EmbeddingBagCollection(tables), [16], activation_on_last=False),
                             in_batch_negatives=True)
    opt = ember.optim.Adagrad(task.parameters(), lr=0.3)
    for _ in range(300):
        users = rng.integers(0, num_users, 64)
        items = np.array([rng.choice(items_of[user_group[u]]) for u in users])
        opt.zero_grad()
        loss, _ = task(pair_batch(users.tolist(), items.tolist(), [1] * 64))
        loss.backward()
        opt.step()

    retrieval = TwoTowerRetrieval(get_index(16, num_centroids=8, num_probe=4, num_subquantizers=4, bits_per_code=6,
                                            metric="inner_product"),
                                  EmbeddingBagCollection([tables[0]]), EmbeddingBagCollection([tables[1]]),
                                  layer_sizes=[16], k=k, activation_on_last=False)
    missing = retrieval.load_state_dict(convert_TwoTower_to_TwoTowerRetrieval(task.state_dict(), ["t_user"], ["t_item"]))
    assert not missing.missing_keys and not missing.unexpected_keys
    with ember.no_grad():
        item_embeddings = retrieval.embed_candidates(ember.arange(num_items)).numpy().astype(np.float32)
        retrieval.faiss_index.train(item_embeddings)
        retrieval.faiss_index.add(item_embeddings)
        _, found = retrieval.retrieve(KeyedJaggedTensor.from_lengths_sync(
            keys=["user"], values=ember.arange(num_users), lengths=ember.ones(num_users, dtype=ember.int32)))
    found = found.numpy()
    recall = np.mean([np.isin(found[u], items_of[user_group[u]]).sum() / k for u in range(num_users)])
    print(f"recall@10 {recall:.4f}")
    assert recall >= 0.9
