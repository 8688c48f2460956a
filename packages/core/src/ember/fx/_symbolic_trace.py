"""Symbolic tracing: running a module's ``forward`` on Proxies to record its graph
(torch.fx._symbolic_trace).

While a trace runs, ``nn.Module.__call__`` and ``nn.Module.__getattr__`` are patched (and put back
after, even on error): a call of a submodule either becomes one ``call_module`` node (a *leaf*:
Ember's own layers by default) or is traced through, and a read of a parameter becomes a
``get_attr`` node. Functions registered with ``wrap`` and the functions of ``math`` become single
``call_function`` nodes when called on a Proxy.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import math
import types
from collections.abc import Callable
from typing import Any

from .graph import Graph
from .node import map_aggregate
from .proxy import ParameterProxy, Proxy, TracerBase

__all__ = ["PH", "PHBase", "ProxyableClassMeta", "Tracer", "symbolic_trace", "wrap"]

_VARARG_FLAGS = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS


class PHBase:
    """The placeholder marker for ``concrete_args``: that argument stays a graph input."""

    def __repr__(self) -> str:
        return "PH"


PH = PHBase()


def _assert_is_none(value: Any, msg: str) -> None:
    if value is not None:
        raise AssertionError(msg)


# (globals dict, name) pairs registered by wrap(): patched in every trace
_wrapped_fns_to_patch: dict[tuple[int, str], tuple[dict, str]] = {}


def wrap(fn_or_name: str | Callable) -> str | Callable:
    """Called at a module's top level with a function (or its name), makes calls of that global
    inside traced code single ``call_function`` nodes instead of being traced into, e.g.
    ``ember.fx.wrap('len')`` records ``len(x)`` on a Proxy. Returns its argument."""
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise RuntimeError("Unsupported type for global function! Must be either a callable or string name")
    name = fn_or_name if isinstance(fn_or_name, str) else getattr(fn_or_name, "__name__", None)
    if name is None or name.startswith("<"):
        raise RuntimeError("wrap() needs a function with a name (a lambda cannot be wrapped)")
    frame = inspect.currentframe()
    caller = frame.f_back if frame is not None else None
    if caller is None or caller.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _wrapped_fns_to_patch[(id(caller.f_globals), name)] = (caller.f_globals, name)
    return fn_or_name


def _create_wrapped_func(orig_fn: Callable) -> Callable:
    @functools.wraps(orig_fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        proxies: list[Proxy] = []
        map_aggregate((args, kwargs), lambda a: proxies.append(a) if isinstance(a, Proxy) else None)
        if proxies:
            proxy = proxies[0].tracer.create_proxy("call_function", orig_fn, args, kwargs)
            proxy.node.meta["is_wrapped"] = True
            return proxy
        return orig_fn(*args, **kwargs)

    return wrapped


class ProxyableClassMeta(type):
    """A metaclass whose classes, constructed with a Proxy among the arguments while tracing,
    become one ``call_function`` node calling the class (so a traced program may build, e.g., a
    tensor-pair type of its own); constructed on real values, they are made as usual."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        proxies: list[Proxy] = []
        map_aggregate((args, kwargs), lambda a: proxies.append(a) if isinstance(a, Proxy) else None)
        if proxies:
            return proxies[0].tracer.create_proxy("call_function", cls, args, kwargs)
        return super().__call__(*args, **kwargs)


class _Patcher:
    """Sets attributes and dict entries for the length of a trace, and puts them all back."""

    _MISSING = object()

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []
        self._patched_dict_keys: set[tuple[int, str]] = set()

    def patch_dict(self, d: dict, name: str, value: Any) -> None:
        key = (id(d), name)
        if key in self._patched_dict_keys:
            return
        self._patched_dict_keys.add(key)
        old = d.get(name, self._MISSING)
        d[name] = value
        self._undo.append(lambda: d.__setitem__(name, old) if old is not self._MISSING else d.pop(name, None))

    def patch_attr(self, obj: Any, name: str, value: Any) -> None:
        old = obj.__dict__[name]
        setattr(obj, name, value)
        self._undo.append(lambda: setattr(obj, name, old))

    def restore(self) -> None:
        while self._undo:
            self._undo.pop()()
        self._patched_dict_keys.clear()


