"""Element types: one canonical table, and per-format alias maps into it.

Canonical names follow safetensors (``F32``, ``BF16``, ``I64``...). Types without a fixed numeric
meaning (numpy strings, structured records, pickled objects) get a generated name such as
``VOID[24]`` and are sized by the loader.
"""

from __future__ import annotations

from inspector.enumtype import StrEnum
from inspector.recordtype import record


class DKind(StrEnum):
    FLOAT = "float"
    INT = "int"
    UINT = "uint"
    BOOL = "bool"
    COMPLEX = "complex"
    QUANT = "quantized"
    OPAQUE = "opaque"


@record(frozen=True, slots=True)
class DType:
    name: str
    bits: int
    kind: DKind
    block: int = 1  # elements per `bits` (quantised block types)

    @property
    def itemsize(self) -> float:
        return self.bits / 8 / self.block


def _t(name: str, bits: int, kind: DKind) -> tuple[str, DType]:
    return name, DType(name, bits, kind)


DTYPES: dict[str, DType] = dict(
    [
        _t("F64", 64, DKind.FLOAT),
        _t("F32", 32, DKind.FLOAT),
        _t("F16", 16, DKind.FLOAT),
        _t("BF16", 16, DKind.FLOAT),
        _t("F8_E4M3", 8, DKind.FLOAT),
        _t("F8_E5M2", 8, DKind.FLOAT),
        _t("F8_E4M3FNUZ", 8, DKind.FLOAT),
        _t("F8_E5M2FNUZ", 8, DKind.FLOAT),
        _t("F8_E8M0", 8, DKind.FLOAT),
        _t("F6_E2M3", 6, DKind.FLOAT),
        _t("F6_E3M2", 6, DKind.FLOAT),
        _t("F4", 4, DKind.FLOAT),
        _t("I64", 64, DKind.INT),
        _t("I32", 32, DKind.INT),
        _t("I16", 16, DKind.INT),
        _t("I8", 8, DKind.INT),
        _t("I4", 4, DKind.INT),
        _t("U64", 64, DKind.UINT),
        _t("U32", 32, DKind.UINT),
        _t("U16", 16, DKind.UINT),
        _t("U8", 8, DKind.UINT),
        _t("BOOL", 8, DKind.BOOL),
        _t("C64", 64, DKind.COMPLEX),
        _t("C128", 128, DKind.COMPLEX),
        _t("QI8", 8, DKind.QUANT),
        _t("QU8", 8, DKind.QUANT),
        _t("QI32", 32, DKind.QUANT),
    ]
)

# numpy dtype.str without the byte-order character (kind + itemsize) -> canonical name.
NUMPY_DTYPES: dict[str, str] = {
    "f8": "F64",
    "f4": "F32",
    "f2": "F16",
    "i8": "I64",
    "i4": "I32",
    "i2": "I16",
    "i1": "I8",
    "u8": "U64",
    "u4": "U32",
    "u2": "U16",
    "u1": "U8",
    "b1": "BOOL",
    "c8": "C64",
    "c16": "C128",
}

