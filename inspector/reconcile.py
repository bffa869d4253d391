"""Where the bytes go, and what the file size alone would suggest (issue 7). Pure: records in, records out.

Three comparisons:
1. every byte of every file is attributed to a bucket (tensor data split by tensor kind, headers,
   metadata, padding, compression, unreferenced and duplicate storage, HDF5's unaccounted residue);
2. the count the file size implies (bytes x 8 / bits, at the file's own dtype and at float32);
3. a walk from the file size to the real parameter count in labelled steps, each with its bytes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import compress, count, islice, repeat
from operator import eq, is_, itemgetter, lt, sub
from types import MappingProxyType

from inspector import dtypes
from inspector.records import (
    Checkpoint,
    Finding,
    Region,
    RegionKind,
    Severity,
    TensorInfo,
    TensorKind,
    region_column,
)
from inspector.recordtype import record

MB = 1_000_000
MIB = 1 << 20


@record(frozen=True, slots=True)
class Unreferenced:
    """How a framework's stored bytes that no tensor uses are said (the `unreferenced` bucket): the bucket's text, its
    step in the size walk, and the note on them (`{n}`: their bytes)."""

    bucket: str
    step: str
    note: str


TORCH_UNREFERENCED = Unreferenced(
    "stored but unreferenced (rest of a base storage saved for a view)",
    "unreferenced storage (views of larger tensors)",
    "{n:,} bytes are storage saved only because a view of a larger tensor was saved (torch saves the whole base "
    "storage): .clone() before saving drops them",
)
# Framework -> its words for the `unreferenced` bucket (any other: torch's, whose saved views leave such bytes)
UNREFERENCED: Mapping[str, Unreferenced] = MappingProxyType(
    {
        "tflite": Unreferenced(
            "stored but unreferenced (buffers no tensor reads)",
            "buffers no tensor reads",
            "{n:,} bytes are buffers no tensor of any subgraph reads (the converter leaves some behind: an LSTM "
            "state's zeros): the interpreter never reads them",
        ),
    }
)

# Buckets in report order: bucket name -> what it means (shown in the text report; `bucket_texts` for a framework's).
BUCKETS: dict[str, str] = {
    "parameters": "parameter tensors",
    "buffers": "buffers and running statistics",
    "optimizer": "optimizer state",
    "other_tensors": "other training state tensors",
    "tensor_data": "tensor data no listed tensor claims",
    "unreferenced": TORCH_UNREFERENCED.bucket,
    "duplicate": "duplicate copies of a tensor",
    "compressed": "compressed tensor members",
    "header": "container headers",
    "metadata": "metadata (pickles, JSON, names, configs)",
    "padding": "alignment padding",
    "unaccounted": "HDF5 residue (free or dead space no structure explains)",
    "unknown": "unexplained bytes",
}
KIND_BUCKET = {
    TensorKind.PARAMETER: "parameters",
    TensorKind.BUFFER: "buffers",
    TensorKind.OPTIMIZER: "optimizer",
    TensorKind.OTHER: "other_tensors",
    TensorKind.METADATA: "metadata",
}
REGION_BUCKET: dict[RegionKind, str] = {kind: kind.value for kind in RegionKind if kind is not RegionKind.TENSOR_DATA}
KIND_CODE: dict[RegionKind, int] = {kind: code for code, kind in enumerate(RegionKind)}  # (`bucket_bytes`)
KIND_PRIORITY = (TensorKind.PARAMETER, TensorKind.BUFFER, TensorKind.OPTIMIZER, TensorKind.OTHER, TensorKind.METADATA)


@record(frozen=True, slots=True)
class Step:
    """One labelled step of the walk from file size to parameter bytes."""

    label: str
    nbytes: int  # bytes removed (positive) or added back (negative, e.g. compression savings)


@record(frozen=True, slots=True)
class Accounting:
    """Every byte attributed, and the size-implied counts."""

    file_bytes: int
    by_kind: dict[str, int]
    unexplained: int
    parameter_bytes: int  # logical bytes of unique parameter tensors
    parameter_count: int | None  # None when unknown (pickled objects: see `Checkpoint.count_known`)
    dtype: str | None  # the dominant parameter dtype by bytes
    implied_at_dtype: int | None  # file_bytes x 8 / bits of that dtype
    implied_at_f32: int
    steps: tuple[Step, ...]
    compression_saved: int  # logical minus compressed bytes of compressed members
    notes: tuple[str, ...]


def _laid_kinds(ckpt: Checkpoint, starts: Sequence[int], lengths: Sequence[int]) -> tuple[TensorKind, ...] | None:
    """The tensors' kinds where, in order, they are one file's data regions one for one (a torch zip, safetensors),
    those regions' starts and lengths given; else None. Told column by column (`Checkpoint.column`), without a span
    made per tensor."""
    tensors = ckpt.tensors
    if len(starts) != len(tensors):
        return None
    offsets = ckpt.column("offset")
    stated = ckpt.column("span")
    sizes = (
        ckpt.column("nbytes")
        if stated.count(None) == len(stated)
        else tuple([t.nbytes if t.span is None else t.span for t in tensors])
    )
    if 0 in sizes:
        sizes = tuple([max(size, 1) for size in sizes])
    if (
        None not in offsets
        and not any(ckpt.column("file"))
        and all(map(lt, offsets, islice(offsets, 1, None)))
        and tuple(starts) == offsets
        and tuple(lengths) == sizes
    ):
        return ckpt.column("kind")
    return None


def _region_kinds(ckpt: Checkpoint, data: dict[int, list[int]] | None = None) -> dict[int, dict[int, TensorKind]]:
    """For each TENSOR_DATA region (by index), the kind of the tensors lying in it (`data`: those regions' indices by
    file, where the caller has them)."""
    regions, tensors = ckpt.regions, ckpt.tensors
    if data is not None and len(data) == 1 and 0 in data and len(data[0]) == len(tensors):
        indices = data[0]  # (the tensors the data regions one for one: `_laid_kinds`; any other layout: below)
        laid = _laid_kinds(
            ckpt,
            list(map(region_column(regions, "start").__getitem__, indices)),
            list(map(region_column(regions, "length").__getitem__, indices)),
        )
        if laid is not None:
            return {0: dict(zip(indices, laid, strict=True))}
    by_file: dict[int, list[tuple[int, int, TensorKind]]] = {}
    for t in tensors:
        if t.offset is not None:
            span = t.nbytes if t.span is None else t.span  # t.span_bytes
            by_file.setdefault(t.file, []).append((t.offset, t.offset + max(span, 1), t.kind))
    for spans in by_file.values():
        spans.sort()
    out: dict[int, dict[int, TensorKind]] = {}
    tensor_data, lowest = RegionKind.TENSOR_DATA, TensorKind.PARAMETER
    if data is None:  # TENSOR_DATA region indices by file
        data = {}
        for i, r in enumerate(ckpt.regions):
            if r.kind is tensor_data:
                data.setdefault(r.file, []).append(i)
    general = []
    starts, lengths = region_column(regions, "start"), region_column(regions, "length")
    for file, indices in data.items():
        spans = by_file.get(file, [])
        # The common layout (safetensors, npz...): the file's tensors are its data regions, one each. The regions
        # tile the file, so each one meets its own tensor alone: its kind. Any other layout is searched below.
        # (Compared column by column: no list of 100,000 extents is made.)
        if (
            len(spans) == len(indices)
            and all(map(eq, map(starts.__getitem__, indices), map(itemgetter(0), spans)))
            and all(map(eq, map(lengths.__getitem__, indices), map(sub, map(itemgetter(1), spans),
                                                                    map(itemgetter(0), spans))))
        ):  # fmt: skip
            out[file] = dict(zip(indices, map(itemgetter(2), spans), strict=True))
        else:
            general += indices
    if general:
        import bisect  # (a layout other than one tensor per data region)
    for i in sorted(general):
        r = regions[i]
        spans = by_file.get(r.file, [])
        start, end = r.start, r.start + r.length
        j = bisect.bisect_left(spans, (start, -1, lowest))
        # a tensor may start before the region (a view into a storage): step back over those
        while j > 0 and spans[j - 1][1] > start:
            j -= 1
        first: TensorKind | None = None  # the one kind in the region (the common case), else all of them
        kinds: set[TensorKind] | None = None
        while j < len(spans) and spans[j][0] < end:
            if spans[j][1] > start:
                kind = spans[j][2]
                if first is None:
                    first = kind
                elif kind is not first:
                    kinds = (kinds or {first}) | {kind}
            j += 1
        if first is not None:
            found = first if kinds is None else next(k for k in KIND_PRIORITY if k in kinds)
            out.setdefault(r.file, {})[i] = found
    return out


def bucket_bytes(ckpt: Checkpoint) -> dict[str, int]:
    """Bytes per bucket over all files; the values sum to the file size(s)."""
    totals = dict.fromkeys(BUCKETS, 0)
    data: dict[int, list[int]] = {}  # TENSOR_DATA regions (indices by file): their bucket is their tensors' kind
    regions = ckpt.regions  # (read column by column: a zip's `RegionColumns` makes no `Region`)
    region_kinds, region_lengths = region_column(regions, "kind"), region_column(regions, "length")
    files = region_column(regions, "file")
    if not any(files):
        # One file (most checkpoints): a byte a region, its kind's code, made in one C pass; each kind's regions
        # then chosen from it by C passes (`bytes.translate` to a selector, `compress`), no Python step a region
        # (a zip of 100,000 tensors: 400,000 regions)
        codes = bytes(map(KIND_CODE.__getitem__, region_kinds))
        n, rest = len(codes), sum(region_lengths)
        counted = {kind: codes.count(code) for kind, code in KIND_CODE.items() if code in codes}
        # the kind of most regions other than tensor data (a zip's headers): its bytes are those the others leave
        last = max([kind for kind in counted if kind is not RegionKind.TENSOR_DATA], key=counted.__getitem__,
                   default=None)  # fmt: skip
        for kind, many in counted.items():
            if kind is last:
                continue
            code = KIND_CODE[kind]
            selector = None if many == n else codes.translate(bytes(code) + b"\x01" + bytes(255 - code))
            if kind is not RegionKind.TENSOR_DATA:
                told = sum(region_lengths if selector is None else compress(region_lengths, selector))
                totals[REGION_BUCKET[kind]] += told
                rest -= told
                continue
            chosen = region_lengths if selector is None else list(compress(region_lengths, selector))
            rest -= sum(chosen)
            starts = region_column(regions, "start")
            laid = _laid_kinds(ckpt, starts if selector is None else list(compress(starts, selector)), chosen)
            if laid is not None:  # (the tensors are the data regions one for one: their kinds, in order)
                _add_by_kind(totals, laid, chosen)
            else:
                data[0] = list(range(n) if selector is None else compress(range(n), selector))
        if last is not None:
            totals[REGION_BUCKET[last]] += rest
    else:
        tensor_data, region_bucket = RegionKind.TENSOR_DATA, REGION_BUCKET
        for i, region_kind, length, file in zip(count(), region_kinds, region_lengths, files):
            if region_kind is tensor_data:
                data.setdefault(file, []).append(i)
            else:
                totals[region_bucket[region_kind]] += length
    if data:
        kinds = _region_kinds(ckpt, data)
        for file, indices in data.items():
            found = list(map(kinds.get(file, {}).get, indices))
            _add_by_kind(totals, found, list(map(region_lengths.__getitem__, indices)))
    return {name: n for name, n in totals.items() if n}


def _add_by_kind(totals: dict[str, int], found: Sequence[TensorKind | None], lengths: list[int]) -> None:
    """Add data regions' `lengths` to the buckets of the tensor kinds `found` in them (None: no tensor's), each kind's
    summed in C calls."""
    for kind in dict.fromkeys(found):
        of_kind = lengths if found.count(kind) == len(found) else compress(lengths, map(is_, found, repeat(kind)))
        totals[KIND_BUCKET[kind] if kind is not None else "tensor_data"] += sum(of_kind)


def unreferenced_words(framework: str) -> Unreferenced:
    """The framework's words for its unreferenced bytes (`UNREFERENCED`; torch's for any other)."""
    return UNREFERENCED.get(framework, TORCH_UNREFERENCED)


def bucket_texts(framework: str) -> dict[str, str]:
    """`BUCKETS` with the framework's words for its unreferenced bytes."""
    return {**BUCKETS, "unreferenced": unreferenced_words(framework).bucket}


