"""What the restricted pickle reader interprets itself: data builders and checked trampolines.

`BUILDERS` are pure functions of inert values for the callables torch, numpy and Python's own pickling
write for data (tensor rebuilds, TorchScript's typed lists, containers, bytes). `TRAMPOLINES` are
callables that call one of their arguments (`_rebuild_from_type_v2(func, ...)` calls `func`,
`copyreg._reconstructor` calls `base.__init__`...): each checks that argument and flags what would run.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from functools import partial

from loaders._pickle_policy import (
    CLASS_METHODS,
    CYTHON_UNPICKLERS,
    NUMPY_BIT_GENERATORS,
    NUMPY_RANDOM,
    PICKLED_ARGUMENTS,
    SAFE_ARRAY_TYPES,
    SAFE_BASES,
    SAFE_ENCODINGS,
    SAFE_FACTORIES,
    STORED_TZINFO,
    dunder_keys,
    hidden_methods,
    hook_keys,
    sets_attributes,
)
from loaders._pickle_values import (
    ITEMSIZES,
    MAX_NAME,
    STORAGE_DTYPES,
    TORCH_DTYPES,
    Blob,
    Call,
    DTypeRef,
    Global,
    PickleError,
    StorageRef,
    StorageType,
    TensorRef,
    callable_name,
    key_name,
    safe_key,
)
from loaders.base import MAX_DIMS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol

    class Machine(Protocol):
        """What a trampoline needs of the interpreter: to flag a callable, and to model a nested call."""

        def flag(self, what: str) -> None: ...

        def call(self, func: Any, args: tuple[Any, ...]) -> Any: ...


def _tensor_v2(
    storage: Any, offset: Any, size: Any, stride: Any, requires_grad: Any = False, hooks: Any = None, *rest: Any
) -> TensorRef:  # (`hooks` named: torch's six arguments make no tuple of the rest)
    if storage.__class__ is not StorageRef and not isinstance(storage, StorageRef):  # (the class first: no call)
        raise PickleError("tensor rebuild without a storage")
    ndim = len(size)
    if ndim > MAX_DIMS or len(stride) > MAX_DIMS:  # (before reading them: a pickle may pass one long size often)
        raise PickleError(f"tensor of more than {MAX_DIMS} dimensions")
    if offset.__class__ is not int and not isinstance(offset, int):
        raise PickleError(f"tensor storage offset is a {type(offset).__name__}")
    # the common case of `_ints`, in line: tuples of plain ints, a vector's and a matrix's told item by item (most
    # tensors: no set made of their types, about 2,000 instructions a tensor less)
    if not (
        size.__class__ is tuple is stride.__class__
        and (
            ndim == 1 == len(stride)
            and size[0].__class__ is int is stride[0].__class__
            or ndim == 2 == len(stride)
            and size[0].__class__ is int is size[1].__class__
            and stride[0].__class__ is int is stride[1].__class__
            or _ONLY_INTS(map(type, size))
            and _ONLY_INTS(map(type, stride))
        )
    ):
        size, stride = _ints(size), _ints(stride)
    # TensorRef(storage, offset, size, stride, storage.dtype, False, requires_grad is True), made without calling the
    # class (a call of a record class costs about 500 instructions more than its fields' stores: a tensor a call)
    # (one store a statement: a tuple of them packed and unpacked was about 400 instructions more)
    t = _new(TensorRef)
    t.storage = storage
    t.offset = offset
    t.shape = size
    t.stride = stride
    t.dtype = storage.dtype
    t.is_parameter = False
    t.requires_grad = requires_grad is True
    t.attributes = False
    return t


def _tensor_v3(
    storage: Any, offset: Any, size: Any, stride: Any, requires_grad: Any, hooks: Any, dtype: Any, *rest: Any
) -> TensorRef:
    t = _tensor_v2(storage, offset, size, stride, requires_grad)
    if isinstance(dtype, DTypeRef):
        t.dtype = dtype.dtype
    return t


def _tensor_old(storage: Any, offset: Any, size: Any, stride: Any) -> TensorRef:
    return _tensor_v2(storage, offset, size, stride)


def _parameter(tensor: Any, requires_grad: Any = True, *rest: Any) -> Any:
    if isinstance(tensor, TensorRef):
        tensor.is_parameter = True
        tensor.requires_grad = requires_grad is True
    return tensor


def _meta(dtype: Any, size: Any, stride: Any, requires_grad: Any = False, *rest: Any) -> TensorRef:
    name = dtype.dtype if isinstance(dtype, DTypeRef) else "F32"
    return TensorRef(None, 0, _ints(size), _ints(stride), name, False, requires_grad is True)


def _qtensor(storage: Any, offset: Any, size: Any, stride: Any, *rest: Any) -> TensorRef:
    return _tensor_v2(storage, offset, size, stride)


_new = object.__new__  # (a record made without its `__init__`: `_tensor_v2`)
_ONLY_INTS = frozenset({int}).issuperset  # of the types of a tuple's items: plain ints only (the common case, fast)


def _ints(value: Any) -> tuple[int, ...]:
    if value.__class__ is tuple and _ONLY_INTS(map(type, value)):
        return value  # type: ignore[no-any-return]
    if not isinstance(value, (tuple, list)) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise PickleError(f"expected a tuple of ints, got {type(value).__name__}")
    return tuple(value)


def _pairs(value: Any) -> dict[Any, Any]:
    """A dict from a dict or an iterable of pairs (what dict() and OrderedDict() accept)."""
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, (list, tuple)):
        return {safe_key(p[0]): p[1] for p in value if isinstance(p, (list, tuple)) and len(p) == 2}
    return {}


def _first(args: tuple[Any, ...]) -> Any:
    return args[0] if args else ()


def _device(*args: Any) -> str:
    return ":".join(key_name(a) for a in args[:2])


def _identity(value: Any = None, *rest: Any) -> Any:
    return value


def _collection(kind: type) -> Callable[..., Any]:
    def build(*args: Any) -> Any:
        items = _first(args)
        if not isinstance(items, (list, tuple, set, frozenset, str, bytes)):
            raise TypeError(f"{kind.__name__}() of a {type(items).__name__}")
        return kind(safe_key(v) for v in items) if kind in (set, frozenset) else kind(items)

    return build


def _range(*args: Any) -> tuple[Any, ...]:
    if not all(isinstance(a, int) for a in args[:3]):
        raise TypeError("range() of non-integers")
    return ("range", *args[:3])


def _bytes(*args: Any) -> bytes:
    """bytes(), bytes(b), bytes([ints]): never bytes(n), which would allocate n bytes."""
    value = _first(args)
    if value == ():
        return b""
    if isinstance(value, bytes):
        return value
    if isinstance(value, list) and all(isinstance(v, int) and 0 <= v < 256 for v in value):
        return bytes(value)
    raise TypeError(f"bytes() of a {type(value).__name__}")


def _bytearray(*args: Any) -> bytes:
    value = _first(args)
    if isinstance(value, str):
        return value.encode("latin1", "replace")
    return value if isinstance(value, bytes) else b""  # never bytearray(n): an int would allocate n bytes


# Callables the reader interprets itself, as pure functions of inert values (they run nothing of the file's).
BUILDERS: dict[str, Callable[..., Any]] = {
    "torch._utils._rebuild_tensor_v2": _tensor_v2,
    "torch._utils._rebuild_tensor_v3": _tensor_v3,
    "torch._utils._rebuild_tensor": _tensor_old,
    "torch._utils._rebuild_parameter": _parameter,
    "torch._utils._rebuild_meta_tensor_no_storage": _meta,
    "torch._utils._rebuild_qtensor": _qtensor,
    # TorchScript archives wrap typed lists and tagged values in these (torch/jit/_pickle.py): data only
    "torch.jit._pickle.build_intlist": _identity,
    "torch.jit._pickle.build_doublelist": _identity,
    "torch.jit._pickle.build_boollist": _identity,
    "torch.jit._pickle.build_tensorlist": _identity,
    "torch.jit._pickle.restore_type_tag": _identity,
    "collections.OrderedDict": lambda *a: _pairs(_first(a)),
    "builtins.dict": lambda *a: _pairs(_first(a)),
    "torch.Size": lambda *a: tuple(_first(a)),
    "torch.device": _device,
    "builtins.set": _collection(set),
    "builtins.frozenset": _collection(frozenset),
    "builtins.tuple": _collection(tuple),
    "builtins.list": _collection(list),
    "builtins.bytearray": _bytearray,
    "builtins.complex": lambda *a: complex(*(float(x) for x in a[:2] if isinstance(x, (int, float)))),
    "builtins.slice": lambda *a: ("slice", *a[:3]),
    "builtins.range": _range,
    "builtins.bytes": _bytes,
}
# Inert data placeholders a builder-free call may produce (kept as `Call`s, not flagged).
INERT_DATA = frozenset({"torch.jit._pickle.build_tensor_from_id"})


def resolve(g: Global) -> Any:
    """What a GLOBAL stands for: a storage type, a dtype, or the inert `Global` itself."""
    if g.module in ("torch", "torch.storage") and g.name in STORAGE_DTYPES:
        dtype = STORAGE_DTYPES[g.name]
        return StorageType(dtype, g.qualname, ITEMSIZES.get(dtype, 1))
    if g.module == "torch" and g.name.endswith("Tensor") and g.name[:-6] + "Storage" in STORAGE_DTYPES:
        dtype = STORAGE_DTYPES[g.name[:-6] + "Storage"]
        return StorageType(dtype, g.qualname, ITEMSIZES.get(dtype, 1))  # tar format tensor types
    if g.module == "torch" and g.name in TORCH_DTYPES:
        return DTypeRef(TORCH_DTYPES[g.name], g.qualname)
    return g


# -- trampolines: functions that call one of their arguments ---------------------------------------


def _pad(args: tuple[Any, ...], n: int) -> tuple[Any, ...]:
    return tuple(args[:n]) + (None,) * (n - len(args))


def foreign(value: Any) -> str | None:
    """How `value` is more than data to a callable that uses it, or None: an object of a class the pickle chose
    (NEWOBJ, copyreg) runs that class's methods (`itertools.starmap` calls a function when iterated), and one whose
    state set attributes (BUILD) has methods the pickle chose (`dict(x)` calls `x.keys()`, `Parameter(x)` calls
    `x.detach()`: instance attributes). Objects that calls of flagged callables made are flagged where made."""
    if isinstance(value, TensorRef):
        return "a tensor given attributes by its state" if value.attributes else None
    if not isinstance(value, Call):
        return None
    if value.newobj:
        return f"an object of {callable_name(value.func)}"
    if sets_attributes(value.state):
        return f"{callable_name(value)} given attributes by its state"
    return None


def check_arguments(m: Machine, name: str, args: tuple[Any, ...], pairs: Any = ()) -> None:
    """Flag the call of `name` when an argument is more than data (`foreign`): the callable would use its methods.
    `pairs`: an iterable whose every item the callable reads as a (key, value) pair (dict(pairs) iterates each).
    A datetime's tzinfo after its bytes state is only stored (`STORED_TZINFO`)."""
    if name in STORED_TZINFO and args and isinstance(args[0], (bytes, str)):
        args = args[:1] + args[2:]
    items = pairs if isinstance(pairs, (list, tuple)) else ()
    for value in (*args, *items):
        how = foreign(value)
        if how is not None:
            m.flag(f"{name[:MAX_NAME]} of {how[:MAX_NAME]} (its methods run)")
            return


