from collections.abc import Sequence

from raft_kv.cluster import Cluster
from raft_kv.log import Entry, RaftLog
from raft_kv.messages import AppendEntries, AppendEntriesResponse, RequestVoteResponse
from raft_kv.node import RaftNode


def follower(*log_terms: int, current_term: int | None = None) -> RaftNode:
    """Node "b" of a three-node cluster, holding entries from ``log_terms``."""
    log = RaftLog(
        Entry(term=term, index=index, command=f"set k{index} t{term}")
        for index, term in enumerate(log_terms, start=1)
    )
    term = max(log_terms, default=0) if current_term is None else current_term
    return RaftNode("b", ["a", "b", "c"], clock=lambda: 0.0, log=log, current_term=term)


def from_leader(
    term: int,
    prev_log_index: int,
    prev_log_term: int,
    entries: Sequence[Entry] = (),
    leader_commit: int = 0,
) -> AppendEntries:
    return AppendEntries(
        term=term,
        sender="a",
        receiver="b",
        prev_log_index=prev_log_index,
        prev_log_term=prev_log_term,
        entries=tuple(entries),
        leader_commit=leader_commit,
    )


def terms(node: RaftNode) -> list[int]:
    return [entry.term for entry in node.log]


def test_follower_appends_entries_that_extend_a_matching_prefix() -> None:
    b = follower(1, 1)
    new = [Entry(term=2, index=3, command="set x 1"), Entry(term=2, index=4, command="set y 2")]
    response = b.handle_append_entries(
        from_leader(2, prev_log_index=2, prev_log_term=1, entries=new)
    )
    assert response.success
    assert response.match_index == 4
    assert terms(b) == [1, 1, 2, 2]
    assert b.leader_id == "a"


def test_follower_rejects_entries_when_prev_log_index_is_missing() -> None:
    b = follower(1, 1)
    request = from_leader(1, prev_log_index=4, prev_log_term=1, entries=[Entry(term=1, index=5)])
    response = b.handle_append_entries(request)
    assert not response.success
    assert response.conflict_index == 3  # the leader should retry right after our last entry
    assert terms(b) == [1, 1]


def test_follower_rejects_entries_when_prev_log_term_mismatches() -> None:
    # b kept an entry from term 3 that the term-4 leader never had; at index 3
    # the leader's log holds an entry from term 2 instead (Figure 7 of the paper).
    b = follower(1, 1, 3, current_term=3)
    request = from_leader(
        4, prev_log_index=3, prev_log_term=2, entries=[Entry(term=4, index=4, command="set x 1")]
    )
    response = b.handle_append_entries(request)
    assert response.success is False
    assert terms(b) == [1, 1, 3]  # nothing may be appended after an unverified prefix
    assert response.conflict_index == 3  # retry from the first entry of b's term 3


def test_follower_replaces_entries_left_by_a_deposed_leader() -> None:
    b = follower(1, 1, 2, 2)  # entries 3 and 4 were never committed by the term-2 leader
    new = [Entry(term=3, index=3, command="set x 1")]
    response = b.handle_append_entries(
        from_leader(3, prev_log_index=2, prev_log_term=1, entries=new)
    )
    assert response.success
    assert terms(b) == [1, 1, 3]
    assert b.log[3].command == "set x 1"


def test_a_delayed_duplicate_request_does_not_truncate_the_log() -> None:
    b = follower(1, 1, 1, 1)
    stale = from_leader(1, prev_log_index=1, prev_log_term=1, entries=[Entry(1, 2, "set k2 t1")])
    response = b.handle_append_entries(stale)
    assert response.success
    assert response.match_index == 2
    assert b.log.last_index == 4


def test_follower_commits_no_further_than_the_request_verified() -> None:
    b = follower(1, 1, 2)  # entry 3 may be stale: this request does not cover it
    response = b.handle_append_entries(
        from_leader(3, prev_log_index=2, prev_log_term=1, leader_commit=5)
    )
    assert response.success
    assert b.commit_index == 2


