"""The raft_kv sample's tasks: a failing test, a planted voting bug, two features, a rename."""

from __future__ import annotations

import io
import sys
import tempfile
import tokenize
from pathlib import Path

from grinta_jupyter.samples.core import (
    CheckResult,
    Task,
    ToolCall,
    changed_files,
    check_suite,
    copy_for_trial,
    listing,
    no_setup,
    replace_once,
    sample_path,
    script_error,
    test_ids,
    workspace_test_ids,
)

# -- raft_kv ---------------------------------------------------------------

# The bug in the pristine raft_kv: a follower compares the terms at
# prev_log_index with ``<`` instead of ``!=``, so it accepts entries after an
# entry from a *newer* term than the leader's, and its log diverges.
DEMO_FIX: dict[str, str] = {
    "path": "raft_kv/node.py",
    "old_string": "if self.log.term_at(request.prev_log_index) < request.prev_log_term:",
    "new_string": "if self.log.term_at(request.prev_log_index) != request.prev_log_term:",
}
DEMO_FAILING_TEST = (
    "tests/test_replication.py::test_follower_rejects_entries_when_prev_log_term_mismatches"
)

# The bug the stale-vote task plants, once the demo bug is fixed: a voter
# compares only the last terms of the two logs, not then their lengths, so a
# candidate missing entries of that term can win and lose committed entries.
STALE_VOTE_BUG: dict[str, str] = {
    "path": "raft_kv/node.py",
    "old_string": """\
        # §5.4.1: a candidate's log must be at least as up to date as ours (compare
        # the last terms, then the lengths), so every leader holds every committed entry.
        candidate_log = (request.last_log_term, request.last_log_index)
        granted = (
            request.term == self.current_term
            and self.voted_for in (None, request.sender)
            and candidate_log >= (self.log.last_term, self.log.last_index)
        )
""",
    "new_string": """\
        # §5.4.1: a candidate's log must be at least as up to date as ours, so
        # every leader holds every committed entry.
        granted = (
            request.term == self.current_term
            and self.voted_for in (None, request.sender)
            and request.last_log_term >= self.log.last_term
        )
""",
}
STALE_VOTE_FAILING_TEST = (
    "tests/test_election.py::test_a_node_refuses_a_candidate_whose_log_is_behind"
)

_RAFT_KV_PROTECTED = ("tests/*.py", "conftest.py", "pyproject.toml")
_RAFT_KV_TESTS: ToolCall = ("run", {"command": "python -m pytest -q"})


def _apply_demo_fix(root: Path) -> None:
    """Fix the planted bug, so that only the task at hand decides the check."""
    replace_once(root, DEMO_FIX, "DEMO_FIX")


def _plant_stale_vote_bug(root: Path) -> None:
    _apply_demo_fix(root)
    replace_once(root, STALE_VOTE_BUG, "STALE_VOTE_BUG")


def _check_raft_kv_fixed(root: Path) -> CheckResult:
    """The whole pristine suite passes, and the tests are the pristine ones."""
    pristine = sample_path("raft_kv")
    # The tests and the pytest configuration must be exactly the pristine ones:
    # deleting or weakening the failing test is not a fix.
    problems = changed_files(root, "raft_kv", _RAFT_KV_PROTECTED)
    pristine_conftests = {p.relative_to(pristine) for p in pristine.rglob("conftest.py")}
    for path in sorted(root.rglob("conftest.py")):
        if path.relative_to(root) not in pristine_conftests:
            problems.append(f"{path.relative_to(root).as_posix()} was added")
    if problems:
        return CheckResult(False, "; ".join(problems))
    return check_suite(root, workspace_test_ids(pristine))


