"""Bare pickles (``.pkl``, a ``.pt`` written by ``pickle.dump``): what they would call, never run.

Layout: one pickle stream (Python's pickle protocols 0-5), ended by STOP (``.``). Protocols 2 and up
start with PROTO (``\\x80`` and the protocol number); protocols 0 and 1 start with an ordinary opcode.

``torch.load`` (with ``weights_only=False``) unpickles a file that is neither a zip nor a legacy
checkpoint as the first pickle of the legacy format, so a bare pickle runs in full before torch
notices the missing magic number; ``pickle.load`` and ``joblib.load`` run it too. This loader claims
such files at the weakest strength (torch's own formats win) and interprets the stream with our
restricted reader: the verdict is either the callables it would run (UNSAFE_CONTENT, exit 3) or
inert data. It lists no tensors: a bare pickle holds no addressable tensor data (torch tensors in it
are nested torch.save archives rebuilt by `torch.storage._load_from_bytes`, itself a nested
``torch.load`` and so reported).
"""

from __future__ import annotations

from typing import Any, ClassVar

from inspector.errors import FormatError
from inspector.probe import Probe
from inspector.records import Checkpoint, Finding, Region, RegionKind, Severity
from loaders import _pickle, _torch
from loaders.base import Claim, single_file

FORMAT = "pickle"
PROTO = 0x80
PROTOCOLS = range(2, 6)
# First opcodes of protocol 0/1 pickles as Python writes them: MARK, empty containers, GLOBAL, scalars.
PROTOCOL_0_OPENERS = frozenset(b"(}])cNIJKLMFGSVXUT\x88\x89")


def _no_persistent_ids(pid: Any) -> Any:
    raise _pickle.PickleError("a persistent id: pickle.load without a persistent_load refuses it")


class PickleRawLoader:
    """A file that is one pickle stream."""

    name: ClassVar[str] = FORMAT
    extensions: ClassVar[tuple[str, ...]] = (".pkl", ".pickle", ".pt", ".pth", ".bin", ".joblib")

    def claim(self, probe: Probe) -> Claim | None:
        head = probe.head
        if len(head) < 2:
            return None
        if head[0] == PROTO and head[1] in PROTOCOLS:
            return Claim.CONTAINER
        if head[0] in PROTOCOL_0_OPENERS and probe.tail(1) == _pickle.STOP:
            return Claim.CONTAINER
        return None

    def load(self, probe: Probe) -> Checkpoint:
        fetch = lambda off, n: probe.read_at(off, n, fmt=FORMAT, what="pickle")  # noqa: E731
        try:
            result = _pickle.load(_pickle.Reader(fetch=fetch, start=0, end=probe.size), _no_persistent_ids)
        except _pickle.PickleError as exc:
            if exc.unsafe:
                return _torch.refused(probe, FORMAT, set(exc.unsafe), exc, "python")
            raise FormatError(probe.path, FORMAT, f"not a readable pickle: {exc}") from exc
        protocol = probe.head[1] if probe.head[0] == PROTO else "0 or 1"
        verdict = "would run code" if result.unsafe else "inert data"
        findings: list[Finding] = _torch.unsafe_finding(result.unsafe) + _torch.globals_finding(result.globals)
        if not result.unsafe:
            what = f"a bare pickle of inert data (a {type(result.value).__name__}): nothing it names would be called"
            findings.append(Finding("PICKLE_DATA", Severity.INFO, what))
        regions = [Region(RegionKind.METADATA, 0, result.end, "pickle stream")]
        attributes = {"pickle.protocol": str(protocol), "pickle.verdict": verdict,
                      "pickle.top_level": type(result.value).__name__}  # fmt: skip
        return single_file(probe, FORMAT, "python", (), regions, attributes, findings)
