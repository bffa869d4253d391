"""Sweep: files the exporters and checkpointers write from real architectures (ONNX, PyTorch distributed
checkpoints, TensorFlow checkpoints), against the inspector and the library's own reader.

    PYTHONPATH=. python bench/sweep_exports.py [--formats onnx,dcp,tf,keras3] [--models a,b] [--config] [--max N]

onnx: tiny transformers models (a shrunk default config, random weights: the cases of `TRANSFORMERS`) and
torchvision models (`TORCHVISION`, `weights=None`, up to `--max` parameters), exported by `torch.onnx.export` four
ways (`ONNX_WAYS`): the TorchScript exporter (`dynamo=False`, weights inside the `.onnx`) with and without constant
folding, and the dynamo exporter (weights in a `.onnx.data` file beside it) with and without its optimizer;
`llama-wide`'s (2.4M parameters) TorchScript export is also saved by `onnx.save(..., save_as_external_data=True)`
(`script-external`: the TorchScript exporter writes external data only past 2 GB); with `--config`, the model's
`config.json` lies beside its exports (as `optimum-cli export onnx` writes them). The truth is what `onnx.load`
reports: every initializer's name and shape must be the inspector's, the weights of the PyTorch model that the
exporter kept under their own name must be parameters and its buffers not. The parameter count is shown beside
torch's: exporters fold constants (rotary tables, masks, BatchNorm into convolutions), transpose weights and merge
initializers of equal value, so it need not be equal, but a `COUNT_MISMATCH` on such a file is a false warning.
dcp: the same transformers models and the torchvision ones, `torch.distributed.checkpoint.save` (one process) of
the model's state dict (`model`) and of a training state after one AdamW step (`train`: `get_state_dict(model,
optimizer)` as `{"model": ..., "optim": ...}`): parameters must equal `num_parameters()`, buffers the persistent
buffers, optimizer state the optimizer's tensors (with `--config`, the model's `config.json` in both folders).
tf: tf_keras's `keras.applications` up to `--max` parameters (`weights=None, classes=10`) and `trained` (a small
convolutional model whose Adam optimizer stepped once), written by `tf.train.Checkpoint(model=...).write` (`ckpt`)
and `model.save_weights("x.ckpt")` (`weights`); keras3: the same models of Keras 3 on the TensorFlow backend, by
`tf.train.Checkpoint` (Keras 3 saves weights as `.weights.h5` only: bench/sweep_keras.py). Parameters and their
trainable part must be `count_params()` and the trainable weights', optimizer state the optimizer's variables (its
slots, iteration count and learning rate).
Every file must get no warning. Batches run in child processes, so a case that crashes the interpreter costs only
itself. The summary counts the files with a problem, per format and way. torchvision may live outside the venv:
`SWEEP_TORCHVISION=DIR` puts DIR (a `pip install --target DIR --no-deps torchvision`) on the children's path.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _sweep import Row, alarm, run_batches, verdict  # noqa: E402

MAX_PARAMETERS = 30_000_000
CONFIG = False  # --config: a transformers model's config.json beside its ONNX files and DCP checkpoints
SECONDS = 300  # per case
SMALL = dict(
    hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
    vocab_size=128, max_position_embeddings=64, head_dim=8, n_embd=32, n_layer=2, n_head=4, n_positions=64,
    d_model=32, d_ff=64, d_kv=8, num_layers=2, num_heads=4, encoder_layers=2, encoder_attention_heads=4,
    encoder_ffn_dim=64, decoder_layers=2, decoder_attention_heads=4, decoder_ffn_dim=64, ffn_dim=64,
    image_size=32, patch_size=8, num_channels=3, num_mel_bins=16, max_source_positions=16, dim=32, hidden_dim=64,
    n_layers=2, n_heads=4,
)  # fmt: skip
# case -> (model_type, transformers class, inputs, config words besides SMALL)
TRANSFORMERS: dict[str, tuple[str, str, str, dict[str, Any]]] = {
    "llama": ("llama", "AutoModelForCausalLM", "text", {}),
    "llama-tied": ("llama", "AutoModelForCausalLM", "text", {"tie_word_embeddings": True}),
    "mistral": ("mistral", "AutoModelForCausalLM", "text", {}),
    "qwen2": ("qwen2", "AutoModelForCausalLM", "text", {}),
    "qwen3": ("qwen3", "AutoModelForCausalLM", "text", {}),
    "gemma": ("gemma", "AutoModelForCausalLM", "text", {}),
    "gemma2": ("gemma2", "AutoModelForCausalLM", "text", {}),
    "phi3": ("phi3", "AutoModelForCausalLM", "text", {}),
    "gpt2": ("gpt2", "AutoModelForCausalLM", "text", {}),
    "gpt_neox": ("gpt_neox", "AutoModelForCausalLM", "text", {}),
    "opt": ("opt", "AutoModelForCausalLM", "text", {"word_embed_proj_dim": 32}),
    "falcon": ("falcon", "AutoModelForCausalLM", "text", {}),
    "bert": ("bert", "AutoModel", "text", {}),
    "roberta": ("roberta", "AutoModel", "text", {}),
    "distilbert": ("distilbert", "AutoModel", "text", {}),
    "t5-encoder": ("t5", "T5EncoderModel", "text", {}),
    "vit": ("vit", "AutoModel", "image", {}),
    "whisper-encoder": ("whisper", "WhisperModel", "audio", {}),
    "llama-wide": ("llama", "AutoModelForCausalLM", "text", {"hidden_size": 256, "intermediate_size": 1024,
                                                          "num_hidden_layers": 2, "head_dim": 64, "vocab_size": 1024}),
}  # fmt: skip
TORCHVISION = (
    "resnet18", "mobilenet_v3_small", "efficientnet_b0", "densenet121", "squeezenet1_1", "shufflenet_v2_x1_0",
    "regnet_x_400mf", "mnasnet0_5", "googlenet", "convnext_tiny", "swin_t", "vgg11_bn", "alexnet",
)  # fmt: skip
# way -> torch.onnx.export's words besides the model and its inputs
ONNX_WAYS: dict[str, dict[str, Any]] = {
    "script": {"dynamo": False},
    "script-unfolded": {"dynamo": False, "do_constant_folding": False},
    "dynamo": {"dynamo": True},
    "dynamo-unoptimized": {"dynamo": True, "optimize": False},
}
DCP_WAYS = ("model", "train")
TF_WAYS = ("ckpt", "weights")
WAYS = {"onnx": tuple(ONNX_WAYS), "dcp": DCP_WAYS, "tf": TF_WAYS, "keras3": ("ckpt",)}


def cases(formats: list[str]) -> list[list[str]]:
    """[format, model] for every case of the chosen formats."""
    out: list[list[str]] = []
    if "onnx" in formats:
        out += [["onnx", name] for name in TRANSFORMERS] + [["onnx", f"torchvision:{n}"] for n in TORCHVISION]
    if "dcp" in formats:
        out += [["dcp", name] for name in TRANSFORMERS if name != "llama-wide"]
        out += [["dcp", f"torchvision:{n}"] for n in TORCHVISION]
    for fmt in ("tf", "keras3"):
        if fmt in formats:
            keras = keras_library(fmt == "keras3")
            out += [[fmt, name] for name in sorted(n for n in dir(keras.applications) if n[:1].isupper())]
            out.append([fmt, "trained"])
    return out


# -- PyTorch models -----------------------------------------------------------------------------------------------


def transformers_model(name: str) -> tuple[Any, dict[str, Any]]:
    """A tiny transformers model (random weights, eval mode, no cache) and example inputs for it."""
    import torch
    import transformers

    model_type, cls, inputs, extra = TRANSFORMERS[name]
    config = transformers.AutoConfig.for_model(model_type)
    settable = [k for k in SMALL if not isinstance(getattr(type(config), k, None), property)]
    words = {k: SMALL[k] for k in settable if isinstance(getattr(config, k, None), int)} | extra
    if isinstance(getattr(config, "pad_token_id", None), int):
        words["pad_token_id"] = 0  # within the shrunk vocabulary
    config = transformers.AutoConfig.for_model(model_type, use_cache=False, **words)
    torch.manual_seed(0)
    model = getattr(transformers, cls)
    model = model.from_config(config) if cls.startswith("Auto") else model(config)
    if name == "whisper-encoder":
        model = model.get_encoder()
    model.eval()
    if inputs == "image":
        return model, {"pixel_values": torch.randn(1, config.num_channels, config.image_size, config.image_size)}
    if inputs == "audio":
        return model, {"input_features": torch.randn(1, config.num_mel_bins, 2 * config.max_source_positions)}
    ids = torch.randint(0, config.vocab_size, (1, 8))
    return model, {"input_ids": ids, "attention_mask": torch.ones_like(ids)}  # a mask: no packed-sequence detection


def torchvision_model(name: str) -> tuple[Any, dict[str, Any]]:
    import torch

    from tests.vision import make_importable

    make_importable()
    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.get_model(name, weights=None).eval()
    return model, {"x": torch.randn(1, 3, 224, 224)}


def build(name: str) -> tuple[Any, dict[str, Any]]:
    if name.startswith("torchvision:"):
        return torchvision_model(name.partition(":")[2])
    return transformers_model(name)


def torch_counts(model: Any) -> Row:
    state = model.state_dict()
    return {
        "torch": sum(p.numel() for p in model.parameters()),
        "torch_buffers": sum(b.numel() for n, b in model.named_buffers() if n in state),
    }


# -- ONNX ---------------------------------------------------------------------------------------------------------


def onnx_case(name: str, folder: Path) -> Row:
    import torch

    alarm(SECONDS)
    try:
        model, inputs = build(name)
        row = torch_counts(model)
        if row["torch"] > MAX_PARAMETERS:
            return {"skipped": f"{row['torch']:,} parameters"}
        parameters = [n for n, _ in model.named_parameters()]
        if CONFIG and hasattr(model, "config"):  # beside the exports, as optimum-cli writes it
            model.config.to_json_file(folder / "config.json")
        buffers = [n for n, _ in model.named_buffers()]
        files: dict[str, Path | str] = {}
        for way in ONNX_WAYS:
            files[way] = folder / f"{way}.onnx"
            try:
                with torch.no_grad():
                    torch.onnx.export(model, (), files[way], kwargs=inputs, **ONNX_WAYS[way])
            except Exception as exc:  # noqa: BLE001 - an exporter that cannot export this model
                files[way] = f"not exported: {type(exc).__name__}: {str(exc)[:100]}"
        if name == "llama-wide" and isinstance(files["script"], Path):  # external data, as onnx.save writes it
            import onnx

            files["script-external"] = folder / "external" / "model.onnx"
            files["script-external"].parent.mkdir()
            onnx.save(onnx.load(str(files["script"])), str(files["script-external"]), save_as_external_data=True)
    except Exception as exc:  # noqa: BLE001 - a model that does not build here
        return {"not_built": f"{type(exc).__name__}: {str(exc)[:120]}"}
    finally:
        alarm(0)
    for way, path in files.items():
        row[way] = onnx_verdict(path, parameters, buffers) if isinstance(path, Path) else {"not_written": path}
    return row


def onnx_verdict(path: Path, parameters: list[str], buffers: list[str]) -> Row:
    """The inspector against `onnx.load`: every initializer by name and shape, and the kinds of those that keep the
    name of a PyTorch parameter or buffer."""
    import onnx

    from inspector import load
    from inspector.records import TensorKind

    graph = onnx.load(str(path), load_external_data=False).graph
    truth = {i.name: tuple(i.dims) for i in graph.initializer}
    row = verdict(path)
    tensors = {t.name: t for t in load(path).tensors if t.section == "initializer"}
    row["onnx_initializers"] = sum(_numel(s) for s in truth.values())
    row["external"] = any(i.data_location == onnx.TensorProto.EXTERNAL for i in graph.initializer)
    row["tensors_differ"] = sorted(
        n for n in set(truth) | set(tensors) if truth.get(n) != (tensors[n].shape if n in tensors else None)
    )[:5]
    row["kinds_wrong"] = sorted(
        [
            f"{n}: {tensors[n].kind.value}"
            for n in parameters
            if n in tensors and tensors[n].kind != TensorKind.PARAMETER
        ]
        + [f"{n} (buffer): parameter" for n in buffers if n in tensors and tensors[n].kind == TensorKind.PARAMETER]
    )[:5]
    return row


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


# -- PyTorch distributed checkpoints ---------------------------------------------------------------------------------


def dcp_case(name: str, folder: Path) -> Row:
    import torch
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict

    alarm(SECONDS)
    try:
        model, inputs = build(name)
        row = torch_counts(model)
        if row["torch"] > MAX_PARAMETERS:
            return {"skipped": f"{row['torch']:,} parameters"}
        dcp.save(model.state_dict(), checkpoint_id=folder / "model")
        model.train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        output = model(**inputs)
        first = output if isinstance(output, torch.Tensor) else output[0]  # logits, last hidden state
        first.float().pow(2).mean().backward()
        optimizer.step()
        model_state, optim_state = get_state_dict(model, optimizer)
        row["torch_optimizer"] = sum(
            v.numel() for slots in optimizer.state.values() for v in slots.values() if isinstance(v, torch.Tensor)
        )
        dcp.save({"model": model_state, "optim": optim_state}, checkpoint_id=folder / "train")
        for way in DCP_WAYS if CONFIG and hasattr(model, "config") else ():
            model.config.to_json_file(folder / way / "config.json")
    except Exception as exc:  # noqa: BLE001 - a model that does not build or train here
        return {"not_built": f"{type(exc).__name__}: {str(exc)[:120]}"}
    finally:
        alarm(0)
    for way in DCP_WAYS:
        row[way] = verdict(folder / way) | {"optimizer": _elements(folder / way, "OPTIMIZER")}
    return row


def _elements(path: Path, kind: str) -> int:
    from inspector import load
    from inspector.records import TensorKind

    return sum(t.n_elements for t in load(path).unique(TensorKind[kind]))


# -- TensorFlow checkpoints ---------------------------------------------------------------------------------------


def keras_library(keras3: bool = False) -> Any:
    """tf_keras (Keras 2), or Keras 3 on the TensorFlow backend."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if keras3:
        os.environ["KERAS_BACKEND"] = "tensorflow"
        import keras

        return keras
    import tf_keras

    return tf_keras


