"""Keras weight files in HDF5 (FORMATS.md 6.3, 6.4), through h5py, metadata only.

Layouts, decided from the groups and attributes:

    keras-h5            Keras 2 / tf.keras model.save: /model_weights/<layer>/<weight_name> with the
                        layer_names / weight_names attributes (split into layer_names0, 1... when
                        large), model_config and training_config on the root, /optimizer_weights/...;
                        save_weights puts the model_weights contents at the root; Keras 3 still
                        writes this legacy layout with names without ':0'
    keras3-weights-h5   Keras 3 save_weights: /layers/<auto_name>/vars/<i> (RNNs under .../cell/vars),
                        the real layer name in the vars group's 'name' attribute, /optimizer/vars/<i>
    hdf5                any other HDF5 file: every dataset listed

Counts follow Keras: BatchNormalization's moving statistics and the weights of frozen layers are
parameters that are not trainable; optimizer variables are optimizer state.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from inspector.jsontext import loads
from inspector.probe import Probe
from inspector.records import Checkpoint, Finding, Region, Severity, TensorInfo, TensorKind
from inspector.roles import NORM_STATISTICS
from loaders import _hdf5, _keras_hub
from loaders.base import Claim, single_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar

KERAS2 = "keras-h5"
KERAS3 = "keras3-weights-h5"
GENERIC = "hdf5"
NON_TRAINABLE = frozenset(NORM_STATISTICS["keras"])  # BatchNormalization statistics: parameters, not trained
# A Keras 3 layer's LoRA (`enable_lora(rank)`, the config's `lora_rank`: Dense, EinsumDense, the convolutions,
# Embedding): the variable it adapts -> its two factors, `a` the variable's shape less its last axis + (rank,), `b`
# (rank, its last axis). Keras trains the factors and freezes the variable (`LORA_FROZEN`). A legacy .h5 holds them;
# `.keras` and `.weights.h5` hold the variable with the LoRA merged into it and no factors, which
# `keras.saving.load_model` makes anew (zeros): its `count_params()` counts them (`merged_lora_findings`)
LORA_FACTORS = {"kernel": ("lora_kernel_a", "lora_kernel_b"), "embeddings": ("lora_embeddings_a", "lora_embeddings_b")}
LORA_FROZEN = frozenset(LORA_FACTORS)
LORA_MERGED = "LORA_MERGED"
# Variables a layer class (snake_case) creates with trainable=False, besides the statistics above: parameters Keras
# counts in count_params() and never trains (the adapted statistics of a Normalization layer)
FROZEN_VARS: dict[str, frozenset[str]] = {
    "normalization": frozenset({"mean", "variance", "count"}),
    # keras-hub's layers that keep a buffer as a variable (add_weight(trainable=False)): DINOv2's position embeddings
    # (it trains an interpolated copy), Gemma 4's per-block scalar, the rotary inverse frequencies of Moonshine and
    # SmolLM 3 (held by its attention as `rotary_embedding`: the path names it, not its class), the position ids
    # (integers) of CLIP's and SigLIP's embeddings, the random Fourier features of SAM's prompt encoder (held as
    # `positional_embedding_layer`)
    "dinov2_embedding": frozenset({"position_embeddings"}),
    "positional_embedding_layer": frozenset({"positional_encoding_gaussian_matrix"}),
    **dict.fromkeys(
        ("clip_vision_embedding", "sig_lip_vision_embedding", "sig_lip_text_embedding"), frozenset({"position_ids"})
    ),
    "gemma4_text_decoder_block": frozenset({"layer_scalar"}),
    **dict.fromkeys(("moonshine_rotary_embedding", "rotary_embedding"), frozenset({"inv_freq"})),
}
# Keras 3 variables per layer class, in build() order (snake_case class names, as Keras's own auto names):
# each (variable name, the config flag without which the layer does not create it; '-flag': the layer creates it
# only when the config's value of `flag` is null, as Normalization adapts its mean only when none is given; '!flag':
# only when it is not true; '?flag': only when it is given and not 0 or false, as DINOv2's register tokens;
# 'word=value': only when the config's `word` is `value`, '?word=value' off by default as '?flag').
_BIASED = (("kernel", None), ("bias", "use_bias"))
_RNN = (("kernel", None), ("recurrent_kernel", None), ("bias", "use_bias"))
_NORM = (("gamma", "scale"), ("beta", "center"))
KERAS3_VARS: dict[str, tuple[tuple[str, str | None], ...]] = {
    **dict.fromkeys(("dense", "einsum_dense"), _BIASED),
    **dict.fromkeys(
        ("conv1d", "conv2d", "conv3d", "conv1d_transpose", "conv2d_transpose", "conv3d_transpose"), _BIASED
    ),
    **dict.fromkeys(("depthwise_conv1d", "depthwise_conv2d"), _BIASED),
    **dict.fromkeys(
        ("separable_conv1d", "separable_conv2d"),
        (("depthwise_kernel", None), ("pointwise_kernel", None), ("bias", "use_bias")),
    ),
    "embedding": (("embeddings", None),),
    "batch_normalization": (*_NORM, ("moving_mean", None), ("moving_variance", None)),
    # (a LayerNormalization of one variable holds its gamma: `rms_scaling`, or `center=False`, Moonshine's)
    "layer_normalization": (("gamma", "scale"), ("beta", "?center")),
    "group_normalization": _NORM,
    **dict.fromkeys(("simple_rnn", "lstm", "gru", "conv_lstm1d", "conv_lstm2d", "conv_lstm3d"), _RNN),
    "p_re_lu": (("alpha", None),),
    "normalization": (("mean", "-mean"), ("variance", "-mean"), ("count", "-mean")),
    "rms_normalization": (("scale", None),),
    # (a dot-product Attention's scalars, with `use_scale` and `score_mode="concat"`; AdditiveAttention's scale)
    "attention": (("scale", "use_scale"), ("concat_score_weight", "?score_mode=concat")),
    "additive_attention": (("scale", "use_scale"),),
    # keras-hub (keras_hub/src/layers/modeling/*.py, keras_hub/src/models/*/*_layers.py; build() order): the token
    # embedding of its LLMs, with its own output head when untied
    "reversible_embedding": (("embeddings", None), ("reverse_embeddings", "!tie_weights")),
    "dinov2_embedding": (
        ("cls_token", None),
        ("mask_token", "use_mask_token"),
        ("register_tokens", "?num_register_tokens"),
        # (the trained copy of the frozen table, resized to the image: stored before it, trainable ones first)
        ("interpolated_position_embeddings", None),
        ("position_embeddings", None),
    ),
    "gemma4_text_decoder_block": (("layer_scalar", None),),
    "vi_t_patching_and_embedding": (("class_token", "use_class_token"),),
    "positional_embedding_layer": (("positional_encoding_gaussian_matrix", None),),
    "clip_vision_embedding": (("class_embedding", None), ("position_ids", None)),
    "meta_clip2_vision_embedding": (("class_embedding", None),),
    **dict.fromkeys(("sig_lip_vision_embedding", "sig_lip_text_embedding"), (("position_ids", None),)),
    **dict.fromkeys(("moonshine_rotary_embedding", "rotary_embedding"), (("inv_freq", None),)),
    "dinov3_embedding": (
        ("cls_token", None),
        ("mask_token", "use_mask_token"),
        ("register_tokens", "?num_register_tokens"),
    ),
    "dei_t_embeddings": (
        ("mask_token", "?use_mask_token"),
        ("class_token", None),
        ("distillation_token", None),
        ("position_embedding", None),
    ),
    "xl_net_encoder": (
        *(("content_attention_bias", None), ("positional_attention_bias", None)),
        *(("segment_attention_bias", None), ("segment_encoding", None)),
    ),
    "xl_net_attention_mask_layer": (("mask_emb", None),),
    **dict.fromkeys(("clip_head", "meta_clip2_head"), (("logit_scale", None),)),
    "sig_lip_head": (("logit_scale", None), ("logit_bias", None)),
    "sig_lip_multi_head_attention_pooling": (("variable", None),),  # (its probe, created without a name)
    "add_relative_positional_embedding": (("rel_pos_h", None), ("rel_pos_w", None)),  # (ViTDet's, SAM's)
    "add_positional_embedding": (("pos_embed", None),),
    "relative_embedding": (("rel_embedding", None),),  # (DeBERTa v3's)
    # ... and those held as attributes of another keras-hub layer, by the attribute (GptOss's attention) or, where that
    # says nothing (`_linear_attn`, RWKV's `att` and `ffn`), by the name keras-hub gives the layer (`linear_attn`,
    # `RWKV_TIME_MIX`, `RWKV_CMIX`), read in snake_case
    "self_attention_layer": (("sinks", None),),
    "linear_attn": (("conv1d_kernel", None), ("dt_bias", None), ("A_log", None)),  # (Qwen3.5's gated delta net)
    "rwkv_time_mix": (
        *(("x_r", None), ("x_w", None), ("x_k", None), ("x_v", None), ("x_a", None), ("x_g", None)),
        *(("w0", None), ("w1", None), ("w2", None), ("a0", None), ("a1", None), ("a2", None)),
        # (the value residual's, in every block but the first)
        *(("v0", "?add_v_first"), ("v1", "?add_v_first"), ("v2", "?add_v_first")),
        *(("g1", None), ("g2", None), ("k_k", None), ("k_a", None), ("r_k", None)),
    ),
    "rwkv_cmix": (("time_mix_k", None),),
}
# Layers a layer holds as attributes (Keras's MultiHeadAttention's `query_dense`, keras-hub's blocks'
# `_feedforward_intermediate_dense`, `pre_attention_norm`, `ffw_linear`, SmolLM's `down_proj`, T5's `input_projector`,
# ViT's `layer_norm_1`, DINOv2's `fc1`, `norm1`, `layer_scale1`): the file names them by the attribute, the config lists
# none of them (a backbone's config is its arguments), so the attribute's name (less its `_N`) and how many variables
# it holds (None: any number) say what they are: their variables, as `KERAS3_VARS` (a norm of one variable is
# keras-hub's RMS norm, of two a LayerNormalization; keras-hub's own norm classes, `MistralLayerNormalization`, alike).
# Where the attribute says nothing (MiT's `q`, `sr`, `dwconv`; RWKV's `ln1`), the layer's own name does: Keras's auto
# name of its class (`dense_1`, `conv2d_1`, `depthwise_conv2d`) or the name keras-hub gives it (`att_norm`)
_NORM_ATTRIBUTE = re.compile(r"_?(?:\w+_)?(?:layer_?norm(?:alization|_ff)?|norm\d*)")
KERAS3_ATTRIBUTE_VARS: tuple[tuple[re.Pattern[str], int | None, tuple[tuple[str, str | None], ...]], ...] = (
    (re.compile(r"_?(?:\w+_)?(?:dense|linear|ffw|fc\d*|proj(?:ection|ector)?|patch_embedding)"), None, _BIASED),
    # keras-hub's Dense layers of other names: Falcon's MLP, Qwen3.5's linear attention's inputs and MoE gates, Swin's
    # `qkv` and patch merging `reduction`, RWKV's `key`, `value`, `receptance`, `output_layer`
    (
        re.compile(
            r"dense_h_to_4h|dense_4h_to_h|in_proj_(?:a|b|z|qkv)|_?(?:router|shared_expert)_gate|qkv|reduction|key"
            r"|value|receptance|output_layer"
        ),
        None,
        _BIASED,
    ),
    (_NORM_ATTRIBUTE, 1, (("scale", None),)),
    (_NORM_ATTRIBUTE, 2, (("gamma", None), ("beta", None))),
    (re.compile(r"layer_scale\d*"), 1, (("lambda1", None),)),  # (keras-hub's DINOv2 LayerScale)
    # (an Embedding, keras-hub's PositionEmbedding or its ReversibleEmbedding, untied or not; XLNet's `word_embed`,
    # SAM's prompt encoder's `no_mask_embed`, `foreground_point_embed`...)
    (
        re.compile(r"(?:\w+_)?(?:token_|position_)?embedding|(?:\w+_)?embed"),
        None,
        (("embeddings", None), ("reverse_embeddings", "!tie_weights")),
    ),
    # keras-hub's stacked experts (Mixtral's expert bank: gate, up and down; Qwen MoE's: gate and up stacked, and
    # down; GPT-OSS's), T5's relative attention bias (named `embeddings`), Swin's window attention's bias table
    (
        re.compile(r"expert_bank"),
        3,
        tuple((f"expert_feedforward_{part}_dense", None) for part in ("gate", "intermediate", "output")),
    ),
    (
        re.compile(r"expert_bank"),
        2,
        (("expert_feedforward_gate_dense", None), ("expert_feedforward_output_dense", None)),
    ),
    (
        re.compile(r"experts"),
        4,
        tuple((name, None) for name in ("gate_up_proj", "gate_up_proj_bias", "down_proj", "down_proj_bias")),
    ),
    (re.compile(r"self_attention"), 1, (("embeddings", None),)),
    (re.compile(r"attn"), 1, (("relative_position_bias_table", None),)),
)
AUTO_SUFFIX = r"_\d+$"
BIDIRECTIONAL_SIDES = {"forward_layer": "forward", "backward_layer": "backward"}
INPUT_LAYER = "input_layer"  # (Keras 3's auto name of an InputLayer: a model's `layers` list holds one per input)
# what tells a model from a layer holding a `layers` list: the config's layer names, else the models' paths
Models = frozenset[str] | set[tuple[str, ...]]
RNN_CELL = "simple_rnn"  # (a wrapped RNN of no known class: Keras's RNNs hold the same variables in the same order)
# Keras 2's names (a legacy .h5's weight names) of the layers a layer holds: a MultiHeadAttention's projections
# (`multi_head_attention/query/kernel`) and a TimeDistributed's layer (`time_distributed/dense/kernel`) are layers of
# their own, named as Keras 3 names them (`<holder>/query`, `<holder>/dense`); a Bidirectional's RNNs
# (`bidirectional/forward_lstm/lstm_cell/kernel`) are its `<holder>/forward` and `<holder>/backward` (Keras names the
# forward one `forward_<name>`, the backward one `backward_<name>` unless it was given): the first (the start of the
# held layer's name, its name under the holder; '': the held layer's own) that fits
HELD_LAYERS: dict[str, tuple[tuple[str, str], ...]] = {
    **dict.fromkeys(
        ("multi_head_attention", "group_query_attention", "grouped_query_attention", "time_distributed"), (("", ""),)
    ),
    "bidirectional": (("forward_", "forward"), ("", "backward")),
}
# Keras configs that carry code: a Lambda layer (marshalled bytecode, or a function looked up by name),
# a serialised lambda anywhere (Keras 3 '__lambda__'), a Keras 2 function_type other than a named function, and the
# layers whose `from_config` runs code from outside the config (Keras refuses the last two in safe mode, as a Lambda's
# bytecode; Keras before 3.12 loaded a TFSMLayer whatever the mode), with what loading them runs
CODE_LAYERS = {
    "Lambda": "",
    "TFSMLayer": "loads the TensorFlow SavedModel its filepath names, outside the file, and runs its graph",
}
# the layer whose config holds a pickled torch module, which `from_config` unpickles with torch.load(weights_only=False)
# (with safe_mode=False): judged by the restricted pickle reader (`loaders._keras_torch`)
TORCH_WRAPPER = "TorchModuleWrapper"
CODE_CLASSES = {"__lambda__"}
NAMED_FUNCTION_TYPE = "function"
MAX_CONFIG_NODES = 1_000_000


def snake(class_name: str) -> str:
    """Keras's own to_snake_case: 'Conv2D' -> 'conv2d', 'PReLU' -> 'p_re_lu', 'SimpleRNN' -> 'simple_rnn'."""
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", re.sub(r"\W+", "", class_name))
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def keras3_vars(cls: str, config: dict[str, Any], stored: int | None = None, own: str = "") -> list[str]:
    """The variable names a Keras 3 layer of class `cls` (snake_case) creates with this config. Where the file names
    no class, `cls` is the attribute that holds the layer and `own` its own name (Keras's auto name of its class,
    `dense_1`, or the name keras-hub gives it): `KERAS3_VARS` of either, the attribute's first, else
    `KERAS3_ATTRIBUTE_VARS` of either.

    Without a config (a .weights.h5 file), `stored` is how many variables the file holds for the layer: when it is
    fewer than the class can create, the optional ones it lacks are dropped, those off by default ('?flag') first,
    then the first first (a BatchNormalization(scale=False) of InceptionV3 holds beta and its two statistics, not
    gamma, beta and a mean).
    """
    own = re.sub(AUTO_SUFFIX, "", snake(own)) if own else ""
    declared = KERAS3_VARS.get(cls) or KERAS3_VARS.get(own) or _attribute_vars(cls, stored)
    declared = declared or (_attribute_vars(own, stored) if own else ())
    if config or stored is None:
        return [name for name, flag in declared if _creates(flag, config)]
    if stored >= len(declared):
        return [name for name, _ in declared]
    spare = stored - sum(flag is None for _, flag in declared)  # optional variables the layer holds
    flags = [(name, flag) for name, flag in declared if flag is not None]
    optional = [name for name, flag in flags if flag[0] == "?"] + [name for name, flag in flags if flag[0] != "?"]
    kept = set(optional[len(optional) - spare :]) if spare > 0 else set()
    return [name for name, flag in declared if flag is None or name in kept]


