"""What every loader shares: the protocol, claim strengths, the parse-error boundary, region helpers."""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import islice, repeat
from operator import add, attrgetter, eq, lt

from inspector.enumtype import IntEnum
from inspector.errors import FormatError, InspectorError, TruncatedFileError
from inspector.probe import Probe
from inspector.records import Checkpoint, Finding, Region, RegionColumns, RegionKind, TensorInfo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar, Protocol

    class Loader(Protocol):
        name: ClassVar[str]
        extensions: ClassVar[tuple[str, ...]]

        def claim(self, probe: Probe) -> Claim | None: ...

        # Optional: `late_claim(probe) -> Claim | None`, a claim from bytes away from the head (the file's last
        # bytes, an HDF5 signature after a user block), asked only when no loader claims the file by `claim`.

        def load(self, probe: Probe) -> Checkpoint: ...


MAX_TENSORS = 1_000_000
MAX_DIMS = 64


class Claim(IntEnum):
    """How sure a loader is that a file is its format. `detect()` keeps the strongest."""

    CONTAINER = 1  # the container matches (a zip, an HDF5 file) but not the inner layout
    STRUCTURE = 2  # the inner structure matches (zip member names, HDF5 group names)
    EXACT = 3  # a format-specific magic number matches


# the exceptions a parse of hostile bytes raises, turned into `FormatError` by `parsing`
PARSE_ERRORS = (
    struct.error,
    EOFError,
    UnicodeDecodeError,  # (json.JSONDecodeError is a ValueError)
    IndexError,
    KeyError,
    SyntaxError,
    TypeError,
    ValueError,
    OverflowError,
    RecursionError,
    MemoryError,
)


class parsing:  # noqa: N801 - a context manager read as the function it replaces: `with parsing(probe, fmt):`
    """Turn low-level parse failures into `FormatError` naming the file and format.

    (A class, not a `contextlib.contextmanager` generator: importing `contextlib` for it, and `cli.run` for its
    `suppress`, cost every run about 0.3 ms of start-up, issue 16.)"""

    __slots__ = ("probe", "fmt")

    def __init__(self, probe: Probe, fmt: str) -> None:
        self.probe, self.fmt = probe, fmt

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if exc is None or isinstance(exc, InspectorError) or not isinstance(exc, PARSE_ERRORS):
            return  # (the exception, if any, goes on as it is)
        reason = f"malformed: {type(exc).__name__}: {exc}"[:300]
        raise FormatError(self.probe.path, self.fmt, reason) from exc


def check_shape(probe: Probe, fmt: str, name: str, shape: Iterable[object]) -> tuple[int, ...]:
    """A shape read from a file: a bounded number of non-negative ints."""
    dims = tuple(shape)
    if len(dims) > MAX_DIMS:
        from inspector.errors import LimitExceededError

        raise LimitExceededError(probe.path, fmt, f"tensor {name!r} has {len(dims)} dimensions (cap {MAX_DIMS})")
    for d in dims:
        if not isinstance(d, int) or isinstance(d, bool) or d < 0:
            raise FormatError(probe.path, fmt, f"tensor {name!r} has an invalid dimension {d!r}")
    return dims  # type: ignore[return-value]


TRAILING = "trailing bytes no structure explains"


