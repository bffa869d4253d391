"""LevelDB-format SSTables (TensorFlow's `.index` files), read block by block with every byte accounted for.

Layout (FORMATS.md section 9; LevelDB `doc/table_format.md`, TensorFlow `core/lib/io/table*.cc`)::

    data block 0 .. n-1     entries, then u32 restart offsets, u32 restart count; a 5-byte trailer follows
                            each block: 1 byte compression (0 none, 1 snappy) + u32 masked CRC32C
    metaindex block         empty in TensorFlow's files
    index block             key >= last key of a data block -> BlockHandle (varint offset, varint size)
    footer (48 bytes)       metaindex handle, index handle, zero padding, u64 magic 0xdb4775248b80fb57

An entry is ``varint shared, varint non_shared, varint value_length, key suffix, value``; the key is the
previous key's first `shared` bytes plus the suffix. Snappy blocks are decompressed by a small decoder
below (bounded output); block checksums are verified and a mismatch is a finding.
"""

from __future__ import annotations

import struct

from inspector.errors import FormatError, LimitExceededError
from inspector.probe import Probe
from inspector.records import Finding, Region, RegionKind, Severity
from inspector.recordtype import field, record
from loaders._tf_proto import varint

MAGIC = 0xDB4775248B80FB57
MAGIC_BYTES = MAGIC.to_bytes(8, "little")
FOOTER_BYTES = 48
TRAILER_BYTES = 5
NO_COMPRESSION, SNAPPY = 0, 1
MAX_BLOCK_BYTES = 256 << 20  # one uncompressed block (TensorFlow writes blocks of about 4 KiB)
MAX_BLOCKS = 1_000_000
MAX_ENTRIES = 10_000_000


def _crc_table() -> tuple[int, ...]:
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


CRC32C_TABLE = _crc_table()


