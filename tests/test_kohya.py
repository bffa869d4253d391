"""Adapters of kohya-ss' layout (the LoRAs of image models: sd-scripts, LyCORIS, ComfyUI), written by the libraries.

LyCORIS (`lycoris-lora`, the package sd-scripts and most trainers use for LoRA, LoCon, LoHa, LoKr and DoRA) adapts a
test-sized diffusers U-Net and transformers CLIP text encoder (random weights, nothing downloaded) through its kohya
entry point (`lycoris.kohya.create_network`) and saves with its own `save_weights`, in float16 with sd-scripts'
metadata, as a trainer does. diffusers' `convert_state_dict_to_kohya` writes a peft LoRA of the same U-Net in the same
layout. The references are the libraries': the network's `parameters()` for the count, its `buffers()` for `alpha`
(a registered buffer of every module), each module's own `lora_dim` for its rank.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from inspector.records import TensorKind
from inspector.report import Report, inspect

torch = pytest.importorskip("torch")
diffusers = pytest.importorskip("diffusers")
transformers = pytest.importorskip("transformers")
lycoris_kohya = pytest.importorskip("lycoris.kohya")

# LyCORIS' algorithms and what each needs: LoCon (LoRA of the convolutions, at conv_dim) through the conv blocks' preset
NETWORKS: dict[str, dict[str, Any]] = {
    "lora": {"algo": "lora", "preset": "attn-mlp"},
    "locon": {"algo": "lora", "preset": "unet-convblock-only", "conv_dim": 2, "conv_alpha": 1},
    "dora": {"algo": "lora", "preset": "attn-mlp", "dora_wd": True},
    "loha": {"algo": "loha", "preset": "attn-mlp"},
    "lokr": {"algo": "lokr", "preset": "attn-mlp", "factor": 4},
}
LORA_LIKE = ("lora", "locon", "dora")  # modules of lora_down and lora_up: one LoRA spec each


def _unet() -> Any:
    torch.manual_seed(0)
    return diffusers.UNet2DConditionModel(
        sample_size=8, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(32, 64),
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=16, attention_head_dim=4, norm_num_groups=8,
    )  # fmt: skip


def _text_encoder() -> Any:
    config = transformers.CLIPTextConfig(
        hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2, vocab_size=100,
        max_position_embeddings=16, bos_token_id=0, eos_token_id=1, pad_token_id=1,
    )  # fmt: skip
    return transformers.CLIPTextModel(config)


def _network(tmp_path: Path, name: str) -> tuple[Any, Path]:
    logging.getLogger("LyCORIS").setLevel(logging.ERROR)  # (its advice on presets the tiny models do not match)
    unet, text_encoder = _unet(), _text_encoder()
    network = lycoris_kohya.create_network(1.0, 4, 2.0, None, text_encoder, unet, **NETWORKS[name])
    network.apply_to(text_encoder, unet, apply_text_encoder=True, apply_unet=True)
    path = tmp_path / f"{name}.safetensors"
    network.save_weights(str(path), torch.float16, {"ss_network_dim": "4", "ss_network_alpha": "2.0"})
    return network, path


def _no_warning(report: Report) -> None:
    assert [f.code for f in report.findings if f.severity.value != "info"] == []


@pytest.mark.reference
@pytest.mark.parametrize("name", list(NETWORKS))
def test_lycoris_networks_count_their_parameters_and_keep_alpha_a_buffer(tmp_path: Path, name: str) -> None:
    network, path = _network(tmp_path, name)
    report = inspect(path)
    ckpt = report.checkpoint
    saved = network.state_dict()
    alphas = [k for k in saved if k.endswith(".alpha")]
    assert alphas and len(alphas) == len(network.loras)  # (every module saves its scale)
    assert ckpt.n_parameters == sum(p.numel() for p in network.parameters())
    buffers = [t for t in ckpt.tensors if t.kind is TensorKind.BUFFER]
    assert sorted(t.name for t in buffers) == sorted(alphas)  # (alpha: `register_buffer`, as the network holds it)
    assert {r.role for r in report.roles if r.name.endswith(".alpha")} == {"buffer"}
    assert "unmatched" not in {r.role for r in report.roles}
    expectation = report.expectation
    assert expectation is not None and not expectation.anomalies
    assert expectation.total == expectation.found == ckpt.n_parameters
    _no_warning(report)
    if name not in LORA_LIKE:
        return
    # one LoRA module per adapted module, at the module's own rank (conv_dim for LoCon's convolutions)
    assert expectation.architecture == "lora-adapter"
    ranks = {m.lora_name: m.lora_dim for m in network.loras}
    checked = {row.layer: row for row in expectation.layers}
    assert set(checked) == set(ranks)
    assert {name: row.kind for name, row in checked.items()} == {n: f"LoRA r={r}" for n, r in ranks.items()}
    sections = {n.split("_", 2)[1] for n in ranks}
    assert expectation.hyperparameters["targets"] == " ".join(sorted(f"lora_{s}" for s in sections))
    assert any("kohya-ss' layout" in note for note in expectation.notes)


# LyCORIS' Tucker cores (`use_tucker`: a convolution's factors around a rank x rank x kernel core) and its LoHa and LoKr
CONV_TUCKER = {"preset": "unet-convblock-only", "conv_dim": 2, "conv_alpha": 1, "use_tucker": True}
TUCKER: dict[str, dict[str, Any]] = {
    "locon_tucker": {"algo": "lora", **CONV_TUCKER},
    "loha_tucker": {"algo": "loha", **CONV_TUCKER},
    "lokr_tucker": {"algo": "lokr", **CONV_TUCKER, "factor": 4},
}


@pytest.mark.reference
@pytest.mark.parametrize("name", ["locon_tucker", "loha_tucker", "loha", "lokr", "lokr_tucker"])
def test_tucker_cores_and_lycoris_loha_and_lokr_read_as_an_adapter(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A LoCon or LoHa module with a Tucker core is one spec of the module's rank and the core's kernel (LyCORIS'
    `tucker`); a file of LyCORIS' LoHa or LoKr modules is an adapter of that algorithm (LoKr's modules as they are)."""
    monkeypatch.setitem(NETWORKS, name, NETWORKS.get(name) or TUCKER[name])
    network, path = _network(tmp_path, name)
    report = inspect(path)
    assert report.checkpoint.n_parameters == sum(p.numel() for p in network.parameters())
    _no_warning(report)
    expectation = report.expectation
    assert expectation is not None and expectation.architecture == "lora-adapter"
    assert expectation.total == expectation.found == report.checkpoint.n_parameters and not expectation.anomalies
    algo = NETWORKS[name]["algo"]
    assert expectation.hyperparameters.get("algo") == (None if algo == "lora" else algo)
    kinds = {row.layer: row.kind for row in expectation.layers}
    assert set(kinds) == {m.lora_name for m in network.loras}
    for module in network.loras:
        core = f" Tucker {'x'.join(map(str, module.shape[2:]))}" if getattr(module, "tucker", False) else ""
        if algo == "lokr":
            assert kinds[module.lora_name] == _lokr_kind(module, core)
        else:
            assert kinds[module.lora_name] == f"{'LoRA' if algo == 'lora' else 'LoHa'} r={module.lora_dim}{core}"
    if name.endswith("tucker"):  # (the conv blocks' modules: Tucker cores at conv_dim)
        assert any(getattr(m, "tucker", False) for m in network.loras)
        assert any(kind.endswith("Tucker 3x3") for kind in kinds.values())
    assert any("kohya-ss' layout" in note for note in expectation.notes)


