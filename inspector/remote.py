"""Checkpoints behind a URL: fsspec file objects read by byte range, every byte transferred counted.

`Probe(url)` returns a `RemoteProbe`; loaders ask it for the same ranges as of a local file, so a remote
report is the local report plus two attributes (bytes transferred, requests). Reads are exact ranges, with
a small read-ahead while the read-ahead bytes no loader asked for stay under `SPECULATIVE_BYTES` (a zip's
local header, its extra field and an npy header then cost one request), so no file costs more than the
structures its loader reads, that budget and the first `HEAD_BYTES`. Recent small fetches are kept for
re-reads. HDF5, read by the HDF5 library through h5py's file-object driver, is fetched in aligned blocks
(`BLOCK_BY_FORMAT`): its metadata reads are many, small and scattered.

Credentials come only from fsspec's and botocore's usual configuration (environment, config files,
instance roles); a URL's user:password and signed query values are removed from every path shown.
Network failures become one-line `InputError`s; transient ones (timeouts, dropped connections, HTTP 5xx
and 429) are retried `RETRIES` times first. A server that ignores Range (it would send the whole file) is
caught by a one-byte range request before anything else is read.
"""

from __future__ import annotations

import os
import re
import time
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from inspector.errors import InputError, LimitExceededError, MissingDependencyError
from inspector.probe import HEAD_BYTES, Probe
from inspector.records import Checkpoint
from inspector.recordtype import record, replace

TIMEOUT_S = 30  # per request (connect and read)
RETRIES = 3  # further attempts after a transient failure
BACKOFF_S = 0.25  # doubled after each failed attempt
READAHEAD = 256  # a read shorter than this fetches this much (a zip local header, its extra and an npy header)
SPECULATIVE_BYTES = 32 << 10  # ... while the read-ahead bytes never asked for stay under this many
KEPT_CHUNK, KEPT_BYTES = 64 << 10, 1 << 20  # fetched ranges up to this size are kept, this much, for re-reads
BLOCK_BY_FORMAT = {"hdf5": 16 << 10}  # formats fetched in aligned blocks, and the block size
MAX_BLOCKS = 1024  # blocks kept per probe (16 MiB for HDF5)
MAX_TRANSFER = 1 << 30  # no file may make the inspector fetch more than this
RANGE_CHECKED = {"http", "https"}  # protocols whose servers may ignore Range
SECRET_QUERY_KEYS = ("signature", "credential", "token", "key", "sig", "secret", "password", "auth")
EXTRA = "checkpoint-inspector[remote]"

HTTP_STATUS = {
    401: "unauthorised (HTTP 401): credentials missing or rejected",
    403: "access denied (HTTP 403)",
    404: "not found (HTTP 404)",
    407: "proxy authentication required (HTTP 407)",
    410: "gone (HTTP 410)",
    416: "range not satisfiable (HTTP 416)",
    429: "too many requests (HTTP 429)",
}
TRANSIENT_STATUS = {408, 429, 500, 502, 503, 504}

T = TypeVar("T")


# GET requests fsspec sends for a file that is not there (HTTP: a HEAD, then a GET; S3: a HEAD only)
FAILED_OPEN_GETS = {"http": 1, "https": 1}


@record
class Meter:
    """Bytes and requests of one inspection (shared by an index and its shards)."""

    bytes: int = 0
    requests: int = 0


