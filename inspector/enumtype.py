"""`StrEnum` and `IntEnum`: the project's enums, what `enum.StrEnum` and `enum.IntEnum` give at the cost of a class.

Importing `enum` is about 6 million instructions (1.2 ms, 4% of a 128-tensor run: its own `Flag`, `IntFlag` and
`StrEnum` are made by `EnumType` with its checks and hooks), and nothing else a run loads needs it once `re` is not
imported either (issue 16). These give what the project uses of an enum: members in the order of the class body, each
an instance of the class and of `str` (`int`), equal to and hashed as its value; `name` and `value`; lookups by value
(`Kind("x")`) and by name (`Kind["X"]`); iteration, `len`, `in`; the repr, str, format and JSON text of the standard
library's (a `StrEnum` member is its value's text, an `IntEnum` member its number's); pickling and copying give the
member itself. For the type checker they are the standard library's (`tests/test_startup.py` compares the two)::

    class Severity(StrEnum):
        INFO = "info"
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from enum import IntEnum, StrEnum
    from typing import Any
else:

    class _EnumType(type):
        """The type of an enum class: a class body's public names become its members."""

        def __new__(mcls, name: str, bases: tuple[type, ...], body: dict[str, Any]) -> type:
            members = {k: v for k, v in body.items() if not k.startswith("_")}
            for k in members:
                del body[k]
            cls = type.__new__(mcls, name, bases, body)
            base = next((b for b in cls.__mro__ if b in (str, int)), None)
            cls._member_map_ = by_name = {}
            cls._value2member_map_ = by_value = {}
            for key, value in members.items():
                member = by_value.get(value)
                if member is None:  # (a second name of a value is an alias of its member, as in `enum`)
                    member = base.__new__(cls, value)
                    member._name_ = member.name = key
                    member._value_ = member.value = base(value)
                    by_value[value] = member
                by_name[key] = member
                type.__setattr__(cls, key, member)
            return cls

        def __call__(cls, value: Any) -> Any:
            try:
                return cls._value2member_map_[value]
            except (KeyError, TypeError):
                raise ValueError(f"{value!r} is not a valid {cls.__qualname__}") from None

        def __getitem__(cls, name: str) -> Any:
            return cls._member_map_[name]

        def __iter__(cls) -> Any:
            return iter(cls._value2member_map_.values())  # (each member once, in the body's order; no alias)

        def __reversed__(cls) -> Any:
            return reversed(cls._value2member_map_.values())

        def __len__(cls) -> int:
            return len(cls._value2member_map_)

        def __contains__(cls, value: Any) -> bool:
            return isinstance(value, cls) or value in cls._value2member_map_

        def __setattr__(cls, name: str, value: Any) -> None:
            if name in cls.__dict__.get("_member_map_", ()):
                raise AttributeError(f"cannot reassign member {name!r}")
            type.__setattr__(cls, name, value)

        def __bool__(cls) -> bool:
            return True

        def __repr__(cls) -> str:
            return f"<enum {cls.__name__!r}>"

        @property
        def __members__(cls) -> Any:
            from types import MappingProxyType

            return MappingProxyType(cls._member_map_)

    class _Member:
        """What every member has besides its value's type's methods."""

        __slots__ = ()

        def __repr__(self) -> str:
            return f"<{self.__class__.__name__}.{self._name_}: {self._value_!r}>"

        def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
            return self.__class__, (self._value_,)

        def __copy__(self) -> Any:
            return self

        def __deepcopy__(self, memo: Any) -> Any:
            return self

    class StrEnum(_Member, str, metaclass=_EnumType):
        """An enum whose members are strings (`enum.StrEnum`)."""

        __str__ = str.__str__
        __format__ = str.__format__

    class IntEnum(_Member, int, metaclass=_EnumType):
        """An enum whose members are integers (`enum.IntEnum`)."""

        __str__ = int.__repr__
        __format__ = int.__format__


__all__ = ["IntEnum", "StrEnum"]
