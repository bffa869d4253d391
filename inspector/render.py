"""Reports to text and JSON strings. Pure functions; every name read from a file is escaped for the terminal."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from itertools import compress, repeat
from math import prod
from operator import attrgetter, eq

from inspector.jsontext import Joined, Rows, dumps, write
from inspector.quantized import TORCHAO_TYPED
from inspector.reconcile import bucket_texts, human, unit_trap
from inspector.records import (
    Checkpoint,
    LayerCheck,
    Region,
    RegionColumns,
    RegionKind,
    RoleMatch,
    TensorInfo,
    TensorKind,
    region_column,
)
from inspector.report import Report

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    Columns = tuple[tuple[str, ...], list[Any]]  # a batch of dicts column by column (`jsontext.Rows`)
    Fields = dict[str, tuple[Any, ...]]  # the tensors' fields, a tuple each (`_fields`)

_CONTROL = {c: f"\\x{c:02x}" for c in list(range(0x20)) + [0x7F]} | {0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"}
_C1 = {c: f"\\u{c:04x}" for c in range(0x80, 0xA0)}
_ESCAPES = {**_CONTROL, **_C1, 0x5C: "\\\\"}

# (matches, explained) -> the expectation's verdict
VERDICTS = {
    (True, False): "matches",
    (False, True): "differs, every difference explained by the file's own facts (below)",
    (False, False): "differs",
}


def safe(text: str) -> str:
    """A name with control characters (terminal escapes, newlines) made visible and harmless."""
    return text.translate(_ESCAPES)


def _table(rows: list[list[Any]], headers: list[str], align: tuple[str, ...] | None = None) -> str:
    from tabulate import tabulate  # type: ignore[import-untyped]  # imported when text is rendered

    return str(tabulate(rows, headers=headers, tablefmt="simple", intfmt=",", colalign=align, disable_numparse=True))


def _n(value: int) -> str:
    return f"{value:,}"


# -- JSON --------------------------------------------------------------------------------------


KIND_TEXT = {kind: kind.value for kind in TensorKind}  # (a dict lookup: no enum descriptor per tensor)
REGION_TEXT = {kind: kind.value for kind in RegionKind}


# The optional facts of a tensor's and a region's dict, in the order written, each with when it is written ("set":
# when not None, "": when truthy); for the dicts and for their columns alike
# (`_tensor_columns` reads them in this order, the rarely set ones only where set: a test sets each and compares)
TENSOR_OPTIONAL = (("alias_of", "set"), ("storage", "set"), ("section", ""), ("param", "set"), ("file", ""),
                   ("span", "set"), ("notes", ""))  # fmt: skip
REGION_OPTIONAL = (("file", ""), ("logical", "set"))


def _with_optional(item: Any, optional: tuple[tuple[str, str], ...], out: dict[str, Any]) -> dict[str, Any]:
    for key, when in optional:
        value = getattr(item, key)
        if value is not None if when == "set" else value:
            out[key] = list(value) if key == "notes" else value
    return out


def _tensor_json(t: TensorInfo, r: RoleMatch | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": t.name,
        "shape": list(t.shape),
        "dtype": t.dtype,
        "elements": t.n_elements,
        "nbytes": t.nbytes,
        "offset": t.offset,
        "kind": KIND_TEXT[t.kind],
        "layer": r.layer if r is not None else "",
        "role": r.role if r is not None else "",
        "trainable": t.trainable,
    }
    return _with_optional(t, TENSOR_OPTIONAL, out)


def _region_json(r: Region) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": REGION_TEXT[r.kind], "start": r.start, "length": r.length, "label": r.label}
    return _with_optional(r, REGION_OPTIONAL, out)


# -- the same dicts column by column, for `jsontext.Rows` (the CLI's --json: 100,000 tensors, no dict made for each)

TENSOR_KEYS = ("name", "shape", "dtype", "elements", "nbytes", "offset", "kind", "layer", "role", "trainable")
REGION_KEYS = ("kind", "start", "length", "label")
LAYER_FIELDS = ("layer", "kind", "expected", "found", "status", "explanation")  # a LayerCheck's, all written


def _optional(
    batch: Sequence[Any],
    optional: tuple[tuple[str, str], ...],
    keys: list[str],
    values: list[Any],
    read: Sequence[Sequence[Any]] | None = None,
) -> bool:
    """`_with_optional` for a batch: add the columns written for every item; False if one is written for some items
    only (their dicts differ in layout: the batch is made dict by dict). `read`: the optional fields' columns, in
    order, where the caller has read them."""
    for index, (key, when) in enumerate(optional):
        column = read[index] if read is not None else list(map(attrgetter(key), batch))
        if when == "set":  # written when not None
            # (told by identity where the first is None, by truth where every value is true: `count(None)` compares
            # each value that is not None with it, about 100 instructions each)
            if column[0] is None:
                if column.count(None) == len(column):
                    continue
                return False
            if not all(column) and column.count(None):
                return False
        elif not any(column):  # written when truthy
            continue
        elif not all(column):
            return False
        keys.append(key)
        values.append(list(map(list, column)) if key == "notes" else column)
    return True


def _tensor_columns(
    tensors: Sequence[TensorInfo], matched: Sequence[RoleMatch | None], fields: Fields
) -> Callable[[range], Columns | None]:
    """`_tensor_json` of a batch of the tensors (a range of their places), as columns; `matched` is each tensor's role
    (or None) by place, `fields` the tensors' fields read once (`_fields`)."""
    shapes, dtypes, elements, nbytes, kinds, trainable, aliases = (
        fields["shape"], fields["dtype"], fields["elements"], fields["nbytes"], fields["kind"], fields["trainable"],
        fields["alias_of"],
    )  # fmt: skip

    def columns(places: range) -> Columns | None:
        """`_tensor_json` of every tensor of the batch, as columns (None: the dicts differ in layout)."""
        start, stop = places.start, places.stop
        matches = matched[start:stop]
        if not all(matches):  # (a tensor without a role: no `None in`, which would call a record's __eq__ a tensor)
            return None
        known: Sequence[RoleMatch] = matches  # type: ignore[assignment]  # (every tensor's role, told just above)
        batch = tensors[start:stop]
        # the fields `_fields` read, sliced; the others each read by a list comprehension (a record's slot in about
        # half the instructions of an `attrgetter`, and no row tuple made and taken apart); the optional fields in
        # `TENSOR_OPTIONAL`'s order, those other than an alias or a storage read only where one tensor of the batch
        # has one (most files: none)
        keys, values = (
            list(TENSOR_KEYS),
            [
                [t.name for t in batch],
                shapes[start:stop],  # (tuples: written as the lists of `_tensor_json`)
                dtypes[start:stop],
                elements[start:stop],
                nbytes[start:stop],
                [t.offset for t in batch],
                kinds[start:stop],  # (members of a str enum: written as their values)
                [r.layer for r in known],
                [r.role for r in known],
                trainable[start:stop],
            ],
        )
        alias_of, storage = aliases[start:stop], [t.storage for t in batch]
        if [t for t in batch if t.section or t.param is not None or t.file or t.span is not None or t.notes]:
            optional = [alias_of, storage, [t.section for t in batch], [t.param for t in batch],
                        [t.file for t in batch], [t.span for t in batch], [t.notes for t in batch]]  # fmt: skip
        else:  # (none of those written: columns of None, each written for no tensor)
            unset = [None] * len(batch)
            optional = [alias_of, storage, unset, unset, unset, unset, unset]
        return (tuple(keys), values) if _optional(batch, TENSOR_OPTIONAL, keys, values, optional) else None

    return columns


