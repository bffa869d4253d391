"""A restricted pickle reader: an opcode interpreter that builds inert values and never runs anything.

`pickle.load` resolves every GLOBAL by importing its module and calls whatever REDUCE names. This
reader does neither. A GLOBAL becomes a `Global` record; REDUCE, NEWOBJ, OBJ, INST and BUILD on it
produce a `Call` record holding the arguments and state. Only the callables in `BUILDERS` (PyTorch's
tensor rebuild functions, containers, dtypes) are interpreted, by pure functions of our own that
return `TensorRef`s and plain Python values. Every global the pickle names is recorded, and those
whose call could run code are listed in `unsafe`.

Bounded: the stack, memo and container sizes are capped, every length is checked against the bytes
left, and the number of opcodes is limited.
"""

from __future__ import annotations

import struct
from _compat_pickle import IMPORT_MAPPING, NAME_MAPPING
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MAX_OPS = 50_000_000
MAX_STACK = 1_000_000
MAX_MEMO = 10_000_000
MAX_MARKS = 100_000


class PickleError(Exception):
    """The pickle stream is malformed or beyond a cap (the caller turns this into a FormatError)."""


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
    newobj: bool = False  # NEWOBJ/OBJ/INST: class instantiation rather than a function call


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


@dataclass(frozen=True, slots=True)
class StorageType:
    dtype: str


# Modules whose callables can run code, open files, spawn processes or import: any GLOBAL from these is unsafe.
UNSAFE_MODULES = (
    "os",
    "posix",
    "nt",
    "subprocess",
    "sys",
    "importlib",
    "runpy",
    "pickle",
    "_pickle",
    "shutil",
    "socket",
    "webbrowser",
    "pty",
    "code",
    "ctypes",
    "marshal",
    "builtins.exec",
    "commands",
    "platform",
    "multiprocessing",
    "threading",
    "asyncio",
    "signal",
    "tempfile",
    "pathlib",
    "io",
    "_io",
    "codecs",
    "operator",
    "functools",
    "types",
    "inspect",
    "pdb",
    "timeit",
    "requests",
    "urllib",
    "http",
)
UNSAFE_BUILTINS = {
    "eval",
    "exec",
    "compile",
    "open",
    "__import__",
    "getattr",
    "setattr",
    "delattr",
    "globals",
    "locals",
    "input",
    "breakpoint",
    "exit",
    "quit",
    "vars",
    "dir",
    "help",
    "memoryview",
    "print",
    "apply",
    "execfile",
    "file",
    "reload",
}
# Classes the pickle may instantiate (NEWOBJ / copyreg) as inert placeholders without that being unsafe:
# they only record data (numpy arrays and scalars, argparse namespaces, pickled nn.Modules).
INERT_CALLABLES = {
    "numpy.core.multiarray._reconstruct",
    "numpy._core.multiarray._reconstruct",
    "numpy.core.multiarray.scalar",
    "numpy._core.multiarray.scalar",
    "numpy.dtype",
    "numpy.ndarray",
    "copyreg._reconstructor",
    "argparse.Namespace",
    "collections.defaultdict",
    "collections.Counter",
    "builtins.object",
    "torch.nn.parameter.Parameter",
    "torch.Tensor",
    "torch._utils._rebuild_device_tensor_from_cpu_tensor",
}


def is_unsafe(g: Global) -> bool:
    if g.module == "builtins" or g.module == "__builtin__":
        return g.name in UNSAFE_BUILTINS
    return any(g.module == m or g.module.startswith(m + ".") for m in UNSAFE_MODULES)


def _tensor_v2(storage: Any, offset: Any, size: Any, stride: Any, requires_grad: Any = False, *rest: Any) -> TensorRef:
    if not isinstance(storage, StorageRef):
        raise PickleError("tensor rebuild without a storage")
    return TensorRef(storage, int(offset), _ints(size), _ints(stride), storage.dtype, False, bool(requires_grad))


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
        tensor.requires_grad = bool(requires_grad)
    return tensor


