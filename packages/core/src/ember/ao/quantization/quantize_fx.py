"""FX graph mode quantization (torch.ao.quantization.quantize_fx): prepare_fx traces a model with
ember.fx, fuses conv/linear with the BatchNorm and ReLU after them, and inserts observers where
PyTorch 2.13's does; after calibration, convert_fx swaps the observed ops for quantized ones.

What PyTorch's default (native/x86) backend config quantizes and Ember has kernels for:
  * nn.Linear, nn.Conv1d/2d/3d, fused with a BatchNorm (folded, eval mode) and/or a ReLU (module or
    F.relu) into LinearReLU / ConvReLU1d/2d/3d; in prepare_qat_fx their QAT forms (ember.ao.nn.qat's
    Linear / Conv1d/2d/3d, ember.ao.nn.intrinsic.qat's LinearReLU, LinearBn1d, ConvReLU1d/2d/3d,
    ConvBn1d/2d/3d and ConvBnReLU1d/2d/3d, the BatchNorm kept unfolded while training), which
    convert_fx quantizes with the BatchNorm folded in;
  * operator.add / ember.add / operator.mul / ember.mul of two tensors (quantized add / mul, the
    ReLU after them fused: nn.ReLU, F.relu or ember.relu), and of a tensor and a number (add_scalar /
    mul_scalar, whose output parameters the kernel derives from the input's);
  * ember.cat (all inputs and the output share one observer, as in PyTorch);
  * ops whose output takes the input's quantization parameters (one observer instance serves input
    and output, PyTorch's OUTPUT_SHARE_OBSERVER_WITH_INPUT): max/avg/adaptive-avg pooling, ReLU,
    ReLU6, Hardtanh, Identity, flatten, mean, narrow, stack, squeeze, unsqueeze, transpose, and the
    methods view, reshape, permute, contiguous, detach, repeat, squeeze, unsqueeze, transpose, mean,
    relu;
  * nn.Dropout, nn.BatchNorm2d/3d (and the BNReLU2d/3d fusions), nn.Hardswish, with observers of
    their own, and F.hardswish (quantized hardswish);
  * nn.ConvTranspose1d/2d/3d (nnq.ConvTranspose1d/2d/3d, the weight quantized per tensor at
    convert: the default qconfig mappings give them a per-tensor weight observer);
  * F.linear and F.conv1d/2d/3d (ember.conv1d/2d/3d) on a get_attr weight, fused with an nn.ReLU /
    F.relu after them: the weight input gets the qconfig's weight observer and convert_fx quantizes
    the weight once (PyTorch's prepacked weight) for the quantized linear / conv;
  * the fixed-qparams ops (sigmoid, tanh, hardsigmoid: modules, functions and methods; nn.Softmax):
    the qconfig must give a FixedQParamsObserver / FixedQParamsFakeQuantize of the op's range (the
    default mappings do; another qconfig leaves the op float, with PyTorch's warning); sigmoid and
    tanh (nn.Sigmoid, nn.Tanh, ember.sigmoid / tanh, F.sigmoid / tanh, the methods) then run on
    the quantized tensor;
  * nn.Embedding / nn.EmbeddingBag with a weight-only float_qparams qconfig (quint8 or quint4x2
    rows; prepare_fx only): nnq.Embedding / EmbeddingBag.
Model inputs are quantized at their first quantized consumer and outputs dequantized. Ops the backend
config lists for which Ember has no quantized kernel get PyTorch's observers but run in float
between a dequantize and a quantize with those parameters: nn.LayerNorm / F.layer_norm, nn.ELU /
F.elu, nn.LeakyReLU / F.leaky_relu, nn.PReLU, nn.InstanceNorm1d/2d/3d / F.instance_norm,
F.group_norm (float in PyTorch too), F.conv_transpose1d/2d/3d (PyTorch 2.13's convert_fx raises on
them: its prepacking call misses arguments), ember.matmul, the hardsigmoid ops, nn.Softmax, and
the in-place sigmoid_ / tanh_ methods. Every other op (nn.GroupNorm, F.softmax, F.gelu, RNNs, ...)
runs in float between a dequantize and the next quantize, as in PyTorch.

The observed model and the converted one compute the integers PyTorch's do (the same qparams from
the same observers seeing the same tensors, the same quantized kernels); node and observer names may
differ. Not here: standalone and custom modules, equalization, dynamic, weight-only and float16
configs, reference (is_reference) models, prepare_custom_config other than non-traceable modules."""

from __future__ import annotations

import copy
import operator
import re
import warnings
from collections import defaultdict

from ... import _C
from ...fx import GraphModule, Tracer
from ...fx.node import Node
from ...nn import functional as F
from ...nn import modules as _nn
from ..nn import intrinsic as nni
from ..nn import qat as nnqat
from ..nn import quantized as nnq
from ..nn.intrinsic import qat as nniqat
from ..nn.intrinsic import quantized as nniq
from ..nn.quantized.modules import _add_scalar, _mul_scalar
from .fake_quantize import FakeQuantizeBase
from .fuse_modules import fuse_known_modules
from .observer import ObserverBase, PlaceholderObserver, _PartialWrapper
from .qconfig_mapping import QConfigMapping, ReuseInputObserver
from .quantize import convert as _eager_convert
from .quantize import propagate_qconfig_

__all__ = ["convert_fx", "fuse_fx", "prepare_fx", "prepare_qat_fx"]

_QUANT_DTYPES = (_C.quint8, _C.qint8, _C.qint32)


# ---- what the backend config lists (and Ember lowers) ----------------------------------------------


def _ops():
    import ember

    relus = (_nn.ReLU, F.relu, ember.relu)
    weighted = {
        _nn.Linear: nnq.Linear,
        _nn.Conv1d: nnq.Conv1d,
        _nn.Conv2d: nnq.Conv2d,
        _nn.Conv3d: nnq.Conv3d,
        nni.LinearReLU: nniq.LinearReLU,
        nni.ConvReLU1d: nniq.ConvReLU1d,
        nni.ConvReLU2d: nniq.ConvReLU2d,
        nni.ConvReLU3d: nniq.ConvReLU3d,
        nnqat.Linear: nnq.Linear,
        nnqat.Conv1d: nnq.Conv1d,
        nnqat.Conv2d: nnq.Conv2d,
        nnqat.Conv3d: nnq.Conv3d,
        nniqat.LinearReLU: nniq.LinearReLU,
        nniqat.LinearBn1d: nnq.Linear,
        nniqat.ConvReLU1d: nniq.ConvReLU1d,
        nniqat.ConvReLU2d: nniq.ConvReLU2d,
        nniqat.ConvReLU3d: nniq.ConvReLU3d,
        nniqat.ConvBn1d: nnq.Conv1d,
        nniqat.ConvBn2d: nnq.Conv2d,
        nniqat.ConvBn3d: nnq.Conv3d,
        nniqat.ConvBnReLU1d: nniq.ConvReLU1d,
        nniqat.ConvBnReLU2d: nniq.ConvReLU2d,
        nniqat.ConvBnReLU3d: nniq.ConvReLU3d,
    }
    default = {
        _nn.Dropout: nnq.Dropout,
        _nn.BatchNorm2d: nnq.BatchNorm2d,
        _nn.BatchNorm3d: nnq.BatchNorm3d,
        nni.BNReLU2d: nniq.BNReLU2d,
        nni.BNReLU3d: nniq.BNReLU3d,
        _nn.Hardswish: nnq.Hardswish,
    }
    share_modules = {
        _nn.AdaptiveAvgPool1d,
        _nn.AdaptiveAvgPool2d,
        _nn.AdaptiveAvgPool3d,
        _nn.AvgPool1d,
        _nn.AvgPool2d,
        _nn.AvgPool3d,
        _nn.Hardtanh,
        _nn.Identity,
        _nn.MaxPool1d,
        _nn.MaxPool2d,
        _nn.MaxPool3d,
        _nn.ReLU,
        _nn.ReLU6,
    }
    share_functions = {
        ember.adaptive_avg_pool1d,
        F.adaptive_avg_pool2d,
        F.adaptive_avg_pool3d,
        F.hardtanh,
        F.max_pool1d,
        F.max_pool2d,
        F.max_pool3d,
        F.relu,
        F.relu6,
        ember.avg_pool1d,
        F.avg_pool2d,
        F.avg_pool3d,
        ember.flatten,
        ember.mean,
        ember.narrow,
        ember.transpose,
        ember.squeeze,
        ember.stack,
        ember.unsqueeze,
    }
    share_methods = {
        "contiguous",
        "detach",
        "mean",
        "permute",
        "repeat",
        "reshape",
        "relu",
        "squeeze",
        "transpose",
        "unsqueeze",
        "view",
    }
    binary = (operator.add, ember.add, operator.mul, ember.mul)
    return relus, weighted, default, share_modules, share_functions, share_methods, binary, ember.cat


