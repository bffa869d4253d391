"""What each tensor is: a table of name patterns, then shape-and-order rules for names that say nothing.

`ROLE_RULES` is one flat table. Each rule has a stable id, the role it assigns, an anchored regular
expression over the tensor name with named groups (`layer`: the layer the tensor belongs to, `param`:
its parameter name, `i`: a layer index), an optional layer template (`{i}` and other groups filled in),
and the exporter it was taken from. The first rule that matches wins (declaration order), so the
specific rules come before the generic ones. Tensors no rule explains get the role "unmatched".
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from itertools import repeat
from operator import attrgetter
from sys import intern

from inspector import regexes
from inspector.enumtype import StrEnum
from inspector.needles import DIGITS, Split, spelled, split
from inspector.quantized import BNB_STATE_NAMES, MLX_STATE, PACKINGS, SIDE_TENSOR_NAMES
from inspector.records import Checkpoint, RoleMatch, TensorInfo, TensorKind
from inspector.recordtype import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from typing import Any, Protocol

    class Patterned(Protocol):
        """A rule of a table: a regular expression over a tensor name, fullmatched."""

        @property
        def pattern(self) -> str: ...


# A normalisation layer's running statistics as each framework names them: their own role here, a buffer where the
# container is silent (`inspector.kinds`), not one of a module's parameters (`inspector.modules`), and not trained
# where the loader states trainability (Keras, TensorFlow, MXNet loaders).
NORM_STATISTICS = {
    "torch": ("running_mean", "running_var", "num_batches_tracked"),
    "keras": ("moving_mean", "moving_variance"),
    "mxnet": ("running_mean", "running_var", "moving_mean", "moving_var"),
}
TORCH_STATS, KERAS_STATS, MXNET_STATS = ("|".join(NORM_STATISTICS[f]) for f in ("torch", "keras", "mxnet"))


class Role(StrEnum):
    EMBEDDING = "embedding"
    POSITION_EMBEDDING = "position_embedding"
    DENSE = "dense"
    CONV = "conv"
    RNN_INPUT = "rnn_input_kernel"
    RNN_RECURRENT = "rnn_recurrent_kernel"
    RNN_BIAS = "rnn_bias"
    INITIAL_STATE = "initial_state"
    ATTN_Q = "attention_query"
    ATTN_K = "attention_key"
    ATTN_V = "attention_value"
    ATTN_O = "attention_output"
    ATTN_QKV = "attention_qkv"
    FFN_UP = "feedforward_up"
    FFN_DOWN = "feedforward_down"
    FFN_GATE = "feedforward_gate"
    NORM = "norm"
    NORM_STAT = "norm_statistic"
    HEAD = "output_head"
    STACK_ACTION = "stack_action"
    STACK_PUSH = "stack_push"
    STACK_READ = "stack_read"
    MOE_ROUTER = "moe_router"
    LORA = "lora_factor"
    ADAPTER = "adapter_factor"
    LEARNED_TENSOR = "learned_tensor"
    QUANT_SCALE = "quantization_scale"  # a quantized weight's scales, zero points, shape (`inspector.quantized`)
    QUANT_STATE = "quantization_state"  # a quantized weight's state outside parameters() (bitsandbytes' `SCB`, `absmax`)
    GRAPH_CONSTANT = "graph_constant"  # an input of a graph's node that is no weight (a Reshape's shape, Pad's pads)
    OPTIMIZER_SLOT = "optimizer_slot"
    BUFFER = "buffer"
    UNMATCHED = "unmatched"


@record(frozen=True, slots=True)
class RoleRule:
    rule_id: str
    role: Role
    pattern: str  # anchored (fullmatch); named groups: layer, param, i
    families: tuple[str, ...]
    layer: str | None = None  # layer template; None: the `layer` group, or the name without its last part
    param: str | None = None  # fixed parameter name when the pattern has no `param` group


# The factors of peft's adapter types other than LoRA (each tuner's `adapter_layer_names`, peft 0.21): LoHa, LoKr, IA3
# and C3A (`\d`: a digit spelled in a pattern would split the matcher's memo by that digit), OFT, BOFT, VeRA, PVeRA,
# HRA, FourierFT, WaveFT, VB-LoRA, SHiRA (and the indices of its entries), RandLoRA, DeLoRA, GraLoRA, MiSS, trainable
# tokens
PEFT_FACTORS = (
    r"hada_(?:w1_a|w1_b|w2_a|w2_b|t1|t2)|lokr_(?:w1|w1_a|w1_b|w2|w2_a|w2_b|t2)|ia\d_l|c\da_kernel|oft_R|oft_embedding_R"
    r"|boft_R|boft_s|vera_lambda_b|vera_lambda_d|pvera_lambda_b|pvera_lambda_d|hra_u|fourierft_spectrum|waveft_spectrum"
    r"|vblora_logits_A|vblora_logits_B|vblora_vector_bank|shira_weight|shira_indices|randlora_lambda|randlora_gamma"
    r"|delora_A|delora_B|delora_lambda|gralora_A|gralora_B|gralora_A_general|gralora_B_general|miss_block"
    r"|trainable_tokens_delta"
)
# LyCORIS' LoHa and LoKr factors (`lycoris.modules.loha`, `lokr`: Tucker cores hada_t1/hada_t2 and lokr_t2 for a conv;
# spelled out, as PEFT_FACTORS are: a digit in a set would leave the matchers without their memo)
LOHA_FACTORS = r"hada_(?:w1_a|w1_b|w2_a|w2_b|t1|t2)"
LOKR_FACTORS = r"lokr_(?:w1|w1_a|w1_b|w2|w2_a|w2_b|t2)"
P = r"(?:.*[./])?"  # any module prefix ('first.first.second.', 'model/', 'bert.')
WB = r"(?P<param>weight|bias)"
# the tensors torch stores for a module's weight under a reparametrization: weight_norm's magnitude and direction
# (`weight_g`, `weight_v`; `parametrizations.weight.original0`, `original1` in torch.nn.utils.parametrizations),
# spectral_norm's weight and power-iteration vectors (`weight_orig`, `weight_u`, `weight_v`; `parametrizations.weight.
# original`, `.0._u`, `.0._v`), orthogonal's (`parametrizations.weight.original`, `.0.base`): the module's, as its
# weight is (which of them are buffers: `inspector.kinds`)
WEIGHT_PARTS = r"weight_(?:g|v|orig|u)|parametrizations\.weight\.(?:original\d?|\d+\.\w+)"
WEIGHT_PART_PREFIXES = ("weight_", "parametrizations.")
WB_PARTS = r"(?P<param>weight|bias|" + WEIGHT_PARTS + ")"
LLAMA_LAYER = r"(?:model\.)?(?P<stack>(?:[LH]_module\.)?)layers\.(?P<i>\d+)"  # a decoder layer ({stack}layers.{i})
WHISPER_BLOCK = r"(?P<layer>(?:model_state_dict\.)?(?:encoder|decoder)\.blocks\.\d+)"  # openai-whisper's, its section's

ROLE_RULES: tuple[RoleRule, ...] = (
    # PEFT LoRA adapters (adapter_model.safetensors), before every other rule (a factor is one whatever it adapts):
    # a factor's layer is the module it adapts ('...q_proj'), its param the factor's name. save_pretrained drops the
    # adapter's name ('.default'); a model's state_dict keeps it, and each adapter's factors are a layer of their own
    # ('...q_proj.default', '...q_proj.other': two adapters of one module are two). DoRA's magnitude is saved without
    # '.weight'; AdaLoRA's factors and singular values (lora_E) are bare parameters ('q_proj.lora_A')
    RoleRule("peft.lora", Role.LORA, r"(?P<layer>.+)\.(?P<param>lora_[AB])\.weight", ("torch",)),
    RoleRule("peft.lora.named", Role.LORA, r"(?P<module>.+)\.(?P<param>lora_[AB])\.(?P<adapter>[^.]+)\.weight", ("torch",), "{module}.{adapter}"),
    RoleRule("peft.lora_bias", Role.LORA, r"(?P<layer>.+)\.lora_B\.bias", ("torch",), None, "lora_bias"),
    RoleRule("peft.lora_bias.named", Role.LORA, r"(?P<module>.+)\.lora_B\.(?P<adapter>[^.]+)\.bias", ("torch",), "{module}.{adapter}", "lora_bias"),
    RoleRule("peft.lora_embedding", Role.LORA, r"(?P<layer>.+)\.(?P<param>lora_embedding_[AB])", ("torch",)),
    RoleRule("peft.lora_embedding.named", Role.LORA, r"(?P<module>.+)\.(?P<param>lora_embedding_[AB])\.(?P<adapter>[^.]+)", ("torch",), "{module}.{adapter}"),
    RoleRule("peft.dora", Role.LORA, r"(?P<layer>.+)\.(?P<param>lora_magnitude_vector)(?:\.weight)?", ("torch",)),
    RoleRule("peft.dora.named", Role.LORA, r"(?P<module>.+)\.(?P<param>lora_magnitude_vector)\.(?P<adapter>[^.]+)(?:\.weight)?", ("torch",), "{module}.{adapter}"),
    RoleRule("peft.adalora", Role.LORA, r"(?P<layer>.+)\.(?P<param>lora_[ABE])", ("torch",)),
    RoleRule("peft.adalora.named", Role.LORA, r"(?P<module>.+)\.(?P<param>lora_[ABE])\.(?P<adapter>[^.]+)", ("torch",), "{module}.{adapter}"),
    # kohya-ss' and LyCORIS' adapters (sd-scripts, LyCORIS, OneTrainer, ComfyUI: the LoRAs of image models): each
    # adapted module's path with its dots written as underscores ('lora_unet_down_blocks_0_..._to_q', 'lora_te1_...'),
    # its factors lora_down (rank x inputs), lora_up (outputs x rank) and a Tucker core lora_mid, DoRA's dora_scale;
    # LyCORIS' LoHa and LoKr factors (the same names as peft's, outside a PeftModel); the scale `alpha` beside them
    # is a buffer (`inspector.kinds`)
    RoleRule("kohya.lora", Role.LORA, r"(?P<layer>.+)\.(?P<param>lora_(?:down|up|mid))\.weight", ("torch",)),
    RoleRule("kohya.dora", Role.LORA, r"(?P<layer>.+)\.(?P<param>dora_scale)", ("torch",)),
    RoleRule("lycoris.loha", Role.ADAPTER, r"(?P<layer>.+)\.(?P<param>" + LOHA_FACTORS + r")", ("torch",)),
    RoleRule("lycoris.lokr", Role.ADAPTER, r"(?P<layer>.+)\.(?P<param>" + LOKR_FACTORS + r")", ("torch",)),
    # peft's other adapter types: each tuner's factors (its `adapter_layer_names`, peft 0.21), bare parameters
    # ('q_proj.hada_w1_a') or a module's weight ('q_proj.oft_R.weight'), named as LoRA's are, in a PeftModel
    # ('base_model.model.', which every other name lacks: the matcher tries the rules on no other name)
    RoleRule("peft.factor", Role.ADAPTER, r"(?P<layer>.*base_model(?:\..+)?)\.(?P<param>" + PEFT_FACTORS + r")(?:\.weight)?", ("torch",)),
    RoleRule("peft.factor.named", Role.ADAPTER, r"(?P<module>.*base_model(?:\..+)?)\.(?P<param>" + PEFT_FACTORS + r")\.(?P<adapter>[^.]+)(?:\.weight)?", ("torch",), "{module}.{adapter}"),
    # prompt learning (prompt tuning, prefix tuning, P-tuning): the virtual tokens' embeddings, one table
    RoleRule("peft.prompt", Role.EMBEDDING, r"prompt_embeddings", ("torch",), "prompt_embeddings", "weight"),
    # the base weight of an adapted embedding or head, which peft saves beside the factors (save_embedding_layers)
    RoleRule("peft.base_embedding", Role.EMBEDDING, r"(?P<layer>.*(?:embed|emb|wte|tok)\w*\.base_layer)\.weight", ("torch",), None, "weight"),
    RoleRule("peft.base_head", Role.HEAD, r"(?P<layer>(?:.*\.)?lm_head\.base_layer)\.weight", ("torch",), None, "weight"),
    # rau (seed 004): rau.models.rnn.language_model / transformer.unidirectional_encoder module paths
    RoleRule("rau.embedding", Role.EMBEDDING, P + r"func\.(?:embedding_layer\.)?embeddings", ("torch",), "embedding", "embeddings"),
    RoleRule("rau.initial_state", Role.INITIAL_STATE, P + r"initial_hidden_state_inputs", ("torch",), "initial_state", "initial_state"),
    RoleRule("rau.rnn_input", Role.RNN_INPUT, P + r"rnn\.weight_ih_l(?P<i>\d+)", ("torch",), "rnn.l{i}", "kernel"),
    RoleRule("rau.rnn_recurrent", Role.RNN_RECURRENT, P + r"rnn\.weight_hh_l(?P<i>\d+)", ("torch",), "rnn.l{i}", "recurrent_kernel"),
    RoleRule("rau.rnn_bias", Role.RNN_BIAS, P + r"rnn\.bias_[ih]h_l(?P<i>\d+)", ("torch",), "rnn.l{i}", "bias"),
    RoleRule("rau.stack_actions", Role.STACK_ACTION, P + r"action_layer\.linear\." + WB, ("torch",), "stack.actions"),
    RoleRule("rau.stack_push", Role.STACK_PUSH, P + r"push_value_layer\.linear\." + WB, ("torch",), "stack.push_value"),
    RoleRule("rau.stack_operations", Role.STACK_ACTION, P + r"operation_layer\." + WB, ("torch",), "stack.operations"),
    RoleRule("rau.stack_pushed_vector", Role.STACK_PUSH, P + r"pushed_vector_layer\.0\." + WB, ("torch",), "stack.pushed_vector"),
    RoleRule("rau.stack_bottom", Role.STACK_PUSH, P + r"bottom_vector", ("torch",), "stack.bottom_vector", "bottom_vector"),
    RoleRule("rau.attn_qkv", Role.ATTN_QKV, P + r"layers\.layers\.(?P<i>\d+)\.self_attn\.in_proj_(?P<param>weight|bias)", ("torch",), "layers.{i}"),
    RoleRule("rau.attn_o", Role.ATTN_O, P + r"layers\.layers\.(?P<i>\d+)\.self_attn\.out_proj\." + WB, ("torch",), "layers.{i}"),
    RoleRule("rau.ffn_up", Role.FFN_UP, P + r"layers\.layers\.(?P<i>\d+)\.linear1\." + WB, ("torch",), "layers.{i}"),
    RoleRule("rau.ffn_down", Role.FFN_DOWN, P + r"layers\.layers\.(?P<i>\d+)\.linear2\." + WB, ("torch",), "layers.{i}"),
    RoleRule("rau.norm", Role.NORM, P + r"layers\.layers\.(?P<i>\d+)\.norm\d\." + WB, ("torch",), "layers.{i}"),
    RoleRule("rau.final_norm", Role.NORM, P + r"layers\.norm\." + WB, ("torch",), "norm"),
    # Hugging Face GPT-2 (transformers GPT2LMHeadModel / GPT2Model)
    RoleRule("hf.gpt2.wte", Role.EMBEDDING, r"(?:transformer\.)?wte\.weight", ("torch",), "wte", "weight"),
    RoleRule("hf.gpt2.wpe", Role.POSITION_EMBEDDING, r"(?:transformer\.)?wpe\.weight", ("torch",), "wpe", "weight"),
    RoleRule("hf.gpt2.attn_qkv", Role.ATTN_QKV, r"(?:transformer\.)?h\.(?P<i>\d+)\.attn\.c_attn\." + WB, ("torch",), "h.{i}"),
    RoleRule("hf.gpt2.attn_o", Role.ATTN_O, r"(?:transformer\.)?h\.(?P<i>\d+)\.attn\.c_proj\." + WB, ("torch",), "h.{i}"),
    RoleRule("hf.gpt2.ffn_up", Role.FFN_UP, r"(?:transformer\.)?h\.(?P<i>\d+)\.mlp\.c_fc\." + WB, ("torch",), "h.{i}"),
    RoleRule("hf.gpt2.ffn_down", Role.FFN_DOWN, r"(?:transformer\.)?h\.(?P<i>\d+)\.mlp\.c_proj\." + WB, ("torch",), "h.{i}"),
    RoleRule("hf.gpt2.norm", Role.NORM, r"(?:transformer\.)?h\.(?P<i>\d+)\.ln_\d\." + WB, ("torch",), "h.{i}"),
    RoleRule("hf.gpt2.attn_buffer", Role.BUFFER, r"(?:transformer\.)?h\.(?P<i>\d+)\.attn\.(?P<param>bias|masked_bias)", ("torch",), "h.{i}"),
    RoleRule("hf.gpt2.ln_f", Role.NORM, r"(?:transformer\.)?ln_f\." + WB, ("torch",), "ln_f"),
    RoleRule("hf.lm_head", Role.HEAD, r"lm_head\." + WB, ("torch",), "lm_head"),
    # openai-whisper's own checkpoints ({"dims", "model_state_dict"}: the files `whisper.load_model` downloads): its
    # blocks' attention (self and cross) as query/key/value/out, the MLP as a Sequential (0: up, 2: down)
    RoleRule("whisper.attn_q", Role.ATTN_Q, WHISPER_BLOCK + r"\.(?:attn|cross_attn)\.query\." + WB, ("torch",)),
    RoleRule("whisper.attn_k", Role.ATTN_K, WHISPER_BLOCK + r"\.(?:attn|cross_attn)\.key\." + WB, ("torch",)),
    RoleRule("whisper.attn_v", Role.ATTN_V, WHISPER_BLOCK + r"\.(?:attn|cross_attn)\.value\." + WB, ("torch",)),
    RoleRule("whisper.attn_o", Role.ATTN_O, WHISPER_BLOCK + r"\.(?:attn|cross_attn)\.out\." + WB, ("torch",)),
    RoleRule("whisper.ffn_up", Role.FFN_UP, WHISPER_BLOCK + r"\.mlp\.0\." + WB, ("torch",)),
    RoleRule("whisper.ffn_down", Role.FFN_DOWN, WHISPER_BLOCK + r"\.mlp\.2\." + WB, ("torch",)),
    # Hugging Face BERT (transformers BertModel / BertFor*)
    RoleRule("hf.bert.word", Role.EMBEDDING, r"(?:bert\.)?embeddings\.word_embeddings\.weight", ("torch",), "embeddings.word_embeddings", "weight"),
    RoleRule("hf.bert.position", Role.POSITION_EMBEDDING, r"(?:bert\.)?embeddings\.(?:position|token_type)_embeddings\.weight", ("torch",), None, "weight"),
    RoleRule("hf.bert.position_ids", Role.BUFFER, r"(?:bert\.)?embeddings\.(?:position_ids|token_type_ids)", ("torch",), "embeddings", "ids"),
    RoleRule("hf.bert.embed_norm", Role.NORM, r"(?:bert\.)?embeddings\.LayerNorm\." + WB, ("torch",), "embeddings.LayerNorm"),
    RoleRule("hf.bert.attn_q", Role.ATTN_Q, r"(?:bert\.)?encoder\.layer\.(?P<i>\d+)\.attention\.self\.query\." + WB, ("torch",), "encoder.layer.{i}"),
    RoleRule("hf.bert.attn_k", Role.ATTN_K, r"(?:bert\.)?encoder\.layer\.(?P<i>\d+)\.attention\.self\.key\." + WB, ("torch",), "encoder.layer.{i}"),
    RoleRule("hf.bert.attn_v", Role.ATTN_V, r"(?:bert\.)?encoder\.layer\.(?P<i>\d+)\.attention\.self\.value\." + WB, ("torch",), "encoder.layer.{i}"),
    RoleRule("hf.bert.attn_o", Role.ATTN_O, r"(?:bert\.)?encoder\.layer\.(?P<i>\d+)\.attention\.output\.dense\." + WB, ("torch",), "encoder.layer.{i}"),
    RoleRule("hf.bert.norm", Role.NORM, r"(?:bert\.)?encoder\.layer\.(?P<i>\d+)\.(?:attention\.)?output\.LayerNorm\." + WB, ("torch",), "encoder.layer.{i}"),
    RoleRule("hf.bert.ffn_up", Role.FFN_UP, r"(?:bert\.)?encoder\.layer\.(?P<i>\d+)\.intermediate\.dense\." + WB, ("torch",), "encoder.layer.{i}"),
    RoleRule("hf.bert.ffn_down", Role.FFN_DOWN, r"(?:bert\.)?encoder\.layer\.(?P<i>\d+)\.output\.dense\." + WB, ("torch",), "encoder.layer.{i}"),
    RoleRule("hf.bert.pooler", Role.DENSE, r"(?:bert\.)?pooler\.dense\." + WB, ("torch",), "pooler.dense"),
    # Hugging Face llama-style decoders (HRM's two stacks of them: `model.L_module.layers.N`, `model.H_module.layers.N`,
    # its checkpoints' attention `attn`; the fused projections of Phi-3, HRM and GLM: `qkv_proj`, HRM's `gqkv_proj` with
    # its output gate, `gate_up_proj`)
    RoleRule("hf.llama.embed", Role.EMBEDDING, r"(?:model\.)?embed_tokens\.weight", ("torch",), "embed_tokens", "weight"),
    RoleRule("hf.llama.attn", Role.ATTN_Q, LLAMA_LAYER + r"\.self_attn\.q_proj\." + WB, ("torch",), "{stack}layers.{i}"),
    RoleRule("hf.llama.attn_k", Role.ATTN_K, LLAMA_LAYER + r"\.self_attn\.k_proj\." + WB, ("torch",), "{stack}layers.{i}"),
    RoleRule("hf.llama.attn_v", Role.ATTN_V, LLAMA_LAYER + r"\.self_attn\.v_proj\." + WB, ("torch",), "{stack}layers.{i}"),
    RoleRule("hf.llama.attn_o", Role.ATTN_O, LLAMA_LAYER + r"\.(?:self_)?attn\.o_proj\." + WB, ("torch",), "{stack}layers.{i}"),
    RoleRule("hf.llama.attn_qkv", Role.ATTN_QKV, LLAMA_LAYER + r"\.(?:self_)?attn\.g?qkv_proj\." + WB, ("torch",), "{stack}layers.{i}"),
    RoleRule("hf.llama.gate", Role.FFN_GATE, LLAMA_LAYER + r"\.mlp\.gate_proj\." + WB, ("torch",), "{stack}layers.{i}"),
    RoleRule("hf.llama.up", Role.FFN_UP, LLAMA_LAYER + r"\.mlp\.up_proj\." + WB, ("torch",), "{stack}layers.{i}"),
    RoleRule("hf.llama.gate_up", Role.FFN_UP, LLAMA_LAYER + r"\.mlp\.gate_up_proj\." + WB, ("torch",), "{stack}layers.{i}"),
    RoleRule("hf.llama.down", Role.FFN_DOWN, LLAMA_LAYER + r"\.mlp\.down_proj\." + WB, ("torch",), "{stack}layers.{i}"),
    RoleRule("hf.llama.norm", Role.NORM, r"(?:model\.)?(?:layers\.(?P<i>\d+)\.)?\w*norm\.weight", ("torch",), None, "weight"),
    # Sockeye 1.x (MXNet; seed 002), with or without the arg: prefix of exported checkpoints
    RoleRule("sockeye.embed", Role.EMBEDDING, r"(?:arg:)?(?P<layer>(?:source|target)_embed)_weight", ("mxnet",), None, "weight"),
    RoleRule("sockeye.output", Role.HEAD, r"(?:arg:)?(?P<layer>target_output)_(?P<param>weight|bias)", ("mxnet",)),
    RoleRule("sockeye.i2h", Role.RNN_INPUT, r"(?:arg:)?(?P<layer>.+_l\d+)_i2h_weight", ("mxnet",), None, "kernel"),
    RoleRule("sockeye.h2h", Role.RNN_RECURRENT, r"(?:arg:)?(?P<layer>.+_l\d+)_h2h_weight", ("mxnet",), None, "recurrent_kernel"),
    RoleRule("sockeye.rnn_bias", Role.RNN_BIAS, r"(?:arg:)?(?P<layer>.+_l\d+)_[ih]2h_bias", ("mxnet",), None, "bias"),
    RoleRule("sockeye.enc2decinit", Role.DENSE, r"(?:arg:)?(?P<layer>decoder_rnn_enc2decinit_\d+)_(?P<param>weight|bias)", ("mxnet",)),
    RoleRule("sockeye.hidden", Role.DENSE, r"(?:arg:)?(?P<layer>decoder_rnn_hidden)_(?P<param>weight|bias)", ("mxnet",)),
    # MXNet Gluon / Module names: dense0_weight, conv0_bias, batchnorm0_moving_mean (arg:/aux: prefixes)
    RoleRule("mxnet.stat", Role.NORM_STAT, r"(?:aux:)?(?P<layer>.*?)[._](?P<param>" + MXNET_STATS + ")", ("mxnet",)),
    # gamma and beta are a norm's in Gluon (BatchNorm, LayerNorm, InstanceNorm, GroupNorm), whatever the block's name
    RoleRule("mxnet.norm", Role.NORM, r"(?:arg:)?(?P<layer>.+?)[._](?P<param>gamma|beta)", ("mxnet",)),
    RoleRule("mxnet.embed", Role.EMBEDDING, r"(?:arg:)?(?P<layer>.*emb(?:ed)?\w*?\d*)[._](?P<param>weight)", ("mxnet",)),
    RoleRule("mxnet.conv", Role.CONV, r"(?:arg:)?(?P<layer>.*conv\w*?\d*)[._](?P<param>weight|bias)", ("mxnet",)),
    RoleRule("mxnet.dense", Role.DENSE, r"(?:arg:)?(?P<layer>.*(?:dense|fc|fullyconnected|linear)\d*)[._](?P<param>weight|bias)", ("mxnet",)),
    RoleRule("mxnet.head", Role.HEAD, r"(?:arg:)?(?P<layer>(?:.*[._])?(?:out|output|decoder|head|classifier))[._](?P<param>weight|bias)", ("mxnet",)),
    RoleRule("mxnet.bias", Role.DENSE, r"(?:arg:)?(?P<layer>.+?)[._](?P<param>weight|bias)", ("mxnet",)),  # Gluon dotted names, any block
    # Keras 2 h5 ('model_weights/dense_1/dense_1/kernel:0', 'dense_1/kernel:0') and Keras 3 variable paths
    RoleRule("keras.cell_kernel", Role.RNN_INPUT, r"(?:.*/)?(?P<layer>[^/]+)/(?:[^/]+/)*\w*cell/(?P<param>kernel)(?::0)?", ("keras",)),
    RoleRule("keras.cell_bias", Role.RNN_BIAS, r"(?:.*/)?(?P<layer>[^/]+)/(?:[^/]+/)*\w*cell/(?P<param>bias)(?::0)?", ("keras",)),
    RoleRule("keras.embeddings", Role.EMBEDDING, r"(?:.*/)?(?P<layer>[^/]+)/(?:[^/]+/)*(?P<param>embeddings)(?::0)?", ("keras",)),
    RoleRule("keras.recurrent", Role.RNN_RECURRENT, r"(?:.*/)?(?P<layer>[^/]+)/(?:[^/]+/)*(?P<param>recurrent_kernel)(?::0)?", ("keras",)),
    RoleRule("keras.norm", Role.NORM, r"(?:.*/)?(?P<layer>[^/]+)/(?:[^/]+/)*(?P<param>gamma|beta)(?::0)?", ("keras",)),
    RoleRule("keras.stat", Role.NORM_STAT, r"(?:.*/)?(?P<layer>[^/]+)/(?:[^/]+/)*(?P<param>" + KERAS_STATS + ")(?::0)?", ("keras",)),
    RoleRule("keras.var", Role.DENSE, r"(?:.*/)?(?P<layer>[^/]+)/(?:[^/]+/)*(?P<param>kernel|bias)(?::0)?", ("keras",)),
    # timm (BEiT, EVA, ...): a qkv projection without bias, and separate q and v (k) biases beside it
    RoleRule("timm.attn_bias", Role.ATTN_QKV, r"(?P<layer>.+\.attn)\.(?P<param>[qkv]_bias)", ("torch",)),
    # timm vision transformers: learned tokens (also diffusers' AuraFlow register tokens), position embeddings and
    # LayerScale factors beside the modules
    RoleRule("timm.token", Role.LEARNED_TENSOR, r"(?:(?P<layer>.+)\.)?(?P<param>(?:cls|dist|reg|mask)_token|register_tokens)", ("torch",)),
    RoleRule("timm.pos_embed", Role.POSITION_EMBEDDING, r"(?:(?P<layer>.+)\.)?(?P<param>(?:absolute_)?pos_embed|positional_embedding)", ("torch",)),
    RoleRule("timm.layer_scale", Role.LEARNED_TENSOR, r"(?P<layer>.+)\.(?P<param>gamma(?:_\d)?)", ("torch",)),
    # diffusers DiT-style transformers (PixArt, Sana...): the adaLN-single modulation table, learned
    RoleRule("diffusers.scale_shift", Role.LEARNED_TENSOR, r"(?:(?P<layer>.+)\.)?(?P<param>scale_shift_table)", ("torch",)),
    # state-space mixers (Mamba, Mamba2, Jamba, FalconMamba...): the state matrix (as its log) and the skip, learned
    # (Jamba and Zamba name their mixer `mamba`, Qwen3-Next and Qwen3.5 their Gated DeltaNet `linear_attn`; Mamba2's
    # mixers, Bamba's and the other hybrids' add a per-head time-step bias)
    RoleRule("ssm.params", Role.LEARNED_TENSOR, r"(?P<layer>.+\.(?:mixer|mamba|linear_attn))\.(?P<param>A_log|D|dt_bias)", ("torch",)),
    # (the decay and time-step bias of a linear attention under any name: diffusers' SanaWM `blocks.0.attn.A_log`)
    RoleRule("ssm.decay", Role.LEARNED_TENSOR, r"(?P<layer>.+)\.(?P<param>A_log|dt_bias)", ("torch",)),
    # a quantized weight's scales and zero points beside it (compressed-tensors' FP8 and INT8, transformers'
    # fine-grained FP8 of DeepSeek-V3 and Qwen3: `inspector.quantized`)
    RoleRule("quant.scale", Role.QUANT_SCALE, r"(?P<layer>.+)\.(?P<param>" + SIDE_TENSOR_NAMES + ")", ("torch",)),
    # a linear layer's packed weight (GPTQ's and AWQ's `qweight`, compressed-tensors' `weight_packed`)
    RoleRule("quant.packed", Role.DENSE, r"(?P<layer>.+)\.(?P<param>qweight|weight_packed)", ("torch",)),
    # bitsandbytes' state of its 8-bit and 4-bit weights, buffers (`inspector.quantized`): the layer is the module
    RoleRule("bnb.state", Role.QUANT_STATE, r"(?P<layer>.+)\.(?P<param>" + BNB_STATE_NAMES + ")", ("torch",)),
    # optimum-quanto's state of its quantized weights and their activations', buffers (`inspector.quantized`; its
    # `input_scale` is named as compressed-tensors' is, above): the layer is the module
    RoleRule("quanto.state", Role.QUANT_STATE, r"(?P<layer>.+)\.(?P<param>weight\._(?:scale|shift)|output_scale)", ("torch",)),
    # a mixture of experts' projections stacked one tensor per projection (experts, out, in): transformers 5's fused
    # experts ('mlp.experts.gate_up_proj'), llama.cpp's stacked ones named as HF's ('mlp.experts.gate_proj.weight')
    RoleRule("moe.experts_gate", Role.FFN_GATE, r"(?P<layer>.+\.experts)\.(?P<param>gate_proj)(?:\.weight)?", ("torch",)),
    # (gpt-oss's: a bias per expert beside each, and in OpenAI's MXFP4 release the projections as blocks of packed values
    # with a scale a block, `inspector.quantized.BLOCK_PACKINGS`)
    RoleRule("moe.experts_up", Role.FFN_UP, r"(?P<layer>.+\.experts)\.(?P<param>(?:gate_up_proj|up_proj)(?:_bias|_blocks)?)(?:\.weight)?", ("torch",)),
    RoleRule("moe.experts_down", Role.FFN_DOWN, r"(?P<layer>.+\.experts)\.(?P<param>down_proj(?:_bias|_blocks)?)(?:\.weight)?", ("torch",)),
    RoleRule("moe.experts_scales", Role.QUANT_STATE, r"(?P<layer>.+\.experts)\.(?P<param>(?:gate_up_proj|down_proj)_scales)", ("torch",)),
    # gpt-oss's attention sinks: a learned logit per head
    RoleRule("attn.sinks", Role.LEARNED_TENSOR, r"(?P<layer>.+\.self_attn)\.(?P<param>sinks)", ("torch",)),
    # the router's score correction where it is a parameter (requires_grad off), under the names the checkpoints give it:
    # Laguna's (`mlp.experts.`: transformers renames it `mlp.gate.` in memory) and ERNIE-MoE's (`mlp.moe_statics.`);
    # the other models' are buffers (`mlp.gate.e_score_correction_bias`: the role of their kind)
    RoleRule("moe.score_correction", Role.MOE_ROUTER, r"(?P<layer>.+\.(?:experts|moe_statics))\.(?P<param>e_score_correction_bias)", ("torch",)),
    # HRM's learned initial latent state of its low-level module (HrmTextModel's `z_L_init`)
    RoleRule("hrm.initial_state", Role.INITIAL_STATE, r"(?P<layer>.+)\.(?P<param>z_[LH]_init)", ("torch",)),
    # Generic PyTorch module paths
    RoleRule("torch.stat", Role.NORM_STAT, r"(?P<layer>.+)\.(?P<param>" + TORCH_STATS + ")", ("torch",)),
    RoleRule("torch.rnn_input", Role.RNN_INPUT, r"(?P<layer>.+)\.weight_ih_l(?P<i>\d+)(?P<rev>(?:_reverse)?)", ("torch",), "{layer}.l{i}{rev}", "kernel"),
    RoleRule("torch.rnn_recurrent", Role.RNN_RECURRENT, r"(?P<layer>.+)\.weight_hh_l(?P<i>\d+)(?P<rev>(?:_reverse)?)", ("torch",), "{layer}.l{i}{rev}", "recurrent_kernel"),
    RoleRule("torch.rnn_bias", Role.RNN_BIAS, r"(?P<layer>.+)\.bias_[ih]h_l(?P<i>\d+)(?P<rev>(?:_reverse)?)", ("torch",), "{layer}.l{i}{rev}", "bias"),
    # nn.LSTMCell / GRUCell / RNNCell: the same weights without a layer suffix
    RoleRule("torch.cell_input", Role.RNN_INPUT, r"(?P<layer>.+)\.weight_ih", ("torch",), None, "kernel"),
    RoleRule("torch.cell_recurrent", Role.RNN_RECURRENT, r"(?P<layer>.+)\.weight_hh", ("torch",), None, "recurrent_kernel"),
    RoleRule("torch.cell_bias", Role.RNN_BIAS, r"(?P<layer>.+)\.bias_[ih]h", ("torch",), None, "bias"),
    # arrays a package saves with numpy under names of its own, no module path (g2p_en's checkpoint20.npz: a GRU
    # encoder and decoder as torch names their weights, `enc_w_ih`, `enc_b_hh`, beside their embeddings `enc_emb`
    # and the output layer `fc_w`, `fc_b`)
    RoleRule("numpy.rnn_input", Role.RNN_INPUT, r"(?P<layer>[^./]+)_w_ih", ("torch",), None, "kernel"),
    RoleRule("numpy.rnn_recurrent", Role.RNN_RECURRENT, r"(?P<layer>[^./]+)_w_hh", ("torch",), None, "recurrent_kernel"),
    RoleRule("numpy.rnn_bias", Role.RNN_BIAS, r"(?P<layer>[^./]+)_b_[ih]h", ("torch",), None, "bias"),
    RoleRule("numpy.embedding", Role.EMBEDDING, r"(?P<layer>[^./]+_emb)", ("torch",), None, "weight"),
    RoleRule("numpy.weight", Role.DENSE, r"(?P<layer>[^./]+)_w", ("torch",), None, "weight"),
    RoleRule("numpy.bias", Role.DENSE, r"(?P<layer>[^./]+)_b", ("torch",), None, "bias"),
    # PaddlePaddle's parameter names, which paddle2onnx keeps (PP-OCR's models): a norm's scale `w_0` and shift `b_0`,
    # in its graphs the Mul and Add of a decomposed LayerNorm (a batch norm's statistics `w_1`, `w_2`: by their use)
    RoleRule("paddle.norm", Role.NORM, r"(?P<layer>(?:.*\.)?(?:layer|batch|group|instance)_norm_\d+)\.(?P<param>[wb]_0)", ("torch",)),
    # an unembedding is the output head (Inkling 2's `unembed`), a norm of the embeddings a norm (`embed_norm`, BLOOM's
    # `word_embeddings_layernorm`): the embedding rule below would take both by their `embed`
    RoleRule("torch.unembed", Role.HEAD, r"(?P<layer>(?:.*\.)?unembed\w*)\." + WB, ("torch",)),
    RoleRule("torch.embed_norm", Role.NORM, r"(?P<layer>.*(?:embed|emb)\w*?(?i:norm|_ln)\w*)\." + WB, ("torch",)),
    RoleRule("torch.embedding", Role.EMBEDDING, r"(?P<layer>.*(?:embed|emb|embedding|embeddings|encoder|tok)\w*)\.weight", ("torch",), None, "weight"),
    RoleRule("torch.norm", Role.NORM, r"(?P<layer>.*(?i:norm|bn|ln)\w*)\." + WB, ("torch",)),
    # (a weight's reparametrized parts, `WEIGHT_PARTS`, are its module's, as the weight would be)
    RoleRule("torch.head", Role.HEAD, r"(?P<layer>(?:.*\.)?(?:decoder|head|classifier|output|out|fc_out|lm_head))\." + WB_PARTS, ("torch",)),
    RoleRule("torch.conv", Role.CONV, r"(?P<layer>.*conv\w*)\." + WB_PARTS, ("torch",)),
    RoleRule("torch.dense", Role.DENSE, r"(?P<layer>.+)\." + WB_PARTS, ("torch",)),
)


@record(frozen=True)
class Matcher:
    """Compiled rules; `match(name)` returns the first rule that matches and its groups.

    Which rule wins depends only on the name's shape, not on its numbers: `layers.3.mlp` and `layers.17.mlp` go
    to the same rule. The first full scan of a shape is remembered under `shape_key(name)` (the name with every
    digit no pattern spells out mapped to one digit) with the spans of its groups: a later name of that shape takes
    the remembered rule and its groups at those spans (a regular expression meets each of those digits as it meets
    any other, so it matches such a name as it matched the first, at the same places: 100,000 tensors, no regex
    each instead of up to 75). A pattern is compiled when a name is first tried against it (compiling all 75 costs
    about 8 ms of every run's start-up), and a rule whose needles (`inspector.needles`: the literals every match
    contains) are not all in the name is not tried at all.
    """

    rules: tuple[Patterned, ...]  # RoleRule, KindRule: rules with a `pattern`
    regexes: list[re.Pattern[str] | None] = field(default_factory=list, compare=False)  # compiled on first use
    digits: bytes = b""  # bytes.translate table of shape_key (empty: no memo)
    # shape -> (rule, its groups' (name, start, end)), (None, ()) for no rule
    memo: dict[bytes, tuple[Any, tuple[tuple[str, int, int], ...]]] = field(default_factory=dict, compare=False)
    needles: list[Split | None] = field(default_factory=list, compare=False)  # each pattern's, on first use
    # a literal of each rule that spells a digit (one every match of it holds), or None: a name holding none of them
    # meets no such rule, and its digits are all interchangeable (its shape in `memo` under FREE + the name with
    # every digit one: `layer_000` ... `layer_127`, 28 shapes under `digits`, are one)
    triggers: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        digits = spelled(map(attrgetter("pattern"), self.rules))  # (written with the needles: no regex)
        object.__setattr__(self, "digits", _digit_table(digits))
        object.__setattr__(self, "triggers", _triggers(self.rules, digits) if self.digits else None)
        self.regexes.extend([None] * (len(self.rules) - len(self.regexes)))
        self.needles.extend([None] * (len(self.rules) - len(self.needles)))

    def regex(self, index: int) -> re.Pattern[str]:
        compiled = self.regexes[index]
        if compiled is None:
            compiled = self.regexes[index] = regexes.compile(self.rules[index].pattern)
        return compiled

    @property
    def compiled(self) -> tuple[re.Pattern[str], ...]:
        """Every rule's pattern, compiled."""
        return tuple(self.regex(i) for i in range(len(self.rules)))

    def shape_key(self, name: str) -> bytes:
        # (UTF-8 bytes: an ASCII digit's byte is never part of another character's; a byte table is a C lookup, a
        # str table a dict lookup per character)
        return name.encode("utf-8", "surrogatepass").translate(self.digits)

    def match(self, name: str) -> tuple[Any, dict[str, str]] | None:
        raw = name.encode("utf-8", "surrogatepass")
        key = raw.translate(self.digits) if self.digits else None  # shape_key
        known = self.memo.get(key) if key is not None else None
        free = None
        if known is None and key is not None and self.triggers is not None:  # (a shape not seen: once a shape)
            if not any(map(name.__contains__, self.triggers)):
                free = FREE + raw.translate(ALL_DIGITS)
                known = self.memo.get(free)
                if known is not None and len(self.memo) < MEMO_LIMIT:
                    self.memo[key] = known
        if known is not None:
            rule, spans = known
            if rule is None or not spans:  # (no rule, or one without groups: no comprehension)
                return None if rule is None else (rule, {})
            return rule, {group: name[start:end] for group, start, end in spans}
        found = self._scan(name)
        if key is not None and len(self.memo) < MEMO_LIMIT - 1:
            remembered = NO_RULE if found is None else (found[0], found[2])
            self.memo[key] = remembered
            if free is not None:
                self.memo[free] = remembered
        return None if found is None else found[:2]

    def _scan(self, name: str) -> tuple[Any, dict[str, str], tuple[tuple[str, int, int], ...]] | None:
        """The first rule that matches `name`, its groups and their spans (every rule tried, needles first)."""
        needles = self.needles
        contains = name.__contains__
        for index in range(len(self.rules)):
            found = needles[index]
            if found is None:
                found = needles[index] = split(self.rules[index].pattern)
            literals, clauses = found
            if not all(map(contains, literals)) or (clauses and not all(any(map(contains, c)) for c in clauses)):
                continue
            m = (self.regexes[index] or self.regex(index)).fullmatch(name)
            if m:
                groups = {k: v for k, v in m.groupdict().items() if v is not None}
                return self.rules[index], groups, tuple((k, *m.span(k)) for k in groups)
        return None


