"""A file against a family (`inspector.families`): which family, its hyperparameters, the check row by row.

The family comes from config.json's `model_type`, else from the module names (every mandatory layer part
present, ranked by how many parts the file has). Hyperparameters come from the config, else from the
shapes the family `reads`; facts (biases, norm shifts, optional parts, a tied head) from the file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import compress
from math import prod

from inspector import regexes
from inspector.errors import SpecError
from inspector.families import (
    CONFIG_KEYS,
    COUNTS,
    FAMILIES_BY_MODEL_TYPE,
    FAMILY_BY_NAME,
    MTP_MODULE,
    Family,
    Part,
    derive_transformer,
    part_role,
)
from inspector.formulas import Block, Conv, Dense, Embedding, LayerSpec, Norm, Tensor, breakdown, counted, recipe, total
from inspector.modules import file_modules, module_spec, statistic_modules
from inspector.quantized import (
    COLUMN_DTYPES,
    QUANTIZATION_KIND,
    QUANTIZATION_ROW,
    WEIGHTS,
    declared_method,
    described,
    regrouped,
    side_tensors,
    stored_packed,
)
from inspector.records import Checkpoint, Expectation, LayerCheck, RoleMatch, TensorInfo, TensorKind
from inspector.recordtype import field, record
from inspector.roles import GENERIC_RULES, Role, shape_keys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PLACEHOLDER = regexes.compile(r"\{([" + "".join(COUNTS) + r"])\}")  # ({i}, {j}, {k}, {e}, {d})
DIM = regexes.compile(r"(\w+)(?:([+*])(\d+))?")


# -- hyperparameters ---------------------------------------------------------------------------------------------


def _config_value(config: Mapping[str, Any], key: str) -> Any:
    value: Any = config
    for part in key.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


# the config's true/false facts and its fractions (LFM2's feed-forward rule); the rest are sizes
FLAGS = frozenset(
    {"tied", "attention_bias", "o_bias", "mlp_bias", "conv_bias", "ssm_bias", "projectors_bias", "ff_auto", "qk_norm"}
)
FRACTIONS = frozenset({"ff_multiplier", "qk_factor", "v_factor", "ffn_factor"})
FIRST_LAYER = "layers.0."  # where a family reads a layer's sizes
# the config's lists of ints (layer indices, a size per layer) and of words, one a layer (`mlp_layer_types`)
LAYER_LISTS = frozenset({"mlp_only", "layer_heads", "compress_ratios"})
LAYER_KINDS = frozenset({"mlp_types", "block_types", "attn_types"})
# the sizes of which 0 is a value, not "unset" (only null or absent is): a layer offset (Jamba's attention and experts
# from layer 0), the dense layers before the MoE ones (none: DeepSeek's, GLM-4.5's, LFM2-MoE's `num_dense_layers`)
# and the experts (none: every Qwen-MoE layer dense, as `num_experts > 0` decides)
ZERO_VALUED = frozenset({"attn_offset", "expert_offset", "first_dense", "experts"})


def _usable(hyper: str, value: Any) -> bool:
    if hyper in FLAGS:
        return isinstance(value, bool)
    if hyper in FRACTIONS:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
    if hyper in LAYER_LISTS:  # (layer indices: Qwen-MoE's `mlp_only_layers`)
        return isinstance(value, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in value)
    if hyper in LAYER_KINDS:
        return isinstance(value, list) and all(isinstance(word, str) for word in value)
    if not isinstance(value, int) or isinstance(value, bool):
        return False
    return value > 0 or (value == 0 and hyper in ZERO_VALUED)


def from_config(family: Family, config: Mapping[str, Any]) -> dict[str, Any]:
    """Hyperparameters a transformers config.json states (the first usable key of each; null and odd values skipped);
    a vision-language family's language model's from its `text_config` (`Family.text_config`)."""
    text = config.get("text_config") if family.text_config else None
    if isinstance(text, Mapping):
        config = {**config, **text}
    out: dict[str, Any] = {}
    for hyper, keys in CONFIG_KEYS.items():
        value = next((config[k] for k in keys if _usable(hyper, config.get(k))), None)
        if value is not None:
            out[hyper] = value
    for key, hyper in family.config.items():
        value = _config_value(config, key)
        if _usable(hyper, value):
            out[hyper] = value
    if config.get("multi_query") is True and not config.get("new_decoder_architecture"):
        out["kv_heads"] = 1  # Falcon-7B style multi-query attention: one key/value head
    return out


def _dim(h: Mapping[str, Any], dim: str | int) -> int:
    if isinstance(dim, int):
        return dim
    m = DIM.fullmatch(dim)
    # (a flag is no size; 1 is one, though `1 in (True, False)`: one expert, one key/value head)
    if m is None or h.get(m.group(1)) is None or isinstance(h[m.group(1)], bool):
        raise SpecError(f"no value for {dim!r}")
    value = int(h[m.group(1)])
    if m.group(2) == "+":
        value += int(m.group(3))
    elif m.group(2) == "*":
        value *= int(m.group(3))
    return value


# -- the file side -----------------------------------------------------------------------------------------------

SEGMENT_INDEX = regexes.compile(r"(?<![^.])\d+(?=\.|$)")


def _shape_key(path: str) -> str:
    """A module path with its layer indices as '#': 'model.layers.3.mlp' -> 'model.layers.#.mlp'."""
    return SEGMENT_INDEX.sub("#", path)


def canonical_name(t: TensorInfo) -> str:
    """The name a family table knows a tensor by: the Hugging Face module and parameter a loader states for it
    (GGUF's `blk.3.attn_q.weight` is `model.layers.3.self_attn.q_proj.weight`), else its own dotted name."""
    if t.layer and t.param:
        return f"{t.layer}.{t.param}"
    return t.name


@record(frozen=True)
class FileModules:
    """A file's parameter tensors, indexed once: by name, and (`modules`) by module path (name less its last part)."""

    lasts: frozenset[str]  # _shape_key of the last part of every module path and tensor name
    # every parameter tensor's name (the name a family table knows it by, `canonical_name`) and the tensor, in order
    named: tuple[list[str], list[TensorInfo]]
    # `tensors`, `keys` and `modules`, made when first asked (a file no family's parts end in asks none)
    made: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def of(cls, ckpt: Checkpoint) -> FileModules:
        """The file's modules (the last checkpoint's kept: an analysis looks at its file more than once, `detect` for
        its expectation and again for its roles)."""
        if LAST_FILE and LAST_FILE[0][0] is ckpt:
            return LAST_FILE[0][1]
        made = cls._of(ckpt)
        LAST_FILE[:] = [(ckpt, made)]
        return made

    @classmethod
    def _of(cls, ckpt: Checkpoint) -> FileModules:
        parameter = TensorKind.PARAMETER  # (read once: an enum member read is a descriptor call)
        params = [t for t in ckpt.tensors if t.kind is parameter]
        names = [t.name if t.layer is None or t.param is None else canonical_name(t) for t in params]
        return cls(frozenset(_lasts(names)), (names, params))

    @property
    def tensors(self) -> Mapping[str, TensorInfo]:
        """The parameter tensors by the name a family table knows each by (`canonical_name`)."""
        tensors = self.made.get("tensors")
        if tensors is None:
            tensors = self.made["tensors"] = dict(zip(*self.named, strict=True))
        return tensors

    @property
    def modules(self) -> Mapping[str, tuple[TensorInfo, ...]]:
        """The tensors by module path, in file order (a file no family's parts end in never asks)."""
        modules = self.made.get("modules")
        if modules is None:
            grouped: dict[str, list[TensorInfo]] = {}
            for name, t in zip(*self.named, strict=True):
                grouped.setdefault(name.rpartition(".")[0], []).append(t)
            modules = self.made["modules"] = dict(zip(grouped, map(tuple, grouped.values()), strict=True))
        return modules  # type: ignore[no-any-return]

    @property
    def keys(self) -> frozenset[str]:
        """_shape_key of every module path and tensor name."""
        keys = self.made.get("keys")
        if keys is None:
            keys = self.made["keys"] = _keys(self.modules, self.tensors)
        return keys  # type: ignore[no-any-return]

    def has_key(self, key: str) -> bool:
        """Whether a module path or tensor name has this shape key. A path's key ends with its last part's key, so
        a key whose last part ends no path is answered without keying every path (a file of no known family)."""
        return key.rpartition(".")[2] in self.lasts and key in self.keys


ALL_DIGITS = bytes.maketrans(b"123456789", b"000000000")


def _lasts(names: Sequence[str]) -> set[str]:
    """The last part of every name and of every module path (the name less its last part; '' for a name without a
    dot), keyed as `_shape_key` keys them (a last part is one segment: keyed only where it is digits, to '#').

    Names of one shape (their ASCII digits all one) have their dots, so their parts, at the same places, and a part
    without digits alike in each; one name of a shape gives its last two parts but where a part holds digits and is
    not all digits (`fc1`, `fc2`: not keyed, each its own), which every name of the shape gives (100,000 names: a few
    shapes, a name split a shape, not a name split each)."""
    keys = shape_keys(names, ALL_DIGITS)
    lasts: set[str] = set()
    mixed: set[bytes] = set()  # shapes whose last two parts hold a part of digits and more
    for key, name in dict(zip(keys, names, strict=True)).items():
        parts = name.rsplit(".", 2)
        tail = parts[-2:] if len(parts) > 1 else ["", name]
        if any(not part.isdecimal() and any(map(part.__contains__, "0123456789")) for part in tail):
            mixed.add(key)
        lasts.update(tail)
    for name in compress(names, map(mixed.__contains__, keys)) if mixed else ():
        parts = name.rsplit(".", 2)
        lasts.update(parts[-2:] if len(parts) > 1 else ["", name])
    # (a last part is keyed only if it starts with a digit: `_shape_key` keys whole segments of digits)
    return {_shape_key(x) if x[:1].isdecimal() else x for x in lasts}


LAST_FILE: list[tuple[Checkpoint, FileModules]] = []  # (`FileModules.of`: the last checkpoint and its modules)


def _keys(modules: Iterable[str], tensors: Iterable[str]) -> frozenset[str]:
    """_shape_key of every module path and tensor name. A tensor's key is its module's and its last part's, joined
    (parts are keyed one by one): each module path and each distinct last part is keyed once (a name holding a
    newline, which a key's end also matches, is keyed whole)."""
    module_keys = {p: _shape_key(p) for p in modules}
    leaf_keys: dict[str, str] = {}
    keys = set(module_keys.values())
    for name in tensors:
        module, dot, leaf = name.rpartition(".")
        if not dot or "\n" in name:
            keys.add(_shape_key(name))
            continue
        leaf_key = leaf_keys.get(leaf)
        if leaf_key is None:
            leaf_key = leaf_keys[leaf] = _shape_key(leaf)
        keys.add(module_keys[module] + "." + leaf_key)
    return frozenset(keys)


@record(frozen=True)
class FileView:
    """The file seen from a family prefix ('model.', 'bert.', ''), under the prefix of what holds the model where the
    file nests it (`outer`: a training checkpoint's section and the module wrapping the model, 'state_dict.model.')."""

    file: FileModules
    base: str  # `outer` and the family's prefix
    outer: str = ""
    counts: dict[str, int] = field(default_factory=dict, compare=False)  # layer counts by prefix, computed once

    def full(self, path: str) -> str:
        """A part path made absolute: the family prefix before it, or only `outer` when it starts with '/'."""
        return self.outer + path[1:] if path.startswith("/") else self.base + path

    def module(self, full: str) -> tuple[TensorInfo, ...]:
        """The tensors of a module, or the bare tensor of that name (a class token)."""
        bare = self.file.tensors.get(full)
        return (bare,) if bare is not None else self.file.modules.get(full, ())

    def has_any(self, path_template: str) -> bool:
        """Whether the file has the module for some value of the template's placeholders."""
        return self.file.has_key(_shape_key(PLACEHOLDER.sub("0", self.full(path_template))))

    def has_prefix(self, prefix: str) -> bool:
        full = self.full(prefix)
        return any(m.startswith(full) for m in self.file.modules)

    def count(self, path_template: str, placeholder: str) -> int:
        """1 + the largest index the file has for `placeholder` in the template's prefix (0: none)."""
        head = PLACEHOLDER.sub("0", self.full(path_template).partition("{" + placeholder + "}")[0])
        if head not in self.counts:
            n = len(head)  # (each module's index after the head, its distinct ones compared: few of 100,000 modules)
            indices = {m[n:].partition(".")[0] for m in self.file.modules if m.startswith(head)}
            self.counts[head] = max([int(index) for index in indices if index.isdigit()], default=-1) + 1
        return self.counts[head]


def _score(view: FileView, family: Family) -> tuple[int, int]:
    """How many of the family's parts under its prefix the file has, then how many of those outside it (heads:
    between two layouts of one model type that differ only in a head's name)."""
    inside = sum(1 for p in family.parts if not p.path.startswith("/") and view.has_any(p.path))
    outside = sum(1 for p in family.parts if p.path.startswith("/") and view.has_any(p.path))
    return inside, outside


def _in_stack(part: Part, family: Family) -> str | None:
    return next((s for s in family.stacks if part.path.startswith(s)), None)


def detect(ckpt: Checkpoint, families: Sequence[Family] | None = None) -> list[tuple[Family, FileView, str]]:
    """The families a file may be, best first: its config's model_type, else every family (or those given) whose
    layer parts are all there, ranked by how many of its parts the file has; each with the prefix it uses."""
    config = ckpt.config or {}
    model_type = config.get("model_type")
    stated = FAMILIES_BY_MODEL_TYPE.get(model_type, ()) if model_type is not None else ()
    if config.get("is_encoder_decoder") is False:  # a decoder-only class of an encoder-decoder family
        stated = tuple(f for f in stated if not _encoder_decoder(f))  # (BartForCausalLM): not what it describes
    source = "config" if stated else "inferred"
    if stated:
        candidates = list(stated)
    elif families is not None:
        candidates = list(families)
    else:
        from inspector.families import FAMILIES  # (every family: all made, on first use)

        candidates = list(FAMILIES)
    file = FileModules.of(ckpt)
    ranked: list[tuple[tuple[int, int], Family, FileView]] = []
    layers: list[tuple[Family, list[Part]]] = []  # each candidate and its mandatory layer parts
    for family in candidates:
        if source == "inferred" and family.stated_only:
            continue
        stacks = family.stacks
        layer_parts = [
            p
            for p in family.parts
            if not p.when and "{" in p.path and PLACEHOLDER.search(p.path) and not (stacks and _in_stack(p, family))
        ]
        if source == "inferred" and not _ends_there(file, layer_parts, family.bases):
            continue  # (the test below fails from every base: no view of the file is made)
        layers.append((family, layer_parts))
    # (from the file's root; else under what nests the model, if anything: the names' common prefix, not read where no
    # family is left to view)
    for outer in ("", *_outer_prefixes(file)) if layers else ():
        for family, layer_parts in layers:
            for base in family.bases:
                view = FileView(file, outer + base, outer)
                if source == "inferred" and (not layer_parts or not all(view.has_any(p.path) for p in layer_parts)):
                    continue  # without a config every mandatory layer part must be there
                if (
                    source == "inferred"
                    and family.uniform
                    and not all(_in_every_layer(view, p.path) for p in layer_parts)
                ):
                    continue
                score = _score(view, family)
                if score[0]:
                    ranked.append((score, family, view))
        if ranked:
            break
    ranked.sort(key=lambda x: (-x[0][0], -x[0][1]))
    return [(family, view, source) for _, family, view in ranked]


def _outer_prefixes(file: FileModules) -> Iterator[str]:
    """The prefixes every parameter's name shares, shortest first, each ending at a dot ('state_dict.', then
    'state_dict.model.'): where a training checkpoint's section and the module wrapping the model put it."""
    names = file.named[0]
    if not names:
        return
    common = os.path.commonprefix([min(names), max(names)])
    end = common.find(".")
    while end >= 0:
        yield common[: end + 1]
        end = common.find(".", end + 1)


def _in_every_layer(view: FileView, template: str) -> bool:
    """Whether every layer the file has for the template's `{i}` holds its module."""
    if "{i}" not in template:
        return view.has_any(template)
    layers = view.count(template, "i")
    return len(_layers_holding(view, template, layers)) == layers


def _layers_holding(view: FileView, template: str, layers: int) -> list[int]:
    """The layers `{i}` of `range(layers)` whose module of the template the file holds."""
    return [i for i in range(layers) if view.module(view.full(template.replace("{i}", str(i))))]


def _ends_there(file: FileModules, parts: Sequence[Part], bases: Sequence[str]) -> bool:
    """False when, from each of these bases, some part has no module: the file has no path ending as the part's
    path ends (its last part keyed as `has_any` keys it). From a base ending in '.' (every family's) a part's path
    ends as the part's own does, so a family of no file (most, for any file) is ruled out once, not base by base."""
    if not all(base == "" or base.endswith(".") for base in bases):
        return True  # (no shortcut: each base is viewed)
    lasts = file.lasts
    return all(_shape_key(PLACEHOLDER.sub("0", p.path.rpartition(".")[2].lstrip("/"))) in lasts for p in parts)


def _stored_in_out(t: TensorInfo) -> bool:
    """Whether a weight an exporter named after its module (`layer`) is stored as the layer's (in, out), the transpose
    of torch's Linear weight: what an ONNX MatMul (or a Gemm not told to transpose it) reads directly."""
    return (
        t.layer is not None
        and t.use is not None
        and t.use[0] in ("MatMul", "Gemm")
        and not t.use[3]
        and len(t.shape) == 2
    )


def _encoder_decoder(family: Family) -> bool:
    """Whether the family has decoder layers beside its encoder's (parts over `{j}`)."""
    return any("{j}" in p.path for p in family.parts)


WEIGHT_ENDINGS = (*("." + w for w in WEIGHTS), ".kernel")  # a module's weight, its size read from its shape (a packed
# one, `weight_packed`, once `quantized.unpacked` made it its values)


def hyperparameters(family: Family, view: FileView | None, config: Mapping[str, Any] | None) -> dict[str, Any]:
    """Defaults, then the file's shapes, then the config; the usual relations fill the rest."""
    h: dict[str, Any] = dict(family.defaults)
    quantized = declared_method(config) is not None  # (sizes are the config's, not a quantized weight's elements)
    if view is not None:
        for hyper, (path, axis) in family.reads.items():
            full = view.full(path)
            if not view.module(full) and path.startswith(FIRST_LAYER):  # (a part not every layer holds: a dense
                # first layer has no router) read in the first layer that holds it
                template = "layers.{i}." + path.removeprefix(FIRST_LAYER)
                full = next((f for f in map(view.full, _expand(template, {"layers": view.count(template, "i")}))
                             if view.module(f)), full)  # fmt: skip
            weight = next(
                (t for t in view.module(full) if (name := canonical_name(t)) == full or name.endswith(WEIGHT_ENDINGS)),
                None,
            )
            # (a packed column says none of a layer's sizes; optimum-quanto's values may be a layer's groups: where a
            # config has the sizes, they are the config's)
            shapeless = weight is not None and (weight.dtype in COLUMN_DTYPES or bool(config and regrouped(weight)))
            if (
                weight is not None
                and len(weight.shape) > axis
                and not shapeless
                and not (quantized and stored_packed((weight,)))
            ):
                if _stored_in_out(weight):
                    axis = 1 - axis
                name, _, offset = hyper.partition("+")  # 'positions+2': the table has 2 rows more
                h[name] = weight.shape[axis] - int(offset or 0)
        for placeholder, hyper in COUNTS.items():
            templates = [p.path for p in family.parts if "{" + placeholder + "}" in p.path]
            found = max((view.count(t, placeholder) for t in templates), default=0)
            if found:
                h[hyper] = found
        for part in family.parts:  # the layers holding a part not all have (`Part.over`): a fact of the file
            if part.over and part.over not in h:
                h[part.over] = _layers_holding(view, part.path, int(h.get("layers") or 0))
        if family.per_layer:
            h["per_layer"] = {
                hyper: _per_layer(view, *family.reads[hyper], int(h.get("layers") or 0)) for hyper in family.per_layer
            }
    h["from_shapes"] = not config
    if config:
        stated = from_config(family, config)
        h.update(stated)
        # the optional parts whose presence the config states (`use_qk_norm`): a file without them lacks them
        h["stated_parts"] = frozenset(stated) & {p.when for p in family.parts if p.when}
        if view is not None:
            for placeholder, hyper in COUNTS.items():
                stack = [p.path for p in family.parts if "{" + placeholder + "}" in p.path]
                if stack and placeholder != "e" and not any(view.has_any(p) for p in stack):
                    h[hyper] = 0  # the stack is not in the file (an encoder-only class): a fact of the file
    (family.derive or derive_transformer)(h)
    return h


def _per_layer(view: FileView, path: str, axis: int, layers: int) -> list[int | None]:
    """A size read in every layer (`path` in layer 0, a weight's `axis`); None in a layer without the module."""
    template = "layers.{i}." + path.removeprefix(FIRST_LAYER)
    sizes: list[int | None] = []
    for i in range(layers):
        weight = next((t for t in view.module(view.full(template.replace("{i}", str(i)))) if len(t.shape) > axis), None)
        sizes.append(None if weight is None else weight.shape[axis])
    return sizes


def _at_layer(h: Mapping[str, Any], template: str, path: str) -> Mapping[str, Any]:
    """The hyperparameters of the layer `path` (an expansion of `template`) is in: its own sizes where the family reads
    some per layer (`h["per_layer"]`); `h` itself for a module of no layer."""
    per_layer = h.get("per_layer")
    head, found, _ = template.partition("{i}")
    if not per_layer or not found:
        return h
    i = int(path[len(head) :].partition(".")[0])
    own = {k: v[i] for k, v in per_layer.items() if i < len(v) and v[i] is not None}
    return {**h, **own} if own else h


def _grouped(tensors: Sequence[TensorInfo]) -> str:
    """Why a module's shape may not be its layer's, in words: optimum-quanto's values in rows of a group (a layer of
    more than 128 inputs); '' for any other module."""
    grouped = next((words for t in tensors if t.dtype not in COLUMN_DTYPES and (words := regrouped(t))), "")
    return f": its values perhaps {grouped}, the layer's shape not in the file" if grouped else ""


# -- the expectation ---------------------------------------------------------------------------------------------


def _expand(path: str, h: Mapping[str, Any], over: str | None = None) -> list[str]:
    """The part's module paths: `{i}` over every layer (or the layers `h[over]` lists), `{j}`, `{k}`, `{e}` too."""
    paths = [path]
    for placeholder, hyper in COUNTS.items():
        token = "{" + placeholder + "}"
        if token in path:  # (in every path made of it: a placeholder is replaced by digits)
            indices = h.get(over) or () if over and placeholder == "i" else range(int(h.get(hyper) or 0))
            paths = [p.replace(token, str(i)) for p in paths for i in indices]
    return paths


def _facts(part: Part, h: Mapping[str, Any], tensors: Sequence[TensorInfo] | None) -> tuple[bool, bool]:
    """Whether the part has a bias (a norm: a shift) and a scale: as the file's module holds them, else as `h` says."""
    if tensors:
        if len(tensors) == 1:  # (a module of one tensor: its leaf, no set made)
            leaf = tensors[0].name.rpartition(".")[2]
            return leaf in ("bias", "beta"), leaf in ("weight", "gamma", "scale")
        leaves = {t.name.rpartition(".")[2] for t in tensors}
        return bool(leaves & {"bias", "beta"}), bool(leaves & {"weight", "gamma", "scale"})
    return (bool(h.get(part.bias)) if part.bias else part.kind == "norm"), True


def _spec(part: Part, h: Mapping[str, Any], tensors: Sequence[TensorInfo] | None, name: str) -> LayerSpec:
    """The part's spec at the hyperparameters, with the file's facts (bias, scale, shift) where it has the module."""
    dims = [_dim(h, d) for d in part.dims]
    bias, scale = _facts(part, h, tensors)
    if part.kind == "linear":
        return Dense(dims[0], dims[1], bias, name=name)
    if part.kind == "embedding":
        return Embedding(dims[0], dims[1], name=name)
    if part.kind == "norm":
        return Norm(dims[0], scale, bias, "LayerNorm" if bias else "RMSNorm", name=name)
    if part.kind == "conv":
        return Conv(dims[1], dims[0], tuple(dims[2:]), bias, name=name)
    return Tensor(tuple(dims), "Tensor", name=name)


@record(frozen=True)
class ExpectedModule:
    path: str  # full module path in the file
    row: str  # the report row (block) it belongs to
    spec: LayerSpec | None  # None: tied to `tied_to`, counted once there
    role: str
    tied_to: str | None = None
    template: str = ""  # the family part's path (one template for every repetition of a layer)


def _present(part: Part, h: Mapping[str, Any], view: FileView | None) -> bool:
    """Whether an optional part is expected: as the config states it (`h["stated_parts"]`), else where the file has
    it, or in a formula where its hyperparameter is true."""
    when = part.when or ""
    if when in h.get("stated_parts", ()) or view is None:
        return bool(h.get(when))
    return view.has_any(part.path)


def expected_modules(family: Family, h: Mapping[str, Any], view: FileView | None) -> list[ExpectedModule]:
    """Every module the family has at `h`; with a file, its optional parts and facts come from the file.

    A part's repetitions (`{i}` over 100,000 layers) share what does not depend on the index: its sizes (but where
    `h` has sizes per layer), its row's depth, and its spec for each set of file facts (bias, scale), made again
    under each module's name from the first one's values (`formulas.recipe`)."""
    out: list[ExpectedModule] = []
    append = out.append
    base = view.base if view is not None else family.bases[0]
    if view is not None:
        bare_get, modules_get = view.file.tensors.get, view.file.modules.get
    per_layer = h.get("per_layer")
    for part in family.parts:
        stack = _in_stack(part, family)
        if view is not None and stack is not None and not view.has_prefix(stack):
            continue  # a decoder (second tower) the file does not have at all
        if part.when is not None and not _present(part, h, view):
            continue
        template = part.path.removeprefix("/")
        prefix = (view.outer if view is not None else "") if part.path.startswith("/") else base
        role = part_role(part)
        # the row a module is reported in: its path up to the first layer index ('model.layers.3'), or itself
        m = PLACEHOLDER.search(prefix + template)
        depth = (prefix + template)[: m.start()].count(".") + 1 if m else 0
        layered = bool(per_layer) and "{i}" in template  # (sizes that differ layer by layer: `_at_layer` each)
        made: dict[tuple[bool, bool], tuple[type[LayerSpec], tuple[Any, ...], tuple[Any, ...]]] = {}
        for path in _expand(template, h, part.over):
            full = prefix + path
            if view is None:
                tensors = None
            else:  # (view.module(full))
                found = bare_get(full)
                tensors = (found,) if found is not None else modules_get(full, ())
            if part.tied is not None:
                if view is None:
                    tied = bool(h.get("tied"))
                else:  # its matrix not stored (absent, or only an alias): tied, unless a config says it is not
                    stored = any(t.alias_of is None and len(t.shape) > 1 for t in tensors or ())
                    tied = not stored and (h.get("from_shapes") or h.get("tied") is not False)
                bias = [t for t in tensors or () if t.alias_of is None and len(t.shape) == 1]
                if tied and bias:  # a tied head's own bias (GPT-J's lm_head): the weight counted once, the bias here
                    spec = Tensor(bias[0].shape, "Bias", name=full)
                    append(ExpectedModule(full, full, spec, role, base + part.tied, part.path))
                    continue
                if tied:
                    append(ExpectedModule(full, full, None, role, base + part.tied))
                    continue
            # (outside the prefix: a row of its own, but an MTP layer's)
            row = ".".join(full.split(".")[:depth]) if depth else full
            if layered:
                sized = _spec(part, _at_layer(h, template, path), tensors, full)
            else:
                facts = _facts(part, h, tensors)
                known = made.get(facts)
                if known is None:
                    sized = _spec(part, h, tensors, full)
                    made[facts] = recipe(sized)
                else:
                    cls, before, after = known
                    sized = cls(*before, full, *after)  # type: ignore[call-arg]  # (every kind of spec has a name)
            append(ExpectedModule(full, row, sized, role, template=part.path))
    return out


HYPER_SHOWN = (
    *("model_type", "vocab", "d_model", "layers", "decoder_layers", "heads", "kv_heads", "head_dim"),
    *("q_dim", "kv_dim", "feedforward", "positions", "experts", "expert_ff", "tied"),
)


def _shown(h: Mapping[str, Any]) -> dict[str, Any]:
    return {k: h[k] for k in HYPER_SHOWN if h.get(k) is not None}


def _describe(spec: LayerSpec) -> str:
    return f"{spec.kind} {total(spec):,}"


@record
class _Row:
    """One row of the check: a block ('model.layers.3') or a module, and what differs in it."""

    expected: int = 0
    found: int = 0
    kinds: set[str] = field(default_factory=set)
    diffs: list[str] = field(default_factory=list)
    ties: list[str] = field(default_factory=list)
    missing: int = 0
    head: str = ""  # a row outside the model, counted from its own shapes: why (HEAD_NOTE, an export's words)
    extra: bool = False  # holds modules the formula does not have
    resized: bool = False  # holds a module with a tensor of a size the formula does not give it
    packed: int = 0  # of its differences, those of modules a declared quantization packs in a way not read here
    about: str = ""  # what the row is, where the formula's part alone does not say (the hub's MTP module)

    def layer_check(self, name: str) -> LayerCheck:
        kind = next(iter(self.kinds)) if len(self.kinds) == 1 else "Block"
        if self.head:
            return LayerCheck(name, kind, self.expected, self.found, "ok", self.head)
        if self.diffs:
            if self.found == 0 and self.missing:
                status = "missing"
            else:
                status = "unexpected" if self.expected == 0 else "mismatch"
            shown = self.diffs[:4] + ([f"and {len(self.diffs) - 4} more"] if len(self.diffs) > 4 else [])
            return LayerCheck(name, kind, self.expected, self.found, status, "; ".join(shown))
        if self.ties and self.expected == 0:
            return LayerCheck(name, "tied", 0, 0, "tied", "; ".join(self.ties))
        said = [*self.ties, self.about] if self.about else self.ties
        return LayerCheck(name, kind, self.expected, self.found, "ok", "; ".join(said))


HEAD_NOTE = "a task head outside the model: counted from its own shapes"
MTP_ROW = (
    "the multi-token-prediction module the hub's checkpoints keep beside the model's layers (num_nextn_predict_layers, "
    "mtp_num_hidden_layers)"
)
# Formats an exporter writes from a model, rewriting its tensors (format -> what the exporters do, and the note on
# a tensor no part names). The file holds what the exporter wrote: a module of the formula the file lacks, or a
# tensor under a name no part has, is the exporter's doing, not a fault; a module the file holds under its own
# name is still checked for size.
EXPORTS: dict[str, tuple[str, str]] = {
    "onnx": (
        "an ONNX export: exporters fold constants (BatchNorm into convolutions, rotary tables, masks), write "
        "transposed weights as new initializers, merge initializers of equal value, keep one name of a tied "
        "weight and drop weights the graph does not use, so modules the file lacks or does not name are the "
        "exporter's doing; the sizes of the modules it names are checked",
        "an initializer the exporter made or renamed (a folded, transposed or merged weight, a constant): counted "
        "from its own shape",
    ),
}


def check(
    ckpt: Checkpoint, roles: Sequence[RoleMatch], family: Family, view: FileView, source: str, h: Mapping[str, Any]
) -> Expectation:
    """Row by row (block or module): the family's formula at `h` against the file's parameter tensors."""
    rows: dict[str, _Row] = {}
    wanted = expected_modules(family, h, view)
    # a bare tensor a part names is its own, not also its parent module's (Laguna's router in memory holds its score
    # correction beside its weight: `mlp.gate.e_score_correction_bias`)
    bare = {e.path for e in wanted if e.path in view.file.tensors}
    if bare:
        expected = [
            (e, tuple(t for t in view.module(e.path) if e.path in bare or canonical_name(t) not in bare))
            for e in wanted
        ]
    else:  # (no part names a bare tensor: each module's tensors as `view.module` gives them, looked up inline)
        bare_get, modules_get = view.file.tensors.get, view.file.modules.get
        expected = [(e, (t,) if (t := bare_get(e.path)) is not None else modules_get(e.path, ())) for e in wanted]
    # (`canonical_name` of each, inline: no call per tensor)
    assigned = {f"{t.layer}.{t.param}" if t.layer and t.param else t.name for _, tensors in expected for t in tensors}
    stored = _stored_once(view, expected, assigned)
    plain = stored is _unaliased  # (no tie turned round: a module of one tensor is counted without a call)
    answers = iter(counted([e.spec for e in wanted if e.spec is not None]))  # (each spec's count and kind)
    outcomes: dict[str, list[tuple[str, str]]] = {}  # part template -> (row, "ok" / "absent" / "size") per repetition
    side = side_tensors(ckpt.tensors)  # a quantization's tensors beside its weights: a row of their own (below)
    beside = set(map(id, side))
    method = declared_method(ckpt.config) if source == "config" else None  # (a quantization the config declares)
    for e, tensors in expected:
        if beside and tensors:
            tensors = tuple(t for t in tensors if id(t) not in beside)
        row = rows.get(e.row)
        if row is None:
            row = rows[e.row] = _Row()
        if plain and len(tensors) == 1:
            t = tensors[0]
            found = prod(t.shape) if t.alias_of is None else 0
        else:
            found = sum(t.n_elements for t in tensors if stored(t))
        row.found += found
        if e.spec is None:
            row.ties.append(f"{e.path!r} tied to {e.tied_to!r}: stored once, counted once")
            row.kinds.add("tied")
            continue
        if e.tied_to is not None:
            row.ties.append(
                f"{e.path!r} weight tied to {e.tied_to!r}: stored once, counted once; its bias counted here"
            )
        want, kind = next(answers)
        row.expected += want
        row.kinds.add(kind if e.row == e.path else "Block")
        outcome = "absent" if not tensors else "size" if found != want else "ok"
        outcomes.setdefault(e.template, []).append((e.row, outcome))
        if not tensors:
            row.missing += 1
            row.diffs.append(f"{e.path} ({_describe(e.spec)}) is not in the file")
        elif found != want:  # resized, unless each tensor is one of the module's (an export renamed the others)
            sizes = set(breakdown(e.spec).values())
            row.resized |= not all(t.n_elements in sizes for t in tensors if stored(t))
            shapes = ", ".join(f"{canonical_name(t).rpartition('.')[2]} {tuple(t.shape)}" for t in tensors)
            packed = method is not None and found < want and stored_packed(tensors)  # (packing leaves fewer elements)
            how = f": packed by {method}, its values are not counted from these shapes" if packed else _grouped(tensors)
            row.packed += packed
            row.diffs.append(
                f"{e.path}: the formula gives {_describe(e.spec)}, the file holds {found:,} ({shapes}){how}"
            )
    leftovers: dict[str, list[TensorInfo]] = {}
    # (every tensor assigned, most files: told by one set difference, no pass)
    for name, t in view.file.tensors.items() if view.file.tensors.keys() - assigned else ():
        if name not in assigned and id(t) not in beside:
            leftovers.setdefault(name.rpartition(".")[0], []).append(t)
    if leftovers:  # what kind of layer each one is, for the sentence (heads, modules no part names)
        statistics = statistic_modules(ckpt, roles, ckpt.framework)
        modules = file_modules(ckpt, roles)
    for path, left in leftovers.items():
        found = sum(t.n_elements for t in left if stored(t))
        module = modules.get(path)
        kind = module_spec(module, ckpt.framework, path in statistics).kind if module is not None else "Tensor"
        if not any(map(stored, left)):  # only names of tensors stored elsewhere (torch.save keeps tied names)
            row = rows.setdefault(path, _Row())
            row.ties.append(f"{path!r} shares its tensors with modules counted elsewhere: stored once, counted once")
            row.kinds.add("tied")
        elif _inside(path, view.base, family):  # in the model, but no part names it: a real difference
            row = rows.setdefault(_row_for(path, rows), _Row())
            row.diffs.append(f"{path} ({kind}, {found:,}) is in the file but not in the {family.name} formula")
            row.extra = True
        else:
            row = rows.setdefault(path, _Row(head=EXPORTS[ckpt.format][1] if ckpt.format in EXPORTS else HEAD_NOTE))
            row.expected += found
        row.found += found
        row.kinds.add(kind)
    if side:
        row = rows.setdefault(QUANTIZATION_ROW, _Row(head=described(side)))
        row.expected += (found := sum(t.n_elements for t in side if stored(t)))
        row.found += found
        row.kinds.add(QUANTIZATION_KIND)
    notes = _notes(family, h, source)
    mtp_parts = {p.path for p in family.parts if p.when == MTP_MODULE}
    mtp = list(dict.fromkeys(e.row for e, _ in expected if e.template in mtp_parts))
    if mtp:  # (the hub's checkpoints hold it, transformers' model has none: what its num_parameters() leaves out)
        for name in mtp:
            rows[name].about = MTP_ROW
        held = sum(rows[name].found for name in mtp)  # (and the quantization's tensors of those layers: dropped too)
        held += sum(t.n_elements for t in side if stored(t) and t.name.startswith(tuple(name + "." for name in mtp)))
        notes += (f"{', '.join(mtp)}: {MTP_ROW} ({held:,} parameters, counted here); transformers drops it on load, "
                  f"so its num_parameters() prints {ckpt.n_parameters - held:,}",)  # fmt: skip
    checks = tuple(row.layer_check(name) for name, row in rows.items())
    if ckpt.format in EXPORTS:  # what the exporter left out or renamed explains itself; a size does not
        notes += (EXPORTS[ckpt.format][0],)
        anomalies = tuple(c.layer for c in checks if rows[c.layer].resized)
    elif source == "inferred":
        anomalies = _anomalies(outcomes, rows)
    else:  # a config or the user's words state the architecture: every difference is one from what they state, but
        # for a module a quantization the config declares stores packed in a way not read here (`PACKINGS` has not it)
        anomalies = tuple(
            c.layer
            for c in checks
            if c.status not in ("ok", "tied") and len(rows[c.layer].diffs) > rows[c.layer].packed
        )
        if any(row.packed for row in rows.values()):
            notes += (f"quantized by {method}: its packed weights are not read as values here, so their modules' "
                      "sizes are not checked",)  # fmt: skip
    exp = Expectation(
        source, family.name, _shown(h), sum(c.expected for c in checks), ckpt.n_parameters, checks, notes, anomalies
    )
    LAST_CHECK[:] = [(exp, view, wanted)]
    return exp


# The last check's expectation, file view and modules: `refine_roles` after `expect` looks at the same family in the
# same view at the same sizes, so at the same modules (100,000 of them, not made again)
LAST_CHECK: list[tuple[Expectation, FileView, list[ExpectedModule]]] = []


def _stored_once(
    view: FileView, expected: Sequence[tuple[ExpectedModule, Sequence[TensorInfo]]], assigned: set[str]
) -> Callable[[TensorInfo], bool]:
    """Whether a tensor is the one stored copy of its data, as the family counts it.

    A tie is symmetric, but a file names one side first (`alias_of` points back at it): torch.save of a
    transformers 5 model can list its head before the embedding it shares. Where the model's own module (one the
    family names) is the alias and the first name lies outside every module the family names (a task head), the
    model's module holds the stored copy and the head the tied name, as the family's formula counts them.
    """
    promoted, demoted = set(), set()
    aliases = [t for _, tensors in expected for t in tensors if t.alias_of is not None]
    for t in aliases:
        target = view.file.tensors.get(t.alias_of)  # type: ignore[arg-type]
        if target is not None and canonical_name(target) not in assigned:
            promoted.add(t.name)
            demoted.add(target.name)
    if not promoted:
        return _unaliased
    return lambda t: t.name in promoted or (t.alias_of is None and t.name not in demoted)


def _unaliased(t: TensorInfo) -> bool:
    """A tensor stored as itself (not an alias of another): the one stored copy, where no tie is turned round."""
    return t.alias_of is None


def _anomalies(outcomes: Mapping[str, list[tuple[str, str]]], rows: Mapping[str, _Row]) -> tuple[str, ...]:
    """The rows an inferred family's check cannot explain from the file's own facts.

    The family was read off the file, so a module this model has none of, a size the formula does not assume (the
    same in every layer, or per layer as some pruned models have them) or a module a layer holds instead of the
    family's (experts for a dense MLP) describes the model, not a fault. What the file does not explain is a hole:
    a module most repetitions of a layer hold, absent from one with nothing else in its place.
    """
    odd: dict[str, None] = {}
    for seen in outcomes.values():
        absent = [row for row, outcome in seen if outcome == "absent"]
        if absent and 2 * len(absent) < len(seen):
            odd.update((row, None) for row in absent if not rows[row].extra)
    return tuple(odd)


def _inside(path: str, base: str, family: Family) -> bool:
    """Whether a module belongs to the model (under its prefix, or under one of its top-level names)."""
    if base:
        return path.startswith(base)
    tops = {p.path.split(".", 1)[0] for p in family.parts if not p.path.startswith("/")}
    return path.split(".", 1)[0] in tops


def _row_for(path: str, rows: Mapping[str, Any]) -> str:
    """The longest existing row that contains `path`, else the path itself."""
    containing = [name for name in rows if path.startswith(name + ".")]
    return max(containing, key=len) if containing else path


def _notes(family: Family, h: Mapping[str, Any], source: str) -> tuple[str, ...]:
    notes = [f"{family.name}: {family.description}"]
    notes.append(
        {"config": "sizes from config.json", "stated": "sizes from the words given"}.get(
            source, "sizes read from the tensors' shapes"
        )
    )
    notes.append("biases, norm shifts and optional modules (q/k norms, pooler, extra norms) as the file holds them")
    if h.get("kv_dim") and h.get("q_dim") and h["kv_dim"] != h["q_dim"]:
        notes.append(f"grouped-query attention: k/v projections of {h['kv_dim']} against q of {h['q_dim']}")
    return tuple(notes)


# -- a family stated with words (inspector formula / --expect) ---------------------------------------------------

# sizes a formula uses where the words do not give them (0: derived: head_dim = d_model / heads, feedforward = 4 x
# d_model, kv_heads = heads, decoder_layers = layers, word_embed = d_model)
FORMULA_DEFAULTS: Mapping[str, int] = {
    "vocab": 32000,
    "d_model": 4096,
    "layers": 32,
    "heads": 32,
    "kv_heads": 0,
    "head_dim": 0,
    "feedforward": 0,
    "positions": 2048,
    "token_types": 2,
    "experts": 8,
    "expert_ff": 1024,
    "shared_ff": 4096,
    "decoder_layers": 0,
    "buckets": 32,
    "relative": 512,
    "word_embed": 0,
    "mel_bins": 80,
    "source_positions": 1500,
    "target_positions": 448,
    "channels": 3,
    "patch": 16,
    "image_size": 224,
    "vision_layers": 12,
}


def _word_order(word: str) -> tuple[int, str]:
    """The common sizes first, in FORMULA_DEFAULTS order, then a family's own (a CLIP tower's t_d, v_d...)."""
    order = list(FORMULA_DEFAULTS)
    return (order.index(word), "") if word in order else (len(order), word)


def family_words(family: Family) -> dict[str, Any]:
    """The words a family's formula takes, with defaults: the sizes its parts use and the facts it has."""
    sizes = {DIM.fullmatch(d).group(1) for p in family.parts for d in p.dims if isinstance(d, str)}  # type: ignore[union-attr]
    sizes |= {"heads", "kv_heads", "head_dim"} & set(FORMULA_DEFAULTS)
    sizes |= {COUNTS[m] for p in family.parts for m in PLACEHOLDER.findall(p.path)}
    flags = {p.when for p in family.parts if p.when} | {p.bias for p in family.parts if p.bias} | {"tied"}
    sizes |= set(family.config.values()) - flags  # (what its own config keys size: MLA's head parts, which derive uses)
    words: dict[str, Any] = {
        k: FORMULA_DEFAULTS.get(k, None if k in ZERO_VALUED else 0) for k in sorted(sizes, key=_word_order)
    }
    words |= {flag: bool(family.defaults.get(flag, False)) for flag in sorted(flags)}
    return words


def stated_hyperparameters(family: Family, words: Mapping[str, Any]) -> dict[str, Any]:
    """Hyperparameters from a formula's words: 0 means 'derive it', but of a size whose 0 is a value (`ZERO_VALUED`),
    which None (unset) leaves to the family's derive."""
    h = {k: v for k, v in words.items() if v is not None and (v != 0 or isinstance(v, bool) or k in ZERO_VALUED)}
    (family.derive or derive_transformer)(h)
    return h


def rows(family: Family, h: Mapping[str, Any]) -> list[LayerSpec]:
    """The family at `h` as report rows: a Block per layer, a spec per other module (no file: facts from words)."""
    grouped: dict[str, list[tuple[str, LayerSpec]]] = {}
    for e in expected_modules(family, h, None):
        if e.spec is not None:  # a tied head adds nothing
            grouped.setdefault(e.row, []).append((e.path, e.spec))
    out: list[LayerSpec] = []
    for row, modules in grouped.items():
        if len(modules) == 1 and modules[0][0] == row:
            out.append(modules[0][1])  # a module of its own row: its spec is already named by its path
        else:
            out.append(Block(tuple((path[len(row) + 1 :], spec) for path, spec in modules), "Block", name=row))
    return out


def check_stated(ckpt: Checkpoint, roles: Sequence[RoleMatch], family: Family, h: Mapping[str, Any]) -> Expectation:
    """A family stated with words (--expect 'llama d_model=...') against a file, under the prefix it uses."""
    found = detect(ckpt, (family,))
    view = found[0][1] if found else FileView(FileModules.of(ckpt), family.bases[0])
    return check(ckpt, roles, family, view, "stated", h)


def refine_roles(ckpt: Checkpoint, roles: Sequence[RoleMatch], exp: Expectation | None) -> tuple[RoleMatch, ...]:
    """Roles as the family table states them (layer = the report row, role = the part's) for the tensors its
    parts cover; other tensors keep the role table's answer. The analysis's last look at its file: the modules kept
    for it (`LAST_FILE`, `LAST_CHECK`) are let go (not held while the report is written)."""
    try:
        return _refined(ckpt, roles, exp)
    finally:
        LAST_FILE.clear()
        LAST_CHECK.clear()


def _refined(ckpt: Checkpoint, roles: Sequence[RoleMatch], exp: Expectation | None) -> tuple[RoleMatch, ...]:
    family = FAMILY_BY_NAME.get(exp.architecture) if exp is not None else None
    if family is None:
        return tuple(roles)
    last = LAST_CHECK.pop() if LAST_CHECK else None
    for fam, view, source in detect(ckpt, (family,)):
        if fam is not family:
            continue
        if (
            last is not None
            and last[0] is exp
            and exp.source == source  # (a stated family's sizes are the words', not the file's: made again)
            and last[1].file is view.file
            and (last[1].base, last[1].outer) == (view.base, view.outer)
        ):
            expected = last[2]  # (the check's own: the same family, view and sizes)
        else:
            try:
                h = hyperparameters(family, view, ckpt.config if source == "config" else None)
                expected = expected_modules(family, h, view)
            except (SpecError, ValueError, ZeroDivisionError):
                return tuple(roles)
        beside = set(map(id, side_tensors(ckpt.tensors)))  # (a quantization's tensors keep their own role)
        bare_get, modules_get = view.file.tensors.get, view.file.modules.get  # (`view.module`, inline)
        held = [(t,) if (t := bare_get(e.path)) is not None else modules_get(e.path, ()) for e in expected]
        by_tensor = {
            t.name: e for e, tensors in zip(expected, held, strict=True) for t in tensors if id(t) not in beside
        }
        rule_id, learned = f"family.{family.name}", Role.LEARNED_TENSOR.value
        out: list[RoleMatch] = []
        append, part_of = out.append, by_tensor.get
        for r in roles:
            e = part_of(r.name)
            if e is None:
                append(r)
                continue
            role = _part_or_rule_role(e.role, r) if e.role == learned else e.role  # (a learned tensor's may change)
            append(RoleMatch(r.name, e.row, role, r.name.rpartition(".")[2], rule_id))
        return tuple(out)
    return tuple(roles)


# what a family part of kind 'tensor' is when its role is not stated (`families.part_role`), and the role table's
# answers that say no more than it
BARE_TENSOR_ROLES = frozenset({Role.LEARNED_TENSOR.value, Role.UNMATCHED.value})


def _part_or_rule_role(part_role: str, r: RoleMatch) -> str:
    """The family part's role, but where it only says 'a learned tensor' and a rule that names the tensor says more
    (a mixture of experts' stacked or fused projections, `moe.experts_*`): the rule's."""
    if part_role == Role.LEARNED_TENSOR.value and r.role not in BARE_TENSOR_ROLES and r.rule_id not in GENERIC_RULES:
        return r.role
    return part_role


def expect(ckpt: Checkpoint, roles: Sequence[RoleMatch]) -> Expectation | None:
    """The family expectation of a file, or None when no family fits.

    Where the names tie two families (the same parts found: OLMoE's and Qwen3-MoE's q/k norms differ only in
    width), the shapes decide: the first of them whose formula gives the file, else the first that sizes it."""
    first: Expectation | None = None
    score = (0, 0)
    for family, view, source in detect(ckpt):
        if first is not None and _score(view, family) != score:
            break  # (the names rank this family below the one found)
        config = ckpt.config if source == "config" else None
        try:
            h = hyperparameters(family, view, config)
            if config:
                h["model_type"] = config["model_type"]
            exp = check(ckpt, roles, family, view, source, h)
        except (SpecError, ValueError, ZeroDivisionError):
            continue  # the file's shapes do not size this family
        if exp.matches:
            return exp
        if first is None:
            first, score = exp, _score(view, family)
    return first
