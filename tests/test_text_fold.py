"""The text report of a file of more layers than a reader takes in: its tables folded by numbered name parts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inspector.cli import main
from inspector.text_fold import TEXT_ROWS, fold, numbered


def test_numbered_parts_fold_and_single_layers_keep_their_names() -> None:
    assert numbered(["model.layers.17.mlp.3", "encoder/layer_3/dense/0", "10.fc1", "a\n1.b"]) == [
        "model.layers.#.mlp.#",
        "encoder/layer_3/dense/#",  # (a part that only holds digits)
        "#.fc1",
        "a\n1.b",  # (a newline is no part's end)
    ]
    assert numbered(["7"]) == ["#"]
    rows = [
        ["h.0.attn", "parameter", 2, 10],
        ["h.1.attn", "parameter", 2, 10],
        ["h.1.mlp", "parameter", 3, 12],
        ["h.2.attn", "buffer", 1, 4],  # another kind: another row
        ["wte", "parameter", 1, 100],
    ]
    assert fold(rows, (2, 3)) == [
        ["h.#.attn", 2, "parameter", 4, 20],
        ["h.1.mlp", 1, "parameter", 3, 12],
        ["h.2.attn", 1, "buffer", 1, 4],
        ["wte", 1, "parameter", 1, 100],
    ]


def test_a_torch_file_of_many_layers_is_folded_in_text_and_whole_in_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    torch = pytest.importorskip("torch")
    n = TEXT_ROWS + 200
    blocks = torch.nn.ModuleList(torch.nn.Linear(3, 2) for _ in range(n))
    head = torch.nn.Linear(2, 5)
    path = tmp_path / "many.pt"
    torch.save({**{f"blocks.{k}": v for k, v in blocks.state_dict().items()}, **{f"head.{k}": v for k, v in
                head.state_dict().items()}}, path)  # fmt: skip
    params = sum(p.numel() for p in blocks.parameters()) + sum(p.numel() for p in head.parameters())
    assert main([str(path)]) == 0
    text = capsys.readouterr().out
    assert f"{n + 1:,} layers in 2 rows: numbered parts of their names folded as '#'" in text
    rows = [line.split() for line in text.splitlines() if line.startswith(("blocks.", "head"))]
    # the layer table, then the expectation's: each with a row for the numbered blocks and one for the head
    assert rows[0][:3] == ["blocks.#", f"{n:,}", "parameter"]
    assert rows[0][4:7] == [f"{2 * n:,}", f"{8 * n:,}", f"{32 * n:,}"]  # tensors, elements, bytes: summed
    assert rows[1][:2] == ["head", "1"]
    assert rows[2][:5] == ["blocks.#", f"{n:,}", "Dense", f"{8 * n:,}", f"{8 * n:,}"]
    assert rows[3][:5] == ["head", "1", "Dense", "15", "15"]
    assert f"parameters {params:,}" in text
    # the inferred architecture's summary counts the kinds of more than 64 layers (a list of 100,000 was 600 KB)
    assert f"Architecture (inferred): sequential(layers={n + 1}, kinds=Dense x{n + 1:,})" in text
    assert main([str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len({t["layer"] for t in report["tensors"]}) == n + 1  # the JSON keeps every layer
    assert report["expected"]["architecture"] == {"name": "sequential", "layers": n + 1, "kinds": f"Dense x{n + 1:,}"}
    assert len(report["expected"]["layers"]) == n + 1
