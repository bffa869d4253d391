"""PyTorch's legacy (pre-zip) format and its oldest tar format, read without torch (FORMATS.md 3.5, 3.6).

Legacy (``_use_new_zipfile_serialization=False``)::

    pickle(magic 0x1950A86A20F9469CFC6C)  pickle(protocol 1001)  pickle(sys_info)
    pickle(obj)                 tensors are persistent ids ('storage', type, key, location, numel, view)
    pickle(list of keys)        the storage keys in the order their data follows
    per key: i64 numel, then numel x itemsize bytes

Tar (torch 0.1.x): members ``sys_info``, ``pickle`` (the object; tensors are persistent ids holding a
tensor key), ``storages`` (count; per storage pickle((key, location, type)), i64 numel, bytes; a
views pickle) and ``tensors`` (count; per tensor pickle((key, storage key, type)), i32 ndim, 4 pad
bytes, sizes, strides, i64 offset), each behind a 512-byte header, padded to 512.

The pickles are interpreted by our restricted reader; the storages are walked by seeking over them.
Every pickle counts for the verdict (torch.load unpickles all of them, and a payload in sys_info or a
storage record runs as surely as one in the object), and what they would call is kept even when the
file cannot be read to the end.
"""

from __future__ import annotations

import struct

from inspector.errors import FormatError, LimitExceededError
from inspector.probe import Probe
from inspector.records import Checkpoint, Finding, Region, RegionKind
from loaders import TORCH_LEGACY, _pickle, _torch
from loaders.base import MAX_TENSORS, Claim, single_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar

FORMAT = "pytorch-legacy"
MAGICS = TORCH_LEGACY  # pickles of the magic number 0x1950A86A20F9469CFC6C, at protocols 2-5
TAR_MAGIC_AT, TAR_MAGIC = 257, b"ustar"
TAR_MEMBERS = ("sys_info", "pickle", "storages", "tensors")
BLOCK = 512


def _fail(probe: Probe, reason: str, offset: int | None = None) -> FormatError:
    return FormatError(probe.path, FORMAT, reason, offset)


class _Pickles:
    """Reads the file's pickles one after another, keeping every global and unsafe call any of them names."""

    def __init__(self, probe: Probe) -> None:
        self.probe = probe
        self.globals: set[str] = set()
        self.unsafe: set[str] = set()

    def at(
        self, start: int, end: int, storages: dict[str, _pickle.StorageRef], persistent: Any = None
    ) -> _pickle.Result:
        probe = self.probe
        reader = _pickle.Reader(
            fetch=lambda off, n: probe.read_at(off, n, fmt=FORMAT, what="pickle"), start=start, end=end
        )
        try:
            result = _pickle.load(reader, persistent or _torch.persistent_loader(storages))
        except _pickle.PickleError as exc:
            self.unsafe |= exc.unsafe
            raise _fail(probe, f"pickle at byte {start:,}: {exc}", start) from exc
        self.unsafe |= result.unsafe
        self.globals |= result.globals
        return result

    def findings(self) -> list[Finding]:
        return _torch.unsafe_finding(self.unsafe) + _torch.globals_finding(self.globals)


class TorchLegacyLoader:
    """The legacy magic-number format and the tar format."""

    name: ClassVar[str] = FORMAT
    extensions: ClassVar[tuple[str, ...]] = (".pt", ".pth", ".bin", ".tar")

    def claim(self, probe: Probe) -> Claim | None:
        if probe.head.startswith(MAGICS):
            return Claim.EXACT
        if probe.head[TAR_MAGIC_AT : TAR_MAGIC_AT + 5] == TAR_MAGIC and probe.head[:8] == b"sys_info":
            return Claim.EXACT
        return None

    def load(self, probe: Probe) -> Checkpoint:
        pickles = _Pickles(probe)
        try:
            return _load_legacy(probe, pickles) if probe.head.startswith(MAGICS) else _load_tar(probe, pickles)
        except Exception as exc:
            if not pickles.unsafe:
                raise
            return _torch.refused(probe, FORMAT, pickles.unsafe, exc)


