"""What the sweeps share (bench/sweep_transformers.py, bench/sweep_vision.py): cases run in batches in child
processes, each printing one JSON line per case, so a case that crashes the interpreter costs only itself; and
what the inspector says of a file, reduced to the words a summary counts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

Row = dict[str, Any]


def run_batches(
    script: str, cases: list[Any], batch: int, argv: list[str], label: Callable[[Any], Row], limit: int = 300
) -> list[Row]:
    """Run `script --child JSON(cases) argv...` batch by batch; print each row (cut to `limit` characters) as it
    comes. When a child dies, its case is recorded as `not_built` (with `label(case)`) and the batch goes on after
    it."""
    results: list[Row] = []
    while cases:
        now, cases = cases[:batch], cases[batch:]
        proc = subprocess.run(
            [sys.executable, script, "--child", json.dumps(now), *argv],
            capture_output=True,
            text=True,
            env=os.environ | {"TOKENIZERS_PARALLELISM": "0"},
        )
        done = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        for row in done:
            print(json.dumps(row)[:limit], flush=True)
        results += done
        if len(done) < len(now):  # the child died on the next case: note it, go on after it
            results.append(label(now[len(done)]) | {"not_built": f"the process died (exit {proc.returncode})"})
            cases = now[len(done) + 1 :] + cases
    return results


def verdict(path: Any) -> Row:
    """The inspector on one file: its parameter count (and its trainable part) and buffer count, warnings (and
    `unsafe`), and the expectation it checked the file against (a family or the per-module one, from the config or
    inferred, and whether it matched)."""
    from inspector.records import TensorKind
    from inspector.report import inspect

    report = inspect(path)
    warnings = [f"{f.code}: {f.message}" for f in report.findings if f.severity.value != "info"]
    warnings += ["unsafe"] if report.unsafe else []
    buffers = sum(t.n_elements for t in report.checkpoint.unique(TensorKind.BUFFER))
    exp = report.expectation
    expected = f"{exp.architecture} ({exp.source}{'' if exp.matches else ', explained'})" if exp else None
    trainable = sum(t.n_elements for t in report.checkpoint.unique(TensorKind.PARAMETER) if t.trainable)
    return {
        "inspector": report.checkpoint.n_parameters,
        "trainable": trainable,
        "buffers": buffers,
        "warnings": warnings,
        "expectation": expected,
    }


def alarm(seconds: int) -> None:
    """A TimeoutError in this process after `seconds` (0: none pending)."""
    import signal

    def timeout(*_: object) -> None:
        raise TimeoutError(f"over {seconds} s")

    signal.signal(signal.SIGALRM, timeout)
    signal.alarm(seconds)
