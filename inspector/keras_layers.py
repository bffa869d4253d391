"""Keras layers as one table: the config words each class takes, its formula, and its output shape.

Both ways of stating a Keras model go through `KERAS_LAYERS`: a layer list on the command line
(`"Input(16,16,3) Conv2D(8,3,use_bias=false) BatchNormalization(center=false) Flatten Dense(10)"`, shapes
propagated) and a file's own model config (input sizes read from the file's kernels). A keyword the
table does not list for a class is refused, never silently dropped; `use_bias`, `center`, `scale`,
`kernel_size`, `strides`, `padding`, `dilation_rate`, `groups`, `depth_multiplier` and `reset_after` are
honoured as Keras honours them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from inspector.errors import SpecError
from inspector.formulas import (
    GRU,
    LSTM,
    BatchNorm,
    Block,
    Conv,
    Convention,
    Dense,
    Embedding,
    LayerSpec,
    LoRA,
    Norm,
    SimpleRNN,
    Tensor,
)
from inspector.recordtype import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

Shape = tuple[int | None, ...]  # batch dimension left out; None: unknown
CONV_WORDS = frozenset({"filters", "kernel_size", "strides", "padding", "dilation_rate", "use_bias", "groups"})
RNN_WORDS = frozenset({"units", "use_bias", "return_sequences", "reset_after"})
NORM_WORDS = frozenset({"center", "scale", "axis"})


@record(frozen=True)
class KerasLayer:
    """One Keras class: positional words, accepted keywords, specs from (config, input shape), output shape."""

    positional: tuple[str, ...]
    keywords: frozenset[str]
    specs: Callable[[Mapping[str, Any], Shape, str], tuple[LayerSpec, ...]]
    shape: Callable[[Mapping[str, Any], Shape], Shape]
    base_name: str = ""  # Keras's auto name ('conv2d'); '' : the class has no parameters
    dims: int = 0  # spatial dimensions of a conv or pooling layer


def _tuple(value: Any, dims: int) -> tuple[int, ...]:
    if isinstance(value, (list, tuple)):
        out = tuple(int(v) for v in value)
    else:
        out = (int(value),) * dims
    if len(out) != dims or any(v <= 0 for v in out):
        raise SpecError(f"expected {dims} positive sizes, got {value!r}")
    return out


def _flag(cfg: Mapping[str, Any], key: str, default: bool = True) -> bool:
    value = cfg.get(key, default)
    if isinstance(value, str):
        if value.lower() in ("true", "1", "yes"):
            return True
        if value.lower() in ("false", "0", "no"):
            return False
        raise SpecError(f"{key} must be true or false, got {value!r}")
    return bool(value)


def _channels(shape: Shape) -> int:
    if not shape or shape[-1] is None:
        raise SpecError("the input size is unknown here: start the list with Input(...)")
    return shape[-1]


def _spatial(cfg: Mapping[str, Any], shape: Shape, dims: int, transposed: bool = False) -> tuple[int | None, ...]:
    """Output spatial sizes of a conv or pooling layer, as Keras computes them."""
    kernel = _tuple(cfg.get("kernel_size", cfg.get("pool_size", 2)), dims)
    strides = _tuple(cfg.get("strides") or (1 if "kernel_size" in cfg else kernel), dims)
    dilation = _tuple(cfg.get("dilation_rate", 1), dims)
    padding = str(cfg.get("padding", "valid")).lower()
    if padding not in ("valid", "same", "causal"):
        raise SpecError(f"padding must be valid or same, got {padding!r}")
    sizes = shape[:-1] if len(shape) == dims + 1 else (None,) * dims
    out: list[int | None] = []
    for n, k, s, d in zip(sizes, kernel, strides, dilation, strict=True):
        if n is None:
            out.append(None)
            continue
        span = (k - 1) * d + 1
        if transposed:
            out.append(n * s if padding == "same" else (n - 1) * s + span)
        else:
            out.append(math.ceil(n / s) if padding in ("same", "causal") else (n - span) // s + 1)
        if out[-1] is not None and out[-1] <= 0:
            raise SpecError("the input is too small for that kernel")
    return tuple(out)


def _conv(dims: int, transposed: bool = False) -> KerasLayer:
    def specs(cfg: Mapping[str, Any], shape: Shape, name: str) -> tuple[LayerSpec, ...]:
        groups = int(cfg.get("groups", 1))
        kernel = _tuple(cfg["kernel_size"], dims)
        return (Conv(_channels(shape), int(cfg["filters"]), kernel, _flag(cfg, "use_bias"), name=name, groups=groups),)

    def out(cfg: Mapping[str, Any], shape: Shape) -> Shape:
        return (*_spatial(cfg, shape, dims, transposed), int(cfg["filters"]))

    base = f"conv{dims}d" + ("_transpose" if transposed else "")
    return KerasLayer(("filters", "kernel_size"), CONV_WORDS, specs, out, base, dims)


def _depthwise(dims: int) -> KerasLayer:
    def specs(cfg: Mapping[str, Any], shape: Shape, name: str) -> tuple[LayerSpec, ...]:
        c, m = _channels(shape), int(cfg.get("depth_multiplier", 1))
        return (Conv(c, c * m, _tuple(cfg["kernel_size"], dims), _flag(cfg, "use_bias"), name=name, groups=c),)

    def out(cfg: Mapping[str, Any], shape: Shape) -> Shape:
        return (*_spatial(cfg, shape, dims), _channels(shape) * int(cfg.get("depth_multiplier", 1)))

    words = (CONV_WORDS - {"filters", "groups"}) | {"depth_multiplier"}
    return KerasLayer(("kernel_size",), words, specs, out, f"depthwise_conv{dims}d", dims)


def _separable(dims: int) -> KerasLayer:
    def specs(cfg: Mapping[str, Any], shape: Shape, name: str) -> tuple[LayerSpec, ...]:
        c, m, f = _channels(shape), int(cfg.get("depth_multiplier", 1)), int(cfg["filters"])
        parts = (
            ("depthwise", Conv(c, c * m, _tuple(cfg["kernel_size"], dims), False, groups=c)),
            ("pointwise", Conv(c * m, f, (1,) * dims, _flag(cfg, "use_bias"))),
        )
        return (Block(parts, "SeparableConv", name=name),)

    def out(cfg: Mapping[str, Any], shape: Shape) -> Shape:
        return (*_spatial(cfg, shape, dims), int(cfg["filters"]))

    words = (CONV_WORDS - {"groups"}) | {"depth_multiplier"}
    return KerasLayer(("filters", "kernel_size"), words, specs, out, f"separable_conv{dims}d", dims)


def _recurrent(cls: type[SimpleRNN] | type[LSTM] | type[GRU]) -> KerasLayer:
    def specs(cfg: Mapping[str, Any], shape: Shape, name: str) -> tuple[LayerSpec, ...]:
        extra = {"reset_after": _flag(cfg, "reset_after")} if cls is GRU else {}
        bias = _flag(cfg, "use_bias")
        return (cls(_channels(shape), int(cfg["units"]), Convention.KERAS, bias, name=name, **extra),)

    def out(cfg: Mapping[str, Any], shape: Shape) -> Shape:
        units = int(cfg["units"])
        return (*shape[:-1], units) if _flag(cfg, "return_sequences", False) else (units,)

    words = RNN_WORDS if cls is GRU else RNN_WORDS - {"reset_after"}
    base = {SimpleRNN: "simple_rnn", LSTM: "lstm", GRU: "gru"}[cls]
    return KerasLayer(("units",), words, specs, out, base)


def _bidirectional_specs(cfg: Mapping[str, Any], shape: Shape, name: str) -> tuple[LayerSpec, ...]:
    out: list[LayerSpec] = []
    for side, key in (("forward", "layer"), ("backward", "backward_layer")):
        inner = cfg.get(key) or cfg["layer"]  # (a backward layer of its own where the config gives one)
        if not isinstance(inner, Mapping) or inner.get("class_name") not in ("SimpleRNN", "LSTM", "GRU"):
            raise SpecError("Bidirectional wraps a SimpleRNN, LSTM or GRU")
        out += KERAS_LAYERS[inner["class_name"]].specs(inner.get("config", {}), shape, f"{name}/{side}")
    return tuple(out)


def _bidirectional_shape(cfg: Mapping[str, Any], shape: Shape) -> Shape:
    inner = cfg["layer"]
    one = KERAS_LAYERS[inner["class_name"]].shape(inner.get("config", {}), shape)
    concat = str(cfg.get("merge_mode", "concat")) == "concat"
    return (*one[:-1], one[-1] * 2 if concat and one[-1] is not None else one[-1])


def _wrapped(cfg: Mapping[str, Any]) -> KerasLayer:
    inner = cfg["layer"]
    layer = KERAS_LAYERS.get(inner.get("class_name", "")) if isinstance(inner, Mapping) else None
    if layer is None or inner.get("class_name") in ("TimeDistributed", "Bidirectional"):
        raise SpecError("TimeDistributed wraps one layer of the table")
    return layer


def _time_distributed_specs(cfg: Mapping[str, Any], shape: Shape, name: str) -> tuple[LayerSpec, ...]:
    """The wrapped layer's, applied to each step (the input less its first axis), named as Keras names the wrapped
    layer's variables (`time_distributed/dense`)."""
    layer = _wrapped(cfg)
    return layer.specs(cfg["layer"].get("config", {}), shape[1:], f"{name}/{layer.base_name}")


