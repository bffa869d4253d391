"""`inspector diff A B`: match the tensors of two checkpoints and say what differs (pure: records in, records out).

Matching, in rounds, each on what the earlier rounds left:

1. the same stored name;
2. the same name after `NAMING_RULES` (each format's naming undone: Keras ``layer/kernel:0`` and Keras 3
   ``layers/dense/vars/0`` both become ``<layer>.kernel`` from what the loader states, MXNet ``arg:`` and
   ``aux:`` prefixes dropped, transformers base-model prefixes dropped, Keras parameter names as PyTorch's,
   optimum-quanto's and torchao's quantized values as the float weight they quantize);
3. ``--map`` rules (regular expressions rewriting A's normalised names into B's);
4. shape and order: tensors with the same parameter kind (weight, bias, running_mean...) and shape, or
   shapes that are a Keras/PyTorch layout of each other (`PERMUTATIONS`): first where one tensor on each
   side has that key, then within layers those pairs matched (a bias follows its layer's kernel), then in
   file order where both sides have as many; then shape alone. These pairs are reported as renamed.

Aliases (tied weights: `TensorInfo.alias_of`) join the name rounds only; a tie kept in one file and dropped,
or stored twice, in the other is a `tied` difference, which loses nothing. Each difference says whether it
is `expected` (loses nothing: renamed, transposed, tied, a widening dtype change, optimizer state present in
one file only) or not.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType

from inspector.enumtype import StrEnum
from inspector.errors import SpecError
from inspector.quantized import (
    BLOCK_PACKINGS,
    BNB_STATE_NAMES,
    QUANTO_STATE_NAMES,
    QUANTO_VALUES,
    TORCHAO_VALUES,
    block_packing,
    quantization_tensors,
    regrouped,
)
from inspector.records import TensorKind
from inspector.recordtype import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from inspector.records import Checkpoint, TensorInfo
    from inspector.values import ValueComparison


class DiffKind(StrEnum):
    RENAMED = "renamed"  # matched by shape and order, names differ
    MISSING = "missing"  # in A, not in B
    EXTRA = "extra"  # in B, not in A
    SHAPE_CHANGED = "shape_changed"
    TRANSPOSED = "transposed"  # the same tensor in the other framework's layout (Keras kernel vs PyTorch weight)
    DTYPE_CHANGED = "dtype_changed"
    TIED = "tied"  # tied in one file; dropped, duplicated or stored separately in the other
    VALUES_CHANGED = "values_changed"  # --data: values differ beyond the tolerance
    QUANTIZATION_ERROR = "quantization_error"  # --data: a float weight against its quantization, dequantized
    NOT_COMPARED = "not_compared"  # --data: values that could not be streamed


@record(frozen=True, slots=True)
class NamingRule:
    """A regular expression substitution applied to every name of both files (`source`: where the naming is from)."""

    rule_id: str
    pattern: str
    replacement: str
    source: str


NAMING_RULES: tuple[NamingRule, ...] = (
    NamingRule("mxnet.arg_aux", r"^(?:arg|aux):", "", "MXNet Module.save_checkpoint / HybridBlock.export"),
    NamingRule("keras.variable_suffix", r":\d+$", "", "Keras 2 / tf.keras weight names"),
    # Flax's msgpack trees (`loaders.flax_msgpack`: '/'-joined paths, before they become dotted): the variables'
    # collections, BatchNorm's statistics, a norm's scale and Embed's table as PyTorch names them
    NamingRule("flax.params", r"^params/", "", "flax variables dict / TrainState params collection"),
    NamingRule("flax.batch_stats", r"^batch_stats/(.+/)(mean|var)$", r"\1running_\2", "flax BatchNorm batch_stats"),
    NamingRule("flax.scale", r"(?<=/)scale$", "weight", "flax norm scale vs PyTorch weight"),
    NamingRule("flax.embedding", r"(?<=/)embedding$", "weight", "flax Embed table vs PyTorch weight"),
    NamingRule("path.slash", r"/", ".", "HDF5 and Keras paths"),
    NamingRule(
        "hf.base_model_prefix",
        r"^(?:model|transformer|bert|roberta|distilbert|albert|electra|gpt_neox|deberta|xlm_roberta|base_model)\.",
        "",
        "transformers base_model_prefix (head models nest the base model under it)",
    ),
    NamingRule(
        "quanto.values",
        re.escape(QUANTO_VALUES) + r"(?:\._data)?$",
        ".weight",
        "optimum-quanto's quantized weights (`<module>.weight._data`, packed `._data._data`) as the float weight",
    ),
    NamingRule(
        "torchao.values",
        r"\._(\w+)_" + TORCHAO_VALUES + "$",
        r".\1",
        "torchao's flattened parameters (`<module>._weight_qdata`: transformers' TorchAoConfig) as the float weight",
    ),
    NamingRule("gptq_awq.values", r"\.qweight$", ".weight", "GPTQ's and AWQ's packed weights as the float weight"),
    NamingRule(
        "mxfp4.blocks",
        re.escape(BLOCK_PACKINGS["mxfp4"].blocks) + "$",
        "",
        "gpt-oss's MXFP4 experts (`<projection>_blocks`) as the float projection",
    ),
    NamingRule("keras.param", r"(^|\.)kernel$", r"\1weight", "Keras Dense/Conv kernel vs PyTorch weight"),
    NamingRule("keras.embeddings", r"(^|\.)embeddings$", r"\1weight", "Keras Embedding vs PyTorch weight"),
    NamingRule("norm.gamma", r"(^|\.)gamma$", r"\1weight", "Keras / MXNet Gluon norm scale vs PyTorch weight"),
    NamingRule("norm.beta", r"(^|\.)beta$", r"\1bias", "Keras / MXNet Gluon norm shift vs PyTorch bias"),
    NamingRule("norm.moving_mean", r"(^|\.)moving_mean$", r"\1running_mean", "Keras BatchNormalization"),
    NamingRule("norm.moving_variance", r"(^|\.)moving_variance$", r"\1running_var", "Keras BatchNormalization"),
)
# Parameter names recognised at the end of a name (after '.', '_' or '/'), longest first, with their PyTorch name.
PARAM_NAMES: Mapping[str, str] = MappingProxyType(
    {
        "recurrent_kernel": "recurrent_kernel",
        "moving_variance": "running_var",
        "moving_mean": "running_mean",
        "running_mean": "running_mean",
        "running_var": "running_var",
        "embeddings": "weight",
        "kernel": "weight",
        "weight": "weight",
        "gamma": "weight",
        "beta": "bias",
        "bias": "bias",
    }
)
# b = a.transpose(perm) for each Keras <-> PyTorch kernel layout, by number of dimensions:
# Dense (in, out) <-> Linear (out, in); ConvND (k..., in, out) <-> (out, in, k...).
PERMUTATIONS: Mapping[int, tuple[tuple[int, ...], ...]] = MappingProxyType(
    {2: ((1, 0),), 3: ((2, 1, 0),), 4: ((3, 2, 0, 1), (2, 3, 1, 0)), 5: ((4, 3, 0, 1, 2), (2, 3, 4, 1, 0))}
)
TRAINING_STATE = frozenset({TensorKind.OPTIMIZER})  # missing / extra tensors of these kinds lose no weights
# (a quantization's error: the weight's narrowing, its dtype_changed, is the difference that changes the model)
EXPECTED_KINDS = frozenset(
    {DiffKind.RENAMED, DiffKind.TRANSPOSED, DiffKind.TIED, DiffKind.NOT_COMPARED, DiffKind.QUANTIZATION_ERROR}
)
# dtype changes that lose nothing (every value of the first is exactly representable in the second)
WIDENINGS = frozenset(
    {("F16", "F32"), ("BF16", "F32"), ("F16", "F64"), ("BF16", "F64"), ("F32", "F64"), ("I8", "I16"),
     ("I8", "I32"), ("I8", "I64"), ("I16", "I32"), ("I16", "I64"), ("I32", "I64"), ("U8", "U16"),
     ("U8", "U32"), ("U8", "U64"), ("U16", "U32"), ("U16", "U64"), ("U32", "U64"), ("U8", "I16"),
     ("U8", "I32"), ("U8", "I64"), ("U16", "I32"), ("U16", "I64"), ("U32", "I64")}
)  # fmt: skip
_COMPILED = tuple((re.compile(r.pattern), r.replacement) for r in NAMING_RULES)
# a quantized weight's state named after the weight (bitsandbytes', optimum-quanto's): its module's
_QUANTIZATION_STATE = re.compile(r"(.+)\.(?:" + BNB_STATE_NAMES + "|" + QUANTO_STATE_NAMES + ")")
_PARAM_END = re.compile(r"(?:^|[._/])(" + "|".join(PARAM_NAMES) + r")(?::\d+)?$")


@record(frozen=True, slots=True)
class MapRule:
    """A user rule (``--map FROM=TO``): A's normalised names matching FROM, rewritten for B."""

    pattern: re.Pattern[str]
    replacement: str


