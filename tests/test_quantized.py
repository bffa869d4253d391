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
import math
from pathlib import Path
from typing import Any

import pytest

from inspector.quantized import QUANTIZATION_ROW, quantization_tensors, side_tensors
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
    from compressed_tensors.quantization import QuantizationConfig, apply_quantization_config

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
    _compress_and_save(model, config, folder)
    del ct
    return sum(p.numel() for p in model.parameters())


def _compress_and_save(model: Any, config: Any, folder: Path) -> None:
    """compressed-tensors' compression of a calibrated model (its config's format), saved with its config."""
    from compressed_tensors.compressors import ModelCompressor
    from compressed_tensors.quantization import QuantizationStatus

    config.quantization_status = QuantizationStatus.COMPRESSED
    compressor = ModelCompressor(quantization_config=config)
    compressor.compress_model(model)
    model.save_pretrained(folder)
    compressor.update_config(str(folder))


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
    roles = {t.name: r for t, r in zip(ckpt.tensors, report.roles, strict=True)}
    assert {(roles[t.name].role, roles[t.name].layer) for t in state} == {
        ("quantization_state", t.name.rpartition(".")[0]) for t in state
    }
    assert [t.dtype for t in ckpt.tensors if t.name.endswith("q_proj.weight")] == ["I8", "I8"]
    exp = report.expectation
    assert exp is not None and exp.source == "config" and exp.matches and not exp.anomalies
    assert {f.code for f in report.findings}.isdisjoint({"COUNT_MISMATCH", "UNMATCHED_NAME"})


def _bnb_4bit(folder: Path, quant_type: str, double: bool, storage: str) -> Any:
    """A test-sized llama loaded 4-bit by transformers and bitsandbytes on the CPU: the loaded model."""
    pytest.importorskip("bitsandbytes")
    _llama().save_pretrained(folder / "float")
    config = transformers.BitsAndBytesConfig(
        load_in_4bit=True, bnb_4bit_quant_type=quant_type, bnb_4bit_use_double_quant=double,
        bnb_4bit_quant_storage=getattr(torch, storage),
    )  # fmt: skip
    return transformers.AutoModelForCausalLM.from_pretrained(folder / "float", quantization_config=config,
                                                              device_map="cpu")  # fmt: skip


BNB_4BIT = {  # quant type, double quantization, storage dtype -> the weights' dtype here, the state a weight keeps
    "nf4_double": ("nf4", True, "uint8", "NF4", {"absmax", "quant_map", "nested_absmax", "nested_quant_map"}),
    "fp4": ("fp4", False, "uint8", "BNB_FP4", {"absmax", "quant_map"}),
    "nf4_bf16_storage": ("nf4", False, "bfloat16", "NF4", {"absmax", "quant_map"}),
}


@pytest.mark.parametrize("layout", list(BNB_4BIT))
def test_bitsandbytes_4bit_checkpoint_counts_its_packed_values(tmp_path: Path, layout: str) -> None:
    """bitsandbytes' 4-bit layers (transformers' `load_in_4bit`, on the CPU) saved by `save_pretrained`: each weight
    is stored packed (two 4-bit values a byte of its storage dtype, in a column); its record holds the values it
    packs, so the count is transformers' `num_parameters()` (which counts them so; the tensors' own elements are
    fewer), its state (block scales, code maps, the state's record) are buffers of role `quantization_state` in the
    weight's module, and the family check matches the config (it warned COUNT_MISMATCH, reading q_dim off the
    packed column)."""
    quant_type, double, storage, dtype, state = BNB_4BIT[layout]
    model = _bnb_4bit(tmp_path, quant_type, double, storage)
    model.save_pretrained(tmp_path / "4bit")
    report = inspect(tmp_path / "4bit" / "model.safetensors")
    ckpt = report.checkpoint
    stored = sum(p.numel() for p in model.parameters())
    assert ckpt.n_parameters == model.num_parameters() > stored
    weights = [t for t in ckpt.tensors if t.dtype == dtype]
    assert len(weights) == LINEARS and all(t.shape[1:] == (1,) and t.kind is TensorKind.PARAMETER for t in weights)
    packed = {name: p for name, p in model.named_parameters() if p.dtype == getattr(torch, storage) and p.ndim == 2}
    for t in weights:  # the values a weight packs: 8 / 4 a byte of its storage
        assert t.n_elements == packed[t.name].numel() * 2 * packed[t.name].element_size() == t.nbytes * 2
        assert f"stored packed as {'U8' if storage == 'uint8' else 'BF16'}" in t.notes[-1]
    roles = {t.name: r for t, r in zip(ckpt.tensors, report.roles, strict=True)}
    kept = [t for t in ckpt.tensors if ".weight." in t.name]
    assert {t.name.split(".weight.")[1] for t in kept} == state | {f"quant_state.bitsandbytes__{quant_type}"}
    for t in kept:
        assert t.kind is TensorKind.BUFFER and not t.trainable
        assert roles[t.name].role == "quantization_state" and roles[t.name].layer == t.name.split(".weight.")[0]
    exp = report.expectation
    assert exp is not None and exp.source == "config" and exp.matches and not exp.anomalies
    assert exp.hyperparameters["q_dim"] == LLAMA["hidden_size"]
    assert {f.code for f in report.findings}.isdisjoint({"COUNT_MISMATCH", "UNMATCHED_NAME"})


def test_bitsandbytes_4bit_state_dict_without_config_is_explained(tmp_path: Path) -> None:
    """The same 4-bit model's `torch.save(state_dict())` alone (a PyTorch zip, no config): the same count, and the
    family inferred from names cannot read a packed weight's sizes, so it differs where the file shows how (an
    explanation, never a warning)."""
    model = _bnb_4bit(tmp_path, "nf4", True, "uint8")
    torch.save(model.state_dict(), tmp_path / "model.pt")
    report = inspect(tmp_path / "model.pt")
    assert report.checkpoint.format == "pytorch-zip"
    assert report.checkpoint.n_parameters == model.num_parameters()
    assert {t.dtype for t in report.checkpoint.tensors if t.name.endswith("proj.weight")} == {"NF4"}
    exp = report.expectation
    assert exp is not None and exp.source == "inferred" and (exp.matches or exp.explained)
    assert not [f for f in report.findings if f.severity != "info"]


def test_a_weight_named_absmax_without_a_quant_state_is_not_unpacked() -> None:
    """Only a weight with its 4-bit state's record beside it is read as packed: the record names the format."""
    from inspector.quantized import unpacked

    def tensor(name: str, dtype: str, shape: tuple[int, ...]) -> TensorInfo:
        return TensorInfo(name, shape, dtype, shape[0], 0, kind=TensorKind.PARAMETER)

    tensors = [
        tensor("a.weight", "U8", (8, 1)),
        tensor("a.weight.absmax", "F32", (1,)),
        tensor("b.weight", "U8", (8, 1)),
        tensor("b.weight.quant_state.bitsandbytes__fp4", "U8", (90,)),
    ]
    unpacked(tensors)
    assert [(t.shape, t.dtype) for t in tensors[::2]] == [((8, 1), "U8"), ((16, 1), "BNB_FP4")]


def test_diff_of_a_model_and_its_4bit_quantization(tmp_path: Path) -> None:
    """`inspector diff` of a float model and its bitsandbytes 4-bit file: each weight's narrowing to NF4 changes the
    model; its packing into a column (the same values) and its state only B has are expected differences."""
    from inspector.diff import DiffKind, match
    from inspector.diff import diff as diff_records

    model = _bnb_4bit(tmp_path, "nf4", True, "uint8")
    model.save_pretrained(tmp_path / "4bit")
    a, b = load(tmp_path / "float" / "model.safetensors"), load(tmp_path / "4bit" / "model.safetensors")
    result = diff_records(a, b, match(a, b))
    by_kind: dict[DiffKind, list[Any]] = {}
    for d in result.differences:
        by_kind.setdefault(d.kind, []).append(d)
    narrowed, packed = by_kind[DiffKind.DTYPE_CHANGED], by_kind[DiffKind.SHAPE_CHANGED]
    assert len(narrowed) == LINEARS and not any(d.expected for d in narrowed)
    assert len(packed) == LINEARS and all(d.expected and "packed into a column" in d.message for d in packed)
    assert len(by_kind[DiffKind.EXTRA]) == 5 * LINEARS
    assert all(d.expected and "bitsandbytes' state" in d.message for d in by_kind[DiffKind.EXTRA])
    assert set(by_kind) == {DiffKind.DTYPE_CHANGED, DiffKind.SHAPE_CHANGED, DiffKind.EXTRA}
    assert len({d.layer for d in result.differences}) == LINEARS  # (each weight's state in its module's row)


PACK_QUANTIZED = {  # num_bits, symmetric -> the values' dtype, the tensors beside each packed weight
    "w4_symmetric": (4, True, "I4", {"weight_scale", "weight_shape"}),
    "w4_asymmetric": (4, False, "I4", {"weight_scale", "weight_zero_point", "weight_shape"}),
    "w8_symmetric": (8, True, "I8", {"weight_scale", "weight_shape"}),
}


@pytest.mark.parametrize("layout", list(PACK_QUANTIZED))
def test_compressed_tensors_pack_quantized_checkpoint_unpacks_its_weights(tmp_path: Path, layout: str) -> None:
    """compressed-tensors' `pack-quantized` format (RedHat's W4A16 models: a weight's values packed into int32 along
    its last axis, `weight_packed`, 32 / num_bits an element), a group's scales, zero points and the weight's shape
    beside it, written by `ModelCompressor` and `save_pretrained`: each packed weight is read at the float model's
    own shape in its values' dtype (the config's num_bits), the tensors beside it are the quantization's (their own
    row), and the family check matches (it warned COUNT_MISMATCH, counting the int32 elements). The compressed
    model's own `num_parameters()` counts the int32 elements: the file's count is the float model's and the
    quantization's tensors, said in README."""
    ct = pytest.importorskip("compressed_tensors")
    from compressed_tensors.quantization import QuantizationConfig, apply_quantization_config

    bits, symmetric, dtype, beside = PACK_QUANTIZED[layout]
    scheme = {"num_bits": bits, "type": "int", "symmetric": symmetric, "dynamic": False, "strategy": "group",
              "group_size": 32}  # fmt: skip
    config = QuantizationConfig.model_validate(
        {
            "config_groups": {"group_0": {"targets": ["Linear"], "weights": scheme}},
            "format": "pack-quantized",
            "ignore": ["lm_head"],
            "quantization_status": "initialized",
        }
    )
    model = _llama()
    shapes = {name: tuple(p.shape) for name, p in model.named_parameters()}
    apply_quantization_config(model, config)
    with torch.no_grad():  # (a calibration's result: any scale will do, the values are never read)
        for module in model.modules():
            if hasattr(module, "weight_scale"):
                module.weight_scale.fill_(0.01)
    _compress_and_save(model, config, tmp_path)
    del ct
    report = inspect(tmp_path / "model.safetensors")
    ckpt = report.checkpoint
    weights = [t for t in ckpt.tensors if t.name.endswith(".weight_packed")]
    assert len(weights) == LINEARS
    for t in weights:  # the float model's own shape, in the values' dtype
        assert (t.dtype, t.shape) == (dtype, shapes[t.name.replace("weight_packed", "weight")])
        assert t.nbytes == t.n_elements * bits // 8 and "pack-quantized" in t.notes[-1]
    side = side_tensors(ckpt.tensors)
    assert {t.name.rpartition(".")[2] for t in side} == beside and len(side) == len(beside) * LINEARS
    float_count = sum(map(math.prod, shapes.values()))
    assert ckpt.n_parameters == float_count + sum(t.n_elements for t in side) > model.num_parameters()
    exp = report.expectation
    assert exp is not None and exp.source == "config" and exp.matches and not exp.anomalies
    assert exp.total - exp.layers[-1].expected == float_count and exp.layers[-1].layer == QUANTIZATION_ROW
    assert {f.code for f in report.findings}.isdisjoint({"COUNT_MISMATCH", "UNMATCHED_NAME"})
    (tmp_path / "config.json").unlink()  # alone, its num_bits unknown: the int32 elements, as compressed-tensors counts
    alone = inspect(tmp_path / "model.safetensors")
    assert alone.checkpoint.n_parameters == model.num_parameters()
    assert not [f for f in alone.findings if f.severity != "info"]


def test_packing_read_from_the_config() -> None:
    """Only a config naming a packed layout with bits it packs so unpacks its weights: compressed-tensors whose
    weights are all pack-quantized with one num_bits, GPTQ in its own checkpoint format, AWQ's GEMM, GEMV and GEMVFast
    versions."""
    from inspector.quantized import PACKINGS, packing_of

    def config(fmt: str, *bits: int) -> dict[str, Any]:
        groups = {f"g{i}": {"targets": ["Linear"], "weights": {"num_bits": b}} for i, b in enumerate(bits)}
        return {"quantization_config": {"quant_method": "compressed-tensors", "format": fmt, "config_groups": groups}}

    def quantization(**words: Any) -> dict[str, Any]:
        return {"quantization_config": words}

    compressed = PACKINGS["pack-quantized"]
    assert packing_of(config("pack-quantized", 4)) == (compressed, 4)
    assert packing_of(config("pack-quantized", 4, 4)) == (compressed, 4)
    assert packing_of(config("pack-quantized", 4, 8)) is None
    assert packing_of(config("float-quantized", 8)) is None
    assert packing_of(quantization(quant_method="gptq", bits=4, group_size=128)) == (PACKINGS["gptq"], 4)
    assert packing_of(quantization(quant_method="gptq", bits=8, checkpoint_format="gptq_v2")) == (PACKINGS["gptq"], 8)
    assert packing_of(quantization(quant_method="gptq", bits=4, checkpoint_format="marlin")) is None
    assert packing_of(quantization(quant_method="gptq", bits=3)) == (PACKINGS["gptq"], 3)
    assert packing_of(quantization(quant_method="gptq", bits=5)) is None
    assert packing_of(quantization(quant_method="awq", bits=4, version="GEMM")) == (PACKINGS["awq"], 4)
    assert packing_of(quantization(quant_method="awq", w_bit=4, version="gemv")) == (PACKINGS["awq-gemv"], 4)
    gemv_fast = (PACKINGS["awq-gemv-fast"], 4)
    assert packing_of(quantization(quant_method="awq", w_bit=4, version="GEMV_Fast")) == gemv_fast
    assert packing_of(quantization(quant_method="awq", w_bit=4, version="marlin")) is None
    assert packing_of(quantization(quant_method="bitsandbytes", load_in_4bit=True)) is None
    assert packing_of(None) is None and packing_of({"model_type": "llama"}) is None


