"""A quantized weight's stored values as the floats they stand for, from its own file's tensors (`--data` only).

`inspector diff --data` of a float model and its quantization pairs each float weight with its quantized values
(`inspector.diff`'s naming rules); comparing integers with floats says nothing. Where the file holds all a weight's
dequantization needs, its values are dequantized here, streamed in row blocks (bounded memory: a block of values and
the scales of its rows), and the pair's difference is the quantization's error. One formula covers the schemes read:

    value = (q - zero) * scale                (torchao, compressed-tensors' INT8, transformers' FP8: zero 0)
    value = q * scale - shift                 (optimum-quanto's 4 and 2 bits: a float shift)
    value = q * SCB / 127                     (bitsandbytes' 8-bit rows)

each scale (and zero point) shared by a block of rows x columns of the values as stored: the scale's shape tiles
the values' (one a row, one a group of a row, one a 128 x 128 block, one a tensor). The block is read off the
shapes where the scale's dimensions divide the values' evenly, else from the config (`weight_block_size`); where
neither tells it, or the values are packed in a layout not read here (GPTQ, AWQ, bitsandbytes' 4 bits, MXFP4,
NVFP4, MLX, compressed-tensors' pack-quantized), the pair says why it is not dequantized instead of a number.
`DEQUANTIZERS` is the table, one finder per library.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from math import prod

import numpy as np

from inspector.quantized import QUANTO_PACKED_DTYPES, QUANTO_SCALE, QUANTO_SHIFT, TORCHAO_VALUES, quanto_values
from inspector.recordtype import record
from inspector.tensor_data import STORAGE, TensorSource, decode

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from inspector.records import Checkpoint, TensorInfo

FLOATS = frozenset({"F64", "F32", "F16", "BF16"})  # a float model's weights: what a dequantized weight is compared to
PACKED_NOTE = " stored packed as "  # how the loaders' notes on packed values say it (`inspector.quantized.unpacked`)
# the scales beside a weight stored element for element (compressed-tensors' FP8 and INT8, transformers' fine-grained
# FP8: `weight_scale_inv` is multiplied, as DeepSeek-V3's reference dequantization does) and their zero points
SCALES = (".weight_scale", ".weight_scale_inv")
ZERO_POINT = ".weight_zero_point"
BNB_ROW_SCALES = ".SCB"  # bitsandbytes' 8-bit rows: value = q * SCB / 127
BNB_RANGE = 127.0
ELEMENT_DTYPES = frozenset({"I8", "F8_E4M3", "F8_E5M2"})  # values stored one an element, at the weight's shape


@record(frozen=True, slots=True)
class Dequantization:
    """How one quantized weight's stored values dequantize: `(q - zero) * scale / divisor`, or `q * scale - zero`
    where `shifted` (optimum-quanto's float shift); each scale and zero point shared by a block of `block` (rows,
    columns) of the values; `packed_bits`: optimum-quanto's packing, 8 / bits values a byte along the first axis."""

    how: str  # in words, for the report
    values: TensorInfo
    scale: TensorInfo
    block: tuple[int, int]
    zero: TensorInfo | None = None
    shifted: bool = False
    divisor: float = 1.0
    packed_bits: int = 0


if TYPE_CHECKING:
    Plan = Dequantization | str  # a dequantization, or why the values cannot be dequantized here
    Finder = Callable[[TensorInfo, Mapping[str, TensorInfo], Mapping[str, Any]], Plan | None]


def _matrix(t: TensorInfo) -> tuple[int, int]:
    return (prod(t.shape[:-1]), t.shape[-1]) if t.shape else (1, 1)


