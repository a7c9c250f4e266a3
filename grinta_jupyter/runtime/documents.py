"""Documents a person has open while the agent writes files (JupyterLab, Notebook 7).

A commit must not race an editor: writing a file that is open with unsaved
changes would leave two versions, and whichever is saved last silently wins.
So before a write is committed the runtime asks its ``OpenDocuments`` (if it
has one) which of the files are open with unsaved changes, and refuses the
whole commit (DOCUMENT_UNSAVED, nothing written) when any is. After a commit
it tells the documents which files changed, so an open editor shows the new
content at once instead of a "file changed on disk" dialog.

The runtime stays headless: the Jupyter layer implements this protocol over a
comm with the labextension (jupyter/documents.py). Paths are
workspace-relative, as everywhere in the runtime.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class OpenDocuments(Protocol):
    """What the runtime needs to know about documents open in a front end."""

    def unsaved(self, paths: Sequence[str]) -> list[str]:
        """Those of ``paths`` that are open with unsaved changes (bounded in time:
        a front end that does not answer counts as having none open). Raising is not
        an answer: the runtime then refuses the write, since nobody knows."""
        ...

    def changed(self, paths: Sequence[str]) -> None:
        """``paths`` were just written: reload them where they are open (never blocks long)."""
        ...
