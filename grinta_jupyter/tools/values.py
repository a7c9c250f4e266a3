"""What a Python value is and one bounded line about it, without running the value's code.

The description the ``inspect`` tool gives of the user's kernel variables
(the tool is tools/inspect.py; the detail of frames and arrays is
tools/frames.py). The contract, for every function here: it never runs the
user's code, and what it returns is bounded whatever the size of the value.

- values are told apart by their exact type (``type(x)``, never
  ``isinstance``, which may ask the value), looked up by identity (hashing a
  type runs its metaclass's ``__hash__``): ``ExactTypes``;
- builtin values are shown by a bounded repr built here (``bounded_repr``;
  the builtin ``repr`` only on exact builtin types whose repr runs nothing of
  the user's: a datetime with a user ``tzinfo``, a slice, a range or a huge
  Fraction are built field by field);
- numpy and pandas values are recognised by identity with, or subclassing
  of, the classes of the already-imported numpy and pandas (never by the
  ``__module__`` a class may claim; neither library is imported here) and
  read through their own attributes (``.shape``, ``.dtypes``). A frame or
  series is first rebuilt as a plain one sharing its data (``bare``): no
  subclass method runs, and no ``attrs``, which pandas deep-copies into
  every derived frame;
- functions by their code object's parameter names (a default's repr, a
  ``__signature__`` or ``__wrapped__`` object is the user's);
- any other object as ``<module.Class object>``, and in detail with the
  attributes in its ``__dict__`` (read statically: no property or
  ``__getattr__`` runs).

A value that cannot be described costs its own line (``guarded``), never
the caller's whole output.

Secrets: the kernel holds values the environment does not, so what is shown
is redacted here too (``is_secret_text``, ``without_credentials``): text that looks
like a secret under a name that says it holds one (a variable, a dictionary
key, an attribute: ``api_key``, ``"PASSWORD"``, ``self.token``), text
holding a URL's password, a secret setting, a private key or a credential in
a provider's format, whatever its name.
"""

from __future__ import annotations

import collections
import datetime
import decimal
import fractions
import itertools
import pathlib
import re
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from inspect import CO_VARARGS, CO_VARKEYWORDS, Parameter, signature
from typing import Any, TypeGuard

from grinta_jupyter.runtime.secrets import (
    REDACTED,
    SECRET_PARTS,
    before_cut,
    credentials,
    is_secret_name,
    is_secret_variable,
    looks_secret,
    redact,
)

LINE_CHARS = 200
MAX_ATTRIBUTES = 30
# Integers past this many bits are described, not written out (their decimal text costs
# quadratic time, and past int_max_str_digits it raises).
INT_BITS = 200


def guarded(describe: Callable[..., str], value: Any, *more: Any) -> str:
    """``describe(value, *more)``, or a note saying it could not be done: one odd value (or a
    bug of ours) costs its own line, not the listing."""
    try:
        return describe(value, *more)
    except Exception as exc:
        return f"<cannot be summarised: {class_names(type(exc))[1]}>"


# -- what a value is ---------------------------------------------------------------------


class ExactTypes:
    """Types looked up by identity: ``cls in table`` never hashes or compares ``cls`` (a
    metaclass's ``__hash__`` and ``__eq__`` are user code, and may be missing)."""

    def __init__(self, kinds: Iterable[type]) -> None:
        self._kinds = {id(kind): kind for kind in kinds}  # holding them keeps the ids unique

    def __contains__(self, cls: object) -> bool:
        return id(cls) in self._kinds


NONE_TYPE = type(None)
_SCALARS = ExactTypes(
    (
        int,
        float,
        complex,
        bool,
        NONE_TYPE,
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
    )
)
_TEXTS = ExactTypes((str, bytes, bytearray))
_BRACKETS: dict[int, tuple[type, str, str]] = {
    id(cls): (cls, opening, closing)
    for cls, opening, closing in (
        (list, "[", "]"),
        (tuple, "(", ")"),
        (collections.deque, "deque([", "])"),
        (dict, "{", "}"),
        (collections.OrderedDict, "OrderedDict({", "})"),
        (collections.defaultdict, "defaultdict({", "})"),
        (collections.Counter, "Counter({", "})"),
        (set, "{", "}"),
        (frozenset, "frozenset({", "})"),
    )
}
_MAPPINGS = ExactTypes(
    (dict, collections.OrderedDict, collections.defaultdict, collections.Counter)
)
FUNCTIONS = ExactTypes(
    (types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.LambdaType)
)


