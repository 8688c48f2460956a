"""Run a PyTorch script on Ember, unchanged: ``python -m ember.compat.run script.py [args...]``.

The torch shim (ember.compat.torch_shim) is installed first, then the script runs as
``__main__`` with ``sys.argv`` = [script, args...], as ``python script.py args...`` would run it.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

from ember.compat import torch_shim


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(__doc__.strip())
        raise SystemExit(0 if args else 2)
    script = args[0]
    torch_shim.install()
    sys.argv = list(args)
    sys.path.insert(0, str(Path(script).resolve().parent))  # as python script.py puts its folder first
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
