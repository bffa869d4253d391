"""`jsontext`'s batches written column by column (`Rows.columns`): each way a column is written gives the text of
`json.dumps(indent=2, default=str)`, on values that are equal but written differently, and on a real zip's regions."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from inspector import jsontext
from inspector.jsontext import Joined, Rows, dumps
from inspector.records import RegionColumns, RegionKind


class Sub(int):
    def __repr__(self) -> str:  # (json writes an int subclass by int's repr, not this)
        return "Sub()"


class Text(str):
    pass


def _columns(keys: tuple[str, ...]) -> Any:
    return lambda batch: (keys, [tuple(row[k] for row in batch) for k in keys])


def _written(rows: list[dict[str, Any]]) -> str:
    """The rows written column by column, in batches of the usual size, of `STREAM_ITEMS` and of 2."""
    doc = {"rows": Rows(rows, dict, _columns(tuple(rows[0])))}
    text = dumps(doc)
    for size in (jsontext.STREAM_ITEMS, 2):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(jsontext, "ROWS", size)
            mp.setattr(jsontext, "STREAM_ITEMS", min(size, jsontext.STREAM_ITEMS))
            assert dumps(doc) == text
    return text


N = 3 * jsontext.ROWS + 7


@pytest.mark.parametrize(
    "odd",
    [None, 2.0, True, Fraction(2), Sub(2), "2", mock.ANY],
    ids=["none", "float", "bool", "fraction", "int-subclass", "str", "any"],
)
def test_one_value_columns_with_an_odd_row_are_json_dumps(odd: Any) -> None:
    """A column of one int (above 1, 1, 0), one bool, one str or one shape, with one row of a value equal to it but
    written differently (or not equal): json's text, whichever way each column is told."""
    rows: list[dict[str, Any]] = [
        {"two": 2, "one": 1, "zero": 0, "yes": True, "dtype": "F32", "shape": (2, 1, 0), "n": i} for i in range(N)
    ]
    at = jsontext.ROWS + 3
    for key in ("two", "one", "zero", "yes", "dtype"):
        rows[at] = {**rows[at], key: odd}
    rows[at + 1] = {**rows[at + 1], "shape": (odd, 1, 0)}
    rows[at + 2] = {**rows[at + 2], "shape": (2, odd, 0)}
    rows[at + 3] = {**rows[at + 3], "dtype": Text("F32")}  # (a str subclass: its characters)
    assert _written(rows) == json.dumps({"rows": rows}, indent=2, default=str)


def test_numpy_numbers_among_ints_are_json_dumps() -> None:
    np = pytest.importorskip("numpy")
    rows = [{"two": 2, "n": i % 7, "shape": (2, 3)} for i in range(N)]
    rows[5] = {"two": np.int64(2), "n": np.int64(3), "shape": (np.int64(2), 3)}
    assert _written(rows) == json.dumps({"rows": rows}, indent=2, default=str)


def test_int_columns_of_numbers_that_come_again_or_not_are_json_dumps() -> None:
    """Numbers that come again (looked up once made) and numbers each new (`repr`), negative and huge ones, an int
    subclass and a bool among them."""
    rows: list[dict[str, Any]] = [
        {"again": i % 5, "new": 10**30 + i, "signed": -i * 7, "mixed": i % 3} for i in range(4 * N)
    ]
    rows[N] = {**rows[N], "mixed": Sub(1)}
    rows[2 * N] = {**rows[2 * N], "mixed": True}
    assert _written(rows) == json.dumps({"rows": rows}, indent=2, default=str)


@pytest.mark.parametrize(
    "subject",
    ["w.0", 'quote"d', "back\\slash", "tab\tbed", "snow\u2603man", 7, None],
    ids=["plain", "quote", "backslash", "control", "unicode", "int", "none"],
)
def test_joined_columns_are_their_strings(subject: Any) -> None:
    """A `Joined` column is written as its strings: its parts as they are where every part is plain (a part every
    row shares written into the literal text), else `whole()`'s strings escaped."""
    heads = ["local '", "record '"] * (N // 2) + ["local '"] * (N % 2)
    subjects: list[Any] = [f"m/{i}" for i in range(N)]
    subjects[N // 2] = subject
    tails = ["'"] * N
    strings = [f"{h}{s}{t}" for h, s, t in zip(heads, subjects, tails, strict=True)]
    rows = [{"kind": "header", "label": s, "n": i} for i, s in enumerate(strings)]

    def columns(batch: range) -> tuple[tuple[str, ...], list[Any]]:
        part = slice(batch.start, batch.stop)
        label = Joined((heads[part], subjects[part], tails[part]), lambda: strings[part])
        return ("kind", "label", "n"), [["header"] * len(batch), label, list(batch)]

    doc = {"rows": Rows(range(N), lambda i: rows[i], columns)}
    assert dumps(doc) == json.dumps({"rows": rows}, indent=2, default=str)


def test_region_label_parts_join_to_the_labels() -> None:
    """`RegionColumns.label_parts` joins to `labels` and to each region's `label`: texts with a part after the
    subject or not, regions without a subject, a text without '%s' or with another '%' (no parts)."""
    kinds = [RegionKind.HEADER] * 5
    starts, lengths = [0, 1, 2, 3, 4], [1] * 5
    cases: list[tuple[list[str], list[Any]]] = [
        (["local '%s'", "record '%s'", "local '%s'", "end", "record '%s'"], ["a", "b", "c", None, "e"]),
        (["%s", "data %s", "%s", "%s", "x %s"], ["a", "b", "c", "d", "e"]),
        (["local '%s'"] * 5, ["a", "b", "c", "d", "e"]),
        (["plain", "local '%s'", "50%% of %s", "b", "c"], [None, "a", "b", None, None]),
        (["one", "two", "three", "four", "five"], [None] * 5),
    ]
    for texts, subjects in cases:
        regions = RegionColumns(kinds, starts, lengths, texts, subjects)
        labels = [r.label for r in regions]
        assert regions.labels() == labels
        parts = regions.label_parts()
        if parts is not None:
            heads, middle, tails = parts
            joined = [
                h + s + (t if tails is not None else "") for h, s, t in zip(heads, middle, tails or heads, strict=True)
            ]
            assert joined == labels


def test_a_zips_regions_written_by_their_parts_are_the_dicts(tmp_path: Path) -> None:
    """A torch.save zip's regions (`RegionColumns`, labels in parts) written lazily are the text of the dicts."""
    torch = pytest.importorskip("torch")
    from inspector.render import render_json, report_dict
    from inspector.report import inspect

    state = {f"layers.{i}.weight": torch.full((2, i % 3 + 1), float(i)) for i in range(2 * jsontext.STREAM_ITEMS + 9)}
    torch.save(state, tmp_path / "m.pt")
    report = inspect(tmp_path / "m.pt")
    assert isinstance(report.checkpoint.regions, RegionColumns)
    lazy = report_dict(report, lazy=True)
    assert isinstance(lazy["bytes"]["regions"].columns(lazy["bytes"]["regions"].items[:4])[1][3], Joined)
    assert render_json([lazy], many=False) == json.dumps(report_dict(report), indent=2, default=str)