def _region_columns(regions: Sequence[Region]) -> Callable[[Sequence[Region]], Columns | None]:
    """`_region_json` of every region of a batch of `regions`, as columns (None: the dicts differ in layout). When no
    region of them has an optional fact to write (most files: one file, nothing compressed), told once by a C pass a
    fact, no batch reads those facts again (400,000 regions in a zip of 100,000 tensors)."""
    if isinstance(regions, RegionColumns):  # (a zip's: its columns, of file 0, none compressed)
        return lambda batch: (
            REGION_KEYS,
            [batch.kinds, batch.starts, batch.lengths, _labels(batch)],  # type: ignore[attr-defined, arg-type]
        )
    # (each fact read by a list comprehension, `region_column`; None told by identity, `count`)
    written = any(
        any(region_column(regions, key)) if when == "" else region_column(regions, key).count(None) != len(regions)
        for key, when in REGION_OPTIONAL
    )

    def columns(batch: Sequence[Region]) -> Columns | None:
        keys, values = (
            list(REGION_KEYS),
            [
                [r.kind for r in batch],  # (members of a str enum: written as their values)
                [r.start for r in batch],
                [r.length for r in batch],
                _plain_labels(batch),
            ],
        )
        if not written:
            return REGION_KEYS, values
        return (tuple(keys), values) if _optional(batch, REGION_OPTIONAL, keys, values) else None

    return columns


