"""Which classes of one TorchScript code file define a `__setstate__` that may do more than set attributes.

`torch.jit.load` compiles an archive's code (`code/__torch__/...py`) and runs a class's `__setstate__` on the state
of each of its objects while loading; TorchScript can create and write files (`torch.from_file(name, shared=True)`),
so such a method is the archive's code run at load. Torch's own statically quantized convolutions define one (it
copies the state's items into attributes and packs the weight: `ops.quantized.conv2d_prepack`), so the method is
read (`ast.parse`: parsed, never compiled or run) and passes only when it is made of what those write: assignments
of items of a state typed with plain types, reads of attributes the class declares with plain types, calls of
methods of the same class that pass too, and calls of the ops in `INERT_OPS`. Anything else (another op, a loop, an
attribute the class does not declare, a property, a base class of its own, code the parser refuses or too large to
parse) counts as running code.
"""

from __future__ import annotations

import ast

MAX_PARSED_BYTES = 1 << 20  # code files parsed to judge a __setstate__ (torch's printed modules: a few KB)
MAX_DEPTH = 64  # nesting of the statements and expressions read
SETSTATE = "__setstate__"
# Types whose values have no methods of the archive's (a state typed so has no __getitem__ of its own)
PLAIN_TYPES = frozenset({"int", "float", "bool", "str", "Tensor", "NoneType", "Tuple", "List", "Optional", "Dict"})
# Bases a scripted class may name (`class Conv2d(Module):`) without inheriting methods from the archive's code
PLAIN_BASES = frozenset({"Module", "object", "Enum", "NamedTuple", "Interface"})
# The calls torch's printed `__setstate__` / `set_weight_bias` make: comparisons, sizes and weight packing (C++ ops
# that build a value from tensors and ints), and raising
INERT_OPS = frozenset(
    {
        "torch.eq",
        "torch.ne",
        "torch.len",
        "torch.__is__",
        "torch.__isnot__",
        "unchecked_cast",
        "uninitialized",
        "annotate",
        "ops.prim.RaiseException",
        *(f"ops.quantized.conv{d}d_prepack" for d in (1, 2, 3)),
        *(f"ops.quantized.conv_transpose{d}d_prepack" for d in (1, 2, 3)),
        "ops.quantized.linear_prepack",
        "ops.quantized.linear_prepack_fp16",
    }
)


def running_setstate(text: str) -> frozenset[str] | None:
    """The names of the classes of one code file whose `__setstate__` may run more than `INERT_OPS`, or None when
    every class of the file counts so (the name outside a class, a file too large to parse or that does not parse)."""
    if SETSTATE not in text:
        return frozenset()
    if len(text) > MAX_PARSED_BYTES:
        return None
    try:
        tree = ast.parse(text)
        classes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
        if any(SETSTATE in ast.dump(node) for node in tree.body if not isinstance(node, ast.ClassDef)):
            return None
        return frozenset(c.name for c in classes if not _inert(c))
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # (deep code: the parser's or ast.dump's limit)
        return None


def _inert(cls: ast.ClassDef) -> bool:
    """Whether loading an object of `cls` runs nothing of the archive's: no `__setstate__`, or one that passes."""
    if not all(isinstance(base, ast.Name) and base.id in PLAIN_BASES for base in cls.bases) or cls.keywords:
        return False  # (a base class's methods would be the archive's too)
    if SETSTATE not in ast.dump(cls):
        return True
    methods = {node.name: node for node in cls.body if isinstance(node, ast.FunctionDef)}
    bound = [node for node in cls.body if SETSTATE in _bound_names(node)]
    if len(bound) != 1 or not isinstance(bound[0], ast.FunctionDef) or len(methods) != _n_methods(cls):
        return False
    declared = {
        node.target.id: _plain(node.annotation)
        for node in cls.body
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id not in methods
    }
    return _Check(methods, {name for name, plain in declared.items() if plain}, set(declared)).method(SETSTATE)


