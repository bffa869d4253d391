"""Which member torch's zip reader finds for a name: miniz's lookup, for archives with names equal but for case.

torch asks miniz for a record by name (`mz_zip_reader_locate_file`, no flags). miniz compares names as bytes with the
ASCII letters lowered and finds one by a binary search over the directory sorted once, when the archive is opened, by
a heap sort (`mz_zip_reader_sort_central_dir_offsets_by_filename`). A heap sort does not keep the order of equal
names, so of two members named `archive/data.pkl` (or `archive/data.pkl` and `archive/DATA.PKL`) the one found
depends on every name of the archive: the first copy in some archives, the last in others
(`tests/test_miniz_locate.py` checks this reading against torch's own reader on random archives).

Only archives where such names exist need it: `locate` sorts the whole directory in Python (about a second for
100,000 names), and for those only.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

LOWER = bytes.maketrans(bytes(range(65, 91)), bytes(range(97, 123)))  # miniz's MZ_TOLOWER: ASCII letters only


def key(name: str) -> bytes:
    """A name as miniz compares it: its bytes (UTF-8, as torch passes a name and as a writer marks one), the ASCII
    letters lowered. (A name stored in cp437 is not read back to its bytes here.)"""
    return name.encode("utf-8", "surrogateescape").translate(LOWER)


def sorted_order(keys: Sequence[bytes]) -> list[int]:
    """The members' indexes in the order miniz's heap sort leaves them (bytes order is miniz's `filename_less`:
    byte by byte, then the shorter first)."""
    size = len(keys)
    order = list(range(size))
    if size <= 1:
        return order

    def sift(root: int, end: int) -> None:
        while (child := 2 * root + 1) < end:
            if child + 1 < end and keys[order[child]] < keys[order[child + 1]]:
                child += 1
            if not keys[order[root]] < keys[order[child]]:
                return
            order[root], order[child] = order[child], order[root]
            root = child

    for start in range((size - 2) >> 1, -1, -1):
        sift(start, size)
    for end in range(size - 1, 0, -1):
        order[end], order[0] = order[0], order[end]
        sift(0, end)
    return order


def locate(names: Sequence[str], name: str) -> int | None:
    """The index of the member torch's reader finds for `name` (miniz's binary search over its sorted directory), or
    None when none is so named."""
    keys = [key(n) for n in names]
    order = sorted_order(keys)
    wanted = key(name)
    low, high = 0, len(order) - 1
    while low <= high:
        middle = low + ((high - low) >> 1)
        found = keys[order[middle]]
        if found == wanted:
            return order[middle]
        if found < wanted:
            low = middle + 1
        else:
            high = middle - 1
    return None
