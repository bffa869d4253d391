"""Streamed reading of tensor values, for ``--data`` only (the basic report never reads tensor data).

Values are read in blocks of at most `BLOCK_BYTES`, never a whole file or a whole large tensor:

    raw        the absolute offset the loader recorded, read with bounded `Probe.read_at` calls
               (safetensors, npy, stored npz members, PyTorch zip and legacy, MXNet)
    inflate    a deflated npz member, streamed through zlib (its npy header skipped)
    hdf5       an HDF5 dataset read by h5py hyperslabs (contiguous, chunked or filtered alike; a
               ``.keras`` archive's model.weights.h5 through a read-only window, as the loader reads it)

`READERS` is the table keyed by loader format. Blocks come back as flat little-endian numpy arrays in
the tensor's storage dtype and storage order (BF16 and the 8-bit floats as raw unsigned integers, so a
hash of the blocks is a hash of the stored bytes); `decode` turns a block into float64 without torch.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Iterator, Mapping
from math import prod
from types import MappingProxyType

import numpy as np

from inspector.dtypes import nbytes_for
from inspector.errors import FormatError
from inspector.probe import Probe
from inspector.recordtype import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from inspector.records import Checkpoint, TensorInfo

BLOCK_BYTES = 1 << 20
INFLATE_CHUNK = 1 << 20
MAX_NPY_HEADER = 1 << 20  # enough for any npy header a real writer makes
BIG_ENDIAN_NOTE = "big-endian"  # the npy loader's note on a '>' descr
FORTRAN_NOTE = "Fortran order"  # the npy loader's note: values stored in reversed axis order
QUANTIZED_NOTES = ("quantized", "custom quantization", "blockwise quantization")  # a loader's notes on values stored
# quantized (TF Lite's `quantized: scale 0.00392, zero point -128`): streamed as stored, their scales apart

# Canonical dtype -> numpy storage dtype (little-endian). BF16 and 8-bit floats are held as raw integers.
STORAGE: Mapping[str, str] = MappingProxyType(
    {
        "F64": "<f8",
        "F32": "<f4",
        "F16": "<f2",
        "BF16": "<u2",
        "F8_E4M3": "u1",
        "F8_E5M2": "u1",
        "I64": "<i8",
        "I32": "<i4",
        "I16": "<i2",
        "I8": "i1",
        "U64": "<u8",
        "U32": "<u4",
        "U16": "<u2",
        "U8": "u1",
        "BOOL": "?",
    }
)


def _e4m3_table() -> np.ndarray:
    """float8_e4m3fn (OCP): bias 7, no infinities, S.1111.111 is NaN."""
    out = np.empty(256, dtype=np.float64)
    for byte in range(256):
        sign = -1.0 if byte & 0x80 else 1.0
        exp, man = (byte >> 3) & 0xF, byte & 0x7
        if exp == 0xF and man == 0x7:
            out[byte] = np.nan
        elif exp == 0:
            out[byte] = sign * man / 8 * 2.0**-6
        else:
            out[byte] = sign * (1 + man / 8) * 2.0 ** (exp - 7)
    return out


def _bf16(raw: np.ndarray) -> np.ndarray:
    return (raw.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def _e5m2(raw: np.ndarray) -> np.ndarray:
    # float8_e5m2 is the top byte of an IEEE half
    return (raw.astype(np.uint16) << 8).view(np.float16).astype(np.float64)


_E4M3 = _e4m3_table()
# Storage blocks whose dtype numpy cannot hold natively -> float64.
DECODERS: Mapping[str, Callable[[np.ndarray], np.ndarray]] = MappingProxyType(
    {"BF16": _bf16, "F8_E5M2": _e5m2, "F8_E4M3": lambda raw: _E4M3[raw]}
)
# Unit roundoff of float dtypes: half the gap between 1 and the next value (values rounded to nearest).
ROUNDOFF: Mapping[str, float] = MappingProxyType(
    {"F64": 2.0**-53, "F32": 2.0**-24, "F16": 2.0**-11, "BF16": 2.0**-8, "F8_E4M3": 2.0**-4, "F8_E5M2": 2.0**-3}
)


def decode(block: np.ndarray, dtype: str) -> np.ndarray:
    """A storage block as float64 (integers and booleans too)."""
    convert = DECODERS.get(dtype)
    with np.errstate(invalid="ignore"):  # signalling NaNs stay NaN
        return convert(block) if convert is not None else block.astype(np.float64)


def unreadable(ckpt: Checkpoint, t: TensorInfo) -> str | None:
    """Why the values of `t` cannot be streamed, or None when they can."""
    if t.dtype not in STORAGE:
        return f"dtype {t.dtype} is not decoded"
    reader = READERS.get(ckpt.format)
    if reader is None:
        return f"format {ckpt.format} has no value reader"
    if t.n_elements == 0 or reader.by_name:
        return None
    if (t.span is not None and t.span != t.nbytes) or nbytes_for(t.dtype, t.n_elements) != t.nbytes:
        return "not stored densely (a strided view, a stride-0 expand or a sparse array)"
    if t.offset is None and not reader.inflates:
        return t.notes[0] if t.notes else "no data at a known offset"
    return None


def stored_as(t: TensorInfo) -> str | None:
    """How a tensor's values are stored when they are not what the model computes with (the loader's note on a
    quantization), else None: they are streamed as stored."""
    return next((n for n in t.notes if n.startswith(QUANTIZED_NOTES)), None)


def layout(t: TensorInfo) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(shape in storage order, permutation such that logical = stored.transpose(perm)).

    Fortran-order arrays are stored as their transpose; everything else in C order.
    """
    if FORTRAN_NOTE in t.notes and len(t.shape) > 1:
        return tuple(reversed(t.shape)), tuple(reversed(range(len(t.shape))))
    return t.shape, tuple(range(len(t.shape)))