def _plain_labels(regions: Sequence[Region]) -> list[str]:
    """The regions' labels: their texts where no region has a subject (a safetensors file's: its tensors' names; the
    `label` property, a Python call, for each region only where one has)."""
    subjects = [r.subject for r in regions]
    if subjects.count(None) == len(subjects):
        return [r.text for r in regions]
    return [r.label for r in regions]


def _labels(regions: RegionColumns) -> Joined | list[str]:
    """The labels of regions held as columns, for `jsontext`: in their parts where they are so made (a zip's member
    name between its text's parts: no label made), else the labels."""
    parts = regions.label_parts()
    if parts is None:
        return regions.labels()
    heads, subjects, tails = parts
    return Joined((heads, subjects) if tails is None else (heads, subjects, tails), regions.labels)


def _layer_json(c: LayerCheck) -> dict[str, Any]:
    return {key: getattr(c, key) for key in LAYER_FIELDS}


def _layer_columns(batch: Sequence[LayerCheck]) -> Columns:
    # (`LAYER_FIELDS`, each read by a list comprehension: about half the instructions of `map(attrgetter(...))`)
    return LAYER_FIELDS, [
        [c.layer for c in batch],
        [c.kind for c in batch],
        [c.expected for c in batch],
        [c.found for c in batch],
        [c.status for c in batch],
        [c.explanation for c in batch],
    ]


FIELDS = ("shape", "dtype", "nbytes", "kind", "trainable", "alias_of", "elements")  # those `_fields` gives


def _fields(ckpt: Checkpoint) -> Fields:
    """The tensors' fields the counts and the --json rows both read (`FIELDS`), each read once for the report
    (`Checkpoint.column`: 100,000 tensors, no field read twice)."""
    return {name: ckpt.column(name) for name in FIELDS}


def _counts(ckpt: Checkpoint, fields: Fields | None = None) -> dict[str, Any]:
    """The counts of a report; `fields`: the tensors' (`_fields`), where the caller has them."""
    # one pass over the tensors (unique ones, by kind): tensors, elements, bytes, trainable elements
    sums = {kind: [0, 0, 0, 0] for kind in TensorKind}
    tensors = ckpt.tensors
    unique = ckpt.unique()
    kinds: Sequence[TensorKind]
    every: Sequence[int]
    nbytes: Sequence[int]
    trainable: Sequence[bool]
    if unique is tensors:  # (no alias: the tensors' columns, `Checkpoint.column`)
        fields = fields or _fields(ckpt)
        kinds, every, nbytes, trainable = fields["kind"], fields["elements"], fields["nbytes"], fields["trainable"]
    else:
        kinds, nbytes, trainable = [t.kind for t in unique], [t.nbytes for t in unique], [t.trainable for t in unique]
        every = list(map(prod, [t.shape for t in unique]))
    for kind in dict.fromkeys(kinds):  # (a few kinds: each summed in C calls)
        row = sums.get(kind)
        if row is not None:
            if kinds.count(kind) == len(kinds):
                row[0], row[1], row[2] = len(kinds), sum(every), sum(nbytes)
                row[3] = sum(compress(every, trainable))
            else:
                chosen = list(map(eq, kinds, repeat(kind)))
                of_kind_elements = list(compress(every, chosen))
                row[0], row[1], row[2] = len(of_kind_elements), sum(of_kind_elements), sum(compress(nbytes, chosen))
                row[3] = sum(compress(of_kind_elements, compress(trainable, chosen)))
    params, buffers, opt, other = (sums[k] for k in (TensorKind.PARAMETER, TensorKind.BUFFER, TensorKind.OPTIMIZER,
                                                        TensorKind.OTHER))  # fmt: skip
    known = ckpt.count_known  # pickled objects: null in JSON, "unknown" in text
    return {
        "parameters": {
            "total": params[1] if known else None,
            "trainable": params[3] if known else None,
            "non_trainable": params[1] - params[3] if known else None,
        },
        "buffers": {"tensors": buffers[0], "elements": buffers[1]},
        "optimizer": {"present": bool(opt[0]), "tensors": opt[0], "elements": opt[1], "bytes": opt[2]},
        "other": {"tensors": other[0], "elements": other[1]},
    }