def _container(cls: type) -> bool:
    return id(cls) in _BRACKETS


def class_names(cls: type) -> tuple[str, str]:
    """A class's module and qualified name, read through ``type`` itself (no metaclass code)."""
    module = vars(type)["__module__"].__get__(cls, type)
    qualname = vars(type)["__qualname__"].__get__(cls, type)
    return (module if type(module) is str else ""), (qualname if type(qualname) is str else "?")


def type_label(value: Any) -> str:
    """``int``, ``Point`` (defined in the notebook), ``pandas.DataFrame``, ``numpy.ndarray``."""
    cls = type(value)
    if issubclass(cls, type):
        return "class"
    if cls in FUNCTIONS:
        return "function"
    module, qualname = class_names(cls)
    if module in ("builtins", "__main__", ""):
        return qualname
    return f"{module.split('.')[0]}.{qualname}"


def library_kind(value: Any) -> str:
    """What a numpy or pandas value is: "array", "numpy scalar", "frame", "series", "index",
    "pandas scalar"; "" for anything else. Recognised by the classes of the modules already
    loaded (a class's ``__module__`` is its own to set); numpy scalars and pandas scalars only
    by their exact type, since their repr is what shows them."""
    cls = type(value)
    numpy = loaded_module("numpy")
    if numpy is not None:
        if _subclass(cls, numpy, "ndarray"):
            return "array"
        if cls in _numpy_scalars(numpy):
            return "numpy scalar"
    pandas = loaded_module("pandas")
    if pandas is not None:
        for kind, name in (("frame", "DataFrame"), ("series", "Series")):
            if _subclass(cls, pandas, name):
                return kind if _pandas_axes(value, pandas) else ""
        if cls in _pandas_indexes(pandas):
            return "index"
        if cls in _pandas_scalars(pandas):
            return "pandas scalar"
    return ""


def loaded_module(name: str) -> dict[str, Any] | None:
    """The namespace of the loaded module ``name``, or None when it is not loaded or is not a
    plain module: a stand-in put in ``sys.modules`` answers attributes with its own code (a
    ``__getattr__``; a lazy module imports itself when touched)."""
    module = sys.modules.get(name)
    if type(module) is not types.ModuleType:
        return None
    namespace = vars(module)  # a plain module's own dictionary: no module ``__getattr__`` runs
    return namespace if type(namespace) is dict else None


def _subclass(cls: type, module: dict[str, Any], name: str) -> bool:
    # The module may be half imported (another thread is importing it): no class, no match.
    base = module.get(name)
    return type(base) is type and issubclass(cls, base)


_scalar_tables: dict[str, tuple[object, ExactTypes]] = {}


def _numpy_scalars(numpy: dict[str, Any]) -> ExactTypes:
    """numpy's own scalar types (float64, int8, datetime64, str_, void, ...)."""
    table = numpy.get("sctypeDict")
    return _table("numpy", numpy, lambda: table.values() if type(table) is dict else ())


def _pandas_scalars(pandas: dict[str, Any]) -> ExactTypes:
    """pandas's scalar types (Timestamp, Timedelta, Period, Interval, NaT's type)."""

    def kinds() -> list[object]:
        names = ("Timestamp", "Timedelta", "Period", "Interval")
        return [*(pandas.get(name) for name in names), type(pandas.get("NaT"))]

    return _table("pandas", pandas, kinds)


_PANDAS_INDEXES = (
    "Index",
    "RangeIndex",
    "CategoricalIndex",
    "MultiIndex",
    "IntervalIndex",
    "DatetimeIndex",
    "TimedeltaIndex",
    "PeriodIndex",
)


def _pandas_indexes(pandas: dict[str, Any]) -> ExactTypes:
    """pandas's own index classes. An index of a subclass of the user's is not one: pandas
    calls its methods (``__len__``, ``view``, ``dtype``) whenever it reads it, and the user's
    code there may loop for ever (such an index is shown as any object of the user's)."""
    return _table("pandas indexes", pandas, lambda: (pandas.get(n) for n in _PANDAS_INDEXES))


