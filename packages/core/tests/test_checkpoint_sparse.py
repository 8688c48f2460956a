"""ember.save / ember.load of sparse tensors in every layout (sparse_coo, sparse_csr, sparse_csc,
sparse_bsr, sparse_bsc), without PyTorch: round trips (float32/float64 values, int32/int64
indices, zero nnz, requires_grad, weights_only True and False, both archive formats), the pickle
PyTorch writes (_rebuild_sparse_tensor(_get_layout(name), parts) with a torch.Size), and crafted
archives whose indices are out of range or whose compressed indices decrease, which must be
refused with a clear error. tests/test_sparse_torch_parity.py crosses files with PyTorch."""

import io
import pickle
import pickletools
import struct
import zipfile

import numpy as np
import pytest

import ember
from ember.sparse import SparseTensor

LAYOUTS = {"csr": ember.sparse_csr, "csc": ember.sparse_csc, "bsr": ember.sparse_bsr, "bsc": ember.sparse_bsc}
INDEX_DTYPES = {"int32": ember.int32, "int64": ember.int64}
VALUE_DTYPES = {"float32": ember.float32, "float64": ember.float64}
# a 4x6 matrix whose 2x2 blocks (0, 0), (0, 2), (1, 1) are stored
DENSE = np.zeros((4, 6))
DENSE[0:2, 0:2] = [[1.0, 0.0], [2.0, 3.0]]
DENSE[0:2, 4:6] = [[0.0, 4.5], [0.0, 0.0]]
DENSE[2:4, 2:4] = [[-1.0, 6.0], [7.0, 0.0]]


def _compressed(kind, value_dtype=ember.float64, index_dtype=ember.int64, empty=False, requires_grad=False):
    dense = ember.tensor(np.zeros_like(DENSE) if empty else DENSE, dtype=value_dtype)
    t = {"csr": lambda: dense.to_sparse_csr(), "csc": lambda: dense.to_sparse_csc(),
         "bsr": lambda: dense.to_sparse_bsr((2, 2)), "bsc": lambda: dense.to_sparse_bsc((2, 2))}[kind]()
    cidx, pidx = (t.crow_indices(), t.col_indices()) if kind in ("csr", "bsr") else (t.ccol_indices(), t.row_indices())
    return ember.sparse_compressed_tensor(cidx.to(index_dtype), pidx.to(index_dtype), t.values(), t.shape,
                                          layout=LAYOUTS[kind], requires_grad=requires_grad)


def _parts(t):
    if t.layout is ember.sparse_coo:
        return t._indices(), t._values()
    if t.layout in (ember.sparse_csr, ember.sparse_bsr):
        return t.crow_indices(), t.col_indices(), t.values()
    return t.ccol_indices(), t.row_indices(), t.values()


def _assert_same(back, t):
    assert isinstance(back, SparseTensor) and back.layout is t.layout
    assert tuple(back.shape) == tuple(t.shape) and back.dtype == t.dtype
    for got, want in zip(_parts(back), _parts(t), strict=True):
        assert got.dtype == want.dtype and tuple(got.shape) == tuple(want.shape)
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    np.testing.assert_array_equal(back.to_dense().detach().numpy(), t.to_dense().detach().numpy())


def _round_trip(obj, weights_only=True, **save_kwargs):
    buf = io.BytesIO()
    ember.save(obj, buf, **save_kwargs)
    buf.seek(0)
    return ember.load(buf, weights_only=weights_only)


