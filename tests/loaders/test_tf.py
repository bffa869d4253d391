"""TensorFlow checkpoints: the shared fixtures against a reference walker, and files TensorFlow writes in the test
compared with tf.train.load_checkpoint (names, shapes, dtypes, offsets, bytes) and Keras's own counts."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from inspector import load
from inspector.dtypes import TF_DTYPES
from inspector.errors import FormatError, InspectorError, TruncatedFileError
from inspector.records import Checkpoint, RegionKind, TensorKind
from inspector.registry import detect, member_entry
from inspector.report import analyse
from loaders import _sstable
from loaders.base import check_invariants
from tests.conftest import SAMPLES, fixture_path, record_reads

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def _reference(name: str) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Entries and byte accounting the reference walker printed for fixtures/tf/NAME (tool-output/tf_index.txt)."""
    entries: list[dict[str, Any]] = []
    account: dict[str, int] = {}
    current = None
    for line in fixture_path("tool-output/tf_index.txt").read_text().splitlines():
        if line.startswith("== "):
            current = line.split()[1]
        elif current == f"tf/{name}" and line.strip().startswith("{"):
            entries.append(ast.literal_eval(line.strip()))
        elif current == f"tf/{name}" and line.strip().startswith("ACCOUNT"):
            account = ast.literal_eval(line.strip()[len("ACCOUNT") :].strip())
    return entries, account


@pytest.mark.parametrize("name", ["simple", "ckpt"])
def test_shared_fixtures_match_the_reference_walker(name: str) -> None:
    ckpt = load(fixture_path(f"tf/{name}.index"))
    check_invariants(ckpt)
    entries, account = _reference(name)
    by_name = {t.name: t for t in ckpt.tensors}
    names = {"float32": "F32", "bfloat16": "BF16", "int64": "I64"}
    numeric = [e for e in entries if e["expected_bytes"] is not None]
    assert set(by_name) == {e["name"] for e in numeric}
    for e in numeric:
        t = by_name[e["name"]]
        assert (list(t.shape), t.dtype, t.offset, t.nbytes) == (e["shape"], names[e["dtype"]], e["offset"], e["size"])
    assert ckpt.files[0][1] == account["index_file"] and ckpt.files[1][1] == account["data_files"]
    data = [r for r in ckpt.regions if r.file == 1]
    assert sum(r.length for r in data if r.kind is RegionKind.TENSOR_DATA) == account["numeric_tensor_bytes"]
    assert sum(r.length for r in data if r.kind is RegionKind.METADATA) == account["string_or_other_bytes"]
    assert not [r for r in ckpt.regions if r.kind is RegionKind.UNKNOWN]


def test_keras_fixture_kinds_and_layers() -> None:
    ckpt = load(fixture_path("tf/ckpt.index"))
    assert ckpt.framework == "keras" and ckpt.n_parameters == 276  # tf_keras count_params() of the fixture's model
    assert {t.layer for t in ckpt.unique(TensorKind.PARAMETER)} == {"dense", "bn", "head"}
    assert {t.name.split("/")[0] for t in ckpt.unique(TensorKind.OPTIMIZER)} == {"optimizer"}
    stats = [t for t in ckpt.tensors if t.param in ("moving_mean", "moving_variance")]
    assert len(stats) == 2 and not any(t.trainable for t in stats)
    report = analyse(ckpt)
    assert report.expectation is not None and report.expectation.matches


def test_crc32c_and_snappy() -> None:
    assert _sstable.crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value (RFC 3720)
    # literal "abc", then a 2-byte-offset copy of 6 bytes at distance 3 (overlapping its own output)
    stream = bytes([9, 2 << 2]) + b"abc" + bytes([((6 - 1) << 2) | 2, 3, 0])
    assert _sstable.snappy_decompress(stream, 100) == b"abcabcabc"
    with pytest.raises(ValueError):
        _sstable.snappy_decompress(bytes([9, 2 << 2]) + b"abc" + bytes([((6 - 1) << 2) | 2, 9, 0]), 100)


def test_snappy_block_against_a_real_compressor(tmp_path: Path) -> None:
    cramjam = pytest.importorskip("cramjam", reason="cramjam writes real snappy blocks")
    data = (b"model/layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE" * 50) + bytes(range(256))
    assert _sstable.snappy_decompress(bytes(cramjam.snappy.compress_raw(data)), 1 << 20) == data


