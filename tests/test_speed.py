"""Issue 16: the fast paths give what the slow ones give (the JSON text, the role rule), and a run imports no more
than it uses. Timings are in bench/benchmark.py, never here."""

from __future__ import annotations

import csv
import json
import math
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector import jsontext
from inspector.jsontext import dumps, loads, write
from inspector.needles import needle, needles
from inspector.records import TensorKind
from inspector.roles import FAMILY_MATCHERS, ROLE_RULES, Matcher, compile_rules, match_roles

ROOT = Path(__file__).resolve().parent.parent
CASES = list(csv.DictReader((Path(__file__).parent / "data" / "role_cases.csv").read_text().splitlines()))

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text()
    | st.sampled_from([math.nan, math.inf, -math.inf, 0.1, -0.0, 1e300])
)
keys = st.text() | st.integers() | st.booleans() | st.none() | st.floats(allow_nan=False)
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4) | st.tuples(inner, inner),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(documents)
def test_json_text_is_json_dumps_indent_2(doc: object) -> None:
    assert dumps(doc) == json.dumps(doc, indent=2, default=str)


def test_json_text_of_large_containers_written_in_pieces() -> None:
    doc = {"a": {"b": {"c": {"d": [{"name": f"t{i}", "shape": [i, 2], "notes": []} for i in range(6000)]}}}, "e": {}}
    pieces: list[str] = []
    write(doc, pieces.append)
    assert "".join(pieces) == dumps(doc) == json.dumps(doc, indent=2, default=str)
    # gathered into chunks of about CHUNK characters: the whole text is never one piece
    assert len(pieces) > 5 and max(map(len, pieces)) < 2 * jsontext.CHUNK


@settings(max_examples=300, deadline=None)
@given(documents)
def test_json_text_streamed_in_tiny_batches_is_json_dumps(doc: object) -> None:
    """Every container of 2 or more items streamed, batches of 2 written column by column, 8-character chunks."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(jsontext, "STREAM_ITEMS", 2)
        mp.setattr(jsontext, "ROWS", 2)
        mp.setattr(jsontext, "CHUNK", 8)
        assert dumps(doc) == json.dumps(doc, indent=2, default=str)


def test_json_text_of_records_of_one_layout() -> None:
    """The column-by-column path: layouts that differ, keys equal as dict keys but written differently, mixed and
    nested columns, a large container inside a record, cycles through a record."""
    rows: list[object] = [{"n": f"t{i}", "s": [i, 2], "k": i % 3 == 0, "x": None} for i in range(600)]
    rows += [{1: "a"}, {True: "a"}, {1.0: "a"}] * 300
    rows += [{"v": i if i % 2 else str(i), "f": i / 3, "t": (i,), "d": {"z": [True]}} for i in range(600)]
    rows += [{"big": list(range(300)), "s": "x"}] * 3 + [{"s": '\u2603\n"%s'}] * 300
    rows += [{"%s%%d": i, "b": -(10**30) * i, "c": "%d"} for i in range(300)]  # keys, ints and strings with '%'
    doc = {"rows": rows}
    assert dumps(doc) == json.dumps(doc, indent=2, default=str)
    looped: dict[str, object] = {"n": "x"}
    looped["me"] = [looped]
    for cyclic in ([looped] * 300, [{"n": "y"}] * 299 + [looped]):
        with pytest.raises(ValueError, match="Circular"):
            dumps(cyclic)


def test_json_text_of_other_objects_cycles_and_bad_keys() -> None:
    class Thing:
        def __str__(self) -> str:
            return "thing [1, 2]"

    doc = {"a": Thing(), "b": [Path("x"), {1.5: (True, None)}], "c": ()}
    assert dumps(doc) == json.dumps(doc, indent=2, default=str)
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular"):
        dumps(loop)
    with pytest.raises(TypeError):
        dumps({(1, 2): 3})


def _read_as(read: Callable[..., object], text: str | bytes, **hook: object) -> tuple[str, str]:
    """What a JSON reader makes of `text`: its value as json writes it, or its error's type and words."""
    try:
        return "value", json.dumps(read(text, **hook))
    except Exception as exc:  # noqa: BLE001 - the error is the outcome compared
        return type(exc).__name__, str(exc)


@settings(max_examples=300, deadline=None)
@given(documents, st.sampled_from([None, 0, 2]), st.sampled_from(["", " \n", "\t\r "]))
def test_json_read_is_json_loads(doc: object, indent: int | None, space: str) -> None:
    """`jsontext.loads` makes json.loads's value of any document, as str and as bytes of every encoding json reads,
    whitespace around it; a hook gets the same pairs."""
    text = space + json.dumps(doc, indent=indent, default=str) + space
    for given_text in (text, text.encode(), text.encode("utf-8-sig"), text.encode("utf-16"), text.encode("utf-32-le")):
        assert _read_as(loads, given_text) == _read_as(json.loads, given_text)
        assert _read_as(loads, given_text, object_pairs_hook=list) == _read_as(
            json.loads, given_text, object_pairs_hook=list
        )


def test_json_read_refuses_as_json_loads() -> None:
    """A document json refuses gets json's own error from `jsontext.loads`: the same type and words."""

    def unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
        if len({k for k, _ in pairs}) != len(pairs):
            raise ValueError(f"duplicate key among {[k for k, _ in pairs]}")
        return dict(pairs)

    bad: list[str | bytes] = ["", "   ", "{", "[1,]", '{"a" 1}', "{} x", "{}\n\n[]", "\ufeff{}", "[1] ]", "nul"]
    bad += ['"\\x"', '"a\x01b"', "[" * 100_000, b"", b"\xef\xbb\xbf", b"\xff\xfe", b'{"a": "\xe9"}', b"\x00{}"]
    bad += [b'"\xed\xa0\x80"', b"[1, 2", bytearray(b"[1]"), "[NaN, -Infinity, 1e999]", " \t1 \r"]
    bad += ["[" + "7" * 5000 + "]", '{"a": 1}\x00', '"\ud800"', '{"\\ud800": [1.5e-400, -0.0]}']
    for text in bad:
        assert _read_as(loads, text) == _read_as(json.loads, text), text[:20]
    for text in ('{"a": 1, "a": 2}', '[{"b": {"c": 1, "c": 1}}]', '{"a": 1, "b": 2}'):
        assert _read_as(loads, text, object_pairs_hook=unique) == _read_as(json.loads, text, object_pairs_hook=unique)
    assert _read_as(loads, "{} x")[0] == "JSONDecodeError" and _read_as(loads, "{}")[0] == "value"


def test_report_json_is_the_standard_encoders(samples: Path) -> None:
    from inspector.render import render_json, report_dict
    from inspector.report import inspect

    dicts = [report_dict(inspect(p)) for p in sorted(samples.rglob("*.safetensors"))[:4]]
    assert dicts
    assert render_json(dicts, many=True) == json.dumps(dicts, indent=2, default=str)
    # made as they are written (the CLI's --json): the same text
    lazy = [report_dict(inspect(p), lazy=True) for p in sorted(samples.rglob("*.safetensors"))[:4]]
    assert isinstance(lazy[0]["tensors"], jsontext.Rows) and render_json(lazy, many=True) == render_json(dicts, True)


def test_rows_written_column_by_column_are_the_dicts(tmp_path: Path) -> None:
    """--json writes the tensors, regions and layer rows of a batch from their records column by column; the text is
    that of the dicts `report_dict` makes, whether an optional key is set for every row of a batch (torch storages),
    for some (a tie in the second batch: dict by dict) or for none (safetensors)."""
    torch = pytest.importorskip("torch")
    from safetensors.numpy import save_file

    from inspector.render import render_json, report_dict
    from inspector.report import inspect

    n = 3 * jsontext.ROWS
    state = {f"blocks.{i}.linear.weight": torch.full((2, i % 5 + 1), float(i)) for i in range(n)}
    state["blocks.300.linear.weight"] = state["blocks.299.linear.weight"]  # tied: an alias_of in one batch
    torch.save(state, tmp_path / "tied.pt")
    save_file({k: v.numpy() for k, v in state.items() if k != "blocks.300.linear.weight"}, tmp_path / "m.safetensors")
    reports = [inspect(tmp_path / "tied.pt"), inspect(tmp_path / "m.safetensors")]
    laid: list[bool] = []
    lazy = [report_dict(r, lazy=True) for r in reports]
    for d in lazy:
        for rows in (d["tensors"], d["bytes"]["regions"], d["expected"]["layers"]):
            assert isinstance(rows, jsontext.Rows) and rows.columns is not None
            rows.columns = lambda batch, of=rows.columns: laid.append(of(batch) is not None) or of(batch)
    assert render_json(lazy, many=True) == json.dumps([report_dict(r) for r in reports], indent=2, default=str)
    assert True in laid and False in laid  # both ways were taken


