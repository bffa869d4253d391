"""Reports as one self-contained HTML page. Pure: report dicts (`render.report_dict`) in, a string out.

The page never touches the network: the treemap layout library (d3-hierarchy, ISC licence, vendored in
`inspector/html/`), the page's script and its style are inlined, and a Content-Security-Policy forbids every
fetch and allows the two scripts by their hashes only. Every string read from a file is escaped (`html.escape`
in the markup, `\\u003c` in the embedded JSON) and the script only ever sets `textContent`.

The tables are plain HTML, readable without JavaScript and printable. The script draws the treemap from an
aggregated tree: buckets -> layers (or region kinds) -> tensors (or regions), at most `MAX_CHILDREN` children
per node with the rest folded into one "N more" node, so a file of 100,000 tensors draws a few thousand boxes.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources

from inspector.reconcile import bucket_texts
from inspector.render import safe

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    Node = dict[str, Any]
    Report = Mapping[str, Any]

MAX_CHILDREN = 40  # children kept per treemap node; the rest become one "N more" node
MAX_ROWS = 300  # rows kept per table; the rest become one summary row
TOP_TENSORS = 20  # rows of the largest-tensors table
ROLE_COLOURS = 10  # .p0 ... .p9 in html/report.css
TENSOR_BUCKETS = {"parameter": "parameters", "buffer": "buffers", "optimizer": "optimizer", "other": "other_tensors"}
_QUOTED = r"'[^']*'|\"[^\"]*\""


# -- small helpers ------------------------------------------------------------------------------


def _t(value: object) -> str:
    """Text from a file, escaped for HTML (control characters made visible first)."""
    return html.escape(safe(str(value)), quote=True)


def _n(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def _bar(part: int, whole: int, colour: str = "b-parameters") -> str:
    width = 100 * part / whole if whole else 0
    return f'<span class="bar {colour}"><span style="width:{width:.2f}%"></span></span>'


def _stack(parts: Sequence[tuple[str, int, str]], whole: int, unit: str) -> str:
    """One bar split into (label, value, colour class) parts: the treemap's top level, without JavaScript."""
    if whole <= 0:
        return ""
    spans = "".join(
        f'<span class="{colour}" style="width:{100 * value / whole:.3f}%" title="{_t(label)}: {value:,} {unit} '
        f'({_pct(value, whole)})"></span>'
        for label, value, colour in parts
        if value > 0
    )
    summary = ", ".join(f"{label} {_pct(value, whole)}" for label, value, _ in parts if value > 0)
    return f'<div class="stack" role="img" aria-label="{unit}: {_t(summary)}">{spans}</div>'


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]], numeric: Sequence[int] = ()) -> str:
    """A table from already-escaped cells; columns in `numeric` are right-aligned."""
    head = "".join(f"<th{' class=num' if i in numeric else ''}>{h}</th>" for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(f"<td{' class=num' if i in numeric else ''}>{c}</td>" for i, c in enumerate(row)) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _capped(rows: list[list[str]], fold: Sequence[str]) -> list[list[str]]:
    """The first MAX_ROWS rows, then `fold` (a summary row of the rest) when rows were left out."""
    return rows if len(rows) <= MAX_ROWS else rows[:MAX_ROWS] + [list(fold)]


def _json(data: object) -> str:
    """JSON safe inside a <script type="application/json"> element: no '<', '>' or '&' survive."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _asset(name: str) -> str:
    return resources.files("inspector").joinpath("html", name).read_text(encoding="utf-8")


def _layer_of(t: Mapping[str, Any]) -> str:
    name = str(t["name"])
    return str(t.get("layer") or re.split(r"[./](?=[^./]*$)", name)[0] or name)


def _unique(report: Report) -> list[Mapping[str, Any]]:
    return [t for t in report["tensors"] if t.get("alias_of") is None]


# -- the treemap tree ---------------------------------------------------------------------------


def _fold(children: list[Node], noun: str) -> list[Node]:
    """Largest first; beyond MAX_CHILDREN the rest become one node that says how many it holds."""
    children.sort(key=lambda c: -c["v"])
    if len(children) <= MAX_CHILDREN:
        return children
    rest = children[MAX_CHILDREN - 1 :]
    folded: Node = {"n": f"{len(rest):,} more {noun}", "v": sum(c["v"] for c in rest), "k": len(rest)}
    return children[: MAX_CHILDREN - 1] + [folded]


def _fit(children: list[Node], total: int) -> list[Node]:
    """Children whose areas add up to `total`: one more node for a remainder, or areas ("a") scaled down.

    Both happen where a tensor-data region holds tensors of two kinds (bytes go to the first kind's bucket).
    """
    found = sum(c["v"] for c in children)
    if found < total:
        children.append({"n": "bytes no single entry claims", "v": total - found})
    elif found > total:
        for c in children:
            c["a"] = c["v"] * total / found
    return children


def _tensor_leaf(t: Mapping[str, Any], files: Sequence[str]) -> Node:
    leaf: Node = {"n": safe(str(t["name"])), "v": t["nbytes"], "s": list(t["shape"]), "d": t["dtype"]}
    if t.get("elements") is not None:  # None where a count is unknown
        leaf["e"] = t["elements"]
    if t.get("offset") is not None:
        leaf["o"] = t["offset"]
    if t.get("role"):
        leaf["r"] = t["role"]
    if t.get("file") and t["file"] < len(files):
        leaf["f"] = safe(files[t["file"]])
    return leaf


def _region_leaf(r: Mapping[str, Any], files: Sequence[str]) -> Node:
    leaf: Node = {"n": safe(str(r["label"])), "v": r["length"], "o": r["start"]}
    if r.get("file") and r["file"] < len(files):
        leaf["f"] = safe(files[r["file"]])
    return leaf


def _groups(items: Iterable[tuple[str, Node]], noun: str, inner: str) -> list[Node]:
    groups: dict[str, list[Node]] = {}
    for key, leaf in items:
        groups.setdefault(key, []).append(leaf)
    nodes = []
    for key, leaves in groups.items():
        if len(leaves) == 1 and leaves[0]["n"] == key:
            nodes.append(leaves[0])
        else:
            nodes.append({"n": safe(key), "v": sum(x["v"] for x in leaves), "c": _fold(leaves, inner)})
    if len(nodes) == 1 and "c" in nodes[0]:  # one layer only: its tensors are the level below the bucket
        return list(nodes[0]["c"])
    return _fold(nodes, noun)


def byte_tree(report: Report) -> Node:
    """Where the file's bytes go, as a tree: buckets (`bytes.by_kind`) -> layers -> tensors.

    Buckets of region kinds (headers, metadata, padding...) split into kinds of region (the label with its
    quoted names removed) and then single regions. Bucket sizes are the report's; children add up to them.
    """
    files = [str(f["path"]) for f in report.get("files", [])]
    by_bucket: dict[str, list[tuple[str, Node]]] = {}
    for t in _unique(report):
        if t.get("offset") is not None:
            by_bucket.setdefault(TENSOR_BUCKETS.get(t["kind"], "other_tensors"), []).append(
                (_layer_of(t), _tensor_leaf(t, files))
            )
    for r in report["bytes"]["regions"]:
        if r["kind"] != "tensor_data":
            label = str(r["label"])
            family = " ".join(re.sub(_QUOTED, "", label).split()) or label
            by_bucket.setdefault(r["kind"], []).append((family, _region_leaf(r, files)))
    buckets = []
    texts = bucket_texts(report["framework"])
    for bucket, nbytes in report["bytes"]["by_kind"].items():
        tensors = bucket in TENSOR_BUCKETS.values()
        children = _groups(
            by_bucket.get(bucket, []), "layers" if tensors else "kinds", "tensors" if tensors else "regions"
        )
        node: Node = {"n": texts.get(bucket, bucket), "v": nbytes, "b": bucket}
        if children:
            node["c"] = _fit(children, nbytes)
        buckets.append(node)
    return {"n": "whole file", "v": report["file_bytes"], "c": buckets}


def audit_tree(rows: Sequence[Mapping[str, Any]]) -> Node:
    """A folder's bytes: formats -> files -> parameter bytes and the rest."""
    by_format: dict[str, list[Node]] = {}
    paths = [str(row["path"]) for row in rows]
    try:
        common = os.path.commonpath(paths) if len(paths) > 1 else os.path.dirname(paths[0]) if paths else ""
    except ValueError:  # absolute and relative paths mixed
        common = ""
    for row, path in zip(rows, paths, strict=True):
        size = int(row["file_bytes"])
        rest = max(0, min(int(row["unexplained_bytes"]), size))  # negative when compression saved bytes
        parts = [{"n": "parameter tensors", "v": size - rest, "b": "parameters"}, {"n": "not parameters", "v": rest}]
        node = {"n": safe(os.path.relpath(path, common) if common else path), "v": size}
        node["c"] = [p for p in parts if p["v"]]
        by_format.setdefault(str(row["format"] or "unreadable"), []).append(node)
    formats = [
        {"n": safe(fmt), "v": sum(f["v"] for f in nodes), "b": f"f{i % 8}", "c": _fold(nodes, "files")}
        for i, (fmt, nodes) in enumerate(sorted(by_format.items()))
    ]
    return {"n": "whole folder", "v": sum(f["v"] for f in formats), "c": _fold(formats, "formats")}


# -- sections of one report ---------------------------------------------------------------------


def _summary(report: Report) -> str:
    p, b, o = report["parameters"], report["buffers"], report["optimizer"]
    rows = [
        ["format", f"{_t(report['format'])} ({_t(report['framework'])}), {len(report.get('files', []))} file(s)"],
        ["file bytes", f"{_n(report['file_bytes'])} B"],
        ["parameters", f"{_n(p['total'])} (trainable {_n(p['trainable'])}, non-trainable {_n(p['non_trainable'])})"],
    ]
    if b["tensors"]:
        rows.append(["buffers", f"{_n(b['elements'])} elements in {_n(b['tensors'])} tensors"])
    if o["present"]:
        rows.append(["optimizer", f"{_n(o['elements'])} elements in {_n(o['tensors'])} tensors, {_n(o['bytes'])} B"])
    rows += [[_t(k), _t(str(v)[:200])] for k, v in report.get("attributes", {}).items()]
    return '<table class="summary">' + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows) + "</table>"


def _bytes_table(report: Report) -> str:
    total = report["file_bytes"]
    by_kind = report["bytes"]["by_kind"]
    texts = bucket_texts(report["framework"])
    rows = [
        [
            f'<span class="swatch b-{_t(k)}"></span>{_t(texts.get(k, k))}',
            _n(v),
            _pct(v, total),
            _bar(v, total, f"b-{_t(k)}"),
        ]
        for k, v in by_kind.items()
    ]
    rows.append(["<b>total</b>", f"<b>{_n(total)}</b>", "100.0%", ""])
    stack = _stack([(texts.get(k, k), v, f"b-{_t(k)}") for k, v in by_kind.items()], total, "bytes")
    return _table(["bucket", "bytes", "share", ""], rows, numeric=(1, 2)) + stack


def _roles_table(report: Report) -> str:
    roles: dict[str, list[int]] = {}
    for t in _unique(report):
        if t["kind"] == "parameter":
            entry = roles.setdefault(str(t.get("role") or "unmatched"), [0, 0, 0])
            entry[0] += 1
            entry[1] += t["elements"] or 0
            entry[2] += t["nbytes"]
    total = sum(e[1] for e in roles.values())
    ranked = sorted(roles.items(), key=lambda kv: -kv[1][1])
    colours = {role: f"p{i % ROLE_COLOURS}" for i, (role, _) in enumerate(ranked)}
    rows = [
        [f'<span class="swatch {colours[role]}"></span>{_t(role)}', _n(n), _n(el), _n(nb), _pct(el, total),
         _bar(el, total, colours[role])]
        for role, (n, el, nb) in ranked
    ]  # fmt: skip
    stack = _stack([(role, el, colours[role]) for role, (_, el, _) in ranked], total, "parameters")
    return stack + _table(["role", "tensors", "parameters", "bytes", "share", ""], rows, numeric=(1, 2, 3, 4))


def _layers_table(report: Report) -> str:
    layers: dict[str, list[Mapping[str, Any]]] = {}
    for t in report["tensors"]:
        layers.setdefault(_layer_of(t), []).append(t)
    total = report["parameters"]["total"]
    rows: list[list[str]] = []
    rest = [0, 0, 0]
    for layer, items in layers.items():
        unique = [t for t in items if t.get("alias_of") is None]
        params = sum(t["elements"] or 0 for t in unique if t["kind"] == "parameter")
        nbytes = sum(t["nbytes"] for t in unique)
        if len(rows) >= MAX_ROWS:
            rest = [rest[0] + 1, rest[1] + params, rest[2] + nbytes]
        kinds = "/".join(sorted({str(t["kind"]) for t in items}))
        roles = ", ".join(sorted({str(t.get("role") or "-") for t in items}))
        dtypes = "/".join(sorted({str(t["dtype"]) for t in items}))
        rows.append([_t(layer), kinds, _t(roles), _n(len(items)), _n(params), _n(nbytes), dtypes, _bar(params, total)])
    fold = [f"{rest[0]:,} more layers", "", "", "", _n(rest[1]), _n(rest[2]), "", ""]
    headers = ["layer", "kind", "roles", "tensors", "parameters", "bytes", "dtype", ""]
    return _table(headers, _capped(rows, fold), numeric=(3, 4, 5))


def _largest_table(report: Report) -> str:
    largest = sorted(_unique(report), key=lambda t: -t["nbytes"])[:TOP_TENSORS]
    rows = [
        [_t(t["name"]), "x".join(map(str, t["shape"])) or "scalar", _t(t["dtype"]), _n(t["elements"]),
         _n(t["nbytes"]), _n(t.get("offset")), _t(t["kind"]), _t(t.get("role") or "")]
        for t in largest
    ]  # fmt: skip
    headers = ["tensor", "shape", "dtype", "elements", "bytes", "offset", "kind", "role"]
    return _table(headers, rows, numeric=(3, 4, 5))


def _expected(report: Report) -> str:
    exp = report.get("expected")
    if not exp:
        return "<p>No architecture was recognised or given (<code>--expect SPEC</code>).</p>"
    arch = dict(exp["architecture"])
    name = arch.pop("name", "")
    hyper = ", ".join(f"{_t(k)}={_t(v)}" for k, v in arch.items())
    verdict = "matches" if exp["matches"] else "differs"
    said = "differs, every difference explained by the file's own facts" if exp.get("explained") else verdict
    head = (
        f"<p>Architecture ({_t(exp['source'])}): <code>{_t(name)}({hyper})</code>; formula {_n(exp['total'])}, "
        f'file {_n(exp["found"])}: <span class="status-{verdict}">{said}</span></p>'
    )
    rows = [
        [_t(c["layer"]), _t(c["kind"]), _n(c["expected"]), _n(c["found"]),
         f'<span class="status-{_t(c["status"])}">{_t(c["status"])}</span>', _t(c["explanation"])]
        for c in exp["layers"]
    ]  # fmt: skip
    table = _table(
        ["layer", "kind", "expected", "found", "status", "explanation"],
        _capped(rows, [f"{len(rows) - MAX_ROWS:,} more layers", "", "", "", "", ""]),
        numeric=(2, 3),
    )
    notes = "".join(f"<li>{_t(n)}</li>" for n in exp.get("notes", []))
    return head + table + (f"<ul>{notes}</ul>" if notes else "")


def _walk(report: Report) -> str:
    s = report["bytes"]["size_implied"]
    lines = []
    if s["parameters_at_dtype"] is not None and s["dtype"] not in (None, "F32"):
        lines.append([f"file size / {_t(s['dtype'])} itemsize", "=", f"{_n(s['parameters_at_dtype'])} elements"])
    lines.append(["file size / 4 (float32)", "=", f"{_n(s['parameters_at_f32'])} elements"])
    lines.append(["parameters in the file", "=", _n(s["parameters"])])
    steps = [["", "", f"{_n(report['file_bytes'])}", "file bytes"]]
    steps += [["", "-" if st["bytes"] >= 0 else "+", _n(abs(st["bytes"])), _t(st["label"])] for st in s["steps"]]
    steps.append(["", "=", _n(s["parameter_bytes"]), f"unique parameter bytes -> {_n(s['parameters'])} parameters"])
    notes = "".join(f"<li>{_t(n)}</li>" for n in s.get("notes", []))
    return (
        _table(["implied", "", "count"], lines, numeric=(2,))
        + _table(["", "", "bytes", "step"], steps, numeric=(2,))
        + (f"<ul>{notes}</ul>" if notes else "")
    )


def _findings(report: Report) -> str:
    items = [
        f'<li class="sev-{_t(f["severity"])}"><b>[{_t(f["severity"])}] {_t(f["code"])}</b>: {_t(f["message"])}</li>'
        for f in report["findings"]
    ]
    if len(items) > MAX_ROWS:
        items = items[:MAX_ROWS] + [f"<li>{len(items) - MAX_ROWS:,} more findings (see --json)</li>"]
    return f'<ul class="findings">{"".join(items)}</ul>' if items else "<p>No findings.</p>"


def _figure(index: int, tree: Node) -> str:
    return (
        f'<figure class="treemap-figure"><nav class="crumbs" id="crumbs-{index}"></nav>'
        f'<div class="treemap" id="treemap-{index}" role="img" aria-label="treemap of the bytes"></div>'
        "<noscript><p>The treemap needs JavaScript; the tables below hold the same figures.</p></noscript>"
        f'<script type="application/json" class="treemap-data" data-index="{index}">{_json(tree)}</script>'
        "</figure>"
    )


def _report_section(index: int, report: Report) -> str:
    if "error" in report:
        error = f'<p class="sev-error">{_t(report["error"])}</p>'
        return f'<section id="r{index}"><h2>{_t(report["path"])}</h2>{error}</section>'
    parts = [
        f'<section id="r{index}"><h2>{_t(report["path"])}</h2>',
        _summary(report),
        "<h3>Where the bytes go</h3>",
        _figure(index, byte_tree(report)),
        _bytes_table(report),
        "<h3>Parameters by role</h3>",
        _roles_table(report),
        "<h3>Parameters by layer</h3>",
        _layers_table(report),
        "<h3>Expected and found, per layer</h3>",
        _expected(report),
        "<h3>Size-implied count</h3>",
        _walk(report),
        "<h3>Largest tensors</h3>",
        _largest_table(report),
        "<h3>Findings</h3>",
        _findings(report),
        "</section>",
    ]
    return "".join(parts)


# -- pages ---------------------------------------------------------------------------------------


def _page(title: str, body: str) -> str:
    # line ends as the HTML parser leaves them, or the hashes would not match a checkout with CRLF endings
    scripts = [_asset(name).replace("\r\n", "\n").replace("\r", "\n") for name in ("d3-hierarchy.min.js", "treemap.js")]
    for script in scripts:
        if "</script" in script.lower():  # would end the element early; the vendored file never has it
            raise ValueError("an inline script contains '</script'")
    hashes = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'" for s in scripts)
    csp = (
        f"default-src 'none'; script-src {hashes}; style-src 'unsafe-inline'; img-src data:; "
        "base-uri 'none'; form-action 'none'"
    )
    page = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_t(title)}</title><style>{_asset('report.css')}</style></head><body>"
        f'{body}<div id="tip" role="tooltip" hidden></div>'
        + "".join(f"<script>{s}</script>" for s in scripts)
        + "</body></html>"
    )
    return page.encode("utf-8", "backslashreplace").decode("utf-8")  # names with lone surrogates stay writable


