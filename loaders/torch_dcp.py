"""PyTorch distributed checkpoints (`torch.distributed.checkpoint`, DCP): a folder with ``.metadata`` and shards.

Layout (torch 2.13 ``torch/distributed/checkpoint/filesystem.py`` and ``metadata.py``)::

    .metadata           a pickle of Metadata {state_dict_metadata: {fqn: TensorStorageMetadata
                        {properties (dtype...), size, chunks [{offsets, sizes}]} | BytesStorageMetadata},
                        storage_data: {MetadataIndex {fqn, offset, index}: _StorageInfo {relative_path,
                        offset, length, transform_descriptors}}, planner_data, storage_meta, version}
    __R_I.distcp        the items one rank wrote, end to end: each a whole `torch.save` zip archive of one
                        tensor chunk (or of a pickled non-tensor object), at the offset and length above

The metadata pickle is read by our restricted reader (`loaders._pickle`): nothing it names is imported
or called. Each item's zip is read like a `torch.save` file (central directory, local headers, data.pkl),
so every tensor chunk gets its absolute offset and every byte of the shard a region. A tensor saved as
one chunk is reported under its fully qualified name; a sharded tensor as one tensor per chunk, named
``fqn[start:stop,...]``. The folder, its ``.metadata`` or any ``.distcp`` file all stand for the whole
checkpoint.
"""

from __future__ import annotations

import os
from math import prod

from inspector.errors import FormatError, InspectorError, LimitExceededError, TruncatedFileError
from inspector.probe import Probe
from inspector.records import Checkpoint, Finding, Region, RegionKind, Severity, TensorInfo, TensorKind
from inspector.recordtype import field, record, replace
from loaders import _pickle, _pickle_machine, _torch, _zip
from loaders.base import MAX_TENSORS, Claim, check_in_shard, check_shape, parsing, through_entry, tile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar

FORMAT = "torch-dcp"
METADATA_NAME = ".metadata"
SHARD_SUFFIX = ".distcp"
METADATA_MODULE = b"torch.distributed.checkpoint.metadata"
MAX_METADATA_BYTES = 512 << 20
MAX_ITEM_PICKLE_BYTES = 64 << 20
MAX_FILES = 100_000
# Tied weights: a state dict names a shared tensor under each module, and DCP stores it once per name. An output
# projection's weight, or a second embedding's (T5's `encoder.embed_tokens` is `shared`), with the shape and dtype
# of an earlier embedding's is a copy when the first 64 bytes agree too (the only tensor bytes read, as for MXNet's
# Gluon files). That is how DCP writes every tied model: information, not a warning.
TIE_SOURCES = ("emb", "wte", "embed_tokens", "word_embeddings", "tok_embeddings", "shared")
TIE_TARGETS = ("head", "decoder", "out", "proj", "lm_head", "output")
TIE_SAMPLE = 64
WINDOW_HEAD_BYTES = 30  # an item's first zip local header, enough to tell a torch.save archive
# Globals a DCP .metadata pickle names that only record data (dataclasses, enums, a path): not code to run.
DCP_INERT = {
    "torch.distributed.checkpoint.metadata.Metadata",
    "torch.distributed.checkpoint.metadata.TensorStorageMetadata",
    "torch.distributed.checkpoint.metadata.BytesStorageMetadata",
    "torch.distributed.checkpoint.metadata.TensorProperties",
    "torch.distributed.checkpoint.metadata.ChunkStorageMetadata",
    "torch.distributed.checkpoint.metadata.MetadataIndex",
    "torch.distributed.checkpoint.metadata.StorageMeta",
    "torch.distributed.checkpoint.metadata._MEM_FORMAT_ENCODING",
    "torch.distributed.checkpoint.filesystem._StorageInfo",
    "torch.distributed.checkpoint._extension.ExtensionsDescriptor",
    "torch.serialization._get_layout",
    "pathlib.PosixPath",
    "pathlib.WindowsPath",
    "pathlib._local.PosixPath",
    "pathlib._local.WindowsPath",
}


