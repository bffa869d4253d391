"""`record`: the class decorator of every record, what `dataclasses.dataclass` gives at the cost of a plain class.

`dataclasses` compiles six methods per class, one `exec` each, about 0.3 ms a class, and imports `inspect` (with
`ast`, `dis` and `tokenize`): with 80 record classes that was a fifth of every run's start-up (issue 16). `record`
gives what the project uses of `dataclass`: `__init__` (defaults, `field(default_factory=...)`, `__post_init__`),
`__repr__`, `__eq__` and `__hash__` over the compared fields, `slots` (the class is made again with `__slots__`)
and inherited fields. Only `__init__` is compiled, for speed, and only once the class has made `COMPILE_AFTER`
instances (most record classes of a run make a few or none; the first ones are bound by a shared `__init__`); the
other methods are shared functions reading the class's fields (`__eq__` and `__hash__` through one `attrgetter`).
A slotted class is made again once, with its slots and methods in its body. Its parameters and defaults are
`dataclass`'s, and `field`, `fields`, `replace` and `asdict` behave as the `dataclasses` functions of the same
names, so a record reads as a dataclass. A method the class body defines itself is kept, as `dataclass` keeps it.

`frozen=True` makes a value: equal and hashed by its fields, and never assigned after it is made. The type checker
holds that (`record` is a PEP 681 `dataclass_transform`: mypy reports an assignment to a field of a frozen record,
`tests/test_recordtype.py` runs it); at run time the assignment is not intercepted, as on a plain `__slots__`
class, because intercepting it makes every record's `__init__` set its fields through `object.__setattr__`: a
report of 100,000 tensors makes half a million records, and that was 0.23 s of its 1.6 s.

The project's enums are `inspector.enumtype`'s, for the same reason.
"""

from __future__ import annotations

from itertools import repeat
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
VALUES = "__record_values__"  # (all fields as one tuple, their places by name): made by a class's first `replace`


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
    """A copy of `obj` with some fields changed (`__init__` and `__post_init__` run again). The fields are read in one
    C call and passed in order, not by keyword (the families' table makes a thousand copies at import: 11 million
    instructions by keyword, 3 so); a name no field has is passed by keyword, for the class's `__init__` to refuse, as
    `dataclasses.replace`'s call does."""
    cls = obj.__class__
    read = cls.__dict__.get(VALUES)
    if read is None:  # (the class's first copy: its reader and its fields' places, kept in its own dict)
        names = [f.name for f in fields(cls)]
        read = (_key(names), {name: i for i, name in enumerate(names)})
        type.__setattr__(cls, VALUES, read)
    values, places = list(read[0](obj)), read[1]
    unknown = {}
    for name, value in changes.items():
        place = places.get(name)
        if place is None:
            unknown[name] = value
        else:
            values[place] = value
    return cls(*values, **unknown)  # type: ignore[no-any-return]


def copies(obj: T, field_name: str, /) -> Callable[[Any], T]:
    """A function making copies of `obj` that differ in one field: `copies(obj, "name")(value)` equals
    `replace(obj, name=value)`, made without `__init__` and `__post_init__` (the other values are `obj`'s, checked when
    it was made): an object and its fields set in one Python call, where a class's call runs `__init__` through the
    type's slot (a model's 100,000 layers of a few kinds: about 1,100 instructions a copy of 3,000). The function is
    the compiled code of its number of fields (`_COPY_CODE`, one compile a process, so for large files: about 0.06
    ms), its field names put in, `obj`'s values its defaults."""
    cls = obj.__class__
    names = [f.name for f in fields(cls)]
    if field_name not in names:
        raise TypeError(f"{cls.__name__} has no field {field_name!r}")
    order = [field_name, *[name for name in names if name != field_name]]
    code = _COPY_CODE.get(len(order))
    if code is None:
        params = ", ".join(f"a{i}" for i in range(len(order)))
        body = "".join(f"    self.n{i} = a{i}\n" for i in range(len(order)))
        namespace: dict[str, Any] = {}
        exec(f"def copy({params}):\n    self = new(cls)\n{body}    return self\n", namespace)  # noqa: S102 - numbered names only
        code = _COPY_CODE[len(order)] = namespace["copy"].__code__
    placed = {f"n{i}": name for i, name in enumerate(order)}
    code = code.replace(co_names=tuple([placed.get(n, n) for n in code.co_names]))
    defaults = tuple([getattr(obj, name) for name in order[1:]])
    return _FUNCTION(code, {"new": object.__new__, "cls": cls}, "copy", defaults or None)  # type: ignore[no-any-return]