def _pandas_axes(value: Any, pandas: dict[str, Any]) -> bool:
    """Whether a frame's or series's axes are all of pandas's own index classes, read from its
    data manager statically (an axis of the user's class runs its code in every pandas call
    on the frame, ``.shape`` included: such a frame is shown as any object of the user's).
    ValueError when it holds no data manager of pandas's (a frame never initialised)."""
    managers = loaded_module("pandas.core.internals.managers") or {}
    own = _instance_dict(value) or {}
    manager: Any = next((v for k, v in list(own.items()) if type(k) is str and k == "_mgr"), None)
    kinds = (managers.get("BlockManager"), managers.get("SingleBlockManager"))
    if not any(type(manager) is kind for kind in kinds if kind is not None):
        raise ValueError("no pandas data manager to read")
    axes = manager.axes
    indexes = _pandas_indexes(pandas)
    return type(axes) is list and all(type(axis) in indexes for axis in axes)


def _is_class(kind: object) -> TypeGuard[type]:
    """Whether ``kind`` is a class (pandas's DatetimeIndex is an ABCMeta one), asked of its type
    alone: ``isinstance`` may read an object's ``__class__``."""
    return issubclass(type(kind), type)


def _table(key: str, module: object, kinds: Callable[[], Iterable[object]]) -> ExactTypes:
    """The scalar types of ``module``, found once per module object."""
    cached = _scalar_tables.get(key)
    if cached is None or cached[0] is not module:
        found = (kind for kind in kinds() if _is_class(kind) and kind is not NONE_TYPE)
        cached = (module, ExactTypes(found))
        _scalar_tables[key] = cached
    return cached[1]


def is_library_class(cls: type, module: str, name: str) -> bool:
    """Whether ``cls`` is the class ``name`` of the loaded ``module`` (never imported here)."""
    loaded = loaded_module(module)
    return loaded is not None and cls is loaded.get(name)


def bare(value: Any, kind: str) -> Any:
    """A frame or series as the plain pandas class, sharing the data: no subclass method and
    no ``attrs`` (pandas deep-copies them into every frame derived from this one)."""
    pandas = sys.modules["pandas"]
    return (
        pandas.DataFrame(value, copy=False) if kind == "frame" else pandas.Series(value, copy=False)
    )


def plain_array(value: Any) -> Any:
    """An array (of any ndarray subclass) as a plain ndarray view: no subclass method runs."""
    numpy = sys.modules["numpy"]
    return numpy.ndarray.view(value, numpy.ndarray)


# -- one line about a value ------------------------------------------------------------------


def summary(value: Any, name: object = None) -> str:
    """One line about ``value`` (the value of ``name``) that runs none of its code."""
    cls = type(value)
    if cls not in _TEXTS and is_secret_text(name, value):  # numpy's str_ is a str subclass
        return REDACTED
    if cls in _TEXTS:
        unit = "character" if cls is str else "byte"
        shown = REDACTED if is_secret_text(name, value) else bounded_repr(value, room=60)
        return f"{counted(len(value), unit)}: {shown}"
    if _container(cls):
        return f"{counted(len(value), 'item')}: {bounded_repr(value, room=120, name=name)}"
    if cls in _SCALARS:
        return bounded_repr(value)
    if issubclass(cls, type):
        module, qualname = class_names(value)
        return f"{module}.{qualname}" if module not in ("__main__", "") else qualname
    if cls in FUNCTIONS:
        return _signature(value)
    kind = library_kind(value)
    if kind == "frame":
        frame = bare(value, kind)
        rows, columns = frame.shape
        dtypes = ", ".join(
            f"{label_text(c)} {dtype_text(d)}"
            for c, d in itertools.islice(frame.dtypes.items(), 12)
        )
        more = f", ... {columns - 12} more" if columns > 12 else ""
        return f"{counted(rows, 'row')} x {counted(columns, 'column')}: {dtypes}{more}"
    if kind == "series":
        series = bare(value, kind)
        named = "" if series.name is None else f", name {label_text(series.name)}"
        return f"{counted(len(series), 'value')}, dtype {dtype_text(series.dtype)}{named}"
    if kind == "index":
        return f"{counted(len(value), 'entry', 'entries')}, dtype {dtype_text(value.dtype)}"
    if kind == "array":
        array = plain_array(value)
        return f"shape {tuple(array.shape)}, dtype {array.dtype}"
    if kind:
        return _library_scalar(value)
    pandas = loaded_module("pandas")
    if pandas is not None and any(_subclass(cls, pandas, n) for n in ("DataFrame", "Series")):
        return f"<{type_label(value)} object: an axis of a user-defined index class (not read)>"
    if pandas is not None and _subclass(cls, pandas, "Index"):
        return f"<{type_label(value)} object: a user-defined pandas index class (not read)>"
    return f"<{type_label(value)} object>"