def _extra_ops() -> dict:
    """The rest of the default backend config: fixed-qparams ops, ops with observers of their own
    (lowered where Ember has the quantized op, else float between a dequantize and a quantize),
    functional linear / conv (the weight input observed with the qconfig's weight observer) and the
    weight-only embeddings."""
    import ember

    return {
        "fixed_modules": {_nn.Hardsigmoid, _nn.Sigmoid, _nn.Softmax, _nn.Tanh},
        "fixed_functions": {F.hardsigmoid, ember.sigmoid, ember.tanh, F.sigmoid, F.tanh},
        "fixed_methods": {"hardsigmoid", "hardsigmoid_", "sigmoid", "sigmoid_", "tanh", "tanh_"},
        # fixed-qparams ops with a quantized kernel in Ember (sigmoid / tanh of a quint8 tensor)
        "fixed_lowered": {
            _nn.Sigmoid,
            _nn.Tanh,
            ember.sigmoid,
            ember.tanh,
            F.sigmoid,
            F.tanh,
            "sigmoid",
            "tanh",
        },
        "other_modules": {
            _nn.ELU,
            _nn.LeakyReLU,
            _nn.InstanceNorm1d,
            _nn.InstanceNorm2d,
            _nn.InstanceNorm3d,
            _nn.LayerNorm,
            _nn.PReLU,
        },
        "other_functions": {
            F.elu,
            F.hardswish,
            F.leaky_relu,
            F.layer_norm,
            F.group_norm,
            F.instance_norm,
            ember.matmul,
        },
        "transposed_modules": {
            _nn.ConvTranspose1d: nnq.ConvTranspose1d,
            _nn.ConvTranspose2d: nnq.ConvTranspose2d,
            _nn.ConvTranspose3d: nnq.ConvTranspose3d,
        },
        "transposed_functions": {F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d},
        "weighted_functions": {
            F.linear: 0,
            F.conv1d: 1,
            F.conv2d: 2,
            F.conv3d: 3,
            ember.conv1d: 1,
            ember.conv2d: 2,
            ember.conv3d: 3,
        },
        "embeddings": {_nn.Embedding: nnq.Embedding, _nn.EmbeddingBag: nnq.EmbeddingBag},
    }


def _function_as_method(target):
    """F.sigmoid / F.tanh: PyTorch's are Python functions calling the tensor method, so its tracer
    records the method; Ember's tracer records the function, looked up as that method."""
    return {F.sigmoid: "sigmoid", F.tanh: "tanh"}.get(target) if callable(target) else None


def _is_obs(module) -> bool:
    return isinstance(module, (ObserverBase, FakeQuantizeBase, PlaceholderObserver, ReuseInputObserver))


# ---- qconfig equality and per-node qconfigs (PyTorch's qconfig_mapping_utils) -----------------------


def _ctr_equals(a, b) -> bool:
    if isinstance(a, _PartialWrapper) and isinstance(b, _PartialWrapper):
        ka, kb = dict(a.keywords), dict(b.keywords)
        same = True
        if "observer" in ka and "observer" in kb:
            same = _ctr_equals(ka.pop("observer"), kb.pop("observer"))
        return same and ka == kb and a.func == b.func and a.args == b.args
    return a == b


def _qconfig_equals(q1, q2) -> bool:
    if q1 is None or q2 is None:
        return q1 == q2
    try:
        return _ctr_equals(q1.activation, q2.activation) and _ctr_equals(q1.weight, q2.weight)
    except AttributeError:
        return q1 == q2


def _parent_name(target: str) -> tuple[str, str]:
    r = target.rsplit(".", 1)
    return ("", r[0]) if len(r) == 1 else (r[0], r[1])


def _module_name_qconfig(mapping: QConfigMapping, name: str, fallback):
    if name == "":
        return fallback
    if name in mapping.module_name_qconfigs:
        return mapping.module_name_qconfigs[name]
    return _module_name_qconfig(mapping, _parent_name(name)[0], fallback)


def _type_or_name_qconfig(mapping: QConfigMapping, module_type, module_name: str, fallback):
    qconfig = mapping.object_type_qconfigs.get(module_type, fallback)
    for regex, regex_qconfig in mapping.module_name_regex_qconfigs.items():
        if re.match(regex, module_name):
            qconfig = regex_qconfig
            break
    return _module_name_qconfig(mapping, module_name, qconfig)


def _order_qconfig(mapping: QConfigMapping, path: str, object_type, index: int, fallback):
    for (name, kind, i), qconfig in mapping.module_name_object_type_order_qconfigs.items():
        if name == path and kind == object_type and i == index:
            return qconfig
    return fallback


def _update_qconfig_for_fusion(gm: GraphModule, mapping: QConfigMapping) -> None:
    by_type = mapping.object_type_qconfigs
    if not by_type:
        return
    modules = dict(gm.named_modules())
    for node in gm.graph.nodes:
        if node.op != "call_module" or not isinstance(modules.get(node.target), nni._FusedModule):
            continue
        parts = list(modules[node.target]._modules.values())
        fused_qconfig = by_type.get(type(parts[0]), None)
        for part in parts[1:]:
            if not _qconfig_equals(by_type.get(type(part), None), fused_qconfig):
                raise LookupError(
                    f"During fusion, we need to specify the same qconfigs for all module types in "
                    f"{type(modules[node.target])} offending type: {type(part)}"
                )
        if fused_qconfig is not None:
            by_type[type(modules[node.target])] = fused_qconfig


