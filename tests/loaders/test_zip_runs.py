"""The zip reader's runs (issue 16): a plain central directory read a block of entries of one shape at a time, the
local headers of the members a window holds read together, the windows' members planned in C calls, and the members
kept as columns. Each is checked against the member-by-member reading it replaces (the same reader with the runs
turned off) on archives torch.save, numpy and zipfile write, and on damaged copies of them: the same members,
regions, reads and errors."""

from __future__ import annotations

import random
import struct
import zipfile
from pathlib import Path
from typing import Any

import pytest

from inspector.probe import Probe
from loaders import _zip, _zip_runs
from loaders.base import check_invariants
from tests.conftest import record_reads


def _one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reader without its runs: every entry, member and window planned one at a time."""
    monkeypatch.setattr(_zip, "RUNS_FROM", _zip.MAX_MEMBERS + 1)


def _reading(path: Path, monkeypatch: pytest.MonkeyPatch, skip_broken: bool = False) -> tuple[Any, ...]:
    """What the reader gives for `path` (members, regions, notes, names' listing; or the error), and its reads."""
    reads = record_reads(monkeypatch)
    with Probe(path) as probe:
        try:
            if skip_broken:
                got: tuple[Any, ...] = (list(_zip.readable_members(probe, "zip")),)
            else:
                members, regions = _zip.read_zip(probe, "zip")
                got = (list(members), list(regions), probe.cache.get("zip notes"), probe.zip_names)
        except Exception as exc:  # noqa: BLE001 - the error is what is compared
            got = (type(exc), str(exc), getattr(exc, "offset", None))
    monkeypatch.undo()
    return got, [(at, n) for _, at, n in reads]


def _both(path: Path, monkeypatch: pytest.MonkeyPatch, skip_broken: bool = False) -> tuple[Any, Any, dict[str, int]]:
    """The reading with runs (and how many members each kind of run read) and the reading one by one."""
    counted = {"entries": 0, "uniform": 0, "gathered": 0}
    plain_entries, uniform, plain = _zip_runs.plain_entries, _zip_runs._uniform_members, _zip_runs._plain_members

    def entries(cd: bytes, n_total: int, bounds: list[int]) -> Any:
        columns = plain_entries(cd, n_total, bounds)
        counted["entries"] += 0 if columns is None else len(columns[0])
        return columns

    def one_shape(*args: Any) -> bool:
        done = uniform(*args)
        counted["uniform"] += args[6] - args[5] if done else 0
        return done

    def gathered(*args: Any) -> int:
        n = plain(*args)
        counted["gathered"] += n
        return n

    with monkeypatch.context() as patched:
        patched.setattr(_zip_runs, "plain_entries", entries)
        patched.setattr(_zip_runs, "_uniform_members", one_shape)
        patched.setattr(_zip_runs, "_plain_members", gathered)
        fast = _reading(path, monkeypatch, skip_broken)
    with monkeypatch.context() as patched:
        _one_by_one(patched)
        slow = _reading(path, monkeypatch, skip_broken)
    return fast, slow, counted


@pytest.fixture(scope="module")
def archives(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """torch.save's archives of many small storages (of one size; of sizes that differ, some past a page), numpy's
    npz and a deflated zipfile archive: each of `RUNS_FROM` members or more, read in runs."""
    torch = pytest.importorskip("torch")
    np = pytest.importorskip("numpy")
    folder = tmp_path_factory.mktemp("archives")
    made = {
        "one_size.pt": {f"t{i}": torch.full((2,), float(i)) for i in range(1500)},
        "sizes.pt": {f"s{i}": torch.zeros(1 + i % 9) for i in range(600)}
        | {f"large{i}": torch.zeros(1100 + i) for i in range(3)},
        "model.pt": torch.nn.Sequential(*(torch.nn.Linear(4, 4 + i % 2) for i in range(300))).state_dict(),
    }
    paths = {}
    for name, state in made.items():
        paths[name] = folder / name
        torch.save(state, paths[name])
    paths["arrays.npz"] = folder / "arrays.npz"
    np.savez(paths["arrays.npz"], **{f"a{i}": np.zeros(3) for i in range(600)})
    paths["deflated.zip"] = folder / "deflated.zip"
    with zipfile.ZipFile(paths["deflated.zip"], "w", zipfile.ZIP_DEFLATED) as zf:
        for i in range(600):
            zf.writestr(f"m{i}", b"x" * (i % 100))
    return paths


@pytest.mark.parametrize("name", ["one_size.pt", "sizes.pt", "model.pt", "arrays.npz", "deflated.zip"])
def test_runs_read_what_the_member_by_member_reading_reads(
    name: str, archives: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same members, regions, names and reads as reading each entry and member alone; torch's archives are read
    in runs (their storages of one size by stepped slices, those of sizes that differ by gathered bytes), zipfile's
    member by member (their extra fields are not torch's padding), as zipfile itself lists them."""
    fast, slow, counted = _both(archives[name], monkeypatch)
    assert fast == slow
    members = fast[0][0]
    infos = zipfile.ZipFile(archives[name]).infolist()
    assert [(m.name, m.header_offset, m.compress_size, m.file_size) for m in members] == [
        (i.filename, i.header_offset, i.compress_size, i.file_size) for i in infos
    ]
    if name.endswith(".pt"):
        assert counted["entries"] == len(infos)
        assert counted["uniform"] + counted["gathered"] > 0.9 * len(infos)
        assert (counted["uniform"] > 0.9 * len(infos)) is (name == "one_size.pt")
    else:
        assert counted["uniform"] == counted["gathered"] == 0


def _damaged(data: bytes, offset: int, value: bytes) -> bytes:
    return data[:offset] + value + data[offset + len(value) :]


def test_damaged_archives_read_as_member_by_member(
    archives: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An archive damaged where a run looks (a local header's signature or lengths, a padding field, a data descriptor's
    signature, a directory entry, a name not ASCII after blocks already read, the file cut short): the runs stop
    before the damage and the member-by-member reading meets it, so the members, regions, reads and errors are its
    own, passing over broken members too."""
    path = archives["one_size.pt"]
    data = path.read_bytes()
    infos = zipfile.ZipFile(path).infolist()
    member = infos[700]
    at = member.header_offset
    name_len, extra_len = struct.unpack_from("<HH", data, at + 26)
    end = at + 30 + name_len + extra_len + member.compress_size
    entries = [zipfile.ZipFile(path).start_dir]  # each directory entry's offset
    for _ in range(len(infos) - 1):
        n, e, c = struct.unpack_from("<HHH", data, entries[-1] + 28)
        entries.append(entries[-1] + 46 + n + e + c)
    cases = {
        "local signature": _damaged(data, at, b"XK"),
        "local name length": _damaged(data, at + 26, struct.pack("<H", name_len + 1)),
        "local extra length": _damaged(data, at + 28, struct.pack("<H", extra_len + 8)),
        "padding tag": _damaged(data, at + 30 + name_len, b"XB"),
        "padding length": _damaged(data, at + 32 + name_len, struct.pack("<H", extra_len)),
        "descriptor signature": _damaged(data, end, b"XK"),
        "entry signature": _damaged(data, entries[900], b"XK"),
        "entry offset": _damaged(data, entries[900] + 42, struct.pack("<I", at + 1)),
        "name not ASCII": _damaged(data, entries[1400] + 46 + 3, b"\xe9"),
        "name with a newline": _damaged(data, entries[1400] + 46 + 3, b"\n"),
        "cut short": data[: end - 3],
    }
    for what, damaged in cases.items():
        copy = tmp_path / "damaged.pt"
        copy.write_bytes(damaged)
        for skip_broken in (False, True):
            fast, slow, _ = _both(copy, monkeypatch, skip_broken)
            assert fast == slow, (what, skip_broken)
    (copy := tmp_path / "damaged.pt").write_bytes(cases["local signature"])
    with Probe(copy) as probe, pytest.raises(Exception, match="bad local header signature"):
        _zip.read_zip(probe, "zip")


def test_a_torch_archive_of_20000_storages_loads_as_read_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch.save's archive of 20,000 storages (as the 100,000 of issue 16): its tensors, regions and findings are
    those of the reading member by member, each tensor's bytes torch's, the loader's contract kept."""
    torch = pytest.importorskip("torch")
    from inspector import load

    state = {f"t{i}": torch.full((1 + i % 3,), float(i)) for i in range(20000)}
    path = tmp_path / "many.pt"
    torch.save(state, path)
    fast = load(path)
    with monkeypatch.context() as patched:
        _one_by_one(patched)
        slow = load(path)
    assert len(fast.tensors) == len(state)
    check_invariants(fast)
    assert (fast.tensors, list(fast.regions), fast.findings, fast.attributes) == (
        slow.tensors,
        list(slow.regions),
        slow.findings,
        slow.attributes,
    )
    data = path.read_bytes()
    tensors = {t.name: t for t in fast.tensors}
    for key in ("t0", "t9999", "t19999"):
        t = tensors[key]
        assert data[t.offset : t.offset + t.nbytes] == state[key].numpy().tobytes()


def test_members_are_columns_giving_each_record_once() -> None:
    """`Members`: a column a field; a member's record made when asked, the same record after; equal to the records."""
    rows = [("a/data.pkl", 0, 40, 5, 5, 0, 40, 8, 16), ("a/x\ny", 61, 100, 3, 3, 0, 39, 0, 0)]
    columns = [list(column) for column in zip(*rows, strict=True)]
    members = _zip.Members(*columns)
    one = members[1]
    assert one is members[-1] and one == _zip.ZipMember(*rows[1]) and one.data_end == 103
    assert list(members) == [_zip.ZipMember(*row) for row in rows] and list(members)[1] is one
    assert members == tuple(_zip.ZipMember(*row) for row in rows) and members == _zip.Members(*columns)
    assert members.index_of("a/data.pkl") == 0 and members.index_of("b") is None
    records = [_zip.ZipMember(*row) for row in rows]
    assert _zip.Members.of(records) == members and _zip.Members.of(records)[1] is records[1]
    assert members.listing() == "a/data.pkl\na/x\ny\n" and not members.lines()  # (a name holding a newline)
    assert _zip.Members(["a", "b"], *[[0, 0]] * 8).lines()
    with pytest.raises(IndexError):
        members[2]


def test_quoted_names_are_their_repr() -> None:
    """`_zip.quoted` (the subjects of an archive's regions, made in C calls when every name is printable ASCII with no
    quote or backslash) gives ``repr`` of each name, whatever the names hold."""
    cases = [
        ["archive/data.pkl", "archive/data/0", 'a "b" c', "~ !#"],
        [],
        [""],
        ["a", ""],
        ["it's"],
        ["back\\slash"],
        ["tab\there"],
        ["new\nline", "x"],
        ["del\x7f"],
        ["é"],
        ["\x00", "y"],
        [f"model.layers.{i}.weight" for i in range(1000)],
    ]
    for names in cases:
        assert _zip.quoted(names) == list(map(repr, names)), names
    characters = [chr(c) for c in range(160)] + ["é", "\u2028", "😀"]
    rng = random.Random(7)
    for _ in range(3000):
        names = ["".join(rng.choices(characters, k=rng.randint(0, 4))) for _ in range(rng.randint(0, 4))]
        assert _zip.quoted(names) == list(map(repr, names)), names