def _attribute_vars(attribute: str, stored: int | None) -> tuple[tuple[str, str | None], ...]:
    """The variables `KERAS3_ATTRIBUTE_VARS` gives a layer held as `attribute` holding `stored` of them, or none."""
    for name, count, declared in KERAS3_ATTRIBUTE_VARS:
        if (count is None or count == stored) and name.fullmatch(attribute):
            return declared
    return ()


def _creates(flag: str | None, config: dict[str, Any]) -> bool:
    if flag is None:
        return True
    if flag.startswith("-"):
        return config.get(flag[1:]) is None
    if flag.startswith("!"):
        return config.get(flag[1:]) is not True
    if flag.startswith("?"):
        flag = flag[1:]
        if "=" not in flag:
            return bool(config.get(flag))
    if "=" in flag:  # ('score_mode=concat': only where the config's word has that value)
        word, _, value = flag.partition("=")
        return config.get(word) == value
    return config.get(flag, True) is not False


def lora_sides(shape: Sequence[int]) -> tuple[int, int]:
    """(inputs, outputs) of the LoRA of a variable of `shape` (`LORA_FACTORS`): its factors hold rank x their sum."""
    return math.prod(shape[:-1]), shape[-1]


def _lora_rank(config: Any) -> int:
    """The `lora_rank` a layer's config gives (0: none)."""
    rank = config.get("lora_rank") if isinstance(config, dict) else None
    return rank if isinstance(rank, int) and not isinstance(rank, bool) and rank > 0 else 0


