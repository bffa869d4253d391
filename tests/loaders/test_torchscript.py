"""TorchScript archives: parameters, buffers and trainability as declared, checked against torch.jit.load."""

from __future__ import annotations

import enum
import zipfile
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


class Layout(enum.Enum):
    """An enum a scripted module holds (timm's `Format` in every ViT): the archive pickles its member as a call of
    `__torch__...Layout` with the member's value, and declares `class Layout(Enum):` in its code."""

    FIRST = "first"
    LAST = "last"


class WithEnum(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layout = Layout.LAST
        self.linear = torch.nn.Linear(3, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x) if self.layout == Layout.LAST else x


def test_an_enum_the_archive_declares_is_made_not_called(tmp_path: Path) -> None:
    """torch.jit.load makes an enum member of a class the archive's own code declares from its value, running
    nothing: the call is not unsafe content (it was: every scripted timm ViT was called unsafe, exit 3)."""
    path = tmp_path / "enum.pt"
    torch.jit.save(torch.jit.script(WithEnum()), path)
    assert torch.jit.load(path)(torch.ones(1, 3)).shape == (1, 2)  # torch loads it, making the member
    ckpt = load(path)
    assert not [f for f in ckpt.findings if f.code == "UNSAFE_CONTENT"], ckpt.findings
    assert ckpt.n_parameters == 8
    # the same call of a class the code does not declare an enum: a call, unsafe as before
    other = tmp_path / "class.pt"
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(other, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename.endswith(".py"):
                data = data.replace(b"(Enum):", b"(Module):")
            zout.writestr(info, data)
    unsafe = [f for f in load(other).findings if f.code == "UNSAFE_CONTENT"]
    assert unsafe and "Layout" in unsafe[0].message
