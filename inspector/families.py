"""Architecture families as data: module-path templates -> layer kinds sized by hyperparameters.

A `Family` is one table entry: the `model_type`s of its config.json, the prefixes its checkpoints put
before the model (`model.`, `bert.`...), and its `Part`s. A part is a module path relative to that
prefix (`layers.{i}.self_attn.q_proj`; `{i}` runs over `layers`, `{j}` over `decoder_layers`, `{k}` over
`vision_layers` (a second tower), `{e}` over `experts`, `{d}` over `deepstack` mergers), a layer kind and the
hyperparameters that size it. Hyperparameters come from the file's config when there is one, else from the shapes
named in `reads`, then from the family's defaults; `derive` fills the usual relations (head_dim = d_model / heads,
q_dim = heads x head_dim...).

Facts are read from the file, never assumed: whether a projection has a bias or a norm a shift, and
whether an optional part (a q/k norm, Gemma 2's extra norms, a pooler, T5's gated `wi_0`/`wi_1`) is
there at all. What the formula then states is the size of every module; a module of another size, a
missing one or one no part names inside the model is a real difference and is reported as such.
Modules outside the model prefix are task heads (`classifier`, `cls.predictions`...), counted from
their own shapes.

Adding a family is one `Family(...)` entry in `ENTRIES` (`lambda: Family(...)`), then `python -m inspector.families`
to write the index (`inspector/family_index.py`: each family's entry, each model type's families by name). Each entry
is made on first use: a config's model type makes only its families (`FAMILIES_BY_MODEL_TYPE`), a name only its own
(`FAMILY_BY_NAME`), and `FAMILIES` every one, in the table's order. `inspector.family_check` checks a file against one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping

from inspector.errors import SpecError
from inspector.recordtype import field, record, replace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# placeholder -> count (`{d}`: Qwen3-VL's deepstack mergers)
COUNTS = {"i": "layers", "j": "decoder_layers", "k": "vision_layers", "e": "experts", "d": "deepstack"}


@record(frozen=True)
class Part:
    """One module of a family.

    Attributes:
        path: module path relative to the family's prefix; a leading '/' puts it outside the prefix (heads).
        kind: 'linear' (dims: in, out), 'embedding' (rows, dim), 'norm' (features), 'conv' (out, in, *kernel),
            'tensor' (the shape of a bare learned tensor).
        dims: hyperparameter names, 'name+N' / 'name*N', or integers.
        bias: the hyperparameter that says (where the file cannot) whether it has a bias / a norm a shift.
        when: an optional part: expected where the file has it (or, in a formula, where this hyperparameter is true).
        tied: the part this one shares its matrix with when the config ties them (an LM head).
        role: the role of its tensors (`inspector.roles.Role` values); empty: `part_role` decides from kind and dims.
        over: the hyperparameter listing the layers `{i}` runs over where not all have the part (Llama 4's MoE and
            dense layers): read off the file (the layers holding the part), else the family's `derive`.
    """

    path: str
    kind: str
    dims: tuple[str | int, ...]
    bias: str | None = None
    when: str | None = None
    tied: str | None = None
    role: str = ""
    over: str | None = None


FEEDFORWARD = ("feedforward", "feedforward*2", "expert_ff", "shared_ff")
FFN_GATE, FFN_UP, FFN_DOWN = "feedforward_gate", "feedforward_up", "feedforward_down"  # (`inspector.roles.Role`s)
GATES = ("gate_proj", "w1", "wi_0")


def part_role(part: Part) -> str:
    """A part's role: stated, else read off its kind and the hyperparameters that size it."""
    if part.role:
        return part.role
    leaf = part.path.rsplit(".", 1)[-1]
    if part.kind == "embedding":
        return "position_embedding" if "position" in part.path else "embedding"
    if part.kind == "linear":
        inputs, outputs = part.dims
        if outputs == "qkv_dim":
            return "attention_qkv"
        if outputs == "experts":
            return "moe_router"
        if outputs == "vocab":
            return "output_head"
        if inputs in FEEDFORWARD:
            return FFN_DOWN
        if outputs in FEEDFORWARD:
            return FFN_GATE if leaf in GATES else FFN_UP
        return "dense"
    return {"norm": "norm", "conv": "conv"}.get(part.kind, "learned_tensor")


@record(frozen=True)
class Family:
    name: str
    description: str
    model_types: tuple[str, ...]
    bases: tuple[str, ...]
    parts: tuple[Part, ...]
    reads: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    defaults: Mapping[str, Any] = field(default_factory=dict)
    config: Mapping[str, str] = field(default_factory=dict)  # family-specific config keys (dotted: nested)
    stacks: tuple[str, ...] = ()  # prefixes expected only when the file has them (a decoder, a second tower)
    derive: Callable[[dict[str, Any]], None] | None = None
    # without a config, found only where every layer holds its layer parts: a hybrid whose other layers are attention
    # (Nemotron-H, Falcon-H1, Bamba) is another model, not this one with modules missing
    uniform: bool = False
    # found only where the file's config names one of its model types: its modules are a part of other models' too (an
    # MLA decoder's are DeepSeek's, Cohere's and OLMo's a Llama's but norms), so names alone would take another model
    # for it
    stated_only: bool = False
    # its sizes are the config's `text_config`'s (a vision-language model's config: its language model's words there)
    text_config: bool = False
    # sizes a layer may have its own of (Laguna's query heads): read in every layer holding the module its `reads` names
    # (`h["per_layer"]`, a list over the layers), each layer's parts sized by its own
    per_layer: tuple[str, ...] = ()


# config.json keys, by hyperparameter, across transformers' families (the first present wins)
CONFIG_KEYS: Mapping[str, tuple[str, ...]] = {
    "vocab": ("vocab_size",),
    "d_model": ("hidden_size", "n_embd", "d_model", "dim"),
    "layers": ("num_hidden_layers", "n_layer", "num_layers", "n_layers", "encoder_layers"),
    "decoder_layers": ("num_decoder_layers", "decoder_layers"),
    "heads": ("num_attention_heads", "n_head", "num_heads", "n_heads", "encoder_attention_heads"),
    "kv_heads": ("num_key_value_heads", "num_kv_heads"),
    "head_dim": ("head_dim", "d_kv"),
    "feedforward": ("intermediate_size", "n_inner", "ffn_dim", "d_ff", "hidden_dim", "encoder_ffn_dim"),
    "positions": ("max_position_embeddings", "n_positions"),
    "token_types": ("type_vocab_size",),
    "experts": ("num_local_experts", "num_experts"),
    "expert_ff": ("moe_intermediate_size",),
    "shared_ff": ("shared_expert_intermediate_size",),
    "tied": ("tie_word_embeddings",),
    "attention_bias": ("attention_bias",),
    "mlp_bias": ("mlp_bias",),
    "channels": ("num_channels",),
    "patch": ("patch_size",),
    "image_size": ("image_size",),
}


