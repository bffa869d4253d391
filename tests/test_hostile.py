"""Hostile and broken input: every failure is an InspectorError, nothing runs, time and memory stay bounded."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inspector import load
from inspector.cli import main
from inspector.errors import FormatError, InputError, InspectorError, LimitExceededError, UnknownFormatError
from tests.conftest import FIXTURES, SAMPLES
from tests.hostile import At, Blob, Table, Vector, flip, seed_files, tflite_model, truncate

SEEDS = seed_files()
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))


def _load_or_error(path: Path) -> None:
    """A mutated file either loads (and its regions tile it) or raises an InspectorError: nothing else."""
    try:
        ckpt = load(path)
    except InspectorError:
        return
    assert sum(r.length for r in ckpt.regions) == ckpt.file_size


@pytest.mark.parametrize("seed", SEEDS, ids=lambda p: p.name)
@SETTINGS
@given(at=st.integers(min_value=0))
def test_truncation_anywhere(tmp_path_factory: pytest.TempPathFactory, seed: Path, at: int) -> None:
    path = tmp_path_factory.mktemp("t") / seed.name
    path.write_bytes(truncate(seed.read_bytes(), at))
    _load_or_error(path)


@pytest.mark.parametrize("seed", SEEDS, ids=lambda p: p.name)
@SETTINGS
@given(
    positions=st.lists(st.integers(min_value=0), min_size=1, max_size=8),
    values=st.lists(st.integers(min_value=0, max_value=255), min_size=8, max_size=8),
)
def test_byte_flips(
    tmp_path_factory: pytest.TempPathFactory, seed: Path, positions: list[int], values: list[int]
) -> None:
    data = seed.read_bytes()
    # bias half the flips into the first 512 bytes, where the headers are
    positions = [p % 512 if i % 2 == 0 else p for i, p in enumerate(positions)]
    path = tmp_path_factory.mktemp("f") / seed.name
    path.write_bytes(flip(data, positions, values))
    _load_or_error(path)


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    path.write_bytes(b"")
    with pytest.raises(UnknownFormatError, match="an empty file"):
        load(path)


@pytest.mark.parametrize(
    "ext", [".pt", ".safetensors", ".h5", ".npz", ".params", ".bin", ".gguf", ".onnx", ".tflite", ".msgpack"]
)
def test_random_bytes_with_a_checkpoint_extension(tmp_path: Path, ext: str) -> None:
    path = tmp_path / f"model{ext}"
    path.write_bytes(os.urandom(4096))
    with pytest.raises(InspectorError):
        load(path)


def test_directory_missing_and_fifo(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a directory"):
        load(tmp_path)
    with pytest.raises(InputError, match="no such file"):
        load(tmp_path / "nope.pt")
    fifo = tmp_path / "pipe.pt"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        load(fifo)  # must not block


def test_device_is_refused() -> None:
    with pytest.raises(InputError, match="not a regular file"):
        load("/dev/zero")


def test_safetensors_header_length_2_pow_60(tmp_path: Path) -> None:
    path = tmp_path / "x.safetensors"
    path.write_bytes(struct.pack("<Q", 1 << 60) + b'{"a": {"dtype": "F32"}}')
    with pytest.raises(LimitExceededError):
        load(path)


def test_gguf_array_of_2_pow_60_strings(tmp_path: Path) -> None:
    key = b"tokenizer.ggml.tokens"
    kv = struct.pack("<Q", len(key)) + key + struct.pack("<IIQ", 9, 8, 1 << 60)  # array of 2^60 strings
    path = tmp_path / "x.gguf"
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + kv + b"\0" * 64)
    with pytest.raises(LimitExceededError, match="cannot fit"):
        load(path)


def test_onnx_graph_longer_than_the_file(tmp_path: Path) -> None:
    path = tmp_path / "x.onnx"
    path.write_bytes(b"\x08\x07\x3a\x80\x80\x80\x80\x08" + b"\0" * 64)  # graph of 2^31 bytes
    with pytest.raises(InspectorError):
        load(path)


# -- TF Lite FlatBuffers made by hand (tests/hostile.py): every offset, count and index read from the file is checked


def _tflite(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "x.tflite"
    path.write_bytes(data)
    return path


def test_tflite_hand_made_model_reads(tmp_path: Path) -> None:
    ckpt = load(_tflite(tmp_path, tflite_model()[0]))
    assert [(t.name, t.shape, t.n_elements) for t in ckpt.tensors] == [("w", (2, 2), 4)] and ckpt.n_parameters == 4


def _weights(**fields: object) -> Table:
    base: dict[str, object] = {"shape": Vector("i", [2, 2]), "type": ("b", 0), "buffer": ("I", 1)}
    return Table(**{**base, **fields})


@pytest.mark.parametrize(
    ("weights", "match"),
    [
        (_weights(shape=Blob(struct.pack("<I", 0xFFFFFFF0))), "lies outside"),  # a vector of 2^32 - 16 dims
        (_weights(name=At(Blob(b"\0" * 8), 1 << 20)), "lies outside"),  # a name a megabyte past the end
        (_weights(buffer=("I", 9)), "names buffer 9 of 2"),
        (_weights(shape=Vector("i", [3, 3])), "16 bytes of data, \\[3, 3\\] F32 needs 36"),
        (_weights(shape=Vector("i", [2, -2])), "invalid dimension"),
        (_weights(shape=Vector("i", [1] * 65)), "65 elements"),
    ],
)
def test_tflite_bad_tensor_fields(tmp_path: Path, weights: Table, match: str) -> None:
    data, _ = tflite_model(weights=weights)
    with pytest.raises(FormatError, match=match):
        load(_tflite(tmp_path, data))


@pytest.mark.parametrize(
    ("operator", "match"),
    [
        (Table(opcode_index=("I", 5), inputs=Vector("i", [0, 1]), outputs=Vector("i", [2])), "operator code 5 of 1"),
        (Table(opcode_index=("I", 0), inputs=Vector("i", [0, 7]), outputs=Vector("i", [2])), "names tensor 7 of 3"),
        (Table(opcode_index=("I", 0), inputs=Vector("i", [-5]), outputs=Vector("i", [2])), "names tensor -5 of 3"),
    ],
)
def test_tflite_bad_operator_fields(tmp_path: Path, operator: Table, match: str) -> None:
    data, _ = tflite_model(operators=[operator])
    with pytest.raises(FormatError, match=match):
        load(_tflite(tmp_path, data))


def test_tflite_overlapping_vectors_cost_linear_time(tmp_path: Path) -> None:
    """20,000 operators whose inputs start at successive words of one region, word j holding 19,999 - j: each a valid
    vector, 200 million elements in all. The reader stops once it has read more elements than the file has bytes."""
    import time

    k = 20_000
    region = Blob(struct.pack(f"<{k}I", *range(k - 1, -1, -1)))
    operators = [Table(opcode_index=("I", 0), inputs=At(region, 4 * j), outputs=Vector("i", [2])) for j in range(k)]
    data, _ = tflite_model(operators=operators)
    start = time.monotonic()
    with pytest.raises(LimitExceededError, match="objects overlap"):
        load(_tflite(tmp_path, data))
    assert time.monotonic() - start < 5


def test_tflite_shared_vectors_are_read_once(tmp_path: Path) -> None:
    """50,000 operators sharing one inputs vector (FlatBuffers allow it): read once, in linear time."""
    import time

    inputs = Vector("i", [0, 1, -1])
    operators = [Table(opcode_index=("I", 0), inputs=inputs, outputs=Vector("i", [2])) for _ in range(50_000)]
    data, _ = tflite_model(operators=operators)
    start = time.monotonic()
    ckpt = load(_tflite(tmp_path, data))
    assert ckpt.attributes["tflite.operators"] == "50,000" and time.monotonic() - start < 10


def test_tflite_cli_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, _ = tflite_model(weights=_weights(shape=Blob(struct.pack("<I", 0x7FFFFFFF))))
    path = _tflite(tmp_path, data)
    assert main([str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err and "Traceback" not in err
    assert main([str(_tflite(tmp_path, data[:100]))]) == 2  # truncated inside its tables


def test_deeply_nested_json(tmp_path: Path) -> None:
    body = b'{"a": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    path = tmp_path / "x.safetensors"
    path.write_bytes(struct.pack("<Q", len(body)) + body)
    with pytest.raises(InspectorError):
        load(path)


def test_overflowing_dimensions(tmp_path: Path) -> None:
    header = json.dumps({"a": {"dtype": "F32", "shape": [2**62, 2**62, 2**62], "data_offsets": [0, 4]}}).encode()
    path = tmp_path / "x.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 4)
    with pytest.raises(InspectorError):
        load(path)


def test_negative_dimension_in_npy(tmp_path: Path) -> None:
    header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }".ljust(117) + b"\n"
    path = tmp_path / "x.npy"
    path.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header)
    with pytest.raises(InspectorError, match="invalid dimension"):
        load(path)


def test_zip_bomb_member_reads_only_its_header(tmp_path: Path) -> None:
    """A deflated member of 1 GiB of zeros (about 1 MB compressed): only its npy header is inflated."""
    path = tmp_path / "bomb.npz"
    header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (268435456,), }".ljust(117) + b"\n"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf, zf.open("a.npy", "w", force_zip64=True) as fh:
        fh.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header)
        chunk = b"\0" * (1 << 24)
        for _ in range(64):
            fh.write(chunk)
    ckpt = load(path)
    assert ckpt.tensors[0].shape == (268435456,)


def test_zip64_lie_in_end_record(tmp_path: Path) -> None:
    path = tmp_path / "lie.npz"
    import numpy as np

    np.savez(path, a=np.zeros(3, dtype="float32"))
    data = bytearray(path.read_bytes())
    eocd = data.rfind(b"PK\x05\x06")
    data[eocd + 16 : eocd + 20] = b"\xff\xff\xff\xff"  # central directory offset says "see zip64", no zip64 record
    path.write_bytes(bytes(data))
    with pytest.raises(InspectorError):
        load(path)


def test_control_characters_in_names_are_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import numpy as np
    from safetensors.numpy import save_file

    path = tmp_path / "evil.safetensors"
    save_file({"evil\x1b[2J\x1b]0;pwned\x07name": np.zeros(2, dtype="float32")}, path)
    assert main([str(path), "--tensors"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "evil\\x1b[2J" in out


def test_cli_one_line_error_and_worst_status(tmp_path: Path) -> None:
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(struct.pack("<Q", 1000) + b'{"a": 1}')
    good = Path(__file__).resolve().parent.parent / "sample_models" / "basic" / "cnn_stored.npz"
    proc = subprocess.run(
        [sys.executable, "-m", "inspector", str(bad), str(good)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and str(bad) in proc.stderr and "Traceback" not in proc.stderr
    assert "cnn_stored.npz" in proc.stdout  # the good file is still reported


def test_hdf5_library_hang_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by scripts/fuzz.py: a mutated HDF5 file on which libhdf5 loops forever reading an attribute."""
    from loaders import _hdf5

    monkeypatch.setattr(_hdf5, "MAX_SECONDS", 2)
    path = Path(__file__).parent / "data" / "hostile" / "hdf5_huge_attribute.h5"
    with pytest.raises(InspectorError, match="did not finish"):
        load(path)