def _time_distributed_shape(cfg: Mapping[str, Any], shape: Shape) -> Shape:
    return (*shape[:1], *_wrapped(cfg).shape(cfg["layer"].get("config", {}), shape[1:]))


def _none(cfg: Mapping[str, Any], shape: Shape, name: str) -> tuple[LayerSpec, ...]:
    return ()


def _same(cfg: Mapping[str, Any], shape: Shape) -> Shape:
    return shape


def _flatten(cfg: Mapping[str, Any], shape: Shape) -> Shape:
    if any(d is None for d in shape):
        raise SpecError("Flatten needs a known input shape: give Input(...)")
    return (math.prod(shape),)  # type: ignore[arg-type]


def _pool(dims: int, global_: bool = False) -> KerasLayer:
    def out(cfg: Mapping[str, Any], shape: Shape) -> Shape:
        if global_:
            return (shape[-1],)
        pool = {"kernel_size": cfg.get("pool_size", 2), "strides": cfg.get("strides") or cfg.get("pool_size", 2)}
        return (*_spatial(pool | {"padding": cfg.get("padding", "valid")}, shape, dims), shape[-1])

    words = frozenset() if global_ else frozenset({"pool_size", "strides", "padding"})
    return KerasLayer(() if global_ else ("pool_size",), words, _none, out, "", dims)