def test_tensor_columns_read_every_optional_field_as_the_dicts() -> None:
    """`render._tensor_columns` reads each tensor's fields, the optional ones in `TENSOR_OPTIONAL`'s order, those
    other than an alias or a storage only where a tensor of the batch has one: with every optional field set (each to
    a value of its own), and with each set on one tensor alone (its dicts then differ in layout: no columns) or on
    none, the columns are the dicts `_tensor_json` makes, key for key and value for value."""
    from inspector.records import Checkpoint, RoleMatch, TensorInfo, TensorKind
    from inspector.recordtype import replace
    from inspector.render import TENSOR_OPTIONAL, _fields, _tensor_columns, _tensor_json

    tensors = [
        TensorInfo(f"m.{i}.weight", (2, i + 1), "F32", 8 * (i + 1), 64 * i, storage=f"s{i}", alias_of=f"a{i}",
                   kind=TensorKind.BUFFER, trainable=False, section=f"sec{i}", param=f"p{i}", file=i + 1,
                   notes=(f"n{i}",), span=100 + i)
        for i in range(5)
    ]  # fmt: skip
    roles = [RoleMatch(t.name, f"m.{i}", "dense", "weight", "torch.dense") for i, t in enumerate(tensors)]

    def columns_are_the_dicts(tensors: list[TensorInfo]) -> tuple[str, ...] | None:
        ckpt = Checkpoint("x", "x", "x", (("x", 0),), tuple(tensors), ())
        laid = _tensor_columns(ckpt.tensors, roles, _fields(ckpt))(range(len(tensors)))
        dicts = [_tensor_json(t, r) for t, r in zip(tensors, roles, strict=True)]
        if laid is None:  # (only where the dicts differ in layout)
            assert len({tuple(d) for d in dicts}) > 1
            return None
        keys, values = laid
        rows = [dict(zip(keys, row, strict=True)) for row in zip(*values, strict=True)]
        rows = [{**row, "shape": list(row["shape"])} for row in rows]  # (a tuple, written as the dict's list)
        assert rows == dicts and [list(row) for row in rows] == [list(d) for d in dicts]
        return keys

    keys = columns_are_the_dicts(tensors)
    assert keys is not None and set(keys) >= {key for key, _ in TENSOR_OPTIONAL}
    plain = [TensorInfo(t.name, t.shape, t.dtype, t.nbytes, t.offset) for t in tensors]
    assert columns_are_the_dicts(plain) == tuple(TENSOR_KEYS_OF_PLAIN)
    for key, _ in TENSOR_OPTIONAL:  # each optional field set on one tensor alone: dict by dict
        one = [replace(t, **{key: getattr(tensors[2], key)}) if i == 2 else t for i, t in enumerate(plain)]
        assert columns_are_the_dicts(one) is None, key
        assert columns_are_the_dicts([replace(t, **{key: getattr(tensors[i], key)}) for i, t in enumerate(plain)])


TENSOR_KEYS_OF_PLAIN = ("name", "shape", "dtype", "elements", "nbytes", "offset", "kind", "layer", "role", "trainable")


def test_region_rows_with_files_and_logical_sizes_are_the_dicts(tmp_path: Path) -> None:
    """A checkpoint whose regions have a file index (a sharded safetensors model: its second shard's) or a logical size
    (a compressed npz's members) writes its region rows with those keys, as the dicts `report_dict` makes; one whose
    regions have neither writes them without (`render._region_columns` tells which once for all the regions)."""
    import numpy as np
    from safetensors.numpy import save_file

    from inspector.render import render_json, report_dict
    from inspector.report import inspect

    n = 2 * jsontext.STREAM_ITEMS
    arrays = {f"layers.{i}.weight": np.full((2, i % 3 + 1), i, dtype=np.float32) for i in range(n)}
    np.savez_compressed(tmp_path / "packed.npz", **arrays)
    names = list(arrays)
    weight_map = {}
    for shard, part in (
        ("model-00001-of-00002.safetensors", names[:20]),
        ("model-00002-of-00002.safetensors", names[20:]),
    ):
        save_file({k: arrays[k] for k in part}, tmp_path / shard)
        weight_map.update(dict.fromkeys(part, shard))
    index = {"metadata": {"total_size": sum(a.nbytes for a in arrays.values())}, "weight_map": weight_map}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    save_file(arrays, tmp_path / "plain.safetensors")
    paths = [tmp_path / "packed.npz", tmp_path / "model.safetensors.index.json", tmp_path / "plain.safetensors"]
    reports = [inspect(p) for p in paths]
    regions = [r.checkpoint.regions for r in reports]
    assert any(r.logical is not None for r in regions[0]) and any(r.file == 1 for r in regions[1])
    assert not any(r.file or r.logical is not None for r in regions[2])
    text = json.dumps([report_dict(r) for r in reports], indent=2, default=str)
    assert render_json([report_dict(r, lazy=True) for r in reports], many=True) == text
    assert '"logical": ' in text and '"file": 1' in text


@pytest.mark.parametrize("n", [0, 3, jsontext.STREAM_ITEMS, 3 * jsontext.STREAM_ITEMS + 5])
def test_rows_made_on_demand_are_written_as_the_list(n: int) -> None:
    def row(i: int) -> dict[str, object]:
        return {"name": f"t{i}", "shape": [i, 2], "offset": None if i % 3 else i}

    made: list[int] = []

    def counted(i: int) -> dict[str, object]:
        made.append(i)
        return row(i)

    doc = {"a": [1, {"rows": jsontext.Rows(range(n), counted)}], "b": jsontext.Rows(range(n), row)}
    pieces: list[str] = []
    write(doc, pieces.append)
    assert "".join(pieces) == json.dumps({"a": [1, {"rows": [row(i) for i in range(n)]}],
                                          "b": [row(i) for i in range(n)]}, indent=2)  # fmt: skip
    assert sorted(made) == list(range(n))  # each row made once


def _full_scan(matcher: Matcher, name: str) -> tuple[str, dict[str, str]] | None:
    """The first rule whose pattern matches the name, and the groups that took part, without the memo."""
    for rule, regex in zip(matcher.rules, matcher.compiled, strict=True):
        m = regex.fullmatch(name)
        if m:
            return str(rule.rule_id), {k: v for k, v in m.groupdict().items() if v is not None}
    return None


digits = st.text("0123456789", min_size=1, max_size=3)
names = st.builds(
    lambda parts, sep: sep.join(parts),
    st.lists(digits | st.sampled_from(["layers", "h", "norm1", "weight_ih_l", "bias", "weight", "kernel:0", "conv2",
                                       "bn", "mlp", "rnn", "self_attn", "in_proj_weight", "dense_1", "i2h",
                                       "q_proj", "embed_tokens", "encoder", "layer", "attention", "output", "wte",
                                       "attn", "c_attn", "LayerNorm", "running_mean", "func", "embeddings", "cell",
                                       "arg:source_embed", "aux:bn", "gamma", "moving_mean", "recurrent_kernel",
                                       "base_model", "pushed_vector_layer", "hada_w1_a", "linear1", "gate"]),
             min_size=1, max_size=6),
    st.sampled_from([".", "/", "_"]),
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(names, min_size=1, max_size=8), st.sampled_from(sorted(FAMILY_MATCHERS)))
def test_remembered_rule_is_the_first_rule_that_matches(batch: list[str], family: str) -> None:
    """Names of one shape with other numbers (layers.3 / layers.17 / norm1 / norm2) get the rule and the groups a full
    scan gives."""
    matcher = compile_rules(FAMILY_MATCHERS[family].rules)  # a fresh memo
    for name in batch + [row["name"] for row in CASES] + batch:
        found = matcher.match(name)  # the rule and the groups, at the spans remembered for the name's shape
        assert ((found[0].rule_id, found[1]) if found else None) == _full_scan(matcher, name), name


