"""Quantized weights stored element for element (FP8, INT8) and the tensors their quantization keeps beside them.

A checkpoint quantized to 8 bits keeps each quantized layer's `weight` at its full shape in an 8-bit dtype, and beside
it the quantization's own tensors: scales (per tensor, per output channel, per 128 x 128 block), zero points, the
scales of the activations it was calibrated on. compressed-tensors writes `weight_scale` and `input_scale`
(RedHat's and Neural Magic's Llama, Qwen and Mistral FP8 and INT8 models), transformers' fine-grained FP8 and the
DeepSeek-V3, Kimi-K2 and Qwen3 FP8 releases `weight_scale_inv` (one scale a 128 x 128 block). The frameworks that load
such a file hold them as parameters of the layer (compressed-tensors' and transformers' FP8 linear layers register
them so, and `num_parameters()` counts them), so the file's count has them; no architecture's formula does: the
analytic check counts them beside the formula, as the quantization's (a row of their own), never as a difference.

bitsandbytes' layers keep their quantization's state beside the weight, outside `parameters()`: the 8-bit layers their
row scales and layout (`SCB`, `weight_format`), the 4-bit layers (transformers' `load_in_4bit`, QLoRA's base models,
the `-bnb-4bit` releases) their block scales, code map and the state's record, named after the weight
(`weight.absmax`, `weight.quant_map`, `weight.nested_absmax`, `weight.nested_quant_map`,
`weight.quant_state.bitsandbytes__nf4`). A 4-bit weight is stored packed, two 4-bit values a byte of its storage dtype,
in a column (`bnb_4bit_quant_storage`, uint8 unless said): its record says so (`unpacked`), with the values it holds
as its elements, as transformers' `num_parameters()` counts them; the shape it unpacks to is only in the state's
record (tensor data), so the column stays a column.

compressed-tensors' pack-quantized format, GPTQ and AWQ pack a weight's values into int32 elements (`PACKINGS`), their
config saying how many bits a value: with the config, the record is unpacked to the weight's own shape (torch's Linear
orientation); compressed-tensors' scales, zero points and shape beside it are the quantization's (`SIDE_TENSORS`),
GPTQ's and AWQ's are buffers, as their libraries hold them.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from inspector.records import TensorInfo

# A quantization's tensor beside a quantized weight (its parameter name) -> what it holds
SIDE_TENSORS: dict[str, str] = {
    "weight_scale": "weight scales",
    "weight_scale_inv": "weight scales (inverse, one a 128 x 128 block)",
    "weight_zero_point": "weight zero points",
    "input_scale": "activation scales",
    "input_zero_point": "activation zero points",
    "activation_scale": "activation scales",
    "weight_shape": "weight shapes",
    "weight_g_idx": "weight group indices",
    "weight_scale_2": "per-tensor scales of the weight scales",
    "weight_global_scale": "global weight scales",
    "input_global_scale": "global activation scales",
    "pre_quant_scale": "activation smoothing scales (AWQ)",
    "k_scale": "key cache scales",
    "v_scale": "value cache scales",
    "q_scale": "query scales",
}
# the attention's scales among them: on the key and value projections (ModelOpt's `k_proj.k_scale`) or on the
# attention module that holds them (compressed-tensors' and llm-compressor's `self_attn.k_scale`)
ATTENTION_SCALES = frozenset({"k_scale", "v_scale", "q_scale"})
# their names as a pattern (`\d` for a digit, as in `weight_scale_2`: a digit spelled in a pattern would split the role
# matchers' memo by it)
SIDE_TENSOR_NAMES = "|".join(SIDE_TENSORS).translate({ord(digit): r"\d" for digit in "0123456789"})
# dtypes a weight quantized element for element is stored in
QUANTIZED_DTYPES = frozenset({"F8_E4M3", "F8_E5M2", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "I8", "I4", "I2", "F4", "F6_E2M3"})
WEIGHT = "weight"
# a quantized weight's names: as it is, packed (`unpacked`), torchao's values (`torchao_unflattened`)
WEIGHTS = (WEIGHT, "weight_packed", "_weight_qdata")
# bitsandbytes' state of a quantized weight (after "<module>."): its 8-bit layers' (a buffer each, as `SCB` is held)
BNB_INT8_STATE = ("SCB", "weight_format")
# the record of a 4-bit weight's state (after "<module>.weight.") -> the dtype of the values the weight packs
PACKED_BY = {"quant_state.bitsandbytes__nf4": "NF4", "quant_state.bitsandbytes__fp4": "BNB_FP4"}
# and the rest of the state (after "<module>.weight."): block scales, the code map, the scales' own (double
# quantization)
BNB_4BIT_STATE = ("absmax", "quant_map", "nested_absmax", "nested_quant_map", *PACKED_BY)
# their names as patterns (after "<module>."), for the kind and role tables (`\d` for the digit in
# `bitsandbytes__nf4`: a digit spelled in a pattern would split the matchers' memo by it)
BNB_INT8_NAMES = "|".join(BNB_INT8_STATE)
BNB_4BIT_NAMES = WEIGHT + r"\.(?:" + "|".join(BNB_4BIT_STATE).replace(".", r"\.").replace("4", r"\d") + ")"
BNB_STATE_NAMES = BNB_INT8_NAMES + "|" + BNB_4BIT_NAMES  # either


class Packing:
    """How a quantization method packs a linear layer's values into the elements of a tensor (`PACKINGS`)."""

    __slots__ = ("name", "weight", "axis", "transposed", "dtypes", "state", "storage", "scales")

    def __init__(
        self,
        name: str,
        weight: str,
        axis: int,
        transposed: bool,
        dtypes: Mapping[int, str],
        state: tuple[str, ...] = (),
        storage: str = "I32",
        scales: tuple[str, str, int] | None = None,
    ) -> None:
        self.name = name  # as the notes say it
        self.weight = weight  # the packed weight's parameter name
        self.axis = axis  # the stored axis its values are packed along
        self.transposed = transposed  # stored as the layer's (in, out), the transpose of torch's Linear weight
        self.dtypes = dtypes  # bits -> the dtype of the values (signed or not)
        self.state = state  # the tensors beside it that hold its quantization's state: buffers where it is loaded
        self.storage = storage  # the dtype of the stored elements the values are packed into
        # (parameter name, dtype, values a scale) of the group scales beside a packed weight: the layout that tells the
        # packing where no config does (`packing_of`); None: only a config tells it
        self.scales = scales


