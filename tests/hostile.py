"""Mutations of real files for the hostile-input tests and the fuzzing script."""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import FIXTURES, SAMPLES

# Every real checkpoint we have, by folder; new samples are picked up automatically.
FIXTURE_DIRS = ("safetensors", "numpy", "torch", "keras", "mxnet", "hdf5", "gguf", "onnx")
SAMPLE_SUFFIXES = (".safetensors", ".npz", ".npy", ".pt", ".pth", ".bin", ".h5", ".keras", ".params", ".json")
SAMPLE_SUFFIXES += (".gguf", ".onnx")
MAX_SEED_BYTES = 256 * 1024


def seed_files() -> list[Path]:
    """Real files (at most 256 KB each) to mutate."""
    found: list[Path] = []
    for folder in FIXTURE_DIRS:
        base = FIXTURES / folder
        if base.is_dir():
            found += sorted(p for p in base.rglob("*") if p.is_file())
    if SAMPLES.is_dir():
        found += sorted(p for p in SAMPLES.rglob("*") if p.is_file() and p.suffix in SAMPLE_SUFFIXES)
    return [p for p in found if os.path.getsize(p) <= MAX_SEED_BYTES]


def truncate(data: bytes, at: int) -> bytes:
    return data[: at % (len(data) + 1)]


def flip(data: bytes, positions: list[int], values: list[int]) -> bytes:
    out = bytearray(data)
    for pos, value in zip(positions, values, strict=False):
        if out:
            out[pos % len(out)] = value
    return bytes(out)