# -- files TensorFlow writes -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tf() -> Any:
    return pytest.importorskip("tensorflow")


def _compare_with_tensorflow(tf: Any, ckpt: Checkpoint, prefix: str) -> None:
    """Every numeric variable: shape and dtype as TensorFlow lists them, bytes at our offset equal to its value."""
    reader = tf.train.load_checkpoint(prefix)
    shapes, types = reader.get_variable_to_shape_map(), reader.get_variable_to_dtype_map()
    data = {path: Path(path).read_bytes() for path, _ in ckpt.files[1:]}
    by_name = {t.name: t for t in ckpt.tensors}
    numeric = {k for k, d in types.items() if d not in (tf.string, tf.resource, tf.variant)}
    assert set(by_name) == numeric
    for key in numeric:
        t = by_name[key]
        assert list(t.shape) == shapes[key]
        assert t.dtype == TF_DTYPES[types[key].as_datatype_enum][0]
        value = reader.get_tensor(key)
        assert data[ckpt.files[t.file][0]][t.offset : t.offset + t.nbytes] == value.tobytes()


def test_dtype_table_against_tensorflow(tf: Any) -> None:
    """Every DataType enum in the table: TensorFlow's own element size and kind; sub-byte types stored in a byte."""
    from inspector.dtypes import DKind, lookup

    for enum, (name, width) in TF_DTYPES.items():
        dtype = tf.dtypes.as_dtype(enum)
        if width == 0:
            assert dtype in (tf.string, tf.resource, tf.variant), name
            continue
        canonical = lookup(name)
        assert canonical is not None and dtype.size == width, (enum, name)
        assert canonical.bits == 8 * width or (canonical.bits < 8 and width == 1), (enum, name)
        kind = (DKind.QUANT if dtype.is_quantized else DKind.BOOL if dtype.is_bool else DKind.COMPLEX
                if dtype.is_complex else DKind.FLOAT if dtype.is_floating else DKind.UINT if dtype.is_unsigned
                else DKind.INT)  # fmt: skip
        assert canonical.kind is kind, (enum, name, dtype.name)


def test_variables_of_every_dtype(tf: Any, tmp_path: Path) -> None:
    dtypes = ["float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "uint16",
              "uint32", "uint64", "bool", "complex64", "complex128"]  # fmt: skip
    variables = {d: tf.Variable(tf.cast(tf.reshape(tf.range(6), (2, 3)), d)) for d in dtypes}
    variables["text"] = tf.Variable(["a", "bc"])
    variables["scalar"] = tf.Variable(3.5)
    prefix = tf.train.Checkpoint(**variables).write(str(tmp_path / "all"))
    ckpt = load(prefix + ".index")
    check_invariants(ckpt)
    _compare_with_tensorflow(tf, ckpt, prefix)
    assert any(r.kind is RegionKind.METADATA and "TF_STRING" in r.label for r in ckpt.regions)


@pytest.fixture(scope="module")
def keras_model(tf: Any) -> Any:
    keras = pytest.importorskip("tf_keras")
    import numpy as np

    tf.random.set_seed(0)
    inp = keras.Input((8,), name="x")
    h = keras.layers.Dense(16, name="dense")(inp)
    h = keras.layers.BatchNormalization(name="bn")(h)
    out = keras.layers.Dense(4, name="head")(keras.layers.LSTM(6, name="lstm")(keras.layers.Reshape((4, 4))(h)))
    model = keras.Model(inp, out, name="tiny")
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse")
    model.fit(np.ones((4, 8), "float32"), np.ones((4, 4), "float32"), epochs=1, verbose=0)
    return model


def _keras_counts(model: Any, ckpt: Checkpoint) -> None:
    import numpy as np

    assert ckpt.framework == "keras"
    assert ckpt.n_parameters == model.count_params()
    trainable = sum(t.n_elements for t in ckpt.unique(TensorKind.PARAMETER) if t.trainable)
    assert trainable == sum(int(np.prod(w.shape)) for w in model.trainable_weights)
    assert {t.layer for t in ckpt.unique(TensorKind.PARAMETER)} == {w.name.split("/")[0] for w in model.weights}


