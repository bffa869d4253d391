"""The values a `Dequantization` (`inspector.dequantize`) describes, streamed from the file: read in bounded row
reads, unpacked from their bits, looked up in their code books, scaled (`--data` only).

A block of rows of the values at a time, with the rows of each scale and zero point table that cover them (a table
that is quantized itself dequantized so too, the same way): memory holds a block, never a layer's float copy.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

from inspector.dequantize import Dequantization, Packed, logical_matrix, table_matrix
from inspector.errors import FormatError
from inspector.jsontext import loads
from inspector.tensor_data import STORAGE, TensorSource, decode

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from inspector.dequantize import Table
    from inspector.records import TensorInfo

# Code books of packed values, by name: the value each code stands for. I4: signed 4-bit integers, two's complement
# (ModelOpt's INT4 AWQ); E2M1: the 4-bit floats of NVFP4 and MXFP4 (sign, two exponent bits, one mantissa bit;
# compressed-tensors' `kE2M1ToFloat` and its sign); E2M3: MXFP6's 6-bit floats (sign in bit 5, two exponent bits, three
# mantissa bits; compressed-tensors' `kE2M3ToFloat` and its sign); E8M0: the block exponents of the MX formats,
# 2^(code - 127), 255 NaN (the OCP MX specification)
_E2M3 = np.append(np.arange(8) / 8, (1 + np.arange(8) / 8) * 2.0 ** np.arange(3)[:, None])
CODEBOOKS: Mapping[str, np.ndarray] = {
    "E2M1": np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]),
    "E2M3": np.append(_E2M3, -_E2M3),
    "I4": np.append(np.arange(8.0), np.arange(-8.0, 0)),
    "E8M0": np.append(np.ldexp(1.0, np.arange(255) - 127), np.nan),
    "E4M3": decode(np.arange(256, dtype=np.uint8), "F8_E4M3"),  # (FP8 E4M3 in bytes: MLX's nvfp4 scales)
}
MAX_RECORD_BYTES = 1 << 16  # bitsandbytes' quant_state record: a JSON object of a few keys
ALIGN = 32  # values: 32 values of any width fill whole bytes and whole int32 words (a bit stream's seams)


def _read(source: TensorSource, t: TensorInfo, start: int, stop: int) -> bytes:
    """Bytes `[start, stop)` of a tensor's stored data: one bounded read."""
    assert t.offset is not None
    data = source.probe(t.file).read_at(t.offset + start, stop - start, fmt=source.ckpt.format,
                                        what=f"tensor {t.name!r}")  # fmt: skip
    source.bytes_read += len(data)
    return data


def _rows(source: TensorSource, t: TensorInfo, cols: int, start: int, stop: int, dtype: str = "") -> np.ndarray:
    """Rows `[start, stop)` of a tensor read as a matrix of `cols` columns, in its storage dtype (or `dtype`'s)."""
    dt = np.dtype(STORAGE[dtype or t.dtype]).newbyteorder("<")
    width = cols * dt.itemsize
    return np.frombuffer(_read(source, t, start * width, stop * width), dtype=dt).reshape(stop - start, cols)


def _bitstream(raw: np.ndarray, bits: int, count: int, msb_first: bool) -> np.ndarray:
    """The first `count` values of `bits` bits of each row of bytes `raw`, each row one bit stream: the least
    significant bits first (little-endian words), or each byte's most significant first.

    Values of 1, 2, 4 or 8 bits lie whole in a byte: each is shifted out of its byte (a 4-bit stream at about 75
    million values a second, against 3-14 million through the bits)."""
    if 8 % bits == 0:
        shifts = np.arange(0, 8, bits, dtype=np.uint8)
        fields = (raw.astype(np.uint8, copy=False)[..., None] >> (shifts[::-1] if msb_first else shifts)) & (
            (1 << bits) - 1
        )
        return fields.reshape(len(raw), -1)[:, :count].astype(np.int64)
    stream = np.unpackbits(raw.astype(np.uint8, copy=False), axis=1, count=count * bits,
                           bitorder="big" if msb_first else "little").reshape(len(raw), count, bits)  # fmt: skip
    weights = 1 << np.arange(bits)
    return np.asarray(stream @ (weights[::-1] if msb_first else weights))


