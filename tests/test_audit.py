"""Folder audit: a tree of mixed real files, sharded models grouped, broken files as rows."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from inspector.audit import audit, find_checkpoints
from inspector.cli import main
from tests.conftest import SAMPLES


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "models"
    shutil.copytree(SAMPLES / "hf_rau" / "bert-tiny-sharded", root / "bert-sharded")
    (root / "mixed").mkdir()
    for src in (
        "basic/cnn_compressed.npz",
        "torch/adam_checkpoint.pt",
        "keras/lstm_lm.keras",
        "torch/lstm_tied_legacy.pt",
    ):
        shutil.copy(SAMPLES / src, root / "mixed" / Path(src).name)
    data = (SAMPLES / "basic" / "mlp_fp16.safetensors").read_bytes()
    (root / "mixed" / "truncated.safetensors").write_bytes(data[: len(data) // 2])
    (root / "mixed" / "junk.pt").write_bytes(b"not a checkpoint at all" * 10)
    (root / "mixed" / "notes.txt").write_text("not a model")
    return root


def test_rows_per_model(tree: Path) -> None:
    rows = {Path(r.path).name: r for r in audit([str(tree)], jobs=2)}
    assert set(rows) == {"model.safetensors.index.json", "cnn_compressed.npz", "adam_checkpoint.pt", "lstm_lm.keras",
                         "lstm_tied_legacy.pt", "truncated.safetensors", "junk.pt", "notes.txt",
                         "config.json"}  # fmt: skip
    # a file no loader claims and without a checkpoint extension is listed, as not recognised (issue 14)
    assert rows["notes.txt"].status == rows["config.json"].status == "not recognised"
    assert rows["notes.txt"].error is None and rows["notes.txt"].file_bytes == len("not a model")
    assert {r.status for name, r in rows.items() if name not in ("notes.txt", "config.json")} == {"ok", "unreadable"}
    sharded = rows["model.safetensors.index.json"]
    manifest = json.loads((SAMPLES / "hf_rau" / "manifest.json").read_text())
    assert (
        sharded.format == "safetensors-sharded" and sharded.parameters == manifest["bert-tiny-sharded"]["n_parameters"]
    )
    assert sharded.file_bytes == sum(
        p.stat().st_size for p in (tree / "bert-sharded").iterdir() if p.name != "config.json"
    )
    assert rows["adam_checkpoint.pt"].parameters == 5234 and rows["adam_checkpoint.pt"].dtype == "F32"
    assert rows["truncated.safetensors"].error and "safetensors" in rows["truncated.safetensors"].error
    assert rows["junk.pt"].error and "not a recognised checkpoint format" in rows["junk.pt"].error
    assert rows["lstm_lm.keras"].error is None


def test_shards_are_grouped_under_their_index(tree: Path) -> None:
    found = {Path(p).name: fmt for p, fmt in find_checkpoints([str(tree / "bert-sharded")])}
    assert found == {"model.safetensors.index.json": "safetensors-sharded", "config.json": "not recognised"}


def test_cli_csv_and_json_and_status(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tree), "--csv", "--jobs", "1"]) == 2  # unreadable files make the status 2, after every row
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 9 and {"path", "format", "parameters", "unexplained_bytes", "error", "status"} <= set(rows[0])
    assert main([str(tree / "bert-sharded"), "--json"]) == 0
    docs = {Path(d["path"]).name: d for d in json.loads(capsys.readouterr().out)}
    assert docs["model.safetensors.index.json"]["format"] == "safetensors-sharded"
    assert docs["config.json"]["status"] == "not recognised" and docs["config.json"]["format"] == ""


def test_text_table_summary(tree: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "inspector", str(tree)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "5 model(s), 2 unreadable, 2 not recognised" in proc.stdout
    assert "auditing" not in proc.stderr  # no progress bar when stderr is not a terminal


def _unsafe_npy(path: Path) -> None:
    """An object array written by numpy itself: loading it would unpickle (numpy refuses without allow_pickle)."""
    np.save(path, np.array([{"step": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="allow_pickle"):
        np.load(path)


def test_fail_on_and_unsafe_status_match_file_mode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 14: the audit's exit status is the one `inspector FILE FILE` gives for the same files."""
    folder = tmp_path / "models"
    folder.mkdir()
    shutil.copy(SAMPLES / "basic" / "mlp_fp16.safetensors", folder)
    _unsafe_npy(folder / "state.npy")
    files = sorted(str(p) for p in folder.iterdir())
    for extra in ([], ["--fail-on", "error"], ["--fail-on", "info"]):
        assert main([str(folder), "--json", *extra]) == main([*files, "--json", *extra]) == 3, extra
    capsys.readouterr()
    clean = tmp_path / "clean"
    clean.mkdir()
    shutil.copy(SAMPLES / "basic" / "mlp_fp16.safetensors", clean)
    findings = main([str(clean / "mlp_fp16.safetensors"), "--fail-on", "info"])
    assert main([str(clean), "--csv", "--fail-on", "info"]) == findings
    assert main([str(clean), "--csv"]) == main([str(clean / "mlp_fp16.safetensors")]) == 0
    rows = {Path(r.path).name: r for r in audit([str(folder)], jobs=1)}
    assert rows["state.npy"].status == "unsafe" and rows["state.npy"].worst == "error"


def test_csv_unexplained_bytes_is_the_reports(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 14: the CSV column is the JSON report's bytes.unexplained, not file bytes minus parameter bytes."""
    main([str(tree), "--csv", "--jobs", "1"])
    rows = [r for r in csv.DictReader(io.StringIO(capsys.readouterr().out)) if r["status"] in ("ok", "unsafe")]
    assert len(rows) == 5
    for r in rows:
        main([r["path"], "--json"])
        report = json.loads(capsys.readouterr().out)
        assert int(r["unexplained_bytes"]) == report["bytes"]["unexplained"], r["path"]
        assert int(r["parameters"]) == report["parameters"]["total"]
    npz = next(r for r in rows if r["path"].endswith("cnn_compressed.npz"))
    assert int(npz["unexplained_bytes"]) >= 0 and int(npz["parameter_bytes"]) > int(npz["file_bytes"])  # compressed


def test_multi_file_checkpoints_are_one_row_each() -> None:
    """A DCP folder (.metadata + .distcp) and TF bundles (.index + data shards): one row per checkpoint, its entry."""
    rows = [r for r in audit([str(SAMPLES / "dcp"), str(SAMPLES / "tf")], jobs=1) if r.status == "ok"]
    found = {Path(r.path).relative_to(SAMPLES).as_posix(): (r.format, r.parameters) for r in rows}
    assert found == {
        "dcp/adam_step/.metadata": ("torch-dcp", 244),
        "tf/keras_adam/ckpt-1.index": ("tensorflow-checkpoint", 500),
        "tf/tf1_adam/model.index": ("tensorflow-checkpoint", 44),
    }
