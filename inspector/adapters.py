"""PEFT adapters: the expectation `adapter_config.json` states for an adapter file, or its shapes imply.

An adapter file (`adapter_model.safetensors`, what peft's `save_pretrained` writes) holds, per adapted module, the
factors lora_A and lora_B (lora_embedding_A/B for an embedding), DoRA's magnitude vector and lora_B's bias where
the config asks for them (`inspector.modules.lora_recipe` reads them as one `LoRA` spec), and full copies of the
`modules_to_save`. The config states each adapted module's rank: `r`, or the first `rank_pattern` key that names the
module. peft's keys are regular expressions matched at a dotted boundary at the end of the module's name; a key is
read here as the literal it almost always is ('v_proj', 'layers.1.self_attn.q_proj'), and a key with any other
regex syntax is not evaluated (a file cannot make the tool run a pattern of its choosing): a module such a key may
name (no plain key before it names the module) is then checked against the rank the file holds, and a note says so.

AdaLoRA's modules are LoRA modules with singular values (lora_E), at `init_r` or at the rank its `rank_pattern` (a
mask per module, as its training left them) keeps. Prompt learning (prompt tuning, P-tuning, prefix tuning) saves one
table of virtual tokens, of the size its config states. Another peft type is `peft-adapter(peft_type, ...)`: LoHa's
and LoKr's modules at the rank the config states for each (`r`, `rank_pattern`, as LoRA's; a LoKr module whose
factors are both whole holds no rank), the modules of a type with no formula here (IA3, OFT, BOFT, VeRA...) as the
file holds them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import islice
from operator import attrgetter, itemgetter

from inspector.architectures import Architecture
from inspector.formulas import Embedding, LayerSpec, LoHa, LoKr, LoRA
from inspector.hfconfig import ADAPTER_CONFIG_NAME
from inspector.modules import file_specs
from inspector.records import Checkpoint, RoleMatch
from inspector.recordtype import record, replace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    Spec = TypeVar("Spec", bound=LoRA | LoHa | LoKr)

ARCHITECTURE = "lora-adapter"
OTHER_ARCHITECTURE = "peft-adapter"  # a peft type whose factors have no formula here
LORA_TYPES = ("LORA", "ADALORA")  # peft types whose modules are LoRA modules (`formulas.LoRA`)
# prompt learning: the table of virtual tokens it saves (`prompt_embeddings`), by peft type: its columns in token_dim
# (prefix tuning: a key and a value of token_dim per layer, as `PrefixEncoder` makes them)
PROMPT_COLUMNS = {"PROMPT_TUNING": 1, "P_TUNING": 1, "PREFIX_TUNING": 2}
PROMPT_TABLE = "prompt_embeddings"
PROMPT_KEYS = ("num_virtual_tokens", "token_dim", "num_layers")  # shown among its hyperparameters
# what a file of a peft type holds that is not what peft's get_nb_trainable_parameters() counts, in words
SAVED_NOT_TRAINED = {
    "P_TUNING": "peft saves the virtual tokens' embeddings its prompt encoder computes, not the encoder it trains",
    "VERA": "vera_A and vera_B: random projections shared by every module (save_projection), buffers, not trained",
    "RANDLORA": "randlora_A and randlora_B: random bases shared by every module, buffers, not trained",
}
REGEX_SYNTAX = frozenset("\\^$*+?{}[]|()")  # in a rank_pattern key: a regular expression, not a module name
SHOWN = 20  # pattern entries shown in the architecture's line (a config of 1 MiB may hold 100,000)
SHOWN_CHARS = 120  # characters shown of one entry
NAMED = ".named"  # the role rules of factors whose names hold the adapter's ('lora_A.default.weight')
PEFT_PREFIX = "base_model.model."  # what a PeftModel's names begin with (the base model's own names follow)
BASE_LAYER = ".base_layer"  # an adapted embedding's base weight, saved beside the factors (save_embedding_layers)
KOHYA_RULE = "kohya.lora"  # the role rule of kohya-ss' and LyCORIS' factors (lora_down, lora_up)
KOHYA_SECTIONS = ("lora_", "lycoris_")  # how their module names begin ('lora_unet_...', 'lora_te1_...', 'lycoris_...')
# LyCORIS' algorithms by the role rule of their factors in kohya-ss' layout (a file of them reads as an adapter: its
# LoHa modules `LoHa` specs, its LoKr modules `LoKr` specs)
LYCORIS_ALGOS = {KOHYA_RULE: "lora", "lycoris.loha": "loha", "lycoris.lokr": "lokr"}


def _positive(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _short(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "..."


def _listed(entries: Iterable[str], total: int) -> str:
    """The first `SHOWN` of `total` entries joined by spaces, each at most `SHOWN_CHARS` long, and how many more."""
    more = f" ... ({total - SHOWN:,} more)" if total > SHOWN else ""
    return " ".join(map(_short, islice(entries, SHOWN))) + more


def _text(value: object) -> str | None:
    """A config entry as one line: a string, or a list of strings joined by spaces."""
    if isinstance(value, str):
        return _short(value)
    if isinstance(value, list | tuple) and value and all(isinstance(v, str) for v in value):
        return _listed(sorted(value), len(value))
    return None


def _pattern(config: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = config.get(key)
    return {k: v for k, v in value.items() if isinstance(k, str)} if isinstance(value, dict) else {}


@record(frozen=True, slots=True)
class Ranks:
    """The ranks an adapter config states: `r`, and `rank_pattern`'s keys by their position in the config.

    As peft matches them, the first key in the config's order that names a module wins; a module's dotted endings are
    looked up among the plain keys (a few per module, whatever the number of keys). `unread`: the position of the
    first key with regex syntax (not evaluated), if any."""

    r: int | None
    keys: Mapping[str, tuple[int, object]]  # plain key -> (position, rank as the config gives it)
    unread: int | None

    @classmethod
    def of(cls, config: Mapping[str, Any]) -> Ranks:
        keys: dict[str, tuple[int, object]] = {}
        unread = None
        for i, (key, value) in enumerate(_pattern(config, "rank_pattern").items()):
            if REGEX_SYNTAX.intersection(key):
                unread = i if unread is None else unread
            else:
                keys.setdefault(key, (i, value))
        return cls(_positive(config.get("r")), keys, unread)

    def stated(self, module: str) -> tuple[int, str] | None:
        """The rank the config states for `module` and where it states it (`r`, or the rank_pattern key that names
        the module); None when it does not say (no usable `r`, or a regex key comes before every key that names the
        module)."""
        parts = module.split(".")
        endings = (".".join(parts[i:]) for i in range(len(parts)))
        found = [(*self.keys[e], e) for e in endings if e in self.keys]
        first = min(found, key=itemgetter(0), default=None)
        if self.unread is not None and (first is None or self.unread < first[0]):
            return None
        if first is None:
            return None if self.r is None else (self.r, "r")
        _, value, key = first
        rank = _positive(value)
        return None if rank is None else (rank, f"rank_pattern {_short(key)!r}")


def _adalora_ranks(config: Mapping[str, Any]) -> dict[str, int]:
    """AdaLoRA's rank per module its `rank_pattern` names ('model.layers.0.self_attn.q_proj.lora_E': a mask of init_r
    booleans, the ranks its training kept), by the module's name under the base model."""
    ranks = {}
    for key, mask in _pattern(config, "rank_pattern").items():
        if isinstance(mask, list) and all(isinstance(m, bool) for m in mask):
            ranks[key.removesuffix(".lora_E")] = sum(mask)
    return ranks


