"""Signature texts as plain Python: filled without importing Jinja on a run whose database is in the cache.

Importing Jinja and loading a compiled template cost a warm single triage more than its matching.
The texts use a small part of Jinja (``if``/``elif``/``else``, ``set``, names, constants, the
``default``, ``join``, ``truncate`` and ``float`` filters, ``is defined``, comparisons, a few
string methods), so the first time a text is filled (Jinja is imported then anyway) its syntax
tree is translated into the source of a Python function, compiled, and the code kept in the cache
(``Texts``). A text using anything outside that part has no translation and goes through Jinja's
sandbox as before.

What the sandbox guarantees holds in the translation: the code reaches the case's values only by
name through ``_name``, and calls no method but the string methods of ``_METHODS`` (``_call``),
with no builtins in its namespace. A fact the case lacks is a ``Missing``, which shows as
``<name>`` and tests, compares and defaults as Jinja's undefined value does. Where the
translation could differ from Jinja (an operation on a missing value other than those, an index
out of range, a value of another type than the translation expects), the function raises and
``Texts.fill`` answers None: the text is filled by Jinja, which decides as it always did.
"""

from __future__ import annotations

import marshal
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from types import CodeType, FunctionType
from typing import Any

from triage.digest import sha256
from triage.resources import source_key, write_bytes

# The string methods a text may call (Jinja's sandbox allows any public one; the texts use a few).
_METHODS = frozenset({"startswith", "endswith", "split", "rsplit", "replace", "strip", "lstrip", "rstrip", "lower",
                      "upper"})
_COMPARE = {"eq": "==", "ne": "!=", "gt": ">", "gteq": ">=", "lt": "<", "lteq": "<=", "in": "in", "notin": "not in"}
_CONSTANTS = (str, int, float, bool, type(None))
_TRUNCATE_LEEWAY = 5  # Jinja's default policy ``truncate.leeway``


class Untranslatable(Exception):
    """A text uses Jinja beyond what ``translate`` knows: it is filled by Jinja."""


