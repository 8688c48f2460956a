"""Optimizers for embedding tables (TorchRec's ``torchrec.optim``): row-wise Adagrad, and the
keyed optimizer that fused collections expose through ``fused_optimizer()``."""

from emberrec.optim.keyed import KeyedOptimizer
from emberrec.optim.rowwise_adagrad import RowWiseAdagrad

__all__ = ["KeyedOptimizer", "RowWiseAdagrad"]
