"""numpy arrays in bare pickles (Detectron's model zoo `.pkl`, JAX and Haiku parameters), read as tensors.

Every file is written by `pickle.dump` of real numpy arrays, at each protocol numpy writes differently (`_reconstruct`
with a BUILD state, protocol 5's `_frombuffer`); the references are the arrays themselves: shapes, dtypes, and the
bytes at each tensor's offset, read back from the file.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from inspector import load
from inspector.cli import main
from inspector.records import RegionKind, TensorKind
from inspector.report import inspect
from loaders.base import check_invariants

ARRAYS = {
    "w": np.arange(24, dtype=np.float32).reshape(2, 3, 4),
    "h": np.linspace(0, 1, 7).astype(np.float16),
    "i": np.arange(5, dtype=np.int64),
    "u": np.arange(9, dtype=np.uint8).reshape(3, 3),
    "flag": np.array([True, False, True]),
    "big": np.arange(4, dtype=">f8"),
    "fortran": np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)),
}
DTYPES = {"w": "F32", "h": "F16", "i": "I64", "u": "U8", "flag": "BOOL", "big": "F64", "fortran": "F32"}


@pytest.mark.parametrize("protocol", [3, 4, 5])
def test_arrays_are_tensors_at_their_bytes(tmp_path: Path, protocol: int) -> None:
    path = tmp_path / "arrays.pkl"
    with open(path, "wb") as fh:
        pickle.dump(ARRAYS, fh, protocol=protocol)
    ckpt = load(path)
    check_invariants(ckpt)
    data = path.read_bytes()
    by_name = {t.name: t for t in ckpt.tensors}
    assert set(by_name) == set(ARRAYS)
    for name, array in ARRAYS.items():
        t = by_name[name]
        assert (t.shape, t.dtype, t.nbytes) == (array.shape, DTYPES[name], array.nbytes)
        assert t.offset is not None
        stored = data[t.offset : t.offset + t.nbytes]
        assert stored == (array.tobytes(order="F") if name == "fortran" else array.tobytes())
    assert by_name["big"].notes == ("big-endian",) and by_name["fortran"].notes == ("Fortran order",)
    assert ckpt.n_parameters == sum(a.size for a in ARRAYS.values())
    data_regions = [r for r in ckpt.regions if r.kind is RegionKind.TENSOR_DATA]
    assert sum(r.length for r in data_regions) == sum(a.nbytes for a in ARRAYS.values())
    assert ckpt.attributes["pickle.verdict"] == "inert data" and ckpt.attributes["pickle.streams"] == "1"


@pytest.mark.parametrize("protocol", [4, 5])
def test_their_values_stream_as_the_same_arrays_in_an_npz(
    tmp_path: Path, protocol: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--data` reads a pickle's arrays at their bytes (byte order and Fortran order as numpy stored them): `diff
    --data` against an npz of the same arrays finds every value equal."""
    import json

    path = tmp_path / "arrays.pkl"
    with open(path, "wb") as fh:
        pickle.dump(ARRAYS, fh, protocol=protocol)
    np.savez(tmp_path / "arrays.npz", **ARRAYS)
    capsys.readouterr()
    status = main(["diff", str(path), str(tmp_path / "arrays.npz"), "--data", "--json"])
    values = json.loads(capsys.readouterr().out)["values"]
    assert status == 0 and {v["a"] for v in values if v["equal"]} == set(ARRAYS)


def test_protocol_2_arrays_are_listed_without_an_offset(tmp_path: Path) -> None:
    """Python 3's protocol 2 writes an array's bytes as latin-1 text (`_codecs.encode`), UTF-8 in the file: the
    tensor is there, its bytes at no one offset, accounted inside the pickle's metadata."""
    path = tmp_path / "p2.pkl"
    with open(path, "wb") as fh:
        pickle.dump({"w": ARRAYS["w"], "h": ARRAYS["h"]}, fh, protocol=2)
    report = inspect(path)
    ckpt = report.checkpoint
    assert [(t.name, t.shape, t.dtype, t.offset) for t in ckpt.tensors] == [
        ("w", (2, 3, 4), "F32", None),
        ("h", (7,), "F16", None),
    ]
    assert all("latin-1 text" in t.notes[0] for t in ckpt.tensors)
    assert [r.kind for r in ckpt.regions] == [RegionKind.METADATA]
    from inspector.reconcile import NOT_STORED

    steps = {s.label: s.nbytes for s in report.accounting.steps}
    assert steps[NOT_STORED] == -(96 + 14)


