"""Error codes are a string-valued Enum whose wire format is the plain code.

``ErrorCode.NOT_FOUND == "NOT_FOUND"``, and str(), format(), %-formatting and
JSON all give ``NOT_FOUND`` on every supported Python (3.10's and 3.11's Enum
formatting differ, which is why the class defines ``__str__``/``__format__``).
A code string nobody declared is refused, so no code is invented by a typo.
"""

from __future__ import annotations

import json
import pickle
import re
import subprocess
from pathlib import Path

import pytest

from grinta_jupyter import Runtime
from grinta_jupyter.runtime import errors
from grinta_jupyter.runtime.errors import (
    ALL_CODES,
    NOT_FOUND,
    Candidate,
    ErrorCode,
    ToolError,
    ToolFailure,
    fail,
)

PACKAGE = Path(errors.__file__).resolve().parents[1]

# The codes ARCHITECTURE.md promises (never renamed).
CONTRACT = [
    "NOT_FOUND",
    "AMBIGUOUS_MATCH",
    "SYMBOL_NOT_FOUND",
    "AMBIGUOUS_SYMBOL",
    "SYNTAX_ERROR",
    "CONTENT_SERIALIZED",
    "PLACEHOLDER",
    "NO_CHANGE",
    "STALE_FILE",
    "FILE_EXISTS",
    "FILE_NOT_FOUND",
    "BINARY_FILE",
    "PATH_OUTSIDE_WORKSPACE",
    "PATH_FORBIDDEN",
    "INVALID_ARGS",
]


def test_every_member_is_its_own_name():
    for code in ErrorCode:
        assert code.value == code.name
        assert code == code.name and hash(code) == hash(code.name)
    assert set(ALL_CODES) == {code.name for code in ErrorCode}
    assert set(CONTRACT) <= ALL_CODES


@pytest.mark.parametrize("code", list(ErrorCode))
def test_the_wire_is_the_plain_string(code):
    assert str(code) == code.name
    assert f"{code}" == code.name
    assert f"{code:>30}" == f"{code.name:>30}"
    assert "%s" % code == code.name  # noqa: UP031  (%-formatting is a way code reaches text)
    assert json.dumps(code) == f'"{code.name}"'
    assert json.loads(json.dumps({"code": code})) == {"code": code.name}
    assert pickle.loads(pickle.dumps(code)) is code


def test_module_constants_are_the_members():
    for code in ErrorCode:
        assert getattr(errors, code.name) is code


def test_tool_error_converts_a_known_string_and_refuses_an_unknown_one():
    error = ToolError("NOT_FOUND", "old_string was not found")  # type: ignore[arg-type]
    assert error.code is NOT_FOUND and isinstance(error.code, ErrorCode)
    assert error.render().startswith("ERROR NOT_FOUND: old_string")
    with pytest.raises(
        ValueError, match=r"unknown error code 'NOT_FOUNDD'; known codes: .*NOT_FOUND"
    ):
        ToolError("NOT_FOUNDD", "typo")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown error code"):
        fail("not_found", "lower case is another code")  # type: ignore[arg-type]


def test_to_dict_is_plain_json_data():
    error = ToolError(NOT_FOUND, "m", (Candidate("a.py", 3, "x = 1"),), line=3)
    data = error.to_dict()
    assert type(data["code"]) is str and data["code"] == "NOT_FOUND"
    assert json.loads(json.dumps(data)) == data
    assert data["candidates"][0]["path"] == "a.py"


def test_a_failure_reaches_the_model_with_the_plain_code(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    rt = Runtime(tmp_path)
    p = rt.propose("replace_string", {"path": "a.py", "old_string": "y", "new_string": "z"})
    assert p.error is not None and p.error.code == "NOT_FOUND" and p.error.code is NOT_FOUND
    obs = rt.call("replace_string", {"path": "a.py", "old_string": "y", "new_string": "z"})
    assert obs.output.startswith("ERROR NOT_FOUND:")
    failure = ToolFailure(p.error)
    assert failure.error.code == "NOT_FOUND" and failure.resolutions == ()


_LITERAL = re.compile(
    r"\b(?:ToolError|fail|SymbolEditError)\(\s*(?:code=)?[\"']([A-Za-z_]+)[\"']", re.MULTILINE
)


def test_every_code_string_handed_to_a_tool_error_in_the_package_is_a_member():
    """A literal code anywhere in the package (any layer) must be declared."""
    used: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for match in _LITERAL.finditer(path.read_text(encoding="utf-8")):
            used.setdefault(match.group(1), []).append(str(path.relative_to(PACKAGE)))
    unknown = {code: where for code, where in used.items() if code not in ALL_CODES}
    assert not unknown, f"code strings that are not ErrorCode members: {unknown}"


def test_the_enum_formats_the_same_on_python_3_10(tmp_path):
    """Python 3.10 formats mixed-in Enums differently from 3.11; check on a real 3.10 if any."""
    python = Path.home() / ".pyenv/versions/3.10.13/bin/python"
    if not python.exists():
        pytest.skip("no Python 3.10 interpreter on this machine")
    script = f"""
import importlib.util, json, sys
def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
load("grinta_jupyter.runtime.resolution", {str(PACKAGE / "runtime/resolution.py")!r})
e = load("grinta_jupyter.runtime.errors", {str(PACKAGE / "runtime/errors.py")!r})
c = e.ErrorCode.STALE_FILE
print(str(c), f"{{c}}", f"{{c:>12}}|", "%s" % c, json.dumps(c), e.ToolError("NOT_FOUND", "m").render())
"""
    out = subprocess.run([python, "-c", script], capture_output=True, text=True, check=True)
    assert (
        out.stdout.strip()
        == 'STALE_FILE STALE_FILE   STALE_FILE| STALE_FILE "STALE_FILE" ERROR NOT_FOUND: m'
    )
