"""Built-in loaders, one module per format. `BUILTIN_LOADERS` is the only thing exported here.

Every loader is asked for its claim on every file, so every loader module is imported on every run; the
private helper modules that only reading needs (the pickle walker, the HDF5 and SSTable readers, the zip
reader...) are made lazy below: importing them binds a module whose code runs on first attribute use, so a
safetensors run never executes the pickle walker's module (issue 16: about 15 ms of a 140 ms run).
"""

from __future__ import annotations

import sys
from importlib.util import LazyLoader, find_spec, module_from_spec

# Helpers imported as `from loaders import _x` by the format modules and used only inside their functions.
LAZY_HELPERS = (
    "_hdf5",
    "_hdf5_structures",
    "_objects",
    "_pickle",
    "_sstable",
    "_tf_kinds",
    "_tf_proto",
    "_torch",
    "_torchscript",
    "_zip",
)


def _lazy(name: str) -> None:
    """Put a module in sys.modules whose body runs when one of its attributes is first read."""
    if name in sys.modules:
        return
    spec = find_spec(name)
    if spec is None or spec.loader is None:  # pragma: no cover - a broken install: let the real import fail
        return
    spec.loader = LazyLoader(spec.loader)
    module = module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    # `from loaders import _x` then finds the attribute on the package and touches nothing of the module (the
    # import system's own look-up in sys.modules would read its __spec__, which runs it)
    setattr(sys.modules[__name__], name.rpartition(".")[2], module)


for _helper in LAZY_HELPERS:
    _lazy(f"{__name__}.{_helper}")

from loaders.gguf import GgufLoader  # noqa: E402  (after the lazy helpers are in place)
from loaders.keras_h5 import KerasH5Loader  # noqa: E402
from loaders.keras_zip import KerasZipLoader  # noqa: E402
from loaders.mxnet_params import MxnetParamsLoader  # noqa: E402
from loaders.npy import NpyLoader, NpzLoader  # noqa: E402
from loaders.onnx import OnnxLoader  # noqa: E402
from loaders.pickle_raw import PickleRawLoader  # noqa: E402
from loaders.safetensors import SafetensorsIndexLoader, SafetensorsLoader  # noqa: E402
from loaders.tf_checkpoint import TfCheckpointLoader  # noqa: E402
from loaders.torch_dcp import TorchDcpLoader  # noqa: E402
from loaders.torch_legacy import TorchLegacyLoader  # noqa: E402
from loaders.torch_zip import TorchZipLoader  # noqa: E402

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
