"""The garbage collector paused by several of grinta's threads at once (``runtime/collector.py``).

The symbol index pauses it while it loads its store, every parse pauses it while the tree is
built (``runtime/pyast.py``); these run in threads of their own, beside the kernel's, and
must never leave the kernel's collector off, nor let it run inside a pause.
"""

from __future__ import annotations

import gc
import re
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import grinta_jupyter
from grinta_jupyter.runtime import collector


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


def test_only_the_counted_pause_turns_the_collector_off_or_on() -> None:
    """Another ``gc.disable()``/``gc.enable()`` pair in the package would bring back the race
    the count closes: a flag remembered while another thread had it off, put back for good."""
    package = Path(grinta_jupyter.__file__).parent
    raw = re.compile(r"\bgc\.(disable|enable)\(")
    offenders = [
        f"{path.relative_to(package)}:{number}"
        for path in sorted(package.rglob("*.py"))
        if path.name != "collector.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if raw.search(line.split("#", 1)[0])
    ]
    assert offenders == []
