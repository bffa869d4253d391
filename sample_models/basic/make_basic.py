"""Make the NumPy and safetensors samples with the real libraries (numpy, safetensors), and record
what those libraries report for each file in manifest.json.

    python sample_models/basic/make_basic.py

Arrays are seeded random values so the compressed file really is compressed data.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import safetensors
from safetensors import safe_open
from safetensors.numpy import save_file

HERE = Path(__file__).resolve().parent

# A small CNN for 20x20 single-channel images in PyTorch's layout: conv(1->8, 3x3), conv(8->16, 3x3),
# two 2x2 poolings -> 16 x 3 x 3, dense 144 -> 32, dense 32 -> 10.
CNN_SHAPES = {
    "conv1.weight": (8, 1, 3, 3),
    "conv1.bias": (8,),
    "conv2.weight": (16, 8, 3, 3),
    "conv2.bias": (16,),
    "fc1.weight": (32, 144),
    "fc1.bias": (32,),
    "fc2.weight": (10, 32),
    "fc2.bias": (10,),
}
# A two-layer MLP in half precision with an int64 step counter.
MLP_SHAPES = {"hidden.weight": (64, 32), "hidden.bias": (64,), "out.weight": (4, 64), "out.bias": (4,)}


def arrays(shapes: dict[str, tuple[int, ...]], dtype: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {k: rng.standard_normal(s).astype(dtype) for k, s in shapes.items()}


def main() -> None:
    manifest = {}
    cnn = arrays(CNN_SHAPES, "float32")
    np.savez(HERE / "cnn_stored.npz", **cnn)
    np.savez_compressed(HERE / "cnn_compressed.npz", **cnn)
    for name in ("cnn_stored.npz", "cnn_compressed.npz"):
        with np.load(HERE / name) as z:
            tensors = {k: [list(z[k].shape), str(z[k].dtype)] for k in z.files}
            manifest[name] = {
                "made_by": f"numpy {np.__version__} np.{'savez' if 'stored' in name else 'savez_compressed'}",
                "tensors": tensors,
                "n_parameters": int(sum(z[k].size for k in z.files)),
            }
    mlp = arrays(MLP_SHAPES, "float16")
    mlp["step"] = np.array(1000, dtype=np.int64)
    save_file(mlp, HERE / "mlp_fp16.safetensors", metadata={"format": "np", "note": "sample"})
    with safe_open(HERE / "mlp_fp16.safetensors", "np") as f:
        tensors = {k: [list(f.get_slice(k).get_shape()), f.get_slice(k).get_dtype()] for k in f.keys()}
        n = sum(int(np.prod(f.get_slice(k).get_shape(), dtype=np.int64)) for k in f.keys())
        manifest["mlp_fp16.safetensors"] = {
            "made_by": f"safetensors {safetensors.__version__} safetensors.numpy.save_file",
            "tensors": tensors,
            "metadata": f.metadata(),
            "n_parameters": n,
        }
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
