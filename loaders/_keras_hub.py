"""keras-hub presets: the `config.json` and `metadata.json` that `backbone.save_to_preset(dir)` writes beside
`model.weights.h5` (and the backbone config a `.keras` archive holds), read as data, bounded.

`config.json` is Keras's serialised backbone (`module`, `class_name`, `config`, `registered_name`
'keras_hub>GemmaBackbone'); `metadata.json` has `keras_hub_version` and `parameter_count`, the backbone's
`count_params()` when it was saved: the file's own count must equal it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from inspector.hfconfig import json_beside
from inspector.probe import Probe
from inspector.records import Finding, Severity, TensorInfo, TensorKind, elements
from inspector.recordtype import replace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CONFIG, METADATA = "config.json", "metadata.json"
REGISTERED_PREFIX = "keras_hub>"
# Layers a backbone class builds with trainable=False (keras_hub/src/models/*/*_backbone.py): their variables are
# parameters Keras counts and never trains. The backbone config lists no layers, so its class says which.
FROZEN_LAYERS: dict[str, frozenset[str]] = {
    "WhisperBackbone": frozenset({"encoder_position_embedding"}),
}


# What a backbone's config words say of its file, where the file shows it: the token embedding's first variable
# (`vocabulary_size` x `hidden_dim`, a layer named `token_embedding` at any depth), and `num_layers`, the
# numbered blocks of the backbone (the first numbered part of a layer's path: `decoder_block_0`, `transformer_layer_1`,
# DINOv2's `encoder/layers_0`...; the most numerous kind: an encoder-decoder has num_layers of each)
TOKEN_EMBEDDING = "token_embedding"
NUMBERED = re.compile(r"(?P<kind>.+)_(?P<index>\d+)")
# Backbone class -> the words its files are checked against: every class bench/sweep_keras_hub.py builds whose files
# show them so at 2 and at 3 layers (others factor their embedding, as ALBERT and ELECTRA, name it otherwise, or
# number their blocks per stage)
_ALL = ("vocabulary_size", "hidden_dim", "num_layers")
CONFIG_CHECKS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(
        (
            *("BartBackbone", "BertBackbone", "BloomBackbone", "DebertaV3Backbone", "DistilBertBackbone"),
            *("ESM2Backbone", "ESMBackbone", "FNetBackbone", "FalconBackbone", "GPT2Backbone", "GPTNeoXBackbone"),
            *("Gemma3Backbone", "Gemma4Backbone", "GemmaBackbone", "GptOssBackbone", "Llama3Backbone"),
            *("LlamaBackbone", "MistralBackbone", "MixtralBackbone", "OPTBackbone", "PaliGemmaBackbone"),
            *("Phi3Backbone", "Qwen2Backbone", "Qwen3Backbone", "Qwen3MoeBackbone", "Qwen3_5Backbone"),
            *("Qwen3_5MoeBackbone", "QwenBackbone", "QwenMoeBackbone", "RobertaBackbone", "RoformerV2Backbone"),
            *("T5Backbone", "WhisperBackbone", "XLMRobertaBackbone"),
        ),
        _ALL,
    ),
    **dict.fromkeys(("DINOV2Backbone", "DINOV3Backbone", "MiTBackbone", "XLNetBackbone"), ("num_layers",)),
    "AlbertBackbone": ("vocabulary_size",),
    "MoonshineBackbone": ("vocabulary_size", "hidden_dim"),
    "RWKV7Backbone": ("vocabulary_size", "num_layers"),
}


def backbone_class(config: Any) -> str | None:
    """The keras-hub class a serialised Keras object names ('GemmaBackbone'), or None when it is not keras-hub's."""
    if not isinstance(config, dict):
        return None
    registered, cls = config.get("registered_name"), config.get("class_name")
    if isinstance(registered, str) and registered.startswith(REGISTERED_PREFIX) and isinstance(cls, str):
        return cls
    return None


def preset_beside(probe: Probe) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(config, metadata) of the keras-hub preset the probed weights file is part of, or None."""
    config = json_beside(probe, CONFIG)
    if backbone_class(config) is None:
        return None
    return config or {}, json_beside(probe, METADATA) or {}


def frozen(tensors: Sequence[TensorInfo], cls: str | None) -> list[TensorInfo]:
    """The tensors, those of the layers backbone class `cls` freezes made not trainable."""
    layers = FROZEN_LAYERS.get(cls or "", frozenset())
    return [replace(t, trainable=False) if t.trainable and t.layer in layers else t for t in tensors]


def attributes(cls: str, metadata: Mapping[str, Any]) -> dict[str, str]:
    """What the report shows of the preset."""
    out = {"keras_hub.class_name": cls}
    for key in ("keras_hub_version", "parameter_count"):
        if key in metadata:
            out[f"keras_hub.{key}"] = str(metadata[key])
    return out


def count_findings(metadata: Mapping[str, Any], tensors: Iterable[TensorInfo]) -> list[Finding]:
    """COUNT_MISMATCH when the file does not hold the parameter count metadata.json says the backbone had."""
    stated = metadata.get("parameter_count")
    if not isinstance(stated, int) or isinstance(stated, bool):
        return []
    held = elements(t for t in tensors if t.kind is TensorKind.PARAMETER and t.alias_of is None)
    if held == stated:
        return []
    message = f"metadata.json beside the file says the backbone had {stated:,} parameters, the file holds {held:,}"
    return [Finding("COUNT_MISMATCH", Severity.WARNING, message, expected=stated, observed=held)]


def file_facts(tensors: Iterable[TensorInfo]) -> dict[str, tuple[int, str]]:
    """What the file shows of the words `CONFIG_CHECKS` names: word -> (value, where the file shows it)."""
    facts: dict[str, tuple[int, str]] = {}
    blocks: dict[str, set[int]] = defaultdict(set)
    for t in tensors:
        layer = t.layer or ""
        if (layer == TOKEN_EMBEDDING or layer.endswith("/" + TOKEN_EMBEDDING)) and len(t.shape) == 2:
            where = f"{layer!r} of {t.shape[0]} x {t.shape[1]}"
            facts.setdefault("vocabulary_size", (t.shape[0], where))
            facts.setdefault("hidden_dim", (t.shape[1], where))
        numbered = next(filter(None, map(NUMBERED.fullmatch, layer.split("/"))), None)  # (DINOv2's `encoder/layers_0`)
        if numbered:
            blocks[numbered["kind"]].add(int(numbered["index"]))
    if blocks:
        kind, indices = max(blocks.items(), key=lambda item: len(item[1]))
        facts["num_layers"] = (len(indices), f"{len(indices)} numbered layers {kind}_N")
    return facts


def config_findings(config: Mapping[str, Any], tensors: Sequence[TensorInfo]) -> list[Finding]:
    """COUNT_MISMATCH for each word of a keras-hub backbone config (`CONFIG_CHECKS`) the file does not bear out."""
    words = CONFIG_CHECKS.get(backbone_class(config) or "", ())
    inner = config.get("config")
    if not words or not isinstance(inner, dict):
        return []
    facts, out = file_facts(tensors), []
    for word in words:
        stated, (found, where) = inner.get(word), facts.get(word, (None, "nothing"))
        if stated != found:
            message = f"the backbone config says {word} {stated!r}, the file holds {where}"
            out.append(Finding("COUNT_MISMATCH", Severity.WARNING, message, expected=stated, observed=found))
    return out