def check_state(m: Machine, state: Any, target: str, mapping: bool = False, tensor: bool = False) -> None:
    """Flag the attributes a state sets that choose what runs: dunders, on a `mapping` (an OrderedDict, held as a
    dict) the names of its methods (`MAPPING_METHODS`), on a `tensor` its hooks (`TENSOR_HOOKS`)."""
    for key in dunder_keys(state) + (hidden_methods(state) if mapping else []) + (hook_keys(state) if tensor else []):
        m.flag(f"setattr({target}, {key[:MAX_NAME]!r}) by its state")


def _from_type(m: Machine, args: tuple[Any, ...]) -> Any:
    """torch._tensor._rebuild_from_type_v2(func, new_type, args, state) calls func(*args), then sets state."""
    func, new_type, inner, state = _pad(args, 4)
    value = m.call(func, tuple(inner) if isinstance(inner, (tuple, list)) else (inner,))
    check_state(m, state, callable_name(new_type), isinstance(value, dict), isinstance(value, TensorRef))
    return _given_attributes(value, state)


def _given_attributes(value: Any, state: Any) -> Any:
    """`value` once `torch._utils._set_obj_state` has set a state's attributes on it: a callable that uses it later
    may call them (`Parameter(x)` calls `x.detach()`), so it is no longer data (`foreign`)."""
    if sets_attributes(state):
        if isinstance(value, TensorRef):
            value.attributes = True
        elif isinstance(value, Call) and value.state is None:
            value.state = state
    return value


