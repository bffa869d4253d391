"""Sweep: llama.cpp's converter (convert_hf_to_gguf.py) on every architecture it shares with transformers, against
the inspector.

    python bench/sweep_gguf.py --llama-cpp DIR [--types a,b] [--outtypes f32,f16,q8_0] [--tied] [--keep DIR]
                               [--out FILE] [--batch 10]

DIR holds `convert_hf_to_gguf.py`, `gguf-py/` and, since llama.cpp moved the model classes out of the script,
`conversion/` of one llama.cpp commit (e.g. `git archive COMMIT convert_hf_to_gguf.py conversion gguf-py | tar -x -C
DIR`, or the `vendor/llama.cpp` folder `.ci/run` extracts from the llama-cpp-python sdist into `.ci/cache/`); it is
not a pip package, so nothing here is a test. Either layout is read: the single script, or the script and its
package. For every
`model_type` whose transformers class (causal LM, else seq2seq, masked LM, base model) the converter registers, the
default config is shrunk, the model built with random weights and saved with `save_pretrained` beside a tiny
tokenizer (a 256-piece sentencepiece `tokenizer.model` and a byte-level BPE `tokenizer.json`, both trained here on
the text of Python's argparse module), then converted once per `--outtype`. The converter recognises a BPE
tokenizer by hashing how it splits a test text; a tiny tokenizer matches no known hash, so its pre-tokenizer name
is set to "gpt-2" (only `tokenizer.ggml.pre` depends on it, never a tensor), and the converter reads config.json's own
keys under transformers 5's `to_dict` (which drops `rotary_pct` and others the converter still reads). Needs
torch, transformers, sentencepiece and tokenizers (test-only packages; never on the inspector's path).

One line per model type, with each outtype's results: the source model's `num_parameters()`, what gguf-py's
`GGUFReader` holds (tensors, elements), what the inspector counts, its warnings, tensors whose role is
`unmatched`, tensors `hf_name` cannot map or maps to another name than the state-dict key gguf-py's map turns into
that tensor, and the expectation (architecture, source). Then a summary: conversions with a warning (any warning on a
converter's output is a bug), counts that differ from GGUFReader's, and counts that differ from the source model
(what the converter drops or adds: tied heads, rotary tables, fused or split tensors).
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _sweep import Row, alarm, run_batches, verdict  # noqa: E402

SMALL = dict(
    hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
    vocab_size=256, max_position_embeddings=64, d_model=32, num_layers=2, num_heads=4, d_ff=64, d_kv=8,
    n_embd=32, n_layer=2, n_head=4, n_positions=64, ffn_dim=64, head_dim=8, moe_intermediate_size=32,
    num_experts=4, num_local_experts=4, n_routed_experts=4, num_experts_per_tok=2, shared_expert_intermediate_size=32,
    shared_intermediate_size=32, intermediate_size_mlp=48, interleave_moe_layer_step=2,
    state_size=8, time_step_rank=4, expand=2, conv_kernel=4, kv_lora_rank=16, q_lora_rank=16, qk_rope_head_dim=8,
    qk_nope_head_dim=8, v_head_dim=8, num_decoder_layers=2, hidden_dim=32, dim=32, n_layers=2, n_heads=4,
)  # fmt: skip
# keys real checkpoints' config.json files hold that a default config no longer writes (the converter reads them)
EXTRA: dict[str, dict[str, Any]] = {
    "gpt2": {"n_ctx": 64}, "gpt-sw3": {"n_ctx": 64}, "t5": {"decoder_start_token_id": 0},
    "falcon": {"multi_query": False},  # the default config says 4 kv heads but builds 1 (multi_query)
    # (Lfm2MoeConfig's default layer_types is None, which builds no model; its first two layers are dense)
    "lfm2_moe": {"num_hidden_layers": 3, "layer_types": ["conv", "full_attention", "conv"], "num_dense_layers": 1},
    # latent attention: the converter sizes kv_b_proj by the key/value heads, which these models' configs state as
    # many as the heads (SMALL's 2 against 4 trips its assertion)
    **{t: {"num_key_value_heads": 4} for t in ("deepseek_v2", "deepseek_v3", "deepseek_v32", "glm4_moe_lite",
                                               "glm_moe_dsa", "sarvam_mla", "youtu")},
}  # fmt: skip
# converter flags by model type: Qwen3-Next's and Qwen3.5's converters ask for the MTP module their configs declare
# unless told to leave it out (a tiny model built by transformers has none)
FLAGS = {t: ("--no-mtp",) for t in ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text")}
VOCAB = 256
TIED = False  # --tied: every model whose config has tie_word_embeddings ties its head to the embedding
TOKEN_IDS = ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id")  # ids past VOCAB become 0
PARTIAL_ROTARY = ("partial_rotary_factor", "rotary_pct", "rope_pct")  # names the converter reads, by architecture
OUTTYPES = ("f32", "f16", "q8_0")
SECONDS = 180  # per model type, every outtype
MAX_PARAMETERS = 5_000_000
CLASS_MAPPINGS = (
    "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES",
    "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES",
    "MODEL_FOR_MASKED_LM_MAPPING_NAMES",
    "MODEL_MAPPING_NAMES",
)


def converter(llama_cpp: Path) -> Any:
    """The converter module of `llama_cpp`, with its own gguf-py first on the path and the BPE hash check relaxed.

    Its model classes are in the script, or (llama.cpp since 2026) in its `conversion/` package beside it, whose
    `base` module holds `ModelBase` and `TextModel`: patched where they are."""
    sys.path.insert(0, str(llama_cpp / "gguf-py"))
    sys.path.insert(0, str(llama_cpp))  # (the `conversion` package the script imports, where there is one)
    spec = importlib.util.spec_from_file_location("convert_hf_to_gguf", llama_cpp / "convert_hf_to_gguf.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["convert_hf_to_gguf"] = module
    spec.loader.exec_module(module)
    classes = module if hasattr(module, "TextModel") else importlib.import_module("conversion.base")
    classes.TextModel.get_vocab_base_pre = lambda self, tokenizer: "gpt-2"
    load_hparams = classes.ModelBase.load_hparams

    def with_saved_keys(dir_model: Path, is_mistral_format: bool) -> dict[str, Any]:
        """The config as the converter reads it, with config.json's own keys under it (transformers 5's `to_dict`
        drops keys it moved, such as `rotary_pct`, which transformers 4 kept and this converter still reads)."""
        saved = json.loads((Path(dir_model) / "config.json").read_text())
        return saved | load_hparams(dir_model, is_mistral_format)

    classes.ModelBase.load_hparams = staticmethod(with_saved_keys)
    return module


def model_types(conv: Any) -> list[tuple[str, str]]:
    """(model_type, transformers class name) for every class the converter registers as a text model (the script's
    registry, or the `conversion` package's table of class names, whose modules it imports on first use)."""
    from transformers.models.auto import modeling_auto as auto
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    package = sys.modules.get("conversion")
    registered = getattr(package, "TEXT_MODEL_MAP", None) or conv.ModelBase._model_classes[conv.ModelType.TEXT]
    out = []
    for model_type in CONFIG_MAPPING_NAMES:
        for mapping in CLASS_MAPPINGS:
            cls = getattr(auto, mapping).get(model_type)
            cls = cls[0] if isinstance(cls, tuple | list) else cls
            if cls in registered:
                out.append((model_type, cls))
                break
    return out


def tokenizer_files(folder: Path) -> None:
    """A 256-piece sentencepiece model and byte-level BPE tokenizer (tokenizer.model, tokenizer.json), made here."""
    import argparse as source

    import sentencepiece
    import tokenizers
    import transformers
    from tokenizers import decoders, models, pre_tokenizers, trainers

    lines = [line for line in Path(source.__file__).read_text().splitlines() if line.strip()]
    buf = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=buf, vocab_size=VOCAB, model_type="bpe", minloglevel=2
    )
    (folder / "tokenizer.model").write_bytes(buf.getvalue())
    bpe = tokenizers.Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    # (GLM's converters look these up by name: GLM-4's, GLM-4.5's and Sarvam-MoE's, Solar Open's)
    specials = ["<unk>", "<s>", "</s>", "<|endoftext|>", "<|user|>", "[gMASK]", "<|observation|>", "<|startoftext|>"]
    bpe.train_from_iterator(lines, trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=specials))
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=bpe, unk_token="<unk>", bos_token="<s>",
                                                eos_token="</s>")  # fmt: skip
    fast.save_pretrained(folder)