def _data_pkl(obj) -> bytes:
    buf = io.BytesIO()
    ember.save(obj, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zf:
        return zf.read("archive/data.pkl")


# ----------------------------------------------------------------------------- round trips

@pytest.mark.parametrize("weights_only", [True, False])
@pytest.mark.parametrize("empty", [False, True], ids=["nnz", "zero_nnz"])
@pytest.mark.parametrize("index_dtype", INDEX_DTYPES.values(), ids=INDEX_DTYPES)
@pytest.mark.parametrize("value_dtype", VALUE_DTYPES.values(), ids=VALUE_DTYPES)
@pytest.mark.parametrize("kind", LAYOUTS)
def test_compressed_layouts_round_trip(kind, value_dtype, index_dtype, empty, weights_only):
    t = _compressed(kind, value_dtype, index_dtype, empty)
    assert (t.values().shape[0] == 0) == empty
    back = _round_trip({"t": t, "layout": t.layout}, weights_only)
    _assert_same(back["t"], t)
    assert back["layout"] is t.layout
    assert not back["t"].requires_grad


@pytest.mark.parametrize("weights_only", [True, False])
@pytest.mark.parametrize("empty", [False, True], ids=["nnz", "zero_nnz"])
@pytest.mark.parametrize("value_dtype", VALUE_DTYPES.values(), ids=VALUE_DTYPES)
@pytest.mark.parametrize("coalesced", [False, True], ids=["uncoalesced", "coalesced"])
def test_coo_round_trips(coalesced, value_dtype, empty, weights_only):
    indices = ember.zeros(2, 0, dtype=ember.int64) if empty else ember.tensor([[2, 0, 2], [1, 3, 1]])
    values = ember.zeros(0, 2, dtype=value_dtype) if empty else ember.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]],
                                                                            dtype=value_dtype)
    t = ember.sparse_coo_tensor(indices, values, (3, 4, 2))
    if coalesced:
        t = t.coalesce()
    back = _round_trip(t, weights_only)
    _assert_same(back, t)
    assert back.is_coalesced() == t.is_coalesced()


@pytest.mark.parametrize("kind", LAYOUTS)
def test_a_leaf_that_requires_grad_loads_as_one(kind):
    t = _compressed(kind, requires_grad=True)
    for weights_only in (True, False):
        back = _round_trip(t, weights_only)
        _assert_same(back, t)
        assert back.requires_grad and back.is_leaf


@pytest.mark.parametrize("kind", LAYOUTS)
def test_legacy_format_and_shared_containers(kind):
    t = _compressed(kind, ember.float32, ember.int32)
    back = _round_trip({"a": t, "b": [t, ember.arange(3.0)]}, _use_new_zipfile_serialization=False)
    _assert_same(back["a"], t)
    _assert_same(back["b"][0], t)
    assert back["b"][0] is back["a"]  # pickled once, memoized


# ----------------------------------------------------------------------------- the pickle PyTorch writes

@pytest.mark.parametrize("kind", LAYOUTS)
def test_compressed_tensors_pickle_as_pytorch_does(kind):
    """torch 2.13: _rebuild_sparse_tensor(_get_layout("torch.sparse_<kind>"), (compressed_indices,
    plain_indices, values, torch.Size(shape))), each tensor a _rebuild_tensor_v2 call."""
    ops = [(op.name, arg) for op, arg, _ in pickletools.genops(_data_pkl(_compressed(kind)))]
    globals_ = [arg for name, arg in ops if name == "GLOBAL"]
    assert globals_[:3] == ["torch._utils _rebuild_sparse_tensor", "torch.serialization _get_layout",
                            "torch._utils _rebuild_tensor_v2"]
    assert globals_[-1] == "torch Size"
    assert ("BINUNICODE", f"torch.sparse_{kind}") in ops
    # three storages: the two int64 index tensors (the storage class pickled once, then memoized), the values
    assert [arg for name, arg in ops if name == "GLOBAL" and arg.endswith("Storage")] == [
        "torch LongStorage", "torch DoubleStorage"]
    assert [name for name, _ in ops].count("BINPERSID") == 3


def test_coo_pickles_its_size_as_a_torch_size_and_its_coalesced_flag():
    t = ember.sparse_coo_tensor(ember.tensor([[1, 0]]), ember.tensor([1.0, 2.0]), (3,))
    ops = [(op.name, arg) for op, arg, _ in pickletools.genops(_data_pkl(t))]
    assert ("GLOBAL", "torch Size") in ops and ("BINUNICODE", "torch.sparse_coo") in ops
    tail = [name for name, _ in ops if name not in ("BINPUT", "BINGET")][-7:]
    assert tail == ["TUPLE1", "REDUCE", "NEWFALSE", "TUPLE", "TUPLE2", "REDUCE", "STOP"]  # (..., Size, False)