def _library_scalar(value: Any) -> str:
    """A numpy or pandas scalar: its own repr, except where that repr shows the user's objects
    (a record's object fields, an Interval's endpoints, a Timestamp's time zone)."""
    cls = type(value)
    if is_library_class(cls, "numpy", "void"):  # a numpy record: its fields may hold any object
        return cut(f"record {bounded_repr(value.tolist(), room=120)}, dtype {value.dtype}", 160)
    if is_library_class(cls, "pandas", "Interval"):
        left, right = (bounded_repr(end, room=40) for end in (value.left, value.right))
        return f"Interval({left}, {right}, closed={value.closed!r})"
    if is_library_class(cls, "pandas", "Timestamp") and not known_zone(value.tzinfo):
        utc = value.tz_convert(None)  # the instant in UTC, read without the zone's code
        return cut(f"{utc!r} UTC, tz {bounded_repr(value.tzinfo)}", 80)
    return cut(repr(value), 80)


def known_zone(zone: Any) -> bool:
    """No zone, or one of the standard library's, whose repr runs nothing of the user's."""
    if zone is None or type(zone) is datetime.timezone:
        return True
    zoneinfo = loaded_module("zoneinfo")
    return zoneinfo is not None and type(zone) is zoneinfo.get("ZoneInfo")


def foreign_zone(dtype: Any) -> bool:
    """Whether ``dtype`` is pandas's dtype of times in a zone whose code is not the standard
    library's (pandas writes such a time with the zone's ``utcoffset``, its dtype with its
    ``__str__``)."""
    return is_library_class(type(dtype), "pandas", "DatetimeTZDtype") and not known_zone(dtype.tz)


def dtype_text(dtype: Any) -> str:
    """A numpy or pandas dtype's name; a zone that is not the standard library's by its class."""
    if foreign_zone(dtype):
        return f"datetime64[{dtype.unit}, {bounded_repr(dtype.tz, room=40)}]"
    return str(dtype)


def label_text(label: Any) -> str:
    """A row or column label (or an attribute's name): a string as it is when it reads as one
    plain line, anything else by its bounded repr. A label holding a line break or a terminal
    code (``"amount\nERROR: ..."``) is quoted, so it cannot pass for a line of the output."""
    if type(label) is str and _CONTROL.search(label) is None:
        return label
    return bounded_repr(label, room=40)


# -- bounded reprs of builtin values --------------------------------------------------------

_ITEMS = (10, 4, 3)  # items shown per container, by depth; deeper containers are elided
_STRING_CHARS = 60


