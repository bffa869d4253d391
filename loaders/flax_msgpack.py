"""Flax / JAX msgpack checkpoints (`flax.serialization.to_bytes`, `msgpack_serialize`), read without flax or msgpack.

Layout (flax 0.12 `flax/serialization.py`; the transformers 4.x Flax models' `flax_model.msgpack`)::

    one msgpack value, a map: the state dict of a pytree (dicts as maps with str keys; lists, tuples and named
    tuples, optax's states among them, as maps keyed '0', '1'... or by field; Python scalars as themselves)
    ndarray leaf     ext type 1, its payload the msgpack array [shape (array of ints), dtype name (str, numpy's
                     `dtype.name`: 'float32', 'bfloat16'...), data (bin: the C-order bytes)]
    numpy scalar     ext type 3, the same payload of shape []
    complex scalar   ext type 2, payload [real, imag]: a Python complex, no array
    chunked array    an array over 2**30 bytes: a map {'__msgpack_chunked_array__': True, 'shape': {'0': d0...},
                     'chunks': {'0': ext 1 of a flat 1-d piece, ...}} (`_chunk_array_leaves_in_place`)

Each array's shape and dtype are read and its data's offset and length recorded; the data is never read. Verified:
every length against the file (`loaders._msgpack`), depth and counts against caps, an array's payload is exactly its
header and its data, the data's length is shape x itemsize, a chunked array's pieces add up to its shape, and the map
ends the file (trailing bytes: a finding; flax's `msgpack_restore` refuses them).

Kinds come from the file's collections: a variables dict or a TrainState (a top-level `params` key) has its
`params` (parameters), `batch_stats` (running statistics: buffers), `opt_state` (optax's state: optimizer), and
anything else (`step`, `cache`...: other state); a tree without `params` (transformers' `save_pretrained`, a bare
params tree) is all parameters, as `jax.tree_util` counts it. A tensor's layer is its path less the collection and
the leaf, its param the leaf's name (`kernel`, `bias`, `embedding`, `scale`, `mean`, `var`): Flax's Dense kernel is
(in, out) and its Conv kernel (kh, kw, in, out), the layouts Keras uses. Bytes: the tree's maps, keys and scalars
are metadata, each array's ext and msgpack headers a header region, its data tensor data.
"""

from __future__ import annotations

from math import prod

from inspector import dtypes
from inspector.errors import FormatError, InspectorError, LimitExceededError
from inspector.probe import Probe
from inspector.records import Checkpoint, Finding, Region, RegionKind, Severity, TensorInfo, TensorKind
from inspector.recordtype import record
from loaders import FLAX_MAPS
from loaders import _msgpack as mp
from loaders.base import MAX_DIMS, MAX_TENSORS, Claim, check_shape, single_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import ClassVar

FORMAT = "flax-msgpack"
NDARRAY, COMPLEX, NPSCALAR = 1, 2, 3  # flax's `_MsgpackExtType`
ARRAY_EXTS = (NDARRAY, NPSCALAR)
CHUNKED = "__msgpack_chunked_array__"
MAX_DEPTH = 64  # maps within maps (transformers' deepest trees are about 10; a chunked array adds 2)
MAX_NODES = 4_000_000  # keys and values walked
MAX_KEY_BYTES = 1 << 16
MAX_DTYPE_BYTES = 64
# the top-level collections of a variables dict or TrainState (flax.linen, flax.training.train_state) -> kind
COLLECTIONS = {"params": TensorKind.PARAMETER, "batch_stats": TensorKind.BUFFER, "opt_state": TensorKind.OPTIMIZER}
TREE = "msgpack tree (maps, keys, scalars)"
SEP = "/"  # path separator of names (flax.traverse_util.flatten_dict(sep='/'), as Flax's own checkpoints show paths)


@record(slots=True)
class _Array:
    """An array leaf as found: its name (a chunk's with its elements), path, shape, dtype, data bytes and offset."""

    name: str
    path: tuple[str, ...]
    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    offset: int
    notes: tuple[str, ...]