def _bound_names(node: ast.stmt) -> set[str]:
    if isinstance(node, ast.FunctionDef | ast.ClassDef):
        return {node.name}
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _n_methods(cls: ast.ClassDef) -> int:
    return sum(isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) for node in cls.body)


def _plain(annotation: ast.expr | None) -> bool:
    """Whether a type annotation is made only of `PLAIN_TYPES` (`Tuple[int, Optional[Tensor]]`)."""
    if annotation is None:
        return False
    names = [n for n in ast.walk(annotation) if not isinstance(n, ast.Subscript | ast.Tuple | ast.Load)]
    return all(isinstance(n, ast.Name) and n.id in PLAIN_TYPES for n in names)


def _dotted(node: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else None


class _Check:
    """The grammar a `__setstate__` (and the methods it calls) must keep to."""

    def __init__(self, methods: dict[str, ast.FunctionDef], plain: set[str], declared: set[str]) -> None:
        self.methods = methods
        # attributes the class declares (`padding_mode : str`) that are not a method's (or a property's) name: all
        # may be written, those of plain types read
        self.plain = plain
        self.declared = declared
        self.passed: set[str] = set()

    def method(self, name: str) -> bool:
        if name in self.passed:
            return True
        node = self.methods.get(name)
        if node is None or node.decorator_list or len(self.passed) > len(self.methods):
            return False
        args = node.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or not args.args:
            return False
        if not all(_plain(a.annotation) for a in args.args[1:]) or args.args[0].arg != "self":
            return False
        self.passed.add(name)  # (before its body: a method calling itself passes on what the rest is)
        if all(self.statement(s, 0) for s in node.body):
            return True
        self.passed.discard(name)
        return False

    def statement(self, node: ast.stmt, depth: int) -> bool:
        if depth > MAX_DEPTH:
            return False
        if isinstance(node, ast.Assign):
            return all(self.target(t) for t in node.targets) and self.expr(node.value, depth + 1)
        if isinstance(node, ast.Expr):
            return self.expr(node.value, depth + 1)
        if isinstance(node, ast.If):
            body = [*node.body, *node.orelse]
            return self.expr(node.test, depth + 1) and all(self.statement(s, depth + 1) for s in body)
        if isinstance(node, ast.Return):
            return node.value is None or self.expr(node.value, depth + 1)
        return isinstance(node, ast.Pass)

    def target(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id != "self"
        if isinstance(node, ast.Tuple | ast.List):
            return all(self.target(e) for e in node.elts)
        return self.attribute(node, self.declared)

    def attribute(self, node: ast.expr, names: set[str]) -> bool:
        """`self.name` (written `(self).name` too) for one of `names`."""
        return (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and node.attr in names
        )

    def expr(self, node: ast.expr, depth: int) -> bool:
        if depth > MAX_DEPTH:
            return False
        if isinstance(node, ast.Constant):
            return True
        if isinstance(node, ast.Name):
            return node.id != "self"
        if isinstance(node, ast.Tuple | ast.List):
            return all(self.expr(e, depth + 1) for e in node.elts)
        if isinstance(node, ast.Subscript):
            return self.expr(node.value, depth + 1) and self.expr(node.slice, depth + 1)
        if isinstance(node, ast.Attribute):
            return self.attribute(node, self.plain)
        if isinstance(node, ast.Compare | ast.BoolOp | ast.UnaryOp):
            return all(self.expr(e, depth + 1) for e in ast.iter_child_nodes(node) if isinstance(e, ast.expr))
        if isinstance(node, ast.Call):
            return self.call(node, depth)
        return False

    def call(self, node: ast.Call, depth: int) -> bool:
        arguments = [*node.args, *(k.value for k in node.keywords)]
        if not all(self.expr(a, depth + 1) for a in arguments):
            return False
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            return self.method(func.attr)
        return _dotted(func) in INERT_OPS
