"""The analytic commands: `inspector formula`, `inspector budget`, `inspector compare` (CLI layer: prints)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence

from inspector.architectures import Architecture, build, count, definitions, parse_spec
from inspector.budget import compare, search
from inspector.errors import SpecError
from inspector.seeds import seed_difference

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise SpecError(f"{self.prog}: {message}")


def _table(rows: list[list[Any]], headers: list[str]) -> str:
    from tabulate import tabulate  # type: ignore[import-untyped]

    return str(tabulate(rows, headers=headers, disable_numparse=True))


def formula_dict(arch: Architecture) -> dict[str, Any]:
    total, rows = count(arch)
    out: dict[str, Any] = {
        "architecture": {"name": arch.name, "hyperparameters": dict(arch.hyperparameters)},
        "total": total,
        "layers": [{"layer": n, "kind": k, "params": b, "total": sum(b.values())} for n, k, b in rows],
        "notes": list(arch.notes),
    }
    diff = seed_difference(arch.name, arch.hyperparameters, total)
    if diff:
        out["seed_formula"] = {"source": diff[0], "total": diff[1], "missed": diff[2]}
    return out


def _formula_text(doc: dict[str, Any]) -> str:
    a = doc["architecture"]
    hyper = " ".join(f"{k}={v}" for k, v in a["hyperparameters"].items())
    rows = [
        [r["layer"], r["kind"], ", ".join(f"{k} {v:,}" for k, v in r["params"].items()), f"{r['total']:,}"]
        for r in doc["layers"]
    ]
    lines = [f"{a['name']} {hyper}", _table(rows, ["layer", "kind", "parameters", "total"]), f"total {doc['total']:,}"]
    lines += [f"note: {n}" for n in doc["notes"]]
    if "seed_formula" in doc:
        s = doc["seed_formula"]
        lines.append(f"{s['source']} gives {s['total']:,}, {s['total'] - doc['total']:+,} against the real count:")
        lines += [f"  - {m}" for m in s["missed"]]
    return "\n".join(lines)


def _list_text() -> str:
    lines = []
    for d in definitions().values():
        lines.append(f"{d.name}: {d.description}")
        lines += [f"    {w.name}={_show(w.default)}  {w.help}" for w in d.words]
    lines.append('or a Keras layer list, e.g. "Input(100) Embedding(10000,100) Flatten Dense(32) Dense(1)"')
    return "\n".join(lines)


def _show(value: Any) -> str:
    if value is None:  # (a word left unset: derived)
        return "unset"
    return ":".join(map(str, value)) if isinstance(value, tuple) else str(value)


def _run(func: Callable[[Sequence[str]], str]) -> Callable[[Sequence[str]], int]:
    def command(argv: Sequence[str]) -> int:
        try:
            print(func(argv))
        except SpecError as exc:
            print(f"inspector: {exc}", file=sys.stderr)
            return 2
        return 0

    return command


def _formula(argv: Sequence[str]) -> str:
    p = _Parser(prog="inspector formula", description="The analytic parameter count of an architecture.")
    p.add_argument("spec", nargs="*", help="NAME key=value ... or a Keras layer list")
    p.add_argument("--list", action="store_true", help="list the named architectures and their words")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if args.list:
        if args.json:
            return json.dumps({d.name: {w.name: _show(w.default) for w in d.words} for d in definitions().values()})
        return _list_text()
    if not args.spec:
        raise SpecError("inspector formula: give an architecture spec, or --list")
    doc = formula_dict(parse_spec(" ".join(args.spec)))
    return json.dumps(doc, indent=2) if args.json else _formula_text(doc)


def _words(items: Sequence[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq:
            raise SpecError(f"expected key=value, got {item!r}")
        out[key] = value
    return out


def _budget(argv: Sequence[str]) -> str:
    p = _Parser(prog="inspector budget", description="Hyperparameter values whose count comes closest to a budget.")
    p.add_argument("arch", choices=list(definitions()))
    p.add_argument("words", nargs="*", help="fixed key=value words")
    p.add_argument("--params", type=int, required=True, help="the parameter budget")
    p.add_argument("--vary", required=True, help="the integer word to vary")
    p.add_argument("--range", default="1:4096", help="LOW:HIGH[:STEP] of the varied word")
    p.add_argument("--scale", action="append", default=[], help="WORD=K ties WORD to K x the varied word")
    p.add_argument("--keep", type=int, default=3)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    try:
        bounds = [int(x) for x in args.range.split(":")]
        scale = {k: int(v) for k, v in _words(args.scale).items()}
    except ValueError as exc:
        raise SpecError(f"inspector budget: {exc}") from exc
    low, high, step = (bounds + [1])[:3] if len(bounds) >= 2 else (1, bounds[0], 1)
    under, over = search(args.arch, args.params, args.vary, _words(args.words), low, high, step, scale, args.keep)
    if args.json:
        return json.dumps(
            {
                side: [
                    {
                        args.vary: c.value,
                        "total": c.total,
                        "difference": c.total - args.params,
                        "hyperparameters": dict(c.architecture.hyperparameters),
                    }
                    for c in cands
                ]
                for side, cands in (("under", under), ("over", over))
            },
            indent=2,
        )
    rows = [
        [side, c.value, f"{c.total:,}", f"{c.total - args.params:+,}"]
        for side, cands in (("under", under), ("over", over))
        for c in cands
    ]
    return f"{args.arch}: budget {args.params:,}\n" + _table(rows, ["side", args.vary, "parameters", "difference"])


def _compare(argv: Sequence[str]) -> str:
    p = _Parser(prog="inspector compare", description="Several architectures' counts side by side.")
    p.add_argument("specs", nargs="+", help="each spec quoted as one argument")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    rows = compare(args.specs)
    if args.json:
        return json.dumps(
            [{"spec": s, "architecture": a.name, "total": t, "ratio_to_first": r} for s, a, t, r in rows], indent=2
        )
    return _table(
        [[s, a.name, f"{t:,}", repr(r)] for s, a, t, r in rows], ["spec", "architecture", "parameters", "x first"]
    )


COMMANDS: Mapping[str, Callable[[Sequence[str]], int]] = {
    "formula": _run(_formula),
    "budget": _run(_budget),
    "compare": _run(_compare),
}

__all__ = ["COMMANDS", "build", "formula_dict"]
