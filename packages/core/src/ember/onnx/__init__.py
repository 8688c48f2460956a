"""ember.onnx: the part of torch.onnx that holds without an exporter.

Scripts such as PyTorch's word_language_model example `import torch.onnx` at the top and export
only when asked to; the import has to work for them to run. Ember has no ONNX exporter, so
`export` and the rest of torch.onnx's API are absent: asking for them raises AttributeError
saying so, rather than a stand-in that would write no file.
"""

from __future__ import annotations

__all__ = ["is_in_onnx_export"]


def is_in_onnx_export() -> bool:
    """Whether an ONNX export is tracing the calling code: never, as Ember does not export."""
    return False


def __getattr__(name: str):
    if name.startswith("__"):  # keep Python's own probes (__path__, __file__ lookups) ordinary
        raise AttributeError(name)
    raise AttributeError(f"module 'ember.onnx' has no attribute '{name}': Ember has no ONNX exporter "
                         "(torch.onnx.export and the rest of torch.onnx are not implemented)")
