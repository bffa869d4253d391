"""Text tables of more rows than a reader takes in: rows of layers that differ only in numbered parts folded into one.

The text report's layer table and its expectation's table have a row per layer. A file of 100,000 layers made each
100,000 rows, which took tabulate about 4 s (its type inference reads every cell). Past `TEXT_ROWS` rows, rows whose
layers are one name but for their numbered parts (`model.layers.17.mlp.3` -> `model.layers.#.mlp.#`) and whose
other columns but the summed ones are equal become one row: the name with `#` for those parts, how many layers it
holds, the sums added. A group of one layer keeps its name. Past `TEXT_ROWS` folded rows the rest are counted in a
line. The JSON report lists every layer; `--tensors` and `--regions` list every tensor and region as asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from inspector import regexes

TEXT_ROWS = 1000  # rows of a text table listed one by one; a larger table is folded


# a part of digits only: between '.', '/' or the ends of a name, in names joined by newlines and in one name (as
# `family_check._shape_key`'s, which reads dotted module paths only)
NUMBERED = r"(?<![^./\n])\d+(?![^./\n])"
NUMBERED_PART = r"(?<![^./])\d+(?![^./])"


def numbered(layers: Sequence[str]) -> list[str]:
    """Each layer with each part of digits only ('.' or '/' apart) written '#', the names substituted at once."""
    text = "\n".join(layers)
    if text.count("\n") != len(layers) - 1:  # (a name with a newline: each on its own)
        return [regexes.sub(NUMBERED_PART, "#", layer) for layer in layers]
    return regexes.sub(NUMBERED, "#", text).split("\n") if layers else []


def fold(rows: list[list[Any]], sums: tuple[int, ...]) -> list[list[Any]]:
    """`rows` (the layer's name first) folded as the module says: each row of the result has the count of layers it
    holds inserted after the name, in the order of each group's first row."""
    columns = list(zip(*rows, strict=True))
    names = numbered(columns[0]) if columns else []
    keys = zip(names, *(column for index, column in enumerate(columns) if index and index not in sums), strict=True)
    groups: dict[tuple[Any, ...], list[Any]] = {}
    for key, row in zip(keys, rows, strict=True):
        group = groups.get(key)
        if group is None:
            groups[key] = [row[0], 1, *row[1:]]
            continue
        group[0] = key[0]
        group[1] += 1
        for index in sums:
            group[index + 1] += row[index]
    return list(groups.values())


def folded_note(rows: int, folded: int, what: str) -> str:
    """The line above a folded table."""
    return (
        f"{rows:,} {what} in {folded:,} row{'s' if folded != 1 else ''}: numbered parts of their names folded as '#' "
        f"(tables of up to {TEXT_ROWS:,} rows list each; --json lists every one)"
    )


def capped(rows: list[list[Any]]) -> tuple[list[list[Any]], str | None]:
    """The first `TEXT_ROWS` rows, and the line that counts the others (None when there are none)."""
    if len(rows) <= TEXT_ROWS:
        return rows, None
    return rows[:TEXT_ROWS], f"... and {len(rows) - TEXT_ROWS:,} more rows (--json lists every one)"
