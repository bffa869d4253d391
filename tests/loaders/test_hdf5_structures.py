"""HDF5 metadata placed from its own bytes: a Keras 3 .weights.h5 with BatchNormalization leaves nothing unexplained."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import h5py
import numpy as np
import pytest

from inspector.records import Region, RegionKind
from inspector.report import inspect
from loaders._hdf5_structures import GLOBAL_HEAP_LABEL, ZERO_LABEL
from loaders.base import check_invariants
from tests.conftest import SAMPLES

SIGNATURES = {
    "B-tree node (v1)": b"TREE",
    "symbol table node": b"SNOD",
    "local heap header": b"HEAP",
    "global heap": b"GCOL",
    "v2 B-tree header": b"BTHD",
    "v2 B-tree leaf": b"BTLF",
    "fractal heap header": b"FRHP",
    "fractal heap direct block": b"FHDB",
    "free-space manager header": b"FSHD",
    "free-space section list": b"FSSE",
}


def _assert_signatures(path: Path, regions: tuple[Region, ...]) -> list[Region]:
    """Each structure placed from its signature sits where that signature is; none was placed by inference."""
    data = path.read_bytes()
    placed = [r for r in regions if r.label.startswith("HDF5 ") and r.kind is RegionKind.METADATA]
    for r in placed:
        for key, signature in SIGNATURES.items():
            if key in r.label:
                assert data[r.start : r.start + 4] == signature, r
    assert not [r for r in regions if "places inferred" in r.label]
    return placed


def _keras_batchnorm(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    pytest.importorskip("torch")
    keras = pytest.importorskip("keras")
    layers = keras.layers
    model = keras.Sequential([keras.Input((10,)), layers.Dense(16), layers.BatchNormalization(), layers.Dense(3)])
    model.save_weights(path)


def _h5py_sized(path: Path) -> int:
    """B-tree, symbol table node and local heap bytes h5py reports for every object (sizes only)."""
    total = 0
    with h5py.File(path, "r") as f:
        objects = [f] + [f[name] for name in _names(f)]
        for obj in objects:
            meta = h5py.h5o.get_info(obj.id).meta_size
            total += meta.obj.index_size + meta.obj.heap_size + meta.attr.index_size + meta.attr.heap_size
    return total


def _names(f: h5py.File) -> list[str]:
    names: list[str] = []
    f.visit(names.append)
    return names


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # keras's torch backend calls np.array(tensor)
@pytest.mark.parametrize("source", ["generated", "sample"])
def test_keras3_batchnorm_weights_leave_nothing_unexplained(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    path = tmp_path / "bn.weights.h5"
    if source == "generated":
        _keras_batchnorm(path, monkeypatch)
    else:
        path = SAMPLES / "keras" / "adam_trained.weights.h5"
    report = inspect(path)
    ckpt = report.checkpoint
    check_invariants(ckpt)
    assert ckpt.n_parameters == 10 * 16 + 16 + 4 * 16 + 16 * 3 + 3
    assert report.accounting.unexplained == 0
    assert not [r for r in ckpt.regions if r.kind in (RegionKind.UNKNOWN, RegionKind.UNACCOUNTED)]
    placed = _assert_signatures(path, ckpt.regions)
    # the v1 group structures found by their bytes are exactly the sizes h5py reports for them
    groups = sum(r.length for r in placed if r.label != GLOBAL_HEAP_LABEL)
    assert groups == _h5py_sized(path)
    assert any(r.label == GLOBAL_HEAP_LABEL for r in placed)  # Keras writes variable-length string attributes
    data = path.read_bytes()
    assert all(not data[r.start : r.end].strip(b"\0") for r in ckpt.regions if r.label == ZERO_LABEL)


def test_object_header_continuations_are_placed(tmp_path: Path) -> None:
    """A group whose attributes overflow its first header chunk: h5py's total = the chunks found in the file."""
    path = tmp_path / "attrs.h5"
    with h5py.File(path, "w") as f:
        g = f.create_group("g")
        g.create_dataset("x", data=[1.0, 2.0])
        for i in range(20):
            g.attrs[f"attribute_{i}"] = i
    ckpt = inspect(path).checkpoint
    check_invariants(ckpt)
    with h5py.File(path, "r") as f:
        total = h5py.h5o.get_info(f["g"].id).hdr.space.total
    chunks = [r for r in ckpt.regions if r.label.startswith("object header /g") and "/g/" not in r.label]
    assert len(chunks) > 1 and sum(r.length for r in chunks) == total


