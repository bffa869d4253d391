"""Every count printed in the five seed notebooks comes out of `inspector formula` exactly."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.cli import main

CASES = [
    # seed 000, cells 28 and 32: Keras model.summary() of the small and large LSTM language models
    ("keras-lstm-lm vocab=10004 embed=100 units=256", 2_402_072, [1_000_400, 365_568, 25_700, 1_010_404]),
    ("keras-lstm-lm vocab=10004 embed=300 units=512", 7_831_328, [3_001_200, 1_665_024, 153_900, 3_011_204]),
    # seed 001, cells 3, 4 and 6: Embedding + Flatten/SimpleRNN/LSTM + Dense classifiers
    ("Input(100) Embedding(10000,100) Flatten Dense(32) Dense(1)", 1_320_065, [1_000_000, 320_032, 33]),
    ("Embedding(10000,100) SimpleRNN(32) Dense(1)", 1_004_289, [1_000_000, 4_256, 33]),
    ("Embedding(10000,100) LSTM(32) Dense(1)", 1_017_057, [1_000_000, 17_024, 33]),
    # seed 002, section 2: the Sockeye LSTM model's 79,638,799 parameters
    (
        "sockeye-rnn source_vocab=49410 target_vocab=42767 embed=512:512 hidden=512 layers=2:2 cell=lstm",
        79_638_799,
        None,
    ),
    # seed 003, cells 5 to 9: the three-column CNN (320 and 9,568 are partial sums of the first column)
    (
        "column-cnn height=50 width=50 depth=1 columns=3 convs=2 filters=32 kernel=3 pool=2 dense=256 classes=11",
        3_011_627,
        [320, 9_248, 991_488] * 3 + [8_459],
    ),
    # seed 004, "Empirical Parameter Counts" (rau, vocab 64, 3 layers)
    ("rau-lstm-lm vocab=64 hidden=32 layers=3", 27_104, None),
    ("rau-lstm-lm vocab=64 hidden=64 layers=3", 103_360, None),
    ("rau-lstm-lm vocab=64 hidden=128 layers=3", 403_328, None),
    ("rau-transformer-lm vocab=64 d_model=32 layers=3 heads=4 feedforward=128", 40_224, None),
    ("rau-transformer-lm vocab=64 d_model=48 layers=3 heads=4 feedforward=192", 87_984, None),
    ("rau-transformer-lm vocab=64 d_model=56 layers=3 heads=4 feedforward=224", 118_776, None),
    ("rau-transformer-lm vocab=64 d_model=64 layers=3 heads=4 feedforward=256", 154_176, None),
    ("rau-transformer-lm vocab=64 d_model=128 layers=3 heads=4 feedforward=512", 603_264, None),
    ("rau-stack-rnn vocab=64 hidden=32 layers=3 stack_size=20", 30_423, None),
    ("rau-stack-rnn vocab=64 hidden=32 layers=3 stack_size=32", 32_355, None),
    ("rau-stack-rnn vocab=64 hidden=32 layers=3 stack_size=64", 37_507, None),
    ("rau-stack-rnn vocab=64 hidden=64 layers=3 stack_size=20", 109_975, None),
    ("rau-stack-rnn vocab=64 hidden=64 layers=3 stack_size=32", 113_827, None),
    ("rau-stack-rnn vocab=64 hidden=64 layers=3 stack_size=64", 124_099, None),
    # the seed built these with the layer string f"{d_model}-{num_layers}.superposition-{stack_size}.{num_stack_layers}"
    ("rau-stack-transformer vocab=64 d_model=16 heads=4 feedforward=64 spec=16-1.superposition-16.1", 59_568, None),
    ("rau-stack-transformer vocab=64 d_model=20 heads=4 feedforward=80 spec=20-1.superposition-8.1", 111_340, None),
    ("rau-stack-transformer vocab=64 d_model=20 heads=4 feedforward=80 spec=20-1.superposition-16.1", 111_660, None),
    ("rau-stack-transformer vocab=64 d_model=24 heads=4 feedforward=96 spec=24-1.superposition-16.1", 187_848, None),
]


def _formula(spec: str, capsys: pytest.CaptureFixture[str]) -> dict:  # type: ignore[type-arg]
    assert main(["formula", spec, "--json"]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


@pytest.mark.parametrize(("spec", "expected", "layers"), CASES, ids=[c[0][:60] for c in CASES])
def test_seed_counts(spec: str, expected: int, layers: list[int] | None, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _formula(spec, capsys)
    assert doc["total"] == expected
    if layers is not None:
        assert [row["total"] for row in doc["layers"] if row["total"]] == layers


def test_seed_000_ratio(capsys: pytest.CaptureFixture[str]) -> None:
    specs = ["keras-lstm-lm vocab=10004 embed=100 units=256", "keras-lstm-lm vocab=10004 embed=300 units=512"]
    assert main(["compare", *specs, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[1]["ratio_to_first"] == 3.2602386606229956  # seed 000, cell 33


def test_seed_002_section_4_shapes(capsys: pytest.CaptureFixture[str]) -> None:
    """The seed's open 's2=?' cases: decoder l0 i2h reads te + h (input feeding); birnn i2h reads the embedding."""
    doc = _formula("sockeye-rnn source_vocab=100 target_vocab=90 embed=32:24 hidden=16 layers=3:2 cell=gru", capsys)
    rows = {r["layer"]: r for r in doc["layers"]}
    assert rows["decoder_rnn_l0"]["params"]["kernel"] == 3 * 16 * (24 + 16)
    assert rows["encoder_birnn_forward_l0"]["params"]["kernel"] == 3 * 8 * 32
    assert rows["encoder_birnn_forward_l0"]["params"]["recurrent_kernel"] == 3 * 8 * 8
    assert [n for n in rows if "enc2decinit" in n] == ["decoder_rnn_enc2decinit_0", "decoder_rnn_enc2decinit_1"]
    assert [n for n in rows if n.startswith("encoder_rnn")] == ["encoder_rnn_l0", "encoder_rnn_l1"]
    assert rows["decoder_rnn_hidden"]["params"] == {"kernel": 2 * 16 * 16, "bias": 16}


