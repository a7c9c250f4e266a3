"""Resolving symbol addresses for writes: exactly one definition, or a refusal with candidates.

Reads may search; writes must target. The index answers for the files on
disk; once a proposal has staged changes to a file, later edits in the same
proposal locate their definition again in the staged text (same qualified
name, same position among same-named definitions).
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING

from grinta_jupyter.runtime.errors import (
    AMBIGUOUS_SYMBOL,
    FILE_NOT_FOUND,
    SYMBOL_NOT_FOUND,
    Candidate,
    ToolError,
    ToolFailure,
    fail,
)
from grinta_jupyter.runtime.resolution import Resolution
from grinta_jupyter.runtime.textfile import BOM
from grinta_jupyter.tools.base import StagedFile, ToolContext

if TYPE_CHECKING:
    from grinta_jupyter.code.symbols import Symbol

# An address such as `__init__` may name thousands of definitions: name this many, count the rest.
MAX_LISTED = 10


def symbol_candidate(symbol: Symbol) -> Candidate:
    return Candidate(
        symbol.location, symbol.def_line, symbol.signature, kind=symbol.kind, name=symbol.qualname
    )


def resolve_symbol(ctx: ToolContext, address: str, *, write: bool) -> tuple[Symbol, Resolution]:
    """The one definition ``address`` names and how it was resolved, or a ToolFailure
    listing what it could mean (carrying the failed resolution).

    Reads and writes resolve the same way; only the advice differs, since a
    write never guesses while a read may simply be repeated more precisely.
    """
    address, line = _at_line(address)
    address = _in_workspace(ctx, address, write=write)
    found = ctx.symbols.resolve(address)
    elsewhere = False  # definitions of the name exist, none on the line
    if line is not None:  # "m.py::f@7": the one of several with one name defined on line 7
        here = [m for m in found.matches if m.def_line == line]
        elsewhere = bool(found.matches) and not here
        if elsewhere:
            found = dataclasses.replace(found, matches=[], suggestions=found.matches)
        else:  # on the line, or no such name at all (its closest names stay the advice)
            found = dataclasses.replace(found, matches=here)
        address = f"{address}@{line}"
    if not found.matches:
        resolution = Resolution(
            address,
            None,
            "no definition has this name",
            tuple(_label(s) for s in found.suggestions),
        )
        hint = "; closest names below" if found.suggestions else ""
        named = f"no definition named {address!r}{hint}"
        if elsewhere:
            named = (
                f"no definition named {address.rpartition('@')[0]!r} is on line {line}; "
                "those with the name are below (the line a candidate shows picks it)"
            )
        error = ToolError(
            SYMBOL_NOT_FOUND,
            named,
            tuple(symbol_candidate(s) for s in found.suggestions),
        )
        raise ToolFailure(error, (resolution,))
    count = len(found.matches)
    if count > 1:
        why = "writes never guess" if write else "reads return the candidates"
        listed = found.matches[:MAX_LISTED]
        resolution = Resolution(  # the reason gives the count; the first few are named
            address,
            None,
            f"ambiguous: {count} definitions; {why}",
            tuple(_label(s) for s in listed),
        )
        verb = "name one exactly" if write else "read one"
        first = listed[0]
        # One name in one file (overloads, a redefinition): only the line tells them apart.
        same = all(m.address == first.address for m in listed)
        example = f"{first.address}@{first.def_line}" if same else "path::Class.method"
        error = ToolError(
            AMBIGUOUS_SYMBOL,
            f"{address!r} names {count} definitions; {verb}, e.g. {example!r}",
            tuple(symbol_candidate(s) for s in listed),
            more=count - len(listed),
        )
        raise ToolFailure(error, (resolution,))
    symbol = found.matches[0]
    why = "the only definition with this name"
    if found.passed_over:  # the reviewer must not read "the only one" when there are others
        others = ", ".join(_label(s) for s in found.passed_over[:3])
        more = len(found.passed_over) - 3
        why = (
            f"the one definition named exactly so; not {others}"
            + (f" and {more} more" if more > 0 else "")
            + " (their names only end in it: name one of those in full to edit it)"
        )
    return symbol, Resolution(address, _label(symbol), why)


_LINE = re.compile(r"@([0-9]{1,9})\s*$")


def _at_line(address: str) -> tuple[str, int | None]:
    """``address`` without a trailing ``@LINE`` (the line a candidate list shows), and it."""
    found = _LINE.search(address)
    if found is None:
        return address, None
    return address[: found.start()], int(found.group(1))


def resolve_for_write(ctx: ToolContext, address: str) -> tuple[Symbol, Resolution]:
    return resolve_symbol(ctx, address, write=True)


def _in_workspace(ctx: ToolContext, address: str, *, write: bool) -> str:
    """``address`` with its path part checked as the file tools check a path (outside the
    workspace, forbidden, missing: refused by its path, not as an unknown name) and spelled
    as the index spells it (an absolute path inside the workspace, ``./x.py``)."""
    from grinta_jupyter.code.index import parse_address

    path, qualname = parse_address(address)
    if path is None:
        return address
    where = ctx.workspace.resolve(path, write=write)
    if not where.abs.is_file():
        raise fail(
            FILE_NOT_FOUND,
            f"{path} is not a file in the workspace; name a definition as 'path::name' "
            "with the path of an existing file, or by its name alone",
        )
    return address if where.rel == path else f"{where.rel}::{qualname}"


def _label(symbol: Symbol) -> str:
    return f"{symbol.location}:{symbol.def_line} {symbol.kind} {symbol.qualname}"


def locate_in_staged(staged: StagedFile, symbol: Symbol) -> Symbol:
    """``symbol`` as it stands in the staged text (which earlier edits may have moved).

    A definition the earlier edits left alone (all of them above it, or all below) is
    found at its shifted offset. One they touched is found by its position among the
    definitions sharing its name, and only while they still number as many: an earlier
    edit that added or removed one would make that position name another definition.
    """
    original = staged.original
    if original is not None and staged.text == original.text:
        return symbol
    old = original.text if original is not None else ""
    # The index counts bytes on disk, a BOM included; the staged text has none.
    bom = len(BOM) if original is not None and original.bom else 0
    start, end = symbol.start_byte - bom, symbol.end_byte - bom
    before = _same_named(old, symbol)
    now = _same_named(staged.text, symbol)
    old_bytes = old.encode("utf-8", "surrogatepass")
    new_bytes = staged.text.encode("utf-8", "surrogatepass")
    # Text inserted next to a copy of itself can be aligned two ways; a definition found
    # untouched under both, at two places, is not told apart by its offset.
    moved = {
        _moved_offset(start, end, old_bytes, new_bytes, head, tail)
        for head, tail in _unchanged_ends(old_bytes, new_bytes)
    }
    hits = [s for s in now if s.start_byte in moved]
    if len(hits) == 1:
        return hits[0]
    ordinal = next((i for i, s in enumerate(before) if s.start_byte == start), None)
    if ordinal is None or ordinal >= len(now):
        raise fail(
            SYMBOL_NOT_FOUND, f"{symbol.qualname} is gone after an earlier edit in this call"
        )
    if len(now) != len(before):
        raise ToolFailure(
            ToolError(
                AMBIGUOUS_SYMBOL,
                f"an earlier edit in this call made {symbol.qualname!r} name {len(now)} "
                f"definitions where the file has {len(before)}, so which one is meant is "
                "not known; edit it in a call of its own",
                tuple(symbol_candidate(s) for s in now[:MAX_LISTED]),
                more=max(0, len(now) - MAX_LISTED),
            )
        )
    return now[ordinal]


def _moved_offset(start: int, end: int, old: bytes, new: bytes, head: int, tail: int) -> int:
    """Where bytes ``start:end`` of ``old`` are in ``new`` when ``old[:head]`` and the last
    ``tail`` bytes are what the two share (-1: the span overlaps what changed)."""
    if end <= head:
        return start
    if start >= len(old) - tail:
        return start + len(new) - len(old)
    return -1


def _unchanged_ends(old: bytes, new: bytes) -> tuple[tuple[int, int], tuple[int, int]]:
    """The (head, tail) byte counts ``old`` and ``new`` share at their start and end, the
    head measured first and then the tail, and the other way round."""
    limit = min(len(old), len(new))
    head = _shared(old, new, limit, at_end=False)
    tail = _shared(old, new, limit, at_end=True)
    return (
        (head, _shared(old, new, limit - head, at_end=True)),
        (_shared(old, new, limit - tail, at_end=False), tail),
    )


def _shared(old: bytes, new: bytes, limit: int, *, at_end: bool) -> int:
    """How many bytes (at most ``limit``) ``old`` and ``new`` share at their start or end,
    by bisection: slices compare in C, a byte loop would take a second on a large file."""
    low, high = 0, limit
    while low < high:
        middle = (low + high + 1) // 2
        if at_end:
            same = old[len(old) - middle :] == new[len(new) - middle :]
        else:
            same = old[:middle] == new[:middle]
        if same:
            low = middle
        else:
            high = middle - 1
    return low


def _same_named(text: str, symbol: Symbol) -> list[Symbol]:
    """The definitions in ``text`` sharing ``symbol``'s qualified name and kind (overloads), in order."""
    from grinta_jupyter.code.symbols import extract_symbols

    return [
        s
        for s in extract_symbols(symbol.path, text.encode("utf-8"), symbol.language)
        if s.qualname == symbol.qualname and s.kind == symbol.kind
    ]