HIDDEN_CAS_TEST_PATH = "tests/test_hidden_cas.py"
HIDDEN_CAS_TEST = '''\
"""Acceptance tests for compare-and-swap, added by the task check (not shipped)."""

import pytest

from raft_kv.cluster import Cluster, KVClient
from raft_kv.state_machine import KVStateMachine


def test_cas_swaps_when_the_value_matches():
    store = KVStateMachine()
    store.apply("set k a")
    assert store.apply("cas k a b") == "a"
    assert store.data == {"k": "b"}


def test_cas_leaves_a_different_value_alone():
    store = KVStateMachine()
    store.apply("set k a")
    assert store.apply("cas k x b") == "a"
    assert store.data == {"k": "a"}


def test_cas_on_a_missing_key_does_nothing():
    store = KVStateMachine()
    assert store.apply("cas k a b") is None
    assert store.data == {}


@pytest.mark.parametrize("command", ["cas k a", "cas k a b c"])
def test_cas_with_the_wrong_number_of_arguments_is_rejected(command):
    with pytest.raises(ValueError):
        KVStateMachine().apply(command)


def test_client_cas_goes_through_the_log():
    cluster = Cluster(seed=21)
    client = KVClient(cluster)
    client.set("lock", "free")
    assert client.cas("lock", "free", "taken") is True
    assert client.cas("lock", "free", "taken") is False
    assert client.get("lock") == "taken"
    cluster.run_for(500)
    assert all(store.data == {"lock": "taken"} for store in cluster.stores.values())
'''


def _check_compare_and_swap(root: Path) -> CheckResult:
    return _check_hidden_tests(root, HIDDEN_CAS_TEST_PATH, HIDDEN_CAS_TEST)


def _check_hidden_tests(root: Path, path: str, source: str) -> CheckResult:
    """The pristine suite and the hidden tests pass, run in a scratch copy of ``root``."""
    with tempfile.TemporaryDirectory(prefix="grinta-check-") as scratch:
        trial = copy_for_trial(root, scratch)
        (trial / path).write_text(source, encoding="utf-8")
        required = workspace_test_ids(sample_path("raft_kv")) | test_ids(source, path)
        return check_suite(trial, required)


HIDDEN_LEASE_TEST_PATH = "tests/test_hidden_lease.py"
HIDDEN_LEASE_TEST = '''\
"""Acceptance tests for lease reads, added by the task check (not shipped)."""

from raft_kv.cluster import Cluster, KVClient


def test_a_leader_holds_a_lease_in_a_healthy_cluster():
    cluster = Cluster(seed=31)
    leader = cluster.wait_for_leader()
    cluster.run_for(300)
    assert leader.has_lease()
    assert not any(node.has_lease() for node in cluster.nodes.values() if node is not leader)


def test_a_single_node_leads_with_a_lease():
    cluster = Cluster(["solo"], seed=32)
    assert cluster.wait_for_leader().has_lease()


def test_a_new_leader_has_no_lease_before_its_followers_answer():
    cluster = Cluster(seed=33)
    leader = cluster.wait_for_leader()
    assert not leader.has_lease()


def test_an_isolated_leader_loses_its_lease():
    cluster = Cluster(seed=34)
    old = cluster.wait_for_leader()
    cluster.run_for(300)
    assert old.has_lease()
    cluster.isolate(old.id)
    cluster.run_for(400)
    assert old.is_leader  # it has heard of no newer term, so it still believes it leads
    assert not old.has_lease()
    new = cluster.leader()
    assert new is not None and new is not old
    cluster.run_for(300)
    assert new.has_lease()


def test_a_lease_read_does_not_touch_the_log():
    cluster = Cluster(seed=35)
    client = KVClient(cluster)
    client.set("color", "blue")
    cluster.run_for(300)
    lengths = {node_id: node.log.last_index for node_id, node in cluster.nodes.items()}
    assert client.read("color") == "blue"
    assert client.read("shape") is None
    assert {node_id: node.log.last_index for node_id, node in cluster.nodes.items()} == lengths


def test_a_read_without_a_lease_goes_through_the_log():
    cluster = Cluster(seed=36)
    leader = cluster.wait_for_leader()
    last_index = leader.log.last_index
    assert KVClient(cluster).read("color") is None
    assert leader.log.last_index == last_index + 1
'''


