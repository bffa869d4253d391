"""What `--data` computes from streamed values: per-tensor statistics, identical content, pairwise comparison.

Everything runs block by block over `inspector.tensor_data` streams, so memory stays bounded by a few
blocks whatever the tensor or file size. Statistics merge per block (Chan et al.'s parallel variance),
hashes are SHA-256 of the stored little-endian bytes, comparisons upcast both sides to float64.

A pair is within tolerance T when every element has ``|a - b| <= T * max(1, |a|, |b|)`` (relative for
values above 1, absolute below), NaN matching NaN. When the dtype changed, the narrower dtype's rounding
(half a unit in the last place, `tensor_data.ROUNDOFF`) is allowed on top, so an fp32 -> bf16 conversion
compares as the rounding it is.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from math import prod

import numpy as np

from inspector.recordtype import record
from inspector.tensor_data import ROUNDOFF, TensorSource, decode, layout, reblock, stored_as, unreadable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from inspector.dequantize import Plan
    from inspector.records import Checkpoint, TensorInfo

COMPARE_BLOCK = 1 << 18  # elements per aligned block when two tensors are compared (a few MiB of float64)
# transposed pairs other than 2-D ones read by columns are held in memory (stored dtype) up to this many elements
MAX_PERMUTED_ELEMENTS = 1 << 22
HASH_CHARS = 16


@record(frozen=True, slots=True)
class TensorStats:
    """Statistics of one tensor's values (NaN and infinities excluded from min/max/mean/std)."""

    name: str
    dtype: str
    n: int
    min: float | None
    max: float | None
    mean: float | None
    std: float | None
    zeros: int
    nan: int
    inf: int
    sha256: str
    alias_of: str | None = None  # shares the stored bytes of that tensor: not read again
    skipped: str | None = None  # why the values were not read
    stored_as: str | None = None  # the values are as stored, not as the model computes with them: how (quantized...)

    @property
    def all_zero(self) -> bool:
        return self.n > 0 and self.zeros == self.n

    @property
    def constant(self) -> bool:
        """Every value the same (one element, all zeros, all ones...)."""
        return self.nan == 0 and self.inf == 0 and self.min == self.max


@record(frozen=True, slots=True)
class DataReport:
    """`inspector FILE --data`: statistics per tensor and groups of tensors with identical content."""

    path: str
    stats: tuple[TensorStats, ...]
    identical: tuple[tuple[str, ...], ...]  # non-constant tensors whose stored bytes are identical (not aliases)
    zeroed: tuple[str, ...]
    bytes_read: int


@record(frozen=True, slots=True)
class ValueComparison:
    """The values of a matched pair of tensors."""

    a: str
    b: str
    equal: bool  # every element equal after upcasting (NaN == NaN)
    within: bool  # within the tolerance (and the narrower dtype's rounding when the dtype changed)
    max_abs: float
    max_rel: float
    n_differ: int  # elements not within tolerance
    sha256_a: str
    sha256_b: str
    skipped: str | None = None
    # a float weight against its quantization: how the quantized side was dequantized (`inspector.dequantize`); then
    # max_abs is the quantization's largest error and max_rel that error over the float weight's largest magnitude
    dequantized: str | None = None


class _Moments:
    """Streaming count, mean, M2, min, max (Chan's merge), plus zero, NaN and Inf counts."""

    def __init__(self) -> None:
        self.n = self.finite = self.zeros = self.nan = self.inf = 0
        self.mean = self.m2 = 0.0
        self.lo, self.hi = np.inf, -np.inf

    def add(self, x: np.ndarray) -> None:
        self.n += x.size
        self.zeros += int(np.count_nonzero(x == 0))
        nan = np.isnan(x)
        inf = np.isinf(x)
        self.nan += int(nan.sum())
        self.inf += int(inf.sum())
        if nan.any() or inf.any():
            x = x[~(nan | inf)]
        if not x.size:
            return
        n_b, mean_b = x.size, float(x.mean())
        m2_b = float(((x - mean_b) ** 2).sum())
        total = self.finite + n_b
        delta = mean_b - self.mean
        self.mean += delta * n_b / total
        self.m2 += m2_b + delta * delta * self.finite * n_b / total
        self.finite = total
        self.lo, self.hi = min(self.lo, float(x.min())), max(self.hi, float(x.max()))


def _stats(source: TensorSource, t: TensorInfo) -> TensorStats:
    moments, digest = _Moments(), hashlib.sha256()
    for block in source.blocks(t):
        digest.update(block.tobytes())
        moments.add(decode(block, t.dtype))
    seen = moments.finite > 0
    std = (moments.m2 / moments.finite) ** 0.5 if seen else None
    return TensorStats(t.name, t.dtype, moments.n, moments.lo if seen else None, moments.hi if seen else None,
                       moments.mean if seen else None, std, moments.zeros, moments.nan, moments.inf,
                       digest.hexdigest(), stored_as=stored_as(t))  # fmt: skip


