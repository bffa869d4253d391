"""The file's own layers: parameter tensors grouped into modules, and the layer spec each module's tensors imply.

This is the fact side of the analytic layer. Nothing here assumes a default: a bias, a norm's scale or
shift, a second RNN bias vector, a conv's groups are counted when the file holds them, and a module
whose tensors fit no layer kind is a plain `Tensor` of its shape. The spec a module gets therefore
always counts exactly what the module holds; families (`inspector.families`) are what state what a
module *should* hold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from math import prod

from inspector.formulas import (
    GRU,
    LSTM,
    BatchNorm,
    Conv,
    Convention,
    Dense,
    Embedding,
    LayerSpec,
    LoHa,
    LoKr,
    LoRA,
    Norm,
    Recurrent,
    SimpleRNN,
    Tensor,
    recipe,
)
from inspector.quantized import side_tensors
from inspector.records import Checkpoint, RoleMatch, TensorInfo, TensorKind
from inspector.recordtype import COPIED_FROM, copies, record
from inspector.roles import NORM_STATISTICS, role_names

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    Recipe = tuple[type[LayerSpec], tuple[Any, ...], dict[str, Any]]  # a spec's class and its arguments but its name

GATE_CELLS: dict[int, type[Recurrent]] = {1: SimpleRNN, 3: GRU, 4: LSTM}
# TensorFlow (TF1 Saver, tf.train.Checkpoint) keeps Keras's layouts: (in, out) kernels, counted moving statistics;
# Flax's kernels are (in, out) and (kh, kw, in, out) too, its statistics buffers apart (batch_stats)
FRAMEWORK_CONVENTIONS = {
    "keras": Convention.KERAS,
    "tensorflow": Convention.KERAS,
    "mxnet": Convention.MXNET,
    "flax": Convention.KERAS,
}
# Roles whose rule names the layer itself (RNN layers 'rnn.l0', Keras and MXNet layers, positional arrays):
# the role's layer is the module. Elsewhere a dotted name's module is the name without its last part.
# A peft adapter's factor (LoRA's and others') has the module it adapts as layer: one adapted module, one module.
LAYER_FROM_ROLE = (
    "rnn_input_kernel",
    "rnn_recurrent_kernel",
    "rnn_bias",
    "initial_state",
    "lora_factor",
    "adapter_factor",
)
# one value per feature (num_batches_tracked is a counter)
STATISTICS = frozenset(n for names in NORM_STATISTICS.values() for n in names) - {"num_batches_tracked"}
DOTTED_STATISTICS = tuple("." + n for n in sorted(STATISTICS))  # a name whose last part is one: str.endswith
SCALES = ("weight", "gamma", "scale")
SHIFTS = ("bias", "beta")
AFFINE = {"weight", "bias"}
# a layer's weight by its parameter name: torch's, Keras's and Flax's kernel, TF Lite's filter, a Keras and a Flax
# embedding table (`embeddings`, `embedding`: an embedding where its role says so, read as the table it is)
WEIGHTS = ("weight", "kernel", "filter", "embedding", "embeddings")
NORM_PARAMS = frozenset(SCALES) | frozenset(SHIFTS) | STATISTICS  # what a norm module holds (EvoNorm's `v` is not)
# rules whose `param` is the tensor's parameter name (an ONNX graph's use: the name PyTorch gives that input)
STATED_PARAM_RULES = ("keras", "mxnet", "sockeye", "shape.", "peft.", "kohya.", "lycoris.", "onnx.", "tflite.")
# rules whose layer is the module, whatever the tensor's name (a positional array's; a TF Lite operator's layer, its
# tensors named 'arith.constant3' or by the fused ops joined)
LAYER_RULES = ("shape.", "tflite.")


@record(frozen=True)
class Module:
    """The parameter tensors of one file module (aliases included), with their roles."""

    name: str
    items: tuple[tuple[TensorInfo, RoleMatch], ...]

    def params(self) -> dict[str, TensorInfo]:
        """The tensors by their parameter name within the module ('weight', 'kernel', 'bias'...)."""
        prefix = self.name + "."
        return {_param(prefix, t, r): t for t, r in self.items}

    @property
    def roles(self) -> set[str]:
        return {r.role for _, r in self.items}

    @property
    def found(self) -> int:
        return sum(t.n_elements for t, _ in self.items if t.alias_of is None)


def _param(prefix: str, t: TensorInfo, r: RoleMatch) -> str:
    """A tensor's parameter name within its module (whose name is `prefix` less its final '.')."""
    if r.param and r.rule_id.startswith(STATED_PARAM_RULES):
        return r.param.removesuffix(":0")
    return t.name[len(prefix) :] if t.name.startswith(prefix) else (r.param or t.name)


