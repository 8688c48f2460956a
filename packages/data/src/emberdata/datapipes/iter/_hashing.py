"""HashChecker: verify the digest of every stream against a table of expected digests."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterator
from typing import Any

from emberdata.datapipes._base import IterDataPipe, functional_datapipe

_CHUNK = 1 << 20


@functional_datapipe("check_hash")
class HashChecker(IterDataPipe[tuple[str, Any]]):
    """Checks each ``(path, stream_or_bytes)`` against ``hash_dict[path]`` and passes it on
    (functional name: ``check_hash``).

    A path missing from ``hash_dict``, or a digest that differs, raises RuntimeError.
    ``hash_type`` is ``"sha256"`` (default) or ``"md5"``. With ``rewind`` the stream is sought
    back to its start after hashing; a stream that cannot seek is read into memory and a
    ``BytesIO`` of it is passed on instead.
    """

    def __init__(
        self,
        source_datapipe: IterDataPipe[tuple[str, Any]],
        hash_dict: dict[str, str],
        hash_type: str = "sha256",
        rewind: bool = True,
    ) -> None:
        if hash_type not in ("sha256", "md5"):
            raise ValueError(
                f"Invalid hash_type {hash_type!r} requested, should be one of sha256 or md5"
            )
        if not isinstance(hash_dict, dict):
            raise TypeError(f"HashChecker expected a dict hash_dict, but got {type(hash_dict).__name__}")
        self.source_datapipe = source_datapipe
        self.hash_dict = hash_dict
        self.hash_type = hash_type
        self.rewind = rewind

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        for path, data in self.source_datapipe:
            if path not in self.hash_dict:
                raise RuntimeError(f"Unspecified hash for file {path!r}")
            digest = hashlib.new(self.hash_type)
            if isinstance(data, (str, bytes, bytearray)):
                digest.update(data.encode() if isinstance(data, str) else data)
            else:
                seekable = callable(getattr(data, "seekable", None)) and data.seekable()
                kept: list[bytes] = []
                while chunk := data.read(_CHUNK):
                    if isinstance(chunk, str):
                        chunk = chunk.encode()
                    digest.update(chunk)
                    if self.rewind and not seekable:
                        kept.append(chunk)
                if self.rewind:
                    if seekable:
                        data.seek(0)
                    else:
                        data = io.BytesIO(b"".join(kept))
            expected = self.hash_dict[path]
            if digest.hexdigest() != expected:
                raise RuntimeError(
                    f"The {self.hash_type} hash {digest.hexdigest()} of {path!r} does not match "
                    f"the expected {expected}. Delete the file manually and retry."
                )
            yield path, data

    def __len__(self) -> int:
        return self._source_len(self.source_datapipe)
