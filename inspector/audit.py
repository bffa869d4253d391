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
from contextlib import contextmanager

from inspector.enumtype import StrEnum
from inspector.errors import InputError, InspectorError, MissingDependencyError, UnknownFormatError
from inspector.jsontext import loads
from inspector.probe import Probe, is_url
from inspector.records import SEVERITY_ORDER, TensorKind
from inspector.recordtype import record
from inspector.registry import detect_probe

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    Mapper = Callable[[Callable[[Any], Any], Sequence[Any]], Iterator[Any]]

MAX_FILES = 1_000_000
INLINE_BELOW = 4  # fewer files than this are read in this process: a pool costs more than it saves
DASK_CONNECT_S = 30
MAX_INDEX_BYTES = 64 << 20
SHARDED = "safetensors-sharded"
UNREADABLE_PREFIX = "error: "
NOT_RECOGNISED = "not recognised"


class Status(StrEnum):
    """What became of one file of an audit."""

    OK = "ok"  # read; its findings are in the row
    UNSAFE = "unsafe"  # read, and it holds content that would run code (never run)
    UNREADABLE = "unreadable"  # claimed (or named, or with a checkpoint extension) but it cannot be read
    NOT_RECOGNISED = "not recognised"  # no loader claims it: not a checkpoint


@record(frozen=True, slots=True)
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
            from inspector.registry import member_entry

            seen: set[str] = set()
            for folder, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    full = os.path.join(folder, name)
                    if not name.startswith(".") and os.path.isfile(full) and not os.path.islink(full):
                        # one row per multi-file checkpoint: a TF data shard or a DCP .distcp stands for its entry
                        entry = member_entry(full) or full
                        if entry not in seen:
                            seen.add(entry)
                            yield entry
        else:
            yield path


def _key(path: str) -> str:
    return path if is_url(path) else os.path.abspath(path)


@record(frozen=True, slots=True)
class Sniffed:
    """What one file is, from its head: the first pass of an audit."""

    path: str
    format: str  # a loader name, "error: ..." (it cannot be read), or "not recognised"
    size: int  # -1 when unknown
    shards: frozenset[str] = frozenset()  # an index's shard files (as `_key` gives them): left to it


def sniff(path: str, named: bool = False) -> Sniffed:
    """Sniff one file (here, in a worker process or on a Dask worker).

    A file no loader claims is "not recognised", or unreadable when it was `named` (given explicitly) or has a
    checkpoint extension: it was meant to be one.

    Raises:
        MissingDependencyError: the file is behind a URL and fsspec (or its protocol's package) is missing.
    """
    try:
        with Probe(path) as probe:
            fmt = detect_probe(probe).name
            return Sniffed(path, fmt, probe.size, _shards_of(probe) if fmt == SHARDED else frozenset())
    except UnknownFormatError as exc:
        meant = named or _checkpoint_extension(path)
        return Sniffed(path, f"{UNREADABLE_PREFIX}{exc}" if meant else NOT_RECOGNISED, exc.size)
    except MissingDependencyError:
        raise  # every remote file would fail the same way: one error, not a row each
    except InspectorError as exc:
        return Sniffed(path, f"{UNREADABLE_PREFIX}{exc}", -1)


def _sniff_item(item: tuple[str, bool]) -> Sniffed:
    return sniff(*item)


def _shards_of(index: Probe) -> frozenset[str]:
    try:
        weight_map = loads(index.read_at(0, min(index.size, MAX_INDEX_BYTES))).get("weight_map", {})
        names = {str(shard) for shard in weight_map.values()}
    except (InspectorError, ValueError, AttributeError):
        return frozenset()
    if is_url(index.path):
        base = index.path.split("?", 1)[0].rsplit("/", 1)[0]
        return frozenset(f"{base}/{name}" for name in names)
    return frozenset(os.path.join(os.path.dirname(_key(index.path)), name) for name in names)


def _checkpoint_extension(path: str) -> bool:
    """Whether the file's extension is one a loader reads (`.json` aside). Every loader's module is imported: asked
    only of a file no loader claims."""
    from inspector.registry import loaders

    ext = os.path.splitext(path.split("?")[0])[1].lower()
    return ext != ".json" and any(ext in cls.extensions for cls in loaders().values())


def _items(paths: Sequence[str]) -> list[tuple[str, bool]]:
    """(path, named) of every file below `paths`: named when given explicitly."""
    items = []
    for n, path in enumerate(_files(paths)):
        if n >= MAX_FILES:
            break
        items.append((path, path in paths))
    return items


