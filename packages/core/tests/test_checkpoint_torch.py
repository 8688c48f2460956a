"""Checkpoints cross between Ember and PyTorch both ways: files ember.save writes load in
torch.load(weights_only=True), and files torch.save writes load in ember.load.

PyTorch runs in its own interpreter, named by EMBER_TORCH_PYTHON (a Python with torch and
numpy installed, e.g. the parity session's); without it these tests are skipped.
"""

import json
import os
import pickle
import subprocess
import textwrap

import numpy as np
import pytest

import ember
from ember import nn, serialization

TORCH_PYTHON = os.environ.get("EMBER_TORCH_PYTHON")
pytestmark = pytest.mark.skipif(not TORCH_PYTHON, reason="EMBER_TORCH_PYTHON names no Python with torch")


def _torch(script: str, tmp_path) -> dict:
    done = subprocess.run([TORCH_PYTHON, "-c", textwrap.dedent(script)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_pytorch_reads_ember_legacy_files(tmp_path):
    base = ember.arange(6.0)
    ember.save({"w": base, "v": base[1:3], "p": nn.Parameter(ember.ones(2))}, tmp_path / "legacy.pt",
               _use_new_zipfile_serialization=False)
    got = _torch("""
        import json, torch
        d = torch.load("legacy.pt")
        same = d["v"].untyped_storage().data_ptr() == d["w"].untyped_storage().data_ptr()
        print(json.dumps({"v": d["v"].tolist(), "shared": same, "p": type(d["p"]).__name__}))
        """, tmp_path)
    assert got == {"v": [1.0, 2.0], "shared": True, "p": "Parameter"}


def test_pytorch_reads_what_ember_saves(tmp_path):
    base = ember.arange(12.0)
    model = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    ember.save({
        "w": base, "view": base[2:8].reshape(2, 3), "t": base.reshape(3, 4).t(), "p": nn.Parameter(ember.ones(2)),
        "bf16": ember.arange(4.0).to(ember.bfloat16), "f8": ember.arange(4.0).to(ember.float8_e4m3fn),
        "c128": ember.complex(ember.ones(2, dtype=ember.float64), -ember.ones(2, dtype=ember.float64)),
        "bool": ember.tensor([True, False]), "empty": ember.zeros(0, 3), "dtype": ember.int16,
        "device": ember.device("cpu"), "model": model.state_dict(), "grad": ember.ones(2, requires_grad=True),
    }, tmp_path / "ember.pt")
    got = _torch("""
        import json, torch
        d = torch.load("ember.pt")  # weights_only=True, PyTorch's default since 2.6
        same = d["view"].untyped_storage().data_ptr() == d["w"].untyped_storage().data_ptr()
        print(json.dumps({
            "view": d["view"].tolist(), "shared": same, "t_stride": list(d["t"].stride()),
            "p": type(d["p"]).__name__, "p_grad": d["p"].requires_grad, "bf16": str(d["bf16"].dtype),
            "bf16_v": d["bf16"].float().tolist(), "f8": d["f8"].float().tolist(), "c128": str(d["c128"].dtype),
            "c128_v": [d["c128"][0].real.item(), d["c128"][0].imag.item()], "bool": d["bool"].tolist(),
            "empty": list(d["empty"].shape), "dtype": str(d["dtype"]), "device": str(d["device"]),
            "meta": {k: v for k, v in d["model"]._metadata.items()}, "keys": list(d["model"]),
            "grad": d["grad"].requires_grad,
        }))
        """, tmp_path)
    assert got["view"] == [[2.0, 3.0, 4.0], [5.0, 6.0, 7.0]] and got["shared"] and got["t_stride"] == [1, 4]
    assert got["p"] == "Parameter" and got["p_grad"] and got["grad"]
    assert got["bf16"] == "torch.bfloat16" and got["bf16_v"] == [0.0, 1.0, 2.0, 3.0] and got["f8"] == [0.0, 1.0, 2.0, 3.0]
    assert got["c128"] == "torch.complex128" and got["c128_v"] == [1.0, -1.0] and got["bool"] == [True, False]
    assert got["empty"] == [0, 3] and got["dtype"] == "torch.int16" and got["device"] == "cpu"
    assert got["keys"] == list(model.state_dict()) and got["meta"][""] == {"version": 1}


def test_ember_reads_what_pytorch_saves(tmp_path):
    _torch("""
        import json, torch, numpy as np
        torch.manual_seed(0)
        x = torch.arange(10.0)
        model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2), torch.nn.MultiheadAttention(4, 2))
        torch.save({"w": x, "v": x[2:5], "sd": model.state_dict(), "p": torch.nn.Parameter(torch.ones(2)),
                    "f8": torch.ones(2).to(torch.float8_e5m2), "np": np.arange(3.0), "dt": torch.bfloat16,
                    "size": torch.Size([2, 3]), "dev": torch.device("cpu"), "b": b"", "c": 1 + 2j}, "torch.pt")
        torch.save(model, "model.pt")
        torch.save(x, "p4.pt", pickle_protocol=4)
        torch.save({"w": x, "v": x[2:5], "p": torch.nn.Parameter(torch.ones(2))}, "legacy.pt",
                   _use_new_zipfile_serialization=False)
        x0 = torch.tensor([[1.0, 2.0, 3.0]])
        model.eval()
        print(json.dumps({"y": model[0](x0).tolist(), "w": model.state_dict()["0.weight"].tolist()}))
        """, tmp_path)
    d = ember.load(tmp_path / "torch.pt")
    assert d["v"].tolist() == [2.0, 3.0, 4.0] and d["v"].data_ptr() == d["w"].data_ptr() + 8
    assert type(d["p"]) is nn.Parameter and d["f8"].dtype == ember.float8_e5m2 and d["dt"] == ember.bfloat16
    assert type(d["size"]) is ember.Size and d["size"] == (2, 3) and d["dev"] == ember.device("cpu") and d["b"] == b"" and d["c"] == 1 + 2j
    np.testing.assert_array_equal(d["np"], np.arange(3.0))
    fresh = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2), nn.MultiheadAttention(4, 2))
    fresh.load_state_dict(d["sd"])
    assert ember.load(tmp_path / "p4.pt").tolist() == list(map(float, range(10)))
    legacy = ember.load(tmp_path / "legacy.pt")
    assert legacy["v"].tolist() == [2.0, 3.0, 4.0] and legacy["v"].data_ptr() == legacy["w"].data_ptr() + 8
    assert type(legacy["p"]) is nn.Parameter

    path = tmp_path / "model.pt"
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL torch\.nn\.modules\.container\.Sequential was not"):
        ember.load(path)
    assert serialization.get_unsafe_globals_in_checkpoint(path) == [
        "torch.nn.modules.container.Sequential", "torch.nn.modules.linear.Linear",
        "torch.nn.modules.batchnorm.BatchNorm1d", "torch.nn.modules.activation.MultiheadAttention",
        "torch.nn.modules.linear.NonDynamicallyQuantizableLinear"]
    model = ember.load(path, weights_only=False)  # PyTorch's module paths resolve to Ember's classes
    assert type(model[2]) is nn.MultiheadAttention and type(model[2].out_proj).__name__ == "NonDynamicallyQuantizableLinear"
    allowed = [nn.Sequential, nn.Linear, nn.BatchNorm1d, nn.MultiheadAttention,
               nn.modules.linear.NonDynamicallyQuantizableLinear]
    with serialization.safe_globals(allowed):
        assert type(ember.load(path)[0]) is nn.Linear
