"""What a pickle may name and call: the tables behind the restricted reader's unsafe verdict.

CPython's unpickler imports the module of every GLOBAL (and, from protocol 4 on, walks a dotted name
attribute by attribute), calls what REDUCE, OBJ and INST name, constructs through ``cls.__new__`` for
NEWOBJ, and runs ``__setstate__`` or ``setattr`` for BUILD. The reader models each of these:

- a GLOBAL from a module in `UNSAFE_MODULES` (those that run code, and those whose import runs something), a
  ``*.__main__`` module, a builtin in `UNSAFE_BUILTINS`, or a dotted name (``argparse._os.system`` reaches any
  module; torch never writes one) is unsafe wherever it appears, except those of `CHECKED_WHEN_CALLED` (getattr),
  judged where called;
- a call (REDUCE, OBJ, INST) is unsafe unless its callable is a data builder (`loaders._pickle.BUILDERS`),
  a class in `INERT_CALLABLES`, or a trampoline of `TRAMPOLINES` whose arguments are inert;
- BUILD is unsafe when its target is a class, module, function or dtype (a GLOBAL, not an object), or
  when the state sets a dunder attribute (``__class__``, ``__dict__``, ``__reduce__``...), or, on an OrderedDict,
  one named as its methods (`MAPPING_METHODS`).
- a call of a data builder or inert class is unsafe when an argument is an object the pickle made of a class it
  chose, or whose attributes BUILD set (the callable uses its methods: ``dict(x)`` calls ``x.keys()``), and for
  `PAIRS_BUILDERS` when an item of its iterable is; APPEND(S), ADDITEMS and SETITEM(S) on an object whose attributes
  BUILD set already (pickle writes an object's items before its state).

Classes the pickle only constructs (NEWOBJ) are kept as placeholders and listed as PICKLE_GLOBALS.
"""

from __future__ import annotations

