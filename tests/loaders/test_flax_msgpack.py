"""Flax / JAX msgpack checkpoints: the samples (transformers 4.57's `save_pretrained` of a tiny BERT and ResNet, a
flax.linen TrainState) against their manifest, and files flax writes in the test (`flax.serialization.to_bytes`,
`msgpack_serialize` with chunked arrays) against flax's own restore of the same bytes and jax's count of the tree;
hostile msgpack made by hand."""

from __future__ import annotations

import importlib.util
import json
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from inspector import load
from inspector.cli import main
from inspector.diff import diff, match
from inspector.errors import FormatError, LimitExceededError, TruncatedFileError, UnknownFormatError
from inspector.records import Checkpoint, RegionKind, Severity, TensorKind
from inspector.report import analyse
from inspector.tensor_data import TensorSource
from loaders.base import check_invariants
from loaders.flax_msgpack import CHUNKED
from tests.conftest import SAMPLES

FLAX = SAMPLES / "flax"
MANIFEST = json.loads((FLAX / "manifest.json").read_text())
SAMPLE_FILES = [name for name in MANIFEST if not name.startswith("_")]
CANONICAL = {"float32": "F32", "float16": "F16", "bfloat16": "BF16", "int32": "I32", "int64": "I64", "int8": "I8",
             "uint8": "U8", "bool": "BOOL"}  # fmt: skip


def elements(ckpt: Checkpoint, kind: TensorKind) -> int:
    return sum(t.n_elements for t in ckpt.tensors if t.kind is kind)


def warnings_of(path: Path) -> list[str]:
    report = analyse(load(path))
    return [f.message for f in report.findings if f.severity >= Severity.WARNING]


@pytest.mark.parametrize("name", SAMPLE_FILES)
def test_samples_match_what_jax_counts(name: str) -> None:
    expected = MANIFEST[name]
    ckpt = load(FLAX / name)
    check_invariants(ckpt)
    assert ckpt.format == "flax-msgpack" and ckpt.framework == "flax"
    assert elements(ckpt, TensorKind.PARAMETER) == expected["params"]
    assert elements(ckpt, TensorKind.BUFFER) == expected.get("batch_stats", 0)
    assert elements(ckpt, TensorKind.OPTIMIZER) == expected.get("opt_state", 0)
    found = {t.name: [list(t.shape), t.dtype] for t in ckpt.tensors}
    assert found == {k: [shape, CANONICAL[dtype]] for k, (shape, dtype) in expected["arrays"].items()}
    report = analyse(ckpt)
    assert report.expectation is not None and report.expectation.matches
    assert not [f for f in report.findings if f.severity >= Severity.WARNING]


def test_sample_roles_and_layers() -> None:
    """transformers' Flax BERT: kernels (in, out) read as Dense layers (an attention projection's role by its layer's
    name, as Keras's), tables as embeddings, scale and bias as norms."""
    ckpt = load(FLAX / "bert_tiny" / "flax_model.msgpack")
    roles = {r.name: (r.role, r.layer) for r in analyse(ckpt).roles}
    layer = "bert/encoder/layer/0/attention/self/query"
    assert roles[f"{layer}/kernel"] == roles[f"{layer}/bias"] == ("attention_query", layer)
    dense = "bert/encoder/layer/0/intermediate/dense"
    assert roles[f"{dense}/kernel"] == ("dense", dense) and roles[f"{dense}/bias"] == ("dense", dense)
    assert roles["bert/embeddings/word_embeddings/embedding"][0] == "embedding"
    assert roles["bert/embeddings/LayerNorm/scale"][0] == roles["bert/embeddings/LayerNorm/bias"][0] == "norm"
    specs = {x.layer: x.kind for x in analyse(ckpt).expectation.layers}  # type: ignore[union-attr]
    assert specs[layer] == "Dense" and specs["bert/embeddings/LayerNorm"] == "LayerNorm"


