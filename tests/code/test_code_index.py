"""SymbolIndex: addresses, ambiguity, suggestions, and incremental refresh on a temp workspace."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from grinta_jupyter.code.index import SymbolIndex, parse_address, walk_files

FIXTURES = Path(__file__).parent.parent / "fixtures" / "symbols"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "raft").mkdir()
    shutil.copy(FIXTURES / "sample.py", tmp_path / "raft" / "node.py")
    shutil.copy(FIXTURES / "Sample.java", tmp_path / "raft" / "Sample.java")
    shutil.copy(FIXTURES / "sample.go", tmp_path / "raft" / "node.go")
    (tmp_path / "other.py").write_text(
        "class Other:\n    def append_entries(self):\n        pass\n"
    )
    for skipped in (".git", "node_modules", "__pycache__", ".hidden", "venv"):
        (tmp_path / skipped).mkdir()
        (tmp_path / skipped / "junk.py").write_text("def junk():\n    pass\n")
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr\n")
    (tmp_path / "env" / "junk.py").write_text("def junk():\n    pass\n")
    return tmp_path


def test_parse_address() -> None:
    assert parse_address("raft/node.py::RaftNode.append_entries") == (
        "raft/node.py",
        "RaftNode.append_entries",
    )
    assert parse_address("./node.py::f") == ("node.py", "f")
    assert parse_address("RaftNode.append_entries") == (None, "RaftNode.append_entries")
    assert parse_address("ns::Foo::bar") == (None, "ns.Foo.bar")  # C++ style, not a path
    assert parse_address("Node#send") == (None, "Node.send")  # Ruby style
    assert parse_address("main.rs::Node::new") == ("main.rs", "Node.new")


def test_default_lister_skips_vcs_caches_hidden_and_venvs(workspace: Path) -> None:
    files = set(walk_files(workspace))
    assert files == {
        "raft/node.py",
        "raft/Sample.java",
        "raft/node.go",
        "other.py",
    }


def test_unique_resolution(workspace: Path) -> None:
    index = SymbolIndex(workspace)
    resolution = index.resolve("RaftNode.append_entries")
    assert [(s.path, s.qualname, s.def_line) for s in resolution.matches] == [
        ("raft/node.py", "RaftNode.append_entries", 27)
    ]
    assert resolution.unique is resolution.matches[0]
    assert resolution.suggestions == []


def test_suffix_match_is_ambiguous_across_files(workspace: Path) -> None:
    index = SymbolIndex(workspace)
    resolution = index.resolve("append_entries")
    assert sorted(s.address for s in resolution.matches) == [
        "other.py::Other.append_entries",
        "raft/node.py::RaftNode.append_entries",
    ]
    assert resolution.unique is None


def test_exact_qualname_beats_suffix(workspace: Path) -> None:
    (workspace / "pkg.py").write_text(
        "def f():\n    pass\n\n\nclass Node:\n    def f(self):\n        pass\n"
    )
    index = SymbolIndex(workspace)
    assert [s.qualname for s in index.resolve("f").matches] == ["f"]
    assert [s.qualname for s in index.resolve("Node.f").matches] == ["Node.f"]


def test_dotted_suffix_of_a_deeper_qualname(workspace: Path) -> None:
    index = SymbolIndex(workspace)
    assert [s.address for s in index.resolve("Log.append").matches] == [
        "raft/Sample.java::RaftNode.Log.append",
        "raft/node.py::RaftNode.Log.append",
    ]
    assert [s.qualname for s in index.resolve("raft/Sample.java::Log.append").matches] == [
        "RaftNode.Log.append"
    ]


def test_overloads_are_all_candidates(workspace: Path) -> None:
    index = SymbolIndex(workspace)
    java = index.resolve("raft/Sample.java::RaftNode.send")
    assert [s.def_line for s in java.matches] == [20, 22]
    python = index.resolve("parse")
    assert [s.def_line for s in python.matches] == [38, 40, 41]


def test_path_qualified_restricts_to_the_file(workspace: Path) -> None:
    index = SymbolIndex(workspace)
    resolution = index.resolve("other.py::append_entries")
    assert [s.address for s in resolution.matches] == ["other.py::Other.append_entries"]
    assert index.resolve("other.py::RaftNode").matches == []


def test_not_found_suggests_close_names(workspace: Path) -> None:
    index = SymbolIndex(workspace)
    resolution = index.resolve("RaftNode.apend_entries")
    assert resolution.matches == []
    assert "RaftNode.append_entries" in [s.qualname for s in resolution.suggestions]
    assert len(resolution.suggestions) <= 5
    wrong_owner = index.resolve("Nobody.append_entries")
    assert {s.qualname for s in wrong_owner.suggestions} == {
        "RaftNode.append_entries",
        "Other.append_entries",
    }
    assert index.resolve("zzzzqqq").suggestions == []
    # A short, misspelt member of a known container.
    assert index.resolve("RaftNode.trm").suggestions[0].qualname == "RaftNode.term"


def test_refresh_after_an_edit_reparses_only_that_file(workspace: Path) -> None:
    index = SymbolIndex(workspace)
    assert index.refresh() == 4
    assert index.refresh() == 0
    node = workspace / "raft" / "node.py"
    node.write_text("# moved down\n\n\n" + node.read_text())
    assert index.refresh() == 1
    assert index.resolve("RaftNode.append_entries").matches[0].def_line == 30
    # Touching a file without changing it costs a hash, not a parse.
    os.utime(node, ns=(1, 1))
    assert index.refresh() == 0
    # Deleting a file drops its symbols.
    (workspace / "other.py").unlink()
    assert index.refresh() == 0
    assert [s.path for s in index.resolve("append_entries").matches] == ["raft/node.py"]


def test_refresh_of_given_paths(workspace: Path) -> None:
    index = SymbolIndex(workspace)
    index.refresh()
    (workspace / "new.py").write_text("def fresh():\n    pass\n")
    (workspace / "other.py").write_text("def changed():\n    pass\n")
    assert index.refresh(["new.py", "other.py"]) == 2
    assert index.resolve("fresh").unique is not None
    assert index.resolve("Other").matches == []


def test_path_qualified_resolve_sees_a_changed_file_without_refresh(workspace: Path) -> None:
    index = SymbolIndex(workspace)
    index.refresh()
    (workspace / "other.py").write_text("def renamed():\n    pass\n")
    assert index.resolve("other.py::renamed").unique is not None


def test_outline_and_symbols(workspace: Path) -> None:
    index = SymbolIndex(workspace)
    outline = index.outline("raft/node.go")
    assert [s.qualname for s in outline][:3] == ["MaxPeers", "Follower", "Leader"]
    assert index.symbols("raft/node.go") == outline
    assert {s.path for s in index.symbols()} == {
        "raft/node.py",
        "raft/Sample.java",
        "raft/node.go",
        "other.py",
    }
    assert index.outline("missing.py") == []


def test_custom_lister(workspace: Path) -> None:
    index = SymbolIndex(workspace, list_files=lambda: ["other.py"])
    assert index.paths() == ["other.py"]


def test_search_ranks_exact_then_prefix_then_substring(workspace: Path) -> None:
    index = SymbolIndex(workspace)
    names = [s.qualname for s in index.search("append")]
    assert names[0] == "RaftNode.Log.append"
    assert set(names) >= {"RaftNode.append_entries", "Other.append_entries", "RaftNode.Log.append"}
    assert [s.qualname for s in index.search("Node.append_entries")] == ["RaftNode.append_entries"]
    assert [s.qualname for s in index.search("other.py::append")] == ["Other.append_entries"]
    assert index.search("apend_entries", limit=3)[0].name == "append_entries"


def test_parallel_cold_index_matches_serial(workspace: Path) -> None:
    for i in range(30):
        (workspace / f"gen{i}.py").write_text(f"class C{i}:\n    def m(self):\n        pass\n")
    serial = SymbolIndex(workspace, workers=1)
    serial.refresh()
    parallel = SymbolIndex(workspace, workers=2, parallel_min_bytes=0)
    assert parallel.refresh() == 34
    assert parallel.symbols() == serial.symbols()