# GPTQ and AWQ checkpoints as their libraries write them: each linear layer but the head replaced by the library's own
# quantized layer, packed by its own code (AutoGPTQ's QuantLinear.pack, AutoAWQ's WQLinear_GEMM.from_linear) and saved
# with the config's quantization_config. Neither package imports beside transformers 5 (their __init__ loads their
# model classes), so the writing process loads only the layer's module: AutoGPTQ's from its file, AutoAWQ's with its
# package folders standing without their __init__. Prints the float model's count and the quantized one's buffers.
PACKED_WRITER = """
from tests.vision import make_importable
make_importable()  # (transformers imports torchvision where it is installed)
import importlib.util, json, sys, types, torch, transformers
from pathlib import Path
from safetensors.torch import save_file
method, folder = sys.argv[1], Path(sys.argv[2])
bits, version = (int(sys.argv[5]), sys.argv[6]) if len(sys.argv) > 5 else (4, "gemm")  # (GPTQ's bits, AWQ's layout)
root = Path(importlib.util.find_spec({"gptq": "auto_gptq", "awq": "awq"}[method]).submodule_search_locations[0])
if method == "gptq":
    spec = importlib.util.spec_from_file_location("qlinear", root / "nn_modules/qlinear/qlinear_cuda_old.py")
    layer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(layer)
else:
    for package in ("awq", "awq.utils", "awq.modules", "awq.modules.linear"):
        stand_in = types.ModuleType(package)
        stand_in.__path__ = [str(root.parent / package.replace(".", "/"))]
        sys.modules[package] = stand_in
    import awq.modules.linear.gemm as layer
    import awq.utils.packing_utils as packing
    import awq.modules.linear.gemv as gemv
    import awq.modules.linear.gemv_fast as gemv_fast
torch.manual_seed(0)
config = transformers.AutoConfig.for_model("llama", **json.loads(sys.argv[3]))
model = transformers.AutoModelForCausalLM.from_config(config)
count, group = model.num_parameters(), 32
floats = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
name_of = {m: n for n, m in model.named_modules()}
reference = {}  # each packed layer's weight as the library dequantizes it
for module in list(model.modules()):
    for name, linear in list(module.named_children()):
        if isinstance(linear, torch.nn.Linear) and name != "lm_head":
            groups = linear.in_features // group
            # symmetric scales a group of a row (its largest magnitude over the top code), the zero point mid-range
            top = 2 ** (bits - 1) - 1
            scales = linear.weight.detach().reshape(linear.out_features, groups, group).abs().amax(-1) / top
            zeros = torch.full_like(scales, 2.0 ** (bits - 1))
            if method == "gptq":
                packed = layer.QuantLinear(bits, group, linear.in_features, linear.out_features, False)
                g_idx = torch.arange(linear.in_features, dtype=torch.int32) // group
                packed.pack(linear, scales, zeros, g_idx)
                # its own dequantization: the forward of its layer without the CUDA kernels, of the identity
                reference[name_of[linear] + ".weight"] = packed(torch.eye(linear.in_features)).T.contiguous()
            elif version == "gemv":  # (its scales and zeros are (out, groups), padded with unused groups)
                packed = gemv.WQLinear_GEMV.from_linear(linear, 4, group, scales=scales, zeros=zeros)
                # its values and zero points unpacked by AutoAWQ's own `unpack_awq` (GEMV keeps their order), as its
                # kernel dequantizes them: (q - z) * scales, a group of a row each
                values, zero = packing.unpack_awq(packed.qweight, packed.qzeros, 4)
                zero = (zero & 15).repeat_interleave(group, 1)[:, : linear.in_features]
                reference[name_of[linear] + ".weight"] = ((values & 15) - zero).float() * packed.scales.float(
                    ).repeat_interleave(group, 1)[:, : linear.in_features]  # fmt: skip
            elif version == "gemv_fast":  # (its scales and zeros are (groups, out))
                packed = gemv_fast.WQLinear_GEMVFast.from_linear(linear, 4, group, scales=scales, zeros=zeros)
                # the values its `from_linear` computes (checked: its own `pack_intweight` of them is the qweight
                # stored), as its kernel dequantizes them: q * scales + qzeros (qzeros = -scale x zero)
                tables = packed.scales.T[:, :groups].float().repeat_interleave(group, 1)
                shift = (zeros * scales).repeat_interleave(group, 1)
                values = torch.round((linear.weight.detach() + shift) / tables).to(torch.int32)
                assert torch.equal(gemv_fast.pack_intweight(values, interleave=4, kstride=64), packed.qweight)
                reference[name_of[linear] + ".weight"] = values.float() * tables + packed.qzeros.T[:, :groups].float(
                    ).repeat_interleave(group, 1)  # fmt: skip
            else:
                packed = layer.WQLinear_GEMM.from_linear(linear, 4, group, scales=scales.T.contiguous(),
                                                         zeros=zeros.T.contiguous())
                reference[name_of[linear] + ".weight"] = packing.dequantize_gemm(
                    packed.qweight, packed.qzeros, packed.scales, 4, group).T.contiguous()
            setattr(module, name, packed)
save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(folder / "model.safetensors"),
          metadata={"format": "pt"})
if reference:  # (the float model and the library's dequantization, beside the checkpoint)
    save_file(reference, str(folder / "reference.safetensors"))
    save_file(floats, str(folder / "float.safetensors"))
words = {"quant_method": method, "bits": bits, "group_size": group}
words.update({"desc_act": False, "sym": True} if method == "gptq" else {"version": version, "zero_point": True})
if sys.argv[4] == "beside":  # before transformers read it from config.json: the libraries' own files beside it
    (folder / "config.json").write_text(json.dumps(config.to_dict()))
    if method == "gptq":  # (AutoGPTQ's BaseQuantizeConfig.to_dict before it named its quant_method)
        words = {"bits": 4, "group_size": group, "damp_percent": 0.01, "desc_act": False, "static_groups": False,
                 "sym": True, "true_sequential": True, "model_name_or_path": None, "model_file_base_name": None}
        (folder / "quantize_config.json").write_text(json.dumps(words))
    else:  # (AutoAWQ's quant_config.json)
        words = {"zero_point": True, "q_group_size": group, "w_bit": 4, "version": "GEMM"}
        (folder / "quant_config.json").write_text(json.dumps(words))
else:
    (folder / "config.json").write_text(json.dumps({**config.to_dict(), "quantization_config": words}))
print(count, sum(b.numel() for n, b in model.named_buffers() if not n.endswith(("qweight", "inv_freq"))))
"""


@pytest.mark.parametrize("config", ["in_config", "beside"])
@pytest.mark.parametrize(("method", "package"), [("gptq", "auto_gptq"), ("awq", "awq")])
def test_gptq_and_awq_checkpoints_unpack_their_weights(tmp_path: Path, method: str, package: str, config: str) -> None:
    """GPTQ (`qweight` (in / 8, out), `qzeros`, `scales`, `g_idx`) and AWQ's GEMM layout (`qweight` (in, out / 8),
    `qzeros`, `scales`), written by their libraries' own layers: each `qweight` is read as its 4-bit values at torch's
    Linear shape, the tensors beside it are buffers (as the libraries hold them), so the count is the float model's
    and the family check matches the config (it warned COUNT_MISMATCH, counting int32 elements as parameters). The
    quantization is read from config.json, or from the file the library wrote beside it (`beside`: AutoGPTQ's
    quantize_config.json, AutoAWQ's quant_config.json) where config.json does not say it."""
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec(package) is None:
        pytest.skip(f"{package} is not installed (pip install --no-deps {package.replace('_', '-')})")
    root = Path(__file__).resolve().parent.parent  # (the writer imports tests.vision)
    written = subprocess.run(
        [sys.executable, "-c", PACKED_WRITER, method, str(tmp_path), json.dumps(LLAMA), config],
        capture_output=True, text=True, cwd=root,
    )  # fmt: skip
    assert written.returncode == 0, written.stderr[-3000:]
    count, state = map(int, written.stdout.split()[-2:])
    shapes = {name: tuple(p.shape) for name, p in _llama().named_parameters()}
    report = inspect(tmp_path / "model.safetensors")
    ckpt = report.checkpoint
    assert ckpt.n_parameters == count
    packed = [t for t in ckpt.tensors if t.name.endswith(".qweight")]
    assert len(packed) == LINEARS
    for t in packed:  # torch's Linear shape, as the float model has it
        assert (t.dtype, t.shape, t.kind) == ("U4", shapes[t.name.replace("qweight", "weight")], TensorKind.PARAMETER)
        assert t.nbytes * 2 == t.n_elements and f"{method.upper()} weight stored packed" in t.notes[-1]
    buffers = [t for t in ckpt.tensors if t.kind is TensorKind.BUFFER and "rotary" not in t.name]
    names = {"qzeros", "scales", "g_idx"} if method == "gptq" else {"qzeros", "scales"}
    assert {t.name.rpartition(".")[2] for t in buffers} == names and len(buffers) == len(names) * LINEARS
    assert sum(t.n_elements for t in buffers) == state
    roles = {t.name: r for t, r in zip(ckpt.tensors, report.roles, strict=True)}
    assert {(roles[t.name].role, roles[t.name].layer, roles[t.name].param) for t in buffers} == {
        ("quantization_state", *t.name.rpartition(".")[::2]) for t in buffers
    }  # (the quantization's state in its module, as bitsandbytes' is: they were generic buffers)
    exp = report.expectation
    assert exp is not None and exp.source == "config" and exp.matches and exp.total == count
    assert {f.code for f in report.findings}.isdisjoint({"COUNT_MISMATCH", "UNMATCHED_NAME"})
    if config == "in_config":  # a diff against the float model: each weight's narrowing, its state expected
        from safetensors.torch import save_file

        from inspector.diff import DiffKind, match
        from inspector.diff import diff as diff_records

        save_file({k: v.contiguous() for k, v in _llama().state_dict().items()}, str(tmp_path / "float.safetensors"))
        a, b = load(tmp_path / "float.safetensors"), load(tmp_path / "model.safetensors")
        result = diff_records(a, b, match(a, b))
        changes = {d.kind for d in result.differences if not d.expected}
        assert changes == {DiffKind.DTYPE_CHANGED}
        extra = [d for d in result.differences if d.kind is DiffKind.EXTRA]
        assert len(extra) == len(names) * LINEARS and all("state beside its packed weight" in d.message for d in extra)


@pytest.mark.parametrize(
    ("method", "package", "bits", "version"),
    [("gptq", "auto_gptq", 3, ""), ("awq", "awq", 4, "gemv"), ("awq", "awq", 4, "gemv_fast")],
)
def test_gptq_3_bit_and_awq_gemv_checkpoints_unpack_their_weights(
    tmp_path: Path, method: str, package: str, bits: int, version: str
) -> None:
    """GPTQ at 3 bits (`qweight` (in x 3 / 32, out): 32 values run across three words), AWQ's GEMV layout
    (`qweight` (out, in / 8), `qzeros` and `scales` of (out, groups padded to a multiple of 8 x 4)) and its GEMVFast
    layout (`qweight` int16 (out / 4, in): 4 rows' values interleaved in each element; `qzeros` and `scales` of (groups
    padded, out)), packed by their libraries' own layers on the CPU (AutoGPTQ's QuantLinear, AutoAWQ's WQLinear_GEMV
    and WQLinear_GEMVFast): each weight read as its values at torch's Linear shape, the rest buffers, the count the
    float model's, no warning (they counted their words before)."""
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec(package) is None:
        pytest.skip(f"{package} is not installed (pip install --no-deps {package.replace('_', '-')})")
    root = Path(__file__).resolve().parent.parent
    written = subprocess.run(
        [sys.executable, "-c", PACKED_WRITER, method, str(tmp_path), json.dumps(LLAMA), "in_config", str(bits),
         version], capture_output=True, text=True, cwd=root,
    )  # fmt: skip
    assert written.returncode == 0, written.stderr[-3000:]
    count, state = map(int, written.stdout.split()[-2:])
    shapes = {name: tuple(p.shape) for name, p in _llama().named_parameters()}
    report = inspect(tmp_path / "model.safetensors")
    assert report.checkpoint.n_parameters == count
    packed = [t for t in report.checkpoint.tensors if t.name.endswith(".qweight")]
    assert len(packed) == LINEARS
    for t in packed:
        assert (t.dtype, t.shape) == (f"U{bits}", shapes[t.name.replace("qweight", "weight")])
        assert t.nbytes * 8 == t.n_elements * bits
    buffers = [t for t in report.checkpoint.tensors if t.kind is TensorKind.BUFFER and "rotary" not in t.name]
    assert sum(t.n_elements for t in buffers) == state
    exp = report.expectation
    assert exp is not None and exp.source == "config" and exp.matches and exp.total == count
    assert {f.code for f in report.findings}.isdisjoint({"COUNT_MISMATCH", "COUNT_EXPLAINED", "UNMATCHED_NAME"})


def test_a_parameter_named_as_a_quantizations_state_is_no_state(tmp_path: Path) -> None:
    """`qzeros`, `scales`, `g_idx` (GPTQ's, AWQ's) and `biases` (MLX's) are a quantization's state where a config
    declaring it makes them buffers (above); in a file no config declares quantized they are the module's parameters,
    their role not the quantization's."""
    np = pytest.importorskip("numpy")
    from safetensors.numpy import save_file

    names = ("proj.weight", "proj.qzeros", "proj.scales", "proj.g_idx", "proj.biases")
    save_file({name: np.ones((4, 4), np.float32) for name in names}, tmp_path / "model.safetensors")
    report = inspect(tmp_path / "model.safetensors")
    assert all(t.kind is TensorKind.PARAMETER for t in report.checkpoint.tensors)
    assert "quantization_state" not in {r.role for r in report.roles}