def _node_name_to_qconfig(gm: GraphModule, mapping: QConfigMapping, scopes: dict) -> dict:
    modules = dict(gm.named_modules(remove_duplicate=False))
    glob = mapping.global_qconfig
    counters: dict = defaultdict(lambda: defaultdict(int))
    out = {}
    for node in gm.graph.nodes:
        qconfig = None
        if node.op == "get_attr":
            parent = _parent_name(node.target)[0]
            qconfig = _type_or_name_qconfig(mapping, type(modules[parent]), parent, glob)
        elif node.op == "call_function" and _function_as_method(node.target) is not None:
            path, scope_type = scopes.get(node.name, ("", None))
            qconfig = _type_or_name_qconfig(mapping, _function_as_method(node.target), path, glob)
            qconfig = _type_or_name_qconfig(mapping, scope_type, path, qconfig)
        elif node.op == "call_function":
            fn_qconfig = mapping.object_type_qconfigs.get(node.target, glob)
            path, scope_type = scopes.get(node.name, ("", None))
            qconfig = _type_or_name_qconfig(mapping, scope_type, path, fn_qconfig)
            index = counters[path][node.target]
            counters[path][node.target] += 1
            qconfig = _order_qconfig(mapping, path, node.target, index, qconfig)
        elif node.op == "call_method":
            path, scope_type = scopes.get(node.name, ("", None))
            qconfig = _type_or_name_qconfig(mapping, node.target, path, glob)
            qconfig = _type_or_name_qconfig(mapping, scope_type, path, qconfig)
        elif node.op == "call_module":
            module = modules[node.target]
            if _is_obs(module):
                continue
            qconfig = _type_or_name_qconfig(mapping, type(module), node.target, glob)
            path, scope_type = scopes.get(node.name, (node.target, type(module)))
            parent = _parent_name(path)[0]
            index = counters[parent][scope_type]
            counters[parent][scope_type] += 1
            qconfig = _order_qconfig(mapping, parent, scope_type, index, qconfig)
            module.qconfig = qconfig
        out[node.name] = qconfig
    return out


# ---- tracing and fusion ------------------------------------------------------------------------------


class QuantizationTracer(Tracer):
    """The tracer prepare_fx uses: Ember's leaf modules, the fused modules and the modules
    prepare_custom_config names as non-traceable are single nodes; each node's scope (the
    qualified name and type of the module whose forward made it) is recorded, for
    QConfigMapping's module_name rules on functions and methods."""

    def __init__(self, skipped_module_names: list, skipped_module_classes: list) -> None:
        super().__init__()
        self.skipped_module_names = list(skipped_module_names)
        self.skipped_module_classes = list(skipped_module_classes)
        self.scope = ("", None)
        self.node_name_to_scope: dict = {}

    def is_leaf_module(self, m, module_qualified_name: str) -> bool:
        return (
            super().is_leaf_module(m, module_qualified_name)
            or module_qualified_name in self.skipped_module_names
            or type(m) in self.skipped_module_classes
            or isinstance(m, nni._FusedModule)
        )

    def call_module(self, m, forward, args, kwargs):
        saved = self.scope
        self.scope = (self.path_of_module(m), type(m))
        try:
            return super().call_module(m, forward, args, kwargs)
        finally:
            self.scope = saved

    def create_node(self, *args, **kwargs):
        node = super().create_node(*args, **kwargs)
        self.node_name_to_scope[node.name] = self.scope
        return node


def _fusion_patterns():
    relu_like = (_nn.ReLU, F.relu)
    patterns = []
    for conv, bn in (
        (_nn.Conv1d, _nn.BatchNorm1d),
        (_nn.Conv2d, _nn.BatchNorm2d),
        (_nn.Conv3d, _nn.BatchNorm3d),
    ):
        patterns.append((conv, bn, relu_like))
    for conv, bn in (
        (_nn.Conv1d, _nn.BatchNorm1d),
        (_nn.Conv2d, _nn.BatchNorm2d),
        (_nn.Conv3d, _nn.BatchNorm3d),
    ):
        patterns += [(conv, bn), (conv, relu_like)]
    patterns += [
        (_nn.Linear, relu_like),
        (_nn.Linear, _nn.BatchNorm1d),
        (_nn.BatchNorm2d, relu_like),
        (_nn.BatchNorm3d, relu_like),
    ]
    return patterns


def _node_is(node, kind, modules) -> bool:
    if isinstance(kind, tuple):
        return any(_node_is(node, k, modules) for k in kind)
    if not isinstance(node, Node):
        return False
    if isinstance(kind, type):
        return node.op == "call_module" and type(modules[node.target]) is kind
    return node.op == "call_function" and node.target is kind


def _match_chain(node, pattern, modules):
    """The nodes (first to last) of pattern ending at node, each before the last with one user and
    one argument, or None."""
    chain = [node]
    if not _node_is(node, pattern[-1], modules):
        return None
    for kind in reversed(pattern[:-1]):
        cur = chain[0]
        if len(cur.args) != 1:
            return None
        prev = cur.args[0]
        if not _node_is(prev, kind, modules) or len(prev.users) > 1:
            return None
        chain.insert(0, prev)
    return chain


def _fuse_graph(gm: GraphModule, is_qat: bool) -> GraphModule:
    modules = dict(gm.named_modules())
    patterns = sorted(_fusion_patterns(), key=len, reverse=True)
    matched: set = set()
    fusions = []
    for node in reversed(list(gm.graph.nodes)):
        if node in matched:
            continue
        for pattern in patterns:
            chain = _match_chain(node, pattern, modules)
            if chain is not None and not any(n in matched for n in chain):
                matched.update(chain)
                fusions.append(chain)
                break
    for chain in fusions:
        parts = []
        for n in chain:
            if n.op == "call_module":
                parts.append(modules[n.target])
            else:  # F.relu
                relu = _nn.ReLU()
                relu.training = gm.training
                parts.append(relu)
        types = tuple(type(p) for p in parts)
        if (
            not is_qat
            and types[0] in (_nn.Conv1d, _nn.Conv2d, _nn.Conv3d)
            and len(types) > 1
            and types[1] is not _nn.ReLU
            and parts[0].training != parts[1].training
        ):
            raise AssertionError("Conv and BN both must be in the same mode (train or eval).")
        fused = fuse_known_modules(parts, is_qat)[0]
        root = chain[0]
        parent, name = _parent_name(root.target)
        setattr(gm.get_submodule(parent) if parent else gm, name, fused)
        modules[root.target] = fused
        last = chain[-1]
        if last is not root:
            last.replace_all_uses_with(root)
            for n in reversed(chain[1:]):
                gm.graph.erase_node(n)
    new = GraphModule(gm, gm.graph)
    new.meta.update(gm.meta)
    return new


def _trace(model, prepare_custom_config) -> tuple[GraphModule, dict]:
    names, classes = [], []
    if prepare_custom_config is not None:
        config = prepare_custom_config
        if not isinstance(config, dict):
            raise NotImplementedError(
                "prepare_fx: PrepareCustomConfig objects are not in Ember; pass a dict with "
                '"non_traceable_module_name" / "non_traceable_module_class"'
            )
        warnings.warn(
            "Passing a prepare_custom_config_dict to prepare is deprecated and will not be supported in a "
            "future version. Please pass in a PrepareCustomConfig instead.",
            FutureWarning,
            stacklevel=3,
        )
        for key in config:
            if key not in ("non_traceable_module_name", "non_traceable_module_class", "preserved_attributes"):
                raise NotImplementedError(
                    f"prepare_fx: prepare_custom_config key {key!r} is not supported in Ember"
                )
        names = list(config.get("non_traceable_module_name", []))
        classes = list(config.get("non_traceable_module_class", []))
    tracer = QuantizationTracer(names, classes)
    graph = tracer.trace(model)
    gm = GraphModule(model, graph, type(model).__name__)
    return gm, tracer.node_name_to_scope


