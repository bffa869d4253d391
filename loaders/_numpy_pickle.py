"""numpy arrays in a pickle, read as tensors from the inert values the restricted reader built.

A bare pickle of numpy arrays (`pickle.dump` of a dict of arrays: Detectron's model zoo `.pkl` files, JAX and Haiku
parameters, research checkpoints) holds each array's bytes inline, so its data lies at a definite place in the file.
`ndarray.__reduce_ex__` writes an array one of two ways (numpy's `numpy/_core/numeric.py`, `multiarray`):

- protocols 0-4: ``numpy.core.multiarray._reconstruct(ndarray, (0,), b'b')``, then BUILD with the state
  ``(version, shape, dtype, is_fortran, data)``: the data is the array's bytes (BINBYTES from protocol 3, a Python 2
  `str` in Python 2's pickles); Python 3's protocol 2 writes them as latin-1 text through `_codecs.encode`, UTF-8 in
  the file, so they lie at no one offset (the tensor is listed without one, its bytes stay in the pickle's region);
- protocol 5: ``numpy.core.numeric._frombuffer(data, dtype, shape, order)``, the data in-band (BYTEARRAY8).

The dtype is ``numpy.dtype(code, False, True)`` with BUILD state ``(3, byteorder, ...)``. Arrays of objects,
strings or structured dtypes are not tensors here (their pickled values stay the pickle's). Names are the dotted
paths of dicts, lists and objects' state, as `loaders._torch.walk` names tensors. joblib's files put each array's
bytes after its wrapper, outside the opcodes (`joblib_array`, which the interpreter calls where joblib's unpickler
would read them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import partial
from math import prod

from inspector.records import Region, RegionKind, TensorInfo, TensorKind
from loaders._pickle_reader import Reader
from loaders._pickle_values import Blob, Call, Global, PickleError, TensorRef, key_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeGuard

RECONSTRUCT = "numpy.core.multiarray._reconstruct"  # (both numpy 1's and numpy 2's module names: `_pickle_builders`)
FROMBUFFER = "numpy.core.numeric._frombuffer"
DTYPES = ("numpy.dtype",)
MAX_DIMS = 64  # numpy's own limit (NPY_MAXDIMS): a longer shape is no array it would make


class Array:
    """An array found in a pickle: its shape, canonical dtype, byte order, data bytes and where they lie (or None), and
    the id of the call that makes it (a memo reference meets that call again)."""

    __slots__ = ("shape", "dtype", "big_endian", "fortran", "nbytes", "offset", "call")

    def __init__(
        self,
        shape: tuple[int, ...],
        dtype: str,
        big_endian: bool,
        fortran: bool,
        nbytes: int,
        offset: int | None,
        call: int,
    ) -> None:
        self.shape, self.dtype, self.big_endian, self.fortran = shape, dtype, big_endian, fortran
        self.nbytes, self.offset, self.call = nbytes, offset, call


def arrays(
    value: Any, located: Mapping[int, tuple[int, Any]]
) -> Iterator[tuple[str, Array, str | None, TensorKind | None]]:
    """Every array in the pickled value with its dotted path (as `loaders._torch.walk` names tensors, in its order),
    the path it was first met at when the pickle names the same array again (a memo reference: one array, an alias),
    and the walk's kind hint (a pickled module's buffers and other attributes).

    Raises:
        PickleError: the value graph is too large or too deep to walk (`loaders._torch.walk`'s bounds).
    """
    from loaders._torch import walk

    first: dict[int, str] = {}  # id of an array's call -> its first path
    for path, found, hint in walk(value, partial(_array, located=located)):
        if isinstance(found, TensorRef):
            continue  # (a torch tensor: the torch loaders list those)
        earlier = first.get(found.call)
        if earlier is None:
            first[found.call] = path
        yield path, found, earlier, hint


def tensors(
    value: Any,
    located: Mapping[int, tuple[int, Any]],
    base: int | None,
    kind: TensorKind | None = None,
    note: str | None = None,
) -> list[TensorInfo]:
    """The pickle's arrays as tensors: at `base` + where their bytes lie in the pickle (`base` None: the pickle is not
    where its bytes are stored in the file, a deflated member: no offsets), of `kind`, or of the kinds a training
    checkpoint's sections and a pickled module's dicts give (`loaders._torch.section_kinds`); `note` on each. An array
    whose bytes are another's (one bytes value, or a memo reference) is its alias.

    Raises:
        PickleError: the value graph is too large or too deep to walk.
    """
    from loaders._torch import MODULE_ATTRIBUTE, section_kinds  # (a pickle of arrays only)

    found = list(arrays(value, located))
    if not found:
        return []
    sections = section_kinds(value, _is_tensor_or_array)
    plain = ("", TensorKind.PARAMETER)
    out = []
    claimed: dict[int, str] = {}  # offset -> the first array whose bytes lie there (two arrays may share one value)
    for path, array, alias, hint in found:
        section, its_kind = sections.get(path.split(".", 1)[0], plain) if sections else plain
        if kind is not None:
            its_kind = kind
        elif hint is TensorKind.BUFFER or hint is MODULE_ATTRIBUTE:  # (a module's buffer, or its other attribute)
            its_kind = hint
        notes: tuple[str, ...] = ("big-endian",) if array.big_endian else ()
        if array.fortran:
            notes += ("Fortran order",)  # (as the npy loader says it: values are read in that order)
        offset = None
        if array.offset is None:
            notes += ("its bytes are latin-1 text in the pickle (protocol 2): at no one offset",)
        elif base is None:
            notes += ("its bytes are in a compressed pickle: at no one offset",)
        else:
            offset = base + array.offset
            if alias is None and offset in claimed:
                alias = claimed[offset]  # (one bytes value, the same length: the same data)
            elif alias is None and array.nbytes:
                claimed[offset] = path
        if note is not None:
            notes += (note,)
        out.append(TensorInfo(path, array.shape, array.dtype, array.nbytes, offset, None, alias, its_kind,
                              section=section, notes=notes))  # fmt: skip
    return out


def stream_regions(
    start: int, end: int, arrays: list[TensorInfo], text: str, subject: str | None = None
) -> list[Region]:
    """The regions of a pickle stream at [start, end) of the file: its arrays' bytes (those at an offset of their own,
    not an alias's), and the rest as metadata labelled `text` (with `subject`)."""
    data = sorted(
        (t.offset, t.nbytes, t.name) for t in arrays if t.offset is not None and t.alias_of is None and t.nbytes
    )
    regions, at = [], start
    for offset, nbytes, name in data:
        if offset > at:
            regions.append(Region(RegionKind.METADATA, at, offset - at, text, subject=subject))
        regions.append(Region(RegionKind.TENSOR_DATA, offset, nbytes, name))
        at = offset + nbytes
    if end > at:
        regions.append(Region(RegionKind.METADATA, at, end - at, text, subject=subject))
    return regions


