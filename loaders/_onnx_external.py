"""ONNX external data: the files beside a model that hold its tensors' bytes (FORMATS.md section 8).

Each file is opened by name only inside the model's folder: an absolute location, `..` or a symlink leading out
is reported as unsafe and not opened (onnx refuses these too). Every tensor's offset and length are checked
against its file; zero gaps of up to 64 KiB are an aligned writer's padding; other gaps and trailing bytes are
findings.
"""

from __future__ import annotations

import os
import posixpath
from collections import defaultdict

from inspector.errors import FormatError, InspectorError
from inspector.probe import Probe
from inspector.records import Finding, Region, RegionKind, Severity
from loaders.base import tile

FORMAT = "onnx"
MAX_GAP_PADDING = 64 << 10  # onnx's _MAX_EXTERNAL_DATA_PADDING


class ExternalFiles:
    """External data files: opened by name inside the model's folder only; their regions tiled as they fill."""

    def __init__(self, probe: Probe, files: list[tuple[str, int]], regions: list[Region], findings: list[Finding]):
        self.model = probe
        self.folder = os.path.dirname(probe.path)
        self.files, self.regions, self.findings = files, regions, findings
        self.probes: dict[str, tuple[int, Probe] | None] = {}
        self.spans: dict[int, list[tuple[int, int, str]]] = defaultdict(list)

    def _open(self, location: str) -> tuple[int, Probe] | None:
        if location in self.probes:
            return self.probes[location]
        self.probes[location] = None
        if not location:
            self.findings.append(Finding("MISSING_EXTERNAL_DATA", Severity.ERROR, "an external tensor has no location"))
            return None
        norm = posixpath.normpath(location.replace("\\", "/"))
        path = os.path.join(self.folder, norm)
        inside = os.path.realpath(path).startswith(os.path.join(os.path.realpath(self.folder), ""))
        if os.path.isabs(norm) or norm.startswith("../") or norm == ".." or ":" in norm or not inside:
            self.findings.append(
                Finding(
                    "UNSAFE_CONTENT",
                    Severity.ERROR,
                    f"external data location {location!r} points outside the model's folder: "
                    "not opened (onnx refuses it too)",
                )
            )
            return None
        try:
            probe = Probe(path)
        except InspectorError as exc:
            self.findings.append(
                Finding(
                    "MISSING_EXTERNAL_DATA",
                    Severity.ERROR,
                    f"external data file {location!r}: {exc.args[0].split(': ', 1)[-1]}",
                )
            )
            return None
        self.files.append((path, probe.size))
        self.probes[location] = (len(self.files) - 1, probe)
        return self.probes[location]

    def place(
        self, name: str, info: dict[str, str], dtype: str, shape: tuple[int, ...], nbytes: int, notes: list[str]
    ) -> tuple[int, int | None]:
        """(file index, absolute offset) of an external tensor, after checking its range against the file."""
        opened = self._open(info.get("location", ""))
        if opened is None:
            notes.append(f"external data in {info.get('location', '')!r}, not read")
            return 0, None
        index, probe = opened
        try:
            offset = int(info.get("offset", "0"))
            length = int(info["length"]) if "length" in info else probe.size - offset
        except ValueError as exc:
            raise FormatError(self.model.path, FORMAT, f"tensor {name!r}: external offset or length {exc}") from exc
        notes.append(f"external: {info.get('location')} at {offset:,}, {length:,} bytes")
        if offset < 0 or length < 0 or offset + length > probe.size:
            self.findings.append(
                Finding(
                    "EXTERNAL_DATA_RANGE",
                    Severity.ERROR,
                    f"tensor {name!r}: bytes {offset:,}+{length:,} of {info.get('location')!r} "
                    f"lie past its end ({probe.size:,} bytes)",
                    (name,),
                )
            )
            return index, None
        if dtype != "STRING" and length != nbytes:
            self.findings.append(
                Finding(
                    "EXTERNAL_DATA_LENGTH",
                    Severity.ERROR,
                    f"tensor {name!r}: {length:,} external bytes, {list(shape)} {dtype} needs {nbytes:,}",
                    (name,),
                    nbytes,
                    length,
                )
            )
            if length < nbytes:
                return index, None
        self.spans[index].append((offset, length, name))
        return index, offset

    def close(self) -> None:
        for location, opened in self.probes.items():
            if opened is None:
                continue
            index, probe = opened
            regions, pos = [], 0
            for start, length, name in sorted(self.spans[index]):
                gap = start - pos
                if 0 < gap <= MAX_GAP_PADDING and not probe.read_at(pos, gap, fmt=FORMAT).strip(b"\0"):
                    regions.append(Region(RegionKind.PADDING, pos, gap, "zero padding before an aligned tensor", index))
                elif gap > 0:
                    self.findings.append(
                        Finding(
                            "GAP",
                            Severity.WARNING,
                            f"{gap:,} bytes of {location!r} before tensor {name!r} belong to no tensor",
                        )
                    )
                regions.append(Region(RegionKind.TENSOR_DATA, start, length, name, index))
                pos = max(pos, start + length)
            if pos < probe.size:
                self.findings.append(
                    Finding(
                        "TRAILING_BYTES",
                        Severity.WARNING,
                        f"{probe.size - pos:,} bytes of {location!r} after the last tensor",
                    )
                )
            self.regions += tile(regions, probe.size, index)
            probe.close()