from collections.abc import Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Modules whose callables can run code, open files, spawn processes or import: any GLOBAL from these is unsafe.
UNSAFE_MODULES = (
    "os",
    "posix",
    "nt",
    "subprocess",
    "sys",
    "importlib",
    "runpy",
    "pickle",
    "_pickle",
    "shutil",
    "socket",
    "webbrowser",
    "pty",
    "code",
    "ctypes",
    "marshal",
    "commands",
    "platform",
    "multiprocessing",
    "threading",
    "asyncio",
    "signal",
    "tempfile",
    "io",
    "_io",
    "codecs",
    "operator",
    "_operator",  # (operator's and functools' C twins: `functools.partial` is `_functools.partial`)
    "functools",
    "_functools",
    "itertools",  # its iterators call the functions they hold when iterated (starmap, filterfalse, accumulate...)
    "types",
    "inspect",
    "pdb",
    "unittest.mock",  # (a mock calls what its state names: `_mock_children`, `_mock_wraps`, `_mock_side_effect`)
    "timeit",
    "requests",
    "urllib",
    "http",
    "bdb",
    "cProfile",
    "profile",
    "pydoc",
    "trace",
    "venv",
    "ensurepip",
    "pip",
    "setuptools",
    "distutils",
    "site",
    "torch.hub",
    "torch.jit.load",
    "torch.load",
    "torch.storage._load_from_bytes",
    "torch.serialization.load",
    "torch._inductor",
    "torch.utils.cpp_extension",
    "numpy.load",
    "numpy.testing",
    "numpy.f2py",
    "numpy.distutils",
    # importing these runs something (`antigravity` opens a web browser, `idlelib.idle` starts IDLE, `this` prints):
    # the unpickler imports a GLOBAL's module before it looks the name up, so naming them is enough (as is naming
    # any `*.__main__` module, `is_unsafe_global`: `unittest.__main__` runs the tests it finds)
    "antigravity",
    "this",
    "__hello__",
    "__phello__",
    "idlelib",
    "turtledemo",
)
MAIN_MODULE = ".__main__"  # a package's command-line entry point: most run it when imported
UNSAFE_BUILTINS = frozenset(
    {
        "eval",
        "exec",
        "compile",
        "open",
        "__import__",
        "getattr",
        "setattr",
        "delattr",
        "globals",
        "locals",
        "input",
        "breakpoint",
        "exit",
        "quit",
        "vars",
        "dir",
        "help",
        "memoryview",
        "print",
        "apply",
        "execfile",
        "file",
        "reload",
        "__builtins__",
        "map",
        "filter",
        "classmethod",
        "staticmethod",
        "property",
        "super",
    }
)
# Arguments datetime's C constructors only store, after a C type check (no method of theirs runs): the tzinfo after the
# bytes state pickle writes (`datetime(state, tzinfo)`; dateutil's and pytz's zones are objects of their own classes)
STORED_TZINFO = frozenset({"datetime.datetime", "datetime.time"})
# The classmethods `getattr(cls, name)` may look up, then called: pickle writes a classmethod so (`ZoneInfo.__reduce__`
# gives `ZoneInfo._unpickle`, which makes the zone of a key it validates from the system's time zone data: an aware
# datetime in a training checkpoint). Any other getattr call is unsafe (`CHECKED_WHEN_CALLED`)
CLASS_METHODS = frozenset({"zoneinfo.ZoneInfo._unpickle"})
# Unsafe globals judged where they are called instead of where they are named (a trampoline checks their arguments):
# naming them alone runs nothing, and every way a pickle can call what it names goes through that check
CHECKED_WHEN_CALLED = frozenset({"builtins.getattr"})
# Enum classes a pickle calls with one value (`Enum.__reduce_ex__` writes `cls(value)`): the call looks the member up
# by value, and their `_missing_` only raises (transformers' `ExplicitEnum`, Enum's own). torch.save of a
# TrainingArguments (a Trainer's training_args.bin) writes its strategies and its accelerate state's DistributedType.
# Only a lookup of one str or int counts (a second argument makes a class: `Enum(name, members)`)
ENUM_LOOKUPS = frozenset({
    "transformers.trainer_utils.IntervalStrategy", "transformers.trainer_utils.SaveStrategy",
    "transformers.trainer_utils.HubStrategy", "transformers.trainer_utils.SchedulerType",
    "transformers.trainer_utils.FSDPOption", "transformers.training_args.OptimizerNames",
    "transformers.debug_utils.DebugOption", "accelerate.utils.dataclasses.DistributedType",
})  # fmt: skip
NONE = type(None)
# The values a call of one of these callables made (an argument of a `PICKLED_ARGUMENTS` form written as such a set):
# a time zone whose own call was judged and whose state set nothing (pandas reads a Timestamp's zone, datetime only
# stores it), a timedelta, a pandas offset of `PANDAS_OFFSETS`
MadeBy = frozenset[str]
ZONES: MadeBy = frozenset({
    "datetime.timezone", "zoneinfo.ZoneInfo._unpickle", "pytz._p", "pytz._UTC", "pytz.FixedOffset",
})  # fmt: skip
TIMEDELTA: MadeBy = frozenset({"datetime.timedelta"})
OFFSETS = "pandas._libs.tslibs.offsets"
# pandas' offsets a Period's frequency is (`BaseOffset.__reduce__` writes `cls(n, normalize, *params)`: their C
# constructors store the numbers), with the types of their parameters after n and normalize
PANDAS_OFFSETS: dict[str, tuple[type | MadeBy | tuple[type, ...], ...]] = {
    **dict.fromkeys(("Day", "Hour", "Minute", "Second", "Milli", "Micro", "Nano", "MonthEnd"), ()),
    "QuarterEnd": (int,), "YearEnd": (int,), "Week": ((int, NONE),), "BusinessDay": (TIMEDELTA,),
}  # fmt: skip
PERIOD_FREQUENCIES: MadeBy = frozenset(f"{OFFSETS}.{name}" for name in PANDAS_OFFSETS)
# Callables a pickle may call with exactly the arguments their library's own pickles hold, one tuple per form it writes;
# an argument given as a type (or a tuple of types: one of them), or as a `MadeBy` set (the result of a call of one of
# those callables, not given attributes since). Other arguments count as any unknown call (an object the pickle made
# has its methods run; a second argument to an Enum makes a class; a first one to dateutil's tzfile is a file it reads)
PICKLED_ARGUMENTS: dict[str, tuple[tuple[type | MadeBy | tuple[type, ...], ...], ...]] = {
    **{name: ((str,), (int,)) for name in ENUM_LOOKUPS},
    # dateutil's zone from a file (`tz.gettz`, and its bundled `zoneinfo.gettz`'s subclass): `tzfile.__reduce_ex__`
    # writes `cls(None, filename)` and the zone's data as its BUILD state, so nothing is read
    **{f"dateutil.{module}.tzfile": ((NONE, str),) for module in ("tz.tz", "zoneinfo")},
    # pytz's zones (`BaseTzInfo.__reduce__`): `_p(zone)` for a fixed zone, `_p(zone, utcoffset, dst, tzname)` in
    # seconds for one of a zone's periods; `pytz.timezone(zone)` opens only a name of its own zone list (others raise).
    # `utc.__reduce__` gives `_UTC()`, `_FixedOffset.__reduce__` gives `FixedOffset(minutes)`
    "pytz._p": ((str,), (str, int, int, str)),
    "pytz._UTC": ((),),
    "pytz.FixedOffset": ((int,),),
    # pandas' scalars (their `__reduce__`): a Timestamp is `_unpickle_timestamp(value, None, tz, reso)` of its integer
    # value and unit (pandas 1 wrote `(value, freq, tz)`), made from those numbers and localized to the zone (its
    # methods run: only a zone of `ZONES` passes, a dateutil zone carries the state its pickle set); a Timedelta
    # `_timedelta_unpickle(value, reso)`, NaT `_nat_unpickle(None)` (the module's constant), a Period `Period(None,
    # freq, ordinal)` of an offset of `PANDAS_OFFSETS`. A DataFrame or Series is not among them: its pickle calls
    # `_new_Index(cls, d)` (`cls.__new__(cls, **d)` for a class it names), block and array builders, flagged
    "pandas._libs.tslibs.timestamps._unpickle_timestamp": tuple(
        (int, freq, tz, *reso) for freq in (NONE, PERIOD_FREQUENCIES) for tz in (NONE, ZONES) for reso in ((int,), ())
    ),
    "pandas._libs.tslibs.timedeltas._timedelta_unpickle": ((int, int),),
    "pandas._libs.tslibs.nattype._nat_unpickle": ((NONE,),),
    **{f"pandas{module}.Period": ((NONE, PERIOD_FREQUENCIES, int),) for module in ("", "._libs.tslibs.period")},
    **{f"{OFFSETS}.{name}": ((int, bool, *params),) for name, params in PANDAS_OFFSETS.items()},
}
PATH_CLASSES = ("PurePath", "PurePosixPath", "PureWindowsPath", "Path", "PosixPath", "WindowsPath")
# Classes and functions a call (REDUCE / OBJ / INST) may name without that being unsafe: they only build
# data (numpy arrays and scalars, argparse namespaces, parameters, tensors moved to a device). An object the pickle
# made handed to one of them is checked apart (`loaders._pickle_builders.check_arguments`): they would use its methods.
INERT_CALLABLES = frozenset(
    {
        "numpy.core.multiarray.scalar",
        "numpy._core.multiarray.scalar",
        "numpy.dtype",
        "numpy.ndarray",
        "argparse.Namespace",
        "collections.Counter",
        "collections.deque",
        "builtins.object",
        "torch.nn.parameter.Parameter",
        "torch.Tensor",
        "torch._utils._rebuild_device_tensor_from_cpu_tensor",
        "torch._utils._rebuild_device_tensor_from_numpy",
        "torch.serialization._get_layout",
        # datetime's C constructors: from the bytes state pickle writes (or numbers) and a tzinfo they only store
        # (a C type check, no method called); an aware datetime writes timezone(timedelta(...)), which stores the
        # offset and name (timezone.utc is timezone(timedelta(0)))
        "datetime.datetime",
        "datetime.date",
        "datetime.time",
        "datetime.timedelta",
        "datetime.timezone",
        # protocols 0-1 write a zone of a tzinfo subclass (dateutil's) as `_reconstructor(cls, tzinfo, tzinfo())`
        "datetime.tzinfo",
        # a path from its parts (PurePath.__reduce__ writes the class and its parts): the parts are parsed as text,
        # nothing is opened (WindowsPath refuses to be made on POSIX and PosixPath on Windows); `pathlib._local` is
        # their module on Python 3.13. (pathlib is no unsafe module: a call of any other of its names is flagged as
        # every unknown call is, and its methods are reached only by a dotted name, flagged wherever it appears)
        *(f"{module}.{cls}" for module in ("pathlib", "pathlib._local") for cls in PATH_CLASSES),
        "decimal.Decimal",
        "fractions.Fraction",
        *CLASS_METHODS,
    }
)
# Base classes copyreg._reconstructor may construct through (it calls base.__init__(obj, state)).
SAFE_BASES = frozenset(
    {
        "builtins.object",
        "builtins.dict",
        "builtins.list",
        "builtins.set",
        "builtins.frozenset",
        "builtins.tuple",
        "builtins.int",
        "builtins.float",
        "builtins.complex",
        "builtins.str",
        "builtins.bytes",
        "builtins.bytearray",
        "builtins.bool",
        "datetime.tzinfo",  # (its `__new__` only allocates, its `__init__` is object's: dateutil's zones, protocol 0-1)
    }
)
# Classes whose instances numpy's _reconstruct may create (ndarray.__new__ runs the subclass's hooks).
SAFE_ARRAY_TYPES = frozenset(
    {
        "numpy.ndarray",
        "numpy.matrix",
        "numpy.recarray",
        "numpy.memmap",
        "numpy.ma.core.MaskedArray",
        "numpy.core.records.recarray",
        "numpy._core.records.recarray",
    }
)
# numpy's random generators (`numpy.random._pickle`): `__bit_generator_ctor` calls, with no argument, the class it is
# given or the one a name looks up in numpy's own table (a str key: any other name raises); `__generator_ctor` and
# `__randomstate_ctor` wrap a bit generator, or call their second argument with a name. The bit generators' BUILD
# runs their own `__setstate__` (extension types without a `__dict__`: a state sets no attribute)
NUMPY_RANDOM = "numpy.random._pickle"
NUMPY_BIT_GENERATORS = frozenset(
    {
        "numpy.random._pcg64.PCG64",
        "numpy.random._pcg64.PCG64DXSM",
        "numpy.random._mt19937.MT19937",
        "numpy.random._philox.Philox",
        "numpy.random._sfc64.SFC64",
    }
)
# Cython's `__pyx_unpickle_<Class>(type, checksum, state)`, by the class it makes: `Class.__new__(type)` (its C
# constructor, not the type's `__init__`), then the typed fields of the state set (a checksum that does not match
# the installed class's layout raises)
CYTHON_UNPICKLERS = {
    "numpy.random.bit_generator.__pyx_unpickle_SeedSequence": "numpy.random.bit_generator.SeedSequence",
    "numpy.random.bit_generator.__pyx_unpickle_SeedlessSeedSequence": "numpy.random.bit_generator.SeedlessSeedSequence",
}
# torch's rebuilds that set a tensor's backward hooks from an argument (its place): `tensor._backward_hooks = hooks`
# registers each with autograd, which calls it with the gradient on the first backward pass. torch.save always writes
# an empty `OrderedDict()` there (torch/_utils.py, Note [Don't serialize hooks]): any other value is a function the
# file chose, run later, as a defaultdict's factory (proved: a class given there ran on `.backward()`)
BACKWARD_HOOKS = {
    "torch._utils._rebuild_tensor_v2": 5, "torch._utils._rebuild_tensor_v3": 5, "torch._utils._rebuild_qtensor": 6,
    "torch._utils._rebuild_parameter": 2, "torch._utils._rebuild_parameter_with_state": 2,
}  # fmt: skip
# A tensor's attributes that register hooks with autograd when set (`_set_obj_state`'s setattr from a state, as
# `_rebuild_from_type_v2` and `_rebuild_parameter_with_state` run it): never in the `__dict__` torch pickles (proved: a
# class set there ran on `.backward()`)
TENSOR_HOOKS = frozenset({"_backward_hooks", "_post_accumulate_grad_hooks"})
# Builders that read each item of their iterable argument as a (key, value) pair: dict(pairs) iterates every item
PAIRS_BUILDERS = frozenset({"builtins.dict", "collections.OrderedDict"})
# The methods the unpickler looks up on an object it appends or adds to (APPEND(S): extend, else append; ADDITEMS:
# add): an attribute of that name that BUILD set is called with the items
ITEM_METHODS = frozenset({"append", "extend", "add"})
# The methods an OrderedDict's own attribute of that name would hide: it has a `__dict__` (torch keeps a state dict's
# `_metadata` there) and what reads it looks these up on the object first (`dict(od)` calls `od.keys()`, APPENDS
# calls `od.append`), so a state that names one chooses what runs (the reader holds an OrderedDict as a dict)
MAPPING_METHODS = ITEM_METHODS | {
    "keys", "items", "values", "get", "copy", "update", "pop", "popitem", "setdefault", "clear", "fromkeys",
    "move_to_end",
}  # fmt: skip
# Factories a collections.defaultdict may hold: it calls them later, on every missing key.
SAFE_FACTORIES = SAFE_BASES | {"collections.OrderedDict", "collections.Counter", "collections.defaultdict"}
# Encodings `_codecs.encode` may be asked for (torch writes latin1; others import encodings.* codecs).
SAFE_ENCODINGS = frozenset({"latin1", "latin-1", "iso-8859-1", "utf-8", "utf8", "ascii"})
# The BUILD state keys that are never data: setting them replaces an object's class, dict or behaviour.
UNSAFE_STATE_KEYS = "__"  # any key that starts and ends with two underscores


