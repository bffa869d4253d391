"""Architecture inference and the per-layer check, on files written by the real libraries."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from inspector import load
from inspector.architectures import parse_spec
from inspector.infer import expect
from inspector.records import Checkpoint, TensorInfo
from inspector.report import inspect
from inspector.roles import match_roles
from tests.conftest import SAMPLES

HF = SAMPLES / "hf_rau"
MANIFEST = json.loads((HF / "manifest.json").read_text())

FILES = [
    (
        "gpt2-tiny/model.safetensors",
        "gpt2-tiny",
        "gpt2",
        "config",
        {"vocab": 256, "positions": 64, "d_model": 32, "layers": 2},
    ),
    (
        "bert-tiny/model.safetensors",
        "bert-tiny",
        "bert",
        "config",
        {"vocab": 256, "d_model": 32, "layers": 2, "feedforward": 64},
    ),
    ("bert-tiny-sharded/model.safetensors.index.json", "bert-tiny-sharded", "bert", "config", {"layers": 2}),
    (
        "rau-lstm-lm.safetensors",
        "rau-lstm-lm.safetensors",
        "rau-lstm-lm",
        "inferred",
        {"vocab": 64, "hidden": 32, "layers": 3},
    ),
    (
        "rau-transformer-lm.safetensors",
        "rau-transformer-lm.safetensors",
        "rau-transformer-lm",
        "inferred",
        {"vocab": 64, "d_model": 32, "layers": 2, "feedforward": 64},
    ),
]


@pytest.mark.parametrize(("path", "key", "arch", "source", "hyper"), FILES, ids=[f[0] for f in FILES])
def test_inferred_architecture_matches_the_library_count(
    path: str, key: str, arch: str, source: str, hyper: dict
) -> None:  # type: ignore[type-arg]
    report = inspect(HF / path)
    entry = MANIFEST[key]
    assert report.checkpoint.n_parameters == entry["n_parameters"]  # torch's unique parameters()
    exp = report.expectation
    assert exp is not None and exp.source == source and exp.architecture == arch
    assert {k: exp.hyperparameters[k] for k in hyper} == hyper
    assert exp.total == entry["n_parameters"] and exp.matches
    assert all(r.role != "unmatched" for r in report.roles)


def test_tied_embedding_is_counted_once() -> None:
    report = inspect(HF / "rau-lstm-lm.safetensors")
    tied = [t for t in report.checkpoint.tensors if t.alias_of]
    assert [t.name for t in tied] == ["second.func.embeddings"]
    assert "SHARED_STORAGE" in {f.code for f in report.findings}


def test_seed_003_column_cnn_from_positional_names(tmp_path: Path) -> None:
    column = [(32, 1, 3, 3), (32,), (32, 32, 3, 3), (32,), (3872, 256), (256,)]
    np.savez(tmp_path / "alpha.npz", *[np.zeros(s, dtype="float16") for s in column * 3 + [(768, 11), (11,)]])
    report = inspect(tmp_path / "alpha.npz")
    exp = report.expectation
    assert exp is not None and exp.architecture == "column-cnn" and exp.matches
    assert exp.total == 3_011_627
    # the first dense layer's 3,872 inputs imply 11 x 11 x 32 after two conv+pool blocks: a 50 x 50 input
    assert (exp.hyperparameters["height"], exp.hyperparameters["width"]) == (50, 50)
    assert {r.role for r in report.roles} == {"conv", "dense"}


def _ckpt(shapes: dict[str, tuple[int, ...]], framework: str = "mxnet") -> Checkpoint:
    tensors = tuple(TensorInfo(n, s, "F32", 4 * int(np.prod(s)), None) for n, s in shapes.items())
    return Checkpoint("x", "test", framework, (("x", 0),), tensors, ())


def _sockeye_shapes(h: int, e: int, sv: int, tv: int, gates: int) -> dict[str, tuple[int, ...]]:
    """The parameter shapes seed 002 lists for a 2:2-layer model (with `gates` per cell)."""
    g = gates
    shapes = {
        "source_embed_weight": (sv, e),
        "target_embed_weight": (tv, e),
        "target_output_bias": (tv,),
        "target_output_weight": (tv, h),
        "decoder_rnn_hidden_bias": (h,),
        "decoder_rnn_hidden_weight": (h, 2 * h),
    }
    for i in range(4 if g == 4 else 2):
        shapes |= {f"decoder_rnn_enc2decinit_{i}_bias": (h,), f"decoder_rnn_enc2decinit_{i}_weight": (h, h)}
    for i, inputs in ((0, e + h), (1, h)):
        shapes |= {
            f"decoder_rnn_l{i}_h2h_bias": (g * h,),
            f"decoder_rnn_l{i}_h2h_weight": (g * h, h),
            f"decoder_rnn_l{i}_i2h_bias": (g * h,),
            f"decoder_rnn_l{i}_i2h_weight": (g * h, inputs),
        }
    for d in ("forward", "reverse"):
        shapes |= {
            f"encoder_birnn_{d}_l0_h2h_bias": (g * h // 2,),
            f"encoder_birnn_{d}_l0_h2h_weight": (g * h // 2, h // 2),
            f"encoder_birnn_{d}_l0_i2h_bias": (g * h // 2,),
            f"encoder_birnn_{d}_l0_i2h_weight": (g * h // 2, e),
        }
    shapes |= {
        "encoder_rnn_l0_h2h_bias": (g * h,),
        "encoder_rnn_l0_h2h_weight": (g * h, h),
        "encoder_rnn_l0_i2h_bias": (g * h,),
        "encoder_rnn_l0_i2h_weight": (g * h, h),
    }
    return shapes


def test_seed_002_sockeye_lstm_parameter_list() -> None:
    ckpt = _ckpt(_sockeye_shapes(512, 512, 49410, 42767, 4))
    assert ckpt.n_parameters == 79_638_799  # seed 002, section 2
    exp = expect(ckpt, match_roles(ckpt))
    assert exp is not None and exp.architecture == "sockeye-rnn" and exp.matches
    assert exp.hyperparameters["cell"] == "lstm" and exp.hyperparameters["layers"] == "2:2"


def test_sockeye_gru_cell_from_the_gate_multiple() -> None:
    ckpt = _ckpt(_sockeye_shapes(64, 32, 500, 400, 3))
    exp = expect(ckpt, match_roles(ckpt))
    assert exp is not None and exp.hyperparameters["cell"] == "gru" and exp.matches


def test_stated_architecture_explains_a_missing_bias() -> None:
    ckpt = _ckpt({"dense/kernel:0": (100, 64), "dense_1/kernel:0": (64, 1), "dense_1/bias:0": (1,)}, "keras")
    exp = expect(ckpt, match_roles(ckpt), parse_spec("Input(100) Dense(64) Dense(1)"))
    assert exp is not None and exp.source == "stated" and not exp.matches
    dense = exp.layers[0]
    assert dense.status == "mismatch" and dense.expected == 6464 and dense.found == 6400
    assert dense.explanation == "Dense layer has no bias: 64 expected by the formula, none in the file"


def test_expect_option_on_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    from inspector.cli import main

    path = str(HF / "rau-lstm-lm.safetensors")
    assert main([path, "--json", "--expect", "rau-lstm-lm vocab=64 hidden=32 layers=2"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["expected"]["source"] == "stated" and doc["expected"]["matches"] is False
    assert [row["status"] for row in doc["expected"]["layers"] if row["layer"] == "rnn.l2"] == ["unexpected"]
    assert "COUNT_MISMATCH" in {f["code"] for f in doc["findings"]}


def test_safetensors_loader_agrees_with_the_manifest_state_dict() -> None:
    ckpt = load(HF / "gpt2-tiny" / "model.safetensors")
    stored = {t.name: list(t.shape) for t in ckpt.tensors if t.alias_of is None}
    expected = {k: v for k, v in MANIFEST["gpt2-tiny"]["state_dict"].items() if k != "lm_head.weight"}
    assert stored == expected  # save_pretrained drops the tied lm_head.weight


@pytest.mark.parametrize(
    ("attention", "extra", "count"),
    [
        ("mlp", {"att_e2h_weight": (48, 64), "att_q2h_weight": (48, 64), "att_h2s_weight": (1, 48)}, 6_192),
        ("bilinear", {"att_s2t_weight": (64, 64)}, 4_096),
        ("location", {"att_loc_weight": (30, 64), "att_loc_bias": (30,)}, 1_950),
    ],
)
def test_sockeye_attention_type_read_from_the_names(attention: str, extra: dict, count: int) -> None:  # type: ignore[type-arg]
    base = _sockeye_shapes(64, 32, 500, 400, 4)
    ckpt = _ckpt(base | extra)
    exp = expect(ckpt, match_roles(ckpt))
    assert exp is not None and exp.architecture == "sockeye-rnn" and exp.matches
    assert exp.hyperparameters["attention"] == attention
    assert exp.total == _ckpt(base).n_parameters + count
    assert any(f"attention={attention} with {count:,} parameters" in n for n in exp.notes)


def test_sockeye_without_attention_says_what_is_assumed() -> None:
    ckpt = _ckpt(_sockeye_shapes(64, 32, 500, 400, 4))
    exp = expect(ckpt, match_roles(ckpt))
    assert exp is not None and exp.hyperparameters["attention"] == "none"
    assert any("attention=none assumed" in n and "default, mlp" in n for n in exp.notes)


def _rau_stack_rnn_names(reading: int, stack: dict[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
    """A rau stack RNN LM's parameter names and shapes (vocab 10, LSTM controller of 6 units, 2 layers)."""
    shapes = {
        "first.first.first.first.func.embeddings": (10, 6),
        "first.first.second.controller.initial_hidden_state_inputs": (2, 6),
        "first.first.second.controller.rnn.weight_ih_l0": (24, 6 + reading),
        "first.first.second.controller.rnn.weight_hh_l0": (24, 6),
        "first.first.second.controller.rnn.bias_ih_l0": (24,),
        "first.first.second.controller.rnn.weight_ih_l1": (24, 6),
        "first.first.second.controller.rnn.weight_hh_l1": (24, 6),
        "first.first.second.controller.rnn.bias_ih_l1": (24,),
    }
    return shapes | {f"first.first.second.{k}": v for k, v in stack.items()}