def crc32c(data: bytes, crc: int = 0) -> int:
    crc ^= 0xFFFFFFFF
    table = CRC32C_TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """The CRC as LevelDB and TensorFlow store it: rotated right by 15 bits plus a constant."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def snappy_decompress(data: bytes, max_out: int) -> bytes:
    """Raw snappy (no framing): varint length, then literals and back-references. Bounded by `max_out`."""
    n, pos = varint(data, 0)
    if n > max_out:
        raise ValueError(f"snappy block claims {n:,} bytes (cap {max_out:,})")
    out = bytearray()
    while pos < len(data):
        tag = data[pos]
        pos += 1
        kind = tag & 3
        if kind == 0:  # literal; lengths above 60 follow in 1-4 bytes
            length = tag >> 2
            if length >= 60:
                extra = length - 59
                length = int.from_bytes(data[pos : pos + extra], "little")
                pos += extra
            length += 1
            if pos + length > len(data):
                raise ValueError("snappy literal runs past the end of the block")
            out += data[pos : pos + length]
            pos += length
        else:
            if kind == 1:
                length, offset = 4 + ((tag >> 2) & 7), ((tag >> 5) << 8) | data[pos]
                pos += 1
            else:
                width = 2 if kind == 2 else 4
                length, offset = (tag >> 2) + 1, int.from_bytes(data[pos : pos + width], "little")
                pos += width
            if offset == 0 or offset > len(out):
                raise ValueError(f"snappy copy offset {offset} outside the {len(out):,} bytes decoded so far")
            chunk = out[len(out) - offset : len(out) - offset + length]
            out += (chunk * (length // offset + 1))[:length]  # a copy longer than its offset repeats its own output
        if len(out) > n:
            raise ValueError("snappy block decodes to more than its stated length")
    if len(out) != n:
        raise ValueError(f"snappy block decodes to {len(out):,} bytes, its header says {n:,}")
    return bytes(out)


@record(slots=True)
class Table:
    entries: list[tuple[bytes, bytes]] = field(default_factory=list)
    regions: list[Region] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    n_blocks: int = 0
    compressed_blocks: int = 0
    block_bytes: int = 0  # blocks read so far, with trailers: never more than the file


def _handle(data: bytes, pos: int = 0) -> tuple[int, int, int]:
    offset, pos = varint(data, pos)
    size, pos = varint(data, pos)
    return offset, size, pos


def _block(probe: Probe, fmt: str, table: Table, offset: int, size: int, what: str, data_kind: RegionKind) -> bytes:
    """The contents of one block (decompressed); its regions and checksum finding go into `table`."""
    if size > MAX_BLOCK_BYTES:
        raise LimitExceededError(probe.path, fmt, f"{what} of {size:,} bytes (cap {MAX_BLOCK_BYTES:,})", offset)
    if offset + size + TRAILER_BYTES > probe.size - FOOTER_BYTES:
        raise FormatError(probe.path, fmt, f"{what} at {offset:,}+{size:,} runs into the footer or past the file")
    raw = probe.read_at(offset, size + TRAILER_BYTES, fmt=fmt, what=what)
    body, kind = raw[:size], raw[size]
    (stored_crc,) = struct.unpack_from("<I", raw, size + 1)
    if masked_crc32c(raw[: size + 1]) != stored_crc:
        table.findings.append(
            Finding(
                "CHECKSUM_MISMATCH",
                Severity.ERROR,
                f"{what} at byte {offset:,}: CRC32C does not match (TensorFlow refuses this file)",
            )
        )
    table.n_blocks += 1
    table.block_bytes += size + TRAILER_BYTES
    if table.n_blocks > MAX_BLOCKS:
        raise LimitExceededError(probe.path, fmt, f"more than {MAX_BLOCKS:,} blocks")
    if table.block_bytes > probe.size:
        raise FormatError(probe.path, fmt, f"{what} at {offset:,} overlaps another block (handles repeat)")
    table.regions.append(Region(RegionKind.HEADER, offset + size, TRAILER_BYTES, f"{what} trailer (type, CRC32C)"))
    if kind == SNAPPY:
        table.compressed_blocks += 1
        contents = snappy_decompress(body, MAX_BLOCK_BYTES)
        table.regions.append(Region(RegionKind.COMPRESSED, offset, size, f"{what} (snappy)", logical=len(contents)))
        return contents
    if kind != NO_COMPRESSION:
        raise FormatError(probe.path, fmt, f"{what} uses unknown compression type {kind}", offset + size)
    if len(body) < 4:
        raise FormatError(probe.path, fmt, f"{what} of {size} bytes has no restart count", offset)
    (n_restarts,) = struct.unpack_from("<I", body, len(body) - 4)
    entries_end = len(body) - 4 - 4 * n_restarts
    if entries_end < 0:
        raise FormatError(probe.path, fmt, f"{what}: {n_restarts:,} restart points do not fit in {size:,} bytes")
    table.regions.append(Region(data_kind, offset, entries_end, f"{what} entries"))
    table.regions.append(Region(RegionKind.HEADER, offset + entries_end, size - entries_end, f"{what} restart points"))
    return body


def _entries(contents: bytes) -> list[tuple[bytes, bytes]]:
    (n_restarts,) = struct.unpack_from("<I", contents, len(contents) - 4)
    end = len(contents) - 4 - 4 * n_restarts
    if end < 0:
        raise ValueError(f"{n_restarts:,} restart points do not fit in a block of {len(contents):,} bytes")
    out: list[tuple[bytes, bytes]] = []
    key = b""
    pos = 0
    while pos < end:
        shared, pos = varint(contents, pos)
        non_shared, pos = varint(contents, pos)
        value_len, pos = varint(contents, pos)
        if shared > len(key) or pos + non_shared + value_len > end:
            raise ValueError(f"block entry at byte {pos:,} runs past its block")
        key = key[:shared] + contents[pos : pos + non_shared]
        pos += non_shared
        out.append((key, contents[pos : pos + value_len]))
        pos += value_len
    return out


def read_table(probe: Probe, fmt: str) -> Table:
    """Every key and value of the table, and regions tiling the file (before gap filling)."""
    if probe.size < FOOTER_BYTES:
        raise FormatError(probe.path, fmt, f"file has {probe.size} bytes, the SSTable footer needs {FOOTER_BYTES}")
    footer_at = probe.size - FOOTER_BYTES
    footer = probe.read_at(footer_at, FOOTER_BYTES, fmt=fmt, what="footer")
    if footer[-8:] != MAGIC_BYTES:
        raise FormatError(probe.path, fmt, "no SSTable magic in the last 8 bytes", probe.size - 8)
    meta_offset, meta_size, pos = _handle(footer)
    index_offset, index_size, pos = _handle(footer, pos)
    table = Table()
    table.regions.append(Region(RegionKind.HEADER, footer_at, FOOTER_BYTES, "SSTable footer (block handles, magic)"))
    _block(probe, fmt, table, meta_offset, meta_size, "metaindex block", RegionKind.HEADER)
    index = _block(probe, fmt, table, index_offset, index_size, "index block", RegionKind.HEADER)
    for _, value in _entries(index):
        offset, size, _ = _handle(value)
        contents = _block(probe, fmt, table, offset, size, f"data block {table.n_blocks - 2}", RegionKind.METADATA)
        table.entries += _entries(contents)
        if len(table.entries) > MAX_ENTRIES:
            raise LimitExceededError(probe.path, fmt, f"more than {MAX_ENTRIES:,} entries")
    return table