def _block(values: TensorInfo, scale: TensorInfo, stated: object) -> tuple[int, int] | str:
    """The (rows, columns) of the values each scale covers: the values' over the scale's where they divide evenly,
    else the config's `weight_block_size` where it tiles them; else why not."""
    rows, cols = _matrix(values)
    srows, scols = _scales_matrix(scale)
    if rows % srows == 0 and cols % scols == 0:
        return rows // srows, cols // scols
    if isinstance(stated, list) and len(stated) == 2 and all(isinstance(n, int) and n > 0 for n in stated):
        br, bc = stated
        if -(-rows // br) == srows and -(-cols // bc) == scols:
            return br, bc
    return (
        f"its scales {tuple(scale.shape)} do not divide its values {tuple(values.shape)} evenly, and no "
        "weight_block_size in the config says their blocks"
    )


def _plan(how: str, values: TensorInfo, scale: TensorInfo | None, config: Mapping[str, Any], **words: Any) -> Plan:
    """A dequantization of `values` by `scale` (and the words' zero point...), or why there is none."""
    if scale is None:
        return f"{how}: its scales are not in the file"
    decoded = (scale, *(() if words.get("packed_bits") else (values,)))  # (packed values: unpacked from bytes)
    undecoded = next((t.dtype for t in decoded if t.dtype not in STORAGE), None)
    if undecoded is not None:
        return f"{how}: dtype {undecoded} is not decoded"
    quantization = config.get("quantization_config")
    stated = quantization.get("weight_block_size") if isinstance(quantization, dict) else None
    block = _block(values, scale, stated)
    if isinstance(block, str):
        return f"{how}: {block}"
    zero = words.get("zero")
    if zero is not None and (zero.shape != scale.shape or zero.dtype not in STORAGE):
        return f"{how}: its zero points {tuple(zero.shape)} {zero.dtype} are not laid out as its scales"
    return Dequantization(how, values, scale, block, **words)


def _quanto(t: TensorInfo, by_name: Mapping[str, TensorInfo], config: Mapping[str, Any]) -> Plan | None:
    """optimum-quanto's values (`<module>.weight._data`, packed `._data._data`): `q * _scale`, `q * _scale - _shift`
    with its float shift (`(q - _shift) * _scale` with an integer one), its groups rows of the values."""
    if not quanto_values(t):
        return None
    module = t.layer or ""
    shift = by_name.get(module + QUANTO_SHIFT)
    bits = QUANTO_PACKED_DTYPES.get(t.dtype, 0)
    how = f"optimum-quanto {'q' + ('int' if t.dtype[0] in 'IU' else 'float') + str(bits or 8)}"
    shifted = shift is not None and shift.dtype in FLOATS
    return _plan(how, t, by_name.get(module + QUANTO_SCALE), config, zero=shift, shifted=shifted, packed_bits=bits)


def _torchao(t: TensorInfo, by_name: Mapping[str, TensorInfo], config: Mapping[str, Any]) -> Plan | None:
    """torchao's flattened values (`<module>._weight_qdata`, noted by `quantized.torchao_unflattened`):
    `(qdata - zero_point) * scale`, as its `dequantize_affine` (and `q * scale` for its float8)."""
    note = next((n for n in t.notes if n.startswith("torchao ")), None)
    if note is None or not t.name.endswith("_" + TORCHAO_VALUES):
        return None
    stem = t.name.removesuffix(TORCHAO_VALUES)
    how = " ".join(note.split(" ", 2)[:2])  # ('torchao Int8Tensor')
    return _plan(how, t, by_name.get(stem + "scale"), config, zero=by_name.get(stem + "zero_point"))


def _scaled(t: TensorInfo, by_name: Mapping[str, TensorInfo], config: Mapping[str, Any]) -> Plan | None:
    """A weight stored one value an element beside its scales (compressed-tensors' FP8 and INT8, transformers'
    fine-grained FP8: `(weight - weight_zero_point) * weight_scale`) or bitsandbytes' row scales (`SCB`)."""
    module, _, param = t.name.rpartition(".")
    if param != "weight" or t.dtype not in ELEMENT_DTYPES:
        return None
    rows = by_name.get(module + BNB_ROW_SCALES)
    if rows is not None:
        return _plan("bitsandbytes int8", t, rows, config, divisor=BNB_RANGE)
    scale = next((by_name[module + s] for s in SCALES if module + s in by_name), None)
    if scale is None:
        return None  # (a weight stored in 8 bits with no scale beside it: compared as stored)
    return _plan(f"{t.dtype} weight, its {scale.name.rpartition('.')[2]}", t, scale, config,
                 zero=by_name.get(module + ZERO_POINT))  # fmt: skip


def _packed(t: TensorInfo, by_name: Mapping[str, TensorInfo], config: Mapping[str, Any]) -> Plan | None:
    """Values packed in a layout not dequantized here: why, in the loader's words."""
    note = next((n for n in t.notes if PACKED_NOTE in n), None)
    if note is None:
        return None
    return f"{note.partition(':')[0]}: dequantizing this packing is not done here"


# How each library's quantized weights are dequantized, tried in order on every tensor of a file
DEQUANTIZERS: tuple[Finder, ...] = (_quanto, _torchao, _scaled, _packed)


def plans(ckpt: Checkpoint) -> dict[int, Plan]:
    """The quantized weights of a file, by the tensor's id: each one's dequantization, or why it cannot be done here
    (none in a file of floats)."""
    by_name = {t.name: t for t in ckpt.tensors}
    config = ckpt.config or {}
    found: dict[int, Plan] = {}
    for t in ckpt.tensors:
        if t.dtype in FLOATS:
            continue
        plan = next((p for find in DEQUANTIZERS if (p := find(t, by_name, config)) is not None), None)
        if plan is not None:
            found[id(t)] = plan
    return found


def _scales_matrix(t: TensorInfo) -> tuple[int, int]:
    """A scale (or zero point) table as a matrix: one a tensor (1, 1), one a row (rows, 1), else its own."""
    return (1, 1) if not t.shape else (t.shape[0], 1) if len(t.shape) == 1 else _matrix(t)


def _rows(source: TensorSource, t: TensorInfo, cols: int, start: int, stop: int, dtype: str = "") -> np.ndarray:
    """Rows `[start, stop)` of a tensor read as a matrix of `cols` columns, in its storage dtype (or `dtype`'s): one
    bounded read."""
    assert t.offset is not None
    dt = np.dtype(STORAGE[dtype or t.dtype]).newbyteorder("<")
    data = source.probe(t.file).read_at(t.offset + start * cols * dt.itemsize, (stop - start) * cols * dt.itemsize,
                                        fmt=source.ckpt.format, what=f"tensor {t.name!r}")  # fmt: skip
    source.bytes_read += len(data)
    return np.frombuffer(data, dtype=dt).reshape(stop - start, cols)


def _quanto_rows(source: TensorSource, t: TensorInfo, bits: int, start: int, stop: int) -> np.ndarray:
    """Rows `[start, stop)` of optimum-quanto's packed values: stored row r % P holds value row r in its bits
    (r // P) x bits up (P the stored rows), as its `unpack` concatenates them."""
    cols = _matrix(t)[1]
    stored = t.nbytes // cols
    parts = []
    row = start
    while row < stop:
        part, first = divmod(row, stored)
        last = min(stop, (part + 1) * stored)
        packed = _rows(source, t, cols, first, first + last - row, "U8")
        parts.append((packed >> (bits * part)) & ((1 << bits) - 1))
        row = last
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


def _spread(source: TensorSource, t: TensorInfo, block: tuple[int, int], start: int, stop: int, cols: int) -> Any:
    """A scale (or zero point) table's entries for value rows `[start, stop)`, decoded, one per value: its rows
    that cover them read, each repeated over its block."""
    br, bc = block
    rows, table_cols = _scales_matrix(t)
    first, last = start // br, min(rows, (stop - 1) // br + 1)
    table = decode(_rows(source, t, table_cols, first, last), t.dtype)
    return table[np.arange(start, stop)[:, None] // br - first, np.arange(cols) // bc]


def dequantized(source: TensorSource, dq: Dequantization, block_elements: int) -> Iterator[np.ndarray]:
    """The dequantized values of `dq`, float64, flat in the stored values' row order, about `block_elements` a
    block."""
    rows, cols = _matrix(dq.values)
    step = max(1, block_elements // max(cols, 1))
    for start in range(0, rows, step):
        stop = min(rows, start + step)
        if dq.packed_bits:
            q = _quanto_rows(source, dq.values, dq.packed_bits, start, stop).astype(np.float64)
        else:
            q = decode(_rows(source, dq.values, cols, start, stop), dq.values.dtype)
        scale = _spread(source, dq.scale, dq.block, start, stop, cols)
        zero = 0.0 if dq.zero is None else _spread(source, dq.zero, dq.block, start, stop, cols)
        out = q * scale - zero if dq.shifted else (q - zero) * scale
        yield (out / dq.divisor if dq.divisor != 1.0 else out).reshape(-1)


def unaddressed(dq: Dequantization) -> str | None:
    """Why a dequantization's tensors cannot be read in bounded row reads (one not at an offset in the file), or
    None."""
    for t in (dq.values, dq.scale, dq.zero):
        if t is not None and t.offset is None:
            return f"{dq.how}: {t.name!r} is not at a known offset in the file"
    return None
