"""KeyedOptimizer (TorchRec's ``torchrec.optim.keyed.KeyedOptimizer``): an optimizer whose
parameters and state are keyed by parameter name, so its state_dict survives a change of model
layout (a table moved between groups or shards keeps its key)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ember


class KeyedOptimizer:
    """`params` maps names to tensors, `state` maps each tensor to its named state tensors, and
    `param_groups` are dicts of hyperparameters whose "params" list tensors. step() is the
    subclass's update (a fused optimizer has already updated its tables in the backward)."""

    def __init__(self, params: Mapping[str, ember.Tensor], state: Mapping[Any, dict[str, Any]],
                 param_groups: list[dict[str, Any]]) -> None:
        self.params = dict(params)
        self.state = dict(state)
        self.param_groups = param_groups
        self._names = {id(t): name for name, t in self.params.items()}

    def state_dict(self) -> dict[str, Any]:
        """{"state": {param name: {state name: tensor}}, "param_groups": [{..., "params": [names]}]}."""
        state = {self._names[id(p)]: dict(s) for p, s in self.state.items()}
        groups = [{**{k: v for k, v in g.items() if k != "params"},
                   "params": [self._names[id(p)] for p in g["params"]]} for g in self.param_groups]
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Copy the saved state tensors into this optimizer's (in place) and take the saved
        hyperparameters; every parameter and state must match by name and shape."""
        saved_state, saved_groups = state_dict["state"], state_dict["param_groups"]
        for p, states in self.state.items():
            name = self._names[id(p)]
            if name not in saved_state:
                raise ValueError(f"the state_dict has no state for parameter {name!r}")
            for key, current in states.items():
                if key not in saved_state[name]:
                    raise ValueError(f"the state_dict lacks state {key!r} of parameter {name!r}")
                value = saved_state[name][key]
                if isinstance(current, ember.Tensor):
                    if tuple(value.shape) != tuple(current.shape):
                        raise ValueError(f"state {key!r} of {name!r}: saved shape {tuple(value.shape)}, "
                                         f"expected {tuple(current.shape)}")
                    with ember.no_grad():
                        current.copy_(value)
                else:
                    states[key] = value
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(f"the state_dict has {len(saved_groups)} param groups, expected {len(self.param_groups)}")
        for group, saved in zip(self.param_groups, saved_groups, strict=True):
            names = [self._names[id(p)] for p in group["params"]]
            if list(saved["params"]) != names:
                raise ValueError(f"param group parameters differ: saved {saved['params']}, expected {names}")
            group.update({k: v for k, v in saved.items() if k != "params"})

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params.values():
            if p.grad is not None:
                p.grad = None

    def step(self, closure=None):
        raise NotImplementedError(f"{type(self).__name__} does not define step()")
