"""GGUF, llama.cpp's model file, versions 1 to 3, either byte order (FORMATS.md section 7).

Layout (little-endian unless the version reads byte-swapped)::

    "GGUF", u32 version, u64 tensor_count, u64 kv_count       (v1: u32 counts)
    kv_count x {string key, u32 value_type, value}            string = u64 length + UTF-8 (v1: u32 length)
        value types 0 u8, 1 i8, 2 u16, 3 i16, 4 u32, 5 i32, 6 f32, 7 bool, 8 string,
        9 array (u32 element type, u64 count, elements; v1: u32 count), 10 u64, 11 i64, 12 f64
    tensor_count x {string name, u32 n_dims, n_dims x u64 ne (v1: u32), u32 ggml type, u64 offset}
    padding to general.alignment (u32, default 32), then the data section; each tensor at
    data_start + offset, padded to the alignment (gguf-py pads after the last one too)

ne[0] is the fastest axis: the shape reported is reversed (numpy / PyTorch order). A tensor's bytes are
n_elements / block x block bytes (`inspector.dtypes.GGML_TYPES`). Key-value arrays (the vocabulary, merges,
scores) are skipped by their sizes, never kept: only their lengths are reported. Verified: magic, version,
counts against the file size, lengths, types, duplicate keys and names, alignment (a power of two), that
quantized rows fill whole blocks and that every tensor lies inside the file; misaligned or overlapping
tensors become findings. The v1 layout (32-bit counts, lengths and dimensions) follows llama.cpp's
reader of 2023; gguf-py reads only v2 and v3.

`Checkpoint.config` is a Hugging Face style config mapped from the hyperparameter keys by `HF_CONFIG`,
and `hf_name()` maps tensor names to Hugging Face names (gguf-py's `tensor_mapping.py`, reversed).
"""

from __future__ import annotations

import os
import re
import struct

from inspector.dtypes import DTYPES, GGML_TYPES
from inspector.errors import FormatError, LimitExceededError, TruncatedFileError, UnsupportedVariantError
from inspector.probe import Probe
from inspector.records import Checkpoint, Finding, Region, RegionKind, Severity, TensorInfo, TensorKind
from inspector.recordtype import record, replace
from loaders.base import MAX_DIMS, MAX_TENSORS, Claim, check_shape, parsing, tile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any, ClassVar

FORMAT = "gguf"
MAGIC = b"GGUF"
VERSIONS = (1, 2, 3)
DEFAULT_ALIGNMENT = 32
MAX_KV = 1_000_000
MAX_ARRAY_DEPTH = 8
MAX_NAME_BYTES = 1 << 16  # keys and tensor names
KEEP_STRING = 256  # characters of a string value kept for the report; longer ones are cut
KEEP_ARRAY = 16  # arrays up to this many numbers are kept whole
WINDOW = 64 << 10  # bytes read at a time while walking the key-value and tensor-info sections
MAX_SPLITS = 10_000
SPLIT_NAME = r"(.+)-(\d{5})-of-(\d{5})\.gguf"  # llama.cpp's llama_split_path

STRING, ARRAY = 8, 9
# value type -> (name, struct code); strings and arrays are variable-sized
VALUE_TYPES: dict[int, tuple[str, str]] = {
    0: ("u8", "B"),
    1: ("i8", "b"),
    2: ("u16", "H"),
    3: ("i16", "h"),
    4: ("u32", "I"),
    5: ("i32", "i"),
    6: ("f32", "f"),
    7: ("bool", "?"),
    STRING: ("string", ""),
    ARRAY: ("array", ""),
    10: ("u64", "Q"),
    11: ("i64", "q"),
    12: ("f64", "d"),
}

# Hugging Face config key <- GGUF key ({arch} is general.architecture), from gguf-py's `Keys` and the
# converter's `set_gguf_parameters` (convert_hf_to_gguf.py).
HF_CONFIG: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("vocab_size", ("{arch}.vocab_size",)),
    ("max_position_embeddings", ("{arch}.context_length",)),
    ("hidden_size", ("{arch}.embedding_length",)),
    ("intermediate_size", ("{arch}.feed_forward_length",)),
    ("num_hidden_layers", ("{arch}.block_count",)),
    ("num_attention_heads", ("{arch}.attention.head_count",)),
    ("num_key_value_heads", ("{arch}.attention.head_count_kv",)),
    ("head_dim", ("{arch}.attention.key_length",)),  # not rope.dimension_count: partial rotary (gptneox, phi2)
    ("rms_norm_eps", ("{arch}.attention.layer_norm_rms_epsilon",)),
    ("layer_norm_eps", ("{arch}.attention.layer_norm_epsilon",)),
    ("rope_theta", ("{arch}.rope.freq_base",)),
    ("sliding_window", ("{arch}.attention.sliding_window",)),
    ("num_local_experts", ("{arch}.expert_count",)),
    ("num_experts_per_tok", ("{arch}.expert_used_count",)),
    ("bos_token_id", ("tokenizer.ggml.bos_token_id",)),
    ("eos_token_id", ("tokenizer.ggml.eos_token_id",)),
)
# DeepSeek-style MoE (DeepseekV3Config's, Glm4MoeConfig's words): routed and shared experts, dense layers first
_DEEPSEEK_MOE: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("num_local_experts", ()),  # (the config's word is n_routed_experts)
    ("n_routed_experts", ("{arch}.expert_count",)),
    ("moe_intermediate_size", ("{arch}.expert_feed_forward_length",)),
    ("n_shared_experts", ("{arch}.expert_shared_count",)),
    ("first_k_dense_replace", ("{arch}.leading_dense_block_count",)),
)
# NemotronHConfig's Mamba-2 mixer sizes (the MLP's width and the key/value heads are per-layer arrays there: left out)
_NEMOTRON_H_SSM: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("mamba_num_heads", ("{arch}.ssm.time_step_rank",)),
    ("n_groups", ("{arch}.ssm.group_count",)),
    ("ssm_state_size", ("{arch}.ssm.state_size",)),
    ("conv_kernel", ("{arch}.ssm.conv_kernel",)),
)
# DeepseekV2Model.set_gguf_parameters: the latent attention written as one-head MQA (head_count_kv 1, key_length
# kv_lora_rank + rope): DeepseekV3Config's heads and head sizes are the _mla keys and the ranks (qk_nope_head_dim in
# HF_CONFIG_DIFFERENCES)
_DEEPSEEK2_CONFIG: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("num_key_value_heads", ()),
    ("head_dim", ()),
    ("q_lora_rank", ("{arch}.attention.q_lora_rank",)),
    ("kv_lora_rank", ("{arch}.attention.kv_lora_rank",)),
    ("v_head_dim", ("{arch}.attention.value_length_mla",)),
    ("qk_rope_head_dim", ("{arch}.rope.dimension_count",)),
    *_DEEPSEEK_MOE,
    ("num_nextn_predict_layers", ("{arch}.nextn_predict_layers",)),  # (GLM-4.7-Flash's MTP layer)
)
# rows that replace HF_CONFIG's for one architecture (its Hugging Face config names a size differently)
HF_CONFIG_BY_ARCH: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "mamba": (  # MambaConfig: intermediate_size is the SSM's inner size; the converter writes no FFN (length 0)
        ("intermediate_size", ("{arch}.ssm.inner_size",)),
        ("state_size", ("{arch}.ssm.state_size",)),
        ("conv_kernel", ("{arch}.ssm.conv_kernel",)),
        ("time_step_rank", ("{arch}.ssm.time_step_rank",)),
    ),
    "phi2": (  # Phi2Model.set_gguf_parameters writes 4 x n_embd as the FFN length and the head count as the
        ("intermediate_size", ()),  # key/value head count, whatever PhiConfig says: the shapes decide both
        ("num_key_value_heads", ()),
    ),
    "llama4": (  # Llama4TextConfig: intermediate_size is the experts', intermediate_size_mlp the dense layers'
        ("intermediate_size", ("{arch}.expert_feed_forward_length",)),
        ("intermediate_size_mlp", ("{arch}.feed_forward_length",)),
        ("interleave_moe_layer_step", ("{arch}.interleave_moe_layer_step",)),
    ),
    "deepseek2": _DEEPSEEK2_CONFIG,
    # GLM-5 (GlmMoeDsaModel, a DeepseekV2Model): DeepSeek's rows and its sparse-attention indexer's heads and width
    "glm-dsa": (
        *_DEEPSEEK2_CONFIG,
        ("index_n_heads", ("{arch}.attention.indexer.head_count",)),
        ("index_head_dim", ("{arch}.attention.indexer.key_length",)),
    ),
    "glm4moe": (*_DEEPSEEK_MOE, ("num_nextn_predict_layers", ("{arch}.nextn_predict_layers",))),
    "nemotron_h": _NEMOTRON_H_SSM,
    "nemotron_h_moe": (
        *_NEMOTRON_H_SSM,
        ("num_local_experts", ()),
        ("n_routed_experts", ("{arch}.expert_count",)),
        ("moe_intermediate_size", ("{arch}.expert_feed_forward_length",)),
        ("moe_shared_expert_intermediate_size", ("{arch}.expert_shared_feed_forward_length",)),
        ("num_nextn_predict_layers", ("{arch}.nextn_predict_layers",)),  # (Nemotron 3's MTP module)
    ),
    "lfm2moe": (  # Lfm2MoeConfig's words: its experts' width and count, the dense layers first
        ("num_local_experts", ()),
        ("num_experts", ("{arch}.expert_count",)),
        ("moe_intermediate_size", ("{arch}.expert_feed_forward_length",)),
        ("num_dense_layers", ("{arch}.leading_dense_block_count",)),
        ("conv_L_cache", ("{arch}.shortconv.l_cache",)),
    ),
    "qwen3next": (("num_nextn_predict_layers", ("{arch}.nextn_predict_layers",)),),
    "qwen35": (("num_nextn_predict_layers", ("{arch}.nextn_predict_layers",)),),
    "qwen35moe": (("num_nextn_predict_layers", ("{arch}.nextn_predict_layers",)),),
}
# Hugging Face config key = GGUF key - GGUF key, where both are in the file: the converter counts the hub's MTP layers
# (nextn_predict_layers) in block_count, which num_hidden_layers does not; DeepSeek's key_length_mla is a head's
# nope and rope parts together
HF_CONFIG_DIFFERENCES: tuple[tuple[str, str, str], ...] = (
    ("num_hidden_layers", "{arch}.block_count", "{arch}.nextn_predict_layers"),
    ("qk_nope_head_dim", "{arch}.attention.key_length_mla", "{arch}.rope.dimension_count"),
)
# general.architecture -> Hugging Face model_type where the two differ (identity otherwise)
MODEL_TYPES = {
    "gptneox": "gpt_neox",
    "starcoder": "gpt_bigcode",
    "qwen2moe": "qwen2_moe",
    "qwen3moe": "qwen3_moe",
    "phi2": "phi",
    "command-r": "cohere",
    "stablelm": "stablelm",
    "gemma3": "gemma3_text",  # the text model: a Gemma 3 vision tower goes to a separate mmproj file
    "ernie4_5-moe": "ernie4_5_moe",
    "gpt-oss": "gpt_oss",
    "llama4": "llama4_text",
    "mistral3": "ministral3",
    "qwen35": "qwen3_5_text",
    "qwen3next": "qwen3_next",
    "qwen35moe": "qwen3_5_moe_text",
    "deepseek2": "deepseek_v3",  # DeepSeek-V2, V2-Lite, V3, R1, Kimi K2: one family (`deepseek`), one converter class
    "glm-dsa": "glm_moe_dsa",  # GLM-5: DeepSeek's converter class and family, with the sparse-attention indexer
    "exaone-moe": "exaone_moe",
    "glm4moe": "glm4_moe",
    "lfm2moe": "lfm2_moe",
    "cohere2moe": "cohere2_moe",
    "nemotron_h_moe": "nemotron_h",  # (the converter's name for a Nemotron-H with MoE layers: Nemotron 3)
}
# general.architecture -> (a tensor, the model_type a file holding it is): the converter writes these models under
# another's architecture, and the tensor tells them apart
MODEL_TYPE_MARKS: dict[str, tuple[tuple[str, str], ...]] = {
    "t5": (("enc.blk.1.attn_rel_b.weight", "umt5"),),  # UMT5: a relative position bias in every block
    "llama": (("blk.0.ffn_gate_exps.weight", "mixtral"),),  # Mixtral: the converter writes it as llama, with experts
}

