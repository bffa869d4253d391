"""A bounded FlatBuffers reader over a `Probe`: tables, scalars, vectors and strings, never a payload it is not asked.

The binary layout (flatbuffers.dev, "FlatBuffers internals"), little-endian::

    buffer   u32 root offset, [4-byte file identifier], objects
    table    i32 soffset: its vtable lies at `table - soffset`, then the table's inline fields
    vtable   u16 vtable bytes, u16 table bytes, one u16 per field: the field's offset in the table, 0 when absent
    offset   u32, relative to its own position and always forward (so offsets cannot form a cycle); 0 is invalid
    vector   u32 element count, then the elements (scalars, or u32 offsets to tables or strings)
    string   u32 byte count, the UTF-8 bytes, a NUL
    union    a u8 type field beside an offset field to the member's table

Everything read is checked against the buffer's end (a file, or a nested buffer inside one) before anything is
allocated. Pages of the file are read on demand and a few kept, so a model of gigabytes with its constant data inline
is walked by reading the pages its structures lie in. `work` counts the vector elements read and is capped by the
buffer's size (each is read once: vectors are remembered by position), so objects made to overlap cannot make a
small file cost quadratic time. Every structure read is recorded in `spans` and `whats` (where, and what it holds), for
the caller to attribute the file's bytes; the caller records the payloads it only measured.
"""

from __future__ import annotations

import struct

from inspector.errors import FormatError, LimitExceededError, TruncatedFileError
from inspector.probe import Probe
from inspector.recordtype import record

PAGE_BITS = 12
PAGE = 1 << PAGE_BITS
MAX_PAGES = 512  # pages kept (2 MiB); all dropped when full: the walk moves on through the file
MAX_STRING = 1 << 16  # characters of a string kept (a name)
WORK_SLACK = 1 << 16  # vector elements read beyond one per byte of the buffer: the cap of `work`
STRUCTURE = "structure"  # what a table, vtable, offset or length prefix is, in `spans`
STRUCTS = {code: struct.Struct("<" + code) for code in ("b", "B", "h", "H", "i", "I", "q", "Q", "f")}
SPAN_BITS = 48  # a span's length below its start in `spans` (a file of up to 256 TiB)


@record(frozen=True, slots=True)
class Table:
    """A table found at `pos`: its inline part is `size` bytes; `fields` are its vtable's entries (each field's
    offset in the table by slot, 0 for one it does not have)."""

    pos: int
    size: int
    fields: tuple[int, ...]


