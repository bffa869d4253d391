"""NumPy ``.npy`` and ``.npz`` (FORMATS.md section 5), headers only.

``.npy``::

    6 bytes  \\x93NUMPY
    u8, u8   version 1.0 | 2.0 | 3.0
    u16 LE (1.0) or u32 LE (2.0, 3.0)   header length H
    H bytes  Python literal {'descr': ..., 'fortran_order': bool, 'shape': (...), } padded with spaces
             and a newline to a multiple of 64 (16 before numpy 1.14); latin-1, or UTF-8 in 3.0
    data     raw C- or Fortran-order bytes, or a pickle when the dtype holds objects

``.npz`` is a zip whose members are all ``*.npy`` (``savez`` stores, ``savez_compressed`` deflates).
For a stored member the npy header is parsed in place; for a deflated one just enough is inflated
to read the header. Verified: magic, version, the literal's keys and types, that data fits the
member. Object arrays are metadata with an unknown parameter count: their pickle is read by our
restricted reader to say what it names (`loaders._objects`), never loaded. Tensor data is never read.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import partial

from inspector.errors import FormatError, InspectorError, LimitExceededError, UnsupportedVariantError
from inspector.probe import Probe
from inspector.records import Checkpoint, Finding, Region, RegionKind, Severity, TensorInfo, TensorKind
from loaders import _zip
from loaders.base import MAX_TENSORS, Claim, check_shape, single_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar

NPY_FORMAT = "npy"
NPZ_FORMAT = "npz"
MAGIC = b"\x93NUMPY"
LENGTH_FIELDS = {1: "<H", 2: "<I", 3: "<I"}  # major version -> header length field
MAX_HEADER_BYTES = 10_000  # numpy's own _MAX_HEADER_SIZE: np.load refuses longer headers unless told otherwise
PY2_LONG = r"(?<=\d)L\b"  # Python 2 wrote 3L in shapes; numpy's _filter_header drops the suffix
OBJECT = "OBJECT"
# numpy type characters with no canonical dtype -> name template by itemsize
OPAQUE_KINDS = {"S": "BYTES[{n}]", "U": "UNICODE[{n}]", "V": "VOID[{n}]", "M": "DATETIME64", "m": "TIMEDELTA64"}


class NpyHeader:
    """A parsed npy header: where the data starts (relative), and the array's description."""

    __slots__ = ("header_len", "prefix_len", "literal_len", "shape", "dtype", "itemsize", "notes", "version")

    def __init__(
        self,
        version: tuple[int, int],
        prefix_len: int,
        hlen: int,
        literal_text: str,
        shape: tuple[int, ...],
        dtype: str,
        itemsize: int | None,
        notes: tuple[str, ...],
    ) -> None:
        self.version = version
        self.prefix_len = prefix_len
        self.header_len = prefix_len + hlen
        self.literal_len = len(literal_text.rstrip(" \n").encode("utf-8"))
        self.shape = shape
        self.dtype = dtype
        self.itemsize = itemsize
        self.notes = notes


def _dtype_of(descr: Any) -> tuple[str, int | None, tuple[str, ...]]:
    """(canonical name, itemsize or None for objects, notes) of an npy ``descr``."""
    from inspector.dtypes import numpy_code

    if isinstance(descr, str) and len(descr) >= 2:
        order, code = descr[0], descr[1:]
        notes = ("big-endian",) if order == ">" else ()
        known = numpy_code(code)
        if known is not None:
            return *known, notes
        if code == "O":
            return OBJECT, None, ("holds pickled Python objects",)
    import warnings

    import numpy as np  # only for structured and string dtypes

    with warnings.catch_warnings():  # (numpy 2 reads a deprecated code such as 'a4', as `np.load` does, and warns)
        warnings.simplefilter("ignore", DeprecationWarning)
        dt = np.lib.format.descr_to_dtype(descr)
    if dt.hasobject:
        return OBJECT, None, ("holds pickled Python objects",)
    if dt.fields:
        return f"STRUCT[{dt.itemsize}]", dt.itemsize, (f"structured: {len(dt.fields)} fields",)
    template = OPAQUE_KINDS.get(dt.kind, "VOID[{n}]")
    return template.format(n=dt.itemsize), dt.itemsize, ()


