"""torchvision and timm models written by torch in tmp_path: the inspector counts what torch counts, warns of nothing.

Each model is small (a test-sized configuration of the real class, `pretrained=False` / `weights=None`: nothing is
downloaded) and saved as `torch.save(model.state_dict())` and as safetensors. The reference is torch itself:
`parameters()` for the count, the persistent buffers of the state dict for the buffers (running statistics, index
tables, frozen norms). bench/sweep_vision.py does the same for every model of both libraries.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from inspector.records import TensorKind
from inspector.report import Report, inspect


@pytest.fixture(scope="module")
def torchvision() -> Any:
    pytest.importorskip("torch")
    return pytest.importorskip("torchvision")  # importable beside CPU torch: tests/conftest.py


@pytest.fixture(scope="module")
def timm() -> Any:
    pytest.importorskip("torch")
    return pytest.importorskip("timm")


def _check(model: Any, path: Path) -> Report:
    """`path` (.pth or .safetensors) written from `model`'s state dict, inspected and checked against torch."""
    import torch
    from safetensors.torch import save_file, save_model

    torch.manual_seed(0)
    state = model.state_dict()
    if path.suffix == ".pth":
        torch.save(state, path)
    else:
        try:
            save_file(state, path)
        except RuntimeError:  # shared tensors: one copy
            save_model(model, path)
    report = inspect(path)
    buffers = sum(b.numel() for n, b in model.named_buffers() if n in state)
    assert report.checkpoint.n_parameters == sum(p.numel() for p in model.parameters())
    assert sum(t.n_elements for t in report.checkpoint.unique(TensorKind.BUFFER)) == buffers
    assert [f"{f.code}: {f.message}" for f in report.findings if f.severity != "info"] == []
    assert not report.unsafe
    assert report.expectation is not None and report.expectation.total == report.checkpoint.n_parameters
    return report


def _both(model: Any, tmp_path: Path) -> list[Report]:
    return [_check(model.eval(), tmp_path / f"model.{suffix}") for suffix in ("pth", "safetensors")]


TORCHVISION: dict[str, Callable[[Any], Any]] = {
    "resnet18": lambda tv: tv.models.resnet18(num_classes=10),
    "mobilenet_v3_small": lambda tv: tv.models.mobilenet_v3_small(num_classes=10),
    "efficientnet_b0": lambda tv: tv.models.efficientnet_b0(num_classes=10),
    "regnet_y_400mf": lambda tv: tv.models.regnet_y_400mf(num_classes=10),
    "densenet": lambda tv: tv.models.DenseNet(growth_rate=8, block_config=(2, 2), num_init_features=16, num_classes=10),
    "convnext (layer scale)": lambda tv: tv.models.convnext.ConvNeXt(
        [tv.models.convnext.CNBlockConfig(16, 32, 1), tv.models.convnext.CNBlockConfig(32, None, 1)], num_classes=10
    ),
    "swin_v2 (relative coordinates table)": lambda tv: tv.models.swin_transformer.SwinTransformer(
        [4, 4],
        16,
        [1, 1],
        [1, 2],
        [4, 4],
        num_classes=10,
        block=tv.models.swin_transformer.SwinTransformerBlockV2,
        downsample_layer=tv.models.swin_transformer.PatchMergingV2,
    ),  # fmt: skip
}


@pytest.mark.parametrize("name", list(TORCHVISION))
def test_torchvision_models_count_as_torch(name: str, torchvision: Any, tmp_path: Path) -> None:
    _both(TORCHVISION[name](torchvision), tmp_path)


def _detection(torchvision: Any, norm: Any) -> Any:
    from torchvision.models.detection import FasterRCNN
    from torchvision.models.detection.backbone_utils import mobilenet_backbone

    backbone = mobilenet_backbone(
        backbone_name="mobilenet_v3_small", weights=None, fpn=True, norm_layer=norm, trainable_layers=3
    )
    return FasterRCNN(backbone, num_classes=3, min_size=64, max_size=64)


