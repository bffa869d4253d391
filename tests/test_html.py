"""The HTML page (`--html OUT`): its tables and treemap data against the real libraries' own readers, escaping of
hostile names, aggregation at 100,000 tensors, and the page itself opened in headless Chromium (no console
errors, no network request, a screenshot with the treemap's colours in it, hover and zoom working)."""

from __future__ import annotations

import base64
import json
import os
import re
import struct
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from inspector.cli import main
from inspector.errors import InspectorError
from inspector.render import report_dict
from inspector.render_html import MAX_CHILDREN, MAX_ROWS, audit_html, byte_tree, report_html
from inspector.report import inspect
from tests.chromium import Browser, Page, chromium_binary, png_pixels
from tests.conftest import SAMPLES

GPT2 = SAMPLES / "hf_rau" / "gpt2-tiny" / "model.safetensors"
ADAM = SAMPLES / "torch" / "adam_checkpoint.pt"
# one file per format family, each with something to show: optimizer state, compression, duplicates, shards
PAGES = [
    "hf_rau/gpt2-tiny/model.safetensors",
    "hf_rau/bert-tiny-sharded/model.safetensors.index.json",
    "torch/adam_checkpoint.pt",
    "torch/lstm_tied_legacy.pt",
    "keras/adam_trained.keras",
    "keras/adam_trained_legacy.h5",
    "basic/cnn_compressed.npz",
    "mxnet/gluon_tied.params",
]
PARAMETER_BLUE = (0x4E, 0x79, 0xA7)  # .b-parameters in inspector/html/report.css
HOSTILE = {
    "</script><script>alert(1)</script>.weight": (3,),
    '<img src=x onerror="alert(2)">.bias': (2,),
    "a&amp;b\x1b[31m'quoted'.weight": (4,),
}


