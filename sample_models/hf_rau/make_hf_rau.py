"""Make tiny Hugging Face and rau models with the real libraries and save them as the libraries do.

    pip install 'torch==2.13.0' transformers safetensors && pip install --no-deps rau
    python sample_models/hf_rau/make_hf_rau.py

Every model is randomly initialised from a config object (nothing is downloaded). manifest.json records,
for each file, what the producing library reports: the unique parameter count
(sum of p.numel() over model.parameters(), which counts tied weights once) and the tensors saved.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import safetensors
import torch
import transformers
from safetensors.torch import save_model

HERE = Path(__file__).resolve().parent


def unique_parameters(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def state(model: torch.nn.Module) -> dict[str, list[int]]:
    return {k: list(v.shape) for k, v in model.state_dict().items()}


def hf_models(manifest: dict) -> None:
    torch.manual_seed(0)
    gpt2 = transformers.GPT2LMHeadModel(
        transformers.GPT2Config(vocab_size=256, n_positions=64, n_embd=32, n_layer=2, n_head=4)
    )
    bert = transformers.BertModel(
        transformers.BertConfig(
            vocab_size=256,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
            max_position_embeddings=64,
        )
    )
    for name, model, shard in (
        ("gpt2-tiny", gpt2, None),
        ("bert-tiny", bert, None),
        ("bert-tiny-sharded", bert, "40KB"),
    ):
        folder = HERE / name
        shutil.rmtree(folder, ignore_errors=True)
        kwargs = {"max_shard_size": shard} if shard else {}
        model.save_pretrained(folder, **kwargs)
        files = sorted(
            p.name for p in folder.iterdir() if p.suffix in (".safetensors", ".json") and p.name != "config.json"
        )
        manifest[name] = {
            "made_by": f"transformers {transformers.__version__} save_pretrained, torch {torch.__version__}",
            "files": files,
            "n_parameters": unique_parameters(model),
            "state_dict": state(model),
        }


def rau_models(manifest: dict) -> None:
    from rau.models.rnn.language_model import get_lstm_language_model
    from rau.models.transformer.unidirectional_encoder import get_unidirectional_transformer_encoder

    torch.manual_seed(0)
    models = {
        "rau-lstm-lm.safetensors": (
            get_lstm_language_model(
                input_vocabulary_size=64,
                output_vocabulary_size=64,
                hidden_units=32,
                layers=3,
                dropout=0.0,
                learned_initial_state=True,
                use_padding=False,
            ),
            "rau-lstm-lm vocab=64 hidden=32 layers=3",
        ),
        "rau-transformer-lm.safetensors": (
            get_unidirectional_transformer_encoder(
                input_vocabulary_size=64,
                output_vocabulary_size=64,
                tie_embeddings=True,
                num_layers=2,
                d_model=32,
                num_heads=4,
                feedforward_size=64,
                dropout=0.0,
                use_padding=False,
            ),
            "rau-transformer-lm vocab=64 d_model=32 layers=2 heads=4 feedforward=64",
        ),
    }
    for name, (model, spec) in models.items():
        save_model(model, str(HERE / name))  # drops the tied duplicates, records the aliases in metadata
        manifest[name] = {
            "made_by": f"rau get_* (rau 0.2.0), safetensors {safetensors.__version__} save_model",
            "spec": spec,
            "n_parameters": unique_parameters(model),
            "state_dict": state(model),
        }


def main() -> None:
    manifest: dict = {}
    hf_models(manifest)
    rau_models(manifest)
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
