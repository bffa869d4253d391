"""The restricted pickle reader's opcode interpreter: it builds inert values and never runs anything.

`loaders._pickle.load` reads a pickle made only of data builders with CPython's C unpickler (`loaders._pickle_fast`)
and hands every other pickle, and any doubt there, to `PickleMachine`, which gives the values, the unsafe evidence
and the errors (see `loaders._pickle` for what it does and does not do). Imported on its first use: a PyTorch file
whose pickle the C path reads never loads it.
"""

from __future__ import annotations

import codecs
import struct
import warnings
from collections.abc import Callable

from loaders import _pickle as limits  # (its caps, read at each use: tests and the C path read them there too)
from loaders._pickle import STOP, Result
from loaders._pickle_builders import BUILDERS, INERT_DATA, TRAMPOLINES, check_arguments, check_state, resolve
from loaders._pickle_policy import (
    BACKWARD_HOOKS,
    CHECKED_WHEN_CALLED,
    INERT_CALLABLES,
    JOBLIB_WRAPPERS,
    PAIRS_BUILDERS,
    SAFE_BASES,
    is_dotted,
    is_unsafe_global,
    python3_name,
    sets_attributes,
)
from loaders._pickle_reader import Reader, scan
from loaders._pickle_values import (
    MAX_NAME,
    Blob,
    Call,
    CapError,
    DTypeRef,
    EndOfData,
    Global,
    PickleError,
    StorageType,
    TensorRef,
    callable_name,
    safe_key,
    short_error,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class PickleMachine:
    """Interpret one pickle (up to its STOP) into inert values."""

    def __init__(
        self, reader: Reader, persistent_load: Callable[[Any], Any], lenient: bool = False, joblib: bool = False
    ) -> None:
        self.r = reader
        self.persistent_load = persistent_load
        self.lenient = lenient  # go on past what CPython's C unpickler might accept (a second reading, for evidence)
        # read as joblib's unpickler reads (`joblib_array`): only a bare pickle, which joblib.load may be given (the
        # caller judges it as pickle.load reads it too: the bytes joblib passes over are opcodes there)
        self.joblib = joblib
        self.stack: list[Any] = []
        self.marks: list[int] = []
        self.memo: dict[int, Any] = {}
        self.globals: set[str] = set()
        self.unsafe: set[str] = set()
        # id of a bytes value -> its first byte in the file, and the value (held: an id is never reused meanwhile)
        self.located: dict[int, tuple[int, Any]] = {}
        self.depth = 0  # pickle streams this one is nested in (`nested`: joblib's arrays of objects)
        self.work = limits.MAX_WORK + limits.MAX_WORK_PER_BYTE * (reader.end - reader.start)  # (`charge`)

    # -- helpers ------------------------------------------------------------------------------

    def flag(self, what: str) -> None:
        self.unsafe.add(what)

    def push(self, value: Any) -> None:
        if len(self.stack) >= limits.MAX_STACK:
            raise CapError(f"pickle stack beyond {limits.MAX_STACK:,} items")
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

    def charge(self, values: tuple[Any, ...]) -> None:
        """Count the items and characters of values a call or BUILD reads against the pickle's `MAX_WORK` budget."""
        self.work -= sum(len(v) for v in values if isinstance(v, SIZED))
        if self.work < 0:
            raise CapError("pickle calls read more values than the pickle holds (one large value read again and again)")

    def memo_put(self, index: int) -> None:
        if len(self.memo) >= limits.MAX_MEMO:
            raise CapError("pickle memo too large")
        self.memo[index] = self.top()

    def memo_get(self, index: int) -> None:
        if index not in self.memo:
            raise PickleError(f"pickle memo key {index} missing")
        self.push(self.memo[index])

    def global_(self, module: str, name: str) -> None:
        # protocols 0-2 write Python 2 names ('__builtin__', 'commands'): map them as pickle itself does (a data table)
        module, name = python3_name(module, name)
        g = Global(module, name)
        self.globals.add(g.qualname[:MAX_NAME])
        if is_dotted(name):
            self.flag(f"{g.qualname[:MAX_NAME]} (a dotted global reaches any module)")
        elif is_unsafe_global(module, name) and g.qualname not in CHECKED_WHEN_CALLED:
            self.flag(g.qualname[:MAX_NAME])
        self.push(resolve(g))

    def call(self, func: Any, args: tuple[Any, ...]) -> Any:
        """What calling `func(*args)` (REDUCE, OBJ, INST) gives; flags every call that could run code."""
        self.charge(args)
        if isinstance(func, Global):
            name = func.qualname
            hooks = BACKWARD_HOOKS.get(name)
            if hooks is not None and len(args) > hooks:
                self.hooks(args[hooks], f"given to {name[:MAX_NAME]}")
            trampoline = TRAMPOLINES.get(name)
            if trampoline is not None:
                return trampoline(self, args)
            builder = BUILDERS.get(name)
            if builder is not None or name in INERT_CALLABLES or name in INERT_DATA:
                check_arguments(self, name, args, args[0] if args and name in PAIRS_BUILDERS else ())
            if builder is not None:
                try:
                    return builder(*args)
                except PickleError:
                    raise
                except Exception as exc:  # our own builder on odd arguments: keep the call inert
                    return Call(func, args, state=f"not rebuilt: {short_error(exc)}")
            if name not in INERT_CALLABLES and name not in INERT_DATA:
                self.flag(name[:MAX_NAME])  # a call into an unknown function is what code execution looks like
            return Call(func, args)
        if not isinstance(func, (StorageType, DTypeRef)) and not (self.lenient and not isinstance(func, Call)):
            # a lenient reading goes on through bytes it cannot decode: only names count there as evidence
            self.flag(f"<call of {callable_name(func)}>")
        return Call(func, args)

    def hooks(self, hooks: Any, how: str) -> None:
        """Flag the backward hooks a tensor is given that would run the file's choice: autograd calls each with the
        gradient on the first backward pass (torch writes none). A data builder or inert class there builds data."""
        values = hooks.values() if isinstance(hooks, dict) else hooks if isinstance(hooks, (list, tuple)) else (hooks,)
        for value in values:
            if isinstance(value, Global) and (value.qualname in BUILDERS or value.qualname in INERT_CALLABLES):
                continue
            if isinstance(value, (Global, Call)):
                self.flag(f"{callable_name(value)[:MAX_NAME]} as a backward hook {how} (autograd calls it)")

    def joblib_array(self, wrapper: Call) -> Any:
        """joblib's array in place of its wrapper (`loaders._numpy_pickle.joblib_array`): its bytes, which follow
        outside the opcodes, passed over; an array of objects read as the pickle stream of its own it is there."""
        from loaders._numpy_pickle import joblib_array  # (joblib's files only)

        return joblib_array(self.r, wrapper, self.located, self.nested)

    def nested(self) -> Any:
        """A pickle stream inside this one, read from here to its STOP; what it would call is this pickle's."""
        if self.depth >= limits.MAX_NESTED:
            raise CapError(f"pickle streams nested beyond {limits.MAX_NESTED}")
        inner = PickleMachine(self.r, self.persistent_load, self.lenient, self.joblib)
        inner.depth = self.depth + 1
        inner.located = self.located
        try:
            return inner._run().value
        finally:
            self.unsafe |= inner.unsafe
            self.globals |= inner.globals

    def new(self, cls: Any, args: tuple[Any, ...], keywords: tuple[Any, ...] = ()) -> Any:
        """NEWOBJ: `cls.__new__(cls, *args)` constructs without calling; kept as a placeholder. Flagged: a class the
        pickle made (its methods are the pickle's), and `type.__new__`, which makes one. `keywords`: the values of
        NEWOBJ_EX's keyword arguments, used as its positional ones are (`bytes.__new__(bytes, source=x)` iterates x)."""
        if isinstance(cls, Global) and cls.qualname == "builtins.type" and len(args) != 1:
            self.flag("builtins.type.__new__ (creates a class)")
        elif isinstance(cls, Global) and cls.qualname in SAFE_BASES:  # (tuple.__new__(tuple, x) iterates x)
            check_arguments(self, f"{cls.qualname}.__new__", args + keywords)
        elif isinstance(cls, Call):
            self.flag(f"<a class made by the pickle: {callable_name(cls)}>")
        return Call(cls, args, newobj=True)

    def item_methods(self, target: Call, methods: str) -> None:
        """APPEND(S), ADDITEMS and SETITEM(S) call the object's `extend` or `append`, `add`, `__setitem__`. Pickle
        writes an object's items before its state (BUILD): items after a state that set attributes were written so
        that its methods use them (an `append` attribute is called itself; a `unittest.mock` object calls what its
        `_mock_children` names: was exit 0)."""
        if sets_attributes(target.state):
            name = callable_name(target)
            self.flag(f"the {methods} of {name} after its state set attributes (pickle writes items first)")

    # -- the loop -----------------------------------------------------------------------------

    def load(self) -> Result:
        try:
            return self._run()
        except PickleError as exc:
            raise PickleError(str(exc), frozenset(self.unsafe | exc.unsafe | self._evidence(exc))) from exc
        except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError, struct.error,
                RecursionError, MemoryError) as exc:  # fmt: skip
            evidence = frozenset(self.unsafe | self._evidence(exc))
            raise PickleError(f"malformed pickle: {short_error(exc)}", evidence) from exc

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
        for _ in range(limits.MAX_OPS):
            op = r.read(1)
            if op == STOP:
                return Result(self.pop(), self.globals, self.unsafe, r.pos, self.located)
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
        raise CapError(f"pickle longer than {limits.MAX_OPS:,} opcodes")

    def _scan(self) -> set[str]:
        """Unsafe globals named anywhere in this pickle, found by a plain opcode walk (after a failure)."""
        try:
            data = self.r.window(limits.MAX_OPS * 4)
        except Exception:  # noqa: BLE001 - the scan only adds evidence; its own failure adds none
            return set()
        return scan(data)