def keras_model(keras: Any, name: str) -> Any:
    if name != "trained":
        words: dict[str, Any] = {"weights": None, "classes": 10}
        if name.startswith("NASNet"):
            words["input_shape"] = (224, 224, 3) if name == "NASNetMobile" else (331, 331, 3)
        return getattr(keras.applications, name)(**words)
    import numpy as np

    layers = keras.layers
    model = keras.Sequential(
        [
            keras.Input((16, 16, 3)),
            layers.Conv2D(8, 3),
            layers.BatchNormalization(),
            layers.ReLU(),
            layers.GlobalAveragePooling2D(),
            layers.Dense(10),
        ]
    )
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse")
    model.fit(np.ones((4, 16, 16, 3), "float32"), np.zeros((4, 10), "float32"), epochs=1, verbose=0)
    return model


def tf_case(name: str, folder: Path, keras3: bool = False) -> Row:
    import numpy as np
    import tensorflow as tf

    keras = keras_library(keras3)
    alarm(SECONDS)
    try:
        model = keras_model(keras, name)
        row: Row = {
            "count_params": model.count_params(),
            "trainable": sum(int(np.prod(w.shape)) for w in model.trainable_weights),
        }
        if row["count_params"] > MAX_PARAMETERS:
            return {"skipped": f"{row['count_params']:,} parameters"}
        optimizer = getattr(model, "optimizer", None)
        tracked = [*optimizer.variables, optimizer._learning_rate] if optimizer else []  # the rate is a variable
        variables = {id(v): v for v in tracked if getattr(v, "shape", None) is not None}.values()
        row["keras_optimizer"] = sum(int(np.prod(v.shape)) for v in variables)
        prefixes = {"ckpt": "ckpt/ckpt"} if keras3 else {"ckpt": "ckpt/ckpt", "weights": "weights/x.ckpt"}
        tf.train.Checkpoint(model=model).write(str(folder / prefixes["ckpt"]))
        if not keras3:  # Keras 3 writes weights as .weights.h5 only (bench/sweep_keras.py)
            model.save_weights(str(folder / prefixes["weights"]))
    except Exception as exc:  # noqa: BLE001 - a model the library cannot build or save this way
        return {"not_built": f"{type(exc).__name__}: {str(exc)[:120]}"}
    finally:
        alarm(0)
    for way, prefix in prefixes.items():
        path = folder / f"{prefix}.index"
        row[way] = verdict(path) | {"trainable": _trainable(path), "optimizer": _elements(path, "OPTIMIZER")}
    return row


