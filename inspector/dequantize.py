"""A quantized weight's stored values as the floats they stand for, from its own file's tensors (`--data` only).

`inspector diff --data` of a float model and its quantization pairs each float weight with its quantized values
(`inspector.diff`'s naming rules); comparing integers with floats says nothing. Where the file holds all a weight's
dequantization needs, its values are dequantized here, streamed in row blocks (bounded memory: a block of values and
the scales of its rows), and the pair's difference is the quantization's error. One formula covers the schemes read:

    value = (q - zero) * scale                (torchao, compressed-tensors, transformers' FP8, GPTQ, AWQ: zero 0 or
                                               the zero points; compressed-tensors' NVFP4: scale / global scale)
    value = q * scale + sign * zero           (optimum-quanto's 4 and 2 bits: a float shift subtracted; MLX's
                                               affine mode: its biases added; AWQ GEMVFast: its qzeros added)
    value = q * SCB / 127                     (bitsandbytes' 8-bit rows)
    value = code[q] * absmax                  (bitsandbytes' 4 bits: NF4 and FP4 codes, its quant_map; with double
                                               quantization the absmax themselves code[a] * nested_absmax + offset)

q the stored value: an element, or a code unpacked from its bits (`Packed`: a bit stream along the stored rows or down
the stored columns, optimum-quanto's bytes) and decoded by a code book (`dequantize_stream.CODEBOOKS`: FP4 E2M1, FP6
E2M3, signed INT4, E8M0 exponents; or the file's own, bitsandbytes' quant_map), times a factor a column where the file
has one (ModelOpt's AWQ `pre_quant_scale`); each scale (and zero point) shared by a block of rows x columns
of the values (the scale's shape tiles the values': one a row, one a group of a row, one a 128 x 128 block, one a
tensor), or picked by the row's group (GPTQ's `g_idx`). A scale or zero point table may be quantized itself
(bitsandbytes' double quantization, packed zero points, NVFP4's FP8 scales over a global scale): it is a
`Dequantization` too. The block is read off the shapes where the scale's dimensions divide the values' evenly, else from
the config (`weight_block_size`); where neither tells it, or the values are packed in a layout not read here, the pair
says why it is not dequantized instead of a number. `DEQUANTIZERS` is the table, one finder per library; the values a
plan describes are streamed by `inspector.dequantize_stream`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from math import prod

from inspector.quantized import (
    BLOCK_PACKINGS,
    PACKED_BY,
    PACKINGS,
    QUANTO_PACKED_DTYPES,
    QUANTO_SCALE,
    QUANTO_SHIFT,
    TORCHAO_VALUES,
    quanto_values,
)
from inspector.recordtype import record
from inspector.tensor_data import STORAGE

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
# MLX's modes (`mlx.core.quantize`) -> the code books of its values and of its scales (uint8); None: affine, the
# values integers, `q * scales + biases`
MLX_MODES: Mapping[str, tuple[str | None, str | None]] = {
    "affine": (None, None),
    "mxfp4": ("E2M1", "E8M0"),
    "nvfp4": ("E2M1", "E4M3"),
    "mxfp8": ("E4M3", "E8M0"),
}
AWQ_ORDER = (0, 4, 1, 5, 2, 6, 3, 7)  # AutoAWQ's packing: value j of each 8 at position AWQ_ORDER[j] of its int32 word
# AutoAWQ's GEMVFast (`gemv_fast.pack_intweight`): each run of 32 values of a row reordered for its kernel (value j at
# position 4 x (j mod 8) + j // 8), then 4 rows interleaved in tiles of 64 values, 4 values an int16 (one of each row)
AWQ_FAST_ORDER = tuple(4 * (j % 8) + j // 8 for j in range(32))
AWQ_FAST_ROWS, AWQ_FAST_TILE = 4, 64
AWQ_GROUP_SIZES = ("group_size", "q_group_size")  # its group size: in config.json, in its own quant_config.json
FLOAT_CODES = {4: "E2M1", 6: "E2M3"}  # the code book of packed floats of these bits (`dequantize_stream.CODEBOOKS`)
BNB_BLOCKSIZES = tuple(1 << k for k in range(5, 13))  # its 4-bit block sizes (32 ... 4096), powers of two


@record(frozen=True, slots=True)
class Packed:
    """How the values are packed into their stored elements, `bits` a value: one little-endian bit stream along each
    stored row (`"rows"`), or down each stored column of elements of `element` bytes (`"columns"`: GPTQ's qweight),
    or optimum-quanto's bytes (`"quanto"`: stored row r % P holds value row r in its bits (r // P) x bits up);
    `msb_first`: each byte's high bits first (bitsandbytes); `order`: where in each run of len(order) values each one
    is stored (AWQ); `offset`: subtracted from each code (compressed-tensors stores q + 2^(bits - 1)), modulo
    2^bits where `modular` (AutoGPTQ's zero points, stored less one: its zero of 0 is stored as 2^bits - 1 and read
    back so, `(z + 1) & (2^bits - 1)`); `interleave` rows along a stored row, in tiles of `tile` values a row (AWQ
    GEMVFast's 4 rows, 64 values each, one after the other)."""

    bits: int
    along: str
    element: int = 1
    msb_first: bool = False
    order: tuple[int, ...] = ()
    offset: int = 0
    modular: bool = False
    interleave: int = 1
    tile: int = 0


@record(frozen=True, slots=True)
class Dequantization:
    """How one quantized weight's stored values dequantize: `(q - zero) * scale / divisor` (`/ scale` where `divided`),
    or `q * scale + sign * zero` where `sign` is not 0; each scale and zero point shared by a block of `block` (rows,
    columns) of the values' `matrix` (rows, columns), or the row's group (`groups`, GPTQ's g_idx); q the values `packed`
    (or one an element) and looked up in a `codebook` (a `dequantize_stream.CODEBOOKS` name, or the file's table);
    `transposed`: the matrix is the float weight's transpose (GPTQ's and AWQ's (in, out)); `offset_from`: bitsandbytes'
    quant_state record, whose nested_offset is added. A scale or zero point table may itself be a `Dequantization`
    (bitsandbytes' double quantization, packed zero points); `turned_tables`: the scale and zero point tables are
    stored transposed, a column a row of the values (AWQ GEMVFast's (groups, out)); `column_factor`: a factor each
    column of the values multiplies them by (ModelOpt's AWQ `pre_quant_scale`)."""

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
    turned_tables: bool = False
    column_factor: TensorInfo | None = None


if TYPE_CHECKING:
    Table = TensorInfo | Dequantization  # a scale or zero point table: as stored, or dequantized itself
    Plan = Dequantization | str  # a dequantization, or why the values cannot be dequantized here
    Finder = Callable[[TensorInfo, Mapping[str, TensorInfo], Mapping[str, Any]], Plan | None]


def _matrix(t: TensorInfo) -> tuple[int, int]:
    return (prod(t.shape[:-1]), t.shape[-1]) if t.shape else (1, 1)


def logical_matrix(dq: Dequantization) -> tuple[int, int]:
    """The (rows, columns) of the values a dequantization gives."""
    return dq.matrix if dq.matrix != (0, 0) else _matrix(dq.values)


def table_matrix(table: Table) -> tuple[int, int]:
    return logical_matrix(table) if isinstance(table, Dequantization) else _scales_matrix(table)


def _shape(table: Table) -> tuple[int, ...]:
    return logical_matrix(table) if isinstance(table, Dequantization) else tuple(table.shape)


def _dtype(table: Table) -> str:
    return "F64" if isinstance(table, Dequantization) else table.dtype  # (a dequantized table: float64)


def _block(values: TensorInfo, matrix: tuple[int, int], scale: Table, stated: object) -> tuple[int, int] | str:
    """The (rows, columns) of the values each scale covers: the values' over the scale's where they divide evenly,
    else the config's `weight_block_size` where it tiles them; else why not."""
    rows, cols = matrix
    srows, scols = table_matrix(scale)
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
    padded = words.pop("padded", False)  # (a table of more columns than the values' groups: AWQ GEMV's, unused)
    srows, scols = table_matrix(scale)[:: -1 if words.get("turned_tables") else 1]
    rows, needed = matrix[0], -(-matrix[1] // block[1])
    short = scols < needed if padded else scols != needed
    if short or (words.get("groups") is None and -(-rows // block[0]) != srows):
        return f"{how}: its scales {_shape(scale)} do not cover its values {matrix} in blocks of {block}"
    zero = words.get("zero")
    if zero is not None and (table_matrix(zero) != table_matrix(scale) or _dtype(zero) not in STORAGE):
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
    if scales is None or qzeros is None or len(scales.shape) != 2 or qzeros.dtype != "I32" or out % len(AWQ_ORDER):
        return None
    packed = Packed(_bits(t), "rows", order=AWQ_ORDER)
    zero = Dequantization("AWQ zero points", qzeros, None, (1, 1), scales.shape, packed=packed)
    return _plan("AWQ", t, scales, config, zero=zero, matrix=(inputs, out), packed=packed, transposed=True)


def _awq_gemv(t: TensorInfo, module: str, by_name: Mapping[str, TensorInfo], config: Mapping[str, Any]) -> Plan | None:
    """AWQ's GEMV layouts, a scale and zero point each group_size values of a row (the config's), their tables padded
    with unused groups: WQLinear_GEMV's `qweight` (out, in / 8), 8 values an int32 word in their order, `qzeros`
    (out, groups / 8) packed alike, `scales` (out, groups): `(q - z) * scales`; WQLinear_GEMVFast's `qweight` int16
    (out / 4, in) (`AWQ_FAST_ORDER`, 4 rows interleaved), `scales` and `qzeros` float16 (groups, out), its zero
    points stored as -scale x zero: `q * scales + qzeros`; as their kernels dequantize them."""
    scales, qzeros = by_name.get(module + ".scales"), by_name.get(module + ".qzeros")
    quantization = config.get("quantization_config")
    group = next((quantization.get(k) for k in AWQ_GROUP_SIZES if k in quantization), None) if isinstance(
        quantization, dict) else None  # fmt: skip
    if scales is None or qzeros is None or len(scales.shape) != 2:
        return None
    gemv = qzeros.dtype == "I32"  # (GEMVFast's: float16)
    how = "AWQ GEMV" if gemv else "AWQ GEMVFast"
    if not isinstance(group, int) or isinstance(group, bool) or group <= 0:
        return f"{how}: no group_size in the config says its groups"
    block = (1, group)
    if gemv:
        packed = Packed(_bits(t), "rows")
        zero = Dequantization("AWQ zero points", qzeros, None, (1, 1), scales.shape, packed=packed)
        return _plan(how, t, scales, config, zero=zero, packed=packed, block=block, padded=True)
    rows, cols = t.shape
    if rows % AWQ_FAST_ROWS or cols % AWQ_FAST_TILE:
        return f"{how}: its values {tuple(t.shape)} are not whole tiles of {AWQ_FAST_ROWS} x {AWQ_FAST_TILE}"
    packed = Packed(_bits(t), "rows", order=AWQ_FAST_ORDER, interleave=AWQ_FAST_ROWS, tile=AWQ_FAST_TILE)
    return _plan(how, t, scales, config, zero=qzeros, sign=1, packed=packed, block=block, padded=True,
                 turned_tables=True)  # fmt: skip


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


def _fp_packed(t: TensorInfo, module: str, by_name: Mapping[str, TensorInfo], config: Mapping[str, Any]) -> Plan | None:
    """NVFP4, MXFP4 and MXFP6 as compressed-tensors packs them (`weight_packed`, two E2M1 values a byte, the low half
    first; four E2M3 values in three bytes, a little-endian bit stream): `e2m1 * weight_scale / weight_global_scale`
    (NVFP4: FP8 scales, one each 16 values) or `code * 2^(scale - 127)` (MXFP4, MXFP6: E8M0 exponents, one each 32),
    as its `dequantize` does them; ModelOpt's MXFP4 export (`weight`) alike, as its `MXFP4QTensor.dequantize` does
    it."""
    scale = by_name.get(module + ".weight_scale")
    if scale is None:
        return None
    table: Table = scale
    if scale.dtype == "U8":  # (E8M0 exponents)
        table = Dequantization("E8M0 scales", scale, None, (1, 1), codebook="E8M0")
    elif (overall := by_name.get(module + ".weight_global_scale")) is not None:
        table = Dequantization("NVFP4 scales", scale, overall, _matrix(scale), divided=True)
    note = next(n for n in t.notes if PACKED_NOTE in n)
    bits = _bits(t)
    return _plan(note.partition(" weight" + PACKED_NOTE)[0], t, table, config, packed=Packed(bits, "rows"),
                 codebook=FLOAT_CODES[bits])  # fmt: skip


def _modelopt_nvfp4(
    t: TensorInfo, module: str, by_name: Mapping[str, TensorInfo], config: Mapping[str, Any]
) -> Plan | None:
    """NVIDIA ModelOpt's NVFP4 export (`weight`, two E2M1 values a byte, the low half first): `e2m1 * weight_scale *
    weight_scale_2`, FP8 scales each 16 values times a scale a tensor, as its `NVFP4QTensor.dequantize` does them."""
    scale, overall = by_name.get(module + ".weight_scale"), by_name.get(module + ".weight_scale_2")
    if scale is None or overall is None:
        return None
    table = Dequantization("ModelOpt NVFP4 scales", scale, overall, _matrix(scale))
    return _plan("ModelOpt NVFP4", t, table, config, packed=Packed(4, "rows"), codebook="E2M1")


def _gpt_oss_mxfp4(
    t: TensorInfo, module: str, by_name: Mapping[str, TensorInfo], config: Mapping[str, Any]
) -> Plan | None:
    """gpt-oss's MXFP4 experts (`<projection>_blocks` (experts, out, in / 32, 16), two E2M1 values a byte, the low
    half first, and `<projection>_scales` (experts, out, in / 32), an E8M0 exponent a block of 32): `e2m1 * 2^(scale
    - 127)`, each expert's matrix the transpose of transformers' parameter (experts, in, out), as its
    `convert_moe_packed_tensors` dequantizes them."""
    packing = BLOCK_PACKINGS["mxfp4"]
    scales = by_name.get(t.name.removesuffix(packing.blocks) + packing.scales)
    if scales is None or scales.dtype != "U8" or not t.name.endswith(packing.blocks):
        return None
    table = Dequantization("E8M0 scales", scales, None, (1, 1), codebook="E8M0")
    return _plan("gpt-oss MXFP4", t, table, config, packed=Packed(4, "rows"), codebook="E2M1",
                 transposed=packing.transposed)  # fmt: skip


def _modelopt_int4_awq(
    t: TensorInfo, module: str, by_name: Mapping[str, TensorInfo], config: Mapping[str, Any]
) -> Plan | None:
    """NVIDIA ModelOpt's INT4 AWQ export (`weight` (out / 2, in), two signed 4-bit values a byte down each column, the
    low half first, as its `pack_int4_in_uint8` packs them): `q * weight_scale`, a scale each block of a row, times
    the `pre_quant_scale` beside it where the exporter kept it (AWQ divides each input's weights by it and multiplies
    the input by it: the float weight is the product); where it folded it into the norm before, the values are the
    weight it left."""
    scale, factor = by_name.get(module + ".weight_scale"), by_name.get(module + ".pre_quant_scale")
    how = PACKINGS["modelopt-int4-awq"].name
    if scale is None:
        return None
    if factor is not None and (factor.shape != (t.shape[-1],) or factor.dtype not in FLOATS):
        return f"{how}: its pre_quant_scale {tuple(factor.shape)} {factor.dtype} is not a float a column of its values"
    return _plan(how, t, scale, config, packed=Packed(4, "columns"), codebook="I4", column_factor=factor)


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
    PACKINGS["awq-gemv"].name: _awq_gemv,
    PACKINGS["awq-gemv-fast"].name: _awq_gemv,
    PACKINGS["pack-quantized"].name: _pack_quantized,
    PACKINGS["nvfp4-pack-quantized"].name: _fp_packed,
    PACKINGS["mxfp4-pack-quantized"].name: _fp_packed,
    PACKINGS["mxfp6-pack-quantized"].name: _fp_packed,
    PACKINGS["modelopt-nvfp4"].name: _modelopt_nvfp4,
    PACKINGS["modelopt-mxfp4"].name: _fp_packed,
    PACKINGS["modelopt-int4-awq"].name: _modelopt_int4_awq,
    BLOCK_PACKINGS["mxfp4"].name: _gpt_oss_mxfp4,
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


def _tensors(dq: Dequantization) -> Iterator[TensorInfo]:
    """Every tensor a dequantization reads."""
    yield dq.values
    for t in (dq.scale, dq.zero, dq.groups, dq.codebook, dq.offset_from, dq.column_factor):
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
