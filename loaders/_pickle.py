"""A restricted pickle reader: an opcode interpreter that builds inert values and never runs anything.

`pickle.load` resolves every GLOBAL by importing its module and calls whatever REDUCE, OBJ and INST
name. This reader does neither. A GLOBAL becomes a `Global` record; a call or construction produces
a `Call` record holding the arguments and state. Only the callables in `BUILDERS` (PyTorch's tensor
rebuild functions, TorchScript's list builders, containers, dtypes) are interpreted, by pure functions
of our own that return `TensorRef`s and plain Python values; the `TRAMPOLINES` (functions that call
one of their arguments) are interpreted only after checking that argument. What would run code is
listed in `unsafe`, by the rules of `loaders._pickle_policy`.

Frames are enforced as pure-Python `pickle._Unframer` enforces them: an opcode may not cross the end
of its frame, and a new frame may not start before the current one ends.

Bounded: the stack, memo, marks, line lengths and opcode count are capped, every length is checked
against the bytes left, and values used as dict keys or set members are hashed only when they are
small (a shared tuple nested 100 levels deep would otherwise hash for ever). When a pickle cannot be
finished, `PickleError.unsafe` still carries what it would have called (also scanned for in the
opcodes after the failure point), so evidence is never lost.
"""

from __future__ import annotations

import pickletools
import re
import struct
from _compat_pickle import IMPORT_MAPPING, NAME_MAPPING
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from loaders._pickle_policy import (
    INERT_CALLABLES,
    SAFE_ARRAY_TYPES,
    SAFE_BASES,
    SAFE_ENCODINGS,
    SAFE_FACTORIES,
    dunder_keys,
    is_dotted,
    is_unsafe_global,
)

# About 25 opcodes per tensor in a torch data.pkl, 0.3 us each: 5M is 200,000 tensors in under 2 seconds.
MAX_OPS = 5_000_000
MAX_STACK = 1_000_000
MAX_MEMO = 10_000_000
MAX_MARKS = 100_000
MAX_LINE = 1 << 20  # text opcodes (GLOBAL, INT, STRING...) end within this many bytes
MAX_KEY_NODES = 256  # tuples with more parts than this (counted with repetition) are not hashed
MAX_KEY_DEPTH = 16
MAX_NAME = 200  # characters of a key or callable kept in names and messages
MAX_SCAN_OPS = 2_000_000  # opcodes walked by the scan after a failure (about 0.3 s)
TEXT_GLOBAL = re.compile(rb"[ci]([A-Za-z_][\w.]{0,200})\n([A-Za-z_][\w.]{0,200})\n")  # GLOBAL / INST lines
READ_CHUNK = 1 << 16


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


@dataclass(frozen=True, slots=True)
class Global:
    module: str
    name: str

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.name}"


@dataclass(eq=False, slots=True)
class Call:
    """An object the pickle would have built by calling `func`; kept inert."""

    func: Any
    args: tuple[Any, ...]
    state: Any = None
    items: list[Any] = field(default_factory=list)  # APPEND/SETITEM on the object
    newobj: bool = False  # NEWOBJ: constructed through cls.__new__ rather than called


@dataclass(frozen=True, slots=True)
class StorageRef:
    key: str
    dtype: str  # canonical dtype of the storage type
    itemsize: int
    location: str
    numel: int  # elements of the storage type
    view: tuple[str, int, int] | None = None  # legacy: (view key, offset, size)

    @property
    def nbytes(self) -> int:
        return self.numel * self.itemsize


@dataclass(eq=False, slots=True)
class TensorRef:
    storage: StorageRef | None  # None: meta tensor (no data)
    offset: int  # in elements of `dtype`
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str
    is_parameter: bool = False
    requires_grad: bool = False


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


@dataclass(frozen=True, slots=True)
class DTypeRef:
    dtype: str
    qualname: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True)
class StorageType:
    dtype: str
    qualname: str = field(default="", compare=False)