class _Walk:
    """The tree walked once: arrays found, regions laid, scalars counted."""

    def __init__(self, probe: Probe, window_end: int | None = None) -> None:
        self.probe = probe
        self.cur = mp.Cursor(probe, FORMAT, 0, window_end)
        self.arrays: list[_Array] = []
        self.regions: list[Region] = []
        self.laid = 0  # where the regions so far end
        self.nodes = 0
        self.scalars: list[str] = []
        self.chunked = 0

    def error(self, reason: str, at: int | None = None) -> FormatError:
        return FormatError(self.probe.path, FORMAT, reason, self.cur.pos if at is None else at)

    def value(self, path: tuple[str, ...], depth: int) -> None:
        """Walk one value at the cursor (its head not yet read)."""
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise LimitExceededError(self.probe.path, FORMAT, f"more than {MAX_NODES:,} values in the tree")
        start = self.cur.pos
        self.cur.context = path
        kind = self.cur.next("value")
        if kind == mp.MAP or kind == mp.ARRAY:
            if depth >= MAX_DEPTH:
                raise LimitExceededError(self.probe.path, FORMAT, f"maps nested deeper than {MAX_DEPTH}", start)
            self.container(path, kind, depth)
        elif kind == mp.EXT and self.cur.code in ARRAY_EXTS:
            self.array(path, start)
        else:  # a Python scalar (int, float, bool, None, str, bytes, complex) or an ext flax does not write
            if kind in (mp.STR, mp.BIN, mp.EXT):
                self.cur.skip()
            self.scalars.append(_name(path))

    def container(self, path: tuple[str, ...], kind: str, depth: int) -> None:
        n = self.cur.value
        per_item = 2 if kind == mp.MAP else 1  # (each key and value at least a byte)
        if n * per_item > self.cur.end - self.cur.pos:
            raise self.error(f"{_name(path) or 'the tree'}: {n:,} entries declared in the bytes left")
        for i in range(n):
            key = self.key(path) if kind == mp.MAP else str(i)
            if key == CHUNKED and i == 0:
                self.chunks(path, n)
                return
            self.value((*path, key), depth + 1)

    def key(self, path: tuple[str, ...]) -> str:
        """A map key: flax writes str keys (msgpack_restore takes ints and others as they are: named by their value)."""
        self.nodes += 1
        kind = self.cur.next("key")
        if kind == mp.STR:
            if self.cur.value > MAX_KEY_BYTES:
                raise LimitExceededError(self.probe.path, FORMAT, f"a key of {self.cur.value:,} bytes", self.cur.pos)
            return self.cur.text("key")
        if kind in (mp.INT, mp.BOOL, mp.NIL, mp.FLOAT):
            return str(self.cur.value) if kind != mp.NIL else "None"
        raise self.error(f"a {kind} as a key in {_name(path) or 'the tree'}")

    def array(self, path: tuple[str, ...], start: int) -> None:
        """An ndarray or numpy-scalar ext at `start`, its head read: its header and data recorded, the data skipped."""
        cur, name = self.cur, _name(path)
        end = cur.pos + cur.value
        header = _header(cur.peek(HEADER_PEEK))
        if header is not None:  # (the layout flax writes, read in one pass: 100,000 arrays cost no call per field)
            dims, numpy_name, nbytes, length = header
            cur.pos += length
        else:
            dims, numpy_name, nbytes = self.fields(name, start)
        shape = check_shape(self.probe, FORMAT, name, dims)
        offset = cur.pos
        if offset + nbytes != end:
            raise self.error(f"array {name!r}: {end - offset - nbytes:,} bytes of its ext left unread", start)
        dtype, notes = _dtype(numpy_name)
        itemsize = dtypes.FLAX_DTYPES.get(numpy_name, ("", 0))[1]
        if itemsize and nbytes != prod(shape) * itemsize:
            raise self.error(
                f"array {name!r}: {nbytes:,} bytes of data for shape {shape} of {numpy_name} ({itemsize} bytes each)",
                start,
            )
        cur.pos = end  # (past the data, never read)
        if start > self.laid:
            self.regions.append(Region(RegionKind.METADATA, self.laid, start - self.laid, TREE))
        self.regions.append(Region(RegionKind.HEADER, start, offset - start, "array header %r", subject=name))
        if nbytes:
            self.regions.append(Region(RegionKind.TENSOR_DATA, offset, nbytes, name))
        self.laid = end
        if len(self.arrays) >= MAX_TENSORS:
            raise LimitExceededError(self.probe.path, FORMAT, f"more than {MAX_TENSORS:,} arrays")
        self.arrays.append(_Array(name, path, shape, dtype, nbytes, offset, notes))

    def fields(self, name: str, start: int) -> tuple[list[int], str, int]:
        """An array's [shape, dtype, data] read value by value (any msgpack encoding of them): its dimensions, dtype
        name and data length, the cursor left at its data."""
        cur, what = self.cur, "array header"
        if cur.next(what) != mp.ARRAY or cur.value != 3 or cur.next(what) != mp.ARRAY:
            raise self.error(f"array {name!r}: its payload is no [shape, dtype, data]", start)
        rank = cur.value
        if rank > MAX_DIMS:
            check_shape(self.probe, FORMAT, name, range(rank))
        dims = []
        for _ in range(rank):
            if cur.next(what) != mp.INT:
                raise self.error(f"array {name!r}: a dimension is no integer", start)
            dims.append(cur.value)
        if cur.next(what) != mp.STR or cur.value > MAX_DTYPE_BYTES:
            raise self.error(f"array {name!r}: its dtype is no name", start)
        numpy_name = cur.text("dtype")
        if cur.next(what) != mp.BIN:
            raise self.error(f"array {name!r}: its data is no bin", start)
        return dims, numpy_name, cur.value

    def chunks(self, path: tuple[str, ...], n: int) -> None:
        """The rest of a chunked array's map (its marker key read): its shape, then its pieces, each a tensor named by
        the flat elements it holds (`name[0:268435456]`), as a partitioned variable's slices are."""
        name = _name(path)
        if n != 3 or self.cur.next(name) != mp.BOOL or not self.cur.value:
            raise self.error(f"chunked array {name!r}: not the map flax writes")
        shape: tuple[int, ...] = ()
        first = len(self.arrays)
        for key in ("shape", "chunks"):
            if self.key(path) != key or self.cur.next(name) != mp.MAP:
                raise self.error(f"chunked array {name!r}: not the map flax writes")
            count = self.cur.value
            if count * 2 > self.cur.end - self.cur.pos:
                raise self.error(f"chunked array {name!r}: {count:,} entries declared in the bytes left")
            dims = []
            for i in range(count):
                if self.key(path) != str(i):
                    raise self.error(f"chunked array {name!r}: its {key} are not numbered in order")
                start = self.cur.pos
                kind = self.cur.next(name)
                if key == "shape" and kind == mp.INT:
                    dims.append(self.cur.value)
                elif key == "chunks" and kind == mp.EXT and self.cur.code == NDARRAY:
                    self.nodes += 1
                    self.array(path, start)
                else:
                    raise self.error(f"chunked array {name!r}: a {kind} among its {key}")
            if key == "shape":
                shape = check_shape(self.probe, FORMAT, name, dims)
        pieces = self.arrays[first:]
        if not pieces or len({p.dtype for p in pieces}) != 1 or sum(prod(p.shape) for p in pieces) != prod(shape):
            raise self.error(f"chunked array {name!r}: its pieces do not make its shape {shape}")
        at, whole = 0, "x".join(map(str, shape))
        for i, piece in enumerate(pieces):
            size = prod(piece.shape)
            piece.name = f"{name}[{at}:{at + size}]"
            piece.notes = (f"chunk {i + 1} of {len(pieces)} of a {whole} array (flax's {CHUNKED}): its flat elements",)
            at += size
        self.chunked += 1


