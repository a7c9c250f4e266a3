"""A Raft consensus node: leader election, log replication and commitment.

The node does no I/O. Each handler takes one message and returns the replies
or requests to send; time comes from an injected clock (milliseconds) and
randomness from an injected ``random.Random``, so a simulation (cluster.py) can
replay any run exactly. Section numbers (§5.2 ...) refer to the extended Raft
paper, "In Search of an Understandable Consensus Algorithm" (Ongaro and
Ousterhout, 2014).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum

from raft_kv.log import Entry, RaftLog
from raft_kv.messages import (
    AppendEntries,
    AppendEntriesResponse,
    Message,
    RequestVote,
    RequestVoteResponse,
)
from raft_kv.state_machine import KVStateMachine, StateMachine

# Followers wait a random time in this range before campaigning, so that split
# votes are rare and resolve themselves (§5.2).
ELECTION_TIMEOUT_MS = (150.0, 300.0)
# Well below the election timeout, so a healthy leader is never challenged.
HEARTBEAT_INTERVAL_MS = 50.0
# Caps one AppendEntries request; a lagging follower catches up over several.
MAX_ENTRIES_PER_REQUEST = 64


def _wall_clock_ms() -> float:
    return time.monotonic() * 1000.0


class Role(Enum):
    """The three states of a Raft node (§5.1)."""

    FOLLOWER = "follower"
    CANDIDATE = "candidate"
    LEADER = "leader"


class NotLeaderError(Exception):
    """Raised by ``RaftNode.submit`` on a node that is not the leader."""

    def __init__(self, node_id: str, leader_hint: str | None) -> None:
        super().__init__(f"{node_id} is not the leader (leader hint: {leader_hint})")
        self.leader_hint = leader_hint


@dataclass(frozen=True)
class Applied:
    """A committed entry that was applied to the state machine, with its result."""

    entry: Entry
    result: str | None


class RaftNode:
    """One member of a Raft cluster.

    ``peers`` are the ids of the other members (the node's own id is ignored if
    present). ``log`` and ``current_term`` restore persistent state, as after a
    restart; a new node starts with an empty log in term 0.
    """

    def __init__(
        self,
        node_id: str,
        peers: Iterable[str],
        *,
        state_machine: StateMachine | None = None,
        clock: Callable[[], float] = _wall_clock_ms,
        rng: random.Random | None = None,
        log: RaftLog | None = None,
        current_term: int = 0,
        election_timeout_ms: tuple[float, float] = ELECTION_TIMEOUT_MS,
        heartbeat_interval_ms: float = HEARTBEAT_INTERVAL_MS,
    ) -> None:
        self.id = node_id
        self.peers = tuple(peer for peer in peers if peer != node_id)
        self.state_machine: StateMachine = (
            KVStateMachine() if state_machine is None else state_machine
        )
        self._clock = clock
        self._rng = rng or random.Random()
        self._election_timeout_ms = election_timeout_ms
        self._heartbeat_interval_ms = heartbeat_interval_ms

        # Persistent state (Figure 2).
        self.current_term = current_term
        self.voted_for: str | None = None
        self.log = RaftLog() if log is None else log

        # Volatile state.
        self.role = Role.FOLLOWER
        self.leader_id: str | None = None
        self.commit_index = 0
        self.last_applied = 0
        self._votes: set[str] = set()
        self._election_deadline = 0.0
        self._heartbeat_due = 0.0

        # Leader state, reinitialized after each election.
        self.next_index: dict[str, int] = {}
        self.match_index: dict[str, int] = {}

        self._reset_election_timer()

    @property
    def quorum(self) -> int:
        """How many nodes, this one included, make a majority of the cluster."""
        return (len(self.peers) + 1) // 2 + 1

    @property
    def is_leader(self) -> bool:
        return self.role is Role.LEADER

    @property
    def election_deadline(self) -> float:
        """Clock time at which a follower or candidate starts a new election."""
        return self._election_deadline

    # -- time ---------------------------------------------------------------

    def tick(self) -> list[Message]:
        """Fire whichever timer has expired: heartbeats on a leader, an election otherwise."""
        now = self._clock()
        if self.role is Role.LEADER:
            return self.broadcast_append_entries() if now >= self._heartbeat_due else []
        if now >= self._election_deadline:
            return self.start_election()
        return []

    def receive(self, message: Message) -> list[Message]:
        """Handle any incoming message and return the messages to send because of it."""
        match message:
            case RequestVote():
                return [self.handle_request_vote(message)]
            case RequestVoteResponse():
                return self.handle_request_vote_response(message)
            case AppendEntries():
                return [self.handle_append_entries(message)]
            case AppendEntriesResponse():
                return self.handle_append_entries_response(message)
        raise TypeError(f"not a Raft message: {message!r}")

    # -- leader election (§5.2) ----------------------------------------------

    def start_election(self) -> list[Message]:
        """Become a candidate in a new term, vote for ourselves and ask every peer for a vote."""
        self.current_term += 1
        self.role = Role.CANDIDATE
        self.voted_for = self.id
        self.leader_id = None
        self._votes = {self.id}
        self._reset_election_timer()
        if len(self._votes) >= self.quorum:  # a single-node cluster elects itself
            return self._become_leader()
        return [self.request_vote(peer) for peer in self.peers]

    def request_vote(self, peer: str) -> RequestVote:
        """The RequestVote this candidate sends to ``peer``."""
        return RequestVote(
            term=self.current_term,
            sender=self.id,
            receiver=peer,
            last_log_index=self.log.last_index,
            last_log_term=self.log.last_term,
        )

    def handle_request_vote(self, request: RequestVote) -> RequestVoteResponse:
        """Grant at most one vote per term, and only to a candidate whose log is up to date."""
        self._observe_term(request.term)
        # §5.4.1: a candidate's log must be at least as up to date as ours (compare
        # the last terms, then the lengths), so every leader holds every committed entry.
        candidate_log = (request.last_log_term, request.last_log_index)
        granted = (
            request.term == self.current_term
            and self.voted_for in (None, request.sender)
            and candidate_log >= (self.log.last_term, self.log.last_index)
        )
        if granted:
            self.voted_for = request.sender
            # Give the candidate time to win before we campaign ourselves.
            self._reset_election_timer()
        return RequestVoteResponse(
            term=self.current_term,
            sender=self.id,
            receiver=request.sender,
            vote_granted=granted,
        )

    def handle_request_vote_response(self, response: RequestVoteResponse) -> list[Message]:
        """Count a vote; with a majority, become leader and assert it with heartbeats."""
        self._observe_term(response.term)
        if self.role is not Role.CANDIDATE or response.term != self.current_term:
            return []  # a late answer from an election that is already over
        if response.vote_granted:
            self._votes.add(response.sender)
        if len(self._votes) >= self.quorum:
            return self._become_leader()
        return []

    # -- log replication, leader side (§5.3) ---------------------------------

    def submit(self, command: str | None) -> Entry:
        """Append a client command to the leader's log; it commits once a majority stores it."""
        if self.role is not Role.LEADER:
            raise NotLeaderError(self.id, self.leader_id)
        entry = self.log.append_command(self.current_term, command)
        self._advance_commit_index()  # without peers, storing it locally is a majority
        return entry

    def append_entries(self, peer: str) -> AppendEntries:
        """The AppendEntries that brings ``peer`` up to date from its ``next_index``.

        With nothing new to send it is a heartbeat, which still carries the
        commit index and the consistency check.
        """
        next_index = self.next_index[peer]
        return AppendEntries(
            term=self.current_term,
            sender=self.id,
            receiver=peer,
            prev_log_index=next_index - 1,
            prev_log_term=self.log.term_at(next_index - 1),
            entries=tuple(self.log.entries_from(next_index, limit=MAX_ENTRIES_PER_REQUEST)),
            leader_commit=self.commit_index,
        )

    def broadcast_append_entries(self) -> list[Message]:
        """Send every peer what it is missing (or a heartbeat) and restart the heartbeat timer."""
        self._heartbeat_due = self._clock() + self._heartbeat_interval_ms
        return [self.append_entries(peer) for peer in self.peers]

    def handle_append_entries_response(self, response: AppendEntriesResponse) -> list[Message]:
        """Record how far a follower matches; on a mismatch, back up and retry at once."""
        self._observe_term(response.term)
        if self.role is not Role.LEADER or response.term != self.current_term:
            return []
        peer = response.sender
        if response.success:
            # Replies can arrive out of order: never move match_index backwards.
            if response.match_index > self.match_index[peer]:
                self.match_index[peer] = response.match_index
                self.next_index[peer] = response.match_index + 1
                self._advance_commit_index()
            if self.next_index[peer] <= self.log.last_index:
                return [self.append_entries(peer)]
            return []
        # Back up past the conflict, but never below what the follower already matches.
        self.next_index[peer] = max(
            self.match_index[peer] + 1,
            min(self.next_index[peer] - 1, response.conflict_index),
        )
        return [self.append_entries(peer)]

    # -- log replication, follower side (§5.3) -------------------------------

    def handle_append_entries(self, request: AppendEntries) -> AppendEntriesResponse:
        """Store the leader's entries if our log matches its log up to ``prev_log_index``."""
        self._observe_term(request.term)
        if request.term < self.current_term:
            # A deposed leader; the newer term in our reply makes it step down.
            return self._append_entries_reply(request, success=False)
        # There is at most one leader per term, so whoever sent this leads now.
        self.role = Role.FOLLOWER
        self.leader_id = request.sender
        self._reset_election_timer()

        # Log matching: only accept entries that extend a prefix we share with the
        # leader, i.e. we hold an entry at prev_log_index and it has prev_log_term.
        if request.prev_log_index > self.log.last_index:
            return self._append_entries_reply(
                request, success=False, conflict_index=self.log.last_index + 1
            )
        if self.log.term_at(request.prev_log_index) < request.prev_log_term:
            # Point the leader at the start of our conflicting term, so it skips
            # the whole term instead of backing up one entry per round trip.
            return self._append_entries_reply(
                request,
                success=False,
                conflict_index=self.log.first_index_in_term(request.prev_log_index),
            )

        for entry in request.entries:
            if entry.index <= self.log.last_index:
                if self.log.term_at(entry.index) == entry.term:
                    # Already stored. A delayed duplicate request must not
                    # truncate entries that a later request appended.
                    continue
                # A conflicting entry cannot be committed (the leader holds every
                # committed entry), so it and everything after it can go.
                self.log.truncate_from(entry.index)
            self.log.append(entry)

        last_new_index = request.prev_log_index + len(request.entries)
        # Entries past last_new_index were not checked by this request and may
        # still be stale, so the commit index cannot move beyond it.
        commit_index = min(request.leader_commit, last_new_index)
        if commit_index > self.commit_index:
            self.commit_index = commit_index
        return self._append_entries_reply(request, success=True, match_index=last_new_index)

    # -- applying committed entries -------------------------------------------

    def apply(self) -> list[Applied]:
        """Apply newly committed entries to the state machine, in log order, each exactly once."""
        applied: list[Applied] = []
        while self.last_applied < self.commit_index:
            self.last_applied += 1
            entry = self.log[self.last_applied]
            if entry.command is not None:
                applied.append(Applied(entry, self.state_machine.apply(entry.command)))
        return applied

    # -- internals --------------------------------------------------------------

    def _observe_term(self, term: int) -> None:
        """A newer term anywhere means our term, our vote and our role are out of date (§5.1)."""
        if term <= self.current_term:
            return
        if self.role is Role.LEADER:
            # A leader runs no election timer; start one instead of campaigning at once.
            self._reset_election_timer()
        self.current_term = term
        self.voted_for = None
        self.role = Role.FOLLOWER
        self.leader_id = None

    def _become_leader(self) -> list[Message]:
        self.role = Role.LEADER
        self.leader_id = self.id
        self.next_index = {peer: self.log.last_index + 1 for peer in self.peers}
        self.match_index = {peer: 0 for peer in self.peers}
        # §8: a no-op entry from our own term lets entries from earlier terms commit.
        self.submit(None)
        return self.broadcast_append_entries()

    def _advance_commit_index(self) -> None:
        """Commit the highest entry of the current term that a majority stores (§5.3, §5.4.2)."""
        for index in range(self.log.last_index, self.commit_index, -1):
            if self.log.term_at(index) != self.current_term:
                # Counting replicas is only safe for entries of our own term (Figure 8);
                # older ones commit with them. Terms only fall going backwards, so stop.
                break
            replicas = 1 + sum(1 for peer in self.peers if self.match_index[peer] >= index)
            if replicas >= self.quorum:
                self.commit_index = index
                break

    def _reset_election_timer(self) -> None:
        low, high = self._election_timeout_ms
        self._election_deadline = self._clock() + self._rng.uniform(low, high)

    def _append_entries_reply(
        self,
        request: AppendEntries,
        *,
        success: bool,
        match_index: int = 0,
        conflict_index: int = 0,
    ) -> AppendEntriesResponse:
        return AppendEntriesResponse(
            term=self.current_term,
            sender=self.id,
            receiver=request.sender,
            success=success,
            match_index=match_index,
            conflict_index=conflict_index,
        )

    def __repr__(self) -> str:
        return (
            f"RaftNode({self.id!r}, {self.role.value}, term={self.current_term}, "
            f"last_index={self.log.last_index}, commit_index={self.commit_index})"
        )