def _is_metadata(head: bytes) -> bool:
    """A pickle (PROTO opcode) whose first global is DCP's Metadata class."""
    return head[:1] == b"\x80" and METADATA_MODULE in head[:128]


def _sibling_metadata(path: str) -> str | None:
    if not path.endswith(SHARD_SUFFIX):
        return None
    candidate = os.path.join(os.path.dirname(path) or ".", METADATA_NAME)
    try:
        with open(candidate, "rb") as fh:
            return candidate if _is_metadata(fh.read(128)) else None
    except OSError:
        return None


def folder_entry(folder: str) -> str | None:
    """The `.metadata` of a DCP checkpoint folder."""
    candidate = os.path.join(folder, METADATA_NAME)
    try:
        with open(candidate, "rb") as fh:
            return candidate if _is_metadata(fh.read(128)) else None
    except OSError:
        return None


class _Window(Probe):
    """Bytes ``[start, start + length)`` of a probed file seen as a file of its own (one item's zip archive)."""

    def __init__(self, parent: Probe, start: int, length: int) -> None:  # no file is opened: reads go to `parent`
        self._fd = -1
        self._parent = parent
        self._start = start
        self.path = f"{parent.path} (item at byte {start:,})"
        self.size = length
        self.bytes_read = 0
        self.cache = {}
        self.head = self.read_at(0, min(WINDOW_HEAD_BYTES, length))  # a local header: never the item's data

    def read_at(self, offset: int, n: int, *, fmt: str = "file", what: str = "data") -> bytes:
        if offset < 0 or n < 0 or offset + n > self.size:
            raise TruncatedFileError(self.path, fmt, f"{what} ends at byte {offset + n:,} of a {self.size:,}-byte item")
        return self._parent.read_at(self._start + offset, n, fmt=fmt, what=what)


def _fields(obj: Any) -> dict[str, Any]:
    """The attributes of an inert dataclass instance (its BUILD state, or its constructor arguments)."""
    if isinstance(obj, _pickle.Call):
        if isinstance(obj.state, dict):
            return {str(k): v for k, v in obj.state.items()}
        if isinstance(obj.state, tuple) and len(obj.state) == 2 and isinstance(obj.state[1], dict):
            return {str(k): v for k, v in obj.state[1].items()}  # (None, slots) form
    return {}


def _class(obj: Any) -> str:
    return obj.func.name if isinstance(obj, _pickle.Call) and isinstance(obj.func, _pickle.Global) else ""


def _dtype(properties: Any) -> str | None:
    """TensorProperties: a 5-tuple state (dtype, layout, requires_grad, memory_format, pin_memory) or a dict."""
    state = properties.state if isinstance(properties, _pickle.Call) else None
    value = state[0] if isinstance(state, tuple) and state else _fields(properties).get("dtype")
    return value.dtype if isinstance(value, _pickle.DTypeRef) else None


@record(frozen=True, slots=True)
class _Item:
    """One stored item: a chunk of a tensor (shape, dtype, offsets in the full tensor) or a pickled object."""

    fqn: str
    file: str
    offset: int
    length: int
    transforms: tuple[str, ...]  # DCP extension descriptors ('stream.zstd/1'), outermost first
    chunk: tuple[tuple[int, ...], tuple[int, ...]] | None  # (offsets, sizes); None for a bytes item
    full_shape: tuple[int, ...] = ()
    dtype: str = ""
    n_chunks: int = 1


def _ints(value: Any) -> tuple[int, ...]:
    if not isinstance(value, (tuple, list)) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ValueError(f"expected a tuple of ints, got {type(value).__name__}")
    return tuple(value)