# GGUF tensor name -> Hugging Face name, llama family (llama-hf in gguf-py's tensor_mapping.py). {i} is the
# block number. Names with no Hugging Face counterpart (rope_freqs) map to None.
HF_NAMES: dict[str, str | None] = {
    "token_embd.{p}": "model.embed_tokens.{p}",
    "output_norm.{p}": "model.norm.{p}",
    "output.{p}": "lm_head.{p}",
    "rope_freqs.{p}": None,
    "blk.{i}.attn_norm.{p}": "model.layers.{i}.input_layernorm.{p}",
    "blk.{i}.attn_q.{p}": "model.layers.{i}.self_attn.q_proj.{p}",
    "blk.{i}.attn_k.{p}": "model.layers.{i}.self_attn.k_proj.{p}",
    "blk.{i}.attn_v.{p}": "model.layers.{i}.self_attn.v_proj.{p}",
    "blk.{i}.attn_output.{p}": "model.layers.{i}.self_attn.o_proj.{p}",
    "blk.{i}.attn_q_norm.{p}": "model.layers.{i}.self_attn.q_norm.{p}",  # qwen3 olmo2
    "blk.{i}.attn_k_norm.{p}": "model.layers.{i}.self_attn.k_norm.{p}",
    "blk.{i}.ffn_norm.{p}": "model.layers.{i}.post_attention_layernorm.{p}",
    "blk.{i}.ffn_gate.{p}": "model.layers.{i}.mlp.gate_proj.{p}",
    "blk.{i}.ffn_up.{p}": "model.layers.{i}.mlp.up_proj.{p}",
    "blk.{i}.ffn_down.{p}": "model.layers.{i}.mlp.down_proj.{p}",
    "blk.{i}.ffn_gate_inp.{p}": "model.layers.{i}.mlp.gate.{p}",  # qwen2moe olmoe router
    # experts stacked into one tensor (experts, out, in), as the families' "-stacked" layouts name them
    "blk.{i}.ffn_gate_exps.{p}": "model.layers.{i}.mlp.experts.gate_proj.{p}",
    "blk.{i}.ffn_up_exps.{p}": "model.layers.{i}.mlp.experts.up_proj.{p}",
    "blk.{i}.ffn_down_exps.{p}": "model.layers.{i}.mlp.experts.down_proj.{p}",
}
_GEMMA2 = {  # gemma2/gemma3: a norm before and after both attention and FFN
    "blk.{i}.post_attention_norm.{p}": "model.layers.{i}.post_attention_layernorm.{p}",
    "blk.{i}.ffn_norm.{p}": "model.layers.{i}.pre_feedforward_layernorm.{p}",
    "blk.{i}.post_ffw_norm.{p}": "model.layers.{i}.post_feedforward_layernorm.{p}",
}
_PHI3 = {  # fused projections
    "blk.{i}.attn_qkv.{p}": "model.layers.{i}.self_attn.qkv_proj.{p}",
    "blk.{i}.ffn_up.{p}": "model.layers.{i}.mlp.gate_up_proj.{p}",
}
_GPT2: dict[str, str | None] = {  # gpt2 and starcoder (gpt_bigcode) in gguf-py's tensor_mapping.py
    "token_embd.{p}": "transformer.wte.{p}",
    "position_embd.{p}": "transformer.wpe.{p}",
    "blk.{i}.attn_norm.{p}": "transformer.h.{i}.ln_1.{p}",
    "blk.{i}.attn_qkv.{p}": "transformer.h.{i}.attn.c_attn.{p}",
    "blk.{i}.attn_output.{p}": "transformer.h.{i}.attn.c_proj.{p}",
    "blk.{i}.ffn_norm.{p}": "transformer.h.{i}.ln_2.{p}",
    "blk.{i}.ffn_up.{p}": "transformer.h.{i}.mlp.c_fc.{p}",
    "blk.{i}.ffn_down.{p}": "transformer.h.{i}.mlp.c_proj.{p}",
    "output_norm.{p}": "transformer.ln_f.{p}",
    "output.{p}": "lm_head.{p}",
}
_POST_NORMS = {  # olmo2, exaone4, seed_oss: norms after attention and FFN, none before
    "blk.{i}.post_attention_norm.{p}": "model.layers.{i}.post_attention_layernorm.{p}",
    "blk.{i}.post_ffw_norm.{p}": "model.layers.{i}.post_feedforward_layernorm.{p}",
}
_STARCODER2 = {  # an ungated MLP (c_fc, c_proj)
    "blk.{i}.ffn_up.{p}": "model.layers.{i}.mlp.c_fc.{p}",
    "blk.{i}.ffn_down.{p}": "model.layers.{i}.mlp.c_proj.{p}",
}
_PHI2 = {  # phi-1/1.5/2 (PhiForCausalLM): dense, fc1, fc2, final_layernorm
    "blk.{i}.attn_output.{p}": "model.layers.{i}.self_attn.dense.{p}",
    "blk.{i}.ffn_up.{p}": "model.layers.{i}.mlp.fc1.{p}",
    "blk.{i}.ffn_down.{p}": "model.layers.{i}.mlp.fc2.{p}",
    "output_norm.{p}": "model.final_layernorm.{p}",
}
_GPTNEOX: dict[str, str | None] = {
    "token_embd.{p}": "gpt_neox.embed_in.{p}",
    "blk.{i}.attn_norm.{p}": "gpt_neox.layers.{i}.input_layernorm.{p}",
    "blk.{i}.attn_qkv.{p}": "gpt_neox.layers.{i}.attention.query_key_value.{p}",
    "blk.{i}.attn_output.{p}": "gpt_neox.layers.{i}.attention.dense.{p}",
    "blk.{i}.ffn_norm.{p}": "gpt_neox.layers.{i}.post_attention_layernorm.{p}",
    "blk.{i}.ffn_up.{p}": "gpt_neox.layers.{i}.mlp.dense_h_to_4h.{p}",
    "blk.{i}.ffn_down.{p}": "gpt_neox.layers.{i}.mlp.dense_4h_to_h.{p}",
    "output_norm.{p}": "gpt_neox.final_layer_norm.{p}",
    "output.{p}": "lm_head.{p}",
}
_BLOOM: dict[str, str | None] = {  # bloom; falcon (7B layout) shares its names but the embedding norm
    "token_embd.{p}": "transformer.word_embeddings.{p}",
    "token_embd_norm.{p}": "transformer.word_embeddings_layernorm.{p}",
    "blk.{i}.attn_norm.{p}": "transformer.h.{i}.input_layernorm.{p}",
    "blk.{i}.attn_qkv.{p}": "transformer.h.{i}.self_attention.query_key_value.{p}",
    "blk.{i}.attn_output.{p}": "transformer.h.{i}.self_attention.dense.{p}",
    "blk.{i}.ffn_norm.{p}": "transformer.h.{i}.post_attention_layernorm.{p}",
    "blk.{i}.ffn_up.{p}": "transformer.h.{i}.mlp.dense_h_to_4h.{p}",
    "blk.{i}.ffn_down.{p}": "transformer.h.{i}.mlp.dense_4h_to_h.{p}",
    "output_norm.{p}": "transformer.ln_f.{p}",
    "output.{p}": "lm_head.{p}",
}
_BERT: dict[str, str | None] = {  # bert (BertModel's names; the converter writes roberta, distilbert... as bert)
    "token_embd.{p}": "embeddings.word_embeddings.{p}",
    "position_embd.{p}": "embeddings.position_embeddings.{p}",
    "token_types.{p}": "embeddings.token_type_embeddings.{p}",
    "token_embd_norm.{p}": "embeddings.LayerNorm.{p}",
    "blk.{i}.attn_q.{p}": "encoder.layer.{i}.attention.self.query.{p}",
    "blk.{i}.attn_k.{p}": "encoder.layer.{i}.attention.self.key.{p}",
    "blk.{i}.attn_v.{p}": "encoder.layer.{i}.attention.self.value.{p}",
    "blk.{i}.attn_output.{p}": "encoder.layer.{i}.attention.output.dense.{p}",
    "blk.{i}.attn_output_norm.{p}": "encoder.layer.{i}.attention.output.LayerNorm.{p}",
    "blk.{i}.ffn_up.{p}": "encoder.layer.{i}.intermediate.dense.{p}",
    "blk.{i}.ffn_down.{p}": "encoder.layer.{i}.output.dense.{p}",
    "blk.{i}.layer_output_norm.{p}": "encoder.layer.{i}.output.LayerNorm.{p}",
}
_MAMBA: dict[str, str | None] = {  # A_log and D are bare parameters: GGUF names them without a suffix
    "token_embd.{p}": "backbone.embeddings.{p}",
    "blk.{i}.attn_norm.{p}": "backbone.layers.{i}.norm.{p}",
    "blk.{i}.ssm_in.{p}": "backbone.layers.{i}.mixer.in_proj.{p}",
    "blk.{i}.ssm_conv1d.{p}": "backbone.layers.{i}.mixer.conv1d.{p}",
    "blk.{i}.ssm_x.{p}": "backbone.layers.{i}.mixer.x_proj.{p}",
    "blk.{i}.ssm_dt.{p}": "backbone.layers.{i}.mixer.dt_proj.{p}",
    "blk.{i}.ssm_a": "backbone.layers.{i}.mixer.A_log",
    "blk.{i}.ssm_d": "backbone.layers.{i}.mixer.D",
    "blk.{i}.ssm_out.{p}": "backbone.layers.{i}.mixer.out_proj.{p}",
    "output_norm.{p}": "backbone.norm_f.{p}",
    "output.{p}": "lm_head.{p}",
}
_T5: dict[str, str | None] = {  # T5ForConditionalGeneration; the encoder's and decoder's embed_tokens are `shared`
    "token_embd.{p}": "shared.{p}",
    "enc.blk.{i}.attn_q.{p}": "encoder.block.{i}.layer.0.SelfAttention.q.{p}",
    "enc.blk.{i}.attn_k.{p}": "encoder.block.{i}.layer.0.SelfAttention.k.{p}",
    "enc.blk.{i}.attn_v.{p}": "encoder.block.{i}.layer.0.SelfAttention.v.{p}",
    "enc.blk.{i}.attn_o.{p}": "encoder.block.{i}.layer.0.SelfAttention.o.{p}",
    "enc.blk.{i}.attn_rel_b.{p}": "encoder.block.{i}.layer.0.SelfAttention.relative_attention_bias.{p}",
    "enc.blk.{i}.attn_norm.{p}": "encoder.block.{i}.layer.0.layer_norm.{p}",
    "enc.blk.{i}.ffn_up.{p}": "encoder.block.{i}.layer.1.DenseReluDense.wi.{p}",
    "enc.blk.{i}.ffn_down.{p}": "encoder.block.{i}.layer.1.DenseReluDense.wo.{p}",
    "enc.blk.{i}.ffn_norm.{p}": "encoder.block.{i}.layer.1.layer_norm.{p}",
    "enc.output_norm.{p}": "encoder.final_layer_norm.{p}",
    "dec.blk.{i}.attn_q.{p}": "decoder.block.{i}.layer.0.SelfAttention.q.{p}",
    "dec.blk.{i}.attn_k.{p}": "decoder.block.{i}.layer.0.SelfAttention.k.{p}",
    "dec.blk.{i}.attn_v.{p}": "decoder.block.{i}.layer.0.SelfAttention.v.{p}",
    "dec.blk.{i}.attn_o.{p}": "decoder.block.{i}.layer.0.SelfAttention.o.{p}",
    "dec.blk.{i}.attn_rel_b.{p}": "decoder.block.{i}.layer.0.SelfAttention.relative_attention_bias.{p}",
    "dec.blk.{i}.attn_norm.{p}": "decoder.block.{i}.layer.0.layer_norm.{p}",
    "dec.blk.{i}.cross_attn_q.{p}": "decoder.block.{i}.layer.1.EncDecAttention.q.{p}",
    "dec.blk.{i}.cross_attn_k.{p}": "decoder.block.{i}.layer.1.EncDecAttention.k.{p}",
    "dec.blk.{i}.cross_attn_v.{p}": "decoder.block.{i}.layer.1.EncDecAttention.v.{p}",
    "dec.blk.{i}.cross_attn_o.{p}": "decoder.block.{i}.layer.1.EncDecAttention.o.{p}",
    "dec.blk.{i}.cross_attn_norm.{p}": "decoder.block.{i}.layer.1.layer_norm.{p}",
    "dec.blk.{i}.ffn_up.{p}": "decoder.block.{i}.layer.2.DenseReluDense.wi.{p}",
    "dec.blk.{i}.ffn_down.{p}": "decoder.block.{i}.layer.2.DenseReluDense.wo.{p}",
    "dec.blk.{i}.ffn_norm.{p}": "decoder.block.{i}.layer.2.layer_norm.{p}",
    "dec.output_norm.{p}": "decoder.final_layer_norm.{p}",
    "output.{p}": "lm_head.{p}",
}
_T5_GATED = {  # T5 v1.1, mT5, UMT5, Flan-T5: a gated FFN (wi_0 gate, wi_1 up)
    "enc.blk.{i}.ffn_gate.{p}": "encoder.block.{i}.layer.1.DenseReluDense.wi_0.{p}",
    "enc.blk.{i}.ffn_up.{p}": "encoder.block.{i}.layer.1.DenseReluDense.wi_1.{p}",
    "dec.blk.{i}.ffn_gate.{p}": "decoder.block.{i}.layer.2.DenseReluDense.wi_0.{p}",
    "dec.blk.{i}.ffn_up.{p}": "decoder.block.{i}.layer.2.DenseReluDense.wi_1.{p}",
}
_APERTUS = {
    "blk.{i}.attn_norm.{p}": "model.layers.{i}.attention_layernorm.{p}",
    "blk.{i}.ffn_norm.{p}": "model.layers.{i}.feedforward_layernorm.{p}",
}
_MLA = {  # multi-head latent attention (minicpm3): q and kv through low-rank projections with norms between
    "blk.{i}.attn_q_a.{p}": "model.layers.{i}.self_attn.q_a_proj.{p}",
    "blk.{i}.attn_q_a_norm.{p}": "model.layers.{i}.self_attn.q_a_layernorm.{p}",
    "blk.{i}.attn_q_b.{p}": "model.layers.{i}.self_attn.q_b_proj.{p}",
    "blk.{i}.attn_kv_a_mqa.{p}": "model.layers.{i}.self_attn.kv_a_proj_with_mqa.{p}",
    "blk.{i}.attn_kv_a_norm.{p}": "model.layers.{i}.self_attn.kv_a_layernorm.{p}",
    "blk.{i}.attn_kv_b.{p}": "model.layers.{i}.self_attn.kv_b_proj.{p}",
}
_DEEPSEEK2 = {  # DeepSeek-V2/V3: MLA (V2-Lite's queries one q_proj, the llama table's attn_q), shared experts, the
    # router's score correction (a buffer: NOT_PARAMETERS_BY_ARCH); kv_b_proj as converters before 2025-04 wrote it
    # (attn_kv_b), or split per head into attn_k_b (heads, kv_lora, nope: transposed) and attn_v_b (heads, v, kv_lora)
    "blk.{i}.attn_k_b.{p}": "model.layers.{i}.self_attn.k_b_proj.{p}",
    "blk.{i}.attn_v_b.{p}": "model.layers.{i}.self_attn.v_b_proj.{p}",
}
_DSA_INDEXER = {  # GLM-5's (glm-dsa) sparse-attention indexer beside DeepSeek's latent attention
    "blk.{i}.indexer.attn_q_b.{p}": "model.layers.{i}.self_attn.indexer.wq_b.{p}",
    "blk.{i}.indexer.attn_k.{p}": "model.layers.{i}.self_attn.indexer.wk.{p}",
    "blk.{i}.indexer.k_norm.{p}": "model.layers.{i}.self_attn.indexer.k_norm.{p}",
    "blk.{i}.indexer.proj.{p}": "model.layers.{i}.self_attn.indexer.weights_proj.{p}",
}
_SCORE_CORRECTION = {  # DeepSeek-V3's and GLM-4.5's router score correction (the converter adds '.bias' to the name)
    "blk.{i}.exp_probs_b": "model.layers.{i}.mlp.gate.e_score_correction_bias",  # (gguf-py's name)
    "blk.{i}.exp_probs_b.bias": "model.layers.{i}.mlp.gate.e_score_correction_bias",
}
_NEMOTRON_H: dict[str, str | None] = {  # Nemotron-H (Nemotron Nano 2, Nemotron 3): one mixer per layer (Mamba-2,
    # attention, a squared-ReLU MLP or a MoE block), under transformers' names (model., not the hub's backbone.); the
    # converter reshapes the gated norm to (groups, inner / groups), A_log and D to (heads, 1), squeezes conv1d
    "token_embd.{p}": "model.embeddings.{p}",
    "output_norm.{p}": "model.norm_f.{p}",
    "output.{p}": "lm_head.{p}",
    "blk.{i}.attn_norm.{p}": "model.layers.{i}.norm.{p}",
    "blk.{i}.ssm_in.{p}": "model.layers.{i}.mixer.in_proj.{p}",
    "blk.{i}.ssm_conv1d.{p}": "model.layers.{i}.mixer.conv1d.{p}",
    "blk.{i}.ssm_dt.bias": "model.layers.{i}.mixer.dt_bias",
    "blk.{i}.ssm_a": "model.layers.{i}.mixer.A_log",
    "blk.{i}.ssm_d": "model.layers.{i}.mixer.D",
    "blk.{i}.ssm_norm.{p}": "model.layers.{i}.mixer.norm.{p}",
    "blk.{i}.ssm_out.{p}": "model.layers.{i}.mixer.out_proj.{p}",
    "blk.{i}.attn_q.{p}": "model.layers.{i}.mixer.q_proj.{p}",
    "blk.{i}.attn_k.{p}": "model.layers.{i}.mixer.k_proj.{p}",
    "blk.{i}.attn_v.{p}": "model.layers.{i}.mixer.v_proj.{p}",
    "blk.{i}.attn_output.{p}": "model.layers.{i}.mixer.o_proj.{p}",
    "blk.{i}.ffn_up.{p}": "model.layers.{i}.mixer.up_proj.{p}",
    "blk.{i}.ffn_down.{p}": "model.layers.{i}.mixer.down_proj.{p}",
    "blk.{i}.ffn_gate_inp.{p}": "model.layers.{i}.mixer.gate.{p}",
    "blk.{i}.exp_probs_b": "model.layers.{i}.mixer.gate.e_score_correction_bias",
    "blk.{i}.exp_probs_b.bias": "model.layers.{i}.mixer.gate.e_score_correction_bias",
    # the experts stacked (experts, out, in): the shapes transformers 5 holds them in (the `nemotron_h-fused` layout)
    "blk.{i}.ffn_up_exps.{p}": "model.layers.{i}.mixer.experts.up_proj.{p}",
    "blk.{i}.ffn_down_exps.{p}": "model.layers.{i}.mixer.experts.down_proj.{p}",
    "blk.{i}.ffn_up_shexp.{p}": "model.layers.{i}.mixer.shared_experts.up_proj.{p}",
    "blk.{i}.ffn_down_shexp.{p}": "model.layers.{i}.mixer.shared_experts.down_proj.{p}",
}
_NEMOTRON_H_MTP = {  # Nemotron 3's MTP module (mtp.layers.0: attention, .1: MoE), one layer after the last as the
    # converter writes it (nemotron_h_moe only): its own tensors under DeepSeek's names (_NEXTN), the MoE's norm so
    "blk.{i}.post_attention_norm.{p}": "model.layers.{i}.post_attention_layernorm.{p}",
}
_GLM4MOE = {"blk.{i}.post_attention_norm.{p}": "model.layers.{i}.post_attention_layernorm.{p}"}
_NEXTN = {  # the hub's multi-token-prediction layer after the last (DeepSeek-V3's names, GLM-4.5's and Qwen3.5's
    # renamed so by the converter), written when the checkpoint holds it (not DeepSeek-V2/V3's: the converter drops
    # theirs; GLM-4.7-Flash's, written as deepseek2, it keeps): counted, and explained by the families
    "blk.{i}.nextn.eh_proj.{p}": "model.layers.{i}.eh_proj.{p}",
    "blk.{i}.nextn.enorm.{p}": "model.layers.{i}.enorm.{p}",
    "blk.{i}.nextn.hnorm.{p}": "model.layers.{i}.hnorm.{p}",
    "blk.{i}.nextn.shared_head_norm.{p}": "model.layers.{i}.shared_head.norm.{p}",
    "blk.{i}.nextn.shared_head_head.{p}": "model.layers.{i}.shared_head.head.{p}",
    "blk.{i}.nextn.embed_tokens.{p}": "model.layers.{i}.embed_tokens.{p}",
}
_SHARED_EXPERT = {  # qwen2moe: one gated shared expert beside the routed ones
    "blk.{i}.ffn_gate_shexp.{p}": "model.layers.{i}.mlp.shared_expert.gate_proj.{p}",
    "blk.{i}.ffn_up_shexp.{p}": "model.layers.{i}.mlp.shared_expert.up_proj.{p}",
    "blk.{i}.ffn_down_shexp.{p}": "model.layers.{i}.mlp.shared_expert.down_proj.{p}",
    "blk.{i}.ffn_gate_inp_shexp.{p}": "model.layers.{i}.mlp.shared_expert_gate.{p}",
}
_SHARED_EXPERTS = {  # ernie4_5-moe, afmoe: shared_experts
    "blk.{i}.ffn_gate_shexp.{p}": "model.layers.{i}.mlp.shared_experts.gate_proj.{p}",
    "blk.{i}.ffn_up_shexp.{p}": "model.layers.{i}.mlp.shared_experts.up_proj.{p}",
    "blk.{i}.ffn_down_shexp.{p}": "model.layers.{i}.mlp.shared_experts.down_proj.{p}",
}
_AFMOE = {
    "blk.{i}.attn_gate.{p}": "model.layers.{i}.self_attn.gate_proj.{p}",
    "blk.{i}.post_attention_norm.{p}": "model.layers.{i}.post_attention_layernorm.{p}",
    "blk.{i}.ffn_norm.{p}": "model.layers.{i}.pre_mlp_layernorm.{p}",
    "blk.{i}.post_ffw_norm.{p}": "model.layers.{i}.post_mlp_layernorm.{p}",
    "blk.{i}.ffn_gate_inp.{p}": "model.layers.{i}.mlp.router.gate.{p}",
    "blk.{i}.exp_probs_b": "model.layers.{i}.mlp.expert_bias",
    "blk.{i}.exp_probs_b.bias": "model.layers.{i}.mlp.expert_bias",  # (the converter adds '.bias' to the name)
}
_ERNIE_MOE = {  # the expert-selection bias: the converter writes `e_score_correction_bias` as exp_probs_b.bias
    "blk.{i}.exp_probs_b.bias": "model.layers.{i}.mlp.moe_statics.e_score_correction_bias",
}
_GPT_OSS = {
    "blk.{i}.attn_sinks": "model.layers.{i}.self_attn.sinks",
    "blk.{i}.attn_sinks.weight": "model.layers.{i}.self_attn.sinks",  # (the converter adds '.weight' to the name)
    "blk.{i}.post_attention_norm.{p}": "model.layers.{i}.post_attention_layernorm.{p}",
    "blk.{i}.ffn_gate_inp.{p}": "model.layers.{i}.mlp.router.{p}",
}
_LLAMA4 = {  # llama4: a feed_forward (dense, or a router, experts stacked by the converter and a shared expert)
    "blk.{i}.ffn_gate_inp.{p}": "model.layers.{i}.feed_forward.router.{p}",
    "blk.{i}.ffn_gate.{p}": "model.layers.{i}.feed_forward.gate_proj.{p}",
    "blk.{i}.ffn_up.{p}": "model.layers.{i}.feed_forward.up_proj.{p}",
    "blk.{i}.ffn_down.{p}": "model.layers.{i}.feed_forward.down_proj.{p}",
    "blk.{i}.ffn_gate_exps.{p}": "model.layers.{i}.feed_forward.experts.gate_proj.{p}",
    "blk.{i}.ffn_up_exps.{p}": "model.layers.{i}.feed_forward.experts.up_proj.{p}",
    "blk.{i}.ffn_down_exps.{p}": "model.layers.{i}.feed_forward.experts.down_proj.{p}",
    "blk.{i}.ffn_gate_shexp.{p}": "model.layers.{i}.feed_forward.shared_expert.gate_proj.{p}",
    "blk.{i}.ffn_up_shexp.{p}": "model.layers.{i}.feed_forward.shared_expert.up_proj.{p}",
    "blk.{i}.ffn_down_shexp.{p}": "model.layers.{i}.feed_forward.shared_expert.down_proj.{p}",
}
_JAMBA = {  # attention and Mamba layers, each with a dense or MoE feed_forward
    "blk.{i}.ssm_in.{p}": "model.layers.{i}.mamba.in_proj.{p}",
    "blk.{i}.ssm_conv1d.{p}": "model.layers.{i}.mamba.conv1d.{p}",
    "blk.{i}.ssm_x.{p}": "model.layers.{i}.mamba.x_proj.{p}",
    "blk.{i}.ssm_dt.{p}": "model.layers.{i}.mamba.dt_proj.{p}",
    "blk.{i}.ssm_a": "model.layers.{i}.mamba.A_log",
    "blk.{i}.ssm_d": "model.layers.{i}.mamba.D",
    "blk.{i}.ssm_out.{p}": "model.layers.{i}.mamba.out_proj.{p}",
    "blk.{i}.ssm_dt_norm.{p}": "model.layers.{i}.mamba.dt_layernorm.{p}",
    "blk.{i}.ssm_b_norm.{p}": "model.layers.{i}.mamba.b_layernorm.{p}",
    "blk.{i}.ssm_c_norm.{p}": "model.layers.{i}.mamba.c_layernorm.{p}",
    "blk.{i}.ffn_norm.{p}": "model.layers.{i}.pre_ff_layernorm.{p}",
    "blk.{i}.ffn_gate.{p}": "model.layers.{i}.feed_forward.gate_proj.{p}",
    "blk.{i}.ffn_up.{p}": "model.layers.{i}.feed_forward.up_proj.{p}",
    "blk.{i}.ffn_down.{p}": "model.layers.{i}.feed_forward.down_proj.{p}",
    "blk.{i}.ffn_gate_inp.{p}": "model.layers.{i}.feed_forward.router.{p}",
    # the experts stacked by the converter (experts, out, in): the `jamba-stacked` layout
    "blk.{i}.ffn_gate_exps.{p}": "model.layers.{i}.feed_forward.experts.gate_proj.{p}",
    "blk.{i}.ffn_up_exps.{p}": "model.layers.{i}.feed_forward.experts.up_proj.{p}",
    "blk.{i}.ffn_down_exps.{p}": "model.layers.{i}.feed_forward.experts.down_proj.{p}",
    "output_norm.{p}": "model.final_layernorm.{p}",
}
_LFM2 = {  # attention layers among short convolutions; w1 gate, w3 up, w2 down
    "token_embd_norm.{p}": "model.embedding_norm.{p}",
    "blk.{i}.shortconv.conv.{p}": "model.layers.{i}.conv.conv.{p}",  # (squeezed by the converter: (d, cache))
    "blk.{i}.shortconv.in_proj.{p}": "model.layers.{i}.conv.in_proj.{p}",
    "blk.{i}.shortconv.out_proj.{p}": "model.layers.{i}.conv.out_proj.{p}",
    "blk.{i}.attn_norm.{p}": "model.layers.{i}.operator_norm.{p}",
    "blk.{i}.attn_output.{p}": "model.layers.{i}.self_attn.out_proj.{p}",
    "blk.{i}.attn_q_norm.{p}": "model.layers.{i}.self_attn.q_layernorm.{p}",
    "blk.{i}.attn_k_norm.{p}": "model.layers.{i}.self_attn.k_layernorm.{p}",
    "blk.{i}.ffn_norm.{p}": "model.layers.{i}.ffn_norm.{p}",
    "blk.{i}.ffn_gate.{p}": "model.layers.{i}.feed_forward.w1.{p}",
    "blk.{i}.ffn_up.{p}": "model.layers.{i}.feed_forward.w3.{p}",
    "blk.{i}.ffn_down.{p}": "model.layers.{i}.feed_forward.w2.{p}",
}
_LFM2_MOE = {  # LFM2-MoE: a router and experts (stacked by the converter: the `lfm2_moe-stacked` layout) after the
    # first dense layers; the router's score correction (`expert_bias`, a buffer: NOT_PARAMETERS_BY_ARCH)
    "blk.{i}.ffn_gate_inp.{p}": "model.layers.{i}.feed_forward.gate.{p}",
    "blk.{i}.ffn_gate_exps.{p}": "model.layers.{i}.feed_forward.experts.gate_proj.{p}",
    "blk.{i}.ffn_up_exps.{p}": "model.layers.{i}.feed_forward.experts.up_proj.{p}",
    "blk.{i}.ffn_down_exps.{p}": "model.layers.{i}.feed_forward.experts.down_proj.{p}",
    "blk.{i}.exp_probs_b": "model.layers.{i}.feed_forward.expert_bias",
    "blk.{i}.exp_probs_b.bias": "model.layers.{i}.feed_forward.expert_bias",  # (the converter adds '.bias')
}
_GLM4 = {  # GLM-4 (Glm4ForCausalLM, GLM-4-0414): a norm after attention and after the MLP, the MLP's gate_up_proj fused
    "blk.{i}.post_attention_norm.{p}": "model.layers.{i}.post_self_attn_layernorm.{p}",
    "blk.{i}.post_ffw_norm.{p}": "model.layers.{i}.post_mlp_layernorm.{p}",
    "blk.{i}.ffn_up.{p}": "model.layers.{i}.mlp.gate_up_proj.{p}",
}
_GATED_DELTANET = {  # Qwen3-Next, Qwen3.5: Gated DeltaNet layers (linear_attn) among full-attention ones
    "blk.{i}.ssm_a": "model.layers.{i}.linear_attn.A_log",
    "blk.{i}.ssm_dt.bias": "model.layers.{i}.linear_attn.dt_bias",
    "blk.{i}.ssm_conv1d.{p}": "model.layers.{i}.linear_attn.conv1d.{p}",
    "blk.{i}.ssm_norm.{p}": "model.layers.{i}.linear_attn.norm.{p}",
    "blk.{i}.ssm_out.{p}": "model.layers.{i}.linear_attn.out_proj.{p}",
    "blk.{i}.attn_norm.{p}": "model.layers.{i}.input_layernorm.{p}",
    "blk.{i}.post_attention_norm.{p}": "model.layers.{i}.post_attention_layernorm.{p}",
}
_QWEN3NEXT = {  # in_proj_qkvz is split by the converter into attn_qkv and attn_gate, as Qwen3.5 holds it (its
    # in_proj_qkv and in_proj_z: the rows regrouped from per key head to per part, the same sizes); in_proj_ba stays
    "blk.{i}.ssm_in.{p}": "model.layers.{i}.linear_attn.in_proj_qkvz.{p}",  # (gguf-py's name for the whole)
    "blk.{i}.ssm_ba.{p}": "model.layers.{i}.linear_attn.in_proj_ba.{p}",
    "blk.{i}.attn_qkv.{p}": "model.layers.{i}.linear_attn.in_proj_qkv.{p}",
    "blk.{i}.attn_gate.{p}": "model.layers.{i}.linear_attn.in_proj_z.{p}",
}
_QWEN35 = {
    "blk.{i}.attn_qkv.{p}": "model.layers.{i}.linear_attn.in_proj_qkv.{p}",
    "blk.{i}.attn_gate.{p}": "model.layers.{i}.linear_attn.in_proj_z.{p}",
    "blk.{i}.ssm_beta.{p}": "model.layers.{i}.linear_attn.in_proj_b.{p}",
    "blk.{i}.ssm_alpha.{p}": "model.layers.{i}.linear_attn.in_proj_a.{p}",
}
_GRANITE_MOE = {  # the router; GraniteMoeShared's shared MLP, its input_linear split by the converter in two halves
    "blk.{i}.ffn_gate_inp.{p}": "model.layers.{i}.block_sparse_moe.router.layer.{p}",
    "blk.{i}.ffn_gate_shexp.{p}": "model.layers.{i}.shared_mlp.gate_proj.{p}",
    "blk.{i}.ffn_up_shexp.{p}": "model.layers.{i}.shared_mlp.up_proj.{p}",
    "blk.{i}.ffn_down_shexp.{p}": "model.layers.{i}.shared_mlp.output_linear.{p}",
}
_HY_V3 = {  # HunYuan v3: the router's score correction is the MoE block's own buffer (NOT_PARAMETERS_BY_ARCH)
    "blk.{i}.exp_probs_b": "model.layers.{i}.mlp.e_score_correction_bias",
    "blk.{i}.exp_probs_b.bias": "model.layers.{i}.mlp.e_score_correction_bias",
}
_LAGUNA = {  # Laguna: a softplus output gate per head (g_proj); its router's score correction a parameter
    # (requires_grad off), named as its checkpoints name it (transformers renames it `mlp.gate.` in memory)
    "blk.{i}.attn_gate.{p}": "model.layers.{i}.self_attn.g_proj.{p}",
    "blk.{i}.exp_probs_b.bias": "model.layers.{i}.mlp.experts.e_score_correction_bias",
}
_GRANITE_SWA = {  # Granite SWA (dense) and Granite MoE SWA: a learned sink per head; the MoE's experts kept fused by
    # the converter as transformers holds them (gate_up_proj (experts, 2 ff, d), down_proj), the shared MLP's too
    "blk.{i}.attn_sinks": "model.layers.{i}.self_attn.sinks",
    "blk.{i}.attn_sinks.weight": "model.layers.{i}.self_attn.sinks",  # (the converter adds '.weight' to the name)
    "blk.{i}.ffn_gate_inp.{p}": "model.layers.{i}.block_sparse_moe.router.{p}",
    "blk.{i}.ffn_gate_up_exps.{p}": "model.layers.{i}.block_sparse_moe.experts.gate_up_proj",  # (bare parameters)
    "blk.{i}.ffn_down_exps.{p}": "model.layers.{i}.block_sparse_moe.experts.down_proj",
    "blk.{i}.ffn_up_shexp.{p}": "model.layers.{i}.shared_mlp.input_linear.{p}",
    "blk.{i}.ffn_down_shexp.{p}": "model.layers.{i}.shared_mlp.output_linear.{p}",
}
_HRM_TEXT = {  # HRM: the converter numbers its L stack's layers first, then its H stack's (model.L_module.layers.N,
    # model.H_module.layers.N), as model.layers.N; each gqkv_proj split into attn_gate, q, k, v; the L module's learned
    # initial state
    "blk.{i}.attn_gate.{p}": "model.layers.{i}.self_attn.gate_proj.{p}",
    "hrm.z_l_init": "model.z_L_init",
}
_CHATGLM = {  # GLM (GlmForCausalLM, written as chatglm): its MLP's gate and up projections kept fused, as it holds them
    "blk.{i}.ffn_up.{p}": "model.layers.{i}.mlp.gate_up_proj.{p}",
}
_FALCON_NEW = {  # Falcon 40B/180B (new_decoder_architecture): two norms per block, as gguf-py pairs them
    "blk.{i}.attn_norm.{p}": "transformer.h.{i}.ln_mlp.{p}",
    "blk.{i}.attn_norm_2.{p}": "transformer.h.{i}.ln_attn.{p}",
}
# general.architecture -> its whole table (the llama table for every other architecture)
HF_NAMES_BY_ARCH: dict[str, dict[str, str | None]] = {
    "gemma2": {**HF_NAMES, **_GEMMA2},
    "gemma3": {**HF_NAMES, **_GEMMA2},
    "phi3": {**HF_NAMES, **_PHI3},
    "gpt2": _GPT2,
    "starcoder": _GPT2,
    "olmo2": {**HF_NAMES, **_POST_NORMS},
    "exaone4": {**HF_NAMES, **_POST_NORMS},
    "seed_oss": {**HF_NAMES, **_POST_NORMS},
    "starcoder2": {**HF_NAMES, **_STARCODER2},
    "phi2": {**HF_NAMES, **_PHI2},
    "gptneox": _GPTNEOX,
    "bloom": _BLOOM,
    "falcon": _BLOOM,
    "falcon-new": {**_BLOOM, **_FALCON_NEW},
    "bert": _BERT,
    "mamba": _MAMBA,
    "t5": _T5,
    "t5-gated": {**_T5, **_T5_GATED},
    "apertus": {**HF_NAMES, **_APERTUS},
    "minicpm3": {**HF_NAMES, **_MLA},
    "qwen2moe": {**HF_NAMES, **_SHARED_EXPERT},
    "ernie4_5-moe": {**HF_NAMES, **_SHARED_EXPERTS, **_ERNIE_MOE},
    "afmoe": {**HF_NAMES, **_SHARED_EXPERTS, **_AFMOE},
    "gpt-oss": {**HF_NAMES, **_GPT_OSS},
    "llama4": {**HF_NAMES, **_LLAMA4},
    "jamba": {**HF_NAMES, **_JAMBA},
    "lfm2": {**HF_NAMES, **_LFM2},
    "lfm2moe": {**HF_NAMES, **_LFM2, **_LFM2_MOE},
    "glm4": {**HF_NAMES, **_GLM4},
    "granitemoe": {**HF_NAMES, **_GRANITE_MOE},
    "qwen3next": {**HF_NAMES, **_SHARED_EXPERT, **_GATED_DELTANET, **_QWEN3NEXT, **_NEXTN},
    "qwen35": {**HF_NAMES, **_GATED_DELTANET, **_QWEN35, **_NEXTN},
    "qwen35moe": {**HF_NAMES, **_SHARED_EXPERT, **_GATED_DELTANET, **_QWEN35, **_NEXTN},
    "deepseek2": {**HF_NAMES, **_MLA, **_SHARED_EXPERTS, **_DEEPSEEK2, **_SCORE_CORRECTION, **_NEXTN},
    "glm-dsa": {**HF_NAMES, **_MLA, **_SHARED_EXPERTS, **_DEEPSEEK2, **_DSA_INDEXER, **_SCORE_CORRECTION, **_NEXTN},
    "exaone-moe": {**HF_NAMES, **_SHARED_EXPERTS, **_SCORE_CORRECTION, **_NEXTN},
    "hy_v3": {**HF_NAMES, **_SHARED_EXPERTS, **_HY_V3, **_NEXTN},
    "laguna": {**HF_NAMES, **_SHARED_EXPERTS, **_LAGUNA},
    "granite_swa": {**HF_NAMES, **_GRANITE_SWA},
    "hrm_text": {**HF_NAMES, **_HRM_TEXT},
    "chatglm": {**HF_NAMES, **_CHATGLM},
    "glm4moe": {**HF_NAMES, **_SHARED_EXPERTS, **_GLM4MOE, **_SCORE_CORRECTION, **_NEXTN},
    "nemotron_h": _NEMOTRON_H,
    "nemotron_h_moe": {**_NEMOTRON_H, **_NEXTN, **_NEMOTRON_H_MTP},
}
# architectures whose converter numbers two stacks of the source's layers as one run of blocks, each stack after the
# one before (HRM: `model.L_module.layers.N` are blocks 0..n-1, `model.H_module.layers.N` blocks n..2n-1): arch -> (the
# metadata key of a stack's layer count n, the source's path of each stack's layers, the table's path of the blocks)
HRM_STACKS = ("model.L_module.layers.", "model.H_module.layers.")
BLOCK_STACKS = {"hrm_text": ("hrm_text.hrm.layers_per_stack", HRM_STACKS, "model.layers.")}
# an architecture whose table depends on a tensor the file holds: arch -> (that tensor, the table to use)
HF_NAMES_VARIANTS = {
    "t5": ("enc.blk.0.ffn_gate.weight", "t5-gated"),
    "falcon": ("blk.0.attn_norm_2.weight", "falcon-new"),
}
# Tensors a GGUF stores that are not trainable parameters in the source model.
NOT_PARAMETERS = {"rope_freqs.weight": TensorKind.BUFFER}
# ... in one architecture's files, by their Hugging Face names: DeepSeek-V3's, GLM-4.5's, GLM-5's, Nemotron 3's,
# EXAONE-MoE's, HunYuan v3's and LFM2-MoE's router score correction is a registered buffer (its num_parameters() leaves
# it out; ERNIE's and Laguna's, also exp_probs_b, are parameters)
_SCORE_CORRECTION_BUFFER = re.compile(r"model\.layers\.\d+\.(?:mlp|mixer)\.gate\.e_score_correction_bias")
NOT_PARAMETERS_BY_ARCH = {
    **{arch: _SCORE_CORRECTION_BUFFER for arch in ("deepseek2", "glm-dsa", "glm4moe", "nemotron_h_moe", "exaone-moe")},
    "hy_v3": re.compile(r"model\.layers\.\d+\.mlp\.e_score_correction_bias"),
    "lfm2moe": re.compile(r"model\.layers\.\d+\.feed_forward\.expert_bias"),
}