def _lokr_kind(module: Any, core: str) -> str:
    """A LyCORIS LoKr module's kind from its own attributes: its rank (`lora_dim`) where it split a factor (`use_w1`,
    `use_w2`: whole), its first factor's size (out_l x in_m), its Tucker core."""
    w1 = module.lokr_w1.shape if module.use_w1 else (module.lokr_w1_a.shape[0], module.lokr_w1_b.shape[1])
    rank = "" if module.use_w1 and module.use_w2 else f" r={module.lora_dim}"
    factor = w1[0] if w1[0] == w1[1] else f"{w1[0]}x{w1[1]}"
    return f"LoKr{rank} f={factor}{core}"


@pytest.mark.reference
@pytest.mark.parametrize(
    "words",
    [
        {"preset": "attn-mlp"},
        # (the convolutions' first factors, 4 x 4, are split at a rank under 2)
        {"preset": "unet-convblock-only", "conv_dim": 1, "conv_alpha": 1, "decompose_both": True},
        {"preset": "attn-mlp", "full_matrix": True},
        {"preset": "attn-mlp", "dora_wd": True},  # (DoRA's magnitude, dora_scale, one an output)
        {"preset": "unet-convblock-only", "conv_dim": 2, "conv_alpha": 1},
        CONV_TUCKER,
    ],
)
def test_lycoris_lokr_modules_count_as_lycoris_makes_them(tmp_path: Path, words: dict[str, Any]) -> None:
    """Each LyCORIS LoKr module (its first factor whole or split with `decompose_both`, both whole with
    `full_matrix`, a convolution's second factor split around a Tucker core with `use_tucker`, with DoRA's magnitude
    with `dora_wd`) is one LoKr spec whose
    formula gives the module's own parameters, of its `lora_dim` where it split a factor (LyCORIS' own module
    attributes: `lora_dim`, `use_w1`, `use_w2`, `tucker`, `parameters()`)."""
    network_words = {"algo": "lokr", "factor": 4, **words}
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(NETWORKS, "lokr_variant", network_words)
        network, path = _network(tmp_path, "lokr_variant")
    report = inspect(path)
    _no_warning(report)
    expectation = report.expectation
    assert expectation is not None and not expectation.anomalies
    assert expectation.total == expectation.found == report.checkpoint.n_parameters
    assert report.checkpoint.n_parameters == sum(p.numel() for p in network.parameters())
    rows = {row.layer: row for row in expectation.layers}
    for module in network.loras:
        row = rows[module.lora_name]
        core = f" Tucker {'x'.join(map(str, module.shape[2:]))}" if module.tucker else ""
        assert (row.kind, row.expected) == (_lokr_kind(module, core), sum(p.numel() for p in module.parameters()))
    kinds = {row.kind for row in expectation.layers}
    assert any(" r=" in kind for kind in kinds) is not words.get("full_matrix", False)
    assert any("Tucker" in kind for kind in kinds) is bool(words.get("use_tucker"))
    assert any(not m.use_w1 for m in network.loras) is bool(words.get("decompose_both"))  # (w1 split)
    assert any(t.name.endswith(".dora_scale") for t in report.checkpoint.tensors) is bool(words.get("dora_wd"))


