"""TensorFlow checkpoints (TensorBundle): ``PREFIX.index`` plus ``PREFIX.data-SSSSS-of-NNNNN`` shards.

Layout (FORMATS.md section 9)::

    PREFIX.index            an SSTable (loaders._sstable); key "" -> BundleHeaderProto (num_shards,
                            endianness), every other key, sorted -> BundleEntryProto (dtype, shape, shard_id,
                            offset, size, crc32c, slices)
    PREFIX.data-00000-of-N  raw little-endian tensor bytes at (offset, size), in write order, unaligned;
                            string tensors are varint lengths, a masked CRC32C, then the bytes
    checkpoint              optional text state file naming the latest prefix (tf.train.CheckpointManager)

Written by `tf.train.Checkpoint.write/save` (object-based keys ``model/layer_with_weights-0/kernel/.ATTRIBUTES/
VARIABLE_VALUE`` and the serialized object graph under ``_CHECKPOINTABLE_OBJECT_GRAPH``), Keras 2
`save_weights` in TF format, SavedModel's ``variables/variables.*``, and TF1 `Saver` (variable names as keys).
The object graph names each variable (its ``full_name``: ``dense/kernel``) and tells optimizer state from
model variables: variables reached from the root only through an optimizer, and the optimizer's slot
variables, are optimizer state. Without a graph (TF1), names decide (tables in `loaders._tf_kinds`).

Read: the index and the object graph (metadata); the data shards are otherwise only sized.
"""

from __future__ import annotations

import os
from math import prod

from inspector import dtypes, regexes
from inspector.errors import FormatError, LimitExceededError
from inspector.probe import Probe
from inspector.records import Checkpoint, Finding, Region, RegionKind, Severity, TensorInfo, TensorKind
from inspector.recordtype import record
from loaders import _sstable, _tf_kinds, _tf_proto
from loaders.base import MAX_TENSORS, Claim, check_in_shard, check_shape, through_entry, tile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import ClassVar

FORMAT = "tensorflow-checkpoint"
INDEX_SUFFIX = ".index"
DATA_SHARD = r"^(?P<prefix>.+)\.data-(?P<shard>\d{5})-of-(?P<n>\d{5})$"
STATE_FILE = "checkpoint"
OBJECT_GRAPH_KEY = b"_CHECKPOINTABLE_OBJECT_GRAPH"
STRING_DTYPE = 7  # DT_STRING
MAX_SHARDS = 100_000
MAX_OBJECT_GRAPH_BYTES = 256 << 20
MAX_STATE_BYTES = 1 << 20
SAVED_MODEL_FILES = ("saved_model.pb", "saved_model.pbtxt")
# A SavedModel's other files, reported as metadata beside its variables (the graph, Keras's config, a fingerprint).
SAVED_MODEL_METADATA = (*SAVED_MODEL_FILES, "keras_metadata.pb", "fingerprint.pb")


def _shard_path(prefix: str, shard: int, n_shards: int) -> str:
    return f"{prefix}.data-{shard:05d}-of-{n_shards:05d}"


def _sibling_index(path: str) -> str | None:
    """The `.index` beside a data shard (its prefix's); None for any other file."""
    m = regexes.match(DATA_SHARD, path)
    return _sstable_index(m.group("prefix") + INDEX_SUFFIX) if m is not None else None


def _member_entry(path: str) -> str | None:
    """The `.index` whose report holds this other file of its checkpoint (a folder audit lists it there once): a
    data shard's, a SavedModel's graph and metadata files' (`variables/variables.index`), the state file's latest
    prefix's; None for any other file."""
    if regexes.match(DATA_SHARD, path):
        return _sibling_index(path)
    folder, name = os.path.split(path)
    if name in SAVED_MODEL_METADATA and _is_saved_model(folder):
        return _sstable_index(os.path.join(folder, "variables", "variables.index"))
    if name == STATE_FILE:
        index = _latest_index(path)
        return _sstable_index(index) if index is not None else None
    return None


def _is_saved_model(folder: str) -> bool:
    """Whether the folder holds a SavedModel's graph (beside its `variables/`)."""
    return any(os.path.isfile(os.path.join(folder, name)) for name in SAVED_MODEL_FILES)