MEMO_LIMIT = 1 << 20  # shapes remembered per matcher (a bound on memory for hostile name sets)
FREE = b"\xff"  # the prefix of a shape whose digits are all one (no UTF-8 text holds the byte)
ALL_DIGITS = bytes.maketrans(b"0123456789", b"0000000000")
NO_RULE: tuple[None, tuple[()]] = (None, ())


def _digit_table(spelled: Sequence[str | None]) -> bytes:
    """The `bytes.translate` table of `Matcher.shape_key` for patterns that spell these digits (`needles.spelled`;
    empty: no memo).

    A digit written in a pattern (':0', a '{2}' count, conservatively) keeps its value in the key; every other digit
    is interchangeable for every pattern (they only meet \\d, \\w, '.' and negated sets). A digit in a set, or a
    backreference (which compares the digits' values), leaves the table empty."""
    if None in spelled:
        return b""
    text = "".join(spelled)  # type: ignore[arg-type]
    free = [d for d in DIGITS if d not in text]
    return bytes.maketrans("".join(free).encode(), free[0].encode() * len(free)) if free else b""


def _triggers(rules: Sequence[Any], spelled: Sequence[str | None]) -> tuple[str, ...] | None:
    """The longest literal of each rule whose pattern spells a digit (`Matcher.triggers`), or None when such a rule
    has no literal every match holds."""
    out = []
    for rule, digits in zip(rules, spelled, strict=True):
        if not digits:
            continue
        literals = split(rule.pattern)[0]
        if not literals:
            return None
        out.append(max(literals, key=len))
    return tuple(dict.fromkeys(out))