def report_html(reports: Sequence[Report]) -> str:
    """One page for the reports of one or more files (error entries of `--json` become a line each)."""
    toc = ""
    if len(reports) > 1:
        links = "".join(f'<li><a href="#r{i}">{_t(r["path"])}</a></li>' for i, r in enumerate(reports))
        toc = f"<nav><ol>{links}</ol></nav>"
    sections = "".join(_report_section(i, r) for i, r in enumerate(reports))
    title = str(reports[0]["path"]) if len(reports) == 1 else f"{len(reports)} checkpoints"
    return _page(f"inspector: {title}", f"<h1>inspector: {_t(title)}</h1>{toc}{sections}")


def _worst(row: Mapping[str, Any]) -> str:
    return f"{row['n_findings']} ({_t(row['worst'])})" if row["worst"] else str(row["n_findings"])


def audit_html(all_rows: Sequence[Mapping[str, Any]]) -> str:
    """One page for a folder audit: a treemap of the folder's bytes and the table of every model (files that are
    not checkpoints are counted in the summary line only)."""
    rows = [r for r in all_rows if r.get("status") != "not recognised"]
    others = len(all_rows) - len(rows)
    table_rows = [
        [_t(r["path"]), _t(r["format"] or "-"), _t(r["framework"] or "-"), _n(r["parameters"]), _t(r["dtype"] or "-"),
         _n(r["file_bytes"]), _n(r["unexplained_bytes"]), _worst(r),
         _t(r.get("error") or "")]
        for r in rows
    ]  # fmt: skip
    total = sum(int(r["file_bytes"]) for r in rows)
    models = sum(1 for r in rows if not r.get("error"))
    fold = [f"{len(rows) - MAX_ROWS:,} more files (see --csv)", "", "", "", "", "", "", "", ""]
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
    body = (
        "<h1>inspector: folder audit</h1>"
        f"<p>{models:,} model(s), {len(rows) - models:,} unreadable, {total:,} bytes"
        f"{f'; {others:,} other file(s) not recognised' if others else ''}</p>"
        f'<section id="r0"><h3>Where the bytes go</h3>{_figure(0, audit_tree(rows))}'
        f"<h3>Models</h3>{_table(headers, _capped(table_rows, fold), numeric=(3, 5, 6))}</section>"
    )
    return _page("inspector: folder audit", body)


