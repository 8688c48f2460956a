"""PyTorch names of issue 18 (session 34): Tensor.output_nr, set_flush_denormal, embedding_bag's
four outputs, segment_reduce, lobpcg and ember.autograd.graph. Expected values are float64
references or constants read off PyTorch 2.13 on the same inputs (written down here)."""

import math
import platform

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck

F64 = ember.float64


# ---- Tensor.output_nr ---------------------------------------------------------------------------------


def test_output_nr_of_multi_output_ops_and_leaves():
    x = ember.ones(3, requires_grad=True)
    a, b, c = x.unbind()
    assert (a.output_nr, b.output_nr, c.output_nr) == (0, 1, 2)
    assert x.output_nr == 0
    assert (x * 2).output_nr == 0
    assert ember.ones(2).output_nr == 0
    _, second = ember.ones(4, requires_grad=True).split(2)
    assert second.output_nr == 1
    with ember.no_grad():  # reading it records nothing, even under no_grad
        assert second.output_nr == 1


# ---- set_flush_denormal -------------------------------------------------------------------------------


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64", "i686", "i386"),
                    reason="FTZ/DAZ are x86's MXCSR bits; elsewhere set_flush_denormal returns False")
@pytest.mark.parametrize("threads", [1, 2])
def test_set_flush_denormal_flushes_on_every_thread_of_an_op(threads):
    tiny64 = ember.tensor([1e-310, 1.0], dtype=F64)
    big32 = ember.full([1 << 20], 1e-40, dtype=ember.float32)  # made before the mode: no conversion flushes it
    before = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        assert ember.set_flush_denormal(True) is True
        flushed64, flushed32 = (tiny64 * 1.0).numpy(), (big32 * 1.0).numpy()  # 1M elements: several chunks
        assert ember.set_flush_denormal(False) is True
        kept64, kept32 = (tiny64 * 1.0).numpy(), (big32 * 1.0).numpy()
    finally:
        ember.set_flush_denormal(False)
        ember.set_num_threads(before)
    assert flushed64.tolist() == [0.0, 1.0] and kept64.tolist() == [1e-310, 1.0]
    assert np.count_nonzero(flushed32) == 0  # chunks run on pool workers flush too
    assert np.all(kept32 == np.float32(1e-40))


def test_set_flush_denormal_wants_a_bool():
    for bad, name in ((1, "int"), ("a", "str"), (None, "NoneType")):
        with pytest.raises(RuntimeError, match=f"flush_denormal expects a bool, but got {name}"):
            ember.set_flush_denormal(bad)


# ---- embedding_bag (torch.embedding_bag's 4-tuple) ---------------------------------------------------

_W = (ember.arange(12.0, dtype=F64).reshape(6, 2) * ember.tensor([1.0, -1.0], dtype=F64))
_IDX = [1, 2, 4, 5, 4, 3, 2, 0]
_OFF = [0, 2, 2, 5]
# (mode, include_last_offset, padding_idx) -> torch.embedding_bag's four outputs, PyTorch 2.13.
_BAG_EXPECTED = {
    (0, False, None): ([[6, -8], [0, 0], [26, -29], [10, -13]], [0, 0, 2, 2, 2, 3, 3, 3], [0] * 4, [0] * 4),
    (0, False, 2): ([[2, -3], [0, 0], [26, -29], [6, -8]], [0, 0, 2, 2, 2, 3, 3, 3], [0] * 4, [0] * 4),
    (0, True, None): ([[6, -8], [0, 0], [36, -42]], [0, 0, 2, 2, 2, 2, 2, 2], [0] * 3, [0] * 3),
    (0, True, 2): ([[2, -3], [0, 0], [32, -37]], [0, 0, 2, 2, 2, 2, 2, 2], [0] * 3, [0] * 3),
    (1, False, None): ([[3, -4], [0, 0], [26 / 3, -29 / 3], [10 / 3, -13 / 3]], [0, 0, 2, 2, 2, 3, 3, 3],
                       [2, 0, 3, 3], [2, 0, 3, 3]),
    (1, False, 2): ([[2, -3], [0, 0], [26 / 3, -29 / 3], [3, -4]], [0, 0, 2, 2, 2, 3, 3, 3], [1, 0, 3, 2],
                    [1, 0, 3, 2]),
    (1, True, None): ([[3, -4], [0, 0], [6, -7]], [0, 0, 2, 2, 2, 2, 2, 2], [2, 0, 6], [2, 0, 6]),
    (1, True, 2): ([[2, -3], [0, 0], [6.4, -7.4]], [0, 0, 2, 2, 2, 2, 2, 2], [1, 0, 5], [1, 0, 5]),
    (2, False, None): ([[4, -3], [0, 0], [10, -9], [6, -1]], [0, 0, 2, 2, 2, 3, 3, 3], [2, 0, 3, 3],
                       [[2, 1], [0, 0], [5, 4], [3, 0]]),
    (2, False, 2): ([[2, -3], [0, 0], [10, -9], [6, -1]], [0, 0, 2, 2, 2, 3, 3, 3], [1, 0, 3, 2],
                    [[1, 1], [0, 0], [5, 4], [3, 0]]),
    (2, True, None): ([[4, -3], [0, 0], [10, -1]], [0, 0, 2, 2, 2, 2, 2, 2], [2, 0, 6], [[2, 1], [0, 0], [5, 0]]),
    (2, True, 2): ([[2, -3], [0, 0], [10, -1]], [0, 0, 2, 2, 2, 2, 2, 2], [1, 0, 5], [[1, 1], [0, 0], [5, 0]]),
}


