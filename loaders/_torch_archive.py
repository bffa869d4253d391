"""A torch zip archive as torch itself reads it, for the safety verdict.

caffe2's `PyTorchStreamReader` takes the archive folder from the FIRST member's name and refuses an
archive with a member outside it; of two members with one name (or names equal but for case), it reads
the one miniz's lookup finds (`loaders._miniz`). A scanner that
picks "the first */data.pkl" instead can be shown a harmless pickle while torch runs another. So the
folder is decided as torch decides it, and layouts torch refuses or half-reads (members outside the
folder, a second data.pkl, duplicate names) are reported. Every ``*.pkl`` member is interpreted for
the verdict, not only the one torch reads: what would be called anywhere is evidence.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from itertools import compress, count, repeat

from inspector.errors import FormatError, InspectorError, LimitExceededError
from inspector.probe import Probe
from inspector.records import Finding, Severity
from loaders import _pickle, _torch, _zip

MAX_PICKLE_BYTES = 1 << 30
# A stored pickle member up to this size is read whole, at once; a larger one as the walk reads it, in growing windows
# (each scanned from the member's start: 100,000 tensors' 11 MB data.pkl read so cost 5 windows, 16 MB of scans and
# their patterns' compiles, about 0.04 s more)
READ_WHOLE = 1 << 24
PICKLE_NAME = "data.pkl"
PICKLE_SUFFIX = ".pkl"  # data.pkl, constants.pkl (TorchScript); *.debug_pkl are source maps
# torch's miniz finds a record by a name compared without case (`mz_zip_reader_locate_file` without
# MZ_ZIP_FLAG_CASE_SENSITIVE): `archive/DATA.PKL` beside `archive/data.pkl` is the one torch.load read (proved). Every
# member named so is judged: the suffix in each case
PICKLE_SUFFIXES = tuple(sorted({f".{p}{k}{l}" for p in "pP" for k in "kK" for l in "lL"}))  # noqa: E741


def has_pickle(members: _zip.Members) -> bool:
    """Whether a folder's data.pkl is a member, named so in any case (torch finds `archive/DATA.PKL`)."""
    names = members.names
    return any(
        names[i].count("/") == 1 and names[i].lower().endswith("/" + PICKLE_NAME) for i in _pickle_members(members)
    )


def archive_folder(members: _zip.Members) -> str | None:
    """The archive folder as torch decides it: the first member's, when torch finds a data.pkl in it."""
    names = members.names
    if not names or "/" not in names[0]:
        return None
    prefix = names[0].split("/", 1)[0] + "/"
    return prefix if members.index_of(prefix + PICKLE_NAME) is not None else None


def layout_findings(members: _zip.Members, prefix: str) -> list[Finding]:
    """Members torch would refuse or never read: outside the folder, a second data.pkl, duplicate names."""
    names = members.names
    suffix, read = "/" + PICKLE_NAME, prefix + PICKLE_NAME  # (`read` ends with `suffix`: prefix ends with "/")
    # (most archives, told by searches of the names' listing: all in the folder, no data.pkl but the one read)
    if members.lines():
        listing = members.listing()
        inside = listing.startswith(prefix) and listing.count("\n" + prefix) == len(names) - 1
        alone = listing.count(suffix + "\n") == names.count(read)
    else:
        inside = all(map(str.startswith, names, repeat(prefix)))
        alone = sum(map(str.endswith, names, repeat(suffix))) == names.count(read)
    outside = [] if inside else [name for name in names if not name.startswith(prefix)]
    extra = [] if alone else [name for name in names if name.endswith(suffix) and name != read]
    dups = [] if members.unique() else [name for name, n in Counter(names).items() if n > 1]
    cases = (
        (outside, f"members outside the archive folder {prefix!r} (torch.load refuses such an archive)"),
        (extra, "a second data.pkl, which torch does not read"),
        (dups, "duplicate member names (torch reads the copy its zip reader's lookup finds)"),
    )
    return [
        Finding(
            "ZIP_LAYOUT",
            Severity.WARNING,
            f"{what}: {names[0]!r}" + (", ..." if len(names) > 1 else ""),
            tuple(names[:20]),
        )  # fmt: skip
        for names, what in cases
        if names
    ]


