"""ember.save / ember.load in PyTorch's zip archive: round trips of every kind of object, views
sharing storage, mmap, map_location, weights_only's allowlist, and hostile files."""

import collections
import io
import os
import pathlib
import pickle
import struct
import warnings
import zipfile

import numpy as np
import pytest

import ember
from ember import nn, serialization

ALL_DTYPES = [ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64, ember.float16,
              ember.bfloat16, ember.float32, ember.float64, ember.complex64, ember.complex128,
              ember.float8_e4m3fn, ember.float8_e5m2, ember.float8_e4m3fnuz, ember.float8_e5m2fnuz]


def _values(t):
    """A tensor's dtype, shape and values in a form that compares exactly (NaN-safe via bytes)."""
    return (t.dtype, tuple(t.shape), ember._C._to_bytes(t.contiguous()))


def _round_trip(obj, save_kwargs=None, **load_kwargs):
    buf = io.BytesIO()
    ember.save(obj, buf, **(save_kwargs or {}))
    buf.seek(0)
    return ember.load(buf, **load_kwargs)


def _entries(data: bytes) -> dict:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {info.filename: zf.read(info) for info in zf.infolist()}


@pytest.fixture(autouse=True)
def _no_leftover_safe_globals():
    yield
    serialization.clear_safe_globals()


# ----------------------------------------------------------------------------- round trips

@pytest.mark.parametrize("dtype", ALL_DTYPES)
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
def test_views_and_odd_shapes_keep_their_geometry(make):
    t = make()
    back = _round_trip(t)
    np.testing.assert_array_equal(back.numpy(), t.numpy())
    assert back.shape == t.shape and back.dtype == t.dtype and back.stride() == t.stride()


def test_views_of_one_block_share_one_record_and_load_as_views():
    base = ember.arange(20.0)
    obj = {"whole": base[2:18], "row": base[4:8], "cols": base[2:18].reshape(4, 4)[:, 1], "alone": ember.ones(3)}
    buf = io.BytesIO()
    ember.save(obj, buf)
    records = _entries(buf.getvalue())
    data = sorted(n for n in records if "/data/" in n)
    assert data == ["archive/data/0", "archive/data/1"]
    # only the span the views reach, [2, 18), is stored: not the 20-element block
    assert len(records["archive/data/0"]) == 16 * 4
    buf.seek(0)
    back = ember.load(buf)
    back["row"].fill_(-1.0)  # writes through every view of the block, as in the saved object
    np.testing.assert_array_equal(back["whole"].numpy()[2:6], [-1.0] * 4)
    assert back["cols"].tolist() == [3.0, -1.0, 11.0, 15.0]
    assert back["whole"].data_ptr() + 2 * 4 == back["row"].data_ptr()
    assert back["alone"].tolist() == [1.0, 1.0, 1.0]


def test_tied_tensors_load_as_one_object():
    w = ember.randn(2, 2)
    back = _round_trip({"a": w, "b": w, "pair": (w, w)})
    assert back["a"] is back["b"] is back["pair"][0] is back["pair"][1]


def test_nested_structures_numpy_and_plain_values_round_trip():
    obj = {
        "state": {0: {"step": 3, "exp_avg": ember.ones(2)}, 1: {"step": 3, "exp_avg": ember.zeros(2)}},
        "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "params": [0, 1], "nesterov": False,
                          "name": "head", "foreach": None, "eps": float("inf"), "nan": float("nan")}],
        "dtype": ember.bfloat16, "device": ember.device("cpu"), "empty": {}, "nothing": [],
        "set": {1, 2}, "frozen": frozenset({"a"}), "complex": 1 - 2j, "bytes": b"\x00\xff", "ba": bytearray(b"ab"),
        "ordered": collections.OrderedDict([("z", 1), ("a", 2)]), "counter": collections.Counter("aab"),
        "big": 2**100, "np": np.arange(6, dtype=np.int16).reshape(2, 3), "np_f": np.asfortranarray(np.eye(2)),
        "np_scalar": np.float64(2.5), "np_dtype": np.dtype(">i4"), "np_str": np.array(["ab", "c"]),
        "np_struct": np.zeros(2, dtype=[("a", "<f4"), ("b", "i8", (2,))]), "np_time": np.array(["2024-01-01"], "M8[D]"),
        "np_obj": np.array([1, "a", None], dtype=object),
    }
    back = _round_trip(obj)
    assert back["state"][0]["step"] == 3 and list(back["state"]) == [0, 1]
    assert back["state"][1]["exp_avg"].tolist() == [0.0, 0.0]
    group = back["param_groups"][0]
    assert group["betas"] == (0.9, 0.999) and isinstance(group["betas"], tuple)
    assert group["eps"] == float("inf") and group["nan"] != group["nan"] and group["foreach"] is None
    for key in ("dtype", "device", "empty", "nothing", "set", "frozen", "complex", "bytes", "ba", "ordered",
                "counter", "big", "np_scalar", "np_dtype"):
        assert back[key] == obj[key] and type(back[key]) is type(obj[key]), key
    for key in ("np", "np_f", "np_str", "np_struct", "np_time", "np_obj"):
        assert back[key].dtype == obj[key].dtype and back[key].shape == obj[key].shape, key
        np.testing.assert_array_equal(back[key], obj[key])
    assert back["np_f"].flags.f_contiguous and back["np"].flags.writeable


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_every_pickle_protocol(protocol):
    obj = {"w": ember.arange(6.0).reshape(2, 3)[:, 1:], "n": np.arange(3.0), "b": b"xy", "s": {3}}
    back = _round_trip(obj, {"pickle_protocol": protocol})
    assert back["w"].tolist() == [[1.0, 2.0], [4.0, 5.0]]
    np.testing.assert_array_equal(back["n"], obj["n"])
    assert back["b"] == b"xy" and back["s"] == {3}


