"""The one place that decides what each tensor is: parameter, buffer (running statistic), optimizer slot, other.

The container's own word comes first and is never overridden: loaders set the kind where the format
states it (PyTorch module `_buffers` dicts and checkpoint sections, TorchScript declarations, Keras
trainability and optimizer groups, MXNet `aux:` states). Where the container is silent (a state dict in
safetensors, npz or a plain `torch.save`) a tensor the loader left as a parameter is decided here, by
`KIND_RULES` over its name (the role table names the same tensors `norm_statistic` and `buffer`, from the same
`roles.NORM_STATISTICS`). A packed weight's record (bitsandbytes 4-bit, compressed-tensors' pack-quantized, GPTQ,
AWQ, optimum-quanto's 4 and 2 bits) is unpacked here too, where its state's kind is decided: counts read the values it
holds.
`inspector.registry.load` applies it to every checkpoint, so counts, the trainable split, byte buckets,
the roles and the expectation all read one decision.
"""

from __future__ import annotations

from inspector import regexes
from inspector.hfconfig import model_type as config_model_type
from inspector.quantized import (
    BNB_4BIT_NAMES,
    BNB_INT8_NAMES,
    block_packing_of,
    mlx_quantization,
    packing_of,
    quanto_unflattened,
    torchao_unflattened,
    unpacked,
)
from inspector.records import Checkpoint, TensorKind
from inspector.recordtype import record, replace
from inspector.roles import TORCH_STATS, compile_rules

# The first factor of each kind of kohya-ss / LyCORIS adapter module (LoRA, LoHa, LoKr): a module holding one holds
# its scale `alpha` as a buffer
# (the rule's pattern: `\d` where the suffixes spell a digit, which would split the kind matcher's memo by it)
ALPHA_SUFFIXES = (".lora_down.weight", ".hada_w1_a", ".lokr_w1", ".lokr_w1_a")
ALPHA_BESIDE = r"lora_down\.weight|hada_w\d_a|lokr_w\d(?:_a)?"

# Frameworks whose loaders state every tensor's kind (their statistics are parameters they count; a TF Lite graph
# says what each constant is to the operators reading it).
STATED = ("keras", "mxnet", "tensorflow", "tflite")


@record(frozen=True, slots=True)
class KindRule:
    rule_id: str
    kind: TensorKind
    pattern: str  # fullmatch over the tensor name
    why: str
    # the config model_types (diffusers: model classes) whose modeling code makes the name a parameter
    unless: tuple[str, ...] = ()
    only: tuple[str, ...] = ()  # the config model_types the rule is limited to (a name that is a parameter elsewhere)
    # a tensor (its name's last part) only the models in `unless` hold: without a config, a file holding it is one of
    # them (AuraFlow's `register_tokens` beside its learned `pos_embed.pos_embed`)
    unless_beside: str = ""


