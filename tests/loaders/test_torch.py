"""PyTorch zip, legacy and tar files read without torch; cross-checked against torch.load when installed."""

from __future__ import annotations

import io
import json
import pickle
import struct
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from inspector import load
from inspector.cli import main
from inspector.records import RegionKind, TensorKind
from inspector.report import inspect
from loaders.base import check_invariants
from tests.conftest import FIXTURES, SAMPLES, fixture_path

TORCH_FIXTURES = sorted(p.name for p in (FIXTURES / "torch").glob("*.pt")) if (FIXTURES / "torch").is_dir() else []
TORCH_SAMPLES = SAMPLES / "torch"
MANIFEST = json.loads((TORCH_SAMPLES / "manifest.json").read_text())
DTYPE_NAMES = {
    "F32": "float32",
    "F16": "float16",
    "BF16": "bfloat16",
    "I64": "int64",
    "I8": "int8",
    "U16": "uint16",
    "F8_E4M3": "float8_e4m3fn",
    "F64": "float64",
}


@pytest.mark.parametrize("name", TORCH_FIXTURES)
def test_every_fixture_reads_and_tiles(name: str) -> None:
    ckpt = load(fixture_path(f"torch/{name}"))
    check_invariants(ckpt)
    assert not [r for r in ckpt.regions if r.kind is RegionKind.UNKNOWN]


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_samples_match_what_torch_reported(name: str) -> None:
    entry = MANIFEST[name]
    ckpt = load(TORCH_SAMPLES / name)
    check_invariants(ckpt)
    assert {t.name: [list(t.shape), DTYPE_NAMES[t.dtype]] for t in ckpt.tensors} == entry["tensors"]
    assert ckpt.n_parameters == entry["n_parameters"]  # torch's unique parameters(): tied weights once
    assert sum(t.n_elements for t in ckpt.unique(TensorKind.BUFFER)) == entry["n_buffer_elements"]
    assert sum(t.n_elements for t in ckpt.unique(TensorKind.OPTIMIZER)) == entry.get("n_optimizer_elements", 0)


def test_checkpoint_sections_and_optimizer_state() -> None:
    ckpt = load(fixture_path("torch/checkpoint_with_optim.pt"))
    sections = {t.name: (t.section, t.kind) for t in ckpt.tensors}
    assert sections["model.emb.weight"] == ("model", TensorKind.PARAMETER)
    assert sections["model.bn.running_mean"] == ("model", TensorKind.BUFFER)
    assert sections["optimizer.state.0.exp_avg_sq"] == ("optimizer", TensorKind.OPTIMIZER)
    assert ckpt.unique(TensorKind.OPTIMIZER)[0].name == "optimizer.state.0.step"
    # tool-output/torch_zip_inspect.txt: storage 0 at 2368, storage 8 at 3520
    offsets = {t.name: t.offset for t in ckpt.tensors}
    assert offsets["model.emb.weight"] == 2368 and offsets["optimizer.state.0.exp_avg"] == 3520
    assert [t.alias_of for t in ckpt.tensors if t.name == "model.out.weight"] == ["model.emb.weight"]


def test_views_expands_and_meta_tensors() -> None:
    only = load(fixture_path("torch/slice_only.pt"))
    unreferenced = sum(r.length for r in only.regions if r.kind is RegionKind.UNREFERENCED)
    assert unreferenced == 400 - 16  # the whole base storage is saved for a 4-element slice
    assert only.tensors[0].offset == 704 + 10 * 4
    expanded = load(fixture_path("torch/expanded_stride0.pt")).tensors[0]
    assert expanded.nbytes == 16_000 and expanded.span_bytes == 4 and "stride-0" in expanded.notes[0]
    meta = load(fixture_path("torch/meta_tensor.pt")).tensors[0]
    assert meta.offset is None and meta.shape == (1000, 1000)
    dtypes = {t.name: t.dtype for t in load(fixture_path("torch/dtypes.pt")).tensors}
    assert dtypes == {
        "bf16": "BF16",
        "f16": "F16",
        "i8": "I8",
        "fp8": "F8_E4M3",
        "u16": "U16",
        "scalar": "I64",
        "param": "F32",
    }


