"""Built-in loaders: one module per format and one row per format in `FORMATS`.

A row names its loader class and when its claim is worth asking (a file's first bytes, a zip or HDF5 container, a
name); `inspector.registry` imports a loader's module only when its row matches the file, so a run imports the one
or two loaders its file needs, not fourteen (issue 16: about 3 ms of every run). The private helper modules that
only reading needs (the pickle walker, the HDF5 and SSTable readers, the zip reader...) are lazy as well: importing
them binds a module whose code runs on first attribute use, set up when a format module first names it.
"""

from __future__ import annotations

import sys
from itertools import product

from inspector import regexes
from inspector.needles import needle
from inspector.recordtype import record

# Helpers imported as `from loaders import _x` by the format modules and used only inside their functions.
LAZY_HELPERS = (
    "_hdf5",
    "_hdf5_structures",
    "_numpy_pickle",
    "_objects",
    "_pickle",
    "_pickle_machine",
    "_sstable",
    "_tf_kinds",
    "_tf_proto",
    "_torch",
    "_torchscript",
    "_zip",
)


_MODULE = type(sys)  # types.ModuleType


class _LazyModule(_MODULE):  # type: ignore[misc,valid-type]
    """A helper module whose body has not run yet: reading any of its attributes runs it first (what
    `importlib.util.LazyLoader` makes, without importing `importlib.util`, `importlib._abc` and `contextlib` into
    every run that reads a zip or a pickle: about 0.5 ms)."""

    def __getattribute__(self, attr: str) -> object:
        self.__class__ = _MODULE  # type: ignore[assignment]  # a plain module from now on (this runs once)
        self.__spec__.loader.exec_module(self)  # type: ignore[attr-defined]
        return getattr(self, attr)


def _lazy(name: str) -> object:
    """Put a module in sys.modules whose body runs when one of its attributes is first read."""
    if name in sys.modules:
        return sys.modules[name]
    # the spec the import system would find: the first meta path finder's that has one
    spec = next(filter(None, (finder.find_spec(name, __path__) for finder in sys.meta_path)), None)
    if spec is None or spec.loader is None:  # pragma: no cover - a broken install: let the real import fail
        __import__(name)
        return sys.modules[name]
    module = spec.loader.create_module(spec) or _MODULE(name)  # (as `importlib.util.module_from_spec`)
    module.__spec__, module.__loader__, module.__package__ = spec, spec.loader, spec.parent
    if spec.has_location:
        module.__file__, module.__cached__ = spec.origin, spec.cached  # type: ignore[attr-defined]
    module.__class__ = _LazyModule
    sys.modules[name] = module
    # `from loaders import _x` then finds the attribute on the package and touches nothing of the module (the
    # import system's own look-up in sys.modules would read its __spec__, which runs it)
    setattr(sys.modules[__name__], name.rpartition(".")[2], module)
    return module


