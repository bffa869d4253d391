"""Quantized weights stored element for element (FP8, INT8) and the tensors their quantization keeps beside them.

A checkpoint quantized to 8 bits keeps each quantized layer's `weight` at its full shape in an 8-bit dtype, and beside
it the quantization's own tensors: scales (per tensor, per output channel, per 128 x 128 block), zero points, the
scales of the activations it was calibrated on. compressed-tensors writes `weight_scale` and `input_scale`
(RedHat's and Neural Magic's Llama, Qwen and Mistral FP8 and INT8 models), transformers' fine-grained FP8 and the
DeepSeek-V3, Kimi-K2 and Qwen3 FP8 releases `weight_scale_inv` (one scale a 128 x 128 block). The frameworks that load
such a file hold them as parameters of the layer (compressed-tensors' and transformers' FP8 linear layers register
them so, and `num_parameters()` counts them), so the file's count has them; no architecture's formula does: the
analytic check counts them beside the formula, as the quantization's (a row of their own), never as a difference.

Packed formats (GPTQ, AWQ, compressed-tensors' pack-quantized, bitsandbytes' 4 bit) keep a weight in fewer elements
than its shape has: not read as quantized here (their weights are checked as the tensors they are).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from inspector.records import TensorInfo

# A quantization's tensor beside a quantized weight (its parameter name) -> what it holds
SIDE_TENSORS: dict[str, str] = {
    "weight_scale": "weight scales",
    "weight_scale_inv": "weight scales (inverse, one a 128 x 128 block)",
    "weight_zero_point": "weight zero points",
    "input_scale": "activation scales",
    "input_zero_point": "activation zero points",
    "activation_scale": "activation scales",
}
# dtypes a weight quantized element for element is stored in
QUANTIZED_DTYPES = frozenset({"F8_E4M3", "F8_E5M2", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "I8"})
WEIGHT = "weight"
QUANTIZATION_ROW = "quantization"  # the layer check's row of them, and its kind
QUANTIZATION_KIND = "Scales"


_last: list[tuple[Sequence[TensorInfo], list[TensorInfo]]] = []  # (a file's tensors, its quantization's): asked by
# the module grouping, the layer check and the family check of one report


def side_tensors(tensors: Sequence[TensorInfo]) -> list[TensorInfo]:
    """The quantization's tensors of a file: `SIDE_TENSORS` of a module whose `weight` is stored in a quantized dtype
    (none in most files, told by one C pass over the dtypes)."""
    last = _last[0] if _last else None  # (read once: another thread may replace it)
    if last is not None and last[0] is tensors:
        return last[1]
    from operator import attrgetter  # (loaded already: bound here, not in every run's start-up)

    side: list[TensorInfo] = []
    if not QUANTIZED_DTYPES.isdisjoint(map(attrgetter("dtype"), tensors)):
        quantized = {
            parts[0] for t in tensors if t.dtype in QUANTIZED_DTYPES and (parts := t.name.rpartition("."))[2] == WEIGHT
        }
        side = [t for t in tensors if (parts := t.name.rpartition("."))[2] in SIDE_TENSORS and parts[0] in quantized]
    _last[:] = [(tensors, side)]
    return side


def described(side: Sequence[TensorInfo]) -> str:
    """The sentence of a layer check's row of the quantization's tensors: what they are, beside how many weights."""
    modules = len({t.name.rpartition(".")[0] for t in side})
    params = dict.fromkeys(t.name.rpartition(".")[2] for t in side)
    what = ", ".join(f"{SIDE_TENSORS[p]} ({p})" for p in params)
    return (
        f"the quantization's tensors beside {modules:,} quantized weights: {what}; the loading frameworks hold them "
        "as parameters, no formula has them: counted from their own shapes"
    )