def merged_lora_findings(layers: Sequence[dict[str, Any]], tensors: Sequence[TensorInfo]) -> list[Finding]:
    """LORA_MERGED (info): the layers whose config gives a `lora_rank` and whose file holds the adapted variable
    without its LoRA's factors (a `.keras`: Keras merged them into it), and the count `load_model` then prints."""
    ranks = {layer["name"]: rank for layer in layers if (rank := _lora_rank(layer["config"]))}
    held: dict[str, set[str]] = {}  # each such layer's variables
    for t in tensors:
        if t.kind is TensorKind.PARAMETER and t.layer in ranks and t.param:
            held.setdefault(t.layer or "", set()).add(t.param)
    merged = [
        t
        for t in tensors
        if t.kind is TensorKind.PARAMETER
        and t.layer in ranks
        and t.param in LORA_FACTORS
        and not held[t.layer or ""] & set(LORA_FACTORS[t.param])
    ]
    if not merged:
        return []
    made = sum(ranks[t.layer or ""] * sum(lora_sides(t.shape)) for t in merged)
    params = [t for t in tensors if t.kind is TensorKind.PARAMETER]
    count, trainable = sum(t.n_elements for t in params), sum(t.n_elements for t in params if t.trainable)
    names = ", ".join(f"{t.layer!r} (rank {ranks[t.layer or '']})" for t in merged[:10])
    names += ", ..." if len(merged) > 10 else ""
    adapted = "/".join(sorted({str(t.param) for t in merged}))
    message = (
        f"{len(merged)} layer(s) with a lora_rank in the config hold their {adapted} with the LoRA merged into it and "
        f"no LoRA factors ({names}): keras.saving.load_model makes them anew, {made:,} trainable parameters (zeros), "
        f"and freezes the merged variables, so the loaded model's count_params() is {count + made:,} "
        f"({trainable + made:,} trainable); counted here as stored"
    )
    return [Finding(LORA_MERGED, Severity.INFO, message, tuple(t.name for t in merged))]