def test_parameters_gradients_flags_and_python_attributes():
    p = nn.Parameter(ember.randn(3))
    frozen = nn.Parameter(ember.randn(2), requires_grad=False)
    leaf = ember.ones(2, requires_grad=True)
    tagged = ember.zeros(2)
    tagged.note = "kept"
    back = _round_trip({"p": p, "frozen": frozen, "leaf": leaf, "nonleaf": leaf * 2, "tagged": tagged})
    assert type(back["p"]) is nn.Parameter and back["p"].requires_grad
    assert type(back["frozen"]) is nn.Parameter and not back["frozen"].requires_grad
    assert back["leaf"].requires_grad and back["leaf"].is_leaf
    assert back["nonleaf"].requires_grad and back["nonleaf"].is_leaf  # as torch.load: a fresh leaf
    assert back["tagged"].note == "kept"


def _model():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.ReLU(), nn.Linear(3, 2))


def test_a_state_dict_round_trips_with_its_metadata(tmp_path):
    model = _model()
    model(ember.randn(8, 4))  # moves the running statistics off their initial values
    path = tmp_path / "model.pt"
    ember.save(model.state_dict(), path)
    loaded = ember.load(path)
    assert type(loaded) is collections.OrderedDict and loaded._metadata == model.state_dict()._metadata
    fresh = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.ReLU(), nn.Linear(3, 2))
    fresh.load_state_dict(loaded)
    for (name, a), (_, b) in zip(model.state_dict().items(), fresh.state_dict().items(), strict=True):
        assert _values(a) == _values(b), name


def test_a_whole_module_needs_weights_only_false_or_its_classes_allowed(tmp_path):
    model = _model()
    path = tmp_path / "whole.pt"
    ember.save(model, path)
    with pytest.raises(pickle.UnpicklingError, match=r"(?s)Weights only load failed.*Unsupported global: GLOBAL "
                       r"ember\.nn\.modules\.container\.Sequential was not an allowed global by default\. Please use "
                       r"`ember\.serialization\.add_safe_globals\(\[ember\.nn\.modules\.container\.Sequential\]\)`"):
        ember.load(path)
    assert serialization.get_unsafe_globals_in_checkpoint(path) == [
        "ember.nn.modules.container.Sequential", "ember.nn.modules.linear.Linear",
        "ember.nn.modules.batchnorm.BatchNorm1d", "ember.nn.modules.activation.ReLU"]

    x = ember.randn(5, 4)
    model.eval()
    expected = model(x).detach().numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # asked for explicitly, so nothing to warn about
        trusted = ember.load(path, weights_only=False)
    trusted.eval()
    np.testing.assert_array_equal(trusted(x).detach().numpy(), expected)

    classes = [nn.Sequential, nn.Linear, nn.BatchNorm1d, nn.ReLU]
    with serialization.safe_globals(classes):
        assert serialization.get_safe_globals() == classes
        allowed = ember.load(path)
    assert serialization.get_safe_globals() == []
    allowed.eval()
    np.testing.assert_array_equal(allowed(x).detach().numpy(), expected)
    assert type(allowed[0].weight) is nn.Parameter

    serialization.add_safe_globals(classes)
    assert isinstance(ember.load(path), nn.Sequential)
    serialization.clear_safe_globals()
    with pytest.raises(pickle.UnpicklingError, match=r"Unsupported global"):
        ember.load(path)


def test_pytorch_module_paths_resolve():
    assert nn.MultiheadAttention.__module__ == "ember.nn.modules.activation"
    assert nn.modules.activation.MultiheadAttention is nn.MultiheadAttention
    assert nn.modules.linear.NonDynamicallyQuantizableLinear is type(nn.MultiheadAttention(4, 2).out_proj)
    assert nn.modules.instancenorm.InstanceNorm2d is nn.InstanceNorm2d
    assert nn.modules.channelshuffle.ChannelShuffle is nn.ChannelShuffle
    attention = nn.MultiheadAttention(4, 2)
    back = _round_trip(attention, weights_only=False)
    assert type(back) is nn.MultiheadAttention and type(back.out_proj).__name__ == "NonDynamicallyQuantizableLinear"


