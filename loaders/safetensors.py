"""safetensors, single files and sharded checkpoints (FORMATS.md section 4).

Layout::

    u64 LE  N          header length (the reference reader refuses N > 100,000,000)
    N bytes JSON       {"__metadata__": {str: str}, name: {"dtype", "shape", "data_offsets": [begin, end]}}
                       padded with spaces so the buffer starts 8-aligned
    buffer             offsets are relative to byte 8 + N

Verified: N against the file size and a cap, JSON syntax, duplicate keys, dtype names, that every
tensor's byte length equals shape x dtype, that offsets stay inside the file. Holes, overlaps and
trailing bytes (which the reference reader rejects) become findings, never exceptions. Tensor data
is never read.

A sharded checkpoint is read from its ``*.safetensors.index.json`` (``weight_map``: name -> shard): all
shards are reported as one model. One shard given on its own is reported as that file (its tensors, its
bytes); when an index beside it names it, the other shards' headers are read only to say which shard it is
and what the whole model holds (attributes ``shard``, ``model.parameters``; finding ``SHARD_OF_MODEL``).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from math import prod

from inspector import dtypes, regexes
from inspector.errors import FormatError, InspectorError, LimitExceededError, TruncatedFileError
from inspector.jsontext import loads
from inspector.probe import Probe
from inspector.records import Checkpoint, Finding, Region, RegionKind, Severity, TensorInfo
from inspector.recordtype import replace
from loaders.base import MAX_TENSORS, Claim, check_shape, tile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar

FORMAT = "safetensors"
SHARDED_FORMAT = "safetensors-sharded"
MAX_HEADER_BYTES = 100_000_000  # the reference reader's HeaderTooLarge limit
MAX_INDEX_BYTES = 64 << 20
SHARD_NAME = r".*-\d+-of-\d+\.safetensors$"


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):  # a key given twice: name the first one repeated
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"duplicate key {key!r} in the JSON header")
            seen.add(key)
    return out


def _parse_file(probe: Probe, file: int) -> tuple[list[TensorInfo], list[Region], dict[str, str], list[Finding]]:
    """Tensors, regions, metadata and findings of one safetensors file."""
    if probe.size < 8:
        raise TruncatedFileError(probe.path, FORMAT, f"file has {probe.size} bytes, the header length needs 8")
    (n,) = struct.unpack("<Q", probe.read_at(0, 8, fmt=FORMAT))
    if n > MAX_HEADER_BYTES:
        raise LimitExceededError(probe.path, FORMAT, f"header length {n:,} exceeds the cap {MAX_HEADER_BYTES:,}", 0)
    if 8 + n > probe.size:
        raise TruncatedFileError(
            probe.path, FORMAT, f"header of {n:,} bytes ends at byte {8 + n:,} but the file has {probe.size:,} bytes", 0
        )
    raw = probe.read_at(8, n, fmt=FORMAT, what="JSON header")
    header = loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicates)
    if not isinstance(header, dict):
        raise FormatError(probe.path, FORMAT, "the JSON header is not an object", 8)
    if len(header) > MAX_TENSORS:
        raise LimitExceededError(probe.path, FORMAT, f"{len(header):,} header entries (cap {MAX_TENSORS:,})")
    findings: list[Finding] = []
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict):
        raise FormatError(probe.path, FORMAT, "__metadata__ is not an object", 8)
    bad_meta = [k for k, v in metadata.items() if not isinstance(v, str)]
    if bad_meta:
        findings.append(_finding("INVALID_METADATA", f"__metadata__ values must be strings: {bad_meta!r}"))
    base = 8 + n
    tensors: list[TensorInfo] = []
    spans: list[tuple[int, int, str]] = []
    shapes: dict[tuple[int, ...], tuple[int, ...]] = {}  # each distinct shape checked once (and held once)
    for name, entry in header.items():
        if not isinstance(entry, dict):
            raise FormatError(probe.path, FORMAT, f"entry {name!r} is not an object")
        dtype = entry.get("dtype")
        dt = dtypes.lookup(str(dtype))
        if dt is None:
            raise FormatError(probe.path, FORMAT, f"tensor {name!r} has unknown dtype {dtype!r}")
        listed = entry.get("shape", ())
        if listed.__class__ is list and set(map(type, listed)) <= {int}:  # exact ints: hashable, compared exactly
            shape = shapes.get(key := tuple(listed))
            if shape is None:
                shape = shapes[key] = check_shape(probe, FORMAT, name, key)
        else:
            shape = check_shape(probe, FORMAT, name, listed)
        begin, end = entry["data_offsets"]
        # JSON numbers are exact ints (or floats); True and False are not offsets
        if begin.__class__ is not int or end.__class__ is not int or not 0 <= begin <= end:
            raise FormatError(probe.path, FORMAT, f"tensor {name!r} has invalid data_offsets {[begin, end]!r}")
        if base + end > probe.size:
            raise TruncatedFileError(
                probe.path,
                FORMAT,
                f"tensor {name!r} data ends at byte {base + end:,} but the file has {probe.size:,} bytes",
                base + begin,
            )
        expected = dtypes.nbytes_for(dt.name, prod(shape))
        if expected != end - begin:
            raise FormatError(
                probe.path, FORMAT, f"tensor {name!r}: {end - begin:,} bytes stored, shape x dtype needs {expected:,}"
            )
        tensors.append(TensorInfo(name, shape, dt.name, end - begin, base + begin, file=file))
        spans.append((base + begin, base + end, name))
    regions = [Region(RegionKind.HEADER, 0, 8, "header length (u64)", file)]
    text = raw.rstrip(b" \t\r\n")
    lead = len(text) - len(text.lstrip(b" \t\r\n"))
    if lead:
        regions.append(Region(RegionKind.PADDING, 8, lead, "leading JSON whitespace", file))
    regions.append(Region(RegionKind.METADATA, 8 + lead, len(text) - lead, "JSON header", file))
    if len(text) < n:
        regions.append(Region(RegionKind.PADDING, 8 + len(text), n - len(text), "header padding to 8 bytes", file))
    findings += _validate_buffer(probe, base, sorted(spans))
    regions += [Region(RegionKind.TENSOR_DATA, s, e - s, name, file) for s, e, name in spans]
    return tensors, regions, {str(k): str(v) for k, v in metadata.items()}, findings


def _finding(code: str, message: str, severity: Severity = Severity.ERROR) -> Finding:
    return Finding(code, severity, message)


def _validate_buffer(probe: Probe, base: int, spans: Sequence[tuple[int, int, str]]) -> list[Finding]:
    """The reference reader's buffer rules: contiguous from 0, no overlaps, no trailing bytes."""
    findings = []
    pos = base
    for start, end, name in spans:
        if start > pos:
            findings.append(_finding("GAP", f"{start - pos:,} bytes before tensor {name!r} belong to no tensor"))
        elif start < pos:
            findings.append(
                _finding("OVERLAP", f"tensor {name!r} overlaps the previous tensor by {pos - start:,} bytes")
            )
        pos = max(pos, end)
    if pos < probe.size:
        findings.append(_finding("TRAILING_BYTES", f"{probe.size - pos:,} bytes after the last tensor"))
    return findings


