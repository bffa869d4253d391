"""TorchScript archives: parameters, buffers and trainability as declared, checked against torch.jit.load."""

from __future__ import annotations

from pathlib import Path

import pytest

from inspector import load
from inspector.records import Checkpoint, TensorKind
from loaders._torchscript import ATTRIBUTE_NOTE, parse_declarations
from loaders.base import check_invariants
from tests.conftest import fixture_path

torch = pytest.importorskip("torch")


class Frozen(torch.nn.Module):
    """BatchNorm (running statistics are buffers), a frozen weight, a registered buffer, a plain tensor attribute."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv1d(3, 4, 3)
        self.bn = torch.nn.BatchNorm1d(4)
        self.frozen = torch.nn.Linear(4, 2)
        self.frozen.weight.requires_grad_(False)
        self.register_buffer("scale", torch.ones(2))
        self.offset = torch.arange(2.0)  # an attribute: neither a parameter nor a buffer
        self.blocks = torch.nn.ModuleList([torch.nn.Linear(2, 2) for _ in range(2)])
        self.head = torch.nn.Linear(2, 2, bias=False)
        self.head.weight = self.blocks[0].weight  # tied: one parameter under two names

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.frozen(self.bn(self.conv(x)).mean(-1)) * self.scale + self.offset
        for block in self.blocks:
            y = block(y)
        return self.head(y)


def _save(kind: str, path: Path) -> None:
    torch.manual_seed(0)
    model = Frozen().eval()
    archive = torch.jit.script(model) if kind == "script" else torch.jit.trace(model, torch.randn(2, 3, 8))
    archive.save(str(path))


def _assert_matches_jit_load(ckpt: Checkpoint, path: Path) -> None:
    module = torch.jit.load(str(path))
    parameters = dict(module.named_parameters())
    buffers = dict(module.named_buffers())
    unique = ckpt.unique()
    assert {t.name: t.shape for t in unique if t.kind is TensorKind.PARAMETER} == {
        k: tuple(v.shape) for k, v in parameters.items()
    }
    assert {t.name: t.shape for t in unique if t.kind is TensorKind.BUFFER} == {
        k: tuple(v.shape) for k, v in buffers.items()
    }
    assert ckpt.n_parameters == sum(v.numel() for v in parameters.values())
    frozen = {t.name for t in unique if t.kind is TensorKind.PARAMETER and not t.trainable}
    assert frozen == {k for k, v in parameters.items() if not v.requires_grad}


@pytest.mark.parametrize("kind", ["script", "trace"])
def test_declared_parameters_buffers_and_requires_grad(tmp_path: Path, kind: str) -> None:
    path = tmp_path / f"{kind}.pt"
    _save(kind, path)
    ckpt = load(path)
    check_invariants(ckpt)
    assert ckpt.attributes["torch.kind"] == "torchscript"
    _assert_matches_jit_load(ckpt, path)
    by_name = {t.name: t for t in ckpt.tensors}
    assert by_name["frozen.weight"].trainable is False and by_name["frozen.bias"].trainable is True
    assert by_name["bn.running_var"].kind is TensorKind.BUFFER and by_name["scale"].kind is TensorKind.BUFFER
    if kind == "script":  # tracing folds plain attributes into the graph as constants
        assert by_name["offset"].kind is TensorKind.OTHER and ATTRIBUTE_NOTE in by_name["offset"].notes


def test_fixture_scripted_matches_jit_load() -> None:
    path = fixture_path("torch/scripted.pt")
    ckpt = load(path)
    check_invariants(ckpt)
    _assert_matches_jit_load(ckpt, path)


def test_declarations_are_read_as_text_only() -> None:
    text = (
        "class Linear(Module):\n"
        '  __parameters__ = ["weight", "bias", ]\n'
        '  __buffers__ = ["running", ]\n'
        "  weight : Tensor\n"
        "class Evil(Module):\n"
        "  __parameters__ = [__import__('os').system('echo no')]\n"
        "  __buffers__ = []\n"
    )
    declared = parse_declarations("__torch__.m", text)
    assert set(declared) == {"__torch__.m.Linear"}  # a non-literal list is not a declaration, and never run
    assert declared["__torch__.m.Linear"].parameters == {"weight", "bias"}
    assert declared["__torch__.m.Linear"].buffers == {"running"}
