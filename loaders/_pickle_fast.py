"""The restricted pickle reader at C speed: CPython's C unpickler, given only our inert builders, for plain data.

`loaders._pickle.load` tries this first and falls back to the opcode interpreter (`loaders._pickle_machine`)
whenever it returns None: any doubt, any abort, any exception here means "read it the slow way", and the slow
reader then produces the values, the unsafe evidence and the errors exactly as before. So a pickle is
judged unsafe or malformed by the same code as before; only pickles made entirely of allowlisted data
builders (torch state dicts, legacy storages, sys_info...) are read here, into the same values.

Why this is as safe as the interpreter, and gives the same values when it succeeds:

- What the C unpickler calls. GLOBAL / STACK_GLOBAL go through `find_class`, which maps Python 2 names
  as the interpreter does and returns only our own objects: a `_Builder` for a callable of `BUILDERS`
  (the same pure functions the interpreter runs), or the `StorageType` / `DTypeRef` record `resolve`
  gives; anything else (an unknown, unsafe or dotted global, a trampoline) aborts. REDUCE can therefore
  only call a `_Builder` (any other callable is not callable: TypeError, abort). NEWOBJ, OBJ, INST,
  EXT, PERSID (text), the buffer opcodes and every other text opcode are refused before the C
  unpickler runs (below), so no class is ever constructed and copyreg is never consulted. BUILD calls
  ``__setstate__`` where one exists: our records (`TensorRef`, `StorageRef`, `StorageType`, `DTypeRef`),
  `_Builder` and `_FastList` refuse it; `_FastDict` applies a dict state as the interpreter does and
  refuses a dunder key (which the interpreter flags); on a str, int or tuple the C default refuses any
  state but None, which both readers ignore. BINPERSID calls the caller's `persistent_load`, as the
  interpreter does (its effects are undone on abort when it keeps state, `undo_point`).
- What it hashes. Native dicts hash their keys in C, and a pickle of 1 MB can make a key nested a
  million deep (a C stack overflow) or a tuple shared 2^100 times. So no native dict or list is ever
  created: every EMPTY_DICT / EMPTY_LIST opcode is rewritten into a persistent id that gives a
  `_FastDict` / `_FastList`, whose ``__setitem__`` keys through `safe_key` (as the interpreter does) or
  refuses (SETITEMS on a list, which the interpreter refuses); DICT, LIST and the set opcodes are refused,
  and the container builders (``OrderedDict()``, ``dict()``, ``list()``) make an empty `_FastDict` / `_FastList`
  (called with an argument they raise: the interpreter reads the pickle). Nothing else of the pickle's is hashed.
- Which opcodes. `_scan` tokenises the whole pickle first, at regex speed, with a token pattern that
  admits only the binary opcodes whose C behaviour matches the interpreter's on these objects (no FRAME:
  the C unpickler does not enforce frames as the interpreter does; no text numbers or strings, which C
  parses more leniently; strings and bytes up to `MAX_INLINE` only, as larger ones become `Blob`s there;
  LONG1 integers of up to 16 bytes).
  Any other byte at an opcode boundary sends the pickle to the interpreter. (A tensor's record as torch writes it
  is matched in one step, a "lane" of those same tokens: it admits nothing they do not.)
- Bounds. The caps of the interpreter are kept: the scan counts opcodes (`MAX_OPS`, an upper bound, a lane counted
  as `LANE_OPS`; a pickle of fewer bytes than that cannot have more opcodes);
  stack growth between two refills of the C unpickler's input is at most one item per byte, so sampling
  the stack's size at every refill of at most `CHUNK` bytes bounds its peak (`MAX_STACK`); the marks'
  capacity, never shrunk during a load, is read back from ``__sizeof__`` (`MAX_MARKS`); memo entries are
  at most the opcode count (< `MAX_MEMO`). The C memo is an array sized by the largest PUT index, so
  LONG_BINPUT indices are admitted only below a power of two near the pickle's size (its memory stays
  proportional to the pickle, as the interpreter's memo dict is). Lines (GLOBAL) are at most 255 bytes.
  A builder's argument or a BUILD state of more than `MAX_ARGUMENT` items goes to the interpreter, which counts what
  calls read against its work budget (`loaders._pickle.MAX_WORK`: one large value may be passed again and again).
  Everything is iterative in C and linear in the pickle's size; a pickle beyond a cap or a bound goes
  to the interpreter, which refuses it as before.

Pickles under `loaders._pickle.FAST_MIN_BYTES` are left to the interpreter (it reads them as fast as the
scan compiles), and this module is not even imported for them.
"""