def test_leader_does_not_commit_an_old_term_entry_by_counting_replicas() -> None:
    # Figure 8: entry 2 (term 2) is on a majority once "b" has it, yet committing
    # it by count is unsafe; it commits only with the new leader's own entry.
    a = RaftNode(
        "a",
        ["a", "b", "c"],
        clock=lambda: 0.0,
        log=RaftLog([Entry(1, 1), Entry(2, 2)]),
        current_term=3,
    )
    a.start_election()
    a.handle_request_vote_response(
        RequestVoteResponse(term=4, sender="b", receiver="a", vote_granted=True)
    )
    assert a.is_leader
    assert a.log.last_term == 4  # the no-op a new leader appends

    def ack(match_index: int) -> None:
        a.handle_append_entries_response(
            AppendEntriesResponse(
                term=4, sender="b", receiver="a", success=True, match_index=match_index
            )
        )

    ack(2)
    assert a.commit_index == 0
    ack(3)
    assert a.commit_index == 3


def test_leader_backs_up_and_retries_after_a_rejection() -> None:
    a = RaftNode(
        "a",
        ["a", "b", "c"],
        clock=lambda: 0.0,
        log=RaftLog([Entry(1, 1), Entry(1, 2)]),
        current_term=1,
    )
    a.start_election()
    a.handle_request_vote_response(
        RequestVoteResponse(term=2, sender="b", receiver="a", vote_granted=True)
    )
    rejection = AppendEntriesResponse(
        term=2, sender="b", receiver="a", success=False, conflict_index=1
    )
    [retry] = a.handle_append_entries_response(rejection)
    assert isinstance(retry, AppendEntries)
    assert (retry.prev_log_index, len(retry.entries)) == (0, 3)


def test_entries_commit_and_apply_on_every_node() -> None:
    cluster = Cluster(seed=2)
    leader = cluster.wait_for_leader()
    entry = leader.submit("set x 1")
    cluster.run_until(
        lambda: all(node.last_applied >= entry.index for node in cluster.nodes.values())
    )
    assert all(list(node.log) == list(leader.log) for node in cluster.nodes.values())
    assert all(store.data == {"x": "1"} for store in cluster.stores.values())


def test_an_entry_commits_with_one_follower_partitioned() -> None:
    cluster = Cluster(seed=2)
    leader = cluster.wait_for_leader()
    cut_off = next(node_id for node_id in cluster.nodes if node_id != leader.id)
    cluster.isolate(cut_off)
    entry = leader.submit("set x 1")
    cluster.run_until(lambda: leader.commit_index >= entry.index)
    assert cluster.nodes[cut_off].log.last_index < entry.index


def test_an_entry_does_not_commit_without_a_majority() -> None:
    cluster = Cluster(seed=2)
    leader = cluster.wait_for_leader()
    cluster.isolate(leader.id)
    entry = leader.submit("set x 1")
    cluster.run_for(2000)
    assert leader.commit_index < entry.index
    new = cluster.leader()
    assert new is not None and new is not leader
    assert entry not in new.log


def test_a_deposed_leaders_uncommitted_entries_are_overwritten_after_healing() -> None:
    cluster = Cluster(["a", "b", "c", "d", "e"], seed=6)
    old = cluster.wait_for_leader()
    followers = [node_id for node_id in cluster.nodes if node_id != old.id]
    # The old leader keeps one follower: two of five nodes can never commit.
    cluster.partition([old.id, followers[0]], followers[1:])
    lost = old.submit("set lost 1")
    cluster.run_until(lambda: cluster.leader() not in (None, old))
    new = cluster.leader()
    assert new is not None
    kept = new.submit("set kept 1")
    cluster.run_until(lambda: new.commit_index >= kept.index)

    cluster.heal()
    cluster.run_until(
        lambda: all(node.last_applied == new.log.last_index for node in cluster.nodes.values())
    )
    for node in cluster.nodes.values():
        assert list(node.log) == list(new.log)
        assert lost not in node.log
    assert all(store.data == {"kept": "1"} for store in cluster.stores.values())


def test_logs_converge_despite_message_loss() -> None:
    cluster = Cluster(["a", "b", "c", "d", "e"], seed=9, drop_rate=0.2)
    for n in range(10):
        cluster.wait_for_leader().submit(f"set k{n} {n}")
        cluster.run_for(100)
    cluster.run_until(
        lambda: (
            len({(node.log.last_index, node.last_applied) for node in cluster.nodes.values()}) == 1
            and cluster.nodes["a"].last_applied == cluster.nodes["a"].log.last_index
        )
    )
    assert cluster.network.dropped > 0
    stores = list(cluster.stores.values())
    assert all(store.data == stores[0].data for store in stores)
    assert stores[0].data  # some writes survived leader changes
