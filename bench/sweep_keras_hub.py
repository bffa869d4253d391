"""Sweep: keras-hub's backbones built tiny, saved as keras-hub ships them, against the inspector.

    PYTHONPATH=. python bench/sweep_keras_hub.py [--models GemmaBackbone,...] [--batch N] [--keras]

Each `keras_hub.models.*Backbone` class is built at a tiny size: its required constructor words come from `WORDS`
(vocabulary 100, 2 layers, hidden 32...), with `CLASS_WORDS` for the classes whose words no common value fits
(image stacks, per-stage lists); a class still missing a required word is listed as not built, with the words.
`backbone.save_to_preset(dir)` writes what Kaggle and the Hub ship (`config.json`, `metadata.json`,
`model.weights.h5`), and with `--keras` `backbone.save("model.keras")` too. Each line says what Keras counts
(`count_params()`, the trainable part) and, per file, the inspector's parameter count, its trainable part and its
warnings; the summary lists the files whose counts differ and those that get a warning. A correct file should get
neither (README, "Keras files"). Batches run in child processes, so a model that crashes the interpreter costs
only itself. KERAS_BACKEND picks the backend (the dev venv's default is tensorflow; CI runs torch).
"""

from __future__ import annotations

import argparse
import inspect
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

SECONDS = 120  # per model
# Values for the constructor words many backbones share: a tiny model of each
WORDS: dict[str, Any] = {
    "vocabulary_size": 100,
    "vocab_size": 100,
    "text_vocab_size": 100,
    "num_layers": 2,
    "num_layers_enc": 2,
    "num_layers_dec": 2,
    "num_hidden_layers": 2,
    "encoder_num_layers": 2,
    "decoder_num_layers": 2,
    "num_heads": 2,
    "num_query_heads": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "encoder_num_heads": 2,
    "decoder_num_heads": 2,
    "hidden_dim": 32,
    "hidden_size": 32,
    "text_hidden_size": 32,
    "embedding_dim": 16,
    "intermediate_dim": 64,
    "intermediate_size": 64,
    "mlp_dim": 64,
    "moe_intermediate_dim": 16,
    "shared_expert_intermediate_dim": 16,
    "shared_expert_intermediate_size": 16,
    "num_experts": 4,
    "top_k": 2,
    "head_dim": 16,
    "head_size": 16,
    "filter_dim": 16,
    "patch_size": 4,
    "image_shape": (32, 32, 3),
    "image_size": 32,
    "vit_patch_size": 4,
    "vit_num_heads": 2,
    "vit_hidden_dim": 32,
    "vit_num_layers": 2,
}
CLASS_WORDS: dict[str, dict[str, Any]] = {
    "ResNetBackbone": {
        "input_conv_filters": [64],
        "input_conv_kernel_sizes": [3],
        "stackwise_num_filters": [64, 32],
        "stackwise_num_blocks": [1, 1],
        "stackwise_num_strides": [1, 2],
        "block_type": "basic_block",
        "image_shape": (32, 32, 3),
    },
    "VGGBackbone": {"stackwise_num_repeats": [1, 1], "stackwise_num_filters": [8, 16], "image_shape": (32, 32, 3)},
    "DenseNetBackbone": {"stackwise_num_repeats": [1, 1], "image_shape": (32, 32, 3)},
    "XceptionBackbone": {
        "stackwise_conv_filters": [[8, 16], [16, 16]],
        "stackwise_pooling": [True, False],
        "image_shape": (32, 32, 3),
    },
    "SwinTransformerBackbone": {
        "image_shape": (32, 32, 3),
        "embed_dim": 16,
        "depths": [2, 2],
        "num_heads": [2, 2],
        "window_size": 2,
        "patch_size": 2,
    },
    "DeiTBackbone": {"image_shape": (32, 32, 3)},
    "ViTBackbone": {"image_shape": (32, 32, 3)},
    "DINOV2Backbone": {"image_shape": (28, 28, 3), "patch_size": 14},
    "DINOV3Backbone": {"image_shape": (32, 32, 3), "patch_size": 16},
    "MiTBackbone": {
        "layerwise_depths": [1, 1],
        "num_layers": 2,
        "layerwise_num_heads": [1, 2],
        "layerwise_sr_ratios": [2, 1],
        "max_drop_path_rate": 0.1,
        "layerwise_patch_sizes": [7, 3],
        "layerwise_strides": [4, 2],
        "hidden_dims": [16, 32],
        "image_shape": (32, 32, 3),
    },
    "CSPNetBackbone": {
        "stem_filters": 16,
        "stem_kernel_size": 3,
        "stem_strides": 2,
        "stackwise_depth": [1, 1],
        "stackwise_strides": [2, 2],
        "stackwise_num_filters": [16, 32],
        "block_type": "bottleneck_block",
        "stage_type": "csp",
        "image_shape": (32, 32, 3),
    },
    "ViTDetBackbone": {"global_attention_layer_indices": [1], "image_shape": (32, 32, 3), "window_size": 2},
    "SmolLMBackbone": {
        "attention_bias": False,
        "attention_dropout": 0.0,
        "rope_layer_enabled_list": [True, True],
        "layer_types": ["attention", "attention"],
        "mlp_bias": False,
        "layer_norm_epsilon": 1e-6,
        "max_position_embeddings": 64,
        "rope_theta": 10000.0,
        "partial_rotary_factor": 1.0,
    },
    "FluxBackbone": {
        "input_channels": 4,
        "mlp_ratio": 2.0,
        "depth": 1,
        "depth_single_blocks": 1,
        "axes_dim": [4, 6, 6],
        "theta": 10000,
        "use_bias": True,
        "guidance_embed": False,
        "image_shape": (16, 16, 4),
        "text_shape": (8, 32),
        "image_ids_shape": (16, 3),
        "text_ids_shape": (8, 3),
        "y_shape": (32,),
    },
    "RWKV7Backbone": {"hidden_size": 64, "head_size": 16},
}
CLASS_WORDS["SmolLM3Backbone"] = CLASS_WORDS["SmolLMBackbone"]
# Backbones made of other backbones: their parts, built tiny (module, class) with the common words
TOWER = {"patch_size": 4, "hidden_dim": 32, "num_layers": 2, "num_heads": 2, "intermediate_dim": 64}
IMAGE_TOWER = TOWER | {"image_shape": (32, 32, 3)}
TEXT_TOWER = TOWER | {"vocabulary_size": 100, "embedding_dim": 32, "max_sequence_length": 16}
TEXT_TOWER.pop("patch_size")
PARTS: dict[str, dict[str, tuple[str, str, dict[str, Any]]]] = {
    "CLIPBackbone": {
        "vision_encoder": ("clip.clip_vision_encoder", "CLIPVisionEncoder", IMAGE_TOWER),
        "text_encoder": ("clip.clip_text_encoder", "CLIPTextEncoder", TEXT_TOWER),
    },
    "SigLIPBackbone": {
        "vision_encoder": ("siglip.siglip_vision_encoder", "SigLIPVisionEncoder", IMAGE_TOWER),
        "text_encoder": ("siglip.siglip_text_encoder", "SigLIPTextEncoder", TEXT_TOWER),
    },
    "MetaCLIP2Backbone": {
        "vision_encoder": ("metaclip_2.metaclip_2_vision_encoder", "MetaCLIP2VisionEncoder", IMAGE_TOWER),
        "text_encoder": ("metaclip_2.metaclip_2_text_encoder", "MetaCLIP2TextEncoder", TEXT_TOWER),
    },
    "SAMBackbone": {
        "image_encoder": (
            "vit_det.vit_det_backbone",
            "ViTDetBackbone",
            TOWER
            | {"hidden_size": 32, "global_attention_layer_indices": [1], "image_shape": (64, 64, 3), "patch_size": 16}
            | {"num_output_channels": 32, "window_size": 2},
        ),
        "prompt_encoder": (
            "sam.sam_prompt_encoder",
            "SAMPromptEncoder",
            {"hidden_size": 32, "image_embedding_size": (4, 4), "input_image_size": (64, 64)},
        ),
        "mask_decoder": (
            "sam.sam_mask_decoder",
            "SAMMaskDecoder",
            {"hidden_size": 32, "num_layers": 2, "intermediate_dim": 64, "num_heads": 2, "embedding_dim": 32}
            | {"iou_head_hidden_dim": 32},
        ),
    },
    "SegFormerBackbone": {"image_encoder": ("mit.mit_backbone", "MiTBackbone", CLASS_WORDS["MiTBackbone"])},
    "DeepLabV3Backbone": {"image_encoder": ("resnet.resnet_backbone", "ResNetBackbone", CLASS_WORDS["ResNetBackbone"])},
}
PARTS["SAMBackbone"]["image_encoder"][2].pop("hidden_dim")
CLASS_WORDS["CLIPBackbone"] = CLASS_WORDS["MetaCLIP2Backbone"] = {"projection_dim": 16}
CLASS_WORDS["SegFormerBackbone"] = {"projection_filters": 16}
CLASS_WORDS["DeepLabV3Backbone"] = {"spatial_pyramid_pooling_key": "P3", "upsampling_size": 8, "dilation_rates": [2]}
CLASS_WORDS["T5GemmaBackbone"] = {
    f"{side}_{word}": value
    for side in ("encoder", "decoder")
    for word, value in {
        "hidden_dim": 32,
        "intermediate_dim": 64,
        "num_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 16,
        "layer_types": ["full_attention", "full_attention"],
    }.items()
}


