"""``import torch`` resolved to ``ember``: a finder placed first on ``sys.meta_path`` answers
every ``torch`` and ``torch.<sub>`` import with the Ember module of the same path, registered
under the torch name, so ``import torch.nn as nn`` gives ``ember.nn`` and
``from torch.utils.data import DataLoader`` gives Ember's. A torch submodule Ember lacks fails
with ModuleNotFoundError naming the Ember module that is missing. Only imports are mapped: names
inside modules are Ember's (see docs/compatibility-api.md for what exists).

A child process started with the "spawn" method (torch.multiprocessing.spawn, a spawn-context
Process or DataLoader worker) is a new interpreter that imports the script again; while the shim
is installed, such children install it before anything else, so their ``import torch`` maps too.

    from ember.compat import torch_shim
    torch_shim.install()      # afterwards: import torch  ->  ember
    torch_shim.uninstall()    # removes the finder and the torch entries it made
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import multiprocessing.spawn
import sys

_TORCH = "torch"


def _ember_name(torch_name: str) -> str:
    return "ember" + torch_name[len(_TORCH):]


class _Loader(importlib.abc.Loader):
    def create_module(self, spec):  # the default module object, replaced in exec_module
        return None

    def exec_module(self, module) -> None:
        # The import system returns whatever sys.modules holds under the name after this call,
        # so the Ember module itself is what `import torch...` binds (its own __spec__ untouched).
        sys.modules[module.__name__] = importlib.import_module(_ember_name(module.__name__))


class _TorchFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname != _TORCH and not fullname.startswith(_TORCH + "."):
            return None
        ember_name = _ember_name(fullname)
        if importlib.util.find_spec(ember_name) is None:
            raise ModuleNotFoundError(
                f"No module named '{fullname}': the torch shim maps it to '{ember_name}', which Ember "
                "does not have", name=fullname)
        return importlib.util.spec_from_loader(fullname, _Loader())


_FINDER = _TorchFinder()

# multiprocessing's command line for a spawned child, kept to restore; ours runs `_PRELUDE` first
_SPAWN_COMMAND_LINE = multiprocessing.spawn.get_command_line
_PRELUDE = "from ember.compat import torch_shim; torch_shim.install(); "


def _spawn_command_line(**kwds) -> list[str]:
    command = _SPAWN_COMMAND_LINE(**kwds)
    if "-c" in command:  # (a frozen executable has no -c program: left as it is)
        at = command.index("-c") + 1
        command[at] = _PRELUDE + command[at]
    return command


def install() -> None:
    """Map ``torch`` imports to ``ember`` from now on (a torch already imported is replaced)."""
    for name in [n for n in sys.modules if n == _TORCH or n.startswith(_TORCH + ".")]:
        del sys.modules[name]
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    multiprocessing.spawn.get_command_line = _spawn_command_line


def uninstall() -> None:
    """Remove the finder and every ``torch`` entry it put in ``sys.modules``."""
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    multiprocessing.spawn.get_command_line = _SPAWN_COMMAND_LINE
    for name in [n for n in sys.modules if n == _TORCH or n.startswith(_TORCH + ".")]:
        module = sys.modules[name]
        if getattr(module, "__name__", "").startswith("ember"):
            del sys.modules[name]


def installed() -> bool:
    return _FINDER in sys.meta_path