class OpaqueKey:
    """A dict key or set member too large or deep to hash cheaply: compared by identity, named by type."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __str__(self) -> str:
        return f"<{type(self.value).__name__}>"


SCALAR_KEYS = (str, bytes, int, float, bool, complex, type(None), Global, StorageType, DTypeRef)


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


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:MAX_NAME]}"


def _tensor_v2(storage: Any, offset: Any, size: Any, stride: Any, requires_grad: Any = False, *rest: Any) -> TensorRef:
    if not isinstance(storage, StorageRef):
        raise PickleError("tensor rebuild without a storage")
    if not isinstance(offset, int):
        raise PickleError(f"tensor storage offset is a {type(offset).__name__}")
    return TensorRef(storage, offset, _ints(size), _ints(stride), storage.dtype, False, requires_grad is True)


def _tensor_v3(
    storage: Any, offset: Any, size: Any, stride: Any, requires_grad: Any, hooks: Any, dtype: Any, *rest: Any
) -> TensorRef:
    t = _tensor_v2(storage, offset, size, stride, requires_grad)
    if isinstance(dtype, DTypeRef):
        t.dtype = dtype.dtype
    return t


def _tensor_old(storage: Any, offset: Any, size: Any, stride: Any) -> TensorRef:
    return _tensor_v2(storage, offset, size, stride)


def _parameter(tensor: Any, requires_grad: Any = True, *rest: Any) -> Any:
    if isinstance(tensor, TensorRef):
        tensor.is_parameter = True
        tensor.requires_grad = requires_grad is True
    return tensor


def _meta(dtype: Any, size: Any, stride: Any, requires_grad: Any = False, *rest: Any) -> TensorRef:
    name = dtype.dtype if isinstance(dtype, DTypeRef) else "F32"
    return TensorRef(None, 0, _ints(size), _ints(stride), name, False, requires_grad is True)


def _qtensor(storage: Any, offset: Any, size: Any, stride: Any, *rest: Any) -> TensorRef:
    return _tensor_v2(storage, offset, size, stride)


def _ints(value: Any) -> tuple[int, ...]:
    if not isinstance(value, (tuple, list)) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise PickleError(f"expected a tuple of ints, got {type(value).__name__}")
    return tuple(value)


def _pairs(value: Any) -> dict[Any, Any]:
    """A dict from a dict or an iterable of pairs (what dict() and OrderedDict() accept)."""
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, (list, tuple)):
        return {safe_key(p[0]): p[1] for p in value if isinstance(p, (list, tuple)) and len(p) == 2}
    return {}


def _first(args: tuple[Any, ...]) -> Any:
    return args[0] if args else ()


def _device(*args: Any) -> str:
    return ":".join(key_name(a) for a in args[:2])


def _identity(value: Any = None, *rest: Any) -> Any:
    return value


def _collection(kind: type) -> Callable[..., Any]:
    def build(*args: Any) -> Any:
        items = _first(args)
        if not isinstance(items, (list, tuple, set, frozenset, str, bytes)):
            raise TypeError(f"{kind.__name__}() of a {type(items).__name__}")
        return kind(safe_key(v) for v in items) if kind in (set, frozenset) else kind(items)

    return build


def _range(*args: Any) -> tuple[Any, ...]:
    if not all(isinstance(a, int) for a in args[:3]):
        raise TypeError("range() of non-integers")
    return ("range", *args[:3])


def _bytes(*args: Any) -> bytes:
    """bytes(), bytes(b), bytes([ints]): never bytes(n), which would allocate n bytes."""
    value = _first(args)
    if value == ():
        return b""
    if isinstance(value, bytes):
        return value
    if isinstance(value, list) and all(isinstance(v, int) and 0 <= v < 256 for v in value):
        return bytes(value)
    raise TypeError(f"bytes() of a {type(value).__name__}")


def _bytearray(*args: Any) -> bytes:
    value = _first(args)
    if isinstance(value, str):
        return value.encode("latin1", "replace")
    return value if isinstance(value, bytes) else b""  # never bytearray(n): an int would allocate n bytes


# Callables the reader interprets itself, as pure functions of inert values (they run nothing of the file's).
BUILDERS: dict[str, Callable[..., Any]] = {
    "torch._utils._rebuild_tensor_v2": _tensor_v2,
    "torch._utils._rebuild_tensor_v3": _tensor_v3,
    "torch._utils._rebuild_tensor": _tensor_old,
    "torch._utils._rebuild_parameter": _parameter,
    "torch._utils._rebuild_meta_tensor_no_storage": _meta,
    "torch._utils._rebuild_qtensor": _qtensor,
    # TorchScript archives wrap typed lists and tagged values in these (torch/jit/_pickle.py): data only
    "torch.jit._pickle.build_intlist": _identity,
    "torch.jit._pickle.build_doublelist": _identity,
    "torch.jit._pickle.build_boollist": _identity,
    "torch.jit._pickle.build_tensorlist": _identity,
    "torch.jit._pickle.restore_type_tag": _identity,
    "collections.OrderedDict": lambda *a: _pairs(_first(a)),
    "builtins.dict": lambda *a: _pairs(_first(a)),
    "torch.Size": lambda *a: tuple(_first(a)),
    "torch.device": _device,
    "builtins.set": _collection(set),
    "builtins.frozenset": _collection(frozenset),
    "builtins.tuple": _collection(tuple),
    "builtins.list": _collection(list),
    "builtins.bytearray": _bytearray,
    "builtins.complex": lambda *a: complex(*(float(x) for x in a[:2] if isinstance(x, (int, float)))),
    "builtins.slice": lambda *a: ("slice", *a[:3]),
    "builtins.range": _range,
    "builtins.bytes": _bytes,
}
# Inert data placeholders a builder-free call may produce (kept as `Call`s, not flagged).
INERT_DATA = frozenset({"torch.jit._pickle.build_tensor_from_id"})


def resolve(g: Global) -> Any:
    """What a GLOBAL stands for: a storage type, a dtype, or the inert `Global` itself."""
    if g.module in ("torch", "torch.storage") and g.name in STORAGE_DTYPES:
        return StorageType(STORAGE_DTYPES[g.name], g.qualname)
    if g.module == "torch" and g.name.endswith("Tensor") and g.name[:-6] + "Storage" in STORAGE_DTYPES:
        return StorageType(STORAGE_DTYPES[g.name[:-6] + "Storage"], g.qualname)  # tar format tensor types
    if g.module == "torch" and g.name in TORCH_DTYPES:
        return DTypeRef(TORCH_DTYPES[g.name], g.qualname)
    return g


class Reader:
    """Bytes to interpret: a buffer, or a window of a file read lazily in chunks (legacy torch files).

    Frames (protocol 4+) are enforced as `pickle._Unframer` does: reads inside a frame may not cross its
    end, a line must end inside its frame, and FRAME may only start once the current frame is used up.
    """

    def __init__(
        self, data: bytes | None = None, fetch: Callable[[int, int], bytes] | None = None, start: int = 0, end: int = 0
    ) -> None:
        self._fetch = fetch
        self.buf = data or b""
        self.base = start  # file offset of buf[0]
        self.start = start
        self.pos = start
        self.end = start + len(self.buf) if data is not None else end
        self.frame_end = -1  # end of the current frame, -1 outside frames
        self.limit = self.end  # reads stop here: the frame end inside a frame
        self.frames = True  # False: FRAME lengths ignored, as CPython's C unpickler does
        self.frame_error = False  # reading stopped at a frame rule the C unpickler does not enforce

    def restart(self) -> Reader:
        """A fresh reader over the same pickle that ignores frames, as the C unpickler does."""
        data = self.buf if self._fetch is None else None
        fresh = Reader(data, self._fetch, self.start, self.end)
        fresh.frames = False
        return fresh

    def _fill(self, upto: int) -> None:
        """Make the buffer hold the bytes up to `upto` (not past `end`)."""
        have = self.base + len(self.buf)
        if upto <= have:
            return
        if self._fetch is None:
            raise EndOfData("pickle data ends early")
        want = min(max(upto - have, READ_CHUNK), self.end - have)
        self.buf = self.buf[self.pos - self.base :] + self._fetch(have, want)
        self.base = self.pos

    def _check(self, n: int) -> None:
        if self.frame_end >= 0 and self.pos == self.frame_end and n:
            self.frame_end, self.limit = -1, self.end  # the frame is used up: read on outside frames
        if self.pos + n > self.limit:
            if self.frame_end >= 0:
                self.frame_error = True
                raise EndOfData(f"an opcode crosses the end of its frame at byte {self.frame_end:,}")
            raise EndOfData(f"pickle data ends early: {n:,} bytes wanted at byte {self.pos:,}")

    def read(self, n: int) -> bytes:
        start = self.pos - self.base
        if self.pos + n <= self.limit and start + n <= len(self.buf):  # the common case: already buffered
            self.pos += n
            return self.buf[start : start + n]
        self._check(n)
        self._fill(self.pos + n)
        start = self.pos - self.base
        self.pos += n
        return self.buf[start : start + n]

    def readline(self) -> bytes:
        self._check(1)
        stop = min(self.limit, self.pos + MAX_LINE)
        searched = self.pos
        while True:
            self._fill(min(stop, searched + READ_CHUNK))
            have = min(self.base + len(self.buf), stop)
            at = self.buf.find(b"\n", searched - self.base, have - self.base)
            if at >= 0:
                line = self.buf[self.pos - self.base : at + 1]
                self.pos = self.base + at + 1
                return line
            if have >= stop:
                if stop == self.frame_end:
                    self.frame_error = True
                    raise EndOfData(f"a text opcode crosses the end of its frame at byte {self.frame_end:,}")
                raise EndOfData(f"unterminated or over-long text opcode at byte {self.pos:,}")
            searched = have

    def frame(self, n: int) -> None:
        if not self.frames:
            return
        if (self.frame_end >= 0 and self.pos != self.frame_end) or self.pos + n > self.end:
            self.frame_error = True
            raise EndOfData(f"a frame of {n:,} bytes at byte {self.pos:,} overlaps the current frame or the end")
        self.frame_end = self.limit = self.pos + n

    def window(self, limit: int) -> bytes:
        """The pickle's bytes from its start (at most `limit`), for the scan after a failure."""
        n = min(self.end - self.start, limit)
        if self._fetch is None:
            return self.buf[self.start - self.base : self.start - self.base + n]
        return self._fetch(self.start, n)


