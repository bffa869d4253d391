"""joblib's compressed files (``joblib.dump(obj, path, compress=...)``: scikit-learn models saved small), judged.

Layout: the whole of a joblib file (one pickle stream, each array's bytes after its wrapper: `loaders.pickle_raw`)
through one compressor, the file starting with that compressor's own header (`joblib.compressor`): zlib, gzip, bz2,
xz, lzma, or an LZ4 frame (read with the `lz4` package, which joblib needs for it too: without it such a file is a
clear error, not judged). ``joblib.load`` decompresses and unpickles it,
running what it names, so it is judged as a bare pickle is: the stream is decompressed into a temporary file (at most
`MAX_INFLATED` bytes, a larger one is not judged; the inspected file is only read) and read there by
`loaders.pickle_raw`, the verdict, the arrays and the findings kept. The file is one compressed region; an array's
bytes lie in the decompressed stream, at no offset of the file (a note gives the stream's). Not header-only: what a
pickle would call can be anywhere in it.
"""

from __future__ import annotations

import os

from inspector.errors import FormatError, InspectorError, LimitExceededError, UnsupportedVariantError
from inspector.probe import Probe
from inspector.records import Checkpoint, Region, RegionKind
from inspector.recordtype import replace
from loaders.base import Claim, single_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, ClassVar

FORMAT = "joblib-compressed"


def _zlib(wbits: int) -> Any:
    import zlib  # (the compressors' modules: a file whose first bytes only look like a header imports none)

    return zlib.decompressobj(wbits)


def _bz2() -> Any:
    import bz2

    return bz2.BZ2Decompressor()


def _lzma(form: str) -> Any:
    import lzma

    return lzma.LZMADecompressor(getattr(lzma, form))


class MissingCodecError(Exception):
    """The compressor's package is not installed: the file is joblib's, and cannot be judged here."""


def _lz4() -> Any:
    try:
        import lz4.frame  # (not in the standard library: joblib's lz4 files need it to load as well)
    except ImportError as exc:
        raise MissingCodecError("an lz4-compressed stream: reading it needs the lz4 package (pip install lz4)") from exc
    return lz4.frame.LZ4FrameDecompressor()


# joblib's compressors: the bytes each one's files begin with, and a decompressor of its stream
CODECS: dict[str, tuple[bytes, Callable[[], Any]]] = {
    "zlib": (b"\x78", lambda: _zlib(15)),
    "gzip": (b"\x1f\x8b", lambda: _zlib(16 + 15)),  # (zlib's MAX_WBITS, and 16 for a gzip header)
    "bz2": (b"BZh", _bz2),
    "xz": (b"\xfd7zXZ\x00", lambda: _lzma("FORMAT_XZ")),
    "lzma": (b"]\x00\x00", lambda: _lzma("FORMAT_ALONE")),
    "lz4": (b"\x04\x22\x4d\x18", _lz4),  # (an LZ4 frame's magic number)
}
PICKLE_HEADS = tuple(b"\x80" + bytes([v]) for v in range(2, 6))  # (joblib writes protocol 2 and later)
MAX_INFLATED = 256 << 20  # decompressed bytes judged at most (about 0.7 s of zlib; the temporary file's size)
CHUNK = 1 << 20  # compressed bytes read at a time
OUT = 4 << 20  # decompressed bytes made at a time


def codec(head: bytes) -> str | None:
    """The compressor whose header the file begins with, if any."""
    return next((name for name, (magic, _) in CODECS.items() if head.startswith(magic)), None)


class JoblibCompressedLoader:
    """A file that is one pickle stream through one of joblib's compressors."""

    name: ClassVar[str] = FORMAT
    extensions: ClassVar[tuple[str, ...]] = (".joblib", ".pkl", ".pickle", ".z", ".gz", ".bz2", ".xz", ".lzma")

    def claim(self, probe: Probe) -> Claim | None:
        name = codec(probe.head)
        if name is None:
            return None
        if name == "lz4":  # (a frame gives nothing before its first block ends, 64 KiB to 4 MiB on: its descriptor's
            return Claim.CONTAINER if probe.head[4:5] and probe.head[4] >> 6 == 1 else None  # version bits, 01)
        try:  # (the head's first bytes, decompressed: a pickle's PROTO)
            opened = CODECS[name][1]().decompress(probe.head, 16)
        except Exception:  # noqa: BLE001 - sniffing never raises: no stream of that compressor, no claim
            return None
        return Claim.CONTAINER if opened[:2] in PICKLE_HEADS else None

    def load(self, probe: Probe) -> Checkpoint:
        import tempfile

        from loaders.pickle_raw import PickleRawLoader

        name = codec(probe.head) or ""
        handle, temporary = tempfile.mkstemp(prefix="inspector-", suffix=".pkl")
        try:
            with os.fdopen(handle, "wb") as out:
                inflated = _inflate(probe, name, out.write)
            with Probe(temporary) as stream:
                try:
                    inner = PickleRawLoader().load(stream)
                except InspectorError as exc:  # (its message names the temporary file: said of this one)
                    reason = getattr(exc, "reason", str(exc))
                    raise FormatError(probe.path, FORMAT, f"its {name} stream: {reason}") from exc
        finally:
            os.unlink(temporary)
        tensors = [
            replace(t, offset=None, notes=(*t.notes, f"at byte {t.offset:,} of the {name} stream"))
            if t.offset is not None
            else t
            for t in inner.tensors
        ]
        region = Region(RegionKind.COMPRESSED, 0, probe.size, f"{name}-compressed pickle stream", logical=inflated)
        attributes = {**inner.attributes, "joblib.compression": name, "joblib.decompressed_bytes": str(inflated)}
        return single_file(probe, FORMAT, "python", tensors, (region,), attributes, inner.findings)


def _inflate(probe: Probe, name: str, write: Callable[[bytes], Any]) -> int:
    """Decompress the whole file through `write`, at most `MAX_INFLATED` bytes, `OUT` at a time (a small file may
    decompress to gigabytes); the bytes written.

    Raises:
        LimitExceededError: the stream decompresses to more than `MAX_INFLATED` bytes.
        FormatError: the stream is corrupt, or ends before its compressor's end.
    """
    total = 0
    try:
        decompressor = CODECS[name][1]()
        for at in range(0, probe.size, CHUNK):
            data: bytes | None = probe.read_at(at, min(CHUNK, probe.size - at), fmt=FORMAT)
            while data is not None:
                out = decompressor.decompress(data, OUT)
                total += len(out)
                if total > MAX_INFLATED:
                    raise LimitExceededError(probe.path, FORMAT, f"decompresses beyond {MAX_INFLATED:,} bytes")
                write(out)
                data = _more(decompressor)
            if decompressor.eof:
                break
    except InspectorError:
        raise
    except MissingCodecError as exc:
        raise UnsupportedVariantError(probe.path, FORMAT, f"{exc}; not judged") from exc
    except Exception as exc:  # noqa: BLE001 - the decompressor's own errors (zlib.error, LZMAError, OSError...)
        raise FormatError(probe.path, FORMAT, f"corrupt {name} stream: {exc}") from exc
    if not decompressor.eof:
        raise FormatError(probe.path, FORMAT, f"the {name} stream ends before its end")
    return total


def _more(decompressor: Any) -> bytes | None:
    """What to hand the decompressor next for the output it holds back (its output was capped), or None."""
    if decompressor.eof:
        return None
    if hasattr(decompressor, "needs_input"):  # bz2, lzma: their own buffer, asked with no input
        return None if decompressor.needs_input else b""
    return decompressor.unconsumed_tail or None  # zlib: the input it left
