"""`json.dumps(obj, indent=2, default=str)`, the same text, built from the standard library's C string escaper.

Python 3.11's C encoder ignores `indent`, so `json.dumps(indent=2)` falls back to the pure-Python encoder: a
generator per container and one yielded chunk per token (100,000 tensors: 9 million chunks held in one list,
about 6 s and 500 MiB). Here each small container is one string: a dict is filled into a text template made
once per key layout and depth, a batch of dicts of one layout (a report's tensors, regions and layer rows) is
its values joined with the literal text between them, cut once per layout, a list is one `str.join`, and
strings go through the C `encode_basestring_ascii`. A large container (and every container
that holds one) is written item by item, gathered into chunks of about 64 KiB, so the whole text is never held
and the output sees one write per chunk. The result is byte-for-byte what `json.dumps(obj, indent=2,
default=str)` returns (tested against it on generated documents); a cycle raises `ValueError` as json's does.

`loads` reads JSON (a safetensors header, a config.json) as `json.loads` does, through the same C scanner, without
importing the json package, whose decoder and encoder compile five patterns at import (5 million instructions, 4% of
a safetensors run, issue 16).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain, repeat

try:  # the C escaper json.encoder uses, ensure_ascii=True (the json package's decoder compiles patterns at import),
    # and the C scanner json.decoder reads with
    from _json import encode_basestring_ascii as _string
    from _json import make_scanner

    _MAKE_SCANNER: Any = make_scanner
except ImportError:  # an interpreter without CPython's accelerator
    from json.encoder import encode_basestring_ascii as _string

    _MAKE_SCANNER = None
from operator import countOf, is_, itemgetter, mod

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


# The scalar types of a column whose one value is written into its batch's literal text (not once per item), and the
# longest such string
FIXED = frozenset({str, int, bool, type(None)})
FIXED_LENGTH = 64
SHAPES = frozenset({list, tuple})  # of ints: a shape all the batch's rows have, written into the literal text too
BATCHED = 1 << 24  # characters of batch literals remembered
STREAM_ITEMS = 256  # a container of this many items is written item by item instead of joined in memory
ROWS = 1024  # rows of a long `Rows` with columns written as one batch (each column told once for them: ~300 KiB)
CHUNK = 1 << 16  # characters gathered before a write
TEMPLATES = 4096  # dict layouts remembered (a bound for documents of many different key sets)


# Other scalars of one exact type, written by a C callable: a column of such values is written by one `map`
# (a column of strings goes to the C escaper, one of ints to `int.__repr__`).
SCALAR_TEXT: dict[type, Callable[[Any], str]] = {
    bool: {True: "true", False: "false"}.__getitem__,
    type(None): {None: "null"}.__getitem__,
}


def _literals(keys: tuple[str, ...], nl: str, layout: tuple[tuple[str | None, ...], ...]) -> list[str]:
    """The text of a dict of these keys cut at each value written per dict, as `template` writes it: `layout` gives
    each key's value as pieces, a str written in (a value all the batch's dicts share, a string's quotes, a part of a
    `Joined` string they share) or None (a value written per dict). The literal pieces before, between and after the
    values written per dict (one more than they)."""
    inner = nl + INDENT
    pieces: list[str] = []
    piece = "{" + inner
    for index, k in enumerate(keys):
        piece += ("," + inner if index else "") + _key(k) + ": "
        for item in layout[index]:
            if item is None:
                pieces.append(piece)
                piece = ""
            else:
                piece += item
    pieces.append(piece + nl + "}")
    return pieces


def _plain(strings: Iterable[Any]) -> bool:
    """Whether JSON writes each of `strings` as itself between quotes: all str, of printable ASCII (no control
    character, no DEL), without a quote or a backslash; told by one join and C passes over it: nothing is left of
    its ASCII bytes once those characters are deleted (`str.isprintable` looks each character up in the Unicode
    tables: 0.06 s of a 100,000-tensor report's 420,000 names and labels; this about a third of that)."""
    try:
        joined = "".join(strings)
    except TypeError:  # (a value that is not a str)
        return False
    return joined.isascii() and not joined.encode("ascii").translate(None, PLAIN_ASCII)


PLAIN_ASCII = bytes(range(0x20, 0x7F)).translate(None, b'"\\')  # what JSON writes as itself in a string


LONG = 1024  # characters of a str written by `_long_string`


def _long_string(text: str) -> str:
    """A long str as JSON writes it: as it is between quotes where it is plain (`_plain`: C passes of a few
    instructions a character, where the escaper takes about 60; an inferred architecture's 100,000 layer kinds)."""
    return '"' + text + '"' if _plain((text,)) else _string(text)


def _plain_part(part: Sequence[Any]) -> bool:
    """`_plain` of a `Joined` part: of its few different strings where its first ones are few (the parts of a label's
    text: a zip's four, each checked once, not once a region)."""
    try:
        few = set(part[:32])
        return _plain(set(part) if len(few) <= 8 else part)
    except TypeError:  # (an item that is not hashable: not a str)
        return False


def _one_text(column: Sequence[Any], first: str) -> bool:
    """Whether every item of `column` is a str (or a subclass) equal to `first`, so written as `first` is: counted
    (identical items: no comparison) and joined (a join refuses any other item; no C call an item)."""
    if column.count(first) != len(column):
        return False
    try:
        return len("".join(column)) == len(first) * len(column)
    except TypeError:  # (an item that is not a str)
        return False


def _one_number(column: Sequence[Any], first: int) -> bool:
    """Whether every item of `column` is an int (or a subclass: written by int's repr, as json writes it) equal to
    `first`, an int above 1 (no bool is equal to it): counted (identical items: no comparison), and summed, which
    gives an int only for ints (a float, a numpy number, a Fraction equal to it makes a sum of its type)."""
    try:
        return column.count(first) == len(column) and type(sum(column)) is int
    except TypeError:  # (an item that adds to no int: an object equal to every value)
        return False


def _ints_alike(column: Sequence[Any], first: Sequence[Any]) -> bool:
    """Whether every shape of `column`, each equal to `first`, is written as `first` is: of ints, its items the same
    objects as first's (small ints: one C pass), else all of type int."""
    if not set(map(type, first)) <= {int}:
        return False
    # (each place's items, one C pass a place: no iterator made for each shape)
    for place, item in enumerate(first):  # (an int above 1: summed, as `_one_number`; else the same object)
        items = map(itemgetter(place), column)
        if not (_one_number(list(items), item) if item > 1 else all(map(is_, items, repeat(item)))):
            return set(map(type, chain.from_iterable(column))) <= {int}
    return True


def _batch_literals(literals: list[str], n: int, separator: str) -> list[str]:
    """The literal pieces of n dicts of one layout (`_literals`) one after the other, `separator` between two: the
    last piece of a dict and the first of the next are one."""
    if len(literals) == 1:  # (every value written in: the batch is one literal)
        return [separator.join(literals * n)]
    first, *middle, last = literals
    return [first, *(middle + [last + separator + first]) * (n - 1), *middle, last]


class Joined:
    """A column of `Rows.columns` whose strings are given in parts: row i's string is the i-th item of each of `parts`
    (sequences of str) joined; `whole()` gives the strings themselves. A region's label is its text's part before its
    subject, the subject (a name) and the part after (`RegionColumns.label_parts`): where every part is a plain
    string (`_plain`) they are written as they are between the quotes, a part all the rows share written into the
    literal text, and no label is made (400,000 regions in a zip of 100,000 tensors); else `whole()` is written."""

    __slots__ = ("parts", "whole")

    def __init__(self, parts: Sequence[Sequence[str]], whole: Callable[[], Sequence[Any]]) -> None:
        self.parts, self.whole = parts, whole


class Rows:
    """A long list written on demand: the dicts `make` gives for `items`, made a batch at a time as they are written
    (a report's 100,000 tensors and 400,000 regions are never all held as dicts). Written as the list would be.

    `columns`, where given, is the same batch of dicts column by column: `(keys, values)` with one sequence of values
    per key, as `make` would give them; or None for a batch whose dicts do not all have the same keys (`make` is then
    used). A batch's columns are written without a dict made per item.
    """

    __slots__ = ("items", "make", "columns")

    def __init__(
        self,
        items: Sequence[Any],
        make: Callable[[Any], Any],
        columns: Callable[[Any], tuple[tuple[str, ...], list[Any]] | None] | None = None,
    ) -> None:
        self.items, self.make, self.columns = items, make, columns

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, part: slice) -> list[Any]:
        return list(map(self.make, self.items[part]))

    def __iter__(self) -> Iterator[Any]:
        return map(self.make, self.items)