def test_an_optimizer_checkpoint_resumes():
    model = _model()
    opt = ember.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(2):
        opt.zero_grad()
        model(ember.randn(4, 4)).sum().backward()
        opt.step()
    back = _round_trip({"model": model.state_dict(), "optim": opt.state_dict(), "epoch": 2})
    opt2 = ember.optim.Adam(model.parameters(), lr=0.5)
    opt2.load_state_dict(back["optim"])
    assert opt2.param_groups[0]["lr"] == 0.01 and back["epoch"] == 2
    state = opt.state_dict()["state"][0]
    assert _values(back["optim"]["state"][0]["exp_avg"]) == _values(state["exp_avg"])


def test_paths_pathlikes_and_files(tmp_path):
    t = ember.arange(3)
    ember.save(t, str(tmp_path / "a.pt"))
    ember.save(t, pathlib.Path(tmp_path / "b.pt"))
    with open(tmp_path / "c.pt", "wb") as f:
        ember.save(t, f)
    for name in "abc":
        assert ember.load(tmp_path / f"{name}.pt").tolist() == [0, 1, 2]
        with open(tmp_path / f"{name}.pt", "rb") as f:
            assert ember.load(f).tolist() == [0, 1, 2]

    class Stream(io.RawIOBase):  # neither seekable nor tellable, like a socket or a pipe
        def __init__(self, data=b""):
            self.data, self.out = data, bytearray()

        def writable(self):
            return True

        def write(self, b):
            self.out += b
            return len(b)

        def readable(self):
            return True

        def readinto(self, b):
            n = min(len(b), len(self.data))
            b[:n], self.data = self.data[:n], self.data[n:]
            return n

    sink = Stream()
    ember.save({"t": t}, sink)
    assert ember.load(Stream(bytes(sink.out)))["t"].tolist() == [0, 1, 2]


def test_the_archive_layout_is_pytorchs():
    buf = io.BytesIO()
    ember.save({"x": ember.ones(3), "y": ember.zeros(2, dtype=ember.float64)}, buf)
    records = _entries(buf.getvalue())
    assert set(records) == {"archive/data.pkl", "archive/.format_version", "archive/.storage_alignment",
                            "archive/byteorder", "archive/data/0", "archive/data/1", "archive/version"}
    assert records["archive/byteorder"] == b"little" and records["archive/version"] == b"3\n"
    pkl = records["archive/data.pkl"]
    for name in (b"torch._utils\n_rebuild_tensor_v2", b"torch\nFloatStorage", b"torch\nDoubleStorage"):
        assert name in pkl
    assert b"ember" not in pkl  # only the format's vocabulary is named
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zf:
        for info in zf.infolist():
            assert info.compress_type == zipfile.ZIP_STORED
            data = buf.getvalue()
            name_length, extra_length = struct.unpack("<HH", data[info.header_offset + 26:info.header_offset + 30])
            assert (info.header_offset + 30 + name_length + extra_length) % 64 == 0, info.filename


def test_large_entries_use_zip64_and_stay_aligned(monkeypatch):
    # zip64 local headers carry 20 more bytes; shrinking zipfile's limit exercises that path.
    monkeypatch.setattr(zipfile, "ZIP64_LIMIT", 100)
    t = ember.arange(200.0)
    buf = io.BytesIO()
    ember.save({"t": t, "u": ember.ones(3)}, buf)
    data = buf.getvalue()
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        info = zf.getinfo("archive/data/0")
        name_length, extra_length = struct.unpack("<HH", data[info.header_offset + 26:info.header_offset + 30])
        assert (info.header_offset + 30 + name_length + extra_length) % 64 == 0
    monkeypatch.undo()
    buf.seek(0)
    assert ember.load(buf)["t"].tolist() == t.tolist()


# ----------------------------------------------------------------------------- mmap and map_location

def _mapped_ranges(path):
    ranges = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            if line.rstrip().endswith(str(path)):
                lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
                ranges.append((lo, hi))
    return ranges


def test_mmap_shares_the_files_pages_copy_on_write(tmp_path):
    path = tmp_path / "mapped.pt"
    base = ember.arange(4096.0)
    ember.save({"w": base, "v": base[100:200], "h": base.to(ember.bfloat16)}, path)
    before = path.read_bytes()
    loaded = ember.load(path, mmap=True)
    assert loaded["w"].tolist() == base.tolist()
    assert _values(loaded["h"]) == _values(base.to(ember.bfloat16))
    if os.path.exists("/proc/self/maps"):
        ranges = _mapped_ranges(path.resolve())
        assert any(lo <= loaded["w"].data_ptr() < hi for lo, hi in ranges)
    assert loaded["v"].data_ptr() == loaded["w"].data_ptr() + 100 * 4
    loaded["v"].fill_(-1.0)  # private pages: the tensors change, the file does not
    assert loaded["w"][150].item() == -1.0
    assert path.read_bytes() == before
    with open(path, "rb") as f:
        assert ember.load(f, mmap=True)["w"].tolist() == base.tolist()
    with pytest.raises(TypeError, match=r"mmap=True needs a path or a file opened from one"):
        ember.load(io.BytesIO(before), mmap=True)