def _norm_specs(cfg: Mapping[str, Any], shape: Shape, name: str, batch: bool) -> tuple[LayerSpec, ...]:
    c, scale, center = _channels(shape), _flag(cfg, "scale"), _flag(cfg, "center")
    if _flag(cfg, "rms_scaling", False):  # (Keras 3's LayerNormalization then creates its gamma only)
        scale, center = True, False
    if batch:
        return (BatchNorm(c, Convention.KERAS, name=name, scale=scale, shift=center),)
    return (Norm(c, scale, center, "LayerNormalization", name=name),)


def _normalization_specs(cfg: Mapping[str, Any], shape: Shape, name: str) -> tuple[LayerSpec, ...]:
    """Normalization adapts a mean and a variance per kept axis, and a sample count, unless its config gives them."""
    if cfg.get("mean") is not None:
        return ()
    axis = cfg.get("axis", -1)
    kept = [shape[a] for a in (axis if isinstance(axis, (list, tuple)) else (axis,))]
    if any(d is None for d in kept):
        raise SpecError("Normalization needs a known input shape: give Input(...)")
    return (_normalization(tuple(kept), name),)  # type: ignore[arg-type]


def _normalization(kept: tuple[int, ...], name: str) -> LayerSpec:
    parts = (("mean", Tensor(kept, "mean")), ("variance", Tensor(kept, "variance")), ("count", Tensor((), "count")))
    return Block(parts, "Normalization", name=name)


