"""HDF5 metadata read from the file's own bytes (struct only): the `H5Walk` h5py gives, for the files h5py writes.

h5py writes with `libver='earliest'` unless told otherwise, and so do Keras 2, tf-keras and Keras 3: a version 0
or 1 superblock, version 1 object headers (with continuation blocks), groups as symbol tables (a v1 B-tree of
type 0 over "SNOD" nodes, names in a local "HEAP"), dataset layouts of version 3 (compact, contiguous, chunked
with a v1 B-tree of type 1) and compact attributes (variable-length strings in global heap collections "GCOL").
This module reads that subset (HDF5 file format specification 3.0, sections II-IV) through `Probe.read_at`,
metadata bytes only, and gives the same record as `loaders._hdf5._walk`: the same objects in the order
`h5o.visit` reports them (depth first, names in B-tree order), the same attribute values (as h5py and numpy's
`tolist` make them), the same storage and the same B-tree and heap sizes (`H5Oget_info` meta sizes: B-tree nodes
and symbol table nodes and the local heap of a group, the chunk B-tree nodes of a chunked dataset).

Anything else (v2 object headers, new-style groups, dense attributes, other layout versions, datatype classes
it does not map, shared messages, soft links, a structure that does not parse or that repeats, a cap passed)
raises `Unsupported`, and the caller reads the file through h5py as before: an unusual, corrupt or hostile file
gets exactly the behaviour and the messages it got from h5py. So the reader also makes the checks the library
makes where h5py would fail or read differently (found by mutating real files byte by byte and comparing): no
metadata past the end-of-file address, local heap free lists, B-tree keys around the names they lead to and
right-sibling chains (the library counts B-tree bytes along them), whole global heap collections, attribute
name lengths, dimensions within their maxima, storage sizes against the shape, chunk offsets on the chunk grid.
"""

from __future__ import annotations

import struct

from inspector.dtypes import NUMPY_DTYPES
from inspector.errors import InspectorError
from inspector.probe import HDF5_SIGNATURE, Probe
from inspector.records import Region, RegionKind
from inspector.recordtype import record
from loaders._hdf5 import (
    MAX_OBJECTS,
    OPAQUE_DTYPE_ATTR,
    OPAQUE_NAMES,
    SUPERBLOCK_BYTES,
    H5Dataset,
    H5Walk,
    kept_attrs,
)
from loaders._hdf5_structures import btree_node_bytes, chunk_key_bytes, symbol_node_bytes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_BYTES = 64 << 20  # metadata bytes read in all before giving up (a Keras file has some kilobytes)
MAX_HEADER_BYTES = 4 << 20  # one object header, all its chunks
MAX_CONTINUATIONS = 1_000  # chunks of one object header
MAX_BTREE_LEVEL = 64
MAX_HEAP_BYTES = 16 << 20  # a local heap's data segment, a global heap collection
SIGNATURE_STEP = 512  # the superblock sits at 0, 512, 1024, 2048, ... (after a user block)
UNDEFINED = -1  # an address of all 1 bits
HEAP_FREE_NULL = 1  # the end of a local heap's free list

# Message types (spec IV.A.2): those the walk reads, and those it checks (as the library decodes them) and passes.
NIL, DATASPACE, DATATYPE, FILL_OLD, FILL, LAYOUT, PIPELINE, ATTRIBUTE = 0x00, 0x01, 0x03, 0x04, 0x05, 0x08, 0x0B, 0x0C
COMMENT, MTIME_OLD, CONTINUATION, SYMBOL_TABLE, MTIME = 0x0D, 0x0E, 0x10, 0x11, 0x12
READ = {DATASPACE, DATATYPE, LAYOUT, PIPELINE, ATTRIBUTE, CONTINUATION, SYMBOL_TABLE}
SKIPPED = {NIL, FILL_OLD, FILL, COMMENT, MTIME_OLD, MTIME}
REPEATABLE = {NIL, ATTRIBUTE, CONTINUATION}
MESSAGE_FLAGS_READ = 0x01 | 0x04  # constant, never shared: a shared message (0x02) or any other flag is not read
MAX_RANK = 32
MAX_ATTRIBUTE_LISTS = 1 << 16  # nested lists an attribute value may make (a 0-length last dimension makes many)
MAX_FILTERS = 32

