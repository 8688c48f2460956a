"""Key-value stores for rendezvous (torch.distributed's Store, HashStore, FileStore, TCPStore, PrefixStore).

Values are bytes; `add` keeps a decimal counter, as in PyTorch. `get` and `wait` block until the
keys exist or the store's timeout passes, then raise DistStoreError. These stores only carry
rendezvous data (addresses, counters); tensors move through Gloo.

TCPStore's wire format, one request per message, no pickle (a store must not run code):

    request:  u8 command, u32 field count, then per field u32 length + bytes
    reply:    u8 status (0 ok, 1 timeout, 2 error), u32 field count, fields as above
"""

from __future__ import annotations

import fcntl
import os
import socket
import struct
import threading
import time
from datetime import timedelta

from ._errors import DistStoreError

__all__ = ["Store", "HashStore", "FileStore", "TCPStore", "PrefixStore"]

_DEFAULT_TIMEOUT = timedelta(seconds=300)


def _as_bytes(value: str | bytes | bytearray) -> bytes:
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    raise TypeError(f"Store values must be str or bytes, but got {type(value).__name__}")


def _seconds(timeout: timedelta | float | None, default: timedelta) -> float:
    if timeout is None:
        timeout = default
    return timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)


class Store:
    """Base class: subclasses implement _set/_get_now/_add/_delete/_num_keys (non-blocking);
    blocking get/wait poll through _wait_for, which subclasses may override."""

    def __init__(self, timeout: timedelta = _DEFAULT_TIMEOUT) -> None:
        self._timeout = timeout
        self._name = type(self).__name__  # for messages

    @property
    def timeout(self) -> timedelta:
        return self._timeout

    def set_timeout(self, timeout: timedelta) -> None:
        self._timeout = timeout

    def set(self, key: str, value: str | bytes) -> None:
        self._set(key, _as_bytes(value))

    def get(self, key: str) -> bytes:
        self.wait([key])
        value = self._get_now(key)
        if value is None:  # deleted between the wait and the read
            raise DistStoreError(f"Store.get: key {key!r} was deleted while waiting for it")
        return value

    def add(self, key: str, amount: int) -> int:
        return self._add(key, int(amount))

    def compare_set(self, key: str, expected_value: str | bytes, desired_value: str | bytes) -> bytes:
        return self._compare_set(key, _as_bytes(expected_value), _as_bytes(desired_value))

    def check(self, keys: list[str]) -> bool:
        return all(self._get_now(k) is not None for k in keys)

    def wait(self, keys: list[str], timeout: timedelta | None = None) -> None:
        self._wait_for(list(keys), _seconds(timeout, self._timeout))

    def delete_key(self, key: str) -> bool:
        return self._delete(key)

    def num_keys(self) -> int:
        return self._num_keys()

    def _wait_for(self, keys: list[str], seconds: float) -> None:
        deadline = time.monotonic() + seconds
        delay = 0.001
        while not self.check(keys):
            if time.monotonic() >= deadline:
                missing = [k for k in keys if self._get_now(k) is None]
                raise DistStoreError(f"Timed out after {seconds:g} s waiting for keys {missing} in {self._name}")
            time.sleep(delay)
            delay = min(delay * 2, 0.05)


class HashStore(Store):
    """An in-process store (threads of one process share it)."""

    def __init__(self) -> None:
        super().__init__()
        self._data: dict[str, bytes] = {}
        self._cond = threading.Condition()

    def _set(self, key: str, value: bytes) -> None:
        with self._cond:
            self._data[key] = value
            self._cond.notify_all()

    def _get_now(self, key: str) -> bytes | None:
        with self._cond:
            return self._data.get(key)

    def _add(self, key: str, amount: int) -> int:
        with self._cond:
            value = int(self._data.get(key, b"0")) + amount
            self._data[key] = str(value).encode()
            self._cond.notify_all()
            return value

    def _compare_set(self, key: str, expected: bytes, desired: bytes) -> bytes:
        with self._cond:
            current = self._data.get(key)
            if current == expected or (current is None and expected == b""):
                self._data[key] = desired
                self._cond.notify_all()
                return desired
            return expected if current is None else current

    def _delete(self, key: str) -> bool:
        with self._cond:
            return self._data.pop(key, None) is not None

    def _num_keys(self) -> int:
        with self._cond:
            return len(self._data)

    def _wait_for(self, keys: list[str], seconds: float) -> None:
        with self._cond:
            if not self._cond.wait_for(lambda: all(k in self._data for k in keys), timeout=seconds):
                missing = [k for k in keys if k not in self._data]
                raise DistStoreError(f"Timed out after {seconds:g} s waiting for keys {missing} in {self._name}")


