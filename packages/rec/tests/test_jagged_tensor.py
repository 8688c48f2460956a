"""JaggedTensor, KeyedJaggedTensor and KeyedTensor against plain-Python references: a batch is a
dict key -> list of rows, a row a list of values (and of weights)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from emberrec import JaggedTensor, KeyedJaggedTensor, KeyedTensor

SETTINGS = settings(max_examples=60, deadline=None)


@st.composite
def batches(draw, variable: bool = False):
    """(keys, {key: rows}, {key: weight rows} or None, per-key batch sizes)."""
    keys = draw(st.lists(st.sampled_from([f"f{i}" for i in range(6)]), min_size=0, max_size=4, unique=True))
    stride = draw(st.integers(0, 4))
    strides = {k: (draw(st.integers(0, 4)) if variable else stride) for k in keys}
    rows = {k: [draw(st.lists(st.integers(0, 99), max_size=3)) for _ in range(strides[k])] for k in keys}
    weighted = draw(st.booleans())
    weights = {k: [[v / 8 + 0.5 for v in row] for row in rs] for k, rs in rows.items()} if weighted else None
    return keys, rows, weights, strides


def build(keys, rows, weights, strides, variable=False, use_offsets=False, lengths_dtype=ember.int64):
    flat = [v for k in keys for row in rows[k] for v in row]
    lengths = [len(row) for k in keys for row in rows[k]]
    values = ember.tensor(flat, dtype=ember.int64)
    w = ember.tensor([x for k in keys for row in weights[k] for x in row], dtype=ember.float64) if weights is not None else None
    if use_offsets and not variable:
        offsets = ember.tensor(np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]), dtype=lengths_dtype)
        return KeyedJaggedTensor.from_offsets_sync(keys, values, offsets, w, stride=strides[keys[0]] if keys else 0)
    spkpr = [[strides[k]] for k in keys] if variable else None
    stride = None if variable else (strides[keys[0]] if keys else 0)
    return KeyedJaggedTensor.from_lengths_sync(keys, values, ember.tensor(lengths, dtype=lengths_dtype), w,
                                               stride=stride, stride_per_key_per_rank=spkpr)


def as_reference(kjt: KeyedJaggedTensor):
    rows = {k: [r.tolist() for r in jt.to_dense()] for k, jt in kjt.to_dict().items()}
    weights = None
    if kjt.weights_or_none() is not None:
        weights = {k: [r.tolist() for r in jt.to_dense_weights()] for k, jt in kjt.to_dict().items()}
    return list(kjt.keys()), rows, weights


@SETTINGS
@given(batches(), st.booleans(), st.sampled_from([ember.int32, ember.int64]))
def test_kjt_accessors_match_the_reference(batch, use_offsets, lengths_dtype):
    keys, rows, weights, strides = batch
    kjt = build(keys, rows, weights, strides, use_offsets=use_offsets, lengths_dtype=lengths_dtype)
    assert as_reference(kjt) == (keys, rows, weights)
    per_key = [sum(len(r) for r in rows[k]) for k in keys]
    assert kjt.length_per_key() == per_key
    assert kjt.offset_per_key() == list(np.concatenate([[0], np.cumsum(per_key)]).astype(int))
    assert kjt.stride() == (strides[keys[0]] if keys else 0)
    lengths = [len(r) for k in keys for r in rows[k]]
    assert kjt.lengths().tolist() == lengths
    assert kjt.offsets().tolist() == list(np.concatenate([[0], np.cumsum(lengths)]).astype(int))
    assert kjt.lengths().dtype == lengths_dtype and kjt.offsets().dtype == lengths_dtype


@SETTINGS
@given(batches(), st.data())
def test_permute_matches_the_reference(batch, data):
    keys, rows, weights, strides = batch
    kjt = build(keys, rows, weights, strides)
    order = data.draw(st.lists(st.integers(0, len(keys) - 1), max_size=6)) if keys else []
    want_keys = [keys[i] for i in order]
    if len(set(want_keys)) != len(want_keys):
        with pytest.raises(ValueError, match="repeats key"):
            kjt.permute(order)
        return
    permuted = kjt.permute(order)
    assert as_reference(permuted) == (
        want_keys, {k: rows[k] for k in want_keys}, None if weights is None else {k: weights[k] for k in want_keys})
    assert permuted.stride() == kjt.stride()


@SETTINGS
@given(batches(), st.data())
def test_split_and_concat_round_trip(batch, data):
    keys, rows, weights, strides = batch
    kjt = build(keys, rows, weights, strides)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(keys)), max_size=3)))
    segments = [b - a for a, b in zip([0, *cuts], [*cuts, len(keys)], strict=True)]
    parts = kjt.split(segments)
    assert [p.keys() for p in parts] == [keys[a:b] for a, b in zip([0, *cuts], [*cuts, len(keys)], strict=True)]
    for part in parts:
        assert as_reference(part)[1] == {k: rows[k] for k in part.keys()}
        assert part.stride() == kjt.stride()
    assert as_reference(KeyedJaggedTensor.concat(parts)) == (keys, rows, weights)


@SETTINGS
@given(batches(variable=True), st.data())
def test_variable_batch_per_key(batch, data):
    keys, rows, weights, strides = batch
    kjt = build(keys, rows, weights, strides, variable=True)
    assert kjt.variable_stride_per_key()
    assert kjt.stride_per_key() == [strides[k] for k in keys]
    assert kjt.stride() == max(strides.values(), default=0)
    assert as_reference(kjt) == (keys, rows, weights)
    if keys:
        order = data.draw(st.permutations(range(len(keys))))
        permuted = kjt.permute(order)
        assert as_reference(permuted)[1] == {keys[i]: rows[keys[i]] for i in order}
        assert permuted.stride_per_key() == [strides[keys[i]] for i in order]
        first, rest = kjt.split([1, len(keys) - 1])
        assert first.stride_per_key() == [strides[keys[0]]]
        assert as_reference(KeyedJaggedTensor.concat([first, rest])) == (keys, rows, weights)


def test_the_layout_of_the_docstring():
    kjt = KeyedJaggedTensor.from_lengths_sync(
        ["f0", "f1"], ember.tensor([10, 11, 12, 20, 21, 22, 23, 24]), ember.tensor([2, 0, 1, 1, 1, 3]))
    assert kjt.offsets().tolist() == [0, 2, 2, 3, 4, 5, 8]
    assert kjt.offset_per_key() == [0, 3, 8]
    assert kjt.stride() == 3
    assert kjt["f1"].lengths().tolist() == [1, 1, 3]
    assert kjt["f1"].values().tolist() == [20, 21, 22, 23, 24]


def test_from_jt_dict_and_to_dict_round_trip():
    jts = {"a": JaggedTensor(ember.tensor([1, 2, 3]), lengths=ember.tensor([2, 1])),
           "b": JaggedTensor(ember.tensor([4]), lengths=ember.tensor([0, 1]))}
    kjt = KeyedJaggedTensor.from_jt_dict(jts)
    assert kjt.keys() == ["a", "b"] and kjt.stride() == 2
    assert {k: v.values().tolist() for k, v in kjt.to_dict().items()} == {"a": [1, 2, 3], "b": [4]}
    with pytest.raises(ValueError, match="same number of rows"):
        KeyedJaggedTensor.from_jt_dict({"a": jts["a"], "c": JaggedTensor(ember.tensor([1]), lengths=ember.tensor([1]))})


def test_empty_kjt():
    kjt = KeyedJaggedTensor.empty()
    assert kjt.keys() == [] and kjt.values().numel() == 0 and kjt.stride() == 0
    assert kjt.length_per_key() == [] and kjt.offsets().tolist() == [0]
    assert KeyedJaggedTensor.empty(is_weighted=True).weights().numel() == 0


# --- JaggedTensor ----------------------------------------------------------------------------


@SETTINGS
@given(st.lists(st.lists(st.floats(-4, 4, width=32), max_size=4), min_size=1, max_size=5),
       st.one_of(st.none(), st.integers(0, 5)), st.floats(-2, 2, width=32))
def test_to_padded_dense_truncates_and_pads(rows, desired, pad):
    jt = JaggedTensor.from_dense([ember.tensor(r, dtype=ember.float64) for r in rows])
    width = max(len(r) for r in rows) if desired is None else desired
    want = [[*r[:width], *[pad] * (width - len(r[:width]))] for r in rows]
    got = jt.to_padded_dense(desired, pad)
    assert got.shape == (len(rows), width)
    np.testing.assert_allclose(got.numpy(), np.array(want, dtype=np.float64).reshape(len(rows), width))


def test_to_padded_dense_of_rows_with_a_dimension_and_weights():
    values = ember.arange(12, dtype=ember.float32).view(6, 2)
    jt = JaggedTensor(values, weights=ember.arange(6, dtype=ember.float32), offsets=ember.tensor([0, 1, 1, 6]))
    dense = jt.to_padded_dense(2)
    assert dense.shape == (3, 2, 2)
    assert dense[0].tolist() == [[0, 1], [0, 0]] and dense[1].tolist() == [[0, 0], [0, 0]]
    assert dense[2].tolist() == [[2, 3], [4, 5]]
    assert jt.to_padded_dense_weights(3, -1.0).tolist() == [[0, -1, -1], [-1, -1, -1], [1, 2, 3]]
    assert jt.lengths().tolist() == [1, 0, 5]


def test_from_dense_lengths():
    values = ember.tensor([[1, 2, 3], [4, 5, 6]])
    jt = JaggedTensor.from_dense_lengths(values, ember.tensor([1, 3]))
    assert [r.tolist() for r in jt.to_dense()] == [[1], [4, 5, 6]]
    with pytest.raises(ValueError, match=r"lengths must lie in \[0, 3\]"):
        JaggedTensor.from_dense_lengths(values, ember.tensor([1, 4]))


# --- KeyedTensor -----------------------------------------------------------------------------


def test_keyed_tensor_lookup_and_regroup():
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal((3, d)) for d in (2, 3, 1))
    kt1 = KeyedTensor.from_tensor_list(["a", "b"], [ember.tensor(a), ember.tensor(b)])
    kt2 = KeyedTensor(["c"], [1], ember.tensor(c))
    assert kt1.offset_per_key() == [0, 2, 5] and kt1.length_per_key() == [2, 3]
    np.testing.assert_array_equal(kt1["b"].numpy(), b)
    np.testing.assert_array_equal(kt1.to_dict()["a"].numpy(), a)
    groups = [["c", "a"], ["b"]]
    out = KeyedTensor.regroup([kt1, kt2], groups)
    np.testing.assert_array_equal(out[0].numpy(), np.concatenate([c, a], 1))
    np.testing.assert_array_equal(out[1].numpy(), b)
    as_dict = KeyedTensor.regroup_as_dict([kt1, kt2], groups, ["x", "y"])
    np.testing.assert_array_equal(as_dict["x"].numpy(), np.concatenate([c, a], 1))


def test_regroup_passes_gradients():
    x = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
    kt = KeyedTensor(["a", "b"], [1, 2], x)
    (out,) = KeyedTensor.regroup([kt], [["b", "a"]])
    (out * ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64)).sum().backward()
    assert x.grad.tolist() == [[3.0, 1.0, 2.0]] * 2


# --- bad input -------------------------------------------------------------------------------

V8 = ember.arange(8)


@pytest.mark.parametrize("make, error, message", [
    (lambda: KeyedJaggedTensor(["a", "a"], V8, lengths=ember.tensor([4, 4])), ValueError, "key 'a' appears twice"),
    (lambda: KeyedJaggedTensor(["a", "b"], V8, lengths=ember.tensor([4, 5, -1, 0])), ValueError,
     r"negative entry -1 at position 2 \(key 'b'\)"),
    (lambda: KeyedJaggedTensor(["a", "b"], V8, lengths=ember.tensor([4, 5])), ValueError,
     "lengths sum to 9 but values has 8"),
    (lambda: KeyedJaggedTensor(["a", "b"], V8, offsets=ember.tensor([0, 6, 5, 8, 8])), ValueError,
     r"offsets decrease at position 2 \(key 'a'\): 6 then 5"),
    (lambda: KeyedJaggedTensor(["a"], V8, offsets=ember.tensor([1, 8])), ValueError, "offsets must start at 0"),
    (lambda: KeyedJaggedTensor(["a"], V8, offsets=ember.tensor([0, 7])), ValueError, "offsets end at 7"),
    (lambda: KeyedJaggedTensor(["a", "b"], V8, lengths=ember.tensor([8, 0, 0])), ValueError,
     "3 lengths do not split evenly over 2 keys"),
    (lambda: KeyedJaggedTensor(["a"], V8, weights=ember.ones(7), lengths=ember.tensor([8])), ValueError,
     "weights has 7 entries but values has 8"),
    (lambda: KeyedJaggedTensor(["a"], V8, lengths=ember.tensor([8.0])), TypeError, "lengths must be int32 or int64"),
    (lambda: KeyedJaggedTensor(["a"], V8), ValueError, "give lengths or offsets"),
    (lambda: KeyedJaggedTensor(["a", "b"], V8, lengths=ember.tensor([4, 4]), stride_per_key_per_rank=[[2], [1]]),
     ValueError, r"batch sizes \[2, 1\] need 3 lengths, got 2"),
    (lambda: KeyedJaggedTensor([1], V8, lengths=ember.tensor([8])), TypeError, "keys must be strings"),
    (lambda: JaggedTensor(V8, lengths=ember.tensor([3, 4])), ValueError, "lengths sum to 7"),
    (lambda: JaggedTensor(V8, lengths=ember.tensor([8]), offsets=ember.tensor([0, 7, 8])), ValueError,
     "lengths and offsets disagree"),
    (lambda: KeyedTensor(["a", "b"], [1, 1], ember.ones(2, 3)), ValueError, "length_per_key sums to 2"),
    (lambda: KeyedTensor(["a", "a"], [1, 2], ember.ones(2, 3)), ValueError, "keys repeat a name"),
])
def test_invalid_batches_are_refused_naming_the_fault(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_bad_requests_on_a_valid_kjt():
    kjt = KeyedJaggedTensor.from_lengths_sync(["a", "b"], V8, ember.tensor([4, 4]))
    with pytest.raises(KeyError, match="key 'z' is not one of"):
        kjt["z"]
    with pytest.raises(IndexError, match="permute index 2 out of range for 2 keys"):
        kjt.permute([2])
    with pytest.raises(ValueError, match=r"segments \[1\] must be non-negative and sum to the 2 keys"):
        kjt.split([1])
    with pytest.raises(ValueError, match="cannot concat KeyedJaggedTensors with batch sizes"):
        KeyedJaggedTensor.concat([kjt, KeyedJaggedTensor.from_lengths_sync(["c"], V8, ember.tensor([4, 4]))])
    with pytest.raises(KeyError, match=r"keys \['z'\] are in none"):
        KeyedTensor.regroup([KeyedTensor(["a"], [1], ember.ones(2, 1))], [["z"]])