def _compile(table: dict[str, str | None]) -> list[tuple[re.Pattern[str], str | None]]:
    out = []
    for pattern, target in table.items():
        regex = re.escape(pattern).replace(r"\{i\}", r"(?P<i>\d+)").replace(r"\{p\}", r"(?P<p>weight|bias)")
        out.append((re.compile(regex), target))
    return out


_HF_RULES: dict[str, list[tuple[re.Pattern[str], str | None]]] = {}  # compiled on first use, per architecture


def hf_name(gguf_name: str, arch: str = "llama") -> str | None:
    """The Hugging Face name of a GGUF tensor (`blk.3.attn_q.weight` -> `model.layers.3.self_attn.q_proj.weight`).

    The llama table (llama, mistral, qwen2, qwen3...) unless `arch` has its own (`HF_NAMES_BY_ARCH`: gemma2/3, phi2,
    phi3, gpt2, starcoder, starcoder2, olmo2, gptneox, bloom, falcon, bert, mamba, t5, deepseek2, glm4moe...;
    `names_table` picks a variant). None when the tensor has no one-to-one Hugging Face counterpart or the name is not
    in the table.
    """
    table = arch if arch in HF_NAMES_BY_ARCH else ""
    rules = _HF_RULES.get(table)
    if rules is None:
        rules = _HF_RULES[table] = _compile(HF_NAMES_BY_ARCH.get(table, HF_NAMES))
    for regex, target in rules:
        m = regex.fullmatch(gguf_name)
        if m:
            return None if target is None else target.format(**m.groupdict())
    return None