_COPY_CODE: dict[int, Any] = {}  # (`copies`: the code by number of fields, compiled once a process)
# objects of a kind from which a caller makes them as `copies` (below, the compile a field count costs more than the
# copies save: a file's start-up is not made slower)
COPIED_FROM = 2048


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
    mro = cls.__mro__
    found: dict[str, Field] = {}
    for base in reversed(mro[1:]):
        inherited = base.__dict__.get(FIELDS)
        if inherited:
            found.update({f.name: f for f in inherited})
    own = []
    body = cls.__dict__
    for name, annotation in body.get("__annotations__", {}).items():
        if str(annotation).startswith(("ClassVar", "typing.ClassVar")):
            continue
        value = body.get(name, MISSING)
        f = value if isinstance(value, Field) else Field(value)
        f.name, f.type = name, annotation
        found[name] = f
        own.append(name)
    all_fields = tuple(found.values())
    defaulted = [f.default is not MISSING or f.default_factory is not MISSING for f in all_fields]
    required = defaulted.index(True) if True in defaulted else len(defaulted)  # the fields with no default
    if not all(defaulted[required:]):
        f = all_fields[defaulted.index(False, required)]
        raise TypeError(f"{cls.__name__}: non-default field {f.name!r} follows a default field")
    # a body that defines __eq__ gets __hash__ = None from Python itself: that is not a hash of its own
    own_hash = "__hash__" in body and not (body["__hash__"] is None and "__eq__" in body)
    init, set_owner = _lazy_init(all_fields, required)
    added: dict[str, Any] = {FIELDS: all_fields, KEY: _key([f.name for f in all_fields if f.compare])}
    if "__init__" not in body:
        added["__init__"] = init
    if "__repr__" not in body:
        added["__repr__"] = _repr
    if eq:
        if "__eq__" not in body:
            added["__eq__"] = _eq
        if not own_hash:
            added["__hash__"] = _hash if frozen else None  # as dataclass: mutable and equal by value: unhashable
    if slots:
        # the class made again, once, with its slots and methods in its body (setting a special method on a made
        # class updates its type slots one by one)
        in_bases = {n for b in mro[1:-1] for n in b.__dict__.get("__slots__", ())}
        cls = _slotted(cls, [n for n in own if n not in in_bases] if in_bases else own, added)
    else:
        for f in all_fields:
            if f.name in own:
                if f.default is not MISSING:
                    setattr(cls, f.name, f.default)
                elif f.name in body:
                    delattr(cls, f.name)
        for name, value in added.items():
            setattr(cls, name, value)
    init.__qualname__ = cls.__qualname__ + ".__init__"
    set_owner(cls)
    return cls