class RemoteProbe(Probe):
    """A file behind a URL, read by range through an fsspec file object.

    Attributes (beyond `Probe`'s):
        url: the URL as given (may hold credentials: never shown; `path` is the redacted form).
        meter: bytes and requests transferred, shared with the probes of sibling files.
    """

    local: ClassVar[bool] = False
    # HDF5 user blocks of 512 * 2**k bytes are searched in the head only: beyond it, each power of two would
    # cost a request on every file sniffed. A remote HDF5 file with a user block over 2 KiB is not recognised.
    userblock_limit: ClassVar[int] = HEAD_BYTES

    def __init__(self, url: str | os.PathLike[str], meter: Meter | None = None) -> None:
        self.url = os.fspath(url)
        self.path = redact(self.url)
        self.meter = meter or Meter()
        self.bytes_read = 0
        self.cache: dict[str, object] = {}
        self._blocks: dict[int, bytes] = {}
        self._kept: dict[int, bytes] = {}  # offset -> bytes of recent small fetches, oldest first
        self._kept_starts: list[int] = []  # their offsets, sorted
        self._kept_bytes = 0
        self._speculative = 0  # read-ahead bytes no reader has asked for (yet)
        self._unread: dict[int, bytearray] = {}  # read-ahead chunk offset -> 1 for each byte not asked for
        self._file: Any = None
        self._pid = -1
        self.protocol = urlsplit(self.url).scheme.lower()
        try:
            handle = self._handle()
        except InputError:  # a file that is not there (a config.json beside a model): its GETs went out all the same
            self.meter.requests += FAILED_OPEN_GETS.get(self.protocol, 0)
            raise
        size = getattr(handle, "size", None)
        if not isinstance(size, int):
            raise InputError(self.path, "the server does not give the file's size: it cannot be read by ranges")
        self.size = size
        if self.protocol in RANGE_CHECKED and self.size > 1:
            self._fetch(1, 1)  # a server ignoring Range fails here, before any body is read
        self.head = self._pread(0, min(HEAD_BYTES, self.size))

    # -- the fsspec file -------------------------------------------------------------------------

    def _handle(self) -> Any:
        """The open fsspec file; reopened in a forked child (the HDF5 walk), whose event loop is new."""
        if self._file is None or self._pid != os.getpid():
            fs, path = filesystem(self.url, self.path)
            self._file = self._call(lambda: fs.open(path, "rb", cache_type="none"))
            self._pid = os.getpid()
        return self._file

    def _call(self, fn: Callable[[], T]) -> T:
        """`fn()` with retries on transient failures; every failure ends as one `InputError`."""
        delay = BACKOFF_S
        for attempt in range(RETRIES + 1):
            try:
                return fn()
            except IsADirectoryError as exc:
                raise InputError(self.path, "is a directory (a prefix): end it with / to audit it") from exc
            except Exception as exc:  # noqa: BLE001 - every library's failure is explained below
                reason, transient = explain(exc)
                if not transient or attempt == RETRIES:
                    suffix = f" (after {attempt + 1} attempts)" if attempt else ""
                    raise InputError(self.path, reason.replace(self.url, self.path) + suffix) from None
                time.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")  # pragma: no cover

    def _fetch(self, offset: int, n: int) -> bytes:
        if self.meter.bytes + n > MAX_TRANSFER:
            raise LimitExceededError(self.path, "remote", f"more than {MAX_TRANSFER:,} bytes would be transferred")

        def get() -> bytes:
            handle = self._handle()
            handle.seek(offset)
            return bytes(handle.read(n))

        data = self._call(get)
        self.meter.bytes += len(data)
        self.meter.requests += 1
        if len(data) < n:
            raise InputError(
                self.path, f"truncated response: {len(data):,} of {n:,} bytes at offset {offset:,} arrived"
            )
        if n <= KEPT_CHUNK:  # kept for re-reads: npy headers after the zip pass, pickle windows that overlap
            self._keep(offset, data)
        return data

    def _keep(self, offset: int, data: bytes) -> None:
        if offset not in self._kept:
            insort(self._kept_starts, offset)
        self._kept_bytes += len(data) - len(self._kept.get(offset, b""))
        self._kept[offset] = data
        while self._kept_bytes > KEPT_BYTES:
            oldest = next(iter(self._kept))
            self._kept_bytes -= len(self._kept.pop(oldest))
            self._unread.pop(oldest, None)
            del self._kept_starts[bisect_left(self._kept_starts, oldest)]

    def _kept_range(self, offset: int, n: int) -> bytes | None:
        """`n` bytes at `offset` from a kept fetch (the nearest few starting at or before it), or None."""
        i = bisect_right(self._kept_starts, offset)
        for start in reversed(self._kept_starts[max(0, i - 4) : i]):
            chunk = self._kept[start]
            if offset + n <= start + len(chunk):
                unread = self._unread.get(start)
                if unread is not None:  # read-ahead that was wanted after all: structure, not waste
                    self._speculative -= unread[offset - start : offset - start + n].count(1)
                    unread[offset - start : offset - start + n] = bytes(n)
                return chunk[offset - start : offset - start + n]
        return None

    # -- Probe -----------------------------------------------------------------------------------

    def _pread(self, offset: int, n: int, fmt: str = "file") -> bytes:
        if n == 0:
            return b""
        block = BLOCK_BY_FORMAT.get(fmt)
        data = self._blocked(offset, n, block) if block else self._ranged(offset, n)
        self.bytes_read += len(data)
        return data

    def _ranged(self, offset: int, n: int) -> bytes:
        kept = self._kept_range(offset, n)
        if kept is not None:
            return kept
        if n >= READAHEAD or self._speculative >= SPECULATIVE_BYTES:
            return self._fetch(offset, n)
        want = min(READAHEAD, self.size - offset)
        chunk = self._fetch(offset, want)
        self._speculative += want - n
        if offset in self._kept:
            self._unread[offset] = bytearray(n) + bytearray(b"\1") * (want - n)
        return chunk[:n]

    def _blocked(self, offset: int, n: int, block: int) -> bytes:
        first, last = offset // block, (offset + n - 1) // block
        missing = [i for i in range(first, last + 1) if i not in self._blocks]
        for run_start, run_end in _runs(missing):
            start = run_start * block
            data = self._fetch(start, min((run_end + 1) * block, self.size) - start)
            for i in range(run_start, run_end + 1):
                self._blocks[i] = data[(i - run_start) * block : (i - run_start + 1) * block]
        joined = b"".join(self._blocks[i] for i in range(first, last + 1))
        while len(self._blocks) > MAX_BLOCKS:
            del self._blocks[next(iter(self._blocks))]
        return joined[offset - first * block : offset - first * block + n]

    def sibling(self, name: str) -> Probe:
        base = self.url.split("?", 1)[0].rsplit("/", 1)[0]
        return RemoteProbe(f"{base}/{name}", self.meter)

    def counters(self) -> dict[str, int]:
        return {"bytes_read": self.bytes_read, "transferred": self.meter.bytes, "requests": self.meter.requests}

    def add_counters(self, delta: Mapping[str, int]) -> None:
        super().add_counters(delta)
        self.meter.bytes += delta.get("transferred", 0)
        self.meter.requests += delta.get("requests", 0)

    def annotate(self, ckpt: Checkpoint) -> Checkpoint:
        transfer = {"remote.bytes_transferred": str(self.meter.bytes), "remote.requests": str(self.meter.requests)}
        return replace(ckpt, attributes={**ckpt.attributes, **transfer})

    def close(self) -> None:
        handle, self._file = self._file, None
        if handle is not None and self._pid == os.getpid():
            try:
                handle.close()
            except Exception:  # noqa: BLE001 - closing a read-only file object cannot lose anything
                pass