def _h5stat(path: Path) -> dict[str, int]:
    h5stat = shutil.which("h5stat")
    if h5stat is None:
        pytest.skip("h5stat (Debian hdf5-tools) not installed")
    text = subprocess.run([h5stat, "-S", str(path)], capture_output=True, text=True, check=True, timeout=60).stdout
    return {
        k: int(v) for k, v in re.findall(r"^\s*(File metadata|Raw data|Unaccounted space): (\d+) bytes", text, re.M)
    }


def _write(kind: str, path: Path) -> None:
    with h5py.File(path, "w", libver="latest" if kind == "dense" else "earliest") as f:
        for i in range(40 if kind == "groups" else 20):
            g = f.create_group(f"layer_{i}")
            g.create_dataset("kernel", data=np.zeros((4, 4), "float32"))
            g.attrs["names"] = [b"kernel", b"bias"] if kind == "groups" else list(range(12))
            if kind == "dense":  # past 8 attributes and links: fractal heaps, v2 B-trees, free-space managers
                for j in range(12):
                    g.attrs[f"a{j}"] = j
        f.attrs["note"] = "a variable-length string in the global heap"
        if kind == "deleted":
            f.create_dataset("gone", data=np.ones(5000, "float32"))
    if kind == "deleted":
        with h5py.File(path, "a") as f:
            del f["gone"]


@pytest.mark.parametrize("kind", ["groups", "dense", "deleted"])
def test_accounting_equals_live_h5stat(tmp_path: Path, kind: str) -> None:
    """Our bytes against h5stat -S on files h5py writes: metadata, raw data, and the unaccounted rest."""
    path = tmp_path / f"{kind}.h5"
    _write(kind, path)
    stat = _h5stat(path)
    ckpt = inspect(path).checkpoint
    check_invariants(ckpt)
    named = sum(r.length for r in ckpt.regions if "h5stat: unaccounted" in r.label)
    unaccounted = sum(r.length for r in ckpt.regions if r.kind is RegionKind.UNACCOUNTED)
    metadata = sum(
        r.length
        for r in ckpt.regions
        if r.kind in (RegionKind.HEADER, RegionKind.METADATA) and r.label != GLOBAL_HEAP_LABEL
    )
    raw = sum(r.length for r in ckpt.regions if r.kind in (RegionKind.TENSOR_DATA, RegionKind.COMPRESSED))
    assert (metadata, raw, unaccounted + named) == (stat["File metadata"], stat["Raw data"], stat["Unaccounted space"])


@pytest.mark.parametrize("kind", ["groups", "dense", "deleted"])
def test_every_structure_placed_from_its_own_bytes(tmp_path: Path, kind: str) -> None:
    """v1 groups, v2 dense storage (B-trees, fractal heaps, free-space managers) and a deletion's dead space."""
    path = tmp_path / f"{kind}.h5"
    _write(kind, path)
    ckpt = inspect(path).checkpoint
    check_invariants(ckpt)
    placed = {label for r in _assert_signatures(path, ckpt.regions) for label in SIGNATURES if label in r.label}
    if kind == "dense":
        assert {"v2 B-tree header", "fractal heap header", "free-space manager header"} <= placed
    unaccounted = sum(r.length for r in ckpt.regions if r.kind is RegionKind.UNACCOUNTED)
    assert (unaccounted > 0) == (kind == "deleted")  # only a deletion leaves bytes nothing explains
