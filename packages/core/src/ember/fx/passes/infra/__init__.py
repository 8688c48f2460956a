"""Pass infrastructure for FX graphs (torch.fx.passes.infra): ``pass_base.PassBase`` /
``PassResult`` and ``pass_manager.PassManager``, which orders passes by constraints and runs them
until the graph stops changing."""

from . import pass_base, pass_manager

__all__ = ["pass_base", "pass_manager"]
