"""Element types: one canonical table, and per-format alias maps into it.

Canonical names follow safetensors (``F32``, ``BF16``, ``I64``...). Types without a fixed numeric
meaning (numpy strings, structured records, pickled objects) get a generated name such as
``VOID[24]`` and are sized by the loader.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class DKind(StrEnum):
    FLOAT = "float"
    INT = "int"
    UINT = "uint"
    BOOL = "bool"
    COMPLEX = "complex"
    QUANT = "quantized"
    OPAQUE = "opaque"


@dataclass(frozen=True, slots=True)
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
        ]
    )
)


def lookup(name: str) -> DType | None:
    """The canonical dtype of that name, or None for opaque and unknown ones."""
    return DTYPES.get(name)


def nbytes_for(name: str, n_elements: int) -> int | None:
    """Bytes that ``n_elements`` of a canonical dtype occupy, or None when the dtype is opaque."""
    dt = DTYPES.get(name)
    if dt is None:
        return None
    return -(-n_elements * dt.bits // (8 * dt.block))
