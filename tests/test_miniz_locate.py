"""`loaders._miniz.locate` against torch's own zip reader: which member it finds for a name, among names equal but for
case and exact duplicates."""

from __future__ import annotations

import os
import warnings
import zipfile
from pathlib import Path

import pytest

from loaders._miniz import locate

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
    found it), and of these three the first or the last by where the other name stands; so does `locate`."""
    first = ["a/data.pkl", "a/byteorder", "a/data.pkl", "a/.format_version", "a/data/0", "a/version",
             "a/.data/serialization_id", "a/.storage_alignment"]  # fmt: skip
    before, after = ["a/data.pkl", "a/data.pkl", "a/version"], ["a/data.pkl", "a/version", "a/data.pkl"]
    assert _torch_finds(tmp_path / "first.pt", first)["data.pkl"] == locate(first, "a/data.pkl") == 0
    assert _torch_finds(tmp_path / "before.pt", before)["data.pkl"] == locate(before, "a/data.pkl") == 0
    assert _torch_finds(tmp_path / "after.pt", after)["data.pkl"] == locate(after, "a/data.pkl") == 2
    assert locate(after, "a/DATA.pkl") == 2 and locate(after, "a/missing") is None


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
        for asked, index in found.items():
            assert locate(names, "a/" + asked) == index, (names, asked)

    check()
