"""Analytic parameter counts, one pure function per layer kind, listed in the `FORMULAS` table.

Conventions are parameters, not branches: `Convention.KERAS` keeps one bias vector per recurrent
layer (a GRU with ``reset_after`` keeps two), PyTorch and MXNet keep two (input-to-hidden and
hidden-to-hidden). Formulas know nothing about files or names; architectures compose them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from math import prod
from operator import attrgetter

from inspector.enumtype import StrEnum
from inspector.errors import SpecError
from inspector.recordtype import fields, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Convention(StrEnum):
    KERAS = "keras"
    TORCH = "torch"
    MXNET = "mxnet"


# Recurrent cells: gates per unit.
GATES = {"SimpleRNN": 1, "LSTM": 4, "GRU": 3}
INT = {int}  # (the type of every size, once checked: `LayerSpec.__post_init__`)
# Bias vectors of g x units per recurrent layer, by convention (GRU reset_after handled by its own field).
RNN_BIASES = {Convention.KERAS: 1, Convention.TORCH: 2, Convention.MXNET: 2}


# per LayerSpec class: its fields that hold a size (checked positive), and a getter of their values as a tuple
SIZE_FIELDS: dict[type, tuple[tuple[str, ...], Callable[[Any], tuple[Any, ...]] | None]] = {}


@record(frozen=True, slots=True)
class LayerSpec:
    """A layer whose parameter count a formula gives. Subclasses hold positive int sizes and a `name`."""

    def __post_init__(self) -> None:
        cls = type(self)
        sizes = SIZE_FIELDS.get(cls)
        if sizes is None:  # the fields annotated as sizes, listed once per class
            names = tuple(f.name for f in fields(cls) if f.type in ("int", "int | None"))
            # (`attrgetter` of one name gives the value itself: of that name twice, a pair)
            read: Callable[[Any], tuple[Any, ...]] | None = None
            if names:
                read = attrgetter(*names) if len(names) > 1 else attrgetter(*names, *names)
            sizes = SIZE_FIELDS[cls] = names, read
        names, read = sizes
        if read is None:
            return
        values = read(self)
        if set(map(type, values)) == INT and min(values) > 0:  # (every size a positive int: told in C calls)
            return
        for name in names:
            value = getattr(self, name)
            if value is not None:
                if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                    raise SpecError(f"{cls.__name__}.{name} must be a positive integer, got {value!r}")

    @property
    def kind(self) -> str:
        return type(self).__name__


@record(frozen=True, slots=True)
class Dense(LayerSpec):
    inputs: int
    units: int
    bias: bool = True
    name: str = ""


@record(frozen=True, slots=True)
class Embedding(LayerSpec):
    vocab: int
    dim: int
    name: str = ""


@record(frozen=True, slots=True)
class Conv(LayerSpec):
    """Conv 1d/2d/3d, grouped (depthwise: groups = in_channels) or transposed: the same count either way."""

    in_channels: int
    filters: int
    kernel: tuple[int, ...] = (3, 3)
    bias: bool = True
    name: str = ""
    groups: int = 1

    def __post_init__(self) -> None:
        LayerSpec.__post_init__(self)
        if self.in_channels % self.groups or self.filters % self.groups:
            raise SpecError(f"Conv: groups={self.groups} must divide in_channels and filters")


@record(frozen=True, slots=True)
class Recurrent(LayerSpec):
    """SimpleRNN, LSTM or GRU. `biases` overrides the convention's number of bias vectors."""

    inputs: int
    units: int
    convention: Convention = Convention.KERAS
    bias: bool = True
    biases: int | None = None
    name: str = ""

    @property
    def gates(self) -> int:
        return GATES[self.kind]

    @property
    def bias_vectors(self) -> int:
        if not self.bias:
            return 0
        return self.biases if self.biases is not None else RNN_BIASES[self.convention]


@record(frozen=True, slots=True)
class SimpleRNN(Recurrent):
    pass


@record(frozen=True, slots=True)
class LSTM(Recurrent):
    pass


