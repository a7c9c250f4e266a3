"""Loading grammars and extracting symbols must never touch the network.

The check runs in a fresh interpreter whose socket layer raises on any use,
installed before anything else is imported, so a grammar download attempt
(as tree-sitter-language-pack 1.x does on first use) fails the test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

FIXTURES = Path(__file__).parent.parent / "fixtures" / "symbols"
REPO = Path(__file__).parent.parent.parent

LANGUAGES = ["python", "javascript", "typescript", "tsx", "go", "rust", "java", "c", "cpp", "ruby"]

SCRIPT = textwrap.dedent(
    """
    import json, socket, sys

    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(repr(args)[:80])
        raise OSError("network access is not allowed here")

    class NoSocket(socket.socket):
        def __init__(self, *args, **kwargs):
            refuse(*args)

    socket.socket = NoSocket
    socket.create_connection = refuse
    socket.getaddrinfo = refuse

    from pathlib import Path
    from grinta_jupyter.code.symbols import extract_symbols
    from grinta_jupyter.runtime.grammars import parser_for

    counts = {}
    for language in json.loads(sys.argv[1]):
        assert parser_for(language).parse(b"x").root_node is not None
    for path in Path(sys.argv[2]).iterdir():
        counts[path.name] = len(extract_symbols(path.name, path.read_bytes()))
    print(json.dumps({"attempts": attempts, "counts": counts}))
    """
)


def test_grammars_load_and_extract_offline() -> None:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(LANGUAGES), str(FIXTURES)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["attempts"] == []
    assert len(report["counts"]) == 10
    assert all(count > 0 for count in report["counts"].values())
