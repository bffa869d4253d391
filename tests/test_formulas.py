"""Layer formulas: golden values checked against the frameworks, conventions, and properties."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inspector.errors import SpecError
from inspector.formulas import (
    GRU,
    LSTM,
    Attention,
    BatchNorm,
    Conv,
    Convention,
    Dense,
    Embedding,
    LayerNorm,
    Norm,
    SimpleRNN,
    TransformerBlock,
    breakdown,
    total,
)

GOLDEN = [
    (Dense(784, 128), 100_480),
    (Conv(3, 32, (3, 3)), 896),
    (Embedding(10000, 64), 640_000),
    (SimpleRNN(32, 64), 6_208),
    (LSTM(32, 64), 24_832),
    (LSTM(32, 64, Convention.TORCH), 25_088),
    (GRU(32, 64), 18_816),
    (GRU(32, 64, reset_after=False), 18_624),
    (TransformerBlock(512, 2048), 3_152_384),
]


@pytest.mark.parametrize(("spec", "expected"), GOLDEN, ids=lambda x: getattr(x, "kind", str(x)))
def test_golden_values(spec: object, expected: int) -> None:
    assert total(spec) == expected  # type: ignore[arg-type]


def test_batchnorm_conventions() -> None:
    assert breakdown(BatchNorm(64)) == {"gamma": 64, "beta": 64, "moving_mean": 64, "moving_variance": 64}
    assert breakdown(BatchNorm(64, Convention.TORCH)) == {"gamma": 64, "beta": 64}  # running stats are buffers


def test_attention_and_norm() -> None:
    assert total(Attention(64)) == 4 * 64 * 64 + 4 * 64
    assert total(Attention(64, bias=False)) == 4 * 64 * 64
    assert total(LayerNorm(10, bias=False)) == 10


@pytest.mark.parametrize("bad", [0, -3, True, 2.5])
def test_sizes_must_be_positive_ints(bad: object) -> None:
    with pytest.raises(SpecError):
        Dense(bad, 3)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [0, -3, True, False, 2.5, "4"])
@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda v: Dense(2, v), "units"),  # (several sizes: the second)
        (lambda v: Conv(5, 10, (3, 3), True, "c", v), "groups"),  # (a size after `name`)
        (lambda v: Norm(v), "features"),  # (one size)
    ],
)
def test_each_size_is_checked(make: Any, field: str, bad: object) -> None:
    """Every size field, of a class of one size or several, refuses what is not a positive int (a bool too), with
    its name; a spec of good sizes is made (the check is one C pass over them, `LayerSpec.__post_init__`)."""
    with pytest.raises(SpecError, match=f"\\.{field} must be a positive integer"):
        make(bad)
    assert make(5) == make(5)


@given(st.integers(1, 512), st.integers(1, 512))
def test_recurrent_cells_scale_with_gates(inputs: int, units: int) -> None:
    simple = total(SimpleRNN(inputs, units, Convention.TORCH))
    assert total(LSTM(inputs, units, Convention.TORCH)) == 4 * simple
    assert total(GRU(inputs, units, Convention.TORCH)) == 3 * simple


@given(st.integers(1, 300), st.integers(1, 300), st.integers(1, 300))
def test_dense_is_linear_in_units(inputs: int, a: int, b: int) -> None:
    assert total(Dense(inputs, a + b)) == total(Dense(inputs, a)) + total(Dense(inputs, b))


@pytest.mark.reference
def test_keras_agrees_with_the_golden_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    pytest.importorskip("torch")
    keras = pytest.importorskip("keras")
    layers = keras.layers
    cases = [
        (layers.Dense(128), (784,), Dense(784, 128)),
        (layers.SimpleRNN(64), (5, 32), SimpleRNN(32, 64)),
        (layers.LSTM(64), (5, 32), LSTM(32, 64)),
        (layers.GRU(64), (5, 32), GRU(32, 64)),
        (layers.GRU(64, reset_after=False), (5, 32), GRU(32, 64, reset_after=False)),
        (layers.BatchNormalization(), (64,), BatchNorm(64)),
    ]
    for layer, shape, spec in cases:
        layer.build((None, *shape))
        assert layer.count_params() == total(spec)


def test_counted_keeps_a_tuples_answer_for_the_next_call_only() -> None:
    """`counted` gives each spec's total and kind; a tuple's answer is kept for the next call of that tuple (the
    inference's summary, then `compare`), which lets it go; a list's is not kept (a list may change)."""
    from inspector.formulas import Dense, Tensor, counted, total

    specs = (*(Dense(4, 3, name=f"l{i}") for i in range(3)), Tensor((2,), "Scale", "s"), Dense(4, 3, False, "b"))
    first = counted(specs)
    assert first == [(total(s), s.kind) for s in specs] == [(15, "Dense")] * 3 + [(2, "Scale"), (12, "Dense")]
    assert counted(specs) is first
    again = counted(specs)
    assert again == first and again is not first
    listed = list(specs)
    assert counted(listed) == first and counted(listed) is not counted(listed)


def test_kinds_of_many_layers_are_each_layers_kind_counted() -> None:
    """Past `KINDS_LISTED` layers the summary counts each kind (its `counted` kind, a Norm's and a Tensor's label), in
    order of first appearance, as the kinds read one by one give them."""
    from collections import Counter

    from inspector.formulas import Dense, Norm, Tensor
    from inspector.infer import KINDS_LISTED, _kinds

    specs = tuple(
        [Tensor((2,), "Scale", f"s{i}") for i in range(40)]
        + [Dense(4, 3, name=f"d{i}") for i in range(30)]
        + [Norm(4, True, False, "RMSNorm", f"n{i}") for i in range(5)]
        + [Tensor((3,), "PReLU", "p")]
    )
    assert len(specs) > KINDS_LISTED
    want = ", ".join(f"{k} x{n:,}" for k, n in Counter(s.kind for s in specs).items())
    assert _kinds(specs) == want == "Scale x40, Dense x30, RMSNorm x5, PReLU x1"
