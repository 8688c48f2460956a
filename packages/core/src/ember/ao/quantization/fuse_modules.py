"""fuse_modules (torch.ao.quantization.fuse_modules): merge a layer with the BatchNorm and/or ReLU
after it, so convert quantizes them as one module. Eval mode: a BatchNorm is folded into the
conv/linear weights (nn.utils.fusion); the ReLU makes the pair an ember.ao.nn.intrinsic fused
module, as it does a BatchNorm2d/3d and the ReLU after it (BNReLU2d/3d, in either mode).
fuse_modules_qat (is_qat=True) keeps the BatchNorm unfolded for quantization-aware training:
conv + bn (+ relu) become nni.ConvBn1d/2d/3d (ConvBnReLU1d/2d/3d) and linear + bn nni.LinearBn1d,
which prepare_qat turns into their QAT forms. The first named module is replaced by the result and
the others by nn.Identity (in the first one's training mode), as in PyTorch (its forward pre-hooks
kept, and the last module's forward hooks moved onto it)."""

from __future__ import annotations

import copy

from ...nn import modules as _nn
from ...nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval
from ..nn import intrinsic as nni


def _fold(layer, bn):
    if layer.training or bn.training:
        raise AssertionError("Fusion only for eval! (ember.ao.quantization.fuse_modules folds a BatchNorm into the "
                             "layer before it; call model.eval() first)")
    return fuse_linear_bn_eval(layer, bn) if isinstance(layer, _nn.Linear) else fuse_conv_bn_eval(layer, bn)


_CONV_RELU = {_nn.Conv1d: nni.ConvReLU1d, _nn.Conv2d: nni.ConvReLU2d, _nn.Conv3d: nni.ConvReLU3d,
              _nn.Linear: nni.LinearReLU}
_BN_RELU = {(_nn.BatchNorm2d, _nn.ReLU): nni.BNReLU2d, (_nn.BatchNorm3d, _nn.ReLU): nni.BNReLU3d}
_BATCH_NORM = {_nn.Conv1d: _nn.BatchNorm1d, _nn.Conv2d: _nn.BatchNorm2d, _nn.Conv3d: _nn.BatchNorm3d,
               _nn.Linear: _nn.BatchNorm1d}


_QAT_BN = {(_nn.Conv1d, _nn.BatchNorm1d): nni.ConvBn1d, (_nn.Conv2d, _nn.BatchNorm2d): nni.ConvBn2d,
           (_nn.Conv3d, _nn.BatchNorm3d): nni.ConvBn3d, (_nn.Linear, _nn.BatchNorm1d): nni.LinearBn1d,
           (_nn.Conv1d, _nn.BatchNorm1d, _nn.ReLU): nni.ConvBnReLU1d,
           (_nn.Conv2d, _nn.BatchNorm2d, _nn.ReLU): nni.ConvBnReLU2d,
           (_nn.Conv3d, _nn.BatchNorm3d, _nn.ReLU): nni.ConvBnReLU3d}


def _fuse_for_qat(mod_list, kind):
    """PyTorch's is_qat fusers: the layer and its BatchNorm (and ReLU) unfolded in one nni module."""
    layer, bn = mod_list[0], mod_list[1]
    linear = isinstance(layer, _nn.Linear)
    if any(m.training != layer.training for m in mod_list[1:]):
        raise AssertionError(f"{'Linear' if linear else 'Conv'} and BN both must be in the same mode (train or eval).")
    name = "BatchNorm1d" if linear else "BatchNorm2d"
    if bn.num_features != (layer.out_features if linear else layer.out_channels):
        raise AssertionError("Output features of Linear must match num_features of BatchNorm1d" if linear
                             else "Output channel of Conv2d must match num_features of BatchNorm2d")
    if not bn.affine:
        raise AssertionError(f"Only support fusing {name} with affine set to True")
    if not bn.track_running_stats:
        raise AssertionError(f"Only support fusing {name} with tracking_running_stats set to True")
    return kind(*mod_list)


