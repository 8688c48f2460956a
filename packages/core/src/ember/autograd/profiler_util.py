"""torch.autograd.profiler_util: the event types both profiler APIs return (defined once, in
ember.profiler)."""

from ..profiler import EventList, FunctionEvent, FunctionEventAvg

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg"]
