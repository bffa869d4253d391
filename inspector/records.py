"""Frozen records that flow between the stages: loader -> roles -> expectation -> reconciliation -> render.

A loader returns one `Checkpoint`: its tensors (metadata only, never data) and the byte regions that
tile the file(s). Everything after the loader works on these records alone, so every stage can be
tested with hand-built records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import islice, repeat
from math import prod
from operator import add, attrgetter, eq, mod
from types import MappingProxyType

from inspector.enumtype import StrEnum
from inspector.recordtype import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA_VERSION = 1
PICKLED_DTYPE = "OBJECT"  # the dtype of an array of pickled Python objects


class TensorKind(StrEnum):
    """Which part of a checkpoint a tensor belongs to."""

    PARAMETER = "parameter"  # counted by the framework's own parameter count
    BUFFER = "buffer"  # running statistics, registered buffers, step counters of a module
    OPTIMIZER = "optimizer"  # optimizer slots and state
    OTHER = "other"  # any other training state (RNG state, scheduler, scaler...)
    METADATA = "metadata"  # not numbers: pickled Python objects (npy object arrays), counted as nothing


class RegionKind(StrEnum):
    """Where a byte of the file goes. Tensor bytes are split further by `TensorKind` when reported."""

    TENSOR_DATA = "tensor_data"  # bytes inside some tensor's span
    UNREFERENCED = "unreferenced"  # stored bytes no tensor uses (the rest of a base storage of a view)
    DUPLICATE = "duplicate"  # the same tensor stored a second time
    HEADER = "header"  # container structure: zip records, npy/record headers, HDF5 object headers
    METADATA = "metadata"  # data.pkl, JSON headers, names blocks, configs
    PADDING = "padding"  # alignment padding
    COMPRESSED = "compressed"  # a deflated member: its compressed bytes (logical size in the label)
    UNACCOUNTED = "unaccounted"  # HDF5 only: free or dead space no structure explains (within h5stat's "unaccounted")
    UNKNOWN = "unknown"  # bytes no rule explains: a bug or trailing garbage


@record(frozen=True, slots=True)
class TensorInfo:
    """One tensor as stored. `offset` is absolute in file `file` (an index into `Checkpoint.files`).

    Attributes:
        name: exactly as stored (for nested containers, the path joined with '.' or '/').
        shape: logical shape.
        dtype: canonical dtype name (see `inspector.dtypes`).
        nbytes: bytes of the tensor's own elements (logical; 0 for meta tensors).
        offset: absolute first data byte, or None when not addressable (compressed, chunked, meta).
        storage: key of the stored buffer this tensor lives in (torch storages; None elsewhere).
        alias_of: name of an earlier tensor this one is the same tensor as (tied weights): counted once.
        kind: parameter, buffer, optimizer, other or metadata.
        trainable: False for frozen parameters and non-trainable statistics (Keras, MXNet aux).
        section: the part of a training checkpoint it came from ('model', 'optimizer', 'ema'...).
        layer: the layer name the file itself states (Keras); roles infer it otherwise.
        param: the variable's meaning where the file states it (Keras 'kernel', 'moving_mean'...).
        file: index into `Checkpoint.files` for multi-file checkpoints.
        notes: free-form remarks from the loader (stride-0 expand, view of a larger storage...).
        span: bytes the tensor spans from `offset` when that differs from nbytes (strided views,
            stride-0 expands); None means nbytes.
        use: what the file's own graph does with it, where it has one (ONNX): the operator, the name of the input
            it feeds, the consuming node and whether it reads it transposed ('Conv', 'W', '/features.0/Conv', False);
            a node attribute's tensor, the attribute ('ConstantOfShape', 'value', '/ConstantOfShape', False).
    """

    name: str
    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    offset: int | None
    storage: str | None = None
    alias_of: str | None = None
    kind: TensorKind = TensorKind.PARAMETER
    trainable: bool = True
    section: str = ""
    layer: str | None = None
    param: str | None = None
    file: int = 0
    notes: tuple[str, ...] = ()
    span: int | None = None
    use: tuple[str, str, str, bool] | None = None

    @property
    def n_elements(self) -> int:
        return prod(self.shape)

    @property
    def span_bytes(self) -> int:
        """Bytes from `offset` to the tensor's last element (differs from nbytes for strided views)."""
        return self.nbytes if self.span is None else self.span


