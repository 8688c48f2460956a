"""Containers (torch.nn.Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict)."""

from __future__ import annotations

import operator
from collections import OrderedDict

from ..parameter import Parameter
from .module import Module, _addindent

__all__ = ["Container", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


def _index(idx: int, length: int, what: str) -> int:
    idx = operator.index(idx)
    if not -length <= idx < length:
        raise IndexError(f"index {idx} is out of range")
    return idx % length


def _parameter_lines(module) -> str:
    """ParameterList / ParameterDict entries, as PyTorch prints them."""
    return "\n".join(f"  ({name}): Parameter containing: [{p.dtype} of size {'x'.join(map(str, p.shape))}]"
                     for name, p in module._parameters.items())


class Container(Module):
    """The pre-Sequential container (torch.nn.Container, deprecated there): Container(a=m1, b=m2)
    registers each keyword module as a child."""

    def __init__(self, **kwargs) -> None:
        super().__init__()
        import warnings

        warnings.warn("nn.Container is deprecated. All of it's functionality is now implemented in nn.Module. "
                      "Subclass that instead.", FutureWarning, stacklevel=2)
        for key, value in kwargs.items():
            self.add_module(key, value)


def _delete_renumbering(modules, idx, kind: str) -> None:
    """Deletes the module(s) at idx (an index or a slice), then numbers the rest 0.. again, as PyTorch does."""
    keys = list(modules)
    for key in (keys[idx] if isinstance(idx, slice) else [keys[_index(idx, len(keys), kind)]]):
        del modules[key]
    values = list(modules.values())
    modules.clear()
    for i, module in enumerate(values):
        modules[str(i)] = module


def _pop(container, key):
    value = container[key]
    del container[key]
    return value


class Sequential(Module):
    """Calls its modules in order, each on the previous one's output."""

    def __init__(self, *args) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[_index(idx, len(self), "Sequential")]

    def __setitem__(self, idx, module) -> None:
        key = list(self._modules)[_index(idx, len(self), "Sequential")]
        setattr(self, key, module)

    def __delitem__(self, idx) -> None:
        _delete_renumbering(self._modules, idx, "Sequential")

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __add__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        return Sequential(*self, *other)

    def pop(self, key):
        """Removes and returns the module at index `key` (or the Sequential of a slice)."""
        return _pop(self, key)

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module):
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        index = index % (n + 1) if index < 0 else index
        values = list(self._modules.values())
        values.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(values):
            self._modules[str(i)] = m
        return self

    def extend(self, sequential):
        for module in sequential:
            self.append(module)
        return self

    def forward(self, input):
        for module in self:
            input = module(input)
        return input


class ModuleList(Module):
    def __init__(self, modules=None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(_index(idx, len(self), "ModuleList"))]

    def __setitem__(self, idx, module) -> None:
        setattr(self, str(_index(idx, len(self), "ModuleList")), module)

    def __delitem__(self, idx) -> None:
        _delete_renumbering(self._modules, idx, "ModuleList")

    def pop(self, key):
        """Removes and returns the module at index `key` (or the ModuleList of a slice)."""
        return _pop(self, key)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module) -> None:
        values = list(self._modules.values())
        values.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(values):
            self._modules[str(i)] = m

    def __repr__(self) -> str:
        """PyTorch's form: a run of consecutive entries with the same repr prints once, as
        "(first-last): count x <repr>"."""
        runs = []  # [first index, last index, repr]
        for i, m in enumerate(self._modules.values()):
            text = repr(m)
            if runs and runs[-1][2] == text:
                runs[-1][1] = i
            else:
                runs.append([i, i, text])
        lines = [_addindent(f"({first}): {text}" if first == last else
                            f"({first}-{last}): {last - first + 1} x {text}", 2) for first, last, text in runs]
        return "ModuleList(" + ("\n  " + "\n  ".join(lines) + "\n" if lines else "") + ")"


class ModuleDict(Module):
    def __init__(self, modules=None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str):
        return self._modules[key]

    def __setitem__(self, key: str, module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key) -> bool:
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def pop(self, key: str):
        return self._modules.pop(key)

    def clear(self) -> None:
        self._modules.clear()

    def update(self, modules) -> None:
        for key, module in (modules.items() if hasattr(modules, "items") else modules):
            self[key] = module


class ParameterList(Module):
    def __init__(self, values=None) -> None:
        super().__init__()
        for value in values or ():
            self.append(value)

    def __getitem__(self, idx):
        return self._parameters[str(_index(idx, len(self), "ParameterList"))]

    def __setitem__(self, idx, param) -> None:
        self.register_parameter(str(_index(idx, len(self), "ParameterList")),
                                param if isinstance(param, Parameter) else Parameter(param))

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def append(self, value):
        self.register_parameter(str(len(self)), value if isinstance(value, Parameter) else Parameter(value))
        return self

    def extend(self, values):
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return _parameter_lines(self)


class ParameterDict(Module):
    def __init__(self, parameters=None) -> None:
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str):
        return self._parameters[key]

    def __setitem__(self, key: str, value) -> None:
        self.register_parameter(key, value if isinstance(value, Parameter) else Parameter(value))

    def __delitem__(self, key: str) -> None:
        del self._parameters[key]

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def __contains__(self, key) -> bool:
        return key in self._parameters

    def keys(self):
        return self._parameters.keys()

    def items(self):
        return self._parameters.items()

    def values(self):
        return self._parameters.values()

    def update(self, parameters) -> None:
        for key, value in (parameters.items() if hasattr(parameters, "items") else parameters):
            self[key] = value

    def extra_repr(self) -> str:
        return _parameter_lines(self)