def __getattr__(name: str) -> object:
    """A helper named by `from loaders import _x` (the import asks the package for the attribute first): made lazy
    then, so a run sets up only the helpers of the loaders it imports (none for safetensors)."""
    if name in LAZY_HELPERS:
        return _lazy(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


TYPE_CHECKING = False
if TYPE_CHECKING:
    from inspector.probe import Probe
    from loaders.base import Loader


@record(frozen=True, slots=True)
class Format:
    """One registry row: a loader class, imported only when its row matches the file, and what makes it worth asking.

    The row's tests are necessary conditions of the loader's own `claim`, which stays the judge: `starts` (bytes a
    file of the format begins with, or holds at offset `at`), `json_at` (a JSON object opens at that offset, after
    white space), `suffixes` and `names` (a name it is found by, as a suffix or a regular expression over the path: a
    shard whose index lies beside it), `small` (a file that fits in the head: a claim that reads its end),
    `container` (the probe found a zip or an HDF5 signature in the head), `member` (a zip: some member's name ends
    so, or the directory could not be read; the probe reads it once for every zip row and claim; `any_case`: in any
    case of its ASCII letters, as torch's zip reader finds a record), `late` (the class
    has a `late_claim`, asked when no loader claims), and `entries` (the class has `folder_entry` and `member_entry`:
    its checkpoints are folders or several files, `inspector.registry.folder_entry`).
    """

    name: str
    target: str  # "module:Class"
    starts: tuple[bytes, ...] = ()
    at: int = 0  # where `starts` are looked for (a FlatBuffer's identifier follows its root offset)
    json_at: int | None = None
    suffixes: tuple[str, ...] = ()
    names: str = ""
    small: bool = False
    container: str = ""  # "zip" or "hdf5"
    member: str = ""  # container "zip": a name some member ends with
    any_case: bool = False
    late: bool = False
    entries: bool = False

    def asks(self, probe: Probe) -> bool:
        """Whether this file is worth the loader's claim."""
        if probe.head.startswith(self.starts, self.at) or probe.path.endswith(self.suffixes):
            return True
        if self.json_at is not None and probe.head[self.json_at :].lstrip()[:1] == b"{":
            return True
        if (self.names and _named(self.names, probe.path)) or (self.small and probe.size <= len(probe.head)):
            return True
        if self.container == "zip":
            return probe.head.startswith(b"PK") and (not self.member or _has_member(probe, self.member, self.any_case))
        return self.container == "hdf5" and probe.hdf5_head_offset is not None

    def load(self) -> type[Loader]:
        """The loader class (its module imported now)."""
        module, _, name = self.target.partition(":")
        __import__(module)  # (what `importlib.import_module` does, without importing `importlib` in every run)
        return getattr(sys.modules[module], name)  # type: ignore[no-any-return]


def _has_member(probe: Probe, ending: str, any_case: bool = False) -> bool:
    """Whether some member of the zip's directory ends with `ending` (`any_case`: lowered, `ending` being lower case;
    True when the directory cannot be read: a damaged archive, an empty one, is the claims' to judge; maybe true for a
    name holding a newline, or lowered from other letters: the claim judges it)."""
    names = probe.zip_names
    # (one C search of the names: 100,000 members, a row asking costs no Python step per member)
    return names is None or ending + "\n" in names or (any_case and ending + "\n" in names.lower())


def _named(pattern: str, path: str) -> bool:
    """Whether `pattern` matches `path`; compiled only for a path holding the pattern's needle (a literal every match
    holds, `inspector.needles`): most files are not named so, and a compile costs about 0.05 ms."""
    return needle(pattern) in path and regexes.match(pattern, path) is not None


PICKLE = b"\x80"  # PROTO: the first opcode of every pickle of protocol 2 and later
PICKLE_2_5 = tuple(PICKLE + bytes([v]) for v in range(2, 6))  # PROTO and the versions pickle writes
PICKLE_0 = tuple(bytes([b]) for b in b"(}])cNIJKLMFGSVXUT\x88\x89")  # what protocol 0/1 pickles open with
# The other opcodes the unpickler runs first, on an empty stack (it enforces no protocol: one of protocols 3-5, a
# FRAME), and PROTO 0 or 1: no writer opens a pickle so, and pickle.load runs what follows (asked when no loader claims)
PICKLE_OTHER = (*(bytes([b]) for b in b"BC\x8a\x8b\x8c\x8d\x8e\x8f\x95\x96"), PICKLE + b"\0", PICKLE + b"\1")
JOBLIB_CODECS = (b"\x78", b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00", b"]\x00\x00", b"\x04\x22\x4d\x18")
# the pickled magic number torch.save writes first, at each pickle_protocol it takes (2, 3; 4 and 5 open a frame)
TORCH_LEGACY = tuple(
    bytes.fromhex(h)
    for h in (
        "80028a0a6cfc9c46f9206aa850192e",
        "80038a0a6cfc9c46f9206aa850192e",
        "8004950d000000000000008a0a6cfc9c46f9206aa850192e",
        "8005950d000000000000008a0a6cfc9c46f9206aa850192e",
    )
)

# what flax's `to_bytes` opens with: a fixmap of 1-15 entries and its first key, a str (fixstr or str 8), or a map 16
# or 32 (a safetensors file, whose first byte is its header length's lowest, is seldom asked)
# (made in C calls: the 497 prefixes are built in every run, about 35 us instead of 60 us of a generator)
FLAX_MAPS = (*map(bytes, product(range(0x81, 0x90), (*range(0xA0, 0xC0), 0xD9))), b"\xde", b"\xdf")
# Every built-in format, in the order loaders are asked (the strongest claim wins; the order breaks no ties).
FORMATS: tuple[Format, ...] = (
    Format("safetensors", "loaders.safetensors:SafetensorsLoader", json_at=8),  # after 8 bytes of header length
    Format("safetensors-sharded", "loaders.safetensors:SafetensorsIndexLoader", json_at=0),  # the index, JSON
    Format("npy", "loaders.npy:NpyLoader", starts=(b"\x93NUMPY",)),
    # (all members, or an empty zip; late: any zip holding an npy array, whatever its members' names)
    Format("npz", "loaders.npy:NpzLoader", container="zip", member=".npy", late=True),
    Format("pytorch-zip", "loaders.torch_zip:TorchZipLoader", container="zip", member=".pkl", any_case=True),
    Format("pytorch-legacy", "loaders.torch_legacy:TorchLegacyLoader", starts=(*TORCH_LEGACY, b"sys_info")),
    Format("keras-h5", "loaders.keras_h5:KerasH5Loader", container="hdf5", late=True),
    Format("keras3-zip", "loaders.keras_zip:KerasZipLoader", container="zip", member="config.json"),
    Format("mxnet-params", "loaders.mxnet_params:MxnetParamsLoader", starts=((0x112).to_bytes(8, "little"),)),
    Format("gguf", "loaders.gguf:GgufLoader", starts=(b"GGUF",)),
    Format("onnx", "loaders.onnx:OnnxLoader", starts=(b"\x08",)),  # field 1 (ir_version), a varint
    Format("tflite", "loaders.tflite:TfliteLoader", starts=(b"TFL3",), at=4),  # the FlatBuffer's file identifier
    # a msgpack map and its first key (FLAX_MAPS: `loaders.flax_msgpack` claims nothing else)
    Format("flax-msgpack", "loaders.flax_msgpack:FlaxMsgpackLoader", starts=FLAX_MAPS),
    Format(
        "tensorflow-checkpoint",
        "loaders.tf_checkpoint:TfCheckpointLoader",
        names=r".+\.data-\d{5}-of-\d{5}$",
        small=True,
        late=True,
        entries=True,
    ),  # fmt: skip
    Format("torch-dcp", "loaders.torch_dcp:TorchDcpLoader", starts=(PICKLE,), suffixes=(".distcp",), entries=True),
    Format("pickle", "loaders.pickle_raw:PickleRawLoader", starts=(*PICKLE_2_5, *PICKLE_0), late=True),
    # joblib's compressors' headers (`loaders.joblib_compressed.CODECS`): zlib, gzip, bz2, xz, lzma
    Format("joblib-compressed", "loaders.joblib_compressed:JoblibCompressedLoader", starts=JOBLIB_CODECS),
)