def bounded_repr(value: Any, room: int = 200, depth: int = 0, name: object = None) -> str:
    """A repr of builtin values, built here: at most about ``room`` characters, any size of
    input. Anything else (a user's object inside a list) is shown as ``<Class object>``.

    ``name``: what holds ``value`` (a variable, a key). Under a name that says it holds
    secrets, text that looks like one is REDACTED however deep (``TOKENS = ["..."]``,
    ``KEYS = {"github": "..."}``), as a text directly under it is."""
    cls = type(value)
    if cls in _TEXTS:
        chars = min(room, _STRING_CHARS) if depth else room
        if _holds_secret(value[: chars + _SECRET_MARGIN]) or (
            name is not None and is_secret_text(name, value)
        ):
            return REDACTED
        return repr(value[:chars]) + ("..." if len(value) > chars else "")
    if cls in _SCALARS:
        return cut(_scalar_repr(value, room, depth), room)
    entry = _BRACKETS.get(id(cls))
    if entry is None:
        return summary(value, name) if library_kind(value) else f"<{type_label(value)} object>"
    _, opening, closing = entry
    if not value:
        return "set()" if cls is set else opening + closing
    if depth >= len(_ITEMS):
        return opening + "..." + closing
    limit = _ITEMS[depth]
    if cls in _MAPPINGS:
        parts = [
            f"{bounded_repr(k, room, depth + 1)}: "
            + (
                REDACTED
                if is_secret_text(k, v)
                else bounded_repr(v, room, depth + 1, k if secret_named(k) else name)
            )
            for k, v in itertools.islice(value.items(), limit)
        ]
    else:
        parts = [bounded_repr(v, room, depth + 1, name) for v in itertools.islice(value, limit)]
    if len(value) > limit:
        parts.append(f"... {len(value) - limit} more")
    trailing = "," if cls is tuple and len(value) == 1 else ""
    return cut(opening + ", ".join(parts) + trailing + closing, room)


def _scalar_repr(value: Any, room: int, depth: int) -> str:
    """The repr of an exact builtin scalar, with the parts that could be huge or the user's
    built here: big integers by size, a slice's fields, a datetime's time zone."""
    cls = type(value)
    if cls is int:
        return _int_text(value)
    if cls is fractions.Fraction:
        return f"Fraction({_int_text(value.numerator)}, {_int_text(value.denominator)})"
    if cls is range:
        ends = [value.start, value.stop] + ([value.step] if value.step != 1 else [])
        return f"range({', '.join(_int_text(end) for end in ends)})"
    if cls is slice:
        fields = (bounded_repr(v, room, depth + 1) for v in (value.start, value.stop, value.step))
        return f"slice({', '.join(fields)})"
    if (cls is datetime.datetime or cls is datetime.time) and not known_zone(value.tzinfo):
        naive = repr(value.replace(tzinfo=None))
        return f"{naive[:-1]}, tzinfo={bounded_repr(value.tzinfo, room, depth + 1)})"
    return repr(value)


def _int_text(number: int) -> str:
    bits = number.bit_length()
    return f"<int of {bits} bits>" if bits > INT_BITS else repr(number)


def _signature(function: Any) -> str:
    """``name(a, b=..., *args, **kw)``: parameter names only, read from the code object (a
    default's repr, a ``__signature__`` or ``__wrapped__`` object is user code)."""
    bound = type(function) is types.MethodType
    target = function.__func__ if bound else function  # a slot of the method
    if type(target) is types.BuiltinFunctionType:
        return _builtin_signature(target)
    if type(target) is not types.FunctionType:
        return "method(...)"
    name = target.__name__
    code = target.__code__
    count, keywords = code.co_argcount, code.co_kwonlyargcount
    names = code.co_varnames
    given = target.__defaults__  # a tuple, or a subclass with its own ``__len__``
    defaults = 0 if given is None else tuple.__len__(given)
    keyword_defaults = _str_keys(target.__kwdefaults__)
    shown = [names[i] + ("=..." if i >= count - defaults else "") for i in range(count)]
    rest = count + keywords
    if code.co_flags & CO_VARARGS:
        shown.append("*" + names[rest])
        rest += 1
    for keyword in names[count : count + keywords]:
        shown.append(keyword + ("=..." if keyword in keyword_defaults else ""))
    if code.co_flags & CO_VARKEYWORDS:
        shown.append("**" + names[rest])
    if bound and count:
        shown.pop(0)  # the instance the method is bound to
    return f"{name}({', '.join(shown)})"


_STARS: dict[Any, str] = {Parameter.VAR_POSITIONAL: "*", Parameter.VAR_KEYWORD: "**"}