HEADER_PEEK = 96  # bytes read at an array's payload: its header in the layout flax writes, up to 7 dimensions
_UINTS = {0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8}  # msgpack uint 8..64: bytes of the value after the type byte
_BINS = {0xC4: 1, 0xC5: 2, 0xC6: 4}  # bin 8/16/32: bytes of the length


def _header(buf: bytes) -> tuple[list[int], str, int, int] | None:
    """The header flax writes at an array's payload (a fixarray of 3: a fixarray of non-negative ints, a fixstr, a
    bin head), parsed from `buf`: (dimensions, dtype name, data length, header length), or None when the bytes hold
    another encoding or end first (`_Walk.fields` reads those)."""
    size = len(buf)
    if size < 2 or buf[0] != 0x93 or buf[1] & 0xF0 != 0x90:
        return None
    at, dims = 2, []
    for _ in range(buf[1] & 0x0F):
        if at >= size:
            return None
        b = buf[at]
        if b < 0x80:
            dims.append(b)
            at += 1
        elif b in _UINTS and at + 1 + _UINTS[b] <= size:
            dims.append(int.from_bytes(buf[at + 1 : at + 1 + _UINTS[b]], "big"))
            at += 1 + _UINTS[b]
        else:
            return None
    if at >= size or buf[at] & 0xE0 != 0xA0:
        return None
    name_end = at + 1 + (buf[at] & 0x1F)
    if name_end >= size or buf[name_end] not in _BINS:
        return None
    width = _BINS[buf[name_end]]
    if name_end + 1 + width > size:
        return None
    length = int.from_bytes(buf[name_end + 1 : name_end + 1 + width], "big")
    return dims, buf[at + 1 : name_end].decode("utf-8", "replace"), length, name_end + 1 + width


