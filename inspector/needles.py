"""The literal every match of a table's pattern contains, read off the pattern's text without compiling it.

Compiling a regular expression costs about 0.1 ms (mostly `re`'s pure-Python parser), and a name that only the last
of 75 role rules explains used to compile all 75 on every run. A rule whose needle is not in the name cannot match
it, so a matcher skips the rule with one `in` test and compiles only the rules left (issue 16).

`needle(pattern)` is conservative: it reads the top level of the pattern and the groups that must match exactly
once, joins the characters that stand for themselves into runs, and returns the longest run. Anything it does not
follow (a class, a quantifier, an alternative, a flag group, a look-around) ends a run; an alternative at the top
discards all runs, and a group of alternatives gives the prefix or suffix its alternatives share
(`(?:position_ids|token_type_ids)`: `_ids`), as each match of the group is one alternative's match. An empty needle
means "no cheap test": the rule is always tried.
"""

from __future__ import annotations

import re

ESCAPED_LITERALS = frozenset(".-/:_[](){}?*+|^$\\ ")  # `\.` and the like: the character itself
FLAGS = frozenset("aiLmsux-")
# The pattern's pieces, read by `re` at C speed (one pattern, compiled on first use): an escape, a group's opening
# (with what says its kind), a class, a repeat count, a run of characters that stand for themselves, or any other one
# character (')', '|', a quantifier, '.', '^', '$', a '{' or '[' that opens nothing)
TOKENS = r"\\.|\((?:\?P<[^>]*>|\?:?)?|\[\^?\]?(?:\\.|[^\]\\])*\]|\{[\d,]*\}|[^\\()|\[{*+?.^$]+|."


def needle(pattern: str) -> str:
    if _global_flags(pattern):  # (?i) and the like change what every character means
        return ""
    runs, _, alternatives = _sequence(re.findall(TOKENS, pattern, re.DOTALL), 0)
    return "" if alternatives else max(runs, key=len, default="")


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


QUANTIFIER_TOKENS = frozenset("*+?")


def _sequence(tokens: list[str], k: int) -> tuple[list[str], int, bool]:
    """Required literal runs of the sequence starting at token `k`, up to its closing ')' or the end; the token
    reached; and whether the level has alternatives (then its runs are what all of them hold, `_common`)."""
    runs: list[str] = []
    branches: list[list[str]] = []  # the runs of each alternative before the last
    current = ""
    end = len(tokens)
    while k < end:
        token = tokens[k]
        k += 1
        first = token[0]
        if first == ")":
            k -= 1
            break
        if first == "|":
            branches.append([*runs, current])
            runs, current = [], ""
            continue
        inner: list[str] = []
        literal: str | None = None
        if first == "(":
            inner, k = _group(tokens, k, token in ("(", "(?:") or token.startswith("(?P<"))
        elif first == "\\":
            literal = token[1] if token[1:] in ESCAPED_LITERALS else None
        elif first not in "[.^$*+?{":
            literal = token  # characters that stand for themselves (a ']' or '}' among them)
        after = tokens[k] if k < end else ""
        quantified = after in QUANTIFIER_TOKENS or after[:1] == "{"
        if literal is not None:
            if not quantified:
                current += literal
                continue
            # the last character is repeated: what comes before it is there once, and it too for '+'
            current += literal if after == "+" else literal[:-1]
        runs.append(current)
        current = ""
        if not quantified and inner:
            runs.extend(inner)
    runs.append(current)
    if branches:
        return _common([*branches, runs]), k, True
    return [r for r in runs if r], k, False


def _common(branches: list[list[str]]) -> list[str]:
    """What every alternative holds for sure, as a one-run list (or none): the longer of the prefix their first runs
    share and the suffix their last runs share, two characters or more (one letter, in most names, would only hide a
    better run beside it)."""
    runs = [[r for r in branch if r] for branch in branches]
    if not all(runs):
        return []
    prefix = _prefix([branch[0] for branch in runs])
    suffix = _prefix([branch[-1][::-1] for branch in runs])[::-1]
    best = max(prefix, suffix, key=len)
    return [best] if len(best) > 1 else []


def _prefix(words: list[str]) -> str:
    low, high = min(words), max(words)  # the prefix these two share, all the others between them share too
    n = 0
    while n < len(low) and low[n] == high[n]:
        n += 1
    return low[:n]


def _group(tokens: list[str], k: int, plain: bool) -> tuple[list[str], int]:
    """The required runs of the group whose opening token precedes `k` (none for flag and look-around groups), and
    the token past its ')'."""
    runs, k, _ = _sequence(tokens, k)
    return runs if plain else [], k + 1
