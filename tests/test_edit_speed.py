"""What a symbol edit costs, counted in parses (timings live in benchmarks/bench_runtime.py).

An ``edit_symbols`` proposal on a Python file parses the file once with
tree-sitter (to find the definition again), parses the new text, and compiles
the result once (or, in a large file, only the definitions it touched); the
runtime's own check before commit reuses that compile. The result's tree is
kept, so the next edit of the file re-parses incrementally. libcst is not used
at all. The parsers are the real ones, wrapped to count calls.
"""

from __future__ import annotations

import ast
import sysconfig
import uuid
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.code import edits, symbols
from grinta_jupyter.code.edits import delete_symbol, insert_symbol, replace_symbol
from grinta_jupyter.runtime import grammars, pyast, validation
from grinta_jupyter.runtime.proposal import WriteProposal
from grinta_jupyter.tools.facade import _REINDEXER

STDLIB = Path(sysconfig.get_paths()["stdlib"])
REPO = Path(__file__).resolve().parent.parent


class Parses:
    """Counts parses of the whole file (texts at least ``size`` characters long)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, size: int) -> None:
        self.size = size
        self.counts: Counter[str] = Counter()
        self.texts: Counter[tuple[str, bytes]] = Counter()  # (kind, text): how many parses
        real_parser_for = symbols.parser_for
        real_compile = validation._python
        real_ast_parse = pyast.parse

        def parser_for(language: str) -> Any:
            return _CountingParser(real_parser_for(language), self)

        def compile_text(text: str, path: str, flags: int = 0) -> validation.FirstError:
            self.count("compile", text)
            return real_compile(text, path, flags)

        def ast_parse(source: Any, *args: Any, **kwargs: Any) -> ast.Module:
            self.count("ast", source)
            return real_ast_parse(source, *args, **kwargs)

        monkeypatch.setattr(symbols, "parser_for", parser_for)
        monkeypatch.setattr(edits, "parser_for", parser_for)
        monkeypatch.setattr(grammars, "parser_for", parser_for)  # the check of other languages
        monkeypatch.setattr(validation, "_python", compile_text)
        monkeypatch.setitem(validation.PARSERS, "python", compile_text)
        monkeypatch.setattr(pyast, "parse", ast_parse)
        try:
            import libcst
        except ImportError:  # pragma: no cover - libcst is a dependency today
            return

        def libcst_parse(source: Any, *args: Any, **kwargs: Any) -> Any:
            self.counts["libcst"] += 1
            return real_libcst(source, *args, **kwargs)

        real_libcst = libcst.parse_module
        monkeypatch.setattr(libcst, "parse_module", libcst_parse)

    def count(self, kind: str, text: str | bytes) -> None:
        if len(text) >= self.size:
            self.counts[kind] += 1
            self.texts[kind, text if isinstance(text, bytes) else text.encode()] += 1

    def reset(self) -> None:
        self.counts.clear()
        self.texts.clear()


class _CountingParser:
    def __init__(self, parser: Any, parses: Parses) -> None:
        self._parser = parser
        self._parses = parses

    def parse(self, source: bytes, *args: Any) -> Any:
        self._parses.count("tree-sitter incremental" if args else "tree-sitter", source)
        return self._parser.parse(source, *args)


def _workspace(tmp_path: Path, module: str) -> tuple[Runtime, str, int]:
    """A copy of a standard-library module, made unique so no cache knows its text."""
    text = (STDLIB / module).read_text() + f"\n# {uuid.uuid4()}\n"
    root = tmp_path / "ws"
    root.mkdir()
    name = Path(module).name
    (root / name).write_text(text)
    rt = Runtime(root)
    assert rt.call("read", {"path": name, "outline": True}).ok  # the index is built
    return rt, name, len(text) // 2


def test_symbol_replace_parses_the_file_once_and_compiles_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt, name, size = _workspace(tmp_path, "dataclasses.py")  # about 1,500 lines
    parses = Parses(monkeypatch, size)
    source = (tmp_path / "ws" / name).read_text()
    start = source.index("def _process_class(")
    end = source.index("\ndef ", start + 1)
    new = source[start:end].replace("frozen,", "frozen,  # changed", 1)
    proposal = rt.propose(
        "edit_symbols",
        {"edits": [{"symbol": f"{name}::_process_class", "action": "replace", "new_source": new}]},
    )
    assert proposal.ok, proposal.error
    # The result's tree is parsed when first asked for, off the proposal's path.
    assert parses.counts == Counter({"tree-sitter": 1, "compile": 1})
    assert rt.commit(proposal).ok
    _REINDEXER.wait()  # what the commit left to the thread: the index re-reads the file from
    # the kept tree, and the file's layout is learnt for the next edit (one ``ast`` parse)
    assert parses.counts == Counter(
        {"tree-sitter": 1, "compile": 1, "tree-sitter incremental": 1, "ast": 1}
    )
    assert (
        "def _process_class(cls, init, repr, eq, order, unsafe_hash, frozen,  # changed"
        in (tmp_path / "ws" / name).read_text()
    )


@pytest.mark.parametrize(
    ("action", "new_source"),
    [("insert_after", "def added():\n    return 1\n"), ("delete", None)],
)
def test_symbol_insert_and_delete_parse_the_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, action: str, new_source: str | None
) -> None:
    rt, name, size = _workspace(tmp_path, "dataclasses.py")
    parses = Parses(monkeypatch, size)
    edit: dict[str, str] = {"symbol": f"{name}::_process_class", "action": action}
    if new_source is not None:
        edit["new_source"] = new_source
    proposal = rt.propose("edit_symbols", {"edits": [edit]})
    assert proposal.ok, proposal.error
    assert parses.counts == Counter({"tree-sitter": 1, "compile": 1})


@pytest.mark.parametrize(
    ("action", "new_source"),
    [
        ("replace", "export function added(): number {\n  return 1;\n}\n"),
        ("insert_after", "export function added(): number {\n  return 1;\n}\n"),
        ("delete", None),
    ],
)
def test_a_typescript_symbol_edit_parses_its_result_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, action: str, new_source: str | None
) -> None:
    """The file is parsed once to find the definition again, and the result once: the edit
    checks the text it made and the runtime checks it again before the proposal is shown,
    and one parse serves both (each was a whole parse)."""
    text = (REPO / "labextension" / "src" / "schema.ts").read_text() + f"\n// {uuid.uuid4()}\n"
    root = tmp_path / "ws"
    root.mkdir()
    (root / "schema.ts").write_text(text)
    rt = Runtime(root)
    assert rt.call("read", {"path": "schema.ts", "outline": True}).ok  # the index is built
    parses = Parses(monkeypatch, len(text) // 2)
    edit: dict[str, str] = {"symbol": "schema.ts::parseMark", "action": action}
    if new_source is not None:
        edit["new_source"] = new_source
    proposal = rt.propose("edit_symbols", {"edits": [edit]})
    assert proposal.ok, proposal.error
    assert isinstance(proposal, WriteProposal)
    result = proposal.changes[0].after
    assert result is not None
    assert parses.texts == Counter(
        {("tree-sitter", text.encode()): 1, ("tree-sitter", result.encode()): 1}
    ), parses.counts


def test_large_file_compiles_only_the_touched_definitions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt, name, size = _workspace(tmp_path, "tarfile.py")  # about 2,900 lines
    parses = Parses(monkeypatch, size)
    edit = {"symbol": f"{name}::TarInfo.get_info", "action": "replace"}
    body = "def get_info(self):\n    return dict(name=self.name)  # v{}\n"
    first = rt.propose("edit_symbols", {"edits": [{**edit, "new_source": body.format(1)}]})
    assert rt.commit(first).ok  # the first edit learns that the file compiles
    _REINDEXER.wait()  # the commit re-indexed the file and learnt its layout in a thread
    parses.reset()
    second = rt.propose("edit_symbols", {"edits": [{**edit, "new_source": body.format(2)}]})
    assert second.ok, second.error
    assert parses.counts == Counter()  # the tree the index located the symbols on serves


def test_the_index_takes_a_committed_symbol_edit_s_definitions_from_its_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Re-indexing a file just committed from a symbol edit parses nothing: the edit's kept
    tree gives its definitions, the same as a fresh parse of the file on disk."""
    rt, name, size = _workspace(tmp_path, "tarfile.py")
    edit = {"symbol": f"{name}::TarInfo.get_info", "action": "replace"}
    body = "def get_info(self):\n    return dict(name=self.name)  # v1\n"
    proposal = rt.propose("edit_symbols", {"edits": [{**edit, "new_source": body}]})
    assert proposal.ok, proposal.error
    parses = Parses(monkeypatch, size)
    assert rt.commit(proposal).ok
    rt.symbols.refresh([name])
    assert parses.counts["tree-sitter"] == 0, parses.counts
    on_disk = (tmp_path / "ws" / name).read_bytes()
    monkeypatch.setattr(edits, "_LAST_TREE", edits._TreeCache())  # a fresh parse, to compare
    assert rt.symbols.symbols(name) == symbols.extract_symbols(name, on_disk)