def test_a_plain_tuple_size_from_older_files_still_loads():
    """Files written before the size was a torch.Size (Ember's own, older PyTorch's) hold a tuple."""
    pkl = _data_pkl(_compressed("csr"))
    size = pickle.GLOBAL + b"torch\nSize\n"
    start = pkl.rindex(size)
    # `GLOBAL torch Size` [BINPUT] <tuple> [BINPUT] TUPLE1 [BINPUT] REDUCE: drop the call, keep the tuple
    ops = [(op.name, pos) for op, _, pos in pickletools.genops(pkl) if pos >= start]
    reduce_at = next(pos for name, pos in ops if name == "REDUCE")
    tuple1_at = next(pos for name, pos in ops if name == "TUPLE1")
    after_global = next(pos for name, pos in ops[1:] if name != "BINPUT")
    crafted = pkl[:start] + pkl[after_global:tuple1_at] + pkl[reduce_at + 1:]
    assert size not in crafted and b"torch\nSize" not in crafted
    back = ember.load(_archive_with(crafted, _compressed("csr")))
    _assert_same(back, _compressed("csr"))


def test_unknown_layouts_and_malformed_parts_are_refused():
    with pytest.raises(pickle.UnpicklingError, match=r"_get_layout: Ember has the layouts"):
        ember.load(_archive_with(_call(b"torch.serialization", b"_get_layout", pickle.BINUNICODE
                                       + struct.pack("<I", 13) + b"torch._mkldnn")))
    good = _compressed("csc")
    wrong = SparseTensor._compressed(ember.sparse_csc, good.ccol_indices().double(), good.row_indices().double(),
                                     good.values(), good.shape)
    with pytest.raises(pickle.UnpicklingError, match=r"invalid sparse tensor: ccol_indices and row_indices dtype "
                                                     r"must be Int or Long"):
        _round_trip(wrong)


def _call(module: bytes, name: bytes, args: bytes) -> bytes:
    return (pickle.PROTO + b"\x02" + pickle.GLOBAL + module + b"\n" + name + b"\n" + pickle.MARK + args
            + pickle.TUPLE + pickle.REDUCE + pickle.STOP)


def _archive_with(pkl: bytes, source=None) -> io.BytesIO:
    """An archive holding `pkl` as its data.pkl and the storages ember.save writes for `source`."""
    entries = {}
    if source is not None:
        buf = io.BytesIO()
        ember.save(source, buf)
        with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zf:
            entries = {i.filename: zf.read(i) for i in zf.infolist()}
    entries["archive/data.pkl"] = pkl
    entries.setdefault("archive/version", b"3\n")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    out.seek(0)
    return out


# ----------------------------------------------------------------------------- crafted archives

