"""What reads each tensor of a TensorFlow Lite model (`loaders.tflite`): its subgraphs' operators, read as the TF Lite
kernels read their inputs, give each constant its kind (a weight, an RNN's state, other state), its layer (the scope
the converter's tensor names keep) and, for a model of resource variables, whether a variable is the model's
(trainable or not) or an optimizer's.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from math import prod

from inspector import dtypes
from inspector.dtypes import DKind
from inspector.errors import FormatError
from inspector.records import TensorKind
from inspector.recordtype import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from inspector.probe import Probe
    from loaders._tflite_schema import Model, Operator, Subgraph, Tensor

MAX_HOPS = 64  # values a constant is followed through (PASS_THROUGH) to find what reads it

# Operator -> its inputs' names (the TF Lite kernels' tensor index constants: conv.cc, fully_connected.cc,
# lstm_shared.h, bidirectional_sequence_lstm.cc, svdf.cc...): what a constant is to the operator reading it.
LSTM_INPUTS = (
    *"input input_to_input_weights input_to_forget_weights input_to_cell_weights input_to_output_weights".split(),
    *"recurrent_to_input_weights recurrent_to_forget_weights recurrent_to_cell_weights".split(),
    *"recurrent_to_output_weights cell_to_input_weights cell_to_forget_weights cell_to_output_weights".split(),
    *"input_gate_bias forget_gate_bias cell_gate_bias output_gate_bias projection_weights projection_bias".split(),
    *"output_state cell_state input_layer_norm_coefficients forget_layer_norm_coefficients".split(),
    *"cell_layer_norm_coefficients output_layer_norm_coefficients".split(),
)
_CELL = LSTM_INPUTS[1:18]  # a direction's weights and biases
_AUX = LSTM_INPUTS[1:5]  # input_to_{input,forget,cell,output}_weights
BIDIRECTIONAL_LSTM_INPUTS = (
    "input",
    *(f"fw_{n}" for n in _CELL),
    *(f"bw_{n}" for n in _CELL),
    *"fw_output_state fw_cell_state bw_output_state bw_cell_state aux_input".split(),
    *(f"fw_aux_{n}" for n in _AUX),
    *(f"bw_aux_{n}" for n in _AUX),
)
REDUCTIONS = "MEAN SUM REDUCE_MAX REDUCE_MIN REDUCE_PROD REDUCE_ANY REDUCE_ALL ARG_MAX ARG_MIN".split()
RNN_INPUTS = ("input", "input_weights", "recurrent_weights", "bias", "hidden_state")
OP_INPUTS: dict[str, tuple[str, ...]] = {
    "CONV_2D": ("input", "filter", "bias"),
    "DEPTHWISE_CONV_2D": ("input", "filter", "bias"),
    "CONV_3D": ("input", "filter", "bias"),
    "TRANSPOSE_CONV": ("output_shape", "weights", "input", "bias"),
    "CONV_3D_TRANSPOSE": ("output_shape", "filter", "input", "bias"),
    "FULLY_CONNECTED": ("input", "weights", "bias"),
    "BATCH_MATMUL": ("lhs", "rhs"),
    "STABLEHLO_DOT_GENERAL": ("lhs", "rhs"),
    "EMBEDDING_LOOKUP": ("lookup", "value"),
    "GATHER": ("params", "indices"),
    "GATHER_ND": ("params", "indices"),
    "PRELU": ("input", "alpha"),
    "LSTM": LSTM_INPUTS,
    "UNIDIRECTIONAL_SEQUENCE_LSTM": LSTM_INPUTS,
    "BIDIRECTIONAL_SEQUENCE_LSTM": BIDIRECTIONAL_LSTM_INPUTS,
    "RNN": RNN_INPUTS,
    "UNIDIRECTIONAL_SEQUENCE_RNN": RNN_INPUTS,
    "BIDIRECTIONAL_SEQUENCE_RNN": tuple(
        "input fw_weights fw_recurrent_weights fw_bias fw_hidden_state bw_weights bw_recurrent_weights bw_bias "
        "bw_hidden_state aux_input fw_aux_weights bw_aux_weights".split()
    ),
    "SVDF": ("input", "weights_feature", "weights_time", "bias", "state"),
    "ASSIGN_VARIABLE": ("resource", "value"),
    "READ_VARIABLE": ("resource",),
    # MediaPipe's custom operators (mediapipe/util/tflite/operations/: transpose_conv_bias.cc)
    "Convolution2DTransposeBias": ("input", "weights", "bias"),
    **{op: ("input1", "input2") for op in ("ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE")},
    # operators whose other inputs are constants of the graph
    "RESHAPE": ("input", "shape"),
    "TRANSPOSE": ("input", "perm"),
    "PAD": ("input", "paddings"),
    "PADV2": ("input", "paddings", "constant_values"),
    "MIRROR_PAD": ("input", "paddings"),
    "STRIDED_SLICE": ("input", "begin", "end", "strides"),
    "SLICE": ("input", "begin", "size"),
    "EXPAND_DIMS": ("input", "axis"),
    "SPLIT": ("axis", "input"),
    "SPLIT_V": ("input", "size_splits", "axis"),
    "TILE": ("input", "multiples"),
    "BROADCAST_TO": ("input", "shape"),
    "FILL": ("dims", "value"),
    "RANGE": ("start", "limit", "delta"),
    "RESIZE_BILINEAR": ("input", "size"),
    "RESIZE_NEAREST_NEIGHBOR": ("input", "size"),
    "SELECT_V2": ("condition", "x", "y"),
    **{op: ("input", "axis") for op in REDUCTIONS},
}
_LSTM_WEIGHTS = (*range(1, 18), *range(20, 24))
# Operator -> the input positions holding weights (parameters, whatever their type: quantized models' int8 weights
# and int32 biases are weights)
WEIGHT_INPUTS: dict[str, tuple[int, ...]] = {
    "CONV_2D": (1, 2),
    "DEPTHWISE_CONV_2D": (1, 2),
    "CONV_3D": (1, 2),
    "TRANSPOSE_CONV": (1, 3),
    "CONV_3D_TRANSPOSE": (1, 3),
    "FULLY_CONNECTED": (1, 2),
    "BATCH_MATMUL": (0, 1),
    "STABLEHLO_DOT_GENERAL": (0, 1),  # (a matrix product of the converter's StableHLO ops: EXPERIMENTAL_STABLEHLO_OPS)
    "EMBEDDING_LOOKUP": (1,),
    "GATHER": (0,),
    "GATHER_ND": (0,),
    "PRELU": (1,),
    "LSTM": _LSTM_WEIGHTS,
    "UNIDIRECTIONAL_SEQUENCE_LSTM": _LSTM_WEIGHTS,
    "BIDIRECTIONAL_SEQUENCE_LSTM": (*range(1, 35), *range(40, 48)),
    "RNN": (1, 2, 3),
    "UNIDIRECTIONAL_SEQUENCE_RNN": (1, 2, 3),
    "BIDIRECTIONAL_SEQUENCE_RNN": (1, 2, 3, 5, 6, 7, 10, 11),
    "SVDF": (1, 2, 3),
    "Convolution2DTransposeBias": (1, 2),
    **{op: (0, 1) for op in ("ADD", "SUB", "MUL", "DIV")},  # (how the converter writes a lone norm's scale and shift)
}
ELEMENTWISE = {"ADD", "SUB", "MUL", "DIV"}  # a weight there only when float or quantized, of more than one element
# Operator -> the input positions holding state the operator updates (variables, or their initial values)
STATE_INPUTS: dict[str, tuple[int, ...]] = {
    "LSTM": (18, 19),
    "UNIDIRECTIONAL_SEQUENCE_LSTM": (18, 19),
    "BIDIRECTIONAL_SEQUENCE_LSTM": (35, 36, 37, 38),
    "RNN": (4,),
    "UNIDIRECTIONAL_SEQUENCE_RNN": (4,),
    "BIDIRECTIONAL_SEQUENCE_RNN": (4, 8),
    "SVDF": (4,),
}
# Operator -> the inputs whose values flow on unchanged in meaning (None: every input): a weight dequantized from
# float16 or int8, densified from its sparse form, reshaped, transposed, sliced or concatenated is still a weight
PASS_THROUGH: dict[str, tuple[int, ...] | None] = {
    "DEQUANTIZE": (0,),
    "DENSIFY": (0,),
    "CAST": (0,),
    "RESHAPE": (0,),
    "TRANSPOSE": (0,),
    "SQUEEZE": (0,),
    "EXPAND_DIMS": (0,),
    "STRIDED_SLICE": (0,),
    "SLICE": (0,),
    "SPLIT": (1,),
    "SPLIT_V": (0,),
    "UNPACK": (0,),
    "TILE": (0,),
    "BROADCAST_TO": (0,),
    "CONCATENATION": None,
    "PACK": None,
}
# Operator -> the input a resource variable's value is: a constant there in an initializer subgraph (CALL_ONCE's) is
# the variable's initial value, a parameter as Keras counts a variable (non-trainable: a value the model updates)
VARIABLE_INPUTS: dict[str, tuple[int, ...]] = {"ASSIGN_VARIABLE": (1,)}
READ_VARIABLE = "READ_VARIABLE"  # its input 0 a variable's handle, its output 0 the variable's value
# The scope TensorFlow's GradientTape names a gradient's ops in ('gradient_tape/sequential/dense/MatMul/MatMul'), as
# the converter keeps their names: a value computed from one is computed from the gradient
GRADIENT_SCOPES = ("gradient_tape/",)
# Operators that run other subgraphs -> the first of their inputs passed to them, as their input 0 (IF's input 0 is
# its condition, STABLEHLO_CASE's its branch index: stablehlo_case.cc); a constant passed is followed in there
CALLED_INPUTS = {"WHILE": 0, "CALL": 0, "IF": 1, "STABLEHLO_WHILE": 0, "STABLEHLO_COMPOSITE": 0, "STABLEHLO_CASE": 1}
LOOPS = {"WHILE", "STABLEHLO_WHILE"}  # whose body's outputs become its inputs the next iteration
# Operators that add a bias when they have one: a missing bias (-1) means a layer without one, or an all-zero bias
# the converter dropped (`BIAS_MISSING`)
BIAS_INPUTS = {"CONV_2D": 2, "DEPTHWISE_CONV_2D": 2, "CONV_3D": 2, "TRANSPOSE_CONV": 3, "FULLY_CONNECTED": 2}
# The TensorFlow ops a converted layer's weights are read by, as the converter's tensor names end ('sequential/
# dense/MatMul', 'model/conv2d/BiasAdd/ReadVariableOp', Keras 3's 'convolution'): the name part naming the operator's
# layer. A name joins the names of the ops the converter fused, with ';'.
LAYER_OPS: dict[str, tuple[str, ...]] = {
    "CONV_2D": ("Conv2D", "convolution", "BiasAdd", "conv1d", "Conv1D"),
    "DEPTHWISE_CONV_2D": ("depthwise", "BiasAdd", "convolution"),
    "CONV_3D": ("Conv3D", "convolution", "BiasAdd"),
    "TRANSPOSE_CONV": ("conv2d_transpose", "conv_transpose", "BiasAdd"),
    "FULLY_CONNECTED": ("MatMul", "BiasAdd", "Tensordot"),
    "BATCH_MATMUL": ("MatMul", "BatchMatMulV2", "einsum", "Einsum"),
    "GATHER": ("embedding_lookup", "GatherV2", "take"),
    "EMBEDDING_LOOKUP": ("embedding_lookup",),
    "PRELU": ("Relu", "Neg", "mul", "add"),
}
# TensorFlow ops of normalization layers: a weight whose name lists one had a norm folded into it
FOLDED_OPS = ("FusedBatchNormV3", "FusedBatchNorm", "batchnorm")
READ_OPS = ("ReadVariableOp",)  # the op a variable is read by: its layer is the op before it
DEQUANTIZED = "_dequantize"  # what the converter appends to a weight's name for its DEQUANTIZE's output


@record(slots=True)
class Use:
    """An operator input a tensor feeds: the operator's name, which input, its layer, its index in its subgraph, and
    that subgraph's."""

    op: str
    index: int
    layer: str
    operator: int
    graph: int