def test_a_checkpoint_s_scalars_are_attributes() -> None:
    """What a training checkpoint keeps beside its tensors is shown (the fixture's `epoch` and `note`): read from the
    pickle's values, never by running it."""
    ckpt = load(fixture_path("torch/checkpoint_with_optim.pt"))
    assert {k: v for k, v in ckpt.attributes.items() if k.startswith("checkpoint.")} == {
        "checkpoint.epoch": "3",
        "checkpoint.note": "hello",
    }


@pytest.mark.parametrize("zipped", [True, False])
def test_checkpoint_scalars_are_bounded_and_escaped(tmp_path: Path, zipped: bool) -> None:
    """A dict of scalars is shown key by key (a model's hyperparameters), a short list of scalars as a list; text a
    terminal would act on is escaped, a long string cut, a number too large to print in bounded time, a structure
    and a tensor left out (written by torch.save: the zip container and the legacy one)."""
    torch = pytest.importorskip("torch")
    state = {
        "model": {"w": torch.zeros(2)},
        "args": {"n_layer": 2, "lr": 0.5, "name": "gpt", "layers": [0, 3], "deep": {"x": 1}},
        "note": "red\x1b[31m\nline",
        "long": "y" * 500,
        "big": 2**100,
        "step": 7,
    }
    path = tmp_path / "ckpt.pt"
    torch.save(state, path, _use_new_zipfile_serialization=zipped)
    values = {k: v for k, v in load(path).attributes.items() if k.startswith("checkpoint.")}
    assert values == {
        "checkpoint.args.n_layer": "2",
        "checkpoint.args.lr": "0.5",
        "checkpoint.args.name": "gpt",
        "checkpoint.args.layers": "[0, 3]",
        "checkpoint.note": repr("red\x1b[31m\nline"),
        "checkpoint.long": "y" * 120 + "...",
        "checkpoint.step": "7",
    }


def test_legacy_and_tar_formats() -> None:
    legacy = load(fixture_path("torch/legacy.pt"))
    assert legacy.format == "pytorch-legacy" and legacy.attributes["torch.container"] == "legacy"
    # tool-output/torch_legacy.txt: storages at 452 (400 bytes, a view at element 10) and 860
    assert {t.name: t.offset for t in legacy.tensors} == {"a": 860, "a_view": 452 + 40}
    tar = load(fixture_path("torch/crafted_tar_format.pt"))
    assert tar.attributes["torch.container"] == "tar"
    assert [(t.name, t.shape, t.dtype) for t in tar.tensors] == [("w", (2, 3), "F32")]


def test_torchscript_and_whole_module() -> None:
    scripted = load(fixture_path("torch/scripted.pt"))
    assert scripted.attributes["torch.kind"] == "torchscript"
    whole = load(fixture_path("torch/whole_module_and_numpy.pt"))
    assert [t.name for t in whole.tensors] == ["model.0.weight", "model.0.bias"]
    assert "UNSAFE_CONTENT" not in {f.code for f in whole.findings}


WHOLE_MODULE_WRITER = """
import sys, torch
class Head(torch.nn.Module):  # as ultralytics' Detect head: tensors kept as plain attributes beside its layers
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 1)
        self.norm = torch.nn.BatchNorm2d(4)
        self.register_buffer("anchor_grid", torch.zeros(2, 3))
        self.register_buffer("scratch", torch.zeros(5), persistent=False)
        self.stride = torch.tensor([8.0, 16.0, 32.0])
        self.strides = [torch.ones(2)]
model = torch.nn.Sequential(torch.nn.Linear(3, 3), Head()).half()
torch.save({"model": model, "epoch": 3}, sys.argv[1])
print(sum(p.numel() for p in model.parameters()), sum(b.numel() for b in model.buffers()))
"""


