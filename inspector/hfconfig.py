"""The transformers `config.json` beside a weights file (or its shard index): read as data, bounded."""

from __future__ import annotations

import json
import os
from typing import Any

MAX_CONFIG_BYTES = 1 << 20


def config_beside(path: str) -> dict[str, Any] | None:
    """The parsed config.json in the same folder as `path`, when it is a JSON object with a `model_type`."""
    folder = os.path.dirname(os.path.abspath(path)) if os.path.isfile(path) else path
    candidate = os.path.join(folder, "config.json")
    try:
        if not os.path.isfile(candidate) or os.path.getsize(candidate) > MAX_CONFIG_BYTES:
            return None
        with open(candidate, "rb") as f:
            doc = json.loads(f.read(MAX_CONFIG_BYTES))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("model_type"), str):
        return None
    doc["source"] = "config.json"
    return doc
