"""Version counters and view bases as PyTorch keeps them: a tensor an op returns new is at version 0
(the writes the op made while building it do not count; Note [fresh versions]), every user-visible
write counts once, views share their base's counter; `_base` / `_is_view()` name a view's base."""

import numpy as np
import pytest

import ember

X = ember.randn(3, 4)
IDX = ember.tensor([0, 2])

NEW = {
    "tensor": lambda: ember.tensor([1.0, 2.0]),
    "as_tensor": lambda: ember.as_tensor([1.0, 2.0]),
    "eye": lambda: ember.eye(3),
    "clone": lambda: X.clone(),
    "contiguous": lambda: X.t().contiguous(),
    "to": lambda: X.to(ember.float64),
    "double": lambda: X.double(),
    "cat": lambda: ember.cat([X, X]),
    "stack": lambda: ember.stack([X, X]),
    "diag": lambda: ember.diag(X[0]),
    "diag_embed": lambda: ember.diag_embed(X),
    "scatter": lambda: X.scatter(0, ember.zeros(1, 4, dtype=ember.int64), 1.0),
    "index_add": lambda: X.index_add(0, IDX, X[:2]),
    "pad": lambda: ember.nn.functional.pad(X, (1, 1)),
    "repeat": lambda: X.repeat(2, 1),
    "sort": lambda: X.sort()[0],
    "one_hot": lambda: ember.nn.functional.one_hot(IDX),
    "block_diag": lambda: ember.block_diag(X, X),
    "channels_last": lambda: ember.randn(1, 2, 3, 3).contiguous(memory_format=ember.channels_last),
    "zeros": lambda: ember.zeros(3),
    "full": lambda: ember.full((2,), 3.0),
    "arange": lambda: ember.arange(5),
}


@pytest.mark.parametrize("name", sorted(NEW))
def test_a_new_result_is_at_version_0(name):
    out = NEW[name]()
    assert out._version == 0
    out.add_(1)
    assert out._version == 1


def test_writes_count_once_each_and_views_share_the_counter():
    x = ember.zeros(4)
    v = x[1:]
    assert (x._version, v._version) == (0, 0)
    v.add_(1)
    assert (x._version, v._version) == (1, 1)
    x.mul_(2)
    assert v._version == 2
    ember.add(x, 1, out=x)
    assert x._version == 3
    # an op that gives its input back as is does not rewind the input's counter
    assert x.to(ember.float32)._version == 3 and x.contiguous()._version == 3
    y = x.detach()  # shares the counter, as PyTorch's detach does
    y.zero_()
    assert x._version == 4


def test_a_result_autograd_saved_keeps_its_version_check():
    # the rewind happens before autograd records the result, so a later write is still caught
    a = ember.randn(3, requires_grad=True)
    b = a.exp()
    b.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()


def test_base_and_is_view():
    x = ember.randn(2, 6)
    v = x[:, 1:]
    w = v.t()
    for view in (v, w, x.view(3, 4), x.reshape(12), x.T, x.unbind(0)[1], x.narrow(1, 0, 2)):
        assert view._is_view()
        assert view._base is not None and view._base.data_ptr() == x.data_ptr()
        assert view._base._base is None and not view._base._is_view()
    # the base is the first tensor that is not a view, for views of views too
    assert w._base.shape == x.shape
    for fresh in (x, x.clone(), x.detach(), x + 1, x.contiguous(), ember.tensor([1.0])):
        assert fresh._base is None and not fresh._is_view()
    # with autograd: a view of a leaf that requires grad, and one made under no_grad
    leaf = ember.randn(4, requires_grad=True)
    assert leaf[1:]._base is not None and leaf[1:]._base.requires_grad
    with ember.no_grad():
        assert leaf[1:]._is_view()
    assert np.shares_memory(x.numpy(), v._base.numpy())


PARITY = '''
import sys
import numpy as np
T = __import__(sys.argv[1])
x = T.randn(3, 4)
i = T.tensor([0, 2])
results = {
    "tensor": T.tensor([1.0, 2.0]), "eye": T.eye(3), "clone": x.clone(), "contiguous": x.t().contiguous(),
    "double": x.double(), "cat": T.cat([x, x]), "stack": T.stack([x, x]), "diag": T.diag(x[0]),
    "diag_embed": T.diag_embed(x), "index_add": x.index_add(0, i, x[:2]), "repeat": x.repeat(2, 1),
    "sort": x.sort()[0], "block_diag": T.block_diag(x, x), "tril": x.tril(), "where": T.where(x > 0, x, 0.0),
    "full": T.full((2,), 3.0), "arange": T.arange(5), "linspace": T.linspace(0, 1, 5),
    "masked_fill": x.masked_fill(x > 0, 0.0), "flip": x.flip(0), "cumsum": x.cumsum(0),
}
versions = [f"{k} {v._version}" for k, v in results.items()]
views = {"slice": x[1:], "t": x.t(), "view": x.view(12), "reshape": x.reshape(12), "reshape_copy": x.t().reshape(12),
         "unbind": x.unbind(0)[0], "detach": x.detach(), "clone": x.clone(), "add": x + 1, "contiguous": x.contiguous(),
         "narrow": x.narrow(1, 0, 2), "expand": x[0].expand(2, 4), "diagonal": x.diagonal(), "flatten": x.flatten(),
         "squeeze": x[None].squeeze(0), "split": x.split(2)[1], "real": x.real}
bases = [f"{k} {v._is_view()} {v._base is not None and v._base.data_ptr() == x.data_ptr()}" for k, v in views.items()]
y = T.zeros(4)
v = y[1:]
v.add_(1)
y.mul_(2)
y.detach().zero_()
counts = [y._version, v._version]
np.savez(sys.argv[2], versions=np.array(versions), bases=np.array(bases), counts=np.array(counts))
'''


def test_versions_and_bases_as_pytorch(run_torch_and_ember):
    torch_out, ember_out = run_torch_and_ember(PARITY)
    for key in ("versions", "bases", "counts"):
        assert ember_out[key].tolist() == torch_out[key].tolist()
