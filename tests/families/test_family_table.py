"""The family table made on first use (issue 16): a run whose config names a model type makes only that type's
families, a run without one all of them, and every way of reading the table gives the families the whole table does,
in its order."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from inspector import families
from inspector.families import ENTRIES, FAMILIES, FAMILIES_BY_MODEL_TYPE, FAMILY_BY_NAME, entry_families, index

ROOT = Path(__file__).resolve().parent.parent.parent

# a run of the CLI in a fresh interpreter, then what it made of the table and what it expected of the file
RUN = """
import contextlib, io, json, sys
from inspector.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    main([sys.argv[1], "--json"])
from inspector import families
expected = json.loads(out.getvalue())["expected"]
print(json.dumps({"made": families.made_families(), "source": expected["source"], "total": expected["total"],
                  "found": expected["found"], "family": expected["architecture"]["name"]}))
"""


def _run(path: Path) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", RUN, str(path)], capture_output=True, text=True, cwd=ROOT, check=True)
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def test_the_written_index_is_the_tables() -> None:
    """`inspector/family_index.py` is what `python -m inspector.families` writes now (run it after changing the
    table): each family's entry and each model type's families, as the families made say."""
    from inspector.family_index import ENTRY, MODEL_TYPES

    assert (ENTRY, MODEL_TYPES) == index()
    names = [f.name for f in FAMILIES]
    assert len(names) == len(set(names)) == len(ENTRY)  # (a name is one family)
    assert list(ENTRY) == names
    for entry in range(len(ENTRIES)):
        assert [f.name for f in entry_families(entry)] == [n for n, e in ENTRY.items() if e == entry]
    for model_type, stated in MODEL_TYPES.items():
        assert stated == tuple(f.name for f in FAMILIES if model_type in f.model_types)
    assert MODEL_TYPES["llama"] == ("llama",)
    assert MODEL_TYPES["phimoe"] == ("mixtral", "mixtral-stacked", "phimoe-fused")


def test_every_way_of_reading_the_table_gives_the_same_families_in_its_order() -> None:
    """Families made one entry at a time, in any order (a config's model type, a name), are those `FAMILIES` holds
    once the whole table is made, the same objects, in the table's order; and the same values as a table made whole
    in a fresh interpreter."""
    code = """
import json
from inspector import families
lookups = [families.FAMILY_BY_NAME["qwen3_vl"].name, *(f.name for f in families.FAMILIES_BY_MODEL_TYPE["phimoe"])]
made_first = families.made_families()
table = families.FAMILIES
same = all(families.FAMILY_BY_NAME[f.name] is f for f in table)
print(json.dumps({"lookups": lookups, "made_first": made_first, "same": same,
                  "table": [[f.name, repr(f.parts), repr(f.reads)] for f in table]}))
"""
    lazily = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                                       check=True).stdout)  # fmt: skip
    assert lazily["lookups"] == ["qwen3_vl", "mixtral", "mixtral-stacked", "phimoe-fused"]
    # only the entries those name: Qwen3-VL's, Mixtral's three layouts (PhiMoE's are two of them) and PhiMoE's own
    assert lazily["made_first"] == ["qwen3_vl", "mixtral", "mixtral-fused", "mixtral-stacked", "phimoe-fused"]
    assert lazily["same"]
    whole = [[f.name, repr(f.parts), repr(f.reads)] for f in FAMILIES]  # (this interpreter: the table made whole)
    assert lazily["table"] == whole
    assert len(FAMILIES) == len(FAMILY_BY_NAME) == 114
    assert [f.name for f in FAMILIES][:3] == ["llama", "hunyuan_v1_dense", "hunyuan_v1_moe"]
    assert [f.name for f in FAMILIES][-2:] == ["mamba2", "clip"]


@pytest.mark.parametrize(
    ("case", "made"),
    [("llama", ["llama"]), ("qwen2_moe", ["qwen2_moe", "qwen2_moe-fused", "qwen2_moe-stacked"])],
)
def test_a_run_with_a_config_makes_only_its_model_types_families(case: str, made: list[str], tmp_path: Path) -> None:
    """A run on a checkpoint transformers saved with its config.json makes the families its model type names and no
    other, and finds the file's family with them (its count transformers' num_parameters()); the same file without
    its config makes every family, and infers the same family and count."""
    pytest.importorskip("transformers", reason="transformers writes the checkpoints")
    from tests.families.zoo import build

    n = build(case, tmp_path)
    assert [f.name for f in FAMILIES_BY_MODEL_TYPE[case]] == made
    configured = _run(tmp_path / "model.safetensors")
    assert configured == {"made": made, "source": "config", "total": n, "found": n, "family": made[0]}
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(tmp_path / "model.safetensors", alone)
    inferred = _run(alone / "model.safetensors")
    assert inferred == {
        "made": [f.name for f in FAMILIES],  # (every family, in the table's order)
        "source": "inferred",
        "total": n,
        "found": n,
        "family": made[0],
    }


def test_a_model_type_no_family_names_makes_none() -> None:
    assert "bert" in FAMILIES_BY_MODEL_TYPE and "no-such-type" not in FAMILIES_BY_MODEL_TYPE
    assert FAMILIES_BY_MODEL_TYPE.get("no-such-type", ()) == ()
    assert FAMILY_BY_NAME.get("no-such-family") is None
    with pytest.raises(KeyError):
        FAMILY_BY_NAME["no-such-family"]
    assert FAMILY_BY_NAME.get("bert") is FAMILIES_BY_MODEL_TYPE["roberta"][0]
    with pytest.raises(AttributeError):
        families.NO_SUCH_NAME  # noqa: B018  (a module attribute the table does not make is not there)


def test_the_formula_command_lists_every_family_in_the_tables_order() -> None:
    """`inspector formula --list` lists the seeds' architectures, then every family, in the table's order."""
    from inspector.architectures import definitions

    names = list(definitions())
    assert names[-len(FAMILIES) :] == [f.name for f in FAMILIES]
    out = subprocess.run(
        [sys.executable, "-m", "inspector", "formula", "--list", "--json"], capture_output=True, text=True, cwd=ROOT
    )
    assert list(json.loads(out.stdout)) == names  # (each architecture's name: its words)