def test_transformers_llama_gpt2_and_vit_samples() -> None:
    """transformers' Flax Llama, GPT-2 and ViT (each with its config.json): Llama's RMSNorms hold a `weight` (a norm,
    was unmatched), GPT-2's FlaxConv1D kernels are (out, in) with a bias of out (Dense layers, were `Tensors`), the
    embedding tables are Embedding layers (were plain `Tensor`s), and ViT's config names a family whose tables read
    PyTorch's names, of which the Flax tree spells only `embeddings/cls_token` alike: no family is looked for in a Flax
    file (the vit family found one module of 20 and gave a COUNT_MISMATCH on a correct file)."""
    kinds = {}
    for name in ("llama_tiny", "gpt2_tiny", "vit_tiny"):
        report = analyse(load(FLAX / name / "flax_model.msgpack"))
        assert report.expectation is not None and report.expectation.source == "inferred"
        assert report.expectation.matches and not [f for f in report.findings if f.severity >= Severity.WARNING]
        assert not [r.name for r in report.roles if r.role == "unmatched"]
        kinds |= {f"{name}:{x.layer}": x.kind for x in report.expectation.layers}
        roles = {r.name: r.role for r in report.roles}
        if name == "llama_tiny":
            assert {roles[f"model/layers/{i}/{n}/weight"] for i in (0, 1) for n in ("input_layernorm",
                    "post_attention_layernorm")} | {roles["model/norm/weight"]} == {"norm"}  # fmt: skip
    assert kinds["llama_tiny:model/embed_tokens"] == kinds["gpt2_tiny:transformer/wte"] == "Embedding"
    assert kinds["llama_tiny:model/layers/0/input_layernorm"] == "RMSNorm"
    assert kinds["gpt2_tiny:transformer/h/0/attn/c_attn"] == kinds["gpt2_tiny:transformer/h/0/mlp/c_fc"] == "Dense"
    assert kinds["vit_tiny:embeddings/patch_embeddings/projection"] == "Conv"


def test_sample_regions_tile_structure_headers_and_data() -> None:
    path = FLAX / "cnn_state.msgpack"
    ckpt = load(path)
    kinds = {r.kind for r in ckpt.regions}
    assert kinds == {RegionKind.METADATA, RegionKind.HEADER, RegionKind.TENSOR_DATA}
    data = sum(r.length for r in ckpt.regions if r.kind is RegionKind.TENSOR_DATA)
    assert data == sum(t.nbytes for t in ckpt.tensors)
    assert sum(r.length for r in ckpt.regions) == path.stat().st_size
    assert ckpt.attributes["flax.scalars"] == "1 (step)"


# -- files flax writes in the test (in its own process: jax, once imported, warns at every os.fork) -------------------


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The files `flax_writer.py` writes with flax, and what jax counts of them."""
    if importlib.util.find_spec("flax") is None:
        pytest.skip("flax not installed")
    out = tmp_path_factory.mktemp("flax")
    script = Path(__file__).with_name("flax_writer.py")
    proc = subprocess.run([sys.executable, str(script), str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out, json.loads((out / "facts.json").read_text())


def _restored(folder: Path, name: str) -> dict[str, np.ndarray]:
    """flax's own restore of the file (its array leaves by '/'-joined path; bfloat16 as raw 16 bits)."""
    with np.load(folder / f"{name}.npz") as arrays:
        return {k: arrays[k] for k in arrays.files}


@pytest.mark.reference
def test_variables_offsets_and_counts_against_flax(written: tuple[Path, dict[str, Any]]) -> None:
    folder, facts = written
    path = folder / "vars.msgpack"
    ckpt = load(path)
    check_invariants(ckpt)
    assert elements(ckpt, TensorKind.PARAMETER) == facts["vars"]["params"]
    assert elements(ckpt, TensorKind.BUFFER) == facts["vars"]["batch_stats"]
    raw, restored = path.read_bytes(), _restored(folder, "vars")
    assert {t.name for t in ckpt.tensors} == set(restored)
    for t in ckpt.tensors:
        array = restored[t.name]
        assert t.offset is not None and raw[t.offset : t.offset + t.nbytes] == array.tobytes()
        assert (t.shape, t.dtype) == (array.shape, CANONICAL[facts["vars"]["dtypes"][t.name]])
    norm = {t.param: t for t in ckpt.tensors if t.layer == "BatchNorm_0"}
    assert {p: t.kind for p, t in norm.items()} == {
        "scale": TensorKind.PARAMETER, "bias": TensorKind.PARAMETER, "mean": TensorKind.BUFFER, "var": TensorKind.BUFFER
    }  # fmt: skip
    report = analyse(ckpt)
    assert report.expectation is not None and report.expectation.matches
    kinds = {x.layer: x.kind for x in report.expectation.layers}
    assert kinds == {"Conv_0": "Conv", "BatchNorm_0": "BatchNorm", "Dense_0": "Dense", "LayerNorm_0": "LayerNorm"}
    assert not warnings_of(path)


