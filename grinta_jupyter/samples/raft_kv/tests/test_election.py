import random

from raft_kv.cluster import Cluster
from raft_kv.log import Entry, RaftLog
from raft_kv.messages import AppendEntries, RequestVote, RequestVoteResponse
from raft_kv.node import RaftNode, Role


def make_node(node_id: str = "c", *log_terms: int, current_term: int = 0) -> RaftNode:
    log = RaftLog(Entry(term=term, index=index) for index, term in enumerate(log_terms, start=1))
    return RaftNode(node_id, ["a", "b", "c"], clock=lambda: 0.0, log=log, current_term=current_term)


def vote_request(
    sender: str, term: int, last_log_index: int = 0, last_log_term: int = 0
) -> RequestVote:
    return RequestVote(
        term=term,
        sender=sender,
        receiver="c",
        last_log_index=last_log_index,
        last_log_term=last_log_term,
    )


def test_single_node_elects_itself() -> None:
    cluster = Cluster(["solo"])
    leader = cluster.wait_for_leader()
    assert leader.id == "solo"
    assert leader.current_term == 1


def test_three_nodes_elect_exactly_one_stable_leader() -> None:
    cluster = Cluster(seed=1)
    leader = cluster.wait_for_leader()
    term = leader.current_term
    cluster.run_for(2000)  # heartbeats must keep every follower from campaigning
    assert [node for node in cluster.nodes.values() if node.is_leader] == [leader]
    assert {node.current_term for node in cluster.nodes.values()} == {term}
    assert {node.leader_id for node in cluster.nodes.values()} == {leader.id}


def test_the_same_seed_gives_the_same_election() -> None:
    def outcome(seed: int) -> tuple[str, int, float]:
        cluster = Cluster(["a", "b", "c", "d", "e"], seed=seed)
        leader = cluster.wait_for_leader()
        return leader.id, leader.current_term, cluster.clock.now

    assert outcome(7) == outcome(7)


def test_election_timeouts_are_randomized_within_the_range() -> None:
    deadlines = {
        RaftNode(
            str(seed), ["0", "1"], clock=lambda: 0.0, rng=random.Random(seed)
        ).election_deadline
        for seed in range(20)
    }
    assert len(deadlines) > 1
    assert all(150.0 <= deadline < 300.0 for deadline in deadlines)


def test_a_node_votes_at_most_once_per_term() -> None:
    node = make_node("c")
    assert node.handle_request_vote(vote_request("a", term=1)).vote_granted
    assert not node.handle_request_vote(vote_request("b", term=1)).vote_granted
    # A candidate that lost our reply and asks again gets the same answer.
    assert node.handle_request_vote(vote_request("a", term=1)).vote_granted
    assert node.handle_request_vote(vote_request("b", term=2)).vote_granted


def test_a_node_refuses_a_candidate_whose_log_is_behind() -> None:
    node = make_node("c", 1, 2, current_term=2)
    # Longer, but its last entry is from an older term: not up to date.
    longer_but_older = vote_request("a", term=3, last_log_index=5, last_log_term=1)
    assert not node.handle_request_vote(longer_but_older).vote_granted
    shorter = vote_request("a", term=3, last_log_index=1, last_log_term=2)
    assert not node.handle_request_vote(shorter).vote_granted
    as_long = vote_request("b", term=3, last_log_index=2, last_log_term=2)
    assert node.handle_request_vote(as_long).vote_granted


def test_a_candidate_needs_a_majority() -> None:
    node = make_node("c")
    node.start_election()
    assert node.role is Role.CANDIDATE
    denied = RequestVoteResponse(term=1, sender="a", receiver="c", vote_granted=False)
    assert node.handle_request_vote_response(denied) == []
    assert node.role is Role.CANDIDATE
    granted = RequestVoteResponse(term=1, sender="b", receiver="c", vote_granted=True)
    heartbeats = node.handle_request_vote_response(granted)
    assert node.role is Role.LEADER
    assert {message.receiver for message in heartbeats} == {"a", "b"}


def test_a_leader_steps_down_when_it_sees_a_newer_term() -> None:
    node = make_node("c")
    node.start_election()
    node.handle_request_vote_response(
        RequestVoteResponse(term=1, sender="a", receiver="c", vote_granted=True)
    )
    assert node.is_leader
    request = AppendEntries(
        term=2,
        sender="b",
        receiver="c",
        prev_log_index=0,
        prev_log_term=0,
        entries=(),
        leader_commit=0,
    )
    node.handle_append_entries(request)
    assert (node.role, node.current_term, node.leader_id) == (Role.FOLLOWER, 2, "b")


def test_an_isolated_leader_is_replaced_and_steps_down_after_healing() -> None:
    cluster = Cluster(["a", "b", "c", "d", "e"], seed=3)
    old = cluster.wait_for_leader()
    cluster.isolate(old.id)
    cluster.run_until(lambda: (leader := cluster.leader()) is not None and leader is not old)
    new = cluster.leader()
    assert new is not None
    assert new.current_term > old.current_term
    assert old.is_leader  # cut off, it cannot hear about the newer term yet

    cluster.heal()
    cluster.run_until(lambda: not old.is_leader)
    assert old.current_term == new.current_term
    assert old.leader_id == new.id


def test_a_node_that_missed_entries_cannot_win_after_rejoining() -> None:
    cluster = Cluster(seed=4)
    cluster.isolate("a")
    cluster.run_until(lambda: (leader := cluster.leader()) is not None and leader.id != "a")
    cluster.run_for(1000)  # "a" keeps campaigning alone, driving its term up
    assert not cluster.nodes["a"].is_leader
    assert cluster.nodes["a"].current_term > cluster.nodes["b"].current_term

    cluster.heal()
    # Its high term forces a new election, but its log lacks the leader's entries.
    cluster.run_until(
        lambda: (
            (leader := cluster.leader()) is not None
            and leader.current_term >= cluster.nodes["a"].current_term
        )
    )
    cluster.run_for(1000)
    assert not cluster.nodes["a"].is_leader