# Names, shapes and parameters() counts of get_stack_rnn_language_model(input_vocabulary_size=10,
# output_vocabulary_size=10, controller='lstm', stack=parse_stack_rnn_stack(S), hidden_units=6, layers=2) from rau's
# `differentiable-stacks` branch (stack_nn is in no rau release on PyPI, so no file of it can be written in CI).
RAU_STACKS = [
    ("superposition-5", 5, {"action_layer.linear.weight": (3, 6), "action_layer.linear.bias": (3,),
                            "push_value_layer.linear.weight": (5, 6), "push_value_layer.linear.bias": (5,)}, 872),
    ("stratification-5", 5, {"action_layer.linear.weight": (2, 6), "action_layer.linear.bias": (2,),
                             "push_value_layer.linear.weight": (5, 6), "push_value_layer.linear.bias": (5,)}, 865),
    ("nondeterministic-2-3", 6, {"operation_layer.weight": (84, 6), "operation_layer.bias": (84,)}, 1_428),
    ("vector-nondeterministic-2-3-4", 24, {"bottom_vector": (4,), "operation_layer.weight": (84, 6),
                                           "operation_layer.bias": (84,), "pushed_vector_layer.0.weight": (4, 6),
                                           "pushed_vector_layer.0.bias": (4,)}, 1_892),
]  # fmt: skip