def _items(probe: Probe, metadata: Any) -> list[_Item]:
    """Every stored item the metadata indexes, matched with its tensor's shape, dtype and chunk."""
    if _class(metadata) != "Metadata":
        raise FormatError(
            probe.path,
            FORMAT,
            f"the pickle holds a {_class(metadata) or type(metadata).__name__!r}, not a DCP Metadata",
        )
    fields = _fields(metadata)
    tensors, storage = fields.get("state_dict_metadata"), fields.get("storage_data")
    if not isinstance(tensors, dict) or not isinstance(storage, dict):
        raise FormatError(probe.path, FORMAT, "Metadata has no state_dict_metadata / storage_data dicts")
    if len(storage) > MAX_TENSORS:
        raise LimitExceededError(probe.path, FORMAT, f"{len(storage):,} stored items (cap {MAX_TENSORS:,})")
    items = []
    for index, info in storage.items():
        where, at = _fields(index), _fields(info)
        fqn, path = str(where.get("fqn")), at.get("relative_path")
        offset, length = at.get("offset"), at.get("length")
        if not isinstance(path, str) or os.path.basename(path) != path or path in ("", ".", ".."):
            raise FormatError(probe.path, FORMAT, f"item {fqn!r} names {path!r}, not a file beside the metadata")
        if (
            not (isinstance(offset, int) and isinstance(length, int))
            or isinstance(offset, bool)
            or min(offset, length) < 0
        ):
            raise FormatError(probe.path, FORMAT, f"item {fqn!r} has an invalid offset or length")
        entry = tensors.get(fqn)
        descriptors = at.get("transform_descriptors") or ()
        transforms = tuple(str(d) for d in descriptors) if isinstance(descriptors, (list, tuple)) else ("?",)
        if _class(entry) != "TensorStorageMetadata":
            items.append(_Item(fqn, path, offset, length, transforms, None))
            continue
        meta = _fields(entry)
        chunks = meta.get("chunks") or []
        chunk_index = where.get("index")
        if not isinstance(chunk_index, int) or not 0 <= chunk_index < len(chunks):
            raise FormatError(probe.path, FORMAT, f"item {fqn!r} names chunk {chunk_index!r} of {len(chunks)}")
        chunk = _fields(chunks[chunk_index])
        dtype = _dtype(meta.get("properties"))
        if dtype is None:
            raise FormatError(probe.path, FORMAT, f"tensor {fqn!r} has no dtype PyTorch names")
        full = check_shape(probe, FORMAT, fqn, _ints(meta.get("size")))
        offsets = _ints(chunk.get("offsets"))
        sizes = check_shape(probe, FORMAT, fqn, _ints(chunk.get("sizes")))
        items.append(_Item(fqn, path, offset, length, transforms, (offsets, sizes), full, dtype, len(chunks)))
    return items


def _no_persistent_ids(pid: Any) -> Any:
    raise _pickle.PickleError("a DCP metadata pickle has no persistent ids")


def _kind(fqn: str) -> tuple[TensorKind, str]:
    """Kind and section by the first name part in `_torch.SECTIONS` among the first two (`app.optim.state...` as
    the DCP tutorial's `{"app": AppState(model, optimizer)}` writes); buffers by name are decided in
    `inspector.kinds` for every format."""
    parts = fqn.split(".")
    top = next((p for p in parts[:2] if p in _torch.SECTIONS), parts[0])
    section, kind = _torch.SECTIONS.get(top, ("", TensorKind.PARAMETER))
    return kind, section


def _chunk_name(item: _Item) -> str:
    assert item.chunk is not None
    offsets, sizes = item.chunk
    if item.n_chunks == 1 and sizes == item.full_shape:
        return item.fqn
    return item.fqn + "[" + ",".join(f"{o}:{o + s}" for o, s in zip(offsets, sizes, strict=False)) + "]"


@record(slots=True)
class _Read:
    """What the shards gave: tensors, regions per file index, findings, unsafe globals."""

    tensors: list[TensorInfo]
    regions: list[Region]
    findings: list[Finding]
    unsafe: set[str]
    pickles: dict[bytes, tuple[_pickle.Result, dict[str, _pickle.StorageRef]]] = field(default_factory=dict)


