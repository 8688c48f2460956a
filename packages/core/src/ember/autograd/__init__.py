"""Reverse-mode automatic differentiation (torch.autograd's API over Ember's C++ engine).

The engine and the per-op backward nodes live in native/ (ember/autograd.h, generated from the
op declarations); this package re-exports the Python entry points, one module each: backward and
grad (_engine), grad modes (grad_mode), the graph's node type and hooks (graph), gradcheck and gradgradcheck (gradcheck), Function,
forward_ad, functional and the older profiler API (profiler, over ember.profiler's recorder). docs/dev/autograd.md explains how the engine works.
"""

from __future__ import annotations

from ..overrides import handle_torch_function, has_torch_function, is_tensor_like  # noqa: F401 - as torch.autograd
from ..profiler import ProfilerActivity  # noqa: F401 - torch.autograd has torch.profiler's, outside __all__
from . import forward_ad, functional, graph, profiler, profiler_legacy, profiler_util
from ._engine import backward, grad
from ._variable import Variable
from .anomaly_mode import (
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_detect_anomaly,
)
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import (
    _force_original_view_tracking,  # noqa: F401 - torch.autograd has it outside __all__
    enable_grad,
    enforce_grad_layout_policy,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    is_multithreading_enabled,
    is_view_replay_enabled,  # noqa: F401 - as above
    no_grad,
    set_grad_enabled,
    set_multithreading_enabled,
)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .profiler import kineto_available

__all__ = ["Variable", "variable", "forward_ad", "functional", "graph", "profiler", "profiler_legacy", "profiler_util", "kineto_available",
           "set_multithreading_enabled", "is_multithreading_enabled", "Function", "FunctionCtx", "once_differentiable", "gradgradcheck", "backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "gradcheck",
           "GradcheckError", "inference_mode", "is_inference_mode_enabled", "detect_anomaly", "set_detect_anomaly",
           "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "enforce_grad_layout_policy"]


def variable(*args, **kwargs):
    """Removed in PyTorch, which keeps the name to say so: raises, pointing to ember.tensor."""
    raise RuntimeError("torch.autograd.variable(...) is deprecated, use torch.tensor(...) instead")