def compile_rules(rules: Sequence[Any]) -> Matcher:
    return Matcher(tuple(rules))


MATCHER = compile_rules(ROLE_RULES)
FAMILY = {"pytorch": "torch", "keras": "keras", "mxnet": "mxnet"}
# Frameworks whose tensors may carry their source model's module and parameter names (`layer`, `param`), by the
# framework of those names: a GGUF tensor's are the Hugging Face names `loaders.gguf.hf_name` maps it to, a PyTorch
# state dict's (safetensors, torch.save) the module's weight a quantization stores under names of its own (optimum-
# quanto's `weight._data`: `inspector.quantized`). Its role is read off those names with that framework's rules, its
# layer the source module (as the same model's safetensors file reads), and off its own name only where it has none or
# no rule reads it. (A safetensors file of no framework's: the rules of files that do not say, PyTorch's first)
SOURCE_NAMED = {"llama.cpp": "torch", "onnx": "torch", "pytorch": "torch", "safetensors": ""}


ROLE_TEXT = {role: role.value for role in Role}  # (a dict lookup: no enum descriptor per tensor)


def _by_rule(t: TensorInfo, matcher: Matcher, name: str | None = None) -> RoleMatch | None:
    """The role the first matching rule gives `t`, read off `name` (its source name) or else its own."""
    name = name or t.name
    found = matcher.match(name)
    if found is None:
        return None
    rule, groups = found
    layer = rule.layer.format(**groups) if rule.layer else groups.get("layer") or name.rpartition(".")[0] or name
    param = rule.param
    if param is None and (param := groups.get("param")) is not None:
        param = intern(param)  # one string per parameter name ('weight'), not one per tensor
    return RoleMatch(t.name, layer, ROLE_TEXT[rule.role], param, rule.rule_id)