def _is_tensor_or_array(value: Any) -> bool:
    return value.__class__ is Call and is_array(value) or value.__class__ is TensorRef


# opaque dtype kinds' itemsize per count ('S10': 10 bytes, '<U5': 20)
SIZED_KINDS = {"S": 1, "a": 1, "U": 4, "V": 1}


def joblib_array(reader: Reader, wrapper: Call, located: dict[int, tuple[int, Any]], nested: Callable[[], Any]) -> Any:
    """What joblib's unpickler puts on the stack in place of a `NumpyArrayWrapper` once BUILD has set its state: the
    array whose bytes follow the BUILD in the file, outside any opcode (`NumpyArrayWrapper.read_array`): a byte that
    gives the padding's length and the padding, where the state names an alignment (joblib 1.2 on), then the bytes,
    passed over and located as a `_frombuffer` call's (`arrays` finds it). An array of objects is a pickle stream of its
    own there, read by `nested` (what it would call is the file's: joblib reads it with the outer `find_class`).

    Raises:
        PickleError: the state is not an array's, or its dtype's size cannot be told (the reading cannot go on).
    """
    state = wrapper.state
    if not isinstance(state, dict):
        raise PickleError("a joblib array wrapper without its state")
    shape, dtype, order = state.get("shape"), state.get("dtype"), state.get("order")
    if not _plain_shape(shape):
        raise PickleError("a joblib array wrapper with no shape")
    code = _dtype(dtype)
    if code is not None and code[1:2] == "O":  # ('O8': objects)
        return nested()  # (the array of objects, as numpy pickles it)
    size = _itemsize(code)
    if size is None:
        raise PickleError(f"a joblib array of dtype {key_name(dtype)[:80]}: its bytes cannot be told")
    if state.get("numpy_array_alignment_bytes") is not None:
        reader.skip(reader.read(1)[0])  # (the padding's length, then the padding)
    at, nbytes = reader.pos, prod(shape) * size
    reader.skip(nbytes)
    data = Blob(nbytes, False)
    located[id(data)] = (at, data)
    return Call(Global(*FROMBUFFER.rsplit(".", 1)), (data, dtype, shape, order if order == "F" else "C"))