def test_a_model_zoo_pickle_has_sections_kinds_and_aliases(tmp_path: Path) -> None:
    """Detectron's layout: {'model': {name: array}, '__author__': ...}; running statistics are buffers, the same
    array named twice is one tensor, arrays of objects and strings are the pickle's data, not tensors."""
    shared = np.ones((4, 3), np.float32)
    model = {
        "backbone.conv1.weight": np.zeros((8, 3, 3, 3), np.float32),
        "backbone.bn1.weight": np.ones(8, np.float32),
        "backbone.bn1.running_mean": np.zeros(8, np.float32),
        "head.weight": shared,
        "head_copy.weight": shared,
        "names": np.array(["a", "bb"]),
        "objects": np.array([{"x": 1}, None], dtype=object),
        "big": np.zeros((600, 600), np.float32),  # (over 1 MiB: passed over by the reader, located all the same)
    }
    path = tmp_path / "model_final.pkl"
    with open(path, "wb") as fh:
        pickle.dump({"model": model, "__author__": "Detectron", "matching_heuristics": True}, fh)
    ckpt = load(path)
    check_invariants(ckpt)
    by_name = {t.name: t for t in ckpt.tensors}
    assert set(by_name) == {f"model.{k}" for k in model if k not in ("names", "objects")}
    assert by_name["model.backbone.bn1.running_mean"].kind is TensorKind.BUFFER
    assert by_name["model.head_copy.weight"].alias_of == "model.head.weight"
    assert {t.section for t in ckpt.tensors} == {"model"}
    data = path.read_bytes()
    big = by_name["model.big"]
    assert big.offset is not None and data[big.offset : big.offset + big.nbytes] == model["big"].tobytes()
    assert ckpt.n_parameters == 8 * 27 + 8 + 12 + 360_000


def test_frombuffer_on_an_object_is_flagged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Protocol 5's `_frombuffer` reads a buffer: on bytes it is data, on an object the pickle builds it would call
    that object's buffer hook."""
    body = b"".join(
        [
            b"\x80\x05",
            b"cnumpy._core.numeric\n_frombuffer\n",
            b"(",
            b"clogging\nFileHandler\n)\x81",  # an object built by NEWOBJ, passed as the buffer
            b"cnumpy\ndtype\n(X\x02\x00\x00\x00f4\x89\x88tR",
            b"K\x02\x85X\x01\x00\x00\x00Ct",
            b"R.",
        ]
    )
    path = tmp_path / "frombuffer.pkl"
    path.write_bytes(body)
    capsys.readouterr()
    assert main([str(path)]) == 3
    assert "a buffer read by numpy _frombuffer" in capsys.readouterr().err


class _SharedData:
    """Pickled as numpy's own `_frombuffer` of one bytes object (pickle's memo writes it once, then refers to it)."""

    data = np.arange(6, dtype=np.float32).tobytes()

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape

    def __reduce__(self) -> tuple[object, ...]:
        from numpy._core.numeric import _frombuffer  # type: ignore[attr-defined]

        return (_frombuffer, (self.data, np.dtype("f4"), self.shape, "C"))


def test_two_arrays_of_one_bytes_value_are_one_tensor_and_an_alias(tmp_path: Path) -> None:
    path = tmp_path / "shared.pkl"
    with open(path, "wb") as fh:
        pickle.dump({"a": _SharedData((6,)), "b": _SharedData((2, 3))}, fh, protocol=5)
    loaded = pickle.loads(path.read_bytes())
    assert loaded["a"].tobytes() == loaded["b"].tobytes() and loaded["b"].shape == (2, 3)  # (numpy reads it so)
    ckpt = load(path)
    check_invariants(ckpt)
    a, b = ckpt.tensors
    assert (a.shape, b.shape, b.alias_of, a.offset == b.offset) == ((6,), (2, 3), "a", True)
    assert ckpt.n_parameters == 6


# -- joblib (`joblib.dump`: scikit-learn's models): each array's bytes follow its wrapper outside the opcodes --------