def _grouped(found: Sequence[Sniffed]) -> list[Sniffed]:
    """In path order, without the shards an index found beside it stands for."""
    indexed = frozenset().union(*(s.shards for s in found))
    return sorted((s for s in found if _key(s.path) not in indexed), key=lambda s: s.path)


def find_checkpoints(paths: Sequence[str]) -> list[tuple[str, str]]:
    """(path, format) of every file below `paths` (see `sniff`); shards listed in an index are left to it."""
    return [(s.path, s.format) for s in _grouped([_sniff_item(item) for item in _items(paths)])]


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


def _failed(path: str, message: str | None, status: Status, size: int = -1) -> AuditRow:
    if size < 0:
        size = os.path.getsize(path) if not is_url(path) and os.path.isfile(path) else 0
    return AuditRow(path, "", "", 0, "", size, size, 0, "", message, status.value)


def _settled(s: Sniffed) -> AuditRow | None:
    """The row of a file sniffing already settled, or None when it must be read."""
    if s.format == NOT_RECOGNISED:
        return _failed(s.path, None, Status.NOT_RECOGNISED, s.size)  # not a checkpoint: no error
    if s.format.startswith(UNREADABLE_PREFIX):
        return _failed(s.path, s.format.removeprefix(UNREADABLE_PREFIX), Status.UNREADABLE, s.size)
    return None


def audit(
    paths: Sequence[str],
    jobs: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    dask: str | None = None,
) -> list[AuditRow]:
    """One row per file below `paths`, in path order.

    Two passes, each run here, in a process pool or on a Dask cluster: every file is sniffed (so an index
    can claim its shards), then every checkpoint is read.

    Args:
        paths: folders, URL prefixes or files.
        jobs: parallel worker processes (default: one per CPU; with `dask="local"`, the cluster's workers).
        on_progress: called with (done, total) after each file of either pass (total = files + checkpoints).
        dask: a Dask scheduler address, or "local" for a LocalCluster on this machine.

    Raises:
        MissingDependencyError: `dask` is given and dask.distributed is not installed.
        InputError: the Dask scheduler cannot be reached, or a URL prefix cannot be listed.
    """
    items = _items(paths)
    found: list[Sniffed] = []
    rows: list[AuditRow] = []
    with _mapper(jobs, dask, len(items)) as run:
        for s in run(_sniff_item, items):
            found.append(s)
            if on_progress:
                on_progress(len(found), len(items))
        to_read = []
        for s in _grouped(found):
            settled = _settled(s)
            if settled is None:
                to_read.append(s.path)
            else:
                rows.append(settled)
        for done, r in enumerate(run(row, to_read), start=len(items) + 1):
            rows.append(r)
            if on_progress:
                on_progress(done, len(items) + len(to_read))
    return sorted(rows, key=lambda r: r.path)


@contextmanager
def _mapper(jobs: int | None, dask: str | None, n: int) -> Iterator[Mapper]:
    """A function mapping `fn` over items and yielding results as they complete: here, in a process pool,
    or on a Dask cluster (connected once for both passes)."""
    if dask:
        with _dask_client(dask, jobs) as (distributed, client):
            yield lambda fn, items: (f.result() for f in distributed.as_completed(client.map(fn, items, pure=False)))
        return
    jobs = jobs or os.cpu_count() or 1
    if jobs <= 1 or n < INLINE_BELOW:
        yield lambda fn, items: map(fn, items)
        return
    from concurrent.futures import ProcessPoolExecutor, as_completed  # (with multiprocessing: ~20 ms of imports)

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        yield lambda fn, items: (f.result() for f in as_completed([pool.submit(fn, i) for i in items]))


@contextmanager
def _dask_client(address: str, jobs: int | None) -> Iterator[tuple[Any, Any]]:
    """(the distributed module, a client of the cluster at `address` or of a new LocalCluster)."""
    try:
        import distributed
    except ImportError as exc:
        raise MissingDependencyError("dask.distributed", "checkpoint-inspector[fleet]") from exc
    dist: Any = distributed  # untyped library
    cluster = None
    try:
        if address == "local":
            workers = jobs or os.cpu_count() or 1
            cluster = dist.LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None)
            client = dist.Client(cluster)
        else:
            client = dist.Client(address, timeout=DASK_CONNECT_S)
    except OSError as exc:  # refused, timed out, bad address
        raise InputError(address, f"cannot reach the Dask scheduler: {exc}"[:300]) from exc
    try:
        yield dist, client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