def _trainable(path: Path) -> int:
    from inspector import load
    from inspector.records import TensorKind

    return sum(t.n_elements for t in load(path).unique(TensorKind.PARAMETER) if t.trainable)


# -- the sweep ------------------------------------------------------------------------------------------------------

CASES: dict[str, Callable[[str, Path], Row]] = {
    "onnx": onnx_case,
    "dcp": dcp_case,
    "tf": tf_case,
    "keras3": lambda name, folder: tf_case(name, folder, keras3=True),
}


def child(todo: list[list[str]]) -> None:
    import warnings

    from tests.vision import make_importable

    warnings.filterwarnings("ignore")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.path.insert(0, os.environ.get("SWEEP_TORCHVISION", "/nonexistent"))  # torchvision kept out of the venv
    make_importable()
    import logging

    logging.disable(logging.WARNING)
    for fmt, name in todo:
        with tempfile.TemporaryDirectory(prefix=f"sweep-{fmt}-", ignore_cleanup_errors=True) as folder:
            row = CASES[fmt](name, Path(folder))
        print(json.dumps({"format": fmt, "case": name, **row}), flush=True)


def problems(fmt: str, row: Row, way: str) -> list[str]:
    """What is wrong in the inspector's view of one file."""
    got = row.get(way, {})
    if "inspector" not in got:
        return []
    out = [f"warning {w[:160]}" for w in got["warnings"]]
    if fmt == "onnx":
        out += [f"tensors differ from onnx.load: {got['tensors_differ']}"] if got["tensors_differ"] else []
        out += [f"kinds: {got['kinds_wrong']}"] if got["kinds_wrong"] else []
    elif fmt == "dcp":
        if got["inspector"] != row["torch"]:
            out.append(f"parameters {got['inspector']:,}, torch {row['torch']:,}")
        if got["buffers"] != row["torch_buffers"]:
            out.append(f"buffers {got['buffers']:,}, torch {row['torch_buffers']:,}")
        if way == "train" and got["optimizer"] != row["torch_optimizer"]:
            out.append(f"optimizer {got['optimizer']:,}, torch {row['torch_optimizer']:,}")
    else:  # tf, keras3
        if got["inspector"] != row["count_params"]:
            out.append(f"parameters {got['inspector']:,}, count_params() {row['count_params']:,}")
        if got["trainable"] != row["trainable"]:
            out.append(f"trainable {got['trainable']:,}, Keras {row['trainable']:,}")
        if got["optimizer"] != row["keras_optimizer"]:
            out.append(f"optimizer {got['optimizer']:,}, Keras {row['keras_optimizer']:,}")
    return out


