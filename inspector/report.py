"""The whole analysis of one file: load, roles, expectation, byte accounting, findings -> `Report`."""

from __future__ import annotations

import os
from math import prod

from inspector.hfconfig import padded_heads
from inspector.reconcile import Accounting, account
from inspector.reconcile import findings as accounting_findings
from inspector.records import SCHEMA_VERSION, Checkpoint, Expectation, Finding, RoleMatch, Severity, TensorKind
from inspector.recordtype import record
from inspector.registry import load

UNSAFE = "UNSAFE_CONTENT"


@record(frozen=True, slots=True)
class Report:
    checkpoint: Checkpoint
    roles: tuple[RoleMatch, ...]
    expectation: Expectation | None
    accounting: Accounting
    findings: tuple[Finding, ...]
    schema_version: int = SCHEMA_VERSION

    @property
    def unsafe(self) -> bool:
        return any(f.code == UNSAFE for f in self.findings)


def padded_head_findings(ckpt: Checkpoint) -> list[Finding]:
    """PADDED_HEAD: a head stored with padding rows its model drops on load (`hfconfig.PADDED_HEADS`). The file's
    count keeps them, as the hub's MTP layers are kept (what the file holds); the finding gives the framework's."""
    padded = padded_heads(ckpt)
    if not padded:
        return []
    dropped = [(t, kept, word, (t.shape[0] - kept) * prod(t.shape[1:])) for t, kept, word in padded]
    counted = sum(extra for t, _, _, extra in dropped if t.kind is TensorKind.PARAMETER)
    heads = "; ".join(
        f"{t.name!r} stores {t.shape[0]:,} rows, its model holds {kept:,} (config {word}): the last "
        f"{t.shape[0] - kept:,} are padding ({extra:,} elements)"
        for t, kept, word, extra in dropped
    )
    text = f"{heads}; transformers drops them on load"
    if counted:
        text += f", so its num_parameters() prints {ckpt.n_parameters - counted:,} (counted here as stored)"
    return [Finding("PADDED_HEAD", Severity.INFO, text, subjects=tuple(t.name for t, _, _, _ in dropped))]


def analyse(ckpt: Checkpoint, expect: str | None = None) -> Report:
    """Roles, expectation, accounting and findings for a loaded checkpoint.

    Args:
        ckpt: what a loader returned.
        expect: an architecture spec (`inspector formula` syntax) to check against instead of inferring.

    Raises:
        SpecError: `expect` is not a valid spec.
    """
    from inspector.architectures import parse_spec
    from inspector.infer import expect as expectation_of
    from inspector.infer import may_be_family
    from inspector.roles import match_roles, role_names

    roles = match_roles(ckpt)
    stated = parse_spec(expect) if expect else None
    # one shard of a sharded model holds part of it: the expectation belongs to the index (or the folder)
    shard = "shard" in ckpt.attributes and stated is None
    expectation = None if shard else expectation_of(ckpt, roles, stated)
    if may_be_family(ckpt):  # (else the family tables are not imported: `refine_roles` would change nothing)
        from inspector.family_check import refine_roles

        roles = refine_roles(ckpt, roles, expectation)
    acc = account(ckpt)
    found = list(ckpt.findings) + accounting_findings(ckpt, acc)
    # (most files: every tensor matched, told by one set of the roles)
    unmatched = [r.name for r in roles if r.role == "unmatched"] if "unmatched" in role_names(roles) else []
    if unmatched:
        shown = ", ".join(repr(n) for n in unmatched[:5]) + (", ..." if len(unmatched) > 5 else "")
        found.append(
            Finding(
                "UNMATCHED_NAME",
                Severity.INFO,
                f"{len(unmatched)} tensors match no role rule: {shown}",
                subjects=tuple(unmatched),
            )
        )
    found += padded_head_findings(ckpt)
    if expectation is not None and expectation.anomalies:
        found.append(
            Finding(
                "COUNT_MISMATCH",
                Severity.WARNING,
                f"{expectation.architecture} ({expectation.source}) expects {expectation.total:,} "
                f"parameters, the file holds {expectation.found:,}",
                expected=expectation.total,
                observed=expectation.found,
            )
        )
    elif expectation is not None and expectation.explained:
        found.append(
            Finding(
                "COUNT_EXPLAINED",
                Severity.INFO,
                f"{expectation.architecture} ({expectation.source}) gives {expectation.total:,} parameters, the file "
                f"holds {expectation.found:,}: the model differs from the formula only where the file shows how "
                "(modules it has instead or besides, sizes the formula does not assume; see the layer table)",
                expected=expectation.total,
                observed=expectation.found,
            )
        )
    return Report(ckpt, roles, expectation, acc, tuple(found))


def inspect(path: str | os.PathLike[str], expect: str | None = None) -> Report:
    """Load a file's headers and analyse them.

    Raises:
        InspectorError: the file cannot be read (see `inspector.errors`).
    """
    return analyse(load(path), expect)