def _prelu_specs(cfg: Mapping[str, Any], shape: Shape, name: str) -> tuple[LayerSpec, ...]:
    shared = cfg.get("shared_axes") or ()
    sizes = tuple(1 if i + 1 in shared else d for i, d in enumerate(shape))
    if any(d is None for d in sizes):
        raise SpecError("PReLU needs a known input shape: give Input(...)")
    return (Tensor(sizes, "PReLU", name=name),)  # type: ignore[arg-type]


def _units(value: Any) -> int:
    """An EinsumDense output size: an int, or a shape whose product it is."""
    return math.prod(int(v) for v in value) if isinstance(value, (list, tuple)) else int(value)


def _attention_projections(cfg: Mapping[str, Any], inputs: tuple[int, int, int]) -> dict[str, tuple[int, int]]:
    """(inputs, outputs) of each EinsumDense projection a MultiHeadAttention or GroupQueryAttention builds, by the
    name Keras gives it, from its config and the last sizes of its query, key and value inputs (keras/src/layers/
    attention/multi_head_attention.py and grouped_query_attention.py, `build`)."""
    query, key, value = inputs
    if "num_query_heads" in cfg:  # GroupQueryAttention: fewer key/value heads than query heads
        q_width = int(cfg["num_query_heads"]) * int(cfg["head_dim"])
        kv_width = int(cfg["num_key_value_heads"]) * int(cfg["head_dim"])
        v_width, out = kv_width, query
    else:
        heads, key_dim = int(cfg["num_heads"]), int(cfg["key_dim"])
        q_width = kv_width = heads * key_dim
        v_width = heads * int(cfg.get("value_dim") or key_dim)
        out = _units(cfg["output_shape"]) if cfg.get("output_shape") else query
    sizes = {"query": (query, q_width), "key": (key, kv_width), "value": (value, v_width)}
    if _flag(cfg, "use_gate", False):  # (a sigmoid gate on the heads' output, read from the query)
        sizes["gate"] = (query, v_width if "num_heads" in cfg else q_width)
    sizes["attention_output"] = (v_width if "num_heads" in cfg else q_width, out)
    return sizes


def _attention_specs(cfg: Mapping[str, Any], inputs: tuple[int, int, int], name: str) -> tuple[LayerSpec, ...]:
    """One Dense spec per projection, named as Keras names the layer it holds (`multi_head_attention/query`)."""
    bias = _flag(cfg, "use_bias")
    projections = _attention_projections(cfg, inputs)
    return tuple(Dense(n_in, n_out, bias, name=f"{name}/{part}") for part, (n_in, n_out) in projections.items())


def _attention(base: str, positional: tuple[str, ...], words: frozenset[str]) -> KerasLayer:
    """Self-attention in a layer list: query, key and value are the input."""

    def specs(cfg: Mapping[str, Any], shape: Shape, name: str) -> tuple[LayerSpec, ...]:
        return _attention_specs(cfg, (_channels(shape),) * 3, name)

    def out(cfg: Mapping[str, Any], shape: Shape) -> Shape:
        return (*shape[:-1], _attention_projections(cfg, (_channels(shape),) * 3)["attention_output"][1])

    return KerasLayer(positional, words | {"use_bias", "use_gate"}, specs, out, base)