# TensorFlow DataType enum (types.proto, TF 2.21) -> (canonical name, bytes per element as a TensorBundle stores
# it). TensorFlow stores its 4- and 2-bit types one element per byte. Strings, resources and variants have no
# fixed size (opaque names).
TF_DTYPES: dict[int, tuple[str, int]] = {
    1: ("F32", 4),
    2: ("F64", 8),
    3: ("I32", 4),
    4: ("U8", 1),
    5: ("I16", 2),
    6: ("I8", 1),
    7: ("TF_STRING", 0),
    8: ("C64", 8),
    9: ("I64", 8),
    10: ("BOOL", 1),
    11: ("QI8", 1),
    12: ("QU8", 1),
    13: ("QI32", 4),
    14: ("BF16", 2),
    15: ("QI16", 2),
    16: ("QU16", 2),
    17: ("U16", 2),
    18: ("C128", 16),
    19: ("F16", 2),
    20: ("TF_RESOURCE", 0),
    21: ("TF_VARIANT", 0),
    22: ("U32", 4),
    23: ("U64", 8),
    24: ("F8_E5M2", 1),
    25: ("F8_E4M3", 1),
    26: ("F8_E4M3FNUZ", 1),
    27: ("F8_E4M3B11FNUZ", 1),
    28: ("F8_E5M2FNUZ", 1),
    29: ("I4", 1),
    30: ("U4", 1),
    31: ("I2", 1),
    32: ("U2", 1),
    33: ("F4", 1),
}
DTYPES.update(
    dict(
        [
            _t("QI16", 16, DKind.QUANT),
            _t("QU16", 16, DKind.QUANT),
            _t("F8_E4M3B11FNUZ", 8, DKind.FLOAT),
            _t("U4", 4, DKind.UINT),
            _t("I2", 2, DKind.INT),
            _t("U2", 2, DKind.UINT),
            # bitsandbytes' 4-bit values (NormalFloat4 and its FP4), packed two a byte, scaled by block scales held
            # apart (`inspector.quantized`)
            _t("NF4", 4, DKind.QUANT),
            _t("BNB_FP4", 4, DKind.QUANT),
        ]
    )
)


def lookup(name: str) -> DType | None:
    """The canonical dtype of that name, or None for opaque and unknown ones."""
    return DTYPES.get(name)


