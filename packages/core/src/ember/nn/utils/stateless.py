"""nn.utils.stateless.functional_call (PyTorch 1.12's API; ember.func.functional_call is the
newer one, and both share the implementation)."""

from __future__ import annotations

from ...func._functional_call import functional_call as _functional_call

__all__ = ["functional_call"]


def functional_call(module, parameters_and_buffers, args, kwargs=None, *, tie_weights=True, strict=False):
    """Runs module(*args, **kwargs) with the tensors of `parameters_and_buffers` (keys are
    state_dict names, e.g. "fc1.weight" or "bn.running_mean") in place of the module's own; the
    ones not named keep the module's. The module is restored afterwards."""
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