class FileStore(Store):
    """A store in a file shared by processes of one machine (or a shared file system).

    The file is an append-only log of records, read under an exclusive flock(2):

        u32 key length, key, u32 value length (0xFFFFFFFF: key deleted), value
    """

    _DELETED = 0xFFFFFFFF

    def __init__(self, file_name: str, world_size: int = -1) -> None:
        super().__init__()
        self.path = os.fspath(file_name)
        self.world_size = world_size
        self._data: dict[str, bytes] = {}
        self._pos = 0  # how much of the log _data reflects
        self._lock = threading.Lock()
        # Open per operation: a descriptor inherited across fork must not share the flock.
        with open(self.path, "ab"):
            pass

    def _locked(self, fn):  # runs fn(file) with the log read up to date, under the file lock
        with self._lock, open(self.path, "r+b") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                f.seek(self._pos)
                log = f.read()
                at = 0
                while at + 4 <= len(log):
                    (klen,) = struct.unpack_from("<I", log, at)
                    key = log[at + 4:at + 4 + klen].decode()
                    at += 4 + klen
                    (vlen,) = struct.unpack_from("<I", log, at)
                    at += 4
                    if vlen == self._DELETED:
                        self._data.pop(key, None)
                    else:
                        self._data[key] = log[at:at + vlen]
                        at += vlen
                self._pos += at
                return fn(f)
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def _append(self, f, key: str, value: bytes | None) -> None:
        k = key.encode()
        record = struct.pack("<I", len(k)) + k
        record += struct.pack("<I", self._DELETED) if value is None else struct.pack("<I", len(value)) + value
        f.seek(0, os.SEEK_END)
        f.write(record)
        f.flush()
        self._pos = f.tell()
        if value is None:
            self._data.pop(key, None)
        else:
            self._data[key] = value

    def _set(self, key: str, value: bytes) -> None:
        self._locked(lambda f: self._append(f, key, value))

    def _get_now(self, key: str) -> bytes | None:
        return self._locked(lambda f: self._data.get(key))

    def _add(self, key: str, amount: int) -> int:
        def add(f) -> int:
            value = int(self._data.get(key, b"0")) + amount
            self._append(f, key, str(value).encode())
            return value
        return self._locked(add)

    def _compare_set(self, key: str, expected: bytes, desired: bytes) -> bytes:
        def cas(f) -> bytes:
            current = self._data.get(key)
            if current == expected or (current is None and expected == b""):
                self._append(f, key, desired)
                return desired
            return expected if current is None else current
        return self._locked(cas)

    def check(self, keys: list[str]) -> bool:
        return self._locked(lambda f: all(k in self._data for k in keys))

    def _delete(self, key: str) -> bool:
        def delete(f) -> bool:
            if key not in self._data:
                return False
            self._append(f, key, None)
            return True
        return self._locked(delete)

    def _num_keys(self) -> int:
        return self._locked(lambda f: len(self._data))