@dataclass
class Result:
    value: Any
    globals: set[str]
    unsafe: set[str]
    end: int  # position after STOP


class PickleMachine:
    """Interpret one pickle (up to its STOP) into inert values."""

    def __init__(self, reader: Reader, persistent_load: Callable[[Any], Any], lenient: bool = False) -> None:
        self.r = reader
        self.persistent_load = persistent_load
        self.lenient = lenient  # go on past what CPython's C unpickler might accept (a second reading, for evidence)
        self.stack: list[Any] = []
        self.marks: list[int] = []
        self.memo: dict[int, Any] = {}
        self.globals: set[str] = set()
        self.unsafe: set[str] = set()

    # -- helpers ------------------------------------------------------------------------------

    def flag(self, what: str) -> None:
        self.unsafe.add(what)

    def push(self, value: Any) -> None:
        if len(self.stack) >= MAX_STACK:
            raise CapError(f"pickle stack beyond {MAX_STACK:,} items")
        self.stack.append(value)

    def pop(self) -> Any:
        if not self.stack:
            if self.lenient:
                return None
            raise PickleError("pickle stack underflow")
        return self.stack.pop()

    def pop_mark(self) -> list[Any]:
        if not self.marks:
            if self.lenient:
                return []
            raise PickleError("pickle MARK missing")
        at = self.marks.pop()
        items = self.stack[at:]
        del self.stack[at:]
        return items

    def top(self) -> Any:
        if not self.stack:
            if self.lenient:
                return None
            raise PickleError("pickle stack underflow")
        return self.stack[-1]

    def memo_put(self, index: int) -> None:
        if len(self.memo) >= MAX_MEMO:
            raise CapError("pickle memo too large")
        self.memo[index] = self.top()

    def memo_get(self, index: int) -> None:
        if index not in self.memo:
            raise PickleError(f"pickle memo key {index} missing")
        self.push(self.memo[index])

    def global_(self, module: str, name: str) -> None:
        # protocols 0-2 write Python 2 names ('__builtin__', 'commands'): map them as pickle itself does (a data table)
        module, name = NAME_MAPPING.get((module, name), (IMPORT_MAPPING.get(module, module), name))
        g = Global(module, name)
        self.globals.add(g.qualname[:MAX_NAME])
        if is_dotted(name):
            self.flag(f"{g.qualname[:MAX_NAME]} (a dotted global reaches any module)")
        elif is_unsafe_global(module, name):
            self.flag(g.qualname[:MAX_NAME])
        self.push(resolve(g))

    def call(self, func: Any, args: tuple[Any, ...]) -> Any:
        """What calling `func(*args)` (REDUCE, OBJ, INST) gives; flags every call that could run code."""
        if isinstance(func, Global):
            name = func.qualname
            trampoline = TRAMPOLINES.get(name)
            if trampoline is not None:
                return trampoline(self, args)
            builder = BUILDERS.get(name)
            if builder is not None:
                try:
                    return builder(*args)
                except PickleError:
                    raise
                except Exception as exc:  # our own builder on odd arguments: keep the call inert
                    return Call(func, args, state=f"not rebuilt: {_short(exc)}")
            if name not in INERT_CALLABLES and name not in INERT_DATA:
                self.flag(name[:MAX_NAME])  # a call into an unknown function is what code execution looks like
            return Call(func, args)
        if not isinstance(func, (StorageType, DTypeRef)):
            self.flag(f"<call of {callable_name(func)}>")
        return Call(func, args)

    def new(self, cls: Any, args: tuple[Any, ...]) -> Any:
        """NEWOBJ: `cls.__new__(cls, *args)` constructs without calling; kept as a placeholder."""
        return Call(cls, args, newobj=True)

    # -- the loop -----------------------------------------------------------------------------

    def load(self) -> Result:
        try:
            return self._run()
        except PickleError as exc:
            raise PickleError(str(exc), frozenset(self.unsafe | exc.unsafe | self._evidence(exc))) from exc
        except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError, struct.error,
                RecursionError, MemoryError) as exc:  # fmt: skip
            evidence = frozenset(self.unsafe | self._evidence(exc))
            raise PickleError(f"malformed pickle: {_short(exc)}", evidence) from exc

    def _evidence(self, failure: BaseException) -> set[str]:
        """What the pickle would call beyond the failure point: a lenient second reading, and a scan.

        CPython's C unpickler ignores frame boundaries and accepts odd text (``I\\x00``, ``I0x10``) that
        this reader refuses; so unless a cap stopped it, the pickle is read again frame-blind, going on
        past any opcode it cannot make sense of, and every call it then meets is evidence.
        """
        found = self._scan()
        if not isinstance(failure, CapError):
            again = PickleMachine(self.r.restart(), self.persistent_load, lenient=True)
            try:
                again._run()
            except Exception as exc:  # noqa: BLE001 - the second reading only adds evidence
                found |= getattr(exc, "unsafe", frozenset())
            found |= again.unsafe
        return found

    def _run(self) -> Result:
        r = self.r
        for _ in range(MAX_OPS):
            op = r.read(1)
            if op == STOP:
                return Result(self.pop(), self.globals, self.unsafe, r.pos)
            handler = OPS.get(op)
            if handler is None:
                raise PickleError(f"unsupported pickle opcode {op!r} at byte {r.pos - 1:,}")
            if not self.lenient:
                handler(self, r)
                continue
            try:
                handler(self, r)
            except (EndOfData, CapError):
                raise
            except (PickleError, ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError,
                    struct.error, UnicodeDecodeError):  # fmt: skip
                if op in VALUE_OPS:
                    self.push(None)  # a value the reader could not decode: the C unpickler may have read one
        raise CapError(f"pickle longer than {MAX_OPS:,} opcodes")

    def _scan(self) -> set[str]:
        """Unsafe globals named anywhere in this pickle, found by a plain opcode walk (after a failure)."""
        try:
            data = self.r.window(MAX_OPS * 4)
        except Exception:  # noqa: BLE001 - the scan only adds evidence; its own failure adds none
            return set()
        return scan(data)