def summary(results: list[Row]) -> None:
    print(f"\n{len(results)} cases")
    for fmt, ways in WAYS.items():
        mine = [r for r in results if r["format"] == fmt]
        if not mine:
            continue
        for way in (*ways, "script-external") if fmt == "onnx" else ways:
            written = [r for r in mine if "inspector" in r.get(way, {})]
            if not written:
                continue
            bad = {r["case"]: problems(fmt, r, way) for r in written}
            bad = {case: found for case, found in bad.items() if found}
            print(f"{fmt} {way}: {len(written)} files, {len(bad)} with a problem")
            for case, found in bad.items():
                print(f"    {case}: {'; '.join(found)}"[:400])
            if fmt == "onnx":
                counts = [f"{r['case']} {r[way]['inspector']:,}/{r['torch']:,}" for r in written]
                differ = [c for c, r in zip(counts, written, strict=True) if r[way]["inspector"] != r["torch"]]
                print(f"    parameters other than torch's (inspector/torch): {', '.join(differ) or 'none'}")
        skipped = [r["case"] for r in mine if "skipped" in r]
        failed = [f"{r['case']} ({r['not_built'][:80]})" for r in mine if "not_built" in r]
        unwritten = [f"{r['case']} {w}" for r in mine for w in ways if "not_written" in r.get(w, {})]
        print(f"{fmt}: over --max: {len(skipped)}; not built: {len(failed)} {'; '.join(failed)}")
        print(f"{fmt}: not written: {len(unwritten)} {', '.join(unwritten)}")


def main() -> int:
    global MAX_PARAMETERS, CONFIG
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--formats", default="onnx,dcp,tf,keras3", help="comma-separated: onnx, dcp, tf, keras3")
    ap.add_argument("--models", help="only these cases (comma-separated names as the lines print them)")
    ap.add_argument("--batch", type=int, default=8, help="cases per child process")
    ap.add_argument("--max", type=int, default=MAX_PARAMETERS, help="skip models over this many parameters")
    ap.add_argument("--config", action="store_true", help="config.json beside transformers models' files")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    MAX_PARAMETERS, CONFIG = args.max, args.config
    if args.child:
        child(json.loads(args.child))
        return 0
    todo = cases(args.formats.split(","))
    if args.models:
        wanted = set(args.models.split(","))
        todo = [case for case in todo if case[1] in wanted]
    results = run_batches(
        __file__,
        todo,
        args.batch,
        ["--max", str(args.max)] + ["--config"] * args.config,
        lambda c: {"format": c[0], "case": c[1]},
        3000,
    )
    summary(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