def report_dict(report: Report, lazy: bool = False) -> dict[str, Any]:
    """The stable JSON object of one report (schema in README).

    `lazy`: its tensors and regions are `jsontext.Rows`, made as `jsontext` writes them (for the CLI's `--json`:
    100,000 tensors' dicts are never all held), instead of lists.
    """
    ckpt, acc, exp = report.checkpoint, report.accounting, report.expectation
    tensors = ckpt.tensors
    # each tensor's role by place, as the text's rows pair them (None past the roles), and the fields the counts and
    # the rows both read (read once)
    matched: Sequence[RoleMatch | None] = (
        report.roles
        if len(report.roles) == len(tensors)
        else (*report.roles[: len(tensors)], *[None] * (len(tensors) - len(report.roles)))
    )
    fields = _fields(ckpt) if lazy else None

    def tensor(place: int) -> dict[str, Any]:
        return _tensor_json(tensors[place], matched[place])

    out: dict[str, Any] = {
        "schema_version": report.schema_version,
        "path": ckpt.path,
        "format": ckpt.format,
        "framework": ckpt.framework,
        "file_bytes": ckpt.file_size,
        "files": [{"path": p, "bytes": s} for p, s in ckpt.files],
        **_counts(ckpt, fields),
        "tensors": (
            Rows(range(len(tensors)), tensor, _tensor_columns(tensors, matched, fields))
            if fields is not None
            else list(map(tensor, range(len(tensors))))
        ),
        "bytes": {
            "regions": (
                Rows(ckpt.regions, _region_json, _region_columns(ckpt.regions))
                if lazy
                else list(map(_region_json, ckpt.regions))
            ),
            "by_kind": acc.by_kind,
            "unexplained": acc.unexplained,
            "size_implied": {
                "dtype": acc.dtype,
                "parameters_at_dtype": acc.implied_at_dtype,
                "parameters_at_f32": acc.implied_at_f32,
                "parameters": acc.parameter_count,
                "parameter_bytes": acc.parameter_bytes,
                "compression_saved": acc.compression_saved,
                "steps": [{"label": s.label, "bytes": s.nbytes} for s in acc.steps],
                "notes": list(acc.notes),
            },
        },
        "expected": None,
        "attributes": dict(ckpt.attributes),
        "findings": [{"code": f.code, "severity": f.severity.value, "message": f.message} for f in report.findings],
    }
    if exp is not None:
        out["expected"] = {
            "source": exp.source,
            "architecture": {"name": exp.architecture, **dict(exp.hyperparameters)},
            "total": exp.total,
            "found": exp.found,
            "matches": exp.matches,
            "explained": exp.explained,
            "anomalies": list(exp.anomalies),
            "layers": Rows(exp.layers, _layer_json, _layer_columns) if lazy else list(map(_layer_json, exp.layers)),
            "notes": list(exp.notes),
        }
    return out


def render_json(reports: list[dict[str, Any]], many: bool) -> str:
    """`json.dumps(..., indent=2, default=str)`'s text, written by `inspector.jsontext` (3x faster, no chunk list)."""
    return dumps(reports if many else reports[0], default=str)


def write_json(reports: list[dict[str, Any]], many: bool, out: Callable[[str], object]) -> None:
    """`render_json`'s text passed to `out` in pieces (the CLI writes them to stdout as they come)."""
    write(reports if many else reports[0], out, default=str)


