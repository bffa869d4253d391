"""Sweep: every torchvision model and one variant of every timm model module, saved three ways, against the inspector.

    PYTHONPATH=. python bench/sweep_vision.py [--only torchvision|timm] [--models a,b] [--no-script] [--every]
    PYTHONPATH=. python bench/sweep_vision.py --names [--only torchvision|timm]

torchvision: every name `torchvision.models.list_models()` gives (classification, segmentation, detection, video,
optical flow, quantizable), built with `weights=None`; detection models with `weights_backbone=None` and the
FrozenBatchNorm2d a pretrained backbone has in `backbone.body` (as every detection checkpoint torchvision ships).
timm: for every module of `timm.list_modules()`, the first of its models, smallest-sounding names first (`pico`,
`nano`, `tiny`...), that has at most 30M parameters on the meta device (`--every`: every timm model), built with
`pretrained=False`. Models over
30M parameters are skipped. Each model is saved as `torch.save(model.state_dict())` (`.pth`), as safetensors
(`safetensors.torch.save_file`, or `save_model` where tensors are shared) and, where `torch.jit.script` (else
`torch.jit.trace` on a dummy input) works, as TorchScript. Each line says what torch counts (`parameters()`, the
persistent buffers a state dict holds, all buffers for TorchScript) and, per file, the inspector's parameter and
buffer counts and its warnings; the summary lists the models whose counts differ and the files that get a warning
or are called unsafe. A correct file should get neither (README, "The analytic expectation" and "Counting").
Batches run in child processes, so a model that crashes the interpreter costs only itself.

`--names` builds every model of both libraries on the meta device (all of timm's 1,300-odd, not one per module)
and lists the state dict names whose kind (parameter or buffer) the inspector's name rules would get wrong.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _sweep import Row, alarm, run_batches, verdict  # noqa: E402

MAX_PARAMETERS = 30_000_000
SECONDS = 180  # per model
# timm names that sound small, smallest first: a module's models are tried in this order until one fits
SMALL_WORDS = (
    "pico", "atto", "femto", "nano", "zepto", "xxs", "tiny", "xs", "micro", "mini", "small", "_t", "_s", "lite",
    "b0", "18", "050", "_a", "_0",
)  # fmt: skip
CANDIDATES = 8  # timm models tried per module
FORMATS = ("pth", "safetensors", "script")


def cases(only: str | None, every: bool = False) -> list[list[str]]:
    """["torchvision", model name] and ["timm", module name] (with `every`: ["timm-model", model name])."""
    from tests.vision import make_importable

    make_importable()
    import timm
    import torchvision

    found = [] if only == "timm" else [["torchvision", name] for name in torchvision.models.list_models()]
    if only == "torchvision":
        return found
    if every:
        return found + [["timm-model", name] for name in timm.list_models()]
    return found + [["timm", module] for module in sorted(timm.list_modules())]


def smallest_first(names: list[str]) -> list[str]:
    def rank(name: str) -> tuple[int, int, str]:
        hits = [i for i, word in enumerate(SMALL_WORDS) if word in name]
        return (min(hits) if hits else len(SMALL_WORDS), len(name), name)

    return sorted(names, key=rank)


def build(source: str, name: str, device: str) -> Any:
    import torch

    with torch.device(device):
        if source.startswith("timm"):
            import timm

            return timm.create_model(name, pretrained=False)
        import torchvision

        builder = torchvision.models.get_model_builder(name)
        words: dict[str, Any] = {"weights": None}
        if "weights_backbone" not in inspect.signature(builder).parameters:
            return builder(**words)
        return frozen_body(builder(weights_backbone=None, **words))


def frozen_body(model: Any) -> Any:
    """A detection model as torchvision builds it on a pretrained backbone (every checkpoint it ships): the
    BatchNorms of `backbone.body` are FrozenBatchNorm2d (weight, bias and statistics all buffers)."""
    import torch
    from torchvision.ops.misc import FrozenBatchNorm2d

    body = getattr(getattr(model, "backbone", None), "body", None)
    for name, module in list(body.named_modules()) if body is not None else []:
        if isinstance(module, torch.nn.BatchNorm2d):
            parent, _, leaf = name.rpartition(".")
            setattr(body.get_submodule(parent) if parent else body, leaf, FrozenBatchNorm2d(module.num_features))
    return model


def count(model: Any) -> int:
    return sum(p.numel() for p in model.parameters())


def pick(source: str, name: str) -> tuple[str, int] | str:
    """The model to build for a case and its size on meta, or why there is none."""
    import timm

    names = smallest_first(timm.list_models(module=name))[:CANDIDATES] if source == "timm" else [name]
    sizes = []
    for candidate in names:
        try:
            size = count(build(source, candidate, "meta"))
        except NotImplementedError:  # a builder that initialises from data (torchvision's RegNets): on the CPU
            size = count(build(source, candidate, "cpu"))
        if size <= MAX_PARAMETERS:
            return candidate, size
        sizes.append(size)
    return f"over {MAX_PARAMETERS:,} parameters ({min(sizes):,} the smallest of {len(names)} tried)"


def dummy(source: str, name: str, model: Any) -> Any:
    import torch

    if source.startswith("timm"):
        size = getattr(model, "pretrained_cfg", {}).get("input_size", (3, 224, 224))
        return torch.randn(1, *size)
    if name.startswith(("r3d", "mc3", "r2plus1d", "s3d", "mvit", "swin3d")):
        return torch.randn(1, 3, 16, 112, 112)
    return torch.randn(1, 3, 224, 224)


def save(source: str, name: str, model: Any, folder: Path, script: bool) -> dict[str, Path | str]:
    """The model written each way, or why a way did not work."""
    import safetensors.torch
    import torch

    files: dict[str, Path | str] = {"pth": folder / "model.pth", "safetensors": folder / "model.safetensors"}
    torch.save(model.state_dict(), files["pth"])
    try:
        safetensors.torch.save_file(model.state_dict(), files["safetensors"])
    except RuntimeError:  # shared tensors: save_model writes one copy
        safetensors.torch.save_model(model, files["safetensors"])
    if not script:
        return files
    model.eval()
    try:
        archive = torch.jit.script(model)
    except Exception:  # noqa: BLE001 - not scriptable: trace it
        try:
            with torch.no_grad():
                archive = torch.jit.trace(model, dummy(source, name, model), check_trace=False, strict=False)
        except Exception as exc:  # noqa: BLE001 - neither
            files["script"] = f"not scriptable or traceable: {type(exc).__name__}"
            return files
    torch.jit.save(archive, folder / "model.pt")
    files["script"] = folder / "model.pt"
    return files


def one(source: str, name: str, script: bool) -> Row:
    """Pick, build, save and inspect one model (in a temporary folder, removed whatever happens)."""
    with tempfile.TemporaryDirectory(prefix="sweep-vision-", ignore_cleanup_errors=True) as folder:
        return _one(source, name, script, Path(folder))


def _one(source: str, name: str, script: bool, folder: Path) -> Row:
    import torch

    alarm(SECONDS)
    try:
        picked = pick(source, name)
        if isinstance(picked, str):
            return {"skipped": picked}
        model_name, _ = picked
        torch.manual_seed(0)
        model = build(source, model_name, "cpu")
        state = model.state_dict()
        persistent = {n: b for n, b in model.named_buffers() if n in state}
        row: Row = {
            "model": model_name,
            "torch": count(model),
            "torch_buffers": sum(b.numel() for b in persistent.values()),  # what a state dict holds
            "all_buffers": sum(b.numel() for _, b in model.named_buffers()),  # what TorchScript keeps
        }
        files = save(source, model_name, model, folder, script)
    except Exception as exc:  # noqa: BLE001 - a model the library cannot build this way
        return {"not_built": f"{type(exc).__name__}: {str(exc)[:120]}"}
    finally:
        alarm(0)
    for way, path in files.items():
        row[way] = verdict(path) if isinstance(path, Path) else {"not_written": path}
    return row


def names(only: str | None) -> None:
    """Every model of both libraries (all of timm's, not one per module) built on the meta device: the names its
    state dict holds that the inspector's name rules (`inspector.kinds.KIND_RULES`) would give another kind than
    torch does, with the models they come from. Nothing is written or inspected: the rules are all a state dict
    in safetensors or a plain `torch.save` has."""
    import re
    import warnings
    from collections import defaultdict
    from types import SimpleNamespace

    import timm
    import torchvision

    from inspector.kinds import _by_layout, kind_rule
    from inspector.records import TensorKind

    warnings.filterwarnings("ignore")
    todo = [] if only == "timm" else [("torchvision", n) for n in torchvision.models.list_models()]
    todo += [] if only == "torchvision" else [("timm", n) for n in timm.list_models()]
    wrong: dict[tuple[str, str], set[str]] = defaultdict(set)
    failed = []
    for source, name in todo:
        try:
            model = build(source, name, "meta")
        except Exception:  # noqa: BLE001 - not buildable on meta
            failed.append(name)
            continue
        state = model.state_dict(keep_vars=True)
        parameters = {n for n, _ in model.named_parameters(remove_duplicate=False)}
        listed = SimpleNamespace(tensors=[SimpleNamespace(name=n) for n in state])
        modules, buffers = _by_layout(listed, False)  # type: ignore[arg-type]  # names are all it reads
        for key in state:
            rule = kind_rule(key)
            said = rule.kind if rule else TensorKind.PARAMETER
            said = TensorKind.BUFFER if key.rpartition(".")[0] in modules or key in buffers else said
            truth = TensorKind.PARAMETER if key in parameters else TensorKind.BUFFER
            if said is not truth:
                wrong[(re.sub(r"\d+", "N", key), f"{truth.value}, the rules say {said.value}")].add(name)
    for (key, why), found in sorted(wrong.items()):
        models = sorted(found)
        print(f"{key}: {why}: {len(models)} models ({' '.join(models[:4])}{' ...' if len(models) > 4 else ''})")
    print(f"\n{len(todo) - len(failed)} models built on meta, {len(failed)} not ({' '.join(failed[:10])})")
    print(f"state dict names whose kind the rules get wrong: {len(wrong)}")


def child(todo: list[list[str]], script: bool) -> None:
    import warnings

    from tests.vision import make_importable

    warnings.filterwarnings("ignore")
    make_importable()
    for source, name in todo:
        print(json.dumps({"source": source, "case": name, **one(source, name, script)}), flush=True)


def unsafe_findings(verdict: Row) -> list[str]:
    return [w for w in verdict["warnings"] if w.startswith("UNSAFE_CONTENT")]


def summary(results: list[Row]) -> None:
    built = [r for r in results if "torch" in r]
    skipped = [r for r in results if "skipped" in r]
    print(
        f"\n{len(results)} cases, {len(built)} built and inspected, {len(skipped)} over {MAX_PARAMETERS:,} parameters"
    )
    unsafe = [f"{r['model']}.{way}" for r in built for way in FORMATS if "unsafe" in r.get(way, {}).get("warnings", ())]
    print(f"called unsafe: {len(unsafe)} {' '.join(unsafe)}")
    for way in FORMATS:
        written = [r for r in built if "inspector" in r.get(way, {})]
        params = [r["model"] for r in written if r[way]["inspector"] != r["torch"]]
        reference = "all_buffers" if way == "script" else "torch_buffers"
        buffers = [r["model"] for r in written if r[way]["buffers"] != r[reference]]
        warned = [r["model"] for r in written if set(r[way]["warnings"]) - {"unsafe"} - set(unsafe_findings(r[way]))]
        print(f"{way}: {len(written)} files; parameters differ from torch's: {len(params)} {' '.join(params)}")
        print(f"{way}: buffers differ from torch's: {len(buffers)} {' '.join(buffers)}")
        print(f"{way}: warnings on a correct file (besides unsafe): {len(warned)} {' '.join(warned)}")
    failed = [f"{r['source']}:{r['case']}" for r in results if "not_built" in r]
    print(f"not built: {len(failed)} {' '.join(failed)}")


def main() -> int:
    global MAX_PARAMETERS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=("torchvision", "timm"), help="one library's models")
    ap.add_argument("--models", help="only these torchvision model names or timm modules (comma-separated)")
    ap.add_argument("--no-script", action="store_true", help="no TorchScript files")
    ap.add_argument("--batch", type=int, default=10, help="models per child process")
    ap.add_argument("--max", type=int, default=MAX_PARAMETERS, help="skip models over this many parameters")
    ap.add_argument("--every", action="store_true", help="every timm model up to 30M parameters, not one per module")
    ap.add_argument("--names", action="store_true", help="check every model's state dict names on meta, no files")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    MAX_PARAMETERS = args.max
    argv = (["--no-script"] if args.no_script else []) + ["--max", str(args.max)]
    if args.names:
        cases(None)  # torchvision importable
        names(args.only)
        return 0
    if args.child:
        child(json.loads(args.child), not args.no_script)
        return 0
    todo = cases(args.only, args.every)
    if args.models:
        wanted = set(args.models.split(","))
        todo = [case for case in todo if case[1] in wanted]
    results = run_batches(__file__, todo, args.batch, argv, lambda case: {"source": case[0], "case": case[1]}, 600)
    summary(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