def _dot_attention_specs(cfg: Mapping[str, Any], shape: Shape, name: str) -> tuple[LayerSpec, ...]:
    """Keras's `Attention`: a learned scalar scale (`use_scale`) and, scoring by `score_mode="concat"`, a scalar
    weight of the scores; nothing else (keras/src/layers/attention/attention.py, `build`)."""
    parts = (("scale", _flag(cfg, "use_scale", False)), ("concat_score_weight", cfg.get("score_mode") == "concat"))
    made = tuple((part, Tensor((), part)) for part, held in parts if held)
    return (Block(made, "Attention", name=name),) if made else ()


def _additive_attention_specs(cfg: Mapping[str, Any], shape: Shape, name: str) -> tuple[LayerSpec, ...]:
    """Keras's `AdditiveAttention`: a scale for each feature of the query (`use_scale`, true by default)."""
    return (Tensor((_channels(shape),), "AdditiveAttention", name=name),) if _flag(cfg, "use_scale") else ()


def _conv_lstm(dims: int) -> KerasLayer:
    def specs(cfg: Mapping[str, Any], shape: Shape, name: str) -> tuple[LayerSpec, ...]:
        kernel, filters = _tuple(cfg["kernel_size"], dims), int(cfg["filters"])
        parts = (
            ("kernel", Conv(_channels(shape), 4 * filters, kernel, _flag(cfg, "use_bias"))),
            ("recurrent_kernel", Conv(filters, 4 * filters, kernel, False)),
        )
        return (Block(parts, f"ConvLSTM{dims}D", name=name),)

    def out(cfg: Mapping[str, Any], shape: Shape) -> Shape:
        step = _spatial(cfg, shape[1:], dims) if len(shape) == dims + 2 else (None,) * dims
        head = shape[:1] if _flag(cfg, "return_sequences", False) else ()
        return (*head, *step, int(cfg["filters"]))

    words = CONV_WORDS - {"groups"} | {"return_sequences"}
    return KerasLayer(("filters", "kernel_size"), words, specs, out, f"conv_lstm{dims}d", dims)