@record(frozen=True, slots=True)
class Pair:
    a: TensorInfo
    b: TensorInfo
    how: str  # "name", "normalised", "mapped", "shape and order"
    perm: tuple[int, ...] | None = None  # b = a.transpose(perm) when the layouts differ


@record(frozen=True, slots=True)
class Difference:
    kind: DiffKind
    a: str | None
    b: str | None
    layer: str
    expected: bool  # loses nothing
    message: str
    details: Mapping[str, Any] = field(default_factory=dict)


@record(frozen=True, slots=True)
class Diff:
    """Everything `inspector diff` says about two checkpoints."""

    a: Checkpoint
    b: Checkpoint
    pairs: tuple[Pair, ...]
    differences: tuple[Difference, ...]
    values: tuple[ValueComparison, ...] | None = None  # with --data, one per pair
    tolerance: float = 0.0

    @property
    def same(self) -> bool:
        """Nothing lost or changed: every difference is an expected one."""
        return all(d.expected for d in self.differences)

    @property
    def verdict(self) -> str:
        if not self.differences:
            return "same"
        return "equivalent" if self.same else "different"


def parse_map_rules(texts: Iterable[str]) -> tuple[MapRule, ...]:
    """``FROM=TO`` rules (FROM a regular expression matched in full, TO with ``\\1`` groups).

    Raises:
        SpecError: a rule has no '=' or an invalid expression.
    """
    rules = []
    for text in texts:
        source, sep, replacement = text.partition("=")
        if not sep or not source:
            raise SpecError(f"--map rule {text!r} is not FROM=TO")
        try:
            rules.append(MapRule(re.compile(source), replacement))
        except re.error as exc:
            raise SpecError(f"--map rule {text!r}: {exc}") from exc
    return tuple(rules)


