"""The restricted pickle reader: it builds inert values and never runs anything.

`load` reads a pickle made only of data builders with CPython's C unpickler given only our inert builders
(`loaders._pickle_fast`), and every other pickle, and any doubt there, with an opcode interpreter of our own
(`loaders._pickle_machine`, imported when a pickle needs it), which gives the values, the evidence and the errors.
This module holds what both read: the caps, the result, and the values and reader they share.

`pickle.load` resolves every GLOBAL by importing its module and calls whatever REDUCE, OBJ and INST
name. This reader does neither. A GLOBAL becomes a `Global` record; a call or construction produces
a `Call` record holding the arguments and state (`loaders._pickle_values`). Only the callables in
`BUILDERS` are interpreted, by pure functions of our own, and the `TRAMPOLINES` (functions that call
one of their arguments) only after checking that argument (`loaders._pickle_builders`). What would
run code is listed in `unsafe`, by the rules of `loaders._pickle_policy`.

Frames are enforced as pure-Python `pickle._Unframer` enforces them (`loaders._pickle_reader`).

Bounded: the stack, memo, marks, line lengths and opcode count are capped, every length is checked
against the bytes left, and values used as dict keys or set members are hashed only when they are
small. When a pickle cannot be finished, `PickleError.unsafe` still carries what it would have called:
what was read, what a lenient frame-blind second reading meets (as CPython's C unpickler would go on),
and unsafe globals scanned for in the rest, so evidence is never lost.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from inspector.recordtype import field, record
from loaders._pickle_builders import BUILDERS
from loaders._pickle_reader import Reader, scan
from loaders._pickle_values import (
    Call,
    DTypeRef,
    Global,
    PickleError,
    StorageRef,
    StorageType,
    TensorRef,
    itemsize,
    key_name,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "BUILDERS",
    "STOP",
    "Call",
    "DTypeRef",
    "Global",
    "PickleError",
    "Reader",
    "Result",
    "StorageRef",
    "StorageType",
    "TensorRef",
    "itemsize",
    "key_name",
    "load",
    "scan",
]

# About 25 opcodes per tensor in a torch data.pkl, 0.3 us each: 5M is 200,000 tensors in under 2 seconds.
MAX_OPS = 5_000_000
MAX_STACK = 1_000_000
MAX_MEMO = 10_000_000
MAX_MARKS = 100_000
MAX_INLINE = 1 << 20  # bytes and text values above this are skipped (a raw pickle may embed gigabytes of arrays)
MAX_NESTED = 16  # pickle streams inside a pickle (joblib's arrays of objects)
# items and characters of the arguments of calls and of BUILD states, summed over a pickle: the values a call reads
# (dict(pairs), a tensor's size) may be one large value fetched from the memo again and again (a 160 KB pickle asked
# dict() of one 20,000-item list 20,000 times: 5 minutes); a file's own values are read about once, so the work stays
# linear in the pickle's length
MAX_WORK = 1 << 22
MAX_WORK_PER_BYTE = 4
# smaller pickles are interpreted here: faster than importing and compiling the C path (tests set 0)
FAST_MIN_BYTES = 1 << 13


@record
class Result:
    value: Any
    globals: set[str]
    unsafe: set[str]
    end: int  # position after STOP
    # where each bytes value of two bytes or more lies in the file, by the value's id, with the value (the
    # interpreter's; numpy arrays keep their data in one: `loaders._numpy_pickle`)
    located: dict[int, tuple[int, Any]] = field(default_factory=dict)


STOP = b"."


def load(reader: Reader, persistent_load: Callable[[Any], Any], joblib: bool = False) -> Result:
    """Interpret one pickle from `reader` into inert values.

    A pickle made only of data builders is read by CPython's C unpickler (`loaders._pickle_fast`, same
    values); anything else, and any doubt there, by the interpreter here, which gives the evidence and errors.
    `joblib`: read as `joblib.load` reads, each array's bytes after its wrapper passed over (`PickleMachine`).

    Raises:
        PickleError: the stream is malformed or beyond a cap; `.unsafe` holds what it would have called.
    """
    if reader.end - reader.start >= FAST_MIN_BYTES:
        from loaders import _pickle_fast  # noqa: PLC0415 - it reads this module's caps

        fast = _pickle_fast.load(reader, persistent_load, sys.modules[__name__])
        if fast is not None:
            value, names, end = fast
            return Result(value, names, set(), end)
    from loaders._pickle_machine import PickleMachine  # (the interpreter: imported when a pickle needs it)

    return PickleMachine(reader, persistent_load, joblib=joblib).load()
