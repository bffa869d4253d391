"""The loader registry: read-only view, registration rules, detection by content and claim strength."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import pytest

from inspector import registry
from inspector.errors import AmbiguousFormatError, RegistryError
from inspector.probe import Probe
from inspector.records import Checkpoint
from loaders.base import Claim
from tests.conftest import SAMPLES


class _Greedy:
    name: ClassVar[str] = "greedy"
    extensions: ClassVar[tuple[str, ...]] = (".npz",)

    def claim(self, probe: Probe) -> Claim | None:
        return Claim.STRUCTURE if probe.head.startswith(b"PK") else None

    def load(self, probe: Probe) -> Checkpoint:  # pragma: no cover - never chosen in these tests
        raise NotImplementedError


def test_view_is_read_only() -> None:
    view = registry.loaders()
    with pytest.raises(TypeError):
        view["x"] = _Greedy  # type: ignore[index]
    assert {"safetensors", "npy", "npz"} <= set(view)


def test_duplicate_registration_is_refused() -> None:
    with pytest.raises(RegistryError):
        registry.register_loader(registry.loaders()["npz"])


def test_equal_claims_are_ambiguous_unless_the_extension_breaks_the_tie(tmp_path: Path) -> None:
    registry.register_loader(_Greedy)
    try:
        plain = tmp_path / "weights.zip"
        shutil.copy(SAMPLES / "basic" / "cnn_stored.npz", plain)
        with pytest.raises(AmbiguousFormatError) as info:
            registry.detect(plain)
        assert set(info.value.candidates) == {"npz", "greedy"}
        # with the .npz extension both still claim; the extension names one of them only: greedy's too
        with pytest.raises(AmbiguousFormatError):
            registry.detect(SAMPLES / "basic" / "cnn_stored.npz")
    finally:
        registry.unregister_loader("greedy")


def test_detection_ignores_the_extension(tmp_path: Path) -> None:
    renamed = tmp_path / "model.pt"
    shutil.copy(SAMPLES / "basic" / "mlp_fp16.safetensors", renamed)
    assert registry.detect(renamed) == "safetensors"


def test_import_pulls_in_no_optional_dependency() -> None:
    code = (
        "import sys, inspector; inspector.load('sample_models/basic/cnn_stored.npz'); "
        "print(sorted(m for m in ('torch', 'h5py', 'tensorflow', 'mxnet', 'tabulate', 'keras') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=SAMPLES.parent
    ).stdout.strip()
    assert out == "[]"


def test_public_all_is_sorted_and_complete() -> None:
    import inspector

    assert inspector.__all__ == sorted(inspector.__all__)
    assert all(hasattr(inspector, name) for name in inspector.__all__)
