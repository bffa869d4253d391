"""`inspector diff` and `--data` results to text and JSON strings (pure; names escaped for the terminal)."""

from __future__ import annotations

import json
import math

from inspector.diff import Diff, totals
from inspector.records import SCHEMA_VERSION
from inspector.render import safe

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from inspector.records import Checkpoint
    from inspector.values import DataReport, TensorStats, ValueComparison

MAX_TEXT_ROWS = 500  # the JSON always has every row


def _table(rows: list[list[Any]], headers: list[str]) -> str:
    from tabulate import tabulate  # type: ignore[import-untyped]

    return str(tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True))


def _num(x: float | None) -> float | str | None:
    """JSON has no NaN or infinity: those become strings."""
    return x if x is None or math.isfinite(x) else str(x)


def _g(x: float | None) -> str:
    return "" if x is None else f"{x:.6g}"


# -- diff -------------------------------------------------------------------------------------------------


def _side(c: Checkpoint, t: dict[str, Any]) -> dict[str, Any]:
    return {"path": c.path, "format": c.format, **t}


def _value_json(v: ValueComparison) -> dict[str, Any]:
    return {"a": v.a, "b": v.b, "equal": v.equal, "within_tolerance": v.within, "max_abs": _num(v.max_abs),
            "max_rel": _num(v.max_rel), "n_differ": v.n_differ, "sha256_a": v.sha256_a, "sha256_b": v.sha256_b,
            "skipped": v.skipped, "dequantized": v.dequantized}  # fmt: skip


def diff_dict(d: Diff) -> dict[str, Any]:
    """The JSON document of a diff (schema in README, section "Comparing two checkpoints")."""
    t = totals(d)
    out: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "same": d.same,
        "verdict": d.verdict,
        "a": _side(d.a, t["a"]),
        "b": _side(d.b, t["b"]),
        "counts": t["differences"],
        "differences": [
            {"kind": x.kind.value, "a": x.a, "b": x.b, "layer": x.layer, "expected": x.expected, "message": x.message,
             **{k: _num(v) if isinstance(v, float) else v for k, v in x.details.items()}}
            for x in d.differences
        ],
        "pairs": [
            {"a": p.a.name, "b": p.b.name, "how": p.how, "permutation": list(p.perm) if p.perm else None}
            for p in d.pairs
        ],
    }  # fmt: skip
    if d.values is not None:
        out["tolerance"] = d.tolerance
        out["values"] = [_value_json(v) for v in d.values]
    return out


def _headline(d: Diff) -> str:
    counts = totals(d)["differences"]
    listed = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    if d.verdict == "same":
        return f"same: the {len(d.pairs):,} tensors match" + (" (values compared)" if d.values is not None else "")
    lost = sum(1 for x in d.differences if not x.expected)
    if d.verdict == "equivalent":
        return f"equivalent: nothing lost or changed; {_plural(len(d.differences), 'expected difference')} ({listed})"
    return f"different: {_plural(lost, 'difference')} {'changes' if lost == 1 else 'change'} the model ({listed})"