def tile(regions: Iterable[Region], file_size: int, file: int = 0) -> Sequence[Region]:
    """Sort regions of one file, clip nothing, and fill every gap with an UNKNOWN region.

    Overlapping regions are a loader bug or a hostile file; the later one is cut to start where the
    earlier ends (the overlap is then visible as a shorter region, never double-counted). `RegionColumns` that lie one
    after the other from byte 0 (a zip's) are returned as columns.
    """
    if isinstance(regions, RegionColumns) and file == 0 and regions.laid():
        end = regions.starts[-1] + regions.lengths[-1]
        if end <= file_size:  # (as laid as they were told: the regions as they are, and what follows the last)
            trailing = [Region(RegionKind.UNKNOWN, end, file_size - end, TRAILING, file)]
            return regions.followed_by(trailing) if end < file_size else regions
    kept = regions if isinstance(regions, list) else list(regions)  # (a loader's fresh list is taken as it is)
    get_start, get_length = attrgetter("start"), attrgetter("length")
    lengths = list(map(get_length, kept))
    if kept and min(lengths) <= 0:  # (a loader's empty regions are dropped)
        kept = [r for r in kept if r.length > 0]
        lengths = list(map(get_length, kept))
    end = kept[-1].end if kept else 0
    starts = list(map(get_start, kept))  # (each field read once: 400,000 regions of a zip of 100,000 tensors)
    if (
        kept
        and starts[0] == 0
        and end <= file_size
        and all(map(eq, islice(starts, 1, None), map(add, starts, lengths)))
        and (
            not any(map(attrgetter("file"), kept))  # (file 0: no comparison made a region)
            if file == 0
            else all(map(eq, map(attrgetter("file"), kept), repeat(file)))
        )
    ):  # one after the other from byte 0 (most loaders): the regions as they are, and what follows the last
        trailing = [Region(RegionKind.UNKNOWN, end, file_size - end, TRAILING, file)]
        return (*kept, *trailing) if end < file_size else tuple(kept)
    if not all(map(lt, starts, islice(starts, 1, None))):  # in order already (most loaders): no sort
        kept = sorted(kept, key=get_start)  # (a new list: the caller's stays as it was)
        starts = list(map(get_start, kept))
        if any(map(eq, starts, islice(starts, 1, None))):  # of two regions with one start the longer first
            kept.sort(key=get_length, reverse=True)  # (stable sorts: equal ones keep their order)
            kept.sort(key=get_start)
    out: list[Region] = []
    pos = 0
    for r in kept:
        start, length = r.start, r.length
        if start < pos:  # overlap: keep only the part past what is already covered
            length -= pos - start
            start = pos
            if length <= 0:
                continue
        if start > pos and pos < file_size:  # a region past the end (a corrupt offset) leaves no gap beyond it
            gap = min(start, file_size) - pos
            out.append(Region(RegionKind.UNKNOWN, pos, gap, "bytes no structure explains", file))
        end = min(start + length, file_size)
        if end > start:
            if start == r.start and end - start == r.length and file == r.file:
                out.append(r)  # already what it would be rebuilt as (the common case: most regions)
            else:
                out.append(Region(r.kind, start, end - start, r.label, file, r.logical))
        pos = max(pos, end)
    if pos < file_size:
        out.append(Region(RegionKind.UNKNOWN, pos, file_size - pos, TRAILING, file))
    return tuple(out)


def check_invariants(ckpt: Checkpoint) -> None:
    """Assert the loader contract (used by tests on every loader).

    Regions of each file are sorted, do not overlap and cover it exactly; every addressable tensor lies
    inside a TENSOR_DATA (or DUPLICATE) region of its file.
    """
    for index, (path, size) in enumerate(ckpt.files):
        regions = [r for r in ckpt.regions if r.file == index]
        pos = 0
        for r in regions:
            assert r.start == pos, f"{path}: region {r} starts at {r.start}, expected {pos}"
            assert r.length > 0, f"{path}: empty region {r}"
            pos = r.end
        assert pos == size, f"{path}: regions end at {pos}, file has {size} bytes"
    from bisect import bisect_right  # (tests only: not in a run's start-up)

    # a file's data regions in order (its regions are, as checked above): the one that may hold a tensor is the last
    # that starts at or before its offset (a search, not a scan: 20,000 tensors took a minute)
    data: dict[int, list[Region]] = {}
    for r in ckpt.regions:
        if r.kind in (RegionKind.TENSOR_DATA, RegionKind.DUPLICATE):
            data.setdefault(r.file, []).append(r)
    starts = {file: [r.start for r in regions] for file, regions in data.items()}
    for t in ckpt.tensors:
        if t.offset is None or t.span_bytes == 0:
            continue
        at = bisect_right(starts.get(t.file, []), t.offset) - 1
        assert at >= 0 and t.offset + t.span_bytes <= data[t.file][at].end, (
            f"tensor {t.name!r} at {t.offset}+{t.nbytes} is not inside a tensor-data region"
        )


def single_file(
    probe: Probe,
    fmt: str,
    framework: str,
    tensors: Iterable[TensorInfo],
    regions: Iterable[Region],
    attributes: Mapping[str, str],
    findings: Iterable[Finding] = (),
    config: Mapping[str, Any] | None = None,
) -> Checkpoint:
    """The checkpoint of a one-file format: regions tiled over the file, gaps made UNKNOWN."""
    return Checkpoint(probe.path, fmt, framework, ((probe.path, probe.size),), tuple(tensors),
                      tile(regions, probe.size), attributes, config, tuple(findings))  # fmt: skip


# -- checkpoints of several files, read through the one that stands for them (a TF index, a DCP .metadata) ----------


def through_entry(probe: Probe, entry: str | None, load: Callable[[Probe], Checkpoint]) -> Checkpoint:
    """`load` the checkpoint through its entry file when `probe` is one of its other files (`entry` then names the
    file beside it that stands for the whole), else through `probe` itself."""
    if entry is None:
        return load(probe)
    with Probe(entry) as entry_probe:
        return load(entry_probe)


def check_in_shard(entry: Probe, fmt: str, what: str, end: int, shard_path: str, shard_size: int) -> None:
    """A span the entry file gives in another file of the checkpoint ends inside that file.

    Raises:
        TruncatedFileError: it ends past the shard's end (named with the entry file, where the span was read).
    """
    if end > shard_size:
        raise TruncatedFileError(
            entry.path,
            fmt,
            f"{what} ends at byte {end:,} of {os.path.basename(shard_path)!r}, which has {shard_size:,} bytes",
        )