def test_mmap_reads_safetensors_too(tmp_path):
    path = tmp_path / "st.safetensors"
    serialization.save_safetensors({"a": ember.arange(8.0)}, path)
    assert ember.load(path, mmap=True)["a"].tolist() == list(map(float, range(8)))


def test_map_location_forms():
    t = {"a": ember.arange(4.0), "b": ember.ones(2)}
    for ml in (None, "cpu", ember.device("cpu"), {"cpu": "cpu"}, {"cuda:0": "cpu"}):
        assert _round_trip(t, map_location=ml)["a"].device == ember.device("cpu")
    seen = []
    back = _round_trip(t, map_location=lambda storage, location: seen.append(location))
    assert seen == ["cpu", "cpu"] and back["b"].tolist() == [1.0, 1.0]
    back = _round_trip(t, map_location=lambda storage, location: storage)
    assert back["a"].tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(TypeError, match=r"map_location must be None, a device, a str, a dict or a callable"):
        _round_trip(t, map_location=3)
    with pytest.raises(TypeError, match=r"a map_location function must return None or the storage"):
        _round_trip(t, map_location=lambda storage, location: ember.zeros(1))


@pytest.mark.skipif(ember._C._has_backend("cuda"), reason="checks the CPU-only build's error")
def test_cuda_on_a_cpu_only_build_is_a_clear_error():
    message = (r"Attempting to deserialize object on a CUDA device but ember\.cuda\.is_available\(\) is False\. "
               r"If you are running on a CPU-only machine, please use ember\.load with "
               r"map_location=ember\.device\('cpu'\) to map your storages to the CPU\.")
    for ml in ("cuda", ember.device("cuda:0"), {"cpu": "cuda:1"}):
        with pytest.raises(RuntimeError, match=message):
            _round_trip(ember.ones(2), map_location=ml)
    # a storage saved on a GPU: the file says so, and this build cannot put it there
    with pytest.raises(RuntimeError, match=message):
        ember.load(_archive(_tensor_pkl(location="cuda:0"), {"data/0": bytes(16)}))
    back = ember.load(_archive(_tensor_pkl(location="cuda:0"), {"data/0": bytes(16)}), map_location="cpu")
    assert back.device == ember.device("cpu")
    assert ember.load(_archive(_tensor_pkl(location="cuda:0"), {"data/0": bytes(16)}),
                      map_location={"cuda:0": "cpu"}).tolist() == [0.0] * 4


def test_argument_errors():
    with pytest.raises(TypeError, match=r"expected a path or a writable binary file, but got int"):
        ember.save({}, 3)
    with pytest.raises(ValueError, match=r"pickle_protocol must be an integer from 2 to 5, but got 1"):
        ember.save({}, io.BytesIO(), pickle_protocol=1)
    with pytest.raises(ValueError, match=r"pickle_module must be the standard pickle module"):
        ember.save({}, io.BytesIO(), pickle_module=object())
    with pytest.raises(TypeError, match=r"expected a path or a readable binary file, but got int"):
        ember.load(5)
    with pytest.raises(TypeError, match=r"expected a file opened in binary mode"):
        ember.load(io.StringIO("text"))
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'foo'"):
        ember.load(io.BytesIO(), foo=1)
    with pytest.raises(RuntimeError, match=r"Can not safely load weights when explicit pickle_module is specified"):
        ember.load(io.BytesIO(), pickle_module=pickle)
    base = ember.complex(ember.ones(2), ember.zeros(2))
    with pytest.raises(RuntimeError, match=r"cannot save tensors that view the same memory as different dtypes"):
        ember.save([base, ember.view_as_real(base)], io.BytesIO())
    with pytest.raises(TypeError, match=r"add_safe_globals\] expected a class or function, but got int"):
        serialization.add_safe_globals([3])
    with pytest.raises(TypeError, match=r"expected a list"):
        serialization.add_safe_globals(len)


# ----------------------------------------------------------------------------- hostile pickles

class _Exploit:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _archive(pkl: bytes, records: dict | None = None, prefix: str = "archive") -> io.BytesIO:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(f"{prefix}/data.pkl", pkl)
        for name, data in (records or {}).items():
            zf.writestr(f"{prefix}/{name}", data)
    buf.seek(0)
    return buf


def _v(value) -> bytes:
    """Opcodes that push `value` (pickle's own, PROTO and STOP stripped)."""
    return pickle.dumps(value, protocol=2)[2:-1]


def _global(module: str, name: str) -> bytes:
    return pickle.GLOBAL + f"{module}\n{name}\n".encode()


def _call(func: bytes, *args: bytes) -> bytes:
    return func + pickle.MARK + b"".join(args) + pickle.TUPLE + pickle.REDUCE


def _pkl(body: bytes) -> bytes:
    return pickle.PROTO + b"\x02" + body + pickle.STOP