KIND_RULES: tuple[KindRule, ...] = (
    KindRule(
        "torch.running_stat",
        TensorKind.BUFFER,
        r"(?:.*[./])?(?:" + TORCH_STATS + ")",
        "BatchNorm running statistic: a registered buffer, outside parameters()",
    ),  # fmt: skip
    KindRule("hf.ids", TensorKind.BUFFER, r"(?:.*\.)?(?:position_ids|token_type_ids)", "transformers index buffer"),
    KindRule(
        "hf.rotary", TensorKind.BUFFER, r"(?:.*\.)?(?:inv_freq|original_inv_freq|embed_scale)", "rotary / scale buffer"
    ),  # fmt: skip
    KindRule(
        "hf.gpt2.mask", TensorKind.BUFFER, r"(?:.*\.)?h\.\d+\.attn\.(?:bias|masked_bias)", "GPT-2 causal-mask buffer"
    ),  # fmt: skip
    KindRule(
        "hf.final_logits_bias",
        TensorKind.BUFFER,
        r"(?:.*\.)?final_logits_bias",
        "BART/Marian final_logits_bias: a registered buffer",
    ),  # fmt: skip
    # transformers buffers saved in state dicts (found by building every model class transformers 5.23 makes from a
    # config and comparing its state dict with named_parameters())
    KindRule(
        "hf.router_bias",
        TensorKind.BUFFER,
        r"(?:.*\.)?e_score_correction_bias",
        "MoE router score correction (DeepSeek-V3 style): a buffer",
        ("ernie4_5_moe", "ernie4_5_vl_moe", "laguna"),  # an nn.Parameter there (requires_grad=False in laguna)
    ),
    KindRule(
        "hf.router_table",
        TensorKind.BUFFER,
        r"(?:.*\.)?gate\.(?:tid2eid|balancing_biases)",
        "MoE routing table or balancing biases: a buffer",
    ),
    KindRule(
        "hf.lightning",
        TensorKind.BUFFER,
        r"(?:.*\.)?self_attn\.(?:slope_rate|query_decay|key_decay|diagonal_decay)",
        "MiniMax lightning-attention decays: buffers",
    ),
    KindRule(
        "hf.xielu", TensorKind.BUFFER, r"(?:.*\.)?act_fn\.(?:beta|eps)", "xIELU activation constants (Apertus): buffers"
    ),
    KindRule(
        "hf.relative_index",
        TensorKind.BUFFER,
        r"(?:.*\.)?(?:relative_position_index|relative_coords_table)",
        "Swin relative position index (and Swin V2's coordinates table): buffers",
    ),
    # EnCodec's EMA codebooks: transformers' (`quantizer.layers.N.codebook.*`) and the original package's and
    # audiocraft's (`quantizer.vq.layers.N._codebook.*`: Bark's and MusicGen's compression models)
    KindRule(
        "hf.codebook",
        TensorKind.BUFFER,
        r"(?:.*\.)?_?codebook\.(?:inited|cluster_size|embed|embed_avg)",
        "EnCodec EMA codebook: buffers",
    ),
    KindRule(
        "hf.clip_range",
        TensorKind.BUFFER,
        r"(?:.*\.)?(?:input|output)_(?:min|max)",
        "clipping ranges (Gemma audio): buffers",
    ),
    KindRule(
        "hf.ibert",
        TensorKind.BUFFER,
        r"(?:.*\.)?(?:weight_integer|bias_integer|weight_scaling_factor|fc_scaling_factor|act_scaling_factor|x_min|x_max)",
        "I-BERT integer copies and quantisation ranges: buffers",
    ),
    KindRule("hf.ibert.shift", TensorKind.BUFFER, r"(?:.*\.)?LayerNorm\.shift", "I-BERT LayerNorm shift: a buffer"),
    KindRule(
        "hf.points_scale",
        TensorKind.BUFFER,
        r"(?:.*\.)?num_points_scale",
        "D-FINE deformable-attention point scales: a buffer",
    ),
    KindRule(
        "hf.radio",
        TensorKind.BUFFER,
        r"(?:.*\.)?(?:summary_idxs|input_conditioner\.norm_(?:mean|std))",
        "RADIO input normalisation and summary indices: buffers",
    ),
    KindRule(
        "hf.sam.fourier",
        TensorKind.BUFFER,
        r"(?:.*\.)?(?:shared_image_embedding|shared_embedding)\.positional_embedding",
        "SAM / SAM 2 / EdgeTAM random Fourier features: a buffer (open_clip's positional_embedding is a parameter)",
    ),
    # torchvision and timm buffers saved in state dicts (found by `bench/sweep_vision.py --names`: every model both
    # libraries build, its state dict against named_parameters())
    KindRule(
        "timm.attention_bias_idxs",
        TensorKind.BUFFER,
        r"(?:.*\.)?attention_bias_idxs",
        "EfficientFormer attention bias indices: a buffer",
    ),
    KindRule(
        "timm.dct", TensorKind.BUFFER, r"(?:.*\.)?stem_dct\.(?:\w+\.)*weights", "CSATv2 DCT basis (Dct1d): a buffer"
    ),
    KindRule(
        "timm.standardize",
        TensorKind.BUFFER,
        r"(?:.*\.)?std_(?:bias|scale)",
        "Gemma 4 ViT output standardisation: buffers",
    ),
    KindRule(
        "torch.ao.zero_point",
        TensorKind.BUFFER,
        r"(?:.*\.)?zero_point",
        "a quantized module's output zero point (torch.ao): no parameter",
    ),
    KindRule(
        "torch.ao.observer",
        TensorKind.BUFFER,
        r"(?:.*\.)?(?:activation_post_process|weight_fake_quant)\..+",
        "quantization-aware training's observers and fake-quantize state (torch.ao): buffers",
    ),
    # diffusers (found by writing every model class diffusers 0.42 builds from its default config, bench/
    # sweep_diffusers.py): PatchEmbed's sin-cos position table, persistent where the model crops it to the input (SD3's
    # pos_embed_max_size; AuraFlow's patch embedding learns a table of that name), AnimateDiff's sinusoidal table, a
    # VAE's latent or data normalisation constants, UNet1D's FIR resampling kernels
    KindRule(
        "diffusers.pos_embed",
        TensorKind.BUFFER,
        r"(?:.*\.)?pos_embed\.pos_embed",
        "diffusers PatchEmbed sin-cos position table: a registered buffer",
        ("AuraFlowTransformer2DModel",),
        unless_beside="register_tokens",
    ),
    KindRule(
        "diffusers.sinusoidal", TensorKind.BUFFER, r"(?:.*\.)?pos_embed\.pe", "sinusoidal position table: a buffer"
    ),
    KindRule(
        "diffusers.latent_stats",
        TensorKind.BUFFER,
        r"(?:.*\.)?_?(?:latents|encoder|data)_(?:mean|std)",
        "latent or data normalisation constants of an autoencoder: buffers",
    ),
    KindRule(
        "diffusers.fir_kernel", TensorKind.BUFFER, r"(?:.*\.)?(?:down|up)\.kernel", "FIR resampling kernel: a buffer"
    ),
    # audio front ends and vocoders (BigVGAN's alias-free activations): fixed filters, buffers
    KindRule(
        "audio.filters",
        TensorKind.BUFFER,
        r"(?:.*\.)?(?:mel_basis|hann_window|upsample\.filter|downsample\.lowpass\.filter)",
        "mel filterbank, STFT window or anti-aliasing filter: buffers",
    ),
    KindRule("flax.batch_stats", TensorKind.BUFFER, r"(?:.*/)?batch_stats/.+", "flax batch_stats collection"),
    KindRule(
        "flax.other", TensorKind.OTHER, r"(?:.*/)?(?:cache|intermediates|losses)/.+", "flax non-params collection"
    ),
    # diffusers models with a buffer of a name of their own (bench/sweep_diffusers.py), limited to their classes
    KindRule(
        "diffusers.silence_latent",
        TensorKind.BUFFER,
        r"(?:.*\.)?silence_latent",
        "ACE-Step's latent of silence: a buffer",
        only=("AceStepConditionEncoder",),
    ),
    KindRule(
        "diffusers.recall_gate",
        TensorKind.BUFFER,
        r"(?:.*\.)?attn\.recall_gate",
        "SanaWM attention's recall gate: a buffer",
        only=("SanaWMTransformer3DModel",),
    ),
    KindRule(
        "diffusers.zero_k_bias",
        TensorKind.BUFFER,
        r"(?:.*\.)?attn\.zero_k_bias",
        "MiniMax H3 audio autoencoder attention's zero key bias: a buffer",
        only=("AutoencoderKLMiniMaxH3Audio",),
    ),
    KindRule(
        "diffusers.running_std",
        TensorKind.BUFFER,
        r"(?:.*\.)?bottleneck\.running_std",
        "AutoencoderSAME bottleneck's running standard deviation: a buffer",
        only=("AutoencoderSAME",),
    ),
    KindRule(
        "diffusers.freqs",
        TensorKind.BUFFER,
        r"(?:.*\.)?freqs",
        "Stable Audio 3 duration embedder's Fourier frequencies: a buffer",
        only=("StableAudio3DurationEmbedder",),
    ),
    # peft adapters: the random projections VeRA, RandLoRA, PVeRA and TinyLoRA keep (VeRA's shared by every module,
    # saved by default: `save_projection`), DeLoRA's norms of the base weight, AdaLoRA's current rank (a frozen
    # nn.Parameter peft never saves, a constant): not trained; SHiRA's indices of its sparse entries: data. (The
    # projections' names in a PeftModel: 'base_model.vera_A', 'base_model.model....q_proj.vera_A.default')
    KindRule(
        "peft.projection",
        TensorKind.BUFFER,
        r".*base_model\.(?:.*\.)?(?:(?:vera|randlora|pvera|tinylora)_(?:A|B)|tinylora_P|delora_w_norm)(?:\.[^.]+)?",
        "peft's random projections (VeRA, RandLoRA, PVeRA, TinyLoRA) and DeLoRA's weight norms: buffers",
    ),
    KindRule(
        "peft.indices",
        TensorKind.OTHER,
        r"(?:.*\.)?shira_indices(?:\.[^.]+)?",
        "SHiRA's indices of the entries it trains: saved beside them, no parameter",
    ),
    # bitsandbytes' linear layers save their quantized weight's state beside it: the 8-bit layers' row scales and
    # layout (`SCB`, `weight_format`), the 4-bit layers' block scales, code map and the state's record, named after the
    # weight (`inspector.quantized`); outside parameters(), transformers' num_parameters() counts the weight alone.
    # A file holding a 4-bit state has packed weights: `decide` unpacks their records (`quantized.unpacked`)
    KindRule(
        "bnb.int8_state",
        TensorKind.BUFFER,
        r"(?:.*\.)?(?:" + BNB_INT8_NAMES + ")",
        "bitsandbytes int8 weight's row scales and layout: state of the weight, outside parameters()",
    ),
    KindRule(
        "bnb.4bit_state",
        TensorKind.BUFFER,
        r"(?:.*\.)?" + BNB_4BIT_NAMES,
        "bitsandbytes 4-bit weight's block scales, code map and state record: its state, outside parameters()",
    ),
    # Latent diffusion's LitEma (CompVis' and Stability's Stable Diffusion 1.x/2.x checkpoints, `model_ema.*` beside
    # `model.diffusion_model.*`): the EMA copy of each trained weight is a registered buffer, named without its dots
    # (`model_ema.diffusion_modelinput_blocks00weight`), beside the `decay` and `num_updates` buffers. An EMA model
    # kept as a submodule has dotted names (`model_ema.module.conv.weight`) and stays as it is
    KindRule(
        "ldm.lit_ema",
        TensorKind.BUFFER,
        r"(?:.*\.)?model_ema\.[^.]+",
        "latent diffusion's LitEma: the weights' EMA copies and its decay, registered buffers",
    ),
    # Segment Anything's own checkpoints (`segment_anything`, the sam_vit_*.pth files; SAM 2's prompt encoder too): the
    # prompt encoder's random Fourier features are a registered buffer (transformers' SAM learns its own, named apart)
    KindRule(
        "sam.fourier",
        TensorKind.BUFFER,
        r"(?:.*\.)?pe_layer\.positional_encoding_gaussian_matrix",
        "Segment Anything prompt encoder's random Fourier features: a registered buffer",
    ),
    # openai-whisper's own checkpoints: the audio encoder's sinusoidal position table is a registered buffer (the text
    # decoder's `decoder.positional_embedding` is learned, a parameter)
    KindRule(
        "whisper.sinusoids",
        TensorKind.BUFFER,
        r"(?:model_state_dict\.)?encoder\.positional_embedding",
        "openai-whisper audio encoder's sinusoidal positions: a registered buffer",
    ),
    # pitch trackers' own checkpoints, shipped in their wheels: torchfcpe's (`fcpe_c_v001.pt`, its model as `model.*`)
    # cent table and mask, and PESTO's (`pesto/weights/*.ckpt`, Lightning's `state_dict.*`) pitch shift, a scalar at the
    # model's top level: registered buffers (checked against each package's own model class)
    KindRule(
        "torchfcpe.cents",
        TensorKind.BUFFER,
        r"(?:.*\.)?(?:cent_table|gaussian_blurred_cent_mask)",
        "torchfcpe's cent table and blurred-cent mask: registered buffers",
    ),
    KindRule(
        "pesto.shift", TensorKind.BUFFER, r"(?:state_dict\.)?shift", "PESTO's constant pitch shift: a registered buffer"
    ),
    # kohya-ss' and LyCORIS' adapter modules register their scale `alpha` as a buffer, saved beside the factors: a
    # module holding one of these factors makes its `alpha` a buffer (`_by_layout`; an `alpha` elsewhere, a Snake
    # activation's, is a parameter)
    KindRule(
        "lycoris.factor",
        TensorKind.PARAMETER,
        r".+\.(?:" + ALPHA_BESIDE + ")",
        "a LoRA or LyCORIS factor of kohya-ss' layout: the module's `alpha` beside it is a buffer",
    ),
    # torch's reparametrizations of a module's weight: spectral_norm's power-iteration vectors are buffers beside the
    # weight it keeps as `weight_orig` (`_by_layout`: a weight_norm's `weight_v` is its direction, a parameter), and a
    # parametrization module's own tensors (`parametrizations.weight.0._u` and `._v` of spectral_norm, `.0.base` of
    # orthogonal) registered buffers
    KindRule(
        "torch.spectral_norm",
        TensorKind.PARAMETER,
        r".+\.weight_orig",
        "spectral_norm's weight: the module's `weight_u` and `weight_v` beside it are buffers",
    ),
    KindRule(
        "torch.parametrization_state",
        TensorKind.BUFFER,
        r"(?:.*\.)?parametrizations\.\w+\.\d+\.\w+",
        "a parametrization's own state (spectral_norm's `_u`, `_v`, orthogonal's `base`): registered buffers",
    ),
    KindRule(
        "peft.ranknum", TensorKind.BUFFER, r"(?:.*\.)?ranknum(?:\.[^.]+)?", "AdaLoRA's rank: a constant, not trained"
    ),
    # Last (a name it matches in another model type is a parameter, and no later rule may be shadowed by it): the
    # router's score correction under the name these model types' checkpoints give it, which transformers'
    # conversion mapping turns into `e_score_correction_bias` on load and back on save (a buffer in each model)
    KindRule(
        "hf.router_bias_saved",
        TensorKind.BUFFER,
        r"(?:.*\.)?(?:gate\.bias|expert_bias|router_bias)",
        "MoE router score correction, named as the checkpoint names it: a buffer",
        only=(
            "bailing_hybrid",
            "deepseek_v4",
            "dots3_note_vision_encoder",
            "hy_v3",
            "inkling2",
            "inkling2_loop",
            "inkling2_loop_text",
            "inkling2_text",
            "inkling_mm_model",
            "kolibri1",
            "lfm2_moe",
            "sarvam_moe",
        ),
    ),  # fmt: skip
)
# The first rule that matches, remembered by the name's shape (the role table's matcher: names that differ only in
# their numbers meet the same rule, so 100,000 layers cost one scan of the table, not 100,000)
_MATCHER = compile_rules(KIND_RULES)