@record(slots=True)
class Graph:
    """Who reads each tensor of one subgraph, the layer of each operator, and the subgraphs its operators run."""

    sg: Subgraph
    consumers: dict[int, list[Use]]
    outputs: dict[int, tuple[int, ...]]  # operator index -> its output tensors
    missing_bias: list[str]
    calls: dict[int, tuple[int, ...]]  # operator index -> the subgraphs it runs (valid indices)
    variables: dict[int, str]  # a VAR_HANDLE's output tensor -> the resource variable's name
    reads: dict[int, str]  # a READ_VARIABLE's output tensor -> the resource variable it reads
    assigns: bool  # whether an operator assigns a resource variable
    initializer: bool = False  # run by CALL_ONCE: where the converter assigns resource variables their initial values


def graphs(probe: Probe, model: Model, fmt: str) -> list[Graph]:
    """Every subgraph's `Graph`, those CALL_ONCE runs marked initializers."""
    graphs = [
        _graph(probe, fmt, sg, "" if sg.index == 0 else f"{sg.name}/", len(model.subgraphs)) for sg in model.subgraphs
    ]
    for g in graphs:
        for op in g.sg.operators:
            if op.code == "CALL_ONCE":
                for called in g.calls.get(op.index, ()):
                    graphs[called].initializer = True
    return graphs


