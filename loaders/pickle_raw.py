"""Bare pickles (``.pkl``, a ``.pt`` written by ``pickle.dump``): what they would call, never run.

Layout: one pickle stream (Python's pickle protocols 0-5), ended by STOP (``.``). Protocols 2 and up
start with PROTO (``\\x80`` and the protocol number); protocols 0 and 1 start with an ordinary opcode
(claimed when the head parses as pickle opcodes). Pickles written one after another are all read:
a second ``pickle.load`` on the same file object runs the next one.

``torch.load`` (with ``weights_only=False``) unpickles a file that is neither a zip nor a legacy
checkpoint as the first pickle of the legacy format, so a bare pickle runs in full before torch
notices the missing magic number; ``pickle.load`` and ``joblib.load`` run it too. This loader claims
such files at the weakest strength (torch's own formats win) and interprets the stream with our
restricted reader: the verdict is either the callables it would run (UNSAFE_CONTENT, exit 3) or
inert data. The numpy arrays of the first pickle are its tensors (`loaders._numpy_pickle`: Detectron's model
zoo, JAX and Haiku parameters keep their arrays' bytes inline, each at a definite place in the stream), named by
their dotted paths, of the kinds a training checkpoint's sections give (`loaders._torch.section_kinds`); the rest
of the stream is metadata. Torch tensors in a bare pickle are nested torch.save archives rebuilt by
`torch.storage._load_from_bytes`, itself a nested ``torch.load`` and so reported, and listed as no tensors.
"""

from __future__ import annotations

from inspector.errors import FormatError
from inspector.probe import Probe
from inspector.records import Checkpoint, Finding, Region, RegionKind, Severity, TensorInfo
from loaders import _numpy_pickle, _pickle, _torch
from loaders._pickle_policy import JOBLIB_WRAPPERS
from loaders.base import Claim, single_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar

FORMAT = "pickle"
PROTO = 0x80
PROTOCOLS = range(2, 6)
# First opcodes of protocol 0/1 pickles as Python writes them: MARK, empty containers, GLOBAL, scalars.
PROTOCOL_0_OPENERS = frozenset(b"(}])cNIJKLMFGSVXUT\x88\x89")
MIN_OPCODES = 4  # a protocol 0/1 head must parse as this many opcodes (or a whole short pickle)
MAX_PICKLES = 1000  # pickles read one after another (torch's legacy files write five; picklescan scans all)


def _opcodes(head: bytes) -> int:
    """How many opcodes the head reads as before an error (`MIN_OPCODES` for a whole short pickle)."""
    import pickletools  # only for the few files whose first byte could open a protocol 0/1 pickle

    n = 0
    try:
        for op, _arg, _pos in pickletools.genops(head):
            n += 1
            if n >= MIN_OPCODES or op.name == "STOP":
                return MIN_OPCODES
    except Exception:  # noqa: BLE001, S110 - a parse failure ends the count
        pass
    return n


def _parses(probe: Probe) -> bool:
    """Whether the head reads as a few pickle opcodes, or as one (GLOBAL 'builtins exec') and a final STOP."""
    n = _opcodes(probe.head)
    return n >= MIN_OPCODES or (n > 0 and probe.tail(1) == _pickle.STOP)


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
        if head[0] in PROTOCOL_0_OPENERS and _parses(probe):
            return Claim.CONTAINER
        return None

    def late_claim(self, probe: Probe) -> Claim | None:
        """A file no loader claims that opens with another opcode the unpickler runs first (`loaders.PICKLE_OTHER`:
        `C\\x01a0`, a FRAME, PROTO 1...) and parses on as a pickle: `pickle.load`, `np.load(allow_pickle=True)` and
        `torch.load` run it (such a file was "not a recognised checkpoint format", exit 2)."""
        from loaders import PICKLE_OTHER

        return Claim.CONTAINER if probe.head.startswith(PICKLE_OTHER) and _parses(probe) else None

    def load(self, probe: Probe) -> Checkpoint:
        try:
            result = _read(probe, 0)
        except _pickle.PickleError as exc:
            if exc.unsafe:
                return _torch.refused(probe, FORMAT, set(exc.unsafe), exc, "python")
            raise FormatError(probe.path, FORMAT, f"not a readable pickle: {exc}") from exc
        unsafe, names = set(result.unsafe), set(result.globals)
        findings: list[Finding] = []
        try:
            tensors, regions = _arrays(result)
        except _pickle.PickleError as exc:  # (a value graph too large or deep to walk: its arrays are not listed)
            tensors, regions = [], [Region(RegionKind.METADATA, 0, result.end, "pickle stream")]
            findings.append(Finding("PICKLE_ARRAYS", Severity.INFO, f"the pickle's arrays are not listed: {exc}"))
        streams = 1
        end = result.end
        for _ in range(MAX_PICKLES):  # pickles after the first: pickle.load stops at STOP, a second load reads on
            if end >= probe.size:
                break
            try:
                more = _read(probe, end)
            except _pickle.PickleError as exc:  # trailing bytes that are no pickle: only their evidence counts
                unsafe |= exc.unsafe
                break
            unsafe |= more.unsafe
            names |= more.globals
            regions.append(Region(RegionKind.METADATA, end, more.end - end, "another pickle stream"))
            streams += 1
            end = more.end
        protocol = probe.head[1] if probe.head[0] == PROTO else "0 or 1"
        findings += _torch.unsafe_finding(unsafe) + _torch.globals_finding(names, "pickle.load")
        if not unsafe:
            what = f"a bare pickle of inert data (a {type(result.value).__name__}): nothing it names would be called"
            findings.append(Finding("PICKLE_DATA", Severity.INFO, what))
        attributes = {"pickle.protocol": str(protocol), "pickle.verdict": "would run code" if unsafe else "inert data",
                      "pickle.top_level": type(result.value).__name__, "pickle.streams": str(streams)}  # fmt: skip
        return single_file(probe, FORMAT, "python", tensors, regions, attributes, findings)


def _arrays(result: _pickle.Result) -> tuple[list[TensorInfo], list[Region]]:
    """The first pickle's numpy arrays as tensors, and its stream's regions: each array's bytes where they lie (an
    array Python 3's protocol 2 wrote as latin-1 text lies at no one offset: its bytes stay the stream's), the rest
    metadata."""
    tensors = _numpy_pickle.tensors(result.value, result.located, 0)
    return tensors, _numpy_pickle.stream_regions(0, result.end, tensors, "pickle stream")


def _read(probe: Probe, start: int) -> _pickle.Result:
    """The pickle at `start` read as `joblib.load` reads it (a joblib file's arrays are its bytes outside the opcodes),
    and, when it holds such an array, judged as `pickle.load` and `torch.load` read it as well: the bytes joblib passes
    over are opcodes to them, and what they would call there is evidence too (a file may be given to either)."""
    result = _pickle.load(_reader(probe, start), _no_persistent_ids, joblib=True)
    if JOBLIB_WRAPPERS.isdisjoint(result.globals):
        return result
    try:
        plain = _pickle.load(_reader(probe, start), _no_persistent_ids)
    except _pickle.PickleError as exc:  # (a joblib file read so breaks at its first array: its evidence counts)
        result.unsafe |= exc.unsafe
    else:
        result.unsafe |= plain.unsafe
    return result


def _reader(probe: Probe, start: int) -> _pickle.Reader:
    fetch = lambda off, n: probe.read_at(off, n, fmt=FORMAT, what="pickle")  # noqa: E731
    return _pickle.Reader(fetch=fetch, start=start, end=probe.size)