@pytest.mark.parametrize(("stack", "reading", "names", "count"), RAU_STACKS, ids=[s[0] for s in RAU_STACKS])
def test_rau_stack_rnn_of_every_stack_type(stack: str, reading: int, names: dict, count: int) -> None:  # type: ignore[type-arg]
    ckpt = _ckpt(_rau_stack_rnn_names(reading, names), "pytorch")
    assert ckpt.n_parameters == count
    exp = expect(ckpt, match_roles(ckpt))
    assert exp is not None and exp.architecture == "rau-stack-rnn" and exp.hyperparameters["stack"] == stack
    assert exp.total == count and exp.matches
    from inspector.architectures import count as formula_count

    assert formula_count(parse_spec(f"rau-stack-rnn vocab=10 hidden=6 layers=2 stack={stack}"))[0] == count


def _rau_stack_transformer_names(units: list[tuple[str, tuple[int, ...]]], d: int = 8, ff: int = 16) -> dict:  # type: ignore[type-arg]
    """A rau stack transformer's parameter names and shapes, nested as rau's stack_nn nests them (checked on its
    differentiable-stacks branch for 1.superposition-5.1 and 1.nondeterministic-2-3-4): unit i of N sits under
    'first.' x (N - i + 1) + 'second', the embedding under N + 3 'first.', the final LayerNorm at first.second.func."""
    layers: list[tuple[str, tuple[int, ...]]] = []
    for kind, args in units:
        layers.append((kind, args))
        if kind != "transformer":
            layers.append(("feedforward", ()))
    n = len(layers)
    shapes = {"first." * (n + 3) + "func.embedding_layer.embeddings": (10, d)}
    norm = {"weight": (d,), "bias": (d,)}
    for i, (kind, args) in enumerate(layers):
        p = "first." * (n - i + 1) + "second"
        if kind == "transformer":
            for j in range(args[0]):
                b = f"{p}.layers.layers.{j}"
                shapes |= {f"{b}.self_attn.in_proj_weight": (3 * d, d), f"{b}.self_attn.in_proj_bias": (3 * d,),
                           f"{b}.self_attn.out_proj.weight": (d, d), f"{b}.self_attn.out_proj.bias": (d,),
                           f"{b}.linear1.weight": (ff, d), f"{b}.linear1.bias": (ff,), f"{b}.linear2.weight": (d, ff),
                           f"{b}.linear2.bias": (d,)}  # fmt: skip
                shapes |= {f"{b}.norm{k}.{w}": s for k in (1, 2) for w, s in norm.items()}
            continue
        shapes |= {f"{p}.wrapped_module.first.first.func.{w}": s for w, s in norm.items()}
        inner = f"{p}.wrapped_module.first.second"
        if kind == "feedforward":
            shapes |= {f"{inner}.func.0.linear.weight": (ff, d), f"{inner}.func.0.linear.bias": (ff,),
                       f"{inner}.func.2.linear.weight": (d, ff), f"{inner}.func.2.linear.bias": (d,)}  # fmt: skip
        elif kind == "superposition":
            (m,) = args
            shapes |= {f"{inner}.action_layer.linear.weight": (3, d),
                       f"{inner}.input_to_pushed_vector_layer.linear.weight": (m, d),
                       f"{inner}.stack_reading_to_output_layer.linear.weight": (d, m)}  # fmt: skip
        else:
            q, s, m = args
            shapes |= {f"{inner}.bottom_vector_logits": (m,),
                       f"{inner}.action_layer.linear.weight": (2 * (q * s) ** 2 + q * q * s, d),
                       f"{inner}.input_to_pushed_vector_layer.linear.weight": (m, d),
                       f"{inner}.stack_reading_to_output_layer.linear.weight": (d, q * s * m)}  # fmt: skip
    return shapes | {"first.second.func.weight": (d,), "first.second.func.bias": (d,)}


