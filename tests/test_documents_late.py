"""Commits decided in one busy cell ask the pages which of them are there once, not once each.

While a cell holds the kernel's loop, a commit is decided from the pages' pushes; the
question it could not ask goes out when the loop is free, only to learn which pages are
still there (a page gone has its push forgotten). Twenty commits in one cell used to send
forty such questions at once (each commit's check and its reload asked one), every page
answering each on a comm of its own. One is enough: they would all learn the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.test_documents_manual import (
    TARGET,
    Page,
    busy_unsaved,
    kernel,
    listening,
    pump,
    run,
    served,
)

__all__ = ["kernel", "served"]  # fixtures, reused


class CountingPage(Page):
    """A page that counts the kernel's questions."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.asked = 0

    def handle(self, message: dict[str, Any]) -> None:
        content = message["content"]
        if message["msg_type"] == "comm_open" and content.get("target_name") == TARGET:
            self.asked += 1
        super().handle(message)


BUSY_COMMITS = """
import threading
def _commit():
    docs.unsaved(["a.py"])
    docs.changed(["a.py"])
_ts = [threading.Thread(target=_commit) for _ in range({n})]
with loop_held():
    [t.start() for t in _ts]; [t.join() for t in _ts]
"""


def test_commits_in_one_busy_cell_ask_once_after_it(kernel: Any, served: Path) -> None:
    page = CountingPage(kernel, served)
    listening(kernel, page, timeout=0.3)
    page.push(a_py=False)
    run(kernel, BUSY_COMMITS.format(n=20), page)
    pump(kernel, 1.0, page)  # the question is asked, answered and ended
    assert page.asked == 1, page.asked
    assert page.reloads, "the writes were reloaded after the cell"


def test_a_page_gone_is_still_forgotten_after_a_busy_cell_of_many_commits(
    kernel: Any, served: Path
) -> None:
    """The one question still does what each did: a page that does not answer it (its tab
    closed) has its push forgotten, so its unsaved file is writable again."""
    page = CountingPage(kernel, served)
    listening(kernel, page, timeout=0.3)
    page.push(a_py=True)
    assert busy_unsaved(kernel, page)[0] == ["a.py"]
    pump(kernel, 1.0, page)  # its question is answered and ended
    page.answers = False  # the tab closes
    run(kernel, BUSY_COMMITS.format(n=5), page)
    pump(kernel, 1.0, page)
    assert page.asked == 2, page.asked  # after each busy cell, once
    assert busy_unsaved(kernel, page)[0] == []


def test_a_second_busy_cell_while_the_question_is_out_asks_no_other(
    kernel: Any, served: Path
) -> None:
    page = CountingPage(kernel, served)
    listening(kernel, page, timeout=0.3)
    page.push(a_py=False)
    run(kernel, BUSY_COMMITS.format(n=3), page)
    run(kernel, BUSY_COMMITS.format(n=3), page)  # right after: the first question is out
    pump(kernel, 1.0, page)
    assert page.asked == 1, page.asked
    run(kernel, BUSY_COMMITS.format(n=3), page)  # once it ended, the next cell asks again
    pump(kernel, 1.0, page)
    assert page.asked == 2, page.asked
