"""Byte accounting and the size reconciliation: hand-built records, real files, and seed 003's case."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from inspector import load
from inspector.reconcile import MIB, account, bucket_bytes, findings, unit_trap
from inspector.records import Checkpoint, Region, RegionKind, TensorInfo, TensorKind
from loaders.base import check_invariants, tile
from tests.conftest import SAMPLES


def _ckpt(tensors: list[TensorInfo], regions: list[Region], size: int) -> Checkpoint:
    return Checkpoint("x", "test", "test", (("x", size),), tuple(tensors), tile(regions, size))


def test_tensor_bytes_split_by_kind_and_buckets_sum_to_size() -> None:
    w = TensorInfo("w", (4, 4), "F32", 64, 16)
    m = TensorInfo("opt.w.exp_avg", (4, 4), "F32", 64, 80, kind=TensorKind.OPTIMIZER)
    b = TensorInfo("bn.running_mean", (4,), "F32", 16, 144, kind=TensorKind.BUFFER)
    regions = [
        Region(RegionKind.HEADER, 0, 16),
        Region(RegionKind.TENSOR_DATA, 16, 64, "w"),
        Region(RegionKind.TENSOR_DATA, 80, 64, "m"),
        Region(RegionKind.TENSOR_DATA, 144, 16, "b"),
    ]
    ckpt = _ckpt([w, m, b], regions, 170)
    by = bucket_bytes(ckpt)
    assert by == {"parameters": 64, "buffers": 16, "optimizer": 64, "header": 16, "unknown": 10}
    assert sum(by.values()) == 170
    acc = account(ckpt)
    assert acc.unexplained == 10
    assert sum(s.nbytes for s in acc.steps) == 170 - acc.parameter_bytes
    assert any("optimizer state is 1.00x" in n for n in acc.notes)
    assert "UNEXPLAINED_BYTES" in {f.code for f in findings(ckpt, acc)}


def test_tied_alias_counted_once_and_reported() -> None:
    emb = TensorInfo("emb.weight", (10, 4), "F32", 160, 0, storage="0")
    out = TensorInfo("out.weight", (10, 4), "F32", 160, 0, storage="0", alias_of="emb.weight")
    ckpt = _ckpt([emb, out], [Region(RegionKind.TENSOR_DATA, 0, 160, "0")], 160)
    acc = account(ckpt)
    assert acc.parameter_count == 40 and acc.parameter_bytes == 160
    assert [f.code for f in findings(ckpt, acc)] == ["SHARED_STORAGE"]


def test_half_precision_note_and_implied_counts() -> None:
    t = TensorInfo("w", (1000,), "F16", 2000, 0)
    acc = account(_ckpt([t], [Region(RegionKind.TENSOR_DATA, 0, 2000, "w")], 2000))
    assert acc.implied_at_dtype == 1000 and acc.implied_at_f32 == 500
    assert any("F16 (16 bits)" in n for n in acc.notes)


def test_compressed_members_skip_the_size_check() -> None:
    ckpt = load(SAMPLES / "basic" / "cnn_compressed.npz")
    check_invariants(ckpt)
    acc = account(ckpt)
    assert acc.compression_saved == sum(t.nbytes for t in ckpt.tensors) - acc.by_kind["compressed"]
    assert "SIZE_CHECK_SKIPPED" in {f.code for f in findings(ckpt, acc)}
    assert sum(s.nbytes for s in acc.steps) == ckpt.file_size - acc.parameter_bytes


# Seed 003: three columns of conv(32, 3x3) -> conv(32, 3x3) -> dense(256) on 50x100 images, then dense(11),
# saved positionally (arr_0, arr_1, ...) in the Theano layout the notebook describes.
SEED_003_COLUMN = [(32, 1, 3, 3), (32,), (32, 32, 3, 3), (32,), (11 * 11 * 32, 256), (256,)]
SEED_003_SHAPES = SEED_003_COLUMN * 3 + [(256 * 3, 11), (11,)]


def test_seed_003_size_is_mib_not_missing_parameters(tmp_path: Path) -> None:
    path = tmp_path / "alpha.npz"
    np.savez(path, *[np.zeros(s, dtype="float32") for s in SEED_003_SHAPES])
    ckpt = load(path)
    acc = account(ckpt)
    assert acc.parameter_count == 3_011_627  # the seed's own analytic count: nothing is missing
    assert acc.parameter_bytes == 12_046_508
    assert acc.unexplained == 0
    trap = unit_trap(acc)
    assert trap is not None and "11.49 MiB" in trap and "1 MiB = 1,048,576 bytes" in trap


def test_unit_note_is_computed_on_parameter_bytes() -> None:
    """A file that is mostly optimizer state: the MB/MiB note speaks of the parameters' 2 MiB, never the file's."""
    params = TensorInfo("w", (1 << 19,), "F32", 2 * MIB, 0)
    slots = TensorInfo("opt.w", (25 << 20,), "F32", 100 * MIB, 2 * MIB, kind=TensorKind.OPTIMIZER)
    regions = [Region(RegionKind.TENSOR_DATA, 0, 2 * MIB, "w"), Region(RegionKind.TENSOR_DATA, 2 * MIB, 100 * MIB)]
    acc = account(_ckpt([params, slots], regions, 102 * MIB))
    trap = unit_trap(acc)
    assert trap is not None
    assert "2.00 MiB" in trap and f"{(1 << 19) * 1_000_000 // MIB:,} parameters" in trap and "4.6% fewer" in trap
    assert "-" not in trap.split("fewer")[0]


def test_unit_note_skipped_where_it_does_not_apply() -> None:
    small = TensorInfo("w", (1000,), "F32", 4000, 0)
    big_other = TensorInfo("rng", (1 << 22,), "U8", 1 << 22, 4000, kind=TensorKind.OTHER)
    regions = [Region(RegionKind.TENSOR_DATA, 0, 4000, "w"), Region(RegionKind.TENSOR_DATA, 4000, 1 << 22)]
    assert unit_trap(account(_ckpt([small, big_other], regions, 4000 + (1 << 22)))) is None  # params < 1 MiB
    meta = Region(RegionKind.METADATA, 0, 3 * MIB)
    assert unit_trap(account(_ckpt([], [meta], 3 * MIB))) is None  # no parameters at all


def test_tensors_that_are_the_data_regions_are_told_as_any_layout(tmp_path: Path) -> None:
    """The byte buckets of a file whose tensors, in order, are its data regions one for one are read column by
    column; the kinds are those of the search any other layout takes, on real files (torch: parameters, buffers,
    a view of a storage, a tie; safetensors) and on the samples."""
    torch = __import__("pytest").importorskip("torch")
    from safetensors.numpy import save_file

    from inspector.reconcile import _region_kinds

    lin = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    state = dict(lin.state_dict())
    torch.save(state, tmp_path / "plain.pt")
    state["view"] = state["0.weight"][1:]
    state["tied"] = state["0.weight"]
    torch.save(state, tmp_path / "views.pt")
    save_file({k: v.numpy() for k, v in lin.state_dict().items()}, tmp_path / "m.safetensors")
    paths = [tmp_path / "plain.pt", tmp_path / "views.pt", tmp_path / "m.safetensors", *sorted(SAMPLES.rglob("*.pt")),
             *sorted(SAMPLES.rglob("*.safetensors"))]  # fmt: skip
    for path in paths:
        ckpt = load(path)
        data: dict[int, list[int]] = {}
        for i, r in enumerate(ckpt.regions):
            if r.kind is RegionKind.TENSOR_DATA:
                data.setdefault(r.file, []).append(i)
        assert _region_kinds(ckpt, data) == _region_kinds(ckpt), path
        assert sum(bucket_bytes(ckpt).values()) == ckpt.file_size


def _buckets_region_by_region(ckpt: Checkpoint) -> dict[str, int]:
    """`bucket_bytes` as it reads region by region: each region's length to its kind's bucket, a data region's to the
    bucket of its tensors' kind (`_region_kinds`)."""
    from inspector.reconcile import BUCKETS, KIND_BUCKET, REGION_BUCKET, _region_kinds

    kinds = _region_kinds(ckpt)
    totals = dict.fromkeys(BUCKETS, 0)
    for i, r in enumerate(ckpt.regions):
        if r.kind is RegionKind.TENSOR_DATA:
            kind = kinds.get(r.file, {}).get(i)
            totals[KIND_BUCKET[kind] if kind is not None else "tensor_data"] += r.length
        else:
            totals[REGION_BUCKET[r.kind]] += r.length
    return {name: n for name, n in totals.items() if n}


