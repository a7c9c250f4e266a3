"""A deterministic, in-memory Raft cluster: simulated time, a simulated network, partitions.

Nothing sleeps and nothing runs concurrently. Each ``step`` advances the
simulated clock by one tick, delivers the messages that have arrived, fires the
nodes' timers and applies committed entries. The same seed always gives the
same run, so a failing scenario can be replayed exactly.
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from raft_kv.log import Entry
from raft_kv.messages import Message
from raft_kv.node import Applied, RaftNode
from raft_kv.state_machine import KVStateMachine, parse_command

TICK_MS = 10.0
LATENCY_MS = 5.0


class SimClock:
    """Simulated time in milliseconds; it moves only when the cluster steps."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, ms: float) -> None:
        self.now += ms


@dataclass(order=True)
class _InFlight:
    deliver_at: float
    sequence: int  # breaks ties in send order, which keeps delivery deterministic
    message: Message = field(compare=False)


class Network:
    """Carries messages with a fixed latency, may lose some, and honours partitions.

    A partition splits the nodes into groups that cannot reach each other; a
    node left out of every group is cut off from all the others.
    """

    def __init__(
        self,
        clock: SimClock,
        *,
        latency_ms: float = LATENCY_MS,
        drop_rate: float = 0.0,
        rng: random.Random | None = None,
    ) -> None:
        if latency_ms <= 0:
            # A reply sent while delivering must not arrive in the same delivery round.
            raise ValueError("latency_ms must be positive")
        self._clock = clock
        self._latency_ms = latency_ms
        self._drop_rate = drop_rate
        self._rng = rng or random.Random(0)
        self._in_flight: list[_InFlight] = []
        self._sequence = itertools.count()
        self._groups: list[frozenset[str]] | None = None
        self.dropped = 0

    def send(self, messages: Iterable[Message]) -> None:
        """Put messages on the wire; each arrives after the latency unless it is lost."""
        for message in messages:
            if self._drop_rate and self._rng.random() < self._drop_rate:
                self.dropped += 1
                continue
            deliver_at = self._clock.now + self._latency_ms
            heapq.heappush(self._in_flight, _InFlight(deliver_at, next(self._sequence), message))

    def deliverable(self) -> Iterator[Message]:
        """Messages that have arrived by now and whose receiver can still be reached."""
        while self._in_flight and self._in_flight[0].deliver_at <= self._clock.now:
            message = heapq.heappop(self._in_flight).message
            # Checked on arrival, so a new partition also cuts messages already on the wire.
            if self.can_reach(message.sender, message.receiver):
                yield message
            else:
                self.dropped += 1

    def can_reach(self, sender: str, receiver: str) -> bool:
        if self._groups is None:
            return True
        return any(sender in group and receiver in group for group in self._groups)

    def partition(self, *groups: Iterable[str]) -> None:
        self._groups = [frozenset(group) for group in groups]

    def heal(self) -> None:
        self._groups = None