def _aliases(metadata: dict[str, str], tensors: list[TensorInfo]) -> list[TensorInfo]:
    """Names `save_model` removed as duplicates and recorded in metadata as {alias: kept_name}."""
    if not metadata:
        return []
    by_name = {t.name: t for t in tensors}
    out = []
    for alias, target in metadata.items():
        kept = by_name.get(target)
        if kept is not None and alias not in by_name:
            out.append(
                TensorInfo(
                    alias,
                    kept.shape,
                    kept.dtype,
                    kept.nbytes,
                    kept.offset,
                    alias_of=target,
                    file=kept.file,
                    notes=(f"tied: stored once as {target!r} (save_model metadata)",),
                )
            )
    return out


def _checkpoint(path: str, fmt: str, probes: Sequence[Probe], index: Probe | None) -> Checkpoint:
    """One checkpoint from safetensors files; an index file, when given, is files[0]."""
    tensors: list[TensorInfo] = []
    regions: list[Region] = []
    metadata: dict[str, str] = {}
    findings: list[Finding] = []
    files = []
    offset = 0
    if index is not None:
        files.append((index.path, index.size))
        regions.append(Region(RegionKind.METADATA, 0, index.size, "shard index JSON", 0))
        offset = 1
    for i, probe in enumerate(probes):
        t, r, m, f = _parse_file(probe, i + offset)
        tensors += t
        regions += tile(r, probe.size, i + offset)
        metadata.update(m)
        findings += f
        files.append((probe.path, probe.size))
    tensors += _aliases(metadata, tensors)
    attributes = {f"metadata.{k}": v for k, v in metadata.items()}
    framework = {"pt": "pytorch", "tf": "tensorflow", "flax": "flax", "np": "numpy"}.get(
        metadata.get("format", ""), "safetensors"
    )
    return Checkpoint(
        path, fmt, framework, tuple(files), tuple(tensors), tuple(regions), attributes, findings=tuple(findings)
    )