def module_name(t: TensorInfo, r: RoleMatch, framework: str) -> str:
    if (
        t.layer
        or framework in FRAMEWORK_CONVENTIONS
        or r.role in LAYER_FROM_ROLE
        or r.rule_id.startswith((*LAYER_RULES, "onnx."))  # (the layer of a positional array, of a graph's node)
    ):
        return t.layer or r.layer
    if "." in t.name:
        return t.name.rpartition(".")[0]
    return r.layer


def module_groups(ckpt: Checkpoint, roles: Sequence[RoleMatch]) -> dict[str, Sequence[tuple[TensorInfo, RoleMatch]]]:
    """Parameter tensors (with their roles) by module, in file order; a quantization's tensors beside a quantized
    weight are not a module's (`inspector.quantized`: the layer check counts them apart)."""
    framework, parameter = ckpt.framework, TensorKind.PARAMETER
    stated = framework in FRAMEWORK_CONVENTIONS  # (module_name's tests, the framework's once: no call per tensor)
    from_role = frozenset(LAYER_FROM_ROLE)
    pairs = [(t, r) for t, r in zip(ckpt.tensors, roles, strict=True) if t.kind is parameter]
    side = side_tensors(ckpt.tensors)
    if side:
        beside = set(map(id, side))
        pairs = [(t, r) for t, r in pairs if id(t) not in beside]
    # the rules of a positional array's (their layer is the module: a few rules, each asked once)
    by_shape = {rule_id for rule_id in {r.rule_id for _, r in pairs} if rule_id.startswith(LAYER_RULES)}
    names = [
        t.layer or r.layer
        if stated or t.layer or r.role in from_role or r.rule_id in by_shape
        else t.name.rpartition(".")[0]
        if "." in t.name
        else r.layer
        for t, r in pairs
    ]
    if len(set(names)) == len(names):  # a module a tensor (a large file's usual case): each its one pair, in C calls
        return dict(zip(names, zip(pairs), strict=True))
    groups: dict[str, list[tuple[TensorInfo, RoleMatch]]] = {}
    for name, pair in zip(names, pairs, strict=True):
        groups.setdefault(name, []).append(pair)
    return groups  # type: ignore[return-value]


def file_modules(ckpt: Checkpoint, roles: Sequence[RoleMatch]) -> dict[str, Module]:
    """Parameter tensors grouped by module, in file order."""
    return {name: Module(name, tuple(items)) for name, items in module_groups(ckpt, roles).items()}


def _kernel_out_last(t: TensorInfo, r: RoleMatch, framework: str) -> bool:
    """Keras/TensorFlow kernels are (..., in, out); PyTorch, MXNet and Theano weights are (out, in, ...)."""
    if r.rule_id.startswith("shape."):
        return r.rule_id.endswith("out_last") or r.rule_id == "shape.dense_in_out"
    if r.rule_id.startswith(("onnx.", "tflite.")):  # (a MatMul's B: x @ B, an (in, out) kernel)
        return r.param == "kernel"
    return FRAMEWORK_CONVENTIONS.get(framework) is Convention.KERAS