def parts(name: str) -> dict[str, Any]:
    """The built parts a composite backbone takes as constructor words."""
    import importlib

    out = {}
    for word, (module, cls, words) in PARTS.get(name, {}).items():
        out[word] = getattr(importlib.import_module(f"keras_hub.src.models.{module}"), cls)(**words)
    return out


def words_for(cls: Any) -> tuple[dict[str, Any], list[str]]:
    """The words to build `cls` with, and the required words no table gives."""
    own = CLASS_WORDS.get(cls.__name__, {}) | dict.fromkeys(PARTS.get(cls.__name__, {}))
    params = inspect.signature(cls.__init__).parameters
    words, missing = {}, []
    for p in params.values():
        if p.name == "self" or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue
        if p.name in own:
            words[p.name] = own[p.name]
        elif p.default is inspect.Parameter.empty:
            if p.name in WORDS:
                words[p.name] = WORDS[p.name]
            else:
                missing.append(p.name)
        elif p.name in WORDS and p.name in ("image_shape", "head_dim", "patch_size"):
            words[p.name] = WORDS[p.name]
    return words, missing


def one(name: str, keras_file: bool) -> Row:
    """Build, save and inspect one backbone."""
    import keras_hub
    import numpy as np

    cls = getattr(keras_hub.models, name)
    words, missing = words_for(cls)
    if missing:
        return {"not_built": f"no tiny value for {', '.join(missing)}"}
    alarm(SECONDS)
    folder = Path(tempfile.mkdtemp(prefix="sweep-keras-hub-"))
    try:
        model = cls(**(words | parts(name)))
        row: Row = {
            "count_params": model.count_params(),
            "trainable": sum(int(np.prod(w.shape)) for w in model.trainable_weights),
        }
        model.save_to_preset(str(folder / "preset"))
        files = {"preset": folder / "preset" / "model.weights.h5"}
        if keras_file:
            files["keras"] = folder / "model.keras"
            model.save(files["keras"])
    except Exception as exc:  # noqa: BLE001 - a backbone that cannot be built or saved this way
        shutil.rmtree(folder, ignore_errors=True)
        return {"not_built": f"{type(exc).__name__}: {str(exc)[:160]}"}
    finally:
        alarm(0)
    for way, path in files.items():
        row[way] = verdict(path)
    shutil.rmtree(folder, ignore_errors=True)
    return row