def derive_transformer(h: dict[str, Any]) -> None:
    """The relations every transformer family shares, for values neither the config nor the shapes gave."""
    d = h.get("d_model")
    if h.get("heads") and d and not h.get("head_dim"):
        if d % h["heads"]:
            raise SpecError(f"heads={h['heads']} does not divide d_model={d}")
        h["head_dim"] = d // h["heads"]
    if h.get("kv_dim") and h.get("head_dim") and not h.get("kv_heads") and h["kv_dim"] % h["head_dim"] == 0:
        h["kv_heads"] = h["kv_dim"] // h["head_dim"]  # (the k/v projection's shape says how many heads it holds)
    if h.get("heads") and not h.get("kv_heads"):
        h["kv_heads"] = h["heads"]
    if h.get("head_dim") and h.get("heads") and not h.get("q_dim"):
        h["q_dim"] = h["heads"] * h["head_dim"]
    if h.get("head_dim") and h.get("kv_heads") and not h.get("kv_dim"):
        h["kv_dim"] = h["kv_heads"] * h["head_dim"]
    h.setdefault("q_dim", d)
    h.setdefault("kv_dim", d)
    if d and not h.get("feedforward"):
        h["feedforward"] = 4 * d
    if h.get("q_dim") and h.get("kv_dim"):
        h.setdefault("qkv_dim", h["q_dim"] + 2 * h["kv_dim"])
    if h.get("image_size") and h.get("patch") and not h.get("patches"):
        h["patches"] = (h["image_size"] // h["patch"]) ** 2
    h.setdefault("decoder_layers", h.get("layers"))


def _linear(path: str, inputs: str | int, outputs: str | int, bias: str | None = None, **kw: Any) -> Part:
    return Part(path, "linear", (inputs, outputs), bias, **kw)


def _norm(path: str, features: str = "d_model", shift: str | None = "norm_shift", **kw: Any) -> Part:
    return Part(path, "norm", (features,), shift, **kw)


def _attention(prefix: str, q: str, k: str, v: str, o: str, bias: str = "attention_bias") -> tuple[Part, ...]:
    return (
        _linear(f"{prefix}.{q}", "d_model", "q_dim", bias, role="attention_query"),
        _linear(f"{prefix}.{k}", "d_model", "kv_dim", bias, role="attention_key"),
        _linear(f"{prefix}.{v}", "d_model", "kv_dim", bias, role="attention_value"),
        _linear(f"{prefix}.{o}", "q_dim", "d_model", bias, role="attention_output"),
    )


UP_DOWN_MLP = (  # a two-layer MLP named as Llama's (Arcee, Jais 2, Apertus)
    _linear("layers.{i}.mlp.up_proj", "d_model", "feedforward", "mlp_bias"),
    _linear("layers.{i}.mlp.down_proj", "feedforward", "d_model", "mlp_bias"),
)
GATED_MLP = (_linear("layers.{i}.mlp.gate_proj", "d_model", "feedforward", "mlp_bias"), *UP_DOWN_MLP)  # Llama's
FUSED_GATED_MLP = (  # a gated MLP whose gate and up projections are one (Phi-3's, GLM's)
    _linear("layers.{i}.mlp.gate_up_proj", "d_model", "feedforward*2", "mlp_bias"),
    _linear("layers.{i}.mlp.down_proj", "feedforward", "d_model", "mlp_bias"),
)
LLAMA_LAYER = (
    *_attention("layers.{i}.self_attn", "q_proj", "k_proj", "v_proj", "o_proj"),
    _norm("layers.{i}.self_attn.q_norm", "head_dim", when="qk_norm"),
    _norm("layers.{i}.self_attn.k_norm", "head_dim", when="qk_norm"),
    _norm("layers.{i}.input_layernorm"),
    _norm("layers.{i}.post_attention_layernorm"),
    _norm("layers.{i}.pre_feedforward_layernorm", when="sandwich_norms"),
    _norm("layers.{i}.post_feedforward_layernorm", when="sandwich_norms"),
)
DECODER_ENDS = (
    Part("embed_tokens", "embedding", ("vocab", "d_model")),
    _norm("norm"),
    _linear("/lm_head", "d_model", "vocab", "head_bias", tied="embed_tokens"),
)
QWEN_SHARED_EXPERT = (  # Qwen2/3-MoE's optional gated shared expert, in either layout of the routed experts
    _linear("layers.{i}.mlp.shared_expert.gate_proj", "d_model", "shared_ff", when="shared_expert"),
    _linear("layers.{i}.mlp.shared_expert.up_proj", "d_model", "shared_ff", when="shared_expert"),
    _linear("layers.{i}.mlp.shared_expert.down_proj", "shared_ff", "d_model", when="shared_expert"),
    _linear("layers.{i}.mlp.shared_expert_gate", "d_model", 1, when="shared_expert"),
)
GPT_NEOX_BODY = (  # GPT-NeoX / Pythia but the head, whose name differs between the hub and memory
    Part("embed_in", "embedding", ("vocab", "d_model")),
    _norm("layers.{i}.input_layernorm"),
    _norm("layers.{i}.post_attention_layernorm"),
    _linear("layers.{i}.attention.query_key_value", "d_model", "qkv_dim", "attention_bias"),
    _linear("layers.{i}.attention.dense", "d_model", "d_model", "attention_bias", role="attention_output"),
    _linear("layers.{i}.mlp.dense_h_to_4h", "d_model", "feedforward", "mlp_bias"),
    _linear("layers.{i}.mlp.dense_4h_to_h", "feedforward", "d_model", "mlp_bias"),
    _norm("final_layer_norm"),
)
GPT_NEOX_SIZES: tuple[Mapping[str, tuple[str, int]], Mapping[str, Any]] = (  # its reads and defaults
    {"vocab": ("embed_in", 0), "d_model": ("embed_in", 1), "feedforward": ("layers.0.mlp.dense_h_to_4h", 0)},
    {"tied": False, "attention_bias": True, "mlp_bias": True, "norm_shift": True, "head_bias": False},
)

GPT2_PARTS = (  # GPT-2's modules, as Conv1D (in, out) weights in GPT-2, Linear (out, in) ones in GPTBigCode
    Part("wte", "embedding", ("vocab", "d_model")),
    Part("wpe", "embedding", ("positions", "d_model")),
    _norm("h.{i}.ln_1"),
    _linear("h.{i}.attn.c_attn", "d_model", "qkv_dim", "attention_bias"),
    _linear("h.{i}.attn.c_proj", "d_model", "d_model", "attention_bias", role="attention_output"),
    _norm("h.{i}.ln_2"),
    _linear("h.{i}.mlp.c_fc", "d_model", "feedforward", "mlp_bias"),
    _linear("h.{i}.mlp.c_proj", "feedforward", "d_model", "mlp_bias"),
    _norm("ln_f"),
    _linear("/lm_head", "d_model", "vocab", "head_bias", tied="wte"),
)


def _post_normed_layer(q_norm: str, k_norm: str) -> tuple[Part, ...]:
    """OLMo 2's and EXAONE 4's layer: Llama's attention and gated MLP, each normed after (no norm before), q/k norms
    `q_norm` and `k_norm` wide (the whole projections, or a head)."""
    return (
        *_attention("layers.{i}.self_attn", "q_proj", "k_proj", "v_proj", "o_proj"),
        _norm("layers.{i}.self_attn.q_norm", q_norm),
        _norm("layers.{i}.self_attn.k_norm", k_norm),
        _norm("layers.{i}.post_attention_layernorm"),
        _norm("layers.{i}.post_feedforward_layernorm"),
        *GATED_MLP,
    )


# multi-head latent attention (MiniCPM3's, DeepSeek-V2/V3's): low-rank queries, keys and values from one latent (`kv_a`:
# the latent and the shared rotary key), each latent normed
MLA_ATTENTION = (
    _linear("layers.{i}.self_attn.q_a_proj", "d_model", "q_lora", "attention_bias", role="attention_query"),
    _norm("layers.{i}.self_attn.q_a_layernorm", "q_lora"),
    _linear("layers.{i}.self_attn.q_b_proj", "q_lora", "q_mla", role="attention_query"),
    _linear("layers.{i}.self_attn.kv_a_proj_with_mqa", "d_model", "kv_a", "attention_bias"),
    _norm("layers.{i}.self_attn.kv_a_layernorm", "kv_lora"),
    _linear("layers.{i}.self_attn.kv_b_proj", "kv_lora", "kv_b"),
    _linear("layers.{i}.self_attn.o_proj", "o_in", "d_model", "attention_bias", role="attention_output"),
)
MLA_READS = {
    "q_lora": ("layers.0.self_attn.q_a_proj", 0),
    "q_mla": ("layers.0.self_attn.q_b_proj", 0),
    "kv_a": ("layers.0.self_attn.kv_a_proj_with_mqa", 0),
    "kv_lora": ("layers.0.self_attn.kv_a_layernorm", 0),
    "kv_b": ("layers.0.self_attn.kv_b_proj", 0),
    "o_in": ("layers.0.self_attn.o_proj", 1),
}
MLA_CONFIG = {  # (the config's words for the latent's sizes)
    "q_lora_rank": "q_lora",
    "kv_lora_rank": "kv_lora",
    "qk_nope_head_dim": "nope",
    "qk_rope_head_dim": "rope",
    "v_head_dim": "v_head",
}


def _mla_derive(h: dict[str, Any]) -> None:
    """The latent attention's projection sizes from its heads and head parts, where the file's shapes gave none."""
    heads, nope, rope, v = (h.get(k) for k in ("heads", "nope", "rope", "v_head"))
    if heads and nope and rope:
        h.setdefault("q_mla", heads * (nope + rope))
    if h.get("kv_lora") and rope:
        h.setdefault("kv_a", h["kv_lora"] + rope)
    if heads and nope and v:
        h.setdefault("kv_b", heads * (nope + v))
    if heads and v:
        h.setdefault("o_in", heads * v)
    derive_transformer(h)


DECODER_READS = {  # the sizes a Llama-style decoder's embedding and attention give
    "vocab": ("embed_tokens", 0),
    "d_model": ("embed_tokens", 1),
    "q_dim": ("layers.0.self_attn.q_proj", 0),
    "kv_dim": ("layers.0.self_attn.k_proj", 0),
}
# a Llama-style decoder's facts for a formula: untied, no biases, norms without a shift (a file says its own)
DECODER_DEFAULTS = {"tied": False, "attention_bias": False, "mlp_bias": False, "norm_shift": False, "head_bias": False}
LLAMA_READS = {**DECODER_READS, "head_dim": ("layers.0.self_attn.q_norm", 0)}


def _seq2seq_layer(stack: str, placeholder: str, cross: bool) -> tuple[Part, ...]:
    layer = f"{stack}.layers.{{{placeholder}}}".lstrip(".")
    parts = [
        *_attention(f"{layer}.self_attn", "q_proj", "k_proj", "v_proj", "out_proj", "attention_bias"),
        _norm(f"{layer}.self_attn_layer_norm"),
        _linear(f"{layer}.fc1", "d_model", "feedforward", "mlp_bias"),
        _linear(f"{layer}.fc2", "feedforward", "d_model", "mlp_bias"),
        _norm(f"{layer}.final_layer_norm"),
    ]
    if cross:
        parts += [
            *_attention(f"{layer}.encoder_attn", "q_proj", "k_proj", "v_proj", "out_proj", "attention_bias"),
            _norm(f"{layer}.encoder_attn_layer_norm"),
        ]
    return tuple(parts)


def _bert_layer(stack: str, q: str, k: str, v: str) -> tuple[Part, ...]:
    layer = f"{stack}.layer.{{i}}"
    return (
        *_attention(f"{layer}.attention", f"self.{q}", f"self.{k}", f"self.{v}", "output.dense"),
        _norm(f"{layer}.attention.output.LayerNorm"),
        _linear(f"{layer}.intermediate.dense", "d_model", "feedforward", "mlp_bias"),
        _linear(f"{layer}.output.dense", "feedforward", "d_model", "mlp_bias"),
        _norm(f"{layer}.output.LayerNorm"),
    )


def _t5_stack(stack: str, placeholder: str, cross: bool) -> tuple[Part, ...]:
    block = f"{stack}.block.{{{placeholder}}}"
    parts = [
        *_attention(f"{block}.layer.0.SelfAttention", "q", "k", "v", "o"),
        Part(f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias", "embedding", ("buckets", "heads")),
        _norm(f"{block}.layer.0.layer_norm"),
    ]
    ff = 2 if cross else 1
    if cross:
        parts += [
            *_attention(f"{block}.layer.1.EncDecAttention", "q", "k", "v", "o"),
            _norm(f"{block}.layer.1.layer_norm"),
        ]
    parts += [
        _linear(f"{block}.layer.{ff}.DenseReluDense.wi", "d_model", "feedforward", "mlp_bias", when="plain_ff"),
        _linear(f"{block}.layer.{ff}.DenseReluDense.wi_0", "d_model", "feedforward", "mlp_bias", when="gated_ff"),
        _linear(f"{block}.layer.{ff}.DenseReluDense.wi_1", "d_model", "feedforward", "mlp_bias", when="gated_ff"),
        _linear(f"{block}.layer.{ff}.DenseReluDense.wo", "feedforward", "d_model", "mlp_bias"),
        _norm(f"{block}.layer.{ff}.layer_norm"),
        _norm(f"{stack}.final_layer_norm"),
    ]
    return tuple(parts)


def _t5_derive(h: dict[str, Any]) -> None:
    if h.get("heads") and h.get("head_dim"):
        h.setdefault("q_dim", h["heads"] * h["head_dim"])
        h.setdefault("kv_dim", h["heads"] * h["head_dim"])
    derive_transformer(h)


def _vit_derive(h: dict[str, Any]) -> None:
    derive_transformer(h)
    if h.get("patches") and not h.get("positions"):
        h["positions"] = h["patches"] + 1


def _clip_tower(prefix: str, placeholder: str, d: str, ff: str) -> tuple[Part, ...]:
    """A CLIP encoder tower: pre-norm layers of q/k/v/out projections and a two-layer MLP, all with biases."""
    layer = f"{prefix}.encoder.layers.{{{placeholder}}}"
    roles = {"q_proj": "attention_query", "k_proj": "attention_key", "v_proj": "attention_value"}
    return (
        *(Part(f"{layer}.self_attn.{n}", "linear", (d, d), "attention_bias", role=r) for n, r in roles.items()),
        Part(f"{layer}.self_attn.out_proj", "linear", (d, d), "attention_bias", role="attention_output"),
        _norm(f"{layer}.layer_norm1", d),
        Part(f"{layer}.mlp.fc1", "linear", (d, ff), "mlp_bias", role=FFN_UP),
        Part(f"{layer}.mlp.fc2", "linear", (ff, d), "mlp_bias", role=FFN_DOWN),
        _norm(f"{layer}.layer_norm2", d),
    )


def _mamba_mixer(mixer: str) -> tuple[Part, ...]:
    """A Mamba (1) mixer's parts (`layers.{i}.<mixer>`: in_proj to x and the gate, a depthwise conv1d over x, x_proj to
    the time-step rank and B and C, dt_proj, per-channel A_log and D, out_proj): Mamba's `mixer`, Jamba's `mamba`."""
    return (
        _linear(f"layers.{{i}}.{mixer}.in_proj", "d_model", "inner*2", "ssm_bias", role="dense"),
        Part(f"layers.{{i}}.{mixer}.conv1d", "conv", ("inner", 1, "conv_kernel"), "conv_bias"),
        _linear(f"layers.{{i}}.{mixer}.x_proj", "inner", "x_dim", role="dense"),
        _linear(f"layers.{{i}}.{mixer}.dt_proj", "dt_rank", "inner", "dt_bias", role="dense"),
        _linear(f"layers.{{i}}.{mixer}.out_proj", "inner", "d_model", "ssm_bias", role="dense"),
        Part(f"layers.{{i}}.{mixer}.A_log", "tensor", ("inner", "state"), role="learned_tensor"),
        Part(f"layers.{{i}}.{mixer}.D", "tensor", ("inner",), role="learned_tensor"),
    )


def _mamba_derive(h: dict[str, Any]) -> None:
    """Mamba's sizes as MambaConfig relates them: inner = expand x d_model, the time-step rank ceil(d_model / 16),
    x_proj's output the rank and two state vectors (B and C); MambaConfig's defaults for what nothing gave."""
    for name, value in (("state", 16), ("conv_kernel", 4), ("expand", 2)):
        h.setdefault(name, value)
    d = h.get("d_model")
    if d and not h.get("inner"):
        h["inner"] = h.get("expand", 2) * d
    if d and not h.get("dt_rank"):
        h["dt_rank"] = -(-d // 16)
    if h.get("dt_rank") and h.get("state") and not h.get("x_dim"):
        h["x_dim"] = h["dt_rank"] + 2 * h["state"]


def _rwkv_derive(h: dict[str, Any]) -> None:
    """RWKV's sizes as RwkvConfig relates them: the time-mixing width d_model where unset, the channel mixing's
    4 x d_model (`derive_transformer`); the input LayerNorm in the first block only."""
    h.setdefault("pre_ln_layers", [0])
    if h.get("d_model") and not h.get("att_dim"):
        h["att_dim"] = h["d_model"]
    derive_transformer(h)


GRIFFIN_BLOCKS = ("recurrent", "recurrent", "attention")  # (RecurrentGemmaConfig's default `block_types`)


def _stated_kinds(h: dict[str, Any], **layers: list[int]) -> None:
    """Layer kinds a config places (a hybrid's `block_types`, `layer_types`): each kind's parts (`when=` the kind's
    name) are expected as the config states them, in the layers it lists (`h["stated_parts"]`), so a file holding none
    of a kind its config places is reported, and one holding a kind its config places nowhere; without a config the
    kinds are those the file holds, a model may have none of one."""
    for name, listed in layers.items():
        h[name] = bool(listed)
    h["stated_parts"] = frozenset(h.get("stated_parts", ())) | set(layers)


def _recurrent_gemma_derive(h: dict[str, Any]) -> None:
    """RecurrentGemma's layers as its config's `block_types` cycle over them (recurrent, recurrent, attention: the
    config's in place of the file's, as `mlp_layer_types` are; a formula without them RecurrentGemmaConfig's default),
    its MLP half `intermediate_size` wide, the RG-LRU's gates block-diagonal per head (lru_width / heads)."""
    types, layers = h.get("block_types"), int(h.get("layers") or 0)
    if types or "recurrent_layers" not in h:  # (a file's own layers where no config states them)
        types = types or GRIFFIN_BLOCKS
        kinds = [types[i % len(types)] for i in range(layers)]
        h["attention_layers"] = [i for i, kind in enumerate(kinds) if kind == "attention"]
        h["recurrent_layers"] = [i for i, kind in enumerate(kinds) if kind != "attention"]
        _stated_kinds(h, attention_blocks=h["attention_layers"], recurrent_blocks=h["recurrent_layers"])
    h.setdefault("conv_kernel", 4)  # (RecurrentGemmaConfig's `conv1d_width`: a formula's words may not say)
    if h.get("intermediate"):
        h["feedforward"] = h["intermediate"] // 2
    if h.get("lru") and h.get("heads") and not h.get("lru_block"):
        h["lru_block"] = h["lru"] // h["heads"]
    derive_transformer(h)


def _xlstm_derive(h: dict[str, Any]) -> None:
    """xLSTM's widths as xLSTMConfig relates them, where it states its factors: q and k `qk_dim_factor` x d_model, v
    `v_dim_factor` x d_model (each truncated), the feed-forward `ffn_proj_factor` x d_model rounded up to
    `ffn_round_up_to_multiple_of`; else as the file's shapes give them (a fused layout's q and k from its
    qkv_opreact), or xLSTMConfig's default factors (0.5 and 1)."""
    d = h.get("d_model")
    if d and h.get("qk_factor"):
        h["qk_dim"] = int(d * h["qk_factor"])
    if d and h.get("v_factor"):
        h["v_dim"] = int(d * h["v_factor"])
    if d and h.get("ffn_factor"):
        multiple = int(h.get("ffn_multiple") or 1)
        h["feedforward"] = int((d * h["ffn_factor"] + multiple - 1) // multiple * multiple)
    if h.get("qkvo_dim") and h.get("v_dim") and not h.get("qk_dim"):
        h["qk_dim"] = (h["qkvo_dim"] - 2 * h["v_dim"]) // 2
    if h.get("if_heads") and not h.get("heads"):
        h["heads"] = h["if_heads"] // 2
    if d and not h.get("qk_dim"):
        h["qk_dim"] = d // 2
    if d and not h.get("v_dim"):
        h["v_dim"] = d
    h.setdefault("qkvo_dim", 2 * h.get("qk_dim", 0) + 2 * h.get("v_dim", 0))
    if h.get("heads"):
        h.setdefault("if_heads", 2 * h["heads"])
    derive_transformer(h)


def _mamba2_mixer(heads: str, inner: str, conv: str, in_dim: str, mixer: str = "mixer") -> tuple[Part, ...]:
    """A Mamba-2 mixer's parts (`layers.{i}.<mixer>`: the fused in_proj, the conv1d over x, B and C, per-head dt_bias,
    A_log and D, the gated norm, out_proj), sized by the words given (Nemotron-H's and Falcon-H1's stand beside their
    attention's); Mamba-2's and Nemotron-H's `mixer`, Falcon-H1's `mamba`."""
    layer = f"layers.{{i}}.{mixer}"
    return (
        _linear(f"{layer}.in_proj", "d_model", in_dim, "ssm_bias", role="dense"),
        Part(f"{layer}.conv1d", "conv", (conv, 1, "conv_kernel"), "conv_bias"),
        Part(f"{layer}.dt_bias", "tensor", (heads,), role="learned_tensor"),
        Part(f"{layer}.A_log", "tensor", (heads,), role="learned_tensor"),
        Part(f"{layer}.D", "tensor", (heads,), role="learned_tensor"),
        _norm(f"{layer}.norm", inner),
        _linear(f"{layer}.out_proj", inner, "d_model", "ssm_bias", role="dense"),
    )


def _mamba2_widths(
    h: dict[str, Any], heads: str = "heads", head_dim: str = "head_dim", inner: str = "inner", conv: str = "conv_dim",
    in_dim: str = "in_dim",
) -> None:  # fmt: skip
    """Mamba2Config's relations, under the words given: inner = heads x head_dim, the convolution over x, B and C
    (inner + 2 x groups x state channels), in_proj's output z, x, B, C and one time step per head."""
    if h.get(heads) and h.get(head_dim) and not h.get(inner):
        h[inner] = h[heads] * h[head_dim]
    if h.get(inner) and h.get("groups") and h.get("state"):
        h.setdefault(conv, h[inner] + 2 * h["groups"] * h["state"])
    if h.get(conv) and h.get(inner) and h.get(heads):
        h.setdefault(in_dim, h[conv] + h[inner] + h[heads])


def _widths_from_config(h: dict[str, Any], inner: str, conv: str, in_dim: str, inner_from: str | None = None) -> None:
    """Where a config states the sizes (`from_shapes` false), the Mamba-2 widths read off the file give way to those the
    relations (`_mamba2_widths`) derive from the config's sizes, each where it states what the width derives from: the
    convolution's where it states the groups and the state (which no tensor shows alone), the inner one where it states
    `inner_from` (Nemotron-H's head width, inner = heads x it; Mamba-2's `expand`, inner = expand x d_model; a GGUF
    file's metadata states neither), in_proj's always. A file whose widths are not its config's is then reported, not
    read as it is."""
    if h.get("from_shapes") is not False:
        return
    stated = ((inner, inner_from is not None and h.get(inner_from)), (conv, h.get("groups") and h.get("state")))
    for width in (*(width for width, given in stated if given), in_dim):
        h.pop(width, None)


def _mamba2_derive(h: dict[str, Any]) -> None:
    """Mamba-2's sizes as Mamba2Config relates them (`_mamba2_widths`), its inner width `expand` x d_model where that is
    stated (Mamba2Mixer's `intermediate_size`), its defaults for what nothing gave."""
    _widths_from_config(h, "inner", "conv_dim", "in_dim", inner_from="expand")
    if h.get("expand") and h.get("d_model") and not h.get("inner"):
        h["inner"] = int(h["expand"]) * int(h["d_model"])
    if h.get("inner") and h.get("heads") and not h.get("head_dim"):
        h["head_dim"] = h["inner"] // h["heads"]
    for name, value in (("state", 128), ("groups", 8), ("conv_kernel", 4), ("head_dim", 64)):
        h.setdefault(name, value)
    _mamba2_widths(h)


def _other_layers(h: dict[str, Any], name: str, *placed: str) -> None:
    """`h[name]` where neither the file nor the config said: the layers none of the `placed` lists holds (a hybrid's
    layers of its other kind, a mixture of experts' dense ones)."""
    if name not in h:
        taken = set().union(*(h[p] for p in placed))
        h[name] = [i for i in range(int(h.get("layers") or 0)) if i not in taken]


def _stated_mlp_layers(h: dict[str, Any]) -> None:
    """The MoE and dense layers a config's `mlp_layer_types` states ("sparse": MoE, else dense) in place of those the
    file holds (a file of other layers than its config's is then reported); a layer past the list (the hub's MTP layer)
    as the file holds it."""
    types = h.get("mlp_types")
    if not types:
        return
    beyond = {kind: [i for i in h.get(kind) or () if i >= len(types)] for kind in ("moe_layers", "dense_layers")}
    h["moe_layers"] = [i for i, kind in enumerate(types) if kind == "sparse"] + beyond["moe_layers"]
    h["dense_layers"] = [i for i, kind in enumerate(types) if kind != "sparse"] + beyond["dense_layers"]


def _moe_derive(h: dict[str, Any]) -> None:
    """A mixture of experts' MoE layers as the configs place them (every `moe_step`-th, the last of each step:
    Llama 4's `interleave_moe_layer_step`, Qwen2/3-MoE's `decoder_sparse_step`; less Qwen's `mlp_only_layers`; none
    where there are no experts) where the file did not say, and the others dense."""
    derive_transformer(h)
    layers = int(h.get("layers") or 0)
    if "moe_layers" not in h:
        step, dense = int(h.get("moe_step") or 1), set(h.get("mlp_only") or ())
        moe = h.get("experts") != 0  # (no experts: every layer dense, as Qwen-MoE's `num_experts > 0` decides)
        h["moe_layers"] = [i for i in range(step - 1, layers, step) if moe and i not in dense]
    _other_layers(h, "dense_layers", "moe_layers")


def _clip_derive(h: dict[str, Any]) -> None:
    if h.get("v_image") and h.get("patch") and not h.get("v_pos"):
        h["v_pos"] = (h["v_image"] // h["patch"]) ** 2 + 1


# Granite MoE's defaults and config keys, in each of its layouts (its experts' size is the config's intermediate_size)
GRANITE_MOE_FACTS: tuple[Mapping[str, Any], Mapping[str, str]] = (
    {"tied": True, "attention_bias": False, "norm_shift": False, "head_bias": False},
    {"intermediate_size": "expert_ff", "shared_intermediate_size": "shared_ff"},
)
ROUTER = _linear("layers.{i}.mlp.gate", "d_model", "experts")
# a layer's experts stacked one tensor per projection, as llama.cpp's converter writes them (GGUF: `ffn_gate_exps`...)
STACKED_EXPERTS = (
    Part("layers.{i}.mlp.experts.gate_proj", "tensor", ("experts", "expert_ff", "d_model")),
    Part("layers.{i}.mlp.experts.up_proj", "tensor", ("experts", "expert_ff", "d_model")),
    Part("layers.{i}.mlp.experts.down_proj", "tensor", ("experts", "d_model", "expert_ff")),
)


def _feed_forward_stacked(ff: str) -> tuple[Part, ...]:
    """`STACKED_EXPERTS` under `feed_forward` (LFM2-MoE's, Jamba's and Llama 4's, as llama.cpp's converter writes them),
    their width the family's `ff`, each with its projection's role."""
    return tuple(
        replace(p, path=p.path.replace(".mlp.", ".feed_forward."), dims=tuple(ff if d == "expert_ff" else d
                for d in p.dims), role=role)
        for p, role in zip(STACKED_EXPERTS, (FFN_GATE, FFN_UP, FFN_DOWN), strict=True)
    )  # fmt: skip


def _expert_layouts(
    name: str,
    descriptions: tuple[str, str, str],
    model_types: tuple[str, ...],
    layer: tuple[Part, ...],
    shared: tuple[Part, ...],
    reads: Mapping[str, tuple[str, int]],
    defaults: Mapping[str, Any],
    config: Mapping[str, str] | None = None,
    dense: tuple[Part, ...] = (),
    derive: Callable[[dict[str, Any]], None] | None = None,
) -> tuple[Family, Family, Family]:
    """A mixture-of-experts family (a router `mlp.gate`, gated experts of expert_ff under `mlp.experts`) in its three
    layouts: one module per expert as the hub holds it, the experts fused as transformers 5 holds them in memory
    (what torch.save of its state dict writes), and stacked one tensor per projection as llama.cpp's converter
    writes them (GGUF); the file's tensors pick one (`FAMILIES_BY_MODEL_TYPE`). The router, experts and `shared`
    parts are in the MoE layers, `dense` (a dense MLP) in the others: the layers holding each, read off the file
    (else placed as the config says, `_moe_derive`, or `derive` where the family places them its own way)."""
    experts = "layers.{i}.mlp.experts"
    layouts = (
        (
            "",
            (
                _linear(experts + ".{e}.gate_proj", "d_model", "expert_ff"),
                _linear(experts + ".{e}.up_proj", "d_model", "expert_ff"),
                _linear(experts + ".{e}.down_proj", "expert_ff", "d_model"),
            ),
            ("layers.0.mlp.experts.0.up_proj", 0),
        ),
        (
            "-fused",
            (
                Part(experts + ".gate_up_proj", "tensor", ("experts", "expert_ff*2", "d_model")),
                Part(experts + ".down_proj", "tensor", ("experts", "d_model", "expert_ff")),
            ),
            ("layers.0.mlp.experts.down_proj", 2),
        ),
        ("-stacked", STACKED_EXPERTS, ("layers.0.mlp.experts.down_proj", 2)),
    )
    return tuple(  # type: ignore[return-value]
        Family(
            name + suffix,
            description,
            model_types,
            ("model.", ""),
            (
                *layer,
                *(replace(p, over="moe_layers") for p in (ROUTER, *parts, *shared)),
                *(replace(p, when="dense_mlp", over="dense_layers") for p in dense),
            ),
            {**reads, "expert_ff": expert_ff, "experts": ("layers.0.mlp.gate", 0)},
            {**defaults, "dense_mlp": True} if dense else defaults,
            config or {},
            derive=derive or _moe_derive,
        )
        for (suffix, parts, expert_ff), description in zip(layouts, descriptions, strict=True)
    )


# DeepSeek-V2/V3's MoE layers (GLM-4.5's too): a router (V3: beside a score correction, a buffer), routed experts of
# expert_ff and `n_shared` shared experts as one gated MLP of n_shared x expert_ff; the first `first_dense` layers
# (and, in V2, those off `moe_freq`) hold a dense MLP of feedforward
# (every DeepSeek and GLM-4.5 checkpoint has its shared experts: what tells a file of these from a Qwen-MoE one)
DEEPSEEK_SHARED_EXPERTS = (  # (a gated MLP of the dense layers' kind: its biases `mlp_bias`, DeepSeek-V2's and V3.2's)
    _linear("layers.{i}.mlp.shared_experts.gate_proj", "d_model", "shared_ff", "mlp_bias"),
    _linear("layers.{i}.mlp.shared_experts.up_proj", "d_model", "shared_ff", "mlp_bias"),
    _linear("layers.{i}.mlp.shared_experts.down_proj", "shared_ff", "d_model", "mlp_bias"),
)
DEEPSEEK_MOE_CONFIG = {
    "mlp_layer_types": "mlp_types",  # (V3.2's, GLM-4.7-Flash's, GLM-5's, EXAONE-MoE's, HunYuan v3's: over first_dense)
    "n_routed_experts": "experts",
    "n_shared_experts": "n_shared",
    "first_k_dense_replace": "first_dense",
    "moe_layer_freq": "moe_freq",
}
# The multi-token-prediction module the hub checkpoints of DeepSeek-V3 and GLM-4.5 hold after the last layer
# (`layers.{num_hidden_layers}`: a whole decoder layer, its two input norms, the projection of their concatenation, a
# head of its own; V3's own `embed_tokens` too): transformers drops it on load, so a file of such a layer holds more
# than `num_parameters()` prints, by exactly that layer. Expected where the file has them, in the layers that do.
MTP_MODULE = "mtp_module"  # (the `when` of every part of an MTP module: `family_check` says what their rows are)
MTP_PARTS = tuple(
    replace(p, when=MTP_MODULE, over="mtp_layers")
    for p in (
        _norm("layers.{i}.enorm"),
        _norm("layers.{i}.hnorm"),
        _linear("layers.{i}.eh_proj", "d_model*2", "d_model"),
        _norm("layers.{i}.shared_head.norm"),
        _linear("layers.{i}.shared_head.head", "d_model", "vocab", role="output_head"),
        Part("layers.{i}.embed_tokens", "embedding", ("vocab", "d_model")),
    )
)


def _hub_mtp(family: Family, own: tuple[Part, ...]) -> Family:
    """`family` with its MTP module as the hub's checkpoints hold it outside the model, under `mtp.` (Qwen3-Next's,
    Qwen3.5's, Nemotron 3's; transformers ignores `mtp.*` on load, `_keys_to_ignore_on_load_unexpected`): the family's
    layer parts under `mtp.layers.{i}.`, each in the MTP layers holding it (each layer the kind it is), and the module's
    `own` parts; all expected where the file has them."""
    layer = tuple(
        replace(p, path="/mtp." + p.path, when=MTP_MODULE, over="mtp." + (p.over or "layers"))
        for p in family.parts
        if p.path.startswith("layers.{i}.")
    )
    return replace(family, parts=(*family.parts, *layer, *own))


# Qwen3-Next's and Qwen3.5's MTP module's own parts (`mtp.fc` projects the normed embedding and hidden state together)
QWEN_HUB_MTP = tuple(
    replace(p, when=MTP_MODULE)
    for p in (
        _linear("/mtp.fc", "d_model*2", "d_model"),
        _norm("/mtp.pre_fc_norm_embedding"),
        _norm("/mtp.pre_fc_norm_hidden"),
        _norm("/mtp.norm"),
    )
)
# Nemotron 3's: DeepSeek's input norms and projection in its first layer (`MTP_PARTS`, as the family has them), a final
# norm in its last
NEMOTRON_HUB_MTP = (_norm("/mtp.layers.{i}.final_layernorm", when=MTP_MODULE, over="mtp.final_layers"),)


def _with_mtp_layers(h: dict[str, Any]) -> None:
    """The file's layers beyond the config's count, the MTP module's (`MTP_PARTS`: each a decoder layer too, its
    mixers those of the layers before it), counted among the layers."""
    mtp = h.get("mtp_layers") or []
    if mtp:
        h["layers"] = max(int(h.get("layers") or 0), max(mtp) + 1)


# DeepSeek's latent attention: its queries low-rank (q_a, q_b: V3, V2) or one projection (`q_lora_rank` null: V2-Lite);
# its kv_b_proj whole, or as llama.cpp's converter writes it since 2025-04: split per head into the keys' part,
# transposed (k_b_proj: heads, kv_lora, nope) and the values' (v_b_proj: heads, v_head, kv_lora), the same elements
DEEPSEEK_ATTENTION = (
    *(replace(p, when="q_low_rank") for p in MLA_ATTENTION[:3]),
    _linear("layers.{i}.self_attn.q_proj", "d_model", "q_mla", when="q_direct", role="attention_query"),
    *MLA_ATTENTION[3:5],
    replace(MLA_ATTENTION[5], when="kv_b_whole"),
    Part("layers.{i}.self_attn.k_b_proj", "tensor", ("heads", "kv_lora", "nope"), when="kv_b_split",
         role="attention_key"),
    Part("layers.{i}.self_attn.v_b_proj", "tensor", ("heads", "v_head", "kv_lora"), when="kv_b_split",
         role="attention_value"),
    *MLA_ATTENTION[6:],
)  # fmt: skip


# DeepSeek-V3.2's sparse attention (DSA): a lightning indexer beside the latent attention, its queries from the query
# latent (`index_heads` heads of `index_dim`), one key head through a LayerNorm, a weight per head
DSA_INDEXER = tuple(
    replace(p, when="dsa_indexer", over="indexer_layers")
    for p in (
        _linear("layers.{i}.self_attn.indexer.wq_b", "q_lora", "index_q"),
        _linear("layers.{i}.self_attn.indexer.wk", "d_model", "index_dim"),
        _norm("layers.{i}.self_attn.indexer.k_norm", "index_dim", "index_norm_shift"),
        _linear("layers.{i}.self_attn.indexer.weights_proj", "d_model", "index_heads"),
    )
)


def _deepseek_derive(h: dict[str, Any]) -> None:
    """DeepSeek's layer placement where the file did not say (MoE from layer `first_dense` on, every `moe_freq`-th),
    its shared experts' width, the MTP layers counted among the layers where the file holds them, and the latent
    attention's sizes (`_mla_derive`) where it has one."""
    _with_mtp_layers(h)
    _stated_mlp_layers(h)
    layers, first, freq = int(h.get("layers") or 0), int(h.get("first_dense", 0)), int(h.get("moe_freq") or 1)
    h.setdefault("moe_layers", [i for i in range(layers) if i >= first and i % freq == 0])
    if h.get("expert_ff") and h.get("n_shared"):  # (what the config or the words state: a formula's default not)
        h["shared_ff"] = h["expert_ff"] * h["n_shared"]
    h["dsa_indexer"] = bool(h.get("index_heads"))  # (a formula's words: the indexer's heads say there is one)
    h.setdefault("indexer_layers", list(range(layers)))
    if h.get("index_heads") and h.get("index_dim"):
        h.setdefault("index_q", h["index_heads"] * h["index_dim"])
    if h.get("q_direct_dim"):  # (read off q_proj: the queries' width without a low-rank latent)
        h.setdefault("q_mla", h["q_direct_dim"])
    if h.get("nope") and h.get("rope"):  # (a query head's width: d_model need not divide by the heads, GLM-4.7-Flash)
        h.setdefault("head_dim", h["nope"] + h["rope"])
    # (the latent's rank says which queries there are: a file's own parts say it where there is a file)
    h["q_low_rank"] = bool(h.get("q_lora"))
    h["q_direct"] = not h["q_low_rank"]
    h.setdefault("kv_b_split", False)  # (a formula's words: kv_b_proj whole unless said; a file says its own)
    h["kv_b_whole"] = not h["kv_b_split"]
    _mla_derive(h)
    _moe_derive(h)


# DeepSeek-V4's attention kinds (`layer_types`): sliding-window attention alone, or beside a compressor of the keys and
# values (`compress_rates`: every 4th token, CSA, whose two overlapping series are twice a head wide and which a
# lightning indexer with its own compressor scores; every 128th, HCA, one series a head wide); the hub's configs state
# them as `compress_ratios`, a rate a layer (0: sliding; DeepseekV4Config's `_COMPRESS_RATIO_TO_LAYER_TYPE`)
V4_SLIDING, V4_CSA, V4_HCA = "sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"
V4_RATIO_KINDS = {0: V4_SLIDING, 4: V4_CSA, 128: V4_HCA}


def _deepseek_v4_derive(h: dict[str, Any]) -> None:
    """DeepSeek-V4's sizes as DeepseekV4Config relates them: the layers' attention kinds and each compressor's rate and
    width from the config's `layer_types` (or `compress_ratios`) and `compress_rates` in place of the file's (a formula
    without them: DeepseekV4Config's default, two HCA layers then CSA and HCA in turn), the grouped output projection's
    widths, the hyper-connections' (`hc_mult` streams: (2 + hc) x hc mixing weights over hc x d_model); its shared
    expert is as wide as a routed one (`moe_intermediate_size`, whatever `n_shared_experts` says)."""
    layers, hd = int(h.get("layers") or 0), h.get("head_dim")
    kinds = h.get("attn_types")
    if not kinds and h.get("compress_ratios"):
        kinds = [V4_RATIO_KINDS.get(r, V4_HCA if r else V4_SLIDING) for r in h["compress_ratios"]]
        h.setdefault("rate_csa", next((r for r in h["compress_ratios"] if V4_RATIO_KINDS.get(r) == V4_CSA), None))
    if not kinds and "compressed_layers" not in h:  # (a formula's words)
        kinds = [V4_HCA] * min(layers, 2) + [V4_CSA if i % 2 else V4_HCA for i in range(max(layers - 2, 0))]
    h.setdefault("rate_csa", 4)
    h.setdefault("rate_hca", 128)
    if kinds:
        kinds = list(kinds)[:layers]
        h["compressed_layers"] = [i for i, kind in enumerate(kinds) if kind != V4_SLIDING]
        h["csa_layers"] = [i for i, kind in enumerate(kinds) if kind == V4_CSA]
        rates = h.get("compress_ratios") or [{V4_CSA: h["rate_csa"], V4_HCA: h["rate_hca"]}.get(k) for k in kinds]
        widths = [None if k == V4_SLIDING else 2 * hd if k == V4_CSA and hd else hd for k in kinds]
        h["per_layer"] = {"rate": [r or None for r in rates], "c_width": widths}
        _stated_kinds(h, compressor=h["compressed_layers"], indexer=h["csa_layers"])
    if h.get("heads") and hd:
        h.setdefault("q_dim", h["heads"] * hd)
    if h.get("o_groups") and h.get("o_lora"):
        h.setdefault("o_lora_all", h["o_groups"] * h["o_lora"])
    if h.get("o_groups") and h.get("q_dim"):
        h.setdefault("o_group_in", h["q_dim"] // h["o_groups"])
    if h.get("hc") and h.get("d_model"):
        h.setdefault("hc_d", h["hc"] * h["d_model"])
        h.setdefault("hc_n", (2 + h["hc"]) * h["hc"])
    if h.get("index_heads") and h.get("index_dim"):
        h.setdefault("index_q", h["index_heads"] * h["index_dim"])
    if h.get("index_dim"):
        h.setdefault("i_width", 2 * h["index_dim"])
    h.setdefault("feedforward", h.get("expert_ff"))  # (its one dense MLP: the shared expert, as wide as a routed one)
    if hd:  # (one key/value head whatever `num_key_value_heads` says)
        h["kv_heads"], h["kv_dim"] = 1, hd
    for name in ("rate", "c_width"):  # (a formula's, or a file's without a compressor: the first compressed layer's)
        h.setdefault(name, next((v for v in h.get("per_layer", {}).get(name, ()) if v), None))
    derive_transformer(h)


def _hyper_connection(
    prefix: str, fn: str, base: str, scale: str, n: str = "hc_n", scales: int = 3
) -> tuple[Part, ...]:
    """A manifold-constrained hyper-connection's learned mixing (DeepSeek-V4's): its projection over the streams, its
    base and its scales (bare tensors)."""
    return (
        Part(f"{prefix}{fn}", "tensor", (n, "hc_d")),
        Part(f"{prefix}{base}", "tensor", (n,)),
        Part(f"{prefix}{scale}", "tensor", (scales,)),
    )


def _v4_compressor(prefix: str, width: str, norm: str, rate: str, **kw: Any) -> tuple[Part, ...]:
    """A DeepSeek-V4 compressor as the hub names it: its keys' and values' projection, its gate, a learned bias per
    position in its window (`ape`), a norm over a head."""
    return (
        Part(f"{prefix}.ape", "tensor", (rate, width), **kw),
        _norm(f"{prefix}.norm", norm, **kw),
        _linear(f"{prefix}.wgate", "d_model", width, role="dense", **kw),
        _linear(f"{prefix}.wkv", "d_model", width, role="dense", **kw),
    )


DEEPSEEK_V4_PARTS = (
    Part("embed_tokens", "embedding", ("vocab", "d_model")),
    _norm("norm"),
    *_hyper_connection("hc_head.", "hc_fn", "hc_base", "hc_scale", "hc", 1),
    _linear("/head", "d_model", "vocab", "head_bias", tied="embed_tokens"),
    _norm("layers.{i}.attn_norm"),
    _norm("layers.{i}.ffn_norm"),
    *_hyper_connection("layers.{i}.", "hc_attn_fn", "hc_attn_base", "hc_attn_scale"),
    *_hyper_connection("layers.{i}.", "hc_ffn_fn", "hc_ffn_base", "hc_ffn_scale"),
    _linear("layers.{i}.attn.wq_a", "d_model", "q_lora", role="attention_query"),
    _norm("layers.{i}.attn.q_norm", "q_lora"),
    _linear("layers.{i}.attn.wq_b", "q_lora", "q_dim", role="attention_query"),
    _linear("layers.{i}.attn.wkv", "d_model", "head_dim", role="attention_value"),
    _norm("layers.{i}.attn.norm", "head_dim"),
    _linear("layers.{i}.attn.wo_a", "o_group_in", "o_lora_all", role="attention_output"),
    _linear("layers.{i}.attn.wo_b", "o_lora_all", "d_model", role="attention_output"),
    Part("layers.{i}.attn.attn_sink", "tensor", ("heads",)),
    # (a model may have no layer of a kind: V4's default config of 2 layers no CSA one)
    *_v4_compressor(
        "layers.{i}.attn.compressor", "c_width", "head_dim", "rate", when="compressor", over="compressed_layers"
    ),
    *_v4_compressor(
        "layers.{i}.attn.indexer.compressor", "i_width", "index_dim", "rate_csa", when="indexer", over="csa_layers"
    ),
    _linear("layers.{i}.attn.indexer.wq_b", "q_lora", "index_q", when="indexer", over="csa_layers"),
    _linear("layers.{i}.attn.indexer.weights_proj", "d_model", "index_heads", when="indexer", over="csa_layers"),
    _linear("layers.{i}.ffn.gate", "d_model", "experts"),
    _linear("layers.{i}.ffn.experts.{e}.w1", "d_model", "expert_ff", role=FFN_GATE),
    _linear("layers.{i}.ffn.experts.{e}.w3", "d_model", "expert_ff", role=FFN_UP),
    _linear("layers.{i}.ffn.experts.{e}.w2", "expert_ff", "d_model", role=FFN_DOWN),
    _linear("layers.{i}.ffn.shared_experts.w1", "d_model", "expert_ff", "mlp_bias", role=FFN_GATE),
    _linear("layers.{i}.ffn.shared_experts.w3", "d_model", "expert_ff", "mlp_bias", role=FFN_UP),
    _linear("layers.{i}.ffn.shared_experts.w2", "expert_ff", "d_model", "mlp_bias", role=FFN_DOWN),
)
DEEPSEEK_V4_READS = {
    "vocab": ("embed_tokens", 0),
    "d_model": ("embed_tokens", 1),
    "hc": ("hc_head.hc_base", 0),
    "hc_n": ("layers.0.hc_attn_fn", 0),
    "hc_d": ("layers.0.hc_attn_fn", 1),
    "q_lora": ("layers.0.attn.wq_a", 0),
    "q_dim": ("layers.0.attn.wq_b", 0),
    "head_dim": ("layers.0.attn.wkv", 0),
    "heads": ("layers.0.attn.attn_sink", 0),
    "o_group_in": ("layers.0.attn.wo_a", 1),
    "o_lora_all": ("layers.0.attn.wo_a", 0),
    "rate": ("layers.0.attn.compressor.ape", 0),
    "c_width": ("layers.0.attn.compressor.wkv", 0),
    "rate_csa": ("layers.0.attn.indexer.compressor.ape", 0),
    "i_width": ("layers.0.attn.indexer.compressor.wkv", 0),
    "index_dim": ("layers.0.attn.indexer.compressor.norm", 0),
    "index_q": ("layers.0.attn.indexer.wq_b", 0),
    "index_heads": ("layers.0.attn.indexer.weights_proj", 0),
    "experts": ("layers.0.ffn.gate", 0),
    "expert_ff": ("layers.0.ffn.experts.0.w1", 0),
}
DEEPSEEK_V4_CONFIG = {
    "q_lora_rank": "q_lora",
    "o_lora_rank": "o_lora",
    "o_groups": "o_groups",
    "hc_mult": "hc",
    "index_n_heads": "index_heads",
    "index_head_dim": "index_dim",
    "n_routed_experts": "experts",
    "layer_types": "attn_types",
    "compress_ratios": "compress_ratios",
    "compress_rates.compressed_sparse_attention": "rate_csa",
    "compress_rates.heavily_compressed_attention": "rate_hca",
}


@functools.cache
def _deepseek_v4_family() -> Family:
    return Family(
        "deepseek_v4",
        "DeepSeek-V4 as save_pretrained writes it (its checkpoints' names under `model.`): hyper-connections "
        "(`hc_mult` residual streams mixed by learned projections around attention, around the MoE and before the "
        "head), attention of low-rank queries (wq_a, q_norm, wq_b), one shared key/value head (wkv, norm), a grouped "
        "low-rank output (wo_a, wo_b) and a sink per head, in the compressed layers a compressor of the keys and "
        "values (CSA's twice a head wide, beside a lightning indexer with its own compressor; HCA's a head wide) as "
        "`layer_types` and `compress_rates` place and size them; MoE layers of a router (hash-routed or scored), "
        "`experts` gated experts (w1, w3, w2) and a shared expert",
        ("deepseek_v4",),
        ("model.", ""),
        DEEPSEEK_V4_PARTS,
        DEEPSEEK_V4_READS,
        DECODER_DEFAULTS,
        DEEPSEEK_V4_CONFIG,
        derive=_deepseek_v4_derive,
        per_layer=("rate", "c_width"),
    )


# DeepSeek-V4's modules as transformers names them in memory (`conversion_mapping`'s "deepseek_v4", reversed)
DEEPSEEK_V4_RENAMES = {
    **{
        f"layers.{{i}}.attn.{old}": f"layers.{{i}}.self_attn.{new}"
        for old, new in (
            ("wq_a", "q_a_proj"), ("q_norm", "q_a_norm"), ("wq_b", "q_b_proj"), ("wkv", "kv_proj"), ("norm", "kv_norm"),
            ("wo_a", "o_a_proj"), ("wo_b", "o_b_proj"), ("attn_sink", "sinks"),
            ("indexer.wq_b", "compressor.indexer.q_b_proj"),
            ("indexer.weights_proj", "compressor.indexer.scorer.weights_proj"),
            *((f"{hub}.{leaf}", f"{mem}.{new}") for hub, mem in (("indexer.compressor", "compressor.indexer"),
              ("compressor", "compressor")) for leaf, new in (("ape", "position_bias"), ("norm", "kv_norm"),
              ("wgate", "gate_proj"), ("wkv", "kv_proj"))),
        )
    },
    **{
        f"layers.{{i}}.{old}": f"layers.{{i}}.{new}"
        for old, new in (
            ("attn_norm", "input_layernorm"), ("ffn_norm", "post_attention_layernorm"), ("hc_attn_fn", "attn_hc.fn"),
            ("hc_attn_base", "attn_hc.base"), ("hc_attn_scale", "attn_hc.scale"), ("hc_ffn_fn", "ffn_hc.fn"),
            ("hc_ffn_base", "ffn_hc.base"), ("hc_ffn_scale", "ffn_hc.scale"), ("ffn.gate", "mlp.gate"),
            ("ffn.shared_experts.w1", "mlp.shared_experts.gate_proj"),
            ("ffn.shared_experts.w3", "mlp.shared_experts.up_proj"),
            ("ffn.shared_experts.w2", "mlp.shared_experts.down_proj"),
        )
    },
    "/head": "/lm_head",
}  # fmt: skip


# Qwen3-Next's and Qwen3.5's layers: Gated DeltaNet (`linear_attn`) in most, gated full attention (a query twice as
# wide: the output gate's half) every `full_every`-th; the DeltaNet's input projections as each writes them (Qwen3-Next
# fused `in_proj_qkvz` and `in_proj_ba`, Qwen3.5 four of them; llama.cpp's converter splits Qwen3-Next's qkvz as Qwen3.5
# has it): the file's spelling is the one expected
GATED_DELTA_NET = tuple(  # (a part every such layer has first: the layers holding it are the DeltaNet's)
    replace(p, over="linear_layers")
    for p in (
        Part("layers.{i}.linear_attn.conv1d", "conv", ("lin_conv", 1, "lin_kernel")),
        _linear("layers.{i}.linear_attn.in_proj_qkvz", "d_model", "lin_qkvz", when="lin_fused"),
        _linear("layers.{i}.linear_attn.in_proj_ba", "d_model", "lin_v_heads*2", when="lin_fused"),
        _linear("layers.{i}.linear_attn.in_proj_qkv", "d_model", "lin_conv", when="lin_split"),
        _linear("layers.{i}.linear_attn.in_proj_z", "d_model", "lin_v", when="lin_split"),
        _linear("layers.{i}.linear_attn.in_proj_b", "d_model", "lin_v_heads", when="lin_split"),
        _linear("layers.{i}.linear_attn.in_proj_a", "d_model", "lin_v_heads", when="lin_split"),
        Part("layers.{i}.linear_attn.dt_bias", "tensor", ("lin_v_heads",), role="learned_tensor"),
        Part("layers.{i}.linear_attn.A_log", "tensor", ("lin_v_heads",), role="learned_tensor"),
        _norm("layers.{i}.linear_attn.norm", "lin_v_dim"),
        _linear("layers.{i}.linear_attn.out_proj", "lin_v", "d_model"),
    )
)
GATED_ATTENTION = tuple(
    replace(p, over="attention_layers")
    for p in (
        _linear("layers.{i}.self_attn.q_proj", "d_model", "q_dim*2", "attention_bias", role="attention_query"),
        *_attention("layers.{i}.self_attn", "q_proj", "k_proj", "v_proj", "o_proj")[1:],
        _norm("layers.{i}.self_attn.q_norm", "head_dim"),
        _norm("layers.{i}.self_attn.k_norm", "head_dim"),
    )
)
HYBRID_QWEN_LAYER = (  # (and the hub's MTP module where the file holds it: llama.cpp's converter keeps Qwen's `mtp.*`
    *DECODER_ENDS,  # under DeepSeek's names, its decoder layer a full-attention one after the last)
    _norm("layers.{i}.input_layernorm"),
    _norm("layers.{i}.post_attention_layernorm"),
    *GATED_DELTA_NET,
    *GATED_ATTENTION,
    *MTP_PARTS,
)
HYBRID_QWEN_READS = {
    "vocab": ("embed_tokens", 0),
    "d_model": ("embed_tokens", 1),
    "q_dim": ("layers.0.self_attn.o_proj", 1),
    "kv_dim": ("layers.0.self_attn.k_proj", 0),
    "head_dim": ("layers.0.self_attn.q_norm", 0),
    "lin_v_heads": ("layers.0.linear_attn.dt_bias", 0),
    "lin_v_dim": ("layers.0.linear_attn.norm", 0),
    "lin_v": ("layers.0.linear_attn.out_proj", 1),
    "lin_conv": ("layers.0.linear_attn.conv1d", 0),
    "lin_kernel": ("layers.0.linear_attn.conv1d", 2),
}
HYBRID_QWEN_CONFIG = {
    "linear_num_key_heads": "lin_k_heads",
    "linear_key_head_dim": "lin_k_dim",
    "linear_num_value_heads": "lin_v_heads",
    "linear_value_head_dim": "lin_v_dim",
    "linear_conv_kernel_dim": "lin_kernel",
    "full_attention_interval": "full_every",
}


def _gated_delta_derive(h: dict[str, Any]) -> None:
    """The DeltaNet's widths from its heads (keys and values), or the keys' from the convolution's width where the
    shapes gave that; the layers of each kind where the file did not say (full attention every `full_every`-th,
    Qwen3-Next's 4 unless said), the MTP layers counted among the layers where the file holds them; then the usual
    transformer relations."""
    _with_mtp_layers(h)
    if h.get("lin_v_heads") and h.get("lin_v_dim"):
        h.setdefault("lin_v", h["lin_v_heads"] * h["lin_v_dim"])
    if h.get("lin_k_heads") and h.get("lin_k_dim"):
        h.setdefault("lin_conv", 2 * h["lin_k_heads"] * h["lin_k_dim"] + int(h.get("lin_v") or 0))
    if h.get("lin_conv") and h.get("lin_v"):
        h.setdefault("lin_qkvz", h["lin_conv"] + h["lin_v"])
    h.setdefault("lin_kernel", 4)
    layers, every = int(h.get("layers") or 0), int(h.get("full_every") or 4)
    h.setdefault("attention_layers", [i for i in range(layers) if (i + 1) % every == 0])
    _other_layers(h, "linear_layers", "attention_layers")
    h["lin_split"] = not h.get("lin_fused")  # (a formula's words: one spelling or the other; a file says its own)
    derive_transformer(h)


def _gated_delta_moe_derive(h: dict[str, Any]) -> None:
    _gated_delta_derive(h)
    _moe_derive(h)


def _lfm2_derive(h: dict[str, Any]) -> None:
    """LFM2's feed-forward width from its config's (`block_auto_adjust_ff_dim`: two thirds of it, times the multiplier,
    rounded up to `block_multiple_of`; Lfm2MLP's rule), its layers' kinds where the file did not say (attention in
    every layer, as Lfm2Config's default `layer_types`), then the usual relations."""
    ff = h.get("feedforward")
    if ff and h.pop("ff_auto", False):  # (only a config says so: a feed-forward read off the shapes is the width)
        ff = int(2 * ff / 3)
        if h.get("ff_multiplier"):
            ff = int(h["ff_multiplier"] * ff)
        multiple = int(h.get("ff_multiple") or 1)
        h["feedforward"] = multiple * ((ff + multiple - 1) // multiple)
    h.setdefault("attention_layers", list(range(int(h.get("layers") or 0))))
    _other_layers(h, "conv_layers", "attention_layers")
    h.setdefault("conv_cache", 3)
    derive_transformer(h)


# Nemotron-H's MoE mixer in a latent space where `moe_latent_size` sets one: its experts' input and output that wide,
# projected into it and out of it (biases `mlp_bias`, as its MLPs')
NEMOTRON_LATENT_MOE = (
    _linear("layers.{i}.mixer.fc1_latent_proj", "d_model", "moe_latent", "mlp_bias", when="latent_moe"),
    _linear("layers.{i}.mixer.fc2_latent_proj", "moe_latent", "d_model", "mlp_bias", when="latent_moe"),
)


def _nemotron_h_derive(h: dict[str, Any]) -> None:
    """Nemotron-H's Mamba-2 widths from its Mamba heads (inner = heads x head_dim, the convolution over x, B and C, the
    input projection's z, x, B, C and a time step per head: Mamba2Config's relations, under words of their own beside
    the attention's; a config's where it states them, `_widths_from_config`), its experts' width (the latent's where
    `moe_latent_size` sets one: NemotronHExperts', projected in and out of it), the layer kinds where the file did not
    say (every layer Mamba's), the MTP layers counted among the layers where the file holds them."""
    _with_mtp_layers(h)
    _widths_from_config(h, "ssm_inner", "ssm_conv", "ssm_in", inner_from="ssm_head_dim")
    _mamba2_widths(h, "ssm_heads", "ssm_head_dim", "ssm_inner", "ssm_conv", "ssm_in")
    h.setdefault("conv_kernel", 4)
    h.setdefault("moe_in", h.get("moe_latent") or h.get("d_model"))  # (the experts' width: the latent's where set)
    h["latent_moe"] = bool(h.get("moe_latent"))  # (the latent's size says there is one: a file says its own)
    for kind in ("attention_layers", "mlp_layers", "moe_layers"):
        h.setdefault(kind, [])
    _other_layers(h, "mamba_layers", "attention_layers", "mlp_layers", "moe_layers")
    derive_transformer(h)


def _jamba_derive(h: dict[str, Any]) -> None:
    """Jamba's Mamba sizes as Mamba's (`_mamba_derive`: JambaConfig's mamba_* defaults are MambaConfig's), its MLP's
    width read off its experts (both are intermediate_size) where no layer holds a dense MLP, and its layers' kinds
    where the file did not say, as JambaConfig places them: attention every `attn_period`-th layer from `attn_offset`
    (8 and 4), Mamba in the others; experts every `expert_period`-th from `expert_offset` (2 and 1) where there is
    more than one, a gated MLP in the others."""
    _mamba_derive(h)
    if not h.get("feedforward") and h.get("experts_ff"):
        h["feedforward"] = h["experts_ff"]
    layers = range(int(h.get("layers") or 0))
    period, offset = int(h.get("attn_period") or 8), int(h.get("attn_offset", 4))
    h.setdefault("attention_layers", [i for i in layers if i % period == offset])
    _other_layers(h, "mamba_layers", "attention_layers")
    period, offset = int(h.get("expert_period") or 2), int(h.get("expert_offset", 1))
    moe = int(h.get("experts") or 0) > 1
    h.setdefault("moe_layers", [i for i in layers if moe and i % period == offset])
    _other_layers(h, "dense_layers", "moe_layers")
    derive_transformer(h)


def _falcon_h1_derive(h: dict[str, Any]) -> None:
    """Falcon-H1's Mamba-2 widths (`_mamba2_widths`, under Nemotron-H's words for them): its inner width the config's
    `mamba_d_ssm`, else `mamba_expand` x d_model, a head's the inner width over the heads where `mamba_d_head` is
    "auto"; FalconH1Config's defaults for the rest. Where a config states the sizes, the convolution's and in_proj's
    widths are its (`_widths_from_config`), not the file's."""
    for name, value in (("ssm_heads", 128), ("groups", 1), ("state", 256), ("conv_kernel", 4), ("expand", 2)):
        h.setdefault(name, value)
    _widths_from_config(h, "ssm_inner", "ssm_conv", "ssm_in")
    if h.get("d_model") and not h.get("ssm_inner") and not h.get("ssm_head_dim"):
        h["ssm_inner"] = int(h["expand"]) * int(h["d_model"])
    if h.get("ssm_inner") and not h.get("ssm_head_dim"):
        h["ssm_head_dim"] = int(h["ssm_inner"]) // int(h["ssm_heads"])
    _mamba2_widths(h, "ssm_heads", "ssm_head_dim", "ssm_inner", "ssm_conv", "ssm_in")
    derive_transformer(h)


# LFM2's layers but their feed-forward (LFM2-MoE's too): gated short convolutions in some, grouped-query attention with
# per-head q/k norms in the others, each checked in the layers holding it
LFM2_LAYER = (
    Part("embed_tokens", "embedding", ("vocab", "d_model")),
    _norm("embedding_norm"),
    _linear("/lm_head", "d_model", "vocab", "head_bias", tied="embed_tokens"),
    _norm("layers.{i}.operator_norm"),
    _norm("layers.{i}.ffn_norm"),
    *(
        replace(p, over="conv_layers")
        for p in (
            Part("layers.{i}.conv.conv", "conv", ("d_model", 1, "conv_cache"), "conv_bias"),
            _linear("layers.{i}.conv.in_proj", "d_model", "d_model*3", "conv_bias"),
            _linear("layers.{i}.conv.out_proj", "d_model", "d_model", "conv_bias"),
        )
    ),
    *(
        replace(p, over="attention_layers")
        for p in (
            *_attention("layers.{i}.self_attn", "q_proj", "k_proj", "v_proj", "out_proj"),
            _norm("layers.{i}.self_attn.q_layernorm", "head_dim"),
            _norm("layers.{i}.self_attn.k_layernorm", "head_dim"),
        )
    ),
)
LFM2_MLP = (  # its SwiGLU feed-forward
    _linear("layers.{i}.feed_forward.w1", "d_model", "feedforward", role=FFN_GATE),
    _linear("layers.{i}.feed_forward.w3", "d_model", "feedforward", role=FFN_UP),
    _linear("layers.{i}.feed_forward.w2", "feedforward", "d_model", role=FFN_DOWN),
)
LFM2_READS = {
    "vocab": ("embed_tokens", 0),
    "d_model": ("embed_tokens", 1),
    "q_dim": ("layers.0.self_attn.q_proj", 0),
    "kv_dim": ("layers.0.self_attn.k_proj", 0),
    "head_dim": ("layers.0.self_attn.q_layernorm", 0),
    "conv_cache": ("layers.0.conv.conv", 2),
}
LFM2_CONFIG = {"conv_L_cache": "conv_cache", "conv_bias": "conv_bias"}


def _lfm2_moe_derive(h: dict[str, Any]) -> None:
    """LFM2-MoE's layers as LFM2's (`_lfm2_derive`), its MoE layers where the file did not say: all but the first
    `first_dense` (Lfm2MoeConfig's 2), which hold a SwiGLU feed-forward of its intermediate_size."""
    _lfm2_derive(h)
    first = int(h.get("first_dense", 2))
    h.setdefault("moe_layers", list(range(first, int(h.get("layers") or 0))))
    _other_layers(h, "dense_layers", "moe_layers")


def _cohere2_moe_derive(h: dict[str, Any]) -> None:
    """Cohere2-MoE's shared experts as one gated MLP of `n_shared` x its experts' width (intermediate_size), its MoE
    layers where the file did not say (`_moe_derive`: every layer, as Cohere2MoeConfig's default `mlp_layer_types`)."""
    if h.get("expert_ff") and h.get("n_shared"):
        h["shared_ff"] = h["expert_ff"] * h["n_shared"]
    _stated_mlp_layers(h)
    _moe_derive(h)


# Mixtral in its three layouts (the hub's per-expert modules, transformers 5's fused experts, llama.cpp's stacked
# ones); MiniMax-M2 is each with q/k norms over the whole projections (`_whole_qk_norms`)
@functools.cache
def _mixtral_families() -> tuple[Family, ...]:
    return (
        Family(
            "mixtral",
            "Mixtral: Llama-style attention, a router and `experts` gated experts (w1, w3: d->ff; w2: ff->d) per layer",
            ("mixtral", "phimoe"),
            ("model.", ""),
            (
                *DECODER_ENDS,
                *LLAMA_LAYER,
                _linear("layers.{i}.block_sparse_moe.gate", "d_model", "experts"),
                _linear("layers.{i}.block_sparse_moe.experts.{e}.w1", "d_model", "feedforward"),
                _linear("layers.{i}.block_sparse_moe.experts.{e}.w2", "feedforward", "d_model"),
                _linear("layers.{i}.block_sparse_moe.experts.{e}.w3", "d_model", "feedforward"),
            ),
            LLAMA_READS
            | {
                "feedforward": ("layers.0.block_sparse_moe.experts.0.w1", 0),
                "experts": ("layers.0.block_sparse_moe.gate", 0),
            },  # fmt: skip
            {"tied": False, "attention_bias": False, "norm_shift": False, "head_bias": False},
        ),
        Family(
            "mixtral-fused",
            "Mixtral as transformers 5 holds it (torch.save of its state dict): a router and the experts fused into "
            "gate_up_proj (experts, 2 ff, d) and down_proj (experts, d, ff) per layer",
            ("mixtral",),
            ("model.", ""),
            (
                *DECODER_ENDS,
                *LLAMA_LAYER,
                _linear("layers.{i}.mlp.gate", "d_model", "experts"),
                Part("layers.{i}.mlp.experts.gate_up_proj", "tensor", ("experts", "feedforward*2", "d_model")),
                Part("layers.{i}.mlp.experts.down_proj", "tensor", ("experts", "d_model", "feedforward")),
            ),
            LLAMA_READS | {"feedforward": ("layers.0.mlp.experts.down_proj", 2), "experts": ("layers.0.mlp.gate", 0)},
            {"tied": False, "attention_bias": False, "norm_shift": False, "head_bias": False},
        ),
        Family(
            "mixtral-stacked",
            "Mixtral as llama.cpp's converter writes it (GGUF): a router and the experts stacked into gate_proj and "
            "up_proj (experts, ff, d) and down_proj (experts, d, ff) per layer",
            ("mixtral", "phimoe"),
            ("model.", ""),
            (
                *DECODER_ENDS,
                *LLAMA_LAYER,
                _linear("layers.{i}.mlp.gate", "d_model", "experts"),
                Part("layers.{i}.mlp.experts.gate_proj", "tensor", ("experts", "feedforward", "d_model")),
                Part("layers.{i}.mlp.experts.up_proj", "tensor", ("experts", "feedforward", "d_model")),
                Part("layers.{i}.mlp.experts.down_proj", "tensor", ("experts", "d_model", "feedforward")),
            ),
            LLAMA_READS | {"feedforward": ("layers.0.mlp.experts.down_proj", 2), "experts": ("layers.0.mlp.gate", 0)},
            {"tied": False, "attention_bias": False, "norm_shift": False, "head_bias": False},
        ),
    )


def _whole_qk_norms(family: Family, name: str, model_types: tuple[str, ...], what: str) -> Family:
    """`family` with q/k norms over the whole q and k projections (in every layer) instead of Llama's optional per-head
    ones, and no head size read off them."""
    per_head = {"layers.{i}.self_attn.q_norm", "layers.{i}.self_attn.k_norm"}
    parts = (
        *(p for p in family.parts if p.path not in per_head),
        _norm("layers.{i}.self_attn.q_norm", "q_dim"),
        _norm("layers.{i}.self_attn.k_norm", "kv_dim"),
    )
    reads = {k: v for k, v in family.reads.items() if k != "head_dim"}
    description = f"{what}:{family.description.partition(':')[2]}"
    return replace(family, name=name, description=description, model_types=model_types, parts=parts, reads=reads)


def _renamed(
    family: Family,
    name: str,
    model_types: tuple[str, ...],
    description: str,
    paths: Mapping[str, str],
    parts: tuple[Part, ...] = (),
    reads: Mapping[str, tuple[str, int]] | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> Family:
    """`family` as another model's checkpoints hold it: each module of `paths` (and those under it) under the name they
    give it, with its own `parts`, `reads` and formula `defaults` besides; the family's reads renamed alike."""
    renames: dict[str, tuple[int, str]] = {}  # old path -> (its place in `paths`: the first that matches wins, new)
    for old, new in (pair for item in paths.items() for pair in (item, tuple(p.replace("{i}", "0") for p in item))):
        renames.setdefault(old, (len(renames), new))

    def rename(path: str) -> str:
        """The path under its new name: the first of `paths` that is the path or a module it is in, by dotted parts (a
        lookup of each of its prefixes, not a scan of every rename: DeepSeek-V4's are many)."""
        segments = path.split(".")
        prefixes = (".".join(segments[:n]) for n in range(1, len(segments) + 1))
        found = min(((renames[p], p) for p in prefixes if p in renames), default=None)
        return found[0][1] + path[len(found[1]) :] if found else path

    def renamed(part: Part) -> Part:  # (a part no rename touches: itself, not a copy)
        path, tied = rename(part.path), part.tied and rename(part.tied)
        return part if path == part.path and tied == part.tied else replace(part, path=path, tied=tied)

    return replace(
        family,
        name=name,
        description=description,
        model_types=model_types,
        parts=(*map(renamed, family.parts), *parts),
        reads={**{k: (rename(path), axis) for k, (path, axis) in family.reads.items()}, **(reads or {})},
        defaults={**family.defaults, **(defaults or {})},
    )


# MiniMax-Text-01's lightning attention (its `linear_attention` layers): q, k and v fused into one projection, an output
# gate, an RMSNorm over the heads' output, out_proj (its decays are buffers)
LIGHTNING_ATTENTION = tuple(
    replace(p, over="linear_layers")
    for p in (
        _linear("layers.{i}.self_attn.qkv_proj", "d_model", "q_dim*3", role="attention_qkv"),
        _linear("layers.{i}.self_attn.output_gate", "d_model", "q_dim"),
        _norm("layers.{i}.self_attn.norm", "q_dim"),
        _linear("layers.{i}.self_attn.out_proj", "q_dim", "d_model", role="attention_output"),
    )
)


def _lightning_layers(family: Family) -> Family:
    """MiniMax-Text-01 as Mixtral's `family` (a layout of it): Mixtral's attention in its `full_attention` layers,
    lightning attention (`LIGHTNING_ATTENTION`) in the others, each checked in the layers holding it."""
    parts = (
        *(
            replace(p, over="attention_layers") if p.path.startswith("layers.{i}.self_attn.") else p
            for p in family.parts
        ),
        *LIGHTNING_ATTENTION,
    )
    head, _, tail = family.description.partition(":")
    description = (
        f"{head.replace('Mixtral', 'MiniMax-Text-01')}:{tail}; Mixtral's attention only in the `full_attention` "
        "layers (every second from the first), lightning attention (a fused qkv_proj, an output_gate, a norm, "
        "out_proj) in the others"
    )
    return replace(
        family,
        name=family.name.replace("mixtral", "minimax"),
        description=description,
        model_types=("minimax",),
        parts=parts,
        derive=_minimax_derive,
    )


def _minimax_derive(h: dict[str, Any]) -> None:
    """MiniMax-Text-01's layers' kinds where the file did not say (MiniMaxConfig's default `layer_types`: full attention
    in every second layer from the first, lightning attention in the others), then the usual relations."""
    h.setdefault("attention_layers", list(range(0, int(h.get("layers") or 0), 2)))
    _other_layers(h, "linear_layers", "attention_layers")
    derive_transformer(h)


@functools.cache
def _llama_family() -> Family:
    return Family(
        "llama",
        "Llama-style decoders: Llama, Mistral, Qwen2/3, Gemma 1-3, Granite (RMSNorm, gated MLP, GQA from k/v shapes)",
        # the config types whose files this formula gives exactly (OLMo, OLMo 2, Cohere, Arcee: families of their own)
        # (and EXAONE's as transformers holds it: a torch.save of its state dict)
        (
            *("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text", "granite", "exaone"),
            *("cwm", "ernie4_5", "helium", "internlm3", "iquestcoder", "ministral3", "seed_oss"),
        ),
        ("model.", ""),
        (
            *DECODER_ENDS,
            *LLAMA_LAYER,
            *GATED_MLP,
        ),
        LLAMA_READS | {"feedforward": ("layers.0.mlp.up_proj", 0)},
        DECODER_DEFAULTS,
    )


# Granite MoE in its three layouts
@functools.cache
def _granite_moe_families() -> tuple[Family, ...]:
    return (
        Family(
            "granitemoe",
            "Granite MoE: Llama-style attention, a router (router.layer) and the experts fused into input_linear "
            "(experts, 2 expert_ff, d) and output_linear (experts, d, expert_ff); GraniteMoeShared adds a shared MLP",
            ("granitemoe", "granitemoeshared"),
            ("model.", ""),
            (
                *DECODER_ENDS,
                *LLAMA_LAYER,
                _linear("layers.{i}.block_sparse_moe.router.layer", "d_model", "experts"),
                Part("layers.{i}.block_sparse_moe.input_linear", "tensor", ("experts", "expert_ff*2", "d_model")),
                Part("layers.{i}.block_sparse_moe.output_linear", "tensor", ("experts", "d_model", "expert_ff")),
                _linear("layers.{i}.shared_mlp.input_linear", "d_model", "shared_ff*2", when="shared_mlp"),
                _linear("layers.{i}.shared_mlp.output_linear", "shared_ff", "d_model", when="shared_mlp"),
            ),
            LLAMA_READS
            | {
                "expert_ff": ("layers.0.block_sparse_moe.output_linear", 2),
                "experts": ("layers.0.block_sparse_moe.router.layer", 0),
                "shared_ff": ("layers.0.shared_mlp.output_linear", 1),
            },  # fmt: skip
            *GRANITE_MOE_FACTS,
        ),
        Family(
            "granitemoe-fused",
            "Granite MoE as transformers 5 holds it (torch.save of its state dict): the router as router, the experts "
            "as experts.gate_up_proj (experts, 2 expert_ff, d) and experts.down_proj (experts, d, expert_ff)",
            ("granitemoe", "granitemoeshared"),
            ("model.", ""),
            (
                *DECODER_ENDS,
                *LLAMA_LAYER,
                _linear("layers.{i}.block_sparse_moe.router", "d_model", "experts"),
                Part(
                    "layers.{i}.block_sparse_moe.experts.gate_up_proj", "tensor", ("experts", "expert_ff*2", "d_model")
                ),
                Part("layers.{i}.block_sparse_moe.experts.down_proj", "tensor", ("experts", "d_model", "expert_ff")),
                _linear("layers.{i}.shared_mlp.input_linear", "d_model", "shared_ff*2", when="shared_mlp"),
                _linear("layers.{i}.shared_mlp.output_linear", "shared_ff", "d_model", when="shared_mlp"),
            ),
            LLAMA_READS
            | {
                "expert_ff": ("layers.0.block_sparse_moe.experts.down_proj", 2),
                "experts": ("layers.0.block_sparse_moe.router", 0),
                "shared_ff": ("layers.0.shared_mlp.output_linear", 1),
            },  # fmt: skip
            *GRANITE_MOE_FACTS,
        ),
        Family(
            "granitemoe-stacked",
            "Granite MoE as llama.cpp's converter writes it (GGUF): each input_linear split into two halves, the "
            "experts' named as stacked gate_proj and up_proj (experts, expert_ff, d) and down_proj, the shared MLP's "
            "gate_proj and up_proj",
            ("granitemoe", "granitemoeshared"),
            ("model.", ""),
            (
                *DECODER_ENDS,
                *LLAMA_LAYER,
                _linear("layers.{i}.block_sparse_moe.router.layer", "d_model", "experts"),
                *STACKED_EXPERTS,
                _linear("layers.{i}.shared_mlp.gate_proj", "d_model", "shared_ff", when="shared_mlp"),
                _linear("layers.{i}.shared_mlp.up_proj", "d_model", "shared_ff", when="shared_mlp"),
                _linear("layers.{i}.shared_mlp.output_linear", "shared_ff", "d_model", when="shared_mlp"),
            ),
            LLAMA_READS
            | {
                "expert_ff": ("layers.0.mlp.experts.down_proj", 2),
                "experts": ("layers.0.block_sparse_moe.router.layer", 0),
                "shared_ff": ("layers.0.shared_mlp.output_linear", 1),
            },  # fmt: skip
            *GRANITE_MOE_FACTS,
        ),
    )


def _granitemoehybrid_derive(h: dict[str, Any]) -> None:
    """Granite-MoE-hybrid's Mamba-2 widths (`_mamba2_widths`, under Nemotron-H's words): its inner width `mamba_expand`
    x d_model, as its Mamba layer builds it (a config's where it states it, `_widths_from_config`);
    GraniteMoeHybridConfig's defaults for the rest; a formula's layers Mamba's (its default `layer_types`)."""
    for name, value in (("ssm_heads", 128), ("groups", 1), ("state", 256), ("conv_kernel", 4), ("expand", 2)):
        h.setdefault(name, value)
    _widths_from_config(h, "ssm_inner", "ssm_conv", "ssm_in", inner_from="expand")
    if h.get("d_model") and not h.get("ssm_inner"):
        h["ssm_inner"] = int(h["expand"]) * int(h["d_model"])
    _mamba2_widths(h, "ssm_heads", "ssm_head_dim", "ssm_inner", "ssm_conv", "ssm_in")
    h.setdefault("attention_layers", [])
    _other_layers(h, "mamba_layers", "attention_layers")
    h["moe"] = h.get("experts") != 0  # (no experts: no MoE block, `num_local_experts > 0` decides; a file its own)
    derive_transformer(h)


MAMBA_BIASES = {"ssm_bias": False, "conv_bias": True}  # (a Mamba-2 mixer's defaults: a bias on its convolution only)


def _granite_hybrid(family: Family) -> Family:
    """Granite-MoE-hybrid (Granite 4.0) as Granite MoE's `family` (a layout of it): in each layer a Mamba-2 mixer under
    `mamba.` or Granite's attention, each checked in the layers holding it; the MoE block where there are experts, the
    shared MLP in every layer."""
    parts = tuple(  # (a kind of layer a small model may have none of: its default `layer_types` are all Mamba's)
        replace(p, when=p.when or "attention", over="attention_layers")
        if p.path.startswith("layers.{i}.self_attn.")
        else replace(p, when="moe")
        if p.path.startswith("layers.{i}.block_sparse_moe.")
        else p
        for p in family.parts
    )
    mixer = _mamba2_mixer("ssm_heads", "ssm_inner", "ssm_conv", "ssm_in", "mamba")
    mamba = tuple(replace(p, over="mamba_layers") for p in mixer)
    head, _, tail = family.description.partition(":")
    return replace(
        family,
        name=family.name.replace("granitemoe", "granitemoehybrid"),
        description=f"{head.replace('Granite MoE', 'Granite MoE hybrid (Granite 4.0)')}: in each layer a Mamba-2 mixer "
        f"(mamba.: fused in_proj, conv1d, per-head A_log, D and dt_bias, a gated norm, out_proj) or attention;{tail}",
        model_types=("granitemoehybrid",),
        parts=(*parts, *mamba),
        reads={
            **family.reads,
            "ssm_heads": ("layers.0.mamba.A_log", 0),
            "ssm_inner": ("layers.0.mamba.out_proj", 1),
            "ssm_in": ("layers.0.mamba.in_proj", 0),
            "ssm_conv": ("layers.0.mamba.conv1d", 0),
            "conv_kernel": ("layers.0.mamba.conv1d", 2),
        },
        # (a shared MLP in every layer; untied, as GraniteMoeHybridConfig's default)
        defaults={**family.defaults, **MAMBA_BIASES, "attention": True, "shared_mlp": True, "tied": False},
        config={
            **family.config,
            "mamba_n_heads": "ssm_heads",
            "mamba_n_groups": "groups",
            "mamba_d_state": "state",
            "mamba_d_conv": "conv_kernel",
            "mamba_expand": "expand",
            "mamba_conv_bias": "conv_bias",
            "mamba_proj_bias": "ssm_bias",
        },
        derive=_granitemoehybrid_derive,
    )


# HunYuan v1's q/k norms (per head, as Llama's) under its names
HUNYUAN_QK_NORMS = {
    "layers.{i}.self_attn.q_norm": "layers.{i}.self_attn.query_layernorm",
    "layers.{i}.self_attn.k_norm": "layers.{i}.self_attn.key_layernorm",
}
# a learned sink per attention head (Granite SWA's, dense and MoE), which also says how many heads there are
ATTENTION_SINKS = Part("layers.{i}.self_attn.sinks", "tensor", ("heads",), role="learned_tensor")
SINK_READS = {"heads": ("layers.0.self_attn.sinks", 0)}
# the router's score correction as HunYuan v3's checkpoints name it (`expert_bias`): a buffer in transformers (kind rule
# `hf.router_bias_saved` with the config); where the file's tensors read it as a parameter, the file's own tensor
EXPERT_BIAS = Part("layers.{i}.mlp.expert_bias", "tensor", ("experts",), when="expert_bias", over="moe_layers")


def _fused_qkv_derive(h: dict[str, Any]) -> None:
    """GLM-4.5's relations (`_deepseek_derive`) where q, k and v are one projection (Sarvam-MoE's `query_key_value`):
    the keys' and values' width what the fused rows leave beside the queries' (read off the output's input)."""
    if h.get("qkv_dim") and h.get("q_dim") and not h.get("kv_dim"):
        h["kv_dim"] = (h["qkv_dim"] - h["q_dim"]) // 2
    if h.get("q_dim") and h.get("head_dim") and not h.get("heads"):
        h["heads"] = h["q_dim"] // h["head_dim"]
    _deepseek_derive(h)


# GLM-4.5's layers in its three expert layouts; EXAONE-MoE's in each (Llama-style attention, per-head q/k norms,
# DeepSeek's MoE layers: no other module), HunYuan v3's and Sarvam-MoE's as transformers holds them (their checkpoints
# rename modules: `hy_v3`, `sarvam_moe`)
@functools.cache
def _glm4_moe_families() -> tuple[Family, ...]:
    return tuple(
        replace(f, model_types=(*f.model_types, "hy_v3", "sarvam_moe")) if f.name != "glm4_moe" else f
        for f in _expert_layouts(
            "glm4_moe",
            (
                "GLM-4.5 / 4.6 (GLM-4-MoE), EXAONE-MoE: Llama-style attention (q/k/v biases, per-head q/k norms where "
                "`use_qk_norm`), DeepSeek-style MoE layers (a router, `experts` gated experts of expert_ff, shared "
                "experts) after `first_dense` dense MLP layers; the hub's MTP module where the file holds it",
                "GLM-4-MoE, EXAONE-MoE, HunYuan v3 as transformers 5 holds them (torch.save of its state dict): the "
                "experts fused into gate_up_proj (experts, 2 expert_ff, d) and down_proj (experts, d, expert_ff)",
                "GLM-4-MoE, EXAONE-MoE, HunYuan v3 as llama.cpp's converter writes them (GGUF): the experts stacked "
                "into gate_proj and up_proj (experts, expert_ff, d) and down_proj (experts, d, expert_ff)",
            ),
            ("glm4_moe", "exaone_moe"),
            (  # (attention_bias is q/k/v's: its o_proj has none)
                *DECODER_ENDS,
                *(replace(p, bias=None) if p.path.endswith(".o_proj") else p for p in LLAMA_LAYER),
                *MTP_PARTS,
            ),
            DEEPSEEK_SHARED_EXPERTS,
            LLAMA_READS
            | {"shared_ff": ("layers.0.mlp.shared_experts.up_proj", 0), "feedforward": ("layers.0.mlp.up_proj", 0)},
            DECODER_DEFAULTS,
            # (EXAONE-MoE's and HunYuan v3's word for the shared experts; `use_qk_norm`: whether there are q/k norms)
            {**DEEPSEEK_MOE_CONFIG, "num_shared_experts": "n_shared", "use_qk_norm": "qk_norm"},
            GATED_MLP,
            _deepseek_derive,
        )
    )


# HunYuan v1 MoE: Llama's layers (their q/k norms under HunYuan's names) and in every layer a router (`mlp.gate.wg`),
# `experts` gated experts of intermediate_size and a shared MLP of it (`mlp.shared_mlp`); its experts as its checkpoints
# hold them and as transformers 5 does (llama.cpp's converter: no layout here)
@functools.cache
def _hunyuan_moe_families() -> tuple[Family, ...]:
    return tuple(
        _renamed(
            f,
            f.name,
            f.model_types,
            f.description,
            {**HUNYUAN_QK_NORMS, "layers.{i}.mlp.gate": "layers.{i}.mlp.gate.wg"},
        )
        for f in _expert_layouts(
            "hunyuan_v1_moe",
            (
                "HunYuan v1 MoE: Llama-style attention with per-head q/k norms (query_layernorm, key_layernorm), in "
                "every layer a router (gate.wg), `experts` gated experts of expert_ff (intermediate_size) and a gated "
                "shared MLP (shared_mlp) of feedforward",
                "HunYuan v1 MoE as transformers 5 holds it (torch.save of its state dict): the experts fused into "
                "gate_up_proj (experts, 2 expert_ff, d) and down_proj (experts, d, expert_ff)",
                "",
            ),
            ("hunyuan_v1_moe",),
            (*DECODER_ENDS, *LLAMA_LAYER),
            tuple(
                _linear(f"layers.{{i}}.mlp.shared_mlp.{name}", *dims)
                for name, dims in (
                    ("gate_proj", ("d_model", "feedforward")),
                    ("up_proj", ("d_model", "feedforward")),
                    ("down_proj", ("feedforward", "d_model")),
                )
            ),
            LLAMA_READS | {"feedforward": ("layers.0.mlp.shared_mlp.up_proj", 0)},
            DECODER_DEFAULTS,
            {"intermediate_size": "expert_ff"},  # (its experts' width, and its shared MLP's: `feedforward`)
        )[:2]
    )


def _laguna_derive(h: dict[str, Any]) -> None:
    """Laguna's query heads per layer: where its config states them (`num_attention_heads_per_layer`), each layer's
    q_dim from them, and where it states none its `num_attention_heads` in every layer (the file's per layer without a
    config); its output gate a scalar per head (`gating`'s default) where the file did not say; its MoE layers where
    neither said (all but the first, LagunaConfig's default `mlp_layer_types`)."""
    derive_transformer(h)
    _stated_mlp_layers(h)
    per_layer = h.setdefault("per_layer", {})
    heads, head_dim = h.get("layer_heads"), h.get("head_dim")
    if heads and head_dim:
        per_layer["q_dim"] = [int(n) * int(head_dim) for n in heads]
        per_layer.setdefault("gate_dim", list(heads))
    elif h.get("from_shapes") is False:  # (a config of one head count: every layer's)
        per_layer.pop("q_dim", None)
    h.setdefault("gate_dim", h.get("heads"))
    h.setdefault("moe_layers", list(range(1, int(h.get("layers") or 0))))
    _moe_derive(h)


# Laguna: Llama's attention with per-head q/k norms and an output gate (g_proj: a scalar per head, or per channel),
# its query heads per layer; DeepSeek-style MoE layers after a dense one (a router beside its score correction, a
# parameter here, routed experts, a shared expert of shared_ff), in its checkpoints' layout and in transformers'
@functools.cache
def _laguna_families() -> tuple[Family, ...]:
    return tuple(
        replace(
            family,
            parts=(*family.parts, replace(EXPERT_BIAS, path=correction, dims=("experts",))),
            per_layer=("q_dim", "gate_dim"),
        )
        for family, correction in zip(
            _expert_layouts(
                "laguna",
                (
                    "Laguna: Llama-style attention with per-head q/k norms, an output gate g_proj and its query heads "
                    "per layer (`num_attention_heads_per_layer`); a dense first layer, then MoE layers of a router "
                    "(its score correction where the file reads it as a parameter), `experts` gated experts of "
                    "expert_ff and a gated shared expert of shared_ff",
                    "Laguna as transformers 5 holds it (torch.save of its state dict): the experts fused into "
                    "gate_up_proj (experts, 2 expert_ff, d) and down_proj (experts, d, expert_ff), the shared expert "
                    "as shared_experts",
                    "Laguna as llama.cpp's converter writes it (GGUF): the experts stacked into gate_proj and up_proj "
                    "(experts, expert_ff, d) and down_proj (experts, d, expert_ff), the shared expert as "
                    "shared_experts",
                ),
                ("laguna",),
                (*DECODER_ENDS, *LLAMA_LAYER, _linear("layers.{i}.self_attn.g_proj", "d_model", "gate_dim")),
                tuple(replace(p, when=None) for p in QWEN_SHARED_EXPERT[:3]),
                LLAMA_READS
                | {
                    "shared_ff": ("layers.0.mlp.shared_expert.up_proj", 0),
                    "feedforward": ("layers.0.mlp.up_proj", 0),
                    "gate_dim": ("layers.0.self_attn.g_proj", 0),
                },
                {**DECODER_DEFAULTS, "qk_norm": True, "expert_bias": True},  # (in every Laguna model, its correction a
                {"num_attention_heads_per_layer": "layer_heads", "mlp_layer_types": "mlp_types"},  # parameter)
                GATED_MLP,
                _laguna_derive,
            ),
            (
                "layers.{i}.mlp.experts.e_score_correction_bias",
                "layers.{i}.mlp.gate.e_score_correction_bias",
                "layers.{i}.mlp.experts.e_score_correction_bias",
            ),
            strict=True,
        )
    )


# Qwen2-MoE's and Qwen3-MoE's layers in their three expert layouts
@functools.cache
def _qwen2_moe_families() -> tuple[Family, ...]:
    return _expert_layouts(
        "qwen2_moe",
        (
            "Qwen2-MoE / Qwen3-MoE: a router, `experts` gated experts of expert_ff and an optional gated shared expert "
            "(dense MLP layers of feedforward where the config says); q/k/v biases where attention_bias (Qwen2-MoE's "
            "`qkv_bias`), an o_proj bias where o_bias (Qwen3-MoE's `attention_bias` is both)",
            "Qwen2/3-MoE as transformers 5 holds it (torch.save of its state dict): a router, the experts fused into "
            "gate_up_proj (experts, 2 expert_ff, d) and down_proj (experts, d, expert_ff), an optional shared expert",
            "Qwen2/3-MoE as llama.cpp's converter writes it (GGUF): a router, the experts stacked into gate_proj and "
            "up_proj (experts, expert_ff, d) and down_proj (experts, d, expert_ff), an optional shared expert",
        ),
        ("qwen2_moe", "qwen3_moe", "mellum"),
        # (q/k/v's bias is Qwen2-MoE's `qkv_bias`, its o_proj has none; Qwen3-MoE's `attention_bias` is all four's)
        (*DECODER_ENDS, *(replace(p, bias="o_bias") if p.path.endswith(".o_proj") else p for p in LLAMA_LAYER)),
        QWEN_SHARED_EXPERT,
        LLAMA_READS
        | {"shared_ff": ("layers.0.mlp.shared_expert.up_proj", 0), "feedforward": ("layers.0.mlp.up_proj", 0)},
        {"tied": False, "attention_bias": True, "o_bias": False, "norm_shift": False, "head_bias": False},
        {  # its dense layers (`mlp_only_layers`, and those `decoder_sparse_step` skips) hold a dense MLP of feedforward
            "decoder_sparse_step": "moe_step",
            "mlp_only_layers": "mlp_only",
            "qkv_bias": "attention_bias",
            "attention_bias": "o_bias",
        },
        GATED_MLP,
    )


@functools.cache
def _qwen3_5_family() -> Family:
    return _hub_mtp(
        Family(
            "qwen3_5",
            "Qwen3.5 (dense): Gated DeltaNet layers (linear_attn) and, every `full_every`-th, gated full attention "
            "(q_proj twice q_dim: the output gate) with per-head q/k norms; a gated MLP; the hub's MTP module (`mtp.`) "
            "where the file holds it",
            ("qwen3_5_text",),
            ("model.", ""),
            (*HYBRID_QWEN_LAYER, *GATED_MLP),
            HYBRID_QWEN_READS | {"feedforward": ("layers.0.mlp.up_proj", 0)},
            DECODER_DEFAULTS,
            HYBRID_QWEN_CONFIG,
            derive=_gated_delta_derive,
        ),
        QWEN_HUB_MTP,
    )


@functools.cache
def _qwen3_next_families() -> tuple[Family, ...]:
    return tuple(
        _hub_mtp(f, QWEN_HUB_MTP)  # (in each layout: the file says which it holds)
        for f in _expert_layouts(
            "qwen3_next",
            (
                "Qwen3-Next / Qwen3.5-MoE: Gated DeltaNet layers (linear_attn) and, every `full_every`-th, gated "
                "full attention with per-head q/k norms; in every layer a router, `experts` gated experts of expert_ff "
                "and a gated shared expert; the hub's MTP module (`mtp.`) where the file holds it",
                "Qwen3-Next / Qwen3.5-MoE as transformers 5 holds it (torch.save of its state dict): the experts "
                "fused into gate_up_proj (experts, 2 expert_ff, d) and down_proj (experts, d, expert_ff)",
                "Qwen3-Next / Qwen3.5-MoE as llama.cpp's converter writes it (GGUF): the experts stacked into "
                "gate_proj and up_proj (experts, expert_ff, d) and down_proj (experts, d, expert_ff)",
            ),
            ("qwen3_next", "qwen3_5_moe_text"),
            HYBRID_QWEN_LAYER,
            QWEN_SHARED_EXPERT,
            HYBRID_QWEN_READS | {"shared_ff": ("layers.0.mlp.shared_expert.up_proj", 0)},
            DECODER_DEFAULTS,
            {**HYBRID_QWEN_CONFIG, "decoder_sparse_step": "moe_step", "mlp_only_layers": "mlp_only"},
            GATED_MLP,
            _gated_delta_moe_derive,
        )
    )


# the vision tower of Qwen3-VL's and Qwen3.5's vision-language checkpoints (`model.visual.`, beside the language model's
# `model.language_model.`): a 3-d patch convolution, learned positions, pre-norm blocks of a fused qkv and a two-layer
# MLP, all with biases and LayerNorms, and the merger of spatial_merge_size^2 patches into the language model's width
QWEN_VISION_TOWER = (
    Part("/model.visual.patch_embed.proj", "conv", ("v_d", "channels", "temporal_patch", "patch", "patch"), "v_bias"),
    Part("/model.visual.pos_embed", "embedding", ("v_pos", "v_d"), role="position_embedding"),
    _norm("/model.visual.blocks.{k}.norm1", "v_d", "v_bias"),
    _linear("/model.visual.blocks.{k}.attn.qkv", "v_d", "v_d*3", "v_bias", role="attention_qkv"),
    _linear("/model.visual.blocks.{k}.attn.proj", "v_d", "v_d", "v_bias", role="attention_output"),
    _norm("/model.visual.blocks.{k}.norm2", "v_d", "v_bias"),
    _linear("/model.visual.blocks.{k}.mlp.linear_fc1", "v_d", "v_ff", "v_bias", role=FFN_UP),
    _linear("/model.visual.blocks.{k}.mlp.linear_fc2", "v_ff", "v_d", "v_bias", role=FFN_DOWN),
    _norm("/model.visual.merger.norm", "v_d", "v_bias"),
    _linear("/model.visual.merger.linear_fc1", "v_merged", "v_merged", "v_bias"),
    _linear("/model.visual.merger.linear_fc2", "v_merged", "v_out", "v_bias"),
)
# Qwen3-VL's deepstack mergers: one per `deepstack_visual_indexes` block, a merger normed over the merged patches
QWEN3_VL_DEEPSTACK = (
    _norm("/model.visual.deepstack_merger_list.{d}.norm", "v_merged", "v_bias"),
    _linear("/model.visual.deepstack_merger_list.{d}.linear_fc1", "v_merged", "v_merged", "v_bias"),
    _linear("/model.visual.deepstack_merger_list.{d}.linear_fc2", "v_merged", "v_out", "v_bias"),
)
QWEN_PATCH_READS = {"v_d": 0, "channels": 1, "temporal_patch": 2, "patch": 3}  # (the patch convolution's axes)
QWEN_VISION_READS = {
    **{k: ("/model.visual.patch_embed.proj", axis) for k, axis in QWEN_PATCH_READS.items()},
    "v_pos": ("/model.visual.pos_embed", 0),
    "v_ff": ("/model.visual.blocks.0.mlp.linear_fc1", 0),
    "v_merged": ("/model.visual.merger.linear_fc1", 0),
    "v_out": ("/model.visual.merger.linear_fc2", 0),
}
QWEN_VISION_CONFIG = {
    "vision_config.hidden_size": "v_d",
    "vision_config.intermediate_size": "v_ff",
    "vision_config.depth": "vision_layers",
    "vision_config.in_channels": "channels",
    "vision_config.patch_size": "patch",
    "vision_config.temporal_patch_size": "temporal_patch",
    "vision_config.num_position_embeddings": "v_pos",
    "vision_config.spatial_merge_size": "merge",
    "vision_config.out_hidden_size": "v_out",
}


def _qwen2_vision_tower(prefix: str, gated: bool) -> tuple[tuple[Part, ...], Mapping[str, tuple[str, int]]]:
    """Qwen2-VL's (`gated` false) or Qwen2.5-VL's vision tower under `prefix` (`/visual.` as their checkpoints hold it,
    `/model.visual.` as transformers does), and the shapes that size it: a 3-d patch convolution without a bias,
    pre-norm blocks of a fused qkv and an MLP with biases, the merger (a norm over the patches, two layers over
    spatial_merge_size^2 of them); Qwen2-VL's norms LayerNorms and its MLP two layers (fc1, fc2), Qwen2.5-VL's RMSNorms
    and a gated MLP."""
    blocks = prefix + "blocks.{k}."
    shift = "v_bias" if not gated else "norm_shift"
    mlp = (
        (
            _linear(blocks + "mlp.gate_proj", "v_d", "v_ff", "v_bias", role=FFN_GATE),
            _linear(blocks + "mlp.up_proj", "v_d", "v_ff", "v_bias", role=FFN_UP),
            _linear(blocks + "mlp.down_proj", "v_ff", "v_d", "v_bias", role=FFN_DOWN),
        )
        if gated
        else (
            _linear(blocks + "mlp.fc1", "v_d", "v_ff", "v_bias", role=FFN_UP),
            _linear(blocks + "mlp.fc2", "v_ff", "v_d", "v_bias", role=FFN_DOWN),
        )
    )
    parts = (
        Part(prefix + "patch_embed.proj", "conv", ("v_d", "channels", "temporal_patch", "patch", "patch")),
        _norm(blocks + "norm1", "v_d", shift),
        _linear(blocks + "attn.qkv", "v_d", "v_d*3", "v_bias", role="attention_qkv"),
        _linear(blocks + "attn.proj", "v_d", "v_d", "v_bias", role="attention_output"),
        _norm(blocks + "norm2", "v_d", shift),
        *mlp,
        _norm(prefix + "merger.ln_q", "v_d", shift),
        _linear(prefix + "merger.mlp.0", "v_merged", "v_merged", "v_bias"),
        _linear(prefix + "merger.mlp.2", "v_merged", "v_out", "v_bias"),
    )
    reads = {
        **{k: (prefix + "patch_embed.proj", axis) for k, axis in QWEN_PATCH_READS.items()},
        "v_ff": (prefix + ("blocks.0.mlp.up_proj" if gated else "blocks.0.mlp.fc1"), 0),
        "v_merged": (prefix + "merger.mlp.0", 0),
        "v_out": (prefix + "merger.mlp.2", 0),
    }
    return parts, reads


# Qwen2-VL's vision config: its blocks `embed_dim` wide, their MLP `mlp_ratio` times that, `hidden_size` the merger's
# output (the language model's width)
QWEN2_VISION_CONFIG = {
    "vision_config.embed_dim": "v_d",
    "vision_config.hidden_size": "v_out",
    "vision_config.mlp_ratio": "v_mlp_ratio",
    "vision_config.depth": "vision_layers",
    "vision_config.in_channels": "channels",
    "vision_config.patch_size": "patch",
    "vision_config.temporal_patch_size": "temporal_patch",
    "vision_config.spatial_merge_size": "merge",
}


def _vision_language(
    family: Family,
    name: str,
    model_types: tuple[str, ...],
    what: str,
    tower: tuple[tuple[Part, ...], Mapping[str, tuple[str, int]]] = (QWEN_VISION_TOWER, QWEN_VISION_READS),
    bases: tuple[str, ...] = ("model.language_model.",),
    vision_config: Mapping[str, str] = QWEN_VISION_CONFIG,
) -> Family:
    """`family` as the language model of a vision-language checkpoint (under `bases`, sized by the config's
    `text_config`), beside a Qwen vision `tower` (its parts and reads; sized by the config's `vision_config`, whose
    keys `vision_config` maps)."""
    text_derive = family.derive or derive_transformer

    def derive(h: dict[str, Any]) -> None:
        if h.get("v_d") and h.get("merge") and not h.get("v_merged"):  # (the merger's input: merge^2 patches)
            h["v_merged"] = int(h["v_d"]) * int(h["merge"]) ** 2
        if h.get("v_d") and h.get("v_mlp_ratio"):  # (Qwen2-VL's MLP width, where its config states the ratio)
            h["v_ff"] = int(h["v_d"]) * int(h["v_mlp_ratio"])
        text_derive(h)

    return replace(
        family,
        name=name,
        description=f"{what}: {family.description}; Qwen's vision tower (model.visual: a 3-d patch convolution, "
        "learned positions, pre-norm blocks of a fused qkv and a two-layer MLP, the patch merger)",
        model_types=model_types,
        bases=bases,
        parts=(*family.parts, *tower[0]),
        reads={**family.reads, **tower[1]},
        defaults={**family.defaults, "v_bias": True, "merge": 2},  # (the tower's biases and norm shifts: its own word)
        config={**family.config, **vision_config},
        derive=derive,
        text_config=True,
    )


def _glm_family(name: str, description: str, post_norms: tuple[Part, ...] = ()) -> Family:
    """GLM's (`name` its model type): Llama-style attention with q/k/v biases (o_proj none), Phi-3's fused MLP, and
    `post_norms` (GLM-4's norms of the attention's and the MLP's outputs)."""
    return Family(
        name,
        description,
        (name,),
        ("model.", ""),
        (
            *DECODER_ENDS,
            *(  # (attention_bias is q/k/v's: its o_proj has none)
                replace(p, bias=None) if p.path.endswith(".o_proj") else p
                for p in _attention("layers.{i}.self_attn", "q_proj", "k_proj", "v_proj", "o_proj")
            ),
            _norm("layers.{i}.input_layernorm"),
            _norm("layers.{i}.post_attention_layernorm"),
            *FUSED_GATED_MLP,
            *post_norms,
        ),
        {**DECODER_READS, "feedforward": ("layers.0.mlp.down_proj", 1)},
        {**DECODER_DEFAULTS, "attention_bias": True},
    )


# a gated MLP under `feed_forward` in the layers that hold no experts (Llama 4's and Jamba's dense layers)
DENSE_FEED_FORWARD = tuple(
    replace(p, when="dense_mlp", over="dense_layers")
    for p in (
        _linear("layers.{i}.feed_forward.gate_proj", "d_model", "feedforward"),
        _linear("layers.{i}.feed_forward.up_proj", "d_model", "feedforward"),
        _linear("layers.{i}.feed_forward.down_proj", "feedforward", "d_model"),
    )
)


ENTRIES: tuple[Callable[[], Family | tuple[Family, ...]], ...] = (
    _llama_family,
    lambda: _renamed(
        _llama_family(),
        "hunyuan_v1_dense",
        ("hunyuan_v1_dense",),
        "HunYuan v1 (dense): Llama's layers, their per-head q/k norms named query_layernorm and key_layernorm",
        HUNYUAN_QK_NORMS,
    ),
    _hunyuan_moe_families,
    lambda: _renamed(
        _llama_family(),
        "granite_swa",
        ("granite_swa",),
        "Granite SWA (dense): Llama's layers with a learned sink per attention head (self_attn.sinks)",
        {},
        (ATTENTION_SINKS,),
        SINK_READS,
    ),
    lambda: Family(
        "phi3",
        "Phi-3: a Llama-style decoder with fused qkv_proj and gate_up_proj",
        ("phi3",),
        ("model.", ""),
        (
            *DECODER_ENDS,
            _linear("layers.{i}.self_attn.qkv_proj", "d_model", "qkv_dim", "attention_bias"),
            _linear("layers.{i}.self_attn.o_proj", "q_dim", "d_model", "attention_bias", role="attention_output"),
            _norm("layers.{i}.input_layernorm"),
            _norm("layers.{i}.post_attention_layernorm"),
            *FUSED_GATED_MLP,
        ),
        {
            "vocab": ("embed_tokens", 0),
            "d_model": ("embed_tokens", 1),
            "qkv_dim": ("layers.0.self_attn.qkv_proj", 0),
            "q_dim": ("layers.0.self_attn.o_proj", 1),
            "feedforward": ("layers.0.mlp.down_proj", 1),
        },  # fmt: skip
        DECODER_DEFAULTS,
    ),
    lambda: _glm_family(
        "glm",
        "GLM (glm-4-9b-chat-hf): Llama-style attention with q/k/v biases where attention_bias (o_proj none), Phi-3's "
        "fused gate_up_proj",
    ),
    lambda: _glm_family(
        "glm4",
        "GLM-4 (GLM-4-0414): GLM's layers (q/k/v biases, a fused gate_up_proj) with the attention's and the MLP's "
        "outputs normed too (post_self_attn_layernorm, post_mlp_layernorm)",
        (_norm("layers.{i}.post_self_attn_layernorm"), _norm("layers.{i}.post_mlp_layernorm")),
    ),
    lambda: Family(
        "olmo2",
        "OLMo 2 and 3: a Llama-style decoder normed after attention and after the MLP (no input norm), its q/k norms "
        "over the whole projections",
        ("olmo2", "olmo3"),
        ("model.", ""),
        (*DECODER_ENDS, *_post_normed_layer("q_dim", "kv_dim")),
        {**DECODER_READS, "feedforward": ("layers.0.mlp.up_proj", 0)},  # (q_norm over q_dim: no head_dim read)
        DECODER_DEFAULTS,
    ),
    lambda: Family(
        "exaone4",
        "EXAONE 4: OLMo 2's layers (normed after attention and after the MLP) with q/k norms per head",
        ("exaone4",),
        ("model.", ""),
        (*DECODER_ENDS, *_post_normed_layer("head_dim", "head_dim")),
        {**LLAMA_READS, "feedforward": ("layers.0.mlp.up_proj", 0)},
        DECODER_DEFAULTS,
    ),
    lambda: Family(
        "starcoder2",
        "StarCoder2: Llama-style attention and LayerNorms, all with biases (`use_bias`), a two-layer MLP (c_fc, "
        "c_proj), a tied LM head",
        ("starcoder2",),
        ("model.", ""),
        (
            *DECODER_ENDS,
            *_attention("layers.{i}.self_attn", "q_proj", "k_proj", "v_proj", "o_proj"),
            _norm("layers.{i}.input_layernorm"),
            _norm("layers.{i}.post_attention_layernorm"),
            _linear("layers.{i}.mlp.c_fc", "d_model", "feedforward", "attention_bias"),
            _linear("layers.{i}.mlp.c_proj", "feedforward", "d_model", "attention_bias"),
        ),
        {**DECODER_READS, "feedforward": ("layers.0.mlp.c_fc", 0)},
        {"tied": True, "attention_bias": True, "norm_shift": True, "head_bias": False},
        config={"use_bias": "attention_bias"},  # (one flag for every projection's bias)
    ),
    lambda: Family(
        "phi",
        "Phi-1, 1.5 and 2: attention and MLP in parallel after one LayerNorm, q/k/v and a dense output with biases, "
        "fc1/fc2, an untied LM head with a bias; q/k LayerNorms per head where `qk_layernorm`",
        ("phi",),
        ("model.", ""),
        (
            Part("embed_tokens", "embedding", ("vocab", "d_model")),
            *_attention("layers.{i}.self_attn", "q_proj", "k_proj", "v_proj", "dense"),
            _norm("layers.{i}.self_attn.q_layernorm", "head_dim", when="qk_norm"),
            _norm("layers.{i}.self_attn.k_layernorm", "head_dim", when="qk_norm"),
            _norm("layers.{i}.input_layernorm"),
            _linear("layers.{i}.mlp.fc1", "d_model", "feedforward", "mlp_bias"),
            _linear("layers.{i}.mlp.fc2", "feedforward", "d_model", "mlp_bias"),
            _norm("final_layernorm"),
            _linear("/lm_head", "d_model", "vocab", "head_bias", tied="embed_tokens"),
        ),
        {
            **DECODER_READS,
            "feedforward": ("layers.0.mlp.fc1", 0),
            "head_dim": ("layers.0.self_attn.q_layernorm", 0),
        },  # fmt: skip
        {"tied": False, "attention_bias": True, "mlp_bias": True, "norm_shift": True, "head_bias": True},
        {"qk_layernorm": "qk_norm"},
    ),
    lambda: Family(
        "olmo",
        "OLMo (1): a Llama-style decoder whose LayerNorms have no weights (nothing stored for them)",
        ("olmo",),
        ("model.", ""),
        (
            Part("embed_tokens", "embedding", ("vocab", "d_model")),
            *_attention("layers.{i}.self_attn", "q_proj", "k_proj", "v_proj", "o_proj"),
            *GATED_MLP,
            _linear("/lm_head", "d_model", "vocab", "head_bias", tied="embed_tokens"),
        ),
        {**DECODER_READS, "feedforward": ("layers.0.mlp.up_proj", 0)},
        DECODER_DEFAULTS,
        stated_only=True,
    ),
    lambda: Family(
        "vaultgemma",
        "VaultGemma: Gemma's layers with one norm before attention and one before the MLP (pre_feedforward_layernorm), "
        "none after either; a tied LM head",
        ("vaultgemma",),
        ("model.", ""),
        (
            *DECODER_ENDS,
            *_attention("layers.{i}.self_attn", "q_proj", "k_proj", "v_proj", "o_proj"),
            _norm("layers.{i}.input_layernorm"),
            _norm("layers.{i}.pre_feedforward_layernorm"),
            *GATED_MLP,
        ),
        {**DECODER_READS, "feedforward": ("layers.0.mlp.up_proj", 0)},
        {**DECODER_DEFAULTS, "tied": True},
    ),
    lambda: Family(
        "nanochat",
        "nanochat: Llama-style attention and a two-layer MLP (fc1, fc2; squared ReLU), its norms and q/k norms without "
        "weights (nothing stored for them); biases on q, k, v and o where `attention_bias`",
        ("nanochat",),
        ("model.", ""),
        (
            Part("embed_tokens", "embedding", ("vocab", "d_model")),
            *_attention("layers.{i}.self_attn", "q_proj", "k_proj", "v_proj", "o_proj"),
            _linear("layers.{i}.mlp.fc1", "d_model", "feedforward", "mlp_bias"),
            _linear("layers.{i}.mlp.fc2", "feedforward", "d_model", "mlp_bias"),
            _linear("/lm_head", "d_model", "vocab", "head_bias", tied="embed_tokens"),
        ),
        {**DECODER_READS, "feedforward": ("layers.0.mlp.fc1", 0)},
        DECODER_DEFAULTS,
    ),
    lambda: Family(
        "arcee",
        "Arcee (AFM) and Jais 2: a Llama-style decoder with a two-layer MLP (up_proj, down_proj), biases and norm "
        "shifts where the file has them (Jais 2)",
        ("arcee", "jais2"),
        ("model.", ""),
        (
            *DECODER_ENDS,
            *_attention("layers.{i}.self_attn", "q_proj", "k_proj", "v_proj", "o_proj"),
            _norm("layers.{i}.input_layernorm"),
            _norm("layers.{i}.post_attention_layernorm"),
            *UP_DOWN_MLP,
        ),
        {**DECODER_READS, "feedforward": ("layers.0.mlp.up_proj", 0)},
        DECODER_DEFAULTS,
    ),
    lambda: Family(
        "apertus",
        "Apertus: Llama-style attention with per-head q/k norms, a two-layer MLP (up_proj, down_proj) whose xIELU "
        "activation learns two scalars (its beta and eps are buffers), norms before attention and before the MLP",
        ("apertus", "apertus1p5_text"),
        ("model.", ""),
        (
            *DECODER_ENDS,
            *_attention("layers.{i}.self_attn", "q_proj", "k_proj", "v_proj", "o_proj"),
            _norm("layers.{i}.self_attn.q_norm", "head_dim", when="qk_norm"),
            _norm("layers.{i}.self_attn.k_norm", "head_dim", when="qk_norm"),
            _norm("layers.{i}.attention_layernorm"),
            _norm("layers.{i}.feedforward_layernorm"),
            *UP_DOWN_MLP,
            # alpha_p and alpha_n, one each (llama.cpp's converter makes them metadata: a GGUF file has none)
            Part("layers.{i}.mlp.act_fn", "tensor", (2,), when="xielu", role="learned_tensor"),
        ),
        {**LLAMA_READS, "feedforward": ("layers.0.mlp.up_proj", 0)},
        {
            "tied": False,
            "attention_bias": False,
            "mlp_bias": False,
            "norm_shift": False,
            "head_bias": False,
            "xielu": True,
        },
    ),
    lambda: Family(
        "minicpm3",
        "MiniCPM3: a Llama-style decoder whose attention is multi-head latent attention (low-rank q, one k/v latent)",
        ("minicpm3", "youtu"),  # (Youtu-LLM: the same modules)
        ("model.", ""),
        (
            *DECODER_ENDS,
            *MLA_ATTENTION,
            _norm("layers.{i}.input_layernorm"),
            _norm("layers.{i}.post_attention_layernorm"),
            *GATED_MLP,
        ),
        {**DECODER_READS, **MLA_READS, "feedforward": ("layers.0.mlp.up_proj", 0)},
        {**DECODER_DEFAULTS, "tied": True},
        config=MLA_CONFIG,
        derive=_mla_derive,
        stated_only=True,
    ),
    lambda: _expert_layouts(
        "deepseek",
        (
            "DeepSeek-V2/V3/V3.2 (Kimi K2, GLM-4.7-Flash, GLM-5): multi-head latent attention (V3.2: beside its "
            "sparse-attention indexer), MoE layers (a router, `experts` gated experts of expert_ff and shared "
            "experts of n_shared x expert_ff) after `first_dense` dense MLP layers; the hub's MTP module where the "
            "file holds it",
            "DeepSeek-V2/V3 as transformers 5 holds it (torch.save of its state dict): the experts fused into "
            "gate_up_proj (experts, 2 expert_ff, d) and down_proj (experts, d, expert_ff)",
            "DeepSeek-V2/V3 as llama.cpp's converter writes it (GGUF): the experts stacked into gate_proj and up_proj "
            "(experts, expert_ff, d) and down_proj (experts, d, expert_ff)",
        ),
        ("deepseek_v2", "deepseek_v3", "deepseek_v32", "kimi_k2", "glm4_moe_lite", "glm_moe_dsa", "sarvam_mla"),
        (
            *DECODER_ENDS,
            *DEEPSEEK_ATTENTION,
            *DSA_INDEXER,
            _norm("layers.{i}.input_layernorm"),
            _norm("layers.{i}.post_attention_layernorm"),
            *MTP_PARTS,
        ),
        DEEPSEEK_SHARED_EXPERTS,
        {
            "vocab": ("embed_tokens", 0),
            "d_model": ("embed_tokens", 1),
            **MLA_READS,
            "q_direct_dim": ("layers.0.self_attn.q_proj", 0),
            "nope": ("layers.0.self_attn.k_b_proj", 2),  # (the split kv_b_proj's parts, where the file has them)
            "v_head": ("layers.0.self_attn.v_b_proj", 1),
            "shared_ff": ("layers.0.mlp.shared_experts.up_proj", 0),
            "feedforward": ("layers.0.mlp.up_proj", 0),
            "index_q": ("layers.0.self_attn.indexer.wq_b", 0),
            "index_dim": ("layers.0.self_attn.indexer.wk", 0),
            "index_heads": ("layers.0.self_attn.indexer.weights_proj", 0),
        },
        {**DECODER_DEFAULTS, "index_norm_shift": True},
        {**MLA_CONFIG, **DEEPSEEK_MOE_CONFIG, "index_n_heads": "index_heads", "index_head_dim": "index_dim"},
        GATED_MLP,
        _deepseek_derive,
    ),
    _deepseek_v4_family,
    lambda: _renamed(
        replace(  # (its experts fused: no module per expert)
            _deepseek_v4_family(),
            parts=tuple(p for p in _deepseek_v4_family().parts if ".experts.{e}." not in p.path),
            reads={k: v for k, v in _deepseek_v4_family().reads.items() if k != "expert_ff"},
        ),
        "deepseek_v4-fused",
        ("deepseek_v4",),
        "DeepSeek-V4 as transformers 5 holds it (torch.save of its state dict): its modules under transformers' names "
        "(self_attn.q_a_proj..., attn_hc, mlp), the experts fused into gate_up_proj (experts, 2 expert_ff, d) and "
        "down_proj (experts, d, expert_ff)",
        DEEPSEEK_V4_RENAMES,
        (
            Part("layers.{i}.mlp.experts.gate_up_proj", "tensor", ("experts", "expert_ff*2", "d_model")),
            Part("layers.{i}.mlp.experts.down_proj", "tensor", ("experts", "d_model", "expert_ff")),
        ),
        {"expert_ff": ("layers.0.mlp.experts.down_proj", 2)},
    ),
    _glm4_moe_families,
    lambda: _renamed(
        _glm4_moe_families()[0],
        "hy_v3",
        ("hy_v3",),
        "HunYuan v3: GLM-4.5's layers as its checkpoints name them (Llama-style attention, per-head q/k norms; MoE "
        "layers of a router `mlp.router.gate`, `experts` gated experts of expert_ff and shared experts "
        "`mlp.shared_mlp` of n_shared x expert_ff, after dense MLP layers), the router's score correction "
        "`expert_bias` where the file reads it as a parameter",
        {
            "layers.{i}.mlp.gate": "layers.{i}.mlp.router.gate",
            "layers.{i}.mlp.shared_experts": "layers.{i}.mlp.shared_mlp",
        },
        (EXPERT_BIAS,),
        defaults={"qk_norm": True},  # (per-head q/k norms in every HunYuan v3 model)
    ),
    lambda: _renamed(
        replace(  # (its q, k and v one projection: no q_proj to read the query's width off)
            _glm4_moe_families()[0],
            parts=tuple(
                p for p in _glm4_moe_families()[0].parts if not p.path.endswith(("q_proj", "k_proj", "v_proj"))
            ),
            reads={k: v for k, v in _glm4_moe_families()[0].reads.items() if k not in ("q_dim", "kv_dim")},
            derive=_fused_qkv_derive,
        ),
        "sarvam_moe",
        ("sarvam_moe",),
        "Sarvam-MoE: GLM-4.5's layers as its checkpoints name them (word_embeddings; attention's q, k and v fused into "
        "query_key_value, its output `dense`, per-head q/k norms query_layernorm and key_layernorm where "
        "`use_qk_norm`; MoE layers of a router beside its score correction `gate.expert_bias`, experts and shared "
        "experts, after `first_dense` dense MLP layers)",
        {
            "embed_tokens": "word_embeddings",
            "layers.{i}.self_attn.o_proj": "layers.{i}.attention.dense",
            "layers.{i}.self_attn.q_norm": "layers.{i}.attention.query_layernorm",
            "layers.{i}.self_attn.k_norm": "layers.{i}.attention.key_layernorm",
        },
        (
            _linear("layers.{i}.attention.query_key_value", "d_model", "qkv_dim", "attention_bias"),
            replace(EXPERT_BIAS, path="layers.{i}.mlp.gate.expert_bias"),
        ),
        {"qkv_dim": ("layers.0.attention.query_key_value", 0), "q_dim": ("layers.0.attention.dense", 1)},
    ),
    _qwen3_5_family,
    _qwen3_next_families,
    lambda: _vision_language(
        _qwen3_5_family(), "qwen3_5-vl", ("qwen3_5",), "Qwen3.5 vision-language (Qwen3_5ForConditionalGeneration)"
    ),
    lambda: tuple(  # (in the layouts save_pretrained and torch.save write)
        _vision_language(
            f, f.name + "-vl", ("qwen3_5_moe",), "Qwen3.5-MoE vision-language (Qwen3_5MoeForConditionalGeneration)"
        )
        for f in _qwen3_next_families()[:2]
    ),
    lambda: _vision_language(
        _llama_family(),
        "qwen3_vl",
        ("qwen3_vl",),
        "Qwen3-VL (Qwen3VLForConditionalGeneration): a Qwen3 language model, deepstack mergers in its vision tower",
        ((*QWEN_VISION_TOWER, *QWEN3_VL_DEEPSTACK), QWEN_VISION_READS),
    ),
    lambda: _vision_language(
        _qwen2_moe_families()[1],
        "qwen3_vl_moe",
        ("qwen3_vl_moe",),
        "Qwen3-VL-MoE (Qwen3VLMoeForConditionalGeneration): a Qwen3-MoE language model, its experts fused (as its "
        "checkpoints and transformers hold them), deepstack mergers in its vision tower",
        ((*QWEN_VISION_TOWER, *QWEN3_VL_DEEPSTACK), QWEN_VISION_READS),
    ),
    lambda: tuple(
        _vision_language(
            _llama_family(),
            name,
            ("qwen2_5_vl",),
            f"Qwen2.5-VL (Qwen2_5_VLForConditionalGeneration){how}: a Qwen2 language model and its vision tower "
            "(RMSNorms, a gated MLP)",
            _qwen2_vision_tower(tower, gated=True),
            bases,
        )
        for name, how, tower, bases in (
            ("qwen2_5_vl", " as its checkpoints hold it", "/visual.", ("model.",)),
            ("qwen2_5_vl-nested", " as transformers 5 holds it", "/model.visual.", ("model.language_model.",)),
        )
    ),
    lambda: tuple(
        _vision_language(
            _llama_family(),
            name,
            ("qwen2_vl",),
            f"Qwen2-VL (Qwen2VLForConditionalGeneration){how}: a Qwen2 language model and its vision tower "
            "(LayerNorms, a two-layer MLP fc1/fc2)",
            _qwen2_vision_tower(tower, gated=False),
            bases,
            QWEN2_VISION_CONFIG,
        )
        for name, how, tower, bases in (
            ("qwen2_vl", " as its checkpoints hold it", "/visual.", ("model.",)),
            ("qwen2_vl-nested", " as transformers 5 holds it", "/model.visual.", ("model.language_model.",)),
        )
    ),
    lambda: Family(
        "cohere",
        "Cohere (Command R, R7B): attention and a gated MLP in parallel after one LayerNorm without a shift, a tied "
        "LM head; per-head q/k norms where `use_qk_norm`",
        ("cohere", "cohere2"),
        ("model.", ""),
        (
            *DECODER_ENDS,
            *_attention("layers.{i}.self_attn", "q_proj", "k_proj", "v_proj", "o_proj"),
            Part("layers.{i}.self_attn.q_norm", "tensor", ("heads", "head_dim"), when="qk_norm", role="norm"),
            Part("layers.{i}.self_attn.k_norm", "tensor", ("kv_heads", "head_dim"), when="qk_norm", role="norm"),
            _norm("layers.{i}.input_layernorm"),
            *GATED_MLP,
        ),
        {
            **DECODER_READS,
            "feedforward": ("layers.0.mlp.up_proj", 0),
            "heads": ("layers.0.self_attn.q_norm", 0),
            "kv_heads": ("layers.0.self_attn.k_norm", 0),
            "head_dim": ("layers.0.self_attn.q_norm", 1),
        },  # fmt: skip
        {**DECODER_DEFAULTS, "tied": True},
        {"use_qk_norm": "qk_norm"},
        stated_only=True,
    ),
    lambda: tuple(
        replace(f, stated_only=True)  # (its modules are a Llama's attention and a Qwen-MoE's: found from its config)
        for f in _expert_layouts(
            "cohere2_moe",
            (
                "Cohere2-MoE (Command A+): attention and an MLP in parallel after one norm without a shift, a tied LM "
                "head; MoE layers of a router, `experts` gated experts of expert_ff (intermediate_size) and, where "
                "`num_shared_experts`, shared experts of n_shared x expert_ff; dense layers (`mlp_layer_types`) a "
                "gated MLP of feedforward (prefix_dense_intermediate_size)",
                "Cohere2-MoE as transformers 5 holds it (torch.save of its state dict): the experts fused into "
                "gate_up_proj (experts, 2 expert_ff, d) and down_proj (experts, d, expert_ff)",
                "Cohere2-MoE as llama.cpp's converter writes it (GGUF): the experts stacked into gate_proj and "
                "up_proj (experts, expert_ff, d) and down_proj (experts, d, expert_ff)",
            ),
            ("cohere2_moe",),
            (
                *DECODER_ENDS,
                *_attention("layers.{i}.self_attn", "q_proj", "k_proj", "v_proj", "o_proj"),
                _norm("layers.{i}.input_layernorm"),
            ),
            tuple(replace(p, when="shared_expert") for p in DEEPSEEK_SHARED_EXPERTS),
            {
                **DECODER_READS,
                "shared_ff": ("layers.0.mlp.shared_experts.up_proj", 0),
                "feedforward": ("layers.0.mlp.up_proj", 0),
            },
            {**DECODER_DEFAULTS, "tied": True},
            {
                "intermediate_size": "expert_ff",
                "prefix_dense_intermediate_size": "feedforward",
                "num_shared_experts": "n_shared",
                "mlp_layer_types": "mlp_types",
            },
            GATED_MLP,
            _cohere2_moe_derive,
        )
    ),
    _mixtral_families,
    lambda: _renamed(  # (PhiMoE's checkpoints and GGUF files are Mixtral's names; in memory its router is `mlp.router`)
        _mixtral_families()[1],
        "phimoe-fused",
        ("phimoe",),
        "PhiMoE as transformers 5 holds it (torch.save of its state dict): Mixtral's fused layout, its router `router`",
        {"layers.{i}.mlp.gate": "layers.{i}.mlp.router"},
    ),
    lambda: tuple(
        _whole_qk_norms(
            f,
            f.name.replace("mixtral", "minimax_m2"),
            ("minimax_m2",),
            "MiniMax-M2 (q/k norms over the whole projections)",
        )
        for f in _mixtral_families()
    ),
    lambda: tuple(
        _lightning_layers(f) for f in _mixtral_families()[:2]
    ),  # (llama.cpp has no lightning attention: no GGUF layout)
    _qwen2_moe_families,
    lambda: _laguna_families()[0],
    lambda: tuple(  # (transformers and llama.cpp's converter name the shared expert as DeepSeek does)
        _renamed(
            f, f.name, f.model_types, f.description, {"layers.{i}.mlp.shared_expert": "layers.{i}.mlp.shared_experts"}
        )
        for f in _laguna_families()[1:]
    ),
    lambda: _expert_layouts(
        "olmoe",
        (
            "OLMoE: Llama-style attention with q/k norms over the whole projection, a router and `experts` gated "
            "experts of expert_ff per layer",
            "OLMoE as transformers 5 holds it (torch.save of its state dict): the experts fused into gate_up_proj "
            "(experts, 2 expert_ff, d) and down_proj (experts, d, expert_ff)",
            "OLMoE as llama.cpp's converter writes it (GGUF): the experts stacked into gate_proj and up_proj "
            "(experts, expert_ff, d) and down_proj (experts, d, expert_ff)",
        ),
        ("olmoe",),
        (
            *DECODER_ENDS,
            *_attention("layers.{i}.self_attn", "q_proj", "k_proj", "v_proj", "o_proj"),
            _norm("layers.{i}.self_attn.q_norm", "q_dim"),
            _norm("layers.{i}.self_attn.k_norm", "kv_dim"),
            _norm("layers.{i}.input_layernorm"),
            _norm("layers.{i}.post_attention_layernorm"),
        ),
        (),
        {k: v for k, v in LLAMA_READS.items() if k != "head_dim"},  # (its q_norm is as wide as q_proj)
        {"tied": False, "attention_bias": False, "norm_shift": False, "head_bias": False},
        {"intermediate_size": "expert_ff"},  # (OLMoE's experts are its intermediate_size)
    ),
    _granite_moe_families,
    lambda: _renamed(  # (llama.cpp's converter writes both Granite SWA models as the architecture granite_swa)
        _granite_moe_families()[1],
        "granitemoe_swa",
        ("granitemoe_swa", "granite_swa"),
        "Granite MoE SWA: Granite MoE's layers as transformers holds them (the router as router, the experts fused "
        "into experts.gate_up_proj and experts.down_proj, an optional shared MLP) with a learned sink per attention "
        "head (self_attn.sinks)",
        {},
        (ATTENTION_SINKS,),
        SINK_READS,
    ),
    lambda: tuple(
        _granite_hybrid(f) for f in _granite_moe_families()[:2]
    ),  # (as its checkpoints and as transformers hold it)
    lambda: tuple(
        Family(
            name,
            f"Llama 4 (text){how}: Llama-style attention; MoE layers (a router, {experts} and a shared expert of "
            "expert_ff) interleaved with dense MLP layers of feedforward",
            ("llama4_text",),
            ("model.", ""),
            (
                *DECODER_ENDS,
                *_attention("layers.{i}.self_attn", "q_proj", "k_proj", "v_proj", "o_proj"),
                _norm("layers.{i}.input_layernorm"),
                _norm("layers.{i}.post_attention_layernorm"),
                *(  # (mandatory: a Llama 4 file has MoE layers, and a Llama-like file without them is not one)
                    replace(p, over="moe_layers")
                    for p in (
                        _linear("layers.{i}.feed_forward.router", "d_model", "experts"),
                        *experts_parts,
                        _linear("layers.{i}.feed_forward.shared_expert.gate_proj", "d_model", "expert_ff"),
                        _linear("layers.{i}.feed_forward.shared_expert.up_proj", "d_model", "expert_ff"),
                        _linear("layers.{i}.feed_forward.shared_expert.down_proj", "expert_ff", "d_model"),
                    )
                ),
                *DENSE_FEED_FORWARD,
            ),
            {
                "vocab": ("embed_tokens", 0),
                "d_model": ("embed_tokens", 1),
                "q_dim": ("layers.0.self_attn.q_proj", 0),
                "kv_dim": ("layers.0.self_attn.k_proj", 0),
                "experts": ("layers.0.feed_forward.router", 0),
                "expert_ff": ("layers.0.feed_forward.shared_expert.up_proj", 0),
                "feedforward": ("layers.0.feed_forward.up_proj", 0),
            },
            {"tied": False, "attention_bias": False, "norm_shift": False, "head_bias": False, "dense_mlp": True},
            {
                "intermediate_size": "expert_ff",
                "intermediate_size_mlp": "feedforward",
                "interleave_moe_layer_step": "moe_step",
            },
            derive=_moe_derive,
        )
        for name, how, experts, experts_parts in (
            (
                "llama4",
                "",
                "experts fused into gate_up_proj (experts, d, 2 expert_ff) and down_proj (experts, expert_ff, d)",
                (
                    Part(
                        "layers.{i}.feed_forward.experts.gate_up_proj", "tensor", ("experts", "d_model", "expert_ff*2")
                    ),
                    Part("layers.{i}.feed_forward.experts.down_proj", "tensor", ("experts", "expert_ff", "d_model")),
                ),
            ),
            (
                "llama4-stacked",
                " as llama.cpp's converter writes it (GGUF)",
                "experts stacked into gate_proj and up_proj (experts, expert_ff, d) and down_proj (experts, d, "
                "expert_ff)",
                _feed_forward_stacked("expert_ff"),
            ),
        )
    ),
    lambda: Family(
        "exaone",
        "EXAONE 3 / 3.5: a Llama-style decoder under GPT-2-like names (wte, h.N.attn.attention.*, a gated MLP "
        "c_fc_0/c_fc_1/c_proj, ln_1/ln_2/ln_f), as its hub checkpoints hold it (in memory: Llama's names)",
        ("exaone",),
        ("transformer.", ""),
        (
            Part("wte", "embedding", ("vocab", "d_model")),
            _norm("h.{i}.ln_1"),
            *_attention("h.{i}.attn.attention", "q_proj", "k_proj", "v_proj", "out_proj"),
            _norm("h.{i}.ln_2"),
            _linear("h.{i}.mlp.c_fc_0", "d_model", "feedforward", "mlp_bias", role=FFN_GATE),
            _linear("h.{i}.mlp.c_fc_1", "d_model", "feedforward", "mlp_bias", role=FFN_UP),
            _linear("h.{i}.mlp.c_proj", "feedforward", "d_model", "mlp_bias", role=FFN_DOWN),
            _norm("ln_f"),
            _linear("/lm_head", "d_model", "vocab", "head_bias", tied="wte"),
        ),
        {
            "vocab": ("wte", 0),
            "d_model": ("wte", 1),
            "q_dim": ("h.0.attn.attention.q_proj", 0),
            "kv_dim": ("h.0.attn.attention.k_proj", 0),
            "feedforward": ("h.0.mlp.c_fc_0", 0),
        },
        DECODER_DEFAULTS,
    ),
    lambda: Family(
        "lfm2",
        "LFM2 (Liquid): gated short convolutions (conv.in_proj to 3 d_model, a depthwise conv over conv_cache steps, "
        "out_proj) in some layers, grouped-query attention with per-head q/k norms in the others; a SwiGLU "
        "feed-forward (w1, w3, w2) of the width the config's auto-adjust rule gives; the final norm named "
        "embedding_norm",
        ("lfm2",),
        ("model.", ""),
        (*LFM2_LAYER, *LFM2_MLP),
        {**LFM2_READS, "feedforward": ("layers.0.feed_forward.w1", 0)},
        {**DECODER_DEFAULTS, "tied": True, "conv_bias": False},
        {
            **LFM2_CONFIG,
            "block_auto_adjust_ff_dim": "ff_auto",
            "block_ffn_dim_multiplier": "ff_multiplier",
            "block_multiple_of": "ff_multiple",
        },
        derive=_lfm2_derive,
    ),
    lambda: tuple(
        Family(
            name,
            f"LFM2-MoE (Liquid){how}: LFM2's layers (gated short convolutions or attention with per-head q/k norms); a "
            "SwiGLU feed-forward (w1, w3, w2) in the first `first_dense` layers, a router and `experts` SwiGLU experts "
            f"of expert_ff{experts} in the others",
            ("lfm2_moe",),
            ("model.", ""),
            (
                *LFM2_LAYER,
                *(replace(p, when="dense_mlp", over="dense_layers") for p in LFM2_MLP),
                *(
                    replace(p, over="moe_layers")
                    for p in (_linear("layers.{i}.feed_forward.gate", "d_model", "experts"), *expert_parts)
                ),
                # the router's score correction (`use_expert_bias`): a buffer in transformers, so no part of the model
                # where the file's tensors are read so; where they are read as a parameter (no rule makes this name a
                # buffer), the file's own tensor, counted as it is counted
                Part(
                    "layers.{i}.feed_forward.expert_bias", "tensor", ("experts",), when="expert_bias", over="moe_layers"
                ),
            ),
            {
                **LFM2_READS,
                "feedforward": ("layers.0.feed_forward.w1", 0),
                "experts": ("layers.0.feed_forward.gate", 0),
                "expert_ff": expert_ff,
            },
            {**DECODER_DEFAULTS, "tied": True, "conv_bias": False, "dense_mlp": True},
            {**LFM2_CONFIG, "num_dense_layers": "first_dense"},
            derive=_lfm2_moe_derive,
        )
        for name, how, experts, expert_parts, expert_ff in (
            (
                "lfm2_moe",
                "",
                " (w1, w3, w2 each)",
                (
                    _linear("layers.{i}.feed_forward.experts.{e}.w1", "d_model", "expert_ff", role=FFN_GATE),
                    _linear("layers.{i}.feed_forward.experts.{e}.w3", "d_model", "expert_ff", role=FFN_UP),
                    _linear("layers.{i}.feed_forward.experts.{e}.w2", "expert_ff", "d_model", role=FFN_DOWN),
                ),
                ("layers.0.feed_forward.experts.0.w1", 0),
            ),
            (
                "lfm2_moe-fused",
                " as transformers 5 holds it (torch.save of its state dict)",
                " fused into gate_up_proj (experts, 2 expert_ff, d) and down_proj (experts, d, expert_ff)",
                (
                    Part(
                        "layers.{i}.feed_forward.experts.gate_up_proj", "tensor", ("experts", "expert_ff*2", "d_model")
                    ),
                    Part("layers.{i}.feed_forward.experts.down_proj", "tensor", ("experts", "d_model", "expert_ff")),
                ),
                ("layers.0.feed_forward.experts.down_proj", 2),
            ),
            (
                "lfm2_moe-stacked",
                " as llama.cpp's converter writes it (GGUF)",
                " stacked into gate_proj and up_proj (experts, expert_ff, d) and down_proj (experts, d, expert_ff)",
                _feed_forward_stacked("expert_ff"),
                ("layers.0.feed_forward.experts.down_proj", 2),
            ),
        )
    ),
    lambda: tuple(
        Family(
            name,
            f"gpt-oss{how}: attention with biases and a learned sink per head (sliding and full layers alike), a "
            f"router with a bias, `experts` experts {experts}, each projection with a bias per expert",
            ("gpt_oss",),
            ("model.", ""),
            (
                *DECODER_ENDS,
                *_attention("layers.{i}.self_attn", "q_proj", "k_proj", "v_proj", "o_proj"),
                Part("layers.{i}.self_attn.sinks", "tensor", ("heads",), role="learned_tensor"),
                _norm("layers.{i}.input_layernorm"),
                _norm("layers.{i}.post_attention_layernorm"),
                _linear("layers.{i}.mlp.router", "d_model", "experts", "router_bias", role="moe_router"),
                *(Part(f"layers.{{i}}.mlp.experts.{path}", "tensor", dims, role=role) for path, dims, role in parts),
            ),
            {
                "vocab": ("embed_tokens", 0),
                "d_model": ("embed_tokens", 1),
                "q_dim": ("layers.0.self_attn.q_proj", 0),
                "kv_dim": ("layers.0.self_attn.k_proj", 0),
                "heads": ("layers.0.self_attn.sinks", 0),
                "experts": ("layers.0.mlp.router", 0),
                "feedforward": ("layers.0.mlp.experts." + parts[-1][0], ff_axis),  # (the down projection's weight)
            },
            {**DECODER_DEFAULTS, "attention_bias": True, "router_bias": True},
        )
        for name, how, experts, parts, ff_axis in (
            (
                "gpt_oss",
                " as transformers holds it (save_pretrained, torch.save, bf16 re-releases)",
                "fused into gate_up_proj (experts, d, 2 ff) and down_proj (experts, ff, d)",
                (
                    ("gate_up_proj", ("experts", "d_model", "feedforward*2"), FFN_UP),
                    ("gate_up_proj_bias", ("experts", "feedforward*2"), FFN_UP),
                    ("down_proj_bias", ("experts", "d_model"), FFN_DOWN),
                    ("down_proj", ("experts", "feedforward", "d_model"), FFN_DOWN),
                ),
                1,
            ),
            (
                "gpt_oss-mxfp4",
                " as OpenAI releases it (MXFP4 experts, read as the values they pack)",
                "as MXFP4 blocks, gate_up_proj_blocks (experts, 2 ff, d values) and down_proj_blocks (experts, d, ff), "
                "a scale a block of 32 beside each",
                (
                    ("gate_up_proj_blocks", ("experts", "feedforward*2", "d_model"), FFN_UP),
                    ("gate_up_proj_bias", ("experts", "feedforward*2"), FFN_UP),
                    ("down_proj_bias", ("experts", "d_model"), FFN_DOWN),
                    ("down_proj_blocks", ("experts", "d_model", "feedforward"), FFN_DOWN),
                ),
                2,
            ),
            (
                "gpt_oss-stacked",
                " as llama.cpp's converter writes it (GGUF)",
                "stacked into gate_proj and up_proj (experts, ff, d) and down_proj (experts, d, ff), the fused "
                "projection's halves apart",
                (
                    ("gate_proj.weight", ("experts", "feedforward", "d_model"), FFN_GATE),
                    ("gate_proj.bias", ("experts", "feedforward"), FFN_GATE),
                    ("up_proj.weight", ("experts", "feedforward", "d_model"), FFN_UP),
                    ("up_proj.bias", ("experts", "feedforward"), FFN_UP),
                    ("down_proj.bias", ("experts", "d_model"), FFN_DOWN),
                    ("down_proj.weight", ("experts", "d_model", "feedforward"), FFN_DOWN),
                ),
                2,
            ),
        )
    ),
    lambda: tuple(
        _hub_mtp(
            Family(
                name,
                f"Nemotron-H (Nemotron Nano 2, Nemotron 3){how}: each layer one mixer after a norm, a Mamba-2 block "
                "(fused in_proj, conv1d, per-head A_log, D and dt_bias, a gated norm, out_proj), grouped-query "
                f"attention, a squared-ReLU MLP (up_proj, down_proj) or a MoE block (a router, experts {experts}, a "
                "shared expert; where `moe_latent_size` sets one, the experts in a latent space, fc1_latent_proj and "
                "fc2_latent_proj into and out of it); the hub's MTP module (`mtp.`) where the file holds it",
                ("nemotron_h",),
                bases,
                (
                    Part("embeddings", "embedding", ("vocab", "d_model")),
                    _norm("layers.{i}.norm"),
                    _norm("norm_f"),
                    _linear("/lm_head", "d_model", "vocab", "head_bias", tied="embeddings"),
                    *(
                        replace(p, over="mamba_layers")
                        for p in _mamba2_mixer("ssm_heads", "ssm_inner", "ssm_conv", "ssm_in")
                    ),
                    *(
                        replace(p, over="attention_layers")
                        for p in _attention("layers.{i}.mixer", "q_proj", "k_proj", "v_proj", "o_proj")
                    ),
                    # (a kind of layer a model may have none of: Nemotron Nano 2 has no MoE layer, Nemotron 3 no MLP)
                    *(
                        replace(p, when="mlp", over="mlp_layers")
                        for p in (
                            _linear("layers.{i}.mixer.up_proj", "d_model", "feedforward", "mlp_bias"),
                            _linear("layers.{i}.mixer.down_proj", "feedforward", "d_model", "mlp_bias"),
                        )
                    ),
                    *(
                        replace(p, when=p.when or "moe", over="moe_layers")
                        for p in (
                            _linear("layers.{i}.mixer.gate", "d_model", "experts"),
                            *expert_parts,
                            *NEMOTRON_LATENT_MOE,
                            _linear("layers.{i}.mixer.shared_experts.up_proj", "d_model", "shared_ff", "mlp_bias"),
                            _linear("layers.{i}.mixer.shared_experts.down_proj", "shared_ff", "d_model", "mlp_bias"),
                        )
                    ),
                    # the hub's MTP module where the file holds it (Nemotron 3's `mtp.layers.0` and `.1`: llama.cpp's
                    # converter writes the two as one layer after the last, an attention and a MoE mixer, the latter's
                    # norm named post_attention_layernorm)
                    *MTP_PARTS,
                    replace(MTP_PARTS[0], path="layers.{i}.post_attention_layernorm"),
                ),
                {
                    "vocab": ("embeddings", 0),
                    "d_model": ("embeddings", 1),
                    "ssm_heads": ("layers.0.mixer.A_log", 0),
                    "ssm_inner": ("layers.0.mixer.out_proj", 1),
                    "ssm_in": ("layers.0.mixer.in_proj", 0),
                    "ssm_conv": ("layers.0.mixer.conv1d", 0),
                    "conv_kernel": ("layers.0.mixer.conv1d", 2),
                    "q_dim": ("layers.0.mixer.q_proj", 0),
                    "kv_dim": ("layers.0.mixer.k_proj", 0),
                    "feedforward": ("layers.0.mixer.up_proj", 0),
                    "experts": ("layers.0.mixer.gate", 0),
                    "expert_ff": expert_ff,
                    "shared_ff": ("layers.0.mixer.shared_experts.up_proj", 0),
                    "moe_latent": ("layers.0.mixer.fc1_latent_proj", 0),
                },
                {**DECODER_DEFAULTS, "conv_bias": True, "ssm_bias": False, "mlp": True, "moe": True},
                {
                    "mamba_num_heads": "ssm_heads",
                    "mamba_head_dim": "ssm_head_dim",
                    "n_groups": "groups",
                    "ssm_state_size": "state",
                    "conv_kernel": "conv_kernel",
                    "use_conv_bias": "conv_bias",
                    "use_bias": "ssm_bias",  # (in_proj's and out_proj's: NemotronH's mixer reads no mamba_proj_bias)
                    "n_routed_experts": "experts",
                    "moe_shared_expert_intermediate_size": "shared_ff",
                    "moe_latent_size": "moe_latent",
                },
                derive=_nemotron_h_derive,
            ),
            NEMOTRON_HUB_MTP,
        )
        for name, how, bases, experts, expert_parts, expert_ff in (
            (
                "nemotron_h",
                "",
                ("backbone.", ""),
                "of up_proj and down_proj each",
                (
                    _linear("layers.{i}.mixer.experts.{e}.up_proj", "moe_in", "expert_ff"),
                    _linear("layers.{i}.mixer.experts.{e}.down_proj", "expert_ff", "moe_in"),
                ),
                ("layers.0.mixer.experts.0.up_proj", 0),
            ),
            (
                "nemotron_h-fused",
                " as transformers holds it (torch.save of its state dict)",
                ("model.", ""),
                "fused into up_proj (experts, expert_ff, d) and down_proj (experts, d, expert_ff)",
                (
                    Part("layers.{i}.mixer.experts.up_proj", "tensor", ("experts", "expert_ff", "moe_in")),
                    Part("layers.{i}.mixer.experts.down_proj", "tensor", ("experts", "moe_in", "expert_ff")),
                ),
                ("layers.0.mixer.experts.down_proj", 2),
            ),
        )
    ),
    lambda: tuple(
        Family(
            name,
            f"Jamba{how}: Mamba layers (Mamba's mixer, RMSNorms over its time step, B and C) and, every "
            "`attn_period`-th, grouped-query attention; every `expert_period`-th layer a router and `experts` gated "
            f"experts{experts}, the others a gated MLP",
            ("jamba",),
            ("model.", ""),
            (
                Part("embed_tokens", "embedding", ("vocab", "d_model")),
                _norm("final_layernorm"),
                _linear("/lm_head", "d_model", "vocab", "head_bias", tied="embed_tokens"),
                _norm("layers.{i}.input_layernorm"),
                _norm("layers.{i}.pre_ff_layernorm"),
                *(
                    replace(p, over="mamba_layers")
                    for p in (
                        *_mamba_mixer("mamba"),
                        _norm("layers.{i}.mamba.dt_layernorm", "dt_rank"),
                        _norm("layers.{i}.mamba.b_layernorm", "state"),
                        _norm("layers.{i}.mamba.c_layernorm", "state"),
                    )
                ),
                # (a kind of layer a small Jamba may have none of: 2 layers have no attention, one expert no MoE)
                *(
                    replace(p, when="attention", over="attention_layers")
                    for p in _attention("layers.{i}.self_attn", "q_proj", "k_proj", "v_proj", "o_proj")
                ),
                *(
                    replace(p, when="moe", over="moe_layers")
                    for p in (_linear("layers.{i}.feed_forward.router", "d_model", "experts"), *expert_parts)
                ),
                *DENSE_FEED_FORWARD,
            ),
            {
                "vocab": ("embed_tokens", 0),
                "d_model": ("embed_tokens", 1),
                "inner": ("layers.0.mamba.A_log", 0),
                "state": ("layers.0.mamba.A_log", 1),
                "dt_rank": ("layers.0.mamba.dt_proj", 1),
                "x_dim": ("layers.0.mamba.x_proj", 0),
                "conv_kernel": ("layers.0.mamba.conv1d", 2),
                "q_dim": ("layers.0.self_attn.q_proj", 0),
                "kv_dim": ("layers.0.self_attn.k_proj", 0),
                "feedforward": ("layers.0.feed_forward.up_proj", 0),
                "experts": ("layers.0.feed_forward.router", 0),
                "experts_ff": experts_ff,  # (the MLP's width where no layer holds a dense MLP)
            },
            {
                **DECODER_DEFAULTS,
                "ssm_bias": False,
                "conv_bias": True,
                "dt_bias": True,
                "attention": True,
                "moe": True,
                "dense_mlp": True,
            },
            {
                "mamba_d_state": "state",
                "mamba_d_conv": "conv_kernel",
                "mamba_expand": "expand",
                "mamba_dt_rank": "dt_rank",
                "mamba_conv_bias": "conv_bias",
                "mamba_proj_bias": "ssm_bias",
                "attn_layer_period": "attn_period",
                "attn_layer_offset": "attn_offset",
                "expert_layer_period": "expert_period",
                "expert_layer_offset": "expert_offset",
            },
            derive=_jamba_derive,
        )
        for name, how, experts, expert_parts, experts_ff in (
            (
                "jamba",
                "",
                " of feedforward (gate_proj, up_proj, down_proj each)",
                (
                    _linear("layers.{i}.feed_forward.experts.{e}.gate_proj", "d_model", "feedforward"),
                    _linear("layers.{i}.feed_forward.experts.{e}.up_proj", "d_model", "feedforward"),
                    _linear("layers.{i}.feed_forward.experts.{e}.down_proj", "feedforward", "d_model"),
                ),
                ("layers.0.feed_forward.experts.0.up_proj", 0),
            ),
            (
                "jamba-fused",
                " as transformers 5 holds it (torch.save of its state dict)",
                " fused into gate_up_proj (experts, 2 ff, d) and down_proj (experts, d, ff)",
                (
                    Part(
                        "layers.{i}.feed_forward.experts.gate_up_proj",
                        "tensor",
                        ("experts", "feedforward*2", "d_model"),
                    ),
                    Part("layers.{i}.feed_forward.experts.down_proj", "tensor", ("experts", "d_model", "feedforward")),
                ),
                ("layers.0.feed_forward.experts.down_proj", 2),
            ),
            (
                "jamba-stacked",
                " as llama.cpp's converter writes it (GGUF)",
                " stacked into gate_proj and up_proj (experts, ff, d) and down_proj (experts, d, ff)",
                _feed_forward_stacked("feedforward"),
                ("layers.0.feed_forward.experts.down_proj", 2),
            ),
        )
    ),
    lambda: Family(
        "falcon_h1",
        "Falcon-H1: in every layer a Mamba-2 mixer (fused in_proj, conv1d, per-head A_log, D and dt_bias, the gated "
        "norm where `mamba_rms_norm`, out_proj) beside grouped-query attention, after one norm, then a gated MLP",
        ("falcon_h1",),
        ("model.", ""),
        (
            Part("embed_tokens", "embedding", ("vocab", "d_model")),
            _norm("final_layernorm"),
            _linear("/lm_head", "d_model", "vocab", "head_bias", tied="embed_tokens"),
            _norm("layers.{i}.input_layernorm"),
            *(
                replace(p, when="ssm_norm") if p.path.endswith(".norm") else p
                for p in _mamba2_mixer("ssm_heads", "ssm_inner", "ssm_conv", "ssm_in", "mamba")[:-1]
            ),
            # (its bias `projectors_bias`, not in_proj's `mamba_proj_bias`)
            _linear("layers.{i}.mamba.out_proj", "ssm_inner", "d_model", "projectors_bias", role="dense"),
            *_attention("layers.{i}.self_attn", "q_proj", "k_proj", "v_proj", "o_proj"),
            _norm("layers.{i}.pre_ff_layernorm"),
            _linear("layers.{i}.feed_forward.gate_proj", "d_model", "feedforward", "mlp_bias"),
            _linear("layers.{i}.feed_forward.up_proj", "d_model", "feedforward", "mlp_bias"),
            _linear("layers.{i}.feed_forward.down_proj", "feedforward", "d_model", "mlp_bias"),
        ),
        {
            "vocab": ("embed_tokens", 0),
            "d_model": ("embed_tokens", 1),
            "ssm_heads": ("layers.0.mamba.A_log", 0),
            "ssm_inner": ("layers.0.mamba.out_proj", 1),
            "ssm_in": ("layers.0.mamba.in_proj", 0),
            "ssm_conv": ("layers.0.mamba.conv1d", 0),
            "conv_kernel": ("layers.0.mamba.conv1d", 2),
            "q_dim": ("layers.0.self_attn.q_proj", 0),
            "kv_dim": ("layers.0.self_attn.k_proj", 0),
            "feedforward": ("layers.0.feed_forward.up_proj", 0),
        },
        {**DECODER_DEFAULTS, "ssm_bias": False, "projectors_bias": False, "conv_bias": True, "ssm_norm": False},
        {
            "mamba_d_ssm": "ssm_inner",
            "mamba_n_heads": "ssm_heads",
            "mamba_d_head": "ssm_head_dim",
            "mamba_n_groups": "groups",
            "mamba_d_state": "state",
            "mamba_d_conv": "conv_kernel",
            "mamba_expand": "expand",
            "mamba_conv_bias": "conv_bias",
            "mamba_proj_bias": "ssm_bias",
            "projectors_bias": "projectors_bias",
        },
        derive=_falcon_h1_derive,
        uniform=True,
    ),
    lambda: Family(
        "gpt2",
        "GPT-2: token and position embeddings, fused qkv (Conv1D, (in, out) weights), pre-norm blocks, tied LM head",
        ("gpt2",),
        ("transformer.", ""),
        GPT2_PARTS,
        {"vocab": ("wte", 0), "d_model": ("wte", 1), "positions": ("wpe", 0), "feedforward": ("h.0.mlp.c_fc", 1)},
        {"tied": True, "attention_bias": True, "mlp_bias": True, "norm_shift": True, "head_bias": False},
    ),
    lambda: Family(
        "gpt_bigcode",
        "GPTBigCode (StarCoder, SantaCoder): GPT-2's modules as (out, in) Linear weights, the fused qkv multi-query "
        "(one key/value head) where the config says",
        ("gpt_bigcode",),
        ("transformer.", ""),
        GPT2_PARTS,
        {
            "vocab": ("wte", 0),
            "d_model": ("wte", 1),
            "positions": ("wpe", 0),
            "qkv_dim": ("h.0.attn.c_attn", 0),
            "feedforward": ("h.0.mlp.c_fc", 0),
        },  # fmt: skip
        {"tied": True, "attention_bias": True, "mlp_bias": True, "norm_shift": True, "head_bias": False},
    ),
    lambda: Family(
        "openai-gpt",
        "GPT (OpenAI GPT-1): GPT-2's modules (a fused qkv and a two-layer MLP as Conv1D, (in, out) weights) normed "
        "after attention and after the MLP, no final norm; token and position embeddings, a tied LM head",
        ("openai-gpt",),
        ("transformer.", ""),
        (
            Part("tokens_embed", "embedding", ("vocab", "d_model")),
            Part("positions_embed", "embedding", ("positions", "d_model")),
            _linear("h.{i}.attn.c_attn", "d_model", "qkv_dim", "attention_bias"),
            _linear("h.{i}.attn.c_proj", "d_model", "d_model", "attention_bias", role="attention_output"),
            _norm("h.{i}.ln_1"),
            _linear("h.{i}.mlp.c_fc", "d_model", "feedforward", "mlp_bias"),
            _linear("h.{i}.mlp.c_proj", "feedforward", "d_model", "mlp_bias"),
            _norm("h.{i}.ln_2"),
            _linear("/lm_head", "d_model", "vocab", "head_bias", tied="tokens_embed"),
        ),
        {
            "vocab": ("tokens_embed", 0),
            "d_model": ("tokens_embed", 1),
            "positions": ("positions_embed", 0),
            "feedforward": ("h.0.mlp.c_fc", 1),
        },
        {"tied": True, "attention_bias": True, "mlp_bias": True, "norm_shift": True, "head_bias": False},
    ),
    lambda: Family(
        "gpt_neox",
        "GPT-NeoX / Pythia: fused query_key_value, parallel attention and MLP, untied embed_out",
        ("gpt_neox",),
        ("gpt_neox.", ""),
        (*GPT_NEOX_BODY, _linear("/embed_out", "d_model", "vocab", "head_bias", tied="embed_in")),
        *GPT_NEOX_SIZES,
    ),
    lambda: Family(
        "gpt_neox-lm_head",
        "GPT-NeoX as transformers 5 holds it (torch.save of its state dict): the head named lm_head, not embed_out",
        ("gpt_neox",),
        ("gpt_neox.", ""),
        (*GPT_NEOX_BODY, _linear("/lm_head", "d_model", "vocab", "head_bias", tied="embed_in")),
        *GPT_NEOX_SIZES,
    ),
    lambda: Family(
        "persimmon",
        "Persimmon: GPT-NeoX's fused query_key_value and dense output under self_attn, with biases, per-head q/k "
        "LayerNorms where `qk_layernorm`, a two-layer MLP (dense_h_to_4h, dense_4h_to_h), LayerNorms before attention "
        "and before the MLP, an untied LM head",
        ("persimmon",),
        ("model.", ""),
        (
            Part("embed_tokens", "embedding", ("vocab", "d_model")),
            _linear("layers.{i}.self_attn.query_key_value", "d_model", "qkv_dim", "attention_bias"),
            _linear("layers.{i}.self_attn.dense", "q_dim", "d_model", "attention_bias", role="attention_output"),
            _norm("layers.{i}.self_attn.q_layernorm", "head_dim", when="qk_norm"),
            _norm("layers.{i}.self_attn.k_layernorm", "head_dim", when="qk_norm"),
            _norm("layers.{i}.input_layernorm"),
            _norm("layers.{i}.post_attention_layernorm"),
            _linear("layers.{i}.mlp.dense_h_to_4h", "d_model", "feedforward", "mlp_bias"),
            _linear("layers.{i}.mlp.dense_4h_to_h", "feedforward", "d_model", "mlp_bias"),
            _norm("final_layernorm"),
            _linear("/lm_head", "d_model", "vocab", "head_bias", tied="embed_tokens"),
        ),
        {
            "vocab": ("embed_tokens", 0),
            "d_model": ("embed_tokens", 1),
            "feedforward": ("layers.0.mlp.dense_h_to_4h", 0),
            "head_dim": ("layers.0.self_attn.q_layernorm", 0),
        },
        {"tied": False, "attention_bias": True, "mlp_bias": True, "norm_shift": True, "head_bias": False},
        {"qk_layernorm": "qk_norm"},
    ),
    lambda: Family(
        "gptj",
        "GPT-J: separate bias-free q/k/v/out projections, one LayerNorm per block (parallel), LM head with bias",
        ("gptj",),
        ("transformer.", ""),
        (
            Part("wte", "embedding", ("vocab", "d_model")),
            _norm("h.{i}.ln_1"),
            *_attention("h.{i}.attn", "q_proj", "k_proj", "v_proj", "out_proj"),
            _linear("h.{i}.mlp.fc_in", "d_model", "feedforward", "mlp_bias"),
            _linear("h.{i}.mlp.fc_out", "feedforward", "d_model", "mlp_bias"),
            _norm("ln_f"),
            _linear("/lm_head", "d_model", "vocab", "head_bias", tied="wte"),
        ),
        {"vocab": ("wte", 0), "d_model": ("wte", 1), "feedforward": ("h.0.mlp.fc_in", 0)},
        {"tied": False, "attention_bias": False, "mlp_bias": True, "norm_shift": True, "head_bias": True},
    ),
    lambda: Family(
        "codegen",
        "CodeGen: GPT-J's blocks (one LayerNorm, attention and MLP in parallel, an untied LM head with a bias) with "
        "q, k and v fused into one bias-free qkv_proj",
        ("codegen",),
        ("transformer.", ""),
        (
            Part("wte", "embedding", ("vocab", "d_model")),
            _norm("h.{i}.ln_1"),
            _linear("h.{i}.attn.qkv_proj", "d_model", "qkv_dim", "attention_bias"),
            _linear("h.{i}.attn.out_proj", "d_model", "d_model", "attention_bias", role="attention_output"),
            _linear("h.{i}.mlp.fc_in", "d_model", "feedforward", "mlp_bias"),
            _linear("h.{i}.mlp.fc_out", "feedforward", "d_model", "mlp_bias"),
            _norm("ln_f"),
            _linear("/lm_head", "d_model", "vocab", "head_bias", tied="wte"),
        ),
        {
            "vocab": ("wte", 0),
            "d_model": ("wte", 1),
            "qkv_dim": ("h.0.attn.qkv_proj", 0),
            "feedforward": ("h.0.mlp.fc_in", 0),
        },  # fmt: skip
        {"tied": False, "attention_bias": False, "mlp_bias": True, "norm_shift": True, "head_bias": True},
    ),
    lambda: Family(
        "ctrl",
        "CTRL: sinusoidal positions (a buffer, nothing stored), pre-norm blocks of q/k/v projections (Wq, Wk, Wv) and "
        "a dense output and a two-layer MLP (ffn.0, ffn.2), all with biases; a final LayerNorm, an LM head tied to "
        "the embedding, with a bias of its own",
        ("ctrl",),
        ("transformer.", ""),
        (
            Part("w", "embedding", ("vocab", "d_model")),
            *_attention("h.{i}.multi_head_attention", "Wq", "Wk", "Wv", "dense"),
            _norm("h.{i}.layernorm1"),
            _linear("h.{i}.ffn.0", "d_model", "feedforward", "mlp_bias"),
            _linear("h.{i}.ffn.2", "feedforward", "d_model", "mlp_bias"),
            _norm("h.{i}.layernorm2"),
            _norm("layernorm"),
            _linear("/lm_head", "d_model", "vocab", "head_bias", tied="w"),
        ),
        {"vocab": ("w", 0), "d_model": ("w", 1), "feedforward": ("h.0.ffn.0", 0)},
        {"tied": True, "attention_bias": True, "mlp_bias": True, "norm_shift": True, "head_bias": True},
        {"dff": "feedforward"},
    ),
    lambda: Family(
        "falcon",
        "Falcon: fused query_key_value (multi-query: one k/v head), parallel attention and MLP, tied LM head",
        ("falcon",),
        ("transformer.", ""),
        (
            Part("word_embeddings", "embedding", ("vocab", "d_model")),
            _norm("h.{i}.input_layernorm", when="single_norm"),
            _norm("h.{i}.ln_attn", when="two_norms"),
            _norm("h.{i}.ln_mlp", when="two_norms"),
            _norm("h.{i}.post_attention_layernorm", when="sequential"),
            _linear("h.{i}.self_attention.query_key_value", "d_model", "qkv_dim", "attention_bias"),
            _linear("h.{i}.self_attention.dense", "d_model", "d_model", "attention_bias", role="attention_output"),
            _linear("h.{i}.mlp.dense_h_to_4h", "d_model", "feedforward", "attention_bias"),
            _linear("h.{i}.mlp.dense_4h_to_h", "feedforward", "d_model", "attention_bias"),
            _norm("ln_f"),
            _linear("/lm_head", "d_model", "vocab", "head_bias", tied="word_embeddings"),
        ),
        {
            "vocab": ("word_embeddings", 0),
            "d_model": ("word_embeddings", 1),
            "qkv_dim": ("h.0.self_attention.query_key_value", 0),
            "feedforward": ("h.0.mlp.dense_h_to_4h", 0),
        },  # fmt: skip
        {"tied": True, "attention_bias": False, "norm_shift": True, "head_bias": False},
        {"bias": "attention_bias"},  # (one flag for every projection's bias)
    ),
    lambda: Family(
        "mpt",
        "MPT: ALiBi (no position table), pre-norm blocks (norm_1, a fused Wqkv and out_proj, norm_2, a two-layer MLP "
        "up_proj/down_proj), LayerNorms and projections without biases (`no_bias`: the file says), a tied LM head",
        ("mpt",),
        ("transformer.", ""),
        (
            Part("wte", "embedding", ("vocab", "d_model")),
            _norm("blocks.{i}.norm_1"),
            _linear("blocks.{i}.attn.Wqkv", "d_model", "qkv_dim", "attention_bias"),
            _linear("blocks.{i}.attn.out_proj", "d_model", "d_model", "attention_bias", role="attention_output"),
            _norm("blocks.{i}.norm_2"),
            _linear("blocks.{i}.ffn.up_proj", "d_model", "feedforward", "mlp_bias"),
            _linear("blocks.{i}.ffn.down_proj", "feedforward", "d_model", "mlp_bias"),
            _norm("norm_f"),
            _linear("/lm_head", "d_model", "vocab", "head_bias", tied="wte"),
        ),
        {
            "vocab": ("wte", 0),
            "d_model": ("wte", 1),
            "qkv_dim": ("blocks.0.attn.Wqkv", 0),
            "feedforward": ("blocks.0.ffn.up_proj", 0),
        },  # fmt: skip
        {"tied": True, "attention_bias": False, "mlp_bias": False, "norm_shift": False, "head_bias": False},
    ),
    lambda: Family(
        "opt",
        "OPT: learned positions (offset 2), pre-norm decoder layers with biases, tied LM head",
        ("opt",),
        ("model.decoder.", "decoder."),
        (
            Part("embed_tokens", "embedding", ("vocab", "word_embed")),
            Part("embed_positions", "embedding", ("positions+2", "d_model")),
            _linear("project_in", "word_embed", "d_model", when="projection"),
            _linear("project_out", "d_model", "word_embed", when="projection"),
            _norm("final_layer_norm", when="final_norm"),
            *_seq2seq_layer("", "i", cross=False),
            _linear("/lm_head", "word_embed", "vocab", "head_bias", tied="embed_tokens"),
        ),
        {
            "vocab": ("embed_tokens", 0),
            "word_embed": ("embed_tokens", 1),
            "d_model": ("layers.0.fc1", 1),
            "feedforward": ("layers.0.fc1", 0),
            "positions+2": ("embed_positions", 0),
        },  # fmt: skip
        {"tied": True, "attention_bias": True, "mlp_bias": True, "norm_shift": True, "head_bias": False},
        {"word_embed_proj_dim": "word_embed"},
    ),
    lambda: Family(
        "biogpt",
        "BioGPT: learned positions (offset 2), pre-norm decoder layers (q/k/v/out projections, fc1/fc2, all with "
        "biases; LayerNorms), a final layer_norm, an LM head (output_projection) tied to the embedding",
        ("biogpt",),
        ("biogpt.", ""),
        (
            Part("embed_tokens", "embedding", ("vocab", "d_model")),
            Part("embed_positions", "embedding", ("positions+2", "d_model")),
            *_seq2seq_layer("", "i", cross=False),
            _norm("layer_norm"),
            _linear("/output_projection", "d_model", "vocab", "head_bias", tied="embed_tokens"),
        ),
        {
            "vocab": ("embed_tokens", 0),
            "d_model": ("embed_tokens", 1),
            "positions+2": ("embed_positions", 0),
            "feedforward": ("layers.0.fc1", 0),
        },
        {"tied": True, "attention_bias": True, "mlp_bias": True, "norm_shift": True, "head_bias": False},
    ),
    lambda: Family(
        "xglm",
        "XGLM: sinusoidal positions (a buffer, nothing stored), pre-norm decoder layers (q/k/v/out projections, "
        "fc1/fc2, all with biases; LayerNorms), a final layer_norm, a tied LM head",
        ("xglm",),
        ("model.", ""),
        (
            Part("embed_tokens", "embedding", ("vocab", "d_model")),
            *_seq2seq_layer("", "i", cross=False),
            _norm("layer_norm"),
            _linear("/lm_head", "d_model", "vocab", "head_bias", tied="embed_tokens"),
        ),
        {"vocab": ("embed_tokens", 0), "d_model": ("embed_tokens", 1), "feedforward": ("layers.0.fc1", 0)},
        {"tied": True, "attention_bias": True, "mlp_bias": True, "norm_shift": True, "head_bias": False},
        {"attention_heads": "heads"},  # (XGLMConfig's word for num_attention_heads)
    ),
    lambda: Family(
        "bloom",
        "BLOOM: ALiBi (no position table), an embedding LayerNorm, fused query_key_value, tied LM head",
        ("bloom",),
        ("transformer.", ""),
        (
            Part("word_embeddings", "embedding", ("vocab", "d_model")),
            _norm("word_embeddings_layernorm"),
            _norm("h.{i}.input_layernorm"),
            _linear("h.{i}.self_attention.query_key_value", "d_model", "qkv_dim", "attention_bias"),
            _linear("h.{i}.self_attention.dense", "d_model", "d_model", "attention_bias", role="attention_output"),
            _norm("h.{i}.post_attention_layernorm"),
            _linear("h.{i}.mlp.dense_h_to_4h", "d_model", "feedforward", "mlp_bias"),
            _linear("h.{i}.mlp.dense_4h_to_h", "feedforward", "d_model", "mlp_bias"),
            _norm("ln_f"),
            _linear("/lm_head", "d_model", "vocab", "head_bias", tied="word_embeddings"),
        ),
        {
            "vocab": ("word_embeddings", 0),
            "d_model": ("word_embeddings", 1),
            "feedforward": ("h.0.mlp.dense_h_to_4h", 0),
        },
        {"tied": True, "attention_bias": True, "mlp_bias": True, "norm_shift": True, "head_bias": False},
    ),
    lambda: Family(
        "bert",
        "BERT / RoBERTa / XLM-R / ELECTRA encoders (any *For* head: heads are counted from their shapes)",
        # ELECTRA's embeddings have their own size and a projection to d_model: its configs are read as inferred
        ("bert", "roberta", "xlm-roberta", "camembert", "ernie"),
        ("bert.", "roberta.", "electra.", "ernie.", ""),
        (
            Part("embeddings.word_embeddings", "embedding", ("vocab", "d_model")),
            Part("embeddings.position_embeddings", "embedding", ("positions", "d_model")),
            Part("embeddings.token_type_embeddings", "embedding", ("token_types", "d_model"), when="token_type"),
            _norm("embeddings.LayerNorm"),
            *_bert_layer("encoder", "query", "key", "value"),
            _linear("pooler.dense", "d_model", "d_model", "mlp_bias", when="pooler"),
        ),
        {
            "vocab": ("embeddings.word_embeddings", 0),
            "d_model": ("embeddings.word_embeddings", 1),
            "positions": ("embeddings.position_embeddings", 0),
            "token_types": ("embeddings.token_type_embeddings", 0),
            "feedforward": ("encoder.layer.0.intermediate.dense", 0),
        },  # fmt: skip
        {"attention_bias": True, "mlp_bias": True, "norm_shift": True, "token_type": True},
    ),
    lambda: Family(
        "deberta-v2",
        "DeBERTa v2/v3: BERT-style layers with query_proj/key_proj/value_proj and optional relative embeddings",
        ("deberta-v2",),  # DeBERTa v1 has one fused in_proj: inferred
        ("deberta.", ""),
        (
            Part("embeddings.word_embeddings", "embedding", ("vocab", "d_model")),
            Part("embeddings.position_embeddings", "embedding", ("positions", "d_model"), when="absolute"),
            Part("embeddings.token_type_embeddings", "embedding", ("token_types", "d_model"), when="token_type"),
            _norm("embeddings.LayerNorm"),
            *_bert_layer("encoder", "query_proj", "key_proj", "value_proj"),
            Part("encoder.rel_embeddings", "embedding", ("relative", "d_model"), when="relative"),
            _norm("encoder.LayerNorm", when="relative"),
        ),
        {
            "vocab": ("embeddings.word_embeddings", 0),
            "d_model": ("embeddings.word_embeddings", 1),
            "positions": ("embeddings.position_embeddings", 0),
            "relative": ("encoder.rel_embeddings", 0),
            "feedforward": ("encoder.layer.0.intermediate.dense", 0),
        },  # fmt: skip
        {"attention_bias": True, "mlp_bias": True, "norm_shift": True},
    ),
    lambda: Family(
        "distilbert",
        "DistilBERT: word and position embeddings, q_lin/k_lin/v_lin/out_lin, sa/output LayerNorms",
        ("distilbert",),
        ("distilbert.", ""),
        (
            Part("embeddings.word_embeddings", "embedding", ("vocab", "d_model")),
            Part("embeddings.position_embeddings", "embedding", ("positions", "d_model")),
            _norm("embeddings.LayerNorm"),
            *_attention("transformer.layer.{i}.attention", "q_lin", "k_lin", "v_lin", "out_lin"),
            _norm("transformer.layer.{i}.sa_layer_norm"),
            _linear("transformer.layer.{i}.ffn.lin1", "d_model", "feedforward", "mlp_bias"),
            _linear("transformer.layer.{i}.ffn.lin2", "feedforward", "d_model", "mlp_bias"),
            _norm("transformer.layer.{i}.output_layer_norm"),
        ),
        {
            "vocab": ("embeddings.word_embeddings", 0),
            "d_model": ("embeddings.word_embeddings", 1),
            "positions": ("embeddings.position_embeddings", 0),
            "feedforward": ("transformer.layer.0.ffn.lin1", 0),
        },  # fmt: skip
        {"attention_bias": True, "mlp_bias": True, "norm_shift": True},
    ),
    lambda: Family(
        "t5",
        "T5 / mT5 / Flan-T5: shared embedding, bias-free attention with a relative position bias in block 0, "
        "plain or gated feed-forward, RMS LayerNorms",
        ("t5", "mt5"),  # UMT5 has a relative position bias in every block: inferred
        ("",),
        (
            Part("shared", "embedding", ("vocab", "d_model")),
            *_t5_stack("encoder", "i", cross=False),
            *_t5_stack("decoder", "j", cross=True),
            _linear("/lm_head", "d_model", "vocab", "head_bias", tied="shared"),
        ),
        {
            "vocab": ("shared", 0),
            "d_model": ("shared", 1),
            "q_dim": ("encoder.block.0.layer.0.SelfAttention.q", 0),
            "buckets": ("encoder.block.0.layer.0.SelfAttention.relative_attention_bias", 0),
            "heads": ("encoder.block.0.layer.0.SelfAttention.relative_attention_bias", 1),
            "feedforward": ("encoder.block.0.layer.1.DenseReluDense.wo", 1),
        },  # fmt: skip
        {"tied": True, "attention_bias": False, "mlp_bias": False, "norm_shift": False, "head_bias": False},
        {"relative_attention_num_buckets": "buckets"},
        ("decoder.",),
        _t5_derive,
    ),
    lambda: Family(
        "bart",
        "BART / mBART: shared embedding, learned positions (offset 2), post-norm encoder and decoder layers",
        ("bart", "mbart"),
        ("model.", ""),
        (
            Part("shared", "embedding", ("vocab", "d_model")),
            Part("encoder.embed_positions", "embedding", ("positions+2", "d_model")),
            _norm("encoder.layernorm_embedding"),
            _norm("encoder.layer_norm", when="final_norms"),
            *_seq2seq_layer("encoder", "i", cross=False),
            Part("decoder.embed_positions", "embedding", ("positions+2", "d_model")),
            _norm("decoder.layernorm_embedding"),
            _norm("decoder.layer_norm", when="final_norms"),
            *_seq2seq_layer("decoder", "j", cross=True),
            Part("/final_logits_bias", "tensor", (1, "vocab"), when="logits_bias"),
            _linear("/lm_head", "d_model", "vocab", "head_bias", tied="shared"),
        ),
        {
            "vocab": ("shared", 0),
            "d_model": ("shared", 1),
            "positions+2": ("encoder.embed_positions", 0),
            "feedforward": ("encoder.layers.0.fc1", 0),
        },  # fmt: skip
        {"tied": True, "attention_bias": True, "mlp_bias": True, "norm_shift": True, "head_bias": False},
        stacks=("decoder.",),
    ),
    lambda: Family(
        "whisper",
        "Whisper: two conv layers over the mel bins, learned positions, pre-norm encoder and decoder, tied proj_out",
        ("whisper",),
        ("model.", ""),
        (
            Part("encoder.conv1", "conv", ("d_model", "mel_bins", 3), "conv_bias"),
            Part("encoder.conv2", "conv", ("d_model", "d_model", 3), "conv_bias"),
            Part("encoder.embed_positions", "embedding", ("source_positions", "d_model")),
            *_seq2seq_layer("encoder", "i", cross=False),
            _norm("encoder.layer_norm"),
            Part("decoder.embed_tokens", "embedding", ("vocab", "d_model")),
            Part("decoder.embed_positions", "embedding", ("target_positions", "d_model")),
            *_seq2seq_layer("decoder", "j", cross=True),
            _norm("decoder.layer_norm"),
            _linear("/proj_out", "d_model", "vocab", "head_bias", tied="decoder.embed_tokens"),
        ),
        {
            "vocab": ("decoder.embed_tokens", 0),
            "d_model": ("decoder.embed_tokens", 1),
            "mel_bins": ("encoder.conv1", 1),
            "source_positions": ("encoder.embed_positions", 0),
            "target_positions": ("decoder.embed_positions", 0),
            "feedforward": ("encoder.layers.0.fc1", 0),
        },  # fmt: skip
        {
            "tied": True,
            "attention_bias": True,
            "mlp_bias": True,
            "norm_shift": True,
            "head_bias": False,
            "conv_bias": True,
        },  # fmt: skip
        {
            "num_mel_bins": "mel_bins",
            "max_source_positions": "source_positions",
            "max_target_positions": "target_positions",
        },  # fmt: skip
        ("decoder.",),
    ),
    lambda: Family(
        "vit",
        "ViT: a patch-embedding conv, class token and learned positions, pre-norm encoder layers, optional pooler",
        ("vit",),
        ("vit.", ""),
        (
            Part("embeddings.cls_token", "tensor", (1, 1, "d_model")),
            Part("embeddings.mask_token", "tensor", (1, 1, "d_model"), when="mask_token"),
            Part("embeddings.position_embeddings", "tensor", (1, "positions", "d_model"), role="position_embedding"),
            Part(
                "embeddings.patch_embeddings.projection", "conv", ("d_model", "channels", "patch", "patch"), "conv_bias"
            ),
            *_attention(
                "encoder.layer.{i}.attention", "attention.query", "attention.key", "attention.value", "output.dense"
            ),  # fmt: skip
            _norm("encoder.layer.{i}.layernorm_before"),
            _norm("encoder.layer.{i}.layernorm_after"),
            _linear("encoder.layer.{i}.intermediate.dense", "d_model", "feedforward", "mlp_bias"),
            _linear("encoder.layer.{i}.output.dense", "feedforward", "d_model", "mlp_bias"),
            _norm("layernorm"),
            _linear("pooler.dense", "d_model", "d_model", "mlp_bias", when="pooler"),
        ),
        {
            "d_model": ("embeddings.cls_token", 2),
            "positions": ("embeddings.position_embeddings", 1),
            "channels": ("embeddings.patch_embeddings.projection", 1),
            "patch": ("embeddings.patch_embeddings.projection", 2),
            "feedforward": ("encoder.layer.0.intermediate.dense", 0),
        },  # fmt: skip
        {"attention_bias": True, "mlp_bias": True, "norm_shift": True, "conv_bias": True, "channels": 3},
        derive=_vit_derive,
    ),
    lambda: Family(
        "recurrent_gemma",
        "RecurrentGemma (Griffin): in each layer a temporal block after an RMSNorm, recurrent (linear_x, linear_y, "
        "a depthwise conv_1d, the RG-LRU's per-head gates and recurrent_param, linear_out; all with biases) or local "
        "attention (q, k, v; o_proj with a bias) as `block_types` cycle, then a gated MLP with biases after another; "
        "a tied LM head",
        ("recurrent_gemma",),
        ("model.", ""),
        (
            Part("embed_tokens", "embedding", ("vocab", "d_model")),
            _norm("layers.{i}.temporal_pre_norm"),
            *(
                replace(p, when="recurrent_blocks", over="recurrent_layers")
                for p in (
                    _linear("layers.{i}.temporal_block.linear_y", "d_model", "lru", "lru_bias", role="dense"),
                    _linear("layers.{i}.temporal_block.linear_x", "d_model", "lru", "lru_bias", role="dense"),
                    _linear("layers.{i}.temporal_block.linear_out", "lru", "d_model", "lru_bias", role="dense"),
                    Part("layers.{i}.temporal_block.conv_1d", "conv", ("lru", 1, "conv_kernel"), "lru_bias"),
                    Part("layers.{i}.temporal_block.rg_lru.recurrent_param", "tensor", ("lru",)),
                    *(
                        Part(f"layers.{{i}}.temporal_block.rg_lru.{gate}_gate_{what}", "tensor", dims)
                        for gate in ("input", "recurrent")
                        for what, dims in (
                            ("weight", ("heads", "lru_block", "lru_block")),
                            ("bias", ("heads", "lru_block")),
                        )
                    ),
                )
            ),
            *(
                replace(p, when="attention_blocks", over="attention_layers")
                for p in _attention("layers.{i}.temporal_block", "q_proj", "k_proj", "v_proj", "o_proj")[:3]
            ),
            _linear(
                "layers.{i}.temporal_block.o_proj",
                "q_dim",
                "d_model",
                "o_bias",
                role="attention_output",
                when="attention_blocks",
                over="attention_layers",
            ),
            _norm("layers.{i}.channel_pre_norm"),
            *(replace(p, path=p.path.replace(".mlp.", ".mlp_block.")) for p in GATED_MLP),
            _norm("final_norm"),
            _linear("/lm_head", "d_model", "vocab", "head_bias", tied="embed_tokens"),
        ),
        {
            "vocab": ("embed_tokens", 0),
            "d_model": ("embed_tokens", 1),
            "lru": ("layers.0.temporal_block.linear_x", 0),
            "heads": ("layers.0.temporal_block.rg_lru.input_gate_weight", 0),
            "conv_kernel": ("layers.0.temporal_block.conv_1d", 2),
            "q_dim": ("layers.0.temporal_block.q_proj", 0),
            "kv_dim": ("layers.0.temporal_block.k_proj", 0),
            "feedforward": ("layers.0.mlp_block.up_proj", 0),
        },
        {**DECODER_DEFAULTS, "tied": True, "mlp_bias": True, "lru_bias": True, "o_bias": True},
        {
            "lru_width": "lru",
            "conv1d_width": "conv_kernel",
            "intermediate_size": "intermediate",
            "block_types": "block_types",
        },
        derive=_recurrent_gemma_derive,
    ),
    lambda: Family(
        "xlstm",
        "xLSTM (7B): blocks of an mLSTM layer (q, k, v, an output gate, per-head input and forget gates with biases, a "
        "multi-head norm, out_proj; or q, k, v and the output gate fused into qkv_opreact and the two gates into "
        "ifgate_preact) and a gated feed-forward (proj_up_gate, proj_up, proj_down), each after an RMSNorm; biases and "
        "norm shifts where `use_bias`",
        ("xlstm",),
        ("backbone.", ""),
        (
            Part("embeddings", "embedding", ("vocab", "d_model")),
            _norm("blocks.{i}.norm_mlstm", shift="attention_bias"),
            *(
                replace(p, when="single_weights")
                for p in (
                    _linear("blocks.{i}.mlstm_layer.q", "d_model", "qk_dim", "attention_bias", role="attention_query"),
                    _linear("blocks.{i}.mlstm_layer.k", "d_model", "qk_dim", "attention_bias", role="attention_key"),
                    _linear("blocks.{i}.mlstm_layer.v", "d_model", "v_dim", "attention_bias", role="attention_value"),
                    _linear("blocks.{i}.mlstm_layer.ogate_preact", "d_model", "v_dim", "attention_bias", role="dense"),
                    _linear("blocks.{i}.mlstm_layer.igate_preact", "d_model", "heads", "gate_bias", role="dense"),
                    _linear("blocks.{i}.mlstm_layer.fgate_preact", "d_model", "heads", "gate_bias", role="dense"),
                    _linear("blocks.{i}.ffn.proj_up_gate", "d_model", "feedforward", "attention_bias", role=FFN_GATE),
                    _linear("blocks.{i}.ffn.proj_up", "d_model", "feedforward", "attention_bias", role=FFN_UP),
                )
            ),
            *(
                replace(p, when="fused_weights")
                for p in (
                    _linear(
                        "blocks.{i}.mlstm_layer.qkv_opreact",
                        "d_model",
                        "qkvo_dim",
                        "attention_bias",
                        role="attention_qkv",
                    ),
                    _linear("blocks.{i}.mlstm_layer.ifgate_preact", "d_model", "if_heads", "gate_bias", role="dense"),
                    _linear(
                        "blocks.{i}.ffn.proj_up_gate_z", "d_model", "feedforward*2", "attention_bias", role=FFN_GATE
                    ),
                )
            ),
            _norm("blocks.{i}.mlstm_layer.multihead_norm", "v_dim", "attention_bias"),
            _linear("blocks.{i}.mlstm_layer.out_proj", "v_dim", "d_model", "attention_bias", role="attention_output"),
            _norm("blocks.{i}.norm_ffn", shift="attention_bias"),
            _linear("blocks.{i}.ffn.proj_down", "feedforward", "d_model", "attention_bias"),
            _norm("out_norm"),
            _linear("/lm_head", "d_model", "vocab", "head_bias", tied="embeddings"),
        ),
        {
            "vocab": ("embeddings", 0),
            "d_model": ("embeddings", 1),
            "qk_dim": ("blocks.0.mlstm_layer.q", 0),
            "v_dim": ("blocks.0.mlstm_layer.multihead_norm", 0),
            "qkvo_dim": ("blocks.0.mlstm_layer.qkv_opreact", 0),
            "heads": ("blocks.0.mlstm_layer.igate_preact", 0),
            "if_heads": ("blocks.0.mlstm_layer.ifgate_preact", 0),
            "feedforward": ("blocks.0.ffn.proj_down", 1),
        },
        {**DECODER_DEFAULTS, "gate_bias": True, "single_weights": True},
        {
            "use_bias": "attention_bias",
            "qk_dim_factor": "qk_factor",
            "v_dim_factor": "v_factor",
            "ffn_proj_factor": "ffn_factor",
            "ffn_round_up_to_multiple_of": "ffn_multiple",
        },
        derive=_xlstm_derive,
    ),
    lambda: Family(
        "jetmoe",
        "JetMoE: a mixture of attention heads (a shared kv_proj to keys and values; per-expert query and output "
        "projections, `experts.input_linear` and `experts.output_linear`, a router and an output bias) and a mixture "
        "of gated MLP experts (input_linear, output_linear, a router, an output bias), RMSNorms, a tied LM head",
        ("jetmoe",),
        ("model.", ""),
        (
            *DECODER_ENDS,
            _norm("layers.{i}.input_layernorm"),
            _linear("layers.{i}.self_attention.kv_proj", "d_model", "kv_dim*2", "attention_bias"),
            Part(
                "layers.{i}.self_attention.experts.input_linear",
                "tensor",
                ("experts", "kv_dim", "d_model"),
                role="attention_query",
            ),
            Part(
                "layers.{i}.self_attention.experts.output_linear",
                "tensor",
                ("experts", "d_model", "kv_dim"),
                role="attention_output",
            ),
            _linear("layers.{i}.self_attention.experts.router.layer", "d_model", "experts"),
            Part("layers.{i}.self_attention.experts.bias", "tensor", ("d_model",)),
            _norm("layers.{i}.post_attention_layernorm"),
            Part("layers.{i}.mlp.input_linear", "tensor", ("experts", "feedforward*2", "d_model"), role=FFN_UP),
            Part("layers.{i}.mlp.output_linear", "tensor", ("experts", "d_model", "feedforward"), role=FFN_DOWN),
            _linear("layers.{i}.mlp.router.layer", "d_model", "experts"),
            Part("layers.{i}.mlp.bias", "tensor", ("d_model",)),
        ),
        {
            "vocab": ("embed_tokens", 0),
            "d_model": ("embed_tokens", 1),
            "kv_dim": ("layers.0.self_attention.experts.input_linear", 1),
            "experts": ("layers.0.mlp.router.layer", 0),
            "feedforward": ("layers.0.mlp.output_linear", 2),
        },
        {**DECODER_DEFAULTS, "tied": True},
        {"kv_channels": "head_dim"},
    ),
    lambda: Family(
        "rwkv",
        "RWKV (4): blocks of time mixing (key, value, receptance and output projections, per-channel time_decay and "
        "time_first, time_mix_* interpolations) and channel mixing (key, receptance, value; time_mix_*), each after a "
        "LayerNorm; the first block's input LayerNorm (pre_ln), an output LayerNorm, an untied head",
        ("rwkv",),
        ("rwkv.", ""),
        (
            Part("embeddings", "embedding", ("vocab", "d_model")),
            _norm("blocks.{i}.pre_ln", over="pre_ln_layers"),
            _norm("blocks.{i}.ln1"),
            _norm("blocks.{i}.ln2"),
            Part("blocks.{i}.attention.time_decay", "tensor", ("att_dim",)),
            Part("blocks.{i}.attention.time_first", "tensor", ("att_dim",)),
            *(
                Part(f"blocks.{{i}}.attention.time_mix_{w}", "tensor", (1, 1, "d_model"))
                for w in ("key", "value", "receptance")
            ),
            _linear("blocks.{i}.attention.key", "d_model", "att_dim", role="attention_key"),
            _linear("blocks.{i}.attention.value", "d_model", "att_dim", role="attention_value"),
            _linear("blocks.{i}.attention.receptance", "d_model", "att_dim", role="dense"),  # (a gate on the output)
            _linear("blocks.{i}.attention.output", "att_dim", "d_model", role="attention_output"),
            *(
                Part(f"blocks.{{i}}.feed_forward.time_mix_{w}", "tensor", (1, 1, "d_model"))
                for w in ("key", "receptance")
            ),
            _linear("blocks.{i}.feed_forward.key", "d_model", "feedforward"),
            _linear("blocks.{i}.feed_forward.receptance", "d_model", "d_model", role="dense"),
            _linear("blocks.{i}.feed_forward.value", "feedforward", "d_model"),
            _norm("ln_out"),
            _linear("/head", "d_model", "vocab", "head_bias", tied="embeddings"),
        ),
        {
            "vocab": ("embeddings", 0),
            "d_model": ("embeddings", 1),
            "att_dim": ("blocks.0.attention.key", 0),
            "feedforward": ("blocks.0.feed_forward.key", 0),
        },
        {"tied": False, "norm_shift": True, "head_bias": False},
        {"attention_hidden_size": "att_dim"},
        derive=_rwkv_derive,
    ),
    lambda: Family(
        "mamba",
        "Mamba / FalconMamba: selective state-space blocks (in, x, dt and out projections, a depthwise conv1d, A_log "
        "and D), RMSNorm, tied LM head",
        ("mamba", "falcon_mamba"),
        ("backbone.", ""),
        (
            Part("embeddings", "embedding", ("vocab", "d_model")),
            _norm("layers.{i}.norm"),
            *_mamba_mixer("mixer"),
            _norm("norm_f"),
            _linear("/lm_head", "d_model", "vocab", "head_bias", tied="embeddings"),
        ),
        {
            "vocab": ("embeddings", 0),
            "d_model": ("embeddings", 1),
            "inner": ("layers.0.mixer.A_log", 0),
            "state": ("layers.0.mixer.A_log", 1),
            "dt_rank": ("layers.0.mixer.dt_proj", 1),
            "x_dim": ("layers.0.mixer.x_proj", 0),
            "conv_kernel": ("layers.0.mixer.conv1d", 2),
        },
        {"tied": True, "ssm_bias": False, "conv_bias": True, "dt_bias": True, "norm_shift": False, "head_bias": False},
        {
            "intermediate_size": "inner",
            "state_size": "state",
            "time_step_rank": "dt_rank",
            "conv_kernel": "conv_kernel",
            "expand": "expand",
            "use_bias": "ssm_bias",
            "use_conv_bias": "conv_bias",
        },
        derive=_mamba_derive,
        uniform=True,
    ),
    lambda: Family(
        "mamba2",
        "Mamba-2: state-space blocks with one fused in_proj (z, x, B, C, dt), a conv1d over x, B and C, per-head "
        "A_log, D and dt_bias, a gated RMSNorm before out_proj; RMSNorm, LM head",
        ("mamba2",),
        ("backbone.", ""),
        (
            Part("embeddings", "embedding", ("vocab", "d_model")),
            _norm("layers.{i}.norm"),
            *_mamba2_mixer("heads", "inner", "conv_dim", "in_dim"),
            _norm("norm_f"),
            _linear("/lm_head", "d_model", "vocab", "head_bias", tied="embeddings"),
        ),
        {
            "vocab": ("embeddings", 0),
            "d_model": ("embeddings", 1),
            "heads": ("layers.0.mixer.A_log", 0),
            "inner": ("layers.0.mixer.out_proj", 1),
            "in_dim": ("layers.0.mixer.in_proj", 0),
            "conv_dim": ("layers.0.mixer.conv1d", 0),
            "conv_kernel": ("layers.0.mixer.conv1d", 2),
        },
        {"tied": False, "ssm_bias": False, "conv_bias": True, "norm_shift": False, "head_bias": False},
        {
            "state_size": "state",
            "n_groups": "groups",
            "conv_kernel": "conv_kernel",
            "expand": "expand",
            "use_bias": "ssm_bias",
            "use_conv_bias": "conv_bias",
        },
        derive=_mamba2_derive,
        uniform=True,
    ),
    lambda: Family(
        "clip",
        "CLIP: a text tower and a vision tower (patch conv, class embedding), each projected without bias",
        ("clip",),
        ("",),
        (
            Part("text_model.embeddings.token_embedding", "embedding", ("vocab", "t_d")),
            Part("text_model.embeddings.position_embedding", "embedding", ("t_pos", "t_d")),
            *_clip_tower("text_model", "i", "t_d", "t_ff"),
            _norm("text_model.final_layer_norm", "t_d"),
            Part("vision_model.embeddings.class_embedding", "tensor", ("v_d",), role="learned_tensor"),
            Part("vision_model.embeddings.patch_embedding", "conv", ("v_d", "channels", "patch", "patch"), "conv_bias"),
            Part("vision_model.embeddings.position_embedding", "embedding", ("v_pos", "v_d")),
            _norm("vision_model.pre_layrnorm", "v_d"),
            *_clip_tower("vision_model", "k", "v_d", "v_ff"),
            _norm("vision_model.post_layernorm", "v_d"),
            Part("text_projection", "linear", ("t_d", "proj")),
            Part("visual_projection", "linear", ("v_d", "proj")),
            Part("logit_scale", "tensor", (), role="learned_tensor"),
        ),
        {
            "vocab": ("text_model.embeddings.token_embedding", 0),
            "t_d": ("text_model.embeddings.token_embedding", 1),
            "t_pos": ("text_model.embeddings.position_embedding", 0),
            "t_ff": ("text_model.encoder.layers.0.mlp.fc1", 0),
            "v_d": ("vision_model.embeddings.patch_embedding", 0),
            "channels": ("vision_model.embeddings.patch_embedding", 1),
            "patch": ("vision_model.embeddings.patch_embedding", 2),
            "v_pos": ("vision_model.embeddings.position_embedding", 0),
            "v_ff": ("vision_model.encoder.layers.0.mlp.fc1", 0),
            "proj": ("text_projection", 0),
        },
        {"attention_bias": True, "mlp_bias": True, "norm_shift": True, "conv_bias": False, "channels": 3},
        {
            "text_config.vocab_size": "vocab",
            "text_config.hidden_size": "t_d",
            "text_config.intermediate_size": "t_ff",
            "text_config.num_hidden_layers": "layers",
            "text_config.max_position_embeddings": "t_pos",
            "vision_config.hidden_size": "v_d",
            "vision_config.intermediate_size": "v_ff",
            "vision_config.num_hidden_layers": "vision_layers",
            "vision_config.num_channels": "channels",
            "vision_config.patch_size": "patch",
            "vision_config.image_size": "v_image",
            "projection_dim": "proj",
        },
        ("vision_model.", "visual_projection"),
        _clip_derive,
    ),
)

# -- the table's families, each entry made on its first use ------------------------------------------------------------

_MADE: dict[int, tuple[Family, ...]] = {}  # entry -> its families, once made


def entry_families(entry: int) -> tuple[Family, ...]:
    """The families `ENTRIES[entry]` makes, made on first use."""
    families = _MADE.get(entry)
    if families is None:
        made = ENTRIES[entry]()
        families = _MADE[entry] = made if isinstance(made, tuple) else (made,)
    return families


def made_families() -> list[str]:
    """The names of the families made so far, in the table's order (what a run has built)."""
    return [family.name for entry in sorted(_MADE) for family in _MADE[entry]]


def index() -> tuple[dict[str, int], dict[str, tuple[str, ...]]]:
    """The table's index, read off every family made: each family's entry (by name), and each model type's families
    (their names, in the table's order, each once: the layout its hub checkpoints use first, then the one transformers
    holds in memory, what torch.save of a state dict writes, where they differ; the file's tensors pick between them).
    `inspector/family_index.py` holds it as written by `python -m inspector.families`."""
    entries: dict[str, int] = {}
    types: dict[str, dict[str, None]] = {}
    for entry in range(len(ENTRIES)):
        for family in entry_families(entry):
            entries[family.name] = entry
            for model_type in family.model_types:
                types.setdefault(model_type, {})[family.name] = None
    return entries, {model_type: tuple(names) for model_type, names in types.items()}


def write_index(path: str) -> None:
    """Write `index()` as the module `inspector.family_index`."""
    entries, types = index()
    lines = [
        '"""The index of the family table (`inspector.families.index()`): each family\'s entry in `ENTRIES`,',
        "and each config model type's families, by their names: a run whose config names a model type makes",
        "only its families' entries (a `FAMILY_BY_NAME` lookup only that family's). Written by",
        '`python -m inspector.families`; tests/families/test_family_table.py checks it is current."""',
        "",
        "# fmt: off",
        "ENTRY = {",
        *(f"    {name!r}: {entry}," for name, entry in entries.items()),
        "}",
        "MODEL_TYPES = {",
        *(f"    {model_type!r}: {names!r}," for model_type, names in types.items()),
        "}",
        "# fmt: on",
        "",
    ]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


@functools.cache
def _index() -> tuple[Mapping[str, int], Mapping[str, tuple[str, ...]]]:
    """The index as `python -m inspector.families` wrote it (read on first use: a run without a config needs none)."""
    try:
        from inspector.family_index import ENTRY, MODEL_TYPES
    except ImportError:  # pragma: no cover - a checkout whose index is being written: read off the families, all made
        return index()
    return ENTRY, MODEL_TYPES


def __getattr__(name: str) -> Any:
    """`FAMILIES`: every family, in the table's order, all the entries made on first use (PEP 562)."""
    if name != "FAMILIES":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    made = globals()["FAMILIES"] = tuple(family for entry in range(len(ENTRIES)) for family in entry_families(entry))
    return made


if TYPE_CHECKING:
    FAMILIES: tuple[Family, ...]


class _FamilyByName:
    """`FAMILY_BY_NAME`: a family by its name, only its entry made (on first use: the index says which)."""

    __slots__ = ()

    def __getitem__(self, name: str) -> Family:
        for family in entry_families(_index()[0][name]):  # (its entry's families: made once, `FAMILIES` holds them too)
            if family.name == name:
                return family
        raise KeyError(name)  # (an index not written since the table changed: tests/families says so)

    def get(self, name: str, default: Family | None = None) -> Family | None:
        try:
            return self[name]
        except KeyError:
            return default

    def __contains__(self, name: object) -> bool:
        return name in _index()[0]

    def __iter__(self) -> Iterator[str]:
        return iter(_index()[0])

    def __len__(self) -> int:
        return len(_index()[0])


class _FamiliesByModelType:
    """`FAMILIES_BY_MODEL_TYPE`: a config model type's families, in the table's order, only their entries made."""

    __slots__ = ()

    def __getitem__(self, model_type: str) -> tuple[Family, ...]:
        return tuple(map(FAMILY_BY_NAME.__getitem__, _index()[1][model_type]))

    def get(self, model_type: str, default: tuple[Family, ...] = ()) -> tuple[Family, ...]:
        return self[model_type] if model_type in _index()[1] else default

    def __contains__(self, model_type: object) -> bool:
        return model_type in _index()[1]

    def __iter__(self) -> Iterator[str]:
        return iter(_index()[1])

    def __len__(self) -> int:
        return len(_index()[1])


FAMILY_BY_NAME = _FamilyByName()
FAMILIES_BY_MODEL_TYPE = _FamiliesByModelType()


if __name__ == "__main__":  # the index of the table as it is now
    import os

    from inspector import families

    families.write_index(os.path.join(os.path.dirname(os.path.abspath(families.__file__)), "family_index.py"))