class Estimator:
    """A fitted model as scikit-learn keeps one: attributes, arrays among them (pickled by reference to this class)."""

    def __init__(self) -> None:
        self.coef_ = np.arange(12, dtype=np.float64).reshape(3, 4)
        self.intercept_ = np.zeros(3, np.float32)
        self.classes_ = np.array(["a", "bb", "ccc"])
        self.n_features_in_ = 4


class Payload:
    def __init__(self, canary: Path) -> None:
        self.canary = canary

    def __reduce__(self) -> tuple[object, ...]:
        import os

        return (os.system, (f"touch {self.canary}",))


JOBLIB_LOAD = "import joblib, sys; joblib.load(sys.argv[1])"
PICKLE_LOAD = "import pickle, sys; pickle.load(open(sys.argv[1], 'rb'))"


@pytest.mark.reference
@pytest.mark.parametrize("protocol", [3, 4, 5])
def test_joblib_arrays_are_tensors_at_their_bytes(tmp_path: Path, protocol: int) -> None:
    joblib = pytest.importorskip("joblib")
    arrays = {name: ARRAYS[name] for name in ("w", "i", "flag", "fortran")}
    path = tmp_path / "model.joblib"
    joblib.dump({"arrays": arrays, "estimator": Estimator(), "objects": np.array([1, "x"], dtype=object)}, path,
                protocol=protocol)  # fmt: skip
    ckpt = load(path)
    check_invariants(ckpt)
    data = path.read_bytes()
    by_name = {t.name: t for t in ckpt.tensors}
    for name, array in arrays.items():
        t = by_name[f"arrays.{name}"]
        assert (t.shape, t.dtype) == (array.shape, DTYPES[name]) and t.offset is not None
        assert data[t.offset : t.offset + t.nbytes] == array.tobytes(order="F" if name == "fortran" else "C")
    coef = by_name["estimator.coef_"]
    assert data[coef.offset : coef.offset + coef.nbytes] == Estimator().coef_.tobytes()
    # the strings' array is its bytes (not a tensor), the objects' array a pickle of its own: both the file's data
    assert "estimator.classes_" not in by_name and "objects" not in by_name
    assert ckpt.attributes["pickle.verdict"] == "inert data"


