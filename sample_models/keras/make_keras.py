"""Make Keras 3 samples (torch backend) of the seed 000 and 001 models, small, and record what Keras reports.

    pip install keras 'torch==2.13.0'
    KERAS_BACKEND=torch python sample_models/keras/make_keras.py

manifest.json records per file: model.count_params(), the trainable and non-trainable split, each layer's
count_params() as model.summary() prints it, and the optimizer variables' elements.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "torch")

import keras  # noqa: E402
import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
L = keras.layers


def models() -> dict[str, keras.Model]:
    keras.utils.set_random_seed(0)
    out = {}
    # seed 000: Embedding -> LSTM (sequences) -> Dense(embed) -> Dense(vocab), at a small size
    out["lstm_lm"] = keras.Sequential([keras.Input((None,)), L.Embedding(200, 16), L.LSTM(32, return_sequences=True),
                                       L.Dense(16), L.Dense(200)], name="lstm_lm")  # fmt: skip
    # seed 001: Embedding + Flatten / SimpleRNN / LSTM / GRU classifiers
    out["flatten_classifier"] = keras.Sequential([keras.Input((20,)), L.Embedding(300, 8), L.Flatten(), L.Dense(16),
                                                  L.Dense(1)], name="flatten_classifier")  # fmt: skip
    for name, layer in (("simple_rnn", L.SimpleRNN(12)), ("lstm", L.LSTM(12)), ("gru", L.GRU(12)),
                        ("gru_v1", L.GRU(12, reset_after=False))):  # fmt: skip
        out[f"{name}_classifier"] = keras.Sequential([keras.Input((None,)), L.Embedding(300, 8), layer, L.Dense(1)],
                                                     name=f"{name}_classifier")  # fmt: skip
    frozen = L.Embedding(300, 8, trainable=False)
    out["frozen_embedding"] = keras.Sequential(
        [keras.Input((None,)), frozen, L.LSTM(8), L.Dense(1)], name="frozen_embedding"
    )
    out["batchnorm"] = keras.Sequential([keras.Input((10,)), L.Dense(16), L.BatchNormalization(), L.Dense(3)],
                                        name="batchnorm")  # fmt: skip
    return out


def describe(model: keras.Model) -> dict:
    trainable = sum(int(np.prod(w.shape)) for w in model.trainable_weights)
    total = model.count_params()
    return {
        "count_params": total,
        "trainable": trainable,
        "non_trainable": total - trainable,
        "layers": {layer.name: layer.count_params() for layer in model.layers},
    }


def main() -> None:
    manifest = {}
    for name, model in models().items():
        model.save(HERE / f"{name}.keras")
        manifest[f"{name}.keras"] = describe(model)
    model = models()["batchnorm"]
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse")
    model.fit(np.ones((8, 10), "float32"), np.ones((8, 3), "float32"), epochs=1, verbose=0)
    opt = sum(int(np.prod(v.shape)) for v in model.optimizer.variables)
    for file in ("adam_trained.keras", "adam_trained.weights.h5", "adam_trained_legacy.h5"):
        if file.endswith(".weights.h5"):
            model.save_weights(HERE / file)
        else:
            model.save(HERE / file)
        manifest[file] = describe(model) | {"optimizer_elements": opt}
    manifest["_made_by"] = f"keras {keras.__version__}, backend {keras.backend.backend()}"
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