def trained(cls: str, param: str) -> bool:
    """Whether Keras trains a variable `param` of a layer of class `cls` (snake_case; '' when unknown)."""
    return param not in NON_TRAINABLE and param not in FROZEN_VARS.get(cls, ())


def _joined(attrs: dict[str, Any], key: str) -> list[str]:
    """layer_names / weight_names, including the split layer_names0, layer_names1... form."""
    if key in attrs:
        value = attrs[key]
        return [str(v) for v in value] if isinstance(value, list) else []
    out: list[str] = []
    i = 0
    while f"{key}{i}" in attrs:
        value = attrs[f"{key}{i}"]
        out += [str(v) for v in value] if isinstance(value, list) else []
        i += 1
    return out


def config_layers(config: Any) -> list[dict[str, Any]]:
    """[{name, class_name, config, trainable}] from a Keras model config (nested models flattened)."""
    out: list[dict[str, Any]] = []
    stack = [config]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            inner = node.get("config")
            if isinstance(inner, dict) and isinstance(inner.get("layers"), list):
                stack.extend(reversed(inner["layers"]))
                continue
            if "class_name" in node and isinstance(inner, dict):
                name = inner.get("name") or node.get("name")
                out.append(
                    {
                        "name": name,
                        "class_name": node["class_name"],
                        "config": inner,
                        "trainable": bool(inner.get("trainable", True)),
                    }
                )
    return out