def _builtin_signature(function: Any) -> str:
    """A builtin's parameter names, from the text its C code carries. Only for a builtin of a
    module or of a builtin value: ``signature`` asks the object a method is bound to things
    (``isinstance``, which may read a user's ``__class__``)."""
    name = function.__name__
    owner = type(function.__self__)
    builtin = owner in _SCALARS or owner in _TEXTS or _container(owner)
    if not (owner is types.ModuleType or owner is NONE_TYPE or builtin):
        return f"{name}(...)"
    try:
        params = signature(function, follow_wrapped=False).parameters.values()
    except (TypeError, ValueError):
        return f"{name}(...)"
    shown = []
    for p in params:
        default = "=..." if p.default is not Parameter.empty else ""
        shown.append(f"{_STARS.get(p.kind, '')}{p.name}{default}")
    return f"{name}({', '.join(shown)})"


# -- a value that is not a frame or an array, in detail --------------------------------------


def object_detail(value: Any, kind: str, room: int, name: object = None) -> list[str]:
    """The lines under a value's summary: a text's or container's bounded repr (``room``
    characters; ``name`` as in ``bounded_repr``), a class's or function's doc, an object's
    own attributes; none for a scalar or a library ``kind`` (its summary says it all)."""
    cls = type(value)
    if cls in _TEXTS or _container(cls):
        return [one_line(bounded_repr(value, room=room, name=name))]
    if issubclass(cls, type) or cls in FUNCTIONS:
        return _doc_and_members(value)
    if cls in _SCALARS or kind:
        return []
    return _attributes(value)


def _doc_and_members(value: Any) -> list[str]:
    lines = []
    is_class = issubclass(type(value), type)
    # A class's docstring is in its own namespace; a function's is a slot of the function (a
    # bound method's would be looked up on whatever it wraps: only a function's is read).
    target = value.__func__ if type(value) is types.MethodType else value
    doc: Any = None
    if is_class:
        doc = own_entry(value, "__doc__")
    elif type(target) is types.FunctionType or type(target) is types.BuiltinFunctionType:
        doc = target.__doc__
    if type(doc) is str and doc.strip():
        lines.append(cut("doc: " + doc.strip().split("\n\n")[0].replace("\n", " ")))
    if is_class:
        members = [n for n in _own_dict(value) if type(n) is str and not n.startswith("_")]
        if members:
            lines.append(cut(f"members: {', '.join(members)}"))
    return lines


def _attributes(value: Any) -> list[str]:
    """The attributes in ``value.__dict__``, each summarised (a key that is not a string, as
    ``obj.__dict__[key] = ...`` makes, by its bounded repr)."""
    own = _instance_dict(value)
    if own is None:
        return ["(no instance attributes)"]
    lines = ["attributes:"] if own else ["(no instance attributes)"]
    for key, attr in itertools.islice(own.items(), MAX_ATTRIBUTES):
        shown = label_text(key)
        described = guarded(summary, attr, key)
        lines.append(cut(f"  {shown} ({guarded(type_label, attr)}): {described}"))
    if len(own) > MAX_ATTRIBUTES:
        lines.append(f"  [... {len(own) - MAX_ATTRIBUTES} more attributes]")
    return lines


def _instance_dict(value: Any) -> dict[Any, Any] | None:
    """``value.__dict__`` when it is the interpreter's own slot (never a class's property)."""
    cls = type(value)
    for klass in vars(type)["__mro__"].__get__(cls, type):
        entry = own_entry(klass, "__dict__")
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


def own_entry(cls: type, name: str) -> Any:
    """What ``cls``'s own namespace holds under ``name``, or None, without a lookup: a lookup
    compares the keys whose hash is the name's, and a key of the user's (``type("C", (),
    {Key(): 1})``) compares with its own ``__eq__``, which may loop for ever."""
    for key, entry in list(_own_dict(cls).items()):
        if type(key) is str and key == name:
            return entry
    return None


def _str_keys(mapping: Any) -> frozenset[str]:
    """The exact-string keys of a dictionary of the user's (a function's ``__kwdefaults__``,
    which may be a dict subclass), read by ``dict`` itself, so a name is then looked up among
    strings only (see ``own_entry``)."""
    if not issubclass(type(mapping), dict):
        return frozenset()
    return frozenset(key for key in list(dict.keys(mapping)) if type(key) is str)


# -- secrets -----------------------------------------------------------------------------

# Characters read past what is shown, so a secret that starts there is still recognised whole.
_SECRET_MARGIN = 256
_NAMED_SCAN = 1_000  # the start of a value under a secret name that decides if it looks like one


