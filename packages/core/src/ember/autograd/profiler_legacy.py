"""torch.autograd.profiler_legacy: the pre-Kineto profiler's name. In Ember it is the same recorder
as ember.autograd.profiler.profile, with the legacy signature."""

from __future__ import annotations

from . import profiler as _profiler

__all__ = ["profile"]


class profile(_profiler.profile):
    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, record_shapes: bool = False,
                 with_flops: bool = False, profile_memory: bool = False, with_stack: bool = False,
                 with_modules: bool = False):
        super().__init__(enabled, use_cuda=use_cuda, record_shapes=record_shapes, with_flops=with_flops,
                         profile_memory=profile_memory, with_stack=with_stack, with_modules=with_modules)
