"""Make PyTorch samples with torch 2.13 (and transformers, rau) and record what torch reports.

    pip install 'torch==2.13.0' transformers && pip install --no-deps rau
    python sample_models/torch/make_torch.py

manifest.json records per file: the tensors torch.load returns (name -> shape, dtype), the unique
parameter count of the model (sum of p.numel() over model.parameters(): tied weights once), the
buffer elements, and the optimizer state elements, as torch computes them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch
import torch.nn as nn

HERE = Path(__file__).resolve().parent


class TiedLSTM(nn.Module):
    """An LSTM language model whose output layer shares the embedding matrix."""

    def __init__(self, vocab: int = 50, hidden: int = 16) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, hidden)
        self.lstm = nn.LSTM(hidden, hidden, num_layers=2, batch_first=True)
        self.norm = nn.BatchNorm1d(hidden)
        self.decoder = nn.Linear(hidden, vocab)
        self.decoder.weight = self.embedding.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, _ = self.lstm(self.embedding(x))
        return self.decoder(self.norm(h[:, -1]))


def flat(obj: object, prefix: str = "") -> dict[str, list]:
    """name -> [shape, dtype] of every tensor in a (nested) checkpoint, as torch.load returns it."""
    out: dict[str, list] = {}
    if isinstance(obj, torch.Tensor):
        out[prefix or "tensor"] = [list(obj.shape), str(obj.dtype).removeprefix("torch.")]
    elif isinstance(obj, dict):
        for k, v in obj.items():
            out.update(flat(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            out.update(flat(v, f"{prefix}.{i}" if prefix else str(i)))
    return out


def record(manifest: dict, name: str, model: nn.Module, **extra: object) -> None:
    loaded = torch.load(HERE / name, weights_only=False)
    manifest[name] = {
        "made_by": f"torch {torch.__version__}",
        "tensors": flat(loaded),
        "n_parameters": sum(p.numel() for p in model.parameters()),
        # persistent buffers only: those state_dict() saves
        "n_buffer_elements": sum(b.numel() for n, b in model.named_buffers() if n in model.state_dict()),
        **extra,
    }


def main() -> None:
    torch.manual_seed(0)
    manifest: dict = {}
    model = TiedLSTM()
    torch.save(model.state_dict(), HERE / "lstm_tied.pt")
    record(manifest, "lstm_tied.pt", model)
    torch.save(model.half().state_dict(), HERE / "lstm_tied_fp16.pt")  # the tie survives model.half()
    record(manifest, "lstm_tied_fp16.pt", model)
    torch.save(model.to(torch.bfloat16).state_dict(), HERE / "lstm_tied_bf16.pt")
    record(manifest, "lstm_tied_bf16.pt", model)
    model = model.float()
    torch.save(model.state_dict(), HERE / "lstm_tied_legacy.pt", _use_new_zipfile_serialization=False)
    record(manifest, "lstm_tied_legacy.pt", model)

    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model(torch.randint(0, 50, (4, 5))).sum().backward()
    opt.step()
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 1}, HERE / "adam_checkpoint.pt")
    opt_elements = sum(v.numel() for s in opt.state.values() for v in s.values() if isinstance(v, torch.Tensor))
    record(manifest, "adam_checkpoint.pt", model, n_optimizer_elements=opt_elements)

    from rau.models.rnn.language_model import get_lstm_language_model

    rau_lm = get_lstm_language_model(
        input_vocabulary_size=64,
        output_vocabulary_size=64,
        hidden_units=32,
        layers=3,
        dropout=0.0,
        learned_initial_state=True,
        use_padding=False,
    )
    torch.save(rau_lm.state_dict(), HERE / "rau_lstm_lm.pt")
    record(manifest, "rau_lstm_lm.pt", rau_lm, spec="rau-lstm-lm vocab=64 hidden=32 layers=3")

    import transformers

    gpt2 = transformers.GPT2LMHeadModel(
        transformers.GPT2Config(vocab_size=256, n_positions=64, n_embd=32, n_layer=2, n_head=4)
    )
    folder = HERE / "gpt2-tiny-bin"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    # transformers 5 only writes safetensors; pytorch_model.bin is what older save_pretrained wrote: the
    # state dict through torch.save, lm_head.weight sharing wte's storage.
    torch.save(gpt2.state_dict(), folder / "pytorch_model.bin")
    record(manifest, "gpt2-tiny-bin/pytorch_model.bin", gpt2, made_with=f"transformers {transformers.__version__}")
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
