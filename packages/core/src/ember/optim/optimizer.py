"""Optimizer: torch.optim.Optimizer's contract. Parameter groups with per-group options filled
from the defaults, per-parameter state, zero_grad, step hooks, and state_dict / load_state_dict
in PyTorch's layout (parameters replaced by integer ids, counted across all groups).

The built-in algorithms implement ``_update(param, grad, state, group)`` for one parameter and
inherit the generic ``step``; a user subclass may instead override ``step`` as in PyTorch (every
``step`` defined on a subclass is wrapped so the step hooks run around it).

Note [multi-tensor step]: SGD, Adam, AdamW, Adagrad and RMSprop also implement
``_multi_update(params, group)``, one native call (``_fused_sgd_`` ...) updating every parameter of
a group. It is PyTorch's foreach path and fused path at once: taken by default (``foreach=None``)
and with ``fused=True`` when the group's parameters and gradients are real floating tensors of one
dtype, contiguous, on the CPU; ``foreach=False`` or ``differentiable=True`` keep the loop. Both
paths compute the same formulas in the same order."""

from __future__ import annotations

import contextlib
import functools
import warnings
from collections import OrderedDict, defaultdict
from copy import deepcopy
from itertools import chain

from .. import _C
from .._hooks import RemovableHandle, add_hook
from ..autograd.grad_mode import enable_grad, no_grad
from ..sparse import SparseTensor

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook",
           "swap_in_optimizer_params_and_state"]


class _RequiredParameter:
    """The default of an option every parameter group must set (SGD's lr in older PyTorch)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


_global_optimizer_pre_hooks: OrderedDict = OrderedDict()
_global_optimizer_post_hooks: OrderedDict = OrderedDict()


def register_optimizer_step_pre_hook(hook) -> RemovableHandle:
    """A hook ``hook(optimizer, args, kwargs)`` run before every optimizer's step; it may return
    a new ``(args, kwargs)``."""
    return add_hook(_global_optimizer_pre_hooks, hook)


def register_optimizer_step_post_hook(hook) -> RemovableHandle:
    """A hook ``hook(optimizer, args, kwargs)`` run after every optimizer's step."""
    return add_hook(_global_optimizer_post_hooks, hook)


