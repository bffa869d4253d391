"""HDF5 metadata only: datasets with their storage, and where the file's bytes go.

The files h5py writes by default are read from their own bytes (`loaders._hdf5_native`); any other file
through h5py (imported here, lazily), which opens object headers and never reads a dataset's values. Byte accounting
follows FORMATS.md 6.2: the superblock, every object header (at its address, with its size), each
dataset's raw storage (contiguous extents and chunks at their offsets) are placed exactly. Then, reading
metadata bytes only (`loaders._hdf5_structures`), object headers are split into their chunks and the
B-trees, symbol table nodes, local, global and fractal heaps and free-space managers in the gaps are placed
from their own signatures and sizes. What h5py knows by size only and no signature places (deeper v2
B-trees, indirect heap blocks) fills the remaining gaps in file order; all-zero gaps are unused
allocation space (padding); what is left is unaccounted (free space, dead space after deletions). Global
heaps, zero-filled space and the unaccounted rest together are the "unaccounted space" `h5stat -S` reports.
"""

from __future__ import annotations

import io
import json
import os
import resource
import select
import signal
import struct
import time

from inspector.dtypes import NUMPY_DTYPES
from inspector.errors import FormatError, InspectorError, MissingDependencyError, TruncatedFileError
from inspector.probe import Probe
from inspector.records import Region, RegionKind
from inspector.recordtype import asdict, field, record
from loaders import _hdf5_structures

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SUPERBLOCK_BYTES = {0: 96, 1: 100, 2: 48, 3: 48}
LAYOUT_COMPACT, LAYOUT_CONTIGUOUS, LAYOUT_CHUNKED = 0, 1, 2
MAX_OBJECTS = 1_000_000
MAX_SECONDS = 10  # for the HDF5 library to read a file's metadata (real files take well under 1 s)
MAX_REMOTE_SECONDS = 120  # the same over the network (one round trip per block of metadata)
MAX_CHILD_MEMORY = 8 << 30
OPAQUE_DTYPE_ATTR = "dtype"  # Keras 3 stores bfloat16 as 2-byte opaque data with attribute dtype='bfloat16'
OPAQUE_NAMES = {"bfloat16": "BF16", "float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2"}
ATTR_LIMIT = 1 << 20  # attributes whose text is longer are left out
READER_ENV = "INSPECTOR_HDF5_READER"  # "h5py": skip the native reader (tests compare the two)


def h5py_module() -> Any:
    try:
        import h5py
    except ImportError as exc:  # pragma: no cover - h5py is a dependency
        raise MissingDependencyError("h5py", "checkpoint-inspector") from exc
    return h5py


class Window(io.RawIOBase):
    """A read-only file object over `[start, start + length)` of a probe's file (an HDF5 member of a zip)."""

    def __init__(self, probe: Probe, start: int, length: int) -> None:
        self.probe, self.start, self.length, self.pos = probe, start, length, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self.pos, 2: self.length}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def tell(self) -> int:
        return self.pos

    def readinto(self, buffer: Any) -> int:
        n = max(0, min(len(buffer), self.length - self.pos))
        if n:
            buffer[:n] = self.probe.read_at(self.start + self.pos, n, fmt="hdf5", what="HDF5 data")
        self.pos += n
        return n


@record
class H5Dataset:
    path: str
    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    offset: int | None  # absolute, contiguous storage only
    storage_size: int
    chunks: list[tuple[int, int]] = field(default_factory=list)  # (absolute offset, stored size)
    filtered: bool = False
    attrs: dict[str, Any] = field(default_factory=dict)


@record
class H5Walk:
    datasets: list[H5Dataset]
    regions: list[Region]  # placed exactly
    sized_only: int  # B-trees, heaps, chunk indexes: bytes known, places not
    attrs: dict[str, Any]  # root attributes
    group_attrs: dict[str, dict[str, Any]] = field(default_factory=dict)  # group path ('' = root) -> attributes
    superblock: dict[str, int] = field(default_factory=dict)  # origin, version, offset_size, length_size