# joblib's stand-in for an array (`joblib.dump`: scikit-learn's models), and the one scikit-learn once bundled: once
# BUILD has set its state, joblib's unpickler reads the array's bytes that follow, outside the opcodes
JOBLIB_WRAPPERS = frozenset(
    {"joblib.numpy_pickle.NumpyArrayWrapper", "sklearn.externals.joblib.numpy_pickle.NumpyArrayWrapper"}
)

# Top-level modules no Python 2 name maps to (`python3_name`): those torch.save writes
PYTHON3_ONLY = frozenset({"torch", "collections", "builtins", "numpy", "_codecs"})


# The globals `torch.load(weights_only=True)` accepts (torch 2.13's `_weights_only_unpickler._get_allowed_globals`;
# weights-only is its default since torch 2.6): a pickle naming any other (a whole `nn.Module`, an optimizer object, a
# numpy array, `argparse.Namespace`) is refused there and loads only with `weights_only=False`, which imports and
# constructs what it names. tests/loaders/test_torch.py checks this table against the installed torch's.
WEIGHTS_ONLY_GLOBALS = frozenset({
    "_codecs.encode", "builtins.bytearray", "builtins.complex", "builtins.set", "collections.Counter",
    "collections.OrderedDict", "torch.BFloat16Storage", "torch.BFloat16Tensor", "torch.BoolStorage",
    "torch.BoolTensor", "torch.ByteStorage", "torch.ByteTensor", "torch.CharStorage", "torch.CharTensor",
    "torch.ComplexDoubleStorage", "torch.ComplexFloatStorage", "torch.DoubleStorage", "torch.DoubleTensor",
    "torch.FloatStorage", "torch.FloatTensor", "torch.HalfStorage", "torch.HalfTensor", "torch.IntStorage",
    "torch.IntTensor", "torch.LongStorage", "torch.LongTensor", "torch.QInt32Storage", "torch.QInt8Storage",
    "torch.QUInt2x4Storage", "torch.QUInt4x2Storage", "torch.QUInt8Storage", "torch.ShortStorage",
    "torch.ShortTensor", "torch.Size", "torch.Tensor", "torch._tensor._rebuild_from_type_v2",
    "torch._utils._rebuild_device_tensor_from_cpu_tensor", "torch._utils._rebuild_device_tensor_from_numpy",
    "torch._utils._rebuild_meta_tensor_no_storage", "torch._utils._rebuild_nested_tensor",
    "torch._utils._rebuild_parameter", "torch._utils._rebuild_parameter_with_state",
    "torch._utils._rebuild_qtensor", "torch._utils._rebuild_sparse_tensor", "torch._utils._rebuild_tensor",
    "torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_tensor_v3",
    "torch._utils._rebuild_wrapper_subclass", "torch.bfloat16", "torch.bits16", "torch.bits1x8", "torch.bits2x4",
    "torch.bits4x2", "torch.bits8", "torch.bool", "torch.complex128", "torch.complex32", "torch.complex64",
    "torch.cuda.BFloat16Storage", "torch.cuda.BFloat16Tensor", "torch.cuda.BoolStorage", "torch.cuda.BoolTensor",
    "torch.cuda.ByteStorage", "torch.cuda.ByteTensor", "torch.cuda.CharStorage", "torch.cuda.CharTensor",
    "torch.cuda.ComplexDoubleStorage", "torch.cuda.ComplexFloatStorage", "torch.cuda.DoubleStorage",
    "torch.cuda.DoubleTensor", "torch.cuda.FloatStorage", "torch.cuda.FloatTensor", "torch.cuda.HalfStorage",
    "torch.cuda.HalfTensor", "torch.cuda.IntStorage", "torch.cuda.IntTensor", "torch.cuda.LongStorage",
    "torch.cuda.LongTensor", "torch.cuda.ShortStorage", "torch.cuda.ShortTensor",
    "torch.cuda.sparse.BFloat16Tensor", "torch.cuda.sparse.ByteTensor", "torch.cuda.sparse.CharTensor",
    "torch.cuda.sparse.DoubleTensor", "torch.cuda.sparse.FloatTensor", "torch.cuda.sparse.HalfTensor",
    "torch.cuda.sparse.IntTensor", "torch.cuda.sparse.LongTensor", "torch.cuda.sparse.ShortTensor",
    "torch.device", "torch.float16", "torch.float32", "torch.float4_e2m1fn_x2", "torch.float64",
    "torch.float8_e4m3fn", "torch.float8_e4m3fnuz", "torch.float8_e5m2", "torch.float8_e5m2fnuz",
    "torch.float8_e8m0fnu", "torch.int1", "torch.int16", "torch.int2", "torch.int3", "torch.int32", "torch.int4",
    "torch.int5", "torch.int6", "torch.int64", "torch.int7", "torch.int8", "torch.nn.parameter.Parameter",
    "torch.per_channel_affine", "torch.per_channel_affine_float_qparams", "torch.per_channel_symmetric",
    "torch.per_tensor_affine", "torch.per_tensor_symmetric", "torch.qint32", "torch.qint8", "torch.quint2x4",
    "torch.quint4x2", "torch.quint8", "torch.serialization._get_layout", "torch.sparse.BFloat16Tensor",
    "torch.sparse.ByteTensor", "torch.sparse.CharTensor", "torch.sparse.DoubleTensor", "torch.sparse.FloatTensor",
    "torch.sparse.HalfTensor", "torch.sparse.IntTensor", "torch.sparse.LongTensor", "torch.sparse.ShortTensor",
    "torch.storage.TypedStorage", "torch.storage.UntypedStorage", "torch.uint1", "torch.uint16", "torch.uint2",
    "torch.uint3", "torch.uint32", "torch.uint4", "torch.uint5", "torch.uint6", "torch.uint64", "torch.uint7",
    "torch.uint8",
})  # fmt: skip