def names_table(arch: str, names: Iterable[str]) -> str:
    """The `hf_name` table of a file's tensors: its architecture's, or a variant when the file (the shard) holds the
    tensor that marks it (`HF_NAMES_VARIANTS`). `names` is read only for an architecture that has a variant."""
    variant = HF_NAMES_VARIANTS.get(arch)
    return variant[1] if variant is not None and variant[0] in names else arch


class _Cursor:
    """Sequential reads through a window of the file, in the file's byte order and length width."""

    def __init__(self, probe: Probe, pos: int, order: str, wide: bool) -> None:
        self.probe, self.pos, self.order = probe, pos, order
        self.len_code = "Q" if wide else "I"
        self._buf, self._at = b"", 0

    def take(self, n: int, what: str) -> bytes:
        rel = self.pos - self._at
        if rel < 0 or rel + n > len(self._buf):
            want = max(n, min(WINDOW, self.probe.size - self.pos))
            self._buf = self.probe.read_at(self.pos, want, fmt=FORMAT, what=what)
            self._at, rel = self.pos, 0
        self.pos += n
        return self._buf[rel : rel + n]

    def unpack(self, code: str, what: str) -> Any:
        size = struct.calcsize(code)
        return struct.unpack(self.order + code, self.take(size, what))[0]

    def length(self, what: str) -> int:
        return int(self.unpack(self.len_code, what))

    def skip(self, n: int, what: str) -> None:
        if self.pos + n > self.probe.size:
            self.take(n, what)  # raises the truncation error
        self.pos += n

    def skip_strings(self, count: int, what: str) -> None:
        """Step over `count` strings (a vocabulary) reading only their lengths, in a tight loop over the window."""
        length = struct.Struct(self.order + self.len_code)
        pos = self.pos
        for _ in range(count):
            rel = pos - self._at
            if rel < 0 or rel + length.size > len(self._buf):
                self.pos = pos
                self.take(length.size, what)  # refills the window at pos, or raises past the end of the file
                rel = pos - self._at
            pos += length.size + length.unpack_from(self._buf, rel)[0]
        self.pos = pos
        if pos > self.probe.size:
            raise TruncatedFileError(self.probe.path, FORMAT, f"{what} ends past the end of the file", pos)

    def string(self, what: str, keep: int | None = None) -> str:
        """A string; cut to `keep` characters, or at most MAX_NAME_BYTES long when `keep` is None (names)."""
        n = self.length(what)
        if keep is None and n > MAX_NAME_BYTES:
            raise LimitExceededError(self.probe.path, FORMAT, f"{what} is {n:,} bytes long", self.pos)
        if keep is not None and n > keep:
            text = self.take(keep, what).decode("utf-8", "replace")
            self.skip(n - keep, what)
            return text + "..."
        return self.take(n, what).decode("utf-8")