def test_a_quantization_packed_in_a_layout_not_read_explains_its_modules(tmp_path: Path) -> None:
    """A config declaring a quantization whose packing `PACKINGS` does not read (GPTQ's Marlin format here, over the
    bytes AutoGPTQ packs) leaves the packed weights as the tensors they are; the modules they are in differ from the
    formula, explained by the declared quantization (a note), never a warning: the family still checks every other
    module (a config naming a quantization the inspector does not know would otherwise cry wolf)."""
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec("auto_gptq") is None:
        pytest.skip("auto_gptq is not installed (pip install --no-deps auto-gptq)")
    root = Path(__file__).resolve().parent.parent
    written = subprocess.run(
        [sys.executable, "-c", PACKED_WRITER, "gptq", str(tmp_path), json.dumps(LLAMA), "in_config"],
        capture_output=True, text=True, cwd=root,
    )  # fmt: skip
    assert written.returncode == 0, written.stderr[-3000:]
    config = json.loads((tmp_path / "config.json").read_text())
    config["quantization_config"]["checkpoint_format"] = "marlin"
    (tmp_path / "config.json").write_text(json.dumps(config))
    report = inspect(tmp_path / "model.safetensors")
    assert {t.dtype for t in report.checkpoint.tensors if t.name.endswith(".qweight")} == {"I32"}  # (not unpacked)
    exp = report.expectation
    assert exp is not None and exp.source == "config" and exp.explained and not exp.anomalies
    assert any(note.startswith("quantized by gptq") for note in exp.notes)
    assert {c.layer for c in exp.layers if c.status != "ok"} == {"model.layers.0", "model.layers.1"}
    assert "COUNT_MISMATCH" not in {f.code for f in report.findings}
    assert "COUNT_EXPLAINED" in {f.code for f in report.findings}