class SafetensorsLoader:
    """A single ``.safetensors`` file, or one shard of a sharded checkpoint with its index beside it."""

    name: ClassVar[str] = FORMAT
    extensions: ClassVar[tuple[str, ...]] = (".safetensors",)

    def claim(self, probe: Probe) -> Claim | None:
        if probe.size < 10:
            return None
        # The JSON's opening brace (after optional whitespace) right after the length is the magic; a
        # length past the end of the file or the cap is still claimed, so load() can say what is wrong.
        text = probe.head[8:72].lstrip(b" \t\r\n")
        return Claim.EXACT if text.startswith(b'{"') or text.startswith(b"{}") else None

    def load(self, probe: Probe) -> Checkpoint:
        ckpt = _checkpoint(probe.path, FORMAT, [probe], None)
        index = _sibling_index(probe.path)
        return ckpt if index is None else _as_shard(ckpt, index)


def _as_shard(ckpt: Checkpoint, index: str) -> Checkpoint:
    """A shard is reported as itself, plus which shard it is and the whole model's count (its other headers read)."""
    name = os.path.basename(ckpt.path)
    attributes = dict(ckpt.attributes)
    findings = list(ckpt.findings)
    try:
        with Probe(index) as index_probe:
            model = _load_index(index_probe)
    except (InspectorError, OSError, ValueError, KeyError, TypeError) as exc:
        reason = str(exc) if isinstance(exc, InspectorError) else f"{type(exc).__name__}: {exc}"
        findings.append(
            _finding(
                "SHARD_OF_MODEL",
                f"this file is a shard of the model indexed by {index!r}, which cannot be read: {reason}"[:500],
                Severity.WARNING,
            )  # fmt: skip
        )
        return replace(ckpt, attributes=attributes, findings=tuple(findings))
    shards = [os.path.basename(p) for p, _ in model.files[1:]]
    number, total = shards.index(name) + 1, len(shards)
    attributes |= {
        "shard": f"{number} of {total}",
        "shard.index": os.path.basename(index),
        "model.parameters": str(model.n_parameters),
        "model.bytes": str(model.file_size),
    }
    findings.append(
        _finding(
            "SHARD_OF_MODEL",
            f"this file is shard {number} of {total} of a model whose index {os.path.basename(index)!r} is beside it: "
            f"the model holds {model.n_parameters:,} parameters in {total} shards ({model.file_size:,} bytes with "
            "the index); inspect the index or the folder for the whole model",
            Severity.INFO,
        )
    )
    mapped = {t.name for t in model.tensors if t.file == number}
    missing = sorted(mapped - {t.name for t in ckpt.tensors})
    if missing:
        findings.append(_finding("MISSING_TENSOR", f"{len(missing)} tensors the index puts in this shard are not "
                                 f"in it: {missing[:5]!r}"))  # fmt: skip
    return replace(ckpt, attributes=attributes, findings=tuple(findings))


