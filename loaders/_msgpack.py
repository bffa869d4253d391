"""A bounded, offset-exact MessagePack reader (the msgpack spec, github.com/msgpack/msgpack/blob/master/spec.md).

It reads one value's head at a time: its type byte and length fields, never a payload it is not asked for. Strings
are read only where the caller takes them (map keys, a dtype name); bin, ext and other string payloads are skipped
by their length, so the bytes of an array cost nothing. Every length is checked against the file before the cursor
moves past it; the caller bounds depth and counts.

Type bytes::

    00-7f positive fixint   80-8f fixmap (n)   90-9f fixarray (n)   a0-bf fixstr (n)   c0 nil   c2/c3 false/true
    c4-c6 bin 8/16/32       c7-c9 ext 8/16/32 (length, then i8 type)  ca/cb float 32/64  cc-cf uint 8..64
    d0-d3 int 8..64         d4-d8 fixext 1/2/4/8/16 (i8 type)  d9-db str 8/16/32  dc/dd array 16/32  de/df map 16/32
    e0-ff negative fixint   (c1 is never used)
"""

from __future__ import annotations

import struct

from inspector.errors import FormatError, TruncatedFileError
from inspector.probe import Probe

WINDOW = 4096  # bytes read at once from the cursor: a tree's keys and an array's header lie together

# the kinds of value `Cursor.next` returns
MAP, ARRAY, STR, BIN, EXT, INT, FLOAT, NIL, BOOL = "map", "array", "str", "bin", "ext", "int", "float", "nil", "bool"

# type byte -> (kind, struct format of its length or value, or the fixed length of a fixext)
_SIZED: dict[int, tuple[str, str]] = {
    0xC4: (BIN, ">B"), 0xC5: (BIN, ">H"), 0xC6: (BIN, ">I"),
    0xC7: (EXT, ">B"), 0xC8: (EXT, ">H"), 0xC9: (EXT, ">I"),
    0xD9: (STR, ">B"), 0xDA: (STR, ">H"), 0xDB: (STR, ">I"),
    0xDC: (ARRAY, ">H"), 0xDD: (ARRAY, ">I"), 0xDE: (MAP, ">H"), 0xDF: (MAP, ">I"),
    0xCA: (FLOAT, ">f"), 0xCB: (FLOAT, ">d"),
    0xCC: (INT, ">B"), 0xCD: (INT, ">H"), 0xCE: (INT, ">I"), 0xCF: (INT, ">Q"),
    0xD0: (INT, ">b"), 0xD1: (INT, ">h"), 0xD2: (INT, ">i"), 0xD3: (INT, ">q"),
}  # fmt: skip
_FIXEXT = {0xD4: 1, 0xD5: 2, 0xD6: 4, 0xD7: 8, 0xD8: 16}
_STRUCTS = {fmt: struct.Struct(fmt) for _, fmt in _SIZED.values()}


class Cursor:
    """Values read in order from a file, through a window of bytes read at once.

    After `next()`: `kind`, `value` (an int, float or bool; the element count of a map or array; the payload length of
    a str, bin or ext), `code` (an ext's type), and `pos` at the payload (str, bin, ext) or the next value. `context`
    (the caller's path in its tree, names joined with '/') is told in error messages, made only then.
    """

    def __init__(self, probe: Probe, fmt: str, pos: int = 0, window_end: int | None = None) -> None:
        self.probe, self.fmt, self.pos = probe, fmt, pos
        self.end = probe.size
        self.window_end = probe.size if window_end is None else window_end  # (a claim reads ahead within the head)
        self.buf, self.buf_at = b"", pos
        self.kind, self.value, self.code = NIL, 0, 0
        self.context: tuple[str, ...] = ()

    def _take(self, n: int, what: str) -> bytes:
        at = self.pos - self.buf_at
        if at < 0 or at + n > len(self.buf):
            if self.pos + n > self.end:
                raise TruncatedFileError(
                    self.probe.path,
                    self.fmt,
                    f"{self._where(what)} ends at byte {self.pos + n:,} but the file has {self.end:,} bytes",
                    self.pos,
                )
            size = max(n, min(WINDOW, self.window_end - self.pos))
            self.buf, self.buf_at, at = self.probe.read_at(self.pos, size, fmt=self.fmt, what=what), self.pos, 0
        self.pos += n
        return self.buf[at : at + n]

    def next(self, what: str = "value") -> str:
        """Read the head of the next value; returns its kind."""
        start = self.pos
        b = self._take(1, what)[0]
        self.code = 0
        if b <= 0x7F or b >= 0xE0:
            self.kind, self.value = INT, b if b <= 0x7F else b - 0x100
        elif b <= 0x8F:
            self.kind, self.value = MAP, b & 0x0F
        elif b <= 0x9F:
            self.kind, self.value = ARRAY, b & 0x0F
        elif b <= 0xBF:
            self.kind, self.value = STR, b & 0x1F
        elif b == 0xC0:
            self.kind, self.value = NIL, 0
        elif b in (0xC2, 0xC3):
            self.kind, self.value = BOOL, b == 0xC3
        elif b in _FIXEXT:
            self.kind, self.value = EXT, _FIXEXT[b]
            self.code = self._take(1, what)[0]
        elif b in _SIZED:
            self.kind, fmt = _SIZED[b]
            layout = _STRUCTS[fmt]
            (self.value,) = layout.unpack(self._take(layout.size, what))
            if self.kind == EXT:
                self.code = self._take(1, what)[0]
        else:
            where = self._where(what)
            raise FormatError(self.probe.path, self.fmt, f"byte 0x{b:02x} is no msgpack type ({where})", start)
        if self.kind in (STR, BIN, EXT) and self.pos + self.value > self.end:
            raise TruncatedFileError(
                self.probe.path,
                self.fmt,
                f"{self._where(what)} of {self.value:,} bytes ends at byte {self.pos + self.value:,} but the file has "
                f"{self.end:,} bytes",
                start,
            )
        return self.kind

    def peek(self, n: int) -> bytes:
        """Up to `n` bytes from the cursor on (fewer at the end of the file), the cursor left where it is."""
        n = min(n, self.end - self.pos)
        at = self.pos - self.buf_at
        if at < 0 or at + n > len(self.buf):
            self._take(n, "value")
            self.pos -= n
            at = 0
        return self.buf[at : at + n]

    def _where(self, what: str) -> str:
        return f"{what} in {'/'.join(self.context)!r}" if self.context else what

    def text(self, what: str) -> str:
        """The payload of the str just read."""
        return self._take(self.value, what).decode("utf-8", "replace")

    def skip(self) -> None:
        """Move past the payload of the str, bin or ext just read (its length was checked by `next`)."""
        self.pos += self.value
