"""Keras HDF5 and .keras files: counts as Keras prints them, trainability, optimizer state, HDF5 accounting."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

from inspector import load
from inspector.records import RegionKind, TensorKind
from inspector.report import inspect
from loaders.base import check_invariants
from tests.conftest import SAMPLES, fixture_path

KERAS = SAMPLES / "keras"
MANIFEST = {k: v for k, v in json.loads((KERAS / "manifest.json").read_text()).items() if not k.startswith("_")}


def _per_layer(ckpt: object) -> dict[str, int]:
    out: dict[str, int] = {}
    for t in ckpt.tensors:  # type: ignore[attr-defined]
        if t.kind is TensorKind.PARAMETER:
            out[t.layer] = out.get(t.layer, 0) + t.n_elements
    return out


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_counts_equal_what_keras_printed(name: str) -> None:
    entry = MANIFEST[name]
    report = inspect(KERAS / name)
    ckpt = report.checkpoint
    check_invariants(ckpt)
    assert ckpt.n_parameters == entry["count_params"]
    assert sum(t.n_elements for t in ckpt.unique(TensorKind.PARAMETER) if t.trainable) == entry["trainable"]
    assert _per_layer(ckpt) == {k: v for k, v in entry["layers"].items() if v}  # model.summary()'s Param #
    assert sum(t.n_elements for t in ckpt.unique(TensorKind.OPTIMIZER)) == entry.get("optimizer_elements", 0)
    assert report.expectation is not None and report.expectation.matches


def test_formats_by_layout() -> None:
    assert load(KERAS / "adam_trained.keras").format == "keras3-zip"
    assert load(KERAS / "adam_trained.weights.h5").format == "keras3-weights-h5"
    assert load(KERAS / "adam_trained_legacy.h5").format == "keras-h5"
    assert load(fixture_path("keras/k2_model.h5")).format == "keras-h5"


@pytest.mark.parametrize("name", ["k2_model.h5", "k2_weights.h5", "k3_legacy.h5", "k3.weights.h5", "k3_model.keras"])
def test_tf_keras_and_keras3_fixtures(name: str) -> None:
    """The fixtures' model: Dense(16) on 8 inputs, BatchNormalization, Dense(4): 276 parameters, 32 not trainable."""
    ckpt = load(fixture_path(f"keras/{name}"))
    check_invariants(ckpt)
    assert ckpt.n_parameters == 8 * 16 + 16 + 4 * 16 + 16 * 4 + 4
    assert sum(t.n_elements for t in ckpt.unique(TensorKind.PARAMETER) if not t.trainable) == 32
    params = {t.param for t in ckpt.tensors if t.layer == "bn"}
    assert params == {"gamma", "beta", "moving_mean", "moving_variance"}


def test_keras3_rnn_cell_variables_are_kept() -> None:
    ckpt = load(KERAS / "lstm_classifier.keras")
    rnn = [(t.name, t.param) for t in ckpt.tensors if t.layer and t.layer.startswith("lstm")]
    assert [p for _, p in rnn] == ["kernel", "recurrent_kernel", "bias"]
    assert all("/cell/vars/" in n for n, _ in rnn)


def test_bfloat16_opaque_datasets() -> None:
    ckpt = load(fixture_path("keras/k3_bf16.weights.h5"))
    assert {t.dtype for t in ckpt.tensors} == {"BF16"}
    assert sum(t.nbytes for t in ckpt.tensors) == 30


def _h5stat_unaccounted() -> dict[str, int]:
    text = fixture_path("tool-output/hdf5_h5py_vs_h5stat.txt").read_text()
    return {
        m.group(1): int(m.group(2)) for m in re.finditer(r"^(\S+\.h5) .*?Unaccounted space: (\d+) bytes", text, re.M)
    }