class _Tables(HTMLParser):
    """Tables of a page by the <h3> above them, as rows of cell text; and the treemap data."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.trees: list[Any] = []
        self.heading = ""
        self.where = ""
        self.text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "h3":
            self.where, self.text = "h3", ""
        elif tag == "table":
            self.tables.setdefault(self.heading, [])
        elif tag == "tr":
            self.tables[self.heading].append([])
        elif tag in ("td", "th"):
            self.where, self.text = "cell", ""
        elif tag == "script" and ("class", "treemap-data") in attrs:
            self.where, self.text = "tree", ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "h3":
            self.heading = self.text.strip()
        elif tag in ("td", "th"):
            self.tables[self.heading][-1].append(self.text.strip())
        elif tag == "script" and self.where == "tree":
            self.trees.append(json.loads(self.text))
        if tag in ("h3", "td", "th", "script"):
            self.where = ""

    def handle_data(self, data: str) -> None:
        if self.where:
            self.text += data


def _parse(page: str) -> _Tables:
    parser = _Tables()
    parser.feed(page)
    return parser


def _num(cell: str) -> int:
    return int(cell.replace(",", ""))


def _leaves(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if "c" in node:
        for child in node["c"]:
            yield from _leaves(child)
    else:
        yield node


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("c", []):
        yield from _nodes(child)


# -- the page's figures, against the real libraries ----------------------------------------------------


def test_gpt2_tables_and_tree_match_safetensors_own_reader() -> None:
    safetensors = pytest.importorskip("safetensors")
    with safetensors.safe_open(str(GPT2), framework="numpy") as fh:
        shapes = {name: fh.get_slice(name).get_shape() for name in fh.keys()}  # noqa: SIM118
    # offsets from the format's own header (u64 length, JSON with data_offsets relative to its end)
    raw = GPT2.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    offsets = {k: 8 + n + v["data_offsets"][0] for k, v in header.items() if k != "__metadata__"}

    page = _parse(report_html([report_dict(inspect(str(GPT2)))]))
    total = sum(int(np.prod(s)) for s in shapes.values())
    layers = page.tables["Parameters by layer"][1:]
    assert sum(_num(row[4]) for row in layers) == total == 35_712
    roles = page.tables["Parameters by role"][1:]
    assert sum(_num(row[2]) for row in roles) == total
    buckets = page.tables["Where the bytes go"]
    assert buckets[-1][:2] == ["total", f"{GPT2.stat().st_size:,}"]
    (tree,) = page.trees
    assert tree["v"] == GPT2.stat().st_size == sum(leaf["v"] for leaf in _leaves(tree))
    tensors = {leaf["n"]: leaf for leaf in _leaves(tree) if "s" in leaf}
    assert {k: (v["s"], v["o"]) for k, v in tensors.items()} == {k: (shapes[k], offsets[k]) for k in shapes}


def test_adam_checkpoint_page_matches_torch_load() -> None:
    torch = pytest.importorskip("torch")
    ckpt = torch.load(ADAM, map_location="cpu", weights_only=True)
    unique = {(v.data_ptr(), v.shape): v for k, v in ckpt["model"].items() if "running" not in k and "batches" not in k}
    params = sum(v.numel() for v in unique.values())  # the tied decoder weight counts once, as parameters() does
    slots = sum(v.numel() for s in ckpt["optimizer"]["state"].values() for v in s.values())  # step counters too
    page = _parse(report_html([report_dict(inspect(str(ADAM)))]))
    assert sum(_num(row[4]) for row in page.tables["Parameters by layer"][1:]) == params == 5_234
    (tree,) = page.trees
    optimizer = next(b for b in tree["c"] if b["b"] == "optimizer")
    assert sum(leaf.get("e", 0) for leaf in _leaves(optimizer)) == slots


@pytest.mark.parametrize("name", PAGES)
def test_tree_adds_up_to_the_report(name: str) -> None:
    report = report_dict(inspect(str(SAMPLES / name)))
    tree = byte_tree(report)
    assert tree["v"] == report["file_bytes"]
    assert {b["b"]: b["v"] for b in tree["c"]} == report["bytes"]["by_kind"]
    for node in _nodes(tree):
        if "c" in node:
            assert len(node["c"]) <= MAX_CHILDREN + 1  # + a remainder node where tensors do not fill a bucket
            assert sum(c.get("a", c["v"]) for c in node["c"]) == pytest.approx(node["v"])
    # the bars drawn without JavaScript: bytes by bucket, parameters by role; each fills its width
    stacks = re.findall(r'<div class="stack"[^>]*>(.*?)</div>', report_html([report]))
    assert len(stacks) == 2 if report["parameters"]["total"] else 1
    for stack in stacks:
        assert sum(float(w) for w in re.findall(r"width:([0-9.]+)%", stack)) == pytest.approx(100, abs=0.01)


def test_overlapping_views_keep_true_bytes_and_fit_the_bucket(tmp_path: Path) -> None:
    """Two views of one storage saved by torch: 48 tensor bytes in a 40-byte region; areas scale, bytes stay."""
    torch = pytest.importorskip("torch")
    weights = torch.arange(10, dtype=torch.float32)
    path = tmp_path / "views.pt"
    torch.save({"a.weight": weights[:5], "b.weight": weights[3:]}, path)
    report = report_dict(inspect(str(path)))
    (bucket,) = [b for b in byte_tree(report)["c"] if b["b"] == "parameters"]
    assert bucket["v"] == weights.untyped_storage().nbytes() == 40
    assert sorted(leaf["v"] for leaf in _leaves(bucket)) == [5 * 4, 7 * 4]
    assert sum(c["a"] for c in bucket["c"]) == pytest.approx(40)


def test_hostile_names_are_text_never_markup(tmp_path: Path) -> None:
    save_file = pytest.importorskip("safetensors.numpy").save_file
    path = tmp_path / "hostile.safetensors"
    save_file({k: np.ones(s, dtype=np.float32) for k, s in HOSTILE.items()}, str(path))
    page = report_html([report_dict(inspect(str(path)))])
    assert "<script>alert" not in page and "<img" not in page and "\x1b" not in page
    assert page.count("<script") == 3  # the treemap data, d3-hierarchy and the page's script
    parsed = _parse(page)
    names = {row[0] for row in parsed.tables["Largest tensors"][1:]}
    assert "</script><script>alert(1)</script>.weight" in names
    assert "a&amp;b\\x1b[31m'quoted'.weight" in names  # the escape made visible, the entity kept literally
    assert {leaf["n"] for leaf in _leaves(parsed.trees[0]) if "s" in leaf} == names


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A safetensors file of 100,000 tensors (1,000 blocks of 100) and its report."""
    save_file = pytest.importorskip("safetensors.numpy").save_file
    path = tmp_path_factory.mktemp("many") / "many.safetensors"
    save_file({f"model.layers.{i // 100}.mlp.{i % 100}.weight": np.zeros(2, np.float32) for i in range(100_000)}, path)
    return path, report_dict(inspect(str(path)))