def _with_step_hooks(func):
    """Wrap a ``step``: pre hooks (global, then the optimizer's), the step, post hooks (the
    optimizer's, then global). A step reached through super().step() runs the hooks once."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        self = args[0]
        if getattr(self, "_in_hooked_step", False):
            return func(*args, **kwargs)
        for pre_hook in chain(_global_optimizer_pre_hooks.values(),
                              getattr(self, "_optimizer_step_pre_hooks", {}).values()):
            result = pre_hook(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise RuntimeError(f"{func} must return None or a tuple of (new_args, new_kwargs), "
                                       f"but got {result}.")
        # Read by the learning-rate schedulers' "lr_scheduler.step() before optimizer.step()" check.
        self._opt_called = True
        self._in_hooked_step = True
        scope = _C._RecordScope(f"Optimizer.step#{type(self).__name__}.step")  # the profiler's event, as PyTorch's
        try:
            out = func(*args, **kwargs)
        finally:
            self._in_hooked_step = False
            del scope  # the event ends when its scope is released
        for post_hook in chain(getattr(self, "_optimizer_step_post_hooks", {}).values(),
                               _global_optimizer_post_hooks.values()):
            post_hook(self, args, kwargs)
        return out

    wrapper._ember_step_hooks = True
    return wrapper


class Optimizer:
    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if callable(step) and not getattr(step, "_ember_step_hooks", False):
            cls.step = _with_step_hooks(step)

    def __init__(self, params, defaults: dict) -> None:
        self.defaults = defaults
        self._init_hooks()
        if isinstance(params, _C.Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {_typename(params)}")
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def _init_hooks(self) -> None:
        self._optimizer_step_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict = OrderedDict()
        self._optimizer_state_dict_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_state_dict_post_hooks: OrderedDict = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: OrderedDict = OrderedDict()

    def __getstate__(self) -> dict:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if "_optimizer_step_pre_hooks" not in self.__dict__:
            self._init_hooks()
        self.defaults.setdefault("differentiable", False)

    def __repr__(self) -> str:
        text = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"

    # ---- parameter groups ---------------------------------------------------------------------

    def add_param_group(self, param_group: dict) -> None:
        """Add a group (a dict with "params" and any per-group options) to ``param_groups``;
        options it leaves out take the optimizer's defaults. The dict itself is kept and filled in."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, _C.Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of "
                            "tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)
        for param in param_group["params"]:
            if not isinstance(param, _C.Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {_typename(param)}")
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        seen = {id(p) for group in self.param_groups for p in group["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters: drop them (``set_to_none``, the default) or
        zero them in place."""
        for group in self.param_groups:
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if grad.grad_fn is not None:
                        grad.detach_()
                    else:
                        grad.requires_grad_(False)
                    grad.zero_()

    # ---- stepping -----------------------------------------------------------------------------

    def step(self, closure=None):
        """Run ``closure`` (re-evaluating the loss, with gradients enabled) if given, then update
        each parameter that has a gradient; returns the closure's loss."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                if self._multi_tensor(group):
                    params = [p for p in group["params"] if p.grad is not None]
                    if params:
                        self._multi_update(params, group)
                    continue
                for p in group["params"]:
                    if p.grad is not None:
                        self._update_param(p, group)
        return loss

    def _multi_tensor(self, group: dict) -> bool:
        """Whether this group takes the one-call path (Note [multi-tensor step])."""
        if type(self)._multi_update is Optimizer._multi_update:
            return False
        fused = bool(group.get("fused"))
        if not fused and (group.get("foreach") is False or group.get("differentiable")):
            return False
        # each .grad read once: it is a Python property (Note [sparse .grad])
        with_grads = [(p, g) for p in group["params"] if (g := p.grad) is not None]
        dtype = with_grads[0][0].dtype if with_grads else None
        sparse = any(isinstance(g, SparseTensor) for _, g in with_grads)  # the per-parameter path takes them
        ok = not sparse and all(p.is_floating_point() and p.dtype == dtype and g.dtype == dtype
                                and p.device.type == "cpu" and p.is_contiguous() and g.is_contiguous()
                                for p, g in with_grads)
        if fused and not ok:
            raise RuntimeError("`fused=True` requires all the params to be floating point Tensors of supported "
                               "devices (cpu) with one dtype, contiguous, with dense gradients")
        return ok

    def _multi_update(self, params: list, group: dict) -> None:
        raise NotImplementedError

    # Whether _update takes sparse gradients (ember.sparse.SparseTensor, from embedding(sparse=True)).
    _takes_sparse_grads = False

    def _sparse_grad_error(self) -> str:
        return f"{type(self).__name__} does not support sparse gradients"

    def _update_param(self, p, group: dict) -> None:
        if isinstance(p.grad, SparseTensor) and not self._takes_sparse_grads:
            raise RuntimeError(self._sparse_grad_error())
        state = self.state[p] if p in self.state else {}
        if not p.is_complex():
            self._update(p, p.grad, state, group)
        else:
            # Complex parameters update as pairs of reals (PyTorch's view_as_real treatment); their
            # per-element state is kept complex, as PyTorch keeps it, and viewed as real here.
            real = _C.view_as_real(p)
            views = {k: _C.view_as_real(v) if _is_complex_tensor(v) else v for k, v in state.items()}
            self._update(real, _C.view_as_real(p.grad), views, group)
            state = {k: _C.view_as_complex(v) if _is_elementwise_state(k, v, real) else v for k, v in views.items()}
        if state:
            self.state[p] = state

    def _update(self, param, grad, state: dict, group: dict) -> None:
        raise NotImplementedError

    # ---- hooks --------------------------------------------------------------------------------

    def register_step_pre_hook(self, hook) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` runs before each step; it may return new ``(args, kwargs)``."""
        return add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` runs after each step."""
        return add_hook(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer)`` runs before state_dict() builds its result."""
        return add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict)`` runs on state_dict()'s result; it may return a replacement."""
        return add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict)`` runs before loading; it may return a replacement state dict."""
        return add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer)`` runs after loading."""
        return add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # ---- state dicts --------------------------------------------------------------------------

    def state_dict(self) -> dict:
        """``{"state": {id: per-parameter state}, "param_groups": [group options with "params" as
        ids]}``. Ids number the parameters in group order; the state tensors are not copied."""
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        mapping: dict[int, int] = {}
        start = 0
        packed_groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                mapping.setdefault(id(p), i)
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            packed_groups.append(packed)
        packed_state = {(mapping[id(k)] if isinstance(k, _C.Tensor) else k): v for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": packed_groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a state dict made by state_dict(): the groups' options are replaced by the saved
        ones (the parameters stay), and the saved state is copied onto the parameters with the
        same ids, in the parameter's floating dtype."""
        state_dict = dict(state_dict)
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups, strict=True)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        id_map = dict(zip(chain.from_iterable(s["params"] for s in saved_groups),
                          chain.from_iterable(g["params"] for g in groups), strict=True))
        state: defaultdict = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in id_map:
                param = id_map[key]
                state[param] = _cast(param, value)
            else:
                state[key] = value
        for group, saved in zip(groups, saved_groups, strict=True):
            saved["params"] = group["params"]
        self.__setstate__({"state": state, "param_groups": saved_groups})
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)


