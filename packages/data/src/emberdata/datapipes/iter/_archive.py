"""Archives and compressed streams: TarArchiveLoader, ZipArchiveLoader, Decompressor.

Note [archive safety]
~~~~~~~~~~~~~~~~~~~~~
Archives come from elsewhere. A member's name is joined to the archive's path and often ends up
as a path on disk (``save_to_disk``), and a member's bytes often end up in memory. So the
loaders refuse, with UnsafeArchiveError:

- names that escape the archive: absolute (``/x``, ``C:\\x``, ``\\\\host``), with a ``..``
  component, or with a NUL byte;
- symbolic and hard links (they point outside the member list) and devices, FIFOs and
  other special members;
- members whose size passes ``max_member_size``, and archives whose members together pass
  ``max_total_size`` (decompression bombs); Decompressor stops a stream at ``max_size``.

``skip_unsafe=True`` skips such members with a warning instead. Directories are skipped
silently, as in torchdata; torchdata also skips links and devices silently, and checks no
names or sizes.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import posixpath
import stat
import tarfile
import warnings
import zipfile
from collections.abc import Iterator
from enum import Enum
from typing import Any

from emberdata.datapipes._base import IterDataPipe, functional_datapipe
from emberdata.datapipes.iter._fileio import StreamWrapper
from emberdata.datapipes.iter._grouping import _check_int

DEFAULT_MAX_MEMBER_SIZE = 4 << 30  # 4 GiB
DEFAULT_MAX_TOTAL_SIZE = 64 << 30  # 64 GiB


class UnsafeArchiveError(ValueError):
    """An archive member or stream that Note [archive safety] refuses."""


def _name_problem(name: str) -> str | None:
    if "\x00" in name:
        return "has a NUL byte in its name"
    unified = name.replace("\\", "/")
    if unified.startswith("/") or (len(unified) > 1 and unified[1] == ":"):
        return "has an absolute path"
    if ".." in unified.split("/"):
        return "escapes the archive root (a '..' component)"
    if posixpath.normpath(unified) in (".", ""):
        return "has an empty name"
    return None


def _check_caps(owner: object, max_member_size: int | None, max_total_size: int | None) -> None:
    if max_member_size is not None:
        _check_int(owner, "max_member_size", max_member_size, 0)
    if max_total_size is not None:
        _check_int(owner, "max_total_size", max_total_size, 0)


class _ArchiveLoader(IterDataPipe[tuple[str, StreamWrapper]]):
    """What the tar and zip loaders share: the checks of Note [archive safety]."""

    def __init__(
        self,
        datapipe: IterDataPipe[tuple[str, Any]],
        length: int,
        skip_unsafe: bool,
        max_member_size: int | None,
        max_total_size: int | None,
    ) -> None:
        _check_caps(self, max_member_size, max_total_size)
        self.datapipe = datapipe
        self.length = length
        self.skip_unsafe = skip_unsafe
        self.max_member_size = max_member_size
        self.max_total_size = max_total_size

    def _refuse(self, archive: str, member: str, problem: str) -> None:
        message = f"{type(self).__name__}: member {member!r} of {archive!r} {problem}"
        if not self.skip_unsafe:
            raise UnsafeArchiveError(message)
        warnings.warn(message + "; skipped", UserWarning, stacklevel=3)

    def _admit(self, archive: str, member: str, size: int, total: int, kind: str | None) -> bool:
        """True when the member may be yielded (Note [archive safety])."""
        problem = kind or _name_problem(member)
        if problem is None and self.max_member_size is not None and size > self.max_member_size:
            problem = f"is {size} bytes, over max_member_size={self.max_member_size}"
        if problem is None and self.max_total_size is not None and total + size > (
            self.max_total_size
        ):
            problem = (
                f"brings the archive past max_total_size={self.max_total_size} "
                f"({total + size} bytes)"
            )
        if problem is not None:
            self._refuse(archive, member, problem)
            return False
        return True

    def __len__(self) -> int:
        if self.length == -1:
            raise TypeError(f"{type(self).__name__} instance doesn't have valid length")
        return self.length


def _tar_kind(member: tarfile.TarInfo) -> str | None:
    if member.isfile():
        return None
    if member.issym() or member.islnk():
        return f"is a link (to {member.linkname!r})"
    if member.ischr() or member.isblk():
        return "is a device"
    if member.isfifo():
        return "is a FIFO"
    return f"is a special member (type {member.type!r})"


@functional_datapipe("load_from_tar")
class TarArchiveLoader(_ArchiveLoader):
    """Opens ``(path, binary_stream)`` tuples as tar archives and yields ``(path/member_name,
    member_stream)`` for each regular file (functional name: ``load_from_tar``).

    Args:
        datapipe: pipe of ``(path, stream)``, e.g. from ``open_files(mode="b")``
        mode: the :func:`tarfile.open` mode; ``"r:*"`` detects compression, ``"r|*"`` reads
            a non-seekable stream
        length: the number of members, if known
        skip_unsafe: skip refused members with a warning instead of raising
        max_member_size, max_total_size: size caps in bytes (None: no cap)

    Members are refused as Note [archive safety] says.
    """

    def __init__(
        self,
        datapipe: IterDataPipe[tuple[str, Any]],
        mode: str = "r:*",
        length: int = -1,
        *,
        skip_unsafe: bool = False,
        max_member_size: int | None = DEFAULT_MAX_MEMBER_SIZE,
        max_total_size: int | None = DEFAULT_MAX_TOTAL_SIZE,
    ) -> None:
        if not isinstance(mode, str) or not mode.startswith(("r:", "r|")) and mode != "r":
            raise ValueError(f"TarArchiveLoader reads archives: mode must be 'r', 'r:*', "
                             f"'r|*' or similar, but got {mode!r}")
        super().__init__(datapipe, length, skip_unsafe, max_member_size, max_total_size)
        self.mode = mode

    def __iter__(self) -> Iterator[tuple[str, StreamWrapper]]:
        for path, stream in self.datapipe:
            try:
                archive = tarfile.open(fileobj=stream, mode=self.mode)  # noqa: SIM115
            except tarfile.TarError as error:
                raise tarfile.TarError(f"Unable to extract files from corrupted tarfile stream "
                                       f"{path!r}: {error}") from error
            total = 0
            for member in archive:
                if member.isdir():
                    continue
                if not self._admit(path, member.name, member.size, total, _tar_kind(member)):
                    continue
                total += member.size
                extracted = archive.extractfile(member)
                assert extracted is not None  # regular files always extract
                name = os.path.normpath(os.path.join(path, member.name))
                # The member stream keeps the archive alive: it reads through it lazily.
                yield name, StreamWrapper(extracted, parent_stream=archive, name=name)


def _zip_kind(info: zipfile.ZipInfo) -> str | None:
    mode = info.external_attr >> 16
    if info.create_system != 3 or mode == 0:  # not written on Unix: no file type recorded
        return None
    if stat.S_ISLNK(mode):
        return "is a symbolic link"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device"
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return "is a FIFO or socket"
    return None


@functional_datapipe("load_from_zip")
class ZipArchiveLoader(_ArchiveLoader):
    """Opens ``(path, binary_stream)`` tuples as zip archives and yields ``(path/member_name,
    member_stream)`` for each file (functional name: ``load_from_zip``). The stream must be
    seekable. Arguments and refusals as in :class:`TarArchiveLoader`."""

    def __init__(
        self,
        datapipe: IterDataPipe[tuple[str, Any]],
        length: int = -1,
        *,
        skip_unsafe: bool = False,
        max_member_size: int | None = DEFAULT_MAX_MEMBER_SIZE,
        max_total_size: int | None = DEFAULT_MAX_TOTAL_SIZE,
    ) -> None:
        super().__init__(datapipe, length, skip_unsafe, max_member_size, max_total_size)

    def __iter__(self) -> Iterator[tuple[str, StreamWrapper]]:
        for path, stream in self.datapipe:
            try:
                archive = zipfile.ZipFile(stream)
            except zipfile.BadZipFile as error:
                raise zipfile.BadZipFile(
                    f"Unable to extract files from corrupted zipfile stream {path!r}: {error}"
                ) from error
            total = 0
            for info in archive.infolist():
                if info.is_dir():
                    continue
                if not self._admit(path, info.filename, info.file_size, total, _zip_kind(info)):
                    continue
                total += info.file_size
                name = os.path.normpath(os.path.join(path, info.filename))
                yield name, StreamWrapper(archive.open(info), parent_stream=archive, name=name)


class CompressionType(Enum):
    GZIP = "gzip"
    LZMA = "lzma"
    TAR = "tar"
    ZIP = "zip"
    BZIP2 = "bz2"


_ALIASES = {"gz": "gzip", "xz": "lzma", "bzip2": "bz2"}
_SUFFIXES = {
    ".gz": CompressionType.GZIP,
    ".tgz": CompressionType.GZIP,
    ".xz": CompressionType.LZMA,
    ".lzma": CompressionType.LZMA,
    ".bz2": CompressionType.BZIP2,
    ".tar": CompressionType.TAR,
    ".zip": CompressionType.ZIP,
}


class _CappedReader(io.RawIOBase):
    """Reads a decompressing stream, refusing to produce more than ``limit`` bytes."""

    def __init__(self, raw: Any, limit: int | None, label: str) -> None:
        self.raw = raw
        self.limit = limit
        self.label = label
        self.produced = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.raw.read(len(buffer))
        n = len(data)
        self.produced += n
        if self.limit is not None and self.produced > self.limit:
            raise UnsafeArchiveError(
                f"Decompressor: {self.label!r} decompresses to more than max_size={self.limit} "
                "bytes"
            )
        buffer[:n] = data
        return n

    def close(self) -> None:
        if not self.closed:
            self.raw.close()
        super().close()


@functional_datapipe("decompress")
class Decompressor(IterDataPipe[tuple[str, Any]]):
    """Decompresses ``(path, binary_stream)`` tuples and yields ``(path_without_suffix,
    stream)`` (functional name: ``decompress``).

    Args:
        source_datapipe: pipe of ``(path, stream)``
        file_type: ``"gzip"`` (``"gz"``), ``"bz2"``, ``"lzma"`` (``"xz"``), ``"tar"`` or
            ``"zip"`` (or a :class:`CompressionType`); None: from each path's suffix
        max_size: refuse (UnsafeArchiveError) to decompress a gzip, bz2 or xz stream past this
            many bytes; None: no cap

    As in torchdata, a ``tar`` yields a :class:`tarfile.TarFile` and a ``zip`` a
    :class:`zipfile.ZipFile`; use TarArchiveLoader / ZipArchiveLoader for checked members.
    """

    def __init__(
        self,
        source_datapipe: IterDataPipe[tuple[str, Any]],
        file_type: str | CompressionType | None = None,
        *,
        max_size: int | None = DEFAULT_MAX_TOTAL_SIZE,
    ) -> None:
        if file_type is not None and not isinstance(file_type, CompressionType):
            if not isinstance(file_type, str):
                raise TypeError(f"Decompressor expected a str or CompressionType file_type, "
                                f"but got {type(file_type).__name__}")
            value = _ALIASES.get(file_type.lower(), file_type.lower())
            try:
                file_type = CompressionType(value)
            except ValueError:
                raise ValueError(
                    f"Decompressor: unknown file_type {file_type!r}; choose one of "
                    f"{[t.value for t in CompressionType]}"
                ) from None
        if max_size is not None:
            _check_int(self, "max_size", max_size, 0)
        self.source_datapipe = source_datapipe
        self.file_type = file_type
        self.max_size = max_size

    def _type_of(self, path: str) -> tuple[CompressionType, str]:
        stem, suffix = os.path.splitext(path)
        kind = _SUFFIXES.get(suffix.lower())
        if self.file_type is not None:
            return self.file_type, stem if kind is self.file_type else path
        if kind is None:
            raise ValueError(
                f"Decompressor: cannot tell the compression of {path!r} from its suffix; pass "
                "file_type"
            )
        return kind, stem + ".tar" if suffix.lower() == ".tgz" else stem

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        for path, stream in self.source_datapipe:
            kind, out_path = self._type_of(path)
            if kind is CompressionType.TAR:
                yield out_path, tarfile.open(fileobj=stream, mode="r:*")  # noqa: SIM115
                continue
            if kind is CompressionType.ZIP:
                yield out_path, zipfile.ZipFile(stream)
                continue
            opener = {
                CompressionType.GZIP: lambda s: gzip.GzipFile(fileobj=s),
                CompressionType.BZIP2: bz2.BZ2File,
                CompressionType.LZMA: lzma.LZMAFile,
            }[kind]
            capped = _CappedReader(opener(stream), self.max_size, path)
            yield out_path, StreamWrapper(io.BufferedReader(capped), name=out_path)

    def __len__(self) -> int:
        return self._source_len(self.source_datapipe)
