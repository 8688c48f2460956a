"""emberrec: recommendation for Ember, in the shape of TorchRec.

Jagged and keyed-jagged tensors (``emberrec.sparse``), embedding collections over ember's
table-batched embeddings (``emberrec.modules``), quantized inference collections
(``emberrec.quant``), RecMetrics (``emberrec.metrics``), the sharding planner
(``emberrec.distributed.planner``), DLRM and two-tower retrieval (``emberrec.models``) and
Criteo/MovieLens readers as emberdata pipes (``emberrec.datasets``). TorchRec code ports by
replacing ``torchrec`` with ``emberrec`` and ``torch`` with ``ember``.

Importing ``emberrec`` checks that the installed ``ember`` core is in the tested range (Note
[core compatibility check]).
"""

from __future__ import annotations

import importlib

__version__ = "0.1.1"

# Note [core compatibility check]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# emberrec is pure Python on core's kernels, so release.toml gives it a tested core range, which
# pyproject.toml pins and _SUPPORTED_CORE repeats; ember.utils._packages checks it at import (a
# core older than that module is older than the range).
_SUPPORTED_CORE = (">=0.2.1", "<0.3")


def _check_core() -> None:
    wanted = ",".join(_SUPPORTED_CORE)
    try:
        import ember
    except ImportError as error:
        if getattr(error, "name", None) == "ember":
            raise ImportError(f"emberrec {__version__} needs ember {wanted}, which is not installed: "
                              f"pip install 'ember{wanted}'") from error
        raise ImportError(f"emberrec needs ember {wanted}, but importing ember failed: {error}") from error
    try:
        from ember.utils._packages import check_supported_core
    except ImportError:
        raise ImportError(f"emberrec {__version__} supports ember {wanted}, but ember "
                          f"{getattr(ember, '__version__', '?')} is installed: pip install 'ember{wanted}'") from None
    check_supported_core("emberrec", __version__, _SUPPORTED_CORE)


_check_core()

_SUBMODULES = ("datasets", "distributed", "metrics", "models", "modules", "quant", "sparse")
# The names TorchRec exports at its top level, and the module each lives in.
_EXPORTS = {
    "DataType": "emberrec.modules.embedding_configs",
    "EmbeddingBagConfig": "emberrec.modules.embedding_configs",
    "EmbeddingConfig": "emberrec.modules.embedding_configs",
    "PoolingType": "emberrec.modules.embedding_configs",
    "EmbeddingBagCollection": "emberrec.modules.embedding_modules",
    "EmbeddingCollection": "emberrec.modules.embedding_modules",
    "JaggedTensor": "emberrec.sparse.jagged_tensor",
    "KeyedJaggedTensor": "emberrec.sparse.jagged_tensor",
    "KeyedTensor": "emberrec.sparse.jagged_tensor",
}

__all__ = ["__version__", *_EXPORTS, *_SUBMODULES]


def __getattr__(name: str) -> object:
    # Everything loads on first use: metrics, the planner, models and datasets are not needed to
    # look up embeddings.
    if name in _SUBMODULES:
        return importlib.import_module(f"emberrec.{name}")
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'emberrec' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS, *_SUBMODULES])
