"""ember.special: special functions under torch.special's names.

The modified Bessel functions of the first kind, orders 0 and 1, plain and exponentially scaled
(i0e(x) = exp(-|x|) i0(x), finite where i0 overflows). Each is an op declared in
native/ops/declarations.py, with its derivative.
"""

from .. import _C

i0 = _C.i0
i0e = _C.special_i0e
i1 = _C.special_i1
i1e = _C.special_i1e

__all__ = ["i0", "i0e", "i1", "i1e"]