# -- checkpoints of several files (TensorFlow bundles, PyTorch distributed checkpoints) ---------------------------
# One file of a real checkpoint folder is mutated, its siblings stay intact; the folder and each file are loaded.
MULTI_FILE_DIRS = (SAMPLES / "tf" / "keras_adam", SAMPLES / "tf" / "tf1_adam", SAMPLES / "dcp" / "adam_step")
MULTI_FILE_SEEDS = [p for p in (*MULTI_FILE_DIRS, FIXTURES / "tf") if p.is_dir()]


def _mutated_folder(tmp: Path, seed: Path, member: int, mutate: Callable[[bytes], bytes]) -> tuple[Path, Path]:
    folder = tmp / seed.name
    shutil.copytree(seed, folder)
    files = sorted(p for p in folder.iterdir() if p.is_file())
    target = files[member % len(files)]
    target.write_bytes(mutate(target.read_bytes()))
    return folder, target


@pytest.mark.parametrize("seed", MULTI_FILE_SEEDS, ids=lambda p: p.name)
@SETTINGS
@given(member=st.integers(min_value=0, max_value=16), at=st.integers(min_value=0))
def test_multi_file_truncation(tmp_path_factory: pytest.TempPathFactory, seed: Path, member: int, at: int) -> None:
    folder, target = _mutated_folder(tmp_path_factory.mktemp("m"), seed, member, lambda d: truncate(d, at))
    _load_or_error(folder)
    _load_or_error(target)


