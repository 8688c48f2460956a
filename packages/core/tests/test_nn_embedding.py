"""F.embedding / F.embedding_bag and nn.Embedding / nn.EmbeddingBag against NumPy lookups and
bag reductions written here; gradients by gradcheck and by hand for padding_idx and
scale_grad_by_freq; max_norm renormalization; reprs, state dicts and argument errors."""

import numpy as np
import pytest

import ember
from ember import nn
from ember.autograd import gradcheck
from ember.nn import functional as F

RNG = np.random.default_rng(3)


def _t(a, grad=False):
    t = ember.from_numpy(np.ascontiguousarray(a))
    return t.requires_grad_() if grad else t


def test_embedding_lookup_shapes_and_gradients():
    w = RNG.normal(size=(7, 3))
    idx = np.array([[0, 6, 2], [2, 2, 5]])
    np.testing.assert_array_equal(F.embedding(_t(idx), _t(w)).numpy(), w[idx])
    np.testing.assert_array_equal(F.embedding(ember.tensor(4), _t(w)).numpy(), w[4])  # 0-dim index
    np.testing.assert_array_equal(F.embedding(_t(idx.astype(np.int32)).t(), _t(w)).numpy(), w[idx.T])  # int32, view
    assert tuple(F.embedding(_t(np.zeros((0, 4), np.int64)), _t(w)).shape) == (0, 4, 3)
    assert gradcheck(lambda table: F.embedding(_t(idx), table), (_t(w, True),))
    table = _t(w, True)
    F.embedding(_t(idx), table).sum().backward()
    np.testing.assert_array_equal(table.grad.numpy()[:, 0], np.bincount(idx.ravel(), minlength=7))


def test_padding_idx_and_scale_grad_by_freq():
    w = RNG.normal(size=(5, 2))
    idx = np.array([1, 3, 3, 1, 1, 0])
    table = _t(w, True)
    out = F.embedding(_t(idx), table, padding_idx=-4)  # row 1
    np.testing.assert_array_equal(out.detach().numpy(), w[idx])
    out.sum().backward()
    np.testing.assert_array_equal(table.grad.numpy()[:, 0], [1, 0, 0, 2, 0])
    table = _t(w, True)
    F.embedding(_t(idx), table, scale_grad_by_freq=True).sum().backward()
    np.testing.assert_array_equal(table.grad.numpy()[:, 0], [1, 1, 0, 1, 0])  # each looked-up row: count / count


def test_max_norm_renormalizes_looked_up_rows_in_place():
    w = RNG.normal(size=(4, 3)) * 3
    table = _t(w.copy())
    out = F.embedding(ember.tensor([0, 2, 2]), table, max_norm=1.0)
    norms = np.linalg.norm(table.numpy(), axis=1)
    assert np.all(norms[[0, 2]] <= 1.0) and np.allclose(norms[[0, 2]], 1.0, atol=1e-6)
    np.testing.assert_array_equal(table.numpy()[[1, 3]], w[[1, 3]])  # rows not looked up are untouched
    np.testing.assert_allclose(out.numpy(), table.numpy()[[0, 2, 2]])
    F.embedding(ember.tensor([1]), table, max_norm=2.0, norm_type=1.0)
    assert np.abs(table.numpy()[1]).sum() == pytest.approx(2.0, abs=1e-6)


def _ref_bags(w, idx, bags, mode, weights=None, padding_idx=None):
    out = np.zeros((len(bags), w.shape[1]))
    for b, members in enumerate(bags):
        members = [m for m in members if padding_idx is None or idx[m] != padding_idx]
        if not members:
            continue
        rows = w[idx[members]] * (weights[members][:, None] if weights is not None else 1)
        out[b] = {"sum": rows.sum(0), "mean": rows.mean(0), "max": rows.max(0)}[mode]
    return out


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_offsets_2d_empty_bags_and_padding(mode):
    w = RNG.normal(size=(10, 4))
    idx = np.array([2, 4, 4, 9, 0, 3, 3, 7])
    offsets = np.array([0, 3, 3, 6])  # bag 1 is empty
    bags = [range(0, 3), range(3, 3), range(3, 6), range(6, 8)]
    got = F.embedding_bag(_t(idx), _t(w), _t(offsets), mode=mode)
    np.testing.assert_allclose(got.numpy(), _ref_bags(w, idx, bags, mode), rtol=1e-12)
    last = F.embedding_bag(_t(idx), _t(w), _t(np.array([0, 3, 3, 6, 8])), mode=mode, include_last_offset=True)
    np.testing.assert_allclose(last.numpy(), got.numpy())
    padded = F.embedding_bag(_t(idx), _t(w), _t(offsets), mode=mode, padding_idx=3)
    np.testing.assert_allclose(padded.numpy(), _ref_bags(w, idx, bags, mode, padding_idx=3), rtol=1e-12)
    rows = idx.reshape(2, 4)
    np.testing.assert_allclose(F.embedding_bag(_t(rows), _t(w), mode=mode).numpy(),
                               _ref_bags(w, idx, [range(0, 4), range(4, 8)], mode), rtol=1e-12)
    assert gradcheck(lambda t: F.embedding_bag(_t(idx), t, _t(offsets), mode=mode, padding_idx=9), (_t(w, True),))


