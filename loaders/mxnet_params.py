"""MXNet 1.x ``.params`` (NDArray list), read without MXNet (FORMATS.md section 1).

Layout, little-endian, no padding::

    u64 0x112 (list magic), u64 0, u64 n_arrays
    n_arrays records:
      V2 0xF993FAC9 / V3 0xF993FACA: u32 magic, i32 stype, [stype != 0: storage shape], shape (i32 ndim,
          ndim x i64), i32 dev_type, i32 dev_id, i32 type_flag, [stype != 0: per aux array i32 type, shape],
          data, [aux data]
      V1 0xF993FAC8: shape (i32 ndim, ndim x i64), ctx, type flag, data
      V0 (no magic): u32 ndim, ndim x u32 dims, ctx, type flag, data
    u64 n_names, then n_names x (u64 length, UTF-8 name): after all the data, 0 for a list

The records are walked by seeking past their data; the names block is read at the end and paired
with the records. Verified: every length against the file size, names count against records, type
flags, dimension counts, that the names block ends the file exactly.

Tied parameters that Gluon saved twice are recognised from their dotted names and shapes, confirmed by
comparing the first 64 bytes of both copies (the only tensor bytes this loader reads).

Naming: `arg:`/`aux:` prefixes are kept (aux states are not trainable but MXNet counts arg + aux);
Gluon running statistics are likewise not trainable. An unnamed list gets positional names `0`, `1`...
A row-sparse or CSR array is listed with its logical shape; its stored values and index arrays are
listed after it as `<name>#values`, `<name>#indices`, `<name>#indptr` (kind other).
"""

from __future__ import annotations

import struct
from math import prod

from inspector.errors import FormatError, LimitExceededError, UnsupportedVariantError
from inspector.probe import Probe
from inspector.records import Checkpoint, Finding, Region, RegionKind, Severity, TensorInfo, TensorKind
from inspector.roles import NORM_STATISTICS
from loaders.base import MAX_DIMS, MAX_TENSORS, Claim, single_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import ClassVar

FORMAT = "mxnet-params"
LIST_MAGIC = 0x112
V1, V2, V3 = 0xF993FAC8, 0xF993FAC9, 0xF993FACA
MAX_NAME_BYTES = 1 << 20
# mshadow TypeFlag -> (canonical dtype, itemsize)
TYPE_FLAGS = {
    0: ("F32", 4),
    1: ("F64", 8),
    2: ("F16", 2),
    3: ("U8", 1),
    4: ("I32", 4),
    5: ("I8", 1),
    6: ("I64", 8),
    7: ("BOOL", 1),
    8: ("I16", 2),
    9: ("U16", 2),
    10: ("U32", 4),
    11: ("U64", 8),
    12: ("BF16", 2),
}
STYPES = {0: "dense", 1: "row_sparse", 2: "csr"}
AUX_NAMES = {1: ("indices",), 2: ("indptr", "indices")}
NOT_TRAINABLE = ("aux:", *NORM_STATISTICS["mxnet"])


PAGE = 4096
RECORD_WINDOW = 96  # bytes read at once at a record's start: a dense record's header up to 9 dimensions
_LAYOUTS: dict[str, struct.Struct] = {}  # by format: a field's layout, read in place from the window


class _Cursor:
    """Fields read in order from one read at a time (a record's header is one read instead of six). A read goes from
    the next field to at most `window` bytes on, never past the end of that field's page: it pulls no page from
    storage that a read of exactly the field would not."""

    def __init__(self, probe: Probe, pos: int, window: int = RECORD_WINDOW) -> None:
        self.probe, self.pos, self.window = probe, pos, window
        self.buf, self.buf_at = b"", pos

    def take(self, size: int, what: str) -> bytes:
        at = self._at(size, what)
        self.pos += size
        return self.buf[at : at + size]

    def unpack(self, fmt: str, what: str) -> tuple[int, ...]:
        layout = _LAYOUTS.get(fmt) or _LAYOUTS.setdefault(fmt, struct.Struct(fmt))
        at = self._at(layout.size, what)
        self.pos += layout.size
        return layout.unpack_from(self.buf, at)

    def _at(self, size: int, what: str) -> int:
        """Where the `size` bytes at the cursor start in `buf`, read first when they are not all in it."""
        at = self.pos - self.buf_at
        if at < 0 or at + size > len(self.buf):  # (past the window: read from here; past the file: the same error)
            n = max(size, min(self.window, PAGE - self.pos % PAGE, self.probe.size - self.pos))
            self.buf, self.buf_at, at = self.probe.read_at(self.pos, n, fmt=FORMAT, what=what), self.pos, 0
        return at

    def shape(self, what: str, wide: bool = True) -> tuple[int, ...]:
        (ndim,) = self.unpack("<i" if wide else "<I", what)
        if ndim == -1:
            return (-1,)
        if not 0 <= ndim <= MAX_DIMS:
            raise LimitExceededError(self.probe.path, FORMAT, f"{what}: {ndim} dimensions", self.pos - 4)
        return self.unpack(f"<{ndim}{'q' if wide else 'I'}", what)