def scan(data: bytes) -> set[str]:
    """Globals in a pickle's opcodes that are unsafe to name, and INST calls, without interpreting it.

    Used when the interpreter cannot finish: the stream may still name what CPython's more lenient
    unpickler would have reached. STACK_GLOBAL's names are the last two strings pushed or fetched
    (opcode walk, the first `MAX_SCAN_OPS`); GLOBAL and INST lines are found in all of it by a regex.
    """
    found = {f"{m.decode('latin1')}.{n.decode('latin1')}"[:MAX_NAME] for m, n in TEXT_GLOBAL.findall(data)
             if is_unsafe_global(m.decode("latin1"), n.decode("latin1"))}  # fmt: skip
    strings: list[str] = []
    memo: dict[int, str] = {}
    last: str | None = None
    try:
        for n, (op, arg, _pos) in enumerate(pickletools.genops(data)):
            if n > MAX_SCAN_OPS:
                break
            name = op.name
            if name in ("GLOBAL", "INST") and isinstance(arg, str):
                module, _, attr = arg.partition(" ")
                if is_unsafe_global(module, attr) or (name == "INST" and f"{module}.{attr}" not in INERT_CALLABLES):
                    found.add(f"{module}.{attr}"[:MAX_NAME])
            elif name == "STACK_GLOBAL" and len(strings) >= 2 and is_unsafe_global(strings[-2], strings[-1]):
                found.add(f"{strings[-2]}.{strings[-1]}"[:MAX_NAME])
            if isinstance(arg, str) and name.endswith(("UNICODE", "UNICODE8", "STRING")):
                last = arg
                strings = [*strings[-1:], arg]
            elif name in ("PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE") and last is not None:
                memo[arg if isinstance(arg, int) else len(memo)] = last
            elif name in ("GET", "BINGET", "LONG_BINGET") and isinstance(arg, int) and arg in memo:
                strings = [*strings[-1:], memo[arg]]
            else:
                last = None if name not in ("PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE") else last
    except Exception:  # noqa: BLE001, S110 - a malformed tail ends the scan, keeping what was found
        pass
    return found


