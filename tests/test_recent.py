"""``runtime/recent.py``: the bounded caches of layouts and syntax checks."""

from __future__ import annotations

import threading

from grinta_jupyter.runtime.recent import Recent


def test_the_entry_used_longest_ago_is_forgotten_first() -> None:
    recent: Recent[str, int] = Recent(3)
    for number, key in enumerate("abc"):
        recent.put(key, number)
    assert recent.get("a", -1) == 0  # "a" is now the most recently used
    recent.put("d", 3)
    assert "b" not in recent and [recent.get(key, -1) for key in "acd"] == [0, 2, 3]
    recent.put("c", 20)  # a value put again is a use, and replaces the old one
    recent.put("e", 4)
    assert "a" not in recent and recent.get("c", -1) == 20


def test_none_is_a_value_not_a_miss() -> None:
    recent: Recent[str, int | None] = Recent(2)
    missing = object()
    recent.put("checked", None)
    assert recent.get("checked", missing) is None
    assert recent.get("never", missing) is missing
    recent.clear()
    assert "checked" not in recent


def test_many_threads_never_see_a_wrong_value_nor_exceed_the_bound() -> None:
    recent: Recent[tuple[int, int], int] = Recent(8)
    failures: list[str] = []

    def work(thread: int) -> None:
        for step in range(3000):
            recent.put((thread, step), step)
            got = recent.get((thread, step), -1)
            if got not in (step, -1):  # it may be pushed out by others, never changed
                failures.append(f"{thread}:{step}:{got}")

    threads = [threading.Thread(target=work, args=(number,)) for number in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    kept = [
        (thread, step) for thread in range(4) for step in range(3000) if (thread, step) in recent
    ]
    assert 1 <= len(kept) <= 8
