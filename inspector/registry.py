"""The loader registry and content-based detection.

Loaders come from the rows of `loaders.FORMATS` (a loader's module is imported only when its row matches the file)
plus the entry-point group ``inspector.loaders``, loaded lazily on first use. `importlib.metadata` (about 20 ms of
imports) is loaded only when an installed distribution declares that group: `_declares_plugins` looks for it in
the `entry_points.txt` files first. Detection asks every loader whose row matches for a `Claim` and keeps the
single strongest; the file extension is never consulted except to break a tie and as a hint in error messages.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from operator import methodcaller
from types import MappingProxyType

from inspector.errors import AmbiguousFormatError, RegistryError, UnknownFormatError
from inspector.probe import Probe

TYPE_CHECKING = False
if TYPE_CHECKING:
    from inspector.records import Checkpoint
    from loaders import Format
    from loaders.base import Loader

ENTRY_POINT_GROUP = "inspector.loaders"
_METADATA = methodcaller("endswith", (".dist-info", ".egg-info"))  # a distribution's metadata folder
# By format name: a built-in row until its class is needed, then the class; plugins and registered classes as such.
_LOADERS: dict[str, type[Loader] | Format] = {}
_loaded = False


def _ensure_loaded() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    from loaders import FORMATS

    for row in FORMATS:
        _LOADERS.setdefault(row.name, row)
    if not _declares_plugins():
        return
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        cls = ep.load()
        if cls.name not in _LOADERS:
            _LOADERS[cls.name] = cls


def _declares_plugins(paths: list[str] | None = None) -> bool:
    """Whether some distribution on `sys.path` declares ``[inspector.loaders]`` in its entry_points.txt (the file
    `importlib.metadata` reads for `entry_points()`), looked up without importing it."""
    header = f"[{ENTRY_POINT_GROUP}]".encode()
    for folder in sys.path if paths is None else paths:
        try:
            names = _listing(folder or ".")
        except OSError:  # a zip on sys.path, a missing folder: importlib.metadata finds nothing there either
            continue
        for name in filter(_METADATA, names):  # (a C loop over the standard library's hundreds of names)
            declared = os.path.join(folder or ".", name, "entry_points.txt")
            if not os.access(declared, os.R_OK):  # most distributions have none: no exception raised for them
                continue
            try:
                with open(declared, "rb") as fh:
                    if header in fh.read():
                        return True
            except OSError:
                continue
    return False


def _listing(folder: str) -> Iterable[str]:
    """The names in a folder: the listing the import system keeps of a `sys.path` folder it has searched, while the
    folder is unchanged (as its own finder checks it: one stat, where listing the standard library's folder anew
    costs 0.05 ms), else read now."""
    finder = sys.path_importer_cache.get(os.getcwd() if folder == "." else folder)
    cached = getattr(finder, "_path_cache", None)  # (importlib's FileFinder: the names, and the folder's mtime)
    if cached and getattr(finder, "_path_mtime", None) == os.stat(folder).st_mtime:
        return cached  # type: ignore[no-any-return]
    return os.listdir(folder)


def _class(name: str) -> type[Loader]:
    """The loader class registered under `name`, its module imported if it was a row."""
    entry = _LOADERS[name]
    if isinstance(entry, type):
        return entry
    cls = _LOADERS[name] = entry.load()
    return cls


def loaders() -> Mapping[str, type[Loader]]:
    """A read-only view of the registered loaders, by format name (every loader module is imported)."""
    _ensure_loaded()
    return MappingProxyType({name: _class(name) for name in list(_LOADERS)})


def register_loader(cls: type[Loader], *, replace: bool = False) -> None:
    """Add a loader class.

    Raises:
        RegistryError: a loader of that name exists and `replace` is false.
    """
    _ensure_loaded()
    if cls.name in _LOADERS and not replace:
        raise RegistryError(f"a loader named {cls.name!r} is already registered")
    _LOADERS[cls.name] = cls


def unregister_loader(name: str) -> None:
    _ensure_loaded()
    _LOADERS.pop(name, None)


def detect_probe(probe: Probe) -> Loader:
    """The loader whose claim on the file is strongest.

    Claims come from the first `HEAD_BYTES` (and a zip's directory); a loader's optional `late_claim`, which reads
    elsewhere in the file, is asked only when no loader claims it so, so a claimed file costs no extra reads.

    Raises:
        UnknownFormatError: no loader claims the file.
        AmbiguousFormatError: two loaders claim it equally strongly.
    """
    from loaders import Format

    _ensure_loaded()
    claims = []
    asked = {}
    for name, entry in list(_LOADERS.items()):
        if isinstance(entry, Format) and not entry.asks(probe):
            continue
        loader = asked[name] = _class(name)()
        strength = loader.claim(probe)
        if strength is not None:
            claims.append((strength, loader))
    if not claims:  # evidence away from the head (a file's last bytes, an HDF5 user block): only now is it read
        for name, entry in list(_LOADERS.items()):
            if isinstance(entry, Format) and not entry.late:
                continue
            loader = asked.get(name) or _class(name)()
            late = getattr(loader, "late_claim", None)
            strength = late(probe) if late is not None else None
            if strength is not None:
                claims.append((strength, loader))
    if not claims:
        raise UnknownFormatError(probe.path, probe.head, probe.size)
    best = max(strength for strength, _ in claims)
    winners = [loader for strength, loader in claims if strength == best]
    if len(winners) > 1:
        ext = os.path.splitext(probe.path)[1].lower()
        hinted = [w for w in winners if ext and ext in w.extensions]
        if len(hinted) == 1:  # the extension only breaks ties between equal content claims
            return hinted[0]
        raise AmbiguousFormatError(probe.path, [w.name for w in winners])
    return winners[0]


def detect(path: str | os.PathLike[str]) -> str:
    """The format name of the file at `path`, decided by its content."""
    with Probe(path) as probe:
        return detect_probe(probe).name


def _entry(hook: str, path: str | os.PathLike[str]) -> str | None:
    """The first answer of the loaders' optional `hook` (`folder_entry`, `member_entry`) for `path`, or None (asked
    of the built-in rows marked `entries` only: a folder audit asks it of every file, importing no other loader)."""
    from loaders import Format

    _ensure_loaded()
    for name, row in list(_LOADERS.items()):
        if isinstance(row, Format) and not row.entries:
            continue
        find = getattr(_class(name), hook, None)
        entry = find(os.fspath(path)) if find is not None else None
        if entry is not None:
            return str(entry)
    return None


def folder_entry(path: str | os.PathLike[str]) -> str | None:
    """The file that stands for a folder holding one checkpoint (a loader's optional `folder_entry`), or None."""
    return _entry("folder_entry", path)


def member_entry(path: str | os.PathLike[str]) -> str | None:
    """For one file of a multi-file checkpoint (a TF data shard, a DCP `.distcp`), the file that stands for the
    whole checkpoint (a loader's optional `member_entry`); None for any other file. A folder audit can list each
    such checkpoint once, under its entry."""
    return _entry("member_entry", path)


def load(path: str | os.PathLike[str]) -> Checkpoint:
    """Read a checkpoint's headers into a `Checkpoint` (never its tensor data).

    A folder that is one checkpoint (a TensorFlow checkpoint or SavedModel folder, a PyTorch distributed
    checkpoint) is read through the file that stands for it.

    Raises:
        InspectorError: any subclass, when the file cannot be read; see `inspector.errors`.
    """
    from inspector.hfconfig import with_config
    from inspector.kinds import decide
    from loaders.base import parsing

    if os.path.isdir(path):
        path = folder_entry(path) or path
    with Probe(path) as probe:
        loader = detect_probe(probe)
        with parsing(probe, loader.name):
            ckpt = decide(with_config(loader.load(probe), probe))  # kinds may read the config beside it
        return probe.annotate(ckpt)