def test_a_detection_model_on_a_pretrained_backbone_keeps_its_frozen_norms_as_buffers(
    torchvision: Any, tmp_path: Path
) -> None:
    """torchvision builds every detection model on a pretrained backbone with FrozenBatchNorm2d in `backbone.body`:
    weight, bias and running statistics all buffers, no num_batches_tracked. No config says so: the layout does."""
    from torchvision.ops.misc import FrozenBatchNorm2d

    model = _detection(torchvision, FrozenBatchNorm2d)
    frozen = [n for n, m in model.named_modules() if isinstance(m, FrozenBatchNorm2d)]
    assert frozen and all(n.startswith("backbone.body.") for n in frozen)
    for report in _both(model, tmp_path):
        kinds = {t.name: t.kind for t in report.checkpoint.tensors}
        assert {kinds[f"{n}.weight"] for n in frozen} == {kinds[f"{n}.bias"] for n in frozen} == {TensorKind.BUFFER}


def test_a_detection_model_trained_from_scratch_keeps_its_batchnorm_parameters(
    torchvision: Any, tmp_path: Path
) -> None:
    import torch

    model = _detection(torchvision, torch.nn.BatchNorm2d)  # counters beside the statistics: ordinary BatchNorms
    for report in _both(model, tmp_path):
        kinds = {t.name: t.kind for t in report.checkpoint.tensors}
        assert kinds["backbone.body.0.1.weight"] is TensorKind.PARAMETER


def test_torchscript_of_a_torchvision_model_counts_as_torch_jit_load(torchvision: Any, tmp_path: Path) -> None:
    import torch

    model = torchvision.models.mobilenet_v3_small(num_classes=10).eval()
    torch.jit.save(torch.jit.script(model), tmp_path / "model.pt")
    loaded = torch.jit.load(str(tmp_path / "model.pt"))
    report = inspect(tmp_path / "model.pt")
    assert report.checkpoint.attributes["torch.kind"] == "torchscript"
    assert report.checkpoint.n_parameters == sum(p.numel() for p in loaded.parameters())
    buffers = sum(t.n_elements for t in report.checkpoint.unique(TensorKind.BUFFER))
    assert buffers == sum(b.numel() for b in loaded.buffers())
    assert not [f for f in report.findings if f.severity != "info"] and not report.unsafe


def test_torchscript_tensors_in_a_list_attribute_are_neither_parameters_nor_buffers(
    torchvision: Any, tmp_path: Path
) -> None:
    """RAFT's correlation block keeps `corr_pyramid: List[Tensor]` (a placeholder tensor when saved): TorchScript
    declares it neither a parameter nor a buffer, and torch.jit.load counts it as neither."""
    import torch

    model = torchvision.models.optical_flow.raft_small().eval()
    torch.jit.save(torch.jit.script(model), tmp_path / "raft.pt")
    loaded = torch.jit.load(str(tmp_path / "raft.pt"))
    report = inspect(tmp_path / "raft.pt")
    assert report.checkpoint.n_parameters == sum(p.numel() for p in loaded.parameters())
    kinds = {t.name: t.kind for t in report.checkpoint.tensors}
    assert kinds["corr_block.corr_pyramid.0"] is TensorKind.OTHER


TIMM: dict[str, dict[str, Any]] = {
    # LayerScale (ls1.gamma), cls_token, pos_embed
    "vit_tiny_patch16_224": dict(depth=2, init_values=1e-5, img_size=32, patch_size=8),
    # separate q_bias / v_bias beside a bias-less qkv, rotary embedding buffers (not in the state dict)
    "eva02_tiny_patch14_224": dict(depth=2, img_size=28),
    # relative position bias table (a parameter) and index (a buffer), LayerScale gamma_1 / gamma_2
    "beit_base_patch16_224": dict(depth=2, embed_dim=32, num_heads=2, img_size=32, patch_size=8),
    # window attention with relative position tables
    "swin_tiny_patch4_window7_224": dict(depths=(1, 1), num_heads=(1, 2), embed_dim=16, img_size=56),
    # attention bias indices (a buffer) beside the biases they index, BatchNorms
    "efficientformer_l1": dict(depths=(1, 1, 1, 1), num_classes=10),
    # a DCT basis kept as a persistent buffer named `weights`
    "csatv2": dict(num_classes=10),
    # top-level parameters `weights` and `weights_dist` (a state dict, not a checkpoint with a `weights` section)
    "efficientvim_m1_dist": dict(embed_dim=(16, 32, 64), depths=(1, 1, 1), num_classes=10),
}


