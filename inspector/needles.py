"""The literal every match of a table's pattern contains, read off the pattern's text without compiling it.

Compiling a regular expression costs about 0.1 ms (mostly `re`'s pure-Python parser), and a name that only the last
of 75 role rules explains used to compile all 75 on every run. A rule whose needle is not in the name cannot match
it, so a matcher skips the rule with one `in` test and compiles only the rules left (issue 16).

`needle(pattern)` is conservative: it reads the top level of the pattern and the groups that must match exactly
once, joins the characters that stand for themselves into runs, and returns the longest run. Anything it does not
follow (a class, a quantifier, an alternative, a flag group, a look-around) ends a run; an alternative at a level
discards that level's runs. An empty needle means "no cheap test": the rule is always tried.
"""

from __future__ import annotations

ESCAPED_LITERALS = frozenset(".-/:_[](){}?*+|^$\\ ")  # `\.` and the like: the character itself
QUANTIFIERS = frozenset("*+?{")
FLAGS = frozenset("aiLmsux-")


def needle(pattern: str) -> str:
    if _global_flags(pattern):  # (?i) and the like change what every character means
        return ""
    runs, _, _ = _sequence(pattern, 0)
    return max(runs, key=len, default="")


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


def _sequence(p: str, i: int) -> tuple[list[str], int, bool]:
    """Required literal runs of the sequence starting at `i`, up to its closing ')' or the end; the index reached; and
    whether the level has alternatives (then none of its runs is required)."""
    runs: list[str] = []
    current = ""
    alternatives = False
    while i < len(p) and p[i] != ")":
        c = p[i]
        inner: list[str] = []
        literal: str | None = None
        if c == "|":
            alternatives = True
            i += 1
        elif c == "\\" and i + 1 < len(p):
            literal = p[i + 1] if p[i + 1] in ESCAPED_LITERALS else None
            i += 2
        elif c == "(":
            i, inner = _group(p, i)
        elif c == "[":
            i = _class_end(p, i)
        elif c in ".^$" or c in QUANTIFIERS:
            i += 1
        else:
            literal = c
            i += 1
        quantified = i < len(p) and p[i] in QUANTIFIERS
        if literal is not None and not quantified:
            current += literal
            continue
        if literal is not None and p[i] == "+":  # at least once: the character is there, what follows may repeat it
            current += literal
        runs.append(current)
        current = ""
        if not quantified:
            runs.extend(inner)
    runs.append(current)
    return ([] if alternatives else [r for r in runs if r]), i, alternatives


def _group(p: str, i: int) -> tuple[int, list[str]]:
    """Past the group at `i` (an opening parenthesis), and its required runs (none for flag and look-around groups)."""
    j = i + 1
    plain = True
    if p.startswith("?:", j):
        j += 2
    elif p.startswith("?P<", j):
        j = p.index(">", j) + 1
    elif p.startswith("?", j):  # (?i:...), look-arounds, back-references: not followed
        plain = False
    runs, j, _ = _sequence(p, j)
    end = j + 1 if j < len(p) else j  # past ')'
    return end, runs if plain else []


def _class_end(p: str, i: int) -> int:
    """Past the character class opening at `i`."""
    j = i + 1
    if j < len(p) and p[j] == "^":
        j += 1
    if j < len(p) and p[j] == "]":  # a ']' first is a member
        j += 1
    while j < len(p) and p[j] != "]":
        j += 2 if p[j] == "\\" else 1
    return j + 1