def _value(cur: _Cursor, vtype: int, key: str, depth: int = 0) -> Any:
    """A value: numbers and strings kept (strings cut), arrays kept when short, else `("array", type, n)`."""
    if vtype not in VALUE_TYPES:
        raise UnsupportedVariantError(cur.probe.path, FORMAT, f"key {key!r} has unknown value type {vtype}", cur.pos)
    if vtype == STRING:
        return cur.string(f"value of {key!r}", KEEP_STRING)
    if vtype != ARRAY:
        return cur.unpack(VALUE_TYPES[vtype][1], f"value of {key!r}")
    if depth >= MAX_ARRAY_DEPTH:
        raise LimitExceededError(cur.probe.path, FORMAT, f"key {key!r} nests arrays {depth} deep", cur.pos)
    etype = cur.unpack("I", f"array type of {key!r}")
    count = cur.length(f"array length of {key!r}")
    if etype not in VALUE_TYPES:
        raise UnsupportedVariantError(cur.probe.path, FORMAT, f"key {key!r} has unknown array type {etype}", cur.pos)
    code = VALUE_TYPES[etype][1]
    minimum = struct.calcsize(code) if code else (4 if etype == ARRAY else struct.calcsize(cur.len_code))
    if count * minimum > cur.probe.size - cur.pos:
        raise LimitExceededError(
            cur.probe.path, FORMAT, f"key {key!r}: {count:,} array elements cannot fit in the file", cur.pos
        )
    if code and count <= KEEP_ARRAY:
        return list(struct.unpack(f"{cur.order}{count}{code}", cur.take(count * minimum, f"array {key!r}")))
    if code:
        cur.skip(count * minimum, f"array {key!r}")
    elif etype == STRING:
        cur.skip_strings(count, f"string in {key!r}")
    else:
        for _ in range(count):
            _value(cur, ARRAY, key, depth + 1)
    return ("array", VALUE_TYPES[etype][0], count)


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return f"array of {value[2]:,} {value[1]}"
    return str(value)[: KEEP_STRING + 3]


