"""Role rules: table-driven cases from real exporters' names, and the shape-and-order fallback."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from inspector import load
from inspector.records import Checkpoint, TensorInfo, TensorKind
from inspector.roles import FAMILY, FAMILY_MATCHERS, ROLE_RULES, Role, _by_rule, compile_rules, match_roles

CASES = list(csv.DictReader((Path(__file__).parent / "data" / "role_cases.csv").read_text().splitlines()))


@pytest.mark.parametrize("row", CASES, ids=[r["name"] for r in CASES])
def test_role_cases(row: dict[str, str]) -> None:
    t = TensorInfo(row["name"], (4, 4), "F32", 64, 0)
    m = _by_rule(t, FAMILY_MATCHERS[FAMILY[row["framework"]]])
    assert m is not None
    assert (m.role, m.layer, m.param) == (row["role"], row["layer"], row["param"])


@pytest.mark.parametrize("framework", sorted(FAMILY))
def test_a_remembered_name_shape_gives_what_the_rules_give(framework: str) -> None:
    """`match_roles` answers a name of a shape it has met from what it kept of the first (where the layer lies, or
    the rule's layer template and where its groups lie): each role case, and the case with all its digits made one
    of the digits no rule spells (so of a shape met from the second on), gets the layer and parameter name the rules
    give it read afresh (a matcher without a memo)."""
    matcher = FAMILY_MATCHERS[FAMILY[framework]]
    free = [d for d in "0123456789" if matcher.shape_key(d) == matcher.shape_key("9")]  # (the digits one in a shape)
    assert len(free) >= 4
    cases = [row["name"] for row in CASES if row["framework"] == framework]
    every = [str.maketrans("0123456789", d * 10) for d in free[:4]]
    names = list(dict.fromkeys(m for n in cases for m in [n, *(n.translate(table) for table in every)]))
    ckpt = Checkpoint(
        "x", "safetensors", framework, (("x", 0),), tuple(TensorInfo(n, (4, 4), "F32", 64, 0) for n in names), ()
    )
    fresh = compile_rules(matcher.rules)
    object.__setattr__(fresh, "digits", b"")  # (no shape key: every name scanned)
    compared, templated = 0, 0
    for t, found in zip(ckpt.tensors, match_roles(ckpt), strict=True):
        direct = _by_rule(t, fresh)
        if direct is not None:
            assert (found.layer, found.param) == (direct.layer, direct.param), t.name
            compared += 1
            templated += "{" in (fresh.match(t.name)[0].layer or "")  # type: ignore[index]
    assert compared >= len(cases)  # (a renumbered Keras name may meet no rule: `:1`)
    assert templated >= 50 if framework == "pytorch" else True  # (the transformers families' `{stack}layers.{i}`)


def test_rule_ids_are_unique_and_roles_valid() -> None:
    ids = [r.rule_id for r in ROLE_RULES]
    assert len(ids) == len(set(ids))
    assert all(isinstance(r.role, Role) for r in ROLE_RULES)


def test_unmatched_names_are_reported_not_guessed() -> None:
    ckpt = load(Path(__file__).parent.parent / "sample_models" / "basic" / "mlp_fp16.safetensors")
    roles = {r.name: r for r in match_roles(ckpt)}
    assert roles["step"].role == "unmatched"
    assert roles["hidden.weight"].role == "dense"


def test_keras_rnn_layers_get_rnn_roles_from_their_recurrent_kernel() -> None:
    names = ["lstm_1/kernel:0", "lstm_1/recurrent_kernel:0", "lstm_1/bias:0", "dense_1/kernel:0"]
    ckpt = Checkpoint(
        "x", "keras-h5", "keras", (("x", 0),), tuple(TensorInfo(n, (4, 4), "F32", 64, 0) for n in names), ()
    )
    assert [r.role for r in match_roles(ckpt)] == ["rnn_input_kernel", "rnn_recurrent_kernel", "rnn_bias", "dense"]


def test_positional_arrays_by_shape_and_order(tmp_path: Path) -> None:
    """np.savez(*arrays) names arr_0, arr_1...: a 4-d kernel then a bias of its first dimension is a conv."""
    shapes = [(8, 1, 3, 3), (8,), (72, 10), (10,), (5, 5)]
    np.savez(tmp_path / "p.npz", *[np.zeros(s, dtype="float32") for s in shapes])
    roles = match_roles(load(tmp_path / "p.npz"))
    assert [(r.role, r.layer, r.param) for r in roles] == [
        ("conv", "layer0", "kernel"),
        ("conv", "layer0", "bias"),
        ("dense", "layer1", "kernel"),
        ("dense", "layer1", "bias"),
        ("unmatched", "arr_4", None),
    ]


def _reparametrized() -> tuple[Any, dict[str, tuple[str, str]]]:
    """A module of weight-normed and spectral-normed layers (torch's old hooks and its parametrizations), and the
    layer and role each of its tensors should read as: its module's, the role the module's weight would have."""
    torch = pytest.importorskip("torch")
    from torch.nn.utils import parametrizations, spectral_norm, weight_norm

    torch.manual_seed(0)
    model = torch.nn.Module()
    model.conv_old = weight_norm(torch.nn.Conv1d(4, 8, 3))
    model.conv_new = parametrizations.weight_norm(torch.nn.Conv1d(4, 8, 3))
    model.up = torch.nn.Sequential(parametrizations.weight_norm(torch.nn.ConvTranspose1d(8, 4, 3)))
    model.proj = parametrizations.weight_norm(torch.nn.Linear(4, 8))
    model.critic = spectral_norm(torch.nn.Linear(4, 8))
    model.disc = torch.nn.Sequential(parametrizations.spectral_norm(torch.nn.Conv2d(4, 8, 3)))
    model.rotation = parametrizations.orthogonal(torch.nn.Linear(4, 4))
    roles = {"conv_old": "conv", "conv_new": "conv", "up.0": "conv", "proj": "dense", "critic": "dense",
             "disc.0": "conv", "rotation": "dense"}  # fmt: skip
    expected = {}
    for name in model.state_dict():
        module = next(m for m in roles if name.startswith(m + "."))
        expected[name] = (module, roles[module])
    return model, expected


@pytest.mark.parametrize("writer", ["torch.save", "safetensors"])
def test_reparametrized_weights_are_their_modules(writer: str, tmp_path: Path) -> None:
    """weight_norm's `weight_g`/`weight_v` (`parametrizations.weight.original0`/`original1`), spectral_norm's
    `weight_orig` (`parametrizations.weight.original`) and orthogonal's: the module's layer and role; spectral_norm's
    vectors and orthogonal's base are buffers, as torch registers them (the count is parameters()')."""
    model, expected = _reparametrized()
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    path = tmp_path / "model.bin"
    if writer == "torch.save":
        import torch

        torch.save(state, path)
    else:
        save_file = pytest.importorskip("safetensors.torch").save_file
        path = tmp_path / "model.safetensors"
        save_file(state, str(path))
    ckpt = load(path)
    assert {r.name: (r.layer, r.role) for r in match_roles(ckpt)} == expected
    buffers = {name for name, _ in model.named_buffers()}
    assert {t.name for t in ckpt.tensors if t.kind is TensorKind.BUFFER} == buffers
    assert ckpt.n_parameters == sum(p.numel() for p in model.parameters())


def test_hrm_stacks_and_fused_projections(tmp_path: Path) -> None:
    """HRM (transformers' HrmTextForCausalLM) holds two stacks of decoder layers, `model.L_module.layers.N` and
    `model.H_module.layers.N`, its attention `attn` with a fused gate/q/k/v `gqkv_proj`, its MLP a fused `gate_up_proj`:
    each layer of each stack is one, its projections their roles (they were `dense`, one layer per module)."""
    transformers = pytest.importorskip("transformers")
    config = transformers.AutoConfig.for_model(
        "hrm_text", hidden_size=32, intermediate_size=64, num_attention_heads=4, vocab_size=100, num_hidden_layers=2
    )
    transformers.AutoModelForCausalLM.from_config(config).save_pretrained(tmp_path)
    roles = {r.name: (r.layer, r.role) for r in match_roles(load(tmp_path / "model.safetensors"))}
    parts = {"attn.gqkv_proj": "attention_qkv", "attn.o_proj": "attention_output", "mlp.gate_up_proj": "feedforward_up",
             "mlp.down_proj": "feedforward_down"}  # fmt: skip
    assert {name: found for name, found in roles.items() if "_module." in name} == {
        f"model.{stack}.layers.{i}.{part}.weight": (f"{stack}.layers.{i}", role)
        for stack in ("L_module", "H_module")
        for i in range(config.num_layers_per_stack)
        for part, role in parts.items()
    }


@pytest.mark.parametrize(
    "names",
    [[], [""], ["a.0.b", "x.12.weight"], ["é.3", "\udc80.4", "k"], ["a\nb.1", "c.2"], ["\n"], ["x", "", ""]],
)
def test_shape_keys_are_each_names_key(names: list[str]) -> None:
    """`shape_keys` keys names in bulk as `Matcher.shape_key` keys each (non-ASCII, a lone surrogate, empty names, a
    newline in a name: then name by name), with the family check's table and the role matcher's own."""
    from inspector.family_check import ALL_DIGITS
    from inspector.roles import MATCHER, shape_keys

    for table in (ALL_DIGITS, MATCHER.digits or ALL_DIGITS):
        assert shape_keys(names, table) == [n.encode("utf-8", "surrogatepass").translate(table) for n in names]