def _parameter_with_state(m: Machine, args: tuple[Any, ...]) -> Any:
    """torch._utils._rebuild_parameter_with_state(data, requires_grad, hooks, state): setattr for each key."""
    data, requires_grad, _hooks, state = _pad(args, 4)
    check_state(m, state, "a Parameter", tensor=True)
    check_arguments(m, "torch._utils._rebuild_parameter_with_state", (data,))  # (Parameter(data) calls data.detach())
    return _given_attributes(_parameter(data, requires_grad), state)


def _reconstructor(m: Machine, args: tuple[Any, ...]) -> Any:
    """copyreg._reconstructor(cls, base, state) calls base.__new__(cls, state) and base.__init__(obj, state)."""
    cls, base, state = _pad(args, 3)
    if not (isinstance(base, Global) and base.qualname in SAFE_BASES):
        m.flag(f"{callable_name(base)}.__init__ (called by copyreg._reconstructor)")
    check_arguments(m, f"{callable_name(base)}.__init__", (state,))  # (list.__init__(obj, state) iterates it)
    return Call(cls, (), newobj=True)


def _np_reconstruct(m: Machine, args: tuple[Any, ...]) -> Any:
    """numpy's _reconstruct(subtype, shape, dtype) runs ndarray.__new__(subtype), with the subtype's hooks."""
    subtype = _pad(args, 1)[0]
    if not (isinstance(subtype, Global) and subtype.qualname in SAFE_ARRAY_TYPES):
        m.flag(f"{callable_name(subtype)} (array type built by numpy _reconstruct)")
    check_arguments(m, "numpy _reconstruct", args[1:])
    return Call(Global("numpy.core.multiarray", "_reconstruct"), args)