def _unpacked(source: TensorSource, dq: Dequantization, p: Packed, start: int, stop: int) -> np.ndarray:
    """Rows `[start, stop)` of packed values, their codes (integers)."""
    rows, cols = logical_matrix(dq)
    t = dq.values
    if p.along == "quanto":  # (stored row r % P holds value row r in its bits (r // P) x bits up)
        stored = t.nbytes // cols
        parts = []
        row = start
        while row < stop:
            part, first = divmod(row, stored)
            last = min(stop, (part + 1) * stored)
            packed = _rows(source, t, cols, first, first + last - row, "U8")
            parts.append((packed >> (p.bits * part)) & ((1 << p.bits) - 1))
            row = last
        return np.concatenate(parts) if len(parts) > 1 else parts[0]
    if p.along == "rows":
        width, il = t.nbytes // rows, p.interleave
        first, last = start - start % il, min(rows, -(-stop // il) * il)  # (whole stored rows of `il` rows each)
        raw = np.frombuffer(_read(source, t, first * width, last * width), np.uint8).reshape(-1, width * il)
        codes = _bitstream(raw, p.bits, cols * il, p.msb_first)
        if il > 1:  # (each stored row: tiles of `tile` values of each of its rows in turn)
            codes = codes.reshape(len(raw), cols // p.tile, il, p.tile).transpose(0, 2, 1, 3).reshape(-1, cols)
        codes = codes[start - first : stop - first]
        if p.order:  # (value j of each run stored at position order[j])
            run = len(p.order)
            codes = codes[:, (np.arange(cols) // run) * run + np.array(p.order)[np.arange(cols) % run]]
        return codes
    # down the columns: from the stored row where the 32 values holding `start` begin (whole elements)
    width = cols * p.element
    aligned = start - start % ALIGN
    first, last = aligned * p.bits // (8 * p.element), min(t.nbytes // width, -(-stop * p.bits // (8 * p.element)))
    raw = np.frombuffer(_read(source, t, first * width, last * width), np.uint8)
    raw = raw.reshape(last - first, cols, p.element).transpose(1, 0, 2).reshape(cols, -1)
    return _bitstream(raw, p.bits, stop - aligned, p.msb_first).T[start - aligned :]


def _codebook(source: TensorSource, book: str | TensorInfo) -> np.ndarray:
    if isinstance(book, str):
        return CODEBOOKS[book]
    return decode(_rows(source, book, book.n_elements, 0, 1), book.dtype).reshape(-1)


def _values(source: TensorSource, dq: Dequantization, start: int, stop: int) -> np.ndarray:
    """Rows `[start, stop)` of the stored values, float64: decoded, or unpacked codes less their offset, or the
    floats of their code book."""
    cols = logical_matrix(dq)[1]
    if dq.packed is None and dq.codebook is None:
        return decode(_rows(source, dq.values, cols, start, stop), dq.values.dtype)
    if dq.packed is None:
        codes = _rows(source, dq.values, cols, start, stop).astype(np.intp)
    else:
        codes = _unpacked(source, dq, dq.packed, start, stop)
    if dq.codebook is not None:
        return np.asarray(_codebook(source, dq.codebook)[codes])
    if dq.packed is None or not dq.packed.offset:
        return codes.astype(np.float64)
    codes = codes - dq.packed.offset
    return (codes % (1 << dq.packed.bits) if dq.packed.modular else codes).astype(np.float64)


def _spread(source: TensorSource, dq: Dequantization, table: Table, start: int, stop: int) -> Any:
    """A scale (or zero point) table's entries for value rows `[start, stop)`, one per value: its rows that cover them
    (the rows' groups, or their blocks) read, each repeated over its block's columns."""
    cols = logical_matrix(dq)[1]
    if dq.groups is not None:
        index = _rows(source, dq.groups, 1, start, stop).reshape(-1).astype(np.int64)
        if index.min() < 0 or index.max() >= table_matrix(table)[0]:
            raise FormatError(source.ckpt.path, source.ckpt.format, f"tensor {dq.groups.name!r}: a group past the "
                              f"{table_matrix(table)[0]} rows of its scales")  # fmt: skip
    else:
        index = np.arange(start, stop) // dq.block[0]
    first, last = int(index.min()), int(index.max()) + 1
    if isinstance(table, Dequantization):
        entries = _dequantized_rows(source, table, first, last)
    elif dq.turned_tables:  # (its columns [first, last), a bounded read a row)
        count = table_matrix(table)[1]
        entries = decode(np.stack([_rows(source, table, 1, row * count + first, row * count + last).reshape(-1)
                                   for row in range(table_matrix(table)[0])], axis=1), table.dtype)  # fmt: skip
    else:
        entries = decode(_rows(source, table, table_matrix(table)[1], first, last), table.dtype)
    return entries[(index - first)[:, None], np.arange(cols) // dq.block[1]]


def _dequantized_rows(source: TensorSource, dq: Dequantization, start: int, stop: int) -> np.ndarray:
    """Rows `[start, stop)` of the dequantized values, float64."""
    q = _values(source, dq, start, stop)
    scale = 1.0 if dq.scale is None else _spread(source, dq, dq.scale, start, stop)
    zero = 0.0 if dq.zero is None else _spread(source, dq, dq.zero, start, stop)
    if dq.sign:
        out = q * scale + dq.sign * zero
    else:
        out = (q - zero) / scale if dq.divided else (q - zero) * scale
    if dq.divisor != 1.0:
        out = out / dq.divisor
    if dq.column_factor is not None:  # (one a column, every row)
        factor = dq.column_factor
        out = out * decode(_rows(source, factor, factor.n_elements, 0, 1), factor.dtype)
    if dq.offset_from is not None:
        out = out + _nested_offset(source, dq.offset_from)
    return np.asarray(out)


def _nested_offset(source: TensorSource, record: TensorInfo) -> float:
    """The `nested_offset` of bitsandbytes' quant_state record (JSON in bytes), added to its dequantized absmax."""
    words: Any = None
    if record.nbytes <= MAX_RECORD_BYTES:
        try:
            words = loads(_read(source, record, 0, record.nbytes))
        except (ValueError, RecursionError):
            words = None
    offset = words.get("nested_offset") if isinstance(words, dict) else None
    if not isinstance(offset, (int, float)) or isinstance(offset, bool):
        raise FormatError(source.ckpt.path, source.ckpt.format, f"tensor {record.name!r}: no nested_offset in the "
                          "quant_state record")  # fmt: skip
    return float(offset)


def dequantized(source: TensorSource, dq: Dequantization, block_elements: int) -> Iterator[np.ndarray]:
    """The dequantized values of `dq`, float64, flat in its matrix's row order, about `block_elements` a block
    (a multiple of 32 rows where the values are packed down the columns)."""
    rows, cols = logical_matrix(dq)
    step = max(1, block_elements // max(cols, 1))
    if dq.packed is not None and dq.packed.along == "columns":
        step = -(-step // ALIGN) * ALIGN
    for start in range(0, rows, step):
        yield _dequantized_rows(source, dq, start, min(rows, start + step)).reshape(-1)