def _tensor_pkl(size=(4,), stride=(1,), offset=0, numel=4, storage=("torch", "FloatStorage"), key="0",
                location="cpu", extra=(), func="_rebuild_tensor_v2", raw_size=None) -> bytes:
    pid = pickle.MARK + _v("storage") + _global(*storage) + _v(key) + _v(location) + _v(numel) + pickle.TUPLE
    hooks = _global("collections", "OrderedDict") + pickle.EMPTY_TUPLE + pickle.REDUCE
    return _pkl(_call(_global("torch._utils", func), pid + pickle.BINPERSID, _v(offset),
                      raw_size if raw_size is not None else _v(size), _v(stride), _v(False), hooks, *extra))


def test_a_reduce_payload_runs_nothing_under_weights_only(tmp_path):
    marker = tmp_path / "pwned"
    buf = io.BytesIO()
    ember.save({"weight": ember.ones(2), "evil": _Exploit(marker)}, buf)
    ember.load(io.BytesIO(buf.getvalue()), weights_only=False)  # proves the payload really runs when trusted
    assert marker.exists()
    marker.unlink()
    for data in (buf.getvalue(), _archive(pickle.dumps(_Exploit(marker), protocol=2)).getvalue(),
                 _archive(pickle.dumps(_Exploit(marker), protocol=5)).getvalue()):
        with pytest.raises(pickle.UnpicklingError, match=r"Unsupported global: GLOBAL (posix|os|nt)\.system was not "
                                                         r"an allowed global by default"):
            ember.load(io.BytesIO(data))
        with pytest.raises(pickle.UnpicklingError, match=r"Unsupported global"):
            ember.load(io.BytesIO(data), weights_only=None)
        assert not marker.exists()
    assert "posix.system" in serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(buf.getvalue())) or \
        "nt.system" in serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(buf.getvalue()))


def test_bare_pickles_and_unknown_files_are_refused(tmp_path):
    marker = tmp_path / "pwned"
    for data in (pickle.dumps(_Exploit(marker)), pickle.dumps({"w": 1}, protocol=2), pickle.dumps(_Exploit(marker), 5)):
        with pytest.raises(RuntimeError, match=r"this file is a bare pickle \(what pickle\.dump writes\), not a "
                                               r"checkpoint"):
            ember.load(io.BytesIO(data))
        with pytest.raises(RuntimeError, match=r"this file is a bare pickle"):
            ember.load(io.BytesIO(data), weights_only=False)
    assert not marker.exists()
    with pytest.raises(RuntimeError, match=r"not a checkpoint: expected a zip archive"):
        ember.load(io.BytesIO(b"hello world, not a checkpoint"))


class _Point:
    def __init__(self, x=0):
        self.x = x


def _point_factory(x):
    return _Point(x)


def test_safe_globals_cover_classes_functions_and_renamed_globals():
    data = pickle.dumps({"p": _Point(3)}, protocol=2)
    with pytest.raises(pickle.UnpicklingError, match=rf"GLOBAL {__name__}\._Point was not an allowed global"):
        ember.load(_archive(data))
    with serialization.safe_globals([_Point]):
        assert ember.load(_archive(data))["p"].x == 3
    call = _pkl(_call(_global("elsewhere", "make_point"), _v(5)))
    with serialization.safe_globals([(_point_factory, "elsewhere.make_point")]):
        assert ember.load(_archive(call)).x == 5
    serialization.add_safe_globals([_Point])
    with serialization.safe_globals([_Point, _point_factory]):
        serialization.add_safe_globals([len])
    assert serialization.get_safe_globals() == [_Point, len]  # the block removes only what it added
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL elsewhere\.make_point was not an allowed global"):
        ember.load(_archive(call))


