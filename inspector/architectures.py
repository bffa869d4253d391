"""Whole architectures as compositions of layer formulas, named with `key=value` words or as Keras layer lists.

Layer names follow the names the producing framework gives the same layers (Sockeye's parameter
prefixes, Keras's default layer names, PyTorch module paths shortened by the role table), so a file's
layers can be compared with an architecture's layer by layer.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping

from inspector import regexes
from inspector.errors import SpecError
from inspector.formulas import (
    GATES,
    GRU,
    LSTM,
    Block,
    Conv,
    Convention,
    Dense,
    Embedding,
    InitialState,
    LayerNorm,
    LayerSpec,
    SimpleRNN,
    Tensor,
    TransformerBlock,
    breakdown,
    total,
)
from inspector.recordtype import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@record(frozen=True)
class Architecture:
    name: str
    hyperparameters: Mapping[str, Any]
    layers: tuple[LayerSpec, ...]
    notes: tuple[str, ...] = ()
    family: str | None = None  # a transformers family (`inspector.families`): checked module by module


@record(frozen=True)
class Word:
    name: str
    default: Any
    help: str
    parse: Callable[[str], Any] = int


@record(frozen=True)
class ArchitectureDef:
    name: str
    description: str
    words: tuple[Word, ...]
    builder: Callable[..., Architecture] = field(repr=False)


def _pair(text: str) -> tuple[int, int]:
    """'512:256' -> (512, 256); '512' -> (512, 512)."""
    parts = text.split(":")
    if len(parts) == 1:
        return int(parts[0]), int(parts[0])
    if len(parts) == 2:
        return int(parts[0]), int(parts[1])
    raise ValueError(f"expected N or N:M, got {text!r}")


def _bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"expected true or false, got {text!r}")


# -- Sockeye RNN encoder-decoder (seed 002) -----------------------------------------------------------


def _sockeye_attention(kind: str, hidden: int, size: int, max_seq_len: int) -> list[LayerSpec]:
    """Sockeye 1.x RNN attention parameters (rnn_attention.py), by attention type; `size` is attention_num_hidden."""
    h, a = hidden, size or hidden
    table: dict[str, list[LayerSpec]] = {
        "none": [],
        "fixed": [],
        "mlp": [
            Dense(h, a, False, name="att_e2h"),
            Dense(h, a, False, name="att_q2h"),
            Dense(a, 1, False, name="att_h2s"),
        ],
        "bilinear": [Dense(h, h, False, name="att_s2t")],
        "dot": [] if a == h else [Dense(h, a, False, name="att_s2h"), Dense(h, a, False, name="att_t2h")],
        "mhdot": [Dense(h, 2 * h, name="att_s2h"), Dense(h, h, name="att_t2h"), Dense(h, h, name="att_h2o")],
        "location": [Dense(h, max_seq_len, name="att_loc")],
    }
    if kind not in table:
        raise SpecError(f"attention must be one of {', '.join(table)}, got {kind!r}")
    return table[kind]


def sockeye_rnn(
    source_vocab: int,
    target_vocab: int,
    embed: tuple[int, int],
    hidden: int,
    layers: tuple[int, int],
    cell: str,
    attention: str = "none",
    attention_hidden: int = 0,
    max_seq_len: int = 100,
) -> Architecture:
    """Sockeye 1.x RNN model with a bidirectional first encoder layer, input feeding and enc2decinit.

    The first encoder layer is bidirectional with hidden/2 units per direction reading the source
    embedding; the remaining encoder layers are unidirectional. Decoder layer 0 reads the target
    embedding concatenated with the previous attentional hidden state (input feeding: te + h); the
    `hidden` layer maps [decoder state; context] (2h) to h; `enc2decinit` maps the encoder's final
    state to each decoder state (h and c per layer for LSTM, h for GRU). MXNet cells keep an
    i2h and an h2h bias.
    """
    cls = {"lstm": LSTM, "gru": GRU}.get(cell)
    if cls is None:
        raise SpecError(f"cell must be lstm or gru, got {cell!r}")
    se, te = embed
    sn, tn = layers
    if hidden % 2:
        raise SpecError("hidden must be even: the bidirectional encoder layer splits it in two")
    mx = Convention.MXNET
    specs: list[LayerSpec] = [Embedding(source_vocab, se, name="source_embed")]
    for direction in ("forward", "reverse"):
        specs.append(cls(se, hidden // 2, mx, name=f"encoder_birnn_{direction}_l0"))
    specs += [cls(hidden, hidden, mx, name=f"encoder_rnn_l{i}") for i in range(sn - 1)]
    specs.append(Embedding(target_vocab, te, name="target_embed"))
    specs += [cls(te + hidden if i == 0 else hidden, hidden, mx, name=f"decoder_rnn_l{i}") for i in range(tn)]
    states = 2 * tn if cell == "lstm" else tn
    specs += [Dense(hidden, hidden, name=f"decoder_rnn_enc2decinit_{i}") for i in range(states)]
    specs.append(Dense(2 * hidden, hidden, name="decoder_rnn_hidden"))
    attention_specs = _sockeye_attention(attention, hidden, attention_hidden, max_seq_len)
    specs += attention_specs
    specs.append(Dense(hidden, target_vocab, name="target_output"))
    hyper = {
        "source_vocab": source_vocab,
        "target_vocab": target_vocab,
        "embed": f"{se}:{te}",
        "hidden": hidden,
        "layers": f"{sn}:{tn}",
        "cell": cell,
        "attention": attention,
    }
    notes = (
        f"decoder_rnn_l0_i2h_weight is ({GATES[cls.__name__] * hidden}, {te + hidden}): target embedding {te} + "
        f"input feeding {hidden}",
        f"encoder_birnn_*_i2h_weight is ({GATES[cls.__name__] * hidden // 2}, {se}): each direction has hidden/2 units "
        f"and reads the source embedding",
        f"attention={attention}"
        + (
            " assumed: no attention parameters (Sockeye 1.x's default, mlp, adds att_e2h and att_q2h of "
            "attention_hidden x hidden and att_h2s of attention_hidden, without biases)"
            if attention in ("none", "fixed")
            else f" with {sum(total(s) for s in attention_specs):,} parameters"
        ),
    )
    return Architecture("sockeye-rnn", hyper, tuple(specs), notes)


# -- rau language models (seed 004) -------------------------------------------------------------------


def _rau_rnn(cls: type[LayerSpec], vocab: int, hidden: int, layers: int, extra_input: int = 0) -> list[LayerSpec]:
    # rau: embedding shared with the output layer (no output bias), a learned initial hidden state per
    # layer, and torch RNN layers with a single bias vector (use_extra_bias=False drops bias_hh).
    specs: list[LayerSpec] = [
        Embedding(vocab, hidden, name="embedding"),
        InitialState(layers, hidden, name="initial_state"),
    ]
    for i in range(layers):
        inputs = hidden + (extra_input if i == 0 else 0)
        specs.append(cls(inputs, hidden, Convention.TORCH, biases=1, name=f"rnn.l{i}"))  # type: ignore[call-arg]
    return specs


RAU_RNN_NOTES = (
    "the output layer shares the embedding matrix and has no bias: it adds no parameters",
    "each RNN layer keeps one bias vector (bias_ih; use_extra_bias=False drops bias_hh), not zero",
)


def rau_lstm_lm(vocab: int, hidden: int, layers: int) -> Architecture:
    """rau get_lstm_language_model(learned_initial_state=True): embedding (tied output), initial state, LSTM."""
    return Architecture(
        "rau-lstm-lm",
        {"vocab": vocab, "hidden": hidden, "layers": layers},
        tuple(_rau_rnn(LSTM, vocab, hidden, layers)),
        RAU_RNN_NOTES,
    )


def rau_rnn_lm(vocab: int, hidden: int, layers: int) -> Architecture:
    """rau get_simple_rnn_language_model: as the LSTM LM with a simple RNN."""
    return Architecture(
        "rau-rnn-lm",
        {"vocab": vocab, "hidden": hidden, "layers": layers},
        tuple(_rau_rnn(SimpleRNN, vocab, hidden, layers)),
        RAU_RNN_NOTES,
    )


# rau's stack-RNN stack strings (rau/models/stack_nn/rnn/parse.py), its own regex: only the first alternative is
# anchored at the start and only the last at the end.
RAU_STACK_RE = (
    r"^stratification-(\d+)|superposition-(\d+)|nondeterministic-(\d+)-(\d+)|vector-nondeterministic-(\d+)-(\d+)-(\d+)$"
)


def parse_rau_stack(spec: str) -> tuple[str, tuple[int, ...]]:
    """('superposition', (m,)) ... exactly as rau's parse_stack_rnn_stack reads a stack string."""
    m = regexes.match(RAU_STACK_RE, spec)
    if m is None:
        raise SpecError(f"invalid rau stack RNN stack string {spec!r}")
    strat, sup, nd_q, nd_s, vnd_q, vnd_s, vnd_m = m.groups()
    if strat is not None:
        return "stratification", (int(strat),)
    if sup is not None:
        return "superposition", (int(sup),)
    if nd_q is not None:
        return "nondeterministic", (int(nd_q), int(nd_s))
    return "vector-nondeterministic", (int(vnd_q), int(vnd_s), int(vnd_m))