def fuse_fx(model, fuse_custom_config=None, backend_config=None):
    """The model traced with ember.fx, each Conv1d/2d/3d + BatchNorm (+ ReLU), Conv + ReLU,
    Linear + ReLU, Linear + BatchNorm1d and BatchNorm2d/3d + ReLU fused (BatchNorms folded into
    the layer's weights: eval mode only, PyTorch's "Fusion only for eval!")."""
    if backend_config is not None:
        raise NotImplementedError("fuse_fx: custom backend_config is not supported in Ember")
    gm, _ = _trace(model, None)
    return _fuse_graph(gm, False)


# ---- observer insertion (PyTorch's insert_observers_for_model, for the ops above) -------------------

_FP32 = object()  # target dtype of float values


def _ctr_dtype(ctr):
    if ctr is None:
        return None, False
    if ctr is _FP32:
        return _C.float32, False
    obs = ctr()
    return obs.dtype, bool(getattr(obs, "is_dynamic", False))


class _Match:
    __slots__ = ("kind", "nodes", "root", "last", "qconfig", "num_tensor_args")

    def __init__(self, kind, nodes, qconfig, num_tensor_args=0):
        self.kind, self.nodes, self.qconfig, self.num_tensor_args = kind, nodes, qconfig, num_tensor_args
        self.root, self.last = nodes[0], nodes[-1]


def _tensor_arg_count(node) -> int:
    return sum(isinstance(a, Node) for a in node.args)


def _find_matches(gm: GraphModule, node_qconfig: dict) -> dict:
    relus, weighted, default, share_modules, share_functions, share_methods, binary, cat = _ops()
    extra = _extra_ops()
    modules = dict(gm.named_modules(remove_duplicate=False))
    matches: dict = {}

    def single(node):
        if node.op == "call_module":
            kind = type(modules[node.target])
            if kind in weighted:
                return "weighted"
            if kind in default:
                return "default"
            if kind in share_modules:
                return "share"
            if kind in extra["fixed_modules"]:
                return "fixed"
            if kind in extra["other_modules"]:
                return "other"
            if kind in extra["transposed_modules"]:
                return "transposed"
            if kind in extra["embeddings"]:
                return "embedding"
        elif node.op == "call_function":
            if node.target is cat:
                return "share"
            if node.target in share_functions:
                return "share"
            if node.target in binary and not node.kwargs and len(node.args) == 2:
                return "binary"
            if node.target in extra["fixed_functions"]:
                return "fixed"
            if node.target in extra["other_functions"]:
                return "other"
            if node.target in extra["transposed_functions"]:
                return "transposed"
            if node.target in extra["weighted_functions"]:
                return "wfunc"
        elif node.op == "call_method":
            if node.target in share_methods:
                return "share"
            if node.target in extra["fixed_methods"]:
                return "fixed"
        return None

    def is_relu(node):
        if node.op == "call_module":
            return type(modules[node.target]) is _nn.ReLU
        return node.op == "call_function" and node.target in relus[1:]

    for node in reversed(list(gm.graph.nodes)):
        if node.name in matches:
            continue
        if is_relu(node) and len(node.args) == 1 and isinstance(node.args[0], Node):
            prev = node.args[0]
            if prev.name not in matches and len(prev.users) <= 1 and single(prev) == "binary":
                m = _Match("binary", [prev, node], node_qconfig.get(node.name), _tensor_arg_count(prev))
                matches[prev.name] = matches[node.name] = m
                continue
        # functional linear / conv + nn.ReLU or F.relu (PyTorch's (F.linear, F.relu) patterns)
        if (
            (_node_is(node, _nn.ReLU, modules) or _node_is(node, F.relu, modules))
            and len(node.args) == 1
            and isinstance(node.args[0], Node)
        ):
            prev = node.args[0]
            if prev.name not in matches and len(prev.users) <= 1 and single(prev) == "wfunc":
                m = _Match("wfunc", [prev, node], node_qconfig.get(node.name), _tensor_arg_count(prev))
                matches[prev.name] = matches[node.name] = m
                continue
        kind = single(node)
        if kind is not None:
            matches[node.name] = _Match(kind, [node], node_qconfig.get(node.name), _tensor_arg_count(node))
    return matches


def _share_observers(match: _Match) -> bool:
    return match.kind == "share" or (match.kind == "binary" and match.num_tensor_args == 1)


def _no_tensors(node, modules, cache) -> bool:
    if not isinstance(node, Node):
        return True
    if node in cache:
        return cache[node]
    if node.op in ("placeholder", "get_attr"):
        result = False
    elif node.op == "call_module":
        result = _no_tensors(node.args[0], modules, cache) if _is_obs(modules[node.target]) else False
    elif node.op == "call_function" and node.target is operator.getitem:
        result = _no_tensors(node.args[0], modules, cache)
    elif node.target is getattr and node.args[1] in ("ndim", "shape"):
        result = True
    elif node.op == "call_method" and node.target == "size":
        result = True
    else:
        result = True
        for arg in node.args:
            items = arg if isinstance(arg, (list, tuple)) else [arg]
            if any(isinstance(a, Node) and not _no_tensors(a, modules, cache) for a in items):
                result = False
                break
    cache[node] = result
    return result


_FIXED_SUGGESTION = (
    "Please use ember.ao.quantization.get_default_qconfig_mapping or "
    "ember.ao.quantization.get_default_qat_qconfig_mapping. Example:\n"
    '    qconfig_mapping = get_default_qconfig_mapping("fbgemm")\n'
    "    model = prepare_fx(model, qconfig_mapping, example_inputs)"
)


def _fixed_qparams_of(node, modules) -> tuple[float, int]:
    """The output parameters the backend requires of a fixed-qparams op: tanh's (2/256, 128), the
    others' (1/256, 0)."""
    import ember

    tanh = node.target in ("tanh", "tanh_", ember.tanh, F.tanh) or (
        node.op == "call_module" and type(modules[node.target]) is _nn.Tanh
    )
    return (2.0 / 256.0, 128) if tanh else (1.0 / 256.0, 0)


