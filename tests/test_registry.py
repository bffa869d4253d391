"""The loader registry: read-only view, registration rules, detection by content and claim strength."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import pytest

from inspector import registry
from inspector.errors import AmbiguousFormatError, RegistryError
from inspector.probe import Probe
from inspector.records import Checkpoint
from loaders.base import Claim
from tests.conftest import SAMPLES


class _Greedy:
    name: ClassVar[str] = "greedy"
    extensions: ClassVar[tuple[str, ...]] = (".npz",)

    def claim(self, probe: Probe) -> Claim | None:
        return Claim.STRUCTURE if probe.head.startswith(b"PK") else None

    def load(self, probe: Probe) -> Checkpoint:  # pragma: no cover - never chosen in these tests
        raise NotImplementedError


def test_view_is_read_only() -> None:
    view = registry.loaders()
    with pytest.raises(TypeError):
        view["x"] = _Greedy  # type: ignore[index]
    assert {"safetensors", "npy", "npz"} <= set(view)


def test_duplicate_registration_is_refused() -> None:
    with pytest.raises(RegistryError):
        registry.register_loader(registry.loaders()["npz"])


def test_equal_claims_are_ambiguous_unless_the_extension_breaks_the_tie(tmp_path: Path) -> None:
    registry.register_loader(_Greedy)
    try:
        plain = tmp_path / "weights.zip"
        shutil.copy(SAMPLES / "basic" / "cnn_stored.npz", plain)
        with pytest.raises(AmbiguousFormatError) as info:
            registry.detect(plain)
        assert set(info.value.candidates) == {"npz", "greedy"}
        # with the .npz extension both still claim; the extension names one of them only: greedy's too
        with pytest.raises(AmbiguousFormatError):
            registry.detect(SAMPLES / "basic" / "cnn_stored.npz")
    finally:
        registry.unregister_loader("greedy")


def test_detection_ignores_the_extension(tmp_path: Path) -> None:
    renamed = tmp_path / "model.pt"
    shutil.copy(SAMPLES / "basic" / "mlp_fp16.safetensors", renamed)
    assert registry.detect(renamed) == "safetensors"


def test_import_pulls_in_no_optional_dependency() -> None:
    code = (
        "import sys, inspector; inspector.load('sample_models/basic/cnn_stored.npz'); "
        "print(sorted(m for m in ('torch', 'h5py', 'tensorflow', 'mxnet', 'tabulate', 'keras') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=SAMPLES.parent
    ).stdout.strip()
    assert out == "[]"


def test_public_all_is_sorted_and_complete() -> None:
    import inspector

    assert inspector.__all__ == sorted(inspector.__all__)
    assert all(hasattr(inspector, name) for name in inspector.__all__)


# -- registry rows: a loader module is imported only when its row matches the file ---------------------------------


def test_every_row_names_its_class() -> None:
    from loaders import FORMATS

    assert len({row.name for row in FORMATS}) == len(FORMATS)
    for row in FORMATS:
        cls = row.load()
        assert cls.name == row.name
        assert row.late == hasattr(cls, "late_claim"), row.name
        assert row.entries == hasattr(cls, "folder_entry") == hasattr(cls, "member_entry"), row.name


def _claims_hidden_by_rows(path: Path) -> list[str]:
    """Loaders whose claim (or late claim) on the file is not None while their row says the file is not worth it."""
    from loaders import FORMATS

    hidden = []
    with Probe(path) as probe:
        for row in FORMATS:
            loader = row.load()()
            if not row.asks(probe) and loader.claim(probe) is not None:
                hidden.append(row.name)
            if not row.late and getattr(loader, "late_claim", None) is not None:
                hidden.append(row.name + " (late)")
    return hidden


def _every_file() -> list[Path]:
    from tests.conftest import FIXTURES

    roots = [SAMPLES] + ([FIXTURES] if FIXTURES.is_dir() else [])
    return sorted(p for root in roots for p in root.rglob("*") if p.is_file() and p.stat().st_size < 64 << 20)


def test_rows_never_hide_a_claim_on_real_files() -> None:
    files = _every_file()
    assert len(files) > 50
    for path in files:
        assert _claims_hidden_by_rows(path) == [], path


HEADS = [b"", b"\x93NUMPY", b"PK\x03\x04", b"PK\x05\x06", b"\x89HDF\r\n\x1a\n", b"GGUF", b"\x08", b"\x80\x02",
         b"\x80\x04", b"\x80\x07", b"(", b"}", b"\x12\x01\x00\x00", b"sys_info",
         b'{"weight_map": {"a": "b.safetensors"}}', b"\x10\x00\x00\x00", b"\x40\x00\x00\x00\x00\x00\x00\x00 \t\n{}",
         b' \n\t {"weight_map": {"a": "b.safetensors"}}',
         b"\x20" * 80 + b'{"weight_map": {"a": "b.safetensors"}}', b"\x1c\x00\x00\x00TFL3"]  # fmt: skip


@pytest.mark.parametrize("prefix", HEADS)
@pytest.mark.parametrize("seed", range(12))
def test_rows_never_hide_a_claim_on_made_up_heads(tmp_path: Path, prefix: bytes, seed: int) -> None:
    """Heads that start like each format and go on with noise, or with the rest of a safetensors-like header."""
    import random

    rng = random.Random(seed)
    body = bytes(rng.randrange(256) for _ in range(rng.choice([0, 7, 30, 300, 5000])))
    if seed % 3 == 0:
        body = b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}' + body
    path = tmp_path / ("file.distcp" if seed % 4 == 1 else "model.data-00000-of-00001" if seed % 4 == 2 else "f.bin")
    path.write_bytes(prefix + body)
    assert _claims_hidden_by_rows(path) == []


def test_a_safetensors_run_imports_only_the_loaders_that_may_claim_it(tmp_path: Path) -> None:
    import numpy as np
    from safetensors.numpy import save_file

    from loaders import FORMATS

    path = tmp_path / "model.safetensors"
    openers = {row.starts for row in FORMATS if row.starts}
    for pad in range(64):  # a header whose length does not start like a pickle (those rows would ask too)
        save_file({"w": np.zeros((64, 64), np.float32)}, str(path), metadata={"pad": "x" * pad})  # past the head
        first = path.read_bytes()[:2]
        if not any(first.startswith(s) for starts in openers for s in starts):
            break
    code = (
        "import sys, io, contextlib\nfrom inspector.cli import main\n"
        f"with contextlib.redirect_stdout(io.StringIO()): main([{str(path)!r}])\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('loaders.') and "
        "type(sys.modules[m]).__name__ != '_LazyModule')))"
    )
    loaded = set(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    )
    assert loaded == {"loaders.base", "loaders.safetensors"}  # of fourteen loaders