# Model types whose backbones freeze their BatchNorms (transformers' *FrozenBatchNorm2d: weight, bias and running
# statistics all buffers, and no num_batches_tracked, which every trained nn.BatchNorm saves): with such a config,
# a norm module holding running statistics but no counter is frozen. Without a config the same layout is an
# ordinary BatchNorm whose counter was dropped, and keeps its parameters.
FROZEN_BATCHNORM = frozenset(
    {"conditional_detr", "d_fine", "dab-detr", "deformable_detr", "deimv2", "detr", "grounding-dino",
     "layoutlmv2", "mm-grounding-dino", "pp_doclayout_v2", "pp_doclayout_v3", "pp_doclayout_v4", "rt_detr",
     "rt_detr_v2", "table-transformer"}
)  # fmt: skip


# Modules whose norms are frozen wherever a file holds them with running statistics and no num_batches_tracked,
# whatever the config: the backbone body of torchvision's detection models (`backbone.body.*`, its
# IntermediateLayerGetter, built with FrozenBatchNorm2d whenever the backbone was pretrained: every detection
# checkpoint torchvision ships and most fine-tuned from one) and DETR's original repository (`backbone.0.body.*`).
# A detection model trained from scratch keeps nn.BatchNorm2d there, and its counters say so.
FROZEN_BATCHNORM_MODULES = r"(?:.*\.)?backbone\.(?:\d+\.)?body\..+"  # (compiled on first use)


