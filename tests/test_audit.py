"""Folder audit: a tree of mixed real files, sharded models grouped, broken files as rows."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

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
                         "lstm_tied_legacy.pt", "truncated.safetensors", "junk.pt"}  # fmt: skip
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
    found = [Path(p).name for p, _ in find_checkpoints([str(tree / "bert-sharded")])]
    assert found == ["model.safetensors.index.json"]


def test_cli_csv_and_json_and_status(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tree), "--csv", "--jobs", "1"]) == 2  # unreadable files make the status 2, after every row
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 7 and {"path", "format", "parameters", "unexplained_bytes", "error"} <= set(rows[0])
    assert main([str(tree / "bert-sharded"), "--json"]) == 0
    (doc,) = json.loads(capsys.readouterr().out)
    assert doc["format"] == "safetensors-sharded"


def test_text_table_summary(tree: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "inspector", str(tree)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "5 model(s), 2 unreadable" in proc.stdout
