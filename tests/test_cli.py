"""The command line: exit codes, JSON shape, text sections, several files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from inspector.cli import main
from tests.conftest import SAMPLES

NPZ = str(SAMPLES / "basic" / "cnn_stored.npz")
ST = str(SAMPLES / "basic" / "mlp_fp16.safetensors")
SCHEMA_KEYS = {
    "schema_version",
    "path",
    "format",
    "framework",
    "file_bytes",
    "parameters",
    "buffers",
    "optimizer",
    "tensors",
    "bytes",
    "expected",
    "findings",
}


def test_json_schema_of_one_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([ST, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert SCHEMA_KEYS <= set(doc)
    manifest = json.loads((SAMPLES / "basic" / "manifest.json").read_text())["mlp_fp16.safetensors"]
    assert doc["parameters"]["total"] == manifest["n_parameters"]
    assert doc["parameters"]["trainable"] + doc["parameters"]["non_trainable"] == doc["parameters"]["total"]
    assert {t["name"] for t in doc["tensors"]} == set(manifest["tensors"])
    first = doc["tensors"][0]
    assert {"name", "shape", "dtype", "elements", "nbytes", "offset", "kind", "layer", "role"} <= set(first)
    assert sum(r["length"] for r in doc["bytes"]["regions"]) == doc["file_bytes"]
    assert sum(doc["bytes"]["by_kind"].values()) == doc["file_bytes"]
    assert doc["bytes"]["unexplained"] == 0


def test_json_array_for_several_files_with_an_error_entry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "nope.pt")
    assert main([NPZ, missing, "--json"]) == 2
    out = capsys.readouterr()
    docs = json.loads(out.out)
    assert [d["path"] for d in docs] == [NPZ, missing]
    assert docs[1]["error_type"] == "InputError"
    assert out.err.strip() == f"inspector: {missing}: no such file"


def test_text_report_sections(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([NPZ, "--tensors", "--regions"]) == 0
    out = capsys.readouterr().out
    for heading in ("format     npz (numpy)", "Where the bytes go", "Size-implied count", "conv1.weight"):
        assert heading in out


def test_fail_on_threshold(tmp_path: Path) -> None:
    trailing = tmp_path / "t.safetensors"
    data = Path(ST).read_bytes() + b"\0" * 5
    trailing.write_bytes(data)
    assert main([str(trailing)]) == 0
    assert main([str(trailing), "--fail-on", "warning"]) == 1


def test_bad_usage_is_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--no-such-flag"]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_python_dash_m_entry_point() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "inspector", NPZ, "--json"], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(proc.stdout)["format"] == "npz"


def test_output_cut_short_by_the_reader_is_no_traceback(tmp_path: Path) -> None:
    """`inspector FILE --tensors | head -1`: the reader closes the pipe while the report is still being written."""
    np = pytest.importorskip("numpy")
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    path = tmp_path / "many.safetensors"
    safetensors_numpy.save_file({f"layer_{i}.weight": np.zeros(2, np.float32) for i in range(3000)}, str(path))
    with subprocess.Popen(
        [sys.executable, "-m", "inspector", str(path), "--tensors"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline().decode().strip() == str(path)
        proc.stdout.close()  # the report is far larger than a pipe buffer: the writer is blocked on it now
        stderr = proc.stderr.read().decode()
        assert proc.wait(timeout=120) == 0
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