def test_object_based_checkpoint_with_adam(tf: Any, keras_model: Any, tmp_path: Path) -> None:
    manager = tf.train.CheckpointManager(
        tf.train.Checkpoint(model=keras_model, optimizer=keras_model.optimizer), str(tmp_path), max_to_keep=1
    )
    prefix = manager.save()
    ckpt = load(tmp_path)  # the folder: its state file names the latest prefix
    check_invariants(ckpt)
    assert ckpt.path == prefix + ".index" and ckpt.attributes["tf.latest"] == Path(prefix).name
    _compare_with_tensorflow(tf, ckpt, prefix)
    _keras_counts(keras_model, ckpt)
    optimizer = ckpt.unique(TensorKind.OPTIMIZER)
    # iterations and the m/v slots (Keras's optimizer.variables), plus the learning rate variable it tracks
    slots = sum(int(v.shape.num_elements()) for v in keras_model.optimizer.variables)
    assert sum(t.n_elements for t in optimizer) == slots + 1
    assert {t.name for t in optimizer} >= {"optimizer/_learning_rate/.ATTRIBUTES/VARIABLE_VALUE"}
    (counter,) = ckpt.unique(TensorKind.OTHER)
    assert counter.name.startswith("save_counter/")
    shard = next(p for p, _ in ckpt.files if ".data-" in p)
    assert detect(shard) == "tensorflow-checkpoint" and load(shard).tensors == ckpt.tensors
    assert member_entry(shard) == ckpt.path and member_entry(ckpt.path) is None
    state = next(p for p, _ in ckpt.files if p.endswith("checkpoint"))  # the state file: in the latest's report
    assert member_entry(state) == ckpt.path
    report = analyse(ckpt)
    assert report.expectation is not None and report.expectation.total == keras_model.count_params()


def test_legacy_optimizer_slots(tf: Any, keras_model: Any, tmp_path: Path) -> None:
    keras = pytest.importorskip("tf_keras")
    import numpy as np

    model = keras.models.clone_model(keras_model)
    model.compile(optimizer=keras.optimizers.legacy.Adam(1e-3), loss="mse")
    model.fit(np.ones((4, 8), "float32"), np.ones((4, 4), "float32"), epochs=1, verbose=0)
    prefix = tf.train.Checkpoint(model=model, optimizer=model.optimizer).write(str(tmp_path / "legacy"))
    ckpt = load(prefix + ".index")
    _compare_with_tensorflow(tf, ckpt, prefix)
    _keras_counts(model, ckpt)
    slots = [t for t in ckpt.tensors if ".OPTIMIZER_SLOT" in t.name]
    assert len(slots) == 2 * len(model.trainable_weights)
    assert all(t.kind is TensorKind.OPTIMIZER and t.param in ("m", "v") for t in slots)


def test_keras2_save_weights_and_saved_model(tf: Any, keras_model: Any, tmp_path: Path) -> None:
    keras_model.save_weights(str(tmp_path / "weights" / "w"))  # TF format (no .h5 suffix)
    ckpt = load(tmp_path / "weights" / "w.index")
    check_invariants(ckpt)
    _compare_with_tensorflow(tf, ckpt, str(tmp_path / "weights" / "w"))
    _keras_counts(keras_model, ckpt)
    keras_model.save(str(tmp_path / "sm"), save_format="tf")
    saved = load(tmp_path / "sm")  # a SavedModel folder stands for its variables/
    check_invariants(saved)
    assert saved.attributes["tf.saved_model"] == str(tmp_path / "sm")
    folder_files = [p for p in (tmp_path / "sm").rglob("*") if p.is_file() and "assets" not in p.parts]
    assert saved.file_size == sum(p.stat().st_size for p in folder_files)  # the graph and Keras metadata too
    _compare_with_tensorflow(tf, saved, str(tmp_path / "sm" / "variables" / "variables"))
    _keras_counts(keras_model, saved)
    assert {t.notes[0] for t in saved.unique(TensorKind.OTHER)} == {"Keras metric state"}
    # a folder audit lists the SavedModel once, under its index: the graph and metadata files are in its report
    from inspector.audit import audit

    rows = audit([str(tmp_path / "sm")], jobs=1)
    assert [(r.path, r.status) for r in rows] == [(saved.path, "ok")], rows
    assert rows[0].file_bytes == saved.file_size