def test_100000_tensors_are_aggregated(many: tuple[Path, dict[str, Any]]) -> None:
    _, report = many
    assert len(report["tensors"]) == 100_000
    page = report_html([report])
    parsed = _parse(page)
    assert len(page) < 1_000_000
    assert sum(1 for _ in _nodes(parsed.trees[0])) < 2 * MAX_CHILDREN**2
    n_layers = len({t["layer"] or t["name"].rsplit(".", 1)[0] for t in report["tensors"]})
    layers = parsed.tables["Parameters by layer"]
    assert len(layers) == MAX_ROWS + 2 and layers[-1][0] == f"{n_layers - MAX_ROWS:,} more layers"
    assert sum(_num(row[4]) for row in layers[1:]) == 200_000  # the folded row keeps the total


def test_every_shared_fixture_renders_and_opens(fixtures: Path, browser: Browser, tmp_path: Path) -> None:
    """Every real file in ../shared/fixtures that the inspector reads, on one page: no error, one treemap each."""
    reports = []
    for path in sorted(p for p in fixtures.rglob("*") if p.is_file()):
        if path.parent.name in ("tool-output", "hexdumps", "scripts") or path.suffix in (".md", ".txt", ".py"):
            continue
        try:
            reports.append(report_dict(inspect(str(path))))
        except InspectorError:
            continue  # formats without a loader yet
    assert len(reports) > 30
    out = tmp_path / "fixtures.html"
    out.write_text(report_html(reports), encoding="utf-8")
    page = _open(browser, out)
    try:
        assert page.evaluate("document.documentElement.dataset.treemaps") == str(len(reports))
        boxes = page.evaluate("[...document.querySelectorAll('.treemap')].map(e => Number(e.dataset.boxes))")
        assert min(boxes) >= 1
    finally:
        page.close()


def test_cli_writes_the_page_and_never_over_an_inspected_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.html"
    assert main([str(GPT2), "--html", str(out)]) == 0
    assert "Where the bytes go" in capsys.readouterr().out  # the text report is still printed
    assert _parse(out.read_text(encoding="utf-8")).trees[0]["v"] == GPT2.stat().st_size
    victim = tmp_path / "model.safetensors"
    victim.write_bytes(GPT2.read_bytes())
    assert main([str(victim), "--html", str(victim)]) == 2
    assert victim.read_bytes() == GPT2.read_bytes()
    assert "is an inspected file, not overwritten" in capsys.readouterr().err
    assert main([str(GPT2), "--json", "--html", str(tmp_path / "missing" / "x.html")]) == 2
    assert json.loads(capsys.readouterr().out)["path"] == str(GPT2)


def test_page_of_several_files_with_an_unreadable_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "two.html"
    missing = str(tmp_path / "missing.safetensors")
    assert main([str(GPT2), missing, "--html", str(out)]) == 2
    page = out.read_text(encoding="utf-8")
    assert page.count("<section") == 2 and "no such file" in page and len(_parse(page).trees) == 1
    assert f'<a href="#r1">{missing}</a>' in page


def test_audit_page(tmp_path: Path) -> None:
    out = tmp_path / "audit.html"
    assert main([str(SAMPLES / "torch"), "--html", str(out), "--jobs", "1"]) == 0
    parsed = _parse(out.read_text(encoding="utf-8"))
    rows = parsed.tables["Models"][1:]
    sizes = {p.name: p.stat().st_size for p in (SAMPLES / "torch").rglob("*") if p.suffix in (".pt", ".bin")}
    assert {Path(r[0]).name: _num(r[5]) for r in rows} == sizes
    assert parsed.trees[0]["v"] == sum(sizes.values())
    assert "<table>" in audit_html([])  # an empty folder is still a page


# -- in a real browser -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    binary = chromium_binary()
    if binary is None:
        pytest.skip("chromium is not installed (Debian: apt-get install chromium; .ci/run does it)")
    instance = Browser(binary)
    try:
        yield instance
    finally:
        instance.close()