class _Record:
    """One array: where its header and data are, and what it holds."""

    def __init__(self, start: int) -> None:
        self.start = start
        self.version = "V0"
        self.stype = 0
        self.shape: tuple[int, ...] = ()
        self.storage_shape: tuple[int, ...] = ()
        self.dtype, self.itemsize = "F32", 4
        self.data_offset = start
        self.aux: list[tuple[str, int, tuple[int, ...]]] = []  # (dtype, itemsize, shape)
        self.none = False

    @property
    def data_bytes(self) -> int:
        return 0 if self.none else prod(self.storage_shape or self.shape) * self.itemsize

    @property
    def end(self) -> int:
        return self.data_offset + self.data_bytes + sum(prod(s) * size for _, size, s in self.aux)


def _type(probe: Probe, flag: int, at: int) -> tuple[str, int]:
    if flag not in TYPE_FLAGS:
        raise UnsupportedVariantError(probe.path, FORMAT, f"unknown type flag {flag}", at)
    return TYPE_FLAGS[flag]


def _storage_shape(rec: _Record) -> tuple[int, ...]:
    """The stored values' shape. A storage shape of size 0 is derived from the index array, as MXNet's
    NDArray constructor does: row_sparse (idx rows, *shape[1:]), csr the idx shape (aux arrays in file order)."""
    if not rec.stype or prod(rec.storage_shape) != 0 or not rec.aux or not rec.aux[-1][2]:
        return rec.storage_shape
    idx = rec.aux[-1][2]  # row_sparse: its only aux array; csr: indptr, then idx
    if rec.stype == 1:
        return (idx[0], *rec.shape[1:]) if rec.shape else rec.storage_shape
    return idx


def _record(probe: Probe, pos: int) -> _Record:
    rec = _Record(pos)
    cur = _Cursor(probe, pos)
    (magic,) = cur.unpack("<I", "record magic")
    if magic in (V2, V3):
        rec.version = "V2" if magic == V2 else "V3"
        (rec.stype,) = cur.unpack("<i", "storage type")
        if rec.stype not in STYPES:
            raise UnsupportedVariantError(probe.path, FORMAT, f"storage type {rec.stype}", pos)
        if rec.stype:
            rec.storage_shape = cur.shape("storage shape")
        rec.shape = cur.shape("shape")
        if (magic == V2 and not rec.shape) or -1 in rec.shape:  # a 'none' array: the record ends here
            rec.none, rec.data_offset = True, cur.pos
            rec.shape = ()
            return rec
    elif magic == V1:
        rec.version = "V1"
        rec.shape = cur.shape("shape")
    else:
        rec.version = "V0"
        cur.pos = pos
        rec.shape = cur.shape("shape", wide=False)
    cur.unpack("<ii", "context")
    (flag,) = cur.unpack("<i", "type flag")
    rec.dtype, rec.itemsize = _type(probe, flag, cur.pos - 4)
    for _ in range(len(AUX_NAMES.get(rec.stype, ()))):
        (aux_flag,) = cur.unpack("<i", "aux type flag")
        dtype, size = _type(probe, aux_flag, cur.pos - 4)
        rec.aux.append((dtype, size, cur.shape("aux shape")))
    if min(rec.shape + rec.storage_shape, default=0) < 0:
        raise FormatError(probe.path, FORMAT, "negative dimension", pos)
    rec.storage_shape = _storage_shape(rec)
    rec.data_offset = cur.pos
    if rec.end > probe.size:
        raise FormatError(
            probe.path, FORMAT, f"array data ends at byte {rec.end:,} but the file has {probe.size:,} bytes", pos
        )
    return rec


def _names(probe: Probe, pos: int, count: int) -> tuple[list[str], int]:
    cur = _Cursor(probe, pos, PAGE)  # (the names block is structure to its end: a page at a time)
    (n,) = cur.unpack("<Q", "name count")
    if n not in (0, count):
        raise FormatError(probe.path, FORMAT, f"{n:,} names for {count:,} arrays", pos)
    names = []
    for _ in range(n):
        (length,) = cur.unpack("<Q", "name length")
        if length > MAX_NAME_BYTES:
            raise LimitExceededError(probe.path, FORMAT, f"a name of {length:,} bytes", cur.pos - 8)
        names.append(cur.take(length, "name").decode("utf-8", "replace"))
    return names, cur.pos


TIE_SAMPLE = 64  # bytes compared at the start of two candidate copies


