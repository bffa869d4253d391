"""Families against transformers' own files and counts: tiny models of every family, with and without config.json."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from inspector import load
from inspector.records import Expectation
from inspector.render import report_dict
from inspector.report import inspect
from tests.families.zoo import SMALL_DEEPSEEK, ZOO, build

pytest.importorskip("transformers", reason="transformers builds the tiny models")

FAMILY = {
    **dict.fromkeys(("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2"), "llama"),
    **dict.fromkeys(("cwm", "ernie4_5", "helium", "internlm3", "iquestcoder", "ministral3", "seed_oss"), "llama"),
    "apertus1p5_text": "apertus",
    "mellum": "qwen2_moe",
    "phimoe": "mixtral",
    "youtu": "minicpm3",
    **dict.fromkeys(("bert", "bert-cls", "roberta"), "bert"),
    **dict.fromkeys(("mamba", "falcon_mamba"), "mamba"),
    **dict.fromkeys(("granitemoe", "granitemoeshared"), "granitemoe"),
    **dict.fromkeys(("qwen3_moe", "qwen2_moe+dense", "qwen3_moe+sparse_step"), "qwen2_moe"),
    "llama4_text": "llama4",
    "qwen3_5_text": "qwen3_5",
    "qwen3_5_moe_text": "qwen3_next",
    **dict.fromkeys(("deepseek_v3", "deepseek_v2", "deepseek_v32", "glm4_moe_lite"), "deepseek"),
    "olmo3": "olmo2",
    "starcoder2+no_bias": "starcoder2",
    "phi+qk_norm": "phi",
    "falcon_h1+no_norm": "falcon_h1",
    "jamba+offsets0": "jamba",
    **dict.fromkeys(("cohere+qk_norm", "cohere2"), "cohere"),
    "gpt_bigcode+mha": "gpt_bigcode",
    "hunyuan_v1_moe+1": "hunyuan_v1_moe",
    "nemotron_h+latent": "nemotron_h",
    "granitemoehybrid+dense": "granitemoehybrid",
    "exaone_moe": "glm4_moe",
    "qwen3_5": "qwen3_5-vl",
    "qwen3_5_moe": "qwen3_next-vl",
    "jais2": "arcee",
    "recurrent_gemma+recurrent": "recurrent_gemma",
    "deepseek_v4+hca": "deepseek_v4",
    **dict.fromkeys(("resnet", "convnext"), "sequential"),  # no family table: one layer per module
}

# the router's score correction of these model types' checkpoints, a buffer by the kind rule its config's model type
# selects (`hf.router_bias_saved`): without the config, a parameter of the file
CONFIG_BUFFERS = {"hy_v3": ".expert_bias", "sarvam_moe": ".expert_bias", "deepseek_v4": ".gate.bias"}
# the router's score correction of these model types, a parameter by the kind rule its config's model type selects: a
# buffer of the file without it
CONFIG_PARAMETERS = {"laguna": ".e_score_correction_bias"}
# `Family.stated_only`
STATED_ONLY = {"olmo", "cohere", "cohere+qk_norm", "cohere2", "minicpm3", "youtu", "cohere2_moe"}


@pytest.fixture(scope="session")
def zoo(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    built: dict[str, tuple[Path, int]] = {}

    def get(case: str) -> tuple[Path, int]:
        if case not in built:
            folder = tmp_path_factory.mktemp(case)
            built[case] = (folder, build(case, folder))
        return built[case]

    return get


@pytest.mark.parametrize("case", list(ZOO))
def test_expectation_with_config_equals_transformers_count(zoo, case: str) -> None:  # type: ignore[no-untyped-def]
    folder, n = zoo(case)
    report = inspect(folder / "model.safetensors")
    exp = report.expectation
    assert report.checkpoint.n_parameters == n  # the file's count is what num_parameters() prints
    assert exp is not None and exp.architecture == FAMILY.get(case, case.replace("-cls", ""))
    if exp.architecture != "sequential":
        model_type = json.loads((folder / "config.json").read_text())["model_type"]
        assert exp.source == "config" and exp.hyperparameters["model_type"] == model_type
    assert exp.total == n and exp.matches, [c for c in exp.layers if c.status not in ("ok", "tied")]
    assert "COUNT_MISMATCH" not in {f.code for f in report.findings}
    if exp.architecture != "sequential":  # the family table names every tensor's layer (a row) and role
        rows = {c.layer for c in exp.layers}
        params = [(t, r) for t, r in zip(report.checkpoint.tensors, report.roles, strict=True) if t.kind == "parameter"]
        assert {r.layer for _, r in params} <= rows
        assert all(r.role != "unmatched" for _, r in params)


@pytest.mark.parametrize("case", list(ZOO))
def test_expectation_without_config_from_names_and_shapes(zoo, case: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder, n = zoo(case)
    shutil.copy(folder / "model.safetensors", tmp_path / "model.safetensors")
    report = inspect(tmp_path / "model.safetensors")
    exp = report.expectation
    assert exp is not None and exp.source == "inferred"
    # (a family whose modules other models hold too is found only from a config naming it: one layer per module here)
    named = "sequential" if case in STATED_ONLY else FAMILY.get(case, case.replace("-cls", ""))
    assert exp.architecture == named
    # (a buffer only the config's model type makes one is the file's own parameter without it, and the family's part)
    read_as_parameter = sum(
        t.n_elements
        for t in report.checkpoint.tensors
        if case in CONFIG_BUFFERS and t.name.endswith(CONFIG_BUFFERS[case])
    )
    read_as_buffer = sum(
        t.n_elements
        for t in report.checkpoint.tensors
        if case in CONFIG_PARAMETERS and t.name.endswith(CONFIG_PARAMETERS[case])
    )
    assert exp.total == n + read_as_parameter - read_as_buffer and exp.matches, [
        c for c in exp.layers if c.status not in ("ok", "tied")
    ]


def _with_config(zoo, case: str, tmp_path: Path, **changes: object) -> Path:  # type: ignore[no-untyped-def]
    folder, _ = zoo(case)
    shutil.copy(folder / "model.safetensors", tmp_path / "model.safetensors")
    config = json.loads((folder / "config.json").read_text()) | changes
    (tmp_path / "config.json").write_text(json.dumps(config))
    return tmp_path / "model.safetensors"


def test_a_layer_the_config_states_but_the_file_lacks_is_reported(zoo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    report = inspect(_with_config(zoo, "llama", tmp_path, num_hidden_layers=3))
    exp = report.expectation
    assert exp is not None and not exp.matches and exp.hyperparameters["layers"] == 3
    missing = [c for c in exp.layers if c.status == "missing"]
    assert [c.layer for c in missing] == ["model.layers.2"]
    assert missing[0].expected == 9_280 and "model.layers.2.self_attn.q_proj (Dense 1,024) is not in the file" in (
        missing[0].explanation
    )
    assert "COUNT_MISMATCH" in {f.code for f in report.findings}


def test_a_feed_forward_of_another_size_is_explained(zoo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    exp = inspect(_with_config(zoo, "qwen2", tmp_path, intermediate_size=128)).expectation
    assert exp is not None and not exp.matches
    rows = [c for c in exp.layers if c.status == "mismatch"]
    assert [c.layer for c in rows] == ["model.layers.0", "model.layers.1"]
    assert "model.layers.0.mlp.gate_proj: the formula gives Dense 4,096, the file holds 2,048 (weight (64, 32))" in (
        rows[0].explanation
    )


def _reported_against_edited_config(  # type: ignore[no-untyped-def]
    zoo, case: str, changes: dict[str, Any], tmp_path: Path
) -> Expectation:
    """The expectation of a zoo model's file beside its config edited by `changes`: the config's, the count of the model
    transformers builds from the edited config, not the file's; reported with a COUNT_MISMATCH warning."""
    import transformers

    from tests.families.zoo import model_type

    _, n = zoo(case)
    report = inspect(_with_config(zoo, case, tmp_path, **changes))
    exp = report.expectation
    words = {**ZOO[case][1], "vocab_size": 128, **changes}
    config = transformers.AutoConfig.for_model(model_type(case), **words)
    described = transformers.AutoModelForCausalLM.from_config(config).num_parameters()
    assert report.checkpoint.n_parameters == n != described
    assert exp is not None and exp.source == "config" and exp.total == described and not exp.matches
    assert "COUNT_MISMATCH" in {f.code for f in report.findings if f.severity.value == "warning"}
    return exp