def is_secret_text(name: Any, value: Any) -> bool:
    """Whether text ``value`` is shown as REDACTED: under a ``name`` that says it holds a secret
    (``api_key``, ``"PASSWORD"``, ``self.token``, ``os.environ``'s ``b"GITHUB_TOKEN"``) it looks
    like one; under any name it holds one (``_holds_secret``)."""
    value = plain_text(value)
    if value is None:
        return False
    named = type(name) in _TEXTS and is_secret_name(_text(name[:_NAMED_SCAN]))
    return (named and looks_secret(_text(value[:_NAMED_SCAN]))) or _holds_secret(
        value[: LINE_CHARS + _SECRET_MARGIN]
    )


_SECRET_NAMES_READ = 5_000  # of a namespace's names, looking for secrets held in the kernel
_SECRET_ITEMS_READ = 200  # of one container, or of a frame's column under a secret name
_SECRET_CELLS_READ = 10  # of a frame's other text column: what a printed frame shows of it
_SECRET_COLUMNS_READ = 40  # of a frame
_SECRET_VALUES_READ = 5_000  # values looked at in all: milliseconds, however big the namespace


def kernel_secrets(namespace: Mapping[str, Any]) -> list[str]:
    """The texts the kernel holds that ``inspect`` shows as REDACTED (``db_password``,
    ``config["OPENAI_API_KEY"]``, ``users[0]["password"]``, ``cfg["prod"]["db"]["password"]``,
    ``self.token``, a frame's ``password`` column): what ``execute``'s output is redacted of,
    as the session redacts the environment's. Looks as deep into builtin containers as
    ``inspect`` shows them, and at the first and last rows of a frame's text columns (what a
    printed frame shows). Reads builtin values and pandas' own data only (no user code runs),
    bounded."""
    try:
        items = list(itertools.islice(namespace.items(), _SECRET_NAMES_READ))
    except Exception:  # a namespace changed by another thread meanwhile: nothing read
        return []
    found: set[str] = set()
    looked = [0]

    def take(name: Any, value: Any, depth: int) -> None:
        looked[0] += 1
        if looked[0] > _SECRET_VALUES_READ:
            return
        cls = type(value)
        text = plain_text(value)
        if text is not None:
            if is_secret_text(name, text) and not _everyday_words(name, text):
                found.add(_text(text))
            return
        if depth >= len(_ITEMS):  # inspect shows no text deeper than this
            return
        if cls in _MAPPINGS:
            for key, item in itertools.islice(value.items(), _SECRET_ITEMS_READ):
                take(key if secret_named(key) else name, item, depth + 1)
                if looked[0] > _SECRET_VALUES_READ:
                    return
        elif _container(cls):
            for item in itertools.islice(value, _SECRET_ITEMS_READ):
                take(name, item, depth + 1)
                if looked[0] > _SECRET_VALUES_READ:
                    return
        elif depth == 0 and library_kind(value) in ("frame", "series"):
            kind = library_kind(value)
            frame = bare(value, kind)
            for label, cells in _frame_texts(frame.to_frame() if kind == "series" else frame, name):
                for cell in cells:
                    take(label, cell, depth + 1)
        elif (
            depth == 0
            and cls not in _SCALARS
            and cls not in FUNCTIONS
            and not issubclass(cls, (type, types.ModuleType))
        ):
            own = _instance_dict(value)  # self.token: an attribute under a secret name
            for key, item in itertools.islice((own or {}).items(), _SECRET_ITEMS_READ):
                take(key, item, depth + 1)

    # Names that say they hold secrets first: the budget is spent on them before the rest.
    items.sort(key=lambda item: not secret_named(item[0]))
    for name, value in items:
        if looked[0] > _SECRET_VALUES_READ:
            break
        if type(name) is str and not name.startswith("_"):
            try:
                take(name, value, 0)
            except Exception:  # a container another thread changes meanwhile: the next one
                continue
    return sorted(found)


