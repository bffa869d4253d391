"""What start-up makes on first use, or more cheaply, is what it made before (issue 16)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector import recordtype
from inspector.needles import needle
from inspector.recordtype import field, record


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (r"(?:.*\.)?(?:position_ids|token_type_ids)", "_ids"),  # the suffix every alternative holds
        (r"(?:input|output)_(?:min|max)", "put"),  # not joined to the run beside the group
        (r"(?:gate\.bias|expert_bias|router_bias)", "bias"),  # an escaped character is itself
        (r"(?:(?:ab_c|ab_d)x|ab_y)", "ab_"),  # a nested group gives its own shared part as a run
        (r"(?:ab|b+c)", ""),  # 'b+c' holds 'b' only: one letter is no needle
        (r"(?:alpha|be(?:ta)?)", ""),  # an optional group holds nothing for sure
        (r"x(?:abc|abd)?y", "x"),  # an optional group of alternatives gives nothing
        (r"(?:.*/)?(?:cache|intermediates|losses)/.+", "/"),  # one common letter ('e') never hides a run
    ],
)
def test_a_group_of_alternatives_gives_what_each_alternative_holds(pattern: str, expected: str) -> None:
    assert needle(pattern) == expected


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text("abcd_.", min_size=1, max_size=6), min_size=2, max_size=4),
    st.sampled_from(["", "x", r"(?:.*\.)?"]),
    st.data(),
)
def test_the_common_literal_is_in_every_match(words: list[str], prefix: str, data: st.DataObject) -> None:
    import re

    pattern = prefix + "(?:" + "|".join(re.escape(w) for w in words) + ")"
    name = data.draw(st.from_regex(pattern, fullmatch=True))
    assert needle(pattern) in name


def test_family_matchers_made_on_first_use_are_the_tables_matchers() -> None:
    """Each family's matcher is made when looked up, with its rules in table order and the digit table the rules'
    own text gives (computed here the long way, one matcher at a time)."""
    import re

    from inspector.roles import FAMILY_MATCHERS, MATCHER, ROLE_RULES

    orders = {"torch": ["torch"], "mxnet": ["mxnet"], "keras": ["keras"], "": ["torch", "mxnet", "keras"]}
    assert sorted(FAMILY_MATCHERS) == sorted(orders)
    for family, order in orders.items():
        matcher = FAMILY_MATCHERS[family]
        assert matcher is FAMILY_MATCHERS[family]  # made once
        assert matcher.rules == tuple(r for f in order for r in ROLE_RULES if r.families[0] == f)
    for matcher in (*FAMILY_MATCHERS.values(), MATCHER):
        text = re.sub(r"\\.", "", "".join(r.pattern for r in matcher.rules))
        free = [d for d in "0123456789" if d not in text]
        expected = bytes(ord(free[0]) if chr(i) in free else i for i in range(256)) if free else b""
        assert matcher.digits == (expected if not re.search(r"\[[^\]]*\d", text) else b"")
    with pytest.raises(KeyError):
        FAMILY_MATCHERS["tensorflow"]


def test_families_ruled_out_once_are_those_no_base_shows(samples, monkeypatch: pytest.MonkeyPatch) -> None:
    """Family detection rules a family out once when no path of the file ends as one of its layer parts does: the
    same families, in the same order, as viewing the file from each of its bases (on every sample file the
    registry reads, and on their tensors renamed as a family's and as no family's)."""
    from inspector import family_check
    from inspector.recordtype import replace
    from inspector.registry import load

    files = [p for p in sorted(samples.rglob("*")) if p.suffix in (".safetensors", ".pt", ".npz", ".gguf", ".h5")]
    checkpoints = [load(p) for p in files]
    gpt2 = next(c for c in checkpoints if "gpt2" in c.path and c.path.endswith(".safetensors"))
    renamed = [replace(t, name=t.name.replace("h.", "blocks.")) for t in gpt2.tensors]  # a family's no more
    checkpoints.append(replace(gpt2, tensors=tuple(renamed), config=None))
    checkpoints += [replace(c, config=None) for c in checkpoints if c.config]  # inferred from the names alone

    def names(ckpt):  # (family, base, source) of each candidate
        return [(f.name, v.base, s) for f, v, s in family_check.detect(ckpt)]

    shortcut = [names(c) for c in checkpoints]
    monkeypatch.setattr(family_check, "_ends_there", lambda *_: True)
    assert shortcut == [names(c) for c in checkpoints]
    assert any(shortcut) and not all(shortcut)


def test_the_first_instances_are_bound_as_the_compiled_init_binds_them():
    """A class's first `COMPILE_AFTER` instances are made without compiling its `__init__`: the same fields, defaults,
    factories and `__post_init__`, and Python's own errors for a call that does not bind."""

    def make():
        @record(frozen=True, slots=True)
        class Row:
            a: int
            b: str = "x"
            c: list = field(default_factory=list)
            d: tuple = ()

            def __post_init__(self) -> None:
                if self.a < 0:
                    raise ValueError("negative")

        return Row

    calls = [((1,), {}), ((1, "y"), {"d": (2,)}), ((), {"a": 3, "c": [4]}), ((5, "z", [6], (7,)), {})]
    bound = make()
    first = [bound(*args, **kwargs) for args, kwargs in calls]
    assert bound.__init__.__code__.co_filename != "<string>"  # not compiled yet
    compiled = make()
    for _ in range(recordtype.COMPILE_AFTER):
        compiled(0)
    after = [compiled(*args, **kwargs) for args, kwargs in calls]
    assert compiled.__init__.__code__.co_filename == "<string>"  # its own, compiled
    assert [repr(r) for r in first] == [repr(r) for r in after]
    assert first[0].c is not bound(1).c  # a new list each time, as the factory's
    for cls in (bound, make()):
        with pytest.raises(ValueError, match="negative"):
            cls(-1)
        with pytest.raises(TypeError, match="missing 1 required positional argument: 'a'"):
            cls()
        with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
            cls(1, z=2)
        with pytest.raises(TypeError, match="multiple values for argument 'a'"):
            cls(1, a=2)
        with pytest.raises(TypeError, match="takes from 2 to 5 positional arguments but 6 were given"):
            cls(1, "b", [], (), 5)