# -- trampolines: functions that call one of their arguments ---------------------------------------


def _pad(args: tuple[Any, ...], n: int) -> tuple[Any, ...]:
    return tuple(args[:n]) + (None,) * (n - len(args))


def _check_state(m: PickleMachine, state: Any, target: str) -> None:
    for key in dunder_keys(state):
        m.flag(f"setattr({target}, {key[:MAX_NAME]!r}) by its state")


def _from_type(m: PickleMachine, args: tuple[Any, ...]) -> Any:
    """torch._tensor._rebuild_from_type_v2(func, new_type, args, state) calls func(*args), then sets state."""
    func, new_type, inner, state = _pad(args, 4)
    _check_state(m, state, callable_name(new_type))
    return m.call(func, tuple(inner) if isinstance(inner, (tuple, list)) else (inner,))


def _parameter_with_state(m: PickleMachine, args: tuple[Any, ...]) -> Any:
    """torch._utils._rebuild_parameter_with_state(data, requires_grad, hooks, state): setattr for each key."""
    data, requires_grad, _hooks, state = _pad(args, 4)
    _check_state(m, state, "a Parameter")
    return _parameter(data, requires_grad)


def _reconstructor(m: PickleMachine, args: tuple[Any, ...]) -> Any:
    """copyreg._reconstructor(cls, base, state) calls base.__new__(cls, state) and base.__init__(obj, state)."""
    cls, base, _state = _pad(args, 3)
    if not (isinstance(base, Global) and base.qualname in SAFE_BASES):
        m.flag(f"{callable_name(base)}.__init__ (called by copyreg._reconstructor)")
    return Call(cls, (), newobj=True)


