"""Shared test fixtures: where the real files live."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.vision import make_importable

# Keras 3 in the tests runs on torch (the CPU build CI installs), whatever else the environment has.
os.environ.setdefault("KERAS_BACKEND", "torch")
# torchvision from PyPI imports beside the CPU build of torch (tests/vision.py), for its own tests and transformers'
make_importable()

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_models"
# Real files written by the real libraries, kept in the steering repo's shared/ folder beside the clone.
FIXTURES = ROOT.parent / "shared" / "fixtures"


def record_reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, int]]:
    """Every read below the Probe from now until `monkeypatch.undo()`, as (absolute path, offset, length)."""
    from inspector.probe import Probe

    reads: list[tuple[str, int, int]] = []
    original = Probe._pread

    def recording(self: Probe, offset: int, n: int, *rest: object) -> bytes:
        reads.append((os.path.abspath(self.path), offset, n))
        return original(self, offset, n, *rest)

    monkeypatch.setattr(Probe, "_pread", recording)
    return reads


def fixture_path(relative: str) -> Path:
    """A file under ../shared/fixtures; the test is skipped when shared/ is not beside the clone."""
    path = FIXTURES / relative
    if not path.exists():
        pytest.skip(f"shared fixture {relative} not available")
    return path


@pytest.fixture(autouse=True)
def _fast_pickles_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every pickle the suite reads goes through the C-speed path where it can (not only those over 64 KiB):
    the whole suite then checks that path's values, verdicts and errors against what the tests expect."""
    from loaders import _pickle

    monkeypatch.setattr(_pickle, "FAST_MIN_BYTES", 0)


@pytest.fixture
def fixtures() -> Path:
    if not FIXTURES.is_dir():
        pytest.skip("../shared/fixtures not available")
    return FIXTURES


@pytest.fixture
def samples() -> Path:
    return SAMPLES