def _meta(dtype: Any, size: Any, stride: Any, requires_grad: Any = False, *rest: Any) -> TensorRef:
    name = dtype.dtype if isinstance(dtype, DTypeRef) else "F32"
    return TensorRef(None, 0, _ints(size), _ints(stride), name, False, bool(requires_grad))


def _from_type(func: Any, cls: Any, args: Any, state: Any = None) -> Any:
    builder = BUILDERS.get(func.qualname) if isinstance(func, Global) else None
    if builder is None or not isinstance(args, tuple):
        return Call(func, args if isinstance(args, tuple) else (args,), state)
    return builder(*args)


def _qtensor(storage: Any, offset: Any, size: Any, stride: Any, *rest: Any) -> TensorRef:
    return _tensor_v2(storage, offset, size, stride)


def _ints(value: Any) -> tuple[int, ...]:
    if not isinstance(value, (tuple, list)) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise PickleError(f"expected a tuple of ints, got {type(value).__name__}")
    return tuple(value)


def _ordered_dict(*args: Any) -> dict[Any, Any]:
    return dict(args[0]) if args and isinstance(args[0], (list, tuple, dict)) else {}


def _encode(text: Any, encoding: Any = "latin1") -> bytes:
    return str(text).encode("latin1" if encoding == "latin1" else "utf-8", "replace")


BUILDERS: dict[str, Callable[..., Any]] = {
    "torch._utils._rebuild_tensor_v2": _tensor_v2,
    "torch._utils._rebuild_tensor_v3": _tensor_v3,
    "torch._utils._rebuild_tensor": _tensor_old,
    "torch._utils._rebuild_parameter": _parameter,
    "torch._utils._rebuild_parameter_with_state": _parameter,
    "torch._utils._rebuild_meta_tensor_no_storage": _meta,
    "torch._utils._rebuild_qtensor": _qtensor,
    "torch._tensor._rebuild_from_type_v2": _from_type,
    "torch._tensor._rebuild_from_type": _from_type,
    "collections.OrderedDict": _ordered_dict,
    "torch.Size": lambda *a: tuple(a[0]) if a else (),
    "torch.device": lambda *a: ":".join(str(x) for x in a),
    "_codecs.encode": _encode,
    "builtins.set": lambda *a: set(a[0]) if a else set(),
    "builtins.frozenset": lambda *a: frozenset(a[0]) if a else frozenset(),
    "builtins.bytearray": lambda *a: (
        a[0].encode("latin1") if a and isinstance(a[0], str) else bytes(a[0]) if a and isinstance(a[0], bytes) else b""
    ),
    "builtins.complex": lambda *a: complex(*(float(x) for x in a[:2])),
    "builtins.slice": lambda *a: ("slice", *a),
    "builtins.tuple": lambda *a: tuple(a[0]) if a else (),
    "builtins.list": lambda *a: list(a[0]) if a else [],
    "builtins.dict": lambda *a: dict(a[0]) if a else {},
}


def resolve(g: Global) -> Any:
    """What a GLOBAL stands for: a storage type, a dtype, or the inert `Global` itself."""
    if g.module in ("torch", "torch.storage") and g.name in STORAGE_DTYPES:
        return StorageType(STORAGE_DTYPES[g.name])
    if g.module == "torch" and g.name.endswith("Tensor") and g.name[:-6] + "Storage" in STORAGE_DTYPES:
        return StorageType(STORAGE_DTYPES[g.name[:-6] + "Storage"])  # tar format tensor types (FloatTensor)
    if g.module == "torch" and g.name in TORCH_DTYPES:
        return DTypeRef(TORCH_DTYPES[g.name])
    return g


