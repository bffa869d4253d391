"""TensorFlow Lite models written by the real converter (tensorflow-cpu 2.21, tf_keras 2.21).

    python sample_models/tflite/make_tflite.py

mlp_int8.tflite      a Dense MLP (16 -> 32 -> 10), full-integer quantized with a representative dataset: int8
                     weights and activations with per-channel and per-tensor scales, int32 biases
cnn_bn_fp16.tflite   Conv2D, BatchNormalization, DepthwiseConv2D, Dense, float16 quantized: FP16 weights read through
                     DEQUANTIZE; the converter folds the BatchNormalization into the convolution
lstm.tflite          Embedding, LSTM, Dense at batch size 1: the converter's fused UNIDIRECTIONAL_SEQUENCE_LSTM, its
                     gates' weights apart, its state two variable tensors
manifest.json        what the producing libraries report: Keras' count_params(), the parameters of the layers the
                     converter folds away, and each constant tensor as the TF Lite interpreter lists it (name, shape,
                     dtype, quantization scales), with the sum of their elements

Every layer's weights are drawn at random (biases too: the converter drops an all-zero bias and stores equal constants
once, which a freshly initialised model is full of).
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402
from tensorflow.lite.python import schema_py_generated as schema  # noqa: E402

HERE = Path(__file__).resolve().parent


def randomize(model: Any, seed: int) -> None:
    """Weights drawn in [0.5, 1.5): no zero bias, no two equal constants, positive variances."""
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        layer.set_weights([rng.uniform(0.5, 1.5, w.shape).astype(w.dtype) for w in layer.get_weights()])


def mlp() -> Any:
    model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(10)])
    randomize(model, 0)
    return model


def cnn() -> Any:
    model = keras.Sequential(
        [
            keras.Input((12, 12, 3)),
            keras.layers.Conv2D(8, 3),
            keras.layers.BatchNormalization(),
            keras.layers.ReLU(),
            keras.layers.DepthwiseConv2D(3),
            keras.layers.MaxPool2D(),
            keras.layers.Flatten(),
            keras.layers.Dense(5),
        ]
    )
    randomize(model, 1)
    return model


def lstm() -> Any:
    model = keras.Sequential(
        [
            keras.Input((7,), batch_size=1, dtype="int32"),
            keras.layers.Embedding(50, 8),
            keras.layers.LSTM(12),
            keras.layers.Dense(3),
        ]
    )
    randomize(model, 2)
    return model


def convert(model: Any, mode: str) -> bytes:
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    if mode != "float32":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if mode == "float16":
        converter.target_spec.supported_types = [tf.float16]
    if mode == "int8":
        shape = (1, *model.input_shape[1:])
        rng = np.random.default_rng(3)
        converter.representative_dataset = lambda: ([rng.uniform(0, 1, shape).astype("float32")] for _ in range(16))
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = converter.inference_output_type = tf.int8
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return bytes(converter.convert())


def constants(path: Path) -> dict[str, Any]:
    """Each constant tensor of the main subgraph as the interpreter lists it (its buffer holds data: the schema)."""
    model = schema.Model.GetRootAs(path.read_bytes(), 0)
    graph = model.Subgraphs(0)
    stored = {i for i in range(graph.TensorsLength()) if model.Buffers(graph.Tensors(i).Buffer()).DataLength()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        details = tf.lite.Interpreter(model_path=str(path)).get_tensor_details()
    out = {}
    for d in details:
        if d["index"] in stored:
            scales = len(d["quantization_parameters"]["scales"])
            out[d["name"]] = [[int(x) for x in d["shape"]], np.dtype(d["dtype"]).name, scales]
    return out


def folded_norms(model: Any) -> int:
    """The parameters of the BatchNormalization layers the converter folds into the layer before them."""
    return sum(layer.count_params() for layer in model.layers if isinstance(layer, keras.layers.BatchNormalization))


def main() -> None:
    manifest: dict[str, Any] = {"_made_by": f"tensorflow {tf.__version__}, tf_keras {keras.__version__}"}
    for name, make, mode in (("mlp_int8", mlp, "int8"), ("cnn_bn_fp16", cnn, "float16"), ("lstm", lstm, "float32")):
        model = make()
        path = HERE / f"{name}.tflite"
        path.write_bytes(convert(model, mode))
        tensors = constants(path)
        manifest[path.name] = {
            "format": "tflite",
            "count_params": model.count_params(),
            "folded_norm_params": folded_norms(model),
            "constant_elements": sum(int(np.prod(shape)) for shape, _, _ in tensors.values()),
            "tensors": tensors,
        }
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main()