@record(frozen=True, slots=True)
class Region:
    """A byte range `[start, start + length)` of file `file` and what it holds.

    `label` says what: `text` itself, or `text` with `subject` (a name) in place of its one '%s'. The labels of an
    archive's structures ("zip local header 'archive/data/7'", three per member) are so made when they are read,
    not held: 27 MB at 100,000 members.
    """

    kind: RegionKind
    start: int
    length: int
    text: str = ""
    file: int = 0
    logical: int | None = None  # COMPRESSED: bytes the data would take uncompressed
    subject: str | None = None

    @property
    def label(self) -> str:
        subject = self.subject
        return self.text if subject is None else self.text % (subject,)

    @property
    def end(self) -> int:
        return self.start + self.length


MAX_INDEX = 1 << 62  # (`list.index`'s default stop)

if TYPE_CHECKING:
    _Regions = Sequence[Region]
else:
    _Regions = object  # (a `Sequence` subclass is an ABC: 0.03 ms of every run; registered as one below)


class RegionColumns(_Regions):
    """Regions of file 0, none compressed, held as one list a field: a zip of 100,000 members has four regions a member,
    made here without a `Region` each (a list of each field from the members' own, in C calls) and read column by
    column by `loaders.base.tile`, the byte buckets and `--json` (issue 16). To everything else a sequence of
    `Region`s, each made as it is read (`file` 0, `logical` None)."""

    __slots__ = ("kinds", "starts", "lengths", "texts", "subjects", "_laid")

    def __init__(
        self,
        kinds: list[RegionKind],
        starts: list[int],
        lengths: list[int],
        texts: list[str],
        subjects: list[str | None],
        laid: bool | None = None,
    ) -> None:
        self.kinds, self.starts, self.lengths, self.texts, self.subjects = kinds, starts, lengths, texts, subjects
        self._laid = laid  # (None: told when asked; a maker that knows it from fewer facts, a zip's members, tells it)

    def laid(self) -> bool:
        """Whether the regions lie one after the other from byte 0, each of positive length (so in order): told once,
        in C calls (asked by the zip reader and by `tile`)."""
        if self._laid is None:
            starts, lengths = self.starts, self.lengths
            self._laid = (
                bool(starts)
                and starts[0] == 0
                and min(lengths) > 0
                and all(map(eq, islice(starts, 1, None), map(add, starts, lengths)))
            )
        return self._laid

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, index: Any) -> Any:  # (an int: a Region; a slice: RegionColumns)
        if isinstance(index, slice):
            return RegionColumns(
                self.kinds[index], self.starts[index], self.lengths[index], self.texts[index], self.subjects[index]
            )
        return Region(self.kinds[index], self.starts[index], self.lengths[index], self.texts[index], 0, None,
                      self.subjects[index])  # fmt: skip

    def __iter__(self) -> Iterator[Region]:
        return map(Region, self.kinds, self.starts, self.lengths, self.texts, repeat(0), repeat(None), self.subjects)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (RegionColumns, tuple, list)):
            return NotImplemented
        return len(self) == len(other) and all(map(eq, self, other))

    __hash__ = None  # type: ignore[assignment]  # (as a list's: its columns can grow, `followed_by`)

    def __repr__(self) -> str:
        return f"RegionColumns({list(self)!r})"

    def index(self, value: Any, start: int = 0, stop: int = MAX_INDEX) -> int:  # (a Sequence's, as a list's)
        return list(self).index(value, start, stop)

    def count(self, value: Any) -> int:
        return list(self).count(value)

    def column(self, name: str) -> list[Any]:
        """The field `name` of every region (`Region`'s field names, and `label`)."""
        n = len(self.starts)
        if name == "label":
            return self.labels()
        if name == "file":
            return [0] * n
        if name == "logical":
            return [None] * n
        return list(getattr(self, COLUMNS[name]))

    def labels(self) -> list[str]:
        """Each region's `label`, its text with its subject written in: one C call a column where every region has a
        subject, the few that have none (a zip's end records) found by `list.index`."""
        texts, subjects = self.texts, self.subjects
        if not all(subjects) and subjects.count(None) == len(subjects):
            return list(texts)
        parts = self.label_parts()
        if parts is None:
            return list(map(mod, *self._with_subjects()))
        heads, subjects, tails = parts  # (a zip's 400,000 labels: concatenated, about half the instructions of '%')
        try:
            labels = list(map(add, heads, subjects))
        except TypeError:  # a subject that is not a str: formatted
            return list(map(mod, *self._with_subjects()))
        return labels if tails is None else list(map(add, labels, tails))

    def label_parts(self) -> tuple[list[str], list[Any], list[str] | None] | None:
        """Each region's label in three parts, its text's part before its '%s', its subject and the part after (None
        where every text ends with it), as `labels` joins them; None where a text is not so made (no '%s', another
        '%': formatted) or no region has a subject."""
        if not all(self.subjects) and self.subjects.count(None) == len(self.subjects):
            return None
        texts, subjects = self._with_subjects()
        around = _around_subject(texts)
        if around is None:
            return None
        return around[0], subjects, around[1]

    def _with_subjects(self) -> tuple[list[str], list[Any]]:
        """The texts and subjects, a region without a subject given its text as the subject of "%s"."""
        texts, subjects = self.texts, self.subjects
        if all(subjects):  # (most: every region has a subject, told by truth in one C pass; `count(None)` compares)
            return texts, subjects
        plain = subjects.count(None)
        if plain and plain != len(subjects):
            texts, subjects, at = texts.copy(), subjects.copy(), -1
            for _ in range(plain):  # a region without a subject: its text, as the subject of "%s"
                at = subjects.index(None, at + 1)
                subjects[at], texts[at] = texts[at], "%s"
        return texts, subjects

    def followed_by(self, regions: Iterable[Region]) -> RegionColumns:
        """These regions and then `regions` (of file 0, none compressed), as new columns."""
        kinds, starts, lengths, texts, subjects = (
            self.kinds.copy(), self.starts.copy(), self.lengths.copy(), self.texts.copy(), self.subjects.copy()
        )  # fmt: skip
        for r in regions:
            kinds.append(r.kind)
            starts.append(r.start)
            lengths.append(r.length)
            texts.append(r.text)
            subjects.append(r.subject)
        return RegionColumns(kinds, starts, lengths, texts, subjects)


