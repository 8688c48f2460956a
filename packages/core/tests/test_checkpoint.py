"""ember.save / ember.load: round trips, the safetensors layout both ways, and hostile files."""

import io
import json
import os
import pickle
import struct

import numpy as np
import pytest
import safetensors.numpy

import ember
from ember import nn


def _values(t):
    """A tensor's dtype, shape and values in a form that compares exactly (NaN-safe via bytes)."""
    return (t.dtype, tuple(t.shape), ember._C._to_bytes(t))


def _round_trip(obj, **kwargs):
    buf = io.BytesIO()
    ember.save(obj, buf)
    buf.seek(0)
    return ember.load(buf, **kwargs)


@pytest.mark.parametrize("dtype", [
    ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64, ember.float16,
    ember.bfloat16, ember.float32, ember.float64, ember.complex64, ember.complex128,
    ember.float8_e4m3fn, ember.float8_e5m2])
def test_every_dtype_round_trips_bit_for_bit(dtype):
    source = ember.randn(3, 4, dtype=ember.float64) * 7
    if dtype.is_complex:
        source = ember.complex(source, -source)
    t = (source > 0) if dtype == ember.bool else source.to(dtype)
    back = _round_trip({"t": t})["t"]
    assert _values(back) == _values(t)


@pytest.mark.parametrize("make", [
    lambda: ember.tensor(3.5),                                   # 0-dim
    lambda: ember.zeros(0, 5),                                   # zero-size
    lambda: ember.arange(12.0).reshape(3, 4).t(),                # non-contiguous
    lambda: ember.arange(24).reshape(2, 3, 4)[:, 1, ::2],        # strided slice
    lambda: ember.arange(3.0).expand(4, 3),                      # broadcast (zero stride)
])
def test_views_and_odd_shapes_store_their_values(make):
    t = make()
    back = _round_trip(t)
    assert back.is_contiguous()
    np.testing.assert_array_equal(back.numpy(), t.numpy())
    assert back.shape == t.shape and back.dtype == t.dtype


def test_nested_structures_and_plain_values_round_trip():
    w = ember.randn(2, 2)
    obj = {
        "state": {0: {"step": 3, "exp_avg": ember.ones(2)}, 1: {"step": 3, "exp_avg": ember.zeros(2)}},
        "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "params": [0, 1], "nesterov": False,
                          "name": "head", "foreach": None, "eps": float("inf"), "nan": float("nan")}],
        "tied": (w, w),
        "dtype": ember.bfloat16,
        "empty": {}, "nothing": [],
    }
    back = _round_trip(obj)
    assert back["state"][0]["step"] == 3 and list(back["state"]) == [0, 1]
    assert back["state"][1]["exp_avg"].tolist() == [0.0, 0.0]
    group = back["param_groups"][0]
    assert group["betas"] == (0.9, 0.999) and isinstance(group["betas"], tuple)
    assert group["params"] == [0, 1] and group["nesterov"] is False and group["foreach"] is None
    assert group["name"] == "head" and group["eps"] == float("inf") and group["nan"] != group["nan"]
    assert back["dtype"] == ember.bfloat16 and back["empty"] == {} and back["nothing"] == []
    # One tensor object saved twice (tied weights) is stored once and loads as one object.
    assert back["tied"][0] is back["tied"][1]
    np.testing.assert_array_equal(back["tied"][0].numpy(), w.numpy())


def test_a_module_state_dict_round_trips_through_a_file(tmp_path):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.Linear(3, 2))
    model(ember.randn(8, 4))  # moves the running statistics off their initial values
    path = tmp_path / "model.safetensors"
    ember.save(model.state_dict(), path)
    fresh = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.Linear(3, 2))
    assert fresh.load_state_dict(ember.load(path)) is not None
    for (name, a), (_, b) in zip(model.state_dict().items(), fresh.state_dict().items(), strict=True):
        assert _values(a) == _values(b), name
    x = ember.randn(5, 4)
    model.eval()
    fresh.eval()
    np.testing.assert_array_equal(model(x).detach().numpy(), fresh(x).detach().numpy())