def test_buckets_told_by_c_passes_are_those_region_by_region(tmp_path: Path) -> None:
    """The byte buckets of a one-file checkpoint (each kind's regions chosen by a byte a region) and of a sharded one
    (region by region) are what reading each region gives: torch.save zips (buffers, views, ties, an optimizer's
    state), safetensors, a compressed npz, a sharded safetensors model, and the samples of every format."""
    torch = __import__("pytest").importorskip("torch")
    from safetensors.numpy import save_file

    lin = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    state = dict(lin.state_dict())
    state["view"] = state["0.weight"][1:]
    state["tied"] = state["0.weight"]
    torch.save(state, tmp_path / "views.pt")
    opt = torch.optim.Adam(lin.parameters())
    lin(torch.ones(2, 3)).sum().backward()
    opt.step()
    torch.save({"model": lin.state_dict(), "optimizer": opt.state_dict()}, tmp_path / "train.pt")
    arrays = {k: v.numpy() for k, v in lin.state_dict().items()}
    save_file(arrays, tmp_path / "m.safetensors")
    np.savez_compressed(tmp_path / "packed.npz", **arrays)
    names = list(arrays)
    for shard, part in (("model-00001-of-00002.safetensors", names[:2]), ("model-00002-of-00002.safetensors",
                                                                             names[2:])):  # fmt: skip
        save_file({k: arrays[k] for k in part}, tmp_path / shard)
    index = {"metadata": {}, "weight_map": {k: s for s, part in ((1, names[:2]), (2, names[2:])) for k in part}}
    index["weight_map"] = {k: f"model-0000{s}-of-00002.safetensors" for k, s in index["weight_map"].items()}
    (tmp_path / "model.safetensors.index.json").write_text(__import__("json").dumps(index))
    made = ["views.pt", "train.pt", "m.safetensors", "packed.npz", "model.safetensors.index.json"]
    samples = sorted(p for p in SAMPLES.rglob("*") if p.is_file() and p.suffix not in {".md", ".py", ".json", ".txt"})
    told = 0
    for path in [*(tmp_path / name for name in made), *samples]:
        try:
            ckpt = load(path)
        except Exception:  # noqa: BLE001 - a sample no loader takes alone (a shard's companion, a script's output)
            continue
        by_kind = bucket_bytes(ckpt)
        assert by_kind == _buckets_region_by_region(ckpt), path
        assert sum(by_kind.values()) == ckpt.file_size, path
        told += 1
    assert told > 20
    sharded = load(tmp_path / "model.safetensors.index.json")
    assert any(r.file for r in sharded.regions)  # (the region-by-region path of `bucket_bytes`)
    assert "compressed" in bucket_bytes(load(tmp_path / "packed.npz"))
    assert "optimizer" in bucket_bytes(load(tmp_path / "train.pt"))
