"""Lazy modules (torch.nn.LazyConv1d ... LazyInstanceNorm3d): the in_channels / num_features of
their base module are taken from the first input. Until then their weights are
UninitializedParameters (and their running statistics empty); the first forward materializes
them, runs the base module's reset_parameters, and turns the instance into its base class
(cls_to_become), as PyTorch's LazyModuleMixin does. LazyLinear is in linear.py."""

from __future__ import annotations

from ... import _C
from ..parameter import UninitializedParameter
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .normalization import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d

__all__ = ["LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
           "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class _LazyMixin:
    cls_to_become: type = None

    def has_uninitialized_params(self) -> bool:
        return any(isinstance(p, UninitializedParameter) for p in self._parameters.values())

    def _lazy_factory(self, device, dtype) -> dict:
        kwargs = {"dtype": dtype if dtype is not None else _C.get_default_dtype()}
        if device is not None:
            kwargs["device"] = device
        return kwargs

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params():
            self.cls_to_become.reset_parameters(self)

    def forward(self, input):
        base = self.cls_to_become
        if self.has_uninitialized_params():
            self.initialize_parameters(input)
        return base.forward(self, input)  # the instance is its base class now

    def _become(self) -> None:
        self.cls_to_become.reset_parameters(self)
        self.__class__ = self.cls_to_become


class _LazyConv(_LazyMixin):
    def reset_parameters(self) -> None:
        if self.in_channels:  # nothing to initialize before the first input
            self.cls_to_become.reset_parameters(self)

    def initialize_parameters(self, input) -> None:
        n = self._n
        if input.dim() not in (n + 1, n + 2):
            raise RuntimeError(f"{type(self).__name__}: expected a {n + 1}D (unbatched) or {n + 2}D (batched) input "
                               f"to infer in_channels, but got {input.dim()}D")
        self.in_channels = input.shape[0] if input.dim() == n + 1 else input.shape[1]
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if self.transposed:
            shape = [self.in_channels, self.out_channels // self.groups]
        else:
            shape = [self.out_channels, self.in_channels // self.groups]
        self.weight.materialize(shape + list(self.kernel_size))
        if isinstance(self.bias, UninitializedParameter):
            self.bias.materialize([self.out_channels])
        self._become()


def _lazy_conv(name: str, base: type) -> type:
    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, *rest, device=None, dtype=None,
                 **keywords) -> None:
        if base.transposed:  # ConvTranspose: output_padding, groups, bias, dilation, padding_mode
            names = ("output_padding", "groups", "bias", "dilation", "padding_mode")
            defaults = {"output_padding": 0, "groups": 1, "bias": True, "dilation": 1, "padding_mode": "zeros"}
        else:
            names = ("dilation", "groups", "bias", "padding_mode")
            defaults = {"dilation": 1, "groups": 1, "bias": True, "padding_mode": "zeros"}
        if len(rest) > len(names):
            raise TypeError(f"{name}() takes at most {len(names) + 4} positional arguments")
        values = dict(defaults)
        values.update(zip(names, rest, strict=False))
        unknown = set(keywords) - set(names)
        if unknown:
            raise TypeError(f"{name}() got an unexpected keyword argument {sorted(unknown)[0]!r}")
        values.update(keywords)
        _lazy_init(self, out_channels, kernel_size, stride, padding, values["dilation"], values["groups"],
                   values["bias"], values["padding_mode"], values.get("output_padding", 0), device, dtype)

    return type(name, (_LazyConv, base), {"cls_to_become": base, "__init__": __init__, "__module__": __name__,
                                          "__doc__": f"{base.__name__} whose in_channels is taken from the first "
                                                     f"input (torch.nn.{name})."})


def _lazy_init(self, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode,
               output_padding, device, dtype) -> None:
    base = self.cls_to_become
    if base.transposed:
        base.__init__(self, 0, out_channels, kernel_size, stride, padding, output_padding, groups, bias, dilation,
                      padding_mode, device=device, dtype=dtype)
    else:
        base.__init__(self, 0, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode,
                      device=device, dtype=dtype)
    self.weight = UninitializedParameter(device=device, dtype=dtype)
    if bias:
        self.bias = UninitializedParameter(device=device, dtype=dtype)


LazyConv1d = _lazy_conv("LazyConv1d", Conv1d)
LazyConv2d = _lazy_conv("LazyConv2d", Conv2d)
LazyConv3d = _lazy_conv("LazyConv3d", Conv3d)
LazyConvTranspose1d = _lazy_conv("LazyConvTranspose1d", ConvTranspose1d)
LazyConvTranspose2d = _lazy_conv("LazyConvTranspose2d", ConvTranspose2d)
LazyConvTranspose3d = _lazy_conv("LazyConvTranspose3d", ConvTranspose3d)


class _LazyNorm(_LazyMixin):
    _batched_dims = 0  # the rank of a batched input; one less is unbatched (instance norm only)

    def initialize_parameters(self, input) -> None:
        unbatched = isinstance(self, _LazyInstance) and input.dim() == self._batched_dims - 1
        if input.dim() < 2 and not unbatched:
            raise RuntimeError(f"{type(self).__name__}: expected an input with a channel dimension, but got "
                               f"{input.dim()}D")
        self.num_features = input.shape[0] if unbatched else input.shape[1]
        kwargs = self._lazy_kwargs
        if self.affine:
            self.weight.materialize([self.num_features])
            self.bias.materialize([self.num_features])
        if self.track_running_stats:
            self.running_mean = _C.zeros([self.num_features], **kwargs)
            self.running_var = _C.ones([self.num_features], **kwargs)
        del self._lazy_kwargs
        self._become()


class _LazyInstance:
    pass


def _lazy_norm(name: str, base: type, instance: bool, batched_dims: int) -> type:
    def __init__(self, eps: float = 1e-5, momentum: float = 0.1, affine: bool = not instance,
                 track_running_stats: bool = not instance, device=None, dtype=None) -> None:
        base.__init__(self, 0, eps, momentum, affine, track_running_stats, device, dtype)
        self._lazy_kwargs = self._lazy_factory(device, dtype)
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def has_uninitialized_params(self) -> bool:
        return "_lazy_kwargs" in self.__dict__

    bases = (_LazyNorm, _LazyInstance, base) if instance else (_LazyNorm, base)
    return type(name, bases, {"cls_to_become": base, "__init__": __init__, "_batched_dims": batched_dims,
                              "has_uninitialized_params": has_uninitialized_params, "__module__": __name__,
                              "__doc__": f"{base.__name__} whose num_features is taken from the first input "
                                         f"(torch.nn.{name})."})


LazyBatchNorm1d = _lazy_norm("LazyBatchNorm1d", BatchNorm1d, False, 3)
LazyBatchNorm2d = _lazy_norm("LazyBatchNorm2d", BatchNorm2d, False, 4)
LazyBatchNorm3d = _lazy_norm("LazyBatchNorm3d", BatchNorm3d, False, 5)
LazyInstanceNorm1d = _lazy_norm("LazyInstanceNorm1d", InstanceNorm1d, True, 3)
LazyInstanceNorm2d = _lazy_norm("LazyInstanceNorm2d", InstanceNorm2d, True, 4)
LazyInstanceNorm3d = _lazy_norm("LazyInstanceNorm3d", InstanceNorm3d, True, 5)