def _rau_stack(kind: str, args: tuple[int, ...], hidden: int) -> tuple[int, list[LayerSpec]]:
    """(the stack reading's size, the stack's own layers) of a rau stack RNN, as rau's stack_nn builds them.

    Superposition (Joulin and Mikolov): push/pop/no-op actions and a pushed vector of m; stratification
    (Grefenstette et al.): push and pop strengths and a pushed vector of m; nondeterministic (RNS-RNN, q states,
    s symbols): 2(qs)^2 + q^2 s operation weights, reading qs; vector nondeterministic: the same operations, a
    pushed vector of m, a learned bottom vector, reading qsm. Every layer has a bias.
    """
    h = hidden
    if kind in ("superposition", "stratification"):
        (m,) = args
        actions = 3 if kind == "superposition" else 2
        return m, [Dense(h, actions, name="stack.actions"), Dense(h, m, name="stack.push_value")]
    q, s = args[0], args[1]
    operations = Dense(h, 2 * (q * s) ** 2 + q * q * s, name="stack.operations")
    if kind == "nondeterministic":
        return q * s, [operations]
    m = args[2]
    return q * s * m, [
        operations,
        Dense(h, m, name="stack.pushed_vector"),
        Tensor((m,), "Tensor", name="stack.bottom_vector"),
    ]


