"""``exit()`` asks the kernel to exit only from the kernel's own threads.

Before stop 32 a thread started by code the agent ran (``execute {"code": "threading.Thread(
target=exit).start()"}``) outlived that code, and its ``exit()`` ended the kernel after the
current cell: only the executing thread itself was contained."""

from __future__ import annotations

import threading

from grinta_jupyter.jupyter.kernel import _ContainedExit


def run_in_thread(target, thread_class=threading.Thread) -> list[BaseException]:  # type: ignore[no-untyped-def]
    raised: list[BaseException] = []

    def body() -> None:
        try:
            target()
        except BaseException as exc:  # noqa: BLE001 - what the thread would die of
            raised.append(exc)

    thread = thread_class(target=body)
    thread.start()
    thread.join(10)
    return raised


def test_exit_from_a_thread_of_the_users_code_ends_that_thread_not_the_kernel():
    asked: list[bool] = []
    contained = _ContainedExit(lambda: asked.append(True))
    raised = run_in_thread(contained)
    assert asked == [] and len(raised) == 1 and isinstance(raised[0], SystemExit)


def test_exit_from_the_main_thread_asks_the_kernel_to_exit():
    asked: list[bool] = []
    _ContainedExit(lambda: asked.append(True))()
    assert asked == [True]


def test_exit_from_a_subshell_thread_asks_the_kernel_to_exit():
    from ipykernel.thread import BaseThread

    class Subshell(BaseThread):  # ipykernel's subshells run cells in such threads
        def run(self) -> None:  # the cell's code, not an event loop
            try:
                threading.Thread.run(self)
            finally:
                self.io_loop.close()

    asked: list[bool] = []
    raised = run_in_thread(_ContainedExit(lambda: asked.append(True)), Subshell)
    assert asked == [True] and raised == []
