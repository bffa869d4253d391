"""Checkpoints written by real packages' own model classes (test-sized, random weights), in the layouts their
released files have: each counts as the package's model does (`parameters()`), with its buffers apart.

- openai-whisper (`whisper.load_model` downloads `{"dims": ..., "model_state_dict": ...}` saved by `torch.save`): the
  audio encoder's sinusoidal position table is a registered buffer there (the text decoder's positions are learned).
- EnCodec (the `encodec` package: Bark's codec, `EncodecModel.encodec_model_24khz().state_dict()` as its released
  `.th` files): the residual quantizer's EMA codebooks (`quantizer.vq.layers.N._codebook.*`) are buffers.
- Segment Anything (the `segment_anything` package, its `sam_vit_*.pth` files: the model's `state_dict()`): the prompt
  encoder's random Fourier features are a registered buffer.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from inspector.records import TensorKind
from inspector.report import inspect

torch = pytest.importorskip("torch")

DIMS = {
    "n_mels": 80, "n_audio_ctx": 32, "n_audio_state": 64, "n_audio_head": 2, "n_audio_layer": 2, "n_vocab": 300,
    "n_text_ctx": 16, "n_text_state": 64, "n_text_head": 2, "n_text_layer": 2,
}  # fmt: skip


def test_openai_whisper_checkpoint_counts_as_the_model(tmp_path: Path) -> None:
    whisper_model = pytest.importorskip("whisper.model")  # (.ci/run installs openai-whisper with numba and tiktoken)
    torch.manual_seed(0)
    dims = whisper_model.ModelDimensions(**DIMS)
    model = whisper_model.Whisper(dims)
    path = tmp_path / "tiny.pt"
    torch.save({"dims": asdict(dims), "model_state_dict": model.state_dict()}, path)
    report = inspect(path)
    ckpt = report.checkpoint
    assert ckpt.n_parameters == sum(p.numel() for p in model.parameters())
    assert {k: ckpt.attributes[f"checkpoint.dims.{k}"] for k in DIMS} == {k: str(v) for k, v in DIMS.items()}
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


# EnCodec's modules import torchaudio for audio I/O, and no torchaudio wheel installs beside torch 2.13: the writing
# process stands an empty module in for it (the model never calls it)
ENCODEC_WRITER = """
import sys, types, torch
sys.modules["torchaudio"] = types.ModuleType("torchaudio")
from encodec import EncodecModel
model = EncodecModel.encodec_model_24khz(pretrained=False)
torch.save(model.state_dict(), sys.argv[1])
print(sum(p.numel() for p in model.parameters()), sum(b.numel() for b in model.buffers()))
"""


def test_encodec_checkpoint_counts_its_codebooks_as_buffers(tmp_path: Path) -> None:
    if importlib.util.find_spec("encodec") is None or importlib.util.find_spec("einops") is None:
        pytest.skip("encodec is not installed (pip install --no-deps encodec einops)")
    path = tmp_path / "encodec_24khz.th"
    written = subprocess.run([sys.executable, "-c", ENCODEC_WRITER, str(path)], capture_output=True, text=True)
    assert written.returncode == 0, written.stderr[-2000:]
    parameters, buffers = map(int, written.stdout.split())
    report = inspect(path)
    ckpt = report.checkpoint
    assert ckpt.n_parameters == parameters
    codebooks = [t for t in ckpt.tensors if "._codebook." in t.name]
    assert len(codebooks) == 32 * 4 and all(t.kind is TensorKind.BUFFER for t in codebooks)
    assert sum(t.n_elements for t in ckpt.tensors if t.kind is TensorKind.BUFFER) == buffers
    assert report.expectation is not None and report.expectation.matches
    assert not [f for f in report.findings if f.severity != "info"]


def test_segment_anything_checkpoint_counts_its_fourier_features_as_a_buffer(tmp_path: Path) -> None:
    # (.ci/run: pip install --no-deps segment-anything; it imports torchvision, which conftest lets import)
    build_sam = pytest.importorskip("segment_anything.build_sam")
    torch.manual_seed(0)
    model = build_sam._build_sam(
        encoder_embed_dim=64, encoder_depth=2, encoder_num_heads=2, encoder_global_attn_indexes=[1]
    )  # (the vit_b/l/h builders' code, a test-sized encoder; the prompt encoder and mask decoder as released)
    path = tmp_path / "sam_small.pth"
    torch.save(model.state_dict(), path)
    report = inspect(path)
    ckpt = report.checkpoint
    assert ckpt.n_parameters == sum(p.numel() for p in model.parameters())
    saved = set(model.state_dict()) - {n for n, _ in model.named_parameters()}
    assert saved == {"prompt_encoder.pe_layer.positional_encoding_gaussian_matrix"}
    assert {t.name for t in ckpt.tensors if t.kind is TensorKind.BUFFER} == saved
    assert report.expectation is not None and report.expectation.matches
    assert not [f for f in report.findings if f.severity != "info"]