def test_embedding_bag_per_sample_weights():
    w, idx, offsets = RNG.normal(size=(6, 3)), np.array([1, 2, 2, 5, 0]), np.array([0, 2])
    psw = RNG.normal(size=5)
    got = F.embedding_bag(_t(idx), _t(w), _t(offsets), mode="sum", per_sample_weights=_t(psw))
    np.testing.assert_allclose(got.numpy(), _ref_bags(w, idx, [range(0, 2), range(2, 5)], "sum", psw), rtol=1e-12)
    assert gradcheck(lambda t, s: F.embedding_bag(_t(idx), t, _t(offsets), mode="sum", per_sample_weights=s),
                     (_t(w, True), _t(psw, True)))


def test_embedding_errors():
    w = _t(RNG.normal(size=(4, 2)))
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices' to have one of the following "
                                           "scalar types: Long, Int"):
        F.embedding(_t(np.array([0.0, 1.0])), w)
    with pytest.raises(IndexError):
        F.embedding(ember.tensor([4]), w)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        F.embedding(ember.tensor([0]), w, padding_idx=4)
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(ember.tensor([0, 1]), w)
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        F.embedding_bag(ember.tensor([[0, 1]]), w, ember.tensor([0]))
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
        F.embedding_bag(ember.tensor([0, 1]), w, ember.tensor([1]))
    with pytest.raises(RuntimeError, match="offsets must be non-decreasing"):
        F.embedding_bag(ember.tensor([0, 1]), w, ember.tensor([0, 2, 1]))
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for mode='sum'"):
        F.embedding_bag(ember.tensor([0, 1]), w, ember.tensor([0]), per_sample_weights=_t(np.ones(2)))
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        F.embedding_bag(ember.tensor([0, 1]), w, ember.tensor([0]), mode="min")


def test_embedding_layers():
    ember.manual_seed(0)
    emb = nn.Embedding(10, 3, padding_idx=2)
    assert np.all(emb.weight.detach().numpy()[2] == 0) and list(emb.state_dict()) == ["weight"]
    assert repr(emb) == "Embedding(10, 3, padding_idx=2)"
    assert repr(nn.Embedding(5, 4, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True)) == \
        "Embedding(5, 4, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True)"
    out = emb(ember.tensor([[1, 2], [2, 9]]))
    out.sum().backward()
    assert np.all(emb.weight.grad.numpy()[2] == 0)
    table = _t(RNG.normal(size=(4, 2)))
    frozen = nn.Embedding.from_pretrained(table)
    assert not frozen.weight.requires_grad
    np.testing.assert_array_equal(frozen(ember.tensor([3])).numpy(), table.numpy()[[3]])
    assert nn.Embedding.from_pretrained(table, freeze=False).weight.requires_grad
    bag = nn.EmbeddingBag(6, 2, mode="max", padding_idx=0)
    assert repr(bag) == "EmbeddingBag(6, 2, mode='max', padding_idx=0)"
    assert tuple(bag(ember.tensor([1, 0, 3]), ember.tensor([0, 1])).shape) == (2, 2)
    pretrained = nn.EmbeddingBag.from_pretrained(table, mode="sum")
    np.testing.assert_allclose(pretrained(ember.tensor([[0, 1]])).numpy(), table.numpy()[[0, 1]].sum(0, keepdims=True))
    with pytest.raises(AssertionError, match="Shape of weight does not match"):
        nn.Embedding(3, 2, _weight=table)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(3, 2, padding_idx=3)


def test_embedding_bag_repr_quotes_the_mode_as_pytorch_does():
    bag = nn.EmbeddingBag(10, 3, mode="sum", padding_idx=2, max_norm=1.0)
    assert repr(bag) == "EmbeddingBag(10, 3, max_norm=1.0, mode='sum', padding_idx=2)"