def python3_name(module: str, name: str) -> tuple[str, str]:
    """A GLOBAL's module and name as CPython's unpickler reads them: protocols 0-2 write Python 2 names
    ('__builtin__', 'copy_reg', 'itertools.izip'), mapped by the standard library's table, imported only for a
    module it may hold (a torch file's are not: about 0.1 ms of each run)."""
    if module.partition(".")[0] in PYTHON3_ONLY:
        return module, name
    from _compat_pickle import IMPORT_MAPPING, NAME_MAPPING

    return NAME_MAPPING.get((module, name), (IMPORT_MAPPING.get(module, module), name))  # type: ignore[no-any-return]


def is_dotted(name: str) -> bool:
    """A GLOBAL name with a dot walks attributes from the module (protocol 4 semantics): any object is reachable."""
    return "." in name


def is_unsafe_global(module: str, name: str) -> bool:
    """Whether naming this global is unsafe in itself (it can run code when called, or reaches anything)."""
    if module in ("builtins", "__builtin__"):
        return name in UNSAFE_BUILTINS or name.startswith("_")
    qualname = f"{module}.{name}"
    if module.endswith(MAIN_MODULE):
        return True
    return is_dotted(name) or any(qualname == m or qualname.startswith(m + ".") for m in UNSAFE_MODULES)


