"""`inspector diff A B [--json] [--data] [--map RULE] [--tolerance T]` (CLI layer: parses, prints, exits).

Exit status: 0 same (only expected differences, values within tolerance); 1 differences; 2 a file cannot
be read or bad usage; 3 a file holds unsafe content (reported, never run; the diff is still printed).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence

from inspector.errors import InputError, InspectorError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

    from inspector.records import Checkpoint
    from inspector.values import DataReport

EXIT_SAME, EXIT_DIFFERENT, EXIT_UNREADABLE, EXIT_UNSAFE = 0, 1, 2, 3
UNSAFE = "UNSAFE_CONTENT"


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{self.prog}: {message}")


def _tolerance(text: str) -> float:
    value = float(text)
    if not value >= 0:  # also refuses NaN
        raise argparse.ArgumentTypeError(f"tolerance must be a number >= 0, not {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="inspector diff", description="Did a conversion lose anything? Compare two checkpoints.")
    p.add_argument("a", metavar="A", help="a checkpoint file, shard index or folder holding one checkpoint")
    p.add_argument("b", metavar="B", help="the checkpoint to compare it with, in any supported format")
    p.add_argument("--json", action="store_true", help="one JSON object (schema in the README)")
    p.add_argument("--data", action="store_true", help="also compare values, streamed in bounded memory")
    p.add_argument("--map", action="append", default=[], metavar="RULE",
                   help="FROM=TO regex rewriting A's names into B's (repeatable; or a file of such lines)")  # fmt: skip
    p.add_argument("--tolerance", type=_tolerance, default=0.0, metavar="T",
                   help="with --data: values equal when |a-b| <= T*max(1,|a|,|b|) (default 0: exact)")  # fmt: skip
    p.add_argument("--html", metavar="OUT", help="also write a self-contained HTML page of the comparison")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    return p


def resolve(path: str) -> str:
    """A folder stands for the single checkpoint in it (a sharded model's index counts once).

    Raises:
        InputError: the folder holds no checkpoint or several.
    """
    if not os.path.isdir(path):
        return path
    from inspector.audit import NOT_RECOGNISED, find_checkpoints

    found = [p for p, fmt in find_checkpoints([path]) if not fmt.startswith("error") and fmt != NOT_RECOGNISED]
    if len(found) != 1:
        names = ", ".join(os.path.relpath(p, path) for p in found[:5])
        raise InputError(path, f"folder holds {len(found)} checkpoints{': ' + names if names else ''}; name one")
    return found[0]


def _map_lines(rules: Sequence[str]) -> list[str]:
    out = []
    for rule in rules:
        if os.path.isfile(rule):
            with open(rule, encoding="utf-8") as fh:
                out += [line.strip() for line in fh if line.strip() and not line.lstrip().startswith("#")]
        else:
            out.append(rule)
    return out


def _unsafe(ckpt: Checkpoint) -> list[str]:
    return [f"inspector: {ckpt.path}: unsafe content, not run: {f.message}" for f in ckpt.findings if f.code == UNSAFE]


def diff_command(argv: Sequence[str]) -> int:
    try:
        args = _parser().parse_args(list(argv))
    except _UsageError as exc:
        print(exc, file=sys.stderr)
        return EXIT_UNREADABLE
    from inspector.diff import diff, match, parse_map_rules
    from inspector.registry import load
    from inspector.render_diff import render_diff_json, render_diff_text

    try:
        rules = parse_map_rules(_map_lines(args.map))
        a, b = load(resolve(args.a)), load(resolve(args.b))
        pairs = match(a, b, rules)
        values = None
        if args.data:
            from inspector.values import compare_pairs

            values = compare_pairs(a, b, [(p.a, p.b, p.perm) for p in pairs], args.tolerance)
        result = diff(a, b, pairs, values, args.tolerance)
    except Exception as exc:  # one line, never a traceback (unless --debug)
        if args.debug:
            traceback.print_exc()
        message = str(exc) if isinstance(exc, InspectorError) else f"internal error: {type(exc).__name__}: {exc}"
        print(f"inspector diff: {message}", file=sys.stderr)
        return EXIT_UNREADABLE
    try:
        print(render_diff_json(result) if args.json else render_diff_text(result))
        sys.stdout.flush()
    except BrokenPipeError:  # the reader (head, less) went away: not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    written = 0
    if args.html:
        from inspector.cli import write_html
        from inspector.render_diff import diff_dict
        from inspector.render_html import diff_html

        inspected = [path for ckpt in (a, b) for path, _ in ckpt.files]
        written = write_html(args.html, lambda: diff_html(diff_dict(result)), inspected)
    unsafe = _unsafe(a) + _unsafe(b)
    for line in unsafe:
        print(line, file=sys.stderr)
    if unsafe:
        return EXIT_UNSAFE
    if written:
        return written
    return EXIT_SAME if result.same else EXIT_DIFFERENT


def data_or_none(ckpt: Checkpoint, debug: bool = False) -> DataReport | None:
    """`inspector FILE --data`: the streamed statistics, or None after one line on stderr when values are unreadable."""
    from inspector.values import data_report

    try:
        return data_report(ckpt)
    except Exception as exc:  # the header report is still printed; the exit status says the values failed
        if debug:
            traceback.print_exc()
        message = str(exc) if isinstance(exc, InspectorError) else f"{ckpt.path}: internal error: {exc!r}"
        print(f"inspector: values: {message}", file=sys.stderr)
        return None
