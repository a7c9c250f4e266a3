"""inspect: the user's kernel variables, listed or one in detail, without running their code.

Without a name, every user variable with its type and a one-line summary
(variables the kernel defined, modules and names starting with ``_`` are left
out; functions and classes are named on one line each). With a name, that
variable in detail: a data frame's columns, dtypes, null counts and head; an
array's shape, dtype, first values and range; a container's items; an
object's own attributes. A name that is not there is NAME_NOT_FOUND with the
close names as candidates.

It is a read, and it never runs the user's code: values are told apart by
their exact type (``type(x)``, never ``isinstance``, which may ask the value),
builtin values are shown by a bounded repr built here (``bounded_repr``; the
builtin ``repr``/``len`` only on exact builtin types), numpy and pandas
objects through their own attributes and methods (``.shape``, ``.dtypes``,
``.head().to_string()``, ``.isna().sum()``; object cells are shown as labels
first, so no element's ``__repr__`` runs), and any other object as
``<module.Class object>`` with the attributes in its ``__dict__`` (read
statically: no property or ``__getattr__`` runs). numpy and pandas are never
imported here: they are recognised by the type's module and name.

Everything is bounded: variables listed, characters per line, items per
container, rows and columns of a frame, and the whole output.
"""

from __future__ import annotations

import collections
import datetime
import decimal
import difflib
import fractions
import itertools
import pathlib
import sys
import types
from collections.abc import Set
from inspect import Parameter, signature
from typing import TYPE_CHECKING, Any

from grinta_jupyter.runtime.errors import INVALID_ARGS, NAME_NOT_FOUND, Candidate, fail
from grinta_jupyter.tools.base import Args, ReadResult, ToolContext, ToolSpec

if TYPE_CHECKING:
    from grinta_jupyter.tools.kernel import Namespace

MAX_VARIABLES = 100
LINE_CHARS = 200
LIST_CHARS = 12_000
DETAIL_CHARS = 8_000
HEAD_ROWS = 5
MAX_COLUMNS = 40
MAX_ATTRIBUTES = 30
FIRST_VALUES = 10
# Null counts and min/max read every cell: past this many cells they are left out.
STATS_MAX_CELLS = 20_000_000


class InspectArgs(Args):
    name: str | None = None


def spec(namespace: Namespace) -> ToolSpec[InspectArgs]:
    """The ``inspect`` tool bound to ``namespace``."""

    def stage(args: InspectArgs, ctx: ToolContext) -> ReadResult:
        return ReadResult(inspect_namespace(namespace, args.name))

    return ToolSpec(
        name="inspect",
        kind="read",
        description="List the kernel's variables (no name), or show one in detail.",
        args=InspectArgs,
        stage=stage,
    )


def inspect_namespace(namespace: Namespace, name: str | None = None) -> str:
    """The listing (``name`` None) or one variable in detail; raises ToolFailure when missing."""
    values = dict(namespace.namespace())  # a snapshot: the kernel may add names meanwhile
    hidden = namespace.hidden()
    if name is None:
        return listing(values, hidden)
    if not name.isidentifier():
        raise fail(
            INVALID_ARGS,
            f"{name!r} is not a variable name; give one name (like df), or use execute to "
            "evaluate an expression",
        )
    if name not in values:
        shown = [n for n, v in values.items() if _listed(n, v, hidden)]
        close = difflib.get_close_matches(name, shown, n=5, cutoff=0.6)
        listed = f"; variables: {', '.join(shown[:20])}" if shown else "; there are none yet"
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise fail(
            NAME_NOT_FOUND,
            f"no variable named {name!r} in the kernel{listed}.{hint}",
            [Candidate("<kernel>", 0, _cut(summary(values[n])), "variable", n) for n in close],
        )
    return _bound(detail(name, values[name]), DETAIL_CHARS)


def listing(values: dict[str, Any], hidden: Set[str]) -> str:
    """One line per user variable; functions and classes by name; bounded."""
    data: list[str] = []
    functions: list[str] = []
    classes: list[str] = []
    for name, value in values.items():
        if not _listed(name, value, hidden):
            continue
        cls = type(value)
        if issubclass(cls, type):
            classes.append(name)
        elif cls in _FUNCTIONS:
            functions.append(name)
        else:
            data.append(name)
    if not (data or functions or classes):
        return "no user variables in the kernel yet"
    lines = [
        _cut(f"{name} ({type_label(values[name])}): {summary(values[name])}")
        for name in data[:MAX_VARIABLES]
    ]
    if len(data) > MAX_VARIABLES:
        lines.append(f"[... {len(data) - MAX_VARIABLES} more variables not listed]")
    for label, names in (("functions", functions), ("classes", classes)):
        if names:
            lines.append(_cut(f"{label}: {', '.join(names)}"))
    head = f"{_count(len(data), 'variable')} in the kernel"
    return _bound("\n".join([head, *lines]), LIST_CHARS)


