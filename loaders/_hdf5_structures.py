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
    "BTHD"              v2 B-tree header (22 + O + L bytes); at depth 0 its root is one leaf ("BTLF") of the
                        node size it states
    "FRHP"              fractal heap header (146 bytes with 8-byte fields, more with I/O filters); while its
                        root indirect block has no rows, the root is one direct block ("FHDB") of the
                        starting block size
    "FSHD"              free-space manager header (18 + 7 L + O bytes) and its section list ("FSSE") of the
                        allocated size it states

Everything is found inside the gaps between structures already placed (signature, version and size checked,
and the structure must fit its gap; a block pointed to must carry its own signature and lie clear of the
rest); what this module cannot place stays with the caller's size-only pool.
Gaps over 1 MiB (dead raw data after deletions) are not read, and at most 16 MiB of gaps in all.
Gaps left that hold only zero bytes are space the library reserved and never wrote (the rest of the 2 KiB
block it allocates for small raw data): padding, not unexplained bytes.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Callable, Sequence

from inspector.records import Region, RegionKind
from inspector.recordtype import record

MAX_GAP_BYTES = 1 << 20  # larger gaps are dead raw data, not metadata: they are not read
MAX_SCAN_BYTES = 16 << 20  # gap bytes read in all, looking for signatures or zeros
MAX_CONTINUATIONS = 10_000
SIGNATURES = (b"TREE", b"SNOD", b"HEAP", b"GCOL", b"BTHD", b"FRHP", b"FSHD")
MIN_STRUCTURE = 32  # bytes a signature needs after it before its fields are read
HEAP_DATA = "HDF5 local heap data (link names)"
BLOCK_SIGNATURES = {
    "HDF5 v2 B-tree leaf node": b"BTLF",
    "HDF5 fractal heap direct block": b"FHDB",
    "HDF5 free-space section list": b"FSSE",
}
CONTINUATION_MESSAGE = 0x0010
DEFAULT_K = {"leaf": 4, "internal": 16, "chunk": 32}  # the library's defaults (superblock v2+ does not store them)
GLOBAL_HEAP_LABEL = "HDF5 global heap collection (variable-length strings; h5stat: unaccounted)"
ZERO_LABEL = "HDF5 unused space, all zero (rest of an allocation block; h5stat: unaccounted)"

Read = Callable[[int, int], bytes]


@record(frozen=True, slots=True)
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


def btree_node_bytes(offset_size: int, key_size: int, k: int) -> int:
    """A v1 B-tree node ("TREE") of at most 2K children: signature, type, level and entries used (8 bytes), its
    left and right siblings, 2K + 1 keys and 2K child addresses."""
    return 8 + 2 * offset_size + (2 * k + 1) * key_size + 2 * k * offset_size


def symbol_node_bytes(offset_size: int, leaf_k: int) -> int:
    """A symbol table node ("SNOD"): 8 bytes, then 2 leaf-K entries of two addresses and 24 bytes."""
    return 8 + 2 * leaf_k * (2 * offset_size + 24)


def chunk_key_bytes(rank: int) -> int:
    """A chunk B-tree key: chunk size and filter mask (8 bytes), then rank + 1 offsets of 8 bytes."""
    return 8 + 8 * (rank + 1)


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
        size = btree_node_bytes(g.offset_size, g.length_size, k)
        return size if used <= 2 * k and size <= room else None
    if node_type != 1:
        return None
    fits = []
    for rank in g.chunk_ranks:
        key = chunk_key_bytes(rank)
        size = btree_node_bytes(g.offset_size, key, g.chunk_k)
        child = g.origin + _uint(data, at + head + key, g.offset_size) if at + head + key < len(data) else -1
        if used <= 2 * g.chunk_k and size <= room and (not children or child in children or len(g.chunk_ranks) == 1):
            fits.append(size)
    return fits[0] if len(set(fits)) == 1 else None


@record(frozen=True, slots=True)
class Hit:
    """A structure found by its signature: its size, its label, and blocks it points to (address, size, label)."""

    size: int
    label: str
    pooled: bool = True  # one of the structures h5py reports by size only
    points_to: tuple[tuple[int, int, str], ...] = ()


def _address(g: Geometry, data: bytes, at: int) -> int | None:
    raw = data[at : at + g.offset_size]
    return None if raw == b"\xff" * g.offset_size else g.origin + _uint(data, at, g.offset_size)


def _v2_btree(g: Geometry, data: bytes, at: int) -> Hit:
    """BTHD: version, type, node size (4), record size, depth, split/merge, root (O), records, total (L), checksum."""
    osz, lsz = g.offset_size, g.length_size
    node_size, depth = _uint(data, at + 6, 4), _uint(data, at + 12, 2)
    root = _address(g, data, at + 16)
    leaf = ((root, node_size, "HDF5 v2 B-tree leaf node"),) if depth == 0 and root is not None else ()
    return Hit(22 + osz + lsz, "HDF5 v2 B-tree header", points_to=leaf)