@pytest.mark.parametrize(("rows", "warned"), [(16, False), (256, True)])
def test_a_declared_quantization_explains_only_fewer_elements(tmp_path: Path, rows: int, warned: bool) -> None:
    """A config declaring a quantization the inspector does not unpack explains a module stored in integers with
    fewer elements than the formula gives (a packing's mark); one holding more is still a difference (the llama's
    q_proj weight here replaced by an int32 tensor of 16 x 64 (fewer than its 64 x 64) or 256 x 64 (more))."""
    from safetensors.torch import save_file

    model = _llama()
    state = {name: value.contiguous() for name, value in model.state_dict().items()}
    state["model.layers.0.self_attn.q_proj.weight"] = torch.zeros(rows, LLAMA["hidden_size"], dtype=torch.int32)
    save_file(state, str(tmp_path / "model.safetensors"))
    config = {**model.config.to_dict(), "quantization_config": {"quant_method": "exl2", "bits": 4}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    report = inspect(tmp_path / "model.safetensors")
    exp = report.expectation
    assert exp is not None and exp.source == "config" and not exp.matches
    assert ("COUNT_MISMATCH" in {f.code for f in report.findings}) is warned
    assert bool(exp.anomalies) is warned and any(n.startswith("quantized by exl2") for n in exp.notes) is not warned


GPT_OSS = {
    "model_type": "gpt_oss", "vocab_size": 128, "hidden_size": 64, "intermediate_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "num_local_experts": 4,
    "num_experts_per_tok": 2, "layer_types": ["sliding_attention", "full_attention"],
}  # fmt: skip
GPT_OSS_KEPT = ["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]


def _gpt_oss_mxfp4(folder: Path) -> tuple[int, dict[str, Any]]:
    """A test-sized gpt-oss in OpenAI's release layout: `save_pretrained` writes its experts as values, then each
    fused projection is rewritten as MXFP4 blocks (U8 (experts, out, in / 32, 16)) and scales (U8 (experts, out,
    in / 32)) under the release's names, and the config declares `quant_method: mxfp4` as the release's does. The
    reference is transformers' own reading of that file: `from_pretrained` (which dequantizes the blocks on a CPU)
    and `num_parameters()`."""
    from safetensors.torch import load_file, save_file

    torch.manual_seed(0)
    transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**GPT_OSS)).save_pretrained(folder)
    tensors = load_file(folder / "model.safetensors")
    g = torch.Generator().manual_seed(1)
    for name in [n for n in tensors if n.endswith(("experts.gate_up_proj", "experts.down_proj"))]:
        experts, inputs, outputs = tensors.pop(name).shape  # (transformers holds them (experts, in, out))
        tensors[name + "_blocks"] = torch.randint(
            0, 256, (experts, outputs, inputs // 32, 16), dtype=torch.uint8, generator=g
        )
        tensors[name + "_scales"] = torch.randint(
            120, 130, (experts, outputs, inputs // 32), dtype=torch.uint8, generator=g
        )
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    words = json.loads((folder / "config.json").read_text())
    words["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": GPT_OSS_KEPT}
    (folder / "config.json").write_text(json.dumps(words))
    n = int(transformers.AutoModelForCausalLM.from_pretrained(folder).num_parameters())
    return n, tensors


def test_gpt_oss_mxfp4_release_counts_the_values_its_blocks_pack(tmp_path: Path) -> None:
    n, tensors = _gpt_oss_mxfp4(tmp_path)
    stored = sum(t.numel() for t in tensors.values())
    blocks = [name for name in tensors if name.endswith("_blocks")]
    report = inspect(tmp_path / "model.safetensors")
    ckpt = report.checkpoint
    assert n > stored and ckpt.n_parameters == n  # the values, as transformers counts them: not the bytes
    by_name = {t.name: t for t in ckpt.tensors}
    for name in blocks:
        t = by_name[name]
        e, rows, count, width = tensors[name].shape
        assert t.shape == (e, rows, count * width * 2) and t.dtype == "F4" and "MXFP4" in t.notes[-1]
        scales = by_name[name.removesuffix("_blocks") + "_scales"]
        assert scales.kind is TensorKind.BUFFER and scales.n_elements == e * rows * count
        assert "MXFP4's scales" in quantization_tensors(ckpt.tensors)[id(scales)]  # (`inspector diff` groups them so)
    exp = report.expectation
    assert exp is not None and exp.source == "config" and exp.architecture == "gpt_oss-mxfp4" and exp.matches
    assert "COUNT_MISMATCH" not in {f.code for f in report.findings}
    (tmp_path / "config.json").unlink()  # without the config: the layout itself says how the blocks pack
    report = inspect(tmp_path / "model.safetensors")
    assert report.checkpoint.n_parameters == n
    assert report.expectation is not None and report.expectation.architecture == "gpt_oss-mxfp4"
    assert report.expectation.matches


def test_u8_tensors_named_as_blocks_without_their_scales_are_not_unpacked() -> None:
    from inspector.quantized import block_packing_of

    def u8(name: str, shape: tuple[int, ...]) -> TensorInfo:
        return TensorInfo(name, shape, "U8", math.prod(shape), 0)

    release = [u8("e.gate_up_proj_blocks", (4, 8, 2, 16)), u8("e.gate_up_proj_scales", (4, 8, 2))]
    assert block_packing_of(None, release) is not None
    assert block_packing_of(None, release[:1]) is None  # (no scales beside it)
    assert block_packing_of(None, [release[0], u8("e.gate_up_proj_scales", (4, 8, 3))]) is None  # (not one a block)
    assert block_packing_of(None, [u8("e.gate_up_proj_blocks", (4, 8, 2, 8)), release[1]]) is None  # (a block's bytes)
    assert block_packing_of({"quantization_config": {"quant_method": "gptq"}}, release) is None  # (the config's word)


def test_compressed_tensors_kv_cache_scales_on_the_attention_are_the_quantization_s(tmp_path: Path) -> None:
    """compressed-tensors' FP8 with a KV cache scheme (RedHat's `-FP8-KV` models, llm-compressor's layout) registers
    `k_scale` and `v_scale` on the attention module itself, beside its quantized projections: they are the
    quantization's (the check warned COUNT_MISMATCH, a module the formula lacks), and the count is the compressed
    model's `num_parameters()`. compressed-tensors 0.20 tells an attention by a forward taking `past_key_values`, which
    transformers 5 calls `cache`: the test tells it the attention modules (its own check, less that argument)."""
    pytest.importorskip("compressed_tensors")
    import compressed_tensors.quantization.lifecycle.apply as apply_module
    import compressed_tensors.quantization.lifecycle.initialize as initialize_module
    from compressed_tensors.quantization import (
        QuantizationArgs,
        QuantizationConfig,
        apply_quantization_config,
        preset_name_to_scheme,
    )

    attention = initialize_module._is_attention_module
    kv = QuantizationArgs(num_bits=8, type="float", strategy="tensor", dynamic=False, symmetric=True)
    config = QuantizationConfig(
        config_groups={"group_0": preset_name_to_scheme("FP8", ["Linear"])},
        ignore=["lm_head"],
        quantization_status="initialized",
        format="float-quantized",
        kv_cache_scheme=kv,
    )
    model = _llama()
    with pytest.MonkeyPatch.context() as patch:
        for module in (apply_module, initialize_module):
            patch.setattr(module, "is_cached_attention_module", attention)
        apply_quantization_config(model, config)
    with torch.no_grad():  # (a calibration's result: any scale will do)
        for module in model.modules():
            for name in ("weight_scale", "input_scale", "k_scale", "v_scale"):
                if hasattr(module, name):
                    getattr(module, name).fill_(0.01)
    _compress_and_save(model, config, tmp_path)
    report = inspect(tmp_path / "model.safetensors")
    side = side_tensors(report.checkpoint.tensors)
    cache = sorted(t.name for t in side if t.name.endswith(("k_scale", "v_scale")))
    layers = range(LLAMA["num_hidden_layers"])
    assert cache == [f"model.layers.{i}.self_attn.{s}_scale" for i in layers for s in "kv"]
    assert report.checkpoint.n_parameters == model.num_parameters()
    exp = report.expectation
    assert exp is not None and exp.source == "config" and exp.matches and not exp.anomalies
    assert "beside 14 quantized weights" in exp.layers[-1].explanation
    assert not [f for f in report.findings if f.severity != "info"]


# compressed-tensors' byte-packed float formats: preset scheme -> (format, the values' dtype, the tensors beside each
# packed weight in the compressed file)
BYTE_PACKED = {
    "NVFP4": ("nvfp4-pack-quantized", "F4", {"weight_scale", "weight_global_scale", "input_global_scale"}),
    "NVFP4A16": ("nvfp4-pack-quantized", "F4", {"weight_scale", "weight_global_scale"}),
    "MXFP4": ("mxfp4-pack-quantized", "F4", {"weight_scale"}),
    "MXFP6A16": ("mxfp6-pack-quantized", "F6_E2M3", {"weight_scale"}),
}


def _assert_unpacked_and_matched(report: Report, shapes: dict[str, tuple[int, ...]], weight: str, dtype: str,
                                 beside: set[str], source: str) -> None:  # fmt: skip
    """Each packed weight read at the float model's shape in its values' dtype, the tensors beside it the
    quantization's (their own row), the count the float model's values and those tensors, the family check matching
    its formula with no warning."""
    ckpt = report.checkpoint
    weights = [t for t in ckpt.tensors if t.name.endswith("." + weight) and t.dtype == dtype]
    assert len(weights) == LINEARS
    for t in weights:
        assert t.shape == shapes[t.name.removesuffix(weight) + "weight"] and "packed" in t.notes[-1]
    side = side_tensors(ckpt.tensors)
    assert {t.name.rpartition(".")[2] for t in side} == beside and len(side) == len(beside) * LINEARS
    float_count = sum(map(math.prod, shapes.values()))
    assert ckpt.n_parameters == float_count + sum(t.n_elements for t in side)
    exp = report.expectation
    assert exp is not None and exp.source == source and exp.architecture == "llama"
    assert exp.matches and not exp.anomalies and all(c.status == "ok" for c in exp.layers)
    assert exp.layers[-1].layer == QUANTIZATION_ROW and exp.total - exp.layers[-1].expected == float_count
    assert not [f for f in report.findings if f.severity != "info"]


@pytest.mark.parametrize("preset", list(BYTE_PACKED))
def test_compressed_tensors_nvfp4_and_mx_formats_unpack_their_bytes(tmp_path: Path, preset: str) -> None:
    """compressed-tensors' NVFP4 (RedHat's `-NVFP4` models), MXFP4 and MXFP6 formats, written by `ModelCompressor`
    and `save_pretrained` from its own preset schemes: `weight_packed` holds two 4-bit floats a byte (four 6-bit in
    three), its group scales and global scales beside it. Each is read as the float model's weight in its values'
    dtype, as for pack-quantized (the file counted its bytes, and its modules' sizes went unchecked); without
    config.json the layout itself (a byte weight, its scales one a group of its values) says how it packs."""
    ct = pytest.importorskip("compressed_tensors")
    from compressed_tensors.quantization import QuantizationConfig, apply_quantization_config, preset_name_to_scheme

    fmt, dtype, beside = BYTE_PACKED[preset]
    config = QuantizationConfig(
        config_groups={"group_0": preset_name_to_scheme(preset, ["Linear"])},
        ignore=["lm_head"],
        quantization_status="initialized",
        format=fmt,
    )
    model = _llama()
    shapes = {name: tuple(p.shape) for name, p in model.named_parameters()}
    apply_quantization_config(model, config)
    with torch.no_grad():  # (a calibration's result: any scale will do, the values are never read)
        for module in model.modules():
            for name in ("weight_scale", "weight_global_scale", "input_global_scale"):
                if hasattr(module, name):
                    getattr(module, name).fill_(1.0)
    _compress_and_save(model, config, tmp_path)
    del ct
    assert json.loads((tmp_path / "config.json").read_text())["quantization_config"]["format"] == fmt
    report = inspect(tmp_path / "model.safetensors")
    _assert_unpacked_and_matched(report, shapes, "weight_packed", dtype, beside, "config")
    assert model.num_parameters() < report.checkpoint.n_parameters  # (the compressed layers count bytes)
    (tmp_path / "config.json").unlink()
    _assert_unpacked_and_matched(inspect(tmp_path / "model.safetensors"), shapes, "weight_packed", dtype, beside,
                                 "inferred")  # fmt: skip


# NVIDIA ModelOpt's export of a test-sized llama quantized by its own configs (`mtq.quantize` with a calibration pass,
# `export_hf_checkpoint`: config.json with its quantization_config, hf_quant_config.json, model.safetensors), in a
# process of its own (ModelOpt registers its quantized modules with transformers). Prints the float model's count.
MODELOPT_WRITER = """
from tests.vision import make_importable
make_importable()  # (transformers imports torchvision where it is installed)
import copy, json, sys, torch, transformers
import modelopt.torch.quantization as mtq
from modelopt.torch.export import export_hf_checkpoint
torch.manual_seed(0)
config = transformers.AutoConfig.for_model("llama", **json.loads(sys.argv[3]))
model = transformers.AutoModelForCausalLM.from_config(config)
model.config.architectures = ["LlamaForCausalLM"]  # (the exporter reads it)
count = model.num_parameters()
config = copy.deepcopy(getattr(mtq, sys.argv[1]))
for extra in sys.argv[4:]:  # a KV cache configuration added to the weights', or FP8 for the attention's projections
    config["quant_cfg"] = config["quant_cfg"] + (getattr(mtq, extra)["quant_cfg"] if extra != "ATTENTION_FP8" else [
        {"quantizer_name": f"*self_attn*{q}_quantizer", "cfg": {"num_bits": (4, 3), "axis": None}}
        for q in ("weight", "input")])
model = mtq.quantize(model, config, lambda m: m(torch.randint(0, 256, (2, 16))))
# INT4 AWQ: what its packer `pack_int4_in_uint8` rounds, by the bytes it returns (ModelOpt has no CPU dequantization
# of its export): its formula's values times their scales, saved beside the export (int4_reference.safetensors)
import modelopt.torch.export.quant_utils as quant_utils
from safetensors.torch import load_file, save_file
pack, rounded = quant_utils.pack_int4_in_uint8, []
def recording(weight, scale, block):
    spread = scale[..., torch.arange(weight.shape[-1]) // block]
    rounded.append((pack(weight, scale, block), (weight / spread).round().clamp(-8, 7) * spread))
    return rounded[-1][0]
quant_utils.pack_int4_in_uint8 = recording
export_hf_checkpoint(model, export_dir=sys.argv[2])
if rounded:
    stored = load_file(sys.argv[2] + "/model.safetensors")
    save_file({name: next(values.float().contiguous() for packed, values in rounded if torch.equal(packed, t))
               for name, t in stored.items() if t.dtype == torch.uint8}, sys.argv[2] + "/int4_reference.safetensors")
print(count)
"""
MODELOPT_LLAMA = {**LLAMA, "hidden_size": 128, "intermediate_size": 384}  # (INT4 AWQ packs blocks of 128 inputs)
# ModelOpt's configuration (and the KV cache's) -> the packed weights' dtype, the tensors beside each, whether the
# layout alone (no config.json) tells the packing
MODELOPT = {
    "NVFP4_DEFAULT_CFG": ({"F4"}, {"weight_scale", "weight_scale_2", "input_scale"}, True, ()),
    "W4A16_NVFP4_CFG": ({"F4"}, {"weight_scale", "weight_scale_2"}, True, ()),
    "MXFP4_DEFAULT_CFG": ({"F4"}, {"weight_scale"}, True, ()),
    "INT4_AWQ_CFG": ({"I4"}, {"weight_scale", "pre_quant_scale"}, False, ()),
    "FP8_DEFAULT_CFG": ({"F8_E4M3"}, {"weight_scale", "input_scale", "k_scale", "v_scale"}, True, ("FP8_KV_CFG",)),
    # (its quant_algo MIXED_PRECISION, the layers' algorithms in `quantized_layers`: the layout tells the NVFP4 ones)
    "NVFP4_DEFAULT_CFG+ATTENTION_FP8": (
        {"F4", "F8_E4M3"},
        {"weight_scale", "weight_scale_2", "input_scale"},
        True,
        ("ATTENTION_FP8",),
    ),
}


@pytest.mark.parametrize("config", list(MODELOPT))
def test_modelopt_exports_count_their_values_and_scales(tmp_path: Path, config: str) -> None:
    """NVIDIA ModelOpt's Hugging Face exports (the `nvidia/*-FP4` and `-FP8` releases), written by ModelOpt itself:
    NVFP4 and MXFP4 weights two 4-bit floats a byte (`weight`, U8), INT4 AWQ two signed 4-bit integers a byte along
    the output axis, each read as the float model's weight; the scales beside them (`weight_scale_2`, `input_scale`,
    AWQ's `pre_quant_scale`, the KV cache's `k_scale` and `v_scale` on k_proj and v_proj) are the quantization's.
    The FP8 export with its KV cache scales warned COUNT_MISMATCH (two scales a layer the formula lacks)."""
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec("modelopt") is None:
        pytest.skip("nvidia-modelopt is not installed")
    dtypes, beside, by_layout, extra = MODELOPT[config]
    root = Path(__file__).resolve().parent.parent  # (the writer imports tests.vision)
    written = subprocess.run(
        [sys.executable, "-c", MODELOPT_WRITER, config.partition("+")[0], str(tmp_path), json.dumps(MODELOPT_LLAMA),
         *extra],
        capture_output=True, text=True, cwd=root,
    )  # fmt: skip
    assert written.returncode == 0, written.stderr[-2000:]
    quantization = json.loads((tmp_path / "config.json").read_text())["quantization_config"]
    assert quantization["quant_method"] == "modelopt" and quantization["quant_algo"]
    float_count = int(written.stdout.split()[-1])
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model("llama", **MODELOPT_LLAMA))
    shapes = {name: tuple(p.shape) for name, p in model.named_parameters()}
    assert sum(map(math.prod, shapes.values())) == float_count
    report = inspect(tmp_path / "model.safetensors")
    side = side_tensors(report.checkpoint.tensors)
    assert {t.name.rpartition(".")[2] for t in side} == beside
    kv_scales = [t.name.rpartition(".")[0] for t in side if t.name.endswith(("k_scale", "v_scale"))]
    cache = "FP8_KV_CFG" in extra
    assert {name.rpartition(".")[2] for name in kv_scales} == ({"k_proj", "v_proj"} if cache else set())
    ckpt = report.checkpoint
    weights = [t for t in ckpt.tensors if t.name.endswith(".weight") and t.dtype in dtypes]
    assert len(weights) == LINEARS and all(t.shape == shapes[t.name] for t in weights)
    assert {t.dtype for t in weights} == dtypes
    assert ckpt.n_parameters == float_count + sum(t.n_elements for t in side)
    exp = report.expectation
    assert exp is not None and exp.source == "config" and exp.matches and not exp.anomalies
    assert exp.layers[-1].layer == QUANTIZATION_ROW and exp.total - exp.layers[-1].expected == float_count
    assert not [f for f in report.findings if f.severity != "info"]
    (tmp_path / "config.json").unlink()
    alone = inspect(tmp_path / "model.safetensors")
    assert (alone.checkpoint.n_parameters == ckpt.n_parameters) is by_layout
    assert not [f for f in alone.findings if f.severity != "info"]


# torchao's configurations whose flattened tensor subclass keeps its values at the weight's shape -> (the subclass, the
# values' dtype, its inner tensors beside the values)
TORCHAO = {
    "Int8WeightOnlyConfig": ("Int8Tensor", "I8", {"scale", "zero_point"}),
    "Float8WeightOnlyConfig": ("Float8Tensor", "F8_E4M3", {"scale"}),
    "Int8DynamicActivationInt8WeightConfig": ("Int8Tensor", "I8", {"scale", "zero_point"}),
    "IntxWeightOnlyConfig": ("IntxUnpackedToInt8Tensor", "I8", {"scale", "zero_point"}),
}


@pytest.mark.parametrize("config", list(TORCHAO))
def test_torchao_safetensors_count_the_parameters_not_their_inner_tensors(tmp_path: Path, config: str) -> None:
    """torchao's quantized models as transformers saves them (`TorchAoConfig`, `save_pretrained`: the `pytorch/*`
    releases): each quantized weight a tensor subclass flattened into `<module>._weight_qdata`, `_weight_scale`,
    `_weight_zero_point`, the metadata naming them under the weight. The values are the parameter, the rest its state
    (buffers): the count is the quantized model's `num_parameters()` and the family check matches (the scales and
    zero points were counted as parameters, and the family check warned COUNT_MISMATCH), with and without config."""
    pytest.importorskip("torchao")
    import torchao.quantization as ao

    kind, dtype, inner = TORCHAO[config]
    words = {"weight_dtype": torch.int4, "granularity": ao.PerGroup(32)} if config == "IntxWeightOnlyConfig" else {}
    _llama().save_pretrained(tmp_path / "float")
    quantization = transformers.TorchAoConfig(getattr(ao, config)(**words))
    model = transformers.AutoModelForCausalLM.from_pretrained(
        tmp_path / "float", quantization_config=quantization, device_map="cpu"
    )
    model.save_pretrained(tmp_path / "q")
    for with_config in (True, False):
        if not with_config:
            (tmp_path / "q" / "config.json").unlink()
        report = inspect(tmp_path / "q" / "model.safetensors")
        ckpt = report.checkpoint
        assert ckpt.n_parameters == model.num_parameters()
        values = [t for t in ckpt.tensors if t.name.endswith("._weight_qdata")]
        assert len(values) == LINEARS and {t.dtype for t in values} == {dtype}
        assert all(t.kind is TensorKind.PARAMETER and f"torchao {kind}" in t.notes[-1] for t in values)
        state = [t for t in ckpt.tensors if t.name.rpartition("._weight_")[2] in inner]
        assert len(state) == len(inner) * LINEARS and all(t.kind is TensorKind.BUFFER for t in state)
        exp = report.expectation
        assert exp is not None and exp.architecture == "llama" and exp.matches and not exp.anomalies
        assert not [f for f in report.findings if f.severity != "info"]
    from inspector.render import render_text  # (the text names the metadata's types in one line, not one a tensor)

    text = render_text(report)
    assert f"metadata: {LINEARS + 7} tensors' types as torchao writes them ({kind} x{LINEARS}, Tensor x7)" in text
    assert "metadata.model." not in text


# optimum-quanto's quantizations of the test-sized llama -> (how they are written, the qtype, the values' dtype, the
# activations' qtype): by `quantize` and `freeze` and safetensors' `save_file` of the state dict, the config beside it
# (saying nothing of the quantization); by `QuantizedModelForCausalLM.save_pretrained` (config.json and
# quanto_qmap.json beside); as transformers' `QuantoConfig` loads the float model (its config saying `quant_method:
# quanto`; transformers saves no quanto model, so its state dict and config)
QUANTO = {
    "qint8": ("quantize", "qint8", "I8", None),
    "qfloat8": ("quantize", "qfloat8", "F8_E4M3", None),
    "qint8 activations qint8": ("quantize", "qint8", "I8", "qint8"),
    "qint4": ("save_pretrained", "qint4", "U4", None),
    "qint2": ("save_pretrained", "qint2", "U2", None),
    "QuantoConfig int8": ("QuantoConfig", "int8", "I8", None),
    "QuantoConfig float8": ("QuantoConfig", "float8", "F8_E4M3", None),
    "QuantoConfig int4": ("QuantoConfig", "int4", "U4", None),
}


def _quanto(folder: Path, how: str, weights: str, activations: str | None) -> Any:
    """The test-sized llama quantized by optimum-quanto and written `how` (`QUANTO`) into `folder`: the quantized
    model."""
    from optimum import quanto
    from safetensors.torch import save_file

    if how == "QuantoConfig":
        pytest.importorskip("accelerate")  # (transformers' quanto integration asks for it)
        _llama().save_pretrained(folder / "float")
        config = transformers.QuantoConfig(weights=weights)
        model = transformers.AutoModelForCausalLM.from_pretrained(
            folder / "float", quantization_config=config, device_map="cpu"
        )
    else:
        model = _llama()
        qtypes = {"weights": getattr(quanto, weights), "activations": activations and getattr(quanto, activations)}
        if how == "save_pretrained":
            quanto.QuantizedModelForCausalLM.quantize(model, **qtypes, exclude="lm_head").save_pretrained(folder)
            return model
        quanto.quantize(model, **qtypes, exclude="lm_head")
        quanto.freeze(model)
    save_file(model.state_dict(), folder / "model.safetensors")
    model.config.save_pretrained(folder)
    return model


@pytest.mark.parametrize("quantization", list(QUANTO))
def test_optimum_quanto_state_dicts_count_the_model_s_parameters(tmp_path: Path, quantization: str) -> None:
    """optimum-quanto's quantized models as its libraries write them (`QUANTO`): each quantized weight a tensor
    subclass saved as its inner tensors, `<module>.weight._data` (8 bits: the values at the weight's shape) or
    `.weight._data._data` (4 and 2 bits: packed in bytes along the first axis), `.weight._scale` (and `._shift`), and
    each quantized module's `input_scale` and `output_scale`. The values are read as the module's weight (its layer
    and role the float model's weight's; packed ones unpacked: 2 or 4 values a byte, down_proj's 320 inputs in
    quanto's groups of 64 a row), the rest is state (buffers): the count is the model's `num_parameters()` (the scales
    were counted, and the packed bytes, and the family check saw modules holding only scales), the family check
    matches, with and without config.json."""
    pytest.importorskip("optimum.quanto")
    how, weights, dtype, activations = QUANTO[quantization]
    model = _quanto(tmp_path, how, weights, activations)
    shapes = {name: tuple(p.shape) for name, p in _llama().named_parameters()}
    assert model.num_parameters() == sum(map(math.prod, shapes.values()))  # (quanto counts the float model's values)
    float_roles = {r.name: r for r in inspect(_float_file(tmp_path)).roles}
    for with_config in (True, False):
        if not with_config:
            for name in ("config.json", "quanto_qmap.json"):
                (tmp_path / name).unlink(missing_ok=True)
        report = inspect(tmp_path / "model.safetensors")
        ckpt = report.checkpoint
        assert ckpt.n_parameters == model.num_parameters()
        roles = {t.name: r for t, r in zip(ckpt.tensors, report.roles, strict=True)}
        values = [t for t in ckpt.tensors if ".weight._data" in t.name]
        assert len(values) == LINEARS and {t.dtype for t in values} == {dtype}
        for t in values:
            weight = f"{t.layer}.{t.param}"
            assert t.name.startswith(weight + "._data") and t.kind is TensorKind.PARAMETER
            rows, inputs = shapes[weight]
            grouped = dtype in ("U4", "U2") and inputs > 128  # (quanto's groups: 64 values for 320 inputs)
            assert t.shape == ((rows * inputs // 64, 64) if grouped else shapes[weight])
            assert f"optimum-quanto q{weights.removeprefix('q')}" in t.notes[-1]
            assert (roles[t.name].role, roles[t.name].layer) == (float_roles[weight].role, float_roles[weight].layer)
        state = [t for t in ckpt.tensors if t.name.endswith(("._scale", "._shift", "input_scale", "output_scale"))]
        assert len(state) == LINEARS * (4 if dtype in ("U4", "U2") else 3)
        for t in state:
            assert t.kind is TensorKind.BUFFER and not t.trainable
            module = t.name.removesuffix("._scale").removesuffix("._shift").rpartition(".")[0]
            role = "quantization_scale" if t.name.endswith("input_scale") else "quantization_state"
            assert (roles[t.name].role, roles[t.name].layer) == (role, module)
        exp = report.expectation
        assert exp is not None and exp.architecture == "llama" and exp.matches and not exp.anomalies
        assert exp.source == ("config" if with_config else "inferred")
        assert not [f for f in report.findings if f.severity != "info"]
        if with_config and how == "save_pretrained":  # (its qtypes by module, read from the qmap beside)
            assert (ckpt.config or {})["quantization_config"]["source"] == "quanto_qmap.json"


def _float_file(folder: Path) -> Path:
    """The test-sized llama's float model, saved beside (once)."""
    path = folder / "float" / "model.safetensors"
    if not path.exists():
        _llama().save_pretrained(folder / "float")
    return path


def test_optimum_quanto_layernorm_quantized_for_its_activations_holds_state_only(tmp_path: Path) -> None:
    """A BERT quantized by optimum-quanto with its activations (qint8 weights and activations): its LayerNorms keep
    their float weight and bias and gain `input_scale` and `output_scale`, the activations' scales, buffers as the
    linear layers' are; the count is the model's `num_parameters()` and the family check matches."""
    quanto = pytest.importorskip("optimum.quanto")
    from safetensors.torch import save_file

    torch.manual_seed(0)
    words = {"vocab_size": 256, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
             "num_attention_heads": 4}  # fmt: skip
    model = transformers.AutoModel.from_config(transformers.AutoConfig.for_model("bert", **words))
    counted = model.num_parameters()
    quanto.quantize(model, weights=quanto.qint8, activations=quanto.qint8)
    quanto.freeze(model)
    save_file(model.state_dict(), tmp_path / "model.safetensors")
    report = inspect(tmp_path / "model.safetensors")
    ckpt = report.checkpoint
    assert ckpt.n_parameters == model.num_parameters() == counted
    norms = [t for t in ckpt.tensors if "LayerNorm." in t.name]  # (the embeddings' and each layer's two)
    assert len(norms) == 4 * 5 and {(t.name.rpartition(".")[2], t.kind) for t in norms} == {
        ("weight", TensorKind.PARAMETER), ("bias", TensorKind.PARAMETER),
        ("input_scale", TensorKind.BUFFER), ("output_scale", TensorKind.BUFFER),
    }  # fmt: skip
    exp = report.expectation
    assert exp is not None and exp.architecture == "bert" and exp.matches
    assert not [f for f in report.findings if f.severity != "info"]


# quantizations of the test-sized llama by optimum-quanto (`QUANTO`) and torchao (`TORCHAO`) -> the tensors beside each
# quantized weight (its state), and whether its values are laid out in groups (quanto's 4 bits: down_proj's 320
# inputs in rows of 64)
DIFFED = {
    "quanto qint8": ({"weight._scale", "input_scale", "output_scale"}, False),
    "quanto qint4": ({"weight._scale", "weight._shift", "input_scale", "output_scale"}, True),
    "torchao Int8WeightOnlyConfig": ({"_weight_scale", "_weight_zero_point"}, False),
    "torchao IntxWeightOnlyConfig": ({"_weight_scale", "_weight_zero_point"}, False),
}


def _torchao(folder: Path, config: str) -> Any:
    """The test-sized llama quantized by torchao through transformers' `TorchAoConfig` (`TORCHAO`; int4 values in
    int8 in groups of 32), saved by `save_pretrained` into `folder`; its float model in `folder / "float"`: the
    quantized model."""
    import torchao.quantization as ao

    words = {"weight_dtype": torch.int4, "granularity": ao.PerGroup(32)} if config == "IntxWeightOnlyConfig" else {}
    _float_file(folder)
    quantization = transformers.TorchAoConfig(getattr(ao, config)(**words))
    model = transformers.AutoModelForCausalLM.from_pretrained(
        folder / "float", quantization_config=quantization, device_map="cpu"
    )
    model.save_pretrained(folder)
    return model


@pytest.mark.parametrize("quantization", list(DIFFED))
def test_diff_of_a_model_and_its_quanto_or_torchao_quantization(tmp_path: Path, quantization: str) -> None:
    """`inspector diff` of the float model and its optimum-quanto or torchao file: each quantized weight's values
    (`weight._data`, `weight._data._data`, `_weight_qdata`) are paired with the float weight by name, as the same layer
    quantized: its narrowing changes the model, its values laid out in quanto's groups (the same values) and the state
    only the quantized file has (scales, shifts, zero points, activation scales) are expected, each in its module's
    row (they were paired by shape and order, the grouped ones missing and extra, and the state unexpected)."""
    from inspector.diff import DiffKind, match
    from inspector.diff import diff as diff_records

    library, how = quantization.split()
    pytest.importorskip("optimum.quanto" if library == "quanto" else "torchao")
    if library == "quanto":
        _quanto(tmp_path, "quantize", how, None)
    else:
        _torchao(tmp_path, how)
    state, grouped = DIFFED[quantization]
    a, b = load(_float_file(tmp_path)), load(tmp_path / "model.safetensors")
    for result, only in (
        (diff_records(a, b, match(a, b)), DiffKind.EXTRA),
        (diff_records(b, a, match(b, a)), DiffKind.MISSING),
    ):
        by_kind: dict[DiffKind, list[Any]] = {}
        for d in result.differences:
            by_kind.setdefault(d.kind, []).append(d)
        assert {p.how for p in result.pairs} == {"name", "normalised"} and len(result.pairs) == len(a.tensors)
        narrowed = by_kind.pop(DiffKind.DTYPE_CHANGED)
        assert len(narrowed) == LINEARS and not any(d.expected for d in narrowed)
        beside = by_kind.pop(only)
        assert len(beside) == len(state) * LINEARS and all(d.expected for d in beside)
        assert {(d.a or d.b).removeprefix(f"model.{d.layer}.") for d in beside} == state
        owner = "optimum-quanto's" if library == "quanto" else "torchao's"
        assert all(f"({owner} " in d.message for d in beside)
        regrouped = by_kind.pop(DiffKind.SHAPE_CHANGED, [])
        assert len(regrouped) == (2 if grouped else 0)  # (each layer's down_proj)
        assert all(d.expected and "optimum-quanto's groups: rows of 64 values" in d.message for d in regrouped)
        assert not by_kind
        assert len({d.layer for d in result.differences}) == LINEARS  # (each weight's state in its module's row)


def test_quanto_packed_bits_are_the_qmap_s_where_the_bytes_do_not_tell() -> None:
    """A packed weight's bits are its qtype's where the config or the qmap says one (and its bytes hold its rows at
    them), else those its bytes hold for its scales' rows (4 first: 2 rows fit in a byte either way); a values tensor
    without its scale beside it is not quanto's."""
    from inspector.quantized import quanto_unflattened

    def tensors() -> list[TensorInfo]:
        def tensor(name: str, dtype: str, shape: tuple[int, ...]) -> TensorInfo:
            return TensorInfo(name, shape, dtype, math.prod(shape), 0, kind=TensorKind.PARAMETER)

        return [
            tensor("a.weight._data._data", "U8", (1, 8)),
            tensor("a.weight._scale", "F32", (2, 1)),
            tensor("a.weight._shift", "F32", (2, 1)),
            tensor("b.weight._data", "I8", (4, 4)),  # (no scale beside it)
        ]

    def read(config: dict[str, Any] | None) -> list[tuple[tuple[int, ...], str, TensorKind]]:
        found = tensors()
        quanto_unflattened(found, config)
        return [(t.shape, t.dtype, t.kind) for t in found]

    unread = ((4, 4), "I8", TensorKind.PARAMETER)
    state = ((2, 1), "F32", TensorKind.BUFFER)
    assert read(None) == [((2, 8), "U4", TensorKind.PARAMETER), state, state, unread]
    qmap = {"quant_method": "quanto", "modules": {"a": {"weights": "qint2", "activations": "none"}}}
    assert read({"quantization_config": qmap}) == [((2, 8), "U2", TensorKind.PARAMETER), state, state, unread]
    stated = {"quant_method": "quanto", "weights": "int2"}
    assert read({"quantization_config": stated})[0] == ((2, 8), "U2", TensorKind.PARAMETER)
    found = tensors()  # 4 rows in 2 bytes a column: 4 bits, not the qmap's 2 (read as stored)
    found[1] = TensorInfo("a.weight._scale", (4, 1), "F32", 16, 0)
    found[0] = TensorInfo("a.weight._data._data", (2, 8), "U8", 16, 0)
    assert not quanto_unflattened(found, {"quantization_config": qmap}) and found[0].dtype == "U8"
    assert quanto_unflattened(found, None) and (found[0].shape, found[0].dtype) == ((4, 8), "U4")


# mlx-lm's `convert` (its quantization on the CPU build of MLX) of a test-sized llama saved by `save_pretrained` with
# a word-level tokenizer (convert copies it), in a process of its own; prints what mlx-lm counts of the model it
# loads back from the converted folder (`get_total_parameters`, behind its "bits per weight")
MLX_WRITER = """
from tests.vision import make_importable
make_importable()  # (transformers imports torchvision where it is installed)
import json, sys, torch, transformers
from pathlib import Path
from tokenizers import Tokenizer, models
from mlx_lm import convert
from mlx_lm.utils import get_total_parameters, load_model
source, out = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
config = transformers.AutoConfig.for_model("llama", **json.loads(sys.argv[3]))
transformers.AutoModelForCausalLM.from_config(config).save_pretrained(source)
words = Tokenizer(models.WordLevel({f"t{i}": i for i in range(config.vocab_size)}, unk_token="t0"))
transformers.PreTrainedTokenizerFast(tokenizer_object=words, unk_token="t0").save_pretrained(source)
convert(source, mlx_path=out, quantize=True, **json.loads(sys.argv[4]))
model, _ = load_model(Path(out))
print(get_total_parameters(model))
"""
# mlx-lm's quantizations -> the values' dtypes and the state beside each weight
MLX_QUANTIZATIONS = {
    "4-bit": ({"q_bits": 4, "q_group_size": 32}, {"U4"}, {"scales", "biases"}),
    "3-bit": ({"q_bits": 3, "q_group_size": 64}, {"U3"}, {"scales", "biases"}),
    "8-bit": ({"q_bits": 8}, {"U8"}, {"scales", "biases"}),
    "mixed_3_6": ({"quant_predicate": "mixed_3_6"}, {"U3", "U6"}, {"scales", "biases"}),
    "mxfp4": ({"q_mode": "mxfp4"}, {"F4"}, {"scales"}),
    "nvfp4": ({"q_mode": "nvfp4"}, {"F4"}, {"scales"}),
}


@pytest.mark.parametrize("quantization", list(MLX_QUANTIZATIONS))
def test_mlx_quantized_models_count_what_mlx_lm_counts(tmp_path: Path, quantization: str) -> None:
    """Apple MLX's quantized models (mlx-lm's `convert -q`, the mlx-community releases), written by mlx-lm itself:
    each quantized layer's uint32 `weight` packs its values, `scales` (and `biases`) beside it a group. Each weight is
    read as its values at the float model's shape (bits from its words and the group its scales cover, checked against
    the config's, a recipe's per-layer bits included), the scales and biases its state: the count is mlx-lm's own
    (it was the uint32 words, a fifth of the model, explained), and the family check matches."""
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec("mlx_lm") is None:
        pytest.skip("mlx-lm (and mlx's CPU build) not installed")
    words, dtypes, state = MLX_QUANTIZATIONS[quantization]
    root = Path(__file__).resolve().parent.parent  # (the writer imports tests.vision)
    written = subprocess.run(
        [sys.executable, "-c", MLX_WRITER, str(tmp_path / "hf"), str(tmp_path / "mlx"), json.dumps(LLAMA),
         json.dumps(words)],
        capture_output=True, text=True, cwd=root,
    )  # fmt: skip
    assert written.returncode == 0, written.stderr[-2000:]
    counted = int(written.stdout.split()[-1])
    shapes = {name: tuple(p.shape) for name, p in _llama().named_parameters()}
    assert counted == sum(map(math.prod, shapes.values()))  # (mlx-lm counts the float model's values)
    report = inspect(tmp_path / "mlx" / "model.safetensors")
    ckpt = report.checkpoint
    assert ckpt.n_parameters == counted
    weights = [t for t in ckpt.tensors if t.dtype in dtypes]
    assert {t.dtype for t in weights} == dtypes and all(t.shape == shapes[t.name] for t in weights)
    assert len(weights) == LINEARS + 2  # (the embedding and the head are quantized too)
    beside = [t for t in ckpt.tensors if t.name.rpartition(".")[2] in state]
    assert len(beside) == len(state) * len(weights) and all(t.kind is TensorKind.BUFFER for t in beside)
    roles = {t.name: r for t, r in zip(ckpt.tensors, report.roles, strict=True)}
    assert {(roles[t.name].role, roles[t.name].layer) for t in beside} == {
        ("quantization_state", t.name.rpartition(".")[0]) for t in beside
    }
    exp = report.expectation
    assert exp is not None and exp.source == "config" and exp.architecture == "llama" and exp.matches
    assert not [f for f in report.findings if f.severity != "info"]


def test_torchao_metadata_nested_past_the_decoder_is_read_as_plain_metadata(tmp_path: Path) -> None:
    """A metadata value that names `_tensor_data_names` but nests deeper than Python's JSON decoder goes is not
    torchao's: the file reads as it is (no internal error)."""
    import struct

    depth = 200_000
    meta = {"x.weight": '{"_tensor_data_names": ' + "[" * depth + "]" * depth + "}", "format": "pt"}
    header = {"__metadata__": meta, "x._weight_qdata": {"dtype": "I8", "shape": [2, 2], "data_offsets": [0, 4]}}
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    path = tmp_path / "deep.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * 4)
    (t,) = inspect(path).checkpoint.tensors
    assert (t.kind, t.notes) == (TensorKind.PARAMETER, ())


# quantizations whose values `inspector diff --data` dequantizes -> how the pair says it was dequantized
DEQUANTIZED = {
    "quanto qint8": "optimum-quanto qint8",
    "quanto qfloat8": "optimum-quanto qfloat8",
    "quanto qint4": "optimum-quanto qint4",
    "quanto qint2": "optimum-quanto qint2",
    "torchao Int8WeightOnlyConfig": "torchao Int8Tensor",
    "torchao Float8WeightOnlyConfig": "torchao Float8Tensor",
    "torchao IntxWeightOnlyConfig": "torchao IntxUnpackedToInt8Tensor",
}


def _dequantized(ckpt: Any, name: str) -> Any:
    """The inspector's dequantization of one quantized tensor of `ckpt`, streamed in small blocks, as one array."""
    import numpy as np

    from inspector.dequantize import Dequantization, plans
    from inspector.dequantize_stream import dequantized
    from inspector.tensor_data import TensorSource

    t = next(t for t in ckpt.tensors if t.name == name)
    plan = plans(ckpt)[id(t)]
    assert isinstance(plan, Dequantization)
    with TensorSource(ckpt) as source:
        return np.concatenate(list(dequantized(source, plan, 100)))  # (blocks of a row or two: every seam crossed)


@pytest.mark.parametrize("quantization", list(DEQUANTIZED))
def test_diff_data_gives_the_quantization_error_of_each_weight_as_its_library_dequantizes(
    tmp_path: Path, quantization: str
) -> None:
    """`inspector diff --data` of a float model and its optimum-quanto or torchao file dequantizes each quantized
    weight from the file's own values, scales, shifts and zero points (quanto's packed and grouped values too) and
    gives its error, where it compared integers with floats (`values_changed`, max abs 127) or skipped the packed
    ones: each value is the library's own `dequantize()` of the loaded weight (to float32 rounding), each error the
    largest |float - dequantize()|, both ways round."""
    import numpy as np

    from inspector.diff import DiffKind, match
    from inspector.diff import diff as diff_records
    from inspector.values import compare_pairs

    library, how = quantization.split()
    pytest.importorskip("optimum.quanto" if library == "quanto" else "torchao")
    if library == "quanto":
        model = _quanto(tmp_path, "quantize", how, None)
    else:
        model = _torchao(tmp_path, how)
    floats = dict(_llama().named_parameters())
    a, b = load(_float_file(tmp_path)), load(tmp_path / "model.safetensors")
    weights = {f"{name}.weight": getattr(m, "weight", None) for name, m in model.named_modules()}
    plain = (type(None), torch.Tensor, torch.nn.Parameter)  # (the weights left as floats)
    quantized = {name: w for name, w in weights.items() if type(w) not in plain}
    assert len(quantized) == LINEARS
    for first, second in ((a, b), (b, a)):
        pairs = match(first, second)
        values = compare_pairs(first, second, [(p.a, p.b, p.perm) for p in pairs])
        result = diff_records(first, second, pairs, values)
        errors = [d for d in result.differences if d.kind is DiffKind.QUANTIZATION_ERROR]
        assert len(errors) == LINEARS and all(d.expected for d in errors)
        assert not [d for d in result.differences if d.kind in (DiffKind.VALUES_CHANGED, DiffKind.NOT_COMPARED)]
        for v in values:
            weight = v.a if first is a else v.b
            if weight not in quantized:
                assert v.equal and v.dequantized is None  # (the norms and embeddings it keeps as floats)
                continue
            library_values = quantized[weight].dequantize().detach().float()
            error = (floats[weight].detach().double() - library_values.double()).abs().max().item()
            assert v.dequantized == DEQUANTIZED[quantization] and not v.skipped
            assert math.isclose(v.max_abs, error, rel_tol=1e-5, abs_tol=1e-7)
            peak = floats[weight].detach().abs().max().item()
            assert math.isclose(v.max_rel, error / peak, rel_tol=1e-4, abs_tol=1e-6) and 0 < v.max_rel < 0.5
    for weight, q in quantized.items():
        stored = next(p.b for p in match(a, b) if p.a.name == weight)
        expected = q.dequantize().detach().float().numpy().reshape(-1)
        ours = _dequantized(b, stored.name)
        assert np.allclose(ours, expected, rtol=2**-22, atol=2**-22 * float(np.abs(expected).max()))


def test_diff_data_dequantizes_fine_grained_fp8_by_the_config_s_blocks(tmp_path: Path) -> None:
    """transformers' fine-grained FP8 (`weight_scale_inv`, one a 128 x 128 block): the values dequantize as its own
    `_dequantize_fp8_weight` does them; where the blocks do not divide a weight evenly (320 inputs in 3 blocks) the
    config's `weight_block_size` says them, and without config.json that weight is not dequantized, said per layer."""
    import numpy as np
    from transformers.integrations.finegrained_fp8 import _dequantize_fp8_weight, replace_with_fp8_linear

    from inspector.diff import DiffKind, match
    from inspector.diff import diff as diff_records
    from inspector.values import compare_pairs

    model = _llama()
    model.save_pretrained(tmp_path / "float")
    config = transformers.FineGrainedFP8Config(weight_block_size=(128, 128), modules_to_not_convert=["lm_head"])
    fp8 = replace_with_fp8_linear(_llama(), modules_to_not_convert=["lm_head"], quantization_config=config)
    fp8 = fp8.to_empty(device="cpu")
    torch.manual_seed(1)
    layers = {name: m for name, m in fp8.named_modules() if hasattr(m, "weight_scale_inv")}
    for m in layers.values():  # (values and scales of the layers' own dtypes, stored as it stores them)
        m.weight.data = torch.randn(m.weight.shape).clamp(-8, 8).to(torch.float8_e4m3fn)
        m.weight_scale_inv.data = torch.rand(m.weight_scale_inv.shape) + 0.5
    fp8.config.quantization_config = config
    fp8.save_pretrained(tmp_path / "fp8")
    b = load(tmp_path / "fp8" / "model.safetensors")
    for name, m in layers.items():
        expected = _dequantize_fp8_weight(m.weight, m.weight_scale_inv, [128, 128], torch.float32)
        assert np.array_equal(_dequantized(b, f"{name}.weight").astype(np.float32), expected.detach().numpy().ravel())
    (tmp_path / "fp8" / "config.json").unlink()
    a, b = load(tmp_path / "float" / "model.safetensors"), load(tmp_path / "fp8" / "model.safetensors")
    pairs = match(a, b)
    result = diff_records(a, b, pairs, compare_pairs(a, b, [(p.a, p.b, p.perm) for p in pairs]))
    by_kind: dict[DiffKind, list[Any]] = {}
    for d in result.differences:
        by_kind.setdefault(d.kind, []).append(d)
    skipped = by_kind[DiffKind.NOT_COMPARED]
    assert {d.layer.rpartition(".")[2] for d in skipped} == {"gate_proj", "up_proj", "down_proj"}  # (320: 3 blocks)
    assert all("no weight_block_size in the config" in d.message for d in skipped)
    assert len(by_kind[DiffKind.QUANTIZATION_ERROR]) == LINEARS - len(skipped)


def _quantization_errors(float_file: Path, quantized_file: Path, n: int = LINEARS) -> dict[str, Any]:
    """`inspector diff --data` of a float model and its quantization: each of the `n` quantized weights' pair is a
    `quantization_error` (expected), none compares codes with floats or is left uncompared; the pairs' values by the
    float weight's name."""
    from inspector.diff import DiffKind, match
    from inspector.diff import diff as diff_records
    from inspector.values import compare_pairs

    a, b = load(float_file), load(quantized_file)
    pairs = match(a, b)
    values = {v.a: v for v in compare_pairs(a, b, [(p.a, p.b, p.perm) for p in pairs])}
    result = diff_records(a, b, pairs, tuple(values.values()))
    errors = [d for d in result.differences if d.kind is DiffKind.QUANTIZATION_ERROR]
    assert len(errors) == n and all(d.expected for d in errors)
    assert not [d for d in result.differences if d.kind in (DiffKind.VALUES_CHANGED, DiffKind.NOT_COMPARED)]
    return {name: v for name, v in values.items() if v.dequantized}


def _assert_dequantized_as(ours: Any, expected: Any, error: float, value: Any, rounding: float = 0.0) -> None:
    """Our dequantization equals the library's to float32 rounding, and the pair's error is the largest
    |float - the library's| (give or take the library's own `rounding` of its values, relative)."""
    import numpy as np

    peak = float(np.abs(expected).max())
    assert np.allclose(ours, expected.ravel(), rtol=2**-22, atol=2**-22 * peak)
    assert value.dequantized and not value.skipped
    assert math.isclose(value.max_abs, error, rel_tol=1e-5, abs_tol=1e-7 + rounding * peak)
    assert 0 < value.max_rel < 0.5


@pytest.mark.parametrize("layout", list(BNB_4BIT))
def test_diff_data_dequantizes_bitsandbytes_4bit_as_its_library_does(tmp_path: Path, layout: str) -> None:
    """bitsandbytes' 4-bit weights (NF4 and FP4 codes two a byte, an absmax a block of 64, with double quantization
    the absmax themselves codes of the nested code map, plus the offset in the quant_state record; uint8 and bf16
    storage) dequantize as its own `dequantize_4bit` does the loaded weights (to float32 rounding), and `inspector
    diff --data` gives each weight's quantization error (they were `not_compared`: "not done here")."""
    functional = pytest.importorskip("bitsandbytes.functional")
    quant_type, double, storage, _, _ = BNB_4BIT[layout]
    model = _bnb_4bit(tmp_path, quant_type, double, storage)
    model.save_pretrained(tmp_path / "4bit")
    from safetensors.torch import load_file

    floats = load_file(tmp_path / "float" / "model.safetensors")
    values = _quantization_errors(tmp_path / "float" / "model.safetensors", tmp_path / "4bit" / "model.safetensors")
    b = load(tmp_path / "4bit" / "model.safetensors")
    quantized = {name: p for name, p in model.named_parameters() if hasattr(p, "quant_state")}
    assert len(quantized) == LINEARS
    for name, p in quantized.items():
        expected = functional.dequantize_4bit(p.data, p.quant_state).float()
        error = (floats[name].double() - expected.double()).abs().max().item()
        _assert_dequantized_as(_dequantized(b, name), expected.numpy(), error, values[name])
        assert values[name].dequantized == f"bitsandbytes {quant_type}"


@pytest.mark.parametrize(
    ("method", "bits", "version"),
    [("gptq", 4, "gemm"), ("gptq", 3, "gemm"), ("awq", 4, "gemm"), ("awq", 4, "gemv"), ("awq", 4, "gemv_fast")],
)
def test_diff_data_dequantizes_gptq_and_awq_as_their_libraries_do(
    tmp_path: Path, method: str, bits: int, version: str
) -> None:
    """GPTQ's `qweight` (each column a bit stream down its int32 words, 4 and 3 bits), its `qzeros` (stored less one),
    `scales` and `g_idx`, and AWQ's GEMM layout (8 values a word in its order) dequantize as their libraries do them
    (AutoGPTQ's QuantLinear forward without the CUDA kernels, of the identity; AutoAWQ's `dequantize_gemm`, in
    float16: ours rounded to it is equal), written by their own packers in the writer's process; `inspector diff
    --data` against the float model gives each weight's quantization error, its values the float weight's transpose
    (they were `not_compared`). AWQ's GEMV layouts, whose dequantization is only in its CUDA kernels: GEMV's values
    and zero points as AutoAWQ's `unpack_awq` unpacks them, `(q - z) * scales`; GEMVFast's (4 rows interleaved, each
    run of 32 reordered) as the values its `from_linear` computes, which its `pack_intweight` packs into the stored
    qweight, `q * scales + qzeros`; their scale tables padded with unused groups (GEMVFast's (groups, out))."""
    import importlib.util
    import subprocess
    import sys

    import numpy as np
    from safetensors.torch import load_file

    from inspector.diff import match

    package = {"gptq": "auto_gptq", "awq": "awq"}[method]
    if importlib.util.find_spec(package) is None:
        pytest.skip(f"{package} is not installed (pip install --no-deps {package.replace('_', '-')})")
    written = subprocess.run(
        [sys.executable, "-c", PACKED_WRITER, method, str(tmp_path), json.dumps(LLAMA), "in_config", str(bits),
         version], capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent,
    )  # fmt: skip
    assert written.returncode == 0, written.stderr[-3000:]
    reference, floats = load_file(tmp_path / "reference.safetensors"), load_file(tmp_path / "float.safetensors")
    values = _quantization_errors(tmp_path / "float.safetensors", tmp_path / "model.safetensors")
    b = load(tmp_path / "model.safetensors")
    assert len(reference) == LINEARS
    # each `qweight` pairs with its float weight by name (`gptq_awq.values`), no longer by shape and order
    pairs = match(load(tmp_path / "float.safetensors"), b)
    assert [p.how for p in pairs if p.b.name.endswith(".qweight")] == ["normalised"] * LINEARS
    gemm = version == "gemm"
    for name, expected in reference.items():
        ours = _dequantized(b, name.replace(".weight", ".qweight"))  # (GEMM's (in, out) order: the transpose)
        expected = (expected.T if gemm else expected).float().numpy()
        if method == "awq" and gemm:  # (AutoAWQ multiplies in float16: one rounding of the exact product)
            ours = ours.astype(np.float16).astype(np.float32)
        error = float(np.abs(floats[name].double().numpy() - reference[name].double().numpy()).max())
        _assert_dequantized_as(ours, expected, error, values[name], 2**-11 if method == "awq" and gemm else 0.0)
        how = {"gemm": method.upper(), "gemv": "AWQ GEMV", "gemv_fast": "AWQ GEMVFast"}[version]
        assert values[name].dequantized == how
    if method == "gptq" and bits == 4:  # a g_idx naming a group past its scales: the file cannot be read, no guess
        from safetensors.torch import save_file

        from inspector.errors import FormatError

        tensors = load_file(tmp_path / "model.safetensors")
        tensors["model.layers.0.self_attn.q_proj.g_idx"][-1] = 1 << 20
        save_file(tensors, str(tmp_path / "model.safetensors"))
        with pytest.raises(FormatError, match="a group past the"):
            _quantization_errors(tmp_path / "float.safetensors", tmp_path / "model.safetensors")


def test_diff_data_of_a_packing_whose_groups_the_file_does_not_tell_says_so_per_layer(tmp_path: Path) -> None:
    """AWQ's GEMV layout (written by AutoAWQ's `WQLinear_GEMV.from_linear`) pads its scale tables with unused groups:
    without the config's group size its weights are not dequantized, each layer's pair says so (`not_compared`), none
    is a number comparing codes with floats."""
    import importlib.util
    import subprocess
    import sys

    from inspector.diff import DiffKind, match
    from inspector.diff import diff as diff_records
    from inspector.values import compare_pairs

    if importlib.util.find_spec("awq") is None:
        pytest.skip("awq is not installed (pip install --no-deps autoawq)")
    written = subprocess.run(
        [sys.executable, "-c", PACKED_WRITER, "awq", str(tmp_path), json.dumps(LLAMA), "in_config", "4", "gemv"],
        capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent,
    )  # fmt: skip
    assert written.returncode == 0, written.stderr[-3000:]
    words = json.loads((tmp_path / "config.json").read_text())
    del words["quantization_config"]["group_size"]
    (tmp_path / "config.json").write_text(json.dumps(words))
    a, b = load(tmp_path / "float.safetensors"), load(tmp_path / "model.safetensors")
    pairs = match(a, b)
    result = diff_records(a, b, pairs, compare_pairs(a, b, [(p.a, p.b, p.perm) for p in pairs]))
    skipped = [d for d in result.differences if d.kind is DiffKind.NOT_COMPARED]
    assert len(skipped) == LINEARS and len({d.layer for d in skipped}) == LINEARS
    assert all("AWQ GEMV: no group_size in the config says its groups" in d.message for d in skipped)
    assert not [d for d in result.differences if d.kind in (DiffKind.VALUES_CHANGED, DiffKind.QUANTIZATION_ERROR)]


def test_diff_data_dequantizes_modelopt_int4_awq_with_its_pre_quant_scale(tmp_path: Path) -> None:
    """ModelOpt's INT4 AWQ export (`weight` (out / 2, in), signed 4-bit values two a byte down each column, the low
    half first; `weight_scale` a block of 128 inputs; `pre_quant_scale` beside o_proj and down_proj, folded into the
    norms before the others), quantized and exported by ModelOpt on the CPU: each weight dequantizes as the values its
    packer `pack_int4_in_uint8` rounds times their scales (ModelOpt has no CPU dequantization of its export), times
    the `pre_quant_scale` where it is kept (AWQ divided each input's weights by it); `inspector diff --data` against
    the float model gives each weight's error (they were `not_compared`). Where the scale was folded into the norm,
    the norm's weights differ (`values_changed`) and the weight is the one ModelOpt left."""
    import importlib.util
    import subprocess
    import sys

    from safetensors.torch import load_file, save_file

    from inspector.diff import DiffKind, match
    from inspector.diff import diff as diff_records
    from inspector.values import compare_pairs

    if importlib.util.find_spec("modelopt") is None:
        pytest.skip("nvidia-modelopt is not installed")
    written = subprocess.run(
        [sys.executable, "-c", MODELOPT_WRITER, "INT4_AWQ_CFG", str(tmp_path), json.dumps(MODELOPT_LLAMA)],
        capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent,
    )  # fmt: skip
    assert written.returncode == 0, written.stderr[-3000:]
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model("llama", **MODELOPT_LLAMA))
    floats = {k: v.contiguous() for k, v in model.state_dict().items()}
    save_file(floats, str(tmp_path / "float.safetensors"))
    reference, stored = load_file(tmp_path / "int4_reference.safetensors"), load_file(tmp_path / "model.safetensors")
    assert len(reference) == LINEARS
    a, b = load(tmp_path / "float.safetensors"), load(tmp_path / "model.safetensors")
    pairs = match(a, b)
    values = compare_pairs(a, b, [(p.a, p.b, p.perm) for p in pairs])
    result = diff_records(a, b, pairs, values)
    by_name = {v.a: v for v in values}
    kept = 0
    for name, expected in reference.items():
        factor = stored.get(name.removesuffix("weight") + "pre_quant_scale")
        if factor is not None:
            expected, kept = expected * factor, kept + 1
        error = (floats[name].double() - expected.double()).abs().max().item()
        _assert_dequantized_as(_dequantized(b, name), expected.numpy(), error, by_name[name])
        assert by_name[name].dequantized == "ModelOpt INT4 AWQ"
    assert kept == 2 * 2  # (o_proj and down_proj: the others' scale folded into the norm before them)
    kinds = [d.kind for d in result.differences]
    assert kinds.count(DiffKind.QUANTIZATION_ERROR) == LINEARS and DiffKind.NOT_COMPARED not in kinds
    changed = {d.a for d in result.differences if d.kind is DiffKind.VALUES_CHANGED}
    assert changed and all(name.endswith("layernorm.weight") for name in changed)


# compressed-tensors' packed schemes -> (its format, the scheme: a preset's name or pack-quantized's weights)
COMPRESSED_PACKED = {
    "W4 symmetric": ("pack-quantized", {"num_bits": 4, "symmetric": True}),
    "W4 asymmetric": ("pack-quantized", {"num_bits": 4, "symmetric": False}),
    "W8 asymmetric": ("pack-quantized", {"num_bits": 8, "symmetric": False}),
    "NVFP4A16": ("nvfp4-pack-quantized", "NVFP4A16"),
    "MXFP4A16": ("mxfp4-pack-quantized", "MXFP4A16"),
    "MXFP6A16": ("mxfp6-pack-quantized", "MXFP6A16"),
}


@pytest.mark.parametrize("scheme", list(COMPRESSED_PACKED))
def test_diff_data_dequantizes_compressed_tensors_packed_weights_as_it_does(tmp_path: Path, scheme: str) -> None:
    """compressed-tensors' pack-quantized weights (int32 words, values plus 2^(bits - 1); asymmetric zero points packed
    down their columns), its NVFP4 and MXFP4 bytes (E2M1 codes; FP8 scales over a global scale, E8M0 exponents) and
    its MXFP6 bytes (four E2M3 codes in three bytes, E8M0 exponents),
    calibrated by its own `compute_dynamic_scales_and_zp` and `generate_gparam`, compressed and saved: each weight
    dequantizes as its own compressor's `decompress` does it (NVFP4's and MXFP4's at float32: its
    `unpack_fp4_from_uint8` and `dequantize`, which otherwise round to bf16), and `inspector diff --data` gives each
    weight's error."""
    pytest.importorskip("compressed_tensors")
    from compressed_tensors.compressors import BaseCompressor
    from compressed_tensors.compressors.mx_utils import decompress_mx_scale
    from compressed_tensors.compressors.nvfp4.helpers import unpack_fp4_from_uint8
    from compressed_tensors.quantization import (
        QuantizationConfig,
        QuantizationScheme,
        apply_quantization_config,
        preset_name_to_scheme,
    )
    from compressed_tensors.quantization.lifecycle.forward import dequantize
    from compressed_tensors.quantization.utils import compute_dynamic_scales_and_zp, generate_gparam
    from safetensors.torch import load_file

    fmt, words = COMPRESSED_PACKED[scheme]
    if isinstance(words, str):
        group = preset_name_to_scheme(words, ["Linear"])
    else:
        weights = {**words, "type": "int", "dynamic": False, "strategy": "group", "group_size": 32}
        group = QuantizationScheme.model_validate({"targets": ["Linear"], "weights": weights})
    config = QuantizationConfig(config_groups={"group_0": group}, ignore=["lm_head"], quantization_status="initialized",
                                format=fmt)  # fmt: skip
    model = _llama()
    model.save_pretrained(tmp_path / "float")
    apply_quantization_config(model, config)
    with torch.no_grad():  # (its own calibration of the weights)
        for module in model.modules():
            if hasattr(module, "weight_scale"):
                overall = None
                if hasattr(module, "weight_global_scale"):
                    overall = generate_gparam(module.weight.min(), module.weight.max())
                    module.weight_global_scale.copy_(overall)
                scale, zero = compute_dynamic_scales_and_zp(module.weight, group.weights, module, global_scale=overall)
                module.weight_scale.copy_(scale.reshape(module.weight_scale.shape))
                if hasattr(module, "weight_zero_point"):
                    module.weight_zero_point.copy_(zero.reshape(module.weight_zero_point.shape))
    _compress_and_save(model, config, tmp_path / "q")
    stored, floats = (
        load_file(tmp_path / "q" / "model.safetensors"),
        load_file(tmp_path / "float" / "model.safetensors"),
    )
    values = _quantization_errors(tmp_path / "float" / "model.safetensors", tmp_path / "q" / "model.safetensors")
    b = load(tmp_path / "q" / "model.safetensors")
    checked = 0
    for name in floats:
        module = name.removesuffix(".weight")
        if module + ".weight_packed" not in stored:
            continue
        state = {k.removeprefix(module + "."): v for k, v in stored.items() if k.startswith(module + ".")}
        if fmt in ("pack-quantized", "mxfp6-pack-quantized"):  # (MXFP6's in bf16: E2M3 x 2^k, exact)
            expected = BaseCompressor.get_value_from_registry(fmt).decompress(state, group)["weight"]
        else:
            rows, width = state["weight_packed"].shape
            codes = unpack_fp4_from_uint8(state["weight_packed"], rows, width * 2, dtype=torch.float32)
            scale = state["weight_scale"]
            scale = decompress_mx_scale(scale).float() if scale.dtype == torch.uint8 else scale.float()
            expected = dequantize(codes, scale, args=group.weights, global_scale=state.get("weight_global_scale"),
                                  dtype=torch.float32)  # fmt: skip
        expected = expected.float().numpy()
        error = float(abs(floats[name].double().numpy() - expected).max())
        _assert_dequantized_as(_dequantized(b, module + ".weight_packed"), expected, error, values[name])
        checked += 1
    assert checked == LINEARS


# MLX's own dequantization (`mlx.core.dequantize`) of each quantized weight of a file mlx-lm wrote, in a process of its
# own, saved beside it (reference.safetensors, float32)
MLX_DEQUANTIZER = """
import json, sys
import mlx.core as mx
folder = sys.argv[1]
stored = mx.load(folder + "/model.safetensors")
words = json.load(open(folder + "/config.json"))["quantization"]
reference = {}
for name, weight in stored.items():
    module = name.removesuffix(".weight")
    if module + ".scales" in stored:
        reference[name] = mx.dequantize(weight, stored[module + ".scales"], stored.get(module + ".biases"),
                                        group_size=words["group_size"], bits=words["bits"],
                                        mode=words.get("mode", "affine")).astype(mx.float32)
mx.save_safetensors(folder + "/reference.safetensors", reference)
"""


@pytest.mark.parametrize("quantization", ["4-bit", "3-bit", "mxfp4", "nvfp4"])
def test_diff_data_dequantizes_mlx_weights_as_mlx_does(tmp_path: Path, quantization: str) -> None:
    """MLX's quantized weights as mlx-lm writes them (uint32 words, each row a bit stream; the affine mode's scales
    and biases, the float modes' E2M1 codes with E8M0 or FP8 scales in bytes) dequantize as `mlx.core.dequantize`
    does them, and `inspector diff --data` against the float model gives each weight's error (embedding and head
    quantized too)."""
    import importlib.util
    import subprocess
    import sys

    from safetensors.numpy import load_file

    if importlib.util.find_spec("mlx_lm") is None:
        pytest.skip("mlx-lm (and mlx's CPU build) not installed")
    words = MLX_QUANTIZATIONS[quantization][0]
    root = Path(__file__).resolve().parent.parent
    for script, args in ((MLX_WRITER, [str(tmp_path / "hf"), str(tmp_path / "mlx"), json.dumps(LLAMA),
                                       json.dumps(words)]), (MLX_DEQUANTIZER, [str(tmp_path / "mlx")])):  # fmt: skip
        written = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, cwd=root)
        assert written.returncode == 0, written.stderr[-2000:]
    reference, floats = load_file(tmp_path / "mlx" / "reference.safetensors"), _llama().state_dict()
    values = _quantization_errors(tmp_path / "hf" / "model.safetensors", tmp_path / "mlx" / "model.safetensors",
                                  LINEARS + 2)  # fmt: skip
    b = load(tmp_path / "mlx" / "model.safetensors")
    assert len(reference) == LINEARS + 2
    for name, expected in reference.items():
        error = float(abs(floats[name].double().numpy() - expected).max())
        _assert_dequantized_as(_dequantized(b, name), expected, error, values[name])


# ModelOpt's own dequantization (`NVFP4QTensor.dequantize`, `MXFP4QTensor.dequantize`, float32) of each NVFP4 and
# MXFP4 weight of its export, in a process of its own (as its writer: ModelOpt registers its modules with
# transformers), saved beside it (reference.safetensors)
MODELOPT_DEQUANTIZER = """
import sys, torch
from safetensors.torch import load_file, save_file
from modelopt.torch.quantization.qtensor import MXFP4QTensor, NVFP4QTensor
stored = load_file(sys.argv[1] + "/model.safetensors")
reference = {}
for name, packed in stored.items():
    module = name.removesuffix(".weight")
    if packed.dtype != torch.uint8 or module + ".weight_scale" not in stored:
        continue
    shape = torch.Size((*packed.shape[:-1], packed.shape[-1] * 2))
    if module + ".weight_scale_2" in stored:
        scales = {"scale": stored[module + ".weight_scale"], "double_scale": stored[module + ".weight_scale_2"]}
        reference[name] = NVFP4QTensor(shape, torch.float32, packed).dequantize(
            dtype=torch.float32, block_sizes={-1: 16}, **scales)
    elif stored[module + ".weight_scale"].dtype == torch.uint8:
        reference[name] = MXFP4QTensor(shape, torch.float32, packed).dequantize(
            dtype=torch.float32, block_sizes={-1: 32}, scale=stored[module + ".weight_scale"])
save_file(reference, sys.argv[1] + "/reference.safetensors")
"""


@pytest.mark.parametrize("config", ["NVFP4_DEFAULT_CFG", "W4A16_NVFP4_CFG", "MXFP4_DEFAULT_CFG"])
def test_diff_data_dequantizes_modelopt_nvfp4_and_mxfp4_as_it_does(tmp_path: Path, config: str) -> None:
    """NVIDIA ModelOpt's NVFP4 exports (`weight` two E2M1 values a byte, `weight_scale` FP8 each 16 values,
    `weight_scale_2` a tensor) and its MXFP4 export (`weight_scale` an E8M0 exponent each 32 values), quantized and
    exported by ModelOpt on the CPU: each weight dequantizes as its own `NVFP4QTensor.dequantize` or
    `MXFP4QTensor.dequantize` does it, and `inspector diff --data` against the float model (the same seed's) gives
    each weight's error (MXFP4's were `not_compared`)."""
    import importlib.util
    import subprocess
    import sys

    from safetensors.torch import load_file, save_file

    if importlib.util.find_spec("modelopt") is None:
        pytest.skip("nvidia-modelopt is not installed")
    root = Path(__file__).resolve().parent.parent
    for script, args in ((MODELOPT_WRITER, [config, str(tmp_path), json.dumps(MODELOPT_LLAMA)]),
                         (MODELOPT_DEQUANTIZER, [str(tmp_path)])):  # fmt: skip
        written = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, cwd=root)
        assert written.returncode == 0, written.stderr[-3000:]
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model("llama", **MODELOPT_LLAMA))
    floats = {k: v.contiguous() for k, v in model.state_dict().items()}
    save_file(floats, str(tmp_path / "float.safetensors"))
    reference = load_file(tmp_path / "reference.safetensors")
    assert len(reference) == LINEARS
    values = _quantization_errors(tmp_path / "float.safetensors", tmp_path / "model.safetensors")
    b = load(tmp_path / "model.safetensors")
    for name, expected in reference.items():
        error = (floats[name].double() - expected.double()).abs().max().item()
        _assert_dequantized_as(_dequantized(b, name), expected.numpy(), error, values[name])
        assert values[name].dequantized == "ModelOpt " + ("MXFP4" if "MXFP4" in config else "NVFP4")