def _np_frombuffer(m: Machine, args: tuple[Any, ...]) -> Any:
    """numpy's _frombuffer(buffer, dtype, shape, order) (protocol 5's arrays) reads the buffer an object exports: inert
    on bytes (BYTEARRAY8 in-band), not on an object the pickle built (its buffer hook would run)."""
    buffer = _pad(args, 1)[0]
    if not isinstance(buffer, (bytes, Blob)):
        m.flag(f"{callable_name(buffer)} (a buffer read by numpy _frombuffer)")
    return Call(Global("numpy.core.numeric", "_frombuffer"), args)


def _defaultdict(m: Machine, args: tuple[Any, ...]) -> Any:
    """collections.defaultdict(factory) calls factory() for every missing key, long after loading."""
    factory = _pad(args, 1)[0]
    if factory is not None and not (isinstance(factory, Global) and factory.qualname in SAFE_FACTORIES):
        m.flag(f"{callable_name(factory)} (a defaultdict factory)")
    check_arguments(m, "collections.defaultdict", args[1:], args[1] if len(args) > 1 else ())
    return {}


def _encode(m: Machine, args: tuple[Any, ...]) -> Any:
    """_codecs.encode(text, encoding): torch writes bytes as latin1 text; other codecs import modules."""
    text, encoding = _pad(args, 2)
    if encoding is None:
        encoding = "utf-8"
    if not isinstance(encoding, str) or encoding.lower() not in SAFE_ENCODINGS:
        m.flag(f"_codecs.encode with the codec {key_name(encoding)[:MAX_NAME]!r}")
        return Call(Global("_codecs", "encode"), args)
    if not isinstance(text, str):
        return Call(Global("_codecs", "encode"), args)
    return text.encode("latin1" if encoding.lower() in ("latin1", "latin-1", "iso-8859-1") else "utf-8", "replace")


