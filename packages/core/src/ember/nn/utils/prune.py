"""ember.nn.utils.prune (torch.nn.utils.prune): pruning a module's tensor by a mask.

Pruning `weight` moves the parameter to `weight_orig`, keeps the 0/1 mask in the buffer
`weight_mask` (both in the state dict), and sets the plain attribute `weight = weight_mask *
weight_orig`, recomputed by a forward pre-hook (the pruning method itself) before every call.
Pruning the same tensor again composes the masks through a PruningContainer: the new method
acts only on what is still unpruned (unstructured), on the channels still alive (structured), or
on the whole tensor (global, CustomFromMask). remove() makes the pruning permanent: `weight`
becomes a plain parameter again holding the masked values.

Differences from PyTorch, on purpose: global_unstructured takes its `parameters` as any iterable
(a generator is read once, not exhausted by the first pass); a failed re-pruning leaves the earlier
pruning hook in place instead of dropping it. Among entries of equal importance, which ones are
pruned first is up to topk (PyTorch does not define it either; Ember's picks the lower indices).
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

from ... import _C
from ..._memory_format import contiguous_format
from ._pre_hooks import pop_reparametrization
from .convert_parameters import parameters_to_vector

__all__ = [
    "BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured", "L1Unstructured", "RandomStructured",
    "LnStructured", "CustomFromMask", "identity", "random_unstructured", "l1_unstructured", "random_structured",
    "ln_structured", "global_unstructured", "custom_from_mask", "remove", "is_pruned",
]


class BasePruningMethod(ABC):
    """The base of the pruning methods: subclasses define compute_mask (and PRUNING_TYPE, one of
    'unstructured', 'structured' with a `dim` attribute, or 'global'). An applied method is the
    module's forward pre-hook for its tensor `_tensor_name`."""

    _tensor_name: str

    def __call__(self, module, inputs):
        """The forward pre-hook: recompute module.<name> from <name>_orig and <name>_mask."""
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The mask for tensor t (its importance scores), given the mask already in force."""

    def apply_mask(self, module):
        """<name>_mask * <name>_orig, the pruned tensor."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune module.<name> with cls(*args, **kwargs), composing with an earlier pruning of
        the same tensor; returns the hook now in force (the method, or a PruningContainer)."""
        method, old_method, old_len = _compose(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is not None:
            if importance_scores.shape != orig.shape:
                raise AssertionError(f"importance_scores should have the same shape as parameter {name} of {module}, "
                                     f"got {importance_scores.shape} vs {orig.shape}")
        else:
            importance_scores = orig
        first = not isinstance(method, PruningContainer)
        if first:  # the parameter moves to <name>_orig
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = _C.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone(memory_format=contiguous_format)
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first:
                orig = getattr(module, name + "_orig")
                module.register_parameter(name, orig)
                del module._parameters[name + "_orig"]
            elif old_method is not None:  # put the earlier pruning back as it was
                if isinstance(old_method, PruningContainer):
                    old_method._pruning_methods = old_method._pruning_methods[:old_len]
                module.register_forward_pre_hook(old_method)
            raise
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """t * mask, the mask computed from importance_scores (t itself by default)."""
        if importance_scores is not None:
            if importance_scores.shape != t.shape:
                raise AssertionError("importance_scores should have the same shape as tensor t, got "
                                     f"{importance_scores.shape} vs {t.shape}")
        else:
            importance_scores = t
        default_mask = default_mask if default_mask is not None else _C.ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module) -> None:
        """Make the pruning permanent: <name> becomes a parameter holding the pruned values again,
        <name>_orig and <name>_mask go (the hook itself is taken off by prune.remove)."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


def _compose(cls, module, name, *args, **kwargs):
    """(the method to apply, the earlier hook it replaces or None, that container's length): the
    earlier hook on the same tensor is taken off and the new method joins it in a container."""
    found = [(k, hook) for k, hook in module._forward_pre_hooks.items()
             if isinstance(hook, BasePruningMethod) and hook._tensor_name == name]
    if len(found) > 1:
        raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module {module}. "
                             "Use a PruningContainer.")
    for k, _ in found:
        del module._forward_pre_hooks[k]
    method = cls(*args, **kwargs)
    method._tensor_name = name
    old_method = found[0][1] if found else None
    old_len = len(old_method) if isinstance(old_method, PruningContainer) else 0
    if isinstance(old_method, PruningContainer):
        old_method.add_pruning_method(method)
        method = old_method
    elif old_method is not None:
        container = PruningContainer(old_method)
        container.add_pruning_method(method)
        method = container
    return method, old_method, old_len