@pytest.mark.reference
def test_a_pickled_module_s_tensor_attributes_are_neither_parameters_nor_buffers(tmp_path: Path) -> None:
    """`torch.save(model)` pickles each module's __dict__: `_parameters`, `_buffers` (the persistent ones), `_modules`,
    and its other attributes, which may hold tensors (ultralytics' YOLO checkpoints: `stride`, `anchors`): those are
    other state, outside the count torch prints and outside its buffers."""
    pytest.importorskip("torch")
    path = tmp_path / "whole.pt"
    out = subprocess.run([sys.executable, "-c", WHOLE_MODULE_WRITER, str(path)], capture_output=True, text=True,
                         check=True, cwd=tmp_path).stdout  # fmt: skip
    n_parameters, n_buffers = map(int, out.split())
    ckpt = load(path)
    assert ckpt.n_parameters == n_parameters
    kinds = {t.name: t.kind for t in ckpt.tensors}
    other = TensorKind.OTHER
    assert {n for n, k in kinds.items() if k is other} == {"model.1.stride", "model.1.strides.0"}
    buffers = sum(t.n_elements for t in ckpt.tensors if t.kind is TensorKind.BUFFER)
    assert buffers == n_buffers  # (a non-persistent one too: a module's __dict__ is pickled whole)
    assert "UNSAFE_CONTENT" not in {f.code for f in ckpt.findings}


def test_reconciliation_names_optimizer_half_precision_and_views() -> None:
    adam = inspect(TORCH_SAMPLES / "adam_checkpoint.pt").accounting
    assert adam.by_kind["optimizer"] == 4 * MANIFEST["adam_checkpoint.pt"]["n_optimizer_elements"]
    assert any("optimizer state is" in n for n in adam.notes)
    fp16 = inspect(TORCH_SAMPLES / "lstm_tied_fp16.pt").accounting
    assert any("F16 (16 bits)" in n for n in fp16.notes)
    views = inspect(fixture_path("torch/view_and_base.pt"))
    assert views.accounting.by_kind.get("parameters") == 400  # the slice lies inside 'whole''s storage


@pytest.mark.reference
@pytest.mark.parametrize("name", [n for n in TORCH_FIXTURES if n not in ("scripted.pt", "crafted_tar_format.pt")])
def test_fixtures_agree_with_torch_load(name: str) -> None:
    torch = pytest.importorskip("torch")
    path = fixture_path(f"torch/{name}")
    ref = torch.load(path, weights_only=False, map_location="cpu")
    flat: dict[str, tuple[tuple[int, ...], str]] = {}

    def visit(obj: object, prefix: str) -> None:
        if isinstance(obj, torch.Tensor):
            flat[prefix or "tensor"] = (tuple(obj.shape), str(obj.dtype).removeprefix("torch."))
        elif isinstance(obj, dict):
            for k, v in obj.items():
                visit(v, f"{prefix}.{k}" if prefix else str(k))
        elif isinstance(obj, (list, tuple)):
            for i, v in enumerate(obj):
                visit(v, f"{prefix}.{i}" if prefix else str(i))
        elif isinstance(obj, torch.nn.Module):
            for k, v in obj.state_dict().items():
                flat[f"{prefix}.{k}"] = (tuple(v.shape), str(v.dtype).removeprefix("torch."))

    visit(ref, "")
    ours = {t.name: (t.shape, DTYPE_NAMES[t.dtype]) for t in load(path).tensors}
    assert ours == flat


