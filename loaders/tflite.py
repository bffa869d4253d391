"""TensorFlow Lite models (`.tflite`): one FlatBuffer of the TF Lite schema, read offset-exactly without tensorflow.

Layout (schema.fbs, file identifier "TFL3"; `loaders._tflite_schema` holds its tables, TF 2.21)::

    u32 root offset, "TFL3", then the objects of one FlatBuffer (`loaders._flatbuffers`)
    Model      version, operator_codes, subgraphs, description, buffers, metadata, signature_defs, external_buffers
    SubGraph   tensors, inputs, outputs, operators, name
    Tensor     shape, type, buffer (an index into Model.buffers; 0 is the empty sentinel), name, quantization
               (scale, zero_point, min, max, quantized_dimension, details), is_variable, sparsity, shape_signature
    Operator   opcode_index, inputs (-1: an optional input left out), outputs, options
    Buffer     data: [ubyte] (16-byte aligned), or offset and size past the flatbuffer (a model over 2 GB)
    Metadata   name, buffer: min_runtime_version, CONVERSION_METADATA... are buffers too, never tensors

Tensors are the constants (a tensor whose buffer holds data) and the variables (`is_variable`: an RNN's state, which
the interpreter allocates when nothing is stored); the values the graph computes (activations) hold no data and are
counted in an attribute. A constant's data is its buffer's data vector: offset and length, never read.

Kinds from the graph, as for ONNX (`loaders._tflite_graph`): a constant an operator reads as a weight
(`WEIGHT_INPUTS`: convolution filters and biases, fully-connected weights and biases, embedding tables, RNN, LSTM and
SVDF weights, PReLU slopes, a float or quantized operand of more than one element of ADD/SUB/MUL/DIV), directly or
through `PASS_THROUGH` operators (DEQUANTIZE of float16 or int8 weights, DENSIFY of sparse ones, RESHAPE,
TRANSPOSE...), is a parameter; an RNN's state is a buffer; any other constant (a shape, axes, paddings, slice bounds,
a scalar) is other state. A resource variable's initial value (the initializer subgraph's ASSIGN_VARIABLE) is the
variable, one tensor each: the model's where an inference signature reads it as a weight (trainable where the
gradient moves it), else optimizer state.
Parameters and other constants together are the constant tensors the TF Lite interpreter lists (`get_tensor_details`).
The converter stores equal constants once: tensors sharing a buffer are aliases of one of them, counted once.

Verified: the identifier; every offset, vtable, table, vector and string against the file; counts against caps;
operator codes, tensor and buffer indices; each constant's data length against its shape and type. Every byte is
attributed: structure, names, quantization parameters, operator options, metadata buffers, each buffer's data (one
no tensor reads: tensor data no listed tensor claims), the alignment padding between them (zero bytes: fewer than
16, or 64 around the data a model over 2 GB appends past its flatbuffer). What makes the count differ from the source
model's (norms folded, biases dropped or folded, equal constants merged) the findings say, from the file's own facts.
"""

from __future__ import annotations

from collections import Counter
from math import prod

from inspector import dtypes
from inspector.errors import FormatError, LimitExceededError
from inspector.probe import Probe
from inspector.records import Checkpoint, Finding, RegionColumns, RegionKind, Severity, TensorInfo, TensorKind
from inspector.recordtype import record
from loaders import _zip
from loaders._flatbuffers import SPAN_BITS, STRUCTURE, FlatBuffer
from loaders._tflite_graph import (
    READ_VARIABLE,
    VARIABLE_INPUTS,
    WEIGHT_INPUTS,
    Graph,
    Use,
    assigned,
    folded_norms,
    graphs,
    input_name,
    kind_of,
    variable_kinds,
)
from loaders._tflite_schema import (
    DESCRIPTION,
    IDENTIFIER,
    NAMES,
    OPTIONS,
    QUANTIZATION,
    SPARSITY,
    Model,
    Subgraph,
    Tensor,
    read_model,
)
from loaders.base import Claim, check_shape, single_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import ClassVar

    from inspector.records import Region

    Archive = tuple[_zip.Members, tuple[Region, ...]]  # an appended zip's members and structure