def test_keras_layer_names_with_a_slash_and_a_normalization_layer(tf: Any, tmp_path: Path) -> None:
    """keras.applications' idioms: DenseNet names layers 'conv1/bn' and, at the end, 'bn' (a name's last part is not
    its layer: one BatchNormalization, not two), EfficientNet starts with a Normalization layer whose adapted mean,
    variance and count Keras counts as parameters it never trains. Both ways tf_keras writes a checkpoint."""
    keras = pytest.importorskip("tf_keras")
    import numpy as np

    inp = keras.Input((8, 8, 3))
    h = keras.layers.Normalization(axis=-1)(inp)  # auto-named 'normalization', as in EfficientNet
    h = keras.layers.BatchNormalization(name="conv1/bn")(keras.layers.Conv2D(4, 3, name="conv1/conv")(h))
    h = keras.layers.BatchNormalization(name="bn")(keras.layers.Conv2D(4, 3, name="conv2")(h))
    model = keras.Model(inp, keras.layers.Dense(2, name="predictions")(keras.layers.GlobalAveragePooling2D()(h)))
    trainable = sum(int(np.prod(w.shape)) for w in model.trainable_weights)
    assert trainable < model.count_params() - 4 * 4  # the Normalization variables are not trainable either
    prefixes = [tf.train.Checkpoint(model=model).write(str(tmp_path / "ckpt" / "ckpt"))]
    model.save_weights(str(tmp_path / "weights" / "x.ckpt"))
    prefixes.append(str(tmp_path / "weights" / "x.ckpt"))
    for prefix in prefixes:
        ckpt = load(prefix + ".index")
        _compare_with_tensorflow(tf, ckpt, prefix)
        assert ckpt.n_parameters == model.count_params()
        assert sum(t.n_elements for t in ckpt.unique(TensorKind.PARAMETER) if t.trainable) == trainable
        layers = {t.layer for t in ckpt.unique(TensorKind.PARAMETER)}
        assert len(layers) == len([layer for layer in model.layers if layer.weights]) and {"bn", "conv1/bn"} <= layers
        report = analyse(ckpt)
        assert report.expectation is not None and report.expectation.total == model.count_params()
        assert not [f for f in report.findings if f.severity.value != "info"]


KERAS3_TF = """
import json, sys
import numpy as np, keras, tensorflow as tf
inp = keras.Input((8,))
x = keras.layers.BatchNormalization()(keras.layers.Dense(16)(inp))
out = keras.layers.Dense(4)(keras.layers.LSTM(6)(keras.layers.Reshape((4, 4))(x)))
m = keras.Model(inp, out)
m.compile(optimizer="adam", loss="mse")
m.fit(np.ones((4, 8), "float32"), np.ones((4, 4), "float32"), epochs=1, verbose=0)
tf.train.Checkpoint(model=m, optimizer=m.optimizer).write(sys.argv[1])
print(json.dumps({"count_params": m.count_params(), "layers": sorted({w.path.split("/")[0] for w in m.weights}),
                  "trainable": sum(int(np.prod(w.shape)) for w in m.trainable_weights)}))
"""


