"""cdist, pdist, bilinear, glu, prelu, rrelu, hard/softshrink and gumbel_softmax against float64
NumPy references (gradcheck for the differentiable ones), and the layers over them: Bilinear,
LazyLinear, CosineSimilarity, PairwiseDistance, Fold, Unfold, GLU, PReLU, RReLU, Softmax2d,
Hardshrink, Softshrink."""

import numpy as np
import pytest

import ember
from ember import nn
from ember.autograd import gradcheck
from ember.nn import functional as F

RNG = np.random.default_rng(21)


def _t(a, grad=False):
    t = ember.from_numpy(np.ascontiguousarray(a))
    return t.requires_grad_() if grad else t


def _ref_dist(a, b, p):
    diff = np.abs(a[..., :, None, :] - b[..., None, :, :])
    if p == 0:
        return (diff != 0).sum(-1).astype(np.float64)
    if p == np.inf:
        return diff.max(-1)
    return (diff ** p).sum(-1) ** (1 / p)


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, np.inf])
def test_cdist_and_pdist_match_numpy(p):
    a, b = RNG.normal(size=(2, 4, 3)), RNG.normal(size=(1, 5, 3))  # batch dims broadcast
    np.testing.assert_allclose(F.cdist(_t(a), _t(b), p).numpy(), _ref_dist(a, np.broadcast_to(b, (2, 5, 3)), p),
                               rtol=1e-12)
    x = RNG.normal(size=(6, 3))
    rows, cols = np.triu_indices(6, 1)
    np.testing.assert_allclose(F.pdist(_t(x), p).numpy(), _ref_dist(x, x, p)[rows, cols], rtol=1e-12)
    if p not in (0.0, np.inf):
        assert gradcheck(lambda u, v: F.cdist(u, v, p), (_t(a[0], True), _t(b[0], True)))
        assert gradcheck(lambda u: F.pdist(u, p), (_t(x[:4], True),))


def test_cdist_matrix_product_mode_noncontiguous_and_errors():
    a, b = RNG.normal(size=(30, 4)), RNG.normal(size=(7, 4))
    want = _ref_dist(a, b, 2)
    for mode in ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"):
        np.testing.assert_allclose(F.cdist(_t(a), _t(b), compute_mode=mode).numpy(), want, rtol=1e-10)
    view = _t(np.ascontiguousarray(a.T)).t()
    np.testing.assert_allclose(F.cdist(view, _t(b)).numpy(), want, rtol=1e-10)
    assert tuple(F.cdist(_t(np.zeros((0, 4))), _t(b)).shape) == (0, 7)
    with pytest.raises(RuntimeError, match="X1 and X2 must have the same number of columns. X1: 4 X2: 3"):
        F.cdist(_t(a), _t(np.zeros((2, 3))))
    with pytest.raises(RuntimeError, match="cdist only supports non-negative p values"):
        F.cdist(_t(a), _t(b), -1.0)
    with pytest.raises(ValueError, match="is not a valid value for compute_mode"):
        F.cdist(_t(a), _t(b), compute_mode="fast")
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 3D"):
        F.pdist(_t(np.zeros((2, 2, 2))))


def test_bilinear_and_layer():
    x1, x2 = RNG.normal(size=(3, 2, 4)), RNG.normal(size=(3, 2, 5))
    w, b = RNG.normal(size=(6, 4, 5)), RNG.normal(size=6)
    np.testing.assert_allclose(F.bilinear(_t(x1), _t(x2), _t(w), _t(b)).numpy(),
                               np.einsum("...i,oij,...j->...o", x1, w, x2) + b, rtol=1e-12)
    assert gradcheck(F.bilinear, (_t(x1[0], True), _t(x2[0], True), _t(w, True), _t(b, True)))
    layer = nn.Bilinear(4, 5, 6).double()
    assert tuple(layer(_t(x1), _t(x2)).shape) == (3, 2, 6)
    assert repr(layer) == "Bilinear(in1_features=4, in2_features=5, out_features=6, bias=True)"
    assert np.abs(layer.weight.detach().numpy()).max() <= 0.5  # uniform in +-1/sqrt(in1_features)
    with pytest.raises(RuntimeError, match="do not match weight size"):
        F.bilinear(_t(x1), _t(x1), _t(w))


def test_lazy_linear_materializes_on_first_call():
    layer = nn.LazyLinear(3)
    assert layer.has_uninitialized_params() and tuple(layer.weight.shape) == (3, 0)
    out = layer(ember.ones([2, 7]))
    assert type(layer) is nn.Linear and layer.in_features == 7
    assert tuple(out.shape) == (2, 3) and tuple(layer.weight.shape) == (3, 7)
    assert repr(layer) == "Linear(in_features=7, out_features=3, bias=True)"
    np.testing.assert_allclose(out.detach().numpy(), F.linear(ember.ones([2, 7]), layer.weight,
                                                              layer.bias).detach().numpy())