@pytest.mark.parametrize("key", sorted(_BAG_EXPECTED, key=str))
def test_embedding_bag_four_outputs_match_torch(key):
    mode, last, pad = key
    # with include_last_offset the CSR offsets of PyTorch's bags: its last bag runs to len(indices)
    offsets = ember.tensor([0, 2, 2, 8] if last else _OFF)
    out, offset2bag, bag_size, max_indices = ember.embedding_bag(_W, ember.tensor(_IDX), offsets, False, mode,
                                                                 False, None, last, pad)
    want = _BAG_EXPECTED[key]
    np.testing.assert_allclose(out.numpy(), np.array(want[0], dtype=np.float64), rtol=1e-12)
    assert offset2bag.tolist() == want[1]
    assert bag_size.tolist() == want[2]
    assert max_indices.tolist() == want[3]
    assert offset2bag.dtype == bag_size.dtype == max_indices.dtype == ember.int64


def test_embedding_bag_index_dtypes_fast_path_and_ties():
    w = ember.randn(6, 2)
    idx, off = ember.tensor(_IDX, dtype=ember.int32), ember.tensor(_OFF, dtype=ember.int32)
    out, offset2bag, bag_size, max_indices = ember.embedding_bag(w, idx, off, False, 1, False, None, False, None)
    assert (offset2bag.dtype, bag_size.dtype, max_indices.dtype) == (ember.int32,) * 3
    # mode 0 on a contiguous float32 weight without padding: PyTorch returns no offset2bag
    _, offset2bag, bag_size, _ = ember.embedding_bag(w, idx.long(), off, False, 0, False, None, False, None)
    assert offset2bag.numel() == 0 and bag_size.tolist() == [0, 0, 0, 0]
    _, offset2bag, _, _ = ember.embedding_bag(w, idx.long(), off, False, 0, False, None, False, 2)
    assert offset2bag.numel() == 8
    # ties in max: the first maximum's row (PyTorch 2.13: [[0, 2], [0, 0]])
    w = ember.tensor([[1.0, 2], [1, 2], [0, 5], [1, 0]])
    res = ember.embedding_bag(w, ember.tensor([2, 0, 1, 3, 0]), ember.tensor([0, 4]), False, 2, False, None, False,
                              None)
    assert res[0].tolist() == [[1.0, 5.0], [1.0, 2.0]]
    assert res[1].tolist() == [0, 0, 0, 0, 1] and res[2].tolist() == [4, 1]
    assert res[3].tolist() == [[0, 2], [0, 0]]


