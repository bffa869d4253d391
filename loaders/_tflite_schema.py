"""The TensorFlow Lite schema (`tensorflow/compiler/mlir/lite/schema/schema.fbs`, TF 2.21's `schema_py_generated.py`):
its tables' field slots, its operator names, and a walk of a model into plain records through `loaders._flatbuffers`.

Only what the loader needs is read: sizes, types, names, indices, quantization parameters (their counts, and the
value of a per-tensor scale and zero point), and where every object lies. Buffer data is measured, never read.
"""

from __future__ import annotations

import struct

from inspector.errors import LimitExceededError, TruncatedFileError
from inspector.recordtype import field, record
from loaders._flatbuffers import FlatBuffer, Table
from loaders.base import MAX_DIMS, MAX_TENSORS

IDENTIFIER = b"TFL3"
MAX_SUBGRAPHS = 100_000
MAX_OPERATORS = 10_000_000
MAX_BUFFERS = 10_000_000
MAX_OPERATOR_IO = 1_000_000  # inputs or outputs of one operator or subgraph
MAX_ENTRIES = 100_000  # metadata, signatures, external buffers, operator codes, quantization channels' counts...
MAX_QUANT = 1 << 26  # scales of one tensor (per channel)
# what the bytes of a recorded span are (`FlatBuffer.spans`), beside the structure itself
NAMES, DESCRIPTION, QUANTIZATION, OPTIONS, SPARSITY = "names", "description", "quantization", "options", "sparsity"


def _slots(*names: str) -> dict[str, int]:
    """A table's fields by name -> slot (the schema's declaration order: vtable entry `4 + 2 * slot`)."""
    return {name: slot for slot, name in enumerate(names) if name}


# Tables of schema.fbs (TF 2.21), their fields in declaration order ('' for a deprecated field's slot).
MODEL = _slots(
    *"version operator_codes subgraphs description buffers metadata_buffer metadata signature_defs".split(),
    *"external_buffer_groups external_buffers".split(),
)
OPERATOR_CODE = _slots("deprecated_builtin_code", "custom_code", "version", "builtin_code")
SUBGRAPH = _slots("tensors", "inputs", "outputs", "operators", "name", "debug_metadata_index")
TENSOR = _slots(
    *"shape type buffer name quantization is_variable sparsity shape_signature has_rank variant_tensors".split(),
    "external_buffer",
)
OPERATOR = _slots(
    *"opcode_index inputs outputs builtin_options_type builtin_options custom_options custom_options_format".split(),
    *"mutating_variable_inputs intermediates large_custom_options_offset large_custom_options_size".split(),
    *"builtin_options_2_type builtin_options_2 debug_metadata_index".split(),
)
BUFFER = _slots("data", "offset", "size")
METADATA = _slots("name", "buffer")
SIGNATURE_DEF = _slots("inputs", "outputs", "signature_key", "", "subgraph_index")
TENSOR_MAP = _slots("name", "tensor_index")
QUANTIZATION_PARAMETERS = _slots("min", "max", "scale", "zero_point", "details_type", "details", "quantized_dimension")
CUSTOM_QUANTIZATION, BLOCKWISE_QUANTIZATION = 1, 2  # QuantizationDetails
BLOCKWISE = _slots("scales", "zero_points", "block_size")  # (tensor indices, and the block's values)
SPARSITY_PARAMETERS = _slots("traversal_order", "block_map", "dim_metadata")
DIMENSION_METADATA = _slots(
    "format", "dense_size", "array_segments_type", "array_segments", "array_indices_type", "array_indices"
)
SPARSE_INDEX_WIDTHS = {1: 4, 2: 2, 3: 1}  # SparseIndexVector: Int32Vector, Uint16Vector, Uint8Vector (values: slot 0)
VARIANT_SUB_TYPE = _slots("shape", "type", "has_rank")
EXTERNAL_BUFFER_GROUP = _slots("name")
EXTERNAL_BUFFER = _slots("id", "group", "offset", "length", "packing")
PLACEHOLDER_FOR_GREATER_OP_CODES = 127  # deprecated_builtin_code holds this when builtin_code says the operator