def test_hdf5_unaccounted_equals_h5stat() -> None:
    """h5stat's "unaccounted space" = global heap collections + zero-filled unused space + what we cannot name."""
    expected = _h5stat_unaccounted()
    assert len(expected) >= 10
    for name, unaccounted in expected.items():
        ckpt = load(fixture_path(name))
        check_invariants(ckpt)
        named = sum(r.length for r in ckpt.regions if "h5stat: unaccounted" in r.label)
        ours = sum(r.length for r in ckpt.regions if r.kind is RegionKind.UNACCOUNTED)
        assert ours + named == unaccounted, name
        assert not [r for r in ckpt.regions if r.kind is RegionKind.UNKNOWN]
        if name.startswith("keras/"):  # written once, never edited: every byte is named
            assert ours == 0, name
        assert not [r for r in ckpt.regions if "places inferred" in r.label], name  # all placed from their bytes


def test_split_layer_names_and_frozen_layers(tmp_path: Path) -> None:
    """layer_names0/layer_names1 (the form used past 64 KB) are joined; config trainable=False is honoured."""
    path = tmp_path / "split.h5"
    config = {
        "class_name": "Sequential",
        "config": {
            "name": "s",
            "layers": [
                {"class_name": "Dense", "config": {"name": "a", "units": 2, "trainable": False, "use_bias": True}},
                {"class_name": "Dense", "config": {"name": "b", "units": 1, "trainable": True, "use_bias": True}},
            ],
        },
    }
    with h5py.File(path, "w") as f:
        f.attrs["model_config"] = json.dumps(config)
        weights = f.create_group("model_weights")
        weights.attrs["layer_names0"] = np.array([b"a"])
        weights.attrs["layer_names1"] = np.array([b"b"])
        for name, shape in (("a", (3, 2)), ("b", (2, 1))):
            g = weights.create_group(name)
            g.attrs["weight_names"] = np.array([f"{name}/kernel:0".encode(), f"{name}/bias:0".encode()])
            g.create_dataset(f"{name}/kernel:0", data=np.zeros(shape, "float32"))
            g.create_dataset(f"{name}/bias:0", data=np.zeros(shape[1:], "float32"))
    ckpt = load(path)
    assert ckpt.format == "keras-h5" and ckpt.n_parameters == 8 + 3
    assert {t.name: t.trainable for t in ckpt.tensors}["model_weights/a/a/kernel:0"] is False
    assert [layer["name"] for layer in ckpt.config["layers"]] == ["a", "b"]  # type: ignore[index]


def test_hdf5_refused_by_h5py_is_a_clean_error(tmp_path: Path) -> None:
    data = fixture_path("keras/k2_weights.h5").read_bytes()
    path = tmp_path / "broken.h5"
    path.write_bytes(data[:600])
    with pytest.raises(Exception) as info:
        load(path)
    assert type(info.value).__module__ == "inspector.errors"


@pytest.mark.reference
def test_keras_loads_the_same_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    pytest.importorskip("torch")
    keras = pytest.importorskip("keras")
    model = keras.saving.load_model(KERAS / "frozen_embedding.keras")
    ckpt = load(KERAS / "frozen_embedding.keras")
    assert model.count_params() == ckpt.n_parameters
    trainable = sum(int(np.prod(w.shape)) for w in model.trainable_weights)
    assert trainable == sum(t.n_elements for t in ckpt.unique(TensorKind.PARAMETER) if t.trainable)


@pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")  # keras's torch backend on save
@pytest.mark.parametrize("suffix", [".keras", ".weights.h5", ".h5"])
def test_keras_layers_without_a_formula_nested_models_and_normalization(tmp_path: Path, suffix: str) -> None:
    """What keras.applications models hold (found by sweeping them): an adapted Normalization layer (mean, variance
    and count: parameters Keras counts and never trains), a nested Sequential (the legacy .h5 keeps its weights under
    the nested model's group) and a layer class with no formula in the table (ConvNeXt's LayerScale; here a custom
    class). Counts and the trainable split as Keras gives them, and no warning: the config's expectation counts a
    class without a formula as the file holds it, and says so."""
    keras = pytest.importorskip("keras")

    @keras.saving.register_keras_serializable(package="inspector_test")
    class Scale(keras.layers.Layer):  # type: ignore[misc]
        def build(self, input_shape: tuple[int, ...]) -> None:
            self.gamma = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="gamma")

        def call(self, x: object) -> object:
            return x * self.gamma  # type: ignore[operator]

    inputs = keras.Input((6, 6, 3))
    x = keras.layers.Normalization()(inputs)
    x = keras.layers.Normalization(mean=[0.5, 0.5, 0.5], variance=[1.0, 1.0, 1.0])(x)  # given: no variables
    stem = keras.Sequential([keras.layers.Conv2D(4, 3), keras.layers.LayerNormalization()], name="stem")
    x = Scale()(stem(x))
    outputs = keras.layers.Dense(2)(keras.layers.GlobalAveragePooling2D()(x))
    model = keras.Model(inputs, outputs)
    path = tmp_path / f"m{suffix}"
    model.save_weights(path) if suffix == ".weights.h5" else model.save(path)

    report = inspect(path)
    ckpt = report.checkpoint
    check_invariants(ckpt)
    assert ckpt.n_parameters == model.count_params() == 7 + 112 + 8 + 4 + 10
    trainable = sum(int(np.prod(w.shape)) for w in model.trainable_weights)
    assert sum(t.n_elements for t in ckpt.unique(TensorKind.PARAMETER) if t.trainable) == trainable == 134
    assert not [f for f in report.findings if f.severity.value != "info"], report.findings
    assert report.expectation is not None and report.expectation.matches
    assert {r.role for t, r in zip(ckpt.tensors, report.roles, strict=True) if t.param in ("mean", "count")} == {
        "norm_statistic"
    }
    if suffix != ".weights.h5":  # the config's expectation: Normalization's formula, Scale as stored
        assert report.expectation.source == "config"
        kinds = [c.kind for c in report.expectation.layers]  # (Keras numbers its auto names per process)
        assert kinds.count("Normalization") == 1 and [k for k in kinds if k.endswith("Scale")]  # (h5: registered name)
        assert any(
            "no formula for Keras class(es)" in n and "Scale: their layers" in n for n in report.expectation.notes
        )


@pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")  # keras's torch backend on save
def test_keras3_weights_without_config_and_optional_variables(tmp_path: Path) -> None:
    """A .weights.h5 holds numbered variables and no config: a BatchNormalization(scale=False) (InceptionV3's) holds
    beta and its statistics, which are read as such, not as gamma, beta and a trained moving_mean."""
    keras = pytest.importorskip("keras")
    model = keras.Sequential([keras.Input((5, 5, 3)), keras.layers.Conv2D(4, 3, use_bias=False),
                              keras.layers.BatchNormalization(scale=False), keras.layers.Flatten(),
                              keras.layers.Dense(2, use_bias=False)])  # fmt: skip
    path = tmp_path / "m.weights.h5"
    model.save_weights(path)
    report = inspect(path)
    ckpt = report.checkpoint
    assert ckpt.n_parameters == model.count_params() == 108 + 12 + 72
    trainable = sum(int(np.prod(w.shape)) for w in model.trainable_weights)
    assert sum(t.n_elements for t in ckpt.unique(TensorKind.PARAMETER) if t.trainable) == trainable == 108 + 4 + 72
    bn = [t.param for t in ckpt.tensors if t.layer and t.layer.startswith("batch_normalization")]
    assert bn == ["beta", "moving_mean", "moving_variance"]
    assert report.expectation is not None and report.expectation.matches and not report.expectation.anomalies


@pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")  # keras's torch backend on save
def test_keras3_multi_head_attention_projections(tmp_path: Path) -> None:
    """A MultiHeadAttention holds its projections as attributes (`query_dense`...: EinsumDense layers no config lists):
    their variables are named as Keras names them (`v.path`; they were `var0`, `var1`, unmatched) and have the
    attention's roles (their kernels are 3-d: not convolutions)."""
    keras = pytest.importorskip("keras")
    inputs = keras.Input((5, 8))
    attention = keras.layers.MultiHeadAttention(2, 4)
    model = keras.Model(inputs, keras.layers.LayerNormalization()(attention(inputs, inputs)))
    path = tmp_path / "m.weights.h5"
    model.save_weights(path)
    report = inspect(path)
    assert {f"{t.layer}/{t.param}" for t in report.checkpoint.tensors} == {v.path for v in model.weights}
    roles = {r.layer.rpartition("/")[2]: r.role for r in report.roles if r.layer.startswith(attention.name)}
    assert roles == {"query": "attention_query", "key": "attention_key", "value": "attention_value",
                     "attention_output": "attention_output"}  # fmt: skip
    assert report.checkpoint.n_parameters == model.count_params()


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")
@pytest.mark.parametrize("suffix", [".h5", ".weights.h5"])
def test_tf_keras_names_with_slashes_nested_models_and_depthwise_kernels(tmp_path: Path, suffix: str) -> None:
    """What tf-keras's applications hold (found by sweeping them): layer names with '/' (DenseNet's 'conv1/bn' beside
    its final 'bn'), a nested Sequential whose layers are numbered within it ('sequential/conv2d' beside the top
    level's 'conv2d' in a .weights.h5 without names) and Keras 2's 'depthwise_kernel'. Counts as Keras gives them,
    the config's expectation matches and no warning."""
    tf_keras = pytest.importorskip("tf_keras")
    layers = tf_keras.layers
    inputs = tf_keras.Input((8, 8, 3))
    x = layers.Conv2D(4, 3, name="conv1/conv")(inputs)
    x = layers.BatchNormalization(name="conv1/bn")(x)
    x = layers.DepthwiseConv2D(3, use_bias=False, name="dw")(x)
    x = tf_keras.Sequential([layers.Conv2D(5, 1), layers.LayerNormalization()])(x)
    x = layers.Conv2D(6, 1)(x)
    x = layers.BatchNormalization(name="bn")(x)
    model = tf_keras.Model(inputs, layers.Dense(2)(layers.GlobalAveragePooling2D()(x)))
    path = tmp_path / f"m{suffix}"
    model.save_weights(path) if suffix == ".weights.h5" else model.save(path)

    report = inspect(path)
    ckpt = report.checkpoint
    check_invariants(ckpt)
    assert ckpt.n_parameters == model.count_params() == 112 + 16 + 36 + 25 + 10 + 36 + 24 + 14
    trainable = sum(int(np.prod(w.shape)) for w in model.trainable_weights)
    assert sum(t.n_elements for t in ckpt.unique(TensorKind.PARAMETER) if t.trainable) == trainable
    assert not [f for f in report.findings if f.severity.value != "info"], report.findings
    assert report.expectation is not None and report.expectation.matches
    if suffix == ".h5":  # the names the config gives (a .weights.h5 has the paths' own, numbered per container)
        assert report.expectation.source == "config"
        assert {c.layer for c in report.expectation.layers} >= {"conv1/bn", "bn", "dw", "conv2d", "conv2d_1"}


