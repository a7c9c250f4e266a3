"""Symbol extraction per language, against hand-checked fixtures in tests/fixtures/symbols."""

from __future__ import annotations

from pathlib import Path

import pytest

from grinta_jupyter.code.symbols import SYMBOL_LANGUAGES, Symbol, extract_symbols

FIXTURES = Path(__file__).parent.parent / "fixtures" / "symbols"

# (qualname, kind, start_line, end_line) for every symbol, in source order.
EXPECTED: dict[str, list[tuple[str, str, int, int]]] = {
    "Sample.java": [
        ("RaftNode", "class", 5, 37),
        ("RaftNode.RaftNode", "method", 12, 12),
        ("RaftNode.RaftNode", "method", 14, 16),
        ("RaftNode.send", "method", 18, 20),
        ("RaftNode.send", "method", 22, 22),
        ("RaftNode.Log", "class", 24, 26),
        ("RaftNode.Log.append", "method", 25, 25),
        ("RaftNode.Role", "enum", 28, 32),
        ("RaftNode.Role.leads", "method", 31, 31),
        ("Peer", "interface", 39, 41),
        ("Peer.send", "method", 40, 40),
        ("Entry", "class", 43, 47),
        ("Entry.Entry", "method", 44, 46),
        ("Marker", "interface", 49, 49),
    ],
    "sample.c": [
        ("MAX_PEERS", "constant", 3, 3),
        ("node", "struct", 6, 10),
        ("entry_t", "struct", 12, 14),
        ("peer_id", "type", 16, 16),
        ("role", "enum", 18, 18),
        ("append_entries", "function", 20, 24),
        ("node_name", "function", 26, 26),
        ("main", "function", 28, 30),
    ],
    "sample.cpp": [
        ("raft", "namespace", 3, 31),
        ("raft.Node", "class", 5, 21),
        ("raft.Node.append_entries", "method", 10, 13),
        ("raft.Node.send", "method", 15, 15),
        ("raft.Node.send", "method", 16, 16),
        ("raft.Node.Config", "struct", 18, 20),
        ("raft.Node.Node", "method", 23, 23),
        ("raft.Node.term", "method", 25, 25),
        ("raft.Role", "enum", 27, 27),
        ("raft.PeerId", "type", 29, 29),
        ("util.strings", "namespace", 33, 35),
        ("util.strings.trim", "function", 34, 34),
        ("main", "function", 37, 37),
    ],
    "sample.go": [
        ("MaxPeers", "constant", 5, 6),
        ("Follower", "constant", 9, 9),
        ("Leader", "constant", 10, 10),
        ("Node", "struct", 13, 17),
        ("Peer", "interface", 20, 23),
        ("Term", "type", 24, 24),
        ("Node.AppendEntries", "method", 27, 30),
        ("Node.String", "method", 32, 34),
        ("List", "struct", 36, 36),
        ("List.Push", "method", 38, 38),
        ("NewNode", "function", 40, 42),
    ],
    "sample.js": [
        ("DEFAULT_PORT", "constant", 4, 4),
        ("handler", "function", 5, 5),
        ("RaftNode", "class", 8, 30),
        ("RaftNode.constructor", "method", 12, 15),
        ("RaftNode.appendEntries", "method", 17, 21),
        ("RaftNode.appendEntries.retry", "function", 19, 19),
        ("RaftNode.create", "method", 23, 25),
        ("RaftNode.onTick", "method", 27, 29),
        ("main", "function", 32, 35),
        ("main.local", "function", 33, 33),
        ("ids", "function", 37, 39),
    ],
    "sample.py": [
        ("MAX_PEERS", "constant", 5, 5),
        ("_DEFAULT_TIMEOUT", "constant", 6, 6),
        ("RaftNode", "class", 10, 34),
        ("RaftNode.Log", "class", 16, 18),
        ("RaftNode.Log.append", "method", 17, 18),
        ("RaftNode.term", "method", 20, 22),
        ("RaftNode.append_entries", "method", 24, 31),
        ("RaftNode.append_entries.retry", "function", 28, 29),
        ("RaftNode.tick", "method", 33, 34),
        ("parse", "function", 37, 38),
        ("parse", "function", 39, 40),
        ("parse", "function", 41, 42),
        ("conditional", "function", 46, 49),
        ("conditional.Local", "class", 47, 48),
    ],
    "sample.rb": [
        ("Raft", "module", 1, 30),
        ("Raft.VERSION", "constant", 3, 3),
        ("Raft.Node", "class", 5, 29),
        ("Raft.Node.initialize", "method", 9, 11),
        ("Raft.Node.append_entries", "method", 13, 16),
        ("Raft.Node.create", "method", 18, 20),
        ("Raft.Node.registry", "method", 23, 23),
        ("Raft.Node.Log", "class", 26, 28),
        ("Raft.Node.Log.append", "method", 27, 27),
        ("Raft.Peer", "class", 32, 34),
        ("Raft.Peer.send", "method", 33, 33),
        ("helper", "function", 36, 38),
    ],
    "sample.rs": [
        ("MAX_PEERS", "constant", 5, 6),
        ("GREETING", "constant", 7, 7),
        ("Node", "struct", 9, 13),
        ("Role", "enum", 15, 18),
        ("Peer", "trait", 20, 26),
        ("Peer.send", "method", 21, 21),
        ("Peer.id", "method", 23, 25),
        ("Node.new", "method", 29, 32),
        ("Node.append_entries", "method", 34, 35),
        ("Node.fmt", "method", 39, 41),
        ("Vec.send", "method", 45, 45),
        ("Id", "type", 48, 48),
        ("tests", "module", 50, 52),
        ("tests.helper", "function", 51, 51),
        ("main", "function", 54, 56),
        ("main.inner", "function", 55, 55),
    ],
    "sample.ts": [
        ("Peer", "interface", 1, 5),
        ("PeerId", "type", 7, 7),
        ("Role", "enum", 9, 12),
        ("TIMEOUT_MS", "constant", 14, 14),
        ("Cluster", "namespace", 16, 20),
        ("Cluster.size", "function", 17, 19),
        ("raft", "module", 22, 24),
        ("raft.connect", "function", 23, 23),
        ("RaftNode", "class", 26, 42),
        ("RaftNode.send", "method", 30, 35),
        ("RaftNode.appendEntries", "method", 37, 39),
        ("RaftNode.onTick", "method", 41, 41),
        ("Store", "class", 44, 46),
        ("Store.get", "method", 45, 45),
        ("parse", "function", 48, 52),
    ],
    "sample.tsx": [
        ("Props", "type", 3, 3),
        ("Greeting", "function", 5, 8),
        ("Panel", "function", 10, 13),
        ("Panel.onClick", "function", 11, 11),
        ("Clock", "class", 15, 19),
        ("Clock.render", "method", 16, 18),
    ],
}


