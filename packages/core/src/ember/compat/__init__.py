"""Running PyTorch code on Ember unchanged.

``ember.compat.torch_shim`` makes ``import torch`` (and every ``torch.<sub>``) resolve to
``ember`` (and ``ember.<sub>``); ``python -m ember.compat.run script.py [args]`` runs a script
with it installed.
"""