@pytest.mark.reference
@pytest.mark.parametrize("where", ["after an array", "inside an array of objects"])
def test_a_joblib_payload_beyond_an_array_is_found(
    tmp_path: Path, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """joblib reads each array's bytes itself and goes on: what follows (or what an array of objects, a pickle of its
    own read with joblib's `find_class`, holds) runs under `joblib.load`, and is reported (it read as no pickle)."""
    joblib = pytest.importorskip("joblib")
    import subprocess
    import sys

    canary = tmp_path / "canary"
    payload = Payload(canary)
    value = [np.arange(1000, dtype=np.float32), payload]
    if where != "after an array":
        value = [np.arange(10, dtype=np.float32), np.array([1, payload], dtype=object)]
    path = tmp_path / "evil.joblib"
    joblib.dump(value, path)
    subprocess.run([sys.executable, "-c", JOBLIB_LOAD, str(path)], cwd=tmp_path, capture_output=True, timeout=120)
    assert canary.exists(), "the payload must really run under joblib.load"
    canary.unlink()
    capsys.readouterr()
    assert main([str(path)]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "system" in err
    assert not canary.exists()


class _NoTell:
    """A stream joblib cannot ask its position (a pipe): it writes each array's bytes right after its wrapper."""

    def __init__(self) -> None:
        import io

        self.buffer = io.BytesIO()

    def write(self, data: bytes) -> int:
        return self.buffer.write(data)

    def tell(self) -> int:
        import io

        raise io.UnsupportedOperation("not seekable")


@pytest.mark.reference
def test_bytes_joblib_passes_over_are_opcodes_to_pickle(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An array's bytes, which joblib reads as data, are opcodes to `pickle.load` (and `torch.load`): a payload there
    runs under those, so a bare pickle holding joblib arrays is judged both ways."""
    joblib = pytest.importorskip("joblib")
    import subprocess
    import sys

    canary = tmp_path / "canary"
    hidden = f"cos\nsystem\n(S'touch {canary}'\ntR".encode()
    stream = _NoTell()
    joblib.dump([np.frombuffer(hidden, np.uint8)], stream, protocol=2)
    path = tmp_path / "hidden.joblib"
    path.write_bytes(stream.buffer.getvalue())
    subprocess.run([sys.executable, "-c", JOBLIB_LOAD, str(path)], cwd=tmp_path, capture_output=True, timeout=120)
    assert not canary.exists(), "joblib reads the bytes as the array's"
    subprocess.run([sys.executable, "-c", PICKLE_LOAD, str(path)], cwd=tmp_path, capture_output=True, timeout=120)
    assert canary.exists(), "pickle.load runs them"
    canary.unlink()
    capsys.readouterr()
    assert main([str(path)]) == 3 and "system" in capsys.readouterr().err


def test_a_value_graph_too_deep_to_walk_lists_no_arrays_and_keeps_the_verdict(tmp_path: Path) -> None:
    import sys

    deep: list[object] = []
    cur = deep
    for _ in range(1500):
        cur.append([])
        cur = cur[0]  # type: ignore[assignment]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(10_000)
    try:
        data = pickle.dumps([np.zeros(3, np.float32), deep], protocol=4)
    finally:
        sys.setrecursionlimit(limit)
    path = tmp_path / "deep.pkl"
    path.write_bytes(data)
    ckpt = load(path)
    check_invariants(ckpt)
    assert ckpt.tensors == () and ckpt.attributes["pickle.verdict"] == "inert data"
    assert {f.code for f in ckpt.findings} >= {"PICKLE_ARRAYS", "PICKLE_DATA"}


# -- joblib's compressed files: the whole stream through one compressor ---------------------------------------------


@pytest.mark.reference
@pytest.mark.parametrize("codec", ["zlib", "gzip", "bz2", "xz", "lzma", "lz4"])
def test_compressed_joblib_files_are_judged_and_their_arrays_listed(tmp_path: Path, codec: str) -> None:
    joblib = pytest.importorskip("joblib")
    if codec == "lz4":
        pytest.importorskip("lz4")  # (joblib writes and reads lz4 files with it)
    path = tmp_path / "model.joblib"
    joblib.dump({"coef": Estimator().coef_, "intercept": np.zeros(3, np.float32)}, path, compress=(codec, 3))
    ckpt = load(path)
    check_invariants(ckpt)
    assert ckpt.format == "joblib-compressed" and ckpt.attributes["joblib.compression"] == codec
    assert [(t.name, t.shape, t.dtype, t.offset) for t in ckpt.tensors] == [
        ("coef", (3, 4), "F64", None),
        ("intercept", (3,), "F32", None),
    ]
    assert all(f"of the {codec} stream" in t.notes[-1] for t in ckpt.tensors)
    assert [(r.kind, r.start, r.length) for r in ckpt.regions] == [(RegionKind.COMPRESSED, 0, path.stat().st_size)]
    assert ckpt.attributes["pickle.verdict"] == "inert data"


@pytest.mark.reference
def test_a_compressed_joblib_payload_is_found(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    joblib = pytest.importorskip("joblib")
    import subprocess
    import sys

    canary = tmp_path / "canary"
    path = tmp_path / "evil.joblib"
    joblib.dump([np.arange(1000, dtype=np.float32), Payload(canary)], path, compress=3)
    subprocess.run([sys.executable, "-c", JOBLIB_LOAD, str(path)], cwd=tmp_path, capture_output=True, timeout=120)
    assert canary.exists(), "the payload must really run under joblib.load"
    canary.unlink()
    capsys.readouterr()
    assert main([str(path)]) == 3 and "system" in capsys.readouterr().err
    assert not canary.exists()


@pytest.mark.reference
def test_an_lz4_joblib_payload_is_found_and_without_lz4_the_file_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    joblib = pytest.importorskip("joblib")
    pytest.importorskip("lz4")
    import subprocess
    import sys

    canary = tmp_path / "canary"
    path = tmp_path / "evil.joblib"
    joblib.dump([np.arange(1000, dtype=np.float32), Payload(canary)], path, compress="lz4")
    subprocess.run([sys.executable, "-c", JOBLIB_LOAD, str(path)], cwd=tmp_path, capture_output=True, timeout=120)
    assert canary.exists(), "the payload must really run under joblib.load"
    canary.unlink()
    capsys.readouterr()
    assert main([str(path)]) == 3 and "system" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "lz4.frame", None)  # (as where lz4 is not installed: its import fails)
    assert main([str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs the lz4 package" in err and str(path) in err and "Traceback" not in err
    assert not canary.exists()


def test_a_compressed_stream_that_is_corrupt_or_too_large_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import zlib

    from loaders import joblib_compressed

    stream = zlib.compress(pickle.dumps({"w": np.zeros(1000, np.float32)}, protocol=4))
    cut = tmp_path / "cut.joblib"
    cut.write_bytes(stream[: len(stream) // 2])
    large = tmp_path / "large.joblib"
    large.write_bytes(stream)
    monkeypatch.setattr(joblib_compressed, "MAX_INFLATED", 1000)
    for path, said in ((cut, "ends before its end"), (large, "decompresses beyond 1,000 bytes")):
        capsys.readouterr()
        assert main([str(path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and said in err and str(path) in err and "Traceback" not in err


# -- numpy arrays in torch's own files: other state, never parameters -------------------------------------------------


def _torch_checkpoint(torch: object) -> dict[str, object]:
    model = torch.nn.Linear(3, 2)  # type: ignore[attr-defined]
    return {
        "model": model.state_dict(),
        "mean": np.arange(12, dtype=np.float32).reshape(3, 4),
        "stats": {"var": np.linspace(0, 1, 5), "count": np.arange(4, dtype=">i4")},
        "rng": np.random.get_state(),
    }


@pytest.mark.reference
@pytest.mark.parametrize("zipped", [True, False])
@pytest.mark.parametrize("protocol", [2, 4])
def test_numpy_arrays_in_a_torch_checkpoint_are_other_state(tmp_path: Path, zipped: bool, protocol: int) -> None:
    """torch.save pickles numpy arrays inline in data.pkl (or the legacy file's object pickle): each is listed, of kind
    other (torch counts only its own tensors), at its bytes from protocol 3 on; torch.save's default protocol 2 writes
    them as latin-1 text, listed without an offset."""
    torch = pytest.importorskip("torch")
    path = tmp_path / "checkpoint.pt"
    torch.save(_torch_checkpoint(torch), path, pickle_protocol=protocol, _use_new_zipfile_serialization=zipped)
    saved = torch.load(path, weights_only=False)
    arrays = {
        "mean": saved["mean"],
        "stats.var": saved["stats"]["var"],
        "stats.count": saved["stats"]["count"],
        "rng.1": saved["rng"][1],
    }
    ckpt = load(path)
    check_invariants(ckpt)
    assert ckpt.format == ("pytorch-zip" if zipped else "pytorch-legacy")
    by_name = {t.name: t for t in ckpt.tensors}
    assert set(by_name) == {f"model.{k}" for k in saved["model"]} | set(arrays)
    assert ckpt.n_parameters == sum(v.numel() for v in saved["model"].values())
    raw = path.read_bytes()
    for name, array in arrays.items():
        t = by_name[name]
        assert (t.shape, t.nbytes, t.kind) == (array.shape, array.nbytes, TensorKind.OTHER)
        assert "not a torch tensor" in " ".join(t.notes)
        if protocol == 2:
            assert t.offset is None
        else:  # (the values torch.load gives, from the bytes at the offset in the byte order noted)
            assert t.offset is not None
            order = ">" if "big-endian" in t.notes else "<"
            stored = np.frombuffer(raw[t.offset : t.offset + t.nbytes], order + array.dtype.str[1:])
            assert np.array_equal(stored.reshape(array.shape), array)
    assert by_name["stats.count"].notes[0] == "big-endian"
    if protocol > 2:
        data = {r.subject or r.label for r in ckpt.regions if r.kind is RegionKind.TENSOR_DATA}
        assert set(arrays) <= data


@pytest.mark.reference
def test_a_torch_save_of_a_bare_array_names_it_array(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    path = tmp_path / "array.pt"
    torch.save(np.arange(6, dtype=np.int16), path, pickle_protocol=4)
    (t,) = load(path).tensors
    assert (t.name, t.shape, t.dtype, t.kind) == ("array", (6,), "I16", TensorKind.OTHER)
    assert path.read_bytes()[t.offset : t.offset + t.nbytes] == np.arange(6, dtype=np.int16).tobytes()