def _header(probe: Probe) -> tuple[str, int]:
    """Byte order and version; big-endian files read with their version byte-swapped (as gguf-py does)."""
    (version,) = struct.unpack("<I", probe.read_at(4, 4, fmt=FORMAT, what="version"))
    order = "<"
    if version & 0xFFFF == 0:
        order, (version,) = ">", struct.unpack(">I", probe.read_at(4, 4, fmt=FORMAT))
    if version not in VERSIONS:
        raise UnsupportedVariantError(probe.path, FORMAT, f"version {version} (this reader knows 1, 2 and 3)", 4)
    return order, version


def _config(kv: dict[str, Any], names: set[str], shapes: dict[str, tuple[int, ...]]) -> dict[str, Any]:
    arch = str(kv.get("general.architecture", ""))
    marked = [model_type for tensor, model_type in MODEL_TYPE_MARKS.get(arch, ()) if tensor in names]
    config: dict[str, Any] = {"source": "gguf", "model_type": marked[0] if marked else MODEL_TYPES.get(arch, arch)}
    rows = dict(HF_CONFIG) | dict(HF_CONFIG_BY_ARCH.get(arch, ()))
    for hf_key, keys in rows.items():
        values = [kv.get(key.format(arch=arch)) for key in keys]
        found = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
        # the first key present wins; arrays (per-layer values) are left out, and so is a size of 0 (what the
        # converter writes for a part the model has none of: mamba's attention heads and FFN)
        if found and (found[0] or hf_key.endswith("_token_id")):
            config[hf_key] = found[0]
    for hf_key, whole, part in HF_CONFIG_DIFFERENCES:
        a, b = kv.get(whole.format(arch=arch)), kv.get(part.format(arch=arch))
        if isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool) and not isinstance(b, bool) and a > b:
            config[hf_key] = a - b
    tokens = kv.get("tokenizer.ggml.tokens")
    if "vocab_size" not in config and isinstance(tokens, tuple):
        config["vocab_size"] = tokens[2]
    if "vocab_size" not in config and "token_embd.weight" in shapes:
        config["vocab_size"] = shapes["token_embd.weight"][0]
    if "token_embd.weight" in names:
        config["tie_word_embeddings"] = "output.weight" not in names
    return config