def _bit_generator(m: Machine, args: tuple[Any, ...]) -> Any:
    """numpy's __bit_generator_ctor(name_or_class) calls the class, with no argument: a class of numpy's, or the one a
    name looks up in numpy's table (`NUMPY_BIT_GENERATORS`)."""
    if args and not isinstance(args[0], str) and not _names(args[0], NUMPY_BIT_GENERATORS):
        m.flag(f"{callable_name(args[0])} (called by numpy's __bit_generator_ctor)")
    return Call(Global(NUMPY_RANDOM, "__bit_generator_ctor"), args)


def _random_generator(m: Machine, args: tuple[Any, ...], ctor: str) -> Any:
    """numpy's __generator_ctor / __randomstate_ctor(bit_generator, bit_generator_ctor) wrap a bit generator, or call
    the ctor (numpy's __bit_generator_ctor unless given) with a name: anything else there runs its methods or is run."""
    bit_generator, bit_generator_ctor = _pad(args, 2)
    made = isinstance(bit_generator, Call) and _names(bit_generator.func, {f"{NUMPY_RANDOM}.__bit_generator_ctor"})
    if args and not (isinstance(bit_generator, str) or made):
        m.flag(f"numpy's {ctor} of {callable_name(bit_generator)[:MAX_NAME]} (its methods run)")
    if len(args) > 1 and not _names(bit_generator_ctor, {f"{NUMPY_RANDOM}.__bit_generator_ctor"}):
        m.flag(f"{callable_name(bit_generator_ctor)} (called by numpy's {ctor})")
    return Call(Global(NUMPY_RANDOM, ctor), args)


def _cython_unpickle(m: Machine, args: tuple[Any, ...], cls: str) -> Any:
    """Cython's __pyx_unpickle_<Class>(type, checksum, state) runs Class.__new__(type) and reads the state's items."""
    kind = _pad(args, 1)[0]
    if not _names(kind, {cls}):
        m.flag(f"{callable_name(kind)} (made by Cython's unpickle of {cls[:MAX_NAME]})")
    check_arguments(m, f"Cython's unpickle of {cls[:MAX_NAME]}", args[1:])
    return Call(Global(*cls.rsplit(".", 1)), (), newobj=True)


def _names(value: Any, qualnames: Collection[str]) -> bool:
    """Whether `value` is a GLOBAL of one of `qualnames`."""
    return isinstance(value, Global) and value.qualname in qualnames


SCALARS = (str, int, float, bool, bytes, type(None))


def _scalar(m: Machine, args: tuple[Any, ...], kind: str) -> Any:
    """int(x), float(x), str(x), bool(x): inert on scalars; on an object they call its __int__, __str__..."""
    if not all(isinstance(a, SCALARS) for a in args):
        m.flag(f"builtins.{kind} of {callable_name(next(a for a in args if not isinstance(a, SCALARS)))}")
    return Call(Global("builtins", kind), args)


