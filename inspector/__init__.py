"""checkpoint-inspector: what is really in a saved model file, read from its headers alone."""

from __future__ import annotations

from inspector.errors import InspectorError
from inspector.records import Checkpoint, Finding, Region, RegionKind, TensorInfo, TensorKind
from inspector.registry import detect, load, loaders, register_loader

__all__ = [
    "Checkpoint",
    "Finding",
    "InspectorError",
    "Region",
    "RegionKind",
    "TensorInfo",
    "TensorKind",
    "detect",
    "load",
    "loaders",
    "register_loader",
]