@pytest.mark.parametrize("pkl, message", [
    # the probes: each a clear UnpicklingError, none a TypeError/RecursionError/crash
    (_tensor_pkl(size=(2**70,), numel=4), r"a tensor's size holds 1180591620717411303424, which does not fit in int64"),
    (_tensor_pkl(size=(2**40, 2**40), stride=(1, 1)), r"has more elements than int64 counts"),
    (_tensor_pkl(stride=(-1,)), r"a tensor's stride \(-1,\) holds a negative value; negative strides are not supported"),
    (_tensor_pkl(size=(5,)), r"needs 5 elements, but its storage data/0 holds 4"),
    (_tensor_pkl(size=(2, 2), stride=(3, 1)), r"needs 5 elements"),
    (_tensor_pkl(offset=1), r"size \(4,\), stride \(1,\) and offset 1 needs 5 elements"),
    (_tensor_pkl(offset=-1), r"storage offset must be an integer in \[0, 2\*\*63\), but got -1"),
    (_tensor_pkl(size=(2, 2), stride=(1,)), r"size \(2, 2\) and stride \(1,\) differ in length"),
    (_tensor_pkl(raw_size=_v([[1], 2])), r"a tensor's size must be a tuple of integers, but got a list"),
    (_tensor_pkl(raw_size=_v((1.5,))), r"a tensor's size must be a tuple of integers"),
    (_tensor_pkl(numel=5), r"the storage data/0 of 5 FloatStorage elements needs 20 bytes, but its record holds 16"),
    (_tensor_pkl(key="7"), r"the storage record data/7 is missing from the archive"),
    (_tensor_pkl(storage=("torch", "ComplexHalfStorage")), r"GLOBAL torch\.ComplexHalfStorage was not an allowed global"),
    (_tensor_pkl(func="_rebuild_tensor_v3", storage=("torch.storage", "UntypedStorage"), numel=16,
                 extra=(_v([1, 2]),)), r"a tensor's dtype must be a dtype, but got a list"),
    (_tensor_pkl(func="_rebuild_tensor_v3", numel=4, extra=(_global("torch", "float64"),)),
     r"a float64 tensor cannot view a FloatStorage"),
    (_tensor_pkl(func="_rebuild_tensor_v3", extra=(_global("torch", "uint16"),)),
     r"the checkpoint holds dtype torch\.uint16, which Ember does not have"),
    (_pkl(_call(_global("torch._utils", "_rebuild_tensor_v2"), _v("not a storage"), _v(0), _v((1,)), _v((1,)),
                _v(False), _v({}))), r"a tensor's storage must be a persistent storage, but got 'not a storage'"),
    (_pkl(pickle.MARK + _v("storage") + _v(1) + pickle.TUPLE + pickle.BINPERSID),
     r"a persistent id must be \('storage', type, key, location, numel\)"),
    (_tensor_pkl(location="warp-drive"), r"the storage location 'warp-drive' is not a device"),
    # containers
    (_pkl(pickle.EMPTY_DICT + pickle.MARK + _v("k") + _v(1) + _v("k") + _v(2) + pickle.SETITEMS),
     r"duplicate key 'k' in a dict"),
    (_pkl(_call(_global("collections", "OrderedDict"), _v([("a", 1), ("a", 2)]))), r"duplicate key 'a' in a OrderedDict"),
    (_pkl(pickle.EMPTY_DICT + _v([1]) + _v(2) + pickle.SETITEM), r"TypeError: unhashable type: 'list'"),
    (_pkl(_call(_global("__builtin__", "set"), _v([1, 1]))), r"duplicate entries in a set"),
    (_pkl(pickle.EMPTY_TUPLE + pickle.TUPLE1 * 100_000), r"tuples nested deeper than 1000 levels"),
    (_pkl(pickle.EMPTY_LIST + (pickle.EMPTY_LIST + pickle.APPEND) * 0 + b"".join(
        [pickle.EMPTY_LIST] * 100_000) + pickle.APPEND * 100_000), r"nests containers deeper than 1000 levels"),
    (_pkl(pickle.MARK * 100_000 + pickle.EMPTY_LIST), r"malformed stack"),
    # the opcode stream
    (_pkl(_v(1))[:-1], r"pickle data was truncated: no STOP opcode"),
    (_pkl(pickle.BINUNICODE + struct.pack("<I", 2**31) + b"abc"), r"pickle data was truncated: 2147483648 bytes wanted"),
    (_pkl(pickle.BINGET + b"\x05"), r"memo key 5 was never stored"),
    (_pkl(pickle.APPEND), r"unpickling stack underflow"),
    (_pkl(b"\xff"), r"unsupported pickle opcode b'\\xff'"),
    (_pkl(pickle.INST + b"os\nsystem\n"), r"pickle opcode b'i' \(INST\) is not allowed"),
    (_pkl(pickle.EXT1 + b"\x01"), r"\(EXT1\) is not allowed"),
    (_pkl(_call(_global("_codecs", "encode"), _v("x"), _v("rot13"))), r"_codecs\.encode is only allowed as encode"),
    (_pkl(_call(_global("numpy.core.multiarray", "_reconstruct"), _global("numpy", "ndarray"), _v((0,)), _v(b"b"))),
     r"a numpy ndarray was never given its state"),
    (_pkl(_call(_global("numpy", "dtype"), _v("O8; import os"), _v(False), _v(True))),
     r"numpy\.dtype arguments .* are not a plain dtype code"),
    (_pkl(_call(_global("builtins", "getattr"), _v(1), _v("real"))), r"GLOBAL builtins\.getattr was not an allowed"),
    (_pkl(_global("collections", "OrderedDict") + pickle.EMPTY_TUPLE + pickle.NEWOBJ),
     r"NEWOBJ may only build allowlisted classes"),
    (_pkl(_v([]) + _v({"__class__": 1}) + pickle.BUILD), r"BUILD may only fill in OrderedDicts"),
])
def test_malformed_pickles_raise_unpickling_error(pkl, message):
    records = {"data/0": bytes(16)}
    with pytest.raises(pickle.UnpicklingError, match=rf"(?s)^Weights only load failed\. .*{message}") as info:
        ember.load(_archive(pkl, records))
    assert not isinstance(info.value.__cause__, RecursionError)


