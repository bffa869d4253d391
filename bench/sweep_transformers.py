"""Sweep: every model class the installed transformers builds from a shrunk default config, against the inspector.

    python bench/sweep_transformers.py [--no-config] [--bin] [--flip] [--types a,b] [--batch 20]

For every `model_type` with a causal-LM class (else a base `AutoModel` class), the default config is shrunk (the
size words below, where the config has them as integers, and what a type needs besides to build, `NEEDS`), the model
is built on the meta device first (skipped over 30M parameters), then for real, saved with `save_pretrained` into a
temporary folder (with `--no-config` the weights are inspected without the `config.json` beside them; with `--bin` the
state dict is written by `torch.save` as `pytorch_model.bin` instead) and inspected. It prints one line per class
(what transformers' `num_parameters()` says, what the inspector counts, its warnings, the expectation it checked the
file against) and a summary: the classes whose count differs and those that get a warning or are called unsafe. A
correct file should get neither (README, "The analytic expectation" and "Counting"). Classes transformers cannot build
from a default config are listed as such.
With `--flip`, each class is built once per flag of `FLAGS` its config has as a boolean, with that flag turned from
its default (a bias, tied embeddings, a norm's affine...: what checkpoints people ship vary and a formula that
assumed the default would then warn).
Batches run in child processes, so a class that crashes the interpreter costs only itself.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _sweep import alarm, run_batches, verdict  # noqa: E402

SMALL = dict(
    hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
    vocab_size=128, max_position_embeddings=64, d_model=32, encoder_layers=2, decoder_layers=2,
    encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, num_layers=2,
    num_heads=4, d_ff=64, d_kv=8, n_embd=32, n_layer=2, n_head=4, n_positions=64, ffn_dim=64, head_dim=8,
    image_size=32, patch_size=8, num_channels=3,
)  # fmt: skip
# what a model type's shrunk config needs besides SMALL to build at all: its defaults do not fit the shrunk sizes
NEEDS = {
    "glm": {"pad_token_id": 0},  # (151329: outside the shrunk vocabulary; the embedding refuses it)
    "glm4": {"pad_token_id": 0},
    "mamba2": {"num_heads": 8},  # (Mamba2Config: heads x head_dim = expand x hidden_size)
    "granitemoehybrid": {"mamba_n_heads": 8, "mamba_d_head": 8},  # (the same relation, under its mamba_* words)
    "hunyuan_v1_dense": {"head_dim": 8},  # (None by default: the attention has no head size to scale by)
    "hunyuan_v1_moe": {"head_dim": 8},
}
# Config flags that change which tensors a model holds (biases, ties, norms, fused projections), flipped by --flip
FLAGS = (
    "tie_word_embeddings", "attention_bias", "mlp_bias", "use_bias", "bias", "qkv_bias", "use_qkv_bias",
    "add_bias_linear", "add_qkv_bias", "use_qk_norm", "qk_layernorm", "use_parallel_residual", "layer_norm_bias",
    "elementwise_affine", "use_conv_bias", "conv_bias", "tie_encoder_decoder",
)  # fmt: skip
MAX_PARAMETERS = 30_000_000
SECONDS = 120  # per class


def model_types() -> list[tuple[str, str]]:
    """(model_type, auto class): causal-LM classes first, then base models."""
    from transformers.models.auto import modeling_auto as auto
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    causal = [t for t in CONFIG_MAPPING_NAMES if t in auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES]
    base = [t for t in CONFIG_MAPPING_NAMES if t in auto.MODEL_MAPPING_NAMES and t not in causal]
    return [(t, "AutoModelForCausalLM") for t in causal] + [(t, "AutoModel") for t in base]


def one(model_type: str, auto: str, no_config: bool, pickle: bool = False, flip: str = "") -> dict[str, object]:
    """Build, save and inspect one class (in a temporary folder, removed whatever happens)."""
    with tempfile.TemporaryDirectory(prefix=f"sweep-{model_type}-", ignore_cleanup_errors=True) as folder:
        return _one(model_type, auto, no_config, pickle, Path(folder), flip)


def flags(model_type: str) -> list[str]:
    """The `FLAGS` the class's default config has as booleans."""
    import transformers

    from tests.vision import make_importable

    make_importable()  # (as the children: transformers imports torchvision where it is installed)

    try:
        config = transformers.AutoConfig.for_model(model_type)
    except Exception:  # noqa: BLE001 - not built: the plain sweep lists it
        return []
    return [f for f in FLAGS if isinstance(getattr(config, f, None), bool)]


