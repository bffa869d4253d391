"""GGUF: files written by gguf-py's GGUFWriter, compared with gguf-py's GGUFReader and transformers' GGUF reader."""

from __future__ import annotations

import ast
import json
import re
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from inspector import load
from inspector.errors import FormatError, InspectorError, LimitExceededError, UnsupportedVariantError
from inspector.probe import Probe
from inspector.records import RegionKind, TensorKind
from loaders.base import check_invariants
from loaders.gguf import GgufLoader, hf_name
from tests.conftest import fixture_path

gguf = pytest.importorskip("gguf")
Q = gguf.GGMLQuantizationType
NUMPY_TYPES = {Q.F32: np.float32, Q.F16: np.float16, Q.F64: np.float64, Q.I8: np.int8, Q.I16: np.int16,
               Q.I32: np.int32, Q.I64: np.int64}  # fmt: skip


def _write(path: Path, tensors: dict[str, tuple[Any, Any]], kv: dict[str, Any] | None = None, **writer: Any) -> Path:
    """A GGUF file from gguf-py: tensors as name -> (numpy array, raw ggml type or None)."""
    w = gguf.GGUFWriter(str(path), "llama", **writer)
    for key, value in (kv or {}).items():
        if key == "alignment":
            w.add_custom_alignment(value)
        elif isinstance(value, tuple):  # (value, GGUFValueType[, sub_type])
            w.add_key_value(key, *value)
        else:
            w.add_key_value(key, value, gguf.GGUFValueType.get_type(value))
    for name, (array, raw) in tensors.items():
        w.add_tensor(name, array, raw_dtype=raw)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def _all_types() -> dict[str, tuple[Any, Any]]:
    """One tensor of every ggml type gguf-py knows: quantized by gguf.quants where it can, else block bytes."""
    rng = np.random.default_rng(0)
    out: dict[str, tuple[Any, Any]] = {}
    for qtype in Q:
        block, size = gguf.GGML_QUANT_SIZES[qtype]
        name = f"t.{qtype.name.lower()}"
        if qtype in NUMPY_TYPES:
            out[name] = (rng.standard_normal((3, 5)).astype(NUMPY_TYPES[qtype]), None)
            continue
        data = rng.standard_normal((2, 2 * block)).astype(np.float32)
        try:
            out[name] = (gguf.quants.quantize(data, qtype), qtype)
        except (NotImplementedError, gguf.quants.QuantError):
            out[name] = (rng.integers(0, 256, (2, 2 * size), dtype=np.uint8), qtype)
    return out


def _compare_with_reader(path: Path) -> Any:
    """Every tensor's name, shape, dtype, offset and bytes equal GGUFReader's; regions tile the file."""
    reader = gguf.GGUFReader(str(path))
    ckpt = load(path)
    check_invariants(ckpt)
    ours = {t.name: t for t in ckpt.tensors}
    assert list(ours) == [t.name for t in reader.tensors]
    for ref in reader.tensors:
        t = ours[ref.name]
        assert t.shape == tuple(int(d) for d in reversed(ref.shape.tolist()))
        assert (t.dtype, t.offset, t.nbytes, t.n_elements) == (ref.tensor_type.name, ref.data_offset, ref.n_bytes,
                                                                ref.n_elements)  # fmt: skip
    data = sum(r.length for r in ckpt.regions if r.kind is RegionKind.TENSOR_DATA)
    assert data == sum(int(t.n_bytes) for t in reader.tensors)
    assert not [r for r in ckpt.regions if r.kind is RegionKind.UNKNOWN]
    assert ckpt.attributes["gguf.data_start"] == str(reader.data_offset)
    return ckpt


def test_fixture_matches_the_reference_walker() -> None:
    text = fixture_path("tool-output/gguf.txt").read_text()
    ckpt = load(fixture_path("gguf/tiny.gguf"))
    check_invariants(ckpt)
    rows = [(ast.literal_eval(m), int(o)) for m, o in re.findall(r"(\{'name'.*?\}) abs_offset (\d+)", text)]
    assert [(t.name, list(t.shape), t.offset, t.nbytes) for t in ckpt.tensors] == [
        (r[0]["name"], r[0]["numpy_shape"], r[1], r[0]["nbytes"]) for r in rows
    ]
    account = ast.literal_eval(re.search(r"ACCOUNT (\{.*\})", text).group(1))  # type: ignore[union-attr]
    by = {k: sum(r.length for r in ckpt.regions if r.kind is k) for k in RegionKind}
    assert by[RegionKind.TENSOR_DATA] == account["tensor_data"]
    assert by[RegionKind.PADDING] == account["pad_before_data"] + account["inter_tensor_and_tail_padding"]
    assert by[RegionKind.METADATA] == account["kv_section"]
    assert by[RegionKind.HEADER] == account["fixed_header"] + account["tensor_infos"]
    assert [t.dtype for t in ckpt.tensors] == ["F32", "F16", "Q8_0"]
    assert ckpt.attributes["gguf.tiny.list"] == "[1, 2, 3]" and ckpt.config == {"source": "gguf", "model_type": "llama"}


