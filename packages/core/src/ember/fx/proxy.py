"""Proxies: the stand-ins for values that symbolic tracing runs a program on (torch.fx.proxy).

Every operation on a Proxy appends a Node to the tracer's graph and returns a new Proxy: Python
operators through the magic methods below, Ember functions and Tensor methods through
``__torch_function__``, attribute reads and method calls through ``__getattr__``. What a Proxy
cannot stand for (its truth value in an ``if``, its length, iteration of unknown length) raises.
"""

from __future__ import annotations

import dis
import enum
import inspect
import operator
import os
import traceback
from collections.abc import Callable, Iterator
from typing import Any

from .graph import Graph
from .node import Node, map_aggregate
from .operator_schemas import check_for_mutable_operation

__all__ = ["Attribute", "GraphAppendingTracer", "ParameterProxy", "Proxy", "TraceError", "TracerBase"]

_FX_DIR = os.path.dirname(os.path.abspath(__file__))


class TraceError(ValueError):
    """A traced program did something a symbolic trace cannot record (control flow on a value)."""


class TracerBase:
    """What Proxies need from a tracer: making nodes and turning values into node arguments."""

    graph: Graph
    record_stack_traces: bool = False
    # Whether a read of a module's buffer becomes a get_attr node (otherwise the tensor is a constant).
    proxy_buffer_attributes: bool = False
    # The function name the traced program's code gets in generated code.
    traced_func_name: str = "forward"
    # Whether recording a call of an op that writes to an argument raises (check_for_mutable_operation).
    check_mutable_operations: bool = False

    def create_node(self, kind: str, target: Any, args: tuple, kwargs: dict, name: str | None = None,
                    type_expr: Any = None) -> Node:
        if kind == "call_function" and self.check_mutable_operations:
            check_for_mutable_operation(target, args, kwargs)
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node: Node) -> Proxy:
        return Proxy(node, self)

    def create_proxy(self, kind: str, target: Any, args: tuple, kwargs: dict, name: str | None = None,
                     type_expr: Any = None, proxy_factory_fn: Callable[[Node], Proxy] | None = None) -> Proxy:
        """Records one operation: its arguments become node arguments (``create_arg``), and the
        node comes back wrapped in a Proxy."""
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        proxy = self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)
        if self.record_stack_traces and not proxy.node.stack_trace:
            frames = [f for f in traceback.extract_stack()
                      if not os.path.abspath(f.filename).startswith(_FX_DIR)]
            proxy.node.stack_trace = "".join(traceback.format_list(frames[-1:]))
        return proxy

    def create_arg(self, a: Any) -> Any:
        """A value as a node argument: Proxies become their nodes, containers are rebuilt, plain
        constants stay as they are; anything else raises NotImplementedError."""
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, tuple):
            items = tuple(self.create_arg(elem) for elem in a)
            return type(a)(*items) if hasattr(a, "_fields") else items
        if isinstance(a, list):
            return [self.create_arg(elem) for elem in a]
        if isinstance(a, dict):
            out = {}
            for key, value in a.items():
                key = self.create_arg(key)
                if isinstance(key, Node):
                    raise RuntimeError(f"Keys for dictionaries used as an argument cannot contain a Node. Got key: {key}")
                out[key] = self.create_arg(value)
            return out
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, range):
            return range(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, Node) or _is_constant(a):
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj: Proxy) -> bool:
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def iter(self, obj: Proxy) -> Iterator:
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the Proxy is used in a loop "
                         "or as a *args or **kwargs function argument. See the torch.fx docs on pytorch.org for a "
                         "more detailed explanation of what types of control flow can be traced, and check out the "
                         "Proxy docstring for help troubleshooting Proxy iteration errors")

    def keys(self, obj: Proxy) -> Any:
        return Attribute(obj, "keys")()


def _is_constant(a: Any) -> bool:
    import ember

    if a is None or a is Ellipsis or isinstance(a, (bool, int, float, complex, str, bytes, enum.Enum)):
        return True
    if isinstance(a, (ember.dtype, ember.device, ember.memory_format, ember.layout)):
        return True
    # functions and classes passed as arguments (an activation, a dtype class) are kept as they are
    return isinstance(a, type) or inspect.isroutine(a)


