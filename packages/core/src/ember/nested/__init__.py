"""ember.nested: PyTorch's nested tensors (torch.nested), strided and jagged (layout=ember.jagged), on CPU.

See ember/nested/_tensor.py (strided) and _jagged.py (jagged) for what each supports and where Ember
differs from PyTorch.
"""

from __future__ import annotations

from . import functional
from ._jagged import JaggedNestedTensor, NestedInt, nested_tensor_from_jagged
from ._tensor import (
    NestedTensor,
    as_nested_tensor,
    masked_select,
    narrow,
    nested_aware,  # noqa: F401 - Ember's own helper, outside __all__ (see below)
    nested_tensor,
    to_padded_tensor,
)

# (nested_aware is Ember's own: it extends a namespace function to take a NestedTensor; ember's
# namespace functions are native and are not wrapped, so ember.relu(nt) raises: use nt.relu().)
__all__ = ["JaggedNestedTensor", "NestedInt", "NestedTensor", "as_nested_tensor", "functional", "masked_select",
           "narrow", "nested_tensor", "nested_tensor_from_jagged", "to_padded_tensor"]


def tensor_methods() -> dict:
    """ember.Tensor.is_nested: False for every (dense or sparse) ember.Tensor."""
    return {"is_nested": property(lambda self: False, doc="False: an ember.Tensor is never nested")}