def _runs(indices: list[int]) -> list[tuple[int, int]]:
    """Consecutive runs (first, last) of sorted integers."""
    runs: list[list[int]] = []
    for i in indices:
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return [(first, last) for first, last in runs]


# -- fsspec, its options and its errors ---------------------------------------------------------------


def _http_options() -> dict[str, Any]:
    import aiohttp

    return {"client_kwargs": {"timeout": aiohttp.ClientTimeout(total=TIMEOUT_S, connect=TIMEOUT_S)}}


def _s3_options() -> dict[str, Any]:
    return {
        "config_kwargs": {"connect_timeout": TIMEOUT_S, "read_timeout": TIMEOUT_S, "retries": {"total_max_attempts": 1}}
    }


# Timeouts per protocol (retries are ours, so botocore's own are off); credentials are never set here.
# Other protocols (gs://, hf://...) keep their library's own timeouts.
STORAGE_OPTIONS: dict[str, Callable[[], dict[str, Any]]] = {
    "http": _http_options,
    "https": _http_options,
    "s3": _s3_options,
    "s3a": _s3_options,
}


def filesystem(url: str, shown: str | None = None) -> tuple[Any, str]:
    """The fsspec filesystem for `url` (a fresh one in a forked child) and the path inside it.

    Raises:
        MissingDependencyError: fsspec, or the package of this protocol, is not installed.
        InputError: fsspec does not know the protocol.
    """
    try:
        import fsspec
        from fsspec.registry import known_implementations
    except ImportError as exc:
        raise MissingDependencyError("fsspec", EXTRA) from exc
    protocol = urlsplit(url).scheme.lower()
    options = STORAGE_OPTIONS.get(protocol, dict)()
    try:
        fs, path = fsspec.core.url_to_fs(url, **options)
    except ImportError as exc:
        package = known_implementations.get(protocol, {}).get("class", protocol).split(".")[0]
        raise MissingDependencyError(package, package) from exc
    except ValueError as exc:
        raise InputError(shown or redact(url), f"no filesystem knows the protocol {protocol!r}") from exc
    return fs, path