# Operator options holding vectors or strings: (union: 1 builtin_options, 2 builtin_options_2, type) -> (slot, bytes
# an element; 0 for a string) of each (BuiltinOptions: ConcatEmbeddings, Reshape, Squeeze, VarHandle, Bucketize;
# BuiltinOptions2: the StableHLO options, StableHLOComposite). Their other fields are scalars, inline.
OPTION_VECTORS: dict[tuple[int, int], tuple[tuple[int, int], ...]] = {
    (1, 3): ((1, 4), (2, 4)),
    (1, 17): ((0, 4),),
    (1, 30): ((0, 4),),
    (1, 111): ((0, 0), (1, 0)),
    (1, 115): ((0, 4),),
    (2, 2): ((0, 8),),
    (2, 3): ((0, 8), (1, 8), (2, 8)),
    (2, 4): ((0, 8), (1, 8), (2, 8), (3, 8), (4, 1), (7, 8), (10, 8), (13, 8), (16, 4)),
    (2, 5): ((0, 0), (2, 0), (4, 4), (5, 1)),
    (2, 6): ((0, 8),),
    (2, 7): ((1, 8), (2, 8), (3, 8)),
    (2, 9): ((0, 8),),
    (2, 10): ((0, 8), (1, 8), (2, 8)),
    (2, 12): ((0, 8), (1, 8), (2, 8), (3, 8), (4, 4)),
    (2, 13): ((0, 8), (1, 8), (2, 8), (3, 8), (4, 8)),
    (2, 16): ((0, 8), (1, 8), (2, 8), (4, 8)),
    (2, 17): ((0, 8),),
    (2, 21): ((0, 0), (2, 1)),
}
# Options naming the subgraphs an operator runs: (union, type) -> their slots (CallOptions subgraph, IfOptions then
# and else, WhileOptions cond and body, CallOnceOptions init; StablehloWhileOptions cond and body,
# StableHLOCompositeOptions decomposition)
SUBGRAPH_SLOTS: dict[tuple[int, int], tuple[int, ...]] = {
    (1, 16): (0,),
    (1, 92): (0, 1),
    (1, 93): (0, 1),
    (1, 103): (0,),
    (2, 15): (0, 1),
    (2, 21): (1,),
}
# Options naming the subgraphs an operator runs in a vector of ints: (union, type) -> its slot (StablehloCaseOptions
# branch_subgraph_indices)
SUBGRAPH_VECTORS: dict[tuple[int, int], int] = {(2, 23): 0}
VAR_HANDLE_OPTIONS, SHARED_NAME = (1, 111), 1  # VarHandleOptions: container, shared_name (the variable's name)