def _patched(t, key: str, new_values, dtype) -> io.BytesIO:
    """`t`'s archive with storage record data/<key> overwritten: what a corrupt or hostile file holds."""
    buf = io.BytesIO()
    ember.save(t, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zf:
        entries = {i.filename: zf.read(i) for i in zf.infolist()}
    raw = np.asarray(new_values, dtype=dtype).tobytes()
    assert len(raw) == len(entries[f"archive/data/{key}"])
    entries[f"archive/data/{key}"] = raw
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    out.seek(0)
    return out


# (layout, record to patch: "0" compressed indices, "1" plain indices, its new contents, the message).
# DENSE's parts: csr crow [0, 2, 4, 6, 7] col [0, 5, 0, 1, 2, 3, 2]; csc ccol [0, 2, 3, 4, 6, 6, 7]
# row [0, 1, 1, 2, 2, 3, 0]; bsr crow [0, 2, 3] col [0, 2, 1]; bsc ccol [0, 1, 2, 3] row [0, 1, 0].
CRAFTED = [
    ("csr", "1", [0, 5, 0, 1, 2, 3, 99], r"`0 <= col_indices < ncols` is not satisfied"),
    ("csc", "1", [0, 1, 1, 2, 2, 3, -5], r"`0 <= row_indices < nrows` is not satisfied"),
    ("bsr", "1", [0, 2, 7], r"`0 <= col_indices < ncols` is not satisfied"),
    ("bsc", "1", [0, 1 << 40, 0], r"`0 <= row_indices < nrows` is not satisfied"),
    ("csr", "0", [0, 4, 2, 6, 7], r"`0 <= crow_indices\[\.\.\., 1:\] - crow_indices\[\.\.\., :-1\] <= ncols` is not "
                                  r"satisfied"),
    ("csc", "0", [0, 3, 2, 4, 6, 6, 7], r"`0 <= ccol_indices\[\.\.\., 1:\] - ccol_indices\[\.\.\., :-1\] <= nrows`"),
    ("bsc", "0", [0, 2, 0, 3], r"`0 <= ccol_indices\[\.\.\., 1:\] - ccol_indices\[\.\.\., :-1\] <= nrows`"),
    ("bsr", "0", [0, 2, 1], r"`crow_indices\[\.\.\., -1\] == nnz` is not satisfied"),
    ("csr", "0", [1, 2, 4, 6, 7], r"`crow_indices\[\.\.\., 0\] == 0` is not satisfied"),
    ("csr", "1", [5, 0, 0, 1, 2, 3, 2], r"are sorted and distinct"),
]


@pytest.mark.parametrize("weights_only", [True, False])
@pytest.mark.parametrize(("kind", "key", "contents", "message"), CRAFTED)
def test_crafted_indices_are_refused_on_load(kind, key, contents, message, weights_only):
    t = _compressed(kind)
    assert len(contents) == _parts(t)[int(key)].shape[0]
    crafted = _patched(t, key, contents, np.int64)
    with pytest.raises(pickle.UnpicklingError, match=r"the checkpoint holds an invalid sparse tensor: .*" + message):
        ember.load(crafted, weights_only=weights_only)


@pytest.mark.parametrize("weights_only", [True, False])
def test_crafted_int32_and_coo_indices_are_refused_on_load(weights_only):
    t = _compressed("bsc", index_dtype=ember.int32)
    with pytest.raises(pickle.UnpicklingError, match=r"`0 <= ccol_indices\[\.\.\., 1:\] - ccol_indices"):
        ember.load(_patched(t, "0", [0, 2, 1, 3], np.int32), weights_only=weights_only)
    with pytest.raises(pickle.UnpicklingError, match=r"`0 <= row_indices < nrows`"):
        ember.load(_patched(t, "1", [0, 1, -(1 << 31)], np.int32), weights_only=weights_only)
    coo = ember.sparse_coo_tensor(ember.tensor([[0, 2], [1, 1]]), ember.tensor([1.0, 2.0]), (3, 2))
    with pytest.raises(pickle.UnpicklingError, match=r"invalid sparse tensor: .*found index 9"):
        ember.load(_patched(coo, "0", [0, 9, 1, 1], np.int64), weights_only=weights_only)
    with pytest.raises(pickle.UnpicklingError, match=r"invalid sparse tensor: .*negative"):
        ember.load(_patched(coo, "0", [0, -1, 1, 1], np.int64), weights_only=weights_only)


def test_parts_that_do_not_match_the_size_are_refused():
    good = _compressed("bsr")
    for size, message in (((4, 5), r"must be divisible with blocksize"),
                          ((8, 6), r"crow_indices\.shape\[-1\] must be equal to the number of row blocks \+ 1"),
                          ((-4, 6), r"negative dimension")):
        bad = SparseTensor._compressed(ember.sparse_bsr, good.crow_indices(), good.col_indices(), good.values(), size)
        with pytest.raises(pickle.UnpicklingError, match=message):
            _round_trip(bad)


@pytest.mark.parametrize("weights_only", [True, False])
@pytest.mark.parametrize("kind", ["coo", *LAYOUTS])
def test_the_legacy_format_checks_indices_once_its_storages_are_read(kind, weights_only):
    """Its storages' bytes follow the pickle: a sparse tensor is checked after they are read, never
    against the empty storages the pickle allocated (nor left unchecked)."""
    if kind == "coo":
        bad = SparseTensor._coo(ember.tensor([[0, 7]]), ember.tensor([1.0, 2.0]), (3,))
        message = r"found index 7"
    else:
        good = _compressed(kind)
        cidx, pidx = _parts(good)[:2]
        bad = SparseTensor._compressed(LAYOUTS[kind], cidx, pidx * 0 + 1000, good.values(), good.shape)
        message = r"`0 <= (col|row)_indices < n(cols|rows)` is not satisfied"
    buf = io.BytesIO()
    ember.save({"bad": bad}, buf, _use_new_zipfile_serialization=False)
    with pytest.raises(pickle.UnpicklingError, match=r"the checkpoint holds an invalid sparse tensor: .*" + message):
        ember.load(io.BytesIO(buf.getvalue()), weights_only=weights_only)