def _of_kind(ckpt: Checkpoint, kind: RegionKind, by_kind: dict[str, int]) -> list[Region]:
    """The regions of one kind. Every region has a positive length (`loaders.base.check_invariants`), so a kind
    without bytes in `by_kind` has none (most files: no pass over their 400,000 regions)."""
    if REGION_BUCKET[kind] not in by_kind:
        return []
    return [r for r in ckpt.regions if r.kind is kind]


def _dominant_dtype(tensors: Iterable[TensorInfo], names: Sequence[str] | None = None) -> str | None:
    """The dtype of most of the tensors' bytes (`names`: their dtypes, where the caller has them)."""
    tensors = tensors if isinstance(tensors, (list, tuple)) else list(tensors)
    names = [t.dtype for t in tensors] if names is None else names
    if names and names.count(names[0]) == len(names):  # one dtype (most files: no weight per tensor added up)
        return names[0]
    weights: Counter[str] = Counter()
    for t in tensors:
        weights[t.dtype] += t.nbytes
    return max(weights.items(), key=itemgetter(1))[0] if weights else None  # (most_common(1), without heapq)


def account(ckpt: Checkpoint) -> Accounting:
    """Attribute every byte and walk from the file size to the parameter count."""
    by_kind = bucket_bytes(ckpt)
    params = ckpt.unique(TensorKind.PARAMETER)
    every = params is ckpt.tensors  # (most files: every tensor a parameter, their fields read once, `column`)
    parameter_bytes = sum(ckpt.column("nbytes") if every else [t.nbytes for t in params])
    dtype = _dominant_dtype(params, ckpt.column("dtype") if every else None)
    dt = dtypes.lookup(dtype) if dtype else None
    size = ckpt.file_size
    implied_dtype = size * 8 * dt.block // dt.bits if dt else None
    compressed = _of_kind(ckpt, RegionKind.COMPRESSED, by_kind)
    saved = sum((r.logical or r.length) - r.length for r in compressed)
    steps = _walk(ckpt, by_kind, saved, parameter_bytes)
    notes = _notes(ckpt, by_kind, params, dtype)
    unexplained = by_kind.get("unknown", 0) + by_kind.get("unaccounted", 0)
    return Accounting(
        size,
        by_kind,
        unexplained,
        parameter_bytes,
        ckpt.n_parameters if ckpt.count_known else None,
        dtype,
        implied_dtype,
        size // 4,
        tuple(steps),
        saved,
        tuple(notes),
    )