# -- text --------------------------------------------------------------------------------------


def _layer_rows(report: Report) -> list[list[Any]]:
    """A row per layer: its name, kinds, roles, tensors, elements, bytes (the last three numbers) and dtypes."""
    groups: dict[str, list[tuple[TensorInfo, str]]] = {}
    for t, r in zip(report.checkpoint.tensors, report.roles, strict=False):
        groups.setdefault(r.layer or t.layer or t.name, []).append((t, r.role))
    rows: list[list[Any]] = []
    for layer, items in groups.items():
        if len(items) == 1:  # (most layers of a file of 100,000: the row of its one tensor)
            t, role = items[0]
            alone = t.alias_of is None
            rows.append([layer, t.kind.value, role, 1, t.n_elements if alone else 0, t.nbytes if alone else 0, t.dtype])
            continue
        unique = [t for t, _ in items if t.alias_of is None]
        kinds = sorted({t.kind.value for t, _ in items})
        roles = sorted({role for _, role in items})
        dts = Counter(t.dtype for t, _ in items)
        rows.append(
            [
                layer,
                "/".join(kinds),
                ", ".join(roles),
                len(items),
                sum(t.n_elements for t in unique),
                sum(t.nbytes for t in unique),
                "/".join(d for d, _ in dts.most_common()),
            ]
        )
    return rows


def _folded_table(
    rows: list[list[Any]], headers: list[str], align: tuple[str, ...], sums: tuple[int, ...], what: str
) -> list[str]:
    """The lines of a table of a row per layer (the name first, numbers in the `sums` columns): folded when it has
    more rows than `text_fold.TEXT_ROWS` (a count of layers after the name), the numbers written with separators."""
    from inspector.text_fold import TEXT_ROWS, capped, fold, folded_note  # (text reports only)

    lines: list[str] = []
    more = None
    if len(rows) > TEXT_ROWS:  # (more rows than a reader takes in)
        folded = fold(rows, sums)
        lines.append(folded_note(len(rows), len(folded), what))
        rows, more = capped(folded)
        headers = [headers[0], what, *headers[1:]]
        align = (align[0], "right", *align[1:])
        sums = (1, *(index + 1 for index in sums))
    text = [[safe(row[0]), *(_n(v) if i in sums else v for i, v in enumerate(row) if i)] for row in rows]
    lines.append(_table(text, headers, align))
    if more is not None:
        lines.append(more)
    return lines


def _tensor_rows(report: Report) -> list[list[Any]]:
    rows = []
    for t, r in zip(report.checkpoint.tensors, report.roles, strict=False):
        shape = "x".join(map(str, t.shape)) or "scalar"
        note = f"= {safe(t.alias_of)}" if t.alias_of else "; ".join(safe(n) for n in t.notes)
        rows.append(
            [
                safe(t.name),
                shape,
                t.dtype,
                _n(t.n_elements),
                _n(t.nbytes),
                "-" if t.offset is None else _n(t.offset),
                t.kind.value,
                safe(r.layer),
                r.role,
                note,
            ]
        )
    return rows


