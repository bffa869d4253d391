"""checkpoint-inspector: what is really in a saved model file, read from its headers alone."""

from __future__ import annotations

import gc

# The cyclic collector is paused while the package's modules are imported: they make tens of thousands of objects
# (classes, functions, tables) and no garbage, and each collection would walk them all (issue 16: about 0.15 ms).
_collecting = gc.isenabled()
gc.disable()
try:
    from inspector.errors import InspectorError
    from inspector.records import Checkpoint, Finding, Region, RegionKind, TensorInfo, TensorKind
    from inspector.registry import detect, load, loaders, register_loader
finally:
    if _collecting:
        # and what they made goes to the oldest generation at once (`freeze`, then `unfreeze`): the first young
        # collection after them would walk it all, for no garbage (about 0.1 ms)
        gc.freeze()
        gc.unfreeze()
        gc.enable()

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