def _supported(qconfig, kind: str, fixed=None) -> bool:
    """Whether the default backend config has a static quint8 entry (qint8 weights for the
    weighted ops) that the qconfig's dtypes match; for the embeddings, a weight-only quint8 /
    quint4x2 entry (float activations, per-row float qparams); for a fixed-qparams op, a
    FixedQParamsObserver / FixedQParamsFakeQuantize with the op's (scale, zero point)."""
    from ..._quantized import per_channel_affine_float_qparams
    from .fake_quantize import FixedQParamsFakeQuantize
    from .observer import FixedQParamsObserver

    activation = qconfig.activation()
    if kind == "embedding":
        weight = qconfig.weight() if qconfig.weight is not None else None
        return (
            activation.dtype == _C.float32
            and weight is not None
            and weight.dtype in (_C.quint8, _C.quint4x2)
            and getattr(weight, "qscheme", None) == per_channel_affine_float_qparams
        )
    if kind == "fixed" and activation.dtype == _C.quint8:
        if not isinstance(activation, (FixedQParamsObserver, FixedQParamsFakeQuantize)):
            warnings.warn(
                f"QConfig must specify a FixedQParamsObserver or a FixedQParamsFakeQuantize for fixed "
                f"qparams ops, ignoring {qconfig}.\n{_FIXED_SUGGESTION}",
                stacklevel=4,
            )
            return False
        scale, zero_point = float(activation.scale.reshape(-1)[0]), int(activation.zero_point.reshape(-1)[0])
        if (scale, zero_point) != fixed:
            warnings.warn(
                f"QConfig fixed scale ({scale}) and zero point ({zero_point}) do not match the backend's "
                f"({fixed[0]} and {fixed[1]}), ignoring {qconfig}.\n{_FIXED_SUGGESTION}",
                stacklevel=4,
            )
            return False
    if isinstance(activation, ReuseInputObserver):
        return True
    if activation.dtype != _C.quint8 or getattr(activation, "is_dynamic", False):
        return False
    if kind in ("weighted", "wfunc", "transposed"):
        return _ctr_dtype(qconfig.weight)[0] == _C.qint8
    return True


class _Observing:
    """One pass over the traced graph inserting observers, as PyTorch's prepare."""

    def __init__(self, gm: GraphModule, matches: dict) -> None:
        self.gm, self.graph, self.matches = gm, gm.graph, matches
        self.info: dict = {}  # node -> {"in": ctr, "out": ctr, "share": bool, "reuse": bool}
        self.modules = dict(gm.named_modules(remove_duplicate=False))
        cache: dict = {}
        for node in gm.graph.nodes:
            self.info[node] = {"in": _FP32, "out": _FP32, "share": False, "reuse": False}
        for match in set(matches.values()):
            if match.qconfig is None:
                continue
            for node in match.nodes:
                if _no_tensors(node, self.modules, cache):
                    self.info[node] = {"in": None, "out": None, "share": False, "reuse": False}
                else:
                    self.info[node] = {
                        "in": match.qconfig.activation,
                        "out": match.qconfig.activation,
                        "share": _share_observers(match),
                        "reuse": isinstance(match.qconfig.activation(), ReuseInputObserver),
                    }
        for node in gm.graph.nodes:
            if node.op in ("call_module", "call_method", "call_function") and _no_tensors(
                node, self.modules, cache
            ):
                self.info[node] = {"in": None, "out": None, "share": False, "reuse": False}

    def is_obs_node(self, node) -> bool:
        return isinstance(node, Node) and node.op == "call_module" and _is_obs(self.modules[node.target])

    def output_dtype(self, arg):
        if self.is_obs_node(arg):
            return _ctr_dtype(self.info[arg.args[0]]["out"])
        return _ctr_dtype(self.info[arg]["out"]) if arg in self.info else _ctr_dtype(_FP32)

    def insert(self, node, obs) -> Node:
        i = 0
        while hasattr(self.gm, f"activation_post_process_{i}"):
            i += 1
        name = f"activation_post_process_{i}"
        setattr(self.gm, name, obs)
        self.modules[name] = obs
        with self.graph.inserting_after(node):
            return self.graph.create_node("call_module", name, (node,), {})

    def arg_ctr(self, match, node, key):
        """The observer constructor for input `key` (a position or a keyword) of a match's root:
        the activation's for every input of the ops above; for the fixed-qparams and other
        single-input ops only the first input (weights, biases and the like stay float); for
        functional linear / conv the qconfig's weight observer on the weight, the bias float."""
        import ember

        in_ctr = self.info[node]["in"]
        if match.kind in ("weighted", "default", "share", "binary") or (
            match.kind == "other" and node.op == "call_function" and node.target is ember.matmul
        ):
            return in_ctr
        if key in (0, "input"):
            return in_ctr
        if match.kind == "wfunc" and key in (1, "weight"):
            return match.qconfig.weight
        return None

    def input_observer(self, node, arg, in_ctr=None):
        if in_ctr is None:
            in_ctr = self.info[node]["in"]
        if isinstance(arg, (list, tuple)):
            return type(arg)(self.input_observer(node, a, in_ctr) for a in arg)
        if not isinstance(arg, Node):
            return arg
        info = self.info[node]
        in_dtype, in_dynamic = _ctr_dtype(in_ctr)
        out_dtype, _ = self.output_dtype(arg)
        if in_dynamic or info["reuse"]:
            return arg
        needs = (
            in_dtype in _QUANT_DTYPES and out_dtype in _QUANT_DTYPES + (_C.float32,) and in_dtype != out_dtype
        )
        if not needs:
            return arg
        new_obs = in_ctr()
        for user in arg.users:
            if (
                user.op == "call_module"
                and type(self.modules[user.target]) is type(new_obs)
                and self.modules[user.target].dtype == in_dtype
            ):
                return user
        return self.insert(arg, new_obs)

    def observe_input(self, match, node, key, arg):
        ctr = self.arg_ctr(match, node, key)
        return arg if ctr is None else self.input_observer(node, arg, ctr)

    def share(self, node) -> bool:
        first = next((a for a in node.args if isinstance(a, (Node, list, tuple))), None)
        if first is None:
            return False
        cur = first[0] if isinstance(first, (list, tuple)) else first
        while not self.is_obs_node(cur):
            if not isinstance(cur, Node) or cur.op == "placeholder":
                return False
            back = next((a for a in cur.args if isinstance(a, Node)), None)
            if back is None:
                return False
            cur = back
        shared = self.modules[cur.target]
        if isinstance(first, (list, tuple)):
            for other in first[1:]:
                while not self.is_obs_node(other):
                    if len(other.args) < 1:
                        return False
                    other = other.args[0]
                self._alias(other.target, shared)
        for user in node.users:
            self._alias(user.target, shared)
        return True

    def _alias(self, target: str, module) -> None:
        parent, name = _parent_name(target)
        setattr(self.gm.get_submodule(parent) if parent else self.gm, name, module)
        self.modules[target] = module

    def run(self) -> None:
        for node in list(self.graph.nodes):
            if node.op == "placeholder":
                continue
            if node.op == "output":
                self.before_output(node)
                continue
            match = self.matches.get(node.name)
            if match is None or match.qconfig is None or self.info[node]["out"] is None:
                continue
            if node is match.root:
                node.args = tuple(self.observe_input(match, node, i, a) for i, a in enumerate(node.args))
                node.kwargs = {k: self.observe_input(match, node, k, v) for k, v in node.kwargs.items()}
            if node is not match.last:
                continue
            out_dtype, out_dynamic = _ctr_dtype(self.info[node]["out"])
            if out_dtype not in _QUANT_DTYPES or out_dynamic:
                continue
            obs_node = self.insert(node, self.info[node]["out"]())
            for user in list(node.users):
                if user is not obs_node:
                    user.replace_input_with(node, obs_node)
            same_graph = not (
                out_dtype == _C.quint8
                and node.args
                and isinstance(node.args[0], Node)
                and node.args[0].op == "placeholder"
            )
            if (self.info[node]["share"] and same_graph) or self.info[node]["reuse"]:
                if not self.share(node):
                    obs_node.replace_all_uses_with(node)
                    self.graph.erase_node(obs_node)

    def before_output(self, output_node) -> None:
        def visit(value):
            if isinstance(value, Node):
                out_dtype, _ = self.output_dtype(value)
                in_dtype = _C.float32
                ctr = self.info.get(value, {}).get("in") if not self.is_obs_node(value) else None
                if ctr is not None and ctr is not _FP32:
                    in_dtype = ctr().dtype
                if out_dtype != in_dtype and in_dtype != _C.float32:
                    return self.insert(value, ctr())
                return value
            if isinstance(value, (list, tuple)):
                return type(value)(visit(v) for v in value)
            if isinstance(value, dict):
                return {k: visit(v) for k, v in value.items()}
            return value

        output_node.args = tuple(visit(a) for a in output_node.args)