def _load_legacy(probe: Probe, pickles: _Pickles) -> Checkpoint:
    storages: dict[str, _pickle.StorageRef] = {}
    regions: list[Region] = []
    pos = 0
    results = []
    for label in ("magic number", "protocol version", "sys_info", "object", "storage keys"):
        result = pickles.at(pos, probe.size, storages)
        kind = RegionKind.HEADER if label in ("magic number", "protocol version") else RegionKind.METADATA
        regions.append(Region(kind, pos, result.end - pos, f"{label} pickle"))
        results.append(result)
        pos = result.end
    keys = results[4].value
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise _fail(probe, "the storage key list is not a list of strings")
    offsets: dict[str, int] = {}
    for key in keys:
        ref = storages.get(key)
        if ref is None:
            raise _fail(probe, f"storage {key!r} is listed but no tensor names its type", pos)
        (numel,) = struct.unpack("<q", probe.read_at(pos, 8, fmt=FORMAT, what=f"size of storage {key!r}"))
        if numel != ref.numel:
            raise _fail(probe, f"storage {key!r} holds {numel:,} elements, the pickle says {ref.numel:,}", pos)
        regions.append(Region(RegionKind.HEADER, pos, 8, f"element count of storage {key!r}"))
        offsets[key] = pos + 8
        pos += 8 + ref.nbytes
        if pos > probe.size:
            raise _fail(probe, f"storage {key!r} data ends at byte {pos:,} but the file has {probe.size:,} bytes")
    tensors, findings = _tensors(probe, results[3].value, offsets)
    try:
        arrays = _torch.pickled_arrays(results[3], 0)  # (numpy arrays pickled in the object: their bytes there)
    except _pickle.PickleError as exc:
        raise _fail(probe, str(exc)) from exc
    if arrays:
        from loaders._numpy_pickle import stream_regions  # (pickles naming numpy only)

        regions[3:4] = stream_regions(regions[3].start, results[3].end, arrays, "object pickle")  # (the object's)
        tensors += arrays
    grouped = _torch.by_storage(tensors)
    for key in keys:
        regions += _torch.storage_regions(key, offsets[key], storages[key].nbytes, grouped.get(key, []))
    findings += pickles.findings()
    sys_info = results[2].value if isinstance(results[2].value, dict) else {}
    attributes = {
        "torch.container": "legacy",
        "torch.storages": str(len(keys)),
        "torch.little_endian": _pickle.key_name(sys_info.get("little_endian", "?")),
        **_torch.checkpoint_values(results[3].value),
    }
    return single_file(probe, FORMAT, "pytorch", tensors, regions, attributes, findings)


def _tensors(probe: Probe, value: Any, offsets: dict[str, int]) -> tuple[list[Any], list[Finding]]:
    try:
        return _torch.build_tensors(value, offsets)
    except _pickle.PickleError as exc:
        raise _fail(probe, str(exc)) from exc


# -- tar ------------------------------------------------------------------------------------------------------