from __future__ import annotations

import gc
import os
import sys
from _pickle import Unpickler as _CUnpickler
from collections.abc import Callable
from functools import lru_cache, partial

from inspector import regexes
from loaders._pickle_builders import BUILDERS, TRAMPOLINES, resolve
from loaders._pickle_policy import dunder_keys, hidden_methods, is_dotted, is_unsafe_global, python3_name
from loaders._pickle_reader import Reader
from loaders._pickle_values import MAX_NAME, DTypeRef, Global, PickleError, StorageType, safe_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from typing import Any

CHUNK = 1 << 16  # bytes handed to the C unpickler per refill: its stack grows by at most this between samples
RUN = 1024  # opcodes per counted run of the scan
SHORT = 128  # length-prefixed strings up to this length are matched by the token pattern itself
SMALL = 1 << 18  # a pickle under this many bytes is scanned with strings up to SMALL_SHORT in its token pattern
# (the pattern compiles in 0.27 ms, 0.5 with 8, 2.8 with SHORT; a longer string costs a step of the scan loop, and a
# torch pickle of that size writes few: a storage key of up to 4 digits, 'storage' and 'cpu' once, then memo references)
SMALL_SHORT = 4
READ_FIRST = 1 << 16  # bytes of a file-backed pickle fetched first (the interpreter reads as much at once)
MAX_WINDOW = 1 << 28  # bytes of a file-backed pickle fetched at most (larger ones go to the interpreter)
TOKEN_MAX = 1 + 255 + 1 + 255 + 1  # the longest token of the pattern (a GLOBAL)
# items or characters of a builder's argument or a BUILD state read here; a larger one sends the pickle to the
# interpreter, which counts them against its work budget (a pickle can pass one large value again and again)
MAX_ARGUMENT = 256

# Persistent ids our rewritten stream uses for EMPTY_DICT / EMPTY_LIST: random, so no pickle can name them
_DICT_ID = os.urandom(16).hex()
_LIST_ID = os.urandom(16).hex()
_DICT_OP = b"U" + bytes([len(_DICT_ID)]) + _DICT_ID.encode() + b"Q"
_LIST_OP = b"U" + bytes([len(_LIST_ID)]) + _LIST_ID.encode() + b"Q"


class Counters:
    """How many pickles each path read (tests assert which path a pickle took)."""

    fast = 0
    aborted = 0


class _Abort(Exception):
    """The fast path gives up: the interpreter reads the pickle."""


class _FastDict(dict):  # type: ignore[type-arg]
    """A dict whose keys go through `safe_key`, as the interpreter's SETITEM does; named `dict` in messages."""

    __slots__ = ()

    def __setitem__(self, key: Any, value: Any, _set: Callable[..., None] = dict.__setitem__) -> None:
        _set(self, key if key.__class__ is str else safe_key(key), value)  # (a name: as it is)

    def __setstate__(self, state: Any) -> None:
        """BUILD on a dict: the interpreter merges a dict state and flags dunder keys and method names (we abort)."""
        _check_sizes((state,))
        if dunder_keys(state) or hidden_methods(state):
            raise _Abort("BUILD sets a dunder attribute or hides a method")
        if isinstance(state, dict):
            self.update(state)


class _FastList(list):  # type: ignore[type-arg]
    """A list SETITEM cannot index into (the interpreter refuses SETITEMS on a list); named `list`."""

    __slots__ = ()

    def __setitem__(self, key: Any, value: Any) -> None:
        raise _Abort("SETITEM on a list")

    def __setstate__(self, state: Any) -> None:
        raise _Abort("BUILD on a list")


# type(value).__name__ names values in keys and messages (`key_name`, `callable_name`): the same as the interpreter's
_FastDict.__name__ = _FastDict.__qualname__ = "dict"
_FastList.__name__ = _FastList.__qualname__ = "list"
_SIZED = frozenset({tuple, str, bytes, _FastDict, _FastList})  # the values whose length `_check_sizes` reads


def _check_sizes(values: tuple[Any, ...]) -> None:
    """Abort on a value longer than `MAX_ARGUMENT` (the interpreter then reads the pickle, within its work budget)."""
    for value in values:
        if value.__class__ in _SIZED and len(value) > MAX_ARGUMENT:
            raise _Abort("a large argument")