class FlatBuffer:
    """The FlatBuffer occupying `[start, end)` of the probe's file (the whole file unless nested)."""

    def __init__(self, probe: Probe, fmt: str, start: int = 0, end: int | None = None) -> None:
        self.probe, self.fmt = probe, fmt
        self.start, self.end = start, probe.size if end is None else end
        self.pages: dict[int, bytes] = {}
        self.spans: list[int] = []  # each `start << SPAN_BITS | length` (ints sort and hash fastest)
        self.whats: list[str] = []  # what each span holds
        self.work, self.max_work = 0, self.end - self.start + WORK_SLACK
        self._vectors: dict[tuple[int, str], tuple[int, ...]] = {}  # (position, format) -> elements read there
        self._vtables: dict[int, tuple[int, tuple[int, ...]]] = {}  # position -> (table size, entries): tables share

    # -- bytes ---------------------------------------------------------------------------------

    def error(self, reason: str, at: int | None = None) -> FormatError:
        return FormatError(self.probe.path, self.fmt, reason, at)

    def check(self, pos: int, n: int, what: str) -> None:
        """`[pos, pos + n)` lies inside the buffer."""
        if pos < self.start or n < 0 or pos + n > self.end:
            raise TruncatedFileError(
                self.probe.path,
                self.fmt,
                f"{what} at byte {pos:,} ({n:,} bytes) lies outside the flatbuffer's {self.start:,}-{self.end:,}",
                pos,
            )

    def read(self, pos: int, n: int, what: str) -> bytes:
        self.check(pos, n, what)
        first, last = pos // PAGE, (pos + n - 1) // PAGE if n else pos // PAGE
        if first == last:  # (most reads: one field, a name, a short vector)
            at = pos - first * PAGE
            return (self.pages.get(first) or self._page(first))[at : at + n]
        if last - first > 2:  # a long vector: read at once, not kept
            return self.probe.read_at(pos, n, fmt=self.fmt, what=what)
        data = b"".join(self._page(p) for p in range(first, last + 1))
        at = pos - first * PAGE
        return data[at : at + n]

    def _page(self, index: int) -> bytes:
        page = self.pages.get(index)
        if page is None:
            if len(self.pages) >= MAX_PAGES:
                self.pages.clear()
            at = index * PAGE
            page = self.pages[index] = self.probe.read_at(at, min(PAGE, self.probe.size - at), fmt=self.fmt)
        return page

    def unpack(self, fmt: str, pos: int, what: str) -> int:
        """The scalar of struct code `fmt` at `pos` (unpacked in place where it lies in one page read already: a walk
        reads millions)."""
        code = STRUCTS[fmt]
        page = self.pages.get(pos >> PAGE_BITS)
        at = pos & (PAGE - 1)
        if page is not None and at + code.size <= len(page) and self.start <= pos <= self.end - code.size:
            return code.unpack_from(page, at)[0]  # type: ignore[no-any-return]
        return code.unpack(self.read(pos, code.size, what))[0]  # type: ignore[no-any-return]

    def span(self, start: int, length: int, what: str = STRUCTURE) -> None:
        self.spans.append(start << SPAN_BITS | length)
        self.whats.append(what)

    def spend(self, elements: int, at: int) -> None:
        """Count elements read (`work`), against the cap."""
        self.work += elements
        if self.work > self.max_work:
            raise LimitExceededError(
                self.probe.path, self.fmt, f"objects overlap: more than {self.max_work:,} vector elements read", at
            )

    # -- objects -------------------------------------------------------------------------------

    def root(self, what: str) -> Table:
        """The root table: the u32 at the buffer's start is its offset."""
        return self.table(self.start + self.unpack("I", self.start, "root offset"), what)

    def table(self, pos: int, what: str) -> Table:
        """The table at `pos`, its vtable checked (its fields are checked as they are read)."""
        vtable = pos - self.unpack("i", pos, what)
        known = self._vtables.get(vtable)
        if known is None:  # (read once: the tables of one kind share a vtable)
            vsize = self.unpack("H", vtable, "vtable")
            if vsize < 4 or vsize % 2:
                raise self.error(f"the vtable of {what} has an invalid size {vsize}", vtable)
            self.check(vtable, vsize, "vtable")
            self.spend((vsize - 4) // 2, vtable)
            size = self.unpack("H", vtable + 2, "vtable")
            entries = struct.unpack(f"<{(vsize - 4) // 2}H", self.read(vtable + 4, vsize - 4, "vtable"))
            known = self._vtables[vtable] = (size, entries)
            self.span(vtable, vsize)
        size, entries = known
        if size < 4:
            raise self.error(f"{what} has an invalid size {size}", pos)
        self.check(pos, size, what)
        self.span(pos, size)
        return Table(pos, size, entries)

    def field(self, t: Table, slot: int, width: int) -> int | None:
        """Where the field in `slot` lies (`width` bytes), or None when the table does not have it."""
        fields = t.fields
        offset = fields[slot] if slot < len(fields) else 0
        if not offset:
            return None
        if offset + width > t.size:
            raise self.error(f"field {slot} of a table lies past the table's {t.size} bytes", t.pos)
        return t.pos + offset

    def scalar(self, t: Table, slot: int, fmt: str, default: int = 0) -> int:
        pos = self.field(t, slot, STRUCTS[fmt].size)
        return default if pos is None else self.unpack(fmt, pos, "field")

    def ref(self, t: Table, slot: int, what: str) -> int | None:
        """Where the object the offset field in `slot` points to lies, or None when absent."""
        pos = self.field(t, slot, 4)
        if pos is None:
            return None
        return self._follow(pos, what)

    def _follow(self, pos: int, what: str) -> int:
        offset = self.unpack("I", pos, f"offset to {what}")
        if offset == 0:
            raise self.error(f"a zero offset to {what}", pos)
        target = pos + offset
        self.check(target, 4, what)
        return target

    def sub(self, t: Table, slot: int, what: str) -> Table | None:
        """The table the offset field in `slot` points to, or None."""
        pos = self.ref(t, slot, what)
        return None if pos is None else self.table(pos, what)

    def vector(self, t: Table, slot: int, width: int, what: str) -> tuple[int, int] | None:
        """(first element's position, count) of the vector in `slot`, its elements not read, or None when absent.
        The count prefix is recorded as structure; the caller records the elements."""
        pos = self.ref(t, slot, what)
        if pos is None:
            return None
        count = self.unpack("I", pos, f"length of {what}")
        self.check(pos + 4, count * width, what)
        self.span(pos, 4)
        return pos + 4, count

    def numbers(self, t: Table, slot: int, fmt: str, what: str, cap: int, kind: str = STRUCTURE) -> tuple[int, ...]:
        """The elements of a vector of scalars (`fmt` a struct code), at most `cap` of them; () when absent."""
        found = self.vector(t, slot, STRUCTS[fmt].size, what)
        if found is None:
            return ()
        start, count = found
        if count > cap:
            raise LimitExceededError(self.probe.path, self.fmt, f"{what} has {count:,} elements (cap {cap:,})", start)
        self.span(start, count * STRUCTS[fmt].size, kind)
        return self._elements(start, count, fmt, what)

    def _elements(self, start: int, count: int, fmt: str, what: str) -> tuple[int, ...]:
        key = (start, fmt)
        known = self._vectors.get(key)
        if known is not None and len(known) >= count:
            return known[:count]
        self.spend(count, start)
        width = STRUCTS[fmt].size
        values = struct.unpack(f"<{count}{fmt}", self.read(start, count * width, what))
        self._vectors[key] = values
        return values

    def tables(self, t: Table, slot: int, what: str, cap: int) -> list[Table]:
        """The tables of a vector of tables (each offset relative to its own slot); [] when absent."""
        found = self.vector(t, slot, 4, what)
        if found is None:
            return []
        start, count = found
        if count > cap:
            raise LimitExceededError(self.probe.path, self.fmt, f"{what} has {count:,} entries (cap {cap:,})", start)
        self.span(start, 4 * count)
        offsets = self._elements(start, count, "I", what)
        out = []
        for i, offset in enumerate(offsets):
            if offset == 0:
                raise self.error(f"a zero offset in {what}", start + 4 * i)
            out.append(self.table(start + 4 * i + offset, what))
        return out

    def string(self, t: Table, slot: int, what: str, kind: str = STRUCTURE) -> str | None:
        """The string in `slot` (its first `MAX_STRING` characters), or None when absent."""
        found = self.vector(t, slot, 1, what)
        if found is None:
            return None
        start, count = found
        self.check(start, count + 1, what)  # (and its NUL)
        self.span(start, count + 1, kind)
        return self.read(start, min(count, MAX_STRING), what).decode("utf-8", "replace")
