import pytest

from raft_kv.cluster import Cluster, KVClient
from raft_kv.state_machine import KVStateMachine


def test_commands_return_the_value_held_before() -> None:
    store = KVStateMachine()
    assert store.apply("get x") is None
    assert store.apply("set x 1") is None
    assert store.apply("set x 2") == "1"
    assert store.apply("get x") == "2"
    assert store.apply("delete x") == "2"
    assert store.apply("delete x") is None
    assert store.data == {}


@pytest.mark.parametrize("command", ["", "get", "set x", "get x y", "put x 1", "delete"])
def test_malformed_commands_are_rejected(command: str) -> None:
    with pytest.raises(ValueError):
        KVStateMachine().apply(command)


def test_client_reads_its_own_writes() -> None:
    client = KVClient(Cluster(seed=11))
    assert client.set("color", "blue") is None
    assert client.set("color", "green") == "blue"
    assert client.get("color") == "green"
    assert client.delete("color")
    assert not client.delete("color")
    assert client.get("color") is None


def test_every_replica_applies_the_same_commands() -> None:
    cluster = Cluster(["a", "b", "c", "d", "e"], seed=12)
    client = KVClient(cluster)
    for n in range(20):
        client.set(f"k{n % 7}", str(n))
    cluster.run_for(500)  # followers learn the final commit index from heartbeats
    assert all(store.data == cluster.stores["a"].data for store in cluster.stores.values())
    assert cluster.stores["a"].data["k6"] == "13"


def test_client_carries_on_after_the_leader_is_cut_off() -> None:
    cluster = Cluster(seed=13)
    client = KVClient(cluster)
    client.set("x", "1")
    old = cluster.wait_for_leader()
    cluster.isolate(old.id)
    assert client.set("x", "2") == "1"
    new = cluster.leader()
    assert new is not None and new is not old
    cluster.heal()
    cluster.run_until(lambda: old.last_applied == new.last_applied)
    assert cluster.stores[old.id].data == {"x": "2"}


def test_client_refuses_a_malformed_command_before_it_reaches_the_log() -> None:
    cluster = Cluster(seed=14)
    leader = cluster.wait_for_leader()
    last_index = leader.log.last_index
    with pytest.raises(ValueError):
        KVClient(cluster).set("two words", "value")
    assert leader.log.last_index == last_index