STEP_LABELS = (
    ("header", "container headers"),
    ("metadata", "metadata"),
    ("padding", "alignment padding"),
    ("optimizer", "optimizer state"),
    ("buffers", "buffers and running statistics"),
    ("other_tensors", "other training state"),
    ("unreferenced", TORCH_UNREFERENCED.step),  # (the framework's words: `UNREFERENCED`)
    ("duplicate", "duplicate copies"),
    ("tensor_data", "tensor data of no listed tensor"),
    ("unaccounted", "HDF5 residue"),
    ("unknown", "unexplained bytes"),
)


NOT_STORED = (
    "parameter bytes not stored as their own (meta tensors, stride-0 expands, views, sparse or unwritten data, arrays "
    "a pickle writes as text)"
)


def _walk(ckpt: Checkpoint, by_kind: dict[str, int], saved: int, parameter_bytes: int) -> list[Step]:
    unreferenced = unreferenced_words(ckpt.framework).step
    steps = [Step(unreferenced if key == "unreferenced" else label, by_kind[key])
             for key, label in STEP_LABELS if by_kind.get(key)]  # fmt: skip
    if saved:
        steps.append(Step("compression (data stored deflated; logical size added back)", -saved))
    # Compressed members hold tensors of every kind; their logical parameter bytes come from the tensors.
    stored = by_kind.get("parameters", 0) + by_kind.get("compressed", 0) + saved
    residue = stored - parameter_bytes
    if residue > 0:
        steps.append(
            Step(
                "parameter bytes stored beyond the unique parameters (aliases, non-parameter data in "
                "compressed members, views)",
                residue,
            )
        )
    elif residue:  # (logical parameter bytes beyond those stored in parameter regions)
        steps.append(Step(NOT_STORED, residue))
    return steps


