"""Recent answers, kept within a bound (the runtime's caches of layouts and syntax checks).

A ``Recent`` keeps at most ``size`` entries and forgets the one used longest ago. It is
safe from any thread: the session, the symbol index and the checks share these caches.
Keys should be digests, not texts: a few cached texts of large files would keep megabytes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
D = TypeVar("D")


class Recent(Generic[K, V]):
    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K, default: D) -> V | D:
        """The value kept for ``key`` (now the most recently used), else ``default``."""
        with self._lock:
            if key not in self._items:
                return default
            self._items.move_to_end(key)
            return self._items[key]

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` is kept (without counting as a use)."""
        with self._lock:
            return key in self._items

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