# A config's quantization (`quantization_config`: its `quant_method`, and compressed-tensors' `format` or ModelOpt's
# `quant_algo`) -> how its weights are packed (`packing_of`).
# - Into int32 elements, 32 / bits values an element: compressed-tensors' `pack-quantized` format (RedHat's and Neural
#   Magic's W4A16 models: `weight_packed` (out, in / 8), its scales, zero points, group indices and shape beside it as
#   the layer's parameters, `SIDE_TENSORS`), GPTQ (AutoGPTQ's and GPTQModel's QuantLinear, TheBloke's releases:
#   `qweight` (in x bits / 32, out): 3-bit values run across the words, 32 in three, and `qzeros`, `scales`, `g_idx`,
#   buffers there), AWQ's GEMM layout (AutoAWQ's WQLinear_GEMM: `qweight` (in, out / 8), `qzeros`, `scales`), its
#   GEMV layout (WQLinear_GEMV: `qweight` (out, in / 8), `qzeros` and `scales` of (out, groups padded)) and its
#   GEMVFast layout (WQLinear_GEMVFast: `qweight` int16 (out / 4, in), each element 4 values of 4 rows interleaved
#   for its kernel, `qzeros` and `scales` float16 (groups padded, out)).
# - Into bytes: the 4-bit floats (E2M1) of NVFP4 and MXFP4, two a byte along the input axis, a scale each 16 values
#   (FP8 E4M3, NVFP4) or 32 (an E8M0 exponent, MXFP4), and MXFP6's 6-bit floats (E2M3), four in three bytes:
#   compressed-tensors' `nvfp4-`, `mxfp4-` and `mxfp6-pack-quantized` formats (RedHat's NVFP4 models: `weight_packed`,
#   `weight_scale`, `weight_global_scale`, `input_global_scale`) and NVIDIA ModelOpt's exports (the `nvidia/*-FP4`
#   releases: `weight`, `weight_scale`, `weight_scale_2`, `input_scale`); ModelOpt's INT4 AWQ, signed 4-bit integers
#   two a byte along the output axis, `pre_quant_scale` beside them. The tensors beside a byte-packed weight are the
#   quantization's (`SIDE_TENSORS`: parameters of the layer where vLLM and compressed-tensors load it); the count is the
#   float model's values and those tensors, as for pack-quantized (the model cards' count; the compressed layers' own
#   `num_parameters()` counts bytes).
# The bits are the config's; only the layouts named here are unpacked (GPTQ's Marlin tiles its otherwise, and is read
# as the tensors it is)
PACKINGS = {
    "pack-quantized": Packing("compressed-tensors pack-quantized", "weight_packed", -1, False,
                              {2: "I2", 4: "I4", 8: "I8"}),
    "nvfp4-pack-quantized": Packing("compressed-tensors NVFP4", "weight_packed", -1, False, {4: "F4"}, (), "U8",
                                    ("weight_scale", "F8_E4M3", 16)),
    "mxfp4-pack-quantized": Packing("compressed-tensors MXFP4", "weight_packed", -1, False, {4: "F4"}, (), "U8",
                                    ("weight_scale", "U8", 32)),
    "mxfp6-pack-quantized": Packing("compressed-tensors MXFP6", "weight_packed", -1, False, {6: "F6_E2M3"}, (), "U8",
                                    ("weight_scale", "U8", 32)),
    "modelopt-nvfp4": Packing("ModelOpt NVFP4", "weight", -1, False, {4: "F4"}, (), "U8",
                              ("weight_scale", "F8_E4M3", 16)),
    "modelopt-mxfp4": Packing("ModelOpt MXFP4", "weight", -1, False, {4: "F4"}, (), "U8", ("weight_scale", "U8", 32)),
    "modelopt-int4-awq": Packing("ModelOpt INT4 AWQ", "weight", -2, False, {4: "I4"}, (), "U8"),
    "gptq": Packing("GPTQ", "qweight", 0, True, {2: "U2", 3: "U3", 4: "U4", 8: "U8"}, ("qzeros", "scales", "g_idx")),
    "awq": Packing("AWQ", "qweight", 1, True, {4: "U4"}, ("qzeros", "scales")),
    "awq-gemv": Packing("AWQ GEMV", "qweight", 1, False, {4: "U4"}, ("qzeros", "scales")),
    "awq-gemv-fast": Packing("AWQ GEMVFast", "qweight", 0, False, {4: "U4"}, ("qzeros", "scales"), "I16"),
}  # fmt: skip
COMPRESSED_TENSORS = "compressed-tensors"  # its `format`s of packed weights are `PACKINGS` keys
# ModelOpt's `quant_algo` (as its hf_quant_config.json and config.json give it, any case) -> its packing
MODELOPT_ALGOS = {
    "nvfp4": "modelopt-nvfp4", "w4a16_nvfp4": "modelopt-nvfp4", "nvfp4_awq": "modelopt-nvfp4",
    "w4a8_nvfp4_fp8": "modelopt-nvfp4", "mxfp4": "modelopt-mxfp4", "w4a8_mxfp4_fp8": "modelopt-mxfp4",
    "w4a16_awq": "modelopt-int4-awq", "w4a8_awq": "modelopt-int4-awq",
}  # fmt: skip
# GPTQ's `checkpoint_format` and AWQ's `version` (any case; none: the first) -> its packing
PACKED_LAYOUTS = {
    "gptq": {"": "gptq", "gptq": "gptq", "gptq_v2": "gptq"},
    "awq": {"": "awq", "gemm": "awq", "gemv": "awq-gemv", "gemv_fast": "awq-gemv-fast"},
}
BNB_STATE = r"(?:.*\.)?(?:" + BNB_STATE_NAMES + ")"  # any of them, a whole name
COLUMN_DTYPES = frozenset(PACKED_BY.values())  # a weight unpacked to a column: its shape says none of the layer's sizes
QUANTIZATION_ROW = "quantization"  # the layer check's row of them, and its kind
QUANTIZATION_KIND = "Scales"


