"""The inert values the restricted pickle reader builds, and the errors it raises.

A GLOBAL becomes a `Global`; a call or construction a `Call` that only records its arguments and state;
torch storages and tensors become `StorageRef` and `TensorRef` records. Keys and names taken from a
pickle go through `safe_key` and `key_name`: a pickle can share one tuple many times (a 1 KB file can
hold a key with 2^100 leaves), so such values are never hashed in full nor turned into strings.
"""

from __future__ import annotations

from inspector.recordtype import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_KEY_NODES = 256  # tuples with more parts than this (counted with repetition) are not hashed
MAX_KEY_DEPTH = 16
MAX_NAME = 200  # characters of a key or callable kept in names and messages


class PickleError(Exception):
    """The pickle stream is malformed or beyond a cap (the caller turns this into a FormatError).

    Attributes:
        unsafe: what the part read so far would have called (evidence kept for the verdict).
    """

    def __init__(self, reason: str, unsafe: frozenset[str] = frozenset()) -> None:
        super().__init__(reason)
        self.unsafe = unsafe


class EndOfData(PickleError):
    """The bytes end (or a frame ends) before the opcode does: no reading can go on."""


class CapError(PickleError):
    """A cap on opcodes, stack, memo, marks or line length: a second, lenient reading would hit it too."""


def refuse_state(self: object, state: object) -> None:
    """BUILD on one of these records: the C unpickler (`loaders._pickle_fast`) would set its fields; refused."""
    raise PickleError(f"BUILD on a {type(self).__name__}")


@record(frozen=True, slots=True)
class Global:
    module: str
    name: str

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.name}"


@record(eq=False, slots=True)
class Call:
    """An object the pickle would have built by calling `func`; kept inert."""

    func: Any
    args: tuple[Any, ...]
    state: Any = None
    items: list[Any] = field(default_factory=list)  # APPEND/SETITEM on the object
    newobj: bool = False  # NEWOBJ: constructed through cls.__new__ rather than called


@record(frozen=True, slots=True)
class StorageRef:
    key: str
    dtype: str  # canonical dtype of the storage type
    itemsize: int
    location: str
    numel: int  # elements of the storage type
    view: tuple[str, int, int] | None = None  # legacy: (view key, offset, size)
    __setstate__ = refuse_state

    @property
    def nbytes(self) -> int:
        return self.numel * self.itemsize


@record(eq=False, slots=True)
class TensorRef:
    storage: StorageRef | None  # None: meta tensor (no data)
    offset: int  # in elements of `dtype`
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str
    is_parameter: bool = False
    requires_grad: bool = False
    attributes: bool = False  # a state set Python attributes on it (`_rebuild_from_type_v2`): methods the pickle chose
    __setstate__ = refuse_state


# torch storage classes and dtypes -> canonical dtype names
STORAGE_DTYPES = {
    "FloatStorage": "F32",
    "DoubleStorage": "F64",
    "HalfStorage": "F16",
    "BFloat16Storage": "BF16",
    "LongStorage": "I64",
    "IntStorage": "I32",
    "ShortStorage": "I16",
    "CharStorage": "I8",
    "ByteStorage": "U8",
    "BoolStorage": "BOOL",
    "ComplexFloatStorage": "C64",
    "ComplexDoubleStorage": "C128",
    "QInt8Storage": "QI8",
    "QUInt8Storage": "QU8",
    "QInt32Storage": "QI32",
    "UntypedStorage": "U8",
}
TORCH_DTYPES = {
    "float32": "F32",
    "float": "F32",
    "float64": "F64",
    "double": "F64",
    "float16": "F16",
    "half": "F16",
    "bfloat16": "BF16",
    "int64": "I64",
    "long": "I64",
    "int32": "I32",
    "int": "I32",
    "int16": "I16",
    "short": "I16",
    "int8": "I8",
    "uint8": "U8",
    "bool": "BOOL",
    "uint16": "U16",
    "uint32": "U32",
    "uint64": "U64",
    "float8_e4m3fn": "F8_E4M3",
    "float8_e5m2": "F8_E5M2",
    "float8_e4m3fnuz": "F8_E4M3FNUZ",
    "float8_e5m2fnuz": "F8_E5M2FNUZ",
    "float8_e8m0fnu": "F8_E8M0",
    "complex64": "C64",
    "cfloat": "C64",
    "complex128": "C128",
    "cdouble": "C128",
    "qint8": "QI8",
    "quint8": "QU8",
    "qint32": "QI32",
}
ITEMSIZES = {
    "F64": 8,
    "I64": 8,
    "U64": 8,
    "C64": 8,
    "C128": 16,
    "F32": 4,
    "I32": 4,
    "U32": 4,
    "QI32": 4,
    "F16": 2,
    "BF16": 2,
    "I16": 2,
    "U16": 2,
}


def itemsize(dtype: str) -> int:
    return ITEMSIZES.get(dtype, 1)


@record(frozen=True, slots=True)
class DTypeRef:
    dtype: str
    qualname: str = field(default="", compare=False)
    __setstate__ = refuse_state


@record(frozen=True, slots=True)
class StorageType:
    dtype: str
    qualname: str = field(default="", compare=False)
    itemsize: int = field(default=0, compare=False)  # ITEMSIZES' of `dtype` (`resolve`: once a type), 0: not told
    __setstate__ = refuse_state


@record(frozen=True, slots=True)
class Blob:
    """A bytes or text value larger than `MAX_INLINE` bytes: passed over, never read into memory."""

    nbytes: int
    text: bool


class OpaqueKey:
    """A dict key or set member too large or deep to hash cheaply: compared by identity, named by type."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __str__(self) -> str:
        return f"<{type(self.value).__name__}>"


SCALAR_KEYS = (str, bytes, int, float, bool, complex, type(None), Global, StorageType, DTypeRef, Blob)


def _small(value: Any, budget: list[int], depth: int) -> bool:
    budget[0] -= 1
    if budget[0] < 0 or depth > MAX_KEY_DEPTH:
        return False
    if isinstance(value, (tuple, frozenset)):
        return all(_small(v, budget, depth + 1) for v in value)
    return isinstance(value, SCALAR_KEYS) or isinstance(value, (Call, TensorRef, OpaqueKey, StorageRef))


def safe_key(value: Any) -> Any:
    """`value` when it hashes cheaply (scalars, small tuples), else an `OpaqueKey` (identity)."""
    if isinstance(value, (str, int, float, type(None))):
        return value
    return value if _small(value, [MAX_KEY_NODES], 0) else OpaqueKey(value)


def key_name(value: Any) -> str:
    """A name for a key read from a pickle, never `str()` of a structure the pickle may share."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None or (isinstance(value, int) and value.bit_length() <= 64):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, bytes):
        return repr(value[:MAX_NAME])
    if isinstance(value, Global):
        return value.qualname[:MAX_NAME]
    if isinstance(value, OpaqueKey):
        return str(value)
    return f"<{type(value).__name__}>"


def callable_name(value: Any) -> str:
    """How a callable the pickle names is reported."""
    if isinstance(value, Global):
        return value.qualname[:MAX_NAME]
    if isinstance(value, (StorageType, DTypeRef)) and value.qualname:
        return value.qualname
    if isinstance(value, Call):
        return f"the result of {callable_name(value.func)}"
    return f"a {type(value).__name__}"


def short_error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:MAX_NAME]}"