def normalise(t: TensorInfo) -> str:
    """A tensor's name with its format's naming undone (`NAMING_RULES`); Keras names from the stated layer."""
    name = f"{t.layer}/{t.param}" if t.layer and t.param and t.section == "model" else t.name
    for pattern, replacement in _COMPILED:
        name = pattern.sub(replacement, name)
    return name


def param_of(name: str) -> str:
    """The parameter kind at the end of a name, as PyTorch names it ('weight', 'bias', 'running_mean'...)."""
    found = _PARAM_END.search(name)
    if found:
        return PARAM_NAMES[found.group(1)]
    return re.split(r"[./:]", name)[-1]


def layer_of(name: str) -> str:
    """The layer part of a normalised name: what precedes its parameter name ('' at the top level; a quantized
    weight's state, named after the weight, is its module's)."""
    found = _PARAM_END.search(name)
    if found and found.start() > 0:
        return name[: found.start()]
    state = _QUANTIZATION_STATE.fullmatch(name)
    if state:
        return state[1]
    return name.rsplit(".", 1)[0] if "." in name else ""


def permutation(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...] | None:
    """The Keras/PyTorch layout permutation taking shape `a` to `b` (None when equal or unrelated)."""
    if tuple(a) == tuple(b):
        return None
    for perm in PERMUTATIONS.get(len(a), ()):
        if tuple(a[p] for p in perm) == tuple(b):
            return perm
    return None