# The header as numpy writes it (`np.lib.format._write_array_header`: the dict's repr, padded with spaces and a
# newline), read without `ast` (about 1 ms of imports) and without a regular expression (its compile, 0.2 ms of an
# npz run): the text around the three values, then the values; any other spelling goes to `ast.literal_eval`, as
# numpy reads it. A descr holds no quote, backslash or newline; a shape's integers are written as Python 3 writes them
# (no leading zeros, which `ast` refuses), ', '-separated, a trailing comma after one.
NUMPY_SPELLING = ("{'descr': '", "', 'fortran_order': ", ", 'shape': (", "), }")
FORTRAN_ORDER = {"True": True, "False": False}


def _numpy_spelled(text: str) -> dict[str, Any] | None:
    """The header's dict when `text` is spelled as numpy writes it, else None."""
    opening, after_descr, after_order, closing = NUMPY_SPELLING
    if not text.startswith(opening):
        return None
    descr, found, rest = text[len(opening) :].partition(after_descr)
    fortran, found_order, rest = rest.partition(after_order)
    dims, found_shape, padding = rest.partition(closing)
    if not (found and found_order and found_shape) or fortran not in FORTRAN_ORDER or padding.strip(" \n"):
        return None
    if "'" in descr or "\\" in descr or "\n" in descr:
        return None
    values = dims[:-1].split(", ") if dims.endswith(",") else dims.split(", ") if dims else []
    if not all(d.isdecimal() and (d[0] in "123456789" or d == "0") for d in values):
        return None
    if len(values) == 1 and not dims.endswith(","):  # '(5)' is an int, not a tuple: `ast` says what is wrong
        return None
    return {"descr": descr, "fortran_order": FORTRAN_ORDER[fortran], "shape": tuple(map(int, values))}


def _literal(text: str, major: int) -> Any:
    """The header's dict literal."""
    spelled = _numpy_spelled(text)
    if spelled is not None:
        return spelled
    import ast  # any other spelling (structured dtypes, Python 2 longs, hand-written headers)

    try:
        return ast.literal_eval(text)
    except SyntaxError:
        if major > 2:  # as numpy: only headers of versions 1.0 and 2.0 may come from Python 2
            raise
        import re

        return ast.literal_eval(re.sub(PY2_LONG, "", text))


# Bytes of a member read first for its npy header, within the header's page: numpy pads a header to a multiple of 64
# bytes, 128 for most arrays (one read instead of two per member)
FIRST_READ = 128


def parse_npy_header(buf: bytes, probe: Probe, fmt: str, where: str) -> NpyHeader | int:
    """Parse an npy header from the start of `buf`; return the bytes needed if `buf` is too short."""
    if len(buf) < 10:
        return 12
    if buf[:6] != MAGIC:
        raise FormatError(probe.path, fmt, f"{where}: not an npy header (magic {buf[:6]!r})")
    major, minor = buf[6], buf[7]
    if major not in LENGTH_FIELDS or minor != 0:
        raise UnsupportedVariantError(probe.path, fmt, f"{where}: npy version {major}.{minor}")
    field = LENGTH_FIELDS[major]
    prefix = 8 + struct.calcsize(field)
    if len(buf) < prefix:
        return prefix
    hlen: int = struct.unpack_from(field, buf, 8)[0]
    if hlen > MAX_HEADER_BYTES:
        raise LimitExceededError(probe.path, fmt, f"{where}: npy header of {hlen:,} bytes (cap {MAX_HEADER_BYTES:,})")
    if len(buf) < prefix + hlen:
        return prefix + hlen
    raw = bytes(buf[: prefix + hlen])
    known = _PARSED.get(raw)
    if known is not None:  # (an npz's members of one shape and dtype: one header, parsed once)
        return known
    text = raw[prefix:].decode("utf-8" if major == 3 else "latin-1")
    literal = _literal(text, major)
    if not isinstance(literal, dict) or set(literal) != {"descr", "fortran_order", "shape"}:
        raise FormatError(probe.path, fmt, f"{where}: npy header is not a dict of descr, fortran_order, shape")
    if not isinstance(literal["shape"], tuple) or not isinstance(literal["fortran_order"], bool):
        raise FormatError(probe.path, fmt, f"{where}: npy header has a bad shape or fortran_order")
    shape = check_shape(probe, fmt, where, literal["shape"])
    dtype, itemsize, notes = _dtype_of(literal["descr"])
    if literal["fortran_order"]:
        notes += ("Fortran order",)
    header = NpyHeader((major, minor), prefix, hlen, text, shape, dtype, itemsize, notes)
    if len(_PARSED) < MAX_PARSED:
        _PARSED[raw] = header
    return header