def diff_html(doc: Mapping[str, Any]) -> str:
    """One page for `inspector diff A B --html`: the verdict, both sides' totals, the differences grouped by layer,
    and the value comparison when --data gave one (the JSON document of the diff in, tables out)."""
    sides = [
        [name.upper(), _t(side["path"]), _t(side["format"]), _n(side["tensors"]), _n(side["parameters"]),
         _n(side["tensor_bytes"]), _n(side["file_bytes"])]
        for name, side in (("a", doc["a"]), ("b", doc["b"]))
    ]  # fmt: skip
    counts = ", ".join(f"{n:,} {kind.replace('_', ' ')}" for kind, n in doc["counts"].items()) or "no differences"
    by_layer = sorted(doc["differences"], key=lambda x: (str(x.get("layer") or ""), str(x.get("a") or x.get("b"))))
    rows = [
        [_t(x.get("layer") or "-"), _t(x["kind"].replace("_", " ")), _t(x.get("a") or "-"), _t(x.get("b") or "-"),
         "expected" if x.get("expected") else "loss or change", _t(x.get("message") or "")]
        for x in by_layer
    ]  # fmt: skip
    fold = [f"{len(rows) - MAX_ROWS:,} more differences (see --json)", "", "", "", "", ""]
    body = (
        f"<h1>inspector diff: {_t(doc['verdict'])}</h1><p>{_t(counts)}; {len(doc['pairs']):,} tensors paired</p>"
        '<section id="r0"><h3>The two checkpoints</h3>'
        + _table(["", "path", "format", "tensors", "parameters", "tensor bytes", "file bytes"], sides, (3, 4, 5, 6))
        + "<h3>Differences, by layer</h3>"
        + (_table(["layer", "kind", "A", "B", "", "what"], _capped(rows, fold)) if rows else "<p>none</p>")
    )
    if doc.get("values") is not None:
        values = [
            [_t(v["a"]), _t(v["b"]), "equal" if v["equal"] else "differs", _t(v.get("max_abs")), _t(v.get("max_rel"))]
            for v in doc["values"]
        ]
        fold = [f"{len(values) - MAX_ROWS:,} more tensors (see --json)", "", "", "", ""]
        body += "<h3>Values</h3>" + _table(["A", "B", "", "max abs diff", "max rel diff"], _capped(values, fold))
    return _page(f"inspector diff: {doc['a']['path']} vs {doc['b']['path']}", body + "</section>")