def test_names_no_rule_spelling_a_digit_can_meet_share_one_shape() -> None:
    """`layer_000` ... `layer_127`: the digits 0, 1 and 2 are spelled in some rules (keeping their values in the shape
    key: 28 shapes), but none of those rules can match a name without their literals (`Matcher.triggers`), so the
    names share one shape with every digit one: one full scan, the same answers."""
    from inspector.roles import FREE

    matcher = compile_rules(FAMILY_MATCHERS[""].rules)  # a fresh memo
    assert matcher.triggers and "base_model" in matcher.triggers
    names = [f"layer_{i:03d}.weight" for i in range(128)]
    scans = []
    scan = matcher._scan
    object.__setattr__(matcher, "_scan", lambda name: scans.append(name) or scan(name))
    for name in names:
        found = matcher.match(name)
        assert ((found[0].rule_id, found[1]) if found else None) == _full_scan(matcher, name), name
    assert scans == ["layer_000.weight"]
    assert len({matcher.shape_key(n) for n in names}) > 20  # (what the shape key alone tells apart)
    assert [k for k in matcher.memo if k.startswith(FREE)] == [FREE + b"layer_000.weight"]
    # a name holding a trigger keeps the spelled digits' values: ':0' against ':5' in a Keras variable's name
    assert matcher.match("a/kernel:0") != matcher.match("a/kernel:5")


@pytest.mark.parametrize("table", ["roles", "kinds"])
@settings(max_examples=25, deadline=None)
@given(st.data())
def test_a_rule_needle_is_in_every_name_its_pattern_matches(table: str, data: st.DataObject) -> None:
    """A rule (of the role table, or the kind table) is skipped when one of its needles is not in the name: every
    name the pattern matches must contain each literal and one literal of each clause."""
    from inspector.kinds import KIND_RULES

    for rule in ROLE_RULES if table == "roles" else KIND_RULES:
        name = data.draw(st.from_regex(rule.pattern, fullmatch=True), label=rule.rule_id)
        held = [n in name if n.__class__ is str else any(a in name for a in n) for n in needles(rule.pattern)]
        assert all(held), (rule.rule_id, name)


def test_the_written_needles_are_the_rules_needles() -> None:
    """`inspector/rule_needles.py` is what `python -m inspector.needles` writes now (run it after changing a rule or
    a registry row's file-name pattern); a pattern not in it has its needles read at run time."""
    from inspector.needles import spelled_table, split, table
    from inspector.rule_needles import NEEDLES, SPELLED

    assert table() == NEEDLES
    assert spelled_table() == SPELLED
    assert r"abc\.(?:xx|yy)" not in NEEDLES and split(r"abc\.(?:xx|yy)") == (("abc.",), (("xx", "yy"),))


def test_the_written_regex_programs_are_the_patterns_programs(monkeypatch: pytest.MonkeyPatch) -> None:
    """`inspector/regex_programs.py` is what `python -m inspector.needles` writes now, and each pattern made from it
    is the one `re.compile` makes: the same program and flags (what `re.Pattern` equality compares) and groups. Under
    another Python, or for a pattern not written or written with other flags, `compile` is `re.compile`."""
    from inspector import regexes
    from inspector.regex_programs import PROGRAMS, RUNTIME

    if RUNTIME != regexes.runtime():
        pytest.skip(f"the programs are written for {RUNTIME}, this is {regexes.runtime()}")
    written = regexes.patterns()
    assert {p: regexes.program(p, f) for p, f in written} == PROGRAMS
    assert len(written) > 150 and any(isinstance(p, bytes) for p, _ in written)  # the rules and the pickle scan
    from loaders._pickle_fast import SMALL, SMALL_SHORT, _index_bits, _patterns, small_scan_pattern

    scan = _patterns(_index_bits(SMALL - 1), SMALL_SHORT, False)[1]  # (what `_scan` compiles for a small pickle)
    assert PROGRAMS[scan.pattern][1] == scan.flags  # (written: a run compiles none)
    for pattern, flags in written:
        made, expected = regexes.compile(pattern, flags), re.compile(pattern, flags)
        assert made is not expected  # (not `re`'s cached pattern)
        assert (made, made.groupindex, made.groups) == (expected, expected.groupindex, expected.groups), pattern
    pattern, flags = small_scan_pattern()  # (written with DOTALL)
    assert regexes.compile(pattern, 0) is re.compile(pattern, 0)  # other flags: `re`'s own
    assert regexes.compile(pattern, 0) is regexes.compile(pattern, 0)  # (made once a run, as by `re`'s cache)
    monkeypatch.setattr(regexes, "_programs", None)
    monkeypatch.setattr(regexes, "_compiled", {})
    monkeypatch.setattr(regexes, "runtime", lambda: (2, 7))
    assert regexes.compile(pattern, flags) is re.compile(pattern, flags)  # another Python: `re`'s own
    assert regexes._programs == {}


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (
            r"(?P<layer>.+)\.(?P<param>lora_[AB])\.weight",
            (".weight", "lora_"),
        ),  # every run of two or more, longest first
        (r"(?P<layer>.+)\.weight", (".weight",)),
        (r".+\..+", (".",)),  # the one run there is, of one character
        (r"ab\.ab", ("ab.ab",)),
        (r"ab|cd", ()),  # alternatives at the top: nothing is required
        # a group of alternatives: the prefix or suffix they share, and the clause of each one's longest run
        (r"(?:.*\.)?(?:running_mean|running_var)", ("running_", ("running_mean", "running_var"))),
        (r"x_(?:mean|std)\.w", ("x_", ".w", ("mean", "std"))),  # (of equal lengths, the first first)
        (r"(?:ab|b)c", ("c",)),  # an alternative of one letter: no clause
        (r"a(?:bc|de)?f", ("a",)),  # an optional group: nothing of it
    ],
)
def test_needles_are_the_runs_every_match_holds(pattern: str, expected: tuple[str, ...]) -> None:
    assert needles(pattern) == expected


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (r"(?:.*\.)?h\.(?P<i>\d+)\.attn\.c_attn\.(?P<param>weight|bias)", ".attn.c_attn."),
        (r"ab+c", "ab"),  # 'b+' keeps its first b, then the run ends
        (r"abc?d", "ab"),  # an optional character ends the run before it
        (r"x(?:long_word)?y", "x"),  # an optional group is not required
        (r"(?:alpha|beta)_gamma", "_gamma"),  # alternatives inside a group: that group gives nothing
        (r"alpha|beta", ""),  # alternatives at the top: nothing is required
        (r"(?i:Norm)\.weight", ".weight"),  # a flag group gives nothing (case changes what letters mean)
        (r"(?i)weight", ""),  # global flags: no needle
        (r"[.]weight{2}", "weigh"),
        (r"a[]b]cd", "cd"),  # a class with a leading ] is one class
    ],
)
def test_needle_reads_only_what_is_certain(pattern: str, expected: str) -> None:
    assert needle(pattern) == expected


kind_names = st.builds(
    lambda parts, sep: sep.join(parts),
    st.lists(digits | st.sampled_from(["h", "attn", "bias", "masked_bias", "running_mean", "num_batches_tracked",
                                       "position_ids", "inv_freq", "batch_stats", "cache", "weight", "bn"]),
             min_size=1, max_size=6),
    st.sampled_from([".", "/"]),
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(kind_names, min_size=1, max_size=8))
def test_remembered_kind_rule_is_the_first_kind_rule_that_matches(batch: list[str]) -> None:
    """The kind table shares the role table's memo by name shape: h.3.attn.bias / h.17.attn.bias meet the same rule."""
    from inspector.kinds import KIND_RULES

    matcher = compile_rules(KIND_RULES)
    for name in batch + batch:
        found = matcher.match(name)  # the rule and the groups, at the spans remembered for the name's shape
        assert ((found[0].rule_id, found[1]) if found else None) == _full_scan(matcher, name), name


def test_every_rule_pattern_compiles() -> None:
    """Patterns are compiled on first use: a broken one must still fail here, not on some user's file."""
    assert len(compile_rules(ROLE_RULES).compiled) == len(ROLE_RULES)