def explain(exc: BaseException) -> tuple[str, bool]:
    """One line saying what went wrong on the network, and whether trying again may help."""
    for cause in _chain(exc):
        status = getattr(cause, "status", None) or getattr(cause, "status_code", None)
        if isinstance(status, int) and status >= 400:
            reason = HTTP_STATUS.get(status, f"HTTP {status}" + (" (server error)" if status >= 500 else ""))
            return reason, status in TRANSIENT_STATUS
        response = getattr(cause, "response", None)
        code = response.get("Error", {}).get("Code") if isinstance(response, dict) else None
        if code in ("NoSuchKey", "NoSuchBucket", "404"):
            return f"not found ({code})", False
        if code in ("AccessDenied", "403", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
            return f"access denied ({code})", False
        if isinstance(cause, ConnectionRefusedError) or isinstance(
            getattr(cause, "os_error", None), ConnectionRefusedError
        ):
            return "connection refused", False
        if isinstance(cause, TimeoutError) or type(cause).__name__ in ("ServerTimeoutError", "ReadTimeoutError"):
            return f"timed out (no answer within {TIMEOUT_S} s)", True
        name = type(cause).__name__
        if name in ("ClientPayloadError", "ContentLengthError", "IncompleteRead", "ResponseStreamingError"):
            return "truncated response: the connection closed before the promised bytes arrived", True
        if name in ("ServerDisconnectedError", "ClientOSError", "ConnectionResetError", "EndpointConnectionError"):
            return f"connection lost ({name})", True
        if "support range requests" in str(cause):
            return "the server ignores Range requests (it would send the whole file): stopped", False
    if isinstance(exc, PermissionError):
        return "access denied", False
    if isinstance(exc, FileNotFoundError):
        return "not found", False
    return scrub(f"{type(exc).__name__}: {exc}")[:200], False


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def redact(url: str) -> str:
    """The URL without user:password and with secret-looking query values replaced by ***."""
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)[-1]
    query = urlencode(
        [(k, "***" if any(s in k.lower() for s in SECRET_QUERY_KEYS) else v) for k, v in parse_qsl(parts.query)],
        safe="*",
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


USERINFO = re.compile(r"(?<=//)[^/@\s'\"]+@")
SECRET_VALUE = re.compile(r"(?i)([?&][^=&\s]*(?:" + "|".join(SECRET_QUERY_KEYS) + r")[^=&\s]*=)[^&\s'\"]+")


def scrub(text: str) -> str:
    """A library's message with any URL's user:password and secret query values removed."""
    return SECRET_VALUE.sub(r"\1***", USERINFO.sub("", text))


# -- folders and prefixes -----------------------------------------------------------------------------

LISTED_BY_SLASH_ONLY = {"http", "https"}  # telling a folder from a file there would mean a GET of the file


def is_folder(url: str) -> bool:
    """Whether `url` names a folder or prefix to audit (over HTTP: only when it ends with /)."""
    protocol = urlsplit(url).scheme.lower()
    if url.endswith("/") or protocol in LISTED_BY_SLASH_ONLY:
        return url.endswith("/")
    fs, path = filesystem(url)
    try:
        return bool(fs.isdir(path))
    except Exception:  # noqa: BLE001 - not a folder then; reading it as a file says what is wrong
        return False


def list_files(url: str, limit: int) -> list[str]:
    """Every file below a folder URL (names starting with '.' skipped), sorted, at most `limit`.

    Raises:
        InputError: the folder cannot be listed.
    """
    fs, path = filesystem(url)
    try:
        found = fs.find(path, withdirs=False)
    except Exception as exc:  # noqa: BLE001
        raise InputError(redact(url), f"cannot list it: {explain(exc)[0]}") from None
    prefix = path.rstrip("/") + "/"
    urls = []
    for item in sorted(str(f) for f in found):
        if not item.startswith(prefix):  # an HTML listing may link elsewhere
            continue
        if any(part.startswith(".") for part in item[len(prefix) :].split("/")):
            continue
        urls.append(item if "://" in item else fs.unstrip_protocol(item))
        if len(urls) >= limit:
            break
    return urls