def _read_item(shard: Probe, file: int, item: _Item, out: _Read) -> None:
    """One item's zip archive: its regions, its data.pkl read inertly, its tensor at an absolute offset."""
    label = item.fqn if item.chunk is None else _chunk_name(item)
    if item.transforms:  # e.g. zstd: the archive's size before the transform is known only by decoding it
        what = f"{label} (through {', '.join(item.transforms)})"
        out.regions.append(Region(RegionKind.COMPRESSED, item.offset, item.length, what, file))
        if item.chunk is not None:
            out.tensors.append(_tensor(item, None, file, (f"stored through {', '.join(item.transforms)}: no offset",)))
        return
    window = _Window(shard, item.offset, item.length)
    if not window.head.startswith(_zip.LOCAL_SIG):
        out.findings.append(
            Finding(
                "UNSUPPORTED_ITEM",
                Severity.WARNING,
                f"item {label!r} is not a torch.save archive (another serialization format)",
            )
        )
        return
    members, zip_regions = _zip.read_zip(window, FORMAT)
    out.regions += [
        Region(r.kind, r.start + item.offset, r.length, f"{label}: {r.label}", file, r.logical) for r in zip_regions
    ]
    prefix = next((m.name[: -len("data.pkl")] for m in members if m.name.endswith("/data.pkl")), None)
    pkl = next((m for m in members if prefix is not None and m.name == prefix + "data.pkl"), None)
    if pkl is None or pkl.method != _zip.STORED or pkl.compress_size > MAX_ITEM_PICKLE_BYTES:
        raise FormatError(shard.path, FORMAT, f"item {label!r} has no readable data.pkl", item.offset)
    data = window.read_at(pkl.data_offset, pkl.compress_size, fmt=FORMAT, what="data.pkl")
    parsed = out.pickles.get(data)  # chunks of one shape and dtype have byte-identical pickles: read each once
    if parsed is None:
        storages: dict[str, _pickle.StorageRef] = {}
        parsed = out.pickles[data] = (_pickle.load(_pickle.Reader(data), _torch.persistent_loader(storages)), storages)
    result, storages = parsed
    out.unsafe |= result.unsafe
    records = {f"{prefix}data/{key}": key for key in storages}
    offsets = {key: m.data_offset + item.offset for m in members if (key := records.get(m.name)) is not None}
    found, _ = _torch.build_tensors(result.value, offsets)
    grouped = _torch.by_storage(found)
    for m in members:
        start = m.data_offset + item.offset
        key = records.get(m.name)
        if key is not None:
            spans = _torch.storage_regions(key, start, m.compress_size, grouped.get(key, []), file)
            out.regions += [Region(r.kind, r.start, r.length, f"{label}: {r.label}", file) for r in spans]
        else:
            out.regions.append(Region(RegionKind.METADATA, start, m.compress_size, f"{label}: {m.name}", file))
    if item.chunk is None:  # a pickled object: any tensors in it are other state
        out.tensors += [_tensor(item, t, file, ("inside a pickled object",)) for t in found]
        return
    if len(found) != 1 or found[0].shape != item.chunk[1] or found[0].dtype != item.dtype:
        got = [(t.shape, t.dtype) for t in found]
        raise FormatError(
            shard.path,
            FORMAT,
            f"item {label!r} holds {got!r}, the metadata says {item.chunk[1]!r} {item.dtype}",
            item.offset,
        )
    out.tensors.append(_tensor(item, found[0], file, ()))


def _storage_key(item: _Item, stored: TensorInfo | None) -> str | None:
    """The archive's storage key ('0') made unique across items: the file and the item's offset."""
    return f"{item.file}@{item.offset}/{stored.storage}" if stored is not None and stored.storage else None