def dtype_name(ds: Any) -> tuple[str, int]:
    """Canonical dtype and itemsize of a dataset."""
    dt = ds.dtype
    key = f"{dt.kind}{dt.itemsize}"
    if key in NUMPY_DTYPES:
        return NUMPY_DTYPES[key], dt.itemsize
    if dt.kind == "V" and not dt.fields:
        tag = ds.attrs.get(OPAQUE_DTYPE_ATTR)
        tag = tag.decode() if isinstance(tag, bytes) else tag
        if tag in OPAQUE_NAMES:
            return OPAQUE_NAMES[tag], dt.itemsize
        return f"VOID[{dt.itemsize}]", dt.itemsize
    if dt.kind == "O":
        return "OBJECT", dt.itemsize
    return {"S": f"BYTES[{dt.itemsize}]", "U": f"UNICODE[{dt.itemsize}]"}.get(
        dt.kind, f"VOID[{dt.itemsize}]"
    ), dt.itemsize


def small_attrs(obj: Any, limit: int = ATTR_LIMIT) -> dict[str, Any]:
    """Attributes as Python values (bytes decoded); large ones are skipped."""
    values: dict[str, Any] = {}
    for key in obj.attrs:
        try:
            value = obj.attrs[key]
        except (OSError, TypeError, ValueError):
            continue
        values[key] = value.tolist() if hasattr(value, "tolist") else value
    return kept_attrs(values, limit)


def kept_attrs(values: dict[str, Any], limit: int = ATTR_LIMIT) -> dict[str, Any]:
    """Attribute values as h5py reads them and numpy's `tolist` gives them -> JSON-safe values (bytes decoded),
    large ones skipped (shared by the h5py walk and `loaders._hdf5_native`)."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        if isinstance(value, list):
            value = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value]
        if len(str(value)) <= limit:
            out[key] = _plain(value)
    return out


def _plain(value: Any) -> Any:
    """A JSON-safe form of an attribute value (numpy scalars and nested lists included)."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item"):
        return _plain(value.item())
    return str(value)


def _dataset(h5py: Any, path: str, ds: Any, base: int, n_attrs: int = 1) -> tuple[H5Dataset, list[Region]]:
    dtype, size = dtype_name(ds)
    n = 1
    for d in ds.shape or ():
        n *= d
    dcpl = ds.id.get_create_plist()
    layout = dcpl.get_layout()
    stored = ds.id.get_storage_size()
    filtered = dcpl.get_nfilters() > 0
    item = H5Dataset(
        path,
        tuple(ds.shape or ()),
        dtype,
        n * size,
        None,
        stored,
        filtered=filtered,
        attrs=small_attrs(ds) if n_attrs else {},
    )
    regions: list[Region] = []
    if layout == LAYOUT_CONTIGUOUS:
        offset = ds.id.get_offset()
        if offset is not None and stored:
            item.offset = base + offset
            regions.append(Region(RegionKind.TENSOR_DATA, base + offset, stored, path))
    elif layout == LAYOUT_CHUNKED:
        for i in range(ds.id.get_num_chunks()):
            info = ds.id.get_chunk_info(i)
            item.chunks.append((base + info.byte_offset, info.size))
            kind = RegionKind.COMPRESSED if filtered else RegionKind.TENSOR_DATA
            regions.append(Region(kind, base + info.byte_offset, info.size, f"{path} chunk {i}"))
    return item, regions