def rau_stack_rnn(vocab: int, hidden: int, layers: int, stack_size: int, controller: str, stack: str) -> Architecture:
    """rau stack RNN language model: an RNN controller whose first layer also reads the stack.

    `stack` is rau's stack string (superposition-m, stratification-m, nondeterministic-q-s,
    vector-nondeterministic-q-s-m); without it, a superposition stack of `stack_size` (seed 004's model).
    """
    cls = {"lstm": LSTM, "rnn": SimpleRNN}.get(controller)
    if cls is None:
        raise SpecError(f"controller must be lstm or rnn, got {controller!r}")
    kind, args = parse_rau_stack(stack or f"superposition-{stack_size}")
    reading, stack_specs = _rau_stack(kind, args, hidden)
    specs = _rau_rnn(cls, vocab, hidden, layers, extra_input=reading) + stack_specs
    notes = RAU_RNN_NOTES + (
        f"{kind} stack {args}: its reading ({reading}) is part of the controller's first-layer input: "
        f"{GATES[cls.__name__] * hidden} x {reading} more input weights",
    )
    hyper: dict[str, Any] = {"vocab": vocab, "hidden": hidden, "layers": layers, "controller": controller}
    hyper |= {"stack": stack} if stack else {"stack_size": stack_size}
    return Architecture("rau-stack-rnn", hyper, tuple(specs), notes)


def _rau_transformer_layers(d: int, ff: int, count: int, start: int) -> list[LayerSpec]:
    return [TransformerBlock(d, ff, name=f"layers.{start + i}") for i in range(count)]