FORMAT = "tflite"
ALIGNMENT = 16  # Buffer.data's force_align: the widest padding the exporter writes between objects
APPENDED_PADDING = 64  # zeros the exporter writes around the data it appends past the flatbuffer (16 before, 40-48


# after the last, with TF 2.21's `_experimental_use_buffer_offset`)
def _sniff(head: bytes, size: int) -> bool:
    """The identifier at bytes 4..8, and a root offset inside the file."""
    return len(head) >= 12 and head[4:8] == IDENTIFIER and 8 <= int.from_bytes(head[:4], "little") < size


class TfliteLoader:
    """TensorFlow Lite FlatBuffer models."""

    name: ClassVar[str] = FORMAT
    extensions: ClassVar[tuple[str, ...]] = (".tflite", ".lite")

    def claim(self, probe: Probe) -> Claim | None:
        return Claim.EXACT if _sniff(probe.head, probe.size) else None

    def load(self, probe: Probe) -> Checkpoint:
        fb = FlatBuffer(probe, FORMAT)
        model = read_model(fb)
        if not model.subgraphs:
            raise FormatError(probe.path, FORMAT, "the model has no subgraph")
        build = _Build(probe, model)
        for graph in build.graphs:
            build.subgraph(graph)
        build.uninitialized()
        tensors = build.tensors()
        archive = _archive(probe, fb, model)
        regions = _regions(fb, model, build, archive)
        attributes = _attributes(probe, fb, model, build, archive)
        return single_file(probe, FORMAT, FORMAT, tensors, regions, attributes, build.findings())


# -- the tensors ------------------------------------------------------------------------------------------------------

# which tensor of a buffer owns it (after a resource variable's initial value: `_rank`)
KIND_ORDER = {TensorKind.PARAMETER: 0, TensorKind.BUFFER: 1, TensorKind.OPTIMIZER: 2, TensorKind.OTHER: 3}
PACKED = {"I4", "U4", "I2"}  # types TF Lite packs several to a byte (a converter may store them one to a byte)


@record(slots=True)
class _Entry:
    """A stored tensor (a constant, a variable), before its storage is shared out."""

    sg: Subgraph
    t: Tensor
    name: str
    dtype: str
    nbytes: int
    offset: int | None
    kind: TensorKind
    use: Use | None
    notes: list[str]
    trainable: bool
    variable: str | None = None  # the resource variable it is the initial value of: its own tensor when the model runs


def _rank(e: _Entry) -> tuple[bool, int]:
    """Which of the tensors of a buffer owns it, the least first."""
    return e.variable is None, KIND_ORDER[e.kind]