class Tracer(TracerBase):
    """Records a module's (or function's) program as a Graph; override ``is_leaf_module``,
    ``call_module``, ``create_arg`` or ``getattr`` to change what it records."""

    def __init__(self, autowrap_modules: tuple = (math,), autowrap_functions: tuple = (),
                 param_shapes_constant: bool = False) -> None:
        super().__init__()
        self._autowrap_function_ids = {id(value) for module in autowrap_modules
                                       for name, value in vars(module).items()
                                       if not name.startswith("_") and callable(value)}
        self._autowrap_function_ids |= {id(f) for f in autowrap_functions}
        # `math.sqrt(x)` reaches the function through the module: its dict is patched too
        self._autowrap_search = list(autowrap_modules)
        self.param_shapes_constant = param_shapes_constant
        self.submodule_paths: dict | None = None
        self.tensor_attrs: dict = {}

    # ---- what to record ----------------------------------------------------------------------

    def is_leaf_module(self, m: Any, module_qualified_name: str) -> bool:
        """Whether calling ``m`` is one node (True) or is traced into: Ember's own layers
        (``ember.nn``, ``ember.ao.nn``) are leaves, except Sequential."""
        from ..nn import Sequential

        module = type(m).__module__
        return (module.startswith("ember.nn") or module.startswith("ember.ao.nn")) and not isinstance(m, Sequential)

    def path_of_module(self, mod: Any) -> str:
        """The dotted path of ``mod`` inside the traced root."""
        if self.submodule_paths is None:
            self.submodule_paths = {}
            for name, module in self.root.named_modules():
                self.submodule_paths.setdefault(module, name)
        path = self.submodule_paths.get(mod)
        if path is None:
            raise NameError("module is not installed as a submodule")
        return path

    def call_module(self, m: Any, forward: Callable, args: tuple, kwargs: dict) -> Any:
        """A submodule call: one ``call_module`` node for a leaf, otherwise its forward traced."""
        module_qualified_name = self.path_of_module(m)
        if not self.is_leaf_module(m, module_qualified_name):
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", module_qualified_name, args, kwargs)

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict) -> Any:
        """A module attribute read while tracing: parameters (and buffers, with
        ``proxy_buffer_attributes``) of the root become ``get_attr`` proxies, one per name."""
        from .. import Tensor
        from ..nn import Parameter

        def lookup(named: Any) -> Any:
            for name, value in named:
                if attr_val is value:
                    if name not in parameter_proxy_cache:
                        factory = None
                        if self.param_shapes_constant and isinstance(value, Parameter):
                            factory = lambda node, name=name: ParameterProxy(self, node, name, attr_val)  # noqa: E731
                        parameter_proxy_cache[name] = self.create_proxy("get_attr", name, (), {},
                                                                        proxy_factory_fn=factory)
                    return parameter_proxy_cache[name]
            return None

        if isinstance(attr_val, Parameter):
            found = lookup(self.root.named_parameters())
            if found is not None:
                return found
        if self.proxy_buffer_attributes and isinstance(attr_val, Tensor):
            found = lookup(self.root.named_buffers())
            if found is not None:
                return found
        return attr_val

    def create_arg(self, a: Any) -> Any:
        """Besides what ``TracerBase.create_arg`` takes: the root's parameters, buffers and
        submodules become ``get_attr`` nodes, and any other tensor a constant attribute
        ``_tensor_constant<i>`` of the root read by one."""
        from .. import Tensor
        from ..nn import Module, Parameter

        if isinstance(a, Parameter):
            for name, p in self.root.named_parameters():
                if a is p:
                    return self.create_node("get_attr", name, (), {})
            raise NameError("parameter is not a member of this module")
        if isinstance(a, Tensor):
            for name, buf in self.root.named_buffers():
                if a is buf:
                    return self.create_node("get_attr", name, (), {})
            qualname = self.tensor_attrs.get(a)
            if qualname is None:
                i = 0
                while hasattr(self.root, f"_tensor_constant{i}"):
                    i += 1
                qualname = f"_tensor_constant{i}"
                setattr(self.root, qualname, a)
                self.tensor_attrs[a] = qualname
            return self.create_node("get_attr", qualname, (), {})
        if isinstance(a, Module):
            for name, module in self.root.named_modules():
                if a is module:
                    return self.create_node("get_attr", name, (), {})
            raise NameError("module is not installed as a submodule")
        return super().create_arg(a)

    # ---- tracing -----------------------------------------------------------------------------

    def create_args_for_root(self, root_fn: Callable, is_module: bool,
                             concrete_args: dict | tuple | None = None) -> tuple[Callable, list]:
        """The placeholders (or concrete values) the root function is called with, and the function
        itself, made to take keyword-only and variadic parameters positionally."""
        fn = inspect.unwrap(root_fn)
        code = fn.__code__
        n_named = code.co_argcount + code.co_kwonlyargcount
        names = list(code.co_varnames[:n_named])
        args: list = []
        if is_module:
            if not names:
                raise RuntimeError("``self`` argument cannot be part of *args expansion!")
            names = names[1:]
            args.append(self.root)
        signature = inspect.signature(fn)
        if isinstance(concrete_args, tuple):
            if len(concrete_args) != len(names):
                raise RuntimeError(f"Tracing expected {len(names)} arguments but got {len(concrete_args)} concrete "
                                   "arguments")
            concrete_args = dict(zip(names, concrete_args, strict=True))
        concrete_args = concrete_args or {}
        unknown = set(concrete_args) - set(signature.parameters)
        if unknown:
            raise TypeError(f"concrete_args names no parameter of {fn.__name__}: {sorted(unknown)}")

        def placeholder(name: str) -> Any:
            bare = name.lstrip("*")
            param = signature.parameters.get(bare)
            default = () if param is None or param.default is inspect.Parameter.empty else (param.default,)
            annotation = None if param is None or param.annotation is inspect.Parameter.empty else param.annotation
            if bare not in concrete_args or isinstance(concrete_args[bare], PHBase):
                proxy = self.create_proxy("placeholder", name, default, {}, type_expr=annotation)
                if param is not None and param.kind is inspect.Parameter.KEYWORD_ONLY:
                    proxy.node.meta["keyword_only"] = True  # generated code keeps it after *args
                return proxy
            value = concrete_args[bare]
            out = self.create_proxy("placeholder", f"{bare}_1", default, {})
            if value is None:
                self.create_proxy("call_function", _assert_is_none,
                                  (out, f"{bare} has been specialized to have value None but got another value"), {})
            elif type(value) in (bool, int, float, str):
                from .. import _assert

                _assert(out == value, f"{bare} has been specialized to have value {value} but got another value")
            return value

        args.extend(placeholder(name) for name in names)
        if code.co_flags & inspect.CO_VARARGS:
            args.append(placeholder("*" + code.co_varnames[n_named]))
        if code.co_flags & inspect.CO_VARKEYWORDS:
            index = n_named + bool(code.co_flags & inspect.CO_VARARGS)
            args.append(placeholder("**" + code.co_varnames[index]))
        if code.co_kwonlyargcount or code.co_flags & _VARARG_FLAGS:
            # every parameter positional, so the proxies for *args/**kwargs go in as single values
            total = n_named + bin(code.co_flags & _VARARG_FLAGS).count("1")
            new_code = code.replace(co_flags=code.co_flags & ~_VARARG_FLAGS, co_argcount=total, co_kwonlyargcount=0)
            root_fn = types.FunctionType(new_code, fn.__globals__, fn.__name__, None, fn.__closure__)
        return root_fn, args

    def trace(self, root: Any, concrete_args: dict | tuple | None = None) -> Graph:
        """Traces ``root`` (a Module, whose ``forward`` is run, or a function) into a Graph;
        ``concrete_args`` fixes some inputs to values (``PH`` keeps one an input)."""
        from .. import Tensor, nn

        if isinstance(root, nn.Module):
            self.root = root
            fn = getattr(type(root), self.traced_func_name)
            if not callable(fn):
                raise TypeError(f"{type(root).__name__}.{self.traced_func_name} is not callable")
        elif callable(root):
            self.root = nn.Module()
            fn = root
        else:
            raise TypeError(f"symbolic_trace expects an ember.nn.Module or a function, got {type(root).__name__}")
        self.graph = Graph(tracer_cls=type(self))
        self.submodule_paths = None
        self.tensor_attrs = {}
        for module_name, module in self.root.named_modules():
            for attr_name, value in vars(module).items():
                if isinstance(value, Tensor):
                    self.tensor_attrs.setdefault(value, f"{module_name}.{attr_name}" if module_name else attr_name)
        fn_globals = fn.__globals__
        fn, args = self.create_args_for_root(fn, isinstance(root, nn.Module), concrete_args)
        parameter_proxy_cache: dict = {}
        original_getattr = nn.Module.__getattr__
        original_call = nn.Module.__call__
        tracer = self

        def module_getattr_wrapper(mod: Any, attr: str) -> Any:
            return tracer.getattr(attr, original_getattr(mod, attr), parameter_proxy_cache)

        def module_call_wrapper(mod: Any, *args: Any, **kwargs: Any) -> Any:
            def forward(*args: Any, **kwargs: Any) -> Any:
                return original_call(mod, *args, **kwargs)

            tracer._autowrap_check(patcher, getattr(getattr(mod, "forward", mod), "__globals__", {}))
            return tracer.call_module(mod, forward, args, kwargs)

        patcher = _Patcher()
        try:
            patcher.patch_attr(nn.Module, "__getattr__", module_getattr_wrapper)
            patcher.patch_attr(nn.Module, "__call__", module_call_wrapper)
            for globals_, name in list(_wrapped_fns_to_patch.values()):
                original = globals_.get(name, getattr(builtins, name, None))
                if original is not None:
                    patcher.patch_dict(globals_, name, _create_wrapped_func(original))
            self._autowrap_check(patcher, fn_globals)
            for module in self._autowrap_search:
                self._autowrap_check(patcher, module.__dict__)
            result = fn(*args)
            self.create_node("output", "output", (self.create_arg(result),), {},
                             type_expr=getattr(fn, "__annotations__", {}).get("return"))
        finally:
            patcher.restore()
        self.submodule_paths = None
        return self.graph

    def _autowrap_check(self, patcher: _Patcher, globals_: dict) -> None:
        for name, value in list(globals_.items()):
            if not name.startswith("_") and callable(value) and id(value) in self._autowrap_function_ids:
                patcher.patch_dict(globals_, name, _create_wrapped_func(value))


def symbolic_trace(root: Any, concrete_args: dict | tuple | None = None) -> Any:
    """Traces ``root`` (an ``ember.nn.Module`` or a function) and returns a ``GraphModule``
    holding the recorded graph and the attributes it reads; ``concrete_args`` fixes inputs to
    values (``PH`` keeps one an input). Control flow on traced values raises ``TraceError``."""
    from .graph_module import GraphModule

    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if not isinstance(root, types.FunctionType) else root.__name__
    return GraphModule(tracer.root, graph, name)

