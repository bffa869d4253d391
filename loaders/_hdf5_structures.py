"""HDF5 metadata structures placed exactly from their own bytes (FORMATS.md 6.2; HDF5 file format spec, III-V).

h5py gives each object header's address and total size, and the B-tree, heap and index bytes of groups and
chunked datasets as sizes only. This module reads metadata bytes (never dataset values) to place them:

    object headers      v1: 16-byte prefix + `header size` message bytes; v2: "OHDR" prefix, chunk 0 size field,
                        messages, checksum; continuation messages (type 0x0010: address, length) name the
                        other chunks ("OCHK" blocks in v2), which are followed in turn
    "TREE"              v1 B-tree node: 8 + 2 O header, (2K + 1) keys and 2K child addresses; group nodes (type 0)
                        have length-sized keys and K = the superblock's group internal node K, chunk nodes (type 1)
                        have 8 + 8 (rank + 1)-byte keys and K = the indexed storage K
    "SNOD"              symbol table node: 8 bytes + 2 leaf-K entries of 2 O + 24 bytes
    "HEAP"              local heap: 8 + 2 L + O header; its data segment (address, size) holds link names
    "GCOL"              global heap collection: its size is in its header (variable-length strings); h5stat
                        counts these as "unaccounted space"

Everything is found inside the gaps between structures already placed (signature, version and size checked,
and the structure must fit its gap); what this module cannot place stays with the caller's size-only pool.
Gaps over 1 MiB (dead raw data after deletions) are not read, and at most 16 MiB of gaps in all.
Gaps left that hold only zero bytes are space the library reserved and never wrote (the rest of the 2 KiB
block it allocates for small raw data): padding, not unexplained bytes.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from inspector.records import Region, RegionKind

MAX_GAP_BYTES = 1 << 20  # larger gaps are dead raw data, not metadata: they are not read
MAX_SCAN_BYTES = 16 << 20  # gap bytes read in all, looking for signatures or zeros
MAX_CONTINUATIONS = 10_000
SIGNATURES = (b"TREE", b"SNOD", b"HEAP", b"GCOL")
CONTINUATION_MESSAGE = 0x0010
DEFAULT_K = {"leaf": 4, "internal": 16, "chunk": 32}  # the library's defaults (superblock v2+ does not store them)
GLOBAL_HEAP_LABEL = "HDF5 global heap collection (variable-length strings; h5stat: unaccounted)"
ZERO_LABEL = "HDF5 unused space, all zero (rest of an allocation block; h5stat: unaccounted)"

Read = Callable[[int, int], bytes]


@dataclass(frozen=True, slots=True)
class Geometry:
    """What the superblock says about the sizes of metadata structures."""

    origin: int  # absolute position of relative address 0 (after any user block)
    offset_size: int
    length_size: int
    leaf_k: int
    internal_k: int
    chunk_k: int
    chunk_ranks: tuple[int, ...]  # ranks of the chunked datasets (chunk B-tree keys depend on the rank)


def geometry(
    read: Read, origin: int, version: int, offset_size: int, length_size: int, ranks: Sequence[int]
) -> Geometry:
    """Sizes from the superblock at `origin` (K values are stored only in superblock versions 0 and 1)."""
    leaf, internal, chunk = DEFAULT_K["leaf"], DEFAULT_K["internal"], DEFAULT_K["chunk"]
    if version in (0, 1):
        head = read(origin, 28)
        leaf, internal = struct.unpack_from("<HH", head, 16)
        if version == 1:
            (chunk,) = struct.unpack_from("<H", head, 24)
    return Geometry(origin, offset_size, length_size, leaf, internal, chunk, tuple(sorted(set(ranks))))


def _uint(data: bytes, at: int, size: int) -> int:
    return int.from_bytes(data[at : at + size], "little")


def split_header(read: Read, g: Geometry, header: Region, window: tuple[int, int]) -> list[Region] | None:
    """An object header as its chunks: chunk 0 at its address, continuation chunks where their messages say.

    None when the bytes do not parse, a chunk leaves `window` (start, end) or the chunks do not add up to
    the total h5py reported (`header.length`).
    """
    first = read(header.start, 16)
    flags = 0
    if first[:4] == b"OHDR":
        flags = first[5]
        size_bytes = 1 << (flags & 3)
        at = 6 + (16 if flags & 0x20 else 0) + (4 if flags & 0x10 else 0)
        prefix = read(header.start, at + size_bytes)
        length = at + size_bytes + _uint(prefix, at, size_bytes) + 4
        chunks = [(header.start, length, at + size_bytes, length - 4, 2)]
    elif first[0] == 1:
        length = 16 + _uint(first, 8, 4)
        chunks = [(header.start, length, 16, length, 1)]
    else:
        return None
    message_head = 8 if chunks[0][4] == 1 else 4 + (2 if flags & 0x04 else 0)
    out: list[Region] = []
    total = 0
    while chunks and len(out) < MAX_CONTINUATIONS:
        start, length, body, end, version = chunks.pop(0)
        total += length
        if total > header.length or start < window[0] or start + length > window[1]:
            return None
        out.append(
            Region(RegionKind.HEADER, start, length, header.label if not out else f"{header.label} continuation")
        )
        data = read(start, length)
        if version == 2 and data[:4] != (b"OCHK" if len(out) > 1 else b"OHDR"):
            return None
        pos = body
        while pos + message_head <= end:
            mtype = _uint(data, pos, 2 if version == 1 else 1)
            msize = _uint(data, pos + 2 if version == 1 else pos + 1, 2)
            pos += message_head
            if mtype == CONTINUATION_MESSAGE and pos + g.offset_size + g.length_size <= end:
                addr = g.origin + _uint(data, pos, g.offset_size)
                clen = _uint(data, pos + g.offset_size, g.length_size)
                chunks.append((addr, clen, 4, clen - 4, 2) if version == 2 else (addr, clen, 0, clen, 1))
            pos += msize
    return out if total == header.length and not chunks else None


def _tree_size(g: Geometry, data: bytes, at: int, room: int, children: set[int]) -> int | None:
    node_type, _level, used = data[at + 4], data[at + 5], _uint(data, at + 6, 2)
    head = 8 + 2 * g.offset_size
    if node_type == 0:
        k = g.internal_k
        size = head + (2 * k + 1) * g.length_size + 2 * k * g.offset_size
        return size if used <= 2 * k and size <= room else None
    if node_type != 1:
        return None
    fits = []
    for rank in g.chunk_ranks:
        key = 8 + 8 * (rank + 1)
        size = head + (2 * g.chunk_k + 1) * key + 2 * g.chunk_k * g.offset_size
        child = g.origin + _uint(data, at + head + key, g.offset_size) if at + head + key < len(data) else -1
        if used <= 2 * g.chunk_k and size <= room and (not children or child in children or len(g.chunk_ranks) == 1):
            fits.append(size)
    return fits[0] if len(set(fits)) == 1 else None


def _structure(g: Geometry, data: bytes, at: int, room: int, children: set[int]) -> tuple[int, str, int] | None:
    """(size, label, sized-pool bytes it accounts for) of the structure whose signature is at `at`, or None."""
    sig = data[at : at + 4]
    if sig == b"TREE":
        size = _tree_size(g, data, at, room, children)
        return (size, "HDF5 B-tree node (v1)", size) if size else None
    if sig == b"SNOD" and data[at + 4] == 1:
        size = 8 + 2 * g.leaf_k * (2 * g.offset_size + 24)
        return (size, "HDF5 symbol table node", size) if size <= room else None
    if sig == b"HEAP" and data[at + 4] == 0:
        size = 8 + 2 * g.length_size + g.offset_size
        return (size, "HDF5 local heap header", size) if size <= room else None
    if sig == b"GCOL" and data[at + 4] == 1:
        size = _uint(data, at + 8, g.length_size)
        return (size, GLOBAL_HEAP_LABEL, 0) if 16 <= size <= room else None
    return None


def locate(read: Read, g: Geometry, gaps: Sequence[tuple[int, int]], children: set[int]) -> tuple[list[Region], int]:
    """Signed structures found in `gaps` ((start, length), absolute), and the sized-pool bytes they account for.

    `children`: absolute addresses of known chunks, to tell chunk B-tree nodes of different ranks apart.
    """
    found: list[Region] = []
    pooled = 0
    heaps: list[tuple[int, int]] = []
    budget = MAX_SCAN_BYTES
    for start, length in gaps:
        if length < 8 or length > min(MAX_GAP_BYTES, budget):
            continue
        data = read(start, length)
        budget -= len(data)
        pos = 0
        while pos + 8 <= len(data):
            hits = [i for i in (data.find(s, pos) for s in SIGNATURES) if i >= 0]
            if not hits:
                break
            at = min(hits)
            hit = _structure(g, data, at, len(data) - at, children) if at + 32 <= len(data) else None
            if hit is None:
                pos = at + 1
                continue
            size, label, pool = hit
            found.append(Region(RegionKind.METADATA, start + at, size, label))
            pooled += pool
            if label == "HDF5 local heap header":
                at_len = at + 8
                heaps.append(
                    (
                        g.origin + _uint(data, at_len + 2 * g.length_size, g.offset_size),
                        _uint(data, at_len, g.length_size),
                    )
                )
            pos = at + size
    segments = _heap_data(heaps, gaps, found)
    return found + segments, pooled + sum(r.length for r in segments)


def _heap_data(
    heaps: Sequence[tuple[int, int]], gaps: Sequence[tuple[int, int]], found: Sequence[Region]
) -> list[Region]:
    """Local heap data segments that lie inside one gap and clear of every structure found (sorted lookups)."""
    gap_starts = [start for start, _ in gaps]  # gaps come sorted and disjoint
    spans = sorted((r.start, r.end) for r in found)
    span_starts = [start for start, _ in spans]
    out: list[Region] = []
    for addr, size in sorted(set(heaps)):
        g = bisect.bisect_right(gap_starts, addr) - 1
        if not size or g < 0 or addr + size > gaps[g][0] + gaps[g][1]:
            continue
        j = bisect.bisect_left(span_starts, addr + size)  # structures starting before the segment's end
        if j and spans[j - 1][1] > addr:
            continue
        if out and out[-1].end > addr:
            continue
        out.append(Region(RegionKind.METADATA, addr, size, "HDF5 local heap data (link names)"))
    return out


def zero_filled(read: Read, gaps: Sequence[tuple[int, int]]) -> list[Region]:
    """Gaps whose bytes are all zero: space the library allocated and never wrote (nothing to explain)."""
    out = []
    budget = MAX_SCAN_BYTES
    for start, length in gaps:
        if length > min(MAX_GAP_BYTES, budget):
            continue
        budget -= length
        if not read(start, length).strip(b"\0"):
            out.append(Region(RegionKind.PADDING, start, length, ZERO_LABEL))
    return out
