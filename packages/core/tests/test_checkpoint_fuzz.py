"""Fuzzing the checkpoint readers: valid archives, legacy files and safetensors files, mutated (bytes flipped,
inserted and cut, zip entries swapped, dropped, repeated, re-compressed, the pickle itself
mutated under a valid CRC, header values replaced) must load or raise only the documented
exceptions, with their documented message prefixes (see _checkpoint.py's docstring):

    RuntimeError            "[load] ..." or "Attempting to deserialize ..." (never RecursionError)
    pickle.UnpicklingError  "Weights only load failed. ..."
    ValueError              "[load] invalid checkpoint: ..."  (safetensors layout)

Each test runs EMBER_FUZZ_EXAMPLES examples (default 100; `nox -s fuzz` runs thousands, under
the sanitizer build too), without a deadline.
"""

import collections
import io
import json
import os
import pickle
import struct
import tempfile
import warnings
import zipfile

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from ember import nn
from ember.serialization import save_safetensors

EXAMPLES = int(os.environ.get("EMBER_FUZZ_EXAMPLES", "100"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _seed_object(quantized: bool = True):
    base = ember.arange(24.0)
    state = collections.OrderedDict(w=base[:12].reshape(3, 4), v=base[4:8], t=base[:12].reshape(3, 4).t())
    state._metadata = collections.OrderedDict({"": {"version": 1}})
    return {
        "state": state,
        "p": nn.Parameter(ember.ones(2)),
        "ints": ember.arange(5, dtype=ember.int64), "flags": ember.tensor([True, False]),
        "half": ember.ones(3, dtype=ember.bfloat16), "f8": ember.ones(2).to(ember.float8_e5m2),
        "meta": {"lr": 0.1, "betas": (0.9, 0.99), "name": "x", "n": None, 3: [1, 2]},
        "np": np.arange(6, dtype=np.int32).reshape(2, 3), "dtype": ember.float16, "set": {1, 2}, "b": b"\x00\x01",
        # quantized tensors: the zip format only (the legacy loader refuses them)
        **({"q": ember.quantize_per_tensor(base[:6], 0.5, 3, ember.quint8),
            "pc": ember.quantize_per_channel(base[:6].reshape(2, 3), ember.tensor([0.5, 0.25]), ember.tensor([0, 1]), 0,
                                             ember.qint8),
            # packed sub-byte codes (Note [sub-byte quantized tensors])
            "q4": ember.quantize_per_tensor(base[:7], 0.5, 3, ember.quint4x2),
            "pc2": ember.quantize_per_channel(base[:6].reshape(2, 3), ember.tensor([0.5, 0.25]), ember.tensor([0.0, 1.5]),
                                              0, ember.quint2x4)} if quantized else {}),
    }


def _archive(protocol=2, zipped=True) -> bytes:
    buf = io.BytesIO()
    ember.save(_seed_object(quantized=zipped), buf, pickle_protocol=protocol, _use_new_zipfile_serialization=zipped)
    return buf.getvalue()


ARCHIVES = [_archive(2), _archive(4)]
LEGACY = _archive(2, zipped=False)  # PyTorch's format before 1.6


def _safetensors_file() -> bytes:
    buf = io.BytesIO()
    save_safetensors({"a": ember.arange(6.0).reshape(2, 3), "b": {"c": [ember.ones(2, dtype=ember.int32), 1.5]},
                      "z": ember.complex(ember.ones(1, dtype=ember.float64), ember.ones(1, dtype=ember.float64))}, buf)
    return buf.getvalue()


SAFETENSORS = _safetensors_file()


def _entries(data: bytes) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return [(i.filename, zf.read(i)) for i in zf.infolist()]


def _zip(entries: list[tuple[str, bytes]], methods: dict | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns on repeated names, which these tests make on purpose
        for name, data in entries:
            zf.writestr(zipfile.ZipInfo(name), data, compress_type=(methods or {}).get(name, zipfile.ZIP_STORED))
    return buf.getvalue()


def _check(data: bytes, **kwargs) -> None:
    """Load `data`; only the documented exceptions, with their documented prefixes, may leave."""
    try:
        ember.load(io.BytesIO(data), **kwargs)
    except pickle.UnpicklingError as err:
        assert str(err).startswith("Weights only load failed. "), err
    except RecursionError as err:  # a RuntimeError subclass: caught first, it fails the test
        raise AssertionError(f"RecursionError escaped: {err}") from err
    except RuntimeError as err:
        assert str(err).startswith(("[load] ", "Attempting to deserialize")), err
    except ValueError as err:
        assert str(err).startswith("[load] invalid checkpoint: "), err


def _mutate(data: bytes, flips, cut, inserts) -> bytes:
    out = bytearray(data)
    for position, mask in flips:
        out[position % len(out)] ^= mask
    for position, chunk in inserts:
        position %= len(out) + 1
        out[position:position] = chunk
    if cut is not None:
        del out[cut % (len(out) + 1):]
    return bytes(out)


_flips = st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(1, 255)), max_size=8)
_inserts = st.lists(st.tuples(st.integers(0, 1 << 20), st.binary(min_size=1, max_size=16)), max_size=2)


@FUZZ
@given(source=st.sampled_from(ARCHIVES + [SAFETENSORS, LEGACY]), flips=_flips,
       cut=st.none() | st.integers(0, 1 << 20), inserts=_inserts)
def test_mutated_files(source, flips, cut, inserts):
    _check(_mutate(source, flips, cut, inserts))


@FUZZ
@given(source=st.sampled_from(ARCHIVES), flips=_flips, cut=st.none() | st.integers(0, 1 << 16), inserts=_inserts,
       data=st.data())
def test_mutated_pickles_under_a_valid_crc(source, flips, cut, inserts, data):
    # Damage the pickle or a storage record but keep the zip intact, so the weights-only
    # interpreter and the tensor checks (not the CRC) meet it.
    entries = _entries(source)
    index = data.draw(st.sampled_from([i for i, (name, _) in enumerate(entries)
                                       if name.endswith(("data.pkl", "byteorder")) or "/data/" in name]))
    name, payload = entries[index]
    if payload:
        entries[index] = (name, _mutate(payload, flips, cut, inserts))
    _check(_zip(entries))


@FUZZ
@given(source=st.sampled_from(ARCHIVES), data=st.data())
def test_rearranged_archives(source, data):
    entries = _entries(source)
    methods = {}
    for _ in range(data.draw(st.integers(1, 3))):
        op = data.draw(st.sampled_from(["swap_data", "swap_names", "drop", "repeat", "compress", "rename"]))
        i = data.draw(st.integers(0, len(entries) - 1))
        j = data.draw(st.integers(0, len(entries) - 1))
        if op == "swap_data":
            entries[i], entries[j] = (entries[i][0], entries[j][1]), (entries[j][0], entries[i][1])
        elif op == "swap_names":
            entries[i], entries[j] = (entries[j][0], entries[i][1]), (entries[i][0], entries[j][1])
        elif op == "drop" and len(entries) > 1:
            del entries[i]
        elif op == "repeat":
            entries.append((entries[i][0], entries[j][1]))
        elif op == "compress":
            methods[entries[i][0]] = zipfile.ZIP_DEFLATED
        elif op == "rename":
            entries[i] = (data.draw(st.sampled_from(["archive/data/9", "archive/x/data.pkl", "data.pkl",
                                                     "archive/data.pkl", "archive/byteorder"])), entries[i][1])
    _check(_zip(entries, methods))


_opcode_pieces = [
    pickle.MARK, pickle.STOP, pickle.POP, pickle.POP_MARK, pickle.DUP, pickle.NONE, pickle.NEWTRUE, pickle.EMPTY_TUPLE,
    pickle.TUPLE, pickle.TUPLE1, pickle.TUPLE2, pickle.TUPLE3, pickle.EMPTY_LIST, pickle.APPEND, pickle.APPENDS,
    pickle.LIST, pickle.EMPTY_DICT, pickle.DICT, pickle.SETITEM, pickle.SETITEMS, pickle.EMPTY_SET, pickle.ADDITEMS,
    pickle.FROZENSET, pickle.BINPUT + b"\x00", pickle.BINGET + b"\x00", pickle.BINPUT + b"\x01", pickle.BINGET + b"\x01",
    pickle.MEMOIZE, pickle.REDUCE, pickle.BUILD, pickle.NEWOBJ, pickle.BINPERSID, pickle.BININT1 + b"\x07",
    pickle.LONG1 + b"\x09" + b"\xff" * 9, pickle.BINFLOAT + struct.pack(">d", 1.5), pickle.SHORT_BINUNICODE + b"\x01k",
    pickle.SHORT_BINBYTES + b"\x02ab", pickle.GLOBAL + b"collections\nOrderedDict\n", pickle.GLOBAL + b"__builtin__\nset\n",
    pickle.GLOBAL + b"torch._utils\n_rebuild_tensor_v2\n", pickle.GLOBAL + b"torch\nFloatStorage\n",
    pickle.GLOBAL + b"numpy.core.multiarray\n_reconstruct\n", pickle.GLOBAL + b"numpy\nndarray\n",
    pickle.GLOBAL + b"numpy\ndtype\n", pickle.GLOBAL + b"torch\nSize\n", pickle.GLOBAL + b"torch\ndevice\n",
    pickle.GLOBAL + b"_codecs\nencode\n", pickle.GLOBAL + b"torch._tensor\n_rebuild_from_type_v2\n",
    pickle.BINUNICODE + b"\x07\x00\x00\x00storage", pickle.SHORT_BINUNICODE + b"\x010", pickle.SHORT_BINUNICODE + b"\x03cpu",
    pickle.SHORT_BINUNICODE + b"\x02f8", pickle.SHORT_BINUNICODE + b"\x06latin1",
]


@FUZZ
@given(body=st.lists(st.sampled_from(_opcode_pieces), max_size=60), tail=st.binary(max_size=8))
def test_random_opcode_streams(body, tail):
    pkl = pickle.PROTO + b"\x02" + b"".join(body) + tail + pickle.STOP
    _check(_zip([("archive/data.pkl", pkl), ("archive/data/0", bytes(16))]))


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(1 << 70), 1 << 70) | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12)