class Reader:
    """Bytes to interpret: a buffer, or a window of a file read lazily in chunks (legacy torch files)."""

    def __init__(
        self, data: bytes | None = None, fetch: Callable[[int, int], bytes] | None = None, start: int = 0, end: int = 0
    ) -> None:
        self._fetch = fetch
        self.buf = data or b""
        self.base = start  # file offset of buf[0]
        self.pos = start
        self.end = start + len(self.buf) if data is not None else end

    def _ensure(self, n: int) -> None:
        if self.pos + n > self.end:
            raise PickleError(f"pickle data ends early: {n:,} bytes wanted at byte {self.pos:,}")
        have = self.base + len(self.buf)
        if self.pos + n > have:
            if self._fetch is None:
                raise PickleError("pickle data ends early")
            want = max(self.pos + n - have, 1 << 16)
            want = min(want, self.end - have)
            self.buf = self.buf[self.pos - self.base :] + self._fetch(have, want)
            self.base = self.pos

    def read(self, n: int) -> bytes:
        start = self.pos - self.base
        if start + n <= len(self.buf) and self.pos + n <= self.end:  # the common case: already buffered
            self.pos += n
            return self.buf[start : start + n]
        self._ensure(n)
        start = self.pos - self.base
        self.pos += n
        return self.buf[start : start + n]

    def readline(self) -> bytes:
        out = bytearray()
        while True:
            c = self.read(1)
            out += c
            if c == b"\n" or len(out) > 1 << 20:
                return bytes(out)


@dataclass
class Result:
    value: Any
    globals: set[str]
    unsafe: set[str]
    end: int  # position after STOP


class PickleMachine:
    """Interpret one pickle (up to its STOP) into inert values."""

    def __init__(self, reader: Reader, persistent_load: Callable[[Any], Any]) -> None:
        self.r = reader
        self.persistent_load = persistent_load
        self.stack: list[Any] = []
        self.marks: list[int] = []
        self.memo: dict[int, Any] = {}
        self.globals: set[str] = set()
        self.unsafe: set[str] = set()

    # -- helpers ------------------------------------------------------------------------------

    def push(self, value: Any) -> None:
        if len(self.stack) >= MAX_STACK:
            raise PickleError(f"pickle stack beyond {MAX_STACK:,} items")
        self.stack.append(value)

    def pop(self) -> Any:
        if not self.stack:
            raise PickleError("pickle stack underflow")
        return self.stack.pop()

    def pop_mark(self) -> list[Any]:
        if not self.marks:
            raise PickleError("pickle MARK missing")
        at = self.marks.pop()
        items = self.stack[at:]
        del self.stack[at:]
        return items

    def top(self) -> Any:
        if not self.stack:
            raise PickleError("pickle stack underflow")
        return self.stack[-1]

    def memo_put(self, index: int) -> None:
        if len(self.memo) >= MAX_MEMO:
            raise PickleError("pickle memo too large")
        self.memo[index] = self.top()

    def memo_get(self, index: int) -> None:
        if index not in self.memo:
            raise PickleError(f"pickle memo key {index} missing")
        self.push(self.memo[index])

    def global_(self, module: str, name: str) -> None:
        # protocols 0-2 write Python 2 names ('__builtin__', 'commands'): map them as pickle itself does (a data table)
        module, name = NAME_MAPPING.get((module, name), (IMPORT_MAPPING.get(module, module), name))
        g = Global(module, name)
        self.globals.add(g.qualname)
        if is_unsafe(g):
            self.unsafe.add(g.qualname)
        self.push(resolve(g))

    def call(self, func: Any, args: tuple[Any, ...], newobj: bool = False) -> Any:
        if isinstance(func, Global):
            builder = BUILDERS.get(func.qualname)
            if builder is not None and not newobj:
                try:
                    return builder(*args)
                except PickleError:
                    raise
                except Exception as exc:  # our own builder on odd arguments: keep the call inert
                    return Call(func, args, state=f"not rebuilt: {exc}")
            if not newobj and func.qualname not in INERT_CALLABLES and func.qualname not in BUILDERS:
                self.unsafe.add(func.qualname)  # a call into an unknown function is what code execution looks like
            return Call(func, args, newobj=newobj)
        if isinstance(func, (StorageType, DTypeRef)):
            return Call(func, args, newobj=newobj)
        self.unsafe.add(f"<call of a {type(func).__name__}>")
        return Call(func, args, newobj=newobj)

    # -- the loop -----------------------------------------------------------------------------

    def load(self) -> Result:
        r = self.r
        for _ in range(MAX_OPS):
            op = r.read(1)
            if op == STOP:
                return Result(self.pop(), self.globals, self.unsafe, r.pos)
            handler = OPS.get(op)
            if handler is None:
                raise PickleError(f"unsupported pickle opcode {op!r} at byte {r.pos - 1:,}")
            handler(self, r)
        raise PickleError(f"pickle longer than {MAX_OPS:,} opcodes")


