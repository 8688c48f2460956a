"""ember.return_types (torch.return_types): the named-tuple classes ops return, such as the
(values, indices) of max, sort and topk or linalg's (eigenvalues, eigenvectors), one module to
import them from as in PyTorch. The classes of ember.linalg register here when it loads; those of
the rarer ops when first returned (_composites_py._return_type)."""

from __future__ import annotations

from collections import namedtuple


def _register(cls) -> type:
    """Makes `cls` (a named tuple class) ember.return_types.<its name>."""
    cls.__module__ = __name__
    globals()[cls.__name__] = cls
    return cls


for _name in ("sort", "topk", "kthvalue", "median", "nanmedian", "mode", "cummax", "cummin", "max", "min"):
    _register(namedtuple(_name, ("values", "indices")))
_register(namedtuple("aminmax", ("min", "max")))
_register(namedtuple("var_mean", ("var", "mean")))
_register(namedtuple("std_mean", ("std", "mean")))
