"""The transformers `config.json` beside a weights file (or its shard index), or the PEFT `adapter_config.json`
beside an adapter: read as data, bounded."""

from __future__ import annotations

import os
from types import MappingProxyType

from inspector.errors import InspectorError
from inspector.jsontext import loads
from inspector.probe import Probe
from inspector.records import Checkpoint, TensorInfo
from inspector.recordtype import replace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

MAX_CONFIG_BYTES = 1 << 20
CONFIG_NAME = "config.json"


def model_type(config: Mapping[str, Any] | None) -> str | None:
    """What a config says the model is: transformers' `model_type`, or the model class a diffusers config names
    (`_class_name`, beside `_diffusers_version`)."""
    if not config:
        return None
    stated = config.get("model_type")
    if stated is None and "_diffusers_version" in config:
        stated = config.get("_class_name")
    return stated if isinstance(stated, str) else None


# PEFT's adapter_config.json beside adapter_model.safetensors: read when the file is named as peft names it or one
# of its first tensors is a LoRA factor or named as a PeftModel names its tensors (a file of another kind never
# looks for it)
ADAPTER_CONFIG_NAME = "adapter_config.json"
ADAPTER_FILE_PREFIX = "adapter_model"
PEFT_MODEL_PREFIX = "base_model.model."  # a PeftModel's tensors, of every peft type but prompt learning
ADAPTER_NAMES_LOOKED_AT = 1000


def json_beside(probe: Probe, name: str) -> dict[str, Any] | None:
    """The JSON object in the file `name` in the probed file's folder (local or remote); None when there is none or
    it cannot be read or is larger than `MAX_CONFIG_BYTES` (it is only ever a help, never an error)."""
    try:
        with probe.sibling(name) as config:
            if config.size > MAX_CONFIG_BYTES:
                return None
            doc = loads(config.read_at(0, config.size))
    except (InspectorError, OSError, ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


def config_beside(probe: Probe) -> dict[str, Any] | None:
    """The parsed config.json in the probed file's folder, when it is a JSON object that says what the model is
    (`model_type`)."""
    doc = json_beside(probe, CONFIG_NAME)
    if doc is None or model_type(doc) is None:
        return None
    doc["source"] = CONFIG_NAME
    return doc


def adapter_config(config: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The checkpoint's config when it is a PEFT adapter_config.json."""
    return config if config is not None and config.get("source") == ADAPTER_CONFIG_NAME else None


def adapter_like(probe: Probe, ckpt: Checkpoint) -> bool:
    """The file is named as peft names it, or one of its first tensors is a LoRA factor or a PeftModel's."""
    if os.path.basename(probe.path).startswith(ADAPTER_FILE_PREFIX):
        return True
    return any(
        "lora_" in t.name or t.name.startswith(PEFT_MODEL_PREFIX) for t in ckpt.tensors[:ADAPTER_NAMES_LOOKED_AT]
    )


def adapter_config_beside(probe: Probe) -> dict[str, Any] | None:
    """The parsed adapter_config.json beside a PEFT adapter file, when it is a JSON object naming its `peft_type`."""
    doc = json_beside(probe, ADAPTER_CONFIG_NAME)
    if doc is None or not isinstance(doc.get("peft_type"), str):
        return None
    doc["source"] = ADAPTER_CONFIG_NAME
    return doc


# The quantization configs AutoGPTQ and AutoAWQ wrote beside their checkpoints before transformers read one from
# config.json: the file's name -> (the quant_method it stands for, a key only it has)
QUANTIZATION_CONFIGS = {"quantize_config.json": ("gptq", "bits"), "quant_config.json": ("awq", "w_bit")}


def _packed_weights() -> tuple[str, ...]:
    """How the packed weight of a method `QUANTIZATION_CONFIGS` names ends ('.qweight'): `quantized.PACKINGS`' word."""
    from inspector.quantized import PACKINGS  # (loaded already: bound here, not in every run's start-up)

    return tuple({"." + PACKINGS[method].weight for method, _ in QUANTIZATION_CONFIGS.values()})


def with_config(ckpt: Checkpoint, probe: Probe) -> Checkpoint:
    """The checkpoint with the config beside it, when its loader found none in the file itself: config.json, or for
    a PEFT adapter its adapter_config.json first (a config.json beside an adapter describes the base model). A GPTQ or
    AWQ checkpoint whose config.json says nothing of its quantization takes it from the file its library wrote beside
    it (`QUANTIZATION_CONFIGS`), looked for only when a packed weight's name is among its first tensors; an
    optimum-quanto one its quanto_qmap.json (its qtypes by module, as `modules`), only when a quantized weight's scales
    are (`quantized.QUANTO_SCALE`)."""
    if ckpt.config is not None:
        return ckpt
    config = (adapter_like(probe, ckpt) and adapter_config_beside(probe)) or config_beside(probe)
    if config is not None and config.get("source") == CONFIG_NAME and "quantization_config" not in config:
        packed, first = _packed_weights(), ckpt.tensors[:ADAPTER_NAMES_LOOKED_AT]
        if any(t.name.endswith(packed) for t in first):
            for name, (method, key) in QUANTIZATION_CONFIGS.items():
                words = json_beside(probe, name)
                if words is not None and key in words:
                    config["quantization_config"] = {"quant_method": method, **words, "source": name}
                    break
        else:
            from inspector.quantized import QUANTO, QUANTO_QMAP, QUANTO_SCALE  # (loaded already)

            qmap = json_beside(probe, QUANTO_QMAP) if any(t.name.endswith(QUANTO_SCALE) for t in first) else None
            if qmap is not None:
                config["quantization_config"] = {"quant_method": QUANTO, "modules": qmap, "source": QUANTO_QMAP}
    return ckpt if config is None else replace(ckpt, config=MappingProxyType(config))


# Heads a model type's checkpoints store padded with zero rows to `vocab_size`, which transformers' conversion trims
# on load (`Inkling2UnpadVocab`, Inkling 2's unembedding): the model holds the rows the config word names, so its
# num_parameters() leaves the padding out. Model type -> (the head as the checkpoints name it, that word; a composite
# config states it in its `text_config`).
PADDED_HEADS: dict[str, tuple[str, str]] = dict.fromkeys(
    ("inkling2", "inkling2_text", "inkling2_loop", "inkling2_loop_text"),
    (r"(?:.*\.)?(?:unembed|lm_head)\.weight", "unpadded_vocab_size"),
)


def padded_heads(ckpt: Checkpoint) -> list[tuple[TensorInfo, int, str]]:
    """(head, the rows the model keeps of it, the config word saying so) for each head of `PADDED_HEADS` the file
    stores with more rows than its model holds."""
    config = ckpt.config or {}
    head = PADDED_HEADS.get(model_type(config) or "")
    if head is None:
        return []
    import re  # (loaded already)

    pattern, word = head
    kept = config.get(word, (config.get("text_config") or {}).get(word))
    if not isinstance(kept, int) or isinstance(kept, bool) or kept <= 0:
        return []
    return [
        (t, kept, word)
        for t in ckpt.tensors
        if len(t.shape) == 2 and t.shape[0] > kept and t.alias_of is None and re.fullmatch(pattern, t.name)
    ]
