"""TorchScript archives: which module attributes are parameters and buffers, as the archive declares them.

`torch.jit.save` pickles each module as an object of a class ``__torch__.<path>.<Class>`` whose state dict
holds its attributes, and writes the class's source to ``<archive>/code/__torch__/<path>.py`` (deflated)::

    class Linear(Module):
      __parameters__ = ["weight", "bias", ]
      __buffers__ = []
      weight : Tensor

`torch.jit.load` makes exactly the attributes in ``__parameters__`` parameters and those in ``__buffers__``
buffers; any other tensor attribute is a plain attribute (neither). `requires_grad` travels in each
``_rebuild_tensor_v2`` call. This module reads those two lines per class as text (the list is parsed with
`ast.literal_eval`, which evaluates literals only; the code is never executed or compiled) and gives every
tensor its kind and trainability. A class whose source is missing or unreadable leaves its tensors as the
generic walk named them.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence

from inspector.probe import Probe
from inspector.records import TensorInfo, TensorKind
from inspector.recordtype import record, replace
from loaders import _zip
from loaders._pickle import Call, Global, TensorRef
from loaders._torchscript_setstate import running_setstate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_CODE_BYTES = 16 << 20  # one class source file
MAX_TOTAL_CODE_BYTES = 64 << 20
MAX_DEPTH = 200
ROOT_MODULE = "__torch__"
CLASS_LINE = re.compile(r"^class (\w+)\(")
ENUM_LINE = re.compile(r"^class (\w+)\(Enum\):", re.MULTILINE)  # an enum the archive's code declares
DECLARATION = re.compile(r"^  (__parameters__|__buffers__) = (\[.*\])\s*$")
ATTRIBUTE_NOTE = "TorchScript attribute: neither a parameter nor a buffer"


@record(frozen=True, slots=True)
class Declared:
    """A scripted class's own word on its attributes."""

    parameters: frozenset[str]
    buffers: frozenset[str]


def parse_declarations(module: str, text: str) -> dict[str, Declared]:
    """`{module.Class: Declared}` for every class in one code file whose two declarations both parse."""
    out: dict[str, Declared] = {}
    current: str | None = None
    found: dict[str, frozenset[str]] = {}
    for line in text.splitlines():
        match = CLASS_LINE.match(line)
        if match:
            current, found = f"{module}.{match.group(1)}", {}
            continue
        decl = DECLARATION.match(line) if current else None
        if decl is None or current is None:
            continue
        try:
            names = ast.literal_eval(decl.group(2))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        if isinstance(names, list) and all(isinstance(n, str) for n in names):
            found[decl.group(1)] = frozenset(names)
        if len(found) == 2:
            out[current] = Declared(found["__parameters__"], found["__buffers__"])
    return out


def _module_objects(value: Any) -> Iterator[tuple[str, Global, dict[str, Any]]]:
    """(path, class, attribute dict) of every scripted module object, parents first, each object once."""
    seen: set[int] = set()
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        obj, path, depth = stack.pop()
        if not (isinstance(obj, Call) and isinstance(obj.func, Global) and obj.func.module.startswith(ROOT_MODULE)):
            continue
        if id(obj) in seen or depth > MAX_DEPTH or not isinstance(obj.state, dict):
            continue
        seen.add(id(obj))
        yield path, obj.func, obj.state
        children = [(child, f"{path}.{key}" if path else str(key), depth + 1) for key, child in obj.state.items()]
        stack.extend(reversed(children))


def _source_path(prefix: str, module: str) -> str:
    return f"{prefix}code/{module.replace('.', '/')}.py"


def _declarations(
    probe: Probe, members: Sequence[_zip.ZipMember], prefix: str, fmt: str, modules: set[str]
) -> dict[str, Declared]:
    by_name = {m.name: m for m in members}
    out: dict[str, Declared] = {}
    budget = MAX_TOTAL_CODE_BYTES
    for module in sorted(modules):
        member = by_name.get(_source_path(prefix, module))
        if member is None or member.file_size > min(MAX_CODE_BYTES, budget):
            continue
        budget -= member.file_size
        text = _zip.inflate_head(probe, member, member.file_size, fmt).decode("utf-8", "replace")
        out.update(parse_declarations(module, text))
    return out


def _code_text(probe: Probe, by_name: dict[str, _zip.ZipMember], prefix: str, fmt: str, module: str) -> str | None:
    """The archive's code of one scripted module (`code/__torch__/...py`): "" when absent, None beyond the cap."""
    member = by_name.get(_source_path(prefix, module))
    if member is None:
        return ""
    if member.file_size > MAX_CODE_BYTES:
        return None
    return _zip.inflate_head(probe, member, member.file_size, fmt).decode("utf-8", "replace")