def _symbols(name: str) -> tuple[bytes, list[Symbol]]:
    source = (FIXTURES / name).read_bytes()
    return source, extract_symbols(name, source)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_exact_symbols(name: str) -> None:
    _, symbols = _symbols(name)
    assert [(s.qualname, s.kind, s.start_line, s.end_line) for s in symbols] == EXPECTED[name]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_spans_agree_with_lines(name: str) -> None:
    source, symbols = _symbols(name)
    lines = source.split(b"\n")
    for s in symbols:
        assert s.name == s.qualname.rpartition(".")[2]
        assert s.path == name
        assert s.start_line <= s.def_line <= s.end_line
        # start_byte is the first token of the span, end_byte its last byte.
        assert source.count(b"\n", 0, s.start_byte) + 1 == s.start_line
        assert source.count(b"\n", 0, s.end_byte) + 1 == s.end_line
        text = source[s.start_byte : s.end_byte]
        assert text == text.strip()
        assert lines[s.def_line - 1].decode().strip() == s.signature
        assert s.name.encode() in source[s.start_byte : s.end_byte]


def test_every_required_language_has_symbols() -> None:
    required = {
        "python",
        "javascript",
        "typescript",
        "tsx",
        "go",
        "rust",
        "java",
        "c",
        "cpp",
        "ruby",
    }
    assert required <= SYMBOL_LANGUAGES
    covered = {
        extract_symbols(name, (FIXTURES / name).read_bytes())[0].language for name in EXPECTED
    }
    assert covered == required


def _get(name: str, qualname: str, index: int = 0) -> tuple[bytes, Symbol]:
    source, symbols = _symbols(name)
    return source, [s for s in symbols if s.qualname == qualname][index]


