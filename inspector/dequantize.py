"""A quantized weight's stored values as the floats they stand for, from its own file's tensors (`--data` only).

`inspector diff --data` of a float model and its quantization pairs each float weight with its quantized values
(`inspector.diff`'s naming rules); comparing integers with floats says nothing. Where the file holds all a weight's
dequantization needs, its values are dequantized here, streamed in row blocks (bounded memory: a block of values and
the scales of its rows), and the pair's difference is the quantization's error. One formula covers the schemes read:

    value = (q - zero) * scale                (torchao, compressed-tensors, transformers' FP8, GPTQ, AWQ: zero 0 or
                                               the zero points; compressed-tensors' NVFP4: scale / global scale)
    value = q * scale + sign * zero           (optimum-quanto's 4 and 2 bits: a float shift subtracted; MLX's
                                               affine mode: its biases added)
    value = q * SCB / 127                     (bitsandbytes' 8-bit rows)
    value = code[q] * absmax                  (bitsandbytes' 4 bits: NF4 and FP4 codes, its quant_map; with double
                                               quantization the absmax themselves code[a] * nested_absmax + offset)

q the stored value: an element, or a code unpacked from its bits (`Packed`: a bit stream along the stored rows or
down the stored columns, optimum-quanto's bytes) and decoded by a code book (`CODEBOOKS`: FP4 E2M1, E8M0 exponents;
or the file's own, bitsandbytes' quant_map); each scale (and zero point) shared by a block of rows x columns of the
values (the scale's shape tiles the values': one a row, one a group of a row, one a 128 x 128 block, one a tensor),
or picked by the row's group (GPTQ's `g_idx`). A scale or zero point table may be quantized itself (bitsandbytes'
double quantization, packed zero points, NVFP4's FP8 scales over a global scale): it is a `Dequantization` too. The
block is read off the shapes where the scale's dimensions divide the values' evenly, else from the config
(`weight_block_size`); where neither tells it, or the values are packed in a layout not read here, the pair says why
it is not dequantized instead of a number. `DEQUANTIZERS` is the table, one finder per library.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from math import prod

import numpy as np

from inspector.errors import FormatError
from inspector.quantized import (
    PACKED_BY,
    PACKINGS,
    QUANTO_PACKED_DTYPES,
    QUANTO_SCALE,
    QUANTO_SHIFT,
    TORCHAO_VALUES,
    quanto_values,
)
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
# Code books of packed values, by name: the value each code stands for. E2M1: the 4-bit floats of NVFP4 and MXFP4
# (sign, two exponent bits, one mantissa bit; compressed-tensors' `kE2M1ToFloat` and its sign); E8M0: the block
# exponents of the MX formats, 2^(code - 127), 255 NaN (the OCP MX specification)
CODEBOOKS: Mapping[str, np.ndarray] = {
    "E2M1": np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]),
    "E8M0": np.append(np.ldexp(1.0, np.arange(255) - 127), np.nan),
    "E4M3": decode(np.arange(256, dtype=np.uint8), "F8_E4M3"),  # (FP8 E4M3 in bytes: MLX's nvfp4 scales)
}
# MLX's modes (`mlx.core.quantize`) -> the code books of its values and of its scales (uint8); None: affine, the
# values integers, `q * scales + biases`
MLX_MODES: Mapping[str, tuple[str | None, str | None]] = {
    "affine": (None, None),
    "mxfp4": ("E2M1", "E8M0"),
    "nvfp4": ("E2M1", "E4M3"),
    "mxfp8": ("E4M3", "E8M0"),
}
AWQ_ORDER = (0, 4, 1, 5, 2, 6, 3, 7)  # AutoAWQ's packing: value j of each 8 at position AWQ_ORDER[j] of its int32 word
BNB_BLOCKSIZES = tuple(1 << k for k in range(5, 13))  # its 4-bit block sizes (32 ... 4096), powers of two
MAX_RECORD_BYTES = 1 << 16  # bitsandbytes' quant_state record: a JSON object of a few keys
ALIGN = 32  # values: 32 values of any width fill whole bytes and whole int32 words (a bit stream's seams)


@record(frozen=True, slots=True)
class Packed:
    """How the values are packed into their stored elements, `bits` a value: one little-endian bit stream along each
    stored row (`"rows"`), or down each stored column of elements of `element` bytes (`"columns"`: GPTQ's qweight),
    or optimum-quanto's bytes (`"quanto"`: stored row r % P holds value row r in its bits (r // P) x bits up);
    `msb_first`: each byte's high bits first (bitsandbytes); `order`: where in each run of len(order) values each one
    is stored (AWQ); `offset`: subtracted from each code (compressed-tensors stores q + 2^(bits - 1)), modulo
    2^bits where `modular` (AutoGPTQ's zero points, stored less one: its zero of 0 is stored as 2^bits - 1 and read
    back so, `(z + 1) & (2^bits - 1)`)."""

    bits: int
    along: str
    element: int = 1
    msb_first: bool = False
    order: tuple[int, ...] = ()
    offset: int = 0
    modular: bool = False


@record(frozen=True, slots=True)
class Dequantization:
    """How one quantized weight's stored values dequantize: `(q - zero) * scale / divisor` (`/ scale` where
    `divided`), or `q * scale + sign * zero` where `sign` is not 0; each scale and zero point shared by a block of
    `block` (rows, columns) of the values' `matrix` (rows, columns), or the row's group (`groups`, GPTQ's g_idx); q the
    values `packed` (or one an element) and looked up in a `codebook` (a `CODEBOOKS` name, or the file's table);
    `transposed`: the matrix is the float weight's transpose (GPTQ's and AWQ's (in, out)); `offset_from`:
    bitsandbytes' quant_state record, whose nested_offset is added. A scale or zero point table may itself be a
    `Dequantization` (bitsandbytes' double quantization, packed zero points)."""

    how: str  # in words, for the report
    values: TensorInfo
    scale: Table | None
    block: tuple[int, int]
    matrix: tuple[int, int] = (0, 0)  # (0, 0): the values' shape as a matrix
    zero: Table | None = None
    sign: int = 0
    divisor: float = 1.0
    divided: bool = False
    packed: Packed | None = None
    codebook: str | TensorInfo | None = None
    groups: TensorInfo | None = None
    transposed: bool = False
    offset_from: TensorInfo | None = None


if TYPE_CHECKING:
    Table = TensorInfo | Dequantization  # a scale or zero point table: as stored, or dequantized itself
    Plan = Dequantization | str  # a dequantization, or why the values cannot be dequantized here
    Finder = Callable[[TensorInfo, Mapping[str, TensorInfo], Mapping[str, Any]], Plan | None]


def _matrix(t: TensorInfo) -> tuple[int, int]:
    return (prod(t.shape[:-1]), t.shape[-1]) if t.shape else (1, 1)


def _logical(dq: Dequantization) -> tuple[int, int]:
    """The (rows, columns) of the values a dequantization gives."""
    return dq.matrix if dq.matrix != (0, 0) else _matrix(dq.values)


def _table_matrix(table: Table) -> tuple[int, int]:
    return _logical(table) if isinstance(table, Dequantization) else _scales_matrix(table)


def _shape(table: Table) -> tuple[int, ...]:
    return _logical(table) if isinstance(table, Dequantization) else tuple(table.shape)


def _dtype(table: Table) -> str:
    return "F64" if isinstance(table, Dequantization) else table.dtype  # (a dequantized table: float64)


def _block(values: TensorInfo, matrix: tuple[int, int], scale: Table, stated: object) -> tuple[int, int] | str:
    """The (rows, columns) of the values each scale covers: the values' over the scale's where they divide evenly,
    else the config's `weight_block_size` where it tiles them; else why not."""
    rows, cols = matrix
    srows, scols = _table_matrix(scale)
    if rows % srows == 0 and cols % scols == 0:
        return rows // srows, cols // scols
    if isinstance(stated, list) and len(stated) == 2 and all(isinstance(n, int) and n > 0 for n in stated):
        br, bc = stated
        if -(-rows // br) == srows and -(-cols // bc) == scols:
            return br, bc
    return (
        f"its scales {_shape(scale)} do not divide its values {tuple(values.shape)} evenly, and no "
        "weight_block_size in the config says their blocks"
    )


def _plan(how: str, values: TensorInfo, scale: Table | None, config: Mapping[str, Any], **words: Any) -> Plan:
    """A dequantization of `values` by `scale` (and the words' zero point...), or why there is none."""
    if scale is None:
        return f"{how}: its scales are not in the file"
    tables = [t for t in (scale, words.get("zero")) if t is not None]
    decoded = [t for t in tables if not isinstance(t, Dequantization)]
    decoded += [] if words.get("packed") else [values]  # (packed values: unpacked from bytes)
    undecoded = next((t.dtype for t in decoded if t.dtype not in STORAGE), None)
    if undecoded is not None:
        return f"{how}: dtype {undecoded} is not decoded"
    quantization = config.get("quantization_config")
    stated = quantization.get("weight_block_size") if isinstance(quantization, dict) else None
    matrix = words.get("matrix") or _matrix(values)
    block = words.pop("block", None) or _block(values, matrix, scale, stated)
    if isinstance(block, str):
        return f"{how}: {block}"
    zero = words.get("zero")
    if zero is not None and (_table_matrix(zero) != _table_matrix(scale) or _dtype(zero) not in STORAGE):
        return f"{how}: its zero points {_shape(zero)} {_dtype(zero)} are not laid out as its scales"
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
    sign = -1 if shift is not None and shift.dtype in FLOATS else 0
    packed = Packed(bits, "quanto") if bits else None
    return _plan(how, t, by_name.get(module + QUANTO_SCALE), config, zero=shift, sign=sign, packed=packed)


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


def _blocksize(n: int, count: int) -> int:
    """The values a block of bitsandbytes' holds, `count` blocks (the last one partial) covering `n` values: a power of
    two it quantizes in; 0 where none fits."""
    size = next((size for size in BNB_BLOCKSIZES if -(-n // size) == count), 0)
    return size or (n if count == 1 else 0)


def _bnb_4bit(t: TensorInfo, by_name: Mapping[str, TensorInfo], config: Mapping[str, Any]) -> Plan | None:
    """bitsandbytes' 4-bit weight (`quantized.unpacked`: NF4 or FP4 codes, two a byte, the high half first):
    `quant_map[q] * absmax`, an absmax a block of values; with double quantization the absmax are themselves
    `nested_quant_map[a] * nested_absmax + nested_offset` (the offset in its quant_state record), as its
    `dequantize_4bit` does them."""
    record = next((by_name[t.name + "." + r] for r in PACKED_BY if t.name + "." + r in by_name), None)
    if record is None or PACKED_BY[record.name.removeprefix(t.name + ".")] != t.dtype:
        return None
    how = f"bitsandbytes {t.dtype.removeprefix('BNB_').lower()}"
    absmax, code = by_name.get(t.name + ".absmax"), by_name.get(t.name + ".quant_map")
    nested, nested_code = by_name.get(t.name + ".nested_absmax"), by_name.get(t.name + ".nested_quant_map")
    if absmax is None or code is None or not _codes_of(code, 4):
        return f"{how}: its absmax or its quant_map of 16 codes is not in the file"
    n = t.n_elements
    scale: Table = absmax
    if nested is not None and nested_code is not None:
        count = absmax.n_elements
        if absmax.dtype != "U8" or not _codes_of(nested_code, 8) or nested.dtype not in FLOATS or record.dtype != "U8":
            return f"{how}: its double quantization's tables are not bitsandbytes' (U8 absmax, 256 codes)"
        nested_block = _blocksize(count, nested.n_elements)
        if not nested_block:
            return f"{how}: {nested.n_elements} nested absmax do not cover its {count} absmax in blocks"
        scale = Dequantization(how + " absmax", absmax, nested, (nested_block, 1), (count, 1), codebook=nested_code,
                               offset_from=record)  # fmt: skip
    elif absmax.dtype not in FLOATS:
        return f"{how}: its absmax are {absmax.dtype} without the nested tables that dequantize them"
    block = _blocksize(n, absmax.n_elements)
    if not block:
        return f"{how}: {absmax.n_elements} absmax do not cover its {n:,} values in blocks"
    return Dequantization(how, t, scale, (block, 1), (n, 1), packed=Packed(4, "columns", msb_first=True),
                          codebook=code)  # fmt: skip


def _codes_of(table: TensorInfo, bits: int) -> bool:
    """Whether a code book in the file holds a float for every code of `bits` bits."""
    return table.dtype in FLOATS and table.n_elements >= 1 << bits and len(table.shape) == 1


def _packed(t: TensorInfo, by_name: Mapping[str, TensorInfo], config: Mapping[str, Any]) -> Plan | None:
    """A weight the loaders unpacked (`quantized.unpacked`: its note names the packing): dequantized by its packing's
    finder (`UNPACKED`), or why not, in the loader's words."""
    note = next((n for n in t.notes if PACKED_NOTE in n), None)
    if note is None:
        return None
    finder = UNPACKED.get(note.partition(" weight" + PACKED_NOTE)[0])
    plan = finder(t, t.name.rpartition(".")[0], by_name, config) if finder is not None else None
    return plan or f"{note.partition(':')[0]}: dequantizing this packing is not done here"


def _bits(t: TensorInfo) -> int:
    from inspector.dtypes import DTYPES

    return DTYPES[t.dtype].bits


def _gptq(t: TensorInfo, module: str, by_name: Mapping[str, TensorInfo], config: Mapping[str, Any]) -> Plan | None:
    """GPTQ's `qweight` (in x bits / 32, out), each column a bit stream down its int32 words: `(q - (z + 1)) *
    scales[g_idx]`, `qzeros` (groups, out x bits / 32) packed along its rows and stored less one (AutoGPTQ's
    checkpoint format; `gptq_v2` stores the zero point itself), `scales` (groups, out), `g_idx` a group an input row."""
    out, inputs = t.shape
    bits = _bits(t)
    scales, qzeros, g_idx = (by_name.get(f"{module}.{name}") for name in ("scales", "qzeros", "g_idx"))
    if scales is None or qzeros is None or len(scales.shape) != 2 or qzeros.dtype != "I32":
        return None
    quantization = config.get("quantization_config")
    v2 = isinstance(quantization, dict) and quantization.get("checkpoint_format") == "gptq_v2"
    zero = Dequantization("GPTQ zero points", qzeros, None, (1, 1), scales.shape,
                          packed=Packed(bits, "rows", offset=0 if v2 else -1, modular=True))  # fmt: skip
    groups = g_idx if g_idx is not None and g_idx.shape == (inputs,) and g_idx.dtype == "I32" else None
    block = (-(-inputs // scales.shape[0]), 1)
    return _plan("GPTQ", t, scales, config, zero=zero, matrix=(inputs, out), block=block, groups=groups,
                 packed=Packed(bits, "columns", element=4), transposed=True)  # fmt: skip


def _awq(t: TensorInfo, module: str, by_name: Mapping[str, TensorInfo], config: Mapping[str, Any]) -> Plan | None:
    """AWQ's GEMM layout, `qweight` (in, out / 8), 8 values an int32 word in AutoAWQ's order: `(q - z) * scales`,
    `qzeros` (groups, out / 8) packed alike, `scales` (groups, out), as its `dequantize_gemm` does them."""
    out, inputs = t.shape
    scales, qzeros = by_name.get(module + ".scales"), by_name.get(module + ".qzeros")
    if scales is None or qzeros is None or len(scales.shape) != 2 or qzeros.dtype != "I32":
        return None
    packed = Packed(_bits(t), "rows", order=AWQ_ORDER)
    zero = Dequantization("AWQ zero points", qzeros, None, (1, 1), scales.shape, packed=packed)
    return _plan("AWQ", t, scales, config, zero=zero, matrix=(inputs, out), packed=packed, transposed=True)


def _pack_quantized(
    t: TensorInfo, module: str, by_name: Mapping[str, TensorInfo], config: Mapping[str, Any]
) -> Plan | None:
    """compressed-tensors' pack-quantized `weight_packed` (out, in x bits / 32), each row a bit stream of its values
    plus 2^(bits - 1): `(q - zero) * weight_scale`, its `weight_zero_point` packed alike down its columns (as its
    `pack_to_int32(..., packed_dim=0)`), as its `PackedQuantizationCompressor.decompress` does them."""
    bits = _bits(t)
    offset = 1 << (bits - 1)
    scale, zero_point = by_name.get(module + ".weight_scale"), by_name.get(module + ZERO_POINT)
    zero: Table | None = zero_point
    if scale is not None and zero_point is not None and zero_point.dtype == "I32":
        zero = Dequantization("compressed-tensors zero points", zero_point, None, (1, 1), _scales_matrix(scale),
                              packed=Packed(bits, "columns", element=4, offset=offset))  # fmt: skip
    packed = Packed(bits, "rows", offset=offset)
    return _plan("compressed-tensors pack-quantized", t, scale, config, zero=zero, packed=packed)


def _fp4(t: TensorInfo, module: str, by_name: Mapping[str, TensorInfo], config: Mapping[str, Any]) -> Plan | None:
    """NVFP4 and MXFP4 as compressed-tensors packs them (`weight_packed`, two E2M1 values a byte, the low half first):
    `e2m1 * weight_scale / weight_global_scale` (NVFP4: FP8 scales, one each 16 values) or `e2m1 * 2^(scale - 127)`
    (MXFP4: E8M0 exponents, one each 32), as its `dequantize` does them."""
    scale = by_name.get(module + ".weight_scale")
    if scale is None:
        return None
    table: Table = scale
    if scale.dtype == "U8":  # (E8M0 exponents)
        table = Dequantization("E8M0 scales", scale, None, (1, 1), codebook="E8M0")
    elif (overall := by_name.get(module + ".weight_global_scale")) is not None:
        table = Dequantization("NVFP4 scales", scale, overall, _matrix(scale), divided=True)
    how = "compressed-tensors " + ("MXFP4" if scale.dtype == "U8" else "NVFP4")
    return _plan(how, t, table, config, packed=Packed(4, "rows"), codebook="E2M1")


def _mlx(t: TensorInfo, module: str, by_name: Mapping[str, TensorInfo], config: Mapping[str, Any]) -> Plan | None:
    """MLX's quantized weights (`mlx.core.quantize`): uint32 words, each row a bit stream of its values; its affine
    mode `q * scales + biases`, its float modes `code[q] * code[scales]` (`MLX_MODES`), a scale a group of a row."""
    note = next(n for n in t.notes if PACKED_NOTE in n)
    mode = note.split(" ", 2)[1]  # ('MLX mxfp4 weight stored packed as ...')
    scales, biases = by_name.get(module + ".scales"), by_name.get(module + ".biases")
    how = f"MLX {mode}"
    if mode not in MLX_MODES:
        return f"{how}: dequantizing this mode is not done here"
    values_book, scales_book = MLX_MODES[mode]
    packed = Packed(_bits(t), "rows")
    if values_book is None:
        return _plan(how, t, scales, config, zero=biases, sign=1, packed=packed) if biases is not None else None
    if scales is None or scales.dtype != "U8":
        return f"{how}: its scales are not U8 codes"
    table = Dequantization(how + " scales", scales, None, (1, 1), codebook=scales_book)
    return _plan(how, t, table, config, packed=packed, codebook=values_book)


# How each library's quantized weights are dequantized, tried in order on every tensor of a file
DEQUANTIZERS: tuple[Finder, ...] = (_quanto, _torchao, _scaled, _bnb_4bit, _packed)
# The packings whose weights `_packed` dequantizes, as the loaders' notes name them (`quantized.PACKINGS`' names;
# MLX's modes) -> their finders
UNPACKED: Mapping[str, Callable[[TensorInfo, str, Mapping[str, TensorInfo], Mapping[str, Any]], Plan | None]] = {
    PACKINGS["gptq"].name: _gptq,
    PACKINGS["awq"].name: _awq,
    PACKINGS["pack-quantized"].name: _pack_quantized,
    PACKINGS["nvfp4-pack-quantized"].name: _fp4,
    PACKINGS["mxfp4-pack-quantized"].name: _fp4,
    **{f"MLX {mode}": _mlx for mode in ("affine", "mxfp4", "nvfp4", "mxfp8")},
}


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
    significant bits first (little-endian words), or each byte's most significant first."""
    stream = np.unpackbits(raw.astype(np.uint8, copy=False), axis=1, count=count * bits,
                           bitorder="big" if msb_first else "little").reshape(len(raw), count, bits)  # fmt: skip
    weights = 1 << np.arange(bits)
    return np.asarray(stream @ (weights[::-1] if msb_first else weights))


def _unpacked(source: TensorSource, dq: Dequantization, p: Packed, start: int, stop: int) -> np.ndarray:
    """Rows `[start, stop)` of packed values, their codes (integers)."""
    rows, cols = _logical(dq)
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
        width = t.nbytes // rows
        raw = np.frombuffer(_read(source, t, start * width, stop * width), np.uint8).reshape(stop - start, width)
        codes = _bitstream(raw, p.bits, cols, p.msb_first)
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
    cols = _logical(dq)[1]
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
    cols = _logical(dq)[1]
    if dq.groups is not None:
        index = _rows(source, dq.groups, 1, start, stop).reshape(-1).astype(np.int64)
        if index.min() < 0 or index.max() >= _table_matrix(table)[0]:
            raise FormatError(source.ckpt.path, source.ckpt.format, f"tensor {dq.groups.name!r}: a group past the "
                              f"{_table_matrix(table)[0]} rows of its scales")  # fmt: skip
    else:
        index = np.arange(start, stop) // dq.block[0]
    first, last = int(index.min()), int(index.max()) + 1
    if isinstance(table, Dequantization):
        entries = _dequantized_rows(source, table, first, last)
    else:
        entries = decode(_rows(source, table, _table_matrix(table)[1], first, last), table.dtype)
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
    if dq.offset_from is not None:
        out = out + _nested_offset(source, dq.offset_from)
    return np.asarray(out)


def _nested_offset(source: TensorSource, record: TensorInfo) -> float:
    """The `nested_offset` of bitsandbytes' quant_state record (JSON in bytes), added to its dequantized absmax."""
    import json

    words: Any = None
    if record.nbytes <= MAX_RECORD_BYTES:
        try:
            words = json.loads(_read(source, record, 0, record.nbytes))
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
    rows, cols = _logical(dq)
    step = max(1, block_elements // max(cols, 1))
    if dq.packed is not None and dq.packed.along == "columns":
        step = -(-step // ALIGN) * ALIGN
    for start in range(0, rows, step):
        yield _dequantized_rows(source, dq, start, min(rows, start + step)).reshape(-1)


def _tensors(dq: Dequantization) -> Iterator[TensorInfo]:
    """Every tensor a dequantization reads."""
    yield dq.values
    for t in (dq.scale, dq.zero, dq.groups, dq.codebook, dq.offset_from):
        if isinstance(t, Dequantization):
            yield from _tensors(t)
        elif t is not None and not isinstance(t, str):
            yield t


def unaddressed(dq: Dequantization) -> str | None:
    """Why a dequantization's tensors cannot be read in bounded row reads (one not at an offset in the file), or
    None."""
    for t in _tensors(dq):
        if t.offset is None:
            return f"{dq.how}: {t.name!r} is not at a known offset in the file"
    return None