@record(frozen=True, slots=True)
class GRU(Recurrent):
    reset_after: bool = True

    @property
    def bias_vectors(self) -> int:
        if self.biases is None and self.bias and self.convention is Convention.KERAS:
            return 2 if self.reset_after else 1
        return Recurrent.bias_vectors.fget(self)  # type: ignore[attr-defined, no-any-return]


@record(frozen=True, slots=True)
class BatchNorm(LayerSpec):
    """Keras and MXNet count the moving statistics (non-trainable); `scale`/`shift` are Keras's scale/center."""

    features: int
    convention: Convention = Convention.KERAS
    name: str = ""
    scale: bool = True
    shift: bool = True


@record(frozen=True, slots=True)
class LayerNorm(LayerSpec):
    features: int
    bias: bool = True
    name: str = ""


@record(frozen=True, slots=True)
class Norm(LayerSpec):
    """Any normalisation with an optional scale and shift of `features`: LayerNorm, RMSNorm (scale only),
    GroupNorm/InstanceNorm (affine or not), a BatchNorm whose running statistics are buffers (PyTorch)."""

    features: int
    scale: bool = True
    shift: bool = True
    norm: str = "LayerNorm"
    name: str = ""

    @property
    def kind(self) -> str:
        return self.norm


@record(frozen=True, slots=True)
class Tensor(LayerSpec):
    """A bare learned tensor of a given shape: a class token, a learned position table, a layer scale,
    PReLU slopes, fused expert weights; its count is the product of its shape."""

    shape: tuple[int, ...]
    label: str = "Tensor"
    name: str = ""

    @property
    def kind(self) -> str:
        return self.label


@record(frozen=True, slots=True)
class Block(LayerSpec):
    """A named group of layers (a transformer block, an encoder stage): the sum of its parts."""

    parts: tuple[tuple[str, LayerSpec], ...]
    label: str = "Block"
    name: str = ""

    @property
    def kind(self) -> str:
        return self.label


@record(frozen=True, slots=True)
class Attention(LayerSpec):
    """Multi-head attention: query, key, value and output projections of d_model (heads do not change the count)."""

    d_model: int
    bias: bool = True
    kdim: int | None = None
    vdim: int | None = None
    name: str = ""


@record(frozen=True, slots=True)
class TransformerBlock(LayerSpec):
    """Attention, a two-layer feed-forward network and `norms` LayerNorms, with biases throughout."""

    d_model: int
    feedforward: int
    bias: bool = True
    norms: int = 2
    name: str = ""


@record(frozen=True, slots=True)
class InitialState(LayerSpec):
    """A learned initial hidden state: one vector of `units` per layer (rau's learned_initial_state)."""

    layers: int
    units: int
    name: str = ""


@record(frozen=True, slots=True)
class LoRA(LayerSpec):
    """A PEFT LoRA adapter of one module: lora_A (rank x inputs) and lora_B (outputs x rank), DoRA's magnitude
    (outputs) and lora_B's bias (outputs) when it has them, AdaLoRA's singular values lora_E (rank, `singular`). An
    adapted embedding's inputs are its vocabulary and its outputs its dimension (lora_embedding_A, lora_embedding_B);
    a convolution's inputs are in_channels x kernel. A convolution's LoRA with a Tucker core (LyCORIS' `use_tucker`:
    lora_down rank x in_channels x 1 x 1, lora_mid rank x rank x kernel, lora_up outputs x rank x 1 x 1) has the
    core's kernel as `core` and its in_channels as `inputs`.
    `rank_from`: where an adapter config states `rank` (its 'r', the rank_pattern key naming the module), said where
    the file holds another; empty where the rank is the file's."""

    rank: int
    inputs: int
    outputs: int
    magnitude: bool = False
    bias: bool = False
    name: str = ""
    singular: bool = False
    core: tuple[int, ...] = ()
    rank_from: str = ""

    @property
    def kind(self) -> str:
        return f"{'AdaLoRA' if self.singular else 'LoRA'} r={self.rank}{_tucker(self.core)}"


