r"""Collation, as torch.utils.data._utils.collate: ``default_collate`` merges a list of samples
into a batch, ``default_convert`` converts a sample (NumPy arrays to tensors) without batching.

``collate(batch, collate_fn_map=...)`` is the extensible core: ``collate_fn_map`` maps an element
type (or a tuple of types) to the function that collates a batch of such elements.
"""

from __future__ import annotations

import collections.abc
import contextlib
import copy
import re
from collections.abc import Callable

import ember

np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
)


def default_convert(data):
    r"""Convert each NumPy array element into a :class:`ember.Tensor`.

    Tensors are returned unchanged, NumPy arrays and NumPy scalars become tensors, mappings,
    namedtuples and sequences are converted recursively (a plain tuple becomes a list, as
    PyTorch), anything else (strings, Python numbers, ...) is returned as is. The DataLoader uses
    it as ``collate_fn`` when automatic batching is disabled (``batch_size=None``).

    Examples:
        >>> default_convert(np.array([0, 1]))
        tensor([0, 1])
        >>> default_convert({"a": np.array(1.5), "b": "x"})
        {'a': tensor(1.5000, dtype=ember.float64), 'b': 'x'}
    """
    elem_type = type(data)
    if isinstance(data, ember.Tensor):
        return data
    elif elem_type.__module__ == "numpy" and elem_type.__name__ != "str_" and elem_type.__name__ != "string_":
        # array of string classes and object
        if elem_type.__name__ == "ndarray" and np_str_obj_array_pattern.search(data.dtype.str) is not None:
            return data
        return ember.as_tensor(data)
    elif isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                # The mapping type may have extra properties, so we can't just
                # use `type(data)(...)` to create the new mapping.
                # Create a clone and update it if the mapping type is mutable.
                clone = copy.copy(data)
                clone.update({key: default_convert(data[key]) for key in data})
                return clone
            return elem_type({key: default_convert(data[key]) for key in data})
        except TypeError:
            # The mapping type may not support `copy()` / `update(mapping)`
            # or `__init__(iterable)`.
            return {key: default_convert(data[key]) for key in data}
    elif isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return elem_type(*(default_convert(d) for d in data))
    elif isinstance(data, tuple):
        return [default_convert(d) for d in data]  # Backwards compatibility.
    elif isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                # The sequence type may have extra properties, so we can't just
                # use `type(data)(...)` to create the new sequence.
                # Create a clone and update it if the sequence type is mutable.
                clone = copy.copy(data)  # type: ignore[arg-type]
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            # The sequence type may not support `copy()` / `__setitem__(index, item)`
            # or `__init__(iterable)` (e.g., `range`).
            return [default_convert(d) for d in data]
    else:
        return data


def collate(batch, *, collate_fn_map: dict[type | tuple[type, ...], Callable] | None = None):
    r"""General collate function that handles collection type of element within each batch.

    The function also opens function registry to deal with specific element types.
    ``default_collate_fn_map`` provides default collate functions for tensors, numpy arrays,
    numbers and strings.

    Args:
        batch: a single batch to be collated
        collate_fn_map: Optional dictionary mapping from element type to the corresponding
            collate function. If the element type isn't present in this dictionary, this function
            will go through each key of the dictionary in the insertion order to invoke the
            corresponding collate function if the element type is a subclass of the key.

    Each collate function requires a positional argument for batch and a keyword argument for
    the dictionary of collate functions as ``collate_fn_map``.
    """
    elem = batch[0]
    elem_type = type(elem)

    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)

        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)

    if isinstance(elem, collections.abc.Mapping):
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                # The mapping type may have extra properties, so we can't just
                # use `type(data)(...)` to create the new mapping.
                # Create a clone and update it if the mapping type is mutable.
                clone = copy.copy(elem)
                clone.update({key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem})
                return clone
            return elem_type({key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem})
        except TypeError:
            # The mapping type may not support `copy()` / `update(mapping)`
            # or `__init__(iterable)`.
            return {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem}
    elif isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch, strict=False)))
    elif isinstance(elem, collections.abc.Sequence):
        # check to make sure that the elements in batch have consistent size
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(elem) == elem_size for elem in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch, strict=False))  # It may be accessed twice, so we use a list.

        if isinstance(elem, tuple):
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]  # Backwards compatibility.
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                # The sequence type may have extra properties, so we can't just
                # use `type(data)(...)` to create the new sequence.
                # Create a clone and update it if the sequence type is mutable.
                clone = copy.copy(elem)  # type: ignore[arg-type]
                for i, samples in enumerate(transposed):
                    clone[i] = collate(samples, collate_fn_map=collate_fn_map)
                return clone
            return elem_type([collate(samples, collate_fn_map=collate_fn_map) for samples in transposed])
        except TypeError:
            # The sequence type may not support `copy()` / `__setitem__(index, item)`
            # or `__init__(iterable)` (e.g., `range`).
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]

    raise TypeError(default_collate_err_msg_format.format(elem_type))