def data_report(ckpt: Checkpoint) -> DataReport:
    """Stream every tensor of a checkpoint once: statistics, identical content, all-zero tensors.

    Raises:
        InspectorError: the data cannot be read (truncated, corrupt compressed data).
    """
    stats: list[TensorStats] = []
    by_name = {t.name: t for t in ckpt.tensors}
    with TensorSource(ckpt) as source:
        for t in ckpt.tensors:
            target = by_name.get(t.alias_of) if t.alias_of else None
            if target is not None and (target.offset, target.file) == (t.offset, t.file):
                stats.append(_empty(t, alias_of=t.alias_of))
                continue
            reason = unreadable(ckpt, t)
            stats.append(_empty(t, skipped=reason) if reason else _stats(source, t))
        read = source.bytes_read
    groups: dict[tuple[str, str, tuple[int, ...]], list[str]] = {}
    shapes = {t.name: t.shape for t in ckpt.tensors}
    for s in stats:
        if s.sha256 and not s.constant:  # equal constants (fresh initialisations) are no copy of anything
            groups.setdefault((s.sha256, s.dtype, shapes[s.name]), []).append(s.name)
    identical = tuple(tuple(names) for names in groups.values() if len(names) > 1)
    zeroed = tuple(s.name for s in stats if s.all_zero)
    return DataReport(ckpt.path, tuple(stats), identical, zeroed, read)


def _empty(t: TensorInfo, alias_of: str | None = None, skipped: str | None = None) -> TensorStats:
    return TensorStats(t.name, t.dtype, t.n_elements, None, None, None, None, 0, 0, 0, "", alias_of, skipped)


class _Accumulator:
    """Running comparison of aligned float64 blocks."""

    def __init__(self, tolerance: float) -> None:
        self.tolerance = tolerance
        self.equal = True
        self.max_abs = self.max_rel = 0.0
        self.n_differ = 0

    def add_equal(self) -> None:
        """A block whose stored values are identical (NaN payloads included)."""

    def add(self, a: np.ndarray, b: np.ndarray) -> None:
        both_nan = np.isnan(a) & np.isnan(b)
        with np.errstate(invalid="ignore", over="ignore"):
            diff = np.abs(a - b)
            diff[both_nan | (a == b)] = 0.0  # equal infinities and NaN pairs are no difference
            diff[np.isnan(diff)] = np.inf  # NaN against a number
            scale = np.maximum(np.abs(a), np.abs(b))
            rel = np.divide(diff, scale, out=np.zeros_like(diff), where=scale > 0)
            bound = self.tolerance * np.maximum(1.0, scale)
            rel[np.isnan(rel)] = np.inf  # an infinity against a number
        differ = (diff > bound) | np.isinf(diff)
        if diff.size:
            self.max_abs = max(self.max_abs, float(diff.max()))
            self.max_rel = max(self.max_rel, float(rel.max()))
        self.equal = self.equal and not bool(diff.any())
        self.n_differ += int(np.count_nonzero(differ))


def _hashed(source: TensorSource, t: TensorInfo, digest: Any) -> Iterator[np.ndarray]:
    for block in source.blocks(t):
        digest.update(block.data)
        yield block


def _whole(source: TensorSource, t: TensorInfo, digest: Any) -> np.ndarray:
    """A tensor's stored values in memory (storage dtype, no float64 copy), viewed in its logical C-order layout."""
    stored, perm = layout(t)
    flat = np.empty(t.n_elements, dtype=source.storage_dtype(t))
    pos = 0
    for block in _hashed(source, t, digest):
        flat[pos : pos + block.size] = block
        pos += block.size
    return flat.reshape(stored).transpose(perm)


