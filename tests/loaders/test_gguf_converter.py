"""GGUF as llama.cpp's converter writes it: committed samples `convert_hf_to_gguf.py` made (sample_models/
gguf_converter, see its make script) against gguf-py's GGUFReader and the source model, and the `hf_name` tables
of more architectures against gguf-py's own name map."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from inspector.records import Severity, TensorKind
from inspector.recordtype import replace
from inspector.registry import load
from inspector.report import inspect
from inspector.roles import match_roles
from loaders.gguf import HF_NAMES_BY_ARCH, MODEL_TYPE_MARKS, MODEL_TYPES, NOT_PARAMETERS, _config, hf_name, names_table
from tests.loaders.test_gguf import _compare_with_reader

gguf = pytest.importorskip("gguf")

SAMPLES_DIR = Path(__file__).resolve().parents[2] / "sample_models" / "gguf_converter"
MANIFEST: dict[str, Any] = json.loads((SAMPLES_DIR / "manifest.json").read_text())
# what the inspector's expectation is for each sample: the family and where its sizes come from
EXPECTED = {
    "qwen3-q8_0.gguf": ("llama", "config"),
    "gptneox-f16.gguf": ("gpt_neox-lm_head", "config"),
    "mt5-q8_0.gguf": ("t5", "config"),
    "mamba-f16.gguf": ("mamba", "config"),
    "mixtral-q8_0.gguf": ("mixtral-stacked", "config"),  # written as 'llama': its stacked experts say mixtral
    "olmoe-q8_0.gguf": ("olmoe-stacked", "config"),
    "granitemoeshared-f16.gguf": ("granitemoe-stacked", "config"),  # written as 'granitemoe'
    "llama4-q8_0.gguf": ("llama4-stacked", "config"),  # a dense layer and a MoE layer
    "phi2-f16.gguf": ("phi", "config"),  # its FFN and k/v heads read off the shapes, not the converter's keys
}


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_converter_output_equals_gguf_reader(name: str) -> None:
    """Names, shapes, types, offsets and bytes as GGUFReader reads them (now, and when the sample was made)."""
    ckpt = _compare_with_reader(SAMPLES_DIR / name)
    entry = MANIFEST[name]
    assert {t.name: [list(t.shape), t.dtype, t.offset, t.nbytes] for t in ckpt.tensors} == entry["tensors"]
    assert sum(t.n_elements for t in ckpt.tensors) == entry["n_elements"]


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_converter_output_counts_like_the_source_model(name: str) -> None:
    """The source model's num_parameters(), no warning, the formula equal to the file, every tensor's role known."""
    entry = MANIFEST[name]
    report = inspect(SAMPLES_DIR / name)
    ckpt = report.checkpoint
    assert ckpt.n_parameters == entry["hf_num_parameters"]
    assert ckpt.n_parameters == entry["n_elements"] - sum(
        t.n_elements for t in ckpt.tensors if t.name in NOT_PARAMETERS
    )
    assert [f.message for f in report.findings if f.severity is not Severity.INFO] == []
    exp = report.expectation
    assert exp is not None and (exp.architecture, exp.source) == EXPECTED[name]
    assert exp.total == exp.found == ckpt.n_parameters and not exp.anomalies
    assert not [r.name for r in report.roles if r.role == "unmatched"]
    assert not [t for t in ckpt.tensors if t.kind is not TensorKind.PARAMETER]


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_converter_output_roles_are_the_source_models(name: str) -> None:
    """Each tensor's layer, role and parameter are what the role rules read off its Hugging Face name, as for the
    same model's safetensors file (Mamba's A_log and D included; a layer is never split between a weight read off
    its GGUF name and a bias read off its HF name)."""
    ckpt = load(SAMPLES_DIR / name)
    as_source = replace(
        ckpt,
        framework="pytorch",
        tensors=tuple(replace(t, name=f"{t.layer}.{t.param}", layer=None, param=None) for t in ckpt.tensors),
    )
    read = [(r.layer, r.role, r.param) for r in match_roles(ckpt)]
    assert read == [(r.layer, r.role, r.param) for r in match_roles(as_source)]
    assert "unmatched" not in {role for _, role, _ in read}


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_converter_output_names_and_config_are_the_source_models(name: str) -> None:
    """Every tensor's Hugging Face name is the state-dict key it was converted from; the config's sizes are the
    source config.json's (bos/eos ids are the tokenizer's, not compared)."""
    entry = MANIFEST[name]
    ckpt = inspect(SAMPLES_DIR / name).checkpoint
    table = names_table(entry["architecture"], {t.name for t in ckpt.tensors})
    keys = entry["hf_keys"]
    # the converter stacks each layer's experts (transformers 5 holds them fused) and splits Granite's fused gate and
    # up projections in two: no one state-dict key each, the names of the families' "-stacked" layouts (and Granite's
    # router, whose hub name transformers 5 changes in memory, keeps the hub's)
    stacked = [t for t in ckpt.tensors if t.name not in keys]
    assert all(
        re.fullmatch(r"blk\.\d+\.ffn_(?:(?:gate|up|down)_(?:exps|shexp)|gate_inp)\.weight", t.name) for t in stacked
    )
    made = (
        r"model\.layers\.\d+\.(?:(?:mlp|feed_forward)\.experts\.(?:gate|up|down)_proj|shared_mlp\.(?:gate|up)_proj"
        r"|block_sparse_moe\.router\.layer)\.weight"
    )
    for t in ckpt.tensors:
        name = hf_name(t.name, table)
        assert name == f"{t.layer}.{t.param}", t.name
        if t.name in keys:
            assert name == keys[t.name], t.name
        else:
            assert re.fullmatch(made, name or ""), name
    assert ckpt.config is not None
    shared = {k for k in entry["hf_config"] if k in ckpt.config and not k.endswith("_token_id")}
    assert len(shared) >= (1 if entry["architecture"] == "t5" else 4)  # T5's config names its sizes d_model, d_ff...
    for key in shared:
        assert math.isclose(ckpt.config[key], entry["hf_config"][key], rel_tol=1e-6), key
    hidden, heads = ckpt.config.get("hidden_size"), ckpt.config.get("num_attention_heads")
    if hidden and heads and "head_dim" not in entry["hf_config"]:
        assert ckpt.config.get("head_dim", hidden // heads) == hidden // heads  # not the rotary dims (gptneox: 2)


# transformers model type, class, gguf-py MODEL_ARCH, hf_name table; built on the meta device (names only)
TABLES = [
    ("gpt_bigcode", "GPTBigCodeForCausalLM", "STARCODER", "starcoder"),
    ("starcoder2", "Starcoder2ForCausalLM", "STARCODER2", "starcoder2"),
    ("olmo2", "Olmo2ForCausalLM", "OLMO2", "olmo2"),
    ("exaone4", "Exaone4ForCausalLM", "EXAONE4", "exaone4"),
    ("seed_oss", "SeedOssForCausalLM", "SEED_OSS", "seed_oss"),
    ("phi", "PhiForCausalLM", "PHI2", "phi2"),
    ("gpt_neox", "GPTNeoXForCausalLM", "GPTNEOX", "gptneox"),
    ("bloom", "BloomForCausalLM", "BLOOM", "bloom"),
    ("falcon", "FalconForCausalLM", "FALCON", "falcon"),
    ("falcon", "FalconForCausalLM", "FALCON", "falcon-new"),
    ("bert", "BertModel", "BERT", "bert"),
    ("mamba", "MambaForCausalLM", "MAMBA", "mamba"),
    ("t5", "T5ForConditionalGeneration", "T5", "t5"),
    ("mt5", "MT5ForConditionalGeneration", "T5", "t5-gated"),
    ("apertus", "ApertusForCausalLM", "APERTUS", "apertus"),
    ("minicpm3", "MiniCPM3ForCausalLM", "MINICPM3", "minicpm3"),
    ("qwen2_moe", "Qwen2MoeForCausalLM", "QWEN2MOE", "qwen2moe"),
    ("ernie4_5_moe", "Ernie4_5_MoeForCausalLM", "ERNIE4_5_MOE", "ernie4_5-moe"),
    ("afmoe", "AfmoeForCausalLM", "AFMOE", "afmoe"),
    ("gpt_oss", "GptOssForCausalLM", "GPT_OSS", "gpt-oss"),
    ("llama4_text", "Llama4ForCausalLM", "LLAMA4", "llama4"),
    ("jamba", "JambaForCausalLM", "JAMBA", "jamba"),
    ("lfm2", "Lfm2ForCausalLM", "LFM2", "lfm2"),
    ("granitemoeshared", "GraniteMoeSharedForCausalLM", "GRANITE_MOE", "granitemoe"),
    ("qwen3_next", "Qwen3NextForCausalLM", "QWEN3NEXT", "qwen3next"),
    ("qwen3_5_text", "Qwen3_5ForCausalLM", "QWEN35", "qwen35"),
    ("deepseek_v3", "DeepseekV3ForCausalLM", "DEEPSEEK2", "deepseek2"),
    ("deepseek_v2", "DeepseekV2ForCausalLM", "DEEPSEEK2", "deepseek2"),
    ("glm4_moe", "Glm4MoeForCausalLM", "GLM4_MOE", "glm4moe"),
    ("glm_moe_dsa", "GlmMoeDsaForCausalLM", "GLM_DSA", "glm-dsa"),
    ("exaone_moe", "ExaoneMoeForCausalLM", "EXAONE_MOE", "exaone-moe"),
    ("glm", "GlmForCausalLM", "CHATGLM", "chatglm"),
]
SMALL = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, vocab_size=64,
             d_model=32, num_layers=2, num_heads=4, d_ff=64, d_kv=8, n_embd=32, n_layer=2, n_head=4,
             pad_token_id=0)  # fmt: skip
NEW_LAYOUT = {"falcon-new": {"new_decoder_architecture": True, "num_kv_heads": 2}}  # Falcon 40B's layout


@pytest.mark.parametrize(("model_type", "cls", "model_arch", "table"), TABLES)
def test_hf_name_tables_invert_gguf_py_mapping(model_type: str, cls: str, model_arch: str, table: str) -> None:
    """Each state-dict key gguf-py's name map turns into a GGUF name comes back from `hf_name`."""
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    fields = transformers.AutoConfig.for_model(model_type).to_dict()
    words = {k: v for k, v in SMALL.items() if k in fields} | NEW_LAYOUT.get(table, {})
    config = transformers.AutoConfig.for_model(model_type, **words)
    with torch.device("meta"):
        keys = list(getattr(transformers, cls)(config).state_dict())
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH[model_arch], 2)
    mapped = {key: names.get_name(key, try_suffixes=(".weight", ".bias")) for key in keys}
    arch = gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH[model_arch]]
    assert names_table(arch, set(mapped.values())) == table  # the file's own tensors pick the variant
    # experts stacked into one tensor per projection (`ffn_*_exps`) have no one-to-one name: hf_name gives None
    mapped = {key: name for key, name in mapped.items() if name is not None and "_exps" not in name}
    assert len(mapped) >= 10, mapped
    assert {key: hf_name(name, table) for key, name in mapped.items()} == {key: key for key in mapped}
    assert table in HF_NAMES_BY_ARCH  # its own table, not the llama fallback


