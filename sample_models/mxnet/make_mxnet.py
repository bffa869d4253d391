"""Make MXNet samples with mxnet 1.9.1 and record what mx.nd.load returns.

    python3.11 -m venv /opt/mxvenv && /opt/mxvenv/bin/pip install mxnet==1.9.1 numpy==1.23.5
    /opt/mxvenv/bin/python sample_models/mxnet/make_mxnet.py

Files: Sockeye-style RNN parameter dicts (seed 002's names, a small model) without and with the `arg:`
prefix in float32 and float16; Gluon save_parameters of a model with a tied embedding, with and without
deduplication; an exported (HybridBlock.export) checkpoint with BatchNorm `aux:` states; an unnamed list; Gluon
save_parameters of a small HybridSequential CNN as the model zoo builds them (blocks named by position: `1.gamma`),
one BatchNorm with scale=False and center=False (as the zoo's ResNet v2 input norm).
manifest.json: for each file the names, shapes and dtypes mx.nd.load returns and the arg/aux element counts.
"""

import json
import os

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
mx.random.seed(0)


def sockeye_params(sv=60, tv=50, e=16, h=16, gates=4):
    """The parameter shapes of seed 002's Sockeye RNN model (2:2 layers, bidirectional first encoder layer)."""
    g = gates
    shapes = {
        "source_embed_weight": (sv, e),
        "target_embed_weight": (tv, e),
        "target_output_bias": (tv,),
        "target_output_weight": (tv, h),
        "decoder_rnn_hidden_bias": (h,),
        "decoder_rnn_hidden_weight": (h, 2 * h),
        "encoder_rnn_l0_h2h_bias": (g * h,),
        "encoder_rnn_l0_h2h_weight": (g * h, h),
        "encoder_rnn_l0_i2h_bias": (g * h,),
        "encoder_rnn_l0_i2h_weight": (g * h, h),
    }
    for i in range(4 if g == 4 else 2):
        shapes[f"decoder_rnn_enc2decinit_{i}_bias"] = (h,)
        shapes[f"decoder_rnn_enc2decinit_{i}_weight"] = (h, h)
    for i, inputs in ((0, e + h), (1, h)):
        shapes.update(
            {
                f"decoder_rnn_l{i}_h2h_bias": (g * h,),
                f"decoder_rnn_l{i}_h2h_weight": (g * h, h),
                f"decoder_rnn_l{i}_i2h_bias": (g * h,),
                f"decoder_rnn_l{i}_i2h_weight": (g * h, inputs),
            }
        )
    for d in ("forward", "reverse"):
        shapes.update(
            {
                f"encoder_birnn_{d}_l0_h2h_bias": (g * h // 2,),
                f"encoder_birnn_{d}_l0_h2h_weight": (g * h // 2, h // 2),
                f"encoder_birnn_{d}_l0_i2h_bias": (g * h // 2,),
                f"encoder_birnn_{d}_l0_i2h_weight": (g * h // 2, e),
            }
        )
    return shapes


def describe(path):
    loaded = mx.nd.load(path)
    items = loaded.items() if isinstance(loaded, dict) else enumerate(loaded)
    tensors = {str(k): [list(v.shape), np.dtype(v.dtype).name] for k, v in items}
    values = loaded.values() if isinstance(loaded, dict) else loaded
    names = list(loaded) if isinstance(loaded, dict) else []
    aux = sum(int(np.prod(v.shape)) for k, v in zip(names, values, strict=False) if k.startswith("aux:"))
    total = sum(int(np.prod(v.shape)) for v in (loaded.values() if isinstance(loaded, dict) else loaded))
    return {"tensors": tensors, "elements": total, "aux_elements": aux, "made_by": "mxnet " + mx.__version__}


class Tied(mx.gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.emb = mx.gluon.nn.Embedding(20, 8)
            self.bn = mx.gluon.nn.BatchNorm()
            self.out = mx.gluon.nn.Dense(20, flatten=False, params=self.emb.collect_params())

    def hybrid_forward(self, F, x):
        return self.out(self.bn(self.emb(x)))


def main():
    manifest = {}
    shapes = sockeye_params()
    arrays = {k: mx.nd.random.uniform(shape=s) for k, s in shapes.items()}
    files = {
        "sockeye_lstm.params": arrays,
        "sockeye_lstm_arg_fp16.params": {f"arg:{k}": v.astype("float16") for k, v in arrays.items()},
        "sockeye_gru.params": {k: mx.nd.random.uniform(shape=s) for k, s in sockeye_params(gates=3).items()},
    }
    for name, data in files.items():
        mx.nd.save(os.path.join(HERE, name), data)
    mx.nd.save(os.path.join(HERE, "unnamed_list.params"), [mx.nd.ones((3, 4)), mx.nd.zeros((5,), dtype="int32")])
    net = Tied()
    net.initialize()
    net.hybridize()
    net(mx.nd.array([[1, 2, 3]]))
    net.save_parameters(os.path.join(HERE, "gluon_tied.params"))
    net.save_parameters(os.path.join(HERE, "gluon_tied_dedup.params"), deduplicate=True)
    net.export(os.path.join(HERE, "exported"), epoch=1)
    manifest["gluon_model_parameters"] = sum(int(np.prod(p.shape)) for p in net.collect_params().values())
    cnn = mx.gluon.nn.HybridSequential()
    cnn.add(mx.gluon.nn.BatchNorm(scale=False, center=False), mx.gluon.nn.Conv2D(8, 3), mx.gluon.nn.BatchNorm(),
            mx.gluon.nn.Activation("relu"), mx.gluon.nn.Conv2D(4, 1), mx.gluon.nn.GlobalAvgPool2D(),
            mx.gluon.nn.Dense(5))  # fmt: skip
    cnn.initialize()
    cnn(mx.nd.zeros((1, 3, 8, 8)))
    cnn.save_parameters(os.path.join(HERE, "gluon_sequential.params"))
    params = cnn.collect_params().values()
    manifest["gluon_sequential_parameters"] = sum(int(np.prod(p.shape)) for p in params)
    manifest["gluon_sequential_trainable"] = sum(int(np.prod(p.shape)) for p in params if p.grad_req != "null")
    for name in sorted(os.listdir(HERE)):
        if name.endswith(".params"):
            manifest[name] = describe(os.path.join(HERE, name))
    with open(os.path.join(HERE, "manifest.json"), "w") as fh:
        json.dump(manifest, fh, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