def _keras3_attention_and_wrappers(keras: Any) -> Any:
    """A Keras 3 model of the layers whose formula the config check lacked (found by building each common layer)."""
    layers = keras.layers
    query, value = keras.Input((6, 16)), keras.Input((5, 12))
    x = layers.MultiHeadAttention(3, 4, value_dim=5, use_bias=False, output_shape=7)(query, value)
    x = layers.GroupQueryAttention(head_dim=4, num_query_heads=4, num_key_value_heads=2)(x, x)
    x = layers.LayerNormalization(rms_scaling=True)(x)  # (deprecated by Keras: its gamma only)
    x = layers.Bidirectional(layers.GRU(5, return_sequences=True), backward_layer=layers.GRU(4, go_backwards=True,
                             return_sequences=True))(x)  # fmt: skip
    x = layers.TimeDistributed(layers.Dense(3))(x)
    x = layers.ConvLSTM1D(2, 3)(layers.Reshape((6, 3, 1))(x))
    x = layers.PReLU()(layers.Flatten()(x))
    return keras.Model([query, value], layers.Dense(2)(x))


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore:__array__ implementation:DeprecationWarning")
@pytest.mark.parametrize("suffix", [".keras", ".weights.h5", ".h5"])
def test_keras3_attention_wrappers_and_conv_lstm_against_count_params(tmp_path: Path, suffix: str) -> None:
    """MultiHeadAttention (its own value and output sizes), GroupQueryAttention, LayerNormalization(rms_scaling),
    a Bidirectional with a backward layer of its own, TimeDistributed, ConvLSTM1D and PReLU, saved every way Keras 3
    saves: counts and the trainable split as Keras gives them, the config's expectation matches (it had no formula for
    the attention layers, TimeDistributed and ConvLSTM, counted gamma and beta for the RMS-scaled norm and the forward
    GRU twice: a false COUNT_MISMATCH) and every variable has a role (ConvLSTM's and PReLU's were unmatched)."""
    keras = pytest.importorskip("keras")
    model = _keras3_attention_and_wrappers(keras)
    path = tmp_path / f"m{suffix}"
    model.save_weights(path) if suffix == ".weights.h5" else model.save(path)

    report = inspect(path)
    ckpt = report.checkpoint
    check_invariants(ckpt)
    assert ckpt.n_parameters == model.count_params() == 621 + 375 + 7 + 366 + 33 + 80 + 2 + 6
    trainable = sum(int(np.prod(w.shape)) for w in model.trainable_weights)
    assert sum(t.n_elements for t in ckpt.unique(TensorKind.PARAMETER) if t.trainable) == trainable
    assert not [f for f in report.findings if f.severity.value != "info"], report.findings
    assert report.expectation is not None and report.expectation.matches, report.expectation
    assert not [r.name for r in report.roles if r.role == "unmatched"]
    if suffix == ".weights.h5":  # (no config: the layer TimeDistributed wraps is known by its own name, `dense`)
        wrapped = {t.param: r.role for t, r in zip(ckpt.tensors, report.roles, strict=True) if "/layer/" in t.name}
        assert wrapped == {"kernel": "dense", "bias": "dense"}  # (they were var0, var1: unmatched)
    else:
        assert report.expectation.source == "config"
        rows = {c.layer: c.kind for c in report.expectation.layers}
        held = {r.rpartition("/")[2] for r in rows if r.startswith("multi_head_attention")}  # (auto names numbered)
        assert held == {"query", "key", "value", "attention_output"}
        assert {rows[r] for r in rows if "conv_lstm1d" in r} == {"ConvLSTM1D"}
    attention = {r.layer.rpartition("/")[2]: r.role for r in report.roles if r.layer.startswith("grouped_query")}
    assert attention == {"query": "attention_query", "key": "attention_key", "value": "attention_value",
                         "attention_output": "attention_output"}  # fmt: skip


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore:__array__ implementation:DeprecationWarning")
@pytest.mark.parametrize("suffix", [".keras", ".weights.h5", ".h5"])
def test_keras3_dense_with_lora(tmp_path: Path, suffix: str) -> None:
    """A Keras 3 Dense with `enable_lora(2)`: a legacy .h5 holds its frozen kernel and the LoRA's two factors, checked
    as one layer of the config's `lora_rank` (the formula had no LoRA: a false COUNT_MISMATCH) with Keras's count and
    trainable split (the kernel frozen); `.keras` and `.weights.h5` hold the kernel with the LoRA merged into it, the
    LoRA's parameters fewer than `count_params()` (a model loaded from them makes new ones)."""
    keras = pytest.importorskip("keras")
    inputs = keras.Input((6,))
    dense = keras.layers.Dense(4, name="dense")
    model = keras.Model(inputs, keras.layers.Dense(3, name="out")(dense(inputs)))
    dense.enable_lora(2)
    path = tmp_path / f"lora{suffix}"
    model.save_weights(path) if suffix == ".weights.h5" else model.save(path)

    report = inspect(path)
    ckpt = report.checkpoint
    check_invariants(ckpt)
    lora = 6 * 2 + 2 * 4
    assert not [f for f in report.findings if f.severity.value != "info"], report.findings
    assert report.expectation is not None and report.expectation.matches
    if suffix != ".h5":
        assert ckpt.n_parameters == model.count_params() - lora == 24 + 4 + 15
        return
    assert ckpt.n_parameters == model.count_params() == 24 + 4 + lora + 15
    trainable = sum(int(np.prod(w.shape)) for w in model.trainable_weights)
    assert sum(t.n_elements for t in ckpt.unique(TensorKind.PARAMETER) if t.trainable) == trainable == 4 + lora + 15
    assert {c.layer: (c.kind, c.found) for c in report.expectation.layers} == {
        "dense": ("Dense+LoRA r=2", 24 + 4 + lora), "out": ("Dense", 15)}  # fmt: skip
    assert {r.name.rpartition("/")[2]: r.role for r in report.roles if "lora" in r.name} == {
        "lora_kernel_a": "lora_factor", "lora_kernel_b": "lora_factor"}  # fmt: skip


