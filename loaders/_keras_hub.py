"""keras-hub presets: the `config.json` and `metadata.json` that `backbone.save_to_preset(dir)` writes beside
`model.weights.h5` (and the backbone config a `.keras` archive holds), read as data, bounded.

`config.json` is Keras's serialised backbone (`module`, `class_name`, `config`, `registered_name`
'keras_hub>GemmaBackbone'); `metadata.json` has `keras_hub_version` and `parameter_count`, the backbone's
`count_params()` when it was saved: the file's own count must equal it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from inspector.errors import InspectorError
from inspector.probe import Probe
from inspector.records import Finding, Severity, TensorInfo, TensorKind, elements
from inspector.recordtype import replace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CONFIG, METADATA = "config.json", "metadata.json"
MAX_JSON_BYTES = 1 << 20
REGISTERED_PREFIX = "keras_hub>"
# Layers a backbone class builds with trainable=False (keras_hub/src/models/*/*_backbone.py): their variables are
# parameters Keras counts and never trains. The backbone config lists no layers, so its class says which.
FROZEN_LAYERS: dict[str, frozenset[str]] = {
    "WhisperBackbone": frozenset({"encoder_position_embedding"}),
}


def backbone_class(config: Any) -> str | None:
    """The keras-hub class a serialised Keras object names ('GemmaBackbone'), or None when it is not keras-hub's."""
    if not isinstance(config, dict):
        return None
    registered, cls = config.get("registered_name"), config.get("class_name")
    if isinstance(registered, str) and registered.startswith(REGISTERED_PREFIX) and isinstance(cls, str):
        return cls
    return None


def _json_beside(probe: Probe, name: str) -> dict[str, Any] | None:
    try:
        with probe.sibling(name) as other:
            if other.size > MAX_JSON_BYTES:
                return None
            doc = json.loads(other.read_at(0, other.size))
    except (InspectorError, OSError, ValueError, RecursionError):
        return None  # a preset file is only ever a help, never an error
    return doc if isinstance(doc, dict) else None


def preset_beside(probe: Probe) -> tuple[str, dict[str, Any]] | None:
    """(backbone class, metadata) of the keras-hub preset the probed weights file is part of, or None."""
    cls = backbone_class(_json_beside(probe, CONFIG))
    if cls is None:
        return None
    return cls, _json_beside(probe, METADATA) or {}


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
