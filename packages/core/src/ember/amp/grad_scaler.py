"""GradScaler: loss scaling for float16/bfloat16 training (torch.amp.GradScaler).

Gradients of small magnitude underflow to zero in float16. Scaling the loss by S before backward
scales every gradient by S, which keeps them representable; before the optimizer step the gradients
are divided by S again. If any gradient is inf or NaN the scale was too large: the step is skipped
and S shrinks by `backoff_factor`; after `growth_interval` steps without overflow S grows by
`growth_factor`.

    scaler = ember.amp.GradScaler("cpu")
    for x, y in data:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)      # unscales, and skips the step on inf/NaN gradients
        scaler.update()             # adjusts the scale for the next iteration

As PyTorch: the optimizer's parameters stay float32 (float16 parameter gradients are refused by
unscale_); a scaler for "cuda" on a build without CUDA warns and disables itself, so a CUDA script
still runs, unscaled.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from enum import Enum

import ember

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state() -> dict:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    """Dynamic loss scaling (see the module docstring). `device` is where the scaled tensors live
    ("cpu" or "cuda"); `enabled=False` makes every method a pass-through, so one script serves both."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = str(device)
        self._enabled = enabled
        if self._device == "cuda" and enabled and not ember.cuda.is_available():
            warnings.warn("ember.amp.GradScaler is enabled, but CUDA is not available.  Disabling.", stacklevel=2)
            self._enabled = False
        if self._enabled:
            if not growth_factor > 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if not backoff_factor < 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None  # float32 tensor of one element, made on first use
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None  # int32 count of steps since the last overflow
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname: str) -> tuple:
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev) -> None:
        self._scale = ember.full((), self._init_scale, dtype=ember.float32, device=dev)
        self._growth_tracker = ember.full((), self._init_growth_tracker, dtype=ember.int32, device=dev)

    def scale(self, outputs):
        """Multiplies a tensor, or every tensor in nested lists/tuples, by the scale factor."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, ember.Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(outputs.device)

        def apply_scale(val):
            if isinstance(val, ember.Tensor):
                if self._scale is None:
                    self._lazy_init_scale_growth_tracker(val.device)
                return val * self._scale.to(val.device)
            if isinstance(val, (list, tuple)):
                return type(val)(apply_scale(v) for v in val)
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16: bool) -> dict:
        """Multiplies every gradient by inv_scale in place and records whether any is inf or NaN."""
        factor = float(inv_scale.item())  # a Python number: each gradient keeps its dtype
        for group in optimizer.param_groups:
            for param in group["params"]:
                if param.grad is None:
                    continue
                if not allow_fp16 and param.grad.dtype == ember.float16:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                grad = param.grad
                if not bool(ember.isfinite(grad).all()):
                    found_inf.fill_(1.0)
                grad.mul_(factor)
        return {str(found_inf.device): found_inf}

    def unscale_(self, optimizer) -> None:
        """Divides the optimizer's gradients by the scale, in place (call it before clipping them).
        step() calls it when it has not been called since the last update()."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # 1/scale computed in float64, as PyTorch does, then stored in float32
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = ember.zeros((), dtype=ember.float32, device=self._scale.device)
        optimizer_state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        optimizer_state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer, optimizer_state, *args, **kwargs):
        if not sum(v.item() for v in optimizer_state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer, *args, **kwargs):
        """Unscales the gradients (unless unscale_ already did) and calls optimizer.step(*args,
        **kwargs) unless a gradient is inf or NaN; returns what optimizer.step returned (None when skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if optimizer_state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(optimizer_state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, optimizer_state, *args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None) -> None:
        """Sets the scale for the next iteration: `new_scale` if given (a float or a one-element
        tensor), else backed off after an overflow in this iteration or grown after
        `growth_interval` clean ones."""
        if not self._enabled:
            return
        _scale, _growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element ember.FloatTensor with "
                          "requires_grad=False.")
                if not (isinstance(new_scale, ember.Tensor) and new_scale.numel() == 1):
                    raise AssertionError(reason)
                if new_scale.requires_grad:
                    raise AssertionError(reason)
                self._scale.copy_(new_scale.reshape(()).to(ember.float32))
        else:
            found_infs = [found_inf for state in self._per_optimizer_states.values()
                          for found_inf in state["found_inf_per_device"].values()]
            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            found_inf = sum(float(f.item()) for f in found_infs)
            self._update_scale(found_inf > 0)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _update_scale(self, found_inf: bool) -> None:
        """PyTorch's _amp_update_scale_: back off on overflow, grow after growth_interval clean steps."""
        if found_inf:
            self._scale.mul_(self._backoff_factor)
            self._growth_tracker.fill_(0)
            return
        successful = int(self._growth_tracker.item()) + 1
        if successful == self._growth_interval:
            grown = float(self._scale.item()) * self._growth_factor
            if grown != float("inf"):  # a scale that would overflow float32 stays where it is
                self._scale.fill_(grown)
            self._growth_tracker.fill_(0)
        else:
            self._growth_tracker.fill_(successful)

    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return float(self._init_scale) if self._scale is None else float(self._scale.item())

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker.item())

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        """The scale, the factors, the interval and the growth tracker; {} when disabled."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning of an iteration, "
                                     "or at the end after scaler.update().")
            # Pickle the values, not the tensors; they are remade on first use.
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
            state["_per_optimizer_states"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if self._enabled:
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)