# BuiltinOperator, by code (TF 2.21)
BUILTIN_OPERATORS = (
    "ADD", "AVERAGE_POOL_2D", "CONCATENATION", "CONV_2D", "DEPTHWISE_CONV_2D", "DEPTH_TO_SPACE", "DEQUANTIZE",
    "EMBEDDING_LOOKUP", "FLOOR", "FULLY_CONNECTED", "HASHTABLE_LOOKUP", "L2_NORMALIZATION", "L2_POOL_2D",
    "LOCAL_RESPONSE_NORMALIZATION", "LOGISTIC", "LSH_PROJECTION", "LSTM", "MAX_POOL_2D", "MUL", "RELU",
    "RELU_N1_TO_1", "RELU6", "RESHAPE", "RESIZE_BILINEAR", "RNN", "SOFTMAX", "SPACE_TO_DEPTH", "SVDF", "TANH",
    "CONCAT_EMBEDDINGS", "SKIP_GRAM", "CALL", "CUSTOM", "EMBEDDING_LOOKUP_SPARSE", "PAD",
    "UNIDIRECTIONAL_SEQUENCE_RNN", "GATHER", "BATCH_TO_SPACE_ND", "SPACE_TO_BATCH_ND", "TRANSPOSE", "MEAN", "SUB",
    "DIV", "SQUEEZE", "UNIDIRECTIONAL_SEQUENCE_LSTM", "STRIDED_SLICE", "BIDIRECTIONAL_SEQUENCE_RNN", "EXP",
    "TOPK_V2", "SPLIT", "LOG_SOFTMAX", "DELEGATE", "BIDIRECTIONAL_SEQUENCE_LSTM", "CAST", "PRELU", "MAXIMUM",
    "ARG_MAX", "MINIMUM", "LESS", "NEG", "PADV2", "GREATER", "GREATER_EQUAL", "LESS_EQUAL", "SELECT", "SLICE", "SIN",
    "TRANSPOSE_CONV", "SPARSE_TO_DENSE", "TILE", "EXPAND_DIMS", "EQUAL", "NOT_EQUAL", "LOG", "SUM", "SQRT", "RSQRT",
    "SHAPE", "POW", "ARG_MIN", "FAKE_QUANT", "REDUCE_PROD", "REDUCE_MAX", "PACK", "LOGICAL_OR", "ONE_HOT",
    "LOGICAL_AND", "LOGICAL_NOT", "UNPACK", "REDUCE_MIN", "FLOOR_DIV", "REDUCE_ANY", "SQUARE", "ZEROS_LIKE", "FILL",
    "FLOOR_MOD", "RANGE", "RESIZE_NEAREST_NEIGHBOR", "LEAKY_RELU", "SQUARED_DIFFERENCE", "MIRROR_PAD", "ABS",
    "SPLIT_V", "UNIQUE", "CEIL", "REVERSE_V2", "ADD_N", "GATHER_ND", "COS", "WHERE", "RANK", "ELU",
    "REVERSE_SEQUENCE", "MATRIX_DIAG", "QUANTIZE", "MATRIX_SET_DIAG", "ROUND", "HARD_SWISH", "IF", "WHILE",
    "NON_MAX_SUPPRESSION_V4", "NON_MAX_SUPPRESSION_V5", "SCATTER_ND", "SELECT_V2", "DENSIFY", "SEGMENT_SUM",
    "BATCH_MATMUL", "PLACEHOLDER_FOR_GREATER_OP_CODES", "CUMSUM", "CALL_ONCE", "BROADCAST_TO", "RFFT2D", "CONV_3D",
    "IMAG", "REAL", "COMPLEX_ABS", "HASHTABLE", "HASHTABLE_FIND", "HASHTABLE_IMPORT", "HASHTABLE_SIZE", "REDUCE_ALL",
    "CONV_3D_TRANSPOSE", "VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE", "BROADCAST_ARGS",
    "RANDOM_STANDARD_NORMAL", "BUCKETIZE", "RANDOM_UNIFORM", "MULTINOMIAL", "GELU", "DYNAMIC_UPDATE_SLICE",
    "RELU_0_TO_1", "UNSORTED_SEGMENT_PROD", "UNSORTED_SEGMENT_MAX", "UNSORTED_SEGMENT_SUM", "ATAN2",
    "UNSORTED_SEGMENT_MIN", "SIGN", "BITCAST", "BITWISE_XOR", "RIGHT_SHIFT", "STABLEHLO_LOGISTIC", "STABLEHLO_ADD",
    "STABLEHLO_DIVIDE", "STABLEHLO_MULTIPLY", "STABLEHLO_MAXIMUM", "STABLEHLO_RESHAPE", "STABLEHLO_CLAMP",
    "STABLEHLO_CONCATENATE", "STABLEHLO_BROADCAST_IN_DIM", "STABLEHLO_CONVOLUTION", "STABLEHLO_SLICE",
    "STABLEHLO_CUSTOM_CALL", "STABLEHLO_REDUCE", "STABLEHLO_ABS", "STABLEHLO_AND", "STABLEHLO_COSINE",
    "STABLEHLO_EXPONENTIAL", "STABLEHLO_FLOOR", "STABLEHLO_LOG", "STABLEHLO_MINIMUM", "STABLEHLO_NEGATE",
    "STABLEHLO_OR", "STABLEHLO_POWER", "STABLEHLO_REMAINDER", "STABLEHLO_RSQRT", "STABLEHLO_SELECT",
    "STABLEHLO_SUBTRACT", "STABLEHLO_TANH", "STABLEHLO_SCATTER", "STABLEHLO_COMPARE", "STABLEHLO_CONVERT",
    "STABLEHLO_DYNAMIC_SLICE", "STABLEHLO_DYNAMIC_UPDATE_SLICE", "STABLEHLO_PAD", "STABLEHLO_IOTA",
    "STABLEHLO_DOT_GENERAL", "STABLEHLO_REDUCE_WINDOW", "STABLEHLO_SORT", "STABLEHLO_WHILE", "STABLEHLO_GATHER",
    "STABLEHLO_TRANSPOSE", "DILATE", "STABLEHLO_RNG_BIT_GENERATOR", "REDUCE_WINDOW", "STABLEHLO_COMPOSITE",
    "STABLEHLO_SHIFT_LEFT", "STABLEHLO_CBRT", "STABLEHLO_CASE",
)  # fmt: skip
CUSTOM = "CUSTOM"