@pytest.mark.parametrize(
    ("case", "changes", "mismatch"),
    [
        ("nemotron_h", {"ssm_state_size": 16}, "backbone.layers.0.mixer.conv1d: the formula gives Conv 480, the file "
         "holds 320 (bias (64,), weight (64, 1, 4))"),
        ("nemotron_h", {"mamba_num_heads": 8}, "backbone.layers.0.mixer.in_proj: the formula gives Dense 5,376, the "
         "file holds 3,200 (weight (100, 32))"),
        ("nemotron_h", {"mamba_head_dim": 4}, "backbone.layers.0.mixer.norm: the formula gives RMSNorm 16, the file "
         "holds 32"),
        ("mamba2", {"n_groups": 1}, "backbone.layers.0.mixer.in_proj: the formula gives Dense 4,864, the file holds "
         "5,376 (weight (168, 32))"),
        # (its inner width is expand x d_model, Mamba2Mixer's; heads x head_dim must equal it, Mamba2Config checks)
        ("mamba2", {"expand": 4, "head_dim": 16}, "backbone.layers.0.mixer.out_proj: the formula gives Dense 4,096, "
         "the file holds 2,048 (weight (32, 64))"),
        ("falcon_h1", {"mamba_d_state": 16}, "model.layers.0.mamba.conv1d: the formula gives Conv 480, the file holds "
         "320 (bias (64,), weight (64, 1, 4))"),
    ],
)  # fmt: skip
def test_mamba2_widths_a_config_states_are_its_so_a_file_of_others_is_reported(  # type: ignore[no-untyped-def]
    zoo, case: str, changes: dict[str, int], mismatch: str, tmp_path: Path
) -> None:
    # A Mamba-2 mixer's state and groups show in no tensor alone, only in its convolution's and in_proj's widths (and
    # Nemotron-H's inner width is its heads x a head's): where a config states them those widths are its, as
    # transformers builds them, not read off the file. A file whose widths are not its config's (written with one
    # config, the config then edited) is reported; the formula is the count of the model the edited config describes
    folder, _ = zoo(case)
    report = inspect(folder / "model.safetensors")  # (as written: its config's widths are the file's)
    assert report.expectation is not None and report.expectation.matches
    assert "COUNT_MISMATCH" not in {f.code for f in report.findings}
    exp = _reported_against_edited_config(zoo, case, changes, tmp_path)
    assert any(mismatch in c.explanation for c in exp.layers if c.status == "mismatch"), exp.layers


@pytest.mark.parametrize(
    ("case", "types"),
    [("exaone_moe", ["sparse", "sparse"]), ("hy_v3", ["dense", "dense"]), ("laguna", ["dense", "dense", "sparse"])],
)
def test_the_mlp_layer_types_a_config_states_are_its_so_a_file_of_others_is_reported(  # type: ignore[no-untyped-def]
    zoo, case: str, types: list[str], tmp_path: Path
) -> None:
    # Which layers hold experts is the config's `mlp_layer_types` where it states them (they were read off the file, so
    # a file written with other layers than its config states went unreported); the formula is the count of the model
    # the edited config describes
    import transformers

    folder, n = zoo(case)
    report = inspect(_with_config(zoo, case, tmp_path, mlp_layer_types=types))
    exp = report.expectation
    words = {**ZOO[case][1], "vocab_size": 128, "mlp_layer_types": types}
    described = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(case, **words))
    assert report.checkpoint.n_parameters == n != described.num_parameters()
    assert exp is not None and exp.source == "config" and not exp.matches
    assert exp.total == described.num_parameters()
    assert "COUNT_MISMATCH" in {f.code for f in report.findings if f.severity.value == "warning"}


