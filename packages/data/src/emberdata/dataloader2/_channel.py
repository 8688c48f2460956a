"""A minimal rank-0-to-all channel over TCP, for DistributedReadingService to share each
epoch's seeds while there is no ``ember.distributed`` process group.

Rank 0 listens on ``(address, port)``; every other rank connects, says which rank it is, and
then receives one line of JSON per epoch. Only integers travel, as JSON (never pickle), so a
stray peer cannot make a rank run code. Every wait is bounded by ``timeout``.
"""

from __future__ import annotations

import json
import socket
import time
from typing import Any


class ChannelError(RuntimeError):
    """A rank did not answer in time, or answered something unexpected."""


def _send_line(sock: socket.socket, payload: dict[str, Any]) -> None:
    sock.sendall(json.dumps(payload).encode() + b"\n")


class _LineReader:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.pending = b""

    def read(self, what: str) -> dict[str, Any]:
        while b"\n" not in self.pending:
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError as error:
                raise ChannelError(f"timed out waiting for {what}") from error
            if not chunk:
                raise ChannelError(f"the connection closed while waiting for {what}")
            self.pending += chunk
            if len(self.pending) > 1 << 20:
                raise ChannelError(f"an oversized message arrived while waiting for {what}")
        line, self.pending = self.pending.split(b"\n", 1)
        value = json.loads(line)
        if not isinstance(value, dict):
            raise ChannelError(f"expected a JSON object for {what}, got {value!r}")
        return value


class RankChannel:
    """Broadcasts dicts of integers from rank 0 to the other ranks."""

    def __init__(self, rank: int, world_size: int, address: str, port: int, timeout: float) -> None:
        self.rank = rank
        self.world_size = world_size
        self.timeout = timeout
        self._peers: list[tuple[socket.socket, _LineReader]] = []
        self._server: socket.socket | None = None
        self._reader: _LineReader | None = None
        if rank == 0:
            self._accept(address, port)
        else:
            self._connect(address, port)

    def _accept(self, address: str, port: int) -> None:
        server = socket.create_server((address, port))
        server.settimeout(self.timeout)
        self._server = server
        seen: set[int] = set()
        deadline = time.monotonic() + self.timeout
        while len(seen) < self.world_size - 1:
            server.settimeout(max(deadline - time.monotonic(), 0.001))
            try:
                sock, _ = server.accept()
            except TimeoutError as error:
                self.close()
                raise ChannelError(
                    f"rank 0 waited {self.timeout} s for the other ranks to connect to "
                    f"{address}:{port}; {len(seen)} of {self.world_size - 1} did"
                ) from error
            sock.settimeout(self.timeout)
            reader = _LineReader(sock)
            hello = reader.read("a rank's hello")
            rank = hello.get("rank")
            if not isinstance(rank, int) or not 0 < rank < self.world_size or rank in seen:
                sock.close()  # not one of ours
                continue
            seen.add(rank)
            self._peers.append((sock, reader))

    def _connect(self, address: str, port: int) -> None:
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                sock = socket.create_connection((address, port), timeout=self.timeout)
                break
            except OSError as error:  # rank 0 is not listening yet
                if time.monotonic() > deadline:
                    raise ChannelError(
                        f"rank {self.rank} could not reach rank 0 at {address}:{port} within "
                        f"{self.timeout} s"
                    ) from error
                time.sleep(0.05)
        sock.settimeout(self.timeout)
        _send_line(sock, {"rank": self.rank})
        self._peers.append((sock, _LineReader(sock)))

    def broadcast(self, value: dict[str, int] | None) -> dict[str, int]:
        """Rank 0 sends ``value`` and returns it; the others return what rank 0 sent."""
        if self.rank == 0:
            assert value is not None
            for sock, _ in self._peers:
                _send_line(sock, value)
            return value
        (_, reader), = self._peers
        return reader.read("rank 0's seeds")

    def close(self) -> None:
        for sock, _ in self._peers:
            sock.close()
        self._peers = []
        if self._server is not None:
            self._server.close()
            self._server = None