class BlockPacking:
    """How a quantization method packs a weight's values into bytes, in blocks that share a scale (`BLOCK_PACKINGS`)."""

    __slots__ = ("name", "blocks", "scales", "per_byte", "block", "dtype", "transposed")

    def __init__(
        self, name: str, blocks: str, scales: str, per_byte: int, block: int, dtype: str, transposed: bool
    ) -> None:
        self.name = name  # as the notes say it
        self.blocks = blocks  # the suffix of a packed weight's name ('gate_up_proj' + '_blocks')
        self.scales = scales  # the suffix of its scales' name, beside it
        self.per_byte = per_byte  # values a stored byte holds
        self.block = block  # values a block (one scale) holds
        self.dtype = dtype  # the dtype of the values
        # the values each matrix's transpose of the float parameter's (gpt-oss: blocks (experts, out, in / 32, 16) of
        # transformers' (experts, in, out))
        self.transposed = transposed


# Quantization methods (a config's `quant_method`) whose weights are stored as blocks of bytes with a scale a block:
# gpt-oss's MXFP4 (OpenAI's releases: each expert projection `<name>_blocks`, U8 (..., rows, blocks, 16), two 4-bit
# E2M1 values a byte, 32 a block, and `<name>_scales`, U8 (..., rows, blocks), one E8M0 exponent a block). transformers
# loads them as the values (dequantized where its kernels are not there, as on a CPU) and keeps no scale among the
# parameters: `num_parameters()` counts the values, so the count does too, and the scales are the quantization's state.
# Each expert's blocks are its projection as a Linear holds it (out, in); transformers' parameter is its transpose
# (experts, in, out), as its `convert_moe_packed_tensors` makes it
BLOCK_PACKINGS = {"mxfp4": BlockPacking("MXFP4", "_blocks", "_scales", 2, 32, "F4", True)}
BLOCK_PACKED = " weight stored packed as "  # a block-packed weight's note: its packing's name, these words


def block_packing(t: TensorInfo) -> BlockPacking | None:
    """The block packing whose values a tensor holds (one `unpacked` made values of its blocks), or None."""
    for packing in BLOCK_PACKINGS.values():
        if t.dtype == packing.dtype and any(n.startswith(packing.name + BLOCK_PACKED) for n in t.notes):
            return packing
    return None


_last: list[tuple[Sequence[TensorInfo], list[TensorInfo]]] = []  # (a file's tensors, its quantization's): asked by
# the module grouping, the layer check and the family check of one report


# torchao's safetensors layout (transformers' `TorchAoConfig` models saved by `save_pretrained`; the `pytorch/*`
# quantized releases): a quantized parameter `<module>.<param>` is a tensor subclass saved flattened, its inner tensors
# as `<module>._<param>_<name>` for each name of the `_tensor_data_names` the file's metadata gives under the
# parameter's name (`{"_type": "Int8Tensor", ..., "_tensor_data_names": ["zero_point", "qdata", "scale"]}`). Of these
# subclasses `qdata` holds the values at the parameter's own shape (int8, float8, or int4 values one an int8); the
# others (scale, zero_point) are the subclass's own state, not parameters: `num_parameters()` counts the parameter
TORCHAO_VALUES = "qdata"
TORCHAO_TYPES = frozenset({"Int8Tensor", "Float8Tensor", "IntxUnpackedToInt8Tensor"})
TORCHAO_MARK = '"_tensor_data_names"'  # in the metadata of a flattened parameter
TORCHAO_TYPED = '{"_type": "'  # how the metadata of each of its tensors starts (its type first)


def torchao_unflattened(tensors: list[TensorInfo], attributes: Mapping[str, str]) -> bool:
    """Whether the file holds torchao's flattened parameters (a safetensors file's metadata, `attributes`:
    "metadata.<parameter>" -> its JSON); if so their state made buffers and each values tensor noted, in `tensors`."""
    state, values = _torchao_state(attributes, {t.name for t in tensors}) if attributes else (set(), {})
    if not state:
        return False
    from inspector.recordtype import replace

    _as_state(tensors, state)
    for i, t in enumerate(tensors):
        if t.name in values:
            tensors[i] = replace(t, notes=(*t.notes, values[t.name]))
    return True


