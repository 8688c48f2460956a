"""nn.Module (torch.nn.Module's contract): parameters, buffers and submodules registered by
attribute assignment; named iterators with prefixes and de-duplication; state_dict /
load_state_dict with their hooks and versioned _load_from_state_dict; train/eval; to(dtype);
apply; zero_grad; forward pre/post hooks; repr."""

from __future__ import annotations

import itertools
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from ... import _C, _memory_format
from ..._hooks import add_hook
from ..._tensor import _to_arguments
from ...autograd.grad_mode import no_grad
from ..parameter import Buffer, Parameter

__all__ = ["Module"]

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"
_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


def _addindent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


class Module:
    training: bool

    def __init__(self, *args, **kwargs) -> None:
        if args or kwargs:
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
        d["_state_dict_pre_hooks"] = OrderedDict()
        d["_state_dict_hooks"] = OrderedDict()
        d["_state_dict_post_hook_ids"] = set()
        d["_load_state_dict_pre_hooks"] = OrderedDict()
        d["_load_state_dict_post_hooks"] = OrderedDict()

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
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name(name, "buffer")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, _C.Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' (torch Tensor or None "
                            f"required)")
        self._buffers[name] = tensor
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
        self._modules[name] = module

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
            modules[name] = value
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' (torch.nn.Module or "
                                f"None expected)")
            modules[name] = value
        elif buffers is not None and name in buffers:
            if value is not None and not isinstance(value, _C.Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' (torch.Tensor or None "
                                f"expected)")
            buffers[name] = value
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

    def _apply(self, convert):
        for module in self.children():
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

    def __call__(self, *args, **kwargs):
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
        output = self.forward(*args, **kwargs)
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
