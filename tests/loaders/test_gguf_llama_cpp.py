"""GGUF files llama.cpp's own converter writes, now: `convert_hf_to_gguf.py` of the llama-cpp-python 0.3.36 sdist (its
vendored llama.cpp: the script, its `conversion/` package and its own gguf-py) run on tiny models transformers builds
here from each model type's config, for the architectures people download most (DeepSeek-V2/V3, GLM-4.5, Qwen3-Next,
Qwen3.5, Qwen3-MoE, LFM2, LFM2-MoE, Nemotron-H, Jamba, GLM-4, gpt-oss). The inspector's count is the source model's
`num_parameters()` (plus the multi-token-prediction layer where the checkpoint holds one, as the hub's do: transformers
drops it on load, the converter keeps it), its family check runs from the file's config with no warning.

The converter is not a pip package: `.ci/run` downloads the sdist and extracts those paths into `.ci/cache/`
(`LLAMA_CPP_CONVERTER` names another folder holding `convert_hf_to_gguf.py`); without it these tests are skipped. It
runs in a child process (its gguf-py is not the installed one) with a stand-in vocabulary: its `set_vocab` needs a
tokenizer it knows, and writes no tensor (the file's tokenizer model is "none").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from inspector.records import Severity, TensorKind
from inspector.recordtype import replace
from inspector.registry import load
from inspector.report import inspect
from inspector.roles import match_roles
from tests.loaders.test_gguf import _compare_with_reader

gguf = pytest.importorskip("gguf")

ROOT = Path(__file__).resolve().parents[2]
CONVERTER = Path(
    os.environ.get("LLAMA_CPP_CONVERTER") or ROOT / ".ci" / "cache" / "llama_cpp_python-0.3.36" / "vendor" / "llama.cpp"
)
# the converter in a child: its own gguf-py first, the stand-in vocabulary, then its main() once per (outtype, file)
CONVERT = """
import runpy, sys
root, model, *jobs = sys.argv[1:]
sys.path.insert(0, root)
sys.path.insert(1, root + "/gguf-py")
import conversion
def set_vocab(self):
    self.gguf_writer.add_tokenizer_model("none")
found = conversion.get_model_class
def get_model_class(*args, **kwargs):
    cls = found(*args, **kwargs)
    cls.set_vocab = set_vocab
    return cls
conversion.get_model_class = get_model_class
for job in jobs:
    outtype, outfile, *flags = job.split(",")
    sys.argv = ["convert_hf_to_gguf.py", model, "--outtype", outtype, "--outfile", outfile, *flags]
    runpy.run_path(root + "/convert_hf_to_gguf.py", run_name="__main__")
