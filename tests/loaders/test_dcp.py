"""PyTorch distributed checkpoints, written by torch.distributed.checkpoint and compared with torch's own reader."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from inspector import load
from inspector.cli import main
from inspector.errors import FormatError, InspectorError, TruncatedFileError
from inspector.records import Checkpoint, RegionKind, Severity, TensorKind
from inspector.registry import detect, member_entry
from inspector.report import inspect
from loaders.base import check_invariants
from tests.conftest import SAMPLES, record_reads

torch = pytest.importorskip("torch")
dcp = pytest.importorskip("torch.distributed.checkpoint")
pytestmark = [
    pytest.mark.reference,
    pytest.mark.filterwarnings("ignore:torch.distributed is disabled:UserWarning"),
]
TORCH_DTYPE_NAMES = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16", torch.int64: "I64",
                     torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL", torch.float64: "F64"}  # fmt: skip


def _model() -> Any:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(8, 16), torch.nn.BatchNorm1d(16), torch.nn.ReLU(), torch.nn.Linear(16, 4)
    )


def _trained(folder: Path, **writer: Any) -> tuple[Any, Any]:
    model = _model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model(torch.randn(4, 8)).sum().backward()
    opt.step()
    state = {"model": model.state_dict(), "optim": opt.state_dict(), "epoch": 3}
    storage = dcp.FileSystemWriter(str(folder), **writer) if writer else None
    dcp.save(state, checkpoint_id=str(folder), storage_writer=storage)
    return model, opt


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, Any]:
    folder = tmp_path_factory.mktemp("dcp") / "step3"
    model, opt = _trained(folder)
    return folder, model, opt


def _item_tensor(folder: Path, info: Any) -> Any:
    """The tensor torch itself reads back from one stored item (its own torch.save archive)."""
    with open(folder / info.relative_path, "rb") as fh:
        fh.seek(info.offset)
        return torch.load(io.BytesIO(fh.read(info.length)), weights_only=True)


def _raw(t: Any) -> bytes:
    return bytes(t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())


def test_every_tensor_matches_torch_reader(trained: tuple[Path, Any, Any]) -> None:
    folder, _, _ = trained
    ckpt = load(folder / ".metadata")
    check_invariants(ckpt)
    md = dcp.FileSystemReader(str(folder)).read_metadata()
    expected = {fqn: m for fqn, m in md.state_dict_metadata.items() if hasattr(m, "chunks")}
    by_name = {t.name: t for t in ckpt.tensors}
    assert set(by_name) == set(expected)
    data = {p: Path(p).read_bytes() for p, _ in ckpt.files[1:]}
    for index, info in md.storage_data.items():
        if index.fqn not in expected:
            continue
        meta, t = expected[index.fqn], by_name[index.fqn]
        assert t.shape == tuple(meta.size) == tuple(meta.chunks[0].sizes)
        assert t.dtype == TORCH_DTYPE_NAMES[meta.properties.dtype]
        stored = _item_tensor(folder, info)
        assert t.nbytes == stored.numel() * stored.element_size()
        assert info.offset <= t.offset and t.offset + t.nbytes <= info.offset + info.length
        path = ckpt.files[t.file][0]
        assert Path(path).name == info.relative_path
        assert data[path][t.offset : t.offset + t.nbytes] == _raw(stored)


def test_counts_and_kinds_match_the_framework(trained: tuple[Path, Any, Any]) -> None:
    folder, model, opt = trained
    ckpt = load(folder)  # the folder stands for the checkpoint
    assert ckpt.format == "torch-dcp" and ckpt.path.endswith(".metadata")
    assert ckpt.n_parameters == sum(p.numel() for p in model.parameters())
    buffers = ckpt.unique(TensorKind.BUFFER)
    assert sum(t.n_elements for t in buffers) == sum(b.numel() for b in model.buffers())
    optimizer = ckpt.unique(TensorKind.OPTIMIZER)
    assert sum(t.n_elements for t in optimizer) == sum(
        v.numel() for state in opt.state_dict()["state"].values() for v in state.values() if torch.is_tensor(v)
    )
    assert {t.section for t in optimizer} == {"optimizer"}


def test_shard_and_folder_give_the_same_checkpoint(trained: tuple[Path, Any, Any]) -> None:
    folder, _, _ = trained
    (shard,) = sorted(folder.glob("*.distcp"))
    assert detect(shard) == detect(folder / ".metadata") == "torch-dcp"
    assert member_entry(shard) == str(folder / ".metadata") and member_entry(folder / ".metadata") is None
    a, b = load(shard), load(folder / ".metadata")
    assert a.tensors == b.tensors and a.regions == b.regions and a.files == b.files


def test_regions_tile_and_explain_every_byte(trained: tuple[Path, Any, Any]) -> None:
    folder, _, _ = trained
    ckpt = load(folder)
    assert sum(r.length for r in ckpt.regions) == ckpt.file_size == sum(p.stat().st_size for p in folder.iterdir())
    assert not [r for r in ckpt.regions if r.kind is RegionKind.UNKNOWN]
    tensor_bytes = sum(r.length for r in ckpt.regions if r.kind is RegionKind.TENSOR_DATA)
    assert tensor_bytes == sum(t.nbytes for t in ckpt.tensors)


def test_several_files_per_rank(tmp_path: Path) -> None:
    model, _ = _trained(tmp_path / "ck", thread_count=3)
    shards = sorted((tmp_path / "ck").glob("*.distcp"))
    assert len(shards) > 1
    ckpt = load(shards[-1])
    check_invariants(ckpt)
    assert len(ckpt.files) == len(shards) + 1
    assert ckpt.n_parameters == sum(p.numel() for p in model.parameters())


def test_unsafe_object_is_reported_never_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    canary = tmp_path / "canary"
    folder = tmp_path / "ck"
    # A non-tensor value is saved with torch.save inside the shard: a pickle naming os.system.
    dcp.save({"w": torch.ones(2), "evil": _Evil(str(canary))}, checkpoint_id=str(folder))
    assert not canary.exists()
    ckpt = load(folder / ".metadata")
    assert any(f.code == "UNSAFE_CONTENT" and ".system" in f.message for f in ckpt.findings)
    assert main([str(folder / ".metadata")]) == 3
    assert not canary.exists()
    assert "system" in capsys.readouterr().err


class _Evil:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return os.system, (f"touch {self.path}",)


def test_sharded_tensors_in_two_processes(tmp_path: Path) -> None:
    """Two ranks (gloo on 127.0.0.1) save a DTensor sharded on dim 0: one tensor per chunk, offsets as torch says."""
    script = Path(__file__).with_name("dcp_two_ranks.py")
    proc = subprocess.run([sys.executable, str(script), str(tmp_path / "ck")], capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    if proc.returncode != 0:
        pytest.skip(f"could not run two gloo ranks here: {proc.stderr.strip().splitlines()[-1:]}")
    ckpt = load(tmp_path / "ck")
    check_invariants(ckpt)
    md = dcp.FileSystemReader(str(tmp_path / "ck")).read_metadata()
    weight = md.state_dict_metadata["w"]
    assert len(weight.chunks) == 2
    chunks = {t.name: t for t in ckpt.tensors if t.name.startswith("w[")}
    assert len(chunks) == 2 and sum(t.n_elements for t in chunks.values()) == weight.size.numel()
    for index, info in md.storage_data.items():
        if index.fqn != "w":
            continue
        chunk = weight.chunks[index.index]
        name = "w[" + ",".join(f"{o}:{o + s}" for o, s in zip(chunk.offsets, chunk.sizes, strict=True)) + "]"
        t = chunks[name]
        stored = _item_tensor(tmp_path / "ck", info)
        raw = Path(ckpt.files[t.file][0]).read_bytes()[t.offset : t.offset + t.nbytes]
        assert raw == _raw(stored)


def _copy(folder: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(folder, target)
    return target


def test_missing_and_truncated_shard(trained: tuple[Path, Any, Any], tmp_path: Path) -> None:
    folder = _copy(trained[0], tmp_path)
    (shard,) = folder.glob("*.distcp")
    data = shard.read_bytes()
    shard.write_bytes(data[: len(data) // 2])
    with pytest.raises(TruncatedFileError, match="ends at byte"):
        load(folder / ".metadata")
    shard.unlink()
    with pytest.raises(FormatError, match="missing"):
        load(folder / ".metadata")


@pytest.mark.parametrize("cut", [1, 16, 100, 400, -1])
def test_truncated_metadata_is_one_line(trained: tuple[Path, Any, Any], tmp_path: Path, cut: int) -> None:
    folder = _copy(trained[0], tmp_path)
    meta = folder / ".metadata"
    data = meta.read_bytes()
    meta.write_bytes(data[:cut])
    with pytest.raises(InspectorError):
        load(meta)
    proc = subprocess.run([sys.executable, "-m", "inspector", str(meta)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_corrupt_item_archive(trained: tuple[Path, Any, Any], tmp_path: Path) -> None:
    folder = _copy(trained[0], tmp_path)
    (shard,) = folder.glob("*.distcp")
    md = dcp.FileSystemReader(str(folder)).read_metadata()
    info = next(i for x, i in md.storage_data.items() if x.fqn == "model.0.weight")
    data = bytearray(shard.read_bytes())
    end = info.offset + info.length
    data[end - 22 : end - 18] = b"XXXX"  # the item's end-of-central-directory signature
    shard.write_bytes(bytes(data))
    with pytest.raises(InspectorError):
        load(folder)


def test_sample_checkpoint() -> None:
    manifest = json.loads((SAMPLES / "dcp" / "manifest.json").read_text())["adam_step"]
    ckpt: Checkpoint = load(SAMPLES / "dcp" / "adam_step")
    check_invariants(ckpt)
    assert ckpt.format == "torch-dcp" and ckpt.n_parameters == manifest["n_parameters"]
    assert sum(t.n_elements for t in ckpt.unique(TensorKind.BUFFER)) == manifest["buffer_elements"]
    assert {t.name: list(t.shape) for t in ckpt.tensors} == manifest["tensors"]


def test_no_tensor_byte_is_read(trained: tuple[Path, Any, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """Header-only: no read touches a tensor-data region (reads are recorded below the Probe)."""
    reads = record_reads(monkeypatch)
    ckpt = load(trained[0])
    monkeypatch.undo()
    data = [(os.path.abspath(ckpt.files[r.file][0]), r.start, r.end) for r in ckpt.regions
            if r.kind is RegionKind.TENSOR_DATA and r.length > 64]  # fmt: skip
    assert data and reads
    # Probe reads the first 4 KiB of each file it opens to sniff it: the first item's tensor may sit there.
    touched = [(p, s, e) for p, s, e in data for path, at, n in reads if path == p and at < e and s < at + n and at > 0]
    assert touched == []


def test_items_through_a_compression_extension(tmp_path: Path) -> None:
    pytest.importorskip("zstandard", reason="DCP's ZStandard extension needs zstandard or pyzstd")
    from torch.distributed.checkpoint._extension import ZStandard

    model = _model()
    writer = dcp.FileSystemWriter(str(tmp_path / "ck"), _extensions=[ZStandard()])
    dcp.save({"model": model.state_dict()}, storage_writer=writer)
    ckpt = load(tmp_path / "ck")
    check_invariants(ckpt)
    assert not ckpt.findings
    assert ckpt.n_parameters == sum(p.numel() for p in model.parameters())
    assert all(t.offset is None and "stream.zstd" in t.notes[-1] for t in ckpt.tensors)
    md = dcp.FileSystemReader(str(tmp_path / "ck")).read_metadata()
    compressed = {(r.start, r.length) for r in ckpt.regions if r.kind is RegionKind.COMPRESSED}
    assert compressed == {(info.offset, info.length) for info in md.storage_data.values()}


class _TiedLM(torch.nn.Module):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(50, 8)
        self.norm = torch.nn.LayerNorm(8)
        self.head = torch.nn.Linear(8, 50, bias=False)
        self.head.weight = self.emb.weight


def test_tied_weights_are_counted_once(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = _TiedLM()
    model.norm.weight.data.fill_(1.0)
    dcp.save({"model": model.state_dict()}, checkpoint_id=str(tmp_path / "ck"))
    md = dcp.FileSystemReader(str(tmp_path / "ck")).read_metadata()
    assert {"model.emb.weight", "model.head.weight"} <= set(md.state_dict_metadata)  # DCP stores both names
    ckpt = load(tmp_path / "ck")
    check_invariants(ckpt)
    assert ckpt.n_parameters == sum(p.numel() for p in model.parameters())
    (head,) = [t for t in ckpt.tensors if t.name == "model.head.weight"]
    assert head.alias_of == "model.emb.weight"
    assert any(f.code == "DUPLICATE_TENSOR" for f in ckpt.findings)
    assert sum(r.length for r in ckpt.regions if r.kind is RegionKind.DUPLICATE) == head.nbytes


def test_stateful_app_state_as_in_the_dcp_tutorial(tmp_path: Path) -> None:
    """{"app": AppState(model, optimizer)}: the sections sit one level down ('app.model...', 'app.optim...')."""
    from torch.distributed.checkpoint.state_dict import get_state_dict
    from torch.distributed.checkpoint.stateful import Stateful

    model = _model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model(torch.randn(4, 8)).sum().backward()
    opt.step()

    class AppState(Stateful):  # type: ignore[misc]
        def state_dict(self) -> dict[str, Any]:
            model_state, optimizer_state = get_state_dict(model, opt)
            return {"model": model_state, "optim": optimizer_state}

        def load_state_dict(self, state: dict[str, Any]) -> None:
            raise NotImplementedError

    dcp.save({"app": AppState()}, checkpoint_id=str(tmp_path / "ck"))
    ckpt = load(tmp_path / "ck")
    check_invariants(ckpt)
    assert ckpt.n_parameters == sum(p.numel() for p in model.parameters())
    optimizer = ckpt.unique(TensorKind.OPTIMIZER)
    assert {t.name.split(".")[1] for t in optimizer} == {"optim"}
    assert sum(t.n_elements for t in optimizer) == sum(
        v.numel() for state in opt.state_dict()["state"].values() for v in state.values() if torch.is_tensor(v)
    )


def test_unsafe_metadata_is_reported_even_when_malformed(tmp_path: Path) -> None:
    """A .metadata naming os.system inside the Metadata it pickles: exit 3 naming the callable, never run, also
    when the rest of the structure is not a checkpoint or the pickle is cut after the payload."""
    import pickle

    from torch.distributed.checkpoint.metadata import Metadata

    canary = tmp_path / "canary"
    folder = tmp_path / "ck"
    folder.mkdir()
    payload = pickle.dumps(Metadata(state_dict_metadata={}, storage_data={"x": _Evil(str(canary))}), protocol=4)
    for name, data in (("whole", payload), ("cut", payload[:-3])):
        (folder / ".metadata").write_bytes(data)
        ckpt = load(folder / ".metadata")
        assert [f.code for f in ckpt.findings] == ["MALFORMED", "UNSAFE_CONTENT"], name
        assert ".system" in ckpt.findings[1].message
        proc = subprocess.run([sys.executable, "-m", "inspector", str(folder / ".metadata")], capture_output=True,
                              text=True, timeout=60)  # fmt: skip
        assert proc.returncode == 3 and "system" in proc.stderr, name
    assert not canary.exists()


def _tiny_transformers(model_type: str, cls: str, **config: Any) -> Any:
    transformers = pytest.importorskip("transformers")
    small = dict(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        vocab_size=128, d_model=32, d_ff=64, d_kv=8, num_layers=2, num_heads=4,
    )  # fmt: skip
    default = transformers.AutoConfig.for_model(model_type)
    words = {k: v for k, v in small.items() if isinstance(getattr(default, k, None), int)}
    torch.manual_seed(0)
    return getattr(transformers, cls)(transformers.AutoConfig.for_model(model_type, **words, **config))


@pytest.mark.parametrize(
    ("model_type", "cls", "config"),
    [("t5", "T5EncoderModel", {}), ("llama", "LlamaForCausalLM", {"tie_word_embeddings": True})],
)
def test_tied_transformers_models_and_their_training_state(
    tmp_path: Path, model_type: str, cls: str, config: dict[str, Any]
) -> None:
    """T5's encoder names `shared` again as `encoder.embed_tokens`, a tied Llama names its embedding again as
    `lm_head`: DCP stores each name (as it does every tied model), the inspector counts the copy once, as
    `num_parameters()` does, and says so without a warning; AdamW's state after a step is optimizer state."""
    from torch.distributed.checkpoint.state_dict import get_state_dict

    model = _tiny_transformers(model_type, cls, **config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(input_ids=torch.randint(0, 128, (1, 8)))[0].pow(2).mean().backward()
    optimizer.step()
    model_state, optim_state = get_state_dict(model, optimizer)
    dcp.save(model.state_dict(), checkpoint_id=str(tmp_path / "model"))
    dcp.save({"model": model_state, "optim": optim_state}, checkpoint_id=str(tmp_path / "train"))
    slots = sum(v.numel() for state in optimizer.state.values() for v in state.values())
    for folder in ("model", "train"):
        stored = dcp.FileSystemReader(str(tmp_path / folder)).read_metadata().state_dict_metadata
        report = inspect(tmp_path / folder)
        ckpt = report.checkpoint
        check_invariants(ckpt)
        assert {t.name for t in ckpt.tensors} == {k for k, v in stored.items() if hasattr(v, "chunks")}
        assert ckpt.n_parameters == model.num_parameters()
        assert sum(t.n_elements for t in ckpt.unique(TensorKind.OPTIMIZER)) == (slots if folder == "train" else 0)
        (tie,) = [f for f in report.findings if f.code == "DUPLICATE_TENSOR"]
        assert tie.severity is Severity.INFO
        assert not [f for f in report.findings if f.severity is not Severity.INFO]