def _n(fmt: str) -> Callable[[Reader], int]:
    size = struct.calcsize(fmt)
    return lambda r: int(struct.unpack(fmt, r.read(size))[0])


_U1, _U2, _U4, _I4, _U8 = _n("<B"), _n("<H"), _n("<I"), _n("<i"), _n("<Q")


def _text(r: Reader, n: int) -> str:
    return r.read(n).decode("utf-8", "surrogatepass")


def _mark(u: PickleMachine, r: Reader) -> None:
    if len(u.marks) >= MAX_MARKS:
        raise PickleError("too many pickle MARKs")
    u.marks.append(len(u.stack))


def _setitems(u: PickleMachine, items: list[Any]) -> None:
    target = u.top()
    pairs = list(zip(items[::2], items[1::2], strict=False))
    if isinstance(target, dict):
        for k, v in pairs:
            target[k] = v
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
        target.update(items)
    else:
        raise PickleError(f"APPENDS on a {type(target).__name__}")


def _build(u: PickleMachine, r: Reader) -> None:
    state = u.pop()
    target = u.top()
    if isinstance(target, Call):
        target.state = state
    elif isinstance(target, dict) and isinstance(state, dict):
        target.update(state)
    # BUILD on tensors (their Python attributes) and other values: state kept nowhere, nothing runs


def _reduce(u: PickleMachine, r: Reader) -> None:
    args = u.pop()
    func = u.pop()
    u.push(u.call(func, tuple(args) if isinstance(args, (tuple, list)) else (args,)))


def _newobj(u: PickleMachine, r: Reader) -> None:
    args = u.pop()
    cls = u.pop()
    u.push(u.call(cls, tuple(args) if isinstance(args, (tuple, list)) else (), newobj=True))


def _newobj_ex(u: PickleMachine, r: Reader) -> None:
    u.pop()  # kwargs
    _newobj(u, r)


def _obj(u: PickleMachine, r: Reader) -> None:
    items = u.pop_mark()
    if not items:
        raise PickleError("OBJ without a class")
    u.push(u.call(items[0], tuple(items[1:]), newobj=True))


def _inst(u: PickleMachine, r: Reader) -> None:
    module = r.readline().decode("utf-8", "replace").strip()
    name = r.readline().decode("utf-8", "replace").strip()
    args = u.pop_mark()
    u.global_(module, name)
    u.push(u.call(u.pop(), tuple(args), newobj=True))


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


def _add_items(u: PickleMachine, r: Reader) -> None:
    items = u.pop_mark()
    target = u.top()
    if not isinstance(target, set):
        raise PickleError("ADDITEMS on a non-set")
    target.update(items)


def _persid(u: PickleMachine, r: Reader) -> None:
    u.push(u.persistent_load(r.readline().decode("ascii", "replace").strip()))


def _ext(u: PickleMachine, r: Reader) -> None:
    raise PickleError("pickle extension registry codes (EXT1/2/4) are not supported")


STOP = b"."


OPS: dict[bytes, Callable[[PickleMachine, Reader], Any]] = {
    b"\x80": lambda u, r: r.read(1),  # PROTO
    b"\x95": lambda u, r: r.read(8),  # FRAME: its length is only a hint
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
    b"d": lambda u, r: u.push(dict(zip(*(lambda i: (i[::2], i[1::2]))(u.pop_mark()), strict=False))),
    b"\x8f": lambda u, r: u.push(set()),
    b"\x91": lambda u, r: u.push(frozenset(u.pop_mark())),
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
    b"\x97": lambda u, r: (_ for _ in ()).throw(PickleError("out-of-band pickle buffers are not supported")),
    b"\x98": lambda u, r: None,
}


def load(reader: Reader, persistent_load: Callable[[Any], Any]) -> Result:
    """Interpret one pickle from `reader` into inert values."""
    return PickleMachine(reader, persistent_load).load()
