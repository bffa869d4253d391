"""Auditing a folder or a bucket prefix: every file below some paths, found by content, one row each.

Files are recognised by the same content claims as `inspector FILE`. A file a loader claims is a row
with its counts (or with its error when it cannot be read); a file no loader claims is a row too, with
status "not recognised" (an unclaimed file with a checkpoint extension is "unreadable": it was meant to
be one). The shards of a sharded safetensors checkpoint are one row, under their index. Rows are read in
parallel processes here, or on a Dask cluster (`dask=ADDRESS` or "local"); the rows are the same.
A folder may be a URL prefix (``s3://bucket/models/``, or an HTTP folder ending with /).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from enum import StrEnum

from inspector.errors import InputError, InspectorError, MissingDependencyError, UnknownFormatError
from inspector.probe import Probe, is_url
from inspector.records import SEVERITY_ORDER, TensorKind
from inspector.registry import detect_probe

MAX_FILES = 1_000_000
INLINE_BELOW = 4  # fewer files than this are read in this process: a pool costs more than it saves
DASK_CONNECT_S = 30
UNREADABLE_PREFIX = "error: "
NOT_RECOGNISED = "not recognised"


class Status(StrEnum):
    """What became of one file of an audit."""

    OK = "ok"  # read; its findings are in the row
    UNSAFE = "unsafe"  # read, and it holds content that would run code (never run)
    UNREADABLE = "unreadable"  # claimed (or named, or with a checkpoint extension) but it cannot be read
    NOT_RECOGNISED = "not recognised"  # no loader claims it: not a checkpoint


@dataclass(frozen=True, slots=True)
class AuditRow:
    path: str
    format: str
    framework: str
    parameters: int
    dtype: str
    file_bytes: int
    unexplained_bytes: int  # the report's bytes.unexplained: bytes no structure explains
    n_findings: int
    worst: str  # the most severe finding's severity, or ""
    error: str | None = None
    status: str = Status.OK.value
    parameter_bytes: int = 0  # unique parameter bytes (logical)


def is_folder(path: str) -> bool:
    """Whether `path` is a folder (or a URL prefix) to audit rather than a file to inspect."""
    if is_url(path):
        from inspector.remote import is_folder as remote_is_folder

        return remote_is_folder(path)
    return os.path.isdir(path)


def _files(paths: Sequence[str]) -> Iterator[str]:
    for path in paths:
        if is_url(path) and is_folder(path):
            from inspector.remote import list_files

            yield from list_files(path, MAX_FILES)
        elif os.path.isdir(path):
            for folder, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    full = os.path.join(folder, name)
                    if not name.startswith(".") and os.path.isfile(full) and not os.path.islink(full):
                        yield full
        else:
            yield path


def _key(path: str) -> str:
    return path if is_url(path) else os.path.abspath(path)


def find_checkpoints(paths: Sequence[str]) -> list[tuple[str, str]]:
    """(path, format) of every file below `paths`; shards listed in a sibling index are left to the index.

    The format is a loader name, "error: ..." for a file that cannot be sniffed (missing, unreadable,
    or unclaimed but named explicitly or with a checkpoint extension), or "not recognised".
    """
    return [(path, fmt) for path, fmt, _ in _sniff(paths)]


def _sniff(paths: Sequence[str]) -> list[tuple[str, str, int]]:
    """(path, format, size) of every file below `paths`, shards left to their index (size -1: unknown)."""
    from inspector.registry import loaders

    extensions = {ext for cls in loaders().values() for ext in cls.extensions if ext != ".json"}
    found: list[tuple[str, str, int]] = []
    for n, path in enumerate(_files(paths)):
        if n >= MAX_FILES:
            break
        try:
            with Probe(path) as probe:
                size = probe.size
                found.append((path, detect_probe(probe).name, size))
        except UnknownFormatError as exc:
            named = path in paths or os.path.splitext(path.split("?")[0])[1].lower() in extensions
            found.append((path, f"{UNREADABLE_PREFIX}{exc}" if named else NOT_RECOGNISED, exc.size))
        except MissingDependencyError:
            raise  # every remote file would fail the same way: one error, not a row each
        except InspectorError as exc:
            found.append((path, f"{UNREADABLE_PREFIX}{exc}", -1))
    indexed: set[str] = set()
    for path, fmt, _ in found:
        if fmt == "safetensors-sharded":
            indexed |= _shards_of(path)
    return [item for item in found if _key(item[0]) not in indexed]


def _shards_of(index_path: str) -> set[str]:
    import json

    try:
        with Probe(index_path) as probe:
            weight_map = json.loads(probe.read_at(0, min(probe.size, 64 << 20))).get("weight_map", {})
            return {_key(probe.sibling(str(shard)).path) for shard in set(weight_map.values())}
    except (InspectorError, ValueError, AttributeError):
        return set()


def row(path: str) -> AuditRow:
    """The audit row of one file (errors become rows, never exceptions)."""
    from inspector.report import inspect

    try:
        report = inspect(path)
    except Exception as exc:  # one bad file is a row, never a stop
        message = str(exc) if isinstance(exc, InspectorError) else f"internal error: {type(exc).__name__}: {exc}"
        return _failed(path, message, Status.UNREADABLE)
    ckpt, acc = report.checkpoint, report.accounting
    params = ckpt.unique(TensorKind.PARAMETER)
    weights: Counter[str] = Counter()
    for t in params:
        weights[t.dtype] += t.nbytes
    total = sum(weights.values())
    dtype = weights.most_common(1)[0][0] if weights else "-"
    if len(weights) > 1 and weights[dtype] < 0.9 * total:
        dtype = "mixed"
    worst = max((f.severity for f in report.findings), key=lambda s: SEVERITY_ORDER[s], default=None)
    status = Status.UNSAFE if report.unsafe else Status.OK
    return AuditRow(path, ckpt.format, ckpt.framework, ckpt.n_parameters, dtype, ckpt.file_size, acc.unexplained,
                    len(report.findings), worst.value if worst else "", None, status.value,
                    acc.parameter_bytes)  # fmt: skip


def _failed(path: str, message: str, status: Status, size: int = -1) -> AuditRow:
    if size < 0:
        size = os.path.getsize(path) if not is_url(path) and os.path.isfile(path) else 0
    return AuditRow(path, "", "", 0, "", size, size, 0, "", message, status.value)


def _row_of(path: str, fmt: str, size: int) -> AuditRow | None:
    """The row of a file sniffing already settled, or None when it must be read."""
    if fmt == NOT_RECOGNISED:
        return _failed(path, NOT_RECOGNISED, Status.NOT_RECOGNISED, size)
    if fmt.startswith(UNREADABLE_PREFIX):
        return _failed(path, fmt.removeprefix(UNREADABLE_PREFIX), Status.UNREADABLE, size)
    return None


def audit(
    paths: Sequence[str],
    jobs: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    dask: str | None = None,
) -> list[AuditRow]:
    """One row per file below `paths`, in path order.

    Args:
        paths: folders, URL prefixes or files.
        jobs: parallel worker processes (default: one per CPU; with `dask="local"`, the cluster's workers).
        on_progress: called with (done, total) after each row.
        dask: a Dask scheduler address, or "local" for a LocalCluster on this machine.

    Raises:
        MissingDependencyError: `dask` is given and dask.distributed is not installed.
    """
    rows: list[AuditRow] = []
    to_read: list[str] = []
    for path, fmt, size in _sniff(paths):
        settled = _row_of(path, fmt, size)
        if settled is None:
            to_read.append(path)
        else:
            rows.append(settled)
    total = len(rows) + len(to_read)
    for done, r in enumerate(_read_rows(to_read, jobs, dask), start=len(rows) + 1):
        rows.append(r)
        if on_progress:
            on_progress(done, total)
    if on_progress and not to_read:
        on_progress(total, total)
    return sorted(rows, key=lambda r: r.path)


def _read_rows(paths: list[str], jobs: int | None, dask: str | None) -> Iterator[AuditRow]:
    """The rows of `paths` as they complete: here, in a process pool, or on a Dask cluster."""
    if dask:
        yield from _dask_rows(paths, jobs, dask)
        return
    jobs = jobs or os.cpu_count() or 1
    if jobs <= 1 or len(paths) < INLINE_BELOW:
        yield from map(row, paths)
        return
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(row, p) for p in paths]
        for future in as_completed(futures):
            yield future.result()


def _dask_rows(paths: list[str], jobs: int | None, address: str) -> Iterator[AuditRow]:
    try:
        from distributed import Client, LocalCluster
        from distributed import as_completed as dask_completed
    except ImportError as exc:
        raise MissingDependencyError("dask.distributed", "checkpoint-inspector[fleet]") from exc
    cluster = None
    try:
        if address == "local":
            cluster = LocalCluster(n_workers=jobs or os.cpu_count() or 1, threads_per_worker=1, dashboard_address=None)
            client = Client(cluster)
        else:
            client = Client(address, timeout=DASK_CONNECT_S)
    except OSError as exc:  # refused, timed out, bad address
        raise InputError(address, f"cannot reach the Dask scheduler: {exc}"[:300]) from exc
    try:
        futures = client.map(row, paths, pure=False)
        for future in dask_completed(futures):
            yield future.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