# Keras variables carry their layer and meaning from the loader (t.layer, t.param): role by meaning.
KERAS_PARAM_ROLES = {
    "embeddings": Role.EMBEDDING,
    # Keras 2's names for a depthwise and a separable convolution's kernels (Keras 3 calls the first `kernel`)
    "depthwise_kernel": Role.CONV,
    "pointwise_kernel": Role.CONV,
    "recurrent_kernel": Role.RNN_RECURRENT,
    "gamma": Role.NORM,
    "beta": Role.NORM,
    "scale": Role.NORM,  # RMSNormalization's (Keras 3, keras-hub)
    "reverse_embeddings": Role.HEAD,  # keras-hub's ReversibleEmbedding untied: the output head
    # keras-hub's DINOv2 and ViT: their learned tokens, position table and LayerScale factors
    "cls_token": Role.LEARNED_TENSOR,
    "class_token": Role.LEARNED_TENSOR,
    "mask_token": Role.LEARNED_TENSOR,
    "register_tokens": Role.LEARNED_TENSOR,
    "position_embeddings": Role.POSITION_EMBEDDING,
    "interpolated_position_embeddings": Role.POSITION_EMBEDDING,  # (DINOv2's trained copy, resized to its images)
    "lambda1": Role.LEARNED_TENSOR,
    "alpha": Role.LEARNED_TENSOR,  # PReLU's slopes
    # a layer's LoRA (`enable_lora`): Dense's and EinsumDense's kernel factors, Embedding's table factors
    **dict.fromkeys(("lora_kernel_a", "lora_kernel_b", "lora_embeddings_a", "lora_embeddings_b"), Role.LORA),
    "moving_mean": Role.NORM_STAT,
    "moving_variance": Role.NORM_STAT,
    # a Normalization layer's adapted statistics (and its sample count, as torch's num_batches_tracked)
    "mean": Role.NORM_STAT,
    "variance": Role.NORM_STAT,
    "count": Role.NORM_STAT,
    # keras-hub's layers' own variables (`loaders.keras_h5.KERAS3_VARS`): tokens, heads' logit scales, attention biases
    # and sinks, position tables, stacked experts, a linear attention's convolution and decay
    **dict.fromkeys(
        (
            *("distillation_token", "class_embedding", "variable", "mask_emb", "logit_scale", "logit_bias", "sinks"),
            *("content_attention_bias", "positional_attention_bias", "segment_attention_bias", "segment_encoding"),
            *("layer_scalar", "dt_bias", "A_log"),
        ),
        Role.LEARNED_TENSOR,
    ),
    **dict.fromkeys(
        (*("position_embedding", "pos_embed", "rel_embedding"), "relative_position_bias_table", "rel_pos_h", "rel_pos_w"),
        Role.POSITION_EMBEDDING,
    ),
    "conv1d_kernel": Role.CONV,
    # (Mixtral's gate; Qwen MoE's holds the gate and up projections stacked)
    "expert_feedforward_gate_dense": Role.FFN_GATE,
    "expert_feedforward_intermediate_dense": Role.FFN_UP,
    "expert_feedforward_output_dense": Role.FFN_DOWN,
    **dict.fromkeys(("gate_up_proj", "gate_up_proj_bias"), Role.FFN_UP),
    **dict.fromkeys(("down_proj", "down_proj_bias"), Role.FFN_DOWN),
    # variables keras-hub layers keep as buffers (trainable=False, `keras_h5.FROZEN_VARS`): rotary frequencies,
    # position ids, SAM's random Fourier features
    **dict.fromkeys(("inv_freq", "position_ids", "positional_encoding_gaussian_matrix"), Role.BUFFER),
    # flax.linen's own names (`loaders.flax_msgpack` states layer and param as Keras's loaders do): Embed's table,
    # BatchNorm's variance in its batch_stats (its `mean` is above, its `scale` too)
    "embedding": Role.EMBEDDING,
    "var": Role.NORM_STAT,
}