def _check_lease_read(root: Path) -> CheckResult:
    return _check_hidden_tests(root, HIDDEN_LEASE_TEST_PATH, HIDDEN_LEASE_TEST)


def _check_rename_entry(root: Path) -> CheckResult:
    sources = sorted([root / "conftest.py", *root.glob("raft_kv/*.py"), *root.glob("tests/*.py")])
    leftovers = []
    for path in sources:
        relative = path.relative_to(root).as_posix()
        try:
            lines = _lines_naming(path, "Entry")
        except (SyntaxError, tokenize.TokenError) as exc:
            return CheckResult(False, f"{relative} does not parse: {exc}")
        leftovers += [f"{relative}:{line}" for line in lines]
    if leftovers:
        return CheckResult(False, f"Entry is still used at {listing(leftovers)}")
    code = "from raft_kv import LogEntry\nfrom raft_kv.log import LogEntry"
    error = script_error(root, [sys.executable, "-c", code])
    if error:
        return CheckResult(False, f"LogEntry is not importable:\n{error}")
    return check_suite(root, workspace_test_ids(sample_path("raft_kv")))


def _lines_naming(path: Path, name: str) -> list[int]:
    """Lines where ``name`` appears as an identifier (not inside strings or comments)."""
    if not path.is_file():
        return []
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
    return [
        token.start[0] for token in tokens if token.type == tokenize.NAME and token.string == name
    ]


# Reference solutions. Edits name their target the way a model would: by a
# unique string, or by a symbol.

_FIX_FAILING_TEST_SOLUTION: tuple[ToolCall, ...] = (
    ("search", {"query": "prev_log_term", "path": "raft_kv"}),
    ("replace_string", dict(DEMO_FIX)),
    _RAFT_KV_TESTS,
    (
        "finish",
        {"summary": "A follower now rejects entries unless the terms at prev_log_index match."},
    ),
)

_COMPARE_AND_SWAP_SOLUTION: tuple[ToolCall, ...] = (
    ("read", {"symbol": "KVStateMachine.apply"}),
    (
        "multiedit",
        {
            "edits": [
                {
                    "path": "raft_kv/state_machine.py",
                    "old_string": "    delete KEY        remove KEY\n",
                    "new_string": "    delete KEY        remove KEY\n"
                    "    cas KEY OLD NEW   set KEY to NEW if it holds OLD\n",
                },
                {
                    "path": "raft_kv/state_machine.py",
                    "old_string": '{"get": 1, "set": 2, "delete": 1}',
                    "new_string": '{"get": 1, "set": 2, "delete": 1, "cas": 3}',
                },
            ]
        },
    ),
    (
        "edit_symbols",
        {
            "edits": [
                {
                    "symbol": "KVStateMachine.apply",
                    "action": "replace",
                    "new_source": '''\
def apply(self, command: str) -> str | None:
    """Execute ``command`` and return the value its key held before."""
    operation, args = parse_command(command)
    key = args[0]
    previous = self.data.get(key)
    if operation == "set":
        self.data[key] = args[1]
    elif operation == "delete":
        self.data.pop(key, None)
    elif operation == "cas" and previous == args[1]:
        self.data[key] = args[2]
    return previous
''',
                },
                {
                    "symbol": "KVClient.delete",
                    "action": "insert_after",
                    "new_source": '''\
def cas(self, key: str, expected: str, new: str) -> bool:
    """Set ``key`` to ``new`` if it holds ``expected``; return whether it did."""
    return self.execute(f"cas {key} {expected} {new}") == expected
''',
                },
            ]
        },
    ),
    _RAFT_KV_TESTS,
    ("finish", {"summary": "Added the cas command and KVClient.cas."}),
)

