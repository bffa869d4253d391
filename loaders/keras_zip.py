"""Keras 3 ``.keras`` archives (FORMATS.md 6.4): a zip of metadata.json, config.json, model.weights.h5.

Keras writes every member stored, so the weights are read in place: h5py opens a read-only window over
the member's bytes and every offset is shifted to the archive. config.json gives the layer classes, names
and trainable flags that map Keras 3's numbered variables (``vars/0``, ``vars/1``) to their meaning.
"""

from __future__ import annotations

from inspector.errors import FormatError, InspectorError, LimitExceededError, UnsupportedVariantError
from inspector.jsontext import loads
from inspector.probe import Probe
from inspector.records import Checkpoint, Finding, Region, RegionKind, Severity
from loaders import _keras_hub, _zip, keras_h5
from loaders.base import Claim, single_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import ClassVar

FORMAT = "keras3-zip"
CONFIG, METADATA, WEIGHTS = "config.json", "metadata.json", "model.weights.h5"
MAX_JSON_BYTES = 64 << 20


def _json(probe: Probe, member: _zip.ZipMember) -> object:
    if member.file_size > MAX_JSON_BYTES:
        raise LimitExceededError(probe.path, FORMAT, f"{member.name!r} of {member.file_size:,} bytes")
    raw = _zip.inflate_head(probe, member, member.file_size, FORMAT, _zip.ZIPFILE_METHODS)  # (Keras: zipfile)
    try:
        return loads(raw.decode("utf-8"))
    except ValueError as exc:
        raise FormatError(probe.path, FORMAT, f"{member.name!r} is not JSON: {exc}") from exc


class KerasZipLoader:
    """A zip with config.json and model.weights.h5 at its top level."""

    name: ClassVar[str] = FORMAT
    extensions: ClassVar[tuple[str, ...]] = (".keras",)

    def claim(self, probe: Probe) -> Claim | None:
        names = {m.name for m in probe.zip_members or ()}
        return Claim.STRUCTURE if CONFIG in names and (WEIGHTS in names or "model.weights.npz" in names) else None

    def load(self, probe: Probe) -> Checkpoint:
        members, zip_regions = _zip.read_zip(probe, FORMAT)
        by_name = {m.name: m for m in members}
        weights = by_name.get(WEIGHTS)
        config = _json(probe, by_name[CONFIG])
        code = keras_h5.code_findings(config)
        try:  # (Keras deserialises the config, running its code, before it reads the weights: the evidence wins)
            if weights is None:
                raise UnsupportedVariantError(
                    probe.path, FORMAT, "weights stored as model.weights.npz are not read yet"
                )
            if weights.method != _zip.STORED:
                raise UnsupportedVariantError(
                    probe.path, FORMAT, "model.weights.h5 is compressed: it cannot be read in place"
                )
            layers = keras_h5.config_layers(config)
            _, tensors, h5_regions, _, _ = keras_h5.read(
                probe, FORMAT, weights.data_offset, weights.compress_size, layers
            )
        except InspectorError as exc:
            if not any(f.code == "UNSAFE_CONTENT" for f in code):
                raise
            reason = getattr(exc, "reason", None) or str(exc)
            unread = Finding("UNREADABLE", Severity.ERROR, f"the weights were not read: {reason}")
            return single_file(probe, FORMAT, "keras", (), (), {}, [*code, unread])
        tensors = _keras_hub.frozen(tensors, _keras_hub.backbone_class(config))  # (a keras-hub backbone's config)
        regions = list(zip_regions) + h5_regions
        for m in members:
            if m is not weights:
                regions.append(Region(RegionKind.METADATA, m.data_offset, m.compress_size, f"member {m.name!r}"))
        attributes = {"keras.members": ", ".join(sorted(by_name))}
        if METADATA in by_name:
            meta = _json(probe, by_name[METADATA])
            if isinstance(meta, dict):
                attributes.update({f"keras.{k}": str(v) for k, v in meta.items()})
        cfg = {"source": "config.json", "layers": layers, "raw": config}
        findings = code + _zip.directory_findings(probe)
        findings += _keras_hub.config_findings(config, tensors) if isinstance(config, dict) else []
        findings += keras_h5.merged_lora_findings(layers, tensors)
        return single_file(probe, FORMAT, "keras", tensors, regions, attributes, findings, config=cfg)
