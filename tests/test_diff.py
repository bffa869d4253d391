"""`inspector diff`: pairs of files written by the real libraries, matched header-only and with --data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.cli import main
from inspector.diff import DiffKind, Pair, match, normalise, param_of, parse_map_rules, permutation
from inspector.diff import diff as diff_records
from inspector.errors import SpecError
from inspector.registry import load
from inspector.values import compare_pairs
from tests.conftest import SAMPLES


def run(capsys: pytest.CaptureFixture[str], *argv: Any) -> tuple[int, dict[str, Any]]:
    """`inspector diff ... --json`: exit status and the JSON document."""
    status = main(["diff", *map(str, argv), "--json"])
    out = capsys.readouterr().out
    return status, json.loads(out) if out.strip() else {}


def kinds(doc: dict[str, Any]) -> list[str]:
    return sorted(d["kind"] for d in doc["differences"])


def diff_paths(a: Path, b: Path, data: bool = False, tolerance: float = 0.0) -> Any:
    ca, cb = load(a), load(b)
    pairs = match(ca, cb)
    values = compare_pairs(ca, cb, [(p.a, p.b, p.perm) for p in pairs], tolerance) if data else None
    return diff_records(ca, cb, pairs, values, tolerance)


# -- torch ----------------------------------------------------------------------------------------------


def _tied_lm(torch: Any) -> Any:
    torch.manual_seed(0)

    class LM(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embedding = torch.nn.Embedding(50, 16)
            self.lstm = torch.nn.LSTM(16, 16)
            self.norm = torch.nn.BatchNorm1d(16)
            self.decoder = torch.nn.Linear(16, 50)
            self.decoder.weight = self.embedding.weight

    return LM()


@pytest.mark.reference
def test_torch_save_vs_save_model_tied_weight_is_not_a_loss(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    torch = pytest.importorskip("torch")
    st = pytest.importorskip("safetensors.torch")
    model = _tied_lm(torch)
    torch.save(model.state_dict(), tmp_path / "a.pt")
    st.save_model(model, str(tmp_path / "b.safetensors"))
    sd = model.state_dict()
    kept = st.load_file(str(tmp_path / "b.safetensors"))
    assert len(kept) == len(sd) - 1  # save_model stored the tied weight once

    status, doc = run(capsys, tmp_path / "a.pt", tmp_path / "b.safetensors", "--data")
    assert status == 0 and doc["same"] is True
    assert doc["a"]["elements"] == doc["b"]["elements"] == sum(v.numel() for k, v in kept.items())
    assert doc["a"]["parameters"] == sum(p.numel() for p in model.parameters())  # torch.save tells buffers apart
    assert doc["b"]["tensor_bytes"] == sum(v.numel() * v.element_size() for v in kept.values())
    assert all(d["expected"] for d in doc["differences"])
    assert {v["a"] for v in doc["values"] if v["equal"]} >= set(kept)

    # save_file of a state dict without the tied name (no metadata): the tie is dropped, still no loss
    dropped = {k: v for k, v in sd.items() if k != "decoder.weight"}
    st.save_file(dropped, str(tmp_path / "c.safetensors"))
    status, doc = run(capsys, tmp_path / "a.pt", tmp_path / "c.safetensors")
    assert status == 0 and doc["verdict"] == "equivalent"
    (tie,) = doc["differences"]
    assert tie["kind"] == "tied" and tie["a"] == "decoder.weight" and tie["b"] is None and tie["expected"]
    assert tie["tied_a"] == "embedding.weight" and tie["kept_b"] == "embedding.weight"


@pytest.mark.reference
def test_fp32_vs_bf16_dtype_only_values_within_rounding(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    torch = pytest.importorskip("torch")
    st = pytest.importorskip("safetensors.torch")
    model = _tied_lm(torch)
    sd = {k: v for k, v in model.state_dict().items() if k != "decoder.weight"}
    st.save_file(sd, str(tmp_path / "fp32.safetensors"))
    bf16 = {k: v.to(torch.bfloat16) if v.is_floating_point() else v for k, v in sd.items()}
    st.save_file(bf16, str(tmp_path / "bf16.safetensors"))

    status, doc = run(capsys, tmp_path / "fp32.safetensors", tmp_path / "bf16.safetensors")
    assert status == 1 and doc["same"] is False
    floats = [k for k, v in sd.items() if v.is_floating_point()]
    assert kinds(doc) == ["dtype_changed"] * len(floats)
    saved = {d["a"]: d["bytes_saved"] for d in doc["differences"]}
    assert saved == {k: sd[k].numel() * 2 for k in floats}

    status, doc = run(capsys, tmp_path / "fp32.safetensors", tmp_path / "bf16.safetensors", "--data")
    assert kinds(doc) == ["dtype_changed"] * len(floats)  # nothing beyond the dtype change
    for v in doc["values"]:
        a, b = sd[v["a"]].double(), bf16[v["b"]].double()
        assert v["within_tolerance"]
        assert v["max_abs"] == pytest.approx((a - b).abs().max().item(), rel=1e-12, abs=0)
        assert v["max_rel"] <= 2.0**-8


@pytest.mark.reference
def test_one_changed_layer_is_found_with_data_and_nothing_else(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    torch = pytest.importorskip("torch")
    model = _tied_lm(torch)
    torch.save(model.state_dict(), tmp_path / "a.pt")
    with torch.no_grad():
        model.lstm.weight_hh_l0[3, 5] += 0.25
    torch.save(model.state_dict(), tmp_path / "b.pt")

    status, doc = run(capsys, tmp_path / "a.pt", tmp_path / "b.pt")
    assert status == 0 and doc["verdict"] == "same"  # the headers cannot tell
    status, doc = run(capsys, tmp_path / "a.pt", tmp_path / "b.pt", "--data")
    assert status == 1
    (changed,) = doc["differences"]
    assert changed["kind"] == "values_changed" and changed["a"] == "lstm.weight_hh_l0" and changed["n_differ"] == 1
    assert changed["max_abs"] == pytest.approx(0.25, abs=1e-6)
    assert changed["sha256_a"] != changed["sha256_b"]
    # a tolerance above the change makes them the same again
    status, doc = run(capsys, tmp_path / "a.pt", tmp_path / "b.pt", "--data", "--tolerance", "0.3")
    assert status == 0 and doc["same"]


# -- transformers: sharded vs single ---------------------------------------------------------------------


@pytest.mark.reference
def test_sharded_vs_single_safetensors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=256, n_positions=64)
    model = transformers.GPT2LMHeadModel(config)
    model.save_pretrained(tmp_path / "single")
    model.save_pretrained(tmp_path / "sharded", max_shard_size="40KB")
    index = next((tmp_path / "sharded").glob("*.index.json"))
    assert len(json.loads(index.read_text())["weight_map"]) > 1

    status, doc = run(capsys, tmp_path / "single", tmp_path / "sharded", "--data")
    assert status == 0 and doc["verdict"] == "same", doc["differences"]
    assert doc["a"]["format"] == "safetensors" and doc["b"]["format"] == "safetensors-sharded"
    assert all(v["equal"] for v in doc["values"]) and len(doc["values"]) == len(doc["pairs"])
    assert doc["a"]["parameters"] == doc["b"]["parameters"] == model.num_parameters()


def test_sharded_vs_single_sample(capsys: pytest.CaptureFixture[str]) -> None:
    """sample_models/hf_rau: BERT saved by save_pretrained whole and in 4 shards (runs without transformers)."""
    from safetensors.numpy import load_file

    single, sharded = SAMPLES / "hf_rau/bert-tiny", SAMPLES / "hf_rau/bert-tiny-sharded"
    status, doc = run(capsys, single, sharded / "model.safetensors.index.json", "--data")
    assert status == 0 and doc["verdict"] == "same" and all(v["equal"] for v in doc["values"])
    values = load_file(str(single / "model.safetensors"))
    shards: dict[str, np.ndarray] = {}
    for shard in sorted(sharded.glob("model-*.safetensors")):
        shards |= load_file(str(shard))
    assert {v["a"] for v in doc["values"]} == set(values) == set(shards)
    assert all(np.array_equal(values[k], shards[k]) for k in values)  # the reference reader agrees
    # a single shard is that file, not the model: the other shards' tensors are missing from it
    shard = load_file(str(next(sharded.glob("model-00002-*.safetensors"))))
    status, doc = run(capsys, single, next(sharded.glob("model-00002-*.safetensors")))
    assert status == 1 and doc["b"]["format"] == "safetensors"
    assert {d["a"] for d in doc["differences"] if d["kind"] == "missing"} == set(values) - set(shard)


# -- Keras ----------------------------------------------------------------------------------------------


def _keras_model(keras: Any) -> Any:
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((6,)), keras.layers.Dense(8, name="hidden"), keras.layers.BatchNormalization(name="bn"),
         keras.layers.Dense(3, name="out")]
    )  # fmt: skip
    model.compile("adam", "mse")
    model.fit(np.ones((4, 6)), np.ones((4, 3)), epochs=1, verbose=0)
    return model


@pytest.mark.reference
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # raised inside Keras when it saves
def test_keras_file_vs_weights_h5_vs_legacy_h5(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    pytest.importorskip("torch")
    keras = pytest.importorskip("keras")
    model = _keras_model(keras)
    model.save(tmp_path / "m.keras")
    model.save_weights(tmp_path / "m.weights.h5")
    model.save(tmp_path / "legacy.h5")

    status, doc = run(capsys, tmp_path / "m.keras", tmp_path / "m.weights.h5", "--data")
    assert status == 0 and doc["verdict"] == "same"
    assert all(v["equal"] for v in doc["values"])
    assert doc["a"]["parameters"] == model.count_params()

    status, doc = run(capsys, tmp_path / "m.weights.h5", tmp_path / "legacy.h5", "--data")
    assert status == 0  # optimizer slots are named differently: missing / extra, expected
    assert {d["kind"] for d in doc["differences"]} <= {"missing", "extra"}
    assert all(d["expected"] and "optimizer state" in d["message"] for d in doc["differences"])
    model_pairs = [p for p in doc["pairs"] if not p["a"].startswith("optimizer")]
    assert {p["how"] for p in model_pairs} == {"normalised"}
    assert len(model_pairs) == len(model.weights)
    kernel = next(p for p in model_pairs if p["b"].endswith("hidden/kernel"))
    assert kernel["a"] == "layers/dense/vars/0"
    assert all(v["equal"] for v in doc["values"] if not v["a"].startswith("optimizer"))


@pytest.mark.reference
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize(
    "names", [{"hidden": "hidden", "out": "out", "bn": "bn"}, {"hidden": "fc1", "out": "fc2", "bn": "norm"}]
)
def test_keras_kernel_vs_torch_weight_is_transposed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, names: dict[str, str]
) -> None:
    """The same weights as a Keras file and a PyTorch state dict, with the same layer names or others."""
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    torch = pytest.importorskip("torch")
    keras = pytest.importorskip("keras")
    model = _keras_model(keras)
    model.save_weights(tmp_path / "k.weights.h5")
    sd = {}
    for layer in (model.get_layer("hidden"), model.get_layer("out")):
        kernel, bias = (np.asarray(w) for w in layer.get_weights())
        sd[f"{names[layer.name]}.weight"] = torch.from_numpy(kernel.T.copy())
        sd[f"{names[layer.name]}.bias"] = torch.from_numpy(bias)
    gamma, beta, mean, var = (torch.from_numpy(np.asarray(w)) for w in model.get_layer("bn").get_weights())
    bn = names["bn"]
    sd |= {f"{bn}.weight": gamma, f"{bn}.bias": beta, f"{bn}.running_mean": mean, f"{bn}.running_var": var}
    torch.save(sd, tmp_path / "t.pt")

    status, doc = run(capsys, tmp_path / "k.weights.h5", tmp_path / "t.pt", "--data")
    transposed = [d for d in doc["differences"] if d["kind"] == "transposed"]
    assert sorted(d["b"] for d in transposed) == sorted([f"{names['hidden']}.weight", f"{names['out']}.weight"])
    assert all(d["permutation"] == [1, 0] and d["expected"] for d in transposed)
    compared = {v["b"]: v for v in doc["values"]}
    assert all(compared[k]["equal"] for k in sd), compared  # the values prove every pairing
    renamed = {d["b"] for d in doc["differences"] if d["kind"] == "renamed"}
    assert renamed == (set() if names["hidden"] == "hidden" else set(sd))
    assert {d["kind"] for d in doc["differences"]} <= {"transposed", "missing", "renamed"}
    missing = [d for d in doc["differences"] if d["kind"] == "missing"]
    assert missing and all(d["a"].startswith("optimizer") and d["expected"] for d in missing)
    assert status == 0  # optimizer state left behind loses no weight


# -- MXNet ----------------------------------------------------------------------------------------------


def test_mxnet_export_vs_gluon_params(capsys: pytest.CaptureFixture[str]) -> None:
    """sample_models/mxnet: the same Gluon net saved by export() (arg:/aux:, symbol names) and save_parameters."""
    exported, gluon = SAMPLES / "mxnet/exported-0001.params", SAMPLES / "mxnet/gluon_tied.params"
    manifest = json.loads((SAMPLES / "mxnet/manifest.json").read_text())
    status, doc = run(capsys, exported, gluon, "--data")
    assert status == 0 and doc["verdict"] == "equivalent"
    pairs = {p["a"]: p["b"] for p in doc["pairs"]}
    assert pairs == {
        "arg:tied0_embedding0_weight": "emb.weight",
        "arg:tied0_batchnorm0_gamma": "bn.gamma",
        "arg:tied0_batchnorm0_beta": "bn.beta",
        "aux:tied0_batchnorm0_running_mean": "bn.running_mean",
        "aux:tied0_batchnorm0_running_var": "bn.running_var",
        "arg:tied0_embedding0_bias": "out.bias",
    }
    assert all(v["equal"] for v in doc["values"])  # the same trained net: the values prove the pairing
    (tie,) = [d for d in doc["differences"] if d["kind"] == "tied"]
    assert tie["b"] == "out.weight" and tie["duplicate_bytes"] == 20 * 8 * 4
    assert doc["a"]["parameters"] == manifest["exported-0001.params"]["elements"]

    status, doc = run(capsys, gluon, SAMPLES / "mxnet/gluon_tied_dedup.params", "--data")
    assert status == 0 and all(v["equal"] for v in doc["values"])


# -- npz stored vs deflated, through zlib streaming ------------------------------------------------------


def test_npz_stored_vs_compressed_values(capsys: pytest.CaptureFixture[str]) -> None:
    stored, deflated = SAMPLES / "basic/cnn_stored.npz", SAMPLES / "basic/cnn_compressed.npz"
    status, doc = run(capsys, stored, deflated, "--data")
    assert status == 0 and doc["verdict"] == "same"
    with np.load(stored) as z:
        assert len(doc["values"]) == len(z.files)
    assert all(v["equal"] and v["sha256_a"] == v["sha256_b"] for v in doc["values"])


# -- matching rules, unit level --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("arg:encoder_weight", "encoder_weight"),
        ("aux:bn_running_mean", "bn_running_mean"),
        ("model.layers.0.self_attn.q_proj.weight", "layers.0.self_attn.q_proj.weight"),
        ("transformer.h.0.ln_1.weight", "h.0.ln_1.weight"),
        ("dense_1/kernel:0", "dense_1.weight"),
        ("bn/moving_variance:0", "bn.running_var"),
        ("lstm/recurrent_kernel:0", "lstm.recurrent_kernel"),
    ],
)
def test_normalise(name: str, canonical: str) -> None:
    from inspector.records import TensorInfo

    assert normalise(TensorInfo(name, (1,), "F32", 4, 0)) == canonical


def test_param_of_and_permutation() -> None:
    assert param_of("tied0_batchnorm0_running_var") == "running_var"
    assert param_of("encoder_rnn_l0_h2h_weight") == "weight"
    assert param_of("dense.kernel") == "weight"
    assert permutation((3, 3, 4, 8), (8, 4, 3, 3)) == (3, 2, 0, 1)  # Keras Conv2D -> PyTorch
    assert permutation((8, 4, 3, 3), (3, 3, 4, 8)) == (2, 3, 1, 0)
    assert permutation((4, 8), (8, 4)) == (1, 0)
    assert permutation((4, 8), (4, 8)) is None and permutation((4, 8), (2, 16)) is None


def test_map_rules(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from safetensors.numpy import save_file

    rng = np.random.default_rng(0)
    w = {f"enc.{i}.w": rng.standard_normal((4, 4)).astype(np.float32) for i in range(3)}
    save_file(w, str(tmp_path / "a.safetensors"))
    save_file({f"layers.{i}.weight": v for i, v in enumerate(w.values())}, str(tmp_path / "b.safetensors"))
    status, doc = run(capsys, tmp_path / "a.safetensors", tmp_path / "b.safetensors", "--data")
    assert {p["how"] for p in doc["pairs"]} == {"shape and order"}  # paired by order: reported as renamed
    assert status == 0 and kinds(doc) == ["renamed"] * 3 and all(v["equal"] for v in doc["values"])
    rules = tmp_path / "rules.txt"
    rules.write_text("# enc -> layers\n" + r"enc\.(\d+)\.w=layers.\1.weight" + "\n")
    status, doc = run(capsys, tmp_path / "a.safetensors", tmp_path / "b.safetensors", "--data", "--map", rules)
    assert status == 0 and doc["verdict"] == "same"
    assert {p["how"] for p in doc["pairs"]} == {"mapped"} and all(v["equal"] for v in doc["values"])
    with pytest.raises(SpecError):
        parse_map_rules(["no-equals"])


def test_missing_extra_and_shape_changed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from safetensors.numpy import save_file

    save_file({"a.weight": np.ones((4, 3), np.float32), "gone": np.ones(2, np.int64)}, str(tmp_path / "a.st"))
    save_file({"a.weight": np.ones((4, 5), np.float32), "new": np.ones(7, np.int8)}, str(tmp_path / "b.st"))
    status, doc = run(capsys, tmp_path / "a.st", tmp_path / "b.st")
    assert status == 1 and doc["verdict"] == "different"
    by_kind = {d["kind"]: d for d in doc["differences"]}
    assert set(by_kind) == {"shape_changed", "missing", "extra"}
    assert by_kind["shape_changed"]["shape_b"] == [4, 5] and by_kind["missing"]["a"] == "gone"
    assert by_kind["extra"]["b"] == "new" and by_kind["extra"]["elements"] == 7


# -- CLI: text, exit codes, errors ------------------------------------------------------------------------


def test_text_verdict_first_and_grouped_by_layer(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["diff", str(SAMPLES / "mxnet/exported-0001.params"), str(SAMPLES / "mxnet/gluon_tied.params")])
    out = capsys.readouterr().out
    assert status == 0
    assert out.splitlines()[0].startswith("equivalent: nothing lost")
    assert "layer" in out and "renamed" in out and "totals" in out


def test_unreadable_is_exit_2_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{")
    assert main(["diff", str(bad), str(SAMPLES / "basic/mlp_fp16.safetensors")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and str(bad) in err
    assert main(["diff", str(tmp_path), str(bad)]) == 2  # an empty folder holds no checkpoint
    assert "0 checkpoints" in capsys.readouterr().err
    assert main(["diff", str(bad)]) == 2  # usage


def test_unsafe_is_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    np.save(tmp_path / "num.npy", np.zeros(2))
    assert main(["diff", str(tmp_path / "obj.npy"), str(tmp_path / "num.npy"), "--data"]) == 3
    captured = capsys.readouterr()
    assert "unsafe content, not run" in captured.err and captured.out.startswith("different")
    assert "not decoded" in captured.out  # the pickled objects are never read as values


def test_hostile_names_are_escaped_in_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from safetensors.numpy import save_file

    save_file({"evil\x1b[2J\x07": np.ones(3, np.float32), "ok": np.ones(2, np.float32)}, str(tmp_path / "a.st"))
    save_file({"ok": np.ones(2, np.float32)}, str(tmp_path / "b.st"))
    assert main(["diff", str(tmp_path / "a.st"), str(tmp_path / "b.st")]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "evil\\x1b[2J\\x07" in out


def test_corrupt_deflate_stream_with_data_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(1)
    np.savez_compressed(tmp_path / "z.npz", w=rng.standard_normal(50_000).astype(np.float32))
    data = bytearray((tmp_path / "z.npz").read_bytes())
    data[2000:2100] = bytes(100)  # inside the deflate stream, past the npy header
    (tmp_path / "broken.npz").write_bytes(bytes(data))
    assert main(["diff", str(tmp_path / "z.npz"), str(tmp_path / "broken.npz")]) == 0  # headers agree
    capsys.readouterr()
    assert main(["diff", str(tmp_path / "z.npz"), str(tmp_path / "broken.npz"), "--data"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "broken.npz" in err and "CRC-32" in err


def test_diff_records_are_pure() -> None:
    """diff() works on hand-built records: a dtype widening is expected, a narrowing is not."""
    from inspector.records import Checkpoint, TensorInfo

    def ckpt(dtype: str, nbytes: int) -> Checkpoint:
        tensors = (TensorInfo("w", (4,), dtype, nbytes, 8),)
        return Checkpoint("x", "safetensors", "safetensors", (("x", 100),), tensors, ())

    f16, f32 = ckpt("F16", 8), ckpt("F32", 16)
    up = diff_records(f16, f32, match(f16, f32))
    (change,) = up.differences
    assert up.same and change.kind is DiffKind.DTYPE_CHANGED and change.details["bytes_saved"] == -8
    down = diff_records(f32, f16, [Pair(f32.tensors[0], f16.tensors[0], "name")])
    assert not down.same and down.verdict == "different" and down.differences[0].details["bytes_saved"] == 8


def test_header_only_without_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --data no tensor byte is read; with it, both files' tensor bytes once."""
    from safetensors.numpy import save_file

    from inspector.probe import Probe

    arrays = {f"w{i}": np.full((256, 1024), i, np.float32) for i in range(8)}  # 8 MiB
    save_file(arrays, str(tmp_path / "a.safetensors"))
    save_file(arrays, str(tmp_path / "b.safetensors"))
    read = [0]
    original = Probe._pread

    def counting(self: Probe, offset: int, n: int, *rest: object) -> bytes:
        data = original(self, offset, n, *rest)
        read[0] += len(data)
        return data

    monkeypatch.setattr(Probe, "_pread", counting)
    assert main(["diff", str(tmp_path / "a.safetensors"), str(tmp_path / "b.safetensors")]) == 0
    assert read[0] < 64 << 10
    read[0] = 0
    assert main(["diff", str(tmp_path / "a.safetensors"), str(tmp_path / "b.safetensors"), "--data"]) == 0
    assert 2 * (8 << 20) <= read[0] < 2 * (8 << 20) + (64 << 10)
    capsys.readouterr()