def _notes(ckpt: Checkpoint, by_kind: dict[str, int], params: tuple[TensorInfo, ...], dtype: str | None) -> list[str]:
    notes = []
    names: Sequence[str | None] = ckpt.column("dtype") if params is ckpt.tensors else [t.dtype for t in params]
    if names.count(dtype) != len(names):  # (most files: one dtype, no Counter)
        kinds = Counter(names)
        if len(kinds) > 1:
            notes.append("parameters use several dtypes: " + ", ".join(f"{k} x{n}" for k, n in kinds.most_common()))
    dt = dtypes.lookup(dtype) if dtype else None
    bits = dt.bits / dt.block if dt else 32  # per element: block-quantized types carry their scales
    if dt and bits != 32:
        notes.append(f"parameters are {dtype} ({bits:g} bits): a float32 reading of the size is off by x{32 / bits:g}")
    opt = by_kind.get("optimizer", 0)
    if opt and by_kind.get("parameters"):
        notes.append(
            f"optimizer state is {opt / by_kind['parameters']:.2f}x the parameter bytes "
            f"(Adam keeps 2 slots per parameter)"
        )
    unreferenced = by_kind.get("unreferenced", 0)
    if unreferenced:
        notes.append(unreferenced_words(ckpt.framework).note.format(n=unreferenced))
    duplicate = by_kind.get("duplicate", 0)
    if duplicate:
        notes.append(f"{duplicate:,} bytes store a tensor a second time (tied weights saved twice)")
    stored_twice = {r.label for r in _of_kind(ckpt, RegionKind.DUPLICATE, by_kind)}
    aliases = (
        [t for t in ckpt.tensors if t.alias_of is not None and t.name not in stored_twice]
        if ckpt.column("alias_of").count(None) != len(ckpt.tensors)  # (most files: no alias, told by a count)
        else []
    )
    if aliases:
        notes.append(f"{len(aliases)} tied names share storage with another tensor and are counted once")
    return notes