def test_keras3_tensorflow_backend(tf: Any, tmp_path: Path) -> None:
    """Keras 3 tracks the model's variables from its optimizer too: the object graph, not the key, tells them apart."""
    import json

    pytest.importorskip("keras")
    env = dict(os.environ, KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run([sys.executable, "-c", KERAS3_TF, str(tmp_path / "k3")], capture_output=True, text=True,
                          env=env, timeout=300)  # fmt: skip
    if proc.returncode != 0:
        pytest.skip(f"Keras 3 with the TensorFlow backend did not run: {proc.stderr.strip().splitlines()[-1:]}")
    expected = json.loads(proc.stdout.strip().splitlines()[-1])
    ckpt = load(tmp_path / "k3.index")
    check_invariants(ckpt)
    _compare_with_tensorflow(tf, ckpt, str(tmp_path / "k3"))
    assert ckpt.framework == "keras" and ckpt.n_parameters == expected["count_params"]
    params = ckpt.unique(TensorKind.PARAMETER)
    assert sum(t.n_elements for t in params if t.trainable) == expected["trainable"]
    assert any(t.name.startswith("optimizer/_trainable_variables/") for t in params)  # model weights, by the graph
    assert {t.layer for t in params} == set(expected["layers"])
    report = analyse(ckpt)
    assert report.expectation is not None and report.expectation.total == expected["count_params"]


def test_tf1_saver_with_a_partitioned_variable(tf: Any, tmp_path: Path) -> None:
    graph = tf.Graph()
    with graph.as_default():
        step = tf.compat.v1.train.get_or_create_global_step()
        kernel = tf.compat.v1.get_variable("dense/kernel", shape=[10, 4],
                                           partitioner=tf.compat.v1.fixed_size_partitioner(2))  # fmt: skip
        bias = tf.compat.v1.get_variable("dense/bias", shape=[4])
        loss = tf.reduce_sum(tf.matmul(tf.ones((1, 10)), tf.concat(list(kernel), 0)) + bias)
        train = tf.compat.v1.train.AdamOptimizer().minimize(loss, global_step=step)
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(train)
            prefix = saver.save(session, str(tmp_path / "model"))
    ckpt = load(prefix + ".index")
    check_invariants(ckpt)
    _compare_with_tensorflow(tf, ckpt, prefix)  # the slices, end to end, are the whole variable's bytes
    assert ckpt.n_parameters == 44
    kinds = {t.name: t.kind for t in ckpt.tensors}
    assert kinds["dense/kernel/Adam"] is kinds["beta1_power"] is TensorKind.OPTIMIZER
    assert kinds["global_step"] is TensorKind.OTHER and kinds["dense/kernel"] is TensorKind.PARAMETER
    assert ckpt.attributes["tf.partitioned_variables"] == "3"


def test_sharded_checkpoint(tf: Any, tmp_path: Path) -> None:
    variables = {f"v{i}": tf.Variable(tf.reshape(tf.range(4096 * i, 4096 * (i + 1), dtype=tf.float32), (64, 64)))
                 for i in range(4)}  # fmt: skip
    policy = tf.train.experimental.MaxShardSizePolicy(max_shard_size=20_000)
    options = tf.train.CheckpointOptions(experimental_sharding_callback=policy)
    prefix = tf.train.Checkpoint(**variables).write(str(tmp_path / "ck"), options=options)
    ckpt = load(prefix + ".index")
    check_invariants(ckpt)
    n_shards = int(ckpt.attributes["tf.shards"])
    assert n_shards > 1 and len(ckpt.files) == n_shards + 1
    assert ckpt.n_parameters == 4 * 4096
    reader = tf.train.load_checkpoint(prefix)
    for t in ckpt.tensors:  # whole variables, or slices 'v1/.ATTRIBUTES/VARIABLE_VALUE[13:14,0:64]'
        key, _, extent = t.name.partition("[")
        value = reader.get_tensor(key)
        if extent:
            rows = [int(x) for x in extent.split(",")[0].split(":")]
            value = value[rows[0] : rows[1]]
        raw = Path(ckpt.files[t.file][0]).read_bytes()[t.offset : t.offset + t.nbytes]
        assert raw == value.tobytes()
    assert load(Path(ckpt.files[2][0])).tensors == ckpt.tensors


# -- broken files ------------------------------------------------------------------------------------------------


def _copy_fixture(tmp_path: Path) -> Path:
    for name in ("ckpt.index", "ckpt.data-00000-of-00001"):
        shutil.copy(fixture_path(f"tf/{name}"), tmp_path / name)
    return tmp_path / "ckpt.index"


@pytest.mark.parametrize("cut", [0.1, 0.5, 0.9, 0.99])
def test_truncated_index_is_one_line(tmp_path: Path, cut: float) -> None:
    index = _copy_fixture(tmp_path)
    data = index.read_bytes()
    index.write_bytes(data[: int(len(data) * cut)])
    with pytest.raises(InspectorError):
        load(index)
    proc = subprocess.run([sys.executable, "-m", "inspector", str(index)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_truncated_or_missing_data_shard(tmp_path: Path) -> None:
    index = _copy_fixture(tmp_path)
    shard = tmp_path / "ckpt.data-00000-of-00001"
    shard.write_bytes(shard.read_bytes()[:1000])
    with pytest.raises(TruncatedFileError, match="ends at byte"):
        load(index)
    shard.unlink()
    with pytest.raises(FormatError, match="missing"):
        load(index)


def test_corrupt_block_is_a_checksum_finding(tmp_path: Path) -> None:
    index = _copy_fixture(tmp_path)
    data = bytearray(index.read_bytes())
    pos = data.index(b"_CHECKPOINTABLE")
    data[pos + 1] ^= 0x20  # a key's letter changes case: the entry still parses, its block's CRC does not match
    index.write_bytes(bytes(data))
    ckpt = load(index)
    assert any(f.code == "CHECKSUM_MISMATCH" for f in ckpt.findings)


def test_sample_checkpoint() -> None:
    import json

    manifest = json.loads((SAMPLES / "tf" / "manifest.json").read_text())
    for name, expected in manifest.items():
        if name.startswith("_"):
            continue
        ckpt = load(SAMPLES / "tf" / name)
        check_invariants(ckpt)
        assert ckpt.n_parameters == expected["count_params"]
        assert sum(t.n_elements for t in ckpt.unique(TensorKind.OPTIMIZER)) == expected["optimizer_elements"]


def test_no_tensor_byte_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Header-only: of the data shards, only the object graph is read (reads are recorded below the Probe)."""
    reads = record_reads(monkeypatch)
    ckpt = load(SAMPLES / "tf" / "keras_adam")
    monkeypatch.undo()
    shard = os.path.abspath(ckpt.files[1][0])
    (graph,) = [r for r in ckpt.regions if r.file == 1 and r.label == "object graph"]
    shard_reads = [(at, n) for path, at, n in reads if path == shard and at > 0]  # at 0: the Probe's 4 KiB sniff
    assert shard_reads == [(graph.start, graph.length)]


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def test_snappy_compressed_index_reads_like_the_original(tmp_path: Path) -> None:
    """The shared fixture's index rebuilt with its data block snappy-compressed by a real compressor."""
    cramjam = pytest.importorskip("cramjam", reason="cramjam writes real snappy blocks")
    import struct

    original = fixture_path("tf/simple.index").read_bytes()
    footer = original[-_sstable.FOOTER_BYTES :]
    meta_offset, meta_size, pos = _sstable._handle(footer)
    index_offset, index_size, _ = _sstable._handle(footer, pos)
    (key, value), *_ = _sstable._entries(original[index_offset : index_offset + index_size])
    data_offset, data_size, _ = _sstable._handle(value)
    block = bytes(cramjam.snappy.compress_raw(original[data_offset : data_offset + data_size]))

    def with_trailer(contents: bytes, kind: int) -> bytes:
        return contents + bytes([kind]) + struct.pack("<I", _sstable.masked_crc32c(contents + bytes([kind])))

    out = with_trailer(block, _sstable.SNAPPY)
    meta_at = len(out)
    out += with_trailer(original[meta_offset : meta_offset + meta_size], 0)
    handle = _varint(0) + _varint(len(block))
    index = bytes([0, len(key), len(handle)]) + key + handle + struct.pack("<II", 0, 1)
    index_at = len(out)
    out += with_trailer(index, 0)
    handles = _varint(meta_at) + _varint(meta_size) + _varint(index_at) + _varint(len(index))
    out += handles.ljust(40, b"\0") + _sstable.MAGIC_BYTES
    (tmp_path / "simple.index").write_bytes(out)
    shutil.copy(fixture_path("tf/simple.data-00000-of-00001"), tmp_path / "simple.data-00000-of-00001")
    ckpt = load(tmp_path / "simple.index")
    check_invariants(ckpt)
    assert ckpt.tensors == load(fixture_path("tf/simple.index")).tensors
    assert ckpt.attributes["tf.snappy_blocks"] == "1" and not ckpt.findings
    (compressed,) = [r for r in ckpt.regions if r.kind is RegionKind.COMPRESSED]
    assert compressed.length == len(block) and compressed.logical == data_size