def enum_constructions(
    probe: Probe, members: Sequence[_zip.ZipMember], prefix: str, fmt: str, calls: set[str]
) -> set[str]:
    """Of the calls an archive's pickles make (`calls`, the names the pickle reader flags), those that make a member
    of an enum the archive's own code declares (`class Format(Enum):` in `code/__torch__/...`): `torch.jit.load`
    makes the member from its value and runs nothing (every timm ViT pickles its `Format` so)."""
    by_name = {m.name: m for m in members}
    enums: dict[str, set[str]] = {}  # module -> the enums its code declares (each code file read once)
    found: set[str] = set()
    for name in calls:
        module, _, cls = name.rpartition(".")
        if not module.startswith(ROOT_MODULE):
            continue
        if module not in enums:
            enums[module] = set(ENUM_LINE.findall(_code_text(probe, by_name, prefix, fmt, module) or ""))
        if cls in enums[module]:
            found.add(name)
    return found


def setstate_code(probe: Probe, members: Sequence[_zip.ZipMember], prefix: str, fmt: str, names: set[str]) -> set[str]:
    """Of the scripted classes an archive's pickles name (`names`), those whose code in the archive defines a
    `__setstate__` that may run more than setting attributes (`loaders._torchscript_setstate`; every class of a code
    file too large to read), as unsafe evidence: `torch.jit.load` (and `torch.load`, which hands it a TorchScript
    archive) compiles that code and runs it on each object's state while loading, and TorchScript can open files
    (`torch.from_file`)."""
    by_name = {m.name: m for m in members}
    found: set[str] = set()
    for module in sorted({name.rpartition(".")[0] for name in names if name.startswith(ROOT_MODULE + ".")}):
        text = _code_text(probe, by_name, prefix, fmt, module)
        running = None if text is None else running_setstate(text)
        classes = sorted(name for name in names if name.rpartition(".")[0] == module)
        found.update(
            f"{cls}.__setstate__ (the archive's TorchScript code, run by torch.jit.load)"
            for cls in classes
            if running is None or cls.rpartition(".")[2] in running
        )
    return found


def apply(
    probe: Probe, members: Sequence[_zip.ZipMember], prefix: str, fmt: str, value: Any, tensors: Sequence[TensorInfo]
) -> list[TensorInfo]:
    """The tensors with kinds and trainability as the archive declares them.

    Parameters are trainable when their rebuild call says requires_grad; buffers are never trainable;
    other tensor attributes become `TensorKind.OTHER`. Tensors of classes without a readable declaration
    keep what they had.
    """
    objects = list(_module_objects(value))
    declared = _declarations(probe, members, prefix, fmt, {g.module for _, g, _ in objects})
    decided: dict[str, tuple[TensorKind, bool, tuple[str, ...]]] = {}
    for path, cls, attributes in objects:
        decl = declared.get(cls.qualname)
        if decl is None:
            continue
        for key, child in attributes.items():
            name = f"{path}.{key}" if path else str(key)
            if not isinstance(child, TensorRef):  # tensors in a list or dict attribute are neither
                decided.update((inner, (TensorKind.OTHER, False, (ATTRIBUTE_NOTE,))) for inner in _held(child, name))
                continue
            if key in decl.parameters:
                decided[name] = (TensorKind.PARAMETER, child.requires_grad, ())
            elif key in decl.buffers:
                decided[name] = (TensorKind.BUFFER, False, ())
            else:
                decided[name] = (TensorKind.OTHER, False, (ATTRIBUTE_NOTE,))
    return [_decide(t, decided.get(t.name)) for t in tensors]


def _held(value: Any, name: str, depth: int = 0) -> Iterator[str]:
    """The names (as the generic walk gives them) of the tensors a list, tuple or dict attribute holds."""
    if depth > MAX_DEPTH:
        return
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list | tuple) else ()
    for key, child in items:
        inner = f"{name}.{key}"
        if isinstance(child, TensorRef):
            yield inner
        else:
            yield from _held(child, inner, depth + 1)


def _decide(t: TensorInfo, decision: tuple[TensorKind, bool, tuple[str, ...]] | None) -> TensorInfo:
    if decision is None:
        return t
    kind, trainable, notes = decision
    return replace(t, kind=kind, trainable=trainable, notes=t.notes + notes)
