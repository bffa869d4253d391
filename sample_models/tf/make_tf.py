"""TensorFlow checkpoints (tensorflow-cpu 2.21, tf_keras 2.21).

    python sample_models/tf/make_tf.py

keras_adam/   tf.train.CheckpointManager of a tf_keras Dense/BatchNorm/LSTM model and its Adam optimizer after one
              step (checkpoint state file, ckpt-1.index, ckpt-1.data-00000-of-00001)
tf1_adam/     a TF1 Saver checkpoint of a partitioned kernel, a bias, AdamOptimizer slots and global_step
manifest.json what TensorFlow itself reports (count_params, optimizer variable elements, list_variables)
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402

HERE = Path(__file__).resolve().parent


def keras_adam() -> dict[str, object]:
    tf.random.set_seed(0)
    inp = keras.Input((8,), name="x")
    h = keras.layers.BatchNormalization(name="bn")(keras.layers.Dense(16, name="dense")(inp))
    out = keras.layers.Dense(4, name="head")(keras.layers.LSTM(6, name="lstm")(keras.layers.Reshape((4, 4))(h)))
    model = keras.Model(inp, out, name="tiny")
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse")
    model.fit(np.ones((4, 8), "float32"), np.ones((4, 4), "float32"), epochs=1, verbose=0)
    folder = HERE / "keras_adam"
    shutil.rmtree(folder, ignore_errors=True)
    ckpt = tf.train.Checkpoint(model=model, optimizer=model.optimizer)
    prefix = tf.train.CheckpointManager(ckpt, str(folder), max_to_keep=1).save()
    variables = dict(tf.train.list_variables(prefix))
    return {
        "count_params": model.count_params(),
        "optimizer_elements": sum(int(np.prod(s)) for k, s in variables.items() if k.startswith("optimizer/")),
        "variables": variables,
    }


def tf1_adam() -> dict[str, object]:
    folder = HERE / "tf1_adam"
    shutil.rmtree(folder, ignore_errors=True)
    graph = tf.Graph()
    with graph.as_default():
        step = tf.compat.v1.train.get_or_create_global_step()
        kernel = tf.compat.v1.get_variable(
            "dense/kernel", shape=[10, 4], partitioner=tf.compat.v1.fixed_size_partitioner(2)
        )
        bias = tf.compat.v1.get_variable("dense/bias", shape=[4])
        loss = tf.reduce_sum(tf.matmul(tf.ones((1, 10)), tf.concat(list(kernel), 0)) + bias)
        train = tf.compat.v1.train.AdamOptimizer().minimize(loss, global_step=step)
        saver = tf.compat.v1.train.Saver(save_relative_paths=True)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(train)
            prefix = saver.save(session, str(folder / "model"), write_meta_graph=False)
    variables = dict(tf.train.list_variables(prefix))
    slots = sum(int(np.prod(s)) for k, s in variables.items() if k.endswith(("Adam", "Adam_1", "_power")))
    return {"count_params": 44, "optimizer_elements": slots, "variables": variables}


def main() -> None:
    manifest = {"_made_by": f"tensorflow {tf.__version__}, tf_keras {keras.__version__}"}
    manifest["keras_adam"] = keras_adam()
    manifest["tf1_adam"] = tf1_adam()
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