def test_diff_data_dequantizes_gpt_oss_mxfp4_experts_as_transformers_does(tmp_path: Path) -> None:
    """gpt-oss's MXFP4 experts in OpenAI's release layout (`<projection>_blocks` (experts, out, in / 32, 16): E2M1
    values two a byte, the low half first; `<projection>_scales`: an E8M0 exponent a block of 32), the float model's
    experts quantized by torchao's OCP MX quantizer (`to_mx`; transformers writes the layout only with its GPU
    kernels): each projection dequantizes as transformers' `convert_moe_packed_tensors` does it (what `from_pretrained`
    loads on a CPU), and `inspector diff --data` against the float model pairs each `<projection>_blocks` with its
    projection by name, each expert's matrix transposed ((experts, in, out) in transformers), and gives its error
    (they were `not_compared`, or `missing` and `extra`)."""
    pytest.importorskip("torchao")
    from safetensors.torch import load_file, save_file
    from torchao.prototype.mx_formats.mx_tensor import to_mx
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors

    from inspector.diff import DiffKind, match
    from inspector.diff import diff as diff_records
    from inspector.values import compare_pairs

    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**GPT_OSS))
    model.save_pretrained(tmp_path / "float")
    floats = load_file(tmp_path / "float" / "model.safetensors")
    tensors = dict(floats)
    experts = [n for n in tensors if n.endswith(("experts.gate_up_proj", "experts.down_proj"))]
    for name in experts:
        w = tensors.pop(name).transpose(1, 2).contiguous()  # (each expert as a Linear holds it: (out, in))
        e, rows, inputs = w.shape
        scale, packed = to_mx(w, torch.float4_e2m1fn_x2, 32)
        tensors[name + "_blocks"] = packed.view(torch.uint8).reshape(e, rows, inputs // 32, 16)
        tensors[name + "_scales"] = scale.view(torch.uint8).reshape(e, rows, inputs // 32)
    (tmp_path / "q").mkdir()
    save_file(tensors, str(tmp_path / "q" / "model.safetensors"), metadata={"format": "pt"})
    float_file, quantized_file = tmp_path / "float" / "model.safetensors", tmp_path / "q" / "model.safetensors"
    values = _quantization_errors(float_file, quantized_file, len(experts))
    a, b = load(float_file), load(quantized_file)
    for name in experts:
        expected = convert_moe_packed_tensors(tensors[name + "_blocks"], tensors[name + "_scales"], dtype=torch.float32)
        assert expected.shape == floats[name].shape  # (transformers' (experts, in, out))
        error = (floats[name].double() - expected.double()).abs().max().item()
        ours = _dequantized(b, name + "_blocks")  # (the blocks' order: each expert's transpose)
        _assert_dequantized_as(ours, expected.transpose(1, 2).numpy(), error, values[name])
        assert values[name].dequantized == "gpt-oss MXFP4"
    pairs = match(a, b)
    assert {(p.a.name, p.b.name, p.how, p.perm) for p in pairs if p.b.name.endswith("_blocks")} == {
        (name, name + "_blocks", "normalised", (0, 2, 1)) for name in experts
    }
    result = diff_records(a, b, pairs, compare_pairs(a, b, [(p.a, p.b, p.perm) for p in pairs]))
    turned = [d for d in result.differences if d.kind is DiffKind.TRANSPOSED]
    assert len(turned) == len(experts) and all(d.expected for d in turned)
    assert not [d for d in result.differences if d.kind in (DiffKind.MISSING, DiffKind.SHAPE_CHANGED)]


WIDE_LLAMA = {**LLAMA, "hidden_size": 256, "intermediate_size": 512}  # (every projection of more than 128 inputs)


@pytest.mark.parametrize("qtype", ["qint4", "qint2"])
def test_optimum_quanto_grouped_layers_take_their_sizes_from_the_config(tmp_path: Path, qtype: str) -> None:
    """A model whose every projection optimum-quanto stores in groups (more than 128 inputs: rows of 128 values), saved
    by `save_file` with its config beside (saying nothing of the quantization): its shapes say none of its sizes, the
    config's do, and the family check matches (it read 512 x 128 groups as a q_dim of 512 and warned COUNT_MISMATCH on
    the correct file). Without the config the count is still `num_parameters()`, and each module the formula sizes
    otherwise is explained, saying its values may be groups (info, no warning)."""
    quanto = pytest.importorskip("optimum.quanto")
    from safetensors.torch import save_file

    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model("llama", **WIDE_LLAMA))
    counted = model.num_parameters()
    quanto.quantize(model, weights=getattr(quanto, qtype), exclude="lm_head")
    quanto.freeze(model)
    save_file(model.state_dict(), tmp_path / "model.safetensors")
    model.config.save_pretrained(tmp_path)
    report = inspect(tmp_path / "model.safetensors")
    grouped = [t for t in report.checkpoint.tensors if t.name.endswith(".weight._data._data")]
    assert len(grouped) == LINEARS and all(t.shape[1] == 128 for t in grouped)  # (the layers' groups)
    assert report.checkpoint.n_parameters == counted == model.num_parameters()
    exp = report.expectation
    assert exp is not None and exp.source == "config" and exp.matches and not exp.anomalies
    assert (exp.hyperparameters["q_dim"], exp.hyperparameters["kv_dim"]) == (256, 128)
    assert not [f for f in report.findings if f.severity != "info"]
    (tmp_path / "config.json").unlink()
    report = inspect(tmp_path / "model.safetensors")
    assert report.checkpoint.n_parameters == counted
    exp = report.expectation
    assert exp is not None and exp.source == "inferred" and not exp.anomalies
    assert not [f for f in report.findings if f.severity != "info"]
    assert all("optimum-quanto's groups: rows of 128 values" in c.explanation for c in exp.layers if c.status != "ok")


@pytest.mark.parametrize("layout", ["compressed-tensors float", "compressed-tensors int", "bitsandbytes int8"])
def test_diff_data_dequantizes_8_bit_weights_beside_their_scales(tmp_path: Path, layout: str) -> None:
    """compressed-tensors' FP8 and INT8 weights (a `weight_scale` a channel) and bitsandbytes' 8-bit rows (`SCB`)
    dequantize as their libraries' own `dequantize` and `int8_vectorwise_dequant` do the tensors they wrote (to
    float32 rounding), and `inspector diff --data` against the float model gives each weight's quantization error."""
    import numpy as np
    from safetensors.torch import load_file

    from inspector.diff import DiffKind, match
    from inspector.diff import diff as diff_records
    from inspector.values import compare_pairs

    library, kind = layout.split()
    _llama().save_pretrained(tmp_path / "float")
    if library == "bitsandbytes":
        functional = pytest.importorskip("bitsandbytes.functional")
        config = transformers.BitsAndBytesConfig(load_in_8bit=True)
        transformers.AutoModelForCausalLM.from_pretrained(
            tmp_path / "float", quantization_config=config, device_map="cpu"
        ).save_pretrained(tmp_path / "q")
    else:
        _compressed_tensors(tmp_path / "q", kind)
        from compressed_tensors.quantization import QuantizationArgs
        from compressed_tensors.quantization.lifecycle.forward import dequantize

        args = QuantizationArgs(num_bits=8, type=kind, symmetric=True, strategy="channel")
    stored = load_file(tmp_path / "q" / "model.safetensors")
    floats = load_file(tmp_path / "float" / "model.safetensors")
    a, b = load(tmp_path / "float" / "model.safetensors"), load(tmp_path / "q" / "model.safetensors")
    pairs = match(a, b)
    values = {v.a: v for v in compare_pairs(a, b, [(p.a, p.b, p.perm) for p in pairs])}
    result = diff_records(a, b, pairs, tuple(values.values()))
    assert len([d for d in result.differences if d.kind is DiffKind.QUANTIZATION_ERROR]) == LINEARS
    checked = 0
    for name, weight in stored.items():
        module = name.removesuffix(".weight")
        if module == name or weight.dtype not in (torch.int8, torch.float8_e4m3fn):
            continue
        if library == "bitsandbytes":
            expected = functional.int8_vectorwise_dequant(weight, stored[module + ".SCB"])
        else:
            expected = dequantize(weight, stored[module + ".weight_scale"], args=args, dtype=torch.float32)
        expected = expected.float().numpy()
        ours = _dequantized(b, name)
        assert np.allclose(ours, expected.ravel(), rtol=2**-22, atol=2**-22 * float(np.abs(expected).max()))
        error = float(np.abs(floats[name].double().numpy() - expected).max())
        assert math.isclose(values[name].max_abs, error, rel_tol=1e-5, abs_tol=1e-7) and values[name].dequantized
        checked += 1
    assert checked == LINEARS


@pytest.mark.parametrize("msb_first", [False, True])
@pytest.mark.parametrize("bits", [1, 2, 3, 4, 5, 8])
def test_a_bit_stream_reads_as_its_bits_say(bits: int, msb_first: bool) -> None:
    """`_bitstream` (values of 1, 2, 4 or 8 bits shifted out of their bytes, others read bit by bit) gives each value
    of each row as the row's bits spell it: the least significant bit first (a little-endian stream), or each byte's
    most significant first, whole values only, for rows of random bytes."""
    np = pytest.importorskip("numpy")
    from inspector.dequantize_stream import _bitstream

    raw = np.random.default_rng(bits).integers(0, 256, size=(5, 12), dtype=np.uint8)
    count = 12 * 8 // bits - 1
    got = _bitstream(raw, bits, count, msb_first)
    for r, row in enumerate(raw.tolist()):
        stream = [(byte >> (7 - i if msb_first else i)) & 1 for byte in row for i in range(8)]
        expected = [
            sum(bit << (bits - 1 - j if msb_first else j) for j, bit in enumerate(stream[k * bits : (k + 1) * bits]))
            for k in range(count)
        ]
        assert got[r].tolist() == expected
    assert got.dtype == np.int64