class _Build:
    """The model's stored tensors, subgraph by subgraph, and what the graphs say about them."""

    def __init__(self, probe: Probe, model: Model) -> None:
        self.probe, self.model = probe, model
        self.graphs = graphs(probe, model, FORMAT)
        self.entries: list[_Entry] = []
        self.names: set[str] = set()
        self.activations = 0
        self.quantized_activations = 0
        self.missing_bias: list[str] = []
        self.shared: dict[str, list[str]] = {}  # a constant read as several weights -> the inputs reading it
        self.variable_kinds = variable_kinds(self.graphs)
        # (a model whose gradient updates its variables: a weight stored as a constant is one it never updates, frozen)
        self.trains = any(trainable for _, trainable in self.variable_kinds.values())

    def error(self, reason: str) -> FormatError:
        return FormatError(self.probe.path, FORMAT, reason)

    def subgraph(self, graph: Graph) -> None:
        sg = graph.sg
        self.missing_bias += graph.missing_bias
        blockwise = _blockwise(sg)
        for t in sg.tensors:
            if not 0 <= t.buffer < len(self.model.buffers):
                raise self.error(f"tensor {t.index} of subgraph {sg.name!r} names buffer {t.buffer} of "
                                 f"{len(self.model.buffers)}")  # fmt: skip
            buffer = self.model.buffers[t.buffer]
            if buffer.start is None and not t.variable and not t.external and t.index not in blockwise:
                self.activations += 1
                self.quantized_activations += t.quantization is not None and t.quantization.scales > 0
                continue
            entry = self._entry(sg, graph, t, blockwise.get(t.index))
            self.entries.append(entry)
            if entry.variable is not None:
                self.entries += self._initialized(graph, entry)

    def _entry(self, sg: Subgraph, graph: Graph, t: Tensor, scales_of: str | None) -> _Entry:
        name = self._unique(t.name or f"tensor {t.index}", sg, t)
        shape = check_shape(self.probe, FORMAT, name, t.shape)
        dtype = dtypes.TFLITE_TYPES.get(t.type, f"TFLITE_TYPE[{t.type}]")
        buffer = self.model.buffers[t.buffer]
        notes = _notes(self.model, graph, t, dtype)
        expected = dtypes.nbytes_for(dtype, prod(shape))
        nbytes = 0  # (a variable the interpreter allocates: nothing stored)
        if buffer.start is not None:
            nbytes = self._data_bytes(name, t, dtype, expected, buffer.nbytes, notes)
        elif t.external:
            nbytes = expected or 0
        trainable = not self.trains
        if t.variable:
            kind, use = TensorKind.BUFFER, next(iter(graph.consumers.get(t.index, ())), None)
        elif scales_of is not None:
            kind, use = TensorKind.BUFFER, None
            notes.append(f"blockwise quantization parameters of {scales_of!r}")
        else:
            kind, use = kind_of(self.graphs, sg.index, t, folds=not self.variable_kinds)
        variable = None
        if use is not None and kind is TensorKind.PARAMETER and use.index in VARIABLE_INPUTS.get(use.op, ()):
            variable = assigned(self.graphs[use.graph], use)
            kind, trainable, said = self._variable(variable)
            notes.append(f"the initial value of resource variable {variable!r}: {said}")
        weights = [u for u in graph.consumers.get(t.index, ()) if u.index in WEIGHT_INPUTS.get(u.op, ())]
        if kind is TensorKind.PARAMETER and len(weights) > 1:
            reads = Counter(f"{u.op} {input_name(u.op, u.index)}" for u in weights)
            self.shared[name] = [f"{r}" + (f" x{n}" if n > 1 else "") for r, n in reads.items()]
        return _Entry(sg, t, name, dtype, nbytes, buffer.start, kind, use, notes, trainable, variable)

    def _variable(self, variable: str) -> tuple[TensorKind, bool, str]:
        """A resource variable's kind, whether it is trainable, and what its initial value's note says of it."""
        kind, trainable = self.variable_kinds.get(variable, (TensorKind.PARAMETER, False))
        if not self.variable_kinds:  # (the file does not tell a weight from optimizer state, nor what is trained)
            return kind, trainable, "a weight the model updates"
        if kind is TensorKind.OPTIMIZER:
            return kind, trainable, "optimizer state (no signature that assigns no variable reads it as a weight)"
        if trainable:
            return kind, trainable, "a weight the model's gradient updates: trainable"
        return kind, trainable, "a weight the model updates, not from its gradient: non-trainable"

    def _initialized(self, graph: Graph, entry: _Entry) -> list[_Entry]:
        """The other resource variables the initializer assigns the same constant (the converter stores equal initial
        values once: a fresh model's zero biases and its optimizer's zero slots): each its own tensor when the model
        runs, named after the variable, at the constant's data."""
        out = []
        assigns = [u for u in graph.consumers.get(entry.t.index, ()) if u.index in VARIABLE_INPUTS.get(u.op, ())]
        for use in assigns[1:]:
            variable = assigned(graph, use)
            kind, trainable, said = self._variable(variable)
            notes = [f"the initial value of resource variable {variable!r}: {said}; stored once, as {entry.name!r}"]
            name = self._unique(variable, entry.sg, entry.t)
            out.append(_Entry(entry.sg, entry.t, name, entry.dtype, entry.nbytes, entry.offset, kind, use, notes,
                              trainable, variable))  # fmt: skip
        return out

    def uninitialized(self) -> None:
        """The resource variables no initializer assigns a value stored in the file (Keras 3's, in a `tf.Module`:
        their values come from a restore signature): each a tensor without data in this file, its shape and type
        those of the first READ_VARIABLE's output, its layer the variable's scope."""
        initialized = {e.variable for e in self.entries if e.variable is not None}
        for g in self.graphs:
            for tensor, variable in g.reads.items():
                if variable in initialized:
                    continue
                initialized.add(variable)
                t = g.sg.tensors[tensor]
                kind, trainable, said = self._variable(variable)
                notes = [f"resource variable {variable!r}, {said}: no initial value in this file (the interpreter "
                         "allocates it; its values come from elsewhere, a restore signature)"]  # fmt: skip
                name = self._unique(variable, g.sg, t)
                dtype = dtypes.TFLITE_TYPES.get(t.type, f"TFLITE_TYPE[{t.type}]")
                nbytes = dtypes.nbytes_for(dtype, prod(check_shape(self.probe, FORMAT, name, t.shape))) or 0
                use = Use(READ_VARIABLE, 0, variable.rpartition("/")[0] or variable, -1, g.sg.index)
                self.entries.append(_Entry(g.sg, t, name, dtype, nbytes, None, kind, use, notes, trainable, variable))

    def _data_bytes(self, name: str, t: Tensor, dtype: str, expected: int | None, stored: int, notes: list[str]) -> int:
        """The bytes of a constant's data, checked against its shape and type where those fix them."""
        if t.sparse is not None:
            notes.append(f"sparse: its data holds the non-zero values only ({stored:,} bytes), indexed by its sparsity "
                         f"parameters over {t.sparse} traversal dimensions")  # fmt: skip
        elif dtype in PACKED and stored == prod(t.shape) and stored != expected:
            notes.append(f"{dtype} values stored one to a byte, not packed")
        elif expected is not None and stored != expected:
            shape = list(t.shape)
            raise self.error(f"tensor {name!r} has {stored:,} bytes of data, {shape} {dtype} needs {expected:,}")
        return stored

    def _unique(self, name: str, sg: Subgraph, t: Tensor) -> str:
        """The name as stored, or made unique (a name two subgraphs or two tensors share) by where it is."""
        unique, n = name, 1
        while unique in self.names:
            unique = f"{name} [{sg.name} tensor {t.index}]" + (f" #{n}" if n > 1 else "")
            n += 1
        self.names.add(unique)
        return unique

    def tensors(self) -> list[TensorInfo]:
        """The tensors, those sharing a buffer made aliases of the one the graph says most of (a parameter first)."""
        readers = Counter(e.t.buffer for e in self.entries if e.offset is not None)
        owner = self._owners()
        out = []
        for e in self.entries:
            shared = readers[e.t.buffer] > 1
            first = owner.get(e.t.buffer)
            alias = first.name if shared and first is not None and first is not e and e.variable is None else None
            use = None
            if e.use is not None:  # (the operator's layer, as `inspector.roles` reads an ONNX node's scope)
                use = (e.use.op, input_name(e.use.op, e.use.index), f"{e.use.layer}/{e.use.op}", False)
            out.append(TensorInfo(
                e.name, e.t.shape, e.dtype, e.nbytes, e.offset,
                storage=f"buffer {e.t.buffer}" if shared else None, alias_of=alias, kind=e.kind,
                trainable=e.kind is TensorKind.PARAMETER and e.trainable, section="" if e.sg.index == 0 else e.sg.name,
                notes=tuple(e.notes), use=use,
            ))  # fmt: skip
        if len(out) > MAX_STORED:
            raise LimitExceededError(self.probe.path, FORMAT, f"more than {MAX_STORED:,} stored tensors")
        return out

    def owners(self) -> dict[int, str]:
        """Buffer index -> the tensor its data is labelled with (the parameter of a shared buffer first)."""
        return {b: e.name for b, e in self._owners().items()}

    def _owners(self) -> dict[int, _Entry]:
        """Buffer index -> the stored tensor that owns it: the first resource variable's initial value (each variable
        its own tensor: a constant sharing its buffer is the alias), else the first of the kind `KIND_ORDER` puts
        first."""
        best: dict[int, _Entry] = {}
        for e in self.entries:
            if e.offset is not None:
                held = best.get(e.t.buffer)
                if held is None or _rank(e) < _rank(held):
                    best[e.t.buffer] = e
        return best

    def findings(self) -> list[Finding]:
        """What makes the file's parameters differ from its source model's: what the converter folded, dropped and
        stored once."""
        out = []
        folded = sorted(
            {layer for e in self.entries if e.kind is TensorKind.PARAMETER for layer in folded_norms(e.name)}
        )
        if folded:
            named = ", ".join(repr(f) for f in folded[:8])
            message = (
                f"the converter folded {len(folded)} normalization layer(s) into other weights, or into one multiply "
                f"and add (the weights' names list the folded ops): {named}; a source model counts each one's scale, "
                "shift and moving statistics, not stored as such"
            )
            out.append(Finding("TFLITE_FOLDED", Severity.INFO, message, tuple(folded[:MAX_SUBJECTS])))
        if self.missing_bias:
            message = (
                f"{len(self.missing_bias)} operator(s) have no bias: a layer without one, a bias the converter folded "
                f"into the next layer's (no activation between them), or an all-zero bias it dropped "
                f"({', '.join(self.missing_bias[:6])})"
            )
            out.append(Finding("TFLITE_NO_BIAS", Severity.INFO, message, tuple(self.missing_bias[:MAX_SUBJECTS])))
        if self.shared:
            said = "; ".join(f"{name!r} as {', '.join(inputs)}" for name, inputs in list(self.shared.items())[:4])
            message = (
                f"{len(self.shared)} constant(s) are read as several weights, stored once (the converter merges equal "
                f"constants; a source model counts each): {said}"
            )
            out.append(Finding("TFLITE_SHARED_CONSTANT", Severity.INFO, message, tuple(self.shared)[:MAX_SUBJECTS]))
        return out


