"""Budget search and side-by-side comparison of architectures (pure functions)."""

from __future__ import annotations

from collections.abc import Mapping

from inspector.architectures import Architecture, build, count, parse_spec
from inspector.errors import SpecError
from inspector.recordtype import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_STEPS = 100_000


@record(frozen=True)
class Candidate:
    value: int
    total: int
    architecture: Architecture

    def distance(self, budget: int) -> int:
        return abs(self.total - budget)


def search(
    name: str,
    budget: int,
    vary: str,
    fixed: Mapping[str, Any],
    low: int = 1,
    high: int = 4096,
    step: int = 1,
    scale: Mapping[str, int] | None = None,
    keep: int = 3,
) -> tuple[list[Candidate], list[Candidate]]:
    """The `keep` configurations just under (or at) the budget and just over it, varying one word.

    `scale` ties other words to the varied one (e.g. {"feedforward": 4} sets feedforward = 4 x d_model).

    Raises:
        SpecError: bad architecture, words or range.
    """
    # (a range may start at 0: many words read 0 as "derived", e.g. llama's kv_heads=0 is kv_heads=heads; a value
    # the architecture refuses is stepped over as below)
    if budget <= 0 or low < 0 or high < low or step <= 0 or (high - low) // step > MAX_STEPS:
        raise SpecError("need a positive budget and a range 0 <= low <= high of at most 100,000 steps")
    under: list[Candidate] = []
    over: list[Candidate] = []
    for value in range(low, high + 1, step):
        words = dict(fixed) | {vary: value} | {k: m * value for k, m in (scale or {}).items()}
        try:
            arch = build(name, **words)
        except SpecError as exc:
            if "unknown" in str(exc):
                raise
            continue  # a value the architecture cannot take (e.g. an odd hidden size for a bidirectional split)
        total, _ = count(arch)
        (under if total <= budget else over).append(Candidate(value, total, arch))
    under.sort(key=lambda c: c.distance(budget))
    over.sort(key=lambda c: c.distance(budget))
    return under[:keep], over[:keep]


def compare(specs: list[str]) -> list[tuple[str, Architecture, int, float]]:
    """(spec, architecture, total, ratio to the first) for each spec."""
    rows = []
    first = None
    for spec in specs:
        arch = parse_spec(spec)
        total, _ = count(arch)
        first = first or total
        rows.append((spec, arch, total, total / first))
    return rows