class _Decoding:
    """What the C scanner reads of a `json.JSONDecoder` (its defaults) to parse with."""

    strict = True
    object_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"-Infinity": -math.inf, "Infinity": math.inf, "NaN": math.nan}.__getitem__

    def __init__(self, object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None) -> None:
        self.object_pairs_hook = object_pairs_hook


WHITESPACE = " \t\n\r"  # what JSON allows around a document
UNUSUAL_FIRST = frozenset(b"\x00\xef\xfe\xff")  # a first byte of bytes json would not read as plain UTF-8


def loads(text: str | bytes, object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None) -> Any:
    """`json.loads(text, object_pairs_hook=object_pairs_hook)`: the value json's C scanner makes of a document, as
    `JSONDecoder.decode` reads it (whitespace around it, nothing after it). Bytes are UTF-8 unless they start as
    json's `detect_encoding` reads as a byte order mark or UTF-16/32; those, a document with a byte order mark, and
    every document the scanner or the hook refuses, are given to `json.loads` itself, for its value or its error."""
    plain: str | None = None
    if type(text) is str:
        plain = text
    elif type(text) is bytes and text and text[0] not in UNUSUAL_FIRST and text[1:2] != b"\x00":  # (json: UTF-8)
        try:
            plain = text.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            pass
    if plain is not None and _MAKE_SCANNER is not None and not plain.startswith("\ufeff"):
        stripped = plain.lstrip(WHITESPACE)
        try:
            value, end = _MAKE_SCANNER(_Decoding(object_pairs_hook))(stripped, 0)
        except Exception:  # noqa: BLE001 - json itself raises its error (StopIteration: no value)
            pass
        else:
            if end == len(stripped) or not stripped[end:].lstrip(WHITESPACE):
                return value
    import json  # (a document json must read or refuse itself)

    return json.loads(text, object_pairs_hook=object_pairs_hook)