def _check_heads(d_model: int, heads: int) -> None:
    """PyTorch's MultiheadAttention refuses embed_dim % num_heads != 0: so does the formula."""
    if heads <= 0 or d_model % heads:
        raise SpecError(f"heads={heads} does not divide d_model={d_model} (torch refuses to build it)")


def rau_transformer_lm(vocab: int, d_model: int, layers: int, heads: int, feedforward: int) -> Architecture:
    """rau get_unidirectional_transformer_encoder(tie_embeddings=True): pre-norm layers plus a final LayerNorm.

    Attention uses PyTorch's MultiheadAttention, whose in_proj and out_proj have biases.
    """
    _check_heads(d_model, heads)
    specs: list[LayerSpec] = [Embedding(vocab, d_model, name="embedding")]
    specs += _rau_transformer_layers(d_model, feedforward, layers, 0)
    specs.append(LayerNorm(d_model, name="norm"))
    hyper = {"vocab": vocab, "d_model": d_model, "layers": layers, "heads": heads, "feedforward": feedforward}
    notes = (
        "the output layer is tied to the input embedding: stored once",
        "attention projections have biases (4 x d_model per layer)",
    )
    return Architecture("rau-transformer-lm", hyper, tuple(specs), notes)


# rau's own layer-string grammar (rau/models/stack_nn/transformer/parse.py). Its regex is
# '^(\d+)|superposition-(\d+)|...$': the '^' binds to the first alternative only, so a part such as
# '16-1' is read as 16 standard layers.
RAU_LAYER_RE = r"^(\d+)|superposition-(\d+)|nondeterministic-(\d+)-(\d+)-(\d+)$"


def parse_rau_stack_layers(spec: str) -> list[tuple[str, tuple[int, ...]]]:
    """[('transformer', (n,)) | ('superposition', (m,)) | ('nondeterministic', (q, s, m))] as rau parses a layer
    string (rau/models/stack_nn/transformer/parse.py)."""
    out: list[tuple[str, tuple[int, ...]]] = []
    for part in spec.split("."):
        m = regexes.match(RAU_LAYER_RE, part)
        if m is None:
            raise SpecError(f"invalid rau stack transformer layer string part {part!r}")
        layers, sup, nd_q, nd_s, nd_m = m.groups()
        if layers is not None:
            out.append(("transformer", (int(layers),)))
        elif sup is not None:
            out.append(("superposition", (int(sup),)))
        else:
            out.append(("nondeterministic", (int(nd_q), int(nd_s), int(nd_m))))
    return out


def _stack_attention(kind: str, args: tuple[int, ...], d: int, name: str) -> Block:
    """A rau stack-attention sublayer (LayerNorm, then the stack's projections, all without bias).

    Superposition (m): actions d -> 3, pushed vector d -> m, reading m -> d. Nondeterministic (q, s, m):
    operations d -> 2(qs)^2 + q^2 s, pushed vector d -> m, reading qsm -> d, and a learned bottom vector of m.
    """
    if kind == "superposition":
        (m,) = args
        operations, reading, bottom = 3, m, None
    else:
        q, s, m = args
        operations, reading, bottom = 2 * (q * s) ** 2 + q * q * s, q * s * m, Tensor((m,), "Tensor")
    parts: list[tuple[str, LayerSpec]] = [
        ("norm", LayerNorm(d)),
        ("actions", Dense(d, operations, bias=False)),
        ("push", Dense(d, m, bias=False)),
        ("read", Dense(reading, d, bias=False)),
    ]
    if bottom is not None:
        parts.append(("bottom_vector", bottom))
    return Block(tuple(parts), f"{kind} stack attention", name=name)


def _feedforward_sublayer(d: int, ff: int, name: str) -> Block:
    return Block((("norm", LayerNorm(d)), ("up", Dense(d, ff)), ("down", Dense(ff, d))), "feed-forward", name=name)