def _qat_module_mapping() -> dict:
    """The native backend config's float (or fused float) -> QAT module pairs: Conv1d and the fused
    ConvReLU1d included (unlike eager prepare_qat's default mapping)."""
    return {
        _nn.Linear: nnqat.Linear,
        _nn.Conv1d: nnqat.Conv1d,
        _nn.Conv2d: nnqat.Conv2d,
        _nn.Conv3d: nnqat.Conv3d,
        nni.LinearReLU: nniqat.LinearReLU,
        nni.LinearBn1d: nniqat.LinearBn1d,
        nni.ConvReLU1d: nniqat.ConvReLU1d,
        nni.ConvReLU2d: nniqat.ConvReLU2d,
        nni.ConvReLU3d: nniqat.ConvReLU3d,
        nni.ConvBn1d: nniqat.ConvBn1d,
        nni.ConvBn2d: nniqat.ConvBn2d,
        nni.ConvBn3d: nniqat.ConvBn3d,
        nni.ConvBnReLU1d: nniqat.ConvBnReLU1d,
        nni.ConvBnReLU2d: nniqat.ConvBnReLU2d,
        nni.ConvBnReLU3d: nniqat.ConvBnReLU3d,
    }


def _prepare(model, qconfig_mapping, is_qat: bool, example_inputs, prepare_custom_config, backend_config):
    if backend_config is not None:
        raise NotImplementedError(
            "prepare_fx: custom backend_config is not supported in Ember (the default native "
            "backend config is used)"
        )
    if isinstance(qconfig_mapping, dict):
        warnings.warn(
            "Passing a QConfig dictionary to prepare is deprecated and will not be supported in a future "
            "version. Please pass in a QConfigMapping instead.",
            FutureWarning,
            stacklevel=3,
        )
        qconfig_mapping = QConfigMapping.from_dict(qconfig_mapping)
    if not isinstance(qconfig_mapping, QConfigMapping):
        raise AssertionError("qconfig_mapping must be a QConfigMapping")
    qconfig_mapping = copy.deepcopy(qconfig_mapping)
    gm, scopes = _trace(model, prepare_custom_config)
    gm = _fuse_graph(gm, is_qat)
    _update_qconfig_for_fusion(gm, qconfig_mapping)
    flattened = {
        "": qconfig_mapping.global_qconfig,
        **qconfig_mapping.object_type_qconfigs,
        **qconfig_mapping.module_name_qconfigs,
    }
    propagate_qconfig_(gm, flattened)
    if is_qat:
        qat_map = _qat_module_mapping()
        _eager_convert(gm, mapping=qat_map, inplace=True, remove_qconfig=False)
        for float_type, qat_type in qat_map.items():
            if float_type in qconfig_mapping.object_type_qconfigs:
                qconfig_mapping.object_type_qconfigs[qat_type] = qconfig_mapping.object_type_qconfigs[
                    float_type
                ]
    node_qconfig = _node_name_to_qconfig(gm, qconfig_mapping, scopes)
    matches = _find_matches(gm, node_qconfig)
    modules = dict(gm.named_modules(remove_duplicate=False))
    for match in set(matches.values()):
        if match.qconfig is None:
            continue
        if match.kind == "embedding" and is_qat:
            # PyTorch trains an nnqat.Embedding here, which Ember does not have: left float
            match.qconfig = None
            continue
        fixed = _fixed_qparams_of(match.root, modules) if match.kind == "fixed" else None
        if not _supported(match.qconfig, match.kind, fixed):
            match.qconfig = None
    _Observing(gm, matches).run()
    prepared = GraphModule(gm, gm.graph, type(model).__name__)
    prepared.meta["_observed_graph_module_attrs"] = {
        "node_name_to_qconfig": node_qconfig,
        "node_name_to_scope": scopes,
        "qconfig_mapping": qconfig_mapping,
        "is_qat": is_qat,
        "matches": {
            name: (m.kind, [n.name for n in m.nodes], m.qconfig, m.num_tensor_args)
            for name, m in matches.items()
        },
    }
    return prepared


def prepare_fx(
    model,
    qconfig_mapping,
    example_inputs,
    prepare_custom_config=None,
    _equalization_config=None,
    backend_config=None,
):
    """A traced copy of model (an ember.fx.GraphModule) with its conv/linear + BatchNorm/ReLU fused
    (eval mode) and observers inserted where PyTorch's prepare_fx puts them: after each input a
    quantized op reads, after each quantized op's output (one observer per value, shared by its
    consumers; ops that keep their input's parameters share the input's observer). Run calibration
    data through it, then convert_fx. qconfig_mapping: a QConfigMapping (a qconfig dict is accepted
    with PyTorch's FutureWarning); example_inputs: the positional inputs (not run)."""
    if _equalization_config is not None:
        raise NotImplementedError("prepare_fx: _equalization_config is not supported in Ember")
    return _prepare(model, qconfig_mapping, False, example_inputs, prepare_custom_config, backend_config)


def prepare_qat_fx(model, qconfig_mapping, example_inputs, prepare_custom_config=None, backend_config=None):
    """prepare_fx for quantization-aware training (the model in training mode): conv + bn (+ relu)
    and linear + bn are fused with the BatchNorm kept (nni.ConvBn* / ConvBnReLU* / LinearBn1d),
    conv / linear + relu into ConvReLU / LinearReLU, and each of these and nn.Linear / Conv1d/2d/3d
    becomes its QAT form (ember.ao.nn.intrinsic.qat, ember.ao.nn.qat: weights fake-quantized, a
    BatchNorm folded into the weight); the activations get the qconfig's fake quantizers."""
    return _prepare(model, qconfig_mapping, True, example_inputs, prepare_custom_config, backend_config)


# ---- convert -------------------------------------------------------------------------------------------


class _QParams:
    """Stands in for an observer: the output parameters a quantized module's from_float reads."""

    def __init__(self, scale: float, zero_point: int) -> None:
        self.scale, self.zero_point = scale, zero_point

    def calculate_qparams(self):
        from ..._tensor import tensor

        return tensor([self.scale]), tensor([self.zero_point], dtype=_C.int64)


def _quantized_add(x, y, scale: float, zero_point: int):
    """PyTorch's quantized::add."""
    return _C._quantized_add(x, y, scale, zero_point)


def _quantized_add_relu(x, y, scale: float, zero_point: int):
    """PyTorch's quantized::add_relu."""
    return _C._quantized_add(x, y, scale, zero_point, True)