MAX_STORED = 10_000_000
MAX_SUBJECTS = 100  # names a finding carries


def _blockwise(sg: Subgraph) -> dict[int, str]:
    """Tensor index -> the name of the tensor whose blockwise quantization's scales or zero points it holds."""
    out = {}
    for t in sg.tensors:
        q = t.quantization
        if q is not None and q.blockwise is not None:
            for i in q.blockwise[:2]:
                if 0 <= i < len(sg.tensors):
                    out[i] = t.name
    return out


def _notes(model: Model, graph: Graph, t: Tensor, dtype: str) -> list[str]:
    notes = []
    q = t.quantization
    if q is not None and (q.scales or q.zero_points):
        if q.scales == 1 and q.scale is not None:
            notes.append(f"quantized: scale {q.scale:.6g}, zero point {q.zero_point}")
        else:
            notes.append(f"quantized per channel (axis {q.axis}): {q.scales:,} scales, {q.zero_points:,} zero points")
    if q is not None and q.custom is not None:
        notes.append(f"custom quantization ({q.custom:,} bytes)")
    if q is not None and q.blockwise is not None:
        notes.append(f"blockwise quantization: blocks of {q.blockwise[2]} values")
    if any(u.op == "DEQUANTIZE" for u in graph.consumers.get(t.index, ())):
        notes.append(f"{dtype}, dequantized to float32 when the model runs")
    if t.variable:
        notes.append("a variable the operators update" + ("" if model.buffers[t.buffer].start is not None else
                     ": the interpreter allocates it, nothing is stored"))  # fmt: skip
    if t.external:
        group, offset, length = model.external.get(t.external, ("?", 0, 0))
        notes.append(f"stored outside this file: {group!r} at byte {offset:,}, {length:,} bytes")
    folded = folded_norms(t.name)
    if folded:
        notes.append(f"holds {', '.join(folded)} folded in")
    return notes


