"""ember.optim.swa_utils (torch.optim.swa_utils): stochastic weight averaging and exponential
moving averages of a model's parameters (AveragedModel and its averaging functions), the SWALR
schedule, and update_bn to recompute BatchNorm statistics for the averaged weights."""

from __future__ import annotations

import itertools
import math
from copy import deepcopy

from .. import _C
from ..autograd.grad_mode import no_grad
from ..nn import Module
from .lr_scheduler import LRScheduler, _format_param, _warn_get_lr_outside_step

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn", "get_ema_avg_fn",
           "get_swa_avg_fn"]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def _floating(t) -> bool:
    return t.is_floating_point() or t.is_complex()


def get_ema_multi_avg_fn(decay: float = 0.999):
    """An in-place averaging function over lists of tensors: ema <- decay * ema + (1 - decay) * current
    (a lerp towards current by 1 - decay for floating tensors)."""
    _check_decay(decay)

    def ema_update(ema_param_list, current_param_list, _num_averaged) -> None:
        with no_grad():
            for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                if _floating(p_ema):
                    p_ema.copy_(_C.lerp(p_ema, p_model, 1 - decay))
                else:
                    p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """An in-place averaging function over lists of tensors: the running equal-weight mean,
    averaged <- averaged + (current - averaged) / (num_averaged + 1)."""

    def swa_update(averaged_param_list, current_param_list, num_averaged) -> None:
        n = float(num_averaged.item()) if isinstance(num_averaged, _C.Tensor) else float(num_averaged)
        with no_grad():
            for p_avg, p_model in zip(averaged_param_list, current_param_list, strict=True):
                if _floating(p_avg):
                    p_avg.copy_(_C.lerp(p_avg, p_model, 1 / (n + 1)))
                else:
                    p_avg.copy_(p_avg + (p_model - p_avg) / (n + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999):
    """An averaging function of one tensor returning decay * ema + (1 - decay) * current."""
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """An averaging function of one tensor returning averaged + (current - averaged) / (num_averaged + 1)."""

    def swa_update(averaged_param, current_param, num_averaged):
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A copy of `model` whose parameters (and, with use_buffers, buffers) hold a running average of
    the model's, updated by update_parameters(model): the equal-weight mean by default (SWA), or
    avg_fn(averaged, current, num_averaged) / multi_avg_fn(averaged_list, current_list,
    num_averaged) (get_ema_multi_avg_fn for EMA). The first update copies the model's values.
    Without use_buffers the buffers are copied from the model at every update. n_averaged (a
    buffer) counts the updates; calling the averaged model runs the copy."""

    def __init__(self, model: Module, device=None, avg_fn=None, multi_avg_fn=None, use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", _C.zeros([], dtype=_C.int64))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Fold model's current parameters (and buffers, with use_buffers) into the average."""
        if self.use_buffers:
            mine = list(itertools.chain(self.module.parameters(), self.module.buffers()))
            theirs = list(itertools.chain(model.parameters(), model.buffers()))
        else:
            mine, theirs = list(self.parameters()), list(model.parameters())
        pairs = list(zip(mine, theirs, strict=False))  # PyTorch pairs them up to the shorter list too
        averaged = [p.detach() for p, _ in pairs]
        current = [q.detach() for _, q in pairs]
        count = int(self.n_averaged.item())
        with no_grad():
            if count == 0:
                for a, c in zip(averaged, current, strict=True):
                    a.copy_(c)
            elif self.avg_fn is not None:
                for a, c in zip(averaged, current, strict=True):
                    a.copy_(self.avg_fn(a, c, self.n_averaged))
            else:
                # grouped by dtype, as PyTorch groups the tensors for its multi-tensor kernels
                groups: dict = {}
                for a, c in zip(averaged, current, strict=True):
                    lists = groups.setdefault(a.dtype, ([], []))
                    lists[0].append(a)
                    lists[1].append(c)
                update = self.multi_avg_fn or get_swa_multi_avg_fn()
                for a_list, c_list in groups.values():
                    update(a_list, c_list, self.n_averaged)
            if not self.use_buffers:
                for b_avg, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                    b_avg.detach().copy_(b_model.detach())
            self.n_averaged.add_(1)


def update_bn(loader, model: Module, device=None) -> None:
    """Recompute the running statistics of model's BatchNorm layers with one pass over loader
    (each batch a tensor, or a list / tuple whose first element is the input), as cumulative
    averages; the layers' momentum and the model's training mode are restored afterwards."""
    from ..nn.modules.batchnorm import _BatchNorm

    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's learning rate from its value to swa_lr over anneal_epochs steps
    ("cos" or "linear"), then hold it at swa_lr (torch.optim.swa_utils.SWALR). swa_lr: one value
    or one per group, stored in each group as "swa_lr"."""

    def __init__(self, optimizer, swa_lr, anneal_epochs: int = 10, anneal_strategy: str = "cos",
                 last_epoch: int = -1) -> None:
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for value, group in zip(swa_lrs, optimizer.param_groups, strict=True):
            group["swa_lr"] = value
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        """The learning rate before the last annealing step, recovered from the current one."""
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def get_lr(self) -> list[float]:
        _warn_get_lr_outside_step(self)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, prev_lrs, strict=True)]

    def state_dict(self) -> dict:
        """Every attribute but the optimizer and the annealing function."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
