"""The zip reader's runs (`loaders._zip`, issue 16): an archive's central directory and members read without a Python
step a member, where the archive is plain, for archives of `_zip.RUNS_FROM` members or more (a smaller one is read
member by member, and this module is not imported).

A directory's entries of one shape (name, extra field and comment lengths) lie at one stride: a block of them is
checked and read by stepped slices of its bytes (`plain_entries`). The members whose structures a window holds are
read in runs (`run`): of one shape one stride apart by stepped slices of the window (`_uniform_members`), else each
byte place of every member's structures gathered by one `itemgetter` call (`_plain_members`). A window's members are
planned in C calls where the offsets increase (`near`). Every check `_zip._members` makes of a member is made here for
all the members of a run; a member that fails one is left to it, so the members, regions, reads and errors are those
of the member-by-member reading (`tests/loaders/test_zip_runs.py`).
"""

from __future__ import annotations

import struct
import sys
from bisect import bisect_right
from itertools import islice, repeat
from operator import add, and_, eq, ge, itemgetter, le, lt, mul, sub

from loaders._zip import _FIELD_HEAD, ALIGNMENT, CD_SIG, DESCRIPTOR_SIG, LOCAL_SIG, PADDING_TAG, PAGE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

    from loaders._zip import Columns, _Windows

RUN_START = 8  # members a run first reads together (`run`): twice as many each time all of them are plain