def _listed(name: str, value: Any, hidden: Set[str]) -> bool:
    return not (name.startswith("_") or name in hidden or issubclass(type(value), types.ModuleType))


# -- what a value is ---------------------------------------------------------------------

_NONE = type(None)
_SCALARS: frozenset[type] = frozenset(
    {
        int,
        float,
        complex,
        bool,
        _NONE,
        range,
        slice,
        type(Ellipsis),
        type(NotImplemented),
        datetime.date,
        datetime.datetime,
        datetime.time,
        datetime.timedelta,
        datetime.timezone,
        decimal.Decimal,
        fractions.Fraction,
        pathlib.PurePosixPath,
        pathlib.PosixPath,
        pathlib.PureWindowsPath,
    }
)
_TEXTS: frozenset[type] = frozenset({str, bytes, bytearray})
_SEQUENCES: dict[type, tuple[str, str]] = {
    list: ("[", "]"),
    tuple: ("(", ")"),
    collections.deque: ("deque([", "])"),
}
_MAPPINGS: dict[type, tuple[str, str]] = {
    dict: ("{", "}"),
    collections.OrderedDict: ("OrderedDict({", "})"),
    collections.defaultdict: ("defaultdict({", "})"),
    collections.Counter: ("Counter({", "})"),
}
_SETS: dict[type, tuple[str, str]] = {set: ("{", "}"), frozenset: ("frozenset({", "})")}
_FUNCTIONS: frozenset[type] = frozenset(
    {types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.LambdaType}
)
_PANDAS_SCALARS = frozenset({"Timestamp", "Timedelta", "Period", "NaTType", "Interval"})


def _names(cls: type) -> tuple[str, str]:
    """A class's module and qualified name, read through ``type`` itself (no metaclass code)."""
    module = vars(type)["__module__"].__get__(cls, type)
    qualname = vars(type)["__qualname__"].__get__(cls, type)
    return (module if isinstance(module, str) else ""), str(qualname)


def type_label(value: Any) -> str:
    """``int``, ``Point`` (defined in the notebook), ``pandas.DataFrame``, ``numpy.ndarray``."""
    cls = type(value)
    if issubclass(cls, type):
        return "class"
    if cls in _FUNCTIONS:
        return "function"
    module, qualname = _names(cls)
    if module in ("builtins", "__main__", ""):
        return qualname
    return f"{module.split('.')[0]}.{qualname}"


def _library(value: Any) -> tuple[str, str]:
    """("numpy" | "pandas" | "", class name) for values of those libraries' own classes."""
    module, qualname = _names(type(value))
    root = module.split(".")[0]
    return (root, qualname) if root in ("numpy", "pandas") else ("", qualname)


def summary(value: Any) -> str:
    """One line about ``value`` that runs none of its code."""
    cls = type(value)
    if cls in _TEXTS:
        unit = "character" if cls is str else "byte"
        return f"{_count(len(value), unit)}: {bounded_repr(value, room=60)}"
    if cls in _SEQUENCES or cls in _MAPPINGS or cls in _SETS:
        return f"{_count(len(value), 'item')}: {bounded_repr(value, room=120)}"
    if cls in _SCALARS:
        return bounded_repr(value)
    if issubclass(cls, type):
        module, qualname = _names(value)
        return f"{module}.{qualname}" if module not in ("__main__", "") else qualname
    if cls in _FUNCTIONS:
        return _signature(value)
    library, name = _library(value)
    if library == "pandas" and name == "DataFrame":
        rows, columns = value.shape
        dtypes = ", ".join(
            f"{_label_text(c)} {d}" for c, d in itertools.islice(value.dtypes.items(), 12)
        )
        more = f", ... {columns - 12} more" if columns > 12 else ""
        return f"{_count(rows, 'row')} x {_count(columns, 'column')}: {dtypes}{more}"
    if library == "pandas" and name == "Series":
        named = "" if value.name is None else f", name {_label_text(value.name)}"
        return f"{_count(len(value), 'value')}, dtype {value.dtype}{named}"
    if library == "pandas" and name.endswith("Index"):
        return f"{_count(len(value), 'entry', 'entries')}, dtype {value.dtype}"
    if library == "numpy" and _is_array(value):
        return f"shape {tuple(value.shape)}, dtype {value.dtype}"
    if (library == "numpy" and not _is_array(value)) or (
        library == "pandas" and name in _PANDAS_SCALARS
    ):
        return _cut(repr(value), 80)  # a library scalar: its own repr holds no user code
    return f"<{type_label(value)} object>"