def _fractal_heap(g: Geometry, data: bytes, at: int) -> Hit:
    """FRHP: its size from the filter length; a root that is a direct block (no rows yet) is placed too."""
    osz, lsz = g.offset_size, g.length_size
    filters = _uint(data, at + 7, 2)
    width = at + 14 + 10 * lsz + 2 * osz
    start_block = _uint(data, width + 2, lsz)
    root_at = width + 2 + 2 * lsz + 4
    rows = _uint(data, root_at + osz, 2)
    size = root_at + osz + 2 - at + ((lsz + 4 + filters) if filters else 0) + 4
    root = _address(g, data, root_at)
    block = ((root, start_block, "HDF5 fractal heap direct block"),) if rows == 0 and root is not None else ()
    return Hit(size, "HDF5 fractal heap header", points_to=block)


def _free_space(g: Geometry, data: bytes, at: int) -> Hit:
    """FSHD: fixed size; its serialized section list (FSSE) has the allocated size it states."""
    osz, lsz = g.offset_size, g.length_size
    sections = _address(g, data, at + 14 + 5 * lsz)
    allocated = _uint(data, at + 14 + 6 * lsz + osz, lsz)
    listed = ((sections, allocated, "HDF5 free-space section list"),) if sections is not None and allocated else ()
    return Hit(18 + 7 * lsz + osz, "HDF5 free-space manager header", points_to=listed)


def _structure(g: Geometry, data: bytes, at: int, room: int, children: set[int]) -> Hit | None:
    """The structure whose signature is at `at`, if its version is known and it fits in `room` bytes."""
    sig, version = data[at : at + 4], data[at + 4]
    hit: Hit | None = None
    if sig == b"TREE":
        size = _tree_size(g, data, at, room, children)
        hit = Hit(size, "HDF5 B-tree node (v1)") if size else None
    elif sig == b"SNOD" and version == 1:
        hit = Hit(symbol_node_bytes(g.offset_size, g.leaf_k), "HDF5 symbol table node")
    elif sig == b"HEAP" and version == 0:
        data_at = at + 8 + 2 * g.length_size
        segment = (g.origin + _uint(data, data_at, g.offset_size), _uint(data, at + 8, g.length_size), HEAP_DATA)
        hit = Hit(8 + 2 * g.length_size + g.offset_size, "HDF5 local heap header", points_to=(segment,))
    elif sig == b"GCOL" and version == 1:
        size = _uint(data, at + 8, g.length_size)
        hit = Hit(size, GLOBAL_HEAP_LABEL, pooled=False) if size >= 16 else None
    elif sig == b"BTHD" and version == 0:
        hit = _v2_btree(g, data, at)
    elif sig == b"FRHP" and version == 0:
        hit = _fractal_heap(g, data, at)
    elif sig == b"FSHD" and version == 0:
        hit = _free_space(g, data, at)
    return hit if hit is not None and 0 < hit.size <= room else None


def locate(read: Read, g: Geometry, gaps: Sequence[tuple[int, int]], children: set[int]) -> tuple[list[Region], int]:
    """Signed structures found in `gaps` ((start, length), absolute), and the sized-pool bytes they account for.

    `children`: absolute addresses of known chunks, to tell chunk B-tree nodes of different ranks apart.
    """
    found: list[Region] = []
    pooled = 0
    pointed: list[tuple[int, int, str]] = []
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
            hit = _structure(g, data, at, len(data) - at, children) if at + MIN_STRUCTURE <= len(data) else None
            if hit is None:
                pos = at + 1
                continue
            found.append(Region(RegionKind.METADATA, start + at, hit.size, hit.label))
            pooled += hit.size if hit.pooled else 0
            pointed += hit.points_to
            pos = at + hit.size
    blocks = _pointed(read, pointed, gaps, found)
    return found + blocks, pooled + sum(r.length for r in blocks)


def _pointed(
    read: Read, pointed: Sequence[tuple[int, int, str]], gaps: Sequence[tuple[int, int]], found: Sequence[Region]
) -> list[Region]:
    """Blocks a structure points to (heap data, B-tree roots, heap blocks, section lists) that lie inside one gap,
    clear of every structure found, and carry their own signature where they have one (sorted lookups)."""
    gap_starts = [start for start, _ in gaps]  # gaps come sorted and disjoint
    spans = sorted((r.start, r.end) for r in found)
    span_starts = [start for start, _ in spans]
    out: list[Region] = []
    for addr, size, label in sorted(set(pointed)):
        g = bisect.bisect_right(gap_starts, addr) - 1
        if not size or g < 0 or addr + size > gaps[g][0] + gaps[g][1]:
            continue
        j = bisect.bisect_left(span_starts, addr + size)  # structures starting before the block's end
        if (j and spans[j - 1][1] > addr) or (out and out[-1].end > addr):
            continue
        signature = BLOCK_SIGNATURES.get(label)
        if signature is not None and read(addr, len(signature)) != signature:
            continue
        out.append(Region(RegionKind.METADATA, addr, size, label))
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