# -- the bytes --------------------------------------------------------------------------------------------------------

SPAN_REGIONS: dict[str, tuple[RegionKind, str]] = {
    STRUCTURE: (RegionKind.HEADER, "flatbuffer structure: tables, vtables, offsets, shapes, tensor indices"),
    NAMES: (RegionKind.METADATA, "names: tensors, subgraphs, signatures, metadata"),
    DESCRIPTION: (RegionKind.METADATA, "model description"),
    QUANTIZATION: (RegionKind.METADATA, "quantization parameters: scales, zero points, ranges"),
    OPTIONS: (RegionKind.METADATA, "operator options"),
    SPARSITY: (RegionKind.METADATA, "sparsity parameters: index vectors"),
}
OUTSIDE_OPTIONS = (RegionKind.METADATA, "custom options past the flatbuffer")
PADDING = "alignment padding"
UNREAD = "data no tensor reads"


def _archive(probe: Probe, fb: FlatBuffer, model: Model) -> Archive | None:
    """The zip archive TF Lite Support's metadata populator appends past the model, of the files its metadata names
    (labels, vocabularies): its members and its structure's regions; None where the file ends otherwise (its last
    bytes no end record without a comment, as Python's zipfile writes it), or where the archive cannot be read or
    does not lie past the model's own objects (its bytes then stay unexplained)."""
    if probe.size < _zip.EOCD_BYTES or probe.tail(_zip.EOCD_BYTES)[:4] != _zip.EOCD_SIG:
        return None
    try:
        members, structure = _zip.read_zip(probe, FORMAT)
    except FormatError:
        return None
    mask = (1 << SPAN_BITS) - 1
    ends = [(s >> SPAN_BITS) + (s & mask) for s in fb.spans]
    ends += [b.start + b.nbytes for b in model.buffers if b.start is not None]
    if min((*(r.start for r in structure), *(m.header_offset for m in members))) < max(ends, default=0):
        return None
    return members, structure