@pytest.mark.parametrize("name", list(TIMM))
def test_timm_models_count_as_torch(name: str, timm: Any, tmp_path: Path) -> None:
    _both(timm.create_model(name, pretrained=False, **TIMM[name]), tmp_path)


def test_a_timm_training_checkpoint_counts_its_model_once(timm: Any, tmp_path: Path) -> None:
    """timm's CheckpointSaver writes `state_dict`, `state_dict_ema` (a copy of the model), `optimizer` and
    bookkeeping in one torch.save: the parameters are the model's, the EMA copy and the optimizer state apart."""
    import torch
    from timm.utils import CheckpointSaver, ModelEmaV3

    model = timm.create_model("mobilenetv3_small_050", pretrained=False, num_classes=10)
    optimizer = torch.optim.AdamW(model.parameters())
    model(torch.randn(2, 3, 32, 32)).sum().backward()
    optimizer.step()
    saver = CheckpointSaver(
        model, optimizer, model_ema=ModelEmaV3(model), checkpoint_dir=str(tmp_path), recovery_dir=str(tmp_path)
    )
    saver.save_checkpoint(epoch=0, metric=0.5)
    report = inspect(tmp_path / "checkpoint-0.pth.tar")
    n = sum(p.numel() for p in model.parameters())
    assert report.checkpoint.n_parameters == n
    kinds = {t.name: t.kind for t in report.checkpoint.tensors}
    assert {kinds[k] for k in kinds if k.startswith("state_dict_ema.")} == {TensorKind.OTHER}
    optimizer_elements = sum(t.n_elements for t in report.checkpoint.unique(TensorKind.OPTIMIZER))
    assert optimizer_elements == sum(v.numel() for s in optimizer.state.values() for v in s.values())
    assert not [f for f in report.findings if f.severity != "info"] and not report.unsafe


# torch 2.13 deprecates eager-mode quantization (for torchao); torchvision's quantizable models still use it
QUANTIZATION_DEPRECATED = pytest.mark.filterwarnings("ignore:torch.ao.quantization is deprecated:DeprecationWarning")


def _quantizable(torchvision: Any) -> Any:
    import torch

    model = torchvision.models.quantization.mobilenet_v2(weights=None, quantize=False, num_classes=10).train()
    model.fuse_model(is_qat=True)
    model.qconfig = torch.ao.quantization.get_default_qat_qconfig("fbgemm")
    torch.ao.quantization.prepare_qat(model, inplace=True)
    model(torch.randn(2, 3, 32, 32))  # the observers see data
    return model


@QUANTIZATION_DEPRECATED
def test_quantization_aware_training_observers_are_buffers(torchvision: Any, tmp_path: Path) -> None:
    """prepare_qat adds observers and fake-quantize modules (scale, zero_point, min_val, max_val, eps, the enable
    flags): all registered buffers."""
    _both(_quantizable(torchvision), tmp_path)


@QUANTIZATION_DEPRECATED
def test_a_quantized_model_counts_its_quantized_weights_and_not_their_scales(torchvision: Any, tmp_path: Path) -> None:
    """A converted model keeps its weights quantized (packed, outside nn.Parameter: torch's parameters() lists
    none) and each module's output `scale` and `zero_point` beside them. The inspector counts the weights and
    biases, as the model's TorchScript declares them, and the scales as buffers."""
    import torch

    model = torch.ao.quantization.convert(_quantizable(torchvision).eval())
    torch.save(model.state_dict(), tmp_path / "model.pth")
    torch.jit.save(torch.jit.script(model), tmp_path / "model.pt")
    state, script = inspect(tmp_path / "model.pth"), inspect(tmp_path / "model.pt")
    assert state.checkpoint.n_parameters == script.checkpoint.n_parameters > 0
    kinds = {t.name: t.kind for t in state.checkpoint.tensors}
    scales = [k for k in kinds if k.endswith((".scale", ".zero_point"))]
    assert scales and {kinds[k] for k in scales} == {TensorKind.BUFFER}
    assert kinds["features.0.0.weight"] is TensorKind.PARAMETER
    assert not [f for f in state.findings if f.severity != "info"] and not state.unsafe