def test_kept_tree_gives_what_a_fresh_parse_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    """A chain of edits served by kept trees ends where the same edits from fresh parses do."""
    source = (STDLIB / "argparse.py").read_text()
    chained = fresh = source
    for step in range(12):
        for use_kept in (True, False):
            if not use_kept:
                monkeypatch.setattr(edits, "_LAST_TREE", edits._TreeCache())
            text = chained if use_kept else fresh
            found = symbols.extract_symbols("argparse.py", text.encode())
            methods = [s for s in found if s.kind == "method"]
            target = methods[(step * 11) % len(methods)]
            if step % 3 == 0:
                new_source = f"def added_{step}(self):\n    return {step}\n"
                result = insert_symbol(text, target, new_source, "after")
            elif step % 3 == 1:
                result = delete_symbol(text, target)
            else:
                body = text.encode()[target.start_byte : target.end_byte].decode()
                result = replace_symbol(text, target, body + f"  # {step}")
            if use_kept:
                chained = result
                kept = edits._LAST_TREE.get("argparse.py", "python", result.encode())
                assert kept is not None
                _, located = symbols.locate_nodes("argparse.py", result.encode(), "python", kept)
                assert [s for s, _ in located] == symbols.extract_symbols(
                    "argparse.py", result.encode()
                )
            else:
                fresh = result
        assert chained == fresh


