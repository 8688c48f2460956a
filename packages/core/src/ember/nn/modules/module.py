"""nn.Module (torch.nn.Module's contract): parameters, buffers and submodules registered by
attribute assignment; named iterators with prefixes and de-duplication; state_dict /
load_state_dict with their hooks and versioned _load_from_state_dict; train/eval; to(dtype);
apply; zero_grad; forward pre/post hooks; repr."""

from __future__ import annotations

import itertools
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from ... import _C, _memory_format
from ..._hooks import add_hook
from ..._tensor import _to_arguments
from ...autograd.grad_mode import no_grad
from ..parameter import Buffer, Parameter

__all__ = ["Module", "register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_full_backward_pre_hook", "register_module_full_backward_hook",
           "register_module_backward_hook", "register_module_buffer_registration_hook",
           "register_module_module_registration_hook", "register_module_parameter_registration_hook"]

# ---- global hooks (torch.nn.modules.module.register_module_*): every module's calls and
# registrations run these before the module's own ---------------------------------------------

_global_forward_pre_hooks: OrderedDict = OrderedDict()
_global_forward_hooks: OrderedDict = OrderedDict()
_global_backward_pre_hooks: OrderedDict = OrderedDict()
_global_backward_hooks: OrderedDict = OrderedDict()
_global_is_full_backward_hook: bool | None = None
_global_buffer_registration_hooks: OrderedDict = OrderedDict()
_global_module_registration_hooks: OrderedDict = OrderedDict()
_global_parameter_registration_hooks: OrderedDict = OrderedDict()


def register_module_forward_pre_hook(hook):
    """hook(module, args) -> None or new args, before every module's forward (and before its own
    pre-hooks). Returns a handle whose remove() takes it off."""
    return add_hook(_global_forward_pre_hooks, hook, False)


def register_module_forward_hook(hook, *, always_call: bool = False):
    """hook(module, args, output) -> None or new output, after every module's forward (before its
    own forward hooks)."""
    return add_hook(_global_forward_hooks, hook, False)


def register_module_full_backward_pre_hook(hook):
    """hook(module, grad_output) -> None or new grad_output, for every module (before its own)."""
    return add_hook(_global_backward_pre_hooks, hook, False)


def _set_global_backward_kind(full: bool) -> None:
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is not None and _global_is_full_backward_hook != full:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a global Module hook. "
                           "Please use only one of them.")
    _global_is_full_backward_hook = full


def register_module_full_backward_hook(hook):
    """hook(module, grad_input, grad_output) -> None or new grad_input, for every module (before
    its own full backward hooks)."""
    _set_global_backward_kind(True)
    return add_hook(_global_backward_hooks, hook, False)


def register_module_backward_hook(hook):
    """The deprecated non-full form of register_module_full_backward_hook (see
    Module.register_backward_hook)."""
    _set_global_backward_kind(False)
    return add_hook(_global_backward_hooks, hook, False)


def register_module_buffer_registration_hook(hook):
    """hook(module, name, buffer) -> None or the buffer to register instead, on every buffer registration."""
    return add_hook(_global_buffer_registration_hooks, hook, False)


def register_module_module_registration_hook(hook):
    """hook(module, name, submodule) -> None or the module to register instead, on every submodule registration."""
    return add_hook(_global_module_registration_hooks, hook, False)


def register_module_parameter_registration_hook(hook):
    """hook(module, name, param) -> None or the parameter to register instead, on every parameter registration."""
    return add_hook(_global_parameter_registration_hooks, hook, False)


def _registered(hooks: OrderedDict, module, name: str, value):
    for hook in list(hooks.values()):
        result = hook(module, name, value)
        if result is not None:
            value = result
    return value

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"
_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


def _addindent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


