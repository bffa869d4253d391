"""8-bit quantized checkpoints written by the real libraries in tmp_path: their scales are the quantization's.

transformers' fine-grained FP8 (the layout of the DeepSeek-V3, Kimi-K2 and Qwen3 FP8 releases: `weight_scale_inv`, one
scale a 128 x 128 block) is a test-sized llama whose linear layers transformers' own `replace_with_fp8_linear` made
`FP8Linear`, written by `save_pretrained`; compressed-tensors' FP8 and INT8 (RedHat's and Neural Magic's models:
`weight_scale` a channel, `input_scale` a tensor) is the same llama quantized by `apply_quantization_config` and
`ModelCompressor.compress_model`, written by `save_pretrained`; bitsandbytes' 8-bit layers (transformers'
`load_in_8bit` on the CPU), written by `save_pretrained`. The reference count is the loaded model's own
(`num_parameters()`: the FP8 scales are parameters, bitsandbytes' row scales are not). Weights are random or
uninitialised: only headers are read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from inspector.quantized import QUANTIZATION_ROW, side_tensors
from inspector.records import TensorInfo, TensorKind
from inspector.registry import load
from inspector.report import Report, inspect

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

LLAMA = {
    "vocab_size": 256, "hidden_size": 64, "intermediate_size": 320, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2,
}  # fmt: skip
LINEARS = 2 * 7  # q, k, v, o, gate, up, down in each layer; lm_head is left as it is


def _llama() -> Any:
    torch.manual_seed(0)
    config = transformers.AutoConfig.for_model("llama", **LLAMA)
    return transformers.AutoModelForCausalLM.from_config(config)


def _fine_grained_fp8(folder: Path) -> int:
    """transformers' FP8Linear layers (block scales), saved: the loaded model's parameter count."""
    from transformers.integrations.finegrained_fp8 import replace_with_fp8_linear

    config = transformers.FineGrainedFP8Config(weight_block_size=(128, 128), modules_to_not_convert=["lm_head"])
    model = replace_with_fp8_linear(_llama(), modules_to_not_convert=["lm_head"], quantization_config=config)
    model = model.to_empty(device="cpu")  # (its layers are made on the meta device; the values are never read)
    model.config.quantization_config = config
    model.save_pretrained(folder)
    return int(model.num_parameters())


def _compressed_tensors(folder: Path, kind: str) -> int:
    """compressed-tensors' FP8 ("float") or INT8 ("int") weights a channel and static activations, compressed and
    saved: the compressed model's parameter count."""
    ct = pytest.importorskip("compressed_tensors")
    from compressed_tensors.compressors import ModelCompressor
    from compressed_tensors.quantization import QuantizationConfig, QuantizationStatus, apply_quantization_config

    scheme = {"num_bits": 8, "type": kind, "symmetric": True, "dynamic": False}
    config = QuantizationConfig.model_validate(
        {
            "config_groups": {
                "group_0": {
                    "targets": ["Linear"],
                    "weights": {**scheme, "strategy": "channel"},
                    "input_activations": {**scheme, "strategy": "tensor"},
                }
            },
            "format": f"{kind}-quantized",
            "ignore": ["lm_head"],
            "quantization_status": "initialized",
        }
    )
    model = _llama()
    apply_quantization_config(model, config)
    with torch.no_grad():  # (a calibration's result: a weight's absolute maximum a channel, activations at 1)
        top = 448.0 if kind == "float" else 127.0
        for module in model.modules():
            if hasattr(module, "weight_scale"):
                module.weight_scale.copy_(module.weight.abs().amax(dim=1, keepdim=True) / top)
                module.input_scale.fill_(1.0)
    config.quantization_status = QuantizationStatus.COMPRESSED
    compressor = ModelCompressor(quantization_config=config)
    compressor.compress_model(model)
    model.save_pretrained(folder)
    compressor.update_config(str(folder))
    del ct
    return sum(p.numel() for p in model.parameters())


WRITERS = {
    "fine_grained_fp8": (_fine_grained_fp8, "F8_E4M3", {"weight_scale_inv"}),
    "compressed_tensors_fp8": (
        lambda folder: _compressed_tensors(folder, "float"),
        "F8_E4M3",
        {"weight_scale", "input_scale"},
    ),  # fmt: skip
    "compressed_tensors_int8": (
        lambda folder: _compressed_tensors(folder, "int"),
        "I8",
        {"weight_scale", "input_scale"},
    ),
}


@pytest.mark.parametrize("layout", list(WRITERS))
def test_quantized_checkpoint_counts_its_scales_and_matches_the_family(tmp_path: Path, layout: str) -> None:
    """The file's count is the loaded model's, scales included; the family check counts the formula's weights as
    they are (a quantized weight keeps its shape) and the scales in a row of their own: no COUNT_MISMATCH (the check
    warned on every such file), nothing unmatched, every scale's role `quantization_scale` in its own module."""
    write, dtype, params = WRITERS[layout]
    reference = write(tmp_path)
    assert json.loads((tmp_path / "config.json").read_text())["quantization_config"]
    report: Report = inspect(tmp_path / "model.safetensors")
    ckpt = report.checkpoint
    assert ckpt.n_parameters == reference
    weights = [t for t in ckpt.tensors if t.dtype == dtype]
    assert len(weights) == LINEARS and all(t.name.endswith(".weight") for t in weights)
    side = side_tensors(ckpt.tensors)
    assert {t.name.rpartition(".")[2] for t in side} == params
    assert {t.name.rpartition(".")[0] for t in side} == {t.name.rpartition(".")[0] for t in weights}
    exp = report.expectation
    assert exp is not None and exp.source == "config" and exp.architecture == "llama"
    assert exp.matches and not exp.anomalies and exp.total == reference
    (row,) = [c for c in exp.layers if c.layer == QUANTIZATION_ROW]
    assert row.expected == row.found == sum(t.n_elements for t in side) and row.status == "ok"
    assert all(c.status == "ok" for c in exp.layers)
    assert {f.code for f in report.findings}.isdisjoint({"COUNT_MISMATCH", "UNMATCHED_NAME"})
    roles = {t.name: r for t, r in zip(ckpt.tensors, report.roles, strict=True)}
    for t in side:
        assert roles[t.name].role == "quantization_scale" and roles[t.name].layer == t.name.rpartition(".")[0]