# -- matching ---------------------------------------------------------------------------------------------


def _unique_keys(tensors: Iterable[TensorInfo], key: Callable[[TensorInfo], str]) -> dict[str, TensorInfo]:
    seen: dict[str, TensorInfo] = {}
    dupes: set[str] = set()
    for t in tensors:
        k = key(t)
        if k in seen:
            dupes.add(k)
        seen[k] = t
    return {k: t for k, t in seen.items() if k not in dupes}


def _by_key(
    left_a: list[TensorInfo], left_b: list[TensorInfo], key_a: Callable[[TensorInfo], str], how: str,
    key_b: Callable[[TensorInfo], str] | None = None,
) -> list[Pair]:  # fmt: skip
    ka, kb = _unique_keys(left_a, key_a), _unique_keys(left_b, key_b or key_a)
    return [_pair(ka[k], kb[k], how) for k in ka if k in kb]


def _pair(a: TensorInfo, b: TensorInfo, how: str) -> Pair:
    # (values laid out by their quantization, in rows of a group, are not transposed where the shapes happen to be;
    # block-packed values that are each matrix's transpose of the float parameter are, whatever the shapes)
    if regrouped(a) or regrouped(b):
        return Pair(a, b, how, None)
    packing = block_packing(a) or block_packing(b)
    if packing is not None and packing.transposed and len(a.shape) == len(b.shape) >= 2:
        n = len(a.shape)
        swapped = (*range(n - 2), n - 1, n - 2)
        return Pair(a, b, how, swapped if tuple(a.shape[i] for i in swapped) == tuple(b.shape) else None)
    return Pair(a, b, how, permutation(a.shape, b.shape))


def _layer_map(pairs: Sequence[Pair]) -> dict[str, str]:
    """A's layer -> B's layer, where the pairs so far agree on it (one B layer per A layer)."""
    seen: dict[str, set[str]] = {}
    for p in pairs:
        seen.setdefault(layer_of(normalise(p.a)), set()).add(layer_of(normalise(p.b)))
    return {la: next(iter(lbs)) for la, lbs in seen.items() if len(lbs) == 1}


def _rounds(
    left_a: Sequence[TensorInfo], left_b: Sequence[TensorInfo], pairs: list[Pair],
    keys: Sequence[tuple[Callable[[TensorInfo], Any], Callable[[TensorInfo], Any]]], unique_only: bool,
) -> bool:  # fmt: skip
    """Pair what is left by each (key of A, key of B): groups of one each, or of equal size in file order."""
    found = False
    for key_a, key_b in keys:
        taken_a, taken_b = {id(p.a) for p in pairs}, {id(p.b) for p in pairs}
        groups_a: dict[Any, list[TensorInfo]] = {}
        groups_b: dict[Any, list[TensorInfo]] = {}
        for t in left_a:
            if id(t) not in taken_a:
                groups_a.setdefault(key_a(t), []).append(t)
        for t in left_b:
            if id(t) not in taken_b:
                groups_b.setdefault(key_b(t), []).append(t)
        for k, ga in groups_a.items():
            gb = groups_b.get(k, [])
            if len(ga) != len(gb) or not ga or (unique_only and len(ga) > 1):
                continue
            if all(x.shape == y.shape or permutation(x.shape, y.shape) for x, y in zip(ga, gb, strict=True)):
                pairs += [_pair(x, y, "shape and order") for x, y in zip(ga, gb, strict=True)]
                found = True
    return found