def _regions(fb: FlatBuffer, model: Model, build: _Build, archive: Archive | None) -> RegionColumns:
    """Every structure read, every buffer's data, the appended archive of associated files, and the zero padding
    between them, merged where adjacent."""
    owners = build.owners()
    metadata = {index: name for name, index in model.metadata}
    # span (`start << SPAN_BITS | length`) -> what it holds: the first said of one read twice (a shared vtable)
    spans = {span: SPAN_REGIONS[what] for span, what in zip(reversed(fb.spans), reversed(fb.whats), strict=True)}
    for b in model.buffers:
        if b.start is None:
            continue
        if b.index in owners:
            held = (RegionKind.TENSOR_DATA, owners[b.index])
        elif b.index in metadata:
            held = (RegionKind.METADATA, f"metadata {metadata[b.index] or b.index!r}")
        else:  # (stored, unreferenced: the reconciler's words for a TF Lite model's are its `UNREFERENCED["tflite"]`)
            held = (RegionKind.UNREFERENCED, f"buffer {b.index}: {UNREAD}")
        spans[b.start << SPAN_BITS | b.nbytes] = held
    for sg in model.subgraphs:
        for op in sg.operators:
            if op.large_options is not None:
                spans[op.large_options[0] << SPAN_BITS | op.large_options[1]] = OUTSIDE_OPTIONS
    if archive is not None:
        members, structure = archive
        for r in structure:
            spans[r.start << SPAN_BITS | r.length] = (RegionKind.HEADER, r.label)
        for m in members:
            spans[m.data_offset << SPAN_BITS | m.compress_size] = (RegionKind.METADATA, f"associated file {m.name!r}")
    # where the data appended past the flatbuffer begins (a model over 2 GB: the exporter pads around it more widely)
    appended = min((b.start for b in model.buffers if b.outside and b.start is not None), default=fb.end)
    kinds: list[RegionKind] = []
    starts: list[int] = []
    lengths: list[int] = []
    labels: list[str] = []
    end, mask = 0, (1 << SPAN_BITS) - 1
    for span in [*sorted(spans), fb.end << SPAN_BITS]:  # (as columns: 20,000 tensors make 200,000 regions)
        start, length = span >> SPAN_BITS, span & mask
        kind, label = spans.get(span, (RegionKind.PADDING, PADDING))
        if starts and start + length <= end:
            continue
        gap = start - end
        widest = APPENDED_PADDING if start >= appended else ALIGNMENT
        if starts and 0 < gap < widest and not fb.read(end, gap, "padding").strip(b"\0"):
            kinds.append(RegionKind.PADDING)
            starts.append(end)
            lengths.append(gap)
            labels.append(PADDING)
            end = start
        if not length:  # (the end of the file: only the padding before it)
            break
        if starts and end == start and kind is kinds[-1] and label == labels[-1]:
            lengths[-1] += length
        else:  # (a hostile overlap, start < end, is cut by `tile`)
            kinds.append(kind)
            starts.append(start)
            lengths.append(length)
            labels.append(label)
        end = max(end, start + length)
    return RegionColumns(kinds, starts, lengths, labels, [None] * len(kinds))