def _torchao_state(attributes: Mapping[str, str], names: set[str]) -> tuple[set[str], dict[str, str]]:
    """The inner tensors of torchao's flattened parameters that are their state, and each values tensor's note, from a
    file's metadata and tensor `names`."""
    state: set[str] = set()
    values: dict[str, str] = {}
    flattened = [
        (key, text) for key, text in attributes.items() if key.startswith("metadata.") and TORCHAO_MARK in text
    ]
    if not flattened:  # (every other file: one pass over its few metadata keys)
        return state, values
    from inspector.jsontext import loads

    for key, text in flattened:
        try:
            words = loads(text)
        except (ValueError, RecursionError):  # (not JSON, or nested deeper than the decoder goes: not torchao's)
            continue
        inner = words.get("_tensor_data_names") if isinstance(words, dict) else None
        kind = words.get("_type") if isinstance(words, dict) else None
        if kind not in TORCHAO_TYPES or not isinstance(inner, list) or TORCHAO_VALUES not in inner:
            continue
        module, _, param = key.removeprefix("metadata.").rpartition(".")
        stored = {part: f"{module}._{param}_{part}" for part in inner if isinstance(part, str)}
        if not set(stored.values()) <= names:
            continue
        state.update(name for part, name in stored.items() if part != TORCHAO_VALUES)
        values[stored[TORCHAO_VALUES]] = (
            f"torchao {kind} {module}.{param}: its values; "
            + ", ".join(name for part, name in stored.items() if part != TORCHAO_VALUES)
            + " its own state (not parameters)"
        )
    return state, values


# optimum-quanto's state dicts (its `quantize` and `freeze`, saved by `safetensors.torch.save_file(model.state_dict())`
# or by `QuantizedModelForCausalLM.save_pretrained`, which writes quanto_qmap.json beside; transformers' `QuantoConfig`
# models, whose config says `quant_method: quanto`): a quantized module's weight is a tensor subclass saved as its
# inner tensors. At 8 bits (qint8, qfloat8) `<module>.weight._data` holds its values at the weight's shape (int8,
# float8) and `<module>.weight._scale` a scale a row; at 4 and 2 bits (qint4, qint2) `<module>.weight._data._data`
# packs them, 8 / bits unsigned values a byte along its first axis (padded to whole bytes), with `._scale` and
# `._shift` (zero points) one a row of values. A weight of more than 128 inputs is quantized in groups of 128 (96, 64
# or 32, the first that divides them): its values' rows are then the groups, not the layer's rows (the layer's shape is
# the model's, in its config). A quantized module also holds `input_scale` and `output_scale`, its activations' scales
# (scalars; a LayerNorm quantized for its activations only holds them alone). `num_parameters()` counts the weight's
# values: they are the module's weight (its `layer` and `param` stated: the name the roles and the family check read,
# `family_check.canonical_name`), the rest the quantization's state (buffers)
QUANTO_VALUES = ".weight._data"  # (after "<module>")
QUANTO_PACKED = QUANTO_VALUES + "._data"
QUANTO_SCALE = ".weight._scale"  # beside every quantized weight: what tells quanto's layout
QUANTO_SHIFT = ".weight._shift"
QUANTO_ACTIVATIONS = (".input_scale", ".output_scale")
# the dtypes of its 8-bit values -> their qtype
QUANTO_TYPES = {"I8": "qint8", "F8_E4M3": "qfloat8_e4m3fn", "F8_E5M2": "qfloat8_e5m2",
                "F8_E4M3FNUZ": "qfloat8_e4m3fnuz"}  # fmt: skip
QUANTO_BITS = {"qint4": 4, "qint2": 2, "int4": 4, "int2": 2}  # a packed weight's qtype: the qmap's, the config's
QUANTO_PACKED_DTYPES = {"U4": 4, "U2": 2}  # its packed values' dtypes -> their bits
# the group sizes optimum-quanto tries for a 4- or 2-bit layer of more than 128 inputs, the first that divides them
# (its `QModuleMixin`): stored values of as many columns may be a layer's groups, whose shape the file does not hold
QUANTO_GROUPS = frozenset({128, 96, 64, 32})
QUANTO = "quanto"  # its `quant_method`
QUANTO_QMAP = "quanto_qmap.json"  # its qtypes by module ({module: {"weights": "qint4", "activations": "none"}})
# its weight's state as a pattern (after "<module>."), for `inspector diff`'s layer of a name
QUANTO_STATE_NAMES = "|".join(end.removeprefix(".").replace(".", r"\.") for end in (QUANTO_SCALE, QUANTO_SHIFT))