def test_grouped_query_attention_read_from_the_kv_shapes(zoo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder, _ = zoo("mistral")
    shutil.copy(folder / "model.safetensors", tmp_path / "model.safetensors")
    exp = inspect(tmp_path / "model.safetensors").expectation
    assert exp is not None and exp.hyperparameters["q_dim"] == 32 and exp.hyperparameters["kv_dim"] == 16
    assert any("grouped-query attention" in note for note in exp.notes)


def test_untied_head_the_config_says_is_tied_is_not_silently_dropped(zoo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Gemma ties its LM head: the file has no lm_head. A config that says the head is not tied expects one.
    exp = inspect(_with_config(zoo, "gemma", tmp_path, tie_word_embeddings=False)).expectation
    assert exp is not None and not exp.matches
    assert [(c.layer, c.status) for c in exp.layers if c.status != "ok"] == [("lm_head", "missing")]


@pytest.mark.parametrize(
    ("spec", "count"),
    [
        # published sizes: Llama-2-7B and Llama-3-8B (model.num_parameters() of the real configs)
        ("llama vocab=32000 d_model=4096 layers=32 heads=32 feedforward=11008", 6_738_415_616),
        ("llama vocab=128256 d_model=4096 layers=32 heads=32 kv_heads=8 feedforward=14336", 8_030_261_248),
        ("gpt2 vocab=50257 positions=1024 d_model=768 layers=12 heads=12 tied=true", 124_439_808),
        ("bert vocab=30522 positions=512 d_model=768 layers=12 heads=12 pooler=true", 109_482_240),
        # openai/clip-vit-base-patch32
        (
            "clip vocab=49408 t_d=512 t_pos=77 t_ff=2048 layers=12 v_d=768 v_ff=3072 vision_layers=12 patch=32 "
            "v_pos=50 proj=512",
            151_277_313,
        ),
        # num_parameters() of MambaForCausalLM(MambaConfig(hidden_size=768, num_hidden_layers=24, vocab_size=50280))
        # (mamba-130m's sizes) and of Mamba2ForCausalLM at mamba2-130m's (24 heads of 64, one group, untied)
        ("mamba vocab=50280 d_model=768 layers=24", 129_135_360),
        # Llama4ForCausalLM(Llama4TextConfig()): Llama 4 Scout's sizes, every layer a MoE layer
        (
            "llama4 vocab=202048 d_model=5120 layers=48 heads=40 kv_heads=8 head_dim=128 experts=16 expert_ff=8192",
            107_769_861_120,
        ),
        ("mamba2 vocab=50288 d_model=768 layers=24 heads=24 inner=1536 conv_dim=1792 in_dim=3352", 167_610_816),
        # num_parameters() on the meta device of PhiForCausalLM at Phi-2's sizes, Starcoder2ForCausalLM at
        # StarCoder2-3B's (tied, biases) and Olmo2ForCausalLM at OLMo-2-7B's
        ("phi vocab=51200 d_model=2560 layers=32 heads=32 feedforward=10240", 2_779_683_840),
        ("starcoder2 vocab=49152 d_model=3072 layers=30 heads=24 kv_heads=2 feedforward=12288", 3_030_371_328),
        ("olmo2 vocab=100352 d_model=4096 layers=32 heads=32 feedforward=11008", 7_298_617_344),
        # CohereForCausalLM at Command R's sizes (tied, no q/k norms) and Cohere2ForCausalLM at Command R7B's
        ("cohere vocab=256000 d_model=8192 layers=40 heads=64 feedforward=22528", 34_980_831_232),
        ("cohere vocab=256000 d_model=4096 layers=32 heads=32 kv_heads=8 feedforward=14336", 8_028_033_024),
        # OlmoForCausalLM at OLMo-7B's sizes and OLMo-1B's (tied): no norm weights at all
        ("olmo vocab=50304 d_model=4096 layers=32 heads=32 feedforward=11008", 6_888_095_744),
        ("olmo vocab=50304 d_model=2048 layers=16 heads=16 feedforward=8192 tied=true", 1_176_764_416),
        # ApertusForCausalLM(ApertusConfig()): q/k norms, two xIELU scalars a layer
        ("apertus vocab=131072 d_model=4096 layers=32 heads=32 feedforward=14336 qk_norm=true", 6_979_596_352),
        # MiniCPM3ForCausalLM(MiniCPM3Config()): MiniCPM3-4B's sizes, multi-head latent attention
        (
            "minicpm3 vocab=73448 d_model=2560 layers=62 heads=40 feedforward=6400 q_lora=768 kv_lora=256 nope=64 "
            "rope=32 v_head=64 tied=true",
            4_073_875_968,
        ),
        # DeepseekV3ForCausalLM(DeepseekV3Config()): DeepSeek-V3's sizes (671B: 3 dense layers, 58 MoE layers of 256
        # experts and a shared one); DeepseekV2ForCausalLM(DeepseekV2Config()) (MoE in every layer, 2 shared experts)
        (
            "deepseek vocab=129280 d_model=7168 layers=61 heads=128 feedforward=18432 experts=256 expert_ff=2048 "
            "n_shared=1 first_dense=3 q_lora=1536 kv_lora=512 nope=128 rope=64 v_head=128",
            671_026_404_352,
        ),
        (
            "deepseek vocab=102400 d_model=4096 layers=32 heads=32 feedforward=11008 experts=64 expert_ff=1407 "
            "n_shared=2 q_lora=1536 kv_lora=512 nope=128 rope=64 v_head=128",
            38_612_307_968,
        ),
        # ... and at DeepSeek-V2-Lite's (q_lora_rank null: queries by one q_proj; no q_lora word says so)
        (
            "deepseek vocab=102400 d_model=2048 layers=27 heads=16 feedforward=10944 experts=64 expert_ff=1408 "
            "n_shared=2 first_dense=1 kv_lora=512 nope=128 rope=64 v_head=128",
            15_706_484_224,
        ),
        # DeepseekV32ForCausalLM(DeepseekV32Config()): V3's sizes and the sparse-attention indexer (64 heads of 128);
        # GlmMoeDsaForCausalLM(GlmMoeDsaConfig()) (GLM-5's: the same layers, other sizes); and
        # Glm4MoeLiteForCausalLM(Glm4MoeLiteConfig()) (GLM-4.7-Flash: 20 heads, which do not divide d_model)
        (
            "deepseek vocab=129280 d_model=7168 layers=61 heads=128 feedforward=18432 experts=256 expert_ff=2048 "
            "n_shared=1 first_dense=3 q_lora=1536 kv_lora=512 nope=128 rope=64 v_head=128 index_heads=64 "
            "index_dim=128",
            671_877_929_216,
        ),
        (
            "deepseek vocab=154880 d_model=6144 layers=78 heads=64 feedforward=12288 experts=256 expert_ff=2048 "
            "n_shared=1 first_dense=3 q_lora=2048 kv_lora=512 nope=192 rope=64 v_head=256 index_heads=32 "
            "index_dim=128",
            743_911_199_232,
        ),
        (
            "deepseek vocab=154880 d_model=2048 layers=47 heads=20 feedforward=10240 experts=64 expert_ff=1536 "
            "n_shared=1 first_dense=1 q_lora=768 kv_lora=512 nope=192 rope=64 v_head=256",
            29_943_390_976,
        ),
        # Qwen2MoeForCausalLM(Qwen2MoeConfig()) (Qwen1.5-MoE-A2.7B: q/k/v biases, none on o_proj) and
        # Qwen3MoeForCausalLM(Qwen3MoeConfig(attention_bias=True)) (a bias on all four projections)
        (
            "qwen2_moe vocab=151936 d_model=2048 layers=24 heads=16 feedforward=5632 experts=60 expert_ff=1408 "
            "shared_ff=5632 shared_expert=true",
            14_315_784_192,
        ),
        (
            "qwen2_moe vocab=151936 d_model=2048 layers=24 heads=32 kv_heads=4 experts=128 expert_ff=768 "
            "attention_bias=true o_bias=true qk_norm=true",
            15_350_842_368,
        ),
        # GlmForCausalLM(GlmConfig()) and Glm4ForCausalLM(Glm4Config()) (GLM-4-9B-0414: the same layers normed after
        # attention and after the MLP too)
        ("glm vocab=151552 d_model=4096 layers=40 heads=32 kv_heads=2 head_dim=128 feedforward=13696", 9_399_951_360),
        ("glm4 vocab=151552 d_model=4096 layers=40 heads=32 kv_heads=2 head_dim=128 feedforward=13696", 9_400_279_040),
        # Glm4MoeForCausalLM at GLM-4.5-Air's sizes (q/k/v biases, heads of 128 over a d_model of 4,096)
        (
            "glm4_moe vocab=151552 d_model=4096 layers=46 heads=96 kv_heads=8 head_dim=128 feedforward=10944 "
            "experts=128 expert_ff=1408 n_shared=1 first_dense=1 attention_bias=true",
            106_852_245_504,
        ),
        # Qwen3NextForCausalLM(Qwen3NextConfig()) (Qwen3-Next-80B-A3B), Qwen3_5ForCausalLM(Qwen3_5TextConfig()) and
        # Qwen3_5MoeForCausalLM(Qwen3_5MoeTextConfig()): Gated DeltaNet layers, every 4th gated full attention
        (
            "qwen3_next vocab=151936 d_model=2048 layers=48 heads=16 kv_heads=2 head_dim=256 experts=512 expert_ff=512 "
            "shared_ff=512 shared_expert=true lin_k_heads=16 lin_k_dim=128 lin_v_heads=32 lin_v_dim=128 lin_fused=true",
            79_674_391_296,
        ),
        (
            "qwen3_5 vocab=248320 d_model=4096 layers=32 heads=16 kv_heads=4 head_dim=256 feedforward=12288 "
            "lin_k_heads=16 lin_k_dim=128 lin_v_heads=32 lin_v_dim=128",
            8_953_803_264,
        ),
        (
            "qwen3_next vocab=248320 d_model=2048 layers=40 heads=16 kv_heads=2 head_dim=256 experts=256 expert_ff=512 "
            "shared_ff=512 shared_expert=true lin_k_heads=16 lin_k_dim=128 lin_v_heads=32 lin_v_dim=128",
            34_660_610_688,
        ),
        # Lfm2ForCausalLM(Lfm2Config()): attention in every layer, the feed-forward 2/3 of its 12,288 (w1 of 8,192)
        ("lfm2 vocab=65536 d_model=2560 layers=32 heads=32 kv_heads=8 feedforward=8192 tied=true", 2_705_497_600),
        # GptOssForCausalLM at gpt-oss-20b's sizes (24 layers of 32 experts: OpenAI's 20.9B) and GptOssConfig()'s,
        # gpt-oss-120b's (36 layers of 128)
        (
            "gpt_oss vocab=201088 d_model=2880 layers=24 heads=64 kv_heads=8 head_dim=64 feedforward=2880 experts=32",
            20_914_757_184,
        ),
        (
            "gpt_oss vocab=201088 d_model=2880 layers=36 heads=64 kv_heads=8 head_dim=64 feedforward=2880 experts=128",
            116_829_156_672,
        ),
        # MiniMaxM2ForCausalLM(MiniMaxM2Config()): MiniMax-M2's sizes (62 layers of 256 experts)
        (
            "minimax_m2 vocab=200064 d_model=3072 layers=62 heads=48 kv_heads=8 head_dim=128 feedforward=1536 "
            "experts=256",
            228_689_748_992,
        ),
        # JambaForCausalLM(JambaConfig()): Jamba-v0.1's sizes (attention in every 8th layer from the 5th, 16 experts in
        # every second layer from the 2nd, gated MLPs in the others)
        ("jamba vocab=65536 d_model=4096 layers=32 heads=32 kv_heads=8 feedforward=14336 experts=16", 51_570_323_328),
        # ... and JambaForCausalLM(JambaConfig(num_hidden_layers=27)) with attn_layer_offset=0 and expert_layer_offset=0
        # (attention in layers 0, 8, 16 and 24, experts in every even one; a 0 is an offset, not unset), and without
        # them (4, 12 and 20; every odd one)
        (
            "jamba vocab=65536 d_model=4096 layers=27 heads=32 kv_heads=8 feedforward=14336 experts=16 attn_offset=0 "
            "expert_offset=0",
            44_877_982_176,
        ),
        ("jamba vocab=65536 d_model=4096 layers=27 heads=32 kv_heads=8 feedforward=14336 experts=16", 42_298_870_528),
        # FalconH1ForCausalLM(FalconH1Config()): Mamba-2 of 128 heads over mamba_d_ssm=1,024 beside attention in every
        # layer (no gated norm: mamba_rms_norm is false)
        (
            "falcon_h1 vocab=128000 d_model=4096 layers=32 heads=32 kv_heads=8 feedforward=14336 ssm_inner=1024 "
            "ssm_heads=128 state=256 groups=1",
            8_514_961_408,
        ),
        # Lfm2MoeForCausalLM(Lfm2MoeConfig(layer_types=["full_attention"] * 32)): Lfm2MoeConfig() itself builds no model
        # (its layer_types is None); attention in every layer, as the formula puts it, 2 dense layers, 32 experts
        (
            "lfm2_moe vocab=65536 d_model=2048 layers=32 heads=32 kv_heads=8 feedforward=7168 experts=32 "
            "expert_ff=1792 tied=true",
            11_129_591_808,
        ),
        # ... with num_dense_layers=0 (every layer a MoE one)
        (
            "lfm2_moe vocab=65536 d_model=2048 layers=32 heads=32 kv_heads=8 feedforward=7168 experts=32 "
            "expert_ff=1792 tied=true first_dense=0",
            11_746_285_568,
        ),
        # Qwen3MoeForCausalLM(Qwen3MoeConfig(num_experts=0)) and Qwen3NextForCausalLM(Qwen3NextConfig(num_experts=0)):
        # no experts, every layer a dense MLP of intermediate_size (`num_experts > 0` decides)
        (
            "qwen2_moe vocab=151936 d_model=2048 layers=24 heads=32 kv_heads=4 head_dim=64 feedforward=6144 experts=0 "
            "expert_ff=768 attention_bias=false qk_norm=true",
            1_754_895_360,
        ),
        (
            "qwen3_next vocab=151936 d_model=2048 layers=48 heads=16 kv_heads=2 head_dim=256 feedforward=5632 "
            "experts=0 expert_ff=512 shared_ff=512 shared_expert=true lin_k_heads=16 lin_k_dim=128 lin_v_heads=32 "
            "lin_v_dim=128 lin_fused=true",
            3_824_499_456,
        ),
        # DeepseekV3ForCausalLM(DeepseekV3Config(first_k_dense_replace=0)): every layer a MoE one
        (
            "deepseek vocab=129280 d_model=7168 layers=61 heads=128 feedforward=18432 experts=256 expert_ff=2048 "
            "n_shared=1 first_dense=0 q_lora=1536 kv_lora=512 nope=128 rope=64 v_head=128",
            703_797_812_224,
        ),
        # MptForCausalLM(MptConfig()): MPT-1B's sizes (ALiBi, no biases, an MLP of 4 x d_model, a tied head)
        ("mpt vocab=50368 d_model=2048 layers=24 heads=16", 1_311_213_568),
        # CodeGenForCausalLM(CodeGenConfig()): CodeGen-6B's sizes (an LM head with a bias, untied)
        ("codegen vocab=50400 d_model=4096 layers=28 heads=16", 6_050_882_784),
        # Cohere2MoeForCausalLM(Cohere2MoeConfig()): 40 MoE layers of 8 experts of 22,528, no shared expert, tied
        (
            "cohere2_moe vocab=256000 d_model=8192 layers=40 heads=64 head_dim=128 experts=8 expert_ff=22528",
            190_004_928_512,
        ),
        # MiniMaxForCausalLM(MiniMaxConfig()): Mixtral's sizes, lightning attention in every second layer
        ("minimax vocab=32000 d_model=4096 layers=32 heads=32 kv_heads=8 feedforward=14336 experts=8", 47_373_946_880),
        # HYV3ForCausalLM(HYV3Config()), LagunaForCausalLM(LagunaConfig()) and
        # GraniteMoeHybridForCausalLM(GraniteMoeHybridConfig()): their q/k norms (and Laguna's score correction, a
        # parameter) in every model, Granite-MoE-hybrid's shared MLP in every layer (all Mamba layers by default)
        (
            "hy_v3 vocab=120832 d_model=4096 layers=80 heads=64 kv_heads=8 head_dim=128 feedforward=13312 experts=192 "
            "expert_ff=1536 n_shared=1 first_dense=1",
            295_033_528_320,
        ),
        (
            "laguna vocab=100352 d_model=2048 layers=40 heads=48 kv_heads=8 head_dim=128 feedforward=8192 "
            "experts=256 expert_ff=512 shared_ff=512",
            33_189_975_808,
        ),
        (
            "granitemoehybrid vocab=32000 d_model=4096 layers=32 heads=32 experts=8 expert_ff=11008 shared_ff=1024",
            38_601_064_448,
        ),
        # GPTBigCodeForCausalLM at StarCoder's sizes (multi-query: one key/value head)
        (
            "gpt_bigcode vocab=49152 positions=8192 d_model=6144 layers=40 heads=48 kv_heads=1 feedforward=24576",
            15_517_456_384,
        ),
        # each ForCausalLM of its model type's default config (VaultGemma-1B, nanochat d12, JetMoE-8B, Sarvam-MoE,
        # RecurrentGemma-2B in Griffin's block cycle, RWKV-4 7B, xLSTM-7B)
        (
            "vaultgemma vocab=256000 d_model=2304 layers=26 heads=8 kv_heads=4 head_dim=256 feedforward=9216",
            2_614_222_080,
        ),
        ("nanochat vocab=50304 d_model=768 layers=12 heads=6 feedforward=8192", 256_573_440),
        (
            "jetmoe vocab=32000 d_model=2048 layers=12 heads=32 kv_heads=16 head_dim=128 feedforward=5632 experts=8",
            4_293_888_000,
        ),
        (
            "sarvam_moe vocab=262144 d_model=4096 layers=19 heads=64 kv_heads=4 head_dim=64 feedforward=8192 "
            "experts=128 expert_ff=1024 n_shared=1 first_dense=1 qk_norm=true",
            32_152_648_064,
        ),
        (
            "recurrent_gemma vocab=256000 d_model=2560 layers=26 heads=10 head_dim=256 lru=2560 intermediate=7680 "
            "tied=true",
            2_010_263_040,
        ),
        ("rwkv vocab=50277 d_model=4096 layers=32", 7_392_649_216),
        # DeepseekV4ForCausalLM(DeepseekV4Config()) (V4-Flash's sizes; its default layer kinds: 2 HCA, then CSA and HCA)
        (
            "deepseek_v4 vocab=129280 d_model=4096 layers=43 heads=64 head_dim=512 q_lora=1024 o_lora=1024 o_groups=8 "
            "hc=4 index_heads=64 index_dim=128 experts=256 expert_ff=2048",
            284_325_869_015,
        ),
        (
            "xlstm vocab=50304 d_model=4096 layers=32 heads=8 qk_factor=0.5 v_factor=1 ffn_factor=2.667 "
            "ffn_multiple=64",
            6_865_424_896,
        ),
    ],
)
def test_family_formulas_give_the_published_counts(spec: str, count: int) -> None:
    from inspector.architectures import count as total
    from inspector.architectures import parse_spec

    assert total(parse_spec(spec))[0] == count


def test_family_words_as_expect_check_the_file_module_by_module(zoo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder, n = zoo("qwen2")
    shutil.copy(folder / "model.safetensors", tmp_path / "model.safetensors")
    words = "vocab=128 d_model=32 heads=4 kv_heads=2 feedforward=64"
    exp = inspect(tmp_path / "model.safetensors", f"llama {words} layers=2").expectation
    assert exp is not None and exp.source == "stated" and exp.matches and exp.total == n
    exp = inspect(tmp_path / "model.safetensors", f"llama {words} layers=3").expectation
    assert exp is not None and not exp.matches
    assert [c.layer for c in exp.layers if c.status == "missing"] == ["model.layers.2"]


def test_a_config_value_of_0_is_a_value_in_words_against_a_file(zoo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Jamba with its attention and experts from layer 0 (attn_layer_offset and expert_layer_offset 0), as transformers
    # writes it: its config reads 0 as the offset it is, and words stating it check the file module by module (0 read
    # as unset was JambaConfig's default offsets, 4 and 1: no attention layer of 4, experts in layers 1 and 3)
    from inspector.families import FAMILY_BY_NAME
    from inspector.family_check import from_config

    folder, n = zoo("jamba+offsets0")
    config = json.loads((folder / "config.json").read_text())
    stated = from_config(FAMILY_BY_NAME["jamba"], config)
    offsets = ("attn_period", "attn_offset", "expert_period", "expert_offset")
    assert [stated[k] for k in offsets] == [4, 0, 2, 0]
    shutil.copy(folder / "model.safetensors", tmp_path / "model.safetensors")
    words = "jamba vocab=128 d_model=32 layers=4 heads=4 kv_heads=2 feedforward=64 experts=4 attn_period=4"
    exp = inspect(tmp_path / "model.safetensors", f"{words} attn_offset=0 expert_offset=0").expectation
    assert exp is not None and exp.source == "stated" and exp.matches and exp.total == n
    exp = inspect(tmp_path / "model.safetensors", words).expectation  # (unset: JambaConfig's offsets, 4 and 1)
    assert exp is not None and not exp.matches
    from inspector.architectures import definitions

    offset = {w.name: w for w in definitions()["jamba"].words}["attn_offset"]
    assert offset.default is None and "0 is one" in offset.help


@pytest.mark.parametrize("tied", [True, False])
def test_a_llama_gguf_and_its_safetensors_give_the_same_expectation(tmp_path: Path, tied: bool) -> None:
    """GGUF names map to the family's modules (`loaders.gguf.hf_name`), its metadata to the config's sizes."""
    pytest.importorskip("gguf")
    transformers = pytest.importorskip("transformers")
    import torch

    torch.manual_seed(0)
    sizes = {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2}
    config = transformers.LlamaConfig(vocab_size=96, num_hidden_layers=2, tie_word_embeddings=tied, **sizes)
    model = transformers.LlamaForCausalLM(config)
    model.save_pretrained(tmp_path / "hf")
    from tests.loaders.test_gguf import _llama_gguf  # convert_hf_to_gguf's layout, 2-d tensors in Q8_0

    _llama_gguf(tmp_path / "model.gguf", model)
    from_gguf = inspect(tmp_path / "model.gguf").expectation
    from_hf = inspect(tmp_path / "hf" / "model.safetensors").expectation
    assert from_gguf is not None and from_hf is not None
    assert from_gguf.architecture == from_hf.architecture == "llama" and from_gguf.matches and from_hf.matches
    assert from_gguf.total == from_hf.total == model.num_parameters()
    assert [(c.layer, c.expected, c.status) for c in from_gguf.layers] == [
        (c.layer, c.expected, c.status) for c in from_hf.layers
    ]
    shown = ("vocab", "d_model", "layers", "heads", "kv_heads", "q_dim", "kv_dim", "feedforward", "tied")
    assert {k: from_gguf.hyperparameters[k] for k in shown} == {k: from_hf.hyperparameters[k] for k in shown}


# -- what an inferred family does not describe is explained from the file, not warned about ------------------------

SMALL = dict(
    hidden_size=32, intermediate_size=64, moe_intermediate_size=16, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, head_dim=8, vocab_size=128, max_position_embeddings=64, num_experts=4,
    num_experts_per_tok=2, n_routed_experts=4, d_model=32, num_layers=2, num_heads=4, d_ff=64, d_kv=8,
    image_size=32, patch_size=8, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
    decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, shared_expert_intermediate_size=32,
)  # fmt: skip


def _small_model(model_type: str, auto: str, folder: Path, **flags: object) -> int:
    """A tiny model of a transformers type (with config `flags` set), saved with save_pretrained."""
    import torch
    import transformers

    try:
        config = transformers.AutoConfig.for_model(model_type)
    except (KeyError, ValueError):
        pytest.skip(f"this transformers has no {model_type!r}")
    words: dict[str, object] = {k: v for k, v in SMALL.items() if isinstance(getattr(config, k, None), int)}
    words |= flags
    torch.manual_seed(0)
    model = getattr(transformers, auto).from_config(transformers.AutoConfig.for_model(model_type, **words))
    model.save_pretrained(folder)
    return int(model.num_parameters())


@pytest.mark.parametrize(
    ("model_type", "flags"),
    [
        ("gptj", {"tie_word_embeddings": True}),  # a tied head that keeps its own bias
        ("llama", {"tie_word_embeddings": True, "attention_bias": True, "mlp_bias": True}),
        ("gpt2", {"tie_word_embeddings": False}),
        ("qwen2", {"tie_word_embeddings": True}),
        # q/k/v biases, and an o_proj bias only where Qwen3-MoE's attention_bias says
        ("qwen2_moe", {"qkv_bias": False}),
        ("qwen3_moe", {"attention_bias": True}),
        ("glm4", {"attention_bias": False, "pad_token_id": 0}),
        ("mamba", {"use_bias": True, "use_conv_bias": False, "tie_word_embeddings": False}),
        ("mamba2", {"use_bias": True, "use_conv_bias": False, "tie_word_embeddings": True, "num_heads": 8}),
        # MoE layers interleaved with dense ones (Llama 4 Maverick's layout): each layer as it is
        ("llama4_text", {"interleave_moe_layer_step": 2, "intermediate_size_mlp": 48}),
    ],
)
def test_config_flags_other_than_the_defaults_are_read_from_the_file(
    model_type: str, flags: dict[str, object], tmp_path: Path
) -> None:
    """What `bench/sweep_transformers.py --flip` checks for every class, for a few: a flag turned from its default
    (a bias, tied embeddings) is a fact of the file, not a warning."""
    n = _small_model(model_type, "AutoModelForCausalLM", tmp_path, **flags)
    report = inspect(tmp_path / "model.safetensors")
    exp = report.expectation
    assert report.checkpoint.n_parameters == n
    assert exp is not None and exp.source == "config" and exp.total == n and exp.matches, exp.layers
    assert "COUNT_MISMATCH" not in {f.code for f in report.findings}


@pytest.mark.parametrize(
    ("model_type", "auto", "why"),
    [
        ("afmoe", "AutoModelForCausalLM", "a llama-like model whose later layers hold experts instead of a dense MLP"),
        ("olmo", "AutoModelForCausalLM", "llama-like, norms without weights"),
        ("deit", "AutoModel", "a ViT with a distillation token"),
        ("umt5", "AutoModel", "T5 with a relative position bias in every block"),
        ("beit", "AutoModel", "no family table: one layer per module, layer-scale tensors beside the blocks"),
        ("bart", "AutoModelForCausalLM", "the decoder alone, under a config of the encoder-decoder family"),
    ],
)
def test_a_model_the_formula_describes_in_part_is_explained_not_warned(
    model_type: str, auto: str, why: str, tmp_path: Path
) -> None:
    n = _small_model(model_type, auto, tmp_path)
    report = inspect(tmp_path / "model.safetensors")
    exp = report.expectation
    codes = {f.code: f.severity.value for f in report.findings}
    assert report.checkpoint.n_parameters == n, why
    assert exp is not None and exp.anomalies == () and "COUNT_MISMATCH" not in codes, (why, exp.anomalies)
    assert exp.matches or (exp.explained and codes.get("COUNT_EXPLAINED") == "info"), why
    expected = report_dict(report)["expected"]
    assert expected["explained"] is exp.explained and expected["anomalies"] == []


def test_a_layer_missing_a_module_the_others_hold_is_warned_even_when_inferred(tmp_path: Path) -> None:
    import transformers
    from safetensors.numpy import load_file, save_file

    config = transformers.AutoConfig.for_model("llama", **{**SMALL, "num_hidden_layers": 4})
    transformers.AutoModelForCausalLM.from_config(config).save_pretrained(tmp_path / "full")
    tensors = load_file(tmp_path / "full" / "model.safetensors")
    del tensors["model.layers.2.mlp.down_proj.weight"]  # a conversion that lost one tensor
    save_file(tensors, tmp_path / "model.safetensors")
    report = inspect(tmp_path / "model.safetensors")
    exp = report.expectation
    assert exp is not None and exp.source == "inferred" and exp.anomalies == ("model.layers.2",)
    assert "COUNT_MISMATCH" in {f.code for f in report.findings if f.severity.value == "warning"}
    assert report_dict(report)["expected"]["anomalies"] == ["model.layers.2"]
    row = next(c for c in exp.layers if c.layer == "model.layers.2")
    assert "model.layers.2.mlp.down_proj (Dense 2,048) is not in the file" in row.explanation


@pytest.mark.parametrize(
    ("model_type", "auto", "buffers"),
    [
        ("apertus", "AutoModelForCausalLM", "xIELU activation constants"),
        ("minimax", "AutoModelForCausalLM", "lightning-attention decays"),
        ("glm4_moe", "AutoModelForCausalLM", "MoE router score correction"),
        ("ibert", "AutoModel", "integer weight copies and quantisation ranges"),
        ("gemma4_audio", "AutoModel", "clipping ranges"),
        # the router's correction saved under the checkpoint's name (mlp.expert_bias, mlp.gate.bias): save_pretrained
        # renames the buffer; the same names are parameters in other model types (`KindRule.only`)
        ("hy_v3", "AutoModelForCausalLM", "MoE router score correction, renamed on save"),
        ("inkling2_text", "AutoModelForCausalLM", "MoE router score correction, renamed on save"),
        ("sarvam_moe", "AutoModelForCausalLM", "MoE router score correction, renamed on save"),
    ],
)
def test_buffers_transformers_saves_beside_the_weights_are_not_counted(
    model_type: str, auto: str, buffers: str, tmp_path: Path
) -> None:
    # (Inkling 2's head is unpadded_vocab_size rows in memory, padded with zero rows to vocab_size on save: the
    # default, 200,058, is over the shrunk vocabulary, which transformers 5.24 refuses; here the two are one size)
    flags = {"unpadded_vocab_size": SMALL["vocab_size"]} if model_type == "inkling2_text" else {}
    n = _small_model(model_type, auto, tmp_path, **flags)
    report = inspect(tmp_path / "model.safetensors")
    assert report.checkpoint.n_parameters == n, buffers  # num_parameters(): buffers apart
    assert any(t.kind.value == "buffer" for t in report.checkpoint.tensors), buffers


@pytest.mark.parametrize(
    ("model_type", "auto"),
    [
        ("inkling2_text", "AutoModelForCausalLM"),
        ("inkling2_loop_text", "AutoModelForCausalLM"),
        ("inkling2", "AutoModelForImageTextToText"),
        ("inkling2_loop", "AutoModelForImageTextToText"),
    ],
)
def test_a_head_saved_with_padding_rows_says_what_num_parameters_prints(
    model_type: str, auto: str, tmp_path: Path
) -> None:
    """Inkling 2's head: `unpadded_vocab_size` rows in the model, padded with zero rows to `vocab_size` on save and
    trimmed on load. The file's count keeps them; PADDED_HEAD gives transformers' num_parameters()."""
    import torch
    import transformers

    try:
        default = transformers.AutoConfig.for_model(model_type)
    except (KeyError, ValueError):
        pytest.skip(f"this transformers has no {model_type!r}")

    def small(part: object) -> dict[str, object]:
        return {k: v for k, v in SMALL.items() if isinstance(getattr(part, k, None), int)}

    text = {"unpadded_vocab_size": 100}  # of SMALL's 128
    if hasattr(default, "text_config"):  # a composite: the words go to its text and vision configs
        text |= small(default.text_config)
        vision = small(default.vision_config) | {"text_hidden_size": text["hidden_size"]}
        config = transformers.AutoConfig.for_model(model_type, text_config=text, vision_config=vision)
    else:
        config = transformers.AutoConfig.for_model(model_type, **small(default), **text)
    torch.manual_seed(0)
    model = getattr(transformers, auto).from_config(config)
    model.save_pretrained(tmp_path)
    report = inspect(tmp_path / "model.safetensors")
    padded = [f for f in report.findings if f.code == "PADDED_HEAD"]
    assert len(padded) == 1 and padded[0].severity.value == "info"
    (head,) = padded[0].subjects
    stored = next(t for t in report.checkpoint.tensors if t.name == head)
    assert stored.shape[0] == 128 and model.get_output_embeddings().weight.shape[0] == 100
    dropped = 28 * stored.shape[1]
    assert report.checkpoint.n_parameters - dropped == model.num_parameters()
    assert f"num_parameters() prints {model.num_parameters():,}" in padded[0].message
    assert "COUNT_MISMATCH" not in {f.code for f in report.findings}
    roles = {r.name: r.role for r in report.roles}  # (the unembedding is the head, the embeddings' norm a norm)
    assert roles[head] == "output_head"
    assert {roles[n] for n in roles if n.endswith("embed_norm.weight")} == {"norm"}
    # the loaded model's own state dict, written by torch.save: its head as the model holds it, nothing to say
    torch.save(model.state_dict(), tmp_path / "state.pt")
    (tmp_path / "model.safetensors").unlink()
    report = inspect(tmp_path / "state.pt")
    assert "PADDED_HEAD" not in {f.code for f in report.findings}
    assert report.checkpoint.n_parameters == model.num_parameters()


def test_a_name_some_models_make_a_parameter_follows_the_config(tmp_path: Path) -> None:
    # e_score_correction_bias is a buffer in DeepSeek-V3-style routers and an nn.Parameter in Laguna's
    n = _small_model("laguna", "AutoModelForCausalLM", tmp_path)
    report = inspect(tmp_path / "model.safetensors")
    biases = [t for t in report.checkpoint.tensors if t.name.endswith("e_score_correction_bias")]
    assert biases and all(t.kind.value == "parameter" for t in biases)
    assert report.checkpoint.n_parameters == n


def test_a_name_only_some_model_types_make_a_buffer_stays_a_parameter_elsewhere(tmp_path: Path) -> None:
    # `mlp.gate.bias` is Inkling 2's router correction (a buffer); in another model type, or without a config, the
    # same name is a gate's bias, a parameter (`KindRule.only`)
    np = pytest.importorskip("numpy")
    from safetensors.numpy import save_file

    kinds = {}
    for model_type in ("inkling2_text", "mixtral", None):
        folder = tmp_path / str(model_type)
        folder.mkdir()
        save_file({"model.layers.0.mlp.gate.bias": np.zeros(4, np.float32)}, folder / "model.safetensors")
        if model_type:
            (folder / "config.json").write_text(json.dumps({"model_type": model_type}))
        kinds[model_type] = load(folder / "model.safetensors").tensors[0].kind.value
    assert kinds == {"inkling2_text": "buffer", "mixtral": "parameter", None: "parameter"}


def test_frozen_batchnorms_of_a_detection_backbone_are_buffers_by_the_config(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file

    frozen_bn = pytest.importorskip("transformers.models.detr.modeling_detr").DetrFrozenBatchNorm2d
    backbone = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, bias=False), frozen_bn(8), torch.nn.Conv2d(8, 4, 1), torch.nn.BatchNorm2d(4)
    )
    save_file({k: v.contiguous() for k, v in backbone.state_dict().items()}, tmp_path / "model.safetensors")
    trained = sum(p.numel() for p in backbone.parameters())  # the frozen norm has none: all four are buffers
    assert inspect(tmp_path / "model.safetensors").checkpoint.n_parameters == trained + 16  # no config: read as a BN
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "detr"}))
    report = inspect(tmp_path / "model.safetensors")
    assert report.checkpoint.n_parameters == trained
    kinds = {t.name: t.kind.value for t in report.checkpoint.tensors}
    assert kinds["1.weight"] == kinds["1.bias"] == "buffer" and kinds["3.weight"] == "parameter"


