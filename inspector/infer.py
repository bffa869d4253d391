"""The architecture a file's tensors imply (or its config states), checked layer by layer in `checks`.

Transformers families come first (`inspector.families`, checked by `inspector.family_check`: the
config.json's model_type, else the module names).
Then the seed detectors are tried in order (`DETECTORS`); each looks for the rule ids of one family
(Sockeye, rau) and reads the hyperparameters off the shapes, then builds the named architecture with
`architectures.build`. Files of no known family get one layer per module, as its own tensors imply
(`inspector.modules`): nothing is assumed, so such an expectation never disagrees with a correct
file; a layer list that forms identical columns of conv blocks and a dense layer is recognised as a
column CNN, with the input size its first dense layer implies.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from itertools import chain
from operator import attrgetter, itemgetter

from inspector import regexes
from inspector.architectures import Architecture, build
from inspector.checks import Layer, compare, file_layers
from inspector.errors import SpecError
from inspector.formulas import (
    Conv,
    Dense,
    LayerSpec,
    counted,
)
from inspector.hfconfig import adapter_config
from inspector.hfconfig import model_type as config_model_type
from inspector.modules import file_specs, module_groups
from inspector.records import Checkpoint, Expectation, RoleMatch, TensorKind
from inspector.recordtype import replace
from inspector.roles import role_names

TYPE_CHECKING = False


def _rule(layers: dict[str, Layer], prefix: str) -> list[Layer]:
    return [layer for layer in layers.values() if any(r.rule_id.startswith(prefix) for _, r in layer.items)]


# -- family detectors ------------------------------------------------------------------------------------------


def _sockeye(layers: dict[str, Layer], ckpt: Checkpoint, roles: Sequence[RoleMatch]) -> Architecture | None:
    src, tgt, dec0 = layers.get("source_embed"), layers.get("target_embed"), layers.get("decoder_rnn_l0")
    if not (src and tgt and dec0):
        return None
    h2h = dec0.find("sockeye.h2h")
    if h2h is None or len(h2h.shape) != 2:
        return None
    hidden = h2h.shape[1]
    cell = {4: "lstm", 3: "gru"}.get(h2h.shape[0] // hidden)
    s, t = src.items[0][0].shape, tgt.items[0][0].shape
    sn = 1 + sum(1 for n in layers if n.startswith("encoder_rnn_l"))
    tn = sum(1 for n in layers if n.startswith("decoder_rnn_l"))
    attention, size, length = "none", 0, 100
    for kind, layer, axis in SOCKEYE_ATTENTION:
        found = layers.get(layer)
        if found is not None:
            shape = found.items[0][0].shape
            attention, size, length = kind, shape[axis] if axis == 0 else 0, shape[0]
            break
    return build(
        "sockeye-rnn",
        source_vocab=s[0],
        target_vocab=t[0],
        embed=(s[1], t[1]),
        hidden=hidden,
        layers=(sn, tn),
        cell=cell or "lstm",
        attention=attention,
        attention_hidden=size,
        max_seq_len=length,
    )


# Sockeye's attention type told by its parameter names (the first found wins), with where its size is read
SOCKEYE_ATTENTION = (
    ("mlp", "att_e2h", 0),
    ("bilinear", "att_s2t", 1),
    ("mhdot", "att_h2o", 1),
    ("dot", "att_s2h", 0),
    ("location", "att_loc", 1),
)


def _rau_rnn(layers: dict[str, Layer], ckpt: Checkpoint, roles: Sequence[RoleMatch]) -> Architecture | None:
    emb, rnn0 = layers.get("embedding"), layers.get("rnn.l0")
    if not (emb and rnn0 and emb.find("rau.") and rnn0.find("rau.rnn_input")):
        return None
    vocab, hidden = emb.items[0][0].shape
    gates = rnn0.find("rau.rnn_input").shape[0] // hidden  # type: ignore[union-attr]
    name = {4: "rau-lstm-lm", 1: "rau-rnn-lm"}.get(gates)
    n = sum(1 for k in layers if k.startswith("rnn.l"))
    return build(name, vocab=vocab, hidden=hidden, layers=n) if name else None


def _rau_stack_rnn(layers: dict[str, Layer], ckpt: Checkpoint, roles: Sequence[RoleMatch]) -> Architecture | None:
    """rau stack RNN LMs (stack_nn): the stack type from its layers, its sizes from their shapes."""
    emb, rnn0 = layers.get("embedding"), layers.get("rnn.l0")
    if not (emb and rnn0 and rnn0.find("rau.rnn_input")):
        return None
    vocab, hidden = emb.items[0][0].shape
    l0 = rnn0.find("rau.rnn_input")
    reading = l0.shape[1] - hidden  # type: ignore[union-attr]
    gates = l0.shape[0] // hidden  # type: ignore[union-attr]
    controller = {4: "lstm", 1: "rnn"}.get(gates)
    n = sum(1 for k in layers if k.startswith("rnn.l"))

    def rows(name: str) -> int | None:
        layer = layers.get(name)
        return layer.items[0][0].shape[0] if layer else None

    actions, push, operations, pushed = (
        rows(f"stack.{k}") for k in ("actions", "push_value", "operations", "pushed_vector")
    )
    if actions in (2, 3) and push:
        stack = f"{'superposition' if actions == 3 else 'stratification'}-{push}"
    elif operations and reading > 0:
        qs = reading // pushed if pushed else reading  # reading = q s (m)
        q = (operations - 2 * qs * qs) // qs  # operations = 2 (qs)^2 + q (qs)
        if q <= 0 or qs % q:
            return None
        stack = f"vector-nondeterministic-{q}-{qs // q}-{pushed}" if pushed else f"nondeterministic-{q}-{qs // q}"
    else:
        return None
    return build("rau-stack-rnn", vocab=vocab, hidden=hidden, layers=n, controller=controller or "lstm", stack=stack)


# rau stack transformer files: each unit's name pattern (compiled when a file has such names); its
# prefix names the unit
RAU_STACK_UNITS = (
    ("stack", r"(?P<p>.+)\.wrapped_module\.first\.second\.action_layer\.linear\.weight"),
    ("feedforward", r"(?P<p>.+)\.wrapped_module\.first\.second\.func\.0\.linear\.weight"),
    ("transformer", r"(?P<p>.+\.layers\.layers)\.\d+\.self_attn\.in_proj_weight"),
)
RAU_STACK_ENDINGS = (".linear.weight", ".self_attn.in_proj_weight")  # every unit pattern ends so: a cheap first test


def _depth(prefix: str) -> int:
    """rau nests each later layer one `first.` shallower: the deeper a unit, the earlier it runs."""
    parts = prefix.split(".")
    return next((i for i, p in enumerate(parts) if p != "first"), len(parts))


def _rau_stack_transformer(
    layers: dict[str, Layer], ckpt: Checkpoint, roles: Sequence[RoleMatch]
) -> Architecture | None:
    """rau stack transformers: standard and stack-attention layers in the order rau nests them, its layer string
    rebuilt from the shapes, each layer checked under the module path the file gives it."""
    shapes = {t.name: t.shape for t in ckpt.tensors if t.kind is TensorKind.PARAMETER}
    units: dict[str, tuple[str, str]] = {}  # prefix -> (kind, part of the layer string)
    std: dict[str, int] = {}
    ff = 0
    for name in shapes:
        if not name.endswith(RAU_STACK_ENDINGS):
            continue
        for kind, pattern in RAU_STACK_UNITS:
            m = regexes.fullmatch(pattern, name)
            if m is None:
                continue
            p = m["p"]
            if kind == "transformer":
                std[p] = std.get(p, 0) + 1
            elif kind == "feedforward":
                ff = shapes[name][0]
                units[p] = ("feedforward", "")
            else:
                operations = shapes[name][0]
                pushed = shapes[f"{p}.wrapped_module.first.second.input_to_pushed_vector_layer.linear.weight"][0]
                reading = shapes[f"{p}.wrapped_module.first.second.stack_reading_to_output_layer.linear.weight"][1]
                if operations == 3:
                    units[p] = ("stack", f"superposition-{pushed}")
                else:
                    qs = reading // pushed
                    q = (operations - 2 * qs * qs) // qs
                    units[p] = ("stack", f"nondeterministic-{q}-{qs // q}-{pushed}")
    if not any(kind == "stack" for kind, _ in units.values()):
        return None
    units |= {g: ("transformer", str(n)) for g, n in std.items()}
    order = sorted(units, key=_depth, reverse=True)
    spec = ".".join(units[p][1] for p in order if units[p][0] != "feedforward")
    emb = next(t for t, r in ((t, r) for layer in layers.values() for t, r in layer.items) if r.role == "embedding")
    vocab, d = emb.shape
    if not ff:
        ff = next(shapes[n][0] for n in shapes if n.endswith(".linear1.weight"))
    arch = build("rau-stack-transformer", vocab=vocab, d_model=d, heads=1, feedforward=ff, spec=spec)
    names: list[str] = []  # the file's own module path of each formula layer, in order
    for p in order:
        names += [f"{p}.{i}" for i in range(std[p])] if units[p][0] == "transformer" else [p]
    inside = tuple(f"{n}." for n in names)
    embedding = emb.name.rpartition(".")[0]
    final = {n.rpartition(".")[0] for n in shapes if not n.startswith(inside)} - {embedding}
    if len(final) != 1 or len(arch.layers) != len(names) + 2:
        return None
    middle = (replace(spec_, name=n) for spec_, n in zip(arch.layers[1:-1], names, strict=True))  # type: ignore[call-arg]
    last = replace(arch.layers[-1], name=final.pop())  # type: ignore[call-arg]
    hyper = {k: v for k, v in arch.hyperparameters.items() if k != "heads"}
    notes = (*arch.notes, "heads: not in the file (no count depends on them)", f"rau's layer string: {spec}")
    return Architecture(arch.name, hyper, (arch.layers[0], *middle, last), notes)


def _rau_transformer(layers: dict[str, Layer], ckpt: Checkpoint, roles: Sequence[RoleMatch]) -> Architecture | None:
    emb = layers.get("embedding")
    if emb is None:
        return None
    blocks = _rule(layers, "rau.attn_qkv")
    if not blocks:
        return None
    d = blocks[0].find("rau.attn_qkv", param="weight").shape[1]  # type: ignore[union-attr]
    up = blocks[0].find("rau.ffn_up", param="weight")
    ff = up.shape[0] if up is not None else 4 * d
    return build("rau-transformer-lm", vocab=emb.items[0][0].shape[0], d_model=d, layers=len(blocks), feedforward=ff)


# -- generic layer lists ----------------------------------------------------------------------------------------


def _column_cnn(specs: list[LayerSpec]) -> Architecture | None:
    """Identical columns of [Conv x convs, Dense] then one Dense: seed 003's model, with its input size."""
    kinds = [type(s) for s in specs]
    if len(specs) < 4 or kinds[-1] is not Dense or kinds[0] is not Conv:
        return None
    convs = kinds.index(Dense)
    if any(kind is not Conv for kind in kinds[:convs]):
        return None  # a column is convolutions then one dense layer, nothing else
    column = specs[: convs + 1]
    columns, rest = divmod(len(specs) - 1, convs + 1)
    if (
        rest
        or columns < 1
        or any(specs[i] != _renamed(column[i % (convs + 1)], specs[i]) for i in range(len(specs) - 1))
    ):
        return None
    first, dense = column[0], column[-1]
    assert isinstance(first, Conv) and isinstance(dense, Dense)
    filters, kernel = column[convs - 1].filters, first.kernel[0]  # type: ignore[attr-defined]
    side = math.isqrt(dense.inputs // filters)
    if side * side * filters != dense.inputs:
        return None
    for _ in range(convs):  # undo 'valid' conv + 2x2 pooling: the smallest input that gives `side`
        side = side * 2 + kernel - 1
    try:
        arch = build(
            "column-cnn",
            height=side,
            width=side,
            depth=first.in_channels,
            columns=columns,
            convs=convs,
            filters=filters,
            kernel=kernel,
            pool=2,
            dense=dense.units,
            classes=getattr(specs[-1], "units", 0),
        )
    except SpecError:
        return None
    same = all(_renamed(a, s) == s for a, s in zip(arch.layers, specs, strict=True))
    return arch if same and len(arch.layers) == len(specs) else None


def _renamed(spec: LayerSpec, like: LayerSpec) -> LayerSpec:

    return replace(spec, name=getattr(like, "name", ""))  # type: ignore[call-arg]


def _generic(modules: Mapping[str, Items], ckpt: Checkpoint, roles: Sequence[RoleMatch]) -> Architecture | None:
    """Every module as the layer its own tensors imply (nothing assumed), recognised as a column CNN if it is one.
    Given the file's modules (`modules.module_groups`), not `Layer`s: `_inferred` calls it so (one `Layer` a module
    would be 100,000 records of a large file made for nothing)."""
    specs = file_specs(ckpt, roles, modules)
    if not specs:
        return None
    column = _column_cnn(specs)
    if column is not None:
        renamed = tuple(_renamed(s, f) for s, f in zip(column.layers, specs, strict=True))
        return Architecture(column.name, column.hyperparameters, renamed, column.notes)
    layers = tuple(specs)  # (the tuple `compare` checks: its counts, `_kinds`', kept by `counted`)
    summary = {"layers": len(layers), "kinds": _kinds(layers)}
    model_type = config_model_type(ckpt.config)
    if model_type is not None:  # a transformers model without a family table (ResNet, ConvNeXt...), a diffusers one
        note = f"config.json names {model_type!r}: no family table for it yet, each module counted as its shapes imply"
        return Architecture("sequential", {"model_type": model_type} | summary, layers, (note,))
    return Architecture("sequential", summary, layers)


KINDS_LISTED = 64  # layers whose kinds the generic architecture's summary lists one by one; more are counted


def _kinds(specs: Sequence[LayerSpec]) -> str:
    """The layers' kinds in order ("Embedding LSTM LSTM Dense"); past `KINDS_LISTED` layers, each kind with how many
    layers are of it, in order of first appearance ("Dense x96, LayerNorm x32": a list of 100,000 was 600 KB): each
    kind as `counted` gives it, once a kind of layer (the answer `compare` reads again)."""
    if len(specs) <= KINDS_LISTED:
        return " ".join([spec.kind for spec in specs])
    try:
        kinds = map(itemgetter(1), counted(specs))
    except SpecError:  # (a layer without a formula: `compare` tells it)
        kinds = map(attrgetter("kind"), specs)
    return ", ".join(f"{kind} x{n:,}" for kind, n in Counter(kinds).items())  # (counted in C, first seen first)


def _lora_adapter(layers: dict[str, Layer], ckpt: Checkpoint, roles: Sequence[RoleMatch]) -> Architecture | None:
    """A PEFT LoRA adapter without its adapter_config.json, or LyCORIS' modules in kohya-ss' layout: each module's
    rank as the file holds it (one layer per file module, as `_generic`'s; `compare` groups the tensors by their
    names)."""
    from inspector.adapters import adapter_architecture  # (a file of adapter factors only)

    return adapter_architecture(ckpt, roles, None)


if TYPE_CHECKING:  # (an alias for the annotations only: subscripting `Callable` at run time costs about 0.05 ms)
    from typing import Any

    from inspector.checks import Items

    # (`_generic` is given the file's modules, not `Layer`s: `_inferred`)
    Detector = Callable[[Any, Checkpoint, Sequence[RoleMatch]], Architecture | None]
# Each detector with what it cannot work without: a layer of that name among the roles' layers, a tensor of that
# role (""; nothing). A detector whose need is absent is not tried, so a file of 100,000 modules and no seed family
# is not grouped by role layers for nothing.
DETECTORS: tuple[tuple[Detector, str, str], ...] = (
    (_sockeye, "source_embed", ""),
    (_rau_stack_rnn, "embedding", ""),
    (_rau_rnn, "embedding", ""),
    (_rau_stack_transformer, "", "embedding"),
    (_rau_transformer, "embedding", ""),
    (_lora_adapter, "", "lora_factor"),
    (_lora_adapter, "", "adapter_factor"),  # (LyCORIS' LoHa and LoKr: tried once where both roles are there)
    (_generic, "", ""),
)


NEEDED_LAYERS = frozenset(layer for _, layer, _ in DETECTORS if layer)


def infer_architecture(ckpt: Checkpoint, roles: Sequence[RoleMatch]) -> Architecture | None:
    return _inferred(ckpt, roles)[0]


def _inferred(ckpt: Checkpoint, roles: Sequence[RoleMatch]) -> tuple[Architecture | None, Mapping[str, Items]]:
    """The architecture the shapes imply, and the file's layers it was read from as their (tensor, role) pairs (for
    `compare`)."""
    # the layers the detectors need that the roles name (two, each looked for in a list: no set of every layer)
    layers_named = [r.layer for r in roles]
    named, roled = {layer for layer in NEEDED_LAYERS if layer in layers_named}, role_names(roles)
    del layers_named  # (a name per module: not held while the detectors make theirs)
    tried = dict.fromkeys(
        d for d, layer, role in DETECTORS if not ((layer and layer not in named) or (role and role not in roled))
    )
    layers: dict[str, Layer] | None = None
    for detector in tried:
        if detector is _generic:  # one layer per module: the file's modules are the layers, checked as they were read
            groups = module_groups(ckpt, roles)
            try:
                arch = _generic(groups, ckpt, roles)
            except (SpecError, ValueError, ZeroDivisionError, IndexError, StopIteration):
                arch = None
            return arch, groups
        if layers is None:
            layers = file_layers(ckpt, roles)
        try:
            arch = detector(layers, ckpt, roles)
        except (SpecError, ValueError, ZeroDivisionError, IndexError, StopIteration):
            arch = None  # shapes that do not fit this family: try the next
        if arch is not None:
            return arch, {name: layer.items for name, layer in layers.items()}
    return None, {}  # (the last detector, `_generic`, always runs)


def from_config(ckpt: Checkpoint, roles: Sequence[RoleMatch]) -> Architecture | None:
    """The architecture a Keras file's own model config describes (input sizes from the file's variables)."""
    if not ckpt.config or not ckpt.config.get("layers"):
        return None
    from inspector.keras_layers import KERAS_LAYERS, config_specs  # (Keras files only: not in every run's start-up)

    variables: dict[str, dict[str, tuple[int, ...]]] = {}
    for t in ckpt.tensors:
        if t.kind is TensorKind.PARAMETER and t.layer and t.param:
            variables.setdefault(t.layer, {})[t.param.removesuffix(":0")] = t.shape
    specs: list[LayerSpec] = []
    unknown: dict[str, None] = {}  # classes without a formula whose layers hold variables, in config order
    for entry in ckpt.config["layers"]:
        try:
            made = config_specs(entry, variables)
        except (KeyError, TypeError, ValueError, SpecError):
            continue  # a layer whose config this table cannot read: the check shows it as unexpected
        if made and entry.get("class_name") not in KERAS_LAYERS:
            unknown[str(entry.get("class_name"))] = None
        specs += made
    if not specs:
        return None
    name = (ckpt.config.get("raw") or {}).get("class_name", "keras-model")
    hyper = {"layers": len(specs), "source": ckpt.config.get("source")}
    notes = (
        (f"no formula for Keras class(es) {', '.join(unknown)}: their layers are counted as the file holds them",)
        if unknown
        else ()
    )
    return Architecture(f"keras-{str(name).lower()}", hyper, tuple(specs), notes)


# Frameworks whose names are not the family tables' (PyTorch's dotted module paths, (out, in) weights): a Flax tree's
# `encoder/layer/0/attention/attention/query/kernel`, (in, out). A family found from its config would hold the few
# names both spell alike (ViT's `embeddings.cls_token`) and miss every other module: a COUNT_MISMATCH on a correct file
NAMED_OTHERWISE = frozenset({"flax"})


def may_be_family(ckpt: Checkpoint) -> bool:
    """False when no family of `inspector.families` can be found in the file (`family_check.detect` finds none and
    `family_check.refine_roles` changes nothing), told without importing the family tables (about 10 million
    instructions of a run, issue 16); and for a framework whose names the tables do not read (`NAMED_OTHERWISE`).

    Without a config naming a model type a family is found only when all its layer parts are in the file, and
    every family has a layer part whose path keys (`family_check._shape_key`) to one holding '#', a whole part of
    digits (`layers.{i}.mlp`: `layers.#.mlp`; `tests/test_speed.py` checks every family and base): so a
    file needs some name or module path with a part of digits only (or a '#', or a newline, which `$` reads
    specially), and its module paths are its names less a part. Names, layers and parameter names are read
    joined by '.', which keeps every part a part, a few hundred tensors at a time (a file with layer indices has
    one in its first names; 100,000 names split at once would hold 300,000 strings)."""
    if ckpt.framework in NAMED_OTHERWISE:
        return False
    config = ckpt.config
    if config and "model_type" in config:
        return True
    tensors = ckpt.tensors
    for start in range(0, len(tensors), 512):
        chunk = tensors[start : start + 512]
        text = ".".join(
            chain(
                map(attrgetter("name"), chunk),
                filter(None, map(attrgetter("layer"), chunk)),
                filter(None, map(attrgetter("param"), chunk)),
            )
        )
        if "#" in text or "\n" in text or any(map(str.isdecimal, text.split("."))):
            return True
    return False


def expect(ckpt: Checkpoint, roles: Sequence[RoleMatch], stated: Architecture | None = None) -> Expectation | None:
    """The stated architecture's check, else the file's own config, else the one the shapes imply.

    With a config, the inference from shapes is checked against it and a note says where they differ.
    """
    if stated is not None:
        from inspector import family_check
        from inspector.families import FAMILY_BY_NAME

        family = FAMILY_BY_NAME.get(stated.family or "")
        if family is not None:  # module by module, under the prefix the file uses
            h = family_check.stated_hyperparameters(family, stated.hyperparameters)
            return family_check.check_stated(ckpt, roles, family, h)
        return compare(ckpt, roles, stated, "stated")
    adapter = adapter_config(ckpt.config)
    if adapter is not None:  # a PEFT adapter with its adapter_config.json: each LoRA module at the config's rank
        from inspector.adapters import adapter_architecture

        arch = adapter_architecture(ckpt, roles, adapter)
        if arch is not None:
            return compare(ckpt, roles, arch, "config")
    if not (ckpt.config and ckpt.config.get("layers")) and may_be_family(ckpt):  # (a Keras config: read below)
        from inspector import family_check

        checked = family_check.expect(ckpt, roles)
        if checked is not None:
            return checked
    inferred, layers = _inferred(ckpt, roles)
    configured = from_config(ckpt, roles)
    if configured is not None:
        result = compare(ckpt, roles, configured, "config", layers)
        if inferred is not None:
            other = compare(ckpt, roles, inferred, "inferred", layers)
            agree = other.total == result.total
            note = (
                f"inference from the shapes agrees with the config ({other.total:,})"
                if agree
                else f"inference from the shapes gives {other.total:,}, the config {result.total:,}"
            )
            result = Expectation(
                result.source,
                result.architecture,
                result.hyperparameters,
                result.total,
                result.found,
                result.layers,
                (*result.notes, note),
                result.anomalies,
            )
        return result
    return compare(ckpt, roles, inferred, "inferred", layers) if inferred is not None else None


__all__ = ["compare", "expect", "infer_architecture"]