def test_seed_004_differences_are_explained(capsys: pytest.CaptureFixture[str]) -> None:
    lstm = _formula("rau-lstm-lm vocab=64 hidden=32 layers=3", capsys)["seed_formula"]
    assert lstm["total"] == 28_832  # the seed's calculate_lstm_params
    assert any("ties the output layer" in m for m in lstm["missed"])
    transformer = _formula("rau-transformer-lm vocab=64 d_model=32 layers=3 feedforward=128", capsys)["seed_formula"]
    assert transformer["total"] == 39_840  # the seed's calculate_transformer_params
    assert any("in_proj_bias" in m for m in transformer["missed"])
    stack = _formula("rau-stack-transformer d_model=16 feedforward=64 spec=16-1.superposition-16.1", capsys)
    assert any("16 standard layers" in n for n in stack["notes"])


@pytest.mark.reference
@pytest.mark.parametrize(("hidden", "layers"), [(32, 3), (64, 2)])
def test_rau_models_agree(hidden: int, layers: int, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    lm = pytest.importorskip("rau.models.rnn.language_model")
    tf = pytest.importorskip("rau.models.transformer.unidirectional_encoder")
    for getter, name in ((lm.get_lstm_language_model, "rau-lstm-lm"), (lm.get_simple_rnn_language_model, "rau-rnn-lm")):
        model = getter(
            input_vocabulary_size=50,
            output_vocabulary_size=50,
            hidden_units=hidden,
            layers=layers,
            dropout=0.0,
            learned_initial_state=True,
            use_padding=False,
        )
        real = sum(p.numel() for p in model.parameters())
        assert _formula(f"{name} vocab=50 hidden={hidden} layers={layers}", capsys)["total"] == real
    model = tf.get_unidirectional_transformer_encoder(
        input_vocabulary_size=50,
        output_vocabulary_size=50,
        tie_embeddings=True,
        num_layers=layers,
        d_model=hidden,
        num_heads=4,
        feedforward_size=3 * hidden,
        dropout=0.0,
        use_padding=False,
    )
    real = sum(p.numel() for p in model.parameters())
    spec = f"rau-transformer-lm vocab=50 d_model={hidden} layers={layers} feedforward={3 * hidden}"
    assert _formula(spec, capsys)["total"] == real


def test_budget_brackets_the_budget(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["budget", "rau-lstm-lm", "vocab=64", "layers=3", "--params", "100000", "--vary", "hidden", "--json"]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["under"][0]["hidden"] == 62 and doc["under"][0]["total"] <= 100_000
    assert doc["over"][0]["hidden"] == 63 and doc["over"][0]["total"] > 100_000


def test_spec_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["formula", "rau-lstm-lm", "hidden=0"]) == 2
    assert main(["formula", "Dense(3)"]) == 2
    err = capsys.readouterr().err
    assert "positive integer" in err and "Input(...)" in err


@settings(max_examples=50, deadline=None)
@given(st.integers(2, 500), st.integers(2, 500), st.integers(1, 64), st.integers(1, 64), st.integers(1, 32),
       st.integers(1, 4), st.integers(1, 4), st.sampled_from(["lstm", "gru"]))  # fmt: skip
def test_seed_002_closed_form(sv: int, tv: int, se: int, te: int, half: int, sn: int, tn: int, cell: str) -> None:
    """README's closed form for section 4 of seed 002 equals the layer-by-layer composition."""
    from inspector.architectures import build, count

    h, g = 2 * half, {"lstm": 4, "gru": 3}[cell]
    e = 2 * tn if cell == "lstm" else tn
    closed = (sv * se + tv * te + tv * h + tv + 2 * (g * (h // 2) * (se + h // 2) + 2 * g * (h // 2))
              + (sn - 1) * (2 * g * h * h + 2 * g * h) + (g * h * (te + h) + g * h * h + 2 * g * h)
              + (tn - 1) * (2 * g * h * h + 2 * g * h) + (2 * h * h + h) + e * (h * h + h))  # fmt: skip
    arch = build("sockeye-rnn", source_vocab=sv, target_vocab=tv, embed=(se, te), hidden=h, layers=(sn, tn), cell=cell)
    assert count(arch)[0] == closed


def test_budget_range_may_start_at_zero_where_a_word_reads_zero_as_derived() -> None:
    """llama's kv_heads=0 is kv_heads=heads (no grouped-query attention): a range from 0 takes it; below 0 is not."""
    from inspector.architectures import build, count
    from inspector.budget import search
    from inspector.errors import SpecError

    fixed = {"vocab": 1000, "d_model": 256, "layers": 2, "heads": 8}
    under, over = search("llama", 10**9, "kv_heads", fixed, low=0, high=8, keep=9)
    by_value = {c.value: c.total for c in under + over}
    assert sorted(by_value) == list(range(9))
    assert by_value[0] == by_value[8] == count(build("llama", **fixed, kv_heads=8))[0]
    assert by_value[1] < by_value[8]
    with pytest.raises(SpecError, match="0 <= low"):
        search("llama", 10**9, "kv_heads", fixed, low=-1, high=8)


def test_heads_that_do_not_divide_d_model_are_refused_and_budget_steps_over_them() -> None:
    from inspector.architectures import build
    from inspector.budget import search
    from inspector.errors import SpecError

    with pytest.raises(SpecError, match="heads=3 does not divide d_model=32"):
        build("rau-transformer-lm", d_model=32, heads=3)
    under, over = search("rau-transformer-lm", 200_000, "d_model", {"heads": 4, "layers": 2}, low=8, high=128, keep=5)
    assert under and over
    assert all(c.value % 4 == 0 for c in under + over)


def test_rau_layer_grammar_is_raus_own() -> None:
    """rau's regex `^(\\d+)|superposition-(\\d+)|nondeterministic-(\\d+)-(\\d+)-(\\d+)$`: only the first
    alternative is anchored at the start and only the last at the end."""
    from inspector.architectures import count, parse_rau_stack_layers, parse_spec
    from inspector.errors import SpecError

    assert parse_rau_stack_layers("16-1.superposition-16.1") == [
        ("transformer", (16,)),
        ("superposition", (16,)),
        ("transformer", (1,)),
    ]
    assert parse_rau_stack_layers("2.superposition-8tail") == [("transformer", (2,)), ("superposition", (8,))]
    assert parse_rau_stack_layers("2.nondeterministic-3-2-5") == [
        ("transformer", (2,)),
        ("nondeterministic", (3, 2, 5)),
    ]
    with pytest.raises(SpecError, match="invalid rau"):
        parse_rau_stack_layers("2.stratification-8")
    # parameters() of rau's get_unidirectional_stack_transformer_encoder(input_vocabulary_size=10,
    # output_vocabulary_size=10, tie_embeddings=True, d_model=8, num_heads=2, feedforward_size=16, ...) on its
    # differentiable-stacks branch (stack_nn is in no rau release on PyPI)
    words = "rau-stack-transformer vocab=10 d_model=8 heads=2 feedforward=16"
    assert count(parse_spec(f"{words} spec=1.superposition-5.1"))[0] == 1_712
    assert count(parse_spec(f"{words} spec=1.nondeterministic-2-3-4"))[0] == 1_908


def test_the_seed_table_is_made_on_first_use_and_named_in_full():
    """The seeds' architectures are a table made when an architecture is first named, never by importing the module."""
    import subprocess
    import sys

    from inspector.architectures import definitions

    seeds = ["sockeye-rnn", "rau-lstm-lm", "rau-rnn-lm", "rau-transformer-lm", "rau-stack-rnn"]
    seeds += ["rau-stack-transformer", "column-cnn", "keras-lstm-lm"]
    assert list(definitions())[: len(seeds)] == seeds
    code = (
        "import inspector.architectures as a\n"
        "print(a.Word.__init__.__code__.co_filename != '<string>' and a.definitions.cache_info().currsize == 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "True\n"
