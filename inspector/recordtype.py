"""`record`: the class decorator of every record, what `dataclasses.dataclass` gives at the cost of a plain class.

`dataclasses` compiles six methods per class, one `exec` each, about 0.3 ms a class, and imports `inspect` (with
`ast`, `dis` and `tokenize`): with 80 record classes that was a fifth of every run's start-up (issue 16). `record`
gives what the project uses of `dataclass`: `__init__` (defaults, `field(default_factory=...)`, `__post_init__`),
`__repr__`, `__eq__` and `__hash__` over the compared fields, `slots` (the class is made again with `__slots__`)
and inherited fields. Only `__init__` is compiled, for speed, and only when the class is first instantiated (most
record classes of a run never are); the other methods are shared functions reading the class's fields (`__eq__`
and `__hash__` through one `attrgetter`). Its parameters and defaults are `dataclass`'s, and `field`, `fields`,
`replace` and `asdict` behave as the `dataclasses` functions of the same names, so a record reads as a dataclass.
A method the class body defines itself is kept, as `dataclass` keeps it.

`frozen=True` makes a value: equal and hashed by its fields, and never assigned after it is made. The type checker
holds that (`record` is a PEP 681 `dataclass_transform`: mypy reports an assignment to a field of a frozen record,
`tests/test_recordtype.py` runs it); at run time the assignment is not intercepted, as on a plain `__slots__`
class, because intercepting it makes every record's `__init__` set its fields through `object.__setattr__`: a
report of 100,000 tensors makes half a million records, and that was 0.23 s of its 1.6 s.
"""

from __future__ import annotations

from operator import attrgetter

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar, dataclass_transform

    T = TypeVar("T")
else:

    def dataclass_transform(**_: object) -> Callable[[T], T]:
        return lambda f: f


FIELDS = "__record_fields__"
KEY = "__record_key__"  # the compared fields as one tuple (an attrgetter)


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class Field:
    """One field of a record: its name, annotation (a string), default or factory, and whether it is compared
    and shown."""

    __slots__ = ("name", "type", "default", "default_factory", "compare", "repr")

    def __init__(
        self, default: Any = MISSING, default_factory: Any = MISSING, compare: bool = True, repr: bool = True
    ) -> None:
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name = ""
        self.type: Any = None
        self.default = default
        self.default_factory = default_factory
        self.compare = compare
        self.repr = repr

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, type={self.type!r})"


def field(*, default: Any = MISSING, default_factory: Any = MISSING, compare: bool = True, repr: bool = True) -> Any:
    return Field(default, default_factory, compare, repr)


def fields(obj: Any) -> tuple[Field, ...]:
    try:
        return getattr(obj, FIELDS)  # type: ignore[no-any-return]
    except AttributeError:
        raise TypeError("must be called with a record type or instance") from None


def replace(obj: T, /, **changes: Any) -> T:
    """A copy of `obj` with some fields changed (`__init__` and `__post_init__` run again)."""
    for f in fields(obj):
        if f.name not in changes:
            changes[f.name] = getattr(obj, f.name)
    return obj.__class__(**changes)  # type: ignore[no-any-return]


def asdict(obj: Any) -> dict[str, Any]:
    """The record as a dict, records and containers inside it converted too (as `dataclasses.asdict`)."""
    if not hasattr(type(obj), FIELDS):
        raise TypeError("asdict() should be called on record instances")
    return _plain(obj)  # type: ignore[no-any-return]


def _plain(value: Any) -> Any:
    if hasattr(type(value), FIELDS):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple
        return type(value)(*(_plain(v) for v in value))
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return type(value)((_plain(k), _plain(v)) for k, v in value.items())
    return value


@dataclass_transform(field_specifiers=(field, Field))
def record(cls: type[T] | None = None, /, *, frozen: bool = False, slots: bool = False, eq: bool = True) -> Any:
    """Make `cls` a record (as `@dataclass`, `@dataclass(frozen=True, slots=True)`...)."""

    def wrap(cls: type[T]) -> type[T]:
        return _make(cls, frozen, slots, eq)

    return wrap if cls is None else wrap(cls)