def test_embedding_bag_errors_and_gradient():
    w, idx, off = ember.randn(6, 2), ember.tensor(_IDX), ember.tensor(_OFF)
    with pytest.raises(RuntimeError, match="per_sample_weights only supported with mode='sum'"):
        ember.embedding_bag(w, idx, off, False, 1, False, ember.ones(8), False, None)
    with pytest.raises(RuntimeError, match="`mode` must be sum, mean, or max."):
        ember.embedding_bag(w, idx, off, False, 3, False, None, False, None)
    with pytest.raises(RuntimeError, match="padding_idx must be within the number of embeddings, -6 through 5, "
                                           "but got 6"):
        ember.embedding_bag(w, idx, off, False, 0, False, None, False, 6)
    with pytest.raises(RuntimeError, match="include_last_offset: number of offset should be at least 1"):
        ember.embedding_bag(w, idx, ember.tensor([], dtype=ember.int64), False, 0, False, None, True, None)
    # a negative padding_idx counts from the end: -1 is row 5
    a = ember.embedding_bag(w, idx, off, False, 0, False, None, False, -1)[0]
    b = ember.embedding_bag(w, idx, off, False, 0, False, None, False, 5)[0]
    assert ember.equal(a, b)
    wd = ember.randn(6, 2, dtype=F64, requires_grad=True)
    psw = ember.rand(8, dtype=F64, requires_grad=True)
    for mode in (0, 1, 2):
        assert gradcheck(lambda t, mode=mode: ember.embedding_bag(t, idx, off, False, mode, False, None, False, None)[0], (wd,))
    assert gradcheck(lambda t, p: ember.embedding_bag(t, idx, off, False, 0, False, p, False, None)[0], (wd, psw))


# ---- segment_reduce ------------------------------------------------------------------------------------

_DATA = [[1.0, 2], [3, -4], [5, 6], [0.5, -1], [7, 8]]
# reduce -> (lengths [2, 0, 3], the same with initial=10), PyTorch 2.13
_SEGMENT_EXPECTED = {
    "sum": ([[4, -2], [0, 0], [12.5, 13]], [[14, 8], [10, 10], [22.5, 23]]),
    "mean": ([[2, -1], [math.nan] * 2, [12.5 / 3, 13 / 3]], [[7, 4], [10, 10], [7.5, 23 / 3]]),
    "max": ([[3, 2], [-math.inf] * 2, [7, 8]], [[10, 10]] * 3),
    "min": ([[1, -4], [math.inf] * 2, [0.5, -1]], [[1, -4], [10, 10], [0.5, -1]]),
    "prod": ([[3, -8], [1, 1], [17.5, -48]], [[30, -80], [10, 10], [175, -480]]),
}


@pytest.mark.parametrize("reduce", sorted(_SEGMENT_EXPECTED))
def test_segment_reduce_values(reduce):
    data = ember.tensor(_DATA, dtype=F64)
    plain, initial = _SEGMENT_EXPECTED[reduce]
    by_lengths = ember.segment_reduce(data, reduce, lengths=ember.tensor([2, 0, 3]))
    by_offsets = ember.segment_reduce(data, reduce, offsets=ember.tensor([0, 2, 2, 5]))
    with_initial = ember.segment_reduce(data, reduce, lengths=ember.tensor([2, 0, 3]), initial=10.0)
    np.testing.assert_allclose(by_lengths.numpy(), np.array(plain), rtol=1e-12)
    np.testing.assert_allclose(by_offsets.numpy(), np.array(plain), rtol=1e-12)
    np.testing.assert_allclose(with_initial.numpy(), np.array(initial), rtol=1e-12)
    assert by_lengths.dtype == F64
    # against a float64 loop over the segments
    rng = np.random.default_rng(0)
    x = rng.standard_normal((9, 3))
    lengths = [3, 0, 1, 5]
    got = ember.segment_reduce(ember.tensor(x), reduce, lengths=ember.tensor(lengths), axis=-2).numpy()
    fn = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod}[reduce]
    start = 0
    for i, n in enumerate(lengths):
        if n:
            np.testing.assert_allclose(got[i], fn(x[start:start + n], axis=0), rtol=1e-12)
        start += n