def _at_rank(spec: Spec, stated: tuple[int, str] | None) -> Spec:
    """`spec` at the rank the config states for it, and where it states it (`rank_from`, said when the file holds
    another); as the file holds it where the config does not say, or where the module holds no rank (a LoKr module
    whose factors are both whole)."""
    if stated is None or spec.rank is None:
        return spec
    return replace(spec, rank=stated[0], rank_from=stated[1])


def _stated(config: Mapping[str, Any], ranks: Ranks, spec: LoRA) -> LoRA:
    """The LoRA spec the config states for a module the file adapts: its rank, DoRA's magnitude (use_dora) and
    lora_B's bias (lora_bias); what the config does not say is as the file holds it."""
    changes: dict[str, Any] = {}
    for field, key in (("magnitude", "use_dora"), ("bias", "lora_bias")):
        if isinstance(config.get(key), bool):
            changes[field] = config[key]
    stated = _at_rank(spec, ranks.stated(spec.name))
    return replace(stated, **changes) if changes else stated


def _stated_adalora(init_r: int | None, masks: Mapping[str, int], spec: LoRA) -> LoRA:
    """An AdaLoRA module at the rank its mask keeps, else `init_r` (peft's `r` is LoRA's, unused by AdaLoRA)."""
    name = spec.name.removeprefix(PEFT_PREFIX)
    if name in masks:
        return _at_rank(spec, (masks[name], "rank_pattern mask"))
    return _at_rank(spec, None if init_r is None else (init_r, "init_r"))


