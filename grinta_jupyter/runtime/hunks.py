"""Hunks of a write proposal, and the text a choice of them gives (per-hunk approval).

Hunks are numbered from 0 in the order they appear in ``proposal.diff``,
counting across files. They come from the same computation as the diff
(``diffs.unified_diff``), so hunk ``k`` here is the ``k``-th ``@@`` header
there. A new file is one hunk (an empty new file too: its diff shows
``@@ -0,0 +0,0 @@`` and no rows, so a card that counts the ``@@`` lines of
``proposal.diff`` numbers the hunks as this module does).

Applying a choice works on lines with their endings (``split_keepends``): an
accepted hunk contributes its new lines, a declined one its old lines, and
the lines between hunks are the same on both sides. So line endings, a
missing final newline and every byte outside the accepted hunks stay as they
were; the runtime encodes the result with the file's own conventions (BOM).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from grinta_jupyter.runtime.diffs import HunkSpan, split_keepends, unified_diff

if TYPE_CHECKING:
    from grinta_jupyter.runtime.proposal import FileChange, Proposal


@dataclass(frozen=True)
class Hunk:
    """One hunk of a proposal, as a reviewer is shown it ("hunk 2 of 5 in a.py")."""

    index: int  # 0-based, across every file of the proposal, in diff order
    path: str
    header: str  # the "@@ -a,b +c,d @@" line
    lines: tuple[str, ...]  # its rows: " " context, "-" removed, "+" added, "\\" notes
    # The file does not exist yet: shown hunk by hunk, "@@ -0,0 +1,2 @@" alone reads as
    # lines added at the top of a file that is there.
    new_file: bool = False

    @property
    def diff(self) -> str:
        """The hunk as unified diff text (header and rows)."""
        return "\n".join((self.header, *self.lines)) + "\n"


def file_hunks(change: FileChange) -> tuple[HunkSpan, ...]:
    """The hunks of one file's change, in diff order."""
    return unified_diff(change.path, change.before, change.after).hunks


def hunks(proposal: Proposal) -> list[Hunk]:
    """Every hunk of ``proposal`` (none for a proposal that changes no file)."""
    found: list[Hunk] = []
    for change in proposal.changes:
        for span in file_hunks(change):
            found.append(
                Hunk(len(found), change.path, span.header, span.lines, change.before is None)
            )
    return found


def apply_hunks(
    before: str | None, after: str | None, spans: Sequence[HunkSpan], accepted: Iterable[int]
) -> str:
    """The text with only the ``accepted`` hunks (indexes into ``spans``) of ``before`` -> ``after``.

    ``before`` is None for a new file: its one hunk is the whole text (``after`` is None
    only for a deletion, which no tool stages).
    """
    chosen = set(accepted)
    old = split_keepends(before or "")
    new = split_keepends(after or "")
    out: list[str] = []
    at = 0  # the next old line not yet copied
    for k, span in enumerate(spans):
        out.extend(old[at : span.old_start])
        if k in chosen:
            out.extend(new[span.new_start : span.new_end])
        else:
            out.extend(old[span.old_start : span.old_end])
        at = span.old_end
    out.extend(old[at:])
    return "".join(out)