# Headers read, by their bytes: a header means the same wherever it is (its parse and checks depend on nothing else),
# and a model's arrays share a few (about 4 us each of an npz run's members)
_PARSED: dict[bytes, NpyHeader] = {}
MAX_PARSED = 4096


def _header_regions(h: NpyHeader, start: int, label: str) -> list[Region]:
    return [
        Region(RegionKind.HEADER, start, h.prefix_len, f"npy magic and header length {label}"),
        Region(RegionKind.METADATA, start + h.prefix_len, h.literal_len, f"npy header dict {label}"),
        Region(
            RegionKind.PADDING,
            start + h.prefix_len + h.literal_len,
            h.header_len - h.prefix_len - h.literal_len,
            f"npy header padding {label}",
        ),
    ]


def _tensor(
    probe: Probe, fmt: str, name: str, h: NpyHeader, data_offset: int | None, payload: int, pickled: Callable[[], bytes]
) -> tuple[TensorInfo, list[Finding]]:
    """The tensor of an npy payload of `payload` bytes; objects and size mismatches become findings.

    `pickled` returns the payload, and is called only for an object array (its pickle is read, never run).
    """
    findings = []
    if h.itemsize is None:
        from loaders import _objects  # (object arrays only: the pickle reader is not in every npz run's start-up)

        summary = _objects.summarise(pickled, payload)
        what = (
            f"; it {_objects.names_text(summary)} and holds {summary.holds}"
            if summary
            else f"; not read (over {_objects.MAX_PICKLE_BYTES:,} bytes or not a readable pickle)"
        )
        findings.append(
            Finding(
                "UNSAFE_CONTENT",
                Severity.ERROR,
                f"array {name!r} is an object array: its {payload:,} bytes are a pickle, not loaded{what}; "
                "its parameter count is unknown",
                subjects=(name,),
            )
        )
        notes = h.notes + ((f"pickle {_objects.names_text(summary)}", f"holds {summary.holds}") if summary else ())
        return TensorInfo(
            name, h.shape, h.dtype, payload, data_offset, kind=TensorKind.METADATA, trainable=False, notes=notes
        ), findings
    nbytes = 1
    for d in h.shape:
        nbytes *= d
    nbytes *= h.itemsize
    if nbytes > payload:
        raise FormatError(probe.path, fmt, f"array {name!r} needs {nbytes:,} bytes, the file holds {payload:,}")
    if nbytes < payload:
        findings.append(
            Finding(
                "TRAILING_BYTES",
                Severity.WARNING,
                f"{payload - nbytes:,} bytes after array {name!r}",
                subjects=(name,),
            )
        )
    return TensorInfo(name, h.shape, h.dtype, nbytes, data_offset, notes=h.notes), findings


def _inflated(probe: Probe, member: _zip.ZipMember, header_len: int, payload: int) -> bytes:
    """The payload of a compressed npz member (inflated up to its end: only for object arrays, whose size is capped;
    bzip2 and LZMA too, which np.load reads through Python's zipfile)."""
    return _zip.inflate_head(probe, member, header_len + payload, NPZ_FORMAT, _zip.ZIPFILE_METHODS)[header_len:]


def _is_array(probe: Probe, member: _zip.ZipMember) -> bool:
    """Whether a zip member opens with the npy magic (np.load's test; an unreadable member is not one)."""
    try:
        return _zip.inflate_head(probe, member, len(MAGIC), NPZ_FORMAT, _zip.ZIPFILE_METHODS) == MAGIC
    except InspectorError:
        return False


