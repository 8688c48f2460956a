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
import re

__version__ = "0.1.0"

# Note [core compatibility check]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# emberrec is pure Python on core's kernels, so release.toml gives it a tested core range
# (`core = ">=0.2,<0.3"`), which pyproject.toml pins and _SUPPORTED_CORE repeats. A core installed
# with --no-deps, or upgraded afterwards, fails here with a message naming both versions rather
# than later inside some op. Only the numeric release part counts ("0.2.1.dev3" is 0.2.1).
_SUPPORTED_CORE = (">=0.2", "<0.3")
_COMPAT_PAGE = "docs/compatibility.md (the Ember compatibility page)"


def _release(version: str) -> tuple[int, int, int]:
    found = re.match(r"\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?", version)
    if found is None:
        raise ValueError(f"cannot read a release number from version {version!r}")
    major, minor, micro = (int(part or 0) for part in found.groups())
    return major, minor, micro


def _in_supported_range(core_version: str) -> bool:
    low, high = (_release(bound.lstrip("<>=")) for bound in _SUPPORTED_CORE)
    try:
        return low <= _release(core_version) < high
    except ValueError:
        return False


def _check_core() -> None:
    wanted = ",".join(_SUPPORTED_CORE)
    advice = f"pip install 'ember{wanted}'; see {_COMPAT_PAGE}."
    try:
        import ember
    except ImportError as error:
        if getattr(error, "name", None) == "ember":
            raise ImportError(f"emberrec {__version__} needs ember {wanted}, which is not installed: {advice}") from error
        raise ImportError(f"emberrec needs ember {wanted}, but importing ember failed: {error}") from error
    core_version = str(getattr(ember, "__version__", "unknown"))
    if not _in_supported_range(core_version):
        raise ImportError(
            f"emberrec {__version__} supports ember {wanted}, but ember {core_version} is installed. "
            f"Install a matching pair: {advice}"
        )


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