def test_model_types_are_transformers_and_gguf_py_names() -> None:
    """Each MODEL_TYPES row maps one of gguf-py's architecture names to one of transformers' model types: the installed
    gguf-py's, or the one of llama.cpp's converter the tests run (`cohere2moe` is newer than gguf 0.19)."""
    from tests.loaders.test_gguf_llama_cpp import CONVERTER

    auto = pytest.importorskip("transformers.models.auto.configuration_auto")
    marked = {model_type for marks in MODEL_TYPE_MARKS.values() for _, model_type in marks}
    assert set(MODEL_TYPES.values()) | marked <= set(auto.CONFIG_MAPPING_NAMES)
    archs = set(gguf.MODEL_ARCH_NAMES.values())
    constants = CONVERTER / "gguf-py" / "gguf" / "constants.py"
    if constants.is_file():
        archs |= set(re.findall(r'MODEL_ARCH\.\w+: +"([^"]+)"', constants.read_text()))
    unknown = (set(MODEL_TYPES) | set(MODEL_TYPE_MARKS)) - archs
    if unknown and not constants.is_file():
        pytest.skip(f"{sorted(unknown)}: not in the installed gguf-py, and llama.cpp's own is not at {CONVERTER}")
    assert not unknown


@pytest.mark.parametrize(("model_type", "cls", "marked"), [("umt5", "UMT5ForConditionalGeneration", True),
                                                          ("t5", "T5ForConditionalGeneration", False)])  # fmt: skip