def test_segment_reduce_gradients():
    x = ember.tensor([1.0, 2, 2, 0, 3], dtype=F64, requires_grad=True)
    lengths = ember.tensor([3, 0, 2])
    # PyTorch 2.13: ties share the gradient of max; prod's gradient is the product of the others
    expected = {"max": [0, 0.5, 0.5, 0, 1], "min": [1, 0, 0, 1, 0], "prod": [4, 2, 2, 3, 0],
                "mean": [1 / 3] * 3 + [0.5] * 2}
    for reduce, want in expected.items():
        out = ember.segment_reduce(x, reduce, lengths=lengths)
        (g,) = ember.autograd.grad(out[ember.tensor([0, 2])].sum(), x)
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-12)
    data = ember.randn(6, 2, dtype=F64, requires_grad=True)
    for reduce in ("sum", "mean", "max", "min", "prod"):
        assert gradcheck(lambda d, reduce=reduce: ember.segment_reduce(d, reduce, lengths=ember.tensor([2, 1, 3])), (data,))
        assert gradcheck(lambda d, reduce=reduce: ember.segment_reduce(d, reduce, offsets=ember.tensor([0, 4, 6]), initial=0.5),
                         (data,))


def test_segment_reduce_errors():
    d = ember.tensor(_DATA, dtype=F64)
    lengths = ember.tensor([2, 0, 3])
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean, amax or amin, got foo"):
        ember.segment_reduce(d, "foo", lengths=lengths)
    with pytest.raises(RuntimeError, match=r"segment_reduce\(\): Either lengths or offsets must be defined."):
        ember.segment_reduce(d, "sum")
    with pytest.raises(RuntimeError, match=r"segment_reduce\(\): indices based reduction is not supported yet."):
        ember.segment_reduce(d, "sum", indices=lengths)
    with pytest.raises(RuntimeError, match=r"Expected all rows of lengths along axis to sum to "):
        ember.segment_reduce(d, "sum", lengths=ember.tensor([2, 2]))
    with pytest.raises(RuntimeError, match="lengths contains negative value!"):
        ember.segment_reduce(d, "sum", lengths=ember.tensor([6, -1]))
    with pytest.raises(RuntimeError, match="Expected axis to be the last dimension of lengths but got 1."):
        ember.segment_reduce(d, "sum", lengths=lengths, axis=1)
    with pytest.raises(RuntimeError, match="offsets must be non-decreasing"):
        ember.segment_reduce(d, "sum", offsets=ember.tensor([0, 2, 9]))
    with pytest.raises(NotImplementedError):
        ember.segment_reduce(d.long(), "sum", lengths=lengths)
    with pytest.raises(NotImplementedError):
        ember.segment_reduce(d, "sum", lengths=lengths.double())
    # no segments at all, and empty segments only
    assert ember.segment_reduce(ember.zeros(0, 2, dtype=F64), "sum", lengths=ember.tensor([], dtype=ember.int64)
                                ).shape == (0, 2)
    assert ember.segment_reduce(ember.zeros(0, 2, dtype=F64), "max", lengths=ember.tensor([0, 0])).tolist() == \
        [[-math.inf, -math.inf]] * 2
    # unsafe=True: lengths may cover fewer rows than data has (PyTorch: [[4, -2], [5.5, 5]])
    out = ember.segment_reduce(d, "sum", lengths=ember.tensor([2, 2]), unsafe=True)
    assert out.tolist() == [[4.0, -2.0], [5.5, 5.0]]
    # offsets that skip leading rows read from offsets[0] (PyTorch: [[3, -4], [0, 0], [12.5, 13]])
    out = ember.segment_reduce(d, "sum", offsets=ember.tensor([1, 2, 2, 5]))
    assert out.tolist() == [[3.0, -4.0], [0.0, 0.0], [12.5, 13.0]]


# ---- ember.autograd.graph ---------------------------------------------------------------------------------

from ember.autograd import graph  # noqa: E402


def test_graph_node_is_the_type_of_every_grad_fn():
    a = ember.rand(2, requires_grad=True)
    c = a * 2
    assert isinstance(c.grad_fn, graph.Node)
    assert issubclass(type(c.grad_fn), graph.Node)
    edge = graph.get_gradient_edge(a)
    assert isinstance(edge, graph.GradientEdge) and isinstance(edge.node, graph.Node)
    assert edge.node.name() == "AccumulateGrad" and edge.output_nr == 0
    assert edge.node is c.grad_fn.next_functions[0][0]
    _, second = ember.ones(4, requires_grad=True).split(2)
    assert graph.get_gradient_edge(second) == (second.grad_fn, 1)
    with pytest.raises(RuntimeError, match="It is not possible to get the gradient edge for a Tensor that does not "
                                           "require gradients"):
        graph.get_gradient_edge(ember.ones(2))
    assert not isinstance(object(), graph.Node)
    with pytest.raises(TypeError):
        graph.Node()  # abstract