def kind_rule(name: str) -> KindRule | None:
    found = _MATCHER.match(name)
    return found[0] if found is not None else None


def decide(ckpt: Checkpoint) -> Checkpoint:
    """The checkpoint with every tensor's kind decided (the same object when nothing changes)."""
    if ckpt.framework in STATED:  # the loader stated every tensor's kind
        return ckpt
    tensors = list(ckpt.tensors)
    model_type = config_model_type(ckpt.config)
    layout = model_type in FROZEN_BATCHNORM  # whether modules' layouts may make more buffers (see `_by_layout`)
    changed = False
    lasts: set[str] | None = None  # the last parts of the file's names, gathered for a rule's `unless_beside`
    packed = False  # whether a 4-bit weight's state is in the file
    parameter, match = TensorKind.PARAMETER, _MATCHER.match  # (kind_rule in line: 100,000 tensors)
    for i, t in enumerate(tensors):
        if t.kind is parameter:  # the container's own word is never overridden
            found = match(t.name)
            if found is not None:
                rule = found[0]
                layout = layout or rule.rule_id in LAYOUT_RULES
                packed = packed or rule.rule_id == "bnb.4bit_state"
                if rule.unless_beside and model_type is None and lasts is None:
                    lasts = {x.name.rpartition(".")[2] for x in tensors}
                if (
                    rule.kind is not t.kind
                    and model_type not in rule.unless
                    and (not rule.only or model_type in rule.only)
                    and not (rule.unless_beside and model_type is None and rule.unless_beside in (lasts or ()))
                ):
                    tensors[i] = replace(t, kind=rule.kind, trainable=False)
                    changed = True
    if layout:  # (a file of norms with statistics or of quantized modules: a second pass)
        modules, names = _by_layout(ckpt, model_type in FROZEN_BATCHNORM)
        for i, t in enumerate(tensors):
            if t.kind is TensorKind.PARAMETER and (t.name in names or t.name.rpartition(".")[0] in modules):
                tensors[i] = replace(t, kind=TensorKind.BUFFER, trainable=False)
                changed = True
    packing, blocks = packing_of(ckpt.config, tensors), block_packing_of(ckpt.config, tensors)
    mlx = mlx_quantization(ckpt.config)
    if packed or packing or blocks or mlx:
        unpacked(tensors, packing, blocks, mlx)
        changed = True
    if torchao_unflattened(tensors, ckpt.attributes):  # (torchao's tensor subclasses: their state is no parameter)
        changed = True
    if quanto_unflattened(tensors, ckpt.config):  # (optimum-quanto's: its values the module's weight, the rest state)
        changed = True
    return replace(ckpt, tensors=tuple(tensors)) if changed else ckpt


