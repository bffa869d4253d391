"""PyTorch zip checkpoints (`torch.save` since 1.6, and TorchScript archives), read without torch.

Layout (FORMATS.md section 3.1): a zip whose records all sit under one prefix directory::

    <prefix>/data.pkl                 the pickled object; tensors are persistent ids naming storages
    <prefix>/data/<key>               one stored record per storage, data 64-byte aligned by an 'FB'
                                      padding field in the local header
    <prefix>/.format_version, .storage_alignment, byteorder, version, .data/serialization_id
    TorchScript adds constants.pkl, code/**.py and *.debug_pkl (deflated)

Only the central directory, the local headers and data.pkl are read (and, in a TorchScript archive, the
code/**.py files whose classes declare which attributes are parameters and buffers: `loaders._torchscript`,
read as text); data.pkl is interpreted by our restricted reader (`loaders._pickle`), so nothing the file
names is imported or called. Verified: every storage a tensor names exists and is large enough, every
tensor lies inside its storage.
"""

from __future__ import annotations

from typing import ClassVar

from inspector.errors import FormatError, LimitExceededError, UnsupportedVariantError
from inspector.probe import Probe
from inspector.records import Checkpoint, Region, RegionKind
from loaders import _pickle, _torch, _torchscript, _zip
from loaders.base import Claim, single_file

FORMAT = "pytorch-zip"
MAX_PICKLE_BYTES = 1 << 30
PICKLE_NAME = "data.pkl"
TORCHSCRIPT_MARKER = "constants.pkl"


def _prefix(members: tuple[_zip.ZipMember, ...]) -> str | None:
    for m in members:
        if m.name.endswith("/" + PICKLE_NAME) and m.name.count("/") == 1:
            return m.name[: -len(PICKLE_NAME)]
    return None


class TorchZipLoader:
    """A zip archive with ``<prefix>/data.pkl``."""

    name: ClassVar[str] = FORMAT
    extensions: ClassVar[tuple[str, ...]] = (".pt", ".pth", ".bin", ".ckpt", ".tar")

    def claim(self, probe: Probe) -> Claim | None:
        members = probe.zip_members
        return Claim.STRUCTURE if members and _prefix(members) is not None else None

    def load(self, probe: Probe) -> Checkpoint:
        members, zip_regions = _zip.read_zip(probe, FORMAT)
        prefix = _prefix(members)
        if prefix is None:
            raise FormatError(probe.path, FORMAT, "no data.pkl record")
        by_name = {m.name: m for m in members}
        pkl = by_name[prefix + PICKLE_NAME]
        if pkl.method != _zip.STORED:
            raise UnsupportedVariantError(probe.path, FORMAT, "data.pkl is compressed")
        if pkl.compress_size > MAX_PICKLE_BYTES:
            raise LimitExceededError(probe.path, FORMAT, f"data.pkl of {pkl.compress_size:,} bytes")
        storages: dict[str, _pickle.StorageRef] = {}
        data = probe.read_at(pkl.data_offset, pkl.compress_size, fmt=FORMAT, what="data.pkl")
        try:
            result = _pickle.load(_pickle.Reader(data), _torch.persistent_loader(storages))
        except _pickle.PickleError as exc:
            raise FormatError(probe.path, FORMAT, f"data.pkl: {exc}") from exc
        records = {key: by_name.get(f"{prefix}data/{key}") for key in storages}
        for key, ref in storages.items():
            record = records[key]
            if record is None:
                raise FormatError(probe.path, FORMAT, f"storage {key!r} named in data.pkl has no data/{key} record")
            if record.file_size < ref.nbytes:
                raise FormatError(
                    probe.path,
                    FORMAT,
                    f"storage {key!r} needs {ref.nbytes:,} bytes, its record holds {record.file_size:,}",
                )
        offsets = {key: m.data_offset for key, m in records.items() if m is not None}
        try:
            tensors, findings = _torch.build_tensors(result.value, offsets)
        except _pickle.PickleError as exc:
            raise FormatError(probe.path, FORMAT, str(exc)) from exc
        torchscript = prefix + TORCHSCRIPT_MARKER in by_name
        if torchscript:  # the archive declares its parameters and buffers in code/__torch__/**.py
            tensors = _torchscript.apply(probe, members, prefix, FORMAT, result.value, tensors)
        regions = list(zip_regions)
        storage_members = {f"{prefix}data/{key}": key for key in storages}
        grouped = _torch.by_storage(tensors)
        for m in members:
            storage_key = storage_members.get(m.name)
            if storage_key is not None:
                regions += _torch.storage_regions(
                    storage_key, m.data_offset, m.compress_size, grouped.get(storage_key, [])
                )
            elif m.name.startswith(prefix + "data/"):
                regions.append(
                    Region(
                        RegionKind.UNREFERENCED, m.data_offset, m.compress_size, f"record {m.name!r}: no tensor uses it"
                    )
                )
            else:
                regions.append(Region(RegionKind.METADATA, m.data_offset, m.compress_size, f"record {m.name!r}"))
        attributes = {
            "torch.archive": prefix.rstrip("/"),
            "torch.kind": "torchscript" if torchscript else "torch.save",
            "torch.storages": str(len(storages)),
        }
        version = by_name.get(prefix + "version") or by_name.get(prefix + ".data/version")
        if version is not None and version.compress_size < 16 and version.method == _zip.STORED:
            attributes["torch.version_record"] = (
                probe.read_at(version.data_offset, version.compress_size).decode("ascii", "replace").strip()
            )
        findings += _torch.unsafe_finding(result.unsafe) + _torch.globals_finding(result.globals)
        return single_file(probe, FORMAT, "pytorch", tensors, regions, attributes, findings)