KERAS_LAYERS: Mapping[str, KerasLayer] = {
    "Dense": KerasLayer(
        ("units",),
        frozenset({"units", "use_bias"}),
        lambda cfg, shape, name: (Dense(_channels(shape), int(cfg["units"]), _flag(cfg, "use_bias"), name=name),),
        lambda cfg, shape: (*shape[:-1], int(cfg["units"])),
        "dense",
    ),
    "Embedding": KerasLayer(
        ("input_dim", "output_dim"),
        frozenset({"input_dim", "output_dim"}),
        lambda cfg, shape, name: (Embedding(int(cfg["input_dim"]), int(cfg["output_dim"]), name=name),),
        lambda cfg, shape: (*shape, int(cfg["output_dim"])),
        "embedding",
    ),
    **{f"Conv{d}D": _conv(d) for d in (1, 2, 3)},
    **{f"Conv{d}DTranspose": _conv(d, transposed=True) for d in (1, 2, 3)},
    **{f"DepthwiseConv{d}D": _depthwise(d) for d in (1, 2)},
    **{f"SeparableConv{d}D": _separable(d) for d in (1, 2)},
    "MultiHeadAttention": _attention(
        "multi_head_attention",
        ("num_heads", "key_dim"),
        frozenset({"num_heads", "key_dim", "value_dim", "output_shape"}),
    ),
    **dict.fromkeys(  # (GroupQueryAttention is an alias Keras 3 saves under either name)
        ("GroupQueryAttention", "GroupedQueryAttention"),
        _attention(
            "grouped_query_attention",
            ("head_dim", "num_query_heads", "num_key_value_heads"),
            frozenset({"head_dim", "num_query_heads", "num_key_value_heads"}),
        ),
    ),
    # (query and value the input in a layer list; in a file, the query's size is the scale's)
    "Attention": KerasLayer((), frozenset({"use_scale", "score_mode"}), _dot_attention_specs, _same, "attention"),
    "AdditiveAttention": KerasLayer(
        (), frozenset({"use_scale"}), _additive_attention_specs, _same, "additive_attention"
    ),
    **{f"ConvLSTM{d}D": _conv_lstm(d) for d in (1, 2, 3)},
    "SimpleRNN": _recurrent(SimpleRNN),
    "LSTM": _recurrent(LSTM),
    "GRU": _recurrent(GRU),
    "Bidirectional": KerasLayer(
        ("layer",), frozenset({"layer", "merge_mode"}), _bidirectional_specs, _bidirectional_shape, "bidirectional"
    ),
    "TimeDistributed": KerasLayer(
        ("layer",), frozenset({"layer"}), _time_distributed_specs, _time_distributed_shape, "time_distributed"
    ),
    "BatchNormalization": KerasLayer(
        (), NORM_WORDS, lambda c, s, n: _norm_specs(c, s, n, True), _same, "batch_normalization"
    ),
    "LayerNormalization": KerasLayer(
        (), NORM_WORDS | {"rms_scaling"}, lambda c, s, n: _norm_specs(c, s, n, False), _same, "layer_normalization"
    ),
    "PReLU": KerasLayer((), frozenset({"shared_axes"}), _prelu_specs, _same, "p_re_lu"),
    "Normalization": KerasLayer(
        (), frozenset({"axis", "mean", "variance", "invert"}), _normalization_specs, _same, "normalization"
    ),  # fmt: skip
    "Flatten": KerasLayer((), frozenset(), _none, _flatten),
    **{f"MaxPooling{d}D": _pool(d) for d in (1, 2, 3)},
    **{f"AveragePooling{d}D": _pool(d) for d in (1, 2, 3)},
    **{f"GlobalAveragePooling{d}D": _pool(d, True) for d in (1, 2, 3)},
    **{f"GlobalMaxPooling{d}D": _pool(d, True) for d in (1, 2, 3)},
    **{name: KerasLayer((), frozenset({"rate"}), _none, _same) for name in ("Dropout", "SpatialDropout1D")},
    **{name: KerasLayer(("activation",), frozenset({"activation"}), _none, _same) for name in ("Activation",)},
    **{name: KerasLayer((), frozenset(), _none, _same) for name in ("ReLU", "Softmax", "LeakyReLU")},
}


# -- a file's model config ---------------------------------------------------------------------------------------

# where a layer's input size sits in its first variable (for the config path, which has no shapes of its own)
INPUT_FROM: Mapping[str, tuple[str, int]] = {
    "Dense": ("kernel", 0),
    **{f"Conv{d}D": ("kernel", -2) for d in (1, 2, 3)},
    **{f"Conv{d}DTranspose": ("kernel", -1) for d in (1, 2, 3)},
    **{f"DepthwiseConv{d}D": ("kernel", -2) for d in (1, 2)},
    **{f"SeparableConv{d}D": ("depthwise_kernel", -2) for d in (1, 2)},
    **dict.fromkeys(("SimpleRNN", "LSTM", "GRU"), ("kernel", 0)),
    **{f"ConvLSTM{d}D": ("kernel", -2) for d in (1, 2, 3)},
    "BatchNormalization": ("moving_mean", 0),
    "LayerNormalization": ("gamma", 0),
    "AdditiveAttention": ("scale", 0),
}
# the layers whose formula their config gives alone (no input size)
SIZED_BY_CONFIG = frozenset({"Embedding", "Attention"})


# the layers whose kernels give an attention layer's query, key and value sizes
ATTENTION_INPUTS = dict.fromkeys(
    ("MultiHeadAttention", "GroupQueryAttention", "GroupedQueryAttention"), ("query", "key", "value")
)