def _np_reconstruct(m: PickleMachine, args: tuple[Any, ...]) -> Any:
    """numpy's _reconstruct(subtype, shape, dtype) runs ndarray.__new__(subtype), with the subtype's hooks."""
    subtype = _pad(args, 1)[0]
    if not (isinstance(subtype, Global) and subtype.qualname in SAFE_ARRAY_TYPES):
        m.flag(f"{callable_name(subtype)} (array type built by numpy _reconstruct)")
    return Call(Global("numpy.core.multiarray", "_reconstruct"), args)


def _defaultdict(m: PickleMachine, args: tuple[Any, ...]) -> Any:
    """collections.defaultdict(factory) calls factory() for every missing key, long after loading."""
    factory = _pad(args, 1)[0]
    if factory is not None and not (isinstance(factory, Global) and factory.qualname in SAFE_FACTORIES):
        m.flag(f"{callable_name(factory)} (a defaultdict factory)")
    return {}


def _encode(m: PickleMachine, args: tuple[Any, ...]) -> Any:
    """_codecs.encode(text, encoding): torch writes bytes as latin1 text; other codecs import modules."""
    text, encoding = _pad(args, 2)
    if encoding is None:
        encoding = "utf-8"
    if not isinstance(encoding, str) or encoding.lower() not in SAFE_ENCODINGS:
        m.flag(f"_codecs.encode with the codec {key_name(encoding)[:MAX_NAME]!r}")
        return Call(Global("_codecs", "encode"), args)
    if not isinstance(text, str):
        return Call(Global("_codecs", "encode"), args)
    return text.encode("latin1" if encoding.lower() in ("latin1", "latin-1", "iso-8859-1") else "utf-8", "replace")


SCALARS = (str, int, float, bool, bytes, type(None))


def _scalar(m: PickleMachine, args: tuple[Any, ...], kind: str) -> Any:
    """int(x), float(x), str(x), bool(x): inert on scalars; on an object they call its __int__, __str__..."""
    if not all(isinstance(a, SCALARS) for a in args):
        m.flag(f"builtins.{kind} of {callable_name(next(a for a in args if not isinstance(a, SCALARS)))}")
    return Call(Global("builtins", kind), args)


def _type(m: PickleMachine, args: tuple[Any, ...]) -> Any:
    """type(x) names a class (pickle writes NoneType so); type(name, bases, dict) creates one, running base hooks."""
    if len(args) != 1:
        m.flag("builtins.type with 3 arguments (creates a class)")
    return Call(Global("builtins", "type"), args)


TRAMPOLINES: dict[str, Callable[[PickleMachine, tuple[Any, ...]], Any]] = {
    **{f"builtins.{kind}": partial(_scalar, kind=kind) for kind in ("int", "float", "str", "bool")},
    "builtins.type": _type,
    "torch._tensor._rebuild_from_type_v2": _from_type,
    "torch._tensor._rebuild_from_type": _from_type,
    "torch._utils._rebuild_parameter_with_state": _parameter_with_state,
    "copyreg._reconstructor": _reconstructor,
    "numpy.core.multiarray._reconstruct": _np_reconstruct,
    "numpy._core.multiarray._reconstruct": _np_reconstruct,
    "collections.defaultdict": _defaultdict,
    "_codecs.encode": _encode,
}


# -- opcodes ----------------------------------------------------------------------------------------------


def _n(fmt: str) -> Callable[[Reader], int]:
    size = struct.calcsize(fmt)
    return lambda r: int(struct.unpack(fmt, r.read(size))[0])


_U1, _U2, _U4, _I4, _U8 = _n("<B"), _n("<H"), _n("<I"), _n("<i"), _n("<Q")


def _text(r: Reader, n: int) -> str:
    return r.read(n).decode("utf-8", "surrogatepass")


def _mark(u: PickleMachine, r: Reader) -> None:
    if len(u.marks) >= MAX_MARKS:
        raise CapError("too many pickle MARKs")
    u.marks.append(len(u.stack))