@record(slots=True)
class Buffer:
    """One entry of `Model.buffers`: its data's first byte and length (inline, or at an absolute offset past the
    flatbuffer in a model over 2 GB), or None and 0 when it holds nothing."""

    index: int
    start: int | None
    nbytes: int
    outside: bool = False  # the data lies past the flatbuffer (Buffer.offset/size)


@record(slots=True)
class Quantization:
    """A tensor's QuantizationParameters: counts, and the one scale and zero point of a per-tensor quantization."""

    scales: int = 0
    zero_points: int = 0
    ranges: int = 0  # min/max pairs (kept for importing back into TensorFlow)
    axis: int = 0
    scale: float | None = None
    zero_point: int | None = None
    custom: int | None = None  # bytes of a CustomQuantization
    blockwise: tuple[int, int, int] | None = None  # (scales tensor, zero points tensor, block size)


@record(slots=True)
class Tensor:
    index: int
    name: str
    shape: tuple[int, ...]
    signature: tuple[int, ...] | None  # shape_signature: -1 for a dimension known only at run time
    type: int
    buffer: int
    variable: bool
    quantization: Quantization | None
    sparse: int | None  # dimensions of a sparse tensor's traversal order (its data holds the non-zero values)
    external: int  # ExternalBuffer id, 0 when none


@record(slots=True)
class Operator:
    index: int
    code: str  # the builtin operator's name, or a custom operator's custom_code
    inputs: tuple[int, ...]  # tensor indices; -1 for an optional input left out
    outputs: tuple[int, ...]
    large_options: tuple[int, int] | None = None  # (offset, size) of custom options past the flatbuffer
    calls: tuple[int, ...] = ()  # the subgraphs it runs (WHILE's cond and body, IF's branches, CALL_ONCE's init...)
    variable: str | None = None  # VAR_HANDLE: the name of the resource variable it gives a handle to


@record(slots=True)
class Subgraph:
    index: int
    name: str
    tensors: list[Tensor]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    operators: list[Operator]


@record(slots=True)
class Model:
    version: int = 0
    description: str | None = None
    subgraphs: list[Subgraph] = field(default_factory=list)
    buffers: list[Buffer] = field(default_factory=list)
    metadata: list[tuple[str, int]] = field(default_factory=list)  # (name, buffer index)
    signatures: list[tuple[str, int, tuple[str, ...], tuple[str, ...]]] = field(default_factory=list)
    external: dict[int, tuple[str, int, int]] = field(default_factory=dict)  # id -> (group name, offset, length)


