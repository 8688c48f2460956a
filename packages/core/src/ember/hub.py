"""ember.hub: fetch a checkpoint once into a local cache, verify it, then ember.load it.

The cache is $EMBER_HOME/hub/checkpoints (EMBER_HOME defaults to $XDG_CACHE_HOME/ember, else
~/.cache/ember), as torch.hub uses $TORCH_HOME. A download goes to a temporary file beside its
destination and is renamed into place only once complete and verified, so an interrupted or
corrupt download never leaves a file that a later call would trust. Unlike torch.hub, a cached
file is hashed again on every load that names a hash: the cache is a folder anyone may write to,
so a file that was right when downloaded is not trusted to still be.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import tempfile
import urllib.parse
import urllib.request
from typing import Any

from ._checkpoint import load

ENV_EMBER_HOME = "EMBER_HOME"
# torch.hub's naming convention: "<name>-<first hex digits of the SHA-256>.<ext>".
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
_MIN_HASH_PREFIX = 8
_CHUNK = 1 << 16
_hub_dir: str | None = None


def _ember_home() -> str:
    cache = os.getenv("XDG_CACHE_HOME", os.path.join("~", ".cache"))
    return os.path.expanduser(os.getenv(ENV_EMBER_HOME, os.path.join(cache, "ember")))


def get_dir() -> str:
    """The hub's cache folder: set_dir's value, else $EMBER_HOME/hub."""
    return _hub_dir if _hub_dir is not None else os.path.join(_ember_home(), "hub")


def set_dir(d: str | os.PathLike) -> None:
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


class _ProgressBar:
    """A one-line bar on stderr, redrawn with carriage returns; silent unless enabled."""

    def __init__(self, total: int | None, enabled: bool):
        self.total, self.enabled, self.done = total, enabled, 0

    def update(self, n: int) -> None:
        self.done += n
        if not self.enabled:
            return
        if self.total:
            frac = min(self.done / self.total, 1.0)
            bar = "#" * int(frac * 30)
            sys.stderr.write(f"\r{frac:6.1%} |{bar:<30}| {_size(self.done)}/{_size(self.total)}")
        else:
            sys.stderr.write(f"\r{_size(self.done)}")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.1f}{unit}" if unit != "B" else f"{int(n)}B"
        n /= 1024
    raise AssertionError("unreachable")


def download_url_to_file(url: str, dst: str | os.PathLike, hash_prefix: str | None = None,
                         progress: bool = True) -> None:
    """Download `url` (http, https or file) to `dst`, atomically.

    hash_prefix: the leading hex digits the file's SHA-256 must have, else RuntimeError and no file.
    progress: draw a bar on stderr when it is a terminal.
    """
    dst = os.path.abspath(os.fspath(dst))
    request = urllib.request.Request(url, headers={"User-Agent": "ember.hub"})
    with urllib.request.urlopen(request) as response:
        length = response.headers.get("Content-Length")
        total = int(length) if length is not None and length.isdigit() else None
        tmp = tempfile.NamedTemporaryFile(dir=os.path.dirname(dst), prefix=".", suffix=".partial", delete=False)
        bar = _ProgressBar(total, progress and sys.stderr.isatty())
        try:
            sha256 = hashlib.sha256()
            received = 0
            while chunk := response.read(_CHUNK):
                tmp.write(chunk)
                sha256.update(chunk)
                received += len(chunk)
                bar.update(len(chunk))
            tmp.close()
            if total is not None and received != total:
                raise RuntimeError(f"download of {url} stopped after {received} of {total} bytes")
            digest = sha256.hexdigest()
            if hash_prefix is not None and not digest.startswith(hash_prefix):
                raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{digest}")')
            os.replace(tmp.name, dst)
        finally:
            bar.close()
            tmp.close()
            if os.path.exists(tmp.name):
                os.remove(tmp.name)


def _sha256_of(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location: Any = None,
                             progress: bool = True, check_hash: bool = False, file_name: str | None = None,
                             weights_only: bool = True) -> Any:
    """Load the checkpoint at `url`, downloading it into `model_dir` (default get_dir()/checkpoints)
    unless a file of that name is already there.

    check_hash=True requires the file name to carry at least 8 hex digits of the SHA-256
    ("resnet18-5c106cde.pt") and the file to match them: the download, and the cached file on
    every later call (RuntimeError naming the file if it changed). Unlike torch.hub, a name
    without them is a ValueError rather than an unchecked download. weights_only is passed to
    ember.load (True: nothing in the file runs).
    """
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name or os.path.basename(urllib.parse.urlparse(url).path)
    if not filename:
        raise ValueError(f"[hub] cannot name a cache file after {url!r}; pass file_name")
    cached = os.path.join(model_dir, filename)
    hash_prefix = None
    if check_hash:
        match = HASH_REGEX.search(filename)
        if match is None or len(match.group(1)) < _MIN_HASH_PREFIX:
            raise ValueError(f"[hub] check_hash=True needs a file name like 'name-<at least {_MIN_HASH_PREFIX} "
                             f"hex digits of its SHA-256>.ext', but got {filename!r}")
        hash_prefix = match.group(1)
    if not os.path.exists(cached):
        if progress:
            sys.stderr.write(f'Downloading: "{url}" to {cached}\n')
        download_url_to_file(url, cached, hash_prefix, progress=progress)
    elif hash_prefix is not None:
        digest = _sha256_of(cached)
        if not digest.startswith(hash_prefix):
            raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{digest}") for the cached file '
                               f"{cached}: it changed after it was downloaded and verified; delete it to download "
                               "it again")
    return load(cached, map_location=map_location, weights_only=weights_only)