def state_dicts(state: object) -> list[Mapping[Any, Any]]:
    """The dicts a BUILD / _set_obj_state state sets attributes from (a dict, or a (dict, slots) pair)."""
    parts = state if isinstance(state, tuple) and len(state) == 2 else (state,)
    return [part for part in parts if isinstance(part, Mapping)]


def sets_attributes(state: object, names: frozenset[str] | None = None) -> bool:
    """Whether a BUILD state sets any attribute (of `names`, when given)."""
    dicts = state_dicts(state)
    return any(dicts) if names is None else any(name in part for part in dicts for name in names)


def dunder_keys(state: object) -> list[str]:
    """Dunder attribute names a BUILD / _set_obj_state state would set (a dict, or a (dict, slots) pair)."""
    keys = (k for part in state_dicts(state) for k in part)
    return [k for k in keys if isinstance(k, str) and k.startswith("__") and k.endswith("__")][:5]


def hook_keys(state: object) -> list[str]:
    """The hooks of a tensor a `_set_obj_state` state would set (`TENSOR_HOOKS`), other than none."""
    return [k for part in state_dicts(state) for k, v in part.items() if k in TENSOR_HOOKS and v not in ({}, None)]


def hidden_methods(state: object) -> list[str]:
    """Methods of an OrderedDict a BUILD / _set_obj_state state would hide with attributes (`MAPPING_METHODS`)."""
    return [k for part in state_dicts(state) for k in part if isinstance(k, str) and k in MAPPING_METHODS][:5]