def read_model(fb: FlatBuffer) -> Model:
    """The model at the buffer's root, every object's span recorded in `fb.spans`."""
    fb.span(0, 8)  # root offset and file identifier
    root = fb.root("model")
    m = Model(version=fb.scalar(root, MODEL["version"], "I"))
    m.description = fb.string(root, MODEL["description"], "description", DESCRIPTION)
    codes = [_operator_code(fb, t) for t in fb.tables(root, MODEL["operator_codes"], "operator codes", MAX_ENTRIES)]
    m.buffers = [_buffer(fb, t, i) for i, t in enumerate(fb.tables(root, MODEL["buffers"], "buffers", MAX_BUFFERS))]
    for t in fb.tables(root, MODEL["metadata"], "metadata", MAX_ENTRIES):
        name = fb.string(t, METADATA["name"], "metadata name", NAMES) or ""
        m.metadata.append((name, fb.scalar(t, METADATA["buffer"], "I")))
    for index in fb.numbers(root, MODEL["metadata_buffer"], "i", "metadata buffers", MAX_ENTRIES):
        m.metadata.append(("", index))  # (the deprecated list: buffers without a name)
    subgraphs = fb.tables(root, MODEL["subgraphs"], "subgraphs", MAX_SUBGRAPHS)
    m.subgraphs = [_subgraph(fb, t, i, codes) for i, t in enumerate(subgraphs)]
    m.signatures = [_signature(fb, t) for t in fb.tables(root, MODEL["signature_defs"], "signatures", MAX_ENTRIES)]
    groups = [
        fb.string(t, EXTERNAL_BUFFER_GROUP["name"], "external buffer group", NAMES) or ""
        for t in fb.tables(root, MODEL["external_buffer_groups"], "external buffer groups", MAX_ENTRIES)
    ]
    for t in fb.tables(root, MODEL["external_buffers"], "external buffers", MAX_BUFFERS):
        group = fb.scalar(t, EXTERNAL_BUFFER["group"], "I")
        name = groups[group] if group < len(groups) else f"group {group}"
        offset, length = fb.scalar(t, EXTERNAL_BUFFER["offset"], "Q"), fb.scalar(t, EXTERNAL_BUFFER["length"], "Q")
        fb.string(t, EXTERNAL_BUFFER["packing"], "external buffer packing", NAMES)
        m.external[fb.scalar(t, EXTERNAL_BUFFER["id"], "I")] = (name, offset, length)
    return m


def _operator_code(fb: FlatBuffer, t: Table) -> str:
    """The operator's name: the larger of the two builtin code fields (as TF Lite's `GetBuiltinCode` reads them)."""
    deprecated = fb.scalar(t, OPERATOR_CODE["deprecated_builtin_code"], "b")
    code = max(deprecated, fb.scalar(t, OPERATOR_CODE["builtin_code"], "i"))
    custom = fb.string(t, OPERATOR_CODE["custom_code"], "custom operator name", NAMES)
    if code < len(BUILTIN_OPERATORS) and BUILTIN_OPERATORS[code] == CUSTOM and custom:
        return custom[:200]
    return BUILTIN_OPERATORS[code] if 0 <= code < len(BUILTIN_OPERATORS) else f"BUILTIN_{code}"


def _buffer(fb: FlatBuffer, t: Table, index: int) -> Buffer:
    data = fb.vector(t, BUFFER["data"], 1, f"data of buffer {index}")
    offset, size = fb.scalar(t, BUFFER["offset"], "Q"), fb.scalar(t, BUFFER["size"], "Q")
    if data is not None and data[1]:
        return Buffer(index, data[0], data[1])
    if offset > 1:  # (0 and 1 are no offsets: the exporter's convention)
        _outside(fb, offset, size, f"data of buffer {index}")
        return Buffer(index, offset, size, outside=True)
    return Buffer(index, None, 0)


def _subgraph(fb: FlatBuffer, t: Table, index: int, codes: list[str]) -> Subgraph:
    name = fb.string(t, SUBGRAPH["name"], "subgraph name", NAMES) or ("main" if index == 0 else f"subgraph {index}")
    tensors = fb.tables(t, SUBGRAPH["tensors"], "tensors", MAX_TENSORS)
    inputs = fb.numbers(t, SUBGRAPH["inputs"], "i", "subgraph inputs", MAX_OPERATOR_IO)
    outputs = fb.numbers(t, SUBGRAPH["outputs"], "i", "subgraph outputs", MAX_OPERATOR_IO)
    operators = fb.tables(t, SUBGRAPH["operators"], "operators", MAX_OPERATORS)
    return Subgraph(
        index,
        name,
        [_tensor(fb, x, i) for i, x in enumerate(tensors)],
        inputs,
        outputs,
        [_operator(fb, x, i, codes) for i, x in enumerate(operators)],
    )