def _setitems(u: PickleMachine, items: list[Any]) -> None:
    target = u.top()
    pairs = list(zip(items[::2], items[1::2], strict=False))
    if isinstance(target, dict):
        for k, v in pairs:
            target[safe_key(k)] = v
    elif isinstance(target, Call):
        target.items.extend(pairs)
    else:
        raise PickleError(f"SETITEMS on a {type(target).__name__}")


def _appends(u: PickleMachine, items: list[Any]) -> None:
    target = u.top()
    if isinstance(target, list):
        target.extend(items)
    elif isinstance(target, Call):
        target.items.extend(items)
    elif isinstance(target, set):
        target.update(safe_key(v) for v in items)
    else:
        raise PickleError(f"APPENDS on a {type(target).__name__}")


def _build(u: PickleMachine, r: Reader) -> None:
    """BUILD runs target.__setstate__(state) or sets attributes: unsafe on a class, module or function."""
    state = u.pop()
    target = u.top()
    if isinstance(target, (Global, StorageType, DTypeRef)):
        u.flag(f"setattr on {callable_name(target)} (BUILD on a class, module or function)")
    _check_state(u, state, callable_name(target.func) if isinstance(target, Call) else type(target).__name__)
    if isinstance(target, Call):
        target.state = state
    elif isinstance(target, dict) and isinstance(state, dict):
        target.update(state)
    # BUILD on tensors (their Python attributes) and other values: state kept nowhere, nothing runs