def _graph(probe: Probe, fmt: str, sg: Subgraph, prefix: str, n_subgraphs: int) -> Graph:
    consumers: dict[int, list[Use]] = defaultdict(list)
    outputs, missing, counts, taken = {}, [], Counter[str](), set[str]()
    calls: dict[int, tuple[int, ...]] = {}
    variables: dict[int, str] = {}
    reads: dict[int, str] = {}
    n = len(sg.tensors)
    for op in sg.operators:
        bad = next((i for i in (*op.inputs, *op.outputs) if not -1 <= i < n), None)
        if bad is not None:
            reason = f"operator {op.index} of subgraph {sg.name!r} names tensor {bad} of {n}"
            raise FormatError(probe.path, fmt, reason)
        layer = _layer(op, sg, prefix, counts, taken)
        if op.code in VARIABLE_INPUTS and op.inputs and op.inputs[0] in variables:  # (the variable's scope)
            layer = prefix + (variables[op.inputs[0]].rpartition("/")[0] or variables[op.inputs[0]])
        outputs[op.index] = op.outputs
        for position, tensor in enumerate(op.inputs):
            if tensor >= 0:
                consumers[tensor].append(Use(op.code, position, layer, op.index, sg.index))
        bias = BIAS_INPUTS.get(op.code)
        if bias is not None and (len(op.inputs) <= bias or op.inputs[bias] < 0):
            missing.append(f"{op.code} {layer!r}")
        if op.calls:  # (an index past the subgraphs runs nothing the file holds: not followed)
            calls[op.index] = tuple(c for c in op.calls if c < n_subgraphs)
        if op.variable is not None and op.outputs and op.outputs[0] >= 0:
            variables[op.outputs[0]] = op.variable
        if op.code == READ_VARIABLE and op.inputs and op.inputs[0] in variables and op.outputs and op.outputs[0] >= 0:
            reads[op.outputs[0]] = variables[op.inputs[0]]
    assigns = any(op.code in VARIABLE_INPUTS for op in sg.operators)
    return Graph(sg, consumers, outputs, missing, calls, variables, reads, assigns)