class TensorSource:
    """Open files of one checkpoint, from which tensors are streamed. Use as a context manager."""

    def __init__(self, ckpt: Checkpoint, block_bytes: int = BLOCK_BYTES) -> None:
        self.ckpt = ckpt
        self.block_bytes = block_bytes
        self._probes: dict[int, Probe] = {}
        self._h5: Any = None
        self.bytes_read = 0

    def probe(self, file: int) -> Probe:
        if file not in self._probes:
            self._probes[file] = Probe(self.ckpt.files[file][0]).sequential()  # values: readahead on
        return self._probes[file]

    def storage_dtype(self, t: TensorInfo) -> np.dtype[Any]:
        return np.dtype(STORAGE[t.dtype])

    def can_read_columns(self, t: TensorInfo) -> bool:
        """Whether `columns` works for `t`: a readable 2-D tensor (or a stack of matrices, at an offset) stored in C
        order at an offset, or in HDF5."""
        n = len(t.shape)
        if n < 2 or unreadable(self.ckpt, t) or layout(t)[1] != tuple(range(n)):
            return False
        return (READERS[self.ckpt.format].by_name and n == 2) or t.offset is not None

    def columns(self, t: TensorInfo, start: int, stop: int, matrix: int = 0) -> np.ndarray:
        """Columns `[start, stop)` of a 2-D tensor (or of the `matrix`-th matrix of a stack of them, (..., rows,
        cols)) as a (rows, stop - start) storage array (see `can_read_columns`).

        One bounded read per row, so a transposed tensor is compared without holding it whole.
        """
        dt = self.storage_dtype(t)
        if READERS[self.ckpt.format].by_name:
            values = np.asarray(_h5_file(self)[t.name][:, start:stop])
            values = values.view(dt) if values.dtype.kind == "V" else values
            self.bytes_read += values.nbytes
            return values.astype(dt, copy=False)
        assert t.offset is not None
        rows, cols = t.shape[-2:]
        first = matrix * rows
        file_dt = _file_dtype(self, t)
        probe = self.probe(t.file)
        out = np.empty((rows, stop - start), dtype=dt)
        width = (stop - start) * dt.itemsize
        for row in range(rows):
            data = probe.read_at(t.offset + ((first + row) * cols + start) * dt.itemsize, width, fmt=self.ckpt.format)
            out[row] = np.frombuffer(data, dtype=file_dt)
        self.bytes_read += rows * width
        return out

    def blocks(self, t: TensorInfo) -> Iterator[np.ndarray]:
        """Flat little-endian storage-dtype arrays covering the tensor in storage order, each bounded.

        Raises:
            FormatError: the bytes cannot be read (truncated, corrupt deflate stream, h5py refusal).
        """
        reason = unreadable(self.ckpt, t)
        if reason is not None:
            raise FormatError(self.ckpt.path, self.ckpt.format, f"tensor {t.name!r}: {reason}")
        if t.n_elements == 0:
            return iter(())
        return READERS[self.ckpt.format].read(self, t)

    def close(self) -> None:
        for p in self._probes.values():
            p.close()
        self._probes.clear()
        if self._h5 is not None:
            self._h5.close()
            self._h5 = None

    def __enter__(self) -> TensorSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _file_dtype(source: TensorSource, t: TensorInfo) -> np.dtype[Any]:
    dt = source.storage_dtype(t)
    big = BIG_ENDIAN_NOTE in t.notes or source.ckpt.attributes.get("torch.little_endian") == "False"
    return dt.newbyteorder(">") if big and dt.itemsize > 1 else dt