def test_every_ggml_type_equals_gguf_reader(tmp_path: Path) -> None:
    tensors = _all_types()
    ckpt = _compare_with_reader(_write(tmp_path / "types.gguf", tensors))
    assert len(ckpt.tensors) == len(Q)
    q4k = next(t for t in ckpt.tensors if t.dtype == "Q4_K")
    assert q4k.shape == (2, 512) and q4k.nbytes == 2 * 2 * 144
    assert "4.5 bits per weight" in q4k.notes[0]
    assert "Q6_K x1 (6.5625 bpw)" in ckpt.attributes["gguf.types"]


@pytest.mark.parametrize("endianess", ["LITTLE", "BIG"])
def test_metadata_values_of_every_type(tmp_path: Path, endianess: str) -> None:
    vt = gguf.GGUFValueType
    kv = {
        "k.u8": (7, vt.UINT8), "k.i8": (-7, vt.INT8), "k.u16": (700, vt.UINT16), "k.i16": (-700, vt.INT16),
        "k.u32": (70000, vt.UINT32), "k.i32": (-70000, vt.INT32), "k.f32": (0.5, vt.FLOAT32), "k.bool": (True, vt.BOOL),
        "k.str": ("hello", vt.STRING), "k.u64": (2**40, vt.UINT64), "k.i64": (-(2**40), vt.INT64),
        "k.f64": (0.25, vt.FLOAT64), "k.short": ([1, 2, 3], vt.ARRAY, vt.INT32),
        "k.long": (list(range(1000)), vt.ARRAY, vt.INT32), "k.words": ([f"w{i}" for i in range(500)], vt.ARRAY),
        "k.nested": ([[1, 2], [3]], vt.ARRAY), "k.long_string": ("x" * 5000, vt.STRING), "alignment": 64,
    }  # fmt: skip
    tensors = {"a": (np.ones((4, 3), dtype=np.float32), None), "b": (np.ones(5, dtype=np.float16), None)}
    path = _write(tmp_path / "kv.gguf", tensors, kv, endianess=gguf.GGUFEndian[endianess])
    ckpt = _compare_with_reader(path)
    fields = gguf.GGUFReader(str(path)).fields
    attrs = ckpt.attributes
    for key in ("k.u8", "k.i8", "k.u16", "k.i16", "k.u32", "k.i32", "k.f32", "k.bool", "k.str", "k.u64", "k.i64",
                "k.f64", "k.short"):  # fmt: skip
        assert attrs[f"gguf.{key}"] == str(fields[key].contents()), key
    assert attrs["gguf.k.long"] == "array of 1,000 i32" and attrs["gguf.k.words"] == "array of 500 string"
    assert attrs["gguf.k.nested"] == "array of 2 array" and attrs["gguf.k.long_string"] == "x" * 256 + "..."
    assert attrs["gguf.byte_order"] == endianess.lower() and attrs["gguf.alignment"] == "64"
    assert [t.offset % 64 for t in ckpt.tensors] == [0, 0]
    labels = [r.label for r in ckpt.regions if r.kind is RegionKind.METADATA]
    assert "k.words (array of 500 string)" in labels


def _tiny_hf(arch: str, tied: bool) -> Any:
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    common = dict(vocab_size=96, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=tied)  # fmt: skip
    if arch == "gpt2":
        torch.manual_seed(0)
        config = transformers.GPT2Config(vocab_size=96, n_embd=64, n_layer=2, n_head=4, n_positions=256,
                                         bos_token_id=0, eos_token_id=0)  # fmt: skip
        return transformers.GPT2LMHeadModel(config)
    prefix = {"llama": "Llama", "qwen2": "Qwen2", "qwen3": "Qwen3", "gemma2": "Gemma2", "phi3": "Phi3"}[arch]
    config_cls, model_cls = getattr(transformers, f"{prefix}Config"), getattr(transformers, f"{prefix}ForCausalLM")
    extra = {"llama": {}, "phi3": {"pad_token_id": 0, "eos_token_id": 0}}.get(arch, {"head_dim": 16})
    torch.manual_seed(0)
    return model_cls(config_cls(**common, **extra))