class _Builder(Global):
    """One of `BUILDERS`, as REDUCE calls it; left uncalled, it is the `Global` the interpreter would give.

    BUILD on it is refused: it is ours, shared by every reading.
    """

    __slots__ = ("build",)
    build: Callable[..., Any]

    def __init__(self, qualname: str, build: Callable[..., Any]) -> None:
        module, name = qualname.rsplit(".", 1)
        Global.__init__(self, module, name)
        object.__setattr__(self, "build", build)

    def __call__(self, *args: Any) -> Any:
        _check_sizes(args)
        return self.build(*args)

    def __setstate__(self, state: Any) -> None:
        raise _Abort("BUILD on a callable")


class _DictBuilder(_Builder):
    """The builder of a dict (``OrderedDict``, ``dict``) called without arguments, as torch writes a state dict's and
    every tensor's empty ``OrderedDict()`` of backward hooks: an empty fast one, made in C calls (``partial(_FastDict,
    ())``: no frame of ours a tensor). Called with arguments it raises TypeError (a dict takes one argument at most):
    the fast path gives up and the interpreter reads the pickle."""

    __slots__ = ()
    __call__ = staticmethod(partial(_FastDict, ()))  # (a static `__call__`: called with REDUCE's arguments, no self)


class _ListBuilder(_Builder):
    """`_DictBuilder` of a list (``list()``)."""

    __slots__ = ()
    __call__ = staticmethod(partial(_FastList, ()))


_TENSOR = "torch._utils._rebuild_tensor_v2"


class _TensorBuilder(_Builder):
    """torch's tensor rebuild, once a tensor: REDUCE calls the builder's function itself (no frame of ours between)."""

    __slots__ = ()
    __call__ = staticmethod(BUILDERS[_TENSOR])  # (a static `__call__`: called with REDUCE's arguments, no self)


# as messages name the interpreter's uncalled globals
_Builder.__name__ = _DictBuilder.__name__ = _ListBuilder.__name__ = _TensorBuilder.__name__ = "Global"
_CONTAINERS = {"collections.OrderedDict": _DictBuilder, "builtins.dict": _DictBuilder, "builtins.list": _ListBuilder}
CONTAINER_IDS = {_DICT_ID: _FastDict, _LIST_ID: _FastList}  # the rewritten ids -> what each makes
_BUILDERS = {
    name: _CONTAINERS.get(name, _TensorBuilder if name == _TENSOR else _Builder)(name, build)
    for name, build in BUILDERS.items()
    if name not in TRAMPOLINES
}


# -- the scan --------------------------------------------------------------------------------------------------


def _counted(ops: bytes, width: int, short: int) -> bytes:
    """Length-prefixed string or bytes opcodes (`ops`, of one length `width`) with a length up to `short`, as one
    regex alternative: the opcodes share the alternatives of their lengths (fewer to compile: about 8 ms a process)."""
    lengths = (regexes.escape(n.to_bytes(width, "little")) + (rb".{%d}" % n if n else b"") for n in range(short + 1))
    return rb"[" + b"".join(regexes.escape(bytes([op])) for op in ops) + rb"](?:" + b"|".join(lengths) + rb")"


@lru_cache(maxsize=4)
def _patterns(index_bits: int, short: int, counted: bool) -> tuple[re.Pattern[bytes] | None, re.Pattern[bytes]]:
    """(exactly RUN tokens, or None for a scan not `counted`; any run of tokens): the opcodes admitted, LONG_BINPUT
    below 2**index_bits, strings and bytes of up to `short` bytes (the scan loop steps over longer ones, and over
    LONG1 integers: their 17 alternatives were 0.2 ms of the pattern's compile, and torch writes few)."""
    exact, run = _sources(index_bits, short, counted)
    return (regexes.compile(exact, DOTALL) if exact is not None else None), regexes.compile(run, DOTALL)


# (DOTALL: '.' matches any byte, as [\s\S] would, and the scan is about a fifth faster with it)
DOTALL = regexes.DOTALL


def _sources(index_bits: int, short: int, counted: bool) -> tuple[bytes | None, bytes]:
    """The texts of `_patterns`' two patterns."""
    token = _token(index_bits, short)
    return (token + rb"{%d}+" % RUN if counted else None), token + rb"*+"


def small_scan_pattern() -> tuple[bytes, int]:
    """The pattern (and flags) a pickle under SMALL bytes is scanned with: the one whose program is written with the
    package (`inspector.regexes`)."""
    return _sources(_index_bits(SMALL - 1), SMALL_SHORT, False)[1], DOTALL