def child(todo: list[str], keras_file: bool) -> None:
    import warnings

    warnings.filterwarnings("ignore")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    for name in todo:
        print(json.dumps({"case": name, **one(name, keras_file)}), flush=True)


def summary(results: list[Row], keras_file: bool) -> None:
    built = [r for r in results if "count_params" in r]
    print(f"\n{len(results)} backbones, {len(built)} built and inspected")
    for way in ("preset", "keras") if keras_file else ("preset",):
        written = [r for r in built if "inspector" in r.get(way, {})]
        params = [r["case"] for r in written if r[way]["inspector"] != r["count_params"]]
        trainable = [r["case"] for r in written if r[way]["trainable"] != r["trainable"]]
        warned = [r["case"] for r in written if r[way]["warnings"]]
        print(f"{way}: {len(written)} files; parameters differ from Keras's: {len(params)} {' '.join(params)}")
        print(f"{way}: trainable parameters differ: {len(trainable)} {' '.join(trainable)}")
        print(f"{way}: warnings on a correct file: {len(warned)} {' '.join(warned)}")
    failed = [r for r in results if "not_built" in r]
    print(f"not built: {len(failed)}")
    for r in failed:
        print(f"  {r['case']}: {r['not_built']}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", help="only these backbone classes (comma-separated)")
    ap.add_argument("--batch", type=int, default=8, help="backbones per child process")
    ap.add_argument("--keras", action="store_true", help="also save and inspect model.keras")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(json.loads(args.child), args.keras)
        return 0
    if args.models:
        names = args.models.split(",")
    else:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import keras_hub

        names = sorted(n for n in dir(keras_hub.models) if n.endswith("Backbone") and n != "Backbone")
    argv = ["--keras"] if args.keras else []
    results = run_batches(__file__, names, args.batch, argv, lambda case: {"case": case}, 400)
    summary(results, args.keras)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
