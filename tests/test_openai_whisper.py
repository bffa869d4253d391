"""openai-whisper's own checkpoints (`whisper.load_model` downloads `{"dims": ..., "model_state_dict": ...}` saved by
`torch.save`), written here by the package's own `Whisper` model (test-sized dimensions, random weights).

The audio encoder's sinusoidal position table is a registered buffer there (the text decoder's positions are learned):
the count is the model's `parameters()`, and every tensor has the role it has in the model.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest

from inspector.records import TensorKind
from inspector.report import inspect

torch = pytest.importorskip("torch")
whisper_model = pytest.importorskip("whisper.model")  # (openai-whisper; .ci/run installs it with numba and tiktoken)

DIMS = {
    "n_mels": 80, "n_audio_ctx": 32, "n_audio_state": 64, "n_audio_head": 2, "n_audio_layer": 2, "n_vocab": 300,
    "n_text_ctx": 16, "n_text_state": 64, "n_text_head": 2, "n_text_layer": 2,
}  # fmt: skip


def test_openai_whisper_checkpoint_counts_as_the_model(tmp_path: Path) -> None:
    torch.manual_seed(0)
    dims = whisper_model.ModelDimensions(**DIMS)
    model = whisper_model.Whisper(dims)
    path = tmp_path / "tiny.pt"
    torch.save({"dims": asdict(dims), "model_state_dict": model.state_dict()}, path)
    report = inspect(path)
    ckpt = report.checkpoint
    assert ckpt.n_parameters == sum(p.numel() for p in model.parameters())
    saved_buffers = {f"model_state_dict.{n}" for n in model.state_dict()} - {
        f"model_state_dict.{n}" for n, _ in model.named_parameters()
    }
    assert saved_buffers == {"model_state_dict.encoder.positional_embedding"}
    assert {t.name for t in ckpt.tensors if t.kind is TensorKind.BUFFER} == saved_buffers
    roles = {t.name.removeprefix("model_state_dict."): r.role for t, r in zip(ckpt.tensors, report.roles, strict=True)}
    assert "unmatched" not in roles.values()
    for side in ("encoder.blocks.1.attn", "decoder.blocks.0.cross_attn"):
        assert [roles[f"{side}.{p}.weight"] for p in ("query", "key", "value", "out")] == [
            "attention_query", "attention_key", "attention_value", "attention_output",
        ]  # fmt: skip
    assert (roles["decoder.blocks.1.mlp.0.weight"], roles["decoder.blocks.1.mlp.2.weight"]) == (
        "feedforward_up", "feedforward_down",
    )  # fmt: skip
    assert roles["decoder.positional_embedding"] == "position_embedding"
    exp = report.expectation
    assert exp is not None and exp.matches
    assert not [f for f in report.findings if f.severity != "info"]