def _frame_texts(frame: Any, name: Any) -> list[tuple[Any, list[Any]]]:
    """The first and last cells of a plain frame's text columns, each with the name they are
    judged under: a secret column label's (``password``), else the variable's. Many rows of a
    column under a secret name, as many as a printed frame shows of any other."""
    texts = []
    rows = frame.shape[0]
    for i in range(min(frame.shape[1], _SECRET_COLUMNS_READ)):
        column = frame.iloc[:, i]
        if column.dtype.kind != "O":
            continue
        label = frame.columns[i]
        owner = label if secret_named(label) else name
        half = (_SECRET_ITEMS_READ if secret_named(owner) else _SECRET_CELLS_READ) // 2
        cells = column.iloc[:half].tolist() + column.iloc[max(rows - half, half) :].tolist()
        texts.append((owner, cells))
    return texts


# Words and nothing else (``created_at``, ``Transformers``, ``user name``): no credential.
_WORDS_ONLY = re.compile(r"[A-Za-z]+(?:[ _.:/-][A-Za-z]+)*")
_EVERYDAY_SECRET_WORDS = re.compile(r"keys?|tokens?", re.IGNORECASE)


def _everyday_words(name: Any, value: Any) -> bool:
    """Whether text ``value`` is plain words under a name that says "secret" only by a KEY or
    TOKEN in it (a loop's ``key``, a tokenizer's ``tokens``, ``sort_key``): execute's output is
    not redacted of it, as every later "created_at" would be (``inspect`` still hides it)."""
    if type(name) not in _TEXTS or len(value) > _NAMED_SCAN:
        return False
    text = _text(value).strip()
    if _WORDS_ONLY.fullmatch(text) is None or _holds_secret(text):
        return False
    named = _text(name[:_NAMED_SCAN])
    if any(part in named.upper().replace("_", "").replace("-", "") for part in SECRET_PARTS):
        return False  # api_key, secret_token: secret whatever else is in the name
    return not is_secret_name(_EVERYDAY_SECRET_WORDS.sub("_", named))


def secret_named(name: Any) -> bool:
    """Whether ``name`` (a key, a variable's name) says what it holds is a secret."""
    return type(name) in _TEXTS and is_secret_name(_text(name[:_NAMED_SCAN]))


def _holds_secret(value: Any) -> bool:
    """Whether a (short) text holds a URL's password, a secret setting, a private key or a
    credential in a provider's format."""
    return is_secret_variable("", _text(value))


def plain_text(value: Any) -> str | bytes | bytearray | None:
    """Text ``value`` as an exact builtin text, or None when it holds none: a ``str`` subclass
    (numpy's ``str_``, what a frame cell or ``array[0]`` gives) as the ``str`` it holds, read
    by ``str`` itself (its own ``__str__`` or slicing is not called)."""
    cls = type(value)
    if cls in _TEXTS:
        return value  # type: ignore[no-any-return]
    if issubclass(cls, str):
        return str.__str__(value)
    return None


def _text(value: Any) -> str:
    """A str, or bytes read one character a byte."""
    return value if type(value) is str else bytes(value).decode("latin-1")


def without_credentials(text: str) -> str:
    """``text`` with every credential in a provider's format (``sk-...``, ``ghp_...``) redacted,
    wherever it was shown from (a frame's cell, a label, an attribute's name)."""
    found = credentials(text)
    return redact(text, found) if found else text


# -- bounds ------------------------------------------------------------------------------


def counted(number: int, word: str, plural: str = "") -> str:
    """``1 row``, ``3 rows``, ``2 entries``."""
    return f"{number} {word if number == 1 else plural or word + 's'}"


# Line breaks and control characters (terminal codes start with ESC, \x1b): in a line the
# model reads they would start a line of their own or hide text, so they are written escaped.
# A tab is kept: it is how a table's columns may be spaced.
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(text: str) -> str:
    """``text`` as one line: every line break and control character escaped (``\\n``,
    ``\\x1b``), as ``repr`` writes it."""
    if _CONTROL.search(text) is None:
        return text
    return _CONTROL.sub(lambda found: repr(found.group())[1:-1], text)


def cut(text: str, limit: int = LINE_CHARS) -> str:
    """``text`` as one line (``one_line``), cut to ``limit`` characters with ``...`` when
    longer (redacted first: a cut through a secret keeps no piece of it)."""
    text = one_line(text)
    if len(text) > limit:
        text = before_cut(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."