def _compare_permuted(x: np.ndarray, y: np.ndarray, a: TensorInfo, b: TensorInfo, acc: _Accumulator) -> None:
    """Two same-shape views compared along their leading axis, a bounded number of elements at a time."""
    if x.ndim == 0:
        acc.add(decode(x.reshape(1), a.dtype), decode(y.reshape(1), b.dtype))
        return
    step = max(1, COMPARE_BLOCK // max(1, x[0].size))
    for i in range(0, x.shape[0], step):
        xs, ys = np.ascontiguousarray(x[i : i + step]).reshape(-1), np.ascontiguousarray(y[i : i + step]).reshape(-1)
        acc.add(decode(xs, a.dtype), decode(ys, b.dtype))


def tolerance_for(a: TensorInfo, b: TensorInfo, tolerance: float) -> float:
    """The tolerance of a pair: the narrower dtype's rounding is allowed when the dtype changed."""
    if a.dtype == b.dtype:
        return tolerance
    return tolerance + max(ROUNDOFF.get(a.dtype, 0.0), ROUNDOFF.get(b.dtype, 0.0))


def compare(
    sa: TensorSource, a: TensorInfo, sb: TensorSource, b: TensorInfo, tolerance: float, perm: Sequence[int] | None
) -> ValueComparison:
    """Compare the values of `a` and `b`; `perm` says b's logical layout is a's transposed by `perm`."""
    reason = unreadable(sa.ckpt, a) or unreadable(sb.ckpt, b)
    if reason is None and a.n_elements != b.n_elements:
        reason = f"{a.n_elements:,} against {b.n_elements:,} elements"
    same_layout = perm is None and layout(a)[1] == layout(b)[1]
    streamed_transpose = tuple(perm or ()) == (1, 0) and layout(a)[1] == (0, 1) and sb.can_read_columns(b)
    large = max(a.n_elements, b.n_elements) > MAX_PERMUTED_ELEMENTS
    if reason is None and not same_layout and large and not streamed_transpose:
        reason = f"transposed and above {MAX_PERMUTED_ELEMENTS:,} elements: not compared in bounded memory"
    if reason is not None:
        return ValueComparison(a.name, b.name, False, False, 0.0, 0.0, 0, "", "", skipped=reason)
    acc = _Accumulator(tolerance_for(a, b, tolerance))
    ha, hb = hashlib.sha256(), hashlib.sha256()
    if same_layout:
        for x, y in zip(reblock(_hashed(sa, a, ha), COMPARE_BLOCK), reblock(_hashed(sb, b, hb), COMPARE_BLOCK),
                        strict=True):  # fmt: skip
            if a.dtype == b.dtype and np.array_equal(x, y):  # the same stored values: nothing to measure
                acc.add_equal()
            else:
                acc.add(decode(x, a.dtype), decode(y, b.dtype))
    elif large:
        _compare_transposed(sa, a, sb, b, acc, ha, hb)
    else:
        x = _whole(sa, a, ha)
        y = _whole(sb, b, hb)
        _compare_permuted(x if perm is None else x.transpose(perm), y, a, b, acc)
    return ValueComparison(a.name, b.name, acc.equal, acc.n_differ == 0, acc.max_abs, acc.max_rel, acc.n_differ,
                           ha.hexdigest()[:HASH_CHARS], hb.hexdigest()[:HASH_CHARS])  # fmt: skip


def _compare_transposed(
    sa: TensorSource, a: TensorInfo, sb: TensorSource, b: TensorInfo, acc: _Accumulator, ha: Any, hb: Any
) -> None:
    """b = a.T for a 2-D `a` of shape (m, n): row blocks of `a` against the matching columns of `b`."""
    n = a.shape[1]
    start = 0
    for block in reblock(_hashed(sa, a, ha), max(1, COMPARE_BLOCK // max(n, 1)) * n):
        rows = block.size // n
        y = decode(sb.columns(b, start, start + rows), b.dtype)  # (n, rows)
        acc.add(decode(block, a.dtype), np.ascontiguousarray(y.T).reshape(-1))
        start += rows
    for stored in sb.blocks(b):  # b's hash is of its stored bytes, in their order
        hb.update(stored.data)


def compare_pairs(
    a: Checkpoint,
    b: Checkpoint,
    pairs: Sequence[tuple[TensorInfo, TensorInfo, tuple[int, ...] | None]],
    tolerance: float = 0.0,
) -> tuple[ValueComparison, ...]:
    """Stream the values of every matched pair (a, b, permutation or None) and compare them; a float weight paired
    with its quantization against the quantized side dequantized (`inspector.dequantize`), or skipped with the
    reason where that is not done.

    Raises:
        InspectorError: data cannot be read (truncated, corrupt compressed data).
    """
    from inspector.dequantize import plans  # (one pass over each file's tensors; most pairs are floats)

    quantized_a, quantized_b = plans(a), plans(b)
    out = []
    with TensorSource(a) as sa, TensorSource(b) as sb:
        for ta, tb, perm in pairs:
            qa, qb = quantized_a.get(id(ta)), quantized_b.get(id(tb))
            if (qa is None) == (qb is None):  # (floats, or both sides quantized: compared as stored)
                out.append(compare(sa, ta, sb, tb, tolerance, perm))
            elif qb is not None:
                out.append(_against_quantized(sa, ta, sb, tb, qb, tolerance, perm, float_first=True))
            else:
                assert qa is not None
                out.append(_against_quantized(sb, tb, sa, ta, qa, tolerance, perm, float_first=False))
    return tuple(out)


def _against_quantized(
    sf: TensorSource, f: TensorInfo, sq: TensorSource, q: TensorInfo, plan: Plan, tolerance: float,
    perm: Sequence[int] | None, float_first: bool,
) -> ValueComparison:  # fmt: skip
    """A float weight `f` against the values `q` of its quantization, dequantized by `plan`: the quantization's error
    (or why it is not dequantized)."""
    from inspector.dequantize import FLOATS, logical_matrix, unaddressed
    from inspector.dequantize_stream import dequantized

    a, b = (f.name, q.name) if float_first else (q.name, f.name)
    reason = plan if isinstance(plan, str) else unaddressed(plan) or unreadable(sf.ckpt, f)
    if reason is None and f.dtype not in FLOATS:
        reason = f"{f.dtype} is not a float model's dtype"
    # (values each matrix's transpose of the float weight's: the pair's permutation swaps its last two axes, or the
    # values' shape is the float weight's, GPTQ's and AWQ's (in, out) unpacked as torch's (out, in))
    swapped = (*range(len(f.shape) - 2), len(f.shape) - 1, len(f.shape) - 2)
    turned = not isinstance(plan, str) and plan.transposed and tuple(perm or swapped) == swapped
    if reason is None and ((perm is not None and not turned) or layout(f)[1] != tuple(range(len(f.shape)))):
        reason = "the float weight is laid out otherwise (transposed): not dequantized in its order"
    if reason is None and f.n_elements != q.n_elements:
        reason = f"{f.n_elements:,} against {q.n_elements:,} values"
    if reason is None and not isinstance(plan, str) and plan.transposed:
        turned_matrix = (prod(f.shape[:-2]) * f.shape[-1], f.shape[-2]) if len(f.shape) >= 2 else (0, 0)
        if turned_matrix != logical_matrix(plan):
            reason = f"{plan.how}: its values {logical_matrix(plan)} are not the float weight's {tuple(f.shape)} turned"
    if reason is None and not isinstance(plan, str) and plan.transposed and not sf.can_read_columns(f):
        reason = f"{plan.how}: its values are the float weight's transpose, whose columns are not read from this file"
    if reason is not None or isinstance(plan, str):
        return ValueComparison(a, b, False, False, 0.0, 0.0, 0, "", "", skipped=reason)
    acc = _Accumulator(tolerance)
    peak = 0.0
    hf = hashlib.sha256()
    # (GPTQ's and AWQ's values are (in, out), gpt-oss's experts each one's transpose: the float weight's columns
    # against them, read as many at a time as fill MAX_PERMUTED_ELEMENTS of its stored dtype (each row one read: wider
    # slices, fewer reads), its hash of its stored bytes)
    by_columns = _transposed(sf, f, MAX_PERMUTED_ELEMENTS) if plan.transposed else None
    floats = reblock(by_columns if by_columns is not None else _hashed(sf, f, hf), COMPARE_BLOCK)
    for x, y in zip(floats, reblock(dequantized(sq, plan, COMPARE_BLOCK), COMPARE_BLOCK), strict=True):
        x = decode(x, f.dtype)
        acc.add(x, y)
        peak = max(peak, float(np.abs(x).max(initial=0.0)))
    relative = acc.max_abs / peak if peak else (0.0 if acc.max_abs == 0 else float("inf"))
    hash_f = _stored_hash(sf, f) if plan.transposed else hf.hexdigest()
    ha, hb = (hash_f, _stored_hash(sq, q)) if float_first else (_stored_hash(sq, q), hash_f)
    return ValueComparison(a, b, acc.equal, acc.n_differ == 0, acc.max_abs, relative, acc.n_differ,
                           ha[:HASH_CHARS], hb[:HASH_CHARS], dequantized=plan.how)  # fmt: skip


def _transposed(source: TensorSource, t: TensorInfo, block_elements: int) -> Iterator[np.ndarray]:
    """A 2-D tensor's transpose (a stack of matrices: each one's), flat, in storage-dtype blocks of about
    `block_elements`: its columns, read a bounded slice a row."""
    *stack, rows, cols = t.shape
    step = max(1, block_elements // max(rows, 1))
    for matrix in range(prod(stack)):
        for start in range(0, cols, step):
            yield np.ascontiguousarray(source.columns(t, start, min(cols, start + step), matrix).T).reshape(-1)


def _stored_hash(source: TensorSource, t: TensorInfo) -> str:
    """SHA-256 of a tensor's stored bytes (packed values as the bytes they are stored in), streamed."""
    from inspector.recordtype import replace

    stored = replace(t, shape=(t.nbytes,), dtype="U8")
    digest = hashlib.sha256()
    for block in source.blocks(stored):
        digest.update(block.data)
    return digest.hexdigest()