def _key(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """The named fields of a record as one tuple, read at C speed (the compared ones: `KEY`; all: `replace`)."""
    if len(names) > 1:
        return attrgetter(*names)  # type: ignore[return-value]
    # (a function kept in the class would be bound to the instance it is read from: a static one is not)
    if names:
        one = attrgetter(names[0])
        return staticmethod(lambda self: (one(self),))  # type: ignore[return-value]
    return staticmethod(lambda self: ())  # type: ignore[return-value]


def _lazy_init(all_fields: tuple[Field, ...], required: int) -> tuple[Callable[..., None], Callable[[type], None]]:
    """The `__init__` of a record class, and the function that tells it its class once the class is made.

    Compiling the class's own `__init__` (one `exec`, 30-60 us) is what a record class costs, and most record
    classes of a run make few instances or none. This one binds its arguments itself for the first
    `COMPILE_AFTER` instances; the next call, or a call it does not bind plainly (an unknown or repeated
    keyword, a missing or extra argument), compiles the class's own, puts it on the class and calls it (so
    errors are Python's own)."""
    names = tuple([f.name for f in all_fields])
    known = frozenset(names)
    defaults = {f.name: f.default for f in all_fields[required:] if f.default is not MISSING}
    factories = {f.name: f.default_factory for f in all_fields[required:] if f.default_factory is not MISSING}
    owner: type = object
    calls = 0
    post_init = False

    def set_owner(cls: type) -> None:
        nonlocal owner, post_init
        owner, post_init = cls, any("__post_init__" in c.__dict__ for c in cls.__mro__)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        nonlocal calls
        calls += 1
        if calls <= COMPILE_AFTER and not kwargs and required <= len(args) <= len(names) and not factories:
            # (the usual call: the fields in order, none with a factory; one C loop of setattr)
            any(map(setattr, repeat(self), names, args))
            for name in names[len(args) :]:
                setattr(self, name, defaults[name])
            if post_init:
                self.__post_init__()
            return
        if calls <= COMPILE_AFTER and required <= len(args) + len(kwargs) and len(args) <= len(names):
            values = dict(zip(names, args, strict=False))
            if not kwargs or (known.issuperset(kwargs) and values.keys().isdisjoint(kwargs)):
                values.update(kwargs)
                if all(n in values for n in names[:required]):
                    for name in names:
                        if name in values:
                            value = values[name]
                            if value is MISSING and name in factories:  # as `field(default_factory=...)` reads it
                                value = factories[name]()
                        else:
                            value = defaults[name] if name in defaults else factories[name]()
                        setattr(self, name, value)
                    if post_init:
                        self.__post_init__()
                    return
        real = _compile_init(owner, all_fields)
        real.__qualname__ = f"{owner.__qualname__}.__init__"
        type.__setattr__(owner, "__init__", real)
        real(self, *args, **kwargs)

    return __init__, set_owner


COMPILE_AFTER = 8  # instances a record class makes before its own `__init__` is compiled


def _compile_init(cls: type, all_fields: tuple[Field, ...]) -> Callable[..., None]:
    """The class's own `__init__`: the compiled code of its shape with its field names put in.

    The names are not in a function's instructions (they are its `co_varnames` and `co_names`), so classes of one
    shape (the number of fields, which have a factory, whether `__post_init__` is called) share one compile, as
    `def __init__(self, name, shape=_d_shape, ...)` would be for each (about 0.1 ms a compile, issue 16)."""
    names = tuple([f.name for f in all_fields])
    if "self" in names:  # (the parameter `self` repeated: Python's own SyntaxError)
        return _compile_source(cls, all_fields)
    made = tuple([i for i, f in enumerate(all_fields) if f.default is MISSING and f.default_factory is not MISSING])
    key = (len(names), made, hasattr(cls, "__post_init__"))
    template = _TEMPLATES.get(key)
    if template is None:
        template = _TEMPLATES[key] = _written(key) or _template(*key)
    placed = {f"n{i}": name for i, name in enumerate(names)}
    code = template.replace(co_varnames=("self", *names), co_names=tuple([placed.get(n, n) for n in template.co_names]))
    namespace: dict[str, Any] = {"MISSING": MISSING}
    for i in made:
        namespace[f"_f{i}"] = all_fields[i].default_factory
    defaults = tuple([f.default for f in all_fields if f.default is not MISSING or f.default_factory is not MISSING])
    return _FUNCTION(code, namespace, "__init__", defaults or None)  # type: ignore[no-any-return]


_FUNCTION: Any = type(_compile_init)  # types.FunctionType
# `__init__` code by shape (fields, those with a factory, __post_init__), compiled once a process
_TEMPLATES: dict[tuple[int, tuple[int, ...], bool], Any] = {}


def _template(count: int, made: tuple[int, ...], post_init: bool) -> Any:
    """`__init__` code for `count` fields named n0, n1... from parameters a0, a1... (a factory field's parameter
    defaults to MISSING, and `_f<i>` makes its value)."""
    namespace: dict[str, Any] = {}
    exec(_template_source(count, made, post_init), namespace)  # noqa: S102 - built from numbered names only
    return namespace["__init__"].__code__


def _template_source(count: int, made: tuple[int, ...], post_init: bool, name: str = "__init__") -> str:
    body = [f"self.n{i} = _f{i}() if a{i} is MISSING else a{i}" if i in made else f"self.n{i} = a{i}" for i in
            range(count)]  # fmt: skip
    if post_init:
        body.append("self.__post_init__()")
    params = "".join(f", a{i}" for i in range(count))
    return f"def {name}(self{params}):\n" + "".join(f"    {line}\n" for line in body or ["pass"])


# The shapes whose `__init__` code is written in `inspector.record_inits` (compiled with the package, read from its
# .pyc: a compile costs about 0.06 ms, and a run compiled eight or nine of them): fields without factories, up to
# WRITTEN_FIELDS of them (the package's records have at most 15), with and without `__post_init__`
WRITTEN_FIELDS = 16


def _written(key: tuple[int, tuple[int, ...], bool]) -> Any:
    """The written code of a shape (as `_template` compiles it: the same name, file name and lines), or None."""
    count, made, post_init = key
    if made or count > WRITTEN_FIELDS:
        return None
    from inspector import record_inits  # (written by `python -m inspector.recordtype`)

    code = getattr(record_inits, _written_name(count, post_init)).__code__
    return code.replace(co_name="__init__", co_qualname="__init__", co_filename="<string>", co_firstlineno=1)


def _written_name(count: int, post_init: bool) -> str:
    return f"init_{count}_post" if post_init else f"init_{count}"


def write(path: str) -> None:
    """Write `inspector/record_inits.py`: the `__init__` code of every shape `_written` reads."""
    functions = [
        _template_source(count, (), post_init, _written_name(count, post_init))
        for count in range(WRITTEN_FIELDS + 1)
        for post_init in (False, True)
    ]
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(WRITTEN_HEADER + "\n\n".join(functions))


WRITTEN_HEADER = """\
\"\"\"The `__init__` code of record shapes (`inspector.recordtype`): fields n0, n1... set from parameters a0, a1...,
then `__post_init__` where the name says so. Compiled with the package, so a run reads them from the .pyc instead of
compiling each shape it makes (about 0.06 ms a compile). Written by `python -m inspector.recordtype`;
tests/test_speed.py checks it is current and that each function's code is the compiled template's.\"\"\"


"""


def _compile_source(cls: type, all_fields: tuple[Field, ...]) -> Callable[..., None]:
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


def _slotted(cls: type[T], slot_names: list[str], added: dict[str, Any]) -> type[T]:
    """The class made again with `__slots__` and `added` (a class's slots can only be declared when it is created)."""
    body = dict(cls.__dict__)
    for name in slot_names:
        body.pop(name, None)
    body.pop("__dict__", None)
    body.pop("__weakref__", None)
    body["__slots__"] = tuple(slot_names)
    body["__qualname__"] = cls.__qualname__
    body.update(added)
    metaclass: Any = type(cls)
    return metaclass(cls.__name__, cls.__bases__, body)  # type: ignore[no-any-return]


if __name__ == "__main__":
    import os

    write(os.path.join(os.path.dirname(os.path.abspath(__file__)), "record_inits.py"))