def _keras3_lora_everywhere(keras: Any) -> Any:
    """A Keras 3 model with a LoRA (`enable_lora(2)`) on each layer class that takes one: Dense, EinsumDense,
    Embedding, Conv2D."""
    layers = keras.layers
    features, tokens, image = keras.Input((8,)), keras.Input((3,), dtype="int32"), keras.Input((6, 6, 2))
    x = layers.EinsumDense("ab,bc->ac", output_shape=5, bias_axes="c", name="ed")(layers.Dense(6, name="d")(features))
    e = layers.Flatten()(layers.Embedding(10, 4, name="emb")(tokens))
    c = layers.Flatten()(layers.Conv2D(3, 3, name="cv")(image))
    model = keras.Model([features, tokens, image], layers.Concatenate()([x, e, c]))
    for name in ("d", "ed", "emb", "cv"):
        model.get_layer(name).enable_lora(2)
    return model


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore:__array__ implementation:DeprecationWarning")
@pytest.mark.parametrize("suffix", [".keras", ".h5"])
def test_keras3_lora_of_every_layer_class(tmp_path: Path, suffix: str) -> None:
    """A legacy .h5 holds each layer's kernel (or table) and its LoRA's factors: checked as one layer of the config's
    `lora_rank` for each class (Embedding's and Conv2D's LoRA were outside their formula: a false COUNT_MISMATCH),
    counts and trainable split as `load_model` gives them. A `.keras` holds the kernels with the LoRA merged into them
    and no factors: counted as stored, the merged kernels not trainable, as the loaded model has them, and an info
    finding says what `keras.saving.load_model` counts (it makes new factors): its count_params() and trainable part."""
    keras = pytest.importorskip("keras")
    path = tmp_path / f"lora{suffix}"
    _keras3_lora_everywhere(keras).save(path)
    loaded = keras.saving.load_model(path)
    trainable = sum(int(np.prod(w.shape)) for w in loaded.trainable_weights)
    factors = 2 * ((8 + 6) + (6 + 5) + (10 + 4) + (3 * 3 * 2 + 3))  # rank x (inputs + outputs) of each layer

    report = inspect(path)
    ckpt = report.checkpoint
    held_trainable = sum(t.n_elements for t in ckpt.unique(TensorKind.PARAMETER) if t.trainable)
    assert not [f for f in report.findings if f.severity.value != "info"], report.findings
    assert report.expectation is not None and report.expectation.matches
    merged = [f for f in report.findings if f.code == "LORA_MERGED"]
    if suffix == ".h5":
        assert (ckpt.n_parameters, held_trainable) == (loaded.count_params(), trainable) == (306, 134)
        assert {c.layer: c.kind for c in report.expectation.layers} == {
            "d": "Dense+LoRA r=2", "ed": "EinsumDense", "emb": "Embedding+LoRA r=2", "cv": "Conv+LoRA r=2"}  # fmt: skip
        assert not merged
        return
    assert (ckpt.n_parameters, held_trainable) == (loaded.count_params() - factors, trainable - factors) == (186, 14)
    assert len(merged) == 1
    assert f"count_params() is {loaded.count_params()} ({trainable} trainable)" in merged[0].message
    assert {s.rpartition("/")[0] for s in merged[0].subjects} == {
        "layers/dense/vars", "layers/einsum_dense/vars", "layers/embedding/vars", "layers/conv2d/vars"}  # fmt: skip


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore:__array__ implementation:DeprecationWarning")
@pytest.mark.parametrize("suffix", [".keras", ".weights.h5", ".h5"])
def test_keras3_attention_scales(tmp_path: Path, suffix: str) -> None:
    """Keras's dot-product Attention (`use_scale`: a scalar scale; `score_mode="concat"`: a scalar weight too) and
    AdditiveAttention (a scale per query feature): the config's formula counts them (the table had none: counted as
    the file holds them, with a note), their variables are named (a .keras and .weights.h5 held `var0`, `var1`:
    unmatched) and are learned tensors (a legacy .h5's `scale` was read as a norm's)."""
    keras = pytest.importorskip("keras")
    layers = keras.layers
    query, value = keras.Input((4, 6)), keras.Input((5, 6))
    held = [
        layers.Attention(use_scale=True, name="dot")([query, value]),
        layers.Attention(use_scale=True, score_mode="concat", name="concat")([query, value]),
        layers.Attention(name="plain")([query, value]),
        layers.AdditiveAttention(name="additive")([query, value]),
    ]
    model = keras.Model([query, value], layers.Dense(2, name="out")(layers.Concatenate()(held)))
    path = tmp_path / f"attention{suffix}"
    model.save_weights(path) if suffix == ".weights.h5" else model.save(path)

    report = inspect(path)
    assert report.checkpoint.n_parameters == model.count_params() == 1 + 2 + 6 + (24 * 2 + 2)
    assert not [r.name for r in report.roles if r.role == "unmatched"]
    attention = {(t.layer, t.param): r.role for t, r in zip(report.checkpoint.tensors, report.roles, strict=True)
                 if t.param != "kernel" and t.param != "bias"}  # fmt: skip
    assert attention == {("dot", "scale"): "learned_tensor", ("concat", "scale"): "learned_tensor",
                         ("concat", "concat_score_weight"): "learned_tensor",
                         ("additive", "scale"): "learned_tensor"}  # fmt: skip
    assert report.expectation is not None and report.expectation.matches
    if suffix != ".weights.h5":
        assert {c.layer: (c.kind, c.expected) for c in report.expectation.layers if c.layer != "out"} == {
            "dot": ("Attention", 1), "concat": ("Attention", 2), "additive": ("AdditiveAttention", 6)}  # fmt: skip
        assert not report.expectation.notes[:-1], report.expectation.notes  # (no "no formula for" note)


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")
@pytest.mark.parametrize("suffix", [".h5", ".weights.h5"])
def test_tf_keras_attention_and_wrappers(tmp_path: Path, suffix: str) -> None:
    """tf-keras names a MultiHeadAttention's, a Bidirectional's and a TimeDistributed's weights under the layer
    (`multi_head_attention/query/kernel:0`, `bidirectional/forward_gru/gru_cell/kernel:0`, a backward layer of its own
    by its own name; `time_distributed/kernel:0`): read as the projections', each direction's and the wrapped layer's,
    counts as Keras's, the config's expectation matches (the legacy .h5 got a COUNT_MISMATCH). Its .weights.h5 (Keras
    3's layout, no names) holds the projections under their attributes (`_query_dense`), which were one layer of 3-d
    kernels read as convolutions; the layer TimeDistributed wraps is of no known class there (unmatched)."""
    tf_keras = pytest.importorskip("tf_keras")
    layers = tf_keras.layers
    inputs = tf_keras.Input((6, 16))
    x = layers.MultiHeadAttention(2, 4, value_dim=3)(inputs, inputs)
    x = layers.Bidirectional(layers.GRU(5, return_sequences=True), backward_layer=layers.GRU(4, go_backwards=True,
                             return_sequences=True))(x)  # fmt: skip
    model = tf_keras.Model(inputs, layers.TimeDistributed(layers.Dense(2))(x))
    path = tmp_path / f"m{suffix}"
    model.save_weights(path) if suffix == ".weights.h5" else model.save(path)

    report = inspect(path)
    assert report.checkpoint.n_parameters == model.count_params()
    assert not [f for f in report.findings if f.severity.value != "info"], report.findings
    assert report.expectation is not None and report.expectation.matches
    roles = {r.role for r in report.roles if suffix == ".h5" or "time_distributed" not in r.name}
    assert roles == {"attention_query", "attention_key", "attention_value", "attention_output", "rnn_input_kernel",
                     "rnn_recurrent_kernel", "rnn_bias"} | ({"dense"} if suffix == ".h5" else set())  # fmt: skip
    if suffix == ".h5":
        assert report.expectation.source == "config"
        held = {c.layer.partition("/")[2] or c.layer.rstrip("_0123456789") for c in report.expectation.layers}
        assert held == {"query", "key", "value", "attention_output", "forward", "backward", "time_distributed"}


