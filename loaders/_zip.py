"""Zip container structure, read from the central directory and the local headers only.

Layout (APPNOTE; FORMATS.md section 2). All integers little-endian.

    local header  30 + name_len + extra_len   'PK\\3\\4'; name len at +26, extra len at +28
    payload       compressed size             method 0 stored, 8 deflated
    descriptor    (flag bit 3) 12/20 bytes, 16/24 with 'PK\\7\\8'
    central dir   46 + name + extra + comment per member
    zip64 EOCD    'PK\\6\\6' 56 bytes, locator 'PK\\6\\7' 20 bytes
    EOCD          'PK\\5\\6' 22 + comment

The data offset of a member comes from the LOCAL header (torch pads there, not in the central
directory). Every size and offset is checked against the file size before use; the payload is never
read, except the first bytes of a deflated member when a loader asks `inflate_head`.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence  # (loaded by every run: `inspector.probe`)
from itertools import chain, compress, count, islice
from operator import add, attrgetter, eq, lt, sub

from inspector.errors import FormatError, LimitExceededError, TruncatedFileError
from inspector.probe import Probe
from inspector.records import Finding, Region, RegionColumns, RegionKind, Severity
from inspector.recordtype import fields, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from types import ModuleType
    from typing import Any

EOCD_SIG = b"PK\x05\x06"
ZIP64_EOCD_SIG = b"PK\x06\x06"
ZIP64_LOCATOR_SIG = b"PK\x06\x07"
EOCD_BYTES = 22  # without a comment: the whole of an empty zip
CD_SIG = b"PK\x01\x02"
LOCAL_SIG = b"PK\x03\x04"
DESCRIPTOR_SIG = b"PK\x07\x08"
MAX_COMMENT = 0xFFFF
MAX_MEMBERS = 1_000_000
MAX_CD_BYTES = 256 << 20
STORED, DEFLATED, BZIP2, LZMA = 0, 8, 12, 14
# What Python's zipfile inflates (np.load and Keras read their zips through it): deflate, bzip2, and LZMA after its
# 4-byte header and properties. torch's miniz reads deflate only: its archives are inflated so (`Inflated`'s default)
ZIPFILE_METHODS = frozenset({DEFLATED, BZIP2, LZMA})
COMPRESSION_NAMES = {0: "stored", 8: "deflated", 12: "bzip2", 14: "lzma", 93: "zstd"}
PADDING_TAG = 0x4246  # 'FB': the extra field torch pads local headers with for 64-byte alignment
DESCRIPTOR_LENGTHS = frozenset({12, 16, 20, 24})  # a data descriptor: crc and sizes (zip64: 8-byte), signature or not
_CD_ENTRY = struct.Struct("<8xHH8xIIHHH8xI")  # flags, method, csizes, usize, name, extra, comment lengths, offset
_LOCAL_FIXED = struct.Struct("<4s22xHH")  # a local header's signature, and its name and extra lengths at +26
_FIELD_HEAD = struct.Struct("<HH")  # an extra field's tag and body length
PAGE = 4096  # the smallest page size of the systems we run on: a larger one only widens what a window may span
MAX_WINDOW = 1 << 20  # bytes of one read of structures (`_Windows`)
ALIGNMENT = 64  # where torch's padding field puts every member's data (a multiple of it)
LENIENT_LIMIT = 8 << 20  # bytes a damaged deflate stream is inflated to in pure Python (about 5 s at most)


@record(frozen=True, slots=True)
class ZipMember:
    name: str
    header_offset: int
    data_offset: int  # absolute first payload byte, from the local header
    compress_size: int
    file_size: int
    method: int
    local_header_len: int  # 30 + name + extra
    padding_len: int  # bytes of the local extra that are alignment padding
    descriptor_len: int  # data descriptor after the payload (flag bit 3)

    @property
    def data_end(self) -> int:
        return self.data_offset + self.compress_size


class Members(Sequence[ZipMember]):
    """An archive's members, in directory order: a column (a list) of each field of `ZipMember`, read so (`_members`),
    and read so by the loaders of archives of many members (a zip of 100,000 tensors: no record a member, issue 16).
    To everything else a sequence of `ZipMember`s, each made when it is first asked for (and the same record after)."""

    __slots__ = ("names", "header_offsets", "data_offsets", "compress_sizes", "file_sizes", "methods",
                 "local_header_lens", "padding_lens", "descriptor_lens", "_made", "_all", "_listing", "_unique",
                 "_lookup", "_lowered")  # fmt: skip

    def __init__(self, *columns: list[Any]) -> None:
        (self.names, self.header_offsets, self.data_offsets, self.compress_sizes, self.file_sizes, self.methods,
         self.local_header_lens, self.padding_lens, self.descriptor_lens) = columns  # fmt: skip
        self._made: dict[int, ZipMember] = {}  # the records asked for one by one, by index
        self._all: list[ZipMember] | None = None  # every record, once all were asked for
        self._listing: str | None = None
        self._unique: bool | None = None
        self._lookup: Any = None  # (`index_of`'s: False, by the exact name; or torch's lookup)
        self._lowered: str | None = None

    @classmethod
    def of(cls, records: Iterable[ZipMember]) -> Members:
        """The members of these records (the same records)."""
        records = list(records)
        made = cls(*(list(map(attrgetter(f.name), records)) for f in fields(ZipMember)))
        made._all = records
        return made

    def columns(self) -> tuple[list[Any], ...]:
        """The columns, in `ZipMember`'s order of fields."""
        return (self.names, self.header_offsets, self.data_offsets, self.compress_sizes, self.file_sizes, self.methods,
                self.local_header_lens, self.padding_lens, self.descriptor_lens)  # fmt: skip

    def __len__(self) -> int:
        return len(self.names)

    def listing(self) -> str:
        """The names, each followed by a newline (made once; `Probe.zip_names`)."""
        if self._listing is None:
            self._listing = "\n".join(self.names) + "\n"
        return self._listing

    def lines(self) -> bool:
        """Whether `listing` is a line a name (none holds a newline): a search in it is then one over the names (an
        occurrence of "\n" + a start, or an end + "\n", is a name that so starts or ends), in one C call."""
        return self.listing().count("\n") == len(self.names) > 0

    def __getitem__(self, index: Any) -> Any:  # (an int: a ZipMember; a slice: a tuple of them)
        if self._all is not None or isinstance(index, slice):
            return self.records()[index] if isinstance(index, int) else tuple(self.records()[index])
        n = len(self.names)
        if not -n <= index < n:
            raise IndexError("member index out of range")
        index %= n
        record = self._made.get(index)
        if record is None:
            record = self._made[index] = ZipMember(*[column[index] for column in self.columns()])
        return record

    def records(self) -> list[ZipMember]:
        """Every member's record (made once, in C calls)."""
        made = self._all
        if made is None:
            made = list(map(ZipMember, *self.columns()))
            for index, record in self._made.items():  # (those asked for before: the same records)
                made[index] = record
            self._all = made
        return made

    def __iter__(self) -> Iterator[ZipMember]:
        return iter(self.records())

    def __reversed__(self) -> Iterator[ZipMember]:
        return reversed(self.records())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Members):
            return self.columns() == other.columns()
        if isinstance(other, (tuple, list)):
            return len(other) == len(self) and all(map(eq, self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Members({self.records()!r})"

    def lowered(self) -> str | None:
        """`listing` with its letters lowered, where every name is ASCII and none holds a newline (a search in it is
        then one over the names in any case; the listing itself when no name has a capital letter); else None.
        Made once."""
        if self._lowered is None and self.lines() and (listing := self.listing()).isascii():
            lowered = listing.lower()
            self._lowered = listing if lowered == listing else lowered
        return self._lowered

    def unique(self) -> bool:
        """Whether no two members have one name (made once)."""
        if self._unique is None:
            self._unique = len(set(self.names)) == len(self.names)
        return self._unique

    def named_exactly(self) -> bool:
        """Whether torch's zip reader finds every member by its exact name: no two names equal but for ASCII case."""
        if self._lookup is None:
            self._lookup = self._case_lookup()
        return self._lookup is False

    def index_of(self, name: str) -> int | None:
        """The index of the member torch's zip reader finds for that name, or None: the member so named, where no
        two names are equal but for ASCII case (nearly every archive, told by the names' listing in a few C calls);
        else the one miniz's lookup finds (`loaders._miniz`: of two copies of a name, the first in some archives,
        the last in others)."""
        if not self.named_exactly():
            return self._lookup(name)  # type: ignore[no-any-return]
        try:
            return self.names.index(name)
        except ValueError:  # (a name in another case is the one found: at most one, the names being distinct so)
            pass
        from loaders import _miniz

        wanted = _miniz.key(name)
        lowered = self.lowered()
        if lowered is None:  # (names not all ASCII, or one holding a newline)
            return next((i for i, n in enumerate(self.names) if _miniz.key(n) == wanted), None)
        if lowered is self._listing and name.islower() or not wanted.isascii():
            return None  # (no name has a capital letter, nor the one asked for; an ASCII name is not another)
        at = ("\n" + lowered).find("\n" + wanted.decode("ascii") + "\n")  # (the name's first letter in `lowered`)
        return None if at < 0 else lowered.count("\n", 0, at)

    def _case_lookup(self) -> Any:
        """False when no two names are equal but for ASCII case; else torch's lookup of a name."""
        from loaders import _miniz  # (archives of such names only)

        names = self.names
        lowered = self.lowered()
        if lowered is not None:
            if lowered is self._listing:  # (no capital letter: equal but for case is equal)
                distinct = self.unique()
            else:  # (each name lowered, and the empty one after the last newline)
                distinct = len(set(lowered.split("\n"))) == len(names) + 1
        else:
            distinct = len(set(map(_miniz.key, names))) == len(names)
        return False if distinct else _miniz.Lookup(names)


def _zip64_extra(extra: bytes, need: list[str], values: dict[str, int]) -> None:
    pos = 0
    while pos + 4 <= len(extra):
        tag, size = _FIELD_HEAD.unpack_from(extra, pos)
        if tag == 0x0001:
            body = extra[pos + 4 : pos + 4 + size]
            for i, key in enumerate(need):
                if 8 * i + 8 <= len(body):
                    values[key] = struct.unpack_from("<Q", body, 8 * i)[0]
            return
        pos += 4 + size


def _extra_fields(extra: bytes) -> dict[int, int]:
    """Tag -> total bytes (4 + body) of each field of an extra block."""
    pos = 0
    fields: dict[int, int] = {}
    while pos + 4 <= len(extra):
        tag, size = _FIELD_HEAD.unpack_from(extra, pos)
        fields[tag] = fields.get(tag, 0) + 4 + size
        pos += 4 + size
    return fields


def _fail(probe: Probe, fmt: str, reason: str, offset: int | None = None) -> FormatError:
    return FormatError(probe.path, fmt, reason, offset)


def _find_eocd(probe: Probe, fmt: str) -> tuple[int, bytes]:
    last = probe.tail(22)
    if last[:4] == EOCD_SIG and last[20:22] == b"\0\0":  # the usual case: no archive comment
        return probe.size - 22, last
    tail = probe.tail(22 + MAX_COMMENT)
    base = probe.size - len(tail)
    pos = tail.rfind(EOCD_SIG)
    while pos >= 0:
        if pos + 22 <= len(tail):
            comment_len = struct.unpack_from("<H", tail, pos + 20)[0]
            if pos + 22 + comment_len == len(tail):
                return base + pos, tail[pos : pos + 22]
        pos = tail.rfind(EOCD_SIG, 0, pos)
    # As torch's miniz reads an archive (mz_zip_reader_locate_header_sig): the last signature with a whole record
    # after it, whatever its comment length says. A payload torch reaches through such an archive is judged.
    pos = tail.rfind(EOCD_SIG, 0, max(len(tail) - 18, 0))
    if pos >= 0:
        return base + pos, tail[pos : pos + 22]
    raise _fail(probe, fmt, "no zip end-of-central-directory record (truncated or not a zip)")


def read_central_directory(probe: Probe, fmt: str) -> Members:
    """Every member with its local data offset; checked against the file size.

    Raises:
        FormatError: the directory is missing, inconsistent or points past the end of the file.
    """
    return read_members(probe, fmt)[0]


def read_zip(probe: Probe, fmt: str) -> tuple[Members, tuple[Region, ...]]:
    """Members plus the regions of the zip structure (directory and end records, then each member's local header,
    padding and data descriptor).

    Member payloads are not given regions here: the loader knows what they hold. Both are cached on the probe (the
    directory by `read_members`, which a loader ordering the regions itself calls instead).
    """
    members, ends = read_members(probe, fmt)
    regions = probe.cache.get("zip regions")
    if regions is None:
        regions = probe.cache["zip regions"] = _structure_regions(ends, members)
    return members, regions  # type: ignore[return-value]


def _structure_regions(ends: tuple[Region, ...], members: Sequence[ZipMember]) -> tuple[Region, ...]:
    """The regions of `read_zip`: the directory and end records, then each member's."""
    return (*ends, *_member_regions(members, None))


def read_members(probe: Probe, fmt: str) -> tuple[Members, tuple[Region, ...]]:
    """Members, and the regions of the directory and end records (`read_zip` adds the members' own).

    Cached on the probe, so sniffing and loading read the directory once.
    """
    cached = probe.cache.get("zip")
    if cached is None:
        cached = _read_zip(probe, fmt)
        probe.cache["zip"] = cached
    return cached  # type: ignore[return-value]


class Payloads:
    """What each member's payload holds, as its loader tells `in_file_order`. Most members' payload is one region, all
    of its bytes: its kind, text and subject (as a `Region`'s) at the member's index of the columns. A member whose
    payload is several regions (a storage that tensors use a part of) has them in `split`, by index (its entries in
    the columns are not read). (A plain class: a record's making is about 0.05 ms of every zip's run.)"""

    __slots__ = ("kinds", "texts", "subjects", "split")

    def __init__(
        self,
        kinds: list[RegionKind | None],
        texts: list[str],
        subjects: list[str | None],
        split: dict[int, list[Region]],
    ) -> None:
        self.kinds, self.texts, self.subjects, self.split = kinds, texts, subjects, split

    def of(self, index: int, member: ZipMember) -> list[Region]:
        """The regions of the payload of `member`, the member at `index`."""
        regions = self.split.get(index)
        if regions is not None:
            return regions
        kind = self.kinds[index]
        assert kind is not None  # (None only where `split` has the member)
        return [
            Region(kind, member.data_offset, member.compress_size, self.texts[index], 0, None, self.subjects[index])
        ]


def _member_regions(members: Sequence[ZipMember], payloads: Payloads | None) -> list[Region]:
    """Each member's regions in file order: its local header, the alignment padding in it, its payload's regions
    (which the loader knows: `payloads`; none without it), its data descriptor."""
    out: list[Region] = []
    add, extend = out.append, out.extend
    header, alignment = RegionKind.HEADER, RegionKind.PADDING
    for index, m in enumerate(members):  # (labels made when read: the name, quoted once, is their subject)
        name, padding, data_offset = repr(m.name), m.padding_len, m.data_offset
        add(Region(header, m.header_offset, m.local_header_len - padding, "zip local header %s", 0, None, name))
        if padding:
            add(Region(alignment, data_offset - padding, padding, "alignment padding %s", 0, None, name))
        if payloads is not None:
            extend(payloads.of(index, m))
        if m.descriptor_len:
            add(
                Region(header, data_offset + m.compress_size, m.descriptor_len, "zip data descriptor %s", 0, None, name)
            )
    return out


def _member_columns(members: Members, payloads: Payloads, after: list[Region]) -> RegionColumns:
    """`_member_regions` of members whose payloads are one region each (no `split`), then the regions `after`, as
    columns: each field of each of a member's four regions a column made from the members' columns in C calls, and
    the four woven together (a zip of 100,000 tensors: 400,000 regions, no `Region` made). Empty regions (no padding, no
    descriptor, an empty payload) are left out, as `base.tile` would leave them."""
    n = len(members)
    subjects = quoted(members.names)
    data, sizes, padding = members.data_offsets, members.compress_sizes, members.padding_lens
    heads, descriptors = members.header_offsets, members.descriptor_lens
    data_ends = list(map(add, data, sizes))
    ends = list(map(add, data_ends, descriptors))
    header, alignment = RegionKind.HEADER, RegionKind.PADDING
    # a member's regions: its local header, its padding, its payload and its data descriptor, one after the other
    kinds = _woven([header, alignment, None, header], n, payloads.kinds)
    texts = _woven(["zip local header %s", "alignment padding %s", None, "zip data descriptor %s"], n, payloads.texts)
    starts = _woven([None] * 4, n, heads, map(sub, data, padding), data, data_ends)
    lengths = _woven([None] * 4, n, map(sub, members.local_header_lens, padding), padding, sizes,
                     descriptors)  # fmt: skip
    names = _woven([None] * 4, n, subjects, subjects, payloads.subjects, subjects)
    if not all(lengths):  # (a member without padding or a descriptor, or an empty payload: those regions left out)
        kinds, starts, lengths, texts, names = (
            list(compress(column, lengths)) for column in (kinds, starts, lengths, texts, names)
        )
    # A member's regions lie one after the other (its data follows its header's name and extra field, and its
    # descriptor its data; a header is 30 bytes at least): the regions are laid from byte 0 exactly when each member
    # starts where the one before ends, from byte 0, and the regions after them follow on (told a member, not a region)
    laid = bool(n) and heads[0] == 0 and heads[1:] == ends[:-1]
    position = ends[-1] if n else 0
    for r in after:
        laid = laid and r.start == position and r.length > 0
        position = r.start + r.length
        kinds.append(r.kind)
        starts.append(r.start)
        lengths.append(r.length)
        texts.append(r.text)
        names.append(r.subject)
    return RegionColumns(kinds, starts, lengths, texts, names, laid if n else None)


_ESCAPED = bytes(range(32)) + b"\x7f'\\"  # the ASCII characters ``repr`` escapes, and the quote (`quoted`)


def quoted(texts: list[str]) -> list[str]:
    """``repr`` of each text (a region's subject), in C calls where all are printable ASCII without a quote or a
    backslash (then ``repr`` is the text in single quotes): a zip's 100,000 names, a state dict's storage keys."""
    joined = "".join(texts)
    if texts and joined.isascii():
        data = joined.encode("ascii")
        if len(data.translate(None, _ESCAPED)) == len(data):
            return ("'" + "'\n'".join(texts) + "'").split("\n")
    return list(map(repr, texts))


def _woven(pattern: list[Any], n: int, *columns: Iterable[Any]) -> list[Any]:
    """`pattern` (a value for each of a member's four regions) repeated for `n` members, with the None places filled
    from `columns` (n values each, one column a None place, in order): member 0's four values, then member 1's..."""
    woven = pattern * n
    places = [i for i, value in enumerate(pattern) if value is None]
    for place, column in zip(places, columns, strict=True):
        woven[place :: len(pattern)] = column  # type: ignore[call-overload]  # (any iterable of n items)
    return woven


def readable_members(probe: Probe, fmt: str) -> Members:
    """The members whose local headers are sound, passing over broken ones (for the safety verdict only).

    A reader such as torch's miniz reads the member it wants and never looks at a damaged neighbour, so a
    payload in a sound member of a partly broken archive still runs.

    Raises:
        FormatError: the end record or the central directory itself cannot be read.
    """
    return _read_zip(probe, fmt, skip_broken=True)[0]


def _read_zip(probe: Probe, fmt: str, skip_broken: bool = False) -> tuple[Members, tuple[Region, ...]]:
    eocd_at, eocd = _find_eocd(probe, fmt)
    _, disk, _, _, n_total, cd_size, cd_offset, comment_len = struct.unpack("<4sHHHHIIH", eocd)
    regions = [
        Region(RegionKind.HEADER, eocd_at, min(22 + comment_len, probe.size - eocd_at), "zip end of central directory")
    ]
    if disk != 0:
        raise FormatError(probe.path, fmt, "multi-disk (split) zip archives are not supported")
    end_of_cd = eocd_at
    needs_zip64 = n_total == 0xFFFF or 0xFFFFFFFF in (cd_size, cd_offset)
    loc_at = eocd_at - 20
    locator = probe.read_at(loc_at, 20, fmt=fmt, what="zip64 locator") if loc_at >= 0 else b""
    if locator[:4] != ZIP64_LOCATOR_SIG and needs_zip64:
        raise _fail(probe, fmt, "zip64 values without a zip64 locator", max(loc_at, 0))
    if locator[:4] == ZIP64_LOCATOR_SIG:  # writers such as torch's miniz add zip64 end records even when not needed
        rec_at = struct.unpack_from("<Q", locator, 8)[0]
        if rec_at + 56 > loc_at:
            raise _fail(probe, fmt, "zip64 end record points past the locator", loc_at)
        rec = probe.read_at(rec_at, 56, fmt=fmt, what="zip64 end record")
        if rec[:4] != ZIP64_EOCD_SIG:
            raise _fail(probe, fmt, "bad zip64 end record signature", rec_at)
        rec_size = struct.unpack_from("<Q", rec, 4)[0]
        if rec_at + 12 + rec_size != loc_at:
            raise _fail(probe, fmt, "zip64 end record size does not reach the locator", rec_at)
        n_total, cd_size, cd_offset = struct.unpack_from("<QQQ", rec, 32)
        regions.append(Region(RegionKind.HEADER, loc_at, 20, "zip64 end locator"))
        regions.append(Region(RegionKind.HEADER, rec_at, loc_at - rec_at, "zip64 end of central directory"))
        end_of_cd = rec_at
    if n_total > MAX_MEMBERS:
        raise LimitExceededError(probe.path, fmt, f"{n_total:,} zip members (cap {MAX_MEMBERS:,})")
    if cd_size > MAX_CD_BYTES:
        raise LimitExceededError(probe.path, fmt, f"central directory of {cd_size:,} bytes (cap {MAX_CD_BYTES:,})")
    if cd_offset + cd_size > probe.size:
        raise _fail(probe, fmt, f"central directory at {cd_offset:,}+{cd_size:,} runs past the end of the file")
    cd = probe.read_at(cd_offset, cd_size, fmt=fmt, what="central directory")
    members, used = _members(probe, fmt, cd, cd_offset, n_total, skip_broken)
    regions.append(Region(RegionKind.HEADER, cd_offset, used, "zip central directory"))
    # As torch's miniz reads an archive (mz_zip_reader_read_central_dir): the directory's entries must lie within the
    # size its end record gives and the file, and nothing more; a directory that does not end where the end record
    # starts, or whose entries stop short of its size, is read (a payload torch reaches through it is judged) and
    # said, its stray bytes left to the byte map as unexplained
    notes = []
    if cd_offset + cd_size != end_of_cd or used != cd_size:
        notes.append(
            f"the end record gives the central directory {cd_size:,} bytes at {cd_offset:,}: its entries take "
            f"{used:,} and the end record starts at {end_of_cd:,} (torch reads such an archive)"
        )
    if eocd_at + 22 + comment_len != probe.size:
        notes.append(f"the end record's comment length ({comment_len:,}) does not end where the file ends")
    if notes:
        probe.cache["zip notes"] = notes
    return members, tuple(regions)


def directory_findings(probe: Probe) -> list[Finding]:
    """ZIP_LAYOUT warnings for an end record and a directory that disagree but that torch reads (`read_members`)."""
    notes: list[str] = probe.cache.get("zip notes") or []  # type: ignore[assignment]
    return [Finding("ZIP_LAYOUT", Severity.WARNING, f"zip structure: {note}") for note in notes]


def _members(probe: Probe, fmt: str, cd: bytes, cd_offset: int, n_total: int, skip_broken: bool) -> tuple[Members, int]:
    """The members of a central directory, each completed from its local header, and the bytes their entries take.

    The directory's entries are read first (an error in one is raised after the members before it, as a reader
    going member by member meets it), then the local headers, through `_Windows`: a read of one member's
    structure bytes takes in those of the members after it while the bytes between them are fewer than a page.

    An archive of `RUNS_FROM` members or more is read in runs (`loaders._zip_runs`): a plain directory a block of
    entries of one shape at a time, and, where the members lie in the directory's order (any archive a writer made),
    the members whose structures the window read last holds, each plain, together in C calls (an archive of 100,000
    small members: a few dozen runs). The member a run stops at (its structures not all in the window, or not plain)
    is read alone, as every member of any other archive is: the windows read are the same, and so are the members
    and the errors. Either way the members are columns (`Members`), no record made a member.
    """
    runs: ModuleType | None = None
    if n_total >= RUNS_FROM:
        from loaders import _zip_runs  # (archives of many members only)

        runs = _zip_runs
    bounds: list[int] = []  # where each block of entries of one shape ends (`plain_entries`): runs end there too
    plain = None if runs is None else runs.plain_entries(cd, n_total, bounds)
    columns: Columns
    if plain is not None:
        columns, error, pos = plain, None, len(cd)
    else:
        bounds.clear()  # (those of the blocks read before one that is not plain)
        entries, error, pos = _entries(probe, fmt, cd, cd_offset, n_total)
        columns = tuple(map(list, zip(*entries, strict=True))) if entries else ([], [], [], [], [], [])  # type: ignore[assignment]
    all_flags, methods, csizes, usizes, names, offsets = columns
    size = probe.size
    windows = _Windows(probe, fmt, offsets, names)
    fetch = windows.fetch
    local_fixed, field_head = _LOCAL_FIXED.unpack_from, _FIELD_HEAD.unpack_from
    members = Members([], [], [], [], [], [], [], [], [])
    made = members.columns()  # (each member's fields added to them)
    add_name, add_at, add_data, add_size, add_usize, add_method, add_header, add_padding, add_descriptor = (
        column.append for column in made
    )
    win_at, win_end, window = 0, len(probe.head), probe.head
    # (a run is the members from one on, in the window)
    in_order = runs is not None and all(map(lt, offsets, islice(offsets, 1, None)))
    windows.near = runs.near if in_order and runs is not None else None
    index, n = 0, len(offsets)
    while index < n:
        if in_order and runs is not None:
            index += runs.run(made, windows, window, win_at, columns, index, bounds)
            if index == n:
                break
        flags, method, csize, usize, name, at = (all_flags[index], methods[index], csizes[index], usizes[index],
                                                 names[index], offsets[index])  # fmt: skip
        index += 1
        try:
            if not win_at <= at <= win_end - 30:
                win_at, window = fetch(index - 1, at, 30, "local header of %r", name)
                win_end = win_at + len(window)
            sig, local_name_len, local_extra_len = local_fixed(window, at - win_at)
            if sig != LOCAL_SIG:
                raise _fail(probe, fmt, f"member {name!r}: bad local header signature", at)
            header_len = 30 + local_name_len + local_extra_len
            extra_at = at + 30 + local_name_len
            if not win_at <= extra_at <= win_end - local_extra_len:
                win_at, window = fetch(index - 1, extra_at, local_extra_len, "local header of %r", name)
                win_end = win_at + len(window)
            data_offset = at + header_len
            data_end = data_offset + csize
            if data_end > size:
                raise TruncatedFileError(
                    probe.path,
                    fmt,
                    f"member {name!r} data ends at byte {data_end:,} but the file has {size:,} bytes",
                    data_offset,
                )
            if local_extra_len >= 4 and field_head(window, extra_at - win_at) == (PADDING_TAG, local_extra_len - 4):
                padding, zip64 = local_extra_len, False  # torch's local extra: its padding field alone
                windows.extra = -1 if data_offset % ALIGNMENT == 0 else local_extra_len
            else:
                fields = _extra_fields(window[extra_at - win_at : extra_at - win_at + local_extra_len])
                padding, zip64 = fields.get(PADDING_TAG, 0), 0x0001 in fields
                windows.extra = local_extra_len
                in_order = False  # (other extra fields: no runs, `_run` reads none)
            descriptor = 0
            if flags & 0x8:
                if not win_at <= data_end <= win_end - 4:
                    win_at, window = fetch(index - 1, data_end, 4, "data descriptor of %r", name, True)
                    win_end = win_at + len(window)
                signed = window.startswith(DESCRIPTOR_SIG, data_end - win_at)
                descriptor = (4 if signed else 0) + (20 if zip64 or csize >= 0xFFFFFFFF else 12)
        except FormatError:
            if not skip_broken:
                raise
            continue
        add_name(name)
        add_at(at)
        add_data(data_offset)
        add_size(csize)
        add_usize(usize)
        add_method(method)
        add_header(header_len)
        add_padding(padding)
        add_descriptor(descriptor)
    if error is not None:
        raise error
    return members, pos


_Entry = tuple[int, int, int, int, str, int]  # flags, method, compressed and uncompressed size, name, header offset
# A directory's entries, as columns: flags, method, compressed and uncompressed size, name, local header offset
Columns = tuple["Sequence[int]", "Sequence[int]", "Sequence[int]", "Sequence[int]", "Sequence[str]", "Sequence[int]"]
RUNS_FROM = 512  # members from which an archive is read in runs (`loaders._zip_runs`; its import costs 1.5 million
# instructions, about 150 members read one by one)


def _entries(
    probe: Probe, fmt: str, cd: bytes, cd_offset: int, n_total: int
) -> tuple[list[_Entry], Exception | None, int]:
    """The central directory's entries, up to the first that cannot be read (returned, for the caller to raise once
    the members before it are read), and where the last one read ends."""
    entry = _CD_ENTRY.unpack_from
    entries: list[_Entry] = []
    pos, cd_len = 0, len(cd)
    try:
        for _ in range(n_total):
            if not cd.startswith(CD_SIG, pos):
                raise _fail(probe, fmt, "bad central directory entry", cd_offset + pos)
            flags, method, csize, usize, name_len, extra_len, comment_len, at = entry(cd, pos)
            start = pos + 46
            pos = start + name_len + extra_len + comment_len
            if pos > cd_len:
                raise _fail(probe, fmt, "central directory entry runs past the directory", cd_offset)
            raw = cd[start : start + name_len]
            # (an ASCII name reads the same in UTF-8: cp437's codec is imported for other names only, about 0.2 ms)
            name = raw.decode("utf-8" if flags & 0x800 or raw.isascii() else "cp437")
            if 0xFFFFFFFF in (usize, csize, at):
                values = {"usize": usize, "csize": csize, "offset": at}
                need = [k for k, v in values.items() if v == 0xFFFFFFFF]
                _zip64_extra(cd[start + name_len : start + name_len + extra_len], need, values)
                usize, csize, at = values["usize"], values["csize"], values["offset"]
            entries.append((flags, method, csize, usize, name, at))
    except Exception as exc:  # noqa: BLE001 - raised by the caller, after the members before it
        return entries, exc, pos
    return entries, None, pos


class _Windows:
    """Reads of the members' structure bytes (local headers, data descriptors), each one window that takes in the
    structures of the members after it (in directory order) while the bytes between two are fewer than `PAGE`.

    Such a gap (a small member's payload, a local name) lies on the pages of the structure bytes either side of
    it, which separate reads pull from disk anyway: a window pulls no page they would not (readahead is off,
    `Probe`), and an archive of 100,000 small members is read in a few dozen reads instead of 200,000. A gap of
    a page or more ends the window. The first `HEAD_BYTES` come from the probe's head. A read that does not lie
    in the file, or comes back short, is made again through `Probe.read_at` for its error.

    A window that ends with a member's fixed part also takes in the name and extra field after it, as long as the
    member before them says they are (`extra`: an npz's zip64 field of one length, or torch's padding to the next
    multiple of `ALIGNMENT` past its 4-byte head), on the same page and never past where the data then starts:
    members pages apart cost one read each instead of two, and no payload byte is read.

    A window is planned from a member only past the members earlier windows took in: a structure of those that
    falls outside (a data descriptor far away, an extra field past the window's end: a hostile layout) is read
    exactly, so the planning looks at each member once and the bytes read stay within a page a member of what
    reading each structure alone reads. A view of a part of a file (a distributed checkpoint's item, read through
    its own `read_at`) reads structure bytes only: a data descriptor's signature with the rest of it and the next
    member's fixed part, nothing else.
    """

    __slots__ = ("probe", "fmt", "offsets", "names", "read", "direct", "planned", "extra", "near")

    def __init__(self, probe: Probe, fmt: str, offsets: Sequence[int], names: Sequence[str]) -> None:
        self.probe, self.fmt, self.offsets = probe, fmt, offsets  # each member's local header offset
        self.names = names  # the directory's (each member's name, as its entry gives it)
        self.extra = 0  # the last member's local extra field's length; -1: torch's padding alone
        self.direct = type(probe).read_at is Probe.read_at
        self.planned = 0  # the last member whose fixed part a window took in: those before it are not looked at again
        # where the offsets increase (`_members`), what plans a window's members in C calls (`_zip_runs.near`)
        self.near: Callable[[Sequence[int], int, int], int] | None = None
        if self.direct:
            self.read: Callable[[int, int, str], bytes] = probe._pread
        else:
            self.read = lambda at, n, fmt: probe.read_at(at, n, fmt=fmt)

    def fetch(self, index: int, at: int, n: int, what: str, name: str, descriptor: bool = False) -> tuple[int, bytes]:
        """(start, bytes) of a window holding `n` bytes at `at`, needed for member `index` (its data descriptor's
        signature: `descriptor`)."""
        probe, end = self.probe, at + n
        if 0 <= at and 0 <= n and end <= probe.size:
            if end <= len(probe.head):
                return 0, probe.head
            offsets, stop, last = self.offsets, min(probe.size, at + MAX_WINDOW), end
            # the member whose fixed part ends the window (-1: none)
            fixed = index if n == 30 and at == offsets[index] and not descriptor else -1
            if self.direct and index >= self.planned:  # (a miss before it: a hostile layout, read exactly)
                i = index + 1
                near = self.near
                if near is not None and i < len(offsets) and 0 <= offsets[i] - last < PAGE and offsets[i] + 30 <= stop:
                    i = near(offsets, i, stop)  # (the members after the first, told in C calls)
                    last, fixed = offsets[i - 1] + 30, i - 1
                while i < len(offsets):  # each next member's fixed part, while it is near
                    following = offsets[i]
                    if not 0 <= following - last < PAGE or following + 30 > stop:
                        break
                    last = following + 30
                    fixed = i
                    i += 1
                self.planned = i - 1  # each member is looked at by one window's planning: linear in all
            elif descriptor and index + 1 < len(offsets):  # the descriptor, then the next member's fixed part
                following = offsets[index + 1]
                if following - at in DESCRIPTOR_LENGTHS and following + 30 <= stop:
                    last = following + 30
                    fixed = index + 1
            if fixed >= 0 and self.direct:  # its name and extra field, where they are as the last member's were
                tail = last + len(self.names[fixed])
                tail = -(-(tail + 4) // ALIGNMENT) * ALIGNMENT if self.extra < 0 else tail + self.extra
                last = max(last, min(tail, (last - 1) // PAGE * PAGE + PAGE, stop))
            data = self.read(at, last - at, self.fmt)
            if len(data) >= n:
                return at, data
        return at, probe.read_at(at, n, fmt=self.fmt, what=what % (name,))


def in_file_order(
    ends: tuple[Region, ...], members: Members, payload: Callable[[Members], Payloads]
) -> Sequence[Region]:
    """The regions of the archive: those of `read_members` (`ends`), each member's local header, padding and data
    descriptor, and its payload's (`payload(members)`: the loader knows what they hold).

    In file order (each member's local header, padding, payload and descriptor, then the directory and the end
    records) when that is an order of strictly increasing starts, as in any archive whose members follow one
    another: `tile` then has nothing to sort; as `RegionColumns` where each payload is one region (a zip of 100,000
    tensors). Else (overlapping or shuffled members) those of `read_zip`, then the payloads, as `tile` always had them
    to sort: it sorts ties stably, so this order is part of its result.
    """
    payloads = payload(members)
    last = sorted(ends, key=attrgetter("start"))  # directory, zip64 end records, end record
    ordered: Sequence[Region]
    if payloads.split:
        ordered = _member_regions(members, payloads) + last
        starts = list(map(attrgetter("start"), ordered))
    else:
        ordered = _member_columns(members, payloads, last)
        if ordered.laid():  # (any sound archive: told once, for `tile` too)
            return ordered
        starts = ordered.starts
    if all(map(lt, starts, islice(starts, 1, None))):
        return ordered
    del ordered, starts
    return [*_structure_regions(ends, members), *chain.from_iterable(map(payloads.of, count(), members))]


def inflate_head(
    probe: Probe, member: ZipMember, n: int, fmt: str, methods: frozenset[int] = frozenset({DEFLATED})
) -> bytes:
    """Up to `n` uncompressed bytes from the start of a member, inflating only what is needed (`methods`: the
    compressions the reader of the format inflates; `ZIPFILE_METHODS` for Python's zipfile).

    Raises:
        FormatError: an unsupported compression, or a deflate stream zlib refuses (`inflate_lenient` reads on).
    """
    if member.method == STORED:
        return probe.read_at(member.data_offset, min(n, member.compress_size), fmt=fmt)
    return Inflated(probe, member, fmt, methods)(0, n)


class Inflated:
    """A deflated member's uncompressed bytes, inflated as they are read: reads at forward offsets keep only what
    they return (a data.pkl of 1 GiB is walked in chunks, not inflated whole); a read before the last one's end
    inflates the stream again from its start.

    Raises (on a read):
        FormatError: an unsupported compression, or a deflate stream zlib refuses.
    """

    CHUNK = 16384  # compressed bytes read at a time (at least 1024), and uncompressed bytes discarded at a time

    def __init__(
        self, probe: Probe, member: ZipMember, fmt: str, methods: frozenset[int] = frozenset({DEFLATED})
    ) -> None:
        if member.method not in methods:
            method = COMPRESSION_NAMES.get(member.method, str(member.method))
            raise FormatError(probe.path, fmt, f"member {member.name!r} uses unsupported compression {method}")
        self.probe, self.member, self.fmt = probe, member, fmt
        self._restart()

    def _restart(self) -> None:
        import zlib  # (deflated members only: torch stores its records)

        self.pos = self.member.data_offset  # the next compressed byte
        self.out = 0  # uncompressed bytes given so far
        if self.member.method == DEFLATED:
            self.inflater: Any = zlib.decompressobj(-15)
        else:
            self.inflater = _Decompressor(self._decompressor())

    def _decompressor(self) -> Any:
        """bz2's or lzma's decompressor for the member, as Python's zipfile makes it (LZMA: past its header)."""
        if self.member.method == BZIP2:
            import bz2

            return bz2.BZ2Decompressor()
        import lzma

        header = self.probe.read_at(self.pos, 9, fmt=self.fmt, what="LZMA header")  # version, 5, the properties
        if header[2:4] != b"\x05\x00":
            raise FormatError(self.probe.path, self.fmt, f"member {self.member.name!r}: LZMA properties not of 5 bytes")
        self.pos += 9
        lc_lp_pb, dict_size = header[4], int.from_bytes(header[5:9], "little")
        lc, lp, pb = lc_lp_pb % 9, lc_lp_pb // 9 % 5, lc_lp_pb // 45
        lzma1 = {"id": lzma.FILTER_LZMA1, "lc": lc, "lp": lp, "pb": pb, "dict_size": dict_size}
        return lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=[lzma1])

    def __call__(self, at: int, n: int) -> bytes:
        """Up to `n` bytes from uncompressed offset `at` (fewer where the stream ends)."""
        if at < self.out:
            self._restart()
        while self.out < at and self._more(min(at - self.out, self.CHUNK)):
            pass  # (skipped: inflated and dropped)
        parts: list[bytes] = []
        got = 0
        while got < n:
            part = self._more(n - got)
            if not part:
                break
            parts.append(part)
            got += len(part)
        return b"".join(parts)

    def length(self, limit: int) -> int:
        """How many bytes the stream inflates to, up to `limit`, reading through them (and keeping none)."""
        self(limit, 0)
        return min(self.out, limit)

    def _more(self, want: int) -> bytes:
        """Up to `want` (at least 1) more uncompressed bytes; none at the stream's end."""
        import zlib

        inflater, end = self.inflater, self.member.data_end
        try:
            while True:
                data = inflater.unconsumed_tail
                if not data and self.pos < end and not inflater.eof:
                    data = self.probe.read_at(self.pos, min(max(1024, want), self.CHUNK, end - self.pos), fmt=self.fmt)
                    self.pos += len(data)
                out: bytes = inflater.decompress(data, want)  # (given nothing: what zlib held back at the limit)
                if out:
                    self.out += len(out)
                    return out
                if not data or inflater.eof:
                    return b""
        except zlib.error as exc:
            raise FormatError(
                self.probe.path, self.fmt, f"member {self.member.name!r}: corrupt deflate stream: {exc}"
            ) from exc


class _Decompressor:
    """bz2's or lzma's decompressor read as `Inflated` reads zlib's: it keeps the input it has not used itself, and its
    errors are zlib's."""

    unconsumed_tail = b""

    def __init__(self, decompressor: Any) -> None:
        self.decompressor = decompressor

    @property
    def eof(self) -> bool:
        return bool(self.decompressor.eof)

    def decompress(self, data: bytes, max_length: int) -> bytes:
        import zlib

        if self.decompressor.eof:
            return b""
        try:
            return bytes(self.decompressor.decompress(data, max_length))
        except Exception as exc:  # (OSError from bz2, lzma.LZMAError: a damaged stream, as zlib.error is one)
            raise zlib.error(str(exc)) from exc


def inflate_lenient(probe: Probe, member: ZipMember, n: int, fmt: str) -> tuple[bytes, int]:
    """Up to `n` bytes of a deflate stream zlib refuses, as torch's reader inflates it (`loaders._inflate`), for the
    safety verdict, and how many of those `n` bytes it leaves to memory: where its inflating fails it reports no
    error, and torch.load reads on into what the record's buffer held. At most `LENIENT_LIMIT` bytes are inflated.
    """
    from loaders._inflate import inflate  # (pure Python, for damaged streams only)

    stream = probe.read_at(member.data_offset, min(member.compress_size, LENIENT_LIMIT), fmt=fmt)
    data, failed = inflate(stream, min(n, LENIENT_LIMIT))
    return data, n - len(data) if failed else 0
