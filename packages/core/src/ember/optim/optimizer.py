"""Optimizer: torch.optim.Optimizer's contract. Parameter groups with per-group options filled
from the defaults, per-parameter state, zero_grad, and state_dict / load_state_dict in
PyTorch's layout (parameters replaced by their position across all groups)."""

from __future__ import annotations

import warnings
from collections import defaultdict
from itertools import chain

from .. import _C
from .. import autograd as _autograd

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    """The default of an option every parameter group must set (SGD's lr in older PyTorch)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


class Optimizer:
    def __init__(self, params, defaults: dict) -> None:
        self.defaults = defaults
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict] = []
        if isinstance(params, _C.Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {type(params).__module__}.{type(params).__name__}")
        groups = list(params)
        if len(groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def __repr__(self) -> str:
        lines = [self.__class__.__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines.extend(f"    {key}: {group[key]}" for key in sorted(group) if key != "params")
        lines.append(")")
        return "\n".join(lines)

    def add_param_group(self, param_group: dict) -> None:
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, _C.Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of "
                            "tensors in sets will change between runs. Please use a list instead.")
        else:
            params = list(params)
        for p in params:
            if not isinstance(p, _C.Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        group = {**param_group, "params": params}
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            group.setdefault(name, default)
        if len(params) != len({id(p) for p in params}):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error", stacklevel=3)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    with _autograd.no_grad():
                        p.grad = p.grad.detach()
                        p.grad.zero_()

    def step(self, closure=None):
        """Run `closure` (re-evaluating the loss with gradients) if given, then update each
        parameter that has a gradient; returns the closure's loss."""
        loss = None
        if closure is not None:
            with _autograd.enable_grad():
                loss = closure()
        with _autograd.no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    # Complex parameters update as pairs of reals (PyTorch's view_as_real treatment).
                    # State is kept only for parameters an algorithm gave some (plain SGD has none).
                    state = self.state.get(p, {})
                    self._update(_real(p), _real(p.grad), state, group)
                    if state:
                        self.state[p] = state
        return loss

    def _update(self, param, grad, state: dict, group: dict) -> None:
        raise NotImplementedError

    # ---- state dicts --------------------------------------------------------------------------

    def state_dict(self) -> dict:
        index: dict[int, int] = {}
        packed_groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            packed_groups.append(packed)
        packed_state = {(index[id(k)] if isinstance(k, _C.Tensor) else k): v for k, v in self.state.items()}
        return {"state": packed_state, "param_groups": packed_groups}

    def load_state_dict(self, state_dict: dict) -> None:
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(self.param_groups, saved_groups, strict=True)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        by_index = dict(zip(chain.from_iterable(s["params"] for s in saved_groups),
                            chain.from_iterable(g["params"] for g in self.param_groups), strict=True))
        state: defaultdict = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in by_index:
                param = by_index[key]
                state[param] = {k: _state_like(param, k, v) for k, v in value.items()}
            else:
                state[key] = value
        self.state = state
        self.param_groups = [{**saved, "params": group["params"]}
                             for group, saved in zip(self.param_groups, saved_groups, strict=True)]


def _real(t):
    return _C.view_as_real(t) if t.is_complex() else t


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


def _state_like(param, key: str, value):
    """A copy of a saved state tensor in the parameter's dtype (step counters stay as saved)."""
    if not isinstance(value, _C.Tensor):
        return value
    if key == "step" or not value.is_floating_point() and not value.is_complex():
        return value.clone()
    return value.to(_real(param).dtype).clone()
