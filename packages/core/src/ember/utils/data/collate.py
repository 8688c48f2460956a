"""Turning a list of samples into a batch (default_collate) and NumPy leaves into tensors
(default_convert), following the structure of the samples."""

from __future__ import annotations

import collections.abc
import re

import numpy as np

import ember

# NumPy arrays of strings, bytes or Python objects have no tensor form and stay as they are.
_NO_TENSOR_KINDS = re.compile("[SaUO]")


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _rebuild(template, values):
    """A container of template's type holding `values` (a list), or a plain list when that type
    cannot be built from one."""
    if _is_namedtuple(template):
        return type(template)(*values)
    if isinstance(template, (list, tuple)) and type(template) in (list, tuple):
        return list(values) if isinstance(template, list) else values
    try:
        return type(template)(values)
    except TypeError:
        return list(values)


def default_convert(data):
    """NumPy arrays and scalars become tensors, inside any dicts, named tuples and sequences."""
    if isinstance(data, ember.Tensor):
        return data
    if isinstance(data, np.ndarray):
        return data if _NO_TENSOR_KINDS.search(data.dtype.str) else ember.as_tensor(data)
    if isinstance(data, np.generic):
        return data if _NO_TENSOR_KINDS.search(data.dtype.str) else ember.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        converted = {key: default_convert(value) for key, value in data.items()}
        try:
            return type(data)(converted) if type(data) is not dict else converted
        except TypeError:
            return converted
    if _is_namedtuple(data):
        return type(data)(*(default_convert(x) for x in data))
    if isinstance(data, tuple):
        return [default_convert(x) for x in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild(data, [default_convert(x) for x in data])
    return data


def _type_error(elem) -> TypeError:
    return TypeError("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
                     f"found {type(elem)}")


def default_collate(batch):
    """Stacks a list of samples into a batch along a new first dim: tensors and NumPy arrays are
    stacked, Python numbers become a 1-D tensor (float64 for floats, int64 for ints, bool for
    bools), strings stay a list, and dicts / named tuples / sequences are collated field by field
    (sequences must all have the same length)."""
    if not isinstance(batch, collections.abc.Sequence) or isinstance(batch, (str, bytes)):
        raise TypeError(f"default_collate: expected a list of samples, got {type(batch)}")
    if len(batch) == 0:
        raise ValueError("default_collate: the batch is empty")
    elem = batch[0]
    if isinstance(elem, ember.Tensor):
        return ember.stack(list(batch), 0)
    if isinstance(elem, (np.ndarray, np.generic)) and not isinstance(elem, (np.str_, np.bytes_)):
        if _NO_TENSOR_KINDS.search(elem.dtype.str):
            raise _type_error(elem)
        return ember.stack([ember.as_tensor(np.asarray(x)) for x in batch], 0)
    if isinstance(elem, bool):
        return ember.tensor(list(batch), dtype=ember.bool)
    if isinstance(elem, int):
        return ember.tensor(list(batch), dtype=ember.int64)
    if isinstance(elem, float):
        return ember.tensor(list(batch), dtype=ember.float64)
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, collections.abc.Mapping):
        collated = {key: default_collate([sample[key] for sample in batch]) for key in elem}
        try:
            return type(elem)(collated) if type(elem) is not dict else collated
        except TypeError:
            return collated
    if _is_namedtuple(elem):
        return type(elem)(*(default_collate(list(field)) for field in zip(*batch, strict=True)))
    if isinstance(elem, collections.abc.Sequence):
        if any(len(sample) != len(elem) for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        fields = [default_collate(list(field)) for field in zip(*batch, strict=True)]
        return fields if isinstance(elem, tuple) else _rebuild(elem, fields)
    raise _type_error(elem)
