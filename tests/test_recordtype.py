"""`inspector.recordtype.record` behaves as `dataclasses.dataclass` for what the project uses of it."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from inspector import recordtype
from inspector.recordtype import asdict, field, fields, record, replace


def _pair(decorator, field_fn, **options):  # the same classes made by dataclass and by record
    @decorator(**options)
    class Base:
        a: int
        b: str = "x"
        c: list = field_fn(default_factory=list, compare=False)
        d: tuple = field_fn(default=(1, 2), repr=False)

        @property
        def double(self) -> int:
            return self.a * 2

    @decorator(**options)
    class Child(Base):
        e: int = 4

        def __post_init__(self) -> None:
            if self.a < 0:
                raise ValueError("negative")

    return Base, Child


OPTIONS = [{}, {"frozen": True}, {"slots": True}, {"frozen": True, "slots": True}, {"eq": False, "slots": True}]


@pytest.mark.parametrize("options", OPTIONS)
def test_record_matches_dataclass(options):
    dc_base, dc_child = _pair(dataclasses.dataclass, dataclasses.field, **options)
    rc_base, rc_child = _pair(record, field, **options)
    for args, kwargs in [((1,), {}), ((2, "y"), {"c": [3], "e": 9}), ((3,), {"d": (4,)})]:
        dc, rc = dc_child(*args, **kwargs), rc_child(*args, **kwargs)
        assert repr(rc).replace("recordtype", "") == repr(dc).replace("dataclasses", "")
        assert rc.double == dc.double
        assert [f.name for f in fields(rc)] == [f.name for f in dataclasses.fields(dc)]
        assert asdict(rc) == dataclasses.asdict(dc)
        assert (rc == rc_child(*args, **kwargs)) == (dc == dc_child(*args, **kwargs))
        assert (rc == rc_child(*args, **{**kwargs, "c": ["other"]})) == (
            dc == dc_child(*args, **{**kwargs, "c": ["o"]})
        )
        assert (rc_child.__hash__ is None) == (dc_child.__hash__ is None)
        if rc_child.__hash__ is not None and options.get("eq", True):
            assert hash(rc) == hash(rc_child(*args, **kwargs))
        assert replace(rc, e=5).e == dataclasses.replace(dc, e=5).e == 5
        assert hasattr(rc, "__dict__") == hasattr(dc, "__dict__")
    with pytest.raises(ValueError, match="negative"):
        rc_child(-1)
    with pytest.raises(ValueError, match="negative"):
        replace(rc_child(1), a=-1)
    if not options.get("frozen"):
        rc = rc_child(1)
        rc.a = 2
        assert rc.a == 2


def test_frozen_slotted_records_pickle():  # folder audits send records between processes
    from inspector.records import Region, RegionKind, TensorInfo, TensorKind

    for value in (
        TensorInfo("a.weight", (2, 3), "F32", 24, 8, kind=TensorKind.BUFFER, notes=("n",)),
        Region(RegionKind.HEADER, 0, 8, "length"),
    ):
        for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
            copy = pickle.loads(pickle.dumps(value, protocol))
            assert copy == value and hash(copy) == hash(value) and repr(copy) == repr(value)


def test_record_is_cheaper_than_dataclass_and_needs_no_inspect():
    assert "dataclasses" not in recordtype.__dict__ and "inspect" not in recordtype.__dict__
    with pytest.raises(TypeError, match="non-default"):

        @record
        class Bad:
            a: int = 1
            b: int


def test_the_type_checker_refuses_assignments_to_frozen_records(tmp_path):
    """Frozen records are values: mypy (PEP 681) reports an assignment to any of their fields."""
    api = pytest.importorskip("mypy.api")
    code = tmp_path / "assign.py"
    code.write_text(
        "from inspector.records import Region, RegionKind, TensorInfo\n"
        "r = Region(RegionKind.HEADER, 0, 8)\n"
        "r.start = 5\n"
        "t = TensorInfo('a', (1,), 'F32', 4, 0)\n"
        "t.name = 'b'\n"
        "print(t.nbytes + r.length)\n"
    )
    out, _, _ = api.run([str(code), "--follow-imports=silent", "--cache-dir", str(tmp_path / "cache")])
    errors = [line for line in out.splitlines() if line.startswith(str(code))]
    assert [e.split(":")[1] for e in errors] == ["3", "5"], out
    assert all("read-only" in e for e in errors), out


def test_records_of_one_or_no_compared_field_are_equal_and_hashed_by_it():
    """The compared fields are read by a function kept in the class: with one field or none it is a plain function,
    which must not be bound to the record it is read from (found by the pickle mutation property test)."""

    @record(frozen=True)
    class One:
        a: int
        b: int = field(default=0, compare=False)

    @record(frozen=True)
    class Nothing:
        a: int = field(default=0, compare=False)

    assert One(1, 2) == One(1, 3) != One(2, 2) and hash(One(1, 2)) == hash(One(1, 3))
    assert Nothing(1) == Nothing(2) and hash(Nothing(1)) == hash(Nothing(2))


def test_replace_copies_as_dataclasses_replace():
    """`replace` reads the fields in one call and passes them in order: the same copies as `dataclasses.replace` for
    records of no, one and several fields, inherited ones, factories; an unknown name is refused as it refuses it."""
    made = {}
    for make, make_field in ((dataclasses.dataclass, dataclasses.field), (record, field)):

        @make(frozen=True)
        class Empty:
            pass

        @make(frozen=True)
        class One:
            x: int

        @make(frozen=True)
        class Two(One):
            y: list = make_field(default_factory=list)
            z: str = "z"

        made[make] = (Empty, One, Two)
    (dc_empty, dc_one, dc_two), (rc_empty, rc_one, rc_two) = made[dataclasses.dataclass], made[record]
    assert repr(replace(rc_empty())) == repr(dataclasses.replace(dc_empty()))
    assert replace(rc_one(1), x=2).x == dataclasses.replace(dc_one(1), x=2).x == 2
    shared: list[int] = [1]
    copy, reference = replace(rc_two(1, shared), z="w"), dataclasses.replace(dc_two(1, shared), z="w")
    assert (copy.x, copy.y, copy.z) == (reference.x, reference.y, reference.z) and copy.y is shared
    assert replace(replace(rc_two(1), y=[2]), x=5) == rc_two(5, [2])
    for target in (rc_one(1), rc_two(1)):
        with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
            replace(target, nope=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        dataclasses.replace(dc_two(1), nope=1)


def test_copies_are_replace_without_init():
    """`copies(obj, name)(value)` equals `replace(obj, name=value)` for slotted and plain records of one and several
    fields, the varied field first, last or between; `__post_init__` is not run again (the values were checked)."""
    from inspector.recordtype import copies

    checked: list[int] = []

    @record(frozen=True, slots=True)
    class Spec:
        inputs: int
        name: str = ""
        tail: tuple[int, ...] = (1,)

        def __post_init__(self) -> None:
            checked.append(self.inputs)

    @record(frozen=True)
    class Plain:
        name: str

    @record(frozen=True, slots=True)
    class Last:
        a: int
        b: list
        name: str

    spec, shared = Spec(3, "a", (2, 2)), [1]
    for obj in (spec, Plain("a"), Last(1, shared, "a")):
        copy = copies(obj, "name")
        made = [copy("other"), copy("more")]
        assert made == [replace(obj, name="other"), replace(obj, name="more")] and type(made[0]) is type(obj)
        assert repr(made[1]) == repr(replace(obj, name="more")) and made[1].name == "more"
    assert copies(Last(1, shared, "a"), "name")("b").b is shared
    checked.clear()
    assert copies(spec, "inputs")(7) == Spec(7, "a", (2, 2))
    assert checked == [7]  # (the `Spec` compared with: no copy ran `__post_init__`)
    with pytest.raises(TypeError, match="no field 'nope'"):
        copies(spec, "nope")