@given(
    st.lists(st.tuples(st.integers(1, 6), st.integers(1, 6)), min_size=1, max_size=8, unique=True),
    st.data(),
)
@settings(max_examples=80, deadline=None)
def test_diff_reports_exactly_the_applied_changes(shapes: list[tuple[int, int]], data: st.DataObject) -> None:
    """Hand-built records: drop, narrow or transpose some tensors of A to make B; diff names exactly those."""
    from inspector.records import Checkpoint, TensorInfo

    a_tensors = [TensorInfo(f"layer{i}.weight", s, "F32", 4 * s[0] * s[1], 64 * i) for i, s in enumerate(shapes)]
    ops = data.draw(st.lists(st.sampled_from(["keep", "drop", "bf16", "transpose"]), min_size=len(shapes),
                             max_size=len(shapes)))  # fmt: skip
    b_tensors = []
    for t, op in zip(a_tensors, ops, strict=True):
        if op == "keep":
            b_tensors.append(t)
        elif op == "bf16":
            b_tensors.append(TensorInfo(t.name, t.shape, "BF16", t.nbytes // 2, t.offset))
        elif op == "transpose":
            b_tensors.append(TensorInfo(t.name, t.shape[::-1], "F32", t.nbytes, t.offset))

    def ckpt(tensors: list[TensorInfo]) -> Checkpoint:
        return Checkpoint("x", "safetensors", "safetensors", (("x", 1 << 20),), tuple(tensors), ())

    a, b = ckpt(a_tensors), ckpt(b_tensors)
    result = diff_records(a, b, match(a, b))
    expected_kinds = {"drop": "missing", "bf16": "dtype_changed", "transpose": "transposed"}
    want = sorted(
        (expected_kinds[op], t.name)
        for t, op in zip(a_tensors, ops, strict=True)
        if op in expected_kinds and not (op == "transpose" and t.shape[0] == t.shape[1])
    )
    assert sorted((d.kind.value, d.a or "") for d in result.differences) == want
    assert result.same == all(op in ("keep", "transpose") for op in ops)