def test_increment_version():
    x = ember.ones(3)
    v = x._version
    graph.increment_version(x)
    assert x._version == v + 1 and x.tolist() == [1.0, 1.0, 1.0]
    y, z = ember.zeros(()), ember.zeros(2, dtype=ember.int64)
    graph.increment_version([y, z])
    assert y._version == 1 and z._version == 1
    # a backward that saved the tensor now refuses it, as after an in-place op
    a = ember.rand(3, requires_grad=True)
    b = a.exp()  # saves its output
    graph.increment_version(b)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()
    with ember.inference_mode():
        t = ember.ones(2)
    graph.increment_version(t)  # no version counter: left alone


def test_multi_grad_hook_all_mode():
    a = ember.rand(2, 3, requires_grad=True)
    b = ember.rand(2, 3, requires_grad=True)
    c, d = a * b, a * b
    seen = []
    handle = graph.register_multi_grad_hook((a, b, c, d), lambda grads: seen.append([g is not None for g in grads]))
    c.sum().backward(retain_graph=True)
    assert seen == [[True, True, True, False]]  # PyTorch 2.13's docstring example
    (c.sum() + d.sum()).backward(retain_graph=True)
    assert seen[-1] == [True, True, True, True]
    ember.autograd.grad(c.sum(), (c,), retain_graph=True)
    assert seen[-1] == [False, False, True, False]
    # PyTorch gives [True, False, True, False] here: Ember's engine runs no hooks of a leaf whose
    # gradient it captures for `inputs`, so the hook does not wait for a
    c.sum().backward(inputs=(a,), retain_graph=True)
    assert seen[-1] == [False, False, True, False]
    grads = []
    graph.register_multi_grad_hook((a, b), grads.append)
    (a * 3 + b).sum().backward()
    assert [g.tolist() for g in grads[0]] == [[[3.0] * 3] * 2, [[1.0] * 3] * 2]
    count = len(seen)
    handle.remove()
    c.sum().backward(retain_graph=True)
    assert len(seen) == count
    with pytest.raises(ValueError, match=r"Expects mode to be one of \('all', 'any'\) but got x"):
        graph.register_multi_grad_hook((a,), print, mode="x")
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        graph.register_multi_grad_hook((a, ember.ones(2)), print)


def test_multi_grad_hook_any_mode():
    a = ember.rand(2, requires_grad=True)
    b = ember.rand(2, requires_grad=True)
    c, d = a * b, a * b
    calls = []
    graph.register_multi_grad_hook((a, b, c, ember.ones(2)), lambda g: calls.append(g.shape), mode="any")
    (c.sum() + d.sum()).backward(retain_graph=True)
    assert len(calls) == 1  # once per backward
    c.sum().backward(retain_graph=True)
    assert len(calls) == 2
    d.sum().backward()  # reaches a and b only
    assert len(calls) == 3


class _Square(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * grad * x


def test_saved_tensors_hooks_on_function_saves():
    log = []

    def pack(t):
        log.append("pack")
        return t.detach().numpy().copy()

    def unpack(arr):
        log.append("unpack")
        return ember.from_numpy(arr)

    x = ember.tensor([1.0, 2.0, 3.0], dtype=F64, requires_grad=True)
    with graph.saved_tensors_hooks(pack, unpack):
        y = _Square.apply(x)
    assert log == ["pack"]
    y.sum().backward()
    assert log == ["pack", "unpack"] and x.grad.tolist() == [2.0, 4.0, 6.0]
    with graph.saved_tensors_hooks(lambda t: t, lambda p: "not a tensor"):
        y = _Square.apply(x)
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor"):
        y.sum().backward()
    # as in PyTorch, no version check under hooks: backward reads what the hooks kept
    with graph.saved_tensors_hooks(lambda t: t, lambda p: p):
        z = x.detach().clone().requires_grad_()
        w = z * 1
        y = _Square.apply(w)
    with ember.no_grad():
        w.add_(1)
    y.sum().backward()
    assert z.grad.tolist() == [4.0, 6.0, 8.0]


def test_saved_tensors_hooks_are_per_thread():
    import threading

    x = ember.tensor([1.0, 2.0], requires_grad=True)
    with graph.save_on_cpu():
        assert graph._current_hooks() is not None
        seen = []
        thread = threading.Thread(target=lambda: seen.append(graph._current_hooks()))
        thread.start()
        thread.join()
        assert seen == [None]  # another thread sees no hooks
        y = _Square.apply(x)
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]


