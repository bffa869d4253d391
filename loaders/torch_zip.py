"""PyTorch zip checkpoints (`torch.save` since 1.6, and TorchScript archives), read without torch.

Layout (FORMATS.md section 3.1): a zip whose records all sit under one prefix directory::

    <prefix>/data.pkl                 the pickled object; tensors are persistent ids naming storages
    <prefix>/data/<key>               one stored record per storage, data 64-byte aligned by an 'FB'
                                      padding field in the local header
    <prefix>/.format_version, .storage_alignment, byteorder, version, .data/serialization_id
    TorchScript adds constants.pkl, code/**.py and *.debug_pkl (deflated)

Only the central directory, the local headers and the pickles are read (and, in a TorchScript archive, the
code/**.py files whose classes declare which attributes are parameters and buffers: `loaders._torchscript`,
read as text); the pickles are interpreted by our restricted reader (`loaders._pickle`), so nothing the file
names is imported or called. Verified: every storage a tensor names exists and is large enough, every
tensor lies inside its storage.

The archive is read as torch reads it (caffe2 `PyTorchStreamReader`): the folder is the first
member's, and of duplicate names the last one wins. Members outside that folder (torch refuses such
an archive), a second data.pkl and duplicate names are `ZIP_LAYOUT` findings, and every ``*.pkl``
member is checked for unsafe content, not only the one torch would read (`loaders._torch_archive`).
A deflated data.pkl is legal (torch reads it) and is inflated, bounded.
"""

from __future__ import annotations

from itertools import chain, count, repeat
from operator import attrgetter, ge, mul

from inspector.errors import FormatError
from inspector.probe import Probe
from inspector.records import Checkpoint, Region, RegionKind, TensorInfo
from loaders import _pickle, _torch, _zip
from loaders._torch_archive import (
    PICKLE_SUFFIXES,
    archive_folder,
    damaged_archive_evidence,
    has_pickle,
    layout_findings,
    other_pickles,
    pickle_reader,
)
from loaders.base import Claim, single_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import ClassVar

FORMAT = "pytorch-zip"
PICKLE_NAME = "data.pkl"
TORCHSCRIPT_MARKER = "constants.pkl"


