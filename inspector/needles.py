"""The literals every match of a table's pattern contains, read off the pattern's text without compiling it.

Compiling a regular expression costs about 0.1 ms (mostly `re`'s pure-Python parser), and a name that only the last
of 75 role rules explains used to compile all 75 on every run. A rule one of whose needles is not in the name cannot
match it, so a matcher skips the rule with a few `in` tests and compiles only the rules left (issue 16).

`needles(pattern)` is conservative: it reads the top level of the pattern and the groups that must match exactly
once, joins the characters that stand for themselves into runs, and returns the runs, the longest first (`needle`:
the longest). Anything it does not follow (a class, a quantifier, an alternative, a flag group, a look-around) ends
a run; an alternative at the top discards all runs, and a group of alternatives gives the prefix or suffix its
alternatives share (`(?:position_ids|token_type_ids)`: `_ids`), as each match of the group is one alternative's
match. No needle means "no cheap test": the rule is always tried.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from inspector import regexes

try:  # the tables written for the rule tables (by `python -m inspector.needles`, which runs without them)
    from inspector.rule_needles import NEEDLES, SPELLED
except ImportError:  # pragma: no cover - a checkout whose table is being rewritten
    NEEDLES, SPELLED = {}, {}

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ESCAPED_LITERALS = frozenset(".-/:_[](){}?*+|^$\\ ")  # `\.` and the like: the character itself
FLAGS = frozenset("aiLmsux-")
# The pattern's pieces with their quantifiers, read by `re` at C speed (one pattern, compiled on first use): an
# escape, a group's opening (with what says its kind), its closing, a bar, a class, a run of characters that stand
# for themselves, or any other one character ('.', '^', '$', a '{' that opens no count)
TOKENS = r"(\\.|\((?:\?P<[^>]*>|\?:?)?|\)|\||\[\^?\]?(?:\\.|[^\]\\])*\]|[^\\()|\[{*+?.^$]+|.)((?:[*+?]|\{[\d,]*\})\??)?"


def needle(pattern: str) -> str:
    """The longest literal every match contains ("" for none)."""
    literals = split(pattern)[0]
    return literals[0] if literals else ""


def needles(pattern: str) -> tuple[str | tuple[str, ...], ...]:
    """What every match contains: literals (each run of two characters or more, or the one run there is, the longest
    first), then clauses, a tuple of literals of which every match contains one (a group of alternatives, each with
    a literal: `(?:running_mean|running_var)`). A rule is tried on a name only when all are in it (`lora_A.weight`
    needs 'lora_' as much as '.weight') and one literal of each clause is."""
    if _global_flags(pattern):  # (?i) and the like change what every character means
        return ()
    runs, _, alternatives = _sequence(iter(regexes.findall(TOKENS, pattern, regexes.DOTALL)))
    if alternatives or not runs:
        return ()
    literals = sorted(dict.fromkeys(r for r in runs if r.__class__ is str), key=len, reverse=True)  # (stable)
    clauses = [r for r in dict.fromkeys(runs) if r.__class__ is tuple]
    return (*([r for r in literals if len(r) > 1] or literals[:1]), *clauses)  # type: ignore[arg-type]


Split = tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]  # (literals, clauses): what a matcher tests


def split(pattern: str) -> Split:
    """A pattern's needles as (literals, clauses): from the table written for the rule tables (`rule_needles`), else
    read off the pattern now."""
    known = NEEDLES.get(pattern)
    return known if known is not None else _split(needles(pattern))


def _split(found: tuple[str | tuple[str, ...], ...]) -> Split:
    literals = tuple(n for n in found if n.__class__ is str)
    return literals, tuple(n for n in found if n.__class__ is tuple)  # type: ignore[misc]


DIGITS = "0123456789"
BACKREFERENCES = ("(?P=", *(f"\\{d}" for d in "123456789"))  # (?P=name), \1 ... \9


def spelled(patterns: Iterable[str]) -> list[str | None]:
    """The digits each pattern spells out (in its text outside escapes: `layers.0.`, a `{2}` count), or None when a
    digit's value means more to it than that (a digit in a set, a backreference): what `roles.Matcher` keys its
    memo by. From the table written for the rule tables (`rule_needles`), else read off the pattern now."""
    # (a pattern the table was written from and does not list spells no digit)
    return [SPELLED.get(p, "") if p in NEEDLES else _spelled(p) for p in patterns]


def _spelled(pattern: str) -> str | None:
    if any(map(pattern.__contains__, BACKREFERENCES)):
        return None
    text = regexes.sub(r"\\.", "", pattern)  # (every escape and the character it escapes taken out)
    if regexes.search(r"\[[^\]]*\d", text):
        return None
    return "".join(d for d in DIGITS if d in text)


def table() -> dict[str, Split]:
    """The needles of every role and kind rule's pattern and of the registry's file-name patterns, read off them."""
    return {pattern: _split(needles(pattern)) for pattern in _patterns()}


def spelled_table() -> dict[str, str | None]:
    """The digits the same patterns spell (`spelled`), for those that spell any."""
    return {pattern: found for pattern in _patterns() if (found := _spelled(pattern)) != ""}


def _patterns() -> list[str]:
    from inspector.kinds import KIND_RULES
    from inspector.roles import ROLE_RULES
    from loaders import FORMATS

    return [r.pattern for r in ROLE_RULES] + [r.pattern for r in KIND_RULES] + [f.names for f in FORMATS if f.names]


HEADER = '''"""The needles (`inspector.needles`) of every role and kind rule's pattern and of the registry's file-name
patterns, read off them when this file was written, as (literals, clauses): reading them at each run's start cost
about 1.5 ms of 25; and the digits those that spell any spell (`SPELLED`, `inspector.needles.spelled`: 0.2 ms a
run). Written by `python -m inspector.needles`; tests/test_speed.py checks it is current (a pattern it lacks is read
at run time)."""

# fmt: off
'''


def write(path: str) -> None:
    """Write `table()` as the module `inspector.rule_needles`."""
    rows = "".join(f"    {pattern!r}: {found!r},\n" for pattern, found in table().items())
    digits = "".join(f"    {pattern!r}: {found!r},\n" for pattern, found in spelled_table().items())
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(HEADER + "NEEDLES = {\n" + rows + "}\nSPELLED = {\n" + digits + "}\n")


def _global_flags(p: str) -> bool:
    """Whether the pattern sets flags for all of itself, as `(?i)` does (a group `(?i:...)` is only that group)."""
    at = p.find("(?")
    while at >= 0:
        end = at + 2
        while end < len(p) and p[end] in FLAGS:
            end += 1
        if end > at + 2 and end < len(p) and p[end] == ")":
            return True
        at = p.find("(?", at + 2)
    return False


def _sequence(tokens: Iterator[tuple[str, str]]) -> tuple[list[Any], str, bool]:
    """Required literal runs and clauses of the sequence the tokens go on with, up to its closing ')' or the end; the
    closing's quantifier; and whether the level has alternatives (then its runs are what all of them hold,
    `_common`)."""
    runs: list[Any] = []  # literals (str) and clauses (tuple)
    branches: list[list[Any]] = []  # the runs of each alternative before the last
    current = ""
    closing = ""
    for token, quantifier in tokens:
        first = token[0]
        if first == ")":
            closing = quantifier
            break
        if first == "|":
            branches.append([*runs, current])
            runs, current = [], ""
            continue
        if first == "(":
            inner, repeated, _ = _sequence(tokens)
            runs.append(current)
            current = ""
            if not repeated and (token in ("(", "(?:") or token.startswith("(?P<")):  # flag, look-around: no
                runs.extend(inner)
            continue
        if first == "\\":
            literal = token[1] if token[1:] in ESCAPED_LITERALS else None
        elif first in "[.^$*+?{":
            literal = None
        else:
            literal = token  # characters that stand for themselves (a ']' or '}' among them)
        if literal is not None:
            if not quantifier:
                current += literal
                continue
            # the last character is repeated: what comes before it is there once, and it too for '+'
            current += literal if quantifier[0] == "+" else literal[:-1]
        runs.append(current)
        current = ""
    runs.append(current)
    if branches:
        return _common([*branches, runs]), closing, True
    return [r for r in runs if r], closing, False


def _common(branches: list[list[Any]]) -> list[Any]:
    """What every alternative holds for sure: the longer of the prefix their first runs share and the suffix their
    last runs share, two characters or more (one letter, in most names, would only hide a better run beside it), and
    the clause of each alternative's longest run, when each has one of two characters or more."""
    runs = [[r for r in branch if r and r.__class__ is str] for branch in branches]
    if not all(runs):
        return []
    prefix = _prefix([branch[0] for branch in runs])
    suffix = _prefix([branch[-1][::-1] for branch in runs])[::-1]
    best = max(prefix, suffix, key=len)
    out: list[Any] = [best] if len(best) > 1 else []
    longest = tuple(dict.fromkeys(max(branch, key=len) for branch in runs))
    if min(map(len, longest)) > 1 and longest != (best,):
        out.append(longest if len(longest) > 1 else longest[0])
    return out


def _prefix(words: list[str]) -> str:
    low, high = min(words), max(words)  # the prefix these two share, all the others between them share too
    n = 0
    while n < len(low) and low[n] == high[n]:
        n += 1
    return low[:n]


if __name__ == "__main__":  # the tables read off the rule tables' patterns: their needles and their programs
    import os

    from inspector import regexes

    here = os.path.dirname(os.path.abspath(__file__))
    write(os.path.join(here, "rule_needles.py"))
    regexes.write(os.path.join(here, "regex_programs.py"))