def test_importing_the_package_leaves_the_collector_as_it_was():
    """The collector is paused while the package imports its modules, and switched back on only if it was on."""
    import subprocess
    import sys

    for before in ("", "gc.disable(); "):
        code = f"import gc; {before}import inspector, inspector.cli; print(gc.isenabled())"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        assert out.strip() == str(not before)


# The regular expression the npy header's common spelling was read with before (its compile was 0.2 ms of an npz
# run): the reading without it must accept and refuse exactly what it did, and read the same values
NUMPY_SPELLING_PATTERN = (
    r"\{'descr': '([^'\\\n]*)', 'fortran_order': (True|False), "
    r"'shape': \(((?:(?:0|[1-9]\d*), )*(?:0|[1-9]\d*),?|)\), \}[ \n]*"
)


def _read_by_pattern(text: str) -> dict[str, object] | None:
    import re

    m = re.fullmatch(NUMPY_SPELLING_PATTERN, text)
    if m is None:
        return None
    descr, fortran, dims = m.groups()
    if dims and "," not in dims:
        return None
    return {
        "descr": descr,
        "fortran_order": fortran == "True",
        "shape": tuple(int(d) for d in dims.split(",") if d.strip()),
    }


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 2**40), max_size=4),
    st.sampled_from(["<f4", "|u1", ">i8", "<c16", "|b1", "<M8[ns]", "O"]),
    st.booleans(),
    st.data(),
)
def test_npy_headers_numpy_writes_read_as_the_pattern_read_them(
    shape: list[int], descr: str, fortran: bool, data: st.DataObject
) -> None:
    """Headers numpy's own writer makes, and each changed at one place, read by string partitions as the pattern read
    them (the same dict, or None where `ast` reads the text)."""
    np = pytest.importorskip("numpy")
    import io

    from loaders.npy import _numpy_spelled

    out = io.BytesIO()  # the header numpy itself writes (version 1.0)
    np.lib.format.write_array_header_1_0(out, {"descr": descr, "fortran_order": fortran, "shape": tuple(shape)})
    text = out.getvalue()[10:].decode("latin-1")
    assert (
        _numpy_spelled(text)
        == _read_by_pattern(text)
        == {"descr": descr, "fortran_order": fortran, "shape": tuple(shape)}
    )
    # and the same text changed at one place: accepted or refused as the pattern did
    at = data.draw(st.integers(0, len(text)))
    cut = data.draw(st.integers(0, 3))
    inserted = data.draw(st.text(" ,0123456789()'\\\n}{:TrueFals\u0663", max_size=3))
    changed = text[:at] + inserted + text[at + cut :]
    assert _numpy_spelled(changed) == _read_by_pattern(changed)


def test_the_projects_enums_behave_as_the_standard_librarys() -> None:
    """`inspector.enumtype`'s `StrEnum` and `IntEnum` give what `enum`'s would of the same body: the same members in
    order, values, names, lookups by value and by name, iteration, `len`, `in`, str, format, repr, JSON text, equality
    and hash with the value, pickling and copying (the member itself); and a value no member has is refused alike."""
    import copy
    import json
    import pickle
    from enum import Enum, IntEnum, StrEnum

    from inspector.audit import Status
    from inspector.diff import DiffKind
    from inspector.dtypes import DKind
    from inspector.formulas import Convention
    from inspector.records import RegionKind, Severity, TensorKind
    from inspector.roles import Role
    from loaders.base import Claim

    for made in (TensorKind, RegionKind, Severity, Role, DKind, Convention, Claim, DiffKind, Status):
        base: type[Enum] = IntEnum if issubclass(made, int) else StrEnum
        plain = base(made.__name__, [(m.name, m.value) for m in made])  # (EnumType, as a class statement makes it)
        assert [(m.name, m.value) for m in made] == [(m.name, m.value) for m in plain] and len(made) == len(plain)
        assert [m.name for m in reversed(made)] == [m.name for m in reversed(plain)]
        assert list(made.__members__) == list(plain.__members__) and repr(made) == repr(plain)
        for m, p in zip(made, plain, strict=True):
            assert made(m.value) is m and made[m.name] is m and made(m) is m and m in made and m.value in made
            assert pickle.loads(pickle.dumps(m)) is m and copy.copy(m) is m and copy.deepcopy(m) is m
            assert made.__dict__[m.name] is m and isinstance(m, made) and type(m.value) is type(p.value)  # noqa: E721
            assert (str(m), format(m), f"{m}", f"{m:>12}", m == m.value, hash(m) == hash(m.value)) == (
                str(p),
                format(p),
                f"{p}",
                f"{p:>12}",
                p == p.value,
                hash(p) == hash(p.value),
            )
            assert repr(m) == repr(p) and json.dumps(m) == json.dumps(p) and json.dumps({m: 1}) == json.dumps({p: 1})
        wrong = -1 if base is IntEnum else "no such value"
        with pytest.raises(ValueError) as ours:
            made(wrong)
        with pytest.raises(ValueError) as theirs:
            plain(wrong)
        assert str(ours.value) == str(theirs.value)
