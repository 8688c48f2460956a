"""Mutated files never crash the datasets' parsers: each either parses or raises its documented
exception (ValueError for the MAT, .flo, PFM and PNM readers, RuntimeError for IDX)."""

from __future__ import annotations

import importlib.util
import pathlib
import pickle
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from embervision.datasets import _matlab
from embervision.datasets._optical_flow import _read_flo
from embervision.datasets.cifar import _load_pickle
from embervision.datasets.folder import _read_pnm
from embervision.datasets.mnist import _parse_idx
from embervision.datasets.utils import _read_pfm

_HERE = pathlib.Path(__file__).parent


def _matlab_writer():
    spec = importlib.util.spec_from_file_location("mat_writer", _HERE / "test_datasets_matlab.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_W = _matlab_writer()
_MAT = _W.mat_bytes({"x": np.arange(6, dtype=np.uint8).reshape(2, 3), "s": "abc",
                     "c": ["a", np.array([[1.0]])], "st": [_W.Struct(f="n", g=np.array([[2.0]]))]})
_MAT_Z = _W.mat_bytes({"x": np.arange(6, dtype=np.uint8).reshape(2, 3), "c": ["a"]}, compress=True)
_IDX = b"\0\0\x08\x03" + struct.pack(">III", 2, 2, 2) + bytes(range(8))
_FLO = b"PIEH" + struct.pack("<ii", 2, 1) + np.arange(4, dtype="<f4").tobytes()
_PFM = b"Pf\n2 1\n-1.0\n" + np.arange(2, dtype="<f4").tobytes()
_PNM = b"P6\n1 2\n255\n" + bytes(range(6))


@st.composite
def mutated(draw, base):
    data = bytearray(base)
    for _ in range(draw(st.integers(0, 4))):
        if data and draw(st.booleans()):
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        elif data:
            cut = draw(st.integers(0, len(data)))
            data = data[:cut] + draw(st.binary(max_size=8)) + data[cut + draw(st.integers(0, 8)):]
    return bytes(data)


_FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@_FAST
@given(st.one_of(mutated(_MAT), mutated(_MAT_Z)))
def test_loadmat_mutations(data):
    try:
        _matlab.loadmat(data)
    except ValueError:
        pass


@_FAST
@given(mutated(_IDX))
def test_idx_mutations(data):
    try:
        _parse_idx(data, "f")
    except RuntimeError:
        pass


@_FAST
@given(st.sampled_from(["flo", "pfm", "pnm"]).flatmap(lambda k: st.tuples(st.just(k), mutated({"flo": _FLO, "pfm": _PFM, "pnm": _PNM}[k]))))
def test_flow_and_pnm_mutations(tmp_path, kind_data):
    kind, data = kind_data
    path = tmp_path / f"f.{kind}"
    path.write_bytes(data)
    try:
        {"flo": _read_flo, "pfm": _read_pfm, "pnm": _read_pnm}[kind](str(path))
    except ValueError:
        pass


def test_lying_mat_headers_do_not_allocate():
    # a cell array claiming 2**31 x 2**31 elements in a few bytes: refused before any allocation
    flags = _W.numeric(np.array([1, 0], np.uint32)) + _W.numeric(np.array([2**31 - 1, 2**31 - 1], np.int32))
    body = _W.element(14, flags + _W.element(1, b"c"))
    with pytest.raises(ValueError, match="cells cannot fit"):
        _matlab.loadmat(_W.mat_bytes({}) + body)


_PICKLES = [pickle.dumps({"data": np.arange(12, dtype=np.uint8).reshape(2, 6), "labels": [1, 2]}, protocol=p)
            for p in (0, 2, 5)]


@_FAST
@given(st.sampled_from(_PICKLES).flatmap(mutated))
def test_cifar_pickle_mutations(tmp_path, data):
    path = tmp_path / "batch"
    path.write_bytes(data)
    try:
        _load_pickle(str(path))
    except RuntimeError as error:
        assert "not a CIFAR batch this loader can read safely" in str(error)
