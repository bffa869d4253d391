"""Role rules: table-driven cases from real exporters' names, and the shape-and-order fallback."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from inspector import load
from inspector.records import Checkpoint, TensorInfo
from inspector.roles import FAMILY, FAMILY_MATCHERS, ROLE_RULES, Role, _by_rule, match_roles

CASES = list(csv.DictReader((Path(__file__).parent / "data" / "role_cases.csv").read_text().splitlines()))


@pytest.mark.parametrize("row", CASES, ids=[r["name"] for r in CASES])
def test_role_cases(row: dict[str, str]) -> None:
    t = TensorInfo(row["name"], (4, 4), "F32", 64, 0)
    m = _by_rule(t, FAMILY_MATCHERS[FAMILY[row["framework"]]])
    assert m is not None
    assert (m.role, m.layer, m.param) == (row["role"], row["layer"], row["param"])


def test_rule_ids_are_unique_and_roles_valid() -> None:
    ids = [r.rule_id for r in ROLE_RULES]
    assert len(ids) == len(set(ids))
    assert all(isinstance(r.role, Role) for r in ROLE_RULES)


def test_unmatched_names_are_reported_not_guessed() -> None:
    ckpt = load(Path(__file__).parent.parent / "sample_models" / "basic" / "mlp_fp16.safetensors")
    roles = {r.name: r for r in match_roles(ckpt)}
    assert roles["step"].role == "unmatched"
    assert roles["hidden.weight"].role == "dense"


def test_keras_rnn_layers_get_rnn_roles_from_their_recurrent_kernel() -> None:
    names = ["lstm_1/kernel:0", "lstm_1/recurrent_kernel:0", "lstm_1/bias:0", "dense_1/kernel:0"]
    ckpt = Checkpoint(
        "x", "keras-h5", "keras", (("x", 0),), tuple(TensorInfo(n, (4, 4), "F32", 64, 0) for n in names), ()
    )
    assert [r.role for r in match_roles(ckpt)] == ["rnn_input_kernel", "rnn_recurrent_kernel", "rnn_bias", "dense"]


def test_positional_arrays_by_shape_and_order(tmp_path: Path) -> None:
    """np.savez(*arrays) names arr_0, arr_1...: a 4-d kernel then a bias of its first dimension is a conv."""
    shapes = [(8, 1, 3, 3), (8,), (72, 10), (10,), (5, 5)]
    np.savez(tmp_path / "p.npz", *[np.zeros(s, dtype="float32") for s in shapes])
    roles = match_roles(load(tmp_path / "p.npz"))
    assert [(r.role, r.layer, r.param) for r in roles] == [
        ("conv", "layer0", "kernel"),
        ("conv", "layer0", "bias"),
        ("dense", "layer1", "kernel"),
        ("dense", "layer1", "bias"),
        ("unmatched", "arr_4", None),
    ]