def code_findings(config: Any) -> list[Finding]:
    """UNSAFE_CONTENT for what in a model config would run Python code when Keras loads it (as modelscan flags)."""
    hits: list[str] = []
    notes: list[Finding] = []  # (the globals a TorchModuleWrapper's module names)
    stack, budget = [config], MAX_CONFIG_NODES
    while stack and budget > 0:
        node = stack.pop()
        budget -= 1
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        stack.extend(node.values())
        cls, inner = node.get("class_name"), node.get("config")
        name = inner.get("name") if isinstance(inner, dict) else None
        if cls == TORCH_WRAPPER and isinstance(inner, dict):  # (its pickled module is judged: `_keras_torch`)
            from loaders import _keras_torch

            runs, named = _keras_torch.judged(inner.get("module"), str(name))
            notes += named
            if runs:
                hits.append(f"keras.layers.{cls} {str(name)[:80]!r} ({runs})")
        elif isinstance(cls, str) and cls in CODE_LAYERS:
            runs = CODE_LAYERS[cls]
            hits.append(f"keras.layers.{cls} {str(name)[:80]!r}" + (f" ({runs})" if runs else ""))
        elif cls in CODE_CLASSES:
            hits.append("a serialised Python lambda (marshalled bytecode)")
        kind = node.get("function_type")
        if kind is not None and kind != NAMED_FUNCTION_TYPE:
            hits.append(f"function_type {str(kind)[:40]!r} (marshalled bytecode)")
    if not hits:
        return notes
    unique = sorted(set(hits))
    message = f"the model config holds code Keras would run on load: {', '.join(unique[:10])}: not run"
    return [Finding("UNSAFE_CONTENT", Severity.ERROR, message, tuple(unique[:20])), *notes]