# -- the facts --------------------------------------------------------------------------------------------------------

MODEL_TYPES = {1: "a TensorFlow SavedModel", 2: "a Keras model", 3: "TensorFlow concrete functions",
               4: "a TensorFlow GraphDef", 5: "a TensorFlow session", 6: "JAX", 7: "PyTorch"}  # fmt: skip
OPTIMIZATIONS = {1001: "float16 quantization", 1002: "dynamic-range quantization", 1003: "full-integer quantization",
                 1004: "16x8 integer quantization", 2000: "quantization-aware training", 3001: "random sparsity",
                 3002: "block sparsity", 3003: "structured sparsity"}  # fmt: skip
CONVERSION_METADATA = "CONVERSION_METADATA"  # a FlatBuffer of conversion_metadata.fbs: environment, options
RUNTIME_VERSION = "min_runtime_version"
MAX_SHOWN = 8  # inputs, outputs, subgraphs, signatures named in an attribute


def _attributes(probe: Probe, fb: FlatBuffer, model: Model, build: _Build, archive: Archive | None) -> dict[str, str]:
    a = {"tflite.schema_version": str(model.version)}
    if model.description:
        a["tflite.description"] = model.description[:200]
    for name, index in model.metadata:
        b = model.buffers[index] if 0 <= index < len(model.buffers) else None
        if b is None or b.start is None:
            continue
        if name == RUNTIME_VERSION and b.nbytes <= 64:
            a["tflite.min_runtime_version"] = fb.read(b.start, b.nbytes, name).rstrip(b"\0").decode("ascii", "replace")
        elif name == CONVERSION_METADATA and not b.outside:
            a.update(_conversion(probe, b.start, b.start + b.nbytes))
    if model.metadata:
        shown = [f"{(n or str(i))[:100]} ({model.buffers[i].nbytes:,} B)" for n, i in model.metadata
                 if 0 <= i < len(model.buffers)]  # fmt: skip
        a["tflite.metadata"] = ", ".join(shown[:MAX_SHOWN])
    main = model.subgraphs[0]
    for key, indices in (("inputs", main.inputs), ("outputs", main.outputs)):
        shown = [_described(main.tensors[i]) for i in indices[:MAX_SHOWN] if 0 <= i < len(main.tensors)]
        a[f"tflite.{key}"] = ", ".join(shown) or "-"
    if len(model.subgraphs) > 1:
        a["tflite.subgraphs"] = ", ".join(f"{sg.name} ({len(sg.tensors):,} tensors, {len(sg.operators):,} operators)"
                                          for sg in model.subgraphs[:MAX_SHOWN])  # fmt: skip
    for key, _, inputs, outputs in model.signatures[:MAX_SHOWN]:
        a[f"tflite.signature.{key}"[:100]] = f"inputs {_listed(inputs)}; outputs {_listed(outputs)}"
    ops = Counter(op.code for sg in model.subgraphs for op in sg.operators)
    a["tflite.operators"] = f"{sum(ops.values()):,}"
    a["tflite.op_types"] = ", ".join(f"{op} x{n}" for op, n in ops.most_common(12)) or "-"
    constants = [e for e in build.entries if e.offset is not None]
    a["tflite.constants"] = (f"{len(constants):,} tensors of {_elements(constants):,} elements in "
                             f"{len({e.t.buffer for e in constants}):,} buffers")  # fmt: skip
    a["tflite.activations"] = f"{build.activations:,} tensors the model computes when it runs: no stored data"
    quantized = [e for e in build.entries if e.t.quantization is not None and e.t.quantization.scales]
    if quantized or build.quantized_activations:
        scales = sum(e.t.quantization.scales for e in quantized if e.t.quantization is not None)
        types = sorted(Counter(e.dtype for e in quantized).items(), key=lambda kv: (-kv[1], kv[0]))
        a["tflite.quantization"] = (
            f"{len(quantized):,} stored tensors quantized ({', '.join(f'{d} {n}' for d, n in types)}), "
            f"{scales:,} scales; {build.quantized_activations:,} activations quantized"
        )
    if archive is not None:
        files = ", ".join(f"{m.name[:100]} ({m.file_size:,} B)" for m in archive[0][:MAX_SHOWN])
        a["tflite.associated_files"] = files or "-"
    if model.external:
        groups = Counter(group for group, _, _ in model.external.values())
        a["tflite.external_buffers"] = ", ".join(f"{g!r} ({n:,} buffers)" for g, n in groups.most_common(MAX_SHOWN))
    return a


