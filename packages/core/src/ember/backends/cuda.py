"""ember.backends.cuda (torch.backends.cuda): CUDA's switches, with PyTorch's defaults.

`matmul.allow_tf32` is PyTorch's view of the float32 matmul precision: setting it True is
`ember.set_float32_matmul_precision("high")`, False is "highest", and it reads True unless the
precision is "highest". The scaled-dot-product-attention switches choose among CUDA kernels; the
CPU has one implementation, so they are recorded and read back only.
"""

from __future__ import annotations

import contextlib
import warnings

from .. import _C

__all__ = ["can_use_cudnn_attention", "can_use_efficient_attention", "can_use_flash_attention", "cudnn_sdp_enabled",
           "enable_cudnn_sdp", "enable_flash_sdp", "enable_math_sdp", "enable_mem_efficient_sdp", "flash_sdp_enabled",
           "is_built", "is_flash_attention_available", "math_sdp_enabled", "matmul", "mem_efficient_sdp_enabled",
           "preferred_linalg_library", "sdp_kernel"]


def is_built() -> bool:
    """Whether this build of ember includes the CUDA backend (not whether a GPU is present)."""
    return _C._has_backend("cuda")


class _MatmulFlags:
    """torch.backends.cuda.matmul: attribute-style switches."""

    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True

    @property
    def allow_tf32(self) -> bool:
        return _C.get_float32_matmul_precision() != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value: bool) -> None:
        _C.set_float32_matmul_precision("high" if value else "highest")

    def __setattr__(self, name: str, value) -> None:
        if name not in ("allow_tf32", "allow_fp16_reduced_precision_reduction",
                        "allow_bf16_reduced_precision_reduction"):
            raise AttributeError(f"Unknown attribute {name}")  # as PyTorch: a typo must not pass silently
        super().__setattr__(name, value)

    def __getattr__(self, name: str):
        raise AttributeError(f"Unknown attribute {name}")


matmul = _MatmulFlags()

_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def cudnn_sdp_enabled() -> bool:
    return _sdp["cudnn"]


def enable_cudnn_sdp(enabled: bool) -> None:
    _sdp["cudnn"] = bool(enabled)


def is_flash_attention_available() -> bool:
    """Whether the flash-attention CUDA kernel is built in: no CUDA kernels here."""
    return False


def can_use_flash_attention(params=None, debug: bool = False) -> bool:
    """Whether a call could take the flash-attention CUDA kernel: never without one (the CPU
    attention is Ember's own)."""
    if debug:
        warnings.warn("flash attention: this build of ember has no CUDA kernels", stacklevel=2)
    return False


def can_use_efficient_attention(params=None, debug: bool = False) -> bool:
    """Whether a call could take the memory-efficient CUDA attention kernel: never without one."""
    if debug:
        warnings.warn("memory-efficient attention: this build of ember has no CUDA kernels", stacklevel=2)
    return False


def can_use_cudnn_attention(params=None, debug: bool = False) -> bool:
    """Whether a call could take cuDNN's attention: never, Ember does not link cuDNN."""
    if debug:
        warnings.warn("cuDNN attention: this build of ember does not link cuDNN", stacklevel=2)
    return False


def flash_sdp_enabled() -> bool:
    return _sdp["flash"]


def enable_flash_sdp(enabled: bool) -> None:
    _sdp["flash"] = bool(enabled)


def mem_efficient_sdp_enabled() -> bool:
    return _sdp["mem_efficient"]


def enable_mem_efficient_sdp(enabled: bool) -> None:
    _sdp["mem_efficient"] = bool(enabled)


def math_sdp_enabled() -> bool:
    return _sdp["math"]


def enable_math_sdp(enabled: bool) -> None:
    _sdp["math"] = bool(enabled)


@contextlib.contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True, enable_mem_efficient: bool = True):
    """Sets the attention-kernel switches for a block, then restores them."""
    saved = dict(_sdp)
    _sdp.update(flash=bool(enable_flash), math=bool(enable_math), mem_efficient=bool(enable_mem_efficient))
    try:
        yield
    finally:
        _sdp.update(saved)


_linalg_library = "default"


def preferred_linalg_library(backend: str | None = None) -> str:
    """The CUDA linear-algebra library preference ("default", "cusolver" or "magma"); recorded only:
    the CPU linear algebra is LAPACK (OpenBLAS) and Ember's own kernels."""
    global _linalg_library
    if backend is not None:
        if backend not in ("default", "cusolver", "magma"):
            raise RuntimeError(f"Unknown input value. Choose from: default, cusolver, magma, but got {backend!r}")
        _linalg_library = backend
    return _linalg_library