def _layer(op: Operator, sg: Subgraph, prefix: str, counts: Counter[str], taken: set[str]) -> str:
    """The source layer an operator computes: the scope of the name part naming it (`LAYER_OPS`) in its first
    weight's name, its output's, its other weights' ('sequential/dense/MatMul' -> 'sequential/dense'), the whole
    part where an earlier operator's weights took that scope (a GRU's matrices: 'while/MatMul_1' -> 'while', then
    'while/MatMul'); else its output's scope; else the operator's kind and count ('unidirectional_sequence_lstm_1').
    In a subgraph other than the first, after the subgraph's name."""
    weights = [sg.tensors[i].name for p in WEIGHT_INPUTS.get(op.code, ())
               if p < len(op.inputs) and (i := op.inputs[p]) >= 0]  # fmt: skip
    output = [sg.tensors[i].name for i in op.outputs[:1] if i >= 0]
    ops = LAYER_OPS.get(op.code, ())
    for part in (part for name in (*weights[:1], *output, *weights[1:]) for part in name.split(";")):
        scope = _scope_of(part, ops)
        if scope and weights:
            layer = prefix + (scope if prefix + scope not in taken else part)
            taken.add(layer)
            return layer
        if scope:
            return prefix + scope
    last = output[0].rpartition(";")[2] if output else ""
    if "/" in last:
        return prefix + last.rpartition("/")[0]
    n = counts[op.code] = counts[op.code] + 1
    return prefix + op.code.lower() + ("" if n == 1 else f"_{n - 1}")