def test_evonorm_holds_a_third_parameter_beside_its_scale_and_shift(timm: Any, tmp_path: Path) -> None:
    """timm's EvoNorm2dB0 (`weight`, `bias`, `v` and a `running_var` buffer) and EvoNorm2dS0 (`weight`, `bias`,
    `v`), as in its *_evos / *_evob models (ese_vovnet39b_evos)."""
    import torch
    from timm.layers import EvoNorm2dB0, EvoNorm2dS0

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), EvoNorm2dS0(8, group_size=4))
    model.add_module("bn", EvoNorm2dB0(8))
    _both(model, tmp_path)


def test_transformers_edgetam_on_a_timm_backbone_counts_as_num_parameters(timm: Any, tmp_path: Path) -> None:
    """EdgeTAM (transformers, built on a timm backbone) keeps SAM's random Fourier features
    (`shared_image_embedding.positional_embedding`) as a buffer: `num_parameters()` leaves them out."""
    import torch

    transformers = pytest.importorskip("transformers")
    model = transformers.AutoModel.from_config(transformers.AutoConfig.for_model("edgetam"))
    torch.save(model.state_dict(), tmp_path / "pytorch_model.bin")
    report = inspect(tmp_path / "pytorch_model.bin")
    assert report.checkpoint.n_parameters == model.num_parameters()
    assert not [f for f in report.findings if f.severity != "info"]


def _module_roles(model: Any, report: Report) -> dict[str, set[str]]:
    """The roles the report gives the weights and biases of each torch module class of `model`."""
    import torch

    roles = {r.name: r.role for r in report.roles}
    by_class: dict[str, set[str]] = {}
    for path, module in model.named_modules():
        if isinstance(module, (torch.nn.Conv2d, torch.nn.BatchNorm2d, torch.nn.LayerNorm, torch.nn.Linear)):
            for param, _ in module.named_parameters(recurse=False):
                by_class.setdefault(type(module).__name__, set()).add(roles[f"{path}.{param}"])
    return by_class


def test_a_module_named_for_nothing_gets_its_role_from_what_it_holds(torchvision: Any, tmp_path: Path) -> None:
    """torchvision's ResNet keeps its shortcut as `downsample.0` (a 1x1 Conv2d) and `downsample.1` (a BatchNorm2d):
    the names say nothing, the 4-d weight and the running statistics do. Every Conv2d weight is a conv, every
    BatchNorm2d scale and shift a norm."""
    model = torchvision.models.resnet18(num_classes=10)
    for report in _both(model, tmp_path):
        assert _module_roles(model, report) == {"Conv2d": {"conv"}, "BatchNorm2d": {"norm"}, "Linear": {"dense"}}


def test_timm_learned_tokens_position_embeddings_and_layer_scales_have_roles(timm: Any, tmp_path: Path) -> None:
    """timm's ViT keeps `cls_token` and `pos_embed` beside its modules, ConvNeXt a LayerScale `gamma` on each block:
    a learned tensor, a position embedding and learned tensors, not unmatched names."""
    vit = timm.create_model("vit_tiny_patch16_224", pretrained=False, **TIMM["vit_tiny_patch16_224"])
    convnext = timm.create_model("convnext_atto", pretrained=False, depths=(1, 1, 1, 1), num_classes=10)
    for model in (vit, convnext):
        for report in _both(model, tmp_path):
            roles = {r.name: r.role for r in report.roles}
            assert "unmatched" not in roles.values()
            assert not [f for f in report.findings if f.code == "UNMATCHED_NAME"]
            if model is vit:
                assert (roles["cls_token"], roles["pos_embed"]) == ("learned_tensor", "position_embedding")
                assert {roles[n] for n in roles if n.endswith(".gamma")} == {"learned_tensor"}  # ls1.gamma, ls2.gamma
                assert _module_roles(model, report)["LayerNorm"] == {"norm"}
            else:
                assert {roles[n] for n in roles if n.endswith(".gamma")} == {"learned_tensor"}
                assert _module_roles(model, report)["Conv2d"] == {"conv"}
