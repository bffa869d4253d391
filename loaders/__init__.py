"""Built-in loaders, one module per format. `BUILTIN_LOADERS` is the only thing exported here."""

from __future__ import annotations

from loaders.gguf import GgufLoader
from loaders.keras_h5 import KerasH5Loader
from loaders.keras_zip import KerasZipLoader
from loaders.mxnet_params import MxnetParamsLoader
from loaders.npy import NpyLoader, NpzLoader
from loaders.onnx import OnnxLoader
from loaders.pickle_raw import PickleRawLoader
from loaders.safetensors import SafetensorsIndexLoader, SafetensorsLoader
from loaders.tf_checkpoint import TfCheckpointLoader
from loaders.torch_dcp import TorchDcpLoader
from loaders.torch_legacy import TorchLegacyLoader
from loaders.torch_zip import TorchZipLoader

BUILTIN_LOADERS = (
    SafetensorsLoader,
    SafetensorsIndexLoader,
    NpyLoader,
    NpzLoader,
    TorchZipLoader,
    TorchLegacyLoader,
    KerasH5Loader,
    KerasZipLoader,
    MxnetParamsLoader,
    GgufLoader,
    OnnxLoader,
    TfCheckpointLoader,
    TorchDcpLoader,
    PickleRawLoader,
)