def plain_entries(cd: bytes, n_total: int, bounds: list[int]) -> Columns | None:
    """The directory's entries as columns, read a block of entries of one shape at a time, where it is plain:
    `n_total` entries that fill it exactly, ASCII names, no zip64 value (torch.save's, a member below 4 GiB;
    Python's zipfile's); else None (`_zip._entries` reads them one by one, and finds what is wrong).

    Entries of one shape (their name, extra field and comment lengths) lie at one stride: a block of them is checked
    (each one's signature and lengths) and read by stepped slices of its bytes, one a byte of a field (`_field`), the
    names a character at a time, so the work an entry is a few bytes copied a field, not a call (torch's 100,000
    storages' records are five blocks: data/0-9, 10-99...). More blocks than `MAX_BLOCKS` plus one a `RUN_START`
    squared entries (names of many lengths) are read one by one."""
    if n_total < RUN_START or sys.byteorder != "little":
        return None
    flags: list[int] = []
    methods: list[int] = []
    csizes: list[int] = []
    usizes: list[int] = []
    names: list[str] = []
    offsets: list[int] = []
    pos, left, cd_len, blocks = 0, n_total, len(cd), 0
    while left:
        if pos + 46 > cd_len or not cd.startswith(CD_SIG, pos):
            return None
        name_len, extra_len, comment_len = _LENGTHS.unpack_from(cd, pos + 28)
        stride = 46 + name_len + extra_len + comment_len
        k = _same_shape(cd, pos, stride, min(left, (cd_len - pos) // stride))
        blocks += 1
        if not k or blocks > MAX_BLOCKS + (n_total - left) // RUN_START**2:
            return None
        block = cd[pos : pos + k * stride]
        flags += _field(block, 8, 2, stride)
        methods += _field(block, 10, 2, stride)
        csizes += _field(block, 20, 4, stride)
        usizes += _field(block, 24, 4, stride)
        offsets += _field(block, 42, 4, stride)
        text = bytearray(k * (name_len + 1))  # the names, each followed by a newline
        for i in range(name_len):
            text[i :: name_len + 1] = block[46 + i :: stride]
        text[name_len :: name_len + 1] = b"\n" * k
        if text.count(b"\n") != k or not text.isascii():  # (a name holding a newline; not ASCII: `_entries`)
            return None
        read = text.decode("ascii").split("\n")
        del read[-1]
        names += read
        pos += k * stride
        left -= k
        bounds.append(n_total - left)
    if pos != cd_len or 0xFFFFFFFF in csizes or 0xFFFFFFFF in usizes or 0xFFFFFFFF in offsets:
        return None  # (bytes after the entries; values in a zip64 extra field)
    return flags, methods, csizes, usizes, names, offsets


_LENGTHS = struct.Struct("<HHH")  # an entry's name, extra field and comment lengths (at +28)
MAX_BLOCKS = 64  # blocks of entries of one shape `plain_entries` reads, besides one a RUN_START**2 entries
_SHAPE = (0, 1, 2, 3, 28, 29, 30, 31, 32, 33)  # the bytes of an entry that give its shape: signature, lengths


def _same_shape(cd: bytes, pos: int, stride: int, most: int) -> int:
    """How many entries from `pos` on (at most `most`) have the signature and lengths of the one at `pos`, one after
    the other at `stride`: looked at in stepped slices, `RUN_START` entries first and twice as many each time all
    were so (an entry the reading met one by one would be the same)."""
    first = cd[pos : pos + 34]
    same, chunk = 0, RUN_START
    while same < most:
        k = min(chunk, most - same)
        at = pos + same * stride
        lead = min(k - len(cd[at + o : at + k * stride : stride].lstrip(first[o : o + 1])) for o in _SHAPE)
        same += lead
        if lead < k:
            break
        chunk *= 2
    return same


def _field(block: bytes, offset: int, width: int, stride: int) -> list[int]:
    """The little-endian field of `width` bytes (2 or 4) at `offset` in each entry of a block of entries `stride` bytes
    apart: its bytes gathered by stepped slices, cast to integers in one C call."""
    k = len(block) // stride
    gathered = bytearray(k * width)
    for i in range(width):
        gathered[i::width] = block[offset + i :: stride]
    return memoryview(gathered).cast("H" if width == 2 else "I").tolist()


def run(
    made: tuple[list[Any], ...],
    windows: _Windows,
    window: bytes,
    win_at: int,
    columns: Columns,
    index: int,
    bounds: list[int],
) -> int:
    """How many members from `index` on `_plain_members` reads from the window (`window`, at `win_at`), added to
    the columns `made`: `RUN_START` members are looked at first, then twice as many each time all were plain (a run
    that stops early costs about what it reads, so a member read alone costs a run of at most `RUN_START`); a look
    ends where a block of entries of one shape does (`bounds`: a block's members are often all of one shape)."""
    offsets = columns[5]
    if offsets[index] < win_at:
        return 0
    end = bisect_right(offsets, win_at + len(window) - 30, index)  # (the members whose fixed part it holds)
    start, chunk = index, RUN_START
    while index < end:
        stop = min(end, index + chunk)
        if bounds:
            stop = min(stop, bounds[bisect_right(bounds, index)])
        index += _plain_members(made, windows, window, win_at, columns, index, stop)
        if index < stop:
            break
        chunk *= 2
    return index - start


def _plain_members(
    made: tuple[list[Any], ...], windows: _Windows, window: bytes, win_at: int, columns: Columns, start: int, stop: int
) -> int:
    """How many of the members `start` to `stop` (each one's fixed part in `window`, in file order) are plain, from
    `start` on, read in C calls and added to the columns `made`, as `_members` reads each: its local header signature,
    its extra field torch's padding field alone, its data descriptor's signature (flag bit 3, as the first member's)
    in the window, its data within the file.

    The bytes at one place of every member's structure are gathered in one C call (an `itemgetter` of their offsets
    in the window, over a view of it from that place): a byte of each member costs an index, not a call a member.
    Each condition is told for all the members at once, and only where one fails, member by member (`_leading`)."""
    if _uniform_members(made, windows, window, win_at, columns, start, stop):
        return stop - start
    all_flags, methods, csizes, usizes, names, offsets = columns
    n = stop - start
    if n < 2:  # (an itemgetter of one offset gives a byte, not a tuple of one)
        return 0
    ats, view, win_end = offsets[start:stop], memoryview(window), win_at + len(window)
    rel = list(map(sub, ats, repeat(win_at)))
    fixed = itemgetter(*rel)
    for place, byte in enumerate(LOCAL_SIG):
        got = fixed(view[place:])
        if got.count(byte) != n:
            n = _leading(map(eq, got[:n], repeat(byte)))
    name_lens, extra_lens = _little(fixed(view[26:]), fixed(view[27:])), _little(fixed(view[28:]), fixed(view[29:]))
    if min(extra_lens[:n], default=4) < 4:  # (no room for a padding field: read alone)
        n = _leading(map(ge, extra_lens[:n], repeat(4)))
    header_lens = list(map(add, map(add, name_lens, extra_lens), repeat(30)))
    data = list(map(add, ats, header_lens))
    sizes = csizes[start:stop]
    ends = list(map(add, data, sizes))
    if n and max(data[:n]) > win_end:  # (the extra field in the window)
        n = _leading(map(le, data[:n], repeat(win_end)))
    if n and max(ends[:n]) > windows.probe.size:
        n = _leading(map(le, ends[:n], repeat(windows.probe.size)))
    if n < 2:  # (from here on the bytes gathered are those of `n` members, each in the window)
        return 0
    head = itemgetter(*map(add, map(add, rel[:n], name_lens), repeat(30)))  # the extra field's: torch's padding tag
    tag = head(view).count(PADDING_TAG & 0xFF) == head(view[1:]).count(PADDING_TAG >> 8) == n
    body = _little(head(view[2:]), head(view[3:]))  # (and the length of the bytes after it)
    if not tag or body != list(map(sub, extra_lens[:n], repeat(4))):
        tags = map(eq, zip(head(view), head(view[1:]), strict=True), repeat((PADDING_TAG & 0xFF, PADDING_TAG >> 8)))
        n = _leading(map(and_, tags, map(eq, body, map(sub, extra_lens, repeat(4)))))
    described = all_flags[start] & 0x8
    flags = list(map(and_, all_flags[start : start + n], repeat(0x8)))
    if flags.count(described) != n:
        n = _leading(map(eq, flags, repeat(described)))
    descriptors: Iterable[int] = repeat(0)
    if described:  # (a descriptor's signature in the window: 4 bytes, 12 more without it, 8 more past 4 GiB)
        if n and max(ends[:n]) > win_end - 4:
            n = _leading(map(le, ends[:n], repeat(win_end - 4)))
        if n < 2:
            return 0
        after = itemgetter(*map(sub, ends[:n], repeat(win_at)))
        signed = all(after(view[place:]).count(byte) == n for place, byte in enumerate(DESCRIPTOR_SIG))
        if signed and max(sizes[:n]) < 0xFFFFFFFF:
            descriptors = repeat(16)  # (torch's: each signed)
        else:
            signs = map(window.startswith, repeat(DESCRIPTOR_SIG), map(sub, ends[:n], repeat(win_at)))
            lengths = map(add, map(mul, signs, repeat(4)), map(mul, map(ge, sizes, repeat(0xFFFFFFFF)), repeat(8)))
            descriptors = list(map(add, lengths, repeat(12)))
    if n:
        last = n - 1
        windows.extra = -1 if data[last] % ALIGNMENT == 0 else extra_lens[last]
        read: tuple[Iterable[Any], ...] = (names[start : start + n], ats, data, sizes, usizes[start:stop],
                                           methods[start:stop], header_lens, extra_lens, descriptors)  # fmt: skip
        for column, values in zip(made, read, strict=True):
            column += islice(values, n)
    return n


def _uniform_members(
    made: tuple[list[Any], ...], windows: _Windows, window: bytes, win_at: int, columns: Columns, start: int, stop: int
) -> bool:
    """Whether the members `start` to `stop` are all plain and of one shape, read so and added to the columns `made`:
    their local headers one stride apart, each of the same name and extra field lengths, flags and size (torch.save's
    storages of one size, named with keys of one length). Each byte `_plain_members` looks at then lies at one place
    of every member, read by a stepped slice of the window; every member's fields are the first one's, or a step
    from them. Anything else (or a member that is not plain): False, nothing added, for `_plain_members` to read."""
    all_flags, methods, csizes, usizes, names, offsets = columns
    n = stop - start
    ats, sizes = offsets[start:stop], csizes[start:stop]
    first, size = ats[0] - win_at, sizes[0]
    stride = ats[1] - ats[0] if n > 1 else 0
    if (
        n < 2
        or ats != list(range(ats[0], ats[0] + n * stride, stride))
        or sizes.count(size) != n
        or all_flags[start:stop].count(all_flags[start]) != n
    ):
        return False
    last = first + (n - 1) * stride + 1  # (a stepped slice of a byte of each member ends there)

    def same(place: int, value: int) -> bool:  # each member's byte at `place` from its local header is `value`
        return window[first + place : last + place : stride].count(value) == n

    name_len, extra_len = _LENGTHS.unpack_from(window, first + 26)[:2]
    header_len = 30 + name_len + extra_len
    data, end = ats[0] + header_len, ats[-1] + header_len + size  # the first member's data, the last one's end
    if (
        extra_len < 4
        or ats[-1] + header_len > win_at + len(window)  # (each extra field in the window)
        or end > windows.probe.size
        or not all(same(place, byte) for place, byte in enumerate(LOCAL_SIG))
        or not all(same(place, window[first + place]) for place in range(26, 30))
        or not all(same(30 + name_len + p, b) for p, b in enumerate(_FIELD_HEAD.pack(PADDING_TAG, extra_len - 4)))
    ):
        return False
    descriptor = 0
    if all_flags[start] & 0x8:
        after = header_len + size  # (its signature: 4 bytes, 12 more without it, 8 more past 4 GiB)
        if end + 4 > win_at + len(window) or not all(same(after + p, b) for p, b in enumerate(DESCRIPTOR_SIG)):
            return False  # (unsigned descriptors, some or all: read member by member)
        descriptor = 16 + (8 if size >= 0xFFFFFFFF else 0)
    windows.extra = -1 if (data + (n - 1) * stride) % ALIGNMENT == 0 else extra_len
    got = (names[start:stop], ats, range(data, data + n * stride, stride), sizes, usizes[start:stop],
           methods[start:stop], repeat(header_len, n), repeat(extra_len, n), repeat(descriptor, n))  # fmt: skip
    for column, values in zip(made, got, strict=True):
        column += values
    return True


def _little(low: tuple[int, ...], high: tuple[int, ...]) -> list[int]:
    """Two-byte little-endian values from their bytes (most of them under 256: one pass)."""
    if high.count(0) == len(high):
        return list(low)
    return list(map(add, low, map(mul, high, repeat(256))))


def _leading(flags: Iterable[bool]) -> int:
    """How many of `flags` are true before the first false one."""
    told = list(flags)
    return told.index(False) if False in told else len(told)


def near(offsets: Sequence[int], first: int, stop: int) -> int:
    """Where the members from `first` on (`first` near its window, the offsets increasing) stop following one another
    as `_Windows.fetch` takes them in: the first member whose fixed part does not start within a page of the one before
    it (its 30 bytes on) or ends past `stop`. Told of them all at once: their offsets a step apart (a block of
    torch.save's storages of one size), or the steps between them all in bounds; else member by member."""
    end = bisect_right(offsets, stop - 30, first)
    if end - first < 2:
        return end
    block = offsets[first:end]
    step = block[1] - block[0]
    if 30 <= step < PAGE + 30 and block == list(range(block[0], block[0] + len(block) * step, step)):
        return end
    steps = list(map(sub, block[1:], block))
    if min(steps) >= 30 and max(steps) < PAGE + 30:
        return end
    return first + 1 + _leading(map(and_, map(ge, steps, repeat(30)), map(lt, steps, repeat(PAGE + 30))))