def findings(ckpt: Checkpoint, acc: Accounting) -> list[Finding]:
    """What the accounting noticed."""
    out = []
    if acc.by_kind.get("unknown"):
        out.append(
            Finding(
                "UNEXPLAINED_BYTES",
                Severity.WARNING,
                f"{acc.by_kind['unknown']:,} bytes belong to no structure the loader knows",
                observed=acc.by_kind["unknown"],
            )
        )
    if acc.compression_saved:
        out.append(
            Finding(
                "SIZE_CHECK_SKIPPED",
                Severity.INFO,
                f"compressed members: the file is {acc.compression_saved:,} bytes smaller than its data, "
                "so the size cannot imply a count",
            )
        )
    duplicates = {r.label for r in _of_kind(ckpt, RegionKind.DUPLICATE, acc.by_kind)}
    aliased = ckpt.column("alias_of").count(None) != len(ckpt.tensors)  # (most files: no alias, told by a count)
    for t in ckpt.tensors if aliased else ():
        if t.alias_of is not None and t.name not in duplicates:  # stored twice: the loader reports the duplicate
            out.append(
                Finding(
                    "SHARED_STORAGE",
                    Severity.INFO,
                    f"{t.name!r} is the same tensor as {t.alias_of!r}: stored once, counted once",
                    subjects=(t.name, t.alias_of),
                )
            )
    return out


def human(n: int) -> str:
    """Bytes in both decimal and binary units, so a size is never read in the wrong one."""
    if n < 1000:
        return f"{n:,} B"
    return f"{n:,} B = {n / MB:,.2f} MB = {n / MIB:,.2f} MiB"


def unit_trap(acc: Accounting) -> str | None:
    """What reading the parameters' size in MiB as MB does to the count (seed 003's mistake).

    Computed on the unique parameter bytes, not the file size: optimizer state, metadata or compression
    make the file size say nothing about the parameters, while misreading their own size always loses
    the same 1 - 10**6 / 2**20 = 4.6% whatever the dtype. Skipped below 1 MiB of parameters, where the
    two units differ by less than a rounding.
    """
    if acc.parameter_bytes < MIB or not acc.parameter_count:
        return None
    mib = acc.parameter_bytes / MIB
    misread = acc.parameter_count * MB // MIB
    return (
        f"the parameters take {mib:,.2f} MiB; read as {mib:,.2f} MB they would be {misread:,} parameters, "
        f"{1 - MB / MIB:.1%} fewer than the {acc.parameter_count:,} the file holds: 1 MiB = 1,048,576 bytes"
    )