@record(frozen=True, slots=True)
class LoHa(LayerSpec):
    """A PEFT LoHa adapter of one module (a Hadamard product of two low-rank products): hada_w1_a and hada_w2_a
    (outputs x rank), hada_w1_b and hada_w2_b (rank x inputs); a convolution's inputs are in_channels x kernel. With
    Tucker cores (peft's `use_effective_conv2d`, LyCORIS' `use_tucker`): hada_t1 and hada_t2 (rank x rank x kernel),
    hada_w1_a and hada_w2_a (rank x outputs), hada_w1_b and hada_w2_b (rank x in_channels), the kernel as `core`.
    `rank_from`: where an adapter config states `rank` (its 'r', the rank_pattern key naming the module), said where
    the file holds another; empty where the rank is the file's."""

    rank: int
    inputs: int
    outputs: int
    name: str = ""
    core: tuple[int, ...] = ()
    rank_from: str = ""

    @property
    def kind(self) -> str:
        return f"LoHa r={self.rank}{_tucker(self.core)}"


@record(frozen=True, slots=True)
class LoKr(LayerSpec):
    """A LoKr adapter of one module (peft's and LyCORIS': the Kronecker product of two factors, the module's outputs
    w1_out x w2_out and its inputs w1_in x w2_in). The first factor is whole (lokr_w1, w1_out x w1_in) or of rank r
    (`w1_split`: lokr_w1_a w1_out x r, lokr_w1_b r x w1_in); the second whole (lokr_w2, w2_out x w2_in, a
    convolution's w2_in its in_channels part x kernel) or of rank r (`w2_split`: lokr_w2_a w2_out x r, lokr_w2_b r x
    w2_in), or with a Tucker core (peft's `use_effective_conv2d`, LyCORIS' `use_tucker`: lokr_t2 r x r x kernel,
    lokr_w2_a r x w2_out, lokr_w2_b r x w2_in, the kernel as `core`); DoRA's magnitude (LyCORIS' dora_scale, one an
    output) when it has one. `rank` is None where both factors are whole (the file holds no rank).
    `rank_from`: where an adapter config states `rank` (its 'r', the rank_pattern key naming the module), said where
    the file holds another; empty where the rank is the file's."""

    rank: int | None
    w1_out: int
    w1_in: int
    w2_out: int
    w2_in: int
    w1_split: bool = False
    w2_split: bool = True
    name: str = ""
    core: tuple[int, ...] = ()
    magnitude: bool = False
    rank_from: str = ""

    def __post_init__(self) -> None:
        LayerSpec.__post_init__(self)
        if self.rank is None and (self.w1_split or self.w2_split or self.core):
            raise SpecError("LoKr.rank must be given where a factor is split or has a Tucker core")

    @property
    def kind(self) -> str:
        rank = "" if self.rank is None else f" r={self.rank}"
        factor = self.w1_out if self.w1_out == self.w1_in else f"{self.w1_out}x{self.w1_in}"
        return f"LoKr{rank} f={factor}{_tucker(self.core)}"


def _tucker(core: tuple[int, ...]) -> str:
    """How a kind names a Tucker core of that kernel (none: nothing)."""
    return f" Tucker {'x'.join(map(str, core))}" if core else ""


Breakdown = dict[str, int]


def dense(s: Dense) -> Breakdown:
    """kernel = inputs x units; bias = units."""
    return {"kernel": s.inputs * s.units, "bias": s.units if s.bias else 0}


def embedding(s: Embedding) -> Breakdown:
    """embeddings = vocab x dim."""
    return {"embeddings": s.vocab * s.dim}