def rau_stack_transformer(
    vocab: int, d_model: int, heads: int, feedforward: int, layers: int, stack_layers: int, stack_size: int, spec: str
) -> Architecture:
    """rau stack transformer: standard layers and stack-attention layers (tied embeddings, final LayerNorm).

    A stack-attention layer replaces self-attention by a stack's projections (`_stack_attention`) and keeps
    the feed-forward sublayer; each sublayer has its LayerNorm. Give either `layers`/`stack_layers`/`stack_size`
    (standard layers first, superposition stacks) or rau's own layer string as `spec`, e.g.
    spec=2.superposition-16.1 or spec=1.nondeterministic-2-3-4.
    """
    _check_heads(d_model, heads)
    groups = (
        parse_rau_stack_layers(spec)
        if spec
        else [("transformer", (layers,))] + [("superposition", (stack_size,))] * stack_layers
    )
    specs: list[LayerSpec] = [Embedding(vocab, d_model, name="embedding")]
    index = 0
    for kind, args in groups:
        if kind == "transformer":
            specs += _rau_transformer_layers(d_model, feedforward, args[0], index)
            index += args[0]
        else:
            specs.append(_stack_attention(kind, args, d_model, f"layers.{index}.stack_attention"))
            specs.append(_feedforward_sublayer(d_model, feedforward, f"layers.{index}.feedforward"))
            index += 1
    specs.append(LayerNorm(d_model, name="norm"))
    n_std = sum(a[0] for k, a in groups if k == "transformer")
    n_stack = sum(1 for k, _ in groups if k != "transformer")
    hyper: dict[str, Any] = {
        "vocab": vocab,
        "d_model": d_model,
        "heads": heads,
        "feedforward": feedforward,
        "layers": n_std,
        "stack_layers": n_stack,
    }
    if spec:
        hyper["spec"] = spec
    else:
        hyper["stack_size"] = stack_size
    notes = [f"{n_std} standard layers and {n_stack} stack-attention layers"]
    if spec and any(k == "transformer" for k, _ in groups) and "-" in spec.split(".")[0]:
        notes.append(
            f"rau reads the part {spec.split('.')[0]!r} as {groups[0][1][0]} standard layers (its regex matches "
            "the leading digits only); a trailing integer part is more standard layers, not a stack-layer count"
        )
    return Architecture("rau-stack-transformer", hyper, tuple(specs), tuple(notes))


# -- seed 003: three-column CNN -------------------------------------------------------------------------


def column_cnn(
    height: int,
    width: int,
    depth: int,
    columns: int,
    convs: int,
    filters: int,
    kernel: int,
    pool: int,
    dense: int,
    classes: int,
) -> Architecture:
    """`columns` identical columns of `convs` x (conv kernel x kernel 'valid' + pool x pool max-pooling) and a
    dense layer, concatenated into a final dense layer of `classes` (seed 003's 'alpha' model)."""
    specs: list[LayerSpec] = []
    index = 0
    for _ in range(columns):
        h, w, c = height, width, depth
        for _ in range(convs):
            specs.append(Conv(c, filters, (kernel, kernel), name=f"layer{index}"))
            index += 1
            h, w, c = (h - kernel + 1) // pool, (w - kernel + 1) // pool, filters
            if h <= 0 or w <= 0:
                raise SpecError("the image is too small for that many convolutions")
        specs.append(Dense(h * w * c, dense, name=f"layer{index}"))
        index += 1
    specs.append(Dense(columns * dense, classes, name=f"layer{index}"))
    hyper = {
        "height": height,
        "width": width,
        "depth": depth,
        "columns": columns,
        "convs": convs,
        "filters": filters,
        "kernel": kernel,
        "pool": pool,
        "dense": dense,
        "classes": classes,
    }
    flat = (h, w, c)
    notes = (
        f"each column flattens {flat[0]}x{flat[1]}x{flat[2]} = {flat[0] * flat[1] * flat[2]:,} features "
        "into its dense layer",
    )
    return Architecture("column-cnn", hyper, tuple(specs), notes)


# -- seed 000: Keras LSTM language model ----------------------------------------------------------------------


def keras_lstm_lm(vocab: int, embed: int, units: int) -> Architecture:
    """Seed 000's model: Embedding -> LSTM (sequences) -> Dense(embed) -> Dense(vocab), Keras conventions."""
    return Architecture(
        "keras-lstm-lm",
        {"vocab": vocab, "embed": embed, "units": units},
        (
            Embedding(vocab, embed, name="embedding"),
            LSTM(embed, units, name="lstm"),
            Dense(units, embed, name="dense"),
            Dense(embed, vocab, name="dense_1"),
        ),
    )