def test_digits_spelled_in_a_pattern_keep_their_value() -> None:
    matcher = compile_rules(ROLE_RULES)
    assert matcher.shape_key("a/kernel:0") != matcher.shape_key("a/kernel:5")  # ':0' is spelled in a Keras rule
    assert matcher.shape_key("layers.3.x") == matcher.shape_key("layers.9.x")
    # the key is of the name's UTF-8 bytes: other characters (a lone surrogate a pickle may hold) keep theirs
    assert matcher.shape_key("層.3.x") == matcher.shape_key("層.7.x") != matcher.shape_key("屋.3.x")
    assert matcher.shape_key("\udcff.3") == matcher.shape_key("\udcff.4") != matcher.shape_key("\udcfe.4")
    assert matcher.match("\udcff.3.weight") is not None
    # a backreference compares the digits' values (and a digit in a set tells them apart): no memo for such a table
    from types import SimpleNamespace as Rule  # (a matcher's rules need only a pattern)

    for pattern in (r"(\d)\1\.w", r"(?P<a>\d)(?P=a)\.w", r"[0-4]\.w"):
        assert compile_rules([Rule(pattern=pattern), Rule(pattern=r"(?P<layer>.+)\.w")]).digits == b"", pattern
    assert compile_rules([Rule(pattern=r"(?P<layer>.+)\.w")]).digits != b""
    # the digits a pattern spells, escapes aside: the written table's and those read off a pattern agree
    assert compile_rules([Rule(pattern=r"a\.0\.\d+\.w")]).shape_key("a.0.5.w") == b"a.0.1.w"
    assert compile_rules([Rule(pattern=r"a\.0\.\d+\.w")]).triggers == ("a.0.",)


# -- what a run imports ---------------------------------------------------------------------------------------

NEVER_FOR_A_HEADER = (
    "numpy",
    "h5py",
    "importlib.metadata",
    "tabulate",
    "torch",
    "concurrent.futures",
    "inspector.audit",
    "loaders._pickle",  # the private helpers are lazy modules: run only by the loader that reads with them
    "loaders._hdf5",
    "loaders._sstable",
    "loaders._tf_kinds",
    "loaders._tf_proto",
    "typing",  # annotations only: modules import it under TYPE_CHECKING
    "dataclasses",  # records are inspector.recordtype records
    "inspect",
    "ast",  # npy headers in other spellings than numpy's only
    "pickletools",  # a pickle the interpreter cannot finish only
    "traceback",  # --debug only
    "zlib",  # deflated zip members only
    "json",  # jsontext writes and reads JSON (headers, configs) with `_json`'s escaper and scanner
    "_compat_pickle",  # a pickle naming a Python 2 module only (`_pickle_policy.python3_name`)
)
TORCH_HELPERS = ("loaders._pickle",)


@pytest.mark.parametrize(
    ("sample", "allowed"),
    [
        ("basic/mlp_fp16.safetensors", ()),
        ("hf_rau/bert-tiny/model.safetensors", ()),  # (its config.json beside it)
        ("torch/lstm_tied.pt", TORCH_HELPERS),
        ("basic/cnn_stored.npz", ()),
    ],
)
def test_json_run_imports_nothing_it_does_not_use(sample: str, allowed: tuple[str, ...]) -> None:
    path = ROOT / "sample_models" / sample
    if not path.exists():
        pytest.skip(f"{sample} not in sample_models")
    code = (
        "import sys, io, contextlib\nfrom inspector.cli import main\n"
        f"with contextlib.redirect_stdout(io.StringIO()): main([{str(path)!r}, '--json'])\n"
        "print(' '.join(sorted(n for n, m in sys.modules.items() if type(m).__name__ != '_LazyModule')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    loaded = set(out.split())
    assert not {m for m in NEVER_FOR_A_HEADER if m in loaded and m not in allowed}


@pytest.mark.parametrize(
    "sample",
    [
        "basic/mlp_fp16.safetensors",
        "basic/cnn_stored.npz",  # (its architecture inferred: the family tables imported)
        "torch/lstm_tied.pt",
        "mxnet/gluon_sequential.params",
        "hf_rau/bert-tiny/model.safetensors",  # (its config.json beside it)
    ],
)
def test_the_console_script_imports_neither_gettext_nor_re_nor_enum(sample: str) -> None:
    """The console script (`cli.run`, also `python -m inspector`) imports argparse with stand-ins for gettext (its
    functions as the identity) and re (`inspector.regexes`, from written programs), and the project's enums are its
    own: a run of a file of each format the benchmark times imports none of gettext, locale, re and enum (in an
    interpreter started without `site`, whose `.pth` files may import `re` themselves)."""
    path = ROOT / "sample_models" / sample
    if not path.exists():
        pytest.skip(f"{sample} not in sample_models")
    listing = (
        "import atexit, sys\nfrom inspector import cli\n"
        "atexit.register(lambda: print(' '.join(sorted(sys.modules)), file=sys.stderr))\ncli.run()"
    )
    argv = [sys.executable, "-S", "-c", listing, str(path), "--json"]
    run = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
    assert json.loads(run.stdout)["path"] == str(path), run.stderr
    loaded = set(run.stderr.split())
    assert "argparse" in loaded and "inspector.regexes" in loaded
    assert not loaded & {"gettext", "locale", "re", "enum"}


def test_the_console_script_words_are_those_of_main() -> None:
    """With the stand-ins, the help and a usage error are word for word those of `main` (which imports argparse as
    usual), and a later `import gettext` or `import re` gets the real module."""
    sample = str(ROOT / "sample_models" / "basic" / "mlp_fp16.safetensors")

    def words(entry: str, *argv: str) -> tuple[int, str, str]:
        code = f"import sys\nfrom inspector.cli import {entry}\nsys.exit({entry}())"
        done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=ROOT)
        return done.returncode, done.stdout, done.stderr

    for argv in (["--help"], ["--bogus", sample], ["diff", "--help"], ["formula", "--help"]):
        assert words("run", *argv) == words("main", *argv), argv
    assert words("run", "--help")[1].startswith("usage: inspector")
    later = (
        "import sys\nfrom inspector import cli, regexes\ncli._import_argparse_for_the_console()\n"
        "import argparse, gettext, re\nprint(argparse._ is str, gettext.__file__ is not None,"
        " gettext.gettext is not str, argparse._re is regexes, re.__file__ is not None,"
        " re.compile is not regexes.compile)"
    )
    argv = [sys.executable, "-S", "-c", later]
    out = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.split() == ["True"] * 6


@pytest.mark.reference
def test_a_pickle_the_c_path_reads_imports_no_interpreter(tmp_path: Path) -> None:
    """A torch.save state dict of a few hundred tensors (a pickle over `FAST_MIN_BYTES`) is read by the C path: the
    opcode interpreter's module (`loaders._pickle_machine`) is not imported; a small one's is."""
    torch = pytest.importorskip("torch")
    large, small = tmp_path / "large.pt", tmp_path / "small.pt"
    torch.save({f"layers.{i}.weight": torch.zeros(2) for i in range(300)}, large)
    torch.save({"w": torch.zeros(2)}, small)
    code = (
        "import sys, io, contextlib\nfrom inspector.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()): main([sys.argv[1], '--json'])\n"
        "print(' '.join(sorted(n for n, m in sys.modules.items() if type(m).__name__ != '_LazyModule')))"
    )
    loaded = {}
    for path in (large, small):
        run = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, cwd=ROOT)
        loaded[path] = set(run.stdout.split())
    assert "loaders._pickle_fast" in loaded[large] and "loaders._pickle_machine" not in loaded[large]
    assert "loaders._pickle_machine" in loaded[small] and "loaders._pickle_fast" not in loaded[small]


