"""ONNX models (one protobuf `ModelProto`), read from the wire format without onnx (FORMATS.md section 8).

Walked (field numbers of onnx.proto, onnx 1.23.2)::

    ModelProto   1 ir_version, 2 producer_name, 3 producer_version, 5 model_version, 7 graph, 8 opset_import
                 (1 domain, 2 version), 14 metadata_props, 20 training_info (1 initialization, 2 algorithm graphs)
    GraphProto   1 node, 2 name, 5 initializer, 11 input, 15 sparse_initializer (1 values, 2 indices, 3 dims)
    NodeProto    1 input, 2 output, 3 name, 4 op_type, 5 attribute (1 name, 5 t, 6 g, 10 tensors, 11 graphs,
                 22 sparse_tensor)
    TensorProto  1 dims, 2 data_type, 8 name, 9 raw_data, typed values (4 float, 5 int32, 6 string, 7 int64,
                 10 double, 11 uint64), 13 external_data (location, offset, length), 14 data_location

Tensors are the graph's initializers (and subgraphs'), sparse initializers, and tensors held by node attributes
(Constant nodes). `raw_data` and fixed-width packed values (float_data, double_data) are addressable tensor data;
varint-packed values (int32_data holds float16 as varints) are an encoding, reported with their logical size.
Tensor payloads are never read: only the framing around them. External data (`data_location` EXTERNAL) lives in
files beside the model, read by `loaders/_onnx_external.py`.

Kinds from the graph: a tensor feeding a weight input (`WEIGHT_INPUTS`: MatMul, Gemm, Conv, Gather data,
normalisation scale and bias, RNN weights, a float Add/Mul operand with more than one element), directly or through
`PASS_THROUGH` ops (Identity, Transpose, DequantizeLinear...), is a parameter; BatchNormalization's running
statistics are buffers; everything else (shapes, axes, scalars, unused tensors) is other state.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict

from inspector import dtypes
from inspector.dtypes import DKind
from inspector.errors import FormatError, LimitExceededError, UnsupportedVariantError
from inspector.probe import Probe
from inspector.records import Checkpoint, Finding, Region, RegionKind, TensorInfo, TensorKind
from inspector.recordtype import field, record, replace
from loaders._onnx_external import ExternalFiles
from loaders._protobuf import LEN, VARINT, Field, Wire, signed
from loaders.base import MAX_DIMS, MAX_TENSORS, Claim, check_shape, tile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import ClassVar

FORMAT = "onnx"
MAX_DEPTH = 16  # nested subgraphs (If, Loop, Scan bodies)
MAX_NODES = 10_000_000
EXTERNAL = 1  # TensorProto.DataLocation
MAX_IR_VERSION = 64  # a sniffing bound: onnx is at 11-14 today

# ModelProto field -> wire type, for sniffing a file that has no magic number
MODEL_FIELDS = {1: VARINT, 2: LEN, 3: LEN, 4: LEN, 5: VARINT, 6: LEN, 7: LEN, 8: LEN, 14: LEN, 20: LEN, 25: LEN}
FIXED_FIELDS = {4: 4, 10: 8}  # float_data, double_data: bytes per value (C64/C128 take two)
TYPED_FIELDS = {
    4: "float_data",
    5: "int32_data",
    6: "string_data",
    7: "int64_data",
    10: "double_data",
    11: "uint64_data",
}

# op_type -> input positions holding weights, from the operator specs (onnx/docs/Operators.md) and the exporters'
# contrib ops (onnxruntime SkipLayerNormalization, SkipSimplifiedLayerNormalization, SimplifiedLayerNormalization,
# MatMulNBits).
WEIGHT_INPUTS: dict[str, tuple[int, ...]] = {
    "Conv": (1, 2),
    "ConvTranspose": (1, 2),
    "Gemm": (0, 1, 2),
    "MatMul": (0, 1),
    "Gather": (0,),
    "GatherND": (0,),  # the dynamo exporter's indexing of a table (Swin's relative position bias, unoptimized)
    "GatherElements": (0,),
    "LayerNormalization": (1, 2),
    "BatchNormalization": (1, 2),
    "InstanceNormalization": (1, 2),
    "GroupNormalization": (1, 2),
    "RMSNormalization": (1,),
    "SimplifiedLayerNormalization": (1,),
    "SkipLayerNormalization": (2, 3, 4),
    "SkipSimplifiedLayerNormalization": (2, 3),  # (onnxruntime-genai's RMSNorm with the residual add)
    "LSTM": (1, 2, 3),
    "GRU": (1, 2, 3),
    "RNN": (1, 2, 3),
    "PRelu": (1,),
    "QLinearConv": (3, 8),  # quantized operators: integer weights are weights here
    "QLinearMatMul": (0, 3),
    "ConvInteger": (1,),
    "MatMulInteger": (0, 1),
    "MatMulNBits": (1,),  # onnxruntime's block-quantized MatMul (its int4 models): B, packed (`PACKED_WEIGHTS`)
    "DynamicQuantizeLSTM": (1, 2, 3),  # onnxruntime's dynamic quantizer's LSTM: int8 W (in, 4h), R (h, 4h), float B
    "Add": (0, 1),  # MatMul + Add is how exporters write a Linear layer's bias (and decomposed LayerNorms)
    "Mul": (0, 1),
    "Sub": (0, 1),
}
ELEMENTWISE = {"Add", "Mul", "Sub"}  # a weight there only when float with more than one element
# weights that need not be float
INTEGER_WEIGHTS = {"QLinearConv", "QLinearMatMul", "ConvInteger", "MatMulInteger", "MatMulNBits", "DynamicQuantizeLSTM"}
BUFFER_INPUTS: dict[str, tuple[int, ...]] = {"BatchNormalization": (3, 4)}  # running mean and variance
# op_type -> its inputs' names in the operator specs: what a weight is to the node it feeds (`TensorInfo.use`)
INPUT_NAMES: dict[str, tuple[str, ...]] = {
    "Conv": ("X", "W", "B"),
    "ConvTranspose": ("X", "W", "B"),
    "Gemm": ("A", "B", "C"),
    "MatMul": ("A", "B"),
    "Gather": ("data", "indices"),
    "GatherND": ("data", "indices"),
    "GatherElements": ("data", "indices"),
    "LayerNormalization": ("X", "Scale", "B"),
    "BatchNormalization": ("X", "scale", "B", "input_mean", "input_var"),
    "InstanceNormalization": ("input", "scale", "B"),
    "GroupNormalization": ("X", "scale", "bias"),
    "RMSNormalization": ("X", "scale"),
    "SimplifiedLayerNormalization": ("X", "scale"),
    "SkipLayerNormalization": ("input", "skip", "gamma", "beta", "bias"),
    "SkipSimplifiedLayerNormalization": ("input", "skip", "gamma", "bias"),
    "LSTM": ("X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"),
    "GRU": ("X", "W", "R", "B", "sequence_lens", "initial_h"),
    "RNN": ("X", "W", "R", "B", "sequence_lens", "initial_h"),
    "PRelu": ("X", "slope"),
    "QLinearConv": ("x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point", "y_scale", "y_zero_point", "B"),
    "QLinearMatMul": ("a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale", "y_zero_point"),
    "ConvInteger": ("x", "w", "x_zero_point", "w_zero_point"),
    "MatMulInteger": ("A", "B", "a_zero_point", "b_zero_point"),
    "MatMulNBits": ("A", "B", "scales", "zero_points", "g_idx", "bias"),
    "DynamicQuantizeLSTM": (  # (LSTM's inputs, then the quantized W's and R's scales and zero points)
        *("X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"),
        *("W_scale", "W_zero_point", "R_scale", "R_zero_point"),
    ),
    "Add": ("A", "B"),
    "Mul": ("A", "B"),
    "Sub": ("A", "B"),
    # operators whose other inputs are constants of the graph (shapes, axes, pads, bounds)
    "Div": ("A", "B"),
    "Pow": ("X", "Y"),
    "Reshape": ("data", "shape"),
    "Expand": ("input", "shape"),
    "Tile": ("input", "repeats"),
    "Unsqueeze": ("data", "axes"),
    "Squeeze": ("data", "axes"),
    "Slice": ("data", "starts", "ends", "axes", "steps"),
    "Pad": ("data", "pads", "constant_value", "axes"),
    "Split": ("input", "split"),
    "Clip": ("input", "min", "max"),
    "Range": ("start", "limit", "delta"),
    "Resize": ("X", "roi", "scales", "sizes"),
    "ConstantOfShape": ("input",),
    "ReduceMean": ("data", "axes"),
    "ReduceSum": ("data", "axes"),
    "Where": ("condition", "X", "Y"),
    "Equal": ("A", "B"),
    "Less": ("A", "B"),
    "Greater": ("A", "B"),
    "TopK": ("X", "K"),
    "OneHot": ("indices", "depth", "values"),
    "Transpose": ("data",),
    "Cast": ("input",),
    "Identity": ("input",),
}
# op_type -> the input whose values it reads packed, and the attributes that say how: onnxruntime's MatMulNBits (the
# int4 models of onnxruntime's quantizer and of onnxruntime-genai's builder) keeps B as uint8 (N, blocks, block bytes),
# each of the N output rows' K inputs in blocks of `block_size` values of `bits` bits, the last block padded
PACKED_WEIGHTS: dict[str, tuple[int, tuple[str, ...]]] = {"MatMulNBits": (1, ("K", "N", "bits", "block_size"))}
PACKED_DTYPES = {2: "U2", 4: "U4", 8: "U8"}  # a packed B's values: unsigned, their zero point apart (8 for 4 bits)
# op_type -> its attributes that transpose an input, and that input
TRANSPOSES: dict[str, dict[str, int]] = {"Gemm": {"transA": 0, "transB": 1}}
# op_type -> the inputs whose values flow on unchanged in meaning (None: every input): a weight transposed, sliced
# into gates and concatenated again (the PyTorch LSTM export), broadcast, cast or dequantized is still a weight.
PASS_THROUGH: dict[str, tuple[int, ...] | None] = {
    "Identity": (0,),
    "Transpose": (0,),
    "Cast": (0,),
    "Reshape": (0,),
    "Squeeze": (0,),
    "Unsqueeze": (0,),
    "Flatten": (0,),
    "Expand": (0,),  # ViT's class token broadcast to the batch (the TorchScript exporter), then concatenated
    "Tile": (0,),
    "Slice": (0,),
    "Split": (0,),
    "Concat": None,
    "DequantizeLinear": (0,),
    # (a float bias divided by its scales and rounded down, as onnxruntime's early dynamic quantizer writes a
    # ConvInteger's bias, ddddocr's common_old.onnx: `392` -> Div -> Floor -> Cast -> Add, still the conv's bias)
    "Div": (0,),
    "Floor": (0,),
}


@record
class _Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    offset: int | None
    source: str  # initializer, constant, attribute, sparse
    notes: list[str] = field(default_factory=list)
    external: dict[str, str] | None = None
    kind: TensorKind = TensorKind.OTHER
    use: tuple[str, str, str, bool] | None = None  # an attribute's tensor: (operator, attribute, node, False)


@record
class _Consumer:
    op_type: str
    index: int
    outputs: tuple[str, ...]
    node: str  # its name (or first output)
    transposed: bool = False  # the node reads the input transposed (Gemm's transA, transB)
    scope: str = ""  # the module the dynamo exporter says the node is in (`NAME_SCOPES`), where it says
    operands: tuple[str, ...] = ()  # an Add's or a Mul's inputs (`BIAS_ADDED_TO`, `NORM_OPERANDS`)

    def use(self) -> tuple[str, str, str, bool]:
        """(operator, the input's name, node, transposed): what the value is to this node."""
        names = INPUT_NAMES.get(self.op_type, ())
        name = names[self.index] if self.index < len(names) else str(self.index)
        return self.op_type, name, self.node, self.transposed


class _Walk:
    """One pass over the model: tensors, leaf regions of the .onnx file, and who consumes each value."""

    def __init__(self, probe: Probe) -> None:
        self.probe, self.wire = probe, Wire(probe, FORMAT)
        self.tensors: list[_Tensor] = []
        self.regions: list[Region] = []
        self.consumers: dict[str, list[_Consumer]] = defaultdict(list)
        self.attributes: dict[str, str] = {}
        self.nodes = 0
        self.op_types: dict[str, int] = defaultdict(int)
        self.packed: dict[str, dict[str, int]] = {}  # a value read packed (`PACKED_WEIGHTS`) -> the node's attributes
        # a layer's output (`BIAS_ADDED_TO`'s operators) -> (operator, node): what an Add's other operand comes from
        self.layer_outputs: dict[str, tuple[str, str]] = {}
        self.normalized: set[str] = set()  # values a decomposed norm computes (`NORMALIZING`): its 1/std, x/std...

    def error(self, reason: str, at: int | None = None) -> FormatError:
        return FormatError(self.probe.path, FORMAT, reason, at)

    def fill(self, start: int, end: int, children: list[tuple[int, int]], kind: RegionKind, label: str) -> None:
        """Regions of `kind` for the bytes of `[start, end)` outside `children` (which emit their own)."""
        pos = start
        for s, e in sorted(children):
            if s > pos:
                self.regions.append(Region(kind, pos, s - pos, label))
            pos = max(pos, e)
        if end > pos:
            self.regions.append(Region(kind, pos, end - pos, label))

    # -- messages ------------------------------------------------------------------------------

    def model(self) -> None:
        children: list[tuple[int, int]] = []
        opsets: list[tuple[str, int]] = []
        meta: list[tuple[str, str]] = []
        for f in self.wire.fields(0, self.probe.size):
            if f.number == 1 and f.wire == VARINT:
                self.attributes["onnx.ir_version"] = str(f.value)
            elif f.number in (2, 3, 4) and f.wire == LEN:
                key = {2: "producer", 3: "producer_version", 4: "domain"}[f.number]
                self.attributes[f"onnx.{key}"] = self.wire.text(f, 200)
            elif f.number == 5 and f.wire == VARINT:
                self.attributes["onnx.model_version"] = str(signed(f.value))
            elif f.number == 7 and f.wire == LEN:
                self.graph(f, 0)
                children.append((f.start, f.end))
            elif f.number == 8 and f.wire == LEN:
                opsets.append(self.opset(f))
            elif f.number == 14 and f.wire == LEN and len(meta) < 50:
                meta.append(self.entry(f))
            elif f.number == 20 and f.wire == LEN:  # TrainingInfoProto: initialization and algorithm graphs
                for g in self.wire.fields(f.start, f.end):
                    if g.number in (1, 2) and g.wire == LEN:
                        self.graph(g, 1)
                        children.append((g.start, g.end))
        self.fill(0, self.probe.size, children, RegionKind.METADATA, "model: ir_version, opsets, producer, metadata")
        if opsets:
            self.attributes["onnx.opset"] = ", ".join(f"{d or 'ai.onnx'} {v}" for d, v in opsets)
        for key, value in meta:
            self.attributes[f"onnx.metadata.{key}"] = value[:200]

    def opset(self, f: Field) -> tuple[str, int]:
        domain, version = "", 0
        for g in self.wire.fields(f.start, f.end):
            if g.number == 1 and g.wire == LEN:
                domain = self.wire.text(g, 200)
            elif g.number == 2 and g.wire == VARINT:
                version = signed(g.value)
        return domain, version

    def entry(self, f: Field) -> tuple[str, str]:
        """A StringStringEntryProto (1 key, 2 value)."""
        out = {1: "", 2: ""}
        for g in self.wire.fields(f.start, f.end):
            if g.number in out and g.wire == LEN:
                out[g.number] = self.wire.text(g, 4096)
        return out[1], out[2]

    def graph(self, f: Field, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise LimitExceededError(self.probe.path, FORMAT, f"subgraphs nested more than {MAX_DEPTH} deep", f.start)
        children: list[tuple[int, int]] = []
        for g in self.wire.fields(f.start, f.end):
            if g.number == 1 and g.wire == LEN:
                children += self.node(g, depth)
            elif g.number == 2 and g.wire == LEN and depth == 0:
                self.attributes["onnx.graph"] = self.wire.text(g, 200)
            elif g.number == 5 and g.wire == LEN:
                self.tensor(g, "initializer" if depth == 0 else "subgraph initializer")
                children.append((g.start, g.end))
            elif g.number == 15 and g.wire == LEN:
                self.sparse(g, "sparse initializer")
                children.append((g.start, g.end))
        label = "graph: nodes, inputs, outputs" if depth == 0 else "subgraph: nodes, inputs, outputs"
        self.fill(f.start, f.end, children, RegionKind.METADATA, label)

    def node(self, f: Field, depth: int) -> list[tuple[int, int]]:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise LimitExceededError(self.probe.path, FORMAT, f"more than {MAX_NODES:,} nodes", f.start)
        inputs, outputs, attributes, metadata = [], [], [], []
        op_type = name = ""
        for g in self.wire.fields(f.start, f.end):
            if g.number == 1 and g.wire == LEN:
                inputs.append(self.wire.text(g, 4096))
            elif g.number == 2 and g.wire == LEN:
                outputs.append(self.wire.text(g, 4096))
            elif g.number == 3 and g.wire == LEN:
                name = self.wire.text(g, 4096)
            elif g.number == 4 and g.wire == LEN:
                op_type = self.wire.text(g, 200)
            elif g.number == 5 and g.wire == LEN:
                attributes.append(g)
            elif g.number == 9 and g.wire == LEN:
                metadata.append(g)
        self.op_types[op_type] += 1
        scope = self.scope(metadata) if metadata and op_type in SCOPED_WEIGHT_INPUTS else ""
        node = name or (outputs[0] if outputs else op_type)
        transposed = self.transposes(TRANSPOSES[op_type], attributes) if op_type in TRANSPOSES else ()
        if op_type in PACKED_WEIGHTS and len(inputs) > PACKED_WEIGHTS[op_type][0]:
            self.packed[inputs[PACKED_WEIGHTS[op_type][0]]] = self.ints(attributes, PACKED_WEIGHTS[op_type][1])
        if op_type in BIAS_ADDED_TO and outputs:
            self.layer_outputs[outputs[0]] = (op_type, node)
        elif op_type in RESCALED and inputs and outputs and inputs[0] in self.layer_outputs:
            layer = self.layer_outputs[inputs[0]]
            if layer[0] in INTEGER_WEIGHTS:
                self.layer_outputs[outputs[0]] = layer
        if op_type in NORMALIZING and outputs and _normalizes(op_type, inputs, self.normalized):
            self.normalized.add(outputs[0])
        added = tuple(inputs) if op_type in OPERANDS_KEPT else ()
        for i, value in enumerate(inputs):
            if value:
                self.consumers[value].append(_Consumer(op_type, i, tuple(outputs), node, i in transposed, scope, added))
        children: list[tuple[int, int]] = []
        owner = outputs[0] if op_type == "Constant" and outputs else (name or (outputs[0] if outputs else op_type))
        for a in attributes:
            children += self.attribute(a, owner, op_type, depth)
        return children

    def scope(self, metadata: list[Field]) -> str:
        """The module a node is in, as the dynamo exporter writes it in the node's metadata (StringStringEntryProto: 1
        key, 2 value; `NAME_SCOPES`: "['', 'bert', ..., 'bert.encoder.layer.0.attention.self.query', 'linear']", the
        call last): the scope before the call, or ''."""
        for m in metadata:
            fields = list(self.wire.fields(m.start, m.end))
            key = next((self.wire.text(g, 64) for g in fields if g.number == 1 and g.wire == LEN), "")
            if key != NAME_SCOPES:
                continue
            text = next((self.wire.text(g, 4096) for g in fields if g.number == 2 and g.wire == LEN), "")
            if text.startswith("['") and text.endswith("']"):
                scopes = text[2:-2].split("', '")
                return scopes[-2] if len(scopes) >= 2 else ""
        return ""

    def ints(self, attributes: list[Field], names: tuple[str, ...]) -> dict[str, int]:
        """The integer attributes of these names a node has (AttributeProto: 1 name, 3 i)."""
        out = {}
        for a in attributes:
            fields = list(self.wire.fields(a.start, a.end))
            name = next((self.wire.text(g, 32) for g in fields if g.number == 1 and g.wire == LEN), "")
            value = next((signed(g.value) for g in fields if g.number == 3 and g.wire == VARINT), None)
            if name in names and value is not None:
                out[name] = value
        return out

    def transposes(self, flags: dict[str, int], attributes: list[Field]) -> set[int]:
        """The inputs a node reads transposed: those of its `flags` attributes set (Gemm's `transA`, `transB`;
        AttributeProto: 1 name, 3 i)."""
        out = set()
        for a in attributes:
            fields = list(self.wire.fields(a.start, a.end))
            name = next((self.wire.text(g, 16) for g in fields if g.number == 1 and g.wire == LEN), "")
            if name in flags and any(g.number == 3 and g.wire == VARINT and g.value for g in fields):
                out.add(flags[name])
        return out

    def attribute(self, f: Field, owner: str, op_type: str, depth: int) -> list[tuple[int, int]]:
        """Tensors and subgraphs inside one AttributeProto (the spans they emit regions for)."""
        children = []
        fields = list(self.wire.fields(f.start, f.end))
        attr = next((self.wire.text(g, 200) for g in fields if g.number == 1 and g.wire == LEN), "")
        many = sum(g.number == 10 for g in fields) > 1
        for i, g in enumerate(fields):
            if g.wire != LEN:
                continue
            if g.number in (5, 10):  # t, tensors
                name = owner if op_type == "Constant" else f"{owner}.{attr}" + (f".{i}" if many else "")
                t = self.tensor(g, "constant" if op_type == "Constant" else "attribute", name)
                if op_type != "Constant":  # (what it is to its node: ConstantOfShape's fill `value`...)
                    t.use = (op_type, attr, owner, False)
            elif g.number in (22, 23):  # sparse_tensor(s)
                self.sparse(g, "constant" if op_type == "Constant" else "attribute", owner)
            elif g.number in (6, 11):  # g, graphs
                self.graph(g, depth + 1)
            else:
                continue
            children.append((g.start, g.end))
        return children

    def tensor(self, f: Field, source: str, name: str | None = None) -> _Tensor:
        """A TensorProto: its header regions, its data region, and the tensor record."""
        dims: list[int] = []
        dtype_id, stored_name, location = 0, "", 0
        payloads: list[Field] = []
        external: dict[str, str] = {}
        for g in self.wire.fields(f.start, f.end):
            if g.number == 1:
                dims += [signed(v) for v in self.wire.packed(g, MAX_DIMS + 1)]
            elif g.number == 2 and g.wire == VARINT:
                dtype_id = g.value
            elif g.number == 8 and g.wire == LEN:
                stored_name = self.wire.text(g, 4096)
            elif g.number == 9 and g.wire == LEN or g.number in TYPED_FIELDS:
                payloads.append(g)
            elif g.number == 13 and g.wire == LEN:
                key, value = self.entry(g)
                external[key] = value
            elif g.number == 14 and g.wire == VARINT:
                location = g.value
        name = name or stored_name
        shape = check_shape(self.probe, FORMAT, name, dims)
        if dtype_id not in dtypes.ONNX_TYPES:
            raise UnsupportedVariantError(self.probe.path, FORMAT, f"tensor {name!r} has data type {dtype_id}", f.start)
        dtype = dtypes.ONNX_TYPES[dtype_id][0]
        t = _Tensor(name, shape, dtype, dtypes.nbytes_for(dtype, _numel(shape)) or 0, None, source)
        data = self.payload(t, payloads, f.start)
        if location == EXTERNAL or external:
            t.external = external
        self.tensors.append(t)
        if len(self.tensors) > MAX_TENSORS:
            raise LimitExceededError(self.probe.path, FORMAT, f"more than {MAX_TENSORS:,} tensors")
        self.fill(f.start, f.end, data, RegionKind.HEADER, f"tensor header {name!r}"[:120])
        return t

    def payload(self, t: _Tensor, payloads: list[Field], at: int) -> list[tuple[int, int]]:
        """Data regions of one tensor's values (raw_data or typed fields); sets its offset where addressable."""
        spans = []
        for g in payloads:
            if g.wire != LEN:  # an unpacked typed value: its bytes stay in the tensor's header region
                t.notes.append(f"unpacked {TYPED_FIELDS.get(g.number, 'raw_data')} values")
                continue
            label = t.name if g.number == 9 else f"{t.name} ({TYPED_FIELDS[g.number]})"
            if g.number == 9 or (g.number in FIXED_FIELDS and t.dtype != "STRING"):
                if g.number in FIXED_FIELDS:
                    t.notes.append(f"values in {TYPED_FIELDS[g.number]}")
                if t.dtype == "STRING":
                    t.nbytes = g.length
                elif g.length != t.nbytes:
                    what = "raw_data" if g.number == 9 else TYPED_FIELDS[g.number]
                    raise self.error(
                        f"tensor {t.name!r} has {g.length:,} bytes of {what}, {list(t.shape)} "
                        f"{t.dtype} needs {t.nbytes:,}",
                        at,
                    )
                t.offset = g.start
                self.regions.append(Region(RegionKind.TENSOR_DATA, g.start, g.length, label))
            else:  # varints (or strings): an encoding of the values, not their bytes
                if t.dtype == "STRING":
                    t.nbytes += g.length
                else:
                    t.notes.append(f"values as varints in {TYPED_FIELDS[g.number]} ({g.length:,} bytes stored)")
                logical = g.length if t.dtype == "STRING" else t.nbytes  # one string per string_data field
                self.regions.append(Region(RegionKind.COMPRESSED, g.start, g.length, label, logical=logical))
            spans.append((g.start, g.end))
        return spans

    def sparse(self, f: Field, source: str, owner: str | None = None) -> None:
        """A SparseTensorProto: its logical tensor (not addressable) and its values and indices tensors."""
        dims: list[int] = []
        parts: list[tuple[str, _Tensor, Field]] = []
        for g in self.wire.fields(f.start, f.end):
            if g.number == 3:
                dims += [signed(v) for v in self.wire.packed(g, MAX_DIMS + 1)]
            elif g.number in (1, 2) and g.wire == LEN:
                role = "values" if g.number == 1 else "indices"
                parts.append((role, self.tensor(g, source), g))
        values = next((t for role, t, _ in parts if role == "values"), None)
        if values is None:
            raise self.error("a sparse tensor without values", f.start)
        name = owner or values.name
        shape = check_shape(self.probe, FORMAT, name, dims)
        logical = _Tensor(name, shape, values.dtype, dtypes.nbytes_for(values.dtype, _numel(shape)) or 0, None, source)
        logical.notes.append(f"sparse: {values.shape[0] if values.shape else 0:,} values stored")
        for role, t, _ in parts:
            t.name, t.source = f"{name}#{role}", "sparse part"
        self.tensors.insert(len(self.tensors) - len(parts), logical)
        children = [(g.start, g.end) for _, _, g in parts]
        self.fill(f.start, f.end, children, RegionKind.HEADER, f"sparse tensor header {name!r}"[:120])


def _kind(
    name: str, dtype: str, consumers: dict[str, list[_Consumer]], n: int, layer_outputs: dict[str, tuple[str, str]]
) -> tuple[TensorKind, _Consumer | None]:
    """What the graph does with a value: weight inputs make parameters, running statistics buffers; with the node
    input that says so (other state: the first node input it reaches, a Reshape's shape, a Pad's pads; None when no
    node takes it). An elementwise operand of one element is a parameter only where it is a layer's bias
    (`_added_bias`: a one-channel conv's)."""
    is_float = (dt := dtypes.lookup(dtype)) is not None and dt.kind is DKind.FLOAT
    seen: set[str] = set()
    stack, found, by, other = [(name, False)], TensorKind.OTHER, None, None
    while stack:
        value, dequantized = stack.pop()
        if value in seen or len(seen) > 64:
            continue
        seen.add(value)
        for c in consumers.get(value, ()):
            if c.op_type in PASS_THROUGH and c.index in (PASS_THROUGH[c.op_type] or (c.index,)):
                stack += [(o, dequantized or c.op_type == "DequantizeLinear") for o in c.outputs]
            elif c.index in BUFFER_INPUTS.get(c.op_type, ()):
                if found is TensorKind.OTHER:
                    found, by = TensorKind.BUFFER, c
            elif c.index in WEIGHT_INPUTS.get(c.op_type, ()) and (
                is_float or dequantized or c.op_type in INTEGER_WEIGHTS
            ):
                if c.op_type not in ELEMENTWISE or n > 1 or _added_bias(c, layer_outputs) is not None:
                    return TensorKind.PARAMETER, c
                other = other or c
            else:
                other = other or c
    return found, by or other


def _sniff(head: bytes, size: int) -> bool:
    """ir_version first, then ModelProto fields with their wire types, up to the graph field.

    Fields before the graph (producer, version, domain, doc string) are short; a long one (a TensorFlow
    SavedModel's meta graph is field 2 too) means another schema.
    """
    if len(head) < 2 or head[0] != 0x08 or not 0 < head[1] <= MAX_IR_VERSION:
        return False
    pos = 2
    while pos < len(head):
        pos, tag = _head_varint(head, pos)
        if tag is None:
            return False
        number, wire = tag >> 3, tag & 7
        if MODEL_FIELDS.get(number) != wire:
            return False
        pos, value = _head_varint(head, pos)
        if value is None:
            return False
        if number == 7:
            return pos + value <= size
        if wire == LEN:
            pos += value
    return False


def _head_varint(head: bytes, pos: int) -> tuple[int, int | None]:
    value = shift = 0
    for i in range(pos, min(pos + 10, len(head))):
        value |= (head[i] & 0x7F) << shift
        if not head[i] & 0x80:
            return i + 1, value
        shift += 7
    return pos, None


class OnnxLoader:
    """ONNX `ModelProto` files, with their external data files."""

    name: ClassVar[str] = FORMAT
    extensions: ClassVar[tuple[str, ...]] = (".onnx",)

    def claim(self, probe: Probe) -> Claim | None:
        return Claim.STRUCTURE if _sniff(probe.head, probe.size) else None

    def load(self, probe: Probe) -> Checkpoint:
        walk = _Walk(probe)
        walk.model()
        if "onnx.ir_version" not in walk.attributes:
            raise FormatError(probe.path, FORMAT, "no ir_version: not an ONNX model")
        findings: list[Finding] = []
        files: list[tuple[str, int]] = [(probe.path, probe.size)]
        regions = list(tile(walk.regions, probe.size, 0))
        externals = ExternalFiles(probe, files, regions, findings)
        try:
            tensors = [self._record(t, walk, externals) for t in walk.tensors]
            tensors = _named_by_scope(tensors)
        finally:
            externals.close()

        attributes = dict(walk.attributes)
        attributes["onnx.nodes"] = f"{walk.nodes:,}"
        top = sorted(walk.op_types.items(), key=lambda kv: -kv[1])[:12]
        attributes["onnx.op_types"] = ", ".join(f"{op} x{n}" for op, n in top) or "-"
        if len(files) > 1:
            attributes["onnx.external_files"] = ", ".join(os.path.basename(p) for p, _ in files[1:])
        return Checkpoint(
            probe.path, FORMAT, "onnx", tuple(files), tuple(tensors), tuple(regions), attributes, None, tuple(findings)
        )

    @staticmethod
    def _record(t: _Tensor, walk: _Walk, externals: ExternalFiles) -> TensorInfo:
        by = None
        if t.source in ("initializer", "subgraph initializer", "constant", "sparse initializer"):
            t.kind, by = _kind(t.name, t.dtype, walk.consumers, _numel(t.shape), walk.layer_outputs)
        file, offset = 0, t.offset
        if t.external is not None:
            file, offset = externals.place(t.name, t.external, t.dtype, t.shape, t.nbytes, t.notes)
        if t.kind is TensorKind.PARAMETER and t.name in walk.packed:
            _unpacked(t, walk.packed[t.name])
        layer = _exported_module(t.name, by, walk.consumers) if by is not None else None  # (`_named_by_scope`)
        return TensorInfo(
            t.name,
            t.shape,
            t.dtype,
            t.nbytes,
            offset,
            kind=t.kind,
            section=t.source,
            trainable=t.kind is TensorKind.PARAMETER,
            layer=layer,
            param=WEIGHT if layer is not None else None,
            file=file,
            notes=tuple(t.notes),
            use=_use(by, walk) if by is not None else t.use,
        )


# Layers whose bias an exporter adds to their output with an Add rather than give it to them (paddle2onnx's Linear and
# transposed convolutions, onnxruntime's early dynamic quantizer's ConvInteger: its float bias requantized, then added):
# such a bias is that layer's (`TensorInfo.use`: the layer's operator, input 'bias', its node)
BIAS_ADDED_TO = frozenset({"Conv", "ConvTranspose", "ConvInteger", "MatMul", "MatMulInteger", "Gemm"})
# an integer layer's output cast to float and scaled is still its output (onnxruntime's dynamic quantizer: ConvInteger
# or MatMulInteger, Cast, Mul by the input's and weight's scales, then the Add of the float bias)
RESCALED = frozenset({"Cast", "Mul"})


def _use(by: _Consumer, walk: _Walk) -> tuple[str, str, str, bool]:
    """What a value is to the node that makes it a weight: a layer's bias an Add adds to its output, a decomposed
    norm's scale or shift, else its input of the node."""
    return _added_bias(by, walk.layer_outputs) or _norm_operand(by, walk.normalized) or by.use()


def _added_bias(by: _Consumer, layer_outputs: dict[str, tuple[str, str]]) -> tuple[str, str, str, bool] | None:
    """The use of a value an Add adds to a layer's output (`BIAS_ADDED_TO`): that layer's bias; else None."""
    if by.op_type != "Add" or len(by.operands) != 2 or by.index > 1:
        return None
    layer = layer_outputs.get(by.operands[1 - by.index])
    return None if layer is None else (layer[0], "bias", layer[1], False)


# A norm an exporter writes as elementwise nodes (tf2onnx's export of a JAX LayerNorm, magika's: Sqrt, Reciprocal, Mul
# by the scale, Mul by x - mean, Add of the shift; a LayerNorm or RMSNorm divided by its Sqrt): op_type -> the inputs
# through which a normalized value (its 1/std, x/std, their product with the scale) makes the output one too (None:
# the op makes one of any input, a standard deviation)
NORMALIZING: dict[str, tuple[int, ...] | None] = {"Sqrt": None, "Reciprocal": (0,), "Div": (1,), "Mul": (0, 1)}
# the scale a Mul multiplies a normalized value by and the shift an Add adds to it: (operator, input) of a norm's
# weights, as `roles.ONNX_INPUT_ROLES` reads them
NORM_OPERANDS = {"Mul": ("DecomposedNorm", "scale"), "Add": ("DecomposedNorm", "bias")}
OPERANDS_KEPT = frozenset(NORM_OPERANDS)  # (the Add's also for `BIAS_ADDED_TO`)


def _normalizes(op_type: str, inputs: list[str], normalized: set[str]) -> bool:
    through = NORMALIZING[op_type]
    return through is None or any(i < len(inputs) and inputs[i] in normalized for i in through)


def _norm_operand(by: _Consumer, normalized: set[str]) -> tuple[str, str, str, bool] | None:
    """The use of a value a Mul multiplies a normalized value by (the norm's scale) or an Add adds to one (its shift),
    as a norm's (`NORM_OPERANDS`); else None."""
    if by.op_type not in NORM_OPERANDS or len(by.operands) != 2 or by.index > 1:
        return None
    if by.operands[1 - by.index] not in normalized:
        return None
    op, name = NORM_OPERANDS[by.op_type]
    return op, name, by.node, False


# torch.onnx's TorchScript exporter (dynamo=False: Optimum's exports, transformers.js' models) writes a Linear layer's
# weight as a new initializer `onnx::MatMul_N`, transposed, and names the node that reads it by its module's scope
# ('/bert/encoder/layer.0/attention/self/query/MatMul'): that scope is the module the weight is (its `layer`)
EXPORTED_WEIGHT_PREFIX = "onnx::"
SCOPED_WEIGHT_INPUTS = {"MatMul": 1, "Gemm": 1}  # op -> the input a layer's weight is
WEIGHT = "weight"
# The dynamo exporter (torch's default) names such an initializer `val_N` and says each node's module in its metadata
NAME_SCOPES = "pkg.torch.onnx.name_scopes"
EXPORTED_VALUE_PREFIX = "val_"


def _exported_module(name: str, by: _Consumer, consumers: dict[str, list[_Consumer]]) -> str | None:
    """The module an exporter-named weight belongs to, from the scope of the node reading it directly; else None.
    A scope names a module relative to its parent, or a Sequential's child with its parent's name before it
    ('/features/features.1/features.1.0/attn': `features.1.0.attn`)."""
    if SCOPED_WEIGHT_INPUTS.get(by.op_type) != by.index or by not in consumers.get(name, ()):  # (read directly)
        return None
    if name.startswith(EXPORTED_VALUE_PREFIX) and by.scope:  # (the dynamo exporter's, its module in the metadata)
        return by.scope if all(by.scope.split(".")) else None
    if not name.startswith(EXPORTED_WEIGHT_PREFIX) or not by.node.startswith("/"):  # (the TorchScript exporter's)
        return None
    scope = by.node.split("/")[1:-1]
    if not scope or not all(scope):
        return None
    path = scope[0]
    for part in scope[1:]:
        path = part if part.startswith(path + ".") else f"{path}.{part}"
    return path


def _named_by_scope(tensors: list[TensorInfo]) -> list[TensorInfo]:
    """The tensors, with a module (`layer`) kept only where it is that module's one weight: a module whose scope reads
    several exported weights (a functional call inside it: torchvision's Swin attention) or that the file holds a
    weight of under its own name is none of theirs."""
    claimed = Counter(t.layer for t in tensors if t.layer is not None)
    if not claimed:
        return tensors
    named = {t.name for t in tensors}
    kept = {m for m, n in claimed.items() if n == 1 and f"{m}.{WEIGHT}" not in named}
    return [t if t.layer is None or t.layer in kept else replace(t, layer=None, param=None) for t in tensors]


def _unpacked(t: _Tensor, words: dict[str, int]) -> None:
    """A MatMulNBits B made the (N, K) values it packs, in torch's Linear orientation (out, in), where its stored
    shape is the one its attributes give (uint8 (N, blocks, block bytes)); else as it is."""
    k, n, bits, block = (words.get(key, 0) for key in ("K", "N", "bits", "block_size"))
    dtype = PACKED_DTYPES.get(bits)
    if dtype is None or t.dtype != "U8" or min(k, n, block) <= 0 or block * bits % 8:
        return
    if t.shape != (n, -(-k // block), block * bits // 8):
        return
    t.notes.append(f"MatMulNBits weight stored packed as {t.dtype} {t.shape}: {8 // bits} {bits}-bit values a byte, "
                   f"{block} a block, {k:,} inputs a row")  # fmt: skip
    t.shape, t.dtype = (n, k), dtype


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n