def _around_subject(texts: list[str]) -> tuple[list[str], list[str] | None] | None:
    """Each text's part before and after its one '%s' (the parts after: None where every text ends with it; one list
    made by repetition where every text has the same), so a label is its text's parts with its subject between, as
    '%' writes a str subject; None where a text has no '%s' or another '%' (formatted)."""
    heads, tails = {}, {}
    for text in set(texts):  # (a handful: a zip's)
        head, found, tail = text.partition("%s")
        if not found or "%" in head or "%" in tail:
            return None
        heads[text], tails[text] = head, tail
    after = set(tails.values())
    return (
        list(map(heads.__getitem__, texts)),
        None
        if after == {""}
        else [after.pop()] * len(texts)
        if len(after) == 1
        else list(map(tails.__getitem__, texts)),
    )


Sequence.register(RegionColumns)
COLUMNS = {"kind": "kinds", "start": "starts", "length": "lengths", "text": "texts", "subject": "subjects"}


def region_column(regions: Sequence[Region], name: str) -> list[Any]:
    """The field `name` of every region: a `RegionColumns`' own column, else read in one pass (`READ_REGIONS`)."""
    if regions.__class__ is RegionColumns:
        return regions.column(name)  # type: ignore[attr-defined, no-any-return]
    read = READ_REGIONS.get(name)
    return read(regions) if read is not None else list(map(attrgetter(name), regions))


