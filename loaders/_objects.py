"""What a pickled object array names, read by our restricted pickle reader (never `pickle.load`, nothing run).

An npy object array (``np.save`` of a dict, a list, a ragged array) stores a pickle of the ndarray in
place of numbers: ``numpy._core.multiarray._reconstruct`` then a BUILD whose state's last item is the
list of elements. Its parameter count cannot be known without running it, so it is reported as
metadata; this module says what it holds: the globals the pickle names and a short, bounded
description of the elements (a dict's top-level keys, a list's length, element types).
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from inspector.recordtype import record
from loaders import _pickle

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_PICKLE_BYTES = 4 << 20  # larger object pickles are not read (they hold array data inline)
MAX_KEYS = 8
MAX_KEY_CHARS = 60
MAX_GLOBALS = 8
MAX_ITEMS = 4
RECONSTRUCT = {"numpy._core.multiarray._reconstruct", "numpy.core.multiarray._reconstruct"}


@record(frozen=True, slots=True)
class ObjectSummary:
    """The globals a pickle names (sorted, bounded), whether one would run code, and what its elements are."""

    globals: tuple[str, ...]
    unsafe: tuple[str, ...]
    holds: str


def summarise(read: Callable[[], bytes], size: int) -> ObjectSummary | None:
    """The summary of an object array's pickle of `size` bytes, or None when it is too large or unreadable.

    `read` returns the pickle's bytes; it is called only when `size` is within `MAX_PICKLE_BYTES`.
    """
    if size > MAX_PICKLE_BYTES:
        return None
    try:
        result = _pickle.load(_pickle.Reader(read()), _no_persistent)
    except (_pickle.PickleError, ValueError, TypeError, IndexError, KeyError, struct.error, RecursionError):
        return None
    return ObjectSummary(
        tuple(sorted(result.globals)), tuple(sorted(result.unsafe)), _describe(_elements(result.value))
    )


def _no_persistent(pid: Any) -> Any:
    raise _pickle.PickleError("persistent ids do not occur in numpy pickles")


def _elements(value: Any) -> Any:
    """The element list of a pickled ndarray (BUILD state: version, shape, dtype, is_fortran, list), else the value."""
    if isinstance(value, _pickle.Call) and isinstance(value.func, _pickle.Global):
        if value.func.qualname in RECONSTRUCT and isinstance(value.state, tuple) and value.state:
            items = value.state[-1]
            return items[0] if isinstance(items, list) and len(items) == 1 else items
    return value


def _describe(value: Any, depth: int = 0) -> str:
    if isinstance(value, dict):
        keys = [repr(k)[:MAX_KEY_CHARS] for k in list(value)[:MAX_KEYS]]
        more = f", ... ({len(value):,} keys)" if len(value) > MAX_KEYS else ""
        return f"a dict with keys {', '.join(keys)}{more}" if keys else "an empty dict"
    if isinstance(value, (list, tuple)):
        kind = type(value).__name__
        if depth:
            return f"a {kind} of {len(value):,}"
        shown = [_describe(v, depth + 1) for v in value[:MAX_ITEMS]]
        more = ", ..." if len(value) > MAX_ITEMS else ""
        return f"a {kind} of {len(value):,}: {'; '.join(shown)}{more}"
    if isinstance(value, _pickle.Call) and isinstance(value.func, _pickle.Global):
        name = value.func.qualname
        return "a numpy array" if name in RECONSTRUCT else f"a {name} object"
    if value is None:
        return "None"
    return f"a {type(value).__name__}"


def names_text(summary: ObjectSummary) -> str:
    """'names a, b, c (and N more)' for messages."""
    shown = ", ".join(summary.globals[:MAX_GLOBALS])
    more = f" and {len(summary.globals) - MAX_GLOBALS} more" if len(summary.globals) > MAX_GLOBALS else ""
    return f"names {shown}{more}" if shown else "names no globals"