def _plural(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _values_line(d: Diff) -> str | None:
    if d.values is None:
        return None
    equal = sum(1 for v in d.values if v.equal)
    within = sum(1 for v in d.values if v.within and not v.equal)
    dequantized = [v for v in d.values if v.dequantized and not v.skipped]
    differ = sum(1 for v in d.values if not v.within and not v.skipped and not v.dequantized)
    skipped = sum(1 for v in d.values if v.skipped)
    worst = max((v.max_rel for v in d.values if not v.skipped and not v.dequantized), default=0.0)
    line = (f"values: {equal:,} pairs equal, {within:,} within tolerance {d.tolerance:g} (or the dtype's rounding), "
            f"{differ:,} differ, {skipped:,} not compared; largest relative difference {worst:.3g}")  # fmt: skip
    if dequantized:
        error = max(v.max_rel for v in dequantized)
        line += (f"; {len(dequantized):,} quantized weights dequantized, largest error {error:.3g} of a weight's "
                 "largest magnitude")  # fmt: skip
    return line


def render_diff_text(d: Diff) -> str:
    """Verdict on the first line, then both files, the differences grouped by layer, and totals."""
    t = totals(d)
    lines = [_headline(d)]
    for side, c in (("A", d.a), ("B", d.b)):
        s = t[side.lower()]
        lines.append(f"  {side}  {safe(c.path)}  ({c.format}, {s['tensors']:,} tensors, "
                     f"{s['parameters']:,} parameters)")  # fmt: skip
    how: dict[str, int] = {}
    for p in d.pairs:
        how[p.how] = how.get(p.how, 0) + 1
    lines.append(f"  matched {_plural(len(d.pairs), 'pair')}" + "".join(f", {n:,} by {h}" for h, n in how.items()))
    values = _values_line(d)
    if values:
        lines.append("  " + values)
    if d.differences:
        rows = []
        previous = None
        ordered = sorted(d.differences, key=lambda x: (x.layer, x.kind.value))
        for x in ordered[:MAX_TEXT_ROWS]:
            layer = safe(x.layer or "(top level)")
            rows.append([layer if layer != previous else "", x.kind.value, "" if x.expected else "!",
                         safe(x.a or "-"), safe(x.b or "-"), safe(x.message)])  # fmt: skip
            previous = layer
        lines += ["", _table(rows, ["layer", "difference", "loss", "A", "B", "detail"])]
        if len(ordered) > MAX_TEXT_ROWS:
            lines.append(f"... {len(ordered) - MAX_TEXT_ROWS:,} more differences (see --json)")
    a, b = t["a"], t["b"]
    rows = [[label, f"{a[key]:,}", f"{b[key]:,}", f"{b[key] - a[key]:+,}"]
            for label, key in (("tensors", "tensors"), ("elements", "elements"), ("parameters", "parameters"),
                               ("tensor bytes", "tensor_bytes"), ("file bytes", "file_bytes"))]  # fmt: skip
    lines += ["", _table(rows, ["totals", "A", "B", "B - A"])]
    return "\n".join(lines)


def render_diff_json(d: Diff) -> str:
    return json.dumps(diff_dict(d), indent=2)


# -- inspector FILE --data --------------------------------------------------------------------------------


def _stats_json(s: TensorStats) -> dict[str, Any]:
    return {"name": s.name, "dtype": s.dtype, "n": s.n, "min": _num(s.min), "max": _num(s.max),
            "mean": _num(s.mean), "std": _num(s.std), "zeros": s.zeros, "nan": s.nan, "inf": s.inf,
            "sha256": s.sha256 or None, "alias_of": s.alias_of, "skipped": s.skipped,
            "stored_as": s.stored_as}  # fmt: skip


def data_dict(r: DataReport) -> dict[str, Any]:
    """The ``data`` member of `inspector FILE --data --json`."""
    return {
        "bytes_read": r.bytes_read,
        "tensors": [_stats_json(s) for s in r.stats],
        "identical": [list(g) for g in r.identical],
        "zeroed": list(r.zeroed),
    }


def render_data_text(r: DataReport) -> str:
    rows = []
    for s in r.stats[:MAX_TEXT_ROWS]:
        note = f"= {s.alias_of} (shared storage)" if s.alias_of else s.skipped or ("all zeros" if s.all_zero else "")
        note = f"as stored, {s.stored_as}" + (f"; {note}" if note else "") if s.stored_as else note
        rows.append([safe(s.name), s.dtype, _g(s.min), _g(s.max), _g(s.mean), _g(s.std), f"{s.zeros:,}",
                     f"{s.nan:,}", f"{s.inf:,}", s.sha256[:16], safe(note)])  # fmt: skip
    headers = ["tensor", "dtype", "min", "max", "mean", "std", "zeros", "NaN", "Inf", "sha256", "note"]
    lines = [f"Values ({r.bytes_read:,} bytes streamed)", _table(rows, headers)]
    if len(r.stats) > MAX_TEXT_ROWS:
        lines.append(f"... {len(r.stats) - MAX_TEXT_ROWS:,} more tensors (see --json)")
    for group in r.identical:
        lines.append("identical content (stored more than once): " + " = ".join(safe(n) for n in group))
    if r.zeroed:
        lines.append("all zeros: " + ", ".join(safe(n) for n in r.zeroed))
    return "\n".join(lines)