def _plain_shape(shape: Any) -> TypeGuard[tuple[int, ...]]:
    """Whether a pickled shape is one numpy makes: at most `MAX_DIMS` sizes, each an int of a size an array has."""
    if not isinstance(shape, tuple) or len(shape) > MAX_DIMS:
        return False
    return all(type(n) is int and 0 <= n < 1 << 62 for n in shape)


def _itemsize(code: str | None) -> int | None:
    """Bytes of one element of a dtype's descr: a numeric type's, or a sized string or void type's."""
    if code is None:
        return None
    from inspector.dtypes import numpy_code  # (a pickle of arrays only)

    known = numpy_code(code[1:])
    if known is not None:
        return known[1]
    kind, count = code[1:2], code[2:]
    return SIZED_KINDS[kind] * int(count) if kind in SIZED_KINDS and count.isdecimal() and len(count) < 10 else None


def is_array(value: Any) -> bool:
    """Whether a pickled value is an array this module reads (as `loaders._torch.section_kinds` asks of a tensor)."""
    return value.__class__ is Call and _array(value, {}) is not None


def _array(call: Call, located: Mapping[int, tuple[int, Any]]) -> Array | None:
    """The array a `_reconstruct` (with its state) or `_frombuffer` call makes, when it is a plain numeric array whose
    data is its bytes."""
    name = getattr(call.func, "qualname", None)
    if name == RECONSTRUCT:
        state = call.state
        if not (isinstance(state, tuple) and len(state) == 5):
            return None
        _version, shape, dtype, fortran, data = state
    elif name == FROMBUFFER:
        if len(call.args) < 3:
            return None
        data, dtype, shape = call.args[:3]
        fortran = len(call.args) > 3 and call.args[3] == "F"
    else:
        return None
    code = _dtype(dtype)
    if code is None or not _plain_shape(shape):
        return None
    from inspector.dtypes import numpy_code  # (a pickle of arrays only)

    known = numpy_code(code[1:])
    if known is None:
        return None
    canonical, itemsize = known
    nbytes = prod(shape) * itemsize
    size = data.nbytes if isinstance(data, Blob) else len(data) if isinstance(data, (bytes, str)) else -1
    if size != nbytes:  # (object arrays pickle a list; a short buffer is no array numpy would make)
        return None
    at = located.get(id(data))
    offset = at[0] if at is not None and at[1] is data else None
    return Array(shape, canonical, code[0] == ">", isinstance(fortran, int) and bool(fortran), nbytes, offset, id(call))


def _dtype(dtype: Any) -> str | None:
    """The dtype's descr ('<f4', '|b1'), from `numpy.dtype(code, False, True)` and its BUILD state, or None."""
    if not (isinstance(dtype, Call) and getattr(dtype.func, "qualname", None) in DTYPES and dtype.args):
        return None
    code, state = dtype.args[0], dtype.state
    if not isinstance(code, str) or not isinstance(state, tuple) or len(state) < 2:
        return None
    order = state[1] if state[1] in ("<", ">", "|", "=") else None
    if order is None or any(field is not None for field in state[2:5]):  # (a structured or subarray dtype)
        return None
    return ("<" if order in ("|", "=") else order) + code.lstrip("<>|=")