def _index_bits(size: int) -> int:
    """The bits of the LONG_BINPUT indices the scan admits in a pickle of `size` bytes (a power of two near it)."""
    return min(31, max(20, size.bit_length() + 1))


def _token(index_bits: int, short: int) -> bytes:
    """One admitted opcode with its arguments, as a pattern (see `_patterns`)."""
    top = (1 << (index_bits - 24)) - 1 if index_bits > 24 else 0
    third = 0xFF if index_bits > 24 else (1 << (index_bits - 16)) - 1
    index = rb".{2}[\x00-" + regexes.escape(bytes([third])) + rb"][\x00-" + regexes.escape(bytes([top])) + rb"]"
    tokens = [  # the most frequent first (the regex tries them in order; each begins with bytes of its own)
        _lane(index, short),  # (a tensor's record: tokens, as one step of the regex; tried first)
        rb"r" + index,  # LONG_BINPUT (a torch pickle of 10,000 tensors: 80,000 of its 300,000 opcodes; first, 7% less)
        rb"[()NRQtusabe\x85\x86\x87\x88\x89\x93\x94]",  # no-argument opcodes (MARK ... STACK_GLOBAL, MEMOIZE)
        rb"[qhK\x80].",  # BINPUT, BINGET, BININT1, PROTO
        _counted(b"XBT", 4, short),  # BINUNICODE, BINBYTES, BINSTRING
        rb"[Jj].{4}",  # BININT, LONG_BINGET
        rb"M.{2}",  # BININT2
        rb"G.{8}",  # BINFLOAT
        rb"c[^\n]{1,255}\n[^\n]{1,255}\n",  # GLOBAL
        _counted(b"\x8cUC", 1, short),  # SHORT_BINUNICODE, SHORT_BINSTRING, SHORT_BINBYTES
    ]
    return rb"(?:" + b"|".join(tokens) + rb")"


# The opcodes of a tensor's record in a torch state dict after its name, as torch.save writes each (protocol 2):
# the name's BINPUT, then _rebuild_tensor_v2 (BINGET) called (REDUCE) with a tuple (MARK ... TUPLE) of the storage
# (BINPERSID of a tuple of 'storage', its type, its key, its location, its size), the storage offset, the size and
# stride tuples (1 or 2 dimensions), requires_grad (NEWFALSE or NEWTRUE) and an empty OrderedDict() of hooks. Each part
# is one of the tokens `_token` admits, so a stream holds a lane exactly when it holds those tokens there; the scan
# matches it in one step of the regex instead of about 30 (the scan of a 10,000-tensor pickle: 111 million
# instructions, 53 so). At most LANE_OPS opcodes, each with a ")R" of its own (the hooks' call): the count of ")R"
# in a run bounds its lanes (`_scan`).
LANE_OPS = 27 + 2 * 2  # (27 opcodes, and two tuples of 2 ints at most)
_LANE_MARK = b")R"


def _lane(index: bytes, short: int) -> bytes:
    """A tensor's record after its name, as a pattern of tokens (`index`: LONG_BINPUT's admitted index)."""
    put = rb"(?:r" + index + rb"|q.)"  # BINPUT, LONG_BINPUT
    get = rb"h."  # BINGET (torch memoizes its globals and constant strings first: LONG_BINGET, a step of its own)
    integer = rb"(?:K.|M.{2}|J.{4})"  # BININT1, BININT2, BININT
    key = _counted(b"X", 4, min(short, 8))  # the storage's key (BINUNICODE): digits
    shape = rb"(?:" + integer + rb"\x85|" + integer + integer + rb"\x86)"  # TUPLE1, TUPLE2
    parts = (put, get, rb"\(\(", get, get, key, put, get, integer, rb"t", put, rb"Q", integer, shape, put, shape, put,
             rb"[\x88\x89]", get, regexes.escape(_LANE_MARK), put, rb"t", put, rb"R", put)  # fmt: skip
    return b"".join(parts)


# length-prefixed opcodes and the width of their length, for strings and LONG1 the token pattern leaves to the scan
_LONG = {ord("X"): 4, ord("B"): 4, ord("T"): 4, 0x8D: 8, 0x8E: 8, 0x8C: 1, ord("U"): 1, ord("C"): 1, 0x8A: 1}
LONG1 = 0x8A  # an integer of up to LONG1_BYTES bytes (torch writes few: a size or offset past 2**31)
LONG1_BYTES = 16


_MORE = object()  # the scan needs more of a file-backed pickle than the window holds