def _sibling_index(path: str) -> str | None:
    """The index of the sharded checkpoint a shard belongs to, if one lies beside it and names it."""
    name = os.path.basename(path)
    if "-of-" not in name or not regexes.match(SHARD_NAME, name):  # (most files: no pattern compiled)
        return None
    folder = os.path.dirname(path) or "."
    try:
        entries = sorted(os.listdir(folder))
    except OSError:  # a folder that cannot be listed: a URL's, or one we may not read
        return None
    for entry in entries:
        if entry.endswith(".safetensors.index.json"):
            candidate = os.path.join(folder, entry)
            try:
                with open(candidate, "rb") as fh:
                    data = loads(fh.read(MAX_INDEX_BYTES))
                if os.path.basename(path) in set(data.get("weight_map", {}).values()):
                    return candidate
            except (OSError, ValueError, AttributeError):
                continue
    return None


def _load_index(probe: Probe) -> Checkpoint:
    if probe.size > MAX_INDEX_BYTES:
        raise LimitExceededError(probe.path, SHARDED_FORMAT, f"index of {probe.size:,} bytes")
    index = loads(probe.read_at(0, probe.size, fmt=SHARDED_FORMAT).decode("utf-8"))
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict):
        raise FormatError(probe.path, SHARDED_FORMAT, "index has no weight_map object")
    shards = sorted({str(v) for v in weight_map.values()})
    for shard in shards:
        if os.path.basename(shard) != shard:
            raise FormatError(probe.path, SHARDED_FORMAT, f"shard name {shard!r} is not a plain file name")
    probes = [probe.sibling(shard) for shard in shards]
    try:
        ckpt = _checkpoint(probe.path, SHARDED_FORMAT, probes, probe)
    finally:
        for p in probes:
            p.close()
    findings = list(ckpt.findings)
    stored = {t.name for t in ckpt.tensors}
    missing = sorted(set(weight_map) - stored)
    if missing:
        findings.append(
            _finding("MISSING_TENSOR", f"{len(missing)} tensors named in the index are in no shard: {missing[:5]!r}")
        )
    total = index.get("metadata", {}).get("total_size") if isinstance(index.get("metadata"), dict) else None
    attributes = dict(ckpt.attributes)
    attributes["shards"] = str(len(shards))
    if isinstance(total, int):
        attributes["index.total_size"] = str(total)
        payload = sum(t.nbytes for t in ckpt.tensors if t.alias_of is None)
        if total != payload:
            findings.append(
                Finding(
                    "INDEX_TOTAL_SIZE",
                    Severity.WARNING,
                    f"index says total_size {total:,} bytes, the shards hold {payload:,} bytes of tensors",
                    expected=total,
                    observed=payload,
                )
            )
    return Checkpoint(
        ckpt.path,
        ckpt.format,
        ckpt.framework,
        ckpt.files,
        ckpt.tensors,
        ckpt.regions,
        attributes,
        findings=tuple(findings),
    )


class SafetensorsIndexLoader:
    """``model.safetensors.index.json``: a JSON object with a ``weight_map`` naming shard files."""

    name: ClassVar[str] = SHARDED_FORMAT
    extensions: ClassVar[tuple[str, ...]] = (".json",)

    def claim(self, probe: Probe) -> Claim | None:
        head = probe.head.lstrip()
        if head.startswith(b"{") and b'"weight_map"' in probe.head and b".safetensors" in probe.head:
            return Claim.STRUCTURE
        return None

    def load(self, probe: Probe) -> Checkpoint:
        return _load_index(probe)