class PrefixStore(Store):
    """Every key of `store` under `prefix + "/"` (process groups share one store this way)."""

    def __init__(self, prefix: str, store: Store) -> None:
        super().__init__(store.timeout)
        self.prefix = prefix
        self.underlying_store = store

    def _k(self, key: str) -> str:
        return f"{self.prefix}/{key}"

    @property
    def timeout(self) -> timedelta:
        return self.underlying_store.timeout

    def set_timeout(self, timeout: timedelta) -> None:
        self.underlying_store.set_timeout(timeout)

    def set(self, key: str, value: str | bytes) -> None:
        self.underlying_store.set(self._k(key), value)

    def get(self, key: str) -> bytes:
        return self.underlying_store.get(self._k(key))

    def add(self, key: str, amount: int) -> int:
        return self.underlying_store.add(self._k(key), amount)

    def compare_set(self, key: str, expected_value: str | bytes, desired_value: str | bytes) -> bytes:
        return self.underlying_store.compare_set(self._k(key), expected_value, desired_value)

    def check(self, keys: list[str]) -> bool:
        return self.underlying_store.check([self._k(k) for k in keys])

    def wait(self, keys: list[str], timeout: timedelta | None = None) -> None:
        self.underlying_store.wait([self._k(k) for k in keys], timeout)

    def delete_key(self, key: str) -> bool:
        return self.underlying_store.delete_key(self._k(key))

    def num_keys(self) -> int:
        return self.underlying_store.num_keys()


# --- TCPStore --------------------------------------------------------------------------------

_SET, _GET, _ADD, _CAS, _CHECK, _WAIT, _DELETE, _NUM_KEYS = range(8)
_OK, _TIMEOUT, _ERROR = range(3)


def _send_msg(sock: socket.socket, head: int, fields: list[bytes]) -> None:
    parts = [struct.pack("<BI", head, len(fields))]
    for f in fields:
        parts += [struct.pack("<I", len(f)), f]
    sock.sendall(b"".join(parts))


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise ConnectionError("TCPStore: connection closed by the other side")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _recv_msg(sock: socket.socket) -> tuple[int, list[bytes]]:
    head, count = struct.unpack("<BI", _recv_exact(sock, 5))
    fields = []
    for _ in range(count):
        (length,) = struct.unpack("<I", _recv_exact(sock, 4))
        fields.append(_recv_exact(sock, length))
    return head, fields


class _TCPStoreServer:
    """The master's side: a HashStore served to clients, one thread per connection."""

    def __init__(self, host: str, port: int) -> None:
        self.store = HashStore()
        self.store._name = "TCPStore"
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restarted job reuses the port
        self.sock.bind(("" if family == socket.AF_INET else "::", port))
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, name="TCPStore-server", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # closed
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._serve, args=(conn,), name="TCPStore-conn", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        store = self.store
        with conn:
            while True:
                try:
                    cmd, f = _recv_msg(conn)
                except (ConnectionError, OSError):
                    return
                status, reply = _OK, []
                try:
                    if cmd == _SET:
                        store._set(f[0].decode(), f[1])
                    elif cmd == _GET:
                        store._wait_for([f[0].decode()], float(f[1]))
                        value = store._get_now(f[0].decode())
                        reply = [value] if value is not None else []
                    elif cmd == _ADD:
                        reply = [str(store._add(f[0].decode(), int(f[1]))).encode()]
                    elif cmd == _CAS:
                        reply = [store._compare_set(f[0].decode(), f[1], f[2])]
                    elif cmd == _CHECK:
                        reply = [b"1" if store.check([k.decode() for k in f]) else b"0"]
                    elif cmd == _WAIT:
                        store._wait_for([k.decode() for k in f[1:]], float(f[0]))
                    elif cmd == _DELETE:
                        reply = [b"1" if store._delete(f[0].decode()) else b"0"]
                    elif cmd == _NUM_KEYS:
                        reply = [str(store._num_keys()).encode()]
                    else:
                        status, reply = _ERROR, [f"unknown command {cmd}".encode()]
                except DistStoreError as e:
                    status, reply = _TIMEOUT, [str(e).encode()]
                except (ValueError, IndexError, UnicodeDecodeError) as e:
                    status, reply = _ERROR, [f"bad request: {e}".encode()]
                try:
                    _send_msg(conn, status, reply)
                except OSError:
                    return

    def close(self) -> None:
        self.sock.close()