def _tensor(fb: FlatBuffer, t: Table, index: int) -> Tensor:
    shape = fb.numbers(t, TENSOR["shape"], "i", "tensor shape", MAX_DIMS)
    signature = fb.numbers(t, TENSOR["shape_signature"], "i", "tensor shape signature", MAX_DIMS) or None
    quantization = fb.sub(t, TENSOR["quantization"], "quantization parameters")
    sparsity = fb.sub(t, TENSOR["sparsity"], "sparsity parameters")
    for variant in fb.tables(t, TENSOR["variant_tensors"], "variant subtypes", MAX_ENTRIES):
        fb.numbers(variant, VARIANT_SUB_TYPE["shape"], "i", "variant subtype shape", MAX_DIMS)
    return Tensor(
        index,
        fb.string(t, TENSOR["name"], "tensor name", NAMES) or "",
        shape,
        signature,
        fb.scalar(t, TENSOR["type"], "b"),
        fb.scalar(t, TENSOR["buffer"], "I"),
        bool(fb.scalar(t, TENSOR["is_variable"], "B")),
        None if quantization is None else _quantization(fb, quantization),
        None if sparsity is None else _sparsity(fb, sparsity),
        fb.scalar(t, TENSOR["external_buffer"], "I"),
    )


def _quantization(fb: FlatBuffer, t: Table) -> Quantization:
    q = Quantization(axis=fb.scalar(t, QUANTIZATION_PARAMETERS["quantized_dimension"], "i"))
    scales = fb.vector(t, QUANTIZATION_PARAMETERS["scale"], 4, "quantization scales")
    zero_points = fb.vector(t, QUANTIZATION_PARAMETERS["zero_point"], 8, "quantization zero points")
    for found, width in ((scales, 4), (zero_points, 8)):
        if found is not None:
            fb.span(found[0], found[1] * width, QUANTIZATION)
    q.scales, q.zero_points = (0 if v is None else v[1] for v in (scales, zero_points))
    if scales is not None and scales[1] == 1:
        q.scale = _float(fb.read(scales[0], 4, "quantization scale"))
    if zero_points is not None and zero_points[1] == 1:
        q.zero_point = int.from_bytes(fb.read(zero_points[0], 8, "zero point"), "little", signed=True)
    for slot in (QUANTIZATION_PARAMETERS["min"], QUANTIZATION_PARAMETERS["max"]):
        found = fb.vector(t, slot, 4, "quantization range")
        if found is not None:
            fb.span(found[0], found[1] * 4, QUANTIZATION)
            q.ranges = max(q.ranges, found[1])
    if max(q.scales, q.zero_points, q.ranges) > MAX_QUANT:
        raise LimitExceededError(fb.probe.path, fb.fmt, f"a tensor has over {MAX_QUANT:,} quantization parameters")
    details = fb.sub(t, QUANTIZATION_PARAMETERS["details"], "quantization details")
    kind = fb.scalar(t, QUANTIZATION_PARAMETERS["details_type"], "B")
    if details is not None and kind == CUSTOM_QUANTIZATION:
        custom = fb.vector(details, 0, 1, "custom quantization")
        q.custom = 0 if custom is None else custom[1]
        if custom is not None:
            fb.span(custom[0], custom[1], QUANTIZATION)
    elif details is not None and kind == BLOCKWISE_QUANTIZATION:
        q.blockwise = tuple(fb.scalar(details, BLOCKWISE[k], "i") for k in ("scales", "zero_points", "block_size"))  # type: ignore[assignment]
    return q


def _float(data: bytes) -> float:
    return float(struct.unpack("<f", data)[0])


def _sparsity(fb: FlatBuffer, t: Table) -> int:
    """The sparsity parameters' index vectors recorded (their bytes are the sparse tensor's index); the traversal
    order's length returned."""
    order = fb.numbers(t, SPARSITY_PARAMETERS["traversal_order"], "i", "traversal order", MAX_DIMS, SPARSITY)
    fb.numbers(t, SPARSITY_PARAMETERS["block_map"], "i", "block map", MAX_DIMS, SPARSITY)
    for dim in fb.tables(t, SPARSITY_PARAMETERS["dim_metadata"], "dimension metadata", MAX_DIMS):
        for kind_slot, slot in (("array_segments_type", "array_segments"), ("array_indices_type", "array_indices")):
            width = SPARSE_INDEX_WIDTHS.get(fb.scalar(dim, DIMENSION_METADATA[kind_slot], "B"))
            vector = fb.sub(dim, DIMENSION_METADATA[slot], "sparse index vector")
            found = None if vector is None or width is None else fb.vector(vector, 0, width, "sparse indices")
            if found is not None:
                fb.span(found[0], found[1] * (width or 0), SPARSITY)
    return len(order)