def build(model_type: str, cls_name: str, folder: Path, tokenizer: Path) -> Row:
    """The tiny model saved in `folder` beside the tokenizer: its parameter count and state-dict keys."""
    import torch
    import transformers

    config = transformers.AutoConfig.for_model(model_type)
    fields = config.to_dict()
    words = {k: v for k, v in SMALL.items() if isinstance(fields.get(k), int)}
    words |= {k: 0 for k in TOKEN_IDS if isinstance(fields.get(k), int) and fields[k] >= VOCAB}
    if TIED and isinstance(fields.get("tie_word_embeddings"), bool):
        words["tie_word_embeddings"] = True
    config = transformers.AutoConfig.for_model(model_type, **(words | EXTRA.get(model_type, {})))
    for sub in ("text_config", "decoder", "encoder"):  # composite configs: shrink the language model too
        inner = getattr(config, sub, None)
        if inner is not None and hasattr(inner, "to_dict"):
            for k, v in SMALL.items():
                if isinstance(inner.to_dict().get(k), int):
                    setattr(inner, k, v)
    cls = getattr(transformers, cls_name)
    with torch.device("meta"):
        if cls(config).num_parameters() > MAX_PARAMETERS:
            raise ValueError(f"over {MAX_PARAMETERS:,} parameters")
    torch.manual_seed(0)
    model = cls(config)
    model.save_pretrained(folder)
    shutil.copytree(tokenizer, folder, dirs_exist_ok=True)
    saved = json.loads((folder / "config.json").read_text())
    factor = (saved.get("rope_parameters") or {}).get("partial_rotary_factor")
    if factor is not None:  # transformers 4 wrote it at the top level, where the converter reads it
        saved |= {key: saved.get(key, factor) for key in PARTIAL_ROTARY}
        (folder / "config.json").write_text(json.dumps(saved, indent=2))
    return {"transformers": int(model.num_parameters()), "state_dict": list(model.state_dict())}


