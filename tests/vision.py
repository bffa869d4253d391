"""torchvision (and timm, which imports it) beside the CPU build of torch, for the tests and bench/sweep_vision.py.

PyPI's torchvision wheels link their C++ extension (`torchvision/_C.so`: nms, roi_align...) against torch's CUDA
libraries. Beside the CPU build of torch that extension does not load, and `import torchvision` then fails on its
own `register_fake("torchvision::nms")` of an operator nobody defined (and so does every transformers module that
imports torchvision, DETR's among them). The models, their state dicts and the files they write need none of those
operators: defining the schemas of the two that torchvision registers unconditionally lets it import; calling one
still raises. Nothing is defined when the extension loads.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

# the operators torchvision's _meta_registrations registers whether or not its extension loaded
SCHEMAS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor qdets, Tensor scores, float iou_threshold) -> Tensor",
)
_LIBRARY: list[Any] = []  # the torch.library.Library that holds the schemas lives as long as the process


def make_importable() -> None:
    """Let `import torchvision` succeed where its extension cannot load; a no-op when torchvision is not installed,
    already imported, or its extension loads."""
    import sys

    spec = importlib.util.find_spec("torchvision")
    if spec is None or spec.origin is None or "torchvision" in sys.modules or _LIBRARY:
        return
    if importlib.util.find_spec("torch") is None:  # torchvision without torch: its import fails anyway
        return
    import torch

    for extension in Path(spec.origin).parent.glob("_C*.so"):
        try:
            torch.ops.load_library(str(extension))
            return
        except (OSError, RuntimeError):
            break
    library = torch.library.Library("torchvision", "DEF")
    for schema in SCHEMAS:
        library.define(schema)
    _LIBRARY.append(library)
