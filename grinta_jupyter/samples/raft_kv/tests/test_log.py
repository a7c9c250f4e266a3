import pytest

from raft_kv.log import Entry, RaftLog


def log_with_terms(*terms: int) -> RaftLog:
    return RaftLog(
        Entry(term=term, index=index, command=f"set k{index} v{index}")
        for index, term in enumerate(terms, start=1)
    )


def test_empty_log_has_a_sentinel_at_index_zero() -> None:
    log = RaftLog()
    assert (log.last_index, log.last_term) == (0, 0)
    assert log.term_at(0) == 0


def test_append_command_takes_the_next_index() -> None:
    log = RaftLog()
    first = log.append_command(1, "set a 1")
    second = log.append_command(2, "set b 2")
    assert (first.index, second.index) == (1, 2)
    assert (log.last_index, log.last_term) == (2, 2)
    assert log[2] == Entry(term=2, index=2, command="set b 2")


def test_append_refuses_a_gap() -> None:
    log = log_with_terms(1)
    with pytest.raises(ValueError, match="does not follow"):
        log.append(Entry(term=1, index=3))


def test_append_refuses_an_older_term() -> None:
    log = log_with_terms(1, 3)
    with pytest.raises(ValueError, match="older"):
        log.append(Entry(term=2, index=3))


def test_term_at_a_missing_index_raises() -> None:
    log = log_with_terms(1, 1)
    assert log.term_at(2) == 1
    with pytest.raises(IndexError):
        log.term_at(3)


def test_slices_use_raft_indices() -> None:
    log = log_with_terms(1, 1, 2, 3)
    assert [entry.index for entry in log[2:4]] == [2, 3]
    assert [entry.index for entry in log[3:]] == [3, 4]
    assert log[5:] == []
    with pytest.raises(IndexError):
        log[0:2]


def test_entries_from_respects_the_limit() -> None:
    log = log_with_terms(1, 1, 1, 1, 1)
    assert [entry.index for entry in log.entries_from(2, limit=2)] == [2, 3]
    assert [entry.index for entry in log.entries_from(4)] == [4, 5]


def test_truncate_from_drops_the_suffix() -> None:
    log = log_with_terms(1, 1, 2, 2)
    removed = log.truncate_from(3)
    assert [entry.index for entry in removed] == [3, 4]
    assert (log.last_index, log.last_term) == (2, 1)
    log.append(Entry(term=3, index=3))
    assert log.last_term == 3


def test_first_index_in_term_finds_the_start_of_a_run() -> None:
    log = log_with_terms(1, 2, 2, 2, 3)
    assert log.first_index_in_term(4) == 2
    assert log.first_index_in_term(5) == 5
    assert log.first_index_in_term(1) == 1


def test_contains_compares_term_and_index() -> None:
    log = log_with_terms(1, 2)
    assert log[2] in log
    assert Entry(term=3, index=2, command="set k2 v2") not in log
    assert Entry(term=2, index=3) not in log