def _keras2(walked: _hdf5.H5Walk, attrs: dict[str, Any]) -> tuple[list[TensorInfo], dict[str, Any] | None]:
    prefix = "model_weights/" if any(d.path.startswith("model_weights/") for d in walked.datasets) else ""
    config = _parse_json(attrs.get("model_config"))
    layers = config_layers(config) if config else []
    frozen = {layer["name"] for layer in layers if not layer["trainable"]}
    classes = {layer["name"]: snake(str(layer["class_name"])) for layer in layers}
    # the layers whose LoRA Keras trains instead of their kernel (`enable_lora`: the config's `lora_rank`)
    lora = {layer["name"] for layer in layers if _lora_rank(layer["config"])}
    weight_layer: dict[str, str] = {}  # the config's layer of each weight
    held_layer: dict[str, str] = {}  # ... the layer it holds the weight's (`HELD_LAYERS`), where it is another
    group_attrs = _group_attrs(walked)
    for layer in _joined(group_attrs.get(prefix.rstrip("/"), attrs), "layer_names"):
        for weight in _joined(group_attrs.get(prefix + layer, {}), "weight_names"):
            # a nested model (flattened away in the config) holds its layers' weights, named '<its layer>/<param>'
            # (tf-keras) or '<model>/<its layer>/<param>' (Keras 3): the weight belongs to that layer, by the name
            # the config gives it (names may hold '/': DenseNet's 'conv1/bn')
            inner = weight.rpartition("/")[0]
            if layer not in classes and inner not in classes:
                inner = inner.removeprefix(layer + "/")
            weight_layer[f"{prefix}{layer}/{weight}"] = inner if layer not in classes and inner in classes else layer
            held = _held_layer(classes.get(layer) or re.sub(AUTO_SUFFIX, "", layer), layer, weight)  # (no config:
            # the class Keras's auto name says)
            if held:
                held_layer[f"{prefix}{layer}/{weight}"] = held
    tensors = []
    for d in walked.datasets:
        if d.path.startswith("optimizer_weights/"):
            tensors.append(_tensor(d, TensorKind.OPTIMIZER, "optimizer", None, None, False))
            continue
        layer = weight_layer.get(d.path) or d.path.removeprefix(prefix).split("/")[0]
        param = d.path.rsplit("/", 1)[-1].removesuffix(":0")
        kind = TensorKind.PARAMETER if d.path in weight_layer or d.path.startswith(prefix) else TensorKind.OTHER
        trainable = layer not in frozen and trained(classes.get(layer, ""), param)
        if layer in lora and param in LORA_FROZEN:
            trainable = False
        tensors.append(_tensor(d, kind, "model", held_layer.get(d.path, layer), param, trainable))
    cfg = {"source": "model_config", "layers": layers, "raw": config} if config else None
    return tensors, cfg


def _held_layer(cls: str, layer: str, weight: str) -> str:
    """The name of the layer that a layer `layer` of class `cls` (snake_case) holds for its weight `weight` ('' where
    the weight is the layer's own), by `HELD_LAYERS`: `multi_head_attention/query` for `multi_head_attention/query/
    kernel`."""
    parts = weight.split("/")
    if len(parts) < 3 or parts[0] != layer:
        return ""
    for start, name in HELD_LAYERS.get(cls, ()):
        if parts[1].startswith(start):
            return f"{layer}/{name or parts[1]}"
    return ""


def _group_attrs(walked: _hdf5.H5Walk) -> dict[str, dict[str, Any]]:
    return walked.group_attrs


def _parse_json(value: Any) -> Any:
    if not isinstance(value, str):
        return None
    try:
        return loads(value)
    except ValueError:
        return None


def _keras3(walked: _hdf5.H5Walk, layers: Sequence[dict[str, Any]]) -> list[TensorInfo]:
    by_name = {layer["name"]: layer for layer in layers}
    group_attrs = _group_attrs(walked)
    stored = Counter(d.path.rpartition("/")[0] for d in walked.datasets)  # variables per `vars` group
    owners = {tuple(_owner(group.split("/"))) for group in stored}
    listed = _listed(owners, group_attrs, by_name)
    names = _layer_names(owners, group_attrs, listed if listed is not None else _model_paths(group_attrs))
    tensors = []
    torch_kinds: dict[str, dict[str, TensorKind]] = {}  # a TorchModuleWrapper's module's tensors' kinds, by layer
    for d in walked.datasets:
        parts = d.path.split("/")
        if parts[0] == "optimizer":
            tensors.append(_tensor(d, TensorKind.OPTIMIZER, "optimizer", None, None, False))
            continue
        if len(parts) >= 2 and parts[-2] == "vars" and not parts[-1].isdigit():
            real = names.get(tuple(_owner(parts[:-1])), "")
            layer = by_name.get(real, {})
            if layer.get("class_name") == TORCH_WRAPPER:  # its torch module's state dict, by its names
                # (`TorchModuleWrapper.save_own_variables`): the module's parameters are the layer's weights (Keras
                # counts them), its buffers not, as its pickle in the config holds them (a module it cannot read:
                # each a parameter)
                kinds = torch_kinds.get(real)
                if kinds is None:
                    from loaders import _keras_torch

                    inner = layer.get("config")
                    module = inner.get("module") if isinstance(inner, dict) else None
                    kinds = torch_kinds[real] = _keras_torch.module_kinds(module)
                kind = kinds.get(parts[-1], TensorKind.PARAMETER)
                trainable = kind is TensorKind.PARAMETER and bool(layer.get("trainable", True))
                tensors.append(_tensor(d, kind, "model", real, parts[-1], trainable))
                continue
        if len(parts) < 2 or parts[-2] != "vars" or not parts[-1].isdigit():
            tensors.append(_tensor(d, TensorKind.OTHER, "", None, None, False))
            continue
        index = int(parts[-1])
        owner = _owner(parts[:-1])
        auto = owner[-1] if owner and owner[0] == "layers" else ""
        side = BIDIRECTIONAL_SIDES.get(auto)
        if side is not None:  # layers/bidirectional/forward_layer/cell/vars/N: the wrapped RNN of one direction
            outer = group_attrs.get("/".join(owner[:-1] + ["vars"]), {}).get("name") or owner[-2]
            layer = by_name.get(outer, {})
            wrapped = layer.get("config", {}).get("backward_layer" if side == "backward" else "layer") or layer.get(
                "config", {}
            ).get("layer", {})
            real = f"{outer}/{side}"
            cls = snake(wrapped.get("class_name", "")) if isinstance(wrapped, dict) else ""
            cls = cls or RNN_CELL  # (no config: a wrapped RNN all the same)
            inner = wrapped.get("config", {}) if isinstance(wrapped, dict) else {}
        else:
            real = names[tuple(owner)]
            layer = by_name.get(real) or _wrapped(real, by_name)
            cls = snake(layer.get("class_name", "")) or re.sub(AUTO_SUFFIX, "", auto)
            inner = layer.get("config", {})
        own = real.rpartition("/")[2]
        order = keras3_vars(cls, inner if isinstance(inner, dict) else {}, stored[d.path.rpartition("/")[0]], own)
        param = order[index] if index < len(order) else f"var{index}"
        trainable = bool(layer.get("trainable", True)) and trained(cls, param)
        if param in LORA_FROZEN and _lora_rank(inner):  # (the merged variable a model loaded from the file freezes)
            trainable = False
        tensors.append(_tensor(d, TensorKind.PARAMETER, "model", real, param, trainable))
    return tensors