def _structural(left_a: list[TensorInfo], left_b: list[TensorInfo]) -> list[Pair]:
    """Pairs by parameter kind and shape (or layout-permuted shape), then shape alone.

    Unambiguous groups (one tensor on each side) go first; the layers they pair then decide among the
    rest (a bias follows its layer's kernel), repeated while that finds more; what is still ambiguous is
    paired in file order when both sides have as many.
    """

    def param_shape(t: TensorInfo) -> Any:
        return param_of(normalise(t)), t.shape

    def param_layout(t: TensorInfo) -> Any:
        return param_of(normalise(t)), tuple(sorted(t.shape))

    def shape(t: TensorInfo) -> Any:
        return t.shape

    keys = [(param_shape, param_shape), (param_layout, param_layout), (shape, shape)]
    pairs: list[Pair] = []
    while True:
        found = _rounds(left_a, left_b, pairs, keys[:2], unique_only=True)
        layers = _layer_map(pairs)

        def mapped(t: TensorInfo, layers: Mapping[str, str] = layers) -> Any:
            return layers.get(layer_of(normalise(t)), "\0unmapped"), param_layout(t)

        def own(t: TensorInfo) -> Any:
            return layer_of(normalise(t)), param_layout(t)

        found = _rounds(left_a, left_b, pairs, [(mapped, own)], unique_only=True) or found
        if not found:
            break
    _rounds(left_a, left_b, pairs, keys, unique_only=False)
    return pairs


def match(a: Checkpoint, b: Checkpoint, rules: Sequence[MapRule] = ()) -> list[Pair]:
    """Pairs of tensors of `a` and `b` that are the same tensor (see the module docstring for the rounds)."""
    pairs: list[Pair] = []

    def left(tensors: Sequence[TensorInfo], side: str, aliases: bool = True) -> list[TensorInfo]:
        taken = {id(getattr(p, side)) for p in pairs}
        return [t for t in tensors if id(t) not in taken and (aliases or t.alias_of is None)]

    def mapped(t: TensorInfo) -> str:
        name = normalise(t)
        for rule in rules:
            if rule.pattern.fullmatch(name):
                return rule.pattern.sub(rule.replacement, name)
        return "\0unmapped\0" + name

    pairs += _by_key(list(a.tensors), list(b.tensors), lambda t: t.name, "name")
    pairs += _by_key(left(a.tensors, "a"), left(b.tensors, "b"), normalise, "normalised")
    if rules:
        pairs += _by_key(left(a.tensors, "a"), left(b.tensors, "b"), mapped, "mapped", normalise)
    # optimizer slots are paired by name only: their naming differs wholly between formats and their
    # many same-shape slots (momentum, velocity) would be paired by a guess
    structural_a = [t for t in left(a.tensors, "a", aliases=False) if t.kind not in TRAINING_STATE]
    structural_b = [t for t in left(b.tensors, "b", aliases=False) if t.kind not in TRAINING_STATE]
    pairs += _structural(structural_a, structural_b)
    order = {id(t): i for i, t in enumerate(a.tensors)}
    return sorted(pairs, key=lambda p: order[id(p.a)])


# -- differences ------------------------------------------------------------------------------------------


class _Ties:
    """The tie groups of one checkpoint (name -> names tied with it) and where each tensor is stored."""

    def __init__(self, ckpt: Checkpoint) -> None:
        self.by_name = {t.name: t for t in ckpt.tensors}
        members: dict[str, set[str]] = {}
        for t in ckpt.tensors:
            if t.alias_of:
                members.setdefault(t.alias_of, {t.alias_of}).add(t.name)
        self.groups = {n: frozenset(g) for g in members.values() for n in g}

    def group(self, name: str) -> frozenset[str]:
        return self.groups.get(name, frozenset({name}))

    def stored_twice(self, t: TensorInfo) -> bool:
        """An alias whose bytes are a second copy (Gluon without deduplicate), not a shared storage."""
        target = self.by_name.get(t.alias_of) if t.alias_of else None
        return target is not None and (target.offset, target.file) != (t.offset, t.file)


def _tie_differences(ga: _Ties, gb: _Ties, pairs: Sequence[Pair]) -> list[Difference]:
    a_to_b = {p.a.name: p.b.name for p in pairs}
    b_to_a = {v: k for k, v in a_to_b.items()}
    out: list[Difference] = []
    for p in pairs:
        if not (p.a.alias_of or p.b.alias_of):
            continue
        mapped = frozenset(a_to_b[n] for n in ga.group(p.a.name) if n in a_to_b)
        there = frozenset(n for n in gb.group(p.b.name) if n in b_to_a)
        if mapped == there:
            continue
        if p.a.alias_of:
            how = "a copy stored twice" if ga.stored_twice(p.a) else "one tensor"
            msg = f"A ties it to {p.a.alias_of!r} ({how}); B stores it separately"
        else:
            how = "a copy stored twice" if gb.stored_twice(p.b) else "one tensor"
            msg = f"B ties it to {p.b.alias_of!r} ({how}); A stores it separately"
        out.append(_difference(DiffKind.TIED, p.a, p.b, msg, tied_a=p.a.alias_of, tied_b=p.b.alias_of))
    return out