class Cluster:
    """Raft nodes, each with its own KVStateMachine, sharing one network and one clock."""

    def __init__(
        self,
        node_ids: Sequence[str] = ("a", "b", "c"),
        *,
        seed: int = 0,
        latency_ms: float = LATENCY_MS,
        drop_rate: float = 0.0,
    ) -> None:
        self.clock = SimClock()
        self.network = Network(
            self.clock,
            latency_ms=latency_ms,
            drop_rate=drop_rate,
            rng=random.Random(f"{seed}/network"),
        )
        self.stores = {node_id: KVStateMachine() for node_id in node_ids}
        self.nodes = {
            node_id: RaftNode(
                node_id,
                node_ids,
                state_machine=self.stores[node_id],
                clock=self.clock,
                rng=random.Random(f"{seed}/{node_id}"),
            )
            for node_id in node_ids
        }
        self._applied: dict[str, dict[int, Applied]] = {node_id: {} for node_id in node_ids}

    def step(self) -> None:
        """Advance one tick: deliver arrived messages, fire timers, apply committed entries."""
        self.clock.advance(TICK_MS)
        for message in self.network.deliverable():
            self.network.send(self.nodes[message.receiver].receive(message))
        for node in self.nodes.values():
            self.network.send(node.tick())
            for applied in node.apply():
                self._applied[node.id][applied.entry.index] = applied

    def run_for(self, ms: float) -> None:
        """Step for ``ms`` milliseconds of simulated time."""
        deadline = self.clock.now + ms
        while self.clock.now < deadline:
            self.step()

    def run_until(self, condition: Callable[[], bool], *, timeout_ms: float = 5000.0) -> None:
        """Step until ``condition()`` holds; after ``timeout_ms`` simulated, raise TimeoutError."""
        deadline = self.clock.now + timeout_ms
        while not condition():
            if self.clock.now >= deadline:
                raise TimeoutError(f"condition not met within {timeout_ms:g} ms of simulated time")
            self.step()

    def leader(self) -> RaftNode | None:
        """The leader of the newest term, if any.

        A leader cut off in a minority may still believe it leads an older term;
        it is only returned when no newer leader exists.
        """
        leaders = [node for node in self.nodes.values() if node.is_leader]
        return max(leaders, key=lambda node: node.current_term, default=None)

    def wait_for_leader(self, *, timeout_ms: float = 5000.0) -> RaftNode:
        """Step until some node leads, and return it."""
        deadline = self.clock.now + timeout_ms
        while (leader := self.leader()) is None:
            if self.clock.now >= deadline:
                raise TimeoutError(f"no leader elected within {timeout_ms:g} ms of simulated time")
            self.step()
        return leader

    def partition(self, *groups: Iterable[str]) -> None:
        """Split the cluster: nodes in different groups can no longer exchange messages."""
        self.network.partition(*groups)

    def isolate(self, node_id: str) -> None:
        """Cut ``node_id`` off from every other node, as if it crashed or lost its link."""
        self.network.partition([node_id], [other for other in self.nodes if other != node_id])

    def heal(self) -> None:
        """Reconnect every node."""
        self.network.heal()

    def propose(self, command: str) -> tuple[RaftNode, Entry] | None:
        """Submit ``command`` to the current leader and start replicating it at once.

        Returns the leader and the new entry, or None when no node leads.
        """
        leader = self.leader()
        if leader is None:
            return None
        entry = leader.submit(command)
        self.network.send(leader.broadcast_append_entries())
        return leader, entry

    def applied(self, node_id: str, entry: Entry) -> Applied | None:
        """``entry`` as applied on ``node_id``, with its result; None until it is applied there."""
        applied = self._applied[node_id].get(entry.index)
        # Another entry at the same index means ours was overwritten before it committed.
        return applied if applied is not None and applied.entry == entry else None


class KVClient:
    """Runs commands on the cluster: finds the leader, waits until it applies, returns the result.

    A command is retried on a new leader when the old one loses it before
    applying it. If the first attempt did commit after all, the command then
    runs twice; real deployments deduplicate with client sequence numbers (§8),
    which this simulation leaves out.
    """

    def __init__(
        self,
        cluster: Cluster,
        *,
        timeout_ms: float = 5000.0,
        attempt_timeout_ms: float = 1000.0,
    ) -> None:
        self.cluster = cluster
        self.timeout_ms = timeout_ms
        self.attempt_timeout_ms = attempt_timeout_ms

    def get(self, key: str) -> str | None:
        """The value stored under ``key``, or None."""
        return self.execute(f"get {key}")

    def set(self, key: str, value: str) -> str | None:
        """Store ``value`` under ``key``; return the value it replaced, or None."""
        return self.execute(f"set {key} {value}")

    def delete(self, key: str) -> bool:
        """Remove ``key``; return whether it was present."""
        return self.execute(f"delete {key}") is not None

    def execute(self, command: str) -> str | None:
        """Commit ``command`` through the log and return its result from the leader."""
        parse_command(command)  # a malformed command must never reach the log
        deadline = self.cluster.clock.now + self.timeout_ms
        while self.cluster.clock.now < deadline:
            proposal = self.cluster.propose(command)
            if proposal is None:
                self.cluster.step()  # an election is under way
                continue
            leader, entry = proposal
            attempt_ms = min(self.attempt_timeout_ms, deadline - self.cluster.clock.now)
            applied = self._wait_for_apply(leader, entry, attempt_ms)
            if applied is not None:
                return applied.result
        raise TimeoutError(f"{command!r} was not applied within {self.timeout_ms:g} ms")

    def _wait_for_apply(self, leader: RaftNode, entry: Entry, timeout_ms: float) -> Applied | None:
        """Wait until ``leader`` applies ``entry``; None if the entry is lost or time runs out."""

        def settled() -> bool:
            return self.cluster.applied(leader.id, entry) is not None or entry not in leader.log

        try:
            self.cluster.run_until(settled, timeout_ms=timeout_ms)
        except TimeoutError:
            return None
        return self.cluster.applied(leader.id, entry)
