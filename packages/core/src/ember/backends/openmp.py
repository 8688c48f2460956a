"""ember.backends.openmp (torch.backends.openmp): whether the CPU kernels run on OpenMP. Ember's
run on its own thread pool (Note [pool spinning]; ember.set_num_threads sizes it), so no."""

from __future__ import annotations

__all__ = ["is_available"]


def is_available() -> bool:
    return False