def _raw(source: TensorSource, t: TensorInfo) -> Iterator[np.ndarray]:
    assert t.offset is not None
    dt = _file_dtype(source, t)
    probe = source.probe(t.file)
    step = max(1, source.block_bytes // dt.itemsize) * dt.itemsize
    pos, end = t.offset, t.offset + t.nbytes
    while pos < end:
        n = min(step, end - pos)
        data = probe.read_at(pos, n, fmt=source.ckpt.format, what=f"tensor {t.name!r}")
        source.bytes_read += n
        pos += n
        yield np.frombuffer(data, dtype=dt).astype(dt.newbyteorder("<"), copy=False)


def _member_bytes(probe: Probe, member: Any, fmt: str, cap: int) -> Iterator[bytes]:
    """The uncompressed bytes of a deflated zip member, in pieces of at most `cap` bytes."""
    inflater = zlib.decompressobj(-15)
    pos, end = member.data_offset, member.data_end
    crc = 0
    while pos < end:
        chunk = probe.read_at(pos, min(INFLATE_CHUNK, end - pos), fmt=fmt, what=f"member {member.name!r}")
        pos += len(chunk)
        pieces = [inflater.decompress(chunk, cap)]
        while inflater.unconsumed_tail:  # the output cap left input over
            pieces.append(inflater.decompress(inflater.unconsumed_tail, cap))
        for piece in pieces:
            crc = zlib.crc32(piece, crc)
            yield piece
    tail = inflater.flush()
    crc = zlib.crc32(tail, crc)
    yield tail
    stored = _stored_crc(probe, member, fmt)
    if crc != stored:
        raise FormatError(probe.path, fmt, f"member {member.name!r}: CRC-32 {crc:08x} of the inflated data, "
                          f"the zip records {stored:08x}")  # fmt: skip


def _stored_crc(probe: Probe, member: Any, fmt: str) -> int:
    """The CRC-32 a zip member's local header records (or its data descriptor, when flag bit 3 is set)."""
    flags, crc = struct.unpack("<H6xI", probe.read_at(member.header_offset + 6, 12, fmt=fmt))
    if flags & 0x8:
        descriptor = probe.read_at(member.data_end, 8, fmt=fmt, what=f"data descriptor of {member.name!r}")
        crc = struct.unpack_from("<I", descriptor, 4 if descriptor[:4] == b"PK\x07\x08" else 0)[0]
    return int(crc)


def _inflate(source: TensorSource, t: TensorInfo) -> Iterator[np.ndarray]:
    """A deflated npz member: inflated in bounded pieces, its npy header parsed and skipped."""
    from loaders import _zip
    from loaders.npy import NpyHeader, parse_npy_header

    fmt = source.ckpt.format
    probe = source.probe(t.file)
    members, _ = _zip.read_zip(probe, fmt)
    member = next((m for m in members if m.name == t.name + ".npy"), None)
    if member is None or member.method != _zip.DEFLATED:
        raise FormatError(probe.path, fmt, f"no deflated zip member for {t.name!r}")
    dt = _file_dtype(source, t)
    step = max(1, source.block_bytes // dt.itemsize) * dt.itemsize
    pending = bytearray()
    header: NpyHeader | int | None = None
    left = t.nbytes
    try:
        for piece in _member_bytes(probe, member, fmt, step):
            source.bytes_read += len(piece)
            pending += piece
            if not isinstance(header, NpyHeader):
                header = parse_npy_header(bytes(pending[:MAX_NPY_HEADER]), probe, fmt, f"member {member.name!r}")
                if not isinstance(header, NpyHeader):
                    continue
                del pending[: header.header_len]
            while left and len(pending) >= min(step, left):
                take = min(step, left)
                yield np.frombuffer(bytes(pending[:take]), dtype=dt).astype(dt.newbyteorder("<"), copy=False)
                del pending[:take]
                left -= take
    except zlib.error as exc:
        raise FormatError(probe.path, fmt, f"member {member.name!r}: corrupt deflate stream: {exc}") from exc
    if left:
        raise FormatError(probe.path, fmt, f"member {member.name!r} ends {left:,} bytes early")


def _npz(source: TensorSource, t: TensorInfo) -> Iterator[np.ndarray]:
    return _raw(source, t) if t.offset is not None else _inflate(source, t)


def _h5_file(source: TensorSource) -> Any:
    if source._h5 is None:
        from loaders import _hdf5, _zip

        h5py = _hdf5.h5py_module()
        probe = source.probe(0)
        member = HDF5_MEMBER.get(source.ckpt.format)
        if member is not None:  # read in place inside the zip, as the loader reads it
            members, _ = _zip.read_zip(probe, source.ckpt.format)
            weights = next(m for m in members if m.name == member)
            source._h5 = h5py.File(_hdf5.Window(probe, weights.data_offset, weights.compress_size), "r")
        else:
            source._h5 = h5py.File(probe.path, "r")
    return source._h5


def hyperslabs(shape: tuple[int, ...], limit: int) -> Iterator[tuple[int | slice, ...]]:
    """Index tuples covering `shape` in C order, each selecting at most `limit` elements (at least one row)."""
    if not shape:
        yield ()
        return
    inner = prod(shape[1:])
    if inner <= limit:
        rows = max(1, limit // max(inner, 1))
        for start in range(0, shape[0], rows):
            yield (slice(start, min(start + rows, shape[0])),)
        return
    for i in range(shape[0]):
        for rest in hyperslabs(shape[1:], limit):
            yield (i, *rest)


def _hdf5(source: TensorSource, t: TensorInfo) -> Iterator[np.ndarray]:
    ds = _h5_file(source)[t.name]
    dt = source.storage_dtype(t)
    limit = max(1, source.block_bytes // dt.itemsize)
    for index in hyperslabs(tuple(ds.shape), limit):
        values = np.asarray(ds[index] if index else ds[()])
        if values.dtype.kind == "V":  # Keras 3 bfloat16 / float8: opaque bytes of the right size
            values = values.view(dt)
        source.bytes_read += values.nbytes
        yield values.reshape(-1).astype(dt, copy=False)


@record(frozen=True, slots=True)
class Reader:
    """How one format's values are streamed."""

    read: Callable[[TensorSource, TensorInfo], Iterator[np.ndarray]]
    by_name: bool = False  # located by dataset name (HDF5), not by the loader's offset
    inflates: bool = False  # tensors without an offset are compressed members it inflates


RAW = Reader(_raw)
HDF5 = Reader(_hdf5, by_name=True)
# Loader format -> how its tensors' values are streamed.
READERS: Mapping[str, Reader] = MappingProxyType(
    {
        "safetensors": RAW,
        "safetensors-sharded": RAW,
        "npy": RAW,
        "npz": Reader(_npz, inflates=True),
        "pytorch-zip": RAW,
        "pytorch-legacy": RAW,
        "mxnet-params": RAW,
        "pickle": RAW,  # (a bare pickle's numpy arrays, inline: `loaders._numpy_pickle`)
        "keras-h5": HDF5,
        "keras3-weights-h5": HDF5,
        "hdf5": HDF5,
        "keras3-zip": HDF5,
        "tflite": RAW,  # (a constant's buffer data; a sparse one's values only: not dense, not read)
        "flax-msgpack": RAW,  # (an array's bin data; a chunked array's pieces apart: no one offset, not read)
    }
)
HDF5_MEMBER: Mapping[str, str] = MappingProxyType({"keras3-zip": "model.weights.h5"})  # HDF5 inside a zip


def reblock(blocks: Iterator[np.ndarray], size: int) -> Iterator[np.ndarray]:
    """The same values in blocks of exactly `size` elements (the last one shorter), to align two streams."""
    carry: list[np.ndarray] = []
    held = 0
    for block in blocks:
        while block.size:
            take = min(size - held, block.size)
            carry.append(block[:take])
            held += take
            block = block[take:]
            if held == size:
                yield carry[0] if len(carry) == 1 else np.concatenate(carry)
                carry, held = [], 0
    if held:
        yield np.concatenate(carry)
