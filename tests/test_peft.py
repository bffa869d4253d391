"""PEFT LoRA adapters written by peft in tmp_path: roles, one LoRA module per adapted module, the config's check.

Each adapter is `get_peft_model` over a test-sized llama built from its config (random weights, nothing downloaded),
written by `save_pretrained` (adapter_model.safetensors beside adapter_config.json). The references are peft's:
`get_nb_trainable_parameters()` for the count, each LoRA layer's own `r` for the rank of each module.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from inspector.report import Report, inspect

peft = pytest.importorskip("peft")
transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

LLAMA = {
    "vocab_size": 128, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2,
}  # fmt: skip
ADAPTERS: dict[str, dict[str, Any]] = {
    "q_v": {"r": 4, "target_modules": ["q_proj", "v_proj"]},
    "all_linear": {"r": 8, "lora_alpha": 16, "target_modules": "all-linear"},
    "modules_to_save": {"r": 4, "target_modules": ["q_proj", "v_proj"], "modules_to_save": ["lm_head"]},
    "embedding": {"r": 4, "target_modules": ["embed_tokens", "q_proj"]},
    "dora": {"r": 4, "target_modules": ["q_proj", "v_proj"], "use_dora": True},
    "lora_bias": {"r": 2, "target_modules": ["o_proj", "up_proj"], "lora_bias": True},
    "patterns": {
        "r": 4, "target_modules": ["q_proj", "v_proj", "down_proj"],
        "rank_pattern": {"v_proj": 2, "layers.1.self_attn.q_proj": 6}, "alpha_pattern": {"down_proj": 32},
    },
}  # fmt: skip
SECOND = "layers.1.self_attn.q_proj"
FACTORS = {"lora_A", "lora_B", "lora_embedding_A", "lora_embedding_B", "lora_magnitude_vector", "lora_bias"}


def _adapter(tmp_path: Path, config: dict[str, Any], **save: Any) -> tuple[Any, Path]:
    torch.manual_seed(0)
    base = transformers.AutoModelForCausalLM.from_config(transformers.LlamaConfig(**LLAMA))
    with warnings.catch_warnings():  # peft's advice on the configuration (lora_bias without a bias, embeddings saved)
        warnings.simplefilter("ignore", UserWarning)
        model = peft.get_peft_model(base, peft.LoraConfig(**config))
        model.save_pretrained(tmp_path, **save)
    return model, tmp_path / "adapter_model.safetensors"


def _ranks(model: Any) -> dict[str, int]:
    """peft's own rank of each adapted module, by its name in the saved file."""
    return {
        name: module.r["default"]
        for name, module in model.named_modules()
        if isinstance(module, peft.tuners.lora.LoraLayer) and "default" in module.r
    }


def _warnings(report: Report) -> list[str]:
    return [f"{f.code}: {f.message}" for f in report.findings if f.severity != "info"]


@pytest.mark.parametrize("variant", ADAPTERS)
def test_adapter_counts_roles_and_ranks_as_peft_has_them(tmp_path: Path, variant: str) -> None:
    model, path = _adapter(tmp_path, ADAPTERS[variant], save_embedding_layers=False)
    report = inspect(path)
    trainable, _ = model.get_nb_trainable_parameters()
    assert report.checkpoint.n_parameters == trainable
    assert _warnings(report) == []
    exp = report.expectation
    assert exp is not None and (exp.architecture, exp.source) == ("lora-adapter", "config")
    assert exp.total == exp.found == trainable
    ranks = _ranks(model)
    assert ranks
    lora_layers = {c.layer: c for c in exp.layers if c.kind.startswith("LoRA")}
    assert {name: int(c.kind.removeprefix("LoRA r=")) for name, c in lora_layers.items()} == ranks
    assert all(c.status == "ok" for c in exp.layers)
    for r in report.roles:
        if r.role == "lora_factor":
            assert r.layer in ranks and r.param in FACTORS and r.name.startswith(r.layer + ".")
        else:  # modules_to_save copies keep their own role and kind
            assert variant == "modules_to_save" and r.role == "output_head"
    assert exp.hyperparameters["r"] == ADAPTERS[variant]["r"]


def test_modules_to_save_copy_stays_what_it_is(tmp_path: Path) -> None:
    _, path = _adapter(tmp_path, ADAPTERS["modules_to_save"])
    exp = inspect(path).expectation
    assert exp is not None
    head = {c.layer: c for c in exp.layers}["base_model.model.lm_head"]
    assert (head.kind, head.found, head.status) == ("Dense", 128 * 32, "ok")
    assert exp.hyperparameters["modules_to_save"] == "lm_head"