def _recurrent(module: Module, framework: str, statistics: bool) -> Recipe | None:
    rec = next((t for t, r in module.items if r.role == "rnn_recurrent_kernel"), None)
    inp = next((t for t, r in module.items if r.role == "rnn_input_kernel"), None)
    if rec is None or inp is None or len(rec.shape) != 2 or len(inp.shape) != 2:
        return None
    convention = FRAMEWORK_CONVENTIONS.get(framework, Convention.TORCH)
    split = [t for t, r in module.items if r.role == "rnn_input_kernel"]
    if len(split) > 1:  # a matrix a gate (TF Lite's LSTM: input_to_{input,forget,cell,output}_weights, (units, in))
        recurrent = [t for t, r in module.items if r.role == "rnn_recurrent_kernel"]
        alike = all(t.shape == inp.shape for t in split) and all(t.shape == rec.shape for t in recurrent)
        if len(recurrent) != len(split) or rec.shape[0] != rec.shape[1] or not alike:
            return None
        units, inputs, gates, convention = rec.shape[0], inp.shape[1], len(split), Convention.TORCH
    elif convention is Convention.KERAS:  # kernel (in, g.u), recurrent (u, g.u), bias (g.u) or (2, g.u)
        units, inputs = rec.shape[0], inp.shape[0]
        gates = rec.shape[1] // units
    else:  # weight_ih (g.u, in), weight_hh (g.u, u), bias_ih, bias_hh
        units, inputs = rec.shape[1], inp.shape[1]
        gates = rec.shape[0] // units
    cls = GATE_CELLS.get(gates)
    if cls is None:
        return None
    bias_elements = sum(t.n_elements for t, r in module.items if r.role == "rnn_bias")
    vectors, rest = divmod(bias_elements, gates * units)
    if rest:
        return None
    return cls, (inputs, units, convention), {"bias": vectors > 0, "biases": vectors or None}


# A LoRA module's factors by parameter name: (down factor, up factor) of a linear or conv layer and of an embedding
# (peft's; kohya-ss' and LyCORIS' lora_down and lora_up)
LORA_FACTORS = (("lora_A", "lora_B"), ("lora_embedding_A", "lora_embedding_B"), ("lora_down", "lora_up"))
# (lora_E: AdaLoRA's singular values; dora_scale: DoRA's magnitude as kohya-ss and LyCORIS name it; lora_mid: LyCORIS'
# Tucker core of a convolution's LoRA)
LORA_EXTRAS = frozenset({"lora_magnitude_vector", "lora_bias", "lora_E", "dora_scale", "lora_mid"})
TUCKER_CORE = "lora_mid"