def _tensor(item: _Item, stored: TensorInfo | None, file: int, notes: tuple[str, ...]) -> TensorInfo:
    if item.chunk is None:
        assert stored is not None
        return TensorInfo(
            f"{item.fqn}.{stored.name}",
            stored.shape,
            stored.dtype,
            stored.nbytes,
            stored.offset,
            storage=_storage_key(item, stored),
            kind=TensorKind.OTHER,
            section="object",
            file=file,
            notes=notes,
            span=stored.span,
        )
    kind, section = _kind(item.fqn)
    name = _chunk_name(item)
    notes = (f"item {item.file}@{item.offset:,} ({item.length:,} bytes)",) + notes
    if name != item.fqn:
        notes += (f"chunk {item.chunk[0]!r} of a {'x'.join(map(str, item.full_shape))} tensor",)
    nbytes = prod(item.chunk[1]) * _pickle.itemsize(item.dtype)
    offset = stored.offset if stored else None
    span = stored.span if stored else None
    return TensorInfo(
        name,
        item.chunk[1],
        item.dtype,
        nbytes,
        offset,
        storage=_storage_key(item, stored),
        kind=kind,
        section=section,
        file=file,
        notes=notes + (stored.notes if stored else ()),
        span=span,
    )


def _read_shard(meta: Probe, shard: Probe, file: int, items: list[_Item], out: _Read) -> None:
    """The items of one shard, in file order; two items sharing bytes is a finding."""
    end, last = 0, ""
    for item in items:
        check_in_shard(meta, FORMAT, f"item {item.fqn!r}", item.offset + item.length, shard.path, shard.size)
        if item.offset < end:
            out.findings.append(
                Finding("OVERLAP", Severity.ERROR, f"items {last!r} and {item.fqn!r} share {end - item.offset:,} bytes")
            )
        end, last = max(end, item.offset + item.length), item.fqn
        try:
            _read_item(shard, file, item, out)
        except _pickle.PickleError as exc:
            raise FormatError(shard.path, FORMAT, f"item {item.fqn!r}: {exc}", item.offset) from exc


def _ties(paths: list[str], tensors: list[TensorInfo]) -> dict[str, str]:
    """Duplicate name -> first name, for output weights (or embeddings) stored again after the embedding they are
    tied to."""
    sources: dict[tuple[tuple[int, ...], str], TensorInfo] = {}
    ties: dict[str, str] = {}
    for t in tensors:
        if t.kind is not TensorKind.PARAMETER or t.offset is None or not t.name.endswith(".weight"):
            continue
        key, last = (t.shape, t.dtype), t.name.rsplit(".", 2)[-2]
        source = any(w in last for w in TIE_SOURCES)
        if source and key not in sources:
            sources[key] = t
        elif key in sources and (source or any(w in last for w in TIE_TARGETS)):
            first = sources[key]
            n = min(TIE_SAMPLE, t.nbytes)
            samples = []
            for x in (first, t):
                with Probe(paths[x.file]) as probe:
                    samples.append(probe.read_at(x.offset or 0, n, fmt=FORMAT, what="tie sample"))
            if samples[0] == samples[1]:
                ties[t.name] = first.name
    return ties


def _mark_ties(
    paths: list[str], tensors: list[TensorInfo], regions: list[Region], findings: list[Finding]
) -> tuple[list[TensorInfo], list[Region]]:
    ties = _ties(paths, tensors)
    if not ties:
        return tensors, regions
    copies = {(t.file, t.offset) for t in tensors if t.name in ties}
    for name, first in ties.items():
        message = f"{name!r} is {first!r} stored a second time (tied weights: DCP stores a tensor once per name)"
        findings.append(Finding("DUPLICATE_TENSOR", Severity.INFO, message, subjects=(name, first)))
    tensors = [replace(t, alias_of=ties[t.name]) if t.name in ties else t for t in tensors]
    regions = [
        replace(r, kind=RegionKind.DUPLICATE) if r.kind is RegionKind.TENSOR_DATA and (r.file, r.start) in copies else r
        for r in regions
    ]
    return tensors, regions


