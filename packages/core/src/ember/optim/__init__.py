"""ember.optim (torch.optim): optimizers over parameter groups, lr_scheduler and swa_utils."""

from . import lr_scheduler, swa_utils
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .lbfgs import LBFGS
from .muon import Muon
from .nadam import NAdam
from .optimizer import Optimizer, swap_in_optimizer_params_and_state
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adagrad", "RMSprop", "Adadelta", "Adamax", "NAdam", "RAdam",
           "LBFGS", "ASGD", "Rprop", "SparseAdam", "Adafactor", "Muon", "lr_scheduler", "swa_utils",
           "swap_in_optimizer_params_and_state"]