def test_glu_prelu_shrinks():
    x = RNG.normal(size=(3, 4, 2))
    a, b = x[:, :2], x[:, 2:]
    np.testing.assert_allclose(F.glu(_t(x), 1).numpy(), a / (1 + np.exp(-b)), rtol=1e-12)
    assert gradcheck(lambda v: F.glu(v, 1), (_t(x, True),))
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 2 is size 3"):
        F.glu(_t(np.zeros((2, 2, 3))))
    slopes = np.array([0.1, -0.2, 0.3, 0.5])
    np.testing.assert_allclose(F.prelu(_t(x), _t(slopes)).numpy(),
                               np.where(x > 0, x, slopes[None, :, None] * x), rtol=1e-12)
    assert gradcheck(F.prelu, (_t(x, True), _t(slopes, True)))
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers and input channel size"):
        F.prelu(_t(x), _t(np.ones(3)))
    np.testing.assert_array_equal(F.hardshrink(_t(x), 0.4).numpy(), np.where(np.abs(x) > 0.4, x, 0))
    np.testing.assert_allclose(F.softshrink(_t(x), 0.4).numpy(), np.sign(x) * np.maximum(np.abs(x) - 0.4, 0),
                               rtol=1e-12)
    with pytest.raises(RuntimeError, match="lambda must be greater or equal to 0"):
        F.softshrink(_t(x), -1.0)


def test_rrelu_slopes():
    x = _t(-np.ones(20000))
    eval_out = F.rrelu(x, 0.1, 0.3)
    np.testing.assert_allclose(eval_out.numpy(), -0.2)
    ember.manual_seed(0)
    slopes = -F.rrelu(x, 0.1, 0.3, training=True).numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and abs(slopes.mean() - 0.2) < 0.005
    layer = nn.RReLU(0.1, 0.3)
    layer.eval()
    np.testing.assert_allclose(layer(x).numpy(), -0.2)
    np.testing.assert_array_equal(F.rrelu(_t(np.array([2.0])), training=True).numpy(), [2.0])


def test_gumbel_softmax():
    ember.manual_seed(1)
    logits = _t(np.log(np.array([[0.1, 0.6, 0.3]])).repeat(20000, 0), True)
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.detach().numpy().sum(-1), 1.0, rtol=1e-12)
    hard = F.gumbel_softmax(logits, hard=True)
    values = hard.detach().numpy()
    assert set(np.unique(values)) == {0.0, 1.0} and np.all(values.sum(-1) == 1)
    # the Gumbel-max trick: the one-hot argmax follows softmax(logits)
    np.testing.assert_allclose(values.mean(0), [0.1, 0.6, 0.3], atol=0.015)
    hard.sum().backward()  # straight-through: the gradient is the soft sample's
    assert logits.grad is not None and np.abs(logits.grad.numpy()).max() < 1e-9


def test_small_layers_and_reprs():
    x = _t(RNG.normal(size=(2, 4, 3, 3)))
    np.testing.assert_allclose(nn.Softmax2d()(x).numpy(), F.softmax(x, -3).numpy())
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D, got 2D instead"):
        nn.Softmax2d()(_t(np.zeros((2, 2))))
    np.testing.assert_array_equal(nn.Fold((3, 3), 2)(nn.Unfold(2)(x)).numpy(),
                                  F.fold(F.unfold(x, 2), (3, 3), 2).numpy())
    y = _t(RNG.normal(size=(2, 4, 3, 3)))
    np.testing.assert_array_equal(nn.CosineSimilarity(dim=1)(x, y).numpy(), F.cosine_similarity(x, y).numpy())
    np.testing.assert_array_equal(nn.PairwiseDistance(p=1.0, keepdim=True)(x, y).numpy(),
                                  F.pairwise_distance(x, y, 1.0, keepdim=True).numpy())
    prelu = nn.PReLU(4).double()
    assert list(prelu.state_dict()) == ["weight"] and np.all(prelu.weight.detach().numpy() == 0.25)
    assert [repr(m) for m in (nn.GLU(), nn.PReLU(), nn.RReLU(), nn.Hardshrink(), nn.Softshrink(0.2),
                              nn.Fold(4, 2), nn.Unfold((2, 3), stride=2), nn.CosineSimilarity(),
                              nn.PairwiseDistance(), nn.Softmax2d())] == [
        "GLU(dim=-1)", "PReLU(num_parameters=1)", "RReLU(lower=0.125, upper=0.3333333333333333)",
        "Hardshrink(0.5)", "Softshrink(0.2)",
        "Fold(output_size=4, kernel_size=2, dilation=1, padding=0, stride=1)",
        "Unfold(kernel_size=(2, 3), dilation=1, padding=0, stride=2)", "CosineSimilarity()", "PairwiseDistance()",
        "Softmax2d()"]


def test_distances_are_exported_at_the_top_level_as_torch_does():
    x = ember.from_numpy(np.random.default_rng(3).normal(size=(2, 3, 4)))
    np.testing.assert_allclose(ember.cdist(x, x).numpy(), F.cdist(x, x).numpy())
    assert ember.pdist is F.pdist and ember.cosine_similarity is F.cosine_similarity
    assert ember.pairwise_distance is F.pairwise_distance
