"""The safetensors layout: save_safetensors round trips, files crossing with the safetensors
library both ways, and every malformed header a ValueError (issue 19's probes included)."""

import io
import json
import struct

import numpy as np
import pytest
import safetensors.numpy

import ember
from ember import nn
from ember.serialization import save_safetensors


def _values(t):
    return (t.dtype, tuple(t.shape), ember._C._to_bytes(t))


def _round_trip(obj, **kwargs):
    buf = io.BytesIO()
    save_safetensors(obj, buf)
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
    assert _values(_round_trip({"t": t})["t"]) == _values(t)


@pytest.mark.parametrize("make", [
    lambda: ember.tensor(3.5), lambda: ember.zeros(0, 5), lambda: ember.arange(12.0).reshape(3, 4).t(),
    lambda: ember.arange(24).reshape(2, 3, 4)[:, 1, ::2], lambda: ember.arange(3.0).expand(4, 3),
])
def test_views_and_odd_shapes_store_their_values(make):
    t = make()
    back = _round_trip(t)
    assert back.is_contiguous() and back.shape == t.shape and back.dtype == t.dtype
    np.testing.assert_array_equal(back.numpy(), t.numpy())


def test_nested_structures_and_plain_values_round_trip():
    w = ember.randn(2, 2)
    obj = {
        "state": {0: {"step": 3, "exp_avg": ember.ones(2)}, 1: {"step": 3, "exp_avg": ember.zeros(2)}},
        "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "params": [0, 1], "nesterov": False,
                          "name": "head", "foreach": None, "eps": float("inf"), "nan": float("nan")}],
        "tied": (w, w), "dtype": ember.bfloat16, "empty": {}, "nothing": [],
    }
    back = _round_trip(obj)
    assert back["state"][0]["step"] == 3 and list(back["state"]) == [0, 1]
    group = back["param_groups"][0]
    assert group["betas"] == (0.9, 0.999) and group["params"] == [0, 1] and group["foreach"] is None
    assert group["eps"] == float("inf") and group["nan"] != group["nan"]
    assert back["dtype"] == ember.bfloat16 and back["empty"] == {} and back["nothing"] == []
    assert back["tied"][0] is back["tied"][1]


def test_a_module_state_dict_round_trips_through_a_file(tmp_path):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.Linear(3, 2))
    model(ember.randn(8, 4))
    path = tmp_path / "model.safetensors"
    save_safetensors(model.state_dict(), path)
    fresh = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.Linear(3, 2))
    fresh.load_state_dict(ember.load(path))
    for (name, a), (_, b) in zip(model.state_dict().items(), fresh.state_dict().items(), strict=True):
        assert _values(a) == _values(b), name


def test_files_are_safetensors_both_ways(tmp_path):
    ours = tmp_path / "ours.safetensors"
    a, b = ember.randn(3, 2), ember.arange(5, dtype=ember.int32)
    save_safetensors({"layer.weight": a, "layer.bias": b}, ours, metadata={"author": "test"})
    read = safetensors.numpy.load_file(str(ours))
    np.testing.assert_array_equal(read["layer.weight"], a.numpy())
    np.testing.assert_array_equal(read["layer.bias"], b.numpy())
    with safetensors.safe_open(str(ours), framework="numpy") as f:
        assert f.metadata()["author"] == "test"

    theirs = tmp_path / "theirs.safetensors"
    arrays = {"z": np.arange(6, dtype=np.float32).reshape(2, 3), "a": np.array([True, False]),
              "c": np.array([1 + 2j], dtype=np.complex64), "s": np.array(2.5)}
    safetensors.numpy.save_file(arrays, str(theirs), metadata={"k": "v"})
    for loaded in (ember.load(theirs), ember.load(theirs, mmap=True)):
        assert set(loaded) == set(arrays)
        for name, array in arrays.items():
            np.testing.assert_array_equal(loaded[name].numpy(), array)


