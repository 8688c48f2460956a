"""The one place that attaches Python-defined methods to ember.Tensor.

Tensor's native methods come from _C, generated from native/ops/declarations.py (an op declared
with inplace=True gets its `name_` method there). What Python adds is written in the family
module it belongs to, which lists it in a `tensor_methods()` table ({name: function or property})
and never assigns onto Tensor itself (tests/test_structure.py checks that). This module attaches
the tables, in the order below: a later table replaces an earlier entry of the same name, and a
family that only fills gaps (`not hasattr(Tensor, name)`) sees every table attached before it.

ember/__init__.py calls install_protocols() before importing any submodule, so operators,
indexing and conversions work from the start, and install() once every family is imported.
"""

from __future__ import annotations

from . import _C, _tensor, overrides


def _attach(methods: dict[str, object]) -> None:
    for name, value in methods.items():
        setattr(_C.Tensor, name, value)


def install_protocols() -> None:
    """Operators, indexing, conversions, to(), backward(), the new_* factories (ember/_tensor.py),
    and the __torch_function__ protocol's default handler and metaclass (ember/overrides.py)."""
    _C.Tensor.__class__ = overrides.TensorType
    _attach(overrides.tensor_methods())
    _attach(_tensor.tensor_methods())
    _C.Tensor.__module__ = "ember"


def install() -> None:
    """Every other family's methods. The families are imported here rather than at the top: ember
    imports this module first, before any of their module code may run (and use the protocols)."""
    from . import (
        _composites_py,
        _legacy,
        _names,
        _overloads,
        _python_tensor,
        _quantized,
        _spectral,
        _surface,
        _surface_extra,
        _surface_legacy,
        _surface_more,
        nested,
        serialization,
        sparse,
    )

    for family in (sparse, serialization, _spectral, _legacy, _overloads, _names, _composites_py, _surface,
                   _surface_more, _surface_legacy, _surface_extra, nested, _python_tensor, _quantized):
        _attach(family.tensor_methods())