def _hyperparameters(
    config: Mapping[str, Any] | None,
    specs: Sequence[LoRA | LoHa | LoKr],
    roles: Sequence[RoleMatch],
    algos: Sequence[str] = (),
) -> dict[str, Any]:
    if config is None:
        ranks = sorted({s.rank for s in specs if s.rank is not None})
        # a model's own state dict names each adapter: its factors' layer is the module and the adapter's name
        named = {r.layer for r in roles if r.rule_id.endswith(NAMED)}
        modules = [s.name.rpartition(".")[0] if s.name in named else s.name for s in specs]
        if algos:  # LyCORIS' (a module of factors no spec fits: its targets are its factors' layers)
            modules += [r.layer for r in roles if r.rule_id in LYCORIS_ALGOS]
        inferred: dict[str, Any] = {"algo": " ".join(algos)} if algos else {}
        if ranks:
            inferred["r"] = ranks[0] if len(ranks) == 1 else " ".join(map(str, ranks))
        inferred["targets"] = " ".join(sorted({_target(m) for m in modules}))
        adapters = sorted({s.name.rpartition(".")[2] for s in specs if s.name in named})
        return inferred | ({"adapters": " ".join(adapters)} if adapters else {})
    adalora = config.get("peft_type") == "ADALORA"
    hyper: dict[str, Any] = {
        "peft_type": config.get("peft_type"),
        "r": _positive(config.get("init_r" if adalora else "r")),
        "lora_alpha": config.get("lora_alpha") if isinstance(config.get("lora_alpha"), int | float) else None,
        "targets": _text(config.get("target_modules")),
    }
    for key in ("alpha_pattern",) if adalora else ("rank_pattern", "alpha_pattern"):
        pattern = _pattern(config, key)
        if pattern:
            hyper[key] = _listed((f"{k}:{v}" for k, v in pattern.items()), len(pattern))
    hyper["modules_to_save"] = _text(config.get("modules_to_save"))
    if config.get("use_dora") is True:
        hyper["use_dora"] = True
    hyper["base_model"] = _text(config.get("base_model_name_or_path"))
    return {k: v for k, v in hyper.items() if v is not None}


def _target(module: str) -> str:
    """What a module's name says it adapts: its last part ('q_proj'); of kohya-ss' names, whose dots are underscores
    ('lora_unet_down_blocks_0_..._to_q', where the last part cannot be told), the section ('lora_unet', 'lora_te1')."""
    if "." not in module and module.startswith(KOHYA_SECTIONS):
        return "_".join(module.split("_", 2)[:2])
    return module.rpartition(".")[2]


def _unread(config: Mapping[str, Any]) -> list[str]:
    """A note on the rank_pattern keys with regex syntax, not evaluated (none when there are none)."""
    unread = [k for k in _pattern(config, "rank_pattern") if REGEX_SYNTAX.intersection(k)]
    if not unread:
        return []
    keys = ", ".join(repr(_short(k)) for k in unread[:SHOWN]) + (" ..." if len(unread) > SHOWN else "")
    return [
        f"rank_pattern key(s) {keys} are regular expressions, not evaluated: a module one of them may name "
        "(no plain key before it names the module) is checked against the rank the file holds"
    ]


def _notes(
    config: Mapping[str, Any] | None, specs: Sequence[LayerSpec], roles: Sequence[RoleMatch], algos: Sequence[str] = ()
) -> tuple[str, ...]:
    notes = []
    if algos:
        notes.append(
            f"kohya-ss' layout of LyCORIS' {', '.join(algos)} (sd-scripts, LyCORIS, ComfyUI): each module's rank read "
            "off its factors; each module's scale `alpha` a buffer beside it (its value is data, not read)"
        )
    elif config is None and KOHYA_RULE in map(attrgetter("rule_id"), roles):
        notes.append(
            "kohya-ss' layout (sd-scripts, LyCORIS, ComfyUI): each module's rank read off its lora_down, its scale "
            "`alpha` a buffer beside it (its value is data, not read)"
        )
    elif config is None:
        notes.append(f"no {ADAPTER_CONFIG_NAME} beside the file: each LoRA module's rank read off its lora_A")
    else:
        notes.extend(_unread(config))
        if config.get("peft_type") not in LORA_TYPES:
            notes.append(f"peft_type {config.get('peft_type')!r}: the LoRA factors checked against the config's ranks")
    for spec in specs:
        name: str = spec.name  # type: ignore[attr-defined]
        if name.endswith(BASE_LAYER):
            notes.append(
                f"{name}: the base model's weight of an adapted embedding or head, which peft saves beside the "
                "adapter (save_embedding_layers); not trained"
            )
    return tuple(notes)