def test_import_torch_never_happens() -> None:
    code = (
        "import sys, inspector.report as r; r.inspect(sys.argv[1]); "
        "print([m for m in ('torch', 'numpy.core.multiarray_torch') if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(TORCH_SAMPLES / "adam_checkpoint.pt")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert out == "[]"


# -- malicious pickles ------------------------------------------------------------------------------------------


class _Evil:
    def __init__(self, target: Path, how: str) -> None:
        self.target, self.how = target, how

    def __reduce__(self) -> tuple[object, tuple[str, ...]]:
        import os
        import subprocess as sp

        funcs = {
            "os": (os.system, (f"touch {self.target}",)),
            "eval": (eval, (f"open({str(self.target)!r}, 'w')",)),
            "popen": (sp.Popen, (["touch", str(self.target)],)),
        }
        return funcs[self.how]  # type: ignore[return-value]


def _evil_zip(path: Path, payload: bytes) -> None:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("archive/data.pkl", payload)
        zf.writestr("archive/version", "3\n")


def _evil_legacy(path: Path, payload: bytes) -> None:
    magic = bytes.fromhex("80028a0a6cfc9c46f9206aa850192e")
    path.write_bytes(
        magic + pickle.dumps(1001, protocol=2) + pickle.dumps({}, protocol=2) + payload + pickle.dumps([], protocol=2)
    )


@pytest.mark.parametrize("how", ["os", "eval", "popen"])
@pytest.mark.parametrize("protocol", [2, 4])  # GLOBAL and STACK_GLOBAL forms
@pytest.mark.parametrize("container", ["zip", "legacy"])
def test_malicious_pickles_never_run(
    tmp_path: Path, how: str, protocol: int, container: str, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "pwned"
    payload = pickle.dumps({"w": _Evil(target, how)}, protocol=protocol)
    assert (b"\x93" in payload) == (protocol == 4)
    path = tmp_path / "model.pt"
    (_evil_zip if container == "zip" else _evil_legacy)(path, payload)
    ckpt = load(path)
    unsafe = [f for f in ckpt.findings if f.code == "UNSAFE_CONTENT"]
    assert unsafe and any(n in unsafe[0].message for n in ("posix.system", "builtins.eval", "subprocess.Popen"))
    assert main([str(path)]) == 3
    assert "unsafe content" in capsys.readouterr().err
    assert not target.exists()


def test_truncated_storage_is_a_clear_error(tmp_path: Path) -> None:
    data = (TORCH_SAMPLES / "lstm_tied.pt").read_bytes()
    path = tmp_path / "cut.pt"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(Exception) as info:
        load(path)
    assert type(info.value).__module__ == "inspector.errors"


def test_recursive_pickle_structures_are_bounded(tmp_path: Path) -> None:
    a: list[object] = []
    a.append(a)
    buf = io.BytesIO()
    pickle.dump({"loop": a, "deep": [[[[[[[[1]]]]]]]]}, buf, protocol=2)
    _evil_zip(tmp_path / "r.pt", buf.getvalue())
    assert load(tmp_path / "r.pt").tensors == ()


def test_huge_declared_lengths_in_pickles(tmp_path: Path) -> None:
    payload = b"\x80\x02" + b"\x8d" + struct.pack("<Q", 1 << 60) + b"."  # BINUNICODE8 of 2^60 bytes
    _evil_zip(tmp_path / "h.pt", payload)
    with pytest.raises(Exception) as info:
        load(tmp_path / "h.pt")
    assert type(info.value).__module__ == "inspector.errors"


def test_view_overhead_is_named_in_the_reconciliation() -> None:
    acc = inspect(fixture_path("torch/slice_only.pt")).accounting
    assert acc.by_kind["unreferenced"] == 384
    assert any("view of a larger tensor" in n for n in acc.notes)
    assert any(s.label.startswith("unreferenced storage") and s.nbytes == 384 for s in acc.steps)


@pytest.mark.reference
def test_training_checkpoint_sections(tmp_path: Path) -> None:
    """EMA copies, scheduler, scaler and RNG state are labelled and kept out of the parameter count."""
    import argparse

    torch = pytest.importorskip("torch")
    model = torch.nn.Linear(4, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.ones(2, 4)).sum().backward()
    opt.step()
    sched = torch.optim.lr_scheduler.StepLR(opt, 1)
    ema = {k: v.clone() for k, v in model.state_dict().items()}
    path = tmp_path / "train.pt"
    torch.save({"model_state_dict": model.state_dict(), "optimizer_state_dict": opt.state_dict(), "ema": ema,
                "lr_scheduler": sched.state_dict(), "rng_state": torch.get_rng_state(), "epoch": 7,
                "args": argparse.Namespace(lr=0.1)}, path)  # fmt: skip
    ckpt = load(path)
    by_name = {t.name: t for t in ckpt.tensors}
    assert ckpt.n_parameters == 15  # Linear(4, 3): the model's parameters only
    assert by_name["ema.weight"].section == "ema" and by_name["ema.weight"].kind is TensorKind.OTHER
    assert by_name["rng_state"].section == "rng" and by_name["rng_state"].kind is TensorKind.OTHER
    momentum = [t for t in ckpt.tensors if t.name.endswith("momentum_buffer")]
    assert len(momentum) == 2 and all(t.kind is TensorKind.OPTIMIZER for t in momentum)
    codes = {f.code for f in ckpt.findings}
    assert "UNSAFE_CONTENT" not in codes and "PICKLE_GLOBALS" in codes  # argparse.Namespace: data, kept inert


def test_weights_only_globals_are_torchs() -> None:
    """The allow-list `PICKLE_GLOBALS` is judged against is the installed torch's own (2.13's)."""
    pytest.importorskip("torch")
    from torch._weights_only_unpickler import _get_allowed_globals

    from loaders._pickle_policy import WEIGHTS_ONLY_GLOBALS

    assert set(_get_allowed_globals()) == WEIGHTS_ONLY_GLOBALS


def _objects(torch: Any) -> dict[str, object]:
    """What people torch.save, by what it is: state dicts (weights only) and whole objects."""
    import argparse

    import numpy as np

    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Flatten(), torch.nn.Linear(4, 2)
    )
    sgd = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return {
        "state_dict": model.state_dict(),
        "checkpoint": {"model": model.state_dict(), "optimizer": sgd.state_dict(), "epoch": 3, "best": 0.5},
        "parameter_and_containers": {
            "p": torch.nn.Parameter(torch.ones(2)),
            "s": {1, 2},
            "c": 1j,
            "b": bytearray(b"x"),
        },
        "half_precisions": {"h": torch.ones(3, dtype=torch.float16), "b": torch.ones(3, dtype=torch.bfloat16)},
        "whole_module": model,
        "whole_optimizer": {"optimizer": sgd},
        "namespace": {"model": model.state_dict(), "args": argparse.Namespace(lr=0.1)},
        "numpy_array": {"model": model.state_dict(), "mean": np.zeros(3, np.float32)},
    }


@pytest.mark.reference
def test_pickle_globals_are_what_torch_load_refuses_by_default(tmp_path: Path) -> None:
    """`PICKLE_GLOBALS` is reported exactly for the files torch.load(weights_only=True), torch's default, refuses:
    a whole module or optimizer, argparse.Namespace, a numpy array; never for a state dict or checkpoint of tensors,
    numbers and the containers torch accepts."""
    torch = pytest.importorskip("torch")
    for name, value in _objects(torch).items():
        path = tmp_path / f"{name}.pt"
        torch.save(value, path)
        try:
            torch.load(path, weights_only=True)
            refused = False
        except Exception:  # (pickle.UnpicklingError: "Weights only load failed")
            refused = True
        findings = {f.code: f for f in load(path).findings}
        assert ("PICKLE_GLOBALS" in findings) == refused, name
        assert "UNSAFE_CONTENT" not in findings, name
        assert refused == (name in ("whole_module", "whole_optimizer", "namespace", "numpy_array")), name
    named = load(tmp_path / "whole_module.pt").findings
    assert any("torch.nn.modules.container.Sequential" in f.message and "weights_only" in f.message for f in named)


def _central_directory(data: bytes) -> tuple[int, list[bytes]]:
    """(offset, entries) of a zip's central directory, each entry's bytes as stored."""
    info = zipfile.ZipFile(io.BytesIO(data))
    start = info.start_dir
    entries, pos = [], start
    for _ in info.infolist():
        name_len, extra_len, comment_len = struct.unpack_from("<HHH", data, pos + 28)
        end = pos + 46 + name_len + extra_len + comment_len
        entries.append(data[pos:end])
        pos = end
    return start, entries


def test_zip_headers_read_without_a_tensor_byte_and_regions_in_any_directory_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each member costs its local header's two reads (the data descriptor's signature read with the next header),
    none of them reaching a tensor byte; a directory listing the members out of file order gives the same regions
    (`loaders._zip.in_file_order` then leaves the sorting to `tile`)."""
    torch = pytest.importorskip("torch")
    from tests.conftest import record_reads

    state = {f"layer{i}.weight": torch.full((30, 50 + i), float(i)) for i in range(12)}
    path = tmp_path / "state.pt"
    torch.save(state, path)
    data = path.read_bytes()
    n_members = len(zipfile.ZipFile(path).infolist())
    reads = record_reads(monkeypatch)
    ckpt = load(path)
    monkeypatch.undo()
    check_invariants(ckpt)
    tensors = {t.name: t for t in ckpt.tensors}
    assert {n: t.shape for n, t in tensors.items()} == {n: tuple(v.shape) for n, v in state.items()}
    assert {n: data[t.offset : t.offset + t.nbytes] for n, t in tensors.items()} == {
        n: v.numpy().tobytes() for n, v in state.items()
    }
    payload = [(t.offset, t.offset + t.nbytes) for t in ckpt.tensors]
    head = (str(path), 0, 4096)  # the probe's first 4 KiB, read once for sniffing (any file)
    assert reads[0] == head and head not in reads[1:]
    for _, at, n in reads[1:]:
        assert not any(at < end and start < at + n for start, end in payload), (at, n)
    assert len(reads) <= 2 * n_members + 8  # head, end records, directory, data.pkl, version
    # the same archive with its directory listing the members (after the first, which names the folder) reversed
    start, entries = _central_directory(data)
    shuffled = tmp_path / "shuffled.pt"
    shuffled.write_bytes(
        data[:start] + entries[0] + b"".join(reversed(entries[1:])) + data[start + sum(map(len, entries)) :]
    )
    assert [m.filename for m in zipfile.ZipFile(shuffled).infolist()][1] == zipfile.ZipFile(path).infolist()[
        -1
    ].filename
    assert torch.load(shuffled, weights_only=True).keys() == state.keys()
    again = load(shuffled)
    check_invariants(again)
    assert again.regions == ckpt.regions and again.tensors == ckpt.tensors


def test_small_members_are_read_in_windows_that_pull_no_page_the_structures_do_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An archive of small storages: the local headers and descriptors of many members come in one read, and every
    page a read touches holds a byte of the zip's structures or data.pkl (what separate reads of exactly those would
    pull from a cold file); tensors larger than a page are never touched. Same regions and tensors as the members'
    structures read one at a time (a probe whose reads go through its own `read_at`, as a view's do)."""
    torch = pytest.importorskip("torch")
    from inspector.probe import Probe
    from loaders import _zip
    from tests.conftest import record_reads

    state = {f"small{i}": torch.full((3 + i % 5,), float(i)) for i in range(300)}
    state |= {f"large{i}": torch.full((1500 + i,), float(i)) for i in range(3)}  # 6 KiB and more: past a page
    path = tmp_path / "state.pt"
    torch.save(state, path)
    n_members = len(zipfile.ZipFile(path).infolist())
    reads = record_reads(monkeypatch)
    ckpt = load(path)
    monkeypatch.undo()
    check_invariants(ckpt)
    loaded = torch.load(path, weights_only=True)
    data = path.read_bytes()
    offsets = {t.name: t.offset for t in ckpt.tensors if t.offset is not None}
    assert {t.name: data[offsets[t.name] : offsets[t.name] + t.nbytes] for t in ckpt.tensors} == {
        n: v.numpy().tobytes() for n, v in loaded.items()
    }
    assert len(reads) < n_members / 10
    page = _zip.PAGE
    structure = {
        n
        for r in ckpt.regions
        if r.kind in (RegionKind.HEADER, RegionKind.PADDING) or r.label == "record 'state/data.pkl'"
        for n in range(r.start // page, (r.end - 1) // page + 1)
    }
    touched = {n for _, at, n_bytes in reads[1:] for n in range(at // page, (at + n_bytes - 1) // page + 1)}
    assert touched <= structure
    large = [(offsets[t.name], offsets[t.name] + t.nbytes) for t in ckpt.tensors if t.name.startswith("large")]
    assert not any(at < end and start < at + n for _, at, n in reads[1:] for start, end in large)

    class OwnReads(Probe):  # reads through its own read_at: one structure at a time
        def read_at(self, offset: int, n: int, *, fmt: str = "file", what: str = "data") -> bytes:
            return Probe.read_at(self, offset, n, fmt=fmt, what=what)

    with Probe(path) as whole, OwnReads(path) as own:
        assert _zip.read_zip(whole, "zip") == _zip.read_zip(own, "zip")
        assert len(_zip.read_members(own, "zip")[0]) == n_members


def test_windows_plan_each_member_once_whatever_the_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hostile archive whose members' local headers lie side by side but whose data descriptors all sit far away:
    each descriptor read leaves the window, and a window planned again from each next member would read the
    following headers once per member (quadratic). Planned once, the reads stay within what reading each structure
    alone costs, and the members are those of a reading without windows."""
    from inspector.probe import Probe
    from loaders import _zip
    from tests.conftest import record_reads

    n, far = 3000, 3000 * 30 + 2 * _zip.PAGE  # local headers at 30 * i, every data descriptor at `far`
    locals_ = b"".join(struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0x8, 0, 0, 0, 0, 0, 0, 0, 0) for _ in range(n))
    body = locals_ + bytes(far - len(locals_)) + struct.pack("<4sIII", b"PK\x07\x08", 0, 0, 0)
    cd = b"".join(
        struct.pack(
            "<4sHHHHHHIIIHHHHHII",
            b"PK\x01\x02",
            20,
            20,
            0x8,
            0,
            0,
            0,
            0,
            far - (30 * i + 30),
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            30 * i,
        )
        for i in range(n)
    )
    eocd = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, n, n, len(cd), len(body), 0)
    path = tmp_path / "far.zip"
    path.write_bytes(body + cd + eocd)

    class OwnReads(Probe):  # reads through its own read_at: one structure at a time
        def read_at(self, offset: int, size: int, *, fmt: str = "file", what: str = "data") -> bytes:
            return Probe.read_at(self, offset, size, fmt=fmt, what=what)

    reads = record_reads(monkeypatch)
    with Probe(path) as probe:
        members, regions = _zip.read_zip(probe, "zip")
    monkeypatch.undo()
    with OwnReads(path) as own:
        assert (members, regions) == _zip.read_zip(own, "zip")
    assert len(members) == n and {m.data_offset + m.compress_size for m in members} == {far}
    alone = sum(n for _, _, n in reads[1:]) - len(cd) - 22  # the headers and descriptors, read in windows
    assert alone <= n * (30 + 16) + len(locals_) + _zip.PAGE, alone


def test_zip_errors_come_in_member_order_though_the_directory_is_read_first(tmp_path: Path) -> None:
    """The directory's entries are read before the local headers (the windows need the members' offsets), yet a
    broken local header of an earlier member is the error, before a broken directory entry after it; without it,
    the directory entry's error, which passing over broken members (`readable_members`) does not pass over."""
    from inspector.errors import FormatError
    from inspector.probe import Probe
    from loaders import _zip

    path = tmp_path / "three.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for name in ("a", "b", "c"):
            zf.writestr(name, b"x" * 10)
    data = path.read_bytes()
    info = zipfile.ZipFile(path)
    third_entry = info.start_dir + 2 * (46 + 1)  # entries of one-letter names, no extra, no comment
    assert data[third_entry : third_entry + 4] == b"PK\x01\x02"
    broken_entry = data[:third_entry] + b"XK" + data[third_entry + 2 :]
    both = b"XK" + broken_entry[2:]  # and member a's local header signature
    for content, error in ((both, "member 'a': bad local header signature"), (broken_entry, "bad central directory")):
        path.write_bytes(content)
        with Probe(path) as probe, pytest.raises(FormatError, match=error):
            _zip.read_zip(probe, "zip")
    path.write_bytes(both)
    with Probe(path) as probe, pytest.raises(FormatError, match="bad central directory"):
        _zip.readable_members(probe, "zip")


def test_walk_gives_tensors_depth_first_within_its_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """A dict's tensors are given as met, a nested container explored before the next sibling; the budget counts
    every object visited, the tensors given directly too."""
    from loaders import _torch
    from loaders._pickle_values import PickleError, TensorRef

    def tensor(parameter: bool = False) -> TensorRef:
        return TensorRef(None, 0, (1,), (1,), "F32", parameter)

    value = {
        "a": tensor(),
        "b": {"c": tensor(True), "d": [tensor(), {"e": tensor()}], "g": tensor()},
        "f": tensor(),
        "m": {"_parameters": {"w": tensor()}, "_buffers": {"r": tensor()}, "_modules": {"sub": {"x": tensor()}}},
    }
    found = [(path, hint) for path, _, hint in _torch.walk(value)]
    P, B = TensorKind.PARAMETER, TensorKind.BUFFER  # noqa: N806
    assert found == [("a", None), ("b.c", P), ("b.d.0", None), ("b.d.1.e", None), ("b.g", None), ("f", None),
                     ("m.w", P), ("m.r", B), ("m.sub.x", None)]  # fmt: skip
    monkeypatch.setattr(_torch, "MAX_WALK", 5)  # the dict and four tensors: five objects
    assert len(list(_torch.walk({str(i): tensor() for i in range(4)}))) == 4
    with pytest.raises(PickleError, match="too large"):
        list(_torch.walk({str(i): tensor() for i in range(5)}))
    monkeypatch.setattr(_torch, "MAX_DEPTH", 2)  # tensors at depth 2 pass, at depth 3 do not
    assert len(list(_torch.walk({"a": {"b": tensor()}}))) == 1
    with pytest.raises(PickleError, match="too deep"):
        list(_torch.walk({"a": {"b": {"c": tensor()}}}))


def test_zip_structure_labels_name_their_members_and_are_made_when_read(tmp_path: Path) -> None:
    """Each member's local header, alignment padding and data descriptor are labelled with its name as zipfile
    reads it; the region holds the name once (its `subject`), the label is made when asked for."""
    torch = pytest.importorskip("torch")
    path = tmp_path / "state.pt"
    torch.save({"a": torch.zeros(3), "b": torch.ones(2, 2)}, path)
    ckpt = load(path)
    check_invariants(ckpt)
    infos = zipfile.ZipFile(path).infolist()
    headers = [r for r in ckpt.regions if r.label.startswith("zip local header ")]
    assert [(r.start, r.label) for r in headers] == [
        (i.header_offset, f"zip local header {i.filename!r}") for i in infos
    ]
    padding = [r for r in ckpt.regions if r.kind is RegionKind.PADDING]
    descriptors = [r for r in ckpt.regions if r.label.startswith("zip data descriptor ")]
    assert len(padding) == len(descriptors) == len(infos)  # torch pads every member and writes a descriptor after it
    for r in headers + padding + descriptors:
        assert r.subject is not None and r.subject in r.label and "%" not in r.label
        assert r.text.count("%s") == 1 and r.text % (r.subject,) == r.label


@pytest.mark.parametrize("namesake", [False, True])
def test_the_storages_block_reads_as_the_record_by_record_lookup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, namesake: bool
) -> None:
    """The storages' records found as a block in C calls (torch.save's order, no other name in data/) give what the
    lookup of each record by its name gives, on a torch.save archive and on one with a storage's record named again
    after the block (an appended copy: the block is then not used)."""
    torch = pytest.importorskip("torch")
    from loaders import _zip

    state = {f"t{i}": torch.full((4,), float(i)) for i in range(40)}
    path = tmp_path / "state.pt"
    torch.save(state, path)
    if namesake:
        with zipfile.ZipFile(path) as zf:
            name = next(n for n in zf.namelist() if n.endswith("/data/7"))
        with zipfile.ZipFile(path, "a") as zf, pytest.warns(UserWarning, match="Duplicate name"):
            zf.writestr(name, torch.full((4,), -1.0).numpy().tobytes())
    block = load(path)
    check_invariants(block)  # (with a namesake too: the copy read is torch's, `loaders._miniz`)
    with monkeypatch.context() as patched:
        patched.setattr(_zip.Members, "lines", lambda self: False)  # (no block: each record looked up by its name)
        each = load(path)
    assert (block.tensors, list(block.regions), block.findings, block.attributes) == (
        each.tensors,
        list(each.regions),
        each.findings,
        each.attributes,
    )
    data = path.read_bytes()
    loaded = torch.load(path, weights_only=True)  # (t7 from the copy torch's zip reader finds: here the first)
    for t in block.tensors:
        assert (
            data[t.offset : t.offset + t.nbytes] == loaded[t.name].numpy().tobytes() == state[t.name].numpy().tobytes()
        )
    assert any(f.code == "ZIP_LAYOUT" for f in block.findings) == namesake