_RAFT_KV_FILES_NAMING_ENTRY = (
    "raft_kv/__init__.py",
    "raft_kv/cluster.py",
    "raft_kv/log.py",
    "raft_kv/messages.py",
    "raft_kv/node.py",
    "tests/test_election.py",
    "tests/test_log.py",
    "tests/test_replication.py",
)

# "Entry" occurs in these files only as the whole word (never inside
# AppendEntries or entries), so a plain replace_all is the rename.
_RENAME_ENTRY_SOLUTION: tuple[ToolCall, ...] = (
    ("search", {"query": r"\bEntry\b", "regex": True}),
    (
        "multiedit",
        {
            "edits": [
                {"path": path, "old_string": "Entry", "new_string": "LogEntry", "replace_all": True}
                for path in _RAFT_KV_FILES_NAMING_ENTRY
            ]
        },
    ),
    _RAFT_KV_TESTS,
    ("finish", {"summary": "Renamed Entry to LogEntry in the package and the tests."}),
)

_LEASE_READ_SOLUTION: tuple[ToolCall, ...] = (
    ("read", {"path": "raft_kv/node.py", "outline": True}),
    (
        "multiedit",
        {
            "edits": [
                {
                    "path": "raft_kv/messages.py",
                    "old_string": "    leader_commit: int\n",
                    "new_string": "    leader_commit: int\n"
                    "    # The leader's clock when it sent this; the reply echoes it for leases.\n"
                    "    sent_at: float = 0.0\n",
                },
                {
                    "path": "raft_kv/messages.py",
                    "old_string": "    conflict_index: int = 0\n",
                    "new_string": "    conflict_index: int = 0\n"
                    "    request_sent_at: float = 0.0  # the sent_at of the request answered\n",
                },
                {
                    "path": "raft_kv/node.py",
                    "old_string": "            leader_commit=self.commit_index,\n",
                    "new_string": "            leader_commit=self.commit_index,\n"
                    "            sent_at=self._clock(),\n",
                },
                {
                    "path": "raft_kv/node.py",
                    "old_string": "            conflict_index=conflict_index,\n",
                    "new_string": "            conflict_index=conflict_index,\n"
                    "            request_sent_at=request.sent_at,\n",
                },
                {
                    "path": "raft_kv/node.py",
                    "old_string": "        self.match_index: dict[str, int] = {}\n",
                    "new_string": "        self.match_index: dict[str, int] = {}\n"
                    "        # When the newest request each peer answered in our term was sent.\n"
                    "        self._acked_at: dict[str, float] = {}\n",
                },
                {
                    "path": "raft_kv/node.py",
                    "old_string": "        self.match_index = {peer: 0 for peer in self.peers}\n",
                    "new_string": "        self.match_index = {peer: 0 for peer in self.peers}\n"
                    "        self._acked_at = {}\n",
                },
                {
                    "path": "raft_kv/node.py",
                    "old_string": "        peer = response.sender\n",
                    "new_string": "        peer = response.sender\n"
                    "        # Any reply in our term, even a log mismatch, acknowledges our leadership.\n"
                    "        acked_at = max(self._acked_at.get(peer, 0.0), response.request_sent_at)\n"
                    "        self._acked_at[peer] = acked_at\n",
                },
            ]
        },
    ),
    (
        "edit_symbols",
        {
            "edits": [
                {
                    "symbol": "RaftNode.is_leader",
                    "action": "insert_after",
                    "new_source": '''\
def has_lease(self) -> bool:
    """Whether this leader may answer reads from its state machine, without the log.

    It must have applied an entry of its own term (so it holds every committed
    entry), and a majority, itself included, must have answered requests it
    sent less than the shortest election timeout ago: until then no follower
    that answered can start an election, so no newer leader exists.
    """
    if self.role is not Role.LEADER:
        return False
    if self.log.term_at(self.last_applied) != self.current_term:
        return False
    since = self._clock() - self._election_timeout_ms[0]
    fresh = sum(1 for peer in self.peers if self._acked_at.get(peer, since) > since)
    return 1 + fresh >= self.quorum
''',
                },
                {
                    "symbol": "KVClient.get",
                    "action": "insert_after",
                    "new_source": '''\
def read(self, key: str) -> str | None:
    """Like ``get``, but a leader holding a lease answers at once, without the log."""
    leader = self.cluster.leader()
    if leader is not None and leader.has_lease():
        return leader.state_machine.apply(f"get {key}")
    return self.get(key)
''',
                },
            ]
        },
    ),
    _RAFT_KV_TESTS,
    ("finish", {"summary": "Added RaftNode.has_lease and KVClient.read (lease reads)."}),
)