def test_header_is_padded_and_offsets_tile_the_buffer():
    buf = io.BytesIO()
    save_safetensors({"x": ember.ones(3), "y": ember.zeros(2, dtype=ember.float64)}, buf)
    data = buf.getvalue()
    (n,) = struct.unpack("<Q", data[:8])
    assert n % 8 == 0
    header = json.loads(data[8:8 + n])
    assert header["x"] == {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}
    assert header["y"] == {"dtype": "F64", "shape": [2], "data_offsets": [12, 28]}


def test_map_location():
    t = {"a": ember.arange(4.0)}
    for ml in ("cpu", ember.device("cpu"), {"cuda:0": "cpu"}, lambda s, loc: None):
        assert _round_trip(t, map_location=ml)["a"].device == ember.device("cpu")
    if not ember._C._has_backend("cuda"):
        with pytest.raises(RuntimeError, match=r"Attempting to deserialize object on a CUDA device"):
            _round_trip(t, map_location="cuda")


def test_unsupported_objects_raise_type_error():
    with pytest.raises(TypeError, match=r"cannot store an object of type set at 'a.b'"):
        save_safetensors({"a": {"b": {1, 2}}}, io.BytesIO())
    with pytest.raises(TypeError, match=r"cannot store an object of type object at the top level"):
        save_safetensors(object(), io.BytesIO())
    with pytest.raises(TypeError, match=r"metadata must map str to str"):
        save_safetensors({}, io.BytesIO(), metadata={"k": 1})
    with pytest.raises(TypeError, match=r"expected a path or a writable binary file, but got int"):
        save_safetensors({}, 3)


def _file(header, data=b"", pad=True, raw_header=None):
    encoded = raw_header if raw_header is not None else json.dumps(header).encode()
    if pad:
        encoded += b" " * (-len(encoded) % 8)
    return io.BytesIO(struct.pack("<Q", len(encoded)) + encoded + data)


def _entry(dtype, shape, begin, end):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def _structure(obj, complex128=()):
    return {"__metadata__": {"ember.structure": json.dumps({"object": obj, "complex128": list(complex128)})}}


