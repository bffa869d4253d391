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


def lookup(name: str) -> DType | None:
    """The canonical dtype of that name, or None for opaque and unknown ones."""
    return DTYPES.get(name)


def nbytes_for(name: str, n_elements: int) -> int | None:
    """Bytes that ``n_elements`` of a canonical dtype occupy, or None when the dtype is opaque."""
    dt = DTYPES.get(name)
    if dt is None:
        return None
    return -(-n_elements * dt.bits // (8 * dt.block))