def test_python_edit_still_refuses_a_result_that_does_not_compile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``return`` outside a function parses (so tree-sitter and ast accept the text) but
    does not compile: the fast check is compile(), not a parser."""
    rt, name, _ = _workspace(tmp_path, "dataclasses.py")
    proposal = rt.propose(
        "edit_symbols",
        {
            "edits": [
                {
                    "symbol": f"{name}::_process_class",
                    "action": "insert_after",
                    "new_source": "return 1\n",
                }
            ]
        },
    )
    assert proposal.error is not None
    assert proposal.error.code == "SYNTAX_ERROR"
    assert "'return' outside function" in proposal.error.message


def test_new_source_with_an_invalid_escape_is_accepted_quietly(tmp_path: Path) -> None:
    """Python warns about ``"\\."`` when parsing; that is the file's business, not an error."""
    rt, name, _ = _workspace(tmp_path, "queue.py")
    new = 'def added():\n    return "a\\.b"\n'
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        proposal = rt.propose(
            "edit_symbols",
            {"edits": [{"symbol": f"{name}::Queue", "action": "insert_after", "new_source": new}]},
        )
    assert proposal.ok, proposal.error


def test_edits_that_cut_the_end_of_a_large_file(tmp_path: Path) -> None:
    """The region check must cope with a change at the very end (it once ran past it)."""
    for module in ("tarfile.py", "dataclasses.py"):
        (tmp_path / module).write_text((STDLIB / module).read_text())
    rt = Runtime(tmp_path)
    main_block = "\nif __name__ == '__main__':\n    main()\n"
    cut = rt.call(
        "replace_string", {"path": "tarfile.py", "old_string": main_block, "new_string": "\n"}
    )
    assert cut.ok, cut.output
    assert (tmp_path / "tarfile.py").read_text().endswith("file created.'.format(tar_name))\n\n")
    last = rt.call(
        "edit_symbols", {"edits": [{"symbol": "dataclasses.py::replace", "action": "delete"}]}
    )
    assert last.ok, last.output
    assert "def replace(" not in (tmp_path / "dataclasses.py").read_text()