def _tensor_info(cur: _Cursor, index: int) -> tuple[str, tuple[int, ...], int, int]:
    name = cur.string(f"name of tensor {index}")
    n_dims = cur.unpack("I", f"dimension count of {name!r}")
    if n_dims > MAX_DIMS:
        raise LimitExceededError(cur.probe.path, FORMAT, f"tensor {name!r} has {n_dims} dimensions", cur.pos)
    ne = [cur.length(f"dimensions of {name!r}") for _ in range(n_dims)]
    ggml_type = cur.unpack("I", f"type of {name!r}")
    offset = cur.unpack("Q", f"offset of {name!r}")
    return name, check_shape(cur.probe, FORMAT, name, reversed(ne)), ggml_type, offset


def _layout(probe: Probe, name: str, shape: tuple[int, ...], ggml_type: int) -> tuple[str, int, int, int]:
    """(dtype, elements per block, bytes per block, nbytes) of one tensor."""
    if ggml_type not in GGML_TYPES:
        raise UnsupportedVariantError(probe.path, FORMAT, f"tensor {name!r} has unknown ggml type {ggml_type}")
    dtype, block, size = GGML_TYPES[ggml_type]
    row = shape[-1] if shape else 1
    if row % block:
        raise FormatError(
            probe.path, FORMAT, f"tensor {name!r}: rows of {row} elements do not fill {dtype} blocks of {block}"
        )
    n = 1
    for d in shape:
        n *= d
    return dtype, block, size, n // block * size


def _bits(dtype: str) -> float:
    dt = DTYPES[dtype]
    return dt.bits / dt.block


@record
class _File:
    """What one GGUF file holds: its metadata, tensors and regions (for file `index` of the checkpoint)."""

    version: int
    order: str
    alignment: int
    data_start: int
    kv: dict[str, Any]
    tensors: list[TensorInfo]
    regions: list[Region]
    findings: list[Finding]
    table: str = ""  # the `hf_name` table its tensors were named by (`names_table` of its own tensors)