def blocks(names: list[str]) -> int:
    """How many blocks GGUF tensor names number (`blk.N.`, `enc.blk.N.`...)."""
    return 1 + max((int(m.group(1)) for n in names if (m := re.search(r"(?:^|\.)blk\.(\d+)\.", n))), default=-1)


def misnamed(arch: str, names: list[str], keys: list[str]) -> list[str]:
    """GGUF tensors whose `hf_name` is not the state-dict key gguf-py's own mapping turns into that GGUF name."""
    import gguf

    from loaders.gguf import hf_name, names_table

    model_arch = next(a for a, name in gguf.MODEL_ARCH_NAMES.items() if name == arch)
    table = names_table(arch, names)
    mapping = gguf.get_tensor_name_map(model_arch, blocks(names))
    source = {}
    for key in keys:
        name = mapping.get_name(key, try_suffixes=(".weight", ".bias"))
        if name is not None:
            source.setdefault(name, key)
    return [
        f"{n} -> {hf_name(n, table)} (not {source[n]})" for n in names if n in source and hf_name(n, table) != source[n]
    ]


def compare(path: Path, keys: list[str]) -> Row:
    """GGUFReader's tensors, the inspector's count and warnings, unmatched roles, unmapped or misnamed tensors (hf_name
    against gguf-py's mapping of the source model's keys), the expectation."""
    import gguf

    from inspector.report import inspect
    from loaders.gguf import NOT_PARAMETERS, hf_name, names_table

    reader = gguf.GGUFReader(str(path))
    arch = str(bytes(reader.fields["general.architecture"].parts[-1]), "utf-8")
    names = [t.name for t in reader.tensors]
    report = inspect(path)
    return {
        "arch": arch,
        "reader": sum(int(t.n_elements) for t in reader.tensors),
        "reader_tensors": len(names),
        "not_parameters": sorted(n for n in names if n in NOT_PARAMETERS),
        **verdict(path),
        "unmatched": [r.name for r in report.roles if r.role == "unmatched"][:6],
        "unmapped": [n for n in names if hf_name(n, names_table(arch, names)) is None and n not in NOT_PARAMETERS][:6],
        "misnamed": misnamed(arch, names, keys)[:6],
    }


