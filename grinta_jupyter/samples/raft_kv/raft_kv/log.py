"""The replicated log: an ordered list of entries, each stamped with the term it was created in.

Indices start at 1, as in the Raft paper. Index 0 is a sentinel with term 0, so
the first AppendEntries request has a well-defined ``prev_log_index`` and
``prev_log_term`` without special cases.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import overload


@dataclass(frozen=True)
class Entry:
    """One log entry: ``command`` proposed by the leader of ``term``, stored at ``index``.

    ``command`` is None for the no-op entry a new leader appends so that entries
    left over from earlier terms can commit (§8); it is never applied.
    """

    term: int
    index: int
    command: str | None = None


class RaftLog:
    """An in-memory log with 1-based indices.

    In a real deployment this is persistent state, written to disk before any
    reply that depends on it is sent.
    """

    def __init__(self, entries: Iterable[Entry] = ()) -> None:
        self._entries: list[Entry] = []
        for entry in entries:
            self.append(entry)

    @property
    def last_index(self) -> int:
        """Index of the last entry, 0 when the log is empty."""
        return len(self._entries)

    @property
    def last_term(self) -> int:
        """Term of the last entry, 0 when the log is empty."""
        return self._entries[-1].term if self._entries else 0

    def term_at(self, index: int) -> int:
        """Term of the entry at ``index`` (0 for the sentinel at index 0).

        Raises IndexError when the log has no entry there.
        """
        if index == 0:
            return 0
        return self[index].term

    def first_index_in_term(self, index: int) -> int:
        """The first index of the run of same-term entries that ends at ``index``."""
        term = self.term_at(index)
        while index > 1 and self.term_at(index - 1) == term:
            index -= 1
        return index

    def append(self, entry: Entry) -> None:
        """Add ``entry`` at the end; it must take the next index and not lower the term."""
        if entry.index != self.last_index + 1:
            raise ValueError(
                f"entry {entry.index} does not follow the last index {self.last_index}"
            )
        if entry.term < self.last_term:
            raise ValueError(
                f"entry term {entry.term} is older than the last term {self.last_term}"
            )
        self._entries.append(entry)

    def append_command(self, term: int, command: str | None) -> Entry:
        """Create the next entry for ``command`` in ``term``, append it and return it."""
        entry = Entry(term=term, index=self.last_index + 1, command=command)
        self.append(entry)
        return entry

    def entries_from(self, index: int, limit: int | None = None) -> list[Entry]:
        """Entries from ``index`` to the end, at most ``limit`` of them."""
        stop = None if limit is None else index + limit
        return self[index:stop]

    def truncate_from(self, index: int) -> list[Entry]:
        """Delete the entry at ``index`` and every entry after it; return what was removed."""
        if index < 1:
            raise ValueError(f"cannot truncate from index {index}: indices start at 1")
        removed = self._entries[index - 1 :]
        del self._entries[index - 1 :]
        return removed

    def __contains__(self, entry: object) -> bool:
        if not isinstance(entry, Entry) or not 1 <= entry.index <= self.last_index:
            return False
        return self[entry.index] == entry

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._entries)

    @overload
    def __getitem__(self, index: int) -> Entry: ...

    @overload
    def __getitem__(self, index: slice) -> list[Entry]: ...

    def __getitem__(self, index: int | slice) -> Entry | list[Entry]:
        """Look up by Raft index: ``log[3]`` is the entry at index 3; ``log[2:4]`` at 2 and 3."""
        if isinstance(index, slice):
            if index.step is not None:
                raise ValueError("log slices do not take a step")
            start = 1 if index.start is None else index.start
            stop = self.last_index + 1 if index.stop is None else index.stop
            if start < 1 or stop < 0:
                raise IndexError(f"log slice {start}:{stop} reaches before index 1")
            return self._entries[start - 1 : max(stop - 1, 0)]
        if not 1 <= index <= self.last_index:
            raise IndexError(f"no entry at index {index} (last index is {self.last_index})")
        return self._entries[index - 1]

    def __repr__(self) -> str:
        terms = ", ".join(str(entry.term) for entry in self._entries)
        return f"RaftLog(terms=[{terms}])"
