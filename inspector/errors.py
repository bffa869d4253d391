"""Exceptions raised when a file cannot be read.

A file that reads but whose numbers do not add up is not an error: it yields findings.

```
InspectorError(Exception)
├── InputError(InspectorError, OSError)        missing, a directory, a FIFO/device, unreadable
├── DetectionError(InspectorError, ValueError)
│   ├── UnknownFormatError                    no loader claimed the file
│   └── AmbiguousFormatError                  equal-strength claims; .candidates
├── FormatError(InspectorError, ValueError)   claimed but malformed; .path .format .offset .reason
│   ├── TruncatedFileError                    a declared range ends past EOF
│   ├── LimitExceededError                    a header, dimension or count beyond a named cap
│   └── UnsupportedVariantError               a recognised variant we do not handle
├── MissingDependencyError(InspectorError, ImportError)   .extra
├── RegistryError(InspectorError, ValueError)
└── SpecError(InspectorError, ValueError)     a bad architecture spec or unknown formula kind
```
Messages start lower-case, have no final period and quote names with repr. Content that would run
code (pickle globals, object arrays) is not an error: the file is read, and a finding with code
UNSAFE_CONTENT says what it would have run (the CLI exits with status 3).
"""

from __future__ import annotations

from collections.abc import Sequence


def fmt_offset(offset: int) -> str:
    """Render an offset as ``0x1f40 (8,000)``."""
    return f"{offset:#x} ({offset:,})"


class InspectorError(Exception):
    """Base of every error this package raises on purpose."""


class InputError(InspectorError, OSError):
    """The path cannot be opened as a regular file."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class DetectionError(InspectorError, ValueError):
    """The file's format could not be decided."""


class UnknownFormatError(DetectionError):
    """No loader claimed the file."""

    def __init__(self, path: str, head: bytes, size: int) -> None:
        self.path = path
        self.head = head[:16]
        self.size = size
        seen = "an empty file" if size == 0 else f"first bytes {self.head.hex(' ')}"
        super().__init__(f"{path}: not a recognised checkpoint format ({seen}, {size:,} bytes)")


class AmbiguousFormatError(DetectionError):
    """Two loaders claimed the file equally strongly."""

    def __init__(self, path: str, candidates: Sequence[str]) -> None:
        self.path = path
        self.candidates = tuple(candidates)
        super().__init__(f"{path}: ambiguous format, equally claimed by {', '.join(self.candidates)}")


class FormatError(InspectorError, ValueError):
    """The file was recognised but is malformed."""

    def __init__(self, path: str, fmt: str, reason: str, offset: int | None = None) -> None:
        self.path = path
        self.format = fmt
        self.reason = reason
        self.offset = offset
        where = f" at {fmt_offset(offset)}" if offset is not None else ""
        super().__init__(f"{path}: {fmt}: {reason}{where}")


class TruncatedFileError(FormatError):
    """A declared byte range ends past the end of the file."""


class LimitExceededError(FormatError):
    """A length, dimension or count read from the file exceeds a named cap."""


class UnsupportedVariantError(FormatError):
    """A recognised variant (version, dtype, storage type) that we do not handle."""


class MissingDependencyError(InspectorError, ImportError):
    """An optional dependency is needed for this file."""

    def __init__(self, package: str, extra: str) -> None:
        self.package = package
        self.extra = extra
        super().__init__(f"{package} is needed for this file: pip install {extra!r}")


class RegistryError(InspectorError, ValueError):
    """A loader registration conflicts with an existing one."""


class SpecError(InspectorError, ValueError):
    """An architecture specification could not be understood."""
