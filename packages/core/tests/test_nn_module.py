"""nn.Module's contract (registration, named iterators, state_dict / load_state_dict, train/eval,
to(dtype), zero_grad, hooks, reprs as PyTorch prints them), the containers, nn.Parameter, and
ember.func.functional_call (tie_weights, strict, restoring, grad and vmap through it)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn
from ember.func import functional_call, grad, vmap


def f64(values):
    return ember.tensor(values, dtype=ember.float64)


class Scale(nn.Module):
    def __init__(self, n=3):
        super().__init__()
        self.w = nn.Parameter(f64(np.arange(1.0, n + 1)))
        self.b = nn.Parameter(f64(np.zeros(n)))
        self.register_buffer("count", ember.zeros([], dtype=ember.int64))
        self.register_buffer("scratch", f64(np.ones(n)), persistent=False)

    def forward(self, x):
        with ember.no_grad():
            self.count.add_(1)
        return x * self.w + self.b


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = Scale()
        self.second = Scale()
        self.head = nn.Sequential(nn.Linear(3, 2, dtype=ember.float64), nn.Identity())

    def forward(self, x):
        return self.head(self.second(self.first(x)))


def test_parameter():
    p = nn.Parameter(f64([1.0, 2.0]))
    assert isinstance(p, ember.Tensor) and p.requires_grad and p.is_leaf
    assert repr(p).startswith("Parameter containing:\ntensor([1., 2.]")
    assert not nn.Parameter(f64([1.0]), requires_grad=False).requires_grad
    assert type(p * 2) is ember.Tensor


def test_registration_and_iterators():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["first.w", "first.b", "second.w", "second.b", "head.0.weight", "head.0.bias"]
    assert [n for n, _ in net.named_buffers()] == ["first.count", "first.scratch", "second.count", "second.scratch"]
    assert [n for n, _ in net.named_modules()] == ["", "first", "second", "head", "head.0", "head.1"]
    assert [n for n, _ in net.named_children()] == ["first", "second", "head"]
    assert [n for n, _ in net.named_parameters(prefix="model", recurse=False)] == []
    net.second = net.first  # shared: de-duplicated unless asked
    assert [n for n, _ in net.named_parameters()][:2] == ["first.w", "first.b"] and len(list(net.parameters())) == 4
    assert len(list(net.named_parameters(remove_duplicate=False))) == 6
    assert net.get_submodule("head.0") is net.head[0]
    assert net.get_parameter("head.0.bias") is net.head[0].bias
    with pytest.raises(AttributeError, match=r"Sequential has no attribute `5`"):
        net.get_submodule("head.5")
    with pytest.raises(AttributeError, match=r"'Net' object has no attribute 'missing'"):
        _ = net.missing
    with pytest.raises(KeyError, match=r"attribute 'first' already exists"):
        net.register_buffer("first", f64([1.0]))
    with pytest.raises(TypeError, match=r"cannot assign 'Tensor' as parameter 'w'"):
        net.first.w = f64([1.0, 2.0, 3.0])
    del net.head
    assert "head" not in dict(net.named_children())


def test_state_dict_round_trip_and_errors():
    a, b = Net(), Net()
    with ember.no_grad():
        a.first.w.mul_(3.0)
    sd = a.state_dict()
    assert list(sd) == ["first.w", "first.b", "first.count", "second.w", "second.b", "second.count",
                        "head.0.weight", "head.0.bias"]  # non-persistent buffers are left out
    assert not sd["first.w"].requires_grad
    result = b.load_state_dict(sd)
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert b.first.w.tolist() == [3.0, 6.0, 9.0] and isinstance(b.first.w, nn.Parameter)
    sd2 = dict(sd)
    del sd2["first.b"]
    sd2["extra"] = f64([0.0])
    with pytest.raises(RuntimeError, match=r'Error\(s\) in loading state_dict for Net:\n\tMissing key\(s\) in '
                                           r'state_dict: "first.b". \n\tUnexpected key\(s\) in state_dict: "extra". '):
        b.load_state_dict(sd2)
    result = b.load_state_dict(sd2, strict=False)
    assert result.missing_keys == ["first.b"] and result.unexpected_keys == ["extra"]
    sd["first.w"] = f64([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"size mismatch for first.w: copying a param with shape \[2\] from "
                                           r"checkpoint, the shape in current model is \[3\]"):
        b.load_state_dict(sd)
    replacement = {**a.state_dict(), "first.w": f64([7.0, 8.0, 9.0])}
    b.load_state_dict(replacement, assign=True)
    assert b.first.w.tolist() == [7.0, 8.0, 9.0] and isinstance(b.first.w, nn.Parameter)


def test_modes_conversion_grads_and_apply():
    net = Net()
    assert net.training and net.head[1].training
    net.eval()
    assert not net.first.training and not net.head[0].training
    net.train()
    assert net.second.training
    net.float()
    assert net.first.w.dtype == ember.float32 and net.first.count.dtype == ember.int64
    assert isinstance(net.first.w, nn.Parameter) and net.first.w.requires_grad
    net.double()
    out = net(f64([[1.0, 2.0, 3.0]]))
    out.sum().backward()
    assert net.first.w.grad is not None
    net.zero_grad()
    assert net.first.w.grad is None
    out = net(f64([[1.0, 2.0, 3.0]]))
    out.sum().backward()
    net.zero_grad(set_to_none=False)
    assert net.first.w.grad.tolist() == [0.0, 0.0, 0.0]
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Scale", "Scale", "Linear", "Identity", "Sequential", "Net"]
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    with pytest.raises(TypeError, match=r"nn.Module.to only accepts floating point or complex dtypes"):
        net.to(ember.int64)


def test_forward_hooks():
    m = Scale()
    calls = []
    pre = m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    post = m.register_forward_hook(lambda mod, args, out: out + 1)
    kw = m.register_forward_pre_hook(lambda mod, args, kwargs: calls.append(kwargs) or None, with_kwargs=True)
    assert m(f64([1.0, 1.0, 1.0])).tolist() == [3.0, 5.0, 7.0]
    assert calls == [{}]
    pre.remove()
    post.remove()
    kw.remove()
    assert m(f64([1.0, 1.0, 1.0])).tolist() == [1.0, 2.0, 3.0]
    with m.register_forward_hook(lambda mod, args, out: out * 0):
        assert m(f64([1.0, 1.0, 1.0])).tolist() == [0.0, 0.0, 0.0]
    assert m(f64([1.0, 1.0, 1.0])).tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(NotImplementedError, match=r'Module \[Module\] is missing the required "forward" function'):
        nn.Module()(1)


def test_reprs_and_containers():
    seq = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.Identity()))
    assert repr(seq) == ("Sequential(\n  (0): Linear(in_features=2, out_features=3, bias=True)\n  (1): Sequential(\n"
                         "    (0): Identity()\n  )\n)")
    assert repr(nn.BatchNorm1d(4)) == "BatchNorm1d(4, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)"
    assert len(seq) == 2 and isinstance(seq[-1], nn.Sequential) and len(seq[:1]) == 1
    seq.append(nn.Identity())
    assert [n for n, _ in seq.named_children()] == ["0", "1", "2"]
    del seq[0]
    assert [n for n, _ in seq.named_children()] == ["0", "1"]
    layers = nn.ModuleList([nn.Identity(), nn.Linear(1, 1)])
    layers.append(nn.Identity())
    assert len(layers) == 3 and isinstance(layers[1], nn.Linear)
    assert [n for n, _ in layers.named_parameters()] == ["1.weight", "1.bias"]
    heads = nn.ModuleDict({"a": nn.Identity(), "b": nn.Linear(1, 2)})
    assert list(heads.keys()) == ["a", "b"] and "b" in heads
    plist = nn.ParameterList([f64([1.0]), nn.Parameter(f64([2.0, 3.0]))])
    assert [n for n, _ in plist.named_parameters()] == ["0", "1"] and all(p.requires_grad for p in plist)
    pdict = nn.ParameterDict({"scale": f64([1.0])})
    assert isinstance(pdict["scale"], nn.Parameter)
    assert repr(pdict) == "ParameterDict(  (scale): Parameter containing: [ember.float64 of size 1])"


def test_functional_call_semantics():
    m = Scale()
    x = f64([1.0, 1.0, 1.0])
    w = f64([10.0, 20.0, 30.0])
    assert functional_call(m, {"w": w}, (x,)).tolist() == [10.0, 20.0, 30.0]
    assert m.w.tolist() == [1.0, 2.0, 3.0]  # restored
    count = ember.zeros([], dtype=ember.int64)
    functional_call(m, ({"w": w}, {"count": count}), x)
    assert count.item() == 1 and m.count.item() == 1  # the buffer update went to the substitute
    with pytest.raises(RuntimeError, match=r"Error\(s\) in reparametrizing for Scale:\n\tMissing key\(s\): 'b', "
                                           r"'count', 'scratch'\."):
        functional_call(m, {"w": w}, x, strict=True)
    assert functional_call(m, {"w": w, "not.a.name": w}, x).tolist() == [10.0, 20.0, 30.0]  # ignored
    with pytest.raises(ValueError, match=r"w appeared in multiple dictionaries"):
        functional_call(m, ({"w": w}, {"w": w}), x)

    class Boom(Scale):
        def forward(self, x):
            raise ValueError("boom")

    b = Boom()
    with pytest.raises(ValueError, match="boom"):
        functional_call(b, {"w": w}, x)
    assert b.w.tolist() == [1.0, 2.0, 3.0]  # restored after the exception

    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = Scale()
            self.b = Scale()
            self.b.w = self.a.w

        def forward(self, x):
            return self.a(x) + self.b(x)

    tied = Tied()
    assert functional_call(tied, {"a.w": w}, x).tolist() == [20.0, 40.0, 60.0]  # both uses replaced
    assert functional_call(tied, {"a.w": w}, x, tie_weights=False).tolist() == [11.0, 22.0, 33.0]


def test_grad_and_vmap_through_functional_call():
    m = Scale()
    x = f64([1.0, 2.0, 3.0])

    def loss(params, inp):
        return (functional_call(m, params, (inp,)) ** 2).sum()

    params = {"w": f64([1.0, 1.0, 1.0]), "b": f64([0.5, 0.0, -0.5])}
    g = grad(loss)(params, x)
    out = x * params["w"] + params["b"]
    np.testing.assert_allclose(g["w"].numpy(), (2 * out * x).numpy())
    np.testing.assert_allclose(g["b"].numpy(), (2 * out).numpy())
    # an ensemble: one set of parameters per model, stacked, run by vmap
    stacked = {"w": f64([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]), "b": f64([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])}
    outs = vmap(lambda p: functional_call(m, p, (x,)))(stacked)
    assert outs.tolist() == [[1.0, 2.0, 3.0], [3.0, 5.0, 7.0]]


def test_state_dict_hooks():
    net = Net()
    calls = []
    pre = net.first.register_state_dict_pre_hook(lambda m, prefix, keep_vars: calls.append(("pre", prefix, keep_vars)))

    def post(module, state_dict, prefix, local_metadata):
        calls.append(("post", prefix, local_metadata["version"]))
        state_dict[prefix + "note"] = f64([1.0])

    post_handle = net.first.register_state_dict_post_hook(post)
    sd = net.state_dict(keep_vars=True)
    assert calls == [("pre", "first.", True), ("post", "first.", 1)]
    assert "first.note" in sd and sd._metadata["first"] == {"version": 1} and sd._metadata[""] == {"version": 1}
    assert sd["first.w"] is net.first.w  # keep_vars keeps the Parameters themselves
    pre.remove()
    post_handle.remove()
    assert "first.note" not in net.state_dict()

    net.second.register_state_dict_post_hook(lambda *a: {})
    with pytest.raises(RuntimeError, match=r"state_dict post-hook must return None"):
        net.state_dict()
    old_style = Scale()
    old_style._register_state_dict_hook(lambda m, sd, prefix, meta: {"only": sd["w"]})
    assert list(old_style.state_dict()) == ["only"]  # the older hook's returned dict replaces it


def test_load_state_dict_hooks_and_versions():
    source, target = Net(), Net()
    with ember.no_grad():
        source.first.w.mul_(5.0)
    sd = source.state_dict()
    seen = []

    def rename(module, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
        seen.append((prefix, local_metadata, strict))
        if prefix + "old_w" in state_dict:
            state_dict[prefix + "w"] = state_dict.pop(prefix + "old_w")

    target.first.register_load_state_dict_pre_hook(rename)
    renamed = {("first.old_w" if k == "first.w" else k): v for k, v in sd.items()}
    assert target.load_state_dict(renamed) == ([], [])
    assert seen == [("first.", {}, True)]  # a plain dict carries no _metadata, so no version
    assert target.first.w.tolist() == [5.0, 10.0, 15.0]

    def forgive(module, incompatible):
        incompatible.missing_keys.remove("second.b")

    handle = target.register_load_state_dict_post_hook(forgive)
    partial = {k: v for k, v in sd.items() if k != "second.b"}
    assert target.load_state_dict(partial).missing_keys == []  # strict sees what the hook left
    handle.remove()
    target.register_load_state_dict_post_hook(lambda m, keys: keys)
    with pytest.raises(RuntimeError, match=r"load_state_dict post-hook must return None"):
        target.load_state_dict(sd)
    with pytest.raises(TypeError, match=r"Expected state_dict to be dict-like, got <class 'list'>"):
        target.load_state_dict([1])

    # BatchNorm's version 1 checkpoints had no num_batches_tracked; loading one starts it at 0.
    bn = nn.BatchNorm1d(3)
    bn.num_batches_tracked.fill_(5)
    legacy = {k: v for k, v in nn.BatchNorm1d(3).state_dict().items() if k != "num_batches_tracked"}
    assert bn.load_state_dict(legacy).missing_keys == []
    assert bn.num_batches_tracked.item() == 5
    versioned = nn.BatchNorm1d(3).state_dict()
    del versioned["num_batches_tracked"]
    assert versioned._metadata[""]["version"] == 2
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "num_batches_tracked"'):
        bn.load_state_dict(versioned)


def test_extra_state_and_unexpected_nested_keys():
    class Counter(nn.Module):
        def __init__(self):
            super().__init__()
            self.steps = 0

        def get_extra_state(self):
            return {"steps": self.steps}

        def set_extra_state(self, state):
            self.steps = state["steps"]

    holder = nn.Sequential(Counter())
    holder[0].steps = 7
    sd = holder.state_dict()
    assert sd["0._extra_state"] == {"steps": 7}
    fresh = nn.Sequential(Counter())
    fresh.load_state_dict(sd)
    assert fresh[0].steps == 7
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "0._extra_state"'):
        fresh.load_state_dict({})
    net = Net()
    keys = net.load_state_dict({**net.state_dict(), "first.w.x": f64([1.0]), "nope.w": f64([1.0])}, strict=False)
    assert keys.unexpected_keys == ["nope.w", "first.w.x"] and keys.missing_keys == []
