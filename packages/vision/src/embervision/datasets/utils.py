"""Download, checksum and archive helpers for the datasets, in the shape of torchvision.datasets.utils.

Downloads go through `ember.hub.download_url_to_file` (atomic, optional SHA-256 prefix check), then
the MD5 torchvision publishes for each file is checked. Archives are extracted safely: every member
is checked before anything is written (Note [safe extraction]).
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import lzma
import os
import pathlib
import posixpath
import shutil
import stat
import tarfile
import zipfile
from collections.abc import Callable, Iterable
from typing import IO, Any

__all__ = [
    "calculate_md5", "check_md5", "check_integrity", "download_url", "download_and_extract_archive",
    "extract_archive", "iterable_to_str", "verify_str_arg", "list_dir", "list_files",
]

_CHUNK = 1024 * 1024


def calculate_md5(fpath: str | pathlib.Path, chunk_size: int = _CHUNK) -> str:
    """The hex MD5 digest of a file (MD5 is what torchvision publishes; it guards against corruption,
    not tampering)."""
    md5 = hashlib.md5(usedforsecurity=False)
    with open(fpath, "rb") as f:
        while chunk := f.read(chunk_size):
            md5.update(chunk)
    return md5.hexdigest()


def check_md5(fpath: str | pathlib.Path, md5: str, **kwargs: Any) -> bool:
    return md5 == calculate_md5(fpath, **kwargs)


def check_integrity(fpath: str | pathlib.Path, md5: str | None = None) -> bool:
    """True when the file exists and, if `md5` is given, has that digest."""
    if not os.path.isfile(fpath):
        return False
    if md5 is None:
        return True
    return check_md5(fpath, md5)


def _sha256(fpath: str) -> str:
    digest = hashlib.sha256()
    with open(fpath, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def download_url(url: str, root: str | pathlib.Path, filename: str | None = None, md5: str | None = None,
                 max_redirect_hops: int = 3, *, sha256: str | None = None) -> None:
    """Download `url` into `root/filename` (default: the URL's basename) unless a file with the
    expected checksum is already there. `md5` (torchvision's) and `sha256` (an ember extension,
    full digest or a prefix) are checked after the download; a mismatch removes the file and raises
    RuntimeError. Redirects are followed by urllib (`max_redirect_hops` is kept for signature
    compatibility)."""
    from ember.hub import download_url_to_file

    root = os.path.expanduser(os.fspath(root))
    if not filename:
        filename = os.path.basename(url.split("?", 1)[0])
    fpath = os.path.join(root, filename)
    os.makedirs(root, exist_ok=True)
    if check_integrity(fpath, md5) and (sha256 is None or _sha256(fpath).startswith(sha256)):
        return
    # the hub checks the SHA-256 prefix before it moves the file into place
    download_url_to_file(url, fpath, hash_prefix=sha256, progress=False)
    if not check_integrity(fpath, md5):
        os.remove(fpath)
        raise RuntimeError("File not found or corrupted.")


def list_dir(root: str | pathlib.Path, prefix: bool = False) -> list[str]:
    """The directories directly under `root` (full paths when `prefix`)."""
    root = os.path.expanduser(os.fspath(root))
    names = [p for p in sorted(os.listdir(root)) if os.path.isdir(os.path.join(root, p))]
    return [os.path.join(root, d) for d in names] if prefix else names


def list_files(root: str | pathlib.Path, suffix: str, prefix: bool = False) -> list[str]:
    """The files directly under `root` whose names end with `suffix` (a str or tuple)."""
    root = os.path.expanduser(os.fspath(root))
    names = [p for p in sorted(os.listdir(root)) if os.path.isfile(os.path.join(root, p)) and p.endswith(suffix)]
    return [os.path.join(root, d) for d in names] if prefix else names


# ----------------------------------------------------------------------------- archives

# Note [safe extraction]
# ~~~~~~~~~~~~~~~~~~~~~~
# An archive is untrusted input: a member named "/etc/x" or "../x", a symlink to "/" followed by a
# member written through it, a hardlink to a file outside, or a device node would write or expose
# files outside the extraction root. Every member is checked against the root before it is written:
# names must be relative without "..", links must point inside (their targets may not contain ".."
# either, since ".." after a symlink resolves physically, not lexically), and only regular files,
# directories and such links are allowed. Members are then written one by one, each after checking
# that the real path of its directory (symlinks already extracted included) is still inside the root.

_COMPRESSIONS: dict[str, Callable[..., IO[bytes]]] = {".bz2": bz2.open, ".gz": gzip.open, ".xz": lzma.open}
_ARCHIVE_SUFFIXES = {".tar": (".tar", None), ".zip": (".zip", None), ".tgz": (".tar", ".gz"),
                     ".tbz": (".tar", ".bz2"), ".tbz2": (".tar", ".bz2"), ".txz": (".tar", ".xz")}


def _detect_file_type(path: str) -> tuple[str, str | None, str | None]:
    """(suffix, archive type, compression) of a file name, as torchvision reads them."""
    suffixes = pathlib.Path(path).suffixes
    if not suffixes:
        raise RuntimeError(f"File '{path}' has no suffixes that could be used to detect the archive type and "
                           "compression.")
    suffix = suffixes[-1]
    if suffix in _ARCHIVE_SUFFIXES:
        archive, compression = _ARCHIVE_SUFFIXES[suffix]
        return suffix, archive, compression
    if suffix in _COMPRESSIONS:
        if len(suffixes) > 1 and suffixes[-2] == ".tar":
            return "".join(suffixes[-2:]), ".tar", suffix
        return suffix, None, suffix
    known = sorted(set(_ARCHIVE_SUFFIXES) | set(_COMPRESSIONS))
    raise RuntimeError(f"Unknown compression or archive type: '{suffix}'.\nKnown suffixes are: '{known}'.")


def _check_relative(name: str, what: str) -> None:
    # a name must stay under the root lexically: not absolute, no drive, no "..", no backslash tricks
    normalized = name.replace("\\", "/")
    if normalized.startswith("/") or (len(normalized) > 1 and normalized[1] == ":"):
        raise ValueError(f"refusing to extract {what} {name!r}: it is an absolute path")
    if ".." in normalized.split("/"):
        raise ValueError(f"refusing to extract {what} {name!r}: it contains '..' and would escape the extraction root")
    if "\x00" in name:
        raise ValueError(f"refusing to extract {what} {name!r}: it contains a NUL byte")


def _inside(root_real: str, path: str) -> bool:
    path = os.path.realpath(path)
    return path == root_real or path.startswith(root_real + os.sep)


def _names_root(name: str) -> bool:
    # "", "." and "./" name the extraction root itself: only a directory entry may do that
    return posixpath.normpath(name.replace("\\", "/") or ".") == "."


def _check_tar_member(member: tarfile.TarInfo) -> None:
    name = member.name
    _check_relative(name, "archive member")
    if _names_root(name) and not member.isdir():
        raise ValueError(f"refusing to extract archive member {name!r}: a file cannot replace the extraction root")
    if member.issym() or member.islnk():
        kind = "symlink" if member.issym() else "hardlink"
        target = member.linkname
        if not target:
            raise ValueError(f"refusing to extract archive member {name!r}: it is a {kind} with an empty target")
        try:
            _check_relative(target, f"{kind} target of archive member {name!r} ->")
        except ValueError as error:
            raise ValueError(f"refusing to extract archive member {name!r}: it is a {kind} to {target!r} "
                             "outside the extraction root") from error
    elif not (member.isfile() or member.isdir()):
        raise ValueError(f"refusing to extract archive member {name!r}: it is a device, FIFO or other special file")


def _extract_tar(from_path: str, to_path: str, compression: str | None) -> None:
    mode = f"r:{compression[1:]}" if compression else "r"
    os.makedirs(to_path, exist_ok=True)
    root_real = os.path.realpath(to_path)
    with tarfile.open(from_path, mode) as tar:
        members = tar.getmembers()
        for member in members:  # everything is checked before anything is written
            _check_tar_member(member)
        for member in members:
            dest = os.path.join(to_path, member.name)
            if not _inside(root_real, os.path.dirname(dest)) or (os.path.islink(dest) and not member.isdir()):
                raise ValueError(f"refusing to extract archive member {member.name!r}: it would be written "
                                 "through a symlink outside the extraction root")
            if member.issym():
                link_dest = os.path.join(os.path.dirname(dest), member.linkname)
                if not _inside(root_real, link_dest):
                    raise ValueError(f"refusing to extract archive member {member.name!r}: it is a symlink to "
                                     f"{member.linkname!r} outside the extraction root")
            if member.islnk() and not _inside(root_real, os.path.join(to_path, member.linkname)):
                raise ValueError(f"refusing to extract archive member {member.name!r}: it is a hardlink to "
                                 f"{member.linkname!r} outside the extraction root")
            # the stdlib's "data" filter repeats these checks and drops unsafe mode bits
            if hasattr(tarfile, "data_filter"):
                tar.extract(member, to_path, filter="data")
            else:  # pragma: no cover - Python without PEP 706
                tar.extract(member, to_path)


def _extract_zip(from_path: str, to_path: str, compression: str | None) -> None:
    os.makedirs(to_path, exist_ok=True)
    root_real = os.path.realpath(to_path)
    with zipfile.ZipFile(from_path, "r") as archive:
        infos = archive.infolist()
        for info in infos:
            _check_relative(info.filename, "archive member")
            if _names_root(info.filename) and not info.is_dir():
                raise ValueError(f"refusing to extract archive member {info.filename!r}: a file cannot replace the "
                                 "extraction root")
            kind = stat.S_IFMT(info.external_attr >> 16)
            if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
                raise ValueError(f"refusing to extract archive member {info.filename!r}: it is a symlink or "
                                 "special file")
        for info in infos:
            if not _inside(root_real, os.path.dirname(os.path.join(to_path, info.filename))):
                raise ValueError(f"refusing to extract archive member {info.filename!r}: it would be written "
                                 "outside the extraction root")
            archive.extract(info, to_path)


def _decompress(from_path: str, to_path: str, compression: str, remove_finished: bool) -> str:
    with _COMPRESSIONS[compression](from_path, "rb") as src, open(to_path, "wb") as dst:
        shutil.copyfileobj(src, dst, _CHUNK)
    if remove_finished:
        os.remove(from_path)
    return to_path


def extract_archive(from_path: str | pathlib.Path, to_path: str | pathlib.Path | None = None,
                    remove_finished: bool = False) -> str:
    """Extract a .zip, .tar, .tar.gz/.tgz, .tar.bz2/.tbz, .tar.xz/.txz archive into `to_path` (default:
    the archive's directory), or decompress a .gz/.bz2/.xz file there (the name less its suffix).
    Returns `to_path`. A member that would land outside `to_path` (absolute, "..", a link pointing
    outside, a device file) raises ValueError naming it, before anything is written."""
    from_path = os.fspath(from_path)
    to_path = os.path.dirname(from_path) if to_path is None else os.fspath(to_path)
    suffix, archive, compression = _detect_file_type(from_path)
    if archive is None:
        assert compression is not None
        target = os.path.join(to_path, os.path.basename(from_path)[: -len(suffix)])
        os.makedirs(to_path, exist_ok=True)
        return _decompress(from_path, target, compression, remove_finished)
    (_extract_zip if archive == ".zip" else _extract_tar)(from_path, to_path, compression)
    if remove_finished:
        os.remove(from_path)
    return to_path


def download_and_extract_archive(url: str, download_root: str | pathlib.Path,
                                 extract_root: str | pathlib.Path | None = None, filename: str | None = None,
                                 md5: str | None = None, remove_finished: bool = False, *,
                                 sha256: str | None = None) -> None:
    download_root = os.path.expanduser(os.fspath(download_root))
    if extract_root is None:
        extract_root = download_root
    if not filename:
        filename = os.path.basename(url.split("?", 1)[0])
    download_url(url, download_root, filename, md5, sha256=sha256)
    archive = os.path.join(download_root, filename)
    extract_archive(archive, extract_root, remove_finished)


# ----------------------------------------------------------------------------- arguments

def iterable_to_str(iterable: Iterable) -> str:
    return "'" + "', '".join([str(item) for item in iterable]) + "'"


def verify_str_arg(value: Any, arg: str | None = None, valid_values: Iterable[str] | None = None,
                   custom_msg: str | None = None) -> str:
    """`value` if it is a str among `valid_values`, else ValueError with torchvision's message."""
    if not isinstance(value, str):
        msg = "Expected type str" + ("" if arg is None else f" for argument {arg}") + f", but got type {type(value)}."
        raise ValueError(msg)
    if valid_values is None:
        return value
    if value not in valid_values:
        if custom_msg is not None:
            raise ValueError(custom_msg)
        raise ValueError(f"Unknown value '{value}' for argument {arg}. Valid values are "
                         f"{{{iterable_to_str(valid_values)}}}.")
    return value


def _read_pfm(file_name: str | pathlib.Path, slice_channels: int = 2) -> Any:
    """A PFM file (Pf: 1 channel, PF: 3) as a float32 [C, H, W] NumPy array, its first `slice_channels`
    channels; rows are stored bottom to top and come back top to bottom. The header and the data size
    are checked (ValueError)."""
    import re

    import numpy as np

    with open(file_name, "rb") as f:
        data = f.read()
    lines = data.split(b"\n", 3)
    if len(lines) < 4 or lines[0].rstrip() not in (b"PF", b"Pf"):
        raise ValueError(f"{file_name}: Invalid PFM file")
    dims = re.match(rb"^(\d+)\s+(\d+)\s*$", lines[1])
    if not dims:
        raise ValueError(f"{file_name}: Malformed PFM header.")
    w, h = (int(d) for d in dims.groups())
    try:
        scale = float(lines[2].strip())
    except ValueError as error:
        raise ValueError(f"{file_name}: Malformed PFM scale {lines[2][:20]!r}") from error
    if scale == 0 or scale != scale:
        raise ValueError(f"{file_name}: Malformed PFM scale {scale}")
    endian = "<" if scale < 0 else ">"
    channels = 3 if lines[0].rstrip() == b"PF" else 1
    payload = lines[3]
    need = 4 * w * h * channels
    if len(payload) != need:
        raise ValueError(f"{file_name}: PFM of {w}x{h}x{channels} needs {need} bytes of data, found {len(payload)}")
    array = np.frombuffer(payload, dtype=endian + "f4").reshape(h, w, channels).transpose(2, 0, 1)
    return np.flip(array, axis=1)[:slice_channels].astype(np.float32)