def _make(cls: type[T], frozen: bool, slots: bool, eq: bool) -> type[T]:
    found: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        for f in base.__dict__.get(FIELDS, ()):
            found[f.name] = f
    own = []
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        if str(annotation).startswith(("ClassVar", "typing.ClassVar")):
            continue
        value = cls.__dict__.get(name, MISSING)
        f = value if isinstance(value, Field) else Field(default=value)
        f.name, f.type = name, annotation
        found[name] = f
        own.append(name)
    all_fields = tuple(found.values())
    seen_default = False
    for f in all_fields:
        if f.default is MISSING and f.default_factory is MISSING and seen_default:
            raise TypeError(f"{cls.__name__}: non-default field {f.name!r} follows a default field")
        seen_default = seen_default or f.default is not MISSING or f.default_factory is not MISSING
    # a body that defines __eq__ gets __hash__ = None from Python itself: that is not a hash of its own
    own_hash = "__hash__" in cls.__dict__ and not (cls.__dict__["__hash__"] is None and "__eq__" in cls.__dict__)
    if slots:
        cls = _slotted(cls, [n for n in own if not any(n in getattr(b, "__slots__", ()) for b in cls.__mro__[1:])])
    else:
        for f in all_fields:
            if f.name in own:
                if f.default is not MISSING:
                    setattr(cls, f.name, f.default)
                elif f.name in cls.__dict__:
                    delattr(cls, f.name)
    compared = [f.name for f in all_fields if f.compare]
    methods: dict[str, Any] = {"__init__": _lazy_init(cls, all_fields), "__repr__": _repr}
    if eq:
        methods["__eq__"] = _eq
        if not own_hash:
            methods["__hash__"] = _hash if frozen else None  # as dataclass: mutable and equal by value: unhashable
    for name, method in methods.items():
        if name not in cls.__dict__ or name == "__hash__":
            setattr(cls, name, method)
    setattr(cls, FIELDS, all_fields)
    setattr(cls, KEY, _key(compared))
    return cls


def _key(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """The compared fields of a record as one tuple, read at C speed."""
    if len(names) > 1:
        return attrgetter(*names)  # type: ignore[return-value]
    # (a function kept in the class would be bound to the instance it is read from: a static one is not)
    if names:
        one = attrgetter(names[0])
        return staticmethod(lambda self: (one(self),))  # type: ignore[return-value]
    return staticmethod(lambda self: ())  # type: ignore[return-value]


def _lazy_init(cls: type, all_fields: tuple[Field, ...]) -> Callable[..., None]:
    """An `__init__` that compiles the class's own on its first call: most record classes of a run are never made,
    and compiling is what a class costs (about 0.2 ms)."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        real = _compile_init(cls, all_fields)
        real.__qualname__ = f"{cls.__qualname__}.__init__"
        type.__setattr__(cls, "__init__", real)
        real(self, *args, **kwargs)

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


def _compile_init(cls: type, all_fields: tuple[Field, ...]) -> Callable[..., None]:
    namespace: dict[str, Any] = {"MISSING": MISSING}
    params, body = [], []
    for f in all_fields:
        if f.default is not MISSING:
            namespace[f"_d_{f.name}"] = f.default
            params.append(f"{f.name}=_d_{f.name}")
            value = f.name
        elif f.default_factory is not MISSING:
            namespace[f"_f_{f.name}"] = f.default_factory
            params.append(f"{f.name}=MISSING")
            value = f"_f_{f.name}() if {f.name} is MISSING else {f.name}"
        else:
            params.append(f.name)
            value = f.name
        body.append(f"self.{f.name} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append("self.__post_init__()")
    source = f"def __init__(self, {', '.join(params)}):\n" + "".join(f"    {line}\n" for line in body or ["pass"])
    exec(source, namespace)  # noqa: S102 - the source is built above from the class's own field names
    return namespace["__init__"]  # type: ignore[no-any-return]


def _repr(self: Any) -> str:
    shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in getattr(self, FIELDS) if f.repr)
    return f"{self.__class__.__qualname__}({shown})"


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        key = getattr(self, KEY)
        return key(self) == key(other)
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(getattr(self, KEY)(self))


def _slotted(cls: type[T], slot_names: list[str]) -> type[T]:
    """The class made again with `__slots__` (a class's slots can only be declared when it is created)."""
    body = dict(cls.__dict__)
    for name in slot_names:
        body.pop(name, None)
    body.pop("__dict__", None)
    body.pop("__weakref__", None)
    body["__slots__"] = tuple(slot_names)
    qualname = getattr(cls, "__qualname__", None)
    metaclass: Any = type(cls)
    made = metaclass(cls.__name__, cls.__bases__, body)
    if qualname is not None:
        made.__qualname__ = qualname
    return made