def render_text(report: Report, *, tensors: bool = False, regions: bool = False) -> str:
    """The human report of one file."""
    ckpt, acc, exp = report.checkpoint, report.accounting, report.expectation
    counts = _counts(ckpt)
    p = counts["parameters"]
    lines = [
        f"{safe(ckpt.path)}",
        f"  format     {ckpt.format} ({ckpt.framework}), {len(ckpt.files)} file(s), {human(ckpt.file_size)}",
        f"  parameters {_n(p['total'])}  (trainable {_n(p['trainable'])}, non-trainable {_n(p['non_trainable'])})"
        if p["total"] is not None
        else "  parameters unknown (pickled Python objects, not loaded: see the findings)",
    ]
    if counts["buffers"]["tensors"]:
        lines.append(
            f"  buffers    {_n(counts['buffers']['elements'])} elements in {counts['buffers']['tensors']} tensors"
        )
    if counts["optimizer"]["present"]:
        o = counts["optimizer"]
        lines.append(f"  optimizer  {_n(o['elements'])} elements in {o['tensors']} tensors ({human(o['bytes'])})")
    if counts["other"]["tensors"]:
        lines.append(f"  other      {_n(counts['other']['elements'])} elements in {counts['other']['tensors']} tensors")
    described: dict[str, int] = {}  # torchao's metadata of each tensor, by the type it names: one line for them all
    for key, value in ckpt.attributes.items():
        kind, quoted, _ = value.removeprefix(TORCHAO_TYPED).partition('"')
        if key.startswith("metadata.") and value.startswith(TORCHAO_TYPED) and quoted:
            described[kind] = described.get(kind, 0) + 1
            continue
        lines.append(f"  {safe(key)}: {safe(value)[:120]}")
    if described:
        kinds = ", ".join(f"{safe(kind)} x{n:,}" for kind, n in sorted(described.items(), key=lambda kv: -kv[1]))
        lines.append(f"  metadata: {sum(described.values()):,} tensors' types as torchao writes them ({kinds})")
    lines += [
        "",
        *_folded_table(
            _layer_rows(report),
            ["layer", "kind", "roles", "tensors", "elements", "bytes", "dtype"],
            ("left", "left", "left", "right", "right", "right", "left"),
            (3, 4, 5),
            "layers",
        ),
    ]
    if tensors:
        lines += [
            "",
            _table(
                _tensor_rows(report),
                ["tensor", "shape", "dtype", "elements", "bytes", "offset", "kind", "layer", "role", "note"],
            ),
        ]
    if exp is not None:
        verdict = VERDICTS[exp.matches, exp.explained]
        hyper = ", ".join(f"{k}={v}" for k, v in exp.hyperparameters.items())
        lines += [
            "",
            f"Architecture ({exp.source}): {exp.architecture}({hyper})",
            f"  formula {_n(exp.total)}, file {_n(exp.found)}: {verdict}",
        ]
        rows = [[c.layer, c.kind, c.expected, c.found, c.status, c.explanation] for c in exp.layers]
        headers = ["layer", "kind", "expected", "found", "status", "explanation"]
        lines += _folded_table(rows, headers, ("left",) * 6, (2, 3), "layers")
        lines += [f"  note: {n}" for n in exp.notes]
    lines += ["", "Where the bytes go"]
    total = ckpt.file_size or 1
    texts = bucket_texts(ckpt.framework)
    rows = [[texts[k], _n(v), f"{100 * v / total:.1f}%"] for k, v in acc.by_kind.items()]
    rows.append(["total", _n(ckpt.file_size), "100.0%"])
    lines.append(_table(rows, ["bucket", "bytes", "share"], ("left", "right", "right")))
    lines += ["", "Size-implied count"]
    if acc.implied_at_dtype is not None and acc.dtype not in (None, "F32"):
        lines.append(f"  {f'file size / {acc.dtype} itemsize':<30} = {_n(acc.implied_at_dtype)} elements")
    lines.append(f"  {'file size / 4 (float32)':<30} = {_n(acc.implied_at_f32)} elements")
    count = "unknown" if acc.parameter_count is None else _n(acc.parameter_count)
    lines.append(f"  {'parameters in the file':<30} = {count}")
    lines.append(f"  from {_n(ckpt.file_size)} file bytes:")
    lines += [f"    {'-' if s.nbytes >= 0 else '+'} {_n(abs(s.nbytes)):>14}  {s.label}" for s in acc.steps]
    lines.append(f"    = {_n(acc.parameter_bytes):>14}  unique parameter bytes -> {count} parameters")
    lines += [f"  note: {n}" for n in acc.notes]
    trap = unit_trap(acc)
    if trap:
        lines.append(f"  units: {trap}")
    if regions:
        lines += [
            "",
            _table(
                [[r.file, _n(r.start), _n(r.length), r.kind.value, safe(r.label)] for r in ckpt.regions],
                ["file", "start", "length", "kind", "label"],
            ),
        ]
    if report.findings:
        lines += ["", "Findings"] + [f"  [{f.severity.value}] {f.code}: {safe(f.message)}" for f in report.findings]
    return "\n".join(lines)