def _scan(data: bytes, caps: Any, complete: bool) -> tuple[bytes, int] | object | None:
    """The stream the C unpickler reads (dicts and lists rewritten) and the offset after STOP, or None.

    `complete`: `data` holds all the bytes the pickle may use; else stopping near its end gives `_MORE`.
    """
    bits = _index_bits(len(data))
    # Each opcode counted takes a byte of `data` at least (the end one more): a pickle shorter than the opcode cap
    # cannot reach it, and its runs are not counted RUN tokens at a time (the exact pattern, compiled only for longer
    # ones, was about 7 million of the 200 million instructions of a 128-tensor PyTorch run)
    exact, run = _patterns(bits, SHORT if len(data) >= SMALL else SMALL_SHORT, len(data) >= caps.MAX_OPS)
    pos, last, ops = 0, 0, 0
    pieces: list[bytes] = []
    end = len(data)
    while ops <= caps.MAX_OPS:
        m = exact.match(data, pos) if exact is not None else None
        if m is not None:  # RUN steps: tokens, and lanes of LANE_OPS opcodes at most (a ")R" each, at least)
            ops += RUN + (LANE_OPS - 1) * data.count(_LANE_MARK, pos, m.end())
            pos = m.end()
            continue
        tokens = run.match(data, pos)  # always matches (maybe nothing): fewer than RUN steps before the next
        stop = tokens.end() if tokens is not None else pos
        # an upper bound on the run's opcodes (each takes a byte at least), and the one that ends it
        steps = RUN - 1 + (LANE_OPS - 1) * data.count(_LANE_MARK, pos, stop) if exact is not None else stop - pos
        ops += min(steps, stop - pos) + 1
        pos = stop
        if not complete and pos + TOKEN_MAX > end:
            return _MORE
        if pos >= end:
            return None
        op = data[pos]
        if op == 0x2E:  # STOP
            if ops > caps.MAX_OPS:
                return None
            pieces.append(data[last : pos + 1])
            return b"".join(pieces), pos + 1
        if op in (0x7D, 0x5D):  # EMPTY_DICT, EMPTY_LIST
            pieces += (data[last:pos], _DICT_OP if op == 0x7D else _LIST_OP)
            pos = last = pos + 1
            continue
        width = _LONG.get(op)
        if width is None or pos + 1 + width > end:
            return None
        n = int.from_bytes(data[pos + 1 : pos + 1 + width], "little", signed=op == 0x54)
        if not 0 <= n <= (LONG1_BYTES if op == LONG1 else caps.MAX_INLINE):
            return None
        pos += 1 + width + n
        if pos > end:
            return None if complete else _MORE
    return None


# -- the unpickler ---------------------------------------------------------------------------------------------


class _Feed:
    """The C unpickler's input, at most `CHUNK` bytes per refill; each refill samples the stack's size."""

    def __init__(self, data: bytes, sample: Callable[[], None]) -> None:
        self.data = data
        self.pos = 0
        self.sample = sample

    def peek(self, n: int = 0) -> bytes:
        self.sample()
        return self.data[self.pos : self.pos + CHUNK]

    def read(self, n: int = -1) -> bytes:
        self.sample()
        out = self.data[self.pos : self.pos + n] if n >= 0 else self.data[self.pos :]
        self.pos += len(out)
        return out

    def readline(self) -> bytes:
        self.sample()
        at = self.data.find(b"\n", self.pos, self.pos + 1024)
        out = self.data[self.pos : at + 1] if at >= 0 else b""
        self.pos += len(out)
        return out


class _Unpickler(_CUnpickler):  # type: ignore[misc]
    def __init__(self, feed: _Feed, persistent_load: Callable[[Any], Any]) -> None:
        super().__init__(feed, fix_imports=False, encoding="latin1", errors="strict")
        self.pid_load = persistent_load
        self.globals: set[str] = set()
        named = getattr(persistent_load, "named", None)  # torch's loader (`_torch.PersistentLoader`): string ids too
        if named is not None:  # (the C unpickler calls it itself: one call a storage, not two)
            named.update(CONTAINER_IDS)
            # (its bound `__call__`: a call of the object itself looks the method up every storage)
            self.persistent_load = persistent_load.__call__  # type: ignore[method-assign,operator]
        else:
            self.persistent_load = self._containers  # type: ignore[method-assign]

    def find_class(self, module: str, name: str) -> Any:
        # as the interpreter's GLOBAL: Python 2 names mapped, the global recorded, only inert data admitted
        module, name = python3_name(module, name)
        g = Global(module, name)
        self.globals.add(g.qualname[:MAX_NAME])
        if is_dotted(name) or is_unsafe_global(module, name):
            raise _Abort("unsafe global")
        value = resolve(g)
        if isinstance(value, (StorageType, DTypeRef)):
            return value
        builder = _BUILDERS.get(g.qualname)
        if builder is None:
            raise _Abort("a global outside the data builders")
        return builder

    def _containers(self, pid: Any) -> Any:
        """The persistent_load of the rewritten stream: the ids of its empty dicts and lists, then the caller's."""
        if pid.__class__ is str:
            if pid == _DICT_ID:
                return _FastDict()
            if pid == _LIST_ID:
                return _FastList()
        return self.pid_load(pid)


