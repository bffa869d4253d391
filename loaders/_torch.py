"""What the PyTorch loaders share: persistent ids, walking the unpickled object, sections, kinds, regions.

The object `torch.save` pickled is walked for tensors: dict keys, list indices and the state of
placeholder objects (a pickled `nn.Module` keeps `_parameters`, `_buffers` and `_modules` dicts) give
each tensor its dotted name, as `state_dict()` would. Top-level keys of a training checkpoint label
sections (`SECTIONS`): the model's tensors are parameters, optimizer state is optimizer state, EMA
copies, schedulers, scalers and RNG state are other training state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from itertools import islice, repeat
from math import prod
from operator import mul, sub

from inspector.probe import Probe
from inspector.records import Checkpoint, Finding, Region, RegionKind, Severity, TensorInfo, TensorKind
from loaders._pickle import Call, PickleError, Result, StorageRef, StorageType, TensorRef, itemsize, key_name
from loaders._pickle_builders import NUMPY_ARRAY_BUILDERS
from loaders._pickle_policy import WEIGHTS_ONLY_GLOBALS
from loaders._pickle_values import ITEMSIZES
from loaders.base import single_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    Array = TypeVar("Array")  # what `walk`'s `array` makes of an array's call (`loaders._numpy_pickle.Array`)

MAX_DEPTH = 200
MAX_WALK = 5_000_000
MAX_LISTED = 20  # callables and globals named in one finding
ROOT_NAME = "tensor"  # the name of a tensor saved on its own (torch.save(t, f))
ARRAY_ROOT_NAME = "array"  # and of a numpy array pickled on its own

# Top-level keys of training checkpoints -> (section, kind of the tensors under them).
SECTIONS: Mapping[str, tuple[str, TensorKind]] = {
    **{
        k: ("model", TensorKind.PARAMETER)
        for k in (
            "model",
            "state_dict",
            "model_state_dict",
            "model_state",
            "net",
            "network",
            "module",
            "weights",
            "params",
            "model_state_dicts",
        )
    },
    **{
        k: ("ema", TensorKind.OTHER) for k in ("ema", "model_ema", "ema_state_dict", "ema_model", "shadow", "swa_model")
    },
    **{
        k: ("optimizer", TensorKind.OPTIMIZER)
        for k in (
            "optimizer",
            "optimizer_state_dict",
            "optim",
            "opt",
            "optimizer_state",
            "optimizers",
            "optimizer_states",
        )
    },
    **{
        k: ("scheduler", TensorKind.OTHER)
        for k in ("scheduler", "lr_scheduler", "scheduler_state_dict", "lr_schedulers")  # (Lightning: ..._states, ...s)
    },
    **{k: ("scaler", TensorKind.OTHER) for k in ("scaler", "grad_scaler", "amp", "scaler_state_dict")},
    **{k: ("rng", TensorKind.OTHER) for k in ("rng_state", "rng", "cuda_rng_state", "torch_rng_state", "rng_states")},
}
# Files that are one section as a whole, told by their top-level keys (those it must have, those it may have): an
# optimizer's own state_dict() (transformers Trainer's optimizer.pt, accelerate's optimizer.bin), the random states
# a Trainer saves beside a checkpoint (rng_state.pth: Python's, numpy's and torch's per device) and accelerate's
# save_state (random_states_N.pkl)
DEVICES = ("cuda", "mps", "xpu", "npu", "hpu", "mlu", "musa", "sdaa", "neuron")
WHOLE_SECTIONS: tuple[tuple[frozenset[str], frozenset[str], tuple[str, TensorKind]], ...] = (
    (frozenset({"state", "param_groups"}), frozenset({"state", "param_groups"}), ("optimizer", TensorKind.OPTIMIZER)),
    (
        frozenset({"python", "numpy", "cpu"}),
        frozenset({"python", "numpy", "cpu", "xla", "step", *DEVICES}),
        ("rng", TensorKind.OTHER),
    ),
    (
        frozenset({"random_state", "numpy_random_seed", "torch_manual_seed"}),
        frozenset({"random_state", "numpy_random_seed", "torch_manual_seed", "step", "xm_seed"})
        | {f"torch_{device}_manual_seed" for device in DEVICES},
        ("rng", TensorKind.OTHER),
    ),
)
MODULE_DICTS = {"_parameters": TensorKind.PARAMETER, "_buffers": TensorKind.BUFFER, "_modules": None}
# A pickled nn.Module's other attributes (`self.stride = torch.zeros(3)`: ultralytics' Detect head) are neither its
# parameters nor its buffers: torch's parameters() and state_dict() leave them out
MODULE_ATTRIBUTE = TensorKind.OTHER
_new = object.__new__  # (a record made without its `__init__`: `PersistentLoader`)


class PersistentLoader:
    """The persistent_load for torch pickles: ('storage', type, key, location, numel[, view]) -> StorageRef.

    Storages are kept in `storages` (key -> StorageRef); `undo_point` lets the fast pickle path forget
    those a reading it gives up on added (`loaders._pickle_fast`).
    """

    __slots__ = ("storages", "named")

    def __init__(self, storages: dict[str, StorageRef]) -> None:
        self.storages = storages
        self.named: dict[str, Callable[[], Any]] = {}  # string ids a reader adds, and what each gives (`_pickle_fast`)

    def undo_point(self) -> Callable[[], None]:
        storages, known = self.storages, len(self.storages)

        def undo() -> None:
            for key in list(storages)[known:]:
                del storages[key]

        return undo

    def __call__(self, pid: Any) -> Any:
        if pid.__class__ is tuple and len(pid) == 5:  # the common case, in short
            tag, stype, key, location, numel = pid
            if (
                tag == "storage"
                and key.__class__ is str
                and location.__class__ is str
                and stype.__class__ is StorageType
                and numel.__class__ is int
                and numel >= 0
                and key not in self.storages
            ):
                # StorageRef(key, stype.dtype, stype.itemsize, location, numel), made without calling the class (a
                # call of a record class costs about 500 instructions more than its fields' stores: a storage a call)
                # (one store a statement: a tuple of them packed and unpacked was about 300 instructions more)
                ref = self.storages[key] = _new(StorageRef)
                ref.key = key  # type: ignore[misc]
                ref.dtype = stype.dtype  # type: ignore[misc]
                ref.itemsize = stype.itemsize or ITEMSIZES.get(stype.dtype, 1)  # type: ignore[misc]
                ref.location = location  # type: ignore[misc]
                ref.numel = numel  # type: ignore[misc]
                ref.view = None  # type: ignore[misc]
                return ref
        return self._load(pid)

    def _load(self, pid: Any) -> Any:
        if pid.__class__ is str and self.named:
            make = self.named.get(pid)
            if make is not None:
                return make()
        if not isinstance(pid, tuple) or not pid:
            raise PickleError(f"unexpected persistent id {type(pid).__name__}")
        if pid[0] == "module":  # a legacy whole-module file's class, with its source: torch gives the class
            return pid[1] if len(pid) > 1 else None
        if pid[0] != "storage" or len(pid) < 5:
            raise PickleError(f"unexpected persistent id {key_name(pid[0])[:80]!r}")
        stype, key, location, numel = pid[1], key_name(pid[2]), key_name(pid[3]), pid[4]
        if not isinstance(stype, StorageType) or not isinstance(numel, int) or numel < 0:
            raise PickleError(f"storage {key!r}: unknown storage type or size")
        view = pid[5] if len(pid) > 5 and isinstance(pid[5], tuple) else None
        if view is not None and not (len(view) == 3 and isinstance(view[1], int) and isinstance(view[2], int)):
            raise PickleError(f"storage {key!r}: malformed view")
        storages = self.storages
        ref = storages.get(key)
        if ref is None:
            ref = StorageRef(key, stype.dtype, itemsize(stype.dtype), location, numel)
            storages[key] = ref
        if view is not None and len(view) == 3:  # legacy view: (view key, element offset, size) of the root
            return StorageRef(
                key_name(view[0]), ref.dtype, ref.itemsize, location, int(view[2]), (key, int(view[1]), int(view[2]))
            )
        return ref


def persistent_loader(storages: dict[str, StorageRef]) -> PersistentLoader:
    """The persistent_load for torch pickles, keeping the storages it meets in `storages`."""
    return PersistentLoader(storages)


def walk(
    value: Any, array: Callable[[Call], Array | None] | None = None
) -> Iterator[tuple[str, TensorRef | Array, TensorKind | None]]:
    """Every tensor in the object with its dotted path and kind hint (from a module's _parameters/_buffers dict),
    depth first (dicts, lists, placeholder objects' state); with `array`, also every call it says makes an array
    (what it returns for it: a numpy array pickled inline, `loaders._numpy_pickle`), each time it is met.

    The tensors of a dict are given as they are met, until its first other value (a state dict: all of them);
    the order, the budget and the depth checks are those of pushing each on the stack and popping it again.
    """
    seen: set[int] = set()
    budget = MAX_WALK
    stack: list[tuple[Any, str, TensorKind | None, int]] = [(value, "", None, 0)]
    parameter = TensorKind.PARAMETER
    while stack:
        obj, path, hint, depth = stack.pop()
        budget -= 1
        if budget < 0 or depth > MAX_DEPTH:
            raise PickleError("object graph too large or too deep")
        if isinstance(obj, TensorRef):
            yield path or ROOT_NAME, obj, hint if hint is not None else (parameter if obj.is_parameter else None)
            continue
        if array is not None and obj.__class__ is Call:
            found = array(obj)
            if found is not None:
                yield path or ARRAY_ROOT_NAME, found, hint
                continue
        if isinstance(obj, (dict, list, tuple, Call)) and id(obj) in seen:
            continue
        if isinstance(obj, (dict, list, tuple, Call)):
            seen.add(id(obj))
        children: list[tuple[Any, str, TensorKind | None]] = []
        if isinstance(obj, dict):
            direct = depth < MAX_DEPTH  # its children pass the depth check: its tensors are given directly
            attribute = MODULE_ATTRIBUTE if "_parameters" in obj else hint  # (a module's state: its other attributes)
            for k, v in obj.items():
                key = k if k.__class__ is str else key_name(k)  # (a name: as it is, without a call)
                if key in MODULE_DICTS:  # nn.Module internals: names as state_dict() gives them
                    child_path, child_hint = path, MODULE_DICTS[key] or hint
                else:
                    child_path, child_hint = f"{path}.{key}" if path else key, attribute
                if direct and v.__class__ is TensorRef:
                    budget -= 1
                    if budget < 0:
                        raise PickleError("object graph too large or too deep")
                    if child_hint is None and v.is_parameter:
                        child_hint = parameter
                    yield child_path or ROOT_NAME, v, child_hint
                else:
                    direct = False
                    children.append((v, child_path, child_hint))
        elif isinstance(obj, (list, tuple)):
            children = [(v, f"{path}.{i}" if path else str(i), hint) for i, v in enumerate(obj)]
        elif isinstance(obj, Call):
            if isinstance(obj.state, (dict, list, tuple, Call, TensorRef)):
                children.append((obj.state, path, hint))
            children += [(a, path, hint) for a in obj.args if isinstance(a, (dict, list, tuple, Call, TensorRef))]
            children += [(a, path, hint) for a in obj.items]
        stack.extend((v, p, h, depth + 1) for v, p, h in reversed(children))


# The globals a pickled numpy array names (its builders): a pickle naming none holds none
ARRAY_GLOBALS = NUMPY_ARRAY_BUILDERS.keys()
ARRAY_NOTE = "a numpy array in the pickle: not a torch tensor (torch counts no parameter of it)"


def pickled_arrays(result: Result, base: int | None) -> list[TensorInfo]:
    """The numpy arrays a torch pickle holds inline (numpy's random state in a Trainer's rng_state.pth, statistics a
    checkpoint keeps as arrays), at `base` + where their bytes lie in the pickle (None: no offsets, a deflated
    data.pkl): other state, as torch counts only its own tensors (`loaders._numpy_pickle`).

    Raises:
        PickleError: the value graph is too large or too deep to walk.
    """
    if ARRAY_GLOBALS.isdisjoint(result.globals):
        return []
    from loaders import _numpy_pickle  # (pickles naming numpy only)

    return _numpy_pickle.tensors(result.value, result.located, base, TensorKind.OTHER, ARRAY_NOTE)


# The scalars a checkpoint keeps beside its tensors, shown as attributes (`checkpoint_values`)
VALUES_PREFIX = "checkpoint."
MAX_VALUES = 40  # attributes of them at most
MAX_TOP_KEYS = 256  # a top-level dict of more keys is a state dict: its values are tensors
MAX_VALUE_TEXT = 120  # characters of a string value shown
MAX_LISTED_VALUES = 16  # items of a list of scalars shown


def _text(value: Any, nested: bool = False) -> str | None:
    """A scalar's text (a short list of them too), or None for anything else: a tensor, a structure, a number too
    large to print in bounded time. Text a terminal would act on is shown escaped."""
    if value is None or isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value) if value.bit_length() <= 64 else None
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        text = value if len(value) <= MAX_VALUE_TEXT else value[:MAX_VALUE_TEXT] + "..."
        return text if text.isprintable() else repr(text)
    if isinstance(value, (list, tuple)) and not nested and len(value) <= MAX_LISTED_VALUES:
        items = [_text(v, True) for v in value]
        return None if None in items else "[" + ", ".join(items) + "]"  # type: ignore[arg-type]
    return None


def checkpoint_values(value: Any) -> dict[str, str]:
    """The scalars a training checkpoint keeps beside its tensors, as text by dotted key: its top-level ones (epoch,
    step, versions) and those of a top-level dict of scalars (the model's own hyperparameters: openai-whisper's
    `dims`, nanoGPT's `model_args`, Lightning's `hyper_parameters`), at most `MAX_VALUES`; none for a state dict. Read
    from what the pickle built, never by calling anything."""
    if not isinstance(value, dict) or len(value) > MAX_TOP_KEYS:  # (the fast reader's dicts are a subclass)
        return {}
    if set(map(type, value.values())) == {TensorRef}:
        return {}  # (a state dict: its values all tensors, told in C calls)
    out: dict[str, str] = {}
    for key, item in value.items():
        name = key_name(key)
        name = name if name.isprintable() else repr(name)
        text = _text(item)
        if text is not None:
            out[VALUES_PREFIX + name] = text
        elif isinstance(item, dict) and len(item) <= MAX_VALUES:
            texts = [(key_name(k), _text(v)) for k, v in item.items()]
            out.update(
                (f"{VALUES_PREFIX}{name}.{k if k.isprintable() else repr(k)}", t) for k, t in texts if t is not None
            )
        if len(out) >= MAX_VALUES:
            return dict(list(out.items())[:MAX_VALUES])
    return out


def _is_tensor(value: Any) -> bool:
    return isinstance(value, TensorRef)


def section_kinds(value: Any, is_tensor: Callable[[Any], bool] = _is_tensor) -> dict[str, tuple[str, TensorKind]]:
    """Section of each top-level key, when the object is a training checkpoint: a section key holds a state dict,
    a module or a list of them; a state dict whose own tensor is named `weights` (timm's EfficientViM) is none; a
    file that is one section as a whole (`WHOLE_SECTIONS`) is that section. (`is_tensor`: what a tensor is in the
    object: a torch tensor, or a pickled numpy array, `loaders._numpy_pickle`.)"""
    if not isinstance(value, dict):
        return {}
    if len(value) <= 16:
        keys = set(map(key_name, value))
        for required, allowed, section in WHOLE_SECTIONS:
            if required <= keys <= allowed:
                return dict.fromkeys(keys, section)
    named = SECTIONS.keys() & value.keys() if set(map(type, value)) == {str} else None  # (keys all names: no pass)
    if named is not None and not any(not is_tensor(value[k]) for k in named):
        return {}
    if named is None and not any(
        (k if k.__class__ is str else key_name(k)) in SECTIONS and not is_tensor(v) for k, v in value.items()
    ):
        return {}
    return {name: SECTIONS.get(name, (name, TensorKind.OTHER)) for name in map(key_name, value)}


_ONES = repeat(1)  # (shared: it never ends)


def _span(shape: tuple[int, ...], stride: tuple[int, ...]) -> int:
    """Elements from the first to one past the last element the tensor touches: 1 + sum((d - 1) * s)."""
    return 0 if 0 in shape else 1 + sum(map(mul, map(sub, shape, _ONES), stride))


def build_tensors(value: Any, data_offsets: Mapping[str, int]) -> tuple[list[TensorInfo], list[Finding]]:
    """TensorInfos with kinds, sections, aliases and absolute offsets (`data_offsets`: storage key -> offset)."""
    sections = section_kinds(value)
    whole = None if sections else state_dict_tensors(value, data_offsets)
    if whole is not None:
        return whole, []
    return walked_tensors(value, data_offsets, sections), []


def _contiguous(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The stride of a contiguous tensor of `shape` (row-major: each dimension's step the product of those after)."""
    stride = []
    step = 1
    for d in reversed(shape):
        stride.append(step)
        step *= d
    return tuple(reversed(stride))


def state_dict_tensors(value: Any, data_offsets: Mapping[str, int]) -> list[TensorInfo] | None:
    """The tensors of a state dict (names -> tensors: most large files) when each is the whole of a storage of its
    own, contiguous from its start: one short step a tensor, no walk; None for any other value, which
    `walked_tensors` reads. What it gives is what `walked_tensors` gives for the same value
    (tests/test_torch_state_dict.py): the walk's order and names (the keys, none of them a module's internal dict
    nor empty), parameters outside any section, no alias, no note, no span."""
    if not isinstance(value, dict) or not 0 < len(value) < MAX_WALK or set(map(type, value)) != {str}:
        return None
    if "" in value or not value.keys().isdisjoint(MODULE_DICTS):
        return None
    kinds = list(map(type, value.values()))
    count = kinds.count(TensorRef)  # its tensors first, then what holds none (nn.Module.state_dict()'s `_metadata`)
    if not count or kinds[:count].count(TensorRef) != count or count < len(kinds) and _holds_tensors(value, count):
        return None
    tensors: list[TensorInfo] = []
    append, at, itemsizes, parameter = tensors.append, data_offsets.get, ITEMSIZES.get, PARAMETER
    keys: set[str] = set()
    add = keys.add
    shapes: dict[tuple[int, ...], tuple[tuple[int, ...], int]] = {}  # shape -> its contiguous stride, its elements
    for name, t in islice(value.items(), count):
        storage, shape, dtype = t.storage, t.shape, t.dtype
        if storage.__class__ is not StorageRef or storage.view is not None or t.offset:
            return None
        known = shapes.get(shape)
        if known is None:
            known = shapes[shape] = _contiguous(shape), prod(shape)
        stride, elements = known
        key = storage.key
        offset = at(key)
        nbytes = elements * itemsizes(dtype, 1)
        if offset is None or t.stride != stride or storage.numel * storage.itemsize != nbytes:
            return None  # (not in the file, strided, or a part of its storage: the loop tells which)
        add(key)
        # TensorInfo(name, shape, dtype, nbytes, offset, key, None, PARAMETER, True, "", None, None, 0, (), None, None),
        # as the loop makes it, its fields stored without the call of its class (about 1,300 instructions less a tensor)
        info: Any = _new(TensorInfo)
        info.name = name
        info.shape = shape
        info.dtype = dtype
        info.nbytes = nbytes
        info.offset = offset
        info.storage = key
        info.alias_of = None
        info.kind = parameter
        info.trainable = True
        info.section = ""
        info.layer = None
        info.param = None
        info.file = 0
        info.notes = ()
        info.span = None
        info.use = None
        append(info)
    return tensors if len(keys) == len(tensors) else None  # (a storage two tensors': aliases, the loop's)


PARAMETER = TensorKind.PARAMETER


def _holds_tensors(value: dict[str, Any], start: int) -> bool:
    """Whether the walk meets a tensor (or fails) in the values of `value` from its `start`th on."""
    try:
        return next(walk(dict(islice(value.items(), start, None))), None) is not None
    except PickleError:
        return True  # (the walk's own error, from `walked_tensors`)


def walked_tensors(
    value: Any, data_offsets: Mapping[str, int], sections: dict[str, tuple[str, TensorKind]]
) -> list[TensorInfo]:
    """`build_tensors` of any value: its tensors as `walk` meets them, each in its section."""
    tensors: list[TensorInfo] = []
    # The first tensor of each (root, offset, shape, stride, dtype): a later one is its alias. A root's first tensor is
    # remembered by its index (no key made and hashed a tensor); a root met again keys its tensors (`first`)
    first: dict[tuple[Any, ...], str] = {}
    roots: dict[Any, int] = {}  # root -> index of its first tensor, or -1 once its tensors are keyed in `first`
    strides: list[tuple[int, ...]] = []  # each tensor's stride, by index
    plain = ("", TensorKind.PARAMETER)
    buffer, append, info, itemsizes = TensorKind.BUFFER, tensors.append, TensorInfo, ITEMSIZES.get
    attribute = MODULE_ATTRIBUTE
    for path, t, hint in walk(value):
        storage, shape, dtype = t.storage, t.shape, t.dtype
        section, kind = sections.get(path.split(".", 1)[0], plain) if sections else plain
        if hint is buffer:  # a module's _buffers; names decide in inspector.kinds
            kind = buffer
        elif hint is attribute:  # a module's attribute outside its parameters and buffers
            kind = attribute
        size = itemsizes(dtype, 1)  # itemsize(dtype)
        n = prod(shape)
        notes: tuple[str, ...] = ()
        offset = span = key = None
        if storage is None:
            notes = ("meta tensor: no data stored",)
            root: Any = id(t)
        else:
            key, view = storage.key, storage.view
            root = view[0] if view else key
            base = view[1] * storage.itemsize if view else 0
            at = data_offsets.get(root)
            if at is None:
                raise PickleError(f"tensor {path!r} refers to storage {root!r}, which the file does not hold")
            offset = at + base + t.offset * size if base or t.offset else at  # (the offset's int, shared)
            stride = t.stride
            ndim = len(shape)
            if ndim == 1 == len(stride):  # (_span of a vector or a matrix, in line: most tensors of a large file)
                span_bytes = (1 + (shape[0] - 1) * stride[0] if shape[0] else 0) * size
            elif ndim == 2 == len(stride):
                rows, cols = shape
                span_bytes = (1 + (rows - 1) * stride[0] + (cols - 1) * stride[1] if rows and cols else 0) * size
            else:
                span_bytes = _span(shape, stride) * size
            stored = storage.numel * storage.itemsize  # storage.nbytes
            if t.offset * size + span_bytes > stored + base and n:
                raise PickleError(f"tensor {path!r} reaches past the end of its storage {root!r}")
            if span_bytes != n * size:
                span = span_bytes
            if 0 in t.stride and n > 1:
                notes = (f"stride-0 expand: {span_bytes:,} bytes stored for {n * size:,} logical",)
            elif stored > n * size:
                notes = (f"view of storage {root!r}: {stored:,} bytes stored for {n * size:,}",)
        alias_of = None
        index = roots.get(root)
        if index is None:
            roots[root] = len(tensors)
        else:
            if index >= 0:  # the root's second tensor: its first one keyed now
                earlier = tensors[index]
                first[root, earlier.offset, earlier.shape, strides[index], earlier.dtype] = earlier.name
                roots[root] = -1
            alias_key = (root, offset, shape, t.stride, dtype)
            alias_of = first.get(alias_key)
            if alias_of is None:
                first[alias_key] = path
        strides.append(t.stride)
        # TensorInfo(name, shape, dtype, nbytes, offset, storage, alias_of, kind, trainable, section, layer, param,
        # file, notes, span), positionally: a call per tensor
        append(
            info(path, shape, dtype, n * size, offset, key, alias_of, kind, True, section, None, None, 0, notes, span)
        )
    return tensors


def by_storage(tensors: list[TensorInfo]) -> dict[str, list[TensorInfo]]:
    """Tensors grouped by the storage they live in (addressable ones only)."""
    out: dict[str, list[TensorInfo]] = {}
    for t in tensors:
        if t.offset is not None and t.storage is not None:
            out.setdefault(t.storage, []).append(t)
    return out


STORAGE = "storage %s"  # a storage's bytes (a `Region` text: the storage key, quoted, its subject)
UNUSED_BYTES = "storage %s: no tensor uses these bytes"


def storage_regions(key: str, start: int, length: int, tensors: list[TensorInfo], file: int = 0) -> list[Region]:
    """TENSOR_DATA where `tensors` (those of this storage) reach, UNREFERENCED for the rest of it."""
    if len(tensors) == 1:  # the common case: one tensor, the whole storage (its span_bytes, without the property)
        t = tensors[0]
        if t.offset == start and (t.nbytes if t.span is None else t.span) == length:
            return [Region(RegionKind.TENSOR_DATA, start, length, STORAGE, file, None, repr(key))]
    subject = repr(key)  # (the labels' subject: made when a label is read)
    spans = sorted((t.offset, t.offset + t.span_bytes) for t in tensors if t.offset is not None)
    regions: list[Region] = []
    pos = start
    for s, e in spans:
        s, e = max(s, start), min(e, start + length)
        if e <= pos:
            continue
        if s > pos:
            regions.append(Region(RegionKind.UNREFERENCED, pos, s - pos, UNUSED_BYTES, file, None, subject))
            pos = s
        regions.append(Region(RegionKind.TENSOR_DATA, pos, e - pos, STORAGE, file, None, subject))
        pos = e
    if pos < start + length:
        regions.append(Region(RegionKind.UNREFERENCED, pos, start + length - pos, UNUSED_BYTES, file, None, subject))
    return regions


def unsafe_finding(unsafe: set[str] | frozenset[str]) -> list[Finding]:
    if not unsafe:
        return []
    return [Finding("UNSAFE_CONTENT", Severity.ERROR, f"the pickle would call {_listed(unsafe)}: not run",
                    tuple(sorted(unsafe)[:MAX_LISTED]))]  # fmt: skip


def _listed(names: set[str] | frozenset[str] | list[str]) -> str:
    """The first `MAX_LISTED` names, and how many more: a pickle can name thousands."""
    ordered = sorted(names)
    more = f" and {len(ordered) - MAX_LISTED:,} more" if len(ordered) > MAX_LISTED else ""
    return ", ".join(ordered[:MAX_LISTED]) + more


def refused(probe: Probe, fmt: str, unsafe: set[str], exc: BaseException, framework: str = "pytorch") -> Checkpoint:
    """The report of a file that names unsafe callables but cannot be read to the end: the evidence wins.

    CPython's unpickler is more lenient than ours in places (frames, odd opcodes), so a payload followed
    by something we cannot finish (deep nesting, a missing storage, a corrupt tail) may still run under
    torch.load. It is reported as UNSAFE_CONTENT (exit 3), with what could not be read, never as corrupt.
    """
    reason = getattr(exc, "reason", None) or f"{type(exc).__name__}: {str(exc)[:200]}"
    unread = Finding("UNREADABLE", Severity.ERROR, f"the rest of the file was not read: {reason}")
    return single_file(probe, fmt, framework, (), (), {"pickle.verdict": "unsafe, not read to the end"},
                       [*unsafe_finding(unsafe), unread])  # fmt: skip


# What the function that loads a file does with the globals outside torch's weights-only allow-list, in words
LOADED_BY = {
    "torch.load": "torch.load refuses them with weights_only=True (its default since torch 2.6) and imports and "
    "builds them with weights_only=False",
    "torch.jit.load": "TorchScript's classes, which torch.jit.load compiles from the archive's own code (torch.load "
    "refuses a TorchScript archive with weights_only=True)",
    "pickle.load": "pickle.load imports and builds them",
}


def globals_finding(names: set[str], loaded_by: str = "torch.load") -> list[Finding]:
    """Globals outside PyTorch's own weights-only allow-list (`WEIGHTS_ONLY_GLOBALS`: torch.load(weights_only=True),
    its default, refuses them), and what `loaded_by` (a `LOADED_BY` key) does with them."""
    odd = sorted(names - WEIGHTS_ONLY_GLOBALS)
    if not odd:
        return []
    return [
        Finding(
            "PICKLE_GLOBALS",
            Severity.INFO,
            f"the pickle names {_listed(odd)}: kept as inert placeholders here; {LOADED_BY[loaded_by]}",
            tuple(odd[:MAX_LISTED]),
        )
    ]