# Datatype classes (spec IV.A.2.d) mapped to numpy's kind as h5py maps them.
FIXED, FLOAT, STRING, OPAQUE, ENUM, VLEN = 0, 1, 3, 5, 8, 9
# IEEE float layouts h5py maps to float16/32/64: size -> (bit offset, precision, exponent location, exponent size,
# mantissa location, mantissa size, exponent bias), and the sign bit location.
IEEE_FLOATS = {
    2: ((0, 16, 10, 5, 0, 10, 15), 15),
    4: ((0, 32, 23, 8, 0, 23, 127), 31),
    8: ((0, 64, 52, 11, 0, 52, 1023), 63),
}
STRUCT_CODES = {("i", 1): "b", ("i", 2): "h", ("i", 4): "i", ("i", 8): "q", ("u", 1): "B", ("u", 2): "H"}
STRUCT_CODES |= {("u", 4): "I", ("u", 8): "Q", ("f", 2): "e", ("f", 4): "f", ("f", 8): "d", ("b", 1): "b"}
PAD_NULLTERM, PAD_NULLPAD = 0, 1
BOOL_MEMBERS = {b"FALSE": 0, b"TRUE": 1}  # h5py's bool: an enum of int8 with these two members
VLEN_POINTER_BYTES = 8  # numpy's object dtype itemsize (a variable-length string as h5py maps it)


class Unsupported(Exception):
    """Outside what this reader reads (or not well formed): the caller reads the file through h5py instead."""


@record(slots=True)
class Datatype:
    """An HDF5 datatype as h5py maps it to numpy: kind ('i', 'u', 'f', 'b', 'S', 'O', 'V'), itemsize, more."""

    kind: str
    size: int  # bytes of one element in the file
    order: str = "<"
    pad: int = PAD_NULLPAD  # fixed-length strings
    numpy_size: int = 0  # numpy's itemsize when it differs (variable-length strings: a pointer)

    @property
    def itemsize(self) -> int:
        return self.numpy_size or self.size


@record(slots=True)
class Header:
    """An object header's messages (type, body) and its total size (all chunks, prefix included)."""

    messages: list[tuple[int, bytes]]
    total: int


def _uint(data: bytes, at: int, size: int) -> int:
    if at + size > len(data):
        raise Unsupported("a field runs past its structure")
    return int.from_bytes(data[at : at + size], "little")


