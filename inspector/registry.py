"""The loader registry and content-based detection.

Loaders come from `loaders.BUILTIN_LOADERS` plus the entry-point group ``inspector.loaders``, loaded
lazily on first use. Detection asks every loader for a `Claim` and keeps the single strongest; the
file extension is never consulted except as a hint in error messages.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib.metadata import entry_points
from types import MappingProxyType
from typing import TYPE_CHECKING

from inspector.errors import AmbiguousFormatError, RegistryError, UnknownFormatError
from inspector.probe import Probe

if TYPE_CHECKING:
    from inspector.records import Checkpoint
    from loaders.base import Loader

ENTRY_POINT_GROUP = "inspector.loaders"
_LOADERS: dict[str, type[Loader]] = {}
_loaded = False


def _ensure_loaded() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    from loaders import BUILTIN_LOADERS

    for cls in BUILTIN_LOADERS:
        _LOADERS.setdefault(cls.name, cls)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        cls = ep.load()
        if cls.name not in _LOADERS:
            _LOADERS[cls.name] = cls


def loaders() -> Mapping[str, type[Loader]]:
    """A read-only view of the registered loaders, by format name."""
    _ensure_loaded()
    return MappingProxyType(_LOADERS)


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

    Raises:
        UnknownFormatError: no loader claims the file.
        AmbiguousFormatError: two loaders claim it equally strongly.
    """
    _ensure_loaded()
    claims = []
    for cls in _LOADERS.values():
        loader = cls()
        strength = loader.claim(probe)
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
    """The first answer of the loaders' optional `hook` (`folder_entry`, `member_entry`) for `path`, or None."""
    _ensure_loaded()
    for cls in _LOADERS.values():
        find = getattr(cls, hook, None)
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
            ckpt = with_config(decide(loader.load(probe)), probe)
        return probe.annotate(ckpt)