# The fields the byte accounting reads of 400,000 regions, each read by a list comprehension (specialised to the
# record's slot: about half the instructions of `map(attrgetter(...))`)
READ_REGIONS: dict[str, Callable[[Sequence[Region]], list[Any]]] = {
    "kind": lambda regions: [r.kind for r in regions],
    "start": lambda regions: [r.start for r in regions],
    "length": lambda regions: [r.length for r in regions],
    "file": lambda regions: [r.file for r in regions],
}


class Severity(StrEnum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


SEVERITY_ORDER = {Severity.INFO: 0, Severity.WARNING: 1, Severity.ERROR: 2}


@record(frozen=True, slots=True)
class Finding:
    """Something the reader noticed: a mismatch, a tie, a skipped check. Data, never an exception."""

    code: str
    severity: Severity
    message: str
    subjects: tuple[str, ...] = ()
    expected: int | None = None
    observed: int | None = None


def _frozen_map(m: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
    return MappingProxyType(dict(m or {}))


@record(frozen=True, slots=True)
class Checkpoint:
    """Everything a loader learned from a file's headers.

    Attributes:
        path: the path given by the user.
        format: loader format name ('safetensors', 'pytorch-zip'...).
        framework: the producing framework ('numpy', 'pytorch', 'keras', 'mxnet', 'safetensors').
        files: (path, size) of every file read; `files[0]` is `path` (shards follow).
        tensors: every tensor found, in file order.
        regions: byte regions tiling each file exactly.
        attributes: small string facts worth showing (versions, metadata keys, sections).
        config: parsed model configuration where the file has one (Keras model_config...).
        findings: what the loader noticed (unsafe globals, duplicates, validation problems).
    """

    path: str
    format: str
    framework: str
    files: tuple[tuple[str, int], ...]
    tensors: tuple[TensorInfo, ...]
    regions: Sequence[Region]  # a tuple, or a zip's `RegionColumns`
    attributes: Mapping[str, str] = field(default_factory=_frozen_map)
    config: Mapping[str, Any] | None = None
    findings: tuple[Finding, ...] = ()

    @property
    def file_size(self) -> int:
        return sum(size for _, size in self.files)

    def column(self, name: str) -> tuple[Any, ...]:
        """The field `name` of every tensor, in order (or "elements": each one's), read once: kept while these are the
        tensors (a tuple) last asked about (a report reads the kinds, dtypes, sizes and shapes of its 100,000 tensors in
        several places: the parameter count, the counts, the byte accounting, the --json rows)."""
        tensors = self.tensors
        entry = _COLUMNS_KEPT[0]
        if entry[0] is not tensors:  # (one entry replaced at once: a consistent pair whoever reads it)
            entry = (tensors, {})
            if tensors.__class__ is tuple:  # (kept only where they cannot change)
                _COLUMNS_KEPT[0] = entry
        column = entry[1].get(name)
        if column is None:
            read = READ_TENSORS.get(name)
            made = (
                map(prod, self.column("shape"))
                if name == "elements"
                else read(tensors)
                if read is not None
                else map(attrgetter(name), tensors)
            )
            column = entry[1][name] = tuple(made)
        return column

    def unique(self, kind: TensorKind | None = None) -> tuple[TensorInfo, ...]:
        """Tensors that are not aliases of another, optionally of one kind."""
        tensors = self.tensors
        # (100,000 tensors, four callers a report; most files: no alias, one kind, told by counts of the columns read
        # once, `column`)
        aliases = self.column("alias_of")
        one_kind = kind is None or self.column("kind").count(kind) == len(tensors)
        if aliases.count(None) == len(aliases) and one_kind:
            return tensors
        return tuple([t for t in tensors if t.alias_of is None and (kind is None or t.kind == kind)])

    @property
    def n_parameters(self) -> int:
        params = self.unique(TensorKind.PARAMETER)
        return sum(self.column("elements")) if params is self.tensors else elements(params)

    @property
    def count_known(self) -> bool:
        """False when a tensor holds pickled objects: what they contain is only known by running the pickle."""
        if PICKLED_DTYPE not in self.column("dtype"):  # (most files: one pass)
            return True
        return not any(t.kind is TensorKind.METADATA and t.dtype == PICKLED_DTYPE for t in self.tensors)


# The fields of a checkpoint's tensors read most (`Checkpoint.column`), each by a list comprehension (specialised to
# the record's slot: about half the instructions of `map(attrgetter(...))`), and the tensors last asked about with
# their columns by name (one entry)
READ_TENSORS: dict[str, Callable[[Sequence[TensorInfo]], Iterable[Any]]] = {
    "alias_of": lambda tensors: [t.alias_of for t in tensors],
    "kind": lambda tensors: [t.kind for t in tensors],
    "dtype": lambda tensors: [t.dtype for t in tensors],
    "nbytes": lambda tensors: [t.nbytes for t in tensors],
    "shape": lambda tensors: [t.shape for t in tensors],
    "trainable": lambda tensors: [t.trainable for t in tensors],
    "offset": lambda tensors: [t.offset for t in tensors],
    "span": lambda tensors: [t.span for t in tensors],
    "file": lambda tensors: [t.file for t in tensors],
}
_COLUMNS_KEPT: list[tuple[tuple[TensorInfo, ...], dict[str, tuple[Any, ...]]]] = [((), {})]


def elements(tensors: Iterable[TensorInfo]) -> int:
    """The elements of `tensors`, all told (100,000 tensors: their shapes read in one pass, `prod` and `sum` in C)."""
    return sum(map(prod, [t.shape for t in tensors]))


@record(frozen=True, slots=True)
class RoleMatch:
    """What one tensor is: its layer, its role in that layer, and the rule that said so.

    `role` is a `inspector.roles.Role` value, or "unmatched" when no rule explains the tensor.
    """

    name: str
    layer: str
    role: str
    param: str | None
    rule_id: str


@record(frozen=True, slots=True)
class LayerCheck:
    """One layer of an expectation: what the formula says against what the file holds."""

    layer: str
    kind: str
    expected: int
    found: int
    status: str  # "ok", "mismatch", "missing", "unexpected", "tied"
    explanation: str = ""


CHECKED = frozenset({"ok", "tied"})  # the statuses of a layer the formula and the file agree on


@record(frozen=True, slots=True)
class Expectation:
    """An architecture (inferred, read from the file's config, or stated with --expect) and its check."""

    source: str  # "inferred", "config" or "stated"
    architecture: str
    hyperparameters: Mapping[str, Any]
    total: int  # the analytic count
    found: int  # the checkpoint's parameter count
    layers: tuple[LayerCheck, ...]
    notes: tuple[str, ...] = ()
    # the layers whose differences the file's own facts do not explain (a warning); the others differ only where the
    # formula is a reading of the file itself (an inferred family's module it lacks, a size it does not assume, a
    # module a layer holds instead): explained in words, not a warning
    anomalies: tuple[str, ...] = ()

    @property
    def matches(self) -> bool:
        # (one pass: a report of 100,000 layers asks this three times)
        return self.total == self.found and CHECKED.issuperset([c.status for c in self.layers])

    @property
    def explained(self) -> bool:
        """Differs, and every difference is explained by the file's own facts."""
        return not self.matches and not self.anomalies