def test_files_are_safetensors_both_ways(tmp_path):
    ours = tmp_path / "ours.safetensors"
    a, b = ember.randn(3, 2), ember.arange(5, dtype=ember.int32)
    ember.save({"layer.weight": a, "layer.bias": b}, ours, metadata={"author": "test"})
    read = safetensors.numpy.load_file(str(ours))
    assert set(read) == {"layer.weight", "layer.bias"}
    np.testing.assert_array_equal(read["layer.weight"], a.numpy())
    np.testing.assert_array_equal(read["layer.bias"], b.numpy())
    with safetensors.safe_open(str(ours), framework="numpy") as f:
        assert f.metadata()["author"] == "test"

    theirs = tmp_path / "theirs.safetensors"
    arrays = {"z": np.arange(6, dtype=np.float32).reshape(2, 3), "a": np.array([True, False]),
              "c": np.array([1 + 2j], dtype=np.complex64), "s": np.array(2.5)}
    safetensors.numpy.save_file(arrays, str(theirs), metadata={"k": "v"})
    loaded = ember.load(theirs)
    assert set(loaded) == set(arrays)
    for name, array in arrays.items():
        np.testing.assert_array_equal(loaded[name].numpy(), array)
        assert loaded[name].shape == array.shape


def test_header_is_padded_and_offsets_tile_the_buffer():
    buf = io.BytesIO()
    ember.save({"x": ember.ones(3), "y": ember.zeros(2, dtype=ember.float64)}, buf)
    data = buf.getvalue()
    (n,) = struct.unpack("<Q", data[:8])
    assert n % 8 == 0
    header = json.loads(data[8:8 + n])
    assert header["x"] == {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}
    assert header["y"] == {"dtype": "F64", "shape": [2], "data_offsets": [12, 28]}
    assert len(data) == 8 + n + 28


def test_map_location():
    t = ember.arange(4.0)
    assert _round_trip(t, map_location="cpu").device == ember.device("cpu")
    assert _round_trip(t, map_location={"cuda:0": "cpu"}).device == ember.device("cpu")
    with pytest.raises(TypeError, match=r"map_location must be None, a device, a str or a dict"):
        _round_trip(t, map_location=3)
    if not ember._C._has_backend("cuda"):
        with pytest.raises(NotImplementedError, match=r"not implemented for copies to cuda"):
            _round_trip(t, map_location="cuda")


def test_unsupported_objects_raise_type_error():
    with pytest.raises(TypeError, match=r"cannot store an object of type set at 'a.b'"):
        ember.save({"a": {"b": {1, 2}}}, io.BytesIO())
    with pytest.raises(TypeError, match=r"cannot store an object of type object at the top level"):
        ember.save(object(), io.BytesIO())
    with pytest.raises(TypeError, match=r"metadata must map str to str"):
        ember.save({}, io.BytesIO(), metadata={"k": 1})
    with pytest.raises(TypeError, match=r"expected a path or a writable binary file, but got int"):
        ember.save({}, 3)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'mmap'"):
        ember.load(io.BytesIO(), mmap=True)


class _Exploit:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_code_executing_pickle_runs_nothing(tmp_path):
    marker = tmp_path / "pwned"
    payload = pickle.dumps({"weight": _Exploit(marker)})
    pickle.loads(payload)  # proves the payload really executes when unpickled
    assert marker.exists()
    marker.unlink()
    for data in (payload, pickle.dumps(_Exploit(marker), protocol=2), b"PK\x03\x04" + payload):
        with pytest.raises(ValueError, match=r"this file is a pickle .* never unpickles"):
            ember.load(io.BytesIO(data))
        assert not marker.exists()


def _file(header, data=b"", pad=True, raw_header=None):
    encoded = raw_header if raw_header is not None else json.dumps(header).encode()
    if pad:
        encoded += b" " * (-len(encoded) % 8)
    return io.BytesIO(struct.pack("<Q", len(encoded)) + encoded + data)


def _entry(dtype, shape, begin, end):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