def _operator(fb: FlatBuffer, t: Table, index: int, codes: list[str]) -> Operator:
    opcode = fb.scalar(t, OPERATOR["opcode_index"], "I")
    if opcode >= len(codes):
        raise fb.error(f"operator {index} has operator code {opcode} of {len(codes)}", t.pos)
    inputs = fb.numbers(t, OPERATOR["inputs"], "i", "operator inputs", MAX_OPERATOR_IO)
    outputs = fb.numbers(t, OPERATOR["outputs"], "i", "operator outputs", MAX_OPERATOR_IO)
    calls: tuple[int, ...] = ()
    variable = None
    for union, type_slot, slot in ((1, "builtin_options_type", "builtin_options"),
                                   (2, "builtin_options_2_type", "builtin_options_2")):  # fmt: skip
        options = fb.sub(t, OPERATOR[slot], "operator options")
        if options is not None:
            kind = (union, fb.scalar(t, OPERATOR[type_slot], "B"))
            strings = _options(fb, options, OPTION_VECTORS.get(kind, ()))
            calls += tuple(fb.scalar(options, s, "I") for s in SUBGRAPH_SLOTS.get(kind, ()))
            if kind in SUBGRAPH_VECTORS:
                calls += fb.numbers(options, SUBGRAPH_VECTORS[kind], "I", "branch subgraphs", MAX_ENTRIES, OPTIONS)
            variable = strings.get(SHARED_NAME) if kind == VAR_HANDLE_OPTIONS else variable
    custom = fb.vector(t, OPERATOR["custom_options"], 1, "custom options")
    if custom is not None:
        fb.span(custom[0], custom[1], OPTIONS)
    large = None
    offset = fb.scalar(t, OPERATOR["large_custom_options_offset"], "Q")
    if offset > 1:  # custom options past the flatbuffer (a model over 2 GB)
        large = (offset, fb.scalar(t, OPERATOR["large_custom_options_size"], "Q"))
        _outside(fb, *large, "large custom options")
    fb.numbers(t, OPERATOR["mutating_variable_inputs"], "B", "mutating variable inputs", MAX_OPERATOR_IO)
    fb.numbers(t, OPERATOR["intermediates"], "i", "intermediates", MAX_OPERATOR_IO)
    return Operator(index, codes[opcode], inputs, outputs, large, calls, variable)


def _outside(fb: FlatBuffer, offset: int, size: int, what: str) -> None:
    """Data at an absolute offset past the flatbuffer ends inside the file."""
    if offset + size > fb.probe.size:
        raise TruncatedFileError(fb.probe.path, fb.fmt, f"{what} at byte {offset:,} ({size:,} bytes) ends past the "
                                 f"file's {fb.probe.size:,} bytes", offset)  # fmt: skip


def _options(fb: FlatBuffer, t: Table, vectors: tuple[tuple[int, int], ...]) -> dict[int, str]:
    """The vectors and strings an options table holds (its table is recorded by `FlatBuffer.table`): its strings by
    slot returned."""
    strings = {}
    for slot, width in vectors:
        if width == 0:
            text = fb.string(t, slot, "option", OPTIONS)
            if text is not None:
                strings[slot] = text
            continue
        found = fb.vector(t, slot, width, "option values")
        if found is not None:
            fb.span(found[0], found[1] * width, OPTIONS)
    return strings


def _signature(fb: FlatBuffer, t: Table) -> tuple[str, int, tuple[str, ...], tuple[str, ...]]:
    """(key, subgraph, input names, output names) of a SignatureDef."""
    names = []
    for slot in ("inputs", "outputs"):
        maps = fb.tables(t, SIGNATURE_DEF[slot], "signature tensors", MAX_OPERATOR_IO)
        names.append(tuple(fb.string(x, TENSOR_MAP["name"], "signature tensor name", NAMES) or "" for x in maps))
    key = fb.string(t, SIGNATURE_DEF["signature_key"], "signature key", NAMES) or ""
    return key, fb.scalar(t, SIGNATURE_DEF["subgraph_index"], "I"), names[0], names[1]
