"""`loaders._miniz.Lookup` against torch's own zip reader: which member it finds for a name, among names equal but for
case and exact duplicates."""

from __future__ import annotations

import os
import warnings
import zipfile
from pathlib import Path

import pytest

from loaders._miniz import Lookup

POOL = ["a/data.pkl", "a/DATA.PKL", "a/Data.pkl", "a/data/0", "a/data/1", "a/DATA/0", "a/byteorder", "a/x",
        "a/data.pk", "a/data.pkl2", "a/ZZZ", "a/.data/serialization_id", "a/constants.pkl"]  # fmt: skip
ASKED = ["data.pkl", "DATA.PKL", "data/0", "data/1", "byteorder", "constants.pkl", "missing"]


def _torch_finds(path: Path, names: list[str]) -> dict[str, int | None]:
    """What torch's reader gives for each asked name: the member's index (each member holds its index), or None."""
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings(), zipfile.ZipFile(path, "w") as zf:
        warnings.simplefilter("ignore")  # (duplicate names)
        for i, name in enumerate(names):
            zf.writestr(name, b"3" if name == "a/version" else str(i).encode())
    reader = torch._C.PyTorchFileReader(str(path))
    found: dict[str, int | None] = {}
    for asked in ASKED:
        try:
            found[asked] = int(bytes(reader.get_record(asked)))
        except RuntimeError:
            found[asked] = None
    return found


@pytest.mark.reference
def test_a_duplicate_is_found_as_torch_finds_it(tmp_path: Path) -> None:
    """Two copies of data.pkl: torch reads the first of these eight members (a CI run of the zip mutation test
    found it), and of these three the first or the last by where the other name stands; so does `Lookup`."""
    first = ["a/data.pkl", "a/byteorder", "a/data.pkl", "a/.format_version", "a/data/0", "a/version",
             "a/.data/serialization_id", "a/.storage_alignment"]  # fmt: skip
    before, after = ["a/data.pkl", "a/data.pkl", "a/version"], ["a/data.pkl", "a/version", "a/data.pkl"]
    assert _torch_finds(tmp_path / "first.pt", first)["data.pkl"] == Lookup(first)("a/data.pkl") == 0
    assert _torch_finds(tmp_path / "before.pt", before)["data.pkl"] == Lookup(before)("a/data.pkl") == 0
    assert _torch_finds(tmp_path / "after.pt", after)["data.pkl"] == Lookup(after)("a/data.pkl") == 2
    assert Lookup(after)("a/DATA.pkl") == 2 and Lookup(after)("a/missing") is None


@pytest.mark.reference
def test_property_locate_is_torchs_reader(tmp_path: Path) -> None:
    """Random archives of names equal but for case, duplicated, and others around them: every asked name is found
    (or not) as torch's reader finds it."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    @settings(max_examples=int(os.environ.get("MINIZ_EXAMPLES", "150")), deadline=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(names=st.lists(st.sampled_from(POOL), min_size=1, max_size=40), at=st.integers(0, 40))
    def check(names: list[str], at: int) -> None:
        names.insert(at % (len(names) + 1), "a/version")  # (torch reads it first: one copy, a number)
        found = _torch_finds(tmp_path / "m.pt", names)
        lookup = Lookup(names)
        for asked, index in found.items():
            assert lookup("a/" + asked) == index, (names, asked)

    check()


@pytest.mark.reference
@pytest.mark.parametrize("first", [True, False])
def test_the_report_reads_the_data_pkl_torch_reads(tmp_path: Path, first: bool) -> None:
    """Two data.pkl, each a state dict of one tensor on the same storage: in the member order a CI run of the zip
    mutation test made, torch.load reads the first copy; with the second copy moved to the end, the last. The report
    lists the tensor of the copy torch reads (it listed the last copy's always), and says which copy that is."""
    torch = pytest.importorskip("torch")
    from inspector import load

    torch.save({"w": torch.ones(2)}, tmp_path / "w.pt")
    torch.save({"v": torch.ones(2)}, tmp_path / "v.pt")
    with zipfile.ZipFile(tmp_path / "w.pt") as zf:
        members = {name.split("/", 1)[1]: zf.read(name) for name in zf.namelist()}
    with zipfile.ZipFile(tmp_path / "v.pt") as zf:
        other = next(zf.read(name) for name in zf.namelist() if name.endswith("/data.pkl"))
    order = ["byteorder", "data.pkl", ".format_version", "data/0", "version", ".data/serialization_id",
             ".storage_alignment"]  # fmt: skip
    if not first:
        order = [*order[:1], *order[2:], "data.pkl"]
    path = tmp_path / "two.pt"
    with warnings.catch_warnings(), zipfile.ZipFile(path, "w") as zf:
        warnings.simplefilter("ignore")  # (the duplicate name)
        zf.writestr("a/data.pkl", other)
        for name in order:
            if name in members:
                zf.writestr("a/" + name, members[name])
    loaded = torch.load(path, weights_only=True)
    assert list(loaded) == (["v"] if first else ["w"])
    ckpt = load(path)
    assert [t.name for t in ckpt.tensors] == list(loaded)
    layout = [f for f in ckpt.findings if f.code == "ZIP_LAYOUT"]
    assert layout and "torch reads the copy its zip reader's lookup finds" in layout[0].message


@pytest.mark.reference
def test_a_data_pkl_named_in_another_case_is_read(tmp_path: Path) -> None:
    """torch finds `archive/DATA.PKL` for data.pkl: such an archive was "not a recognised checkpoint format" (exit 2,
    its pickle unjudged); now it is read as torch reads it, and a payload in it is exit 3."""
    torch = pytest.importorskip("torch")
    from inspector import load
    from inspector.cli import main
    from tests.test_safety import P2, file_handler, text

    torch.save({"w": torch.ones(2)}, tmp_path / "c.pt")
    with zipfile.ZipFile(tmp_path / "c.pt") as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    for evil in (False, True):
        path = tmp_path / ("evil.pt" if evil else "upper.pt")
        with zipfile.ZipFile(path, "w") as zf:
            for name, data in members.items():
                if name.endswith("/data.pkl"):
                    name = name.replace("data.pkl", "DATA.PKL")
                    data = P2 + b"}(" + text("w") + file_handler(tmp_path / "canary") + b"u." if evil else data
                zf.writestr(name, data)
        if evil:
            assert main([str(path)]) == 3
            assert not (tmp_path / "canary").exists()
        else:
            ckpt = load(path)
            assert (
                [(t.name, t.shape) for t in ckpt.tensors]
                == [("w", (2,))]
                == [(k, tuple(v.shape)) for k, v in torch.load(path, weights_only=True).items()]
            )
