"""Tiny transformers models of every family, written by `save_pretrained` from configs (random weights, no download).

`ZOO` maps a case to (auto class, model_type, config words). `build(case, folder)` writes the model and
returns what transformers itself reports: `num_parameters()` (tied weights once, buffers apart).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

SMALL_DECODER = dict(  # a Llama-style decoder's words, shrunk (grouped-query: 2 key/value heads of 4)
    hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2
)
SMALL_GRANITE_MOE = {**SMALL_DECODER, "intermediate_size": 16, "num_local_experts": 4, "num_experts_per_tok": 2}
SMALL_GRANITE_MAMBA = {"mamba_n_heads": 8, "mamba_d_head": 8, "mamba_n_groups": 2, "mamba_d_state": 8}
SMALL_DEEPSEEK = {
    **SMALL_DECODER, "num_key_value_heads": 4, "moe_intermediate_size": 16, "n_routed_experts": 4,
    "n_shared_experts": 2, "num_experts_per_tok": 2, "first_k_dense_replace": 1, "n_group": 2, "topk_group": 1,
    "q_lora_rank": 16, "kv_lora_rank": 8, "qk_nope_head_dim": 4, "qk_rope_head_dim": 4, "v_head_dim": 4,
}  # fmt: skip
SMALL_GATED_DELTA = {
    **SMALL_DECODER, "num_hidden_layers": 4, "head_dim": 8, "moe_intermediate_size": 16, "num_experts_per_tok": 2,
    "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 8, "linear_value_head_dim": 8,
}  # fmt: skip
SMALL_QWEN_VISION = {"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 4, "out_hidden_size": 32}
ZOO: dict[str, tuple[str, dict[str, Any]]] = {
    "llama": (
        "AutoModelForCausalLM",
        {**SMALL_DECODER, "max_position_embeddings": 64},
    ),
    "mistral": (
        "AutoModelForCausalLM",
        SMALL_DECODER,
    ),
    "qwen2": (
        "AutoModelForCausalLM",
        SMALL_DECODER,
    ),
    "qwen3": (
        "AutoModelForCausalLM",
        {**SMALL_DECODER, "head_dim": 16},
    ),
    "gemma": (
        "AutoModelForCausalLM",
        dict(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=1,
            head_dim=16,
        ),
    ),
    "gemma2": (
        "AutoModelForCausalLM",
        {**SMALL_DECODER, "head_dim": 16},
    ),
    "phi3": (
        "AutoModelForCausalLM",
        {**SMALL_DECODER, "pad_token_id": 0},
    ),
    "mixtral": (
        "AutoModelForCausalLM",
        dict(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            num_local_experts=4,
            num_experts_per_tok=2,
        ),
    ),
    "qwen2_moe": (
        "AutoModelForCausalLM",
        dict(
            hidden_size=32,
            intermediate_size=64,
            moe_intermediate_size=16,
            shared_expert_intermediate_size=48,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            num_experts=4,
            num_experts_per_tok=2,
        ),
    ),
    "gpt_neox": (
        "AutoModelForCausalLM",
        dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4),
    ),
    "gptj": ("AutoModelForCausalLM", dict(n_embd=32, n_layer=2, n_head=4, n_positions=64, rotary_dim=4)),
    "codegen": ("AutoModelForCausalLM", dict(n_embd=32, n_layer=2, n_head=4, n_positions=64, rotary_dim=4)),
    "falcon": ("AutoModelForCausalLM", dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4)),
    "opt": (
        "AutoModelForCausalLM",
        dict(
            hidden_size=32,
            ffn_dim=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            word_embed_proj_dim=32,
            max_position_embeddings=64,
        ),
    ),
    "mpt": ("AutoModelForCausalLM", dict(d_model=32, n_layers=2, n_heads=4, max_seq_len=64)),  # (its MLP 4 x d_model)
    "bloom": ("AutoModelForCausalLM", dict(hidden_size=32, n_layer=2, n_head=4)),
    "gpt2": ("AutoModelForCausalLM", dict(n_embd=32, n_layer=2, n_head=4, n_positions=64)),
    "openai-gpt": ("AutoModelForCausalLM", dict(n_embd=32, n_layer=2, n_head=4, n_positions=64)),
    "ctrl": ("AutoModelForCausalLM", dict(n_embd=32, dff=64, n_layer=2, n_head=4, n_positions=64)),
    "persimmon": (
        "AutoModelForCausalLM",
        dict(
            hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=64
        ),
    ),
    "biogpt": (
        "AutoModelForCausalLM",
        dict(
            hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=64
        ),
    ),
    "xglm": ("AutoModelForCausalLM", dict(d_model=32, ffn_dim=64, num_layers=2, attention_heads=4)),
    "bert": (
        "AutoModelForMaskedLM",
        dict(
            hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=64
        ),
    ),
    "bert-cls": (
        "AutoModelForSequenceClassification",
        dict(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            max_position_embeddings=64,
            num_labels=3,
        ),
    ),
    "roberta": (
        "AutoModelForMaskedLM",
        dict(
            hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=66
        ),
    ),
    "distilbert": (
        "AutoModelForMaskedLM",
        dict(dim=32, hidden_dim=64, n_layers=2, n_heads=4, max_position_embeddings=64),
    ),
    "deberta-v2": (
        "AutoModel",
        dict(
            hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=64
        ),
    ),
    "t5": ("AutoModelForSeq2SeqLM", dict(d_model=32, d_ff=64, d_kv=8, num_layers=2, num_heads=4)),
    "bart": (
        "AutoModelForSeq2SeqLM",
        dict(
            d_model=32,
            encoder_ffn_dim=64,
            decoder_ffn_dim=64,
            encoder_layers=2,
            decoder_layers=2,
            encoder_attention_heads=4,
            decoder_attention_heads=4,
            max_position_embeddings=64,
        ),
    ),
    "whisper": (
        "AutoModelForSpeechSeq2Seq",
        dict(
            d_model=32,
            encoder_ffn_dim=64,
            decoder_ffn_dim=64,
            encoder_layers=2,
            decoder_layers=2,
            encoder_attention_heads=4,
            decoder_attention_heads=4,
            num_mel_bins=16,
            max_source_positions=32,
            max_target_positions=32,
        ),
    ),
    "vit": (
        "AutoModel",
        dict(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            image_size=32,
            patch_size=8,
        ),
    ),
    "clip": (
        "AutoModel",
        dict(
            text_config=dict(
                hidden_size=32,
                intermediate_size=64,
                num_hidden_layers=2,
                num_attention_heads=4,
                vocab_size=128,
                max_position_embeddings=32,
            ),
            vision_config=dict(
                hidden_size=32,
                intermediate_size=64,
                num_hidden_layers=2,
                num_attention_heads=4,
                image_size=32,
                patch_size=8,
            ),
            projection_dim=16,
        ),
    ),
    "qwen3_moe": (  # q/k norms of head_dim: named as OLMoE's (of the projection's width), told apart by shape
        "AutoModelForCausalLM",
        dict(
            hidden_size=32,
            intermediate_size=64,
            moe_intermediate_size=16,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=8,
            num_experts=4,
            num_experts_per_tok=2,
        ),
    ),
    "qwen2_moe+dense": (  # mlp_only_layers: its first layer a dense MLP of intermediate_size, no router
        "AutoModelForCausalLM",
        {
            **SMALL_DECODER,
            "moe_intermediate_size": 16,
            "shared_expert_intermediate_size": 48,
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "mlp_only_layers": [0],
        },
    ),  # fmt: skip
    "qwen3_moe+sparse_step": (  # decoder_sparse_step=2: every second layer MoE (layer 1 of 2), the others dense
        "AutoModelForCausalLM",
        {
            **SMALL_DECODER,
            "moe_intermediate_size": 16,
            "head_dim": 8,
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "decoder_sparse_step": 2,
        },
    ),  # fmt: skip
    # DeepSeek-style MoE: a dense first layer (first_k_dense_replace), then MoE layers of a router (V3, GLM: beside a
    # score-correction buffer), 4 routed experts and 2 shared ones; DeepSeek's latent attention with low-rank queries
    "deepseek_v3": ("AutoModelForCausalLM", {**SMALL_DEEPSEEK, "num_hidden_layers": 3}),
    # V2-Lite's queries (q_lora_rank null: one q_proj) and MoE every second layer from the first (moe_layer_freq=2)
    "deepseek_v2": (
        "AutoModelForCausalLM",
        {**SMALL_DEEPSEEK, "num_hidden_layers": 4, "q_lora_rank": None, "moe_layer_freq": 2},
    ),
    # V3.2's sparse attention: a lightning indexer in every layer (4 heads of 8, a LayerNorm on its key)
    "deepseek_v32": (
        "AutoModelForCausalLM",
        {**SMALL_DEEPSEEK, "num_hidden_layers": 3, "index_n_heads": 4, "index_head_dim": 8, "index_topk": 4},
    ),
    "glm4_moe_lite": ("AutoModelForCausalLM", {**SMALL_DEEPSEEK, "num_hidden_layers": 3}),  # (GLM-4.7-Flash: V3's)
    # Gated DeltaNet layers and, every 4th, gated full attention: Qwen3-Next's fused in_proj_qkvz/in_proj_ba with MoE
    # layers, Qwen3.5's four input projections with a dense MLP, and with MoE layers
    "qwen3_next": (
        "AutoModelForCausalLM",
        {**SMALL_GATED_DELTA, "num_experts": 4, "shared_expert_intermediate_size": 32},
    ),
    "qwen3_5_text": ("AutoModelForCausalLM", SMALL_GATED_DELTA),
    "qwen3_5_moe_text": (
        "AutoModelForCausalLM",
        {**SMALL_GATED_DELTA, "num_experts": 4, "shared_expert_intermediate_size": 32},
    ),
    # LFM2: gated short convolutions in layers 0 and 2, attention in 1 and 3; its feed-forward 2/3 of intermediate_size
    # rounded up to 256 (block_auto_adjust_ff_dim): the config's 64 is a 256-wide w1
    "lfm2": (
        "AutoModelForCausalLM",
        {**SMALL_DECODER, "num_hidden_layers": 4, "layer_types": ["conv", "full_attention"] * 2},
    ),
    # LFM2-MoE: LFM2's layers (convolutions in 0 and 2, attention in 1 and 3), a SwiGLU feed-forward in the first
    # (num_dense_layers), a router and 4 experts of 16 in the others; without the router's expert_bias, a buffer no kind
    # rule names yet (tests/families/test_families.py: test_lfm2_moe_router_correction_is_matched_as_the_file_holds_it)
    "lfm2_moe": (
        "AutoModelForCausalLM",
        {
            **SMALL_DECODER,
            "num_hidden_layers": 4,
            "layer_types": ["conv", "full_attention"] * 2,
            "num_dense_layers": 1,
            "num_experts": 4,
            "moe_intermediate_size": 16,
            "use_expert_bias": False,
        },
    ),
    # gpt-oss as transformers writes it: fused experts with a bias per expert, attention sinks, a router with a bias
    "gpt_oss": (
        "AutoModelForCausalLM",
        {
            **SMALL_DECODER,
            "num_hidden_layers": 2,
            "head_dim": 8,
            "num_local_experts": 4,
            "num_experts_per_tok": 2,
            "layer_types": ["sliding_attention", "full_attention"],
        },
    ),  # fmt: skip
    # Nemotron-H: a Mamba-2 layer, a MoE layer (router, 4 experts, a shared expert), an attention layer, an MLP layer
    "nemotron_h": (
        "AutoModelForCausalLM",
        {
            **SMALL_DECODER,
            "head_dim": 8,
            "mamba_num_heads": 4,
            "mamba_head_dim": 8,
            "n_groups": 2,
            "ssm_state_size": 8,
            "layers_block_type": ["mamba", "moe", "attention", "mlp"],
            "n_routed_experts": 4,
            "moe_intermediate_size": 16,
            "moe_shared_expert_intermediate_size": 24,
            "num_experts_per_tok": 2,
        },
    ),  # fmt: skip
    # Granite-MoE-hybrid (Granite 4.0): a Mamba-2 layer and an attention layer, each with Granite MoE's experts and a
    # shared MLP; its dense kind (no experts) with the shared MLP alone
    "granitemoehybrid": (
        "AutoModelForCausalLM",
        {
            **SMALL_GRANITE_MOE,
            "shared_intermediate_size": 24,
            "layer_types": ["linear_attention", "full_attention"],
            **SMALL_GRANITE_MAMBA,
        },
    ),
    "granitemoehybrid+dense": (
        "AutoModelForCausalLM",
        {
            **SMALL_DECODER,
            "num_hidden_layers": 3,
            "num_local_experts": 0,
            "shared_intermediate_size": 24,
            "layer_types": ["linear_attention", "full_attention", "linear_attention"],
            **SMALL_GRANITE_MAMBA,
        },
    ),
    # Nemotron 3 Super's kind: the experts in a latent space (moe_latent_size), projected into and out of it
    "nemotron_h+latent": (
        "AutoModelForCausalLM",
        {
            **SMALL_DECODER,
            "head_dim": 8,
            "mamba_num_heads": 4,
            "mamba_head_dim": 8,
            "n_groups": 2,
            "ssm_state_size": 8,
            "layers_block_type": ["mamba", "moe", "attention", "moe"],
            "n_routed_experts": 4,
            "moe_intermediate_size": 16,
            "moe_shared_expert_intermediate_size": 24,
            "num_experts_per_tok": 2,
            "moe_latent_size": 16,
        },
    ),  # fmt: skip
    # MiniMax-M2: Mixtral's layers with q/k norms over the whole q and k projections (not a head's)
    "minimax_m2": (
        "AutoModelForCausalLM",
        {**SMALL_DECODER, "head_dim": 8, "num_local_experts": 4, "num_experts_per_tok": 2},
    ),
    # Jamba: Mamba layers 0, 1 and 3, attention in layer 2 (attn_layer_period 4, offset 2); a gated MLP in layers 0
    # and 2, a router and 4 experts in layers 1 and 3
    "jamba": (
        "AutoModelForCausalLM",
        {**SMALL_DECODER, "num_hidden_layers": 4, "num_experts": 4, "attn_layer_period": 4, "attn_layer_offset": 2},
    ),
    # ... its attention and experts from layer 0 (offsets of 0: a value, not unset): attention in layer 0, Mamba in 1 to
    # 3; experts in layers 0 and 2, a gated MLP in 1 and 3
    "jamba+offsets0": (
        "AutoModelForCausalLM",
        {
            **SMALL_DECODER,
            "num_hidden_layers": 4,
            "num_experts": 4,
            "attn_layer_period": 4,
            "attn_layer_offset": 0,
            "expert_layer_offset": 0,
        },
    ),
    # Falcon-H1: Mamba-2 (4 heads of 8, 2 groups) beside attention in every layer; the gated norm (mamba_rms_norm), and
    # without it
    "falcon_h1": (
        "AutoModelForCausalLM",
        {
            **SMALL_DECODER,
            "mamba_d_ssm": 32,
            "mamba_n_heads": 4,
            "mamba_n_groups": 2,
            "mamba_d_state": 8,
            "mamba_rms_norm": True,
        },
    ),
    "falcon_h1+no_norm": (
        "AutoModelForCausalLM",
        {**SMALL_DECODER, "mamba_d_ssm": 32, "mamba_n_heads": 4, "mamba_d_state": 8, "head_dim": 16},
    ),
    # MiniMax-Text-01: Mixtral's layers, full attention in layers 0 and 2, lightning attention in 1 and 3 (its decays,
    # buffers, over blocks of 16)
    "minimax": (
        "AutoModelForCausalLM",
        {**SMALL_DECODER, "num_hidden_layers": 4, "head_dim": 8, "num_local_experts": 4, "block_size": 16},
    ),
    "exaone": ("AutoModelForCausalLM", {**SMALL_DECODER, "num_layers": 2}),  # Llama's layers under GPT-2-like names
    # GLM and GLM-4: Llama-style attention with q/k/v biases (none on o_proj), a fused gate_up_proj; GLM-4 norms the
    # attention's and the MLP's outputs too (a head of 8 over d_model 32; its default pad token is past a tiny vocab)
    "glm": ("AutoModelForCausalLM", {**SMALL_DECODER, "head_dim": 8, "pad_token_id": 0}),
    "glm4": ("AutoModelForCausalLM", {**SMALL_DECODER, "head_dim": 8, "pad_token_id": 0}),
    "glm4_moe": (  # Llama-style attention with q/k/v biases and per-head q/k norms, DeepSeek's MoE layers
        "AutoModelForCausalLM",
        {**SMALL_DEEPSEEK, "num_hidden_layers": 3, "attention_bias": True, "use_qk_norm": True},
    ),
    "olmoe": (
        "AutoModelForCausalLM",
        dict(
            hidden_size=32,
            intermediate_size=16,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            num_experts=4,
            num_experts_per_tok=2,
        ),
    ),
    "granitemoe": ("AutoModelForCausalLM", SMALL_GRANITE_MOE),
    "olmo2": (
        "AutoModelForCausalLM",
        SMALL_DECODER,
    ),
    "olmo3": (
        "AutoModelForCausalLM",
        SMALL_DECODER,
    ),
    "exaone4": (
        "AutoModelForCausalLM",
        SMALL_DECODER,
    ),
    "gpt_bigcode": (  # multi_query (the default): one key/value head
        "AutoModelForCausalLM",
        dict(n_embd=32, n_layer=2, n_head=4, n_positions=64),
    ),
    "gpt_bigcode+mha": (
        "AutoModelForCausalLM",
        dict(n_embd=32, n_layer=2, n_head=4, n_positions=64, multi_query=False),
    ),
    "starcoder2": (
        "AutoModelForCausalLM",
        SMALL_DECODER,
    ),
    "starcoder2+no_bias": (  # use_bias=False: no projection has a bias, the LayerNorms keep theirs
        "AutoModelForCausalLM",
        {**SMALL_DECODER, "use_bias": False},
    ),
    "phi": (
        "AutoModelForCausalLM",
        SMALL_DECODER,
    ),
    "phi+qk_norm": (  # qk_layernorm: a LayerNorm over each head's queries and keys
        "AutoModelForCausalLM",
        {**SMALL_DECODER, "qk_layernorm": True},
    ),
    "olmo": (
        "AutoModelForCausalLM",
        SMALL_DECODER,
    ),
    "arcee": (
        "AutoModelForCausalLM",
        SMALL_DECODER,
    ),
    "jais2": (
        "AutoModelForCausalLM",
        SMALL_DECODER,
    ),
    "apertus": (
        "AutoModelForCausalLM",
        SMALL_DECODER,
    ),
    "minicpm3": (  # multi-head latent attention: q through a rank-16 latent, k and v through one of rank 8
        "AutoModelForCausalLM",
        {
            **SMALL_DECODER,
            "q_lora_rank": 16,
            "kv_lora_rank": 8,
            "qk_nope_head_dim": 8,
            "qk_rope_head_dim": 4,
            "v_head_dim": 8,
        },  # fmt: skip
    ),
    "youtu": (  # Youtu-LLM: MiniCPM3's modules (a tied head)
        "AutoModelForCausalLM",
        {
            **SMALL_DECODER,
            "q_lora_rank": 16,
            "kv_lora_rank": 8,
            "qk_nope_head_dim": 8,
            "qk_rope_head_dim": 4,
            "v_head_dim": 8,
        },
    ),  # fmt: skip
    "cohere": (
        "AutoModelForCausalLM",
        SMALL_DECODER,
    ),
    "cohere+qk_norm": (  # use_qk_norm: a norm of (heads, head_dim) over the queries, (kv_heads, head_dim) the keys
        "AutoModelForCausalLM",
        {**SMALL_DECODER, "use_qk_norm": True},
    ),
    "cohere2": (
        "AutoModelForCausalLM",
        SMALL_DECODER,
    ),
    # Cohere2-MoE: a dense first layer (mlp_layer_types) of prefix_dense_intermediate_size, then a MoE layer of 4
    # experts of intermediate_size and 2 shared ones (one gated MLP of 2 x intermediate_size)
    "cohere2_moe": (
        "AutoModelForCausalLM",
        {
            **SMALL_DECODER,
            "head_dim": 8,
            "intermediate_size": 16,
            "prefix_dense_intermediate_size": 48,
            "mlp_layer_types": ["dense", "sparse"],
            "num_experts": 4,
            "num_shared_experts": 2,
        },
    ),
    "granitemoeshared": (
        "AutoModelForCausalLM",
        {**SMALL_GRANITE_MOE, "shared_intermediate_size": 24},
    ),
    "llama4_text": (
        "AutoModelForCausalLM",
        dict(
            hidden_size=32,
            intermediate_size=16,
            intermediate_size_mlp=48,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=8,
            num_local_experts=4,
        ),
    ),
    "mamba": ("AutoModelForCausalLM", dict(hidden_size=32, num_hidden_layers=2, state_size=8, conv_kernel=4)),
    "falcon_mamba": ("AutoModelForCausalLM", dict(hidden_size=32, num_hidden_layers=2, state_size=8)),
    "mamba2": (
        "AutoModelForCausalLM",
        dict(hidden_size=32, num_hidden_layers=2, state_size=8, num_heads=8, head_dim=8, n_groups=2, expand=2),
    ),
    # HunYuan v1: Llama's layers with q/k norms of its own names; its MoE a router gate.wg, experts, a shared MLP
    "hunyuan_v1_dense": ("AutoModelForCausalLM", {**SMALL_DECODER, "head_dim": 8}),
    "hunyuan_v1_moe": ("AutoModelForCausalLM", {**SMALL_DECODER, "head_dim": 8, "num_experts": 4, "moe_topk": 2}),
    "hunyuan_v1_moe+1": ("AutoModelForCausalLM", {**SMALL_DECODER, "head_dim": 8}),  # (one expert: its default)
    # Granite SWA, dense and MoE: a learned sink per attention head
    "granite_swa": ("AutoModelForCausalLM", SMALL_DECODER),
    "granitemoe_swa": ("AutoModelForCausalLM", {**SMALL_GRANITE_MOE, "shared_intermediate_size": 24}),
    # EXAONE-MoE (GLM-4.5's modules) and HunYuan v3 (its checkpoints' names for the router and shared experts): a dense
    # first layer, then MoE layers with shared experts
    "exaone_moe": (
        "AutoModelForCausalLM",
        {**SMALL_DECODER, "head_dim": 8, "moe_intermediate_size": 16, "num_experts": 4, "num_experts_per_tok": 2},
    ),
    "hy_v3": (
        "AutoModelForCausalLM",
        {**SMALL_DECODER, "head_dim": 8, "moe_intermediate_size": 16, "num_experts": 4, "num_experts_per_tok": 2},
    ),
    # model types whose files an existing family gives exactly (Llama's, Apertus', Qwen-MoE's, Mixtral's)
    **{
        t: ("AutoModelForCausalLM", SMALL_DECODER)
        for t in ("cwm", "ernie4_5", "internlm3", "iquestcoder", "ministral3", "seed_oss", "apertus1p5_text")
    },
    # (Helium's o_proj is d_model x d_model whatever its head_dim says (128 by default): its checkpoints' heads x
    # head_dim are d_model, as here)
    "helium": ("AutoModelForCausalLM", {**SMALL_DECODER, "head_dim": 8}),
    "mellum": ("AutoModelForCausalLM", {**SMALL_DECODER, "moe_intermediate_size": 16, "num_experts": 4}),
    "phimoe": ("AutoModelForCausalLM", {**SMALL_DECODER, "num_local_experts": 4}),
    # Laguna: its query heads per layer (8 in layer 1, 4 in the others), an output gate per head, a dense first layer
    "laguna": (
        "AutoModelForCausalLM",
        {
            **SMALL_DECODER,
            "num_hidden_layers": 3,
            "num_attention_heads_per_layer": [4, 8, 4],
            "num_experts": 4,
            "moe_intermediate_size": 16,
            "shared_expert_intermediate_size": 24,
            "num_experts_per_tok": 2,
        },
    ),
    # Qwen3.5's vision-language checkpoints: the language model under model.language_model., the vision tower beside it
    "qwen3_5": (
        "AutoModelForImageTextToText",
        {"text_config": {**SMALL_GATED_DELTA, "vocab_size": 128}, "vision_config": SMALL_QWEN_VISION},
    ),
    "qwen3_5_moe": (
        "AutoModelForImageTextToText",
        {
            "text_config": {
                **SMALL_GATED_DELTA,
                "vocab_size": 128,
                "num_experts": 4,
                "shared_expert_intermediate_size": 16,
            },
            "vision_config": SMALL_QWEN_VISION,
        },
    ),
    # Qwen3-VL: a Qwen3 language model, the same vision tower with a deepstack merger per `deepstack_visual_indexes`
    "qwen3_vl": (
        "AutoModelForImageTextToText",
        {
            "text_config": {**SMALL_DECODER, "head_dim": 8, "vocab_size": 128},
            "vision_config": {**SMALL_QWEN_VISION, "deepstack_visual_indexes": [0, 1]},
        },
    ),
    "qwen3_vl_moe": (  # (its experts fused as the hub's checkpoints hold them; 2 x 8 wide, not d_model's 32)
        "AutoModelForImageTextToText",
        {
            "text_config": {
                **SMALL_DECODER,
                "head_dim": 8,
                "vocab_size": 128,
                "moe_intermediate_size": 8,
                "num_experts": 4,
                "num_experts_per_tok": 2,
            },
            "vision_config": {**SMALL_QWEN_VISION, "deepstack_visual_indexes": [0, 1]},
        },
    ),  # fmt: skip
    # Qwen2.5-VL: a Qwen2 language model (its checkpoints: under model., the tower under visual.), a tower of RMSNorms
    "qwen2_5_vl": (
        "AutoModelForImageTextToText",
        {
            "text_config": {**SMALL_DECODER, "vocab_size": 128},
            "vision_config": {**SMALL_QWEN_VISION, "fullatt_block_indexes": [1], "window_size": 16},
        },
    ),
    # Qwen2-VL: a Qwen2 language model (its checkpoints: under model., the tower under visual.), a tower of LayerNorms
    # and a two-layer MLP embed_dim x mlp_ratio wide
    "qwen2_vl": (
        "AutoModelForImageTextToText",
        {
            "text_config": {**SMALL_DECODER, "vocab_size": 128},
            "vision_config": {"depth": 2, "embed_dim": 32, "hidden_size": 32, "mlp_ratio": 2, "num_heads": 4},
        },
    ),
    # model types of no family before: VaultGemma (a norm before attention and before the MLP only), nanochat (no norm
    # weights, fc1/fc2), JetMoE (a mixture of attention heads and of MLP experts), Sarvam-MoE (GLM-4.5's layers under
    # its checkpoints' names, its q/k/v fused), RecurrentGemma (recurrent and attention layers, 4 for both kinds), RWKV
    # and xLSTM
    "vaultgemma": ("AutoModelForCausalLM", {**SMALL_DECODER, "head_dim": 8}),
    "nanochat": ("AutoModelForCausalLM", SMALL_DECODER),
    "jetmoe": ("AutoModelForCausalLM", {**SMALL_DECODER, "kv_channels": 8, "num_local_experts": 4}),
    "sarvam_moe": (
        "AutoModelForCausalLM",
        {**SMALL_DECODER, "head_dim": 8, "moe_intermediate_size": 16, "n_routed_experts": 4, "num_experts_per_tok": 2},
    ),
    "recurrent_gemma": (
        "AutoModelForCausalLM",
        {**SMALL_DECODER, "num_hidden_layers": 4, "lru_width": 48, "attention_window_size": 16},
    ),
    # (a model of one kind of layer: 2 layers of RecurrentGemma's default cycle are recurrent, of DeepSeek-V4's HCA)
    "recurrent_gemma+recurrent": ("AutoModelForCausalLM", SMALL_DECODER),
    "rwkv": ("AutoModelForCausalLM", {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2}),
    "xlstm": ("AutoModelForCausalLM", {"hidden_size": 32, "num_hidden_layers": 2, "num_heads": 4, "use_bias": True}),
    # DeepSeek-V4: a layer of each attention kind (sliding, CSA with its indexer, HCA), a hash-routed first layer
    "deepseek_v4": (
        "AutoModelForCausalLM",
        {
            **SMALL_DECODER,
            "num_hidden_layers": 4,
            "head_dim": 8,
            "q_lora_rank": 16,
            "o_lora_rank": 8,
            "o_groups": 2,
            "moe_intermediate_size": 16,
            "n_routed_experts": 4,
            "num_experts_per_tok": 2,
            "index_n_heads": 2,
            "index_head_dim": 8,
            "mlp_layer_types": ["hash_moe", "moe", "moe", "moe"],
            "layer_types": [
                "sliding_attention",
                "compressed_sparse_attention",
                "heavily_compressed_attention",
                "compressed_sparse_attention",
            ],
        },
    ),
    "deepseek_v4+hca": (
        "AutoModelForCausalLM",
        {**SMALL_DECODER, "head_dim": 8, "q_lora_rank": 16, "o_lora_rank": 8, "o_groups": 2, "n_routed_experts": 4},
    ),
    "resnet": ("AutoModel", dict(embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], layer_type="basic")),
    "convnext": ("AutoModel", dict(hidden_sizes=[16, 32], depths=[1, 1], num_stages=2)),
}
NO_VOCAB = (
    "resnet",
    "convnext",
    "vit",
    "clip",
    "whisper",
    "qwen3_5",
    "qwen3_5_moe",
    "qwen3_vl",
)  # (or in a text_config)


def model_type(case: str) -> str:
    return case.split("-cls")[0].split("+")[0]  # ('bert-cls', 'phi+qk_norm': a variant of the model type)


def build(case: str, folder: Path) -> int:
    """Write the case's model with save_pretrained into `folder`; its num_parameters()."""
    import torch
    import transformers

    torch.manual_seed(0)
    auto, words = ZOO[case]
    words = dict(words)
    if model_type(case) not in NO_VOCAB:
        words.setdefault("vocab_size", 128)
    config = transformers.AutoConfig.for_model(model_type(case), **words)
    model = getattr(transformers, auto).from_config(config)
    model.save_pretrained(folder)
    return int(model.num_parameters())