@pytest.mark.parametrize(
    ("spec", "units", "count"),
    [
        ("1.superposition-5.1", [("transformer", (1,)), ("superposition", (5,)), ("transformer", (1,))], 1_712),
        ("1.nondeterministic-2-3-4", [("transformer", (1,)), ("nondeterministic", (2, 3, 4))], 1_908),
        (
            "2.superposition-4.superposition-6",
            [("transformer", (2,)), ("superposition", (4,)), ("superposition", (6,))],
            None,
        ),
    ],
)
def test_rau_stack_transformer_from_its_nesting(spec: str, units: list, count: int | None) -> None:  # type: ignore[type-arg]
    ckpt = _ckpt(_rau_stack_transformer_names(units), "pytorch")
    exp = expect(ckpt, match_roles(ckpt))
    assert exp is not None and exp.architecture == "rau-stack-transformer"
    assert exp.hyperparameters["spec"] == spec and exp.matches and exp.total == ckpt.n_parameters
    assert count is None or exp.total == count  # rau's parameters() for the two strings it was checked on
    assert not [c for c in exp.layers if c.status != "ok"]


@pytest.mark.parametrize("copied_from", [0, 10**9])
def test_a_repeated_module_recipe_makes_the_spec_module_spec_makes(
    copied_from: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`file_specs` makes a module of one tensor from the first spec of its recipe, positionally (or as its copies,
    `recordtype.copies`, in a large file): the specs equal `module_spec`'s for each module (dense, conv with a bias on
    the other axis, norms, embeddings, PReLU, aliases)."""
    monkeypatch.setattr("inspector.modules.COPIED_FROM", copied_from)
    from inspector.modules import Module, file_specs, module_groups, module_spec, statistic_modules
    from inspector.roles import match_roles

    shapes = [(4, 3), (4,), (8, 4, 3, 3), (8,), (10, 4), (4,), (4, 4, 1)]
    names = ["fc.weight", "norm.weight", "conv.weight", "conv.bias", "embed_tokens.weight", "act.prelu.weight",
             "c1d.weight"]  # fmt: skip
    tensors = []
    for i in range(40):
        for name, shape in zip(names, shapes, strict=True):
            tensors.append(TensorInfo(f"blocks.{i}.{name}", shape, "F32", 4, None, alias_of="x" if i == 7 else None))
    ckpt = Checkpoint("x", "safetensors", "safetensors", (("x", 0),), tuple(tensors), ())
    roles = match_roles(ckpt)
    stats = statistic_modules(ckpt, roles, ckpt.framework)
    expected = [module_spec(Module(n, tuple(items)), ckpt.framework, n in stats) for n, items in
                module_groups(ckpt, roles).items()]  # fmt: skip
    assert file_specs(ckpt, roles) == expected and len({type(s) for s in expected}) >= 4


def test_file_last_parts_by_shape_are_every_names() -> None:
    """`family_check._lasts` splits one name of each digit shape (but where a last part mixes digits and more): the
    set it gives is the set of every name's last part and module path's last part, keyed, for a transformers model's
    names and names that mix digits into their last parts (`fc1`, `w2`), have none, or hold other decimals."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from inspector.family_check import _lasts, _shape_key

    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=12, n_embd=8, n_head=2, vocab_size=32)
    names = [*transformers.GPT2LMHeadModel(config).state_dict()]
    names += ["fc1.weight", "fc2.weight", "layers.3.fc12.w7", "layers.10.fc1.w8", "12", "x", "a.b٣c.1", "١٢.a", "q.1\n"]

    def last_parts(name: str) -> list[str]:
        module, dot, leaf = name.rpartition(".")
        return [module.rpartition(".")[2] if dot else "", leaf]

    expected = {_shape_key(x) if x[:1].isdecimal() else x for name in names for x in last_parts(name)}
    assert _lasts(names) == expected
    assert {"#", "fc1", "fc2", "fc12", "w7", "w8", "c_attn", "weight"} <= expected


