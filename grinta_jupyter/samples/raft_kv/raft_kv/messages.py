"""The two Raft RPCs and their replies, as plain values the network carries.

Every message names its ``sender`` and ``receiver`` and carries the sender's
current term, which is how nodes learn that a newer term has begun (§5.1).
"""

from __future__ import annotations

from dataclasses import dataclass

from raft_kv.log import Entry


@dataclass(frozen=True)
class RequestVote:
    """A candidate asks for a vote (§5.2), describing how up to date its log is."""

    term: int
    sender: str
    receiver: str
    last_log_index: int
    last_log_term: int


@dataclass(frozen=True)
class RequestVoteResponse:
    """The answer to a RequestVote; ``term`` lets a stale candidate step down."""

    term: int
    sender: str
    receiver: str
    vote_granted: bool


@dataclass(frozen=True)
class AppendEntries:
    """A leader replicates ``entries`` after ``prev_log_index`` (§5.3); empty, it is a heartbeat."""

    term: int
    sender: str
    receiver: str
    prev_log_index: int
    prev_log_term: int
    entries: tuple[Entry, ...]
    leader_commit: int


@dataclass(frozen=True)
class AppendEntriesResponse:
    """The answer to an AppendEntries.

    On success, ``match_index`` is the last index the follower now knows to match
    the leader's log. On failure, ``conflict_index`` is where the leader should
    retry from, so it can skip a whole conflicting term in one round trip.
    """

    term: int
    sender: str
    receiver: str
    success: bool
    match_index: int = 0
    conflict_index: int = 0


Message = RequestVote | RequestVoteResponse | AppendEntries | AppendEntriesResponse