def test_python_span_includes_comment_and_decorators() -> None:
    source, s = _get("sample.py", "RaftNode.append_entries")
    text = source[s.start_byte : s.end_byte].decode()
    assert text.startswith("# Sends entries to one peer.\n    @staticmethod\n")
    assert text.endswith("return retry()")
    assert (s.def_line, s.signature) == (27, "def append_entries(peer: int) -> None:")
    assert s.language == "python"


def test_python_overloads_are_separate() -> None:
    _, symbols = _symbols("sample.py")
    assert [s.def_line for s in symbols if s.qualname == "parse"] == [38, 40, 41]


def test_typescript_overload_signatures_join_the_implementation() -> None:
    source, s = _get("sample.ts", "RaftNode.send")
    text = source[s.start_byte : s.end_byte].decode()
    assert text.startswith("// Overloads stay one symbol.\n  send(msg: string): void;")
    assert s.signature == "send(msg: any): void {"


def test_typescript_same_line_decorator_is_in_the_span() -> None:
    source, s = _get("sample.ts", "RaftNode.appendEntries")
    assert source[s.start_byte : s.end_byte].startswith(b"@Log() appendEntries")


def test_go_method_and_grouped_specs() -> None:
    source, s = _get("sample.go", "Node.AppendEntries")
    assert source[s.start_byte : s.end_byte].startswith(b"// AppendEntries sends entries.\nfunc")
    source, peer = _get("sample.go", "Peer")
    assert source[peer.start_byte : peer.end_byte].startswith(b"// Peer talks")
    assert source[peer.start_byte : peer.end_byte].endswith(b"}")


def test_rust_attributes_and_doc_comments() -> None:
    source, s = _get("sample.rs", "Node")
    assert source[s.start_byte : s.end_byte].startswith(b"/// A node.\n#[derive(Debug, Clone)]")
    _, new = _get("sample.rs", "Node.new")
    assert new.kind == "method" and new.signature == "pub fn new(id: u64) -> Self {"


def test_java_overloaded_constructors_and_annotations() -> None:
    _, symbols = _symbols("Sample.java")
    constructors = [s for s in symbols if s.qualname == "RaftNode.RaftNode"]
    assert [s.def_line for s in constructors] == [12, 14]
    source, send = _get("Sample.java", "RaftNode.send")
    assert source[send.start_byte : send.end_byte].startswith(b"// Sends entries.\n    @Override")
    assert send.def_line == 20


def test_c_struct_span_includes_semicolon() -> None:
    source, s = _get("sample.c", "node")
    assert source[s.start_byte : s.end_byte].startswith(b"/* A node. */\nstruct node {")
    assert source[s.start_byte : s.end_byte].endswith(b"};")


def test_cpp_out_of_line_members_join_their_class() -> None:
    _, symbols = _symbols("sample.cpp")
    kinds = {s.qualname: s.kind for s in symbols}
    assert kinds["raft.Node.term"] == "method"
    assert kinds["util.strings.trim"] == "function"
    source, s = _get("sample.cpp", "raft.Node")
    assert source[s.start_byte : s.end_byte].startswith(b"/// A node.\ntemplate <typename T>")


def test_ruby_singleton_methods() -> None:
    _, s = _get("sample.rb", "Raft.Node.create")
    assert (s.kind, s.signature) == ("method", "def self.create")


def test_non_ascii_before_symbol_byte_offsets() -> None:
    source = "x = 'café ☕'\n\n# naïve comment\ndef f():\n    return 'é'\n".encode()
    (s,) = extract_symbols("m.py", source)
    assert source[s.start_byte : s.end_byte].decode() == "# naïve comment\ndef f():\n    return 'é'"
    assert (s.start_line, s.def_line, s.end_line) == (3, 4, 5)


def test_crlf_source() -> None:
    source = b"class A:\r\n    def f(self):\r\n        pass\r\n"
    symbols = extract_symbols("m.py", source)
    assert [(s.qualname, s.start_line, s.end_line) for s in symbols] == [
        ("A", 1, 3),
        ("A.f", 2, 3),
    ]
    assert all(not source[s.start_byte : s.end_byte].endswith(b"\r") for s in symbols)


def test_unsupported_language_has_no_symbols() -> None:
    assert extract_symbols("notes.md", b"# Title\n") == []
    assert extract_symbols("data.json", b"{}") == []


def test_minified_line_keeps_signatures_short() -> None:
    source = ("function a(){return 1}" * 2000).encode()
    symbols = extract_symbols("bundle.js", source)
    assert len(symbols) == 2000
    assert all(len(s.signature) <= 240 for s in symbols)
