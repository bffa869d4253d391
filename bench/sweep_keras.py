"""Sweep: every keras.applications model (Keras 3, and tf-keras's with --tf-keras), saved every way, against the
inspector.

    PYTHONPATH=. python bench/sweep_keras.py [--tf-keras] [--models a,b] [--max N] [--batch N]

Each model is built with `weights=None, classes=10` (NASNet at its fixed input size) and saved as Keras writes it:
`.keras` (Keras 3), `.weights.h5` (`save_weights`: no model config) and the legacy `.h5` (`model.save`, with the
model config); tf-keras (Keras 2) writes the legacy `.h5` and its `save_weights` `.h5`. Models over 30M parameters
are skipped (`--max`). Each line says what Keras counts (`count_params()`, and the trainable part) and, per file,
the inspector's parameter count, its trainable part and its warnings; the summary lists the files whose counts
differ and those that get a warning. A correct file should get neither (README, "Keras files"). Batches run in
child processes, so a model that crashes the interpreter costs only itself.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _sweep import Row, alarm, run_batches, verdict  # noqa: E402

MAX_PARAMETERS = 30_000_000
SECONDS = 300  # per model
FIXED_INPUT = {"NASNetMobile": (224, 224, 3), "NASNetLarge": (331, 331, 3)}  # built only at their own size


def library(tf_keras: bool) -> Any:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if tf_keras:
        import tf_keras

        return tf_keras
    import keras

    return keras


def ways(tf_keras: bool) -> tuple[str, ...]:
    return ("h5", "weights.h5") if tf_keras else ("keras", "weights.h5", "h5")


def one(keras: Any, name: str, tf_keras: bool) -> Row:
    """Build, save and inspect one model."""
    import numpy as np

    alarm(SECONDS)
    folder = Path(tempfile.mkdtemp(prefix="sweep-keras-"))
    try:
        words: dict[str, Any] = {"weights": None, "classes": 10}
        if name in FIXED_INPUT:
            words["input_shape"] = FIXED_INPUT[name]
        model = getattr(keras.applications, name)(**words)
        row: Row = {
            "count_params": model.count_params(),
            "trainable": sum(int(np.prod(w.shape)) for w in model.trainable_weights),
        }
        if row["count_params"] > MAX_PARAMETERS:
            return {"skipped": f"{row['count_params']:,} parameters"}
        files = {}
        for way in ways(tf_keras):
            files[way] = folder / f"model.{way}"
            model.save_weights(files[way]) if way == "weights.h5" else model.save(files[way])
    except Exception as exc:  # noqa: BLE001 - a model the library cannot build or save this way
        return {"not_built": f"{type(exc).__name__}: {str(exc)[:120]}"}
    finally:
        alarm(0)
    for way, path in files.items():
        row[way] = verdict(path)
    shutil.rmtree(folder, ignore_errors=True)
    return row


def child(todo: list[str], tf_keras: bool) -> None:
    import warnings

    warnings.filterwarnings("ignore")
    keras = library(tf_keras)
    for name in todo:
        print(json.dumps({"case": name, **one(keras, name, tf_keras)}), flush=True)


def summary(results: list[Row], tf_keras: bool) -> None:
    built = [r for r in results if "count_params" in r]
    skipped = [r for r in results if "skipped" in r]
    print(f"\n{len(results)} models, {len(built)} built and inspected, {len(skipped)} over {MAX_PARAMETERS:,}")
    for way in ways(tf_keras):
        written = [r for r in built if "inspector" in r.get(way, {})]
        params = [r["case"] for r in written if r[way]["inspector"] != r["count_params"]]
        trainable = [r["case"] for r in written if r[way]["trainable"] != r["trainable"]]
        warned = [r["case"] for r in written if r[way]["warnings"]]
        print(f"{way}: {len(written)} files; parameters differ from Keras's: {len(params)} {' '.join(params)}")
        print(f"{way}: trainable parameters differ: {len(trainable)} {' '.join(trainable)}")
        print(f"{way}: warnings on a correct file: {len(warned)} {' '.join(warned)}")
    failed = [r["case"] for r in results if "not_built" in r]
    print(f"not built: {len(failed)} {' '.join(failed)}")


def main() -> int:
    global MAX_PARAMETERS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tf-keras", action="store_true", help="tf-keras (Keras 2) applications instead of Keras 3's")
    ap.add_argument("--models", help="only these application names (comma-separated)")
    ap.add_argument("--batch", type=int, default=8, help="models per child process")
    ap.add_argument("--max", type=int, default=MAX_PARAMETERS, help="skip models over this many parameters")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    MAX_PARAMETERS = args.max
    if args.child:
        child(json.loads(args.child), args.tf_keras)
        return 0
    names = args.models.split(",") if args.models else None
    if names is None:
        keras = library(args.tf_keras)
        names = sorted(n for n in dir(keras.applications) if n[:1].isupper())
    argv = ["--max", str(args.max)] + (["--tf-keras"] if args.tf_keras else [])
    results = run_batches(__file__, names, args.batch, argv, lambda case: {"case": case}, 400)
    summary(results, args.tf_keras)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
