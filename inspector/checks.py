"""A file's layers against an architecture's formulas: the per-layer check and its explanations."""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from math import prod

from inspector import regexes
from inspector.architectures import Architecture
from inspector.formulas import GRU, LSTM, LayerSpec, LoHa, LoKr, LoRA, SimpleRNN, breakdown, counted
from inspector.modules import module_name
from inspector.quantized import QUANTIZATION_KIND, QUANTIZATION_ROW, described, side_tensors
from inspector.records import CHECKED, Checkpoint, Expectation, LayerCheck, RoleMatch, TensorInfo, TensorKind
from inspector.recordtype import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    Items = Sequence[tuple[TensorInfo, RoleMatch]]  # a layer's parameter tensors with their roles


@record(frozen=True, slots=True)
class Layer:
    """The parameter tensors of one file layer, with their roles."""

    name: str
    items: tuple[tuple[TensorInfo, RoleMatch], ...]

    def find(self, rule_prefix: str = "", role: str = "", param: str = "") -> TensorInfo | None:
        for t, r in self.items:
            if r.rule_id.startswith(rule_prefix) and (not role or r.role == role) and (not param or r.param == param):
                return t
        return None

    @property
    def roles(self) -> set[str]:
        return {r.role for _, r in self.items}


def _prefix_in(name: str, names: Set[str]) -> str | None:
    """The longest dotted prefix of `name` that is one of `names` (a block named by its module path)."""
    parts = name.split(".")
    for end in range(len(parts) - 1, 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in names:
            return prefix
    return None


def file_layers(ckpt: Checkpoint, roles: Sequence[RoleMatch], names: Set[str] | None = None) -> dict[str, Layer]:
    """Parameter tensors by the layer their role names, as `Layer`s (`file_groups`)."""
    return {name: Layer(name, tuple(items)) for name, items in file_groups(ckpt, roles, names).items()}


def file_groups(
    ckpt: Checkpoint, roles: Sequence[RoleMatch], names: Set[str] | None = None
) -> dict[str, list[tuple[TensorInfo, RoleMatch]]]:
    """Parameter tensors (with their roles) by the layer their role names; with `names` (an architecture's layers), a
    tensor whose role layer is not one of them goes to the longest of `names` that is a dotted prefix of its name, else
    to its module (`inspector.modules.module_name`)."""
    groups: dict[str, list[tuple[TensorInfo, RoleMatch]]] = {}
    beside = set(map(id, side_tensors(ckpt.tensors)))  # (a quantization's tensors: counted apart, `compare`)
    for t, r in zip(ckpt.tensors, roles, strict=True):
        if t.kind is TensorKind.PARAMETER and id(t) not in beside:
            key = r.layer if names is None or r.layer in names else _prefix_in(t.name, names)
            groups.setdefault(key or module_name(t, r, ckpt.framework), []).append((t, r))
    return groups


def _found(items: Items) -> int:
    return sum(t.n_elements for t, _ in items if t.alias_of is None)


# an adapter module's factors whose first dimension is its rank (LoRA's, LoHa's, a LoKr module's split factors)
RANK_ROWS = ("lora_A", "lora_embedding_A", "hada_w1_b", "lokr_w1_b", "lokr_w2_b")
# a LoRA spec's optional parts: its field, the factor's parameter name, the adapter config's key that asks for it
LORA_EXTRAS = (("magnitude", "lora_magnitude_vector", "use_dora"), ("bias", "lora_bias", "lora_bias"))


def _explain_rank(spec: LoRA | LoHa | LoKr, items: Items) -> str | None:
    """An adapter module whose factors hold another rank than the adapter config states for it, in words: the rank
    in the file, the config's, and where the config states it (its `r`, a rank_pattern key)."""
    rank = next((t.shape[0] for t, r in items if r.param in RANK_ROWS and t.shape), None)
    if rank is None or rank == spec.rank or not spec.rank_from:
        return None
    kind = spec.kind.partition(" ")[0]
    return (
        f"{kind} factors of rank {rank} in the file, the adapter config states {spec.rank} for this module "
        f"(its {spec.rank_from})"
    )


def _explain_lora(spec: LoRA, items: Items) -> str | None:
    """A LoRA module against the adapter config: DoRA's magnitude and lora_B's bias, in words."""
    params = {r.param for _, r in items}
    for part, param, key in LORA_EXTRAS:
        stated = getattr(spec, part)
        if stated != (param in params):
            said = "expected" if stated else "not expected"
            return f"{param} of {spec.outputs:,} {said} ({key} is {stated}), {'none' if stated else 'one'} in the file"
    return None


def _explain(spec: LayerSpec, expected: dict[str, int], items: Items) -> str:
    if isinstance(spec, LoRA | LoHa | LoKr):
        said = _explain_rank(spec, items) or (_explain_lora(spec, items) if isinstance(spec, LoRA) else None)
        if said is not None:
            return said
    found = _found(items)
    diff = sum(expected.values()) - found
    has_bias = any(r.param == "bias" or "bias" in t.name.rsplit(".", 1)[-1] for t, r in items)
    if "bias" in expected and not has_bias and diff == expected["bias"]:
        return f"{spec.kind} layer has no bias: {expected['bias']:,} expected by the formula, none in the file"
    if isinstance(spec, (SimpleRNN, LSTM, GRU)) and "bias" in expected and has_bias:
        gu = spec.gates * spec.units
        stored = expected["bias"] - diff
        if stored > 0 and stored % gu == 0:
            return (
                f"{spec.kind} stores {stored // gu} bias vector(s) of {gu:,}, the {spec.convention.value} "
                f"convention has {expected['bias'] // gu}"
            )
    return f"{sum(expected.values()):,} expected by the formula, {found:,} in the file ({-diff:+,})"


AUTO_SUFFIX = r"_(\d+)$"  # (compiled when a Keras name is first paired)


def _auto_base(name: str) -> tuple[str, str, int]:
    """'conv2d_3/forward' -> ('conv2d', '/forward', 3): Keras's auto name, its counter, and what follows it."""
    head, slash, tail = name.partition("/")
    m = regexes.search(AUTO_SUFFIX, head)
    return (head[: m.start()], slash + tail, int(m.group(1))) if m else (head, slash + tail, 0)


def auto_name_pairs(expected: Sequence[str], found: Sequence[str]) -> dict[str, str]:
    """Keras numbers auto names per process ('dense', 'dense_1'... or 'dense_7', 'dense_8' in a notebook): an
    expected name the file lacks is paired with the file's layers of the same base name, in counter order."""
    found_set, expected_set = set(found), set(expected)  # sets: a file of 100,000 layers stays linear
    if expected_set <= found_set:
        return {}  # nothing missing: nothing to pair
    missing = [n for n in expected if n not in found_set]
    spare = sorted((n for n in found if n not in expected_set), key=lambda n: _auto_base(n)[2])
    pairs: dict[str, str] = {}
    for name in sorted(missing, key=lambda n: _auto_base(n)[2]):
        base, rest, _ = _auto_base(name)
        match = next((n for n in spare if _auto_base(n)[:2] == (base, rest)), None)
        if match is not None:
            pairs[name] = match
            spare.remove(match)
    return pairs


def compare(
    ckpt: Checkpoint,
    roles: Sequence[RoleMatch],
    arch: Architecture,
    source: str,
    layers: Mapping[str, Items] | None = None,
) -> Expectation:
    """Layer by layer: the architecture's formula against the file's parameter tensors.

    `layers`: each file layer's (tensor, role) pairs (`file_groups(ckpt, roles)`, or the modules) where the caller has
    them, used as they are when every tensor's role names a layer and each is one of the architecture's (then grouping
    by `arch`'s names gives the same layers).
    """
    names = {spec.name for spec in arch.layers}  # type: ignore[attr-defined]
    if layers is None or not (all([r.layer for r in roles]) and names.issuperset(layers)):
        layers = file_groups(ckpt, roles, names)
    renamed = (  # (every layer the architecture names is in the file, the usual case: none to pair, no sets made)
        {} if names <= layers.keys() else auto_name_pairs([spec.name for spec in arch.layers], list(layers))  # type: ignore[attr-defined]
    )
    checks: list[LayerCheck] = []
    seen: set[str] = set() if renamed else names  # (no layer renamed: the names the specs give are those seen)
    total = 0
    offsets: dict[str, int | None] | None = None  # tensor offsets by name, made for the first tie
    ok = "ok"
    layer_of, append = layers.get, checks.append
    for spec, (want, kind) in zip(arch.layers, counted(arch.layers), strict=True):
        name: str = spec.name  # type: ignore[attr-defined]
        if renamed:
            name = renamed.get(name, name)
            seen.add(name)
        total += want
        items = layer_of(name)
        if items is None:
            append(LayerCheck(name, kind, want, 0, "missing", f"{kind} expected by the formula is not in the file"))
            continue
        if len(items) == 1:  # a module of one tensor (most, in large files)
            t = items[0][0]
            if t.alias_of is None:
                found = prod(t.shape)
                if found == want:
                    append(LayerCheck(name, kind, found, found, ok))
                    continue
        found = 0
        tied = []
        for t, _ in items:  # _found(layer), and the tied tensors
            if t.alias_of is None:
                found += prod(t.shape)
            else:
                tied.append(t)
        if found == want:
            checks.append(LayerCheck(name, kind, found, found, ok))
            continue
        tied_elements = sum(t.n_elements for t in tied)
        if tied and found + tied_elements == want:
            total -= tied_elements  # the tie is part of the architecture: its formula counts the shared matrix once
            targets = ", ".join(sorted({repr(t.alias_of) for t in tied}))
            if offsets is None:
                offsets = {t.name: t.offset for t in ckpt.tensors}
            twice = any(offsets.get(t.alias_of or "") != t.offset for t in tied)
            stored = "stored twice (a duplicate copy)" if twice else "stored once"
            checks.append(
                LayerCheck(
                    name,
                    kind,
                    found,
                    found,
                    "tied",
                    f"{', '.join(repr(t.name) for t in tied)} tied to {targets}: "
                    f"{tied_elements:,} {stored}, counted once",
                )
            )
        else:
            checks.append(LayerCheck(name, kind, want, found, "mismatch", _explain(spec, breakdown(spec), items)))
    for name, items in layers.items() if not layers.keys() <= seen else ():  # (every layer seen: no pass)
        if name in seen:
            continue
        aliases = [t for t, _ in items if t.alias_of is not None]
        if aliases and len(aliases) == len(items):
            targets = ", ".join(sorted({repr(t.alias_of) for t in aliases}))
            checks.append(LayerCheck(name, "tied", 0, 0, "tied", f"tied to {targets}: stored once, counted once"))
        else:
            found = _found(items)
            checks.append(
                LayerCheck(
                    name,
                    "-",
                    0,
                    found,
                    "unexpected",
                    f"{found:,} parameters in the file that the formula does not have",
                )
            )
    side = side_tensors(ckpt.tensors)
    if side:  # a quantized file: its quantization's tensors, beside the formula's weights, a row of their own
        found = sum(t.n_elements for t in side if t.alias_of is None)
        total += found
        checks.append(LayerCheck(QUANTIZATION_ROW, QUANTIZATION_KIND, found, found, "ok", described(side)))
    anomalies = (
        ()
        if CHECKED.issuperset([c.status for c in checks])  # (every layer agrees: one pass)
        else tuple(c.layer for c in checks if c.status not in ("ok", "tied"))
    )
    return Expectation(
        source,
        arch.name,
        dict(arch.hyperparameters),
        total,
        ckpt.n_parameters,
        tuple(checks),
        tuple(arch.notes),
        anomalies,
    )
