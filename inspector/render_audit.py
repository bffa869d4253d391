"""Folder-audit rows to text, JSON and CSV strings (pure)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import asdict, fields

from inspector.audit import AuditRow
from inspector.render import safe

COLUMNS = [f.name for f in fields(AuditRow)]


def rows_to_json(rows: Sequence[AuditRow]) -> str:
    return json.dumps([asdict(r) for r in rows], indent=2)


def rows_to_csv(rows: Sequence[AuditRow]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for r in rows:
        writer.writerow([getattr(r, c) if getattr(r, c) is not None else "" for c in COLUMNS])
    return out.getvalue()


def rows_to_text(rows: Sequence[AuditRow]) -> str:
    from tabulate import tabulate  # type: ignore[import-untyped]

    table = [
        [safe(r.path), r.format or "-", r.framework or "-", f"{r.parameters:,}", r.dtype or "-", f"{r.file_bytes:,}",
         f"{r.unexplained_bytes:,}", r.worst and f"{r.n_findings} ({r.worst})" or str(r.n_findings),
         safe(r.error or "")]
        for r in rows
    ]  # fmt: skip
    headers = [
        "path",
        "format",
        "framework",
        "parameters",
        "dtype",
        "file bytes",
        "not parameters",
        "findings",
        "error",
    ]
    total = sum(r.file_bytes for r in rows)
    models = sum(1 for r in rows if not r.error)
    return str(tabulate(table, headers=headers, disable_numparse=True)) + (
        f"\n{models} model(s), {len(rows) - models} unreadable, {total:,} bytes"
    )