def test_refined_roles_from_the_checks_modules_are_those_made_again(tmp_path: Path) -> None:
    """`refine_roles` after the family check takes the modules the check made (`family_check.LAST_CHECK`), and lets
    them go: on a transformers Llama written by save_pretrained (config.json beside it) the roles so refined are those
    refined from modules made again, each tensor its family row and part's role."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from inspector import family_check

    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=32, hidden_size=8, intermediate_size=16, num_hidden_layers=3, num_attention_heads=2,
        num_key_value_heads=1, max_position_embeddings=16,
    )  # fmt: skip
    transformers.LlamaForCausalLM(config).save_pretrained(tmp_path)
    ckpt = load(tmp_path / "model.safetensors")
    roles = match_roles(ckpt)
    exp = expect(ckpt, roles)
    assert exp is not None and exp.architecture == "llama" and exp.source == "config" and exp.matches
    assert family_check.LAST_CHECK and family_check.LAST_CHECK[0][0] is exp
    reused = family_check.refine_roles(ckpt, roles, exp)
    assert not family_check.LAST_CHECK and not family_check.LAST_FILE
    made_again = family_check.refine_roles(ckpt, roles, exp)
    assert reused == made_again
    q = next(r for r in reused if r.name == "model.layers.2.self_attn.q_proj.weight")
    assert (q.layer, q.role, q.rule_id) == ("model.layers.2", "attention_query", "family.llama")


def test_copied_specs_and_statistics_of_a_torch_save_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A state dict torch.save wrote (linear, conv, BatchNorm with its running statistics, LayerNorm, embedding, each
    repeated): `file_specs` makes the same specs as copies (a large file's way) as made one by one, each
    `module_spec`'s, and `statistic_modules` names the BatchNorms, as torch's buffers say."""
    torch = pytest.importorskip("torch")
    from inspector.formulas import total
    from inspector.modules import Module, file_specs, module_groups, module_spec, statistic_modules
    from inspector.registry import load

    nn = torch.nn
    blocks = nn.ModuleList(
        nn.ModuleDict(
            {"fc": nn.Linear(4, 3), "conv": nn.Conv2d(2, 5, 3), "bn": nn.BatchNorm2d(5), "ln": nn.LayerNorm(3)}
        )
        for _ in range(6)
    )
    model = nn.ModuleDict({"embed": nn.Embedding(10, 4), "blocks": blocks})
    path = tmp_path / "model.pt"
    torch.save(model.state_dict(), path)
    ckpt = load(path)
    roles = match_roles(ckpt)
    stats = statistic_modules(ckpt, roles, ckpt.framework)
    assert stats == {n.rpartition(".")[0] for n, _ in model.named_buffers() if n.endswith("running_mean")}
    expected = [
        module_spec(Module(n, tuple(items)), ckpt.framework, n in stats)
        for n, items in module_groups(ckpt, roles).items()
    ]
    made = {}
    for copied_from in (0, 10**9):
        monkeypatch.setattr("inspector.modules.COPIED_FROM", copied_from)
        made[copied_from] = file_specs(ckpt, roles)
    assert made[0] == made[10**9] == expected and len({type(s) for s in expected}) >= 4
    assert sum(map(total, expected)) == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize(
    "names",
    [
        ["fc.weight", "fc.bias"],
        ["bn.weight", "bn.running_mean", "bn.running_var"],
        ["moving_mean", "dense.kernel"],
        ["x.running_meanx", "running_mean_y", "a.moving_variance.b"],
        ["a.running_mean\nb", "c.weight"],  # (a newline: its joined text shows '.running_mean\n', no name ends so)
        ["a.b\n.moving_var", "c.weight"],
    ],
)
def test_statistic_modules_are_the_modules_of_statistic_names(names: list[str]) -> None:
    """`statistic_modules` tells a file without statistics by one search of its joined names: the modules it gives are
    those of the names that end in '.' and a statistic or are one, as testing each name gives them."""
    from inspector.modules import DOTTED_STATISTICS, STATISTICS, module_name, statistic_modules

    tensors = tuple(TensorInfo(n, (2,), "F32", 8, None) for n in names)
    ckpt = Checkpoint("x", "safetensors", "safetensors", (("x", 0),), tensors, ())
    roles = match_roles(ckpt)
    want = {
        module_name(t, r, ckpt.framework)
        for t, r in zip(tensors, roles, strict=True)
        if r.role == "norm_statistic" or t.name.endswith(DOTTED_STATISTICS) or t.name in STATISTICS
    }
    assert statistic_modules(ckpt, roles, ckpt.framework) == want
    assert bool(want) == any(n.endswith(DOTTED_STATISTICS) or n in STATISTICS for n in names)
