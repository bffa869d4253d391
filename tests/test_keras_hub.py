"""keras-hub presets (`backbone.save_to_preset`) and `.keras` saves of keras-hub backbones, written by the library
in tmp_path at a tiny size: counts, trainable split and no warning, as `count_params()` says
(bench/sweep_keras_hub.py runs every backbone class)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from inspector.records import Severity, TensorKind
from inspector.report import inspect

keras_hub = pytest.importorskip("keras_hub")
# keras's torch backend on save
pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")

SMALL = {"vocabulary_size": 100, "num_layers": 2, "hidden_dim": 32, "intermediate_dim": 64}
DECODER = SMALL | {"num_query_heads": 2, "num_key_value_heads": 1}
ENCODER = SMALL | {"num_heads": 2}
IMAGE = {"num_layers": 2, "num_heads": 2, "hidden_dim": 32}
BACKBONES: dict[str, dict[str, Any]] = {
    "GemmaBackbone": DECODER | {"head_dim": 16},  # a decoder LLM
    "LlamaBackbone": DECODER,
    "BertBackbone": ENCODER,  # an encoder
    "ViTBackbone": IMAGE | {"mlp_dim": 64, "image_shape": (32, 32, 3), "patch_size": 4},  # a name in every block
    "DINOV2Backbone": IMAGE | {"intermediate_dim": 64, "patch_size": 14, "image_shape": (28, 28, 3)},  # a frozen var
    "WhisperBackbone": ENCODER,  # a frozen layer, told by the backbone class
}


def _check(path: Path, model: Any) -> None:
    report = inspect(path)
    ckpt = report.checkpoint
    assert ckpt.n_parameters == model.count_params()
    trainable = sum(t.n_elements for t in ckpt.unique(TensorKind.PARAMETER) if t.trainable)
    assert trainable == sum(math.prod(v.shape) for v in model.trainable_weights)
    assert [f.code for f in report.findings if f.severity is not Severity.INFO] == []
    assert report.expectation is not None and report.expectation.matches


@pytest.mark.parametrize("name", sorted(BACKBONES))
def test_preset_counts_as_keras(tmp_path: Path, name: str) -> None:
    model = getattr(keras_hub.models, name)(**BACKBONES[name])
    model.save_to_preset(str(tmp_path))
    _check(tmp_path / "model.weights.h5", model)
    assert inspect(tmp_path / "model.weights.h5").checkpoint.attributes["keras_hub.class_name"] == name


def test_keras_archive_of_a_backbone(tmp_path: Path) -> None:
    model = keras_hub.models.WhisperBackbone(**BACKBONES["WhisperBackbone"])
    model.save(tmp_path / "whisper.keras")
    _check(tmp_path / "whisper.keras", model)


def test_layers_named_after_their_holders(tmp_path: Path) -> None:
    """ViT's blocks each hold an `mlp` with a `dense_1`: each is its own layer, named as Keras's variable paths."""
    model = keras_hub.models.ViTBackbone(**BACKBONES["ViTBackbone"])
    model.save_to_preset(str(tmp_path))
    layers = {t.layer for t in inspect(tmp_path / "model.weights.h5").checkpoint.tensors}
    paths = {v.path.rpartition("/")[0] for v in model.weights}
    assert {layer for layer in layers if layer.endswith("mlp/dense_1")} == {
        p for p in paths if p.endswith("mlp/dense_1")
    }
    assert len([p for p in paths if p.endswith("mlp/dense_1")]) == 2


def test_metadata_parameter_count_is_checked(tmp_path: Path) -> None:
    model = keras_hub.models.BertBackbone(**BACKBONES["BertBackbone"])
    model.save_to_preset(str(tmp_path))
    metadata = json.loads((tmp_path / "metadata.json").read_text())
    assert metadata["parameter_count"] == model.count_params()
    metadata["parameter_count"] += 1
    (tmp_path / "metadata.json").write_text(json.dumps(metadata))
    findings = inspect(tmp_path / "model.weights.h5").findings
    assert [(f.code, f.expected, f.observed) for f in findings if f.severity is Severity.WARNING] == [
        ("COUNT_MISMATCH", model.count_params() + 1, model.count_params())
    ]


@pytest.mark.parametrize("word", ["num_layers", "vocabulary_size", "hidden_dim"])
def test_a_wrong_backbone_config_warns(tmp_path: Path, word: str) -> None:
    """The preset's config.json states the architecture: a word the file does not bear out is a warning (the
    parametrized test above: the right one is not)."""
    model = keras_hub.models.LlamaBackbone(**BACKBONES["LlamaBackbone"])
    model.save_to_preset(str(tmp_path))
    config = json.loads((tmp_path / "config.json").read_text())
    config["config"][word] += 1
    (tmp_path / "config.json").write_text(json.dumps(config))
    findings = inspect(tmp_path / "model.weights.h5").findings
    warned = [(f.code, f.expected, f.observed) for f in findings if f.severity is Severity.WARNING]
    assert warned == [("COUNT_MISMATCH", BACKBONES["LlamaBackbone"][word] + 1, BACKBONES["LlamaBackbone"][word])]


@pytest.mark.parametrize("tied", [True, False])
def test_token_embedding_and_untied_head_roles(tmp_path: Path, tied: bool) -> None:
    """ReversibleEmbedding holds the embedding, and its own output head when untied."""
    model = keras_hub.models.LlamaBackbone(**BACKBONES["LlamaBackbone"], tie_word_embeddings=tied)
    model.save_to_preset(str(tmp_path))
    report = inspect(tmp_path / "model.weights.h5")
    roles = {(r.layer, r.role) for r in report.roles}
    head = {v.path.rpartition("/")[0] for v in model.weights if v.path.endswith("reverse_embeddings")}
    assert head == (set() if tied else {"token_embedding"})
    assert ("token_embedding", "embedding") in roles
    assert (("token_embedding", "output_head") in roles) is not tied
    assert report.checkpoint.n_parameters == model.count_params()


ATTENTION_ROLES = {"query": "attention_query", "key": "attention_key", "value": "attention_value",
                   "attention_output": "attention_output"}  # fmt: skip


@pytest.mark.parametrize("name", sorted(BACKBONES))
def test_every_variable_has_its_role(tmp_path: Path, name: str) -> None:
    """The layers a block holds as attributes (`_feedforward_intermediate_dense`, `query_dense`, `pre_attention_norm`,
    `fc1`...), which no config lists, have their variables' names, so their roles (they were `var0`, `var1`: 223
    unmatched variables in these six backbones); a MultiHeadAttention's projections are the attention's, not
    convolutions (their kernels are 3-d); each variable is named as Keras's own path names it (DINOv2's layers were
    named without the `encoder` whose `layers` list holds them, and its embedding's third variable `register_tokens`
    for `interpolated_position_embeddings`: it holds a mask token, no register tokens, by default)."""
    model = getattr(keras_hub.models, name)(**BACKBONES[name])
    model.save_to_preset(str(tmp_path))
    report = inspect(tmp_path / "model.weights.h5")
    assert [r.name for r in report.roles if r.role == "unmatched"] == []
    for r in report.roles:
        own = r.layer.rpartition("/")[2]
        if own in ATTENTION_ROLES:
            assert r.role == ATTENTION_ROLES[own], r
    named = {f"{t.layer}/{t.param}" for t in report.checkpoint.tensors}
    assert named == {v.path for v in model.weights}


@pytest.mark.parametrize("words", [{"num_register_tokens": 4}, {"use_mask_token": False}])
def test_dinov2_archive_and_register_tokens(tmp_path: Path, words: dict[str, Any]) -> None:
    """DINOv2 with register tokens (and its mask token), and with neither, as a preset and as a `.keras` archive (whose
    config lists the encoder as a layer: its `layers` list is the encoder's, not a model's): counts, trainable split
    (the frozen position table beside its trained interpolated copy) and names as Keras's."""
    model = keras_hub.models.DINOV2Backbone(**BACKBONES["DINOV2Backbone"], **words)
    model.save_to_preset(str(tmp_path))
    model.save(tmp_path / "dinov2.keras")
    for path in (tmp_path / "model.weights.h5", tmp_path / "dinov2.keras"):
        _check(path, model)
        named = {f"{t.layer}/{t.param}" for t in inspect(path).checkpoint.tensors}
        assert named == {v.path for v in model.weights}


