"""The ``broad`` toolset: the overlapping surface agents tend to grow into.

It exists for the harness experiment (docs/experiment.md): ten ways to write
a file, several of them interchangeable. Every tool stages through the same
runtime as the intent tools, so safety (paths, validation, atomic commits)
is identical and only the action space differs.
"""

from __future__ import annotations

from grinta_jupyter.tools.base import Toolset


def broad_toolset() -> Toolset:
    from grinta_jupyter.tools import finish, read, run, search
    from grinta_jupyter.tools.broad import (
        heredoc,
        lines,
        patch,
        str_replace,
        symbols,
        write_file,
        xml_edit,
    )

    return Toolset.of(
        "broad",
        [
            read.SPEC,
            search.SPEC,
            write_file.SPEC,
            patch.SPEC,
            lines.REPLACE_SPEC,
            lines.INSERT_SPEC,
            str_replace.SPEC,
            symbols.REPLACE_SPEC,
            symbols.INSERT_SPEC,
            symbols.DELETE_SPEC,
            xml_edit.SPEC,
            heredoc.SPEC,
            run.SPEC,
            finish.SPEC,
        ],
    )
