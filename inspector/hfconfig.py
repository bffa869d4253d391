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


def config_beside(probe: Probe) -> dict[str, Any] | None:
    """The parsed config.json in the probed file's folder (local or remote), when it is a JSON object that says what
    the model is (`model_type`); None when there is none or it cannot be read (it is only ever a help, never an
    error)."""
    try:
        with probe.sibling(CONFIG_NAME) as config:
            if config.size > MAX_CONFIG_BYTES:
                return None
            doc = json.loads(config.read_at(0, config.size))
    except (InspectorError, OSError, ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or model_type(doc) is None:
        return None
    doc["source"] = CONFIG_NAME
    return doc


def with_config(ckpt: Checkpoint, probe: Probe) -> Checkpoint:
    """The checkpoint with the config beside it, when its loader found none in the file itself."""
    if ckpt.config is not None:
        return ckpt
    config = config_beside(probe)
    return ckpt if config is None else replace(ckpt, config=MappingProxyType(config))