@pytest.mark.parametrize("make, message", [
    (lambda: io.BytesIO(b"\x01\x02"), r"fewer than the 8-byte header length"),
    (lambda: io.BytesIO(struct.pack("<Q", 1 << 40) + b"{}"), r"header length 1099511627776 exceeds the 100000000-byte limit"),
    (lambda: io.BytesIO(struct.pack("<Q", 64) + b"{}"), r"header length 64 runs past the end of the file"),
    (lambda: _file(None, raw_header=b"{not json"), r"the header is not JSON"),
    (lambda: _file(None, raw_header=b"\xff\xfe"), r"the header is not JSON"),
    (lambda: _file([1, 2]), r"the header must be a JSON object"),
    (lambda: _file({"__metadata__": {"k": 1}}), r"__metadata__ must map strings to strings"),
    (lambda: _file({"x": {"dtype": "F32", "shape": [1]}}), r"entry 'x' must hold exactly dtype, shape and data_offsets"),
    (lambda: _file({"x": _entry("F128", [1], 0, 16)}, b"\0" * 16), r"entry 'x' has unsupported dtype 'F128'"),
    (lambda: _file({"x": _entry("F32", [-1], 0, 4)}, b"\0" * 4), r"entry 'x' has shape \[-1\]"),
    (lambda: _file({"x": _entry("F32", [1.5], 0, 4)}, b"\0" * 4), r"entry 'x' has shape \[1.5\]"),
    (lambda: _file({"x": _entry("F32", [2], 4, 0)}, b"\0" * 8), r"data_offsets \[4, 0\]"),
    (lambda: _file({"x": _entry("F32", [2], -8, 0)}, b"\0" * 8), r"data_offsets \[-8, 0\]"),
    (lambda: _file({"x": _entry("F32", [3], 0, 8)}, b"\0" * 8), r"needs 12 bytes, but its data_offsets \[0, 8\] span 8"),
    (lambda: _file({"x": _entry("F32", [1 << 40], 0, 1 << 42)}, b"\0" * 8), r"ends at byte 4398046511104, past the 8-byte"),
    (lambda: _file({"x": _entry("F32", [2], 0, 8), "y": _entry("F32", [2], 4, 12)}, b"\0" * 12), r"entry 'y' .* overlaps"),
    (lambda: _file({"x": _entry("F32", [1], 4, 8)}, b"\0" * 8), r"bytes \[0, 4\) before entry 'x' belong to no tensor"),
    (lambda: _file({"x": _entry("F32", [1], 0, 4)}, b"\0" * 8), r"bytes \[4, 8\) at the end of the data buffer"),
    (lambda: _file({"x": _entry("BOOL", [2], 0, 2)}, b"\x01\x07"), r"a bool tensor's bytes must be 0 or 1"),
    (lambda: _file({"__metadata__": {"ember.structure": "{"}}), r"record is not JSON"),
    (lambda: _file({"__metadata__": {"ember.structure": "[]"}}), r"must hold 'object' and a 'complex128' list"),
    (lambda: _file({"__metadata__": {"ember.structure": json.dumps({"object": {"tensor": "w"}, "complex128": []})}}),
     r"names tensor 'w', which the header does not hold"),
    (lambda: _file({"__metadata__": {"ember.structure": json.dumps({"object": {"call": "os.system"}, "complex128": []})}}),
     r"unreadable structure record"),
    (lambda: _file({"__metadata__": {"ember.structure": json.dumps(
        {"object": {"dict": [[{"list": []}, 1]]}, "complex128": []})}}), r"a dict key cannot be a list"),
    (lambda: _file({"__metadata__": {"ember.structure": json.dumps({"object": {"tensor": "x"}, "complex128": ["x"]})},
                    "x": _entry("F32", [2], 0, 8)}, b"\0" * 8), r"complex128 entry 'x' must be float64 pairs"),
])
def test_crafted_bad_checkpoints_raise_value_error(make, message):
    with pytest.raises(ValueError, match=message):
        ember.load(make())


def test_load_rejects_non_files():
    with pytest.raises(TypeError, match=r"expected a path or a readable binary file, but got int"):
        ember.load(5)
    with pytest.raises(TypeError, match=r"expected a file opened in binary mode"):
        ember.load(io.StringIO("text"))