_STALE_VOTE_SOLUTION: tuple[ToolCall, ...] = (
    ("read", {"symbol": "RaftNode.handle_request_vote"}),
    (
        "replace_string",
        {
            "path": STALE_VOTE_BUG["path"],
            "old_string": STALE_VOTE_BUG["new_string"],
            "new_string": STALE_VOTE_BUG["old_string"],
        },
    ),
    _RAFT_KV_TESTS,
    ("finish", {"summary": "A vote now compares the last terms, then the log lengths (§5.4.1)."}),
)


RAFT_KV_TASKS: list[Task] = [
    Task(
        id="raft_kv/fix-failing-test",
        workspace="raft_kv",
        kind="bug",
        prompt="fix the failing test in raft_kv",
        setup=no_setup,
        check=_check_raft_kv_fixed,
        solution=_FIX_FAILING_TEST_SOLUTION,
    ),
    Task(
        id="raft_kv/compare-and-swap",
        workspace="raft_kv",
        kind="feature",
        prompt=(
            "add compare-and-swap to raft_kv: a command `cas KEY EXPECTED NEW` in "
            "KVStateMachine.apply that sets KEY to NEW only if KEY currently holds "
            "EXPECTED (a missing key never matches) and, like the other commands, "
            "returns the value KEY held before; and KVClient.cas(key, expected, new), "
            "which returns True when the swap happened"
        ),
        setup=_apply_demo_fix,
        check=_check_compare_and_swap,
        solution=_COMPARE_AND_SWAP_SOLUTION,
    ),
    Task(
        id="raft_kv/rename-entry",
        workspace="raft_kv",
        kind="refactor",
        prompt=(
            "rename the Entry class of raft_kv to LogEntry everywhere, tests included, "
            "without keeping an alias for the old name"
        ),
        setup=_apply_demo_fix,
        check=_check_rename_entry,
        solution=_RENAME_ENTRY_SOLUTION,
    ),
    Task(
        id="raft_kv/lease-read",
        workspace="raft_kv",
        kind="feature",
        prompt=(
            "add leader lease reads to raft_kv. RaftNode.has_lease() returns True when "
            "the node is the leader, has applied an entry of its current term, and a "
            "majority of the cluster (itself included) has answered AppendEntries "
            "requests of its current term that it sent less than its shortest election "
            "timeout (election_timeout_ms[0]) ago; time each answer from when the "
            "request was sent, not from when the reply arrived. KVClient.read(key) "
            "returns the key's value straight from the state machine of the cluster's "
            "leader when that leader holds a lease, without appending anything to any "
            "log, and otherwise falls back to KVClient.get"
        ),
        setup=_apply_demo_fix,
        check=_check_lease_read,
        solution=_LEASE_READ_SOLUTION,
    ),
    Task(
        id="raft_kv/stale-vote",
        workspace="raft_kv",
        kind="bug",
        prompt=(
            "raft_kv: a node sometimes votes for a candidate whose log is shorter than "
            "its own when both logs end in the same term, so a leader can be elected "
            "without every committed entry. Find the bug and fix it; the tests must "
            "stay as they are"
        ),
        setup=_plant_stale_vote_bug,
        check=_check_raft_kv_fixed,
        solution=_STALE_VOTE_SOLUTION,
    ),
]
