"""A protobuf wire-format walker over a `Probe`: tags, varints and spans, never the payloads it is not asked for.

Each field is reported as a `Field`: its number, wire type, where it starts, and either its integer value
(varint, fixed32, fixed64) or the span of its length-delimited payload. Reads go through a small window, so a
multi-gigabyte message with large `bytes` fields is walked by reading only its framing. Nothing here knows a
schema: callers walk the fields they know and skip the rest.
"""

from __future__ import annotations

from collections.abc import Iterator

from inspector.errors import FormatError, LimitExceededError
from inspector.probe import Probe
from inspector.recordtype import record

VARINT, FIXED64, LEN, SGROUP, EGROUP, FIXED32 = 0, 1, 2, 3, 4, 5
MIN_WINDOW, MAX_WINDOW = 4 << 10, 256 << 10  # a window grows while reads continue it, shrinks after a jump
MAX_VARINT_BYTES = 10


@record(frozen=True, slots=True)
class Field:
    """One field: `value` for numbers; `start`/`length` of the payload for length-delimited fields."""

    number: int
    wire: int
    tag_start: int
    value: int = 0
    start: int = 0
    length: int = 0

    @property
    def end(self) -> int:
        return self.start + self.length


class Wire:
    """Reads fields of messages of one file through a window of its bytes."""

    def __init__(self, probe: Probe, fmt: str) -> None:
        self.probe, self.fmt = probe, fmt
        self._buf, self._at = b"", 0
        self._window = MIN_WINDOW

    def bytes_at(self, pos: int, n: int) -> bytes:
        rel = pos - self._at
        if rel < 0 or rel + n > len(self._buf):
            continues = 0 <= rel <= len(self._buf)
            self._window = min(2 * self._window, MAX_WINDOW) if continues else MIN_WINDOW
            want = max(n, min(self._window, self.probe.size - pos))
            self._buf = self.probe.read_at(pos, want, fmt=self.fmt, what="protobuf field")
            self._at, rel = pos, 0
        return self._buf[rel : rel + n]

    def varint(self, pos: int, end: int) -> tuple[int, int]:
        """The varint at `pos` (which must end by `end`) and the position after it."""
        rel = pos - self._at
        if 0 <= rel < len(self._buf) and pos < end and self._buf[rel] < 0x80:  # one byte: most tags and lengths
            return self._buf[rel], pos + 1
        chunk = self.bytes_at(pos, min(MAX_VARINT_BYTES, end - pos))
        value = shift = 0
        for i, byte in enumerate(chunk):
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value, pos + i + 1
            shift += 7
        if len(chunk) < MAX_VARINT_BYTES:
            raise FormatError(self.probe.path, self.fmt, "a varint runs past the end of its message", pos)
        raise FormatError(self.probe.path, self.fmt, "a varint longer than 10 bytes", pos)

    def fields(self, start: int, end: int) -> Iterator[Field]:
        """The fields of the message occupying `[start, end)`, in file order."""
        pos = start
        while pos < end:
            tag, after = self.varint(pos, end)
            number, wire = tag >> 3, tag & 7
            if number == 0:
                raise FormatError(self.probe.path, self.fmt, "field number 0", pos)
            if wire == VARINT:
                value, nxt = self.varint(after, end)
                yield Field(number, wire, pos, value=value)
            elif wire in (FIXED64, FIXED32):
                size = 8 if wire == FIXED64 else 4
                nxt = after + size
                if nxt > end:
                    raise FormatError(self.probe.path, self.fmt, "a fixed-size field runs past its message", pos)
                yield Field(number, wire, pos, value=int.from_bytes(self.bytes_at(after, size), "little"))
            elif wire == LEN:
                length, body = self.varint(after, end)
                nxt = body + length
                if nxt > end:
                    raise FormatError(
                        self.probe.path,
                        self.fmt,
                        f"field {number} of {length:,} bytes runs past the end of its message at byte {end:,}",
                        pos,
                    )
                yield Field(number, wire, pos, start=body, length=length)
            else:  # groups (3, 4) are deprecated and absent from the schemas read here; 6, 7 do not exist
                raise FormatError(self.probe.path, self.fmt, f"unsupported wire type {wire} in field {number}", pos)
            pos = nxt

    def text(self, field: Field, cap: int = 1 << 16) -> str:
        """A string field's value, cut to `cap` bytes."""
        if field.wire != LEN:
            raise FormatError(self.probe.path, self.fmt, f"field {field.number} is not a string", field.tag_start)
        return self.bytes_at(field.start, min(field.length, cap)).decode("utf-8", "replace")

    def packed(self, field: Field, cap: int) -> list[int]:
        """The varints of a packed repeated field (or the one value of an unpacked occurrence)."""
        if field.wire == VARINT:
            return [field.value]
        if field.wire != LEN:
            raise FormatError(self.probe.path, self.fmt, f"field {field.number} has wire type {field.wire}")
        out: list[int] = []
        pos = field.start
        while pos < field.end:
            if len(out) >= cap:
                raise LimitExceededError(self.probe.path, self.fmt, f"more than {cap} packed values", field.start)
            value, pos = self.varint(pos, field.end)
            out.append(value)
        return out


def signed(value: int) -> int:
    """A varint read as int64 (negative numbers are encoded in ten bytes, two's complement)."""
    return value - (1 << 64) if value >= 1 << 63 else value