def test_umt5_is_told_from_t5_by_the_tensor_it_has(model_type: str, cls: str, marked: bool) -> None:
    """The tensor that marks UMT5 is gguf-py's name for its second block's relative bias, which T5 has not."""
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    fields = transformers.AutoConfig.for_model(model_type).to_dict()
    config = transformers.AutoConfig.for_model(model_type, **{k: v for k, v in SMALL.items() if k in fields})
    with torch.device("meta"):
        keys = list(getattr(transformers, cls)(config).state_dict())
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.T5, 2)
    converted = {names.get_name(key, try_suffixes=(".weight", ".bias")) for key in keys}
    ((tensor, marks),) = MODEL_TYPE_MARKS["t5"]
    assert (tensor in converted) is marked and marks == "umt5"
    ckpt_config = _config({"general.architecture": "t5"}, {n for n in converted if n}, {})
    assert ckpt_config["model_type"] == ("umt5" if marked else "t5")


def test_sizes_the_converter_misstates_for_phi2_are_read_off_the_shapes() -> None:
    """Phi2Model writes the FFN length as 4 x n_embd and the key/value heads as the heads, whatever PhiConfig says:
    the sample's model (FFN 64, two key/value heads of 8) is sized by its shapes, and no difference is warned."""
    entry = MANIFEST["phi2-f16.gguf"]
    report = inspect(SAMPLES_DIR / "phi2-f16.gguf")
    attributes = report.checkpoint.attributes
    assert (attributes["gguf.phi2.feed_forward_length"], attributes["gguf.phi2.attention.head_count_kv"]) == (
        "128",
        "4",
    )
    assert (entry["hf_config"]["intermediate_size"], entry["hf_config"]["num_key_value_heads"]) == (64, 2)
    exp = report.expectation
    assert exp is not None and exp.matches
    h = exp.hyperparameters
    assert (h["feedforward"], h["kv_dim"], h["kv_heads"]) == (64, 16, 2)  # (the heads the k/v shape holds, not 4)


STACKED = sorted(name for name, (family, _) in EXPECTED.items() if family.endswith("-stacked"))


@pytest.mark.parametrize("name", STACKED)
def test_stacked_experts_have_their_projections_roles(name: str) -> None:
    """The experts the converter stacks one tensor per projection (Mixtral's, OLMoE's, Granite MoE's, Llama 4's) take
    the roles of their projections (gate, up, down) in the layer the family places them, as Jamba's and LFM2-MoE's do;
    the families' bare tensors said only `learned_tensor` (Llama 4's stated its roles, the others did not)."""
    report = inspect(SAMPLES_DIR / name)
    exp = report.expectation
    assert exp is not None and exp.architecture == EXPECTED[name][0]
    stacked = {r.name: (r.layer, r.role) for r in report.roles if "_exps." in r.name}
    blocks = sorted({int(n.split(".")[1]) for n in stacked})
    assert blocks and stacked == {
        f"blk.{i}.ffn_{p}_exps.weight": (f"model.layers.{i}", f"feedforward_{p}")
        for i in blocks
        for p in ("gate", "up", "down")
    }
