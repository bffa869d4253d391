"""Mutations of real files for the hostile-input tests and the fuzzing script."""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import FIXTURES, SAMPLES

# Every real checkpoint we have, by folder; new samples are picked up automatically.
FIXTURE_DIRS = ("safetensors", "numpy", "torch", "keras", "mxnet", "hdf5", "gguf", "onnx")
SAMPLE_SUFFIXES = (".safetensors", ".npz", ".npy", ".pt", ".pth", ".bin", ".h5", ".keras", ".params", ".json")
SAMPLE_SUFFIXES += (".gguf", ".onnx", ".tflite", ".msgpack")
MAX_SEED_BYTES = 256 * 1024


def seed_files() -> list[Path]:
    """Real files (at most 256 KB each) to mutate."""
    found: list[Path] = []
    for folder in FIXTURE_DIRS:
        base = FIXTURES / folder
        if base.is_dir():
            found += sorted(p for p in base.rglob("*") if p.is_file())
    if SAMPLES.is_dir():
        found += sorted(p for p in SAMPLES.rglob("*") if p.is_file() and p.suffix in SAMPLE_SUFFIXES)
    return [p for p in found if os.path.getsize(p) <= MAX_SEED_BYTES]


def truncate(data: bytes, at: int) -> bytes:
    return data[: at % (len(data) + 1)]


def flip(data: bytes, positions: list[int], values: list[int]) -> bytes:
    out = bytearray(data)
    for pos, value in zip(positions, values, strict=False):
        if out:
            out[pos % len(out)] = value
    return bytes(out)


# -- hand-made FlatBuffers (TF Lite models) -------------------------------------------------------------------------


class Table:
    """A FlatBuffer table to lay out: slot -> a scalar (struct code, value) or an object (Table, Vector, Blob, At)."""

    def __init__(self, **fields: object) -> None:
        self.fields = fields


class Vector:
    """A vector of scalars (struct code `fmt`), of tables, or a string (`fmt` "s")."""

    def __init__(self, fmt: str, items: object) -> None:
        self.fmt, self.items = fmt, items


class Blob:
    """Raw bytes laid out as they are (once, however many fields point into them)."""

    def __init__(self, data: bytes) -> None:
        self.data = data


class At:
    """A position inside a blob: what an offset field points to."""

    def __init__(self, blob: Blob, offset: int) -> None:
        self.blob, self.offset = blob, offset


# TF Lite schema slots of the fields the hand-made models use (loaders/_tflite_schema.py)
SLOTS = {
    "model": ["version", "operator_codes", "subgraphs", "description", "buffers", "metadata_buffer", "metadata",
              "signature_defs", "external_buffer_groups", "external_buffers"],
    "code": ["deprecated_builtin_code", "custom_code", "version", "builtin_code"],
    "subgraph": ["tensors", "inputs", "outputs", "operators", "name"],
    "tensor": ["shape", "type", "buffer", "name", "quantization", "is_variable", "sparsity", "shape_signature",
               "has_rank", "variant_tensors", "external_buffer"],
    "operator": ["opcode_index", "inputs", "outputs"],
    "buffer": ["data", "offset", "size"],
    "group": ["name"],
    "external": ["id", "group", "offset", "length", "packing"],
}  # fmt: skip


