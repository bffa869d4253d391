"""The C-speed pickle path (`loaders._pickle_fast`): the same values as the interpreter, or it steps aside.

Every pickle of the samples, the shared fixtures and of files `torch.save` writes here is read both ways:
where the fast path succeeds, the interpreter must succeed with the same value, globals, end and storages
and nothing unsafe. Every hostile payload must leave the fast path to the interpreter, and no mutation of
a real `torch.save` pickle may make it call anything or differ from the interpreter.
"""

from __future__ import annotations

import io
import os
import struct
import sys
import warnings
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from inspector import load as inspect
from inspector.recordtype import fields
from loaders import _pickle, _pickle_fast, _torch
from loaders._pickle_builders import _tensor_v2
from loaders._pickle_machine import PickleMachine
from loaders._pickle_values import Call, Global, OpaqueKey, PickleError, StorageRef, StorageType, TensorRef
from loaders.torch_legacy import MAGICS
from tests.conftest import FIXTURES, SAMPLES
from tests.test_safety import P2, P4, file_handler, frame, glob, mutated, payloads, short, text

# -- reading a pickle both ways ------------------------------------------------------------------------------

_EVENTS = {"os.system", "subprocess.Popen", "os.exec", "os.spawn", "os.posix_spawn", "exec", "compile", "import",
           "ctypes.dlopen", "open", "os.remove", "shutil.rmtree", "socket.connect"}  # fmt: skip
_audit: list[str] = []
_watching = [False]


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if _watching[0] and event in _EVENTS and not _ours(sys._getframe(1)):
        _audit.append(f"{event} {str(args)[:200]}")


def _ours(frame: Any) -> bool:
    """Whether the event comes from `inspector.recordtype` compiling a record's `__init__` (at the record's first
    instances, whenever they are made: code of ours, from the class's own field names)."""
    for _ in range(4):
        if frame is None:
            return False
        if frame.f_code.co_filename.endswith(os.path.join("inspector", "recordtype.py")):
            return True
        frame = frame.f_back
    return False


sys.addaudithook(_hook)