class PruningContainer(BasePruningMethod):
    """The sequence of pruning methods applied to one tensor; its mask is the last method's,
    computed on what the earlier ones left."""

    def __init__(self, *args) -> None:
        self._pruning_methods: tuple[BasePruningMethod, ...] = ()
        if len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method) -> None:
        """Append a method acting on the same tensor."""
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named '{self._tensor_name}' to "
                             f"PruningContainer {self}. Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        """default_mask with the last method's mask written into the part it acts on: the
        entries still 1 (unstructured), the channels along its dim not yet all zero (structured),
        or everything (global)."""
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype)
        kind = method.PRUNING_TYPE
        if kind == "unstructured":
            slc = default_mask == 1
        elif kind == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have the attribute `dim` '
                                     "defined.")
            n_dims = t.dim()
            dim = method.dim + n_dims if method.dim < 0 else method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {n_dims}")
            keep_channel = default_mask.sum(dim=[d for d in range(n_dims) if d != dim]) != 0
            slc = tuple(keep_channel if d == dim else slice(None) for d in range(n_dims))
        elif kind == "global":
            slc = (slice(None),) * t.dim()
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
        partial_mask = method.compute_mask(t[slc], default_mask=default_mask[slc])
        new_mask[slc] = partial_mask.to(dtype=new_mask.dtype)
        return new_mask


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones (a way to get the reparametrization alone)."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):  # type: ignore[override]
        return super().apply(module, name)


def _unstructured_mask(t, default_mask, nparams_toprune: int, scores):
    """default_mask with the entries of the nparams_toprune smallest scores set to 0."""
    mask = default_mask.clone(memory_format=contiguous_format)
    if nparams_toprune != 0:
        picked = _C.topk(scores.reshape(-1), k=nparams_toprune, largest=False)[1]
        mask.view(-1)[picked] = 0
    return mask


class _Unstructured(BasePruningMethod):
    """The unstructured methods: `amount` entries (a count, or a fraction of the tensor) of the
    lowest scores are pruned."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def _scores(self, t):
        raise NotImplementedError

    def compute_mask(self, t, default_mask):
        tensor_size = t.nelement()
        nparams_toprune = _compute_nparams_toprune(self.amount, tensor_size)
        _validate_pruning_amount(nparams_toprune, tensor_size)
        return _unstructured_mask(t, default_mask, nparams_toprune, self._scores(t) if nparams_toprune else None)


class RandomUnstructured(_Unstructured):
    """Prunes `amount` entries chosen at random."""

    def _scores(self, t):
        return _C.rand(list(t.shape), dtype=t.dtype, device=t.device)

    @classmethod
    def apply(cls, module, name, amount):  # type: ignore[override]
        return super().apply(module, name, amount=amount)


class L1Unstructured(_Unstructured):
    """Prunes the `amount` entries of smallest absolute value (of the importance scores)."""

    def _scores(self, t):
        return _C.abs(t)

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):  # type: ignore[override]
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


def _channel_mask(t, dim: int, index):
    """Zeros like t with ones in the channels `index` (a bool mask or indices) along dim."""
    mask = _C.zeros_like(t)
    mask[tuple(index if d == (dim % t.dim()) else slice(None) for d in range(t.dim()))] = 1
    return mask


def _structured_count(t, amount, dim: int) -> tuple[int, int]:
    """The number of channels along dim, and how many of them `amount` prunes (both validated)."""
    _validate_structured_pruning(t)
    _validate_pruning_dim(t, dim)
    tensor_size = t.shape[dim]
    nparams_toprune = _compute_nparams_toprune(amount, tensor_size)
    _validate_pruning_amount(nparams_toprune, tensor_size)
    return tensor_size, nparams_toprune


