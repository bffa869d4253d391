"""Sweep: every model class the installed diffusers builds from its default config, against the inspector.

    python bench/sweep_diffusers.py [--classes A,B] [--no-config] [--batch 20]

Each `ModelMixin` class diffusers exports is built from its default config on the meta device (full size: SD3,
Flux, Wan, LTX... up to billions of parameters, no memory taken), and its state dict written as a safetensors
file whose header is exactly what `save_pretrained` writes (names, dtypes, shapes, offsets; a tied tensor once)
over a sparse data section, with `config.json` beside it (`save_config`; `--no-config`: without it). The
inspector reads headers only, so such a file is, for it, the model's own. Each line says what torch counts
(`parameters()`, the persistent buffers the state dict holds) and what the inspector counts, with its warnings
(and, where the counts differ, the first names read as the other kind); the summary lists the classes whose counts
differ and the files that get a warning. Batches run in child
processes, so a class that crashes the interpreter costs only itself.
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _sweep import alarm, run_batches, verdict  # noqa: E402

SECONDS = 120  # per class
DTYPES = {"float32": "F32", "float16": "F16", "bfloat16": "BF16", "float64": "F64", "int64": "I64", "int32": "I32",
          "int8": "I8", "uint8": "U8", "bool": "BOOL"}  # fmt: skip


def model_classes() -> list[str]:
    import inspect

    from tests.vision import make_importable

    make_importable()  # diffusers' model modules import torchvision (through transformers) where it is installed
    import diffusers
    from diffusers.models.modeling_utils import ModelMixin

    names = []
    for name in sorted(dir(diffusers)):
        try:
            obj = getattr(diffusers, name)
        except Exception:  # noqa: BLE001 - a lazy export whose optional dependency is missing
            continue
        if inspect.isclass(obj) and issubclass(obj, ModelMixin) and obj is not ModelMixin:
            names.append(name)
    return names


def write_header_file(model: object, folder: Path) -> Path:
    """`diffusion_pytorch_model.safetensors` as save_pretrained lays it out, its data section sparse."""
    state = model.state_dict()  # type: ignore[attr-defined]
    header, seen, pos = {}, set(), 0
    for name, value in state.items():
        if id(value) in seen:  # a tied tensor: stored once
            continue
        seen.add(id(value))
        size = value.numel() * value.element_size()
        header[name] = {"dtype": DTYPES[str(value.dtype).removeprefix("torch.")], "shape": list(value.shape),
                        "data_offsets": [pos, pos + size]}  # fmt: skip
        pos += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path = folder / "diffusion_pytorch_model.safetensors"
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(text)) + text)
        fh.truncate(8 + len(text) + pos)
    return path


def differing(path: Path, buffers: set[str]) -> dict[str, list[str]]:
    """The names the inspector reads as another kind than torch has them (the first few of each way)."""
    from inspector.records import TensorKind
    from inspector.report import inspect

    read = {t.name for t in inspect(path).checkpoint.tensors if t.kind is TensorKind.BUFFER}
    return {
        "buffers_read_as_parameters": sorted(buffers - read)[:5],
        "parameters_read_as_buffers": sorted(read - buffers)[:5],
    }


def child(classes: list[str], config: bool) -> None:
    import warnings

    from tests.vision import make_importable

    make_importable()  # (as `model_classes`)
    import diffusers
    import torch

    warnings.filterwarnings("ignore")
    for name in classes:
        row: dict[str, object] = {"class": name}
        try:
            alarm(SECONDS)
            with torch.device("meta"):
                model = getattr(diffusers, name)()
            state = model.state_dict()
            buffers = {k for k, _ in model.named_buffers()}
            row |= {"torch": sum(p.numel() for p in model.parameters()),
                    "torch_buffers": sum(v.numel() for k, v in state.items() if k in buffers)}  # fmt: skip
            with tempfile.TemporaryDirectory() as tmp:
                if config:
                    model.save_config(tmp)
                path = write_header_file(model, Path(tmp))
                row |= verdict(path)
                if (row["inspector"], row["buffers"]) != (row["torch"], row["torch_buffers"]):
                    row |= differing(path, {k for k in state if k in buffers})
        except Exception as exc:  # noqa: BLE001 - a class its default config cannot build
            row["not_built"] = f"{type(exc).__name__}: {exc}"[:200]
        finally:
            alarm(0)
        print(json.dumps(row), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--classes", help="only these classes (comma-separated)")
    ap.add_argument("--no-config", action="store_true", help="inspect the weights without config.json beside them")
    ap.add_argument("--batch", type=int, default=20, help="classes per child process")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(json.loads(args.child), not args.no_config)
        return 0
    classes = args.classes.split(",") if args.classes else model_classes()
    argv = ["--no-config"] if args.no_config else []
    rows = run_batches(__file__, classes, args.batch, argv, lambda name: {"class": name})
    built = [r for r in rows if "not_built" not in r]
    counts = [r["class"] for r in built if (r["inspector"], r["buffers"]) != (r["torch"], r["torch_buffers"])]
    warned = [r["class"] for r in built if r["warnings"]]
    print(f"\n{len(rows)} classes, {len(built)} built from their default config and inspected")
    print(f"counts differ from torch's (parameters or persistent buffers): {len(counts)} {' '.join(counts)}")
    print(f"warnings on a correct file: {len(warned)} {' '.join(warned)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