@pytest.mark.parametrize("seed", MULTI_FILE_SEEDS, ids=lambda p: p.name)
@SETTINGS
@given(
    member=st.integers(min_value=0, max_value=16),
    positions=st.lists(st.integers(min_value=0), min_size=1, max_size=8),
    values=st.lists(st.integers(min_value=0, max_value=255), min_size=8, max_size=8),
)
def test_multi_file_byte_flips(
    tmp_path_factory: pytest.TempPathFactory, seed: Path, member: int, positions: list[int], values: list[int]
) -> None:
    folder, target = _mutated_folder(tmp_path_factory.mktemp("m"), seed, member, lambda d: flip(d, positions, values))
    _load_or_error(folder)
    _load_or_error(target)


def test_dcp_metadata_naming_a_file_outside_its_folder(tmp_path: Path) -> None:
    folder = tmp_path / "ck"
    shutil.copytree(SAMPLES / "dcp" / "adam_step", folder)
    meta = folder / ".metadata"
    meta.write_bytes(meta.read_bytes().replace(b"\x8c\x0c__0_0.distcp", b"\x8c\x0c../0_0.distc"))
    with pytest.raises(InspectorError, match="not a file beside the metadata"):
        load(folder)


def test_tf_index_lying_about_its_shard_count(tmp_path: Path) -> None:
    folder = tmp_path / "ck"
    shutil.copytree(SAMPLES / "tf" / "tf1_adam", folder)
    index = folder / "model.index"
    data = bytearray(index.read_bytes())
    header = data.index(b"\x00\x00\x06\x08\x01")  # first entry: key '', 6-byte BundleHeaderProto, num_shards = 1
    data[header + 4] = 0x7F  # 127 shards: the tensors' shard is now 'model.data-00000-of-00127', which is not there
    index.write_bytes(bytes(data))
    with pytest.raises(FormatError, match="missing"):
        load(index)
    proc = subprocess.run([sys.executable, "-m", "inspector", str(index)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