def lora_recipe(module: Module) -> Recipe | None:
    """A LoRA spec when the module holds one pair of factors whose rank agrees (A: rank x in..., B: out x rank...),
    DoRA's magnitude and lora_B's bias of `out` and AdaLoRA's singular values of `rank` beside them, nothing else;
    or a convolution's LoRA with a Tucker core (down rank x in x 1 x 1, lora_mid rank x rank x kernel, up out x rank
    x 1 x 1)."""
    params = module.params()
    if len(params) != len(module.items):  # two adapters' factors in one state dict ('.default', '.other')
        return None
    for down, up in LORA_FACTORS:
        a, b = params.get(down), params.get(up)
        if a is not None and b is not None:
            break
    else:
        return None
    if params.keys() - {down, up} - LORA_EXTRAS or len(a.shape) < 2 or len(b.shape) < 2:
        return None
    rank, out = a.shape[0], b.shape[0]
    if b.n_elements != out * rank:  # (a conv's lora_B is out x rank x 1 x 1)
        return None
    magnitude = params.get("lora_magnitude_vector", params.get("dora_scale"))
    bias, singular = params.get("lora_bias"), params.get("lora_E")
    if any(t is not None and t.n_elements != out for t in (magnitude, bias)):
        return None
    if singular is not None and singular.n_elements != rank:
        return None
    extras: dict[str, Any] = {
        "magnitude": magnitude is not None,
        "bias": bias is not None,
        "singular": singular is not None,
    }
    mid = params.get(TUCKER_CORE)
    if mid is not None:
        if mid.shape[:2] != (rank, rank) or len(mid.shape) < 3:
            return None
        extras["core"] = mid.shape[2:]
    return LoRA, (rank, a.n_elements // rank, out), extras


# A LoHa module's factors: (out x rank, rank x in) twice; with Tucker cores (a convolution's: peft's effective conv,
# LyCORIS' use_tucker) the cores hada_t1 and hada_t2 (rank x rank x kernel) and (rank x out, rank x in) twice
LOHA_FACTORS = ("hada_w1_a", "hada_w1_b", "hada_w2_a", "hada_w2_b")
LOHA_CORES = ("hada_t1", "hada_t2")


def loha_recipe(module: Module) -> Recipe | None:
    """A LoHa spec when the module holds the four factors of one rank, two alike pairs, and nothing else (or the
    Tucker cores too, two alike, of that rank)."""
    params = module.params()
    if len(params) != len(module.items):
        return None
    w1_a, w1_b, w2_a, w2_b = (params[name].shape if name in params else () for name in LOHA_FACTORS)
    if len(w1_a) != 2 or len(w1_b) != 2 or w2_a != w1_a or w2_b != w1_b:
        return None
    if params.keys() == set(LOHA_FACTORS):
        return (LoHa, (w1_a[1], w1_b[1], w1_a[0]), {}) if w1_a[1] == w1_b[0] else None
    if params.keys() != {*LOHA_FACTORS, *LOHA_CORES}:
        return None
    t1, t2 = params["hada_t1"].shape, params["hada_t2"].shape
    rank = w1_a[0]
    if t1 != t2 or len(t1) < 3 or t1[:2] != (rank, rank) or w1_b[0] != rank:
        return None
    return LoHa, (rank, w1_b[1], w1_a[1]), {"core": t1[2:]}


# A LoKr module's factors (peft's and LyCORIS'): the first factor whole or split, the second whole, split or split
# around a Tucker core (a convolution's)
LOKR_FIRST = (("lokr_w1",), ("lokr_w1_a", "lokr_w1_b"))
LOKR_SECOND = (("lokr_w2",), ("lokr_w2_a", "lokr_w2_b"), ("lokr_w2_a", "lokr_w2_b", "lokr_t2"))
LOKR_KERNELS = {"lokr_w2": 2, "lokr_t2": 3}  # the factors that may hold a kernel: their least dims (the others: 2)
LOKR_MAGNITUDE = "dora_scale"  # LyCORIS' DoRA of a LoKr module (`weight_decompose`), one an output


def lokr_recipe(module: Module) -> Recipe | None:
    """A LoKr spec when the module holds one of each factor's layouts (`LOKR_FIRST`, `LOKR_SECOND`), DoRA's magnitude
    of its outputs (`LOKR_MAGNITUDE`) and nothing else, every split factor of one rank (`_lokr_factor`)."""
    params = module.params()
    if len(params) != len(module.items):
        return None
    factors = params.keys() - {LOKR_MAGNITUDE}
    first = next((names for names in LOKR_FIRST if factors >= set(names)), ())
    second = next((names for names in reversed(LOKR_SECOND) if factors >= set(names)), ())
    if not first or not second or factors != {*first, *second}:
        return None
    shapes = {name: params[name].shape for name in factors}
    if not all(len(shape) >= LOKR_KERNELS.get(name, 2) for name, shape in shapes.items()):
        return None
    w1_out, w1_in, w1_ranks, _ = _lokr_factor(shapes, first)
    w2_out, w2_in, w2_ranks, core = _lokr_factor(shapes, second)
    ranks = {*w1_ranks, *w2_ranks}
    magnitude = params.get(LOKR_MAGNITUDE)
    if len(ranks) > 1 or (magnitude is not None and magnitude.n_elements != w1_out * w2_out):
        return None
    words = {"w1_split": bool(w1_ranks), "w2_split": bool(w2_ranks), "core": core, "magnitude": magnitude is not None}
    return LoKr, (ranks.pop() if ranks else None, w1_out, w1_in, w2_out, w2_in), words


def _lokr_factor(
    shapes: dict[str, tuple[int, ...]], names: tuple[str, ...]
) -> tuple[int, int, tuple[int, ...], tuple[int, ...]]:
    """A LoKr factor's rows, columns, the ranks its parts give and its Tucker core's kernel: whole (w1 rows x columns,
    w2 rows x columns x kernel...), split (_a rows x r, _b r x columns) or split around a core (_a r x rows, _b r x
    columns, t2 r x r x kernel)."""
    if len(names) == 1:
        whole = shapes[names[0]]
        return whole[0], prod(whole[1:]), (), ()
    a, b = shapes[names[0]], shapes[names[1]]
    if len(names) == 2:
        return a[0], b[1], (a[1], b[0]), ()
    core = shapes[names[2]]
    return a[1], b[1], (a[0], b[0], *core[:2]), core[2:]


def _first(params: dict[str, TensorInfo], names: tuple[str, ...]) -> TensorInfo | None:
    for name in names:
        t = params.get(name)
        if t is not None:
            return t
    return None


def module_spec(module: Module, framework: str, statistics: bool = False) -> LayerSpec:
    """The layer spec that counts exactly what `module` holds, of the most specific kind its tensors fit.

    `statistics`: the module has running statistics beside it (buffers, or statistics kept as parameters).
    """
    cls, args, kwargs = _recipe(module, framework, statistics)
    return cls(*args, name=module.name, **kwargs)  # type: ignore[call-arg]  # every kind of spec has a name


def _recipe(module: Module, framework: str, statistics: bool) -> Recipe:
    """`module_spec`'s spec as its class and arguments, less its name."""
    roles = {r.role for _, r in module.items}
    if "lora_factor" in roles:
        lora = lora_recipe(module)
        if lora is not None:
            return lora
    if "adapter_factor" in roles:
        adapter = loha_recipe(module) or lokr_recipe(module)
        if adapter is not None:
            return adapter
    if "rnn_recurrent_kernel" in roles:
        recurrent = _recurrent(module, framework, statistics)
        if recurrent is not None:
            return recurrent
    params = module.params()
    if len(params) != len(module.items):  # two tensors under one parameter name: no layer kind reads them apart
        return _plain(module)  # (paddle2onnx's 'auto.cast.95' and 'auto.cast.98', two layers' weights; the scale
        # and shift of a graph's Mul and Add, each its node's input 'B')
    scale, shift = _first(params, SCALES), _first(params, SHIFTS)
    one_d = [t for t in params.values() if len(t.shape) == 1]
    name = module.name
    stats = [p for p in params if p in STATISTICS] if len(one_d) == len(params) else []
    # (a 1-d weight and bias of one size: an affine norm, GroupNorm...)
    if (
        one_d
        and len(one_d) == len(params)
        and params.keys() <= NORM_PARAMS
        and (statistics or stats or "norm" in roles or params.keys() == AFFINE)
    ):
        features = one_d[0].shape[0]
        if all(t.shape == (features,) for t in one_d):
            if stats and framework in FRAMEWORK_CONVENTIONS:  # Keras, TensorFlow and MXNet count the statistics
                convention = FRAMEWORK_CONVENTIONS[framework]
                return BatchNorm, (features, convention), {"scale": scale is not None, "shift": shift is not None}
            if statistics or stats:
                label = "BatchNorm"
            elif "norm" in roles:
                label = "LayerNorm" if shift is not None else "RMSNorm"
            else:  # an affine GroupNorm/InstanceNorm/LayerNorm whose name does not say which
                label = "Norm"
            return Norm, (features, scale is not None, shift is not None, label), {}
    weight = _first(params, WEIGHTS)
    rest = {p: t for p, t in params.items() if t is not weight}
    bias_ok = not rest or (len(rest) == 1 and shift is not None and len(shift.shape) == 1)
    if weight is not None and bias_ok:
        items = module.items  # the weight's role (a module of one tensor: its own)
        r = items[0][1] if len(items) == 1 else next(r for t, r in items if t is weight)
        has_bias = shift is not None
        if r.role in ("embedding", "position_embedding") and len(weight.shape) == 2 and not has_bias:
            return Embedding, (weight.shape[0], weight.shape[1]), {}
        if len(weight.shape) == 2:
            cin, cout = weight.shape if _kernel_out_last(weight, r, framework) else weight.shape[::-1]
            if not has_bias or shift.shape == (cout,):  # type: ignore[union-attr]
                return Dense, (cin, cout, has_bias), {}
            if shift.shape == (cin,):  # type: ignore[union-attr]  # (stored the other way: Flax GPT-2's FlaxConv1D
                return Dense, (cout, cin, has_bias), {}  # kernels are (out, in), torch's Conv1D weights (in, out))
        if len(weight.shape) >= 3:
            if _kernel_out_last(weight, r, framework):
                *kernel, cin, cout = weight.shape
            elif r.param == "filter":  # (TF Lite's convolution filters: (out, kh, kw, in))
                cout, *kernel, cin = weight.shape
            else:
                cout, cin, *kernel = weight.shape
            # from the shape alone a grouped conv reads as in_channels/groups, and a transposed or depthwise
            # Keras kernel (k, out, in) / (k, in, multiplier) has its bias on the other axis: the count is the same
            if not has_bias or shift.shape == (cout,):  # type: ignore[union-attr]
                return Conv, (cin, cout, tuple(kernel), has_bias), {}
            if shift.shape == (cin,):  # type: ignore[union-attr]
                return Conv, (cout, cin, tuple(kernel), has_bias), {}
        if len(weight.shape) == 1 and not rest:  # a learned per-channel scale: PReLU slopes, an RMSNorm weight
            return Tensor, (weight.shape, "PReLU" if "prelu" in name.lower() else "Scale"), {}
    return _plain(module)


def _plain(module: Module) -> Recipe:
    """A module no layer kind fits: a `Tensor` of its one tensor's shape, or `Tensors` of all its elements."""
    if len(module.items) == 1:
        return Tensor, (module.items[0][0].shape, "Tensor"), {}
    return Tensor, ((module.found,), "Tensors"), {}


def statistic_modules(ckpt: Checkpoint, roles: Sequence[RoleMatch], framework: str) -> set[str]:
    """Modules with running statistics beside them (as buffers or as non-trainable parameters)."""
    if "norm_statistic" not in role_names(roles):
        # every name as '.name\n' in one text: a name that is a statistic or ends in '.' and one holds '.statistic\n'
        # (a name holding a newline may show one that is not: then the tensors are tested one by one)
        text = "." + "\n.".join([t.name for t in ckpt.tensors]) + "\n"
        if not any(f".{statistic}\n" in text for statistic in STATISTICS):
            return set()  # (most files of 100,000 tensors: one text and a C search a statistic, no tensor's test)
    return {
        module_name(t, r, framework)
        for t, r in zip(ckpt.tensors, roles, strict=True)
        if r.role == "norm_statistic" or (t.name.endswith(DOTTED_STATISTICS) or t.name in STATISTICS)
    }


def file_specs(
    ckpt: Checkpoint,
    roles: Sequence[RoleMatch],
    groups: Mapping[str, Sequence[tuple[TensorInfo, RoleMatch]]] | None = None,
) -> list[LayerSpec]:
    """One spec per file module, in file order: what the shapes say, nothing assumed (`groups`: the modules, their
    tensors by name, as `module_groups` gives them, where the caller has them)."""
    framework = ckpt.framework
    statistics = statistic_modules(ckpt, roles, framework)
    # A module of one tensor is told by its parameter name, shape, role, rule, whether it is an alias and whether its
    # name says PReLU: its recipe is worked out once for each such combination (a model's repeated layers)
    # (each as its class, and its fields before and after `name`, positional: the first spec of a recipe was made
    # from the recipe and checked, the others are made of the same values; in a file of `COPIED_FROM` modules or
    # more, as the first spec's copies under another name, `recordtype.copies`, at a third of a class's call)
    recipes: dict[tuple[Any, ...], Any] = {}
    specs: list[LayerSpec] = []
    append = specs.append
    stated: dict[str, bool] = {}  # rule id -> whether it states the parameter name (a few rules: asked once each)
    modules = module_groups(ckpt, roles) if groups is None else groups
    # whether any module's name says PReLU, told of all names at once (most files: none, no test a module)
    prelus = "prelu" in "\n".join(modules).lower()
    copied = len(modules) >= COPIED_FROM
    for name, items in modules.items():
        stats = name in statistics if statistics else False
        if len(items) != 1:
            append(module_spec(Module(name, tuple(items)), framework, stats))
            continue
        t, r = items[0]
        # _param(name + ".", t, r), inline
        rule_id = r.rule_id
        says = stated.get(rule_id)
        if says is None:
            says = stated[rule_id] = rule_id.startswith(STATED_PARAM_RULES)
        if r.param and says:
            param = r.param.removesuffix(":0")
        else:
            tensor = t.name
            param = tensor.removeprefix(name + ".")  # (one C call, where startswith parses its arguments)
            if len(param) == len(tensor):  # (no prefix removed)
                param = r.param or tensor
        key = (param, t.shape, r.role, r.rule_id, t.alias_of is None, stats, prelus and "prelu" in name.lower())
        made = recipes.get(key)
        if made is None:
            cls, args, kwargs = _recipe(Module(name, tuple(items)), framework, stats)
            spec = cls(*args, name=name, **kwargs)  # type: ignore[call-arg]
            recipes[key] = copies(spec, "name") if copied else recipe(spec)
            append(spec)
            continue
        if copied:
            append(made(name))
            continue
        cls, before, after = made
        append(cls(*before, name, *after))  # (every kind of spec has a name)
    return specs