def collate_tensor_fn(batch, *, collate_fn_map=None):
    # PyTorch stacks into a shared-memory tensor inside workers to save a copy on the way back;
    # ember tensors cross the result queue pickled, so a plain stack is all there is to do.
    return ember.stack(list(batch), 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    elem = batch[0]
    # array of string classes and object
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))

    return collate([ember.as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    # a list of NumPy scalars becomes a 1-D tensor of their dtype (as torch.as_tensor(batch))
    import numpy as np

    return ember.as_tensor(np.asarray(batch))


def collate_float_fn(batch, *, collate_fn_map=None):
    return ember.tensor(batch, dtype=ember.float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    return ember.tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map: dict[type | tuple[type, ...], Callable] = {ember.Tensor: collate_tensor_fn}
with contextlib.suppress(ImportError):
    import numpy as np

    # For both ndarray and memmap (subclass of ndarray)
    default_collate_fn_map[np.ndarray] = collate_numpy_array_fn
    # See scalars hierarchy: https://numpy.org/doc/stable/reference/arrays.scalars.html
    # Skip string scalars
    default_collate_fn_map[(np.bool_, np.number, np.object_)] = collate_numpy_scalar_fn
default_collate_fn_map[float] = collate_float_fn
default_collate_fn_map[int] = collate_int_fn
default_collate_fn_map[str] = collate_str_fn
default_collate_fn_map[bytes] = collate_str_fn


def default_collate(batch):
    r"""Take in a batch of data and put the elements within the batch into a tensor with an
    additional outer dimension of size batch size.

    The exact output type can be a :class:`ember.Tensor`, a `Sequence` of :class:`ember.Tensor`,
    a Collection of :class:`ember.Tensor`, or left unchanged, depending on the input type. This
    is used as the default function for collation when `batch_size` or `batch_sampler` is
    defined in :class:`~ember.utils.data.DataLoader`.

    Here is the general input type (based on the type of the element within the batch) to output
    type mapping:

        * :class:`ember.Tensor` -> :class:`ember.Tensor` (with an added outer dimension batch size)
        * NumPy Arrays -> :class:`ember.Tensor`
        * `float` -> :class:`ember.Tensor` (float64)
        * `int` -> :class:`ember.Tensor` (int64; ``bool`` samples give a bool tensor)
        * `str` -> `str` (unchanged)
        * `bytes` -> `bytes` (unchanged)
        * `Mapping[K, V_i]` -> `Mapping[K, default_collate([V_1, V_2, ...])]`
        * `NamedTuple[V1_i, V2_i, ...]` -> `NamedTuple[default_collate([V1_1, V1_2, ...]),
          default_collate([V2_1, V2_2, ...]), ...]`
        * `Sequence[V1_i, V2_i, ...]` -> `Sequence[default_collate([V1_1, V1_2, ...]),
          default_collate([V2_1, V2_2, ...]), ...]` (a tuple gives a list, as PyTorch)

    Anything else raises ``TypeError("default_collate: batch must contain tensors, numpy arrays,
    numbers, dicts or lists; found <type>")``; sequences of unequal lengths raise
    ``RuntimeError("each element in list of batch should be of equal size")``.

    Examples:
        >>> default_collate([0, 1, 2, 3])
        tensor([0, 1, 2, 3])
        >>> default_collate(["a", "b", "c"])
        ['a', 'b', 'c']
        >>> default_collate([{"A": 0, "B": 1}, {"A": 100, "B": 100}])
        {'A': tensor([  0, 100]), 'B': tensor([  1, 100])}
        >>> default_collate([(0, 1), (2, 3)])
        [tensor([0, 2]), tensor([1, 3])]
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)
