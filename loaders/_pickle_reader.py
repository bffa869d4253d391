"""The bytes a pickle is read from, with frames enforced, and the scan for evidence after a failure.

`Reader` serves a buffer, or a window of a file fetched in chunks (legacy torch files hold several
pickles and their storages). Frames (protocol 4+) are enforced as pure-Python `pickle._Unframer`
enforces them: a read may not cross the end of its frame, a line must end inside its frame, and FRAME
may only start once the current frame is used up; `restart()` gives a frame-blind reader, as
CPython's C unpickler reads. `scan` finds unsafe globals in a stream without interpreting it.
"""

from __future__ import annotations

from collections.abc import Callable

from inspector import regexes
from loaders._pickle_policy import INERT_CALLABLES, is_unsafe_global
from loaders._pickle_values import MAX_NAME, EndOfData

MAX_LINE = 1 << 20  # text opcodes (GLOBAL, INT, STRING...) end within this many bytes
READ_CHUNK = 1 << 16
MAX_SCAN_OPS = 2_000_000  # opcodes walked by the scan after a failure (about 0.3 s)
# GLOBAL / INST lines (`scan` only: compiled on first use, not in every PyTorch run's start-up)
TEXT_GLOBAL = rb"[ci]([A-Za-z_][\w.]{0,200})\n([A-Za-z_][\w.]{0,200})\n"


class Reader:
    """Bytes to interpret: a buffer, or a window of a file read lazily in chunks (legacy torch files).

    Frames (protocol 4+) are enforced as `pickle._Unframer` does: reads inside a frame may not cross its
    end, a line must end inside its frame, and FRAME may only start once the current frame is used up.
    """

    def __init__(
        self, data: bytes | None = None, fetch: Callable[[int, int], bytes] | None = None, start: int = 0, end: int = 0
    ) -> None:
        self._fetch = fetch
        self.buf = data or b""
        self.base = start  # file offset of buf[0]
        self.start = start
        self.pos = start
        self.end = start + len(self.buf) if data is not None else end
        self.frame_end = -1  # end of the current frame, -1 outside frames
        self.limit = self.end  # reads stop here: the frame end inside a frame
        self.frames = True  # False: FRAME lengths ignored, as CPython's C unpickler does
        self.frame_error = False  # reading stopped at a frame rule the C unpickler does not enforce

    def restart(self) -> Reader:
        """A fresh reader over the same pickle that ignores frames, as the C unpickler does."""
        data = self.buf if self._fetch is None else None
        fresh = Reader(data, self._fetch, self.start, self.end)
        fresh.frames = False
        return fresh

    def _fill(self, upto: int) -> None:
        """Make the buffer hold the bytes up to `upto` (not past `end`)."""
        have = self.base + len(self.buf)
        if upto <= have:
            return
        if self._fetch is None:
            raise EndOfData("pickle data ends early")
        want = min(max(upto - have, READ_CHUNK), self.end - have)
        self.buf = self.buf[self.pos - self.base :] + self._fetch(have, want)
        self.base = self.pos

    def _check(self, n: int) -> None:
        if self.frame_end >= 0 and self.pos == self.frame_end and n:
            self.frame_end, self.limit = -1, self.end  # the frame is used up: read on outside frames
        if self.pos + n > self.limit:
            if self.frame_end >= 0:
                self.frame_error = True
                raise EndOfData(f"an opcode crosses the end of its frame at byte {self.frame_end:,}")
            raise EndOfData(f"pickle data ends early: {n:,} bytes wanted at byte {self.pos:,}")

    def read(self, n: int) -> bytes:
        start = self.pos - self.base
        if self.pos + n <= self.limit and start + n <= len(self.buf):  # the common case: already buffered
            self.pos += n
            return self.buf[start : start + n]
        self._check(n)
        self._fill(self.pos + n)
        start = self.pos - self.base
        self.pos += n
        return self.buf[start : start + n]

    def skip(self, n: int) -> None:
        """Pass over `n` bytes without reading them (a large bytes or text value)."""
        self._check(n)
        self.pos += n
        if self._fetch is not None and self.pos > self.base + len(self.buf):
            self.buf, self.base = b"", self.pos

    def readline(self) -> bytes:
        self._check(1)
        stop = min(self.limit, self.pos + MAX_LINE)
        searched = self.pos
        while True:
            self._fill(min(stop, searched + READ_CHUNK))
            have = min(self.base + len(self.buf), stop)
            at = self.buf.find(b"\n", searched - self.base, have - self.base)
            if at >= 0:
                line = self.buf[self.pos - self.base : at + 1]
                self.pos = self.base + at + 1
                return line
            if have >= stop:
                if stop == self.frame_end:
                    self.frame_error = True
                    raise EndOfData(f"a text opcode crosses the end of its frame at byte {self.frame_end:,}")
                raise EndOfData(f"unterminated or over-long text opcode at byte {self.pos:,}")
            searched = have

    def frame(self, n: int) -> None:
        if not self.frames:
            return
        if (self.frame_end >= 0 and self.pos != self.frame_end) or self.pos + n > self.end:
            self.frame_error = True
            raise EndOfData(f"a frame of {n:,} bytes at byte {self.pos:,} overlaps the current frame or the end")
        self.frame_end = self.limit = self.pos + n

    def window(self, limit: int) -> bytes:
        """The pickle's bytes from its start (at most `limit`), for the scan after a failure."""
        n = min(self.end - self.start, limit)
        if self._fetch is None:
            return self.buf[self.start - self.base : self.start - self.base + n]
        return self._fetch(self.start, n)


