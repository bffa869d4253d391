"""The seed notebooks' own hand formulas, kept to explain where they disagree with the real libraries.

Seed 004 wrote analytic formulas for rau's models and then measured the real models, which gave
different counts for the LSTM and the Transformer. Each entry here reproduces the seed's formula and
says, term by term, what it missed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from inspector.recordtype import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@record(frozen=True)
class SeedFormula:
    seed: str
    formula: Callable[[Mapping[str, Any]], int]
    explain: Callable[[Mapping[str, Any]], list[str]]


def _seed004_lstm(h: Mapping[str, Any]) -> int:
    v, n, u = int(h["vocab"]), int(h["layers"]), int(h["hidden"])
    return v * u + n * u + n * 4 * (2 * u * u) + u * v + v


def _seed004_lstm_why(h: Mapping[str, Any]) -> list[str]:
    v, n, u = h["vocab"], h["layers"], h["hidden"]
    return [
        f"it counts an output projection of {u * v + v:,} (hidden x vocab + vocab bias), but rau ties the output "
        "layer to the input embedding and gives it no bias",
        f"it assumes no RNN bias, but use_extra_bias=False only drops bias_hh: each layer keeps bias_ih of 4 x hidden, "
        f"{n * 4 * u:,} in all",
    ]


def _seed004_transformer(h: Mapping[str, Any]) -> int:
    v, n, d, ff = int(h["vocab"]), int(h["layers"]), int(h["d_model"]), int(h["feedforward"])
    return v * d + n * (4 * d * d + d * ff + ff + ff * d + d + 4 * d) + 2 * d


def _seed004_transformer_why(h: Mapping[str, Any]) -> list[str]:
    n, d = h["layers"], h["d_model"]
    return [
        f"it assumes the Q, K, V and output projections have no bias, but PyTorch's MultiheadAttention keeps "
        f"in_proj_bias (3 x d_model) and out_proj.bias (d_model): {n * 4 * d:,} in all",
    ]


def _seed004_stack_rnn(h: Mapping[str, Any]) -> int:
    base = _seed004_lstm(h)
    u, s = int(h["hidden"]), int(h["stack_size"])
    return base + u * 3 + 3 + u * s + s


def _seed004_stack_rnn_why(h: Mapping[str, Any]) -> list[str]:
    u, s = h["hidden"], h["stack_size"]
    return _seed004_lstm_why(h) + [
        f"it leaves out that the stack reading ({s}) is fed into the controller's first layer: 4 x hidden x stack_size "
        f"= {4 * u * s:,} more input weights"
    ]


SEED_FORMULAS: Mapping[str, SeedFormula] = {
    "rau-lstm-lm": SeedFormula("seed 004 calculate_lstm_params", _seed004_lstm, _seed004_lstm_why),
    "rau-transformer-lm": SeedFormula(
        "seed 004 calculate_transformer_params", _seed004_transformer, _seed004_transformer_why
    ),
    "rau-stack-rnn": SeedFormula("seed 004 calculate_stack_rnn_params", _seed004_stack_rnn, _seed004_stack_rnn_why),
}


def seed_difference(arch_name: str, hyper: Mapping[str, Any], real: int) -> tuple[str, int, list[str]] | None:
    """(seed formula label, its count, explanations) where a seed's formula for this architecture disagrees."""
    entry = SEED_FORMULAS.get(arch_name)
    if entry is None:
        return None
    if arch_name == "rau-stack-rnn" and hyper.get("controller") != "lstm":
        return None
    seed_count = entry.formula(hyper)
    if seed_count == real:
        return None
    return entry.seed, seed_count, entry.explain(hyper)