# -- Keras layer lists ------------------------------------------------------------------------------------------


def keras_layers(text: str) -> Architecture:
    """A Keras Sequential model from a layer list such as 'Input(100) Embedding(10000,100) Flatten Dense(32)'.

    Every class and keyword comes from `inspector.keras_layers.KERAS_LAYERS`; an unknown keyword is refused.
    """
    from inspector.keras_layers import layer_list

    return Architecture("keras-sequential", {"layers": text.strip()}, tuple(layer_list(text)))


# -- the table -----------------------------------------------------------------------------------------------


def _seed_definitions() -> dict[str, ArchitectureDef]:
    """The seeds' named architectures: a table made on first use (by `definitions`), as a run that checks a file
    against the architecture inferred from it names none (issue 16)."""
    return {
        d.name: d
        for d in (
            ArchitectureDef(
                "sockeye-rnn",
                "Sockeye RNN encoder-decoder (seed 002)",
                (
                    Word("source_vocab", 49410, "source vocabulary"),
                    Word("target_vocab", 42767, "target vocabulary"),
                    Word("embed", (512, 512), "source:target embedding sizes", _pair),
                    Word("hidden", 512, "RNN hidden units"),
                    Word("layers", (2, 2), "encoder:decoder layers", _pair),
                    Word("cell", "lstm", "lstm or gru", str),
                    Word(
                        "attention", "none", "none/fixed, mlp, bilinear, dot, mhdot or location (rnn_attention.py)", str
                    ),
                    Word("attention_hidden", 0, "attention_num_hidden for mlp and dot (0: hidden)"),
                    Word("max_seq_len", 100, "max source length, for location attention"),
                ),
                sockeye_rnn,
            ),
            ArchitectureDef(
                "rau-lstm-lm",
                "rau LSTM language model (seed 004)",
                (Word("vocab", 64, "vocabulary"), Word("hidden", 32, "hidden units"), Word("layers", 3, "layers")),
                rau_lstm_lm,
            ),
            ArchitectureDef(
                "rau-rnn-lm",
                "rau simple RNN language model (seed 004)",
                (Word("vocab", 64, "vocabulary"), Word("hidden", 32, "hidden units"), Word("layers", 3, "layers")),
                rau_rnn_lm,
            ),
            ArchitectureDef(
                "rau-transformer-lm",
                "rau transformer language model, tied embeddings (seed 004)",
                (
                    Word("vocab", 64, "vocabulary"),
                    Word("d_model", 32, "model width"),
                    Word("layers", 3, "layers"),
                    Word("heads", 4, "attention heads (no effect on the count)"),
                    Word("feedforward", 128, "feed-forward size"),
                ),
                rau_transformer_lm,
            ),
            ArchitectureDef(
                "rau-stack-rnn",
                "rau stack RNN with a superposition stack (seed 004)",
                (
                    Word("vocab", 64, "vocabulary"),
                    Word("hidden", 32, "hidden units"),
                    Word("layers", 3, "layers"),
                    Word("stack_size", 20, "stack embedding size"),
                    Word("controller", "lstm", "lstm or rnn", str),
                    Word("stack", "", "rau's stack string instead of stack_size, e.g. nondeterministic-2-3", str),
                ),
                rau_stack_rnn,
            ),
            ArchitectureDef(
                "rau-stack-transformer",
                "rau stack transformer with superposition layers (seed 004)",
                (
                    Word("vocab", 64, "vocabulary"),
                    Word("d_model", 16, "model width"),
                    Word("heads", 4, "attention heads"),
                    Word("feedforward", 64, "feed-forward size"),
                    Word("layers", 1, "standard layers"),
                    Word("stack_layers", 1, "superposition stack-attention layers"),
                    Word("stack_size", 16, "stack embedding size"),
                    Word("spec", "", "rau's layer string instead of layers/stack_layers/stack_size", str),
                ),
                rau_stack_transformer,
            ),
            ArchitectureDef(
                "column-cnn",
                "multi-column CNN, one dense layer per column, then a joint dense (seed 003)",
                (
                    Word("height", 50, "image height"),
                    Word("width", 50, "image width"),
                    Word("depth", 1, "channels"),
                    Word("columns", 3, "columns (views)"),
                    Word("convs", 2, "conv+pool blocks per column"),
                    Word("filters", 32, "filters per conv"),
                    Word("kernel", 3, "conv kernel size"),
                    Word("pool", 2, "max-pooling size"),
                    Word("dense", 256, "dense units per column"),
                    Word("classes", 11, "output classes"),
                ),
                column_cnn,
            ),
            ArchitectureDef(
                "keras-lstm-lm",
                "Keras Embedding-LSTM-Dense-Dense language model (seed 000)",
                (
                    Word("vocab", 10004, "vocabulary"),
                    Word("embed", 100, "embedding size"),
                    Word("units", 256, "LSTM units"),
                ),
                keras_lstm_lm,
            ),
        )
    }