def _quantized_mul(x, y, scale: float, zero_point: int):
    """PyTorch's quantized::mul."""
    return _C._quantized_mul(x, y, scale, zero_point)


def _quantized_mul_relu(x, y, scale: float, zero_point: int):
    """PyTorch's quantized::mul_relu."""
    return _C._quantized_mul(x, y, scale, zero_point, True)


def _quantized_add_scalar(x, c):
    """PyTorch's quantized::add_scalar."""
    return _add_scalar(x, float(c))


def _quantized_add_scalar_relu(x, c):
    """PyTorch's quantized::add_scalar_relu."""
    return _add_scalar(x, float(c), relu=True)


def _quantized_mul_scalar(x, c):
    """PyTorch's quantized::mul_scalar."""
    return _mul_scalar(x, float(c))


def _quantized_mul_scalar_relu(x, c):
    """PyTorch's quantized::mul_scalar_relu."""
    return F.relu(_mul_scalar(x, float(c)))


def _quantized_linear(x, weight, bias, scale: float, zero_point: int):
    """PyTorch's quantized::linear (weight: the qint8 tensor its packed parameters hold)."""
    return _C._quantized_linear(x, weight, bias, scale, zero_point, False)


def _quantized_linear_relu(x, weight, bias, scale: float, zero_point: int):
    """PyTorch's quantized::linear_relu."""
    return _C._quantized_linear(x, weight, bias, scale, zero_point, True)


def _quantized_conv(x, weight, bias, stride, padding, dilation, groups: int, scale: float, zero_point: int):
    """PyTorch's quantized::conv1d / conv2d / conv3d."""
    return _C._quantized_conv(x, weight, bias, stride, padding, dilation, groups, scale, zero_point, False)


def _quantized_conv_relu(
    x, weight, bias, stride, padding, dilation, groups: int, scale: float, zero_point: int
):
    """PyTorch's quantized::conv1d_relu / conv2d_relu / conv3d_relu."""
    return _C._quantized_conv(x, weight, bias, stride, padding, dilation, groups, scale, zero_point, True)


def _quantized_hardswish(x, scale: float, zero_point: int):
    """PyTorch's quantized::hardswish: as nnq.Hardswish, hardswish of the dequantized values
    quantized with the output parameters."""
    return _C.quantize_per_tensor(F.hardswish(x.dequantize()), scale, zero_point, x.dtype)


def _func_arg(node, index: int, name: str, default):
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def _lower_weighted_function(model, graph, root, relu, q, weight_observer) -> bool:
    """Replaces dequantize -> F.linear / F.conv*d (-> relu) -> quantize with the quantized op on
    the weight quantized once (a get_attr weight; PyTorch folds its prepacked weight the same way)."""
    from ...nn.modules.utils import _ntuple
    from ..nn.quantized.modules import _quantize_weight

    x, weight = root.args[0] if root.args else root.kwargs.get("input"), _func_arg(root, 1, "weight", None)
    if not _is_dq(x) or q.args[3] != _C.quint8 or weight_observer is None:
        return False
    if not isinstance(weight, Node) or weight.op != "get_attr":
        return False
    n = _extra_ops()["weighted_functions"][root.target]
    bias = _func_arg(root, 2, "bias", None)
    if n:
        stride, padding, dilation = (
            _func_arg(root, i, k, d) for i, k, d in ((3, "stride", 1), (4, "padding", 0), (5, "dilation", 1))
        )
        groups = _func_arg(root, 6, "groups", 1)
        if isinstance(padding, str) or any(isinstance(v, Node) for v in (stride, padding, dilation, groups)):
            return False
        conv_args = [list(_ntuple(n)(v)) for v in (stride, padding, dilation)] + [int(groups)]
    qweight = _quantize_weight(_get_attr(model, weight.target), weight_observer)
    if qweight.dtype != _C.qint8:
        return False
    i = 0
    while hasattr(model, f"_packed_weight_{i}"):
        i += 1
    name = f"_packed_weight_{i}"
    model.register_buffer(name, qweight)
    with graph.inserting_after(q):
        packed = graph.get_attr(name)
    with graph.inserting_after(packed):
        if n:
            fn = _quantized_conv_relu if relu else _quantized_conv
            call = graph.call_function(fn, (x.args[0], packed, bias, *conv_args, q.args[1], q.args[2]))
        else:
            fn = _quantized_linear_relu if relu else _quantized_linear
            call = graph.call_function(fn, (x.args[0], packed, bias, q.args[1], q.args[2]))
    q.replace_all_uses_with(call)
    graph.erase_node(q)
    if relu:
        graph.erase_node(relu)
    graph.erase_node(root)
    return True


def _get_attr(model, target: str):
    value = model
    for part in target.split("."):
        value = getattr(value, part)
    return value


def _is_dq(node) -> bool:
    return isinstance(node, Node) and node.op == "call_method" and node.target == "dequantize"


def _is_q(node) -> bool:
    import ember

    return isinstance(node, Node) and node.op == "call_function" and node.target is ember.quantize_per_tensor


def _single_q_user(node):
    users = list(node.users)
    return users[0] if len(users) == 1 and _is_q(users[0]) else None