def one(conv: Any, model_type: str, cls_name: str, outtypes: list[str], tokenizer: Path, keep: Path | None) -> Row:
    """Build, convert (each outtype) and inspect one model type, in a temporary folder removed whatever happens."""
    with tempfile.TemporaryDirectory(prefix=f"sweep-gguf-{model_type}-", ignore_cleanup_errors=True) as tmp:
        folder = Path(tmp)
        alarm(SECONDS)
        try:
            row: Row = build(model_type, cls_name, folder / "hf", tokenizer)
            keys = row.pop("state_dict")
        except Exception as exc:  # noqa: BLE001 - a class transformers cannot build from a default config
            alarm(0)
            return {"not_built": f"{type(exc).__name__}: {str(exc)[:120]}"}
        for outtype in outtypes:
            out = folder / f"{model_type}-{outtype}.gguf"
            try:
                sys.argv = ["convert_hf_to_gguf.py", str(folder / "hf"), "--outtype", outtype, "--outfile", str(out),
                            *FLAGS.get(model_type, ())]  # fmt: skip
                conv.main()
            except BaseException as exc:  # noqa: BLE001 - SystemExit too: the converter exits on what it refuses
                if isinstance(exc, KeyboardInterrupt):
                    raise
                row[outtype] = {"not_converted": f"{type(exc).__name__}: {str(exc)[:160]}"}
                continue
            row[outtype] = compare(out, keys)
            if keep is not None:
                shutil.copy(out, keep / out.name)
        alarm(0)
        return row


def child(cases: list[tuple[str, str]], llama_cpp: Path, outtypes: list[str], keep: Path | None) -> None:
    import logging
    import warnings

    from tests.vision import make_importable

    warnings.filterwarnings("ignore")
    make_importable()  # transformers' models import torchvision where it is installed
    conv = converter(llama_cpp)
    logging.disable(logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="sweep-gguf-tok-") as tok:
        tokenizer_files(Path(tok))
        for model_type, cls_name in cases:
            row = one(conv, model_type, cls_name, outtypes, Path(tok), keep)
            print(json.dumps({"type": model_type, "class": cls_name, **row}), flush=True)


def summary(results: list[Row], outtypes: list[str]) -> None:
    built = [r for r in results if "transformers" in r]
    done = [(r, t, r[t]) for r in built for t in outtypes if "reader" in r.get(t, {})]
    print(f"\n{len(results)} model types, {len(built)} built, {len(done)} conversions inspected")
    failed = sorted({r["type"] for r in built for t in outtypes if "not_converted" in r.get(t, {})})
    print(f"converter failed: {len(failed)} {' '.join(failed)}")
    rows = {
        "warnings on the converter's output": [f"{r['type']}/{t}" for r, t, c in done if c["warnings"]],
        "count differs from GGUFReader's": [
            f"{r['type']}/{t}" for r, t, c in done if c["inspector"] + c["buffers"] != c["reader"]
        ],
        "count differs from the source model": sorted(
            {
                f"{r['type']} ({c['reader'] - r['transformers']:+,})"
                for r, t, c in done
                if c["inspector"] != r["transformers"]
            }  # fmt: skip
        ),
        "unmatched roles": sorted({r["type"] for r, t, c in done if c["unmatched"]}),
        "names hf_name does not map": sorted({r["type"] for r, t, c in done if c["unmapped"]}),
        "names hf_name maps wrong": sorted({r["type"] for r, t, c in done if c["misnamed"]}),
        "no expectation": sorted({r["type"] for r, t, c in done if not c["expectation"]}),
    }
    for label, items in rows.items():
        print(f"{label}: {len(items)} {' '.join(items)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-cpp", type=Path, required=True, help="folder with convert_hf_to_gguf.py and gguf-py/")
    ap.add_argument("--types", help="only these model types (comma-separated)")
    ap.add_argument("--outtypes", default=",".join(OUTTYPES), help="converter --outtype values (comma-separated)")
    ap.add_argument("--keep", type=Path, help="copy every GGUF file written into this folder")
    ap.add_argument("--tied", action="store_true", help="tie the LM head to the embedding wherever the config can")
    ap.add_argument("--batch", type=int, default=10, help="model types per child process")
    ap.add_argument("--out", type=Path, help="write every row (uncut) to this JSON file")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    outtypes = args.outtypes.split(",")
    global TIED
    TIED = args.tied
    if args.child:
        child(json.loads(args.child), args.llama_cpp, outtypes, args.keep)
        return 0
    from tests.vision import make_importable

    make_importable()  # (as the children)
    types = model_types(converter(args.llama_cpp))
    if args.types:
        wanted = set(args.types.split(","))
        types = [t for t in types if t[0] in wanted]
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    argv = ["--llama-cpp", str(args.llama_cpp), "--outtypes", args.outtypes] + (["--tied"] if args.tied else [])
    argv += ["--keep", str(args.keep)] if args.keep else []
    results = run_batches(__file__, types, args.batch, argv, lambda case: {"type": case[0]}, limit=2000)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))
    summary(results, outtypes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