def test_numpy_arrays_are_checked_before_numpy_sees_them():
    state = _v((1, (3,), np.dtype("f8"), False, b"\x00" * 16))  # 16 bytes for 3 float64
    pkl = _pkl(_call(_global("numpy.core.multiarray", "_reconstruct"), _global("numpy", "ndarray"), _v((0,)),
                     _v(b"b")) + state + pickle.BUILD)
    with pytest.raises(pickle.UnpicklingError, match=r"shape \(3,\) of float64 needs 24 bytes, but the data holds 16"):
        ember.load(_archive(pkl))
    bools = _v((1, (2,), np.dtype("?"), False, b"\x01\x07"))
    with pytest.raises(pickle.UnpicklingError, match=r"numpy array: a bool array's bytes must be 0 or 1"):
        ember.load(_archive(pkl.replace(state, bools)))
    huge = _v((1, (2**62, 4), np.dtype("f8"), False, b""))
    with pytest.raises(pickle.UnpicklingError, match=r"numpy array of shape \(4611686018427387904, 4\) has more than"):
        ember.load(_archive(pkl.replace(state, huge)))


def test_big_endian_archives_are_swapped():
    values = [1.5, -2.0, 3.25, 2.0**100]
    pkl = _tensor_pkl()
    swapped = ember.load(_archive(pkl, {"data/0": struct.pack(">4f", *values), "byteorder": b"big"}))
    assert swapped.tolist() == values
    complex_pkl = _tensor_pkl(size=(2,), storage=("torch", "ComplexFloatStorage"), numel=2)
    z = ember.load(_archive(complex_pkl, {"data/0": struct.pack(">4f", *values), "byteorder": b"big"}))
    assert z.tolist() == [complex(1.5, -2.0), complex(3.25, 2.0**100)]


def test_plain_pickling_of_tensor_records_and_devices():
    # pickle.dumps(tensor) (DataLoader workers, deepcopy) goes through the tensor record, whose
    # header is checked like a checkpoint's
    header = b'{"format":1,"dtype":"float32","shape":[1180591620717411303424],"byteorder":"little"}'
    with pytest.raises(ValueError, match=r"shape must be a list of integers in int64's range"):
        serialization.tensor_from_bytes(serialization.MAGIC + struct.pack("<I", len(header)) + header)
    for device in (ember.device("cpu"), ember.device("cuda:1")):
        assert pickle.loads(pickle.dumps(device)) == device
    assert _round_trip({"d": ember.device("cuda:1")}, map_location="cpu")["d"] == ember.device("cuda:1")


def test_weights_only_false_still_checks_tensor_records():
    with pytest.raises(pickle.UnpicklingError, match=r"^\[load\] a tensor of size \(5,\)"):
        ember.load(_archive(_tensor_pkl(size=(5,)), {"data/0": bytes(16)}), weights_only=False)


# ----------------------------------------------------------------------------- damaged archives

def _valid_archive() -> bytes:
    buf = io.BytesIO()
    ember.save({"a": ember.arange(8.0), "b": ember.ones(3, dtype=ember.int64)}, buf)
    return buf.getvalue()


def _rezip(entries: dict, compress=zipfile.ZIP_STORED) -> io.BytesIO:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compress) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    buf.seek(0)
    return buf