def _unpaired(
    ties: _Ties, t: TensorInfo, side: str, partners: Mapping[str, str], quantization: str | None = None
) -> Difference:
    """A tensor only one file has: a name of a tie the other file holds (expected), else missing / extra (expected
    for a quantization's tensor, `quantization` saying what it is: it comes and goes with its weight's quantized
    dtype, itself a difference)."""
    kept = next((n for n in sorted(ties.group(t.name)) if n != t.name and n in partners), None)
    if kept is not None:
        other = partners[kept]
        if side == "a":
            msg = f"A ties it with {kept!r}; B has no such name and stores the tensor once as {other!r}"
            return _difference(DiffKind.TIED, t, None, msg, tied_a=kept, kept_b=other)
        twice = ties.stored_twice(t)
        copy = f", a duplicate copy of {t.nbytes:,} bytes" if twice else ""
        msg = f"B ties it with {kept!r}{copy}; A has no such name and stores the tensor once as {other!r}"
        return _difference(DiffKind.TIED, None, t, msg, tied_b=kept, kept_a=other, duplicate_bytes=t.nbytes
                           if twice else 0)  # fmt: skip
    state = t.kind in TRAINING_STATE  # optimizer slots and the like: not model weights, dropping them is routine
    note = f" ({t.kind.value} state, not model weights)" if state else ""
    if quantization:
        state, note = True, f" ({quantization})"
    if side == "a":
        msg = f"only in A: {_describe(t)}{note}"
        return _difference(DiffKind.MISSING, t, None, msg, expected=state, elements=t.n_elements)
    return _difference(DiffKind.EXTRA, None, t, f"only in B: {_describe(t)}{note}", expected=state,
                       elements=t.n_elements)  # fmt: skip


def _describe(t: TensorInfo) -> str:
    return f"{'x'.join(map(str, t.shape)) or 'scalar'} {t.dtype}, {t.nbytes:,} bytes"


def _difference(kind: DiffKind, a: TensorInfo | None, b: TensorInfo | None, message: str, *,
                expected: bool | None = None, **details: Any) -> Difference:  # fmt: skip
    layer = next((layer_of(normalise(t)) for t in (a, b) if t is not None and layer_of(normalise(t))), "")
    return Difference(kind, a.name if a else None, b.name if b else None, layer,
                      kind in EXPECTED_KINDS if expected is None else expected, message, details)  # fmt: skip


def _pair_differences(p: Pair) -> list[Difference]:
    a, b = p.a, p.b
    out = []
    if p.how == "shape and order" and a.name != b.name:
        out.append(_difference(DiffKind.RENAMED, a, b, "names differ: matched by kind, shape and order"))
    if p.perm is not None:
        msg = f"{'x'.join(map(str, a.shape))} -> {'x'.join(map(str, b.shape))}: the same tensor transposed {p.perm}"
        out.append(_difference(DiffKind.TRANSPOSED, a, b, msg, permutation=list(p.perm)))
    elif a.shape != b.shape:
        msg = f"shape {list(a.shape)} -> {list(b.shape)}"
        # the same values laid out by their quantization (bitsandbytes' 4-bit column, optimum-quanto's groups): its
        # dtype's change is the difference
        layout = (regrouped(a) or regrouped(b)) if a.n_elements == b.n_elements else ""
        if layout:
            msg += f": the same {a.n_elements:,} values, {layout}"
        out.append(_difference(DiffKind.SHAPE_CHANGED, a, b, msg, expected=bool(layout) or None,
                               shape_a=list(a.shape), shape_b=list(b.shape)))  # fmt: skip
    if a.dtype != b.dtype:
        saved = a.nbytes - b.nbytes
        widening = (a.dtype, b.dtype) in WIDENINGS
        change = f"{saved:,} bytes saved" if saved >= 0 else f"{-saved:,} bytes more"
        msg = f"{a.dtype} -> {b.dtype}: {change}" + ("" if widening else " (narrowing: values may be rounded)")
        out.append(_difference(DiffKind.DTYPE_CHANGED, a, b, msg, expected=widening, dtype_a=a.dtype,
                               dtype_b=b.dtype, bytes_saved=saved))  # fmt: skip
    return out