# A Keras layer's variables' role by the layer's own name (the last part of its path): Keras's MultiHeadAttention names
# its projections so (EinsumDense layers: a (d, heads, head_dim) kernel, no conv), whatever holds it (keras-hub's
# blocks' attention too). Names, not patterns: read in every run, they cost no compile (issue 16)
KERAS_LAYER_ROLES = {
    "query": Role.ATTN_Q, "key": Role.ATTN_K, "value": Role.ATTN_V, "attention_output": Role.ATTN_O,
    # (tf-keras's .weights.h5 names no layer: its projections are the attributes that hold them)
    "_query_dense": Role.ATTN_Q, "_key_dense": Role.ATTN_K, "_value_dense": Role.ATTN_V, "_output_dense": Role.ATTN_O,
}  # fmt: skip
# ... and by the end of it, after a word (keras-hub's `position_embedding`, `encoder_position_embedding`)
# and `norm`: Flax's RMSNorms in transformers' Llama, Mistral, Gemma (`input_layernorm`, `norm`) hold a `weight`)
KERAS_LAYER_END_ROLES = (("position_embedding", Role.POSITION_EMBEDDING), ("norm", Role.NORM))
# ... and of every variable of a layer of that name no table above reads: RWKV's time and channel mixing vectors and
# low-rank decay, gate and value factors (x_r, w0, a1, g2, k_k..., keras-hub's `RWKV_TIME_MIX`, `RWKV_CMIX`)
KERAS_LAYER_VARIABLE_ROLES = {"RWKV_TIME_MIX": Role.LEARNED_TENSOR, "RWKV_CMIX": Role.LEARNED_TENSOR}
KERAS_NAMED_PARAMS = frozenset({"kernel", "bias", "embeddings", "weight"})  # the variables whose layer's name says more