def config_specs(entry: Mapping[str, Any], variables: Mapping[str, Mapping[str, tuple[int, ...]]]) -> list[LayerSpec]:
    """The specs of one layer of a Keras model config; input sizes from the file's variables.

    `variables` maps a file layer name ('conv2d', 'bidirectional/forward') to {param: shape}.
    """
    cls, cfg, name = entry.get("class_name", ""), entry.get("config", {}), entry.get("name", "")
    layer = KERAS_LAYERS.get(cls)
    if layer is None:  # a class the table has no formula for (LayerScale, a custom layer): as the file holds it
        return as_stored(cls, name, variables.get(name, {}))
    if not layer.base_name:
        return []
    if cls == "Bidirectional":
        file = variables.get(f"{name}/forward", {})
        shape: Shape = (file["kernel"][0],) if "kernel" in file else ()
        return list(layer.specs(cfg, shape, name)) if shape else []
    if cls in ATTENTION_INPUTS:  # its query, key and value sizes: the first axis of each projection's kernel
        kernels = [variables.get(f"{name}/{part}", {}).get("kernel") for part in ATTENTION_INPUTS[cls]]
        sizes = [k[0] for k in kernels if k]
        return list(_attention_specs(cfg, (sizes[0], sizes[1], sizes[2]), name)) if len(sizes) == 3 else []
    if cls == "TimeDistributed":  # the wrapped layer's formula, under the name its variables have: Keras 3's
        inner, held = cfg["layer"], cfg["layer"]["config"]  # `time_distributed/dense`, tf-keras' `time_distributed`
        own = f"{name}/{held['name']}"
        return config_specs({**inner, "config": held, "name": own if own in variables else name}, variables)
    file = variables.get(name, {})
    if cls == "PReLU":
        return [Tensor(file["alpha"], "PReLU", name=name)] if "alpha" in file else []
    if cls == "Normalization":  # its statistics' shape is the kept axes' (the file's own mean)
        return [_normalization(file["mean"], name)] if "mean" in file else []
    if cls in SIZED_BY_CONFIG:
        return _with_lora(cfg, list(layer.specs(cfg, (), name)), file, name)
    where = INPUT_FROM.get(cls)
    if where is None:
        return []
    param, axis = where
    if param not in file and cls == "LayerNormalization":
        param = "beta"
    if param not in file and cls.startswith("DepthwiseConv"):
        param = "depthwise_kernel"  # Keras 2's name (Keras 3: `kernel`)
    if param not in file:
        return []
    inputs = file[param][axis]
    if cls.startswith("Conv") and not cls.endswith("Transpose"):
        inputs *= int(cfg.get("groups", 1))
    return _with_lora(cfg, list(layer.specs(cfg, (inputs,), name)), file, name)


def _with_lora(
    cfg: Mapping[str, Any], specs: list[LayerSpec], file: Mapping[str, tuple[int, ...]], name: str
) -> list[LayerSpec]:
    """A layer with a `lora_rank` whose file holds its LoRA's factors beside the variable they adapt (a legacy .h5:
    `keras_h5.LORA_FACTORS`) as one layer, its formula's and the LoRA's; else its formula's (a `.keras` holds the
    variable with the LoRA merged into it: `keras_h5.merged_lora_findings` says so)."""
    from loaders.keras_h5 import LORA_FACTORS, lora_sides  # (the loader's table of Keras's variable names)

    rank = cfg.get("lora_rank")
    adapted = next((param for param in LORA_FACTORS if param in file), None)
    if not rank or len(specs) != 1 or adapted is None or not set(LORA_FACTORS[adapted]) <= file.keys():
        return specs
    lora = LoRA(int(rank), *lora_sides(file[adapted]))
    kind = specs[0].kind
    return [Block(((kind.lower(), specs[0]), ("lora", lora)), f"{kind}+LoRA r={rank}", name=name)]


