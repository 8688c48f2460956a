"""The bits dtypes (bits8, bits16, bits1x8, bits2x4, bits4x2): opaque bit patterns that are
stored, viewed, zero-filled and copied to the same dtype, as in PyTorch, and nothing else."""

from __future__ import annotations

import io

import numpy as np
import pytest

import ember

BITS = [ember.bits8, ember.bits16, ember.bits1x8, ember.bits2x4, ember.bits4x2]


def same_size_int(d):
    return ember.int16 if d.itemsize == 2 else ember.uint8


@pytest.mark.parametrize("dtype", BITS, ids=repr)
def test_views_copies_and_zeros_keep_every_bit(dtype):
    assert dtype.itemsize == (2 if dtype == ember.bits16 else 1)
    assert not dtype.is_floating_point and not dtype.is_complex
    with pytest.raises(RuntimeError, match="Bits types are undefined"):
        _ = dtype.is_signed
    raw = np.arange(24, dtype=np.uint8 if dtype.itemsize == 1 else np.int16).reshape(4, 6) * 7
    x = ember.from_numpy(raw).view(dtype)
    assert x.dtype == dtype and x.shape == (4, 6)
    back = lambda t: t.view(same_size_int(dtype)).numpy()  # noqa: E731
    np.testing.assert_array_equal(back(x.clone()), raw)
    np.testing.assert_array_equal(back(x.t().contiguous()), raw.T)  # a strided same-dtype copy
    np.testing.assert_array_equal(back(ember.cat([x, x])), np.concatenate([raw, raw]))
    y = ember.empty(4, 6, dtype=dtype)
    y.copy_(x)
    np.testing.assert_array_equal(back(y), raw)
    np.testing.assert_array_equal(back(ember.zeros(3, dtype=dtype)), np.zeros(3))
    np.testing.assert_array_equal(back(x[1:3, ::2]), raw[1:3, ::2])
    assert x[0, 0:0].numel() == 0 and back(x[2, 3]) == raw[2, 3]
    buf = io.BytesIO()
    ember.save(x, buf)
    buf.seek(0)
    loaded = ember.load(buf)
    assert loaded.dtype == dtype
    np.testing.assert_array_equal(back(loaded), raw)


@pytest.mark.parametrize("dtype", BITS, ids=repr)
def test_everything_else_raises_a_clear_error(dtype):
    x = ember.zeros(4, dtype=dtype)
    with pytest.raises(NotImplementedError, match=f"copy_. not implemented for {dtype.__str__()[6:]}"):
        x.to(ember.float32)
    with pytest.raises(NotImplementedError, match="copy_. not implemented for"):
        ember.zeros(4, dtype=ember.uint8 if dtype.itemsize == 1 else ember.int16).copy_(x)
    with pytest.raises(NotImplementedError, match="with a value other than zero"):
        ember.ones(2, dtype=dtype)
    with pytest.raises(TypeError, match="Promotion for bits types is not supported"):
        ember.promote_types(dtype, ember.uint8)
    with pytest.raises(NotImplementedError, match="view it as an integer dtype"):
        repr(x)
    with pytest.raises(NotImplementedError, match="view it as an integer dtype"):
        x[0].item()
    with pytest.raises((NotImplementedError, TypeError)):
        x + x
    with pytest.raises((NotImplementedError, TypeError)):
        ember.eq(x, x)
    with pytest.raises(TypeError):
        ember.iinfo(dtype)