def numpy_code(code: str) -> tuple[str, int] | None:
    """The canonical dtype and itemsize of a numpy type code ('f4', 'b1'; its byte order apart), or None for one of
    no canonical dtype (strings, objects, structured types)."""
    name = NUMPY_DTYPES.get(code)
    return None if name is None else (name, DTYPES[name].bits // 8)


def nbytes_for(name: str, n_elements: int) -> int | None:
    """Bytes that ``n_elements`` of a canonical dtype occupy, or None when the dtype is opaque."""
    dt = DTYPES.get(name)
    if dt is None:
        return None
    return -(-n_elements * dt.bits // (8 * dt.block))


# ggml tensor types (GGUF): type id -> (canonical name, elements per block, bytes per block). From gguf-py 0.19.0
# `GGMLQuantizationType` and `GGML_QUANT_SIZES`; ids 4, 5 (Q4_2, Q4_3) and 31-33, 36-38 were removed upstream.
GGML_TYPES: dict[int, tuple[str, int, int]] = {
    0: ("F32", 1, 4),
    1: ("F16", 1, 2),
    2: ("Q4_0", 32, 18),
    3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24),
    8: ("Q8_0", 32, 34),
    9: ("Q8_1", 32, 40),
    10: ("Q2_K", 256, 84),
    11: ("Q3_K", 256, 110),
    12: ("Q4_K", 256, 144),
    13: ("Q5_K", 256, 176),
    14: ("Q6_K", 256, 210),
    15: ("Q8_K", 256, 292),
    16: ("IQ2_XXS", 256, 66),
    17: ("IQ2_XS", 256, 74),
    18: ("IQ3_XXS", 256, 98),
    19: ("IQ1_S", 256, 50),
    20: ("IQ4_NL", 32, 18),
    21: ("IQ3_S", 256, 110),
    22: ("IQ2_S", 256, 82),
    23: ("IQ4_XS", 256, 136),
    24: ("I8", 1, 1),
    25: ("I16", 1, 2),
    26: ("I32", 1, 4),
    27: ("I64", 1, 8),
    28: ("F64", 1, 8),
    29: ("IQ1_M", 256, 56),
    30: ("BF16", 1, 2),
    34: ("TQ1_0", 256, 54),
    35: ("TQ2_0", 256, 66),
    39: ("MXFP4", 32, 17),
    40: ("NVFP4", 64, 36),
    41: ("Q1_0", 128, 18),
}
# The block-quantized ones join the canonical table: `bits` covers one block of `block` elements.
DTYPES.update(
    {name: DType(name, size * 8, DKind.QUANT, block) for name, block, size in GGML_TYPES.values() if block > 1}
)

# ONNX TensorProto.DataType (onnx 1.23.2) -> (canonical name, the typed field holding the values when there is no
# raw_data: 4 float_data, 5 int32_data, 6 string_data, 7 int64_data, 10 double_data, 11 uint64_data).
ONNX_TYPES: dict[int, tuple[str, int]] = {
    1: ("F32", 4),
    2: ("U8", 5),
    3: ("I8", 5),
    4: ("U16", 5),
    5: ("I16", 5),
    6: ("I32", 5),
    7: ("I64", 7),
    8: ("STRING", 6),
    9: ("BOOL", 5),
    10: ("F16", 5),
    11: ("F64", 10),
    12: ("U32", 11),
    13: ("U64", 11),
    14: ("C64", 4),
    15: ("C128", 10),
    16: ("BF16", 5),
    17: ("F8_E4M3", 5),
    18: ("F8_E4M3FNUZ", 5),
    19: ("F8_E5M2", 5),
    20: ("F8_E5M2FNUZ", 5),
    21: ("U4", 5),
    22: ("I4", 5),
    23: ("F4", 5),
    24: ("F8_E8M0", 5),
    25: ("U2", 5),
    26: ("I2", 5),
    27: ("F6_E2M3", 5),
    28: ("F6_E3M2", 5),
}
# sub-byte integer types ONNX has and the table above lacks, and the widths MLX's quantization packs (3, 5, 6 bits)
DTYPES.update({"U4": DType("U4", 4, DKind.UINT), "U2": DType("U2", 2, DKind.UINT), "I2": DType("I2", 2, DKind.INT)})
DTYPES.update({f"U{bits}": DType(f"U{bits}", bits, DKind.UINT) for bits in (3, 5, 6)})

# TensorFlow Lite TensorType (schema.fbs, TF 2.21) -> canonical name. Strings (TF Lite's own offsets-and-bytes
# layout), resources and variants have no fixed size (opaque names); INT4, UINT4 and INT2 constants are packed.
TFLITE_TYPES: dict[int, str] = {
    0: "F32",
    1: "F16",
    2: "I32",
    3: "U8",
    4: "I64",
    5: "STRING",
    6: "BOOL",
    7: "I16",
    8: "C64",
    9: "I8",
    10: "F64",
    11: "C128",
    12: "U64",
    13: "TF_RESOURCE",
    14: "TF_VARIANT",
    15: "U32",
    16: "U16",
    17: "I4",
    18: "BF16",
    19: "I2",
    20: "U4",
}

# numpy's `dtype.name` (with ml_dtypes' types, as jax names them) -> (canonical name, bytes per element as numpy
# holds it): the dtype names flax's msgpack arrays carry (`flax.serialization._ndarray_to_bytes`). ml_dtypes holds its
# 2-, 4- and 6-bit types a byte an element.
FLAX_DTYPES: dict[str, tuple[str, int]] = {
    "float64": ("F64", 8), "float32": ("F32", 4), "float16": ("F16", 2), "bfloat16": ("BF16", 2),
    "int64": ("I64", 8), "int32": ("I32", 4), "int16": ("I16", 2), "int8": ("I8", 1),
    "uint64": ("U64", 8), "uint32": ("U32", 4), "uint16": ("U16", 2), "uint8": ("U8", 1),
    "bool": ("BOOL", 1), "complex64": ("C64", 8), "complex128": ("C128", 16),
    "float8_e4m3fn": ("F8_E4M3", 1), "float8_e5m2": ("F8_E5M2", 1), "float8_e4m3fnuz": ("F8_E4M3FNUZ", 1),
    "float8_e5m2fnuz": ("F8_E5M2FNUZ", 1), "float8_e4m3b11fnuz": ("F8_E4M3B11FNUZ", 1),
    "float8_e8m0fnu": ("F8_E8M0", 1),
    "int4": ("I4", 1), "uint4": ("U4", 1), "int2": ("I2", 1), "uint2": ("U2", 1),
    "float4_e2m1fn": ("F4", 1), "float6_e2m3fn": ("F6_E2M3", 1), "float6_e3m2fn": ("F6_E3M2", 1),
}  # fmt: skip
