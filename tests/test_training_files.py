"""The files training frameworks write, by the frameworks themselves in tmp_path: each tensor's kind as torch says.

transformers' Trainer saves, in every `checkpoint-N` folder, `optimizer.pt` (the optimizer's own state_dict: state
and param_groups, nothing else), `rng_state.pth` (Python's, numpy's and torch's random states) and `scheduler.pt`
beside the model; Lightning saves one `.ckpt` whose optimizer state is under `optimizer_states`. None of them holds
a parameter but the model's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from inspector.records import TensorKind
from inspector.report import inspect


def _tiny_llama() -> object:
    transformers = pytest.importorskip("transformers")
    config = transformers.AutoConfig.for_model(
        "llama", hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, vocab_size=128,
    )  # fmt: skip
    return transformers.AutoModelForCausalLM.from_config(config)


def test_a_trainer_checkpoint_folder(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("accelerate")
    from transformers import Trainer, TrainingArguments

    class Tokens(torch.utils.data.Dataset):
        def __len__(self) -> int:
            return 4

        def __getitem__(self, i: int) -> dict[str, object]:
            x = torch.randint(0, 128, (8,))
            return {"input_ids": x, "labels": x}

    model = _tiny_llama()
    args = TrainingArguments(
        output_dir=str(tmp_path), max_steps=1, save_steps=1, per_device_train_batch_size=2, report_to=[], use_cpu=True
    )
    trainer = Trainer(model=model, args=args, train_dataset=Tokens())
    trainer.train()
    folder = tmp_path / "checkpoint-1"
    optimizer = inspect(folder / "optimizer.pt").checkpoint
    assert optimizer.n_parameters == 0
    state = trainer.optimizer.state_dict()["state"]
    optimizer_elements = sum(v.numel() for slot in state.values() for v in slot.values() if torch.is_tensor(v))
    assert sum(t.n_elements for t in optimizer.unique(TensorKind.OPTIMIZER)) == optimizer_elements
    rng = inspect(folder / "rng_state.pth").checkpoint
    assert rng.n_parameters == 0 and {t.kind for t in rng.tensors} == {TensorKind.OTHER}
    saved = torch.load(folder / "rng_state.pth", weights_only=False)  # torch's own tensor, numpy's state an array
    assert {t.name: (t.shape, t.dtype) for t in rng.tensors} == {
        "cpu": (tuple(saved["cpu"].shape), "U8"),
        "numpy.1": (saved["numpy"][1].shape, "U32"),
    }
    for name in ("optimizer.pt", "rng_state.pth", "scheduler.pt", "model.safetensors"):
        report = inspect(folder / name)
        assert not [f for f in report.findings if f.severity != "info"] and not report.unsafe
    assert inspect(folder / "model.safetensors").checkpoint.n_parameters == model.num_parameters()


def test_a_lightning_checkpoint(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    lightning = pytest.importorskip("lightning")

    class Module(lightning.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 1))

        def training_step(self, batch: object, _: int) -> object:
            x, y = batch  # type: ignore[misc]
            return torch.nn.functional.mse_loss(self.net(x), y)

        def configure_optimizers(self) -> object:
            return torch.optim.AdamW(self.parameters())

    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(8, 4), torch.randn(8, 1)), 4)
    module = Module()
    trainer = lightning.Trainer(
        max_steps=2, default_root_dir=tmp_path, logger=False, enable_progress_bar=False, enable_model_summary=False
    )
    trainer.fit(module, data)
    (path,) = tmp_path.rglob("*.ckpt")
    report = inspect(path)
    ckpt = report.checkpoint
    assert ckpt.n_parameters == sum(p.numel() for p in module.parameters())
    state = trainer.optimizers[0].state_dict()["state"]
    optimizer_elements = sum(v.numel() for slot in state.values() for v in slot.values() if torch.is_tensor(v))
    assert sum(t.n_elements for t in ckpt.unique(TensorKind.OPTIMIZER)) == optimizer_elements
    buffers = sum(b.numel() for b in module.buffers())
    assert sum(t.n_elements for t in ckpt.unique(TensorKind.BUFFER)) == buffers
    assert not [f for f in report.findings if f.severity != "info"] and not report.unsafe


def test_a_lightning_checkpoint_of_a_transformers_model(tmp_path: Path) -> None:
    """A LightningModule fine-tuning a transformers Llama (`self.model`): the checkpoint nests the model under its
    section and the module's attribute (`state_dict.model.model.layers.0...`); the family is found under that prefix
    (it was checked module by module), the layer rows are the model's own and every weight has its role."""
    torch = pytest.importorskip("torch")
    lightning = pytest.importorskip("lightning")
    llama = _tiny_llama()

    class Module(lightning.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.model = llama

        def training_step(self, batch: object, _: int) -> object:
            (ids,) = batch  # type: ignore[misc]
            return self.model(input_ids=ids, labels=ids).loss

        def configure_optimizers(self) -> object:
            return torch.optim.AdamW(self.parameters())

    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randint(0, 128, (4, 8))), 2)
    trainer = lightning.Trainer(
        max_steps=1, default_root_dir=tmp_path, logger=False, enable_progress_bar=False, enable_model_summary=False
    )
    trainer.fit(Module(), data)
    (path,) = tmp_path.rglob("*.ckpt")
    report = inspect(path)
    assert report.checkpoint.n_parameters == llama.num_parameters()  # type: ignore[attr-defined]
    values = report.checkpoint.attributes
    assert (values["checkpoint.epoch"], values["checkpoint.global_step"]) == ("0", "1")
    assert values["checkpoint.pytorch-lightning_version"] == lightning.__version__
    exp = report.expectation
    assert exp is not None and exp.architecture == "llama" and exp.source == "inferred" and exp.matches
    assert {c.layer for c in exp.layers} >= {"state_dict.model.model.layers.0", "state_dict.model.lm_head"}
    roles = {r.name: r.role for r in report.roles}
    assert roles["state_dict.model.model.layers.1.self_attn.q_proj.weight"] == "attention_query"
    assert not [f for f in report.findings if f.severity != "info"]