def test_damaged_archives_raise_runtime_error():
    data = _valid_archive()
    entries = _entries(data)
    cases = [
        (data[:len(data) // 2], r"invalid checkpoint archive: BadZipFile"),
        (data[:-30], r"invalid checkpoint archive"),
        (b"PK\x05\x06" + bytes(18), r"no data\.pkl record"),
        (_rezip(entries, zipfile.ZIP_DEFLATED).getvalue(), r"the entry 'archive/data.pkl' is compressed \(method 8\)"),
        (_rezip({**entries, "other/data.pkl": b""}).getvalue(), r"2 data\.pkl records"),
    ]
    flipped = bytearray(data)
    offset = data.index(struct.pack("<8f", *range(8)))
    flipped[offset + 5] ^= 0x40
    cases.append((bytes(flipped), r"the record 'data/0' fails its CRC-32 check"))
    bad_order = _rezip({**entries, "archive/byteorder": b"middle"}).getvalue()
    cases.append((bad_order, r"unknown byte order b'middle'"))
    # two central-directory entries with one name: zipfile would silently take the last
    dup = io.BytesIO()
    with zipfile.ZipFile(dup, "w") as zf:
        for name, value in entries.items():
            zf.writestr(name, value)
        with pytest.warns(UserWarning, match="Duplicate name"):
            zf.writestr("archive/data/0", b"\x00" * 32)
    cases.append((dup.getvalue(), r"the entry 'archive/data/0' appears twice"))
    for damaged, message in cases:
        with pytest.raises(RuntimeError, match=message):
            ember.load(io.BytesIO(damaged))


def test_overlapping_and_out_of_bounds_entries():
    data = bytearray(_valid_archive())
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as zf:
        infos = {i.filename: i for i in zf.infolist()}
        directory = zf.start_dir
    # point data/1's central-directory record at data/0's local header: two entries, one span
    central = bytes(data).index(b"PK\x01\x02" + bytes(data[directory + 4:directory + 6]), directory)
    record = bytes(data).index(b"archive/data/1", central) - 46
    struct.pack_into("<I", data, record + 42, infos["archive/data/0"].header_offset)
    with pytest.raises(RuntimeError, match=r"named differently in its local header|overlap"):
        ember.load(io.BytesIO(bytes(data)))
    # a size past the central directory
    data = bytearray(_valid_archive())
    record = bytes(data).index(b"archive/data/0", directory) - 46
    struct.pack_into("<II", data, record + 20, 10**6, 10**6)
    with pytest.raises(RuntimeError, match=r"runs past the central directory"):
        ember.load(io.BytesIO(bytes(data)))


def test_pytorch_only_features_are_named():
    # sparse tensors of every layout load (tests/test_checkpoint_sparse.py); a malformed rebuild call
    # and a layout Ember lacks are refused
    sparse = _pkl(_call(_global("torch._utils", "_rebuild_sparse_tensor"), _v(1)))
    with pytest.raises(pickle.UnpicklingError, match=r"_rebuild_sparse_tensor takes a layout and a tuple of parts"):
        ember.load(_archive(sparse))
    layout = _pkl(_call(_global("torch.serialization", "_get_layout"), _v("torch._mkldnn")))
    with pytest.raises(pickle.UnpicklingError, match=r"_get_layout: Ember has the layouts"):
        ember.load(_archive(layout))
    hooks = _tensor_pkl().replace(_global("collections", "OrderedDict") + pickle.EMPTY_TUPLE + pickle.REDUCE,
                                  _v({1: 2}))
    with pytest.raises(pickle.UnpicklingError, match=r"backward hooks are not restored"):
        ember.load(_archive(hooks, {"data/0": bytes(16)}))


# ----------------------------------------------------------------------------- PyTorch's format before 1.6

def _legacy(obj, **kwargs) -> bytes:
    buf = io.BytesIO()
    ember.save(obj, buf, _use_new_zipfile_serialization=False, **kwargs)
    return buf.getvalue()


def test_the_legacy_format_round_trips():
    base = ember.arange(10.0)
    obj = {"w": base, "v": base[2:5], "p": nn.Parameter(ember.ones(2)), "flags": ember.tensor([True, False]),
           "half": ember.ones(2, dtype=ember.bfloat16), "f8": ember.ones(3).to(ember.float8_e5m2), "n": 3}
    data = _legacy(obj)
    assert data[:2] == b"\x80\x02" and b"PK" not in data[:4]
    for weights_only in (True, False):
        back = ember.load(io.BytesIO(data), weights_only=weights_only)
        assert back["v"].tolist() == [2.0, 3.0, 4.0] and back["v"].data_ptr() == back["w"].data_ptr() + 8
        assert type(back["p"]) is nn.Parameter and back["flags"].tolist() == [True, False] and back["n"] == 3
        assert _values(back["f8"]) == _values(obj["f8"]) and _values(back["half"]) == _values(obj["half"])
    assert ember.load(io.BytesIO(_legacy(obj, pickle_protocol=4)))["w"].tolist() == base.tolist()
    model = _legacy(_model())
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL ember\.nn\.modules\.container\.Sequential"):
        ember.load(io.BytesIO(model))
    assert isinstance(ember.load(io.BytesIO(model), weights_only=False), nn.Sequential)


def test_the_legacy_format_is_not_mapped(tmp_path):
    path = tmp_path / "legacy.pt"
    path.write_bytes(_legacy({"w": ember.ones(2)}))
    with pytest.raises(RuntimeError, match=r"mmap=True needs the zip archive"):
        ember.load(path, mmap=True)


def test_damaged_legacy_files():
    data = _legacy({"w": ember.arange(4.0)})
    tail = len(struct.pack("<q", 4)) + 16
    body, storage = data[:-tail], data[-tail:]
    cases = [
        (data[:-3], r"the legacy data of storage .* holds 4 elements where the pickle says 4, or is truncated"),
        (body + struct.pack("<q", 5) + storage[8:], r"holds 5 elements"),
        (data[:len(data) - tail - 1], r"the legacy storage key list is malformed"),
        (data.replace(pickle.dumps(1001, protocol=2), pickle.dumps(1002, protocol=2), 1),
         r"the legacy protocol version is not 1001"),
    ]
    for damaged, message in cases:
        with pytest.raises(RuntimeError, match=message):
            ember.load(io.BytesIO(damaged))
    # a storage the pickle says is huge: never allocated beyond what the file holds
    numel = pickle.LONG1 + b"\x08" + (4).to_bytes(8, "little") + pickle.NONE  # ember.save writes it as a slot
    huge = data.replace(numel, pickle.LONG1 + b"\x08" + (2**40).to_bytes(8, "little") + pickle.NONE, 1)
    assert huge != data
    with pytest.raises(pickle.UnpicklingError, match=r"the storages the pickle names need 4398046511104 bytes, more "
                                                     r"than the \d+-byte file holds"):
        ember.load(io.BytesIO(huge))
