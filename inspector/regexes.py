"""Regular expressions that a run compiles, made from programs written with the package (issue 16).

`re.compile` parses a pattern and turns it into a program of `_sre` codes in pure Python: 1 to 2 million
instructions a pattern (0.1-0.5 ms), and every run compiles the role and kind rules its names need and, for a
PyTorch pickle of 8 KiB or more, the scan pattern of `loaders._pickle_fast`. Importing `re` itself (with `enum`) is
another 15 million. `inspector/regex_programs.py` holds the program `re` makes of each pattern a run may compile
(`patterns`: every role and kind rule's, the scan pattern of pickles under 256 KiB, the few patterns a file's path
or names are matched against, and those argparse compiles to parse the command line), written by
`python -m inspector.needles` under the Python that runs it.
`compile` gives such a program to `_sre.compile`, the call `re.compile` itself ends with (it checks the program is
well formed), and compiles any other pattern, or every pattern under another Python, with `re.compile` (`re` is
imported then): the same `re.Pattern` either way (patterns compare equal when their programs do, and
`tests/test_speed.py` compares each). A run that compiles only written patterns never imports `re`: every pattern
the package matches goes through `compile` (or `escape`), not through `re`'s functions.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from typing import Any, AnyStr

    Program = tuple[int, int, bytes, tuple[str | None, ...]]

# pattern -> (the flags it is compiled with, those and the flags it sets, its code as native 32-bit words, each
# group's name or None): loaded on first use
PROGRAM = "tuple[int, int, bytes, tuple[str | None, ...]]"  # (its type, as the written table states it)
_programs: dict[str | bytes, Program] | None = None
_compiled: dict[tuple[type, str | bytes, int], Any] = {}  # (as `re`'s cache: a pattern is made once a run)
DOTALL = 16  # re.DOTALL
ASCII = 256  # re.ASCII
MULTILINE = 8  # re.MULTILINE
# what `re.escape` puts a backslash before
_SPECIAL = {c: "\\" + chr(c) for c in b"()[]{}?*+-|^$\\.&~# \t\n\r\v\f"}


def compile(pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:  # noqa: A001 - `re.compile`'s name and use
    """`re.compile(pattern, flags)`, from the written program when there is one."""
    key = (pattern.__class__, pattern, flags)
    made = _compiled.get(key)
    if made is not None:
        return made  # type: ignore[no-any-return]
    program = (_programs if _programs is not None else _load()).get(pattern)
    if program is None or program[0] != flags:
        import re

        made = re.compile(pattern, flags)
    else:
        import _sre  # (built in)

        _, all_flags, code, names = program
        index = {name: i for i, name in enumerate(names) if name is not None}
        made = _sre.compile(pattern, all_flags, memoryview(code).cast("I").tolist(), len(names) - 1, index, names)
    _compiled[key] = made
    return made  # type: ignore[no-any-return]


def match(pattern: AnyStr, string: AnyStr, flags: int = 0) -> re.Match[AnyStr] | None:
    """`re.match`."""
    return compile(pattern, flags).match(string)


def fullmatch(pattern: AnyStr, string: AnyStr, flags: int = 0) -> re.Match[AnyStr] | None:
    """`re.fullmatch`."""
    return compile(pattern, flags).fullmatch(string)


def search(pattern: AnyStr, string: AnyStr, flags: int = 0) -> re.Match[AnyStr] | None:
    """`re.search`."""
    return compile(pattern, flags).search(string)


def findall(pattern: AnyStr, string: AnyStr, flags: int = 0) -> list[Any]:
    """`re.findall`."""
    return compile(pattern, flags).findall(string)


def sub(pattern: AnyStr, repl: Any, string: AnyStr, count: int = 0, flags: int = 0) -> AnyStr:
    """`re.sub`."""
    return compile(pattern, flags).sub(repl, string, count)


def escape(pattern: AnyStr) -> AnyStr:
    """`re.escape(pattern)`: its special characters each after a backslash."""
    if isinstance(pattern, str):
        return pattern.translate(_SPECIAL)  # type: ignore[return-value]
    return pattern.decode("latin1").translate(_SPECIAL).encode("latin1")  # type: ignore[return-value]


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
    """The patterns whose programs are written: every role and kind rule's, the scan pattern of a pickle under
    256 KiB (`loaders._pickle_fast`), those a file's path or names are matched against (a URL, the registry's file
    names, shards' names, Keras's numbered names, frozen norms' modules, the family tables' placeholders), and those
    argparse compiles to parse the command line (`inspector.cli.argparse_patterns`)."""
    from inspector.checks import AUTO_SUFFIX
    from inspector.cli import argparse_patterns
    from inspector.family_check import DIM, PLACEHOLDER, SEGMENT_INDEX
    from inspector.kinds import FROZEN_BATCHNORM_MODULES, KIND_RULES
    from inspector.probe import URL
    from inspector.roles import ROLE_RULES
    from loaders import FORMATS
    from loaders._pickle_fast import small_scan_pattern
    from loaders.safetensors import SHARD_NAME
    from loaders.tf_checkpoint import DATA_SHARD

    rules = dict.fromkeys([r.pattern for r in ROLE_RULES] + [r.pattern for r in KIND_RULES])
    matched = [URL, *(f.names for f in FORMATS if f.names), SHARD_NAME, DATA_SHARD]  # (a path)
    matched += [AUTO_SUFFIX, FROZEN_BATCHNORM_MODULES, *(p.pattern for p in (PLACEHOLDER, DIM, SEGMENT_INDEX))]
    return [*((p, 0) for p in rules), small_scan_pattern(), *((p, 0) for p in matched), *argparse_patterns()]


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