Optimizer.step = _with_step_hooks(Optimizer.step)


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer: Optimizer, swapin_parameters: dict, swapin_optim_state: dict):
    """Within the context, `optimizer` works on the given parameters and state; on exit its own are
    back, as torch.optim.swap_in_optimizer_params_and_state.

    `swapin_parameters` holds one tensor per optimizer parameter, in param_groups order (as
    model.named_parameters() gives them); `swapin_optim_state` is shaped like state_dict(): its
    "state" keyed by the packed ids, its "param_groups" with the hyperparameters to use. The
    optimizer sees each parameter's state dict as a shallow copy, so in-place edits of its tensors
    reach the caller's state while new entries or reassignments do not."""
    if not optimizer.state:
        raise RuntimeError("swap_in_optimizer_params_and_state requires initialized optimizer state.")
    saved_groups = swapin_optim_state["param_groups"]
    if len(saved_groups) != len(optimizer.param_groups):
        raise RuntimeError("swapin_optim_state has a different number of parameter groups than the live optimizer.")
    params = list(swapin_parameters.values())
    if len(params) != sum(len(g["params"]) for g in optimizer.param_groups) or any(
            len(s["params"]) != len(g["params"]) for s, g in zip(saved_groups, optimizer.param_groups, strict=True)):
        raise RuntimeError("swap_in_optimizer_params_and_state requires the explicit parameter state to match "
                           "optimizer.param_groups ordering.")
    groups, param_of_id, start = [], {}, 0
    for saved in saved_groups:
        group = {k: v for k, v in saved.items() if k != "params"}
        group["params"] = params[start:start + len(saved["params"])]
        param_of_id.update(zip(saved["params"], group["params"], strict=True))
        start += len(saved["params"])
        groups.append(group)
    state: defaultdict = defaultdict(dict)
    for key, value in swapin_optim_state["state"].items():
        state[param_of_id.get(key, key)] = dict(value) if isinstance(value, dict) else value
    live = optimizer.param_groups, optimizer.state
    optimizer.param_groups, optimizer.state = groups, state
    try:
        yield
    finally:
        optimizer.param_groups, optimizer.state = live

_LEGACY_TENSOR_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
                        "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
                        "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def _typename(obj) -> str:
    """torch.typename: "ember.FloatTensor" for a float32 CPU tensor, else module.qualname of the type."""
    if isinstance(obj, _C.Tensor):
        name = str(obj.dtype).rsplit(".", 1)[-1]
        prefix = "ember.cuda." if obj.device.type == "cuda" else "ember."
        return f"{prefix}{_LEGACY_TENSOR_NAMES.get(name, name)}Tensor"
    cls = type(obj)
    module = cls.__module__ or ""
    return cls.__qualname__ if module in ("", "builtins") else f"{module}.{cls.__qualname__}"


def _is_complex_tensor(value) -> bool:
    return isinstance(value, _C.Tensor) and value.is_complex()


def _is_elementwise_state(key, value, real_param) -> bool:
    return (key != "step" and isinstance(value, _C.Tensor) and value.is_floating_point()
            and tuple(value.shape) == tuple(real_param.shape))


def _real(t):
    return _C.view_as_real(t) if t.is_complex() else t


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


def _scalar_dtype():
    """The dtype of step counters: float64 when that is the default dtype, else float32 (PyTorch's rule)."""
    return _C.float64 if _C.get_default_dtype() == _C.float64 else _C.float32


# Scalar bookkeeping kept in its own dtype on load. PyTorch keeps only "step" and casts NAdam's
# "mu_product" (and ASGD's 0-dim "eta" and "mu") to the parameter's dtype, so a resumed run drifts
# from an uninterrupted one; Ember keeps them all, and resumes exactly.
_KEEP_DTYPE = frozenset({"step", "mu_product"})
_KEEP_DTYPE_SCALARS = frozenset({"eta", "mu"})


def _cast(param, value, key=None):
    """A copy of saved state for ``param``: floating tensors take a floating parameter's dtype,
    step counters stay as saved; dicts and sequences are copied item by item."""
    if isinstance(value, _C.Tensor):
        keep = key in _KEEP_DTYPE or (key in _KEEP_DTYPE_SCALARS and value.dim() == 0)
        if not keep and param.is_floating_point() and (value.is_floating_point() or value.is_complex()):
            return value.to(param.dtype).clone()
        return value.clone()
    if isinstance(value, dict):
        return {k: _cast(param, v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(param, v, key) for v in value)
    return value
