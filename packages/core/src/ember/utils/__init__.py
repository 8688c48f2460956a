"""ember.utils, as torch.utils: ``ember.utils.data`` (datasets, samplers, DataLoader)."""

from . import data  # noqa: F401 - ember.utils.data, as torch.utils.data
