"""Protocol-buffer wire format, just enough for TensorFlow's checkpoint protos (decoded by field number).

A message is a run of fields ``varint key`` (``field_number << 3 | wire_type``) then a payload: varint (0),
fixed64 (1), length-delimited (2) or fixed32 (5). Groups (3, 4) are refused. Every length is checked against
the bytes left, and a varint is at most 10 bytes, so a hostile message can only make us read its own bytes.
The messages decoded on top of this (TensorFlow's field numbers, FORMATS.md section 9)::

    BundleHeaderProto   num_shards = 1, endianness = 2 (0 little, 1 big), version = 3 (VersionDef: producer = 1)
    BundleEntryProto    dtype = 1, shape = 2 (TensorShapeProto: dim = 2 {size = 1}, unknown_rank = 3),
                        shard_id = 3, offset = 4, size = 5, crc32c = 6 (fixed32), slices = 7
                        (TensorSliceProto: extent = 1 {start = 1, length = 2})
    TrackableObjectGraph  nodes = 1 (TrackableObject: children = 1 {node_id = 1, local_name = 2},
                        attributes = 2 {name = 1, full_name = 2, checkpoint_key = 3},
                        slot_variables = 3 {original_variable_node_id = 1, slot_name = 2, slot_variable_node_id = 3})
"""

from __future__ import annotations

from collections.abc import Iterator

from inspector.recordtype import record

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5
MAX_VARINT_BYTES = 10


class ProtoError(ValueError):
    """Malformed wire-format bytes (a ValueError, so `loaders.base.parsing` reports it as a FormatError)."""


def varint(data: bytes, pos: int) -> tuple[int, int]:
    """The unsigned varint at `pos` and the position after it."""
    if pos < len(data) and data[pos] < 0x80:  # one byte: most keys, lengths and small numbers
        return data[pos], pos + 1
    value = 0
    for i in range(MAX_VARINT_BYTES):
        if pos + i >= len(data):
            raise ProtoError(f"varint runs past the end of its {len(data):,}-byte buffer")
        byte = data[pos + i]
        value |= (byte & 0x7F) << (7 * i)
        if byte < 0x80:
            return value, pos + i + 1
    raise ProtoError(f"varint longer than {MAX_VARINT_BYTES} bytes at byte {pos:,}")


def fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) of every field of one message; LENGTH values are bytes."""
    pos = 0
    while pos < len(data):
        key, pos = varint(data, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ProtoError("field number 0")
        value: int | bytes
        if wire == VARINT:
            value, pos = varint(data, pos)
        elif wire == LENGTH:
            n, pos = varint(data, pos)
            if pos + n > len(data):
                raise ProtoError(f"field {number} of {n:,} bytes runs past the end of its message")
            value, pos = data[pos : pos + n], pos + n
        elif wire in (FIXED64, FIXED32):
            width = 8 if wire == FIXED64 else 4
            if pos + width > len(data):
                raise ProtoError(f"fixed field {number} runs past the end of its message")
            value, pos = int.from_bytes(data[pos : pos + width], "little"), pos + width
        else:
            raise ProtoError(f"unsupported wire type {wire} (field {number})")
        yield number, wire, value


def _int(value: int | bytes) -> int:
    if isinstance(value, bytes):
        raise ProtoError("a length-delimited field where a number belongs")
    return value


def _bytes(value: int | bytes) -> bytes:
    if not isinstance(value, bytes):
        raise ProtoError("a number where a length-delimited field belongs")
    return value


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


@record(frozen=True, slots=True)
class BundleHeader:
    num_shards: int = 0
    endianness: int = 0  # 0 little, 1 big
    producer: int = 0


@record(frozen=True, slots=True)
class BundleEntry:
    dtype: int = 0
    shape: tuple[int, ...] = ()
    unknown_rank: bool = False
    shard_id: int = 0
    offset: int = 0
    size: int = 0
    crc32c: int | None = None
    slices: tuple[tuple[tuple[int, int | None], ...], ...] = ()  # per slice, per dim: (start, length or None = all)


def bundle_header(data: bytes) -> BundleHeader:
    values: dict[int, int] = {}
    producer = 0
    for number, _, value in fields(data):
        if number == 3:
            for n, _, v in fields(_bytes(value)):
                if n == 1:
                    producer = _int(v)
        elif number in (1, 2):
            values[number] = _int(value)
    return BundleHeader(values.get(1, 0), values.get(2, 0), producer)


def tensor_shape(data: bytes) -> tuple[tuple[int, ...], bool]:
    """(dims, unknown_rank) of a TensorShapeProto; a dimension of -1 (unknown) is kept as -1."""
    dims: list[int] = []
    unknown = False
    for number, _, value in fields(data):
        if number == 2:
            size = 0
            for n, _, v in fields(_bytes(value)):
                if n == 1:
                    size = _signed(_int(v))
            dims.append(size)
        elif number == 3:
            unknown = bool(_int(value))
    return tuple(dims), unknown


def tensor_slice(data: bytes) -> tuple[tuple[int, int | None], ...]:
    """TensorSliceProto: extent = 1 {start = 1, length = 2 (absent: the whole dimension)}."""
    extents = []
    for number, _, value in fields(data):
        if number == 1:
            start, length = 0, None
            for n, _, v in fields(_bytes(value)):
                if n == 1:
                    start = _signed(_int(v))
                elif n == 2:
                    length = _signed(_int(v))
            extents.append((start, length))
    return tuple(extents)


def bundle_entry(data: bytes) -> BundleEntry:
    values: dict[int, int] = {}
    shape: tuple[int, ...] = ()
    unknown = False
    crc: int | None = None
    slices = []
    for number, _, value in fields(data):
        if number == 2:
            shape, unknown = tensor_shape(_bytes(value))
        elif number == 6:
            crc = _int(value)
        elif number == 7:
            slices.append(tensor_slice(_bytes(value)))
        elif number in (1, 3, 4, 5):
            values[number] = _int(value)
    return BundleEntry(
        values.get(1, 0), shape, unknown, values.get(3, 0), values.get(4, 0), values.get(5, 0), crc, tuple(slices)
    )


@record(frozen=True, slots=True)
class GraphNode:
    children: tuple[tuple[int, str], ...]  # (node id, local name)
    attributes: tuple[tuple[str, str, str], ...]  # (name, full_name, checkpoint_key)
    slots: tuple[tuple[int, str, int], ...]  # (original variable node, slot name, slot variable node)


def _children(data: bytes) -> tuple[int, str]:
    node, name = 0, ""
    for n, _, v in fields(data):
        if n == 1:
            node = _int(v)
        elif n == 2:
            name = _bytes(v).decode("utf-8", "replace")
    return node, name


def _attribute(data: bytes) -> tuple[str, str, str]:
    texts = {1: "", 2: "", 3: ""}
    for n, _, v in fields(data):
        if n in texts:
            texts[n] = _bytes(v).decode("utf-8", "replace")
    return texts[1], texts[2], texts[3]


def _slot(data: bytes) -> tuple[int, str, int]:
    original, name, slot = 0, "", 0
    for n, _, v in fields(data):
        if n == 1:
            original = _int(v)
        elif n == 2:
            name = _bytes(v).decode("utf-8", "replace")
        elif n == 3:
            slot = _int(v)
    return original, name, slot


def object_graph(data: bytes, max_nodes: int) -> tuple[GraphNode, ...]:
    """The nodes of a serialized TrackableObjectGraph (node 0 is the root)."""
    nodes: list[GraphNode] = []
    for number, _, value in fields(data):
        if number != 1:
            continue
        if len(nodes) >= max_nodes:
            raise ProtoError(f"object graph has more than {max_nodes:,} nodes")
        children, attributes, slots = [], [], []
        for n, _, v in fields(_bytes(value)):
            if n == 1:
                children.append(_children(_bytes(v)))
            elif n == 2:
                attributes.append(_attribute(_bytes(v)))
            elif n == 3:
                slots.append(_slot(_bytes(v)))
        nodes.append(GraphNode(tuple(children), tuple(attributes), tuple(slots)))
    return tuple(nodes)