def _stack(unpickler: _Unpickler) -> Any:
    """The C unpickler's stack object (its size tells how many items it holds), or None."""
    found = [o for o in gc.get_referents(unpickler) if type(o).__name__ == "Pdata"]
    return found[0] if len(found) == 1 else None


def load(reader: Reader, persistent_load: Callable[[Any], Any], caps: Any) -> tuple[Any, set[str], int] | None:
    """(value, globals, end offset) of the pickle at the reader's position, or None: the interpreter reads it."""
    scanned = _scanned(reader, caps)
    if scanned is None:
        Counters.aborted += 1
        return None
    stream, stop = scanned
    undo = getattr(persistent_load, "undo_point", None)
    restore = undo() if undo is not None else None
    try:
        value, names = _run(stream, persistent_load, caps)
    except Exception:  # noqa: BLE001 - any failure: the interpreter reads the pickle and reports it precisely
        if restore is not None:
            restore()
        Counters.aborted += 1
        return None
    Counters.fast += 1
    reader.pos = reader.pos + stop
    return value, names, reader.pos


def _scanned(reader: Reader, caps: Any) -> tuple[bytes, int] | None:
    """The scan of the pickle at the reader's start, fetching a file-backed one in growing windows."""
    if reader.pos != reader.start or reader.frame_end >= 0:
        return None
    if reader._fetch is None:
        at = reader.start - reader.base
        data = reader.buf if at == 0 and len(reader.buf) == reader.end - reader.start else reader.buf[at:]
        scanned = _scan(data, caps, True)
        return None if scanned is _MORE else scanned  # type: ignore[return-value]
    window = READ_FIRST
    while True:  # a legacy file's pickle is followed by its storages: fetch what the pickle needs, not the rest
        window = min(window, reader.end - reader.start)
        complete = window == reader.end - reader.start
        scanned = _scan(reader._fetch(reader.start, window), caps, complete)
        if scanned is not _MORE:
            return scanned  # type: ignore[return-value]
        if complete or window >= MAX_WINDOW:
            return None
        window *= 4


def _run(stream: bytes, persistent_load: Callable[[Any], Any], caps: Any) -> tuple[Any, set[str]]:
    try:
        return _unpickled(stream, persistent_load, caps)
    finally:
        named = getattr(persistent_load, "named", None)
        if named is not None:  # (the interpreter, if it reads the pickle after, knows no such ids)
            for key in CONTAINER_IDS:
                named.pop(key, None)


def _unpickled(stream: bytes, persistent_load: Callable[[Any], Any], caps: Any) -> tuple[Any, set[str]]:
    peak = [0]
    feed = _Feed(stream, lambda: None)
    unpickler = _Unpickler(feed, persistent_load)
    stack = _stack(unpickler)
    if stack is None:
        raise _Abort("not CPython's C unpickler")
    empty = sys.getsizeof(stack)
    bare = _Unpickler(_Feed(b"", lambda: None), persistent_load)
    bare.memo = {}
    size_bare = bare.__sizeof__()  # what __sizeof__ counts besides the memo and the marks

    def sample() -> None:
        live = (sys.getsizeof(stack) - empty) // 8
        if live > peak[0]:
            peak[0] = live

    feed.sample = sample
    value = unpickler.load()
    sample()
    unpickler.memo = {}  # frees the memo array; what __sizeof__ then adds is the marks' capacity
    marks = (unpickler.__sizeof__() - size_bare) // 8  # plus the last GLOBAL line copied, if any: an overestimate
    if peak[0] + CHUNK + 1 > caps.MAX_STACK or marks > caps.MAX_MARKS:
        raise _Abort("near a cap of the interpreter")
    return value, unpickler.globals


__all__ = ["Counters", "PickleError", "load"]