"""

SMALL = dict(
    hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
    vocab_size=256, max_position_embeddings=64, head_dim=8, moe_intermediate_size=32, num_experts=4,
    num_local_experts=4, n_routed_experts=4, num_experts_per_tok=2, shared_expert_intermediate_size=32,
    pad_token_id=0, bos_token_id=1, eos_token_id=2,
)  # fmt: skip
GLM_LITE = dict(q_lora_rank=16, kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=8,
                num_key_value_heads=4, first_k_dense_replace=1, n_group=1, topk_group=1,
                num_nextn_predict_layers=1)  # fmt: skip
NEMOTRON = dict(num_hidden_layers=4, mamba_num_heads=8, mamba_head_dim=8, n_groups=2, ssm_state_size=8,
                moe_shared_expert_intermediate_size=48)  # fmt: skip
# config.json as the converter reads it itself: transformers 5's NemotronHConfig states num_experts_per_tok whatever the
# layers are, so the converter writes any Nemotron-H it loads through transformers as nemotron_h_moe; a config it
# cannot load (the hub's remote-code one, under a transformers without NemotronHConfig: a model type it does not know
# here), read as JSON without MoE keys (Nemotron Nano 2's), it writes as nemotron_h
CONFIG_EDITS = {
    "nemotron_h": (
        ("num_experts_per_tok", "n_routed_experts", "n_shared_experts", "moe_intermediate_size",
         "moe_shared_expert_intermediate_size", "moe_latent_size", "moe_shared_expert_overlap", "routed_scaling_factor",
         "n_group", "topk_group", "norm_topk_prob"),
        {"model_type": "nemotron_h_remote", "auto_map": {"AutoConfig": "configuration_nemotron_h.NemotronHConfig"}},
    ),
}  # fmt: skip
TOKENIZER_ROWS = {"gemma3": 251}  # the tokenizer.json written beside the model: its tokens (the config's vocab: 256)
SEQUENTIAL = "sequential"  # (a model type of no family: each module counted as its shapes imply, as in its safetensors)
SUGGESTED = "?"  # (after a family's name: a model type of no family, checked by the family its shapes suggest)
HYBRID = dict(layer_types=["linear_attention", "full_attention"], full_attention_interval=2)  # (one layer of each)
# model type, class, config words beyond SMALL, outtypes, converter flags, the MTP layer the hub's checkpoints hold
# ("layer": a decoder layer after the last, DeepSeek's names; "mtp": Qwen's `mtp.*`; "nemotron": Nemotron 3's two
# `mtp.layers.*`; None: none), the family ("sequential": none, each module counted as its shapes imply)
CASES: dict[str, tuple[str, str, dict[str, Any], tuple[str, ...], tuple[str, ...], str | None, str]] = {
    # DeepSeek-V3: low-rank queries, a dense first layer, then MoE with the router's score correction (a buffer);
    # the converter writes the latent attention as one-head MQA and splits kv_b_proj into attn_k_b and attn_v_b
    "deepseek_v3": ("deepseek_v3", "DeepseekV3ForCausalLM",
                    dict(q_lora_rank=16, kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=8,
                         num_key_value_heads=4, first_k_dense_replace=1, n_group=1, topk_group=1),
                    ("f32", "q8_0"), (), None, "deepseek-stacked"),
    # DeepSeek-V2-Lite: its queries one projection (q_lora_rank null), two shared experts, no score correction
    "deepseek_v2_lite": ("deepseek_v2", "DeepseekV2ForCausalLM",
                         dict(q_lora_rank=None, kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=8,
                              num_key_value_heads=4, first_k_dense_replace=1, n_shared_experts=2),
                         ("f32",), (), None, "deepseek-stacked"),
    # GLM-4.7-Flash: DeepSeek's layers (written as deepseek2), its MTP layer kept by the converter where it is held
    "glm4_moe_lite": ("glm4_moe_lite", "Glm4MoeLiteForCausalLM", GLM_LITE, ("f32", "q8_0"), (), None,
                      "deepseek-stacked"),
    "glm4_moe_lite_mtp": ("glm4_moe_lite", "Glm4MoeLiteForCausalLM", GLM_LITE, ("f32",), (), "layer",
                          "deepseek-stacked"),
    # GLM-4.5: heads wider than d_model / heads (head_dim), partial rotary, q/k/v biases, a dense first layer
    "glm4_moe": ("glm4_moe", "Glm4MoeForCausalLM", dict(head_dim=16, first_k_dense_replace=1, n_group=1, topk_group=1),
                 ("f32", "q8_0"), (), None, "glm4_moe-stacked"),
    "glm4_moe_mtp": ("glm4_moe", "Glm4MoeForCausalLM",
                     dict(head_dim=16, first_k_dense_replace=1, n_group=1, topk_group=1), ("f32",), (), "layer",
                     "glm4_moe-stacked"),
    # Qwen3-Next: a full-attention layer every second; in_proj_qkvz split by the converter into attn_qkv, attn_gate;
    # a model without the MTP module is converted with --no-mtp (the converter asks for one otherwise)
    "qwen3_next": ("qwen3_next", "Qwen3NextForCausalLM", HYBRID,
                   ("f32", "q8_0"), ("--no-mtp",), None, "qwen3_next-stacked"),
    "qwen3_next_mtp": ("qwen3_next", "Qwen3NextForCausalLM", HYBRID,
                       ("f32",), (), "mtp", "qwen3_next-stacked"),
    "qwen3_5": ("qwen3_5_text", "Qwen3_5ForCausalLM", HYBRID,
                ("f32", "q8_0"), ("--no-mtp",), None, "qwen3_5"),
    "qwen3_5_mtp": ("qwen3_5_text", "Qwen3_5ForCausalLM", HYBRID,
                    ("f32",), (), "mtp", "qwen3_5"),
    # Nemotron-H: Mamba-2, attention and MLP layers (Nemotron Nano 2: its config read as JSON, written as nemotron_h),
    # and with a MoE layer (Nemotron 3: nemotron_h_moe), the experts stacked as transformers 5 fuses them
    "nemotron_h": ("nemotron_h", "NemotronHForCausalLM", {**NEMOTRON, "layers_block_type": ["mamba", "mlp", "attention",
                   "mlp"]}, ("f32", "q8_0"), (), None, "nemotron_h-fused"),
    "nemotron_h_moe": ("nemotron_h", "NemotronHForCausalLM", {**NEMOTRON, "layers_block_type": ["mamba", "moe",
                       "attention", "mlp"]}, ("f32", "q8_0"), (), None, "nemotron_h-fused"),
    # Nemotron 3 (Super) with its MTP module: an attention layer and a MoE layer, written by the converter as one layer
    "nemotron_h_moe_mtp": ("nemotron_h", "NemotronHForCausalLM", {**NEMOTRON, "layers_block_type": ["mamba", "moe",
                           "attention", "mlp"], "num_nextn_predict_layers": 1}, ("f32",), (), "nemotron",
                           "nemotron_h-fused"),
    # Gemma 3: its embedding cut to the tokenizer's tokens by the converter (the hub's has rows past them), tied head
    "gemma3": ("gemma3_text", "Gemma3ForCausalLM", {}, ("f32", "q8_0"), (), None, "llama"),
    # Qwen3.5-MoE (qwen35moe): Qwen3.5's layers with Qwen3-Next's experts and shared expert
    "qwen3_5_moe": ("qwen3_5_moe_text", "Qwen3_5MoeForCausalLM", HYBRID, ("f32", "q8_0"), ("--no-mtp",), None,
                    "qwen3_next-stacked"),
    "qwen3_5_moe_mtp": ("qwen3_5_moe_text", "Qwen3_5MoeForCausalLM", HYBRID, ("f32",), (), "mtp",
                        "qwen3_next-stacked"),
    "qwen3_moe": ("qwen3_moe", "Qwen3MoeForCausalLM", {}, ("f32", "q8_0"), (), None, "qwen2_moe-stacked"),
    "lfm2": ("lfm2", "Lfm2ForCausalLM", {"layer_types": ["conv", "full_attention"]}, ("f32", "q8_0"), (), None, "lfm2"),
    # LFM2-MoE: a dense first layer, then a router (its score correction expert_bias a buffer) and experts, stacked
    "lfm2_moe": ("lfm2_moe", "Lfm2MoeForCausalLM", {"num_hidden_layers": 3, "num_dense_layers": 1,
                 "layer_types": ["conv", "full_attention", "conv"]}, ("f32", "q8_0"), (), None, "lfm2_moe-stacked"),
    # Jamba: Mamba and attention layers, experts (stacked by the converter) every second layer, a gated MLP between
    "jamba": ("jamba", "JambaForCausalLM", dict(num_hidden_layers=4, attn_layer_period=2, attn_layer_offset=1,
              expert_layer_period=2, expert_layer_offset=0), ("f32", "q8_0"), (), None, "jamba-stacked"),
    # GLM-4 (dense, GLM-4-0414): no family (nor for its safetensors), the same modules as its safetensors file's
    "glm4": ("glm4", "Glm4ForCausalLM", {}, ("f32", "q8_0"), (), None, "glm4"),
    "gpt_oss": ("gpt_oss", "GptOssForCausalLM", {}, ("f32", "q8_0"), (), None, "gpt_oss-stacked"),
    # Cohere2-MoE (cohere2moe): read as the model type of no family until its architecture was mapped
    "cohere2_moe": ("cohere2_moe", "Cohere2MoeForCausalLM", {}, ("f32",), (), None, "cohere2_moe-stacked"),
    # GLM-5 (glm-dsa): DeepSeek's layers and its sparse-attention indexer, a dense first layer, then MoE
    "glm_moe_dsa": ("glm_moe_dsa", "GlmMoeDsaForCausalLM", {**GLM_LITE, "num_nextn_predict_layers": 0,
                    "index_n_heads": 4, "index_head_dim": 16}, ("f32", "q8_0"), (), None, "deepseek-stacked"),
    # EXAONE-MoE, HunYuan v3 (hy_v3): shared experts, a dense first layer; GLM-4.5's modules, as the converter names
    "exaone_moe": ("exaone_moe", "ExaoneMoeForCausalLM", {}, ("f32", "q8_0"), (), None, "glm4_moe-stacked"),
    "hy_v3": ("hy_v3", "HYV3ForCausalLM", {}, ("f32", "q8_0"), (), None, "glm4_moe-stacked"),
    # Laguna: shared experts, a dense first layer, a per-head output gate
    "laguna": ("laguna", "LagunaForCausalLM", {}, ("f32",), (), None, "laguna-stacked"),
    # Granite SWA, dense and MoE (one architecture, granite_swa): a learned sink per head; the MoE's experts and
    # shared MLP kept fused
    "granite_swa": ("granite_swa", "GraniteSWAForCausalLM", {}, ("f32", "q8_0"), (), None, "granite_swa"),
    "granitemoe_swa": ("granitemoe_swa", "GraniteMoeSWAForCausalLM", {"shared_intermediate_size": 32}, ("f32",), (),
                       None, "granitemoe_swa"),
    # GLM (glm, written as chatglm; its MLP's gate_up_proj fused) and HRM (hrm_text: two stacks of layers numbered one
    # after the other, each gqkv_proj split in four, a learned initial state): module by module, as their safetensors
    "glm": ("glm", "GlmForCausalLM", {}, ("f32",), (), None, "glm?"),  # (chatglm: ChatGLM's too, so no model type)
    "hrm_text": ("hrm_text", "HrmTextForCausalLM", {}, ("f32",), (), None, "sequential"),
}  # fmt: skip
RUNS = [(case, outtype) for case, spec in CASES.items() for outtype in spec[3]]


def _with_mtp(folder: Path, how: str, config: Any) -> int:
    """The hub's multi-token-prediction module added to a saved model's safetensors, as the hub's checkpoints hold it
    (transformers drops it on load): a whole decoder layer (the last full-attention one's copy) with its two input
    norms, the projection of their concatenation and a final norm; Nemotron 3's as two layers, an attention one's copy
    with those norms and projection and a MoE one's with the final norm. Its parameters' count (its router's score
    correction a buffer, as in the layers before it)."""
    import torch
    from safetensors.torch import load_file, save_file

    path = folder / "model.safetensors"
    state = load_file(path)
    n, d = config.num_hidden_layers, config.hidden_size
    added: dict[str, Any] = {}
    if how == "nemotron":  # (mtp.layers.0 holds the fusion's norms and projection, mtp.layers.1 the final norm)
        for index, holds in enumerate(("mixer.q_proj.weight", "mixer.gate.weight")):
            last = max(int(k.split(".")[2]) for k in state if k.startswith("backbone.layers.") and k.endswith(holds))
            source = f"backbone.layers.{last}."
            added |= {f"mtp.layers.{index}." + k.removeprefix(source): v.clone() for k, v in state.items()
                      if k.startswith(source)}  # fmt: skip
        names = ("mtp.layers.0.eh_proj", "mtp.layers.0.enorm", "mtp.layers.0.hnorm", "mtp.layers.1.final_layernorm")
    else:
        types = getattr(config, "layer_types", None) or ["full_attention"] * n
        last = max(i for i, kind in enumerate(types) if kind == "full_attention")
        prefix = f"model.layers.{n}." if how == "layer" else "mtp.layers.0."
        added = {prefix + k.removeprefix(f"model.layers.{last}."): v.clone() for k, v in state.items()
                 if k.startswith(f"model.layers.{last}.")}  # fmt: skip
        head = f"model.layers.{n}." if how == "layer" else "mtp."
        own = ("eh_proj", "enorm", "hnorm", "shared_head.norm") if how == "layer" else (
            "fc", "pre_fc_norm_embedding", "pre_fc_norm_hidden", "norm")  # fmt: skip
        names = tuple(head + name for name in own)
    added[f"{names[0]}.weight"] = torch.randn(d, 2 * d)
    for name in names[1:]:
        added[f"{name}.weight"] = torch.ones(d)
    save_file({**state, **added}, path, metadata={"format": "pt"})
    return sum(v.numel() for k, v in added.items() if not k.endswith("e_score_correction_bias"))  # (a buffer)


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """case -> (source model's num_parameters(), its MTP module's count, {outtype: GGUF path}), built on first use."""
    if not (CONVERTER / "convert_hf_to_gguf.py").is_file():
        pytest.skip(f"llama.cpp's converter not at {CONVERTER} (.ci/run extracts it from the llama-cpp-python sdist)")
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    made: dict[str, tuple[int, int, int, dict[str, Path]]] = {}

    def get(case: str) -> tuple[int, int, int, dict[str, Path]]:
        if case in made:
            return made[case]
        model_type, cls, extra, outtypes, flags, mtp, _ = CASES[case]
        folder = tmp_path_factory.mktemp(case)
        fields = transformers.AutoConfig.for_model(model_type).to_dict()
        words = {k: v for k, v in SMALL.items() if k in fields} | extra
        config = transformers.AutoConfig.for_model(model_type, **words)
        torch.manual_seed(0)
        model = getattr(transformers, cls)(config)
        model.save_pretrained(folder / "hf")
        extra_count = _with_mtp(folder / "hf", mtp, config) if mtp else 0
        if case in CONFIG_EDITS:
            dropped, updates = CONFIG_EDITS[case]
            saved = json.loads((folder / "hf" / "config.json").read_text())
            saved = {k: v for k, v in saved.items() if k not in dropped} | updates
            (folder / "hf" / "config.json").write_text(json.dumps(saved))
        trimmed = 0
        if case in TOKENIZER_ROWS:  # (a tokenizer.json of fewer tokens than the embedding's rows: the converter trims)
            rows = TOKENIZER_ROWS[case]
            vocab = {"model": {"vocab": {f"t{i}": i for i in range(rows - 1)}}, "added_tokens": [{"id": rows - 1}]}
            (folder / "hf" / "tokenizer.json").write_text(json.dumps(vocab))
            trimmed = (config.vocab_size - rows) * config.hidden_size
        files = {o: folder / f"{case}-{o}.gguf" for o in outtypes}
        jobs = [",".join((o, str(path), *flags)) for o, path in files.items()]
        done = subprocess.run([sys.executable, "-c", CONVERT, str(CONVERTER), str(folder / "hf"), *jobs],
                              capture_output=True, text=True, timeout=600)  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        made[case] = (int(model.num_parameters()), extra_count, trimmed, files)
        return made[case]

    return get


@pytest.mark.parametrize(("case", "outtype"), RUNS)
def test_converter_file_counts_like_the_source_model(converted: Any, case: str, outtype: str) -> None:
    """num_parameters() (plus the MTP module the checkpoint held, explained in the family's notes; less the embedding
    rows past the tokenizer's, which the converter trims from Gemma 3's), the family from the file's config, no
    warning, every tensor's role known; the tensors GGUFReader reads."""
    n_source, n_mtp, trimmed, files = converted(case)
    path = files[outtype]
    _compare_with_reader(path)
    report = inspect(path)
    ckpt = report.checkpoint
    assert ckpt.n_parameters == n_source + n_mtp - trimmed
    assert [f.message for f in report.findings if f.severity is not Severity.INFO] == []
    exp = report.expectation
    family = CASES[case][6]
    source = "inferred" if family == SEQUENTIAL or family.endswith(SUGGESTED) else "config"
    assert exp is not None and (exp.architecture, exp.source) == (family.removesuffix(SUGGESTED), source)
    assert exp.found == ckpt.n_parameters and not exp.anomalies
    if source == "config":
        assert exp.total == exp.found and exp.matches
    assert not [r.name for r in report.roles if r.role == "unmatched"]
    assert not [(r.layer, r.explanation) for r in exp.layers if r.explanation.startswith("a task head")]
    assert not [t.name for t in ckpt.tensors if t.kind is TensorKind.PARAMETER and t.layer is None]
    if n_mtp:
        assert any(f"({n_mtp:,} parameters, counted here)" in note for note in exp.notes), exp.notes
    buffers = [t.name for t in ckpt.tensors if t.kind is not TensorKind.PARAMETER]
    if CASES[case][0] in (
        "deepseek_v3",
        "glm4_moe",
        "glm4_moe_lite",
        "glm_moe_dsa",
        "lfm2_moe",
        "exaone_moe",
        "hy_v3",
    ) or (case.startswith("nemotron_h_moe")):
        # (the router's score correction, one per MoE layer)
        assert buffers and all(name.removesuffix(".bias").endswith(".exp_probs_b") for name in buffers)
    else:
        assert buffers == []


@pytest.mark.parametrize("case", [c for c in CASES if CASES[c][6] == "deepseek-stacked"])
def test_deepseek_latent_attention_as_the_converter_splits_it(converted: Any, case: str) -> None:
    """attn_k_b (heads, kv_lora, nope) and attn_v_b (heads, v_head, kv_lora) hold kv_b_proj's elements; the config's
    heads and latent sizes are the source's, not the one-head MQA the converter writes (GLM-5's too, glm-dsa)."""
    *_, files = converted(case)
    ckpt = load(files["f32"])
    config = ckpt.config or {}
    shapes = {t.name: t.shape for t in ckpt.tensors}
    assert shapes["blk.1.attn_k_b.weight"] == (4, 16, 8) and shapes["blk.1.attn_v_b.weight"] == (4, 8, 16)
    assert "blk.1.attn_kv_b.weight" not in shapes
    # (deepseek2: V2, V3, GLM-4.7; glm-dsa: GLM-5, with its indexer's heads and width)
    assert config["model_type"] == ("glm_moe_dsa" if case == "glm_moe_dsa" else "deepseek_v3")
    assert config["num_attention_heads"] == 4
    if case == "glm_moe_dsa":
        assert (config["index_n_heads"], config["index_head_dim"]) == (4, 16)
    assert "num_key_value_heads" not in config and "head_dim" not in config
    assert (config["kv_lora_rank"], config["qk_nope_head_dim"], config["qk_rope_head_dim"], config["v_head_dim"]) == (
        16, 8, 8, 8)  # fmt: skip
    assert config.get("q_lora_rank") == (None if case == "deepseek_v2_lite" else 16)
    assert config["n_routed_experts"] == 4 and config["first_k_dense_replace"] == 1


@pytest.mark.parametrize("case", [c for c in CASES if CASES[c][5]])
def test_mtp_layer_is_not_among_the_config_layers(converted: Any, case: str) -> None:
    """The converter counts the MTP layer in block_count and says so in nextn_predict_layers: num_hidden_layers is
    the source config's."""
    *_, files = converted(case)
    ckpt = load(files["f32"])
    arch = ckpt.attributes["gguf.general.architecture"]
    n = CASES[case][2].get("num_hidden_layers", SMALL["num_hidden_layers"])
    assert ckpt.attributes[f"gguf.{arch}.block_count"] == str(n + 1)
    assert ckpt.config is not None and ckpt.config["num_hidden_layers"] == n
    assert ckpt.config["num_nextn_predict_layers"] == 1
    assert any(t.name.startswith(f"blk.{n}.nextn.") for t in ckpt.tensors)


@pytest.mark.parametrize("case", list(CASES))
def test_converter_file_roles_are_the_source_models(converted: Any, case: str) -> None:
    """Each tensor's layer, role and parameter as the role rules read them off its Hugging Face name (as for the same
    model's safetensors file; the router's score correction a buffer of the router, not a bias of `exp_probs_b`)."""
    *_, files = converted(case)
    ckpt = load(files[CASES[case][3][0]])
    as_source = replace(
        ckpt,
        framework="pytorch",
        tensors=tuple(replace(t, name=f"{t.layer}.{t.param}", layer=None, param=None) for t in ckpt.tensors),
    )
    # (a buffer's parameter is the one its source name gives, which a source file's name less its module is not)
    read = [(r.layer, r.role, None if r.role == "buffer" else r.param) for r in match_roles(ckpt)]
    assert read == [(r.layer, r.role, r.param) for r in match_roles(as_source)]
    assert "unmatched" not in {role for _, role, _ in read}


def test_cases_cover_the_tables() -> None:
    """Every architecture tested here has its own hf_name table (Qwen3-MoE and Cohere2-MoE: the llama table, its
    stacked experts in it) and the model type of a family (GLM-4, EXAONE-MoE, HunYuan v3, Laguna, Granite SWA: none, as
    for their safetensors files)."""
    from inspector.families import FAMILIES
    from loaders.gguf import HF_NAMES_BY_ARCH, MODEL_TYPES

    archs = {
        "deepseek2",
        "glm4moe",
        "qwen3next",
        "qwen35",
        "qwen35moe",
        "lfm2",
        "lfm2moe",
        "gpt-oss",
        "nemotron_h",
        "nemotron_h_moe",
        "jamba",
        "glm4",
        "glm-dsa",
        "exaone-moe",
        "hy_v3",
        "laguna",
        "granite_swa",
    }
    assert archs <= set(HF_NAMES_BY_ARCH)
    typed = {model_type for family in FAMILIES for model_type in family.model_types}
    assert {MODEL_TYPES.get(arch, arch) for arch in archs | {"qwen3moe", "cohere2moe"}} <= typed


@pytest.mark.parametrize(("case", "arch"), [("nemotron_h", "nemotron_h"), ("nemotron_h_moe", "nemotron_h_moe")])
def test_nemotron_h_files_are_nemotron_h(converted: Any, case: str, arch: str) -> None:
    """The converter writes a config with MoE keys as nemotron_h_moe, one without as nemotron_h: both are the model type
    nemotron_h, their sizes the config's (the Mamba-2 heads, groups and state from ssm.*)."""
    *_, files = converted(case)
    ckpt = load(files["f32"])
    config = ckpt.config or {}
    assert ckpt.attributes["gguf.general.architecture"] == arch and config["model_type"] == "nemotron_h"
    ssm = (config["mamba_num_heads"], config["n_groups"], config["ssm_state_size"], config["conv_kernel"])
    assert ssm == (8, 2, 8, 4)
    assert ("n_routed_experts" in config) is (arch == "nemotron_h_moe")


def test_gemma3_embedding_is_cut_to_the_tokenizer(converted: Any) -> None:
    """Gemma3Model.modify_tensors keeps the embedding's first rows, as many as the tokenizer's tokens: the config's
    vocab_size is the file's embedding rows (the family sized by it), not the source config's."""
    _, _, trimmed, files = converted("gemma3")
    ckpt = load(files["f32"])
    assert trimmed == 5 * 32
    assert {t.name: t.shape for t in ckpt.tensors}["token_embd.weight"] == (251, 32)
    assert ckpt.config is not None and ckpt.config["vocab_size"] == 251 and ckpt.config["tie_word_embeddings"]


# a tensor of each converted file: (case, GGUF name, its Hugging Face module, its role, its kind)
NAMED = [
    ("jamba", "blk.0.ffn_gate_exps.weight", "model.layers.0.feed_forward.experts", "feedforward_gate", "parameter"),
    ("jamba", "blk.0.ffn_down_exps.weight", "model.layers.0.feed_forward.experts", "feedforward_down", "parameter"),
    ("jamba", "blk.1.ffn_norm.weight", "model.layers.1.pre_ff_layernorm", "norm", "parameter"),
    ("jamba", "blk.0.ssm_dt_norm.weight", "model.layers.0.mamba.dt_layernorm", "norm", "parameter"),
    ("lfm2", "blk.0.shortconv.conv.weight", "model.layers.0.conv.conv", "conv", "parameter"),
    ("lfm2_moe", "blk.0.shortconv.in_proj.weight", "model.layers.0.conv.in_proj", "dense", "parameter"),
    ("lfm2_moe", "blk.1.ffn_up_exps.weight", "model.layers.1.feed_forward.experts", "feedforward_up", "parameter"),
    ("lfm2_moe", "blk.1.attn_q_norm.weight", "model.layers.1.self_attn.q_layernorm", "norm", "parameter"),
    ("lfm2_moe", "blk.2.exp_probs_b.bias", "model.layers.2.feed_forward", "buffer", "buffer"),
    ("glm4", "blk.0.post_attention_norm.weight", "model.layers.0.post_self_attn_layernorm", "norm", "parameter"),
    ("glm4", "blk.0.post_ffw_norm.weight", "model.layers.0.post_mlp_layernorm", "norm", "parameter"),
    ("glm4", "blk.1.ffn_up.weight", "layers.1", "feedforward_up", "parameter"),  # (its fused gate_up_proj)
    ("glm4", "blk.1.ffn_norm.weight", "model.layers.1.post_attention_layernorm", "norm", "parameter"),
    ("nemotron_h_moe_mtp", "blk.4.nextn.eh_proj.weight", "model.layers.4.eh_proj", "dense", "parameter"),
    ("nemotron_h_moe_mtp", "blk.4.post_attention_norm.weight", "model.layers.4.post_attention_layernorm", "norm",
     "parameter"),
    ("nemotron_h_moe_mtp", "blk.4.nextn.hnorm.weight", "model.layers.4.hnorm", "norm", "parameter"),
    ("nemotron_h_moe_mtp", "blk.4.ffn_up_exps.weight", "model.layers.4.mixer.experts", "feedforward_up", "parameter"),
    ("nemotron_h_moe_mtp", "blk.4.exp_probs_b.bias", "model.layers.4.mixer.gate", "buffer", "buffer"),
    ("glm_moe_dsa", "blk.1.indexer.attn_q_b.weight", "model.layers.1.self_attn.indexer.wq_b", "dense", "parameter"),
    ("glm_moe_dsa", "blk.1.indexer.proj.weight", "model.layers.1.self_attn.indexer.weights_proj", "dense", "parameter"),
    ("glm_moe_dsa", "blk.1.indexer.k_norm.bias", "model.layers.1.self_attn.indexer.k_norm", "norm", "parameter"),
    ("glm_moe_dsa", "blk.1.attn_kv_a_norm.weight", "model.layers.1.self_attn.kv_a_layernorm", "norm", "parameter"),
    ("glm_moe_dsa", "blk.1.exp_probs_b.bias", "model.layers.1.mlp.gate", "buffer", "buffer"),
    ("exaone_moe", "blk.1.ffn_up_shexp.weight", "model.layers.1.mlp.shared_experts.up_proj", "dense", "parameter"),
    ("exaone_moe", "blk.1.exp_probs_b.bias", "model.layers.1.mlp.gate", "buffer", "buffer"),
    ("hy_v3", "blk.1.ffn_down_shexp.weight", "model.layers.1.mlp.shared_experts.down_proj", "dense", "parameter"),
    ("hy_v3", "blk.1.exp_probs_b", "model.layers.1.mlp", "buffer", "buffer"),
    ("laguna", "blk.1.attn_gate.weight", "model.layers.1.self_attn.g_proj", "dense", "parameter"),
    ("laguna", "blk.1.exp_probs_b.bias", "model.layers.1.mlp.experts", "moe_router", "parameter"),
    ("granite_swa", "blk.0.attn_sinks.weight", "model.layers.0.self_attn", "learned_tensor", "parameter"),
    ("granitemoe_swa", "blk.0.attn_sinks.weight", "model.layers.0.self_attn", "learned_tensor", "parameter"),
    ("granitemoe_swa", "blk.0.ffn_gate_up_exps.weight", "model.layers.0.block_sparse_moe.experts", "feedforward_up",
     "parameter"),
    ("granitemoe_swa", "blk.0.ffn_down_exps.weight", "model.layers.0.block_sparse_moe.experts", "feedforward_down",
     "parameter"),
    ("granitemoe_swa", "blk.0.ffn_gate_inp.weight", "model.layers.0.block_sparse_moe.router", "dense", "parameter"),
    ("granitemoe_swa", "blk.0.ffn_up_shexp.weight", "model.layers.0.shared_mlp.input_linear", "dense", "parameter"),
    ("glm", "blk.1.ffn_up.weight", "layers.1", "feedforward_up", "parameter"),
    # (HRM's blocks: its L stack's layers, then its H stack's, `hrm_text.hrm.layers_per_stack` each)
    ("hrm_text", "blk.1.attn_gate.weight", "model.L_module.layers.1.self_attn.gate_proj", "dense", "parameter"),
    ("hrm_text", "blk.2.attn_q.weight", "H_module.layers.0", "attention_query", "parameter"),
    ("hrm_text", "blk.3.ffn_down.weight", "H_module.layers.1", "feedforward_down", "parameter"),
    ("hrm_text", "hrm.z_l_init", "model", "initial_state", "parameter"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "name", "layer", "role", "kind"), NAMED)
def test_converter_tensor_reads_as_its_source_module(
    converted: Any, case: str, name: str, layer: str, role: str, kind: str
) -> None:
    """One tensor of a converted file: the module of the source model it is, its role and whether it is a parameter (the
    router's score correction a buffer, as transformers registers it)."""
    *_, files = converted(case)
    ckpt = load(files["f32"])
    found = {r.name: r for r in match_roles(ckpt)}[name]
    assert (found.layer, found.role) == (layer, role)
    assert {t.name: t.kind.value for t in ckpt.tensors}[name] == kind


def test_nemotron_h_mtp_module_is_explained(converted: Any) -> None:
    """Nemotron 3's MTP module, written by the converter as one layer after the last (its attention and its MoE
    mixer): the family's row for that layer says what it is, the note what num_parameters() prints without it."""
    n_source, n_mtp, _, files = converted("nemotron_h_moe_mtp")
    exp = inspect(files["f32"]).expectation
    assert exp is not None
    row = {r.layer: r for r in exp.layers}["model.layers.4"]
    assert row.status == "ok" and row.explanation.startswith("the multi-token-prediction module")
    assert row.found == row.expected == n_mtp == 16_672
    assert any(f"so its num_parameters() prints {n_source:,}" in note for note in exp.notes), exp.notes


def test_jamba_file_counts_as_the_source_model(converted: Any) -> None:
    """Jamba's GGUF holds num_parameters() elements, every one a parameter: the converter stacks the experts, squeezes
    conv1d and writes A_log as -exp(A_log), none of which changes a count."""
    n_source, _, _, files = converted("jamba")
    ckpt = load(files["f32"])
    assert sum(t.n_elements for t in ckpt.tensors) == ckpt.n_parameters == n_source == 104_420