def convert_fx(
    graph_module,
    convert_custom_config=None,
    _remove_qconfig: bool = True,
    qconfig_mapping=None,
    backend_config=None,
    keep_original_weights: bool = False,
):
    """The quantized model of a prepared and calibrated one (prepare_fx's GraphModule): each
    observer becomes a quantize (its scale and zero point) and dequantize; then each observed
    pattern whose inputs are dequantized and whose output is quantized is lowered to its quantized
    form (nnq.Linear / ConvReLU2d / ..., quantized add, cat and pooling on quantized tensors),
    while ops without one stay float between a dequantize and a quantize. The output is
    dequantized."""
    if not isinstance(graph_module, GraphModule):
        raise ValueError(
            "input model must be a GraphModule, Got type:"
            + str(type(graph_module))
            + " Please make sure to follow the tutorials."
        )
    attrs = graph_module.meta.get("_observed_graph_module_attrs") if hasattr(graph_module, "meta") else None
    if attrs is None:
        raise AssertionError("incoming model must be produced by prepare_fx")
    if qconfig_mapping is not None and not isinstance(qconfig_mapping, (QConfigMapping, dict)):
        raise AssertionError("qconfig_mapping must be None or a QConfigMapping")
    if qconfig_mapping is not None or backend_config is not None or convert_custom_config is not None:
        raise NotImplementedError(
            "convert_fx: qconfig_mapping, backend_config and convert_custom_config are not supported in Ember"
        )
    import ember

    model = copy.deepcopy(graph_module)
    graph = model.graph
    node_qconfig = attrs["node_name_to_qconfig"]
    modules = dict(model.named_modules(remove_duplicate=False))
    nodes = {n.name: n for n in graph.nodes}

    def none_qconfig(n) -> bool:
        return isinstance(n, Node) and n.name in node_qconfig and node_qconfig[n.name] is None

    # 0. the weight observers of functional linear / conv: their weights are quantized when the op
    # is lowered (otherwise the op stays float on its float weight)
    weight_observer_of: dict = {}
    for kind, names, qconfig, _ in attrs["matches"].values():
        if kind != "wfunc" or qconfig is None or names[0] not in nodes:
            continue
        root = nodes[names[0]]
        weight = _func_arg(root, 1, "weight", None)
        if isinstance(weight, Node) and weight.op == "call_module" and _is_obs(modules[weight.target]):
            weight_observer_of[weight] = root
    weight_observers: dict = {}

    # 1. observers -> quantize_per_tensor + dequantize
    for node in list(graph.nodes):
        if node.op != "call_module" or not _is_obs(modules[node.target]):
            continue
        obs = modules[node.target]
        if node in weight_observer_of:
            weight_observers[weight_observer_of[node].name] = obs
            node.replace_all_uses_with(node.args[0])
            graph.erase_node(node)
            continue
        dtype = obs.dtype
        skip = all(none_qconfig(n) for n in list(node.args) + list(node.users))
        if skip or dtype not in _QUANT_DTYPES or getattr(obs, "is_dynamic", False):
            node.replace_all_uses_with(node.args[0])
            graph.erase_node(node)
            continue
        scale, zero_point = obs.calculate_qparams()
        scale, zero_point = float(scale.reshape(-1)[0]), int(zero_point.reshape(-1)[0])
        with graph.inserting_before(node):
            q = graph.call_function(ember.quantize_per_tensor, (node.args[0], scale, zero_point, dtype))
            dq = graph.call_method("dequantize", (q,))
        node.replace_all_uses_with(dq)
        graph.erase_node(node)

    # 2. lower each observed pattern between a dequantize and a quantize
    _, weighted, default, _, _, _, _, _ = _ops()
    extra = _extra_ops()
    seen = set()
    position = {n.name: i for i, n in enumerate(graph.nodes)}
    in_graph_order = sorted(attrs["matches"].values(), key=lambda m: position.get(m[1][0], -1))
    for kind, names, qconfig, num_tensor_args in in_graph_order:
        if qconfig is None or names[-1] in seen or names[0] not in nodes or names[-1] not in nodes:
            continue
        seen.add(names[-1])
        root, last = nodes[names[0]], nodes[names[-1]]
        if kind == "embedding":  # weight-only: the float module's weight quantized per row
            module = modules[root.target]
            module.qconfig = qconfig
            parent, attr = _parent_name(root.target)
            setattr(
                model.get_submodule(parent) if parent else model,
                attr,
                extra["embeddings"][type(module)].from_float(module),
            )
            continue
        q = _single_q_user(last)
        if q is None:
            continue
        scale, zero_point = q.args[1], q.args[2]
        if kind == "wfunc":
            _lower_weighted_function(
                model, graph, root, last if last is not root else None, q, weight_observers.get(root.name)
            )
        elif kind == "fixed":
            # sigmoid / tanh run on the quantized input: the kernel's output parameters are the
            # fixed ones the observer gave (PyTorch's special_pattern_replacement)
            op = type(modules[root.target]) if root.op == "call_module" else root.target
            first = root.args[0] if root.args else None
            if op not in extra["fixed_lowered"] or not _is_dq(first) or q.args[3] != _C.quint8:
                continue
            root.replace_input_with(first, first.args[0])
            q.replace_all_uses_with(root)
            graph.erase_node(q)
        elif kind == "other":
            first = root.args[0] if root.args else None
            if root.target is not F.hardswish or not _is_dq(first) or q.args[3] != _C.quint8:
                continue
            with graph.inserting_after(q):
                qop = graph.call_function(_quantized_hardswish, (first.args[0], scale, zero_point))
            q.replace_all_uses_with(qop)
            graph.erase_node(q)
            graph.erase_node(root)
        elif kind in ("weighted", "default") or (kind == "transposed" and root.op == "call_module"):
            if not root.args or not _is_dq(root.args[0]) or q.args[3] != _C.quint8:
                continue
            module = modules[root.target]
            table = {"weighted": weighted, "default": default, "transposed": extra["transposed_modules"]}[kind]
            module.qconfig = qconfig
            if isinstance(module, nni._FusedModule) and not hasattr(module, "weight_fake_quant"):
                module[0].qconfig = qconfig
            module.activation_post_process = _QParams(scale, zero_point)
            quantized = table[type(module)].from_float(module)
            module.__dict__.pop("activation_post_process", None)
            parent, attr = _parent_name(root.target)
            setattr(model.get_submodule(parent) if parent else model, attr, quantized)
            root.replace_input_with(root.args[0], root.args[0].args[0])
            q.replace_all_uses_with(root)
            graph.erase_node(q)
        elif kind == "binary":
            dqs = [a for a in root.args if isinstance(a, Node)]
            if not dqs or not all(_is_dq(a) for a in dqs):
                continue
            relu = last is not root
            args = [a.args[0] if isinstance(a, Node) else a for a in root.args]
            is_add = root.target in (operator.add, ember.add)
            if num_tensor_args == 2:
                fn = {
                    (True, False): _quantized_add,
                    (True, True): _quantized_add_relu,
                    (False, False): _quantized_mul,
                    (False, True): _quantized_mul_relu,
                }[(is_add, relu)]
                args += [scale, zero_point]
            elif isinstance(root.args[0], Node):
                fn = {
                    (True, False): _quantized_add_scalar,
                    (True, True): _quantized_add_scalar_relu,
                    (False, False): _quantized_mul_scalar,
                    (False, True): _quantized_mul_scalar_relu,
                }[(is_add, relu)]
            else:
                continue
            with graph.inserting_after(q):
                qop = graph.call_function(fn, tuple(args))
            q.replace_all_uses_with(qop)
            graph.erase_node(q)
            if relu:
                graph.erase_node(last)
            graph.erase_node(root)
        elif kind == "share":
            first = root.args[0] if root.args else None
            if isinstance(first, (list, tuple)):
                if not first or not all(_is_dq(a) for a in first):
                    continue
                root.update_arg(0, type(first)(a.args[0] for a in first))
            elif _is_dq(first):
                root.replace_input_with(first, first.args[0])
            else:
                continue
            q.replace_all_uses_with(root)
            graph.erase_node(q)
    # 3. QAT modules left unquantized (no qconfig, or not between a dequantize and a quantize) become
    # their float modules, a BatchNorm folded in (PyTorch's convert_weighted_module calls to_float)
    qat_types = tuple(_qat_module_mapping().values())
    for node in graph.nodes:
        if node.op == "call_module" and type(modules.get(node.target)) in qat_types:
            parent, attr = _parent_name(node.target)
            owner = model.get_submodule(parent) if parent else model
            if type(getattr(owner, attr)) in qat_types:
                setattr(owner, attr, getattr(owner, attr).to_float())
    # size() / shape of a dequantized value read from the quantized one
    for node in graph.nodes:
        if node.op == "call_method" and node.target in ("size", "shape") and _is_dq(node.args[0]):
            node.replace_input_with(node.args[0], node.args[0].args[0])
        elif (
            node.op == "call_function"
            and node.target is getattr
            and node.args[1] == "shape"
            and _is_dq(node.args[0])
        ):
            node.replace_input_with(node.args[0], node.args[0].args[0])
    graph.eliminate_dead_code()
    quantized = GraphModule(model, graph, type(graph_module).__name__)
    quantized.delete_all_unused_submodules()
    if _remove_qconfig:
        for module in quantized.modules():
            module.__dict__.pop("qconfig", None)
    return quantized