def _keras_layer_role(layer: str) -> Role | None:
    """The role `KERAS_LAYER_ROLES` or `KERAS_LAYER_END_ROLES` gives a layer's kernel, bias or embeddings, or None."""
    own = layer.rpartition("/")[2]
    role = KERAS_LAYER_ROLES.get(own)
    if role is None:
        for end, by_end in KERAS_LAYER_END_ROLES:
            word = own[: -len(end)]  # (what `\w*` before the end would match: letters, digits, underscores)
            if own.endswith(end) and (not word or word.replace("_", "a").isalnum()):
                return by_end
    return role


# Keras's attention layers that hold a learned `scale` (Attention's scalar, AdditiveAttention's per feature) and
# Attention's `concat_score_weight`: learned tensors, where the `scale` of a norm is the norm's
KERAS_ATTENTION_CLASSES = frozenset({"Attention", "AdditiveAttention"})
KERAS_ATTENTION_AUTO = frozenset({"attention", "additive_attention"})  # (their Keras 3 auto names, `attention_1`)


def keras_attention_layers(ckpt: Checkpoint) -> set[str]:
    """The layers of a Keras file that are attention layers of `KERAS_ATTENTION_CLASSES`: by the model config's class,
    else (a Keras 3 .weights.h5) by the path Keras 3 writes their variables under (`layers/attention_1/vars/0`)."""
    if ckpt.framework != "keras":
        return set()
    layers = (ckpt.config or {}).get("layers") or ()
    if layers:
        return {str(layer.get("name")) for layer in layers if layer.get("class_name") in KERAS_ATTENTION_CLASSES}
    return {t.layer or "" for t in ckpt.tensors if t.param == "scale" and _keras3_auto(t.name) in KERAS_ATTENTION_AUTO}


def _keras3_auto(name: str) -> str:
    """The class a Keras 3 .weights.h5 variable's path names (`layers/attention_1/vars/0`: `attention`), or ''."""
    parts = name.split("/")
    if len(parts) != 4 or parts[0] != "layers" or parts[2] != "vars":
        return ""
    base, _, number = parts[1].rpartition("_")
    return base if number.isdigit() else parts[1]


def _keras(
    t: TensorInfo, recurrent_layers: set[str], normed_layers: set[str], attention_layers: set[str]
) -> RoleMatch | None:
    if t.layer is None or t.param is None:
        return None
    param = t.param.removesuffix(":0")
    if t.layer in attention_layers and param in ("scale", "concat_score_weight"):
        return RoleMatch(t.name, t.layer, Role.LEARNED_TENSOR.value, param, f"keras.{param}")
    role = _keras_layer_role(t.layer) if param in KERAS_NAMED_PARAMS else None
    role = role or KERAS_PARAM_ROLES.get(param) or KERAS_LAYER_VARIABLE_ROLES.get(t.layer.rpartition("/")[2])
    if role is None and param in ("kernel", "bias"):
        if t.layer in recurrent_layers:
            role = Role.RNN_INPUT if param == "kernel" else Role.RNN_BIAS
        elif t.layer in normed_layers:
            role = Role.NORM
        else:
            role = Role.CONV if len(t.shape) >= 3 or (param == "bias" and _is_conv_bias(t)) else Role.DENSE
    if role is None:
        return None
    return RoleMatch(t.name, t.layer, role.value, param, f"keras.{param}")


def _is_conv_bias(t: TensorInfo) -> bool:
    return "conv" in (t.layer or "").lower()


# ONNX: what a weight is to the node it feeds (`TensorInfo.use`: operator, input name) -> its role and its parameter
# name as PyTorch would call it, for tensors whose names say nothing (the TorchScript exporter's `onnx::LSTM_129`,
# tf2onnx's `const_fold_opt__738`); a name a rule reads wins. Other weight inputs (PRelu's slope, an Add's or Mul's
# operand, a GatherND table) are learned tensors under their input's name.
_W, _B = "weight", "bias"
ONNX_INPUT_ROLES: dict[tuple[str, str], tuple[Role, str]] = {
    ("Conv", "W"): (Role.CONV, _W), ("Conv", "B"): (Role.CONV, _B),
    ("ConvTranspose", "W"): (Role.CONV, _W), ("ConvTranspose", "B"): (Role.CONV, _B),
    ("QLinearConv", "w"): (Role.CONV, _W), ("QLinearConv", "B"): (Role.CONV, _B), ("ConvInteger", "w"): (Role.CONV, _W),
    # (x @ B: an (in, out) matrix, what Keras calls a kernel; a Gemm's B is one unless the node transposes it, transB,
    # as exporters write a Linear: (out, in), a weight)
    ("Gemm", "A"): (Role.DENSE, _W), ("Gemm", "B"): (Role.DENSE, "kernel"), ("Gemm", "C"): (Role.DENSE, _B),
    ("MatMul", "A"): (Role.DENSE, _W), ("MatMul", "B"): (Role.DENSE, "kernel"),
    ("QLinearMatMul", "a"): (Role.DENSE, _W), ("QLinearMatMul", "b"): (Role.DENSE, "kernel"),
    ("MatMulInteger", "A"): (Role.DENSE, _W), ("MatMulInteger", "B"): (Role.DENSE, "kernel"),
    ("MatMulNBits", "B"): (Role.DENSE, _W), ("MatMulNBits", "bias"): (Role.DENSE, _B),  # (B unpacked: (out, in))
    ("SkipLayerNormalization", "bias"): (Role.DENSE, _B),
    ("Gather", "data"): (Role.EMBEDDING, _W),
    ("LayerNormalization", "Scale"): (Role.NORM, _W), ("LayerNormalization", "B"): (Role.NORM, _B),
    ("BatchNormalization", "scale"): (Role.NORM, _W), ("BatchNormalization", "B"): (Role.NORM, _B),
    ("InstanceNormalization", "scale"): (Role.NORM, _W), ("InstanceNormalization", "B"): (Role.NORM, _B),
    ("GroupNormalization", "scale"): (Role.NORM, _W), ("GroupNormalization", "bias"): (Role.NORM, _B),
    ("RMSNormalization", "scale"): (Role.NORM, _W), ("SimplifiedLayerNormalization", "scale"): (Role.NORM, _W),
    ("SkipLayerNormalization", "gamma"): (Role.NORM, _W), ("SkipLayerNormalization", "beta"): (Role.NORM, _B),
    ("SkipSimplifiedLayerNormalization", "gamma"): (Role.NORM, _W),
    # (a norm written as elementwise nodes: `loaders.onnx.NORM_OPERANDS`)
    ("DecomposedNorm", "scale"): (Role.NORM, _W), ("DecomposedNorm", "bias"): (Role.NORM, _B),
    ("BatchNormalization", "input_mean"): (Role.NORM_STAT, "running_mean"),
    ("BatchNormalization", "input_var"): (Role.NORM_STAT, "running_var"),
    **{(op, "W"): (Role.RNN_INPUT, "weight_ih") for op in ("LSTM", "GRU", "RNN")},
    **{(op, "R"): (Role.RNN_RECURRENT, "weight_hh") for op in ("LSTM", "GRU", "RNN")},
    **{(op, "B"): (Role.RNN_BIAS, _B) for op in ("LSTM", "GRU", "RNN")},  # (ONNX's holds both of torch's biases)
    # onnxruntime's dynamically quantized LSTM: its W and R transposed, (directions, in, 4h) and (directions, h, 4h)
    ("DynamicQuantizeLSTM", "W"): (Role.RNN_INPUT, "kernel"), ("DynamicQuantizeLSTM", "R"): (Role.RNN_RECURRENT, "recurrent_kernel"),
    ("DynamicQuantizeLSTM", "B"): (Role.RNN_BIAS, _B),
    # a bias an Add adds to the layer's output (`loaders.onnx.BIAS_ADDED_TO`)
    **{(op, "bias"): (Role.CONV, _B) for op in ("Conv", "ConvTranspose", "ConvInteger")},
    **{(op, "bias"): (Role.DENSE, _B) for op in ("MatMul", "MatMulInteger", "Gemm")},
}  # fmt: skip