def _tied(probe: Probe, names: list[str], records: list[_Record]) -> dict[str, str]:
    """Gluon `save_parameters` without deduplication writes a tied parameter once per structural path: an
    output layer's `.weight` with the shape and dtype of an embedding's `.weight`. Such a pair of dotted
    Gluon names is a duplicate when the first 64 bytes of both copies are equal too (the only data read)."""
    ties = {}
    embeddings: dict[tuple[tuple[int, ...], str], tuple[str, _Record]] = {}
    for name, rec in zip(names, records, strict=True):
        if not name.endswith(".weight") or rec.stype or rec.none:
            continue
        key = (rec.shape, rec.dtype)
        if "emb" in name:
            embeddings.setdefault(key, (name, rec))
        elif key in embeddings and any(w in name for w in ("out", "decoder", "head", "proj", "dense")):
            first, base = embeddings[key]
            n = min(TIE_SAMPLE, rec.data_bytes)
            if probe.read_at(base.data_offset, n, fmt=FORMAT) == probe.read_at(rec.data_offset, n, fmt=FORMAT):
                ties[name] = first
    return ties


class MxnetParamsLoader:
    """MXNet 1.x NDArray lists (`mx.nd.save`, Gluon `save_parameters`, `export`/Module checkpoints)."""

    name: ClassVar[str] = FORMAT
    extensions: ClassVar[tuple[str, ...]] = (".params",)

    def claim(self, probe: Probe) -> Claim | None:
        if len(probe.head) >= 24 and struct.unpack_from("<QQ", probe.head) == (LIST_MAGIC, 0):
            return Claim.EXACT
        return None

    def load(self, probe: Probe) -> Checkpoint:
        (_, _, count) = struct.unpack("<QQQ", probe.read_at(0, 24, fmt=FORMAT, what="list header"))
        if count > MAX_TENSORS or count * 16 > probe.size:
            raise LimitExceededError(probe.path, FORMAT, f"{count:,} arrays declared in a {probe.size:,}-byte file")
        records, pos = [], 24
        for _ in range(count):
            rec = _record(probe, pos)
            records.append(rec)
            pos = rec.end
        names, end = _names(probe, pos, count)
        named = bool(names)
        names = names or [str(i) for i in range(count)]
        ties = _tied(probe, names, records)
        tensors: list[TensorInfo] = []
        regions = [Region(RegionKind.HEADER, 0, 24, "NDArray list header")]
        findings: list[Finding] = []
        for name, rec in zip(names, records, strict=True):
            regions.append(
                Region(
                    RegionKind.HEADER, rec.start, rec.data_offset - rec.start, f"{rec.version} record header {name!r}"
                )
            )
            trainable = not any(map(name.__contains__, NOT_TRAINABLE))
            alias = ties.get(name)
            kind_region = RegionKind.DUPLICATE if alias else RegionKind.TENSOR_DATA
            nbytes = prod(rec.shape) * rec.itemsize if not rec.none else 0
            notes = (f"{STYPES[rec.stype]}: {rec.data_bytes:,} bytes of values stored",) if rec.stype else ()
            tensors.append(
                TensorInfo(
                    name,
                    rec.shape,
                    rec.dtype,
                    nbytes,
                    rec.data_offset if not rec.stype else None,
                    alias_of=alias,
                    trainable=trainable,
                    notes=notes,
                    span=rec.data_bytes if rec.stype else None,
                )
            )
            if rec.data_bytes:
                regions.append(Region(kind_region, rec.data_offset, rec.data_bytes, name))
            if alias:
                findings.append(
                    Finding(  # info: Gluon's own default (a correct file), counted once; the bytes it costs are shown
                        "DUPLICATE_TENSOR",
                        Severity.INFO,
                        f"{name!r} is {alias!r} saved a second time ({rec.data_bytes:,} bytes): Gluon "
                        "save_parameters without deduplicate=True writes a tied parameter once per path",
                        subjects=(name, alias),
                    )
                )
            at = rec.data_offset + rec.data_bytes
            if rec.stype:
                values = TensorInfo(
                    f"{name}#values",
                    rec.storage_shape,
                    rec.dtype,
                    rec.data_bytes,
                    rec.data_offset,
                    kind=TensorKind.OTHER,
                )
                tensors.append(values)
            for aux_name, (dtype, size, shape) in zip(AUX_NAMES.get(rec.stype, ()), rec.aux, strict=True):
                n = prod(shape) * size
                tensors.append(TensorInfo(f"{name}#{aux_name}", shape, dtype, n, at, kind=TensorKind.OTHER))
                if n:
                    regions.append(Region(RegionKind.TENSOR_DATA, at, n, f"{name}#{aux_name}"))
                at += n
        regions.append(Region(RegionKind.METADATA, pos, end - pos, "names block"))
        if end != probe.size:
            findings.append(
                Finding("TRAILING_BYTES", Severity.WARNING, f"{probe.size - end:,} bytes after the names block")
            )
        versions = sorted({r.version for r in records})
        attributes = {"mxnet.records": ", ".join(versions) or "-", "mxnet.named": str(named)}
        if any(n.startswith(("arg:", "aux:")) for n in names):
            attributes["mxnet.checkpoint"] = "arg:/aux: (symbolic export or Module checkpoint)"
        return single_file(probe, FORMAT, "mxnet", tensors, regions, attributes, findings)
