"""The garbage collector paused by several of grinta's threads at once (``runtime/collector.py``).

The symbol index pauses it while it loads its store, every parse pauses it while the tree is
built (``runtime/pyast.py``); these run in threads of their own, beside the kernel's, and
must never leave the kernel's collector off, nor let it run inside a pause.
"""

from __future__ import annotations

import contextlib
import gc
import sys
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from grinta_jupyter.runtime import collector
from tests.test_ast_threads import in_a_fork, package_lines


@pytest.fixture
def collecting() -> Iterator[None]:
    assert gc.isenabled()
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)
        gc.enable()


def test_pauses_overlapping_in_many_threads_leave_the_collector_on(collecting: None) -> None:
    seen_on: list[int] = []
    deadline = time.monotonic() + 1.5

    def pause_again_and_again(index: int) -> None:
        while time.monotonic() < deadline:
            with collector.paused():
                for _ in range(50):  # bytecode: room for other threads to end their pauses
                    pass
                if gc.isenabled():
                    seen_on.append(index)
                with collector.paused():  # nested in one thread
                    if gc.isenabled():
                        seen_on.append(index)

    threads = [threading.Thread(target=pause_again_and_again, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen_on == [], "the collector ran inside a pause"
    assert gc.isenabled(), "the collector was left off"


def test_a_collector_the_kernel_turned_off_stays_off(collecting: None) -> None:
    gc.disable()
    with collector.paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_a_pause_that_raises_still_ends(collecting: None) -> None:
    with pytest.raises(KeyError), collector.paused():
        raise KeyError("x")
    assert gc.isenabled()
    with collector.paused():
        assert not gc.isenabled()
    assert gc.isenabled()


@contextlib.contextmanager
def held_in_a_thread(
    pause: Callable[[], contextlib.AbstractContextManager[None]],
) -> Iterator[None]:
    """``pause`` open in another thread for as long as the block runs."""
    inside, done = threading.Event(), threading.Event()

    def hold() -> None:
        with pause():
            inside.set()
            done.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    inside.wait(30)
    try:
        yield
    finally:
        done.set()
        thread.join()


def _state() -> list[object]:
    return [gc.isenabled(), list(gc.get_threshold())]


def test_a_process_forked_during_another_threads_pause_collects(collecting: None) -> None:
    before = _state()
    with held_in_a_thread(collector.paused):
        assert not gc.isenabled()

        def child() -> object:
            after_fork = _state()
            with collector.paused():  # the lock is free in the child
                inside = gc.isenabled()
            return [after_fork, inside, _state()]

        assert in_a_fork(child) == [before, False, before]
        assert not gc.isenabled(), "the parent's pause goes on"
    assert gc.isenabled()


def test_a_process_forked_inside_its_own_pause_ends_that_pause(collecting: None) -> None:
    with collector.paused():
        assert in_a_fork(lambda: gc.isenabled()) is False
    assert gc.isenabled()

    def child() -> object:
        with collector.paused():
            pass
        return gc.isenabled()

    with collector.paused():
        assert in_a_fork(child) is False  # its own pause still open in the child
        assert in_a_fork(lambda: list(collector._pausing.values())) == [threading.get_ident()]


def test_a_process_forked_during_the_warmings_pause_makes_full_passes(collecting: None) -> None:
    before = _state()
    with held_in_a_thread(collector.full_passes_paused):
        assert gc.get_threshold()[2] > 1_000_000
        assert in_a_fork(_state) == before
    assert _state() == before


def test_a_fork_leaves_a_collector_turned_off_by_the_kernel_off(collecting: None) -> None:
    with collector.paused():  # an earlier pause that found the collector on
        pass
    gc.disable()
    assert in_a_fork(gc.isenabled) is False
    with held_in_a_thread(collector.paused):
        assert in_a_fork(gc.isenabled) is False
    assert not gc.isenabled()


def test_only_the_counted_pause_turns_the_collector_off_or_on() -> None:
    """Another ``gc.disable()``/``gc.enable()`` pair in the package would bring back the race
    the count closes: a flag remembered while another thread had it off, put back for good."""
    assert package_lines(r"\bgc\.(disable|enable|set_threshold)\(", but="collector.py") == []