# Backbones whose layers' variables were `unmatched` (488 over the 60 backbones bench/sweep_keras_hub.py builds, saved
# as a preset and as .keras): keras-hub's own classes (XLNet's encoder, DeiT's embeddings, RWKV's mixers, GPT-OSS's
# and Mixtral's stacked experts, Swin's window attention, Qwen3.5's linear attention) and the layers held under
# attributes that say nothing (MiT's `q`, `sr`, `dwconv`: their own names, `dense_1`, `conv2d_1`, say the class)
UNMATCHED_BEFORE: dict[str, dict[str, Any]] = {
    "MiTBackbone": {"image_shape": (32, 32, 3), "layerwise_depths": [1, 1], "num_layers": 2, "hidden_dims": [16, 32],
                    "layerwise_num_heads": [1, 2], "layerwise_sr_ratios": [2, 1], "max_drop_path_rate": 0.1,
                    "layerwise_patch_sizes": [7, 3], "layerwise_strides": [4, 2]},
    "RWKV7Backbone": {"hidden_size": 64, "head_size": 16, "num_layers": 2, "vocabulary_size": 100,
                      "intermediate_dim": 64},
    "XLNetBackbone": ENCODER,
    "GptOssBackbone": DECODER | {"num_experts": 4, "head_dim": 16},
    "MixtralBackbone": DECODER | {"num_experts": 4},
    "DeiTBackbone": IMAGE | {"image_shape": (32, 32, 3), "patch_size": 4, "intermediate_dim": 64},
    "SwinTransformerBackbone": {"image_shape": (32, 32, 3), "embed_dim": 16, "depths": [2, 2], "num_heads": [2, 2],
                                "window_size": 2, "patch_size": 2},
    "Qwen3_5MoeBackbone": DECODER | {"head_dim": 16, "moe_intermediate_dim": 16, "num_experts": 4, "top_k": 2,
                                     "shared_expert_intermediate_size": 16},
}  # fmt: skip
# a variable of each and the role it has now
ROLES_NOW = {
    "x_r": "learned_tensor", "v0": "learned_tensor", "time_mix_k": "learned_tensor",
    "segment_encoding": "learned_tensor",
    "mask_emb": "learned_tensor", "sinks": "learned_tensor", "gate_up_proj": "feedforward_up",
    "down_proj_bias": "feedforward_down", "expert_feedforward_gate_dense": "feedforward_gate",
    "expert_feedforward_intermediate_dense": "feedforward_up", "distillation_token": "learned_tensor",
    "position_embedding": "position_embedding", "relative_position_bias_table": "position_embedding",
    "A_log": "learned_tensor", "conv1d_kernel": "conv",
}  # fmt: skip