# TF Lite: what a constant is to the operator reading it (`TensorInfo.use`: operator, input name, as the TF Lite
# kernels name their inputs; `loaders.tflite`) -> its role and parameter name. A convolution's filter is stored
# (out, kh, kw, in), the 'filter' layout `inspector.modules` reads; a fully-connected layer's weights (out, in), a
# weight; CONV_3D's filter (kd, kh, kw, in, out), a kernel; BATCH_MATMUL's rhs (in, out), a kernel.
TFLITE_INPUT_ROLES: dict[tuple[str, str], tuple[Role, str]] = {
    **{(op, "filter"): (Role.CONV, "filter") for op in ("CONV_2D", "DEPTHWISE_CONV_2D")},
    **{(op, "bias"): (Role.CONV, _B) for op in ("CONV_2D", "DEPTHWISE_CONV_2D", "CONV_3D", "TRANSPOSE_CONV",
                                               "CONV_3D_TRANSPOSE")},
    ("TRANSPOSE_CONV", "weights"): (Role.CONV, "filter"),
    # (MediaPipe's custom transposed convolution: mediapipe/util/tflite/operations/transpose_conv_bias.cc)
    ("Convolution2DTransposeBias", "weights"): (Role.CONV, "filter"), ("Convolution2DTransposeBias", "bias"): (Role.CONV, _B),
    ("CONV_3D", "filter"): (Role.CONV, "kernel"), ("CONV_3D_TRANSPOSE", "filter"): (Role.CONV, "kernel"),
    ("FULLY_CONNECTED", "weights"): (Role.DENSE, _W), ("FULLY_CONNECTED", "bias"): (Role.DENSE, _B),
    ("BATCH_MATMUL", "lhs"): (Role.DENSE, _W), ("BATCH_MATMUL", "rhs"): (Role.DENSE, "kernel"),
    ("EMBEDDING_LOOKUP", "value"): (Role.EMBEDDING, _W),
    ("GATHER", "params"): (Role.EMBEDDING, _W), ("GATHER_ND", "params"): (Role.EMBEDDING, _W),
    ("SVDF", "weights_feature"): (Role.RNN_INPUT, "weights_feature"),
    ("SVDF", "weights_time"): (Role.LEARNED_TENSOR, "weights_time"), ("SVDF", "bias"): (Role.RNN_BIAS, _B),
    ("SVDF", "state"): (Role.INITIAL_STATE, "state"),
    # (a lone norm, or a layer's scale and shift, the converter writes as a multiply and an add)
    **{(op, x): (Role.LEARNED_TENSOR, "scale") for op in ("MUL", "DIV") for x in ("input1", "input2")},
    **{(op, x): (Role.LEARNED_TENSOR, _B) for op in ("ADD", "SUB") for x in ("input1", "input2")},
}  # fmt: skip
# TF Lite's recurrent operators: an input's role from its name (the first of these its name holds; the TF Lite
# kernels' names: 'fw_recurrent_to_cell_weights', 'input_gate_bias', 'output_state'...)
TFLITE_RECURRENT = frozenset({"LSTM", "UNIDIRECTIONAL_SEQUENCE_LSTM", "BIDIRECTIONAL_SEQUENCE_LSTM", "RNN",
                              "UNIDIRECTIONAL_SEQUENCE_RNN", "BIDIRECTIONAL_SEQUENCE_RNN"})  # fmt: skip
TFLITE_RECURRENT_ROLES = (
    ("layer_norm", Role.NORM),
    ("projection", Role.DENSE),
    ("cell_to_", Role.LEARNED_TENSOR),  # (peephole weights: a diagonal, one value a cell)
    ("recurrent", Role.RNN_RECURRENT),
    ("state", Role.INITIAL_STATE),
    ("bias", Role.RNN_BIAS),
    ("weights", Role.RNN_INPUT),
)
# Frameworks whose tensors' roles come from their graph alone (their names are the converter's, 'arith.constant3',
# joined fused op names, which no rule reads): the table of (operator, input) roles, and the rule ids' prefix
GRAPH_ROLES: dict[str, tuple[dict[tuple[str, str], tuple[Role, str]], str]] = {"tflite": (TFLITE_INPUT_ROLES, "tflite")}


def _by_use(
    t: TensorInfo,
    use: tuple[str, str, str, bool],
    table: Mapping[tuple[str, str], tuple[Role, str]] = ONNX_INPUT_ROLES,
    source: str = "onnx",
) -> RoleMatch:
    """The role the graph gives a tensor (`ONNX_INPUT_ROLES`), its layer the consuming node's scope (the node's name
    less its last '/' part: '/lstm/LSTM' -> 'lstm', 'model_1/conv2d_4/Conv2D' -> 'model_1/conv2d_4'; of a name
    tf2onnx joined from the TensorFlow ops it fused, 'a/Relu;...;a/conv2d_4/Conv2D', the last)."""
    op, name, node, transposed = use
    if t.kind is TensorKind.OTHER:  # (a constant the node takes: shapes, axes, pads, scalars)
        role, param = Role.GRAPH_CONSTANT, name
    else:
        role, param = table.get((op, name), (Role.LEARNED_TENSOR, name))
        if source == "tflite" and op in TFLITE_RECURRENT:
            role = next((r for part, r in TFLITE_RECURRENT_ROLES if part in name), Role.LEARNED_TENSOR)
        if transposed and param == "kernel":  # (read transposed: stored (out, in))
            param = _W
    node = node.rpartition(";")[2]
    scope = node.rpartition("/")[0].lstrip("/") or node
    return RoleMatch(t.name, scope, ROLE_TEXT[role], param, f"{source}.{op}.{name}")


def _by_graph(t: TensorInfo, table: Mapping[tuple[str, str], tuple[Role, str]], source: str) -> RoleMatch:
    """A tensor's role from what its graph does with it (`_by_use`); one no operator reads is a graph constant, or a
    buffer (a quantization's parameters), in the layer its name's scope says."""
    if t.use is not None:
        return _by_use(t, t.use, table, source)
    role = Role.BUFFER if t.kind is TensorKind.BUFFER else Role.GRAPH_CONSTANT
    return RoleMatch(t.name, t.name.rpartition("/")[0] or t.name, ROLE_TEXT[role], None, f"{source}.unread")


# -- shape and order: names that say nothing (arr_0, arr_1, ... as np.savez(*arrays) writes them) --------


@record(frozen=True, slots=True)
class ShapeRule:
    """A kernel of `ndim` dimensions followed by a 1-d bias of its dimension `bias_axis`."""

    rule_id: str
    role: Role
    ndim: int
    bias_axis: int
    note: str


SHAPE_RULES: tuple[ShapeRule, ...] = (
    ShapeRule("shape.conv_out_first", Role.CONV, 4, 0, "4-d kernel (out, in, kh, kw) then a bias of out: Theano/PyTorch conv"),
    ShapeRule("shape.conv_out_last", Role.CONV, 4, 3, "4-d kernel (kh, kw, in, out) then a bias of out: TensorFlow conv"),
    ShapeRule("shape.conv1d_out_first", Role.CONV, 3, 0, "3-d kernel (out, in, k) then a bias of out: PyTorch conv1d"),
    ShapeRule("shape.conv1d_out_last", Role.CONV, 3, 2, "3-d kernel (k, in, out) then a bias of out: TensorFlow conv1d"),
    ShapeRule("shape.dense_in_out", Role.DENSE, 2, 1, "2-d kernel (in, out) then a bias of out: Keras/Theano dense"),
    ShapeRule("shape.dense_out_in", Role.DENSE, 2, 0, "2-d weight (out, in) then a bias of out: PyTorch linear"),
)


def _by_shape(tensors: Sequence[TensorInfo]) -> dict[str, RoleMatch]:
    """Kernel-and-bias pairs in file order, named layer0, layer1, ..."""
    out: dict[str, RoleMatch] = {}
    index = 0
    i = 0
    while i < len(tensors):
        kernel = tensors[i]
        bias = tensors[i + 1] if i + 1 < len(tensors) else None
        for rule in SHAPE_RULES:
            if (len(kernel.shape) == rule.ndim and bias is not None and len(bias.shape) == 1
                    and bias.shape[0] == kernel.shape[rule.bias_axis]):  # fmt: skip
                layer = f"layer{index}"
                out[kernel.name] = RoleMatch(kernel.name, layer, rule.role.value, "kernel", rule.rule_id)
                out[bias.name] = RoleMatch(bias.name, layer, rule.role.value, "bias", rule.rule_id)
                index += 1
                i += 2
                break
        else:
            i += 1
    return out


RNN_PARAM_ROLES = {"kernel": Role.RNN_INPUT, "bias": Role.RNN_BIAS}


def _recurrent_layers(results: dict[str, RoleMatch], recurrent: set[str]) -> None:
    """In a layer that has a recurrent kernel (`recurrent`), the plain kernel and bias are the RNN's input kernel and
    bias."""
    if not recurrent:
        return
    for name, r in results.items():
        if r.layer in recurrent and r.role == Role.DENSE and r.param in RNN_PARAM_ROLES:
            results[name] = RoleMatch(r.name, r.layer, RNN_PARAM_ROLES[r.param].value, r.param, r.rule_id + "+rnn")


# The rules that go by a generic parameter name alone ('weight', 'bias', 'gamma'): what the module holds says more.
# A module with running statistics is a norm (its scale and shift: NORM); one whose weight has three or more
# dimensions is a convolution (weight and bias: CONV). Names saying nothing of either (torchvision's
# `downsample.0`/`downsample.1`, Gluon's `features.3`) are read so; rules that name the layer keep their answer.
GENERIC_RULES = frozenset({"torch.dense", "mxnet.bias", "timm.layer_scale", "numpy.weight", "numpy.bias"})
NORM_PARAM_NAMES = frozenset({"weight", "bias", "gamma", "beta"})


def _module_facts(results: dict[str, RoleMatch], normed: set[str], conv: set[str]) -> None:
    """Generic-rule roles (`GENERIC_RULES`) as the tensors of their module show them: NORM beside running
    statistics (in the layers `normed`), CONV for a weight of 3+ dimensions and its bias (the layers `conv`)."""
    if not normed and not conv:
        return
    generic = GENERIC_RULES
    for name, r in results.items():
        if r.rule_id not in generic:
            continue
        if r.layer in normed and r.param in NORM_PARAM_NAMES:
            results[name] = RoleMatch(r.name, r.layer, Role.NORM.value, r.param, r.rule_id + "+norm")
        elif r.layer in conv and (r.param == "bias" or _is_weight(r.param)):
            results[name] = RoleMatch(r.name, r.layer, Role.CONV.value, r.param, r.rule_id + "+conv")


def _as_used(found: RoleMatch, use: tuple[str, str, str, bool]) -> RoleMatch:
    """A generic rule's answer (`GENERIC_RULES`: a `.weight` or `.bias` of any module) with the role the graph gives the
    tensor where its operator's input says more (`ONNX_INPUT_ROLES`: a quantized conv's bias, a LayerNormalization's
    scale); its layer the name's."""
    role = ONNX_INPUT_ROLES.get(use[:2], (None, ""))[0]
    if role is None or role.value == found.role:
        return found
    return RoleMatch(found.name, found.layer, role.value, found.param, found.rule_id + "+use")