# -- opcodes ----------------------------------------------------------------------------------------------


SIZED = (tuple, list, dict, set, frozenset, str, bytes)  # values whose items or characters `charge` counts


def _n(fmt: str) -> Callable[[Reader], int]:
    size = struct.calcsize(fmt)
    return lambda r: int(struct.unpack(fmt, r.read(size))[0])


_U1, _U2, _U4, _I4, _U8 = _n("<B"), _n("<H"), _n("<I"), _n("<i"), _n("<Q")


def _blob(r: Reader, n: int, encoding: str = "") -> Any:
    """A length-prefixed bytes or text value; one beyond `MAX_INLINE` is skipped, not read (a 1 GB array)."""
    if n < 0:
        raise PickleError(f"negative length {n:,} at byte {r.pos:,}")
    if n > limits.MAX_INLINE:
        r.skip(n)
        return Blob(n, bool(encoding))
    data = r.read(n)
    return data.decode(encoding, "surrogatepass" if encoding == "utf-8" else "strict") if encoding else data


def _text(r: Reader, n: int) -> Any:
    return _blob(r, n, "utf-8")


def _raw(u: PickleMachine, r: Reader, n: int, encoding: str = "") -> Any:
    """A length-prefixed bytes value (or a Python 2 string, its bytes as they are), where it lies remembered: a
    numpy array's data is one. (A value of fewer than two bytes may be a shared object: not remembered.)"""
    at = r.pos
    value = _blob(r, n, encoding)
    if n > 1:
        u.located[id(value)] = (at, value)
    return value