def test_embedding_base_layer_peft_saves_beside_the_adapter(tmp_path: Path) -> None:
    """peft's default for an adapted embedding saves the base embedding too: counted, named, no warning."""
    model, path = _adapter(tmp_path, ADAPTERS["embedding"])
    report = inspect(path)
    trainable, _ = model.get_nb_trainable_parameters()
    assert report.checkpoint.n_parameters == trainable + LLAMA["vocab_size"] * LLAMA["hidden_size"]
    assert _warnings(report) == []
    base = "base_model.model.model.embed_tokens.base_layer"
    assert {r.role for r in report.roles if r.layer == base} == {"embedding"}
    exp = report.expectation
    assert exp is not None and any(note.startswith(base) for note in exp.notes)
    layers = {c.layer: c for c in exp.layers}
    assert layers["base_model.model.model.embed_tokens"].kind == "LoRA r=4"
    assert layers["base_model.model.model.embed_tokens"].found == 4 * (LLAMA["vocab_size"] + LLAMA["hidden_size"])


def _edit_config(folder: Path, **changes: Any) -> None:
    path = folder / "adapter_config.json"
    config = json.loads(path.read_text())
    path.write_text(json.dumps(config | changes))


def test_a_rank_other_than_the_config_states_is_a_count_mismatch(tmp_path: Path) -> None:
    model, path = _adapter(tmp_path, ADAPTERS["patterns"])
    _edit_config(tmp_path, r=8)  # v_proj and layers.1's q_proj keep their rank_pattern entries
    report = inspect(path)
    assert [f.code for f in report.findings if f.severity == "warning"] == ["COUNT_MISMATCH"]
    exp = report.expectation
    assert exp is not None
    wrong = {c.layer: c for c in exp.layers if c.status == "mismatch"}
    assert set(wrong) == {name for name, rank in _ranks(model).items() if rank == 4}
    for check in wrong.values():
        assert check.kind == "LoRA r=8" and check.found * 2 == check.expected
        said = "LoRA factors of rank 4 in the file, the adapter config states 8 for this module (its r)"
        assert check.explanation == said
    assert exp.anomalies == tuple(wrong)


def test_dora_magnitude_the_config_asks_for_and_the_file_lacks(tmp_path: Path) -> None:
    _, path = _adapter(tmp_path, ADAPTERS["q_v"])
    _edit_config(tmp_path, use_dora=True)
    exp = inspect(path).expectation
    assert exp is not None and exp.anomalies
    q = {c.layer: c for c in exp.layers}["base_model.model.model.layers.0.self_attn.q_proj"]
    assert q.explanation == "lora_magnitude_vector of 32 expected (use_dora is True), none in the file"
    assert q.expected - q.found == LLAMA["hidden_size"]


def test_without_its_config_the_ranks_are_read_off_the_shapes(tmp_path: Path) -> None:
    model, path = _adapter(tmp_path, ADAPTERS["patterns"])
    (tmp_path / "adapter_config.json").unlink()
    report = inspect(path)
    assert _warnings(report) == []
    exp = report.expectation
    assert exp is not None and (exp.architecture, exp.source) == ("lora-adapter", "inferred")
    assert exp.total == exp.found == model.get_nb_trainable_parameters()[0]
    assert exp.hyperparameters["r"] == "2 4 6"
    assert {c.layer: int(c.kind.removeprefix("LoRA r=")) for c in exp.layers} == _ranks(model)


def test_a_regex_rank_pattern_key_is_not_evaluated(tmp_path: Path) -> None:
    """A key with regex syntax could take exponential time: not run, its modules checked against their own rank."""
    _, path = _adapter(tmp_path, ADAPTERS["q_v"])
    _edit_config(tmp_path, rank_pattern={"(a+)+$": 2, "v_proj": 4})
    report = inspect(path)
    assert _warnings(report) == []
    exp = report.expectation
    assert exp is not None and any("not evaluated" in note for note in exp.notes)


def test_an_in_memory_state_dict_keeps_the_adapter_name(tmp_path: Path) -> None:
    """A PeftModel's own state_dict names the adapter ('lora_A.default.weight'): the same modules, each named with
    its adapter ('...q_proj.default')."""
    from safetensors.torch import save_file

    model, _ = _adapter(tmp_path / "saved", ADAPTERS["dora"])
    state = {k: v.contiguous() for k, v in model.state_dict().items() if "lora_" in k}
    assert any(".default." in k for k in state)
    save_file(state, tmp_path / "state.safetensors")
    report = inspect(tmp_path / "state.safetensors")
    exp = report.expectation
    assert exp is not None and exp.architecture == "lora-adapter" and exp.source == "inferred"
    assert exp.found == model.get_nb_trainable_parameters()[0] and not exp.anomalies
    assert {r.role for r in report.roles} == {"lora_factor"}
    assert {c.layer: int(c.kind.removeprefix("LoRA r=")) for c in exp.layers} == {
        f"{name}.default": rank for name, rank in _ranks(model).items()
    }
    assert (exp.hyperparameters["adapters"], exp.hyperparameters["targets"]) == ("default", "q_proj v_proj")