def _load(meta: Probe) -> Checkpoint:
    if meta.size > MAX_METADATA_BYTES:
        raise LimitExceededError(meta.path, FORMAT, f"metadata of {meta.size:,} bytes")
    raw = meta.read_at(0, meta.size, fmt=FORMAT, what="metadata pickle")
    machine = _pickle_machine.PickleMachine(_pickle.Reader(raw), _no_persistent_ids)
    out = _Read([], [], [], set())
    try:
        try:
            result = machine.load()
        except _pickle.PickleError as exc:
            out.unsafe |= exc.unsafe - DCP_INERT  # the evidence the reader kept
            raise FormatError(meta.path, FORMAT, f"metadata pickle: {exc}") from exc
        out.unsafe |= result.unsafe - DCP_INERT
        with parsing(meta, FORMAT):
            return _checkpoint(meta, result, out)
    except InspectorError as exc:
        unsafe = out.unsafe | (machine.unsafe - DCP_INERT)
        if not unsafe:
            raise
        return _evidence(meta, unsafe, exc)  # what the pickles would have run outranks what is malformed


def _evidence(meta: Probe, unsafe: set[str], exc: InspectorError) -> Checkpoint:
    """A checkpoint that could not be read but whose pickles name code to run: the finding is kept (exit 3)."""
    malformed = Finding("MALFORMED", Severity.ERROR, f"not read to the end: {exc}")
    regions = tile([Region(RegionKind.METADATA, 0, meta.size, "DCP metadata pickle")], meta.size, 0)
    return Checkpoint(
        meta.path,
        FORMAT,
        "pytorch",
        ((meta.path, meta.size),),
        (),
        regions,
        findings=(malformed, *_torch.unsafe_finding(unsafe)),
    )


def _checkpoint(meta: Probe, result: _pickle.Result, out: _Read) -> Checkpoint:
    items = _items(meta, result.value)
    folder = os.path.dirname(meta.path) or "."
    names = sorted({item.file for item in items})
    if len(names) > MAX_FILES:
        raise LimitExceededError(meta.path, FORMAT, f"{len(names):,} shard files (cap {MAX_FILES:,})")
    for name in names:
        if not os.path.isfile(os.path.join(folder, name)):
            raise FormatError(meta.path, FORMAT, f"shard {name!r} named in the metadata is missing")
    regions = [Region(RegionKind.METADATA, 0, result.end, "DCP metadata pickle")]
    files = [(meta.path, meta.size)]
    by_file: dict[str, list[_Item]] = {}
    for item in items:
        by_file.setdefault(item.file, []).append(item)
    for i, name in enumerate(names, start=1):
        with Probe(os.path.join(folder, name)) as shard:
            files.append((shard.path, shard.size))
            _read_shard(meta, shard, i, sorted(by_file[name], key=lambda it: it.offset), out)
            regions += tile(out.regions, shard.size, i)  # this shard's: the list is emptied per shard
            out.regions = []
    fields = _fields(result.value)
    attributes = {
        "dcp.version": str(fields.get("version", "")),
        "dcp.shards": str(len(names)),
        "dcp.items": str(len(items)),
    }
    save_id = _fields(fields.get("storage_meta")).get("save_id")
    if isinstance(save_id, str):
        attributes["dcp.save_id"] = save_id
    tensors, regions = _mark_ties([path for path, _ in files], out.tensors, regions, out.findings)
    findings = out.findings + _torch.unsafe_finding(out.unsafe)
    return Checkpoint(
        meta.path,
        FORMAT,
        "pytorch",
        tuple(files),
        tuple(tensors),
        (*tile(regions[:1], meta.size, 0), *regions[1:]),
        attributes,
        findings=tuple(findings),
    )


class TorchDcpLoader:
    """A DCP ``.metadata`` pickle, or a ``.distcp`` shard with its ``.metadata`` beside it."""

    name: ClassVar[str] = FORMAT
    extensions: ClassVar[tuple[str, ...]] = (SHARD_SUFFIX,)
    folder_entry = staticmethod(folder_entry)
    member_entry = staticmethod(_sibling_metadata)

    def claim(self, probe: Probe) -> Claim | None:
        if _is_metadata(probe.head):
            return Claim.EXACT
        # A shard is a run of torch.save archives (the torch zip loader would see only the last one): the
        # metadata beside it, checked by content, is what says it is one.
        return Claim.EXACT if _sibling_metadata(probe.path) is not None else None

    def load(self, probe: Probe) -> Checkpoint:
        return through_entry(probe, _sibling_metadata(probe.path), _load)
