"""`--data`: values streamed in bounded blocks from every format, checked against the real libraries' readers."""

from __future__ import annotations

import hashlib
import json
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.cli import main
from inspector.registry import load
from inspector.tensor_data import DECODERS, TensorSource, hyperslabs, layout, reblock
from inspector.values import data_report
from tests.conftest import SAMPLES, fixture_path


def data_json(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, Any]:
    status = main([str(path), "--data", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert status in (0, 3), status
    return {t["name"]: t for t in doc["data"]["tensors"]} | {"": doc["data"]}


def assert_stats(row: dict[str, Any], values: np.ndarray) -> None:
    x = values.astype(np.float64).ravel()
    finite = x[np.isfinite(x)]
    assert row["n"] == x.size
    assert row["zeros"] == int(np.count_nonzero(x == 0))
    assert row["nan"] == int(np.isnan(x).sum()) and row["inf"] == int(np.isinf(x).sum())
    assert row["min"] == finite.min() and row["max"] == finite.max()
    assert row["mean"] == pytest.approx(finite.mean(), rel=1e-12, abs=1e-15)
    assert row["std"] == pytest.approx(finite.std(), rel=1e-9, abs=1e-15)


def test_statistics_match_numpy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from safetensors.numpy import load_file, save_file

    rng = np.random.default_rng(0)
    w = rng.standard_normal((300, 70)).astype(np.float32)
    w[0, :5] = [np.nan, np.inf, -np.inf, 0, 0]
    arrays: dict[str, np.ndarray] = {
        "w": w,
        "h": rng.standard_normal(999).astype(np.float16),
        "step": np.arange(-3, 40, dtype=np.int64),
    }
    save_file(arrays, str(tmp_path / "m.safetensors"))
    rows = data_json(capsys, tmp_path / "m.safetensors")
    for name, values in load_file(str(tmp_path / "m.safetensors")).items():
        assert_stats(rows[name], values)
    assert rows["w"]["nan"] == 1 and rows["w"]["inf"] == 2


@pytest.mark.reference
def test_bf16_and_float8_decoded_without_torch_match_torch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    torch = pytest.importorskip("torch")
    st_torch = pytest.importorskip("safetensors.torch")
    every_byte = torch.arange(256, dtype=torch.uint8)
    for name, dtype in (("F8_E4M3", torch.float8_e4m3fn), ("F8_E5M2", torch.float8_e5m2)):
        ours = DECODERS[name](every_byte.numpy())
        theirs = every_byte.view(dtype).double().numpy()
        np.testing.assert_array_equal(ours, theirs)  # NaN where torch has NaN
    torch.manual_seed(0)
    x = torch.randn(513, 7)
    tensors = {"bf16": x.to(torch.bfloat16), "e4m3": x.to(torch.float8_e4m3fn), "e5m2": x.to(torch.float8_e5m2)}
    st_torch.save_file(tensors, str(tmp_path / "m.safetensors"))
    rows = data_json(capsys, tmp_path / "m.safetensors")
    for name, t in tensors.items():
        assert_stats(rows[name], t.double().numpy())


@pytest.mark.reference
def test_identical_content_and_zeroed_layers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    emb = torch.nn.Embedding(30, 8)
    sd = {
        "emb.weight": emb.weight.detach(),
        "head.weight": emb.weight.detach().clone(),  # a tied weight saved twice: its own storage
        "tied.weight": emb.weight.detach(),  # a true tie: the same storage
        "dead.weight": torch.zeros(8, 8),
        "live.bias": torch.ones(8),
    }
    torch.save(sd, tmp_path / "m.pt")
    rows = data_json(capsys, tmp_path / "m.pt")
    data = rows[""]
    assert data["identical"] == [["emb.weight", "head.weight"]]
    assert data["zeroed"] == ["dead.weight"]
    assert rows["tied.weight"]["alias_of"] == "emb.weight" and rows["tied.weight"]["sha256"] is None
    assert_stats(rows["head.weight"], sd["head.weight"].numpy())
    main([str(tmp_path / "m.pt"), "--data"])
    text = capsys.readouterr().out
    assert "identical content (stored more than once): emb.weight = head.weight" in text
    assert "all zeros: dead.weight" in text


def test_mxnet_duplicate_copy_is_identical_content() -> None:
    report = data_report(load(SAMPLES / "mxnet/gluon_tied.params"))
    # freshly initialised BatchNorm: gamma and running_var all ones, beta and running_mean all zeros: constants,
    # not copies
    assert report.identical == (("emb.weight", "out.weight"),)
    assert set(report.zeroed) == {"bn.beta", "bn.running_mean", "out.bias"}


def test_hdf5_chunked_compressed_and_big_endian(tmp_path: Path) -> None:
    import h5py

    rng = np.random.default_rng(2)
    arrays = {
        "chunked": rng.standard_normal((130, 40)).astype(np.float32),
        "big": np.arange(-50, 50, dtype=">i4").reshape(10, 10),
        "plain": rng.standard_normal((5, 6, 7)),
    }
    with h5py.File(tmp_path / "m.h5", "w") as f:
        f.create_dataset("g/chunked", data=arrays["chunked"], chunks=(16, 8), compression="gzip")
        f.create_dataset("big", data=arrays["big"])
        f.create_dataset("plain", data=arrays["plain"])
    ckpt = load(tmp_path / "m.h5")
    with TensorSource(ckpt, block_bytes=256) as source:
        for t in ckpt.tensors:
            blocks = list(source.blocks(t))
            assert max(b.nbytes for b in blocks) <= 256 or t.shape[-1] * 4 > 256
            values = np.concatenate(blocks)
            np.testing.assert_array_equal(values, arrays[t.name.rsplit("/", 1)[-1]].ravel())
    report = data_report(ckpt)
    assert {s.name: s.min for s in report.stats}["big"] == -50


def test_npy_byte_order_and_fortran_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("numpy/big_endian.npy", "numpy/f_order.npy", "numpy/c_order.npy"):
        path = fixture_path(name)
        assert_stats(data_json(capsys, path)["array"], np.load(path))
    a = np.arange(12.0).reshape(3, 4)
    np.save(tmp_path / "c.npy", a)
    np.save(tmp_path / "f.npy", np.asfortranarray(a))
    assert layout(load(tmp_path / "f.npy").tensors[0]) == ((4, 3), (1, 0))
    status = main(["diff", str(tmp_path / "c.npy"), str(tmp_path / "f.npy"), "--data", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert status == 0 and doc["values"][0]["equal"] and doc["values"][0]["sha256_a"] != doc["values"][0]["sha256_b"]
    np.save(tmp_path / "f2.npy", np.asfortranarray(a + np.eye(3, 4)))
    status = main(["diff", str(tmp_path / "c.npy"), str(tmp_path / "f2.npy"), "--data", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert status == 1 and doc["values"][0]["n_differ"] == 3


def test_deflated_npz_streams_in_bounded_blocks(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    arrays: dict[str, np.ndarray] = {
        "a": rng.standard_normal(100_000).astype(np.float32),
        "b": np.arange(7, dtype=np.int16),
    }
    np.savez_compressed(tmp_path / "z.npz", a=arrays["a"], b=arrays["b"])
    ckpt = load(tmp_path / "z.npz")
    with TensorSource(ckpt, block_bytes=4096) as source:
        for t in ckpt.tensors:
            blocks = list(source.blocks(t))
            assert all(b.nbytes <= 4096 for b in blocks)
            np.testing.assert_array_equal(np.concatenate(blocks), arrays[t.name])


def test_keras_archive_values_match_h5py() -> None:
    import h5py

    ckpt = load(SAMPLES / "keras/adam_trained.weights.h5")
    report = data_report(ckpt)
    with h5py.File(SAMPLES / "keras/adam_trained.weights.h5") as f:
        for s in report.stats:
            values = np.asarray(f[s.name][()], dtype=np.float64)
            assert s.n == values.size and s.sha256
            if values.size:
                assert s.min == values.min() and s.max == values.max()


def test_streaming_memory_is_bounded(tmp_path: Path) -> None:
    """A 48 MiB tensor compared with itself: Python-side allocations stay at a few blocks."""
    from safetensors.numpy import save_file

    from inspector.values import compare_pairs

    big = np.full((3072, 4096), 0.5, dtype=np.float32)
    save_file({"w": big}, str(tmp_path / "a.safetensors"))
    del big
    ckpt = load(tmp_path / "a.safetensors")
    tracemalloc.start()
    try:
        (result,) = compare_pairs(ckpt, ckpt, [(ckpt.tensors[0], ckpt.tensors[0], None)])
        data_report(ckpt)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.equal
    assert peak < 24 << 20, peak  # well under the tensor's 48 MiB


@given(st.lists(st.integers(0, 9), min_size=0, max_size=4), st.integers(1, 50))
@settings(max_examples=60, deadline=None)
def test_hyperslabs_cover_the_shape_in_c_order(shape: list[int], limit: int) -> None:
    a = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    pieces = [np.asarray(a[index] if index else a[()]).ravel() for index in hyperslabs(tuple(shape), limit)]
    assert all(p.size <= max(limit, shape[-1] if shape else 1) for p in pieces)
    np.testing.assert_array_equal(np.concatenate(pieces) if pieces else np.zeros(0), a.ravel())


@given(st.lists(st.integers(0, 30), max_size=8), st.integers(1, 17))
def test_reblock_keeps_values_and_sizes(sizes: list[int], size: int) -> None:
    blocks = [np.arange(n) + sum(sizes[:i]) for i, n in enumerate(sizes)]
    out = list(reblock(iter(blocks), size))
    assert all(b.size == size for b in out[:-1]) and (not out or 0 < out[-1].size <= size)
    np.testing.assert_array_equal(np.concatenate(out) if out else np.zeros(0), np.arange(sum(sizes)))


@pytest.mark.reference
def test_legacy_torch_file_values_against_torch(capsys: pytest.CaptureFixture[str]) -> None:
    """make_torch.py saved the legacy file after model.half().to(bfloat16).float(): bf16 values widened to fp32."""
    torch = pytest.importorskip("torch")
    legacy, bf16, fp32 = (SAMPLES / f"torch/lstm_tied{s}.pt" for s in ("_legacy", "_bf16", ""))
    status = main(["diff", str(bf16), str(legacy), "--data", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert status == 0 and doc["verdict"] == "equivalent" and all(v["equal"] for v in doc["values"])
    assert {(d["kind"], d["expected"]) for d in doc["differences"]} == {("dtype_changed", True)}

    status = main(["diff", str(fp32), str(legacy), "--data", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert status == 1  # the double rounding fp32 -> fp16 -> bf16 changed values
    a, b = torch.load(fp32, weights_only=True), torch.load(legacy, weights_only=True)
    for v in doc["values"]:
        assert v["max_abs"] == pytest.approx((a[v["a"]].double() - b[v["b"]].double()).abs().max().item(), abs=0)
    rows = {s.name: s for s in data_report(load(legacy)).stats}
    for name, t in b.items():
        if rows[name].alias_of is None and t.is_floating_point():
            assert rows[name].max == t.double().max().item() and rows[name].min == t.double().min().item()


@pytest.mark.parametrize("b_format", ["safetensors", "hdf5"])
def test_large_transposed_pair_is_streamed_by_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, b_format: str
) -> None:
    """Above the in-memory cap a Keras kernel (in, out) is compared with a PyTorch weight (out, in) by blocks."""
    import h5py
    from safetensors.numpy import save_file

    from inspector import values
    from inspector.diff import diff, match

    monkeypatch.setattr(values, "MAX_PERMUTED_ELEMENTS", 100)
    monkeypatch.setattr(values, "COMPARE_BLOCK", 64)  # 3 rows of 20 per block
    rng = np.random.default_rng(4)
    kernel = rng.standard_normal((37, 20)).astype(np.float32)
    weight = kernel.T.copy()
    weight[7, 30] += 1.0
    save_file({"dense.kernel": kernel}, str(tmp_path / "a.safetensors"))
    if b_format == "hdf5":
        with h5py.File(tmp_path / "b.h5", "w") as f:
            f.create_dataset("dense/weight", data=weight, chunks=(4, 8))
        b_path = tmp_path / "b.h5"
    else:
        save_file({"dense.weight": weight}, str(tmp_path / "b.safetensors"))
        b_path = tmp_path / "b.safetensors"
    a, b = load(tmp_path / "a.safetensors"), load(b_path)
    pairs = match(a, b)
    (result,) = values.compare_pairs(a, b, [(p.a, p.b, p.perm) for p in pairs])
    assert pairs[0].perm == (1, 0) and result.skipped is None
    assert result.n_differ == 1 and result.max_abs == pytest.approx(1.0, abs=1e-6)
    assert result.sha256_b == hashlib.sha256(weight.tobytes()).hexdigest()[:16]
    kinds = sorted(d.kind.value for d in diff(a, b, pairs, [result]).differences)
    assert kinds == ["transposed", "values_changed"]


def test_transposed_conv_kernel_in_memory_stays_small(tmp_path: Path) -> None:
    """Keras Conv2D (kh, kw, in, out) against PyTorch (out, in, kh, kw): stored dtype in memory, compared by slices."""
    from safetensors.numpy import save_file

    from inspector.values import compare_pairs

    rng = np.random.default_rng(5)
    kernel = rng.standard_normal((3, 3, 512, 512)).astype(np.float32)  # 9.4 MB
    save_file({"conv.kernel": kernel}, str(tmp_path / "k.safetensors"))
    save_file({"conv.weight": kernel.transpose(3, 2, 0, 1).copy()}, str(tmp_path / "t.safetensors"))
    del kernel
    a, b = load(tmp_path / "k.safetensors"), load(tmp_path / "t.safetensors")
    tracemalloc.start()
    try:
        (result,) = compare_pairs(a, b, [(a.tensors[0], b.tensors[0], (3, 2, 0, 1))])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.equal and result.skipped is None
    # both sides in float32 plus the float64 work of one compare block, never float64 copies of the whole
    assert peak < 2 * a.tensors[0].nbytes + (24 << 20), peak


def test_file_data_on_corrupt_compressed_member_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(6)
    np.savez_compressed(tmp_path / "z.npz", w=rng.standard_normal(50_000).astype(np.float32))
    data = bytearray((tmp_path / "z.npz").read_bytes())
    data[3000:3050] = bytes(50)
    (tmp_path / "broken.npz").write_bytes(bytes(data))
    assert main([str(tmp_path / "broken.npz")]) == 0  # the headers read fine
    capsys.readouterr()
    assert main([str(tmp_path / "broken.npz"), "--data"]) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "CRC-32" in captured.err and "Traceback" not in captured.err
    assert captured.out.startswith(str(tmp_path / "broken.npz"))  # the header report is still printed