def child_memory_limit() -> tuple[int, int]:
    """RLIMIT_AS for the HDF5 child: `MAX_CHILD_MEMORY`, never above a limit already in force.

    An unprivileged process may not raise its hard limit (setrlimit fails with EPERM), and raising the
    soft limit past the parent's would lift a cap the user chose; so both are lowered only.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = MAX_CHILD_MEMORY
    for limit in (soft, hard):
        if limit != resource.RLIM_INFINITY:
            cap = min(cap, limit)
    return cap, cap


def walk(probe: Probe, fmt: str, start: int = 0, length: int | None = None) -> H5Walk:
    """Open the HDF5 file (or the window of it inside a zip) and account for it.

    `loaders._hdf5_native` reads the files h5py writes by default (all Keras files) from their own bytes, with
    neither h5py nor numpy imported. Anything outside its subset, or that does not parse as the library would
    parse it, goes to h5py as before (set INSPECTOR_HDF5_READER=h5py to always go there). The HDF5 C library
    can loop forever or allocate without bound on a corrupt file (a damaged global heap, seen in fuzzing),
    and no signal interrupts it inside this process. So h5py's walk runs in a forked child with a memory
    cap, and the parent waits at most `MAX_SECONDS` for its JSON result.

    Raises:
        FormatError: h5py refuses the file, or the library does not finish within the limits.
    """
    length = probe.size - start if length is None else length
    if os.environ.get(READER_ENV) != "h5py":
        from loaders import _hdf5_native

        known: dict[tuple[int, int], bytes] = {}
        try:
            walked = _hdf5_native.walk(probe, start, length, known)
        except _hdf5_native.Unsupported:
            pass
        else:
            _check_inside(probe, fmt, walked, start, length)
            return _refine(probe, walked, start, length, known)
    h5py_module()  # a missing h5py is reported here, in this process
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: walk, write the result, exit without running the parent's cleanup
        os.close(read_fd)
        code = 0
        try:
            resource.setrlimit(resource.RLIMIT_AS, child_memory_limit())
            before = probe.counters()
            encoded = _encode(_walk_here(probe, fmt, start, length))
            encoded["counters"] = {k: v - before[k] for k, v in probe.counters().items()}  # read in the child
            payload = json.dumps(encoded)
        except FormatError as exc:
            payload, code = json.dumps({"error": exc.reason}), 3
        except BaseException as exc:  # noqa: BLE001 - the child reports every failure as data
            payload, code = json.dumps({"error": f"{type(exc).__name__}: {exc}"[:500]}), 3
        with os.fdopen(write_fd, "w") as out:
            out.write(payload)
        os._exit(code)
    os.close(write_fd)
    walked = _collect(probe, fmt, pid, read_fd)
    _check_inside(probe, fmt, walked, start, length)
    return _refine(probe, walked, start, length)


def _refine(
    probe: Probe, walked: H5Walk, start: int, length: int, known: dict[tuple[int, int], bytes] | None = None
) -> H5Walk:
    """Object headers split into their chunks, and signed structures found in the gaps (metadata bytes only).

    `known`: bytes already read ((offset, length) -> bytes), by the native reader. Falls back to the walk as it
    was when the metadata bytes do not parse (a corrupt file h5py still opened).
    """
    sb = walked.superblock
    if not sb:
        return walked
    cached = known or {}

    def read(at: int, n: int) -> bytes:
        data = cached.get((at, n))
        return probe.read_at(at, n, fmt="hdf5", what="HDF5 metadata") if data is None else data

    ranks = [len(d.shape) for d in walked.datasets if d.chunks]
    try:
        g = _hdf5_structures.geometry(read, sb["origin"], sb["version"], sb["offset_size"], sb["length_size"], ranks)
        regions: list[Region] = []
        for r in walked.regions:
            split = None
            if r.kind is RegionKind.HEADER and r.label.startswith("object header"):
                split = _hdf5_structures.split_header(read, g, r, (start, start + length))
            regions += split or [r]
        gaps = _gaps(regions, start, start + length)
        children = {c for d in walked.datasets for c, _ in d.chunks}
        found, pooled = _hdf5_structures.locate(read, g, gaps, children)
        found += _hdf5_structures.zero_filled(read, _gaps(regions + found, start, start + length))
    except (InspectorError, struct.error, IndexError, ValueError):
        return walked
    walked.regions = regions + found
    walked.sized_only = max(0, walked.sized_only - pooled)
    return walked


def _gaps(regions: list[Region], start: int, end: int) -> list[tuple[int, int]]:
    out = []
    pos = start
    for r in sorted(regions, key=lambda r: r.start):
        if r.start > pos:
            out.append((pos, r.start - pos))
        pos = max(pos, r.end)
    if end > pos:
        out.append((pos, end - pos))
    return out


def _check_inside(probe: Probe, fmt: str, walked: H5Walk, start: int, length: int) -> None:
    """Every structure the library placed lies inside the file (a corrupt address points past its end)."""
    for r in walked.regions:
        if r.start < start or r.end > start + length:
            raise TruncatedFileError(
                probe.path, fmt, f"{r.label} at {r.start:,}+{r.length:,} lies outside the HDF5 data "
                f"({start:,}..{start + length:,})", r.start
            )  # fmt: skip


def _collect(probe: Probe, fmt: str, pid: int, read_fd: int) -> H5Walk:
    seconds = MAX_SECONDS if probe.local else MAX_REMOTE_SECONDS
    deadline = time.monotonic() + seconds
    chunks: list[bytes] = []
    finished = False
    try:
        while True:
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([read_fd], [], [], max(remaining, 0))
            if not ready:
                raise FormatError(probe.path, fmt, f"the HDF5 library did not finish reading the metadata within "
                                  f"{seconds} s (corrupt structure?)")  # fmt: skip
            chunk = os.read(read_fd, 1 << 20)
            if not chunk:
                finished = True
                break
            chunks.append(chunk)
    finally:
        # however this ends (a timeout, or a signal such as a caller's alarm), a child still running is
        # killed: waiting for one stuck in libhdf5 would hang this process for ever
        os.close(read_fd)
        if not finished:
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    if not chunks:
        raise FormatError(probe.path, fmt, "the HDF5 library failed on this file (out of memory or crashed)")
    data = json.loads(b"".join(chunks))
    if "error" in data:
        raise FormatError(probe.path, fmt, data["error"])
    probe.add_counters(data.pop("counters", {}))
    return _decode(data)


def _encode(w: H5Walk) -> dict[str, Any]:
    return {
        "datasets": [asdict(d) for d in w.datasets],
        "regions": [[r.kind.value, r.start, r.length, r.label] for r in w.regions],
        "sized_only": w.sized_only,
        "attrs": w.attrs,
        "group_attrs": w.group_attrs,
        "superblock": w.superblock,
    }


def _decode(data: dict[str, Any]) -> H5Walk:
    datasets = []
    for d in data["datasets"]:
        d["shape"] = tuple(d["shape"])
        d["chunks"] = [tuple(c) for c in d["chunks"]]
        datasets.append(H5Dataset(**d))
    regions = [Region(RegionKind(k), s, n, label) for k, s, n, label in data["regions"]]
    return H5Walk(datasets, regions, data["sized_only"], data["attrs"], data["group_attrs"], data["superblock"])


def _walk_here(probe: Probe, fmt: str, start: int, length: int | None) -> H5Walk:
    h5py = h5py_module()
    length = probe.size - start if length is None else length
    try:
        handle = (
            h5py.File(Window(probe, start, length), "r")
            if start or length != probe.size or not probe.local
            else h5py.File(probe.path, "r")
        )
    except (OSError, ValueError, RuntimeError) as exc:
        raise FormatError(probe.path, fmt, f"h5py cannot open it: {exc}") from exc
    with handle as f:
        try:
            return _walk(h5py, f, start, length)
        except (KeyError, OSError, RuntimeError) as exc:
            raise FormatError(probe.path, fmt, f"HDF5 structure unreadable: {exc}") from exc


def _walk(h5py: Any, f: Any, base: int, length: int) -> H5Walk:
    version = f.id.get_create_plist().get_version()[0]
    userblock = f.id.get_create_plist().get_userblock()
    regions = [
        Region(RegionKind.HEADER, base + userblock, SUPERBLOCK_BYTES.get(version, 96), f"HDF5 superblock v{version}")
    ]
    if userblock:
        regions.append(Region(RegionKind.METADATA, base, userblock, "HDF5 user block"))
    datasets: list[H5Dataset] = []
    seen: set[int] = set()
    sized = 0

    def visit(raw: bytes, info: Any) -> None:
        """One object, as `h5o.visit` reports it (name and header info): what `visititems` gives, without making a
        high-level object of every group and reading attributes an object has none of (issue 16)."""
        nonlocal sized
        if info.addr in seen or len(seen) > MAX_OBJECTS:
            return
        seen.add(info.addr)
        name = f._d(raw) if raw != b"." else ""  # h5py's own decoding of names (UTF-8, else the bytes)
        label = f"object header {('/' + name) if name else '/'}"
        regions.append(Region(RegionKind.HEADER, base + userblock + info.addr, info.hdr.space.total, label))
        meta = info.meta_size
        sized += meta.obj.index_size + meta.obj.heap_size + meta.attr.index_size + meta.attr.heap_size
        if info.type == h5py.h5o.TYPE_DATASET:
            item, data_regions = _dataset(h5py, name, h5py.Dataset(h5py.h5d.open(f.id, raw)), base, info.num_attrs)
            datasets.append(item)
            regions.extend(data_regions)
        else:
            groups[name] = small_attrs(f[raw] if raw != b"." else f) if info.num_attrs else {}

    groups: dict[str, dict[str, Any]] = {}
    visit(b".", h5py.h5o.get_info(f.id))
    h5py.h5o.visit(f.id, visit, info=True)
    offset_size, length_size = f.id.get_create_plist().get_sizes()
    superblock = {
        "origin": base + userblock,
        "version": version,
        "offset_size": offset_size,
        "length_size": length_size,
    }
    return H5Walk(datasets, regions, sized, groups.get("", {}), groups, superblock)


def place(walked: H5Walk, start: int, length: int, label: str = "HDF5") -> list[Region]:
    """The exact regions plus the gaps: sized-only structures first, the rest UNACCOUNTED (as h5stat)."""
    placed = sorted((r for r in walked.regions if r.length > 0), key=lambda r: (r.start, r.kind is RegionKind.HEADER))
    # An object header may continue in blocks elsewhere (h5py gives its address and total size only): keep the
    # part up to the next known region in place and move the rest to the sized-only pool.
    exact: list[Region] = []
    budget = walked.sized_only
    for i, r in enumerate(placed):
        nxt = placed[i + 1].start if i + 1 < len(placed) else start + length
        if r.kind is RegionKind.HEADER and r.start + r.length > nxt:
            budget += r.start + r.length - max(nxt, r.start)
            r = Region(r.kind, r.start, max(nxt - r.start, 0), r.label, r.file)
        if r.length:
            exact.append(r)
    out: list[Region] = []
    pos = start
    for r in [*exact, Region(RegionKind.HEADER, start + length, 0, "end")]:
        if r.start > pos:
            gap = r.start - pos
            take = min(gap, budget)
            if take:
                out.append(
                    Region(
                        RegionKind.METADATA,
                        pos,
                        take,
                        f"{label} header continuations, B-trees and heaps (sizes from h5py, places inferred)",
                    )
                )
                budget -= take
            if gap > take:
                out.append(
                    Region(
                        RegionKind.UNACCOUNTED,
                        pos + take,
                        gap - take,
                        f"{label} unaccounted (free or dead space: no structure found here)",
                    )
                )
        if r.length and r.start >= pos:
            out.append(r)
        pos = max(pos, r.start + r.length)
    return out