class Missing:
    """A fact the case lacks, as Jinja's undefined value of the engine's sandbox: shown as ``<name>``, false,
    equal only to another missing value. Anything else done with it raises (and Jinja fills the text)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return f"<{self.name}>"

    def __bool__(self) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __ne__(self, other: object) -> bool:
        return type(self) is not type(other)

    def __hash__(self) -> int:
        return id(type(self))


class _Refused(Exception):
    """Raised by the translated code where Jinja might answer otherwise than the translation."""


def _name(context: dict, name: str) -> Any:
    return context[name] if name in context else Missing(name)


def _call(value: Any, method: str, *args: Any) -> Any:
    if not isinstance(value, str) or method not in _METHODS or any(not isinstance(a, _CONSTANTS) for a in args):
        raise _Refused(method)
    return getattr(value, method)(*args)


def _item(value: Any, key: Any) -> Any:
    if (isinstance(value, (str, list, tuple)) and type(key) is int) or (type(value) is dict and isinstance(key, str)):
        try:
            return value[key]
        except (IndexError, KeyError):
            pass
    raise _Refused("subscript")


def _default(value: Any, fallback: Any = "") -> Any:
    return fallback if isinstance(value, Missing) else value


def _join(value: Any, separator: Any = "") -> str:
    if not isinstance(value, (str, list, tuple)):
        raise _Refused("join")
    return str(separator).join(map(str, value))


def _truncate(value: Any, length: Any = 255) -> Any:
    if not isinstance(value, str) or type(length) is not int or length < 3:
        raise _Refused("truncate")
    if len(value) <= length + _TRUNCATE_LEEWAY:
        return value
    return value[: length - 3].rsplit(" ", 1)[0] + "..."


def _float(value: Any) -> float:
    if isinstance(value, Missing):  # Jinja's undefined value refuses to be a number
        raise _Refused("float")
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def _cat(*parts: Any) -> str:
    return "".join(map(str, parts))


# Filters: name -> (helper, how many arguments it takes besides the value).
_FILTERS = {"default": ("_default", (0, 1)), "join": ("_join", (0, 1)), "truncate": ("_truncate", (0, 1)),
            "float": ("_float", (0, 0))}
_TESTS = {"defined": "not isinstance({}, Missing)", "undefined": "isinstance({}, Missing)",
          "string": "isinstance({}, str)"}
_NAMESPACE = {"_name": _name, "_call": _call, "_item": _item, "_default": _default, "_join": _join,
              "_truncate": _truncate, "_float": _float, "_cat": _cat, "Missing": Missing, "isinstance": isinstance,
              "str": str}
# Names Jinja resolves to something other than the case's facts (its globals and special names).
_RESERVED = frozenset({"range", "dict", "lipsum", "cycler", "joiner", "namespace", "self", "loop", "caller",
                       "varargs", "kwargs", "super"})


def translate(text: str) -> str:
    """The source of ``def fill(c)`` returning ``text`` filled from the context ``c`` as the engine's Jinja sandbox
    fills it. Raises Untranslatable for a text beyond the part of Jinja translated, TemplateSyntaxError for a broken
    one."""
    from jinja2.sandbox import SandboxedEnvironment

    tree = SandboxedEnvironment().parse(text)
    lines = ["def fill(c):", " o = []"]
    _body(tree.body, lines, 1)
    lines.append(" return ''.join(o)")
    return "\n".join(lines)


def _body(body: list, lines: list[str], depth: int) -> None:
    from jinja2 import nodes

    pad = " " * depth
    if not body:
        lines.append(f"{pad}pass")
    for node in body:
        if isinstance(node, nodes.Output):
            for child in node.nodes:
                if isinstance(child, nodes.TemplateData):
                    lines.append(f"{pad}o.append({child.data!r})")
                else:
                    lines.append(f"{pad}o.append(str({_expr(child)}))")
        elif isinstance(node, nodes.If):
            lines.append(f"{pad}if {_expr(node.test)}:")
            _body(node.body, lines, depth + 1)
            for branch in node.elif_:
                lines.append(f"{pad}elif {_expr(branch.test)}:")
                _body(branch.body, lines, depth + 1)
            if node.else_:
                lines.append(f"{pad}else:")
                _body(node.else_, lines, depth + 1)
        elif isinstance(node, nodes.Assign) and isinstance(node.target, nodes.Name):
            lines.append(f"{pad}c[{_plain_name(node.target.name)!r}] = {_expr(node.node)}")
        else:
            raise Untranslatable(type(node).__name__)


def _plain_name(name: str) -> str:
    if name in _RESERVED:
        raise Untranslatable(f"name {name}")
    return name


def _expr(node: Any) -> str:
    """A Python expression for one Jinja expression node."""
    from jinja2 import nodes

    if isinstance(node, nodes.Const):
        if not isinstance(node.value, _CONSTANTS):
            raise Untranslatable(f"constant {type(node.value).__name__}")
        return f"({node.value!r})"
    if isinstance(node, nodes.Name):
        return f"_name(c, {_plain_name(node.name)!r})"
    if isinstance(node, (nodes.List, nodes.Tuple)):
        items = "".join(f"{_expr(item)}, " for item in node.items)
        return f"[{items}]" if isinstance(node, nodes.List) else f"({items})"
    if isinstance(node, nodes.Dict):
        return "{" + ", ".join(f"{_expr(pair.key)}: {_expr(pair.value)}" for pair in node.items) + "}"
    if isinstance(node, nodes.And):
        return f"({_expr(node.left)} and {_expr(node.right)})"
    if isinstance(node, nodes.Or):
        return f"({_expr(node.left)} or {_expr(node.right)})"
    if isinstance(node, nodes.Not):
        return f"(not {_expr(node.node)})"
    if isinstance(node, nodes.CondExpr) and node.expr2 is not None:
        return f"({_expr(node.expr1)} if {_expr(node.test)} else {_expr(node.expr2)})"
    if isinstance(node, nodes.Compare) and all(op.op in _COMPARE for op in node.ops):
        return "(" + _expr(node.expr) + "".join(f" {_COMPARE[op.op]} {_expr(op.expr)}" for op in node.ops) + ")"
    if isinstance(node, nodes.Concat):
        return "_cat(" + ", ".join(_expr(part) for part in node.nodes) + ")"
    if isinstance(node, nodes.Getitem) and not isinstance(node.arg, nodes.Slice):
        return f"_item({_expr(node.node)}, {_expr(node.arg)})"
    if isinstance(node, nodes.Filter) and _plain_call(node) and node.node is not None and node.name in _FILTERS:
        helper, (least, most) = _FILTERS[node.name]
        if least <= len(node.args) <= most:
            return f"{helper}({', '.join(_expr(part) for part in (node.node, *node.args))})"
    if isinstance(node, nodes.Test) and _plain_call(node) and node.name in _TESTS and not node.args:
        return "(" + _TESTS[node.name].format(_expr(node.node)) + ")"
    if isinstance(node, nodes.Call) and _plain_call(node) and isinstance(node.node, nodes.Getattr):
        if node.node.attr in _METHODS:
            args = "".join(f", {_expr(arg)}" for arg in node.args)
            return f"_call({_expr(node.node.node)}, {node.node.attr!r}{args})"
    raise Untranslatable(type(node).__name__)


def _plain_call(node: Any) -> bool:
    """A filter, test or call with positional arguments only."""
    return not node.kwargs and node.dyn_args is None and node.dyn_kwargs is None


def _build_tag() -> str:
    """Which Python and which translation made a kept code object: only the same pair reads it back."""
    return f"{sys.implementation.cache_tag} {sys.version} {source_key('match')}"


class Texts:
    """The signature texts filled as Python. A text is translated when it is first filled and its compiled code is
    kept in a cache folder, one small file a text (named by a digest of the text, the Python and the translation):
    a run reads back only the few texts its case fills, so neither a warm run (no Jinja) nor the run that builds
    the database (no translation of texts no case has filled yet) pays for the others. A text without a
    translation is kept as an empty file, and Jinja fills it."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder
        self._filled: dict[str, Callable[[dict], str] | None] = {}

    @classmethod
    def build(cls, texts: Iterable[str], folder: Path | None = None) -> Texts:
        """These texts translated now (tests, and callers that fill many texts once)."""
        out = cls(folder)
        for text in texts:
            out.function(text)
        return out

    def function(self, text: str) -> Callable[[dict], str] | None:
        """The translation of ``text`` as a function of the context, or None when Jinja fills it."""
        if text not in self._filled:
            code = self._code(text)
            self._filled[text] = None if code is None else FunctionType(code, {"__builtins__": {}, **_NAMESPACE})
        return self._filled[text]

    def _code(self, text: str) -> CodeType | None:
        path = None
        if self.folder is not None:
            name = sha256(f"{_build_tag()}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()
            path = self.folder / f"{name[:32]}.code"
            try:
                kept = path.read_bytes()
            except OSError:
                pass
            else:
                try:
                    return marshal.loads(kept) if kept else None
                except (EOFError, ValueError, TypeError):  # a damaged file: translated again below
                    pass
        from jinja2 import TemplateSyntaxError

        try:
            code: CodeType | None = _compiled(translate(text)) if "{" in text else None
        except (Untranslatable, TemplateSyntaxError):
            code = None
        if path is not None:
            write_bytes(path, marshal.dumps(code) if code is not None else b"")
        return code

    def fill(self, text: str, context: dict) -> str | None:
        """``text`` filled from ``context``, or None when Jinja is to fill it (no translation, or one that declined)."""
        fill = self.function(text)
        if fill is None:
            return None
        try:
            return fill(dict(context))
        except Exception:  # noqa: BLE001 - where the translation declines (or would differ), Jinja decides
            return None


def _compiled(source: str) -> CodeType:
    """The code of the function ``fill`` that a translation's source defines."""
    module = compile(source, "<signature text>", "exec")
    return next(c for c in module.co_consts if isinstance(c, CodeType))