class TorchZipLoader:
    """A zip archive with ``<prefix>/data.pkl``."""

    name: ClassVar[str] = FORMAT
    extensions: ClassVar[tuple[str, ...]] = (".pt", ".pth", ".bin", ".ckpt", ".tar")

    def claim(self, probe: Probe) -> Claim | None:
        members = probe.zip_members
        if members is None and probe.head.startswith(_zip.LOCAL_SIG):  # a damaged archive: its sound members
            try:
                members = _zip.readable_members(probe, FORMAT)
            except Exception:  # sniffing never raises (as Probe.zip_members): load() reports the damage
                return None
        if not members:
            return None
        if has_pickle(members):
            return Claim.STRUCTURE
        # any other zip of pickles: torch refuses it, but its pickles are judged all the same (picklescan's zips)
        return Claim.CONTAINER if any(map(str.endswith, members.names, repeat(PICKLE_SUFFIXES))) else None

    def load(self, probe: Probe) -> Checkpoint:
        evidence: set[str] = set()  # what any pickle would call: kept even when the rest cannot be read
        try:
            return self._read(probe, evidence)
        except Exception as exc:
            evidence = evidence or damaged_archive_evidence(probe, FORMAT)
            if not evidence:
                raise
            return _torch.refused(probe, FORMAT, evidence, exc)

    def _read(self, probe: Probe, evidence: set[str]) -> Checkpoint:
        members, zip_ends = _zip.read_members(probe, FORMAT)
        prefix = archive_folder(members)
        if prefix is None:  # torch refuses the archive; its pickles are still checked for the verdict
            other_pickles(probe, FORMAT, members, None, evidence)
            raise FormatError(probe.path, FORMAT, f"the first member {members[0].name!r} is not in a folder with a "
                              "data.pkl: torch.load refuses this archive")  # fmt: skip
        member_names = members.names
        pkl = members[members.index_of(prefix + PICKLE_NAME)]  # (the one torch's zip reader finds)
        other_names: set[str] = set()  # (the globals of the archive's other pickles)
        other_pickles(probe, FORMAT, members, pkl, evidence, other_names)
        storages: dict[str, _pickle.StorageRef] = {}
        reader, _ = pickle_reader(probe, FORMAT, pkl)  # (strict: a damaged stream is judged by `load`'s evidence)
        try:
            result = _pickle.load(reader, _torch.persistent_loader(storages))
        except _pickle.PickleError as exc:
            evidence |= exc.unsafe
            raise FormatError(probe.path, FORMAT, f"data.pkl: {exc}") from exc
        evidence |= result.unsafe
        del reader  # (the pickle's bytes: only its values are kept)
        data_dir = prefix + "data/"
        offsets: dict[str, int] = {}  # storage key -> its record's data offset
        # every storage's record, and its size, in C calls (100,000 storages); any that is missing or short: below
        refs = list(storages.values())
        first = data_dir + next(iter(storages), "")
        start = member_names.index(first) if first in member_names else 0
        end = start + len(refs)
        block = member_names[start:end]  # (in torch's order: the storages' records, named data_dir + key, no copy)
        by_name: dict[str, int] = {}  # each name's member's index, where torch finds each by its name (made if asked)
        exact = members.named_exactly()  # (else of names equal but for case torch reads the one its lookup finds)
        find = by_name.get if exact else members.index_of
        found = (  # (each record's name is data_dir + its key: no name made a storage)
            exact
            and len(block) == len(refs)
            and members.lines()  # (no name holds a newline: the block's names are the lines of their listing)
            and "\n".join(block) == data_dir + ("\n" + data_dir).join(storages)
            # (and no other name begins so: no record of the block has a namesake that torch would read instead)
            and members.listing().count("\n" + data_dir) + members.listing().startswith(data_dir) == len(refs)
        )
        if found:
            sizes, data = members.file_sizes[start:end], members.data_offsets[start:end]
        else:
            by_name.update(zip(member_names, count()) if exact else ())
            rows = list(map(find, map(data_dir.__add__, storages)))  # each storage's record's index
            found = None not in rows
            if found:
                sizes = list(map(members.file_sizes.__getitem__, rows))  # type: ignore[arg-type]
                data = list(map(members.data_offsets.__getitem__, rows))  # type: ignore[arg-type]
            del rows
        if found and all(map(ge, sizes, map(mul, map(attrgetter("numel"), refs), map(attrgetter("itemsize"), refs)))):
            offsets = dict(zip(storages, data, strict=True))
        del refs, block
        if not offsets and not by_name and exact:
            by_name.update(zip(member_names, count()))
        for key, ref in storages.items() if not offsets else ():
            index = find(data_dir + key)
            if index is None:
                raise FormatError(probe.path, FORMAT, f"storage {key!r} named in data.pkl has no data/{key} record")
            record = members[index]
            if record.file_size < ref.numel * ref.itemsize:  # (ref.nbytes, without the property)
                raise FormatError(
                    probe.path,
                    FORMAT,
                    f"storage {key!r} needs {ref.nbytes:,} bytes, its record holds {record.file_size:,}",
                )
            offsets[key] = record.data_offset
        n_storages = len(storages)
        del storages, by_name
        try:
            tensors, findings = _torch.build_tensors(result.value, offsets)
        except _pickle.PickleError as exc:
            raise FormatError(probe.path, FORMAT, str(exc)) from exc
        marker = prefix + TORCHSCRIPT_MARKER
        torchscript = marker in member_names
        if torchscript:  # the archive declares its parameters and buffers in code/__torch__/**.py, and its enums
            from loaders import _torchscript  # (TorchScript archives only)

            tensors = _torchscript.apply(probe, members, prefix, FORMAT, result.value, tensors)
            evidence -= _torchscript.enum_constructions(probe, members, prefix, FORMAT, evidence)
        names = result.globals
        scripted = {name for name in names | other_names if name.startswith("__torch__.")}
        if scripted:  # (objects of scripted classes, in data.pkl or constants.pkl: their code may run at load)
            from loaders import _torchscript

            evidence |= _torchscript.setstate_code(probe, members, prefix, FORMAT, scripted)
        arrays: list[TensorInfo] = []  # numpy arrays pickled in data.pkl, at their bytes there when it is stored
        pkl_regions: list[Region] = []
        if not torchscript:
            stored = pkl.method == _zip.STORED
            try:
                arrays = _torch.pickled_arrays(result, pkl.data_offset if stored else None)
            except _pickle.PickleError as exc:
                raise FormatError(probe.path, FORMAT, str(exc)) from exc
            if arrays and stored:
                from loaders._numpy_pickle import stream_regions  # (pickles naming numpy only)

                end = pkl.data_offset + pkl.compress_size
                pkl_regions = stream_regions(pkl.data_offset, end, arrays, "record %s", repr(pkl.name))
            tensors += arrays
        # the scalars a training checkpoint keeps (a TorchScript archive's data.pkl is its module's attributes)
        values = {} if torchscript else _torch.checkpoint_values(result.value)
        del result  # the pickle's object graph: the tensors hold what they need of it
        keys = list(map(attrgetter("storage"), tensors))
        # each storage one tensor's, every tensor in one (most files): the tensor of each, without a list a storage
        # (`keys` and `tensors` in order; a dict of them made only for a record outside the block of storages, if any)
        alone = None not in keys and len(set(keys)) == len(keys)
        by_key: dict[str, TensorInfo] = {}
        grouped = _torch.by_storage(tensors) if not alone else {}
        skip = len(data_dir)

        tensor_data = RegionKind.TENSOR_DATA

        split: dict[int, list[Region]] = {}  # a member's payload regions, where they are more than one

        def payload(index: int, m: _zip.ZipMember) -> tuple[RegionKind | None, str, str | None]:
            """A member's payload when it is one region (kind, text, subject): a storage, a record no tensor uses,
            another record; else its regions put in `split` (and a kind of None)."""
            name = m.name
            if not name.startswith(data_dir):
                if m is pkl and pkl_regions:  # (numpy arrays' bytes in data.pkl)
                    split[index] = pkl_regions
                    return None, "", None
                return RegionKind.METADATA, "record %s", repr(name)
            key = name[skip:]
            if key not in offsets:
                return RegionKind.UNREFERENCED, "record %s: no tensor uses it", repr(name)
            start, length = m.data_offset, m.compress_size
            if alone:
                if not by_key:
                    by_key.update(zip(keys, tensors, strict=True))
                t = by_key.get(key)
                mine = [] if t is None else [t]
            else:
                mine = grouped.get(key, [])
            regions = _torch.storage_regions(key, start, length, mine)
            if len(regions) == 1 and regions[0].length == length:  # (the record's bytes, all of them)
                return regions[0].kind, regions[0].text, regions[0].subject
            split[index] = regions
            return None, "", None

        def storage_block(members: _zip.Members) -> tuple[int, int]:
            """Where the members are the tensors' storages one for one, in order, each all of its one tensor (torch.save
            writes them so): (start, end) of that block of members, or (0, 0). (A member's data offset is its own, so
            the tensor at a member's data offset is that record's storage's.)"""
            if not alone or not tensors:
                return 0, 0
            mine = tensors
            at = list(map(attrgetter("offset"), mine))
            data = members.data_offsets
            start = data.index(at[0]) if at[0] in data else 0
            end = start + len(mine)
            if (
                data[start:end] == at
                and list(map(attrgetter("span"), mine)).count(None) == len(mine)
                and list(map(attrgetter("nbytes"), mine)) == members.compress_sizes[start:end]
            ):
                return start, end
            return 0, 0

        def payloads(members: _zip.Members) -> _zip.Payloads:
            """The members' payloads; a block of the tensors' storages (most of an archive) told in C calls."""
            start, end = storage_block(members)
            rows = [payload(index, members[index]) for index in chain(range(start), range(end, len(members)))]
            kinds, texts, subjects = map(list, zip(*rows, strict=True)) if rows else ([], [], [])
            if end:  # (the block's storage keys are its tensors')
                n = end - start
                kinds[start:start] = repeat(tensor_data, n)
                texts[start:start] = repeat(_torch.STORAGE, n)
                subjects[start:start] = _zip.quoted(keys)  # (keys, no None: `alone`)
            return _zip.Payloads(kinds, texts, subjects, split)

        regions = _zip.in_file_order(zip_ends, members, payloads)
        grouped.clear()  # (its lists: not held through the tiling)
        by_key.clear()
        keys.clear()
        attributes = {
            "torch.archive": prefix.rstrip("/"),
            "torch.kind": "torchscript" if torchscript else "torch.save",
            "torch.storages": str(n_storages),
        }
        version = _last(members, prefix + "version") or _last(members, prefix + ".data/version")
        if version is not None and version.compress_size < 16 and version.method == _zip.STORED:
            attributes["torch.version_record"] = (
                probe.read_at(version.data_offset, version.compress_size).decode("ascii", "replace").strip()
            )
        attributes.update(values)
        findings += layout_findings(members, prefix) + _zip.directory_findings(probe)
        findings += _torch.unsafe_finding(evidence)
        findings += _torch.globals_finding(names, "torch.jit.load" if torchscript else "torch.load")
        return single_file(probe, FORMAT, "pytorch", tensors, regions, attributes, findings)


def _last(members: _zip.Members, name: str) -> _zip.ZipMember | None:
    """The member of that name torch reads (the last of duplicates)."""
    index = members.index_of(name)
    return None if index is None else members[index]