def test_an_accelerate_saved_state(tmp_path: Path) -> None:
    """accelerate's `save_state`: the model, the optimizer's state_dict (`optimizer.bin`), the scheduler and the
    random states (`random_states_0.pkl`: Python's, numpy's and torch's)."""
    torch = pytest.importorskip("torch")
    accelerate = pytest.importorskip("accelerate")

    accelerator = accelerate.Accelerator(cpu=True)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 2))
    optimizer = torch.optim.AdamW(model.parameters())
    model, optimizer = accelerator.prepare(model, optimizer)
    accelerator.backward(model(torch.randn(4, 4)).sum())
    optimizer.step()
    accelerator.save_state(str(tmp_path))
    state = optimizer.state_dict()["state"]
    optimizer_elements = sum(v.numel() for slot in state.values() for v in slot.values() if torch.is_tensor(v))
    saved = inspect(tmp_path / "optimizer.bin").checkpoint
    assert saved.n_parameters == 0
    assert sum(t.n_elements for t in saved.unique(TensorKind.OPTIMIZER)) == optimizer_elements
    rng = inspect(tmp_path / "random_states_0.pkl").checkpoint
    assert rng.n_parameters == 0 and {t.kind for t in rng.tensors} == {TensorKind.OTHER}
    assert inspect(tmp_path / "model.safetensors").checkpoint.n_parameters == sum(p.numel() for p in model.parameters())


def test_a_latent_diffusion_checkpoint_with_its_ema(tmp_path: Path) -> None:
    """Stable Diffusion 1.x/2.x checkpoints (CompVis' latent diffusion) keep the EMA of the denoiser's weights in
    `model_ema`, a LitEma: one registered buffer per trained weight, named without its dots, and `decay` and
    `num_updates`. LitEma below is latent diffusion's own (`ldm/modules/ema.py` of CompVis/stable-diffusion at
    21f890f, not on PyPI: its constructor as written there); the file is the Lightning module's state dict as
    `ModelCheckpoint` writes it. The count is torch's `parameters()`: the EMA copies are buffers, not a second model."""
    torch = pytest.importorskip("torch")
    from torch import nn

    class LitEma(nn.Module):  # (ldm/modules/ema.py, CompVis/stable-diffusion 21f890f, its constructor)
        def __init__(self, model: nn.Module, decay: float = 0.9999, use_num_upates: bool = True) -> None:
            super().__init__()
            if decay < 0.0 or decay > 1.0:
                raise ValueError("Decay must be between 0 and 1")

            self.m_name2s_name = {}
            self.register_buffer("decay", torch.tensor(decay, dtype=torch.float32))
            self.register_buffer(
                "num_updates", torch.tensor(0, dtype=torch.int) if use_num_upates else torch.tensor(-1, dtype=torch.int)
            )

            for name, p in model.named_parameters():
                if p.requires_grad:
                    # remove as '.'-character is not allowed in buffers
                    s_name = name.replace(".", "")
                    self.m_name2s_name.update({name: s_name})
                    self.register_buffer(s_name, p.clone().detach().data)

    class DiffusionWrapper(nn.Module):  # (ldm/models/diffusion/ddpm.py: the denoiser under `diffusion_model`)
        def __init__(self) -> None:
            super().__init__()
            self.diffusion_model = nn.Sequential(nn.Conv2d(4, 8, 3), nn.GroupNorm(2, 8), nn.Conv2d(8, 4, 3))

    class LatentDiffusion(nn.Module):  # (its modules as ddpm.py names them; the autoencoder frozen, still counted)
        def __init__(self) -> None:
            super().__init__()
            self.model = DiffusionWrapper()
            self.model_ema = LitEma(self.model)
            self.first_stage_model = nn.Conv2d(3, 4, 1).requires_grad_(False)

    torch.manual_seed(0)
    model = LatentDiffusion()
    path = tmp_path / "sd.ckpt"
    torch.save({"state_dict": model.state_dict(), "global_step": 0, "epoch": 0}, path)
    ckpt = inspect(path).checkpoint
    assert ckpt.n_parameters == sum(p.numel() for p in model.parameters())
    buffers = {f"state_dict.{n}" for n, _ in model.named_buffers()}
    assert len(buffers) == 2 + len(list(model.model.parameters()))
    assert {t.name for t in ckpt.tensors if t.kind is TensorKind.BUFFER} == buffers