def _value_difference(p: Pair, v: ValueComparison) -> Difference | None:
    if v.skipped:
        return _difference(DiffKind.NOT_COMPARED, p.a, p.b, f"values not compared: {v.skipped}", reason=v.skipped)
    if v.dequantized:
        msg = (f"dequantized ({v.dequantized}): largest error {v.max_abs:.3g}, {v.max_rel:.3g} of the float weight's "
               "largest magnitude")  # fmt: skip
        return _difference(DiffKind.QUANTIZATION_ERROR, p.a, p.b, msg, max_abs=v.max_abs, max_rel=v.max_rel,
                           dequantized=v.dequantized)  # fmt: skip
    if v.within:
        return None
    msg = f"{v.n_differ:,} values differ: max abs {v.max_abs:.3g}, max rel {v.max_rel:.3g}"
    if p.how == "shape and order":
        msg += " (or the pairing by shape and order is wrong)"
    return _difference(DiffKind.VALUES_CHANGED, p.a, p.b, msg, n_differ=v.n_differ, max_abs=v.max_abs,
                       max_rel=v.max_rel, sha256_a=v.sha256_a, sha256_b=v.sha256_b)  # fmt: skip


def diff(
    a: Checkpoint,
    b: Checkpoint,
    pairs: Sequence[Pair],
    values: Sequence[ValueComparison] | None = None,
    tolerance: float = 0.0,
) -> Diff:
    """The differences between two checkpoints, given their matched pairs (and value comparisons, one per pair)."""
    differences: list[Difference] = []
    for i, p in enumerate(pairs):
        differences += _pair_differences(p)
        if values is not None:
            found = _value_difference(p, values[i])
            if found is not None:
                differences.append(found)
    ta, tb = _Ties(a), _Ties(b)
    differences += _tie_differences(ta, tb, pairs)
    a_to_b = {p.a.name: p.b.name for p in pairs}
    b_to_a = {p.b.name: p.a.name for p in pairs}
    paired_a, paired_b = {id(p.a) for p in pairs}, {id(p.b) for p in pairs}
    qa, qb = quantization_tensors(a.tensors), quantization_tensors(b.tensors)  # (scales and states of quantizations)
    differences += [_unpaired(ta, t, "a", a_to_b, qa.get(id(t))) for t in a.tensors if id(t) not in paired_a]
    differences += [_unpaired(tb, t, "b", b_to_a, qb.get(id(t))) for t in b.tensors if id(t) not in paired_b]
    return Diff(a, b, tuple(pairs), tuple(differences), None if values is None else tuple(values), tolerance)


def stored_bytes(ckpt: Checkpoint) -> int:
    """Tensor bytes the file stores: tied tensors once, duplicate copies again."""
    ties = _Ties(ckpt)
    return sum(t.nbytes for t in ckpt.tensors if t.alias_of is None or ties.stored_twice(t))


def totals(d: Diff) -> dict[str, Any]:
    """Tensors, parameters and bytes of each side, and differences by kind."""
    counts: dict[str, int] = {}
    for x in d.differences:
        counts[x.kind.value] = counts.get(x.kind.value, 0) + 1
    side = {
        name: {"tensors": len(c.tensors), "elements": sum(t.n_elements for t in c.unique()),
               "parameters": c.n_parameters, "tensor_bytes": stored_bytes(c), "file_bytes": c.file_size}
        for name, c in (("a", d.a), ("b", d.b))
    }  # fmt: skip
    return {**side, "pairs": len(d.pairs), "differences": counts}