@pytest.mark.reference
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_keras_layer_list_of_attention_and_wrappers_agrees_with_keras() -> None:
    """The layer list (`inspector formula "Input(6,16) MultiHeadAttention(2,4) ..."`) counts what Keras builds."""
    keras = pytest.importorskip("keras")
    from inspector.architectures import count, keras_layers

    layers = keras.layers
    cases = {
        "Input(6,16) MultiHeadAttention(3,4,value_dim=5,use_bias=false,output_shape=7) Dense(2)": [
            layers.MultiHeadAttention(3, 4, value_dim=5, use_bias=False, output_shape=7), layers.Dense(2)],
        "Input(6,16) GroupQueryAttention(4,4,2,use_gate=true)": [layers.GroupQueryAttention(4, 4, 2, use_gate=True)],
        "Input(4,8,8,3) ConvLSTM2D(5,3) Flatten Dense(2)": [layers.ConvLSTM2D(5, 3), layers.Flatten(), layers.Dense(2)],
        "Input(6,8,3) TimeDistributed(Conv1D(4,3)) LayerNormalization(rms_scaling=true)": [
            layers.TimeDistributed(layers.Conv1D(4, 3)), layers.LayerNormalization(rms_scaling=True)],
        "Input(4,6) Attention(use_scale=true,score_mode=concat) AdditiveAttention Dense(2)": [
            layers.Attention(use_scale=True, score_mode="concat"), layers.AdditiveAttention(), layers.Dense(2)],
    }  # fmt: skip
    for text, made in cases.items():
        shape = tuple(int(v) for v in text.split(")")[0].removeprefix("Input(").split(","))
        x = inputs = keras.Input(shape)
        for layer in made:
            if type(layer).__name__ in ("Attention", "AdditiveAttention"):  # (query and value the input)
                x = layer([x, x])
            else:
                x = layer(x, x) if "Attention" in type(layer).__name__ else layer(x)
        assert count(keras_layers(text))[0] == keras.Model(inputs, x).count_params(), text