def _open(browser: Browser, path: Path) -> Page:
    page = browser.open(path.resolve().as_uri())
    assert page.requests() == [path.resolve().as_uri()], "the page fetched something besides itself"
    assert page.errors() == []
    assert page.evaluate("document.documentElement.dataset.treemaps") is not None, "the treemap script did not run"
    return page


def _colours(png: bytes) -> tuple[float, int, set[tuple[int, int, int]]]:
    """Share of non-white pixels, number of distinct colours, the set of colours."""
    pixels = png_pixels(png)[:, :, :3].reshape(-1, 3)
    colours = {(int(r), int(g), int(b)) for r, g, b in np.unique(pixels, axis=0)}
    return float((pixels < 245).any(axis=1).mean()), len(colours), colours


@pytest.mark.parametrize("name", PAGES)
def test_page_in_chromium(browser: Browser, tmp_path: Path, name: str) -> None:
    out = tmp_path / "page.html"
    main([str(SAMPLES / name), "--html", str(out)])
    page = _open(browser, out)
    try:
        boxes = int(page.evaluate("document.querySelector('.treemap').dataset.boxes"))
        report = report_dict(inspect(str(SAMPLES / name)))
        assert boxes >= len(report["bytes"]["by_kind"])
        page.evaluate("document.querySelector('.treemap').scrollIntoView()")
        inked, n_colours, colours = _colours(page.screenshot())
        assert inked > 0.25 and n_colours > 20, "the screenshot is (nearly) blank"
        if report["bytes"]["by_kind"].get("parameters", 0) > report["file_bytes"] / 50:
            assert PARAMETER_BLUE in colours
    finally:
        page.close()


def test_npy_page_in_chromium(browser: Browser, tmp_path: Path) -> None:
    path = tmp_path / "embedding.npy"
    np.save(path, np.zeros((300, 64), dtype=np.float16))
    out = tmp_path / "npy.html"
    main([str(path), "--html", str(out)])
    page = _open(browser, out)
    try:
        leaves = [leaf for leaf in _leaves(_parse(out.read_text(encoding="utf-8")).trees[0]) if "s" in leaf]
        assert [(leaf["s"], leaf["d"], leaf["v"]) for leaf in leaves] == [([300, 64], "F16", 300 * 64 * 2)]
        assert int(page.evaluate("document.querySelector('.treemap').dataset.boxes")) >= 2
    finally:
        page.close()


def test_hover_and_zoom_show_a_tensor(browser: Browser, tmp_path: Path) -> None:
    out = tmp_path / "gpt2.html"
    main([str(GPT2), "--html", str(out)])
    report = report_dict(inspect(str(GPT2)))
    page = _open(browser, out)
    try:
        page.evaluate("document.querySelector('.treemap').scrollIntoView()")
        page.evaluate("document.querySelector('.cell.b-parameters.d1').click()")  # zoom into the parameter bucket
        wte = next(t for t in report["tensors"] if t["name"] == "transformer.wte.weight")
        layer = json.dumps(wte["layer"])  # the layer the report gives the embedding ("wte" or "transformer.wte")
        page.evaluate(f"[...document.querySelectorAll('.cell.d1')].find(c => c.textContent.split('  ')[0] === {layer})"
                      ".click()")  # fmt: skip
        assert wte["layer"] in page.evaluate("document.querySelector('.crumbs').textContent")
        x, y = page.evaluate(
            "(() => { const r = document.querySelector('.cell.d1').getBoundingClientRect();"
            " return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        page.call("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)
        tip = page.evaluate("document.getElementById('tip').innerText")
        assert tip.splitlines()[0] == wte["name"]
        assert f"shape [{', '.join(map(str, wte['shape']))}], {wte['dtype']}, {wte['elements']:,} elements" in tip
        assert f"offset {wte['offset']:,}" in tip
        page.evaluate("document.querySelector('.crumbs button').click()")  # back to the whole file
        assert page.evaluate("document.querySelectorAll('.crumbs button').length") == 1
        # the keyboard: Tab to a box shows its tip, Enter zooms in, Escape zooms out
        page.evaluate("document.querySelector('.cell.b-parameters.d1').focus()")
        assert page.evaluate("document.getElementById('tip').innerText").startswith("parameter tensors\n")
        for key, keycode, levels in (("Enter", 13, 2), ("Escape", 27, 1)):
            page.call("Input.dispatchKeyEvent", type="keyDown", key=key, code=key, windowsVirtualKeyCode=keycode)
            assert page.evaluate("document.querySelectorAll('.crumbs button').length") == levels
            assert page.evaluate("document.activeElement.classList.contains('d1')")
        assert page.errors() == []
    finally:
        page.close()


