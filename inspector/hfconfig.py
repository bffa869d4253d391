"""The transformers `config.json` beside a weights file (or its shard index): read as data, bounded."""

from __future__ import annotations

import json
from types import MappingProxyType

from inspector.errors import InspectorError
from inspector.probe import Probe
from inspector.records import Checkpoint
from inspector.recordtype import replace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_CONFIG_BYTES = 1 << 20
CONFIG_NAME = "config.json"


def config_beside(probe: Probe) -> dict[str, Any] | None:
    """The parsed config.json in the probed file's folder (local or remote), when it is a JSON object with a
    `model_type`; None when there is none or it cannot be read (it is only ever a help, never an error)."""
    try:
        with probe.sibling(CONFIG_NAME) as config:
            if config.size > MAX_CONFIG_BYTES:
                return None
            doc = json.loads(config.read_at(0, config.size))
    except (InspectorError, OSError, ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("model_type"), str):
        return None
    doc["source"] = CONFIG_NAME
    return doc


def with_config(ckpt: Checkpoint, probe: Probe) -> Checkpoint:
    """The checkpoint with the config beside it, when its loader found none in the file itself."""
    if ckpt.config is not None:
        return ckpt
    config = config_beside(probe)
    return ckpt if config is None else replace(ckpt, config=MappingProxyType(config))
