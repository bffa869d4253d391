"""safetensors: real files from the safetensors library, validation cases, sharding, header-only reads."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from inspector import load
from inspector.errors import FormatError, LimitExceededError, TruncatedFileError
from inspector.probe import Probe
from inspector.records import RegionKind
from loaders.base import check_invariants
from tests.conftest import SAMPLES, fixture_path

safetensors_numpy = pytest.importorskip("safetensors.numpy")
from safetensors import safe_open  # noqa: E402


def _reference(path: Path) -> dict[str, tuple[tuple[int, ...], str]]:
    with safe_open(str(path), "np") as f:
        return {k: (tuple(f.get_slice(k).get_shape()), f.get_slice(k).get_dtype()) for k in f.keys()}


@pytest.mark.parametrize("name", ["mixed.safetensors", "numpy.safetensors", "tied_save_model.safetensors"])
def test_fixture_matches_safe_open(name: str) -> None:
    path = fixture_path(f"safetensors/{name}")
    ckpt = load(path)
    check_invariants(ckpt)
    stored = {t.name: (t.shape, t.dtype) for t in ckpt.tensors if t.alias_of is None}
    assert stored == _reference(path)
    assert ckpt.format == "safetensors"


def test_mixed_offsets_and_padding() -> None:
    ckpt = load(fixture_path("safetensors/mixed.safetensors"))
    by_name = {t.name: t for t in ckpt.tensors}
    # header length 392 (8-aligned: 391 JSON bytes + 1 space), buffer at 400, sorted by alignment then name
    assert by_name["scalar"].offset == 400 and by_name["a"].offset == 408 and by_name["b"].offset == 439
    assert by_name["f8"].dtype == "F8_E4M3" and by_name["h"].dtype == "BF16"
    assert by_name["empty"].shape == (0, 4) and by_name["empty"].nbytes == 0
    padding = [r for r in ckpt.regions if r.kind is RegionKind.PADDING]
    assert sum(r.length for r in padding) == 1
    assert ckpt.attributes["metadata.note"] == "hello"


def test_tied_alias_from_save_model_metadata() -> None:
    ckpt = load(fixture_path("safetensors/tied_save_model.safetensors"))
    alias = next(t for t in ckpt.tensors if t.name == "out.weight")
    assert alias.alias_of == "emb.weight"
    assert ckpt.n_parameters == 8  # emb.weight 4x2 counted once


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("hole.safetensors", "GAP"),
        ("trailing.safetensors", "TRAILING_BYTES"),
        ("meta_int.safetensors", "INVALID_METADATA"),
    ],
)
def test_rejected_by_reference_reader_gives_findings(name: str, code: str) -> None:
    ckpt = load(fixture_path(f"safetensors/validation_cases/{name}"))
    assert code in {f.code for f in ckpt.findings}
    check_invariants(ckpt)


def test_leading_whitespace_accepted() -> None:
    ckpt = load(fixture_path("safetensors/validation_cases/lead.safetensors"))
    assert not ckpt.findings and [t.name for t in ckpt.tensors] == ["a"]


def test_sample_matches_manifest() -> None:
    manifest = json.loads((SAMPLES / "basic" / "manifest.json").read_text())["mlp_fp16.safetensors"]
    ckpt = load(SAMPLES / "basic" / "mlp_fp16.safetensors")
    assert {t.name: [list(t.shape), t.dtype] for t in ckpt.tensors} == manifest["tensors"]
    assert ckpt.n_parameters == manifest["n_parameters"]
    check_invariants(ckpt)


def _write_sharded(folder: Path) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    tensors = {f"layer.{i}.weight": rng.standard_normal((8, 4)).astype("float32") for i in range(5)}
    shards = {
        "model-00001-of-00002.safetensors": ["layer.0.weight", "layer.1.weight", "layer.2.weight"],
        "model-00002-of-00002.safetensors": ["layer.3.weight", "layer.4.weight"],
    }
    weight_map = {}
    for shard, names in shards.items():
        safetensors_numpy.save_file({n: tensors[n] for n in names}, folder / shard, metadata={"format": "pt"})
        weight_map.update({n: shard for n in names})
    index = {"metadata": {"total_size": sum(a.nbytes for a in tensors.values())}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
    return tensors


def test_sharded_via_index_and_one_shard_as_itself(tmp_path: Path) -> None:
    tensors = _write_sharded(tmp_path)
    via_index = load(tmp_path / "model.safetensors.index.json")
    check_invariants(via_index)
    assert via_index.format == "safetensors-sharded"
    assert {t.name: t.shape for t in via_index.tensors} == {k: v.shape for k, v in tensors.items()}
    assert via_index.n_parameters == sum(a.size for a in tensors.values())
    assert len(via_index.files) == 3
    assert via_index.file_size == sum(os.path.getsize(tmp_path / p) for p in os.listdir(tmp_path))
    assert not [f for f in via_index.findings if f.code == "INDEX_TOTAL_SIZE"]
    shard = tmp_path / "model-00002-of-00002.safetensors"
    via_shard = load(shard)
    check_invariants(via_shard)
    assert via_shard.format == "safetensors" and via_shard.files == ((str(shard), os.path.getsize(shard)),)
    assert {t.name: t.shape for t in via_shard.tensors} == {k: v[0] for k, v in _reference(shard).items()}
    assert via_shard.attributes["shard"] == "2 of 2"
    assert via_shard.attributes["model.parameters"] == str(via_index.n_parameters)
    assert "SHARD_OF_MODEL" in {f.code for f in via_shard.findings}


def test_missing_shard_is_a_clear_error(tmp_path: Path) -> None:
    _write_sharded(tmp_path)
    (tmp_path / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(OSError, match="no such file"):
        load(tmp_path / "model.safetensors.index.json")
    shard = load(tmp_path / "model-00001-of-00002.safetensors")  # the shard that is there still reads as itself
    assert len(shard.tensors) == 3 and "shard" not in shard.attributes
    (finding,) = [f for f in shard.findings if f.code == "SHARD_OF_MODEL"]
    assert "no such file" in finding.message


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_transformers_shards_report_themselves(tmp_path: Path) -> None:
    """save_pretrained(max_shard_size=...): each shard is its own tensors and bytes; the index is the model."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=512, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                                     intermediate_size=64, max_position_embeddings=64)  # fmt: skip
    model = transformers.BertModel(config)
    model.save_pretrained(tmp_path, max_shard_size="40KB")
    shards = sorted(tmp_path.glob("model-*-of-*.safetensors"))
    assert len(shards) > 2
    expected_total = sum(p.numel() for p in model.parameters())  # torch's unique parameters
    seen: dict[str, tuple[int, ...]] = {}
    for number, shard in enumerate(shards, 1):
        ckpt = load(shard)
        check_invariants(ckpt)
        assert ckpt.file_size == shard.stat().st_size
        assert sum(r.length for r in ckpt.regions) == shard.stat().st_size
        reference = _reference(shard)
        assert {t.name: (t.shape, t.dtype) for t in ckpt.tensors} == reference
        assert ckpt.n_parameters == sum(int(np.prod(shape)) for shape, _ in reference.values())
        assert ckpt.attributes["shard"] == f"{number} of {len(shards)}"
        assert ckpt.attributes["model.parameters"] == str(expected_total)
        seen.update({t.name: t.shape for t in ckpt.tensors})
    whole = load(tmp_path / "model.safetensors.index.json")
    check_invariants(whole)
    assert whole.n_parameters == expected_total
    assert (
        {t.name: t.shape for t in whole.tensors} == seen == {k: tuple(v.shape) for k, v in model.state_dict().items()}
    )