def _type(m: Machine, args: tuple[Any, ...]) -> Any:
    """type(x) names a class (pickle writes NoneType so); type(name, bases, dict) creates one, running base hooks."""
    if len(args) != 1:
        m.flag("builtins.type with 3 arguments (creates a class)")
    return Call(Global("builtins", "type"), args)


def _getattr(m: Machine, args: tuple[Any, ...]) -> Any:
    """getattr(obj, name) reaches anything; only a classmethod of `CLASS_METHODS` passes (how pickle writes one)."""
    obj, name = _pad(args, 2)
    if len(args) == 2 and isinstance(obj, Global) and f"{obj.qualname}.{key_name(name)}" in CLASS_METHODS:
        return Global(obj.module, f"{obj.name}.{name}")
    m.flag("builtins.getattr")
    return Call(Global("builtins", "getattr"), args)


def _pickled_arguments(m: Machine, args: tuple[Any, ...], name: str) -> Any:
    """A callable of `PICKLED_ARGUMENTS` given the arguments of a form its library's pickles write; anything else is
    unsafe (an object the pickle made among them would have its methods run)."""
    forms = PICKLED_ARGUMENTS[name]
    if not any(len(args) == len(form) and all(map(_fits, args, form)) for form in forms):
        written = " or ".join(f"({', '.join(map(_kind_name, form))})" for form in forms[:4])
        m.flag(f"{name[:MAX_NAME]} with other arguments than its pickles hold: {written}")
    return Call(Global(*name.rsplit(".", 1)), args)


def _fits(value: Any, kind: type | frozenset[str] | tuple[type, ...]) -> bool:
    """Whether an argument is of a `PICKLED_ARGUMENTS` form's kind: of a type (or one of a tuple's), or made by a call
    of one of a set's callables and not given attributes since (`foreign`)."""
    if isinstance(kind, frozenset):
        return isinstance(value, Call) and _names(value.func, kind) and foreign(value) is None
    return isinstance(value, kind) and not (kind is int and isinstance(value, bool))


def _kind_name(kind: type | frozenset[str] | tuple[type, ...]) -> str:
    if isinstance(kind, frozenset):
        return f"a {' or '.join(sorted(name.rpartition('.')[2] for name in kind)[:3])}"
    return " or ".join(t.__name__ for t in kind) if isinstance(kind, tuple) else kind.__name__


# numpy's array builders, under numpy 1's and numpy 2's module names (the arrays they make: `loaders._numpy_pickle`)
NUMPY_ARRAY_BUILDERS: dict[str, Callable[[Machine, tuple[Any, ...]], Any]] = {
    "numpy.core.multiarray._reconstruct": _np_reconstruct,
    "numpy._core.multiarray._reconstruct": _np_reconstruct,
    "numpy.core.numeric._frombuffer": _np_frombuffer,
    "numpy._core.numeric._frombuffer": _np_frombuffer,
}
TRAMPOLINES: dict[str, Callable[[Machine, tuple[Any, ...]], Any]] = {
    **{f"builtins.{kind}": partial(_scalar, kind=kind) for kind in ("int", "float", "str", "bool")},
    "builtins.type": _type,
    "torch._tensor._rebuild_from_type_v2": _from_type,
    "torch._tensor._rebuild_from_type": _from_type,
    "torch._utils._rebuild_parameter_with_state": _parameter_with_state,
    "copyreg._reconstructor": _reconstructor,
    **NUMPY_ARRAY_BUILDERS,
    "collections.defaultdict": _defaultdict,
    f"{NUMPY_RANDOM}.__bit_generator_ctor": _bit_generator,
    **{
        f"{NUMPY_RANDOM}.{ctor}": partial(_random_generator, ctor=ctor)
        for ctor in ("__generator_ctor", "__randomstate_ctor")
    },
    **{name: partial(_cython_unpickle, cls=cls) for name, cls in CYTHON_UNPICKLERS.items()},
    "_codecs.encode": _encode,
    "builtins.getattr": _getattr,
    **{name: partial(_pickled_arguments, name=name) for name in PICKLED_ARGUMENTS},
}