# The rules whose names tell that a module's layout may make its other tensors buffers (`_by_layout`)
LAYOUT_RULES = frozenset({"torch.running_stat", "torch.ao.zero_point", "lycoris.factor", "torch.spectral_norm"})
SPECTRAL_NORM_VECTORS = ("weight_u", "weight_v")  # (the buffers spectral_norm registers beside `weight_orig`)


def _by_layout(ckpt: Checkpoint, everywhere: bool) -> tuple[set[str], set[str]]:
    """(modules all of whose tensors are buffers, tensor names that are) by the layout of their modules:

    - frozen BatchNorms: modules with running statistics and no num_batches_tracked, wherever they are (a config's
      `FROZEN_BATCHNORM` model type) or in `FROZEN_BATCHNORM_MODULES` only;
    - a quantized module's `scale` beside its `zero_point` (torch.ao's converted Conv2d, Linear, QFunctional,
      Quantize: their output quantization, saved beside the quantized weight; torch's parameters() lists neither);
    - an adapter module's `alpha` beside its first factor (kohya-ss' and LyCORIS' LoRA, LoHa, LoKr modules: a
      registered buffer, its value the scale);
    - spectral_norm's `weight_u` and `weight_v` beside its `weight_orig` (registered buffers).
    """
    stats, counted, names = set(), set(), set()
    for t in ckpt.tensors:
        name = t.name
        if name.endswith(".running_mean"):
            module = name[: -len(".running_mean")]
            if everywhere or regexes.fullmatch(FROZEN_BATCHNORM_MODULES, module):
                stats.add(module)
        elif name.endswith(".num_batches_tracked"):
            counted.add(name[: -len(".num_batches_tracked")])
        elif name.endswith(".zero_point"):
            names.add(name[: -len("zero_point")] + "scale")
        elif name.endswith(ALPHA_SUFFIXES):
            names.add(name.removesuffix(".weight").rpartition(".")[0] + ".alpha")
        elif name.endswith(".weight_orig"):
            names.update(name[: -len("weight_orig")] + vector for vector in SPECTRAL_NORM_VECTORS)
    return stats - counted, names
