"""Folder-audit rows to text, JSON and CSV strings (pure)."""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Sequence

from inspector.audit import AuditRow, Status
from inspector.recordtype import asdict, fields
from inspector.render import safe

COLUMNS = [f.name for f in fields(AuditRow)]
TEXT_COLUMNS = ["path", "format", "framework", "parameters", "dtype", "file bytes", "unexplained", "findings", "status"]


def rows_to_json(rows: Sequence[AuditRow]) -> str:
    return json.dumps([asdict(r) for r in rows], indent=2)


def rows_to_csv(rows: Sequence[AuditRow]) -> str:
    import csv  # (--csv only)

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for r in rows:
        writer.writerow([getattr(r, c) if getattr(r, c) is not None else "" for c in COLUMNS])
    return out.getvalue()


def _status(r: AuditRow) -> str:
    return safe(r.error) if r.error else r.status


def rows_to_text(rows: Sequence[AuditRow]) -> str:
    from tabulate import tabulate  # type: ignore[import-untyped]

    table = [
        [safe(r.path), r.format or "-", r.framework or "-", f"{r.parameters:,}", r.dtype or "-", f"{r.file_bytes:,}",
         f"{r.unexplained_bytes:,}", r.worst and f"{r.n_findings} ({r.worst})" or str(r.n_findings), _status(r)]
        for r in rows
    ]  # fmt: skip
    statuses = Counter(r.status for r in rows)
    total = sum(r.file_bytes for r in rows if r.status != Status.NOT_RECOGNISED)
    models = statuses[Status.OK] + statuses[Status.UNSAFE]
    summary = f"{models} model(s), {statuses[Status.UNREADABLE]} unreadable"
    if statuses[Status.UNSAFE]:
        summary += f", {statuses[Status.UNSAFE]} unsafe"
    summary += f", {statuses[Status.NOT_RECOGNISED]} not recognised, {total:,} bytes in checkpoints"
    return str(tabulate(table, headers=TEXT_COLUMNS, disable_numparse=True)) + "\n" + summary