def test_a_lazy_helper_runs_when_first_read() -> None:
    """`from loaders import _x` binds a module whose body has not run; the first attribute read runs it, in place, and
    a torch zip run imports no `importlib.util` (with `importlib._abc` and `contextlib`) for that."""
    path = ROOT / "sample_models" / "torch" / "lstm_tied.pt"
    code = (
        "import sys, types\nbefore = set(sys.modules)\nimport loaders\nfrom loaders import _sstable\n"
        "assert type(_sstable).__name__ == '_LazyModule' and sys.modules['loaders._sstable'] is _sstable\n"
        "assert _sstable.MAGIC_BYTES == bytes.fromhex('57fb808b247547db')\n"
        "assert type(_sstable) is types.ModuleType and sys.modules['loaders._sstable'] is _sstable\n"
        "assert _sstable.__file__ == _sstable.__spec__.origin and _sstable.__spec__.name == 'loaders._sstable'\n"
        "assert _sstable.__package__ == 'loaders' and _sstable.__loader__ is _sstable.__spec__.loader\n"
        "import loaders._sstable as again\nassert again is _sstable\n"
        "import io, contextlib\nfrom inspector.cli import main\n"
        f"with contextlib.redirect_stdout(io.StringIO()): main([{str(path)!r}])\n"
        "assert type(sys.modules['loaders._pickle']) is types.ModuleType\n"
        "print(' '.join(sorted(set(sys.modules) - before)))"  # (an editable install imports importlib.util itself)
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert "importlib.util" not in out.split()


def test_a_declared_plugin_is_still_loaded(tmp_path: Path) -> None:
    """importlib.metadata is skipped only when no distribution declares the group: a declared one is loaded."""
    from inspector.registry import _declares_plugins

    (tmp_path / "plug_loader.py").write_text(
        "from loaders.base import Claim\n"
        "class PlugLoader:\n    name = 'plug-format'\n    extensions = ('.plug',)\n"
        "    def claim(self, probe):\n        return Claim.EXACT if probe.head.startswith(b'PLUG') else None\n"
    )
    meta = tmp_path / "plug_loader-1.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: plug-loader\nVersion: 1.0\n")
    assert not _declares_plugins([str(tmp_path)])
    (meta / "entry_points.txt").write_text("[inspector.loaders]\nplug = plug_loader:PlugLoader\n")
    assert _declares_plugins([str(tmp_path)])
    (tmp_path / "x.bin").write_bytes(b"PLUG" + bytes(60))
    code = (
        f"import sys; sys.path.insert(0, {str(tmp_path)!r})\n"
        f"from inspector import detect\nprint(detect({str(tmp_path / 'x.bin')!r}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip() == "plug-format"


def test_the_plugin_scan_sees_a_folder_changed_since_the_import_system_listed_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `sys.path` folder's names come from the import system's listing of it while the folder is unchanged: a
    distribution installed there after that listing is still found."""
    import importlib

    from inspector.registry import _declares_plugins, _listing

    (tmp_path / "listed_module_x.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("listed_module_x")  # (the import system lists the folder)
    monkeypatch.delitem(sys.modules, "listed_module_x")
    finder = sys.path_importer_cache[str(tmp_path)]
    assert _listing(str(tmp_path)) is finder._path_cache  # type: ignore[attr-defined]
    assert not _declares_plugins([str(tmp_path)])
    meta = tmp_path / "later_loader-1.0.dist-info"
    meta.mkdir()
    (meta / "entry_points.txt").write_text("[inspector.loaders]\nplug = later_loader:PlugLoader\n")
    assert _declares_plugins([str(tmp_path)])


def test_an_hdf5_file_behind_a_large_user_block_is_still_found(tmp_path: Path) -> None:
    """The user-block scan past the head runs only for a file nothing claims by its head, and still finds it."""
    h5py = pytest.importorskip("h5py")
    import numpy as np

    from inspector import detect
    from inspector.probe import Probe

    path = tmp_path / "ub.h5"
    with h5py.File(path, "w", userblock_size=8192) as f:
        f.create_dataset("w", data=np.ones(3, np.float32))
    assert detect(path) == "keras-h5"  # the HDF5 loader's name
    with Probe(path) as probe:
        assert probe.hdf5_head_offset is None and probe.hdf5_offset == 8192


# -- remembered module specs and region kinds ------------------------------------------------------------------

SHAPES = [(2,), (3,), (2, 3), (3, 2), (4, 2, 3, 3), (2, 2, 3), (0,), (), (8, 2)]
PARAMS = ["weight", "bias", "gamma", "beta", "kernel", "running_mean", "weight_ih_l0", "weight_hh_l0", "scale"]
modules_strategy = st.lists(
    st.tuples(
        st.sampled_from(["blk.{i}.fc", "blk.{i}.norm", "prelu{i}", "emb{i}", "conv{i}", "lstm{i}", "x"]),
        st.integers(0, 3),
        st.lists(st.tuples(st.sampled_from(PARAMS), st.sampled_from(SHAPES), st.booleans()), min_size=1, max_size=3),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(modules_strategy, st.sampled_from(["safetensors", "pytorch", "keras", "mxnet"]), st.booleans())
def test_remembered_module_specs_are_the_specs(
    modules: list[tuple[str, int, list[tuple[str, tuple[int, ...], bool]]]], framework: str, copied: bool
) -> None:
    """file_specs works a one-tensor module's spec out once per parameter name, shape, role and rule: every spec is
    the one module_spec gives the module itself (made one by one, or as copies of the first, a large file's way)."""
    from unittest import mock

    from inspector.errors import SpecError
    from inspector.modules import Module, file_modules, file_specs, module_spec, statistic_modules
    from inspector.records import Checkpoint, TensorInfo

    tensors: dict[str, TensorInfo] = {}
    for template, i, params in modules:
        for param, shape, alias in params:
            name = f"{template.format(i=i)}.{param}"
            first = next(iter(tensors), None)
            tensors[name] = TensorInfo(name, shape, "F32", 4 * math.prod(shape), 0, alias_of=first if alias else None)
    ckpt = Checkpoint("x", "safetensors", framework, (("x", 0),), tuple(tensors.values()), ())
    roles = match_roles(ckpt)
    statistics = statistic_modules(ckpt, roles, framework)

    def spec_or_error(module: Module) -> object:
        try:
            return module_spec(module, framework, module.name in statistics)
        except SpecError as exc:
            return str(exc)

    want = [spec_or_error(m) for m in file_modules(ckpt, roles).values()]
    errors = [s for s in want if isinstance(s, str)]
    with mock.patch("inspector.modules.COPIED_FROM", 0 if copied else 10**9):
        if errors:  # sizes no spec takes (a 0-d weight): the first module's error, as module by module
            with pytest.raises(SpecError) as raised:
                file_specs(ckpt, roles)
            assert str(raised.value) == errors[0]
        else:
            assert file_specs(ckpt, roles) == want


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 64), st.sampled_from(["parameter", "buffer", "optimizer"]), st.booleans())),
    st.lists(st.integers(1, 40), max_size=4),
)
def test_region_kinds_are_the_kinds_of_the_tensors_in_each_region(
    sizes: list[tuple[int, str, bool]], junk: list[int]
) -> None:
    """A file whose tensors are its data regions one for one (read off directly), with aliases stored once, empty
    tensors and extra data regions no tensor claims (the general search): each region gets the most important kind
    of the tensors overlapping it."""
    from inspector.reconcile import KIND_PRIORITY, _region_kinds
    from inspector.records import Checkpoint, Region, RegionKind, TensorInfo, TensorKind
    from loaders.base import tile

    tensors: list[TensorInfo] = []
    regions: list[Region] = []
    pos = 0
    for i, (size, kind, alias) in enumerate(sizes):
        t = TensorInfo(f"t{i}", (size,), "U8", size, pos, kind=TensorKind(kind))
        tensors.append(t)
        if alias and size:
            tensors.append(TensorInfo(f"a{i}", (size,), "U8", size, pos, alias_of=t.name, kind=TensorKind(kind)))
        regions.append(Region(RegionKind.TENSOR_DATA, pos, size, t.name))
        pos += size
    for n in junk:
        regions.append(Region(RegionKind.TENSOR_DATA, pos, n, "unclaimed"))
        pos += n
    ckpt = Checkpoint("x", "f", "safetensors", (("x", pos),), tuple(tensors), tile(regions, pos))
    want = {}
    for i, r in enumerate(ckpt.regions):
        kinds = {t.kind for t in tensors if (t.offset or 0) < r.end and (t.offset or 0) + max(t.nbytes, 1) > r.start}
        if kinds:
            want[i] = next(k for k in KIND_PRIORITY if k in kinds)
    got = {i: k for per_file in _region_kinds(ckpt).values() for i, k in per_file.items()}
    assert got == want


def _tile_one_by_one(regions: list[Any], file_size: int, file: int) -> tuple[Any, ...]:
    """loaders.base.tile as it was written before its fast paths: sort, then region by region."""
    from inspector.records import Region, RegionKind

    out: list[Region] = []
    pos = 0
    for r in sorted((r for r in regions if r.length > 0), key=lambda r: (r.start, -r.length)):
        start, length = r.start, r.length
        if start < pos:
            length -= pos - start
            start = pos
            if length <= 0:
                continue
        if start > pos and pos < file_size:
            out.append(
                Region(RegionKind.UNKNOWN, pos, min(start, file_size) - pos, "bytes no structure explains", file)
            )
        end = min(start + length, file_size)
        if end > start:
            out.append(Region(r.kind, start, end - start, r.label, file, r.logical))
        pos = max(pos, end)
    if pos < file_size:
        out.append(Region(RegionKind.UNKNOWN, pos, file_size - pos, "trailing bytes no structure explains", file))
    return tuple(out)


