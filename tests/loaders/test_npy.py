"""NumPy .npy and .npz: real files from numpy, compared with numpy's own reading of them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from inspector import load
from inspector.errors import FormatError, LimitExceededError
from inspector.probe import Probe
from inspector.records import RegionKind
from loaders.base import check_invariants
from tests.conftest import SAMPLES, fixture_path

NPY = ["big_endian.npy", "c_order.npy", "f_order.npy", "scalar.npy", "v3_utf8.npy"]


@pytest.mark.parametrize("name", NPY)
def test_npy_matches_numpy(name: str) -> None:
    path = fixture_path(f"numpy/{name}")
    ref = np.load(path, mmap_mode="r", max_header_size=1 << 20)
    ckpt = load(path)
    check_invariants(ckpt)
    (t,) = ckpt.tensors
    assert t.shape == ref.shape
    assert t.nbytes == ref.nbytes
    assert t.offset == ref.offset  # numpy's own data offset (memmap)
    assert ckpt.file_size == t.offset + t.nbytes


def test_npy_versions_and_notes() -> None:
    with pytest.raises(LimitExceededError):  # a 70,964-byte header: np.load refuses it too (max_header_size)
        load(fixture_path("numpy/v2_structured.npy"))
    assert load(fixture_path("numpy/v3_utf8.npy")).attributes["npy.version"] == "3.0"
    assert "big-endian" in load(fixture_path("numpy/big_endian.npy")).tensors[0].notes
    assert "Fortran order" in load(fixture_path("numpy/f_order.npy")).tensors[0].notes
    assert load(fixture_path("numpy/big_endian.npy")).tensors[0].dtype == "I32"


def test_object_array_reported_not_unpickled() -> None:
    ckpt = load(fixture_path("numpy/object.npy"))
    assert ckpt.tensors[0].dtype == "OBJECT"
    assert [f.code for f in ckpt.findings] == ["UNSAFE_CONTENT"]
    assert ckpt.tensors[0].nbytes == 159  # the pickled payload: file minus the 128-byte header


@pytest.mark.parametrize("name", ["stored.npz", "deflated.npz", "positional.npz"])
def test_npz_matches_numpy(name: str) -> None:
    path = fixture_path(f"numpy/{name}")
    ckpt = load(path)
    check_invariants(ckpt)
    with np.load(path) as z:
        assert {t.name: (t.shape, t.nbytes) for t in ckpt.tensors} == {k: (z[k].shape, z[k].nbytes) for k in z.files}
    assert not any(r.kind is RegionKind.UNKNOWN for r in ckpt.regions)


def test_npz_stored_offsets_and_deflated_compression() -> None:
    stored = load(fixture_path("numpy/stored.npz"))
    # FORMATS.md 5.2: the array lies at local header 30 + 9 ("zeros.npy") + 20 (zip64 extra) + 128 npy header
    assert [t.offset for t in stored.tensors] == [187, 262517, 524848]
    deflated = load(fixture_path("numpy/deflated.npz"))
    assert all(t.offset is None for t in deflated.tensors)
    compressed = [r for r in deflated.regions if r.kind is RegionKind.COMPRESSED]
    assert [r.length for r in compressed] == [355, 242852, 85]  # member compressed sizes (zip_accounting.txt)


@pytest.mark.parametrize("name", ["cnn_stored.npz", "cnn_compressed.npz"])
def test_samples_match_manifest(name: str) -> None:
    manifest = json.loads((SAMPLES / "basic" / "manifest.json").read_text())[name]
    ckpt = load(SAMPLES / "basic" / name)
    expected = {k: [shape, {"float32": "F32"}[dt]] for k, (shape, dt) in manifest["tensors"].items()}
    assert {t.name: [list(t.shape), t.dtype] for t in ckpt.tensors} == expected
    assert ckpt.n_parameters == manifest["n_parameters"]


def test_deflated_member_inflates_only_its_header(tmp_path: Path) -> None:
    path = tmp_path / "big.npz"
    rng = np.random.default_rng(0)
    np.savez_compressed(path, a=rng.standard_normal((1000, 1000)).astype("float32"))
    with Probe(path) as probe:
        from loaders.npy import NpzLoader

        ckpt = NpzLoader().load(probe)
        assert probe.bytes_read < 64 * 1024 < probe.size
    assert ckpt.tensors[0].shape == (1000, 1000)


def test_npy_bad_literal(tmp_path: Path) -> None:
    path = tmp_path / "bad.npy"
    header = b"{'descr': '<f4', 'shape': 'oops', 'fortran_order': False}".ljust(118) + b"\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header)
    with pytest.raises(FormatError, match="bad shape"):
        load(path)


def test_npy_deprecated_code_read_as_numpy_reads_it(tmp_path: Path) -> None:
    """A descr numpy 2 has deprecated ('a4', an alias of 'S4') is read as `np.load` reads it, without its warning (a
    byte flip of the hostile tests made one)."""
    path = tmp_path / "alias.npy"
    header = b"{'descr': '|a4', 'fortran_order': False, 'shape': (3,), }".ljust(117) + b"\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + b"abcdefghijkl")
    with pytest.warns(DeprecationWarning):
        assert np.load(path).dtype == np.dtype("S4")
    t = load(path).tensors[0]
    assert (t.dtype, t.shape, t.nbytes) == ("BYTES[4]", (3,), 12)


@pytest.mark.parametrize("order", [False, True])
@pytest.mark.parametrize("shape", [(), (5,), (0,), (2, 3), (1, 2, 3, 4), (10**12,)])
@pytest.mark.parametrize(
    "descr", ["<f4", ">i8", "|b1", "<c16", "<U3", "|S5", "<M8[ns]", [("a", "<f4"), ("b", "<i8", (2,))]]
)
def test_header_read_without_ast_is_what_ast_reads(descr: object, shape: tuple[int, ...], order: bool) -> None:
    """Headers as numpy writes them are read by a pattern (no `ast` import); the values are literal_eval's."""
    import ast
    import io

    from loaders.npy import _literal

    header = {"descr": descr, "fortran_order": order, "shape": shape}
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, header)
    raw = buf.getvalue()
    text = raw[10 : 10 + int.from_bytes(raw[8:10], "little")].decode("latin-1")
    assert _literal(text, 1) == ast.literal_eval(text)
    assert type(_literal(text, 1)["shape"]) is tuple


@pytest.mark.parametrize(
    "text",
    [
        "{'descr': '<f4', 'fortran_order': False, 'shape': (5), }",  # an int, not a tuple: refused later
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3,), }",
        "{'shape': (2,), 'fortran_order': False, 'descr': '<f4'}",  # another order: ast's reading
        "{'descr': 'it\\'s', 'fortran_order': False, 'shape': (2,), }",
    ],
)
def test_other_header_spellings_read_as_ast_reads_them(text: str) -> None:
    import ast

    from loaders.npy import _literal

    assert _literal(text, 3) == ast.literal_eval(text)
    with pytest.raises(SyntaxError):
        _literal("{'descr': '<f4', 'fortran_order': False, 'shape': (05,), }", 3)  # leading zero: ast refuses