def _args(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _reduce(u: PickleMachine, r: Reader) -> None:
    args = u.pop()
    func = u.pop()
    u.push(u.call(func, _args(args)))


def _newobj(u: PickleMachine, r: Reader) -> None:
    args = u.pop()
    cls = u.pop()
    u.push(u.new(cls, tuple(args) if isinstance(args, (tuple, list)) else ()))


def _newobj_ex(u: PickleMachine, r: Reader) -> None:
    u.pop()  # kwargs
    _newobj(u, r)


def _obj(u: PickleMachine, r: Reader) -> None:
    """OBJ calls klass(*args) (pickle._instantiate): a call like REDUCE."""
    items = u.pop_mark()
    if not items:
        raise PickleError("OBJ without a class")
    u.push(u.call(items[0], tuple(items[1:])))


def _inst(u: PickleMachine, r: Reader) -> None:
    """INST names a class inline and calls it with the items above the mark: a call like REDUCE."""
    module = r.readline().decode("utf-8", "replace").strip()
    name = r.readline().decode("utf-8", "replace").strip()
    args = u.pop_mark()
    u.global_(module, name)
    u.push(u.call(u.pop(), tuple(args)))


def _stack_global(u: PickleMachine, r: Reader) -> None:
    name, module = u.pop(), u.pop()
    if not isinstance(module, str) or not isinstance(name, str):
        raise PickleError("STACK_GLOBAL with non-string names")
    u.global_(module, name)


def _global(u: PickleMachine, r: Reader) -> None:
    module = r.readline().decode("utf-8", "replace").strip()
    name = r.readline().decode("utf-8", "replace").strip()
    u.global_(module, name)


def _long(data: bytes) -> int:
    return int.from_bytes(data, "little", signed=True)


def _tuple_n(n: int) -> Callable[[PickleMachine, Reader], None]:
    def op(u: PickleMachine, r: Reader) -> None:
        items = [u.pop() for _ in range(n)][::-1]
        u.push(tuple(items))

    return op


def _decimal(u: PickleMachine, r: Reader) -> None:
    line = r.readline().strip()
    if line in (b"00", b"01"):
        u.push(line == b"01")
    else:
        u.push(int(line.rstrip(b"L")))


def _string(u: PickleMachine, r: Reader) -> None:
    u.push(r.readline().strip()[1:-1].decode("latin1"))


def _dict(u: PickleMachine, r: Reader) -> None:
    items = u.pop_mark()
    u.push({safe_key(k): v for k, v in zip(items[::2], items[1::2], strict=False)})


def _add_items(u: PickleMachine, r: Reader) -> None:
    items = u.pop_mark()
    target = u.top()
    if not isinstance(target, set):
        raise PickleError("ADDITEMS on a non-set")
    target.update(safe_key(v) for v in items)


def _persid(u: PickleMachine, r: Reader) -> None:
    u.push(u.persistent_load(r.readline().decode("ascii", "replace").strip()))


def _ext(u: PickleMachine, r: Reader) -> None:
    raise PickleError("pickle extension registry codes (EXT1/2/4) are not supported")


def _oob(u: PickleMachine, r: Reader) -> None:
    raise PickleError("out-of-band pickle buffers are not supported")


STOP = b"."
# Opcodes that push one value they decode from the stream (numbers, strings, globals, memo fetches, persistent ids)
VALUE_OPS = frozenset(
    [b"I", b"L", b"F", b"J", b"K", b"M", b"\x8a", b"\x8b", b"G", b"S", b"T", b"U", b"V", b"X", b"\x8c", b"\x8d",
     b"B", b"C", b"\x8e", b"\x96", b"g", b"h", b"j", b"c", b"P"]
)  # fmt: skip


OPS: dict[bytes, Callable[[PickleMachine, Reader], Any]] = {
    b"\x80": lambda u, r: r.read(1),  # PROTO
    b"\x95": lambda u, r: r.frame(_U8(r)),  # FRAME
    b"(": _mark,
    b"0": lambda u, r: u.pop(),
    b"1": lambda u, r: u.pop_mark(),
    b"2": lambda u, r: u.push(u.top()),
    b"N": lambda u, r: u.push(None),
    b"\x88": lambda u, r: u.push(True),
    b"\x89": lambda u, r: u.push(False),
    b"I": _decimal,
    b"L": lambda u, r: u.push(int(r.readline().strip().rstrip(b"L"))),
    b"F": lambda u, r: u.push(float(r.readline())),
    b"J": lambda u, r: u.push(_I4(r)),
    b"K": lambda u, r: u.push(_U1(r)),
    b"M": lambda u, r: u.push(_U2(r)),
    b"\x8a": lambda u, r: u.push(_long(r.read(_U1(r)))),
    b"\x8b": lambda u, r: u.push(_long(r.read(_I4(r)))),
    b"G": lambda u, r: u.push(struct.unpack(">d", r.read(8))[0]),
    b"S": _string,
    b"T": lambda u, r: u.push(r.read(_I4(r)).decode("latin1")),
    b"U": lambda u, r: u.push(r.read(_U1(r)).decode("latin1")),
    b"V": lambda u, r: u.push(r.readline()[:-1].decode("raw_unicode_escape")),
    b"X": lambda u, r: u.push(_text(r, _U4(r))),
    b"\x8c": lambda u, r: u.push(_text(r, _U1(r))),
    b"\x8d": lambda u, r: u.push(_text(r, _U8(r))),
    b"B": lambda u, r: u.push(r.read(_U4(r))),
    b"C": lambda u, r: u.push(r.read(_U1(r))),
    b"\x8e": lambda u, r: u.push(r.read(_U8(r))),
    b"\x96": lambda u, r: u.push(r.read(_U8(r))),
    b")": lambda u, r: u.push(()),
    b"t": lambda u, r: u.push(tuple(u.pop_mark())),
    b"\x85": _tuple_n(1),
    b"\x86": _tuple_n(2),
    b"\x87": _tuple_n(3),
    b"]": lambda u, r: u.push([]),
    b"l": lambda u, r: u.push(u.pop_mark()),
    b"}": lambda u, r: u.push({}),
    b"d": _dict,
    b"\x8f": lambda u, r: u.push(set()),
    b"\x91": lambda u, r: u.push(frozenset(safe_key(v) for v in u.pop_mark())),
    b"\x90": _add_items,
    b"a": lambda u, r: _appends(u, [u.pop()]),
    b"e": lambda u, r: _appends(u, u.pop_mark()),
    b"s": lambda u, r: _setitems(u, (lambda v, k: [k, v])(u.pop(), u.pop())),
    b"u": lambda u, r: _setitems(u, u.pop_mark()),
    b"p": lambda u, r: u.memo_put(int(r.readline())),
    b"q": lambda u, r: u.memo_put(_U1(r)),
    b"r": lambda u, r: u.memo_put(_U4(r)),
    b"\x94": lambda u, r: u.memo_put(len(u.memo)),
    b"g": lambda u, r: u.memo_get(int(r.readline())),
    b"h": lambda u, r: u.memo_get(_U1(r)),
    b"j": lambda u, r: u.memo_get(_U4(r)),
    b"c": _global,
    b"\x93": _stack_global,
    b"R": _reduce,
    b"\x81": _newobj,
    b"\x92": _newobj_ex,
    b"o": _obj,
    b"i": _inst,
    b"b": _build,
    b"P": _persid,
    b"Q": lambda u, r: u.push(u.persistent_load(u.pop())),
    b"\x82": _ext,
    b"\x83": _ext,
    b"\x84": _ext,
    b"\x97": _oob,
    b"\x98": lambda u, r: None,
}


def load(reader: Reader, persistent_load: Callable[[Any], Any]) -> Result:
    """Interpret one pickle from `reader` into inert values.

    Raises:
        PickleError: the stream is malformed or beyond a cap; `.unsafe` holds what it would have called.
    """
    return PickleMachine(reader, persistent_load).load()