def _latest_index(state: str) -> str | None:
    """The `.index` path of the latest prefix a checkpoint state file names (whether or not it exists), or None."""
    latest = _latest_prefix(state)
    return os.path.join(os.path.dirname(state), latest + INDEX_SUFFIX) if latest is not None else None


def _sstable_index(index: str) -> str | None:
    """`index` when it is a file ending with the SSTable magic, else None."""
    try:
        with open(index, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            if fh.tell() < _sstable.FOOTER_BYTES:
                return None
            fh.seek(-8, os.SEEK_END)
            return index if fh.read(8) == _sstable.MAGIC_BYTES else None
    except OSError:
        return None


def folder_entry(folder: str) -> str | None:
    """The `.index` a folder stands for: SavedModel variables, the state file's latest prefix, or the only one."""
    for candidate in (os.path.join(folder, "variables", "variables.index"), os.path.join(folder, "variables.index")):
        if os.path.isfile(candidate):
            return candidate
    latest = _latest_index(os.path.join(folder, STATE_FILE))
    if latest is not None and os.path.isfile(latest):
        return latest
    try:
        indexes = sorted(name for name in os.listdir(folder) if name.endswith(INDEX_SUFFIX))
    except OSError:  # unreadable: the Probe will say what is wrong with the folder
        return None
    return os.path.join(folder, indexes[0]) if len(indexes) == 1 else None


def _state_paths(state: str) -> list[str]:
    """The prefixes a CheckpointState text file names (``model_checkpoint_path: "ckpt-3"`` first, then
    ``all_model_checkpoint_paths``), as plain file names."""
    try:
        with open(state, "rb") as fh:
            text = fh.read(MAX_STATE_BYTES).decode("utf-8", "replace")
    except OSError:
        return []
    line = r'^(model_checkpoint_path|all_model_checkpoint_paths):\s*"([^"\n]*)"'
    found = regexes.findall(line, text, regexes.MULTILINE)
    names = [os.path.basename(path) for key, path in found if key == "model_checkpoint_path"]
    names += [os.path.basename(path) for key, path in found if key != "model_checkpoint_path"]
    return [name for name in names if name]


def _latest_prefix(state: str) -> str | None:
    paths = _state_paths(state)
    return paths[0] if paths else None


def _string_payload(data: bytes) -> bytes:
    """The bytes of a scalar string tensor as TensorBundle stores it: varint length, masked CRC32C, bytes."""
    n, pos = _tf_proto.varint(data, 0)
    if pos + 4 + n > len(data):
        raise ValueError(f"string of {n:,} bytes runs past its {len(data):,}-byte entry")
    return data[pos + 4 : pos + 4 + n]


def _object_graph(
    shard: _Shard, entry: _tf_proto.BundleEntry, findings: list[Finding]
) -> tuple[_tf_proto.GraphNode, ...]:
    if entry.size > MAX_OBJECT_GRAPH_BYTES:
        findings.append(
            Finding(
                "OBJECT_GRAPH_SKIPPED",
                Severity.INFO,
                f"object graph of {entry.size:,} bytes not decoded (cap {MAX_OBJECT_GRAPH_BYTES:,})",
            )
        )
        return ()
    with Probe(shard.path) as probe:
        raw = probe.read_at(entry.offset, entry.size, fmt=FORMAT, what="object graph")
    return _tf_proto.object_graph(_string_payload(raw), MAX_TENSORS)


def _decode_slice_name(key: bytes) -> str:
    """The variable name inside a TF1 partitioned-variable slice key (OrderedCode: 0, name, rank, extents)."""
    body = key[1:]  # WriteNumIncreasing(0) is a single zero byte
    out = bytearray()
    i = 0
    while i + 1 < len(body):
        if body[i] == 0 and body[i + 1] == 1:
            break
        out.append(body[i])
        i += 2 if body[i] in (0, 0xFF) else 1  # escapes: 00 ff -> 00, ff 00 -> ff
    return out.decode("utf-8", "replace")


@record(frozen=True, slots=True)
class _Shard:
    file: int  # index into Checkpoint.files
    path: str
    size: int


def _find_shards(index: Probe, prefix: str, n_shards: int, used: set[int]) -> tuple[dict[int, _Shard], list[Finding]]:
    """The data shards present, by shard id (only sized: their bytes are never read, but the object graph's)."""
    shards: dict[int, _Shard] = {}
    missing: list[str] = []
    for shard in range(n_shards):
        path = _shard_path(prefix, shard, n_shards)
        if not os.path.isfile(path):
            if shard in used:
                raise FormatError(index.path, FORMAT, f"data shard {os.path.basename(path)!r} is missing")
            missing.append(os.path.basename(path))
            continue
        shards[shard] = _Shard(len(shards) + 1, path, os.path.getsize(path))
    if not missing:
        return shards, []
    shown = ", ".join(repr(m) for m in missing[:3]) + (", ..." if len(missing) > 3 else "")
    message = f"{len(missing):,} data shards no tensor uses are missing: {shown}"
    return shards, [Finding("MISSING_SHARD", Severity.WARNING, message)]


def _load(index: Probe) -> Checkpoint:
    if not index.path.endswith(INDEX_SUFFIX):
        raise FormatError(index.path, FORMAT, f"a TensorBundle index is named PREFIX{INDEX_SUFFIX}")
    prefix = index.path[: -len(INDEX_SUFFIX)]
    table = _sstable.read_table(index, FORMAT)
    pairs = table.entries
    if not pairs or pairs[0][0] != b"":
        raise FormatError(index.path, FORMAT, "SSTable has no bundle header (key '') : not a TensorFlow checkpoint")
    header = _tf_proto.bundle_header(pairs[0][1])
    if not 0 < header.num_shards <= MAX_SHARDS:
        raise LimitExceededError(index.path, FORMAT, f"bundle header says {header.num_shards:,} shards")
    entries = [(key, _tf_proto.bundle_entry(value)) for key, value in pairs[1:]]
    if len(entries) > MAX_TENSORS:
        raise LimitExceededError(index.path, FORMAT, f"{len(entries):,} entries (cap {MAX_TENSORS:,})")
    used = {e.shard_id for _, e in entries if e.size}
    bad = [key for key, e in entries if e.shard_id >= header.num_shards]
    if bad:
        raise FormatError(
            index.path,
            FORMAT,
            f"entry {bad[0].decode('utf-8', 'replace')!r} names a shard past "
            f"the {header.num_shards} the header declares",
        )
    shards, findings = _find_shards(index, prefix, header.num_shards, used)
    return _checkpoint(index, header, entries, shards, table, findings)


@record(frozen=True, slots=True)
class _Stored:
    """One tensor as reported: a bundle entry, or a partitioned variable whose slices lie end to end."""

    name: str
    shape: tuple[int, ...]
    dtype: int
    shard_id: int
    offset: int
    size: int
    note: str = ""


def _extent_text(extents: tuple[tuple[int, int | None], ...]) -> str:
    return ",".join(":" if length is None else f"{start}:{start + length}" for start, length in extents)


def _stored(index: Probe, entries: list[tuple[bytes, _tf_proto.BundleEntry]]) -> tuple[list[_Stored], list[Finding]]:
    """Entries as tensors. Slices of a partitioned variable (keys starting with a zero byte, sorted by extent)
    become the variable itself when they lie end to end along axis 0 in one shard, else one tensor each."""
    slices: dict[str, list[_tf_proto.BundleEntry]] = {}
    for key, e in entries:
        if key[:1] == b"\x00":
            slices.setdefault(_decode_slice_name(key), []).append(e)
    out: list[_Stored] = []
    findings: list[Finding] = []
    for key, e in entries:
        if key[:1] == b"\x00":
            continue
        name = key.decode("utf-8", "replace")
        if not e.slices:
            out.append(_Stored(name, e.shape, e.dtype, e.shard_id, e.offset, e.size))
            continue
        parts = slices.pop(name, [])
        extents = sorted(e.slices)
        if len(parts) != len(extents):
            findings.append(
                Finding(
                    "MISSING_SLICE",
                    Severity.ERROR,
                    f"partitioned variable {name!r} declares {len(extents)} slices, the index holds {len(parts)}",
                )
            )
            extents = extents[: len(parts)]
        axis0 = all(
            all(
                length is None or (start == 0 and length == dim)
                for (start, length), dim in zip(x[1:], e.shape[1:], strict=False)
            )
            for x in extents
        )
        chained = all(
            a.shard_id == b.shard_id and a.offset + a.size == b.offset for a, b in zip(parts, parts[1:], strict=False)
        )
        if parts and axis0 and chained:
            note = f"saved as {len(parts)} slices along axis 0, end to end"
            out.append(
                _Stored(name, e.shape, e.dtype, parts[0].shard_id, parts[0].offset, sum(p.size for p in parts), note)
            )
            continue
        for part, extent in zip(parts, extents, strict=False):
            note = f"slice [{_extent_text(extent)}] of a partitioned {'x'.join(map(str, e.shape))} variable"
            out.append(
                _Stored(
                    f"{name}[{_extent_text(extent)}]",
                    part.shape,
                    part.dtype,
                    part.shard_id,
                    part.offset,
                    part.size,
                    note,
                )
            )
    for name in slices:
        findings.append(Finding("ORPHAN_SLICE", Severity.WARNING, f"slices of {name!r} have no variable entry"))
    return out, findings


def _checkpoint(
    index: Probe,
    header: _tf_proto.BundleHeader,
    entries: list[tuple[bytes, _tf_proto.BundleEntry]],
    shards: dict[int, _Shard],
    table: _sstable.Table,
    findings: list[Finding],
) -> Checkpoint:
    graph_entry = next((e for k, e in entries if k == OBJECT_GRAPH_KEY), None)
    nodes: tuple[_tf_proto.GraphNode, ...] = ()
    if graph_entry is not None and graph_entry.dtype == STRING_DTYPE and graph_entry.shard_id in shards:
        _check_span(index, shards[graph_entry.shard_id], OBJECT_GRAPH_KEY.decode(), graph_entry)
        nodes = _object_graph(shards[graph_entry.shard_id], graph_entry, findings)
    kinds = _tf_kinds.Kinds(nodes)
    stored, slice_findings = _stored(index, entries)
    tensors: list[TensorInfo] = []
    regions: dict[int, list[Region]] = {shard.file: [] for shard in shards.values()}
    for t in stored:
        dtype, width = dtypes.TF_DTYPES.get(t.dtype, (f"TF_DTYPE[{t.dtype}]", 0))
        shape = check_shape(index, FORMAT, t.name, t.shape)
        if t.shard_id not in shards:
            raise FormatError(index.path, FORMAT, f"tensor {t.name!r} is in a missing shard")
        file = shards[t.shard_id].file
        _check_span(index, shards[t.shard_id], t.name, t)
        if not width:
            what = "object graph" if t.name == OBJECT_GRAPH_KEY.decode() else f"{dtype} tensor {t.name!r}"
            regions[file].append(Region(RegionKind.METADATA, t.offset, t.size, what, file))
            continue
        if prod(shape) * width != t.size:
            raise FormatError(
                index.path,
                FORMAT,
                f"tensor {t.name!r}: {t.size:,} bytes stored, shape x dtype needs {prod(shape) * width:,}",
            )
        kind, layer, param, why = kinds.classify(t.name.partition("[")[0])
        regions[file].append(Region(RegionKind.TENSOR_DATA, t.offset, t.size, t.name, file))
        tensors.append(
            TensorInfo(
                t.name,
                shape,
                dtype,
                t.size,
                t.offset,
                kind=kind,
                trainable=kind is TensorKind.PARAMETER and _tf_kinds.trained(layer, param),
                section=kind.value,
                layer=layer,
                param=param,
                file=file,
                notes=tuple(n for n in (why, t.note) if n),
            )
        )
    files = [(index.path, index.size)] + [
        (shard.path, shard.size) for shard in sorted(shards.values(), key=lambda x: x.file)
    ]
    all_regions = list(tile(table.regions, index.size, 0))
    for file, rs in sorted(regions.items()):
        all_regions += tile(rs, files[file][1], file)
    findings = findings + table.findings + slice_findings + _overlaps(regions)
    attributes = _attributes(header, table, nodes, entries)
    state = os.path.join(os.path.dirname(index.path), STATE_FILE)
    named = _state_paths(state) if os.path.isfile(state) else []
    if os.path.basename(index.path[: -len(INDEX_SUFFIX)]) in named:  # the folder's state file names this prefix
        latest = named[0]
        size = os.path.getsize(state)
        all_regions.append(Region(RegionKind.METADATA, 0, size, "checkpoint state (text)", len(files)))
        files.append((state, size))
        attributes["tf.latest"] = latest
    folder = os.path.dirname(os.path.dirname(os.path.abspath(index.path)))
    if os.path.basename(os.path.dirname(os.path.abspath(index.path))) == "variables" and _is_saved_model(folder):
        attributes["tf.saved_model"] = folder
        for name in SAVED_MODEL_METADATA:
            path = os.path.join(folder, name)
            if os.path.isfile(path):
                size = os.path.getsize(path)
                all_regions.append(Region(RegionKind.METADATA, 0, size, f"SavedModel {name}", len(files)))
                files.append((path, size))
    keras = any(_tf_kinds.KERAS_EDGE.match(name) for node in nodes for _, name in node.children)
    return Checkpoint(
        index.path,
        FORMAT,
        "keras" if keras else "tensorflow",
        tuple(files),
        tuple(tensors),
        tuple(all_regions),
        attributes,
        findings=tuple(findings),
    )


def _attributes(
    header: _tf_proto.BundleHeader,
    table: _sstable.Table,
    nodes: tuple[_tf_proto.GraphNode, ...],
    entries: list[tuple[bytes, _tf_proto.BundleEntry]],
) -> dict[str, str]:
    attributes = {
        "tf.shards": str(header.num_shards),
        "tf.endianness": "big" if header.endianness else "little",
        "tf.index_blocks": str(table.n_blocks),
        "tf.object_graph": f"{len(nodes)} nodes" if nodes else "none",
    }
    if table.compressed_blocks:
        attributes["tf.snappy_blocks"] = str(table.compressed_blocks)
    partitioned = sum(1 for _, e in entries if e.slices)
    if partitioned:
        attributes["tf.partitioned_variables"] = str(partitioned)
    return attributes


def _check_span(index: Probe, shard: _Shard, name: str, e: _tf_proto.BundleEntry | _Stored) -> None:
    check_in_shard(index, FORMAT, f"tensor {name!r}", e.offset + e.size, shard.path, shard.size)


def _overlaps(regions: dict[int, list[Region]]) -> list[Finding]:
    out = []
    for rs in regions.values():
        end, last = 0, ""
        for r in sorted(rs, key=lambda r: r.start):
            if r.start < end:
                out.append(
                    Finding("OVERLAP", Severity.ERROR, f"{r.label!r} overlaps {last!r} by {end - r.start:,} bytes")
                )
            if r.end > end:
                end, last = r.end, r.label
    return out


class TfCheckpointLoader:
    """A TensorBundle `.index` (SSTable magic in its last 8 bytes), or a data shard with its index beside it."""

    name: ClassVar[str] = FORMAT
    extensions: ClassVar[tuple[str, ...]] = (".index",)
    folder_entry = staticmethod(folder_entry)
    member_entry = staticmethod(_member_entry)

    def claim(self, probe: Probe) -> Claim | None:
        if probe.size <= len(probe.head) and self.late_claim(probe):  # the whole file is in the head
            return Claim.EXACT
        # A data shard has no magic of its own: its index beside it (checked by content) is the evidence.
        return Claim.STRUCTURE if _sibling_index(probe.path) is not None else None

    def late_claim(self, probe: Probe) -> Claim | None:
        """The SSTable magic in the file's last 8 bytes: read only when no loader claims the file by its head."""
        if probe.size >= _sstable.FOOTER_BYTES and probe.tail(8) == _sstable.MAGIC_BYTES:
            return Claim.EXACT
        return None

    def load(self, probe: Probe) -> Checkpoint:
        return through_entry(probe, _sibling_index(probe.path), _load)
