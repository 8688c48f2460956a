"""ember.func.rearrange (torch.func.rearrange, einops' pattern language): shapes and values against
NumPy reshapes and transposes, views, gradients, lists of tensors and every pattern error."""

import numpy as np
import pytest

import ember
from ember.func import rearrange

IMAGES = np.arange(4 * 6 * 8 * 3, dtype=np.float64).reshape(4, 6, 8, 3)  # b h w c


@pytest.mark.parametrize("pattern, lengths, reference", [
    ("b h w c -> b h w c", {}, lambda x: x),
    ("b h w c -> (b h) w c", {}, lambda x: x.reshape(24, 8, 3)),
    ("b h w c -> h (b w) c", {}, lambda x: x.transpose(1, 0, 2, 3).reshape(6, 32, 3)),
    ("b h w c -> b c h w", {}, lambda x: x.transpose(0, 3, 1, 2)),
    ("b h w c -> b (c h w)", {}, lambda x: x.transpose(0, 3, 1, 2).reshape(4, 144)),
    ("b (h1 h) (w1 w) c -> (b h1 w1) h w c", {"h1": 2, "w1": 2},
     lambda x: x.reshape(4, 2, 3, 2, 4, 3).transpose(0, 1, 3, 2, 4, 5).reshape(16, 3, 4, 3)),
    ("b (h h1) (w w1) c -> b h w (c h1 w1)", {"h1": 2, "w1": 2},
     lambda x: x.reshape(4, 3, 2, 4, 2, 3).transpose(0, 1, 3, 5, 2, 4).reshape(4, 3, 4, 12)),
    ("b ... c -> c b ...", {}, lambda x: x.transpose(3, 0, 1, 2)),
    ("... c -> (...) c", {}, lambda x: x.reshape(-1, 3)),
    ("b h w c -> b h w c 1", {}, lambda x: x[..., None]),
    ("b h w c -> b () h w c", {}, lambda x: x[:, None]),
    ("b h w (c k) -> k b h w c", {"k": 1}, lambda x: x[None]),
    ("b ... -> b (...)", {}, lambda x: x.reshape(4, -1)),
    ("b h ... -> (... b) h", {}, lambda x: x.transpose(2, 3, 0, 1).reshape(96, 6)),
])
def test_patterns_against_numpy(pattern, lengths, reference):
    got = rearrange(ember.tensor(IMAGES), pattern, **lengths)
    np.testing.assert_array_equal(got.numpy(), reference(IMAGES))


def test_unit_axes_are_dropped_and_added():
    x = ember.arange(6.0).reshape(1, 2, 1, 3)
    assert rearrange(x, "1 a 1 b -> b a").shape == (3, 2)
    assert rearrange(x, "() a () b -> (b a) 1").shape == (6, 1)
    assert rearrange(ember.tensor(5.0), " -> 1 1").shape == (1, 1)  # a 0-dim tensor
    assert rearrange(ember.ones(1, 1), "1 1 -> ").shape == ()


def test_views_zero_size_non_contiguous_and_lists():
    x = ember.arange(24.0).reshape(2, 3, 4)
    view = rearrange(x, "a b c -> a (b c)")
    view[0, 0] = 100.0  # reshape of a contiguous tensor is a view, as in einops over torch
    assert float(x[0, 0, 0]) == 100.0
    t = x.transpose(0, 2)  # non-contiguous input
    np.testing.assert_array_equal(rearrange(t, "c b a -> a b c").numpy(), x.numpy())
    assert rearrange(ember.ones(0, 3, 4), "a b c -> (a b) c").shape == (0, 4)
    assert rearrange(ember.ones(0, 3, 4), "(a k) b c -> a k b c", k=1).shape == (0, 1, 3, 4)
    stacked = rearrange([x[0], x[1]], "s a b -> a (s b)")
    np.testing.assert_array_equal(stacked.numpy(), np.concatenate([x[0].numpy(), x[1].numpy()], axis=1))
    assert rearrange((x[0], x[1]), "s a b -> s a b").shape == (2, 3, 4)


def test_gradient_flows_through():
    x = ember.randn(2, 6, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: rearrange(t, "a (b c) -> c a b", c=3), (x,))


@pytest.mark.parametrize("pattern, lengths, message", [
    ("a b c -> a b", {}, r"identifiers only on one side of the pattern \(should be on both\): \['c'\]"),
    ("a b -> a b", {}, "the left side of the pattern has 2 dims, but the tensor has 3"),
    ("a b c d -> a b c d", {}, "the left side of the pattern has 4 dims, but the tensor has 3"),
    ("a a c -> a c", {}, "the left side names 'a' more than once"),
    ("a b c -> a b b c", {}, "the right side names 'b' more than once"),
    ("(a b) c d -> a b c d", {}, "cannot infer the sizes of \\['a', 'b'\\] at once"),
    ("(a b) c d -> a b c d", {"a": 3}, r"dim 0 of size 2 does not divide into \['a', 'b'\]"),
    ("a b c -> c b a", {"a": 3}, r"dim 0 has size 2, but \['a'\] give 3"),
    ("a b c -> a b c 2", {}, "only supports unnamed axes of size 1, got 2"),
    ("1 a b -> a b", {}, "the left side has an axis of size 1 where the tensor's dim 0 is 2"),
    ("a b c", {}, "a single '->' separator"),
    ("a b c -> a -> b", {}, "a single '->' separator"),
    ("a b (c -> a b c", {}, r"unbalanced '\('"),
    ("a b c) -> a b c", {}, r"unbalanced '\)'"),
    ("a ((b c)) -> a b c", {}, "nested parentheses"),
    ("a (... b) -> a b", {}, r"'\.\.\.' cannot be inside parentheses on the left side"),
    ("a b c -> a b c+", {}, "unexpected character '\\+'"),
    ("a ... -> a", {}, "'\\.\\.\\.' must be on both sides of the pattern or on neither"),
    ("a b c -> a (b c ...)", {}, "'\\.\\.\\.' must be on both sides"),
    ("... a ... -> a", {}, "the left side names '\\.\\.\\.' more than once"),
    ("a b c -> (a b c)", {"q": 2}, r"axis lengths given for names not in the pattern: \['q'\]"),
    ("(a b) c d -> a b c d", {"a": 0}, "the length of 'a' must be a positive int, got 0"),
])
def test_pattern_errors(pattern, lengths, message):
    with pytest.raises(ValueError, match=message):
        rearrange(ember.zeros(2, 3, 4), pattern, **lengths)


def test_argument_types():
    with pytest.raises(TypeError, match="expected a Tensor or a sequence of Tensors, got ndarray"):
        rearrange(np.zeros(3), "a -> a")
    with pytest.raises(ValueError, match="'->' separator"):
        rearrange(ember.zeros(3), None)