def _parse(probe: Probe, index: int = 0) -> _File:
    order, version = _header(probe)
    cur = _Cursor(probe, 8, order, version > 1)
    n_tensors, n_kv = cur.length("tensor count"), cur.length("key-value count")
    if n_tensors > MAX_TENSORS or n_kv > MAX_KV or (n_tensors + n_kv) * 8 > probe.size:
        raise LimitExceededError(
            probe.path, FORMAT, f"{n_tensors:,} tensors and {n_kv:,} keys declared in a {probe.size:,}-byte file"
        )
    regions = [Region(RegionKind.HEADER, 0, cur.pos, f"GGUF v{version} header", index)]
    kv: dict[str, Any] = {}
    for _ in range(n_kv):
        start = cur.pos
        key = cur.string("key")
        if key in kv:
            raise FormatError(probe.path, FORMAT, f"duplicate key {key!r}", start)
        vtype = cur.unpack("I", f"type of {key!r}")
        kv[key] = _value(cur, vtype, key)
        label = f"{key} ({_show(kv[key])})"[:120]
        regions.append(Region(RegionKind.METADATA, start, cur.pos - start, label, index))
    alignment = kv.get("general.alignment", DEFAULT_ALIGNMENT)
    if not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1):
        raise FormatError(probe.path, FORMAT, f"general.alignment {alignment!r} is not a power of two")
    infos_start = cur.pos
    infos = [_tensor_info(cur, i) for i in range(n_tensors)]
    regions.append(Region(RegionKind.HEADER, infos_start, cur.pos - infos_start, f"{n_tensors:,} tensor infos", index))
    data_start = -(-cur.pos // alignment) * alignment
    regions.append(Region(RegionKind.PADDING, cur.pos, data_start - cur.pos, f"padding to {alignment} bytes", index))
    gguf = _File(version, order, alignment, data_start, kv, [], regions, [])
    gguf.table = names_table(str(kv.get("general.architecture", "")), (info[0] for info in infos))
    _place_tensors(probe, gguf, infos, index, gguf.table)
    return gguf


def _place_tensors(
    probe: Probe, gguf: _File, infos: list[tuple[str, tuple[int, ...], int, int]], index: int, arch: str
) -> None:
    """Tensor records, data and padding regions, and findings for misplaced tensors.

    Each tensor's `layer` and `param` are its Hugging Face module and parameter (`hf_name`) where it has one,
    so the family tables check a GGUF file as they check the same model in safetensors.
    """
    seen: set[str] = set()
    spans = []
    alignment = gguf.alignment
    for name, shape, ggml_type, offset in infos:
        if name in seen:
            raise FormatError(probe.path, FORMAT, f"duplicate tensor name {name!r}")
        seen.add(name)
        dtype, block, size, nbytes = _layout(probe, name, shape, ggml_type)
        start = gguf.data_start + offset
        if start + nbytes > probe.size:
            message = f"tensor {name!r} data ends at byte {start + nbytes:,} but the file has {probe.size:,} bytes"
            raise FormatError(probe.path, FORMAT, message, start)
        if offset % alignment:
            message = f"tensor {name!r} at offset {offset:,} is not {alignment}-aligned"
            gguf.findings.append(Finding("MISALIGNED", Severity.WARNING, message, (name,)))
        notes = (f"{dtype}: blocks of {block} elements in {size} bytes, {_bits(dtype):g} bits per weight",)
        layer, param = _source_name(name, arch)
        kind = _kind(name, layer, param, arch)
        gguf.tensors.append(
            TensorInfo(
                name,
                shape,
                dtype,
                nbytes,
                start,
                kind=kind,
                layer=layer,
                param=param,
                file=index,
                notes=notes if block > 1 else (),
            )  # fmt: skip
        )
        spans.append((start, nbytes, name))
    pos = gguf.data_start
    regions = gguf.regions
    for start, nbytes, name in sorted(spans):
        if start < pos:
            message = f"tensor {name!r} overlaps the one before"
            gguf.findings.append(Finding("OVERLAP", Severity.ERROR, message, (name,)))
        else:
            pad = min(start, -(-pos // alignment) * alignment) - pos
            regions.append(Region(RegionKind.PADDING, pos, pad, "tensor alignment padding", index))
        regions.append(Region(RegionKind.TENSOR_DATA, start, nbytes, name, index))
        pos = max(pos, start + nbytes)
    tail = min(probe.size, -(-pos // alignment) * alignment) - pos
    regions.append(Region(RegionKind.PADDING, pos, tail, "tail padding", index))
    if probe.size > pos + tail:
        message = f"{probe.size - pos - tail:,} bytes after the last tensor's padding"
        gguf.findings.append(Finding("TRAILING_BYTES", Severity.WARNING, message))


def _source_name(name: str, arch: str) -> tuple[str | None, str | None]:
    """The Hugging Face module and parameter the table `arch` gives a GGUF tensor (`hf_name`), or Nones."""
    layer, _, param = (hf_name(name, arch) or "").rpartition(".")
    return layer or None, param or None


def _kind(name: str, layer: str | None, param: str | None, arch: str) -> TensorKind:
    """A tensor's kind: a parameter unless the source model holds it as a buffer (NOT_PARAMETERS, by its GGUF name, and
    NOT_PARAMETERS_BY_ARCH, by its Hugging Face name in that architecture's files)."""
    kind = NOT_PARAMETERS.get(name, TensorKind.PARAMETER)
    buffers = NOT_PARAMETERS_BY_ARCH.get(arch)
    if buffers is not None and layer is not None and buffers.fullmatch(f"{layer}.{param}"):
        kind = TensorKind.BUFFER
    return kind


def _renamed(t: TensorInfo, arch: str) -> TensorInfo:
    """`t` with the Hugging Face module and parameter the table `arch` gives it (and the kind they make it)."""
    layer, param = _source_name(t.name, arch)
    return replace(t, layer=layer, param=param, kind=_kind(t.name, layer, param, arch))


def _in_stacks(tensors: list[TensorInfo], kv: Mapping[str, Any], arch: str) -> list[TensorInfo]:
    """The tensors with each block's Hugging Face module in the stack of layers it came from (`BLOCK_STACKS`), where
    the file's architecture has stacks and its metadata says how many layers each holds."""
    stacks = BLOCK_STACKS.get(arch)
    n = kv.get(stacks[0]) if stacks is not None else None
    if stacks is None or not isinstance(n, int) or n <= 0:
        return tensors
    _, paths, blocks = stacks
    out = []
    for t in tensors:
        index, _, rest = (t.layer or "").removeprefix(blocks).partition(".")
        if t.layer is not None and t.layer.startswith(blocks) and index.isdigit() and int(index) < n * len(paths):
            stack, i = divmod(int(index), n)
            t = replace(t, layer=f"{paths[stack]}{i}" + (f".{rest}" if rest else ""))
        out.append(t)
    return out


def _split_paths(probe: Probe, kv: dict[str, Any]) -> list[str]:
    """Every shard of a split model (gguf-split, GGUFWriter(split_max_tensors=...)), the given one first."""
    count = kv.get("split.count")
    if not isinstance(count, int) or count <= 1:
        return [probe.path]
    m = re.fullmatch(SPLIT_NAME, os.path.basename(probe.path))
    if m is None or int(m.group(3)) != count:
        raise FormatError(
            probe.path, FORMAT, f"split.count is {count} but the name is not <model>-NNNNN-of-{count:05d}"
        )
    if count > MAX_SPLITS:
        raise LimitExceededError(probe.path, FORMAT, f"{count:,} split files (cap {MAX_SPLITS:,})")
    folder = os.path.dirname(probe.path)
    names = [os.path.join(folder, f"{m.group(1)}-{i:05d}-of-{count:05d}.gguf") for i in range(1, count + 1)]
    return [probe.path] + [n for n in names if os.path.basename(n) != os.path.basename(probe.path)]


class GgufLoader:
    """llama.cpp GGUF files (v1-v3), header-only: metadata key-values and tensor infos; split models as one."""

    name: ClassVar[str] = FORMAT
    extensions: ClassVar[tuple[str, ...]] = (".gguf",)

    def claim(self, probe: Probe) -> Claim | None:
        return Claim.EXACT if probe.head.startswith(MAGIC) else None

    def load(self, probe: Probe) -> Checkpoint:
        first = _parse(probe)
        parsed, files = [first], [(probe.path, probe.size)]
        for index, path in enumerate(_split_paths(probe, first.kv)[1:], start=1):
            with Probe(path) as shard:
                with parsing(shard, FORMAT):
                    parsed.append(_parse(shard, index))
                files.append((path, shard.size))
        kv: dict[str, Any] = {}
        for part in sorted(parsed, key=lambda p: -1 if p.kv.get("split.no") == 0 else 0):
            kv = {**part.kv, **kv}  # the first shard's metadata wins; the others hold only split.* keys
        shapes = {t.name: t.shape for part in parsed for t in part.tensors}
        arch = names_table(str(kv.get("general.architecture", "")), shapes)
        # a split model's table is the whole model's: the tensor that marks a variant lies in one shard only
        tensors = [t if part.table == arch else _renamed(t, arch) for part in parsed for t in part.tensors]
        tensors = _in_stacks(tensors, kv, arch)
        findings = [f for part in parsed for f in part.findings] + _split_findings(parsed, len(tensors))
        regions = tuple(r for i, part in enumerate(parsed) for r in tile(part.regions, files[i][1], i))
        attributes = {
            "gguf.version": str(first.version),
            "gguf.byte_order": "big" if first.order == ">" else "little",
            "gguf.alignment": str(first.alignment),
            "gguf.data_start": str(first.data_start),
        }
        if len(files) > 1:
            attributes["gguf.split_files"] = str(len(files))
        attributes |= {f"gguf.{k}": _show(v) for k, v in kv.items()}
        attributes |= _type_summary(tensors)
        if arch:
            unmapped = [t.name for t in tensors if hf_name(t.name, arch) is None and t.name not in NOT_PARAMETERS]
            attributes["gguf.hf_names"] = f"{len(tensors) - len(unmapped):,} of {len(tensors):,} tensors"
        return Checkpoint(
            probe.path,
            FORMAT,
            "llama.cpp",
            tuple(files),
            tuple(tensors),
            regions,
            attributes,
            _config(kv, set(shapes), shapes) if arch else None,
            tuple(findings),
        )


def _split_findings(parsed: list[_File], n_tensors: int) -> list[Finding]:
    """A split model's shards must number 0..count-1 and hold split.tensors.count tensors between them."""
    if len(parsed) == 1:
        return []
    findings = []
    numbers = sorted(p.kv.get("split.no", -1) for p in parsed)
    if numbers != list(range(len(parsed))):
        findings.append(Finding("SPLIT_MISMATCH", Severity.ERROR, f"split.no of the shards are {numbers}"))
    declared = parsed[0].kv.get("split.tensors.count")
    if isinstance(declared, int) and declared != n_tensors:
        message = f"split.tensors.count says {declared:,} tensors, the shards hold {n_tensors:,}"
        findings.append(Finding("SPLIT_MISMATCH", Severity.ERROR, message, expected=declared, observed=n_tensors))
    names = [t.name for p in parsed for t in p.tensors]
    if len(set(names)) != len(names):
        findings.append(Finding("DUPLICATE_TENSOR", Severity.ERROR, "a tensor name appears in two shards"))
    return findings


def _type_summary(tensors: list[TensorInfo]) -> dict[str, str]:
    """Tensors per ggml type with bits per weight, and the bits per weight of the whole file's tensors."""
    by_type: dict[str, int] = {}
    for t in tensors:
        by_type[t.dtype] = by_type.get(t.dtype, 0) + 1
    parts = [f"{name} x{n} ({_bits(name):g} bpw)" for name, n in sorted(by_type.items(), key=lambda kv: -kv[1])]
    n_elements = sum(t.n_elements for t in tensors)
    out = {"gguf.types": ", ".join(parts) or "-"}
    if n_elements:
        out["gguf.bits_per_weight"] = f"{sum(t.nbytes for t in tensors) * 8 / n_elements:.4g}"
    return out