def test_a_float_model_with_a_scale_named_tensor_is_not_quantized(tmp_path: Path) -> None:
    """A tensor named as a quantization's beside a float weight is the model's own: no quantization row, and the
    family check says what the formula lacks (the scales are read as quantization only beside an 8-bit weight)."""
    from safetensors.torch import save_file

    model = _llama()
    state = {name: value.contiguous() for name, value in model.state_dict().items()}
    state["model.layers.0.mlp.up_proj.weight_scale"] = torch.ones(LLAMA["intermediate_size"], 1)
    save_file(state, str(tmp_path / "model.safetensors"))
    model.config.save_pretrained(tmp_path)
    ckpt = load(tmp_path / "model.safetensors")
    assert side_tensors(ckpt.tensors) == []
    report = inspect(tmp_path / "model.safetensors")
    assert report.expectation is not None and not report.expectation.matches
    assert QUANTIZATION_ROW not in {c.layer for c in report.expectation.layers}
    assert "COUNT_MISMATCH" in {f.code for f in report.findings}


def test_side_tensors_need_the_module_weight_quantized() -> None:
    """`side_tensors` reads the module's own `weight`: a scale beside an 8-bit weight is the quantization's, one
    beside a float weight or in another module is not."""

    def tensor(name: str, dtype: str, shape: tuple[int, ...]) -> TensorInfo:
        return TensorInfo(name, shape, dtype, 0, None, kind=TensorKind.PARAMETER)

    tensors = (
        tensor("a.weight", "F8_E4M3", (4, 4)),
        tensor("a.weight_scale", "F32", (4, 1)),
        tensor("a.input_scale", "F32", ()),
        tensor("b.weight", "F32", (4, 4)),
        tensor("b.weight_scale", "F32", (4, 1)),
        tensor("c.weight_scale_inv", "F32", (1, 1)),
    )
    assert [t.name for t in side_tensors(tensors)] == ["a.weight_scale", "a.input_scale"]
    assert side_tensors(tensors[3:]) == []


def test_diff_of_a_model_and_its_fp8_quantization_takes_the_scales_as_the_quantization_s(tmp_path: Path) -> None:
    """`inspector diff` of a float model and its fine-grained FP8 file: each quantized weight's narrowing is a
    difference that changes the model, each scale beside it an expected one (it comes with the 8-bit weight)."""
    from safetensors.torch import save_file

    from inspector.diff import DiffKind, match
    from inspector.diff import diff as diff_records

    model = _llama()
    save_file(
        {name: value.contiguous() for name, value in model.state_dict().items()}, str(tmp_path / "float.safetensors")
    )
    _fine_grained_fp8(tmp_path / "fp8")
    a, b = load(tmp_path / "float.safetensors"), load(tmp_path / "fp8" / "model.safetensors")
    result = diff_records(a, b, match(a, b))
    extra = [d for d in result.differences if d.kind is DiffKind.EXTRA]
    narrowed = [d for d in result.differences if d.kind is DiffKind.DTYPE_CHANGED]
    assert {d.b for d in extra} == {t.name for t in side_tensors(b.tensors)} and len(extra) == LINEARS
    assert all(d.expected and "quantization's weight scales" in d.message for d in extra)
    assert len(narrowed) == LINEARS and not any(d.expected for d in narrowed)


def test_bitsandbytes_int8_checkpoint_counts_as_transformers_does(tmp_path: Path) -> None:
    """bitsandbytes' 8-bit layers (transformers' `load_in_8bit`, on the CPU) saved by `save_pretrained`: the int8
    weight is the parameter, its row scales and layout (`SCB`, `weight_format`) the weight's state, buffers, as
    transformers' `num_parameters()` counts them; the family check matches the config."""
    pytest.importorskip("bitsandbytes")
    _llama().save_pretrained(tmp_path / "float")
    config = transformers.BitsAndBytesConfig(load_in_8bit=True)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        tmp_path / "float", quantization_config=config, device_map="cpu"
    )
    model.save_pretrained(tmp_path / "int8")
    report = inspect(tmp_path / "int8" / "model.safetensors")
    ckpt = report.checkpoint
    assert ckpt.n_parameters == model.num_parameters()
    state = [t for t in ckpt.tensors if t.name.rpartition(".")[2] in ("SCB", "weight_format")]
    assert len(state) == 2 * LINEARS and all(t.kind is TensorKind.BUFFER for t in state)
    assert [t.dtype for t in ckpt.tensors if t.name.endswith("q_proj.weight")] == ["I8", "I8"]
    exp = report.expectation
    assert exp is not None and exp.source == "config" and exp.matches and not exp.anomalies
    assert {f.code for f in report.findings}.isdisjoint({"COUNT_MISMATCH", "UNMATCHED_NAME"})
