"""A raw deflate stream (RFC 1951) zlib refuses, inflated as torch's zip reader inflates it, for the safety verdict.

torch's zip reader (miniz's `tinfl_decompress`, inflating a record into a buffer of its declared size) reads on
through some of what zlib refuses, and where it does fail it reports no error: `torch.load` gets the record with the
bytes it did not write left as the buffer's memory held them, which an earlier record of the archive can fill with a
payload (the zip mutation property test saw torch run one so). `inflate` reads as miniz reads:
- length codes 286 and 287 copy nothing (miniz's length 0);
- a Huffman code of at most one symbol reads the codes no symbol has as symbol 0 (but for the stream's last bits);
- it fails (the output ends there, and the caller knows) at a back-reference before the output's start or of distance
  code 30 or 31 (miniz's distance 0), at two or more symbols whose lengths do not make a complete code, at a stored
  block whose length's complement is wrong, at block type 3, and where the stream ends early.
`tests/test_safety.py` checks these against torch's own reader.

Pure Python: used only on a member zlib refused, bounded by `limit` output bytes.
"""

from __future__ import annotations

# (base, extra bits) of the length codes 257..287 and of the distance codes 0..31 (the last two of each: miniz's 0)
LENGTHS = [(3, 0), (4, 0), (5, 0), (6, 0), (7, 0), (8, 0), (9, 0), (10, 0), (11, 1), (13, 1), (15, 1), (17, 1),
           (19, 2), (23, 2), (27, 2), (31, 2), (35, 3), (43, 3), (51, 3), (59, 3), (67, 4), (83, 4), (99, 4),
           (115, 4), (131, 5), (163, 5), (195, 5), (227, 5), (258, 0), (0, 0), (0, 0)]  # fmt: skip
DISTANCES = [(1, 0), (2, 0), (3, 0), (4, 0), (5, 1), (7, 1), (9, 2), (13, 2), (17, 3), (25, 3), (33, 4), (49, 4),
             (65, 5), (97, 5), (129, 6), (193, 6), (257, 7), (385, 7), (513, 8), (769, 8), (1025, 9), (1537, 9),
             (2049, 10), (3073, 10), (4097, 11), (6145, 11), (8193, 12), (12289, 12), (16385, 13),
             (24577, 13), (0, 0), (0, 0)]  # fmt: skip
CODE_LENGTH_ORDER = (16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15)
FIXED_LITERALS = [8] * 144 + [9] * 112 + [7] * 24 + [8] * 8
FIXED_DISTANCES = [5] * 32


class _End(Exception):
    """The stream cannot be read further (miniz fails there too)."""


class _Bits:
    """The stream's bits, least significant first, from an integer buffer refilled a byte at a time."""

    __slots__ = ("data", "pos", "buf", "count")

    def __init__(self, data: bytes) -> None:
        self.data, self.pos, self.buf, self.count = data, 0, 0, 0

    def read(self, n: int) -> int:
        while self.count < n:
            if self.pos >= len(self.data):
                raise _End
            self.buf |= self.data[self.pos] << self.count
            self.pos += 1
            self.count += 8
        value = self.buf & ((1 << n) - 1)
        self.buf >>= n
        self.count -= n
        return value

    def peek(self, n: int) -> int:
        """The next `n` bits, not consumed (past the stream's end: zeros)."""
        while self.count < n and self.pos < len(self.data):
            self.buf |= self.data[self.pos] << self.count
            self.pos += 1
            self.count += 8
        return self.buf & ((1 << n) - 1)

    def align(self) -> None:
        """To the next byte: the bits left in the buffer are dropped, whole bytes given back."""
        self.pos -= self.count // 8
        self.buf, self.count = 0, 0


Code = tuple[dict[tuple[int, int], int], tuple[int, int] | None]  # (code length, code) -> symbol; see `_table`


def _table(lengths: list[int]) -> Code:
    """Canonical Huffman codes: (code length, code) -> symbol, and for a code of at most one symbol that symbol and
    its length ((0, 0) when it has none; `_sole` reads it).

    Raises:
        _End: two or more symbols whose lengths do not make a complete code (miniz stops there).
    """
    counts = [0] * 16
    for n in lengths:
        counts[n] += 1
    counts[0] = 0
    used = sum(counts)
    if used > 1 and sum(counts[n] << (15 - n) for n in range(1, 16)) != 1 << 15:
        raise _End
    if used <= 1:
        return {}, next(((symbol, n) for symbol, n in enumerate(lengths) if n), (0, 0))
    code, first = 0, [0] * 16
    for bits in range(1, 16):
        code = (code + counts[bits - 1]) << 1
        first[bits] = code
    table = {}
    for symbol, n in enumerate(lengths):
        if n:
            table[n, first[n]] = symbol
            first[n] += 1
    return table, None


