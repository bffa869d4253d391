"""Make GGUF samples with llama.cpp's own converter, and record what the source model and gguf-py report.

    python sample_models/gguf_converter/make_gguf_converter.py --llama-cpp DIR

DIR holds `convert_hf_to_gguf.py` and `gguf-py/` of llama.cpp commit 6118c043b186cc3727b6dcb91daa897b3254c457
(2026-04-30): `git archive 6118c043b convert_hf_to_gguf.py gguf-py | tar -x -C DIR`. Each sample is a random tiny
transformers model (`bench/sweep_gguf.py`'s `build`: the default config shrunk, `save_pretrained`, the sweep's
256-piece tokenizers beside it) converted by `convert_hf_to_gguf.py FOLDER --outtype TYPE --outfile FILE`, run
in-process as the sweep runs it (the BPE pre-tokenizer hash check answered "gpt-2", config.json's own keys under
transformers 5's `to_dict`). manifest.json records, per file: the source model's `num_parameters()`, its
state-dict key for each GGUF tensor (gguf-py's name map at that commit), the sizes its config.json states (the
keys of `loaders.gguf.HF_CONFIG`), and GGUFReader's tensors.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "bench"))
sys.path.insert(0, str(HERE.parents[1]))
import sweep_gguf  # noqa: E402

from loaders.gguf import HF_CONFIG  # noqa: E402

COMMIT = "6118c043b186cc3727b6dcb91daa897b3254c457"
# file -> (model_type, transformers class, converter --outtype)
SAMPLES = {
    "qwen3-q8_0.gguf": ("qwen3", "Qwen3ForCausalLM", "q8_0"),
    "gptneox-f16.gguf": ("gpt_neox", "GPTNeoXForCausalLM", "f16"),
    "mt5-q8_0.gguf": ("mt5", "MT5ForConditionalGeneration", "q8_0"),
    "mamba-f16.gguf": ("mamba", "MambaForCausalLM", "f16"),
    "mixtral-q8_0.gguf": ("mixtral", "MixtralForCausalLM", "q8_0"),  # written as 'llama', its experts stacked
    "olmoe-q8_0.gguf": ("olmoe", "OlmoeForCausalLM", "q8_0"),
    "granitemoeshared-f16.gguf": ("granitemoeshared", "GraniteMoeSharedForCausalLM", "f16"),  # input_linear split
    "llama4-q8_0.gguf": ("llama4_text", "Llama4ForCausalLM", "q8_0"),  # MoE layers interleaved with dense ones
    "phi2-f16.gguf": ("phi", "PhiForCausalLM", "f16"),  # feed_forward_length written as 4 x n_embd, not the model's
}


def sources(gguf: Any, arch: str, names: list[str], keys: list[str]) -> dict[str, str]:
    """GGUF tensor -> the source state-dict key gguf-py's name map turns into it."""
    model_arch = next(a for a, name in gguf.MODEL_ARCH_NAMES.items() if name == arch)
    mapping = gguf.get_tensor_name_map(model_arch, sweep_gguf.blocks(names))
    out: dict[str, str] = {}
    for key in keys:
        name = mapping.get_name(key, try_suffixes=(".weight", ".bias"))
        if name in names:
            out.setdefault(name, key)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-cpp", type=Path, required=True, help="folder with convert_hf_to_gguf.py and gguf-py/")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    conv = sweep_gguf.converter(args.llama_cpp)
    import gguf  # the converter's own gguf-py, first on the path

    manifest: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer = Path(tmp) / "tokenizer"
        tokenizer.mkdir()
        sweep_gguf.tokenizer_files(tokenizer)
        for name, (model_type, cls_name, outtype) in SAMPLES.items():
            folder = Path(tmp) / model_type
            built = sweep_gguf.build(model_type, cls_name, folder, tokenizer)
            sys.argv = ["convert_hf_to_gguf.py", str(folder), "--outtype", outtype, "--outfile", str(HERE / name)]
            conv.main()
            reader = gguf.GGUFReader(str(HERE / name))
            arch = str(bytes(reader.fields["general.architecture"].parts[-1]), "utf-8")
            names = [t.name for t in reader.tensors]
            saved = json.loads((folder / "config.json").read_text())
            manifest[name] = {
                "converter": f"llama.cpp {COMMIT} convert_hf_to_gguf.py --outtype {outtype}",
                "source": cls_name,
                "architecture": arch,
                "hf_num_parameters": built["transformers"],
                "hf_config": {k: saved[k] for k, _ in HF_CONFIG if isinstance(saved.get(k), int | float)},
                "hf_keys": sources(gguf, arch, names, built["state_dict"]),
                "tensors": {
                    t.name: [
                        [int(d) for d in reversed(t.shape.tolist())],
                        t.tensor_type.name,
                        int(t.data_offset),
                        int(t.n_bytes),
                    ]
                    for t in reader.tensors
                },  # fmt: skip
                "n_elements": sum(int(t.n_elements) for t in reader.tensors),
            }
            shutil.rmtree(folder)
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