def test_sample_bert_shard_is_one_file() -> None:
    folder = SAMPLES / "hf_rau" / "bert-tiny-sharded"
    manifest = json.loads((SAMPLES / "hf_rau" / "manifest.json").read_text())["bert-tiny-sharded"]
    shard = folder / "model-00001-of-00004.safetensors"
    ckpt = load(shard)
    check_invariants(ckpt)
    assert ckpt.file_size == shard.stat().st_size and len(ckpt.files) == 1
    assert {t.name for t in ckpt.tensors} == set(_reference(shard))
    assert ckpt.attributes["shard"] == "1 of 4"
    assert ckpt.attributes["model.parameters"] == str(manifest["n_parameters"])


def test_header_only_on_a_sparse_multi_gigabyte_file(tmp_path: Path) -> None:
    """A 4 GiB tensor whose data region is a hole: loading reads only the header."""
    header = json.dumps({"big": {"dtype": "F32", "shape": [1 << 30], "data_offsets": [0, 4 << 30]}}).encode()
    header += b" " * (-len(header) % 8)
    path = tmp_path / "big.safetensors"
    with open(path, "wb") as fh:
        fh.write(len(header).to_bytes(8, "little") + header)
        fh.truncate(8 + len(header) + (4 << 30))
    with Probe(path) as probe:
        from loaders.safetensors import SafetensorsLoader

        ckpt = SafetensorsLoader().load(probe)
        assert probe.bytes_read < 8192
    assert ckpt.tensors[0].nbytes == 4 << 30


def _with_header(tmp_path: Path, n: int, body: bytes) -> Path:
    path = tmp_path / "x.safetensors"
    path.write_bytes(n.to_bytes(8, "little") + body)
    return path


def test_header_length_beyond_file(tmp_path: Path) -> None:
    with pytest.raises(TruncatedFileError):
        load(_with_header(tmp_path, 200, b'{"a": {}}'))


def test_header_length_beyond_cap(tmp_path: Path) -> None:
    path = tmp_path / "x.safetensors"
    with open(path, "wb") as fh:
        fh.write((200_000_000).to_bytes(8, "little") + b'{"a": 1}')
        fh.truncate(200_000_100)
    with pytest.raises(LimitExceededError):
        load(path)


def test_offsets_past_end(tmp_path: Path) -> None:
    body = json.dumps({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}).encode()
    with pytest.raises(TruncatedFileError, match="'a' data ends at byte"):
        load(_with_header(tmp_path, len(body), body + b"\0" * 4))


def test_byte_length_must_match_shape(tmp_path: Path) -> None:
    body = json.dumps({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 8]}}).encode()
    with pytest.raises(FormatError, match="shape x dtype needs 16"):
        load(_with_header(tmp_path, len(body), body + b"\0" * 8))