def _llama_gguf(path: Path, model: Any, qtype: Any = Q.Q8_0) -> Path:
    """A llama GGUF written the way convert_hf_to_gguf does: gguf-py's name map and hyperparameter keys."""
    cfg = model.config
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, cfg.num_hidden_layers)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_rope_freq_base(10000.0)
    w.add_tokenizer_model("llama")
    w.add_token_list([f"tok{i}" for i in range(cfg.vocab_size)])  # no llama.vocab_size: taken from the tokens
    for key, value in model.state_dict().items():
        if cfg.tie_word_embeddings and key == "lm_head.weight":
            continue  # convert_hf_to_gguf leaves a tied output out; llama.cpp reuses token_embd
        array = value.numpy()
        if array.ndim == 2:
            w.add_tensor(names.get_name(key, try_suffixes=(".weight", ".bias")), gguf.quants.quantize(array, qtype),
                         raw_dtype=qtype)  # fmt: skip
        else:
            w.add_tensor(names.get_name(key, try_suffixes=(".weight", ".bias")), array)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.mark.parametrize("tied", [False, True])
def test_llama_config_and_names_match_transformers(tmp_path: Path, tied: bool) -> None:
    model = _tiny_hf("llama", tied)
    path = _llama_gguf(tmp_path / "llama.gguf", model)
    ckpt = _compare_with_reader(path)
    loader = pytest.importorskip("transformers.modeling_gguf_pytorch_utils")
    reference = loader.load_gguf_checkpoint(str(path))["config"]
    assert ckpt.config is not None and ckpt.config["source"] == "gguf"
    shared = set(reference) - {"tie_word_embeddings"}
    assert {k: ckpt.config[k] for k in shared} == {k: reference[k] for k in shared}
    assert ckpt.config["vocab_size"] == model.config.vocab_size
    assert ckpt.config["tie_word_embeddings"] is tied
    # every GGUF tensor maps back to the state-dict key it came from; counts agree with the framework's
    stored = {hf_name(t.name) for t in ckpt.tensors}
    assert stored == set(model.state_dict()) - ({"lm_head.weight"} if tied else set())
    assert ckpt.n_parameters == model.num_parameters()
    assert ckpt.attributes["gguf.tokenizer.ggml.tokens"] == "array of 96 string"
    assert ckpt.attributes["gguf.types"] == f"Q8_0 x{15 if tied else 16} (8.5 bpw), F32 x5 (32 bpw)"


@pytest.mark.parametrize(
    ("arch", "model_arch"),
    [("qwen2", "QWEN2"), ("qwen3", "QWEN3"), ("gemma2", "GEMMA2"), ("phi3", "PHI3"), ("gpt2", "GPT2")],
)
def test_hf_name_inverts_gguf_py_mapping(arch: str, model_arch: str) -> None:
    model = _tiny_hf(arch, tied=True)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH[model_arch], model.config.num_hidden_layers)
    for key in model.state_dict():
        if key == "lm_head.weight":
            continue  # tied: not written (gemma2 has no output tensor in gguf-py's table)
        gguf_name = names.get_name(key, try_suffixes=(".weight", ".bias"))
        assert gguf_name is not None, key
        assert hf_name(gguf_name, arch) == key, (gguf_name, key)
    assert hf_name("rope_freqs.weight") is None
    # stacked experts: the name of the families' "-stacked" layouts (transformers 5 holds them fused, no one key)
    assert hf_name("blk.0.ffn_up_exps.weight") == "model.layers.0.mlp.experts.up_proj.weight"
    assert hf_name("not.a.gguf.name") is None


def test_only_headers_are_read(tmp_path: Path) -> None:
    big = np.zeros((1024, 1024), dtype=np.float32)  # 4 MiB of data after a small header
    path = _write(tmp_path / "big.gguf", {"w": (big, None), "v": (big[:1], None)}, {"k.words": ["w"] * 20_000})
    with Probe(path) as probe:
        ckpt = GgufLoader().load(probe)
        header = int(ckpt.attributes["gguf.data_start"])
        assert probe.bytes_read < header + 70_000 < probe.size // 10