def scan(data: bytes) -> set[str]:
    """Globals in a pickle's opcodes that are unsafe to name, and INST calls, without interpreting it.

    Used when the interpreter cannot finish: the stream may still name what CPython's more lenient
    unpickler would have reached. STACK_GLOBAL's names are the last two strings pushed or fetched
    (opcode walk, the first `MAX_SCAN_OPS`); GLOBAL and INST lines are found in all of it by a regex.
    """
    import pickletools  # (a pickle the interpreter could not finish only: not in every PyTorch run's start-up)

    lines = regexes.findall(TEXT_GLOBAL, data)
    found = {f"{m.decode('latin1')}.{n.decode('latin1')}"[:MAX_NAME] for m, n in lines
             if is_unsafe_global(m.decode("latin1"), n.decode("latin1"))}  # fmt: skip
    strings: list[str] = []
    memo: dict[int, str] = {}
    last: str | None = None
    try:
        for n, (op, arg, _pos) in enumerate(pickletools.genops(data)):
            if n > MAX_SCAN_OPS:
                break
            name = op.name
            if name in ("GLOBAL", "INST") and isinstance(arg, str):
                module, _, attr = arg.partition(" ")
                if is_unsafe_global(module, attr) or (name == "INST" and f"{module}.{attr}" not in INERT_CALLABLES):
                    found.add(f"{module}.{attr}"[:MAX_NAME])
            elif name == "STACK_GLOBAL" and len(strings) >= 2 and is_unsafe_global(strings[-2], strings[-1]):
                found.add(f"{strings[-2]}.{strings[-1]}"[:MAX_NAME])
            if isinstance(arg, str) and name.endswith(("UNICODE", "UNICODE8", "STRING")):
                last = arg
                strings = [*strings[-1:], arg]
            elif name in ("PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE") and last is not None:
                memo[arg if isinstance(arg, int) else len(memo)] = last
            elif name in ("GET", "BINGET", "LONG_BINGET") and isinstance(arg, int) and arg in memo:
                strings = [*strings[-1:], memo[arg]]
            else:
                last = None if name not in ("PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE") else last
    except Exception:  # noqa: BLE001, S110 - a malformed tail ends the scan, keeping what was found
        pass
    return found
