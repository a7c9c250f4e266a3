"""raft_kv: a small Raft-replicated key-value store, simulated deterministically in memory.

- ``log``: the replicated log (``Entry``, ``RaftLog``).
- ``messages``: RequestVote and AppendEntries, with their replies.
- ``node``: ``RaftNode``, the consensus algorithm itself.
- ``state_machine``: ``KVStateMachine``, what committed commands are applied to.
- ``cluster``: a simulated network and clock (``Cluster``) and a client (``KVClient``).
"""

from raft_kv.cluster import Cluster, KVClient, Network, SimClock
from raft_kv.log import Entry, RaftLog
from raft_kv.messages import (
    AppendEntries,
    AppendEntriesResponse,
    Message,
    RequestVote,
    RequestVoteResponse,
)
from raft_kv.node import Applied, NotLeaderError, RaftNode, Role
from raft_kv.state_machine import KVStateMachine, StateMachine, parse_command

__all__ = [
    "AppendEntries",
    "AppendEntriesResponse",
    "Applied",
    "Cluster",
    "Entry",
    "KVClient",
    "KVStateMachine",
    "Message",
    "Network",
    "NotLeaderError",
    "RaftLog",
    "RaftNode",
    "RequestVote",
    "RequestVoteResponse",
    "Role",
    "SimClock",
    "StateMachine",
    "parse_command",
]