def _family_definitions() -> dict[str, ArchitectureDef]:
    """Every transformers family of `inspector.families` as a named architecture (its words from its table)."""
    from inspector.families import FAMILIES
    from inspector.family_check import FRACTIONS, ZERO_VALUED, family_words, rows, stated_hyperparameters

    out = {}
    for family in FAMILIES:

        def builder(family: Any = family, **words: Any) -> Architecture:
            h = stated_hyperparameters(family, words)
            shown = {k: v for k, v in words.items() if v is not None and (not isinstance(v, bool) or v)}
            notes = (f"{family.name}: {family.description}",)
            return Architecture(family.name, shown, tuple(rows(family, h)), notes, family.name)

        words = tuple(
            Word(
                k,
                v,
                "true or false"
                if isinstance(v, bool)
                else "count or layer index (0 is one; unset: derived)"
                if k in ZERO_VALUED
                else "fraction (0: derived)"
                if k in FRACTIONS
                else "size (0: derived)",
                _bool if isinstance(v, bool) else float if k in FRACTIONS else int,
            )
            for k, v in family_words(family).items()
        )
        out[family.name] = ArchitectureDef(family.name, family.description, words, builder)
    return out


@functools.cache
def definitions() -> Mapping[str, ArchitectureDef]:
    """Every named architecture: the seeds' (`_seed_definitions`) and the transformers families, built on first use."""
    return {**_seed_definitions(), **_family_definitions()}


def build(name: str, **words: Any) -> Architecture:
    """A named architecture from its words (defaults for the rest).

    Raises:
        SpecError: unknown architecture or word, or a bad value.
    """
    definition = definitions().get(name)
    if definition is None:
        raise SpecError(f"unknown architecture {name!r}; known: {', '.join(definitions())}")
    known = {w.name: w for w in definition.words}
    unknown = set(words) - set(known)
    if unknown:
        raise SpecError(f"{name}: unknown words {sorted(unknown)}; it takes {', '.join(known)}")
    values = {}
    for word in definition.words:
        value = words.get(word.name, word.default)
        if isinstance(value, str) and word.parse is not str:
            try:
                value = word.parse(value)
            except ValueError as exc:
                raise SpecError(f"{name}: bad value for {word.name}: {exc}") from exc
        values[word.name] = value
    return definition.builder(**values)


def parse_spec(text: str) -> Architecture:
    """'NAME key=value ...' for a named architecture, or a Keras layer list.

    Raises:
        SpecError: the text is neither.
    """
    parts = text.split()
    if not parts:
        raise SpecError("empty architecture spec")
    if parts[0] in definitions():
        words = {}
        for part in parts[1:]:
            key, eq, value = part.partition("=")
            if not eq:
                raise SpecError(f"expected key=value, got {part!r}")
            words[key] = value
        return build(parts[0], **words)
    return keras_layers(text)


def count(arch: Architecture) -> tuple[int, list[tuple[str, str, dict[str, int]]]]:
    """The analytic total and the per-layer breakdown (layer name, kind, parameter counts)."""
    rows = [(spec.name, spec.kind, breakdown(spec)) for spec in arch.layers]  # type: ignore[attr-defined]
    return sum(sum(b.values()) for _, _, b in rows), rows