def _listed(names: tuple[str, ...]) -> str:
    shown = ", ".join(n[:100] for n in names[:MAX_SHOWN]) or "-"
    return shown + (f" and {len(names) - MAX_SHOWN:,} more" if len(names) > MAX_SHOWN else "")


def _elements(entries: list[_Entry]) -> int:
    return sum(prod(e.t.shape) for e in entries)


def _described(t: Tensor) -> str:
    shape = t.signature if t.signature is not None and len(t.signature) == len(t.shape) else t.shape
    return f"{t.name[:80]} {dtypes.TFLITE_TYPES.get(t.type, t.type)} {list(shape)}"


def _conversion(probe: Probe, start: int, end: int) -> dict[str, str]:
    """What CONVERSION_METADATA says (conversion_metadata.fbs: Environment tensorflow_version, model_type; Options
    model_optimization_modes); nothing when it cannot be read."""
    fb = FlatBuffer(probe, FORMAT, start, end)
    try:
        root = fb.root("conversion metadata")
        env, options = fb.sub(root, 0, "conversion environment"), fb.sub(root, 1, "conversion options")
        out = {}
        if env is not None:
            version = fb.string(env, 0, "tensorflow version")
            source = MODEL_TYPES.get(fb.scalar(env, 2, "i"))
            said = [f"TensorFlow {version[:40]}" if version else "", f"from {source}" if source else ""]
            if any(said):
                out["tflite.converter"] = " ".join(filter(None, said))
        modes = () if options is None else fb.numbers(options, 0, "i", "optimization modes", 64)
        if modes:
            out["tflite.optimization"] = ", ".join(OPTIMIZATIONS.get(m, str(m)) for m in modes)
        return out
    except FormatError:  # (metadata for people: a file whose own metadata is malformed still reads)
        return {"tflite.converter": "unreadable CONVERSION_METADATA"}