def norm(value: Any, depth: int = 0, path: frozenset[int] = frozenset()) -> Any:
    """A structure to compare values by (dict and list subclasses as dicts and lists, records by fields); a container
    met again inside itself (a pickle's memo can make cycles) is the marker ("cycle",)."""
    assert depth < 400
    if isinstance(value, (dict, list, Call)):
        if id(value) in path:
            return ("cycle",)
        path = path | {id(value)}
    d = depth + 1

    def inner(v: Any) -> Any:
        return norm(v, d, path)

    if isinstance(value, dict):
        return ("dict", type(value).__name__, [(inner(k), inner(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", type(value).__name__, [inner(v) for v in value])
    if isinstance(value, tuple):
        return ("tuple", *(inner(v) for v in value))
    if isinstance(value, (set, frozenset)):
        return (type(value).__name__, sorted(repr(inner(v)) for v in value))
    if isinstance(value, TensorRef):
        return ("tensor", inner(value.storage), value.offset, value.shape, value.stride, value.dtype,
                value.is_parameter, value.requires_grad)  # fmt: skip
    if isinstance(value, Global):  # the fast path's uncalled builders are Globals too
        return ("global", value.module, value.name)
    if isinstance(value, OpaqueKey):
        return ("opaque", inner(value.value))
    if isinstance(value, Call):
        return ("call", repr(value.func), inner(value.args), inner(value.state), inner(value.items), value.newobj)
    return (type(value).__name__, value)


def both(data: bytes, make: Callable[[dict[str, StorageRef]], Any] = _torch.persistent_loader) -> bool:
    """Read `data` both ways and check they agree; whether the fast path took it."""
    fast_storages: dict[str, StorageRef] = {}
    _watching[0] = True  # what the fast path does is audited (the interpreter may import a codec, legitimately)
    try:
        fast = _pickle_fast.load(_pickle.Reader(data), make(fast_storages), _pickle)
    finally:
        _watching[0] = False
    slow_storages: dict[str, StorageRef] = {}
    try:
        slow = PickleMachine(_pickle.Reader(data), make(slow_storages)).load()
    except PickleError:
        assert fast is None, data[:200]
        return False
    if fast is None:
        assert fast_storages == {}  # what an abandoned reading met is forgotten
        return False
    value, names, end = fast
    assert slow.unsafe == set()
    assert (names, end, fast_storages) == (slow.globals, slow.end, slow_storages)
    assert norm(value) == norm(slow.value)
    return True


def pickles_in(path: Path) -> Iterator[bytes]:
    """The pickles of a torch zip, a legacy torch file or a bare pickle."""
    head = path.read_bytes()[:32]
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as zf:
            for name in zf.namelist():
                if name.endswith(".pkl"):
                    yield zf.read(name)
    elif head.startswith(MAGICS):
        data = path.read_bytes()
        pos = 0
        for _ in range(5):
            machine = PickleMachine(_pickle.Reader(data[pos:]), _torch.persistent_loader({}))
            end = machine.load().end
            yield data[pos : pos + end]
            pos += end
    elif path.suffix in (".pkl", ".pickle") or head[:1] == b"\x80":
        yield path.read_bytes()


def files(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*") if p.is_file() and p.stat().st_size < 64 << 20)


def test_a_pickle_that_holds_itself_reads_the_same_both_ways() -> None:
    # a list appended to itself and a dict holding itself (the memo makes cycles; found by the mutation test)
    for data in (b"\x80\x02]q\x00h\x00a.", b"\x80\x02}q\x00X\x01\x00\x00\x00ah\x00s."):
        both(data)
        value = PickleMachine(_pickle.Reader(data), _torch.persistent_loader({})).load().value
        assert norm(value) in (("list", "list", [("cycle",)]), ("dict", "dict", [(("str", "a"), ("cycle",))]))


# The scan's token pattern holds strings up to SHORT bytes for large pickles, up to SMALL_SHORT for small ones (the
# scan loop steps over longer strings): each way on every pickle
PATTERNS = {"small": 1 << 62, "large": 0}  # _pickle_fast.SMALL


@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_same_values_on_every_pickle_of_the_samples_and_fixtures(pattern: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_pickle_fast, "SMALL", PATTERNS[pattern])
    taken = seen = 0
    for path in files(SAMPLES) + files(FIXTURES):
        try:
            found = list(pickles_in(path))
        except (PickleError, zipfile.BadZipFile, OSError, ValueError, EOFError):
            continue
        for data in found:
            seen += 1
            taken += both(data)
    assert seen >= 10 and taken >= 5, (seen, taken)


# -- what torch.save writes ------------------------------------------------------------------------------------


def _objects(torch: Any) -> dict[str, tuple[Any, bool]]:
    """Objects torch.save writes, and whether their pickle is plain data the fast path must take."""
    lin = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 2))
    opt = torch.optim.Adam(lin.parameters(), lr=1e-3)
    lin(torch.randn(5, 4)).sum().backward()
    opt.step()
    base = torch.arange(24, dtype=torch.float32)
    with warnings.catch_warnings():  # quantized tensors are deprecated (still written by old checkpoints)
        warnings.simplefilter("ignore")
        quantized = torch.quantize_per_tensor(torch.ones(4), 0.1, 2, torch.quint8)
    meta = torch.empty(3, 4, device="meta")
    return {
        "state_dict": (lin.state_dict(), True),  # an OrderedDict with _metadata: BUILD on it
        "checkpoint": (
            {"model": lin.state_dict(), "optimizer": opt.state_dict(), "epoch": 3, "loss": 0.25, "name": "x" * 300},
            True,
        ),
        "views": (
            {"a": base, "b": base[2:10], "c": base.view(4, 6).t(), "d": base[::3], "e": base.expand(2, 24)},
            True,
        ),
        "parameters": (
            {"w": torch.nn.Parameter(torch.ones(2, 2)), "f": torch.nn.Parameter(torch.ones(2), False)},
            True,
        ),
        "dtypes": (
            {
                "bf16": torch.ones(3, dtype=torch.bfloat16),
                "h": torch.ones(2, dtype=torch.half),
                "i8": torch.ones(2, dtype=torch.int8),
                "b": torch.ones(2, dtype=torch.bool),
            },
            True,
        ),  # fmt: skip
        "fp8": ({"e4m3": torch.ones(4).to(torch.float8_e4m3fn), "e5m2": torch.ones(4).to(torch.float8_e5m2)}, False),
        "quantized": ({"q": quantized}, False),
        "meta": ({"m": meta}, False),
        "containers": (
            {
                "list": [1, 2.5, None, True],
                "tuple": (1, (2, 3)),
                "set": {1, 2},
                "bytes": b"\x00\xff",
                "nested": {"x": [{"y": torch.zeros(1)}]},
                7: "int key",
                (1, 2): "tuple key",
            },
            False,
        ),  # fmt: skip
        "module": (lin, False),
        "tensor": (torch.ones(2, 3), True),
        "shapes": (  # (a vector's and a matrix's size and stride are told item by item, the rest by their types)
            {
                "scalar": torch.tensor(1.5),
                "cube": torch.ones(2, 3, 4),
                "empty": torch.ones(0, 3),
                "row": torch.ones(3, 5)[1],
                "column": torch.ones(3, 5)[:, 2],
                "long": torch.arange(5),
            },
            True,
        ),  # fmt: skip
    }


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, Path, bool]]:
    torch = pytest.importorskip("torch")
    root = tmp_path_factory.mktemp("saved")
    out = []
    for name, (obj, plain) in _objects(torch).items():
        for how, kwargs in (
            ("zip", {}),
            ("zip4", {"pickle_protocol": 4}),
            ("legacy", {"_use_new_zipfile_serialization": False}),
            ("legacy4", {"_use_new_zipfile_serialization": False, "pickle_protocol": 4}),
        ):
            path = root / f"{name}-{how}.pt"
            torch.save(obj, path, **kwargs)
            out.append((name, path, plain and how in ("zip", "legacy")))  # protocol 4 has frames: the interpreter
    return out


@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_torch_save_pickles_read_alike(
    saved: list[tuple[str, Path, bool]], pattern: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_pickle_fast, "SMALL", PATTERNS[pattern])
    for name, path, plain in saved:
        took = [both(data) for data in pickles_in(path)]
        if plain:
            assert any(took), name
            assert took[-1 if zipfile.is_zipfile(path) else 3], (name, path.name)  # the object pickle


def test_torch_save_files_report_alike(saved: list[tuple[str, Path, bool]], monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole report of every saved file, with and without the fast path."""
    fast = {path: inspect(path) for _, path, _ in saved}
    monkeypatch.setattr(_pickle, "FAST_MIN_BYTES", 1 << 62)
    for path, report in fast.items():
        assert inspect(path) == report, path


def test_legacy_file_is_fetched_in_windows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A legacy file's object pickle is fetched as far as it goes, not with the storages behind it."""
    torch = pytest.importorskip("torch")
    path = tmp_path / "big.pt"
    torch.save({f"t{i}": torch.zeros(1000) for i in range(3000)}, path, _use_new_zipfile_serialization=False)
    monkeypatch.setattr(_pickle_fast, "READ_FIRST", 1 << 12)
    fetched: list[tuple[int, int]] = []
    data = path.read_bytes()

    def fetch(offset: int, n: int) -> bytes:
        fetched.append((offset, n))
        return data[offset : offset + n]

    pos = 0
    before = _pickle_fast.Counters.fast
    for _ in range(4):
        pos = _pickle.load(_pickle.Reader(fetch=fetch, start=pos, end=len(data)), _torch.persistent_loader({})).end
    assert _pickle_fast.Counters.fast == before + 4
    assert max(n for _, n in fetched) <= 4 * pos and pos < len(data) // 4


# -- hostile pickles take the interpreter ------------------------------------------------------------------------


def _deep_tuple_key(depth: int) -> bytes:
    return P2 + b"}K\x01" + b"\x85" * depth + b"K\x00s."  # a key nested `depth` deep: C hashing it overflows


def _hostile(canary: Path) -> dict[str, bytes]:
    tensor = glob("torch._utils", "_rebuild_tensor_v2") + b"((" + text("storage") + glob("torch", "FloatStorage")
    tensor += text("0") + text("cpu") + b"K\x01tQK\x00K\x01\x85K\x01\x85\x89" + glob("collections", "OrderedDict")
    tensor += b")RtR"
    return {
        **{name: data for name, (data, _) in payloads(canary).items()},
        "build_on_builder": P2 + glob("collections", "OrderedDict") + b"N}" + text("x") + b"K\x01s\x86b.",
        "build_slots_on_tensor": P2 + tensor + b"N}" + text("requires_grad") + b"\x88s\x86b.",
        "build_on_storage_type": P2 + glob("torch", "FloatStorage") + b"(" + text("F64") + b"tb.",
        "build_none_on_dtype": P2 + glob("torch", "float16") + b"Nb.",
        "dunder_state": P2 + glob("collections", "OrderedDict") + b")R}" + text("__class__") + b"K\x01sb.",
        "setitems_on_list": P2 + b"]K\x01a(K\x00K\x05u.",
        "huge_memo_index": P2 + b"Nr\xff\xff\xff\x0f.",
        "frame": P4 + frame(3) + b"N" + b"K\x01" + b"\x86.",
        "text_int": b"I0x10\n.",
        "text_string": b"S'a\\x41'\n.",
        "ext": P2 + b"\x82\x01.",
        "newobj": P2 + glob("collections", "OrderedDict") + b")\x81.",
        "dict_opcode": P2 + b"(K\x01K\x02d.",
        "bytearray": b"\x80\x05\x96\x01\x00\x00\x00\x00\x00\x00\x00a.",
        "readonly_buffer": b"\x80\x05C\x01a\x98.",
        "unknown_global": P2 + glob("collections", "Counter") + b")R.",
        "trampoline": P2 + glob("builtins", "int") + text("1") + b"\x85R.",
        "pop_mark_semantics": P2 + b"K\x01(0.",
        "appends_on_dict": P2 + b"}(K\x01e.",
        "stack_global_unsafe": P4 + short("os") + short("system") + b"\x93.",
        "dotted_global": P2 + glob("collections", "OrderedDict.fromkeys") + b".",
        "big_string": P2 + b"X" + struct.pack("<I", (1 << 20) + 1) + b"a" * ((1 << 20) + 1) + b".",
        "unsafe_after_data": P2 + b"}" + text("a") + tensor + b"s0" + file_handler(canary) + b".",
    }


def test_hostile_pickles_take_the_interpreter(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    for name, data in _hostile(canary).items():
        before = _pickle_fast.Counters.aborted
        assert _pickle_fast.load(_pickle.Reader(data), _torch.persistent_loader({}), _pickle) is None, name
        assert _pickle_fast.Counters.aborted == before + 1, name
        both(data)
    assert not canary.exists()


def test_hostile_files_exercise_the_fast_path_then_the_interpreter(tmp_path: Path) -> None:
    """Through the loader: a torch zip whose data.pkl ends with a payload still exits unsafe, named."""
    canary = tmp_path / "canary"
    data = _hostile(canary)["unsafe_after_data"]
    path = tmp_path / "evil.pt"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("archive/data.pkl", data)
        zf.writestr("archive/data/0", b"\0" * 4)
    before = _pickle_fast.Counters.aborted
    report = inspect(path)
    assert _pickle_fast.Counters.aborted > before
    assert any(f.code == "UNSAFE_CONTENT" and "logging.FileHandler" in f.message for f in report.findings)
    assert not canary.exists()


@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_strings_longer_than_the_pattern_holds_take_the_fast_path(
    pattern: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Strings and bytes of every length opcode, of lengths around what the token pattern holds (SMALL_SHORT,
    SHORT, 255), are stepped over by the scan loop: the fast path reads them, as the interpreter does."""
    monkeypatch.setattr(_pickle_fast, "SMALL", PATTERNS[pattern])
    for n in (0, 7, 8, 9, 127, 128, 129, 255):
        text = ("é" * n).encode()[:n]  # (a cut multi-byte character: the opcode's bytes, whatever they hold)
        items = [
            b"\x8c" + bytes([n]) + b"a" * n,  # SHORT_BINUNICODE
            b"X" + struct.pack("<I", n) + b"b" * n,  # BINUNICODE
            b"C" + bytes([n]) + text,  # SHORT_BINBYTES
            b"B" + struct.pack("<I", n) + text,  # BINBYTES
            b"U" + bytes([n]) + text,  # SHORT_BINSTRING
            b"T" + struct.pack("<i", n) + text,  # BINSTRING
            b"\x8d" + struct.pack("<Q", n) + b"c" * n,  # BINUNICODE8
        ]
        data = b"\x80\x04](" + b"".join(items) + b"e."  # (protocol 4 without a frame)
        assert both(data), n  # the fast path took it, with the interpreter's value


def test_long1_integers_are_stepped_over_by_the_scan() -> None:
    """LONG1 integers (a size or offset past 2**31) of up to 16 bytes are stepped over by the scan loop and read by the
    fast path as the interpreter reads them, anywhere in a run of tokens; a longer one is left to the interpreter."""
    for n in (0, 1, 5, 8, 16, 17, 255):
        for value in (b"\xff" * n, b"\x01" * n):
            data = b"\x80\x02](K\x07\x8a" + bytes([n]) + value + b"K\x08e."
            assert both(data) == (n <= 16), n


def test_keys_c_would_hash_forever_or_crash_on_are_opaque_keys() -> None:
    """A key nested 200,000 deep (hashing it in C overflows the C stack) and one with 2**100 shared leaves."""
    deep = _deep_tuple_key(200_000)
    shared = P2 + b"}(" + b")q\x00" + b"h\x00h\x00\x86q\x00" * 100 + b"tK\x01s."  # the chain in one tuple
    for data in (deep, shared):
        fast = _pickle_fast.load(_pickle.Reader(data), _torch.persistent_loader({}), _pickle)
        slow = PickleMachine(_pickle.Reader(data), _torch.persistent_loader({})).load()
        assert fast is not None
        ((key, value),) = fast[0].items()
        ((slow_key, slow_value),) = slow.value.items()
        assert isinstance(key, OpaqueKey) and isinstance(slow_key, OpaqueKey) and value == slow_value


@pytest.mark.parametrize("cap", ["MAX_OPS", "MAX_STACK", "MAX_MARKS"])
def test_caps_of_the_interpreter_hold(cap: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Near a cap, the fast path steps aside and the interpreter refuses as before."""
    data = P2 + b"(" * 50 + b"N" * 5000 + b"t" * 50 + b"."
    assert both(data)
    monkeypatch.setattr(_pickle, cap, {"MAX_OPS": 5000, "MAX_STACK": 4000, "MAX_MARKS": 40}[cap])
    assert _pickle_fast.load(_pickle.Reader(data), _torch.persistent_loader({}), _pickle) is None
    with pytest.raises(PickleError, match="opcodes|stack|MARK"):
        _pickle.load(_pickle.Reader(data), _torch.persistent_loader({}))


def test_keys_are_keyed_as_the_interpreter_keys_them() -> None:
    """Tuple keys small and large (an OpaqueKey there), a dict key, and dict/list values named alike."""
    small = P2 + b"}K\x01K\x02\x86K\x03s."
    large = P2 + b"}" + b"(" + b"K\x01" * 300 + b"tK\x03s."
    nested = P2 + b"}}K\x01s]K\x02s."
    for data in (small, large, nested):
        assert both(data), data[:40]


# -- mutations of real torch.save pickles ------------------------------------------------------------------------


def test_property_mutated_torch_pickles(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    lin = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2))
    seeds = []
    for obj in ({"model": lin.state_dict(), "step": 3, "names": ["a", "b"]}, lin.state_dict()):
        buf = io.BytesIO()
        torch.save(obj, buf)
        with zipfile.ZipFile(buf) as zf:
            seeds.append(next(zf.read(n) for n in zf.namelist() if n.endswith("data.pkl")))
    canary = tmp_path / "canary"
    evil = file_handler(canary)
    for seed in seeds:
        assert both(seed)
    _audit.clear()
    splices = [evil, b"}", b"]", b"(", b"b", b"s", b"u", b"0", b"2", b"\x95", b"h\x01", b"t", b"R", b"\x81",
               glob("os", "system"), glob("collections", "OrderedDict"), b"N", b"\x85"]  # fmt: skip

    @settings(
        max_examples=int(os.environ.get("FAST_PICKLE_EXAMPLES", "600")),
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(
        seed=st.sampled_from(seeds),
        edits=st.lists(
            st.tuples(st.integers(0, 1 << 16), st.integers(0, 255), st.sampled_from("fids"), st.sampled_from(splices)),
            max_size=4,
        ),
        pattern=st.sampled_from(sorted(PATTERNS)),
    )
    def check(seed: bytes, edits: list[tuple[int, int, str, bytes]], pattern: str) -> None:
        small, _pickle_fast.SMALL = _pickle_fast.SMALL, PATTERNS[pattern]
        try:
            both(mutated(seed, edits))
        finally:
            _pickle_fast.SMALL = small
        assert not _audit, _audit
        assert not canary.exists()

    check()


# -- the builder REDUCE calls directly, the persistent ids torch's loader answers --------------------------------


def test_tensor_rebuild_uncalled_or_built_reads_as_the_interpreter_reads_it() -> None:
    """torch's tensor rebuild is called by REDUCE without a frame of ours (`_TensorBuilder`): left uncalled it is the
    interpreter's Global, BUILD on it steps aside, and a bad call gives the interpreter's error."""
    rebuild = glob("torch._utils", "_rebuild_tensor_v2")
    storage = b"(" + short("storage") + glob("torch", "FloatStorage") + short("0") + short("cpu") + b"K\x02tQ"
    called = P2 + rebuild + b"(" + storage + b"K\x00K\x02\x85K\x01\x85\x89)tR."
    assert both(called)
    uncalled = P2 + b"}" + short("f") + rebuild + b"s" + short("g") + b"]" + rebuild + b"as."  # a value, an item
    assert both(uncalled)
    for data in (P2 + rebuild + b"}b.", P2 + rebuild + b"(K\x01tR."):  # BUILD on it; a call without a storage
        assert _pickle_fast.load(_pickle.Reader(data), _torch.persistent_loader({}), _pickle) is None


def test_containers_built_without_arguments_in_c_and_with_arguments_by_the_interpreter() -> None:
    """``OrderedDict()``, ``dict()`` and ``list()`` (a state dict's, every tensor's hooks) are made by the fast path in
    C calls, empty fast containers; called with arguments (Python 2's ``OrderedDict(pairs)``) the fast path gives up
    and the interpreter reads the pickle: the same values either way, and BUILD on an uncalled builder still refused."""
    ordered, dict_, list_ = glob("collections", "OrderedDict"), glob("builtins", "dict"), glob("builtins", "list")
    empty = P2 + b"(" + ordered + b")R" + dict_ + b")R" + list_ + b")Rt."
    before = _pickle_fast.Counters.fast
    assert both(empty)
    assert _pickle_fast.Counters.fast == before + 1
    value = _pickle_fast.load(_pickle.Reader(empty), _torch.persistent_loader({}), _pickle)
    assert value is not None
    assert [type(v) for v in value[0]] == [_pickle_fast._FastDict, _pickle_fast._FastDict, _pickle_fast._FastList]
    pairs = P2 + ordered + b"(]" + short("a") + b"K\x01\x86atR."  # OrderedDict([("a", 1)])
    listed = P2 + list_ + b"(" + short("x") + short("y") + b"\x86\x85R."  # list(("x", "y"))
    for data in (pairs, listed):
        assert _pickle_fast.load(_pickle.Reader(data), _torch.persistent_loader({}), _pickle) is None
        assert not both(data)  # (the interpreter reads it: its value is checked by the tests of the interpreter)
    assert PickleMachine(_pickle.Reader(pairs), _torch.persistent_loader({})).load().value == {"a": 1}
    assert PickleMachine(_pickle.Reader(listed), _torch.persistent_loader({})).load().value == ["x", "y"]
    assert _pickle_fast.load(_pickle.Reader(P2 + ordered + b"}b."), _torch.persistent_loader({}), _pickle) is None


def test_the_loader_answers_the_rewritten_ids_only_while_the_fast_path_reads() -> None:
    """The C unpickler calls torch's PersistentLoader itself; the ids of the rewritten empty dicts and lists it answers
    during that reading only (an interpreter reading after knows no such id)."""
    pickle = P2 + b"}(" + b"".join(short(f"k{i}") + b"]" for i in range(3000)) + b"u."
    loader = _torch.persistent_loader({})
    fast = _pickle_fast.load(_pickle.Reader(pickle), loader, _pickle)
    assert fast is not None and len(fast[0]) == 3000 and all(v == [] for v in fast[0].values())
    assert loader.named == {}
    aborted = P2 + b"}(" + b"".join(short(f"k{i}") + b"]" for i in range(3000)) + b"u" + glob("os", "system") + b"."
    loader = _torch.persistent_loader({})
    assert _pickle_fast.load(_pickle.Reader(aborted), loader, _pickle) is None
    assert loader.named == {}
    with pytest.raises(PickleError, match="unexpected persistent id"):
        loader(_pickle_fast._DICT_ID)


def test_tensor_rebuild_tells_sizes_and_strides_of_plain_ints() -> None:
    """A tensor's size and stride: tuples of plain ints as they are (a vector's and a matrix's told item by item, any
    other by its items' types), lists of ints as tuples, anything else refused, by both readers alike."""
    s = StorageRef("0", "F32", 4, "cpu", 24)
    kept = [((2,), (1,)), ((2, 3), (3, 1)), ((), ()), ((2, 3, 4), (12, 4, 1)), ((2,), (1, 1)), ((4, 2), (2,))]
    for size, stride in kept:
        t = _tensor_v2(s, 0, size, stride)
        assert (t.shape, t.stride) == (size, stride) and t.shape is size and t.stride is stride
    for size, stride in [([2], [1]), ([2, 3], (3, 1)), ((2, 3), [3, 1])]:
        t = _tensor_v2(s, 0, size, stride)
        assert (t.shape, t.stride) == (tuple(size), tuple(stride)) and type(t.shape) is tuple is type(t.stride)
    refused = [((True,), (1,)), ((2,), (1.0,)), ((2, 3), (3, False)), ((2, "3"), (3, 1)), ((2, 3, 4), (12, 4, 1.0))]
    for size, stride in refused:
        with pytest.raises(PickleError, match="expected a tuple of ints"):
            _tensor_v2(s, 0, size, stride)
    rebuild = glob("torch._utils", "_rebuild_tensor_v2")
    storage = b"(" + short("storage") + glob("torch", "FloatStorage") + short("0") + short("cpu") + b"K\x18tQ"
    vector, matrix = (b"K\x02\x85", b"K\x01\x85"), (b"K\x02K\x03\x86", b"K\x03K\x01\x86")
    true = (b"\x88\x85", b"K\x01\x85")
    for size, stride in vector, matrix, true:  # (a size of True: refused by both)
        assert both(P2 + rebuild + b"(" + storage + b"K\x00" + size + stride + b"\x89)tR.") == (size != b"\x88\x85")


def test_storages_and_tensors_made_without_their_class_call_have_every_field() -> None:
    """`PersistentLoader` and `_tensor_v2` make their records without calling the class: every field is set, to what
    the class would set (a field added to the record and not set there fails here)."""
    storage = _torch.persistent_loader({})(("storage", StorageType("F16", "torch.HalfStorage"), "7", "cpu", 6))
    made = StorageRef("7", "F16", 2, "cpu", 6)
    assert [getattr(storage, f.name) for f in fields(StorageRef)] == [getattr(made, f.name) for f in fields(StorageRef)]
    tensor = _tensor_v2(storage, 1, (2,), (1,), True)
    ref = TensorRef(made, 1, (2,), (1,), "F16", False, True)
    assert [getattr(tensor, f.name) for f in fields(TensorRef)] == [getattr(ref, f.name) for f in fields(TensorRef)]


def test_tensor_records_are_lanes_counted_at_or_above_their_opcodes(tmp_path: Path) -> None:
    """A torch state dict's records are each one step of the scan (a lane), counted as LANE_OPS opcodes: the count
    stays at or above the pickle's own (a cap is never passed) and near it (2 more for a vector's record)."""
    import pickletools
    from types import SimpleNamespace

    torch = pytest.importorskip("torch")
    state = {f"l.{i}.{k}": torch.ones(*s) for i in range(1500) for k, s in (("w", (3, 2)), ("b", (3,)))}
    state["conv"] = torch.ones(2, 2, 1, 1)  # (4 dimensions: its record is read token by token)
    torch.save(state, tmp_path / "s.pt")
    with zipfile.ZipFile(tmp_path / "s.pt") as z:
        data = z.read("s/data.pkl")
    real = sum(1 for _ in pickletools.genops(data))
    assert len(data) >= _pickle_fast.SMALL  # (its names are tokens of the pattern: runs of RUN steps, counted)

    def scanned(cap: int) -> bool:
        return _pickle_fast._scan(data, SimpleNamespace(MAX_OPS=cap, MAX_INLINE=_pickle.MAX_INLINE), True) is not None

    assert not scanned(real - 1)
    assert not scanned(real + 1000)  # (1,500 vectors' lanes: 3,000 more than their opcodes)
    assert scanned(real + 2 * 1500 + 2 * _pickle_fast.RUN)
    assert both(data)
