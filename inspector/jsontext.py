"""`json.dumps(obj, indent=2, default=str)`, the same text, built from the standard library's C string escaper.

Python 3.11's C encoder ignores `indent`, so `json.dumps(indent=2)` falls back to the pure-Python encoder: a
generator per container and one yielded chunk per token (100,000 tensors: 9 million chunks held in one list,
about 6 s and 500 MiB). Here each container is one `str.join` over its items, and strings go through the C
`encode_basestring_ascii`. The result is byte-for-byte what `json.dumps(obj, indent=2, default=str)` returns
(tested against it on generated documents); a cycle raises `ValueError` as json's does.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from json.encoder import encode_basestring_ascii as _string  # the C escaper, ensure_ascii=True

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

INDENT = "  "


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def _key(key: object) -> str:
    """A dict key as json writes it: strings as they are, numbers, booleans and None converted."""
    if isinstance(key, str):
        return _string(key)
    if key is True:
        return '"true"'
    if key is False:
        return '"false"'
    if key is None:
        return '"null"'
    if isinstance(key, int):
        return _string(int.__repr__(key))
    if isinstance(key, float):
        return _string(_float(key))
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


STREAM_ITEMS = 256  # a container of this many items is written item by item instead of joined in memory
STREAM_DEPTH = 1 + 3 * len(INDENT)  # containers this shallow (the report, its sections) too


def dumps(obj: Any, default: Callable[[Any], Any] = str) -> str:
    """`json.dumps(obj, indent=2, default=default)`."""
    parts: list[str] = []
    write(obj, parts.append, default)
    return "".join(parts)


def write(obj: Any, out: Callable[[str], object], default: Callable[[Any], Any] = str) -> None:
    """The text of `dumps(obj)` passed to `out` in pieces: a large container (the tensors and regions of a file) goes
    out item by item, so the whole text never has to be held (100,000 tensors: 200 MiB less at the peak)."""
    active: set[int] = set()  # containers being written: a cycle is an error, as in json
    string, int_repr = _string, int.__repr__

    def value(o: Any, nl: str) -> str:
        """Any value; the common scalars are also handled inline in `container` (no call per item)."""
        if isinstance(o, str):
            return string(o)
        if o is None:
            return "null"
        if o is True:
            return "true"
        if o is False:
            return "false"
        if isinstance(o, int):
            return int_repr(o)
        if isinstance(o, float):
            return _float(o)
        if isinstance(o, (list, tuple, dict)):
            return container(o, nl)
        marker = id(o)
        if marker in active:
            raise ValueError("Circular reference detected")
        active.add(marker)
        text = value(default(o), nl)
        active.discard(marker)
        return text

    def container(o: list[Any] | tuple[Any, ...] | dict[Any, Any], nl: str) -> str:
        if not o:
            return "{}" if isinstance(o, dict) else "[]"
        marker = id(o)
        if marker in active:
            raise ValueError("Circular reference detected")
        active.add(marker)
        inner = nl + INDENT
        parts = []
        append = parts.append
        if isinstance(o, dict):
            for k, v in o.items():
                key = string(k) if k.__class__ is str else _key(k)
                cls = v.__class__
                if cls is str:
                    append(key + ": " + string(v))
                elif cls is int:
                    append(key + ": " + int_repr(v))
                elif v is None:
                    append(key + ": null")
                else:
                    append(key + ": " + value(v, inner))
            text = "{" + inner + ("," + inner).join(parts) + nl + "}"
        else:
            for v in o:
                cls = v.__class__
                if cls is str:
                    append(string(v))
                elif cls is int:
                    append(int_repr(v))
                else:
                    append(value(v, inner))
            text = "[" + inner + ("," + inner).join(parts) + nl + "]"
        active.discard(marker)
        return text

    def stream(o: Any, nl: str) -> None:
        # the outer levels (a report and its sections) and any large container go out piece by piece
        if not isinstance(o, (list, tuple, dict)) or not o or (len(o) < STREAM_ITEMS and len(nl) > STREAM_DEPTH):
            out(value(o, nl))
            return
        marker = id(o)
        if marker in active:
            raise ValueError("Circular reference detected")
        active.add(marker)
        inner = nl + INDENT
        first = True
        if isinstance(o, dict):
            out("{")
            for k, v in o.items():
                out(("" if first else ",") + inner + (string(k) if k.__class__ is str else _key(k)) + ": ")
                stream(v, inner)
                first = False
            out(nl + "}")
        else:
            out("[")
            for v in o:
                out(("" if first else ",") + inner)
                stream(v, inner)
                first = False
            out(nl + "]")
        active.discard(marker)

    stream(obj, "\n")
