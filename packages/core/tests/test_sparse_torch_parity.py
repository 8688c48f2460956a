"""ember.sparse against PyTorch's CPU build: one script runs with `T = torch` (in its own
interpreter, named by EMBER_TORCH_PYTHON) and with `T = ember`, and every result must agree to
float64 rounding: sparse softmaxes and sums, the gradient of an uncoalesced leaf through
sparse.mm, hspmm, and Embedding(sparse=True) training with SparseAdam, SGD (Nesterov) and
Adagrad, including a second backward that accumulates. Without EMBER_TORCH_PYTHON these tests are
skipped; tests/test_sparse.py holds the NumPy references."""

import os
import subprocess

import numpy as np
import pytest

TORCH_PYTHON = os.environ.get("EMBER_TORCH_PYTHON")
pytestmark = pytest.mark.skipif(not TORCH_PYTHON, reason="EMBER_TORCH_PYTHON names no Python with torch")

SCRIPT = """
import sys
import numpy as np
T = __import__(sys.argv[1])
F = T.nn.functional
rng = np.random.default_rng(3)
out = {}
idx = rng.integers(0, 5, (2, 12)); vals = rng.normal(size=12) * 5
s = T.sparse_coo_tensor(T.tensor(idx), T.tensor(vals), (5, 5))
for d in (0, 1):
    out[f"softmax{d}"] = T.sparse.softmax(s, d).to_dense().numpy()
    out[f"log_softmax{d}"] = T.sparse.log_softmax(s, d).to_dense().numpy()
    out[f"sum{d}"] = T.sparse.sum(s, d).to_dense().numpy()
h = T.sparse_coo_tensor(T.tensor(rng.integers(0, 4, (1, 6))), T.tensor(rng.normal(size=(6, 3))), (4, 3))
out["hybrid_softmax0"] = T.sparse.softmax(h, 0).to_dense().numpy()
out["hybrid_softmax1"] = T.sparse.softmax(h, 1).to_dense().numpy()
D = T.tensor(rng.normal(size=(5, 4)), requires_grad=True)
S = T.sparse_coo_tensor(T.tensor(idx), T.tensor(vals), (5, 5), requires_grad=True)
(T.sparse.mm(S, D) ** 2).sum().backward()
out["S_grad_indices"] = S.grad.coalesce().indices().numpy()
out["S_grad"] = S.grad.to_dense().numpy()
out["D_grad"] = D.grad.numpy()
out["hspmm"] = T.hspmm(S.detach().coalesce(), D.detach()).to_dense().numpy()
out["smm"] = T.smm(S.detach(), D.detach()).to_dense().numpy()
table = rng.normal(size=(10, 4))
inputs = [rng.integers(0, 10, 7) for _ in range(5)]
target = T.tensor(rng.normal(size=(7, 4)))
makers = {"sparse_adam": lambda p: T.optim.SparseAdam(p, lr=0.05),
          "sgd_nesterov": lambda p: T.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True),
          "adagrad": lambda p: T.optim.Adagrad(p, lr=0.2, lr_decay=0.01)}
for name, make in makers.items():
    emb = T.nn.Embedding(10, 4, sparse=True).double()
    with T.no_grad():
        emb.weight.copy_(T.tensor(table))
    opt = make(emb.parameters())
    for k, i in enumerate(inputs):
        opt.zero_grad()
        ((emb(T.tensor(i)) - target) ** 2).sum().backward()
        if k == 2:
            F.embedding_bag(T.tensor(i), emb.weight, T.tensor([0, 3]), mode="mean", sparse=True).sum().backward()
            out[name + "_grad_rows"] = emb.weight.grad._indices().numpy()
        opt.step()
    out[name] = emb.weight.detach().numpy()
np.savez(sys.argv[2], **out)
"""


def test_same_results_as_torch(tmp_path):
    import sys

    script = tmp_path / "sparse_parity.py"
    script.write_text(SCRIPT)
    for python, lib in ((TORCH_PYTHON, "torch"), (sys.executable, "ember")):
        done = subprocess.run([python, str(script), lib, str(tmp_path / f"{lib}.npz")], capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    theirs, ours = np.load(tmp_path / "torch.npz"), np.load(tmp_path / "ember.npz")
    assert sorted(theirs.files) == sorted(ours.files)
    for key in theirs.files:
        np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-10, atol=1e-12, err_msg=key)