def conv(s: Conv) -> Breakdown:
    """kernel = prod(kernel) x in_channels / groups x filters; bias = filters."""
    return {"kernel": prod(s.kernel) * s.in_channels // s.groups * s.filters, "bias": s.filters if s.bias else 0}


def recurrent(s: Recurrent) -> Breakdown:
    """kernel = g.u x inputs; recurrent_kernel = g.u x u; bias = b x g.u (g gates, b bias vectors by convention)."""
    gu = s.gates * s.units
    return {"kernel": gu * s.inputs, "recurrent_kernel": gu * s.units, "bias": s.bias_vectors * gu}


def batch_norm(s: BatchNorm) -> Breakdown:
    """gamma, beta = features; Keras and MXNet also count moving_mean, moving_variance (non-trainable).

    PyTorch keeps the running statistics as buffers, outside its parameter count.
    """
    out = {"gamma": s.features if s.scale else 0, "beta": s.features if s.shift else 0}
    if s.convention in (Convention.KERAS, Convention.MXNET):
        out |= {"moving_mean": s.features, "moving_variance": s.features}
    return out


def layer_norm(s: LayerNorm) -> Breakdown:
    """gamma = features; beta = features when there is a bias."""
    return {"gamma": s.features, "beta": s.features if s.bias else 0}


def norm(s: Norm) -> Breakdown:
    """scale = features (if any); shift = features (if any)."""
    return {"scale": s.features if s.scale else 0, "shift": s.features if s.shift else 0}


def tensor(s: Tensor) -> Breakdown:
    """prod(shape)."""
    return {s.label.lower(): prod(s.shape)}


def lora(s: LoRA) -> Breakdown:
    """lora_A = r x in; lora_B = out x r; lora_mid = r x r x prod(core) (a Tucker core); magnitude = out (DoRA);
    lora_bias = out; lora_E = r (AdaLoRA)."""
    return {
        "lora_A": s.rank * s.inputs,
        "lora_B": s.outputs * s.rank,
        "lora_mid": s.rank * s.rank * prod(s.core) if s.core else 0,
        "magnitude": s.outputs if s.magnitude else 0,
        "lora_bias": s.outputs if s.bias else 0,
        "lora_E": s.rank if s.singular else 0,
    }


def loha(s: LoHa) -> Breakdown:
    """hada_w1 = r x (in + out); hada_w2 = r x (in + out); with Tucker cores, hada_t1 = hada_t2 = r x r x prod(core)."""
    factors = s.rank * (s.inputs + s.outputs)
    core = s.rank * s.rank * prod(s.core) if s.core else 0
    return {"hada_w1": factors, "hada_w2": factors, "hada_t1": core, "hada_t2": core}


def lokr(s: LoKr) -> Breakdown:
    """lokr_w1 = w1_out x w1_in, or r x (w1_out + w1_in) split; lokr_w2 = w2_out x w2_in, or r x (w2_out + w2_in)
    split; lokr_t2 = r x r x prod(core) (a Tucker core); magnitude = w1_out x w2_out (DoRA)."""
    r = s.rank or 0
    return {
        "lokr_w1": r * (s.w1_out + s.w1_in) if s.w1_split else s.w1_out * s.w1_in,
        "lokr_w2": r * (s.w2_out + s.w2_in) if s.w2_split else s.w2_out * s.w2_in,
        "lokr_t2": r * r * prod(s.core) if s.core else 0,
        "magnitude": s.w1_out * s.w2_out if s.magnitude else 0,
    }


def block(s: Block) -> Breakdown:
    """The sum of each part's formula."""
    return {name: total(part) for name, part in s.parts}


def attention(s: Attention) -> Breakdown:
    """query = key = value = output = d x d (key/value d x kdim/vdim); bias d each."""
    d, kd, vd = s.d_model, s.kdim or s.d_model, s.vdim or s.d_model
    b = d if s.bias else 0
    return {"query": d * d + b, "key": d * kd + b, "value": d * vd + b, "output": d * d + b}


def transformer_block(s: TransformerBlock) -> Breakdown:
    """attention 4d^2 + 4d; feed-forward d.ff + ff + ff.d + d; norms 2d each."""
    d, ff, b = s.d_model, s.feedforward, s.bias
    att = sum(attention(Attention(d, bias=b)).values())
    return {
        "attention": att,
        "feedforward_up": d * ff + (ff if b else 0),
        "feedforward_down": ff * d + (d if b else 0),
        "norms": s.norms * 2 * d,
    }


def initial_state(s: InitialState) -> Breakdown:
    """initial_state = layers x units."""
    return {"initial_state": s.layers * s.units}


FORMULAS: Mapping[type[LayerSpec], Callable[[LayerSpec], Breakdown]] = {
    Dense: dense,  # type: ignore[dict-item]
    Embedding: embedding,  # type: ignore[dict-item]
    Conv: conv,  # type: ignore[dict-item]
    SimpleRNN: recurrent,  # type: ignore[dict-item]
    LSTM: recurrent,  # type: ignore[dict-item]
    GRU: recurrent,  # type: ignore[dict-item]
    BatchNorm: batch_norm,  # type: ignore[dict-item]
    LayerNorm: layer_norm,  # type: ignore[dict-item]
    Attention: attention,  # type: ignore[dict-item]
    TransformerBlock: transformer_block,  # type: ignore[dict-item]
    InitialState: initial_state,  # type: ignore[dict-item]
    Norm: norm,  # type: ignore[dict-item]
    Tensor: tensor,  # type: ignore[dict-item]
    Block: block,  # type: ignore[dict-item]
    LoRA: lora,  # type: ignore[dict-item]
    LoHa: loha,  # type: ignore[dict-item]
    LoKr: lokr,  # type: ignore[dict-item]
}


def breakdown(spec: LayerSpec) -> Breakdown:
    """Per-parameter counts of one layer (entries of 0 dropped).

    Raises:
        SpecError: no formula for that kind of layer.
    """
    formula = FORMULAS.get(type(spec))
    if formula is None:
        raise SpecError(f"no formula for layer kind {type(spec).__name__!r}")
    counts = formula(spec)
    return counts if all(counts.values()) else {k: v for k, v in counts.items() if v}


def total(spec: LayerSpec) -> int:
    return sum(breakdown(spec).values())


# per LayerSpec class: a getter of its fields but `name` as one tuple (no formula reads a name)
UNNAMED: dict[type, Callable[[Any], Any]] = {}


def counted(specs: Iterable[LayerSpec]) -> list[tuple[int, str]]:
    """`(total(spec), spec.kind)` of each spec, worked out once per class and fields but the name: a model's repeated
    layers (100,000 modules of a few shapes) are counted once a shape, not once a module. A tuple of specs' answer is
    kept for the next call (an inferred architecture's layers are counted for its summary's kinds, then checked), and
    let go by the call that reads it (100,000 specs are not held while the report is written); not to be changed.

    Raises:
        SpecError: no formula for a kind of layer.
    """
    kept = _last_counted[0] if _last_counted else None  # (read once: another thread may replace it)
    if kept is not None and kept[0] is specs:
        _last_counted.clear()
        return kept[1]
    out: list[tuple[int, str]] = []
    append = out.append
    memo: dict[tuple[type, Any], tuple[int, str]] = {}
    unnamed = UNNAMED.get
    last: tuple[Any, ...] = (None, None, (0, ""))  # the previous spec's class, fields and answer (repeated layers)
    for spec in specs:
        cls = spec.__class__
        size = unnamed(cls)
        if size is None:
            size = UNNAMED[cls] = attrgetter(*[f.name for f in fields(cls) if f.name != "name"] or ["__class__"])
        values = size(spec)
        if cls is last[0] and values == last[1]:
            append(last[2])
            continue
        try:
            answer = memo.get((cls, values))
        except TypeError:  # (a field that is not hashable: counted on its own)
            answer = None
            values = None
        if answer is None:
            answer = total(spec), spec.kind
            if values is not None:
                memo[cls, values] = answer
        last = (cls, values, answer)
        append(answer)
    if type(specs) is tuple:  # (a list may change)
        _last_counted[:] = [(specs, out)]
    return out


_last_counted: list[tuple[tuple[LayerSpec, ...], list[tuple[int, str]]]] = []  # (`counted`: the last specs' answer)


def recipe(spec: LayerSpec) -> tuple[type[LayerSpec], tuple[Any, ...], tuple[Any, ...]]:
    """A spec as its class and its fields before and after `name`, positional: the same layer under another name is
    `cls(*before, name, *after)` (a model's repeated layers: one spec worked out and checked, the others made of its
    values, without keywords)."""
    names = [f.name for f in fields(spec)]
    values = [getattr(spec, name) for name in names]
    at = names.index("name")
    return spec.__class__, tuple(values[:at]), tuple(values[at + 1 :])