def _wrapped(real: str, by_name: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The config entry of the layer a TimeDistributed `<holder>/<name>` wraps (its config's `layer`), or {}."""
    holder, _, own = real.rpartition("/")
    outer = by_name.get(holder, {})
    inner = outer.get("config", {}).get("layer")
    if not isinstance(inner, dict) or not isinstance(inner.get("config"), dict) or inner["config"].get("name") != own:
        return {}
    return {"class_name": inner.get("class_name", ""), "config": inner["config"], "trainable": outer.get("trainable")}


def _owner(group: list[str]) -> list[str]:
    """The path of the layer whose `vars` group is `group` (RNN weights sit in its cell)."""
    return group[: group.index("cell")] if "cell" in group else group[:-1]


def _layer_names(
    owners: set[tuple[str, ...]], group_attrs: dict[str, dict[str, Any]], models: Models
) -> dict[tuple[str, ...], str]:
    """Each layer path's name (`_layer_name`); names that two layers would share (two nested models each with an
    `encoder_block_0`: CLIP's towers) are named after the models that hold them too."""
    names = {owner: _layer_name(list(owner), group_attrs, models) for owner in owners}
    shared = {name for name, n in Counter(names.values()).items() if n > 1}
    return {o: _layer_name(list(o), group_attrs, models, True) if name in shared else name for o, name in names.items()}


def _layer_name(
    owner: list[str], group_attrs: dict[str, dict[str, Any]], models: Models, through_models: bool = False
) -> str:
    """The name of the layer whose variables sit under the path `owner` of a Keras 3 .weights.h5.

    It is the name Keras 3 writes beside the variables; else the path's own names, which are numbered per container
    ('sequential/conv2d' in a nested model, not the top level's 'conv2d'). A layer another layer holds as an
    attribute (keras-hub's `decoder_block_0/attention/query`, a MultiHeadAttention's `query`: the part before its
    own is not a model's `layers`) is named after its holder too, as Keras names its variables (`variable.path`):
    a name such as `query` or `dense_1` repeats in every block. A layer in a model's `layers` is named as the model
    config names it: without the models holding it, unless `through_models`; a layer in the `layers` list of a layer
    that is no model (`models`: keras-hub's DINOv2 encoder's `layers_0`) after its holder (`encoder/layers_0`), as
    Keras does.
    """
    own = group_attrs.get("/".join(owner + ["vars"]), {}).get("name")
    if not own:  # (tf-keras writes no names: the path's own, each name after a `layers` and each attribute)
        return _path_name(owner) if owner and owner[0] == "layers" else "model"
    for end in range(len(owner) - 1, 1, -1):  # the nearest holder with variables of its own (lists have none)
        holder = group_attrs.get("/".join(owner[:end] + ["vars"]), {}).get("name")
        if owner[end] == "layers" and not through_models and _is_model(owner[:end], group_attrs, models):
            break
        if holder:
            return f"{_layer_name(owner[:end], group_attrs, models, through_models)}/{own}"
    return str(own)


def _listed(
    owners: set[tuple[str, ...]], group_attrs: dict[str, dict[str, Any]], by_name: dict[str, dict[str, Any]]
) -> frozenset[str] | None:
    """The layer names the model config lists, where it lists the model's layers (a functional model's, a
    Sequential's); None where it does not (a preset, or a `.keras` archive of a keras-hub backbone: its config is the
    backbone's arguments, none of its top-level layers)."""
    top = (group_attrs.get("/".join((*owner, "vars")), {}).get("name") for owner in owners if len(owner) == 2)
    return frozenset(by_name) if any(name in by_name for name in top) else None


def _model_paths(group_attrs: dict[str, dict[str, Any]]) -> set[tuple[str, ...]]:
    """Without a config, the paths of the models: the holders whose `layers` list holds an input layer (a functional
    model's, a Sequential built on an Input; a layer's own list, DINOv2's encoder's, holds none)."""
    models = set()
    for group in group_attrs:
        parts = group.split("/")
        for i in range(1, len(parts)):
            if parts[i].startswith(INPUT_LAYER) and parts[i - 1] == "layers":
                models.add(tuple(parts[: i - 1]))
    return models


def _is_model(holder: list[str], group_attrs: dict[str, dict[str, Any]], models: Models) -> bool:
    """Whether the layer at path `holder` (one whose `layers` list is read) is a model: where the config lists the
    model's layers (`models` their names), one it does not list (it lists nested models' layers, not them); else
    one of the `models` paths."""
    if isinstance(models, set):
        return tuple(holder) in models
    return group_attrs.get("/".join(holder + ["vars"]), {}).get("name") not in models


def _path_name(owner: list[str]) -> str:
    """A layer's name from its path alone: `layers/sequential/layers/conv2d` -> `sequential/conv2d` (a nested model's
    layer), `layers/multi_head_attention/_query_dense` -> `multi_head_attention/_query_dense` (a layer's attribute)."""
    names, listed = [], False
    for part in owner:
        if part == "layers" and not listed:
            listed = True
            continue
        names.append(part)
        listed = False
    return "/".join(names)


def _tensor(
    d: _hdf5.H5Dataset, kind: TensorKind, section: str, layer: str | None, param: str | None, trainable: bool
) -> TensorInfo:
    notes: list[str] = []
    if d.storage_size == 0 and d.nbytes:
        notes.append("never written: no storage allocated")
    if d.filtered:
        notes.append(f"compressed: {d.storage_size:,} bytes stored")
    if d.chunks:
        notes.append(f"chunked: {len(d.chunks)} chunks")
    return TensorInfo(
        d.path,
        d.shape,
        d.dtype,
        d.nbytes,
        d.offset,
        kind=kind,
        trainable=trainable,
        section=section,
        layer=layer,
        param=param,
        notes=tuple(notes),
    )


def read(
    probe: Probe, fmt: str, start: int = 0, length: int | None = None, layers: Sequence[dict[str, Any]] = ()
) -> tuple[str, list[TensorInfo], list[Region], dict[str, Any], Any]:
    """(format, tensors, regions, root attributes, config) of a Keras HDF5 file or window."""
    length = probe.size - start if length is None else length
    walked = _hdf5.walk(probe, fmt, start, length)
    attrs = walked.attrs
    paths = {d.path for d in walked.datasets}
    groups = _group_attrs(walked)
    if "layer_names" in attrs or "layer_names0" in attrs or "model_weights" in groups:
        fmt_name = KERAS2
        tensors, config = _keras2(walked, attrs)
    elif any(p.startswith(("layers/", "vars/", "optimizer/vars/")) for p in paths) or "vars" in groups:
        fmt_name = KERAS3
        tensors, config = _keras3(walked, layers), None
    else:
        fmt_name = GENERIC
        tensors, config = [_tensor(d, TensorKind.PARAMETER, "", None, None, True) for d in walked.datasets], None
    regions = _hdf5.place(walked, start, length)
    return fmt_name, tensors, regions, attrs, config


class KerasH5Loader:
    """HDF5 files: Keras 2 .h5, Keras 3 .weights.h5, and other HDF5 files (datasets listed)."""

    name: ClassVar[str] = KERAS2
    extensions: ClassVar[tuple[str, ...]] = (".h5", ".hdf5", ".keras")

    def claim(self, probe: Probe) -> Claim | None:
        return Claim.EXACT if probe.hdf5_head_offset is not None else None

    def late_claim(self, probe: Probe) -> Claim | None:
        """The signature after a user block larger than the head (read at 4096, 8192, ...)."""
        return Claim.EXACT if probe.hdf5_offset is not None else None

    def load(self, probe: Probe) -> Checkpoint:
        fmt, tensors, regions, attrs, config = read(probe, KERAS2)
        attributes: dict[str, str] = {k: str(attrs[k]) for k in ("keras_version", "backend") if k in attrs}
        if "training_config" in attrs:
            attributes["training_config"] = "present"
        framework = "hdf5" if fmt == GENERIC else "keras"
        findings = code_findings(config["raw"]) if config else []
        preset = _keras_hub.preset_beside(probe) if fmt == KERAS3 else None
        if preset is not None:  # keras-hub's save_to_preset: its backbone class and parameter count beside the file
            hub_config, metadata = preset
            cls = str(hub_config["class_name"])
            tensors = _keras_hub.frozen(tensors, cls)
            attributes |= _keras_hub.attributes(cls, metadata)
            findings += _keras_hub.count_findings(metadata, tensors) + _keras_hub.config_findings(hub_config, tensors)
            findings += code_findings(hub_config)  # (from_preset deserialises it as load_model does a .keras config)
        return single_file(probe, fmt, framework, tensors, regions, attributes, findings, config=config)
