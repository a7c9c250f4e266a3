"""Model-facing tools, one module each, and the toolsets that group them."""

from __future__ import annotations

from collections.abc import Callable

from grinta_jupyter.tools.base import Settings, ToolContext, Toolset, ToolSpec


def intent_toolset() -> Toolset:
    """The default: few tools, each with one clear intent."""
    from grinta_jupyter.tools import (
        create,
        edit_symbols,
        finish,
        multiedit,
        read,
        replace_string,
        run,
        search,
    )

    return Toolset.of(
        "intent",
        [
            read.SPEC,
            search.SPEC,
            create.SPEC,
            replace_string.SPEC,
            edit_symbols.SPEC,
            multiedit.SPEC,
            run.SPEC,
            finish.SPEC,
        ],
    )


def broad_toolset() -> Toolset:
    """The overlapping surface, for the harness experiment (tools/broad/)."""
    from grinta_jupyter.tools.broad import broad_toolset as build

    return build()


TOOLSETS: dict[str, Callable[[], Toolset]] = {"intent": intent_toolset, "broad": broad_toolset}


def get_toolset(name: str) -> Toolset:
    try:
        return TOOLSETS[name]()
    except KeyError:
        raise ValueError(
            f"unknown toolset {name!r}; known: {', '.join(sorted(TOOLSETS))}"
        ) from None


__all__ = [
    "Settings",
    "TOOLSETS",
    "ToolContext",
    "ToolSpec",
    "Toolset",
    "get_toolset",
    "intent_toolset",
]