def test_hostile_names_in_chromium(browser: Browser, tmp_path: Path) -> None:
    save_file = pytest.importorskip("safetensors.numpy").save_file
    path = tmp_path / "hostile.safetensors"
    save_file({k: np.ones(s, dtype=np.float32) for k, s in HOSTILE.items()}, str(path))
    out = tmp_path / "hostile.html"
    main([str(path), "--html", str(out)])
    page = _open(browser, out)
    try:
        assert not [e for e in page.events if e["method"] == "Page.javascriptDialogOpening"]
        assert page.evaluate("document.querySelectorAll('img').length") == 0
        text = page.evaluate("document.body.textContent")
        assert "</script><script>alert(1)</script>.weight" in text
    finally:
        page.close()


def test_100000_tensors_in_chromium(browser: Browser, tmp_path: Path, many: tuple[Path, dict[str, Any]]) -> None:
    out = tmp_path / "many.html"
    out.write_text(report_html([many[1]]), encoding="utf-8")
    page = _open(browser, out)
    try:
        assert page.evaluate("document.getElementsByTagName('*').length") < 10_000
        page.evaluate("document.querySelector('.cell.b-parameters.d1').click()")
        assert int(page.evaluate("document.querySelector('.treemap').dataset.boxes")) <= MAX_CHILDREN**2
        assert page.errors() == []
    finally:
        page.close()


def test_audit_page_in_chromium(browser: Browser, tmp_path: Path) -> None:
    out = tmp_path / "audit.html"
    assert main([str(SAMPLES), "--html", str(out)]) == 0
    page = _open(browser, out)
    try:
        assert int(page.evaluate("document.querySelector('.treemap').dataset.boxes")) > len(os.listdir(SAMPLES))
        page.evaluate("document.querySelector('.cell.d1').focus()")
        assert "% of the folder)" in page.evaluate("document.getElementById('tip').innerText")
        assert page.errors() == []
    finally:
        page.close()


def test_printable(browser: Browser, tmp_path: Path) -> None:
    out = tmp_path / "adam.html"
    main([str(ADAM), "--html", str(out)])
    page = _open(browser, out)
    try:
        page.call("Emulation.setEmulatedMedia", media="print")
        assert page.evaluate("getComputedStyle(document.querySelector('.crumbs')).display") == "none"
        assert page.evaluate("getComputedStyle(document.querySelector('table')).display") == "table"
        pdf = base64.b64decode(page.call("Page.printToPDF", printBackground=True)["data"])
        assert pdf.startswith(b"%PDF") and len(pdf) > 20_000
        assert page.errors() == []
    finally:
        page.close()


def test_diff_page_in_chromium(browser: Browser, tmp_path: Path) -> None:
    """`inspector diff A B --data --html`: the verdict, both sides and every difference, readable in a browser."""
    out = tmp_path / "diff.html"
    a, b = SAMPLES / "torch" / "lstm_tied.pt", SAMPLES / "torch" / "lstm_tied_fp16.pt"
    assert main(["diff", str(a), str(b), "--data", "--html", str(out)]) == 1  # dtype changes: differences
    page = browser.open(out.resolve().as_uri())
    try:
        assert page.requests() == [out.resolve().as_uri()] and page.errors() == []
        assert page.evaluate("document.querySelector('h1').innerText") == "inspector diff: different"
        rows = page.evaluate(
            "Array.from(document.querySelectorAll('table')[1].tBodies[0].rows).map(r => r.cells[1].innerText)"
        )
        assert rows == ["dtype changed"] * 15  # one row per tensor whose dtype changed, nothing else
        assert page.evaluate("document.querySelectorAll('table').length") == 3  # sides, differences, values
        share, _, _ = _colours(page.screenshot())
        assert share > 0.05
    finally:
        page.close()