class Reader:
    """One HDF5 file (or the window of it inside a zip): bounded metadata reads relative to the superblock."""

    def __init__(self, probe: Probe, start: int, length: int) -> None:
        self.probe, self.start, self.end = probe, start, start + length
        self.budget = MAX_BYTES
        self.reads: dict[tuple[int, int], bytes] = {}  # (absolute offset, length) -> bytes: placing reads them again
        self.gheaps: dict[int, dict[int, bytes]] = {}
        self.seen: set[tuple[str, int]] = set()
        userblock = self._find_superblock(length)
        self.userblock, self.origin = userblock, start + userblock
        head = self.raw(self.origin, 24)
        version = head[8]
        if version not in (0, 1) or head[9] or head[10] or head[12]:  # free space, root entry, shared header
            raise Unsupported(f"superblock version {version}")
        self.version, self.osz, self.lsz = version, head[13], head[14]
        if self.osz not in (2, 4, 8) or self.lsz not in (2, 4, 8):
            raise Unsupported("offset or length size")
        self.leaf_k, self.internal_k, flags = struct.unpack_from("<HHI", head, 16)
        if flags:
            raise Unsupported("superblock status flags")
        fixed = 24 + (4 if version == 1 else 0)
        rest = self.raw(self.origin + fixed, 4 * self.osz + 2 * self.osz + 24)
        self.chunk_k = struct.unpack_from("<H", self.raw(self.origin + 24, 2))[0] if version == 1 else 32
        if not self.leaf_k or not self.internal_k or not self.chunk_k:
            raise Unsupported("a B-tree K of 0")
        base, extension, eof, driver = (self.address(rest, i * self.osz) for i in range(4))
        # the library moves the base address to where it found the superblock, and the end of file with it; it
        # refuses a file shorter than that end. The free-space address names a superblock extension (v2 headers).
        if base not in (0, userblock) or (driver, extension) != (UNDEFINED, UNDEFINED) or eof == UNDEFINED:
            raise Unsupported("base address, superblock extension, driver block or end of file")
        if eof + userblock - base > length:
            raise Unsupported("a file shorter than its end of file address")
        self.eoa = eof - base  # the library reads no metadata at or past this address ("temporary file space")
        self.root = self.address(rest, 4 * self.osz + self.osz)  # the root entry's object header address
        entry = 4 * self.osz + 2 * self.osz
        self.root_cache = _uint(rest, entry, 4), rest[entry + 8 : entry + 8 + 2 * self.osz]  # type, scratch pad
        if self.root_cache[0] not in (0, 1):
            raise Unsupported("root symbol table entry cache type")

    def _find_superblock(self, length: int) -> int:
        at = 0
        while at + len(HDF5_SIGNATURE) <= length:
            if self.raw(self.start + at, len(HDF5_SIGNATURE)) == HDF5_SIGNATURE:
                return at
            at = SIGNATURE_STEP if at == 0 else at * 2
        raise Unsupported("no superblock")

    def raw(self, at: int, n: int) -> bytes:
        """`n` bytes at absolute `at`, inside the window and the budget."""
        if n < 0 or at < self.start or at + n > self.end or n > self.budget:
            raise Unsupported("a read outside the HDF5 data or over the budget")
        self.budget -= n
        try:
            data = self.probe.read_at(at, n, fmt="hdf5", what="HDF5 metadata")
        except InspectorError as exc:
            raise Unsupported(str(exc)) from exc
        self.reads[at, n] = data
        return data

    def read(self, address: int, n: int) -> bytes:
        """`n` bytes at a file address (relative to the superblock)."""
        if address < 0 or address + n > self.eoa:
            raise Unsupported("an undefined address, or one past the end of allocated space")
        return self.raw(self.origin + address, n)

    def address(self, data: bytes, at: int) -> int:
        value = _uint(data, at, self.osz)
        return UNDEFINED if value == (1 << (8 * self.osz)) - 1 else value

    def once(self, what: str, address: int) -> None:
        """Each structure is read once: a second visit is a cycle."""
        if (what, address) in self.seen:
            raise Unsupported(f"{what} at {address} reached twice")
        self.seen.add((what, address))

    # -- object headers --------------------------------------------------------------------------

    def header(self, address: int) -> Header:
        """A version 1 object header: its messages, continuation chunks followed (spec IV.A.1.a)."""
        self.once("object header", address)
        prefix = self.read(address, 16)
        if prefix[0] != 1:
            raise Unsupported("object header version")
        count, size = struct.unpack_from("<H", prefix, 2)[0], struct.unpack_from("<I", prefix, 8)[0]
        chunks = [(address, 16 + size, 16)]  # chunk 0 read with its prefix, as placing the header reads it
        total = 0
        messages: list[tuple[int, bytes]] = []
        while chunks:
            at, size, skip = chunks.pop(0)
            total += size
            if total > MAX_HEADER_BYTES or len(messages) > count:
                raise Unsupported("object header too large")
            data = self.read(at, size)[skip:]
            size -= skip
            pos = 0
            while pos + 8 <= size:
                mtype, msize, flags = struct.unpack_from("<HHB", data, pos)
                body = data[pos + 8 : pos + 8 + msize]
                if len(body) != msize or msize % 8 or flags & ~MESSAGE_FLAGS_READ:
                    raise Unsupported("message runs past its chunk, is not aligned, or is shared")
                if mtype == CONTINUATION:
                    if len(chunks) + len(messages) > MAX_CONTINUATIONS:
                        raise Unsupported("too many continuations")
                    chunks.append((self.address(body, 0), _uint(body, self.osz, self.lsz), 0))
                    self.once("continuation", chunks[-1][0])
                messages.append((mtype, body))
                pos += 8 + msize
            if pos != size:
                raise Unsupported("object header chunk does not close")
        if len(messages) != count:
            raise Unsupported("object header message count")
        return Header(messages, total)

    # -- groups: symbol tables -------------------------------------------------------------------

    def group_links(self, body: bytes) -> tuple[list[tuple[bytes, int]], int, int]:
        """(name, object header address) of a symbol-table group in name order, its B-tree and symbol table node
        bytes, and its local heap bytes (prefix and data segment) as `H5Oget_info` counts them.

        The library finds a name by binary search over the B-tree keys and the sorted node entries: names must
        be strictly increasing and lie between the keys around them, or h5py could not open what it lists.
        """
        btree, heap = self.address(body, 0), self.address(body, self.osz)
        names, heap_size = self.local_heap(heap)
        node_size = btree_node_bytes(self.osz, self.lsz, self.internal_k)
        snod_size = symbol_node_bytes(self.osz, self.leaf_k)
        links: list[tuple[bytes, int]] = []
        leaves = self.btree(btree, 0, node_size, self.lsz)
        for keys in self.btree_keys:
            key_names = [_heap_name(names, _uint(key, 0, self.lsz)) for key in keys]
            if key_names != sorted(key_names):
                raise Unsupported("B-tree keys out of order")
        for snod, path in zip(leaves, self.btree_bounds, strict=True):
            bounds = [
                (_heap_name(names, _uint(lo, 0, self.lsz)), _heap_name(names, _uint(hi, 0, self.lsz)))
                for lo, hi in path
            ]
            for name, target in self.symbol_node(snod, names):
                if any(not lo < name <= hi for lo, hi in bounds) or (links and links[-1][0] >= name):
                    raise Unsupported("symbol table names out of order")
                links.append((name, target))
        return links, self.btree_nodes * node_size + len(leaves) * snod_size, heap_size

    def local_heap(self, address: int) -> tuple[bytes, int]:
        """A local heap's data segment (its free list checked as the library checks it) and its size with the
        prefix (H5HL_heapsize)."""
        self.once("local heap", address)
        head = self.read(address, 8 + 2 * self.lsz + self.osz)
        if head[:4] != b"HEAP" or head[4] != 0:
            raise Unsupported("local heap signature")
        size, free = _uint(head, 8, self.lsz), _uint(head, 8 + self.lsz, self.lsz)
        data_at = self.address(head, 8 + 2 * self.lsz)
        if size > MAX_HEAP_BYTES:
            raise Unsupported("local heap too large")
        data = self.read(data_at, size)
        visited = set()
        while free != HEAP_FREE_NULL:
            if free in visited or free + 2 * self.lsz > size:
                raise Unsupported("bad heap free list")
            visited.add(free)
            at, free, block = free, _uint(data, free, self.lsz), _uint(data, free + self.lsz, self.lsz)
            if not free or at + block > size:
                raise Unsupported("bad heap free list")
        prefix = -(-len(head) // 8) * 8  # H5HL_SIZEOF_HDR: aligned to 8 bytes
        return data, prefix + size

    def btree(self, address: int, node_type: int, node_size: int, key_size: int) -> list[int]:
        """The leaf-level children of a v1 B-tree in key order, with the keys around each (`btree_bounds`).

        `btree_nodes` counts the nodes as H5B_get_info does (level by level along the right-sibling links), and
        those links must chain the nodes of each level in key order, as a tree the library wrote does.
        """
        self.btree_nodes = 0
        self.btree_bounds: list[list[tuple[bytes, bytes]]] = []  # per leaf child: the keys around it at each level
        self.btree_keys: list[list[bytes]] = []  # per node
        if address == UNDEFINED:
            return []
        levels: dict[int, list[tuple[int, int]]] = {}  # level -> (node address, its right sibling) in key order
        out: list[int] = []
        self._btree_node(address, node_type, node_size, key_size, None, out, levels, [])
        for chain in levels.values():
            following = [addr for addr, _ in chain[1:]] + [UNDEFINED]
            if [right for _, right in chain] != following:
                raise Unsupported("B-tree sibling links out of order")
            self.btree_nodes += len(chain)
        return out

    def _btree_node(
        self,
        address: int,
        node_type: int,
        node_size: int,
        key_size: int,
        level: int | None,
        out: list[int],
        levels: dict[int, list[tuple[int, int]]],
        path: list[tuple[bytes, bytes]],
    ) -> None:
        self.once("B-tree node", address)
        node = self.read(address, node_size)
        if node[:4] != b"TREE" or node[4] != node_type or (level is not None and node[5] != level):
            raise Unsupported("B-tree node signature, type or level")
        node_level, used = node[5], struct.unpack_from("<H", node, 6)[0]
        if node_level > MAX_BTREE_LEVEL or 8 + 2 * self.osz + used * (key_size + self.osz) + key_size > node_size:
            raise Unsupported("B-tree node too deep or too full")
        if node_level and not used:  # the library descends through an inner node's first child
            raise Unsupported("an inner B-tree node without children")
        levels.setdefault(node_level, []).append((address, self.address(node, 8 + self.osz)))
        pos = 8 + 2 * self.osz
        step = key_size + self.osz
        self.btree_keys.append([node[pos + i * step : pos + i * step + key_size] for i in range(used + 1)])
        for _ in range(used):
            low, child = node[pos : pos + key_size], self.address(node, pos + key_size)
            bounds = [*path, (low, node[pos + step : pos + step + key_size])]
            pos += step
            if node_level:
                self._btree_node(child, node_type, node_size, key_size, node_level - 1, out, levels, bounds)
            else:
                out.append(child)
                self.btree_bounds.append(bounds)

    def symbol_node(self, address: int, names: bytes) -> list[tuple[bytes, int]]:
        """A symbol table node's entries: (link name from the local heap, object header address)."""
        self.once("symbol table node", address)
        entry = 2 * self.osz + 24
        node = self.read(address, symbol_node_bytes(self.osz, self.leaf_k))  # the whole node, as the library reads it
        count = struct.unpack_from("<H", node, 6)[0]
        if node[:4] != b"SNOD" or node[4] != 1 or count > 2 * self.leaf_k:
            raise Unsupported("symbol table node")
        data = node[8:]
        out = []
        for i in range(count):
            at = i * entry
            name_at, target = _uint(data, at, self.osz), self.address(data, at + self.osz)
            if _uint(data, at + 2 * self.osz, 4) not in (0, 1):
                raise Unsupported("a soft link")
            name = _heap_name(names, name_at)
            if not name or b"/" in name or name == b".":  # the library could not look such a name up again
                raise Unsupported("a link name with a slash, or empty")
            out.append((name, target))
        return out

    # -- datatypes, dataspaces, attributes -------------------------------------------------------

    def datatype(self, body: bytes) -> Datatype:
        """A datatype message's type as h5py maps it (spec IV.A.2.d); other classes are unsupported."""
        cls, version = body[0] & 0x0F, body[0] >> 4
        bits, size = _uint(body, 1, 3), _uint(body, 4, 4)
        order = ">" if bits & 1 else "<"
        if version not in (1, 2, 3) or not size:
            raise Unsupported("datatype version or size")
        if cls == FIXED:
            offset, precision = struct.unpack_from("<HH", body, 8)
            if offset or precision != 8 * size or size not in (1, 2, 4, 8) or bits & 0x06:
                raise Unsupported("integer layout")
            return Datatype("i" if bits & 0x08 else "u", size, order)
        if cls == FLOAT:
            layout, sign = IEEE_FLOATS.get(size, ((), -1))
            if struct.unpack_from("<HHBBBBI", body, 8) != layout or bits >> 8 & 0xFF != sign or bits & 0x7E != 0x20:
                raise Unsupported("float layout")
            return Datatype("f", size, order)
        if cls == STRING:
            if bits & 0x0F not in (PAD_NULLTERM, PAD_NULLPAD) or bits >> 4 & 0x0F > 1:
                raise Unsupported("string padding or character set")
            return Datatype("S", size, pad=bits & 0x0F)
        if cls == OPAQUE:
            tag = body[8 : 8 + (bits & 0xFF)].rstrip(b"\0")
            if tag.startswith(b"NUMPY:"):  # h5py maps these tags back to numpy dtypes
                raise Unsupported("an opaque type h5py maps to a numpy dtype")
            return Datatype("V", size)
        if cls == VLEN:
            base = self.datatype(body[8:])
            if bits & 0x0F != 1 or bits >> 8 & 0x0F > 1 or base.size != 1 or size != 4 + self.osz + 4:
                raise Unsupported("a variable-length sequence (not a string)")
            return Datatype("O", 4 + self.osz + 4, numpy_size=VLEN_POINTER_BYTES)
        if cls == ENUM:
            return self._bool(body, version, bits & 0xFFFF, size)
        raise Unsupported(f"datatype class {cls}")

    def _bool(self, body: bytes, version: int, count: int, size: int) -> Datatype:
        """h5py's bool: an enum over int8 with exactly FALSE = 0 and TRUE = 1."""
        base = self.datatype(body[8:])
        if base.kind != "i" or base.size != 1 or size != 1 or count != 2 or version == 3:
            raise Unsupported("an enum other than h5py's bool")
        pos, names = 8 + 12, []  # an 8-bit integer base type: 8 bytes of header and 4 of properties
        for _ in range(count):
            end = body.index(b"\0", pos)
            names.append(body[pos:end])
            pos += -(-(end - pos + 1) // 8) * 8
        values = body[pos : pos + count]
        if dict(zip(names, values, strict=True)) != BOOL_MEMBERS:
            raise Unsupported("an enum other than h5py's bool")
        return Datatype("b", 1)

    def dataspace(self, body: bytes) -> tuple[int, ...]:
        """A dataspace message's dimensions (spec IV.A.2.b): () for a scalar; a null dataspace is unsupported."""
        version, rank, flags = body[0], body[1], body[2]
        if version not in (1, 2) or flags & 0x02 or (version == 2 and body[3] == 2):
            raise Unsupported("dataspace version, permutation or null dataspace")
        at = 8 if version == 1 else 4
        if rank > MAX_RANK:
            raise Unsupported("dataspace rank")
        dims = tuple(_uint(body, at + i * self.lsz, self.lsz) for i in range(rank))
        if flags & 0x01:  # maximum dimensions follow: the library refuses a size above its maximum
            at += rank * self.lsz
            limits = [_uint(body, at + i * self.lsz, self.lsz) for i in range(rank)]
            if any(d > m and m != (1 << (8 * self.lsz)) - 1 for d, m in zip(dims, limits, strict=True)):
                raise Unsupported("a dimension above its maximum")
        return dims

    def attribute(self, body: bytes) -> tuple[str, Datatype, tuple[int, ...], bytes]:
        """An attribute message (spec IV.A.2.m): name, type, shape and its raw data."""
        version, flags = body[0], body[1]
        name_size, type_size, space_size = struct.unpack_from("<HHH", body, 2)
        if version not in (1, 2, 3) or (version > 1 and flags):
            raise Unsupported("attribute version or shared parts")
        pad = (lambda n: -(-n // 8) * 8) if version == 1 else (lambda n: n)
        at = 8 if version != 3 else 9
        raw_name = body[at : at + name_size]
        if not raw_name or raw_name.find(b"\0") != name_size - 1:  # the library checks the stored name length
            raise Unsupported("attribute name length")
        at += pad(name_size)
        dtype = self.datatype(body[at : at + type_size])
        at += pad(type_size)
        shape = self.dataspace(body[at : at + space_size])
        at += pad(space_size)
        if at > len(body):
            raise Unsupported("attribute parts run past the message")
        try:
            name = raw_name[:-1].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Unsupported("an attribute name that is not UTF-8") from exc
        return name, dtype, shape, body[at:]

    def value(self, dtype: Datatype, shape: tuple[int, ...], data: bytes) -> Any:
        """An attribute's value as h5py reads it and `tolist` gives it (a scalar, or nested lists)."""
        n, lists = 1, 1
        for d in shape:
            n *= d
            lists *= max(d, 1)
        if len(data) < n * dtype.size or lists > MAX_ATTRIBUTE_LISTS:  # (empty dimensions still make lists)
            raise Unsupported("attribute data shorter than its shape, or too many lists")
        flat: list[Any]
        if dtype.kind == "S":
            items = (data[i * dtype.size : (i + 1) * dtype.size] for i in range(n))
            if dtype.pad == PAD_NULLTERM:  # converted to numpy's null-padded strings: up to the first NUL
                flat = [item.split(b"\0", 1)[0] for item in items]
            else:
                flat = [item.rstrip(b"\0") for item in items]
        elif dtype.kind == "O":
            flat = [self.vlen_string(data[i * dtype.size : (i + 1) * dtype.size]) for i in range(n)]
        elif dtype.kind == "V":
            raise Unsupported("an opaque attribute")
        else:
            flat = list(
                struct.unpack(f"{dtype.order}{n}{STRUCT_CODES[dtype.kind, dtype.size]}", data[: n * dtype.size])
            )
            if dtype.kind == "b":
                if any(v not in (0, 1) for v in flat):
                    raise Unsupported("a bool that is neither FALSE nor TRUE")
                flat = [bool(v) for v in flat]
        return flat[0] if not shape else _nest(flat, shape)

    def vlen_string(self, element: bytes) -> str:
        """A variable-length string: (length, global heap collection, object index) -> h5py's str."""
        length, collection, index = _uint(element, 0, 4), self.address(element, 4), _uint(element, 4 + self.osz, 4)
        if collection in (0, UNDEFINED):  # a null string: not read here
            raise Unsupported("a null variable-length string")
        data = self.heap_object(collection, index)  # the library reads the object even for an empty string
        if len(data) != length:  # the library checks the object's size against the string's length
            raise Unsupported("a global heap object whose size is not its string's")
        return data[:length].split(b"\0", 1)[0].decode("utf-8", "surrogateescape")

    def heap_object(self, collection: int, index: int) -> bytes:
        """Object `index` of a global heap collection ("GCOL", spec III.E)."""
        if collection not in self.gheaps:
            self.gheaps[collection] = self._collection(collection)
        found = self.gheaps[collection].get(index)
        if found is None or not index:
            raise Unsupported("global heap object not found")
        return found

    def _collection(self, address: int) -> dict[int, bytes]:
        """Every object of a global heap collection, parsed whole as the library parses it on loading: objects
        back to back (header, then data padded to 8 bytes) up to the free space (object 0) and the collection's
        exact end; anything else (which can make the library loop for ever) is not read here."""
        head = self.read(address, 8 + self.lsz)
        size = _uint(head, 8, self.lsz)
        if head[:4] != b"GCOL" or head[4] != 1 or size > MAX_HEAP_BYTES or size < len(head):
            raise Unsupported("global heap collection")
        data = self.read(address, size)
        objects: dict[int, bytes] = {}
        header = 8 + self.lsz
        pos = len(head)
        while pos < size:
            if pos + header > size:  # too small for an object header: free space
                break
            number, length = _uint(data, pos, 2), _uint(data, pos + 8, self.lsz)
            need = length if number == 0 else header + -(-length // 8) * 8
            if number in objects or need <= 0 or need % 8 or pos + need > size:
                raise Unsupported("a global heap object out of bounds")
            objects[number] = data[pos + header : pos + header + length]
            pos += need
        return objects

    def attributes(self, messages: list[tuple[int, bytes]]) -> dict[str, Any]:
        """Attributes in name order (h5py's iteration order without creation order tracking), as `tolist` gives."""
        raw = {}
        for mtype, body in messages:
            if mtype == ATTRIBUTE:
                name, dtype, shape, data = self.attribute(body)
                if name in raw:
                    raise Unsupported("two attributes of one name")
                raw[name] = self.value(dtype, shape, data)
        return {name: raw[name] for name in sorted(raw, key=lambda k: k.encode("utf-8"))}


def _heap_name(names: bytes, at: int) -> bytes:
    """A NUL-terminated name in a local heap's data segment."""
    end = names.find(b"\0", at)
    if at >= len(names) or end < 0:
        raise Unsupported("a name outside its local heap")
    return names[at:end]


def _nest(flat: list[Any], shape: tuple[int, ...]) -> list[Any]:
    if len(shape) == 1:
        return flat
    step = 1
    for d in shape[1:]:
        step *= d
    return [_nest(flat[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]


def _messages_of(header: Header) -> dict[int, bytes]:
    """The first message of each type, refusing types that the walk does not know."""
    out: dict[int, bytes] = {}
    for mtype, body in header.messages:
        if mtype not in READ and mtype not in SKIPPED:
            raise Unsupported(f"message type {mtype:#x}")
        if mtype in out and mtype not in REPEATABLE:
            raise Unsupported(f"message type {mtype:#x} twice")
        out.setdefault(mtype, body)
    _check_messages(header)
    return out


def walk(probe: Probe, start: int, length: int, reads: dict[tuple[int, int], bytes] | None = None) -> H5Walk:
    """The H5Walk of the HDF5 data in `[start, start + length)` of the probe's file, as `_hdf5._walk` gives it.

    `reads`, when given, receives the bytes read ((absolute offset, length) -> bytes) for placing to reuse.

    Raises:
        Unsupported: the file uses what this reader does not read, or does not parse.
    """
    try:
        reader = Reader(probe, start, length)
        if reads is not None:
            reader.reads = reads
        return _walk(reader)
    except (struct.error, IndexError, ValueError, KeyError) as exc:
        raise Unsupported(f"{type(exc).__name__}: {exc}") from exc


def _walk(r: Reader) -> H5Walk:
    base = r.start
    regions = [Region(RegionKind.HEADER, r.origin, SUPERBLOCK_BYTES[r.version], f"HDF5 superblock v{r.version}")]
    if r.userblock:
        regions.append(Region(RegionKind.METADATA, base, r.userblock, "HDF5 user block"))
    datasets: list[H5Dataset] = []
    groups: dict[str, dict[str, Any]] = {}
    seen: set[int] = set()
    sized = 0
    stack: list[tuple[str, int]] = [("", r.root)]
    while stack:
        name, address = stack.pop()
        if address in seen:
            continue  # a second hard link to an object: h5o.visit reports it once
        seen.add(address)
        if len(seen) > MAX_OBJECTS:
            raise Unsupported("too many objects")
        header = r.header(address)
        regions.append(Region(RegionKind.HEADER, r.origin + address, header.total, f"object header /{name}"))
        messages = _messages_of(header)
        raw_attrs = r.attributes(header.messages) if ATTRIBUTE in messages else {}
        attrs = kept_attrs(raw_attrs)
        if SYMBOL_TABLE in messages:
            if address == r.root and r.root_cache[0] == 1 and r.root_cache[1] != messages[SYMBOL_TABLE][: 2 * r.osz]:
                raise Unsupported("the superblock's cached root symbol table differs from the root's")
            links, index_size, heap_size = r.group_links(messages[SYMBOL_TABLE])
            sized += index_size + heap_size
            groups[name] = attrs
            prefix = f"{name}/" if name else ""
            for link, target in reversed(links):
                try:
                    stack.append((prefix + link.decode("utf-8"), target))
                except UnicodeDecodeError as exc:
                    raise Unsupported("a name that is not UTF-8") from exc
        elif DATATYPE in messages and DATASPACE in messages and LAYOUT in messages:
            item, data_regions, index_size = _dataset(r, name, messages, raw_attrs, attrs)
            sized += index_size
            datasets.append(item)
            regions.extend(data_regions)
        else:
            raise Unsupported("an object that is neither a symbol-table group nor a dataset")
    if any(g.start < r.start or g.end > r.end for g in regions):
        raise Unsupported("a structure outside the HDF5 data")  # h5py's walk reports it as it always did
    superblock = {"origin": r.origin, "version": r.version, "offset_size": r.osz, "length_size": r.lsz}
    return H5Walk(datasets, regions, sized, groups.get("", {}), groups, superblock)


def _dtype_name(dtype: Datatype, raw_attrs: dict[str, Any]) -> tuple[str, int]:
    """`_hdf5.dtype_name` for a native datatype."""
    key = f"{dtype.kind}{dtype.itemsize}"
    if key in NUMPY_DTYPES:
        return NUMPY_DTYPES[key], dtype.itemsize
    if dtype.kind == "V":
        tag = raw_attrs.get(OPAQUE_DTYPE_ATTR)
        if isinstance(tag, bytes):
            try:
                tag = tag.decode()
            except UnicodeDecodeError as exc:
                raise Unsupported("an opaque dtype tag that is not UTF-8") from exc
        if isinstance(tag, list):
            raise Unsupported("an opaque dtype tag that is an array")
        if tag in OPAQUE_NAMES:
            return OPAQUE_NAMES[tag], dtype.itemsize
        return f"VOID[{dtype.itemsize}]", dtype.itemsize
    if dtype.kind == "O":
        return "OBJECT", dtype.itemsize
    if dtype.kind == "S":
        return f"BYTES[{dtype.itemsize}]", dtype.itemsize
    raise Unsupported(f"dtype {key}")


def _dataset(
    r: Reader, path: str, messages: dict[int, bytes], raw_attrs: dict[str, Any], attrs: dict[str, Any]
) -> tuple[H5Dataset, list[Region], int]:
    """`_hdf5._dataset` from the messages: the record, its storage regions, and its chunk index bytes.

    The layout is checked as the library checks it when it opens the dataset (storage sizes against the shape,
    chunk dimensions, chunk coordinates on the chunk grid), so that what h5py cannot open is not read here.
    """
    dtype = r.datatype(messages[DATATYPE])
    shape = r.dataspace(messages[DATASPACE])
    name, size = _dtype_name(dtype, raw_attrs)
    n = 1
    for d in shape:
        n *= d
    filtered = PIPELINE in messages and _filters(messages[PIPELINE]) > 0
    layout = messages[LAYOUT]
    if layout[0] != 3:
        raise Unsupported(f"layout version {layout[0]}")
    item = H5Dataset(path, shape, name, n * size, None, 0, filtered=filtered, attrs=attrs)
    regions: list[Region] = []
    index_size = 0
    if layout[1] == 0:  # compact: the data sits in the header
        item.storage_size = _uint(layout, 2, 2)
        if item.storage_size != n * dtype.size or 4 + item.storage_size > len(layout) or filtered:
            raise Unsupported("compact data size")
    elif layout[1] == 1:  # contiguous
        address, stored = r.address(layout, 2), _uint(layout, 2 + r.osz, r.lsz)
        if stored != n * dtype.size or filtered or (address != UNDEFINED and address + stored > r.eoa):
            raise Unsupported("contiguous storage size or place")
        if address != UNDEFINED and stored:
            item.storage_size = stored
            item.offset = r.origin + address
            regions.append(Region(RegionKind.TENSOR_DATA, r.origin + address, stored, path))
    elif layout[1] == 2:  # chunked: a v1 B-tree of type 1 over the chunks
        dims = layout[2]
        address = r.address(layout, 3)
        chunk = [_uint(layout, 3 + r.osz + 4 * i, 4) for i in range(dims)]
        if dims != len(shape) + 1 or 0 in chunk or chunk[-1] != dtype.size:
            raise Unsupported("chunk dimensions")
        key_size = chunk_key_bytes(dims - 1)  # (`dims` counts the element's own dimension)
        node_size = btree_node_bytes(r.osz, key_size, r.chunk_k)
        chunks = r.btree(address, 1, node_size, key_size)
        index_size = r.btree_nodes * node_size
        kind = RegionKind.COMPRESSED if filtered else RegionKind.TENSOR_DATA
        for bounds in r.btree_bounds:
            for key in (k for pair in bounds for k in pair):
                if any(_uint(key, 8 + 8 * i, 8) % chunk[i] for i in range(dims)):
                    raise Unsupported("a chunk coordinate off the chunk grid")
        for i, (address, bounds) in enumerate(zip(chunks, r.btree_bounds, strict=True)):
            stored = _uint(bounds[-1][0], 0, 4)  # the key before a chunk: its stored size, filter mask, offsets
            item.chunks.append((r.origin + address, stored))
            item.storage_size += stored
            regions.append(Region(kind, r.origin + address, stored, f"{path} chunk {i}"))
    else:
        raise Unsupported(f"layout class {layout[1]}")
    return item, regions, index_size


def _filters(body: bytes) -> int:
    """The number of filters of a filter pipeline message, its filter descriptions checked to fit (spec IV.A.2.l)."""
    version, count = body[0], body[1]
    if version not in (1, 2) or count > MAX_FILTERS:
        raise Unsupported("filter pipeline version or count")
    at = 8 if version == 1 else 2
    for _ in range(count):
        ident = _uint(body, at, 2)
        named = version == 1 or ident >= 256
        name_size = _uint(body, at + 2, 2) if named else 0
        at += 2 + (2 if named else 0)
        values = _uint(body, at + 2, 2)
        at += 4 + (-(-name_size // 8) * 8 if version == 1 else name_size)
        at += 4 * values + (4 if version == 1 and values % 2 else 0)
        if at > len(body):
            raise Unsupported("filter description past the message")
    return count


def _check_messages(header: Header) -> None:
    """Messages the library decodes when it opens or describes the object (fill values, modification times), checked
    as its decoders check them."""
    for mtype, body in header.messages:
        if mtype == MTIME and (len(body) < 8 or body[0] != 1):
            raise Unsupported("modification time message")
        if mtype == MTIME_OLD and (len(body) < 16 or not body[:14].isdigit()):
            raise Unsupported("old modification time message")
        if mtype == FILL_OLD and 4 + _uint(body, 0, 4) > len(body):
            raise Unsupported("old fill value message")
        if mtype == FILL:
            version = body[0]
            if version in (1, 2):
                defined = body[3] if version == 2 else 1
                if defined and 8 + _uint(body, 4, 4) > len(body):
                    raise Unsupported("fill value message")
            elif version != 3 or body[1] & ~0x3F or (body[1] & 0x20 and 6 + _uint(body, 2, 4) > len(body)):
                raise Unsupported("fill value message")