def _deep(depth):
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("make, message", [
    (lambda: io.BytesIO(b"\x01\x02\x03\x04\x05\x06\x07\x08{"), r"header length 578437695752307201 exceeds"),
    (lambda: io.BytesIO(struct.pack("<Q", 1 << 40) + b"{}"), r"header length 1099511627776 exceeds the 100000000-byte limit"),
    (lambda: io.BytesIO(struct.pack("<Q", 64) + b"{}"), r"header length 64 runs past the end of the file"),
    (lambda: _file(None, raw_header=b"{not json"), r"the header is not JSON"),
    (lambda: _file(None, raw_header=b'{"\xff\xfe": 1}'), r"the header is not UTF-8"),
    (lambda: _file({"__metadata__": {"k": 1}}), r"__metadata__ must map strings to strings"),
    (lambda: _file({"__metadata__": [1]}), r"__metadata__ must map strings to strings"),
    (lambda: _file({"x": {"dtype": "F32", "shape": [1]}}), r"entry 'x' must hold exactly dtype, shape and data_offsets"),
    (lambda: _file({"x": _entry("F128", [1], 0, 16)}, b"\0" * 16), r"entry 'x' has unsupported dtype 'F128'"),
    # issue 19: a list as dtype, a 2**70 dimension, unhashable entries, deep nesting, repeated keys
    (lambda: _file({"x": _entry(["F32"], [1], 0, 4)}, b"\0" * 4), r"entry 'x' has unsupported dtype \"\['F32'\]\""),
    (lambda: _file({"x": _entry({"F32": 1}, [1], 0, 4)}, b"\0" * 4), r"entry 'x' has unsupported dtype"),
    (lambda: _file({"x": _entry("F32", [2**70], 0, 4)}, b"\0" * 4), r"entry 'x' has shape \[1180591620717411303424\]"),
    (lambda: _file({"x": _entry("F32", [2**70, 0], 0, 0)}), r"shape \[1180591620717411303424, 0\]"),
    (lambda: _file({"x": _entry("F32", [2**40, 2**40, 0], 0, 0)}), r"whose size overflows int64"),
    (lambda: _file({"x": _entry("F32", [1], 2**70, 2**70 + 4)}), r"data_offsets \[1180591620717411303424"),
    (lambda: _file(None, raw_header=b'{"x": ' + _deep(100_000).encode() + b"}"), r"the header nests deeper than 256 levels"),
    (lambda: _file(None, raw_header=b'{"x": ' + b'{"a": ' * 100_000 + b"1" + b"}" * 100_001),
     r"the header nests deeper than 256 levels"),
    (lambda: _file(None, raw_header=b'{"x": 1, "x": 2}'), r"the key 'x' appears twice in one JSON object"),
    (lambda: _file(None, raw_header=b'{"__metadata__": {"a": "1", "a": "2"}}'), r"the key 'a' appears twice"),
    (lambda: _file({"x": _entry("F32", [-1], 0, 4)}, b"\0" * 4), r"entry 'x' has shape \[-1\]"),
    (lambda: _file({"x": _entry("F32", [True], 0, 4)}, b"\0" * 4), r"entry 'x' has shape \[True\]"),
    (lambda: _file({"x": _entry("F32", [1.5], 0, 4)}, b"\0" * 4), r"entry 'x' has shape \[1.5\]"),
    (lambda: _file({"x": _entry("F32", [2], 4, 0)}, b"\0" * 8), r"data_offsets \[4, 0\]"),
    (lambda: _file({"x": _entry("F32", [2], -8, 0)}, b"\0" * 8), r"data_offsets \[-8, 0\]"),
    (lambda: _file({"x": _entry("F32", [3], 0, 8)}, b"\0" * 8), r"needs 12 bytes, but its data_offsets \[0, 8\] span 8"),
    (lambda: _file({"x": _entry("F32", [1 << 40], 0, 1 << 42)}, b"\0" * 8), r"ends at byte 4398046511104, past the 8-byte"),
    (lambda: _file({"x": _entry("F32", [2], 0, 8), "y": _entry("F32", [2], 4, 12)}, b"\0" * 12), r"entry 'y' .* overlaps"),
    (lambda: _file({"x": _entry("F32", [1], 4, 8)}, b"\0" * 8), r"bytes \[0, 4\) before entry 'x' belong to no tensor"),
    (lambda: _file({"x": _entry("F32", [1], 0, 4)}, b"\0" * 8), r"bytes \[4, 8\) at the end of the data buffer"),
    (lambda: _file({"x": _entry("BOOL", [2], 0, 2)}, b"\x01\x07"), r"a bool tensor's bytes must be 0 or 1"),
    # the structure record
    (lambda: _file({"__metadata__": {"ember.structure": "{"}}), r"record is not JSON"),
    (lambda: _file({"__metadata__": {"ember.structure": "[]"}}), r"must hold 'object' and a 'complex128' list"),
    (lambda: _file(_structure({"tensor": "w"})), r"names tensor 'w', which the header does not hold"),
    (lambda: _file(_structure({"call": "os.system"})), r"unreadable structure record"),
    (lambda: _file(_structure({"dict": [[{"list": []}, 1]]})), r"a dict key cannot be a list"),
    (lambda: _file(_structure({"dict": [[{"tuple": [{"list": []}]}, 1]]})), r"a dict key cannot be an unhashable tuple"),
    (lambda: _file(_structure({"dict": [["k", 1], ["k", 2]]})), r"the dict key 'k' appears twice"),
    (lambda: _file(_structure({"dtype": ["float32"]})), r"unreadable structure record"),
    (lambda: _file(_structure(None, complex128=[["x"]])), r"a 'complex128' list of names"),
    (lambda: _file({"__metadata__": {"ember.structure": json.dumps({"object": json.loads(_deep(300)),
                                                                    "complex128": []})}}),
     r"the ember.structure record nests deeper than 256 levels"),
    (lambda: _file({**_structure({"tensor": "x"}, ["x"]), "x": _entry("F32", [2], 0, 8)}, b"\0" * 8),
     r"complex128 entry 'x' must be float64 pairs"),
])
def test_crafted_bad_headers_raise_value_error(make, message):
    with pytest.raises(ValueError, match=message):
        ember.load(make())


def test_the_deepest_allowed_structure_loads():
    nested: list = []
    for _ in range(80):
        nested = [nested]
    assert _round_trip(nested) == nested