def _one(model_type: str, auto: str, no_config: bool, pickle: bool, folder: Path, flip: str) -> dict[str, object]:
    import torch
    import transformers

    alarm(SECONDS)
    try:
        config = transformers.AutoConfig.for_model(model_type)
        words = {k: v for k, v in SMALL.items() if isinstance(getattr(config, k, None), int)}
        words |= NEEDS.get(model_type, {})
        if flip:
            words[flip] = not getattr(config, flip)
        config = transformers.AutoConfig.for_model(model_type, **words)
        with torch.device("meta"):
            if getattr(transformers, auto).from_config(config).num_parameters() > MAX_PARAMETERS:
                return {"skipped": f"over {MAX_PARAMETERS:,} parameters"}
        torch.manual_seed(0)
        model = getattr(transformers, auto).from_config(config)
        model.save_pretrained(folder)
        if pickle:  # transformers 5 writes safetensors only: the state dict as torch.save writes it
            torch.save(model.state_dict(), folder / "pytorch_model.bin")
            for weights in folder.glob("*.safetensors*"):
                weights.unlink()
        n = int(model.num_parameters())
    except Exception as exc:  # noqa: BLE001 - a class transformers cannot build from a default config
        return {"not_built": f"{type(exc).__name__}: {str(exc)[:120]}"}
    finally:
        alarm(0)
    if no_config:
        (folder / "config.json").unlink(missing_ok=True)
    weights = (
        sorted(folder.glob("*.index.json")) or sorted(folder.glob("*.safetensors")) or sorted(folder.glob("*.bin"))
    )
    return {"transformers": n, **verdict(weights[0])}


def child(types: list[list[str]], no_config: bool, pickle: bool) -> None:
    import warnings

    from tests.vision import make_importable

    warnings.filterwarnings("ignore")
    make_importable()  # transformers' vision models import torchvision where it is installed
    for model_type, auto, *flip in types:
        row = {"type": model_type, "auto": auto, **({"flip": flip[0]} if flip else {})}
        print(json.dumps(row | one(model_type, auto, no_config, pickle, *flip)), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-config", action="store_true", help="inspect the weights without config.json beside them")
    ap.add_argument("--bin", action="store_true", help="torch.save the weights (pytorch_model.bin), not safetensors")
    ap.add_argument("--flip", action="store_true", help="each class once per config flag of FLAGS, flipped")
    ap.add_argument("--types", help="only these model types (comma-separated)")
    ap.add_argument("--batch", type=int, default=20, help="classes per child process")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(json.loads(args.child), args.no_config, args.bin)
        return 0
    types = model_types()
    if args.types:
        wanted = set(args.types.split(","))
        types = [t for t in types if t[0] in wanted]
    cases: list[list[str]] = [[t, auto, flag] for t, auto in types for flag in flags(t)] if args.flip else types
    argv = (["--no-config"] if args.no_config else []) + (["--bin"] if args.bin else [])
    results = run_batches(__file__, cases, args.batch, argv, lambda case: {"type": case[0], "auto": case[1]})
    built = [r for r in results if "transformers" in r]

    def said(r: dict[str, object]) -> str:
        return f"{r['type']}" + (f"({r['flip']})" if "flip" in r else "")

    differs = [said(r) for r in built if r["transformers"] != r["inspector"]]
    warned = [said(r) for r in built if r["warnings"]]
    beside = "without" if args.no_config else "with"
    print(f"\n{len(results)} classes, {len(built)} built and inspected ({beside} config.json)")
    print(f"count differs from num_parameters(): {len(differs)} {' '.join(differs)}")
    print(f"warnings on a correct file: {len(warned)} {' '.join(warned)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