def _mark(u: PickleMachine, r: Reader) -> None:
    if len(u.marks) >= limits.MAX_MARKS:
        raise CapError("too many pickle MARKs")
    u.marks.append(len(u.stack))


def _setitems(u: PickleMachine, items: list[Any]) -> None:
    target = u.top()
    pairs = list(zip(items[::2], items[1::2], strict=False))
    if isinstance(target, dict):
        for k, v in pairs:
            target[safe_key(k)] = v
    elif isinstance(target, Call):
        u.item_methods(target, "__setitem__")
        target.items.extend(pairs)
    else:
        raise PickleError(f"SETITEMS on a {type(target).__name__}")


def _appends(u: PickleMachine, items: list[Any]) -> None:
    target = u.top()
    if isinstance(target, list):
        target.extend(items)
    elif isinstance(target, Call):
        u.item_methods(target, "append, extend or add")
        target.items.extend(items)
    elif isinstance(target, set):
        target.update(safe_key(v) for v in items)
    else:
        raise PickleError(f"APPENDS on a {type(target).__name__}")


def _build(u: PickleMachine, r: Reader) -> None:
    """BUILD runs target.__setstate__(state) or sets attributes: unsafe on a class, module or function."""
    state = u.pop()
    target = u.top()
    u.charge((state,))
    if isinstance(target, (Global, StorageType, DTypeRef)):
        u.flag(f"setattr on {callable_name(target)} (BUILD on a class, module or function)")
    name = callable_name(target.func) if isinstance(target, Call) else type(target).__name__
    check_state(u, state, name, mapping=isinstance(target, dict))
    if isinstance(target, Call):
        target.state = state
        if u.joblib and target.newobj and isinstance(target.func, Global) and target.func.qualname in JOBLIB_WRAPPERS:
            u.stack[-1] = u.joblib_array(target)  # (the array's bytes follow, outside the opcodes)
    elif isinstance(target, dict) and isinstance(state, dict):
        target.update(state)
    elif isinstance(target, TensorRef):
        _tensor_state(u, state)
    # BUILD on other values: state kept nowhere, nothing runs


