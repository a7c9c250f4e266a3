"""inspect: the user's kernel variables, listed or one in detail, without running their code.

Without a name, every user variable with its type and a one-line summary
(variables the kernel defined, modules, names starting with ``_`` and keys
that are not strings are left out; functions and classes are named on one
line each). With a name, that variable in detail: a data frame's columns,
dtypes, null counts and head; an array's shape, dtype, first values and
range; a container's items; an object's own attributes. A name that is not
there is NAME_NOT_FOUND with the close names as candidates. A value that
cannot be summarised is listed as such; it never costs the whole listing.

It is a read, and it never runs the user's code: values are recognised by
their exact type and described by tools/values.py (bounded reprs, one-line
summaries, an object's own attributes) and tools/frames.py (a data frame's
or an array's detail), whose contracts say how. This module chooses what to
show and bounds the whole output: variables listed, characters per line,
and characters per listing or detail.
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Set
from typing import TYPE_CHECKING, Any

from grinta_jupyter.runtime.errors import INVALID_ARGS, NAME_NOT_FOUND, Candidate, fail
from grinta_jupyter.tools.base import Args, ReadResult, ToolContext, ToolSpec
from grinta_jupyter.tools.frames import array_detail, frame_detail
from grinta_jupyter.tools.values import (
    FUNCTIONS,
    bare,
    class_names,
    counted,
    cut,
    guarded,
    is_secret_text,
    library_kind,
    object_detail,
    one_line,
    plain_array,
    summary,
    type_label,
    without_credentials,
)
from grinta_jupyter.tools.values import LINE_CHARS as LINE_CHARS  # the per-line bound, re-exported

if TYPE_CHECKING:
    from grinta_jupyter.tools.kernel import Namespace

MAX_VARIABLES = 100
LIST_CHARS = 12_000
DETAIL_CHARS = 8_000


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
    values = _variables(namespace.namespace())
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
        # Names as one line each: one set through globals() may hold a line break.
        listed = (
            f"; variables: {', '.join(map(one_line, shown[:20]))}"
            if shown
            else "; there are none yet"
        )
        hint = f" Did you mean {', '.join(map(one_line, close))}?" if close else ""
        raise fail(
            NAME_NOT_FOUND,
            f"no variable named {name!r} in the kernel{listed}.{hint}",
            [
                Candidate(
                    "<kernel>",
                    0,
                    without_credentials(cut(guarded(summary, values[n], n))),
                    "variable",
                    n,
                )
                for n in close
            ],
        )
    return _bound(without_credentials(detail(name, values[name])), DETAIL_CHARS)


def _variables(live: dict[Any, Any]) -> dict[str, Any]:
    """A snapshot of the namespace's variables (the kernel may add names meanwhile), keyed by
    exact strings only. ``dict(live)`` and ``name in live`` may compare keys whose hashes
    collide, and a key of the user's (``globals()[Key()] = 1``) answers with its own
    ``__eq__``, which may loop for ever: the pairs are read as they are (one C call, no key
    compared), and a dictionary of exact strings compares only strings."""
    return {key: value for key, value in list(live.items()) if type(key) is str}


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
        elif cls in FUNCTIONS:
            functions.append(name)
        else:
            data.append(name)
    if not (data or functions or classes):
        return "no user variables in the kernel yet"
    lines = [
        cut(f"{name} ({guarded(type_label, values[name])}): {guarded(summary, values[name], name)}")
        for name in data[:MAX_VARIABLES]
    ]
    if len(data) > MAX_VARIABLES:
        lines.append(f"[... {len(data) - MAX_VARIABLES} more variables not listed]")
    for label, names in (("functions", functions), ("classes", classes)):
        if names:
            lines.append(cut(f"{label}: {', '.join(names)}"))
    head = f"{counted(len(data), 'variable')} in the kernel"
    return _bound(without_credentials("\n".join([head, *lines])), LIST_CHARS)


def _listed(name: Any, value: Any, hidden: Set[str]) -> bool:
    # A non-str key (``globals()[1] = ...``) is no variable a name could reach (and is not
    # in the snapshot: ``_variables``).
    if type(name) is not str:
        return False
    return not (name.startswith("_") or name in hidden or issubclass(type(value), types.ModuleType))


# -- one variable in detail -----------------------------------------------------------------


def detail(name: str, value: Any) -> str:
    """``name``'s summary line, then the lines that show it in detail (unbounded in total)."""
    head = f"{name} ({guarded(type_label, value)}): {guarded(summary, value, name)}"
    try:
        body = [] if is_secret_text(name, value) else _body(value, name)
    except Exception as exc:  # one odd value: say so rather than fail the read
        body = [f"(cannot be shown in detail: {class_names(type(exc))[1]})"]
    return "\n".join([cut(head), *body])


def _body(value: Any, name: str) -> list[str]:
    kind = library_kind(value)
    if kind == "frame":
        return frame_detail(bare(value, kind), "DataFrame", name)
    if kind == "series":
        return frame_detail(bare(value, kind).to_frame(), "Series", name)
    if kind == "array":
        return array_detail(plain_array(value), name)
    return object_detail(value, kind, room=DETAIL_CHARS // 2, name=name)


# -- bounds ------------------------------------------------------------------------------


def _bound(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    kept = text[:limit].rsplit("\n", 1)[0]
    return f"{kept}\n[... output cut at {limit} characters; inspect one name for more]"