def test_version_1_layout(tmp_path: Path) -> None:
    """v1 (llama.cpp before Oct 2023): u32 counts, string lengths and dimensions. gguf-py cannot read it, so the
    file is built here from llama.cpp's v1 reader (gguf_fread_str_v1 and the version == 1 branches)."""

    def s(text: str) -> bytes:
        return struct.pack("<I", len(text)) + text.encode()

    head = b"GGUF" + struct.pack("<III", 1, 1, 2)
    kv = s("general.architecture") + struct.pack("<I", 8) + s("llama")
    kv += s("general.list") + struct.pack("<III", 9, 4, 2) + struct.pack("<II", 5, 6)
    info = s("w") + struct.pack("<III", 2, 3, 2) + struct.pack("<IQ", 0, 0)
    body = head + kv + info
    data_start = -(-len(body) // 32) * 32
    blob = body.ljust(data_start, b"\0") + np.arange(6, dtype=np.float32).tobytes() + b"\0" * 8
    path = tmp_path / "v1.gguf"
    path.write_bytes(blob)
    ckpt = load(path)
    check_invariants(ckpt)
    (t,) = ckpt.tensors
    assert (t.name, t.shape, t.dtype, t.offset, t.nbytes) == ("w", (2, 3), "F32", data_start, 24)
    assert ckpt.attributes["gguf.version"] == "1" and ckpt.attributes["gguf.general.list"] == "[5, 6]"


@pytest.fixture
def small(tmp_path: Path) -> bytes:
    tensors = {"a": (np.ones((2, 32), dtype=np.float32), None),
               "q": (gguf.quants.quantize(np.ones((2, 32), dtype=np.float32), Q.Q4_0), Q.Q4_0)}  # fmt: skip
    return _write(tmp_path / "small.gguf", tensors, {"k.words": ["a", "b", "c"]}).read_bytes()


def test_truncated_anywhere_is_one_line_error(tmp_path: Path, small: bytes) -> None:
    for cut in range(4, len(small) - 1, 7):
        path = tmp_path / "cut.gguf"
        path.write_bytes(small[:cut])
        try:
            ckpt = load(path)
        except FormatError as exc:
            assert str(path) in str(exc) and "\n" not in str(exc)
            continue
        # a cut inside the tail padding leaves every tensor whole: a report, tiled
        assert cut >= max(t.offset + t.nbytes for t in ckpt.tensors if t.offset is not None)
        check_invariants(ckpt)


def _patched(small: bytes, at: int, fmt: str, value: int) -> bytes:
    b = bytearray(small)
    struct.pack_into(fmt, b, at, value)
    return bytes(b)


@pytest.mark.parametrize(
    ("at", "fmt", "value", "error", "message"),
    [
        (4, "<I", 4, UnsupportedVariantError, "version 4"),
        (8, "<Q", 2**62, LimitExceededError, "tensors"),
        (16, "<Q", 2**40, LimitExceededError, "keys"),
        (24, "<Q", 2**50, LimitExceededError, "key is 1,125,899,906,842,624 bytes long"),
    ],
)
def test_corrupt_header_fields(
    tmp_path: Path, small: bytes, at: int, fmt: str, value: int, error: type[Exception], message: str
) -> None:
    path = tmp_path / "bad.gguf"
    path.write_bytes(_patched(small, at, fmt, value))
    with pytest.raises(error, match=message) as info:
        load(path)
    assert str(path) in str(info.value)


def test_unknown_type_duplicate_names_and_bad_alignment(tmp_path: Path) -> None:
    a = np.ones(4, dtype=np.float32)
    blob = _write(tmp_path / "x.gguf", {"a": (a, None), "b": (a, None)}).read_bytes()
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(blob.replace(b"\x01\x00\x00\x00\x00\x00\x00\x00b", b"\x01\x00\x00\x00\x00\x00\x00\x00a"))
    with pytest.raises(FormatError, match="duplicate tensor name 'a'"):
        load(bad)
    info = blob.index(b"\x01\x00\x00\x00\x00\x00\x00\x00a") + 9  # name 'a', then n_dims, ne[0], type
    bad.write_bytes(_patched(blob, info + 4 + 8, "<I", 99))
    with pytest.raises(UnsupportedVariantError, match="unknown ggml type 99"):
        load(bad)
    aligned = _write(tmp_path / "y.gguf", {"a": (a, None)}, {"alignment": 64}).read_bytes()
    at = aligned.index(b"general.alignment") + len(b"general.alignment") + 4
    bad.write_bytes(_patched(aligned, at, "<I", 48))
    with pytest.raises(FormatError, match="not a power of two"):
        load(bad)


def test_not_parameters_and_rows_that_do_not_fill_blocks(tmp_path: Path) -> None:
    path = _write(tmp_path / "r.gguf", {"rope_freqs.weight": (np.ones(8, dtype=np.float32), None)})
    assert load(path).tensors[0].kind is TensorKind.BUFFER
    blob = _write(tmp_path / "q.gguf", {"q": (gguf.quants.quantize(np.ones((1, 32), np.float32), Q.Q8_0), Q.Q8_0)})
    data = blob.read_bytes()
    at = data.index(b"\x01\x00\x00\x00\x00\x00\x00\x00q") + 9 + 4
    blob.write_bytes(_patched(data, at, "<Q", 31))  # ne[0] = 31: not a whole Q8_0 block
    with pytest.raises(InspectorError, match="do not fill Q8_0 blocks of 32"):
        load(blob)


SAMPLES_DIR = Path(__file__).resolve().parents[2] / "sample_models" / "gguf_onnx"
MANIFEST = json.loads((SAMPLES_DIR / "manifest.json").read_text())


@pytest.mark.parametrize("name", sorted(k for k in MANIFEST if k.endswith(".gguf")))
def test_samples_equal_the_manifest(name: str) -> None:
    """Committed samples (made by make_gguf_onnx.py) against what GGUFReader and transformers reported."""
    entry = MANIFEST[name]
    ckpt = load(SAMPLES_DIR / name)
    check_invariants(ckpt)
    assert {t.name: [list(t.shape), t.dtype, t.offset, t.nbytes] for t in ckpt.tensors} == entry["tensors"]
    assert ckpt.n_parameters == entry["n_elements"] == entry["hf_num_parameters"]
    assert not [r for r in ckpt.regions if r.kind is RegionKind.UNKNOWN]


def test_split_model_is_one_checkpoint(tmp_path: Path) -> None:
    """GGUFWriter(split_max_tensors=2) writes model-0000N-of-00003.gguf; any shard reads as the whole model."""
    w = gguf.GGUFWriter(str(tmp_path / "model.gguf"), "llama", split_max_tensors=2)
    w.add_block_count(1)
    for i in range(5):
        w.add_tensor(f"blk.0.t{i}.weight", np.full((4, 8), i, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    shards = sorted(tmp_path.glob("model-*-of-00003.gguf"))
    assert len(shards) == 3
    ckpt = load(shards[1])
    check_invariants(ckpt)
    assert [Path(p) for p, _ in ckpt.files] == [shards[1], shards[0], shards[2]]
    for index, (path, _) in enumerate(ckpt.files):
        ref = gguf.GGUFReader(path)
        ours = [(t.name, t.offset, t.nbytes) for t in ckpt.tensors if t.file == index]
        assert ours == [(t.name, t.data_offset, t.n_bytes) for t in ref.tensors]
    assert ckpt.n_parameters == 5 * 32 and not ckpt.findings
    assert ckpt.attributes["gguf.split_files"] == "3" and ckpt.config is not None
    shards[2].unlink()
    with pytest.raises(InspectorError, match="00003-of-00003.gguf: no such file"):
        load(shards[0])


def test_a_split_model_names_every_shard_by_the_whole_models_table(tmp_path: Path) -> None:
    """Falcon 40B's layout is told by `attn_norm_2`, which only the first shard holds, and the later shards hold no
    `general.architecture`: their tensors are named by the model's table all the same (`ln_mlp`, not llama's
    `input_layernorm`)."""
    w = gguf.GGUFWriter(str(tmp_path / "model.gguf"), "falcon", split_max_tensors=2)
    w.add_block_count(2)
    for name in ("blk.0.attn_norm.weight", "blk.0.attn_norm_2.weight", "blk.1.attn_norm.weight",
                 "blk.1.attn_norm_2.weight", "blk.1.ffn_up.weight"):  # fmt: skip
        w.add_tensor(name, np.ones(8, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    shards = sorted(tmp_path.glob("model-*-of-00003.gguf"))
    assert "general.architecture" not in gguf.GGUFReader(shards[1]).fields
    for shard in shards:
        ckpt = load(shard)
        named = {t.name: f"{t.layer}.{t.param}" for t in ckpt.tensors}
        assert named == {n: hf_name(n, "falcon-new") for n in named}
        assert named["blk.1.attn_norm.weight"] == "transformer.h.1.ln_mlp.weight"


def test_no_architecture_no_config(tmp_path: Path) -> None:
    w = gguf.GGUFWriter(str(tmp_path / "bare.gguf"), "llama")
    w.kv_data[0].pop("general.architecture")  # GGUFWriter always adds it; a file may lack it
    w.add_tensor("w", np.ones(4, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    ckpt = load(tmp_path / "bare.gguf")
    assert ckpt.config is None and "gguf.general.architecture" not in ckpt.attributes
    assert "gguf.hf_names" not in ckpt.attributes and ckpt.n_parameters == 4