@pytest.mark.reference
def test_train_state_optimizer_state(written: tuple[Path, dict[str, Any]]) -> None:
    folder, facts = written
    path = folder / "state.msgpack"
    ckpt = load(path)
    assert elements(ckpt, TensorKind.PARAMETER) == facts["state"]["params"]
    assert elements(ckpt, TensorKind.OPTIMIZER) == facts["state"]["opt_state"]
    assert {t.section for t in ckpt.tensors if t.kind is TensorKind.OPTIMIZER} == {"opt_state"}
    assert ckpt.attributes["flax.collections"] == "opt_state, params" and ckpt.attributes["flax.scalars"] == "1 (step)"
    assert not warnings_of(path)


@pytest.mark.reference
def test_chunked_arrays_scalars_and_dtypes(written: tuple[Path, dict[str, Any]]) -> None:
    """flax splits an array over MAX_CHUNK_SIZE bytes into flat pieces (made small, flax's own code writing them): each
    piece a tensor at its bytes; numpy scalars, bfloat16 and int8 arrays; Python scalars are no tensors."""
    folder, facts = written
    path = folder / "chunked.msgpack"
    ckpt = load(path)
    check_invariants(ckpt)
    table = _restored(folder, "chunked")["params/emb/embedding"]
    pieces = [t for t in ckpt.tensors if t.name.startswith("params/emb/embedding[")]
    assert len(pieces) == 7 and sum(t.n_elements for t in pieces) == table.size
    raw = path.read_bytes()
    assert b"".join(raw[t.offset : t.offset + t.nbytes] for t in pieces) == table.tobytes()  # type: ignore[operator]
    assert elements(ckpt, TensorKind.PARAMETER) == facts["chunked"]["params"]
    dtypes = {t.name: t.dtype for t in ckpt.tensors}
    assert dtypes["params/q/kernel"] == "BF16" and dtypes["params/i/bias"] == "I8" and dtypes["step"] == "I64"
    assert facts["chunked"]["dtypes"]["params/q/kernel"] == "bfloat16"
    step = next(t for t in ckpt.tensors if t.name == "step")
    assert step.shape == () and step.kind is TensorKind.OTHER
    assert ckpt.attributes["flax.chunked_arrays"] == "1"
    assert ckpt.attributes["flax.scalars"].startswith("5 (")
    with TensorSource(ckpt) as source:
        values = np.concatenate([np.concatenate(list(source.blocks(t))) for t in pieces])
    assert np.array_equal(values, table.reshape(-1))