@pytest.mark.reference
def test_diffusers_kohya_conversion_of_a_peft_lora(tmp_path: Path) -> None:
    """diffusers' `convert_state_dict_to_kohya` (what its training scripts offer for A1111 and ComfyUI): the peft
    adapter's factors as lora_down and lora_up, with an `alpha` of its own for each module (a 0-d integer tensor)."""
    peft = pytest.importorskip("peft")
    from diffusers.utils import convert_state_dict_to_kohya
    from safetensors.torch import save_file

    unet = _unet()
    unet.add_adapter(peft.LoraConfig(r=4, lora_alpha=8, target_modules=["to_q", "to_k", "to_v", "to_out.0"]))
    state = peft.get_peft_model_state_dict(unet)
    kohya = convert_state_dict_to_kohya({"unet." + k: v for k, v in state.items()})
    path = tmp_path / "kohya.safetensors"
    save_file({k: v.contiguous() for k, v in kohya.items()}, path)
    report = inspect(path)
    assert report.checkpoint.n_parameters == sum(v.numel() for v in state.values())
    alphas = {t.name for t in report.checkpoint.tensors if t.kind is TensorKind.BUFFER}
    assert alphas == {k for k in kohya if k.endswith(".alpha")} and len(alphas) * 2 == len(state)
    expectation = report.expectation
    assert expectation is not None and expectation.architecture == "lora-adapter"
    assert expectation.hyperparameters == {"r": 4, "targets": "lora_unet"}
    assert expectation.total == expectation.found
    _no_warning(report)


def test_an_alpha_beside_no_adapter_factor_is_a_parameter(tmp_path: Path) -> None:
    """A Snake activation's learned `alpha` (BigVGAN, DAC) is a parameter: only an adapter module's is a buffer."""
    from safetensors.torch import save_file

    save_file(
        {"block.0.alpha": torch.ones(1, 8, 1), "block.0.conv.weight": torch.ones(8, 8, 3),
         "lora_unet_x.lora_down.weight": torch.ones(2, 8), "lora_unet_x.lora_up.weight": torch.ones(8, 2),
         "lora_unet_x.alpha": torch.tensor(2.0)},
        tmp_path / "mixed.safetensors",
    )  # fmt: skip
    kinds = {t.name: t.kind for t in inspect(tmp_path / "mixed.safetensors").checkpoint.tensors}
    assert kinds["block.0.alpha"] is TensorKind.PARAMETER
    assert kinds["lora_unet_x.alpha"] is TensorKind.BUFFER