def quanto_unflattened(tensors: list[TensorInfo], config: Mapping[str, Any] | None) -> bool:
    """Whether the file holds optimum-quanto's quantized weights (a values tensor with its scales beside it); if so
    each values tensor made its module's weight (a packed one its values: of the bits its qtype has, as the qmap or the
    config says it, else of those at which its bytes hold its scales' rows) and their state buffers, in `tensors`."""
    from operator import attrgetter  # (loaded already: bound here, not in every run's start-up)

    dtypes = set(map(attrgetter("dtype"), tensors))  # (most files: one C pass)
    if "U8" not in dtypes and QUANTO_TYPES.keys().isdisjoint(dtypes):
        return False
    scales = {t.name: t.shape for t in tensors if t.name.endswith(QUANTO_SCALE)}
    if not scales:
        return False
    from inspector.recordtype import replace

    quantization = (config or {}).get("quantization_config")
    words = quantization if isinstance(quantization, dict) and quantization.get("quant_method") == QUANTO else {}
    modules = set()
    for i, t in enumerate(tensors):
        module = t.name.removesuffix(QUANTO_PACKED)
        packed = module != t.name and t.dtype == "U8"
        if not packed:
            module = t.name.removesuffix(QUANTO_VALUES)
        rows = scales.get(module + QUANTO_SCALE, ())[:1]
        if module == t.name or not rows or not t.shape:
            continue
        if packed:
            stated = QUANTO_BITS.get(_quanto_weights(words, module))
            fits = [bits for bits in ((stated,) if stated else (4, 2)) if -(-rows[0] * bits // 8) == t.shape[0]]
            if not fits:
                continue
            how = f"qint{fits[0]} {module}.weight stored packed as {t.dtype} {tuple(t.shape)}: "
            how += f"{_values_an_element(8, fits[0])} along its first axis; {module}{QUANTO_SCALE}, ._shift its state"
            t = replace(t, shape=(*rows, *t.shape[1:]), dtype=f"U{fits[0]}")
        elif t.dtype in QUANTO_TYPES:
            how = f"{QUANTO_TYPES[t.dtype]} {module}.weight: its values; {module}{QUANTO_SCALE} its state"
        else:
            continue
        tensors[i] = replace(t, layer=module, param=WEIGHT, notes=(*t.notes, f"optimum-quanto {how} (not parameters)"))
        modules.add(module)
    if not modules:
        return False
    scalars = {t.name for t in tensors if not t.shape and t.name.endswith(QUANTO_ACTIVATIONS)}
    state = {module + end for module in modules for end in (QUANTO_SCALE, QUANTO_SHIFT)}
    state.update(name for name in scalars if {name.rpartition(".")[0] + end for end in QUANTO_ACTIVATIONS} <= scalars)
    _as_state(tensors, state)
    return True


def _quanto_weights(words: Mapping[str, Any], module: str) -> str:
    """The qtype of a module's weights its quanto qmap says (`modules`), else the config (`weights`, every module's);
    '' where neither says one."""
    modules = words.get("modules")
    own = modules.get(module) if isinstance(modules, dict) else None
    qtype = own.get("weights") if isinstance(own, dict) else words.get("weights")
    return qtype if isinstance(qtype, str) else ""


def quanto_values(t: TensorInfo) -> bool:
    """Whether a tensor is optimum-quanto's values of a quantized weight, as `quanto_unflattened` made it (its module
    and parameter stated)."""
    return t.layer is not None and t.param == WEIGHT and t.name.startswith(t.layer + QUANTO_VALUES)


def regrouped(t: TensorInfo) -> str:
    """How a quantized weight's values are laid out where its shape may not be the layer's (a bitsandbytes 4-bit
    column, optimum-quanto's packed values of a group's columns: a layer of more than 128 inputs is stored in rows of
    a group, one of fewer as it is, and the file does not say which), in words; '' for any other tensor."""
    if t.dtype in COLUMN_DTYPES:
        return "packed into a column (the shape is in its quant_state record)"
    if t.dtype in QUANTO_PACKED_DTYPES and len(t.shape) == 2 and t.shape[1] in QUANTO_GROUPS and quanto_values(t):
        return f"in optimum-quanto's groups: rows of {t.shape[1]:,} values, a scale a row"
    return ""


def side_tensors(tensors: Sequence[TensorInfo]) -> list[TensorInfo]:
    """The quantization's tensors of a file: `SIDE_TENSORS` of a module whose `weight` is stored in a quantized dtype,
    and `ATTENTION_SCALES` of a module holding such modules (none in most files, told by one C pass over the dtypes)."""
    last = _last[0] if _last else None  # (read once: another thread may replace it)
    if last is not None and last[0] is tensors:
        return last[1]
    from operator import attrgetter  # (loaded already: bound here, not in every run's start-up)

    side: list[TensorInfo] = []
    if not QUANTIZED_DTYPES.isdisjoint(map(attrgetter("dtype"), tensors)):
        quantized = {
            parts[0] for t in tensors if t.dtype in QUANTIZED_DTYPES and (parts := t.name.rpartition("."))[2] in WEIGHTS
        }
        holding = {module.rpartition(".")[0] for module in quantized}  # (an attention holding quantized projections)
        side = [
            t
            for t in tensors
            if (parts := t.name.rpartition("."))[2] in SIDE_TENSORS
            and (parts[0] in quantized or (parts[2] in ATTENTION_SCALES and parts[0] in holding))
        ]
    _last[:] = [(tensors, side)]
    return side


def quantization_tensors(tensors: Sequence[TensorInfo]) -> dict[int, str]:
    """What each tensor of a file's quantization is, by the tensor's id: the scales and zero points beside its
    quantized weights (`side_tensors`), bitsandbytes' state of its weights (told by name), the state of GPTQ's and
    AWQ's packed weights and the scales of block-packed ones (the buffers `unpacked` made beside them)."""
    import re

    from inspector.records import TensorKind

    what = {id(t): f"the quantization's {SIDE_TENSORS[t.name.rpartition('.')[2]]} beside its quantized weight"
            for t in side_tensors(tensors)}  # fmt: skip
    state = re.compile(BNB_STATE)
    what.update((id(t), "bitsandbytes' state of its quantized weight") for t in tensors if state.fullmatch(t.name))
    for how in PACKINGS.values():
        packed = {t.name.rpartition(".")[0] for t in tensors if t.name.endswith("." + how.weight)} if how.state else ()
        what.update(
            (id(t), f"{how.name}'s state beside its packed weight")
            for t in tensors
            if t.kind is TensorKind.BUFFER and (parts := t.name.rpartition("."))[2] in how.state and parts[0] in packed
        )
    what.update(_quanto_state(tensors))
    what.update(_torchao_buffers(tensors))
    for blocks in BLOCK_PACKINGS.values():  # the scales of block-packed weights (`_unblocked` made them buffers)
        stems = {t.name.removesuffix(blocks.blocks) for t in tensors if t.name.endswith(blocks.blocks)}
        what.update(
            (id(t), f"{blocks.name}'s scales beside its packed weight")
            for t in tensors
            if t.kind is TensorKind.BUFFER and t.name.endswith(blocks.scales)
            and t.name.removesuffix(blocks.scales) in stems
        )  # fmt: skip
    return what


def _quanto_state(tensors: Sequence[TensorInfo]) -> dict[int, str]:
    """`quantization_tensors`' optimum-quanto state: the scales and shifts of its weights and its modules' activation
    scales (the buffers `quanto_unflattened` made them), by id."""
    from inspector.records import TensorKind

    modules = {t.layer for t in tensors if quanto_values(t)}
    if not modules:
        return {}
    what = {}
    for t in tensors:
        module, _, name = t.name.rpartition(".")
        if t.kind is not TensorKind.BUFFER:
            continue
        if t.name.endswith((QUANTO_SCALE, QUANTO_SHIFT)) and module.removesuffix("." + WEIGHT) in modules:
            what[id(t)] = "optimum-quanto's state of its quantized weight"
        elif "." + name in QUANTO_ACTIVATIONS:
            what[id(t)] = "optimum-quanto's activation scales of its quantized module"
    return what


def _torchao_buffers(tensors: Sequence[TensorInfo]) -> dict[int, str]:
    """`quantization_tensors`' torchao state: the inner tensors of a flattened parameter other than its values
    (`<module>._<param>_scale` beside `<module>._<param>_qdata`: the buffers `torchao_unflattened` made them), by id."""
    from inspector.records import TensorKind

    stems: dict[str, set[str]] = {}  # module -> its flattened parameters' stems ('_weight_')
    for t in tensors:
        module, _, name = t.name.rpartition(".")
        if name.endswith("_" + TORCHAO_VALUES):
            stems.setdefault(module, set()).add(name.removesuffix(TORCHAO_VALUES))
    what = {}
    for t in tensors:
        module, _, name = t.name.rpartition(".")
        if t.kind is TensorKind.BUFFER and module in stems and name.startswith(tuple(stems[module])):
            what[id(t)] = "torchao's state of its quantized weight"
    return what


def described(side: Sequence[TensorInfo]) -> str:
    """The sentence of a layer check's row of the quantization's tensors: what they are, beside how many weights."""
    modules = len({parts[0] for t in side if (parts := t.name.rpartition("."))[2] not in ATTENTION_SCALES})
    params = dict.fromkeys(t.name.rpartition(".")[2] for t in side)
    what = ", ".join(f"{SIDE_TENSORS[p]} ({p})" for p in params)
    return (
        f"the quantization's tensors beside {modules:,} quantized weights: {what}; the loading frameworks hold them "
        "as parameters, no formula has them: counted from their own shapes"
    )


def packing_of(config: Mapping[str, Any] | None, tensors: Sequence[TensorInfo] = ()) -> tuple[Packing, int] | None:
    """How a config's quantization packs its weights, and the bits of each value (`PACKINGS`), or None: another
    method, another layout of these, or bits its layout does not pack so. Where the config says none of the packings
    (no quantization, no config, or one whose words name no packing: ModelOpt's mixed precision, a packing a layer),
    the byte packing whose layout `tensors` hold (`_packing_in`)."""
    quantization = (config or {}).get("quantization_config")
    declared = _declared_packing(quantization) if isinstance(quantization, dict) else None
    return declared or (_packing_in(tensors) if tensors else None)


def _declared_packing(quantization: Mapping[str, Any]) -> tuple[Packing, int] | None:
    """`packing_of` a config's `quantization_config`."""
    method = quantization.get("quant_method")
    if method == COMPRESSED_TENSORS:  # one `format` of packed weights and one `num_bits` for every group of weights
        groups = quantization.get("config_groups")
        if not isinstance(groups, dict):
            return None
        found, formats = set(), {quantization.get("format")}
        for group in groups.values():
            weights = group.get("weights") if isinstance(group, dict) else None
            if isinstance(weights, dict):
                found.add(weights.get("num_bits"))
                formats.add(group.get("format") or quantization.get("format"))
        formats.discard(None)
        (layout,) = formats if len(formats) == 1 else (None,)
        bits = found.pop() if len(found) == 1 else None
    elif method == "modelopt":  # its `quant_algo`
        algo = quantization.get("quant_algo")
        layout = MODELOPT_ALGOS.get(algo.lower()) if isinstance(algo, str) else None
        bits = next(iter(PACKINGS[layout].dtypes)) if layout is not None else None
    elif method in PACKED_LAYOUTS:  # GPTQ's `bits` (its own checkpoint format: not Marlin's), AWQ's `bits` or `w_bit`
        words = quantization.get("checkpoint_format" if method == "gptq" else "version") or ""
        layout = PACKED_LAYOUTS[method].get(words.lower()) if isinstance(words, str) else None
        bits = quantization.get("bits", quantization.get("w_bit"))
    else:
        return None
    packing = PACKINGS.get(layout) if isinstance(layout, str) else None
    return (packing, bits) if packing is not None and isinstance(bits, int) and bits in packing.dtypes else None


def _packing_in(tensors: Sequence[TensorInfo]) -> tuple[Packing, int] | None:
    """The byte packing whose layout a file holds, told without a config: a weight of its name stored in its bytes
    whose group scales beside it, of their dtype, are one for each of its values' groups along the packed axis."""
    from operator import attrgetter  # (loaded already: bound here, not in every run's start-up)

    if "U8" not in map(attrgetter("dtype"), tensors):  # (most files: one C pass)
        return None
    by_name = {t.name: t for t in tensors}
    for packing in PACKINGS.values():
        if packing.scales is None:
            continue
        scale, dtype, group = packing.scales
        ((bits, _),) = packing.dtypes.items()
        suffix = "." + packing.weight
        for name, t in by_name.items():
            if t.dtype != packing.storage or not name.endswith(suffix) or len(t.shape) < 2:
                continue
            beside = by_name.get(name.removesuffix(packing.weight) + scale)
            values = t.shape[-1] * 8 // bits  # (the byte packings': their values along the last axis)
            if (
                beside is not None
                and beside.dtype == dtype
                and beside.shape == (*t.shape[:-1], values // group)
                and values % group == 0
            ):
                return packing, bits
    return None


def declared_method(config: Mapping[str, Any] | None) -> str | None:
    """The quantization method a config declares (`quantization_config.quant_method`; MLX's, `mlx_quantization`), or
    None."""
    if mlx_quantization(config) is not None:
        return MLX
    quantization = (config or {}).get("quantization_config")
    if not isinstance(quantization, dict):
        return None
    method = quantization.get("quant_method")
    return method if isinstance(method, str) and method.isprintable() else "quantized"


# Apple MLX's quantized models (mlx-lm's `convert -q`, the mlx-community releases): each quantized layer's `weight` is
# uint32, its values packed along its last axis (32 / bits a word), `scales` (and for the affine mode `biases`) beside
# it, one a group of `group_size` values; config.json says `quantization: {group_size, bits, mode}` (also as
# `quantization_config`, without a quant_method), and a module's own where a recipe gave it other bits or left it
# unquantized (False). mlx-lm counts a quantized layer's values, weight.size * 32 / bits, not its scales and biases
# (`get_total_parameters`, behind its "bits per weight"): the values are the parameter, the rest its state (buffers).
MLX = "mlx"
MLX_MODES = {"affine": "", "mxfp4": "F4", "nvfp4": "F4", "mxfp8": "F8_E4M3"}  # mode -> its values' dtype ("": U<bits>)
MLX_STATE = ("scales", "biases")
MLX_STORAGE = "U32"


def mlx_quantization(config: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """A config's MLX quantization (`quantization`, or as `quantization_config` without a `quant_method`: its integer
    `bits` and `group_size`), or None."""
    for key in ("quantization", "quantization_config"):
        words = (config or {}).get(key)
        if (
            isinstance(words, dict)
            and "quant_method" not in words
            and isinstance(words.get("bits"), int)
            and isinstance(words.get("group_size"), int)
            and words.get("mode", "affine") in MLX_MODES
        ):
            return words
    return None


def _mlx_unpacked(tensors: list[TensorInfo], quantization: Mapping[str, Any]) -> None:
    """`unpacked`'s MLX weights: each uint32 `weight` with its `scales` beside it read as its values, its group size
    (and mode) the module's own where the config gives them, else the config's; its bits are what its words hold for
    the values its scales cover, checked against the config's where it says them. Its scales and biases: buffers."""
    from inspector.dtypes import DTYPES
    from inspector.recordtype import replace

    at = {t.name: i for i, t in enumerate(tensors)}
    modules = set()
    for i, t in enumerate(tensors):
        module, _, name = t.name.rpartition(".")
        scales = at.get(module + "." + MLX_STATE[0])
        own = quantization.get(module, {})
        if name != WEIGHT or t.dtype != MLX_STORAGE or len(t.shape) < 2 or scales is None or not isinstance(own, dict):
            continue  # (False: a module the recipe left unquantized)
        group = own.get("group_size") or quantization["group_size"]
        mode = own.get("mode") or quantization.get("mode", "affine")
        covered = tensors[scales].shape
        values = covered[-1] * group if isinstance(group, int) and len(covered) == len(t.shape) else 0
        if not values or covered[:-1] != t.shape[:-1] or t.shape[-1] * 32 % values:
            continue
        bits = t.shape[-1] * 32 // values
        dtype = MLX_MODES.get(mode) if isinstance(mode, str) else None
        dtype = dtype or (f"U{bits}" if dtype == "" else None)
        stated = own.get("bits") or (quantization["bits"] if module not in quantization else None)
        if dtype not in DTYPES or DTYPES[dtype].bits != bits or stated not in (None, bits):
            continue
        note = (
            f"MLX {mode} weight stored packed as {t.dtype} {tuple(t.shape)}: {_values_an_element(32, bits)}, "
            f"{group} a scale"
        )
        tensors[i] = replace(t, shape=(*t.shape[:-1], values), dtype=dtype, notes=(*t.notes, note))
        modules.add(module)
    _as_state(tensors, _beside(tensors, modules, MLX_STATE))


def block_packing_of(config: Mapping[str, Any] | None, tensors: Sequence[TensorInfo]) -> BlockPacking | None:
    """How a config's quantization packs its weights into blocks of bytes (`BLOCK_PACKINGS`), or None; without a
    quantization in the config (or without a config), the packing whose layout the file holds: a U8 weight named with
    its suffix whose last axis is one block's bytes, and its scales beside it, one a block (their shape less that axis).
    """
    method = declared_method(config)
    if method is not None:
        return BLOCK_PACKINGS.get(method)
    from operator import attrgetter  # (loaded already: bound here, not in every run's start-up)

    if "U8" not in map(attrgetter("dtype"), tensors):  # (most files: one C pass)
        return None
    for packing in BLOCK_PACKINGS.values():
        suffixes = (packing.blocks, packing.scales)
        shapes = {t.name: t.shape for t in tensors if t.dtype == "U8" and t.name.endswith(suffixes)}
        for name, shape in shapes.items():
            if (
                name.endswith(packing.blocks)
                and len(shape) >= 2
                and shape[-1] * packing.per_byte == packing.block
                and shapes.get(name.removesuffix(packing.blocks) + packing.scales) == shape[:-1]
            ):
                return packing
    return None


def stored_packed(tensors: Sequence[TensorInfo]) -> bool:
    """Whether a module holds its values in integer or block-quantized elements (or in a dtype of no known size): a
    packing not read here, where a config declares a quantization."""
    from inspector.dtypes import DKind, lookup

    packed = (DKind.INT, DKind.UINT, DKind.QUANT, DKind.OPAQUE)
    return any((dt := lookup(t.dtype)) is None or dt.kind in packed for t in tensors)


def unpacked(
    tensors: list[TensorInfo],
    packing: tuple[Packing, int] | None = None,
    blocks: BlockPacking | None = None,
    mlx: Mapping[str, Any] | None = None,
) -> None:
    """Each packed weight of `tensors` made the values it packs, its dtype theirs and its elements as many as its
    bytes hold, with a note of how it is stored:

    - a bitsandbytes 4-bit weight (one with a `PACKED_BY` record beside it): its shape the stored column unpacked
      (the storage dtype's bits / 4 values a stored element);
    - with a `packing` (`packing_of`), every weight of its name stored in its storage dtype: its packed axis unpacked
      (32 / bits values an int32 element, two 4-bit values a byte...), in torch's Linear orientation (out, in) (the
      axis padded up to a whole element where it is not a multiple); the tensors beside it that hold its state are
      buffers, as they are where it is loaded;
    - with a config's `blocks` (`block_packing_of`), every U8 weight named with its blocks' suffix: its last two axes
      (blocks, bytes a block) one axis of the values they hold, its scales beside it buffers;
    - with a config's `mlx` quantization (`mlx_quantization`), MLX's uint32 weights (`_mlx_unpacked`).
    """
    from inspector.dtypes import DTYPES
    from inspector.recordtype import replace

    packed = {}
    for t in tensors:
        weight, _, state = t.name.partition(".quant_state.")
        if state and (dtype := PACKED_BY.get("quant_state." + state)) is not None:
            packed[weight] = dtype
    how, bits = packing if packing is not None else (None, 0)
    stored = DTYPES[how.storage].bits if how is not None else 0
    each = _values_an_element(stored, bits) if how is not None else ""
    modules = set()  # the modules of the packed weights `how` unpacks
    for i, t in enumerate(tensors):
        dtype = packed.get(t.name)
        if dtype is not None and t.dtype not in COLUMN_DTYPES:
            n = t.nbytes * 8 // DTYPES[dtype].bits
            what = dtype.removeprefix("BNB_").lower()
            note = (
                f"bitsandbytes {what} weight stored packed as {t.dtype} {tuple(t.shape)}: {n:,} 4-bit values; the "
                "shape they unpack to is in its quant_state record"
            )
            tensors[i] = replace(t, shape=(n, 1), dtype=dtype, notes=(*t.notes, note))
            continue
        if (
            how is None
            or t.dtype != how.storage
            or not (len(t.shape) == 2 or (len(t.shape) > 2 and not how.transposed))
        ):
            continue  # (GPTQ's and AWQ's transposed weights are matrices; the others may be experts stacked)
        module, _, name = t.name.rpartition(".")
        axis = how.axis % len(t.shape)
        if name != how.weight or t.shape[axis] * stored % bits:
            continue
        shape = list(t.shape)
        shape[axis] = shape[axis] * stored // bits
        if how.transposed:  # (the layer's (in, out): torch's (out, in))
            shape.reverse()
        turned = ", the layer's (in, out): torch's Linear weight transposed" if how.transposed else ""
        where = "first" if axis == 0 else "last" if axis == len(shape) - 1 else f"axis {axis}"
        note = f"{how.name} weight stored packed as {t.dtype} {tuple(t.shape)}: {each} along its {where} axis{turned}"
        tensors[i] = replace(t, shape=tuple(shape), dtype=how.dtypes[bits], notes=(*t.notes, note))
        modules.add(module)
    if blocks is not None:
        _unblocked(tensors, blocks)
    if mlx is not None:
        _mlx_unpacked(tensors, mlx)
    if modules and how is not None and how.state:
        _as_state(tensors, _beside(tensors, modules, how.state))


def _beside(tensors: Sequence[TensorInfo], modules: set[str], state: Sequence[str]) -> set[str]:
    """The names of the tensors named `state` in `modules` (a packing's state beside the weights it unpacked)."""
    return {t.name for t in tensors if (parts := t.name.rpartition("."))[2] in state and parts[0] in modules}


def _as_state(tensors: list[TensorInfo], names: set[str]) -> None:
    """The parameters of these names made buffers: a quantization's state, which its libraries hold beside the
    model's parameters."""
    from inspector.records import TensorKind
    from inspector.recordtype import replace

    for i, t in enumerate(tensors):
        if t.name in names and t.kind is TensorKind.PARAMETER:
            tensors[i] = replace(t, kind=TensorKind.BUFFER, trainable=False)


def _values_an_element(stored: int, bits: int) -> str:
    """How many values of `bits` bits the elements of `stored` bits hold: '8 4-bit values an element', '4 6-bit values
    in 3 elements'."""
    from math import lcm

    common = lcm(stored, bits)
    return f"{common // bits} {bits}-bit values " + (
        "an element" if common == stored else f"in {common // stored} elements"
    )


def _unblocked(tensors: list[TensorInfo], blocks: BlockPacking) -> None:
    """`unpacked`'s block-packed weights (MXFP4): values for bytes, the scales beside them buffers."""
    from inspector.recordtype import replace

    stems = set()
    for i, t in enumerate(tensors):
        stem = t.name.removesuffix(blocks.blocks)
        if stem == t.name or t.dtype != "U8" or len(t.shape) < 2:
            continue
        *lead, count, width = t.shape
        per_block = width * blocks.per_byte
        scales = stem.rpartition(".")[2] + blocks.scales
        note = (
            f"{blocks.name}{BLOCK_PACKED}{t.dtype} {tuple(t.shape)}: {blocks.per_byte} values a byte, "
            f"{per_block} a block sharing one scale ({scales})"
        )
        tensors[i] = replace(t, shape=(*lead, count * per_block), dtype=blocks.dtype, notes=(*t.notes, note))
        stems.add(stem)
    _as_state(tensors, {t.name for t in tensors if (s := t.name.removesuffix(blocks.scales)) != t.name and s in stems})