def _is_array(value: Any) -> bool:
    """A numpy array (or a numpy subclass of one). numpy is loaded: one of its values exists."""
    numpy = sys.modules.get("numpy")
    return numpy is not None and issubclass(type(value), numpy.ndarray)


def _label_text(label: Any) -> str:
    return label if type(label) is str else bounded_repr(label, room=40)


# -- bounded reprs of builtin values --------------------------------------------------------

_ITEMS = (10, 4, 3)  # items shown per container, by depth; deeper containers are elided
_STRING_CHARS = 60


def bounded_repr(value: Any, room: int = 200, depth: int = 0) -> str:
    """A repr of builtin values, built here: at most about ``room`` characters, any size of
    input. Anything else (a user's object inside a list) is shown as ``<Class object>``."""
    cls = type(value)
    if cls in _TEXTS:
        chars = min(room, _STRING_CHARS) if depth else room
        return repr(value[:chars]) + ("..." if len(value) > chars else "")
    if cls is int and value.bit_length() > 200:
        return f"<int of {value.bit_length()} bits>"
    if cls in _SCALARS:
        return _cut(repr(value), room)
    brackets = _SEQUENCES.get(cls) or _MAPPINGS.get(cls) or _SETS.get(cls)
    if brackets is None:
        library, _ = _library(value)
        return summary(value) if library else f"<{type_label(value)} object>"
    if not value:
        return "set()" if cls is set else brackets[0] + brackets[1]
    if depth >= len(_ITEMS):
        return brackets[0] + "..." + brackets[1]
    limit = _ITEMS[depth]
    if cls in _MAPPINGS:
        parts = [
            f"{bounded_repr(k, room, depth + 1)}: {bounded_repr(v, room, depth + 1)}"
            for k, v in itertools.islice(value.items(), limit)
        ]
    else:
        parts = [bounded_repr(v, room, depth + 1) for v in itertools.islice(value, limit)]
    if len(value) > limit:
        parts.append(f"... {len(value) - limit} more")
    trailing = "," if cls is tuple and len(value) == 1 else ""
    return _cut(brackets[0] + ", ".join(parts) + trailing + brackets[1], room)


_STARS: dict[Any, str] = {Parameter.VAR_POSITIONAL: "*", Parameter.VAR_KEYWORD: "**"}


def _signature(function: Any) -> str:
    """``name(a, b=..., *args, **kw)``: parameter names only (a default's repr is user code)."""
    name = function.__name__  # exact function types: a slot, not user code
    try:
        params = signature(function).parameters.values()
    except (TypeError, ValueError):
        return f"{name}(...)"
    shown = []
    for p in params:
        prefix = _STARS.get(p.kind, "")
        default = "=..." if p.default is not Parameter.empty else ""
        shown.append(f"{prefix}{p.name}{default}")
    return f"{name}({', '.join(shown)})"


# -- one variable in detail -----------------------------------------------------------------


def detail(name: str, value: Any) -> str:
    head = f"{name} ({type_label(value)}): {summary(value)}"
    library, kind = _library(value)
    if library == "pandas" and kind in ("DataFrame", "Series"):
        body = _frame_detail(value if kind == "DataFrame" else value.to_frame(), kind)
    elif library == "numpy" and _is_array(value):
        body = _array_detail(value)
    else:
        body = _plain_detail(value)
    return "\n".join([_cut(head), *body])


def _frame_detail(frame: Any, kind: str) -> list[str]:
    rows, columns = frame.shape
    shown = frame.iloc[:, :MAX_COLUMNS]
    nulls: list[int] | None = None
    if rows * shown.shape[1] <= STATS_MAX_CELLS:
        nulls = [int(n) for n in shown.isna().sum().tolist()]
    lines = ["columns (dtype, nulls):" if nulls is not None else "columns (dtype):"]
    for i, (label, dtype) in enumerate(shown.dtypes.items()):
        count = "" if nulls is None else f", {_count(nulls[i], 'null')}"
        lines.append(_cut(f"  {_label_text(label)}: {dtype}{count}"))
    if columns > MAX_COLUMNS:
        lines.append(f"  [... {columns - MAX_COLUMNS} more columns]")
    lines.append(f"head({HEAD_ROWS}):" if kind == "DataFrame" else f"first {HEAD_ROWS}:")
    table = _safe_cells(shown.head(HEAD_ROWS)).to_string(max_cols=12, max_colwidth=40)
    lines.extend(_cut(line) for line in table.splitlines())
    return lines


