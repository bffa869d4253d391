"""A file opened once for sniffing and header reads: bounded reads, counted bytes, no data reads.

Loaders never open files themselves; they ask the probe for byte ranges, so the bytes read can be
counted (the header-only promise is tested with `Probe.bytes_read`) and every range is checked
against the file size before anything is allocated.

`Probe(path)` opens a local file; given a URL (``s3://``, ``https://``, ``hf://``... anything fsspec knows)
it returns an `inspector.remote.RemoteProbe`, which reads the same ranges over the network. fsspec is
imported only then: the local path never loads it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from functools import cached_property

from inspector import regexes
from inspector.errors import InputError, TruncatedFileError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import ClassVar

    from inspector.records import Checkpoint
    from loaders._zip import Members

HEAD_BYTES = 4096
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
MAX_HDF5_USERBLOCK = 1 << 30  # the signature may sit at 0, 512, 1024, 2048, ... up to here
URL = r"[A-Za-z][A-Za-z0-9+.-]*://"  # (compiled on first use: a local path never needs it)


def is_url(path: str | os.PathLike[str]) -> bool:
    """Whether `path` is a URL (``scheme://...``) rather than a local path."""
    text = os.fspath(path)
    return "://" in text and regexes.match(URL, text) is not None


class Probe:
    """A regular file, opened read-only.

    Attributes:
        path: the path as given.
        size: file size in bytes.
        head: the first `HEAD_BYTES` bytes (fewer for a short file).
        bytes_read: how many bytes were read so far through this probe.
        local: False for a `RemoteProbe` (a URL read through fsspec).
    """

    local: ClassVar[bool] = True
    userblock_limit: ClassVar[int] = MAX_HDF5_USERBLOCK  # how far `hdf5_offset` looks for the signature

    def __new__(cls, path: str | os.PathLike[str], *args: object, **kwargs: object) -> Probe:
        if cls is Probe and is_url(path):
            from inspector.remote import RemoteProbe

            return super().__new__(RemoteProbe)
        return super().__new__(cls)

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        try:
            st = os.stat(self.path)
        except FileNotFoundError as exc:
            raise InputError(self.path, "no such file") from exc
        except OSError as exc:
            raise InputError(self.path, exc.strerror or "cannot stat") from exc
        if stat.S_ISDIR(st.st_mode):
            raise InputError(self.path, "is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise InputError(self.path, "not a regular file (FIFO, device or socket): not opened")
        try:
            # O_NONBLOCK guards against a FIFO swapped in after the stat check.
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError as exc:
            raise InputError(self.path, exc.strerror or "cannot open") from exc
        self._fd = fd
        if hasattr(os, "posix_fadvise"):
            # header reads are a few scattered ranges: no readahead beyond the pages asked for (a cold 1 GiB
            # file would otherwise pull up to 128 KiB around every record header)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
            except OSError:
                pass
        self.size = os.fstat(fd).st_size
        self.bytes_read = 0
        self.cache: dict[str, object] = {}  # parsed structures shared by claim() and load() (the zip directory)
        self.head = self._pread(0, min(HEAD_BYTES, self.size))

    # -- reading -------------------------------------------------------------------------------

    def _pread(self, offset: int, n: int, fmt: str = "file") -> bytes:
        chunks = []
        while n > 0:
            chunk = os.pread(self._fd, n, offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
            n -= len(chunk)
        data = b"".join(chunks)
        self.bytes_read += len(data)
        return data

    def read_at(self, offset: int, n: int, *, fmt: str = "file", what: str = "data") -> bytes:
        """Exactly `n` bytes at `offset`.

        Raises:
            TruncatedFileError: the range ends past the end of the file (nothing is read then).
        """
        if offset < 0 or n < 0 or offset + n > self.size:
            raise TruncatedFileError(
                self.path,
                fmt,
                f"{what} ends at byte {offset + n:,} but the file has {self.size:,} bytes",
                offset,
            )
        if offset + n <= len(self.head):
            return self.head[offset : offset + n]
        data = self._pread(offset, n, fmt)
        if len(data) != n:
            raise TruncatedFileError(self.path, fmt, f"short read of {what}", offset)
        return data

    def tail(self, n: int) -> bytes:
        """The last `min(n, size)` bytes."""
        n = min(n, self.size)
        return self.read_at(self.size - n, n)

    def sequential(self) -> Probe:
        """Readahead back on, for a probe that streams tensor values (`--data`) rather than reading headers."""
        if getattr(self, "_fd", -1) >= 0 and hasattr(os, "posix_fadvise"):
            try:
                os.posix_fadvise(self._fd, 0, 0, os.POSIX_FADV_NORMAL)
            except OSError:
                pass
        return self

    # -- cached structure ----------------------------------------------------------------------

    @cached_property
    def zip_members(self) -> Members | None:
        """The zip central directory, or None when the file is not a readable zip."""
        if not self.head.startswith(b"PK\x03\x04"):
            return None
        from loaders._zip import read_central_directory

        try:
            return read_central_directory(self, fmt="zip")
        except Exception:  # sniffing must not raise; load() re-reads and reports the error
            return None

    @cached_property
    def zip_names(self) -> str | None:
        """The zip's member names, each followed by a newline (`name + "\n" in zip_names`: one C search over them all,
        true for every member so named, and for a name holding a newline maybe another's), or None as `zip_members`."""
        members = self.zip_members
        if members is None:
            return None
        return members.listing()

    @property
    def hdf5_head_offset(self) -> int | None:
        """Where the HDF5 signature sits within the head (0, 512, 1024 or 2048), or None: no read."""
        pos = 0
        while pos + 8 <= len(self.head):
            if self.head[pos : pos + 8] == HDF5_SIGNATURE:
                return pos
            pos = 512 if pos == 0 else pos * 2
        return None

    @cached_property
    def hdf5_offset(self) -> int | None:
        """Where the HDF5 signature sits (0, 512, 1024, ...), or None. Past the head this reads 8 bytes at each
        candidate offset (up to 1 GiB: 19 reads), so detection asks it only of a file no loader claims."""
        found = self.hdf5_head_offset
        if found is not None or self.size <= len(self.head):
            return found
        pos = 512
        while pos + 8 <= min(self.size, self.userblock_limit):
            if self.read_at(pos, 8) == HDF5_SIGNATURE:
                return pos
            pos = 512 if pos == 0 else pos * 2
        return None

    # -- other files and what the caller learns ------------------------------------------------

    def sibling(self, name: str) -> Probe:
        """A probe on the file `name` in this file's folder (the shards beside an index)."""
        return type(self)(os.path.join(os.path.dirname(self.path), name))

    def counters(self) -> dict[str, int]:
        """What was read so far (a forked child sends the difference back to its parent)."""
        return {"bytes_read": self.bytes_read}

    def add_counters(self, delta: Mapping[str, int]) -> None:
        self.bytes_read += delta.get("bytes_read", 0)

    def annotate(self, ckpt: Checkpoint) -> Checkpoint:
        """The checkpoint with what this probe adds to a report (a remote probe: the bytes transferred)."""
        return ckpt

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> Probe:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