def as_stored(cls: str, name: str, file: Mapping[str, tuple[int, ...]]) -> list[LayerSpec]:
    """A layer of a class without a formula, counted as the file holds it: its variable's shape, or its variables'
    total (none: the layer has no variables)."""
    if not file:
        return []
    shapes = list(file.values())
    shape = shapes[0] if len(shapes) == 1 else (sum(math.prod(s) for s in shapes),)
    return [Tensor(shape, str(cls) or "Tensor", name=name)]


# -- a layer list on the command line ----------------------------------------------------------------------------


def _parse_value(text: str) -> Any:
    text = text.strip()
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if text.lstrip("-").isdigit():
        return int(text)
    if text.startswith("(") and text.endswith(")"):
        return tuple(_parse_value(v) for v in text[1:-1].split(",") if v.strip())
    return text


def _split_args(text: str) -> list[str]:
    """Top-level comma-separated items ('LSTM(5,return_sequences=true),merge_mode=sum' -> 2 items)."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return [item.strip() for item in items if item.strip()]


def _read_layer(text: str) -> tuple[str, dict[str, Any]]:
    """'Conv2D(8,3,use_bias=false)' -> ('Conv2D', {'filters': 8, 'kernel_size': 3, 'use_bias': False})."""
    cls, _, rest = text.partition("(")
    cls = cls.strip()
    if cls == "Input":
        return cls, {"shape": tuple(int(v) for v in _split_args(rest.rstrip(")")))}
    layer = KERAS_LAYERS.get(cls)
    if layer is None:
        raise SpecError(f"unknown Keras layer {cls!r}")
    cfg: dict[str, Any] = {}
    args = _split_args(rest[:-1]) if rest.endswith(")") else ([] if not rest else [rest])
    positional = iter(layer.positional)
    for arg in args:
        key, eq, value = arg.partition("=")
        if eq and "(" not in key:
            key = {"bias": "use_bias"}.get(key.strip(), key.strip())
            if key not in layer.keywords:
                accepted = ", ".join(sorted(layer.keywords)) or "none"
                raise SpecError(f"{cls} does not take {key}= (it takes: {accepted})")
            cfg[key] = _parse_value(value)
        else:
            word = next(positional, None)
            if word is None:
                raise SpecError(f"too many arguments for {cls}")
            if word == "layer":
                inner_cls, inner_cfg = _read_layer(arg)
                cfg[word] = {"class_name": inner_cls, "config": inner_cfg}
            else:
                cfg[word] = _parse_value(arg)
    return cls, cfg


def _layer_texts(text: str) -> list[str]:
    """'Input(10) Dense(3) Flatten' -> ['Input(10)', 'Dense(3)', 'Flatten'] (parentheses may nest)."""
    out, depth, current = [], 0, ""
    for ch in text.strip():
        if ch.isspace() and depth == 0:
            if current:
                out.append(current)
            current = ""
            continue
        depth += (ch == "(") - (ch == ")")
        if depth < 0:
            raise SpecError(f"unbalanced parentheses in {text!r}")
        current += ch
    if depth:
        raise SpecError(f"unbalanced parentheses in {text!r}")
    return [*out, current] if current else out


def layer_list(text: str) -> list[LayerSpec]:
    """The specs of a Keras Sequential model given as a layer list, with Keras's own default layer names."""
    shape: Shape = (None,)
    counts: dict[str, int] = {}
    specs: list[LayerSpec] = []
    for item in _layer_texts(text):
        try:
            cls, cfg = _read_layer(item)
            if cls == "Input":
                shape = cfg["shape"] or (None,)
                continue
            layer = KERAS_LAYERS[cls]
            name = ""
            if layer.base_name:
                n = counts.get(layer.base_name, 0)
                counts[layer.base_name] = n + 1
                name = layer.base_name if n == 0 else f"{layer.base_name}_{n}"
            specs += layer.specs(cfg, shape, name)
            shape = layer.shape(cfg, shape)
        except SpecError:
            raise
        except (KeyError, ValueError, TypeError, IndexError) as exc:
            raise SpecError(f"bad arguments for {item!r}: {exc}") from exc
    return specs