@FUZZ
@given(data=st.data())
def test_safetensors_headers_with_replaced_values(data):
    (size,) = struct.unpack("<Q", SAFETENSORS[:8])
    header = json.loads(SAFETENSORS[8:8 + size])
    body = SAFETENSORS[8 + size:]
    for _ in range(data.draw(st.integers(1, 3))):
        name = data.draw(st.sampled_from(sorted(header)))
        if name == "__metadata__":
            key = data.draw(st.sampled_from(sorted(header[name])))
            header[name][key] = data.draw(st.text(max_size=40) | _json_values.map(json.dumps))
        else:
            field = data.draw(st.sampled_from(["dtype", "shape", "data_offsets"]))
            header[name][field] = data.draw(_json_values)
    encoded = json.dumps(header).encode()
    if data.draw(st.booleans()):
        body = body[:data.draw(st.integers(0, len(body)))]
    _check(struct.pack("<Q", len(encoded)) + encoded + body)


_scratch = tempfile.mkdtemp(prefix="ember-fuzz-")


@settings(FUZZ, max_examples=max(EXAMPLES // 4, 10))
@given(source=st.sampled_from(ARCHIVES + [SAFETENSORS, LEGACY]), flips=_flips, cut=st.none() | st.integers(1, 1 << 20))
def test_mutated_files_through_mmap(source, flips, cut):
    path = os.path.join(_scratch, "fuzzed.pt")
    with open(path, "wb") as f:
        f.write(_mutate(source, flips, cut, []) or b"x")
    try:
        ember.load(path, mmap=True)
    except pickle.UnpicklingError as err:
        assert str(err).startswith("Weights only load failed. "), err
    except RecursionError as err:
        raise AssertionError(f"RecursionError escaped: {err}") from err
    except RuntimeError as err:
        assert str(err).startswith(("[load] ", "Attempting to deserialize")), err
    except ValueError as err:
        assert str(err).startswith("[load] invalid checkpoint: "), err


def test_the_seeds_load():
    for source in [*ARCHIVES, LEGACY]:
        out = ember.load(io.BytesIO(source))
        assert out["state"]["v"].tolist() == [4.0, 5.0, 6.0, 7.0] and out["meta"][3] == [1, 2]
    assert ember.load(io.BytesIO(SAFETENSORS))["b"]["c"][1] == 1.5
