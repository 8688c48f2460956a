"""What every dataset shares: where its files live, hash checks, archive members, splits.

Note [dataset files]
~~~~~~~~~~~~~~~~~~~~
Ember runs offline, so a dataset reads files that are already on disk, laid out as torchtext's
cache lays them out: everything under ``<root>/<DATASET_NAME>/``. For each file it looks for,
in order,

1. the file itself (for a member of an archive: the extracted member at its archive path), or
2. the archive (or raw download) it comes from, read without extracting it.

A downloaded file or archive is checked against the digest torchtext publishes for it (md5, or
sha256 for Multi30k) before it is read; ``verify_hash=False`` skips that, and extracted files
are read as they are. Archives are read through emberdata's loaders, which refuse members that
escape the archive, links, devices and oversized members (emberdata Note [archive safety]).
A missing file raises FileNotFoundError naming the paths tried and where the file comes from.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

try:
    from emberdata.datapipes import IterDataPipe
    from emberdata.datapipes.iter import IterableWrapper
except ImportError as error:  # the datasets are DataPipes; the rest of embertext needs no emberdata
    raise ImportError(
        "embertext.datasets builds on emberdata's DataPipes, which is not installed: "
        "pip install 'embertext[datasets]' (or emberdata>=0.2,<0.3)"
    ) from error

DEFAULT_ROOT = os.path.join("~", ".embertext", "cache")

__all__ = ["IterDataPipe", "IterableWrapper", "Download", "Member", "open_file", "finish", "splits"]


@dataclass(frozen=True)
class Download:
    """A file as torchtext downloads it: its name under the dataset directory, its digest."""

    name: str
    digest: str | None
    url: str
    hash_type: str = "md5"


@dataclass(frozen=True)
class Member:
    """A file inside a Download archive, at ``path`` (which is also where it sits extracted);
    ``loose`` matches any member whose name ends with ``path``."""

    archive: Download
    path: str
    loose: bool = False


# (path, size, mtime) -> digest already checked in this process, so a dataset built once per
# epoch hashes its archive once.
_VERIFIED: dict[tuple[str, int, int], str] = {}


def verify(path: str, download: Download) -> None:
    """Raise RuntimeError unless ``path`` has ``download``'s digest."""
    if download.digest is None:
        return
    st = os.stat(path)
    key = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
    if _VERIFIED.get(key) == download.digest:
        return
    digest = hashlib.new(download.hash_type)
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    if digest.hexdigest() != download.digest:
        raise RuntimeError(
            f"The {download.hash_type} hash {digest.hexdigest()} of {path!r} does not match the expected "
            f"{download.digest} (the file from {download.url}). Delete it and download it again, or pass "
            "verify_hash=False to read it anyway."
        )
    _VERIFIED[key] = download.digest


def dataset_dir(root: str | os.PathLike | None, name: str) -> str:
    root = DEFAULT_ROOT if root is None else root
    if not isinstance(root, (str, os.PathLike)):
        raise TypeError(f"root must be a path, but got {type(root).__name__}")
    return os.path.join(os.path.expanduser(os.fspath(root)), name)


def _member_matches(path: str, loose: bool, x: tuple[str, Any]) -> bool:
    name = os.path.normpath(x[0])
    return name.endswith(os.path.normpath(path) if loose else os.sep + os.path.normpath(path))


def _archive_kind(name: str) -> str:
    lower = name.lower()
    if lower.endswith(".zip"):
        return "zip"
    if lower.endswith((".tar.gz", ".tgz", ".tar")):
        return "tar"
    if lower.endswith(".gz"):
        return "gzip"
    raise ValueError(f"do not know how to read archive {name!r}")


def open_file(directory: str, dataset: str, source: Download | Member, verify_hash: bool):
    """A pipe yielding ``(path, binary stream)`` for one file (Note [dataset files])."""
    if isinstance(source, Download):
        path = os.path.join(directory, source.name)
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"{dataset}: {path!r} does not exist. Ember does not download; fetch {source.url} "
                f"({source.hash_type} {source.digest}) into {directory!r}."
            )
        if verify_hash:
            verify(path, source)
        return IterableWrapper([path]).open_files(mode="b")
    extracted = os.path.join(directory, source.path)
    if os.path.isfile(extracted):
        return IterableWrapper([extracted]).open_files(mode="b")
    archive = os.path.join(directory, source.archive.name)
    if not os.path.isfile(archive):
        raise FileNotFoundError(
            f"{dataset}: neither {extracted!r} nor the archive {archive!r} exists. Ember does not "
            f"download; fetch {source.archive.url} ({source.archive.hash_type} {source.archive.digest}) "
            f"into {directory!r}."
        )
    if verify_hash:
        verify(archive, source.archive)
    pipe = IterableWrapper([archive]).open_files(mode="b")
    kind = _archive_kind(source.archive.name)
    if kind == "gzip":
        return pipe.decompress(file_type="gzip")
    loaded = pipe.load_from_zip() if kind == "zip" else pipe.load_from_tar()
    return loaded.filter(partial(_member_matches, source.path, source.loose))


def finish(pipe):
    """torchtext's tail: a shuffle that DataLoader(shuffle=True) turns on, then the sharding
    filter that gives each worker its share."""
    return pipe.shuffle().set_shuffle(False).sharding_filter()


def read_lines(pipe, strip_newline: bool = True):
    return pipe.readlines(decode=True, errors="strict", strip_newline=strip_newline, return_path=False)


def read_csv(pipe, **fmtparams):
    return pipe.parse_csv(decode=True, errors="strict", **fmtparams)


def splits(
    name: str, split: str | Sequence[str], allowed: Sequence[str], build: Callable[[str], Any]
) -> Any:
    """torchtext's split argument: one name gives one pipe, a tuple gives a tuple of pipes."""
    if isinstance(split, str):
        names, single = [split], True
    elif isinstance(split, (tuple, list)):
        names, single = list(split), False
    else:
        raise TypeError(f"{name}: split must be a str or a tuple of str, but got {type(split).__name__}")
    for s in names:
        if s not in allowed:
            raise ValueError(f"{name}: {s!r} is not a split of this dataset; choose from {tuple(allowed)}")
    pipes = [build(s) for s in names]
    return pipes[0] if single else tuple(pipes)