@pytest.mark.parametrize(
    ("model_type", "auto", "why"),
    [
        ("camembert", "AutoModelForCausalLM", "the LM head listed before the embedding it shares"),
        ("t5", "AutoModel", "the encoder's and decoder's embed_tokens kept as names of the shared embedding"),
        ("mixtral", "AutoModelForCausalLM", "experts fused into gate_up_proj and down_proj, as held in memory"),
        ("qwen2_moe", "AutoModelForCausalLM", "fused experts beside a shared expert"),
        ("gpt_neox", "AutoModelForCausalLM", "the head named lm_head in memory, embed_out on the hub"),
        ("olmoe", "AutoModelForCausalLM", "experts fused in memory, one module each on the hub"),
        ("granitemoeshared", "AutoModelForCausalLM", "router and experts renamed in memory"),
    ],
)
def test_a_state_dict_torch_saved_from_a_transformers_model_matches_its_config(
    model_type: str, auto: str, why: str, tmp_path: Path
) -> None:
    torch = pytest.importorskip("torch")
    n = _small_model(model_type, auto, tmp_path)
    import transformers

    config = transformers.AutoConfig.from_pretrained(tmp_path)
    model = getattr(transformers, auto).from_config(config)
    torch.save(model.state_dict(), tmp_path / "pytorch_model.bin")
    (tmp_path / "model.safetensors").unlink()
    report = inspect(tmp_path / "pytorch_model.bin")
    exp = report.expectation
    assert report.checkpoint.n_parameters == n, why
    assert exp is not None and exp.source == "config" and exp.matches, (why, exp.anomalies)