class TCPStore(Store):
    """A store served over TCP by the process with is_master=True (it may use port=0 and read
    `store.port`); every other process connects to host_name:port, retrying until the timeout."""

    def __init__(self, host_name: str, port: int, world_size: int | None = None, is_master: bool = False,
                 timeout: timedelta = _DEFAULT_TIMEOUT, wait_for_workers: bool = True,
                 multi_tenant: bool = False) -> None:
        super().__init__(timeout)
        if not 0 <= int(port) < 65536:
            raise ValueError(f"TCPStore: expected a port in [0, 65536), but got {port}")
        self.host = host_name
        self.world_size = world_size
        self._server = _TCPStoreServer(host_name, int(port)) if is_master else None
        self.port = self._server.port if self._server else int(port)
        # A blocking get/wait holds its connection until it returns, so each call borrows an idle
        # connection (or opens one): other threads of this process are never stuck behind it.
        self._lock = threading.Lock()
        self._idle = [self._connect()]
        if world_size is not None and wait_for_workers:
            # Every store counts itself in; the master waits until all world_size have connected.
            self.add("__ember_tcpstore_workers", 1)
            if is_master:
                deadline = time.monotonic() + _seconds(None, self._timeout)
                while int(self._get_now("__ember_tcpstore_workers") or b"0") < world_size:
                    if time.monotonic() > deadline:
                        raise DistStoreError(f"TCPStore: timed out after {_seconds(None, self._timeout):g} s "
                                             f"waiting for {world_size} workers to connect")
                    time.sleep(0.01)

    def _connect(self) -> socket.socket:
        deadline = time.monotonic() + _seconds(None, self._timeout)
        while True:
            try:
                sock = socket.create_connection((self.host, self.port), timeout=10)
                sock.settimeout(None)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return sock
            except OSError as e:
                if time.monotonic() > deadline:
                    raise DistStoreError(f"TCPStore: could not connect to {self.host}:{self.port} within "
                                         f"{_seconds(None, self._timeout):g} s: {e}") from e
                time.sleep(0.05)

    def _call(self, cmd: int, fields: list[bytes]) -> list[bytes]:
        with self._lock:
            sock = self._idle.pop() if self._idle else None
        try:
            sock = sock or self._connect()
            _send_msg(sock, cmd, fields)
            status, reply = _recv_msg(sock)
        except OSError as e:
            if sock is not None:
                sock.close()
            raise DistStoreError(f"TCPStore: lost the connection to {self.host}:{self.port} "
                                 f"(did the master process exit?): {e}") from e
        with self._lock:
            self._idle.append(sock)
        if status == _TIMEOUT:
            raise DistStoreError(reply[0].decode())
        if status != _OK:
            raise DistStoreError(f"TCPStore: {reply[0].decode()}")
        return reply

    def _set(self, key: str, value: bytes) -> None:
        self._call(_SET, [key.encode(), value])

    def get(self, key: str) -> bytes:
        reply = self._call(_GET, [key.encode(), str(_seconds(None, self._timeout)).encode()])
        if not reply:
            raise DistStoreError(f"TCPStore.get: key {key!r} was deleted while waiting for it")
        return reply[0]

    def _get_now(self, key: str) -> bytes | None:
        if not self.check([key]):
            return None
        reply = self._call(_GET, [key.encode(), b"0"])
        return reply[0] if reply else None

    def _add(self, key: str, amount: int) -> int:
        return int(self._call(_ADD, [key.encode(), str(amount).encode()])[0])

    def _compare_set(self, key: str, expected: bytes, desired: bytes) -> bytes:
        return self._call(_CAS, [key.encode(), expected, desired])[0]

    def check(self, keys: list[str]) -> bool:
        return self._call(_CHECK, [k.encode() for k in keys])[0] == b"1"

    def _wait_for(self, keys: list[str], seconds: float) -> None:
        self._call(_WAIT, [str(seconds).encode()] + [k.encode() for k in keys])

    def _delete(self, key: str) -> bool:
        return self._call(_DELETE, [key.encode()])[0] == b"1"

    def _num_keys(self) -> int:
        return int(self._call(_NUM_KEYS, [])[0])

    def __del__(self) -> None:
        for sock in getattr(self, "_idle", []):
            sock.close()
        if getattr(self, "_server", None) is not None:
            self._server.close()