def test_save_on_cpu_and_disable():
    x = ember.tensor([1.0, -2.0], dtype=F64, requires_grad=True)
    with graph.save_on_cpu(pin_memory=True):
        y = _Square.apply(x) + x.exp()
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.array([1.0, -2.0]) + np.exp([1.0, -2.0]), rtol=1e-12)
    with graph.disable_saved_tensors_hooks("hooks are off here"):
        with pytest.raises(RuntimeError, match="hooks are off here"):
            with graph.save_on_cpu():
                pass
    with graph.save_on_cpu():  # enabled again after the block
        pass
    assert {"saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks", "register_multi_grad_hook", "Node",
            "increment_version", "GradientEdge", "get_gradient_edge"} <= set(graph.__all__)
    assert "graph" in ember.autograd.__all__


# ---- lobpcg -------------------------------------------------------------------------------------------------


def _spd(m, seed, spread=1.5):
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.standard_normal((m, m)))[0]
    return Q @ np.diag(np.linspace(1, 50, m) ** spread) @ Q.T, rng


@pytest.mark.parametrize("method", ["ortho", "basic"])
@pytest.mark.parametrize("largest", [True, False])
def test_lobpcg_eigenpairs_match_eigh(method, largest):
    m = 40
    A, rng = _spd(m, 0)
    ref_vals, ref_vecs = np.linalg.eigh(A)
    order = np.argsort(-ref_vals if largest else ref_vals)[:3]
    X0 = ember.tensor(rng.standard_normal((m, 4)))
    E, X = ember.lobpcg(ember.tensor(A), k=3, X=X0, largest=largest, method=method)
    assert E.shape == (3,) and X.shape == (m, 3) and E.dtype == F64
    np.testing.assert_allclose(E.numpy(), ref_vals[order], rtol=1e-10)
    Xn = X.numpy()
    np.testing.assert_allclose(Xn.T @ Xn, np.eye(3), atol=1e-10)
    for i, j in enumerate(order):  # the same vectors up to sign
        np.testing.assert_allclose(abs(Xn[:, i] @ ref_vecs[:, j]), 1.0, atol=1e-8)


@pytest.mark.parametrize("method", ["ortho", "basic"])
def test_lobpcg_generalized_problem_and_preconditioner(method):
    m = 30
    A, rng = _spd(m, 1)
    G = rng.standard_normal((m, m))
    B = G @ G.T / m + np.eye(m)
    L_inv = np.linalg.inv(np.linalg.cholesky(B))
    ref = np.linalg.eigvalsh(L_inv @ A @ L_inv.T)  # the pencil's eigenvalues, in float64
    E, X = ember.lobpcg(ember.tensor(A), k=2, B=ember.tensor(B), X=ember.tensor(rng.standard_normal((m, 2))),
                        method=method, largest=False)
    np.testing.assert_allclose(E.numpy(), ref[:2], rtol=1e-10)
    Xn = X.numpy()
    np.testing.assert_allclose(Xn.T @ B @ Xn, np.eye(2), atol=1e-10)  # B-orthonormal
    np.testing.assert_allclose(A @ Xn, B @ Xn * E.numpy(), atol=1e-5)
    iK = ember.tensor(np.diag(1 / np.diag(A)))  # a Jacobi preconditioner
    E, _ = ember.lobpcg(ember.tensor(A), k=2, iK=iK, X=ember.tensor(rng.standard_normal((m, 2))), method=method)
    np.testing.assert_allclose(E.numpy(), np.linalg.eigvalsh(A)[::-1][:2], rtol=1e-10)