def flatbuffer(root: Table, kinds: dict[int, str], identifier: bytes = b"TFL3") -> bytes:
    """Lay `root` out front to back, every offset pointing forward as FlatBuffers require: objects in the order they
    are first referred to (a table's vtable, then the table), blobs last. `kinds` names each table's schema (by
    `id`) for `SLOTS`."""
    import struct

    buf = bytearray(8)
    placed: dict[int, int] = {}
    pending: list[tuple[int, object]] = []  # (offset field's position, the object it points to), laid out in order
    blobs: list[tuple[int, At]] = []

    def align(n: int) -> None:
        buf.extend(b"\0" * (-len(buf) % n))

    def refer(at: int, obj: object) -> None:
        (blobs if isinstance(obj, (Blob, At)) else pending).append((at, obj))  # type: ignore[arg-type]

    def place(obj: object) -> int:
        if id(obj) in placed:
            return placed[id(obj)]
        align(4)
        pos = placed[id(obj)] = len(buf)
        if isinstance(obj, Blob):
            buf.extend(obj.data)
        elif isinstance(obj, Vector):
            vector(obj)
        else:
            pos = placed[id(obj)] = table(obj)  # type: ignore[arg-type]
        return pos

    def vector(v: Vector) -> None:
        if v.fmt == "s":
            data = str(v.items).encode()
            buf.extend(struct.pack("<I", len(data)) + data + b"\0")
            return
        items = list(v.items)  # type: ignore[call-overload]
        if v.fmt == "t":
            pos = len(buf)
            buf.extend(struct.pack("<I", len(items)) + b"\0" * 4 * len(items))
            for i, item in enumerate(items):
                refer(pos + 4 + 4 * i, item)
            return
        buf.extend(struct.pack(f"<I{len(items)}{v.fmt}", len(items), *items))

    def table(t: Table) -> int:
        names = SLOTS[kinds[id(t)]]
        slots = [names.index(k) for k in t.fields]
        layout, inline = {}, 4
        for key, value in t.fields.items():
            width = struct.calcsize(value[0]) if isinstance(value, tuple) else 4
            inline += -inline % width
            layout[key], inline = inline, inline + width
        count = max(slots) + 1 if slots else 0
        entries = [0] * count
        for key, slot in zip(t.fields, slots, strict=True):
            entries[slot] = layout[key]
        vtable = len(buf)
        buf.extend(struct.pack(f"<HH{count}H", 4 + 2 * count, inline, *entries))
        align(4)
        pos = len(buf)
        buf.extend(struct.pack("<i", pos - vtable) + b"\0" * (inline - 4))
        for key, value in t.fields.items():
            if isinstance(value, tuple):
                struct.pack_into("<" + value[0], buf, pos + layout[key], value[1])
            else:
                refer(pos + layout[key], value)
        return pos

    struct.pack_into("<I4s", buf, 0, place(root), identifier)
    while pending:
        at, obj = pending.pop(0)
        struct.pack_into("<I", buf, at, place(obj) - at)
    for at, obj in blobs:
        target = place(obj.blob) + obj.offset if isinstance(obj, At) else place(obj)
        struct.pack_into("<I", buf, at, target - at)
    return bytes(buf)


def tflite_model(
    operators: list[Table] | None = None, model_fields: dict[str, object] | None = None, **overrides: Table
) -> tuple[bytes, dict[str, object]]:
    """A tiny valid TF Lite model (one FULLY_CONNECTED: input, a 2x2 float32 weight, output) and its objects by name,
    whose fields a test replaces (`overrides`: object name -> Table; `model_fields`: the model table's, its tables
    named in `kinds` of the result) before laying it out."""
    kinds: dict[int, str] = {}

    def t(kind: str, **fields: object) -> Table:
        made = Table(**fields)
        kinds[id(made)] = kind
        return made

    objects: dict[str, object] = {}
    objects["code"] = t("code", deprecated_builtin_code=("b", 9), version=("i", 1), builtin_code=("i", 9))
    objects["weights"] = t("tensor", shape=Vector("i", [2, 2]), type=("b", 0), buffer=("I", 1), name=Vector("s", "w"))
    objects["input"] = t("tensor", shape=Vector("i", [1, 2]), type=("b", 0), buffer=("I", 0), name=Vector("s", "x"))
    objects["output"] = t("tensor", shape=Vector("i", [1, 2]), type=("b", 0), buffer=("I", 0), name=Vector("s", "y"))
    objects["operator"] = t("operator", opcode_index=("I", 0), inputs=Vector("i", [0, 1, -1]), outputs=Vector("i", [2]))
    for name, table in overrides.items():  # (a table in place of one of the model's, of its kind)
        kinds[id(table)] = kinds[id(objects[name])]
        objects[name] = table
    for table in operators or ():
        kinds[id(table)] = "operator"
    tensors = [objects["input"], objects["weights"], objects["output"]]
    subgraph = t(
        "subgraph",
        tensors=Vector("t", tensors),
        inputs=Vector("i", [0]),
        outputs=Vector("i", [2]),
        operators=Vector("t", operators if operators is not None else [objects["operator"]]),
        name=Vector("s", "main"),
    )
    buffers = [t("buffer"), t("buffer", data=Vector("B", bytes(16)))]
    model = t(
        "model",
        version=("I", 3),
        operator_codes=Vector("t", [objects["code"]]),
        subgraphs=Vector("t", [subgraph]),
        buffers=Vector("t", buffers),
        **(model_fields or {}),
    )
    for table in _tables(model_fields or {}):
        kinds.setdefault(id(table), table.kind)  # type: ignore[attr-defined]
    return flatbuffer(model, kinds), objects


def _tables(fields: dict[str, object]) -> list[Table]:
    """The tables of these fields and of the vectors among them (a test's own, each with its `kind`)."""
    found = []
    for value in fields.values():
        items = value.items if isinstance(value, Vector) and value.fmt == "t" else [value]
        found += [x for x in items if isinstance(x, Table)]  # type: ignore[union-attr]
    return found
