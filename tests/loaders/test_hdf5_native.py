"""The native HDF5 metadata reader gives h5py's walk exactly, or steps aside for h5py; a report never differs.

Every HDF5 file of sample_models/ and the shared fixtures, files written here by Keras 3, tf-keras and h5py
(layouts, filters, attribute types, nested groups, a B-tree that splits, a user block), and files outside the
reader's subset (libver='latest', new-style groups, soft links, compound types): the native `H5Walk` equals the
one h5py's forked child gives, field by field, or the reader refuses and `walk()` gives h5py's; and the JSON
and text reports are identical with the native reader on and off.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import h5py
import numpy as np
import pytest

from inspector.cli import main
from inspector.errors import InspectorError
from inspector.probe import Probe
from inspector.records import RegionKind
from loaders import _hdf5, _hdf5_native
from tests.conftest import FIXTURES, ROOT, SAMPLES

SUFFIXES = (".h5", ".hdf5", ".keras")


def _real_files() -> list[Path]:
    roots = [SAMPLES, FIXTURES / "hdf5", FIXTURES / "keras"]
    return sorted(p for root in roots if root.is_dir() for p in root.rglob("*") if p.suffix in SUFFIXES)


def _windows(path: Path) -> Iterator[tuple[Probe, int, int]]:
    """The HDF5 data of a file: the whole file, or each .h5 member of a zip (read in place, as keras_zip does)."""
    probe = Probe(path)
    members = probe.zip_members
    if members is None:
        yield probe, 0, probe.size
        return
    for m in members:
        if m.name.endswith(".h5"):
            yield probe, m.data_offset, m.compress_size


def _assert_same_walk(path: Path, native_expected: bool = True) -> None:
    """The native walk equals h5py's (`_walk_here`: the child's code, run in this process) field by field."""
    for probe, start, length in _windows(path):
        reference = _hdf5._walk_here(probe, "hdf5", start, length)
        if not native_expected:
            with pytest.raises(_hdf5_native.Unsupported):
                _hdf5_native.walk(probe, start, length)
            continue
        native = _hdf5_native.walk(probe, start, length)
        # field by field, then whole; repr compares attribute order and NaN values too
        assert native.superblock == reference.superblock
        assert repr(native.datasets) == repr(reference.datasets)
        assert native.regions == reference.regions
        assert native.sized_only == reference.sized_only
        assert repr(native.attrs) == repr(reference.attrs)
        assert repr(native.group_attrs) == repr(reference.group_attrs)
        assert repr(native) == repr(reference)


def _assert_same_walk_through_walk(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`_hdf5.walk` (native or its fallback, then refined) equals the walk forced through the h5py child."""
    for probe, start, length in _windows(path):
        ours = _hdf5.walk(probe, "hdf5", start, length)
        with monkeypatch.context() as m:
            m.setenv(_hdf5.READER_ENV, "h5py")
            theirs = _hdf5.walk(Probe(path), "hdf5", start, length)
        assert repr(ours) == repr(theirs)