class Module:
    training: bool
    dump_patches: bool = False  # PyTorch's flag for old checkpoints' class patches; nothing reads it
    call_super_init: bool = False  # True: Module.__init__ passes its arguments on to super().__init__

    def __init__(self, *args, **kwargs) -> None:
        if (args or kwargs) and not self.call_super_init:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but {len(args) + 1} were "
                            f"given" if args else f"{type(self).__name__}.__init__() got an unexpected keyword "
                            f"argument '{next(iter(kwargs))}'")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = OrderedDict()
        d["_forward_pre_hooks"] = OrderedDict()
        d["_forward_pre_hooks_with_kwargs"] = {}
        d["_forward_hooks"] = OrderedDict()
        d["_forward_hooks_with_kwargs"] = {}
        d["_backward_pre_hooks"] = OrderedDict()
        d["_backward_hooks"] = OrderedDict()
        d["_is_full_backward_hook"] = None
        d["_state_dict_pre_hooks"] = OrderedDict()
        d["_state_dict_hooks"] = OrderedDict()
        d["_state_dict_post_hook_ids"] = set()
        d["_load_state_dict_pre_hooks"] = OrderedDict()
        d["_load_state_dict_post_hooks"] = OrderedDict()
        if self.call_super_init:  # a mixin after Module in the MRO gets the arguments
            super().__init__(*args, **kwargs)

    # ---- registration -----------------------------------------------------------------------

    def _check_name(self, name, kind: str) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')

    def register_parameter(self, name: str, param) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name(name, "parameter")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' (torch.nn.Parameter "
                            f"or None required)")
        self._parameters[name] = _registered(_global_parameter_registration_hooks, self, name, param)

    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name(name, "buffer")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, _C.Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' (torch Tensor or None "
                            f"required)")
        self._buffers[name] = _registered(_global_buffer_registration_hooks, self, name, tensor)
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module) -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = _registered(_global_module_registration_hooks, self, name, module)

    register_module = add_module

    def __setattr__(self, name: str, value) -> None:
        d = self.__dict__
        params, buffers, modules = d.get("_parameters"), d.get("_buffers"), d.get("_modules")

        def drop(*dicts):
            for dd in dicts:
                if dd is not None and name in dd:
                    del dd[name]
            d.pop(name, None)

        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            drop(buffers, modules)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' (torch.nn.Parameter or "
                                f"None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Buffer):  # nn.Buffer registers itself, with its persistence
            if buffers is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            drop(params, modules)
            self.register_buffer(name, value, persistent=value.persistent)
        elif isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            drop(params, buffers)
            modules[name] = _registered(_global_module_registration_hooks, self, name, value)
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' (torch.nn.Module or "
                                f"None expected)")
            modules[name] = _registered(_global_module_registration_hooks, self, name, value)
        elif buffers is not None and name in buffers:
            if value is not None and not isinstance(value, _C.Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' (torch.Tensor or None "
                                f"expected)")
            buffers[name] = _registered(_global_buffer_registration_hooks, self, name, value)
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(object.__dir__(self)) | set(self._parameters) | set(self._buffers) | set(self._modules))

    # ---- iteration ---------------------------------------------------------------------------

    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        if memo is None:
            memo = set()
        if remove_duplicate and self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            yield from module.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, module in self._modules.items():
            if module is not None and module not in seen:
                seen.add(module)
                yield name, module

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named_members(self, store: str, prefix: str, recurse: bool, remove_duplicate: bool = True):
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in getattr(module, store).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield module_prefix + ("." if module_prefix else "") + name, value

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def get_submodule(self, target: str):
        if target == "":
            return self
        module = self
        for item in target.split("."):
            if not hasattr(module, item):
                raise AttributeError(f"{type(module).__name__} has no attribute `{item}`")
            module = getattr(module, item)
            if not isinstance(module, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return module

    def _get_member(self, target: str):
        """(owning module, attribute name) of a dotted target; AttributeError if it is missing."""
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{type(module).__name__} has no attribute `{name}`")
        return module, name

    def get_parameter(self, target: str):
        module, name = self._get_member(target)
        param = getattr(module, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str):
        module, name = self._get_member(target)
        if name not in module._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return module._buffers[name]

    # ---- state -------------------------------------------------------------------------------

    # Bumped by a subclass whose state_dict layout changes; _load_from_state_dict sees the
    # version a checkpoint was written with in local_metadata["version"].
    _version: int = 1

    def _save_to_state_dict(self, destination, prefix: str, keep_vars: bool) -> None:
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        if args:
            raise TypeError("state_dict() takes its arguments by keyword: destination, prefix, keep_vars")
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook_id, hook in self._state_dict_hooks.items():
            result = hook(self, destination, prefix, local_metadata)
            if result is not None:
                if hook_id in self._state_dict_post_hook_ids:
                    raise RuntimeError("state_dict post-hook must return None")
                destination = result  # the older _register_state_dict_hook contract
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        """Copy this module's own entries (not its children's) from state_dict; subclasses that
        changed their layout override this to upgrade old checkpoints (see _version)."""
        for hook in self._load_state_dict_pre_hooks.values():
            hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        assign = local_metadata.get("assign_to_params_buffers", False)
        persistent = {k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(), persistent.items()) if v is not None}
        for name, current in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, _C.Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or Tensor-like '
                                  f"object from checkpoint but received {type(value)}")
                continue
            if tuple(value.shape) != tuple(current.shape):
                error_msgs.append(f"size mismatch for {key}: copying a param with shape {list(value.shape)} from "
                                  f"checkpoint, the shape in current model is {list(current.shape)}.")
                continue
            if assign:
                if name in self._parameters:
                    self._parameters[name] = value if isinstance(value, Parameter) else \
                        Parameter(value, current.requires_grad)
                else:
                    self._buffers[name] = value
            else:
                with no_grad():
                    current.copy_(value)
        extra_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        has_extra = type(self).set_extra_state is not Module.set_extra_state
        if has_extra and extra_key in state_dict:
            self.set_extra_state(state_dict[extra_key])
        elif has_extra and strict:
            missing_keys.append(extra_key)
        if strict:
            for key in state_dict:
                if not key.startswith(prefix) or (has_extra and key == extra_key):
                    continue
                head, *rest = key[len(prefix):].split(".", 1)
                if (head not in self._modules) if rest else (head not in local_state):
                    unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        metadata = getattr(state_dict, "_metadata", None)

        def load(module, local_state, prefix=""):
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = True
            module._load_from_state_dict(local_state, prefix, local_metadata, True, missing, unexpected, errors)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    load(child, {k: v for k, v in local_state.items() if k.startswith(child_prefix)}, child_prefix)
            incompatible = _IncompatibleKeys(missing, unexpected)
            for hook in module._load_state_dict_post_hooks.values():
                if hook(module, incompatible) is not None:
                    raise RuntimeError("load_state_dict post-hook must return None")

        load(self, OrderedDict(state_dict))
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors))
        return _IncompatibleKeys(missing, unexpected)

    def get_extra_state(self):
        """Override (with set_extra_state) to keep non-tensor state in the state dict under
        '<prefix>_extra_state'."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called.")

    def set_extra_state(self, state) -> None:
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called.")

    def register_state_dict_pre_hook(self, hook):
        """hook(module, prefix, keep_vars), called before the module's entries are written."""
        return add_hook(self._state_dict_pre_hooks, hook)

    def register_state_dict_post_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata) -> None, may edit state_dict in place."""
        handle = add_hook(self._state_dict_hooks, hook)
        self._state_dict_post_hook_ids.add(handle.id)
        return handle

    def _register_state_dict_hook(self, hook):
        """The older form of register_state_dict_post_hook: a returned dict replaces state_dict."""
        return add_hook(self._state_dict_hooks, hook)

    def register_load_state_dict_pre_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs), called before the module's entries are read; it may edit state_dict."""
        return add_hook(self._load_state_dict_pre_hooks, hook)

    def register_load_state_dict_post_hook(self, hook):
        """hook(module, incompatible_keys) -> None, after the module and its children loaded; it may
        edit incompatible_keys.missing_keys / unexpected_keys in place (strict sees the result)."""
        return add_hook(self._load_state_dict_post_hooks, hook)

    # ---- modes and conversions ---------------------------------------------------------------

    def train(self, mode: bool = True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                with no_grad():
                    p.grad.zero_()

    def apply(self, fn):
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def _apply(self, convert, recurse: bool = True):
        for module in self.children() if recurse else ():
            module._apply(convert)
        for p in self._parameters.values():
            if p is None:
                continue
            # As PyTorch: the Parameter object stays and takes the converted data, so a parameter
            # shared by two modules (tied embedding and output weights) stays one parameter, and
            # an optimizer built before .to() / .double() still holds the model's parameters.
            with no_grad():
                new = convert(p)
                if new is not p:
                    p.data = new
                if p.grad is not None:
                    grad = convert(p.grad)
                    if grad is not p.grad:
                        p.grad.data = grad
        for name, b in self._buffers.items():
            if b is not None:
                self._buffers[name] = convert(b)
        return self

    def to(self, *args, **kwargs):
        """to(dtype), to(device), to(device, dtype), to(tensor), to(memory_format=): floating
        parameters and buffers take the dtype (integer ones keep theirs); 4-d and 5-d ones take
        the memory format (ember.channels_last for a vision model on CPU)."""
        dtype, device = _to_arguments(args, kwargs.get("dtype"), kwargs.get("device"))
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired dtype="
                            f"{dtype}")
        fmt = kwargs.get("memory_format")
        if fmt is not None:
            _memory_format.check(fmt, "to")

        def convert(t):
            target = dtype if dtype is not None and (t.dtype.is_floating_point or t.dtype.is_complex) else None
            out = t.to(device if device is not None else t.device, target) if target else \
                (t.to(device) if device is not None else t)
            return out.contiguous(memory_format=fmt) if fmt is not None and t.dim() in (4, 5) else out
        return self._apply(convert)

    def type(self, dst_type):
        """Casts every parameter and buffer to dst_type (a dtype or a tensor type name, as Tensor.type)."""
        return self._apply(lambda t: t.type(dst_type))

    def cuda(self, device=None):
        """Moves parameters and buffers to a CUDA device: this build has none, so a module holding
        any raises the AssertionError Tensor.cuda raises (one holding none is returned as is)."""
        return self._apply(lambda t: t.cuda(device))

    def to_empty(self, *, device, recurse: bool = True):
        """Replaces every parameter and buffer by an uninitialized tensor of its shape and dtype on
        `device` (the values are not copied)."""
        import ember

        return self._apply(lambda t: ember.empty_like(t, device=device), recurse=recurse)

    def compile(self, *args, **kwargs) -> None:
        """Module.compile: ember.compile on this module's call. ember.compile is the eager backend
        (see ember.compile), so calls run as before; its arguments are checked the same way."""
        import ember

        ember.compile(self.__call__, *args, **kwargs)

    def set_submodule(self, target: str, module, strict: bool = False) -> None:
        """Sets the submodule at the dotted path `target` (its parent must exist). With strict, the
        last name must already be a submodule."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        *path, name = target.split(".")
        parent = self.get_submodule(".".join(path))
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{parent._get_name()} has no attribute `{name}`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        setattr(parent, name, module)

    def float(self):
        return self.to(_C.float32)

    def double(self):
        return self.to(_C.float64)

    def half(self):
        return self.to(_C.float16)

    def bfloat16(self):
        return self.to(_C.bfloat16)

    def cpu(self):
        return self

    def share_memory(self):
        """Move every parameter, its .grad, and every buffer into shared memory in place
        (Tensor.share_memory_), so processes given this module update the same tensors (Hogwild)."""
        return self._apply(lambda t: t.share_memory_())

    # ---- calls and hooks -----------------------------------------------------------------------

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def register_forward_pre_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False):
        handle = add_hook(self._forward_pre_hooks, hook, prepend)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        return handle

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False):
        handle = add_hook(self._forward_hooks, hook, prepend)
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        return handle

    def register_full_backward_pre_hook(self, hook, prepend: bool = False):
        """hook(module, grad_output) -> None or new grad_output: runs when the gradients with
        respect to the module's outputs are computed, before those with respect to its inputs."""
        return add_hook(self.__dict__.setdefault("_backward_pre_hooks", OrderedDict()), hook, prepend)

    def register_full_backward_hook(self, hook, prepend: bool = False):
        """hook(module, grad_input, grad_output) -> None or new grad_input: runs when the gradients
        with respect to the module's positional inputs are computed (ember.utils.hooks.BackwardHook
        says what the tuples hold). The inputs and outputs go through an identity autograd Function,
        so an in-place op on them afterwards is one on a Function's output."""
        if self.__dict__.get("_is_full_backward_hook") is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                               "Please use only one of them.")
        self.__dict__["_is_full_backward_hook"] = True
        return add_hook(self.__dict__.setdefault("_backward_hooks", OrderedDict()), hook, prepend)

    def register_backward_hook(self, hook):
        """Deprecated (use register_full_backward_hook): hook(module, grad_input, grad_output) on
        the autograd node that made the module's output, so grad_input are the gradients of that
        last op's inputs, not necessarily of the module's."""
        if self.__dict__.get("_is_full_backward_hook") is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                               "Please use only one of them.")
        self.__dict__["_is_full_backward_hook"] = False
        return add_hook(self.__dict__.setdefault("_backward_hooks", OrderedDict()), hook, False)

    def _backward_hook_lists(self) -> tuple[list, list, list]:
        """(full hooks, pre-hooks, non-full hooks) that apply to this call, global ones first."""
        d = self.__dict__
        own = list(d.get("_backward_hooks", {}).values())
        own_full = d.get("_is_full_backward_hook")
        full, legacy = [], []
        if _global_backward_hooks:
            (full if _global_is_full_backward_hook else legacy).extend(_global_backward_hooks.values())
        (full if own_full else legacy).extend(own)
        pre = [*_global_backward_pre_hooks.values(), *d.get("_backward_pre_hooks", {}).values()]
        return full, pre, legacy

    def __call__(self, *args, **kwargs):
        d = self.__dict__
        if not (_global_forward_pre_hooks or _global_forward_hooks or _global_backward_hooks
                or _global_backward_pre_hooks or d.get("_backward_hooks") or d.get("_backward_pre_hooks")):
            return self._call_with_own_hooks(args, kwargs)
        for hook in list(_global_forward_pre_hooks.values()):
            result = hook(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        full, pre, legacy = self._backward_hook_lists()
        backward_hook = None
        if full or pre:
            from ...utils.hooks import BackwardHook

            backward_hook = BackwardHook(self, full, pre)
        output = self._call_with_own_hooks(args, kwargs, _global_forward_hooks, backward_hook)
        if backward_hook is not None:
            output = backward_hook.setup_output_hook(output)
        if legacy:
            self._attach_legacy_backward_hooks(output, legacy)
        return output

    def _attach_legacy_backward_hooks(self, output, hooks: list) -> None:
        tensor = output
        while not isinstance(tensor, _C.Tensor):  # the first tensor of a (nested) tuple or dict, as PyTorch looks
            if isinstance(tensor, (tuple, list)) and tensor:
                tensor = tensor[0]
            elif isinstance(tensor, dict) and tensor:
                tensor = next(iter(tensor.values()))
            else:
                return
        grad_fn = tensor.grad_fn
        if grad_fn is None:
            return
        warnings.warn("Using a non-full backward hook when the forward contains multiple autograd Nodes is "
                      "deprecated and will be removed in future versions. This hook will be missing some grad_input. "
                      "Please use register_full_backward_hook to get the documented behavior.", FutureWarning,
                      stacklevel=3)
        for hook in hooks:
            grad_fn.register_hook(lambda grad_inputs, grad_outputs, hook=hook: hook(self, grad_inputs, grad_outputs))

    def _call_with_own_hooks(self, args: tuple, kwargs: dict, global_forward_hooks=None, backward_hook=None):
        for hook_id, hook in list(self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                           f"but got {result}.")
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        if backward_hook is not None:  # after every pre-hook, on the arguments forward gets
            args = backward_hook.setup_input_hook(args)
        output = self.forward(*args, **kwargs)
        for hook in list(global_forward_hooks.values()) if global_forward_hooks else ():
            result = hook(self, args, output)
            if result is not None:
                output = result
        for hook_id, hook in list(self._forward_hooks.items()):
            if hook_id in self._forward_hooks_with_kwargs:
                result = hook(self, args, kwargs, output)
            else:
                result = hook(self, args, output)
            if result is not None:
                output = result
        return output

    # ---- repr ----------------------------------------------------------------------------------

    def extra_repr(self) -> str:
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        extra = self.extra_repr()
        lines = extra.split("\n") if extra else []
        for name, module in self._modules.items():
            lines.append(f"({name}): " + _addindent(repr(module), 2))
        main = self._get_name() + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"