# regions as (start, length, kind, file), a file size, whether the regions are laid one after the other from byte 0
SPANS = st.lists(
    st.tuples(st.integers(0, 60), st.integers(0, 12), st.sampled_from(["header", "padding"]), st.integers(0, 1))
)


@settings(max_examples=400, deadline=None)
@given(SPANS, st.integers(0, 70), st.booleans())
def test_tile_is_region_by_region(spans: list[tuple[int, int, str, int]], file_size: int, contiguous: bool) -> None:
    """Regions in order, one after the other from byte 0, or shuffled, overlapping, empty, past the end, of another
    file: tile gives what sorting and walking them one by one gives."""
    from inspector.records import Region, RegionKind
    from loaders.base import tile

    if contiguous:  # the common layout: each region where the last one ended
        starts = [sum(length for _, length, _, _ in spans[:i]) for i in range(len(spans))]
        spans = [(start, length, kind, 0) for start, (_, length, kind, _) in zip(starts, spans, strict=True)]
    regions = [
        Region(RegionKind(kind), start, length, f"r{i}", file) for i, (start, length, kind, file) in enumerate(spans)
    ]
    assert tile(regions, file_size) == _tile_one_by_one(regions, file_size, 0)


@settings(max_examples=400, deadline=None)
@given(SPANS, st.integers(0, 70), st.booleans(), st.booleans())
def test_region_columns_are_the_regions_and_tile_as_they_do(
    spans: list[tuple[int, int, str, int]], file_size: int, contiguous: bool, subjects: bool
) -> None:
    """`RegionColumns` (a zip's regions, `_zip.in_file_order`) are the regions they hold: item by item, sliced, as
    labels and field columns; `tile` gives for them what it gives for the list (and what walking them one by one
    gives), whatever the file's size, and columns again when they lie one after the other from byte 0."""
    from inspector.records import Region, RegionColumns, RegionKind, region_column
    from loaders.base import tile

    if contiguous:  # the common layout: each region where the last one ended (maybe empty)
        starts = [sum(length for _, length, _, _ in spans[:i]) for i in range(len(spans))]
        spans = [(start, length, kind, 0) for start, (_, length, kind, _) in zip(starts, spans, strict=True)]
    regions = [  # (a subject for some: "%" in a label written as it is)
        Region(RegionKind(kind), start, length, *(("r%s", 0, None, f"{i}%") if subjects and i % 2 else (f"r{i}%",)))
        for i, (start, length, kind, _) in enumerate(spans)
    ]
    columns = RegionColumns(*[region_column(regions, name) for name in ("kind", "start", "length", "text", "subject")])
    assert list(columns) == regions and columns == regions and len(columns) == len(regions)
    assert list(columns[1:-1]) == regions[1:-1] and [columns[i] for i in range(len(regions))] == regions
    assert columns.labels() == [r.label for r in regions] == region_column(columns, "label")
    for name in ("kind", "start", "length", "text", "file", "logical", "subject"):
        assert region_column(columns, name) == [getattr(r, name) for r in regions]
    laid = (
        bool(regions)
        and all(r.length > 0 for r in regions)
        and [r.start for r in regions] == [sum(r.length for r in regions[:i]) for i in range(len(regions))]
    )
    assert columns.laid() == laid
    tiled = tile(columns, file_size)
    assert (tiled.__class__ is RegionColumns) == (laid and regions[-1].end <= file_size)
    assert tuple(tiled) == tile(regions, file_size)
    assert [(r.kind, r.start, r.length, r.label) for r in tiled] == [
        (r.kind, r.start, r.length, r.label) for r in _tile_one_by_one(regions, file_size, 0)
    ]


def _layer_parts(family: Any) -> list[Any]:
    """The parts `family_check.detect` needs all of when no config names the model type (its own list)."""
    from inspector.family_check import PLACEHOLDER, _in_stack

    return [
        p
        for p in family.parts
        if not p.when and "{" in p.path and PLACEHOLDER.search(p.path) and not (family.stacks and _in_stack(p, family))
    ]


def test_every_family_needs_a_name_with_a_part_of_digits() -> None:
    """What `infer.may_be_family` stands on: from every base of every family, some layer part keys to a path holding
    '#' (a whole part of digits), or the family has no layer part and is never found without a config."""
    from inspector.families import FAMILIES
    from inspector.family_check import PLACEHOLDER, FileView, _shape_key

    for family in FAMILIES:
        parts = _layer_parts(family)
        for base in family.bases:
            view = FileView(None, base)  # type: ignore[arg-type]  # (only `full` is read)
            keys = [_shape_key(PLACEHOLDER.sub("0", view.full(p.path))) for p in parts]
            assert not parts or any("#" in k for k in keys), (family.name, base, keys)


# a part in place of a layer index: digits (a family may be found) or parts that are not all digits
INDEX_PARTS = st.sampled_from(["0", "3", "12", "x1", "1x", "l0", "0_", "", "a", "٣"])


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_a_file_without_a_part_of_digits_is_no_family(data: st.DataObject) -> None:
    """Names made from family parts, their indices replaced: where `may_be_family` is false, `detect` finds no
    family and `refine_roles` keeps every role (what the run then skips), and the expectation is the same."""
    from inspector.families import FAMILIES
    from inspector.family_check import detect, refine_roles
    from inspector.family_check import expect as family_expect
    from inspector.infer import may_be_family
    from inspector.records import Checkpoint, TensorInfo

    family = data.draw(st.sampled_from(FAMILIES))
    base = data.draw(st.sampled_from(family.bases))
    index = data.draw(INDEX_PARTS)
    names: dict[str, None] = {}
    for p in family.parts:
        path = p.path[1:] if p.path.startswith("/") else base + p.path
        for placeholder in "ijke":
            path = path.replace("{" + placeholder + "}", index)
        for leaf in data.draw(st.lists(st.sampled_from(["weight", "bias", "0", "scale"]), min_size=1, max_size=2)):
            names[f"{path}.{leaf}"] = None
    tensors = tuple(TensorInfo(n, (4, 4), "F32", 64, None) for n in names)
    ckpt = Checkpoint("x.safetensors", "safetensors", "safetensors", (("x.safetensors", 0),), tensors, ())
    roles = match_roles(ckpt)
    assert may_be_family(ckpt) == (index.isdecimal() or any(x.isdecimal() for n in names for x in n.split(".")))
    if not may_be_family(ckpt):
        assert detect(ckpt) == []
        assert family_expect(ckpt, roles) is None
        for f in FAMILIES:
            fake = type("E", (), {"architecture": f.name})()
            assert refine_roles(ckpt, roles, fake) == roles  # type: ignore[arg-type]


