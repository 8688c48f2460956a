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