def pickle_reader(probe: Probe, fmt: str, member: _zip.ZipMember, partial: bool = False) -> tuple[_pickle.Reader, int]:
    """A reader of a pickle member, read from the file as the walk reads it: stored, or deflated (legal: torch reads
    it) and inflated up to its declared size (`_zip.Inflated`: the stream is first inflated through once, keeping
    nothing, for its length and any damage); and how many of its bytes torch.load would read from memory
    (`partial`: a corrupt deflate stream inflated as torch's reader inflates it, see `_zip.inflate_lenient`; else
    always 0).
    Positions are the member's own (0 at its first byte) either way.

    Raises:
        LimitExceededError: the member is larger than `MAX_PICKLE_BYTES`.
        FormatError: an unsupported compression, or (unless `partial`) a deflate stream zlib refuses.
    """
    if member.file_size > MAX_PICKLE_BYTES or member.compress_size > MAX_PICKLE_BYTES:
        raise LimitExceededError(probe.path, fmt, f"{member.name!r} of {member.file_size:,} bytes")
    if member.method == _zip.STORED and member.compress_size <= READ_WHOLE:  # (one read, one scan)
        return _pickle.Reader(probe.read_at(member.data_offset, member.compress_size, fmt=fmt, what=member.name)), 0
    if member.method == _zip.STORED:
        return _pickle.Reader(fetch=_stored(probe, fmt, member), start=0, end=member.compress_size), 0
    inflated = _zip.Inflated(probe, member, fmt)
    try:
        size = inflated.length(member.file_size)
    except FormatError as exc:
        import zlib

        if not (partial and isinstance(exc.__cause__, zlib.error)):
            raise
        data, unknown = _zip.inflate_lenient(probe, member, member.file_size, fmt)  # bounded by the declared size
        return _pickle.Reader(data), unknown
    return _pickle.Reader(fetch=inflated, start=0, end=size), 0


def _stored(probe: Probe, fmt: str, member: _zip.ZipMember) -> Callable[[int, int], bytes]:
    """The reads of a stored member's bytes at its own positions (a bytes value of 1 GiB is passed over, not read)."""
    start = member.data_offset
    return lambda at, n: probe.read_at(start + at, n, fmt=fmt, what=member.name)


def from_memory(name: str, n: int) -> str:
    """The evidence of a pickle member part of which torch takes from its memory: what runs there is unknown."""
    return (
        f"an unknown callable ({name!r} is a damaged deflate stream whose last {n:,} bytes torch's reader never "
        "writes, reporting no error: torch.load reads them from memory, which an earlier record can fill with a "
        "payload)"
    )


def other_pickles(
    probe: Probe,
    fmt: str,
    members: _zip.Members,
    read: _zip.ZipMember | None,
    evidence: set[str],
    names: set[str] | None = None,
) -> None:
    """Check every other *.pkl member (second data.pkl, duplicates, constants.pkl) for unsafe content; `names` gets
    the globals each names (a TorchScript archive's constants.pkl may hold objects of its scripted classes too).

    A deflate stream zlib refuses is judged as torch's reader inflates it (`_zip.inflate_lenient`); where that fails
    before the record's end, torch.load reads on into memory, so a pickle that does not end before is evidence itself
    (`from_memory`). One that cannot be read at all is passed over, and must not stop the reading of the copy torch
    does read.
    """
    # (the *.pkl members in any case, picked in C calls: an archive of 100,000 tensors has two)
    for index in _pickle_members(members):
        m = members[index]
        if m is read:
            continue
        try:
            reader, unknown = pickle_reader(probe, fmt, m, partial=True)
        except InspectorError:
            continue
        try:
            result = _pickle.load(reader, _torch.persistent_loader({}))  # storages named, not checked
        except _pickle.PickleError as exc:
            evidence |= exc.unsafe
            if unknown:  # (it did not end before the damage: torch reads on)
                evidence.add(from_memory(m.name, unknown))
            continue
        evidence |= result.unsafe
        if names is not None:
            names |= result.globals


def _pickle_members(members: _zip.Members) -> Iterable[int]:
    """The indexes of the members named *.pkl in any case: found in the listing of ASCII names (a line each: its
    line), else by each name."""
    lowered = members.lowered()
    if lowered is None:  # (an ASCII name lowered is as long)
        return compress(count(), map(str.endswith, members.names, repeat(PICKLE_SUFFIXES)))
    found, at, line, counted = [], 0, 0, 0
    while (at := lowered.find(PICKLE_SUFFIX + "\n", at)) >= 0:
        line += lowered.count("\n", counted, at)  # (the lines before it: counted on from the last one found)
        found.append(line)
        counted = at
        at += 1
    return found


def damaged_archive_evidence(probe: Probe, fmt: str) -> set[str]:
    """What the pickles of an archive we cannot read as a whole would call (sound members only)."""
    evidence: set[str] = set()
    try:
        members = _zip.readable_members(probe, fmt)
    except Exception:  # noqa: BLE001 - a directory that cannot be read holds no evidence we can reach
        return evidence
    other_pickles(probe, fmt, members, None, evidence)
    return evidence