class NpyLoader:
    """A single ``.npy`` array."""

    name: ClassVar[str] = NPY_FORMAT
    extensions: ClassVar[tuple[str, ...]] = (".npy",)

    def claim(self, probe: Probe) -> Claim | None:
        return Claim.EXACT if probe.head.startswith(MAGIC) else None

    def load(self, probe: Probe) -> Checkpoint:
        need = 12
        while True:
            h = parse_npy_header(probe.read_at(0, need, fmt=NPY_FORMAT, what="npy header"), probe, NPY_FORMAT, "header")
            if isinstance(h, NpyHeader):
                break
            need = h
        name = "array"
        payload = probe.size - h.header_len
        t, findings = _tensor(
            probe, NPY_FORMAT, name, h, h.header_len, payload, partial(probe.read_at, h.header_len, payload)
        )
        regions = _header_regions(h, 0, "")
        regions.append(Region(RegionKind.TENSOR_DATA, h.header_len, t.nbytes, name))
        attributes = {"npy.version": f"{h.version[0]}.{h.version[1]}"}
        return single_file(probe, NPY_FORMAT, "numpy", (t,), regions, attributes, findings)


class NpzLoader:
    """A zip archive whose members are all ``.npy`` arrays, or (`late_claim`) any zip holding an npy array."""

    name: ClassVar[str] = NPZ_FORMAT
    extensions: ClassVar[tuple[str, ...]] = (".npz",)

    def claim(self, probe: Probe) -> Claim | None:
        members = probe.zip_members
        if members is None and probe.head.startswith(_zip.EOCD_SIG) and probe.size == _zip.EOCD_BYTES:
            return Claim.CONTAINER  # np.savez() with no arrays writes an empty zip (its end record), np.load reads it
        if not members or not all(m.name.endswith(".npy") for m in members):
            return None
        return Claim.STRUCTURE

    def late_claim(self, probe: Probe) -> Claim | None:
        """A zip no loader claims with a member that opens with the npy magic, whatever its name: np.load reads any
        zip as an npz and any such member as an array (an object array's pickle with allow_pickle: judged here)."""
        return Claim.CONTAINER if any(_is_array(probe, m) for m in probe.zip_members or ()) else None

    def load(self, probe: Probe) -> Checkpoint:
        members, zip_regions = _zip.read_zip(probe, NPZ_FORMAT)
        if len(members) > MAX_TENSORS:
            raise LimitExceededError(probe.path, NPZ_FORMAT, f"{len(members):,} members (cap {MAX_TENSORS:,})")
        tensors: list[TensorInfo] = []
        regions = list(zip_regions)
        findings: list[Finding] = []
        deflated = 0
        for m in members:
            name = m.name.removesuffix(".npy")
            if name == m.name and not _is_array(probe, m):  # (np.load gives such a member's bytes as they are)
                regions.append(Region(RegionKind.METADATA, m.data_offset, m.compress_size, f"member {m.name!r}"))
                continue
            need = max(12, min(FIRST_READ, _zip.PAGE - m.data_offset % _zip.PAGE))  # (no page past the header's)
            while True:
                buf = _zip.inflate_head(probe, m, need, NPZ_FORMAT, _zip.ZIPFILE_METHODS)
                h = parse_npy_header(buf, probe, NPZ_FORMAT, f"member {m.name!r}")
                if isinstance(h, NpyHeader):
                    break
                if len(buf) < need:
                    raise FormatError(probe.path, NPZ_FORMAT, f"member {m.name!r} ends inside its npy header")
                need = h
            payload = m.file_size - h.header_len
            if m.method == _zip.STORED:
                at = m.data_offset + h.header_len
                t, f = _tensor(probe, NPZ_FORMAT, name, h, at, payload, partial(probe.read_at, at, payload))
                regions += _header_regions(h, m.data_offset, repr(m.name))
                regions.append(Region(RegionKind.TENSOR_DATA, m.data_offset + h.header_len, payload, name))
            else:
                deflated += 1
                inflated = partial(_inflated, probe, m, h.header_len, payload)
                t, f = _tensor(probe, NPZ_FORMAT, name, h, None, payload, inflated)
                # logical = what the array data would take stored; the member's npy header is deflated with it
                regions.append(
                    Region(
                        RegionKind.COMPRESSED,
                        m.data_offset,
                        m.compress_size,
                        f"deflated member {m.name!r} (npy header inside)",
                        logical=t.nbytes,
                    )
                )
            tensors.append(t)
            findings += f
        attributes = {"zip.members": str(len(members)), "zip.deflated_members": str(deflated)}
        findings += _zip.directory_findings(probe)
        return single_file(probe, NPZ_FORMAT, "numpy", tensors, regions, attributes, findings)
