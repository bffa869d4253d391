"""Auditing a folder: every checkpoint below some paths, found by content, one row per model.

Files are recognised by the same content claims as `inspector FILE` (a file no loader claims is not a
checkpoint and is skipped; a file a loader claims but cannot read is a row with its error). The shards of
a sharded safetensors checkpoint are one row, under their index. Files are read in parallel processes.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass

from inspector.errors import InspectorError
from inspector.probe import Probe
from inspector.records import SEVERITY_ORDER, TensorKind
from inspector.registry import detect_probe

MAX_FILES = 1_000_000
INLINE_BELOW = 4  # fewer files than this are read in this process: a pool costs more than it saves


@dataclass(frozen=True, slots=True)
class AuditRow:
    path: str
    format: str
    framework: str
    parameters: int
    dtype: str
    file_bytes: int
    unexplained_bytes: int  # file bytes that are not unique parameter data
    n_findings: int
    worst: str  # the most severe finding's severity, or ""
    error: str | None = None


def _files(paths: Sequence[str]) -> Iterator[str]:
    for path in paths:
        if os.path.isdir(path):
            for folder, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    full = os.path.join(folder, name)
                    if not name.startswith(".") and os.path.isfile(full) and not os.path.islink(full):
                        yield full
        else:
            yield path


def find_checkpoints(paths: Sequence[str]) -> list[tuple[str, str]]:
    """(path, format) of every file a loader claims; shards listed in a sibling index are left to the index.

    A file no loader claims is skipped, unless it was named explicitly or carries a checkpoint extension
    (then it is kept, and its row will carry the error).
    """
    from inspector.registry import loaders

    extensions = {ext for cls in loaders().values() for ext in cls.extensions if ext != ".json"}
    found: list[tuple[str, str]] = []
    for n, path in enumerate(_files(paths)):
        if n >= MAX_FILES:
            break
        try:
            with Probe(path) as probe:
                found.append((path, detect_probe(probe).name))
        except InspectorError as exc:
            if path in paths or os.path.splitext(path)[1].lower() in extensions:
                found.append((path, f"error: {exc}"))
    indexed: set[str] = set()
    for path, fmt in found:
        if fmt == "safetensors-sharded":
            indexed |= _shards_of(path)
    return [(p, f) for p, f in found if os.path.abspath(p) not in indexed]


def _shards_of(index_path: str) -> set[str]:
    import json

    try:
        with open(index_path, "rb") as fh:
            weight_map = json.loads(fh.read(64 << 20)).get("weight_map", {})
    except (OSError, ValueError, AttributeError):
        return set()
    folder = os.path.dirname(os.path.abspath(index_path))
    return {os.path.join(folder, str(shard)) for shard in set(weight_map.values())}


def row(path: str) -> AuditRow:
    """The audit row of one file (errors become rows, never exceptions)."""
    from inspector.report import inspect

    try:
        report = inspect(path)
    except Exception as exc:  # one bad file is a row, never a stop
        message = str(exc) if isinstance(exc, InspectorError) else f"internal error: {type(exc).__name__}: {exc}"
        size = os.path.getsize(path) if os.path.isfile(path) else 0
        return AuditRow(path, "", "", 0, "", size, size, 0, "", message)
    ckpt = report.checkpoint
    params = ckpt.unique(TensorKind.PARAMETER)
    weights: Counter[str] = Counter()
    for t in params:
        weights[t.dtype] += t.nbytes
    total = sum(weights.values())
    dtype = weights.most_common(1)[0][0] if weights else "-"
    if len(weights) > 1 and weights[dtype] < 0.9 * total:
        dtype = "mixed"
    worst = max((f.severity for f in report.findings), key=lambda s: SEVERITY_ORDER[s], default=None)
    return AuditRow(path, ckpt.format, ckpt.framework, ckpt.n_parameters, dtype, ckpt.file_size,
                    ckpt.file_size - report.accounting.parameter_bytes, len(report.findings),
                    worst.value if worst else "")  # fmt: skip


def audit(
    paths: Sequence[str], jobs: int | None = None, on_progress: Callable[[int, int], None] | None = None
) -> list[AuditRow]:
    """One row per checkpoint below `paths`, in path order."""
    candidates = [p for p, fmt in find_checkpoints(paths)]
    jobs = jobs or os.cpu_count() or 1
    rows: list[AuditRow] = []
    if jobs <= 1 or len(candidates) < INLINE_BELOW:
        for i, path in enumerate(candidates):
            rows.append(row(path))
            if on_progress:
                on_progress(i + 1, len(candidates))
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(row, p) for p in candidates]
            for i, future in enumerate(as_completed(futures)):
                rows.append(future.result())
                if on_progress:
                    on_progress(i + 1, len(candidates))
    return sorted(rows, key=lambda r: r.path)