def _safe_cells(frame: Any) -> Any:
    """``frame`` with any cell, label or column name that is not a plain value replaced by its
    label, so ``to_string`` calls no user ``__repr__``/``__str__``."""
    frame = frame.copy()
    for i in range(frame.shape[1]):
        column = frame.iloc[:, i]
        if column.dtype.kind == "O":
            cells = column.tolist()
            if not all(_plain(v) for v in cells):
                frame.isetitem(i, [_cell(v) for v in cells])
    for axis in ("index", "columns"):
        labels = getattr(frame, axis)
        if labels.dtype.kind == "O":
            items = labels.tolist()
            if not all(_plain(v) for v in items):
                setattr(frame, axis, [_cell(v) for v in items])
    return frame


def _plain(value: Any) -> bool:
    cls = type(value)
    return cls in _TEXTS or cls in _SCALARS or _library(value)[0] != ""


def _cell(value: Any) -> Any:
    return value if _plain(value) else bounded_repr(value, room=40)


def _array_detail(array: Any) -> list[str]:
    lines = [f"size {array.size}, {_count(array.ndim, 'dimension')}"]
    first = array.ravel()[:FIRST_VALUES].tolist()
    lines.append(_cut(f"first values: {bounded_repr(first, room=LINE_CHARS)}"))
    if array.dtype.kind in "iufb" and 0 < array.size <= STATS_MAX_CELLS:
        if array.dtype.kind == "f":
            lines.append(f"nan: {int((array != array).sum())}")
        lines.append(_cut(f"min {array.min().item()!r}, max {array.max().item()!r}"))
    return lines


def _plain_detail(value: Any) -> list[str]:
    cls = type(value)
    if cls in _TEXTS or cls in _SEQUENCES or cls in _MAPPINGS or cls in _SETS:
        return [bounded_repr(value, room=DETAIL_CHARS // 2)]
    if issubclass(cls, type) or cls in _FUNCTIONS:
        return _doc_and_members(value)
    if cls in _SCALARS or _library(value)[0]:
        return []
    return _attributes(value)


def _doc_and_members(value: Any) -> list[str]:
    lines = []
    is_class = issubclass(type(value), type)
    # A class's docstring is in its own namespace; a function's is a slot of the function.
    doc = _own_dict(value).get("__doc__") if is_class else value.__doc__
    if isinstance(doc, str) and doc.strip():
        lines.append(_cut("doc: " + doc.strip().split("\n\n")[0].replace("\n", " ")))
    if is_class:
        members = [n for n in _own_dict(value) if not n.startswith("_")]
        if members:
            lines.append(_cut(f"members: {', '.join(members)}"))
    return lines


def _attributes(value: Any) -> list[str]:
    """The attributes in ``value.__dict__``, each summarised."""
    own = _instance_dict(value)
    if own is None:
        return ["(no instance attributes)"]
    lines = ["attributes:"] if own else ["(no instance attributes)"]
    for key, attr in itertools.islice(own.items(), MAX_ATTRIBUTES):
        lines.append(_cut(f"  {key} ({type_label(attr)}): {summary(attr)}"))
    if len(own) > MAX_ATTRIBUTES:
        lines.append(f"  [... {len(own) - MAX_ATTRIBUTES} more attributes]")
    return lines


def _instance_dict(value: Any) -> dict[str, Any] | None:
    """``value.__dict__`` when it is the interpreter's own slot (never a class's property)."""
    cls = type(value)
    for klass in vars(type)["__mro__"].__get__(cls, type):
        entry = _own_dict(klass).get("__dict__")
        if entry is None:
            continue
        if type(entry) is not types.GetSetDescriptorType:
            return None
        own = entry.__get__(value, cls)
        return own if type(own) is dict else None
    return None


def _own_dict(cls: type) -> Any:
    """A class's own namespace (a mappingproxy), read through ``type`` itself."""
    return vars(type)["__dict__"].__get__(cls, type)


# -- bounds ------------------------------------------------------------------------------


def _count(number: int, word: str, plural: str = "") -> str:
    return f"{number} {word if number == 1 else plural or word + 's'}"


def _cut(text: str, limit: int = LINE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _bound(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    kept = text[:limit].rsplit("\n", 1)[0]
    return f"{kept}\n[... output cut at {limit} characters; inspect one name for more]"