def _symbol(bits: _Bits, huffman: Code) -> int:
    table, sole = huffman
    if sole is not None:
        return _sole(bits, *sole)
    code = 0
    for n in range(1, 16):
        code = (code << 1) | bits.read(1)
        symbol = table.get((n, code))
        if symbol is not None:
            return symbol
    raise _End  # a code no symbol has (not in a complete code: kept for safety)


def _sole(bits: _Bits, symbol: int, length: int) -> int:
    """A symbol of a code of at most one symbol (its code: `length` zero bits), read as miniz reads it. miniz looks
    the next 10 bits up in a table and walks a tree for longer codes; the codes no symbol has read as symbol 0, of
    no bits when the table gives them (unless fewer than 15 bits are left: miniz then fails), of the bits walked
    when the tree does."""
    ahead = bits.peek(max(length, 10))
    if length and not ahead & ((1 << length) - 1):
        bits.read(length)
        return symbol
    first_one = (ahead & -ahead).bit_length()  # (the position of the first 1 bit; 0: none)
    if first_one > 10:
        bits.read(first_one)
    elif bits.count + 8 * (len(bits.data) - bits.pos) < 15:  # (at the end miniz wants 15 bits to find a code in)
        raise _End
    return 0


def _dynamic(bits: _Bits) -> tuple[Code, Code]:
    literals, distances, codes = bits.read(5) + 257, bits.read(5) + 1, bits.read(4) + 4
    order = [0] * 19
    for i in range(codes):
        order[CODE_LENGTH_ORDER[i]] = bits.read(3)
    code_table = _table(order)
    lengths: list[int] = []
    while len(lengths) < literals + distances:
        symbol = _symbol(bits, code_table)
        if symbol < 16:
            lengths.append(symbol)
        elif symbol == 16:
            if not lengths:
                raise _End
            lengths += [lengths[-1]] * (3 + bits.read(2))
        else:
            lengths += [0] * ((3 + bits.read(3)) if symbol == 17 else (11 + bits.read(7)))
    if len(lengths) != literals + distances:  # (a repeat past the last length)
        raise _End
    distance_code = _table(lengths[literals:])  # (miniz builds, and checks, the distance code first)
    return _table(lengths[:literals]), distance_code


def inflate(data: bytes, limit: int) -> tuple[bytes, bool]:
    """Up to `limit` bytes of the raw deflate stream `data`, read as miniz reads it (module docstring), and whether
    miniz fails before `limit` bytes (torch.load then reads the rest of the record from memory)."""
    out = bytearray()
    bits = _Bits(data)
    fixed = (_table(FIXED_LITERALS), _table(FIXED_DISTANCES))
    try:
        final = 0
        while not final and len(out) < limit:
            final, kind = bits.read(1), bits.read(2)
            if kind == 0:  # stored
                bits.align()
                header = data[bits.pos : bits.pos + 4]
                n = int.from_bytes(header[:2], "little")
                if len(header) < 4 or n ^ 0xFFFF != int.from_bytes(header[2:], "little"):
                    raise _End
                bits.pos += 4
                out += data[bits.pos : bits.pos + n]
                bits.pos += n
                if bits.pos > len(data):
                    raise _End
                continue
            if kind == 3:
                raise _End
            literal_table, distance_table = fixed if kind == 1 else _dynamic(bits)
            while len(out) < limit:
                symbol = _symbol(bits, literal_table)
                if symbol < 256:
                    out.append(symbol)
                    continue
                if symbol == 256:
                    break
                base, extra = LENGTHS[symbol - 257]
                length = base + bits.read(extra)
                base, extra = DISTANCES[_symbol(bits, distance_table)]
                distance = base + bits.read(extra)
                if not 0 < distance <= len(out):  # (even of length 0)
                    raise _End
                for _ in range(length):
                    out.append(out[-distance])
    except _End:
        return bytes(out[:limit]), len(out) < limit
    return bytes(out[:limit]), False