def adapter_architecture(
    ckpt: Checkpoint,
    roles: Sequence[RoleMatch],
    config: Mapping[str, Any] | None,
) -> Architecture | None:
    """The adapter as `config` (a parsed adapter_config.json) states it, or as its shapes imply (`config` None):
    one layer per file module, each LoRA module at the config's rank for it (rank_pattern honoured), the other
    modules (modules_to_save copies, saved base layers) as their own tensors imply. None when no module is a LoRA
    module and no config says which peft type the file is."""
    specs = file_specs(ckpt, roles)
    adapted = [s for s in specs if isinstance(s, LoRA)]
    algos = _lycoris_algos(roles) if config is None else []
    if not adapted and not algos:  # another peft type, as its config says; no adapter without it
        return None if config is None else _other_type(config, specs)
    if algos:
        ranked = [s for s in specs if isinstance(s, LoRA | LoHa | LoKr)]
        hyper = _hyperparameters(None, ranked, roles, algos)
        return Architecture(ARCHITECTURE, hyper, tuple(specs), _notes(None, specs, roles, algos))
    if config is not None:
        if config.get("peft_type") == "ADALORA":
            init_r, masks = _positive(config.get("init_r")), _adalora_ranks(config)
            specs = [_stated_adalora(init_r, masks, s) if isinstance(s, LoRA) else s for s in specs]
        else:
            ranks = Ranks.of(config)
            specs = [_stated(config, ranks, s) if isinstance(s, LoRA) else s for s in specs]
    hyper = _hyperparameters(config, adapted, roles)
    return Architecture(ARCHITECTURE, hyper, tuple(specs), _notes(config, specs, roles))


def _lycoris_algos(roles: Sequence[RoleMatch]) -> list[str]:
    """LyCORIS' algorithms whose factors a file of kohya-ss' layout holds, when one is not LoRA (a file of LoRA
    factors only reads as LoRA's); none for any other file."""
    rules = set(map(attrgetter("rule_id"), roles))
    if not {"lycoris.loha", "lycoris.lokr"} & rules:
        return []
    return [algo for rule, algo in LYCORIS_ALGOS.items() if rule in rules]


def _prompt_table(config: Mapping[str, Any]) -> Embedding | None:
    """The virtual tokens' table a prompt-learning config states: num_virtual_tokens x num_transformer_submodules
    rows of token_dim (prefix tuning: of num_layers x 2 x token_dim)."""
    columns = PROMPT_COLUMNS.get(config.get("peft_type"))  # type: ignore[arg-type]
    tokens, dim = _positive(config.get("num_virtual_tokens")), _positive(config.get("token_dim"))
    submodules = _positive(config.get("num_transformer_submodules")) or 1
    layers = _positive(config.get("num_layers")) if columns == 2 else 1
    if columns is None or tokens is None or dim is None or layers is None:
        return None
    return Embedding(tokens * submodules, columns * layers * dim, name=PROMPT_TABLE)


def _other_type(config: Mapping[str, Any], specs: Sequence[LayerSpec]) -> Architecture:
    """A peft type other than LoRA: its modules as the file holds them, a prompt-learning table as its config
    states it."""
    peft_type = config.get("peft_type")
    table = _prompt_table(config)
    if table is not None:
        specs = [table if getattr(s, "name", None) == PROMPT_TABLE else s for s in specs]
    ranked = [type(s).__name__ for s in specs if isinstance(s, LoHa | LoKr)]
    if ranked:  # LoHa's and LoKr's ranks as LoRA's: `r`, `rank_pattern`
        ranks = Ranks.of(config)
        specs = [_at_rank(s, ranks.stated(s.name)) if isinstance(s, LoHa | LoKr) else s for s in specs]
    hyper: dict[str, Any] = {"peft_type": peft_type, "r": _positive(config.get("r"))}
    if table is not None:
        hyper |= {key: _positive(config.get(key)) for key in PROMPT_KEYS}
    pattern = _pattern(config, "rank_pattern") if ranked else {}
    if pattern:
        hyper["rank_pattern"] = _listed((f"{k}:{v}" for k, v in pattern.items()), len(pattern))
    hyper |= {"targets": _text(config.get("target_modules")), "modules_to_save": _text(config.get("modules_to_save"))}
    hyper["base_model"] = _text(config.get("base_model_name_or_path"))
    said_type = f"peft_type {_short(str(peft_type))!r}"
    if ranked:
        notes = [
            f"{said_type}: each {' and '.join(sorted(set(ranked)))} module checked against the config's rank for it, "
            "the others as the file holds"
        ]
        notes.extend(_unread(config))
    else:
        notes = [] if table is not None else [f"{said_type}: each adapted module as the file holds it"]
    said = SAVED_NOT_TRAINED.get(peft_type)  # type: ignore[arg-type]
    if said is not None:
        notes.append(said)
    hyper = {k: v for k, v in hyper.items() if v is not None}
    return Architecture(OTHER_ARCHITECTURE, hyper, tuple(specs), tuple(notes))