def test_a_file_of_no_family_imports_no_family_table(tmp_path: Path) -> None:
    """A `--json` run on a file whose names have no part of digits (`layer_000.weight`) imports neither
    `inspector.families` nor `inspector.family_check`; one with layer indices does, and finds its family."""
    safetensors_numpy = pytest.importorskip("safetensors.numpy", reason="safetensors writes the files")
    import numpy as np

    plain, indexed = tmp_path / "plain.safetensors", tmp_path / "indexed.safetensors"
    safetensors_numpy.save_file({f"layer_{i:03d}.weight": np.zeros((4, 4), np.float32) for i in range(4)}, plain)
    safetensors_numpy.save_file({f"layers.{i}.weight": np.zeros((4, 4), np.float32) for i in range(4)}, indexed)
    for path, imported in ((plain, False), (indexed, True)):
        code = (
            "import sys, io, contextlib\nfrom inspector.cli import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()): main([{str(path)!r}, '--json'])\n"
            "print('inspector.families' in sys.modules, 'inspector.family_check' in sys.modules)"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
        assert out.stdout.split() == [str(imported)] * 2


def test_first_positional_instances_are_the_compiled_inits() -> None:
    """A record without factories binds its first positional calls in one C loop: the same fields, defaults and
    `__post_init__` as the compiled `__init__`, whose own errors a call that does not bind still gets."""
    from inspector import recordtype
    from inspector.recordtype import record

    seen: list[tuple[object, ...]] = []

    def make() -> Any:
        @record(frozen=True, slots=True)
        class Row:
            a: int
            b: str = "x"
            c: tuple[int, ...] = ()

            def __post_init__(self) -> None:
                seen.append((self.a, self.b, self.c))

        return Row

    calls = [(1,), (2, "y"), (3, "z", (4,)), (recordtype.MISSING,)]
    bound = make()
    first = [repr(bound(*args)) for args in calls]
    assert bound.__init__.__code__.co_filename != "<string>"  # not compiled yet
    compiled = make()
    for _ in range(recordtype.COMPILE_AFTER):
        compiled(0)
    del seen[:]
    after = [repr(compiled(*args)) for args in calls]
    assert compiled.__init__.__code__.co_filename == "<string>"
    assert first == after and len(seen) == len(calls)
    with pytest.raises(TypeError, match="takes from 2 to 4 positional arguments but 5 were given"):
        make()(1, "b", (), 4)


def test_classes_of_one_shape_share_one_compiled_init() -> None:
    """Compiled `__init__`s are made from one compile per shape with each class's own names, defaults and factories
    put in: keywords, defaults, factories, `__post_init__` and Python's errors are each class's own."""
    from inspector import recordtype
    from inspector.recordtype import field, record

    @record(frozen=True, slots=True)
    class A:
        x: int
        y: list[int] = field(default_factory=list)
        z: str = "a"

    @record(frozen=True, slots=True)
    class B:
        p: int
        q: list[int] = field(default_factory=lambda: [7])
        r: str = "b"

        def __post_init__(self) -> None:
            object.__setattr__(self, "r", self.r.upper())

    @record(frozen=True, slots=True)
    class C:
        u: int
        v: dict[str, int] = field(default_factory=dict)
        w: str = "c"

    for cls in (A, B, C):
        for _ in range(recordtype.COMPILE_AFTER + 1):  # (the call after them compiles)
            cls(0)
    assert A.__init__.__code__.co_code == C.__init__.__code__.co_code  # (one shape, one compile)
    assert A.__init__.__code__.co_varnames == ("self", "x", "y", "z")
    assert repr(A(1)).endswith("A(x=1, y=[], z='a')") and A(1).y is not A(1).y
    assert repr(B(2, r="k")).endswith("B(p=2, q=[7], r='K')")
    assert repr(C(w="d", u=3)).endswith("C(u=3, v={}, w='d')")
    assert repr(A(1, recordtype.MISSING)).endswith("A(x=1, y=[], z='a')")  # as the factory reads a MISSING
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'u'"):
        C()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'x'"):
        C(1, x=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="multiple values for argument 'p'"):
        B(1, p=2)  # type: ignore[misc]


def test_the_written_inits_are_the_compiled_templates(tmp_path: Path) -> None:
    """`inspector/record_inits.py` is what `python -m inspector.recordtype` writes now, and the code read from it for
    each shape is the code `_template` compiles (the same instructions, names, lines, file name): a record's
    `__init__` is the same whichever it came from."""
    import __future__

    from inspector import record_inits, recordtype

    recordtype.write(str(tmp_path / "record_inits.py"))
    assert (tmp_path / "record_inits.py").read_text() == Path(record_inits.__file__).read_text()
    for count in range(recordtype.WRITTEN_FIELDS + 1):
        for post_init in (False, True):
            written, compiled = recordtype._written((count, (), post_init)), recordtype._template(count, (), post_init)
            # (`exec` gives the template recordtype's `from __future__ import annotations` flag: no annotation in it)
            future = __future__.annotations.compiler_flag
            assert written.replace(co_flags=written.co_flags | future) == compiled.replace(
                co_flags=compiled.co_flags | future
            )
            assert written.co_filename == compiled.co_filename == "<string>"
            assert (written.co_varnames, written.co_names, written.co_qualname) == (
                compiled.co_varnames,
                compiled.co_names,
                compiled.co_qualname,
            )
    assert recordtype._written((3, (1,), False)) is None  # a factory: compiled
    assert recordtype._written((recordtype.WRITTEN_FIELDS + 1, (), False)) is None


def test_zip_names_without_the_utf8_flag_read_as_cp437(tmp_path: Path) -> None:
    """A member name without the UTF-8 flag is cp437 (as zipfile reads it); an ASCII one is read without that codec."""
    import io
    import zipfile

    np = pytest.importorskip("numpy")
    from inspector.registry import load

    path = tmp_path / "names.npz"
    with zipfile.ZipFile(path, "w") as zf:
        for name in ("plain", "caf\u00e9"):
            buf = io.BytesIO()
            np.save(buf, np.zeros(3, np.float32))
            zf.writestr(f"{name}.npy", buf.getvalue())  # (zipfile sets the UTF-8 flag of a non-ASCII name)
    data = bytearray(path.read_bytes())
    for sig, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # the flag bits of local headers and directory entries
        pos = data.find(sig)
        while pos >= 0:
            data[pos + at + 1] &= ~0x08
            pos = data.find(sig, pos + 4)
    path.write_bytes(bytes(data))
    with zipfile.ZipFile(path) as zf:
        expected = [n.removesuffix(".npy") for n in zf.namelist()]
    assert expected[1] != "caf\u00e9"  # (its UTF-8 bytes read as cp437)
    assert [t.name for t in load(path).tensors] == expected


@pytest.mark.parametrize("sample", ["sockeye_gru.params", "sockeye_lstm.params", "sockeye_lstm_arg_fp16.params"])
def test_mxnet_record_headers_are_one_read_each(sample: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """An MXNet record's header fields come from one read (not one per field), and no read pulls a page holding no
    byte of a header or of the names block (what reads of exactly those structures pull)."""
    from inspector.registry import load
    from tests.conftest import record_reads

    path = ROOT / "sample_models" / "mxnet" / sample
    if not path.exists():
        pytest.skip(f"{sample} not in sample_models")
    reads = record_reads(monkeypatch)
    ckpt = load(path)
    monkeypatch.undo()
    structure = [(r.start, r.start + r.length) for r in ckpt.regions if r.kind.value in ("header", "metadata")]
    pages = {p for start, end in structure for p in range(start // 4096, (end - 1) // 4096 + 1)}
    past_head = sum(1 for r in ckpt.regions if r.kind.value == "header" and r.start + r.length > 4096)
    assert past_head > 10 and len(reads) <= past_head + len(pages), (len(reads), past_head)
    for _, offset, n in reads:
        assert set(range(offset // 4096, (offset + n - 1) // 4096 + 1)) <= pages, (offset, n)


def test_importing_the_package_leaves_the_collector_as_it_was() -> None:
    """The package's imports leave the collector on (off if it was off) and nothing frozen, and their objects go to
    the oldest generation: no young collection walks them after (the largest young generation a collection met
    during the import is printed)."""
    code = (
        "import gc\nseen = [0]\n"
        "gc.callbacks.append(lambda phase, info: phase == 'start' and seen.append(len(gc.get_objects(0))))\n"
        "import inspector\ngc.callbacks.clear()\n"
        "print(gc.isenabled(), gc.get_freeze_count(), max(seen) < 1000)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.split() == ["True", "0", "True"]
    off = subprocess.run(
        [sys.executable, "-c", "import gc\ngc.disable()\nimport inspector\nprint(gc.isenabled())"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    ).stdout
    assert off.split() == ["False"]


def test_a_pickle_shorter_than_the_opcode_cap_is_scanned_without_counting_runs() -> None:
    """Each opcode the scan counts takes a byte at least: a pickle of fewer bytes than `MAX_OPS` cannot reach the cap,
    is scanned without the exact-run pattern (not compiled for it) and gives the stream and end a counted scan gives,
    on every pickle of the samples and fixtures."""
    from types import SimpleNamespace

    from loaders import _pickle, _pickle_fast
    from tests.test_pickle_fast import FIXTURES, SAMPLES, files, pickles_in

    found = []
    for path in [*files(SAMPLES), *files(FIXTURES)]:
        try:
            found += list(pickles_in(path))
        except Exception:  # noqa: BLE001 - files that are no torch file or bare pickle
            continue
    caps = {k: getattr(_pickle, k) for k in ("MAX_OPS", "MAX_INLINE", "MAX_STACK", "MAX_MARKS")}
    scanned = []
    for data in found:
        uncounted = _pickle_fast._scan(data, SimpleNamespace(**caps | {"MAX_OPS": len(data) + 1}), True)
        counted = _pickle_fast._scan(data, SimpleNamespace(**caps | {"MAX_OPS": len(data)}), True)
        assert uncounted == counted, data[:80]
        scanned += [data] if uncounted is not None else []
    assert len(scanned) >= (20 if FIXTURES.is_dir() else 10), len(scanned)  # (the samples alone hold 12)
    _pickle_fast._patterns.cache_clear()
    assert _pickle_fast._scan(scanned[0], SimpleNamespace(**caps), True) is not None
    bits = min(31, max(20, len(scanned[0]).bit_length() + 1))
    assert _pickle_fast._patterns.cache_info().currsize == 1  # the uncounted scan's patterns only
    assert _pickle_fast._patterns(bits, _pickle_fast.SMALL_SHORT, False)[0] is None
    assert _pickle_fast._patterns.cache_info().hits == 1


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(names, st.sampled_from([(4,), (4, 4), (4, 4, 3), ()]), st.sampled_from(list(TensorKind))),
             min_size=1, max_size=12),
    st.sampled_from(["pytorch", "safetensors", "mxnet"]),
)  # fmt: skip
def test_roles_made_from_a_remembered_shape_are_the_rules_answers(
    tensors: list[tuple[str, tuple[int, ...], TensorKind]], framework: str
) -> None:
    """`match_roles` makes a name's RoleMatch from the answer remembered for its shape (role, rule, parameter name,
    where the layer lies): the same roles as asking the rules of every name without a memo, names of one shape with
    other numbers, repeated names, buffers and optimizer state included."""
    from inspector.records import Checkpoint, TensorInfo
    from inspector.roles import FAMILY

    family = FAMILY.get(framework, "")
    remembered = compile_rules(FAMILY_MATCHERS[family].rules)  # a fresh memo, shapes remembered
    asked = compile_rules(FAMILY_MATCHERS[family].rules)
    object.__setattr__(asked, "digits", b"")  # no memo: every name asked of the rules
    assert remembered.digits
    for repeated in (1, 2, 3):  # (twice: repeated names; the first time, a shape's answer is not yet remembered)
        made = [TensorInfo(name, shape, "F32", 4, None, kind=kind) for name, shape, kind in tensors * repeated]
        ckpt = Checkpoint("x", "x", framework, (("x", 0),), tuple(made), ())
        assert match_roles(ckpt, remembered) == match_roles(ckpt, asked)


def test_json_columns_of_one_value_are_written_into_the_template() -> None:
    """A batch column of one value (a dtype, a kind, a status) is written once into the batch's template: values
    equal but written differently (1, 1.0, True), strings with '%', long ones, None, shapes as tuples or lists."""
    n = 3 * jsontext.ROWS + 7
    rows: list[dict[str, object]] = [
        {"k": "parameter", "p": "100%s%d%%", "i": 7, "b": True, "z": None, "l": "x" * 100, "s": (2, 3), "m": [i, 1],
         "e": 1 if i % 2 else True, "f": 1.0 if i % 3 else 1, "t": (i,) if i % 5 else [i], "u": "\u2603\n\""}
        for i in range(n)
    ]  # fmt: skip
    doc = {"rows": rows}
    assert dumps(doc) == json.dumps(doc, indent=2, default=str)
    keys = tuple(rows[0])

    def columns(batch: list[dict[str, object]]) -> tuple[tuple[str, ...], list[object]]:
        return keys, [tuple(row[k] for row in batch) for k in keys]  # (columns as tuples, as render gives them)

    laid = {"rows": jsontext.Rows(rows, dict, columns)}
    assert dumps(laid) == json.dumps(doc, indent=2, default=str)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(jsontext, "STREAM_ITEMS", 2)
        mp.setattr(jsontext, "ROWS", 2)
        assert dumps(laid) == json.dumps(doc, indent=2, default=str)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text("ab/.\n", max_size=6), max_size=6), st.sampled_from(["a", "b.a", "/a", "data.pkl", ".b"]))
def test_zip_member_search_is_endswith_over_the_names(names: list[str], ending: str) -> None:
    """`loaders._has_member`'s one search of the names joined by newlines: true for every directory with a name
    ending so, and exactly `endswith` over the names where no name holds a newline (a claim judges the others)."""
    from types import SimpleNamespace

    from loaders import _has_member

    probe: Any = SimpleNamespace(zip_names="".join(name + "\n" for name in names))
    found = any(name.endswith(ending) for name in names)
    assert _has_member(probe, ending) == found or (not found and any("\n" in name for name in names))
    assert _has_member(SimpleNamespace(zip_names=None), ending)  # type: ignore[arg-type]


MEMBERS = st.lists(  # (gap before, name length, padding, payload, descriptor) of each member
    st.tuples(
        st.integers(0, 2), st.integers(1, 3), st.sampled_from([0, 0, 5]), st.integers(0, 4), st.sampled_from([0, 16])
    ),  # fmt: skip
    max_size=6,
)


@settings(max_examples=400, deadline=None)
@given(MEMBERS, st.integers(0, 2))
def test_zip_member_columns_tell_laid_as_the_regions_are(
    members: list[tuple[int, int, int, int, int]], gap: int
) -> None:
    """`_zip._member_columns` tells whether a zip's regions are laid from what its members' offsets say (a member's
    regions follow one another): what `RegionColumns.laid` finds over the regions themselves, members with gaps,
    without padding, descriptors or payload bytes, and end records after a gap or none."""
    from inspector.records import Region, RegionColumns, RegionKind
    from loaders._zip import Members, Payloads, ZipMember, _member_columns

    made, at = [], 0
    for before, name, padding, size, descriptor in members:
        at += before
        header = 30 + name + padding
        made.append(ZipMember("n" * name, at, at + header, size, size, 0, header, padding, descriptor))
        at += header + size + descriptor
    payloads = Payloads([RegionKind.TENSOR_DATA] * len(made), ["p %s"] * len(made), ["'x'"] * len(made), {})
    ends = [Region(RegionKind.HEADER, at + gap, 22, "zip end of central directory")]
    columns = _member_columns(Members.of(made), payloads, ends)
    again = RegionColumns(columns.kinds, columns.starts, columns.lengths, columns.texts, columns.subjects)
    assert columns.laid() == again.laid()


def test_an_npz_parses_each_distinct_npy_header_once(tmp_path: Path) -> None:
    """Members of one shape and dtype share one header: it is parsed once (a model's repeated layers)."""
    import numpy as np

    from inspector import load
    from loaders import npy

    path = tmp_path / "layers.npz"
    np.savez(path, a=np.zeros((3, 4), np.float32), b=np.ones((3, 4), np.float32), c=np.zeros(5, np.float16))
    npy._PARSED.clear()
    ckpt = load(path)
    assert len(npy._PARSED) == 2 and [t.shape for t in ckpt.tensors] == [(3, 4), (3, 4), (5,)]
    assert [t.dtype for t in ckpt.tensors] == ["F32", "F32", "F16"]


def test_checkpoint_columns_are_the_fields_read_once(tmp_path: Path) -> None:
    """`Checkpoint.column` gives each tensor's field (or elements) in order, read once while the checkpoint's tensors
    are the last asked about, and read again for another checkpoint's, whichever is asked in turn; `unique`,
    `count_known` and `n_parameters` read from it are what the tensors themselves say."""
    from math import prod

    from inspector.records import PICKLED_DTYPE, READ_TENSORS, Checkpoint, TensorInfo, TensorKind

    torch = pytest.importorskip("torch")
    lin = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    state = dict(lin.state_dict())
    state["tied"] = state["0.weight"]
    torch.save(state, tmp_path / "tied.pt")
    from inspector import load

    real = load(tmp_path / "tied.pt")
    made = Checkpoint("x", "x", "x", (("x", 0),), (
        TensorInfo("a", (2, 3), "F16", 12, 0, kind=TensorKind.BUFFER, trainable=False, file=1, span=40),
        TensorInfo("b", (), PICKLED_DTYPE, 0, None, kind=TensorKind.METADATA),
    ), ())  # fmt: skip
    for _ in range(2):
        for ckpt in (real, made, real):
            for name in (*READ_TENSORS, "name", "elements"):
                want = tuple(prod(t.shape) if name == "elements" else getattr(t, name) for t in ckpt.tensors)
                assert ckpt.column(name) == want, name
                assert ckpt.column(name) is ckpt.column(name)  # (read once)
            unique = tuple(t for t in ckpt.tensors if t.alias_of is None)
            assert ckpt.unique() == unique
            assert ckpt.n_parameters == sum(prod(t.shape) for t in unique if t.kind is TensorKind.PARAMETER)
    assert real.unique() != real.tensors and made.unique() is made.tensors
    assert real.count_known and not made.count_known
