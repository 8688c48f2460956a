"""ember.backends.cpu (torch.backends.cpu)."""

from __future__ import annotations

from .. import _C

__all__ = ["get_cpu_capability"]

# The runtime's names for its kernel sets, spelled as PyTorch reports its own.
_CAPABILITY_NAMES = {"default": "DEFAULT", "avx2": "AVX2", "avx512": "AVX512"}


def get_cpu_capability() -> str:
    """The vector instruction set the CPU kernels were chosen for at start-up, spelled as PyTorch
    spells its own: "AVX2", or "DEFAULT" for the portable kernels (EMBER_CPU_CAPABILITY=default
    forces them)."""
    capability = _C._cpu_capability()
    return _CAPABILITY_NAMES.get(capability, capability.upper())