def _tar_members(probe: Probe) -> tuple[dict[str, tuple[int, int]], list[Region]]:
    """name -> (data offset, size) of each member; regions for headers and block padding."""
    members: dict[str, tuple[int, int]] = {}
    regions: list[Region] = []
    pos = 0
    while pos + BLOCK <= probe.size and len(members) < 64:
        header = probe.read_at(pos, BLOCK, fmt=FORMAT, what="tar header")
        if header == b"\0" * BLOCK:
            break
        name = header[:100].split(b"\0", 1)[0].decode("utf-8", "replace")
        size = int(header[124:136].split(b"\0", 1)[0].strip() or b"0", 8)
        kind = chr(header[156]) if header[156] else "0"
        regions.append(Region(RegionKind.HEADER, pos, BLOCK, f"tar header {name!r}"))
        data = pos + BLOCK
        padded = -(-size // BLOCK) * BLOCK
        if data + padded > probe.size:
            raise _fail(probe, f"tar member {name!r} ends past the end of the file", pos)
        if padded > size:
            regions.append(Region(RegionKind.PADDING, data + size, padded - size, f"tar block padding {name!r}"))
        if kind in ("0", "\0"):
            members[name] = (data, size)
        else:  # PAX extended headers and the like: metadata
            regions.append(Region(RegionKind.METADATA, data, size, f"tar {kind!r} record"))
        pos = data + padded
    if pos < probe.size:
        regions.append(Region(RegionKind.PADDING, pos, probe.size - pos, "tar end blocks and record padding"))
    missing = [m for m in TAR_MEMBERS if m not in members]
    if missing:
        raise _fail(probe, f"tar archive lacks the members {missing}")
    return members, regions


def _load_tar(probe: Probe, pickles: _Pickles) -> Checkpoint:
    members, regions = _tar_members(probe)
    start, size = members["sys_info"]
    pickles.at(start, start + size, {})  # torch does not read it, but it is a pickle: checked all the same
    regions.append(Region(RegionKind.METADATA, start, size, "tar member 'sys_info'"))
    # storages: count; per storage pickle((key, location, type)), i64 numel, data; then a views pickle
    start, size = members["storages"]
    end = start + size
    storages: dict[str, _pickle.StorageRef] = {}
    offsets: dict[str, int] = {}
    count = pickles.at(start, end, storages)
    regions.append(Region(RegionKind.METADATA, start, count.end - start, "storage count pickle"))
    pos = count.end
    if not isinstance(count.value, int) or not 0 <= count.value <= MAX_TENSORS:
        raise _fail(probe, "bad storage count", start)
    for _ in range(count.value):
        rec = pickles.at(pos, end, storages)
        key, location, stype = rec.value if isinstance(rec.value, tuple) and len(rec.value) == 3 else (None, None, None)
        key = _pickle.key_name(key)
        if not isinstance(stype, _pickle.StorageType):
            raise _fail(probe, "bad storage record", pos)
        (numel,) = struct.unpack("<q", probe.read_at(rec.end, 8, fmt=FORMAT))
        ref = _pickle.StorageRef(key, stype.dtype, _pickle.itemsize(stype.dtype), _pickle.key_name(location), numel)
        if numel < 0 or rec.end + 8 + ref.nbytes > end:
            raise _fail(probe, f"storage {key!r} runs past its tar member", rec.end)
        storages[ref.key] = ref
        regions.append(Region(RegionKind.METADATA, pos, rec.end - pos, f"storage {key!r} record"))
        regions.append(Region(RegionKind.HEADER, rec.end, 8, f"element count of storage {key!r}"))
        offsets[ref.key] = rec.end + 8
        pos = rec.end + 8 + ref.nbytes
    views = pickles.at(pos, end, storages)
    regions.append(Region(RegionKind.METADATA, pos, views.end - pos, "storage views pickle"))
    tensor_refs, tensor_regions = _tar_tensors(probe, pickles, members["tensors"], storages)
    regions += tensor_regions
    start, size = members["pickle"]
    obj = pickles.at(start, start + size, {}, lambda pid: _tensor_key(pid, tensor_refs))
    regions.append(Region(RegionKind.METADATA, start, size, "object pickle"))
    tensors, findings = _tensors(probe, obj.value, offsets)
    grouped = _torch.by_storage(tensors)
    for key, ref in storages.items():
        regions += _torch.storage_regions(key, offsets[key], ref.nbytes, grouped.get(key, []))
    findings += pickles.findings()
    attributes = {"torch.container": "tar", "torch.storages": str(len(storages))}
    return single_file(probe, FORMAT, "pytorch", tensors, regions, attributes, findings)


def _tar_tensors(
    probe: Probe, pickles: _Pickles, member: tuple[int, int], storages: dict[str, _pickle.StorageRef]
) -> tuple[dict[str, _pickle.TensorRef], list[Region]]:
    start, size = member
    end = start + size
    regions: list[Region] = []
    count = pickles.at(start, end, {})
    if not isinstance(count.value, int) or not 0 <= count.value <= MAX_TENSORS:
        raise LimitExceededError(probe.path, FORMAT, "bad tensor count")
    regions.append(Region(RegionKind.METADATA, start, count.end - start, "tensor count pickle"))
    pos = count.end
    out: dict[str, _pickle.TensorRef] = {}
    for _ in range(count.value):
        rec = pickles.at(pos, end, {})
        if not isinstance(rec.value, tuple) or len(rec.value) != 3:
            raise _fail(probe, "bad tensor record", pos)
        key, storage_key = _pickle.key_name(rec.value[0]), _pickle.key_name(rec.value[1])
        (ndim,) = struct.unpack("<i", probe.read_at(rec.end, 4, fmt=FORMAT))
        if not 0 <= ndim <= 64:
            raise LimitExceededError(probe.path, FORMAT, f"tensor {key!r} has {ndim} dimensions", rec.end)
        body = probe.read_at(rec.end + 8, 16 * ndim + 8, fmt=FORMAT)
        dims = struct.unpack(f"<{2 * ndim + 1}q", body)
        storage = storages.get(storage_key)
        if storage is None:
            raise _fail(probe, f"tensor {key!r} names unknown storage {storage_key!r}", pos)
        out[key] = _pickle.TensorRef(storage, dims[-1], tuple(dims[:ndim]), tuple(dims[ndim:-1]), storage.dtype)
        regions.append(Region(RegionKind.METADATA, pos, rec.end + 8 + 16 * ndim + 8 - pos, f"tensor {key!r} record"))
        pos = rec.end + 8 + 16 * ndim + 8
    if pos < end:
        regions.append(Region(RegionKind.METADATA, pos, end - pos, "tensors member tail"))
    return out, regions


def _tensor_key(pid: Any, tensors: dict[str, _pickle.TensorRef]) -> _pickle.TensorRef:
    """The tar object pickle names each tensor by its key, as a persistent id."""
    key = _pickle.key_name(pid)
    ref = tensors.get(key)
    if ref is None:
        raise _pickle.PickleError(f"the object names tensor {key[:80]!r}, which the tensors member lacks")
    return ref