class RandomStructured(BasePruningMethod):
    """Prunes `amount` whole channels along `dim`, chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t, default_mask):
        tensor_size, nparams_toprune = _structured_count(t, self.amount, self.dim)
        if nparams_toprune == 0:
            return default_mask
        prob = _C.rand([tensor_size])
        threshold = _C.kthvalue(prob, nparams_toprune)[0]
        mask = _channel_mask(t, self.dim, prob > threshold)
        return mask * default_mask.to(dtype=mask.dtype)

    @classmethod
    def apply(cls, module, name, amount, dim=-1):  # type: ignore[override]
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the `amount` channels along `dim` of smallest L`n` norm (n as for Tensor.norm's p)."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t, default_mask):
        tensor_size, nparams_toprune = _structured_count(t, self.amount, self.dim)
        nparams_tokeep = tensor_size - nparams_toprune
        norm = _compute_norm(t, self.n, self.dim)
        kept = _C.topk(norm, k=nparams_tokeep, largest=True)[1]
        if nparams_toprune == 0:
            return default_mask
        mask = _channel_mask(t, self.dim, kept)
        return mask * default_mask.to(dtype=mask.dtype)

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):  # type: ignore[override]
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes by a given mask (of the tensor's shape)."""

    PRUNING_TYPE = "global"

    def __init__(self, mask) -> None:
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match self.mask shape "
                                 f"{self.mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):  # type: ignore[override]
        return super().apply(module, name, mask=mask)


def identity(module, name):
    """Apply the pruning reparametrization to module.<name> without pruning anything."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    """Prune `amount` (int count or float fraction) random entries of module.<name>."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    """Prune the `amount` entries of module.<name> of smallest |importance score| (|value|)."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    """Prune `amount` random channels of module.<name> along dim."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    """Prune the `amount` channels of module.<name> along dim of smallest Ln norm."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs) -> None:
    """Prune the (module, name) tensors together, as one vector: pruning_method(**kwargs) (an
    unstructured method) decides over all their entries at once; each tensor then gets its share
    of the mask as a CustomFromMask pruning. importance_scores maps (module, name) to scores."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores = parameters_to_vector([importance_scores.get((module, name), getattr(module, name))
                                   for module, name in parameters])
    default_mask = parameters_to_vector([getattr(module, name + "_mask", _C.ones_like(getattr(module, name)))
                                         for module, name in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    final_mask = container.compute_mask(scores, default_mask)
    pointer = 0
    for module, name in parameters:
        param = getattr(module, name)
        num_param = param.numel()
        custom_from_mask(module, name, mask=final_mask[pointer:pointer + num_param].view_as(param))
        pointer += num_param


def custom_from_mask(module, name, mask):
    """Prune module.<name> by the given mask."""
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module, name):
    """Make the pruning of module.<name> permanent and take its hook off."""
    if pop_reparametrization(module, BasePruningMethod, name, lambda hook: hook._tensor_name):
        return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module) -> bool:
    """Whether module or any submodule carries a pruning hook."""
    return any(isinstance(hook, BasePruningMethod)
               for _, sub in module.named_modules() for hook in sub._forward_pre_hooks.values())


def _validate_pruning_amount_init(amount) -> None:
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral) and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _validate_pruning_amount(amount, tensor_size: int) -> None:
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={tensor_size}")


def _validate_structured_pruning(t) -> None:
    shape = t.shape
    if len(shape) <= 1:
        raise ValueError("Structured pruning can only be applied to multidimensional tensors. Found tensor of shape "
                         f"{shape} with {len(shape)} dims")


def _compute_nparams_toprune(amount, tensor_size: int) -> int:
    """amount itself when an int, else round(amount * tensor_size) (round half to even)."""
    if isinstance(amount, numbers.Integral):
        return amount
    return round(amount * tensor_size)


def _validate_pruning_dim(t, dim: int) -> None:
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _compute_norm(t, n, dim: int):
    """The Ln norm of each channel of t along dim (over all the other dims)."""
    dims = list(range(t.dim()))
    dims.remove(dims[dim])
    return t.norm(p=n, dim=dims)