def _reports(path: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """Exit code, output and errors of the JSON and the text report."""
    out = []
    for args in ([str(path), "--json"], [str(path)]):
        code = main(args)
        captured = capsys.readouterr()
        out.append(f"{code}\n{captured.out}\n{captured.err}")
    return out


def _assert_same_reports(path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    native = _reports(path, capsys)
    monkeypatch.setenv(_hdf5.READER_ENV, "h5py")
    reference = _reports(path, capsys)
    monkeypatch.delenv(_hdf5.READER_ENV)
    assert native == reference


# -- every real file ------------------------------------------------------------------------------------------

REAL = _real_files()
OUTSIDE = {"superblock_v3_libver_latest.h5"}  # v2 object headers: read by h5py


@pytest.mark.parametrize("path", REAL, ids=lambda p: str(p.relative_to(ROOT.parent)))
def test_real_files_native_walk_equals_h5py(
    path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _assert_same_walk(path, native_expected=path.name not in OUTSIDE)
    _assert_same_walk_through_walk(path, monkeypatch)
    _assert_same_reports(path, capsys, monkeypatch)


def test_real_files_were_found() -> None:
    assert len([p for p in REAL if p.is_relative_to(SAMPLES)]) >= 11


# -- files written here by h5py -------------------------------------------------------------------------------


def _layouts(f: h5py.File) -> None:
    rng = np.random.default_rng(0)
    f.create_dataset("contiguous", data=rng.standard_normal((7, 5)).astype("f4"))
    f.create_dataset("gzip", data=np.arange(5000, dtype="i8").reshape(50, 100), chunks=(16, 32), compression="gzip")
    f.create_dataset("shuffled", data=np.arange(999, dtype="<u2"), chunks=(100,), shuffle=True, fletcher32=True)
    compact = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    compact.set_layout(h5py.h5d.COMPACT)
    f.create_dataset("compact", data=np.arange(6, dtype="i2"), dcpl=compact)
    f.create_dataset("never_written", shape=(10, 3), dtype="f8")
    f.create_dataset("chunked_never_written", shape=(100,), dtype="f4", chunks=(10,))
    f.create_dataset("partly_written", shape=(100,), dtype="f4", chunks=(10,), maxshape=(None,))[25:35] = 1
    f.create_dataset("scalar", data=np.float64(2.5))
    f.create_dataset("empty", shape=(0,), dtype="f4")
    f.create_dataset("big_endian", data=np.arange(12, dtype=">f4").reshape(3, 4))
    f.create_dataset("half", data=np.ones((4, 4), "f2"))
    f.create_dataset("bools", data=np.array([True, False, True]))
    f.create_dataset("fixed_strings", data=np.array([b"ab", b"cde"]))
    f.create_dataset("vlen_strings", data=["x", "yz"], dtype=h5py.string_dtype())
    f.create_dataset("opaque_bf16", data=np.zeros(4, "V2")).attrs["dtype"] = "bfloat16"
    f.create_dataset("opaque_other", data=np.zeros(4, "V3")).attrs["dtype"] = np.bytes_(b"mystery")
    f.create_dataset("ints", data=np.arange(8, dtype="i1"))
    f.create_dataset("rank4", data=np.zeros((2, 3, 4, 5), "u8"), chunks=(1, 3, 2, 5))
    f.create_dataset("timed", data=np.zeros(3), track_times=True)  # a modification time message
    f.create_dataset("filled", data=np.zeros(3), fillvalue=7.0)  # a fill value message with its value
    f.create_dataset("scale_offset", data=np.arange(100, dtype="i4"), chunks=(10,), scaleoffset=0)
    f.create_dataset("lzf", data=np.arange(100, dtype="f4"), chunks=(10,), compression="lzf")


def _attributes(f: h5py.File) -> None:
    g = f.create_group("attributes")
    g.attrs["vlen"] = "héllo"
    g.attrs["vlen_list"] = ["a", "bc", ""]
    g.attrs["vlen_2d"] = np.array([["a", "b"], ["c", "d"]], dtype=h5py.string_dtype())
    g.attrs["fixed"] = np.bytes_(b"fixed\0")
    g.attrs["fixed_embedded_nul"] = np.array(b"a\0b", dtype="S5")
    g.attrs["fixed_list"] = np.array([b"layer_1", b"l2"])
    g.attrs["fixed_2d"] = np.array([[b"a", b"bb"], [b"c", b"d"]])
    g.attrs["utf8_fixed"] = np.array("ünï".encode(), dtype=h5py.string_dtype("utf-8", 8))
    g.attrs["int"] = 7
    g.attrs["negative"] = np.int8(-3)
    g.attrs["uint64"] = np.uint64(2**64 - 1)
    g.attrs["float"] = 0.1
    g.attrs["float32"] = np.float32(0.1)
    g.attrs["float16"] = np.float16(1 / 3)
    g.attrs["nan"] = np.float32("nan")
    g.attrs["bool"] = True
    g.attrs["bools"] = np.array([True, False])
    g.attrs["ints"] = np.arange(5, dtype="i4")
    g.attrs["big_endian"] = np.arange(3, dtype=">i8")
    g.attrs["floats_2d"] = np.arange(6, dtype="f4").reshape(2, 3) / 7
    g.attrs["empty_array"] = np.zeros((0,), "f4")
    g.attrs["empty_2d"] = np.zeros((2, 0), "i4")
    g.attrs["b"] = 1  # names sorted as bytes: "B" < "b" < "vlen"
    g.attrs["B"] = 2
    g.attrs["ünicode name"] = 3
    d = g.create_dataset("with_attrs", data=np.zeros(3, "f4"))
    d.attrs["z"] = "last"
    d.attrs["a"] = np.arange(3, dtype="f8")
    f.attrs["root"] = "root attribute"
    f.attrs["model_config"] = b'{"class_name": "Sequential", "config": {"layers": []}}'


def _null_terminated_attribute(f: h5py.File) -> None:
    """A fixed-length string attribute with NULLTERM padding (as C programs write), read up to its first NUL."""
    tid = h5py.h5t.C_S1.copy()
    tid.set_size(8)
    tid.set_strpad(h5py.h5t.STR_NULLTERM)
    attr = h5py.h5a.create(f.id, b"nullterm", tid, h5py.h5s.create(h5py.h5s.SCALAR))
    attr.write(np.array(b"ab\0cd", dtype="S8"), mtype=tid)
    f.create_dataset("d", data=np.zeros(2, "f4"))


def _nested(f: h5py.File) -> None:
    level = f
    for depth in range(6):
        level = level.create_group(f"level{depth}")
        level.create_dataset(f"w{depth}", data=np.full(depth + 1, depth, "f4"))
        level.create_group("empty")
    f["hard_link"] = f["level0/w0"]  # a second name of an object: reported once, under its first name
    f.create_dataset("intermediate/groups/made", data=np.zeros(2, "f4"))  # as Keras 2 writes 'dense/kernel:0'


def _many_members(f: h5py.File) -> None:
    """Enough names that the symbol table B-tree has more than one level (2 K SNODs of 2 leaf-K entries)."""
    g = f.create_group("many")
    for i in range(700):
        g.create_dataset(f"d{i:04d}" if i % 2 else f"x{i}", data=np.array([i], "i4"))
    for i in range(120):
        f.create_group(f"g{i}").attrs["i"] = i


def _continuations(f: h5py.File) -> None:
    """Attributes added after the objects are made spill into continuation blocks of their headers."""
    d = f.create_dataset("d", data=np.zeros(3, "f4"))
    for i in range(40):
        d.attrs[f"attr{i:02d}"] = np.arange(i + 1, dtype="f8")
        f.attrs[f"root{i:02d}"] = "x" * (i * 10)


def _keras_like(f: h5py.File) -> None:
    """A Keras 2 layout with its layer_names / weight_names attributes split across several attributes."""
    weights = f.create_group("model_weights")
    names = [f"dense_{i}".encode() for i in range(30)]
    weights.attrs["layer_names0"] = np.array(names[:15])
    weights.attrs["layer_names1"] = np.array(names[15:])
    for name in names:
        g = weights.create_group(name.decode())
        g.attrs["weight_names"] = np.array([name + b"/kernel:0", name + b"/bias:0"])
        g.create_dataset(f"{name.decode()}/kernel:0", data=np.zeros((2, 2), "f4"))
        g.create_dataset(f"{name.decode()}/bias:0", data=np.zeros(2, "f4"))
    f.attrs["keras_version"] = "2.21.0"
    f.attrs["backend"] = "tensorflow"


NATIVE_CASES: dict[str, Callable[[h5py.File], None]] = {
    "layouts": _layouts,
    "attributes": _attributes,
    "nullterm": _null_terminated_attribute,
    "nested": _nested,
    "many_members": _many_members,
    "continuations": _continuations,
    "keras_like": _keras_like,
}


def _latest(f: h5py.File) -> None:
    f.create_dataset("a", data=np.arange(10, dtype="f4"))
    f.create_group("g").attrs["x"] = "y"


def _track_order(f: h5py.File) -> None:
    f.create_group("ordered", track_order=True).create_dataset("b", data=np.zeros(2))


def _soft_link(f: h5py.File) -> None:
    f.create_dataset("target", data=np.zeros(2))
    f["soft"] = h5py.SoftLink("/target")


def _non_ascii_names(f: h5py.File) -> None:
    """A UTF-8 link name cannot go in a symbol table: the library adds link messages to the group's header."""
    f.create_group("ünïcode").create_group("名前").create_dataset("x", data=np.zeros(2, "f4"))


def _compound(f: h5py.File) -> None:
    f.create_dataset("pairs", data=np.zeros(3, dtype=[("a", "f4"), ("b", "i2")]))


def _complex(f: h5py.File) -> None:
    f.create_dataset("c", data=np.ones(3, "c8"))


def _empty_attribute(f: h5py.File) -> None:
    f.create_dataset("d", data=np.zeros(2))
    f.attrs["nothing"] = h5py.Empty("f4")


def _datetime(f: h5py.File) -> None:
    f.create_dataset("t", data=np.array(["2024-01-01"], dtype="M8[D]").view(h5py.opaque_dtype("M8[D]")))


def _named_type(f: h5py.File) -> None:
    f["my_type"] = np.dtype("f4")
    f.create_dataset("d", data=np.zeros(2, "f4"))


def _many_empty_rows(f: h5py.File) -> None:
    """An attribute of shape (100000, 0): no data, but 100,000 empty lists as h5py reads it (over the reader's cap)."""
    f.create_dataset("d", data=np.zeros(2))
    f.attrs["rows"] = np.zeros((100_000, 0), "f4")


FALLBACK_CASES: dict[str, Callable[[h5py.File], None]] = {
    "many_empty_rows": _many_empty_rows,
    "libver_latest": _latest,
    "track_order": _track_order,
    "soft_link": _soft_link,
    "non_ascii_names": _non_ascii_names,
    "compound": _compound,
    "complex": _complex,
    "empty_attribute": _empty_attribute,
    "numpy_opaque": _datetime,
    "named_datatype": _named_type,
}
OPEN_OPTIONS = {"libver_latest": {"libver": "latest"}}


@pytest.mark.parametrize("userblock", [0, 1024], ids=["plain", "userblock"])
@pytest.mark.parametrize("case", sorted(NATIVE_CASES))
def test_h5py_files_native_walk_equals_h5py(
    tmp_path: Path, case: str, userblock: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / f"{case}.h5"
    with h5py.File(path, "w", userblock_size=userblock) as f:
        NATIVE_CASES[case](f)
    _assert_same_walk(path)
    _assert_same_walk_through_walk(path, monkeypatch)
    _assert_same_reports(path, capsys, monkeypatch)


@pytest.mark.parametrize("case", sorted(FALLBACK_CASES))
def test_h5py_files_outside_the_subset_fall_back(
    tmp_path: Path, case: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / f"{case}.h5"
    with h5py.File(path, "w", **OPEN_OPTIONS.get(case, {})) as f:
        FALLBACK_CASES[case](f)
    _assert_same_walk(path, native_expected=False)
    _assert_same_walk_through_walk(path, monkeypatch)
    _assert_same_reports(path, capsys, monkeypatch)


def test_a_b_tree_of_several_levels_is_read(tmp_path: Path) -> None:
    """The many-members case really splits its symbol table B-tree (the root node is not a leaf)."""
    path = tmp_path / "many.h5"
    with h5py.File(path, "w") as f:
        _many_members(f)
    probe = Probe(path)
    reader = _hdf5_native.Reader(probe, 0, probe.size)
    root = dict(reader.header(reader.root).messages)
    many = dict(reader.group_links(root[_hdf5_native.SYMBOL_TABLE])[0])[b"many"]
    links, _, _ = reader.group_links(dict(reader.header(many).messages)[_hdf5_native.SYMBOL_TABLE])
    assert reader.btree_nodes > 2 and len(links) == 700
    assert [name for name, _ in links] == sorted(name for name, _ in links)


@pytest.mark.parametrize("path", [p for p in REAL if p.name not in OUTSIDE], ids=lambda p: p.name)
def test_native_reads_metadata_only(path: Path) -> None:
    """Every byte range the reader reads lies inside the HDF5 data and clear of every dataset's stored bytes."""
    for probe, start, length in _windows(path):
        reads: dict[tuple[int, int], bytes] = {}
        walked = _hdf5_native.walk(probe, start, length, reads)
        data = [r for r in walked.regions if r.kind in (RegionKind.TENSOR_DATA, RegionKind.COMPRESSED)]
        assert reads  # (files with no dataset have no data to avoid)
        for at, n in reads:
            assert start <= at and at + n <= start + length
            assert not [r for r in data if r.start < at + n and at < r.end], (at, n)


@pytest.mark.parametrize(
    ("cap", "value"), [("MAX_BYTES", 4096), ("MAX_OBJECTS", 5), ("MAX_BTREE_LEVEL", 0), ("MAX_HEAP_BYTES", 64)]
)
def test_a_cap_passed_sends_the_file_to_h5py(
    tmp_path: Path, cap: str, value: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "many.h5"
    with h5py.File(path, "w") as f:
        _many_members(f)
    monkeypatch.setattr(_hdf5_native, cap, value)
    probe = Probe(path)
    with pytest.raises(_hdf5_native.Unsupported):
        _hdf5_native.walk(probe, 0, probe.size)
    _assert_same_walk_through_walk(path, monkeypatch)


# -- corrupt files: exactly what h5py's walk gave ----------------------------------------------------------


def _mutations(data: bytes) -> Iterator[tuple[str, bytes]]:
    yield "truncated", data[: len(data) // 2]
    for at in range(0, min(len(data), 4096), 73):
        yield f"byte{at}", data[:at] + bytes([data[at] ^ 0x5A]) + data[at + 1 :]


def _walk_or_error(path: Path, monkeypatch: pytest.MonkeyPatch, h5py_only: bool) -> str:
    with monkeypatch.context() as m:
        if h5py_only:
            m.setenv(_hdf5.READER_ENV, "h5py")
        try:
            return repr(_hdf5.walk(Probe(path), "hdf5"))
        except InspectorError as exc:
            return f"{type(exc).__name__}: {exc}"


@pytest.mark.parametrize("name", ["keras/k2_model.h5", "keras/k3.weights.h5", "hdf5/layouts.h5"])
def test_corrupt_files_behave_as_with_h5py(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutated metadata bytes: the walk (placed), or the error, is the same as through h5py's child alone.

    (The reader was hardened this way: each check the library makes that it lacked showed up as a mutation
    h5py refused, or read differently, and the native reader read.)"""
    source = FIXTURES / name
    if not source.exists():
        pytest.skip(f"shared fixture {name} not available")
    for label, mutated in _mutations(source.read_bytes()):
        path = tmp_path / f"{label}.h5"
        path.write_bytes(mutated)
        assert _walk_or_error(path, monkeypatch, False) == _walk_or_error(path, monkeypatch, True), label


# -- files written by Keras 3 and tf-keras ------------------------------------------------------------------


def _keras_model(keras: object) -> object:
    k = keras  # type: ignore[assignment]
    model = k.Sequential(  # type: ignore[attr-defined]
        [
            k.Input((6,)),  # type: ignore[attr-defined]
            k.layers.Embedding(20, 4),  # type: ignore[attr-defined]
            k.layers.LSTM(5),  # type: ignore[attr-defined]
            k.layers.BatchNormalization(),  # type: ignore[attr-defined]
            k.layers.Dense(3),  # type: ignore[attr-defined]
        ]
    )
    model.compile(optimizer="adam", loss="mse")  # type: ignore[attr-defined]
    model.fit(np.zeros((4, 6), "i4"), np.zeros((4, 3), "f4"), epochs=1, verbose=0)  # type: ignore[attr-defined]
    return model


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")
def test_keras3_files(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    pytest.importorskip("torch")
    keras = pytest.importorskip("keras")
    model = _keras_model(keras)
    paths = [tmp_path / "m.weights.h5", tmp_path / "m.keras", tmp_path / "legacy.h5"]
    model.save_weights(paths[0])  # type: ignore[attr-defined]
    model.save(paths[1])  # type: ignore[attr-defined]
    model.save(paths[2])  # type: ignore[attr-defined]
    bf16 = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, dtype="bfloat16")])
    bf16.save_weights(tmp_path / "bf16.weights.h5")
    paths.append(tmp_path / "bf16.weights.h5")
    for path in paths:
        _assert_same_walk(path)
        _assert_same_walk_through_walk(path, monkeypatch)
        _assert_same_reports(path, capsys, monkeypatch)


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")
def test_tf_keras_files(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    tf_keras = pytest.importorskip("tf_keras")
    model = _keras_model(tf_keras)
    paths = [tmp_path / "model.h5", tmp_path / "weights.h5"]
    model.save(paths[0])  # type: ignore[attr-defined]
    model.save_weights(paths[1])  # type: ignore[attr-defined]
    for path in paths:
        _assert_same_walk(path)
        _assert_same_walk_through_walk(path, monkeypatch)
        _assert_same_reports(path, capsys, monkeypatch)


# -- what a Keras HDF5 run imports ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "relative", ["keras/adam_trained_legacy.h5", "keras/adam_trained.weights.h5", "keras/adam_trained.keras"]
)
def test_a_keras_report_imports_neither_h5py_nor_numpy(relative: str) -> None:
    code = (
        "import sys\n"
        "from inspector.cli import main\n"
        "code = main([sys.argv[1], '--json'])\n"
        "print(sorted(m for m in ('h5py', 'numpy') if m in sys.modules), code, file=sys.stderr)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(SAMPLES / relative)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.stderr.strip().splitlines()[-1] == "[] 0"
