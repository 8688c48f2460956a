"""Built-in DDP communication hooks: default_hooks (all-reduce, fp16/bf16 compression) and
powerSGD_hook (low-rank compression with error feedback). Register one with
DistributedDataParallel.register_comm_hook(state, hook)."""

from . import default_hooks, powerSGD_hook  # noqa: N813 - torch's module name

__all__ = ["default_hooks", "powerSGD_hook"]