@pytest.mark.reference
def test_diff_pairs_flax_with_torch_layout_safetensors(written: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    """The same weights in PyTorch's names and layouts (kernels transposed as torch stores them), safetensors: every
    tensor pairs by its normalised name, the kernels as the same tensor transposed."""
    from safetensors.numpy import save_file

    folder, _ = written
    torch_names = {"kernel": "weight", "scale": "weight", "mean": "running_mean", "var": "running_var"}
    state = {}
    for name, array in _restored(folder, "vars").items():
        _, module, leaf = name.split("/")
        if leaf == "kernel":
            array = array.transpose(3, 2, 0, 1) if array.ndim == 4 else array.T
        state[f"{module}.{torch_names.get(leaf, leaf)}"] = np.ascontiguousarray(array)
    save_file(state, tmp_path / "torch.safetensors")
    a, b = load(folder / "vars.msgpack"), load(tmp_path / "torch.safetensors")
    d = diff(a, b, match(a, b))
    assert len(d.pairs) == len(state) and {p.how for p in d.pairs} == {"normalised"}
    assert d.verdict == "equivalent"
    assert sorted(x.a for x in d.differences if x.kind == "transposed") == [
        "params/Conv_0/kernel", "params/Dense_0/kernel"
    ]  # fmt: skip


@pytest.mark.reference
def test_trailing_bytes_are_a_finding(written: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    path = tmp_path / "vars.msgpack"
    path.write_bytes((written[0] / "vars.msgpack").read_bytes() + b"\0" * 10)
    ckpt = load(path)
    check_invariants(ckpt)
    assert [f.code for f in ckpt.findings] == ["TRAILING_BYTES"]


# -- hostile msgpack, made by hand ----------------------------------------------------------------------------------


def _str(text: str) -> bytes:
    data = text.encode()
    return bytes([0xA0 | len(data)]) + data


def _array(shape: tuple[int, ...], dtype: str, data: bytes, declared: int | None = None) -> bytes:
    """flax's ext 1: [shape, dtype name, bin]; `declared` lies about the bin's length."""
    dims = b"".join(bytes([d]) if d < 0x80 else b"\xcd" + struct.pack(">H", d) for d in shape)  # fixint, uint 16
    payload = bytes([0x93, 0x90 | len(shape)]) + dims + _str(dtype)
    payload += b"\xc6" + struct.pack(">I", len(data) if declared is None else declared) + data
    return b"\xc9" + struct.pack(">I", len(payload)) + b"\x01" + payload


def _write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "x.msgpack"
    path.write_bytes(data)
    return path


def test_hand_made_tree_reads(tmp_path: Path) -> None:
    data = b"\x81" + _str("w") + _array((2, 300), "float32", bytes(2400))
    ckpt = load(_write(tmp_path, data))
    assert [(t.name, t.shape, t.dtype, t.offset) for t in ckpt.tensors] == [("w", (2, 300), "F32", len(data) - 2400)]
    # the same array in another msgpack encoding of its header (shape as an array 16, dims as uint 16, dtype as a str 8,
    # data as a bin 8): read value by value, to the same tensor
    payload = b"\x93\xdc\x00\x02\xcd\x00\x02\xcd\x00\x03\xd9\x07float32\xc4\x18" + bytes(24)
    data = b"\x81" + _str("w") + b"\xc7" + bytes([len(payload)]) + b"\x01" + payload
    ckpt = load(_write(tmp_path, data))
    assert [(t.name, t.shape, t.dtype, t.offset) for t in ckpt.tensors] == [("w", (2, 3), "F32", len(data) - 24)]


GOOD = _str("w") + _array((1,), "int8", b"\0")  # a first array: the file is claimed, the rest then read


@pytest.mark.parametrize(
    ("rest", "error"),
    [
        # a bin longer than the ext holding it, a bin of 2^32 - 1 bytes, data not shape x itemsize
        (_str("a") + _array((2,), "float32", bytes(8), declared=9), FormatError),
        (_str("a") + _array((2,), "float32", bytes(8), declared=0xFFFFFFFF), FormatError),
        (_str("a") + _array((3,), "float32", bytes(8)), FormatError),
        # a map declaring 2^32 - 1 entries, a key of 2^32 - 1 bytes
        (_str("m") + b"\xdf\xff\xff\xff\xff", FormatError),
        (b"\xdb\xff\xff\xff\xff", TruncatedFileError),
        # maps nested 100 deep
        (_str("d") + (b"\x81" + _str("k")) * 100 + b"\xc0", LimitExceededError),
        # a byte no msgpack type has; a chunked array whose pieces do not make its shape
        (_str("x") + b"\xc1", FormatError),
        (_str("c") + b"\x83" + _str(CHUNKED) + b"\xc3" + _str("shape") + b"\x81" + _str("0") + b"\x05"
         + _str("chunks") + b"\x81" + _str("0") + _array((4,), "int8", bytes(4)), FormatError),
    ],
)  # fmt: skip
def test_hostile_trees_are_refused(tmp_path: Path, rest: bytes, error: type[Exception]) -> None:
    path = _write(tmp_path, b"\x82" + GOOD + rest)
    with pytest.raises(error) as info:
        load(path)
    assert info.value.format == "flax-msgpack"  # type: ignore[attr-defined]


def test_a_msgpack_map_without_arrays_is_not_claimed(tmp_path: Path) -> None:
    with pytest.raises(UnknownFormatError):
        load(_write(tmp_path, b"\x82" + _str("a") + b"\x01" + _str("b") + _str("text")))


def test_cli_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = b"\x81" + _str("w") + _array((4,), "float32", bytes(16))
    path = _write(tmp_path, data[:-3])  # truncated inside the array's data
    assert main([str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and "Traceback" not in err[0]