def _tensor_state(u: PickleMachine, state: Any) -> None:
    """BUILD on a tensor runs `torch.Tensor.__setstate__`, which torch never writes (its tensors are REDUCEs): a state
    of 3 or 5 items sets `_backward_hooks` from its third (autograd calls them on backward: proved), one of 4 calls
    `set_(*state)`. Hooks other than none, or an object the pickle made among the items, run the file's choice."""
    items = tuple(state) if isinstance(state, (tuple, list, dict)) else ()
    if len(items) in (3, 5):
        u.hooks(items[2], "set by a tensor's state (BUILD runs Tensor.__setstate__)")
    check_arguments(u, "torch.Tensor.__setstate__", items)


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
    kwargs = u.pop()
    args = u.pop()
    cls = u.pop()
    keywords = tuple(kwargs.values()) if isinstance(kwargs, dict) else ()
    u.push(u.new(cls, tuple(args) if isinstance(args, (tuple, list)) else (), keywords))


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
    """STRING: a quoted protocol-0 string whose escapes the unpickler decodes (``'__setstat\\x65__'`` is a dunder)."""
    line = r.readline().rstrip()
    if len(line) < 2 or line[:1] != line[-1:] or line[:1] not in (b"'", b'"'):
        raise PickleError(f"a STRING opcode's argument is not quoted, before byte {r.pos:,}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # (an unknown escape stays as it is, as there)
        u.push(codecs.escape_decode(line[1:-1])[0].decode("latin1"))


def _dict(u: PickleMachine, r: Reader) -> None:
    items = u.pop_mark()
    u.push({safe_key(k): v for k, v in zip(items[::2], items[1::2], strict=False)})


def _add_items(u: PickleMachine, r: Reader) -> None:
    items = u.pop_mark()
    target = u.top()
    if isinstance(target, Call):
        u.item_methods(target, "append, extend or add")
        target.items.extend(items)
    elif isinstance(target, set):
        target.update(safe_key(v) for v in items)
    else:
        raise PickleError("ADDITEMS on a non-set")


def _persid(u: PickleMachine, r: Reader) -> None:
    u.push(u.persistent_load(r.readline().decode("ascii", "replace").strip()))


def _binpersid(u: PickleMachine, r: Reader) -> None:
    """BINPERSID: torch's persistent_load compares, hashes and formats the id's items (`location == 'cpu'`, `key in
    loaded_storages`, f"data/{key}"): an object the pickle made there has its methods run (`check_arguments`)."""
    pid = u.pop()
    if isinstance(pid, tuple):
        check_arguments(u, "torch.load's persistent_load", pid)
    u.push(u.persistent_load(pid))


def _ext(u: PickleMachine, r: Reader) -> None:
    raise PickleError("pickle extension registry codes (EXT1/2/4) are not supported")


def _oob(u: PickleMachine, r: Reader) -> None:
    raise PickleError("out-of-band pickle buffers are not supported")


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
    b"T": lambda u, r: u.push(_raw(u, r, _I4(r), "latin1")),
    b"U": lambda u, r: u.push(_raw(u, r, _U1(r), "latin1")),
    b"V": lambda u, r: u.push(r.readline()[:-1].decode("raw_unicode_escape")),
    b"X": lambda u, r: u.push(_text(r, _U4(r))),
    b"\x8c": lambda u, r: u.push(_text(r, _U1(r))),
    b"\x8d": lambda u, r: u.push(_text(r, _U8(r))),
    b"B": lambda u, r: u.push(_raw(u, r, _U4(r))),
    b"C": lambda u, r: u.push(_raw(u, r, _U1(r))),
    b"\x8e": lambda u, r: u.push(_raw(u, r, _U8(r))),
    b"\x96": lambda u, r: u.push(_raw(u, r, _U8(r))),
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
    b"Q": _binpersid,
    b"\x82": _ext,
    b"\x83": _ext,
    b"\x84": _ext,
    b"\x97": _oob,
    b"\x98": lambda u, r: None,
}