@pytest.mark.parametrize(
    ("case", "layout"),
    [
        ("deepseek_v3", "deepseek-fused"),
        ("glm4_moe", "glm4_moe-fused"),
        ("qwen3_next", "qwen3_next-fused"),
        ("qwen3_5_moe_text", "qwen3_next-fused"),
        ("nemotron_h", "nemotron_h-fused"),  # (and `model.` for the hub's `backbone.`)
        ("nemotron_h+latent", "nemotron_h-fused"),
        ("granitemoehybrid", "granitemoehybrid-fused"),
        ("granitemoehybrid+dense", "granitemoehybrid"),  # (no experts: nothing renamed in memory)
        ("laguna", "laguna-fused"),  # (the score correction beside the router's weight)
        ("phimoe", "phimoe-fused"),  # (Mixtral's fused experts, the router as router)
        ("mellum", "qwen2_moe-fused"),
        ("gpt_oss", "gpt_oss"),
        ("lfm2", "lfm2"),
        ("minimax_m2", "minimax_m2-fused"),
        ("jamba", "jamba-fused"),
        ("falcon_h1", "falcon_h1"),
        ("lfm2_moe", "lfm2_moe-fused"),
        ("mpt", "mpt"),  # (the tied head's name kept beside the embedding's)
        ("codegen", "codegen"),
        ("cohere2_moe", "cohere2_moe-fused"),
        ("minimax", "minimax-fused"),
        ("hunyuan_v1_moe", "hunyuan_v1_moe-fused"),
        ("granitemoe_swa", "granitemoe_swa"),
        ("exaone_moe", "glm4_moe-fused"),
        ("hy_v3", "glm4_moe-fused"),  # (its checkpoints' router and shared experts renamed as GLM-4.5 names them)
        ("sarvam_moe", "glm4_moe-fused"),  # (its checkpoints' fused q/k/v split, its modules renamed as GLM-4.5's)
        ("deepseek_v4", "deepseek_v4-fused"),
    ],
)
def test_the_new_families_state_dicts_in_transformers_names(zoo, case: str, layout: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # what a torch.save of the model transformers loads from the zoo's files writes: its own names and fused experts
    _state_dict_reads_as(zoo, case, "AutoModelForCausalLM", layout, tmp_path)


def _state_dict_reads_as(zoo, case: str, auto: str, layout: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A torch.save of the model transformers' `auto` class loads from the zoo's files, with its config beside it:
    the family `layout` from the config, matching, and the zoo's count."""
    import torch
    import transformers

    folder, n = zoo(case)
    model = getattr(transformers, auto).from_pretrained(folder)
    torch.save(model.state_dict(), tmp_path / "pytorch_model.bin")
    shutil.copy(folder / "config.json", tmp_path / "config.json")
    report = inspect(tmp_path / "pytorch_model.bin")
    exp = report.expectation
    assert report.checkpoint.n_parameters == n
    assert exp is not None and exp.source == "config" and exp.architecture == layout and exp.matches


def test_every_familys_prefixes_are_dotted() -> None:
    from inspector.families import FAMILIES

    assert all(
        isinstance(f.bases, tuple)
        and f.bases
        and all(isinstance(b, str) and b in ("", b.rstrip(".") + ".") for b in f.bases)
        for f in FAMILIES
    ), [f.name for f in FAMILIES if not isinstance(f.bases, tuple)]


def test_exaone_state_dicts_in_transformers_names_are_read_as_llama(zoo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # EXAONE's hub checkpoints (what save_pretrained writes) name its modules as GPT-2 does; transformers holds them
    # under Llama's names, which a torch.save of its state dict keeps: the config's model_type has both layouts
    import torch
    import transformers

    folder, n = zoo("exaone")
    model = transformers.AutoModelForCausalLM.from_pretrained(folder)
    torch.save(model.state_dict(), tmp_path / "pytorch_model.bin")
    shutil.copy(folder / "config.json", tmp_path / "config.json")
    report = inspect(tmp_path / "pytorch_model.bin")
    exp = report.expectation
    assert any(t.name.startswith("model.layers.0.self_attn") for t in report.checkpoint.tensors)
    assert report.checkpoint.n_parameters == n
    assert exp is not None and exp.source == "config" and exp.architecture == "llama" and exp.matches


@pytest.mark.parametrize(("case", "fp8"), [("deepseek_v3", False), ("glm4_moe", False), ("deepseek_v3", True)])
def test_the_hubs_mtp_layer_is_explained_not_warned(case: str, fp8: bool, tmp_path: Path) -> None:
    # DeepSeek-V3's and GLM-4.5's hub checkpoints keep the multi-token-prediction module after the last layer
    # (`layers.{num_hidden_layers}`: a whole decoder layer, enorm, hnorm, eh_proj, shared_head, V3's own embed_tokens),
    # which transformers drops on load. Here transformers writes the decoder layer (a model of one layer more) and the
    # MTP modules are added under the hub's names; the config then states the layers the hub's does. With `fp8`, as
    # DeepSeek releases V3: each linear weight of the layers in float8 with its `weight_scale_inv` (a 128 x 128 block)
    import torch
    import transformers
    from safetensors.torch import load_file, save_file

    auto, words = ZOO[case]
    layers = words["num_hidden_layers"]
    transformers.AutoModelForCausalLM.from_config(
        transformers.AutoConfig.for_model(case, **{**words, "num_hidden_layers": layers + 1, "vocab_size": 128})
    ).save_pretrained(tmp_path)
    tensors = load_file(tmp_path / "model.safetensors")
    g = torch.Generator().manual_seed(0)
    mtp = {"enorm.weight": (32,), "hnorm.weight": (32,), "eh_proj.weight": (32, 64), "shared_head.norm.weight": (32,)}
    if case == "deepseek_v3":
        mtp |= {"shared_head.head.weight": (128, 32), "embed_tokens.weight": (128, 32)}
    for name, shape in mtp.items():
        tensors[f"model.layers.{layers}.{name}"] = torch.randn(shape, generator=g)
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
    config = json.loads((tmp_path / "config.json").read_text())
    config |= {"num_hidden_layers": layers, "num_nextn_predict_layers": 1}
    (tmp_path / "config.json").write_text(json.dumps(config))
    n = transformers.AutoModelForCausalLM.from_pretrained(tmp_path).num_parameters()  # (the MTP layer left out)
    mtp_scales = 0
    if fp8:  # (the loaded FP8 layers hold their scales as parameters: num_parameters() counts those outside the MTP)
        for name in [k for k, v in tensors.items() if ".layers." in k and k.endswith("proj.weight") and v.dim() == 2]:
            tensors[name] = tensors[name].to(torch.float8_e4m3fn)
            scales = tensors[name.removesuffix("weight") + "weight_scale_inv"] = torch.ones(1, 1)
            in_mtp = name.startswith(f"model.layers.{layers}.")
            mtp_scales += in_mtp
            n += 0 if in_mtp else scales.numel()
        save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
        config["quantization_config"] = {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}
        (tmp_path / "config.json").write_text(json.dumps(config))

    report = inspect(tmp_path / "model.safetensors")
    exp = report.expectation
    held = sum(
        t.n_elements
        for t in report.checkpoint.tensors
        if t.name.startswith(f"model.layers.{layers}.") and t.kind.value == "parameter"
    )
    assert held > sum(math.prod(s) for s in mtp.values())  # (the decoder layer's modules too)
    assert report.checkpoint.n_parameters == n + held  # every parameter the file holds
    assert exp is not None and exp.source == "config" and exp.matches and not exp.anomalies
    assert "COUNT_MISMATCH" not in {f.code for f in report.findings}
    row = next(c for c in exp.layers if c.layer == f"model.layers.{layers}")
    assert row.found == held - mtp_scales and "multi-token-prediction" in row.explanation
    assert any(f"transformers drops it on load, so its num_parameters() prints {n:,}" in note for note in exp.notes)


# The hub's MTP modules under `mtp.` (as Qwen3-Next's, Qwen3.5's and Nemotron 3's checkpoints hold them; names from
# transformers' conversion_mapping `MtpModel` and its `_keys_to_ignore_on_load_unexpected = ["^mtp.*"]`): a decoder
# layer of the model's own kind, copied here from a layer transformers wrote, and the module's own norms and projection
HUB_MTP = {
    "qwen3_next": (
        "model.layers.3.",  # (its full-attention layer: Qwen's MTP layer is one)
        {"fc.weight": (32, 64), "pre_fc_norm_embedding.weight": (32,), "pre_fc_norm_hidden.weight": (32,),
         "norm.weight": (32,)},
        {"mtp_num_hidden_layers": 1},
    ),
    "qwen3_5_text": (
        "model.layers.3.",
        {"fc.weight": (32, 64), "pre_fc_norm_embedding.weight": (32,), "pre_fc_norm_hidden.weight": (32,),
         "norm.weight": (32,)},
        {"mtp_num_hidden_layers": 1},
    ),
    "nemotron_h": (  # (Nemotron 3's two MTP layers: attention, then a MoE block; layers 2 and 1 of the zoo's model)
        ("backbone.layers.2.", "backbone.layers.1."),
        {"layers.0.enorm.weight": (32,), "layers.0.hnorm.weight": (32,), "layers.0.eh_proj.weight": (32, 64),
         "layers.1.final_layernorm.weight": (32,)},
        {"num_nextn_predict_layers": 2},
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(HUB_MTP))
def test_the_hubs_mtp_tensors_are_reported_as_not_loaded(case: str, tmp_path: Path) -> None:
    # transformers ignores `mtp.*` on load, so its num_parameters() prints less than the file holds: the MTP rows say
    # what they are (not task heads), the note what num_parameters() prints; no warning, with the config or without
    import torch
    import transformers
    from safetensors.torch import load_file, save_file

    n = build(case, tmp_path)
    sources, own, config_words = HUB_MTP[case]
    tensors = load_file(tmp_path / "model.safetensors")
    for layer, source in enumerate((sources,) if isinstance(sources, str) else sources):
        for name in [k for k in tensors if k.startswith(source)]:
            tensors[f"mtp.layers.{layer}.{name.removeprefix(source)}"] = tensors[name].clone()
    g = torch.Generator().manual_seed(0)
    for name, shape in own.items():
        tensors[f"mtp.{name}"] = torch.randn(shape, generator=g)
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
    config = json.loads((tmp_path / "config.json").read_text()) | config_words
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert transformers.AutoModelForCausalLM.from_pretrained(tmp_path).num_parameters() == n  # (mtp.* not loaded)

    for with_config in (True, False):
        if not with_config:
            (tmp_path / "config.json").unlink()
        report = inspect(tmp_path / "model.safetensors")
        exp = report.expectation
        params = [t for t in report.checkpoint.tensors if t.kind.value == "parameter"]
        held = sum(t.n_elements for t in params if t.name.startswith("mtp."))
        assert held > sum(math.prod(s) for s in own.values())  # (the decoder layers' modules too)
        assert report.checkpoint.n_parameters == n + held  # every parameter the file holds
        assert exp is not None and exp.matches and not exp.anomalies, exp.layers
        assert exp.source == ("config" if with_config else "inferred")
        assert "COUNT_MISMATCH" not in {f.code for f in report.findings}
        rows = [c for c in exp.layers if c.layer.startswith("mtp.")]
        assert sum(c.found for c in rows) == held and all("multi-token-prediction" in c.explanation for c in rows)
        assert any(f"transformers drops it on load, so its num_parameters() prints {n:,}" in note for note in exp.notes)
        roles = {r.name: r for r in report.roles}
        assert all(roles[t.name].layer.startswith("mtp.") and roles[t.name].role != "unmatched" for t in params
                   if t.name.startswith("mtp."))  # fmt: skip


def test_gpt_oss_in_llama_cpps_layout_is_checked_from_its_metadata(zoo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # llama.cpp's converter writes gpt-oss's fused experts as stacked gate, up and down projections, each with its
    # bias per expert (GptOssModel.modify_tensors: gate_up_proj's interleaved halves apart), under gguf-py's names for
    # the GPT_OSS architecture; written here with gguf-py's GGUFWriter from the model transformers wrote
    gguf = pytest.importorskip("gguf")
    from safetensors.numpy import load_file

    folder, n = zoo("gpt_oss")
    config = json.loads((folder / "config.json").read_text())
    hf = load_file(folder / "model.safetensors")
    writer = gguf.GGUFWriter(str(tmp_path / "gpt-oss.gguf"), "gpt-oss")
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_embedding_length(config["hidden_size"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(config["num_attention_heads"])
    writer.add_head_count_kv(config["num_key_value_heads"])
    writer.add_key_length(config["head_dim"])
    writer.add_expert_count(config["num_local_experts"])
    writer.add_expert_used_count(config["num_experts_per_tok"])
    names = {"embed_tokens.weight": "token_embd.weight", "norm.weight": "output_norm.weight"}
    tensors = {"output.weight": hf.pop("lm_head.weight")}
    tensors |= {names[k.removeprefix("model.")]: hf.pop(k) for k in list(hf) if k.removeprefix("model.") in names}
    block = {
        "input_layernorm": "attn_norm", "post_attention_layernorm": "post_attention_norm", "self_attn.q_proj": "attn_q",
        "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
        "self_attn.sinks": "attn_sinks", "mlp.router": "ffn_gate_inp",
    }  # fmt: skip
    for name, value in hf.items():
        layer, rest = name.removeprefix("model.layers.").split(".", 1)
        if rest.startswith("mlp.experts."):
            what = rest.removeprefix("mlp.experts.")
            bias = what.endswith("_bias")
            if what.startswith("gate_up_proj"):
                halves = value if bias else value.transpose(0, 2, 1)  # (experts, 2 ff[, d]): gate and up interleaved
                for half, stem in ((halves[:, ::2], "ffn_gate_exps"), (halves[:, 1::2], "ffn_up_exps")):
                    tensors[f"blk.{layer}.{stem}.{'bias' if bias else 'weight'}"] = half.copy()
            else:
                tensors[f"blk.{layer}.ffn_down_exps.{'bias' if bias else 'weight'}"] = (
                    value if bias else value.transpose(0, 2, 1).copy()
                )
            continue
        module, _, param = rest.rpartition(".")
        if rest == "self_attn.sinks":
            module, param = rest, "weight"  # (the converter adds '.weight')
        tensors[f"blk.{layer}.{block[module]}.{param}"] = value
    for name, value in tensors.items():
        writer.add_tensor(name, value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()

    report = inspect(tmp_path / "gpt-oss.gguf")
    exp = report.expectation
    assert report.checkpoint.n_parameters == n == sum(v.size for v in tensors.values())
    assert exp is not None and exp.source == "config" and exp.architecture == "gpt_oss-stacked" and exp.matches
    assert "COUNT_MISMATCH" not in {f.code for f in report.findings}


def test_lfm2_moe_router_correction_is_matched_as_the_file_holds_it(tmp_path: Path) -> None:
    # LFM2-MoE's router keeps a score correction, `feed_forward.expert_bias` (use_expert_bias, the default), a buffer
    # transformers saves beside the weights: with the config naming lfm2_moe the kind rule `hf.router_bias_saved`
    # makes it one (the count is `num_parameters()`); without it nothing tells the name is a buffer, so the file's
    # count holds it; the family matches the file either way, with no warning
    import transformers

    words = {**ZOO["lfm2_moe"][1], "use_expert_bias": True, "vocab_size": 128}
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model("lfm2_moe", **words))
    model.save_pretrained(tmp_path)
    n = model.num_parameters()
    for config in (True, False):
        if not config:
            (tmp_path / "config.json").unlink()
        report = inspect(tmp_path / "model.safetensors")
        exp = report.expectation
        held = sum(t.n_elements for t in report.checkpoint.tensors if t.name.endswith("feed_forward.expert_bias"))
        assert held == 4 * 3  # (4 experts, layers 1 to 3)
        counted = sum(
            t.n_elements
            for t in report.checkpoint.tensors
            if t.name.endswith("feed_forward.expert_bias") and t.kind.value == "parameter"
        )
        assert report.checkpoint.n_parameters == n + counted and (counted == 0) is config
        assert exp is not None and exp.architecture == "lfm2_moe" and exp.matches and exp.total == n + counted
        assert "COUNT_MISMATCH" not in {f.code for f in report.findings}


@pytest.mark.parametrize(
    ("model_type", "words", "dropped"),
    [
        ("mamba", {"hidden_size": 32, "num_hidden_layers": 2, "state_size": 8, "use_bias": True,
                   "use_conv_bias": False}, "layers.0.mixer.out_proj."),
        ("mamba2", {"hidden_size": 32, "num_hidden_layers": 2, "state_size": 8, "num_heads": 8, "head_dim": 8,
                    "n_groups": 2, "use_bias": True, "use_conv_bias": False}, "layers.0.mixer.out_proj."),
        ("nemotron_h", {"hidden_size": 32, "num_hidden_layers": 2, "layers_block_type": ["mamba", "attention"],
                        "mamba_num_heads": 8, "mamba_head_dim": 8, "n_groups": 2, "ssm_state_size": 8,
                        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "use_bias": True},
         "layers.0.mixer.out_proj."),
        ("falcon_h1", {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                       "num_key_value_heads": 2, "mamba_n_heads": 8, "mamba_d_head": 8, "mamba_d_ssm": 64,
                       "mamba_n_groups": 2, "mamba_d_state": 8, "projectors_bias": True}, "layers.0.mamba.out_proj."),
        ("falcon", {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "bias": True},
         "h.0.self_attention.dense."),
        ("deepseek_v2", {**SMALL_DEEPSEEK, "mlp_bias": True}, "layers.1.mlp.shared_experts.up_proj."),
    ],
)  # fmt: skip
def test_a_bias_flag_the_config_states_sizes_a_module_the_file_lacks(
    model_type: str,
    words: dict,
    dropped: str,
    tmp_path: Path,  # type: ignore[type-arg]
) -> None:
    # a file of the config's modules less one: a COUNT_MISMATCH, and the formula is the count of the model the config
    # describes, the missing module's bias as the config's flag says (they were the family's defaults: Mamba's and
    # Mamba-2's use_bias and use_conv_bias; Nemotron-H's use_bias, which its mixer reads, not mamba_proj_bias;
    # Falcon-H1's projectors_bias; Falcon's bias; DeepSeek's shared experts' mlp_bias)
    import torch
    import transformers
    from safetensors.torch import load_file, save_file

    config = transformers.AutoConfig.for_model(model_type, vocab_size=128, **words)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    model.save_pretrained(tmp_path)
    tensors = load_file(tmp_path / "model.safetensors")
    assert any(k.endswith(dropped + "bias") for k in tensors)  # (the flag made the bias this test is about)
    tensors = {k: v for k, v in tensors.items() if not k.endswith((dropped + "weight", dropped + "bias"))}
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
    report = inspect(tmp_path / "model.safetensors")
    exp = report.expectation
    assert exp is not None and exp.source == "config" and not exp.matches
    assert exp.total == model.num_parameters() and "COUNT_MISMATCH" in {f.code for f in report.findings}


@pytest.mark.parametrize(
    ("case", "layout"),
    [("qwen3_5", "qwen3_5-vl"), ("qwen3_5_moe", "qwen3_next-fused-vl"), ("qwen3_vl", "qwen3_vl"),
     ("qwen3_vl_moe", "qwen3_vl_moe"), ("qwen2_5_vl", "qwen2_5_vl-nested"), ("qwen2_vl", "qwen2_vl-nested")],
)  # fmt: skip
def test_vision_language_state_dicts_in_transformers_names(zoo, case: str, layout: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # a torch.save of the model transformers loads from the zoo's files: the language model under model.language_model.
    # (Qwen2.5-VL's checkpoints hold it under model.), the experts fused
    _state_dict_reads_as(zoo, case, "AutoModelForImageTextToText", layout, tmp_path)


def test_a_vision_tower_the_config_states_deeper_than_the_files_is_reported(zoo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # a Qwen3.5 vision-language file's tower is sized by the config's vision_config (its language model by text_config)
    folder, _ = zoo("qwen3_5")
    config = json.loads((folder / "config.json").read_text())
    config["vision_config"]["depth"] = 3
    shutil.copy(folder / "model.safetensors", tmp_path / "model.safetensors")
    (tmp_path / "config.json").write_text(json.dumps(config))
    report = inspect(tmp_path / "model.safetensors")
    exp = report.expectation
    assert exp is not None and exp.architecture == "qwen3_5-vl" and exp.source == "config"
    assert [c.layer for c in exp.layers if c.status == "missing"] == ["model.visual.blocks.2"]
    assert "COUNT_MISMATCH" in {f.code for f in report.findings}


@pytest.mark.parametrize(
    ("case", "flag", "rows"),
    [
        ("glm4_moe", "use_qk_norm", ["model.layers.0", "model.layers.1", "model.layers.2"]),
        ("sarvam_moe", "use_qk_norm", ["model.layers.0", "model.layers.1"]),
        ("cohere+qk_norm", "use_qk_norm", ["model.layers.0", "model.layers.1"]),
        ("phi+qk_norm", "qk_layernorm", ["model.layers.0", "model.layers.1"]),
    ],
)
def test_q_k_norms_a_config_states_are_expected_so_a_file_without_them_is_reported(  # type: ignore[no-untyped-def]
    zoo, case: str, flag: str, rows: list[str], tmp_path: Path
) -> None:
    # Whether a layer norms its queries and keys is the config's flag (GLM-4.5's and Sarvam-MoE's and Cohere's
    # `use_qk_norm`, Phi's `qk_layernorm`; transformers builds the norms where it is true): it was not read, so the
    # q/k norms were expected only where the file held them, and a file without them under a config stating them went
    # unreported. The file as written matches; without its q/k norms, it is a COUNT_MISMATCH naming them, the formula
    # the count of the model the config describes; and a config stating none with a file holding them is one too
    from safetensors.torch import load_file, save_file

    folder, n = zoo(case)
    config = json.loads((folder / "config.json").read_text())
    assert config[flag] is True
    report = inspect(folder / "model.safetensors")
    assert report.expectation is not None and report.expectation.matches and report.expectation.total == n
    tensors = load_file(folder / "model.safetensors")
    norms = [k for k in tensors if any(w in k for w in ("q_norm", "k_norm", "query_layernorm", "key_layernorm",
                                                         "q_layernorm", "k_layernorm"))]  # fmt: skip
    assert norms
    save_file({k: v for k, v in tensors.items() if k not in norms}, tmp_path / "model.safetensors", {"format": "pt"})
    shutil.copy(folder / "config.json", tmp_path / "config.json")
    report = inspect(tmp_path / "model.safetensors")
    exp = report.expectation
    held = sum(tensors[k].numel() for k in norms)
    assert exp is not None and exp.source == "config" and not exp.matches and exp.total == n
    assert report.checkpoint.n_parameters == n - held
    assert [c.layer for c in exp.layers if c.status == "mismatch"] == rows
    assert all("is not in the file" in c.explanation for c in exp.layers if c.status == "mismatch")
    assert "COUNT_MISMATCH" in {f.code for f in report.findings if f.severity.value == "warning"}
    report = inspect(_with_config(zoo, case, tmp_path, **{flag: False}))  # (the file as written: its norms held)
    exp = report.expectation
    assert exp is not None and not exp.matches and exp.total == n - held
    assert "COUNT_MISMATCH" in {f.code for f in report.findings if f.severity.value == "warning"}


def test_deepseek_v4_layer_kinds_a_config_states_are_its_so_a_file_of_others_is_reported(  # type: ignore[no-untyped-def]
    zoo, tmp_path: Path
) -> None:
    # Which layers compress their keys and values, and how (CSA: two series twice a head wide and an indexer; HCA: one
    # a head wide, a window of 128), is the config's `layer_types` where it states them; its hub configs' word is
    # `compress_ratios` (0, 4, 128 a layer). Layer 1 written as CSA, the config saying HCA: its compressor's rows differ
    # and its indexer is in the file but not in the formula
    import transformers

    folder, n = zoo("deepseek_v4")
    kinds = ["sliding_attention", "heavily_compressed_attention", "heavily_compressed_attention",
             "compressed_sparse_attention"]  # fmt: skip
    report = inspect(_with_config(zoo, "deepseek_v4", tmp_path, layer_types=kinds))
    exp = report.expectation
    words = {**ZOO["deepseek_v4"][1], "vocab_size": 128, "layer_types": kinds}
    config = transformers.AutoConfig.for_model("deepseek_v4", **words)
    described = transformers.AutoModelForCausalLM.from_config(config).num_parameters()
    assert report.checkpoint.n_parameters == n != described
    assert exp is not None and exp.total == described and not exp.matches
    assert [c.layer for c in exp.layers if c.status != "ok" and c.status != "tied"] == ["model.layers.1"]
    assert "model.layers.1.attn.indexer" in next(c.explanation for c in exp.layers if c.layer == "model.layers.1")
    assert "COUNT_MISMATCH" in {f.code for f in report.findings if f.severity.value == "warning"}
    config = json.loads((folder / "config.json").read_text())
    del config["layer_types"]  # (the hub's word for the same kinds: a rate a layer)
    (tmp_path / "config.json").write_text(json.dumps(config | {"compress_ratios": [0, 4, 128, 4]}))
    report = inspect(tmp_path / "model.safetensors")
    assert report.expectation is not None and report.expectation.matches and report.expectation.total == n


@pytest.mark.parametrize(
    ("case", "changes", "row"),
    [
        # (its 2 layers recurrent as written; the config's cycle makes the second attention)
        ("recurrent_gemma+recurrent", {"block_types": ["recurrent", "attention"]}, "model.layers.1"),
        # (its layer 2 HCA as written, the config's layer_types sliding: a compressor no layer of the config has)
        (
            "deepseek_v4",
            {"layer_types": ["sliding_attention", "compressed_sparse_attention", "sliding_attention",
                             "compressed_sparse_attention"]},
            "model.layers.2",
        ),
    ],
)  # fmt: skip
def test_a_layer_kind_the_config_places_otherwise_than_the_file_is_reported(  # type: ignore[no-untyped-def]
    zoo, case: str, changes: dict[str, object], row: str, tmp_path: Path
) -> None:
    # A hybrid's layer kinds are its config's where it states them, a kind's modules expected in the layers it lists
    # and nowhere else; a model may have no layer of a kind (without a config it is found from the kinds it holds)
    exp = _reported_against_edited_config(zoo, case, changes, tmp_path)
    assert [c.layer for c in exp.layers if c.status not in ("ok", "tied")] == [row]
