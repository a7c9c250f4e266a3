"""A symbol address, a new file's path and any argument are refused for what is wrong with
them (a path outside, missing, through a file; half a UTF-16 pair), with a stable code,
never as an internal error, and nothing on disk changes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from tests.conftest import snapshot

SOURCE = "def f():\n    return 1\n"
NEW_F = "def f():\n    return 2\n"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / "a.py").write_text(SOURCE)
    (tmp_path / "outside.py").write_text("def g():\n    return 'outside'\n")
    return root


@pytest.mark.parametrize(
    ("address", "code"),
    [
        ("nope.py::f", "FILE_NOT_FOUND"),
        ("pkg/::f", "FILE_NOT_FOUND"),
        ("pkg/nope.py::f", "FILE_NOT_FOUND"),
        ("../outside.py::g", "PATH_OUTSIDE_WORKSPACE"),
        ("/etc/passwd.py::f", "PATH_OUTSIDE_WORKSPACE"),
        (".git/x.py::f", "PATH_FORBIDDEN"),
        ("a.py::nope", "SYMBOL_NOT_FOUND"),
    ],
)
def test_a_symbol_address_is_refused_by_its_path(ws: Path, address: str, code: str) -> None:
    """Attack: ``nope.py::f`` made the index raise KeyError (INTERNAL_ERROR) for reads and
    writes alike, in every toolset."""
    before = snapshot(ws.parent)
    for toolset in ("intent", "broad"):
        rt = Runtime(ws, toolset=toolset)
        edit = (
            (
                "edit_symbols",
                {"edits": [{"symbol": address, "action": "replace", "new_source": NEW_F}]},
            )
            if toolset == "intent"
            else ("ast_replace_symbol", {"symbol": address, "new_source": NEW_F})
        )
        proposal = rt.propose(*edit)
        assert proposal.error is not None and proposal.error.code == code, proposal.error
    read = Runtime(ws).call("read", {"symbol": address})
    expected = "FILE_NOT_FOUND" if code == "PATH_FORBIDDEN" else code  # reads may look in .git
    assert read.error is not None and read.error.code == expected, read.error
    assert snapshot(ws.parent) == before


def test_a_symbol_address_may_spell_its_path_absolute_or_dotted(ws: Path) -> None:
    rt = Runtime(ws)
    for spelling in (f"{ws}/a.py::f", "./a.py::f"):
        assert "return 1" in rt.call("read", {"symbol": spelling}).output
    edit = {"symbol": f"{os.fspath(ws)}/a.py::f", "action": "replace", "new_source": NEW_F}
    assert rt.call("edit_symbols", {"edits": [edit]}).ok
    assert (ws / "a.py").read_text() == NEW_F


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("a.py/x.py", "FILE_NOT_FOUND"),
        ("a.py/deeper/x.py", "FILE_NOT_FOUND"),
        ("newdir/", "INVALID_ARGS"),
        (".", "INVALID_ARGS"),
    ],
)
def test_a_new_file_under_a_file_or_named_as_a_folder_is_refused_when_proposed(
    ws: Path, path: str, code: str
) -> None:
    """Attack: ``create a.py/x.py`` was proposed, then refused at commit as STALE_FILE (a
    wrong reason); ``newdir/`` created a file named newdir."""
    before = snapshot(ws.parent)
    for toolset, tool, args in (
        ("intent", "create", {"path": path, "content": "x = 1\n"}),
        ("broad", "write_file", {"path": path, "content": "x = 1\n"}),
    ):
        proposal = Runtime(ws, toolset=toolset).propose(tool, args)
        assert proposal.error is not None and proposal.error.code in (code, "FILE_EXISTS"), (
            tool,
            proposal.error,
        )
    assert snapshot(ws.parent) == before


def test_a_new_file_in_new_folders_is_still_created(ws: Path) -> None:
    assert Runtime(ws).call("create", {"path": "pkg/new/deep.py", "content": "x = 1\n"}).ok
    assert (ws / "pkg" / "new" / "deep.py").read_text() == "x = 1\n"


@pytest.mark.parametrize(
    ("tool", "args", "where"),
    [
        ("create", {"path": "b.txt", "content": "a\ud800b"}, "content"),
        (
            "replace_string",
            {"path": "a.py", "old_string": "1", "new_string": "\udc80"},
            "new_string",
        ),
        (
            "multiedit",
            {"edits": [{"path": "a.py", "old_string": "1", "new_string": "2\udfff"}]},
            "edits.0.new_string",
        ),
        ("search", {"query": "\ud800"}, "query"),
    ],
)
def test_half_a_utf16_pair_is_refused_as_the_models_to_fix(
    ws: Path, tool: str, args: dict[str, object], where: str
) -> None:
    """Attack: JSON arguments holding "\\ud800" alone. Staging failed with a
    UnicodeEncodeError (INTERNAL_ERROR); as a JSON string or a dict, it is INVALID_ARGS
    naming the argument."""
    before = snapshot(ws.parent)
    rt = Runtime(ws)
    for given in (args, json.dumps(args)):
        proposal = rt.propose(tool, given)
        assert proposal.error is not None and proposal.error.code == "INVALID_ARGS"
        assert proposal.error.message.startswith(f"{where} holds a lone surrogate")
    assert snapshot(ws.parent) == before


def test_a_whole_utf16_pair_is_a_character(ws: Path) -> None:
    text = json.dumps({"path": "smile.txt", "content": "\U0001f600\n"})  # "\ud83d\ude00"
    assert "\\ud83d\\ude00" in text
    assert Runtime(ws).call("create", text).ok
    assert (ws / "smile.txt").read_text(encoding="utf-8") == "\U0001f600\n"


def test_arguments_nested_past_the_recursion_limit_are_refused_not_raised(ws: Path) -> None:
    """Attack: arguments nested 5,000 deep (a dict from code) or 100,000 deep (JSON text).
    The JSON parser's RecursionError escaped ``propose``; so did the lone-surrogate walk's,
    while it recursed."""
    nested: list[object] = []
    inner = nested
    for _ in range(5_000):
        inner.append([])
        inner = inner[-1]  # type: ignore[assignment]
    rt = Runtime(ws)
    refused = rt.propose("read", {"path": "a.py", "x": nested})
    assert refused.error is not None and refused.error.code == "INVALID_ARGS"
    inner.append("\ud800")
    refused = rt.propose("search", {"query": "f", "x": nested})
    assert refused.error is not None and "lone surrogate" in refused.error.message
    text = '{"path": "a.py", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    refused = rt.propose("read", text)
    assert refused.error is not None and refused.error.code == "INVALID_ARGS"
    assert "nested too deeply" in refused.error.message


def test_a_call_nested_past_the_recursion_limit_is_shown_logged_and_resumed(ws: Path) -> None:
    """Attack: the model's arguments nested 100,000 deep. The call is refused, and its card,
    the metrics and a resume of the log, which parse the arguments again, raised
    RecursionError instead of showing them raw."""
    from grinta_jupyter.acp.replay import replay
    from grinta_jupyter.agent.models import ScriptedModel, call, raw_call, reply
    from grinta_jupyter.agent.session import Session
    from grinta_jupyter.events.metrics import measure
    from grinta_jupyter.jupyter.mime import trace_bundle

    deep = '{"path": "a.py", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    model = ScriptedModel(
        [reply("", raw_call("read", deep)), reply("", call("finish", summary="ok"))]
    )
    session = Session("look", model=model, root=ws, policy="auto")
    session.run_sync()
    observation = session.steps[0].observation
    assert observation is not None and "nested too deeply" in observation.output
    assert "nested too deeply" in json.dumps(trace_bundle(session))
    assert measure(session.log.events).steps == 2
    resumed = Session.resume(session.log_path, model=ScriptedModel([]))
    assert resumed.done and len(resumed.steps) == 2
    assert list(replay(resumed.log.events, resumed.root, resumed.secrets.redact))
