"""`record`: the class decorator of every record, what `dataclasses.dataclass` gives at the cost of a plain class.

`dataclasses` compiles six methods per class, one `exec` each, about 0.3 ms a class, and imports `inspect` (with
`ast`, `dis` and `tokenize`): with 80 record classes that was a fifth of every run's start-up (issue 16). `record`
compiles one source per class holding what the project uses of `dataclass`: `__init__` (defaults,
`field(default_factory=...)`, `__post_init__`), `__repr__`, `__eq__` and `__hash__` over the compared fields,
`frozen` (assignment raises `FrozenInstanceError`), `slots` (the class is made again with `__slots__`, and frozen
slotted records pickle) and inherited fields. Its parameters and defaults are `dataclass`'s, and `field`, `fields`,
`replace` and `asdict` behave as the `dataclasses` functions of the same names, so a record reads as a dataclass.
A method the class body defines itself is kept, as `dataclass` keeps it.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar, dataclass_transform

    T = TypeVar("T")
else:

    def dataclass_transform(**_: object) -> Callable[[T], T]:
        return lambda f: f


FIELDS = "__record_fields__"
METHODS = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__", "__getstate__", "__setstate__")


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class FrozenInstanceError(AttributeError):
    """An assignment to a field of a frozen record."""


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
    # a body that defines __eq__ gets __hash__ = None from Python itself: that is not a hash of its own
    own_hash = "__hash__" in cls.__dict__ and not (cls.__dict__["__hash__"] is None and "__eq__" in cls.__dict__)
    namespace: dict[str, Any] = {
        "MISSING": MISSING,
        "FrozenInstanceError": FrozenInstanceError,
        "_set": object.__setattr__,
    }
    source = [_init(cls, all_fields, frozen, namespace), _repr(all_fields)]
    compared = [f.name for f in all_fields if f.compare]
    if eq:
        source.append(_eq(compared))
        if frozen and not own_hash:
            source.append(f"def __hash__(self):\n    return hash(({''.join(f'self.{n},' for n in compared)}))\n")
    if frozen:
        source.append(
            "def __setattr__(self, name, value):\n    raise FrozenInstanceError(f'cannot assign to field {name!r}')\n"
            "def __delattr__(self, name):\n    raise FrozenInstanceError(f'cannot delete field {name!r}')\n"
        )
    if frozen and slots:
        names = tuple(f.name for f in all_fields)
        source.append(
            f"def __getstate__(self):\n    return tuple(getattr(self, n) for n in {names!r})\n"
            f"def __setstate__(self, state):\n    for n, v in zip({names!r}, state):\n        _set(self, n, v)\n"
        )
    exec("\n".join(source), namespace)  # noqa: S102 - the source is built above from the class's own field names
    methods = {k: namespace[k] for k in METHODS if k in namespace}
    if eq and not frozen and not own_hash:
        methods["__hash__"] = None  # as dataclass: equal by value and mutable, so not hashable
    if slots:
        cls = _slotted(cls, [n for n in own if not any(n in getattr(b, "__slots__", ()) for b in cls.__mro__[1:])])
    else:
        for f in all_fields:
            if f.name in own:
                if f.default is MISSING:
                    if f.name in cls.__dict__:
                        delattr(cls, f.name)
                else:
                    setattr(cls, f.name, f.default)
    for name, method in methods.items():
        if name not in cls.__dict__ or name == "__hash__":
            if method is not None:
                method.__qualname__ = f"{cls.__qualname__}.{name}"
            setattr(cls, name, method)
    setattr(cls, FIELDS, all_fields)
    return cls


def _init(cls: type, all_fields: tuple[Field, ...], frozen: bool, namespace: dict[str, Any]) -> str:
    params, body, seen_default = [], [], False
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
            if seen_default:
                raise TypeError(f"{cls.__name__}: non-default field {f.name!r} follows a default field")
            params.append(f.name)
            value = f.name
        seen_default = seen_default or f.default is not MISSING or f.default_factory is not MISSING
        body.append(f"_set(self, '{f.name}', {value})" if frozen else f"self.{f.name} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append("self.__post_init__()")
    return f"def __init__(self, {', '.join(params)}):\n" + "".join(f"    {line}\n" for line in body or ["pass"])


def _repr(all_fields: tuple[Field, ...]) -> str:
    parts = ", ".join(f"{f.name}={{self.{f.name}!r}}" for f in all_fields if f.repr)
    return f"def __repr__(self):\n    return f'{{self.__class__.__qualname__}}({parts})'\n"


def _eq(compared: list[str]) -> str:
    mine = "".join(f"self.{n}," for n in compared)
    theirs = "".join(f"other.{n}," for n in compared)
    return (
        "def __eq__(self, other):\n"
        f"    if other.__class__ is self.__class__:\n        return ({mine}) == ({theirs})\n"
        "    return NotImplemented\n"
    )


def _slotted(cls: type[T], slot_names: list[str]) -> type[T]:
    """The class made again with `__slots__` (a class's slots can only be declared when it is created)."""
    body = dict(cls.__dict__)
    for name in slot_names:
        body.pop(name, None)
    body.pop("__dict__", None)
    body.pop("__weakref__", None)
    body["__slots__"] = tuple(slot_names)
    qualname = getattr(cls, "__qualname__", None)
    made = type(cls)(cls.__name__, cls.__bases__, body)
    if qualname is not None:
        made.__qualname__ = qualname
    return made
