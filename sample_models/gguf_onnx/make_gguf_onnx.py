"""Make the GGUF and ONNX samples with the real libraries, and record what their own readers report in manifest.json.

    python sample_models/gguf_onnx/make_gguf_onnx.py

- llama-tiny-q8_0.gguf: a random tiny Llama from transformers, written the way convert_hf_to_gguf does (gguf-py's
  tensor name map, hyperparameter keys, a token list), matrices quantized to Q8_0 by gguf.quants, norms F32.
- llama-tiny-mixed.gguf: the same model with tied embeddings (no output.weight), attention Q4_0, FFN Q5_1,
  big-endian.
- cnn.onnx: a small CNN + LSTM exported by torch.onnx.export (legacy exporter, constant folding on).
- cnn_external.onnx + cnn_external.onnx.data: the same model saved by onnx.save with external data.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import gguf
import numpy as np
import onnx
import torch
from onnx import numpy_helper
from transformers import LlamaConfig, LlamaForCausalLM

HERE = Path(__file__).resolve().parent
Q = gguf.GGMLQuantizationType


def llama(tied: bool) -> Any:
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=96,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        tie_word_embeddings=tied,
    )
    return LlamaForCausalLM(cfg)


def write_gguf(path: Path, model: Any, qtype_of: dict[str, Any], **writer: Any) -> None:
    cfg = model.config
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, cfg.num_hidden_layers)
    w = gguf.GGUFWriter(str(path), "llama", **writer)
    w.add_name("llama-tiny")
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_rope_freq_base(10000.0)
    w.add_vocab_size(cfg.vocab_size)
    w.add_tokenizer_model("llama")
    w.add_token_list([f"tok{i}" for i in range(cfg.vocab_size)])
    w.add_token_scores([0.0] * cfg.vocab_size)
    for key, value in model.state_dict().items():
        if cfg.tie_word_embeddings and key == "lm_head.weight":
            continue
        name = names.get_name(key, try_suffixes=(".weight", ".bias"))
        array = value.numpy()
        qtype = next((q for part, q in qtype_of.items() if part in name), None) if array.ndim == 2 else None
        if qtype is None:
            w.add_tensor(name, array)
        else:
            w.add_tensor(name, gguf.quants.quantize(array, qtype), raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def gguf_entry(path: Path, model: Any) -> dict[str, Any]:
    reader = gguf.GGUFReader(str(path))
    return {
        "format": "gguf",
        "tensors": {
            t.name: [
                [int(d) for d in reversed(t.shape.tolist())],
                t.tensor_type.name,
                int(t.data_offset),
                int(t.n_bytes),
            ]
            for t in reader.tensors
        },
        "n_elements": int(sum(int(t.n_elements) for t in reader.tensors)),
        "hf_num_parameters": model.num_parameters(),
    }


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.fc = torch.nn.Linear(8 * 6 * 6, 10)
        self.ln = torch.nn.LayerNorm(10)
        self.emb = torch.nn.Embedding(20, 10)
        self.lstm = torch.nn.LSTM(10, 12, batch_first=True)

    def forward(self, x: Any, ids: Any) -> Any:
        y = self.ln(self.fc(torch.relu(self.conv(x)).flatten(1)))
        out, _ = self.lstm(self.emb(ids) + y[:, None, :])
        return out


def onnx_entry(path: Path, model: Any) -> dict[str, Any]:
    loaded = onnx.load(str(path), load_external_data=False)
    return {
        "format": "onnx",
        "initializers": {
            t.name: [list(t.dims), onnx.TensorProto.DataType.Name(t.data_type)] for t in loaded.graph.initializer
        },
        "torch_parameters": sum(p.numel() for p in model.parameters()),
    }


def main() -> None:
    manifest: dict[str, Any] = {}
    model = llama(tied=False)
    path = HERE / "llama-tiny-q8_0.gguf"
    write_gguf(path, model, {"": Q.Q8_0})
    manifest[path.name] = gguf_entry(path, model)
    model = llama(tied=True)
    path = HERE / "llama-tiny-mixed.gguf"
    write_gguf(path, model, {"attn": Q.Q4_0, "ffn": Q.Q5_1, "token_embd": Q.Q8_0}, endianess=gguf.GGUFEndian.BIG)
    manifest[path.name] = gguf_entry(path, model)

    torch.manual_seed(0)
    net = Net().eval()
    args = (torch.randn(1, 3, 8, 8), torch.randint(0, 20, (1, 5)))
    path = HERE / "cnn.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, args, str(path), dynamo=False)
    manifest[path.name] = onnx_entry(path, net)
    external = HERE / "cnn_external.onnx"
    onnx.save(
        onnx.load(str(path)),
        str(external),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="cnn_external.onnx.data",
        size_threshold=0,
    )
    manifest[external.name] = onnx_entry(external, net)
    loaded = onnx.load(str(external))
    manifest[external.name]["external_bytes"] = {
        t.name: numpy_helper.to_array(t).nbytes for t in loaded.graph.initializer
    }
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    for name in sorted(p.name for p in HERE.iterdir() if p.suffix in (".gguf", ".onnx", ".data")):
        print(f"{name}: {(HERE / name).stat().st_size:,} bytes")


if __name__ == "__main__":
    np.random.seed(0)
    main()
