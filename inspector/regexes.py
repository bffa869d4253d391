"""Regular expressions that start-up compiles, made from programs written with the package (issue 16).

`re.compile` parses a pattern and turns it into a program of `_sre` codes in pure Python: 1 to 2 million
instructions a pattern (0.1-0.5 ms), and every run compiles the role and kind rules its names need and, for a
PyTorch pickle of 8 KiB or more, the scan pattern of `loaders._pickle_fast`. `inspector/regex_programs.py` holds the
program `re` makes of each of those patterns (every role and kind rule's, the scan pattern of pickles under
256 KiB), written by `python -m inspector.needles` under the Python that runs it.
`compile` gives such a program to `_sre.compile`, the call `re.compile` itself ends with (it checks the program is
well formed), and compiles any other pattern, or every pattern under another Python, with `re.compile`: the same
`re.Pattern` either way (patterns compare equal when their programs do, and `tests/test_speed.py` compares each).
"""

from __future__ import annotations

import re
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, AnyStr

    Program = tuple[int, int, bytes, tuple[str | None, ...]]

# pattern -> (the flags it is compiled with, those and the flags it sets, its code as native 32-bit words, each
# group's name or None): loaded on first use
PROGRAM = "tuple[int, int, bytes, tuple[str | None, ...]]"  # (its type, as the written table states it)
_programs: dict[str | bytes, Program] | None = None


def compile(pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:  # noqa: A001 - `re.compile`'s name and use
    """`re.compile(pattern, flags)`, from the written program when there is one."""
    program = (_programs if _programs is not None else _load()).get(pattern)
    if program is None or program[0] != flags:
        return re.compile(pattern, flags)
    import _sre  # (loaded with `re`)

    _, all_flags, code, names = program
    index = {name: i for i, name in enumerate(names) if name is not None}
    return _sre.compile(pattern, all_flags, memoryview(code).cast("I").tolist(), len(names) - 1, index, names)  # type: ignore[no-any-return]


def runtime() -> tuple[Any, ...]:
    """What a program depends on: the Python, `_sre`'s code version, the byte order of the written words."""
    import _sre

    return (*sys.version_info[:2], _sre.MAGIC, _sre.CODESIZE, sys.byteorder)


def _load() -> dict[str | bytes, Program]:
    global _programs
    try:
        from inspector import regex_programs as written
    except ImportError:  # pragma: no cover - a checkout whose table is being rewritten
        _programs = {}
    else:
        _programs = written.PROGRAMS if written.RUNTIME == runtime() else {}
    return _programs


def program(pattern: str | bytes, flags: int = 0) -> Program:
    """The program `re` makes of a pattern, as `compile` reads it (`re._compiler.compile`'s steps)."""
    from array import array
    from re import _compiler, _parser  # type: ignore[attr-defined]

    parsed = _parser.parse(pattern, flags)
    code = _compiler._code(parsed, flags)
    names: list[str | None] = [None] * parsed.state.groups
    for name, index in parsed.state.groupdict.items():
        names[index] = name
    return flags, int(flags | parsed.state.flags), array("I", map(int, code)).tobytes(), tuple(names)


def patterns() -> list[tuple[str | bytes, int]]:
    """The patterns whose programs are written: every role and kind rule's, and the scan pattern of a pickle under
    256 KiB (`loaders._pickle_fast`)."""
    from inspector.kinds import KIND_RULES
    from inspector.roles import ROLE_RULES
    from loaders._pickle_fast import small_scan_pattern

    rules = dict.fromkeys([r.pattern for r in ROLE_RULES] + [r.pattern for r in KIND_RULES])
    return [*((p, 0) for p in rules), small_scan_pattern()]


HEADER = '''"""The `_sre` programs of the patterns a run may compile (`inspector.regexes`), for the Python in RUNTIME:
compiling them from their text cost 1-2 million instructions a pattern. Written by `python -m inspector.needles`;
tests/test_speed.py checks it is current and that each program is the one `re` makes."""

from __future__ import annotations

# fmt: off
'''


def write(path: str) -> None:
    """Write the programs of `patterns()` as the module `inspector.regex_programs`."""
    rows = "".join(f"    {p!r}: {program(p, f)!r},\n" for p, f in patterns())
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(f"{HEADER}RUNTIME = {runtime()!r}\nPROGRAMS: dict[str | bytes, {PROGRAM}] = {{\n{rows}}}\n")