def _scope_of(part: str, ops: tuple[str, ...]) -> str | None:
    """'model/conv2d/BiasAdd/ReadVariableOp' -> 'model/conv2d' where `ops` has 'BiasAdd'."""
    parts = part.split("/")
    if len(parts) > 2 and _named(parts[-1], READ_OPS):
        parts.pop()
    return "/".join(parts[:-1]) if len(parts) > 1 and _named(parts[-1], ops) else None


def _named(component: str, ops: tuple[str, ...]) -> bool:
    """Whether a name component is one of `ops`, as TensorFlow numbers a scope's ops ('MatMul_1', 'conv1d_3') and the
    converter its unique names ('MatMul1', 'FusedBatchNormV31'), or the converter's DEQUANTIZE its output
    ('Conv2D_dequantize', 'Conv2D_dequantize2')."""
    for o in ops:
        if component.startswith(o):
            rest = component[len(o) :].removeprefix(DEQUANTIZED).removeprefix("_")
            if not rest or rest.isdigit():
                return True
    return False


def kind_of(graphs: list[Graph], sg: int, t: Tensor, folds: bool = True) -> tuple[TensorKind, Use | None]:
    """What the graphs do with a constant: weight inputs make a parameter, a resource variable's initial value too (as
    Keras counts a variable), state inputs a buffer (with the input that says so; other state: the first input it
    reaches, None when no operator reads it). It is followed into the subgraphs an operator runs (`CALLED_INPUTS`).
    A gradient's constant (`GRADIENT_SCOPES`) is no weight (a frozen weight the backward pass reads is a copy); a
    one-element operand named after a folded norm is one only where the converter `folds` norms (not in a model whose
    inference reads its weights from resource variables: there a norm's epsilon)."""
    weight = not _gradient(t.name)
    dtype = dtypes.TFLITE_TYPES.get(t.type, "")
    is_float = (dt := dtypes.lookup(dtype)) is not None and dt.kind is DKind.FLOAT
    quantized = t.quantization is not None and t.quantization.scales > 0
    n = prod(t.shape)
    stack, seen, other = [(sg, t.index, False)], set[tuple[int, int]](), None
    while stack:
        at, tensor, dequantized = stack.pop()
        if (at, tensor) in seen or len(seen) > MAX_HOPS:
            continue
        seen.add((at, tensor))
        graph = graphs[at]
        for use in graph.consumers.get(tensor, ()):
            through = PASS_THROUGH.get(use.op, ())
            if through is None or use.index in through:
                stack += [(at, o, dequantized or use.op == "DEQUANTIZE") for o in graph.outputs[use.operator] if o >= 0]
            elif use.operator in graph.calls and use.index >= CALLED_INPUTS.get(use.op, 0):
                stack += [(s, i, dequantized) for s, i in _passed(graphs, graph.calls[use.operator], use)]
                other = other or use
            elif use.index in STATE_INPUTS.get(use.op, ()):
                return TensorKind.BUFFER, use
            elif (weight and use.index in WEIGHT_INPUTS.get(use.op, ())) and (
                use.op not in ELEMENTWISE
                or ((is_float or quantized or dequantized) and (n > 1 or folds and bool(folded_norms(t.name))))
            ):
                return TensorKind.PARAMETER, use
            elif use.index in VARIABLE_INPUTS.get(use.op, ()) and graph.initializer:
                return TensorKind.PARAMETER, use
            else:
                other = other or use
    return TensorKind.OTHER, other