def fuse_known_modules(mod_list, is_qat: bool = False, additional_fuser_method_mapping=None):
    """The fused module for a list of modules, then an nn.Identity for each other one. With
    is_qat, a BatchNorm after a conv / linear stays unfolded (nni.ConvBn*, ConvBnReLU*, LinearBn1d)."""
    types = tuple(type(m) for m in mod_list)
    layer = mod_list[0]
    if additional_fuser_method_mapping and types in additional_fuser_method_mapping:
        return _moved_hooks(mod_list, additional_fuser_method_mapping[types](is_qat, *mod_list))
    if types in _BN_RELU:  # no folding: BatchNorm + ReLU quantize as one module
        return _moved_hooks(mod_list, _BN_RELU[types](*mod_list))
    if is_qat and types in _QAT_BN:
        return _moved_hooks(mod_list, _fuse_for_qat(mod_list, _QAT_BN[types]))
    if types[0] not in _CONV_RELU or not 2 <= len(types) <= 3:
        raise NotImplementedError(f"Cannot fuse modules: {types}")
    rest = list(types[1:])
    fused = layer
    if rest and rest[0] is _BATCH_NORM[types[0]]:
        fused = _fold(layer, mod_list[1])
        rest.pop(0)
    if rest == [_nn.ReLU]:
        fused = _CONV_RELU[types[0]](fused, mod_list[-1])
        rest.pop(0)
    if rest:
        raise NotImplementedError(f"Cannot fuse modules: {types}")
    return _moved_hooks(mod_list, fused)


def _moved_hooks(mod_list, fused) -> list:
    for pre_hook in mod_list[0]._forward_pre_hooks.values():
        fused.register_forward_pre_hook(pre_hook)
    for hook in mod_list[-1]._forward_hooks.values():
        fused.register_forward_hook(hook)
    identities = []
    for _ in mod_list[1:]:
        identity = _nn.Identity()
        identity.training = mod_list[0].training
        identities.append(identity)
    return [fused] + identities


def _get(model, name: str):
    for part in name.split("."):
        model = getattr(model, part)
    return model


def _set(model, name: str, module) -> None:
    *path, last = name.split(".")
    for part in path:
        model = getattr(model, part)
    setattr(model, last, module)


def _fuse_modules(model, modules_to_fuse, is_qat: bool, inplace: bool, fuser_func, fuse_custom_config_dict):
    if not inplace:
        model = copy.deepcopy(model)
    additional = (fuse_custom_config_dict or {}).get("additional_fuser_method_mapping", {})
    groups = [modules_to_fuse] if all(isinstance(n, str) for n in modules_to_fuse) else modules_to_fuse
    for names in groups:
        fused = fuser_func([_get(model, n) for n in names], is_qat, additional)
        for name, module in zip(names, fused, strict=True):
            _set(model, name, module)
    return model


def fuse_modules(model, modules_to_fuse, inplace: bool = False, fuser_func=fuse_known_modules,
                 fuse_custom_config_dict=None):
    """Fuse each list of qualified names in modules_to_fuse (or the one list given), e.g.
    [["conv1", "bn1", "relu1"], ["fc", "relu"]], for post-training quantization (BatchNorms folded:
    eval mode). fuser_func is called as fuser_func(modules, is_qat, additional_fuser_method_mapping);
    fuse_custom_config_dict's "additional_fuser_method_mapping" maps a tuple of module types to a
    fuser(is_qat, *modules)."""
    return _fuse_modules(model, modules_to_fuse, False, inplace, fuser_func, fuse_custom_config_dict)


def fuse_modules_qat(model, modules_to_fuse, inplace: bool = False, fuser_func=fuse_known_modules,
                     fuse_custom_config_dict=None):
    """fuse_modules for quantization-aware training: conv + bn (+ relu) become nni.ConvBn*d
    (ConvBnReLU*d) and linear + bn nni.LinearBn1d, the BatchNorm kept (prepare_qat folds it into the
    QAT module's forward)."""
    return _fuse_modules(model, modules_to_fuse, True, inplace, fuser_func, fuse_custom_config_dict)