class GraphAppendingTracer(TracerBase):
    """A tracer that only appends to ``graph``: what a Proxy made without a tracer uses."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph


class Proxy:
    """Stands for the value of ``node`` while a program is traced."""

    def __init__(self, node: Node, tracer: TracerBase | None = None) -> None:
        self.tracer = GraphAppendingTracer(node.graph) if tracer is None else tracer
        self.node = node

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    __hash__ = object.__hash__

    def __getattr__(self, k: str) -> Attribute:
        if k.startswith("__") and k.endswith("__"):
            # protocol probes (copy, pickle, numpy) must not become graph nodes
            raise AttributeError(k)
        return Attribute(self, k)

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", "__call__", (self, *args), kwargs)

    def __iter__(self) -> Iterator[Proxy]:
        # `a, b = proxy`: the caller's next instruction says how many items it takes
        frame = inspect.currentframe()
        caller = frame.f_back if frame is not None else None
        if caller is not None:
            for inst in dis.get_instructions(caller.f_code):
                if inst.offset == caller.f_lasti:
                    if inst.opname == "UNPACK_SEQUENCE":
                        return (self[i] for i in range(inst.argval))
                    break
        return self.tracer.iter(self)

    def __bool__(self) -> bool:
        return self.tracer.to_bool(self)

    def __len__(self) -> int:
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want this call to be "
                           "recorded, please call torch.fx.wrap('len') at module scope")

    def keys(self) -> Any:
        return self.tracer.keys(self)

    @classmethod
    def __torch_function__(cls, orig_method: Callable, types: tuple, args: tuple = (), kwargs: dict | None = None) -> Proxy:
        import ember

        kwargs = kwargs or {}
        tracers: dict[TracerBase, None] = {}

        def find_tracer(a: Any) -> Any:
            if isinstance(a, Proxy):
                tracers.setdefault(a.tracer)
            return a

        map_aggregate(args, find_tracer)
        map_aggregate(kwargs, find_tracer)
        if len(tracers) > 1:
            raise RuntimeError(f"Found multiple different tracers {list(tracers)} while trying to trace operations "
                               f"{orig_method}")
        tracer = next(iter(tracers))
        name = getattr(orig_method, "__name__", None)
        if name is not None and getattr(ember.Tensor, name, None) is orig_method:
            return tracer.create_proxy("call_method", name, args, kwargs)
        return tracer.create_proxy("call_function", orig_method, args, kwargs)


class Attribute(Proxy):
    """``proxy.attr``: a call_method node when called, otherwise (once used) a getattr node."""

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node: Node | None = None

    @property
    def node(self) -> Node:  # type: ignore[override]
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr, (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root, *args), kwargs)


class ParameterProxy(Proxy):
    """A Proxy for a module's parameter: its shape and size are known while tracing, so a program
    may branch on them."""

    def __init__(self, tracer: TracerBase, node: Node, name: str, param: Any) -> None:
        super().__init__(node, tracer)
        self.param = param
        self.name = name

    def __repr__(self) -> str:
        return f"ParameterProxy({self.name})"

    @property
    def shape(self) -> Any:
        return self.param.shape

    def size(self, dim: int | None = None) -> Any:
        return self.param.size() if dim is None else self.param.size(dim)

    def dim(self) -> int:
        return self.param.dim()

    @property
    def ndim(self) -> int:
        return self.param.ndim

    def numel(self) -> int:
        return self.param.numel()

    def nelement(self) -> int:
        return self.param.nelement()


def _binary(target: Callable) -> tuple[Callable, Callable]:
    def forward(self: Proxy, other: Any) -> Proxy:
        return self.tracer.create_proxy("call_function", target, (self, other), {})

    def reflected(self: Proxy, other: Any) -> Proxy:
        return self.tracer.create_proxy("call_function", target, (other, self), {})

    return forward, reflected


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "lshift", "rshift", "and_", "or_",
              "xor"):
    _forward, _reflected = _binary(getattr(operator, _name))
    _dunder = _name.rstrip("_")
    setattr(Proxy, f"__{_dunder}__", _forward)
    setattr(Proxy, f"__r{_dunder}__", _reflected)

for _name in ("eq", "ne", "lt", "le", "gt", "ge", "getitem"):
    setattr(Proxy, f"__{_name}__", _binary(getattr(operator, _name))[0])


def _unary(target: Callable) -> Callable:
    def method(self: Proxy) -> Proxy:
        return self.tracer.create_proxy("call_function", target, (self,), {})

    return method


for _name in ("neg", "pos", "invert", "abs"):
    setattr(Proxy, f"__{_name}__", _unary(getattr(operator, _name)))
