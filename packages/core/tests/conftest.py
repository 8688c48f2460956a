import os
import pathlib
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[3]


def pytest_configure(config):
    config.addinivalue_line("markers", "forks_workers: forks while other threads live (skipped under ASan)")


def pytest_collection_modifyitems(config, items):
    # GCC 12's ASan allocator is not fork-safe while other threads live (a DataLoader's queue
    # feeders, a thread holding a lock): the child can wait forever on the sanitizer's own lock.
    # Under the sanitizer (`nox -s sanitize`) those tests skip; spawned workers still run there.
    if "ASAN_OPTIONS" in os.environ:
        skip = pytest.mark.skip(reason="ASan's own allocator is not fork-safe beside threads")
        for item in items:
            if "forks_workers" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def repo_root() -> pathlib.Path:
    return REPO_ROOT


# ---- fbgemm_gpu as a parity oracle ---------------------------------------------------------
_FBGEMM_PRELUDE = """
import sys, warnings
warnings.filterwarnings("ignore")
import numpy as np, torch, fbgemm_gpu
inputs = dict(np.load(sys.argv[1]))
result = {}
"""
_FBGEMM_EPILOGUE = """
np.savez(sys.argv[2], **{k: np.asarray(v) for k, v in result.items()})
"""


@pytest.fixture(scope="session")
def run_fbgemm():
    """Runs code under fbgemm_gpu (the parity oracle) in its own interpreter, named by
    EMBER_FBGEMM_PYTHON (`nox -s parity-fbgemm` makes one with torch 2.13 and fbgemm-gpu-cpu
    1.8); Ember's tests never import torch. A test using this fixture skips without it.

        out = run_fbgemm('''
            result["y"] = torch.ops.fbgemm.FloatToFused8BitRowwiseQuantized(
                torch.from_numpy(inputs["w"])).numpy()
        ''', w=np.ones((2, 3), np.float32))
        out["y"]  # a NumPy array

    The code sees `torch`, `fbgemm_gpu`, `np`, `inputs` (the keyword arrays) and fills `result`
    with NumPy arrays."""
    python = os.environ.get("EMBER_FBGEMM_PYTHON")
    if not python:
        pytest.skip("EMBER_FBGEMM_PYTHON names no Python with fbgemm_gpu")

    def run(code: str, **arrays: np.ndarray) -> dict:
        with tempfile.TemporaryDirectory() as tmp:
            src, dst = pathlib.Path(tmp) / "in.npz", pathlib.Path(tmp) / "out.npz"
            np.savez(src, **arrays)
            script = _FBGEMM_PRELUDE + textwrap.dedent(code) + _FBGEMM_EPILOGUE
            done = subprocess.run([python, "-c", script, str(src), str(dst)], capture_output=True, text=True,
                                  timeout=600)
            assert done.returncode == 0, done.stderr[-4000:]
            with np.load(dst) as out:
                return {k: out[k] for k in out.files}

    return run


# ---- PyTorch as a parity oracle for a whole script ---------------------------------------
@pytest.fixture(scope="session")
def run_torch_and_ember():
    """Runs one script twice through the public API only: under PyTorch in its own interpreter,
    named by EMBER_TORCH_PYTHON, and under Ember in this one. The script takes the module to import
    as `T` (argv[1], "torch" or "ember") and writes its results with np.savez to argv[2]. Returns
    (PyTorch's arrays, Ember's arrays) after checking that both wrote the same keys. A test using
    this fixture skips without EMBER_TORCH_PYTHON."""
    python = os.environ.get("EMBER_TORCH_PYTHON")
    if not python:
        pytest.skip("EMBER_TORCH_PYTHON names no Python with torch")

    def run(script: str) -> tuple[dict, dict]:
        results = {}
        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp) / "parity.py"
            path.write_text(script)
            for lib, interpreter in (("torch", python), ("ember", sys.executable)):
                out = pathlib.Path(tmp) / f"{lib}.npz"
                done = subprocess.run([interpreter, str(path), lib, str(out)], capture_output=True, text=True,
                                      timeout=600)
                assert done.returncode == 0, done.stderr[-4000:]
                with np.load(out) as arrays:
                    results[lib] = {k: arrays[k] for k in arrays.files}
        assert sorted(results["torch"]) == sorted(results["ember"])
        return results["torch"], results["ember"]

    return run


@pytest.fixture(scope="session")
def cross_checkpoints():
    """Checkpoints both ways between PyTorch (EMBER_TORCH_PYTHON) and Ember: the script, run as
    `script lib results source`, writes a checkpoint to `results` when source is "-", else loads
    `source` and saves what it read with np.savez to `results` (+ ".npz"). Returns {reader: arrays} for
    Ember reading PyTorch's checkpoint and PyTorch reading Ember's. Skips without EMBER_TORCH_PYTHON."""
    python = os.environ.get("EMBER_TORCH_PYTHON")
    if not python:
        pytest.skip("EMBER_TORCH_PYTHON names no Python with torch")
    pythons = {"torch": python, "ember": sys.executable}

    def run(script: str) -> dict:
        results = {}
        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp) / "checkpoint.py"
            path.write_text(script)
            for writer, reader in (("torch", "ember"), ("ember", "torch")):
                written = pathlib.Path(tmp) / f"{writer}.pt"
                read = pathlib.Path(tmp) / reader  # np.savez adds .npz
                for lib, args in ((writer, [str(written), "-"]), (reader, [str(read), str(written)])):
                    done = subprocess.run([pythons[lib], str(path), lib, *args], capture_output=True, text=True,
                                          timeout=600)
                    assert done.returncode == 0, done.stderr[-4000:]
                with np.load(read.with_suffix(".npz")) as arrays:
                    results[reader] = {k: arrays[k] for k in arrays.files}
        return results

    return run