CHECKPOINT = """
import sys
import numpy as np
T = __import__(sys.argv[1])
write, read = sys.argv[2], sys.argv[3]
if read != "-":  # the other library's file: weights_only=True, the default
    got = T.load(read)
    np.savez(write + ".npz", coo=got["coo"].to_dense().numpy(), coo_indices=got["coo"]._indices().numpy(),
             csr=got["csr"].to_dense().numpy(), crow=got["csr"].crow_indices().numpy())
else:
    idx = T.tensor([[2, 0, 2], [1, 3, 1]])
    T.save({"coo": T.sparse_coo_tensor(idx, T.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), (3, 4, 2)),
            "csr": T.tensor([[0.0, 1.5, 0.0], [2.5, 0.0, 3.5]]).to_sparse_csr()}, write)
"""


def test_checkpoints_cross_both_ways(tmp_path):
    import sys

    script = tmp_path / "sparse_checkpoint.py"
    script.write_text(CHECKPOINT)
    pythons = {"torch": TORCH_PYTHON, "ember": sys.executable}
    for writer, reader in (("torch", "ember"), ("ember", "torch")):
        written = tmp_path / f"{writer}.pt"
        for lib, args in ((writer, [str(written), "-"]), (reader, [str(tmp_path / reader), str(written)])):
            done = subprocess.run([pythons[lib], str(script), lib, *args], capture_output=True, text=True,
                                  timeout=300)
            assert done.returncode == 0, done.stderr
        got = np.load(tmp_path / f"{reader}.npz")
        expected = np.zeros((3, 4, 2))
        np.add.at(expected, ([2, 0, 2], [1, 3, 1]), [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        np.testing.assert_array_equal(got["coo"], expected)
        np.testing.assert_array_equal(got["coo_indices"], [[2, 0, 2], [1, 3, 1]])  # saved uncoalesced
        np.testing.assert_array_equal(got["csr"], [[0.0, 1.5, 0.0], [2.5, 0.0, 3.5]])
        np.testing.assert_array_equal(got["crow"], [0, 1, 3])


COMPRESSED_CHECKPOINT = """
import pickletools, sys, zipfile
import numpy as np
T = __import__(sys.argv[1])
write, read = sys.argv[2], sys.argv[3]
KINDS = ("csr", "csc", "bsr", "bsc")


def parts(t):
    if t.layout is T.sparse_coo:
        return [t._indices(), t._values()]
    if t.layout in (T.sparse_csr, T.sparse_bsr):
        return [t.crow_indices(), t.col_indices(), t.values()]
    return [t.ccol_indices(), t.row_indices(), t.values()]


if read != "-":  # the other library's files, with weights_only True (the default) and False
    out = {}
    for name in ("zip", "legacy"):
        for wo in (True, False):
            got = T.load(f"{read}.{name}.pt", weights_only=wo)
            for key, t in got.items():
                if key == "layouts":
                    out[f"{name}{wo}/layouts"] = np.array([str(x).split(".")[-1] for x in t])
                    continue
                out[f"{name}{wo}/{key}/layout"] = np.array(str(t.layout).split(".")[-1])
                out[f"{name}{wo}/{key}/requires_grad"] = np.array(t.requires_grad)
                out[f"{name}{wo}/{key}/dense"] = t.to_dense().detach().numpy()
                for i, p in enumerate(parts(t)):
                    out[f"{name}{wo}/{key}/part{i}"] = p.detach().numpy()
    np.savez(write + ".npz", **out)
else:
    a = np.zeros((4, 6))
    a[0:2, 0:2] = [[1.0, 0.0], [2.0, 3.0]]
    a[0:2, 4:6] = [[0.0, 4.5], [0.0, 0.0]]
    a[2:4, 2:4] = [[-1.0, 6.0], [7.0, 0.0]]
    objs = {"layouts": [T.sparse_coo, T.sparse_csr, T.sparse_csc, T.sparse_bsr, T.sparse_bsc]}
    for dtype in ("float32", "float64"):
        for empty in (False, True):
            dense = T.tensor(np.zeros_like(a) if empty else a, dtype=getattr(T, dtype))
            for kind in KINDS:
                t = {"csr": lambda: dense.to_sparse_csr(), "csc": lambda: dense.to_sparse_csc(),
                     "bsr": lambda: dense.to_sparse_bsr((2, 2)), "bsc": lambda: dense.to_sparse_bsc((2, 2))}[kind]()
                c, p, v = parts(t)
                for index in ("int32", "int64"):
                    it = getattr(T, index)
                    objs[f"{kind}_{dtype}_{index}_{'empty' if empty else 'nnz'}"] = T.sparse_compressed_tensor(
                        c.to(it), p.to(it), v, t.shape, layout=t.layout)
            objs[f"coo_{dtype}_{'empty' if empty else 'nnz'}"] = dense.to_sparse()
    objs["csc_grad"] = T.sparse_csc_tensor(T.tensor([0, 1, 2]), T.tensor([1, 0]), T.tensor([1.0, 2.0]), (2, 2),
                                           requires_grad=True)
    T.save(objs, write + ".zip.pt")
    T.save(objs, write + ".legacy.pt", _use_new_zipfile_serialization=False)
    with zipfile.ZipFile(write + ".zip.pt") as zf:  # the pickle's vocabulary, in order
        pkl = zf.read([n for n in zf.namelist() if n.endswith("/data.pkl")][0])
    names = [str(arg) for op, arg, _ in pickletools.genops(pkl)
             if op.name == "GLOBAL" or op.name == "BINUNICODE" and str(arg).startswith("torch.")]
    with open(write + ".names", "w") as f:
        f.write("\\n".join(names))
"""


def test_every_sparse_layout_crosses_both_ways(tmp_path):
    """CSR, CSC, BSR, BSC (float32/float64 values, int32/int64 indices, zero nnz, a leaf that
    requires grad) and COO, in both archive formats: PyTorch's files load in Ember and Ember's in
    PyTorch, with weights_only True and False, and both pickles name the same globals in order."""
    import sys

    script = tmp_path / "compressed_checkpoint.py"
    script.write_text(COMPRESSED_CHECKPOINT)
    pythons = {"torch": TORCH_PYTHON, "ember": sys.executable}
    for writer, reader in (("torch", "ember"), ("ember", "torch")):
        for lib, args in ((writer, [str(tmp_path / writer), "-"]), (reader, [str(tmp_path / f"{reader}_read"),
                                                                               str(tmp_path / writer)])):
            done = subprocess.run([pythons[lib], str(script), lib, *args], capture_output=True, text=True,
                                  timeout=300)
            assert done.returncode == 0, done.stderr
    assert (tmp_path / "ember.names").read_text() == (tmp_path / "torch.names").read_text()
    by_ember, by_torch = np.load(tmp_path / "ember_read.npz"), np.load(tmp_path / "torch_read.npz")
    assert sorted(by_ember.files) == sorted(by_torch.files)
    assert len([k for k in by_ember.files if k.endswith("/dense")]) == 4 * (2 * 2 * 2 * 4 + 2 * 2 + 1)
    for key in by_ember.files:  # what Ember read from torch's files == what torch read from Ember's
        ours, theirs = by_ember[key], by_torch[key]
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, key
        np.testing.assert_array_equal(ours, theirs, err_msg=key)
    assert list(by_ember["zipTrue/layouts"]) == ["sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc"]
    assert by_ember["legacyFalse/csc_grad/requires_grad"] and not by_ember["zipTrue/bsr_float64_int32_nnz/requires_grad"]
    assert by_ember["zipTrue/bsc_float32_int32_empty/part2"].shape == (0, 2, 2)
    assert by_ember["zipTrue/csr_float32_int32_nnz/part0"].dtype == np.int32
    expected = np.zeros((4, 6))
    expected[0:2, 0:2] = [[1.0, 0.0], [2.0, 3.0]]
    expected[0:2, 4:6] = [[0.0, 4.5], [0.0, 0.0]]
    expected[2:4, 2:4] = [[-1.0, 6.0], [7.0, 0.0]]
    np.testing.assert_array_equal(by_ember["zipTrue/bsc_float64_int64_nnz/dense"], expected)