def test_lobpcg_defaults_batches_and_dtypes():
    A, _ = _spd(12, 2, spread=1.0)
    ember.manual_seed(0)
    E, X = ember.lobpcg(ember.tensor(A))  # k = 1, a random start, the largest
    np.testing.assert_allclose(E.numpy(), [50.0], rtol=1e-10)
    E, X = ember.lobpcg(ember.tensor(A), k=2, n=3)
    assert E.shape == (2,) and X.shape == (12, 2)
    E32, _ = ember.lobpcg(ember.tensor(A, dtype=ember.float32), k=1)
    assert E32.dtype == ember.float32
    np.testing.assert_allclose(E32.numpy(), [50.0], rtol=1e-4)
    A2, _ = _spd(12, 3, spread=2.0)
    batch = ember.tensor(np.stack([A, A2]))
    E, X = ember.lobpcg(batch, k=2, largest=False)
    assert E.shape == (2, 2) and X.shape == (2, 12, 2)
    np.testing.assert_allclose(E.numpy(), [np.linalg.eigvalsh(A)[:2], np.linalg.eigvalsh(A2)[:2]], rtol=1e-9)


def test_lobpcg_errors():
    A = ember.tensor(_spd(12, 0)[0])
    with pytest.raises(AssertionError, match="A must be square"):
        ember.lobpcg(A[:, :5])
    with pytest.raises(ValueError, match=r"LOBPCG algorithm is not applicable when the number of A rows \(=12\) is "
                                         r"smaller than 3 x the number of requested eigenpairs \(=5\)"):
        ember.lobpcg(A, k=5)
    with pytest.raises(AssertionError, match="A and B must have same shape"):
        ember.lobpcg(A, B=ember.eye(3, dtype=F64))
    with pytest.raises(AssertionError, match=r"X shape mismatch: got \(11, 2\), expected \(12, 2\)"):
        ember.lobpcg(A, X=ember.randn(11, 2, dtype=F64))
    with pytest.raises(ValueError, match="method must be 'ortho' or 'basic'"):
        ember.lobpcg(A, method="x")
    Ag = A.clone().requires_grad_()
    E, _ = ember.lobpcg(Ag, B=ember.eye(12, dtype=F64))  # forward works, as in PyTorch
    with pytest.raises(ValueError, match=r"lobpcg.backward does not support backward with B != I yet."):
        E.sum().backward()


@pytest.mark.parametrize(("method", "largest"), [("ortho", True), ("basic", False)])
def test_lobpcg_gradients(method, largest):
    m = 9
    A, rng = _spd(m, 4, spread=1.0)
    X0 = ember.tensor(rng.standard_normal((m, 2)))
    a = ember.tensor(A, requires_grad=True)

    def f(t):
        E, X = ember.lobpcg(t, X=X0, tol=1e-13, niter=500, method=method, largest=largest)
        return E, X * X  # eigenvectors up to sign: a sign-free function of them

    assert gradcheck(f, (a,))
    # an eigenvalue's gradient is x x^T (A symmetrized, as PyTorch does)
    E, X = ember.lobpcg(a, X=X0, method=method, largest=largest)
    (g,) = ember.autograd.grad(E.sum(), a)
    Xn = X.detach().numpy()
    np.testing.assert_allclose(g.numpy(), Xn @ Xn.T, atol=1e-10)


@pytest.mark.parametrize("method", ["ortho", "basic"])
def test_lobpcg_larger_and_repeated_eigenvalues(method):
    rng = np.random.default_rng(5)
    m = 200
    Q = np.linalg.qr(rng.standard_normal((m, m)))[0]
    d = np.linspace(1, 100, m)
    d[-3:], d[:3] = 100.0, 1.0  # a threefold eigenvalue at each end
    A = ember.tensor(Q @ np.diag(d) @ Q.T)
    ember.manual_seed(0)
    E, X = ember.lobpcg(A, k=5, method=method)
    np.testing.assert_allclose(E.numpy(), np.sort(d)[::-1][:5], rtol=1e-12)
    E, X = ember.lobpcg(A, k=5, method=method, largest=False)
    np.testing.assert_allclose(E.numpy(), np.sort(d)[:5], rtol=1e-11)
    np.testing.assert_allclose(X.numpy().T @ X.numpy(), np.eye(5), atol=1e-10)
