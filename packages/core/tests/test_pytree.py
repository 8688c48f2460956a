"""ember.utils._pytree (torch.utils._pytree): flattening and rebuilding nested containers."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import ember
from ember.utils import _pytree as pytree

Point = collections.namedtuple("Point", "x y")


def test_flatten_and_rebuild_every_node_type():
    tree = {"b": 1, "a": (2, [3, None]), "p": Point(4, 5), "o": collections.OrderedDict(z=6),
            "d": collections.defaultdict(list, k=7), "q": collections.deque([8, 9], maxlen=3)}
    leaves, spec = pytree.tree_flatten(tree)
    assert leaves == [1, 2, 3, None, 4, 5, 6, 7, 8, 9]  # None is a leaf, as in PyTorch
    assert spec.num_leaves == 10 and not spec.is_leaf() and pytree.tree_leaves(tree) == leaves
    back = pytree.tree_unflatten([x * 10 if isinstance(x, int) else x for x in leaves], spec)
    assert back["a"] == (20, [30, None]) and back["p"] == Point(40, 50) and type(back["p"]) is Point
    assert type(back["o"]) is collections.OrderedDict and back["o"] == {"z": 60}
    assert type(back["d"]) is collections.defaultdict and back["d"].default_factory is list
    assert back["q"] == collections.deque([80, 90]) and back["q"].maxlen == 3
    assert list(back) == ["b", "a", "p", "o", "d", "q"]
    assert pytree.tree_flatten(ember.Size([2, 3]))[0] == [ember.Size([2, 3])]  # unregistered tuple subclass: leaf


def test_treespec_repr_and_pprint():
    spec = pytree.tree_structure({"b": 1, "a": (2, [3, None])})
    assert repr(spec) == ("TreeSpec(dict, ['b', 'a'], [*,\n  TreeSpec(tuple, None, [*,\n    TreeSpec(list, None, "
                          "[*,\n      *])])])")  # PyTorch's form
    assert pytree.treespec_pprint(spec) == "{'b': *, 'a': (*, [*, *])}"
    assert repr(pytree.tree_structure(5)) == "*" and pytree.tree_structure(5) == pytree.LeafSpec()
    assert spec == pytree.tree_structure({"b": 0, "a": (0, [0, 0])})
    assert spec != pytree.tree_structure({"a": (0, [0, 0]), "b": 0})  # key order is structure


def test_maps_and_predicates():
    t = ember.ones(2)
    tree = {"x": t, "n": 3, "pair": (t * 2, "label")}
    doubled = pytree.tree_map_only(ember.Tensor, lambda v: v * 2, tree)
    assert doubled["n"] == 3 and doubled["pair"][1] == "label"
    np.testing.assert_array_equal(doubled["pair"][0].numpy(), [4.0, 4.0])
    summed = pytree.tree_map(lambda a, b: a + b, {"u": 1, "v": [2, 3]}, {"u": 10, "v": [20, 30]})
    assert summed == {"u": 11, "v": [22, 33]}
    seen = []
    assert pytree.tree_map_(seen.append, [1, (2, 3)]) == [1, (2, 3)] and seen == [1, 2, 3]
    assert pytree.tree_all(lambda v: v > 0, [1, (2, 3)]) and not pytree.tree_any(lambda v: v > 5, [1, (2, 3)])
    assert pytree.tree_all_only(int, lambda v: v > 0, [1, "s", -1.0]) and pytree.tree_any_only(str, bool, [0, "s"])
    assert pytree.arg_tree_leaves(1, (2, 3), k=4) == [1, 2, 3, 4]
    assert pytree.tree_leaves([1, [2, 3]], is_leaf=lambda v: v == [2, 3]) == [1, [2, 3]]


def test_registered_nodes_and_errors():
    class Box:
        def __init__(self, items, tag):
            self.items, self.tag = items, tag

    pytree.register_pytree_node(Box, lambda b: (list(b.items), b.tag), lambda values, tag: Box(list(values), tag))
    try:
        leaves, spec = pytree.tree_flatten([Box([1, 2], "t"), 3])
        assert leaves == [1, 2, 3]
        back = pytree.tree_unflatten([4, 5, 6], spec)
        assert isinstance(back[0], Box) and back[0].items == [4, 5] and back[0].tag == "t"
        with pytest.raises(ValueError, match="is already registered as pytree node"):
            pytree.register_pytree_node(Box, lambda b: ([], None), lambda v, c: Box([], c))
    finally:
        del pytree.SUPPORTED_NODES[Box]
    with pytest.raises(ValueError, match=r"`leaves` has length 1 but the spec refers to a pytree that holds 2 items"):
        pytree.tree_unflatten([1], pytree.tree_structure((0, 0)))
    with pytest.raises(TypeError, match="Expected `treespec` to be instance of TreeSpec"):
        pytree.tree_unflatten([1], "spec")
    with pytest.raises(ValueError, match="Node type mismatch; expected tuple, but got list"):
        pytree.tree_map(lambda a, b: a, (1, 2), [1, 2])
    with pytest.raises(ValueError, match="Node context mismatch"):
        pytree.tree_map(lambda a, b: a, {"a": 1}, {"b": 1})


def test_func_transforms_take_the_new_node_types():
    d = collections.OrderedDict(w=ember.arange(6.0).reshape(2, 3), b=ember.ones(2, 3))
    out = ember.func.vmap(lambda t: t["w"] * 2 + t["b"])(d)
    np.testing.assert_array_equal(out.numpy(), np.arange(6.0).reshape(2, 3) * 2 + 1)
    grads = ember.func.grad(lambda p: (p.x * p.y).sum())(Point(ember.tensor([2.0]), ember.tensor([3.0])))
    assert type(grads) is Point and grads.x.tolist() == [3.0] and grads.y.tolist() == [2.0]
