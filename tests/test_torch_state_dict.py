"""A state dict's tensors read in one short step each (`loaders._torch.state_dict_tensors`): the same TensorInfos as
the walk gives (`walked_tensors`), on files torch.save writes; any other value is left to the walk."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import pytest

from loaders import _pickle, _torch
from loaders._pickle_values import StorageRef


def _value(path: Path) -> tuple[Any, dict[str, int]]:
    """The object a torch.save zip holds, and an offset for each of its storages (as the loader gives them)."""
    with zipfile.ZipFile(path) as z:
        data = z.read(next(n for n in z.namelist() if n.endswith("/data.pkl")))
    storages: dict[str, StorageRef] = {}
    value = _pickle.load(_pickle.Reader(data), _torch.persistent_loader(storages)).value
    return value, {key: 64 * (i + 1) for i, key in enumerate(storages)}


def _states(torch: Any) -> dict[str, tuple[Any, bool]]:
    """Objects torch.save writes, and whether each is a state dict of whole contiguous storages."""
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3),
        torch.nn.BatchNorm2d(4),
        torch.nn.Flatten(),
        torch.nn.Linear(4, 2),
        torch.nn.Embedding(5, 3),
    )
    tied = torch.nn.Linear(3, 3)
    base = torch.arange(24, dtype=torch.float32)
    return {
        "model": (model.state_dict(), True),  # (4-D, 1-D, a scalar int64 num_batches_tracked)
        "many": (
            {
                f"layer.{i}.{kind}": torch.ones(*shape)
                for i in range(150)
                for kind, shape in (("weight", (3, 2)), ("bias", (3,)))
            },
            True,
        ),  # fmt: skip
        "dtypes": (
            {
                "h": torch.ones(2, dtype=torch.half),
                "b": torch.ones(3, dtype=torch.bool),
                "bf": torch.ones(1, 2, dtype=torch.bfloat16),
                "e": torch.ones(0, 3),
            },
            True,
        ),  # fmt: skip
        "tied": ({"a": tied.weight.data, "b": tied.weight.data}, False),
        "view": ({"a": base[2:10]}, False),
        "transposed": ({"a": base.view(4, 6).t()}, False),
        "expanded": ({"a": base.expand(2, 24)}, False),
        "offset": ({"a": base[1:]}, False),
        "nested": ({"model": model.state_dict(), "epoch": 3}, False),
        "parameter": ({"w": torch.nn.Parameter(torch.ones(2, 2))}, True),
        "scalars after": ({"w": torch.ones(2), "step": 3, "meta": {"x": [1, 2]}}, True),
        "tensor after": ({"w": torch.ones(2), "meta": {"x": torch.ones(1)}}, False),
        "tensor after scalar": ({"w": torch.ones(2), "step": 3, "v": torch.ones(1)}, False),
    }


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, bool]]:
    torch = pytest.importorskip("torch")
    root = tmp_path_factory.mktemp("states")
    out = {}
    for name, (obj, whole) in _states(torch).items():
        path = root / f"{name}.pt"
        torch.save(obj, path)
        out[name] = (path, whole)
    return out


def test_state_dicts_read_as_the_walk_reads_them(saved: dict[str, tuple[Path, bool]]) -> None:
    for name, (path, whole) in saved.items():
        value, offsets = _value(path)
        walked = _torch.walked_tensors(value, offsets, _torch.section_kinds(value))
        fast = _torch.state_dict_tensors(value, offsets)
        assert (fast is not None) == whole, name
        assert _torch.build_tensors(value, offsets) == (walked, []), name
        if fast is not None:
            assert fast == walked, name
            assert [t.name for t in fast] == [k for k, v in value.items() if isinstance(v, _torch.TensorRef)], name
            assert [t.offset for t in fast] == [offsets[t.storage] for t in fast if t.storage is not None], name


def test_a_missing_storage_is_reported_by_the_walk(saved: dict[str, tuple[Path, bool]]) -> None:
    """A storage the file does not hold: no step here, the walk's error."""
    value, offsets = _value(saved["many"][0])
    offsets.pop(next(iter(offsets)))
    assert _torch.state_dict_tensors(value, offsets) is None
    with pytest.raises(_pickle.PickleError, match="which the file does not hold"):
        _torch.build_tensors(value, offsets)