def _name(path: tuple[str, ...]) -> str:
    return SEP.join(path)


def _dtype(numpy_name: str) -> tuple[str, tuple[str, ...]]:
    """The canonical dtype of a numpy dtype name, and notes (a sub-byte type numpy stores a byte an element; a type no
    table knows, kept by its numpy name)."""
    known = dtypes.FLAX_DTYPES.get(numpy_name)
    if known is None:
        return f"NUMPY[{numpy_name}]", (f"numpy dtype {numpy_name!r}",)
    name, itemsize = known
    if dtypes.DTYPES[name].bits < itemsize * 8:
        return name, (f"{numpy_name}: one element a byte, as numpy holds it",)
    return name, ()


def _kind(path: tuple[str, ...], collections: bool) -> tuple[TensorKind, str, str | None]:
    """A tensor's kind, section and layer from its path (`collections`: the tree's top level names flax collections)."""
    if not collections:
        return TensorKind.PARAMETER, "", _name(path[:-1]) or None
    kind = COLLECTIONS.get(path[0], TensorKind.OTHER)
    section = "" if kind is TensorKind.PARAMETER else path[0]
    return kind, section, _name(path[1:-1]) or None


class _Ended(Exception):
    """The claim's walk is over: it reached a flax array (`found`), or the end of the head."""

    def __init__(self, found: bool) -> None:
        self.found = found


class _Sniff(_Walk):
    """The claim's walk: it ends at the first array, or at the end of the head."""

    def value(self, path: tuple[str, ...], depth: int) -> None:
        if self.cur.pos >= len(self.probe.head):
            raise _Ended(False)
        super().value(path, depth)

    def array(self, path: tuple[str, ...], start: int) -> None:
        super().array(path, start)
        raise _Ended(True)


def _sniff(probe: Probe) -> bool:
    """A map at byte 0 whose walk within the head reaches a flax array, its header whole, before anything that is not
    flax's (the tree's keys before it: a few hundred bytes in the files transformers and flax write)."""
    if not probe.head.startswith(FLAX_MAPS):
        return False
    try:
        _Sniff(probe, len(probe.head)).value((), 0)
    except _Ended as ended:
        return ended.found
    except InspectorError:  # (the bytes are no flax tree)
        return False
    return False


class FlaxMsgpackLoader:
    """Flax / JAX msgpack state dicts (`flax.serialization.to_bytes`, transformers' `flax_model.msgpack`)."""

    name: ClassVar[str] = FORMAT
    extensions: ClassVar[tuple[str, ...]] = (".msgpack",)

    def claim(self, probe: Probe) -> Claim | None:
        return Claim.EXACT if _sniff(probe) else None

    def load(self, probe: Probe) -> Checkpoint:
        if not probe.head.startswith(FLAX_MAPS):
            raise FormatError(probe.path, FORMAT, "the file does not open with a msgpack map and a str key")
        walk = _Walk(probe)
        walk.value((), 0)
        end = walk.cur.pos
        if end > walk.laid:
            walk.regions.append(Region(RegionKind.METADATA, walk.laid, end - walk.laid, TREE))
        findings = []
        if end < probe.size:
            findings.append(
                Finding(
                    "TRAILING_BYTES",
                    Severity.WARNING,
                    f"{probe.size - end:,} bytes after the msgpack map (flax's msgpack_restore refuses them)",
                )
            )
        tops = {a.path[0] for a in walk.arrays if a.path}
        collections = "params" in tops
        tensors = []
        for a in walk.arrays:
            kind, section, layer = _kind(a.path, collections)
            tensors.append(
                TensorInfo(
                    a.name,
                    a.shape,
                    a.dtype,
                    a.nbytes,
                    a.offset,
                    kind=kind,
                    trainable=kind is TensorKind.PARAMETER,
                    section=section,
                    layer=layer,
                    param=a.path[-1] if a.path else None,
                    notes=a.notes,
                )
            )
        attributes = {"flax.collections": ", ".join(sorted(tops & COLLECTIONS.keys() if collections else ())) or "-"}
        if walk.scalars:
            shown = ", ".join(walk.scalars[:8]) + (", ..." if len(walk.scalars) > 8 else "")
            attributes["flax.scalars"] = f"{len(walk.scalars):,} ({shown})"
        if walk.chunked:
            attributes["flax.chunked_arrays"] = f"{walk.chunked:,}"
        return single_file(probe, FORMAT, "flax", tensors, walk.regions, attributes, findings)
