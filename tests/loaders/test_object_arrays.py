"""Object arrays (pickles inside .npy/.npz): the count is unknown, and what the pickle names is said, never run."""

from __future__ import annotations

import io
import json
import pickle
from pathlib import Path

import numpy as np
import pytest

from inspector import load
from inspector.cli import main
from inspector.records import TensorKind
from inspector.report import inspect
from loaders.base import check_invariants
from tests.conftest import fixture_path


def _pickle_globals(payload: bytes) -> set[str]:
    """The globals pickle itself resolves when numpy loads the (trusted) array: the reference to compare with."""
    names: set[str] = set()

    class Recording(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> object:
            names.add(f"{module}.{name}")
            return super().find_class(module, name)

    Recording(io.BytesIO(payload)).load()
    return names


def test_fixture_object_npy_count_unknown(capsys: pytest.CaptureFixture[str]) -> None:
    path = fixture_path("numpy/object.npy")
    report = inspect(path)
    ckpt = report.checkpoint
    check_invariants(ckpt)
    (t,) = ckpt.tensors
    assert t.kind is TensorKind.METADATA and not ckpt.count_known
    assert report.accounting.parameter_count is None
    assert "parameters" not in report.accounting.by_kind  # never "parameter tensors 100%"
    assert report.accounting.by_kind["metadata"] >= t.nbytes
    payload = path.read_bytes()[t.offset :]
    reference = np.load(path, allow_pickle=True)  # what numpy itself makes of it (a trusted fixture)
    assert reference.shape == t.shape and reference[0] == {"a": 1} and reference[1] is None
    (finding,) = [f for f in ckpt.findings if f.code == "UNSAFE_CONTENT"]
    for name in _pickle_globals(payload):
        assert name in finding.message
    assert "a list of 2: a dict with keys 'a'; None" in finding.message
    assert main([str(path), "--json"]) == 3
    out = json.loads(capsys.readouterr().out)
    assert out["parameters"] == {"total": None, "trainable": None, "non_trainable": None}
    assert main([str(path)]) == 3
    text = capsys.readouterr().out
    assert "parameters unknown" in text and "= unknown" in text and "1 parameter" not in text


@pytest.mark.parametrize("writer", ["npy", "savez", "savez_compressed"])
def test_pickled_dict_keys_are_named(tmp_path: Path, writer: str) -> None:
    state = {"encoder.weight": np.zeros((3, 4), np.float32), "step": 7, "names": ["x", "y"]}
    if writer == "npy":
        path = tmp_path / "state.npy"
        np.save(path, state, allow_pickle=True)
        member = np.load(path, allow_pickle=True).item()
    else:
        path = tmp_path / "state.npz"
        getattr(np, writer)(path, state=np.array(state, dtype=object), bias=np.ones(5, np.float32))
        with np.load(path, allow_pickle=True) as z:
            member = z["state"].item()
    ckpt = load(path)
    check_invariants(ckpt)
    assert not ckpt.count_known
    (obj,) = [t for t in ckpt.tensors if t.dtype == "OBJECT"]
    assert obj.kind is TensorKind.METADATA
    message = next(f.message for f in ckpt.findings if f.code == "UNSAFE_CONTENT")
    assert "a dict with keys " + ", ".join(repr(k) for k in member) in message
    assert "numpy.ndarray" in message


def test_large_object_pickle_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "big.npy"
    np.save(path, {"w": np.zeros(2 << 20, np.float32)}, allow_pickle=True)
    ckpt = load(path)
    assert not ckpt.count_known
    message = next(f.message for f in ckpt.findings if f.code == "UNSAFE_CONTENT")
    assert "not read" in message


def test_pickle_that_would_run_code_is_named(tmp_path: Path) -> None:
    class Boom:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            import os

            return (os.system, ("echo should-never-run",))

    arr = np.empty(1, dtype=object)
    arr[0] = Boom()
    path = tmp_path / "boom.npy"
    with open(path, "wb") as fh:
        np.lib.format.write_array(fh, arr, allow_pickle=True)
    assert b"system" in path.read_bytes()  # the pickle names os.system (posix.system)
    ckpt = load(path)
    message = next(f.message for f in ckpt.findings if f.code == "UNSAFE_CONTENT")
    assert "system" in message