class _Numbers(dict):  # type: ignore[type-arg]
    """int -> its text (`repr`), made when first asked."""

    __slots__ = ()

    def __missing__(self, number: int) -> str:
        text = self[number] = repr(number)
        return text


NUMBERS = 1 << 16  # numbers' texts remembered


class _Large(Exception):
    """A container of STREAM_ITEMS or more items met while joining: its enclosing containers are streamed."""


def dumps(obj: Any, default: Callable[[Any], Any] = str) -> str:
    """`json.dumps(obj, indent=2, default=default)`."""
    parts: list[str] = []
    write(obj, parts.append, default)
    return "".join(parts)


def write(obj: Any, out: Callable[[str], object], default: Callable[[Any], Any] = str) -> None:
    """The text of `dumps(obj)` passed to `out` in chunks of about 64 KiB: a large container (the tensors and
    regions of a file) and the containers holding it go out item by item, so the whole text is never held
    (100,000 tensors: 200 MiB less at the peak)."""
    active: set[int] = set()  # containers being written: a cycle is an error, as in json
    streaming: list[int] = []  # the markers of the containers being streamed (kept when a join is abandoned)
    templates: dict[tuple[tuple[Any, ...], str], str] = {}  # (keys, indent) -> "{...%s...}"
    # (keys, indent, layout, n) -> `_batch_literals` of n such dicts (`_literals`)
    batches: dict[tuple[tuple[str, ...], str, tuple[tuple[str | None, ...], ...], int], list[str]] = {}
    batched = [0]  # characters `batches` holds
    string, int_repr = _string, int.__repr__
    buffer: list[str] = []
    pending = 0

    def emit(text: str) -> None:
        nonlocal pending
        if len(text) >= CHUNK:  # (a batch of rows: passed on as it is, after what was gathered, not copied again)
            if buffer:
                out("".join(buffer))
                buffer.clear()
                pending = 0
            out(text)
            return
        buffer.append(text)
        pending += len(text)
        if pending >= CHUNK:
            out("".join(buffer))
            buffer.clear()
            pending = 0

    def value(o: Any, nl: str) -> str:
        """Any value; the common scalars are also handled inline in `container` (no call per item)."""
        if isinstance(o, str):
            return string(o) if len(o) < LONG else _long_string(o)
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
        if isinstance(o, (list, tuple, dict)) or o.__class__ is Rows:
            return container(o, nl)
        marker = id(o)
        if marker in active:
            raise ValueError("Circular reference detected")
        active.add(marker)
        text = value(default(o), nl)
        active.discard(marker)
        return text

    memo = _Numbers()  # int -> its text, for the columns whose numbers come again (lengths, sizes)
    unique: set[tuple[tuple[str, ...], int]] = set()  # (keys, column) of the columns whose numbers did not

    def numbers(column: Sequence[int], slot: tuple[tuple[str, ...], int]) -> Iterator[str]:
        """The texts of a column of ints (exactly): `repr` of each (`int.__repr__`, without the call of a slot
        wrapper), or, for a column whose numbers came again in its last batch, looked up (most lengths and sizes of a
        file: a dict lookup where `repr` makes a text)."""
        if slot in unique:
            return map(repr, column)
        if len(memo) >= NUMBERS:
            memo.clear()
        known = len(memo)
        texts = list(map(memo.__getitem__, column))
        if (len(memo) - known) * 4 > len(column):  # (mostly new numbers: offsets, starts)
            unique.add(slot)
        return iter(texts)

    def template(keys: tuple[Any, ...], nl: str) -> str:
        """A dict's text with '%s' for each value."""
        inner = nl + INDENT
        text = "{" + inner + ("," + inner).join(_key(k).replace("%", "%%") + ": %s" for k in keys) + nl + "}"
        # only str keys are remembered: 1, 1.0 and True are equal as keys of a dict but written differently
        if len(templates) < TEMPLATES and all(k.__class__ is str for k in keys):
            templates[keys, nl] = text
        return text

    def records(batch: list[Any] | tuple[Any, ...], nl: str) -> str | None:
        """The text of a batch of dicts of one key layout (a report's tensors, regions, layer rows), written
        column by column (`columns`); None for other batches."""
        if set(map(type, batch)) != {dict}:
            return None
        layouts = list(map(tuple, batch))
        keys = layouts[0]
        if not keys or layouts.count(keys) != len(layouts) or set(map(type, keys)) != {str}:
            return None  # (keys that are not strings: 1, 1.0 and True are equal keys written differently)
        return columns(keys, list(zip(*map(dict.values, batch), strict=True)), nl)

    def columns(keys: tuple[str, ...], values: Sequence[Any], nl: str) -> str:
        """The text of the dicts whose values under `keys` are `values` (a sequence per key), one after the other: a
        column of one scalar type (names, offsets) or of lists of ints (shapes) is one `map` of a C function, and
        the batch is those texts and its layout's literal text between them, joined at once."""
        inner = nl + INDENT
        texts: list[Any] = []  # the columns written per dict, in the layout's order
        # each key's value as pieces: a str written into the literals (a column of one value: a dtype, a kind, a
        # status; the quotes of a column of plain strings, `_plain`), None a value written per dict
        layout: list[tuple[str | None, ...]] = []
        n = len(values[0])
        for column in values:
            if column.__class__ is Joined:
                if all(map(_plain_part, column.parts)):
                    pieces: list[str | None] = ['"']
                    for part in column.parts:
                        shared = part[0]
                        if (n == 1 or (part[1] == shared and part[-1] == shared)) and part.count(shared) == n:
                            # (a part every row shares, plain: written in)
                            pieces.append(shared)
                        else:
                            pieces.append(None)
                            texts.append(part)
                    layout.append((*pieces, '"'))
                    continue
                column = column.whole()  # (a part not plain: the strings, as any)
            first = column[0]
            cls = first.__class__
            # a str, or a str's subclass (an enum's member: written as its characters, as json writes it)
            text = cls is str or isinstance(first, str)
            if (
                (text or cls in FIXED or (cls in SHAPES and len(first) <= FIXED_LENGTH))
                and (n == 1 or (column[1] == first and column[-1] == first))  # (most columns: told here)
                and (not text or len(first) <= FIXED_LENGTH)
                # strings of one text; the one object in every row (most such columns: one C pass), else equal values
                # of one type (1, 1.0 and True are equal, written differently)
                and (
                    _one_text(column, first)
                    if text
                    else _one_number(column, first)
                    if cls is int and first > 1
                    else all(map(is_, column, repeat(first)))
                    or (column.count(first) == n and countOf(map(type, column), cls) == n)
                )
                and (cls not in SHAPES or _ints_alike(column, first))
            ):
                layout.append((value(first, inner),))
                continue
            if text:  # names, kinds: the C escaper takes any str and refuses anything else
                if _plain(column):  # (most names: between quotes in the literals, as they are, none escaped)
                    layout.append(('"', None, '"'))
                    texts.append(column)
                    continue
                try:
                    texts.append(list(map(string, column)))
                    layout.append((None,))
                    continue
                except TypeError:
                    pass
            layout.append((None,))
            if countOf(map(type, column), int) == n:  # (the type of most columns told without a set)
                texts.append(numbers(column, (keys, len(layout))))
                continue
            kinds = set(map(type, column))
            if len(kinds) == 1:
                kind = kinds.pop()
                scalar = SCALAR_TEXT.get(kind)
                if scalar is not None:
                    texts.append(map(scalar, column))
                    continue
                if (kind is list or kind is tuple) and set(map(type, chain.from_iterable(column))) <= {int}:
                    # lists of ints (shapes): a "%d" template per length ('%d' writes an int as repr does)
                    deeper = inner + INDENT
                    lists = {n: "[" + deeper + ("," + deeper).join(["%d"] * n) + inner + "]" if n else "[]"
                             for n in set(map(len, column))}  # fmt: skip
                    texts.append(
                        map(
                            mod,
                            map(lists.__getitem__, map(len, column)),
                            column if kind is tuple else map(tuple, column),
                        )
                    )
                    continue
            texts.append([value(v, inner) for v in column])  # mixed or nested: value by value
        key = (keys, nl, tuple(layout), n)
        literals = batches.get(key)
        if literals is None:
            literals = _batch_literals(_literals(keys, nl, key[2]), n, "," + nl)
            # (str keys only, as `template`'s: 1, 1.0 and True are equal as keys but written differently)
            if len(batches) < TEMPLATES and batched[0] < BATCHED and all(k.__class__ is str for k in keys):
                batches[key] = literals
                batched[0] += sum(map(len, literals))
        # no dict of the batch is marked active: a cycle through one passes through a nested container, which is marked
        # (the values in the layout's order, each column laid into every `width`-th place: a C copy per column; then
        # the literals between them: one join copies it all, where '%' formatting read each literal character)
        width = len(texts)
        parts: list[Any] = [None] * (2 * width * n + 1)
        for place, texts_of_column in enumerate(texts):
            parts[2 * place + 1 :: 2 * width] = texts_of_column
        parts[::2] = literals
        return "".join(parts)

    def container(o: list[Any] | tuple[Any, ...] | dict[Any, Any] | Rows, nl: str) -> str:
        if not o:
            return "{}" if isinstance(o, dict) else "[]"
        if len(o) >= STREAM_ITEMS:
            raise _Large
        if o.__class__ is Rows and o.columns is not None:  # (a small file's tensors: column by column, as a batch)
            laid = o.columns(o.items)
            if laid is not None:
                inner = nl + INDENT
                return "[" + inner + columns(laid[0], laid[1], inner) + nl + "]"
        marker = id(o)
        if marker in active:
            raise ValueError("Circular reference detected")
        active.add(marker)
        inner = nl + INDENT
        if isinstance(o, dict):
            keys = tuple(o)
            text = templates.get((keys, nl)) or template(keys, nl)
            text %= tuple(
                [
                    (string(v) if len(v) < LONG else _long_string(v))
                    if (cls := v.__class__) is str
                    else int_repr(v)
                    if cls is int
                    else "null"
                    if v is None
                    else "true"
                    if v is True
                    else "false"
                    if v is False
                    else container(v, inner)
                    if cls is list or cls is dict
                    else value(v, inner)
                    for v in o.values()
                ]
            )
        else:
            parts = [
                (string(v) if len(v) < LONG else _long_string(v))
                if (cls := v.__class__) is str
                else int_repr(v)
                if cls is int
                else container(v, inner)
                if cls is dict or cls is list
                else value(v, inner)
                for v in o
            ]
            text = "[" + inner + ("," + inner).join(parts) + nl + "]"
        active.discard(marker)
        return text

    def stream(o: Any, nl: str) -> None:
        """`o` joined into one piece when it is small and holds nothing large, else item by item."""
        if not isinstance(o, (list, tuple, dict)) and o.__class__ is not Rows:
            if isinstance(o, (str, int, float)) or o is None:
                emit(value(o, nl))
                return
            marker = id(o)  # another object: what `default` makes of it, which may be large
            if marker in active:
                raise ValueError("Circular reference detected")
            active.add(marker)
            streaming.append(marker)
            stream(default(o), nl)
            streaming.pop()
            active.discard(marker)
            return
        if len(o) < STREAM_ITEMS:
            try:
                emit(container(o, nl))
                return
            except _Large:  # something inside is large: forget the markers of the abandoned join
                active.clear()
                active.update(streaming)
        marker = id(o)
        if marker in active:
            raise ValueError("Circular reference detected")
        active.add(marker)
        streaming.append(marker)
        inner = nl + INDENT
        first = True
        if isinstance(o, dict):
            emit("{")
            for k, v in o.items():
                emit(("" if first else ",") + inner + (string(k) if k.__class__ is str else _key(k)) + ": ")
                stream(v, inner)
                first = False
            emit(nl + "}")
        else:
            emit("[" + inner)
            sep = "," + inner
            laid_rows = o.__class__ is Rows and o.columns is not None
            size = ROWS if laid_rows and len(o) > ROWS else STREAM_ITEMS  # (a long list: fewer, larger batches)
            for start in range(0, len(o), size):  # a batch of small items: one join
                laid = o.columns(o.items[start : start + size]) if laid_rows else None  # type: ignore[union-attr, misc]
                batch = o[start : start + size] if laid is None else ()
                try:
                    rows = (
                        columns(laid[0], laid[1], inner)
                        if laid is not None
                        else records(batch, inner)
                        if batch[0].__class__ is dict
                        else None
                    )
                    text = (
                        rows
                        if rows is not None
                        else sep.join(
                            [
                                (string(v) if len(v) < LONG else _long_string(v))
                                if (cls := v.__class__) is str
                                else int_repr(v)
                                if cls is int
                                else container(v, inner)
                                if cls is dict or cls is list
                                else value(v, inner)
                                for v in batch
                            ]
                        )
                    )
                except _Large:  # an item holds something large: the batch item by item
                    active.clear()
                    active.update(streaming)
                    for v in batch or o[start : start + size]:
                        emit("" if first else sep)
                        stream(v, inner)
                        first = False
                    continue
                if not first:
                    emit(sep)
                emit(text)
                first = False
            emit(nl + "]")
        streaming.pop()
        active.discard(marker)

    stream(obj, "\n")
    if buffer:
        out("".join(buffer))