def _passed(graphs: list[Graph], called: tuple[int, ...], use: Use) -> list[tuple[int, int]]:
    """(subgraph, tensor) of each input of the subgraphs an operator runs that an input of it becomes; a loop's state
    (a WHILE body's input it replaces each iteration) left out: its initial value only, no weight."""
    position = use.index - CALLED_INPUTS.get(use.op, 0)
    out = []
    for s in called:
        inputs, outputs = graphs[s].sg.inputs, graphs[s].sg.outputs
        if position < len(inputs) and inputs[position] >= 0:
            carried = use.op in LOOPS and len(outputs) == len(inputs) and outputs[position] != inputs[position]
            if not carried:
                out.append((s, inputs[position]))
    return out


def variable_kinds(graphs: list[Graph]) -> dict[str, tuple[TensorKind, bool]]:
    """Resource variable -> its kind and whether it is trainable, where the file tells: a variable a subgraph that
    assigns none (an inference signature) reads as a weight is the model's, trainable when a subgraph assigns it a
    value computed from the gradient (`_trained`); any other is optimizer state (a slot, the step). Empty where no
    such subgraph reads a variable as a weight: model weights and optimizer state are not told apart."""
    model: set[str] = set()
    for g in graphs:
        if not g.assigns and not g.initializer:
            model.update(
                v for t, v in g.reads.items() if kind_of(graphs, g.sg.index, g.sg.tensors[t])[0] is TensorKind.PARAMETER
            )
    if not model:
        return {}
    trained = _trained(graphs)
    named = {v for g in graphs for v in g.variables.values()}
    return {v: (TensorKind.PARAMETER, v in trained) if v in model else (TensorKind.OPTIMIZER, False) for v in named}


def _trained(graphs: list[Graph]) -> set[str]:
    """The resource variables a subgraph assigns a value computed from the gradient: from a tensor of a gradient's
    ops (`GRADIENT_SCOPES`), or from a variable the subgraph assigned such a value before (an optimizer's slot: the
    momentum a weight is moved by). Its operators in order, as the interpreter runs them: one pass."""
    trained: set[str] = set()
    for g in graphs:
        tensors, derived, here = g.sg.tensors, set[int](), set[str]()
        for op in g.sg.operators:
            if op.code == READ_VARIABLE:
                if op.outputs and g.reads.get(op.outputs[0]) in here:
                    derived.add(op.outputs[0])
            elif op.code in VARIABLE_INPUTS:
                handle, value = (*op.inputs, -1, -1)[:2]  # (a malformed operator's missing inputs: none)
                if handle in g.variables and (value in derived or value >= 0 and _gradient(tensors[value].name)):
                    here.add(g.variables[handle])
            elif any(i in derived for i in op.inputs) or any(o >= 0 and _gradient(tensors[o].name) for o in op.outputs):
                derived.update(o for o in op.outputs if o >= 0)
        trained |= here
    return trained


def assigned(graph: Graph, use: Use) -> str:
    """The resource variable an ASSIGN_VARIABLE assigns (its VAR_HANDLE's shared_name), '?' where none names it."""
    handle = graph.sg.operators[use.operator].inputs[0]
    return graph.variables.get(handle, "?")


def _gradient(name: str) -> bool:
    """Whether a tensor is a gradient's value: a name part in `GRADIENT_SCOPES` (of the fused ops' names, the last)."""
    return name.rpartition(";")[2].startswith(GRADIENT_SCOPES)


def folded_norms(name: str) -> list[str]:
    """The normalization layers a tensor's name says were folded into it ('a/batch_normalization/FusedBatchNormV3'
    -> 'a/batch_normalization')."""
    found = []
    for part in name.split(";"):
        parts = part.split("/")
        at = next((i for i, p in enumerate(parts) if i and _named(p, FOLDED_OPS)), None)
        if at is not None:
            found.append("/".join(parts[:at]))
    return list(dict.fromkeys(found))


def input_name(op: str, index: int) -> str:
    names = OP_INPUTS.get(op, ())
    return names[index] if index < len(names) else str(index)