@pytest.mark.filterwarnings("ignore::UserWarning")  # (RWKV's pure-Python fallback, Swin's input shapes)
@pytest.mark.parametrize("name", sorted(UNMATCHED_BEFORE))
def test_keras_hub_classes_variables_named_and_roled(tmp_path: Path, name: str) -> None:
    """Every variable of these backbones' presets has its name as Keras's own `variable.path` and a role (`KERAS3_VARS`
    by class, attribute or own name; `KERAS3_ATTRIBUTE_VARS`); counts and trainable split as Keras's."""
    model = getattr(keras_hub.models, name)(**UNMATCHED_BEFORE[name])
    model.save_to_preset(str(tmp_path))
    path = tmp_path / "model.weights.h5"
    _check(path, model)
    report = inspect(path)
    assert [r.name for r in report.roles if r.role == "unmatched"] == []
    assert {f"{t.layer}/{t.param}" for t in report.checkpoint.tensors} == {v.path for v in model.weights}
    roles = {t.param: r.role for t, r in zip(report.checkpoint.tensors, report.roles, strict=True)}
    assert {p: roles[p] for p in ROLES_NOW if p in roles} == {p: ROLES_NOW[p] for p in ROLES_NOW if p in roles}
    assert set(roles) & set(ROLES_NOW) or name == "MiTBackbone"