def _is_weight(param: str | None) -> bool:
    """A module's weight, or a part of it that a reparametrization stores (`WEIGHT_PARTS`)."""
    return param == "weight" or (param or "").startswith(WEIGHT_PART_PREFIXES)


KIND_ROLES = {TensorKind.OPTIMIZER: Role.OPTIMIZER_SLOT, TensorKind.BUFFER: Role.BUFFER}
# the names (after "<module>.") of a quantization's state beside its packed weights, which `inspector.quantized` makes
# buffers where a config declares the quantization: GPTQ's and AWQ's zero points, group scales and GPTQ's group
# indices (`PACKINGS`: `qzeros`, `scales`, `g_idx`), MLX's scales and biases. A buffer so named that no rule names is
# that state, as bitsandbytes' is (`bnb.state`); a parameter so named (no config declaring a quantization) is not
QUANT_STATE_BUFFERS = frozenset({*(name for how in PACKINGS.values() for name in how.state), *MLX_STATE})


def match_roles(ckpt: Checkpoint, matcher: Matcher = MATCHER) -> tuple[RoleMatch, ...]:
    """One `RoleMatch` per tensor, in the checkpoint's order."""
    graph = GRAPH_ROLES.get(ckpt.framework)
    if graph is not None and matcher is MATCHER:
        return tuple(_by_graph(t, *graph) for t in ckpt.tensors)
    if matcher is MATCHER:
        matcher = FAMILY_MATCHERS[FAMILY.get(ckpt.framework, "")]
    source = SOURCE_NAMED.get(ckpt.framework)
    by_source = FAMILY_MATCHERS[source] if source is not None else None
    recurrent_layers = {t.layer for t in ckpt.tensors if t.layer and (t.param or "").startswith("recurrent_kernel")}
    # a Flax norm (LayerNorm, BatchNorm, GroupNorm, RMSNorm) holds `scale` and `bias`: its bias is the norm's shift
    normed_layers = {t.layer or "" for t in ckpt.tensors if t.param == "scale"} if ckpt.framework == "flax" else set()
    attention_layers = keras_attention_layers(ckpt)
    results: dict[str, RoleMatch] = {}
    optimizer, buffer, generic = TensorKind.OPTIMIZER, TensorKind.BUFFER, GENERIC_RULES
    # the layers the passes after the rules look at, gathered as the rules answer: with a recurrent kernel, with
    # running statistics, with a 3+-d weight a generic rule named
    recurrent: set[str] = set()
    normed: set[str] = set()
    conv: set[str] = set()
    watched = {Role.RNN_RECURRENT.value: recurrent, Role.NORM_STAT.value: normed}
    # What `_by_rule` answers for a name shape (the matcher's memo key): the rule's role and id, the parameter name
    # and where the layer lies in the name (or the rule's layer template and where its groups lie: a transformers
    # family's `{stack}layers.{i}`), so a name of a known shape makes its RoleMatch without a call (False: a shape
    # whose answer depends on more than these, asked of `_by_rule` each time)
    digits, memo = matcher.digits, matcher.memo
    shapes: dict[bytes, Any] = {}
    ordered: list[RoleMatch | None] = []  # each tensor's answer, in file order
    unmatched = False
    found: RoleMatch | None
    # each name's shape key (`matcher.shape_key`), made for all names at once
    keys = shape_keys([t.name for t in ckpt.tensors], digits) if digits else repeat(b"")
    for t, key in zip(ckpt.tensors, keys, strict=False):  # (`repeat` without a table)
        if t.kind is optimizer:  # (a buffer's role comes from its name first)
            found = RoleMatch(t.name, t.section or t.kind.value, KIND_ROLES[t.kind].value, t.param, "kind")
            results[t.name] = found
            ordered.append(found)
            continue
        if t.layer is not None and by_source is not None and t.param is not None:
            # (a buffer its source names, no rule reads: a buffer, as in the source's file, whatever its own name says)
            found = _by_rule(t, by_source, f"{t.layer}.{t.param}") or (None if t.kind is buffer else _by_rule(t, matcher))
        elif t.layer is None and digits:
            name = t.name
            shape = shapes.get(key)
            if shape:
                start, end, role, param, rule_id = shape
                if start >= 0:
                    layer = name[start:end]
                elif start == -1:
                    layer = name.rpartition(".")[0] or name
                else:  # (a rule's layer template, filled with its groups at their spans)
                    fill, groups, spans = end
                    layer = fill(dict(zip(groups, map(name.__getitem__, spans), strict=True)))
                found = RoleMatch(name, layer, role, param, rule_id)
            elif shape is None and key in memo:  # (a shape the matcher remembers: its rule and its groups' spans)
                found = _by_rule(t, matcher)
                rule, spans = memo[key]
                shape = False
                if found is None:
                    shape = ()
                elif rule.param is not None or not any(map(str.isdigit, found.param or "")):
                    # (a parameter name of no digit is the rule's for every name of the shape)
                    if rule.layer:  # its template's `format(**groups)`, as `_by_rule` makes it
                        start, end = -2, (
                            rule.layer.format_map,
                            tuple(group for group, _, _ in spans),
                            tuple(slice(start, end) for _, start, end in spans),
                        )
                    else:
                        where = {group: (start, end) for group, start, end in spans}
                        start, end = where.get("layer", (-1, -1))
                        if end <= start:  # (no `layer` group, or an empty one: the name less its last part)
                            start = -1
                    shape = (start, end, found.role, found.param, found.rule_id)
                shapes[key] = shape
            else:
                found = None if shape == () else _by_rule(t, matcher)
        else:
            found = (t.layer is not None and _keras(t, recurrent_layers, normed_layers, attention_layers)) or _by_rule(t, matcher)
        if t.use is not None and found is not None and found.rule_id in generic:
            found = _as_used(found, t.use)
        if found is None and t.kind is buffer and t.use is None:  # (in the source's module, where a loader names it)
            layer = t.layer if by_source is not None and t.layer is not None else t.name.rpartition(".")[0]
            leaf = t.name.rpartition(".")[2]
            if leaf in QUANT_STATE_BUFFERS:  # (a quantization's state: its module's, named as its library names it)
                found = RoleMatch(t.name, layer, Role.QUANT_STATE.value, leaf, "quant.state")
            else:
                found = RoleMatch(t.name, layer, Role.BUFFER.value, t.param, "kind")
        ordered.append(found)
        if found is None:
            unmatched = True
            continue
        results[t.name] = found
        layers = watched.get(found.role)
        if layers is not None:
            layers.add(found.layer)
        elif len(t.shape) >= 3 and found.rule_id in generic and _is_weight(found.param):
            conv.add(found.layer)
    # names that say nothing (arr_0, arr_1...): a dotted or slashed name says where it is, and pairing it with the
    # tensor before it by shape alone would invent a layer (a cls_token "kernel" with a layer-scale "bias")
    if unmatched:  # what an ONNX graph does with the rest (`_by_use`): a fact, before shapes and order
        for t in ckpt.tensors:
            if t.use is not None and t.name not in results:
                results[t.name] = _by_use(t, t.use)
    parameter = TensorKind.PARAMETER
    unnamed = [
        t for t in ckpt.tensors if "." not in t.name and "/" not in t.name and t.kind is parameter and t.name not in results
    ]
    if unnamed:
        results.update(_by_shape(unnamed))
    if not (unnamed or recurrent or normed or conv) and len(results) == len(ordered) and not unmatched:
        return tuple(ordered)  # type: ignore[arg-type]  # (every tensor matched, names unique, nothing revised)
    _recurrent_layers(results, recurrent)
    _module_facts(results, normed, conv)
    return tuple(
        results.get(t.name) or RoleMatch(t.name, t.name.rpartition(".")[0] or t.name, Role.UNMATCHED.value, None, "")
        for t in ckpt.tensors
    )


def shape_keys(names: Sequence[str], table: bytes) -> list[bytes]:
    """Each name's UTF-8 bytes (a lone surrogate passed) translated by `table` (`Matcher.shape_key` of many names):
    joined by newlines, encoded, translated and split in four C calls, not two a name, where that splits them back
    (no name holds a newline, the table keeps it one); else name by name."""
    if table[10] == 10:
        keys = "\n".join(names).encode("utf-8", "surrogatepass").translate(table).split(b"\n")
        if len(keys) == len(names):
            return keys
    return [name.encode("utf-8", "surrogatepass").translate(table) for name in names]


def role_names(roles: Sequence[RoleMatch]) -> frozenset[str]:
    """The roles that `roles` hold, as a set. An analysis asks it of one file's roles three times (its detectors,
    its running statistics, its unmatched names): made once, the last roles' kept (100,000 roles, a pass each; a
    tuple's, as `match_roles` gives them: a list may change)."""
    last = _last_roles[0] if _last_roles else None  # (read once: another thread may replace it)
    if last is not None and last[0] is roles:
        return last[1]
    names = frozenset([r.role for r in roles])
    if type(roles) is tuple:
        _last_roles[:] = [(roles, names)]
    return names


_last_roles: list[tuple[Sequence[RoleMatch], frozenset[str]]] = []  # (`role_names`: the last roles and their set)


def _ordered(families: Sequence[str]) -> Matcher:
    return compile_rules([r for family in families for r in ROLE_RULES if r.families[0] == family])


class _ByFamily(Mapping[str, Matcher]):
    """Each family's `Matcher`, made when first looked up (a run reads one of them)."""

    def __init__(self, orders: Mapping[str, Sequence[str]]) -> None:
        self.orders = orders
        self.made: dict[str, Matcher] = {}

    def __getitem__(self, family: str) -> Matcher:
        matcher = self.made.get(family)
        if matcher is None:
            matcher = self.made[family] = _ordered(self.orders[family])
        return matcher

    def __iter__(self) -> Iterator[str]:
        return iter(self.orders)

    def __len__(self) -> int:
        return len(self.orders)


# Per producing framework, the rules to try; for files that do not say (npz, plain safetensors) PyTorch's
# names first, then MXNet's, then Keras's.
FAMILY_MATCHERS: Mapping[str, Matcher] = _ByFamily(
    {"torch": ["torch"], "mxnet": ["mxnet"], "keras": ["keras"], "": ["torch", "mxnet", "keras"]}
)
