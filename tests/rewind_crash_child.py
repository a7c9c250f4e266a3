"""Child process for the rewind crash test: three commits, then a rewind to step 0 that
SIGKILLs this process at the durable step named ``argv[2]``.

``list``: rewind fully (in a copy of the workspace) and print the durable steps' labels.
``after``: die once the rewind's transaction is done, before the session logs it.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.session import Session
from grinta_jupyter.runtime.proposal import Observation

ADD = {"path": "pkg/core.py", "old_string": "return a + b", "new_string": "return b + a"}
SUB = {"path": "pkg/core.py", "old_string": "return a - b", "new_string": "return -(b - a)"}
NEW = {"path": "pkg/extra.py", "content": "X = 1\n"}


def main() -> None:
    root, when = Path(sys.argv[1]), sys.argv[2]
    if when == "list":
        copy = Path(tempfile.mkdtemp()) / "ws"
        shutil.copytree(root, copy, symlinks=True)
        root = copy
    model = ScriptedModel(
        [
            reply("", call("replace_string", **ADD)),
            reply("", call("replace_string", **SUB)),
            reply("", call("create", **NEW)),
        ]
    )
    session = Session("three", model=model, root=root, policy="auto").run_sync()
    assert len([s for s in session.steps if s.observation and s.observation.ok]) == 3
    labels: list[str] = []

    def hook(label: str) -> None:
        labels.append(label)
        if label == when:
            os.kill(os.getpid(), signal.SIGKILL)

    undo_commits = session.runtime.undo_commits

    def undo_and_maybe_die(commit_ids: list[str], **kwargs: Any) -> Observation:
        done = undo_commits(commit_ids, hook=hook)
        if when == "after":
            os.kill(os.getpid(), signal.SIGKILL)
        return done

    session.runtime.undo_commits = undo_and_maybe_die  # type: ignore[method-assign]
    session.rewind(0)
    print(" ".join(labels))


if __name__ == "__main__":
    main()