def test_torch_save_adapter_reads_the_same(tmp_path: Path) -> None:
    """save_pretrained(safe_serialization=False): adapter_model.bin, a torch zip, beside the same config."""
    model, _ = _adapter(tmp_path, ADAPTERS["dora"], safe_serialization=False)
    report = inspect(tmp_path / "adapter_model.bin")
    assert report.checkpoint.n_parameters == model.get_nb_trainable_parameters()[0]
    assert _warnings(report) == []
    exp = report.expectation
    assert exp is not None and (exp.architecture, exp.source) == ("lora-adapter", "config")
    assert {c.layer: int(c.kind.removeprefix("LoRA r=")) for c in exp.layers} == _ranks(model)


def test_two_adapters_in_one_state_dict_are_two_lora_layers(tmp_path: Path) -> None:
    """Two adapters' factors of one module ('lora_A.default', 'lora_A.other'): each adapter's factors a LoRA layer of
    their own, at the rank peft gave each; either adapter's own state dict (get_peft_model_state_dict) reads as it."""
    from safetensors.torch import save_file

    model, _ = _adapter(tmp_path / "saved", ADAPTERS["q_v"])
    model.add_adapter("other", peft.LoraConfig(r=2, target_modules=["q_proj"]))
    state = {k: v.contiguous() for k, v in model.state_dict().items() if "lora_" in k}
    save_file(state, tmp_path / "two.safetensors")
    report = inspect(tmp_path / "two.safetensors")
    assert report.checkpoint.n_parameters == sum(v.numel() for v in state.values())
    assert _warnings(report) == []
    exp = report.expectation
    assert exp is not None and exp.architecture == "lora-adapter" and exp.total == exp.found and not exp.anomalies
    ranks = {
        f"{name}.{adapter}": rank
        for name, module in model.named_modules()
        if isinstance(module, peft.tuners.lora.LoraLayer)
        for adapter, rank in module.r.items()
    }
    assert {c.layer: c.kind for c in exp.layers} == {name: f"LoRA r={rank}" for name, rank in ranks.items()}
    assert len(ranks) == 6 and exp.hyperparameters["adapters"] == "default other"
    for adapter, count in (("default", 4 * 4 * (32 + 32) // 2 + 4 * 2 * (32 + 16)), ("other", 2 * 2 * (32 + 32))):
        own = peft.get_peft_model_state_dict(model, adapter_name=adapter)
        save_file({k: v.contiguous() for k, v in own.items()}, tmp_path / f"{adapter}.safetensors")
        alone = inspect(tmp_path / f"{adapter}.safetensors")
        assert alone.checkpoint.n_parameters == sum(v.numel() for v in own.values()) == count
        assert _warnings(alone) == [] and alone.expectation is not None and not alone.expectation.anomalies


def test_rank_pattern_order_peft_saves_is_the_order_it_loads_by(tmp_path: Path) -> None:
    """peft matches rank_pattern keys first-come; save_pretrained writes them sorted. {'q_proj': 2,
    'layers.1.self_attn.q_proj': 6} gives layers.1 rank 2 when built and 6 when loaded: the inspector reads the saved
    order and warns of the module whose rank peft's own loader refuses."""
    _, path = _adapter(tmp_path, {"r": 4, "target_modules": ["q_proj"], "rank_pattern": {"q_proj": 2, SECOND: 6}})
    assert list(json.loads((tmp_path / "adapter_config.json").read_text())["rank_pattern"]) == [SECOND, "q_proj"]
    base = transformers.AutoModelForCausalLM.from_config(transformers.LlamaConfig(**LLAMA))
    with pytest.raises(RuntimeError, match="size mismatch for base_model.model.model.layers.1.self_attn.q_proj"):
        peft.PeftModel.from_pretrained(base, tmp_path)
    exp = inspect(path).expectation
    assert exp is not None and exp.anomalies == ("base_model.model.model.layers.1.self_attn.q_proj",)
    assert exp.layers[1].explanation == (
        f"LoRA factors of rank 2 in the file, the adapter config states 6 for this module (its rank_pattern {SECOND!r})"
    )


def test_rank_pattern_of_many_keys_is_shown_bounded(tmp_path: Path) -> None:
    _, path = _adapter(tmp_path, ADAPTERS["q_v"])
    many = {f"layers.{i}.mlp.up_proj": 2 for i in range(5000)} | {"(x+)+y": 3}
    targets = [f"m{i}" for i in range(5000)]
    _edit_config(tmp_path, rank_pattern=many, target_modules=targets, base_model_name_or_path="x" * 10_000)
    exp = inspect(path).expectation
    assert exp is not None and not exp.anomalies
    assert exp.hyperparameters["rank_pattern"].endswith(" ... (4,981 more)")
    assert exp.hyperparameters["targets"].endswith(" ... (4,980 more)")
    assert exp.hyperparameters["base_model"] == "x" * 120 + "..."


def test_adapter_config_wins_over_the_base_models_config_json_beside_it(tmp_path: Path) -> None:
    """Some repositories keep the base model's config.json beside the adapter: the adapter's own config is read."""
    model, path = _adapter(tmp_path, ADAPTERS["patterns"])
    transformers.LlamaConfig(**LLAMA).save_pretrained(tmp_path)
    assert (tmp_path / "config.json").exists()
    report = inspect(path)
    assert _warnings(report) == []
    exp = report.expectation
    assert exp is not None and (exp.architecture, exp.source) == ("lora-adapter", "config")
    assert {c.layer: int(c.kind.removeprefix("LoRA r=")) for c in exp.layers} == _ranks(model)


# peft's other adapter types, each over the same llama (q_proj and v_proj unless said)
QV = ["q_proj", "v_proj"]
OTHER_TYPES: dict[str, tuple[str, dict[str, Any]]] = {
    "loha": ("LoHaConfig", {"r": 4, "target_modules": QV}),
    "lokr": ("LoKrConfig", {"r": 2, "target_modules": QV, "decompose_both": True, "decompose_factor": 4}),
    "ia3": ("IA3Config", {"target_modules": ["k_proj", "v_proj", "down_proj"], "feedforward_modules": ["down_proj"]}),
    "oft": ("OFTConfig", {"r": 0, "oft_block_size": 8, "target_modules": QV}),
    "boft": ("BOFTConfig", {"boft_block_size": 4, "target_modules": QV}),
    "vera": ("VeraConfig", {"r": 4, "target_modules": QV}),
    "randlora": ("RandLoraConfig", {"r": 4, "target_modules": QV}),
    "hra": ("HRAConfig", {"r": 4, "target_modules": QV}),
    "fourierft": ("FourierFTConfig", {"n_frequency": 10, "target_modules": QV}),
    "vblora": ("VBLoRAConfig", {"r": 4, "target_modules": QV, "vector_length": 8, "num_vectors": 16}),
    "pvera": ("PveraConfig", {"r": 4, "target_modules": QV}),
    "shira": ("ShiraConfig", {"r": 4, "target_modules": QV}),  # (its saved indices: data, not parameters)
    "delora": ("DeloraConfig", {"r": 4, "target_modules": QV}),
    "c3a": ("C3AConfig", {"block_size": 8, "target_modules": QV}),
    "miss": ("MissConfig", {"r": 4, "target_modules": QV}),
    "waveft": ("WaveFTConfig", {"n_frequency": 16, "target_modules": QV}),
    "gralora": ("GraloraConfig", {"r": 8, "target_modules": QV}),
}  # fmt: skip


SHARED_FACTORS = {"vblora_vector_bank"}  # one parameter all modules share (saved as 'base_model.vblora_vector_bank')


def _peft_model(config: Any) -> Any:
    torch.manual_seed(0)
    base = transformers.AutoModelForCausalLM.from_config(transformers.LlamaConfig(**LLAMA))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return peft.get_peft_model(base, config)


def _saved(folder: Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    return load_file(folder / "adapter_model.safetensors")


@pytest.mark.parametrize("variant", OTHER_TYPES)
def test_other_adapter_types_count_as_peft_trains_them(tmp_path: Path, variant: str) -> None:
    """No false warning, no unmatched tensor, the count peft's get_nb_trainable_parameters() prints, each factor's
    layer the module peft adapts, and what peft keeps as buffers (VeRA's, RandLoRA's shared projections) buffers."""
    cls, kwargs = OTHER_TYPES[variant]
    model = _peft_model(getattr(peft, cls)(**kwargs))
    model.save_pretrained(tmp_path)
    report = inspect(tmp_path / "adapter_model.safetensors")
    trainable, _ = model.get_nb_trainable_parameters()
    assert report.checkpoint.n_parameters == trainable
    assert _warnings(report) == []
    saved = _saved(tmp_path)
    peft_buffers = {name.replace(".default", "") for name, _ in model.named_buffers(remove_duplicate=False)}
    assert {t.name for t in report.checkpoint.tensors if t.kind == "buffer"} == saved.keys() & peft_buffers
    adapted = {n for n, m in model.named_modules() if isinstance(m, peft.tuners.tuners_utils.BaseTunerLayer)}
    factors = [r for r in report.roles if r.role == "adapter_factor" and r.param not in SHARED_FACTORS]
    assert factors and {r.layer for r in factors} == adapted
    assert all(r.role in ("adapter_factor", "buffer") for r in report.roles)
    exp = report.expectation
    assert exp is not None and (exp.architecture, exp.source) == ("peft-adapter", "config")
    assert exp.total == exp.found == trainable and not exp.anomalies
    assert exp.hyperparameters["peft_type"] == model.peft_config["default"].peft_type.value
    (tmp_path / "adapter_model.safetensors").rename(tmp_path / f"{variant}.safetensors")  # named as a user names it
    renamed = inspect(tmp_path / f"{variant}.safetensors").expectation  # its PeftModel names: the config beside it
    assert renamed is not None and (renamed.source, renamed.layers) == ("config", exp.layers)


def test_adalora_modules_at_the_ranks_its_rank_pattern_keeps(tmp_path: Path) -> None:
    """AdaLoRA saves each module at the rank its rank_pattern mask keeps (init_r where it has none): LoRA modules
    with singular values (lora_E), each at the rank peft's own loader gives it, counted as peft counts them."""
    model = _peft_model(peft.AdaLoraConfig(init_r=4, target_r=2, target_modules=QV, total_step=10))
    masks = {f"model.layers.{i}.self_attn.q_proj.lora_E.default": [True, False, i == 1, False] for i in range(2)}
    model.peft_config["default"].rank_pattern = masks
    model.save_pretrained(tmp_path)
    base = transformers.AutoModelForCausalLM.from_config(transformers.LlamaConfig(**LLAMA))
    with warnings.catch_warnings():  # peft also reads AdaLoRA's masks as LoRA's rank_pattern, and says they match none
        warnings.simplefilter("ignore", RuntimeWarning)
        loaded = peft.PeftModel.from_pretrained(base, tmp_path, is_trainable=True)
    report = inspect(tmp_path / "adapter_model.safetensors")
    assert report.checkpoint.n_parameters == loaded.get_nb_trainable_parameters()[0]
    assert _warnings(report) == []
    exp = report.expectation
    assert exp is not None and (exp.architecture, exp.source) == ("lora-adapter", "config")
    assert {c.layer: c.kind for c in exp.layers} == {n: f"AdaLoRA r={r}" for n, r in _ranks(loaded).items()}
    assert sorted(_ranks(loaded).values()) == [1, 2, 4, 4] and exp.hyperparameters["r"] == 4
    _edit_config(tmp_path, init_r=8)  # the modules its rank_pattern does not name: rank 4 in the file
    exp = inspect(tmp_path / "adapter_model.safetensors").expectation
    assert exp is not None and set(exp.anomalies) == {n for n, r in _ranks(loaded).items() if r == 4}
    said = "AdaLoRA factors of rank 4 in the file, the adapter config states 8 for this module (its init_r)"
    assert {c.explanation for c in exp.layers if c.status == "mismatch"} == {said}


def test_adapter_state_dicts_keep_their_buffers_out_of_the_count(tmp_path: Path) -> None:
    """A PeftModel's own state dict: AdaLoRA's ranknum (a frozen constant peft never saves) and VeRA's per-module
    projections are buffers; the count is what peft trains."""
    for config, words in (
        (peft.AdaLoraConfig(init_r=4, target_r=2, target_modules=QV, total_step=10), ("lora_", "ranknum")),
        (peft.VeraConfig(r=4, target_modules=QV), ("vera_",)),
    ):
        model = _peft_model(config)
        state = {k: v for k, v in model.state_dict().items() if any(w in k for w in words)}
        torch.save(state, tmp_path / "state.pt")  # (VeRA's modules share their projections: one storage)
        report = inspect(tmp_path / "state.pt")
        assert report.checkpoint.n_parameters == model.get_nb_trainable_parameters()[0]
        trained = {name for name, p in model.named_parameters() if p.requires_grad}
        assert {t.name for t in report.checkpoint.tensors if t.kind == "parameter"} == trained
        assert _warnings(report) == [] and {r.role for r in report.roles} <= {"lora_factor", "adapter_factor", "buffer"}


PROMPT_TYPES: dict[str, tuple[str, dict[str, Any]]] = {
    "prompt_tuning": ("PromptTuningConfig", {}),
    "prefix_tuning": ("PrefixTuningConfig", {}),
    "p_tuning": ("PromptEncoderConfig", {"encoder_hidden_size": 16}),
}


@pytest.mark.parametrize("variant", PROMPT_TYPES)
def test_prompt_learning_table_as_its_config_states(tmp_path: Path, variant: str) -> None:
    """Prompt learning saves its virtual tokens' table ('prompt_embeddings'), checked against the config's
    num_virtual_tokens x token_dim (prefix tuning: x 2 x num_layers). P-tuning trains a prompt encoder and saves only
    its output: the file holds fewer parameters than peft trains, and a note says why."""
    cls, kwargs = PROMPT_TYPES[variant]
    model = _peft_model(getattr(peft, cls)(task_type="CAUSAL_LM", num_virtual_tokens=5, **kwargs))
    model.save_pretrained(tmp_path)
    report = inspect(tmp_path / "adapter_model.safetensors")
    saved = _saved(tmp_path)
    assert report.checkpoint.n_parameters == sum(v.numel() for v in saved.values())
    trainable = model.get_nb_trainable_parameters()[0]
    assert (report.checkpoint.n_parameters == trainable) is (variant != "p_tuning")
    assert _warnings(report) == []
    exp = report.expectation
    assert exp is not None and (exp.architecture, exp.source) == ("peft-adapter", "config") and not exp.anomalies
    assert [(c.layer, c.kind, c.found) for c in exp.layers] == [
        ("prompt_embeddings", "Embedding", saved["prompt_embeddings"].numel())
    ]
    assert any("prompt encoder" in n for n in exp.notes) is (variant == "p_tuning")
    _edit_config(tmp_path, num_virtual_tokens=6)
    exp = inspect(tmp_path / "adapter_model.safetensors").expectation
    assert exp is not None and exp.anomalies == ("prompt_embeddings",)


def test_loha_of_convolutions_with_tucker_cores(tmp_path: Path) -> None:
    """peft's LoHa of a convolution with `use_effective_conv2d` holds Tucker cores (hada_t1, hada_t2: r x r x kernel)
    beside factors of r x out and r x in: one LoHa spec of the core's kernel, the count peft's."""

    class Convs(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = torch.nn.Conv2d(4, 8, 3)
            self.conv2 = torch.nn.Conv2d(8, 6, (5, 3))

        def forward(self, x: Any) -> Any:
            return self.conv2(self.conv1(x))

    torch.manual_seed(0)
    config = peft.LoHaConfig(r=3, target_modules=["conv1", "conv2"], use_effective_conv2d=True)
    model = peft.get_peft_model(Convs(), config)
    model.save_pretrained(tmp_path)
    report = inspect(tmp_path / "adapter_model.safetensors")
    assert (
        report.checkpoint.n_parameters
        == model.get_nb_trainable_parameters()[0]
        == 2 * (9 * 9 + 3 * 12) + 2 * (9 * 15 + 3 * 14)
    )
    assert _warnings(report) == []
    exp = report.expectation
    assert exp is not None and not exp.anomalies and exp.total == exp.found
    assert sorted(c.kind for c in exp.layers) == ["LoHa r=3 Tucker 3x3", "LoHa r=3 Tucker 5x3"]
    _edit_config(tmp_path, r=2)  # a rank other than the file's: a mismatch
    exp = inspect(tmp_path / "adapter_model.safetensors").expectation
    assert exp is not None and len(exp.anomalies) == 2


def test_loha_modules_at_the_ranks_its_config_states(tmp_path: Path) -> None:
    """LoHa's modules (hada_w1_a/b, hada_w2_a/b: 2 r (in + out)) at the rank peft gave each (r, rank_pattern), and
    a rank other than the config states is a mismatch."""
    model = _peft_model(peft.LoHaConfig(r=4, target_modules=QV, rank_pattern={"v_proj": 2}))
    model.save_pretrained(tmp_path)
    ranks = {name: m.r["default"] for name, m in model.named_modules() if isinstance(m, peft.tuners.loha.LoHaLayer)}
    report = inspect(tmp_path / "adapter_model.safetensors")
    assert report.checkpoint.n_parameters == model.get_nb_trainable_parameters()[0]
    assert _warnings(report) == []
    exp = report.expectation
    assert exp is not None and not exp.anomalies and exp.total == exp.found
    assert {c.layer: c.kind for c in exp.layers} == {name: f"LoHa r={r}" for name, r in ranks.items()}
    assert sorted(ranks.values()) == [2, 2, 4, 4] and exp.hyperparameters["rank_pattern"] == "v_proj:2"
    _edit_config(tmp_path, r=8)
    exp = inspect(tmp_path / "adapter_model.safetensors").expectation
    assert exp is not None and set(exp.anomalies) == {name for name, r in ranks.items() if r == 4}
    assert all(c.expected == 2 * c.found for c in exp.layers if c.status == "mismatch")
    _edit_config(tmp_path, r=4, rank_pattern={"(a+)+$": 2, "v_proj": 2})  # a regex key: not run, a note says so
    report = inspect(tmp_path / "adapter_model.safetensors")
    assert _warnings(report) == [] and report.expectation is not None
    assert any("not evaluated" in note for note in report.expectation.notes)


def _lokr_layers(model: Any) -> dict[str, Any]:
    return {name: m for name, m in model.named_modules() if isinstance(m, peft.tuners.lokr.LoKrLayer)}


def _lokr_kind(layer: Any) -> str:
    """A peft LoKr layer's kind from its own factors: its rank where it split one (`r`), its first factor's size."""
    names = {name for name in layer.adapter_layer_names if "default" in getattr(layer, name)}

    def shape(name: str) -> tuple[int, ...]:
        return tuple(getattr(layer, name)["default"].shape)

    w1 = shape("lokr_w1") if "lokr_w1" in names else (shape("lokr_w1_a")[0], shape("lokr_w1_b")[1])
    rank = "" if {"lokr_w1", "lokr_w2"} <= names else f" r={layer.r['default']}"
    core = f" Tucker {'x'.join(map(str, shape('lokr_t2')[2:]))}" if "lokr_t2" in names else ""
    return f"LoKr{rank} f={w1[0] if w1[0] == w1[1] else f'{w1[0]}x{w1[1]}'}{core}"


@pytest.mark.parametrize(
    "words",
    [
        {"r": 2, "target_modules": "all-linear"},
        {"r": 1, "target_modules": QV, "decompose_both": True},  # (both factors split)
        {"r": 4, "target_modules": QV, "rank_pattern": {"v_proj": 2}},  # (q_proj's factors whole: no rank)
    ],
)
def test_lokr_modules_at_the_ranks_its_config_states(tmp_path: Path, words: dict[str, Any]) -> None:
    """LoKr's modules (lokr_w1 or lokr_w1_a/b, lokr_w2 or lokr_w2_a/b: a Kronecker product of two factors, each whole
    or split at rank r) are LoKr specs whose formula gives each module's own parameters, at the rank peft gave it
    (r, rank_pattern) where it split a factor; a rank other than the config states is a mismatch of those modules."""
    model = _peft_model(peft.LoKrConfig(**words))
    model.save_pretrained(tmp_path)
    layers = _lokr_layers(model)
    report = inspect(tmp_path / "adapter_model.safetensors")
    assert report.checkpoint.n_parameters == model.get_nb_trainable_parameters()[0]
    assert _warnings(report) == []
    exp = report.expectation
    assert exp is not None and not exp.anomalies and exp.total == exp.found
    rows = {c.layer: c for c in exp.layers}
    assert {name: (c.kind, c.expected) for name, c in rows.items()} == {
        name: (_lokr_kind(layer), sum(p.numel() for p in layer.parameters() if p.requires_grad))
        for name, layer in layers.items()
    }
    _edit_config(tmp_path, r=3, rank_pattern={})
    exp = inspect(tmp_path / "adapter_model.safetensors").expectation
    assert exp is not None and set(exp.anomalies) == {n for n, c in rows.items() if " r=" in c.kind}
    assert exp.anomalies


def test_lokr_of_convolutions_with_tucker_cores(tmp_path: Path) -> None:
    """peft's LoKr of a convolution: its second factor split (lokr_w2_b r x in x kernel) or, with
    `use_effective_conv2d`, split around a Tucker core (lokr_t2 r x r x kernel): one LoKr spec each, the count
    peft's."""

    class Convs(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = torch.nn.Conv2d(16, 32, 3)
            self.conv2 = torch.nn.Conv2d(32, 16, (5, 3))

        def forward(self, x: Any) -> Any:
            return self.conv2(self.conv1(x))

    for effective in (False, True):
        torch.manual_seed(0)
        config = peft.LoKrConfig(r=2, target_modules=["conv1", "conv2"], use_effective_conv2d=effective)
        model = peft.get_peft_model(Convs(), config)
        model.save_pretrained(tmp_path)
        report = inspect(tmp_path / "adapter_model.safetensors")
        assert report.checkpoint.n_parameters == model.get_nb_trainable_parameters()[0]
        assert _warnings(report) == []
        exp = report.expectation
        assert exp is not None and not exp.anomalies and exp.total == exp.found
        assert {c.layer: c.kind for c in exp.layers} == {n: _lokr_kind(m) for n, m in _lokr_layers(model).items()}
        assert any("Tucker" in c.kind for c in exp.layers) is effective


def test_lokr_factors_of_two_ranks_are_no_lokr_module(tmp_path: Path) -> None:
    """A module whose split LoKr factors disagree on the rank (lokr_w2_b rewritten at another) fits no LoKr layout: it
    is counted as the tensors it holds, the other modules as LoKr's, no warning."""
    from safetensors.torch import save_file

    model = _peft_model(peft.LoKrConfig(r=2, target_modules=QV))
    model.save_pretrained(tmp_path)
    saved = _saved(tmp_path)
    edited = next(name for name in saved if name.endswith("layers.0.self_attn.v_proj.lokr_w2_b"))
    saved[edited] = torch.zeros(3, saved[edited].shape[1])
    save_file(saved, tmp_path / "adapter_model.safetensors")
    report = inspect(tmp_path / "adapter_model.safetensors")
    assert _warnings(report) == []
    exp = report.expectation
    assert exp is not None and exp.total == exp.found == report.checkpoint.n_parameters
    kinds = {c.layer.rpartition("layers.")[2]: c.kind for c in exp.layers}
    assert kinds.pop("0.self_attn.v_proj") == "Tensors" and set(kinds.values()) == {"LoKr r=2 f=4"}


RANKED_TYPES = {  # peft types whose modules have a rank the config states: r and rank_pattern, as peft saves them
    "lora": peft.LoraConfig(r=4, target_modules=QV, rank_pattern={"v_proj": 2}, alpha_pattern={"v_proj": 8}),
    "loha": peft.LoHaConfig(r=4, target_modules=QV, rank_pattern={"v_proj": 2}, alpha_pattern={"v_proj": 8}),
    "lokr": peft.LoKrConfig(r=2, target_modules=QV, decompose_both=True, rank_pattern={"v_proj": 1}),
}
TAMPERED = "base_model.model.model.layers.1.self_attn.v_proj"


@pytest.mark.parametrize("variant", RANKED_TYPES)
def test_a_module_at_another_rank_than_its_config_states_is_named_with_the_ranks_and_their_source(
    tmp_path: Path, variant: str
) -> None:
    """LoRA, LoHa and LoKr modules alike: a module whose factors hold another rank than the adapter config states for
    it is a mismatch of that module, explained with the rank in the file (peft's own `r` of the layer), the config's,
    and where the config states it (its `r`, the rank_pattern key naming the module)."""
    model = _peft_model(RANKED_TYPES[variant])
    model.save_pretrained(tmp_path)
    ranks = {n: m.r["default"] for n, m in model.named_modules() if "default" in getattr(m, "r", {})}
    assert len(set(ranks.values())) == 2  # (r and rank_pattern's both in the file)
    path = tmp_path / "adapter_model.safetensors"
    assert _warnings(inspect(path)) == []
    saved = json.loads((tmp_path / "adapter_config.json").read_text())["rank_pattern"]
    # a key before v_proj's naming one module, peft's first-come order: that module alone is stated at another rank
    _edit_config(tmp_path, rank_pattern={"layers.1.self_attn.v_proj": ranks[TAMPERED] + 1} | saved)
    report = inspect(path)
    assert [f.code for f in report.findings if f.severity == "warning"] == ["COUNT_MISMATCH"]
    exp = report.expectation
    assert exp is not None and exp.anomalies == (TAMPERED,)
    kind = {"lora": "LoRA", "loha": "LoHa", "lokr": "LoKr"}[variant]
    (check,) = (c for c in exp.layers if c.status == "mismatch")
    assert check.explanation == (
        f"{kind} factors of rank {ranks[TAMPERED]} in the file, the adapter config states {ranks[TAMPERED] + 1} for "
        "this module (its rank_pattern 'layers.1.self_attn.v_proj')"
    )
    r = json.loads((tmp_path / "adapter_config.json").read_text())["r"]
    _edit_config(tmp_path, r=r + 5, rank_pattern=saved)  # the modules no key names: at `r`
    exp = inspect(path).expectation
    assert exp is not None and set(exp.anomalies) == {n for n in ranks if not n.endswith("v_proj")}
    assert {c.explanation for c in exp.layers if c.status == "mismatch"} == {
        f"{kind} factors of rank {r} in the file, the adapter config states {r + 5} for this module (its r)"
    }
